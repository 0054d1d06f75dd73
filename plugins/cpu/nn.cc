// CPU kernels of the nn op family (framework/src/ops_nn.cc defines the ops): fused activations and
// their gradients, layer_norm forward/backward, softmax cross entropy forward/backward.
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "elementwise.h"
#include "layer_norm.h"
#include "softmax_short.h"
#include "vec_loop.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;

// ---- activations ----------------------------------------------------------------------------------
// Each functor: f(x) the activation, df(x) its derivative, in the compute type C.
// gelu's two forms are two functors, picked once per call (Gelu_fwd/_bwd below): with the `approximate`
// attribute tested inside f(), GCC kept the loop scalar (it does not unswitch it).
// The three with transcendentals (kVec) are written for V = C and, for float, the vector types: their
// float32 and 16-bit kernels run the vector loops of vec_loop.h (decision 140).
template <class C>
struct GeluErf {
  static constexpr bool kVec = true;
  GeluErf() = default;
  explicit GeluErf(const KernelContext&) {}
  static constexpr C kInvSqrt2 = C(0.7071067811865476), kInvSqrt2Pi = C(0.3989422804014327);
  template <class V>
  OAR_VEC_INLINE V f(V x) const {
    return gelu_erf<C>(x);
  }
  template <class V>
  OAR_VEC_INLINE V df(V x) const {
    return C(0.5) * (C(1) + verf(x * kInvSqrt2)) + x * kInvSqrt2Pi * vexp(C(-0.5) * x * x);
  }
};
template <class C>
struct GeluTanh {
  static constexpr bool kVec = true;
  GeluTanh() = default;
  explicit GeluTanh(const KernelContext&) {}
  static constexpr C kSqrt2OverPi = C(0.7978845608028654), kA = C(0.044715);
  template <class V>
  OAR_VEC_INLINE V f(V x) const {
    return C(0.5) * x * (C(1) + vtanh(kSqrt2OverPi * (x + kA * x * x * x)));
  }
  template <class V>
  OAR_VEC_INLINE V df(V x) const {
    const V u = kSqrt2OverPi * (x + kA * x * x * x), t = vtanh(u);
    const V du = kSqrt2OverPi * (C(1) + C(3) * kA * x * x);
    return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du;
  }
};
template <class C>
struct Silu {
  static constexpr bool kVec = true;
  Silu() = default;
  explicit Silu(const KernelContext&) {}
  template <class V>
  OAR_VEC_INLINE V f(V x) const {
    return x / (C(1) + vexp(-x));
  }
  template <class V>
  OAR_VEC_INLINE V df(V x) const {
    const V s = C(1) / (C(1) + vexp(-x));
    return s * (C(1) + x * (C(1) - s));
  }
};
template <class C>
struct LeakyRelu {
  C a;
  explicit LeakyRelu(const KernelContext& ctx) : a(C(attr_float_or(ctx, "negative_slope", 0.01))) {}
  C f(C x) const { return x > C(0) ? x : x * a; }
  C df(C x) const { return x > C(0) ? C(1) : a; }
};
template <class C>
struct Elu {
  C a;
  explicit Elu(const KernelContext& ctx) : a(C(attr_float_or(ctx, "alpha", 1.0))) {}
  C f(C x) const { return x > C(0) ? x : a * std::expm1(x); }
  C df(C x) const { return x > C(0) ? C(1) : a * vexp(x); }
};
template <class C>
struct Softplus {
  C beta, threshold;
  explicit Softplus(const KernelContext& ctx)
      : beta(C(attr_float_or(ctx, "beta", 1.0))), threshold(C(attr_float_or(ctx, "threshold", 20.0))) {}
  // Paddle: x when beta * x > threshold, else log(1 + exp(beta x)) / beta.
  C f(C x) const {
    const C z = beta * x;
    if (z > threshold) return x;
    return (std::max(z, C(0)) + std::log1p(std::exp(-std::abs(z)))) / beta;
  }
  C df(C x) const {
    const C z = beta * x;
    if (z > threshold) return C(1);
    return C(1) / (C(1) + vexp(-z));
  }
};
template <class C>
struct Hardswish {
  explicit Hardswish(const KernelContext&) {}
  C f(C x) const { return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6); }
  C df(C x) const {
    if (x < C(-3)) return C(0);
    if (x > C(3)) return C(1);
    return (C(2) * x + C(3)) / C(6);
  }
};
template <class C>
struct Hardsigmoid {
  C slope, offset;
  explicit Hardsigmoid(const KernelContext& ctx)
      : slope(C(attr_float_or(ctx, "slope", 1.0 / 6.0))), offset(C(attr_float_or(ctx, "offset", 0.5))) {}
  C f(C x) const { return std::min(std::max(slope * x + offset, C(0)), C(1)); }
  C df(C x) const {
    const C v = slope * x + offset;
    return (v > C(0) && v < C(1)) ? slope : C(0);
  }
};

