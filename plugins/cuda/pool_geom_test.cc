// Runs the pooling kernels' per-element code (pool_geom.h) on the host against a port of the CPU
// kernel's loops (plugins/cpu/conv.cc: windows from make_pool, avg_pool_grad as a scatter), for random
// geometries: 1-3 spatial dims, asymmetric paddings, ceil mode, adaptive windows, divisor overrides.
// float64 and float32 results must be bit-identical.
#include "pool_geom.h"

#include <cstdio>
#include <random>
#include <vector>

namespace {

using oar_cuda::PoolGeom;

// The CPU kernel's windows, per dim and output index (make_pool).
struct Windows {
  std::vector<int64_t> b[3], e[3];
};
Windows cpu_windows(const PoolGeom& g) {
  Windows w;
  for (int i = 0; i < 3; ++i)
    for (int64_t o = 0; o < g.out[i]; ++o) {
      int64_t b, e;
      if (g.adaptive) {
        b = (o * g.in[i]) / g.out[i];
        e = ((o + 1) * g.in[i] + g.out[i] - 1) / g.out[i];
      } else {
        b = o * g.s[i] - g.pad[i];
        e = std::min(b + g.k[i], g.in[i]);
        b = std::max<int64_t>(b, 0);
      }
      w.b[i].push_back(b);
      w.e[i].push_back(std::max(b, e));
    }
  return w;
}

template <typename T>
int check(const PoolGeom& g, bool exclusive, int64_t divisor, std::mt19937& gen, const char* what) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> x(static_cast<size_t>(g.planes * g.in_sz())), gy(static_cast<size_t>(g.planes * g.out_sz()));
  for (T& v : x) v = T(u(gen));
  for (T& v : gy) v = T(u(gen));
  if (x.size() > 3) x[3] = T(NAN);
  const Windows w = cpu_windows(g);
  const double kdiv = double(g.k[0] * g.k[1] * g.k[2]);
  auto div_of = [&](int64_t n) { return divisor > 0 ? double(divisor) : exclusive ? double(n) : kdiv; };
  int bad = 0;
  std::vector<T> dx_ref(x.size(), T(0));
  for (int64_t pl = 0; pl < g.planes; ++pl)
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          const int64_t o = (o0 * g.out[1] + o1) * g.out[2] + o2, idx = pl * g.out_sz() + o;
          const int64_t b0 = w.b[0][o0], e0 = w.e[0][o0], b1 = w.b[1][o1], e1 = w.e[1][o1], b2 = w.b[2][o2],
                        e2 = w.e[2][o2];
          const T* xp = x.data() + pl * g.in_sz();
          // max_pool (CPU: first wins ties, NaN wins and stays)
          T best = -T(INFINITY);
          int64_t arg = b0 < e0 && b1 < e1 && b2 < e2 ? (b0 * g.in[1] + b1) * g.in[2] + b2 : -1;
          T sum = 0;
          bool stop = false;
          for (int64_t i0 = b0; i0 < e0; ++i0)
            for (int64_t i1 = b1; i1 < e1; ++i1)
              for (int64_t i2 = b2; i2 < e2; ++i2) {
                const int64_t at = (i0 * g.in[1] + i1) * g.in[2] + i2;
                sum += xp[at];
                if (!stop && !(xp[at] <= best)) {
                  best = xp[at], arg = at;
                  stop = xp[at] != xp[at];
                }
              }
          const int64_t n = (e0 - b0) * (e1 - b1) * (e2 - b2);
          const T avg = n == 0 ? T(0) : T(sum / T(div_of(n)));
          T y;
          int32_t m;
          oar_cuda::max_pool_one<T>(g, x.data(), idx, y, m);
          const T a = oar_cuda::avg_pool_one<T>(g, exclusive, divisor, x.data(), idx);
          if (!((y == best || (y != y && best != best)) && m == arg)) ++bad;
          if (!(a == avg || (a != a && avg != avg))) ++bad;
          // avg_pool_grad, the CPU's scatter
          if (n > 0) {
            const T v = gy[idx] / T(div_of(n));
            for (int64_t i0 = b0; i0 < e0; ++i0)
              for (int64_t i1 = b1; i1 < e1; ++i1)
                for (int64_t i2 = b2; i2 < e2; ++i2)
                  dx_ref[pl * g.in_sz() + (i0 * g.in[1] + i1) * g.in[2] + i2] += v;
          }
        }
  for (int64_t idx = 0; idx < static_cast<int64_t>(x.size()); ++idx)
    if (oar_cuda::avg_pool_grad_one<T>(g, exclusive, divisor, gy.data(), idx) != dx_ref[idx]) ++bad;
  if (bad)
    std::printf(
        "FAIL %s: in [%ld %ld %ld] out [%ld %ld %ld] k [%ld %ld %ld] s [%ld %ld %ld] pad [%ld %ld %ld] "
        "adaptive %d "
        "exclusive %d divisor %ld: %d mismatches\n",
        what, (long)g.in[0], (long)g.in[1], (long)g.in[2], (long)g.out[0], (long)g.out[1], (long)g.out[2],
        (long)g.k[0], (long)g.k[1], (long)g.k[2], (long)g.s[0], (long)g.s[1], (long)g.s[2], (long)g.pad[0],
        (long)g.pad[1], (long)g.pad[2], g.adaptive, exclusive, (long)divisor, bad);
  return bad;
}

}  // namespace

int main() {
  std::mt19937 gen(5);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  int failures = 0, cases = 0;
  for (int it = 0; it < 400; ++it) {
    PoolGeom g{};
    g.planes = r(1, 3);
    g.adaptive = r(0, 4) == 0;
    const int nd = static_cast<int>(r(1, 3));
    const bool ceil_mode = r(0, 1);
    for (int i = 0; i < 3; ++i) g.in[i] = g.out[i] = g.k[i] = g.s[i] = 1, g.pad[i] = 0;
    bool ok = true;
    for (int i = 3 - nd; i < 3; ++i) {
      g.in[i] = r(1, 9);
      if (g.adaptive) {
        g.out[i] = r(1, 2 * g.in[i]);
        continue;
      }
      g.k[i] = r(1, 4), g.s[i] = r(1, 3);
      const int64_t pb = r(0, g.k[i] - 1), pe = r(0, g.k[i] - 1 + (ceil_mode ? g.s[i] : 0));
      g.pad[i] = pb;
      const int64_t padded = g.in[i] + pb + pe - g.k[i];  // the op's output size (ops_conv.cc)
      if (padded < 0) ok = false;
      g.out[i] = (padded + (ceil_mode ? g.s[i] - 1 : 0)) / g.s[i] + 1;
    }
    if (!ok) continue;
    const bool exclusive = r(0, 1);
    const int64_t divisor = r(0, 3) == 0 ? r(1, 5) : 0;
    ++cases;
    failures += check<double>(g, exclusive, divisor, gen, "float64") != 0;
    failures += check<float>(g, exclusive, divisor, gen, "float32") != 0;
  }
  std::printf("%d geometries, %d failures\n", cases, failures);
  return failures == 0 && cases > 100 ? 0 : 1;
}
