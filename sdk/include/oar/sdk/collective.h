// Helpers for plugins that compute collective results on the host (a simulator, a CPU-like device, a
// reference path): elementwise reduction of whole buffers for every OarReduceOp.
#pragma once

#include <oar/sdk/plugin.h>
#include <oar/sdk/types.h>

#include <cstdint>
#include <type_traits>

namespace oar::sdk {

// Throws for a reduce op or dtype the reductions below do not handle (bool and complex).
inline void check_reduction(int32_t dtype, int32_t op) {
  OAR_SDK_CHECK(op >= OAR_REDUCE_SUM && op <= OAR_REDUCE_AVG, OAR_ERR_INVALID_ARGUMENT,
                "collective: unknown reduce op " << op);
  OAR_SDK_CHECK(dtype != OAR_DTYPE_BOOL && dtype != OAR_DTYPE_COMPLEX64 && dtype != OAR_DTYPE_COMPLEX128 &&
                    dtype_size(dtype) > 0,
                OAR_ERR_TYPE, "collective: reductions do not handle " << dtype_name(dtype));
}

// acc[i] = op(acc[i], x[i]) for n elements of `dtype`, in the dtype's compute type. AVG adds (finish
// with finish_average); MAX and MIN propagate NaN.
inline void accumulate(void* acc, const void* x, uint64_t n, int32_t dtype, int32_t op) {
  check_reduction(dtype, op);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool> && !is_complex_v<T>) {
      using C = compute_t<T>;
      T* a = static_cast<T*>(acc);
      const T* b = static_cast<const T*>(x);
      for (uint64_t i = 0; i < n; ++i) {
        const C u = C(a[i]), v = C(b[i]);
        switch (op) {
          case OAR_REDUCE_PROD:
            a[i] = T(u * v);
            break;
          case OAR_REDUCE_MAX:
            a[i] = T((u != u || u > v) ? u : v);
            break;
          case OAR_REDUCE_MIN:
            a[i] = T((u != u || u < v) ? u : v);
            break;
          default:
            a[i] = T(u + v);
            break;  // SUM, AVG
        }
      }
    }
  });
}

// acc[i] /= nranks: the last step of an AVG reduction.
inline void finish_average(void* acc, uint64_t n, int32_t dtype, int32_t nranks) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool> && !is_complex_v<T>) {
      using C = compute_t<T>;
      T* a = static_cast<T*>(acc);
      for (uint64_t i = 0; i < n; ++i) a[i] = T(C(a[i]) / C(nranks));
    }
  });
}

}  // namespace oar::sdk
