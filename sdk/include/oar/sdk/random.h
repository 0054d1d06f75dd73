// Counter-based random numbers: the same (seed, counter) gives the same bits on every device,
// so a seeded tensor is identical whichever plugin made it (docs/ops.md, "Creation").
#pragma once

#include <cmath>
#include <cstdint>

#include <oar/sdk/hd.h>  // host and device: a GPU plugin compiles these same functions into its kernels

namespace oar::sdk {

OAR_SDK_HD inline uint64_t mix64(uint64_t z) {  // the splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

OAR_SDK_HD inline uint64_t random_bits(uint64_t seed, uint64_t counter) {
  return mix64(mix64(seed + 0x9e3779b97f4a7c15ull) ^ (counter * 0xd1b54a32d192ed03ull));
}

// Uniform in [0, 1) with 53 random bits.
OAR_SDK_HD inline double uniform01(uint64_t seed, uint64_t counter) {
  return static_cast<double>(random_bits(seed, counter) >> 11) * (1.0 / 9007199254740992.0);
}

// Standard normal for element i via Box-Muller on counters 2i and 2i+1.
OAR_SDK_HD inline double standard_normal(uint64_t seed, uint64_t i) {
  double u1 = uniform01(seed, 2 * i);
  double u2 = uniform01(seed, 2 * i + 1);
  if (u1 < 1e-300) u1 = 1e-300;
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
}

}  // namespace oar::sdk
