// The fused recurrent op `rnn` and `rnn_grad` (framework/src/ops_rnn.cc has the contract).
//
// float32 without sequence lengths (or with every length equal to T) runs oneDNN's RNN primitives, one
// per layer (both directions in one, bidirectional_concat): lstm, lbr_gru (linear-before-reset, the GRU
// Paddle and cuDNN compute) and vanilla_rnn (tanh / relu). rnn runs forward_inference; rnn_grad runs
// forward_training again for the workspace, then the backward primitive (no reserve buffer crosses the
// op boundary; the forward costs a third of a training step).
// Everything else (float64, and sequences of different lengths, which oneDNN cannot mask: its state
// would run on through the padding and LSTM's cell state at a sequence's end is never an output) runs
// the plain loop below, which is also the reference the tests compare with.
#include <algorithm>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cpu_common.h"

namespace oar_cpu {
void register_rnn_kernels(Registry& r);  // called from plugin.cc

namespace {

enum Mode { kLstm, kGru, kTanh, kRelu };

struct Geom {
  Mode mode;
  int64_t T, B, I, H, L, D, G;  // G: Paddle's gate blocks (4, 3, 1)
  int64_t cells, n_w;
  std::vector<int64_t> len;  // per sequence; empty: every sequence has T steps
  int64_t in_width(int64_t l) const { return l == 0 ? I : D * H; }
};

Geom make_geom(KernelContext& ctx, int32_t n_in) {
  Geom g;
  const std::string m = ctx.attr_string("mode");
  g.mode = m == "LSTM" ? kLstm : m == "GRU" ? kGru : m == "RNN_TANH" ? kTanh : kRelu;
  g.G = g.mode == kLstm ? 4 : g.mode == kGru ? 3 : 1;
  g.H = ctx.attr_int("hidden_size");
  g.L = ctx.attr_int("num_layers");
  g.D = ctx.attr_int("is_bidirec") ? 2 : 1;
  g.cells = g.L * g.D;
  g.n_w = 4 * g.cells;
  TensorView x = ctx.input(0);
  g.T = x.dim(0);
  g.B = x.dim(1);
  g.I = x.dim(2);
  if (n_in == 4 + g.n_w) {
    TensorView l = ctx.input(static_cast<int32_t>(3 + g.n_w));
    g.len.resize(static_cast<size_t>(g.B));
    for (int64_t b = 0; b < g.B; ++b) {
      const int64_t v = l.dtype() == OAR_DTYPE_INT32 ? l.data<int32_t>()[b] : l.data<int64_t>()[b];
      OAR_SDK_CHECK(v >= 0 && v <= g.T, OAR_ERR_OUT_OF_RANGE,
                    "rnn: sequence_length[" << b << "] = " << v << " is outside [0, " << g.T << "]");
      g.len[static_cast<size_t>(b)] = v;
    }
    // Every sequence full: the lengths change nothing.
    if (std::all_of(g.len.begin(), g.len.end(), [&](int64_t v) { return v == g.T; })) g.len.clear();
  }
  return g;
}

// ---- the plain loop -----------------------------------------------------------------------------
// C[M, N] (+)= A[M, K] * B[N, K]^T; A's rows lda apart.
template <class S>
void mm_nt(int64_t M, int64_t N, int64_t K, const S* A, int64_t lda, const S* B, S* C) {
  oar::sdk::parallel_for(0, M, 1, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t n = 0; n < N; ++n) {
        S acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += A[m * lda + k] * B[n * K + k];
        C[m * N + n] += acc;
      }
  });
}
// C[M, K] (ldc) += A[M, N] * B[N, K].
template <class S>
void mm_nn(int64_t M, int64_t N, int64_t K, const S* A, const S* B, S* C, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const S a = A[m * N + n];
      if (a == S(0)) continue;
      for (int64_t k = 0; k < K; ++k) C[m * ldc + k] += a * B[n * K + k];
    }
}
// W[N, K] += A[M, N]^T * X[M, K] (X's rows ldx apart).
template <class S>
void mm_tn(int64_t M, int64_t N, int64_t K, const S* A, const S* X, int64_t ldx, S* W) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const S a = A[m * N + n];
      if (a == S(0)) continue;
      for (int64_t k = 0; k < K; ++k) W[n * K + k] += a * X[m * ldx + k];
    }
}

template <class S>
S sigm(S v) {
  return S(1) / (S(1) + std::exp(-v));
}

