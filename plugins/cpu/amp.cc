// CPU kernels of the loss-scaling ops (framework/src/ops_optim.cc; oar.amp.GradScaler).
//
// check_finite_and_unscale: one pass over every gradient, in parallel chunks, that multiplies by 1/scale
// and ORs a "not finite" flag (x - x is NaN exactly for inf and NaN), branch-free so the loop vectorises;
// each tensor in its own dtype (16-bit floats computed in float).
#include <algorithm>
#include <atomic>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::parallel_for;

constexpr int64_t kChunk = 16384;

template <class T>
bool unscale_range(T* x, int64_t lo, int64_t hi, float inv) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  int bad = 0;
  for (int64_t i = lo; i < hi; ++i) {
    const C v = static_cast<C>(x[i]);
    bad |= (v - v) != C(0);
    x[i] = T(v * s);
  }
  return bad != 0;
}

void check_finite_and_unscale_kernel(KernelContext& ctx) {
  const int32_t n = ctx.num_inputs() - 1;
  const TensorView sv = ctx.input(n);
  const double scale = sv.dtype() == OAR_DTYPE_FLOAT64 ? *sv.data<double>() : *sv.data<float>();
  const float inv = static_cast<float>(1.0 / scale);  // as Paddle: multiply by the inverse
  struct Chunk {
    int32_t k;
    int64_t lo, hi;
  };
  std::vector<Chunk> chunks;
  int64_t total = 0;
  for (int32_t k = 0; k < n; ++k) {
    const int64_t numel = ctx.input(k).numel();
    total += numel;
    for (int64_t lo = 0; lo < numel; lo += kChunk) chunks.push_back({k, lo, std::min(numel, lo + kChunk)});
  }
  std::atomic<bool> found{false};
  const auto nc = static_cast<int64_t>(chunks.size());
  parallel_for(0, nc, total < 65536 ? std::max<int64_t>(nc, 1) : 1, [&](int64_t b, int64_t e) {
    bool bad = false;
    for (int64_t ci = b; ci < e; ++ci) {
      const Chunk& c = chunks[ci];
      TensorView x = ctx.input(c.k);
      dispatch<FloatType>("check_finite_and_unscale", x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        bad |= unscale_range(x.data<T>(), c.lo, c.hi, inv);
      });
    }
    if (bad) found.store(true, std::memory_order_relaxed);
  });
  *ctx.output(0).data<bool>() = found.load() || !std::isfinite(inv);
}

template <class S>
void update_loss_scaling(KernelContext& ctx, S* scale) {
  const bool found_inf = *ctx.input(0).data<bool>();
  int32_t* good = ctx.input(2).data<int32_t>();
  int32_t* bad = ctx.input(3).data<int32_t>();
  const int64_t incr_every = ctx.attr_int("incr_every_n_steps");
  const int64_t decr_every = ctx.attr_int("decr_every_n_nan_or_inf");
  const S incr_ratio = static_cast<S>(ctx.attr_float("incr_ratio"));
  const S decr_ratio = static_cast<S>(ctx.attr_float("decr_ratio"));
  if (found_inf) {
    *good = 0;
    if (++*bad >= decr_every) {
      *scale = std::max(*scale * decr_ratio, S(1));
      *bad = 0;
    }
  } else {
    *bad = 0;
    if (++*good >= incr_every) {
      const S next = *scale * incr_ratio;
      if (std::isfinite(next)) *scale = next;
      *good = 0;
    }
  }
}

void update_loss_scaling_kernel(KernelContext& ctx) {
  const TensorView s = ctx.input(1);
  if (s.dtype() == OAR_DTYPE_FLOAT64)
    update_loss_scaling(ctx, s.data<double>());
  else
    update_loss_scaling(ctx, s.data<float>());
}

}  // namespace

void register_amp_kernels(Registry& r) {
  r.add("check_finite_and_unscale", oar::sdk::float_dtypes(), &check_finite_and_unscale_kernel);
  r.add("update_loss_scaling", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &update_loss_scaling_kernel);
}

}  // namespace oar_cpu
