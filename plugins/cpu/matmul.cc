// matmul with numpy semantics (1-D operands, broadcast batch dims, optional transposes of the last two
// dims). float32, bfloat16 and float16 run through oneDNN (a 16-bit type whose primitive this CPU lacks
// through oneDNN's float32 path, converted in and out a vector at a time); float64, ints and complex
// through a row-parallel i-k-j loop. Inputs arrive contiguous.
//
// oneDNN primitives are created once per problem shape and cached: creating one costs far more than
// a small matmul, and the budget is "within 10% of oneDNN called directly".
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

// One matmul call reduced to a batch of 2-D problems: out[b] (M x N) = X[b] (M x K) * Y[b] (K x N).
struct Plan {
  int64_t M = 1, K = 1, N = 1;
  bool tx = false, ty = false;            // X[b] is stored K x M / Y[b] is stored N x K
  int64_t batch = 1;                      // number of output matrices
  int64_t x_batch = 1, y_batch = 1;       // number of distinct X / Y matrices
  std::vector<int64_t> x_index, y_index;  // per output matrix, which X / Y matrix (general broadcast)
};

Plan make_plan(const TensorView& x, const TensorView& y, bool tx, bool ty) {
  Plan p;
  std::vector<int64_t> xd = x.shape(), yd = y.shape();
  OAR_SDK_CHECK(!xd.empty() && !yd.empty(), OAR_ERR_INVALID_ARGUMENT,
                "matmul: operands must have at least 1 dimension");
  int64_t ky;
  std::vector<int64_t> xb, yb;  // batch dims
  if (xd.size() == 1) {         // [k] is [1, k]; a transpose of a vector means nothing
    p.M = 1, p.K = xd[0];
  } else {
    size_t r = xd.size();
    p.tx = tx;
    p.M = tx ? xd[r - 1] : xd[r - 2];
    p.K = tx ? xd[r - 2] : xd[r - 1];
    xb.assign(xd.begin(), xd.end() - 2);
  }
  if (yd.size() == 1) {  // [k] is [k, 1]
    ky = yd[0], p.N = 1;
  } else {
    size_t r = yd.size();
    p.ty = ty;
    ky = ty ? yd[r - 1] : yd[r - 2];
    p.N = ty ? yd[r - 2] : yd[r - 1];
    yb.assign(yd.begin(), yd.end() - 2);
  }
  OAR_SDK_CHECK(p.K == ky, OAR_ERR_INVALID_ARGUMENT,
                "matmul: contraction sizes differ (x gives " << p.K << ", y gives " << ky << ")");
  // Broadcast the batch dims (right-aligned).
  size_t nb = std::max(xb.size(), yb.size());
  xb.insert(xb.begin(), nb - xb.size(), 1);
  yb.insert(yb.begin(), nb - yb.size(), 1);
  std::vector<int64_t> ob(nb);
  for (size_t i = 0; i < nb; ++i) {
    OAR_SDK_CHECK(
        xb[i] == yb[i] || xb[i] == 1 || yb[i] == 1, OAR_ERR_INVALID_ARGUMENT,
        "matmul: batch dimension " << i << " does not broadcast (" << xb[i] << " vs " << yb[i] << ")");
    ob[i] = xb[i] == 1 ? yb[i] : xb[i];  // a 0-sized batch broadcasts against 1 to 0
    p.batch *= ob[i];
    p.x_batch *= xb[i];
    p.y_batch *= yb[i];
  }
  // Only a mixed broadcast (neither operand full nor single) needs per-matrix indices.
  const bool simple = (p.x_batch == p.batch || p.x_batch == 1) && (p.y_batch == p.batch || p.y_batch == 1);
  if (!simple && p.batch > 0) {
    std::vector<int64_t> xs = contiguous_strides(xb), ys = contiguous_strides(yb);
    p.x_index.resize(p.batch);
    p.y_index.resize(p.batch);
    std::vector<int64_t> idx(nb, 0);
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t xi = 0, yi = 0;
      for (size_t d = 0; d < nb; ++d) {
        if (xb[d] != 1) xi += idx[d] * xs[d];
        if (yb[d] != 1) yi += idx[d] * ys[d];
      }
      p.x_index[b] = xi, p.y_index[b] = yi;
      for (size_t d = nb; d-- > 0;) {  // next index, row-major
        if (++idx[d] < ob[d]) break;
        idx[d] = 0;
      }
    }
  }
  return p;
}