// One (layer, direction) over all steps. in [T, B, In]; out [T, B, D * H] written at column off.
// With `save`, the per-step states and gates the backward reads: st holds the state before each step
// (h, then c for LSTM) in processing order plus the final one, gt the activated gates (GRU: r, z, n and
// the h-side candidate term W_hc h + b_hc).
template <class S>
struct LayerSave {
  std::vector<S> h, c, gates;
};

template <class S>
void layer_fwd(const Geom& g, bool rev, const S* in, int64_t In, const S* w_ih, const S* w_hh, const S* b_ih,
               const S* b_hh, const S* h0, const S* c0, S* out, int64_t off, S* hn, S* cn,
               LayerSave<S>* save) {
  const int64_t T = g.T, B = g.B, H = g.H, GH = g.G * H, OW = g.D * H;
  const int64_t GW = g.mode == kGru ? 4 * H : GH;
  std::vector<S> h(h0, h0 + B * H), c(B * H, S(0)), xa(B * GH), ha(B * GH);
  if (g.mode == kLstm) std::copy(c0, c0 + B * H, c.begin());
  if (save) {
    save->h.assign(static_cast<size_t>((T + 1) * B * H), S(0));
    save->c.assign(g.mode == kLstm ? static_cast<size_t>((T + 1) * B * H) : 0, S(0));
    save->gates.assign(static_cast<size_t>(T * B * GW), S(0));
  }
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = rev ? T - 1 - s : s;
    if (save) {
      std::copy(h.begin(), h.end(), save->h.begin() + s * B * H);
      if (g.mode == kLstm) std::copy(c.begin(), c.end(), save->c.begin() + s * B * H);
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < GH; ++j) {
        xa[b * GH + j] = b_ih[j];
        ha[b * GH + j] = b_hh[j];
      }
    mm_nt(B, GH, In, in + t * B * In, In, w_ih, xa.data());
    mm_nt(B, GH, H, h.data(), H, w_hh, ha.data());
    for (int64_t b = 0; b < B; ++b) {
      S* o = out + (t * B + b) * OW + off;
      if (!g.len.empty() && t >= g.len[static_cast<size_t>(b)]) {  // padding: state kept, output 0
        std::fill(o, o + H, S(0));
        continue;
      }
      const S *xr = xa.data() + b * GH, *hr = ha.data() + b * GH;
      S* gs = save ? save->gates.data() + (s * B + b) * GW : nullptr;
      for (int64_t k = 0; k < H; ++k) {
        S hv;
        if (g.mode == kLstm) {
          const S i = sigm(xr[k] + hr[k]), f = sigm(xr[H + k] + hr[H + k]);
          const S cc = std::tanh(xr[2 * H + k] + hr[2 * H + k]), og = sigm(xr[3 * H + k] + hr[3 * H + k]);
          S& cv = c[b * H + k];
          cv = f * cv + i * cc;
          hv = og * std::tanh(cv);
          if (gs) gs[k] = i, gs[H + k] = f, gs[2 * H + k] = cc, gs[3 * H + k] = og;
        } else if (g.mode == kGru) {
          const S r = sigm(xr[k] + hr[k]), z = sigm(xr[H + k] + hr[H + k]);
          const S n = std::tanh(xr[2 * H + k] + r * hr[2 * H + k]);
          hv = z * h[b * H + k] + (S(1) - z) * n;
          if (gs) gs[k] = r, gs[H + k] = z, gs[2 * H + k] = n, gs[3 * H + k] = hr[2 * H + k];
        } else {
          const S a = xr[k] + hr[k];
          hv = g.mode == kTanh ? std::tanh(a) : std::max(a, S(0));
        }
        h[b * H + k] = hv;
        o[k] = hv;
      }
    }
  }
  std::copy(h.begin(), h.end(), hn);
  if (g.mode == kLstm) std::copy(c.begin(), c.end(), cn);
  if (save) {
    std::copy(h.begin(), h.end(), save->h.begin() + T * B * H);
    if (g.mode == kLstm) std::copy(c.begin(), c.end(), save->c.begin() + T * B * H);
  }
}

