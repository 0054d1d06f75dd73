// CPU kernels of the fused optimizer updates (framework/src/ops_optim.cc defines the ops and the input
// layout: equal blocks [params, grads, accumulators...], n tensors each; docs/optimizer.md).
//
// Every kernel updates all n parameters in one parallel loop over chunks of at most kChunk elements
// (small parameters are one chunk each), in the compute type of the parameter dtype (float for the
// 16-bit floats). Per-parameter scalars (learning rate, bias corrections) are computed before the loop,
// the beta-power accumulators are advanced after it.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::parallel_for;

constexpr int64_t kChunk = 16384;

struct Chunk {
  int32_t k;  // parameter
  int64_t lo, hi;
};

// The inputs of one call, by block.
struct Lists {
  KernelContext& ctx;
  int32_t n;
  TensorView at(int32_t block, int32_t k) const { return ctx.input(block * n + k); }
};

Lists lists_of(KernelContext& ctx, int32_t blocks) { return Lists{ctx, ctx.num_inputs() / blocks}; }

std::vector<Chunk> chunks_of(const Lists& l) {
  std::vector<Chunk> out;
  for (int32_t k = 0; k < l.n; ++k) {
    const int64_t numel = l.at(0, k).numel();
    for (int64_t lo = 0; lo < numel; lo += kChunk) out.push_back({k, lo, std::min(numel, lo + kChunk)});
  }
  return out;
}

// A per-parameter attribute list: empty -> fallback, one value -> for all, else value k.
std::vector<double> per_param(const KernelContext& ctx, const char* name, int32_t n, double fallback) {
  std::vector<double> v = ctx.attr_floats(name);
  if (v.empty()) return std::vector<double>(n, fallback);
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  return v;
}

double read_scalar(const TensorView& t) {
  return t.dtype() == OAR_DTYPE_FLOAT64 ? *t.data<double>() : static_cast<double>(*t.data<float>());
}
void scale_scalar(const TensorView& t, double factor) {
  if (t.dtype() == OAR_DTYPE_FLOAT64)
    *t.data<double>() *= factor;
  else
    *t.data<float>() = static_cast<float>(static_cast<double>(*t.data<float>()) * factor);
}

// Below this many elements in all, an update runs on the calling thread: waking the thread pool costs
// more than the work (and much more when the machine is busy).
constexpr int64_t kParallelMin = 65536;

// Runs body(ci) for every chunk index, in parallel when there is enough work.
template <class Body>
void for_chunk_index(const std::vector<Chunk>& chunks, Body&& body) {
  int64_t total = 0;
  for (const Chunk& c : chunks) total += c.hi - c.lo;
  const auto n = static_cast<int64_t>(chunks.size());
  parallel_for(0, n, total < kParallelMin ? n : 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) body(c);
  });
}

// Runs body(chunk) for every chunk.
template <class Body>
void for_chunks(const std::vector<Chunk>& chunks, Body&& body) {
  for_chunk_index(chunks, [&](int64_t c) { body(chunks[c]); });
}

template <class T>
T* ptr(const Lists& l, int32_t block, int32_t k) {
  return l.at(block, k).template data<T>();
}

// Every update first forms g' = grad_scale * g + l2_coeff * p (grad_scale: global-norm clipping folded
// into the update; l2_coeff: L2Decay).

// ---- sgd: p -= lr * (g + l2 * p) ----------------------------------------------------------------------
void sgd_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 2);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  dispatch<FloatType>("merged_sgd", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      const C a = static_cast<C>(lr[c.k]), w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        p[i] = T(pv - a * (sc * static_cast<C>(g[i]) + w * pv));
      }
    });
  });
}

// ---- momentum (Paddle): g' = rescale * g + l2 * p; v = mu * v + g';
// p -= lr * v, or with Nesterov p -= lr * (g' + mu * v) ---------------------------------------------------
void momentum_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 3);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const double mu = ctx.attr_float("mu"), rescale = ctx.attr_float("rescale_grad");
  const bool nesterov = ctx.attr_int("use_nesterov") != 0;
  dispatch<FloatType>("merged_momentum", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C m = static_cast<C>(mu), rs = static_cast<C>(rescale);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* v = ptr<T>(l, 2, c.k);
      const C a = static_cast<C>(lr[c.k]), w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        const C gv = rs * sc * static_cast<C>(g[i]) + w * pv;
        const C vv = m * static_cast<C>(v[i]) + gv;
        v[i] = T(vv);
        p[i] = T(nesterov ? pv - (gv + m * vv) * a : pv - a * vv);
      }
    });
  });
}

