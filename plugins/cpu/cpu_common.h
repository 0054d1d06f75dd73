// Internal to the CPU plugin: what its source files share. Never installed, never seen by the core.
#pragma once

#include <oar/sdk.h>
#include <oar/sdk/streams.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace oar_cpu {

using oar::sdk::KernelContext;
using oar::sdk::TensorView;

// Registers kernels; a kernel the core refuses is logged and skipped so one op never sinks the plugin.
class Registry {
 public:
  explicit Registry(OarRegistrar* r) : reg_(r) {}
  void add(const char* op, const std::vector<OarDType>& dtypes, oar::sdk::KernelBody body,
           uint32_t flags = 0);
  int count() const { return count_; }

 private:
  oar::sdk::KernelRegistrar reg_;
  int count_ = 0;
};

// ---- streams and collectives (plugin.cc, collectives.cc) ---------------------------------------------
// Kernels and copies run synchronously on the calling thread. Collectives run on their stream's
// communication worker (created by the stream's first collective), so they overlap compute; whatever is
// later queued on that stream waits for it (comm_drain).
struct CpuStream {
  int32_t priority = 0;
  std::mutex mu;                                        // guards creating `comm`
  std::unique_ptr<oar::sdk::WorkerStream> comm;         // null until the first collective on this stream
  std::atomic<oar::sdk::WorkerStream*> queue{nullptr};  // comm.get(), readable without the lock
};
// The stream's communication worker (created on first use).
oar::sdk::WorkerStream* comm_queue(OarStream stream);
// Waits for the collectives queued on `stream` (NULL: none) and throws the first one's failure.
void comm_drain(OarStream stream);
void fill_collective_table(OarCollectiveTable& t);

void register_binary_kernels(Registry& r);
void register_compare_kernels(Registry& r);
void register_unary_kernels(Registry& r);
void register_reduce_kernels(Registry& r);
void register_matmul_kernels(Registry& r);
void register_cast_kernels(Registry& r);
void register_misc_kernels(Registry& r);
void register_math_ext_kernels(Registry& r);  // the op families of framework/src/ops_*.cc
void register_manip_kernels(Registry& r);
void register_conv_kernels(Registry& r);
void register_nn_kernels(Registry& r);
void register_batch_norm_kernels(Registry& r);  // batch_norm.cc
void register_linalg_kernels(Registry& r);
void register_optim_kernels(Registry& r);  // fused optimizer updates
void matmul_shutdown();

// ---- attributes -----------------------------------------------------------------------------------
// An attribute the op schema gives a default for: the default when the core did not pass it, so a
// core that omits default-valued attributes still works. Any other error propagates.
inline int64_t attr_int_or(const KernelContext& ctx, const char* name, int64_t fallback) {
  int64_t v = 0;
  OarError* e = oar::sdk::kernel_api().attr_int(ctx.raw(), name, &v);
  if (e && oar::sdk::services().error_code(e) == OAR_ERR_NOT_FOUND) {
    oar::sdk::services().error_free(e);
    return fallback;
  }
  oar::sdk::throw_if_error(e);
  return v;
}
inline double attr_float_or(const KernelContext& ctx, const char* name, double fallback) {
  double v = 0;
  OarError* e = oar::sdk::kernel_api().attr_float(ctx.raw(), name, &v);
  if (e && oar::sdk::services().error_code(e) == OAR_ERR_NOT_FOUND) {
    oar::sdk::services().error_free(e);
    return fallback;
  }
  oar::sdk::throw_if_error(e);
  return v;
}
inline std::vector<int64_t> attr_ints_or(const KernelContext& ctx, const char* name,
                                         std::vector<int64_t> fallback) {
  const int64_t* p = nullptr;
  int64_t n = 0;
  OarError* e = oar::sdk::kernel_api().attr_ints(ctx.raw(), name, &p, &n);
  if (e && oar::sdk::services().error_code(e) == OAR_ERR_NOT_FOUND) {
    oar::sdk::services().error_free(e);
    return fallback;
  }
  oar::sdk::throw_if_error(e);
  return std::vector<int64_t>(p, p + n);
}

// Axes arrive normalised (docs/ops.md); a negative one is still accepted, numpy style.
inline int64_t normalize_axis(const char* op, int64_t axis, int32_t ndim) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  OAR_SDK_CHECK(a >= 0 && a < (ndim == 0 ? 1 : ndim), OAR_ERR_INVALID_ARGUMENT,
                op << ": axis " << axis << " is out of range for a rank-" << ndim << " tensor");
  return a;
}

// The SDK's strided loops hold at most kMaxDims dimensions.
inline void check_rank(const char* op, const TensorView& t) {
  OAR_SDK_CHECK(t.ndim() <= oar::sdk::kMaxDims, OAR_ERR_INVALID_ARGUMENT,
                op << ": rank " << t.ndim() << " exceeds the cpu plugin's limit of " << oar::sdk::kMaxDims);
}

// ---- dtype groups -------------------------------------------------------------------------------
inline std::vector<OarDType> all_dtypes() {
  std::vector<OarDType> v;
  for (int d = 0; d < OAR_DTYPE_COUNT; ++d) v.push_back(static_cast<OarDType>(d));
  return v;
}
// "all real" in docs/ops.md: bool, ints and floats (no complex).
inline std::vector<OarDType> real_dtypes() {
  return oar::sdk::join({{OAR_DTYPE_BOOL}, oar::sdk::int_dtypes(), oar::sdk::float_dtypes()});
}
inline std::vector<OarDType> int_float_dtypes() {
  return oar::sdk::join({oar::sdk::int_dtypes(), oar::sdk::float_dtypes()});
}
inline std::vector<OarDType> numeric_dtypes() {  // all but bool
  return oar::sdk::join({oar::sdk::int_dtypes(), oar::sdk::float_dtypes(), oar::sdk::complex_dtypes()});
}

