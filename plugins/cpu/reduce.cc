// Reductions: sum, mean, max, min, prod, argmax, argmin.
// A contiguous input reduced over one run of adjacent axes (the usual case: last axis, first axis,
// all) takes a fast path: several independent accumulators per row, or whole rows accumulated into a
// column buffer. Everything else (any strides, any axes, and the arg ops) uses oar::sdk::reduce_loop.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::max_threads;
using oar::sdk::parallel_for;
using oar::sdk::reduce_loop;

// Accumulator of sum/mean/prod: int64 arithmetic (wrapping, in unsigned) for bool and ints, float
// for 16-bit floats, double for float32/float64, complex<double> for complex.
template <class T>
struct AccOf {
  using type = double;
};
template <>
struct AccOf<oar::sdk::float16> {
  using type = float;
};
template <>
struct AccOf<oar::sdk::bfloat16> {
  using type = float;
};
template <>
struct AccOf<oar::sdk::complex64> {
  using type = std::complex<double>;
};
template <>
struct AccOf<oar::sdk::complex128> {
  using type = std::complex<double>;
};
template <class T>
using acc_of_t = std::conditional_t<std::is_integral_v<T>, uint64_t, typename AccOf<T>::type>;

// sum's output dtype: int64 for bool and all ints (the core allocates that), else x.
template <class T>
using sum_out_t = std::conditional_t<std::is_integral_v<T>, int64_t, T>;

template <class Acc, class T>
inline Acc to_acc(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<Acc>(static_cast<int64_t>(v));
  else
    return static_cast<Acc>(compute_t<T>(v));
}

// Axes attribute: empty (or absent) means all.
std::vector<int64_t> reduce_axes(const char* op, const KernelContext& ctx, const TensorView& x) {
  check_rank(op, x);
  std::vector<int64_t> axes = attr_ints_or(ctx, "axis", {});
  if (axes.empty())
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  if (x.ndim() == 0) return {};
  for (int64_t& a : axes) a = normalize_axis(op, a, x.ndim());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

// ---- the contiguous fast path ----------------------------------------------------------------------
// When x is contiguous and the reduced axes (ignoring size-1 dims) are one adjacent run, x is
// [outer, red, inner] and out is [outer, inner].
bool as_outer_red_inner(const TensorView& x, const std::vector<int64_t>& axes, int64_t& outer, int64_t& red,
                        int64_t& inner) {
  if (!x.is_contiguous()) return false;
  bool reduced[oar::sdk::kMaxDims] = {};
  for (int64_t a : axes) reduced[a] = true;
  outer = red = inner = 1;
  int phase = 0;  // 0: before the reduced run, 1: inside it, 2: after it
  for (int32_t i = 0; i < x.ndim(); ++i) {
    int64_t d = x.dim(i);
    if (d == 1) continue;
    if (reduced[i]) {
      if (phase == 2) return false;
      phase = 1;
      red *= d;
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? outer : inner) *= d;
    }
  }
  return true;
}

// A view whose elements are one dense block in some axis order (a transposed or permuted view of a
// contiguous tensor), reduced over axes that are one adjacent run in memory order: the block is then
// [outer, red, inner] in memory order and takes the contiguous path instead of walking the view's
// logical order across strides (8x slower for a transposed view). Flipped, sliced and broadcast views
// are not one dense block of positive strides. The kept axes' memory order may differ from their order
// in `out` (a permutation that moves them): `out_order` is then false and the caller writes the result
// in memory order to a buffer and scatters it.
struct DenseRun {
  int64_t outer = 1, red = 1, inner = 1;
  std::vector<int64_t> kept_dims, kept_out_strides;  // kept axes longer than 1, memory order
  bool out_order = true;
};

