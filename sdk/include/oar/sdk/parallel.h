// parallel_for over an index range, on OpenMP threads when the plugin is built with OpenMP.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oar::sdk {

inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls fn(begin_i, end_i) on disjoint sub-ranges covering [begin, end). Runs inline when the range
// is at most `grain` long, when one thread is available, or when already inside a parallel region.
template <typename Fn> void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
#ifdef _OPENMP
  int threads = static_cast<int>(std::min<int64_t>(max_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1)));
  if (threads > 1 && !omp_in_parallel()) {
#pragma omp parallel num_threads(threads)
    {
      int t = omp_get_thread_num();
      int nt = omp_get_num_threads();
      int64_t chunk = (n + nt - 1) / nt;
      int64_t b = begin + t * chunk;
      int64_t e = std::min(end, b + chunk);
      if (b < e) fn(b, e);
    }
    return;
  }
#else
  (void)grain;
#endif
  fn(begin, end);
}

// Elementwise work below this many elements is not worth waking threads for.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace oar::sdk
