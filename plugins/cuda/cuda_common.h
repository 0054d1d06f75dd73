// What every file of the gpu plugin shares: errors from the CUDA runtime as sdk errors, the kernel's
// stream, dtype dispatch onto device types, float16/bfloat16 arithmetic through float, and the
// N-ary elementwise launcher (broadcasting, any strides, one output) that most ops are written on.
#pragma once

#include <oar/sdk/iter.h>
#include <oar/sdk/kernel.h>
#include <oar/sdk/tables.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "gpu_runtime.h"

#if defined(OAR_GPU_DEVICE_CODE)
#define OAR_HD __host__ __device__ __forceinline__
#define OAR_D __device__ __forceinline__
#else
#define OAR_HD inline
#define OAR_D inline
#endif

namespace oar_cuda {

namespace sdk = oar::sdk;

// ---- errors ---------------------------------------------------------------------------------------
// Throws an sdk::Error carrying the runtime's own message, e.g. "cudaMalloc: out of memory
// (cudaErrorMemoryAllocation)". `what` names the call or the op.
[[noreturn]] void throw_gpu_error(gpuError_t e, const std::string& what);
inline void gpu_check(gpuError_t e, const char* what) {
  if (e != gpuSuccess) throw_gpu_error(e, what);
}
// After a kernel launch: a bad launch configuration is reported now, not at the next synchronize.
inline void check_launch(const char* op) { gpu_check(gpuGetLastError(), op); }

// Makes `device` current on this thread (cached: cudaSetDevice is not free).
void set_device(int32_t device);
// Properties of `device`, read once.
const gpuDeviceProp& device_prop(int32_t device);

// ---- data errors found by kernels ------------------------------------------------------------------
// A kernel cannot raise at the call without a synchronization. A data error it finds (an index out of
// range, a probability outside [0, 1]) is written to the device's error word instead, and the next
// synchronization of that device (stream, event or device synchronize, a synchronous copy, a query that
// finds the work done) raises it naming the op, the value and the bound, as PyTorch's device-side asserts
// do: OAR_ERR_OUT_OF_RANGE for a bad index, OAR_ERR_INVALID_ARGUMENT for a bad value.
// The word is pinned host memory mapped into the device: the host reads it without a copy.
enum DeviceErrorKind : int32_t {
  kNoDeviceError = 0,
  kBadIndex = 1,  // value: the index; bound: the size of the dimension it indexes
  kBadValue = 2,  // value: the element's position (or the count found); bound: op-specific, see runtime.cc
};
struct DeviceError {
  int32_t code;  // DeviceErrorKind; set once (atomicCAS) by the first kernel that finds an error
  int32_t op;    // DeviceErrorOp
  int64_t value;
  int64_t bound;
};
enum DeviceErrorOp : int32_t {
  kErrIndexSelect = 1,
  kErrIndexAdd,
  kErrGatherNd,
  kErrScatterNdAdd,
  kErrIndexPut,
  kErrTakeAlongAxis,
  kErrPutAlongAxis,
  kErrSoftmaxCrossEntropy,  // a label
  kErrBernoulli,            // kBadValue: x[value] is not a probability
  kErrNonzeroCount,         // kBadValue: the count attribute (bound) is not the number of nonzeros (value)
};
// The device's error word (made on first use; the device pointer, which UVA makes the host's too).
DeviceError* device_error_word(int32_t device);
// Throws, and clears, the data error a kernel on `device` reported; nothing when there is none.
void raise_device_error(int32_t device);

// Where a kernel reports a data error: the device's error word and the op's code. The first report
// wins; the next synchronization raises it.
struct DataErrorReporter {
  DeviceError* err;
  int32_t op;
#if defined(OAR_GPU_DEVICE_CODE)
  // Host-callable too: the functor tests (tests/cuda_host) run kernels' functors on the host, with a null
  // or host word.
  __host__ __device__ __forceinline__ void report(DeviceErrorKind kind, int64_t value, int64_t bound) const {
#if defined(OAR_GPU_DEVICE_PASS)
    const bool first = atomicCAS(&err->code, 0, static_cast<int32_t>(kind)) == 0;
#else
    const bool first = err && err->code == 0;
    if (first) err->code = kind;
#endif
    if (first) {
      err->op = op;
      err->value = value;
      err->bound = bound;
    }
  }
  __host__ __device__ __forceinline__ void report(int64_t bad_index, int64_t bound) const {
    report(kBadIndex, bad_index, bound);
  }
#endif
};
inline DataErrorReporter data_error_reporter(const sdk::KernelContext& c, int32_t op) {
  return {device_error_word(c.device()), op};
}

// The stream a kernel enqueues on (its device made current).
inline gpuStream_t stream_of(const sdk::KernelContext& c) {
  set_device(c.device());
  return reinterpret_cast<gpuStream_t>(c.stream());
}

// ---- kernel registration ---------------------------------------------------------------------------
// Every kernel goes through here so the profiler can time it (runtime.cc) and a failed registration is
// a warning, not a failed plugin.
class Registry {
 public:
  explicit Registry(sdk::KernelRegistrar& r) : reg_(r) {}
  void add(const char* op, const std::vector<OarDType>& dtypes, sdk::KernelBody body, uint32_t flags = 0);
  void add(const char* op, const std::vector<OarDType>& dtypes, sdk::KernelBody body,
           sdk::SupportsBody supports, uint32_t flags = 0);
  int count() const { return count_; }

