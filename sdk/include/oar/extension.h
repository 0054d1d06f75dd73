// Custom C++ operators for oar, with PaddlePaddle 2.x's authoring model (paddle/extension.h gives
// the paddle:: spellings). Header-only: everything here is compiled into the custom-op library, and
// only the C ABI of oar/custom_op_api.h crosses into the core, so a library built with another
// compiler or libstdc++ ABI still loads. docs/custom_op.md is the guide.
//
//   std::vector<oar::Tensor> ReluForward(const oar::Tensor& x) { ... }
//   OAR_BUILD_OP(my_relu).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(ReluForward));
#pragma once

#include <oar/custom_op_api.h>
#include <oar/sdk/types.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace oar {

using sdk::bfloat16;
using sdk::complex128;
using sdk::complex64;
using sdk::float16;

// ---- errors ---------------------------------------------------------------------------------------
// Thrown by OAR_CHECK / OAR_THROW; the boundary turns it into an error with this code and message
// (OAR_ERR_INVALID_ARGUMENT becomes a Python ValueError). Any other exception becomes OAR_ERR_EXTERNAL.
class Exception : public std::runtime_error {
 public:
  Exception(int32_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int32_t code() const { return code_; }

 private:
  int32_t code_;
};

namespace detail {
inline void stream_all(std::ostream&) {}
template <typename T, typename... R>
void stream_all(std::ostream& os, const T& v, const R&... rest) {
  os << v;
  stream_all(os, rest...);
}
template <typename... A>
std::string concat(const A&... a) {
  std::ostringstream os;
  stream_all(os, a...);
  return os.str();
}
}  // namespace detail

#define OAR_CHECK(COND, ...)                                                                      \
  do {                                                                                            \
    if (!(COND))                                                                                  \
      throw ::oar::Exception(                                                                     \
          OAR_ERR_INVALID_ARGUMENT,                                                               \
          ::oar::detail::concat("Expected " #COND ", but it is not satisfied. ", ##__VA_ARGS__)); \
  } while (0)
#define OAR_THROW(...) throw ::oar::Exception(OAR_ERR_INVALID_ARGUMENT, ::oar::detail::concat(__VA_ARGS__))

// The core's services, set by oar_custom_op_init. Hidden: each library has its own.
namespace detail {
__attribute__((visibility("hidden"))) inline const OarCustomOpServices*& services_slot() {
  static const OarCustomOpServices* s = nullptr;
  return s;
}
inline const OarCustomOpServices& services() {
  const OarCustomOpServices* s = services_slot();
  if (!s) throw Exception(OAR_ERR_PRECONDITION, "oar custom op: the library was not loaded by oar");
  return *s;
}
// Turns a core error into an exception (the core's message is kept).
inline void check(OarError* e) {
  if (!e) return;
  const OarCustomOpServices& s = services();
  std::string msg = s.error_message(e);
  int32_t code = s.error_code(e);
  s.error_free(e);
  throw Exception(code, msg);
}
}  // namespace detail

// ---- data types and places ------------------------------------------------------------------------
enum class DataType : int32_t {
  BOOL = OAR_DTYPE_BOOL,
  INT8 = OAR_DTYPE_INT8,
  UINT8 = OAR_DTYPE_UINT8,
  INT16 = OAR_DTYPE_INT16,
  INT32 = OAR_DTYPE_INT32,
  INT64 = OAR_DTYPE_INT64,
  FLOAT16 = OAR_DTYPE_FLOAT16,
  BFLOAT16 = OAR_DTYPE_BFLOAT16,
  FLOAT32 = OAR_DTYPE_FLOAT32,
  FLOAT64 = OAR_DTYPE_FLOAT64,
  COMPLEX64 = OAR_DTYPE_COMPLEX64,
  COMPLEX128 = OAR_DTYPE_COMPLEX128,
  UNDEFINED = -1,
};

inline const char* DataTypeToString(DataType d) {
  return d == DataType::UNDEFINED ? "undefined" : sdk::dtype_name(static_cast<int32_t>(d));
}
inline std::ostream& operator<<(std::ostream& os, DataType d) { return os << DataTypeToString(d); }

template <typename T>
inline constexpr DataType DataTypeOf = static_cast<DataType>(sdk::dtype_of<T>);

// Paddle 2.1's place kinds; a Place compares equal to its kind.
enum class PlaceType { kUNK = -1, kCPU = 0, kGPU = 1, kCUSTOM = 2 };

class Place {
 public:
  Place() = default;
  explicit Place(std::string device_type, int32_t id = 0) : type_(std::move(device_type)), id_(id) {}
  Place(PlaceType t)
      : type_(t == PlaceType::kCPU   ? "cpu"
              : t == PlaceType::kGPU ? "gpu"
                                     : ""),
        id_(0) {}  // NOLINT
  const std::string& GetDeviceType() const { return type_; }
  int32_t GetDeviceId() const { return id_; }
  PlaceType GetType() const {
    return type_ == "cpu"   ? PlaceType::kCPU
           : type_ == "gpu" ? PlaceType::kGPU
           : type_.empty()  ? PlaceType::kUNK
                            : PlaceType::kCUSTOM;
  }
  bool is_cpu() const { return type_ == "cpu"; }
  bool is_gpu() const { return type_ == "gpu"; }
  bool operator==(const Place& o) const { return type_ == o.type_ && id_ == o.id_; }
  bool operator!=(const Place& o) const { return !(*this == o); }
  bool operator==(PlaceType t) const { return GetType() == t; }
  bool operator!=(PlaceType t) const { return GetType() != t; }
  std::string DebugString() const { return type_.empty() ? "undefined" : type_ + ":" + std::to_string(id_); }

 private:
  std::string type_;
  int32_t id_ = 0;
};
inline std::ostream& operator<<(std::ostream& os, const Place& p) { return os << p.DebugString(); }

struct CPUPlace : Place {
  CPUPlace() : Place("cpu", 0) {}
};
struct GPUPlace : Place {
  explicit GPUPlace(int32_t id = 0) : Place("gpu", id) {}
};
struct CustomPlace : Place {
  CustomPlace(const std::string& type, int32_t id = 0) : Place(type, id) {}
};

// ---- tensors --------------------------------------------------------------------------------------
// A counted reference to a core tensor. A default-constructed Tensor is undefined; Tensor(place, shape)
// describes one whose memory mutable_data<T>() allocates (Paddle 2.1 style).
class Tensor {
 public:
  Tensor() = default;
  // Takes over one reference (adopt) or adds one.
  Tensor(OarCTensor* h, bool adopt) : h_(h) {
    if (h_ && !adopt) detail::services().tensor_retain(h_);
  }
  Tensor(const Place& place, const std::vector<int64_t>& shape)
      : pending_place_(place), pending_shape_(shape) {}
  explicit Tensor(const Place& place) : pending_place_(place) {}
  Tensor(const Tensor& o) : h_(o.h_), pending_place_(o.pending_place_), pending_shape_(o.pending_shape_) {
    if (h_) detail::services().tensor_retain(h_);
  }
  Tensor(Tensor&& o) noexcept
      : h_(o.h_), pending_place_(std::move(o.pending_place_)), pending_shape_(std::move(o.pending_shape_)) {
    o.h_ = nullptr;
  }
  Tensor& operator=(Tensor o) noexcept {
    std::swap(h_, o.h_);
    std::swap(pending_place_, o.pending_place_);
    std::swap(pending_shape_, o.pending_shape_);
    return *this;
  }
  ~Tensor() {
    if (h_) detail::services().tensor_release(h_);
  }

  bool defined() const { return h_ != nullptr; }
  bool initialized() const { return h_ != nullptr; }
  bool is_initialized() const { return h_ != nullptr; }
  OarCTensor* raw() const { return h_; }
  // Hands the reference over (for the ABI boundary).
  OarCTensor* release() {
    OarCTensor* h = h_;
    h_ = nullptr;
    return h;
  }

  std::vector<int64_t> shape() const {
    if (!h_) return pending_shape_;
    const auto& s = detail::services();
    const int64_t* d = s.tensor_dims(h_);
    return std::vector<int64_t>(d, d + s.tensor_ndim(h_));
  }
  std::vector<int64_t> dims() const { return shape(); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape()) n *= d;
    return n;
  }
  int64_t size() const { return numel(); }
  DataType dtype() const {
    return h_ ? static_cast<DataType>(detail::services().tensor_dtype(h_)) : DataType::UNDEFINED;
  }
  DataType type() const { return dtype(); }
  Place place() const {
    if (!h_) return pending_place_;
    const auto& s = detail::services();
    return Place(s.tensor_device_type(h_), s.tensor_device(h_));
  }
  bool is_cpu() const { return place().is_cpu(); }
  bool is_gpu() const { return place().is_gpu(); }
  bool is_dense_tensor() const { return true; }
  bool is_contiguous() const { return h_ && detail::services().tensor_is_contiguous(h_); }
  // The device's stream (a cudaStream_t on "gpu"; NULL: synchronous).
  void* stream() const {
    Place p = place();
    return detail::services().stream(p.GetDeviceType().c_str(), p.GetDeviceId());
  }

  // Element 0, typed: T must match the dtype. A device address on devices the host cannot read.
  template <typename T>
  T* data() const {
    OAR_CHECK(h_ != nullptr, "data<T>() on an undefined tensor");
    OAR_CHECK(DataTypeOf<T> == dtype(), "data<", DataTypeToString(DataTypeOf<T>), ">() on a tensor of dtype ",
              dtype());
    return static_cast<T*>(detail::services().tensor_data(h_));
  }
  void* data() const { return h_ ? detail::services().tensor_data(h_) : nullptr; }
  // Allocates (when the tensor has no memory yet, or its dtype differs) and returns the data.
  template <typename T>
  T* mutable_data(const Place& place) {
    if (!h_ || DataTypeOf<T> != dtype() || place != this->place()) {
      const std::vector<int64_t> s = shape();
      OarCTensor* out = nullptr;
      detail::check(detail::services().tensor_empty(static_cast<int32_t>(s.size()), s.data(),
                                                    sdk::dtype_of<T>, place.GetDeviceType().c_str(),
                                                    place.GetDeviceId(), &out));
      *this = Tensor(out, true);
    }
    return data<T>();
  }
  template <typename T>
  T* mutable_data() {
    return mutable_data<T>(h_ ? place() : pending_place_);
  }

  // A copy on `place` (the same tensor when already there). Complete when it returns.
  Tensor copy_to(const Place& place, bool blocking = true) const {
    (void)blocking;
    OAR_CHECK(h_ != nullptr, "copy_to on an undefined tensor");
    OarCTensor* out = nullptr;
    detail::check(
        detail::services().tensor_copy_to(h_, place.GetDeviceType().c_str(), place.GetDeviceId(), &out));
    return Tensor(out, true);
  }
  template <typename T>
  Tensor copy_to(const Place& place) const {
    return copy_to(place, true);
  }
  // A copy converted to `dtype` (Paddle's Tensor::cast), on the same device.
  Tensor cast(DataType dtype) const {
    OAR_CHECK(h_ != nullptr, "cast on an undefined tensor");
    const OarCustomOpServices& s = detail::services();
    if (s.struct_size < offsetof(OarCustomOpServices, tensor_cast) + sizeof(s.tensor_cast) || !s.tensor_cast)
      throw Exception(OAR_ERR_UNIMPLEMENTED, "Tensor::cast: this oar core does not provide it");
    OarCTensor* out = nullptr;
    detail::check(s.tensor_cast(h_, static_cast<int32_t>(dtype), &out));
    return Tensor(out, true);
  }

  // Paddle's reshape: sets the shape. A tensor with memory of the same numel becomes a view with the
  // new shape; otherwise the memory is dropped and the next mutable_data allocates the new shape.
  void reshape(const std::vector<int64_t>& shape) {
    if (h_) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      if (n == numel()) {
        OarCTensor* out = nullptr;
        detail::check(
            detail::services().tensor_reshape(h_, static_cast<int32_t>(shape.size()), shape.data(), &out));
        *this = Tensor(out, true);
        return;
      }
      pending_place_ = place();
      *this = Tensor(pending_place_, shape);
      return;
    }
    pending_shape_ = shape;
  }

 private:
  OarCTensor* h_ = nullptr;
  Place pending_place_;
  std::vector<int64_t> pending_shape_;
};

inline Tensor full(const std::vector<int64_t>& shape, double value, DataType dtype = DataType::FLOAT32,
                   const Place& place = CPUPlace()) {
  OarCTensor* out = nullptr;
  detail::check(detail::services().tensor_full(static_cast<int32_t>(shape.size()), shape.data(),
                                               static_cast<int32_t>(dtype), value,
                                               place.GetDeviceType().c_str(), place.GetDeviceId(), &out));
  return Tensor(out, true);
}
inline Tensor empty(const std::vector<int64_t>& shape, DataType dtype = DataType::FLOAT32,
                    const Place& place = CPUPlace()) {
  OarCTensor* out = nullptr;
  detail::check(detail::services().tensor_empty(static_cast<int32_t>(shape.size()), shape.data(),
                                                static_cast<int32_t>(dtype), place.GetDeviceType().c_str(),
                                                place.GetDeviceId(), &out));
  return Tensor(out, true);
}
inline Tensor zeros(const std::vector<int64_t>& shape, DataType dtype = DataType::FLOAT32,
                    const Place& place = CPUPlace()) {
  return full(shape, 0.0, dtype, place);
}
inline Tensor ones(const std::vector<int64_t>& shape, DataType dtype = DataType::FLOAT32,
                   const Place& place = CPUPlace()) {
  return full(shape, 1.0, dtype, place);
}
inline Tensor empty_like(const Tensor& x) { return empty(x.shape(), x.dtype(), x.place()); }
inline Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.place()); }
inline Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype(), x.place()); }
inline Tensor full_like(const Tensor& x, double value) {
  return full(x.shape(), value, x.dtype(), x.place());
}

