// Activations and their gradients (plugins/cpu/nn.cc, formulas in docs/ops_nn.md) and clip
// (plugins/cpu/math_ext.cc), any strides. Attributes are read on the host into the functor, in the
// compute type (float for float16/bfloat16, as on the CPU). A gradient op takes (x, grad) and gives
// grad * f'(x).
#include <limits>

#include "pointwise.h"

namespace oar_cuda {
namespace {

// Each activation: f(x) and its derivative df(x) on the compute type C, with the CPU's expressions
// (std::max/std::min where it uses them, so NaN and the kinks come out the same).
template <typename C>
struct Gelu {
  bool approx;
  static Gelu make(const sdk::KernelContext& c) { return {c.attr_int_or("approximate", 0) != 0}; }
  OAR_D C f(C x) const {
    const C kSqrt2OverPi = C(0.7978845608028654), kInvSqrt2 = C(0.7071067811865476), kA = C(0.044715);
    if (approx) return C(0.5) * x * (C(1) + m_tanh(kSqrt2OverPi * (x + kA * x * x * x)));
    return C(0.5) * x * (C(1) + m_erf(x * kInvSqrt2));
  }
  OAR_D C df(C x) const {
    const C kSqrt2OverPi = C(0.7978845608028654), kInvSqrt2 = C(0.7071067811865476), kA = C(0.044715);
    const C kInvSqrt2Pi = C(0.3989422804014327);
    if (approx) {
      const C u = kSqrt2OverPi * (x + kA * x * x * x), t = m_tanh(u);
      const C du = kSqrt2OverPi * (C(1) + C(3) * kA * x * x);
      return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du;
    }
    return C(0.5) * (C(1) + m_erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * m_exp(C(-0.5) * x * x);
  }
};
template <typename C>
struct Silu {
  static Silu make(const sdk::KernelContext&) { return {}; }
  OAR_D C f(C x) const { return x / (C(1) + m_exp(-x)); }
  OAR_D C df(C x) const {
    const C s = C(1) / (C(1) + m_exp(-x));
    return s * (C(1) + x * (C(1) - s));
  }
};
template <typename C>
struct LeakyRelu {
  C a;
  static LeakyRelu make(const sdk::KernelContext& c) { return {C(c.attr_float_or("negative_slope", 0.01))}; }
  OAR_D C f(C x) const { return x > C(0) ? x : x * a; }
  OAR_D C df(C x) const { return x > C(0) ? C(1) : a; }
};
template <typename C>
struct Elu {
  C a;
  static Elu make(const sdk::KernelContext& c) { return {C(c.attr_float_or("alpha", 1.0))}; }
  OAR_D C f(C x) const { return x > C(0) ? x : a * m_expm1(x); }
  OAR_D C df(C x) const { return x > C(0) ? C(1) : a * m_exp(x); }
};
// Paddle: x where beta * x > threshold, else log(1 + exp(beta x)) / beta, computed stably.
template <typename C>
struct Softplus {
  C beta, threshold;
  static Softplus make(const sdk::KernelContext& c) {
    return {C(c.attr_float_or("beta", 1.0)), C(c.attr_float_or("threshold", 20.0))};
  }
  OAR_D C f(C x) const {
    const C z = beta * x;
    if (z > threshold) return x;
    return (std_max(z, C(0)) + m_log1p(m_exp(-m_fabs(z)))) / beta;
  }
  OAR_D C df(C x) const {
    const C z = beta * x;
    if (z > threshold) return C(1);
    return C(1) / (C(1) + m_exp(-z));
  }
};
template <typename C>
struct Hardswish {
  static Hardswish make(const sdk::KernelContext&) { return {}; }
  OAR_D C f(C x) const { return x * std_min(std_max(x + C(3), C(0)), C(6)) / C(6); }
  OAR_D C df(C x) const {
    if (x < C(-3)) return C(0);
    if (x > C(3)) return C(1);
    return (C(2) * x + C(3)) / C(6);
  }
};
template <typename C>
struct Hardsigmoid {
  C slope, offset;
  static Hardsigmoid make(const sdk::KernelContext& c) {
    return {C(c.attr_float_or("slope", 1.0 / 6.0)), C(c.attr_float_or("offset", 0.5))};
  }
  OAR_D C f(C x) const { return std_min(std_max(slope * x + offset, C(0)), C(1)); }
  OAR_D C df(C x) const {
    const C v = slope * x + offset;
    return (v > C(0) && v < C(1)) ? slope : C(0);
  }
};

template <typename T, typename A>
struct ActForward {
  A act;
  OAR_D T operator()(T x) const { return from_acc<T>(act.f(to_acc<T>(x))); }
};
template <typename T, typename A>
struct ActBackward {
  A act;
  OAR_D T operator()(T x, T g) const { return from_acc<T>(to_acc<T>(g) * act.df(to_acc<T>(x))); }
};

template <template <typename> class Act>
void act_forward(sdk::KernelContext& c, const char* name) {
  dispatch_float(c.input(0).dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Act<acc_t<T>>;
    unary<T, T>(c, name, ActForward<T, A>{A::make(c)});
  });
}
template <template <typename> class Act>
void act_backward(sdk::KernelContext& c, const char* name) {
  dispatch_float(c.input(0).dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Act<acc_t<T>>;
    binary<T, T, T>(c, name, ActBackward<T, A>{A::make(c)});
  });
}

// ---- clip --------------------------------------------------------------------------------------------
// min/max are doubles; for integer x they are clamped to T's range first (so +-inf work), then
// truncated like a cast (plugins/cpu bound<T>).
template <typename T>
acc_t<T> clip_bound(double v) {
  if constexpr (is_int_v<T>) {
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<acc_t<T>>(v);
  }
}
// Two independent selects, as the CPU: NaN stays NaN; min > max gives min.
template <typename C>
struct ClipOp {
  C lo, hi;
  OAR_D C operator()(C v) const {
    const C upper = v > hi ? hi : v;
    return v < lo ? lo : upper;
  }
};
void clip_kernel(sdk::KernelContext& c) {
  const double lo = c.attr_float_or("min", -INFINITY), hi = c.attr_float_or("max", INFINITY);
  dispatch_real(c.input(0).dtype(), "clip", [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_same1<T>(c, "clip", ClipOp<acc_t<T>>{clip_bound<T>(lo), clip_bound<T>(hi)});
  });
}

}  // namespace

void register_activation(Registry& r) {
  const auto floats = gpu_float_dtypes();
#define OAR_PW_ACT(ACT, NAME)                                                            \
  r.add(                                                                                 \
      NAME, floats, [](sdk::KernelContext& c) { act_forward<ACT>(c, NAME); }, kStrided); \
  r.add(                                                                                 \
      NAME "_grad", floats, [](sdk::KernelContext& c) { act_backward<ACT>(c, NAME "_grad"); }, kStrided)
  OAR_PW_ACT(Gelu, "gelu");
  OAR_PW_ACT(Silu, "silu");
  OAR_PW_ACT(LeakyRelu, "leaky_relu");
  OAR_PW_ACT(Elu, "elu");
  OAR_PW_ACT(Softplus, "softplus");
  OAR_PW_ACT(Hardswish, "hardswish");
  OAR_PW_ACT(Hardsigmoid, "hardsigmoid");
#undef OAR_PW_ACT
  r.add("clip", gpu_real_dtypes(), &clip_kernel, kStrided);
}

}  // namespace oar_cuda
