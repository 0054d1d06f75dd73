// CPU kernels of framework/src/ops_scan.cc: logsumexp (one pass, a running max and a rescaled sum),
// cummax/cummin (running extremum and its index) and segment_pool (segment sum/mean/max/min).
#include <algorithm>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;
using oar::sdk::reduce_loop;

// ---- logsumexp --------------------------------------------------------------------------------------
// The accumulator is (m, s) with the partial result m + log(s): a new maximum rescales s, so no exp
// overflows and nothing is read twice. NaN is sticky; +inf gives +inf; an all -inf (or empty) extent
// gives -inf, as numpy.
struct LseAcc {
  double m, s;
};
template <class T>
struct LogSumExp {
  using acc_t = LseAcc;
  acc_t init() const { return {-INFINITY, 0.0}; }
  static acc_t add(acc_t a, double m, double s) {  // a combined with the partial result (m, s)
    if (a.m != a.m || m != m) return {NAN, 1.0};
    if (s == 0) return a;
    if (a.s == 0) return {m, s};
    if (m == a.m) return {m, a.s + s};  // also both +inf
    if (m > a.m) return {m, s + a.s * std::exp(a.m - m)};
    return {a.m, a.s + s * std::exp(m - a.m)};
  }
  acc_t step(acc_t a, compute_t<T> v, int64_t) const {
    const double d = static_cast<double>(v);
    return d == -INFINITY ? a : add(a, d, 1.0);
  }
  acc_t merge(acc_t a, acc_t b) const { return add(a, b.m, b.s); }
  T finish(acc_t a, int64_t) const {
    const double r = (a.m != a.m || a.m == INFINITY || a.s == 0) ? a.m : a.m + std::log(a.s);
    return T(static_cast<compute_t<T>>(r));
  }
};

void logsumexp_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("logsumexp", x);
  std::vector<int64_t> axes = attr_ints_or(ctx, "axis", {});
  if (axes.empty())
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  dispatch<FloatType>("logsumexp", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(out, x, axes, LogSumExp<T>{});
  });
}

// ---- p_norm -----------------------------------------------------------------------------------------
// (sum |x|^p)^(1/p) as scale * q^(1/p) with scale the running max |x| and q = sum (|x| / scale)^p (the
// LAPACK nrm2 scaling), so no power overflows or underflows whatever the magnitudes. double throughout.
struct NormAcc {
  double scale, q;
};
template <class T>
struct PNorm {
  using acc_t = NormAcc;
  double p;
  double pw(double r) const { return p == 2 ? r * r : (p == 1 ? r : std::pow(r, p)); }
  acc_t init() const { return {0.0, 0.0}; }
  acc_t add(acc_t a, double scale, double q) const {  // a combined with the partial (scale, q)
    if (a.q != a.q || q != q) return {NAN, NAN};
    if (q == 0) return a;
    if (a.q == 0) return {scale, q};
    if (scale == a.scale) return {scale, a.q + q};  // also both +inf
    if (scale > a.scale) return {scale, q + a.q * pw(a.scale / scale)};
    return {a.scale, a.q + q * pw(scale / a.scale)};
  }
  acc_t step(acc_t a, compute_t<T> v, int64_t) const {
    const double m = std::fabs(static_cast<double>(v));
    if (m != m) return {NAN, NAN};
    return m == 0 ? a : add(a, m, 1.0);
  }
  acc_t merge(acc_t a, acc_t b) const { return add(a, b.scale, b.q); }
  T finish(acc_t a, int64_t) const {
    double r =
        a.q != a.q ? a.q : (a.q == 0 ? 0.0 : a.scale * (p == 2 ? std::sqrt(a.q) : std::pow(a.q, 1 / p)));
    return T(static_cast<compute_t<T>>(r));
  }
};

void p_norm_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("p_norm", x);
  std::vector<int64_t> axes = attr_ints_or(ctx, "axis", {});
  if (axes.empty())
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  const double p = attr_float_or(ctx, "porder", 2.0);
  OAR_SDK_CHECK(p > 0 && std::isfinite(p), OAR_ERR_INVALID_ARGUMENT,
                "p_norm: porder must be finite and > 0, got " << p);
  dispatch<FloatType>("p_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_loop<T, T>(out, x, axes, PNorm<T>{p});
  });
}

