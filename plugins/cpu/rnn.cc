// The fused recurrent op `rnn` and `rnn_grad` (framework/src/ops_rnn.cc has the contract).
//
// float32 runs oneDNN's RNN primitives: lstm, lbr_gru (linear-before-reset, the GRU Paddle and cuDNN
// compute) and vanilla_rnn (tanh / relu). With every sequence full, one primitive per layer (both
// directions in one, bidirectional_concat); with sequences of different lengths, which oneDNN cannot mask,
// onednn_masked cuts the batch and time into pieces around the primitive. rnn runs forward_inference, or
// with is_test 0 forward_training, keeping the workspace in its `reserve` output for rnn_grad, which
// otherwise runs forward_training again first (decision 108). Weights are reordered from Paddle's tensors
// (packed first only for GRU's gate order or two directions) and their gradients back (decision 112).
// float64 runs the plain loop below, which is also the reference the tests compare float32 with.
// Inputs may be strided: a batch-major layer's x and output gradient are transposed views, which oneDNN
// reads with their strides where it can (Ins); any other strided input is copied in the kernel.
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "contiguous.h"
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

// The inputs as the kernel reads them. The op takes strided inputs so that x and the output gradient,
// which a batch-major layer passes as transposed views ([B, T, W] read as [T, B, W]), reach oneDNN with
// their strides (`x_st` / `dout_st`: time and batch strides; {0, 0} for contiguous). Every other
// non-contiguous input, and these two where oneDNN is not used or cannot take the layout, is copied here.
struct Ins {
  std::vector<const void*> p;
  std::vector<ContiguousCopy> own;
  int64_t x_st[2] = {0, 0}, dout_st[2] = {0, 0};
  int32_t dout = -1;  // the output gradient's index (rnn_grad)
  template <class S>
  const S* get(int64_t i) const {
    return static_cast<const S*>(p[static_cast<size_t>(i)]);
  }
};

// [T, B, W] with unit stride along W and positive time and batch strides: a oneDNN RNN layer descriptor.
bool rnn_layout(const TensorView& t) {
  return t.ndim() == 3 && (t.dim(2) == 1 || t.stride(2) == 1) && t.stride(0) > 0 && t.stride(1) > 0;
}

// Reads every input, leaving x and the output gradient for settle_strided.
Ins read_inputs(KernelContext& ctx, bool backward) {
  Ins in;
  const int32_t n = ctx.num_inputs();
  in.p.resize(static_cast<size_t>(n));
  in.own.reserve(static_cast<size_t>(n));
  in.dout = backward ? n - 3 : -1;
  for (int32_t i = 0; i < n; ++i) {
    TensorView t = ctx.input(i);
    if (t.is_contiguous() || t.numel() == 0 || i == 0 || i == in.dout) {
      in.p[i] = t.raw();
    } else {
      in.own.emplace_back(t);
      in.p[i] = in.own.back().data();
    }
  }
  return in;
}

// x and the output gradient: kept strided when `onednn` (the full-sequence oneDNN path) and the layout
// fits, else copied when not contiguous. x only in the forward: oneDNN 2.6's backward computes the input
// weights' gradient from a strided source as if it were tnc (found by test_op_takes_strided_inputs: wrong
// dW_ih, everything else right), so rnn_grad copies x as before.
void settle_strided(KernelContext& ctx, Ins& in, bool onednn) {
  for (int32_t i : {int32_t{0}, in.dout}) {
    if (i < 0) continue;
    TensorView t = ctx.input(i);
    if (t.is_contiguous() || t.numel() == 0) continue;
    int64_t* st = i == 0 ? in.x_st : in.dout_st;
    if (onednn && rnn_layout(t) && (i != 0 || in.dout < 0)) {
      st[0] = t.stride(0), st[1] = t.stride(1);
    } else {
      in.own.emplace_back(t);
      in.p[i] = in.own.back().data();
    }
  }
}