// The backward of layer_fwd. dout [T, B, D * H] at column off; dh, dc [B, H] hold the final states'
// gradients and leave as h0's and c0's. din [T, B, In] and the weight gradients are accumulated.
template <class S>
void layer_bwd(const Geom& g, bool rev, const S* in, int64_t In, const S* w_ih, const S* w_hh,
               const LayerSave<S>& sv, const S* dout, int64_t off, S* dh, S* dc, S* din, S* dw_ih, S* dw_hh,
               S* db_ih, S* db_hh) {
  const int64_t T = g.T, B = g.B, H = g.H, GH = g.G * H, OW = g.D * H;
  const int64_t GW = g.mode == kGru ? 4 * H : GH;
  std::vector<S> dx(B * GH), dhg(B * GH), dh_new(B * H);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = rev ? T - 1 - s : s;
    std::fill(dx.begin(), dx.end(), S(0));
    std::fill(dhg.begin(), dhg.end(), S(0));
    const S* hp = sv.h.data() + s * B * H;  // the state before this step
    const S* hcur = sv.h.data() + (s + 1) * B * H;
    for (int64_t b = 0; b < B; ++b) {
      S* dhb = dh + b * H;
      S* dnew = dh_new.data() + b * H;
      if (!g.len.empty() && t >= g.len[static_cast<size_t>(b)]) {  // state passed through
        std::copy(dhb, dhb + H, dnew);
        continue;
      }
      const S* gs = sv.gates.data() + (s * B + b) * GW;
      const S* go = dout + (t * B + b) * OW + off;
      S *xr = dx.data() + b * GH, *hr = dhg.data() + b * GH;
      for (int64_t k = 0; k < H; ++k) {
        const S dht = dhb[k] + go[k];
        if (g.mode == kLstm) {
          const S i = gs[k], f = gs[H + k], cc = gs[2 * H + k], og = gs[3 * H + k];
          const S cv = sv.c[(s + 1) * B * H + b * H + k], cprev = sv.c[s * B * H + b * H + k];
          const S tc = std::tanh(cv);
          const S dct = dc[b * H + k] + dht * og * (S(1) - tc * tc);
          xr[k] = dct * cc * i * (S(1) - i);
          xr[H + k] = dct * cprev * f * (S(1) - f);
          xr[2 * H + k] = dct * i * (S(1) - cc * cc);
          xr[3 * H + k] = dht * tc * og * (S(1) - og);
          for (int64_t q = 0; q < 4; ++q) hr[q * H + k] = xr[q * H + k];
          dc[b * H + k] = dct * f;
          dnew[k] = 0;
        } else if (g.mode == kGru) {
          const S r = gs[k], z = gs[H + k], n = gs[2 * H + k], hn = gs[3 * H + k];
          const S dn = dht * (S(1) - z) * (S(1) - n * n);
          xr[H + k] = hr[H + k] = dht * (hp[b * H + k] - n) * z * (S(1) - z);
          xr[k] = hr[k] = dn * hn * r * (S(1) - r);
          xr[2 * H + k] = dn;
          hr[2 * H + k] = dn * r;
          dnew[k] = dht * z;
        } else {
          const S hv = hcur[b * H + k];
          const S da = g.mode == kTanh ? dht * (S(1) - hv * hv) : (hv > S(0) ? dht : S(0));
          xr[k] = hr[k] = da;
          dnew[k] = 0;
        }
      }
      // dh_prev = dhg W_hh (+ the direct term above)
      mm_nn(1, GH, H, hr, w_hh, dnew, H);
    }
    std::copy(dh_new.begin(), dh_new.end(), dh);
    mm_nn(B, GH, In, dx.data(), w_ih, din + t * B * In, In);
    mm_tn(B, GH, In, dx.data(), in + t * B * In, In, dw_ih);
    mm_tn(B, GH, H, dhg.data(), hp, H, dw_hh);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < GH; ++j) {
        db_ih[j] += dx[b * GH + j];
        db_hh[j] += dhg[b * GH + j];
      }
  }
}