// An optional input: Optional("Y") in Inputs, `const oar::optional<oar::Tensor>&` in the kernel.
template <typename T>
class optional : public std::optional<T> {
 public:
  using std::optional<T>::optional;
  bool is_initialized() const { return this->has_value(); }
  const T& get() const { return this->value(); }
  T& get() { return this->value(); }
  const T* get_ptr() const { return this->has_value() ? &this->value() : nullptr; }
};

// Names in Inputs/Outputs: "X" plain, Vec("X") a list of tensors, Optional("X") maybe absent,
// Grad("Out") the gradient of Out (in a gradient op).
inline std::string Grad(const std::string& name) { return name + "@GRAD"; }
inline std::string Vec(const std::string& name) { return name + "@VECTOR"; }
inline std::string Optional(const std::string& name) { return name + "@OPTIONAL"; }

// ---- calling C++ functions from the ABI -----------------------------------------------------------
namespace detail {

inline OarError* to_error(int32_t code, const std::string& msg) {
  return services().error_new(code, 0, msg.c_str());
}
// Runs `body` and turns any exception into an ABI error (nothing may unwind into the core).
template <typename F>
OarError* guarded(F&& body) {
  try {
    body();
    return nullptr;
  } catch (const Exception& e) {
    return to_error(e.code(), e.what());
  } catch (const std::exception& e) {
    return to_error(OAR_ERR_EXTERNAL, e.what());
  } catch (...) {
    return to_error(OAR_ERR_EXTERNAL, "unknown C++ exception");
  }
}

// Attribute values by the C++ type the function asks for.
template <typename T>
struct AttrAs {
  static T get(const OarCustomAttr&) {
    static_assert(sizeof(T) == 0,
                  "unsupported attribute type: use bool, int, int64_t, float, double, std::string, or "
                  "std::vector of int, int64_t, float, double");
  }
};
#define OAR_EXT_ATTR_AS(T, EXPR)                          \
  template <>                                             \
  struct AttrAs<T> {                                      \
    static T get(const OarCustomAttr& a) { return EXPR; } \
  };
OAR_EXT_ATTR_AS(bool, a.i != 0)
OAR_EXT_ATTR_AS(int, static_cast<int>(a.i))
OAR_EXT_ATTR_AS(int64_t, a.i)
OAR_EXT_ATTR_AS(float, static_cast<float>(a.f))
OAR_EXT_ATTR_AS(double, a.f)
OAR_EXT_ATTR_AS(std::string, std::string(a.s ? a.s : ""))
OAR_EXT_ATTR_AS(std::vector<int>, std::vector<int>(a.ints, a.ints + a.count))
OAR_EXT_ATTR_AS(std::vector<int64_t>, std::vector<int64_t>(a.ints, a.ints + a.count))
OAR_EXT_ATTR_AS(std::vector<float>, std::vector<float>(a.floats, a.floats + a.count))
OAR_EXT_ATTR_AS(std::vector<double>, std::vector<double>(a.floats, a.floats + a.count))
#undef OAR_EXT_ATTR_AS

template <typename T>
inline constexpr bool is_attr_type_v =
    std::is_same_v<T, bool> || std::is_same_v<T, int> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
    std::is_same_v<T, std::vector<int>> || std::is_same_v<T, std::vector<int64_t>> ||
    std::is_same_v<T, std::vector<float>> || std::is_same_v<T, std::vector<double>>;

// Function arguments are read positionally: the first num_slots arguments are the declared inputs
// in order, the rest the declared attributes in order (Paddle's rule).
struct Reader {
  int32_t num_slots;
  const int32_t* slot_counts;
  int32_t num_attrs;
  const OarCustomAttr* attrs;
  int32_t arg = 0;   // next argument
  int32_t flat = 0;  // next flattened input

