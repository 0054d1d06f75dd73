// max_pool, max_pool_grad, avg_pool, avg_pool_grad: direct kernels, a port of plugins/cpu/conv.cc.
//
// Not cuDNN: the op contract wants max_pool's argmax mask (cuDNN's pooling returns none), asymmetric
// paddings, ceil mode through the end padding, adaptive windows and a divisor override, which cuDNN's
// pooling descriptor cannot express. Each output (or input, for avg_pool_grad) is one thread that walks
// its window in the CPU kernel's order (pool_geom.h, tested on the host by pool_geom_test.cc), so forward
// results and avg_pool_grad are bit-identical to the CPU's. max_pool_grad scatters through the mask, which
// may point anywhere in its plane: atomicAdd into a float32 (float64 for float64) accumulator, so when
// windows overlap the summation order (and the last bits) may differ from the CPU's.
#include "cuda_common.h"
#include "pool_geom.h"

namespace oar_cuda {
namespace {

// x: the pooled input's shape, y: the output's (both [N, C, spatial...]).
PoolGeom make_geom(const sdk::KernelContext& c, const sdk::TensorView& x, const sdk::TensorView& y) {
  PoolGeom g{};
  const int nd = x.ndim() - 2, off = 3 - nd;
  OAR_SDK_CHECK(nd >= 1 && nd <= 3, OAR_ERR_INVALID_ARGUMENT, "pool: x must be 3-D, 4-D or 5-D");
  g.planes = x.dim(0) * x.dim(1);
  g.adaptive = c.attr_int_or("adaptive", 0) != 0;
  const std::vector<int64_t> k = c.attr_ints("kernel_size");
  std::vector<int64_t> s, p;
  if (!g.adaptive) s = c.attr_ints("strides"), p = c.attr_ints("paddings");
  for (int i = 0; i < 3; ++i) g.in[i] = g.out[i] = g.k[i] = g.s[i] = 1, g.pad[i] = 0;
  for (int j = 0; j < nd; ++j) {
    const int i = j + off;
    g.in[i] = x.dim(2 + j);
    g.out[i] = y.dim(2 + j);
    if (!g.adaptive) {
      OAR_SDK_CHECK(static_cast<int>(k.size()) == nd && static_cast<int>(s.size()) == nd &&
                        static_cast<int>(p.size()) == 2 * nd,
                    OAR_ERR_INVALID_ARGUMENT,
                    "pool: kernel_size/strides/paddings do not fit the spatial rank");
      g.k[i] = k[j], g.s[i] = s[j], g.pad[i] = p[2 * j];
    }
  }
  return g;
}

#define OAR_GRID_LOOP(i, n)                                                 \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

template <typename T>
__global__ void max_pool_fwd(PoolGeom g, const T* x, T* y, int32_t* mask) {
  OAR_GRID_LOOP(idx, g.planes * g.out_sz()) max_pool_one<T>(g, x, idx, y[idx], mask[idx]);
}

// acc[plane, mask[o]] += g[o] for every output o; out-of-plane mask entries are skipped.
template <typename T, typename A>
__global__ void max_pool_bwd(int64_t planes, int64_t in_sz, int64_t out_sz, const T* gy, const int32_t* mask,
                             A* acc) {
  const int64_t total = planes * out_sz;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t pl = idx / out_sz;
    const int32_t at = mask[idx];
    if (at >= 0 && at < in_sz) atomicAdd(acc + pl * in_sz + at, A(to_acc(gy[idx])));
  }
}

template <typename T>
__global__ void to_type(int64_t n, const float* a, T* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_acc<T>(a[i]);
}

template <typename T>
__global__ void avg_pool_fwd(PoolGeom g, bool exclusive, int64_t divisor, const T* x, T* y) {
  OAR_GRID_LOOP(idx, g.planes * g.out_sz()) y[idx] = avg_pool_one<T>(g, exclusive, divisor, x, idx);
}

template <typename T>
__global__ void avg_pool_bwd(PoolGeom g, bool exclusive, int64_t divisor, const T* gy, T* dx) {
  OAR_GRID_LOOP(idx, g.planes * g.in_sz()) dx[idx] = avg_pool_grad_one<T>(g, exclusive, divisor, gy, idx);
}

void max_pool_kernel(sdk::KernelContext& c) {
  const sdk::TensorView x = c.input(0), y = c.output(0), m = c.output(1);
  const PoolGeom g = make_geom(c, x, y);
  const int64_t n = y.numel();
  if (n == 0) return;
  gpuStream_t stream = stream_of(c);
  dispatch_float(x.dtype(), "max_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_fwd<T><<<grid_for(n, c.device()), kThreads, 0, stream>>>(
        g, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), static_cast<int32_t*>(m.raw()));
  });
  check_launch("max_pool");
}

