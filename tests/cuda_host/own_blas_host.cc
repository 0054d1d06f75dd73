// Host harness for the gpu plugin's own matmul and convolution kernels (plugins/cuda/own_blas.cu): the
// plugin's registration, planning and launch code runs unchanged over host buffers, its kernels under the
// block emulator (block_emu.h), and test_cuda_own_kernels_host.py compares the results with the CPU plugin.
// Built with a plain C++ compiler against the CUDA headers; no GPU, no CUDA runtime library.
//
// Protocol (stdin, whitespace separated): OP DTYPE GRID_CAP, then the attributes (a count, then per
// attribute NAME i VALUE or NAME I COUNT VALUES...), then each input (NDIM DIMS... VALUES...), then the
// output's NDIM DIMS.... stdout: the output's values, one a line. A kernel error: "error CODE message" on
// stderr, exit status 2.
#include "block_emu.h"
// block_emu.h first
#include <iostream>
#include <map>
#include <string>

#include "own_blas.cu"

namespace oar_cuda {
namespace {
std::map<std::string, std::pair<sdk::KernelBody, sdk::SupportsBody>> g_kernels;
int64_t g_grid_cap = 4;
}  // namespace

void Registry::add(const char* op, const std::vector<OarDType>&, sdk::KernelBody body, uint32_t) {
  g_kernels[op] = {body, nullptr};
}
void Registry::add(const char* op, const std::vector<OarDType>&, sdk::KernelBody body, sdk::SupportsBody s,
                   uint32_t) {
  g_kernels[op] = {body, s};
}
// Few blocks, so the kernels' grid-stride loops go round several times.
int64_t grid_for(int64_t n, int32_t, int threads) {
  return std::max<int64_t>(1, std::min<int64_t>((n + threads - 1) / threads, g_grid_cap));
}
void throw_gpu_error(gpuError_t e, const std::string& what) {
  throw sdk::Error(OAR_ERR_EXTERNAL, what + ": runtime error " + std::to_string(static_cast<int>(e)));
}
void set_device(int32_t) {}
DeviceError* device_error_word(int32_t) { return nullptr; }
}  // namespace oar_cuda

// ---- a minimal core: errors and the kernel context over host buffers --------------------------------------
struct OarError {
  int32_t code;
  std::string message;
};
struct OarKernelContext {
  std::vector<OarTensorDesc> inputs, outputs;
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::vector<int64_t>> lists;
};

namespace {
using namespace oar_cuda;

OarError* not_found(const char* name) {
  return new OarError{OAR_ERR_NOT_FOUND, std::string("no attribute ") + name};
}

void install_core() {
  static OarKernelApi k{};
  k.struct_size = sizeof(k);
  k.num_inputs = [](const OarKernelContext* c) { return static_cast<int32_t>(c->inputs.size()); };
  k.input = [](const OarKernelContext* c, int32_t i) -> const OarTensorDesc* { return &c->inputs.at(i); };
  k.num_outputs = [](const OarKernelContext* c) { return static_cast<int32_t>(c->outputs.size()); };
  k.output = [](OarKernelContext* c, int32_t i) -> const OarTensorDesc* { return &c->outputs.at(i); };
  k.stream = [](const OarKernelContext*) -> OarStream { return nullptr; };
  k.device = [](const OarKernelContext*) { return int32_t{0}; };
  k.attr_int = [](const OarKernelContext* c, const char* name, int64_t* v) -> OarError* {
    auto it = c->ints.find(name);
    if (it == c->ints.end()) return not_found(name);
    *v = it->second;
    return nullptr;
  };
  k.attr_ints = [](const OarKernelContext* c, const char* name, const int64_t** v, int64_t* n) -> OarError* {
    auto it = c->lists.find(name);
    if (it == c->lists.end()) return not_found(name);
    *v = it->second.data();
    *n = static_cast<int64_t>(it->second.size());
    return nullptr;
  };
  static OarCoreServices s{};
  s.struct_size = sizeof(s);
  s.abi_major = OAR_ABI_VERSION_MAJOR;
  s.abi_minor = OAR_ABI_VERSION_MINOR;
  s.error_new = [](int32_t code, int64_t, const char* m) { return new OarError{code, m}; };
  s.error_free = [](OarError* e) { delete e; };
  s.error_code = [](const OarError* e) { return e->code; };
  s.error_native_code = [](const OarError*) { return int64_t{0}; };
  s.error_message = [](const OarError* e) { return e->message.c_str(); };
  s.kernel_api = &k;
  sdk::init_services(&s);
}

struct Buffer {
  std::vector<int64_t> dims, strides;
  std::vector<char> bytes;
};

// A contiguous host tensor of `dtype` with `dims`, filled from `values` (rounded to the dtype) if given.
OarTensorDesc make_tensor(Buffer& b, int32_t dtype, const std::vector<double>* values) {
  const int64_t nd = static_cast<int64_t>(b.dims.size());
  b.strides.assign(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) b.strides[d] = b.strides[d + 1] * b.dims[d + 1];
  int64_t n = 1;
  for (int64_t d : b.dims) n *= d;
  b.bytes.assign(static_cast<size_t>(n) * sdk::dtype_size(dtype), 0x7f);  // garbage where nothing is written
  if (values)
    dispatch_float(dtype, "harness", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = reinterpret_cast<T*>(b.bytes.data());
      for (int64_t i = 0; i < n; ++i) p[i] = from_acc<T>(static_cast<acc_t<T>>((*values)[i]));
    });
  OarTensorDesc t{};
  t.struct_size = sizeof(t);
  t.data = b.bytes.data();
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(nd);
  t.dims = b.dims.data();
  t.strides = b.strides.data();
  return t;
}

