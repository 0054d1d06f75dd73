// Elementwise kernels: arithmetic with numpy broadcasting, and unary math. Each op is a small device
// functor run by the shared launcher (cuda_common.h: any strides, a contiguous fast path);
// float16/bfloat16 compute in float.
#include "cuda_common.h"

namespace oar_cuda {
namespace {

constexpr uint32_t kStrided = OAR_KERNEL_STRIDED_INPUTS;

// ---- binary arithmetic --------------------------------------------------------------------------------
template <typename T> struct AddOp {
  OAR_D T operator()(T a, T b) const { return from_acc<T>(to_acc(a) + to_acc(b)); }
};
template <typename T> struct SubtractOp {
  OAR_D T operator()(T a, T b) const { return from_acc<T>(to_acc(a) - to_acc(b)); }
};
template <typename T> struct MultiplyOp {
  OAR_D T operator()(T a, T b) const { return from_acc<T>(to_acc(a) * to_acc(b)); }
};
template <typename T> struct DivideOp {
  OAR_D T operator()(T a, T b) const { return from_acc<T>(to_acc(a) / to_acc(b)); }
};

template <template <typename> class Op>
void binary_all(sdk::KernelContext& c, const char* op) {
  dispatch_real(c.output(0).dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary<T, T, T>(c, op, Op<T>{});
  });
}
template <template <typename> class Op>
void binary_float(sdk::KernelContext& c, const char* op) {
  dispatch_float(c.output(0).dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary<T, T, T>(c, op, Op<T>{});
  });
}

// ---- unary ------------------------------------------------------------------------------------------
template <typename T> struct NegOp {
  OAR_D T operator()(T a) const { return from_acc<T>(-to_acc(a)); }
};
template <typename T> struct ReluOp {
  OAR_D T operator()(T a) const {
    acc_t<T> x = to_acc(a);
    return from_acc<T>(x > acc_t<T>(0) || x != x ? x : acc_t<T>(0));  // NaN propagates
  }
};
template <typename T> struct ExpOp {
  OAR_D T operator()(T a) const { return from_acc<T>(exp(to_acc(a))); }
};

template <template <typename> class Op>
void unary_float(sdk::KernelContext& c, const char* op) {
  dispatch_float(c.output(0).dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary<T, T>(c, op, Op<T>{});
  });
}
template <template <typename> class Op>
void unary_real(sdk::KernelContext& c, const char* op) {
  dispatch_real(c.output(0).dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unary<T, T>(c, op, Op<T>{});
  });
}

}  // namespace

void register_elementwise(Registry& r) {
  // Integer division, remainder and powers stay on the CPU kernels: their errors (a zero divisor, a
  // negative exponent) must be raised at the call, which a GPU kernel cannot do without a sync.
  r.add("add", gpu_real_dtypes(), [](sdk::KernelContext& c) { binary_all<AddOp>(c, "add"); }, kStrided);
  r.add("subtract", gpu_real_dtypes(), [](sdk::KernelContext& c) { binary_all<SubtractOp>(c, "subtract"); }, kStrided);
  r.add("multiply", gpu_real_dtypes(), [](sdk::KernelContext& c) { binary_all<MultiplyOp>(c, "multiply"); }, kStrided);
  r.add("divide", gpu_float_dtypes(), [](sdk::KernelContext& c) { binary_float<DivideOp>(c, "divide"); }, kStrided);
  r.add("neg", gpu_real_dtypes(), [](sdk::KernelContext& c) { unary_real<NegOp>(c, "neg"); }, kStrided);
  r.add("relu", gpu_real_dtypes(), [](sdk::KernelContext& c) { unary_real<ReluOp>(c, "relu"); }, kStrided);
  r.add("exp", gpu_float_dtypes(), [](sdk::KernelContext& c) { unary_float<ExpOp>(c, "exp"); }, kStrided);
}

}  // namespace oar_cuda
