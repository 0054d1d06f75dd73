// The loss-scaling ops of GradScaler (framework/src/ops_optim.cc; plugins/cpu/amp.cc is the reference).
//
// check_finite_and_unscale: found_inf is cleared on the stream, then every gradient is multiplied by
// 1/scale (the scale read on the GPU, no host sync) in one grid-stride launch per tensor, in its own
// dtype (float16/bfloat16 computed in float); a thread that meets inf/NaN sets found_inf.
// update_loss_scaling: the counters and the scale on the GPU, by one thread, as Paddle's kernel.
#include "cuda_common.h"

namespace oar_cuda {
namespace {

__global__ void clear_flag_k(bool* flag) { *flag = false; }

template <typename T, typename S>
__global__ void unscale_k(int64_t n, T* x, const S* scale, bool* found) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  bool bad = !isfinite(inv);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const acc_t<T> v = to_acc(x[i]);
    bad |= !isfinite(static_cast<float>(v));
    x[i] = from_acc<T>(v * static_cast<acc_t<T>>(inv));
  }
  if (bad) *found = true;  // benign race: every writer writes true
}

void check_finite_and_unscale_kernel(sdk::KernelContext& c) {
  const int32_t n = c.num_inputs() - 1;
  gpuStream_t s = stream_of(c);
  bool* found = static_cast<bool*>(c.output(0).raw());
  const sdk::TensorView sv = c.input(n);
  const bool f64 = sv.dtype() == OAR_DTYPE_FLOAT64;
  clear_flag_k<<<1, 1, 0, s>>>(found);
  for (int32_t k = 0; k < n; ++k) {
    const sdk::TensorView x = c.input(k);
    if (x.numel() == 0) continue;
    dispatch_float(x.dtype(), "check_finite_and_unscale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t grid = grid_for(x.numel(), c.device());
      if (f64)
        unscale_k<T><<<grid, kThreads, 0, s>>>(x.numel(), static_cast<T*>(x.raw()),
                                               static_cast<const double*>(sv.raw()), found);
      else
        unscale_k<T><<<grid, kThreads, 0, s>>>(x.numel(), static_cast<T*>(x.raw()),
                                               static_cast<const float*>(sv.raw()), found);
    });
  }
  check_launch("check_finite_and_unscale");
}

template <typename S>
__global__ void update_loss_scaling_k(const bool* found_inf, S* scale, int32_t* good, int32_t* bad,
                                      int64_t incr_every, int64_t decr_every, S incr_ratio, S decr_ratio) {
  if (*found_inf) {
    *good = 0;
    if (++*bad >= decr_every) {
      const S next = *scale * decr_ratio;
      *scale = next < S(1) ? S(1) : next;
      *bad = 0;
    }
  } else {
    *bad = 0;
    if (++*good >= incr_every) {
      const S next = *scale * incr_ratio;
      if (isfinite(next)) *scale = next;
      *good = 0;
    }
  }
}

template <typename S>
void launch_update(sdk::KernelContext& c, gpuStream_t s) {
  update_loss_scaling_k<S><<<1, 1, 0, s>>>(
      static_cast<const bool*>(c.input(0).raw()), static_cast<S*>(c.input(1).raw()),
      static_cast<int32_t*>(c.input(2).raw()), static_cast<int32_t*>(c.input(3).raw()),
      c.attr_int("incr_every_n_steps"), c.attr_int("decr_every_n_nan_or_inf"),
      static_cast<S>(c.attr_float("incr_ratio")), static_cast<S>(c.attr_float("decr_ratio")));
}

void update_loss_scaling_kernel(sdk::KernelContext& c) {
  gpuStream_t s = stream_of(c);
  if (c.input(1).dtype() == OAR_DTYPE_FLOAT64)
    launch_update<double>(c, s);
  else
    launch_update<float>(c, s);
  check_launch("update_loss_scaling");
}

}  // namespace

void register_amp(Registry& r) {
  r.add("check_finite_and_unscale", gpu_float_dtypes(), &check_finite_and_unscale_kernel);
  r.add("update_loss_scaling", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &update_loss_scaling_kernel);
}

}  // namespace oar_cuda
