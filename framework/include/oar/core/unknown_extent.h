// The sentinel extents of static-graph recording (decisions 27 and 96), in the core because shape
// inference of the core's ops must recognise them: while a program is built, two unknown extents may
// broadcast against each other (the kernels check the real sizes when the program runs).
#pragma once

#include <cstdint>

namespace oar {

// kUnknownDims[0] (kUnknownDim) stands for the fed variables' unknown extents, the others for extents
// that depend on a variable's value (decision 96), handed out in turn by ir::new_unknown_extent. Primes,
// so that an extent derived from several of them factors back into them.
inline constexpr int kNumUnknownDims = 16;
inline constexpr int64_t kUnknownDims[kNumUnknownDims] = {
    1000003, 1000033, 1000037, 1000039, 1000081, 1000099, 1000117, 1000121,
    1000133, 1000151, 1000159, 1000171, 1000183, 1000187, 1000193, 1000199};
inline constexpr int64_t kUnknownDim = kUnknownDims[0];
// Whether v is a nonzero multiple of a sentinel (an extent derived from an unknown one).
inline bool is_unknown_extent(int64_t v) {
  if (v == 0) return false;
  for (int64_t p : kUnknownDims)
    if (v % p == 0) return true;
  return false;
}

}  // namespace oar