Geom make_geom(KernelContext& ctx, const Ins& in, int32_t n_in) {
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
      const int64_t v =
          l.dtype() == OAR_DTYPE_INT32 ? in.get<int32_t>(3 + g.n_w)[b] : in.get<int64_t>(3 + g.n_w)[b];
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
// W [N, K] transposed to [K, N], so products with it run along contiguous rows (mm_nn).
template <class S>
std::vector<S> transposed(const S* W, int64_t N, int64_t K) {
  std::vector<S> t(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) t[k * N + n] = W[n * K + k];
  return t;
}
// C[M, K] (ldc) += A[M, N] * B[N, K].
template <class S>
void mm_nn(int64_t M, int64_t N, int64_t K, const S* A, const S* B, S* C, int64_t ldc) {
  oar::sdk::parallel_for(0, M, 8, [&](int64_t m0, int64_t m1) {  // rows of C are independent
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const S a = A[m * N + n];
        if (a == S(0)) continue;
        for (int64_t k = 0; k < K; ++k) C[m * ldc + k] += a * B[n * K + k];
      }
  });
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
  const std::vector<S> wt_ih = transposed(w_ih, GH, In), wt_hh = transposed(w_hh, GH, H);
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
    mm_nn(B, In, GH, in + t * B * In, wt_ih.data(), xa.data(), GH);
    mm_nn(B, H, GH, h.data(), wt_hh.data(), ha.data(), GH);
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
void loop_rnn(const Geom& g, KernelContext& ctx, const Ins& ins, bool backward) {
  const int64_t T = g.T, B = g.B, H = g.H, SB = B * H;
  auto in_ptr = [&](int64_t i) { return ins.get<S>(i); };
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
// Buffers come from a per-thread pool: a training step allocates workspaces and scratch of several MB,
// and fresh ones from malloc are fresh mmaps whose page faults cost a tenth of the step.
struct Pool {
  std::vector<std::pair<size_t, void*>> free;  // (capacity, block)
  size_t bytes = 0;
  ~Pool() {
    for (auto& b : free) std::free(b.second);
  }
};
Pool& pool() {
  thread_local Pool p;
  return p;
}
constexpr size_t kPoolLimit = size_t{256} << 20;  // kept per thread at most
struct Free {
  size_t cap = 0;
  void operator()(float* p) const {
    Pool& pl = pool();
    if (pl.bytes + cap > kPoolLimit) {
      std::free(p);
      return;
    }
    pl.free.push_back({cap, p});
    pl.bytes += cap;
  }
};
using Buffer = std::unique_ptr<float, Free>;
Buffer buffer(size_t bytes) {
  const size_t cap = (bytes + 63) / 64 * 64 + 64;
  Pool& pl = pool();
  size_t best = pl.free.size();
  for (size_t i = 0; i < pl.free.size(); ++i)  // the smallest block that fits, at most twice the size
    if (pl.free[i].first >= cap && pl.free[i].first <= 2 * cap &&
        (best == pl.free.size() || pl.free[i].first < pl.free[best].first))
      best = i;
  if (best < pl.free.size()) {
    auto b = pl.free[best];
    pl.free.erase(pl.free.begin() + static_cast<std::ptrdiff_t>(best));
    pl.bytes -= b.first;
    return Buffer(static_cast<float*>(b.second), Free{b.first});
  }
  void* p = std::aligned_alloc(64, cap);
  if (!p) throw std::bad_alloc();
  return Buffer(static_cast<float*>(p), Free{cap});
}

// One layer's primitives for one shape: the forward (inference or training) and the backward.
struct LayerPrims {
  memory::desc src, iter, wl_plain, wi_plain, bias, dst;  // user layouts
  memory::desc dsrc, ddst;  // the gradients of src (contiguous) and dst (the output gradient's strides)
  memory::desc wl, wi;      // the forward's weights layouts
  dnnl::primitive fwd;
  memory::desc ws, scratch;
  // backward
  memory::desc b_wl, b_wi, b_dwl, b_dwi, b_scratch;
  dnnl::primitive bwd;
};

struct Key {
  int64_t v[11];  // mode, T, B, In, H, D, training, src's and diff dst's (time, batch) strides
  int threads = oar::sdk::max_threads();  // the OpenMP count it is created for (adapt_threads)
  bool operator==(const Key& o) const { return std::equal(v, v + 11, o.v) && threads == o.threads; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    h = (h ^ static_cast<uint64_t>(k.threads)) * 0x100000001b3ull;
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

// [T, B, W] in tnc, or with the given (time, batch) strides ({0, 0}: tnc).
memory::desc layer_desc(int64_t T, int64_t B, int64_t W, const int64_t* st) {
  if (!st || (st[0] == 0 && st[1] == 0)) return memory::desc({T, B, W}, f32, tag::tnc);
  return memory::desc({T, B, W}, f32, memory::dims{st[0], st[1], 1});
}

std::shared_ptr<LayerPrims> build(const Geom& g, int64_t In, bool training, const int64_t* src_st,
                                  const int64_t* ddst_st) {
  auto p = std::make_shared<LayerPrims>();
  const int64_t G = dnnl_gates(g.mode), H = g.H, D = g.D;
  const auto dir =
      D == 2 ? dnnl::rnn_direction::bidirectional_concat : dnnl::rnn_direction::unidirectional_left2right;
  p->src = layer_desc(g.T, g.B, In, src_st);
  p->dsrc = layer_desc(g.T, g.B, In, nullptr);
  p->iter = memory::desc({1, D, g.B, H}, f32, tag::ldnc);
  p->wl_plain = memory::desc({1, D, In, G, H}, f32, tag::ldgoi);  // Paddle's layout (pack_weights)
  p->wi_plain = memory::desc({1, D, H, G, H}, f32, tag::ldgoi);
  p->bias = memory::desc({1, D, dnnl_bias_gates(g.mode), H}, f32, tag::ldgo);
  p->dst = layer_desc(g.T, g.B, D * H, nullptr);
  p->ddst = layer_desc(g.T, g.B, D * H, ddst_st);
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
                                   p->iter, p->iter, p->dsrc, p->iter, p->iter, wl_any, wi_any, p->bias,
                                   p->ddst, p->iter, p->iter);
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
                                      p->dsrc, p->iter, wl_any, wi_any, p->bias, p->ddst, p->iter);
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
                                          p->iter, p->dsrc, p->iter, wl_any, wi_any, p->bias, p->ddst,
                                          p->iter);
      dnnl::vanilla_rnn_backward::primitive_desc bpd(bd, attr, engine(), fpd);
      fin_bwd(bpd);
      p->bwd = dnnl::vanilla_rnn_backward(bpd);
    }
  }
  return p;
}