// Which X / Y matrix output matrix b uses.
inline int64_t x_of(const Plan& p, int64_t b) {
  return p.x_index.empty() ? (p.x_batch == 1 ? 0 : b) : p.x_index[b];
}
inline int64_t y_of(const Plan& p, int64_t b) {
  return p.y_index.empty() ? (p.y_batch == 1 ? 0 : b) : p.y_index[b];
}

// ---- oneDNN ----------------------------------------------------------------------------------------
using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// What a cached primitive computes: [bx|by] batches of M x K times K x N, transposes as stored.
struct Key {
  int dt;
  int64_t bx, by, b, M, K, N;
  bool tx, ty;
  bool operator==(const Key& o) const {
    return dt == o.dt && bx == o.bx && by == o.by && b == o.b && M == o.M && K == o.K && N == o.N &&
           tx == o.tx && ty == o.ty;
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = static_cast<uint64_t>(k.dt) * 0x9e3779b97f4a7c15ull;
    for (int64_t v : {k.bx, k.by, k.b, k.M, k.K, k.N, int64_t(k.tx) * 2 + int64_t(k.ty)})
      h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

struct Prim {
  dnnl::matmul prim;
  memory::desc src, wei, dst, scratch;
  size_t scratch_bytes = 0;
  // Memory objects and argument map reused by whichever call holds `mu` (creating them costs about
  // as much as a small matmul); a concurrent call on the same primitive makes its own.
  std::mutex mu;
  std::unordered_map<int, memory> args;
};

constexpr size_t kMaxCached = 1024;

struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<Prim>, KeyHash> map;  // nullptr: oneDNN cannot do it
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no destructor ordering issues at exit
  return *c;
}

// A rows x cols matrix (or a batch of them) stored row-major, or transposed (stored cols x rows).
memory::desc matrix_desc(memory::data_type dt, int64_t batch, bool batched, int64_t rows, int64_t cols,
                         bool transposed) {
  memory::dims rs = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  if (!batched) return memory::desc({rows, cols}, dt, rs);
  return memory::desc({batch, rows, cols}, dt, {rows * cols, rs[0], rs[1]});
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// Grows a per-thread 64-byte aligned buffer (the oneDNN scratchpad).
void* thread_scratch(size_t bytes) {
  thread_local std::unique_ptr<void, AlignedFree> buf;
  thread_local size_t cap = 0;
  if (bytes > cap) {
    size_t n = (bytes + 63) / 64 * 64;
    buf.reset(std::aligned_alloc(64, n));
    if (!buf) throw std::bad_alloc();
    cap = n;
  }
  return buf.get();
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

std::unordered_map<int, memory> make_args(const Prim& p, const void* x, const void* y, void* out) {
  dnnl::engine& eng = engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p.src, eng, const_cast<void*>(x))},
                                       {DNNL_ARG_WEIGHTS, memory(p.wei, eng, const_cast<void*>(y))},
                                       {DNNL_ARG_DST, memory(p.dst, eng, out)}};
  if (p.scratch_bytes)
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(p.scratch, eng, x ? thread_scratch(p.scratch_bytes) : nullptr));
  return args;
}

std::shared_ptr<Prim> remember(const Key& k, std::shared_ptr<Prim> p) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  // Bounded: a model with ever-changing shapes starts over rather than growing without end (calls in
  // flight keep their primitive alive through the shared_ptr).
  if (c.map.size() >= kMaxCached) c.map.clear();
  return c.map.emplace(k, p).first->second;
}

