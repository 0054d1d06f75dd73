// CPU kernels of the conv op family (framework/src/ops_conv.cc defines the ops).
//
// conv / conv_grad_input / conv_grad_filter: float32 through oneDNN (forward, backward-data and
// backward-weights primitives, created once per problem and cached; oneDNN picks its preferred
// blocked layouts and we reorder in and out, as PyTorch does), bfloat16/float16 through oneDNN's 16-bit
// primitives where this CPU has them (else the float32 path, converted in and out a vector at a time),
// float64 (oneDNN has none) and any problem oneDNN refuses through direct loops.
// Pooling, interpolation, unfold/fold and grid_sample: loops parallel over the N*C planes, so every
// backward kernel scatters into its own plane without races. Inputs arrive contiguous.
#include <cmath>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

// ---- convolution geometry ----------------------------------------------------------------------
// Spatial dims are padded to 3 at the front (size 1, kernel 1, stride 1, no padding).
struct Geom {
  int nd = 0;
  int64_t N = 0, Cin = 0, Cout = 0, G = 1;
  int64_t in[3], out[3], k[3], s[3], pb[3], pe[3], d[3];
  int64_t cin_g() const { return Cin / G; }
  int64_t cout_g() const { return Cout / G; }
  int64_t in_sz() const { return in[0] * in[1] * in[2]; }
  int64_t out_sz() const { return out[0] * out[1] * out[2]; }
  int64_t k_sz() const { return k[0] * k[1] * k[2]; }
};

// x, w, y: the shapes of the convolution's input, weight and output.
Geom make_geom(const KernelContext& ctx, const int64_t* x, const int64_t* w, const int64_t* y, int ndim) {
  Geom g;
  g.nd = ndim - 2;
  g.N = x[0], g.Cin = x[1], g.Cout = w[0];
  g.G = ctx.attr_int("groups");
  std::vector<int64_t> s = ctx.attr_ints("strides"), p = ctx.attr_ints("paddings"),
                       d = ctx.attr_ints("dilations");
  const int off = 3 - g.nd;
  for (int i = 0; i < 3; ++i) {
    const int j = i - off;
    const bool real = j >= 0;
    g.in[i] = real ? x[2 + j] : 1;
    g.out[i] = real ? y[2 + j] : 1;
    g.k[i] = real ? w[2 + j] : 1;
    g.s[i] = real ? s[j] : 1;
    g.pb[i] = real ? p[2 * j] : 0;
    g.pe[i] = real ? p[2 * j + 1] : 0;
    g.d[i] = real ? d[j] : 1;
  }
  return g;
}

// ---- direct loops (float64, and the fallback) ---------------------------------------------------
template <class T>
using acc_t = oar::sdk::compute_t<T>;

template <class T>
void loop_conv_fwd(const Geom& g, const T* x, const T* w, T* y) {
  parallel_for(0, g.N * g.Cout, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t nc = lo; nc < hi; ++nc) {
      const int64_t n = nc / g.Cout, co = nc % g.Cout, grp = co / g.cout_g();
      T* yp = y + nc * g.out_sz();
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            acc_t<T> acc = 0;
            for (int64_t ci = 0; ci < g.cin_g(); ++ci) {
              const T* xp = x + (n * g.Cin + grp * g.cin_g() + ci) * g.in_sz();
              const T* wp = w + (co * g.cin_g() + ci) * g.k_sz();
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    acc += acc_t<T>(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]) *
                           acc_t<T>(wp[(k0 * g.k[1] + k1) * g.k[2] + k2]);
                  }
                }
              }
            }
            yp[(o0 * g.out[1] + o1) * g.out[2] + o2] = T(acc);
          }
    }
  });
}

// dx[n, ci] = sum over the group's co, outputs and taps of gy * w; each (n, ci) plane is one task.
template <class T>
void loop_conv_bwd_data(const Geom& g, const T* gy, const T* w, T* dx) {
  parallel_for(0, g.N * g.Cin, 1, [&](int64_t lo, int64_t hi) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(g.in_sz()));
    for (int64_t nc = lo; nc < hi; ++nc) {
      const int64_t n = nc / g.Cin, ci = nc % g.Cin, grp = ci / g.cin_g(), cig = ci % g.cin_g();
      std::fill(acc.begin(), acc.end(), acc_t<T>(0));
      for (int64_t cog = 0; cog < g.cout_g(); ++cog) {
        const int64_t co = grp * g.cout_g() + cog;
        const T* gp = gy + (n * g.Cout + co) * g.out_sz();
        const T* wp = w + (co * g.cin_g() + cig) * g.k_sz();
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              const acc_t<T> gv = acc_t<T>(gp[(o0 * g.out[1] + o1) * g.out[2] + o2]);
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    acc[(i0 * g.in[1] + i1) * g.in[2] + i2] +=
                        gv * acc_t<T>(wp[(k0 * g.k[1] + k1) * g.k[2] + k2]);
                  }
                }
              }
            }
      }
      T* dp = dx + nc * g.in_sz();
      for (int64_t i = 0; i < g.in_sz(); ++i) dp[i] = T(acc[i]);
    }
  });
}