// Whether Act has vector forms (kVec), and those as vec_loop.h ops: f(x), and g * df(x) for the gradient.
template <template <class> class Act, class = void>
struct HasVec : std::false_type {};
template <template <class> class Act>
struct HasVec<Act, std::void_t<decltype(Act<float>::kVec)>> : std::true_type {};
template <template <class> class Act>
struct ActFn {
  template <class V>
  OAR_VEC_INLINE V operator()(V x) const {
    return Act<float>{}.f(x);
  }
};
template <template <class> class Act>
struct ActGradFn {
  template <class V>
  OAR_VEC_INLINE V operator()(V x, V g) const {
    return g * Act<float>{}.df(x);
  }
};

template <template <class> class Act>
void act_kernel(KernelContext& ctx, const char* name) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  dispatch<FloatType>(name, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (HasVec<Act>::value && (std::is_same_v<T, float> || is_lowp_v<T>)) {
      vec_unary<T>(VecKernels<ActFn<Act>>::map1(), out.data<T>(), x.data<T>(), x.numel());
      return;
    }
    const Act<C> act(ctx);
    if constexpr (is_lowp_v<T>) {  // blocks converted to float32 and back (lowp.h)
      lowp_unary_loop<T>(out, x, [act](float v) { return act.f(v); });
      return;
    }
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, x.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      // A local copy of the functor: read through the captured reference, its parameters (a slope)
      // are reloaded after every store, which keeps the loop scalar and branchy (mispredicting on
      // random signs); local, the loop vectorises.
      const Act<C> fn = act;
      for (int64_t i = lo; i < hi; ++i) po[i] = T(fn.f(C(px[i])));
    });
  });
}
template <template <class> class Act>
void act_grad_kernel(KernelContext& ctx, const char* name) {
  TensorView x = ctx.input(0), g = ctx.input(1), out = ctx.output(0);
  dispatch<FloatType>(name, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    if constexpr (HasVec<Act>::value && (std::is_same_v<T, float> || is_lowp_v<T>)) {
      vec_binary<T>(VecKernels<ActGradFn<Act>>::map2(), out.data<T>(), x.data<T>(), g.data<T>(), x.numel());
      return;
    }
    const Act<C> act(ctx);
    if constexpr (is_lowp_v<T>) {
      lowp_binary_loop<T>(out, x, g, [act](float v, float gv) { return gv * act.df(v); });
      return;
    }
    const T *px = x.data<T>(), *pg = g.data<T>();
    T* po = out.data<T>();
    parallel_for(0, x.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      const Act<C> fn = act;  // as in act_kernel
      for (int64_t i = lo; i < hi; ++i) po[i] = T(C(pg[i]) * fn.df(C(px[i])));
    });
  });
}

#define OAR_NN_ACT(NAME, STR)                                         \
  void NAME##_fwd(KernelContext& ctx) { act_kernel<NAME>(ctx, STR); } \
  void NAME##_bwd(KernelContext& ctx) { act_grad_kernel<NAME>(ctx, STR "_grad"); }
OAR_NN_ACT(GeluErf, "gelu")
OAR_NN_ACT(GeluTanh, "gelu")
OAR_NN_ACT(Silu, "silu")
OAR_NN_ACT(LeakyRelu, "leaky_relu")
OAR_NN_ACT(Elu, "elu")
OAR_NN_ACT(Softplus, "softplus")
OAR_NN_ACT(Hardswish, "hardswish")
OAR_NN_ACT(Hardsigmoid, "hardsigmoid")
#undef OAR_NN_ACT
void Gelu_fwd(KernelContext& ctx) {
  if (attr_int_or(ctx, "approximate", 0) != 0) return GeluTanh_fwd(ctx);
  GeluErf_fwd(ctx);
}
void Gelu_bwd(KernelContext& ctx) {
  if (attr_int_or(ctx, "approximate", 0) != 0) return GeluTanh_bwd(ctx);
  GeluErf_bwd(ctx);
}

