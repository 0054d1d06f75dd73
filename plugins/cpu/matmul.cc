// matmul with numpy semantics (1-D operands, broadcast batch dims, optional transposes of the last two
// dims). float32, bfloat16 and float16 run through oneDNN (a 16-bit type whose primitive this CPU lacks
// through oneDNN's float32 path, converted in and out a vector at a time); float64 and complex through
// BLAS gemm (OpenBLAS, blas.cc); integers through a blocked, vectorised kernel. Inputs arrive strided
// (views): a transposed view of a contiguous tensor is read in place by every path (the transpose flag
// flipped), any other layout by oneDNN's strided descriptors in float32, else copied here (read_operand).
//
// oneDNN primitives are created once per problem shape and cached: creating one costs far more than
// a small matmul, and the budget is "within 10% of oneDNN called directly".
#include <cstdlib>
#include <dnnl.hpp>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "blas.h"
#include "contiguous.h"
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

Plan make_plan(const std::vector<int64_t>& xd, const std::vector<int64_t>& yd, bool tx, bool ty) {
  Plan p;
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
  int threads = oar::sdk::max_threads();  // the OpenMP count it is created for (adapt_threads)
  bool operator==(const Key& o) const {
    return dt == o.dt && bx == o.bx && by == o.by && b == o.b && M == o.M && K == o.K && N == o.N &&
           tx == o.tx && ty == o.ty && threads == o.threads;
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = static_cast<uint64_t>(k.dt) * 0x9e3779b97f4a7c15ull;
    for (int64_t v : {k.bx, k.by, k.b, k.M, k.K, k.N, int64_t(k.tx) * 2 + int64_t(k.ty), int64_t(k.threads)})
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

// ---- float64 and complex: BLAS gemm ----------------------------------------------------------------
// Row-major C = X * Y is column-major C^T = Y^T * X^T, and a row-major matrix read column-major is its
// transpose: so gemm gets Y's storage first, X's second, and a stored transpose becomes gemm's 'T'.
void gemm(const Blas& b, char ta, char tb, int m, int n, int k, const double* a, int lda, const double* bm,
          int ldb, double* c, int ldc) {
  const double one = 1, zero = 0;
  b.dgemm_(&ta, &tb, &m, &n, &k, &one, a, &lda, bm, &ldb, &zero, c, &ldc);
}
void gemm(const Blas& b, char ta, char tb, int m, int n, int k, const std::complex<float>* a, int lda,
          const std::complex<float>* bm, int ldb, std::complex<float>* c, int ldc) {
  const std::complex<float> one = 1, zero = 0;
  b.cgemm_(&ta, &tb, &m, &n, &k, &one, a, &lda, bm, &ldb, &zero, c, &ldc);
}
void gemm(const Blas& b, char ta, char tb, int m, int n, int k, const std::complex<double>* a, int lda,
          const std::complex<double>* bm, int ldb, std::complex<double>* c, int ldc) {
  const std::complex<double> one = 1, zero = 0;
  b.zgemm_(&ta, &tb, &m, &n, &k, &one, a, &lda, bm, &ldb, &zero, c, &ldc);
}

// Below this many multiply-adds per matrix, a batch runs one matrix per thread (each gemm on one
// thread); above, the matrices run in turn and OpenBLAS threads each one.
constexpr double kGemmPerThread = 64.0 * 64 * 64;

// The whole plan through BLAS; false when no BLAS loads or an extent exceeds BLAS's 32-bit ints.
template <class T>
bool blas_matmul(const Plan& p, const T* x, const T* y, T* out) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  const bool fold = p.batch > 1 && p.y_batch == 1 && !p.tx && p.x_index.empty();  // batch into M
  const int64_t M = fold ? p.batch * p.M : p.M;
  if (M > kMax || p.N > kMax || p.K > kMax || !blas_available()) return false;
  const Blas& b = blas("matmul");
  const int m = static_cast<int>(M), n = static_cast<int>(p.N), k = static_cast<int>(p.K);
  const char ty = p.ty ? 'T' : 'N', tx = p.tx ? 'T' : 'N';
  const int ldy = p.ty ? k : n, ldx = p.tx ? static_cast<int>(p.M) : k;
  if (fold || p.batch == 1) {
    gemm(b, ty, tx, n, m, k, y, ldy, x, ldx, out, n);
    return true;
  }
  const int64_t mk = p.M * p.K, kn = p.K * p.N, mn = p.M * p.N;
  const int pm = static_cast<int>(p.M);
  auto one = [&](int64_t i) {
    gemm(b, ty, tx, n, pm, k, y + y_of(p, i) * kn, ldy, x + x_of(p, i) * mk, ldx, out + i * mn, n);
  };
  if (double(p.M) * double(p.N) * double(p.K) < kGemmPerThread) {
    parallel_for(0, p.batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < p.batch; ++i) one(i);
  }
  return true;
}

// ---- integers: a blocked kernel ---------------------------------------------------------------------
// Wrapping arithmetic in the unsigned type of the same width gives numpy's wrapped result. Four rows of
// X share each load of a row of Y, and a block of columns of C stays in L1 across the whole K loop;
// the inner loop runs along contiguous rows of Y and C and vectorises (AVX2 chosen at run time).
constexpr int64_t kIntRows = 4;
constexpr int64_t kIntCols = 512;

// c rows [i0, i0 + rows) (rows <= kIntRows), columns [j0, j1) of A * b; A(i, k) = a[i * a_rs + k * a_cs],
// b row-major K x N, c row-major M x N.
template <class U>
__attribute__((always_inline)) inline void int_gemm_block(int64_t rows, int64_t j0, int64_t j1, int64_t N,
                                                          int64_t K, const U* __restrict a, int64_t a_rs,
                                                          int64_t a_cs, const U* __restrict b,
                                                          U* __restrict c) {
  const int64_t w = j1 - j0;
  U* __restrict c0 = c + j0;
  U* __restrict c1 = c0 + (rows > 1 ? N : 0);  // missing rows alias row 0 with a zero multiplier
  U* __restrict c2 = c0 + (rows > 2 ? 2 * N : 0);
  U* __restrict c3 = c0 + (rows > 3 ? 3 * N : 0);
  U acc[kIntRows][kIntCols] = {};
  for (int64_t k = 0; k < K; ++k) {
    const U a0 = a[k * a_cs], a1 = rows > 1 ? a[a_rs + k * a_cs] : 0;
    const U a2 = rows > 2 ? a[2 * a_rs + k * a_cs] : 0, a3 = rows > 3 ? a[3 * a_rs + k * a_cs] : 0;
    const U* __restrict bk = b + k * N + j0;
    for (int64_t j = 0; j < w; ++j) {
      const U v = bk[j];
      acc[0][j] += a0 * v;
      acc[1][j] += a1 * v;
      acc[2][j] += a2 * v;
      acc[3][j] += a3 * v;
    }
  }
  // Row 0 last: missing rows alias it.
  if (rows > 3) std::copy(acc[3], acc[3] + w, c3);
  if (rows > 2) std::copy(acc[2], acc[2] + w, c2);
  if (rows > 1) std::copy(acc[1], acc[1] + w, c1);
  std::copy(acc[0], acc[0] + w, c0);
}

template <class U>
__attribute__((target("avx2"))) void int_gemm_avx2(int64_t rows, int64_t j0, int64_t j1, int64_t N, int64_t K,
                                                   const U* a, int64_t a_rs, int64_t a_cs, const U* b, U* c) {
  int_gemm_block(rows, j0, j1, N, K, a, a_rs, a_cs, b, c);
}
template <class U>
void int_gemm_base(int64_t rows, int64_t j0, int64_t j1, int64_t N, int64_t K, const U* a, int64_t a_rs,
                   int64_t a_cs, const U* b, U* c) {
  int_gemm_block(rows, j0, j1, N, K, a, a_rs, a_cs, b, c);
}

template <class T>
void int_matmul(const Plan& p, const T* xs, const T* ys, T* outs) {
  using U = std::make_unsigned_t<T>;
  const U* x = reinterpret_cast<const U*>(xs);
  const U* y = reinterpret_cast<const U*>(ys);
  U* out = reinterpret_cast<U*>(outs);
  static const bool avx2 = __builtin_cpu_supports("avx2");
  const int64_t M = p.M, K = p.K, N = p.N;
  std::vector<U> yt;  // a transposed Y, made row-major once
  if (p.ty) {
    yt.resize(static_cast<size_t>(p.y_batch * K * N));
    for (int64_t b = 0; b < p.y_batch; ++b)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) yt[b * K * N + k * N + j] = y[b * K * N + j * K + k];
    y = yt.data();
  }
  const int64_t a_rs = p.tx ? 1 : K, a_cs = p.tx ? M : 1;
  const int64_t row_blocks = (M + kIntRows - 1) / kIntRows, col_blocks = (N + kIntCols - 1) / kIntCols;
  const int64_t tasks = p.batch * row_blocks * col_blocks;
  const int64_t grain =
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, kIntRows * std::min(N, kIntCols) * K));
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t cb = t % col_blocks, rb = (t / col_blocks) % row_blocks,
                    b = t / (col_blocks * row_blocks);
      const int64_t i0 = rb * kIntRows, rows = std::min(kIntRows, M - i0);
      const int64_t j0 = cb * kIntCols, j1 = std::min(N, j0 + kIntCols);
      const U* a = x + x_of(p, b) * M * K + i0 * a_rs;
      (avx2 ? int_gemm_avx2<U> : int_gemm_base<U>)(rows, j0, j1, N, K, a, a_rs, a_cs, y + y_of(p, b) * K * N,
                                                   out + b * M * N + i0 * N);
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

