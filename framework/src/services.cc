// The core's side of the ABI: the services table handed to every plugin, the kernel-context
// accessors, and conversion of plugin errors into oar::Error.
#include <glog/logging.h>
#include <oar/core/error.h>
#include <oar/core/store.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "internal.h"

namespace oar {

void trace_event_sink(const OarTraceEvent* event);  // runtime.cc

namespace {

// ---- errors ---------------------------------------------------------------------------------------
OarError* error_new(int32_t code, int64_t native_code, const char* message) {
  return new OarError{code, native_code, message ? message : ""};
}
void error_free(OarError* e) { delete e; }
int32_t error_code(const OarError* e) { return e ? e->code : OAR_OK; }
int64_t error_native_code(const OarError* e) { return e ? e->native_code : 0; }
const char* error_message(const OarError* e) { return e ? e->message.c_str() : ""; }

void log_message(int32_t level, const char* message) {
  switch (level) {
    case OAR_LOG_ERROR:
      LOG(ERROR) << message;
      break;
    case OAR_LOG_WARNING:
      LOG(WARNING) << message;
      break;
    case OAR_LOG_INFO:
      LOG(INFO) << message;
      break;
    default:
      VLOG(1) << message;
      break;
  }
}

OarError* add_pending_kernel(OarRegistrar* r, const OarKernelDef* given, OarKernelSupportsFn supports,
                             void* supports_user_data) {
  if (!r || !r->open)
    return error_new(OAR_ERR_PRECONDITION, 0, "register_kernel is only valid during oar_plugin_init");
  // An older plugin's definition may end early: read what it has, the rest is zero (user_data NULL).
  if (!given || given->struct_size < offsetof(OarKernelDef, fn) + sizeof(OarKernelFn))
    return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "register_kernel: OarKernelDef is NULL or ends before fn");
  OarKernelDef copy{};
  std::memcpy(&copy, given, std::min(given->struct_size, sizeof(copy)));
  const OarKernelDef* def = &copy;
  if (!def->op_name || !def->fn || (def->num_dtypes > 0 && !def->dtypes))
    return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "register_kernel: op_name, fn and dtypes are required");
  PendingKernel k{def->op_name, def->op_version, {}, def->flags, def->fn, def->user_data, supports, supports_user_data};
  for (int32_t i = 0; i < def->num_dtypes; ++i) {
    if (!is_valid_dtype(def->dtypes[i]))
      return error_new(
          OAR_ERR_TYPE, 0,
          ("register_kernel: op '" + k.op + "' lists invalid dtype " + std::to_string(def->dtypes[i]))
              .c_str());
    k.dtypes.push_back(def->dtypes[i]);
  }
  r->kernels.push_back(std::move(k));
  return nullptr;
}

OarError* register_kernel(OarRegistrar* r, const OarKernelDef* def) { return add_pending_kernel(r, def, nullptr, nullptr); }

// ABI 1.2: the size-prefixed registration; fields a plugin's older struct lacks read as zero.
OarError* register_kernel_ex(OarRegistrar* r, const OarKernelRegistration* given) {
  if (!given || given->struct_size < offsetof(OarKernelRegistration, def) + sizeof(given->def))
    return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "register_kernel_ex: OarKernelRegistration is NULL or ends before def");
  OarKernelRegistration reg{};
  std::memcpy(&reg, given, std::min(given->struct_size, sizeof(reg)));
  return add_pending_kernel(r, reg.def, reg.supports, reg.supports_user_data);
}

// ---- kernel context -------------------------------------------------------------------------------
int32_t ctx_num_inputs(const OarKernelContext* c) { return c->num_inputs; }
const OarTensorDesc* ctx_input(const OarKernelContext* c, int32_t i) {
  return i >= 0 && i < c->num_inputs ? &c->inputs[i] : nullptr;
}
int32_t ctx_num_outputs(const OarKernelContext* c) { return c->num_outputs; }
const OarTensorDesc* ctx_output(OarKernelContext* c, int32_t i) {
  return i >= 0 && i < c->num_outputs ? &c->outputs[i] : nullptr;
}

