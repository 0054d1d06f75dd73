// Pooling geometry and the per-element work of the pooling kernels (dnn_pool.cu), as host+device
// functions so that pool_geom_test.cc runs the very same code on the CPU against the CPU kernel's
// loops (plugins/cpu/conv.cc). Each function computes one output (or, for avg_pool_grad, one input)
// element, walking its window in the CPU kernel's order.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda_common.h"

namespace oar_cuda {

// Spatial dims padded to 3 at the front (size 1, kernel 1, stride 1, no padding).
struct PoolGeom {
  int64_t planes;
  int64_t in[3], out[3], k[3], s[3], pad[3];  // pad: the begin padding
  int32_t adaptive;
  OAR_HD int64_t in_sz() const { return in[0] * in[1] * in[2]; }
  OAR_HD int64_t out_sz() const { return out[0] * out[1] * out[2]; }
  // The input window [b, e) of output index o along dim i, clipped to the input (the CPU's make_pool).
  OAR_HD void window(int i, int64_t o, int64_t& b, int64_t& e) const {
    const int64_t L = in[i], O = out[i];
    if (adaptive) {
      b = (o * L) / O;
      e = ((o + 1) * L + O - 1) / O;
    } else {
      b = o * s[i] - pad[i];
      e = b + k[i] < L ? b + k[i] : L;
      b = b > 0 ? b : 0;
    }
    if (e < b) e = b;
  }
  // The outputs whose window may hold input index t along dim i: [lo, hi], a superset (callers check
  // each output's window).
  OAR_HD void out_range(int i, int64_t t, int64_t& lo, int64_t& hi) const {
    const int64_t L = in[i], O = out[i];
    if (adaptive) {
      lo = (t * O) / L - 1;
      hi = ((t + 1) * O) / L;
    } else {  // o * s - pad <= t < o * s - pad + k
      const int64_t num = t + pad[i] - k[i] + 1;
      lo = num <= 0 ? 0 : (num + s[i] - 1) / s[i];
      hi = (t + pad[i]) / s[i];
    }
    if (lo < 0) lo = 0;
    if (hi > O - 1) hi = O - 1;
  }
  // The windows of flat output o of a plane.
  OAR_HD void windows(int64_t o, int64_t (&b)[3], int64_t (&e)[3]) const {
    const int64_t o2 = o % out[2], o1 = (o / out[2]) % out[1], o0 = o / (out[2] * out[1]);
    window(0, o0, b[0], e[0]);
    window(1, o1, b[1], e[1]);
    window(2, o2, b[2], e[2]);
  }
};

// The divisor of one window (the CPU's pool_divisor): divisor_override, else the clipped count
// (exclusive or adaptive), else the kernel size.
OAR_HD double pool_divisor(const PoolGeom& g, bool exclusive, int64_t divisor, int64_t n) {
  if (divisor > 0) return double(divisor);
  if (exclusive) return double(n);
  return double(g.k[0] * g.k[1] * g.k[2]);
}

// max_pool of output element idx (over all planes): the maximum and its flat index in the plane. The
// first element of the window wins ties and an all -inf window (index -1 for an empty one); a NaN
// wins and stays.
template <typename T>
OAR_HD void max_pool_one(const PoolGeom& g, const T* x, int64_t idx, T& y, int32_t& mask) {
  using A = acc_t<T>;
  const int64_t pl = idx / g.out_sz();
  int64_t b[3], e[3];
  g.windows(idx % g.out_sz(), b, e);
  const T* xp = x + pl * g.in_sz();
  A best = -A(INFINITY);
  int64_t arg = b[0] < e[0] && b[1] < e[1] && b[2] < e[2] ? (b[0] * g.in[1] + b[1]) * g.in[2] + b[2] : -1;
  bool nan = false;
  for (int64_t i0 = b[0]; i0 < e[0] && !nan; ++i0)
    for (int64_t i1 = b[1]; i1 < e[1] && !nan; ++i1) {
      const int64_t row = (i0 * g.in[1] + i1) * g.in[2];
      for (int64_t i2 = b[2]; i2 < e[2]; ++i2) {
        const A v = to_acc(xp[row + i2]);
        if (!(v <= best)) {  // larger, or NaN
          best = v, arg = row + i2;
          if (v != v) {
            nan = true;
            break;
          }
        }
      }
    }
  y = from_acc<T>(best);
  mask = static_cast<int32_t>(arg);
}

// avg_pool of output element idx: the window's sum over its divisor (0 for an empty window).
template <typename T>
OAR_HD T avg_pool_one(const PoolGeom& g, bool exclusive, int64_t divisor, const T* x, int64_t idx) {
  using A = acc_t<T>;
  const int64_t pl = idx / g.out_sz();
  int64_t b[3], e[3];
  g.windows(idx % g.out_sz(), b, e);
  const T* xp = x + pl * g.in_sz();
  A sum = 0;
  for (int64_t i0 = b[0]; i0 < e[0]; ++i0)
    for (int64_t i1 = b[1]; i1 < e[1]; ++i1)
      for (int64_t i2 = b[2]; i2 < e[2]; ++i2) sum += to_acc(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]);
  const int64_t n = (e[0] - b[0]) * (e[1] - b[1]) * (e[2] - b[2]);
  return n == 0 ? from_acc<T>(A(0)) : from_acc<T>(sum / A(pool_divisor(g, exclusive, divisor, n)));
}

// avg_pool_grad of input element idx: the sum, over the windows holding it in increasing output order
// (the order in which the CPU kernel scatters), of grad_out / divisor.
template <typename T>
OAR_HD T avg_pool_grad_one(const PoolGeom& g, bool exclusive, int64_t divisor, const T* gy, int64_t idx) {
  using A = acc_t<T>;
  const int64_t pl = idx / g.in_sz(), t = idx % g.in_sz();
  const int64_t t2 = t % g.in[2], t1 = (t / g.in[2]) % g.in[1], t0 = t / (g.in[2] * g.in[1]);
  int64_t lo0, hi0, lo1, hi1, lo2, hi2;
  g.out_range(0, t0, lo0, hi0);
  g.out_range(1, t1, lo1, hi1);
  g.out_range(2, t2, lo2, hi2);
  const T* gp = gy + pl * g.out_sz();
  A acc = 0;
  for (int64_t o0 = lo0; o0 <= hi0; ++o0) {
    int64_t b0, e0;
    g.window(0, o0, b0, e0);
    if (t0 < b0 || t0 >= e0) continue;
    for (int64_t o1 = lo1; o1 <= hi1; ++o1) {
      int64_t b1, e1;
      g.window(1, o1, b1, e1);
      if (t1 < b1 || t1 >= e1) continue;
      for (int64_t o2 = lo2; o2 <= hi2; ++o2) {
        int64_t b2, e2;
        g.window(2, o2, b2, e2);
        if (t2 < b2 || t2 >= e2) continue;
        const int64_t n = (e0 - b0) * (e1 - b1) * (e2 - b2);
        acc += to_acc(gp[(o0 * g.out[1] + o1) * g.out[2] + o2]) / A(pool_divisor(g, exclusive, divisor, n));
      }
    }
  }
  return from_acc<T>(acc);
}

}  // namespace oar_cuda