void max_pool_grad_kernel(sdk::KernelContext& c) {
  const sdk::TensorView gy = c.input(0), m = c.input(1), dx = c.output(0);
  const int64_t n = dx.numel();
  if (n == 0) return;
  const int64_t planes = dx.dim(0) * dx.dim(1), in_sz = n / planes, out_sz = gy.numel() / planes;
  gpuStream_t stream = stream_of(c);
  const int32_t dtype = gy.dtype();
  // float32/float64 accumulate in the output itself; float16/bfloat16 in a float32 workspace.
  void* acc =
      (dtype == OAR_DTYPE_FLOAT32 || dtype == OAR_DTYPE_FLOAT64) ? dx.raw() : c.workspace(n * sizeof(float));
  const size_t acc_bytes = n * (dtype == OAR_DTYPE_FLOAT64 ? sizeof(double) : sizeof(float));
  gpu_check(gpuMemsetAsync(acc, 0, acc_bytes, stream), "max_pool_grad: " OAR_GPU_API_PREFIX "MemsetAsync");
  if (gy.numel() > 0) {
    dispatch_float(dtype, "max_pool_grad", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = acc_t<T>;
      max_pool_bwd<T, A><<<grid_for(gy.numel(), c.device()), kThreads, 0, stream>>>(
          planes, in_sz, out_sz, static_cast<const T*>(gy.raw()), static_cast<const int32_t*>(m.raw()),
          static_cast<A*>(acc));
    });
    check_launch("max_pool_grad");
  }
  if (dtype == OAR_DTYPE_FLOAT16)
    to_type<gpu_half><<<grid_for(n, c.device()), kThreads, 0, stream>>>(n, static_cast<const float*>(acc),
                                                                        static_cast<gpu_half*>(dx.raw()));
  else if (dtype == OAR_DTYPE_BFLOAT16)
    to_type<gpu_bf16><<<grid_for(n, c.device()), kThreads, 0, stream>>>(n, static_cast<const float*>(acc),
                                                                        static_cast<gpu_bf16*>(dx.raw()));
  check_launch("max_pool_grad");
}

void avg_pool_kernel(sdk::KernelContext& c) {
  const sdk::TensorView x = c.input(0), y = c.output(0);
  const PoolGeom g = make_geom(c, x, y);
  const bool exclusive = c.attr_int_or("exclusive", 1) != 0 || g.adaptive;
  const int64_t divisor = c.attr_int_or("divisor", 0);
  const int64_t n = y.numel();
  if (n == 0) return;
  gpuStream_t stream = stream_of(c);
  dispatch_float(x.dtype(), "avg_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_fwd<T><<<grid_for(n, c.device()), kThreads, 0, stream>>>(
        g, exclusive, divisor, static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()));
  });
  check_launch("avg_pool");
}

void avg_pool_grad_kernel(sdk::KernelContext& c) {
  const sdk::TensorView gy = c.input(0), dx = c.output(0);
  const PoolGeom g = make_geom(c, dx, gy);
  const bool exclusive = c.attr_int_or("exclusive", 1) != 0 || g.adaptive;
  const int64_t divisor = c.attr_int_or("divisor", 0);
  const int64_t n = dx.numel();
  if (n == 0) return;
  gpuStream_t stream = stream_of(c);
  if (gy.numel() == 0) {  // no windows: zeros
    gpu_check(gpuMemsetAsync(dx.raw(), 0, n * sdk::dtype_size(dx.dtype()), stream), "avg_pool_grad");
    return;
  }
  dispatch_float(gy.dtype(), "avg_pool_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_bwd<T><<<grid_for(n, c.device()), kThreads, 0, stream>>>(
        g, exclusive, divisor, static_cast<const T*>(gy.raw()), static_cast<T*>(dx.raw()));
  });
  check_launch("avg_pool_grad");
}

}  // namespace

void register_pool(Registry& r) {
  const auto f = gpu_float_dtypes();
  r.add("max_pool", f, &max_pool_kernel);
  r.add("max_pool_grad", f, &max_pool_grad_kernel);
  r.add("avg_pool", f, &avg_pool_kernel);
  r.add("avg_pool_grad", f, &avg_pool_grad_kernel);
}

}  // namespace oar_cuda
