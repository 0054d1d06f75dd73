// The one vendor header of the GPU plugin: every CUDA runtime name the plugin's code uses is spelled
// here once, as a gpu* alias, so the same kernel files can later build with hipcc for ROCm (one
// header to map, no #ifdefs in kernels). Libraries (cuBLASLt, cuDNN, NCCL) are used directly by the
// few files that wrap them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define OAR_GPU_VENDOR "CUDA"
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
