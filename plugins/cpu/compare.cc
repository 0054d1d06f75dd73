// Comparison and logical binary ops; all produce bool.
#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::binary_loop;
using oar::sdk::compute_t;

#define OAR_CPU_CMP_OP(NAME, STR, ALLOWED, EXPR)                                     \
  struct NAME {                                                                      \
    static constexpr const char* name = STR;                                         \
    template <class T>                                                               \
    using allowed = ALLOWED<T>;                                                      \
    template <class T>                                                               \
    static void run(const TensorView& o, const TensorView& x, const TensorView& y) { \
      using C = compute_t<T>;                                                        \
      binary_loop<bool, T, T>(o, x, y, [](C a, C b) -> bool { return EXPR; });       \
    }                                                                                \
  };

OAR_CPU_CMP_OP(Equal, "equal", AnyType, a == b)
OAR_CPU_CMP_OP(NotEqual, "not_equal", AnyType, a != b)
OAR_CPU_CMP_OP(LessThan, "less_than", RealType, a < b)
OAR_CPU_CMP_OP(LessEqual, "less_equal", RealType, a <= b)
OAR_CPU_CMP_OP(GreaterThan, "greater_than", RealType, a > b)
OAR_CPU_CMP_OP(GreaterEqual, "greater_equal", RealType, a >= b)
OAR_CPU_CMP_OP(LogicalAnd, "logical_and", RealType, (a != C(0)) && (b != C(0)))
OAR_CPU_CMP_OP(LogicalOr, "logical_or", RealType, (a != C(0)) || (b != C(0)))
OAR_CPU_CMP_OP(LogicalXor, "logical_xor", RealType, (a != C(0)) != (b != C(0)))
#undef OAR_CPU_CMP_OP

}  // namespace

void register_compare_kernels(Registry& r) {
  r.add("equal", all_dtypes(), &binary_kernel<Equal>, kStrided);
  r.add("not_equal", all_dtypes(), &binary_kernel<NotEqual>, kStrided);
  r.add("less_than", real_dtypes(), &binary_kernel<LessThan>, kStrided);
  r.add("less_equal", real_dtypes(), &binary_kernel<LessEqual>, kStrided);
  r.add("greater_than", real_dtypes(), &binary_kernel<GreaterThan>, kStrided);
  r.add("greater_equal", real_dtypes(), &binary_kernel<GreaterEqual>, kStrided);
  r.add("logical_and", real_dtypes(), &binary_kernel<LogicalAnd>, kStrided);
  r.add("logical_or", real_dtypes(), &binary_kernel<LogicalOr>, kStrided);
  r.add("logical_xor", real_dtypes(), &binary_kernel<LogicalXor>, kStrided);
}

}  // namespace oar_cpu
