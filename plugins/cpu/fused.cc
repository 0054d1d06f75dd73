// CPU kernels of the fused ops the training passes introduce (framework/src/ops_fused.cc):
// fused_gemm_epilogue (float32: matmul's small-problem loop, or oneDNN with the bias and relu as
// post-ops, so results equal the unfused ops' bit for bit; a loop for float64),
// fused_elemwise_add_activation, fused_add_layer_norm, fused_linear_param_grad (float32 on AVX-512: its own
// x^T g loop with oneDNN's bits, decision 141). Inputs arrive contiguous.
#include <immintrin.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "elementwise.h"
#include "layer_norm.h"
#include "vec_loop.h"

namespace oar_cpu {

// matmul.cc: the small-problem float32 loop of matmul (false above its cutoff).
bool small_gemm_f32(int64_t R, int64_t K, int64_t N, bool tx, bool ty, const float* x, const float* y,
                    float* out);
int64_t small_gemm_work_cutoff();  // its cutoff (batch*M*N*K)

namespace {

using oar::sdk::parallel_for;

enum class Act { kNone, kRelu, kGelu, kSigmoid, kTanh };

Act parse_act(const KernelContext& ctx, const char* op) {
  std::string a = ctx.attr_string("activation");
  if (a == "none") return Act::kNone;
  if (a == "relu") return Act::kRelu;
  if (a == "gelu") return Act::kGelu;
  if (a == "sigmoid") return Act::kSigmoid;
  if (a == "tanh") return Act::kTanh;
  OAR_SDK_CHECK(false, OAR_ERR_INVALID_ARGUMENT, op << ": activation '" << a << "' is not supported");
  return Act::kNone;
}

// The activations as the eager kernels compute them (nn.cc's GeluErf, unary.cc's Sigmoid).
template <Act A, class T>
inline T act(T v) {
  if constexpr (A == Act::kRelu) return v > T(0) ? v : T(0);
  if constexpr (A == Act::kGelu) return gelu_erf<T>(v);
  if constexpr (A == Act::kSigmoid) return sigmoid_of<T>(v);
  if constexpr (A == Act::kTanh) return vtanh(v);
  return v;
}

// act(x + y) for gelu, sigmoid and tanh on vec_loop.h's vector loops (float32; the same bits as act).
template <Act A>
struct AddActFn {
  template <class V>
  OAR_VEC_INLINE V operator()(V x, V y) const {
    const V s = x + y;
    if constexpr (A == Act::kGelu) return gelu_erf<float>(s);
    if constexpr (A == Act::kSigmoid) return sigmoid_of<float>(s);
    return vtanh(s);
  }
};
struct GeluFn {
  template <class V>
  OAR_VEC_INLINE V operator()(V x) const {
    return gelu_erf<float>(x);
  }
};

// f(act) with the activation a compile-time constant, so each loop vectorises.
template <class F>
void with_act(Act a, F&& f) {
  switch (a) {
    case Act::kNone:
      return f(std::integral_constant<Act, Act::kNone>{});
    case Act::kRelu:
      return f(std::integral_constant<Act, Act::kRelu>{});
    case Act::kGelu:
      return f(std::integral_constant<Act, Act::kGelu>{});
    case Act::kSigmoid:
      return f(std::integral_constant<Act, Act::kSigmoid>{});
    case Act::kTanh:
      return f(std::integral_constant<Act, Act::kTanh>{});
  }
}

// out[r, :] = act(out[r, :] + bias) for rows [lo, hi).
template <class T>
void bias_act_rows(T* out, const T* bias, int64_t n, int64_t lo, int64_t hi, Act a) {
  with_act(a, [&](auto A) {
    for (int64_t r = lo; r < hi; ++r) {
      T* o = out + r * n;
      for (int64_t j = 0; j < n; ++j) o[j] = act<decltype(A)::value>(o[j] + bias[j]);
    }
  });
}

// ---- fused_gemm_epilogue ---------------------------------------------------------------------------
// R x K (x, or stored K x R with tx) times K x N (y, or stored N x K with ty), plus bias[N], then act.
struct Gemm {
  int64_t R, K, N;
  bool tx, ty;
};

// The plain loop: row r of out accumulates x[r, k] * y[k, :] (i-k-j: contiguous rows of y and out).
template <class T>
void loop_gemm(const Gemm& g, const T* x, const T* y, const T* bias, T* out, Act a) {
  const int64_t xr = g.tx ? 1 : g.K, xk = g.tx ? g.R : 1;  // x's strides along rows and k
  parallel_for(0, g.R, std::max<int64_t>(1, 4096 / std::max<int64_t>(g.K * g.N, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   T* o = out + r * g.N;
                   std::fill(o, o + g.N, T(0));
                   for (int64_t k = 0; k < g.K; ++k) {
                     const T v = x[r * xr + k * xk];
                     if (g.ty) {
                       for (int64_t j = 0; j < g.N; ++j) o[j] += v * y[j * g.K + k];
                     } else {
                       const T* yr = y + k * g.N;
                       for (int64_t j = 0; j < g.N; ++j) o[j] += v * yr[j];
                     }
                   }
                 }
                 bias_act_rows(out, bias, g.N, lo, hi, a);
               });
}

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

struct Key {
  int64_t R, K, N;
  int flags;                              // tx | ty << 1 | has_bias << 2 | act << 3
  int threads = oar::sdk::max_threads();  // the OpenMP count it is created for (adapt_threads)
  bool operator==(const Key& o) const {
    return R == o.R && K == o.K && N == o.N && flags == o.flags && threads == o.threads;
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t v : {k.R, k.K, k.N, int64_t(k.flags), int64_t(k.threads)})
      h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};
// A primitive with its argument map, reused by whichever call holds `mu` (as matmul.cc does).
struct Prim {
  dnnl::matmul prim;
  std::mutex mu;
  std::unordered_map<int, memory> args;
};
struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<Prim>, KeyHash> map;  // nullptr: oneDNN cannot do it
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no destructor ordering issues at exit
  return *c;
}

std::shared_ptr<Prim> make_prim(const Gemm& g, bool has_bias, Act a) {
  const auto f32 = memory::data_type::f32;
  memory::desc src({g.R, g.K}, f32, g.tx ? memory::dims{1, g.R} : memory::dims{g.K, 1});
  memory::desc wei({g.K, g.N}, f32, g.ty ? memory::dims{1, g.K} : memory::dims{g.N, 1});
  memory::desc bias({1, g.N}, f32, memory::dims{g.N, 1});
  memory::desc dst({g.R, g.N}, f32, memory::dims{g.N, 1});
  dnnl::primitive_attr attr;
  if (a != Act::kNone) {
    dnnl::post_ops po;
    po.append_eltwise(
        1.f, a == Act::kRelu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(
      has_bias ? dnnl::matmul::desc(src, wei, bias, dst) : dnnl::matmul::desc(src, wei, dst), attr, engine());
  auto p = std::make_shared<Prim>();
  p->prim = dnnl::matmul(pd);
  dnnl::engine& e = engine();
  p->args = {{DNNL_ARG_SRC, memory(src, e, nullptr)},
             {DNNL_ARG_WEIGHTS, memory(wei, e, nullptr)},
             {DNNL_ARG_DST, memory(dst, e, nullptr)}};
  if (has_bias) p->args.emplace(DNNL_ARG_BIAS, memory(bias, e, nullptr));
  return p;
}

std::shared_ptr<Prim> get_prim(const Gemm& g, bool has_bias, Act a) {
  Key k{g.R, g.K, g.N, int(g.tx) | int(g.ty) << 1 | int(has_bias) << 2 | int(a) << 3};
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(k);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<Prim> p;
  try {
    p = make_prim(g, has_bias, a);
  } catch (const dnnl::error&) {
    p = nullptr;
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= 1024) c.map.clear();  // bounded, as matmul.cc's cache
  return c.map.emplace(k, p).first->second;
}

// bias nullptr: none.
bool onednn_gemm(const Gemm& g, const float* x, const float* y, const float* bias, float* out, Act a) {
  std::shared_ptr<Prim> p = get_prim(g, bias != nullptr, a);
  if (!p) return false;
  try {
    std::unique_lock<std::mutex> lock(p->mu, std::try_to_lock);
    std::unordered_map<int, memory> own;
    std::unordered_map<int, memory>& args = lock.owns_lock() ? p->args : own;
    if (!lock.owns_lock())
      for (auto& [k, m] : p->args) own.emplace(k, memory(m.get_desc(), engine(), nullptr));
    args.at(DNNL_ARG_SRC).set_data_handle(const_cast<float*>(x));
    args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<float*>(y));
    if (bias) args.at(DNNL_ARG_BIAS).set_data_handle(const_cast<float*>(bias));
    args.at(DNNL_ARG_DST).set_data_handle(out);
    p->prim.execute(thread_stream(), args);
    thread_stream().wait();
  } catch (const dnnl::error& e) {
    throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("fused_gemm_epilogue: oneDNN failed: ") + e.what(),
                          static_cast<int64_t>(e.status));
  }
  return true;
}

void gemm_epilogue_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), b = ctx.input(2), out = ctx.output(0);
  const Act a = parse_act(ctx, "fused_gemm_epilogue");
  OAR_SDK_CHECK(a == Act::kNone || a == Act::kRelu || a == Act::kGelu, OAR_ERR_INVALID_ARGUMENT,
                "fused_gemm_epilogue: activation must be none, relu or gelu");
  const bool tx = attr_int_or(ctx, "trans_x", 0) != 0, ty = attr_int_or(ctx, "trans_y", 0) != 0;
  std::vector<int64_t> xd = x.shape(), yd = y.shape();
  OAR_SDK_CHECK(xd.size() >= 2 && yd.size() == 2 && (!tx || xd.size() == 2), OAR_ERR_INVALID_ARGUMENT,
                "fused_gemm_epilogue: bad operand ranks");
  Gemm g;
  g.tx = tx, g.ty = ty;
  g.K = tx ? xd[0] : xd.back();
  g.N = ty ? yd[0] : yd[1];
  OAR_SDK_CHECK((ty ? yd[1] : yd[0]) == g.K && b.numel() == g.N, OAR_ERR_INVALID_ARGUMENT,
                "fused_gemm_epilogue: operand shapes do not match");
  if (out.numel() == 0) return;
  g.R = out.numel() / g.N;
  dispatch<FloatType>("fused_gemm_epilogue", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *px = x.data<T>(), *py = y.data<T>(), *pb = b.data<T>();
      T* po = out.data<T>();
      if constexpr (std::is_same_v<T, float>) {
        // matmul's own paths, so the product equals an unfused matmul's: its small-problem loop, then
        // the bias and activation; above the cutoff, oneDNN with them as post-ops.
        if (small_gemm_f32(g.R, g.K, g.N, g.tx, g.ty, px, py, po)) {
          bias_act_rows(po, pb, g.N, 0, g.R, a);
          return;
        }
        // oneDNN's gelu post-op rounds differently from the gelu kernel: that one runs after it.
        const Act post = a == Act::kGelu ? Act::kNone : a;
        if (g.K > 0 && onednn_gemm(g, px, py, pb, po, post)) {
          if (a == Act::kGelu) vec_unary<float>(VecKernels<GeluFn>::map1(), po, po, g.R * g.N);
          return;
        }
      }
      loop_gemm<T>(g, px, py, pb, po, a);
    } else {
      OAR_SDK_CHECK(false, OAR_ERR_TYPE, "fused_gemm_epilogue: float32 and float64 only");
    }
  });
}

