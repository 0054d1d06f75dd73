// The functors of plugins/cuda/unary.cu run on the host (harness.h).
#include "harness.h"

// After harness.h, which makes the functors host-callable.
#include "unary.cu"

using namespace oar_cuda;
int main(int argc, char** argv) {
  int dtype, arity;
  h::read(argc, argv, dtype, arity);
  std::string op = argv[1];
#define F(NAME, OP)                             \
  if (op == NAME) {                             \
    dispatch_float(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type;   \
      h::out1<T>(Same1<T, OP>{});               \
    });                                         \
    return 0;                                   \
  }
#define R(NAME, OP)                            \
  if (op == NAME) {                            \
    dispatch_real(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type;  \
      h::out1<T>(Same1<T, OP>{});              \
    });                                        \
    return 0;                                  \
  }
#define B(NAME, OP)                             \
  if (op == NAME) {                             \
    dispatch_float(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type;   \
      h::out1<T>(Bool1<T, OP>{});               \
    });                                         \
    return 0;                                   \
  }
  F("exp", ExpOp)
  F("log", LogOp)
  F("log2", Log2Op) F("log10", Log10Op) F("log1p", Log1pOp) F("expm1", Expm1Op) F("sqrt", SqrtOp)
      F("rsqrt", RsqrtOp) F("sin", SinOp) F("cos", CosOp) F("tan", TanOp) F("asin", AsinOp) F("acos", AcosOp)
          F("atan", AtanOp) F("sinh", SinhOp) F("cosh", CoshOp) F("tanh", TanhOp) F("asinh", AsinhOp)
              F("acosh", AcoshOp) F("atanh", AtanhOp) F("sigmoid", SigmoidOp) F("floor", FloorOp)
                  F("ceil", CeilOp) F("round", RoundOp) F("reciprocal", ReciprocalOp) F("erf", ErfOp)
                      F("erfinv", ErfinvOp) F("lgamma", LgammaOp) F("digamma", DigammaOp) R("neg", NegOp)
                          R("abs", AbsOp) R("square", SquareOp) R("sign", SignOp) R("relu", ReluOp)
                              R("trunc", TruncOp) B("isnan", IsNanOp) B("isinf", IsInfOp)
                                  B("isfinite", IsFiniteOp) if (op == "polygamma") {
    dispatch_float(dtype, "p", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::out1<T>(Same1<T, PolygammaOp>{PolygammaOp{int64_t(h::attr("n", 0))}});
    });
    return 0;
  }
  if (op == "logical_not") {
    dispatch_all(dtype, "p", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::out1<T>(Bool1<T, LogicalNotOp>{});
    });
    return 0;
  }
  if (op == "bitwise_not") {
    dispatch_all(dtype, "p", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) h::out1<T>(Same1<T, BitwiseNotOp>{});
    });
    return 0;
  }
  fprintf(stderr, "unknown op %s\n", op.c_str());
  return 1;
}
