// The core's side of the custom-op ABI (oar/custom_op_api.h): loading a library, the services table,
// and each custom op's OpDef (inference through the library's callbacks), kernel entry (a trampoline
// calling the library's kernel for the device type) and gradient rule (running the library's grad op).
#include <glog/logging.h>
#include <oar/core/autograd.h>
#include <oar/core/custom_op.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/custom_op_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "internal.h"

// A counted reference to a core tensor, as the library holds it.
struct OarCTensor {
  std::atomic<int32_t> refs{1};
  oar::Tensor t;
};

struct OarCustomOpRegistrar {
  bool open = true;
  struct Op {
    std::string name;
    std::vector<std::string> inputs, outputs, attrs, inplace_in, inplace_out;
    std::vector<uint32_t> input_flags, output_flags;
    std::vector<std::pair<std::string, OarCustomKernel>> kernels;  // device type ("" = any), kernel
    OarCustomInferFn infer_shape = nullptr, infer_dtype = nullptr;
    void *infer_shape_user = nullptr, *infer_dtype_user = nullptr;
  };
  std::vector<Op> ops;
};

namespace oar {
namespace {

// ---- per-op state -----------------------------------------------------------------------------------
struct CustomAttr {
  std::string name;
  std::string type_name;
  int32_t type;  // OarCustomAttrType
};

struct GradSlot {  // where a grad op's input comes from
  enum Kind { kFwdInput, kFwdOutput, kFwdOutputGrad } kind;
  int32_t index;  // forward input slot or output
};

struct CustomOp {
  CustomOpInfo info;
  Plugin* library = nullptr;
  std::vector<CustomAttr> attrs;
  std::vector<std::pair<std::string, OarCustomKernel>> kernels;
  OarCustomInferFn infer_shape = nullptr, infer_dtype = nullptr;
  void *infer_shape_user = nullptr, *infer_dtype_user = nullptr;
  bool needs_counts = false;  // optional or vector inputs
  OpDef* def = nullptr;
  // When this op has a grad op: the rule, and how the grad op's inputs and outputs map to this op.
  GradRule rule;
  const CustomOp* grad = nullptr;
  std::vector<GradSlot> grad_inputs;
  std::vector<int32_t> grad_outputs;  // per grad op output: the forward input slot it is the gradient of
  std::string grad_error;             // set when the grad op could not be registered
  std::string where() const { return "custom op '" + info.name + "' (" + info.library + ")"; }
};

const CustomOp& state_of(const OpDef& op) { return *static_cast<const CustomOp*>(op.user); }

struct Loaded {
  std::mutex mu;
  std::map<std::string, std::vector<CustomOpInfo>> libraries;  // by canonical path
  std::vector<std::unique_ptr<Plugin>> handles;
};
Loaded& loaded() {
  static Loaded* l = new Loaded();  // never destroyed: kernels may run during static destruction
  return *l;
}

ErrorCode code_of(int32_t c) {
  return c >= OAR_ERR_INVALID_ARGUMENT && c <= OAR_ERR_EXTERNAL ? static_cast<ErrorCode>(c)
                                                                : ErrorCode::kExternal;
}

// Throws a library's error as oar::Error "<where>: <what>: <message>".
void check_library(const CustomOp& op, const char* what, OarError* err) {
  if (!err) return;
  const ErrorCode code = code_of(err->code);
  std::string msg = op.where() + ": " + what + ": " + err->message;
  delete err;
  throw Error(code, msg);
}

Place place_of(const char* device_type, int32_t index) {
  const std::string type = device_type ? device_type : "";
  if (type == "cpu") return cpu_place();
  const DeviceType* t = Runtime::get().find_device_type(type);
  OAR_ENFORCE(t != nullptr, ErrorCode::kNotFound, "unknown device type '" << type << "'");
  return Place{t->id, index};
}

OarCTensor* new_ref(Tensor t) {
  auto* h = new OarCTensor();
  h->t = std::move(t);
  return h;
}

// ---- services ---------------------------------------------------------------------------------------
OarError* make_error(int32_t code, int64_t native, const char* msg) {
  return core_services()->error_new(code, native, msg);
}
template <typename F>
OarError* catching(F&& f) {
  try {
    NoGradGuard no_grad;  // nothing a kernel does through the services is differentiated
    f();
    return nullptr;
  } catch (const Error& e) {
    return make_error(static_cast<int32_t>(e.code()), e.native_code(), e.what());
  } catch (const std::exception& e) {
    return make_error(OAR_ERR_INTERNAL, 0, e.what());
  }
}

OarError* svc_register_op(OarCustomOpRegistrar* r, const OarCustomOpDef* given) {
  if (!r || !r->open)
    return make_error(OAR_ERR_PRECONDITION, 0, "register_op is only valid during oar_custom_op_init");
  if (!given || given->struct_size < offsetof(OarCustomOpDef, infer_shape))
    return make_error(OAR_ERR_INVALID_ARGUMENT, 0, "register_op: OarCustomOpDef is NULL or too short");
  OarCustomOpDef d{};
  std::memcpy(&d, given, std::min(given->struct_size, sizeof(d)));
  return catching([&] {
    OAR_ENFORCE(d.name && *d.name, ErrorCode::kInvalidArgument, "register_op: the op has no name");
    OarCustomOpRegistrar::Op op;
    op.name = d.name;
    auto strings = [&](int32_t n, const char* const* p, const char* what) {
      std::vector<std::string> v;
      OAR_ENFORCE(n == 0 || p, ErrorCode::kInvalidArgument, op.name << ": " << what << " is NULL");
      for (int32_t i = 0; i < n; ++i) {
        OAR_ENFORCE(p[i], ErrorCode::kInvalidArgument, op.name << ": " << what << "[" << i << "] is NULL");
        v.emplace_back(p[i]);
      }
      return v;
    };
    op.inputs = strings(d.num_inputs, d.inputs, "inputs");
    for (int32_t i = 0; i < d.num_inputs; ++i)
      op.input_flags.push_back(d.input_flags ? d.input_flags[i] : 0u);
    op.outputs = strings(d.num_outputs, d.outputs, "outputs");
    for (int32_t i = 0; i < d.num_outputs; ++i)
      op.output_flags.push_back(d.output_flags ? d.output_flags[i] : 0u);
    op.attrs = strings(d.num_attrs, d.attrs, "attrs");
    op.inplace_in = strings(d.num_inplace, d.inplace_inputs, "inplace_inputs");
    op.inplace_out = strings(d.num_inplace, d.inplace_outputs, "inplace_outputs");
    OAR_ENFORCE(d.num_kernels == 0 || d.kernels, ErrorCode::kInvalidArgument, op.name << ": kernels is NULL");
    for (int32_t i = 0; i < d.num_kernels; ++i) {
      OarCustomKernel k{};
      const OarCustomKernel& g = d.kernels[i];
      std::memcpy(&k, &g, std::min(g.struct_size, sizeof(k)));
      OAR_ENFORCE(k.fn, ErrorCode::kInvalidArgument, op.name << ": kernel " << i << " has no function");
      op.kernels.emplace_back(k.device_type ? k.device_type : "", k);
    }
    op.infer_shape = d.infer_shape;
    op.infer_shape_user = d.infer_shape_user;
    op.infer_dtype = d.infer_dtype;
    op.infer_dtype_user = d.infer_dtype_user;
    r->ops.push_back(std::move(op));
  });
}

void svc_retain(OarCTensor* t) {
  if (t) t->refs.fetch_add(1, std::memory_order_relaxed);
}
void svc_release(OarCTensor* t) {
  if (t && t->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete t;
}
int32_t svc_ndim(const OarCTensor* t) { return t->t.ndim(); }
const int64_t* svc_dims(const OarCTensor* t) { return t->t.dims().data(); }
int32_t svc_dtype(const OarCTensor* t) { return static_cast<int32_t>(t->t.dtype()); }
const char* svc_device_type(const OarCTensor* t) {
  return Runtime::get().device_types()[t->t.place().type].name.c_str();  // stable: device types only grow
}
int32_t svc_device(const OarCTensor* t) { return t->t.place().index; }
void* svc_data(const OarCTensor* t) { return t->t.data_ptr(); }
int32_t svc_is_contiguous(const OarCTensor* t) { return t->t.is_contiguous() ? 1 : 0; }

// A new contiguous tensor holding t's values.
Tensor fresh_copy(const Tensor& t) {
  Tensor fresh = Tensor::empty(t.dims(), t.dtype(), t.place());
  ops::assign(fresh, t);
  return fresh;
}

OarError* svc_empty(int32_t ndim, const int64_t* dims, int32_t dtype, const char* device_type, int32_t device,
                    OarCTensor** out) {
  return catching([&] {
    OAR_ENFORCE(is_valid_dtype(dtype), ErrorCode::kType, "empty: invalid dtype " << dtype);
    for (int32_t i = 0; i < ndim; ++i)
      OAR_ENFORCE(dims[i] >= 0, ErrorCode::kInvalidArgument, "empty: negative dim " << dims[i]);
    *out = new_ref(Tensor::empty(Dims(dims, ndim), static_cast<DType>(dtype), place_of(device_type, device)));
  });
}
OarError* svc_full(int32_t ndim, const int64_t* dims, int32_t dtype, double value, const char* device_type,
                   int32_t device, OarCTensor** out) {
  return catching([&] {
    OAR_ENFORCE(is_valid_dtype(dtype), ErrorCode::kType, "full: invalid dtype " << dtype);
    *out =
        new_ref(ops::full(Dims(dims, ndim), value, static_cast<DType>(dtype), place_of(device_type, device)));
  });
}
OarError* svc_copy_to(const OarCTensor* t, const char* device_type, int32_t device, OarCTensor** out) {
  return catching([&] {
    const Place p = place_of(device_type, device);
    Tensor c = t->t.to(p);
    if (c.shares_storage(t->t)) c = fresh_copy(c);  // same place: still a copy the library may write
    Runtime::get().device(p).synchronize_stream();
    *out = new_ref(std::move(c));
  });
}
OarError* svc_reshape(const OarCTensor* t, int32_t ndim, const int64_t* dims, OarCTensor** out) {
  return catching([&] {
    OAR_ENFORCE(t->t.is_contiguous(), ErrorCode::kInvalidArgument, "reshape: the tensor is not contiguous");
    *out = new_ref(t->t.reshape(Dims(dims, ndim)));
  });
}
OarError* svc_cast(const OarCTensor* t, int32_t dtype, OarCTensor** out) {
  return catching([&] {
    OAR_ENFORCE(is_valid_dtype(dtype), ErrorCode::kType, "cast: invalid dtype " << dtype);
    Tensor c = ops::cast(t->t, static_cast<DType>(dtype));
    if (c.shares_storage(t->t)) c = fresh_copy(c);  // the same dtype: still a copy
    *out = new_ref(std::move(c));
  });
}
OarError* svc_synchronize(const char* device_type, int32_t device) {
  return catching([&] { Runtime::get().device(place_of(device_type, device)).synchronize_stream(); });
}
void* svc_stream(const char* device_type, int32_t device) {
  try {
    return Runtime::get().device(place_of(device_type, device)).stream();
  } catch (const std::exception&) {
    return nullptr;
  }
}
const char* svc_error_message(const OarError* e) { return core_services()->error_message(e); }
int32_t svc_error_code(const OarError* e) { return core_services()->error_code(e); }

const OarCustomOpServices& services() {
  static const OarCustomOpServices s = [] {
    OarCustomOpServices v{};
    v.struct_size = sizeof(v);
    v.abi_major = OAR_CUSTOM_OP_ABI_MAJOR;
    v.abi_minor = OAR_CUSTOM_OP_ABI_MINOR;
    v.error_new = core_services()->error_new;
    v.error_free = core_services()->error_free;
    v.error_message = svc_error_message;
    v.error_code = svc_error_code;
    v.register_op = svc_register_op;
    v.tensor_retain = svc_retain;
    v.tensor_release = svc_release;
    v.tensor_ndim = svc_ndim;
    v.tensor_dims = svc_dims;
    v.tensor_dtype = svc_dtype;
    v.tensor_device_type = svc_device_type;
    v.tensor_device = svc_device;
    v.tensor_data = svc_data;
    v.tensor_is_contiguous = svc_is_contiguous;
    v.tensor_empty = svc_empty;
    v.tensor_full = svc_full;
    v.tensor_copy_to = svc_copy_to;
    v.tensor_reshape = svc_reshape;
    v.synchronize = svc_synchronize;
    v.stream = svc_stream;
    v.tensor_cast = svc_cast;
    return v;
  }();
  return s;
}

// ---- attributes ---------------------------------------------------------------------------------------
struct AttrKind {
  const char* name;
  int32_t type;
  AttrType core;
};
constexpr AttrKind kAttrKinds[] = {
    {"bool", OAR_CATTR_BOOL, AttrType::kInt},
    {"int", OAR_CATTR_INT, AttrType::kInt},
    {"int64_t", OAR_CATTR_INT64, AttrType::kInt},
    {"float", OAR_CATTR_FLOAT, AttrType::kFloat},
    {"double", OAR_CATTR_DOUBLE, AttrType::kFloat},
    {"std::string", OAR_CATTR_STRING, AttrType::kString},
    {"std::vector<int>", OAR_CATTR_INTS, AttrType::kInts},
    {"std::vector<int64_t>", OAR_CATTR_INT64S, AttrType::kInts},
    {"std::vector<float>", OAR_CATTR_FLOATS, AttrType::kFloats},
    {"std::vector<double>", OAR_CATTR_DOUBLES, AttrType::kFloats},
};

std::string strip(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

CustomAttr parse_attr(const std::string& where, const std::string& decl) {
  const size_t colon = decl.find(':');
  OAR_ENFORCE(colon != std::string::npos && colon > 0, ErrorCode::kInvalidArgument,
              where << ": attribute declaration '" << decl << "' is not \"name: type\"");
  CustomAttr a{strip(decl.substr(0, colon)), strip(decl.substr(colon + 1)), -1};
  std::string t;
  for (char c : a.type_name)
    if (c != ' ') t += c;
  if (t == "int32_t") t = "int";
  if (t == "std::vector<int32_t>") t = "std::vector<int>";
  for (const AttrKind& k : kAttrKinds)
    if (t == k.name) a.type = k.type;
  OAR_ENFORCE(
      a.type >= 0, ErrorCode::kInvalidArgument,
      where << ": attribute '" << a.name << "' has unsupported type '" << a.type_name
            << "' (use bool, int, int64_t, float, double, std::string, or std::vector of int, int64_t, "
               "float, double)");
  a.type_name = t;
  return a;
}

AttrValue default_of(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return int64_t{0};
    case AttrType::kFloat:
      return 0.0;
    case AttrType::kInts:
      return std::vector<int64_t>{};
    case AttrType::kFloats:
      return std::vector<double>{};
    case AttrType::kString:
      return std::string();
  }
  return int64_t{0};
}

// The declared attributes in order, viewed for the ABI (pointers into `attrs`).
std::vector<OarCustomAttr> abi_attrs(const CustomOp& op, const Attrs& attrs) {
  std::vector<OarCustomAttr> out(op.attrs.size());
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const CustomAttr& a = op.attrs[i];
    OarCustomAttr& v = out[i];
    v.type = a.type;
    const AttrValue* p = attrs.find(a.name.c_str());
    OAR_ENFORCE(p != nullptr, ErrorCode::kInvalidArgument,
                op.where() << ": attribute '" << a.name << "' is missing");
    if (const auto* x = std::get_if<int64_t>(p))
      v.i = *x, v.f = static_cast<double>(*x);
    else if (const auto* x = std::get_if<double>(p))
      v.f = *x;
    else if (const auto* x = std::get_if<std::string>(p))
      v.s = x->c_str();
    else if (const auto* x = std::get_if<std::vector<int64_t>>(p))
      v.ints = x->data(), v.count = static_cast<int64_t>(x->size());
    else if (const auto* x = std::get_if<std::vector<double>>(p))
      v.floats = x->data(), v.count = static_cast<int64_t>(x->size());
  }
  return out;
}

}  // namespace

std::vector<int32_t> custom_op_slot_counts(const OpDef& def, const Attrs& attrs, int32_t n_in) {
  const CustomOp& op = state_of(def);
  const size_t slots = op.info.inputs.size();
  std::vector<int32_t> counts(slots, 1);
  const AttrValue* v = op.needs_counts ? attrs.find(kCustomInputCounts) : nullptr;
  const auto* given = v ? std::get_if<std::vector<int64_t>>(v) : nullptr;
  if (given && !given->empty()) {
    OAR_ENFORCE(given->size() == slots, ErrorCode::kInvalidArgument,
                op.where() << ": " << kCustomInputCounts << " has " << given->size() << " entries for "
                           << slots << " inputs");
    for (size_t i = 0; i < slots; ++i) counts[i] = static_cast<int32_t>((*given)[i]);
  }
  int64_t total = 0;
  for (size_t i = 0; i < slots; ++i) {
    const uint32_t f = op.info.input_flags[i];
    const int32_t c = counts[i];
    const bool ok = (f & OAR_CUSTOM_INPUT_VECTOR)     ? c >= 0
                    : (f & OAR_CUSTOM_INPUT_OPTIONAL) ? (c == 0 || c == 1)
                                                      : c == 1;
    OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
                op.where() << ": input '" << op.info.inputs[i] << "' takes "
                           << ((f & OAR_CUSTOM_INPUT_VECTOR)     ? "a list of tensors"
                               : (f & OAR_CUSTOM_INPUT_OPTIONAL) ? "a tensor or None"
                                                                 : "one tensor")
                           << ", got " << c);
    total += c;
  }
  OAR_ENFORCE(total == n_in, ErrorCode::kInvalidArgument,
              op.where() << ": expects " << total << " input tensor(s) (" << slots
                         << " declared input(s)), got " << n_in);
  return counts;
}