OarError* ctx_resize_output(OarKernelContext* c, int32_t i, int32_t ndim, const int64_t* dims,
                            const OarTensorDesc** out) {
  if (c->query) return error_new(OAR_ERR_PRECONDITION, 0, "resize_output is not available in a supports query");
  if (i < 0 || i >= c->num_outputs)
    return error_new(OAR_ERR_OUT_OF_RANGE, 0, "resize_output: no such output");
  try {
    Tensor t = Tensor::empty(Dims(dims, ndim), c->output_tensors[i].dtype(), c->device->place());
    c->output_tensors[i] = t;
    fill_desc(c->outputs[i], c->output_tensors[i]);
    if (out) *out = &c->outputs[i];
    return nullptr;
  } catch (const Error& e) {
    return error_new(static_cast<int32_t>(e.code()), 0, e.what());
  }
}

OarStream ctx_stream(const OarKernelContext* c) { return c->query ? nullptr : c->device->stream(); }
int32_t ctx_device(const OarKernelContext* c) { return c->device->place().index; }

template <typename T>
OarError* get_attr(const OarKernelContext* c, const char* name, const T** out) {
  const AttrValue* v = c->attrs ? c->attrs->find(name) : nullptr;
  if (!v)
    return error_new(OAR_ERR_NOT_FOUND, 0,
                     (std::string(c->op->name) + ": no attribute '" + name + "'").c_str());
  *out = std::get_if<T>(v);
  if (!*out)
    return error_new(OAR_ERR_TYPE, 0,
                     (std::string(c->op->name) + ": attribute '" + name + "' has another type").c_str());
  return nullptr;
}
OarError* ctx_attr_int(const OarKernelContext* c, const char* name, int64_t* value) {
  const int64_t* p = nullptr;
  OarError* e = get_attr(c, name, &p);
  if (!e) *value = *p;
  return e;
}
OarError* ctx_attr_float(const OarKernelContext* c, const char* name, double* value) {
  const AttrValue* v = c->attrs ? c->attrs->find(name) : nullptr;
  if (v && std::holds_alternative<int64_t>(*v)) {  // ints widen to float
    *value = static_cast<double>(std::get<int64_t>(*v));
    return nullptr;
  }
  const double* p = nullptr;
  OarError* e = get_attr(c, name, &p);
  if (!e) *value = *p;
  return e;
}
OarError* ctx_attr_ints(const OarKernelContext* c, const char* name, const int64_t** values, int64_t* count) {
  const std::vector<int64_t>* p = nullptr;
  OarError* e = get_attr(c, name, &p);
  if (!e) *values = p->data(), *count = static_cast<int64_t>(p->size());
  return e;
}
OarError* ctx_attr_floats(const OarKernelContext* c, const char* name, const double** values,
                          int64_t* count) {
  const std::vector<double>* p = nullptr;
  OarError* e = get_attr(c, name, &p);
  if (!e) *values = p->data(), *count = static_cast<int64_t>(p->size());
  return e;
}
OarError* ctx_attr_string(const OarKernelContext* c, const char* name, const char** value) {
  const std::string* p = nullptr;
  OarError* e = get_attr(c, name, &p);
  if (!e) *value = p->c_str();
  return e;
}
OarError* ctx_workspace(OarKernelContext* c, uint64_t bytes, void** ptr) {
  if (c->query) return error_new(OAR_ERR_PRECONDITION, 0, "workspace is not available in a supports query");
  try {
    c->workspaces->push_back(
        Tensor::empty(Dims{static_cast<int64_t>(bytes)}, DType::kUInt8, c->device->place()));
    *ptr = c->workspaces->back().data_ptr();
    return nullptr;
  } catch (const Error& e) {
    return error_new(static_cast<int32_t>(e.code()), 0, e.what());
  }
}

