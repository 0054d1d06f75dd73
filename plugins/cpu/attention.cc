// CPU kernels of the attention ops (framework/src/ops_attention.cc): softmax_grad, log_softmax_grad,
// fused_softmax_mask, fused_attention and fused_attention_grad.
//
// The fused attention kernels read q, k, v (and dout) through their strides: the heads of a
// [batch, L, heads, d] projection are read in place, so the transposes of the head split cost no copy,
// and an output can be stored heads-last (the head merge). float32 at small heads on AVX-512 runs each
// batch entry through register-tiled loops with the unfused ops' bits (decision 142); other float32 runs
// the products through oneDNN with those strides (strided_matmul_f32, matmul.cc) and the softmax rows
// between them here; float64,
// and layouts oneDNN cannot describe, run register-blocked loops one [L, d] matrix pair (one batch x
// head entry) at a time. AVX2+FMA is chosen at run time, as for the small matmuls (matmul.cc).
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "elementwise.h"
#include "softmax_short.h"
#include "vec_loop.h"

namespace oar_cpu {
// matmul.cc: out = x * y in float32 through oneDNN for [batch..., rows, cols] operands of rank ndim with
// any strides (a transposed operand: its last two dims and strides swapped); batch dims equal, or 1 to
// broadcast. false when oneDNN has no primitive for it.
bool strided_matmul_f32(int32_t ndim, const int64_t* xd, const int64_t* xs, const float* x, const int64_t* yd,
                        const int64_t* ys, const float* y, const int64_t* od, const int64_t* os, float* out);

namespace {

using oar::sdk::compute_t;
using oar::sdk::parallel_for;

// sum of f(i) for i < n in 8 independent accumulators (vectorises without reassociation flags).
template <class S, class F>
[[gnu::always_inline]] inline S sum8(int64_t n, F f) {
  S acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += f(i + k);
  for (int k = 0; i < n; ++i, ++k) acc[k & 7] += f(i);
  // A tree, not a chain of 8 dependent adds: short rows (16 keys) are dominated by this reduction.
  for (int w = 4; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

template <class T>
[[gnu::always_inline]] inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>)
    return fast_exp(x);
  else
    return std::exp(x);
}

// ---- softmax_grad / log_softmax_grad ----------------------------------------------------------------
// One float32 row of softmax_grad (w = y (g - s), s = sum(g y)) or log_softmax_grad (w = g - exp(y) s,
// s = sum(g)) on V lanes, built for AVX-512, AVX2 and baseline as vec_loop.h's loops: the same bits in
// each, equal to the generic loop's with sum8 (decision 140).
template <class V, bool kLog>
[[gnu::always_inline]] inline void softmax_grad_row(const float* y, const float* g, float* w, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  // sum8's sum. In the AVX builds in a GCC vector of 8 (sum8's array form compiled to shuffles there and ran
  // slower than baseline; the vector form ran 2x slower on SSE): lane k adds the elements j + k, then the
  // tail and the tree as sum8's, so the same bits.
  float s;
  if constexpr (std::is_same_v<V, vf4>) {
    if constexpr (kLog)
      s = sum8<float>(n, [&](int64_t i) { return g[i]; });
    else
      s = sum8<float>(n, [&](int64_t i) { return g[i] * y[i]; });
  } else {
    vf8 acc = {};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      vf8 a;
      std::memcpy(&a, g + j, sizeof a);
      if constexpr (!kLog) {
        vf8 b;
        std::memcpy(&b, y + j, sizeof b);
        a = a * b;
      }
      acc += a;
    }
    float t[8];
    std::memcpy(t, &acc, sizeof t);
    for (int k = 0; j < n; ++j, ++k) t[k & 7] += kLog ? g[j] : g[j] * y[j];
    for (int h = 4; h >= 1; h /= 2)
      for (int k = 0; k < h; ++k) t[k] += t[k + h];
    s = t[0];
  }
  const V vs = vsplat<V>(s);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V vy, vg;
    std::memcpy(&vy, y + i, sizeof vy);
    std::memcpy(&vg, g + i, sizeof vg);
    if constexpr (kLog)
      vg = vg - fast_exp(vy) * vs;
    else
      vg = vy * (vg - vs);
    std::memcpy(w + i, &vg, sizeof vg);
  }
  if (i < n) {
    const V vy = vec_load_part<V>(y + i, n - i), vg = vec_load_part<V>(g + i, n - i);
    if constexpr (kLog)
      vec_store_part(w + i, vg - fast_exp(vy) * vs, n - i);
    else
      vec_store_part(w + i, vy * (vg - vs), n - i);
  }
}
using SoftmaxGradRow = void (*)(const float*, const float*, float*, int64_t);
template <bool kLog>
void softmax_grad_row_base(const float* y, const float* g, float* w, int64_t n) {
  softmax_grad_row<vf4, kLog>(y, g, w, n);
}
template <bool kLog>
OAR_VEC_AVX2 void softmax_grad_row_v8(const float* y, const float* g, float* w, int64_t n) {
  softmax_grad_row<vf8, kLog>(y, g, w, n);
}
template <bool kLog>
OAR_VEC_AVX512 void softmax_grad_row_v16(const float* y, const float* g, float* w, int64_t n) {
  softmax_grad_row<vf16, kLog>(y, g, w, n);
}
template <bool kLog>
SoftmaxGradRow softmax_grad_row_fn() {
  const int isa = vec_isa();
  return isa == 2   ? softmax_grad_row_v16<kLog>
         : isa == 1 ? softmax_grad_row_v8<kLog>
                    : softmax_grad_row_base<kLog>;
}