std::shared_ptr<LayerPrims> get_prims(const Geom& g, int64_t In, bool training, const int64_t* src_st,
                                      const int64_t* ddst_st) {
  Key key{{g.mode, g.T, g.B, In, g.H, g.D, training, src_st ? src_st[0] : 0, src_st ? src_st[1] : 0,
           ddst_st ? ddst_st[0] : 0, ddst_st ? ddst_st[1] : 0}};
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<LayerPrims> p =
      build(g, In, training, src_st, ddst_st);  // outside the lock: creation takes a while
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= 256) c.map.clear();  // bounded; calls in flight keep theirs alive
  return c.map.emplace(key, p).first->second;
}

// oneDNN's gate block q holds Paddle's block perm(q): GRU's update gate comes first in oneDNN.
int64_t paddle_gate(Mode m, int64_t q) { return m == kGru && q < 2 ? 1 - q : q; }

// Paddle's W [G * H, In] is oneDNN's ldgoi layout of [1, 1, In, G, H] up to the gate order: direction d's
// gate blocks are copied into place, and oneDNN's reorders do the transposing.
void pack_weights(const Geom& g, const float* w, int64_t In, int64_t d, float* dst) {
  const int64_t G = dnnl_gates(g.mode), HI = g.H * In;
  for (int64_t q = 0; q < G; ++q) std::copy_n(w + paddle_gate(g.mode, q) * HI, HI, dst + (d * G + q) * HI);
}
// The reverse for gradients: adds direction d's (ldgoi) into Paddle's layout.
void unpack_weights(const Geom& g, const float* src, int64_t In, int64_t d, float* w) {
  const int64_t G = dnnl_gates(g.mode), HI = g.H * In;
  for (int64_t q = 0; q < G; ++q) {
    const float* s = src + (d * G + q) * HI;
    float* o = w + paddle_gate(g.mode, q) * HI;
    for (int64_t j = 0; j < HI; ++j) o[j] += s[j];
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
      db_ih[pq * H + h] += base[q * H + h];
      db_hh[pq * H + h] += apart ? base[3 * H + h] : base[q * H + h];
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

// One forward call of a primitive on plain buffers (weights in ldgoi, Paddle's layout, reordered here when
// the primitive wants another layout). ws: the workspace (training), or null.
struct FwdIO {
  const float *src, *h, *c;
  float *dst, *h_out, *c_out, *ws;
};
memory mem(const memory::desc& d, const float* p) { return memory(d, engine(), const_cast<float*>(p)); }

void exec_fwd(const LayerPrims& p, bool lstm, const float* wl, const float* wi, const float* bias,
              const FwdIO& io) {
  dnnl::stream& s = thread_stream();
  std::vector<Buffer> keep;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, mem(p.src, io.src)},
      {DNNL_ARG_SRC_ITER, mem(p.iter, io.h)},
      {DNNL_ARG_WEIGHTS_LAYER, as_layout(s, mem(p.wl_plain, wl), p.wl, keep)},
      {DNNL_ARG_WEIGHTS_ITER, as_layout(s, mem(p.wi_plain, wi), p.wi, keep)},
      {DNNL_ARG_BIAS, mem(p.bias, bias)},
      {DNNL_ARG_DST_LAYER, mem(p.dst, io.dst)},
      {DNNL_ARG_DST_ITER, mem(p.iter, io.h_out)}};
  if (lstm) {
    args.emplace(DNNL_ARG_SRC_ITER_C, mem(p.iter, io.c));
    args.emplace(DNNL_ARG_DST_ITER_C, mem(p.iter, io.c_out));
  }
  if (io.ws) args.emplace(DNNL_ARG_WORKSPACE, mem(p.ws, io.ws));
  Buffer scratch = buffer(p.scratch.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD, mem(p.scratch, scratch.get()));
  p.fwd.execute(s, args);
  s.wait();
}