// ---- key-value store: the global TCP store when there is one, else in-process ----------------------
struct Store {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> values;
};
Store& store() {
  static Store* s = new Store();
  return *s;
}
OarError* store_error(const char* what, const char* key, const Error& e) {
  return error_new(static_cast<int32_t>(e.code()), 0,
                   (std::string(what) + "('" + (key ? key : "") + "'): " + e.what()).c_str());
}
OarError* store_set(const char* key, const void* value, uint64_t size) {
  if (!key) return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "store_set: key is NULL");
  if (!value && size) return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "store_set: value is NULL");
  try {
    // A TCP store shared by the job's processes once one is set up (explicitly or from the launcher's
    // environment, see oar/core/store.h); otherwise the in-process map.
    if (auto tcp = global_store()) {
      tcp->set(key, std::string(static_cast<const char*>(value), size));
      return nullptr;
    }
  } catch (const Error& e) {
    return store_error("store_set", key, e);
  } catch (const std::exception& e) {
    return error_new(OAR_ERR_INTERNAL, 0, e.what());
  }
  Store& s = store();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.values[key] = std::string(static_cast<const char*>(value), size);
  }
  s.cv.notify_all();
  return nullptr;
}
OarError* store_get(const char* key, void* buffer, uint64_t capacity, uint64_t* size, int64_t timeout_ms) {
  if (!key) return error_new(OAR_ERR_INVALID_ARGUMENT, 0, "store_get: key is NULL");
  try {
    if (auto tcp = global_store()) {
      // timeout 0 asks "is it there now?": a round trip cannot fit in 0 ms, so ask check() first.
      if (timeout_ms <= 0 && !tcp->check({key}))
        return error_new(OAR_ERR_UNAVAILABLE, 0, (std::string("store_get: timed out waiting for key '") + key + "'").c_str());
      const std::string v = tcp->get(key, timeout_ms <= 0 ? -1 : timeout_ms);
      if (size) *size = v.size();
      if (v.size() > capacity)
        return error_new(OAR_ERR_OUT_OF_RANGE, 0, (std::string("store_get: buffer too small for key '") + key + "'").c_str());
      if (!v.empty()) std::memcpy(buffer, v.data(), v.size());
      return nullptr;
    }
  } catch (const Error& e) {
    return store_error("store_get", key, e);
  } catch (const std::exception& e) {
    return error_new(OAR_ERR_INTERNAL, 0, e.what());
  }
  Store& s = store();
  std::unique_lock<std::mutex> lock(s.mu);
  bool found = s.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms),
                             [&] { return s.values.count(key) > 0; });
  if (!found)
    return error_new(OAR_ERR_UNAVAILABLE, 0,
                     (std::string("store_get: timed out waiting for key '") + key + "'").c_str());
  const std::string& v = s.values[key];
  if (size) *size = v.size();
  if (v.size() > capacity)
    return error_new(OAR_ERR_OUT_OF_RANGE, 0,
                     (std::string("store_get: buffer too small for key '") + key + "'").c_str());
  std::memcpy(buffer, v.data(), v.size());
  return nullptr;
}

const OarKernelApi kKernelApi = {
    sizeof(OarKernelApi), ctx_num_inputs,  ctx_input,       ctx_num_outputs, ctx_output,
    ctx_resize_output,    ctx_stream,      ctx_device,      ctx_attr_int,    ctx_attr_float,
    ctx_attr_ints,        ctx_attr_floats, ctx_attr_string, ctx_workspace,
};

const OarCoreServices kServices = {
    sizeof(OarCoreServices),
    OAR_ABI_VERSION_MAJOR,
    OAR_ABI_VERSION_MINOR,
    error_new,
    error_free,
    error_code,
    error_native_code,
    error_message,
    log_message,
    register_kernel,
    &kKernelApi,
    store_set,
    store_get,
    trace_event_sink,
    register_kernel_ex,
};

// What the core handed to plugins at each published minor of ABI major 1: the sizes of the two tables
// that grew. 1.0 ended the services before trace_event and the kernel API before workspace (both
// appended in 1.1); 1.1 ended the services before register_kernel_ex (appended in 1.2); 1.3 grew only the
// plugin's stream table. Indexed by minor.
struct MinorLayout {
  size_t services_size, kernel_api_size;
};
const MinorLayout kMinorLayouts[] = {
    {offsetof(OarCoreServices, trace_event), offsetof(OarKernelApi, workspace)},
    {offsetof(OarCoreServices, register_kernel_ex), sizeof(OarKernelApi)},
    {sizeof(OarCoreServices), sizeof(OarKernelApi)},
    {sizeof(OarCoreServices), sizeof(OarKernelApi)},  // 1.3 appended to the plugin's stream table only
};
static_assert(sizeof(kMinorLayouts) / sizeof(kMinorLayouts[0]) == OAR_ABI_VERSION_MINOR + 1,
              "add the layout of the new ABI minor to kMinorLayouts");

}  // namespace

const OarCoreServices* core_services() { return &kServices; }