// Rows of n <= 16 on AVX-512 (softmax_grad_rows16_fn): one register per row and no per-row call, the rows
// independent so their short chains overlap. The same operations in the same order as
// softmax_grad_row: the products g y (masked loads: lanes past n are 0), sum8's lanes k and k + 8 (from
// 0; adding the zero lanes changes no value), its tree 4, 2, 1, then the row; so the same bits. The row
// loop above ran ~30 ns per 7-float row: its partial loads stall on store forwarding.
template <bool kLog>
OAR_VEC_AVX512 void softmax_grad_rows16(const float* y, const float* g, float* w, int64_t rows, int64_t n) {
  const __mmask16 lm = static_cast<__mmask16>((1u << n) - 1);
#pragma GCC unroll 4
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 vy = _mm512_maskz_loadu_ps(lm, y + r * n), vg = _mm512_maskz_loadu_ps(lm, g + r * n);
    const __m512 u = kLog ? vg : _mm512_mul_ps(vg, vy);
    const __m256 a8 = _mm256_add_ps(_mm256_add_ps(_mm256_setzero_ps(), _mm512_castps512_ps256(u)),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1)));
    const __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
    const __m128 a2 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
    const __m128 a1 = _mm_add_ss(a2, _mm_shuffle_ps(a2, a2, 1));
    const __m512 vs = _mm512_broadcastss_ps(a1);
    __m512 out;
    if constexpr (kLog)
      out = vg - fast_exp(vf16(vy)) * vs;
    else
      out = vy * (vg - vs);
    _mm512_mask_storeu_ps(w + r * n, lm, out);
  }
}
using SoftmaxGradRows = void (*)(const float*, const float*, float*, int64_t, int64_t);
// Rows of n take softmax_grad_rows16 (else null).
template <bool kLog>
SoftmaxGradRows softmax_grad_rows16_fn(int64_t n) {
  return vec_isa() == 2 && n <= 16 ? softmax_grad_rows16<kLog> : nullptr;
}

// y, g, dx are [outer, n, inner] (contiguous), reduced along n. softmax: dx = y (g - sum(g y));
// log_softmax: dx = g - exp(y) sum(g). Sums in the compute type (float for float32: the same as the
// composite's sum op), 8 lanes.
template <class T, bool kLog>
void softmax_grad_impl(const T* y, const T* g, T* dx, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    [[maybe_unused]] SoftmaxGradRow row_f32 = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      if (const SoftmaxGradRows rows16 = softmax_grad_rows16_fn<kLog>(n)) {
        parallel_for(0, outer, 1024, [&](int64_t lo, int64_t hi) {
          rows16(y + lo * n, g + lo * n, dx + lo * n, hi - lo, n);
        });
        return;
      }
      row_f32 = softmax_grad_row_fn<kLog>();
    }
    parallel_for(0, outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        const T *yr = y + o * n, *gr = g + o * n;
        T* w = dx + o * n;
        if constexpr (std::is_same_v<T, float>) {
          row_f32(yr, gr, w, n);
        } else if constexpr (kLog) {
          const T s = sum8<T>(n, [&](int64_t i) { return gr[i]; });
          for (int64_t i = 0; i < n; ++i) w[i] = gr[i] - exp_of(yr[i]) * s;
        } else {
          const T s = sum8<T>(n, [&](int64_t i) { return gr[i] * yr[i]; });
          for (int64_t i = 0; i < n; ++i) w[i] = yr[i] * (gr[i] - s);
        }
      }
    });
    return;
  }
  constexpr int64_t kBlock = 256;  // columns reduced together along the strided axis
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(0, outer * blocks, 1, [&](int64_t lo, int64_t hi) {
    T s[kBlock];
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, nb = std::min(kBlock, inner - j0);
      const int64_t base = o * n * inner + j0;
      std::fill(s, s + nb, T(0));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < nb; ++j) {
          const int64_t at = base + i * inner + j;
          s[j] += kLog ? g[at] : g[at] * y[at];
        }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < nb; ++j) {
          const int64_t at = base + i * inner + j;
          dx[at] = kLog ? g[at] - exp_of(y[at]) * s[j] : y[at] * (g[at] - s[j]);
        }
    }
  });
}

template <bool kLog>
void softmax_grad_kernel(KernelContext& ctx) {
  TensorView y = ctx.input(0), g = ctx.input(1), dx = ctx.output(0);
  const char* name = kLog ? "log_softmax_grad" : "softmax_grad";
  OAR_SDK_CHECK(y.dtype() == g.dtype(), OAR_ERR_TYPE, name << ": out and grad differ in dtype");
  OAR_SDK_CHECK(y.numel() == g.numel() && y.numel() == dx.numel(), OAR_ERR_INVALID_ARGUMENT,
                name << ": out, grad and the result differ in size");
  if (y.numel() == 0) return;
  if (y.ndim() == 0) {  // one element: softmax's gradient is 0, log_softmax's too (g - 1 * g)
    dispatch<FloatType>(name, y.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const C yv = C(y.data<T>()[0]), gv = C(g.data<T>()[0]);
      dx.data<T>()[0] = T(kLog ? gv - std::exp(yv) * gv : yv * (gv - gv * yv));
    });
    return;
  }
  const int64_t axis = normalize_axis(name, attr_int_or(ctx, "axis", -1), y.ndim());
  const int64_t outer = product(y.dims(), 0, axis), n = y.dim(static_cast<int32_t>(axis));
  const int64_t inner = product(y.dims(), axis + 1, y.ndim());
  dispatch<FloatType>(name, y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lowp_v<T>) {  // float32 between vectorised conversions
      const AsF32<T> fy(0, y.data<T>(), y.numel()), fg(1, g.data<T>(), g.numel());
      const F32Buffer fo(2, y.numel());
      softmax_grad_impl<float, kLog>(fy.data(), fg.data(), fo.data(), outer, n, inner);
      store_f32(fo.data(), dx.data<T>(), y.numel());
    } else {
      softmax_grad_impl<T, kLog>(y.data<T>(), g.data<T>(), dx.data<T>(), outer, n, inner);
    }
  });
}

// ---- fused attention ---------------------------------------------------------------------------------
// A batch of matrices [..., rows, cols] read in place: matrix b starts at base + off[b], row i at
// + i * rs; columns are contiguous (a view whose columns are not is copied first, into `own`).
template <class T>
struct Mats {
  const T* base = nullptr;
  int64_t rows = 0, cols = 0, rs = 0;
  std::vector<int64_t> off;
  std::vector<T> own;
  const T* at(int64_t b) const { return base + off[static_cast<size_t>(b)]; }
};

// The offsets of the `batch` matrices of a [lead..., rows, cols] view, row-major over the leading dims;
// dims of size 1 in `t` (a broadcast mask) repeat, dims missing in front too.
std::vector<int64_t> batch_offsets(const TensorView& t, const std::vector<int64_t>& lead) {
  int64_t batch = 1;
  for (int64_t d : lead) batch *= d;
  std::vector<int64_t> off(static_cast<size_t>(batch), 0);
  const int32_t nl = static_cast<int32_t>(lead.size()), tl = t.ndim() - 2;
  std::vector<int64_t> idx(lead.size(), 0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t o = 0;
    for (int32_t d = 0; d < nl; ++d) {
      const int32_t td = d - (nl - tl);
      if (td >= 0 && t.dim(td) != 1) o += idx[d] * t.stride(td);
    }
    off[static_cast<size_t>(b)] = o;
    for (int32_t d = nl; d-- > 0;) {
      if (++idx[d] < lead[d]) break;
      idx[d] = 0;
    }
  }
  return off;
}

