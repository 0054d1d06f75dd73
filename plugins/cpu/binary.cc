// Arithmetic binary ops: add, subtract, multiply, divide, floor_divide, remainder, maximum, minimum,
// pow. Inputs keep their own shapes and strides; binary_loop broadcasts them to the output.
#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;

// numpy's multiply for complex (no C99 Annex G inf/nan recovery, which std::complex pays for).
template <class C>
inline C cmul(C a, C b) {
  if constexpr (is_complex_v<C>)
    return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
  else
    return a * b;
}

#define OAR_CPU_WRAP_OP(NAME, STR, EXPR)                                             \
  struct NAME {                                                                      \
    static constexpr const char* name = STR;                                         \
    template <class T>                                                               \
    using allowed = NotBool<T>;                                                      \
    template <class T>                                                               \
    static void run(const TensorView& o, const TensorView& x, const TensorView& y) { \
      using C = compute_t<T>;                                                        \
      if constexpr (is_int_v<T>) {                                                   \
        using U = uwide_t<T>;                                                        \
        cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) {                             \
          U ua = U(a), ub = U(b);                                                    \
          return T(EXPR(ua, ub));                                                    \
        });                                                                          \
      } else {                                                                       \
        cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return EXPR(a, b); });      \
      }                                                                              \
    }                                                                                \
  };

#define OAR_CPU_PLUS(a, b) ((a) + (b))
#define OAR_CPU_MINUS(a, b) ((a) - (b))
#define OAR_CPU_TIMES(a, b) cmul(a, b)
OAR_CPU_WRAP_OP(Add, "add", OAR_CPU_PLUS)
OAR_CPU_WRAP_OP(Subtract, "subtract", OAR_CPU_MINUS)
OAR_CPU_WRAP_OP(Multiply, "multiply", OAR_CPU_TIMES)
#undef OAR_CPU_WRAP_OP

[[noreturn]] void zero_divisor(const char* op) {
  throw oar::sdk::Error(OAR_ERR_INVALID_ARGUMENT,
                        std::string(op) + ": integer division by zero (y contains 0)");
}

// Integer division toward zero; MIN / -1 wraps to MIN (as numpy) instead of trapping.
template <class T>
inline T int_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(uwide_t<T>(0) - uwide_t<T>(a));
  }
  return T(a / b);
}

struct Divide {
  static constexpr const char* name = "divide";
  template <class T>
  using allowed = NotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>) {
      ErrorFlag zero;
      cpu_binary_loop<T, T, T>(o, x, y, [&](C a, C b) -> T {
        if (b == 0) {
          zero.set();
          return T(0);
        }
        return int_div<T>(a, b);
      });
      if (zero.get()) zero_divisor(name);
    } else {
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return a / b; });
    }
  }
};

// numpy's npy_divmod: floor division and the matching modulus, with its sign conventions.
template <class C>
inline C py_floordiv(C a, C b) {
  if (b == 0) return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
  if (div == 0) return std::copysign(C(0), a / b);
  C fl = std::floor(div);
  if (div - fl > C(0.5)) fl += C(1);
  return fl;
}
template <class C>
inline C py_mod(C a, C b) {
  C mod = std::fmod(a, b);
  if (b == 0) return mod;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(C(0), b);
  }
  return mod;
}

struct FloorDivide {
  static constexpr const char* name = "floor_divide";
  template <class T>
  using allowed = IntOrFloat<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>) {
      ErrorFlag zero;
      cpu_binary_loop<T, T, T>(o, x, y, [&](C a, C b) -> T {
        if (b == 0) {
          zero.set();
          return T(0);
        }
        T q = int_div<T>(a, b);
        if constexpr (std::is_signed_v<T>) {
          if (b != -1 && a % b != 0 && ((a < 0) != (b < 0))) --q;
        }
        return q;
      });
      if (zero.get()) zero_divisor(name);
    } else {
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return py_floordiv(a, b); });
    }
  }
};

struct Remainder {
  static constexpr const char* name = "remainder";
  template <class T>
  using allowed = IntOrFloat<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>) {
      ErrorFlag zero;
      cpu_binary_loop<T, T, T>(o, x, y, [&](C a, C b) -> T {
        if (b == 0) {
          zero.set();
          return T(0);
        }
        if constexpr (std::is_signed_v<T>) {
          if (b == -1) return T(0);  // MIN % -1 traps in C
          T r = T(a % b);
          return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
        } else {
          return T(a % b);
        }
      });
      if (zero.get()) zero_divisor(name);
    } else {
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return py_mod(a, b); });
    }
  }
};

template <bool kMax>
struct MaxMin {
  static constexpr const char* name = kMax ? "maximum" : "minimum";
  template <class T>
  using allowed = RealNotBool<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) {
      if constexpr (is_float_v<T>) {  // NaN in either operand wins
        if (a != a) return a;
        if (b != b) return b;
      }
      return kMax ? (a > b ? a : b) : (a < b ? a : b);
    });
  }
};

struct Pow {
  static constexpr const char* name = "pow";
  template <class T>
  using allowed = IntOrFloat<T>;
  template <class T>
  static void run(const TensorView& o, const TensorView& x, const TensorView& y) {
    using C = compute_t<T>;
    if constexpr (is_int_v<T>) {
      ErrorFlag negative;
      cpu_binary_loop<T, T, T>(o, x, y, [&](C a, C b) -> T {
        if constexpr (std::is_signed_v<T>) {
          if (b < 0) {
            negative.set();
            return T(0);
          }
        }
        using U = uwide_t<T>;  // square-and-multiply, wrapping like numpy
        U base = U(a), r = 1;
        uint64_t e = static_cast<uint64_t>(b);
        while (e) {
          if (e & 1) r *= base;
          base *= base;
          e >>= 1;
        }
        return T(r);
      });
      OAR_SDK_CHECK(!negative.get(), OAR_ERR_INVALID_ARGUMENT,
                    "pow: integers to negative integer powers are not allowed (y contains a negative value)");
    } else {
      cpu_binary_loop<T, T, T>(o, x, y, [](C a, C b) { return std::pow(a, b); });
    }
  }
};

}  // namespace

void register_binary_kernels(Registry& r) {
  using namespace oar::sdk;
  r.add("add", numeric_dtypes(), &binary_kernel<Add>, kStrided);
  r.add("subtract", numeric_dtypes(), &binary_kernel<Subtract>, kStrided);
  r.add("multiply", numeric_dtypes(), &binary_kernel<Multiply>, kStrided);
  r.add("divide", numeric_dtypes(), &binary_kernel<Divide>, kStrided);
  r.add("floor_divide", int_float_dtypes(), &binary_kernel<FloorDivide>, kStrided);
  r.add("remainder", int_float_dtypes(), &binary_kernel<Remainder>, kStrided);
  r.add("maximum", int_float_dtypes(), &binary_kernel<MaxMin<true>>, kStrided);
  r.add("minimum", int_float_dtypes(), &binary_kernel<MaxMin<false>>, kStrided);
  r.add("pow", int_float_dtypes(), &binary_kernel<Pow>, kStrided);
}

}  // namespace oar_cpu
