// Core-internal definitions shared by dispatch, services and runtime. Not installed.
#pragma once

#include <oar/core/op.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>
#include <oar/device_api.h>

#include <boost/dll/shared_library.hpp>

#include <string>
#include <vector>

// ABI-visible opaque types, defined by the core.
struct OarError {
  int32_t code;
  int64_t native_code;
  std::string message;
};

struct OarKernelContext {
  const oar::OpDef* op;
  const OarTensorDesc* inputs;
  int32_t num_inputs;
  OarTensorDesc* outputs;
  oar::Tensor* output_tensors;
  int32_t num_outputs;
  const oar::Attrs* attrs;
  oar::Device* device;
  std::vector<oar::Tensor>* workspaces;  // kept alive until the kernel returns (stream-ordered reuse)
  // For the core's own kernels (custom ops): the input tensors and the op's inferred outputs.
  const oar::Tensor* input_tensors = nullptr;
  const oar::InferContext* infer = nullptr;
  // A supports query (ABI 1.2): descriptors without data, no stream, no workspace, no resize.
  bool query = false;
};

namespace oar {

// KernelEntry flag for the core's own kernels (custom ops): the kernel makes its outputs itself
// (into OarKernelContext::output_tensors); dispatch allocates none.
inline constexpr uint32_t kKernelOwnsOutputs = 1u << 31;

struct KernelEntry {
  OarKernelFn fn = nullptr;
  void* user_data = nullptr;
  uint32_t flags = 0;
  Plugin* plugin = nullptr;
  OarKernelSupportsFn supports = nullptr;  // ABI 1.2: asked before each call (NULL: always yes)
  void* supports_user_data = nullptr;
};

struct Plugin {
  std::string path;
  std::string name;
  std::string device_type;
  boost::dll::shared_library library;
  PluginTables tables;
  size_t record_index = 0;
  // OAR_ERR_DECLINED means "declined" only from a plugin built for >= 1.2 that was handed a >= 1.2
  // core (not an emulated older one); from any other it is an ordinary error.
  bool may_decline = false;
};

struct PendingKernel {
  std::string op;
  int32_t op_version;
  std::vector<int32_t> dtypes;
  uint32_t flags;
  OarKernelFn fn;
  void* user_data;
  OarKernelSupportsFn supports = nullptr;
  void* supports_user_data = nullptr;
};

}  // namespace oar

struct OarRegistrar {
  oar::Plugin* plugin;
  bool open;
  std::vector<oar::PendingKernel> kernels;
};

namespace oar {

const OarCoreServices* core_services();
// The services as an older core of the same major handed them out (tables cut at that minor's size);
// plugins are given these when OAR_ABI_EMULATE_CORE_MINOR is set (the conformance suite's older-core check).
const OarCoreServices* core_services_as_minor(uint32_t minor);
// Throws the plugin's error as oar::Error "<plugin>: <what>: <message>" (and frees it) when set.
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
// Asks a kernel's supports query (ABI 1.2) about a call whose inputs are `in` (data is hidden from the
// plugin) and whose outputs `out` inferred. Returns "" for yes, else the plugin's reason; a failing query
// throws. `k.supports` must be set.
std::string ask_supports(const KernelEntry& k, const OpDef& op, const Tensor* in, const TensorMeta* in_meta,
                         int32_t n_in, const TensorMeta* out, const Attrs& attrs, Device& dev, DType kd);
// Tensor::empty on a device already looked up (dispatch allocates every op output through it).
Tensor empty_tensor(Device& dev, const Dims& dims, DType dtype, const char* op);
// Fills an ABI descriptor viewing `t` (pointers into t's impl, which must outlive the descriptor).
void fill_desc(OarTensorDesc& d, const Tensor& t);
// A host tensor holding a copy of the storage range `t` spans, viewed with t's strides. For a device
// tensor, *first and *count (when given) receive that range, in elements of t's storage.
Tensor host_view(const Tensor& t, int64_t* first = nullptr, int64_t* count = nullptr);
// Installs the subsystems' dispatch hooks (core_hooks.cc); the op registry does it when it is made,
// before any op can run.
void install_core_hooks();

}  // namespace oar