std::shared_ptr<Prim> get_prim(const Key& k) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(k);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<Prim> p;
  try {  // built outside the lock: creation can take milliseconds
    auto dt = static_cast<memory::data_type>(k.dt);
    const bool batched = k.b > 0;
    p = std::make_shared<Prim>();
    p->src = matrix_desc(dt, k.bx, batched, k.M, k.K, k.tx);
    p->wei = matrix_desc(dt, k.by, batched, k.K, k.N, k.ty);
    p->dst = matrix_desc(dt, k.b, batched, k.M, k.N, false);
    dnnl::primitive_attr attr;
    // Our own scratchpad per call: the library's shared one is not safe for concurrent execution.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::desc d(p->src, p->wei, p->dst);
    dnnl::matmul::primitive_desc pd(d, attr, engine());
    // 16-bit: oneDNN's kernel only where it beats the float32 path (lowp.h, use_native_lowp).
    if (dt != memory::data_type::f32 && !use_native_lowp(pd.impl_info_str())) return remember(k, nullptr);
    p->scratch = pd.scratchpad_desc();
    p->scratch_bytes = p->scratch.get_size();
    p->prim = dnnl::matmul(pd);
    p->args = make_args(*p, nullptr, nullptr, nullptr);
  } catch (const dnnl::error&) {
    p = nullptr;  // e.g. bfloat16 on a CPU without AVX-512: use another path
  }
  return remember(k, p);
}

void execute(Prim& p, const void* x, const void* y, void* out) {
  std::unique_lock<std::mutex> lock(p.mu, std::try_to_lock);
  if (lock.owns_lock()) {  // the usual case: reuse the memory objects, only swap the pointers
    p.args.at(DNNL_ARG_SRC).set_data_handle(const_cast<void*>(x));
    p.args.at(DNNL_ARG_WEIGHTS).set_data_handle(const_cast<void*>(y));
    p.args.at(DNNL_ARG_DST).set_data_handle(out);
    if (p.scratch_bytes) p.args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(thread_scratch(p.scratch_bytes));
    p.prim.execute(thread_stream(), p.args);
  } else {
    p.prim.execute(thread_stream(), make_args(p, x, y, out));
  }
  thread_stream().wait();
}

// Runs the whole plan through oneDNN in dtype dt; false when oneDNN has no primitive for it.
bool onednn_matmul(memory::data_type dt, const Plan& p, const void* x, const void* y, void* out,
                   size_t elem) {
  try {
    const int64_t mk = p.M * p.K, kn = p.K * p.N, mn = p.M * p.N;
    if (p.x_index.empty()) {
      Key k{static_cast<int>(dt), p.x_batch, p.y_batch, p.batch, p.M, p.K, p.N, p.tx, p.ty};
      if (p.batch == 1) {
        k.bx = k.by = k.b = 0;  // plain 2-D
      } else if (p.y_batch == 1 && !p.tx) {
        // A batch times one matrix (nn.Linear on 3-D input): fold the batch into M.
        k = Key{static_cast<int>(dt), 0, 0, 0, p.batch * p.M, p.K, p.N, false, p.ty};
      }
      auto prim = get_prim(k);
      if (!prim) return false;
      execute(*prim, x, y, out);
      return true;
    }
    // Mixed broadcast: one 2-D matmul per output matrix.
    auto prim = get_prim(Key{static_cast<int>(dt), 0, 0, 0, p.M, p.K, p.N, p.tx, p.ty});
    if (!prim) return false;
    for (int64_t b = 0; b < p.batch; ++b)
      execute(*prim, static_cast<const char*>(x) + x_of(p, b) * mk * elem,
              static_cast<const char*>(y) + y_of(p, b) * kn * elem, static_cast<char*>(out) + b * mn * elem);
    return true;
  } catch (const dnnl::error& e) {
    throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("matmul: oneDNN failed: ") + e.what(),
                          static_cast<int64_t>(e.status));
  }
}

