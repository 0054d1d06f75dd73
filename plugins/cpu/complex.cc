// Complex numbers: real, imag, conj, angle, complex, as_complex, as_real, and the complex kernels of
// neg, abs, sign, exp, log, sqrt and pow (their real kernels are in unary.cc and binary.cc).
#include <cstring>

#include "elementwise.h"

namespace oar_cpu {
namespace {

template <class T>
struct ComplexType : std::bool_constant<is_complex_v<T>> {};
template <class T>
struct FloatOrComplex : std::bool_constant<is_float_v<T> || is_complex_v<T>> {};
template <class T>
struct Float32Or64 : std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>> {};

// The plain product, as numpy's (no C99 Annex G inf/nan recovery), so results match binary.cc.
template <class C>
C cmul(C a, C b) {
  return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

#define OAR_CPU_COMPLEX_OP(NAME, STR, OUT, EXPR)                           \
  struct NAME {                                                            \
    static constexpr const char* name = STR;                               \
    template <class T>                                                     \
    using allowed = ComplexType<T>;                                        \
    template <class T>                                                     \
    static void run(const TensorView& o, const TensorView& x) {            \
      using R = typename T::value_type;                                    \
      oar::sdk::unary_loop<OUT, T>(o, x, [](T v) -> OUT { return EXPR; }); \
    }                                                                      \
  };
OAR_CPU_COMPLEX_OP(Real, "real", R, v.real())
OAR_CPU_COMPLEX_OP(Imag, "imag", R, v.imag())
OAR_CPU_COMPLEX_OP(CAbs, "abs", R, std::hypot(v.real(), v.imag()))
OAR_CPU_COMPLEX_OP(CNeg, "neg", T, T(-v.real(), -v.imag()))
OAR_CPU_COMPLEX_OP(CExp, "exp", T, std::exp(v))
OAR_CPU_COMPLEX_OP(CLog, "log", T, std::log(v))
OAR_CPU_COMPLEX_OP(CSqrt, "sqrt", T, std::sqrt(v))
#undef OAR_CPU_COMPLEX_OP

// sign(z) = z / |z|, 0 at 0 (numpy 2; Paddle's sgn).
struct CSign {
  static constexpr const char* name = "sign";
  template <class T>
  using allowed = ComplexType<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using R = typename T::value_type;
    oar::sdk::unary_loop<T, T>(o, x, [](T z) {
      const R m = std::hypot(z.real(), z.imag());
      return m == R(0) ? T(0, 0) : T(z.real() / m, z.imag() / m);
    });
  }
};

// conj: identity on real dtypes (as Paddle).
struct Conj {
  static constexpr const char* name = "conj";
  template <class T>
  using allowed = NotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    if constexpr (is_complex_v<T>)
      oar::sdk::unary_loop<T, T>(o, x, [](T v) { return T(v.real(), -v.imag()); });
    else
      oar::sdk::unary_loop<T, T>(o, x, [](T v) { return v; });
  }
};

// angle: atan2(imag, real); a real x is atan2(0, x): 0 or pi (numpy's np.angle).
struct Angle {
  static constexpr const char* name = "angle";
  template <class T>
  using allowed = FloatOrComplex<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      oar::sdk::unary_loop<R, T>(o, x, [](T v) { return std::atan2(v.imag(), v.real()); });
    } else {
      using C = oar::sdk::compute_t<T>;
      cpu_unary_loop<T, T>(o, x, [](C v) -> C { return std::atan2(C(0), v); });
    }
  }
};

// complex(real, imag), broadcast.
struct Complex {
  static constexpr const char* name = "complex";
  template <class T>
  using allowed = Float32Or64<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& re, const TensorView& im) {
    using C = std::complex<T>;
    oar::sdk::binary_loop<C, T, T>(o, re, im, [](T a, T b) { return C(a, b); });
  }
};

// pow on complex: an integral real exponent (|n| <= 1024) by square-and-multiply, as numpy does for
// small integer powers (exact for z**2), std::pow otherwise; 0 ** 0 is 1.
struct CPow {
  static constexpr const char* name = "pow";
  template <class T>
  using allowed = ComplexType<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using R = typename T::value_type;
    oar::sdk::binary_loop<T, T, T>(o, x, y, [](T a, T b) -> T {
      const R e = b.real();
      if (b.imag() == R(0) && e == std::trunc(e) && std::fabs(e) <= R(1024)) {
        uint64_t n = static_cast<uint64_t>(std::fabs(e));
        T r(1, 0), base = a;
        while (n) {
          if (n & 1) r = cmul(r, base);
          base = cmul(base, base);
          n >>= 1;
        }
        return e < 0 ? T(1, 0) / r : r;
      }
      if (a == T(0, 0)) return b == T(0, 0) ? T(1, 0) : T(0, 0);
      return std::pow(a, b);
    });
  }
};

// as_complex / as_real: std::complex<R> is laid out as R[2], so both are a copy of contiguous memory.
void reinterpret_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const size_t bytes = static_cast<size_t>(x.numel()) * oar::sdk::dtype_size(x.dtype());
  if (bytes) std::memcpy(out.raw(), x.raw(), bytes);
}

}  // namespace

void register_complex_kernels(Registry& r) {
  const auto cx = oar::sdk::complex_dtypes();
  const std::vector<OarDType> f32_64 = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  r.add("real", cx, &unary_kernel<Real>, kStrided);
  r.add("imag", cx, &unary_kernel<Imag>, kStrided);
  r.add("conj", numeric_dtypes(), &unary_kernel<Conj>, kStrided);
  r.add("angle", oar::sdk::join({oar::sdk::float_dtypes(), cx}), &unary_kernel<Angle>, kStrided);
  r.add("complex", f32_64, &binary_kernel<Complex>, kStrided);
  r.add("as_complex", f32_64, &reinterpret_kernel);
  r.add("as_real", cx, &reinterpret_kernel);
  r.add("abs", cx, &unary_kernel<CAbs>, kStrided);
  r.add("neg", cx, &unary_kernel<CNeg>, kStrided);
  r.add("sign", cx, &unary_kernel<CSign>, kStrided);
  r.add("exp", cx, &unary_kernel<CExp>, kStrided);
  r.add("log", cx, &unary_kernel<CLog>, kStrided);
  r.add("sqrt", cx, &unary_kernel<CSqrt>, kStrided);
  r.add("pow", cx, &binary_kernel<CPow>, kStrided);
}

}  // namespace oar_cpu