  // Which input slot the next argument reads (count entries), or -1 when it is an attribute.
  int32_t next_slot(int32_t* first, int32_t* count) {
    const int32_t a = arg++;
    if (a >= num_slots) return -1;
    *first = flat;
    *count = slot_counts ? slot_counts[a] : 1;
    flat += *count;
    return a;
  }
  const OarCustomAttr& next_attr_at(int32_t a) const {
    const int32_t i = a - num_slots;
    if (i < 0 || i >= num_attrs)
      throw Exception(OAR_ERR_INVALID_ARGUMENT,
                      concat("the function takes more arguments than the op has inputs (", num_slots,
                             ") and attributes (", num_attrs, ")"));
    return attrs[i];
  }
};

[[noreturn]] inline void arg_kind_error(int32_t arg, bool wanted_input) {
  throw Exception(OAR_ERR_INVALID_ARGUMENT,
                  concat("argument ", arg + 1,
                         wanted_input ? " is an attribute but the function reads an input there"
                                      : " is an input but the function reads an attribute there"));
}

// Kernel arguments.
template <typename T>
struct KernelArg {
  static T get(Reader& r, const OarCustomCall*) {
    static_assert(is_attr_type_v<T>, "unsupported kernel argument type");
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) >= 0) arg_kind_error(a, false);
    return AttrAs<T>::get(r.next_attr_at(a));
  }
};
template <>
struct KernelArg<Tensor> {
  static Tensor get(Reader& r, const OarCustomCall* c) {
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) < 0) arg_kind_error(a, true);
    return count > 0 ? Tensor(c->inputs[first], false) : Tensor();
  }
};
template <>
struct KernelArg<std::vector<Tensor>> {
  static std::vector<Tensor> get(Reader& r, const OarCustomCall* c) {
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) < 0) arg_kind_error(a, true);
    std::vector<Tensor> v;
    for (int32_t i = 0; i < count; ++i) v.emplace_back(c->inputs[first + i], false);
    return v;
  }
};
template <>
struct KernelArg<optional<Tensor>> {
  static optional<Tensor> get(Reader& r, const OarCustomCall* c) {
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) < 0) arg_kind_error(a, true);
    if (count == 0 || !c->inputs[first]) return std::nullopt;
    return Tensor(c->inputs[first], false);
  }
};

