// Elementwise unary ops. 16-bit floats are computed in float (compute_t) and rounded once.
#include "elementwise.h"
#include "vec_loop.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;

// The transcendental ops through vec_loop.h: float32 and 16-bit contiguous inputs run its vector loops,
// strided ones the scalar loop (the same bits, a NaN's sign aside); float64 stays on libm. EXPR is written
// for V = float, double and the vector types.
#define OAR_CPU_VEC_OP(NAME, STR, EXPR)                                                    \
  struct NAME##Fn {                                                                        \
    template <class V>                                                                     \
    OAR_VEC_INLINE V operator()(V v) const {                                               \
      return EXPR;                                                                         \
    }                                                                                      \
  };                                                                                       \
  struct NAME {                                                                            \
    static constexpr const char* name = STR;                                               \
    template <class T>                                                                     \
    using allowed = FloatType<T>;                                                          \
    template <class T>                                                                     \
    static void run(const TensorView& o, const TensorView& x) {                            \
      if constexpr (std::is_same_v<T, float> || is_lowp_v<T>) {                            \
        if (x.is_contiguous()) {                                                           \
          vec_unary<T>(VecKernels<NAME##Fn>::map1(), o.data<T>(), x.data<T>(), o.numel()); \
          return;                                                                          \
        }                                                                                  \
      }                                                                                    \
      using C = compute_t<T>;                                                              \
      cpu_unary_loop<T, T>(o, x, [](C v) -> C { return NAME##Fn{}(v); });                  \
    }                                                                                      \
  };
OAR_CPU_VEC_OP(Exp, "exp", vexp(v))
OAR_CPU_VEC_OP(Tanh, "tanh", vtanh(v))
OAR_CPU_VEC_OP(Sigmoid, "sigmoid", sigmoid_of<float>(v))
OAR_CPU_VEC_OP(Erf, "erf", verf(v))
#undef OAR_CPU_VEC_OP
OAR_CPU_FLOAT_OP(Log, "log", std::log(v))
OAR_CPU_FLOAT_OP(Log1p, "log1p", std::log1p(v))
OAR_CPU_FLOAT_OP(Expm1, "expm1", std::expm1(v))
OAR_CPU_FLOAT_OP(Sqrt, "sqrt", std::sqrt(v))
OAR_CPU_FLOAT_OP(Rsqrt, "rsqrt", C(1) / std::sqrt(v))
OAR_CPU_FLOAT_OP(Sin, "sin", std::sin(v))
OAR_CPU_FLOAT_OP(Cos, "cos", std::cos(v))
OAR_CPU_FLOAT_OP(Floor, "floor", std::floor(v))
OAR_CPU_FLOAT_OP(Ceil, "ceil", std::ceil(v))
OAR_CPU_FLOAT_OP(Round, "round", std::round(v))  // std::round: half away from zero
OAR_CPU_FLOAT_OP(Reciprocal, "reciprocal", C(1) / v)

// Ints and floats (not bool): ints wrap through unsigned arithmetic (neg/abs of MIN is MIN, as numpy).
struct Neg {
  static constexpr const char* name = "neg";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>)
      cpu_unary_loop<T, T>(o, x, [](C v) { return T(uwide_t<T>(0) - uwide_t<T>(v)); });
    else
      cpu_unary_loop<T, T>(o, x, [](C v) { return -v; });
  }
};

struct Abs {
  static constexpr const char* name = "abs";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    if constexpr (std::is_unsigned_v<T>)
      cpu_unary_loop<T, T>(o, x, [](C v) { return v; });
    else if constexpr (is_int_v<T>)
      cpu_unary_loop<T, T>(o, x, [](C v) { return v < 0 ? T(uwide_t<T>(0) - uwide_t<T>(v)) : v; });
    else
      cpu_unary_loop<T, T>(o, x, [](C v) { return std::fabs(v); });
  }
};

struct Square {
  static constexpr const char* name = "square";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>)
      cpu_unary_loop<T, T>(o, x, [](C v) { return T(uwide_t<T>(v) * uwide_t<T>(v)); });
    else
      cpu_unary_loop<T, T>(o, x, [](C v) { return v * v; });
  }
};

