// Unary elementwise kernels (any strides): math on floats, integer-aware neg/abs/square/sign/relu/trunc,
// the bool-valued classifiers and logical/bitwise not. Semantics are plugins/cpu's (unary.cc,
// math_ext.cc): float16/bfloat16 compute in float; digamma, polygamma and erfinv compute in double for
// every float dtype, as there.
#include <oar/sdk/special.h>

#include "pointwise.h"

namespace oar_cuda {
namespace {

// ---- float ops on the compute type -------------------------------------------------------------------
#define OAR_PW_FLOAT_OP(NAME, EXPR) \
  struct NAME {                     \
    template <typename C>           \
    OAR_D C operator()(C v) const { \
      return EXPR;                  \
    }                               \
  };
OAR_PW_FLOAT_OP(ExpOp, m_exp(v))
OAR_PW_FLOAT_OP(LogOp, m_log(v))
OAR_PW_FLOAT_OP(Log2Op, m_log2(v))
OAR_PW_FLOAT_OP(Log10Op, m_log10(v))
OAR_PW_FLOAT_OP(Log1pOp, m_log1p(v))
OAR_PW_FLOAT_OP(Expm1Op, m_expm1(v))
OAR_PW_FLOAT_OP(SqrtOp, m_sqrt(v))
OAR_PW_FLOAT_OP(RsqrtOp, C(1) / m_sqrt(v))  // as the CPU (rsqrtf is less accurate)
OAR_PW_FLOAT_OP(SinOp, m_sin(v))
OAR_PW_FLOAT_OP(CosOp, m_cos(v))
OAR_PW_FLOAT_OP(TanOp, m_tan(v))
OAR_PW_FLOAT_OP(AsinOp, m_asin(v))
OAR_PW_FLOAT_OP(AcosOp, m_acos(v))
OAR_PW_FLOAT_OP(AtanOp, m_atan(v))
OAR_PW_FLOAT_OP(SinhOp, m_sinh(v))
OAR_PW_FLOAT_OP(CoshOp, m_cosh(v))
OAR_PW_FLOAT_OP(TanhOp, m_tanh(v))
OAR_PW_FLOAT_OP(AsinhOp, m_asinh(v))
OAR_PW_FLOAT_OP(AcoshOp, m_acosh(v))
OAR_PW_FLOAT_OP(AtanhOp, m_atanh(v))
OAR_PW_FLOAT_OP(SigmoidOp, C(1) / (C(1) + m_exp(-v)))
OAR_PW_FLOAT_OP(FloorOp, m_floor(v))
OAR_PW_FLOAT_OP(CeilOp, m_ceil(v))
OAR_PW_FLOAT_OP(RoundOp, m_round(v))  // half away from zero, as Paddle
OAR_PW_FLOAT_OP(ReciprocalOp, C(1) / v)
OAR_PW_FLOAT_OP(ErfOp, m_erf(v))
OAR_PW_FLOAT_OP(LgammaOp, m_lgamma(v))
OAR_PW_FLOAT_OP(ErfinvOp, C(sdk::erfinv(double(v))))  // the CPU's algorithm, in double (oar/sdk/special.h)
#undef OAR_PW_FLOAT_OP

// ---- digamma / polygamma (plugins/cpu/math_ext.cc, in double) ----------------------------------------
// digamma is the SDK's (oar/sdk/special.h), shared with the CPU plugin.
OAR_D double digamma_d(double x) { return sdk::digamma(x); }

// polygamma(n, x), n >= 1: the recurrence up to x >= 20 + n, then the asymptotic series with B2..B14.
// A very negative non-integer x would need more than 2^24 recurrence steps: NaN instead of running for
// minutes on the GPU (the CPU loops; its result there is meaningless anyway).
OAR_D double polygamma_d(int64_t n, double x) {
  if (n == 0) return digamma_d(x);
  if (x != x || (x <= 0 && ::floor(x) == x)) return NAN;  // poles
  if (x == INFINITY) return 0.0;
  const double dn = static_cast<double>(n);
  const double bound = 20 + dn;
  if (bound - x > 16777216.0) return NAN;
  const double nfact = ::tgamma(dn + 1);
  double near = 0;
  for (; x < bound; x += 1) near += ::pow(x, -(dn + 1));
  const double kB[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6};
  double far = ::tgamma(dn) * ::pow(x, -dn) + nfact * 0.5 * ::pow(x, -(dn + 1));
  for (int k = 1; k <= 7; ++k)
    far += kB[k - 1] * ::exp(::lgamma(2 * k + dn) - ::lgamma(2.0 * k + 1)) * ::pow(x, -(2 * k + dn));
  return (n % 2 == 1 ? 1.0 : -1.0) * (nfact * near + far);
}

struct DigammaOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    return C(digamma_d(double(v)));
  }
};
struct PolygammaOp {
  int64_t n;
  template <typename C>
  OAR_D C operator()(C v) const {
    return C(polygamma_d(n, double(v)));
  }
};