// The whole stack through the loop. Forward: out, hn, cn. Backward (dout != nullptr): recomputes the
// forward with its saves, then fills dx, dh0, dc0 and dw (flat, WeightList order).
template <class S>
void loop_rnn(const Geom& g, KernelContext& ctx, bool backward) {
  const int64_t T = g.T, B = g.B, H = g.H, SB = B * H;
  auto in_ptr = [&](int64_t i) { return ctx.input(static_cast<int32_t>(i)).data<S>(); };
  const S *x = in_ptr(0), *h0 = in_ptr(1), *c0 = in_ptr(2);
  auto w = [&](int64_t k, int j) {  // j: 0 W_ih, 1 W_hh, 2 b_ih, 3 b_hh of cell k
    return in_ptr(j < 2 ? 3 + 2 * k + j : 3 + 2 * g.cells + 2 * k + (j - 2));
  };
  std::vector<std::vector<S>> outs(static_cast<size_t>(g.L));
  std::vector<LayerSave<S>> saves(static_cast<size_t>(backward ? g.cells : 0));
  std::vector<S> hn(g.cells * SB), cn(g.cells * SB, S(0));
  for (int64_t l = 0; l < g.L; ++l) {
    outs[l].assign(static_cast<size_t>(T * B * g.D * H), S(0));
    const S* in = l == 0 ? x : outs[l - 1].data();
    for (int64_t d = 0; d < g.D; ++d) {
      const int64_t k = l * g.D + d;
      layer_fwd<S>(g, d == 1, in, g.in_width(l), w(k, 0), w(k, 1), w(k, 2), w(k, 3), h0 + k * SB, c0 + k * SB,
                   outs[l].data(), d * H, hn.data() + k * SB, cn.data() + k * SB,
                   backward ? &saves[k] : nullptr);
    }
  }
  if (!backward) {
    std::copy(outs.back().begin(), outs.back().end(), ctx.output(0).data<S>());
    std::copy(hn.begin(), hn.end(), ctx.output(1).data<S>());
    std::copy(cn.begin(), cn.end(), ctx.output(2).data<S>());
    return;
  }
  const int64_t n = ctx.num_inputs() - 3;  // the output gradients follow rnn's inputs
  const S *gout = in_ptr(n), *ghn = in_ptr(n + 1), *gcn = in_ptr(n + 2);
  S* dw = ctx.output(3).data<S>();
  std::fill(dw, dw + ctx.output(3).numel(), S(0));
  std::vector<int64_t> w_off(static_cast<size_t>(g.n_w) + 1, 0);
  for (int64_t i = 0; i < g.n_w; ++i)
    w_off[i + 1] = w_off[i] + ctx.input(static_cast<int32_t>(3 + i)).numel();
  auto dwp = [&](int64_t k, int j) { return dw + w_off[j < 2 ? 2 * k + j : 2 * g.cells + 2 * k + (j - 2)]; };
  S *dh0 = ctx.output(1).data<S>(), *dc0 = ctx.output(2).data<S>();
  std::copy(ghn, ghn + g.cells * SB, dh0);
  if (g.mode == kLstm)
    std::copy(gcn, gcn + g.cells * SB, dc0);
  else
    std::fill(dc0, dc0 + g.cells * SB, S(0));
  std::vector<S> dlayer(gout, gout + T * B * g.D * H), din;
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const int64_t In = g.in_width(l);
    din.assign(static_cast<size_t>(T * B * In), S(0));
    const S* in = l == 0 ? x : outs[l - 1].data();
    for (int64_t d = 0; d < g.D; ++d) {
      const int64_t k = l * g.D + d;
      layer_bwd<S>(g, d == 1, in, In, w(k, 0), w(k, 1), saves[k], dlayer.data(), d * H, dh0 + k * SB,
                   dc0 + k * SB, din.data(), dwp(k, 0), dwp(k, 1), dwp(k, 2), dwp(k, 3));
    }
    dlayer.swap(din);
  }
  std::copy(dlayer.begin(), dlayer.end(), ctx.output(0).data<S>());
}

// ---- oneDNN ---------------------------------------------------------------------------------------
using dnnl::memory;
using tag = memory::format_tag;
const auto f32 = memory::data_type::f32;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}
struct Free {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float, Free>;
Buffer buffer(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return Buffer(static_cast<float*>(p));
}

// One layer's primitives for one shape: the forward (inference or training) and the backward.
struct LayerPrims {
  memory::desc src, iter, wl_plain, wi_plain, bias, dst;  // user layouts
  memory::desc wl, wi;                                    // the forward's weights layouts
  dnnl::primitive fwd;
  memory::desc ws, scratch;
  // backward
  memory::desc b_wl, b_wi, b_dwl, b_dwi, b_scratch;
  dnnl::primitive bwd;
};

struct Key {
  int64_t v[7];
  bool operator==(const Key& o) const { return std::equal(v, v + 7, o.v); }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};
struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<LayerPrims>, KeyHash> map;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no destructor ordering at exit
  return *c;
}

int64_t dnnl_gates(Mode m) { return m == kLstm ? 4 : m == kGru ? 3 : 1; }
int64_t dnnl_bias_gates(Mode m) { return m == kGru ? 4 : dnnl_gates(m); }  // lbr_gru: one more

