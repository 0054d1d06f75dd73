// CPU kernels of the math op family (framework/src/ops_math.cc defines the ops): more unary and binary
// elementwise math, clip, scans (cumsum, cumprod), all/any, linspace, eye and random ops (bernoulli,
// multinomial, randperm) on the counter RNG.
#include <oar/sdk/special.h>

#include <algorithm>
#include <numeric>

#include "elementwise.h"
#include "vec_math.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::kElementwiseGrain;
using oar::sdk::max_threads;
using oar::sdk::parallel_for;

// ---- special functions ----------------------------------------------------------------------------
// digamma and erfinv are the SDK's (oar/sdk/special.h), shared with the GPU plugins.
using oar::sdk::digamma;
using oar::sdk::erfinv;

// polygamma(n, x) for n >= 1: the recurrence psi_n(x) = psi_n(x + 1) + (-1)^(n+1) n! / x^(n+1) up to
// x >= 20 + n, then the asymptotic series with Bernoulli numbers B2..B14.
double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (std::isnan(x) || (x <= 0 && std::floor(x) == x)) return std::nan("");  // poles
  if (x == std::numeric_limits<double>::infinity()) return 0.0;
  const double dn = static_cast<double>(n);
  const double nfact = std::tgamma(dn + 1);
  double near = 0;
  for (const double bound = 20 + dn; x < bound; x += 1) near += std::pow(x, -(dn + 1));
  static const double kB[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6};
  double far = std::tgamma(dn) * std::pow(x, -dn) + nfact * 0.5 * std::pow(x, -(dn + 1));
  for (int k = 1; k <= 7; ++k)
    far +=
        kB[k - 1] * std::exp(std::lgamma(2 * k + dn) - std::lgamma(2.0 * k + 1)) * std::pow(x, -(2 * k + dn));
  return (n % 2 == 1 ? 1.0 : -1.0) * (nfact * near + far);
}

// ---- unary ----------------------------------------------------------------------------------------
OAR_CPU_FLOAT_OP(Sinh, "sinh", std::sinh(v))
OAR_CPU_FLOAT_OP(Cosh, "cosh", std::cosh(v))
OAR_CPU_FLOAT_OP(Tan, "tan", std::tan(v))
OAR_CPU_FLOAT_OP(Asin, "asin", std::asin(v))
OAR_CPU_FLOAT_OP(Acos, "acos", std::acos(v))
OAR_CPU_FLOAT_OP(Atan, "atan", std::atan(v))
OAR_CPU_FLOAT_OP(Asinh, "asinh", std::asinh(v))
OAR_CPU_FLOAT_OP(Acosh, "acosh", std::acosh(v))
OAR_CPU_FLOAT_OP(Atanh, "atanh", std::atanh(v))
OAR_CPU_FLOAT_OP(Log2, "log2", std::log2(v))
OAR_CPU_FLOAT_OP(Log10, "log10", std::log10(v))
OAR_CPU_FLOAT_OP(Lgamma, "lgamma", std::lgamma(v))
OAR_CPU_FLOAT_OP(Digamma, "digamma", C(digamma(double(v))))
OAR_CPU_FLOAT_OP(Erfinv, "erfinv", C(erfinv(double(v))))

struct Trunc {
  static constexpr const char* name = "trunc";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>)
      cpu_unary_loop<T, T>(o, x, [](C v) { return v; });
    else
      cpu_unary_loop<T, T>(o, x, [](C v) { return std::trunc(v); });
  }
};

struct BitwiseNot {
  static constexpr const char* name = "bitwise_not";
  template <class T>
  using allowed = std::bool_constant<std::is_integral_v<T>>;  // bool and ints
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    if constexpr (std::is_same_v<T, bool>)
      cpu_unary_loop<T, T>(o, x, [](bool v) { return !v; });
    else
      cpu_unary_loop<T, T>(o, x, [](T v) { return T(~v); });
  }
};