bool dense_block_run(const TensorView& x, const std::vector<int64_t>& axes, DenseRun& r) {
  bool reduced[oar::sdk::kMaxDims] = {};
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int32_t> mem;  // axes longer than 1, by decreasing stride: memory order, outermost first
  for (int32_t i = 0; i < x.ndim(); ++i) {
    if (x.dim(i) == 1) continue;
    if (x.strides()[i] <= 0) return false;
    mem.push_back(i);
  }
  std::sort(mem.begin(), mem.end(), [&](int32_t a, int32_t b) { return x.strides()[a] > x.strides()[b]; });
  int64_t expected = 1;
  for (size_t k = mem.size(); k-- > 0;) {
    if (x.strides()[mem[k]] != expected) return false;
    expected *= x.dim(mem[k]);
  }
  // out is contiguous in the view's order of the kept axes: a kept axis' stride there is the product
  // of the kept dims after it.
  int64_t out_stride[oar::sdk::kMaxDims] = {};
  int64_t s = 1;
  for (int32_t i = x.ndim(); i-- > 0;)
    if (!reduced[i]) out_stride[i] = s, s *= x.dim(i);
  int phase = 0;  // 0: before the reduced run, 1: inside it, 2: after it
  int32_t last_kept = -1;
  for (int32_t i : mem) {
    if (reduced[i]) {
      if (phase == 2) return false;
      phase = 1;
      r.red *= x.dim(i);
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? r.outer : r.inner) *= x.dim(i);
      r.kept_dims.push_back(x.dim(i));
      r.kept_out_strides.push_back(out_stride[i]);
      if (i < last_kept) r.out_order = false;
      last_kept = i;
    }
  }
  return true;
}

