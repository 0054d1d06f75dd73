// CPU kernels of the attention ops (framework/src/ops_attention.cc): softmax_grad, log_softmax_grad,
// fused_attention and fused_attention_grad.
//
// The fused attention kernels work one [L, d] matrix pair at a time (one batch entry: batch x heads in a
// Transformer), every inner loop running along the head dim, contiguous in q, k, v (their rows may have
// any stride: the heads of a [batch, L, heads, d] projection are read in place, so the transposes of
// the head split cost no copy). AVX2+FMA is chosen at run time, as for the small matmuls (matmul.cc).
#include <algorithm>
#include <vector>

#include "elementwise.h"
#include "vec_math.h"

namespace oar_cpu {
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
  S s = 0;
  for (; i < n; ++i) s += f(i);
  for (int k = 0; k < 8; ++k) s += acc[k];
  return s;
}

template <class T>
[[gnu::always_inline]] inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>)
    return fast_exp(x);
  else
    return std::exp(x);
}

// ---- softmax_grad / log_softmax_grad ----------------------------------------------------------------
// y, g, dx are [outer, n, inner] (contiguous), reduced along n. softmax: dx = y (g - sum(g y));
// log_softmax: dx = g - exp(y) sum(g). Sums in the compute type (float for float32: the same as the
// composite's sum op), 8 lanes.
template <class T, bool kLog>
void softmax_grad_impl(const T* y, const T* g, T* dx, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        const T *yr = y + o * n, *gr = g + o * n;
        T* w = dx + o * n;
        if constexpr (kLog) {
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

template <class T>
[[gnu::always_inline]] inline T dot(const T* __restrict a, const T* __restrict b, int64_t n) {
  return sum8<T>(n, [&](int64_t i) { return a[i] * b[i]; });
}
template <class T>
[[gnu::always_inline]] inline void axpy(T* __restrict y, T a, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// One batch entry of the forward: p (Lq x Lk) and out (Lq x dv), both contiguous. s: Lk scratch.
template <class T>
[[gnu::always_inline]] inline void attention_fwd_one(const T* q, int64_t qrs, const T* k, int64_t krs,
                                                     const T* v, int64_t vrs, const T* mask, int64_t mrs,
                                                     int64_t mcs, int64_t Lq, int64_t Lk, int64_t d,
                                                     int64_t dv, T scale, T* p, T* out) {
  for (int64_t i = 0; i < Lq; ++i) {
    T* pi = p + i * Lk;
    const T* qi = q + i * qrs;
    for (int64_t j = 0; j < Lk; ++j) pi[j] = scale * dot(qi, k + j * krs, d);
    if (mask != nullptr)
      for (int64_t j = 0; j < Lk; ++j) pi[j] += mask[i * mrs + j * mcs];
    // softmax as the softmax op computes it: NaN and +inf rows, and rows of -inf only, give NaN.
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < Lk; ++j) m = m < pi[j] ? pi[j] : m;
    for (int64_t j = 0; j < Lk; ++j) pi[j] = exp_of(pi[j] - m);
    const T inv = T(1) / sum8<T>(Lk, [&](int64_t j) { return pi[j]; });
    for (int64_t j = 0; j < Lk; ++j) pi[j] *= inv;
    T* oi = out + i * dv;
    std::fill(oi, oi + dv, T(0));
    for (int64_t j = 0; j < Lk; ++j) axpy(oi, pi[j], v + j * vrs, dv);
  }
}

// One batch entry of the backward. dq (Lq x d), dk (Lk x d), dv (Lk x dv) contiguous, zeroed here;
// dp: Lk scratch.
template <class T>
[[gnu::always_inline]] inline void attention_bwd_one(const T* q, int64_t qrs, const T* k, int64_t krs,
                                                     const T* v, int64_t vrs, const T* p, int64_t prs,
                                                     const T* g, int64_t grs, int64_t Lq, int64_t Lk,
                                                     int64_t d, int64_t dvn, T scale, T* dq, T* dk, T* dv,
                                                     T* dp) {
  std::fill(dk, dk + Lk * d, T(0));
  std::fill(dv, dv + Lk * dvn, T(0));
  for (int64_t i = 0; i < Lq; ++i) {
    const T *gi = g + i * grs, *pi = p + i * prs, *qi = q + i * qrs;
    for (int64_t j = 0; j < Lk; ++j) dp[j] = dot(gi, v + j * vrs, dvn);
    const T t = sum8<T>(Lk, [&](int64_t j) { return pi[j] * dp[j]; });
    T* dqi = dq + i * d;
    std::fill(dqi, dqi + d, T(0));
    for (int64_t j = 0; j < Lk; ++j) {
      const T ds = scale * pi[j] * (dp[j] - t);  // the scores' gradient, times the scale
      axpy(dqi, ds, k + j * krs, d);
      axpy(dk + j * d, ds, qi, d);
      axpy(dv + j * dvn, pi[j], gi, dvn);
    }
  }
}

// The per-batch bodies compiled twice: AVX2+FMA where the CPU has it, baseline x86-64 otherwise.
#define OAR_ATTN_VARIANTS(T)                                                                                 \
  __attribute__((target("avx2,fma"))) void fwd_avx2(                                                         \
      const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* m, int64_t mrs,    \
      int64_t mcs, int64_t Lq, int64_t Lk, int64_t d, int64_t dv, T scale, T* p, T* out) {                   \
    attention_fwd_one(q, qrs, k, krs, v, vrs, m, mrs, mcs, Lq, Lk, d, dv, scale, p, out);                    \
  }                                                                                                          \
  void fwd_base(const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* m,       \
                int64_t mrs, int64_t mcs, int64_t Lq, int64_t Lk, int64_t d, int64_t dv, T scale, T* p,      \
                T* out) {                                                                                    \
    attention_fwd_one(q, qrs, k, krs, v, vrs, m, mrs, mcs, Lq, Lk, d, dv, scale, p, out);                    \
  }                                                                                                          \
  __attribute__((target("avx2,fma"))) void bwd_avx2(                                                         \
      const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* p, int64_t prs,    \
      const T* g, int64_t grs, int64_t Lq, int64_t Lk, int64_t d, int64_t dvn, T scale, T* dq, T* dk, T* dv, \
      T* dp) {                                                                                               \
    attention_bwd_one(q, qrs, k, krs, v, vrs, p, prs, g, grs, Lq, Lk, d, dvn, scale, dq, dk, dv, dp);        \
  }                                                                                                          \
  void bwd_base(const T* q, int64_t qrs, const T* k, int64_t krs, const T* v, int64_t vrs, const T* p,       \
                int64_t prs, const T* g, int64_t grs, int64_t Lq, int64_t Lk, int64_t d, int64_t dvn,        \
                T scale, T* dq, T* dk, T* dv, T* dp) {                                                       \
    attention_bwd_one(q, qrs, k, krs, v, vrs, p, prs, g, grs, Lq, Lk, d, dvn, scale, dq, dk, dv, dp);        \
  }
OAR_ATTN_VARIANTS(float)
OAR_ATTN_VARIANTS(double)
#undef OAR_ATTN_VARIANTS

template <class T>
using FwdFn = void (*)(const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, T, T*, T*);
template <class T>
using BwdFn = void (*)(const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*, int64_t, const T*,
                       int64_t, int64_t, int64_t, int64_t, int64_t, T, T*, T*, T*, T*);

bool have_avx2() {
  static const bool v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return v;
}

// The leading dims of a [..., L, d] tensor.
std::vector<int64_t> lead_of(const TensorView& t) {
  return std::vector<int64_t>(t.dims(), t.dims() + t.ndim() - 2);
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
  T *po = out.data<T>(), *pp = p.data<T>();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  const FwdFn<T> fwd = have_avx2() ? FwdFn<T>(fwd_avx2) : FwdFn<T>(fwd_base);
  const int64_t work = std::max<int64_t>(1, Lq * Lk * (d + dv));
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const T* m = has_mask ? mm.base + mm.off[static_cast<size_t>(b)] : nullptr;
      fwd(mq.at(b), mq.rs, mk.at(b), mk.rs, mv.at(b), mv.rs, m, mm.rs, mm.cs, Lq, Lk, d, dv, scale,
          pp + b * Lq * Lk, po + b * Lq * dv);
    }
  });
}