// ---- integer-aware ops (ints and floats) --------------------------------------------------------
// Integers wrap through unsigned arithmetic: neg(MIN) == abs(MIN) == MIN, as numpy.
struct NegOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (is_int_v<C>)
      return C(uwide_t<C>(0) - uwide_t<C>(v));
    else
      return -v;
  }
};
struct AbsOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (std::is_unsigned_v<C>)
      return v;
    else if constexpr (is_int_v<C>)
      return v < 0 ? C(uwide_t<C>(0) - uwide_t<C>(v)) : v;
    else
      return m_fabs(v);
  }
};
struct SquareOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (is_int_v<C>)
      return C(uwide_t<C>(v) * uwide_t<C>(v));
    else
      return v * v;
  }
};
struct SignOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (std::is_unsigned_v<C>) {
      return C(v > C(0));
    } else {
      if constexpr (!is_int_v<C>) {
        if (v != v) return v;  // sign(NaN) is NaN
      }
      return C((v > C(0)) - (v < C(0)));
    }
  }
};
// Keeps NaN (like maximum(x, 0)) and -0.0, as the CPU.
struct ReluOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (std::is_unsigned_v<C>)
      return v;
    else
      return v < C(0) ? C(0) : v;
  }
};
struct TruncOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (is_int_v<C>)
      return v;
    else
      return m_trunc(v);
  }
};
struct BitwiseNotOp {
  template <typename C>
  OAR_D C operator()(C v) const {
    if constexpr (std::is_same_v<C, bool>)
      return !v;
    else
      return C(~v);
  }
};

// ---- bool outputs ------------------------------------------------------------------------------------
struct IsNanOp {
  template <typename C>
  OAR_D bool operator()(C v) const {
    return v != v;
  }
};
struct IsInfOp {
  template <typename C>
  OAR_D bool operator()(C v) const {
    return ::isinf(v);
  }
};
struct IsFiniteOp {
  template <typename C>
  OAR_D bool operator()(C v) const {
    return ::isfinite(v);
  }
};
struct LogicalNotOp {
  template <typename C>
  OAR_D bool operator()(C v) const {
    return v == C(0);
  }
};

// ---- dispatch ----------------------------------------------------------------------------------------
template <typename Op>
void same_float(sdk::KernelContext& c, const char* name, Op op = Op{}) {
  dispatch_float(c.input(0).dtype(), name,
                 [&](auto tag) { run_same1<typename decltype(tag)::type>(c, name, op); });
}
template <typename Op>
void same_real(sdk::KernelContext& c, const char* name) {
  dispatch_real(c.input(0).dtype(), name,
                [&](auto tag) { run_same1<typename decltype(tag)::type>(c, name, Op{}); });
}
template <typename Op>
void bool_float(sdk::KernelContext& c, const char* name) {
  dispatch_float(c.input(0).dtype(), name,
                 [&](auto tag) { run_bool1<typename decltype(tag)::type>(c, name, Op{}); });
}