// dw[co, ci, k] = sum over n and outputs of gy * x; each (co, ci) filter is one task.
template <class T>
void loop_conv_bwd_weights(const Geom& g, const T* x, const T* gy, T* dw) {
  parallel_for(0, g.Cout * g.cin_g(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t oc = lo; oc < hi; ++oc) {
      const int64_t co = oc / g.cin_g(), cig = oc % g.cin_g(), grp = co / g.cout_g();
      T* wp = dw + oc * g.k_sz();
      for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
          for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
            acc_t<T> acc = 0;
            for (int64_t n = 0; n < g.N; ++n) {
              const T* xp = x + (n * g.Cin + grp * g.cin_g() + cig) * g.in_sz();
              const T* gp = gy + (n * g.Cout + co) * g.out_sz();
              for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
                const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
                  const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    acc += acc_t<T>(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]) *
                           acc_t<T>(gp[(o0 * g.out[1] + o1) * g.out[2] + o2]);
                  }
                }
              }
            }
            wp[(k0 * g.k[1] + k1) * g.k[2] + k2] = T(acc);
          }
    }
  });
}

// ---- oneDNN -------------------------------------------------------------------------------------
using dnnl::memory;
enum Kind { kFwd = 0, kBwdData = 1, kBwdWeights = 2 };

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, AlignedFree>;
Buffer aligned_buffer(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) throw std::bad_alloc();
  return Buffer(p);
}

// One argument of a cached primitive: the plain layout the caller holds and the one the primitive
// wants; a reorder between them when they differ.
struct Arg {
  int id;
  bool input;
  memory::desc user, prim;
  bool reorder = false;
  dnnl::reorder re;
};

struct Prim {
  dnnl::primitive prim;
  Arg args[3];
  memory::desc scratch;
  size_t scratch_bytes = 0;
};

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};
struct Cache {
  std::mutex mu;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<Prim>, VecHash> map;  // nullptr: not supported
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no destructor ordering issues at exit
  return *c;
}

memory::dims sp(const Geom& g, const int64_t* v) { return memory::dims(v + 3 - g.nd, v + 3); }
memory::dims cat(memory::dims a, const memory::dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void finish_arg(Arg& a, const memory::desc& prim) {
  a.prim = prim;
  if (a.prim != a.user) {
    a.reorder = true;
    a.re = a.input ? dnnl::reorder(dnnl::reorder::primitive_desc(engine(), a.user, engine(), a.prim))
                   : dnnl::reorder(dnnl::reorder::primitive_desc(engine(), a.prim, engine(), a.user));
  }
}

// dt: the data type of all three tensors (float32, or bfloat16/float16 with float32 accumulation).
std::shared_ptr<Prim> build(const Geom& g, Kind kind, memory::data_type dt) {
  const auto any = memory::format_tag::any;
  memory::format_tag act_tag = g.nd == 1   ? memory::format_tag::ncw
                               : g.nd == 2 ? memory::format_tag::nchw
                                           : memory::format_tag::ncdhw;
  memory::format_tag wei_tag = g.G > 1 ? (g.nd == 1   ? memory::format_tag::goiw
                                          : g.nd == 2 ? memory::format_tag::goihw
                                                      : memory::format_tag::goidhw)
                                       : (g.nd == 1   ? memory::format_tag::oiw
                                          : g.nd == 2 ? memory::format_tag::oihw
                                                      : memory::format_tag::oidhw);
  memory::dims src_d = cat({g.N, g.Cin}, sp(g, g.in)), dst_d = cat({g.N, g.Cout}, sp(g, g.out));
  memory::dims wei_d =
      g.G > 1 ? cat({g.G, g.cout_g(), g.cin_g()}, sp(g, g.k)) : cat({g.Cout, g.Cin}, sp(g, g.k));
  memory::dims strides = sp(g, g.s), pl = sp(g, g.pb), dil, pr;
  for (int i = 3 - g.nd; i < 3; ++i) {
    dil.push_back(g.d[i] - 1);
    // The op's own end padding: the sizes are consistent with it under floor division, which also
    // covers output_padding (a transposed conv's extra rows are never reached).
    pr.push_back(g.pe[i]);
  }
  memory::desc src_a(src_d, dt, any), wei_a(wei_d, dt, any), dst_a(dst_d, dt, any);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: safe for concurrent calls
  auto p = std::make_shared<Prim>();
  const auto algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, algo, src_a, wei_a, dst_a, strides,
                                     dil, pl, pr);
  dnnl::convolution_forward::primitive_desc fpd(fd, attr, engine());
  // 16-bit: oneDNN's kernels only where they beat the float32 path (lowp.h, use_native_lowp).
  auto slower = [](const char* impl) { return !use_native_lowp(impl); };
  if (dt != memory::data_type::f32 && slower(fpd.impl_info_str())) return nullptr;
  memory::desc src_u(src_d, dt, act_tag), wei_u(wei_d, dt, wei_tag), dst_u(dst_d, dt, act_tag);
  if (kind == kFwd) {
    p->args[0] = {DNNL_ARG_SRC, true, src_u, {}};
    p->args[1] = {DNNL_ARG_WEIGHTS, true, wei_u, {}};
    p->args[2] = {DNNL_ARG_DST, false, dst_u, {}};
    finish_arg(p->args[0], fpd.src_desc());
    finish_arg(p->args[1], fpd.weights_desc());
    finish_arg(p->args[2], fpd.dst_desc());
    p->scratch = fpd.scratchpad_desc();
    p->prim = dnnl::convolution_forward(fpd);
  } else if (kind == kBwdData) {
    dnnl::convolution_backward_data::desc bd(algo, src_a, wei_a, dst_a, strides, dil, pl, pr);
    dnnl::convolution_backward_data::primitive_desc bpd(bd, attr, engine(), fpd);
    if (dt != memory::data_type::f32 && slower(bpd.impl_info_str())) return nullptr;
    p->args[0] = {DNNL_ARG_DIFF_DST, true, dst_u, {}};
    p->args[1] = {DNNL_ARG_WEIGHTS, true, wei_u, {}};
    p->args[2] = {DNNL_ARG_DIFF_SRC, false, src_u, {}};
    finish_arg(p->args[0], bpd.diff_dst_desc());
    finish_arg(p->args[1], bpd.weights_desc());
    finish_arg(p->args[2], bpd.diff_src_desc());
    p->scratch = bpd.scratchpad_desc();
    p->prim = dnnl::convolution_backward_data(bpd);
  } else {
    dnnl::convolution_backward_weights::desc bd(algo, src_a, wei_a, dst_a, strides, dil, pl, pr);
    dnnl::convolution_backward_weights::primitive_desc bpd(bd, attr, engine(), fpd);
    if (dt != memory::data_type::f32 && slower(bpd.impl_info_str())) return nullptr;
    p->args[0] = {DNNL_ARG_SRC, true, src_u, {}};
    p->args[1] = {DNNL_ARG_DIFF_DST, true, dst_u, {}};
    p->args[2] = {DNNL_ARG_DIFF_WEIGHTS, false, wei_u, {}};
    finish_arg(p->args[0], bpd.src_desc());
    finish_arg(p->args[1], bpd.diff_dst_desc());
    finish_arg(p->args[2], bpd.diff_weights_desc());
    p->scratch = bpd.scratchpad_desc();
    p->prim = dnnl::convolution_backward_weights(bpd);
  }
  p->scratch_bytes = p->scratch.get_size();
  return p;
}

