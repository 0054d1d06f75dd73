// Kernel authoring: tensor views over OarTensorDesc, a typed context, and registration that turns a
// plain C++ function `void(KernelContext&)` into the C kernel signature.
#pragma once

#include <oar/sdk/plugin.h>
#include <oar/sdk/types.h>

#include <algorithm>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

namespace oar::sdk {

// A read-only view of a tensor descriptor. Element (i0..in) lives at
// data<T>()[sum(ik * stride(k))], data<T>() already including the offset.
class TensorView {
 public:
  TensorView() = default;
  explicit TensorView(const OarTensorDesc* d) : d_(d) {}
  bool defined() const { return d_ != nullptr; }
  const OarTensorDesc* desc() const { return d_; }
  int32_t dtype() const { return d_->dtype; }
  int32_t ndim() const { return d_->ndim; }
  const int64_t* dims() const { return d_->dims; }
  const int64_t* strides() const { return d_->strides; }
  int64_t dim(int32_t i) const { return d_->dims[i < 0 ? i + d_->ndim : i]; }
  int64_t stride(int32_t i) const { return d_->strides[i < 0 ? i + d_->ndim : i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t i = 0; i < d_->ndim; ++i) n *= d_->dims[i];
    return n;
  }
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int32_t i = d_->ndim - 1; i >= 0; --i) {
      if (d_->dims[i] != 1 && d_->strides[i] != expect) return false;
      expect *= d_->dims[i];
    }
    return true;
  }
  std::vector<int64_t> shape() const { return std::vector<int64_t>(d_->dims, d_->dims + d_->ndim); }
  // Raw address of element 0 (device address on a device that is not host accessible).
  void* raw() const { return static_cast<char*>(d_->data) + d_->offset * dtype_size(d_->dtype); }
  template <typename T>
  T* data() const {
    OAR_SDK_CHECK(
        dtype_of<T> == d_->dtype, OAR_ERR_TYPE,
        "tensor has dtype " << dtype_name(d_->dtype) << ", kernel read it as " << dtype_name(dtype_of<T>));
    return static_cast<T*>(d_->data) + d_->offset;
  }

 private:
  const OarTensorDesc* d_ = nullptr;
};

class KernelContext {
 public:
  explicit KernelContext(OarKernelContext* ctx) : ctx_(ctx) {}
  OarKernelContext* raw() const { return ctx_; }

  int32_t num_inputs() const { return kernel_api().num_inputs(ctx_); }
  int32_t num_outputs() const { return kernel_api().num_outputs(ctx_); }
  TensorView input(int32_t i) const { return TensorView(kernel_api().input(ctx_, i)); }
  TensorView output(int32_t i) const {
    const OarTensorDesc* d = kernel_api().output(ctx_, i);
    OAR_SDK_CHECK(d != nullptr, OAR_ERR_INTERNAL, "core did not provide output " << i);
    return TensorView(d);
  }
  TensorView resize_output(int32_t i, const std::vector<int64_t>& dims) {
    const OarTensorDesc* d = nullptr;
    throw_if_error(kernel_api().resize_output(ctx_, i, static_cast<int32_t>(dims.size()), dims.data(), &d));
    return TensorView(d);
  }
  OarStream stream() const { return kernel_api().stream(ctx_); }
  int32_t device() const { return kernel_api().device(ctx_); }

  int64_t attr_int(const char* name) const {
    int64_t v = 0;
    throw_if_error(kernel_api().attr_int(ctx_, name, &v));
    return v;
  }
  double attr_float(const char* name) const {
    double v = 0;
    throw_if_error(kernel_api().attr_float(ctx_, name, &v));
    return v;
  }
  std::vector<int64_t> attr_ints(const char* name) const {
    const int64_t* p = nullptr;
    int64_t n = 0;
    throw_if_error(kernel_api().attr_ints(ctx_, name, &p, &n));
    return std::vector<int64_t>(p, p + n);
  }
  std::vector<double> attr_floats(const char* name) const {
    const double* p = nullptr;
    int64_t n = 0;
    throw_if_error(kernel_api().attr_floats(ctx_, name, &p, &n));
    return std::vector<double>(p, p + n);
  }
  // The attribute, or `fallback` when the core did not pass it (an attribute of the wrong type throws).
  int64_t attr_int_or(const char* name, int64_t fallback) const {
    int64_t v = fallback;
    return take_optional(kernel_api().attr_int(ctx_, name, &v)) ? v : fallback;
  }
  double attr_float_or(const char* name, double fallback) const {
    double v = fallback;
    return take_optional(kernel_api().attr_float(ctx_, name, &v)) ? v : fallback;
  }
  std::vector<int64_t> attr_ints_or(const char* name, std::vector<int64_t> fallback) const {
    const int64_t* p = nullptr;
    int64_t n = 0;
    if (!take_optional(kernel_api().attr_ints(ctx_, name, &p, &n))) return fallback;
    return std::vector<int64_t>(p, p + (p ? n : 0));
  }
  std::string attr_string(const char* name) const {
    const char* s = nullptr;
    throw_if_error(kernel_api().attr_string(ctx_, name, &s));
    return s ? s : "";
  }
  void* workspace(uint64_t bytes) {
    // Appended in ABI 1.1: an older core leaves it NULL (docs/device_abi.md, the size rule).
    if (!kernel_api().workspace)
      throw Error(OAR_ERR_UNIMPLEMENTED,
                  "the core's kernel API has no workspace (a core older than ABI 1.1)");
    void* p = nullptr;
    throw_if_error(kernel_api().workspace(ctx_, bytes, &p));
    return p;
  }

