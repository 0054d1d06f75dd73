// Special functions every plugin computes the same way, host and device (OAR_SDK_HD), so digamma or
// erfinv of a value gives the CPU's result on a GPU too, up to the device's own exp/log/erf.
#pragma once

#include <oar/sdk/hd.h>

#include <cmath>

namespace oar::sdk {

// digamma: reflection for x < 0, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
// asymptotic series (error below 1e-15 there).
OAR_SDK_HD inline double digamma(double x) {
  constexpr double kPi = 3.141592653589793;
  if (x != x || x == -HUGE_VAL) return NAN;
  if (x <= 0 && ::floor(x) == x) return x == 0 ? -::copysign(HUGE_VAL, x) : NAN;
  double result = 0;
  if (x < 0) {  // psi(x) = psi(1 - x) - pi / tan(pi x)
    result = -kPi / ::tan(kPi * x);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double r = 1 / (x * x);
  const double series =
      r * (1.0 / 12 -
           r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760))))));
  return result + ::log(x) - 0.5 / x - series;
}

// erfinv: Giles' single-precision approximation, then Newton steps on erf for full precision.
OAR_SDK_HD inline double erfinv(double y) {
  if (y != y || y < -1 || y > 1) return NAN;
  if (y == 1) return HUGE_VAL;
  if (y == -1) return -HUGE_VAL;
  double w = -::log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = ::sqrt(w) - 3;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * y;
  }
  for (int i = 0; i < 2; ++i) {
    const double d = (::erf(x) - y) / (1.1283791670955126 * ::exp(-x * x));
    if (!(d - d == 0)) break;  // not finite
    x -= d;
  }
  return x;
}

}  // namespace oar::sdk