// ---- binary ---------------------------------------------------------------------------------------
template <class T>
struct IntOrBool : std::bool_constant<std::is_integral_v<T>> {};
template <class T>
struct IntOnly : std::bool_constant<is_int_v<T>> {};

#define OAR_MATH_BINARY_OP(NAME, STR, ALLOWED, EXPR)                                 \
  struct NAME {                                                                      \
    static constexpr const char* name = STR;                                         \
    template <class T>                                                               \
    using allowed = ALLOWED<T>;                                                      \
    template <class T>                                                               \
    static void run(const TensorView& o, const TensorView& x, const TensorView& y) { \
      using C = compute_t<T>;                                                        \
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) -> C { return EXPR; });         \
    }                                                                                \
  };
// atan2 in float (float32 and 16-bit floats): libm's atan2f is scalar and slow, so the quotient
// min/max in [0, 1] goes through cephes' atanf polynomial (about 2 ulp), then the quadrant is restored.
// Above tan(pi/8) the quotient is reduced to (num - den) / (num + den) (atan(t) = pi/4 + atan((t-1)/(t+1)))
// with the operands chosen before the one division. Branch-free (selects only) so the compiler
// vectorises the loop (math_ext.cc is built with -fno-trapping-math, plugins/cpu/CMakeLists.txt, which
// GCC needs to if-convert the selects); zeros, infinities and NaN come out as atan2's special values
// through the selects.
OAR_VEC_INLINE float fast_atan2f(float a, float b) {
  const float ax = std::fabs(a), bx = std::fabs(b);
  const bool swap = ax > bx;
  const float num = swap ? bx : ax, den = swap ? ax : bx;             // num <= den
  const bool both_inf = num == INFINITY;                              // pi/4 per quadrant
  const bool reduce = (num > 0.41421356f * den) | both_inf;           // t > tan(pi/8)
  float t = (reduce ? num - den : num) / (reduce ? num + den : den);  // NaN when an input is NaN
  t = den == 0 ? 0.0f : t;                                            // atan2(+-0, +-0)
  t = both_inf ? 0.0f : t;
  const float z = t * t;
  float r = ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) *
             z * t) +
            t;
  r = reduce ? r + 0.78539816f : r;
  r = swap ? 1.57079633f - r : r;
  r = std::signbit(b) ? 3.14159265f - r : r;
  // A NaN operand gives NaN (the selects above would turn atan2(inf, NaN) into pi/4, atan2(NaN, 0) into 0).
  return (a != a || b != b) ? a + b : std::copysign(r, a);
}
// The contiguous float32 loop, built twice: for AVX2 (8 lanes; the .so itself targets baseline x86-64,
// 4 lanes) and the baseline, chosen once by the CPU.
__attribute__((target("avx2"))) void atan2_block_avx2(float* o, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fast_atan2f(a[i], b[i]);
}
void atan2_block_base(float* o, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fast_atan2f(a[i], b[i]);
}
void atan2_block(float* o, const float* a, const float* b, int64_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  (avx2 ? atan2_block_avx2 : atan2_block_base)(o, a, b, n);
}