 private:
  sdk::KernelRegistrar& reg_;
  int count_ = 0;
};

// One registration function per family of kernels (each in its own file).
void register_elementwise(Registry& r);
void register_vendor(Registry& r);            // vendor.cc: matmul, conv, pooling, optimizers
void register_reduction_family(Registry& r);  // reduce.cu: reductions, scans/sort, softmax/norm, indexing
void register_pool(Registry& r);              // dnn_pool.cu
void register_optim(Registry& r);             // optim.cu
void register_own_blas(Registry& r);          // own_blas.cu: the plugin's own matmul and convolutions

// The vendor libraries this build links (blas.cc + dnn.cc + collectives.cc with CUDA; no_libs.cc where
// none were found, as on Debian's ROCm): their names and versions for the doctor, and the registration
// of matmul and conv through them, which returns false when the build has none.
const char* library_versions();
bool register_library_blas(Registry& r);

// ---- device types ----------------------------------------------------------------------------------
template <typename T>
struct Tag {
  using type = T;
};

// float16/bfloat16 compute in float; every other type in itself.
template <typename T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<gpu_half> {
  using type = float;
};
template <>
struct AccOf<gpu_bf16> {
  using type = float;
};
template <typename T>
using acc_t = typename AccOf<T>::type;

template <typename T>
OAR_HD acc_t<T> to_acc(T v) {
  return static_cast<acc_t<T>>(v);
}
template <typename T>
OAR_HD T from_acc(acc_t<T> v) {
  return static_cast<T>(v);
}
#if defined(OAR_GPU_DEVICE_CODE)
template <>
OAR_HD float to_acc<gpu_half>(gpu_half v) {
  return gpu_half2float(v);
}
template <>
OAR_HD float to_acc<gpu_bf16>(gpu_bf16 v) {
  return gpu_bf162float(v);
}
template <>
OAR_HD gpu_half from_acc<gpu_half>(float v) {
  return gpu_float2half_rn(v);
}
template <>
OAR_HD gpu_bf16 from_acc<gpu_bf16>(float v) {
  return gpu_float2bf16_rn(v);
}
#endif

// Calls f(Tag<T>{}) with T the device type of `dtype`, among the listed groups; anything else is a type
// error naming the op (the core only dispatches registered dtypes, so that is a plugin bug).
template <typename F>
void dispatch_float(int32_t dtype, const char* op, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_FLOAT16:
      return f(Tag<gpu_half>{});
    case OAR_DTYPE_BFLOAT16:
      return f(Tag<gpu_bf16>{});
    case OAR_DTYPE_FLOAT32:
      return f(Tag<float>{});
    case OAR_DTYPE_FLOAT64:
      return f(Tag<double>{});
  }
  throw sdk::Error(OAR_ERR_TYPE, std::string("gpu ") + op + ": no kernel for " + sdk::dtype_name(dtype));
}
template <typename F>
void dispatch_int(int32_t dtype, const char* op, F&& f) {
  switch (dtype) {
    case OAR_DTYPE_INT8:
      return f(Tag<int8_t>{});
    case OAR_DTYPE_UINT8:
      return f(Tag<uint8_t>{});
    case OAR_DTYPE_INT16:
      return f(Tag<int16_t>{});
    case OAR_DTYPE_INT32:
      return f(Tag<int32_t>{});
    case OAR_DTYPE_INT64:
      return f(Tag<int64_t>{});
  }
  throw sdk::Error(OAR_ERR_TYPE, std::string("gpu ") + op + ": no kernel for " + sdk::dtype_name(dtype));
}
// Floats and integers (not bool).
template <typename F>
void dispatch_real(int32_t dtype, const char* op, F&& f) {
  if (dtype == OAR_DTYPE_FLOAT16 || dtype == OAR_DTYPE_BFLOAT16 || dtype == OAR_DTYPE_FLOAT32 ||
      dtype == OAR_DTYPE_FLOAT64)
    return dispatch_float(dtype, op, f);
  return dispatch_int(dtype, op, f);
}
// Every real dtype and bool.
template <typename F>
void dispatch_all(int32_t dtype, const char* op, F&& f) {
  if (dtype == OAR_DTYPE_BOOL) return f(Tag<bool>{});
  return dispatch_real(dtype, op, f);
}

