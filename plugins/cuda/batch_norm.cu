// batch_norm and batch_norm_grad: planning and launches (the kernels are in batch_norm_kernels.cuh, which
// tests/cuda_host runs on the host). Three launches a pass:
//   forward:  per-channel statistics split over blocks (skipped with use_global_stats), their combination
//             with the [C] outputs, then out elementwise;
//   backward: per-channel sums of dy and dy * (x - mean) split over blocks, their combination into dweight,
//             dbias and dx's coefficients, then dx elementwise.
// Statistics accumulate in float (double for float64); the variance through per-thread shifted sums and Chan
// merges (no E[x^2] - E[x]^2 cancellation). Partials go to the kernel's workspace and are combined in a fixed
// order: results are the same bits on every run. Inputs arrive contiguous (no OAR_KERNEL_STRIDED_INPUTS).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "batch_norm_kernels.cuh"

namespace oar_cuda {
namespace {
using bn::Coef;
using bn::Geom;
using bn::stat_t;

// x as [outer, C, inner] around the channel axis.
struct Layout {
  int64_t outer, C, inner;
  int64_t count() const { return outer * inner; }  // elements per channel
};

Layout layout_of(const sdk::KernelContext& c, const char* op) {
  const sdk::TensorView x = c.input(0);
  fam::check_rank(op, x);
  const int64_t axis = fam::normalize_axis(op, c.attr_int_or("channel_axis", 1), x.ndim());
  return {fam::product(x.dims(), 0, axis), x.dim(static_cast<int32_t>(axis)),
          fam::product(x.dims(), axis + 1, x.ndim())};
}

// The widest vector access (16 or 8 bytes, else one element) that stays inside one segment of `inner`
// elements (inner > 1) or, channel-last, inside a row of C, with every pointer aligned to it.
template <typename T>
int vector_width(const Layout& l, std::initializer_list<const void*> ptrs) {
  for (int bytes : {16, 8}) {
    const int v = bytes / static_cast<int>(sizeof(T));
    if (v < 2 || (l.inner > 1 ? l.inner : l.C) % v != 0) continue;
    bool aligned = true;
    for (const void* p : ptrs) aligned = aligned && reinterpret_cast<uintptr_t>(p) % bytes == 0;
    if (aligned) return v;
  }
  return 1;
}

// Calls f(integral_constant V, bool_constant kChannelLast) for the instantiation of width `vec`.
template <typename T, typename F>
void with_width(int vec, const Layout& l, F&& f) {
  constexpr int kWide = 16 / sizeof(T), kMid = 8 / sizeof(T);
  const bool cl = l.inner == 1;
  if (vec == kWide && kWide > 1) {
    if (cl)
      f(std::integral_constant<int, kWide>{}, std::true_type{});
    else
      f(std::integral_constant<int, kWide>{}, std::false_type{});
  } else if (vec == kMid && kMid > 1) {
    if constexpr (kMid > 1) {
      if (cl)
        f(std::integral_constant<int, kMid>{}, std::true_type{});
      else
        f(std::integral_constant<int, kMid>{}, std::false_type{});
    }
  } else {
    f(std::integral_constant<int, 1>{}, std::false_type{});  // one element: no lanes to map
  }
}

// A reduction's launch: blocks of (bx, by) threads, bx channel groups by by threads along the reduced axes;
// grid (group tiles, splits).
struct Plan {
  Geom q;
  dim3 grid, block;
};

constexpr int64_t kVectorsPerThread = 8;  // the least work a split gives each of its threads

Plan plan_reduction(const Layout& l, int vec, int32_t device) {
  Plan p;
  const bool cl = l.inner == 1;
  p.q.outer = l.outer;
  p.q.G = cl ? l.C / vec : l.C;
  p.q.P = cl ? 1 : l.inner / vec;
  // Channel-last: a warp spans consecutive channel groups (coalesced rows); otherwise one group a block.
  int bx = 1;
  if (cl)
    while (bx < 32 && bx < p.q.G) bx *= 2;
  const int by = kThreads / bx;
  const int64_t tiles = (p.q.G + bx - 1) / bx;
  // Enough blocks to fill the GPU (grid_for's full grid), each split at least kVectorsPerThread per thread.
  const int64_t fill = grid_for(int64_t(1) << 40, device, 1);
  const int64_t most = std::max<int64_t>(1, p.q.outer * p.q.P / (by * kVectorsPerThread));
  p.q.splits = std::max<int64_t>(1, std::min<int64_t>({(fill + tiles - 1) / tiles, most, 65535}));
  p.grid = dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(p.q.splits));
  p.block = dim3(bx, by);
  return p;
}

// Scratch: the per-channel coefficients, then `planes` [splits][C] planes of partials.
template <typename S>
struct Scratch {
  Coef<S>* coef;
  S* part;
};
template <typename S>
Scratch<S> scratch(sdk::KernelContext& c, int64_t C, int64_t planes, int64_t splits) {
  const uint64_t coef_bytes =
      static_cast<uint64_t>(C) * sizeof(Coef<S>);  // a multiple of 16: parts stay aligned
  char* p =
      static_cast<char*>(c.workspace(coef_bytes + static_cast<uint64_t>(planes * splits * C) * sizeof(S)));
  return {reinterpret_cast<Coef<S>*>(p), reinterpret_cast<S*>(p + coef_bytes)};
}

void batch_norm_supports(sdk::KernelContext& c) {
  for (int i = 1; i <= 4; ++i)
    if (!c.input(i).defined())
      sdk::decline("batch_norm on gpu needs weight, bias and the running statistics");
}

void batch_norm_kernel(sdk::KernelContext& c) {
  const Layout l = layout_of(c, "batch_norm");
  const bool global = c.attr_int_or("use_global_stats", 0) != 0;
  const double eps = c.attr_float_or("epsilon", 1e-5), momentum = c.attr_float_or("momentum", 0.9);
  if (l.C == 0) return;
  if (!global && l.count() == 0)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "batch_norm: training statistics need a non-empty x");
  const sdk::TensorView x = c.input(0), out = c.output(0);
  dispatch_float(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    gpuStream_t s = stream_of(c);
    const T* px = static_cast<const T*>(x.raw());
    T* po = static_cast<T*>(out.raw());
    const int vec = vector_width<T>(l, {px, po});
    const Plan p = plan_reduction(l, vec, c.device());
    const int64_t splits = global ? 0 : p.q.splits;
    const Scratch<S> w = scratch<S>(c, l.C, 3, splits);
    auto in = [&](int i) { return static_cast<const S*>(c.input(i).raw()); };
    auto outp = [&](int i) { return static_cast<S*>(c.output(i).raw()); };
    with_width<T>(vec, l, [&](auto width, auto channel_last) {
      constexpr int V = decltype(width)::value;
      constexpr bool kCL = decltype(channel_last)::value;
      if (!global) {
        OAR_LAUNCH((bn::bn_stats<T, V, kCL>), p.grid, p.block, s)(p.q, l.C, px, w.part);
        check_launch("batch_norm");
      }
      OAR_LAUNCH(bn::bn_stats_finish<S>, fam::blocks_for(l.C), dim3(1, bn::kFinishThreads), s)
      (l.C, splits, w.part, in(3), in(4), in(1), in(2), S(eps), S(momentum), S(1.0 - momentum), outp(1),
       outp(2), outp(3), outp(4), w.coef);
      check_launch("batch_norm");
      const int64_t nv = x.numel() / V;
      if (nv == 0) return;  // an empty x (use_global_stats): only the [C] outputs
      OAR_LAUNCH((bn::bn_apply<T, V, kCL>), static_cast<unsigned>(grid_for(nv, c.device())), kThreads, s)
      (nv, p.q.P, p.q.G, px, w.coef, po);
      check_launch("batch_norm");
    });
  });
}