// The backward of exec_fwd's call `f` (its inputs, outputs and workspace). dwl, dwi, dbias: plain
// (ldgoi / ldgo) buffers that receive this call's weight gradients (overwritten).
struct BwdIO {
  const float *ddst, *dh, *dc;
  float *dsrc, *dh_in, *dc_in, *dwl, *dwi, *dbias;
};
void exec_bwd(const LayerPrims& p, bool lstm, const float* wl, const float* wi, const float* bias,
              const FwdIO& f, const BwdIO& io) {
  dnnl::stream& s = thread_stream();
  std::vector<Buffer> keep;
  // oneDNN accumulates into the weight gradients: they start at zero.
  Buffer dwl = buffer(p.b_dwl.get_size()), dwi = buffer(p.b_dwi.get_size());
  std::memset(dwl.get(), 0, p.b_dwl.get_size());
  std::memset(dwi.get(), 0, p.b_dwi.get_size());
  std::memset(io.dbias, 0, p.bias.get_size());
  memory dwl_m(p.b_dwl, engine(), dwl.get()), dwi_m(p.b_dwi, engine(), dwi.get());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC_LAYER, mem(p.src, f.src)},
      {DNNL_ARG_SRC_ITER, mem(p.iter, f.h)},
      {DNNL_ARG_WEIGHTS_LAYER, as_layout(s, mem(p.wl_plain, wl), p.b_wl, keep)},
      {DNNL_ARG_WEIGHTS_ITER, as_layout(s, mem(p.wi_plain, wi), p.b_wi, keep)},
      {DNNL_ARG_BIAS, mem(p.bias, bias)},
      {DNNL_ARG_DST_LAYER, mem(p.dst, f.dst)},
      {DNNL_ARG_DST_ITER, mem(p.iter, f.h_out)},
      {DNNL_ARG_DIFF_DST_LAYER, mem(p.ddst, io.ddst)},
      {DNNL_ARG_DIFF_DST_ITER, mem(p.iter, io.dh)},
      {DNNL_ARG_DIFF_SRC_LAYER, mem(p.dsrc, io.dsrc)},
      {DNNL_ARG_DIFF_SRC_ITER, mem(p.iter, io.dh_in)},
      {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl_m},
      {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi_m},
      {DNNL_ARG_DIFF_BIAS, mem(p.bias, io.dbias)},
      {DNNL_ARG_WORKSPACE, mem(p.ws, f.ws)}};
  if (lstm) {
    args.emplace(DNNL_ARG_SRC_ITER_C, mem(p.iter, f.c));
    args.emplace(DNNL_ARG_DST_ITER_C, mem(p.iter, f.c_out));
    args.emplace(DNNL_ARG_DIFF_DST_ITER_C, mem(p.iter, io.dc));
    args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, mem(p.iter, io.dc_in));
  }
  Buffer scratch = buffer(p.b_scratch.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD, mem(p.b_scratch, scratch.get()));
  p.bwd.execute(s, args);
  memory pl = mem(p.wl_plain, io.dwl), pi = mem(p.wi_plain, io.dwi);
  dnnl::reorder(dwl_m, pl).execute(s, dwl_m, pl);  // also a plain copy when the layouts agree
  dnnl::reorder(dwi_m, pi).execute(s, dwi_m, pi);
  s.wait();
}