template <class T>
Mats<T> mats_of(const TensorView& t, const std::vector<int64_t>& lead) {
  Mats<T> m;
  m.rows = t.dim(-2), m.cols = t.dim(-1);
  if (t.stride(-1) == 1 || m.cols <= 1) {
    m.base = t.data<T>();
    m.rs = t.stride(-2);
    m.off = batch_offsets(t, lead);
    return m;
  }
  // Columns not contiguous: a contiguous copy, [batch, rows, cols].
  const std::vector<int64_t> off = batch_offsets(t, lead);
  const T* src = t.data<T>();
  const int64_t rs = t.stride(-2), cs = t.stride(-1), mn = m.rows * m.cols;
  m.own.resize(off.size() * static_cast<size_t>(mn));
  for (size_t b = 0; b < off.size(); ++b)
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j) m.own[b * mn + i * m.cols + j] = src[off[b] + i * rs + j * cs];
  m.base = m.own.data();
  m.rs = m.cols;
  m.off.resize(off.size());
  for (size_t b = 0; b < off.size(); ++b) m.off[b] = static_cast<int64_t>(b) * mn;
  return m;
}

// The mask, broadcast: element (b, i, j) at base + off[b] + i * rs + j * cs (strides 0 where broadcast).
template <class T>
struct MaskView {
  const T* base = nullptr;
  int64_t rs = 0, cs = 0;
  std::vector<int64_t> off;
};

template <class T>
MaskView<T> mask_of(const TensorView& t, const std::vector<int64_t>& lead) {
  MaskView<T> m;
  m.base = t.data<T>();
  if (t.ndim() >= 1 && t.dim(-1) != 1) m.cs = t.stride(-1);
  if (t.ndim() >= 2 && t.dim(-2) != 1) m.rs = t.stride(-2);
  if (t.ndim() >= 2) {
    m.off = batch_offsets(t, lead);
  } else {
    int64_t batch = 1;
    for (int64_t d : lead) batch *= d;
    m.off.assign(static_cast<size_t>(batch), 0);
  }
  return m;
}

// The micro-kernel: for the R rows r of `out` (row stride ors) and c < cols,
//   out[r][c] (+)= sum over j < n of a[r * ars + j * acs] * M[j * mrs + c],
// W columns at a time (64 bytes) held in registers for R rows: R independent chains hide the FMA
// latency, and `out` is touched once per block (an axpy per j into memory stalled on store-to-load
// forwarding).
template <int R, int VB, class T>
[[gnu::always_inline]] inline void combine_block(T* __restrict out, int64_t ors, const T* __restrict a,
                                                 int64_t ars, int64_t acs, const T* __restrict M, int64_t mrs,
                                                 int64_t n, int64_t cols, bool accumulate) {
  // Explicit VB-byte vectors (GCC vector extensions: 16 in the baseline build, 32 in the AVX2 one); the
  // auto-vectoriser gathered `a` across r instead.
  typedef T V __attribute__((vector_size(VB)));
  constexpr int L = VB / sizeof(T), W = 2 * L;
  int64_t c0 = 0;
  for (; c0 + W <= cols; c0 += W) {
    V acc[R][2];
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < 2; ++h) {
        if (accumulate)
          std::memcpy(&acc[r][h], out + r * ors + c0 + h * L, sizeof(V));
        else
          acc[r][h] = V{};
      }
    for (int64_t j = 0; j < n; ++j) {
      V m0, m1;
      std::memcpy(&m0, M + j * mrs + c0, sizeof(V));
      std::memcpy(&m1, M + j * mrs + c0 + L, sizeof(V));
      for (int r = 0; r < R; ++r) {
        const V ar = V{} + a[r * ars + j * acs];
        acc[r][0] += ar * m0;
        acc[r][1] += ar * m1;
      }
    }
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < 2; ++h) std::memcpy(out + r * ors + c0 + h * L, &acc[r][h], sizeof(V));
  }
  for (; c0 < cols; ++c0)
    for (int r = 0; r < R; ++r) {
      T acc = accumulate ? out[r * ors + c0] : T(0);
      for (int64_t j = 0; j < n; ++j) acc += a[r * ars + j * acs] * M[j * mrs + c0];
      out[r * ors + c0] = acc;
    }
}

// combine_block over `rows` rows: blocks of 4, then single rows.
template <int VB, class T>
[[gnu::always_inline]] inline void combine(T* out, int64_t ors, const T* a, int64_t ars, int64_t acs,
                                           const T* M, int64_t mrs, int64_t rows, int64_t n, int64_t cols,
                                           bool accumulate) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    combine_block<4, VB>(out + r * ors, ors, a + r * ars, ars, acs, M, mrs, n, cols, accumulate);
  for (; r < rows; ++r)
    combine_block<1, VB>(out + r * ors, ors, a + r * ars, ars, acs, M, mrs, n, cols, accumulate);
}

// The Lq score rows of one batch entry (p, Lq x Lk contiguous) scaled, masked (mask row i at
// mask + i * mrs, element j at + j * mcs) and turned into softmax rows in place, as the softmax op
// computes them: NaN and +inf rows, and rows of -inf only, give NaN.
template <class T>
[[gnu::always_inline]] inline void softmax_rows(T* p, int64_t Lq, int64_t Lk, T scale, const T* mask,
                                                int64_t mrs, int64_t mcs) {
  for (int64_t i = 0; i < Lq; ++i) {
    T* __restrict pi = p + i * Lk;
    const T* mi = mask == nullptr ? nullptr : mask + i * mrs;
    if (mi == nullptr) {
      if (scale != T(1))
        for (int64_t j = 0; j < Lk; ++j) pi[j] *= scale;
    } else if (mcs == 1) {
      for (int64_t j = 0; j < Lk; ++j) pi[j] = pi[j] * scale + mi[j];
    } else {
      for (int64_t j = 0; j < Lk; ++j) pi[j] = pi[j] * scale + mi[j * mcs];
    }
    // The row max in 8 lanes (NaN ignored, as the softmax op's; exp(NaN - m) still makes the row NaN).
    T acc[8];
    for (T& a : acc) a = -std::numeric_limits<T>::infinity();
    int64_t j = 0;
    for (; j + 8 <= Lk; j += 8)
      for (int l = 0; l < 8; ++l) acc[l] = acc[l] < pi[j + l] ? pi[j + l] : acc[l];
    for (int l = 0; j < Lk; ++j, ++l) acc[l & 7] = acc[l & 7] < pi[j] ? pi[j] : acc[l & 7];
    for (int w = 4; w >= 1; w /= 2)  // a tree (see sum8)
      for (int l = 0; l < w; ++l) acc[l] = acc[l] < acc[l + w] ? acc[l + w] : acc[l];
    const T m = acc[0];
    for (j = 0; j < Lk; ++j) pi[j] = exp_of(pi[j] - m);
    const T inv = T(1) / sum8<T>(Lk, [&](int64_t c) { return pi[c]; });
    for (j = 0; j < Lk; ++j) pi[j] *= inv;
  }
}