// ---- type traits ----------------------------------------------------------------------------------
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_float_v = oar::sdk::is_floating_v<T>;
template <class T>
inline constexpr bool is_complex_v = oar::sdk::is_complex_v<T>;
template <class T>
inline constexpr bool is_real_v = !is_complex_v<T>;

// Integer arithmetic is done in unsigned types so overflow wraps (as numpy) instead of being UB.
template <class T>
using uwide_t = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

[[noreturn]] inline void unsupported_dtype(const char* op, int32_t dtype) {
  throw oar::sdk::Error(OAR_ERR_TYPE,
                        std::string(op) + ": no cpu kernel for dtype " + oar::sdk::dtype_name(dtype));
}

// Calls body(T{}) for the tensor dtype when Allowed<T> holds; a type error otherwise. Instantiates
// the body only for the allowed types.
template <template <class> class Allowed, class Body>
void dispatch(const char* op, int32_t dtype, Body&& body) {
  bool done = false;
  oar::sdk::visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Allowed<T>::value) {
      body(tag);
      done = true;
    }
  });
  if (!done) unsupported_dtype(op, dtype);
}

template <class T>
struct AnyType : std::true_type {};
template <class T>
struct NotBool : std::bool_constant<!std::is_same_v<T, bool>> {};
template <class T>
struct RealType : std::bool_constant<is_real_v<T>> {};
template <class T>
struct RealNotBool : std::bool_constant<is_real_v<T> && !std::is_same_v<T, bool>> {};
template <class T>
struct FloatType : std::bool_constant<is_float_v<T>> {};
template <class T>
struct FloatOrComplexType : std::bool_constant<is_float_v<T> || is_complex_v<T>> {};
template <class T>
struct IntOrFloat : std::bool_constant<is_int_v<T> || is_float_v<T>> {};

// ---- value conversion (used by cast, fill, arange) ----------------------------------------------
// numpy's conversion rules: to bool is "!= 0", complex to real keeps the real part, 16-bit floats go
// through float.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_complex_v<From>)
      return v.real() != 0 || v.imag() != 0;
    else
      return static_cast<float>(v) != 0;
  } else if constexpr (is_complex_v<To>) {
    using V = typename To::value_type;
    if constexpr (is_complex_v<From>)
      return To(static_cast<V>(v.real()), static_cast<V>(v.imag()));
    else
      return To(static_cast<V>(oar::sdk::compute_t<From>(v)), V(0));
  } else if constexpr (is_complex_v<From>) {
    return convert<To>(v.real());
  } else if constexpr (std::is_same_v<To, oar::sdk::float16> || std::is_same_v<To, oar::sdk::bfloat16>) {
    return To(static_cast<float>(oar::sdk::compute_t<From>(v)));
  } else {
    return static_cast<To>(oar::sdk::compute_t<From>(v));
  }
}

// A double attribute as dtype T; integers saturate instead of hitting UB on out-of-range values.
template <class T>
inline T from_double(double v) {
  if constexpr (is_int_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v >= 9.2233720368547758e18) return static_cast<T>(std::numeric_limits<int64_t>::max());
    if (v < -9.2233720368547758e18) return static_cast<T>(std::numeric_limits<int64_t>::min());
    return static_cast<T>(static_cast<int64_t>(v));  // narrow ints wrap, like numpy's astype
  } else {
    return convert<T>(v);
  }
}

// A copy of a tensor descriptor with another dtype of the same element size, so pure data movement
// (copy, where, concat) can move 2-byte floats as int16 without converting through float.
struct Retyped {
  OarTensorDesc desc{};
  Retyped(const TensorView& t, int32_t dtype) {
    size_t n = t.desc()->struct_size < sizeof(desc) ? t.desc()->struct_size : sizeof(desc);
    std::memcpy(&desc, t.desc(), n);
    desc.struct_size = sizeof(desc);
    desc.dtype = dtype;
  }
  TensorView view() const { return TensorView(&desc); }
};

// The integer-like dtype used to move elements of `dtype` bit for bit.
inline int32_t bits_dtype(int32_t dtype) {
  switch (oar::sdk::dtype_size(dtype)) {
    case 1:
      return OAR_DTYPE_UINT8;
    case 2:
      return OAR_DTYPE_INT16;
    case 4:
      return OAR_DTYPE_INT32;
    case 8:
      return OAR_DTYPE_INT64;
    default:
      return OAR_DTYPE_COMPLEX128;
  }
}

// Calls fn(T{}) with the integer-like type of the same size as `dtype` (see bits_dtype).
template <class Fn>
void visit_bits(int32_t dtype, Fn&& fn) {
  switch (oar::sdk::dtype_size(dtype)) {
    case 1:
      fn(uint8_t{});
      return;
    case 2:
      fn(int16_t{});
      return;
    case 4:
      fn(int32_t{});
      return;
    case 8:
      fn(int64_t{});
      return;
    case 16:
      fn(oar::sdk::complex128{});
      return;
    default:
      unsupported_dtype("copy", dtype);
  }
}

// Contiguous row-major strides for dims.
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t e = 1;
  for (size_t i = dims.size(); i-- > 0;) s[i] = e, e *= dims[i];
  return s;
}

inline int64_t product(const int64_t* d, int64_t b, int64_t e) {
  int64_t p = 1;
  for (int64_t i = b; i < e; ++i) p *= d[i];
  return p;
}

}  // namespace oar_cpu