// ---- fused_elemwise_add_activation -----------------------------------------------------------------

void add_act_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  const Act a = parse_act(ctx, "fused_elemwise_add_activation");
  const int64_t n = y.numel(), total = x.numel();
  OAR_SDK_CHECK(out.numel() == total && (n == 0 ? total == 0 : total % n == 0), OAR_ERR_INVALID_ARGUMENT,
                "fused_elemwise_add_activation: y does not broadcast to x");
  if (total == 0) return;
  dispatch<FloatType>("fused_elemwise_add_activation", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *px = x.data<T>(), *py = y.data<T>();
      T* po = out.data<T>();
      const int64_t rows = total / n;
      with_act(a, [&](auto A) {
        constexpr Act kA = decltype(A)::value;
        [[maybe_unused]] VecMap2 vec = nullptr;  // float32 gelu/sigmoid/tanh rows: the vector loops
        if constexpr (std::is_same_v<T, float> &&
                      (kA == Act::kGelu || kA == Act::kSigmoid || kA == Act::kTanh))
          vec = VecKernels<AddActFn<kA>>::map2();
        parallel_for(0, rows, std::max<int64_t>(1, 16384 / n), [&](int64_t lo, int64_t hi) {
          for (int64_t r = lo; r < hi; ++r) {
            const T* xr = px + r * n;
            T* o = po + r * n;
            if constexpr (std::is_same_v<T, float> &&
                          (kA == Act::kGelu || kA == Act::kSigmoid || kA == Act::kTanh))
              vec(o, xr, py, n);
            else
              for (int64_t j = 0; j < n; ++j) o[j] = act<kA>(xr[j] + py[j]);
          }
        });
      });
    } else {
      OAR_SDK_CHECK(false, OAR_ERR_TYPE, "fused_elemwise_add_activation: float32 and float64 only");
    }
  });
}