struct Atan2 {
  static constexpr const char* name = "atan2";
  template <class T>
  using allowed = FloatType<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, float>) {
      if (x.is_contiguous() && y.is_contiguous() && x.numel() == o.numel() && y.numel() == o.numel()) {
        const float *pa = x.data<float>(), *pb = y.data<float>();
        float* po = o.data<float>();
        parallel_for(0, o.numel(), kElementwiseGrain,
                     [&](int64_t lo, int64_t hi) { atan2_block(po + lo, pa + lo, pb + lo, hi - lo); });
        return;
      }
    }
    if constexpr (std::is_same_v<C, float>)
      cpu_binary_loop<T, T, T>(o, x, y, [](float a, float b) { return fast_atan2f(a, b); });
    else
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return std::atan2(a, b); });
  }
};
// numpy's heaviside: 0 for x < 0, y for x == 0, 1 for x > 0, NaN for NaN.
OAR_MATH_BINARY_OP(Heaviside, "heaviside", FloatType, a != a ? a : (a < 0 ? C(0) : (a == 0 ? b : C(1))))
// fmax/fmin ignore a NaN operand (NaN only when both are).
OAR_MATH_BINARY_OP(Fmax, "fmax", RealNotBool, (b != b || a > b) ? a : (a != a ? b : (a < b ? b : a)))
OAR_MATH_BINARY_OP(Fmin, "fmin", RealNotBool, (b != b || a < b) ? a : (a != a ? b : (a > b ? b : a)))
// copysign: |x| with the sign of y, sign bit included (y = -0.0 gives -|x|); integers as if converted
// to double and back, so the dtype's minimum keeps wrapping as in numpy.
template <class C>
C copysign_value(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return std::copysign(a, b);
  else
    return (b < 0) != (a < 0) ? C(-a) : a;
}
OAR_MATH_BINARY_OP(Copysign, "copysign", RealNotBool, copysign_value(a, b))
OAR_MATH_BINARY_OP(BitwiseAnd, "bitwise_and", IntOrBool, C(a& b))
OAR_MATH_BINARY_OP(BitwiseOr, "bitwise_or", IntOrBool, C(a | b))
OAR_MATH_BINARY_OP(BitwiseXor, "bitwise_xor", IntOrBool, C(a ^ b))
// numpy: gcd and lcm are non-negative; lcm(0, y) = 0.
OAR_MATH_BINARY_OP(Gcd, "gcd", IntOnly, C(std::gcd(int64_t(a), int64_t(b))))
OAR_MATH_BINARY_OP(Lcm, "lcm", IntOnly, C(std::lcm(int64_t(a), int64_t(b))))
#undef OAR_MATH_BINARY_OP

// ---- clip -----------------------------------------------------------------------------------------
// min/max are doubles; for integer x they are clamped to T's range first (so +-inf work for int32).
template <class T>
compute_t<T> bound(double v) {
  if constexpr (is_int_v<T>) {
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);  // truncates toward zero like a cast
  } else {
    return static_cast<compute_t<T>>(v);
  }
}

void clip_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("clip", x);
  const double lo = attr_float_or(ctx, "min", -INFINITY), hi = attr_float_or(ctx, "max", INFINITY);
  dispatch<RealNotBool>("clip", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C l = bound<T>(lo), h = bound<T>(hi);
    // Two independent selects (not nested) so GCC emits blends and vectorises; NaN stays NaN.
    cpu_unary_loop<T, T>(out, x, [=](C v) {
      const C upper = v > h ? h : v;
      return v < l ? l : upper;
    });
  });
}

// ---- scans ----------------------------------------------------------------------------------------
// The accumulator: wrapping unsigned for ints, float for 16-bit floats, double for float32/64.
template <class T>
using scan_acc_t =
    std::conditional_t<is_int_v<T>, uwide_t<T>, std::conditional_t<(sizeof(T) == 2), float, double>>;

enum ScanMode { kSum, kProd, kLogSumExp };

// logaddexp(a, v), stable; equal values (also +-inf) give a + log 2, NaN propagates.
template <class A>
inline A log_add_exp(A a, A v) {
  if (a == v) return a + A(0.6931471805599453);
  const A m = a > v ? a : v;
  if (m != m || v != v) return a + v;  // NaN
  return m + std::log1p(std::exp(-std::fabs(a - v)));
}