std::shared_ptr<Prim> get_prim(const Geom& g, Kind kind, memory::data_type dt) {
  std::vector<int64_t> key{kind, static_cast<int64_t>(dt), g.nd, g.N, g.Cin, g.Cout, g.G};
  for (const int64_t* a : {g.in, g.out, g.k, g.s, g.pb, g.pe, g.d}) key.insert(key.end(), a, a + 3);
  key.push_back(oar::sdk::max_threads());  // the OpenMP count it is created for (adapt_threads)
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<Prim> p;
  try {  // built outside the lock: creation can take milliseconds
    p = build(g, kind, dt);
  } catch (const dnnl::error&) {
    p = nullptr;  // e.g. a negative right padding oneDNN refuses: the loop handles it
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= 512) c.map.clear();  // bounded; calls in flight keep theirs alive
  return c.map.emplace(key, p).first->second;
}

// Runs a cached primitive on plain buffers of type dt, a and b (inputs) and c (output); false when
// oneDNN has no primitive for the problem.
bool onednn_conv(const Geom& g, Kind kind, memory::data_type dt, const void* a, const void* b, void* c) {
  try {
    auto p = get_prim(g, kind, dt);
    if (!p) return false;
    dnnl::stream& s = thread_stream();
    std::unordered_map<int, memory> args;
    Buffer bufs[3];
    void* user[3] = {const_cast<void*>(a), const_cast<void*>(b), c};
    memory out_user;
    for (int i = 0; i < 3; ++i) {
      Arg& arg = p->args[i];
      memory um(arg.user, engine(), user[i]);
      if (!arg.reorder) {
        args.emplace(arg.id, um);
        continue;
      }
      bufs[i] = aligned_buffer(arg.prim.get_size());
      memory pm(arg.prim, engine(), bufs[i].get());
      if (arg.input)
        arg.re.execute(s, um, pm);
      else
        out_user = um;
      args.emplace(arg.id, pm);
    }
    Buffer scratch;
    if (p->scratch_bytes) {
      scratch = aligned_buffer(p->scratch_bytes);
      args.emplace(DNNL_ARG_SCRATCHPAD, memory(p->scratch, engine(), scratch.get()));
    }
    p->prim.execute(s, args);
    if (p->args[2].reorder) p->args[2].re.execute(s, args.at(p->args[2].id), out_user);
    s.wait();
    return true;
  } catch (const dnnl::error& e) {
    throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("conv: oneDNN failed: ") + e.what(),
                          static_cast<int64_t>(e.status));
  }
}

template <class T>
void run_loop(const Geom& g, Kind kind, const T* a, const T* b, T* c) {
  if (kind == kFwd)
    loop_conv_fwd(g, a, b, c);
  else if (kind == kBwdData)
    loop_conv_bwd_data(g, a, b, c);
  else
    loop_conv_bwd_weights(g, a, b, c);
}