// ---- adam / adamw (Paddle): with b1p, b2p the beta powers before this step,
// lr_t = lr * sqrt(1 - b2p) / (1 - b1p); m1, m2 moving averages; AdamW first p *= 1 - lr * coeff;
// p -= lr_t * m1 / (sqrt(m2) + eps * sqrt(1 - b2p)); amsgrad uses max(m2_max, m2) for m2 --------------
// The float32 Adam loop (no amsgrad) with restrict pointers, built twice: for AVX2 (picked at run time)
// and for baseline x86-64. The generic loop below stays scalar (GCC gives up on its aliasing), ~4 ns per
// element. No FMA: the same operations in the same order, so results are bit-identical to that loop.
__attribute__((always_inline)) inline void adam_f32_body(int64_t lo, int64_t hi, float* __restrict p,
                                                         const float* __restrict g, float* __restrict m1,
                                                         float* __restrict m2, float sc, float w, float cb1,
                                                         float cb2, float a, float e, float decay) {
  for (int64_t i = lo; i < hi; ++i) {
    const float pv = p[i];
    const float gv = sc * g[i] + w * pv;
    const float m1v = cb1 * m1[i] + (1 - cb1) * gv;
    const float m2v = cb2 * m2[i] + (1 - cb2) * gv * gv;
    m1[i] = m1v;
    m2[i] = m2v;
    p[i] = pv * decay - a * (m1v / (std::sqrt(m2v) + e));
  }
}

__attribute__((target("avx2"))) void adam_f32_avx2(int64_t lo, int64_t hi, float* p, const float* g,
                                                   float* m1, float* m2, float sc, float w, float cb1,
                                                   float cb2, float a, float e, float decay) {
  adam_f32_body(lo, hi, p, g, m1, m2, sc, w, cb1, cb2, a, e, decay);
}

void adam_f32_base(int64_t lo, int64_t hi, float* p, const float* g, float* m1, float* m2, float sc, float w,
                   float cb1, float cb2, float a, float e, float decay) {
  adam_f32_body(lo, hi, p, g, m1, m2, sc, w, cb1, cb2, a, e, decay);
}

// Whether four arrays of n floats are pairwise disjoint (restrict's promise).
bool disjoint(int64_t n, std::initializer_list<const float*> ptrs) {
  for (auto a = ptrs.begin(); a != ptrs.end(); ++a)
    for (auto b = a + 1; b != ptrs.end(); ++b)
      if (*a < *b + n && *b < *a + n) return false;
  return true;
}

void adam_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 7);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const auto coeff = per_param(ctx, "coeff", l.n, 0);
  const double b1 = ctx.attr_float("beta1"), b2 = ctx.attr_float("beta2"), eps = ctx.attr_float("epsilon");
  const bool amsgrad = ctx.attr_int("amsgrad") != 0;
  std::vector<double> lr_t(l.n), eps_t(l.n);
  for (int32_t k = 0; k < l.n; ++k) {
    const double b1p = read_scalar(l.at(4, k)), b2p = read_scalar(l.at(5, k));
    lr_t[k] = lr[k] * std::sqrt(1 - b2p) / (1 - b1p);
    eps_t[k] = eps * std::sqrt(1 - b2p);
  }
  dispatch<FloatType>("merged_adam", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C cb1 = static_cast<C>(b1), cb2 = static_cast<C>(b2);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* m1 = ptr<T>(l, 2, c.k);
      T* m2 = ptr<T>(l, 3, c.k);
      T* mx = amsgrad ? ptr<T>(l, 6, c.k) : nullptr;
      const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]), a = static_cast<C>(lr_t[c.k]),
              e = static_cast<C>(eps_t[c.k]);
      const C decay = static_cast<C>(1 - lr[c.k] * coeff[c.k]);  // exactly 1 without decoupled decay
      // amsgrad as a compile-time flag: a loop without branches vectorizes
      if constexpr (std::is_same_v<T, float>) {
        if (!amsgrad && disjoint(c.hi, {p, g, m1, m2})) {
          static const bool avx2 = __builtin_cpu_supports("avx2");
          (avx2 ? adam_f32_avx2 : adam_f32_base)(c.lo, c.hi, p, g, m1, m2, sc, w, cb1, cb2, a, e, decay);
          return;
        }
      }
      auto loop = [&](auto ams) {
        for (int64_t i = c.lo; i < c.hi; ++i) {
          const C pv = static_cast<C>(p[i]);
          const C gv = sc * static_cast<C>(g[i]) + w * pv;
          const C m1v = cb1 * static_cast<C>(m1[i]) + (1 - cb1) * gv;
          C m2v = cb2 * static_cast<C>(m2[i]) + (1 - cb2) * gv * gv;
          m1[i] = T(m1v);
          m2[i] = T(m2v);
          if constexpr (decltype(ams)::value) {
            m2v = std::max(m2v, static_cast<C>(mx[i]));
            mx[i] = T(m2v);
          }
          p[i] = T(pv * decay - a * (m1v / (std::sqrt(m2v) + e)));
        }
      };
      if (amsgrad)
        loop(std::true_type{});
      else
        loop(std::false_type{});
    });
  });
  for (int32_t k = 0; k < l.n; ++k) {
    scale_scalar(l.at(4, k), b1);
    scale_scalar(l.at(5, k), b2);
  }
}