namespace {

// ---- inference ------------------------------------------------------------------------------------------
void custom_infer(InferContext& ic) {
  const CustomOp& op = state_of(*ic.op);
  const std::vector<int32_t> counts = custom_op_slot_counts(*ic.op, *ic.attrs, ic.num_inputs);
  const int32_t n_out = static_cast<int32_t>(op.info.outputs.size());
  std::vector<int32_t> ndims(ic.num_inputs), dtypes(ic.num_inputs);
  std::vector<const int64_t*> dims(ic.num_inputs);
  for (int32_t i = 0; i < ic.num_inputs; ++i) {
    ndims[i] = ic.inputs[i].dims.size();
    dims[i] = ic.inputs[i].dims.data();
    dtypes[i] = static_cast<int32_t>(ic.inputs[i].dtype);
  }
  std::vector<int32_t> out_ndims(n_out, 0), out_dtypes(n_out, OAR_DTYPE_FLOAT32);
  std::vector<int64_t> out_dims(static_cast<size_t>(n_out) * OAR_CUSTOM_MAX_DIMS, 0);
  // Paddle's defaults: an in-place output like its input, a gradient output "X@GRAD" like input "X"
  // (when X is one tensor), every other output like the first input.
  std::vector<int32_t> first_flat(counts.size(), 0);  // each slot's first flattened input
  for (size_t k = 1; k < counts.size(); ++k) first_flat[k] = first_flat[k - 1] + counts[k - 1];
  auto grad_source = [&](const std::string& out) {
    const std::string suffix = "@GRAD";
    if (out.size() <= suffix.size() || out.compare(out.size() - suffix.size(), suffix.size(), suffix) != 0)
      return 0;
    const std::string base = out.substr(0, out.size() - suffix.size());
    for (size_t k = 0; k < op.info.inputs.size() && k < counts.size(); ++k)
      if (op.info.inputs[k] == base && counts[k] == 1) return first_flat[k];
    return 0;
  };
  if (ic.num_inputs > 0) {
    for (int32_t o = 0; o < n_out; ++o) {
      const int32_t src = op.info.inplace[o] >= 0 ? op.info.inplace[o]  // the slots before are plain
                                                  : grad_source(op.info.outputs[o]);
      out_ndims[o] = ndims[src];
      std::copy(dims[src], dims[src] + ndims[src], out_dims.begin() + o * OAR_CUSTOM_MAX_DIMS);
      out_dtypes[o] = dtypes[src];
    }
  } else {
    OAR_ENFORCE(
        op.infer_shape && op.infer_dtype, ErrorCode::kInvalidArgument,
        op.where() << ": called without input tensors, so it needs both InferShape and InferDtype functions");
  }
  std::vector<OarCustomAttr> attrs = abi_attrs(op, *ic.attrs);
  OarCustomInfer in{};
  in.struct_size = sizeof(in);
  in.op_name = op.info.name.c_str();
  in.num_inputs = ic.num_inputs;
  in.input_ndims = ndims.data();
  in.input_dims = dims.data();
  in.input_dtypes = dtypes.data();
  in.num_slots = static_cast<int32_t>(counts.size());
  in.slot_counts = counts.data();
  in.num_attrs = static_cast<int32_t>(attrs.size());
  in.attrs = attrs.data();
  in.num_outputs = n_out;
  in.output_ndims = out_ndims.data();
  in.output_dims = out_dims.data();
  in.output_dtypes = out_dtypes.data();
  if (op.infer_shape) check_library(op, "InferShape", op.infer_shape(op.infer_shape_user, &in));
  if (op.infer_dtype) check_library(op, "InferDtype", op.infer_dtype(op.infer_dtype_user, &in));
  for (int32_t o = 0; o < n_out; ++o) {
    OAR_ENFORCE(
        out_ndims[o] >= 0 && out_ndims[o] <= OAR_CUSTOM_MAX_DIMS, ErrorCode::kInvalidArgument,
        op.where() << ": InferShape gave output '" << op.info.outputs[o] << "' " << out_ndims[o] << " dims");
    OAR_ENFORCE(is_valid_dtype(out_dtypes[o]), ErrorCode::kType,
                op.where() << ": InferDtype gave output '" << op.info.outputs[o] << "' invalid dtype "
                           << out_dtypes[o]);
    ic.outputs[o].dims = Dims(out_dims.data() + o * OAR_CUSTOM_MAX_DIMS, out_ndims[o]);
    for (int64_t d : ic.outputs[o].dims)
      OAR_ENFORCE(d >= -1, ErrorCode::kInvalidArgument,
                  op.where() << ": InferShape gave output '" << op.info.outputs[o] << "' the shape "
                             << ic.outputs[o].dims.to_string());
    ic.outputs[o].dtype = static_cast<DType>(out_dtypes[o]);
  }
}

// ---- the kernel trampoline -------------------------------------------------------------------------------
OarError* custom_kernel(OarKernelContext* ctx, void* user) {
  const CustomOp& op = *static_cast<const CustomOp*>(user);
  const std::string& device_type = ctx->device->type().name;
  const OarCustomKernel* k = nullptr;
  for (const auto& [dev, kern] : op.kernels)
    if (dev == device_type) k = &kern;
  if (!k)
    for (const auto& [dev, kern] : op.kernels)
      if (dev.empty()) k = &kern;
  if (!k) {
    std::string have;
    for (const auto& [dev, kern] : op.kernels) have += (have.empty() ? "" : ", ") + dev;
    OAR_THROW(ErrorCode::kUnimplemented, op.where() << " has no kernel for device type '" << device_type
                                                    << "' (it has kernels for: " << have
                                                    << "); move the inputs to one of those devices");
  }
  const int32_t n_in = ctx->num_inputs;
  const std::vector<int32_t> counts = custom_op_slot_counts(*ctx->op, *ctx->attrs, n_in);
  // Inputs as counted references; the kernel reads contiguous tensors, except the one it writes in place.
  std::vector<OarCTensor> refs(n_in);
  std::vector<OarCTensor*> in(n_in);
  {
    NoGradGuard no_grad;
    for (int32_t i = 0; i < n_in; ++i) {
      const Tensor& t = ctx->input_tensors[i];
      if (i == ctx->op->inplace_input) {
        OAR_ENFORCE(
            t.is_contiguous(), ErrorCode::kInvalidArgument,
            op.where() << ": input '" << op.info.inputs[i] << "' is written in place and must be contiguous");
        refs[i].t = autograd::detach(t);
      } else {
        refs[i].t = autograd::detach(t.is_contiguous() ? t : t.contiguous());
      }
      refs[i].refs = 2;  // never freed by the library: owned here
      in[i] = &refs[i];
    }
  }
  std::vector<OarCustomAttr> attrs = abi_attrs(op, *ctx->attrs);
  const int32_t n_out = ctx->num_outputs;
  std::vector<OarCTensor*> outs(n_out, nullptr);
  OarCustomCall call{};
  call.struct_size = sizeof(call);
  call.op_name = op.info.name.c_str();
  call.num_inputs = n_in;
  call.inputs = in.data();
  call.num_slots = static_cast<int32_t>(counts.size());
  call.slot_counts = counts.data();
  call.num_attrs = static_cast<int32_t>(attrs.size());
  call.attrs = attrs.data();
  call.num_outputs = n_out;
  call.outputs = outs.data();
  call.device_type = device_type.c_str();
  call.device = ctx->device->place().index;
  call.stream = ctx->device->stream();
  call.num_returned = -1;
  OarError* err;
  {
    NoGradGuard no_grad;
    err = k->fn(k->user_data, &call);
  }
  // Take the outputs over before anything can throw.
  std::vector<Tensor> results(n_out);
  int32_t returned = 0;
  for (int32_t o = 0; o < n_out; ++o) {
    if (outs[o]) {
      results[o] = outs[o]->t;
      ++returned;
      svc_release(outs[o]);
    }
  }
  check_library(op, "kernel", err);
  if (call.num_returned >= 0) returned = std::min(call.num_returned, n_out);
  // Outputs written in place are the input itself; a kernel may return only the others (or nothing).
  int32_t not_inplace = 0;
  for (int32_t o = 0; o < n_out; ++o) not_inplace += op.info.inplace[o] < 0;
  if (returned == not_inplace && returned < n_out) {
    std::vector<Tensor> spread(n_out);
    int32_t r = 0;
    for (int32_t o = 0; o < n_out; ++o)
      spread[o] = op.info.inplace[o] < 0 ? results[r++] : ctx->input_tensors[ctx->op->inplace_input];
    results = std::move(spread);
  } else {
    OAR_ENFORCE(returned == n_out, ErrorCode::kInvalidArgument,
                op.where() << ": the kernel returned " << returned << " tensor(s), the op declares " << n_out
                           << " output(s)");
  }
  for (int32_t o = 0; o < n_out; ++o) {
    const TensorMeta& m = ctx->infer->outputs[o];
    if (!results[o].defined()) {  // e.g. the gradient of an absent optional input: zeros, never a hole
      NoGradGuard no_grad;
      Dims d = m.dims;
      for (int32_t i = 0; i < d.size(); ++i) d[i] = std::max<int64_t>(d[i], 0);
      results[o] = ops::zeros(d, m.dtype, ctx->device->place());
    }
    const Tensor& t = results[o];
    const std::string name = op.info.outputs[o];
    OAR_ENFORCE(t.place() == ctx->device->place(), ErrorCode::kInvalidArgument,
                op.where() << ": the kernel returned output '" << name << "' on " << t.place().to_string()
                           << ", but the op ran on " << ctx->device->place().to_string());
    bool same_shape = t.ndim() == m.dims.size();
    for (int32_t d = 0; same_shape && d < t.ndim(); ++d)
      same_shape = m.dims[d] < 0 || m.dims[d] == t.dims()[d];
    OAR_ENFORCE(same_shape, ErrorCode::kInvalidArgument,
                op.where() << ": the kernel produced output '" << name << "' with shape "
                           << t.dims().to_string() << ", but InferShape said " << m.dims.to_string()
                           << "; make the InferShape function agree with the kernel");
    OAR_ENFORCE(t.dtype() == m.dtype, ErrorCode::kType,
                op.where() << ": the kernel produced output '" << name << "' with dtype "
                           << dtype_name(t.dtype()) << ", but InferDtype said " << dtype_name(m.dtype)
                           << "; make the InferDtype function agree with the kernel");
    ctx->output_tensors[o] = t;
  }
  return nullptr;
}

// ---- gradients --------------------------------------------------------------------------------------------
std::vector<Tensor> custom_grad(const GradContext& c) {
  const CustomOp& fwd = state_of(*c.op);
  const CustomOp& g = *fwd.grad;
  const int32_t n_fwd_in = static_cast<int32_t>(c.input_meta.size());
  const std::vector<int32_t> counts = custom_op_slot_counts(*c.op, c.attrs, n_fwd_in);
  std::vector<int32_t> first(counts.size() + 1, 0);
  for (size_t s = 0; s < counts.size(); ++s) first[s + 1] = first[s] + counts[s];
  // Where the gradients live: any output gradient that arrived (at least one did).
  Place place = cpu_place();
  for (const Tensor& t : c.grad_outputs)
    if (t.defined()) {
      place = t.place();
      break;
    }
  std::vector<Tensor> ins;
  std::vector<int64_t> g_counts;
  for (const GradSlot& s : fwd.grad_inputs) {
    if (s.kind == GradSlot::kFwdInput) {
      for (int32_t i = first[s.index]; i < first[s.index + 1]; ++i) ins.push_back(c.inputs[i]);
      g_counts.push_back(counts[s.index]);
    } else if (s.kind == GradSlot::kFwdOutput) {
      ins.push_back(c.outputs[s.index]);
      g_counts.push_back(1);
    } else {
      Tensor go = c.grad_outputs[s.index];
      if (!go.defined()) {
        const TensorMeta& m = c.output_meta[s.index];
        go = ops::zeros(m.dims, m.dtype, place);
      }
      ins.push_back(go);
      g_counts.push_back(1);
    }
  }
  Attrs attrs;
  for (const CustomAttr& a : g.attrs) {
    const AttrValue* v = c.attrs.find(a.name.c_str());
    OAR_ENFORCE(v != nullptr, ErrorCode::kInvalidArgument,
                g.where() << ": attribute '" << a.name << "' is not an attribute of " << fwd.info.name);
    attrs.set(a.name.c_str(), *v);
  }
  if (g.needs_counts) attrs.set(kCustomInputCounts, g_counts);
  std::vector<Tensor> outs(g.info.outputs.size());
  run_op(*g.def, ins.data(), static_cast<int32_t>(ins.size()), attrs, place, outs.data());
  std::vector<Tensor> grads(n_fwd_in);
  for (size_t o = 0; o < outs.size(); ++o) {
    const int32_t slot = fwd.grad_outputs[o];
    if (counts[slot] == 1) grads[first[slot]] = outs[o];  // absent optional inputs get no gradient
  }
  return grads;
}

std::vector<Tensor> unsupported_grad(const GradContext& c) {
  OAR_THROW(ErrorCode::kUnimplemented, state_of(*c.op).grad_error);
}

// Why `op`, which has no grad op "<op>_grad" in its library, cannot be differentiated. A grad op
// ("<fwd>_grad", "<fwd>_grad_grad") is named after the forward op it belongs to.
std::string missing_grad_message(const CustomOp& op, const std::set<std::string>& library_ops) {
  std::string fwd = op.info.name;
  int32_t order = 0;
  while (fwd.size() > 5 && fwd.compare(fwd.size() - 5, 5, "_grad") == 0 &&
         library_ops.count(fwd.substr(0, fwd.size() - 5))) {
    fwd.resize(fwd.size() - 5);
    ++order;
  }
  const std::string next = op.info.name + "_grad";
  std::ostringstream m;
  m << "custom op '" << fwd << "' (" << op.info.library << "): ";
  if (order == 0) {
    m << "has no gradient op (no '" << next << "' op is registered); it cannot be differentiated";
  } else {
    static const char* const kTimes[] = {"twice", "three times"};
    m << "its " << (order == 1 ? "" : "order-" + std::to_string(order) + " ") << "gradient op '"
      << op.info.name << "' has no gradient (no '" << next
      << "' op is registered); it cannot be differentiated "
      << (order <= 2 ? kTimes[order - 1] : std::to_string(order + 1) + " times");
  }
  return m.str();
}

// Ties op `fwd` to its grad op `g` ("<fwd>_grad") by the names of g's inputs and outputs.
void link_grad(CustomOp& fwd, const CustomOp& g) {
  auto index_of = [](const std::vector<std::string>& v, const std::string& n) {
    auto it = std::find(v.begin(), v.end(), n);
    return it == v.end() ? -1 : static_cast<int32_t>(it - v.begin());
  };
  const std::string suffix = "@GRAD";
  for (size_t j = 0; j < g.info.inputs.size(); ++j) {
    const std::string& n = g.info.inputs[j];
    int32_t i;
    if ((i = index_of(fwd.info.inputs, n)) >= 0) {
      fwd.grad_inputs.push_back({GradSlot::kFwdInput, i});
      fwd.rule.saved_inputs = ~0u;
    } else if ((i = index_of(fwd.info.outputs, n)) >= 0) {
      fwd.grad_inputs.push_back({GradSlot::kFwdOutput, i});
      fwd.rule.saved_outputs = true;
    } else if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
               (i = index_of(fwd.info.outputs, n.substr(0, n.size() - suffix.size()))) >= 0) {
      fwd.grad_inputs.push_back({GradSlot::kFwdOutputGrad, i});
    } else {
      OAR_THROW(ErrorCode::kInvalidArgument,
                g.where() << ": input '" << n << "' is neither an input nor an output of " << fwd.info.name
                          << " nor the gradient of one (Grad(\"Out\") = \"Out@GRAD\")");
    }
  }
  for (const std::string& n : g.info.outputs) {
    int32_t i = -1;
    if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      i = index_of(fwd.info.inputs, n.substr(0, n.size() - suffix.size()));
    OAR_ENFORCE(i >= 0, ErrorCode::kInvalidArgument,
                g.where() << ": output '" << n << "' is not the gradient of an input of " << fwd.info.name
                          << " (Grad(\"X\") = \"X@GRAD\")");
    OAR_ENFORCE(!(fwd.info.input_flags[i] & OAR_CUSTOM_INPUT_VECTOR), ErrorCode::kUnimplemented,
                g.where() << ": output '" << n << "': gradients of vector inputs are not supported");
    fwd.grad_outputs.push_back(i);
  }
  for (const CustomAttr& a : g.attrs) {
    bool found = false;
    for (const CustomAttr& b : fwd.attrs) found |= b.name == a.name;
    OAR_ENFORCE(found, ErrorCode::kInvalidArgument,
                g.where() << ": attribute '" << a.name << "' is not an attribute of " << fwd.info.name);
  }
  fwd.grad = &g;
  fwd.rule.fn = custom_grad;
  fwd.def->grad = fwd.rule;
}