std::shared_ptr<LayerPrims> build(const Geom& g, int64_t In, bool training) {
  auto p = std::make_shared<LayerPrims>();
  const int64_t G = dnnl_gates(g.mode), H = g.H, D = g.D;
  const auto dir =
      D == 2 ? dnnl::rnn_direction::bidirectional_concat : dnnl::rnn_direction::unidirectional_left2right;
  p->src = memory::desc({g.T, g.B, In}, f32, tag::tnc);
  p->iter = memory::desc({1, D, g.B, H}, f32, tag::ldnc);
  p->wl_plain = memory::desc({1, D, In, G, H}, f32, tag::ldigo);
  p->wi_plain = memory::desc({1, D, H, G, H}, f32, tag::ldigo);
  p->bias = memory::desc({1, D, dnnl_bias_gates(g.mode), H}, f32, tag::ldgo);
  p->dst = memory::desc({g.T, g.B, D * H}, f32, tag::tnc);
  memory::desc wl_any({1, D, In, G, H}, f32, tag::any), wi_any({1, D, H, G, H}, f32, tag::any);
  const memory::desc none;
  const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto fin_fwd = [&](const auto& pd) {
    p->wl = pd.weights_layer_desc();
    p->wi = pd.weights_iter_desc();
    p->ws = training ? pd.workspace_desc() : memory::desc();
    p->scratch = pd.scratchpad_desc();
  };
  auto fin_bwd = [&](const auto& bpd) {
    p->b_wl = bpd.weights_layer_desc();
    p->b_wi = bpd.weights_iter_desc();
    p->b_dwl = bpd.diff_weights_layer_desc();
    p->b_dwi = bpd.diff_weights_iter_desc();
    p->b_scratch = bpd.scratchpad_desc();
  };
  const auto bprop = dnnl::prop_kind::backward;
  if (g.mode == kLstm) {
    dnnl::lstm_forward::desc fd(prop, dir, p->src, p->iter, p->iter, wl_any, wi_any, p->bias, p->dst, p->iter,
                                p->iter);
    dnnl::lstm_forward::primitive_desc fpd(fd, attr, engine());
    fin_fwd(fpd);
    p->fwd = dnnl::lstm_forward(fpd);
    if (training) {
      dnnl::lstm_backward::desc bd(bprop, dir, p->src, p->iter, p->iter, wl_any, wi_any, p->bias, p->dst,
                                   p->iter, p->iter, p->src, p->iter, p->iter, wl_any, wi_any, p->bias,
                                   p->dst, p->iter, p->iter);
      dnnl::lstm_backward::primitive_desc bpd(bd, attr, engine(), fpd);
      fin_bwd(bpd);
      p->bwd = dnnl::lstm_backward(bpd);
    }
  } else if (g.mode == kGru) {
    dnnl::lbr_gru_forward::desc fd(prop, dir, p->src, p->iter, wl_any, wi_any, p->bias, p->dst, p->iter);
    dnnl::lbr_gru_forward::primitive_desc fpd(fd, attr, engine());
    fin_fwd(fpd);
    p->fwd = dnnl::lbr_gru_forward(fpd);
    if (training) {
      dnnl::lbr_gru_backward::desc bd(bprop, dir, p->src, p->iter, wl_any, wi_any, p->bias, p->dst, p->iter,
                                      p->src, p->iter, wl_any, wi_any, p->bias, p->dst, p->iter);
      dnnl::lbr_gru_backward::primitive_desc bpd(bd, attr, engine(), fpd);
      fin_bwd(bpd);
      p->bwd = dnnl::lbr_gru_backward(bpd);
    }
  } else {
    const auto act = g.mode == kTanh ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::eltwise_relu;
    dnnl::vanilla_rnn_forward::desc fd(prop, act, dir, p->src, p->iter, wl_any, wi_any, p->bias, p->dst,
                                       p->iter);
    dnnl::vanilla_rnn_forward::primitive_desc fpd(fd, attr, engine());
    fin_fwd(fpd);
    p->fwd = dnnl::vanilla_rnn_forward(fpd);
    if (training) {
      dnnl::vanilla_rnn_backward::desc bd(bprop, act, dir, p->src, p->iter, wl_any, wi_any, p->bias, p->dst,
                                          p->iter, p->src, p->iter, wl_any, wi_any, p->bias, p->dst, p->iter);
      dnnl::vanilla_rnn_backward::primitive_desc bpd(bd, attr, engine(), fpd);
      fin_bwd(bpd);
      p->bwd = dnnl::vanilla_rnn_backward(bpd);
    }
  }
  return p;
}

std::shared_ptr<LayerPrims> get_prims(const Geom& g, int64_t In, bool training) {
  Key key{{g.mode, g.T, g.B, In, g.H, g.D, training}};
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<LayerPrims> p = build(g, In, training);  // outside the lock: creation takes a while
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= 256) c.map.clear();  // bounded; calls in flight keep theirs alive
  return c.map.emplace(key, p).first->second;
}