template <typename F, F f>
struct KernelImpl;
template <typename Ret, typename... Args, Ret (*f)(Args...)>
struct KernelImpl<Ret (*)(Args...), f> {
  static OarError* Compute(void*, OarCustomCall* call) {
    return guarded([&] {
      Reader r{call->num_slots, call->slot_counts, call->num_attrs, call->attrs};
      std::tuple<std::decay_t<Args>...> args{KernelArg<std::decay_t<Args>>::get(r, call)...};  // in order
      if constexpr (std::is_void_v<Ret>) {
        std::apply(f, args);  // in-place: the core maps the outputs to their inputs
        if (call->struct_size >= offsetof(OarCustomCall, num_returned) + sizeof(int32_t))
          call->num_returned = 0;
      } else {
        static_assert(std::is_same_v<Ret, std::vector<Tensor>>,
                      "a kernel returns std::vector<Tensor> or void");
        std::vector<Tensor> outs = std::apply(f, args);
        if (static_cast<int32_t>(outs.size()) > call->num_outputs)
          throw Exception(OAR_ERR_INVALID_ARGUMENT,
                          concat("the kernel returned ", outs.size(), " tensors but the op declares ",
                                 call->num_outputs, " output(s)"));
        // Fewer outputs than declared: the missing ones must be in-place outputs (the core checks).
        for (size_t i = 0; i < outs.size(); ++i) call->outputs[i] = outs[i].release();
        if (call->struct_size >= offsetof(OarCustomCall, num_returned) + sizeof(int32_t))
          call->num_returned = static_cast<int32_t>(outs.size());
      }
    });
  }
};