template <class T>
void fused_attention_grad_t(KernelContext& ctx) {
  const TensorView q = ctx.input(0), k = ctx.input(1), v = ctx.input(2), p = ctx.input(3), g = ctx.input(4);
  const std::vector<int64_t> lead = lead_of(q);
  const int64_t Lq = q.dim(-2), d = q.dim(-1), Lk = k.dim(-2), dvn = v.dim(-1);
  const Mats<T> mq = mats_of<T>(q, lead), mk = mats_of<T>(k, lead), mv = mats_of<T>(v, lead);
  const Mats<T> mp = mats_of<T>(p, lead), mg = mats_of<T>(g, lead);
  const T scale = T(attr_float_or(ctx, "scale", 1.0));
  T *dq = ctx.output(0).data<T>(), *dk = ctx.output(1).data<T>(), *dv = ctx.output(2).data<T>();
  const int64_t batch = static_cast<int64_t>(mq.off.size());
  const BwdFn<T> bwd = have_avx2() ? BwdFn<T>(bwd_avx2) : BwdFn<T>(bwd_base);
  const int64_t work = std::max<int64_t>(1, Lq * Lk * (2 * d + 2 * dvn));
  parallel_for(0, batch, std::max<int64_t>(1, 32768 / work), [&](int64_t lo, int64_t hi) {
    std::vector<T> dp(static_cast<size_t>(std::max<int64_t>(Lk, 1)));
    for (int64_t b = lo; b < hi; ++b)
      bwd(mq.at(b), mq.rs, mk.at(b), mk.rs, mv.at(b), mv.rs, mp.at(b), mp.rs, mg.at(b), mg.rs, Lq, Lk, d, dvn,
          scale, dq + b * Lq * d, dk + b * Lk * d, dv + b * Lk * dvn, dp.data());
  });
}

