// Branch-free float32 exp, tanh and erf: glibc's expf/tanhf/erff are scalar calls (tanhf ~25 ns per
// element, 10x numpy), and -ffast-math, which would vectorise libm, is not an option. exp uses Cody-Waite
// range reduction and a degree-6 polynomial (< 1 ulp measured over the float range); tanh uses an odd
// polynomial on |x| < 0.625 (no cancellation near 0) and 1 - 2/(exp(2|x|)+1) elsewhere (< 1.3 ulp measured
// over [-20, 20]). NaN in gives NaN out. Each is written once for one lane and for 8 or 16 (GCC vector
// types): the auto-vectoriser kept tanh scalar (decision 80) and SSE only; vec_loop.h runs the vector
// forms in loops built for AVX-512 and AVX2 (decision 140). double keeps libm (accuracy first).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace oar_cpu {

// Forced inline: a call inside an elementwise loop stops GCC from vectorising it (fast_erf was not inlined
// by the heuristics).
#define OAR_VEC_INLINE [[gnu::always_inline]] inline

// Every function below is a template over V: float (one lane), vf4, vf8 or vf16 (GCC vector types: SSE,
// AVX2 and AVX-512 registers, for the builds of vec_loop.h's loops). The vector forms do the same IEEE
// operations in the same order lane by lane, so their results are bit for bit the scalar ones: a contiguous
// tensor (vector loop) and a strided one (scalar loop) give the same answer, on any of these CPUs.
typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
typedef uint32_t vu4 __attribute__((vector_size(16)));
typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef uint32_t vu8 __attribute__((vector_size(32)));
typedef float vf16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));
typedef uint32_t vu16 __attribute__((vector_size(64)));

template <class V>
struct VecLanes;
template <>
struct VecLanes<float> {
  using I = int32_t;
  using U = uint32_t;
  OAR_VEC_INLINE static float splat(float c) { return c; }
  OAR_VEC_INLINE static I to_int(float v) { return static_cast<int32_t>(v); }  // truncates
};
template <>
struct VecLanes<vf4> {
  using I = vi4;
  using U = vu4;
  OAR_VEC_INLINE static vf4 splat(float c) { return vf4{c, c, c, c}; }
  OAR_VEC_INLINE static I to_int(vf4 v) { return __builtin_convertvector(v, vi4); }  // truncates
};
template <>
struct VecLanes<vf8> {
  using I = vi8;
  using U = vu8;
  OAR_VEC_INLINE static vf8 splat(float c) { return vf8{c, c, c, c, c, c, c, c}; }
  OAR_VEC_INLINE static I to_int(vf8 v) { return __builtin_convertvector(v, vi8); }  // truncates
};
template <>
struct VecLanes<vf16> {
  using I = vi16;
  using U = vu16;
  OAR_VEC_INLINE static vf16 splat(float c) { return vf16{c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c}; }
  OAR_VEC_INLINE static I to_int(vf16 v) { return __builtin_convertvector(v, vi16); }  // truncates
};
template <class V>
OAR_VEC_INLINE V vsplat(float c) {
  return VecLanes<V>::splat(c);
}
template <class To, class From>
OAR_VEC_INLINE To vbits(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &v, sizeof t);
  return t;
}
// |x| and copysign(m, s) on the bits (what std::fabs / std::copysign compile to).
template <class V>
OAR_VEC_INLINE V vabs(V x) {
  using U = typename VecLanes<V>::U;
  return vbits<V>(vbits<U>(x) & 0x7fffffffu);
}
template <class V>
OAR_VEC_INLINE V vcopysign(V m, V s) {
  using U = typename VecLanes<V>::U;
  return vbits<V>((vbits<U>(m) & 0x7fffffffu) | (vbits<U>(s) & 0x80000000u));
}

template <class V>
OAR_VEC_INLINE V fast_exp(V x) {
  using L = VecLanes<V>;
  using I = typename L::I;
  using U = typename L::U;
  const V hi = vsplat<V>(88.7228f), lo = vsplat<V>(-103.972f);  // beyond these expf is inf / 0
  // NaN computes with 0 (converting NaN to int is undefined) and is put back at the end.
  const V xc = x < lo ? lo : (x > hi ? hi : (x != x ? vsplat<V>(0.0f) : x));
  // n = round(x / ln2); r = x - n ln2 in two parts so r is exact to float precision.
  // Round to nearest with the 1.5 * 2^23 trick (std::nearbyint/floor are not vectorisable on SSE2).
  const V n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  V r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // e^r on |r| <= ln2/2.
  V p = vsplat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // Scale by 2^n in two steps so n down to -150 (denormal results) and up to 128 stay representable.
  const I ni = L::to_int(n);
  const I n1 = ni / 2, n2 = ni - n1;
  const U b1 = vbits<U>(I(n1 + 127)) << 23, b2 = vbits<U>(I(n2 + 127)) << 23;
  V y = p * vbits<V>(b1) * vbits<V>(b2);
  y = x > hi ? vsplat<V>(INFINITY) : y;
  y = x < lo ? vsplat<V>(0.0f) : y;
  return x != x ? x : y;
}