// The weights of the (layer, direction) pairs [k0, k0 + D) in ldgoi for one primitive. One direction
// without GRU's gate swap is Paddle's tensor itself: no copy (the primitive's reorder reads it).
struct Packed {
  Buffer wl_buf, wi_buf, bias;
  const float *wl = nullptr, *wi = nullptr;
};
bool plain_is_paddle(const Geom& g, int64_t D) { return D == 1 && g.mode != kGru; }
Packed pack(const Geom& g, const LayerPrims& p, const Ins& ins, int64_t In, int64_t k0, int64_t D) {
  auto in_ptr = [&](int64_t i) { return ins.get<float>(i); };
  Packed w;
  w.bias = buffer(p.bias.get_size());
  if (plain_is_paddle(g, D)) {
    w.wl = in_ptr(3 + 2 * k0);
    w.wi = in_ptr(4 + 2 * k0);
  } else {
    w.wl_buf = buffer(p.wl_plain.get_size());
    w.wi_buf = buffer(p.wi_plain.get_size());
    w.wl = w.wl_buf.get();
    w.wi = w.wi_buf.get();
  }
  for (int64_t d = 0; d < D; ++d) {
    const int64_t k = k0 + d;
    if (w.wl_buf) {
      pack_weights(g, in_ptr(3 + 2 * k), In, d, w.wl_buf.get());
      pack_weights(g, in_ptr(4 + 2 * k), g.H, d, w.wi_buf.get());
    }
    pack_bias(g, in_ptr(3 + 2 * g.cells + 2 * k), in_ptr(4 + 2 * g.cells + 2 * k), d, w.bias.get());
  }
  return w;
}
// Offsets of the WeightList tensors in the flat weight gradient (and its total at the end).
std::vector<int64_t> weight_offsets(const Geom& g, KernelContext& ctx) {
  std::vector<int64_t> off(static_cast<size_t>(g.n_w) + 1, 0);
  for (int64_t i = 0; i < g.n_w; ++i) off[i + 1] = off[i] + ctx.input(static_cast<int32_t>(3 + i)).numel();
  return off;
}
// Adds one call's plain weight gradients (directions [k0, k0 + D)) into dw (WeightList order, flat).
void unpack_grads(const Geom& g, KernelContext& ctx, int64_t In, int64_t k0, int64_t D, const float* dwl,
                  const float* dwi, const float* dbias, float* dw) {
  const std::vector<int64_t> off = weight_offsets(g, ctx);
  for (int64_t d = 0; d < D; ++d) {
    const int64_t k = k0 + d;
    unpack_weights(g, dwl, In, d, dw + off[2 * k]);
    unpack_weights(g, dwi, g.H, d, dw + off[2 * k + 1]);
    unpack_bias(g, dbias, d, dw + off[2 * g.cells + 2 * k], dw + off[2 * g.cells + 2 * k + 1]);
  }
}