// The shared body: a, b are the op's inputs, c its output; `kind` says which of the three.
void conv_common(KernelContext& ctx, Kind kind, const char* op) {
  TensorView a = ctx.input(0), b = ctx.input(1), c = ctx.output(0);
  OAR_SDK_CHECK(a.dtype() == b.dtype(), OAR_ERR_TYPE, op << ": inputs have different dtypes");
  // Which shape is x, w, y.
  const TensorView& x = kind == kFwd ? a : kind == kBwdData ? c : a;
  const TensorView& w = kind == kFwd ? b : kind == kBwdData ? b : c;
  const TensorView& y = kind == kFwd ? c : kind == kBwdData ? a : b;
  Geom g = make_geom(ctx, x.dims(), w.dims(), y.dims(), x.ndim());
  if (c.numel() == 0) return;
  if (a.numel() == 0 || b.numel() == 0) {  // empty contraction: zeros
    dispatch<FloatType>(op, c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      std::fill(c.data<T>(), c.data<T>() + c.numel(), T(0));
    });
    return;
  }
  dispatch<FloatType>(op, a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const auto f32 = memory::data_type::f32;
    if constexpr (std::is_same_v<T, float>) {
      if (onednn_conv(g, kind, f32, a.data<float>(), b.data<float>(), c.data<float>())) return;
      run_loop<float>(g, kind, a.data<float>(), b.data<float>(), c.data<float>());
    } else if constexpr (std::is_same_v<T, double>) {
      run_loop<double>(g, kind, a.data<double>(), b.data<double>(), c.data<double>());
    } else {  // 16-bit floats: oneDNN's 16-bit primitives (float32 accumulation) where it has them
      constexpr auto dt =
          std::is_same_v<T, oar::sdk::bfloat16> ? memory::data_type::bf16 : memory::data_type::f16;
      if (onednn_conv(g, kind, dt, a.data<T>(), b.data<T>(), c.data<T>())) return;
      // else float32 in, float32 out, converted a vector at a time
      const AsF32<T> fa(0, a.data<T>(), a.numel()), fb(1, b.data<T>(), b.numel());
      const F32Buffer fc(2, c.numel());
      if (!onednn_conv(g, kind, f32, fa.data(), fb.data(), fc.data()))
        run_loop<float>(g, kind, fa.data(), fb.data(), fc.data());
      store_f32(fc.data(), c.data<T>(), c.numel());
    }
  });
}

void conv_kernel(KernelContext& ctx) { conv_common(ctx, kFwd, "conv"); }
void conv_grad_input_kernel(KernelContext& ctx) { conv_common(ctx, kBwdData, "conv_grad_input"); }
void conv_grad_filter_kernel(KernelContext& ctx) { conv_common(ctx, kBwdWeights, "conv_grad_filter"); }

// ---- pooling --------------------------------------------------------------------------------------
// Per spatial dim (padded to 3), per output index: the input window [start, end) clipped to the
// input, and the divisor a non-exclusive average uses (the kernel size).
struct Pool {
  int64_t planes = 0, in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  std::vector<int64_t> start[3], end[3];
  int64_t in_sz() const { return in[0] * in[1] * in[2]; }
  int64_t out_sz() const { return out[0] * out[1] * out[2]; }
};

// x: the pooled input's shape, y: the output's (both [N, C, spatial...]).
Pool make_pool(const KernelContext& ctx, const int64_t* x, const int64_t* y, int ndim) {
  Pool p;
  const int nd = ndim - 2, off = 3 - nd;
  p.planes = x[0] * x[1];
  bool adaptive = ctx.attr_int("adaptive") != 0;
  std::vector<int64_t> k = ctx.attr_ints("kernel_size"), s, pad;
  if (!adaptive) s = ctx.attr_ints("strides"), pad = ctx.attr_ints("paddings");
  for (int i = 0; i < 3; ++i) {
    p.start[i].assign(1, 0);
    p.end[i].assign(1, 1);
  }
  for (int j = 0; j < nd; ++j) {
    const int i = j + off;
    const int64_t L = x[2 + j], O = y[2 + j];
    p.in[i] = L, p.out[i] = O;
    p.k[i] = adaptive ? 1 : k[j];
    p.start[i].resize(O);
    p.end[i].resize(O);
    for (int64_t o = 0; o < O; ++o) {
      int64_t b, e;
      if (adaptive) {
        b = (o * L) / O;
        e = ((o + 1) * L + O - 1) / O;
      } else {
        b = o * s[j] - pad[2 * j];
        e = std::min(b + k[j], L);
        b = std::max<int64_t>(b, 0);
      }
      p.start[i][o] = b;
      p.end[i][o] = std::max(b, e);
    }
  }
  return p;
}

template <class Fn>
void for_windows(const Pool& p, Fn&& fn) {  // fn(output offset, b0, e0, b1, e1, b2, e2)
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
      for (int64_t o2 = 0; o2 < p.out[2]; ++o2)
        fn((o0 * p.out[1] + o1) * p.out[2] + o2, p.start[0][o0], p.end[0][o0], p.start[1][o1], p.end[1][o1],
           p.start[2][o2], p.end[2][o2]);
}

