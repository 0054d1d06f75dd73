// batch_norm and batch_norm_grad on the CPU (framework/src/ops_nn.cc defines the ops; docs/ops_nn.md).
//
// x (contiguous) is viewed as [outer, C, inner]: NCHW has inner = H*W, channels-last and [N, C] have
// inner = 1. A channel's statistics are sums over outer * inner elements, taken in double for every
// dtype (16-bit x goes through float32), so a float32 channel of millions of elements keeps float32
// accuracy; the forward sums x - k and (x - k)^2 with k the channel's first element (a shift near the
// mean, so E[d^2] - E[d]^2 cancels little). The sums are split into pieces whose bounds depend on the
// shape only, summed piece by piece and the pieces in a fixed order: the same bits for any thread count.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "elementwise.h"
#include "lowp.h"
#include "vec_loop.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

struct Layout {
  int64_t outer = 1, ch = 1, inner = 1;
  int64_t m() const { return outer * inner; }  // elements per channel
};
Layout layout_of(const TensorView& x, int64_t axis) {
  Layout l;
  for (int32_t i = 0; i < x.ndim(); ++i) {
    if (i < axis) l.outer *= x.dim(i);
    if (i > axis) l.inner *= x.dim(i);
  }
  l.ch = x.dim(static_cast<int32_t>(axis));
  return l;
}

// Piece sizes (elements), fixed so the summation order depends on the shape only.
constexpr int64_t kSegment = 4096;      // inner > 1: a row [o, c, :] is cut into segments this long
constexpr int64_t kBlockElems = 16384;  // inner == 1: rows of [M, C] taken kBlockElems / C at a time

typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
template <class T>
__attribute__((always_inline)) inline v4d load4(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    v4f v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, v4d);
  } else {
    v4d v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}

// Two sums over one contiguous run of a channel, d = x - k: the forward's sum(d) and sum(d * d)
// (kGrad false), the backward's sum(g) and sum(g * d) (kGrad true, g = dy). Lanes then tail then
// lanes in order: a fixed order, and no FMA in either build, so the same bits in both.
template <bool kGrad, class T>
__attribute__((always_inline)) inline void run_sums(const T* x, const T* g, int64_t n, double k, double* s1,
                                                    double* s2) {
  const v4d vk = v4d{} + k;
  v4d a0 = {}, a1 = {}, b0 = {}, b1 = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v4d d0 = load4(x + i) - vk, d1 = load4(x + i + 4) - vk;
    const v4d u0 = kGrad ? load4(g + i) : d0, u1 = kGrad ? load4(g + i + 4) : d1;
    a0 += u0;
    a1 += u1;
    b0 += u0 * d0;
    b1 += u1 * d1;
  }
  double t1 = 0, t2 = 0;
  for (; i < n; ++i) {
    const double d = double(x[i]) - k, u = kGrad ? double(g[i]) : d;
    t1 += u;
    t2 += u * d;
  }
  a0 += a1;
  b0 += b1;
  *s1 = t1 + ((a0[0] + a0[1]) + (a0[2] + a0[3]));
  *s2 = t2 + ((b0[0] + b0[1]) + (b0[2] + b0[3]));
}

// run_sums for R rows of n elements at once (row q at offset off[q], shift k[q]), on AVX-512: lane j of
// an 8-double accumulator is run_sums' a0 lane j (j < 4) or a1 lane j - 4, the tail and the final adds are
// its own, so each row's sums are run_sums' bits. Why: a row's two sums are chains of dependent adds (4
// cycles each per 8 elements), which leave the adders idle; R independent rows fill them.
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
template <class T>
[[gnu::always_inline]] inline v8d load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    v8f v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, v8d);
  } else {
    v8d v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}