// ---- layer_norm -----------------------------------------------------------------------------------
void layer_norm_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.input(1), b = ctx.input(2);
  const int64_t axis = ctx.attr_int("begin_norm_axis");
  const double eps = attr_float_or(ctx, "epsilon", 1e-5);
  (void)axis;  // w's size is the normalised extent
  TensorView out = ctx.output(0), mean = ctx.output(1), rstd = ctx.output(2);
  const int64_t n = w.numel(), outer = n == 0 ? 0 : x.numel() / n;
  dispatch<FloatType>("layer_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lowp_v<T>) {  // the float32 kernel between vectorised conversions (lowp.h)
      // w and b once (scratch slots 2, 3), x a chunk of rows at a time (slots 0, 1 of each thread)
      const AsF32<T> fw(2, w.data<T>(), n), fb(3, b.data<T>(), n);
      float *pm = mean.data<float>(), *pr = rstd.data<float>();
      lowp_rows(x.data<T>(), out.data<T>(), outer, n,
                [&](const float* xf, float* of, int64_t r0, int64_t rows) {
                  layer_norm_fwd<float>(xf, fw.data(), fb.data(), of, pm + r0, pr + r0, n, rows, eps);
                });
    } else {
      using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
      layer_norm_fwd<T>(x.data<T>(), w.data<T>(), b.data<T>(), out.data<T>(), mean.data<S>(), rstd.data<S>(),
                        n, outer, eps);
    }
  });
}

// dx = rstd * (w*dy - mean(w*dy) - xhat * mean(w*dy*xhat)); dweight = sum(dy*xhat); dbias = sum(dy).
// One row: adds its dweight/dbias terms to aw/ab and writes dx.
template <class T, class S>
__attribute__((always_inline)) inline void layer_norm_bwd_row(const T* xr, const T* gr, const T* pw, T* dr,
                                                              S* aw, S* ab, S m, S rs, int64_t n) {
  using C = compute_t<T>;
  // One pass: the dweight/dbias partials and the two row sums (8 lanes each, so it vectorises).
  S lg[8] = {}, lgx[8] = {};
  auto step = [&](int64_t i, S & sg_acc, S & sgx_acc) __attribute__((always_inline)) {
    const S xh = (S(C(xr[i])) - m) * rs, g = S(C(gr[i]));
    const S wg = g * S(C(pw[i]));
    sg_acc += wg;
    sgx_acc += wg * xh;
    aw[i] += g * xh;
    ab[i] += g;
  };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) step(j + k, lg[k], lgx[k]);
  S sg = 0, sgx = 0;
  for (; j < n; ++j) step(j, sg, sgx);
  for (int k = 0; k < 8; ++k) sg += lg[k], sgx += lgx[k];
  const S mg = sg / S(n), mgx = sgx / S(n);
  for (int64_t i = 0; i < n; ++i) {
    const S xh = (S(C(xr[i])) - m) * rs;
    dr[i] = T(C(rs * (S(C(gr[i])) * S(C(pw[i])) - mg - xh * mgx)));
  }
}
// The float32 row with GCC vector types, 8 lanes (two SSE registers on baseline x86-64, one AVX register
// in the AVX2 build): the auto-vectorised form of the loop above shuffled its 8 accumulators between
// registers. Lane k sums the elements j + k, the tail goes to the scalar sum, then the lanes in order:
// the same operations in the same order as layer_norm_bwd_row, so the same bits, and the same bits in
// either build (target "avx2" does not enable FMA, so nothing is contracted).
typedef float v8f __attribute__((vector_size(32)));
__attribute__((always_inline)) inline void layer_norm_bwd_row_v8(const float* xr, const float* gr,
                                                                 const float* pw, float* dr, float* aw,
                                                                 float* ab, float m, float rs, int64_t n) {
  const auto load = [](const float* p) __attribute__((always_inline)) {
    v8f v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  const auto store = [](float* p, v8f v) __attribute__((always_inline)) { std::memcpy(p, &v, sizeof v); };
  const v8f vm = v8f{} + m, vrs = v8f{} + rs;
  v8f lg = {}, lgx = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const v8f xh = (load(xr + j) - vm) * vrs, g = load(gr + j);
    const v8f wg = g * load(pw + j);
    lg += wg;
    lgx += wg * xh;
    store(aw + j, load(aw + j) + g * xh);
    store(ab + j, load(ab + j) + g);
  }
  float sg = 0, sgx = 0;
  for (; j < n; ++j) {
    const float xh = (xr[j] - m) * rs, g = gr[j];
    const float wg = g * pw[j];
    sg += wg;
    sgx += wg * xh;
    aw[j] += g * xh;
    ab[j] += g;
  }
  for (int k = 0; k < 8; ++k) sg += lg[k], sgx += lgx[k];
  const float mg = sg / float(n), mgx = sgx / float(n);
  for (int64_t i = 0; i < n; ++i) {
    const float xh = (xr[i] - m) * rs;
    dr[i] = rs * (gr[i] * pw[i] - mg - xh * mgx);
  }
}
__attribute__((target("avx2"))) void layer_norm_bwd_row_avx2(const float* xr, const float* gr,
                                                             const float* pw, float* dr, float* aw, float* ab,
                                                             float m, float rs, int64_t n) {
  layer_norm_bwd_row_v8(xr, gr, pw, dr, aw, ab, m, rs, n);
}
void layer_norm_bwd_row_base(const float* xr, const float* gr, const float* pw, float* dr, float* aw,
                             float* ab, float m, float rs, int64_t n) {
  layer_norm_bwd_row_v8(xr, gr, pw, dr, aw, ab, m, rs, n);
}

