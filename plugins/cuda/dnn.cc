// conv, conv_grad_input, conv_grad_filter through cuDNN 9's convolution API (host code), and the
// plugin's cuDNN handles (handles.h).
//
// The ops (framework/src/ops_conv.cc; plugins/cpu/conv.cc is the reference): NCHW-style layouts
// [N, C, spatial...] with 1, 2 or 3 spatial dims, explicit paddings [b0, e0, b1, e1, ...], strides,
// dilations, groups. Paddle's 'SAME'/'VALID' and NHWC are resolved by the Python layer before the op.
// 1-D problems run as 2-D ones with a unit height. cuDNN's convolution descriptor has one padding
// per dim, so asymmetric paddings (b != e) are declined (the CPU kernel runs them).
//
// Descriptors and the algorithm are chosen once per problem (cudnnGet*Algorithm_v7, the first
// algorithm that succeeds and fits the math policy) and cached. Math: float32 uses CUDNN_FMA_MATH
// (exact float32; cuDNN's default math would allow TF32 on Ampere and later) unless OAR_ALLOW_TF32=1;
// float16/bfloat16 use tensor cores with float accumulation; float64 is plain FMA math.
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "handles.h"

namespace oar_cuda {

void throw_cudnn_error(cudnnStatus_t s, const char* what) {
  throw sdk::Error(OAR_ERR_EXTERNAL, std::string(what) + ": " + cudnnGetErrorString(s),
                   static_cast<int64_t>(s));
}

cudnnHandle_t cudnn_handle(int32_t device) {
  thread_local std::vector<cudnnHandle_t> hs;  // never destroyed (handles.h)
  set_device(device);
  if (static_cast<int32_t>(hs.size()) <= device) hs.resize(device + 1, nullptr);
  if (!hs[device]) cudnn_check(cudnnCreate(&hs[device]), "cudnnCreate");
  return hs[device];
}

namespace {

enum Kind : int32_t { kFwd = 0, kBwdData = 1, kBwdFilter = 2 };
const char* const kOpNames[] = {"conv", "conv_grad_input", "conv_grad_filter"};

// One convolution as cuDNN sees it: x [N, C, *in], w [Co, C/groups, *k], y [N, Co, *out], spatial rank
// 2 or 3 (1-D padded to 2-D at the front).
struct Conv {
  int32_t dtype = 0, device = 0, kind = 0, nd = 0;
  int32_t x[5] = {}, w[5] = {}, y[5] = {};
  int32_t pad[3] = {}, stride[3] = {}, dil[3] = {};
  int32_t groups = 1;
  int32_t tf32 = 0;  // all int32_t: no padding bytes in the key
  bool operator==(const Conv& o) const { return std::memcmp(this, &o, sizeof(Conv)) == 0; }
};
struct ConvHash {
  size_t operator()(const Conv& k) const {
    uint64_t h = 1469598103934665603ull;
    const auto* b = reinterpret_cast<const unsigned char*>(&k);
    for (size_t i = 0; i < sizeof(Conv); ++i) h = (h ^ b[i]) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

int32_t to_int(int64_t v, const char* what, const char* op) {
  if (v < 0 || v > kIntMax)
    sdk::decline(std::string(op) + ": " + what + " " + std::to_string(v) + " exceeds cuDNN's 32-bit sizes");
  return static_cast<int32_t>(v);
}

// The problem of a call of `kind`, or a decline. The operands' roles: conv (x, w) -> y,
// conv_grad_input (dy, w) -> dx, conv_grad_filter (x, dy) -> dw.
Conv conv_of(const sdk::KernelContext& c, int32_t kind) {
  const char* op = kOpNames[kind];
  const sdk::TensorView a = c.input(0), b = c.input(1), out = c.output(0);
  const sdk::TensorView& x = kind == kBwdData ? out : a;
  const sdk::TensorView& w = kind == kFwd ? b : kind == kBwdData ? b : out;
  const sdk::TensorView& y = kind == kFwd ? out : kind == kBwdData ? a : b;
  Conv p;
  p.dtype = a.dtype(), p.device = c.device(), p.kind = kind;
  const int32_t sd = x.ndim() - 2;  // spatial rank 1..3 (checked by shape inference)
  OAR_SDK_CHECK(sd >= 1 && sd <= 3, OAR_ERR_INVALID_ARGUMENT, op << ": x must be 3-D, 4-D or 5-D");
  p.nd = sd == 1 ? 2 : sd;
  const int32_t lead = p.nd - sd;  // 1 for a 1-D problem: a unit height in front
  std::vector<int64_t> s = c.attr_ints_or("strides", {}), pd = c.attr_ints_or("paddings", {}),
                       d = c.attr_ints_or("dilations", {});
  if (s.empty()) s.assign(sd, 1);
  if (pd.empty()) pd.assign(2 * sd, 0);
  if (d.empty()) d.assign(sd, 1);
  OAR_SDK_CHECK(static_cast<int32_t>(s.size()) == sd && static_cast<int32_t>(pd.size()) == 2 * sd &&
                    static_cast<int32_t>(d.size()) == sd,
                OAR_ERR_INVALID_ARGUMENT, op << ": strides/paddings/dilations do not fit the spatial rank");
  for (int32_t i = 0; i < 2; ++i) {
    p.x[i] = to_int(x.dim(i), "a dimension", op);
    p.w[i] = to_int(w.dim(i), "a dimension", op);
    p.y[i] = to_int(y.dim(i), "a dimension", op);
  }
  for (int32_t i = 0; i < p.nd; ++i) {
    const int32_t j = i - lead;  // the op's spatial dim, or < 0 for the unit height
    p.x[2 + i] = j < 0 ? 1 : to_int(x.dim(2 + j), "a dimension", op);
    p.w[2 + i] = j < 0 ? 1 : to_int(w.dim(2 + j), "a dimension", op);
    p.y[2 + i] = j < 0 ? 1 : to_int(y.dim(2 + j), "a dimension", op);
    if (j >= 0 && pd[2 * j] != pd[2 * j + 1])
      sdk::decline(std::string(op) + ": asymmetric padding (cuDNN pads both sides of a dim alike)");
    p.pad[i] = j < 0 ? 0 : to_int(pd[2 * j], "a padding", op);
    p.stride[i] = j < 0 ? 1 : to_int(s[j], "a stride", op);
    p.dil[i] = j < 0 ? 1 : to_int(d[j], "a dilation", op);
  }
  p.groups = to_int(c.attr_int_or("groups", 1), "groups", op);
  for (const sdk::TensorView* t : {&x, &w, &y}) to_int(t->numel(), "a tensor's element count", op);
  p.tf32 = p.dtype == OAR_DTYPE_FLOAT32 && allow_tf32() ? 1 : 0;
  return p;
}

cudnnDataType_t data_type(int32_t dtype) {
  switch (dtype) {
    case OAR_DTYPE_FLOAT16:
      return CUDNN_DATA_HALF;
    case OAR_DTYPE_BFLOAT16:
      return CUDNN_DATA_BFLOAT16;
    case OAR_DTYPE_FLOAT32:
      return CUDNN_DATA_FLOAT;
    case OAR_DTYPE_FLOAT64:
      return CUDNN_DATA_DOUBLE;
  }
  throw sdk::Error(OAR_ERR_TYPE, std::string("gpu conv: no kernel for ") + sdk::dtype_name(dtype));
}

struct Entry {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int32_t algo = 0;  // the cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of the kind
  size_t workspace = 0;
  ~Entry() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

cudnnTensorDescriptor_t tensor_desc(cudnnDataType_t t, int32_t n, const int32_t* dims) {
  int32_t strides[5];
  strides[n - 1] = 1;
  for (int32_t i = n - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  cudnnTensorDescriptor_t d = nullptr;
  cudnn_check(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor");
  const cudnnStatus_t s = cudnnSetTensorNdDescriptor(d, t, n, dims, strides);
  if (s != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyTensorDescriptor(d);
    throw_cudnn_error(s, "cudnnSetTensorNdDescriptor");
  }
  return d;
}

// An algorithm asking for more scratch memory than this is passed over (FFT algorithms can ask for
// gigabytes on large problems; the next ranked one is usually close in speed).
constexpr size_t kMaxWorkspace = size_t{1} << 30;

// Picks from cuDNN's ranked list the first algorithm that works within the workspace limit, and the
// math type to run it with. Exact float32 runs with CUDNN_FMA_MATH whatever the ranking said
// (CUDNN_DEFAULT_MATH lets float32 run as TF32 on Ampere and newer), preferring algorithms ranked under
// FMA math; tensor-op rankings are never taken for it.
template <typename Perf>
bool pick(const Conv& p, const Perf* perf, int n, Entry& e, cudnnMathType_t& math) {
  const bool exact_f32 = p.dtype == OAR_DTYPE_FLOAT32 && !p.tf32;
  for (int pass = 0; pass < (exact_f32 ? 2 : 1); ++pass)
    for (int i = 0; i < n; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kMaxWorkspace) continue;
      if (exact_f32 && perf[i].mathType != (pass == 0 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH)) continue;
      e.algo = static_cast<int32_t>(perf[i].algo);
      e.workspace = perf[i].memory;
      math = exact_f32 ? CUDNN_FMA_MATH : perf[i].mathType;
      return true;
    }
  return false;
}

// Descriptors and algorithm of a problem; nullptr when cuDNN offers no algorithm (declined).
std::shared_ptr<const Entry> make_entry(const Conv& p) {
  auto e = std::make_shared<Entry>();
  const cudnnDataType_t t = data_type(p.dtype);
  const int32_t n = p.nd + 2;
  e->x = tensor_desc(t, n, p.x);
  e->y = tensor_desc(t, n, p.y);
  cudnn_check(cudnnCreateFilterDescriptor(&e->w), "cudnnCreateFilterDescriptor");
  cudnn_check(cudnnSetFilterNdDescriptor(e->w, t, CUDNN_TENSOR_NCHW, n, p.w), "cudnnSetFilterNdDescriptor");
  cudnn_check(cudnnCreateConvolutionDescriptor(&e->conv), "cudnnCreateConvolutionDescriptor");
  // float16/bfloat16 accumulate in float32 (cuDNN's "pseudo half" configurations)
  const cudnnDataType_t compute = p.dtype == OAR_DTYPE_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnn_check(cudnnSetConvolutionNdDescriptor(e->conv, p.nd, p.pad, p.stride, p.dil, CUDNN_CROSS_CORRELATION,
                                              compute),
              "cudnnSetConvolutionNdDescriptor");
  cudnn_check(cudnnSetConvolutionGroupCount(e->conv, p.groups), "cudnnSetConvolutionGroupCount");
  cudnnMathType_t want = CUDNN_FMA_MATH;
  if (p.dtype == OAR_DTYPE_FLOAT16 || p.dtype == OAR_DTYPE_BFLOAT16) want = CUDNN_TENSOR_OP_MATH;
  if (p.tf32) want = CUDNN_DEFAULT_MATH;  // TF32 tensor cores allowed
  cudnn_check(cudnnSetConvolutionMathType(e->conv, want), "cudnnSetConvolutionMathType");

  cudnnHandle_t h = cudnn_handle(p.device);
  constexpr int kWant = 16;
  int found = 0;
  bool ok = false;
  cudnnMathType_t math = want;
  if (p.kind == kFwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[kWant];
    cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(h, e->x, e->w, e->conv, e->y, kWant, &found, perf),
                "cudnnGetConvolutionForwardAlgorithm_v7");
    ok = pick(p, perf, found, *e, math);
  } else if (p.kind == kBwdData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kWant];
    cudnn_check(
        cudnnGetConvolutionBackwardDataAlgorithm_v7(h, e->w, e->y, e->conv, e->x, kWant, &found, perf),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    ok = pick(p, perf, found, *e, math);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kWant];
    cudnn_check(
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, e->x, e->y, e->conv, e->w, kWant, &found, perf),
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    ok = pick(p, perf, found, *e, math);
  }
  if (!ok) return nullptr;
  // Run with the math type the algorithm was ranked for (FMA math for exact float32).
  cudnn_check(cudnnSetConvolutionMathType(e->conv, math), "cudnnSetConvolutionMathType");
  return e;
}

// cuDNN's "bad parameter" and "not supported" status families: a problem it cannot run, which the
// kernel declines (nothing was enqueued) rather than fails.
bool unsupported(int64_t status) { return status >= 2000 && status < 4000; }

// Runs a cuDNN call that enqueues the convolution: an unsupported problem is declined.
void run_checked(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS && unsupported(s))
    sdk::decline(std::string(what) + ": " + cudnnGetErrorString(s));
  cudnn_check(s, what);
}

struct Cache {
  std::mutex mu;
  std::unordered_map<Conv, std::shared_ptr<const Entry>, ConvHash> map;  // nullptr: no algorithm
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked: entries may be used during exit
  return *c;
}
constexpr size_t kMaxCached = 1024;

std::shared_ptr<const Entry> get_entry(const Conv& p) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    auto it = c.map.find(p);
    if (it != c.map.end()) return it->second;
  }
  std::shared_ptr<const Entry> e;
  try {
    e = make_entry(p);
  } catch (const sdk::Error& err) {
    if (!unsupported(err.native_code())) throw;  // a real failure, not "this problem is not supported"
  }
  std::lock_guard<std::mutex> lk(c.mu);
  if (c.map.size() >= kMaxCached) c.map.clear();
  return c.map.emplace(p, e).first->second;
}

template <int32_t kKind>
void conv_supports(sdk::KernelContext& c) {
  conv_of(c, kKind);
}

template <int32_t kKind>
void conv_kernel(sdk::KernelContext& c) {
  const char* op = kOpNames[kKind];
  const sdk::TensorView a = c.input(0), b = c.input(1), out = c.output(0);
  if (out.numel() == 0) return;
  gpuStream_t stream = stream_of(c);
  if (a.numel() == 0 || b.numel() == 0) {  // e.g. the filter gradient of an empty batch: zeros
    gpu_check(gpuMemsetAsync(out.raw(), 0, out.numel() * sdk::dtype_size(out.dtype()), stream), op);
    return;
  }
  const Conv p = conv_of(c, kKind);
  const std::shared_ptr<const Entry> e = get_entry(p);
  if (!e) sdk::decline(std::string(op) + ": cuDNN offers no algorithm for this problem");
  void* ws = e->workspace ? c.workspace(e->workspace) : nullptr;
  cudnnHandle_t h = cudnn_handle(p.device);
  cudnn_check(cudnnSetStream(h, stream), "cudnnSetStream");
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = p.dtype == OAR_DTYPE_FLOAT64;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  if (kKind == kFwd) {
    run_checked(cudnnConvolutionForward(h, alpha, e->x, a.raw(), e->w, b.raw(), e->conv,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(e->algo), ws, e->workspace,
                                        beta, e->y, out.raw()),
                "conv: cudnnConvolutionForward");
  } else if (kKind == kBwdData) {
    run_checked(cudnnConvolutionBackwardData(h, alpha, e->w, b.raw(), e->y, a.raw(), e->conv,
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(e->algo), ws,
                                             e->workspace, beta, e->x, out.raw()),
                "conv_grad_input: cudnnConvolutionBackwardData");
  } else {
    run_checked(cudnnConvolutionBackwardFilter(h, alpha, e->x, a.raw(), e->y, b.raw(), e->conv,
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(e->algo), ws,
                                               e->workspace, beta, e->w, out.raw()),
                "conv_grad_filter: cudnnConvolutionBackwardFilter");
  }
}

}  // namespace

void register_dnn(Registry& r) {
  const auto f = gpu_float_dtypes();
  r.add("conv", f, &conv_kernel<kFwd>, &conv_supports<kFwd>);
  r.add("conv_grad_input", f, &conv_kernel<kBwdData>, &conv_supports<kBwdData>);
  r.add("conv_grad_filter", f, &conv_kernel<kBwdFilter>, &conv_supports<kBwdFilter>);
}

}  // namespace oar_cuda
