// The one vendor header of the GPU plugin. Every runtime name the plugin's code uses is spelled here
// once, as a gpu* alias of CUDA's or HIP's, with the warp size, the 16-bit float types and their
// conversions, and the device atomics that differ; so the same kernel files build with nvcc
// (liboar_plugin_cuda.so) and with hipcc (liboar_plugin_rocm.so). Kernels never test the vendor
// themselves. Library primitives (sort, scan) are mapped in gpu_primitives.cuh; the vendor BLAS/DNN/
// collective libraries are wrapped by the few files that use them (blas.cc, dnn.cc, collectives.cc on
// CUDA; own_blas.cu and collectives_none.cc otherwise, see README.md).
#pragma once

// OAR_GPU_HIP: this translation unit is built for AMD GPUs by hipcc (set by the rocm target's CMake, so
// host-only .cc files see it too). OAR_GPU_DEVICE_CODE: the compiler understands __global__ etc.
#if defined(OAR_GPU_HIP)
#if !defined(__HIP_PLATFORM_AMD__)
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define OAR_GPU_DEVICE_CODE 1
#endif
// OAR_GPU_DEVICE_PASS: this is the compiler's device pass (code for the GPU, not the host side of a .cu).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define OAR_GPU_DEVICE_PASS 1
#endif
// OAR_GPU_KERNEL_CODE: kernel bodies compile here (__global__, __shared__, threadIdx, __syncthreads): a GPU
// compiler, or a plain C++ compiler under the host block emulator of tests/cuda_host/block_emu.h, which
// defines OAR_GPU_HOST_EMULATION and gives those names host meanings.
#if defined(OAR_GPU_DEVICE_CODE) || defined(OAR_GPU_HOST_EMULATION)
#define OAR_GPU_KERNEL_CODE 1
#endif
// OAR_LAUNCH(kernel, grid, block, stream)(args...): kernel<<<grid, block, 0, stream>>>(args...). The
// kernels the host emulator runs (own_blas.cu's) are launched through it; block_emu.h defines it there.
#if defined(OAR_GPU_DEVICE_CODE)
#define OAR_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

#define OAR_GPU_STR2(x) #x
#define OAR_GPU_STR(x) OAR_GPU_STR2(x)

#if defined(OAR_GPU_HIP)
// =============================== HIP (AMD) ===========================================================
#define OAR_GPU_VENDOR "HIP"
// How the runtime's calls are named in messages ("hipMalloc: out of memory").
#define OAR_GPU_API_PREFIX "hip"
// The plugin's name for messages ("gpu plugin rocm"); the device type stays "gpu" for both vendors.
#define OAR_GPU_PLUGIN_NAME "rocm"
// Threads per wavefront: 64 on CDNA (gfx90a, gfx942: the data-centre GPUs this backend targets), 32 on
// RDNA (gfx1100) in wave32 mode. Kernels use it only to size thread groups that synchronise through
// shared memory with __syncthreads (never shuffles, ballots or lane masks), so 64 is correct on both; one
// value for host and device code, so launch geometry and kernels always agree.
#define OAR_GPU_WARP_SIZE 64

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp = hipDeviceProp_t;
using gpu_half = __half;
using gpu_bf16 = hip_bfloat16;

#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorInvalidResourceHandle hipErrorInvalidHandle
#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMemGetInfo hipMemGetInfo
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuHostAllocMapped(p, bytes) hipHostMalloc(p, bytes, hipHostMallocMapped)
#define gpuHostGetDevicePointer hipHostGetDevicePointer
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemset hipMemset
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpy hipMemcpy
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDefault hipEventDefault
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
// Graph capture (ABI 1.3).
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphDestroy hipGraphDestroy
inline hipError_t gpuGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph) {
  return hipGraphInstantiate(exec, graph, nullptr, nullptr, 0);
}
// The runtime version the plugin was compiled against, as text (shown by the doctor): "5.2.21153".
#define OAR_GPU_RUNTIME_VERSION_TEXT \
  OAR_GPU_STR(HIP_VERSION_MAJOR) "." OAR_GPU_STR(HIP_VERSION_MINOR) "." OAR_GPU_STR(HIP_VERSION_PATCH)
// hipRuntimeGetVersion's number: major * 10^7 + minor * 10^5 + patch.
inline int gpu_version_major(int v) { return v / 10000000; }
inline int gpu_version_minor(int v) { return (v / 100000) % 100; }

