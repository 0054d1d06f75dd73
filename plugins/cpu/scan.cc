// CPU kernels of framework/src/ops_scan.cc: logsumexp (one pass, a running max and a rescaled sum),
// cummax/cummin (running extremum and its index) and segment_pool (segment sum/mean/max/min).
#include <algorithm>
#include <cstring>

#include "elementwise.h"
#include "vec_math.h"

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

// ---- the contiguous fast path of logsumexp and the 2-norm ----------------------------------------------
// A contiguous input reduced over one run of adjacent axes is [outer, n, inner]. Two passes: the maximum
// m (of x, or of |x| for the norm) per output, then the sum of exp(x - m) (float32 and 16-bit floats:
// fast_exp, vectorised) or (|x| / m)^2, accumulated in double. Columns (inner > 1) are processed in blocks
// of adjacent outputs so both passes run along contiguous memory.
bool one_run(const TensorView& x, const std::vector<int64_t>& axes, int64_t* outer, int64_t* n,
             int64_t* inner) {
  if (!x.is_contiguous() || axes.empty() || x.numel() == 0) return false;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  *outer = product(x.dims(), 0, axes.front());
  *n = product(x.dims(), axes.front(), axes.back() + 1);
  *inner = product(x.dims(), axes.back() + 1, x.ndim());
  return true;
}

// The value the two passes give from the maximum m (of x or |x|) and the sum s of the terms.
template <bool kNorm>
inline double two_pass_result(double m, double s, bool nan) {
  if (nan) return NAN;
  if (m == INFINITY || m == -INFINITY || (kNorm && m == 0)) return m;
  return kNorm ? m * std::sqrt(s) : m + std::log(s);
}
template <class C, bool kNorm>
__attribute__((always_inline)) inline C two_pass_term(C v, C m) {
  if constexpr (kNorm) {
    const C r = std::fabs(v) / m;  // m = 0: NaN terms, but the result is 0 (two_pass_result)
    return r * r;
  } else if constexpr (std::is_same_v<C, float>) {
    return fast_exp(v - m);
  } else {
    return std::exp(v - m);
  }
}

// A float32 row with GCC vector types, 8 lanes (the array form of the max pass below compiled to scalar
// compares, a NaN test per element): the same maxima, NaN test and lane sums as the generic row, so the
// same result. Built for AVX2 and for baseline x86-64, chosen once by the CPU (decision 136).
typedef float scan_v8f __attribute__((vector_size(32)));
typedef int32_t scan_v8i __attribute__((vector_size(32)));
typedef float scan_v4f __attribute__((vector_size(16)));
typedef double scan_v4d __attribute__((vector_size(32)));  // two of them: a 64-byte vector spilled to memory
template <bool kNorm>
__attribute__((always_inline)) inline float two_pass_row_v8(const float* r, int64_t n) {
  if constexpr (kNorm) {
    // The 2-norm of float32 needs no scaling pass: a float's square is exact in double and cannot
    // overflow or underflow there (3.4e38^2 and 1.4e-45^2 are inside double's range), so one pass sums
    // the squares in double (NaN and inf propagate through the sum as before).
    scan_v4d q0 = {}, q1 = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      scan_v4f v0, v1;
      std::memcpy(&v0, r + i, sizeof v0);
      std::memcpy(&v1, r + i + 4, sizeof v1);
      const scan_v4d d0 = __builtin_convertvector(v0, scan_v4d), d1 = __builtin_convertvector(v1, scan_v4d);
      q0 += d0 * d0;
      q1 += d1 * d1;
    }
    double q = 0;
    for (; i < n; ++i) q += static_cast<double>(r[i]) * static_cast<double>(r[i]);
    for (int k = 0; k < 4; ++k) q += q0[k];
    for (int k = 0; k < 4; ++k) q += q1[k];
    return static_cast<float>(std::sqrt(q));
  }
  const auto load = [&](int64_t i) __attribute__((always_inline)) {
    scan_v8f v;
    std::memcpy(&v, r + i, sizeof v);
    if constexpr (kNorm) v = reinterpret_cast<scan_v8f>(reinterpret_cast<scan_v8i>(v) & 0x7fffffff);  // |v|
    return v;
  };
  scan_v8f mk = scan_v8f{} + (kNorm ? 0.0f : -INFINITY);
  scan_v8i nk = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const scan_v8f v = load(i);
    nk |= v != v;
    mk = v > mk ? v : mk;
  }
  float m = kNorm ? 0.0f : -INFINITY;
  bool nan = false;
  for (; i < n; ++i) {
    const float v = kNorm ? std::fabs(r[i]) : r[i];
    nan |= v != v;
    m = v > m ? v : m;
  }
  for (int k = 0; k < 8; ++k) m = mk[k] > m ? mk[k] : m, nan |= nk[k] != 0;
  // Terms a chunk at a time (a plain loop, vectorised), then summed in double over the 8 lanes.
  constexpr int64_t kChunk = 256;
  float t[kChunk];
  scan_v4d sk0 = {}, sk1 = {};  // lanes 0-3 and 4-7
  double s = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t len = std::min(kChunk, n - c);
    for (int64_t k = 0; k < len; ++k) t[k] = two_pass_term<float, kNorm>(r[c + k], m);
    int64_t k = 0;
    for (; k + 8 <= len; k += 8) {
      scan_v4f v0, v1;
      std::memcpy(&v0, t + k, sizeof v0);
      std::memcpy(&v1, t + k + 4, sizeof v1);
      sk0 += __builtin_convertvector(v0, scan_v4d);
      sk1 += __builtin_convertvector(v1, scan_v4d);
    }
    for (; k < len; ++k) s += static_cast<double>(t[k]);
  }
  for (int k = 0; k < 4; ++k) s += sk0[k];
  for (int k = 0; k < 4; ++k) s += sk1[k];
  return static_cast<float>(two_pass_result<kNorm>(static_cast<double>(m), s, nan));
}
template <bool kNorm>
__attribute__((target("avx2"))) float two_pass_row_avx2(const float* r, int64_t n) {
  return two_pass_row_v8<kNorm>(r, n);
}
template <bool kNorm>
float two_pass_row_base(const float* r, int64_t n) {
  return two_pass_row_v8<kNorm>(r, n);
}