void logical_not_kernel(sdk::KernelContext& c) {
  dispatch_all(c.input(0).dtype(), "logical_not",
               [&](auto tag) { run_bool1<typename decltype(tag)::type>(c, "logical_not", LogicalNotOp{}); });
}
void bitwise_not_kernel(sdk::KernelContext& c) {
  const int32_t d = c.input(0).dtype();
  if (d == OAR_DTYPE_BOOL) return run_same1<bool>(c, "bitwise_not", BitwiseNotOp{});
  dispatch_int(d, "bitwise_not",
               [&](auto tag) { run_same1<typename decltype(tag)::type>(c, "bitwise_not", BitwiseNotOp{}); });
}
void polygamma_kernel(sdk::KernelContext& c) {
  same_float<PolygammaOp>(c, "polygamma", PolygammaOp{c.attr_int("n")});
}

}  // namespace

void register_unary(Registry& r) {
  const auto floats = gpu_float_dtypes(), reals = gpu_real_dtypes();
#define OAR_PW_ADD(NAME, DTYPES, BODY) \
  r.add(                               \
      NAME, DTYPES, [](sdk::KernelContext& c) { BODY(c, NAME); }, kStrided)
  OAR_PW_ADD("exp", floats, same_float<ExpOp>);
  OAR_PW_ADD("log", floats, same_float<LogOp>);
  OAR_PW_ADD("log2", floats, same_float<Log2Op>);
  OAR_PW_ADD("log10", floats, same_float<Log10Op>);
  OAR_PW_ADD("log1p", floats, same_float<Log1pOp>);
  OAR_PW_ADD("expm1", floats, same_float<Expm1Op>);
  OAR_PW_ADD("sqrt", floats, same_float<SqrtOp>);
  OAR_PW_ADD("rsqrt", floats, same_float<RsqrtOp>);
  OAR_PW_ADD("sin", floats, same_float<SinOp>);
  OAR_PW_ADD("cos", floats, same_float<CosOp>);
  OAR_PW_ADD("tan", floats, same_float<TanOp>);
  OAR_PW_ADD("asin", floats, same_float<AsinOp>);
  OAR_PW_ADD("acos", floats, same_float<AcosOp>);
  OAR_PW_ADD("atan", floats, same_float<AtanOp>);
  OAR_PW_ADD("sinh", floats, same_float<SinhOp>);
  OAR_PW_ADD("cosh", floats, same_float<CoshOp>);
  OAR_PW_ADD("tanh", floats, same_float<TanhOp>);
  OAR_PW_ADD("asinh", floats, same_float<AsinhOp>);
  OAR_PW_ADD("acosh", floats, same_float<AcoshOp>);
  OAR_PW_ADD("atanh", floats, same_float<AtanhOp>);
  OAR_PW_ADD("sigmoid", floats, same_float<SigmoidOp>);
  OAR_PW_ADD("floor", floats, same_float<FloorOp>);
  OAR_PW_ADD("ceil", floats, same_float<CeilOp>);
  OAR_PW_ADD("round", floats, same_float<RoundOp>);
  OAR_PW_ADD("reciprocal", floats, same_float<ReciprocalOp>);
  OAR_PW_ADD("erf", floats, same_float<ErfOp>);
  OAR_PW_ADD("erfinv", floats, same_float<ErfinvOp>);
  OAR_PW_ADD("lgamma", floats, same_float<LgammaOp>);
  OAR_PW_ADD("digamma", floats, same_float<DigammaOp>);
  OAR_PW_ADD("neg", reals, same_real<NegOp>);
  OAR_PW_ADD("abs", reals, same_real<AbsOp>);
  OAR_PW_ADD("square", reals, same_real<SquareOp>);
  OAR_PW_ADD("sign", reals, same_real<SignOp>);
  OAR_PW_ADD("relu", reals, same_real<ReluOp>);
  OAR_PW_ADD("trunc", reals, same_real<TruncOp>);
  OAR_PW_ADD("isnan", floats, bool_float<IsNanOp>);
  OAR_PW_ADD("isinf", floats, bool_float<IsInfOp>);
  OAR_PW_ADD("isfinite", floats, bool_float<IsFiniteOp>);
#undef OAR_PW_ADD
  r.add("polygamma", floats, &polygamma_kernel, kStrided);
  r.add("logical_not", gpu_all_dtypes(), &logical_not_kernel, kStrided);
  r.add("bitwise_not", sdk::join({{OAR_DTYPE_BOOL}, sdk::int_dtypes()}), &bitwise_not_kernel, kStrided);
}

}  // namespace oar_cuda