// An operand as the paths above read it: a contiguous block of `dims`, read transposed when `flip` (a
// view with its last two dims swapped, x.T or a transpose([0, 2, 1]), is its contiguous base read
// transposed: no copy); any other layout is copied into `own`.
struct Operand {
  std::vector<int64_t> dims;
  bool flip = false;
  const void* data = nullptr;
  ContiguousCopy own;
};

bool swapped_contiguous(const TensorView& t) {
  const int32_t r = t.ndim();
  if (r < 2) return false;
  std::vector<int64_t> d = t.shape(), st(t.strides(), t.strides() + r);
  std::swap(d[r - 1], d[r - 2]);
  std::swap(st[r - 1], st[r - 2]);
  const std::vector<int64_t> want = contiguous_strides(d);
  for (int32_t i = 0; i < r; ++i)
    if (d[i] != 1 && st[i] != want[i]) return false;
  return true;
}

// in place when contiguous or transposed-contiguous (`copy` false: nothing else is accepted).
bool read_operand(const TensorView& t, bool copy, Operand& o) {
  o.dims = t.shape();
  if (t.is_contiguous() || t.numel() == 0) {
    o.data = t.raw();
    return true;
  }
  if (swapped_contiguous(t)) {
    std::swap(o.dims[o.dims.size() - 1], o.dims[o.dims.size() - 2]);
    o.flip = true;
    o.data = t.raw();
    return true;
  }
  if (!copy) return false;
  o.own = ContiguousCopy(t);
  o.data = o.own.data();
  return true;
}