// The whole stack through oneDNN, layer by layer, every sequence full. `training` (is_test 0): the
// forward runs forward_training and keeps, per layer, its workspace, output and final states in the
// reserve output, which the backward then reads; without a reserve of the expected size the backward
// runs the forward again first.
void onednn_rnn(const Geom& g, KernelContext& ctx, const Ins& ins, bool backward, bool training) {
  const int64_t H = g.H, D = g.D, SB = g.B * H, n_in = backward ? ctx.num_inputs() - 4 : ctx.num_inputs();
  const bool lstm = g.mode == kLstm, keep = backward || training;
  auto in_ptr = [&](int64_t i) { return ins.get<float>(i); };
  const float *x = in_ptr(0), *h0 = in_ptr(1), *c0 = in_ptr(2);
  struct Layer {
    std::shared_ptr<LayerPrims> p;
    Packed w;
    size_t ws, out, hn, cn;  // byte offsets in the reserve
  };
  std::vector<Layer> layers(static_cast<size_t>(g.L));
  size_t total = 0;
  auto take = [&](size_t bytes) {
    const size_t at = total;
    total += (bytes + 63) / 64 * 64;
    return at;
  };
  for (int64_t l = 0; l < g.L; ++l) {
    Layer& L = layers[l];
    // x's strides reach the first layer's source, the output gradient's the last layer's.
    L.p = get_prims(g, g.in_width(l), keep, l == 0 ? ins.x_st : nullptr,
                    backward && l == g.L - 1 ? ins.dout_st : nullptr);
    L.w = pack(g, *L.p, ins, g.in_width(l), l * D, D);
    L.ws = take(keep ? L.p->ws.get_size() : 0);
    L.out = take(L.p->dst.get_size());
    L.hn = take(static_cast<size_t>(D * SB) * sizeof(float));
    L.cn = take(static_cast<size_t>(D * SB) * sizeof(float));
  }
  uint8_t* res = nullptr;
  bool have = false;  // the backward found the forward's reserve
  if (!backward && training) {
    res = ctx.resize_output(3, {static_cast<int64_t>(total)}).data<uint8_t>();
  } else if (backward && static_cast<size_t>(ctx.input(static_cast<int32_t>(n_in)).numel()) == total) {
    res = const_cast<uint8_t*>(ins.get<uint8_t>(n_in));
    have = true;
  }
  Buffer local;
  if (!res) {
    local = buffer(total);
    res = reinterpret_cast<uint8_t*>(local.get());
  }
  auto at = [&](size_t off) { return reinterpret_cast<float*>(res + off); };
  if (!have)
    for (int64_t l = 0; l < g.L; ++l) {
      const Layer& L = layers[l];
      const float* in = l == 0 ? x : at(layers[l - 1].out);
      exec_fwd(
          *L.p, lstm, L.w.wl, L.w.wi, L.w.bias.get(),
          {in, h0 + l * D * SB, c0 + l * D * SB, at(L.out), at(L.hn), at(L.cn), keep ? at(L.ws) : nullptr});
    }
  if (!backward) {
    const Layer& top = layers.back();
    std::copy_n(at(top.out), ctx.output(0).numel(), ctx.output(0).data<float>());
    for (int64_t l = 0; l < g.L; ++l) {
      std::copy_n(at(layers[l].hn), D * SB, ctx.output(1).data<float>() + l * D * SB);
      if (lstm) std::copy_n(at(layers[l].cn), D * SB, ctx.output(2).data<float>() + l * D * SB);
    }
    if (!lstm) std::fill_n(ctx.output(2).data<float>(), ctx.output(2).numel(), 0.f);
    return;
  }
  const int64_t n = ctx.num_inputs() - 3;  // the output gradients are the last three inputs
  const float *gout = in_ptr(n), *ghn = in_ptr(n + 1), *gcn = in_ptr(n + 2);
  float* dw = ctx.output(3).data<float>();
  // Weight gradients in Paddle's layout come straight out of the primitive's reorder (one call per
  // layer writes each block once); otherwise they are unpacked and added. Biases are always added.
  const bool direct = plain_is_paddle(g, D);
  const std::vector<int64_t> off = weight_offsets(g, ctx);
  std::fill(dw + (direct ? off[2 * g.cells] : 0), dw + off.back(), 0.f);
  float *dh0 = ctx.output(1).data<float>(), *dc0 = ctx.output(2).data<float>();
  if (!lstm) std::fill(dc0, dc0 + g.cells * SB, 0.f);
  Buffer dlayer;  // the gradient of the current layer's output
  const float* dtop = gout;
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const Layer& L = layers[l];
    const LayerPrims& p = *L.p;
    const int64_t In = g.in_width(l);
    Buffer din_buf;
    float* din = l == 0 ? ctx.output(0).data<float>() : nullptr;
    if (!din) {
      din_buf = buffer(p.dsrc.get_size());
      din = din_buf.get();
    }
    Buffer dwl, dwi, dbias = buffer(p.bias.get_size());
    if (!direct) dwl = buffer(p.wl_plain.get_size()), dwi = buffer(p.wi_plain.get_size());
    const float* in = l == 0 ? x : at(layers[l - 1].out);
    std::vector<float> dc_unused(lstm ? 0 : static_cast<size_t>(D * SB));
    exec_bwd(p, lstm, L.w.wl, L.w.wi, L.w.bias.get(),
             {in, h0 + l * D * SB, c0 + l * D * SB, at(L.out), at(L.hn), at(L.cn), at(L.ws)},
             {dtop, ghn + l * D * SB, gcn + l * D * SB, din, dh0 + l * D * SB,
              lstm ? dc0 + l * D * SB : dc_unused.data(), direct ? dw + off[2 * l] : dwl.get(),
              direct ? dw + off[2 * l + 1] : dwi.get(), dbias.get()});
    if (direct)
      unpack_bias(g, dbias.get(), 0, dw + off[2 * g.cells + 2 * l], dw + off[2 * g.cells + 2 * l + 1]);
    else
      unpack_grads(g, ctx, In, l * D, D, dwl.get(), dwi.get(), dbias.get(), dw);
    dlayer = std::move(din_buf);
    dtop = dlayer.get();
  }
}