// dst[strides . index] = src[row-major index] over `dims` (the kept axes in memory order): an odometer
// over the outer dims, a plain strided loop along the last.
template <class Out>
void scatter_to(const Out* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                Out* dst) {
  const size_t nd = dims.size();
  if (nd == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t last = dims[nd - 1], ls = strides[nd - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= dims[d];
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t r = 0; r < rows; ++r, src += last) {
    for (int64_t j = 0; j < last; ++j) dst[off + j * ls] = src[j];
    for (size_t d = nd - 1; d-- > 0;) {  // next row, row-major
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// A plain array of accumulators (std::vector<bool> packs bits, which threads cannot write apart).
template <class A>
std::unique_ptr<A[]> acc_buffer(size_t n, A init) {
  std::unique_ptr<A[]> b(new A[n]);
  std::fill(b.get(), b.get() + n, init);
  return b;
}

// A fast-path op F provides: acc_t, out_t, init(), step(acc, T raw), merge(acc, acc), finish(acc).
template <class T, class Out>
struct SumF;

// float32 sums: blocks of 128 elements in 8 float lanes (numpy's pairwise leaf), blocks added in
// double. As accurate as numpy and about twice as fast as converting every element to double.
inline double sum_row_f32(const float* p, int64_t n) {
  constexpr int64_t kLeaf = 128;
  constexpr int kLanes = 8;
  double total = 0;
  int64_t i = 0;
  for (; i + kLeaf <= n; i += kLeaf) {
    float lane[kLanes] = {};
    for (int64_t j = 0; j < kLeaf; j += kLanes)
      for (int k = 0; k < kLanes; ++k) lane[k] += p[i + j + k];
    total += static_cast<double>(((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                                 ((lane[4] + lane[5]) + (lane[6] + lane[7])));
  }
  for (; i < n; ++i) total += p[i];
  return total;
}

// 16-bit floats reach an op converted to float32 a block at a time (lowp.h): OnF32<F> is F stepping on
// float values (every op's step on a value is its merge with that value as an accumulator).
template <class F>
struct OnF32 {
  const F& f;
  using acc_t = typename F::acc_t;
  acc_t init() const { return f.init(); }
  acc_t step(acc_t a, float v) const { return f.merge(a, acc_t(v)); }
  acc_t merge(acc_t a, acc_t b) const { return f.merge(a, b); }
};

// acc[j] = step(acc[j], p[r * inner + j]) for r < red, j < n: runs along contiguous rows.
template <class T, class F>
void reduce_cols(const F& f, const T* p, int64_t red, int64_t inner, int64_t n, typename F::acc_t* acc) {
  if constexpr (is_lowp_v<T>) {
    const OnF32<F> g{f};
    alignas(64) float buf[kLowpBlock];
    for (int64_t r = 0; r < red; ++r)
      for (int64_t j0 = 0; j0 < n; j0 += kLowpBlock) {
        const int64_t m = std::min(kLowpBlock, n - j0);
        to_f32(p + r * inner + j0, buf, m);
        for (int64_t j = 0; j < m; ++j) acc[j0 + j] = g.step(acc[j0 + j], buf[j]);
      }
    return;
  }
  for (int64_t r = 0; r < red; ++r) {
    const T* row = p + r * inner;
    for (int64_t j = 0; j < n; ++j) acc[j] = f.step(acc[j], row[j]);
  }
}

// A row is reduced as a [n / kWidth, kWidth] block into kWidth accumulators: independent chains
// the compiler vectorises as a plain loop (an 8-lane unrolled form stayed scalar for max/min).
template <class T, class F>
typename F::acc_t reduce_row(const F& f, const T* p, int64_t n) {
  using Acc = typename F::acc_t;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<F, SumF<float, float>>) return sum_row_f32(p, n);
  if constexpr (is_lowp_v<T>) {
    const OnF32<F> g{f};
    alignas(64) float buf[kLowpBlock];
    Acc acc = f.init();
    for (int64_t b = 0; b < n; b += kLowpBlock) {
      const int64_t m = std::min(kLowpBlock, n - b);
      to_f32(p + b, buf, m);
      acc = f.merge(acc, reduce_row(g, buf, m));
    }
    return acc;
  }
  constexpr int64_t kWidth = 64;
  Acc lane[kWidth];
  for (auto& l : lane) l = f.init();
  const int64_t rows = n / kWidth;
  reduce_cols(f, p, rows, kWidth, kWidth, lane);
  Acc acc = f.init();
  for (int64_t i = rows * kWidth; i < n; ++i) acc = f.step(acc, p[i]);
  for (int64_t k = 0; k < kWidth; ++k) acc = f.merge(acc, lane[k]);
  return acc;
}

template <class T, class F>
void reduce_contiguous(typename F::out_t* po, const T* px, int64_t outer, int64_t red, int64_t inner,
                       const F& f) {
  using Acc = typename F::acc_t;
  const int nt = max_threads();
  const int64_t grain = oar::sdk::kElementwiseGrain;
  if (inner == 1) {
    if (outer >= nt || red < grain) {  // parallel over rows
      parallel_for(0, outer, std::max<int64_t>(1, grain / std::max<int64_t>(red, 1)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t o = lo; o < hi; ++o) po[o] = f.finish(reduce_row(f, px + o * red, red));
                   });
      return;
    }
    for (int64_t o = 0; o < outer; ++o) {  // few long rows: split each across threads
      auto part = acc_buffer<Acc>(nt, f.init());
      const int64_t chunk = (red + nt - 1) / nt;
      parallel_for(0, nt, 1, [&](int64_t tb, int64_t te) {
        for (int64_t t = tb; t < te; ++t) {
          const int64_t lo = t * chunk, hi = std::min(red, lo + chunk);
          if (lo < hi) part[t] = reduce_row(f, px + o * red + lo, hi - lo);
        }
      });
      Acc acc = f.init();
      for (int t = 0; t < nt; ++t) acc = f.merge(acc, part[t]);
      po[o] = f.finish(acc);
    }
    return;
  }
  // inner > 1: accumulate whole row segments (kBlock columns) into a column buffer.
  constexpr int64_t kBlock = 8192;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t units = outer * blocks;
  if (units >= nt || red * inner < grain) {
    parallel_for(0, units, 1, [&](int64_t lo, int64_t hi) {
      auto acc = acc_buffer<Acc>(static_cast<size_t>(std::min(kBlock, inner)), f.init());
      for (int64_t u = lo; u < hi; ++u) {
        const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, n = std::min(kBlock, inner - j0);
        std::fill(acc.get(), acc.get() + n, f.init());
        reduce_cols(f, px + o * red * inner + j0, red, inner, n, acc.get());
        for (int64_t j = 0; j < n; ++j) po[o * inner + j0 + j] = f.finish(acc[j]);
      }
    });
    return;
  }
  // Few outputs, long reductions: each thread takes a slice of `red` for every output (bounded:
  // units < nt means outer * inner < nt * kBlock).
  const int64_t n_out = outer * inner;
  auto part = acc_buffer<Acc>(static_cast<size_t>(nt) * n_out, f.init());
  const int64_t chunk = (red + nt - 1) / nt;
  parallel_for(0, nt, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t lo = t * chunk, hi = std::min(red, lo + chunk);
      if (lo >= hi) continue;
      for (int64_t o = 0; o < outer; ++o)
        reduce_cols(f, px + (o * red + lo) * inner, hi - lo, inner, inner, &part[t * n_out + o * inner]);
    }
  });
  for (int64_t i = 0; i < n_out; ++i) {
    Acc acc = f.init();
    for (int t = 0; t < nt; ++t) acc = f.merge(acc, part[t * n_out + i]);
    po[i] = f.finish(acc);
  }
}

// reduce_loop (any strides) driving the same op.
template <class T, class F>
struct LoopOp {
  F f;
  using acc_t = typename F::acc_t;
  acc_t init() const { return f.init(); }
  acc_t step(acc_t a, compute_t<T> v, int64_t) const { return f.step(a, T(v)); }
  acc_t merge(acc_t a, acc_t b) const { return f.merge(a, b); }
  typename F::out_t finish(acc_t a, int64_t) const { return f.finish(a); }
};

template <class T, class F>
void reduce_any(const TensorView& out, const TensorView& x, const std::vector<int64_t>& axes, const F& f) {
  using Out = typename F::out_t;
  int64_t outer, red, inner;
  DenseRun run;
  if (as_outer_red_inner(x, axes, outer, red, inner)) {
    reduce_contiguous<T>(out.data<Out>(), x.data<T>(), outer, red, inner, f);
  } else if (x.numel() > 0 && dense_block_run(x, axes, run)) {
    if (run.out_order) {
      reduce_contiguous<T>(out.data<Out>(), x.data<T>(), run.outer, run.red, run.inner, f);
    } else {
      std::unique_ptr<Out[]> tmp(new Out[static_cast<size_t>(run.outer * run.inner)]);
      reduce_contiguous<T>(tmp.get(), x.data<T>(), run.outer, run.red, run.inner, f);
      scatter_to(tmp.get(), run.kept_dims, run.kept_out_strides, out.data<Out>());
    }
  } else {
    reduce_loop<Out, T>(out, x, axes, LoopOp<T, F>{f});
  }
}

// ---- sum, mean, prod, max, min ----------------------------------------------------------------------
// sum, or mean when `mean` is set (finish divides by the count; 0 / 0 gives the documented NaN).
template <class T, class Out>
struct SumF {
  using acc_t = acc_of_t<T>;
  using out_t = Out;
  bool mean = false;
  acc_t count = acc_t(1);
  acc_t init() const { return acc_t(0); }
  acc_t step(acc_t a, T v) const { return a + to_acc<acc_t>(v); }
  acc_t merge(acc_t a, acc_t b) const { return a + b; }
  Out finish(acc_t a) const {
    if constexpr (is_float_v<T>) {
      if (mean) return static_cast<Out>(a / count);
    } else if constexpr (is_complex_v<T>) {
      if (mean) return static_cast<Out>(a / count.real());
    }
    return static_cast<Out>(a);
  }
};

void sum_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  auto axes = reduce_axes("sum", ctx, x);
  dispatch<AnyType>("sum", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_any<T>(out, x, axes, SumF<T, sum_out_t<T>>{});
  });
}