template <bool kGrad, class T, int R>
[[gnu::always_inline]] inline void run_sums_x(const T* x, const T* g, const int64_t* off, int64_t n,
                                              const double* k, double* s1, double* s2) {
  v8d vk[R], a[R], b[R];
  for (int q = 0; q < R; ++q) vk[q] = v8d{} + k[q], a[q] = v8d{}, b[q] = v8d{};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int q = 0; q < R; ++q) {
      const v8d d = load8(x + off[q] + i) - vk[q], u = kGrad ? load8(g + off[q] + i) : d;
      a[q] += u;
      b[q] += u * d;
    }
  for (int q = 0; q < R; ++q) {
    double t1 = 0, t2 = 0;
    for (int64_t j = i; j < n; ++j) {
      const double d = double(x[off[q] + j]) - k[q], u = kGrad ? double(g[off[q] + j]) : d;
      t1 += u;
      t2 += u * d;
    }
    const v4d a4 =
        __builtin_shufflevector(a[q], a[q], 0, 1, 2, 3) + __builtin_shufflevector(a[q], a[q], 4, 5, 6, 7);
    const v4d b4 =
        __builtin_shufflevector(b[q], b[q], 0, 1, 2, 3) + __builtin_shufflevector(b[q], b[q], 4, 5, 6, 7);
    s1[q] = t1 + ((a4[0] + a4[1]) + (a4[2] + a4[3]));
    s2[q] = t2 + ((b4[0] + b4[1]) + (b4[2] + b4[3]));
  }
}
// rows (<= 4) rows at once.
template <bool kGrad, class T>
OAR_VEC_AVX512 void run_sums_rows_avx512(const T* x, const T* g, const int64_t* off, int64_t n,
                                         const double* k, double* s1, double* s2, int rows) {
  if (rows == 4) return run_sums_x<kGrad, T, 4>(x, g, off, n, k, s1, s2);
  for (int q = 0; q < rows; ++q) run_sums_x<kGrad, T, 1>(x, g, off + q, n, k + q, s1 + q, s2 + q);
}

// The same sums for rows r0..r1 of a [M, C] array (channel last), added to the per-channel s1, s2.
// Channels 16 (then 4) at a time down the rows, the accumulators in registers; each channel still sums
// its rows in order, so the bits do not depend on the grouping.
template <bool kGrad, class T>
__attribute__((always_inline)) inline void strip_sums(const T* x, const T* g, int64_t r0, int64_t r1,
                                                      int64_t ch, const double* k, double* s1, double* s2) {
  const auto ld = [](const double* p) __attribute__((always_inline)) {
    v4d v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  const auto st = [](double* p, v4d v) __attribute__((always_inline)) { std::memcpy(p, &v, sizeof v); };
  // 16 channels (a 64-byte line of float32) per sweep: 8 independent accumulator chains
  int64_t c = 0;
  for (; c + 16 <= ch; c += 16) {
    v4d kk[4], a[4], b[4];
    for (int q = 0; q < 4; ++q)
      kk[q] = ld(k + c + 4 * q), a[q] = ld(s1 + c + 4 * q), b[q] = ld(s2 + c + 4 * q);
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * ch + c;
      for (int q = 0; q < 4; ++q) {
        const v4d d = load4(xr + 4 * q) - kk[q], u = kGrad ? load4(g + r * ch + c + 4 * q) : d;
        a[q] += u;
        b[q] += u * d;
      }
    }
    for (int q = 0; q < 4; ++q) st(s1 + c + 4 * q, a[q]), st(s2 + c + 4 * q, b[q]);
  }
  for (; c + 4 <= ch; c += 4) {
    const v4d kk = ld(k + c);
    v4d a = ld(s1 + c), b = ld(s2 + c);
    for (int64_t r = r0; r < r1; ++r) {
      const v4d d = load4(x + r * ch + c) - kk, u = kGrad ? load4(g + r * ch + c) : d;
      a += u;
      b += u * d;
    }
    st(s1 + c, a), st(s2 + c, b);
  }
  for (; c < ch; ++c) {
    double a = s1[c], b = s2[c];
    for (int64_t r = r0; r < r1; ++r) {
      const double d = double(x[r * ch + c]) - k[c], u = kGrad ? double(g[r * ch + c]) : d;
      a += u;
      b += u * d;
    }
    s1[c] = a, s2[c] = b;
  }
}
// A block in strips of 16 rows, so a strip (a few KiB for C = 64) stays in L1 across its channel sweeps.
template <bool kGrad, class T>
__attribute__((always_inline)) inline void block_sums(const T* x, const T* g, int64_t r0, int64_t r1,
                                                      int64_t ch, const double* k, double* s1, double* s2) {
  for (int64_t q = r0; q < r1; q += 16) strip_sums<kGrad, T>(x, g, q, std::min(r1, q + 16), ch, k, s1, s2);
}

