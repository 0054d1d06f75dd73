// CPU kernels of framework/src/ops_random.cc: standard_gamma on the counter RNG (oar/sdk/random.h) and
// the implicit-reparameterisation gradient of its draws, standard_gamma_grad.
#include <oar/sdk/random.h>
#include <oar/sdk/special.h>

#include <algorithm>
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

// dx/da for x ~ Gamma(a, 1) at fixed cdf value: -(dP(a, x)/da) / p(x; a), with P the regularised lower
// incomplete gamma function and p the density. Below x = a + 1 from P's series, above it from
// Q = 1 - P's continued fraction (each converges quickly and without cancellation on its side):
//   P = x^a e^-x / Gamma(a + 1) * S,  S = sum_n prod_{k<=n} x / (a + k)
//     => dx/da = -(x / a) S (log x - psi(a + 1) + dlogS/da),  dS/da = -sum_n t_n H_n, H_n = sum_{k<=n}
//     1/(a+k)
//   Q = x^a e^-x / Gamma(a) * CF(a, x)
//     => dx/da = x CF (log x - psi(a) + dlogCF/da), dlogCF/da by a central difference.
// Beyond a = 1e8 (where both would need ~1e5 terms) the Wilson-Hilferty form x = a (1 - 1/(9a) + z/(3 sqrt
// a))^3 is differentiated at fixed z; its error there is far below float64's resolution of x.
double gamma_cf(double a, double x) {  // modified Lentz for 1 / (x + 1 - a - 1(1-a) / (x + 3 - a - ...))
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return h;
}

double gamma_sample_grad(double a, double x) {
  if (!(x > 0) || !(a > 0)) return 0;  // a draw that underflowed to 0 does not move
  const double lx = std::log(x);
  if (a > 1e8) {
    const double w = std::cbrt(x / a), z = (w - 1 + 1 / (9 * a)) * 3 * std::sqrt(a);
    const double base = 1 - 1 / (9 * a) + z / (3 * std::sqrt(a));
    return base * base * base + 3 * a * base * base * (1 / (9 * a * a) - z / (6 * a * std::sqrt(a)));
  }
  if (x < a + 1) {
    double t = 1, S = 1, SH = 0, H = 0;
    for (int n = 1; n < 100000000; ++n) {
      t *= x / (a + n);
      H += 1 / (a + n);
      S += t;
      SH += t * H;
      if (t < 1e-17 * S && t * H < 1e-17 * SH) break;
    }
    return -(x / a) * S * (lx - oar::sdk::digamma(a + 1) - SH / S);
  }
  const double cf = gamma_cf(a, x), step = 1e-5 * std::max(a, 1.0);
  const double dlogcf = (std::log(gamma_cf(a + step, x)) - std::log(gamma_cf(a - step, x))) / (2 * step);
  return x * cf * (lx - oar::sdk::digamma(a) + dlogcf);
}

void standard_gamma_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), s = ctx.input(1), out = ctx.output(0);
  dispatch<FloatType>("standard_gamma_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pa = x.data<T>();
    const T* px = s.data<T>();
    T* po = out.data<T>();
    oar::sdk::parallel_for(0, out.numel(), 64, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        po[i] = T(C(gamma_sample_grad(static_cast<double>(C(pa[i])), static_cast<double>(C(px[i])))));
    });
  });
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
  r.add("standard_gamma_grad", oar::sdk::float_dtypes(), &standard_gamma_grad_kernel);
}

}  // namespace oar_cpu