// ---- fused_add_layer_norm --------------------------------------------------------------------------

void add_layer_norm_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), res = ctx.input(1), w = ctx.input(2), b = ctx.input(3);
  TensorView out = ctx.output(0), sum = ctx.output(1), mean = ctx.output(2), rstd = ctx.output(3);
  const double eps = attr_float_or(ctx, "epsilon", 1e-5);
  const int64_t n = w.numel(), total = x.numel(), outer = n == 0 ? 0 : total / n;
  OAR_SDK_CHECK(res.numel() == total && b.numel() == n, OAR_ERR_INVALID_ARGUMENT,
                "fused_add_layer_norm: operand sizes do not match");
  dispatch<FloatType>("fused_add_layer_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *px = x.data<T>(), *pr = res.data<T>();
      T* ps = sum.data<T>();
      parallel_for(0, total, oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) ps[i] = px[i] + pr[i];
      });
      layer_norm_fwd<T>(ps, w.data<T>(), b.data<T>(), out.data<T>(), mean.data<T>(), rstd.data<T>(), n, outer,
                        eps);
    } else {
      OAR_SDK_CHECK(false, OAR_ERR_TYPE, "fused_add_layer_norm: float32 and float64 only");
    }
  });
}

// ---- fused_linear_param_grad -------------------------------------------------------------------------
// dweight = x's rows^T @ dout's rows through matmul's own paths (as matmul(x2, g2, transpose_x) runs it);
// dbias = dout's column sums, rows in order into double accumulators (as sum over the leading axes).