template <class T, class S = std::conditional_t<std::is_same_v<T, double>, double, float>>
void layer_norm_bwd(const T* px, const T* pw, const S* pm, const S* pr, const T* pg, T* pdx, T* pw_out,
                    T* pb_out, int64_t n, int64_t outer) {
  using C = compute_t<T>;
  // Rows are split into chunks; each chunk accumulates its own dweight/dbias partial sums.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(outer, 64));
  std::vector<S> pdw(static_cast<size_t>(chunks * n), S(0)), pdb(static_cast<size_t>(chunks * n), S(0));
  static const bool avx2 = __builtin_cpu_supports("avx2");
  parallel_for(0, chunks, 1, [&](int64_t clo, int64_t chi) {
    for (int64_t ch = clo; ch < chi; ++ch) {
      const int64_t r0 = outer * ch / chunks, r1 = outer * (ch + 1) / chunks;
      S* aw = pdw.data() + ch * n;
      S* ab = pdb.data() + ch * n;
      for (int64_t o = r0; o < r1; ++o) {
        if constexpr (std::is_same_v<T, float>) {
          (avx2 ? layer_norm_bwd_row_avx2 : layer_norm_bwd_row_base)(px + o * n, pg + o * n, pw, pdx + o * n,
                                                                     aw, ab, pm[o], pr[o], n);
        } else {
          layer_norm_bwd_row<T, S>(px + o * n, pg + o * n, pw, pdx + o * n, aw, ab, pm[o], pr[o], n);
        }
      }
    }
  });
  parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      S a = 0, c = 0;
      for (int64_t ch = 0; ch < chunks; ++ch) a += pdw[ch * n + i], c += pdb[ch * n + i];
      pw_out[i] = T(C(a));
      pb_out[i] = T(C(c));
    }
  });
}

void layer_norm_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0);
  TensorView w = ctx.input(1), mean = ctx.input(2), rstd = ctx.input(3), dy = ctx.input(4);
  TensorView dx = ctx.output(0), dw = ctx.output(1), db = ctx.output(2);
  const int64_t n = w.numel(), outer = n == 0 ? 0 : x.numel() / n;
  dispatch<FloatType>("layer_norm_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lowp_v<T>) {
      const AsF32<T> fx(0, x.data<T>(), x.numel()), fw(1, w.data<T>(), n), fg(2, dy.data<T>(), dy.numel());
      const F32Buffer fdx(3, x.numel()), fdw(4, n), fdb(5, n);
      layer_norm_bwd<float>(fx.data(), fw.data(), mean.data<float>(), rstd.data<float>(), fg.data(),
                            fdx.data(), fdw.data(), fdb.data(), n, outer);
      store_f32(fdx.data(), dx.data<T>(), x.numel());
      store_f32(fdw.data(), dw.data<T>(), n);
      store_f32(fdb.data(), db.data<T>(), n);
    } else {
      using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
      layer_norm_bwd<T>(x.data<T>(), w.data<T>(), mean.data<S>(), rstd.data<S>(), dy.data<T>(), dx.data<T>(),
                        dw.data<T>(), db.data<T>(), n, outer);
    }
  });
}

// ---- softmax cross entropy ------------------------------------------------------------------------
template <class L>
int64_t label_at(const TensorView& label, int64_t i) {
  return static_cast<int64_t>(label.data<L>()[i]);
}

