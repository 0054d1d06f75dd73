// layer_norm's forward rows, shared by the layer_norm kernel (nn.cc) and fused_add_layer_norm (fused.cc).
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

#include "elementwise.h"

namespace oar_cpu {

// sum of f(i) for i < n with 8 independent accumulators, so the compiler can vectorise the float
// reduction without reassociation flags.
template <class S, class F>
inline S row_sum(int64_t n, F f) {
  S acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += f(i + k);
  S s = 0;
  for (; i < n; ++i) s += f(i);
  for (int k = 0; k < 8; ++k) s += acc[k];
  return s;
}

// One float32 row with GCC vector types, 8 lanes (two SSE registers on baseline x86-64, one AVX register
// in the AVX2 build): the same operations in the same order as the generic row below (lane k sums the
// elements i + k, the tail the scalar sum, then the lanes in order; target "avx2" does not enable FMA, so
// nothing is contracted), so the same bits in either build. Writes the row, its mean and rstd.
typedef float ln_v8f __attribute__((vector_size(32)));
__attribute__((always_inline)) inline void layer_norm_fwd_row_v8(const float* r, const float* pw,
                                                                 const float* pb, float* wr, float* pm,
                                                                 float* pr, int64_t n, double eps) {
  const auto load = [](const float* p) __attribute__((always_inline)) {
    ln_v8f v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  ln_v8f acc = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc += load(r + i);
  float s = 0;
  for (; i < n; ++i) s += r[i];
  for (int k = 0; k < 8; ++k) s += acc[k];
  const float m = s / float(n);
  const ln_v8f vm = ln_v8f{} + m;
  acc = ln_v8f{};
  for (i = 0; i + 8 <= n; i += 8) {
    const ln_v8f d = load(r + i) - vm;
    acc += d * d;
  }
  float v = 0;
  for (; i < n; ++i) v += (r[i] - m) * (r[i] - m);
  for (int k = 0; k < 8; ++k) v += acc[k];
  const float rs = 1.0f / std::sqrt(v / float(n) + float(eps));
  *pm = m;
  *pr = rs;
  for (int64_t j = 0; j < n; ++j) wr[j] = (r[j] - m) * rs * pw[j] + pb[j];
}
__attribute__((target("avx2"))) inline void layer_norm_fwd_row_avx2(const float* r, const float* pw,
                                                                    const float* pb, float* wr, float* pm,
                                                                    float* pr, int64_t n, double eps) {
  layer_norm_fwd_row_v8(r, pw, pb, wr, pm, pr, n, eps);
}
inline void layer_norm_fwd_row_base(const float* r, const float* pw, const float* pb, float* wr, float* pm,
                                    float* pr, int64_t n, double eps) {
  layer_norm_fwd_row_v8(r, pw, pb, wr, pm, pr, n, eps);
}

// x is [outer, n]; statistics in double for float64, float otherwise (two passes over a row in cache).
template <class T, class S = std::conditional_t<std::is_same_v<T, double>, double, float>>
void layer_norm_fwd(const T* px, const T* pw, const T* pb, T* po, S* pm, S* pr, int64_t n, int64_t outer,
                    double eps) {
  using C = oar::sdk::compute_t<T>;
  oar::sdk::parallel_for(0, outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)),
                         [&](int64_t lo, int64_t hi) {
                           if constexpr (std::is_same_v<T, float>) {
                             static const bool avx2 = __builtin_cpu_supports("avx2");
                             const auto row = avx2 ? layer_norm_fwd_row_avx2 : layer_norm_fwd_row_base;
                             for (int64_t o = lo; o < hi; ++o)
                               row(px + o * n, pw, pb, po + o * n, pm + o, pr + o, n, eps);
                             return;
                           }
                           for (int64_t o = lo; o < hi; ++o) {
                             const T* r = px + o * n;
                             T* wr = po + o * n;
                             const S m = row_sum<S>(n, [&](int64_t i) { return S(C(r[i])); }) / S(n);
                             const S v = row_sum<S>(n, [&](int64_t i) {
                               const S d = S(C(r[i])) - m;
                               return d * d;
                             });
                             const S rs = S(1) / std::sqrt(v / S(n) + S(eps));
                             pm[o] = m;
                             pr[o] = rs;
                             for (int64_t i = 0; i < n; ++i)
                               wr[i] = T(C((S(C(r[i])) - m) * rs * S(C(pw[i])) + S(C(pb[i]))));
                           }
                         });
}

}  // namespace oar_cpu