// Infer-shape arguments: shapes of the inputs, then attributes.
using Shape = std::vector<int64_t>;
inline Shape shape_at(const OarCustomInfer* in, int32_t i) {
  return Shape(in->input_dims[i], in->input_dims[i] + in->input_ndims[i]);
}
template <typename T>
struct ShapeArg {
  static T get(Reader& r, const OarCustomInfer* in) {
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) >= 0) {
      if constexpr (std::is_same_v<T, Shape>) {  // an input's shape
        if (count == 0) return Shape();
        return shape_at(in, first);
      } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
        std::vector<Shape> v;
        for (int32_t i = 0; i < count; ++i) v.push_back(shape_at(in, first + i));
        return v;
      } else if constexpr (std::is_same_v<T, optional<Shape>>) {
        if (count == 0) return std::nullopt;
        return shape_at(in, first);
      } else {
        arg_kind_error(a, false);
      }
    }
    if constexpr (is_attr_type_v<T>) return AttrAs<T>::get(r.next_attr_at(a));
    arg_kind_error(a, true);
  }
};
template <typename T>
struct DtypeArg {
  static T get(Reader& r, const OarCustomInfer* in) {
    int32_t first, count;
    const int32_t a = r.arg;
    if (r.next_slot(&first, &count) >= 0) {
      if constexpr (std::is_same_v<T, DataType>) {
        return count == 0 ? DataType::UNDEFINED : static_cast<DataType>(in->input_dtypes[first]);
      } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
        std::vector<DataType> v;
        for (int32_t i = 0; i < count; ++i) v.push_back(static_cast<DataType>(in->input_dtypes[first + i]));
        return v;
      } else if constexpr (std::is_same_v<T, optional<DataType>>) {
        if (count == 0) return std::nullopt;
        return static_cast<DataType>(in->input_dtypes[first]);
      } else {
        arg_kind_error(a, false);
      }
    }
    if constexpr (is_attr_type_v<T>) return AttrAs<T>::get(r.next_attr_at(a));
    arg_kind_error(a, true);
  }
};