// Each compiled twice: for AVX2 (one register per v4d) and for baseline x86-64 (two SSE registers).
#define OAR_BN_VARIANTS(KG, T)                                                                               \
  __attribute__((target("avx2"))) void run_sums_avx2_##KG##_##T(const T* x, const T* g, int64_t n, double k, \
                                                                double* s1, double* s2) {                    \
    run_sums<KG, T>(x, g, n, k, s1, s2);                                                                     \
  }                                                                                                          \
  void run_sums_base_##KG##_##T(const T* x, const T* g, int64_t n, double k, double* s1, double* s2) {       \
    run_sums<KG, T>(x, g, n, k, s1, s2);                                                                     \
  }                                                                                                          \
  __attribute__((target("avx2"))) void block_sums_avx2_##KG##_##T(                                           \
      const T* x, const T* g, int64_t r0, int64_t r1, int64_t ch, const double* k, double* s1, double* s2) { \
    block_sums<KG, T>(x, g, r0, r1, ch, k, s1, s2);                                                          \
  }                                                                                                          \
  void block_sums_base_##KG##_##T(const T* x, const T* g, int64_t r0, int64_t r1, int64_t ch,                \
                                  const double* k, double* s1, double* s2) {                                 \
    block_sums<KG, T>(x, g, r0, r1, ch, k, s1, s2);                                                          \
  }
OAR_BN_VARIANTS(false, float)
OAR_BN_VARIANTS(true, float)
OAR_BN_VARIANTS(false, double)
OAR_BN_VARIANTS(true, double)
#undef OAR_BN_VARIANTS