// ---- adamax (Paddle): m = b1 m + (1 - b1) g; u = max(b2 u + eps, |g|); p -= lr / (1 - b1p) * m / u ----
void adamax_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 5);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const double b1 = ctx.attr_float("beta1"), b2 = ctx.attr_float("beta2"), eps = ctx.attr_float("epsilon");
  std::vector<double> lr_t(l.n);
  for (int32_t k = 0; k < l.n; ++k) lr_t[k] = lr[k] / (1 - read_scalar(l.at(4, k)));
  dispatch<FloatType>("merged_adamax", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C cb1 = static_cast<C>(b1), cb2 = static_cast<C>(b2), ce = static_cast<C>(eps);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* m = ptr<T>(l, 2, c.k);
      T* u = ptr<T>(l, 3, c.k);
      const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]), a = static_cast<C>(lr_t[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        const C gv = sc * static_cast<C>(g[i]) + w * pv;
        const C mv = cb1 * static_cast<C>(m[i]) + (1 - cb1) * gv;
        const C uv = std::max(cb2 * static_cast<C>(u[i]) + ce, std::abs(gv));
        m[i] = T(mv);
        u[i] = T(uv);
        p[i] = T(pv - a * (mv / uv));
      }
    });
  });
  for (int32_t k = 0; k < l.n; ++k) scale_scalar(l.at(4, k), b1);
}

// ---- adagrad: m += g^2; p -= lr * g / (sqrt(m) + eps) ---------------------------------------------------
void adagrad_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 3);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const double eps = ctx.attr_float("epsilon");
  dispatch<FloatType>("merged_adagrad", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C ce = static_cast<C>(eps);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* m = ptr<T>(l, 2, c.k);
      const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]), a = static_cast<C>(lr[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        const C gv = sc * static_cast<C>(g[i]) + w * pv;
        const C mv = static_cast<C>(m[i]) + gv * gv;
        m[i] = T(mv);
        p[i] = T(pv - a * gv / (std::sqrt(mv) + ce));
      }
    });
  });
}

// ---- adadelta (Paddle): E[g^2] = rho E[g^2] + (1 - rho) g^2; d = -sqrt((E[dx^2] + eps) / (E[g^2] + eps)) g;
// E[dx^2] = rho E[dx^2] + (1 - rho) d^2; p += lr * d ------------------------------------------------------
void adadelta_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 4);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const double rho = ctx.attr_float("rho"), eps = ctx.attr_float("epsilon");
  dispatch<FloatType>("merged_adadelta", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C r = static_cast<C>(rho), ce = static_cast<C>(eps);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* sg = ptr<T>(l, 2, c.k);
      T* su = ptr<T>(l, 3, c.k);
      const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]), a = static_cast<C>(lr[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        const C gv = sc * static_cast<C>(g[i]) + w * pv;
        const C sgv = r * static_cast<C>(sg[i]) + (1 - r) * gv * gv;
        const C d = -std::sqrt((static_cast<C>(su[i]) + ce) / (sgv + ce)) * gv;
        sg[i] = T(sgv);
        su[i] = T(r * static_cast<C>(su[i]) + (1 - r) * d * d);
        p[i] = T(pv + a * d);
      }
    });
  });
}