 private:
  // true: present; false: absent (OAR_ERR_NOT_FOUND); any other error throws.
  static bool take_optional(OarError* e) {
    if (!e) return true;
    if (services().error_code(e) != OAR_ERR_NOT_FOUND) throw_if_error(e);
    services().error_free(e);
    return false;
  }
  OarKernelContext* ctx_;
};

// A tensor descriptor copied out of a kernel's context, for work that runs on a stream after the call
// returned (the core's descriptors are valid only during the call).
class HeldTensor {
 public:
  static constexpr int32_t kMaxRank = 16;
  HeldTensor() = default;
  explicit HeldTensor(const TensorView& t) { hold(t.desc()); }
  HeldTensor(const HeldTensor& o) { *this = o; }
  HeldTensor& operator=(const HeldTensor& o) {
    desc_ = o.desc_;
    std::copy(o.dims_, o.dims_ + kMaxRank, dims_);
    std::copy(o.strides_, o.strides_ + kMaxRank, strides_);
    desc_.dims = dims_;
    desc_.strides = strides_;
    return *this;
  }
  void hold(const OarTensorDesc* d) {
    OAR_SDK_CHECK(d, OAR_ERR_INVALID_ARGUMENT, "a required tensor is missing");
    OAR_SDK_CHECK(d->ndim >= 0 && d->ndim <= kMaxRank, OAR_ERR_INVALID_ARGUMENT,
                  "tensor rank " << d->ndim << " exceeds " << kMaxRank);
    desc_ = *d;
    desc_.struct_size = sizeof(desc_);
    std::copy(d->dims, d->dims + d->ndim, dims_);
    std::copy(d->strides, d->strides + d->ndim, strides_);
    desc_.dims = dims_;
    desc_.strides = strides_;
  }
  // The descriptor itself, e.g. to translate desc().data into a host address before the work runs.
  OarTensorDesc& desc() { return desc_; }
  const OarTensorDesc& desc() const { return desc_; }
  TensorView view() const { return TensorView(&desc_); }

 private:
  OarTensorDesc desc_{};
  int64_t dims_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
};

using KernelBody = void (*)(KernelContext&);
// A supports query (ABI 1.2): returns to say yes, calls sdk::decline(reason) to say no. It sees the call's
// dtypes, dims, strides and attributes through the context (tensor data is NULL; no stream, no workspace).
using SupportsBody = void (*)(KernelContext&);

namespace detail {
// The one C entry point shared by every KernelBody: user_data carries the C++ function.
inline OarError* kernel_trampoline(OarKernelContext* ctx, void* user_data) {
  auto body = reinterpret_cast<KernelBody>(user_data);
  return guard([&] {
    KernelContext c(ctx);
    body(c);
  });
}
inline OarError* supports_trampoline(const OarSupportsQuery* q, void* user_data) {
  auto body = reinterpret_cast<SupportsBody>(user_data);
  return guard([&] {
    KernelContext c(const_cast<OarKernelContext*>(q->ctx));
    body(c);
  });
}
// A core without register_kernel_ex (older than 1.2): the kernel asks its own query first, so a call it
// cannot run is an explained error (make_error turns the decline into OAR_ERR_UNIMPLEMENTED).
struct CheckedKernel {
  KernelBody body;
  SupportsBody supports;
};
inline OarError* checked_trampoline(OarKernelContext* ctx, void* user_data) {
  auto* k = static_cast<const CheckedKernel*>(user_data);
  return guard([&] {
    KernelContext c(ctx);
    k->supports(c);
    k->body(c);
  });
}
}  // namespace detail