void mean_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  auto axes = reduce_axes("mean", ctx, x);
  int64_t count = 1;
  for (int64_t a : axes) count *= x.dim(static_cast<int32_t>(a));
  dispatch<FloatOrComplexType>("mean", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    SumF<T, T> f;
    f.mean = true;
    f.count = static_cast<acc_of_t<T>>(count);
    reduce_any<T>(out, x, axes, f);
  });
}

template <class T, bool kMax>
struct MaxF {
  using C = compute_t<T>;
  using acc_t = C;
  using out_t = T;
  acc_t init() const {
    if constexpr (std::is_same_v<T, bool>)
      return !kMax;
    else if constexpr (is_float_v<T>)
      return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else
      return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
  acc_t merge(acc_t a, C v) const {
    const C m = kMax ? (v > a ? v : a) : (v < a ? v : a);  // keeps a once a is NaN
    if constexpr (is_float_v<T>)
      return v != v ? v : m;  // a new NaN wins (branch-free: vectorises)
    else
      return m;
  }
  acc_t step(acc_t a, T v) const { return merge(a, C(v)); }
  T finish(acc_t a) const { return T(a); }
};

template <bool kMax>
void maxmin_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  auto axes = reduce_axes(kMax ? "max" : "min", ctx, x);
  dispatch<RealType>(kMax ? "max" : "min", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_any<T>(out, x, axes, MaxF<T, kMax>{});
  });
}

