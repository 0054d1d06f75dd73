// layer_norm's forward rows, shared by the layer_norm kernel (nn.cc) and fused_add_layer_norm (fused.cc).
#pragma once

#include <cmath>
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

// x is [outer, n]; statistics in double for float64, float otherwise (two passes over a row in cache).
template <class T, class S = std::conditional_t<std::is_same_v<T, double>, double, float>>
void layer_norm_fwd(const T* px, const T* pw, const T* pb, T* po, S* pm, S* pr, int64_t n, int64_t outer,
                    double eps) {
  using C = oar::sdk::compute_t<T>;
  oar::sdk::parallel_for(0, outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)),
                         [&](int64_t lo, int64_t hi) {
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