// Sequences of different lengths through oneDNN, which has no masking. The batch is sorted by length,
// longest first, so the sequences still running at any step are a prefix of it; time is cut where a
// sequence ends, and each piece runs as one primitive call on that prefix, its initial state the state the
// previous piece left (so a finished sequence's rows keep its final state). The reverse direction runs as
// a forward pass over each sequence reversed within its length (it starts at the sequence's last step),
// then its outputs are put back in place. Outputs past a length are zero. Backward walks the pieces in
// reverse with the state gradients carried the same way; each piece's weight gradients are summed.
void onednn_masked(const Geom& g, KernelContext& ctx, const Ins& ins, bool backward) {
  const int64_t T = g.T, B = g.B, H = g.H, D = g.D, SB = B * H;
  const bool lstm = g.mode == kLstm;
  auto in_ptr = [&](int64_t i) { return ins.get<float>(i); };
  std::vector<int64_t> perm(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return g.len[a] > g.len[b]; });
  std::vector<int64_t> ls(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i) ls[i] = g.len[perm[i]];
  struct Piece {
    int64_t t0, t1, n;
  };
  std::vector<Piece> pieces;
  for (int64_t i = B - 1, t0 = 0; i >= 0; --i)
    if (ls[i] > t0) {
      pieces.push_back({t0, ls[i], i + 1});
      t0 = ls[i];
    }
  // The step of sorted sequence i that direction d processes at its s-th step.
  auto step = [&](int64_t d, int64_t i, int64_t s) { return d == 0 ? s : ls[i] - 1 - s; };
  // Rows in sorted order: [T, B, w] and [cells, B, H] tensors.
  auto permute = [&](const float* src, int64_t rows, int64_t w) {
    std::vector<float> r(static_cast<size_t>(rows * B * w));
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < B; ++i) std::copy_n(src + (t * B + perm[i]) * w, w, r.data() + (t * B + i) * w);
    return r;
  };
  auto unpermute = [&](const float* src, int64_t rows, int64_t w, float* dst) {
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t i = 0; i < B; ++i) std::copy_n(src + (t * B + i) * w, w, dst + (t * B + perm[i]) * w);
  };
  struct Saved {
    std::shared_ptr<LayerPrims> p;
    std::vector<float> src, h, c, dst, h_out, c_out;
    Buffer ws;
  };
  std::vector<std::vector<Saved>> saved(static_cast<size_t>(backward ? g.cells : 0));
  std::vector<Packed> packed(static_cast<size_t>(g.cells));
  std::vector<std::vector<float>> layer_in(static_cast<size_t>(g.L + 1));
  layer_in[0] = permute(in_ptr(0), T, g.I);
  const std::vector<float> h0 = permute(in_ptr(1), g.cells, H), c0 = permute(in_ptr(2), g.cells, H);
  std::vector<float> hn(h0), cn(lstm ? c0 : std::vector<float>(g.cells * SB, 0.f));
  Geom sg = g;
  sg.D = 1;
  for (int64_t l = 0; l < g.L; ++l) {
    const int64_t In = g.in_width(l);
    const float* X = layer_in[l].data();
    std::vector<float>& out = layer_in[l + 1];
    out.assign(static_cast<size_t>(T * B * D * H), 0.f);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d;
      float *h = hn.data() + k * SB, *c = cn.data() + k * SB;
      for (const Piece& pc : pieces) {
        sg.T = pc.t1 - pc.t0;
        sg.B = pc.n;
        Saved sv;
        sv.p = get_prims(sg, In, backward, nullptr, nullptr);
        const LayerPrims& p = *sv.p;
        if (!packed[k].bias) packed[k] = pack(g, p, ins, In, k, 1);
        sv.src.resize(static_cast<size_t>(sg.T * pc.n * In));
        for (int64_t s = pc.t0; s < pc.t1; ++s)
          for (int64_t i = 0; i < pc.n; ++i)
            std::copy_n(X + (step(d, i, s) * B + i) * In, In, sv.src.data() + ((s - pc.t0) * pc.n + i) * In);
        sv.h.assign(h, h + pc.n * H);
        sv.c.assign(c, c + pc.n * H);
        sv.dst.resize(static_cast<size_t>(sg.T * pc.n * H));
        sv.h_out.resize(static_cast<size_t>(pc.n * H));
        sv.c_out.resize(static_cast<size_t>(pc.n * H));
        if (backward) sv.ws = buffer(p.ws.get_size());
        exec_fwd(p, lstm, packed[k].wl, packed[k].wi, packed[k].bias.get(),
                 {sv.src.data(), sv.h.data(), sv.c.data(), sv.dst.data(), sv.h_out.data(), sv.c_out.data(),
                  sv.ws.get()});
        for (int64_t s = pc.t0; s < pc.t1; ++s)
          for (int64_t i = 0; i < pc.n; ++i)
            std::copy_n(sv.dst.data() + ((s - pc.t0) * pc.n + i) * H, H,
                        out.data() + (step(d, i, s) * B + i) * D * H + d * H);
        std::copy(sv.h_out.begin(), sv.h_out.end(), h);
        if (lstm) std::copy(sv.c_out.begin(), sv.c_out.end(), c);
        if (backward) saved[k].push_back(std::move(sv));
      }
    }
  }
  if (!backward) {
    unpermute(layer_in[g.L].data(), T, D * H, ctx.output(0).data<float>());
    unpermute(hn.data(), g.cells, H, ctx.output(1).data<float>());
    unpermute(cn.data(), g.cells, H, ctx.output(2).data<float>());
    return;
  }
  const int64_t n = ctx.num_inputs() - 3;
  std::vector<float> dtop = permute(in_ptr(n), T, D * H);
  std::vector<float> dh = permute(in_ptr(n + 1), g.cells, H), dc = permute(in_ptr(n + 2), g.cells, H);
  if (!lstm) std::fill(dc.begin(), dc.end(), 0.f);
  float* dw = ctx.output(3).data<float>();
  std::fill(dw, dw + ctx.output(3).numel(), 0.f);
  std::vector<float> din;
  for (int64_t l = g.L - 1; l >= 0; --l) {
    const int64_t In = g.in_width(l);
    din.assign(static_cast<size_t>(T * B * In), 0.f);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = l * D + d;
      float *dhk = dh.data() + k * SB, *dck = dc.data() + k * SB;
      for (size_t j = pieces.size(); j-- > 0;) {
        const Piece& pc = pieces[j];
        Saved& sv = saved[k][j];
        const LayerPrims& p = *sv.p;
        const int64_t Ts = pc.t1 - pc.t0, nH = pc.n * H;
        std::vector<float> ddst(static_cast<size_t>(Ts * nH)), dsrc(static_cast<size_t>(Ts * pc.n * In));
        for (int64_t s = pc.t0; s < pc.t1; ++s)
          for (int64_t i = 0; i < pc.n; ++i)
            std::copy_n(dtop.data() + (step(d, i, s) * B + i) * D * H + d * H, H,
                        ddst.data() + ((s - pc.t0) * pc.n + i) * H);
        std::vector<float> dh_out(dhk, dhk + nH), dc_out(dck, dck + nH);
        Buffer dwl = buffer(p.wl_plain.get_size()), dwi = buffer(p.wi_plain.get_size()),
               dbias = buffer(p.bias.get_size());
        exec_bwd(p, lstm, packed[k].wl, packed[k].wi, packed[k].bias.get(),
                 {sv.src.data(), sv.h.data(), sv.c.data(), sv.dst.data(), sv.h_out.data(), sv.c_out.data(),
                  sv.ws.get()},
                 {ddst.data(), dh_out.data(), dc_out.data(), dsrc.data(), dhk, dck, dwl.get(), dwi.get(),
                  dbias.get()});
        unpack_grads(g, ctx, In, k, 1, dwl.get(), dwi.get(), dbias.get(), dw);
        for (int64_t s = pc.t0; s < pc.t1; ++s)
          for (int64_t i = 0; i < pc.n; ++i) {
            const float* src = dsrc.data() + ((s - pc.t0) * pc.n + i) * In;
            float* o = din.data() + (step(d, i, s) * B + i) * In;
            for (int64_t q = 0; q < In; ++q) o[q] += src[q];
          }
      }
    }
    dtop.swap(din);
  }
  unpermute(dtop.data(), T, g.I, ctx.output(0).data<float>());
  unpermute(dh.data(), g.cells, H, ctx.output(1).data<float>());
  if (lstm)
    unpermute(dc.data(), g.cells, H, ctx.output(2).data<float>());
  else
    std::fill(ctx.output(2).data<float>(), ctx.output(2).data<float>() + g.cells * SB, 0.f);
}

