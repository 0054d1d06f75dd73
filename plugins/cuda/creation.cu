// Creation kernels (fill, arange, linspace, eye), tril/triu, and the random ops (uniform, normal,
// bernoulli) on the SDK's counter-based RNG (oar/sdk/random.h): element i uses counter offset + i, so
// the same seed gives the CPU plugin's numbers. Outputs are contiguous; out[i] = gen(i).
// Arithmetic that must round exactly as the CPU's (uniform, normal, arange, linspace) uses the _rn
// intrinsics: nvcc would otherwise fuse a * b + c into one FMA, which rounds once instead of twice.
#include <oar/sdk/random.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pointwise.h"

namespace oar_cuda {
namespace {

// ---- fill, arange, linspace, eye ---------------------------------------------------------------------
template <typename T>
struct ConstantGen {
  T v;
  OAR_D T operator()(int64_t) const { return v; }
};

void fill_kernel(sdk::KernelContext& c) {
  const double value = c.attr_float("value");
  dispatch_any(c.output(0).dtype(), "fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "fill", ConstantGen<T>{value_from_double<T>(value)});
  });
}

// start + i * step in double, then converted; integer start and step are exact in wrapping int64
// arithmetic, even beyond 2^53 (as the CPU).
template <typename T>
struct ArangeGen {
  double start, step;
  bool exact;
  uint64_t s0, d;
  OAR_D T operator()(int64_t i) const {
    if constexpr (is_int_v<T>) {
      if (exact) return T(static_cast<int64_t>(s0 + static_cast<uint64_t>(i) * d));
    }
    return value_from_double<T>(__dadd_rn(start, __dmul_rn(static_cast<double>(i), step)));
  }
};

bool is_integral_value(double v) { return std::floor(v) == v && std::fabs(v) < 9.0e18; }

void arange_kernel(sdk::KernelContext& c) {
  const double start = c.attr_float("start"), step = c.attr_float("step");
  const bool exact = is_integral_value(start) && is_integral_value(step);
  const uint64_t s0 = exact ? static_cast<uint64_t>(static_cast<int64_t>(start)) : 0;
  const uint64_t d = exact ? static_cast<uint64_t>(static_cast<int64_t>(step)) : 0;
  dispatch_real(c.output(0).dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "arange", ArangeGen<T>{start, step, exact, s0, d});
  });
}

// Computed from both ends (as Paddle and the CPU), so the first value is start and the last stop (a single
// value is start).
template <typename T>
struct LinspaceGen {
  double start, stop, step;
  int64_t num, half;
  OAR_D T operator()(int64_t i) const {
    const double v = i < half ? __dadd_rn(start, __dmul_rn(step, static_cast<double>(i)))
                              : __dsub_rn(stop, __dmul_rn(step, static_cast<double>(num - 1 - i)));
    return value_from_double<T>(v);
  }
};

void linspace_kernel(sdk::KernelContext& c) {
  const double start = c.attr_float("start"), stop = c.attr_float("stop");
  const int64_t num = c.output(0).numel();
  const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  dispatch_real(c.output(0).dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "linspace", LinspaceGen<T>{start, stop, step, num, num == 1 ? 1 : num / 2});
  });
}

template <typename T>
struct EyeGen {
  int64_t cols;
  T one, zero;
  OAR_D T operator()(int64_t i) const { return i / cols == i % cols ? one : zero; }
};

void eye_kernel(sdk::KernelContext& c) {
  const sdk::TensorView out = c.output(0);
  const int64_t cols = out.ndim() == 2 ? out.dim(1) : 1;
  if (cols == 0) return;  // no elements
  dispatch_any(out.dtype(), "eye", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "eye", EyeGen<T>{cols, value_from_double<T>(1.0), value_from_double<T>(0.0)});
  });
}

// ---- tril / triu -----------------------------------------------------------------------------------
// x is contiguous (registered without strided inputs); element i of a [..., m, n] tensor sits at row
// (i / n) % m, column i % n. tril keeps col - row <= diagonal, triu col - row >= diagonal; the rest is
// 0 (all-zero bits are 0 in every dtype).
template <typename B>
struct TriGen {
  const B* x;
  int64_t m, n, diag;
  bool lower;
  OAR_D B operator()(int64_t i) const {
    const int64_t col = i % n, row = (i / n) % m;
    const bool keep = lower ? col - row <= diag : col - row >= diag;
    return keep ? x[i] : B{};
  }
};

template <bool kLower>
void tri_kernel(sdk::KernelContext& c) {
  const char* op = kLower ? "tril" : "triu";
  const sdk::TensorView x = c.input(0);
  OAR_SDK_CHECK(x.ndim() >= 2, OAR_ERR_INVALID_ARGUMENT, op << ": x must have at least 2 dimensions");
  const int64_t m = x.dim(-2), n = x.dim(-1);
  if (m == 0 || n == 0) return;
  // Beyond +-(m + n) every diagonal keeps or drops whole rows; clamped so nothing overflows.
  const int64_t diag = std::min(std::max(c.attr_int_or("diagonal", 0), -(m + n)), m + n);
  dispatch_bits(x.dtype(), op, [&](auto tag) {
    using B = typename decltype(tag)::type;
    generate<B>(c, op, TriGen<B>{static_cast<const B*>(x.raw()), m, n, diag, kLower});
  });
}