// dP's rows (ds, rows x Lk contiguous) into the scores' gradient times the scale, in place:
// scale * p * (dp - sum(p dp)); p's rows at stride prs.
template <class T>
[[gnu::always_inline]] inline void score_grad_rows(T* ds, const T* p, int64_t prs, int64_t rows, int64_t Lk,
                                                   T scale) {
  for (int64_t r = 0; r < rows; ++r) {
    T* dr = ds + r * Lk;
    const T* pr = p + r * prs;
    const T t = sum8<T>(Lk, [&](int64_t j) { return pr[j] * dr[j]; });
    for (int64_t j = 0; j < Lk; ++j) dr[j] = scale * pr[j] * (dr[j] - t);
  }
}

// mt (cols x rows, contiguous) = the transpose of the rows x cols matrix m (row stride rs).
template <class T>
[[gnu::always_inline]] inline void transpose_into(T* __restrict mt, const T* __restrict m, int64_t rs,
                                                  int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t c = 0; c < cols; ++c) mt[c * rows + j] = m[j * rs + c];
}

// One batch entry of the forward: p (Lq x Lk) and out (Lq x dv), both contiguous. tmp: d * Lk scratch.
template <int VB, class T>
[[gnu::always_inline]] inline void attention_fwd_one(const T* q, int64_t qrs, const T* k, int64_t krs,
                                                     const T* v, int64_t vrs, const T* mask, int64_t mrs,
                                                     int64_t mcs, int64_t Lq, int64_t Lk, int64_t d,
                                                     int64_t dv, T scale, T* p, T* out, T* tmp) {
  transpose_into(tmp, k, krs, Lk, d);  // k^T, so that the scores' rows are combinations of its rows
  combine<VB>(p, Lk, q, qrs, 1, tmp, Lk, Lq, d, Lk, false);  // q k^T
  softmax_rows(p, Lq, Lk, scale, mask, mrs, mcs);
  combine<VB>(out, dv, p, Lk, 1, v, vrs, Lq, Lk, dv, false);  // P v
}

// One batch entry of the backward. dq (Lq x d), dk (Lk x d), dv (Lk x dv) contiguous, all written;
// tmp: (dv + 4) * Lk scratch.
template <int VB, class T>
[[gnu::always_inline]] inline void attention_bwd_one(const T* q, int64_t qrs, const T* k, int64_t krs,
                                                     const T* v, int64_t vrs, const T* p, int64_t prs,
                                                     const T* g, int64_t grs, int64_t Lq, int64_t Lk,
                                                     int64_t d, int64_t dvn, T scale, T* dq, T* dk, T* dv,
                                                     T* tmp) {
  std::fill(dk, dk + Lk * d, T(0));
  std::fill(dv, dv + Lk * dvn, T(0));
  T *vt = tmp, *ds = tmp + dvn * Lk;  // ds: 4 rows of the scores' gradient
  transpose_into(vt, v, vrs, Lk, dvn);
  for (int64_t i0 = 0; i0 < Lq; i0 += 4) {
    const int64_t nr = std::min<int64_t>(4, Lq - i0);
    const T *gi = g + i0 * grs, *pi = p + i0 * prs, *qi = q + i0 * qrs;
    combine<VB>(ds, Lk, gi, grs, 1, vt, Lk, nr, dvn, Lk, false);  // dP's rows: g v^T
    score_grad_rows(ds, pi, prs, nr, Lk, scale);
    combine<VB>(dq + i0 * d, d, ds, Lk, 1, k, krs, nr, Lk, d, false);  // dq = ds k
    combine<VB>(dk, d, ds, 1, Lk, qi, qrs, Lk, nr, d, true);           // dk += ds^T q
    combine<VB>(dv, dvn, pi, 1, prs, gi, grs, Lk, nr, dvn, true);      // dv += P^T g
  }
}

// The per-batch bodies compiled twice: AVX2+FMA where the CPU has it, baseline x86-64 otherwise.
#define OAR_ATTN_VARIANTS(T)                                                                                 \
  __attribute__((target("avx2,fma"))) void fwd_avx2(                                                         \
      const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* m, int64_t mrs,    \
      int64_t mcs, int64_t Lq, int64_t Lk, int64_t d, int64_t dv, T scale, T* p, T* out, T* tmp) {           \
    attention_fwd_one<32>(q, qrs, k, krs, v, vrs, m, mrs, mcs, Lq, Lk, d, dv, scale, p, out, tmp);           \
  }                                                                                                          \
  void fwd_base(const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* m,       \
                int64_t mrs, int64_t mcs, int64_t Lq, int64_t Lk, int64_t d, int64_t dv, T scale, T* p,      \
                T* out, T* tmp) {                                                                            \
    attention_fwd_one<16>(q, qrs, k, krs, v, vrs, m, mrs, mcs, Lq, Lk, d, dv, scale, p, out, tmp);           \
  }                                                                                                          \
  __attribute__((target("avx2,fma"))) void bwd_avx2(                                                         \
      const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* p, int64_t prs,    \
      const T* g, int64_t grs, int64_t Lq, int64_t Lk, int64_t d, int64_t dvn, T scale, T* dq, T* dk, T* dv, \
      T* dp) {                                                                                               \
    attention_bwd_one<32>(q, qrs, k, krs, v, vrs, p, prs, g, grs, Lq, Lk, d, dvn, scale, dq, dk, dv, dp);    \
  }                                                                                                          \
  void bwd_base(const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* p,       \
                int64_t prs, const T* g, int64_t grs, int64_t Lq, int64_t Lk, int64_t d, int64_t dvn,        \
                T scale, T* dq, T* dk, T* dv, T* dp) {                                                       \
    attention_bwd_one<16>(q, qrs, k, krs, v, vrs, p, prs, g, grs, Lq, Lk, d, dvn, scale, dq, dk, dv, dp);    \
  }                                                                                                          \
  __attribute__((target("avx2,fma"))) void rows_avx2(T* p, int64_t Lq, int64_t Lk, T scale, const T* m,      \
                                                     int64_t mrs, int64_t mcs) {                             \
    softmax_rows(p, Lq, Lk, scale, m, mrs, mcs);                                                             \
  }                                                                                                          \
  void rows_base(T* p, int64_t Lq, int64_t Lk, T scale, const T* m, int64_t mrs, int64_t mcs) {              \
    softmax_rows(p, Lq, Lk, scale, m, mrs, mcs);                                                             \
  }                                                                                                          \
  __attribute__((target("avx2,fma"))) void grad_rows_avx2(T* ds, const T* p, int64_t rows, int64_t Lk,       \
                                                          T scale) {                                         \
    score_grad_rows(ds, p, Lk, rows, Lk, scale);                                                             \
  }                                                                                                          \
  void grad_rows_base(T* ds, const T* p, int64_t rows, int64_t Lk, T scale) {                                \
    score_grad_rows(ds, p, Lk, rows, Lk, scale);                                                             \
  }