// HIP 5.2 declares hipLaunchHostFunc but libamdhip64 does not export it: the older stream callback, which
// runs fn(arg) on a runtime thread once the stream's earlier work is done (the same contract).
inline hipError_t gpuLaunchHostFunc(hipStream_t s, void (*fn)(void*), void* arg) {
  struct Call {
    void (*fn)(void*);
    void* arg;
  };
  auto* call = new Call{fn, arg};
  const hipError_t e = hipStreamAddCallback(
      s,
      [](hipStream_t, hipError_t, void* p) {
        auto* c = static_cast<Call*>(p);
        c->fn(c->arg);
        delete c;
      },
      call, 0);
  if (e != hipSuccess) delete call;
  return e;
}

// Profiler ranges: roctx is not in Debian's ROCm, so none (the events still time each kernel).
inline void gpu_range_push(const char*) {}
inline void gpu_range_pop() {}

#if defined(OAR_GPU_DEVICE_CODE)
__host__ __device__ __forceinline__ float gpu_half2float(gpu_half v) { return __half2float(v); }
__host__ __device__ __forceinline__ gpu_half gpu_float2half_rn(float v) { return __float2half_rn(v); }
__host__ __device__ __forceinline__ float gpu_bf162float(gpu_bf16 v) { return static_cast<float>(v); }
// hip_bfloat16's float constructor rounds to nearest even and keeps NaN a NaN, as __float2bfloat16_rn.
__host__ __device__ __forceinline__ gpu_bf16 gpu_float2bf16_rn(float v) { return gpu_bf16(v); }
#endif
// HIP 5.2 has no atomicAdd on 16-bit floats: callers use a compare-and-swap loop instead.
#define OAR_GPU_HAS_ATOMIC_ADD_16BIT_FLOAT 0

#else
// =============================== CUDA (NVIDIA) =======================================================
#define OAR_GPU_VENDOR "CUDA"
#define OAR_GPU_API_PREFIX "cuda"
#define OAR_GPU_PLUGIN_NAME "cuda"
// Threads per warp on every NVIDIA GPU; AMD's CDNA has 64, so code must use this name, not 32.
#define OAR_GPU_WARP_SIZE 32

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp = cudaDeviceProp;
using gpu_half = __half;
using gpu_bf16 = __nv_bfloat16;

#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorInvalidResourceHandle cudaErrorInvalidResourceHandle
#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuHostAllocMapped(p, bytes) cudaHostAlloc(p, bytes, cudaHostAllocMapped)
#define gpuHostGetDevicePointer cudaHostGetDevicePointer
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemset cudaMemset
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuLaunchHostFunc cudaLaunchHostFunc
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDefault cudaEventDefault
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
// Graph capture (ABI 1.3).
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphDestroy cudaGraphDestroy
// cudaGraphInstantiate changed its signature in CUDA 12; the WithFlags form is the same since 11.4.
inline cudaError_t gpuGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph) {
  return cudaGraphInstantiateWithFlags(exec, graph, 0);
}
// CUDART_VERSION as it is ("13000" is 13.0): oar.version.cuda() reads that form.
#define OAR_GPU_RUNTIME_VERSION_TEXT OAR_GPU_STR(CUDART_VERSION)
// cudaRuntimeGetVersion's number: major * 1000 + minor * 10.
inline int gpu_version_major(int v) { return v / 1000; }
inline int gpu_version_minor(int v) { return (v % 1000) / 10; }

// Profiler ranges: NVTX, so Nsight shows each op by name.
inline void gpu_range_push(const char* name) { nvtxRangePushA(name); }
inline void gpu_range_pop() { nvtxRangePop(); }

#if defined(OAR_GPU_DEVICE_CODE)
__host__ __device__ __forceinline__ float gpu_half2float(gpu_half v) { return __half2float(v); }
__host__ __device__ __forceinline__ gpu_half gpu_float2half_rn(float v) { return __float2half_rn(v); }
__host__ __device__ __forceinline__ float gpu_bf162float(gpu_bf16 v) { return __bfloat162float(v); }
__host__ __device__ __forceinline__ gpu_bf16 gpu_float2bf16_rn(float v) { return __float2bfloat16_rn(v); }
#endif
// atomicAdd on __half and __nv_bfloat16 exists from sm_80 (the oldest arch built).
#define OAR_GPU_HAS_ATOMIC_ADD_16BIT_FLOAT 1
#endif