// Validates one registered op into its state (nothing is published yet).
std::unique_ptr<CustomOp> build_op(const OarCustomOpRegistrar::Op& r, const std::string& path) {
  auto op = std::make_unique<CustomOp>();
  CustomOpInfo& info = op->info;
  info.name = r.name;
  info.library = path;
  info.inputs = r.inputs;
  info.input_flags = r.input_flags;
  info.outputs = r.outputs;
  const std::string where = op->where();
  OAR_ENFORCE(!info.outputs.empty(), ErrorCode::kInvalidArgument, where << ": declares no outputs");
  OAR_ENFORCE(info.outputs.size() <= static_cast<size_t>(kMaxOpOutputs), ErrorCode::kUnimplemented,
              where << ": declares " << info.outputs.size() << " outputs; at most " << kMaxOpOutputs
                    << " are supported");
  OAR_ENFORCE(!r.kernels.empty(), ErrorCode::kInvalidArgument, where << ": has no kernel (SetKernelFn)");
  for (const auto& d : r.attrs) {
    op->attrs.push_back(parse_attr(where, d));
    info.attr_names.push_back(op->attrs.back().name);
    info.attr_types.push_back(op->attrs.back().type_name);
  }
  for (uint32_t f : info.input_flags) op->needs_counts |= f != 0;
  info.inplace.assign(info.outputs.size(), -1);
  OAR_ENFORCE(r.inplace_in.size() <= 1, ErrorCode::kUnimplemented,
              where << ": at most one in-place pair is supported, got " << r.inplace_in.size());
  for (size_t p = 0; p < r.inplace_in.size(); ++p) {
    auto in = std::find(info.inputs.begin(), info.inputs.end(), r.inplace_in[p]);
    auto out = std::find(info.outputs.begin(), info.outputs.end(), r.inplace_out[p]);
    OAR_ENFORCE(in != info.inputs.end() && out != info.outputs.end(), ErrorCode::kInvalidArgument,
                where << ": in-place map {" << r.inplace_in[p] << ": " << r.inplace_out[p]
                      << "} names an unknown input or output");
    const auto slot = static_cast<int32_t>(in - info.inputs.begin());
    for (int32_t s = 0; s <= slot; ++s)
      OAR_ENFORCE(info.input_flags[s] == 0, ErrorCode::kUnimplemented,
                  where << ": the in-place input and the inputs before it must be plain tensors");
    info.inplace[out - info.outputs.begin()] = slot;
  }
  for (const auto& [dev, k] : r.kernels) info.kernel_devices.push_back(dev);
  op->kernels = r.kernels;
  op->infer_shape = r.infer_shape;
  op->infer_shape_user = r.infer_shape_user;
  op->infer_dtype = r.infer_dtype;
  op->infer_dtype_user = r.infer_dtype_user;
  return op;
}