OAR_ATTN_VARIANTS(float)
OAR_ATTN_VARIANTS(double)
#undef OAR_ATTN_VARIANTS

template <class T>
using FwdFn = void (*)(const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, T, T*, T*, T*);
template <class T>
using BwdFn = void (*)(const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*,
                       int64_t, int64_t, int64_t, int64_t, int64_t, T, T*, T*, T*, T*);

// The calling thread's scratch of at least n elements (kept between calls).
template <class T>
T* scratch(int64_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

bool have_avx2() {
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return v;
}

// The leading dims of a [..., L, d] tensor.
std::vector<int64_t> lead_of(const TensorView& t) {
  return std::vector<int64_t>(t.dims(), t.dims() + t.ndim() - 2);
}

// ---- float32 through oneDNN --------------------------------------------------------------------------
// The products through oneDNN's batched matmul with the operands' own strides (matmul.cc), the softmax
// rows (and their gradient) between them: at the small sizes of a Transformer's heads oneDNN's
// AVX-512 kernels beat combine_block severalfold.
struct DimsStrides {
  std::vector<int64_t> d, s;
};
// A view's dims and strides; `swap`: its transpose (the last two exchanged).
DimsStrides dims_strides(const TensorView& t, bool swap) {
  DimsStrides r{t.shape(), std::vector<int64_t>(t.strides(), t.strides() + t.ndim())};
  if (swap) {
    std::swap(r.d[r.d.size() - 1], r.d[r.d.size() - 2]);
    std::swap(r.s[r.s.size() - 1], r.s[r.s.size() - 2]);
  }
  return r;
}
// A contiguous tensor of `dims`, or its transpose.
DimsStrides contiguous_dims_strides(const std::vector<int64_t>& dims, bool swap) {
  DimsStrides r{dims, std::vector<int64_t>(dims.size())};
  int64_t st = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    r.s[i] = st;
    st *= dims[i];
  }
  if (swap) {
    std::swap(r.d[r.d.size() - 1], r.d[r.d.size() - 2]);
    std::swap(r.s[r.s.size() - 1], r.s[r.s.size() - 2]);
  }
  return r;
}
// The logical [..., heads, L, d] view of an output stored heads-last ([..., L, heads, d]) when `flag`.
DimsStrides output_layout(const TensorView& t, bool flag) {
  DimsStrides r = contiguous_dims_strides(t.shape(), false);
  if (flag) {
    const size_t n = r.d.size();
    std::swap(r.d[n - 3], r.d[n - 2]);
    std::swap(r.s[n - 3], r.s[n - 2]);
  }
  return r;
}

bool product(const DimsStrides& x, const float* px, const DimsStrides& y, const float* py,
             const DimsStrides& o, float* po) {
  return strided_matmul_f32(static_cast<int32_t>(x.d.size()), x.d.data(), x.s.data(), px, y.d.data(),
                            y.s.data(), py, o.d.data(), o.s.data(), po);
}
bool all_positive(std::initializer_list<int64_t> v) {
  for (int64_t x : v)
    if (x <= 0) return false;
  return true;
}

bool fused_attention_onednn(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), out = ctx.output(0),
                   p = ctx.output(1);
  const std::vector<int64_t> lead = lead_of(q);
  int64_t batch = 1;
  for (int64_t x : lead) batch *= x;
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dv = v.dim(-1);
  if (!all_positive({batch, Lq, d, Lk, dv})) return false;  // the loops handle empty extents
  float *pp = p.data<float>(), *po = out.data<float>();
  const DimsStrides P = contiguous_dims_strides(p.shape(), false);
  if (!product(dims_strides(q, false), q.data<float>(), dims_strides(k, true), k.data<float>(), P, pp))
    return false;
  const bool has_mask = ctx.num_inputs() == 4;
  MaskView<float> mm;
  if (has_mask) mm = mask_of<float>(ctx.input(3), lead);
  const float scale = static_cast<float>(attr_float_or(ctx, "scale", 1.0));
  using RowsFn = void (*)(float*, int64_t, int64_t, float, const float*, int64_t, int64_t);
  const RowsFn rows = have_avx2() ? RowsFn(rows_avx2) : RowsFn(rows_base);
  parallel_for(0, batch, std::max<int64_t>(1, 16384 / (Lq * Lk)), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      rows(pp + b * Lq * Lk, Lq, Lk, scale, has_mask ? mm.base + mm.off[static_cast<size_t>(b)] : nullptr,
           mm.rs, mm.cs);
  });
  return product(P, pp, dims_strides(v, false), v.data<float>(),
                 output_layout(out, attr_int_or(ctx, "transpose_out", 0) != 0), po);
}