void max_pool_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.output(0), m = ctx.output(1);
  Pool p = make_pool(ctx, x.dims(), y.dims(), x.ndim());
  int32_t* mask = m.data<int32_t>();
  dispatch<FloatType>("max_pool", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(0, p.planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t pl = lo; pl < hi; ++pl) {
        const T* xp = px + pl * p.in_sz();
        T* yp = py + pl * p.out_sz();
        int32_t* mp = mask + pl * p.out_sz();
        for_windows(p,
                    [&](int64_t o, int64_t b0, int64_t e0, int64_t b1, int64_t e1, int64_t b2, int64_t e2) {
                      A best = -std::numeric_limits<A>::infinity();
                      // The first element of the window wins ties and an all -inf window.
                      int64_t arg = b0 < e0 && b1 < e1 && b2 < e2 ? (b0 * p.in[1] + b1) * p.in[2] + b2 : -1;
                      for (int64_t i0 = b0; i0 < e0; ++i0)
                        for (int64_t i1 = b1; i1 < e1; ++i1) {
                          const int64_t row = (i0 * p.in[1] + i1) * p.in[2];
                          const T* xr = xp + row;
                          for (int64_t i2 = b2; i2 < e2; ++i2) {
                            const A v = A(xr[i2]);
                            if (!(v <= best)) {  // larger, or NaN (which then stays)
                              best = v, arg = row + i2;
                              if (v != v) goto done;
                            }
                          }
                        }
                    done:
                      yp[o] = T(best);
                      mp[o] = static_cast<int32_t>(arg);
                    });
      }
    });
  });
}

void max_pool_grad_kernel(KernelContext& ctx) {
  TensorView g = ctx.input(0), m = ctx.input(1), dx = ctx.output(0);
  const int64_t planes = dx.dim(0) * dx.dim(1), in_sz = dx.numel() / std::max<int64_t>(planes, 1),
                out_sz = g.numel() / std::max<int64_t>(planes, 1);
  const int32_t* mask = m.data<int32_t>();
  dispatch<FloatType>("max_pool_grad", g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data<T>();
    T* pd = dx.data<T>();
    parallel_for(0, planes, 1, [&](int64_t lo, int64_t hi) {
      std::vector<acc_t<T>> acc(static_cast<size_t>(in_sz));
      for (int64_t pl = lo; pl < hi; ++pl) {
        std::fill(acc.begin(), acc.end(), acc_t<T>(0));
        for (int64_t o = 0; o < out_sz; ++o) {
          const int32_t at = mask[pl * out_sz + o];
          if (at >= 0 && at < in_sz) acc[at] += acc_t<T>(pg[pl * out_sz + o]);
        }
        for (int64_t i = 0; i < in_sz; ++i) pd[pl * in_sz + i] = T(acc[i]);
      }
    });
  });
}

// The divisor of one window: divisor_override, else the clipped count (exclusive or adaptive), else
// the kernel size.
inline double pool_divisor(const Pool& p, bool exclusive, int64_t divisor, int64_t n) {
  if (divisor > 0) return double(divisor);
  if (exclusive) return double(n);
  return double(p.k[0] * p.k[1] * p.k[2]);
}

void avg_pool_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.output(0);
  Pool p = make_pool(ctx, x.dims(), y.dims(), x.ndim());
  const bool exclusive = ctx.attr_int("exclusive") != 0 || ctx.attr_int("adaptive") != 0;
  const int64_t divisor = ctx.attr_int("divisor");
  dispatch<FloatType>("avg_pool", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(0, p.planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t pl = lo; pl < hi; ++pl) {
        const T* xp = px + pl * p.in_sz();
        T* yp = py + pl * p.out_sz();
        for_windows(p,
                    [&](int64_t o, int64_t b0, int64_t e0, int64_t b1, int64_t e1, int64_t b2, int64_t e2) {
                      A sum = 0;
                      for (int64_t i0 = b0; i0 < e0; ++i0)
                        for (int64_t i1 = b1; i1 < e1; ++i1)
                          for (int64_t i2 = b2; i2 < e2; ++i2)
                            sum += A(xp[(i0 * p.in[1] + i1) * p.in[2] + i2]);
                      const int64_t n = (e0 - b0) * (e1 - b1) * (e2 - b2);
                      yp[o] = n == 0 ? T(0) : T(sum / A(pool_divisor(p, exclusive, divisor, n)));
                    });
      }
    });
  });
}

void avg_pool_grad_kernel(KernelContext& ctx) {
  TensorView g = ctx.input(0), dx = ctx.output(0);
  Pool p = make_pool(ctx, dx.dims(), g.dims(), dx.ndim());
  const bool exclusive = ctx.attr_int("exclusive") != 0 || ctx.attr_int("adaptive") != 0;
  const int64_t divisor = ctx.attr_int("divisor");
  dispatch<FloatType>("avg_pool_grad", g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* pg = g.data<T>();
    T* pd = dx.data<T>();
    parallel_for(0, p.planes, 1, [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(p.in_sz()));
      for (int64_t pl = lo; pl < hi; ++pl) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* gp = pg + pl * p.out_sz();
        for_windows(p,
                    [&](int64_t o, int64_t b0, int64_t e0, int64_t b1, int64_t e1, int64_t b2, int64_t e2) {
                      const int64_t n = (e0 - b0) * (e1 - b1) * (e2 - b2);
                      if (n == 0) return;
                      const A v = A(gp[o]) / A(pool_divisor(p, exclusive, divisor, n));
                      for (int64_t i0 = b0; i0 < e0; ++i0)
                        for (int64_t i1 = b1; i1 < e1; ++i1)
                          for (int64_t i2 = b2; i2 < e2; ++i2) acc[(i0 * p.in[1] + i1) * p.in[2] + i2] += v;
                    });
        for (int64_t i = 0; i < p.in_sz(); ++i) pd[pl * p.in_sz() + i] = T(acc[i]);
      }
    });
  });
}

