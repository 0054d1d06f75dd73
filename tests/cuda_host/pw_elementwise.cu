// The functors of plugins/cuda/elementwise.cu run on the host (harness.h).
#include "harness.h"

// After harness.h, which makes the functors host-callable.
#include "elementwise.cu"

namespace oar_cuda {
void register_unary(Registry&) {}
void register_activation(Registry&) {}
void register_creation(Registry&) {}
void register_cast(Registry&) {}
}  // namespace oar_cuda
using namespace oar_cuda;
int main(int argc, char** argv) {
  int dtype, arity;
  h::read(argc, argv, dtype, arity);
  std::string op = argv[1];
#define SAME(NAME, OP)                                                    \
  if (op == NAME) {                                                       \
    dispatch_all(dtype, NAME, [&](auto tag) {                             \
      using T = typename decltype(tag)::type;                             \
      if constexpr (!std::is_same_v<T, bool>) h::out2<T>(Same2<T, OP>{}); \
    });                                                                   \
    return 0;                                                             \
  }
#define BIT(NAME, OP)                                                  \
  if (op == NAME) {                                                    \
    dispatch_all(dtype, NAME, [&](auto tag) {                          \
      using T = typename decltype(tag)::type;                          \
      if constexpr (std::is_integral_v<T>) h::out2<T>(Same2<T, OP>{}); \
    });                                                                \
    return 0;                                                          \
  }
#define BOOL(NAME, OP)                        \
  if (op == NAME) {                           \
    dispatch_all(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type; \
      h::out2<T>(Bool2<T, OP>{});             \
    });                                       \
    return 0;                                 \
  }
#define SAMEF(NAME, OP)                         \
  if (op == NAME) {                             \
    dispatch_float(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type;   \
      h::out2<T>(Same2<T, OP>{});               \
    });                                         \
    return 0;                                   \
  }
#define SAMEI(NAME, OP)                       \
  if (op == NAME) {                           \
    dispatch_int(dtype, NAME, [&](auto tag) { \
      using T = typename decltype(tag)::type; \
      h::out2<T>(Same2<T, OP>{});             \
    });                                       \
    return 0;                                 \
  }
  SAME("add", AddOp)
  SAME("subtract", SubtractOp)
  SAME("multiply", MultiplyOp) SAMEF("divide", DivideOp) SAME("maximum", MaxMinOp<true>)
      SAME("minimum", MaxMinOp<false>) SAME("fmax", FmaxOp) SAME("fmin", FminOp) SAMEF("pow", PowOp)
          SAMEF("atan2", Atan2Op) SAME("copysign", CopysignOp) SAMEF("heaviside", HeavisideOp)
              SAMEF("floor_divide", FloorDivideOp) SAMEF("remainder", RemainderOp)
                  BIT("bitwise_and", BitAndOp) BIT("bitwise_or", BitOrOp) BIT("bitwise_xor", BitXorOp)
                      SAMEI("gcd", GcdOp) SAMEI("lcm", LcmOp) BOOL("equal", EqualOp)
                          BOOL("not_equal", NotEqualOp) BOOL("less_than", LessOp)
                              BOOL("less_equal", LessEqualOp) BOOL("greater_than", GreaterOp)
                                  BOOL("greater_equal", GreaterEqualOp) BOOL("logical_and", LogicalAndOp)
                                      BOOL("logical_or", LogicalOrOp) BOOL("logical_xor", LogicalXorOp)
                                          fprintf(stderr, "unknown op %s\n", op.c_str());
  return 1;
}