bool fused_attention_grad_onednn(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), p = ctx.input(3), g = ctx.input(4);
  int64_t batch = 1;
  for (int64_t x : lead_of(q)) batch *= x;
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dvn = v.dim(-1);
  if (!all_positive({batch, Lq, d, Lk, dvn}) || !p.is_contiguous()) return false;
  const F32Buffer buf(0, batch * Lq * Lk);  // dP, then the scores' gradient
  float* ds = buf.data();
  const DimsStrides DS = contiguous_dims_strides(p.shape(), false),
                    DST = contiguous_dims_strides(p.shape(), true);
  const DimsStrides G = dims_strides(g, false);
  if (!product(G, g.data<float>(), dims_strides(v, true), v.data<float>(), DS, ds)) return false;
  const float scale = static_cast<float>(attr_float_or(ctx, "scale", 1.0));
  using GradRowsFn = void (*)(float*, const float*, int64_t, int64_t, float);
  const GradRowsFn grad_rows = have_avx2() ? GradRowsFn(grad_rows_avx2) : GradRowsFn(grad_rows_base);
  const float* pp = p.data<float>();
  parallel_for(0, batch * Lq, std::max<int64_t>(1, 16384 / Lk),
               [&](int64_t lo, int64_t hi) { grad_rows(ds + lo * Lk, pp + lo * Lk, hi - lo, Lk, scale); });
  auto out_of = [&](int i, const char* flag) {
    return output_layout(ctx.output(i), attr_int_or(ctx, flag, 0) != 0);
  };
  return product(DS, ds, dims_strides(k, false), k.data<float>(), out_of(0, "transpose_dq"),
                 ctx.output(0).data<float>()) &&
         product(DST, ds, dims_strides(q, false), q.data<float>(), out_of(1, "transpose_dk"),
                 ctx.output(1).data<float>()) &&
         product(DST, pp, G, g.data<float>(), out_of(2, "transpose_dv"), ctx.output(2).data<float>());
}

// ---- float32 on AVX-512, small heads ------------------------------------------------------------------
// At a Transformer's small heads (the bench's [8, 4, 16, 16]) oneDNN's strided batched products cost
// ~5-8 us each, mostly per-call and per-matrix overhead: 131K multiply-adds take ~1.6 us at the FMA units'
// rate. Here each batch entry's products run through one register-tiled loop, the entry's scores and
// their gradient stay in L1, and the outputs are written in their layout (heads-last too). Every product
// element is summed over k in order, one FMA per term from 0, which is oneDNN's order (and the small
// matmul loop's), so the products have the unfused matmuls' bits (tests/python/test_attention_fusion.py).

// Softmax rows of at most 16 scores on AVX-512 (softmax_short.h: the softmax op's own short-row loop, so P
// has the unfused softmax's bits), in place.
void softmax_rows16(float* p, int64_t Lq, int64_t n, float scale, const float* mask, int64_t mrs,
                    int64_t mcs) {
  softmax_rows16_avx512(p, p, Lq, n, scale, mask, mrs, mcs, false);
}

// out (M x N, row stride ors) = A B with A(i, k) = a[i * ars + k * acs] and B's row k at b + k * brs
// (contiguous): MR rows of 16 columns (`mask`: those that exist; kFull: all 16, loads unmasked) in
// registers, per k one B row loaded and each A(i, k) broadcast.
template <int MR, bool kFull>
OAR_VEC_AVX512 inline void prod_tile(float* out, int64_t ors, const float* a, int64_t ars, int64_t acs,
                                     const float* b, int64_t brs, int64_t K, __mmask16 mask) {
  __m512 acc[MR];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 bv = kFull ? _mm512_loadu_ps(b + k * brs) : _mm512_maskz_loadu_ps(mask, b + k * brs);
    const float* ak = a + k * acs;
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(ak[m * ars]), bv, acc[m]);
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    if (kFull)
      _mm512_storeu_ps(out + m * ors, acc[m]);
    else
      _mm512_mask_storeu_ps(out + m * ors, mask, acc[m]);
  }
}

template <bool kFull>
OAR_VEC_AVX512 inline void prod_cols(float* out, int64_t ors, const float* a, int64_t ars, int64_t acs,
                                     const float* b, int64_t brs, int64_t M, int64_t K, __mmask16 mask) {
  int64_t i = 0;
  for (; i + 8 <= M; i += 8) prod_tile<8, kFull>(out + i * ors, ors, a + i * ars, ars, acs, b, brs, K, mask);
  for (; i < M; ++i) prod_tile<1, kFull>(out + i * ors, ors, a + i * ars, ars, acs, b, brs, K, mask);
}

OAR_VEC_AVX512 void prod_avx512(float* out, int64_t ors, const float* a, int64_t ars, int64_t acs,
                                const float* b, int64_t brs, int64_t M, int64_t K, int64_t N) {
  int64_t j = 0;
  for (; j + 16 <= N; j += 16) prod_cols<true>(out + j, ors, a, ars, acs, b + j, brs, M, K, 0xFFFF);
  if (j < N)
    prod_cols<false>(out + j, ors, a, ars, acs, b + j, brs, M, K,
                     static_cast<__mmask16>((1u << (N - j)) - 1));
}