// dout's column sums, row by row into double accumulators. Also built for AVX-512 (8 double lanes where the
// baseline build has SSE's 2); every column is summed in the same order in both, so the bits are the same.
template <class T>
[[gnu::always_inline]] inline void column_sums(const T* g, int64_t rows, int64_t n, double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = g + r * n;
    for (int64_t j = 0; j < n; ++j) acc[j] += double(gr[j]);
  }
}
OAR_VEC_AVX512 void column_sums_avx512(const float* g, int64_t rows, int64_t n, double* acc) {
  column_sums(g, rows, n, acc);
}

// dw (K x N) = x^T g for row-major x (rows x K) and g (rows x N) on AVX-512: each element summed over the
// rows in order, one FMA per row from 0, which is what oneDNN's matmul does for the transposed operand
// (eager's path); its transposed-A kernel runs 1.5-3 us slower than a plain product at a Transformer's
// 128 x 64 x 64, this loop at the plain product's speed. A tile of 8 dw rows x 32 columns stays in 16
// registers; per x row, x[r, i0 .. i0+8) is broadcast (contiguous: A^T's panel needs no packing) and
// g[r, j0 .. j0+32) loaded once. Columns past N are masked. The first tile of a column block also adds
// the loaded g rows into the bias gradient's double sums (`sums`, row by row: column_sums' order and
// bits), so g is read once for both.
template <int MR, int NV, bool kSums, bool kFull>
OAR_VEC_AVX512 inline void atb_tile(const float* x, int64_t K, const float* g, int64_t N, int64_t rows,
                                    float* c, __mmask16 last, float* sums) {
  __m512 acc[MR][NV];
  __m512d sacc[2 * NV];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int v = 0; v < 2 * NV; ++v) sacc[v] = _mm512_setzero_pd();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * K;
    const float* gr = g + r * N;
    __m512 b[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      b[v] = kFull || v + 1 < NV ? _mm512_loadu_ps(gr + 16 * v) : _mm512_maskz_loadu_ps(last, gr + 16 * v);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512 a = _mm512_set1_ps(xr[m]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_fmadd_ps(a, b[v], acc[m][v]);
    }
    if constexpr (kSums)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) {
        const __m512d bits = _mm512_castps_pd(b[v]);
        sacc[2 * v] = _mm512_add_pd(sacc[2 * v], _mm512_cvtps_pd(_mm512_castps512_ps256(b[v])));
        sacc[2 * v + 1] = _mm512_add_pd(sacc[2 * v + 1],
                                        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(bits, 1))));
      }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v)
      _mm512_mask_storeu_ps(c + m * N + 16 * v, v + 1 < NV ? 0xFFFF : last, acc[m][v]);
  if constexpr (kSums)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const __m256 lo = _mm512_cvtpd_ps(sacc[2 * v]), hi = _mm512_cvtpd_ps(sacc[2 * v + 1]);
      const __m512 f = _mm512_castpd_ps(
          _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
      _mm512_mask_storeu_ps(sums + 16 * v, v + 1 < NV ? 0xFFFF : last, f);
    }
}