// ---- cummax / cummin --------------------------------------------------------------------------------
// Ties move the index to the later element and a NaN stays once met (with its own index), as Paddle.
template <class T, bool kMax>
void cumextreme_impl(const TensorView& vals, const TensorView& idx, const TensorView& x, int64_t axis,
                     bool flatten) {
  const int64_t numel = x.numel();
  if (numel == 0) return;
  int64_t outer = 1, n = numel, inner = 1;
  if (!flatten && x.ndim() > 0) {
    outer = product(x.dims(), 0, axis);
    n = x.dim(static_cast<int32_t>(axis));
    inner = product(x.dims(), axis + 1, x.ndim());
  }
  const T* px = x.data<T>();
  T* pv = vals.data<T>();
  int64_t* pi = idx.data<int64_t>();
  parallel_for(0, outer * inner, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t base = (u / inner) * n * inner + u % inner;
      compute_t<T> best = compute_t<T>(px[base]);
      int64_t at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t off = base + i * inner;
        const compute_t<T> v = compute_t<T>(px[off]);
        if (best == best && (v != v || (kMax ? v >= best : v <= best))) best = v, at = i;
        pv[off] = T(best);
        pi[off] = at;
      }
    }
  });
}

template <bool kMax>
void cumextreme_kernel(KernelContext& ctx) {
  const char* name = kMax ? "cummax" : "cummin";
  TensorView x = ctx.input(0), vals = ctx.output(0), idx = ctx.output(1);
  const bool flatten = attr_int_or(ctx, "flatten", 0) != 0;
  const int64_t axis = flatten ? 0 : normalize_axis(name, attr_int_or(ctx, "axis", -1), x.ndim());
  dispatch<IntOrFloat>(name, x.dtype(),
                       [&](auto tag) { cumextreme_impl<decltype(tag), kMax>(vals, idx, x, axis, flatten); });
}

// ---- segment_pool -----------------------------------------------------------------------------------
enum PoolType { kSum = 0, kMean = 1, kMax = 2, kMin = 3 };

// The rows of data (each `width` elements) reduced into out's rows by id. Accumulates in double for
// floats (int64 wrapping for ints); empty segments are 0.
template <class T>
void segment_pool_impl(const TensorView& out, const TensorView& data, const std::vector<int64_t>& ids,
                       int64_t num_segments, int64_t type) {
  using A = std::conditional_t<is_int_v<T>, int64_t, double>;
  const int64_t m = static_cast<int64_t>(ids.size());
  const int64_t width = product(data.dims(), 1, data.ndim());
  const T* px = data.data<T>();
  T* po = out.data<T>();
  std::vector<A> acc(static_cast<size_t>(num_segments * width), A(0));
  std::vector<int64_t> count(static_cast<size_t>(num_segments), 0);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t s = ids[i];
    const bool first = count[s]++ == 0;
    A* row = acc.data() + s * width;
    const T* src = px + i * width;
    for (int64_t j = 0; j < width; ++j) {
      const A v = static_cast<A>(compute_t<T>(src[j]));
      if (type == kSum || type == kMean) {
        if constexpr (is_int_v<T>)
          row[j] = static_cast<A>(static_cast<uint64_t>(row[j]) + static_cast<uint64_t>(v));
        else
          row[j] += v;
      } else if (first || v != v) {
        row[j] = v;
      } else if (row[j] == row[j] && (type == kMax ? v > row[j] : v < row[j])) {
        row[j] = v;
      }
    }
  }
  parallel_for(0, num_segments, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t s = lo; s < hi; ++s)
                   for (int64_t j = 0; j < width; ++j) {
                     A v = acc[s * width + j];
                     if (type == kMean && count[s] > 0) v = v / static_cast<A>(count[s]);
                     po[s * width + j] = T(static_cast<compute_t<T>>(v));
                   }
               });
}

void segment_pool_kernel(KernelContext& ctx) {
  TensorView data = ctx.input(0), index = ctx.input(1), out = ctx.output(0);
  const int64_t num_segments = ctx.attr_int("num_segments");
  const int64_t type = attr_int_or(ctx, "pooltype", 0);
  const int64_t m = index.numel();
  std::vector<int64_t> ids(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const int64_t s = index.dtype() == OAR_DTYPE_INT32 ? index.data<int32_t>()[i] : index.data<int64_t>()[i];
    OAR_SDK_CHECK(s >= 0 && s < num_segments, OAR_ERR_OUT_OF_RANGE,
                  "segment_pool: segment id " << s << " (at position " << i << ") is out of range [0, "
                                              << num_segments << ")");
    ids[i] = s;
  }
  dispatch<IntOrFloat>("segment_pool", data.dtype(), [&](auto tag) {
    segment_pool_impl<decltype(tag)>(out, data, ids, num_segments, type);
  });
}

}  // namespace

void register_scan_kernels(Registry& r) {
  const auto floats = oar::sdk::float_dtypes();
  r.add("logsumexp", floats, &logsumexp_kernel, OAR_KERNEL_STRIDED_INPUTS);
  r.add("p_norm", floats, &p_norm_kernel, OAR_KERNEL_STRIDED_INPUTS);
  r.add("cummax", int_float_dtypes(), &cumextreme_kernel<true>);
  r.add("cummin", int_float_dtypes(), &cumextreme_kernel<false>);
  r.add("segment_pool", int_float_dtypes(), &segment_pool_kernel);
}

}  // namespace oar_cpu