// Elements moved bit for bit (copy, where, tril): an unsigned type of the dtype's size.
struct Bits128 {
  uint64_t lo, hi;
};

// Calls f(Tag<T>{}) with T the unsigned type of `dtype`'s size (complex128: Bits128), for dtypes of at most
// kMaxBytes (kernels that never see complex128 skip instantiating the 16-byte case).
template <int kMaxBytes = 16, typename F>
void dispatch_bits(int32_t dtype, const char* op, F&& f) {
  switch (sdk::dtype_size(dtype)) {
    case 1:
      return f(Tag<uint8_t>{});
    case 2:
      return f(Tag<uint16_t>{});
    case 4:
      return f(Tag<uint32_t>{});
    case 8:
      return f(Tag<uint64_t>{});
    case 16:
      if constexpr (kMaxBytes >= 16) return f(Tag<Bits128>{});
      break;
  }
  throw sdk::Error(OAR_ERR_TYPE, std::string("gpu ") + op + ": no kernel for " + sdk::dtype_name(dtype));
}

// The dtype groups kernels register for (sdk dtypes).
inline std::vector<OarDType> gpu_float_dtypes() { return sdk::float_dtypes(); }
inline std::vector<OarDType> gpu_real_dtypes() { return sdk::join({sdk::float_dtypes(), sdk::int_dtypes()}); }
inline std::vector<OarDType> gpu_all_dtypes() {
  return sdk::join({{OAR_DTYPE_BOOL}, sdk::float_dtypes(), sdk::int_dtypes()});
}

// ---- launch geometry -------------------------------------------------------------------------------
constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items: enough to fill the GPU, never more than the work.
int64_t grid_for(int64_t n, int32_t device, int threads = kThreads);

// ---- N-ary elementwise -----------------------------------------------------------------------------
// Offsets of N operands for a linear index over a shape, dims merged where every operand allows it
// (sdk::StridedLoop); operand 0 is the output.
template <int N>
struct Offsets {
  int ndim;
  int64_t dims[sdk::kMaxDims];
  int64_t strides[N][sdk::kMaxDims];