// ---- small float32 problems -----------------------------------------------------------------------
// Executing even a cached oneDNN primitive costs ~0.5 us more than a plain loop needs for a 8x16x16
// product (argument maps, stream, its dispatch). Calls with batch*M*N*K up to the cutoff run an i-k-j
// loop on the calling thread instead: C's row stays in L1, the inner loop runs along contiguous rows of
// B and C and vectorises (AVX2+FMA when the CPU has it, chosen at run time; the .so itself targets
// baseline x86-64). Measured crossover 8K-16K multiply-adds (docs/static.md, "Performance");
// OAR_CPU_SMALL_GEMM=<max batch*M*N*K> overrides the cutoff (0: always oneDNN).
constexpr int64_t kSmallGemmDefault = 8192;

int64_t small_gemm_cutoff() {
  static const int64_t v = [] {
    const char* e = std::getenv("OAR_CPU_SMALL_GEMM");
    if (e && *e) {
      char* end = nullptr;
      long long n = std::strtoll(e, &end, 10);
      if (end && *end == '\0' && n >= 0) return static_cast<int64_t>(n);
    }
    return kSmallGemmDefault;
  }();
  return v;
}

// c (M x N, row-major) = A * b, A(i, k) = a[i * a_rs + k * a_cs], b row-major K x N; K >= 1.
__attribute__((always_inline)) inline void small_gemm_body(int64_t M, int64_t N, int64_t K,
                                                           const float* __restrict a, int64_t a_rs,
                                                           int64_t a_cs, const float* __restrict b,
                                                           float* __restrict c) {
  for (int64_t i = 0; i < M; ++i) {
    const float* ai = a + i * a_rs;
    float* __restrict ci = c + i * N;
    const float a0 = ai[0];
    for (int64_t j = 0; j < N; ++j) ci[j] = a0 * b[j];
    for (int64_t k = 1; k < K; ++k) {
      const float av = ai[k * a_cs];
      const float* __restrict bk = b + k * N;
      for (int64_t j = 0; j < N; ++j) ci[j] += av * bk[j];
    }
  }
}

__attribute__((target("avx2,fma"))) void small_gemm_avx2(int64_t M, int64_t N, int64_t K, const float* a,
                                                         int64_t a_rs, int64_t a_cs, const float* b,
                                                         float* c) {
  small_gemm_body(M, N, K, a, a_rs, a_cs, b, c);
}

void small_gemm_base(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs,
                     const float* b, float* c) {
  small_gemm_body(M, N, K, a, a_rs, a_cs, b, c);
}

void small_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs, const float* b,
                float* c) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  (avx2 ? small_gemm_avx2 : small_gemm_base)(M, N, K, a, a_rs, a_cs, b, c);
}

// The whole plan through small_gemm. A transposed Y is copied row-major first (at most the cutoff's
// worth of floats per matrix, in a per-thread buffer).
void small_matmul(const Plan& p, const float* x, const float* y, float* out) {
  const int64_t M = p.M, K = p.K, N = p.N, mk = M * K, kn = K * N, mn = M * N;
  const int64_t a_rs = p.tx ? 1 : K, a_cs = p.tx ? M : 1;
  thread_local std::vector<float> yt;
  int64_t cached = -1;  // which Y matrix yt holds
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t yi = y_of(p, b);
    const float* yb = y + yi * kn;
    if (p.ty) {
      if (yi != cached) {
        yt.resize(static_cast<size_t>(kn));
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k) yt[k * N + j] = yb[j * K + k];
        cached = yi;
      }
      yb = yt.data();
    }
    small_gemm(M, N, K, x + x_of(p, b) * mk, a_rs, a_cs, yb, out + b * mn);
  }
}

// ---- the loop for every other dtype --------------------------------------------------------------
// Accumulate in: wrapping uint64 for ints (truncation then gives numpy's wrapped result), float for
// 16-bit floats, the type itself otherwise.
template <class T>
using mm_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                    std::conditional_t<is_complex_v<T>, T, oar::sdk::compute_t<T>>>;