// The offsets of the batch entries of an output of logical dims/strides `o` (row-major over the leading
// dims) and its row stride; false when its rows are not contiguous.
bool entry_offsets(const DimsStrides& o, std::vector<int64_t>& off, int64_t& rs) {
  const size_t n = o.d.size();
  if (n < 2 || o.s[n - 1] != 1) return false;
  rs = o.s[n - 2];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < n; ++i) batch *= o.d[i];
  off.assign(static_cast<size_t>(batch), 0);
  std::vector<int64_t> idx(n - 2, 0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t x = 0;
    for (size_t i = 0; i + 2 < n; ++i) x += idx[i] * o.s[i];
    off[static_cast<size_t>(b)] = x;
    for (size_t i = n - 2; i-- > 0;) {
      if (++idx[i] < o.d[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

// Small heads only: the entry's scores (and their gradient) must sit in L1 next to its operands.
bool small_heads(int64_t Lq, int64_t Lk, int64_t d, int64_t dv) {
  return vec_isa() == 2 && Lq * Lk <= 4096 && d <= 256 && dv <= 256;
}

bool fused_attention_avx512(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), out = ctx.output(0),
                   p = ctx.output(1);
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dv = v.dim(-1);
  if (!all_positive({Lq, d, Lk, dv}) || !small_heads(Lq, Lk, d, dv)) return false;
  const std::vector<int64_t> lead = lead_of(q);
  std::vector<int64_t> ooff;
  int64_t ors = 0;
  if (!entry_offsets(output_layout(out, attr_int_or(ctx, "transpose_out", 0) != 0), ooff, ors)) return false;
  const Mats<float> mq = mats_of<float>(q, lead), mk = mats_of<float>(k, lead), mv = mats_of<float>(v, lead);
  const bool has_mask = ctx.num_inputs() == 4;
  MaskView<float> mm;
  if (has_mask) mm = mask_of<float>(ctx.input(3), lead);
  const float scale = static_cast<float>(attr_float_or(ctx, "scale", 1.0));
  float *pp = p.data<float>(), *po = out.data<float>();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  using RowsFn = void (*)(float*, int64_t, int64_t, float, const float*, int64_t, int64_t);
  const RowsFn rows = Lk <= 16 && (!has_mask || mm.cs <= 1) ? RowsFn(softmax_rows16) : RowsFn(rows_avx2);
  const int64_t work = Lq * Lk * (d + dv);
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    float* kt = scratch<float>(d * Lk);
    for (int64_t b = lo; b < hi; ++b) {
      float* pb = pp + b * Lq * Lk;
      transpose_into(kt, mk.at(b), mk.rs, Lk, d);                  // k^T: the scores' rows combine its rows
      prod_avx512(pb, Lk, mq.at(b), mq.rs, 1, kt, Lk, Lq, d, Lk);  // q k^T
      rows(pb, Lq, Lk, scale, has_mask ? mm.base + mm.off[static_cast<size_t>(b)] : nullptr, mm.rs, mm.cs);
      prod_avx512(po + ooff[static_cast<size_t>(b)], ors, pb, Lk, 1, mv.at(b), mv.rs, Lq, Lk, dv);  // P v
    }
  });
  return true;
}

bool fused_attention_grad_avx512(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), p = ctx.input(3), g = ctx.input(4);
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dvn = v.dim(-1);
  if (!all_positive({Lq, d, Lk, dvn}) || !small_heads(Lq, Lk, d, dvn) || !p.is_contiguous()) return false;
  const std::vector<int64_t> lead = lead_of(q);
  std::vector<int64_t> off[3];
  int64_t ors[3];
  const char* flags[3] = {"transpose_dq", "transpose_dk", "transpose_dv"};
  for (int i = 0; i < 3; ++i)
    if (!entry_offsets(output_layout(ctx.output(i), attr_int_or(ctx, flags[i], 0) != 0), off[i], ors[i]))
      return false;
  const Mats<float> mq = mats_of<float>(q, lead), mk = mats_of<float>(k, lead), mv = mats_of<float>(v, lead);
  const Mats<float> mg = mats_of<float>(g, lead);
  const float scale = static_cast<float>(attr_float_or(ctx, "scale", 1.0));
  const float* pp = p.data<float>();
  float *dq = ctx.output(0).data<float>(), *dk = ctx.output(1).data<float>(),
        *dv = ctx.output(2).data<float>();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  using GradRowsFn = void (*)(float*, const float*, int64_t, int64_t, float);
  const GradRowsFn grad_rows = have_avx2() ? GradRowsFn(grad_rows_avx2) : GradRowsFn(grad_rows_base);
  const SoftmaxGradRow sg_row = softmax_grad_row_fn<false>();
  const SoftmaxGradRows sg_rows16 = softmax_grad_rows16_fn<false>(Lk);
  const int64_t work = Lq * Lk * (2 * d + 2 * dvn);
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    float* tmp = scratch<float>((dvn + Lq) * Lk);
    float *vt = tmp, *ds = tmp + dvn * Lk;
    for (int64_t b = lo; b < hi; ++b) {
      const size_t e = static_cast<size_t>(b);
      const float *pb = pp + b * Lq * Lk, *gb = mg.at(b), *qb = mq.at(b), *kb = mk.at(b);
      transpose_into(vt, mv.at(b), mv.rs, Lk, dvn);
      prod_avx512(ds, Lk, gb, mg.rs, 1, vt, Lk, Lq, dvn, Lk);  // dP = g v^T
      if (scale == 1.f &&
          sg_rows16)  // the softmax_grad op's rows (its bits), as the unfused chain computes dS
        sg_rows16(pb, ds, ds, Lq, Lk);
      else if (scale == 1.f)
        for (int64_t i = 0; i < Lq; ++i) sg_row(pb + i * Lk, ds + i * Lk, ds + i * Lk, Lk);
      else
        grad_rows(ds, pb, Lq, Lk, scale);  // the scores' gradient times the scale
      prod_avx512(dq + off[0][e], ors[0], ds, Lk, 1, kb, mk.rs, Lq, Lk, d);    // dq = dS k
      prod_avx512(dk + off[1][e], ors[1], ds, 1, Lk, qb, mq.rs, Lk, Lq, d);    // dk = dS^T q
      prod_avx512(dv + off[2][e], ors[2], pb, 1, Lk, gb, mg.rs, Lk, Lq, dvn);  // dv = P^T g
    }
  });
  return true;
}

// An output the loops computed as [A, H, L, D] (contiguous, `tmp`) stored into `t`: as it is, or
// heads-last ([A, L, H, D], the transpose_* attributes).
template <class T>
void store_output(const std::vector<T>& tmp, const TensorView& t, bool heads_last) {
  T* dst = t.data<T>();
  if (!heads_last) {
    std::copy(tmp.begin(), tmp.end(), dst);
    return;
  }
  const int64_t L = t.dim(-3), H = t.dim(-2), D = t.dim(-1), A = t.numel() / std::max<int64_t>(1, L * H * D);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l)
        std::copy_n(tmp.data() + ((a * H + h) * L + l) * D, D, dst + ((a * L + l) * H + h) * D);
}

template <class T>
void fused_attention_t(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  const bool has_mask = ctx.num_inputs() == 4;
  const TensorView out = ctx.output(0), p = ctx.output(1);
  const std::vector<int64_t> lead = lead_of(q);
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dv = v.dim(-1);
  const Mats<T> mq = mats_of<T>(q, lead), mk = mats_of<T>(k, lead), mv = mats_of<T>(v, lead);
  MaskView<T> mm;
  if (has_mask) mm = mask_of<T>(ctx.input(3), lead);
  const T scale = T(attr_float_or(ctx, "scale", 1.0));
  const bool heads_last = attr_int_or(ctx, "transpose_out", 0) != 0;
  std::vector<T> staged(heads_last ? static_cast<size_t>(out.numel()) : 0);  // the loops write [..., Lq, dv]
  T *po = heads_last ? staged.data() : out.data<T>(), *pp = p.data<T>();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  const FwdFn<T> fwd = have_avx2() ? FwdFn<T>(fwd_avx2) : FwdFn<T>(fwd_base);
  const int64_t work = std::max<int64_t>(1, Lq * Lk * (d + dv));
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    T* tmp = scratch<T>(d * Lk);
    for (int64_t b = lo; b < hi; ++b) {
      const T* m = has_mask ? mm.base + mm.off[static_cast<size_t>(b)] : nullptr;
      fwd(mq.at(b), mq.rs, mk.at(b), mk.rs, mv.at(b), mv.rs, m, mm.rs, mm.cs, Lq, Lk, d, dv, scale,
          pp + b * Lq * Lk, po + b * Lq * dv, tmp);
    }
  });
  if (heads_last) store_output(staged, out, true);
}

