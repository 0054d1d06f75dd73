// What the pointwise kernel files (elementwise.cu, unary.cu, activation.cu, creation.cu) share: device
// math overloaded on float/double, wrapping integer arithmetic, the CPU plugin's conversion rules, and
// adaptors that turn a functor on the compute type into one on device element types for the
// elementwise launcher (cuda_common.h). Semantics follow plugins/cpu (the oracle): NaN handling, integer
// wrap, float -> int conversion.
#pragma once

#include <type_traits>

#include "cuda_common.h"

#if !defined(OAR_GPU_DEVICE_CODE)
#error "pointwise.h is for the .cu files of the gpu plugin"
#endif

namespace oar_cuda {

constexpr uint32_t kStrided = OAR_KERNEL_STRIDED_INPUTS;

// ---- type traits -------------------------------------------------------------------------------------
template <typename T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool is_float_v =
    std::is_floating_point_v<T> || std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>;
template <typename T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>;

// complex64 / complex128 elements (real, imaginary), for the data-movement and creation kernels only.
template <typename V>
struct gpu_complex {
  V re, im;
};
// Integer arithmetic in unsigned types so overflow wraps (as numpy and the CPU plugin) instead of UB.
template <typename T>
using uwide_t = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

// ---- device math: one name for float and double ------------------------------------------------------
// Explicit so a float never silently computes in double (and a double never in float).
#define OAR_PW_MATH1(NAME)                               \
  OAR_D float m_##NAME(float x) { return ::NAME##f(x); } \
  OAR_D double m_##NAME(double x) { return ::NAME(x); }
OAR_PW_MATH1(exp)
OAR_PW_MATH1(log)
OAR_PW_MATH1(log2)
OAR_PW_MATH1(log10)
OAR_PW_MATH1(log1p)
OAR_PW_MATH1(expm1)
OAR_PW_MATH1(sqrt)
OAR_PW_MATH1(sin)
OAR_PW_MATH1(cos)
OAR_PW_MATH1(tan)
OAR_PW_MATH1(asin)
OAR_PW_MATH1(acos)
OAR_PW_MATH1(atan)
OAR_PW_MATH1(sinh)
OAR_PW_MATH1(cosh)
OAR_PW_MATH1(tanh)
OAR_PW_MATH1(asinh)
OAR_PW_MATH1(acosh)
OAR_PW_MATH1(atanh)
OAR_PW_MATH1(floor)
OAR_PW_MATH1(ceil)
OAR_PW_MATH1(round)  // half away from zero, like std::round
OAR_PW_MATH1(trunc)
OAR_PW_MATH1(erf)
OAR_PW_MATH1(lgamma)
OAR_PW_MATH1(fabs)
#undef OAR_PW_MATH1
#define OAR_PW_MATH2(NAME)                                           \
  OAR_D float m_##NAME(float x, float y) { return ::NAME##f(x, y); } \
  OAR_D double m_##NAME(double x, double y) { return ::NAME(x, y); }
OAR_PW_MATH2(atan2)
OAR_PW_MATH2(pow)
OAR_PW_MATH2(fmod)
OAR_PW_MATH2(copysign)
#undef OAR_PW_MATH2

// std::max / std::min exactly: (a < b) ? b : a, so a NaN in `a` is kept and one in `b` is dropped (the
// CPU's activations use them; fmaxf would treat NaN differently).
template <typename C>
OAR_D C std_max(C a, C b) {
  return (a < b) ? b : a;
}
template <typename C>
OAR_D C std_min(C a, C b) {
  return (b < a) ? b : a;
}

// ---- conversions (plugins/cpu/cpu_common.h convert / from_double) ------------------------------------
// float -> integer as the CPU plugin's static_cast does on x86-64 (cvttss2si/cvttsd2si): types up to 32
// bits go through int32, where NaN and out-of-range values give INT32_MIN, then keep the low bits; int64
// gives INT64_MIN for those. (A GPU's own conversion saturates instead, which would differ.)
template <typename To, typename F>
OAR_D To float_to_int(F v) {
  if constexpr (sizeof(To) == 8) {
    if (!(v >= F(-9223372036854775808.0) && v < F(9223372036854775808.0))) return To(INT64_MIN);
    return To(static_cast<long long>(v));
  } else {
    if (!(v >= F(-2147483648.0) && v < F(2147483648.0))) return To(int32_t(INT32_MIN));
    return To(static_cast<int32_t>(v));  // narrower types wrap (keep the low bits)
  }
}

// One element from dtype From to dtype To (device types), as the CPU's cast: to bool is "float(v) != 0";
// to float16/bfloat16 goes through float (so a double is rounded twice, as on the CPU); float to int as
// float_to_int; int to int wraps.
template <typename To, typename From>
OAR_D To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, gpu_complex<float>> || std::is_same_v<To, gpu_complex<double>>) {
    using V = decltype(To::re);
    return To{static_cast<V>(to_acc<From>(v)), V(0)};
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(to_acc<From>(v)) != 0.0f;
  } else if constexpr (is_16bit_float_v<To>) {
    return from_acc<To>(static_cast<float>(to_acc<From>(v)));
  } else if constexpr (is_int_v<To> && is_float_v<From>) {
    return float_to_int<To>(to_acc<From>(v));
  } else {
    return static_cast<To>(to_acc<From>(v));
  }
}
// A double attribute as dtype T (plugins/cpu's from_double): integers saturate to the int64 range (NaN is
// 0) and then wrap to T; to bool is "float(v) != 0"; 16-bit floats go through float.
template <typename T>
OAR_HD T value_from_double(double v) {
  if constexpr (is_int_v<T>) {
    if (v != v) return T(0);
    if (v >= 9.2233720368547758e18) return static_cast<T>(INT64_MAX);
    if (v < -9.2233720368547758e18) return static_cast<T>(INT64_MIN);
    return static_cast<T>(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (is_16bit_float_v<T>) {
    return from_acc<T>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, gpu_complex<float>> || std::is_same_v<T, gpu_complex<double>>) {
    using V = decltype(T::re);
    return T{static_cast<V>(v), V(0)};
  } else {
    return static_cast<T>(v);
  }
}

// Every dtype (the real ones, bool and complex) as its device element type.
template <typename F>
void dispatch_any(int32_t dtype, const char* op, F&& f) {
  if (dtype == OAR_DTYPE_COMPLEX64) return f(Tag<gpu_complex<float>>{});
  if (dtype == OAR_DTYPE_COMPLEX128) return f(Tag<gpu_complex<double>>{});
  return dispatch_all(dtype, op, f);
}
inline std::vector<OarDType> every_dtype() { return sdk::join({gpu_all_dtypes(), sdk::complex_dtypes()}); }

// ---- functor adaptors for the launcher ---------------------------------------------------------------
// Op has a templated `C operator()(C...)` on the compute type (acc_t<T>); these apply it to element types.
template <typename T, typename Op>
struct Same1 {
  Op op;
  OAR_D T operator()(T a) const { return from_acc<T>(op(to_acc<T>(a))); }
};
template <typename T, typename Op>
struct Same2 {
  Op op;
  OAR_D T operator()(T a, T b) const { return from_acc<T>(op(to_acc<T>(a), to_acc<T>(b))); }
};
template <typename T, typename Op>
struct Bool1 {
  Op op;
  OAR_D bool operator()(T a) const { return op(to_acc<T>(a)); }
};
template <typename T, typename Op>
struct Bool2 {
  Op op;
  OAR_D bool operator()(T a, T b) const { return op(to_acc<T>(a), to_acc<T>(b)); }
};

// The launcher over a KernelContext with an adaptor: output 0 from inputs 0 (and 1).
template <typename T, typename Op>
void run_same1(sdk::KernelContext& c, const char* name, Op op) {
  unary<T, T>(c, name, Same1<T, Op>{op});
}
template <typename T, typename Op>
void run_same2(sdk::KernelContext& c, const char* name, Op op) {
  binary<T, T, T>(c, name, Same2<T, Op>{op});
}
template <typename T, typename Op>
void run_bool1(sdk::KernelContext& c, const char* name, Op op) {
  unary<bool, T>(c, name, Bool1<T, Op>{op});
}
template <typename T, typename Op>
void run_bool2(sdk::KernelContext& c, const char* name, Op op) {
  binary<bool, T, T>(c, name, Bool2<T, Op>{op});
}

// ---- index-based generation (creation ops: the output is contiguous) ---------------------------------
template <typename T, typename Gen>
__global__ void generate_kernel(int64_t n, T* out, Gen gen) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = gen(i);
}
// out[i] = gen(i) over the (contiguous) output, enqueued on the kernel's stream.
template <typename T, typename Gen>
void generate(sdk::KernelContext& c, const char* op, Gen gen) {
  const sdk::TensorView out = c.output(0);
  const int64_t n = out.numel();
  if (n == 0) return;
  generate_kernel<T, Gen>
      <<<grid_for(n, c.device()), kThreads, 0, stream_of(c)>>>(n, static_cast<T*>(out.raw()), gen);
  check_launch(op);
}

// Registration of each file's ops: register_elementwise (called by plugin.cc) calls the others, so the
// pointwise family adds no line to the shared files but CMakeLists.txt.
void register_unary(Registry& r);
void register_activation(Registry& r);
void register_creation(Registry& r);
void register_cast(Registry& r);

}  // namespace oar_cuda