void run(KernelContext& ctx, bool backward) {
  const int32_t n_in = backward ? ctx.num_inputs() - 4 : ctx.num_inputs();
  Ins ins = read_inputs(ctx, backward);
  Geom g = make_geom(ctx, ins, n_in);
  const bool f32 = ctx.input(0).dtype() == OAR_DTYPE_FLOAT32, onednn = f32 && g.T > 0 && g.B > 0;
  settle_strided(ctx, ins, onednn && g.len.empty());
  if (f32) {
    if (onednn) {
      try {
        if (g.len.empty())
          onednn_rnn(g, ctx, ins, backward, ctx.attr_int("is_test") == 0);
        else
          onednn_masked(g, ctx, ins, backward);
        return;
      } catch (const dnnl::error& e) {
        throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("rnn: oneDNN failed: ") + e.what(),
                              static_cast<int64_t>(e.status));
      }
    }
    loop_rnn<float>(g, ctx, ins, backward);
  } else {
    loop_rnn<double>(g, ctx, ins, backward);
  }
}

void rnn_kernel(KernelContext& ctx) { run(ctx, false); }
void rnn_grad_kernel(KernelContext& ctx) { run(ctx, true); }

}  // namespace

void register_rnn_kernels(Registry& r) {
  // Strided inputs: x and the output gradient of a batch-major layer are transposed views (Ins).
  r.add("rnn", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &rnn_kernel, OAR_KERNEL_STRIDED_INPUTS);
  r.add("rnn_grad", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &rnn_grad_kernel, OAR_KERNEL_STRIDED_INPUTS);
}

}  // namespace oar_cpu