template <typename F, F f>
struct InferShapeImpl;
template <typename... Args, std::vector<Shape> (*f)(Args...)>
struct InferShapeImpl<std::vector<Shape> (*)(Args...), f> {
  static OarError* Infer(void*, OarCustomInfer* in) {
    return guarded([&] {
      Reader r{in->num_slots, in->slot_counts, in->num_attrs, in->attrs};
      std::tuple<std::decay_t<Args>...> args{ShapeArg<std::decay_t<Args>>::get(r, in)...};
      std::vector<Shape> out = std::apply(f, args);
      if (static_cast<int32_t>(out.size()) != in->num_outputs)
        throw Exception(OAR_ERR_INVALID_ARGUMENT,
                        concat("InferShape returned ", out.size(), " shapes but the op declares ",
                               in->num_outputs, " output(s)"));
      for (int32_t i = 0; i < in->num_outputs; ++i) {
        if (out[i].size() > OAR_CUSTOM_MAX_DIMS)
          throw Exception(OAR_ERR_INVALID_ARGUMENT,
                          concat("InferShape: output ", i, " has more than ", OAR_CUSTOM_MAX_DIMS, " dims"));
        in->output_ndims[i] = static_cast<int32_t>(out[i].size());
        for (size_t d = 0; d < out[i].size(); ++d) in->output_dims[i * OAR_CUSTOM_MAX_DIMS + d] = out[i][d];
      }
    });
  }
};

template <typename F, F f>
struct InferDtypeImpl;
template <typename... Args, std::vector<DataType> (*f)(Args...)>
struct InferDtypeImpl<std::vector<DataType> (*)(Args...), f> {
  static OarError* Infer(void*, OarCustomInfer* in) {
    return guarded([&] {
      Reader r{in->num_slots, in->slot_counts, in->num_attrs, in->attrs};
      std::tuple<std::decay_t<Args>...> args{DtypeArg<std::decay_t<Args>>::get(r, in)...};
      std::vector<DataType> out = std::apply(f, args);
      if (static_cast<int32_t>(out.size()) != in->num_outputs)
        throw Exception(OAR_ERR_INVALID_ARGUMENT,
                        concat("InferDtype returned ", out.size(), " dtypes but the op declares ",
                               in->num_outputs, " output(s)"));
      for (int32_t i = 0; i < in->num_outputs; ++i) in->output_dtypes[i] = static_cast<int32_t>(out[i]);
    });
  }
};

// ---- op registration ------------------------------------------------------------------------------
// What OAR_BUILD_OP collects; registered with the core by oar_custom_op_init.
struct OpMeta {
  std::string name;
  std::vector<std::string> inputs, outputs, attrs, inplace_in, inplace_out;
  std::vector<uint32_t> input_flags, output_flags;
  struct Kernel {
    std::string device;  // empty: every device type
    OarCustomKernelFn fn;
  };
  std::vector<Kernel> kernels;
  OarCustomInferFn infer_shape = nullptr;
  OarCustomInferFn infer_dtype = nullptr;
};
__attribute__((visibility("hidden"))) inline std::vector<OpMeta>& op_registry() {
  static std::vector<OpMeta> ops;
  return ops;
}

// Strips the Vec/Optional markers from a name; says which were there.
inline std::string strip_markers(std::string name, uint32_t* flags) {
  for (const char* m : {"@VECTOR", "@OPTIONAL"}) {
    size_t p;
    while ((p = name.find(m)) != std::string::npos) {
      name.erase(p, std::strlen(m));
      if (flags) *flags |= m[1] == 'V' ? OAR_CUSTOM_INPUT_VECTOR : OAR_CUSTOM_INPUT_OPTIONAL;
    }
  }
  return name;
}

}  // namespace detail

class OpMetaInfoBuilder {
 public:
  // grad_order 0: the forward op; 1: "<name>_grad"; 2: "<name>_grad_grad".
  OpMetaInfoBuilder(const std::string& name, int grad_order) : index_(detail::op_registry().size()) {
    std::string n = name;
    for (int i = 0; i < grad_order; ++i) n += "_grad";
    detail::op_registry().push_back(detail::OpMeta{});
    meta().name = n;
  }
  OpMetaInfoBuilder& Inputs(std::vector<std::string> names) {
    meta().inputs.clear();
    meta().input_flags.clear();
    for (const auto& n : names) {
      uint32_t flags = 0;
      meta().inputs.push_back(detail::strip_markers(n, &flags));
      meta().input_flags.push_back(flags);
    }
    return *this;
  }
  OpMetaInfoBuilder& Outputs(std::vector<std::string> names) {
    meta().outputs.clear();
    meta().output_flags.clear();
    for (const auto& n : names) {  // nothing here may throw: it runs while the library is being loaded
      uint32_t flags = 0;
      meta().outputs.push_back(detail::strip_markers(n, &flags));
      meta().output_flags.push_back(flags & OAR_CUSTOM_INPUT_VECTOR ? OAR_CUSTOM_OUTPUT_VECTOR : 0u);
    }
    return *this;
  }
  OpMetaInfoBuilder& Attrs(std::vector<std::string> decls) {
    meta().attrs = std::move(decls);
    return *this;
  }
  OpMetaInfoBuilder& SetInplaceMap(std::vector<std::pair<std::string, std::string>> map) {
    for (auto& kv : map) {
      meta().inplace_in.push_back(detail::strip_markers(kv.first, nullptr));
      meta().inplace_out.push_back(detail::strip_markers(kv.second, nullptr));
    }
    return *this;
  }
  OpMetaInfoBuilder& SetKernelFn(OarCustomKernelFn fn) { return SetKernelFn("", fn); }
  // A kernel for one device type only ("cpu", "sim", "gpu").
  OpMetaInfoBuilder& SetKernelFn(const std::string& device_type, OarCustomKernelFn fn) {
    meta().kernels.push_back({device_type, fn});
    return *this;
  }
  OpMetaInfoBuilder& SetInferShapeFn(OarCustomInferFn fn) {
    meta().infer_shape = fn;
    return *this;
  }
  OpMetaInfoBuilder& SetInferDtypeFn(OarCustomInferFn fn) {
    meta().infer_dtype = fn;
    return *this;
  }