const OarCoreServices* core_services_as_minor(uint32_t minor) {
  OAR_ENFORCE(minor <= OAR_ABI_VERSION_MINOR, ErrorCode::kInvalidArgument,
              "cannot present ABI minor " << minor << ": this core implements ABI " << OAR_ABI_VERSION_MAJOR
                                          << "." << OAR_ABI_VERSION_MINOR);
  if (minor == OAR_ABI_VERSION_MINOR) return &kServices;
  // Copies whose struct_size ends where that minor's tables ended; the bytes past it are zero, so a
  // plugin that reads past struct_size sees NULL rather than a working newer function.
  static OarKernelApi api[OAR_ABI_VERSION_MINOR];
  static OarCoreServices services[OAR_ABI_VERSION_MINOR];
  const MinorLayout& layout = kMinorLayouts[minor];
  std::memset(&api[minor], 0, sizeof(OarKernelApi));
  std::memcpy(&api[minor], &kKernelApi, layout.kernel_api_size);
  api[minor].struct_size = layout.kernel_api_size;
  std::memset(&services[minor], 0, sizeof(OarCoreServices));
  std::memcpy(&services[minor], &kServices, layout.services_size);
  services[minor].struct_size = layout.services_size;
  services[minor].abi_minor = minor;
  services[minor].kernel_api = &api[minor];
  return &services[minor];
}

void check_plugin_error(const std::string& plugin, const char* what, OarError* err) {
  if (!err) return;
  ErrorCode code = err->code >= OAR_ERR_INVALID_ARGUMENT && err->code <= OAR_ERR_EXTERNAL
                       ? static_cast<ErrorCode>(err->code)
                       : ErrorCode::kExternal;
  std::string msg = "plugin " + plugin + ": " + what + ": " + err->message;
  int64_t native = err->native_code;
  delete err;
  throw Error(code, msg, native);
}

void fill_desc(OarTensorDesc& d, const Tensor& t) {
  d.struct_size = sizeof(OarTensorDesc);
  d.data = t.storage()->data();
  d.dtype = static_cast<int32_t>(t.dtype());
  d.ndim = t.ndim();
  d.dims = t.dims().data();
  d.strides = t.strides().data();
  d.offset = t.offset();
  d.device = t.place().index;
  d.layout = OAR_LAYOUT_STRIDED;
}

std::string ask_supports(const KernelEntry& k, const OpDef& op, const Tensor* in, const TensorMeta* in_meta,
                         int32_t n_in, const TensorMeta* out, const Attrs& attrs, Device& dev, DType kd) {
  const int32_t n_out = static_cast<int32_t>(op.outputs.size());
  // Descriptors of the call with data NULL: the query answers from metadata only.
  std::vector<OarTensorDesc> descs(static_cast<size_t>(n_in + n_out));
  std::vector<Dims> strides(static_cast<size_t>(n_in + n_out));
  for (int32_t i = 0; i < n_in + n_out; ++i) {
    OarTensorDesc& d = descs[i];
    const bool is_in = i < n_in;
    if (is_in && in) {
      fill_desc(d, in[i]);
    } else {
      const TensorMeta& m = is_in ? in_meta[i] : out[i - n_in];
      strides[i] = contiguous_strides(m.dims);
      d.struct_size = sizeof(OarTensorDesc);
      d.dtype = static_cast<int32_t>(m.dtype);
      d.ndim = m.dims.size();
      d.dims = m.dims.data();
      d.strides = strides[i].data();
      d.offset = 0;
      d.device = dev.place().index;
      d.layout = OAR_LAYOUT_STRIDED;
    }
    d.data = nullptr;
  }
  OarKernelContext ctx{&op, descs.data(), n_in, descs.data() + n_in, nullptr, n_out, &attrs, &dev, nullptr, nullptr,
                       nullptr, true};
  OarSupportsQuery q{sizeof(OarSupportsQuery), op.name, static_cast<int32_t>(kd), dev.place().index, &ctx};
  OarError* err = k.supports(&q, k.supports_user_data);
  if (!err) return "";
  if (err->code == OAR_ERR_DECLINED && k.plugin->may_decline) {
    std::string why = err->message.empty() ? "no reason given" : err->message;
    delete err;
    return why;
  }
  check_plugin_error(k.plugin->name, (std::string(op.name) + " supports query").c_str(), err);
  return "";
}

}  // namespace oar