template <class T, int kMode>
void scan_impl(const TensorView& out, const TensorView& x, int64_t axis, bool flatten, bool reverse) {
  using A = scan_acc_t<T>;
  const int64_t numel = x.numel();
  if (numel == 0) return;
  int64_t outer = 1, n = numel, inner = 1;
  if (!flatten && x.ndim() > 0) {
    outer = product(x.dims(), 0, axis);
    n = x.dim(static_cast<int32_t>(axis));
    inner = product(x.dims(), axis + 1, x.ndim());
  }
  const T* px = x.data<T>();
  T* po = out.data<T>();
  auto combine = [](A acc, T v) -> A {
    if constexpr (kMode == kProd)
      return acc * A(compute_t<T>(v));
    else if constexpr (kMode == kLogSumExp)
      return log_add_exp(acc, A(compute_t<T>(v)));
    else
      return acc + A(compute_t<T>(v));
  };
  const A identity = kMode == kProd ? A(1) : (kMode == kLogSumExp ? A(-INFINITY) : A(0));
  // One long row (the whole tensor): scan chunks in parallel, then add each chunk's carry-in.
  // Only for sums: products would need the same treatment but are rarely that long.
  const int threads = max_threads();
  if (kMode == kSum && outer * inner == 1 && n >= 4 * kElementwiseGrain && threads > 1) {
    const int64_t chunks = threads;
    const int64_t len = (n + chunks - 1) / chunks;
    std::vector<A> carry(static_cast<size_t>(chunks), A(0));
    // Chunk c covers positions [c*len, (c+1)*len) in scan order.
    auto pos = [&](int64_t i) { return reverse ? n - 1 - i : i; };
    // Pass 1: each chunk's total; pass 2: each chunk scanned from the sum of the chunks before it.
    parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        A acc = A(0);
        for (int64_t i = c * len, e = std::min(n, (c + 1) * len); i < e; ++i) acc = combine(acc, px[pos(i)]);
        carry[c] = acc;
      }
    });
    std::vector<A> start(static_cast<size_t>(chunks), A(0));
    for (int64_t c = 1; c < chunks; ++c) start[c] = start[c - 1] + carry[c - 1];
    parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        A acc = start[c];
        for (int64_t i = c * len, e = std::min(n, (c + 1) * len); i < e; ++i) {
          acc = combine(acc, px[pos(i)]);
          po[pos(i)] = T(static_cast<compute_t<T>>(acc));
        }
      }
    });
    return;
  }
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        const T* r = px + o * n;
        T* w = po + o * n;
        A acc = identity;
        if (reverse)
          for (int64_t i = n - 1; i >= 0; --i)
            acc = combine(acc, r[i]), w[i] = T(static_cast<compute_t<T>>(acc));
        else
          for (int64_t i = 0; i < n; ++i) acc = combine(acc, r[i]), w[i] = T(static_cast<compute_t<T>>(acc));
      }
    });
    return;
  }
  // inner > 1: blocks of adjacent columns scanned together (contiguous inner loop).
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(
      0, outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (n * kBlock)), [&](int64_t lo, int64_t hi) {
        A acc[kBlock];
        for (int64_t u = lo; u < hi; ++u) {
          const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, nb = std::min(kBlock, inner - j0);
          const T* base = px + o * n * inner + j0;
          T* wbase = po + o * n * inner + j0;
          for (int64_t j = 0; j < nb; ++j) acc[j] = identity;
          for (int64_t s = 0; s < n; ++s) {
            const int64_t i = reverse ? n - 1 - s : s;
            for (int64_t j = 0; j < nb; ++j) {
              acc[j] = combine(acc[j], base[i * inner + j]);
              wbase[i * inner + j] = T(static_cast<compute_t<T>>(acc[j]));
            }
          }
        }
      });
}

template <int kMode>
void scan_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const char* name = kMode == kProd ? "cumprod" : (kMode == kSum ? "cumsum" : "logcumsumexp");
  const bool flatten = attr_int_or(ctx, "flatten", 0) != 0;
  const bool reverse = kMode != kProd && attr_int_or(ctx, "reverse", 0) != 0;
  const int64_t axis = flatten ? 0 : normalize_axis(name, attr_int_or(ctx, "axis", -1), x.ndim());
  if constexpr (kMode == kLogSumExp)
    dispatch<FloatType>(name, x.dtype(),
                        [&](auto tag) { scan_impl<decltype(tag), kMode>(out, x, axis, flatten, reverse); });
  else
    dispatch<IntOrFloat>(name, x.dtype(),
                         [&](auto tag) { scan_impl<decltype(tag), kMode>(out, x, axis, flatten, reverse); });
}