template <class T>
struct F32F64 : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {};

void fused_attention_kernel(KernelContext& ctx) {
  const TensorView q = ctx.input(0);
  OAR_SDK_CHECK(ctx.num_inputs() == 3 || ctx.num_inputs() == 4, OAR_ERR_INVALID_ARGUMENT,
                "fused_attention: takes q, k, v and an optional mask, got " << ctx.num_inputs() << " inputs");
  if (ctx.output(0).numel() == 0 && ctx.output(1).numel() == 0) return;
  dispatch<F32F64>("fused_attention", q.dtype(), [&](auto tag) { fused_attention_t<decltype(tag)>(ctx); });
}

void fused_attention_grad_kernel(KernelContext& ctx) {
  const TensorView q = ctx.input(0);
  // Every output element is written per batch entry (zeros where a length is 0).
  dispatch<F32F64>("fused_attention_grad", q.dtype(),
                   [&](auto tag) { fused_attention_grad_t<decltype(tag)>(ctx); });
}

}  // namespace

void register_attention_kernels(Registry& r) {
  const std::vector<OarDType> floats = oar::sdk::float_dtypes();
  r.add("softmax_grad", floats, &softmax_grad_kernel<false>);
  r.add("log_softmax_grad", floats, &softmax_grad_kernel<true>);
  // Strided inputs: the head split's transposed views are read in place.
  const std::vector<OarDType> f32_f64 = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  r.add("fused_attention", f32_f64, &fused_attention_kernel, kStrided);
  r.add("fused_attention_grad", f32_f64, &fused_attention_grad_kernel, kStrided);
}

}  // namespace oar_cpu