// Stable C strings for the OpDef (which keeps const char* names).
const char* keep(const std::string& s) {
  static std::vector<std::unique_ptr<std::string>>* strings = new std::vector<std::unique_ptr<std::string>>();
  strings->push_back(std::make_unique<std::string>(s));
  return strings->back()->c_str();
}

void publish(CustomOp& op, Plugin* library) {
  op.library = library;
  OpDef def;
  def.name = keep(op.info.name);
  for (const auto& n : op.info.inputs) def.inputs.push_back(keep(n));
  def.variadic = op.needs_counts;  // the flattened inputs vary in number; inference checks them
  for (const auto& n : op.info.outputs) def.outputs.push_back(keep(n));
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    AttrType t = AttrType::kInt;
    for (const AttrKind& k : kAttrKinds)
      if (k.type == op.attrs[i].type) t = k.core;
    def.attrs.push_back({keep(op.attrs[i].name), t, true, default_of(t)});
  }
  if (op.needs_counts)
    def.attrs.push_back({kCustomInputCounts, AttrType::kInts, false, std::vector<int64_t>{}});
  def.infer = custom_infer;
  def.dispatch_input = op.info.inputs.empty() ? -1 : 0;
  for (size_t o = 0; o < op.info.inplace.size(); ++o)
    if (op.info.inplace[o] >= 0)
      def.inplace_input = op.info.inplace[o];  // flat index: the slots before are plain
  def.custom = true;
  def.user = &op;
  def.doc = "custom op from " + op.info.library;
  op.def = &OpRegistry::get().add(std::move(def));
  KernelEntry e{custom_kernel, &op, OAR_KERNEL_STRIDED_INPUTS | kKernelOwnsOutputs, library};
  Runtime& rt = Runtime::get();
  for (int16_t t = 0; t < kMaxDeviceTypes; ++t)
    for (int32_t d = 0; d < kNumDTypes; ++d) rt.add_kernel(op.def->id, t, static_cast<DType>(d), e);
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