struct Sign {
  static constexpr const char* name = "sign";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    cpu_unary_loop<T, T>(o, x, [](C v) -> C {
      if constexpr (is_float_v<T>) {
        if (v != v) return v;  // sign(NaN) is NaN
      }
      return C((v > C(0)) - (v < C(0)));
    });
  }
};

struct Relu {
  static constexpr const char* name = "relu";
  template <class T>
  using allowed = IntOrFloat<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    cpu_unary_loop<T, T>(o, x, [](C v) { return v < C(0) ? C(0) : v; });  // keeps NaN, like maximum(x, 0)
  }
};

struct LogicalNot {
  static constexpr const char* name = "logical_not";
  template <class T>
  using allowed = RealType<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x) {
    using C = compute_t<T>;
    cpu_unary_loop<bool, T>(o, x, [](C v) -> bool { return v == C(0); });
  }
};

#define OAR_CPU_CLASSIFY_OP(NAME, STR, EXPR)                           \
  struct NAME {                                                        \
    static constexpr const char* name = STR;                           \
    template <class T>                                                 \
    using allowed = FloatType<T>;                                      \
    template <class T>                                                 \
    static void run(const TensorView& o, const TensorView& x) {        \
      using C = compute_t<T>;                                          \
      cpu_unary_loop<bool, T>(o, x, [](C v) -> bool { return EXPR; }); \
    }                                                                  \
  };
OAR_CPU_CLASSIFY_OP(IsNan, "isnan", std::isnan(v))
OAR_CPU_CLASSIFY_OP(IsInf, "isinf", std::isinf(v))
OAR_CPU_CLASSIFY_OP(IsFinite, "isfinite", std::isfinite(v))
#undef OAR_CPU_CLASSIFY_OP

}  // namespace

void register_unary_kernels(Registry& r) {
  using oar::sdk::float_dtypes;
  const auto floats = float_dtypes();
  const auto real_nb = int_float_dtypes();
  r.add("neg", real_nb, &unary_kernel<Neg>, kStrided);
  r.add("abs", real_nb, &unary_kernel<Abs>, kStrided);
  r.add("square", real_nb, &unary_kernel<Square>, kStrided);
  r.add("sign", real_nb, &unary_kernel<Sign>, kStrided);
  r.add("relu", real_nb, &unary_kernel<Relu>, kStrided);
  r.add("exp", floats, &unary_kernel<Exp>, kStrided);
  r.add("log", floats, &unary_kernel<Log>, kStrided);
  r.add("log1p", floats, &unary_kernel<Log1p>, kStrided);
  r.add("expm1", floats, &unary_kernel<Expm1>, kStrided);
  r.add("sqrt", floats, &unary_kernel<Sqrt>, kStrided);
  r.add("rsqrt", floats, &unary_kernel<Rsqrt>, kStrided);
  r.add("sin", floats, &unary_kernel<Sin>, kStrided);
  r.add("cos", floats, &unary_kernel<Cos>, kStrided);
  r.add("tanh", floats, &unary_kernel<Tanh>, kStrided);
  r.add("sigmoid", floats, &unary_kernel<Sigmoid>, kStrided);
  r.add("floor", floats, &unary_kernel<Floor>, kStrided);
  r.add("ceil", floats, &unary_kernel<Ceil>, kStrided);
  r.add("round", floats, &unary_kernel<Round>, kStrided);
  r.add("reciprocal", floats, &unary_kernel<Reciprocal>, kStrided);
  r.add("erf", floats, &unary_kernel<Erf>, kStrided);
  r.add("logical_not", real_dtypes(), &unary_kernel<LogicalNot>, kStrided);
  r.add("isnan", floats, &unary_kernel<IsNan>, kStrided);
  r.add("isinf", floats, &unary_kernel<IsInf>, kStrided);
  r.add("isfinite", floats, &unary_kernel<IsFinite>, kStrided);
}

}  // namespace oar_cpu