template <class V>
OAR_VEC_INLINE V fast_tanh(V x) {
  const V ax = vabs(x);
  // Odd polynomial on |x| < 0.625 (relative error ~1 ulp there).
  const V z = x * x;
  V p = vsplat<V>(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z + -5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z + -3.33332819422e-1f;
  const V small = ax + ax * z * p;                   // tanh(|x|); the sign is applied below (keeps -0.0)
  const V axc = ax > 10.0f ? vsplat<V>(10.0f) : ax;  // tanh(x >= 8.7) rounds to 1 in float
  const V big = 1.0f - 2.0f / (fast_exp(2.0f * axc) + 1.0f);
  const V y = vcopysign(ax < 0.625f ? small : big, x);
  return x != x ? x : y;
}

// erf, branch-free (glibc's erff is a scalar call: gelu ran 24x slower than torch on 4M elements).
// |x| < 1.25: x * P(x^2); up to 3.95: 1 - exp(-x^2) * S(1/x^2) / x, where S(w) ~ x erfc(x) e^{x^2} is
// smooth in w = 1/x^2; beyond, erf rounds to +-1 in float. Both polynomials are weighted least-squares
// fits of ours in double; measured <= 3.5 ulp over [0, 4] (the worst near the switch at 1.25).
template <class V>
OAR_VEC_INLINE V fast_erf(V x) {
  const V ax = vabs(x), z = ax * ax;
  V p = vsplat<V>(6.2530830361e-05f);
  p = p * z + -7.4516015443e-04f;
  p = p * z + 5.1149106783e-03f;
  p = p * z + -2.6809417462e-02f;
  p = p * z + 1.1282390279e-01f;
  p = p * z + -3.7612514945e-01f;
  p = p * z + 1.1283791556e+00f;
  const V small = ax * p;
  const V axc = ax < 1.25f ? vsplat<V>(1.25f) : ax;  // keeps the unused lane finite
  const V zc = axc * axc, w = 1.0f / zc;
  V q = vsplat<V>(-3.6711714708e-01f);
  q = q * w + 1.1268824399e+00f;
  q = q * w + -1.5260472873e+00f;
  q = q * w + 1.2421435871e+00f;
  q = q * w + -7.3170951947e-01f;
  q = q * w + 3.9343437874e-01f;
  q = q * w + -2.8054136601e-01f;
  q = q * w + 5.6415561464e-01f;
  const V big = 1.0f - fast_exp(-zc) * q / axc;  // no sqrt: it keeps errno and blocks vectorising
  V y = ax < 1.25f ? small : (ax < 3.95f ? big : vsplat<V>(1.0f));
  y = vcopysign(y, x);
  return x != x ? x : y;
}

// Overloads used by the kernels: float takes the fast path, double libm.
OAR_VEC_INLINE float vtanh(float x) { return fast_tanh(x); }
OAR_VEC_INLINE vf4 vtanh(vf4 x) { return fast_tanh(x); }
OAR_VEC_INLINE vf8 vtanh(vf8 x) { return fast_tanh(x); }
OAR_VEC_INLINE vf16 vtanh(vf16 x) { return fast_tanh(x); }
inline double vtanh(double x) { return std::tanh(x); }
OAR_VEC_INLINE float verf(float x) { return fast_erf(x); }
OAR_VEC_INLINE vf4 verf(vf4 x) { return fast_erf(x); }
OAR_VEC_INLINE vf8 verf(vf8 x) { return fast_erf(x); }
OAR_VEC_INLINE vf16 verf(vf16 x) { return fast_erf(x); }
inline double verf(double x) { return std::erf(x); }
OAR_VEC_INLINE float vexp(float x) { return fast_exp(x); }
OAR_VEC_INLINE vf4 vexp(vf4 x) { return fast_exp(x); }
OAR_VEC_INLINE vf8 vexp(vf8 x) { return fast_exp(x); }
OAR_VEC_INLINE vf16 vexp(vf16 x) { return fast_exp(x); }
inline double vexp(double x) { return std::exp(x); }

// gelu's exact form and sigmoid in the compute type C, the one formula of the eager kernels (nn.cc,
// unary.cc) and of the fused epilogues (fused.cc), which must give the same bits.
template <class C, class V>
OAR_VEC_INLINE V gelu_erf(V x) {
  return C(0.5) * x * (C(1) + verf(x * C(0.7071067811865476)));
}
template <class C, class V>
OAR_VEC_INLINE V sigmoid_of(V x) {
  return C(1) / (C(1) + vexp(-x));
}

}  // namespace oar_cpu