const CustomOpInfo* custom_op_info(const OpDef& op) { return op.custom ? &state_of(op).info : nullptr; }

std::vector<CustomOpInfo> load_custom_op_library(const std::string& path) {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  const std::string key = canonical(path);
  if (auto it = l.libraries.find(key); it != l.libraries.end()) return it->second;
  std::error_code ec;
  OAR_ENFORCE(std::filesystem::exists(path, ec), ErrorCode::kNotFound,
              "custom op library '" << path << "' does not exist");
  auto plugin = std::make_unique<Plugin>();
  plugin->path = key;
  plugin->name = "custom op library " + std::filesystem::path(path).filename().string();
  boost::system::error_code bec;
  plugin->library.load(path, boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local, bec);
  OAR_ENFORCE(!bec, ErrorCode::kInvalidArgument,
              "custom op library '" << path << "' cannot be loaded: " << bec.message());
  OAR_ENFORCE(plugin->library.has(OAR_CUSTOM_OP_INIT_SYMBOL), ErrorCode::kInvalidArgument,
              "'" << path << "' is not an oar custom op library: it does not export "
                  << OAR_CUSTOM_OP_INIT_SYMBOL
                  << " (include <oar/extension.h> or <paddle/extension.h> and build it as a shared library)");
  auto init =
      plugin->library.get<OarError*(const OarCustomOpServices*, OarCustomOpRegistrar*, uint32_t*, uint32_t*)>(
          OAR_CUSTOM_OP_INIT_SYMBOL);
  Runtime::get();  // device types are known before kernels are published
  OarCustomOpRegistrar registrar;
  uint32_t major = 0, minor = 0;
  OarError* err = nullptr;
  try {
    err = init(&services(), &registrar, &major, &minor);
  } catch (const std::exception& e) {  // a library not built with our header may let one escape
    OAR_THROW(ErrorCode::kExternal, "custom op library '" << path << "': init threw: " << e.what());
  }
  registrar.open = false;
  if (major != OAR_CUSTOM_OP_ABI_MAJOR ||
      std::abs(static_cast<int64_t>(minor) - OAR_CUSTOM_OP_ABI_MINOR) > OAR_CUSTOM_OP_ABI_MINOR_WINDOW) {
    if (err) core_services()->error_free(err);
    OAR_THROW(ErrorCode::kAbiMismatch,
              "custom op library '" << path << "' was built for custom-op ABI " << major << "." << minor
                                    << "; this oar accepts " << OAR_CUSTOM_OP_ABI_MAJOR << ".x with x within "
                                    << OAR_CUSTOM_OP_ABI_MINOR_WINDOW << " of " << OAR_CUSTOM_OP_ABI_MINOR);
  }
  if (err) {
    const ErrorCode code = code_of(err->code);
    std::string msg = err->message;
    delete err;
    OAR_THROW(code, "custom op library '" << path << "': init failed: " << msg);
  }
  // Validate everything before publishing anything: a refused library leaves no op behind.
  std::vector<std::unique_ptr<CustomOp>> ops;
  std::map<std::string, CustomOp*> by_name;
  // Vector outputs are not supported: a forward op with one is refused; a grad op with one (the
  // gradient of a Vec input) is left out and its forward op raises when differentiated.
  std::map<std::string, std::string> no_grad;  // forward op -> why it has no gradient
  std::set<std::string> names;
  for (const auto& r : registrar.ops) names.insert(r.name);
  for (const auto& r : registrar.ops) {
    std::string vec;
    for (size_t o = 0; o < r.outputs.size() && o < r.output_flags.size(); ++o)
      if (r.output_flags[o] & OAR_CUSTOM_OUTPUT_VECTOR) vec = r.outputs[o];
    if (vec.empty()) continue;
    const std::string where = "custom op '" + r.name + "' (" + key + ")";
    const std::string base = r.name.size() > 5 && r.name.compare(r.name.size() - 5, 5, "_grad") == 0
                                 ? r.name.substr(0, r.name.size() - 5)
                                 : std::string();
    OAR_ENFORCE(!base.empty() && names.count(base), ErrorCode::kUnimplemented,
                where << ": output '" << vec << "' is a vector output (Vec), which oar does not support");
    no_grad[base] = where + ": output '" + vec +
                    "' is a vector output (Vec), which oar does not support, so " + base +
                    " cannot be differentiated";
  }
  for (const auto& r : registrar.ops) {
    if (r.name.size() > 5 && no_grad.count(r.name.substr(0, r.name.size() - 5)) &&
        r.name.compare(r.name.size() - 5, 5, "_grad") == 0)
      continue;  // the grad op left out
    ops.push_back(build_op(r, key));
    CustomOp& op = *ops.back();
    if (const OpDef* existing = OpRegistry::get().find(op.info.name)) {
      const CustomOpInfo* other = custom_op_info(*existing);
      OAR_THROW(ErrorCode::kInvalidArgument,
                op.where() << ": an op named '" << op.info.name << "' is already registered"
                           << (other ? " by custom op library '" + other->library + "'"
                                     : std::string(" (a built-in op)")));
    }
    OAR_ENFORCE(by_name.emplace(op.info.name, &op).second, ErrorCode::kInvalidArgument,
                op.where() << ": registered twice in the library");
  }
  // Check the grad links before publishing (link_grad needs the OpDefs, so it runs after; these checks
  // make it not throw).
  for (auto& op : ops) {
    auto g = by_name.find(op->info.name + "_grad");
    if (g == by_name.end()) continue;
    CustomOp probe = CustomOp();
    probe.info = op->info;
    probe.attrs = op->attrs;
    OpDef scratch;
    probe.def = &scratch;
    link_grad(probe, *g->second);
  }
  Plugin* lib = plugin.get();
  l.handles.push_back(std::move(plugin));
  std::vector<CustomOpInfo> infos;
  for (auto& op : ops) publish(*op, lib);
  for (auto& op : ops) {
    auto g = by_name.find(op->info.name + "_grad");
    if (g != by_name.end()) link_grad(*op, *g->second);
    if (auto why = no_grad.find(op->info.name); why != no_grad.end()) {
      op->grad_error = why->second;
      op->rule.fn = unsupported_grad;
      op->def->grad = op->rule;
    } else if (!op->grad) {
      // No "<op>_grad": differentiating through the op raises, naming it, rather than treating its
      // outputs as constants (a grad op without "<op>_grad_grad" would give wrong second derivatives).
      op->grad_error = missing_grad_message(*op, names);
      op->rule.fn = unsupported_grad;
      op->def->grad = op->rule;
    }
    infos.push_back(op->info);
  }
  for (auto& op : ops) op.release();  // owned by their OpDefs (user) from now on, never freed
  l.libraries[key] = infos;
  VLOG(1) << "loaded custom op library " << path << " (" << infos.size() << " ops)";
  return infos;
}

void load_custom_op_libraries_from_env() {
  const char* v = std::getenv("OAR_CUSTOM_OP_LIBS");
  if (!v) return;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) load_custom_op_library(item);
}

}  // namespace oar