  OAR_HD void at(int64_t linear, int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t i = linear % dims[d];
      linear /= dims[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

template <int N>
struct Pointers {
  void* p[N];  // element 0 of each operand (offset applied); p[0] is the output
};

#if defined(OAR_GPU_DEVICE_CODE)
template <typename Out, typename... In, typename F, size_t... I>
OAR_D void apply_one(const F& f, const Pointers<sizeof...(In) + 1>& ptr, const int64_t* off,
                     std::index_sequence<I...>) {
  static_cast<Out*>(ptr.p[0])[off[0]] = f(static_cast<const In*>(ptr.p[I + 1])[off[I + 1]]...);
}

// Every operand contiguous with the output's shape: offsets are the index itself.
template <typename Out, typename F, typename... In>
__global__ void elementwise_contiguous(int64_t n, Pointers<sizeof...(In) + 1> ptr, F f) {
  constexpr int N = sizeof...(In) + 1;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[N];
    for (int k = 0; k < N; ++k) off[k] = i;
    apply_one<Out, In...>(f, ptr, off, std::index_sequence_for<In...>{});
  }
}

template <typename Out, typename F, typename... In>
__global__ void elementwise_strided(int64_t n, Pointers<sizeof...(In) + 1> ptr, Offsets<sizeof...(In) + 1> oc,
                                    F f) {
  constexpr int N = sizeof...(In) + 1;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[N];
    oc.at(i, off);
    apply_one<Out, In...>(f, ptr, off, std::index_sequence_for<In...>{});
  }
}

// out[i] = f(in0[i], in1[i], ...) over out's shape, the inputs broadcast to it (numpy rules) with any
// strides and offsets; Out and In are device element types. F is a functor with a __device__ operator().
// Enqueued on `stream`; nothing is waited for.
template <typename Out, typename... In, typename F>
void elementwise(const char* op, gpuStream_t stream, int32_t device, const sdk::TensorView& out,
                 std::array<sdk::TensorView, sizeof...(In)> ins, F f) {
  constexpr int N = sizeof...(In) + 1;
  const int32_t nd = out.ndim();
  std::array<std::array<int64_t, sdk::kMaxDims>, N> st{};
  for (int32_t d = 0; d < nd; ++d) st[0][d] = out.stride(d);
  for (int k = 1; k < N; ++k) st[k] = sdk::broadcast_strides(ins[k - 1], nd, out.dims());
  sdk::StridedLoop<N> loop(nd, out.dims(), st);
  if (loop.numel == 0) return;
  Pointers<N> ptr;
  ptr.p[0] = out.raw();
  for (int k = 1; k < N; ++k) ptr.p[k] = ins[k - 1].raw();
  bool contiguous = loop.ndim == 1;
  for (int k = 0; k < N && contiguous; ++k) contiguous = loop.strides[k][0] == 1;
  const int64_t blocks = grid_for(loop.numel, device);
  if (contiguous) {
    elementwise_contiguous<Out, F, In...><<<blocks, kThreads, 0, stream>>>(loop.numel, ptr, f);
  } else {
    Offsets<N> oc;
    oc.ndim = loop.ndim;
    for (int d = 0; d < loop.ndim; ++d) {
      oc.dims[d] = loop.dims[d];
      for (int k = 0; k < N; ++k) oc.strides[k][d] = loop.strides[k][d];
    }
    elementwise_strided<Out, F, In...><<<blocks, kThreads, 0, stream>>>(loop.numel, ptr, oc, f);
  }
  check_launch(op);
}

// The common kernel shapes, over a KernelContext: output 0 from inputs 0..k-1.
template <typename Out, typename In, typename F>
void unary(sdk::KernelContext& c, const char* op, F f) {
  elementwise<Out, In>(op, stream_of(c), c.device(), c.output(0), {c.input(0)}, f);
}
template <typename Out, typename A, typename B, typename F>
void binary(sdk::KernelContext& c, const char* op, F f) {
  elementwise<Out, A, B>(op, stream_of(c), c.device(), c.output(0), {c.input(0), c.input(1)}, f);
}
#endif  // OAR_GPU_DEVICE_CODE

}  // namespace oar_cuda
