// Binary elementwise kernels with numpy broadcasting and any strides: arithmetic, comparisons, logical
// and bitwise ops, gcd/lcm. Each op is a small functor on the compute type (float for float16/bfloat16)
// run by the shared launcher (cuda_common.h); the semantics are plugins/cpu's (binary.cc, compare.cc,
// math_ext.cc). register_elementwise also registers the other pointwise files (pointwise.h).
#include "pointwise.h"

namespace oar_cuda {
namespace {

// ---- arithmetic --------------------------------------------------------------------------------------
// Integers wrap through unsigned arithmetic (numpy; the CPU plugin does the same).
struct AddOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uwide_t<C>(a) + uwide_t<C>(b));
    else
      return a + b;
  }
};
struct SubtractOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uwide_t<C>(a) - uwide_t<C>(b));
    else
      return a - b;
  }
};
struct MultiplyOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uwide_t<C>(a) * uwide_t<C>(b));
    else
      return a * b;
  }
};
struct DivideOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return a / b;
  }
};

// maximum/minimum: a NaN in either operand wins (a's first).
template <bool kMax>
struct MaxMinOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if constexpr (!is_int_v<C>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return kMax ? (a > b ? a : b) : (a < b ? a : b);
  }
};
// fmax/fmin ignore a NaN operand (NaN only when both are); the CPU's expressions exactly.
struct FmaxOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return (b != b || a > b) ? a : (a != a ? b : (a < b ? b : a));
  }
};
struct FminOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return (b != b || a < b) ? a : (a != a ? b : (a > b ? b : a));
  }
};
struct PowOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return m_pow(a, b);
  }
};
struct Atan2Op {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return m_atan2(a, b);
  }
};
// |x| with the sign of y (the sign bit: y = -0.0 gives -|x|); integers flip when the signs differ,
// wrapping at the minimum as numpy.
struct CopysignOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if constexpr (std::is_unsigned_v<C>)
      return a;
    else if constexpr (is_int_v<C>)
      return (b < 0) != (a < 0) ? C(uwide_t<C>(0) - uwide_t<C>(a)) : a;
    else
      return m_copysign(a, b);
  }
};
// numpy's heaviside: 0 for x < 0, y for x == 0, 1 for x > 0, NaN for NaN.
struct HeavisideOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return a != a ? a : (a < C(0) ? C(0) : (a == C(0) ? b : C(1)));
  }
};
// Python's floor division and modulus on floats (numpy's npy_divmod), the CPU's py_floordiv / py_mod.
// Integers stay on the CPU: a zero divisor must raise at the call, which a GPU kernel cannot.
struct FloorDivideOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    if (b == C(0)) return a / b;
    const C mod = m_fmod(a, b);
    C div = (a - mod) / b;
    if (mod != C(0) && ((b < C(0)) != (mod < C(0)))) div -= C(1);
    if (div == C(0)) return m_copysign(C(0), a / b);
    C fl = m_floor(div);
    if (div - fl > C(0.5)) fl += C(1);
    return fl;
  }
};
struct RemainderOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    C mod = m_fmod(a, b);
    if (b == C(0)) return mod;
    if (mod != C(0)) {
      if ((b < C(0)) != (mod < C(0))) mod += b;
    } else {
      mod = m_copysign(C(0), b);
    }
    return mod;
  }
};

// ---- bitwise (ints and bool), gcd/lcm (ints) ---------------------------------------------------------
struct BitAndOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return C(a & b);
  }
};
struct BitOrOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return C(a | b);
  }
};
struct BitXorOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return C(a ^ b);
  }
};

// |v| as uint64 (the int64 minimum included), as std::gcd/std::lcm on int64 see it.
template <typename C>
OAR_D uint64_t abs_u64(C v) {
  const int64_t w = static_cast<int64_t>(v);
  return w < 0 ? uint64_t(0) - static_cast<uint64_t>(w) : static_cast<uint64_t>(w);
}
OAR_D uint64_t gcd_u64(uint64_t u, uint64_t v) {
  while (v != 0) {
    const uint64_t t = u % v;
    u = v;
    v = t;
  }
  return u;
}
// numpy: non-negative results (wrapping back to the dtype), gcd(0, 0) = 0, lcm(0, y) = 0.
struct GcdOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    return static_cast<C>(static_cast<int64_t>(gcd_u64(abs_u64(a), abs_u64(b))));
  }
};
struct LcmOp {
  template <typename C>
  OAR_D C operator()(C a, C b) const {
    const uint64_t u = abs_u64(a), v = abs_u64(b);
    if (u == 0 || v == 0) return C(0);
    return static_cast<C>(static_cast<int64_t>(u / gcd_u64(u, v) * v));
  }
};

// ---- comparisons and logical ops (bool output) -------------------------------------------------------
#define OAR_PW_CMP(NAME, EXPR)              \
  struct NAME {                             \
    template <typename C>                   \
    OAR_D bool operator()(C a, C b) const { \
      return EXPR;                          \
    }                                       \
  };
OAR_PW_CMP(EqualOp, a == b)
OAR_PW_CMP(NotEqualOp, a != b)
OAR_PW_CMP(LessOp, a < b)
OAR_PW_CMP(LessEqualOp, a <= b)
OAR_PW_CMP(GreaterOp, a > b)
OAR_PW_CMP(GreaterEqualOp, a >= b)
OAR_PW_CMP(LogicalAndOp, (a != C(0)) && (b != C(0)))
OAR_PW_CMP(LogicalOrOp, (a != C(0)) || (b != C(0)))
OAR_PW_CMP(LogicalXorOp, (a != C(0)) != (b != C(0)))
#undef OAR_PW_CMP