template <class T>
struct ProdF {
  using acc_t = acc_of_t<T>;
  using out_t = T;
  acc_t init() const { return acc_t(1); }
  acc_t step(acc_t a, T v) const { return a * to_acc<acc_t>(v); }
  acc_t merge(acc_t a, acc_t b) const { return a * b; }
  T finish(acc_t a) const {
    if constexpr (is_complex_v<T> || std::is_integral_v<T>)
      return static_cast<T>(a);
    else
      return T(static_cast<compute_t<T>>(a));
  }
};

void prod_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  auto axes = reduce_axes("prod", ctx, x);
  dispatch<NotBool>("prod", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_any<T>(out, x, axes, ProdF<T>{});
  });
}

// (value, index) with index -1 for "nothing seen yet". The first NaN wins (numpy); otherwise a
// strictly better value, so ties keep the first index.
template <class T, bool kMax>
struct ArgOp {
  using C = compute_t<T>;
  struct acc_t {
    C v;
    int64_t i;
  };
  static bool isnan(C v) {
    if constexpr (is_float_v<T>)
      return v != v;
    else
      return false;
  }
  acc_t init() const { return {C(0), -1}; }
  // b comes after a in index order.
  acc_t pick(acc_t a, acc_t b) const {
    if (b.i < 0) return a;
    if (a.i < 0 || isnan(a.v)) return a.i < 0 ? b : a;
    if (isnan(b.v)) return b;
    return (kMax ? b.v > a.v : b.v < a.v) ? b : a;
  }
  acc_t step(acc_t a, C v, int64_t idx) const { return pick(a, acc_t{v, idx}); }
  acc_t merge(acc_t a, acc_t b) const { return pick(a, b); }
  int64_t finish(acc_t a, int64_t) const { return a.i < 0 ? 0 : a.i; }
};

template <bool kMax>
void arg_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const char* name = kMax ? "argmax" : "argmin";
  check_rank(name, x);
  std::vector<int64_t> axes;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  const int64_t axis = attr_int_or(ctx, "axis", kNone);
  if (attr_int_or(ctx, "flatten", 0) || axis == kNone) {  // no axis: over all elements (Paddle)
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  } else if (x.ndim() > 0) {
    axes.push_back(normalize_axis(name, axis, x.ndim()));
  }
  dispatch<RealType>(name, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<int64_t, T>(out, x, axes, ArgOp<T, kMax>{});
  });
}

}  // namespace

void register_reduce_kernels(Registry& r) {
  r.add("sum", all_dtypes(), &sum_kernel, kStrided);
  r.add("mean", oar::sdk::join({oar::sdk::float_dtypes(), oar::sdk::complex_dtypes()}), &mean_kernel,
        kStrided);
  r.add("max", real_dtypes(), &maxmin_kernel<true>, kStrided);
  r.add("min", real_dtypes(), &maxmin_kernel<false>, kStrided);
  r.add("prod", numeric_dtypes(), &prod_kernel, kStrided);
  r.add("argmax", real_dtypes(), &arg_kernel<true>, kStrided);
  r.add("argmin", real_dtypes(), &arg_kernel<false>, kStrided);
}

}  // namespace oar_cpu