// ---- all / any ------------------------------------------------------------------------------------
template <class T, bool kAll>
struct BoolReduce {
  using acc_t = bool;
  bool init() const { return kAll; }
  bool step(bool acc, compute_t<T> v, int64_t) const {
    return kAll ? (acc && v != compute_t<T>(0)) : (acc || v != compute_t<T>(0));
  }
  bool merge(bool a, bool b) const { return kAll ? (a && b) : (a || b); }
  bool finish(bool acc, int64_t) const { return acc; }
};

template <bool kAll>
void bool_reduce_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const char* name = kAll ? "all" : "any";
  check_rank(name, x);
  std::vector<int64_t> axes = attr_ints_or(ctx, "axis", {});
  if (axes.empty() && x.ndim() > 0)
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  if (x.numel() == 0) {  // empty reductions: all -> true, any -> false
    bool* po = out.data<bool>();
    std::fill(po, po + out.numel(), kAll);
    return;
  }
  dispatch<RealType>(name, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    oar::sdk::reduce_loop<bool, T>(out, x, axes, BoolReduce<T, kAll>{});
  });
}

// ---- creation -------------------------------------------------------------------------------------
template <class T, class Gen>
void generate(const TensorView& out, Gen gen) {
  T* po = out.data<T>();
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = gen(i);
  });
}

// Computed from both ends (as Paddle), so the first value is start and the last is stop exactly.
void linspace_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const double start = ctx.attr_float("start"), stop = ctx.attr_float("stop");
  const int64_t num = out.numel();
  const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  const int64_t half = num == 1 ? 1 : num / 2;  // a single value is start, as in Paddle
  dispatch<IntOrFloat>("linspace", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    generate<T>(out, [=](int64_t i) {
      const double v =
          i < half ? start + step * static_cast<double>(i) : stop - step * static_cast<double>(num - 1 - i);
      return from_double<T>(v);
    });
  });
}

void eye_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const int64_t cols = out.ndim() == 2 ? out.dim(1) : 1;
  dispatch<AnyType>("eye", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T one = from_double<T>(1.0), zero = from_double<T>(0.0);
    generate<T>(out, [=](int64_t i) { return i / cols == i % cols ? one : zero; });
  });
}

// ---- random ---------------------------------------------------------------------------------------
uint64_t attr_seed(const KernelContext& ctx) { return static_cast<uint64_t>(ctx.attr_int("seed")); }
uint64_t attr_offset(const KernelContext& ctx) {
  return static_cast<uint64_t>(attr_int_or(ctx, "offset", 0));
}

// out[i] = 1 with probability x[i]: uniform01(seed, offset + i) < p. p outside [0, 1] is an error.
void bernoulli_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const uint64_t seed = attr_seed(ctx), offset = attr_offset(ctx);
  dispatch<FloatType>("bernoulli", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    ErrorFlag bad;
    generate<T>(out, [&](int64_t i) {
      const double p = static_cast<double>(C(px[i]));
      if (!(p >= 0 && p <= 1)) bad.set();
      return T(C(oar::sdk::uniform01(seed, offset + static_cast<uint64_t>(i)) < p ? 1 : 0));
    });
    OAR_SDK_CHECK(!bad.get(), OAR_ERR_INVALID_ARGUMENT, "bernoulli: x must hold probabilities in [0, 1]");
  });
}

