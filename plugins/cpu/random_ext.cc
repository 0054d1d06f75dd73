// CPU kernel of framework/src/ops_random.cc: standard_gamma on the counter RNG (oar/sdk/random.h).
#include <oar/sdk/random.h>

#include <cmath>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;

// Gamma(a, 1) by Marsaglia and Tsang's squeeze-and-reject method (a >= 1); a < 1 draws Gamma(a + 1)
// and scales it by U^(1/a). Every uniform comes from `stream`'s counters 0, 1, 2, ..., so the number of
// rejections does not move any other element's numbers.
double gamma_sample(double a, uint64_t stream) {
  uint64_t k = 0;
  auto u = [&] { return oar::sdk::uniform01(stream, k++); };
  double boost = 1;
  if (a < 1) {
    double v = u();
    boost = std::pow(v, 1.0 / a);
    a += 1;
  }
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      double u1 = u(), u2 = u();
      if (u1 < 1e-300) u1 = 1e-300;
      x = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double w = u(), x2 = x * x;
    if (w < 1.0 - 0.0331 * x2 * x2) return boost * d * v;
    if (std::log(w) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return boost * d * v;
  }
}

void standard_gamma_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const uint64_t seed = static_cast<uint64_t>(ctx.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(attr_int_or(ctx, "offset", 0));
  dispatch<FloatType>("standard_gamma", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    ErrorFlag bad;
    oar::sdk::parallel_for(0, out.numel(), oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const double a = static_cast<double>(C(px[i]));
        if (!(a > 0 && std::isfinite(a))) {
          bad.set();
          po[i] = T(C(0));
          continue;
        }
        po[i] = T(C(gamma_sample(a, oar::sdk::random_bits(seed, offset + static_cast<uint64_t>(i)))));
      }
    });
    OAR_SDK_CHECK(!bad.get(), OAR_ERR_INVALID_ARGUMENT,
                  "standard_gamma: x must hold finite concentrations > 0");
  });
}

}  // namespace

void register_random_ext_kernels(Registry& r) {
  r.add("standard_gamma", oar::sdk::float_dtypes(), &standard_gamma_kernel);
}

}  // namespace oar_cpu