// The rows [i0, i1) of dw, 8 at a time then one at a time, for the columns [j0, j0 + 16 NV) (`last`: those
// of the last 16 that exist; kFull: all, the loads unmasked); the bias sums of those columns too when
// `sums` is given.
template <int NV, bool kFull>
OAR_VEC_AVX512 void atb_cols(const float* x, int64_t K, const float* g, int64_t N, int64_t rows, float* c,
                             int64_t i0, int64_t i1, int64_t j0, __mmask16 last, float* sums) {
  int64_t i = i0;
  if (sums != nullptr && i + 8 <= i1) {
    atb_tile<8, NV, true, kFull>(x + i, K, g + j0, N, rows, c + i * N + j0, last, sums + j0);
    i += 8;
  } else if (sums != nullptr) {
    atb_tile<1, NV, true, kFull>(x + i, K, g + j0, N, rows, c + i * N + j0, last, sums + j0);
    i += 1;
  }
  for (; i + 8 <= i1; i += 8)
    atb_tile<8, NV, false, kFull>(x + i, K, g + j0, N, rows, c + i * N + j0, last, nullptr);
  for (; i < i1; ++i) atb_tile<1, NV, false, kFull>(x + i, K, g + j0, N, rows, c + i * N + j0, last, nullptr);
}

OAR_VEC_AVX512 void atb_rows(const float* x, int64_t K, const float* g, int64_t N, int64_t rows, float* c,
                             int64_t i0, int64_t i1, float* sums) {
  int64_t j = 0;
  for (; j + 32 <= N; j += 32) atb_cols<2, true>(x, K, g, N, rows, c, i0, i1, j, 0xFFFF, sums);
  const int64_t left = N - j;  // 0 .. 31
  if (left > 16)
    atb_cols<2, false>(x, K, g, N, rows, c, i0, i1, j, static_cast<__mmask16>((1u << (left - 16)) - 1), sums);
  else if (left > 0)
    atb_cols<1, false>(x, K, g, N, rows, c, i0, i1, j, static_cast<__mmask16>((1u << left) - 1), sums);
}

// dw = x^T g (K >= 1), and db = g's column sums when db is given (as linear_param_grad_kernel's).
void atb_avx512(const float* x, const float* g, float* dw, float* db, int64_t rows, int64_t K, int64_t N) {
  // Blocks of 8 dw rows per piece; a piece is at least ~64K multiply-adds (small products stay on this
  // thread). The piece with block 0 computes the bias sums.
  const int64_t blocks = (K + 7) / 8;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, 8 * rows * N));
  parallel_for(0, blocks, grain, [&](int64_t lo, int64_t hi) {
    atb_rows(x, K, g, N, rows, dw, lo * 8, std::min(K, hi * 8), lo == 0 ? db : nullptr);
  });
}