// exp(x) for float x <= 0, written so the compiler vectorises it (a cheaper special case of
// vec_math.h's fast_exp: no overflow or underflow handling needed after the max shift; measured 25%
// faster on softmax): x = n ln2 + r, a Cephes-style polynomial
// for exp(r) and 2^n from the exponent bits (relative error about 2e-7, like expf). Inputs below -87 give
// exp(-87) ~ 1.6e-38, invisible next to a softmax normaliser >= 1. NaN stays NaN. GCC if-converts the
// clamp (and so vectorises the loop) only when it may assume compares do not trap; we never read the
// floating-point exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#define OAR_NN_NO_TRAPPING_MATH __attribute__((optimize("no-trapping-math")))
#else
#define OAR_NN_NO_TRAPPING_MATH
#endif
OAR_NN_NO_TRAPPING_MATH inline float exp_nonpos(float x) {
  x = x < -87.0f ? -87.0f : x;
  const int32_t n = static_cast<int32_t>(x * 1.44269504088896341f - 0.5f);  // nearest (x <= 0)
  const float fn = static_cast<float>(n);
  const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;  // n >= -126 (NaN: any bits, NaN result)
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return (p * r * r + r + 1.0f) * scale;
}
// w[i] = exp(x[i] - m) for i < n (m >= every x[i]).
OAR_NN_NO_TRAPPING_MATH void exp_shifted(float* w, const float* x, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) w[i] = exp_nonpos(x[i] - m);
}
// max of x[i] (NaN ignored, as std::max; exp(NaN - m) still makes the row NaN), 8 lanes.
OAR_NN_NO_TRAPPING_MATH __attribute__((always_inline)) inline float row_max(const float* x, int64_t n) {
  // 8 lanes in a GCC vector type (the array form compiled to scalar maxss in the AVX2 build)
  v8f acc = v8f{} - std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8f v;
    std::memcpy(&v, x + i, sizeof v);
    acc = acc < v ? v : acc;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) m = m < x[i] ? x[i] : m;
  for (int k = 0; k < 8; ++k) m = m < acc[k] ? acc[k] : m;
  return m;
}

// One float32 row of softmax_cross_entropy: w = softmax(r), returns log of the normaliser (m + log s).
// The exp pass also sums (8 lanes in row_sum's order); built for AVX2 and for baseline x86-64 (the .so's
// target), chosen once by the CPU: the same operations in the same order (target "avx2" does not enable
// FMA, so nothing is contracted), so the same bits either way.
// exp_nonpos on 8 lanes, the same operations lane by lane (the array form of the loop kept its
// polynomial constants on the stack in the AVX2 build).
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
__attribute__((always_inline)) inline v8f exp_nonpos_v8(v8f x) {
  x = x < -87.0f ? v8f{} - 87.0f : x;
  const v8i n = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, v8i);  // truncates, as the cast
  const v8f fn = __builtin_convertvector(n, v8f);
  const v8f r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  v8f p = v8f{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const v8u bits = reinterpret_cast<v8u>(n + 127) << 23;  // n >= -126 (NaN: any bits, NaN result)
  v8f scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return (p * r * r + r + 1.0f) * scale;
}

// w == nullptr (loss_only): the log of the normaliser alone, the same sum in the same order.
template <bool kStore>
OAR_NN_NO_TRAPPING_MATH __attribute__((always_inline)) inline float lse_row_body(const float* r, float* w,
                                                                                 int64_t K) {
  const float m = row_max(r, K);
  const v8f vm = v8f{} + m;
  v8f acc = {};
  int64_t i = 0;
  for (; i + 8 <= K; i += 8) {
    v8f v;
    std::memcpy(&v, r + i, sizeof v);
    const v8f e = exp_nonpos_v8(v - vm);
    if constexpr (kStore) std::memcpy(w + i, &e, sizeof e);
    acc += e;
  }
  float s = 0;
  for (; i < K; ++i) {
    const float e = exp_nonpos(r[i] - m);
    if constexpr (kStore) w[i] = e;
    s += e;
  }
  for (int k = 0; k < 8; ++k) s += acc[k];
  if constexpr (kStore) {
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < K; ++j) w[j] *= inv;
  }
  return m + std::log(s);
}
__attribute__((target("avx2"))) float softmax_row_avx2(const float* r, float* w, int64_t K) {
  return w ? lse_row_body<true>(r, w, K) : lse_row_body<false>(r, w, K);
}
float softmax_row_base(const float* r, float* w, int64_t K) {
  return w ? lse_row_body<true>(r, w, K) : lse_row_body<false>(r, w, K);
}
using SoftmaxRow = float (*)(const float*, float*, int64_t);
SoftmaxRow softmax_row() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? softmax_row_avx2 : softmax_row_base;
}
#undef OAR_NN_NO_TRAPPING_MATH