bool strided_f32(const TensorView& x, const TensorView& y, bool tx, bool ty, const Plan& p, float* out);

void matmul_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  OAR_SDK_CHECK(
      x.dtype() == y.dtype(), OAR_ERR_TYPE,
      "matmul: x is " << oar::sdk::dtype_name(x.dtype()) << " but y is " << oar::sdk::dtype_name(y.dtype()));
  const bool tx = attr_int_or(ctx, "transpose_x", 0) != 0, ty = attr_int_or(ctx, "transpose_y", 0) != 0;
  Plan p = make_plan(x.shape(), y.shape(), tx, ty);  // checks the shapes whatever the layouts
  OAR_SDK_CHECK(out.numel() == p.batch * p.M * p.N, OAR_ERR_INVALID_ARGUMENT,
                "matmul: output has " << out.numel() << " elements, expected " << p.batch * p.M * p.N);
  if (out.numel() == 0) return;
  Operand ox, oy;
  if (!read_operand(x, false, ox) || !read_operand(y, false, oy)) {
    // Another layout (a head split's [b, heads, L, d] view of [b, L, heads, d], a column slice, a stride-0
    // batch): float32 above the small-problem cutoff goes to oneDNN with the strides as they are.
    if (x.dtype() == OAR_DTYPE_FLOAT32 && p.K > 0 &&
        double(p.batch) * double(p.M) * double(p.N) * double(p.K) > double(small_gemm_cutoff()) &&
        strided_f32(x, y, tx, ty, p, out.data<float>()))
      return;
    read_operand(x, true, ox);
    read_operand(y, true, oy);
  }
  if (ox.flip || oy.flip) p = make_plan(ox.dims, oy.dims, tx != ox.flip, ty != oy.flip);
  dispatch<MatmulType>("matmul", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(ox.data);
    const T* py = static_cast<const T*>(oy.data);
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
    if constexpr (std::is_same_v<T, double> || is_complex_v<T>) {
      if (blas_matmul(p, px, py, po)) return;
    } else if constexpr (std::is_integral_v<T>) {
      int_matmul(p, px, py, po);
      return;
    }
    loop_matmul<T>(p, px, py, po);
  });
}