template <bool kGrad, class T>
struct SumFns {
  void (*run)(const T*, const T*, int64_t, double, double*, double*);
  void (*block)(const T*, const T*, int64_t, int64_t, int64_t, const double*, double*, double*);
  // run_sums for up to 4 rows of one length (null: run row by row)
  void (*rows)(const T*, const T*, const int64_t*, int64_t, const double*, double*, double*, int) = nullptr;
};
template <bool kGrad, class T>
SumFns<kGrad, T> sum_fns() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
#define OAR_BN_PICK(KG, TT)                                                               \
  if constexpr (kGrad == KG && std::is_same_v<T, TT>)                                     \
    fns = avx2 ? SumFns<kGrad, T>{run_sums_avx2_##KG##_##TT, block_sums_avx2_##KG##_##TT} \
               : SumFns<kGrad, T>{run_sums_base_##KG##_##TT, block_sums_base_##KG##_##TT};
  SumFns<kGrad, T> fns;
  OAR_BN_PICK(false, float)
  OAR_BN_PICK(true, float)
  OAR_BN_PICK(false, double)
  OAR_BN_PICK(true, double)
#undef OAR_BN_PICK
  if (vec_isa() == 2) fns.rows = run_sums_rows_avx512<kGrad, T>;
  return fns;
}

// Per-channel s1, s2 (each [C], double) of x (and g) against the per-channel shift k.
template <bool kGrad, class T>
void channel_sums(const T* x, const T* g, const Layout& l, const double* k, double* s1, double* s2) {
  const SumFns<kGrad, T> fn = sum_fns<kGrad, T>();
  std::fill(s1, s1 + l.ch, 0.0);
  std::fill(s2, s2 + l.ch, 0.0);
  if (l.m() == 0 || l.ch == 0) return;
  if (l.inner > 1) {
    const int64_t segs = (l.inner + kSegment - 1) / kSegment, rows = l.outer * l.ch, units = rows * segs;
    // every unit's sums are written (no zeroing)
    const std::unique_ptr<double[]> p1(new double[static_cast<size_t>(units)]),
        p2(new double[static_cast<size_t>(units)]);
    const int64_t grain = std::max<int64_t>(1, 32768 / std::min(l.inner, kSegment));
    parallel_for(0, units, grain, [&](int64_t lo, int64_t hi) {
      // Unit u is segment s of row r = (o, c), stepped rather than divided: three divisions per unit
      // cost about as much as the sums of a 49-element row.
      int64_t r = lo / segs, s = lo % segs, c = r % l.ch;
      for (int64_t u = lo; u < hi;) {
        int64_t off[4], n = 0;
        double kc[4];
        int cnt = 0;  // up to 4 units of one length (fn.rows), else one
        while (cnt < (fn.rows ? 4 : 1) && u + cnt < hi) {
          const int64_t b = s * kSegment, len = std::min(l.inner, b + kSegment) - b;
          if (cnt > 0 && len != n) break;
          n = len, off[cnt] = r * l.inner + b, kc[cnt] = k[c], ++cnt;
          if (++s == segs) {
            s = 0, ++r;
            if (++c == l.ch) c = 0;
          }
        }
        if (fn.rows)
          fn.rows(x, g, off, n, kc, &p1[u], &p2[u], cnt);
        else
          fn.run(x + off[0], kGrad ? g + off[0] : nullptr, n, kc[0], &p1[u], &p2[u]);
        u += cnt;
      }
    });
    // Each channel adds its units in (o, s) order. One segment a row: a loop over c that vectorises
    // (channels are independent sums; at 7x7 the scalar loop was ~8% of the forward).
    if (segs == 1) {
      for (int64_t o = 0; o < l.outer; ++o) {
        const double *q1 = &p1[o * l.ch], *q2 = &p2[o * l.ch];
        for (int64_t c = 0; c < l.ch; ++c) s1[c] += q1[c], s2[c] += q2[c];
      }
      return;
    }
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t c = 0; c < l.ch; ++c)
        for (int64_t s = 0; s < segs; ++s) {
          const int64_t u = (o * l.ch + c) * segs + s;
          s1[c] += p1[u];
          s2[c] += p2[u];
        }
    return;
  }
  const int64_t rows = l.outer, per = std::max<int64_t>(1, kBlockElems / l.ch);
  const int64_t blocks = (rows + per - 1) / per;
  std::vector<double> p1(static_cast<size_t>(blocks * l.ch), 0.0),
      p2(static_cast<size_t>(blocks * l.ch), 0.0);
  parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t bk = lo; bk < hi; ++bk)
      fn.block(x, g, bk * per, std::min(rows, (bk + 1) * per), l.ch, k, &p1[bk * l.ch], &p2[bk * l.ch]);
  });
  for (int64_t bk = 0; bk < blocks; ++bk)
    for (int64_t c = 0; c < l.ch; ++c) {
      s1[c] += p1[bk * l.ch + c];
      s2[c] += p2[bk * l.ch + c];
    }
}

// Calls f(c, offset, n, step) over [outer, C, inner] in parallel: step 0, a run of n elements of channel c;
// step 1 (inner == 1), a row of n = C elements, channel i at offset + i.
template <class F>
void per_channel_map(const Layout& l, F f) {
  if (l.outer == 0 || l.ch == 0 || l.inner == 0) return;  // an empty x (use_global_stats)
  if (l.inner > 1) {
    parallel_for(0, l.outer * l.ch, std::max<int64_t>(1, 32768 / l.inner), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo, c = lo % l.ch; r < hi; ++r, c = c + 1 == l.ch ? 0 : c + 1)
        f(c, r * l.inner, l.inner, 0);
    });
  } else {
    parallel_for(0, l.outer, std::max<int64_t>(1, 32768 / std::max<int64_t>(l.ch, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) f(0, r * l.ch, l.ch, 1);
                 });
  }
}