void batch_norm_grad_supports(sdk::KernelContext& c) {
  for (int i = 1; i <= 3; ++i)
    if (!c.input(i).defined()) sdk::decline("batch_norm_grad on gpu needs weight and the saved statistics");
}

void batch_norm_grad_kernel(sdk::KernelContext& c) {
  const Layout l = layout_of(c, "batch_norm_grad");
  const bool global = c.attr_int_or("use_global_stats", 0) != 0;
  if (l.C == 0) return;
  const sdk::TensorView x = c.input(0), dy = c.input(4), dx = c.output(0);
  dispatch_float(x.dtype(), "batch_norm_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    gpuStream_t s = stream_of(c);
    S* dweight = static_cast<S*>(c.output(1).raw());
    S* dbias = static_cast<S*>(c.output(2).raw());
    if (l.count() == 0) {  // no elements: zero sums
      gpu_check(gpuMemsetAsync(dweight, 0, l.C * sizeof(S), s), "batch_norm_grad: memset");
      gpu_check(gpuMemsetAsync(dbias, 0, l.C * sizeof(S), s), "batch_norm_grad: memset");
      return;
    }
    const T* px = static_cast<const T*>(x.raw());
    const T* pg = static_cast<const T*>(dy.raw());
    T* pd = static_cast<T*>(dx.raw());
    const int vec = vector_width<T>(l, {px, pg, pd});
    const Plan p = plan_reduction(l, vec, c.device());
    const Scratch<S> w = scratch<S>(c, l.C, 2, p.q.splits);
    const S* mean = static_cast<const S*>(c.input(2).raw());
    with_width<T>(vec, l, [&](auto width, auto channel_last) {
      constexpr int V = decltype(width)::value;
      constexpr bool kCL = decltype(channel_last)::value;
      OAR_LAUNCH((bn::bn_grad_sums<T, V, kCL>), p.grid, p.block, s)(p.q, l.C, px, pg, mean, w.part);
      check_launch("batch_norm_grad");
      OAR_LAUNCH(bn::bn_grad_finish<S>, fam::blocks_for(l.C), dim3(1, bn::kFinishThreads), s)
      (l.C, p.q.splits, w.part, static_cast<const S*>(c.input(1).raw()), mean,
       static_cast<const S*>(c.input(3).raw()), S(l.count()), global ? 0 : 1, dweight, dbias, w.coef);
      check_launch("batch_norm_grad");
      OAR_LAUNCH((bn::bn_apply_grad<T, V, kCL>), static_cast<unsigned>(grid_for(x.numel() / V, c.device())),
                 kThreads, s)
      (x.numel() / V, p.q.P, p.q.G, global ? 0 : 1, px, pg, w.coef, pd);
      check_launch("batch_norm_grad");
    });
  });
}

}  // namespace

void register_batch_norm(Registry& r) {
  const auto floats = gpu_float_dtypes();
  // Contiguous inputs (no OAR_KERNEL_STRIDED_INPUTS), as layer_norm.
  r.add("batch_norm", floats, &batch_norm_kernel, &batch_norm_supports);
  r.add("batch_norm_grad", floats, &batch_norm_grad_kernel, &batch_norm_grad_supports);
}

}  // namespace oar_cuda
