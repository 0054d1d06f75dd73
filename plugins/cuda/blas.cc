// matmul through cuBLASLt (host code; the library runs the GPU work), and the plugin's cuBLAS(Lt)
// handles and TF32 policy (handles.h).
//
// matmul has numpy semantics (plugins/cpu/matmul.cc is the reference): 1-D operands, batch dims
// broadcast, transpose_x/transpose_y of the last two dims. Inputs arrive contiguous. One call is one
// cublasLtMatmul over a strided batch: a broadcast operand (a single matrix) gets batch stride 0, and a
// batch of X times one Y (nn.Linear on 3-D input) folds the batch into M. A "mixed" broadcast (neither
// operand full nor single, e.g. [2,1,M,K] x [3,K,N]) is one strided batch over the last batch dim per
// index of the other batch dims.
//
// Row-major trick: cuBLAS is column-major, and a row-major R x C matrix is a column-major C x R one,
// so out = X Y (row-major, M x N) is computed as out^T = Y^T X^T (column-major N x M): A = Y, B = X.
//
// The algorithm is chosen once per problem (dtype, sizes, transposes, batch strides, pointer
// alignment, device) by cublasLtMatmulAlgoGetHeuristic and cached with its descriptors. If cuBLASLt
// has no algorithm (e.g. float64 on a build whose Lt lacks it) the call goes to
// cublasGemmStridedBatchedEx instead.
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "handles.h"
#include "matmul_plan.h"

namespace oar_cuda {

// ---- errors, handles, policy -----------------------------------------------------------------------
void throw_cublas_error(cublasStatus_t s, const char* what) {
  throw sdk::Error(
      OAR_ERR_EXTERNAL,
      std::string(what) + ": " + cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) + ")",
      static_cast<int64_t>(s));
}

namespace {
template <typename H, typename Make>
H per_thread_handle(std::vector<H>& hs, int32_t device, Make make) {
  set_device(device);
  if (static_cast<int32_t>(hs.size()) <= device) hs.resize(device + 1, nullptr);
  if (!hs[device]) hs[device] = make();
  return hs[device];
}
}  // namespace

cublasLtHandle_t cublaslt_handle(int32_t device) {
  thread_local std::vector<cublasLtHandle_t> hs;  // never destroyed (handles.h)
  return per_thread_handle(hs, device, [] {
    cublasLtHandle_t h = nullptr;
    cublas_check(cublasLtCreate(&h), "cublasLtCreate");
    return h;
  });
}

cublasHandle_t cublas_handle(int32_t device) {
  thread_local std::vector<cublasHandle_t> hs;
  return per_thread_handle(hs, device, [] {
    cublasHandle_t h = nullptr;
    cublas_check(cublasCreate(&h), "cublasCreate");
    return h;
  });
}

bool allow_tf32() {
  static const bool v = [] {
    const char* e = std::getenv("OAR_ALLOW_TF32");
    return e && std::strcmp(e, "1") == 0;
  }();
  return v;
}

namespace {

constexpr uint64_t kMaxWorkspace = uint64_t{32} << 20;  // what the heuristic may ask for

// The largest power of two (at most 256) dividing the address and every step in bytes (batch stride,
// matrix size): the alignment cuBLASLt may assume for every matrix it reads or writes.
uint32_t alignment(const void* ptr, std::initializer_list<int64_t> steps) {
  uint64_t a = reinterpret_cast<uintptr_t>(ptr) | 256;
  for (int64_t s : steps) a |= static_cast<uint64_t>(s);
  return static_cast<uint32_t>(a & (~a + 1));
}

struct Key {
  int32_t dtype, device;
  int64_t m, n, k, count, stride_a, stride_b;
  bool ta, tb, tf32;
  uint32_t align_a, align_b, align_c;
  bool operator==(const Key& o) const { return std::memcmp(this, &o, sizeof(Key)) == 0; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    const auto* b = reinterpret_cast<const unsigned char*>(&k);
    for (size_t i = 0; i < sizeof(Key); ++i) h = (h ^ b[i]) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Descriptors and the chosen algorithm of one problem; immutable once made, shared by threads.
struct Entry {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool use_lt = false;  // false: cublasGemmStridedBatchedEx
  ~Entry() {
    if (op) cublasLtMatmulDescDestroy(op);
    for (auto l : {a, b, c})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
};

struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> map;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked: entries may be used during exit
  return *c;
}
constexpr size_t kMaxCached = 1024;

cudaDataType_t cuda_type(int32_t dtype) {
  switch (dtype) {
    case OAR_DTYPE_FLOAT16:
      return CUDA_R_16F;
    case OAR_DTYPE_BFLOAT16:
      return CUDA_R_16BF;
    case OAR_DTYPE_FLOAT32:
      return CUDA_R_32F;
    case OAR_DTYPE_FLOAT64:
      return CUDA_R_64F;
  }
  throw sdk::Error(OAR_ERR_TYPE, std::string("gpu matmul: no kernel for ") + sdk::dtype_name(dtype));
}

cublasComputeType_t compute_type(int32_t dtype) {
  if (dtype == OAR_DTYPE_FLOAT64) return CUBLAS_COMPUTE_64F;
  if (dtype == OAR_DTYPE_FLOAT32 && allow_tf32()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;  // float32 exactly; float16/bfloat16 accumulate in float32
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t count,
                                   int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  cublas_check(
      cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
      "cublasLtMatrixLayoutCreate");
  if (count > 1) {
    const int32_t c = static_cast<int32_t>(count);
    cublas_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c, sizeof(c)),
                 "cublasLtMatrixLayoutSetAttribute");
    cublas_check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof(stride)),
                 "cublasLtMatrixLayoutSetAttribute");
  }
  return l;
}