// The forward on contiguous x of type T (float or double), statistics in S, out in T.
template <class T, class S>
void bn_forward(const T* x, T* out, const S* w, const S* b, const S* rm, const S* rv, S* mean_out, S* var_out,
                S* saved_mean, S* saved_rstd, const Layout& l, double eps, double momentum, bool global) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t ch = l.ch;
  std::vector<double> mean(static_cast<size_t>(ch)), var(static_cast<size_t>(ch));
  if (global) {
    for (int64_t c = 0; c < ch; ++c) mean[c] = double(rm[c]), var[c] = double(rv[c]);
  } else {
    std::vector<double> k(static_cast<size_t>(ch)), s1(static_cast<size_t>(ch)), s2(static_cast<size_t>(ch));
    for (int64_t c = 0; c < ch; ++c) k[c] = double(x[c * l.inner]);  // o = 0, i = 0
    channel_sums<false, T>(x, nullptr, l, k.data(), s1.data(), s2.data());
    const double m = double(l.m());
    for (int64_t c = 0; c < ch; ++c) {
      const double dm = s1[c] / m;
      mean[c] = k[c] + dm;
      var[c] = std::max(0.0, s2[c] / m - dm * dm);
    }
  }
  // out = (x - mean) * (rstd * w) + b, the constants per channel in C
  std::vector<C> cm(static_cast<size_t>(ch)), ca(static_cast<size_t>(ch)), cb(static_cast<size_t>(ch));
  for (int64_t c = 0; c < ch; ++c) {
    const double rs = 1.0 / std::sqrt(var[c] + eps);
    saved_mean[c] = S(mean[c]);
    saved_rstd[c] = S(rs);
    mean_out[c] = global ? rm[c] : S(double(rm[c]) * momentum + mean[c] * (1.0 - momentum));
    var_out[c] = global ? rv[c] : S(double(rv[c]) * momentum + var[c] * (1.0 - momentum));
    cm[c] = C(mean[c]);
    ca[c] = C(rs * double(w[c]));
    cb[c] = C(b[c]);
  }
  per_channel_map(l, [&](int64_t c0, int64_t off, int64_t n, int64_t step) {
    const T* xr = x + off;
    T* yr = out + off;
    if (step == 0) {
      const C m = cm[c0], a = ca[c0], bb = cb[c0];
      for (int64_t i = 0; i < n; ++i) yr[i] = T((C(xr[i]) - m) * a + bb);
    } else {
      const C *pm = cm.data(), *pa = ca.data(), *pb = cb.data();
      for (int64_t i = 0; i < n; ++i) yr[i] = T((C(xr[i]) - pm[i]) * pa[i] + pb[i]);
    }
  });
}

template <class T, class S>
void bn_backward(const T* x, const T* g, const S* w, const S* sm, const S* sr, T* dx, S* dw, S* db,
                 const Layout& l, bool global) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t ch = l.ch;
  std::vector<double> k(static_cast<size_t>(ch)), s1(static_cast<size_t>(ch)), s2(static_cast<size_t>(ch));
  for (int64_t c = 0; c < ch; ++c) k[c] = double(sm[c]);
  channel_sums<true, T>(x, g, l, k.data(), s1.data(), s2.data());  // sum(dy), sum(dy * (x - mean))
  const double m = double(l.m());
  // dx = a * (dy - gm - (x - mean) * q): a = w * rstd; training: gm = dbias / M, q = rstd * dweight / M
  std::vector<C> cm(static_cast<size_t>(ch)), ca(static_cast<size_t>(ch)), cg(static_cast<size_t>(ch)),
      cq(static_cast<size_t>(ch));
  for (int64_t c = 0; c < ch; ++c) {
    const double rs = double(sr[c]), dweight = s2[c] * rs;
    db[c] = S(s1[c]);
    dw[c] = S(dweight);
    cm[c] = C(sm[c]);
    ca[c] = C(double(w[c]) * rs);
    cg[c] = global || m == 0 ? C(0) : C(s1[c] / m);
    cq[c] = global || m == 0 ? C(0) : C(rs * dweight / m);
  }
  per_channel_map(l, [&](int64_t c0, int64_t off, int64_t n, int64_t step) {
    const T *xr = x + off, *gr = g + off;
    T* dr = dx + off;
    if (global) {
      if (step == 0) {
        const C a = ca[c0];
        for (int64_t i = 0; i < n; ++i) dr[i] = T(C(gr[i]) * a);
      } else {
        const C* pa = ca.data();
        for (int64_t i = 0; i < n; ++i) dr[i] = T(C(gr[i]) * pa[i]);
      }
    } else if (step == 0) {
      const C mm = cm[c0], a = ca[c0], gm = cg[c0], q = cq[c0];
      for (int64_t i = 0; i < n; ++i) dr[i] = T(a * (C(gr[i]) - gm - (C(xr[i]) - mm) * q));
    } else {
      const C *pm = cm.data(), *pa = ca.data(), *pg = cg.data(), *pq = cq.data();
      for (int64_t i = 0; i < n; ++i) dr[i] = T(pa[i] * (C(gr[i]) - pg[i] - (C(xr[i]) - pm[i]) * pq[i]));
    }
  });
}

