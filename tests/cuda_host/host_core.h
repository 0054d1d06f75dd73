// What the gpu plugin's registered kernel bodies need around them to run on the host under the block
// emulator (block_emu.h): a minimal core (errors, the kernel API over host buffers: attributes, outputs,
// workspace), the plugin's runtime functions the launching code calls (grid_for capped so grid-stride loops
// go round, no device error word), and a kernel table filled by Registry::add. The harnesses
// (own_blas_host.cc, batch_norm_host.cc) include block_emu.h, then the plugin's .cu file, then this.
#pragma once

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace oar_cuda {
inline std::map<std::string, std::pair<sdk::KernelBody, sdk::SupportsBody>> g_kernels;
inline int64_t g_grid_cap = 4;

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
  std::map<std::string, double> floats;
  std::map<std::string, std::vector<int64_t>> lists;
  std::vector<std::unique_ptr<char, decltype(&std::free)>> workspaces;
};

namespace host_core {
using namespace oar_cuda;

inline OarError* not_found(const char* name) {
  return new OarError{OAR_ERR_NOT_FOUND, std::string("no attribute ") + name};
}

template <typename V>
OarError* find_attr(const std::map<std::string, V>& m, const char* name, V* v) {
  auto it = m.find(name);
  if (it == m.end()) return not_found(name);
  *v = it->second;
  return nullptr;
}

inline void install_core() {
  static OarKernelApi k{};
  k.struct_size = sizeof(k);
  k.num_inputs = [](const OarKernelContext* c) { return static_cast<int32_t>(c->inputs.size()); };
  k.input = [](const OarKernelContext* c, int32_t i) -> const OarTensorDesc* { return &c->inputs.at(i); };
  k.num_outputs = [](const OarKernelContext* c) { return static_cast<int32_t>(c->outputs.size()); };
  k.output = [](OarKernelContext* c, int32_t i) -> const OarTensorDesc* { return &c->outputs.at(i); };
  k.stream = [](const OarKernelContext*) -> OarStream { return nullptr; };
  k.device = [](const OarKernelContext*) { return int32_t{0}; };
  k.attr_int = [](const OarKernelContext* c, const char* name, int64_t* v) {
    return find_attr(c->ints, name, v);
  };
  k.attr_float = [](const OarKernelContext* c, const char* name, double* v) {
    return find_attr(c->floats, name, v);
  };
  k.attr_ints = [](const OarKernelContext* c, const char* name, const int64_t** v, int64_t* n) -> OarError* {
    auto it = c->lists.find(name);
    if (it == c->lists.end()) return not_found(name);
    *v = it->second.data();
    *n = static_cast<int64_t>(it->second.size());
    return nullptr;
  };
  // Scratch the kernel may not assume initialised: filled with garbage.
  k.workspace = [](OarKernelContext* c, uint64_t bytes, void** p) -> OarError* {
    const size_t size = (bytes + 255) / 256 * 256 + 256;
    c->workspaces.emplace_back(static_cast<char*>(std::aligned_alloc(256, size)), &std::free);
    std::memset(c->workspaces.back().get(), 0x7f, size);
    *p = c->workspaces.back().get();
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

// A host tensor: `offset` elements of padding before its contiguous data (a view that starts there).
struct Buffer {
  std::vector<int64_t> dims, strides;
  std::vector<char> bytes;
};

// A contiguous host tensor of `dtype` with `dims` after `offset` elements, filled from `values` (rounded to
// the dtype) if given, else garbage.
inline OarTensorDesc make_tensor(Buffer& b, int32_t dtype, const std::vector<double>* values,
                                 int64_t offset = 0) {
  const int64_t nd = static_cast<int64_t>(b.dims.size());
  b.strides.assign(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) b.strides[d] = b.strides[d + 1] * b.dims[d + 1];
  int64_t n = 1;
  for (int64_t d : b.dims) n *= d;
  b.bytes.assign(static_cast<size_t>(n + offset) * sdk::dtype_size(dtype), 0x7f);
  if (values)
    dispatch_float(dtype, "harness", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = reinterpret_cast<T*>(b.bytes.data()) + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = from_acc<T>(static_cast<acc_t<T>>((*values)[i]));
    });
  OarTensorDesc t{};
  t.struct_size = sizeof(t);
  t.data = b.bytes.data();
  t.offset = offset;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(nd);
  t.dims = b.dims.data();
  t.strides = b.strides.data();
  return t;
}

inline std::vector<int64_t> read_dims() {
  int64_t nd;
  std::cin >> nd;
  std::vector<int64_t> d(nd);
  for (auto& v : d) std::cin >> v;
  return d;
}

inline std::vector<double> read_values(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v(n);
  for (auto& x : v) {
    std::string s;
    std::cin >> s;  // strtod reads nan and inf
    x = std::strtod(s.c_str(), nullptr);
  }
  return v;
}

// Attributes: a count, then per attribute NAME i VALUE, NAME f VALUE or NAME I COUNT VALUES....
inline void read_attrs(OarKernelContext& ctx) {
  int nattr;
  std::cin >> nattr;
  for (int a = 0; a < nattr; ++a) {
    std::string name, kind;
    std::cin >> name >> kind;
    if (kind == "i") {
      std::cin >> ctx.ints[name];
    } else if (kind == "f") {
      std::string s;
      std::cin >> s;
      ctx.floats[name] = std::strtod(s.c_str(), nullptr);
    } else {
      int64_t n;
      std::cin >> n;
      auto& l = ctx.lists[name];
      l.resize(n);
      for (auto& v : l) std::cin >> v;
    }
  }
}

// Runs op's supports query and kernel; an sdk error is printed ("error CODE message") and gives false.
inline bool run_kernel(const std::string& op, OarKernelContext& ctx) {
  auto it = g_kernels.find(op);
  if (it == g_kernels.end()) {
    std::fprintf(stderr, "harness: no kernel %s\n", op.c_str());
    std::exit(1);
  }
  sdk::KernelContext c(&ctx);
  try {
    if (it->second.second) it->second.second(c);
    it->second.first(c);
  } catch (const sdk::Error& e) {
    std::fprintf(stderr, "error %d %s\n", static_cast<int>(e.code()), e.what());
    return false;
  }
  return true;
}

// Prints output i's values, one a line.
inline void print_output(OarKernelContext& ctx, int i) {
  sdk::KernelContext c(&ctx);
  const sdk::TensorView out = c.output(i);
  dispatch_float(out.dtype(), "harness", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(out.raw());
    for (int64_t e = 0; e < out.numel(); ++e) std::printf("%.17g\n", static_cast<double>(to_acc<T>(p[e])));
  });
}
}  // namespace host_core