// ---- strided batched products for other kernels (attention.cc) ----------------------------------------
// Operands described by dims and strides as oneDNN memory descriptors: a transpose is a swap of the
// last two dims and strides, a head split of [batch, L, heads, d] a batch dim with stride d. Cached
// per (dims, strides) like the plain primitives, in a map of its own.
struct StridedKey {
  std::vector<int64_t> v;  // dtype, rank, then dims and strides of x, y and out
  bool operator==(const StridedKey& o) const { return v == o.v; }
};
struct StridedKeyHash {
  size_t operator()(const StridedKey& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};
struct StridedCache {
  std::mutex mu;
  std::unordered_map<StridedKey, std::shared_ptr<Prim>, StridedKeyHash> map;  // nullptr: oneDNN cannot
};
StridedCache& strided_cache() {
  static StridedCache* c = new StridedCache;  // leaked on purpose, as cache()
  return *c;
}

// descs() gives (src, wei, dst), made only on a cache miss (three descriptors cost ~0.6 us per call).
template <class Descs>
std::shared_ptr<Prim> get_strided_prim(memory::data_type dt, const StridedKey& k, const Descs& descs) {
  StridedCache& c = strided_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(k);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<Prim> p;
  try {
    p = std::make_shared<Prim>();
    std::tie(p->src, p->wei, p->dst) = descs();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->src, p->wei, p->dst), attr, engine());
    const std::string impl = pd.impl_info_str();
    if (dt != memory::data_type::f32 && !use_native_lowp(impl.c_str())) p = nullptr;
    // oneDNN takes layouts its optimised kernels do not (a stride-0 operand matrix: the gradient of a sum
    // broadcast into a matmul) with its reference kernel, 1000x slower than a copy and a gemm (a
    // [512,256] x [256,2048] product: 7.8 s against 6 ms); such layouts are copied instead.
    if (impl.rfind("ref", 0) == 0) p = nullptr;
    if (p) {
      p->scratch = pd.scratchpad_desc();
      p->scratch_bytes = p->scratch.get_size();
      p->prim = dnnl::matmul(pd);
      p->args = make_args(*p, nullptr, nullptr, nullptr);
    }
  } catch (const dnnl::error&) {
    p = nullptr;
  }
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= kMaxCached) c.map.clear();
  return c.map.emplace(k, p).first->second;
}

}  // namespace

// Declared in attention.cc, its caller: out = x * y in float32 for [batch..., rows, cols] operands of
// rank ndim with any strides (a transposed operand: its last two dims and strides swapped); batch dims
// equal, or 1 to broadcast. false when oneDNN has no primitive for it.
bool strided_matmul_f32(int32_t ndim, const int64_t* xd, const int64_t* xs, const float* x, const int64_t* yd,
                        const int64_t* ys, const float* y, const int64_t* od, const int64_t* os, float* out) {
  if (ndim < 2 || ndim > DNNL_MAX_NDIMS) return false;
  StridedKey k;
  k.v.reserve(2 + 6 * static_cast<size_t>(ndim));
  k.v.push_back(static_cast<int64_t>(memory::data_type::f32));
  k.v.push_back(ndim);
  for (const int64_t* a : {xd, xs, yd, ys, od, os}) k.v.insert(k.v.end(), a, a + ndim);
  for (const int64_t* st : {xs, ys, os})  // oneDNN's descriptors take no negative strides (flipped views)
    for (int32_t i = 0; i < ndim; ++i)
      if (st[i] < 0) return false;
  auto desc = [&](const int64_t* d, const int64_t* st) {
    return memory::desc(memory::dims(d, d + ndim), memory::data_type::f32, memory::dims(st, st + ndim));
  };
  std::shared_ptr<Prim> p;
  try {
    p = get_strided_prim(memory::data_type::f32, k,
                         [&] { return std::make_tuple(desc(xd, xs), desc(yd, ys), desc(od, os)); });
  } catch (const dnnl::error&) {
    return false;  // a layout its descriptors cannot express
  }
  if (!p) return false;
  try {
    execute(*p, x, y, out);
    return true;
  } catch (const dnnl::error& e) {
    throw oar::sdk::Error(OAR_ERR_EXTERNAL, std::string("matmul: oneDNN failed: ") + e.what(),
                          static_cast<int64_t>(e.status));
  }
}