template <class T, class L>
void softmax_ce_fwd(const TensorView& x, const TensorView& label, const TensorView& loss,
                    const TensorView& sm, int64_t ignore_index, bool loss_only, ErrorFlag& bad) {
  using C = compute_t<T>;
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t N = x.dim(0), K = x.dim(1);
  const T* px = x.data<T>();
  const L* pl = label.data<L>();
  T *ploss = loss.data<T>(), *ps = sm.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    const SoftmaxRow row = softmax_row();
    parallel_for(0, N, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        const float lse = row(px + o * K, loss_only ? nullptr : ps + o * K, K);
        const int64_t l = static_cast<int64_t>(pl[o]);
        if (l == ignore_index) {
          ploss[o] = 0;
        } else if (l < 0 || l >= K) {
          bad.set();
          ploss[o] = 0;
        } else {
          ploss[o] = lse - px[o * K + l];
        }
      }
    });
    return;
  }
  parallel_for(0, N, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const T* r = px + o * K;
      T* w = ps + o * K;
      S m = -std::numeric_limits<S>::infinity();
      S s = 0;
      if constexpr (std::is_same_v<T, float>) {  // vectorised: max, exp pass, then an 8-way sum
        m = row_max(r, K);
        exp_shifted(w, r, K, m);
        s = row_sum<float>(K, [&](int64_t i) { return w[i]; });
      } else {
        for (int64_t i = 0; i < K; ++i) m = std::max(m, S(C(r[i])));
        for (int64_t i = 0; i < K; ++i) {
          const S e = std::exp(S(C(r[i])) - m);
          w[i] = T(C(e));
          s += e;
        }
      }
      const S inv = S(1) / s;
      for (int64_t i = 0; i < K; ++i) w[i] = T(C(S(C(w[i])) * inv));
      const int64_t l = static_cast<int64_t>(pl[o]);
      if (l == ignore_index) {
        ploss[o] = T(0);
      } else if (l < 0 || l >= K) {
        bad.set();
        ploss[o] = T(0);
      } else {
        ploss[o] = T(C(m + std::log(s) - S(C(r[l]))));
      }
    }
  });
}

void softmax_ce_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), label = ctx.input(1);
  const int64_t ignore = attr_int_or(ctx, "ignore_index", -100);
  const bool loss_only = attr_int_or(ctx, "loss_only", 0) != 0;  // float32 leaves the softmax unwritten
  ErrorFlag bad;
  dispatch<FloatType>("softmax_cross_entropy", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (label.dtype() == OAR_DTYPE_INT64)
      softmax_ce_fwd<T, int64_t>(x, label, ctx.output(0), ctx.output(1), ignore, loss_only, bad);
    else
      softmax_ce_fwd<T, int32_t>(x, label, ctx.output(0), ctx.output(1), ignore, loss_only, bad);
  });
  OAR_SDK_CHECK(!bad.get(), OAR_ERR_OUT_OF_RANGE,
                "softmax_cross_entropy: label value out of range [0, " << x.dim(1) << ") (ignore_index is "
                                                                       << ignore << ")");
}

template <class T, class L>
void softmax_ce_bwd(const TensorView& sm, const TensorView& label, const TensorView& dloss,
                    const TensorView& dx, int64_t ignore_index) {
  using C = compute_t<T>;
  const int64_t N = sm.dim(0), K = sm.dim(1);
  const T *ps = sm.data<T>(), *pg = dloss.data<T>();
  const L* pl = label.data<L>();
  T* po = dx.data<T>();
  parallel_for(0, N, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const int64_t l = static_cast<int64_t>(pl[o]);
      T* w = po + o * K;
      if (l == ignore_index || l < 0 || l >= K) {
        for (int64_t i = 0; i < K; ++i) w[i] = T(0);
        continue;
      }
      const C g = C(pg[o]);
      const T* s = ps + o * K;
      for (int64_t i = 0; i < K; ++i) w[i] = T(C(s[i]) * g);
      w[l] = T(C(w[l]) - g);
    }
  });
}

void softmax_ce_grad_kernel(KernelContext& ctx) {
  TensorView sm = ctx.input(0), label = ctx.input(1);
  const int64_t ignore = attr_int_or(ctx, "ignore_index", -100);
  dispatch<FloatType>("softmax_cross_entropy_grad", sm.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (label.dtype() == OAR_DTYPE_INT64)
      softmax_ce_bwd<T, int64_t>(sm, label, ctx.input(2), ctx.output(0), ignore);
    else
      softmax_ce_bwd<T, int32_t>(sm, label, ctx.input(2), ctx.output(0), ignore);
  });
}

}  // namespace