// ---- rmsprop (Paddle): ms = rho ms + (1 - rho) g^2; centered: mg = rho mg + (1 - rho) g and
// mom = momentum mom + lr g / sqrt(ms - mg^2 + eps), else mom = momentum mom + lr g / sqrt(ms + eps);
// p -= mom ---------------------------------------------------------------------------------------------
void rmsprop_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 5);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const double rho = ctx.attr_float("rho"), eps = ctx.attr_float("epsilon"), mom = ctx.attr_float("momentum");
  const bool centered = ctx.attr_int("centered") != 0;
  dispatch<FloatType>("merged_rmsprop", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C r = static_cast<C>(rho), ce = static_cast<C>(eps), cm = static_cast<C>(mom);
    for_chunks(chunks_of(l), [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* g = ptr<T>(l, 1, c.k);
      T* ms = ptr<T>(l, 2, c.k);
      T* mg = ptr<T>(l, 3, c.k);
      T* mo = ptr<T>(l, 4, c.k);
      const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]), a = static_cast<C>(lr[c.k]);
      auto loop = [&](auto is_centered) {  // a compile-time flag: the loop vectorizes
        for (int64_t i = c.lo; i < c.hi; ++i) {
          const C pv = static_cast<C>(p[i]);
          const C gv = sc * static_cast<C>(g[i]) + w * pv;
          const C msv = r * static_cast<C>(ms[i]) + (1 - r) * gv * gv;
          ms[i] = T(msv);
          C denom = msv + ce;
          if constexpr (decltype(is_centered)::value) {
            const C mgv = r * static_cast<C>(mg[i]) + (1 - r) * gv;
            mg[i] = T(mgv);
            denom = msv - mgv * mgv + ce;
          }
          const C mov = cm * static_cast<C>(mo[i]) + a * gv / std::sqrt(denom);
          mo[i] = T(mov);
          p[i] = T(pv - mov);
        }
      };
      if (centered)
        loop(std::true_type{});
      else
        loop(std::false_type{});
    });
  });
}

// ---- lamb (Paddle): m1, m2 moving averages; r = (m1 / (1 - b1p)) / (sqrt(m2 / (1 - b2p)) + eps) + wd p;
// ratio = ||p|| / ||r|| (1 when either is 0, or when wd is 0 and not always_adapt); p -= lr ratio r.
// Two passes: moments and the two norms (partial sums per chunk), then the update. ----------------------
void lamb_kernel(KernelContext& ctx) {
  const Lists l = lists_of(ctx, 6);
  const auto lr = per_param(ctx, "learning_rate", l.n, 0), l2 = per_param(ctx, "l2_coeff", l.n, 0);
  const auto gs = per_param(ctx, "grad_scale", l.n, 1);
  const auto wd = per_param(ctx, "weight_decay", l.n, 0);
  const double b1 = ctx.attr_float("beta1"), b2 = ctx.attr_float("beta2"), eps = ctx.attr_float("epsilon");
  const bool always_adapt = ctx.attr_int("always_adapt") != 0;
  std::vector<double> c1(l.n), c2(l.n);
  for (int32_t k = 0; k < l.n; ++k) {
    c1[k] = 1 / (1 - read_scalar(l.at(4, k)));
    c2[k] = 1 / (1 - read_scalar(l.at(5, k)));
  }
  const std::vector<Chunk> chunks = chunks_of(l);
  std::vector<double> psq(chunks.size()), rsq(chunks.size());
  dispatch<FloatType>("merged_lamb", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C cb1 = static_cast<C>(b1), cb2 = static_cast<C>(b2), ce = static_cast<C>(eps);
    // r for one element, with the parameter's bias corrections and decay passed in (hoisted per chunk)
    auto r_of = [ce](C k1, C k2, C d, C pv, C m1v, C m2v) {
      return (m1v * k1) / (std::sqrt(m2v * k2) + ce) + d * pv;
    };
    for_chunk_index(chunks, [&](int64_t ci) {
      {
        const Chunk& c = chunks[ci];
        const C k1 = static_cast<C>(c1[c.k]), k2 = static_cast<C>(c2[c.k]), d = static_cast<C>(wd[c.k]);
        const T* p = ptr<T>(l, 0, c.k);
        const T* g = ptr<T>(l, 1, c.k);
        T* m1 = ptr<T>(l, 2, c.k);
        T* m2 = ptr<T>(l, 3, c.k);
        const C w = static_cast<C>(l2[c.k]), sc = static_cast<C>(gs[c.k]);
        double ps = 0, rs = 0;
        for (int64_t i = c.lo; i < c.hi; ++i) {
          const C pv = static_cast<C>(p[i]);
          const C gv = sc * static_cast<C>(g[i]) + w * pv;
          const C m1v = cb1 * static_cast<C>(m1[i]) + (1 - cb1) * gv;
          const C m2v = cb2 * static_cast<C>(m2[i]) + (1 - cb2) * gv * gv;
          m1[i] = T(m1v);
          m2[i] = T(m2v);
          const C rv = r_of(k1, k2, d, pv, static_cast<C>(T(m1v)), static_cast<C>(T(m2v)));
          ps += static_cast<double>(pv) * pv;
          rs += static_cast<double>(rv) * rv;
        }
        psq[ci] = ps;
        rsq[ci] = rs;
      }
    });
    std::vector<double> pn(l.n, 0), rn(l.n, 0);
    for (size_t ci = 0; ci < chunks.size(); ++ci) {
      pn[chunks[ci].k] += psq[ci];
      rn[chunks[ci].k] += rsq[ci];
    }
    std::vector<double> step(l.n);
    for (int32_t k = 0; k < l.n; ++k) {
      const double a = std::sqrt(pn[k]), r = std::sqrt(rn[k]);
      const bool adapt = wd[k] > 0 || always_adapt;
      step[k] = lr[k] * ((adapt && a > 0 && r > 0) ? a / r : 1.0);
    }
    for_chunks(chunks, [&](const Chunk& c) {
      T* p = ptr<T>(l, 0, c.k);
      const T* m1 = ptr<T>(l, 2, c.k);
      const T* m2 = ptr<T>(l, 3, c.k);
      const C s = static_cast<C>(step[c.k]);
      const C k1 = static_cast<C>(c1[c.k]), k2 = static_cast<C>(c2[c.k]), d = static_cast<C>(wd[c.k]);
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const C pv = static_cast<C>(p[i]);
        p[i] = T(pv - s * r_of(k1, k2, d, pv, static_cast<C>(m1[i]), static_cast<C>(m2[i])));
      }
    });
  });
  for (int32_t k = 0; k < l.n; ++k) {
    scale_scalar(l.at(4, k), b1);
    scale_scalar(l.at(5, k), b2);
  }
}