namespace {
// The plan's operands in float32 through strided_matmul_f32: both padded to the output's rank ([k] as
// [1, k] / [k, 1]), a requested transpose a swap of the last two dims and strides, a stride-0 (expanded)
// batch dim a broadcast one of size 1. false when oneDNN takes no such layout (negative strides).
bool strided_f32(const TensorView& x, const TensorView& y, bool tx, bool ty, const Plan& p, float* out) {
  int32_t nb = std::max(x.ndim(), y.ndim()) - 2;
  if (nb < 0) nb = 0;
  const int32_t r = nb + 2;
  auto full = [&](const TensorView& t, bool vec_is_row, bool tr, std::vector<int64_t>& d,
                  std::vector<int64_t>& st) {
    std::vector<int64_t> td = t.shape(), ts(t.strides(), t.strides() + t.ndim());
    if (td.size() == 1) {  // [k] as [1, k] (x) or [k, 1] (y)
      td.insert(vec_is_row ? td.begin() : td.end(), 1);
      ts.insert(vec_is_row ? ts.begin() : ts.end(), td[vec_is_row ? 1 : 0] * ts[0]);
      tr = false;
    }
    if (tr) {
      std::swap(td[td.size() - 1], td[td.size() - 2]);
      std::swap(ts[ts.size() - 1], ts[ts.size() - 2]);
    }
    d.assign(static_cast<size_t>(r) - td.size(), 1);
    st.assign(d.size(), 0);
    d.insert(d.end(), td.begin(), td.end());
    st.insert(st.end(), ts.begin(), ts.end());
    for (int32_t i = 0; i < r; ++i) {
      if (i < nb && st[i] == 0) d[i] = 1;                           // expanded: broadcast
      if (d[i] == 1) st[i] = i + 1 < r ? d[i + 1] * st[i + 1] : 1;  // any stride is right for size 1
    }
  };
  std::vector<int64_t> xd, xs, yd, ys;
  full(x, true, tx, xd, xs);
  full(y, false, ty, yd, ys);
  std::vector<int64_t> od(static_cast<size_t>(r));
  for (int32_t i = 0; i < nb; ++i) od[i] = std::max(xd[i], yd[i]);
  od[nb] = p.M, od[nb + 1] = p.N;
  const std::vector<int64_t> os = contiguous_strides(od);
  return strided_matmul_f32(r, xd.data(), xs.data(), x.data<float>(), yd.data(), ys.data(), y.data<float>(),
                            od.data(), os.data(), out);
}
}  // namespace

void register_matmul_kernels(Registry& r) {
  // Strided inputs: a transposed view is read in place (the transpose flag flipped), other layouts through
  // oneDNN's strided descriptors (float32) or copied in the kernel.
  r.add("matmul", numeric_dtypes(), &matmul_kernel, kStrided);
}

void matmul_shutdown() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.map.clear();
  StridedCache& sc = strided_cache();
  std::lock_guard<std::mutex> slock(sc.mu);
  sc.map.clear();
}

// ---- for fused.cc (fused_gemm_epilogue) ----------------------------------------------------------
// One R x K times K x N float32 product through the small-problem loop, exactly as matmul runs it (so
// the fused op's rows equal matmul's bit for bit); false, doing nothing, above the cutoff or for K 0.
// matmul's small-problem cutoff (batch*M*N*K), for fused.cc's own product loops.
int64_t small_gemm_work_cutoff() { return small_gemm_cutoff(); }

bool small_gemm_f32(int64_t R, int64_t K, int64_t N, bool tx, bool ty, const float* x, const float* y,
                    float* out) {
  if (K == 0 || double(R) * double(K) * double(N) > double(small_gemm_cutoff())) return false;
  Plan p;
  p.M = R, p.K = K, p.N = N, p.tx = tx, p.ty = ty;
  small_matmul(p, x, y, out);
  return true;
}

}  // namespace oar_cpu