// ---- random ------------------------------------------------------------------------------------------
// The largest value of T below hi (host): uniform's result rounded to T must stay inside [min, max).
template <typename T>
T largest_below(double hi) {
  using C = acc_t<T>;
  T t = from_acc<T>(static_cast<C>(hi));
  if (static_cast<double>(to_acc<T>(t)) < hi) return t;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(t, -std::numeric_limits<T>::infinity());
  } else {  // 16-bit floats: one step down in the bit pattern
    uint16_t bits;
    std::memcpy(&bits, static_cast<const void*>(&t), 2);
    if ((bits & 0x7fffu) == 0)
      bits = 0x8001u;  // +-0 -> the smallest negative subnormal
    else if (bits & 0x8000u)
      ++bits;
    else
      --bits;
    std::memcpy(static_cast<void*>(&t), &bits, 2);
    return t;
  }
}

// float16/bfloat16/float32 draw the top 24 bits as a float in [0, 1), float64 the top 53; then
// min + range * u in double, rounded to T (16-bit floats through float), as the CPU.
template <typename T>
struct UniformGen {
  uint64_t seed, offset;
  double lo, hi, range;
  bool clamp;
  T top;
  OAR_D T operator()(int64_t i) const {
    const uint64_t ctr = offset + static_cast<uint64_t>(i);
    double u;
    if constexpr (std::is_same_v<T, double>)
      u = sdk::uniform01(seed, ctr);
    else
      u = __fmul_rn(static_cast<float>(sdk::random_bits(seed, ctr) >> 40), 1.0f / 16777216.0f);
    const T v = from_acc<T>(static_cast<acc_t<T>>(__dadd_rn(lo, __dmul_rn(range, u))));
    return (clamp && static_cast<double>(to_acc<T>(v)) >= hi) ? top : v;
  }
};

void uniform_kernel(sdk::KernelContext& c) {
  const double lo = c.attr_float_or("min", -1.0), hi = c.attr_float_or("max", 1.0);
  const uint64_t seed = static_cast<uint64_t>(c.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(c.attr_int_or("offset", 0));
  const double range = hi - lo;
  dispatch_float(c.output(0).dtype(), "uniform", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool clamp = range > 0;
    const T top = clamp ? largest_below<T>(hi) : from_acc<T>(acc_t<T>(0));
    generate<T>(c, "uniform", UniformGen<T>{seed, offset, lo, hi, range, clamp, top});
  });
}

// Box-Muller on counters 2(offset + i) and 2(offset + i) + 1 (sdk::standard_normal). The GPU's double
// log/cos/sqrt may differ from the host libm in the last ulp, so a float64 result can differ from the
// CPU's in its last bit (rounded to float32 or narrower, practically never).
template <typename T>
struct NormalGen {
  uint64_t seed, offset;
  double mean, stddev;
  OAR_D T operator()(int64_t i) const {
    const double z = sdk::standard_normal(seed, offset + static_cast<uint64_t>(i));
    return from_acc<T>(static_cast<acc_t<T>>(__dadd_rn(mean, __dmul_rn(stddev, z))));
  }
};

void normal_kernel(sdk::KernelContext& c) {
  const double mean = c.attr_float_or("mean", 0.0), stddev = c.attr_float_or("std", 1.0);
  const uint64_t seed = static_cast<uint64_t>(c.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(c.attr_int_or("offset", 0));
  dispatch_float(c.output(0).dtype(), "normal", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "normal", NormalGen<T>{seed, offset, mean, stddev});
  });
}

// out[i] = 1 with probability x[i]: uniform01(seed, offset + i) < p (x contiguous). p outside [0, 1]
// (or NaN) is reported through the device's error word, raised as the CPU's ValueError at the next
// synchronization; the element gives NaN, which is never a valid draw.
template <typename T>
struct BernoulliGen {
  const T* x;
  uint64_t seed, offset;
  DataErrorReporter bad;
  OAR_D T operator()(int64_t i) const {
    const double p = static_cast<double>(to_acc<T>(x[i]));
    if (!(p >= 0 && p <= 1)) {
      bad.report(kBadValue, i, 0);
      return from_acc<T>(acc_t<T>(NAN));
    }
    return from_acc<T>(acc_t<T>(sdk::uniform01(seed, offset + static_cast<uint64_t>(i)) < p ? 1 : 0));
  }
};

void bernoulli_kernel(sdk::KernelContext& c) {
  const uint64_t seed = static_cast<uint64_t>(c.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(c.attr_int_or("offset", 0));
  dispatch_float(c.input(0).dtype(), "bernoulli", [&](auto tag) {
    using T = typename decltype(tag)::type;
    generate<T>(c, "bernoulli",
                BernoulliGen<T>{static_cast<const T*>(c.input(0).raw()), seed, offset,
                                data_error_reporter(c, kErrBernoulli)});
  });
}

}  // namespace

void register_creation(Registry& r) {
  const auto floats = gpu_float_dtypes(), reals = gpu_real_dtypes();
  r.add("fill", every_dtype(), &fill_kernel);
  r.add("arange", reals, &arange_kernel);
  r.add("linspace", reals, &linspace_kernel);
  r.add("eye", every_dtype(), &eye_kernel);
  r.add("tril", every_dtype(), &tri_kernel<true>);
  r.add("triu", every_dtype(), &tri_kernel<false>);
  r.add("uniform", floats, &uniform_kernel);
  // float64 normals stay on the CPU: the GPU's double log/cos/sqrt can differ from glibc's in the last
  // bit, and the same seed must give identical numbers on every device (tests/conformance/test_ops.cc,
  // RandomOps). Rounding to float32 or less hides that difference.
  r.add("normal", {OAR_DTYPE_FLOAT16, OAR_DTYPE_BFLOAT16, OAR_DTYPE_FLOAT32}, &normal_kernel);
  r.add("bernoulli", floats, &bernoulli_kernel);
}

}  // namespace oar_cuda