// softmax / log_softmax over the last (contiguous) axis of float32 rows, for misc.cc's kernels: glibc's
// expf is a scalar call (~4 ns per element, most of a small Transformer's softmax time). One row: the max
// (8 lanes, NaN ignored), w = fast_exp(r - max) on V lanes (vec_math.h: < 1 ulp, expf's range), the sum
// (8 lanes, row_sum's order), then w scaled (in double) or, for log_softmax, w = (r - max) - log(sum).
// Built for AVX-512, AVX2 and baseline as vec_loop.h's loops, with the same bits in each (decision 140).
// NaN or +inf in a row makes the row NaN (exp(NaN - m) is NaN, so is the sum).
template <class V, bool kLog>
__attribute__((always_inline)) inline void softmax_row_v(const float* r, float* w, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const float m = row_max(r, n);
  const V vm = vsplat<V>(m);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, r + i, sizeof v);
    v = fast_exp(v - vm);
    std::memcpy(w + i, &v, sizeof v);
  }
  if (i < n) vec_store_part(w + i, fast_exp(vec_load_part<V>(r + i, n - i) - vm), n - i);
  const float s = row_sum<float>(n, [&](int64_t j) { return w[j]; });
  if constexpr (kLog) {
    const float ls = std::log(s);
    for (int64_t j = 0; j < n; ++j) w[j] = (r[j] - m) - ls;
  } else {
    const double inv = 1.0 / static_cast<double>(s);
    for (int64_t j = 0; j < n; ++j) w[j] = static_cast<float>(static_cast<double>(w[j]) * inv);
  }
}
template <bool kLog>
void softmax_row_base(const float* r, float* w, int64_t n) {
  softmax_row_v<vf4, kLog>(r, w, n);
}
template <bool kLog>
OAR_VEC_AVX2 void softmax_row_v8(const float* r, float* w, int64_t n) {
  softmax_row_v<vf8, kLog>(r, w, n);
}
template <bool kLog>
OAR_VEC_AVX512 void softmax_row_v16(const float* r, float* w, int64_t n) {
  softmax_row_v<vf16, kLog>(r, w, n);
}

// Short rows (<= 16) on AVX-512: a register per row, rows in blocks of 16, in passes (max and exp, sums,
// scaling) whose iterations are independent: one row after another, a row's max, polynomial, sum and
// division are dependent chains, and the row loop above (~45 ns per 16-float row, ~85 ns for 7 floats,
// whose tail load stalls on store forwarding) runs mostly idle. Each pass does softmax_row_v's operations
// in its order, so the bits are the same (tests/python/test_cpu_vec_kernels.py). softmax_short.h.
template <bool kLog>
OAR_VEC_AVX512 void softmax_rows16(float* out, const float* in, int64_t nrows, int64_t n, float scale,
                                   const float* mask, int64_t mrs, int64_t mcs) {
  const __mmask16 lm = static_cast<__mmask16>((1u << n) - 1);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  alignas(64) float w[16][16];
  float mx[16];
  double inv[16];
  for (int64_t i0 = 0; i0 < nrows; i0 += 16) {
    const int64_t rows = std::min<int64_t>(16, nrows - i0);
    const float* ib = in + i0 * n;
    float* ob = out + i0 * n;
    // The scores after scale and mask, lanes past n 0.
    const auto load = [&](int64_t r) __attribute__((always_inline)) {
      __m512 x = _mm512_maskz_loadu_ps(lm, ib + r * n);
      if (scale != 1.f) x = _mm512_mask_mul_ps(x, lm, x, _mm512_set1_ps(scale));
      if (mask != nullptr) {
        const float* mi = mask + (i0 + r) * mrs;
        x = _mm512_mask_add_ps(x, lm, x, mcs == 0 ? _mm512_set1_ps(mi[0]) : _mm512_maskz_loadu_ps(lm, mi));
      }
      return x;
    };
    // The shifted exponentials, lanes past n 0; four rows at a time, interleaved (each row's max and
    // polynomial are long dependent chains). The max ignores NaN lanes (as row_max) and those past n;
    // these get exp(0), not exp(-inf): fast_exp's scaling of a tiny result is a denormal multiply, a
    // microcode assist that made 7-float rows 4x slower than 16-float ones.
    auto exps = [&](auto R, int64_t r0) __attribute__((always_inline)) {
      constexpr int kR = decltype(R)::value;
      vf16 e[kR];
#pragma GCC unroll 4
      for (int t = 0; t < kR; ++t) {
        const __m512 x = load(r0 + t);
        const __m512 xm = _mm512_mask_mov_ps(ninf, _mm512_mask_cmp_ps_mask(lm, x, x, _CMP_ORD_Q), x);
        mx[r0 + t] = _mm512_reduce_max_ps(xm);
        e[t] = _mm512_maskz_sub_ps(lm, x, _mm512_set1_ps(mx[r0 + t]));
      }
#pragma GCC unroll 4
      for (int t = 0; t < kR; ++t) e[t] = fast_exp(e[t]);
#pragma GCC unroll 4
      for (int t = 0; t < kR; ++t) _mm512_store_ps(w[r0 + t], _mm512_maskz_mov_ps(lm, e[t]));
    };
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) exps(std::integral_constant<int, 4>{}, r);
    for (; r < rows; ++r) exps(std::integral_constant<int, 1>{}, r);
    for (int64_t r = 0; r < rows; ++r) {  // row_sum's order (layer_norm.h), written out: its lambda would
      float acc[8] = {}, sum = 0;         // not inline into this target's code
      int64_t j = 0;
      for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; ++k) acc[k] += w[r][j + k];
      for (; j < n; ++j) sum += w[r][j];
      for (int k = 0; k < 8; ++k) sum += acc[k];
      if constexpr (kLog)
        inv[r] = std::log(sum);  // log's w = (x - max) - log(sum), in float
      else
        inv[r] = 1.0 / static_cast<double>(sum);
    }
    for (int64_t r = 0; r < rows; ++r) {
      if constexpr (kLog) {
        const __m512 y = (load(r) - _mm512_set1_ps(mx[r])) - _mm512_set1_ps(static_cast<float>(inv[r]));
        _mm512_mask_storeu_ps(ob + r * n, lm, y);
      } else {
        const __m512d s = _mm512_set1_pd(inv[r]);
        const __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_load_ps(w[r])), s));
        const __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_load_ps(w[r] + 8)), s));
        _mm512_mask_storeu_ps(ob + r * n, lm,
                              _mm512_castpd_ps(_mm512_insertf64x4(
                                  _mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1)));
      }
    }
  }
}