// Each row draws num_samples categories with probability proportional to its weights. Sample j of
// row r uses counter offset + r * num_samples + j. Without replacement a drawn category's weight
// drops to zero for the row's later draws.
void multinomial_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const uint64_t seed = attr_seed(ctx), offset = attr_offset(ctx);
  const bool replacement = attr_int_or(ctx, "replacement", 0) != 0;
  const int64_t n = x.dim(-1), rows = x.numel() / std::max<int64_t>(n, 1), k = out.dim(-1);
  dispatch<FloatType>("multinomial", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    int64_t* po = out.data<int64_t>();
    // Validate first: a bad row must not leave a half-written output behind a thrown error.
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;
      int64_t positive = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double w = static_cast<double>(compute_t<T>(px[r * n + i]));
        OAR_SDK_CHECK(w >= 0 && std::isfinite(w), OAR_ERR_INVALID_ARGUMENT,
                      "multinomial: x must be finite and non-negative, got " << w << " in row " << r);
        total += w;
        positive += w > 0;
      }
      OAR_SDK_CHECK(total > 0, OAR_ERR_INVALID_ARGUMENT, "multinomial: row " << r << " of x sums to 0");
      OAR_SDK_CHECK(replacement || positive >= k, OAR_ERR_INVALID_ARGUMENT,
                    "multinomial: row " << r << " has " << positive
                                        << " categories with nonzero weight, fewer than "
                                        << "num_samples (" << k << ") without replacement");
    }
    parallel_for(0, rows, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> cdf(static_cast<size_t>(n)), w(static_cast<size_t>(n));
      for (int64_t r = lo; r < hi; ++r) {
        for (int64_t i = 0; i < n; ++i) w[i] = static_cast<double>(compute_t<T>(px[r * n + i]));
        auto build = [&] {
          double s = 0;
          for (int64_t i = 0; i < n; ++i) cdf[i] = (s += w[i]);
          return s;
        };
        double total = build();
        for (int64_t j = 0; j < k; ++j) {
          const double u = oar::sdk::uniform01(seed, offset + static_cast<uint64_t>(r * k + j)) * total;
          int64_t c = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
          if (c >= n) c = n - 1;
          while (w[c] == 0 && c > 0) --c;  // u landed on a zero-width category (rounding)
          po[r * k + j] = c;
          if (!replacement) {
            w[c] = 0;
            total = build();
          }
        }
      }
    });
  });
}

// Poisson(rate x[i]): element i draws from its own stream, seeded by random_bits(seed, offset + i).
// Small rates multiply uniforms (Knuth); rates >= 10 use Hoermann's PTRS rejection (as numpy).
double poisson_sample(double lam, uint64_t stream) {
  uint64_t k = 0;
  auto u = [&] { return oar::sdk::uniform01(stream, k++); };
  if (lam == 0) return 0;
  if (lam < 10) {
    const double limit = std::exp(-lam);
    double prod = u();
    double count = 0;
    while (prod > limit) {
      prod *= u();
      count += 1;
    }
    return count;
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double U = u() - 0.5, V = u();
    const double us = 0.5 - std::fabs(U);
    const double kk = std::floor((2 * a / us + b) * U + lam + 0.43);
    if (us >= 0.07 && V <= vr) return kk;
    if (kk < 0 || (us < 0.013 && V > us)) continue;
    if (std::log(V) + std::log(invalpha) - std::log(a / (us * us) + b) <=
        -lam + kk * loglam - std::lgamma(kk + 1))
      return kk;
  }
}

void poisson_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const uint64_t seed = attr_seed(ctx), offset = attr_offset(ctx);
  dispatch<FloatType>("poisson", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    ErrorFlag bad;
    generate<T>(out, [&](int64_t i) {
      const double lam = static_cast<double>(C(px[i]));
      if (!(lam >= 0 && std::isfinite(lam))) {
        bad.set();
        return T(C(0));
      }
      return T(C(poisson_sample(lam, oar::sdk::random_bits(seed, offset + static_cast<uint64_t>(i)))));
    });
    OAR_SDK_CHECK(!bad.get(), OAR_ERR_INVALID_ARGUMENT, "poisson: x must hold finite rates >= 0");
  });
}

void polygamma_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const int64_t n = ctx.attr_int("n");
  dispatch<FloatType>("polygamma", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    cpu_unary_loop<T, T>(out, x, [n](C v) { return C(polygamma(n, double(v))); });
  });
}