// Whether atb_avx512 gives oneDNN's bits for this (rows, K, N): checked once per shape on a probe of
// fixed pseudo-random values, so the fused op equals eager's matmul on any CPU and oneDNN version (one
// that sums in another order keeps oneDNN for that shape).
bool atb_matches_onednn(int64_t rows, int64_t K, int64_t N) {
  struct Shape {
    int64_t r, k, n;
    bool operator<(const Shape& o) const { return std::tie(r, k, n) < std::tie(o.r, o.k, o.n); }
  };
  static std::mutex mu;
  static std::map<Shape, bool> checked;
  const Shape key{rows, K, N};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = checked.find(key);
    if (it != checked.end()) return it->second;
  }
  std::vector<float> x(static_cast<size_t>(rows * K)), g(static_cast<size_t>(rows * N)),
      a(static_cast<size_t>(K * N)), b(static_cast<size_t>(K * N));
  uint32_t s = 12345;
  auto next = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(s >> 8) - (1 << 23)) / float(1 << 23);
  };
  for (float& v : x) v = next();
  for (float& v : g) v = next();
  atb_avx512(x.data(), g.data(), a.data(), nullptr, rows, K, N);
  bool same = onednn_gemm(Gemm{K, rows, N, true, false}, x.data(), g.data(), nullptr, b.data(), Act::kNone) &&
              std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  std::lock_guard<std::mutex> lock(mu);
  if (checked.size() >= 1024) checked.clear();  // bounded, as the primitive caches
  checked[key] = same;
  return same;
}

void linear_param_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), dout = ctx.input(1), dw = ctx.output(0), db = ctx.output(1);
  const int64_t K = dw.shape()[0], N = db.numel();
  const int64_t rows = K == 0 ? (N == 0 ? 0 : dout.numel() / N) : x.numel() / K;
  OAR_SDK_CHECK(x.numel() == rows * K && dout.numel() == rows * N && dw.numel() == K * N,
                OAR_ERR_INVALID_ARGUMENT, "fused_linear_param_grad: operand sizes do not match");
  dispatch<FloatType>("fused_linear_param_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T *px = x.data<T>(), *pg = dout.data<T>();
      T *pw = dw.data<T>(), *pb = db.data<T>();
      if constexpr (std::is_same_v<T, float>) {
        // Above matmul's small-problem cutoff on AVX-512, up to 2M multiply-adds and 4096 rows: dweight and
        // dbias in one pass over dout. (Each tile streams all rows of its x and g columns; at 4M
        // multiply-adds the loop measured even with oneDNN, whose blocking wins beyond.)
        const double work = double(rows) * double(K) * double(N);
        if (rows > 0 && K > 0 && vec_isa() == 2 && work > double(small_gemm_work_cutoff()) &&
            work <= 2097152.0 && rows <= 4096 && atb_matches_onednn(rows, K, N)) {
          atb_avx512(px, pg, pw, pb, rows, K, N);
          return;
        }
      }
      std::vector<double> acc(static_cast<size_t>(N), 0.0);
      if constexpr (std::is_same_v<T, float>) {
        if (vec_isa() == 2)
          column_sums_avx512(pg, rows, N, acc.data());
        else
          column_sums(pg, rows, N, acc.data());
      } else {
        column_sums(pg, rows, N, acc.data());
      }
      for (int64_t j = 0; j < N; ++j) pb[j] = T(acc[j]);
      if (dw.numel() == 0) return;
      Gemm g{K, rows, N, true, false};  // x stored rows x K: transposed
      if constexpr (std::is_same_v<T, float>) {
        if (small_gemm_f32(g.R, g.K, g.N, true, false, px, pg, pw)) return;
        if (rows > 0 && onednn_gemm(g, px, pg, nullptr, pw, Act::kNone)) return;
      }
      const std::vector<T> zero(static_cast<size_t>(N), T(0));
      loop_gemm<T>(g, px, pg, zero.data(), pw, Act::kNone);
    } else {
      OAR_SDK_CHECK(false, OAR_ERR_TYPE, "fused_linear_param_grad: float32 and float64 only");
    }
  });
}

}  // namespace

void register_fused_kernels(Registry& r) {
  const std::vector<OarDType> f = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  r.add("fused_gemm_epilogue", f, &gemm_epilogue_kernel);
  r.add("fused_elemwise_add_activation", f, &add_act_kernel);
  r.add("fused_add_layer_norm", f, &add_layer_norm_kernel);
  r.add("fused_linear_param_grad", f, &linear_param_grad_kernel);
}

void fused_shutdown() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.map.clear();
}

}  // namespace oar_cpu