std::shared_ptr<const Entry> make_entry(const Key& key, const Problem& q) {
  auto e = std::make_shared<Entry>();
  const cudaDataType_t t = cuda_type(key.dtype);
  const cudaDataType_t scale = key.dtype == OAR_DTYPE_FLOAT64 ? CUDA_R_64F : CUDA_R_32F;
  cublas_check(cublasLtMatmulDescCreate(&e->op, compute_type(key.dtype), scale), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = q.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                          tb = q.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublas_check(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)),
               "cublasLtMatmulDescSetAttribute");
  cublas_check(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)),
               "cublasLtMatmulDescSetAttribute");
  // Stored shapes: A is m x k (k x m when transposed), B is k x n (n x k), C is m x n.
  e->a = make_layout(t, q.trans_a ? q.k : q.m, q.trans_a ? q.m : q.k, q.lda, q.count, q.stride_a);
  e->b = make_layout(t, q.trans_b ? q.n : q.k, q.trans_b ? q.k : q.n, q.ldb, q.count, q.stride_b);
  e->c = make_layout(t, q.m, q.n, q.ldc, q.count, q.stride_c);

  cublasLtMatmulPreference_t pref = nullptr;
  cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  decltype(&cublasLtMatmulPreferenceDestroy)>
      hold(pref, &cublasLtMatmulPreferenceDestroy);
  const uint64_t ws = kMaxWorkspace;
  cublas_check(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
      "cublasLtMatmulPreferenceSetAttribute");
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c}};
  for (const auto& [attr, v] : aligns)
    cublas_check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof(v)),
                 "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(cublaslt_handle(key.device), e->op, e->a, e->b,
                                                          e->c, e->c, pref, 1, &result, &found);
  if (s == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    e->use_lt = true;
    e->algo = result.algo;
    e->workspace = result.workspaceSize;
  } else if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) {
    throw_cublas_error(s, "matmul: cublasLtMatmulAlgoGetHeuristic");
  }
  return e;
}

std::shared_ptr<const Entry> get_entry(const Key& key, const Problem& q) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<const Entry> e = make_entry(key, q);  // outside the lock: the heuristic takes a while
  std::lock_guard<std::mutex> lk(c.mu);
  if (c.map.size() >= kMaxCached) c.map.clear();  // in-flight users keep theirs through the shared_ptr
  return c.map.emplace(key, e).first->second;
}

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// Shared by the query and the kernel: the plan, or a decline.
Plan checked_plan(const sdk::KernelContext& c) {
  const sdk::TensorView x = c.input(0), y = c.input(1);
  if (x.dtype() != y.dtype())
    sdk::decline(std::string("matmul: mixed dtypes ") + sdk::dtype_name(x.dtype()) + " x " +
                 sdk::dtype_name(y.dtype()));
  Plan p = make_plan(x, y, c.attr_int_or("transpose_x", 0) != 0, c.attr_int_or("transpose_y", 0) != 0);
  if (p.batch > kIntMax) sdk::decline("matmul: more than 2^31-1 matrices in the batch");
  return p;
}

void matmul_supports(sdk::KernelContext& c) { checked_plan(c); }