// Fisher-Yates with counter offset + i for the swap at position i.
void randperm_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const uint64_t seed = attr_seed(ctx), offset = attr_offset(ctx);
  const int64_t n = out.numel();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t j =
        oar::sdk::random_bits(seed, offset + static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1);
    std::swap(perm[i], perm[j]);
  }
  dispatch<IntOrFloat>("randperm", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    generate<T>(out, [&](int64_t i) { return from_double<T>(static_cast<double>(perm[i])); });
  });
}

}  // namespace

void register_math_ext_kernels(Registry& r) {
  using oar::sdk::float_dtypes;
  using oar::sdk::int_dtypes;
  using oar::sdk::join;
  const auto floats = float_dtypes();
  const auto real_nb = int_float_dtypes();
  const auto ints_bool = join({{OAR_DTYPE_BOOL}, int_dtypes()});
  r.add("sinh", floats, &unary_kernel<Sinh>, kStrided);
  r.add("cosh", floats, &unary_kernel<Cosh>, kStrided);
  r.add("tan", floats, &unary_kernel<Tan>, kStrided);
  r.add("asin", floats, &unary_kernel<Asin>, kStrided);
  r.add("acos", floats, &unary_kernel<Acos>, kStrided);
  r.add("atan", floats, &unary_kernel<Atan>, kStrided);
  r.add("asinh", floats, &unary_kernel<Asinh>, kStrided);
  r.add("acosh", floats, &unary_kernel<Acosh>, kStrided);
  r.add("atanh", floats, &unary_kernel<Atanh>, kStrided);
  r.add("log2", floats, &unary_kernel<Log2>, kStrided);
  r.add("log10", floats, &unary_kernel<Log10>, kStrided);
  r.add("lgamma", floats, &unary_kernel<Lgamma>, kStrided);
  r.add("digamma", floats, &unary_kernel<Digamma>, kStrided);
  r.add("erfinv", floats, &unary_kernel<Erfinv>, kStrided);
  r.add("trunc", real_nb, &unary_kernel<Trunc>, kStrided);
  r.add("bitwise_not", ints_bool, &unary_kernel<BitwiseNot>, kStrided);

  r.add("atan2", floats, &binary_kernel<Atan2>, kStrided);
  r.add("heaviside", floats, &binary_kernel<Heaviside>, kStrided);
  r.add("fmax", real_nb, &binary_kernel<Fmax>, kStrided);
  r.add("fmin", real_nb, &binary_kernel<Fmin>, kStrided);
  r.add("copysign", real_nb, &binary_kernel<Copysign>, kStrided);
  r.add("bitwise_and", ints_bool, &binary_kernel<BitwiseAnd>, kStrided);
  r.add("bitwise_or", ints_bool, &binary_kernel<BitwiseOr>, kStrided);
  r.add("bitwise_xor", ints_bool, &binary_kernel<BitwiseXor>, kStrided);
  r.add("gcd", int_dtypes(), &binary_kernel<Gcd>, kStrided);
  r.add("lcm", int_dtypes(), &binary_kernel<Lcm>, kStrided);

  r.add("clip", real_nb, &clip_kernel, kStrided);
  r.add("cumsum", real_nb, &scan_kernel<kSum>);
  r.add("cumprod", real_nb, &scan_kernel<kProd>);
  r.add("logcumsumexp", floats, &scan_kernel<kLogSumExp>);
  r.add("all", real_dtypes(), &bool_reduce_kernel<true>, kStrided);
  r.add("any", real_dtypes(), &bool_reduce_kernel<false>, kStrided);

  r.add("linspace", real_nb, &linspace_kernel);
  r.add("eye", all_dtypes(), &eye_kernel);
  r.add("bernoulli", floats, &bernoulli_kernel);
  r.add("multinomial", floats, &multinomial_kernel);
  r.add("randperm", real_nb, &randperm_kernel);
  r.add("poisson", floats, &poisson_kernel);
  r.add("polygamma", floats, &polygamma_kernel, kStrided);
}

}  // namespace oar_cpu