template <class A>
inline A mm_mul(A a, A b) {
  if constexpr (is_complex_v<A>)  // plain formula, as numpy (no Annex G recovery)
    return A(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
  else
    return a * b;
}
template <class A, class T>
inline A mm_in(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<A>(static_cast<int64_t>(v));
  else
    return static_cast<A>(oar::sdk::compute_t<T>(v));
}

template <class T>
void loop_matmul(const Plan& p, const T* x, const T* y, T* out) {
  using A = mm_acc_t<T>;
  const int64_t M = p.M, K = p.K, N = p.N;
  // A transposed Y is made row-major once so the inner loop runs along contiguous rows.
  std::vector<T> yt;
  if (p.ty) {
    yt.resize(static_cast<size_t>(p.y_batch * K * N));
    for (int64_t b = 0; b < p.y_batch; ++b)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) yt[b * K * N + k * N + j] = y[b * K * N + j * K + k];
    y = yt.data();
  }
  const int64_t rows = p.batch * M;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, K * N));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    std::vector<A> acc(static_cast<size_t>(N));
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / M, i = r % M;
      const T* xb = x + x_of(p, b) * M * K;
      const T* yb = y + y_of(p, b) * K * N;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = 0; k < K; ++k) {
        const A a = mm_in<A>(p.tx ? xb[k * M + i] : xb[i * K + k]);
        const T* yr = yb + k * N;
        for (int64_t j = 0; j < N; ++j) acc[j] += mm_mul(a, mm_in<A>(yr[j]));
      }
      T* o = out + r * N;
      for (int64_t j = 0; j < N; ++j) o[j] = static_cast<T>(acc[j]);
    }
  });
}

// float32: the small-problem loop or oneDNN; false when oneDNN has no primitive for the plan.
bool f32_matmul(const Plan& p, const float* x, const float* y, float* out) {
  // Total work, in double: the product of four extents can overflow int64.
  if (double(p.batch) * double(p.M) * double(p.N) * double(p.K) <= double(small_gemm_cutoff())) {
    small_matmul(p, x, y, out);
    return true;
  }
  return onednn_matmul(memory::data_type::f32, p, x, y, out, sizeof(float));
}

template <class T>
struct MatmulType : std::bool_constant<!std::is_same_v<T, bool>> {};

void matmul_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  OAR_SDK_CHECK(
      x.dtype() == y.dtype(), OAR_ERR_TYPE,
      "matmul: x is " << oar::sdk::dtype_name(x.dtype()) << " but y is " << oar::sdk::dtype_name(y.dtype()));
  Plan p = make_plan(x, y, attr_int_or(ctx, "transpose_x", 0) != 0, attr_int_or(ctx, "transpose_y", 0) != 0);
  OAR_SDK_CHECK(out.numel() == p.batch * p.M * p.N, OAR_ERR_INVALID_ARGUMENT,
                "matmul: output has " << out.numel() << " elements, expected " << p.batch * p.M * p.N);
  if (out.numel() == 0) return;
  dispatch<MatmulType>("matmul", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    if (p.K == 0) {  // empty contraction: zeros
      std::fill(po, po + out.numel(), T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (f32_matmul(p, px, py, po)) return;
    } else if constexpr (is_lowp_v<T>) {
      // oneDNN's own 16-bit kernel (float32 accumulation) where it beats the float32 path (lowp.h,
      // use_native_lowp): on AMX. float16 has none in this oneDNN on AVX-512.
      constexpr auto dt =
          std::is_same_v<T, oar::sdk::bfloat16> ? memory::data_type::bf16 : memory::data_type::f16;
      if (onednn_matmul(dt, p, px, py, po, sizeof(T))) return;
      // Otherwise the float32 kernels between vectorised conversions: the same float32 accumulation,
      // one rounding of each result.
      const AsF32<T> fx(0, px, x.numel()), fy(1, py, y.numel());
      const F32Buffer fo(2, out.numel());
      if (f32_matmul(p, fx.data(), fy.data(), fo.data())) {
        store_f32(fo.data(), po, out.numel());
        return;
      }
    }
    loop_matmul<T>(p, px, py, po);
  });
}

}  // namespace

void register_matmul_kernels(Registry& r) {
  // Contiguous inputs only: transposes are expressed through oneDNN strides, not copies.
  r.add("matmul", numeric_dtypes(), &matmul_kernel);
}

void matmul_shutdown() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.map.clear();
}

}  // namespace oar_cpu
