// Internal: the kernel templates shared by the elementwise sources (binary.cc, compare.cc, unary.cc).
// An op is a struct with `template <class T> struct allowed` (which dtypes) and
// `template <class T> static void run(out, x[, y])` (the loop for one dtype).
#pragma once

#include <atomic>

#include "cpu_common.h"
#include "lowp.h"

namespace oar_cpu {

template <class Op>
void binary_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  check_rank(Op::name, out);
  OAR_SDK_CHECK(x.dtype() == y.dtype(), OAR_ERR_TYPE,
                Op::name << ": x is " << oar::sdk::dtype_name(x.dtype()) << " but y is "
                         << oar::sdk::dtype_name(y.dtype()));
  dispatch<Op::template allowed>(Op::name, x.dtype(),
                                 [&](auto tag) { Op::template run<decltype(tag)>(out, x, y); });
}

template <class Op>
void unary_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank(Op::name, x);
  dispatch<Op::template allowed>(Op::name, x.dtype(),
                                 [&](auto tag) { Op::template run<decltype(tag)>(out, x); });
}

// Set from inside parallel loops (where nothing may throw) and checked after them.
struct ErrorFlag {
  std::atomic<bool> hit{false};
  void set() { hit.store(true, std::memory_order_relaxed); }
  bool get() const { return hit.load(std::memory_order_relaxed); }
};

constexpr uint32_t kStrided = OAR_KERNEL_STRIDED_INPUTS;

// A float-only unary op as a kernel struct (unary.cc, math_ext.cc): out = EXPR(v) in the compute type C.
#define OAR_CPU_FLOAT_OP(NAME, STR, EXPR)                        \
  struct NAME {                                                  \
    static constexpr const char* name = STR;                     \
    template <class T>                                           \
    using allowed = FloatType<T>;                                \
    template <class T>                                           \
    static void run(const TensorView& o, const TensorView& x) {  \
      using C = oar::sdk::compute_t<T>;                          \
      cpu_unary_loop<T, T>(o, x, [](C v) -> C { return EXPR; }); \
    }                                                            \
  };

}  // namespace oar_cpu