// Rows (inner == 1): eight partial maxima and chunks of terms, so both loops vectorise along the row.
template <class T, bool kNorm>
void two_pass_rows(const TensorView& out, const TensorView& x, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, float>) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    const auto row = avx2 ? two_pass_row_avx2<kNorm> : two_pass_row_base<kNorm>;
    const float* px = x.data<float>();
    float* po = out.data<float>();
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) po[o] = row(px + o * n, n);
    });
    return;
  }
  constexpr int64_t kLanes = 8, kChunk = 256;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t lo, int64_t hi) {
    C t[kChunk];
    for (int64_t row = lo; row < hi; ++row) {
      const T* r = px + row * n;
      C mk[kLanes];
      bool nk[kLanes];
      for (int64_t k = 0; k < kLanes; ++k) mk[k] = kNorm ? C(0) : C(-INFINITY), nk[k] = false;
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int64_t k = 0; k < kLanes; ++k) {
          C v = C(r[i + k]);
          if (kNorm) v = std::fabs(v);
          nk[k] |= v != v;
          mk[k] = v > mk[k] ? v : mk[k];
        }
      for (int64_t k = 0; i < n; ++i, ++k) {
        C v = C(r[i]);
        if (kNorm) v = std::fabs(v);
        nk[k] |= v != v;
        mk[k] = v > mk[k] ? v : mk[k];
      }
      C m = mk[0];
      bool nan = nk[0];
      for (int64_t k = 1; k < kLanes; ++k) m = mk[k] > m ? mk[k] : m, nan |= nk[k];
      // Terms in double over kLanes partial sums: one serial chain of double adds (4 cycles each) was
      // most of the row's time.
      double sk[kLanes] = {};
      double s = 0;
      for (int64_t c = 0; c < n; c += kChunk) {
        const int64_t len = std::min(kChunk, n - c);
        for (int64_t k = 0; k < len; ++k) t[k] = two_pass_term<C, kNorm>(C(r[c + k]), m);
        int64_t k = 0;
        for (; k + kLanes <= len; k += kLanes)
          for (int64_t l = 0; l < kLanes; ++l) sk[l] += static_cast<double>(t[k + l]);
        for (; k < len; ++k) s += static_cast<double>(t[k]);
      }
      for (int64_t l = 0; l < kLanes; ++l) s += sk[l];
      po[row] = T(static_cast<C>(two_pass_result<kNorm>(static_cast<double>(m), s, nan)));
    }
  });
}

template <class T, bool kNorm>
void two_pass(const TensorView& out, const TensorView& x, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) return two_pass_rows<T, kNorm>(out, x, outer, n);
  using C = compute_t<T>;
  constexpr int64_t kBlock = 64;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(
      0, outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (n * std::min(inner, kBlock))),
      [&](int64_t lo, int64_t hi) {
        C m[kBlock], t[kBlock];
        double s[kBlock];
        bool nan[kBlock];
        for (int64_t u = lo; u < hi; ++u) {
          const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, nb = std::min(kBlock, inner - j0);
          const T* base = px + o * n * inner + j0;
          for (int64_t j = 0; j < nb; ++j) m[j] = kNorm ? C(0) : C(-INFINITY), s[j] = 0, nan[j] = false;
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < nb; ++j) {
              C v = C(base[i * inner + j]);
              if (kNorm) v = std::fabs(v);
              nan[j] |= v != v;
              m[j] = v > m[j] ? v : m[j];
            }
          for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < nb; ++j) t[j] = two_pass_term<C, kNorm>(C(base[i * inner + j]), m[j]);
            for (int64_t j = 0; j < nb; ++j) s[j] += static_cast<double>(t[j]);
          }
          T* w = po + o * inner + j0;
          for (int64_t j = 0; j < nb; ++j)
            w[j] = T(static_cast<C>(two_pass_result<kNorm>(static_cast<double>(m[j]), s[j], nan[j])));
        }
      });
}

void logsumexp_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("logsumexp", x);
  std::vector<int64_t> axes = attr_ints_or(ctx, "axis", {});
  if (axes.empty())
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  int64_t outer, n, inner;
  const bool fast = one_run(x, axes, &outer, &n, &inner);
  dispatch<FloatType>("logsumexp", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (fast)
      two_pass<T, false>(out, x, outer, n, inner);
    else
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
  int64_t outer, n, inner;
  const bool fast = p == 2 && one_run(x, axes, &outer, &n, &inner);
  dispatch<FloatType>("p_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (fast)
      two_pass<T, true>(out, x, outer, n, inner);
    else
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