void batch_norm_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.input(1), b = ctx.input(2), rm = ctx.input(3), rv = ctx.input(4);
  TensorView out = ctx.output(0), mo = ctx.output(1), vo = ctx.output(2), sm = ctx.output(3),
             sr = ctx.output(4);
  const Layout l = layout_of(x, normalize_axis("batch_norm", attr_int_or(ctx, "channel_axis", 1), x.ndim()));
  const double eps = attr_float_or(ctx, "epsilon", 1e-5), mom = attr_float_or(ctx, "momentum", 0.9);
  const bool global = attr_int_or(ctx, "use_global_stats", 0) != 0;
  dispatch<FloatType>("batch_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const S *pw = w.data<S>(), *pb = b.data<S>(), *prm = rm.data<S>(), *prv = rv.data<S>();
    S *pmo = mo.data<S>(), *pvo = vo.data<S>(), *psm = sm.data<S>(), *psr = sr.data<S>();
    if constexpr (is_lowp_v<T>) {  // the float32 kernel between vectorised conversions (lowp.h)
      const AsF32<T> fx(0, x.data<T>(), x.numel());
      const F32Buffer fo(1, x.numel());
      bn_forward<float, float>(fx.data(), fo.data(), pw, pb, prm, prv, pmo, pvo, psm, psr, l, eps, mom,
                               global);
      store_f32(fo.data(), out.data<T>(), x.numel());
    } else {
      bn_forward<T, S>(x.data<T>(), out.data<T>(), pw, pb, prm, prv, pmo, pvo, psm, psr, l, eps, mom, global);
    }
  });
}

void batch_norm_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.input(1), sm = ctx.input(2), sr = ctx.input(3), dy = ctx.input(4);
  TensorView dx = ctx.output(0), dw = ctx.output(1), db = ctx.output(2);
  const Layout l =
      layout_of(x, normalize_axis("batch_norm_grad", attr_int_or(ctx, "channel_axis", 1), x.ndim()));
  const bool global = attr_int_or(ctx, "use_global_stats", 0) != 0;
  dispatch<FloatType>("batch_norm_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const S *pw = w.data<S>(), *psm = sm.data<S>(), *psr = sr.data<S>();
    S *pdw = dw.data<S>(), *pdb = db.data<S>();
    if constexpr (is_lowp_v<T>) {
      const AsF32<T> fx(0, x.data<T>(), x.numel()), fg(1, dy.data<T>(), dy.numel());
      const F32Buffer fdx(2, x.numel());
      bn_backward<float, float>(fx.data(), fg.data(), pw, psm, psr, fdx.data(), pdw, pdb, l, global);
      store_f32(fdx.data(), dx.data<T>(), x.numel());
    } else {
      bn_backward<T, S>(x.data<T>(), dy.data<T>(), pw, psm, psr, dx.data<T>(), pdw, pdb, l, global);
    }
  });
}

}  // namespace

void register_batch_norm_kernels(Registry& r) {
  const std::vector<OarDType> floats = oar::sdk::float_dtypes();
  r.add("batch_norm", floats, &batch_norm_kernel);
  r.add("batch_norm_grad", floats, &batch_norm_grad_kernel);
}

}  // namespace oar_cpu