// ---- interpolation ---------------------------------------------------------------------------------
// Per spatial dim (padded to 3), per output index: `taps` source indices and weights (1 nearest,
// 2 linear, 4 cubic), following Paddle's index rules.
struct Interp {
  int64_t planes = 0, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int taps[3] = {1, 1, 1};
  std::vector<int64_t> idx[3];
  std::vector<double> wt[3];
  int64_t in_sz() const { return in[0] * in[1] * in[2]; }
  int64_t out_sz() const { return out[0] * out[1] * out[2]; }
};

double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

Interp make_interp(const KernelContext& ctx, const int64_t* x, const int64_t* y, int ndim) {
  Interp p;
  const int nd = ndim - 2, off = 3 - nd;
  p.planes = x[0] * x[1];
  const int64_t mode = ctx.attr_int("mode");
  const bool align = ctx.attr_int("align_corners") != 0;
  const bool align_flag = ctx.attr_int("align_mode") == 0 && !align;
  std::vector<double> ratios = ctx.attr_floats("ratios");
  for (int i = 0; i < 3; ++i) p.idx[i] = {0}, p.wt[i] = {1.0};
  for (int j = 0; j < nd; ++j) {
    const int i = j + off;
    const int64_t L = x[2 + j], O = y[2 + j];
    const double r = ratios[j];
    const int T = mode == 0 ? 1 : mode == 1 ? 2 : 4;
    p.in[i] = L, p.out[i] = O, p.taps[i] = T;
    p.idx[i].assign(O * T, 0);
    p.wt[i].assign(O * T, 0.0);
    for (int64_t o = 0; o < O; ++o) {
      int64_t* ix = &p.idx[i][o * T];
      double* w = &p.wt[i][o * T];
      if (mode == 0) {
        // Paddle multiplies in float (its ratio is a float): 0.8333333f * 6 rounds to 5, not 4.9999...
        const float t = static_cast<float>(r) * static_cast<float>(o);
        int64_t s = align ? static_cast<int64_t>(double(t) + 0.5) : static_cast<int64_t>(t);
        ix[0] = std::min<int64_t>(std::max<int64_t>(s, 0), L - 1), w[0] = 1;
      } else if (mode == 1) {
        double src = align_flag ? r * (o + 0.5) - 0.5 : r * o;
        if (src < 0) src = 0;
        int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), L - 1);
        const double l1 = src - double(i0);
        ix[0] = i0, ix[1] = i0 < L - 1 ? i0 + 1 : i0;
        w[0] = 1 - l1, w[1] = l1;
      } else {
        const double src = align ? r * o : r * (o + 0.5) - 0.5;
        const int64_t i0 = static_cast<int64_t>(std::floor(src));
        const double t = src - double(i0), A = -0.75;
        const double c[4] = {cubic2(t + 1, A), cubic1(t, A), cubic1(1 - t, A), cubic2(2 - t, A)};
        for (int k = 0; k < 4; ++k) {
          ix[k] = std::min<int64_t>(std::max<int64_t>(i0 - 1 + k, 0), L - 1);
          w[k] = c[k];
        }
      }
    }
  }
  return p;
}

// fn(input offset, weight, output offset) over every tap of every output.
template <class Fn>
void for_taps(const Interp& p, Fn&& fn) {
  for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
    for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
      for (int64_t o2 = 0; o2 < p.out[2]; ++o2) {
        const int64_t o = (o0 * p.out[1] + o1) * p.out[2] + o2;
        for (int t0 = 0; t0 < p.taps[0]; ++t0) {
          const int64_t i0 = p.idx[0][o0 * p.taps[0] + t0];
          const double w0 = p.wt[0][o0 * p.taps[0] + t0];
          for (int t1 = 0; t1 < p.taps[1]; ++t1) {
            const int64_t i1 = p.idx[1][o1 * p.taps[1] + t1];
            const double w1 = w0 * p.wt[1][o1 * p.taps[1] + t1];
            for (int t2 = 0; t2 < p.taps[2]; ++t2)
              fn((i0 * p.in[1] + i1) * p.in[2] + p.idx[2][o2 * p.taps[2] + t2],
                 w1 * p.wt[2][o2 * p.taps[2] + t2], o);
          }
        }
      }
}

void interp_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.output(0);
  Interp p = make_interp(ctx, x.dims(), y.dims(), x.ndim());
  dispatch<FloatType>("interpolate", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(0, p.planes, 1, [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(p.out_sz()));
      for (int64_t pl = lo; pl < hi; ++pl) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* xp = px + pl * p.in_sz();
        for_taps(p, [&](int64_t i, double w, int64_t o) { acc[o] += A(w) * A(xp[i]); });
        for (int64_t o = 0; o < p.out_sz(); ++o) py[pl * p.out_sz() + o] = T(acc[o]);
      }
    });
  });
}

void interp_grad_kernel(KernelContext& ctx) {
  TensorView g = ctx.input(0), dx = ctx.output(0);
  Interp p = make_interp(ctx, dx.dims(), g.dims(), dx.ndim());
  dispatch<FloatType>("interpolate_grad", g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* pg = g.data<T>();
    T* pd = dx.data<T>();
    parallel_for(0, p.planes, 1, [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(p.in_sz()));
      for (int64_t pl = lo; pl < hi; ++pl) {
        std::fill(acc.begin(), acc.end(), A(0));
        const T* gp = pg + pl * p.out_sz();
        for_taps(p, [&](int64_t i, double w, int64_t o) { acc[i] += A(w) * A(gp[o]); });
        for (int64_t i = 0; i < p.in_sz(); ++i) pd[pl * p.in_sz() + i] = T(acc[i]);
      }
    });
  });
}