// ---- merged_sum_squares: sum of x^2 over all inputs, in double, per chunk and then in chunk order (the
// result does not depend on the thread count) -----------------------------------------------------------
void sum_squares_kernel(KernelContext& ctx) {
  const Lists l{ctx, ctx.num_inputs()};
  const std::vector<Chunk> chunks = chunks_of(l);
  std::vector<double> part(chunks.size());
  dispatch<FloatType>("merged_sum_squares", l.at(0, 0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    for_chunk_index(chunks, [&](int64_t ci) {
      const Chunk& c = chunks[ci];
      const T* x = ptr<T>(l, 0, c.k);
      double acc = 0;
      for (int64_t i = c.lo; i < c.hi; ++i) {
        const double v = static_cast<double>(static_cast<C>(x[i]));
        acc += v * v;
      }
      part[ci] = acc;
    });
  });
  double total = 0;
  for (double v : part) total += v;
  TensorView out = ctx.output(0);
  if (out.dtype() == OAR_DTYPE_FLOAT64)
    *out.data<double>() = total;
  else
    *out.data<float>() = static_cast<float>(total);
}

}  // namespace

void register_optim_kernels(Registry& r) {
  r.add("merged_sum_squares", oar::sdk::float_dtypes(), &sum_squares_kernel);
  const auto& f = oar::sdk::float_dtypes();
  r.add("merged_sgd", f, &sgd_kernel);
  r.add("sgd", f, &sgd_kernel);
  r.add("merged_momentum", f, &momentum_kernel);
  r.add("momentum", f, &momentum_kernel);
  r.add("merged_adam", f, &adam_kernel);
  r.add("adam", f, &adam_kernel);
  r.add("merged_adamax", f, &adamax_kernel);
  r.add("merged_adagrad", f, &adagrad_kernel);
  r.add("merged_adadelta", f, &adadelta_kernel);
  r.add("merged_rmsprop", f, &rmsprop_kernel);
  r.add("merged_lamb", f, &lamb_kernel);
}

}  // namespace oar_cpu