// Registers kernels during oar_plugin_init.
class KernelRegistrar {
 public:
  explicit KernelRegistrar(OarRegistrar* r) : r_(r) {}

  // A C++ kernel body for the given dtypes of the op's dispatch key.
  void add(const char* op, std::initializer_list<OarDType> dtypes, KernelBody body, uint32_t flags = 0,
           int32_t op_version = 1) {
    add_raw(op, std::vector<OarDType>(dtypes), &detail::kernel_trampoline, reinterpret_cast<void*>(body),
            flags, op_version);
  }
  void add(const char* op, const std::vector<OarDType>& dtypes, KernelBody body, uint32_t flags = 0,
           int32_t op_version = 1) {
    add_raw(op, dtypes, &detail::kernel_trampoline, reinterpret_cast<void*>(body), flags, op_version);
  }
  // A kernel with a supports query (ABI 1.2): the core asks `supports` before each call and for
  // placement, and falls back to the CPU for a call it declines. Under an older core (no
  // register_kernel_ex) the kernel asks it itself, so a declined call is an error there.
  void add(const char* op, const std::vector<OarDType>& dtypes, KernelBody body, SupportsBody supports,
           uint32_t flags = 0, int32_t op_version = 1) {
    if (!services().register_kernel_ex) {
      // user_data must outlive the registration; never destroyed, as kernels may run during exit
      static auto* kernels = new std::deque<detail::CheckedKernel>();
      kernels->push_back({body, supports});
      add_raw(op, dtypes, &detail::checked_trampoline, &kernels->back(), flags, op_version);
      return;
    }
    add_raw(op, dtypes, &detail::kernel_trampoline, reinterpret_cast<void*>(body), flags, op_version,
            &detail::supports_trampoline, reinterpret_cast<void*>(supports));
  }
  // A kernel written directly against the C signature; `supports` (ABI 1.2) needs a core that has
  // register_kernel_ex.
  void add_raw(const char* op, const std::vector<OarDType>& dtypes, OarKernelFn fn, void* user_data,
               uint32_t flags = 0, int32_t op_version = 1, OarKernelSupportsFn supports = nullptr,
               void* supports_user_data = nullptr) {
    std::vector<int32_t> ds(dtypes.begin(), dtypes.end());
    OarKernelDef def{};
    def.struct_size = sizeof(def);
    def.op_name = op;
    def.op_version = op_version;
    def.dtypes = ds.data();
    def.num_dtypes = static_cast<int32_t>(ds.size());
    def.layout = OAR_LAYOUT_STRIDED;
    def.flags = flags;
    def.fn = fn;
    def.user_data = user_data;
    if (!supports) return throw_if_error(services().register_kernel(r_, &def));
    OAR_SDK_CHECK(
        services().register_kernel_ex, OAR_ERR_UNIMPLEMENTED,
        "kernel '" << op << "' has a supports query, which needs a core of ABI 1.2 or newer (this core: 1."
                   << services().abi_minor << ")");
    OarKernelRegistration reg{};
    reg.struct_size = sizeof(reg);
    reg.def = &def;
    reg.supports = supports;
    reg.supports_user_data = supports_user_data;
    throw_if_error(services().register_kernel_ex(r_, &reg));
  }

 private:
  OarRegistrar* r_;
};

// Dtype groups plugins commonly register for.
inline const std::vector<OarDType>& float_dtypes() {
  static const std::vector<OarDType> v = {OAR_DTYPE_FLOAT16, OAR_DTYPE_BFLOAT16, OAR_DTYPE_FLOAT32,
                                          OAR_DTYPE_FLOAT64};
  return v;
}
inline const std::vector<OarDType>& int_dtypes() {
  static const std::vector<OarDType> v = {OAR_DTYPE_INT8, OAR_DTYPE_UINT8, OAR_DTYPE_INT16, OAR_DTYPE_INT32,
                                          OAR_DTYPE_INT64};
  return v;
}
inline const std::vector<OarDType>& complex_dtypes() {
  static const std::vector<OarDType> v = {OAR_DTYPE_COMPLEX64, OAR_DTYPE_COMPLEX128};
  return v;
}
inline std::vector<OarDType> join(std::initializer_list<std::vector<OarDType>> groups) {
  std::vector<OarDType> out;
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}

}  // namespace oar::sdk