// oneDNN's gate block q holds Paddle's block perm(q): GRU's update gate comes first in oneDNN.
int64_t paddle_gate(Mode m, int64_t q) { return m == kGru && q < 2 ? 1 - q : q; }

// Paddle's W [G * H, In] of direction d into oneDNN's plain ldigo [1, D, In, G, H].
void pack_weights(const Geom& g, const float* w, int64_t In, int64_t d, float* dst) {
  const int64_t G = dnnl_gates(g.mode), H = g.H;
  float* base = dst + d * In * G * H;
  for (int64_t i = 0; i < In; ++i)
    for (int64_t q = 0; q < G; ++q) {
      const float* src = w + paddle_gate(g.mode, q) * H * In + i;
      float* o = base + (i * G + q) * H;
      for (int64_t h = 0; h < H; ++h) o[h] = src[h * In];
    }
}
// The reverse: adds oneDNN's gradient (ldigo) into Paddle's layout.
void unpack_weights(const Geom& g, const float* src, int64_t In, int64_t d, float* w) {
  const int64_t G = dnnl_gates(g.mode), H = g.H;
  const float* base = src + d * In * G * H;
  for (int64_t i = 0; i < In; ++i)
    for (int64_t q = 0; q < G; ++q) {
      float* o = w + paddle_gate(g.mode, q) * H * In + i;
      const float* s = base + (i * G + q) * H;
      for (int64_t h = 0; h < H; ++h) o[h * In] = s[h];
    }
}
// Paddle's two biases of direction d into oneDNN's one (lbr_gru: the candidate's two kept apart).
void pack_bias(const Geom& g, const float* b_ih, const float* b_hh, int64_t d, float* dst) {
  const int64_t G = dnnl_gates(g.mode), H = g.H;
  float* base = dst + d * dnnl_bias_gates(g.mode) * H;
  for (int64_t q = 0; q < G; ++q) {
    const int64_t pq = paddle_gate(g.mode, q);
    const bool apart = g.mode == kGru && q == 2;
    for (int64_t h = 0; h < H; ++h) base[q * H + h] = b_ih[pq * H + h] + (apart ? 0.f : b_hh[pq * H + h]);
  }
  if (g.mode == kGru)
    for (int64_t h = 0; h < H; ++h) base[3 * H + h] = b_hh[2 * H + h];
}
void unpack_bias(const Geom& g, const float* src, int64_t d, float* db_ih, float* db_hh) {
  const int64_t G = dnnl_gates(g.mode), H = g.H;
  const float* base = src + d * dnnl_bias_gates(g.mode) * H;
  for (int64_t q = 0; q < G; ++q) {
    const int64_t pq = paddle_gate(g.mode, q);
    const bool apart = g.mode == kGru && q == 2;
    for (int64_t h = 0; h < H; ++h) {
      db_ih[pq * H + h] = base[q * H + h];
      db_hh[pq * H + h] = apart ? base[3 * H + h] : base[q * H + h];
    }
  }
}

// A buffer in layout `want` holding plain memory `m` (m itself when the layouts agree).
memory as_layout(dnnl::stream& s, const memory& m, const memory::desc& want, std::vector<Buffer>& keep) {
  if (m.get_desc() == want) return m;
  keep.push_back(buffer(want.get_size()));
  memory r(want, engine(), keep.back().get());
  dnnl::reorder(m, r).execute(s, const_cast<memory&>(m), r);
  return r;
}