 private:
  detail::OpMeta& meta() { return detail::op_registry()[index_]; }
  size_t index_;
};

}  // namespace oar

#define OAR_KERNEL(...) ::oar::detail::KernelImpl<decltype(&__VA_ARGS__), &__VA_ARGS__>::Compute
#define OAR_INFER_SHAPE(...) ::oar::detail::InferShapeImpl<decltype(&__VA_ARGS__), &__VA_ARGS__>::Infer
#define OAR_INFER_DTYPE(...) ::oar::detail::InferDtypeImpl<decltype(&__VA_ARGS__), &__VA_ARGS__>::Infer

#define OAR_EXT_CONCAT_(a, b) a##b
#define OAR_EXT_CONCAT(a, b) OAR_EXT_CONCAT_(a, b)
#define OAR_BUILD_OP(name)                                                           \
  static ::oar::OpMetaInfoBuilder OAR_EXT_CONCAT(oar_op_meta_##name##_, __COUNTER__) \
      __attribute__((unused)) = ::oar::OpMetaInfoBuilder(#name, 0)
#define OAR_BUILD_GRAD_OP(name)                                                           \
  static ::oar::OpMetaInfoBuilder OAR_EXT_CONCAT(oar_op_meta_##name##_grad_, __COUNTER__) \
      __attribute__((unused)) = ::oar::OpMetaInfoBuilder(#name, 1)
#define OAR_BUILD_DOUBLE_GRAD_OP(name)                                                         \
  static ::oar::OpMetaInfoBuilder OAR_EXT_CONCAT(oar_op_meta_##name##_grad_grad_, __COUNTER__) \
      __attribute__((unused)) = ::oar::OpMetaInfoBuilder(#name, 2)

// ---- dtype dispatch -------------------------------------------------------------------------------
// OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "name", ([&] { kernel<data_t>(...); })): runs the lambda
// with `data_t` bound to the C++ type of the dtype, or throws naming `name` and the dtype.
#define OAR_PRIVATE_CASE_TYPE(NAME, DTYPE, TYPE, ...) \
  case DTYPE: {                                       \
    using data_t = TYPE;                              \
    __VA_ARGS__();                                    \
    break;                                            \
  }
#define OAR_PRIVATE_DISPATCH(TYPE, NAME, CASES, ...)                                                      \
  [&] {                                                                                                   \
    const ::oar::DataType oar_dispatch_dtype_ = TYPE;                                                     \
    switch (oar_dispatch_dtype_) {                                                                        \
      CASES(NAME, __VA_ARGS__)                                                                            \
      default:                                                                                            \
        throw ::oar::Exception(                                                                           \
            OAR_ERR_TYPE, ::oar::detail::concat("function ", NAME, " is not implemented for data type `", \
                                                oar_dispatch_dtype_, "`"));                               \
    }                                                                                                     \
  }()
#define OAR_PRIVATE_FLOAT_CASES(NAME, ...)                                  \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::FLOAT32, float, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::FLOAT64, double, __VA_ARGS__)
#define OAR_PRIVATE_HALF_CASES(NAME, ...)                                            \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::FLOAT16, ::oar::float16, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::BFLOAT16, ::oar::bfloat16, __VA_ARGS__)
#define OAR_PRIVATE_INT_CASES(NAME, ...)                                    \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::INT8, int8_t, __VA_ARGS__)   \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::UINT8, uint8_t, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::INT16, int16_t, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::INT32, int32_t, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::INT64, int64_t, __VA_ARGS__)
#define OAR_PRIVATE_COMPLEX_CASES(NAME, ...)                                             \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::COMPLEX64, ::oar::complex64, __VA_ARGS__) \
  OAR_PRIVATE_CASE_TYPE(NAME, ::oar::DataType::COMPLEX128, ::oar::complex128, __VA_ARGS__)
#define OAR_PRIVATE_FLOAT_HALF_CASES(NAME, ...) \
  OAR_PRIVATE_FLOAT_CASES(NAME, __VA_ARGS__) OAR_PRIVATE_HALF_CASES(NAME, __VA_ARGS__)
#define OAR_PRIVATE_FLOAT_INT_CASES(NAME, ...) \
  OAR_PRIVATE_FLOAT_CASES(NAME, __VA_ARGS__) OAR_PRIVATE_INT_CASES(NAME, __VA_ARGS__)
#define OAR_PRIVATE_FLOAT_COMPLEX_CASES(NAME, ...) \
  OAR_PRIVATE_FLOAT_CASES(NAME, __VA_ARGS__) OAR_PRIVATE_COMPLEX_CASES(NAME, __VA_ARGS__)
#define OAR_PRIVATE_FLOAT_HALF_INT_CASES(NAME, ...) \
  OAR_PRIVATE_FLOAT_HALF_CASES(NAME, __VA_ARGS__) OAR_PRIVATE_INT_CASES(NAME, __VA_ARGS__)

#define OAR_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_FLOAT_CASES, __VA_ARGS__)
#define OAR_DISPATCH_FLOATING_AND_HALF_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_FLOAT_HALF_CASES, __VA_ARGS__)
#define OAR_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_INT_CASES, __VA_ARGS__)
#define OAR_DISPATCH_COMPLEX_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_COMPLEX_CASES, __VA_ARGS__)
#define OAR_DISPATCH_FLOATING_AND_INTEGRAL_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_FLOAT_INT_CASES, __VA_ARGS__)
#define OAR_DISPATCH_FLOATING_AND_COMPLEX_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_FLOAT_COMPLEX_CASES, __VA_ARGS__)
#define OAR_DISPATCH_FLOATING_AND_HALF_AND_INTEGRAL_TYPES(TYPE, NAME, ...) \
  OAR_PRIVATE_DISPATCH(TYPE, NAME, OAR_PRIVATE_FLOAT_HALF_INT_CASES, __VA_ARGS__)

// ---- the library's entry point ----------------------------------------------------------------------
namespace oar::detail {
// Registers every op the library built (hidden: each library has its own).
__attribute__((visibility("hidden"))) inline OarError* register_all(const OarCustomOpServices* services,
                                                                    OarCustomOpRegistrar* registrar) {
  services_slot() = services;
  OarError* first_error = nullptr;
  auto cstrs = [](const std::vector<std::string>& v) {
    std::vector<const char*> out;
    for (const auto& s : v) out.push_back(s.c_str());
    return out;
  };
  for (const OpMeta& m : op_registry()) {
    OarError* e = guarded([&] {
      std::vector<const char*> ins = cstrs(m.inputs), outs = cstrs(m.outputs), attrs = cstrs(m.attrs),
                               ip_in = cstrs(m.inplace_in), ip_out = cstrs(m.inplace_out);
      std::vector<OarCustomKernel> kernels;
      for (const auto& k : m.kernels)
        kernels.push_back(
            {sizeof(OarCustomKernel), k.device.empty() ? nullptr : k.device.c_str(), k.fn, nullptr});
      OarCustomOpDef def{};
      def.struct_size = sizeof(def);
      def.name = m.name.c_str();
      def.num_inputs = static_cast<int32_t>(ins.size());
      def.inputs = ins.data();
      def.input_flags = m.input_flags.data();
      def.num_outputs = static_cast<int32_t>(outs.size());
      def.outputs = outs.data();
      def.num_attrs = static_cast<int32_t>(attrs.size());
      def.attrs = attrs.data();
      def.num_inplace = static_cast<int32_t>(ip_in.size());
      def.inplace_inputs = ip_in.data();
      def.inplace_outputs = ip_out.data();
      def.num_kernels = static_cast<int32_t>(kernels.size());
      def.kernels = kernels.data();
      def.infer_shape = m.infer_shape;
      def.infer_dtype = m.infer_dtype;
      def.output_flags = m.output_flags.data();
      check(services->register_op(registrar, &def));
    });
    if (e && !first_error)
      first_error = e;
    else if (e)
      services->error_free(e);
  }
  return first_error;
}
}  // namespace oar::detail

// Emitted once per library (inline + used: every source including this header may define it).
extern "C" __attribute__((visibility("default"), used)) inline OarError* oar_custom_op_init(
    const OarCustomOpServices* services, OarCustomOpRegistrar* registrar, uint32_t* abi_major,
    uint32_t* abi_minor) {
  *abi_major = OAR_CUSTOM_OP_ABI_MAJOR;
  *abi_minor = OAR_CUSTOM_OP_ABI_MINOR;
  if (!services || services->abi_major != OAR_CUSTOM_OP_ABI_MAJOR) return nullptr;  // the core refuses us
  return ::oar::detail::register_all(services, registrar);
}