// ---- unfold / fold (2-D im2col and its adjoint) -------------------------------------------------
struct Cols {
  int64_t N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow;
};
Cols make_cols(const KernelContext& ctx, int64_t N, int64_t C, int64_t H, int64_t W) {
  std::vector<int64_t> k = ctx.attr_ints("kernel_sizes"), s = ctx.attr_ints("strides"),
                       p = ctx.attr_ints("paddings"), d = ctx.attr_ints("dilations");
  Cols c{N, C, H, W, k[0], k[1], s[0], s[1], p[0], p[2], d[0], d[1], 0, 0};
  c.oh = (H + p[0] + p[1] - (d[0] * (k[0] - 1) + 1)) / s[0] + 1;
  c.ow = (W + p[2] + p[3] - (d[1] * (k[1] - 1) + 1)) / s[1] + 1;
  return c;
}

// fn(image offset within the plane, column offset within the (n, c) block) for in-bounds taps.
template <class Fn>
void for_cols(const Cols& c, Fn&& fn) {
  const int64_t L = c.oh * c.ow;
  for (int64_t a = 0; a < c.kh; ++a)
    for (int64_t b = 0; b < c.kw; ++b)
      for (int64_t y = 0; y < c.oh; ++y) {
        const int64_t h = y * c.sh - c.pt + a * c.dh;
        if (h < 0 || h >= c.H) continue;
        for (int64_t x = 0; x < c.ow; ++x) {
          const int64_t w = x * c.sw - c.pl + b * c.dw;
          if (w < 0 || w >= c.W) continue;
          fn(h * c.W + w, (a * c.kw + b) * L + y * c.ow + x);
        }
      }
}

void unfold_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.output(0);
  Cols c = make_cols(ctx, x.dim(0), x.dim(1), x.dim(2), x.dim(3));
  const int64_t blk = c.kh * c.kw * c.oh * c.ow, hw = c.H * c.W;
  dispatch<FloatType>("unfold", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(0, c.N * c.C, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t pl = lo; pl < hi; ++pl) {
        T* yp = py + pl * blk;
        std::fill(yp, yp + blk, T(0));
        for_cols(c, [&](int64_t i, int64_t o) { yp[o] = px[pl * hw + i]; });
      }
    });
  });
}

void fold_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.output(0);
  Cols c = make_cols(ctx, y.dim(0), y.dim(1), y.dim(2), y.dim(3));
  const int64_t blk = c.kh * c.kw * c.oh * c.ow, hw = c.H * c.W;
  dispatch<FloatType>("fold", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(0, c.N * c.C, 1, [&](int64_t lo, int64_t hi) {
      std::vector<A> acc(static_cast<size_t>(hw));
      for (int64_t pl = lo; pl < hi; ++pl) {
        std::fill(acc.begin(), acc.end(), A(0));
        for_cols(c, [&](int64_t i, int64_t o) { acc[i] += A(px[pl * blk + o]); });
        for (int64_t i = 0; i < hw; ++i) py[pl * hw + i] = T(acc[i]);
      }
    });
  });
}

// ---- grid_sample (2-D) ------------------------------------------------------------------------------
// A normalised coordinate to a source pixel coordinate, with d(source)/d(coordinate).
double unnormalize(double g, int64_t size, bool align, double* dg) {
  if (align) {
    *dg = (size - 1) / 2.0;
    return (g + 1) / 2 * (size - 1);
  }
  *dg = size / 2.0;
  return ((g + 1) * size - 1) / 2;
}
double clip(double x, int64_t size, double* dg) {
  if (x <= 0) {
    *dg = x < 0 ? 0 : *dg;
    return 0;
  }
  if (x >= size - 1) {
    *dg = x > size - 1 ? 0 : *dg;
    return double(size - 1);
  }
  return x;
}
// Reflects x into [lo2/2, hi2/2]; the gradient flips sign on odd reflections.
double reflect(double x, int64_t lo2, int64_t hi2, double* dg) {
  if (lo2 == hi2) {
    *dg = 0;
    return 0;
  }
  const double mn = lo2 / 2.0, span = (hi2 - lo2) / 2.0;
  double sign = 1;
  x -= mn;
  if (x < 0) x = -x, sign = -1;
  const double extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  if (flips % 2 == 0) {
    *dg *= sign;
    return extra + mn;
  }
  *dg *= -sign;
  return span - extra + mn;
}
// The source coordinate of one grid value under padding_mode (0 zeros, 1 border, 2 reflection).
double source_coord(double g, int64_t size, int pad, bool align, double* dg) {
  double x = unnormalize(g, size, align, dg);
  if (pad == 1) {
    x = clip(x, size, dg);
  } else if (pad == 2) {
    x = align ? reflect(x, 0, 2 * (size - 1), dg) : reflect(x, -1, 2 * size - 1, dg);
    x = clip(x, size, dg);
  }
  return x;
}

struct GridArgs {
  int mode, pad;
  bool align;
};