void softmax_rows16_avx512(float* out, const float* in, int64_t rows, int64_t n, float scale,
                           const float* mask, int64_t mrs, int64_t mcs, bool log) {
  (log ? softmax_rows16<true> : softmax_rows16<false>)(out, in, rows, n, scale, mask, mrs, mcs);
}

void softmax_rows_f32(float* out, const float* x, int64_t rows, int64_t n, bool log) {
  using Row = void (*)(const float*, float*, int64_t);
  const int isa = vec_isa();
  if (isa == 2 && n <= 16) {
    // Whole rows per thread, as below; ~5 ns a row, so pieces of >= 1024 rows.
    parallel_for(0, rows, 1024, [&](int64_t lo, int64_t hi) {
      softmax_rows16_avx512(out + lo * n, x + lo * n, hi - lo, n, 1.f, nullptr, 0, 0, log);
    });
    return;
  }
  const Row row = log ? (isa == 2   ? Row(softmax_row_v16<true>)
                         : isa == 1 ? Row(softmax_row_v8<true>)
                                    : Row(softmax_row_base<true>))
                      : (isa == 2   ? Row(softmax_row_v16<false>)
                         : isa == 1 ? Row(softmax_row_v8<false>)
                                    : Row(softmax_row_base<false>));
  // Whole rows per thread: a row's bits do not depend on the thread count.
  parallel_for(0, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) row(x + o * n, out + o * n, n);
  });
}

void register_nn_kernels(Registry& r) {
  const std::vector<OarDType> floats = oar::sdk::float_dtypes();
  r.add("gelu", floats, &Gelu_fwd);
  r.add("gelu_grad", floats, &Gelu_bwd);
  r.add("silu", floats, &Silu_fwd);
  r.add("silu_grad", floats, &Silu_bwd);
  r.add("leaky_relu", floats, &LeakyRelu_fwd);
  r.add("leaky_relu_grad", floats, &LeakyRelu_bwd);
  r.add("elu", floats, &Elu_fwd);
  r.add("elu_grad", floats, &Elu_bwd);
  r.add("softplus", floats, &Softplus_fwd);
  r.add("softplus_grad", floats, &Softplus_bwd);
  r.add("hardswish", floats, &Hardswish_fwd);
  r.add("hardswish_grad", floats, &Hardswish_bwd);
  r.add("hardsigmoid", floats, &Hardsigmoid_fwd);
  r.add("hardsigmoid_grad", floats, &Hardsigmoid_bwd);
  r.add("layer_norm", floats, &layer_norm_kernel);
  r.add("layer_norm_grad", floats, &layer_norm_grad_kernel);
  r.add("softmax_cross_entropy", floats, &softmax_ce_kernel);
  r.add("softmax_cross_entropy_grad", floats, &softmax_ce_grad_kernel);
}

}  // namespace oar_cpu
