// Branch-free float32 exp, tanh and erf (exp and erf loops vectorise; tanh's stays scalar, decision 80):
// glibc's expf/tanhf/erff are scalar calls (tanhf ~25 ns per element, 10x numpy), and -ffast-math, which
// would vectorise libm, is not an option. exp uses Cody-Waite range reduction and a degree-6 polynomial (< 1
// ulp measured over the float range); tanh uses an odd polynomial on |x| < 0.625 (no cancellation near 0) and
// 1 - 2/(exp(2|x|)+1) elsewhere (< 1.3 ulp measured over [-20, 20]). NaN in gives NaN out. Files including
// this are compiled with -fno-trapping-math so the selects below become vector blends. double keeps libm
// (accuracy first).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace oar_cpu {

// Forced inline: a call inside an elementwise loop stops GCC from vectorising it (fast_erf was not inlined
// by the heuristics).
#define OAR_VEC_INLINE [[gnu::always_inline]] inline

OAR_VEC_INLINE float fast_exp(float x) {
  const float hi = 88.7228f, lo = -103.972f;  // beyond these expf is inf / 0
  // NaN computes with 0 (converting NaN to int is undefined) and is put back at the end.
  float xc = x < lo ? lo : (x > hi ? hi : (x != x ? 0.0f : x));
  // n = round(x / ln2); r = x - n ln2 in two parts so r is exact to float precision.
  // Round to nearest with the 1.5 * 2^23 trick (std::nearbyint/floor are not vectorisable on SSE2).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // e^r on |r| <= ln2/2.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // Scale by 2^n in two steps so n down to -150 (denormal results) and up to 128 stay representable.
  int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2, n2 = ni - n1;
  uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > hi ? INFINITY : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

OAR_VEC_INLINE float fast_tanh(float x) {
  const float ax = std::fabs(x);
  // Odd polynomial on |x| < 0.625 (relative error ~1 ulp there).
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z + -5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z + -3.33332819422e-1f;
  const float small = ax + ax * z * p;        // tanh(|x|); the sign is applied below (keeps -0.0)
  const float axc = ax > 10.0f ? 10.0f : ax;  // tanh(x >= 8.7) rounds to 1 in float
  const float big = 1.0f - 2.0f / (fast_exp(2.0f * axc) + 1.0f);
  const float y = std::copysign(ax < 0.625f ? small : big, x);
  return x != x ? x : y;
}

// erf, branch-free (glibc's erff is a scalar call: gelu ran 24x slower than torch on 4M elements).
// |x| < 1.25: x * P(x^2); up to 3.95: 1 - exp(-x^2) * S(1/x^2) / x, where S(w) ~ x erfc(x) e^{x^2} is
// smooth in w = 1/x^2; beyond, erf rounds to +-1 in float. Both polynomials are weighted least-squares
// fits of ours in double; measured <= 3.5 ulp over [0, 4] (the worst near the switch at 1.25).
OAR_VEC_INLINE float fast_erf(float x) {
  const float ax = std::fabs(x), z = ax * ax;
  float p = 6.2530830361e-05f;
  p = p * z + -7.4516015443e-04f;
  p = p * z + 5.1149106783e-03f;
  p = p * z + -2.6809417462e-02f;
  p = p * z + 1.1282390279e-01f;
  p = p * z + -3.7612514945e-01f;
  p = p * z + 1.1283791556e+00f;
  const float small = ax * p;
  const float axc = ax < 1.25f ? 1.25f : ax;  // keeps the unused lane finite
  const float zc = axc * axc, w = 1.0f / zc;
  float q = -3.6711714708e-01f;
  q = q * w + 1.1268824399e+00f;
  q = q * w + -1.5260472873e+00f;
  q = q * w + 1.2421435871e+00f;
  q = q * w + -7.3170951947e-01f;
  q = q * w + 3.9343437874e-01f;
  q = q * w + -2.8054136601e-01f;
  q = q * w + 5.6415561464e-01f;
  const float big = 1.0f - fast_exp(-zc) * q / axc;  // no sqrt: it keeps errno and blocks vectorising
  float y = ax < 1.25f ? small : (ax < 3.95f ? big : 1.0f);
  y = std::copysign(y, x);
  return x != x ? x : y;
}

// Overloads used by the kernels: float takes the fast path, double libm.
OAR_VEC_INLINE float vtanh(float x) { return fast_tanh(x); }
inline double vtanh(double x) { return std::tanh(x); }
OAR_VEC_INLINE float verf(float x) { return fast_erf(x); }
inline double verf(double x) { return std::erf(x); }
OAR_VEC_INLINE float vexp(float x) { return fast_exp(x); }
inline double vexp(double x) { return std::exp(x); }

}  // namespace oar_cpu