template <class T>
void fused_attention_grad_t(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), p = ctx.input(3), g = ctx.input(4);
  const std::vector<int64_t> lead = lead_of(q);
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dvn = v.dim(-1);
  const Mats<T> mq = mats_of<T>(q, lead), mk = mats_of<T>(k, lead), mv = mats_of<T>(v, lead);
  const Mats<T> mp = mats_of<T>(p, lead), mg = mats_of<T>(g, lead);
  const T scale = T(attr_float_or(ctx, "scale", 1.0));
  // Staged as [..., L, d] per batch entry, then stored (heads-last where asked).
  std::vector<T> sq(static_cast<size_t>(q.numel())), sk(static_cast<size_t>(k.numel())),
      sv(static_cast<size_t>(v.numel()));
  T *dq = sq.data(), *dk = sk.data(), *dv = sv.data();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  const BwdFn<T> bwd = have_avx2() ? BwdFn<T>(bwd_avx2) : BwdFn<T>(bwd_base);
  const int64_t work = std::max<int64_t>(1, Lq * Lk * (2 * d + 2 * dvn));
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    T* tmp = scratch<T>((dvn + 4) * Lk);
    for (int64_t b = lo; b < hi; ++b)
      bwd(mq.at(b), mq.rs, mk.at(b), mk.rs, mv.at(b), mv.rs, mp.at(b), mp.rs, mg.at(b), mg.rs, Lq, Lk, d, dvn,
          scale, dq + b * Lq * d, dk + b * Lk * d, dv + b * Lk * dvn, tmp);
  });
  store_output(sq, ctx.output(0), attr_int_or(ctx, "transpose_dq", 0) != 0);
  store_output(sk, ctx.output(1), attr_int_or(ctx, "transpose_dk", 0) != 0);
  store_output(sv, ctx.output(2), attr_int_or(ctx, "transpose_dv", 0) != 0);
}

template <class T>
struct F32F64 : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {};

void fused_attention_kernel(KernelContext& ctx) {
  const TensorView q = ctx.input(0);
  OAR_SDK_CHECK(ctx.num_inputs() == 3 || ctx.num_inputs() == 4, OAR_ERR_INVALID_ARGUMENT,
                "fused_attention: takes q, k, v and an optional mask, got " << ctx.num_inputs() << " inputs");
  if (ctx.output(0).numel() == 0 && ctx.output(1).numel() == 0) return;
  if (q.dtype() == OAR_DTYPE_FLOAT32 && (fused_attention_avx512(ctx) || fused_attention_onednn(ctx))) return;
  dispatch<F32F64>("fused_attention", q.dtype(), [&](auto tag) { fused_attention_t<decltype(tag)>(ctx); });
}

void fused_attention_grad_kernel(KernelContext& ctx) {
  const TensorView q = ctx.input(0);
  if (q.dtype() == OAR_DTYPE_FLOAT32 &&
      (fused_attention_grad_avx512(ctx) || fused_attention_grad_onednn(ctx)))
    return;
  // Every output element is written per batch entry (zeros where a length is 0).
  dispatch<F32F64>("fused_attention_grad", q.dtype(),
                   [&](auto tag) { fused_attention_grad_t<decltype(tag)>(ctx); });
}

}  // namespace

// fused_softmax_mask(x, mask): out = x, then the softmax rows with the (broadcast) mask added.
void fused_softmax_mask_kernel(KernelContext& ctx) {
  const TensorView x = ctx.input(0), mask = ctx.input(1), out = ctx.output(0);
  if (x.numel() == 0) return;
  const int32_t r = x.ndim();
  const int64_t Lk = x.dim(-1), Lq = r >= 2 ? x.dim(-2) : 1;
  const std::vector<int64_t> lead(x.dims(), x.dims() + std::max(0, r - 2));
  dispatch<F32F64>("fused_softmax_mask", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();  // contiguous (the kernel is registered without strided inputs)
    T* po = out.data<T>();
    std::copy(px, px + x.numel(), po);
    // The mask as [lead..., Lq, Lk] with broadcast strides (a rank < 2 mask repeats over the rows).
    MaskView<T> mm;
    mm.base = mask.data<T>();
    if (mask.ndim() >= 1 && mask.dim(-1) != 1) mm.cs = mask.stride(-1);
    if (mask.ndim() >= 2 && mask.dim(-2) != 1 && r >= 2) mm.rs = mask.stride(-2);
    int64_t batch = 1;
    for (int64_t d : lead) batch *= d;
    if (mask.ndim() >= 2 && r >= 2) {
      mm.off = batch_offsets(mask, lead);
    } else {
      mm.off.assign(static_cast<size_t>(batch), 0);
    }
    using RowsFn = void (*)(T*, int64_t, int64_t, T, const T*, int64_t, int64_t);
    const RowsFn rows = have_avx2() ? RowsFn(rows_avx2) : RowsFn(rows_base);
    parallel_for(
        0, batch, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, Lq * Lk)), [&](int64_t lo, int64_t hi) {
          for (int64_t b = lo; b < hi; ++b)
            rows(po + b * Lq * Lk, Lq, Lk, T(1), mm.base + mm.off[static_cast<size_t>(b)], mm.rs, mm.cs);
        });
  });
}

void register_attention_kernels(Registry& r) {
  const std::vector<OarDType> floats = oar::sdk::float_dtypes();
  r.add("softmax_grad", floats, &softmax_grad_kernel<false>);
  r.add("log_softmax_grad", floats, &softmax_grad_kernel<true>);
  // Strided inputs: the head split's transposed views are read in place.
  const std::vector<OarDType> f32_f64 = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  r.add("fused_attention", f32_f64, &fused_attention_kernel, kStrided);
  r.add("fused_attention_grad", f32_f64, &fused_attention_grad_kernel, kStrided);
  r.add("fused_softmax_mask", f32_f64, &fused_softmax_mask_kernel);
}

}  // namespace oar_cpu
