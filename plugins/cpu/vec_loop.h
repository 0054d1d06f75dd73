// Internal: float32 elementwise loops over vec_math.h's functions, each built three times and chosen once
// by the CPU (decision 140): 16 lanes for AVX-512, 8 for AVX2, 4 (SSE) for the baseline x86-64 the .so
// targets (8 lanes emulated on SSE ran 4x slower). Nothing is contracted into FMAs (target "avx2" does not
// enable FMA; the AVX-512 build, where it would, is compiled with fp-contract=off), so every build does the
// same IEEE operations in the same order and gives the same bits, equal to the scalar loop's (strided
// inputs) but for the sign of a NaN: GCC rewrites a + -b as a - b in scalar code, not in vector code. The
// last partial vector of a block is computed as a zero-padded full one, so every element of a contiguous
// input goes through the vector code whatever the block and thread boundaries. FMA measured 25% faster on
// AVX-512 but would make the answer depend on the CPU and on the layout of the input.
//
// An op is a stateless functor with `template <class V> V operator()(V x) const` (unary) or
// `V operator()(V x, V y) const` (binary), V being float, vf4, vf8 or vf16. Kernels get a plain function
// pointer for float32 blocks, which the 16-bit paths call between conversions (lowp.h).
#pragma once

#include <oar/sdk/iter.h>

#include "lowp.h"
#include "vec_math.h"

namespace oar_cpu {

using VecMap1 = void (*)(float* o, const float* x, int64_t n);
using VecMap2 = void (*)(float* o, const float* x, const float* y, int64_t n);

// 2: AVX-512, 1: AVX2, 0: baseline. OAR_CPU_VEC_ISA=avx2|baseline caps it (tests compare the builds).
int vec_isa();

#define OAR_VEC_AVX512 __attribute__((target("avx512f"), optimize("fp-contract=off")))
#define OAR_VEC_AVX2 __attribute__((target("avx2")))

// The first n (< lanes <= 16) floats at p as a vector, the other lanes 0; and back. Copied in pieces of 8,
// 4, 2 and 1 floats (fixed-size copies are plain moves): a variable-length memcpy is a libc call, which
// cost a tiny softmax (two rows of two) ~300 instructions more than the scalar loop it replaced.
template <class Dst, class Src>
OAR_VEC_INLINE void vec_copy_part(Dst* d, const Src* s, int64_t n) {
  char* dc = reinterpret_cast<char*>(d);
  const char* sc = reinterpret_cast<const char*>(s);
  int64_t at = 0;
  if (n & 8) std::memcpy(dc, sc, 32), at = 32;
  if (n & 4) std::memcpy(dc + at, sc + at, 16), at += 16;
  if (n & 2) std::memcpy(dc + at, sc + at, 8), at += 8;
  if (n & 1) std::memcpy(dc + at, sc + at, 4);
}
template <class V>
OAR_VEC_INLINE V vec_load_part(const float* p, int64_t n) {
  V v{};
  vec_copy_part(&v, p, n);
  return v;
}
template <class V>
OAR_VEC_INLINE void vec_store_part(float* p, V v, int64_t n) {
  vec_copy_part(p, &v, n);
}

template <class V, class Op>
OAR_VEC_INLINE void vec_map1(float* o, const float* x, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const Op op{};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof v);
    v = op(v);
    std::memcpy(o + i, &v, sizeof v);
  }
  if (i < n) vec_store_part(o + i, op(vec_load_part<V>(x + i, n - i)), n - i);
}
template <class V, class Op>
OAR_VEC_INLINE void vec_map2(float* o, const float* x, const float* y, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(float);
  const Op op{};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    a = op(a, b);
    std::memcpy(o + i, &a, sizeof a);
  }
  if (i < n) vec_store_part(o + i, op(vec_load_part<V>(x + i, n - i), vec_load_part<V>(y + i, n - i)), n - i);
}

template <class Op>
struct VecKernels {
  static void map1_base(float* o, const float* x, int64_t n) { vec_map1<vf4, Op>(o, x, n); }
  OAR_VEC_AVX2 static void map1_avx2(float* o, const float* x, int64_t n) { vec_map1<vf8, Op>(o, x, n); }
  OAR_VEC_AVX512 static void map1_avx512(float* o, const float* x, int64_t n) { vec_map1<vf16, Op>(o, x, n); }
  static void map2_base(float* o, const float* x, const float* y, int64_t n) {
    vec_map2<vf4, Op>(o, x, y, n);
  }
  OAR_VEC_AVX2 static void map2_avx2(float* o, const float* x, const float* y, int64_t n) {
    vec_map2<vf8, Op>(o, x, y, n);
  }
  OAR_VEC_AVX512 static void map2_avx512(float* o, const float* x, const float* y, int64_t n) {
    vec_map2<vf16, Op>(o, x, y, n);
  }
  static VecMap1 map1() {
    const int isa = vec_isa();
    return isa == 2 ? map1_avx512 : isa == 1 ? map1_avx2 : map1_base;
  }
  static VecMap2 map2() {
    const int isa = vec_isa();
    return isa == 2 ? map2_avx512 : isa == 1 ? map2_avx2 : map2_base;
  }
};

// o = fn(x) over n contiguous elements of T (float32, or 16-bit computed in float32 blocks), in parallel
// over kElementwiseGrain pieces: a small tensor stays on the calling thread, and every element is computed
// the same way whichever thread does it, so the bits do not depend on the thread count.
template <class T>
void vec_unary(VecMap1 fn, T* o, const T* x, int64_t n) {
  using oar::sdk::kElementwiseGrain;
  if constexpr (std::is_same_v<T, float>) {
    oar::sdk::parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      oar::sdk::write_range(o, lo, hi, n, [&](float* w, int64_t b, int64_t e) { fn(w, x + b, e - b); });
    });
  } else {
    oar::sdk::parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      alignas(64) float buf[kLowpBlock];
      for (int64_t b = lo; b < hi; b += kLowpBlock) {
        const int64_t m = std::min(kLowpBlock, hi - b);
        to_f32(x + b, buf, m);
        fn(buf, buf, m);
        from_f32(buf, o + b, m);
      }
    });
  }
}
// o = fn(x, y) over n contiguous elements of T, as vec_unary.
template <class T>
void vec_binary(VecMap2 fn, T* o, const T* x, const T* y, int64_t n) {
  using oar::sdk::kElementwiseGrain;
  if constexpr (std::is_same_v<T, float>) {
    oar::sdk::parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      oar::sdk::write_range(o, lo, hi, n,
                            [&](float* w, int64_t b, int64_t e) { fn(w, x + b, y + b, e - b); });
    });
  } else {
    oar::sdk::parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      alignas(64) float bx[kLowpBlock], by[kLowpBlock];
      for (int64_t b = lo; b < hi; b += kLowpBlock) {
        const int64_t m = std::min(kLowpBlock, hi - b);
        to_f32(x + b, bx, m);
        to_f32(y + b, by, m);
        fn(bx, bx, by, m);
        from_f32(bx, o + b, m);
      }
    });
  }
}

}  // namespace oar_cpu