void matmul_kernel(sdk::KernelContext& c) {
  const Plan p = checked_plan(c);
  const sdk::TensorView x = c.input(0), y = c.input(1), out = c.output(0);
  OAR_SDK_CHECK(out.numel() == p.batch * p.M * p.N, OAR_ERR_INVALID_ARGUMENT,
                "matmul: output has " << out.numel() << " elements, expected " << p.batch * p.M * p.N);
  if (out.numel() == 0) return;
  const int32_t dtype = x.dtype(), device = c.device();
  const size_t elem = sdk::dtype_size(dtype);
  gpuStream_t stream = stream_of(c);
  if (p.K == 0) {  // an empty contraction: zeros
    gpu_check(gpuMemsetAsync(out.raw(), 0, out.numel() * elem, stream), "matmul: cudaMemsetAsync");
    return;
  }
  const Problem q = problem_of(p);
  Key key;
  std::memset(&key, 0, sizeof(key));  // padding too: the key is compared and hashed as bytes
  key.dtype = dtype, key.device = device;
  key.m = q.m, key.n = q.n, key.k = q.k, key.count = q.count;
  key.stride_a = q.stride_a, key.stride_b = q.stride_b;
  key.ta = q.trans_a, key.tb = q.trans_b, key.tf32 = compute_type(dtype) == CUBLAS_COMPUTE_32F_FAST_TF32;
  const int64_t el = static_cast<int64_t>(elem);
  // A mixed broadcast's launches start at whole matrices: their sizes count as steps too.
  const int64_t mat_x = p.mixed ? p.M * p.K * el : 0, mat_y = p.mixed ? p.K * p.N * el : 0;
  key.align_a = alignment(y.raw(), {q.stride_a * el, mat_y});
  key.align_b = alignment(x.raw(), {q.stride_b * el, mat_x});
  key.align_c =
      alignment(out.raw(), {q.count > 1 ? q.stride_c * el : 0, p.mixed ? q.count * q.stride_c * el : 0});
  const std::shared_ptr<const Entry> e = get_entry(key, q);
  const std::vector<Launch> runs = launches(p);
  auto at = [](const sdk::TensorView& t, int64_t off, size_t elem) {
    return static_cast<void*>(static_cast<char*>(t.raw()) + off * static_cast<int64_t>(elem));
  };

  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = dtype == OAR_DTYPE_FLOAT64;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  if (e->use_lt) {
    void* ws = e->workspace ? c.workspace(e->workspace) : nullptr;
    cublasLtHandle_t h = cublaslt_handle(device);
    for (size_t i = 0; i < runs.size(); ++i) {
      void* o = at(out, runs[i].out, elem);
      const cublasStatus_t s =
          cublasLtMatmul(h, e->op, alpha, at(y, runs[i].y, elem), e->a, at(x, runs[i].x, elem), e->b, beta, o,
                         e->c, o, e->c, &e->algo, ws, e->workspace, stream);
      // Not supported at the first launch: nothing was enqueued, the CPU kernel runs this call.
      if (s == CUBLAS_STATUS_NOT_SUPPORTED && i == 0)
        sdk::decline("matmul: cublasLtMatmul does not support this problem");
      cublas_check(s, "matmul: cublasLtMatmul");
    }
    return;
  }
  // No cuBLASLt algorithm: the classic strided-batched GEMM (32-bit sizes).
  for (int64_t v : {q.m, q.n, q.k, q.lda, q.ldb, q.ldc})
    if (v > kIntMax)
      sdk::decline("matmul: cuBLASLt has no algorithm and a size exceeds cuBLAS's 32-bit limit");
  cublasHandle_t h = cublas_handle(device);
  cublas_check(cublasSetStream(h, stream), "cublasSetStream");
  const cudaDataType_t t = cuda_type(dtype);
  for (const Launch& run : runs)
    cublas_check(
        cublasGemmStridedBatchedEx(
            h, q.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, q.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
            static_cast<int>(q.m), static_cast<int>(q.n), static_cast<int>(q.k), alpha, at(y, run.y, elem), t,
            static_cast<int>(q.lda), q.stride_a, at(x, run.x, elem), t, static_cast<int>(q.ldb), q.stride_b,
            beta, at(out, run.out, elem), t, static_cast<int>(q.ldc), q.stride_c, static_cast<int>(q.count),
            compute_type(dtype), CUBLAS_GEMM_DEFAULT),
        "matmul: cublasGemmStridedBatchedEx");
}

}  // namespace

void register_blas(Registry& r) {
  allow_tf32();  // the policy is fixed at plugin init
  // Contiguous inputs only (no OAR_KERNEL_STRIDED_INPUTS): transposes are the attributes' business.
  r.add("matmul", gpu_float_dtypes(), &matmul_kernel, &matmul_supports);
}

// This build has cuBLASLt, cuDNN and NCCL (cuda_common.h).
#define OAR_STR2(x) #x
#define OAR_STR(x) OAR_STR2(x)
const char* library_versions() {
  return "cuBLASLt " OAR_STR(CUBLAS_VER_MAJOR) "." OAR_STR(CUBLAS_VER_MINOR) ", cuDNN " OAR_STR(
      CUDNN_MAJOR) "." OAR_STR(CUDNN_MINOR) ", NCCL " OAR_STR(NCCL_MAJOR) "." OAR_STR(NCCL_MINOR);
}

bool register_library_blas(Registry& r) {
  register_blas(r);
  register_dnn(r);
  return true;
}

}  // namespace oar_cuda