std::vector<int64_t> read_dims() {
  int64_t nd;
  std::cin >> nd;
  std::vector<int64_t> d(nd);
  for (auto& v : d) std::cin >> v;
  return d;
}
}  // namespace

int main() {
  install_core();
  sdk::KernelRegistrar registrar(nullptr);  // never used: Registry::add above only records the bodies
  Registry reg(registrar);
  register_own_blas(reg);
  std::string op;
  int32_t dtype;
  std::cin >> op >> dtype >> g_grid_cap;
  OarKernelContext ctx;
  int nattr;
  std::cin >> nattr;
  for (int a = 0; a < nattr; ++a) {
    std::string name, kind;
    std::cin >> name >> kind;
    if (kind == "i") {
      std::cin >> ctx.ints[name];
    } else {
      int64_t n;
      std::cin >> n;
      auto& l = ctx.lists[name];
      l.resize(n);
      for (auto& v : l) std::cin >> v;
    }
  }
  Buffer bufs[3];
  for (int i = 0; i < 2; ++i) {
    bufs[i].dims = read_dims();
    int64_t n = 1;
    for (int64_t d : bufs[i].dims) n *= d;
    std::vector<double> v(n);
    for (auto& x : v) {
      std::string s;
      std::cin >> s;  // strtod reads nan and inf
      x = std::strtod(s.c_str(), nullptr);
    }
    ctx.inputs.push_back(make_tensor(bufs[i], dtype, &v));
  }
  bufs[2].dims = read_dims();
  ctx.outputs.push_back(make_tensor(bufs[2], dtype, nullptr));
  if (!std::cin) {
    std::fprintf(stderr, "own_blas_host: malformed input\n");
    return 1;
  }
  auto it = g_kernels.find(op);
  if (it == g_kernels.end()) {
    std::fprintf(stderr, "own_blas_host: no kernel %s\n", op.c_str());
    return 1;
  }
  sdk::KernelContext c(&ctx);
  try {
    if (it->second.second) it->second.second(c);
    it->second.first(c);
  } catch (const sdk::Error& e) {
    std::fprintf(stderr, "error %d %s\n", static_cast<int>(e.code()), e.what());
    return 2;
  }
  const sdk::TensorView out = c.output(0);
  dispatch_float(dtype, "harness", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(out.raw());
    for (int64_t i = 0; i < out.numel(); ++i) std::printf("%.17g\n", static_cast<double>(to_acc<T>(p[i])));
  });
  return 0;
}