// ---- dispatch ----------------------------------------------------------------------------------------
template <typename F>
void dispatch_int_bool(int32_t dtype, const char* op, F&& f) {
  if (dtype == OAR_DTYPE_BOOL) return f(Tag<bool>{});
  return dispatch_int(dtype, op, f);
}

// The dispatch dtype is x's (the output's for arithmetic; bool outputs dispatch on x).
template <typename Op>
void same_float(sdk::KernelContext& c, const char* name) {
  dispatch_float(c.input(0).dtype(), name,
                 [&](auto tag) { run_same2<typename decltype(tag)::type>(c, name, Op{}); });
}
template <typename Op>
void same_real(sdk::KernelContext& c, const char* name) {
  dispatch_real(c.input(0).dtype(), name,
                [&](auto tag) { run_same2<typename decltype(tag)::type>(c, name, Op{}); });
}
template <typename Op>
void same_int(sdk::KernelContext& c, const char* name) {
  dispatch_int(c.input(0).dtype(), name,
               [&](auto tag) { run_same2<typename decltype(tag)::type>(c, name, Op{}); });
}
template <typename Op>
void same_int_bool(sdk::KernelContext& c, const char* name) {
  dispatch_int_bool(c.input(0).dtype(), name,
                    [&](auto tag) { run_same2<typename decltype(tag)::type>(c, name, Op{}); });
}
template <typename Op>
void to_bool_all(sdk::KernelContext& c, const char* name) {
  dispatch_all(c.input(0).dtype(), name,
               [&](auto tag) { run_bool2<typename decltype(tag)::type>(c, name, Op{}); });
}

std::vector<OarDType> int_bool_dtypes() { return sdk::join({{OAR_DTYPE_BOOL}, sdk::int_dtypes()}); }

}  // namespace

void register_elementwise(Registry& r) {
  const auto floats = gpu_float_dtypes(), reals = gpu_real_dtypes(), all = gpu_all_dtypes();
  const auto ints = sdk::int_dtypes(), ints_bool = int_bool_dtypes();
  // Integer divide, floor_divide, remainder and pow stay on the CPU kernels: their errors (a zero divisor,
  // a negative exponent) must be raised at the call, which a GPU kernel cannot do without a sync.
#define OAR_PW_ADD(NAME, DTYPES, BODY) \
  r.add(                               \
      NAME, DTYPES, [](sdk::KernelContext& c) { BODY(c, NAME); }, kStrided)
  OAR_PW_ADD("add", reals, same_real<AddOp>);
  OAR_PW_ADD("subtract", reals, same_real<SubtractOp>);
  OAR_PW_ADD("multiply", reals, same_real<MultiplyOp>);
  OAR_PW_ADD("divide", floats, same_float<DivideOp>);
  OAR_PW_ADD("maximum", reals, same_real<MaxMinOp<true>>);
  OAR_PW_ADD("minimum", reals, same_real<MaxMinOp<false>>);
  OAR_PW_ADD("fmax", reals, same_real<FmaxOp>);
  OAR_PW_ADD("fmin", reals, same_real<FminOp>);
  OAR_PW_ADD("pow", floats, same_float<PowOp>);
  OAR_PW_ADD("atan2", floats, same_float<Atan2Op>);
  OAR_PW_ADD("copysign", reals, same_real<CopysignOp>);
  OAR_PW_ADD("heaviside", floats, same_float<HeavisideOp>);
  OAR_PW_ADD("floor_divide", floats, same_float<FloorDivideOp>);
  OAR_PW_ADD("remainder", floats, same_float<RemainderOp>);
  OAR_PW_ADD("bitwise_and", ints_bool, same_int_bool<BitAndOp>);
  OAR_PW_ADD("bitwise_or", ints_bool, same_int_bool<BitOrOp>);
  OAR_PW_ADD("bitwise_xor", ints_bool, same_int_bool<BitXorOp>);
  OAR_PW_ADD("gcd", ints, same_int<GcdOp>);
  OAR_PW_ADD("lcm", ints, same_int<LcmOp>);
  OAR_PW_ADD("equal", all, to_bool_all<EqualOp>);
  OAR_PW_ADD("not_equal", all, to_bool_all<NotEqualOp>);
  OAR_PW_ADD("less_than", all, to_bool_all<LessOp>);
  OAR_PW_ADD("less_equal", all, to_bool_all<LessEqualOp>);
  OAR_PW_ADD("greater_than", all, to_bool_all<GreaterOp>);
  OAR_PW_ADD("greater_equal", all, to_bool_all<GreaterEqualOp>);
  OAR_PW_ADD("logical_and", all, to_bool_all<LogicalAndOp>);
  OAR_PW_ADD("logical_or", all, to_bool_all<LogicalOrOp>);
  OAR_PW_ADD("logical_xor", all, to_bool_all<LogicalXorOp>);
#undef OAR_PW_ADD
  register_unary(r);
  register_activation(r);
  register_creation(r);
  register_cast(r);
}

}  // namespace oar_cuda