// fn(plane pointer offset of x, grad slot) is simpler written out per kernel: one body does both the
// forward (dx == nullptr) and the backward.
template <class T>
void grid_sample_body(const GridArgs& a, const TensorView& x, const TensorView& grid, const T* gy, T* y,
                      T* dx, T* dgrid) {
  using A = acc_t<T>;
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
  const T* px = x.data<T>();
  const T* pg = grid.data<T>();
  // Parallel over batch items: each writes only its own dx / dgrid slices.
  parallel_for(0, N, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t p = 0; p < Ho * Wo; ++p) {
        const T* gp = pg + (n * Ho * Wo + p) * 2;
        double dgx = 1, dgy = 1;
        const double ix = source_coord(double(gp[0]), W, a.pad, a.align, &dgx);
        const double iy = source_coord(double(gp[1]), H, a.pad, a.align, &dgy);
        auto inb = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < H && xx >= 0 && xx < W; };
        if (a.mode == 1) {  // nearest: round half to even, as std::nearbyint
          const int64_t xx = static_cast<int64_t>(std::nearbyint(ix)),
                        yy = static_cast<int64_t>(std::nearbyint(iy));
          for (int64_t c = 0; c < C; ++c) {
            const int64_t xo = ((n * C + c) * H) * W, yo = (n * C + c) * Ho * Wo + p;
            if (!dx)
              y[yo] = inb(yy, xx) ? px[xo + yy * W + xx] : T(0);
            else if (inb(yy, xx))
              dx[xo + yy * W + xx] = T(A(dx[xo + yy * W + xx]) + A(gy[yo]));
          }
          if (dx) dgrid[(n * Ho * Wo + p) * 2] = T(0), dgrid[(n * Ho * Wo + p) * 2 + 1] = T(0);
          continue;
        }
        const int64_t x0 = static_cast<int64_t>(std::floor(ix)), y0 = static_cast<int64_t>(std::floor(iy));
        const double fx = ix - x0, fy = iy - y0;
        const int64_t xs[2] = {x0, x0 + 1}, ys[2] = {y0, y0 + 1};
        const double wx[2] = {1 - fx, fx}, wy[2] = {1 - fy, fy};
        double gix = 0, giy = 0;
        for (int64_t c = 0; c < C; ++c) {
          const int64_t xo = ((n * C + c) * H) * W, yo = (n * C + c) * Ho * Wo + p;
          A acc = 0;
          const A go = dx ? A(gy[yo]) : A(0);
          for (int b = 0; b < 2; ++b)
            for (int e = 0; e < 2; ++e) {
              if (!inb(ys[b], xs[e])) continue;
              const A v = A(px[xo + ys[b] * W + xs[e]]);
              if (!dx) {
                acc += A(wy[b] * wx[e]) * v;
              } else {
                dx[xo + ys[b] * W + xs[e]] = T(A(dx[xo + ys[b] * W + xs[e]]) + A(wy[b] * wx[e]) * go);
                // d/dix of wx[e] is -1 for e = 0, +1 for e = 1; likewise for iy.
                gix += double(go * v) * wy[b] * (e ? 1 : -1);
                giy += double(go * v) * wx[e] * (b ? 1 : -1);
              }
            }
          if (!dx) y[yo] = T(acc);
        }
        if (dx) {
          dgrid[(n * Ho * Wo + p) * 2] = T(gix * dgx);
          dgrid[(n * Ho * Wo + p) * 2 + 1] = T(giy * dgy);
        }
      }
  });
}

GridArgs grid_args(const KernelContext& ctx) {
  return {static_cast<int>(ctx.attr_int("mode")), static_cast<int>(ctx.attr_int("padding_mode")),
          ctx.attr_int("align_corners") != 0};
}

void grid_sample_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), grid = ctx.input(1), y = ctx.output(0);
  dispatch<FloatType>("grid_sample", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    grid_sample_body<T>(grid_args(ctx), x, grid, nullptr, y.data<T>(), nullptr, nullptr);
  });
}

void grid_sample_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), grid = ctx.input(1), gy = ctx.input(2), dx = ctx.output(0), dg = ctx.output(1);
  dispatch<FloatType>("grid_sample_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill(dx.data<T>(), dx.data<T>() + dx.numel(), T(0));
    grid_sample_body<T>(grid_args(ctx), x, grid, gy.data<T>(), nullptr, dx.data<T>(), dg.data<T>());
  });
}

}  // namespace

void register_conv_kernels(Registry& r) {
  const auto& f = oar::sdk::float_dtypes();
  r.add("conv", f, &conv_kernel);
  r.add("conv_grad_input", f, &conv_grad_input_kernel);
  r.add("conv_grad_filter", f, &conv_grad_filter_kernel);
  r.add("max_pool", f, &max_pool_kernel);
  r.add("max_pool_grad", f, &max_pool_grad_kernel);
  r.add("avg_pool", f, &avg_pool_kernel);
  r.add("avg_pool_grad", f, &avg_pool_grad_kernel);
  r.add("interpolate", f, &interp_kernel);
  r.add("interpolate_grad", f, &interp_grad_kernel);
  r.add("unfold", f, &unfold_kernel);
  r.add("fold", f, &fold_kernel);
  r.add("grid_sample", f, &grid_sample_kernel);
  r.add("grid_sample_grad", f, &grid_sample_grad_kernel);
}

}  // namespace oar_cpu