// The whole stack through oneDNN, layer by layer. Backward: the forward again (training), keeping each
// layer's input and workspace, then the backward primitives from the top layer down.
void onednn_rnn(const Geom& g, KernelContext& ctx, bool backward) {
  const int64_t T = g.T, B = g.B, H = g.H, D = g.D, SB = B * H;
  dnnl::stream& s = thread_stream();
  auto in_ptr = [&](int64_t i) {
    return const_cast<float*>(ctx.input(static_cast<int32_t>(i)).data<float>());
  };
  float *x = in_ptr(0), *h0 = in_ptr(1), *c0 = in_ptr(2);
  const bool lstm = g.mode == kLstm;
  struct Layer {
    std::shared_ptr<LayerPrims> p;
    Buffer wl, wi, bias, out, ws;
  };
  std::vector<Layer> layers(static_cast<size_t>(g.L));
  float *hn_out = backward ? nullptr : ctx.output(1).data<float>(),
        *cn_out = backward ? nullptr : ctx.output(2).data<float>();
  std::vector<float> hn_tmp, cn_tmp;
  if (backward) {
    hn_tmp.resize(g.cells * SB);
    cn_tmp.resize(g.cells * SB);
    hn_out = hn_tmp.data();
    cn_out = cn_tmp.data();
  } else if (!lstm) {
    std::fill(cn_out, cn_out + g.cells * SB, 0.f);
  }
  std::vector<Buffer> keep;
  for (int64_t l = 0; l < g.L; ++l) {
    Layer& L = layers[l];
    const int64_t In = g.in_width(l);
    L.p = get_prims(g, In, backward);
    const LayerPrims& p = *L.p;
    L.wl = buffer(p.wl_plain.get_size());
    L.wi = buffer(p.wi_plain.get_size());
    L.bias = buffer(p.bias.get_size());
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d;
      pack_weights(g, in_ptr(3 + 2 * k), In, d, L.wl.get());
      pack_weights(g, in_ptr(4 + 2 * k), H, d, L.wi.get());
      pack_bias(g, in_ptr(3 + 2 * g.cells + 2 * k), in_ptr(4 + 2 * g.cells + 2 * k), d, L.bias.get());
    }
    const bool last = l == g.L - 1;
    float* out = last && !backward ? ctx.output(0).data<float>() : nullptr;
    if (!out) {
      L.out = buffer(p.dst.get_size());
      out = L.out.get();
    }
    const float* in = l == 0 ? x : layers[l - 1].out.get();
    memory wl_m(p.wl_plain, engine(), L.wl.get()), wi_m(p.wi_plain, engine(), L.wi.get());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC_LAYER, memory(p.src, engine(), const_cast<float*>(in))},
        {DNNL_ARG_SRC_ITER, memory(p.iter, engine(), h0 + l * D * SB)},
        {DNNL_ARG_WEIGHTS_LAYER, as_layout(s, wl_m, p.wl, keep)},
        {DNNL_ARG_WEIGHTS_ITER, as_layout(s, wi_m, p.wi, keep)},
        {DNNL_ARG_BIAS, memory(p.bias, engine(), L.bias.get())},
        {DNNL_ARG_DST_LAYER, memory(p.dst, engine(), out)},
        {DNNL_ARG_DST_ITER, memory(p.iter, engine(), hn_out + l * D * SB)}};
    if (lstm) {
      args.emplace(DNNL_ARG_SRC_ITER_C, memory(p.iter, engine(), c0 + l * D * SB));
      args.emplace(DNNL_ARG_DST_ITER_C, memory(p.iter, engine(), cn_out + l * D * SB));
    }
    if (backward) {
      L.ws = buffer(p.ws.get_size());
      args.emplace(DNNL_ARG_WORKSPACE, memory(p.ws, engine(), L.ws.get()));
    }
    Buffer scratch = buffer(p.scratch.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratch, engine(), scratch.get()));
    p.fwd.execute(s, args);
    s.wait();
    keep.clear();
  }
  if (!backward) return;

  const int64_t n = ctx.num_inputs() - 3;
  float *gout = in_ptr(n), *ghn = in_ptr(n + 1), *gcn = in_ptr(n + 2);
  float* dw = ctx.output(3).data<float>();
  std::vector<int64_t> w_off(static_cast<size_t>(g.n_w) + 1, 0);
  for (int64_t i = 0; i < g.n_w; ++i)
    w_off[i + 1] = w_off[i] + ctx.input(static_cast<int32_t>(3 + i)).numel();
  float *dh0 = ctx.output(1).data<float>(), *dc0 = ctx.output(2).data<float>();
  if (!lstm) std::fill(dc0, dc0 + g.cells * SB, 0.f);
  Buffer dlayer;  // the gradient of the current layer's output
  const float* dtop = gout;
  for (int64_t l = g.L - 1; l >= 0; --l) {
    Layer& L = layers[l];
    const LayerPrims& p = *L.p;
    const int64_t In = g.in_width(l);
    float* din = l == 0 ? ctx.output(0).data<float>() : nullptr;
    Buffer din_buf;
    if (!din) {
      din_buf = buffer(p.src.get_size());
      din = din_buf.get();
    }
    const float* in = l == 0 ? x : layers[l - 1].out.get();
    memory wl_m(p.wl_plain, engine(), L.wl.get()), wi_m(p.wi_plain, engine(), L.wi.get());
    // diff weights: oneDNN accumulates into them, so they start at zero.
    Buffer dwl = buffer(p.b_dwl.get_size()), dwi = buffer(p.b_dwi.get_size()),
           dbias = buffer(p.bias.get_size());
    std::memset(dwl.get(), 0, p.b_dwl.get_size());
    std::memset(dwi.get(), 0, p.b_dwi.get_size());
    std::memset(dbias.get(), 0, p.bias.get_size());
    memory dwl_m(p.b_dwl, engine(), dwl.get()), dwi_m(p.b_dwi, engine(), dwi.get());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC_LAYER, memory(p.src, engine(), const_cast<float*>(in))},
        {DNNL_ARG_SRC_ITER, memory(p.iter, engine(), h0 + l * D * SB)},
        {DNNL_ARG_WEIGHTS_LAYER, as_layout(s, wl_m, p.b_wl, keep)},
        {DNNL_ARG_WEIGHTS_ITER, as_layout(s, wi_m, p.b_wi, keep)},
        {DNNL_ARG_BIAS, memory(p.bias, engine(), L.bias.get())},
        {DNNL_ARG_DST_LAYER, memory(p.dst, engine(), L.out.get())},
        {DNNL_ARG_DST_ITER, memory(p.iter, engine(), hn_out + l * D * SB)},
        {DNNL_ARG_DIFF_DST_LAYER, memory(p.dst, engine(), const_cast<float*>(dtop))},
        {DNNL_ARG_DIFF_DST_ITER, memory(p.iter, engine(), ghn + l * D * SB)},
        {DNNL_ARG_DIFF_SRC_LAYER, memory(p.src, engine(), din)},
        {DNNL_ARG_DIFF_SRC_ITER, memory(p.iter, engine(), dh0 + l * D * SB)},
        {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl_m},
        {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi_m},
        {DNNL_ARG_DIFF_BIAS, memory(p.bias, engine(), dbias.get())},
        {DNNL_ARG_WORKSPACE, memory(p.ws, engine(), L.ws.get())}};
    if (lstm) {
      args.emplace(DNNL_ARG_SRC_ITER_C, memory(p.iter, engine(), c0 + l * D * SB));
      args.emplace(DNNL_ARG_DST_ITER_C, memory(p.iter, engine(), cn_out + l * D * SB));
      args.emplace(DNNL_ARG_DIFF_DST_ITER_C, memory(p.iter, engine(), gcn + l * D * SB));
      args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, memory(p.iter, engine(), dc0 + l * D * SB));
    }
    Buffer scratch = buffer(p.b_scratch.get_size());
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.b_scratch, engine(), scratch.get()));
    p.bwd.execute(s, args);
    // The weight gradients back to plain ldigo, then to Paddle's layout.
    Buffer pwl, pwi;
    const float *wl_plain = dwl.get(), *wi_plain = dwi.get();
    if (p.b_dwl != p.wl_plain) {
      pwl = buffer(p.wl_plain.get_size());
      memory m(p.wl_plain, engine(), pwl.get());
      dnnl::reorder(dwl_m, m).execute(s, dwl_m, m);
      wl_plain = pwl.get();
    }
    if (p.b_dwi != p.wi_plain) {
      pwi = buffer(p.wi_plain.get_size());
      memory m(p.wi_plain, engine(), pwi.get());
      dnnl::reorder(dwi_m, m).execute(s, dwi_m, m);
      wi_plain = pwi.get();
    }
    s.wait();
    keep.clear();
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d;
      unpack_weights(g, wl_plain, In, d, dw + w_off[2 * k]);
      unpack_weights(g, wi_plain, H, d, dw + w_off[2 * k + 1]);
      unpack_bias(g, dbias.get(), d, dw + w_off[2 * g.cells + 2 * k], dw + w_off[2 * g.cells + 2 * k + 1]);
    }
    dlayer = std::move(din_buf);
    dtop = dlayer.get();
  }
}

void run(KernelContext& ctx, bool backward) {
  const int32_t n_in = backward ? ctx.num_inputs() - 3 : ctx.num_inputs();
  Geom g = make_geom(ctx, n_in);
  if (ctx.input(0).dtype() == OAR_DTYPE_FLOAT32) {
    if (g.len.empty() && g.T > 0 && g.B > 0) {
      try {
        onednn_rnn(g, ctx, backward);
        return;
      } catch (const dnnl::error& e) {
        throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("rnn: oneDNN failed: ") + e.what(),
                              static_cast<int64_t>(e.status));
      }
    }
    loop_rnn<float>(g, ctx, backward);
  } else {
    loop_rnn<double>(g, ctx, backward);
  }
}

void rnn_kernel(KernelContext& ctx) { run(ctx, false); }
void rnn_grad_kernel(KernelContext& ctx) { run(ctx, true); }

}  // namespace

void register_rnn_kernels(Registry& r) {
  r.add("rnn", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &rnn_kernel);
  r.add("rnn_grad", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &rnn_grad_kernel);
}

}  // namespace oar_cpu
