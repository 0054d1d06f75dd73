// 16-bit float <-> float32 array conversion (lowp.h). The plugin is built for baseline x86-64, so each
// instruction-set version is a function with a target attribute, picked once from what the CPU has.
//
// bfloat16 rounding uses the integer form of round-to-nearest-even (add 0x7fff plus the kept LSB, keep
// the high half; NaN gets its quiet bit) 16 lanes at a time, not AVX512-BF16's vcvtneps2bf16: that
// instruction treats denormal inputs as zero, so it would differ from the scalar conversion (and from
// numpy/ml_dtypes) on values below 1.2e-38, and it measured no faster, since the loop is memory-bound
// (tests/benchmarks/bench_lowp.cc; docs/decisions.md).
#include "lowp.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "vec_loop.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oar_cpu {
namespace {

// ---- portable versions (any CPU; also the reference for the vector ones) --------------------------
void bf16_to_f32_scalar(const bfloat16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float(s[i]);
}
void f32_to_bf16_scalar(const float* s, bfloat16* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bfloat16(s[i]);
}
void f16_to_f32_scalar(const float16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float(s[i]);
}
void f32_to_f16_scalar(const float* s, float16* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = float16(s[i]);
}

#if defined(__x86_64__)
// ---- AVX-512 (F + BW + VL): 16 lanes, the tail through a lane mask --------------------------------
#define OAR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

OAR_AVX512 inline __mmask16 tail_mask(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
}

OAR_AVX512 void bf16_to_f32_avx512(const bfloat16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, s + i);
    _mm512_mask_storeu_ps(d + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

OAR_AVX512 inline __m256i round_bf16_avx512(__m512 f) {
  const __m512i x = _mm512_castps_si512(f);
  const __m512i hi = _mm512_srli_epi32(x, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
}

OAR_AVX512 void f32_to_bf16_avx512(const float* s, bfloat16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two vectors per step: more loads in flight
    const __m256i a = round_bf16_avx512(_mm512_loadu_ps(s + i));
    const __m256i b = round_bf16_avx512(_mm512_loadu_ps(s + i + 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 16), b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(d + i, m, round_bf16_avx512(_mm512_maskz_loadu_ps(m, s + i)));
  }
}

OAR_AVX512 void f16_to_f32_avx512(const float16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(d + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + i)));
  }
}

OAR_AVX512 void f32_to_f16_avx512(const float* s, float16* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h =
        _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, s + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}

// ---- AVX2 (+F16C for float16): 8 lanes; the tail goes through a zero-padded vector ----------------
#define OAR_AVX2 __attribute__((target("avx2,f16c")))

// Runs Body(src, dst) on each group of 8 elements; the last partial group through padded copies.
template <class S, class D, void (*Body)(const S*, D*)>
OAR_AVX2 void groups_of_8(const S* s, D* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) Body(s + i, d + i);
  if (i < n) {
    S ts[8] = {};
    D td[8];
    std::memcpy(ts, s + i, sizeof(S) * (n - i));
    Body(ts, td);
    std::memcpy(d + i, td, sizeof(D) * (n - i));
  }
}

OAR_AVX2 inline void bf16_to_f32_8(const bfloat16* a, float* b) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
  _mm256_storeu_ps(b, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
}

OAR_AVX2 inline void f32_to_bf16_8(const float* a, bfloat16* b) {
  const __m256 f = _mm256_loadu_ps(a);
  const __m256i x = _mm256_castps_si256(f);
  const __m256i hi = _mm256_srli_epi32(x, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  // Pack 8 x 32-bit (each < 0x10000) to 8 x 16-bit: packus works per 128-bit lane, then reorder.
  const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(b), _mm256_castsi256_si128(p));
}

OAR_AVX2 inline void f16_to_f32_8(const float16* a, float* b) {
  _mm256_storeu_ps(b, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))));
}

OAR_AVX2 inline void f32_to_f16_8(const float* a, float16* b) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(b),
                   _mm256_cvtps_ph(_mm256_loadu_ps(a), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void bf16_to_f32_avx2(const bfloat16* s, float* d, int64_t n) {
  groups_of_8<bfloat16, float, bf16_to_f32_8>(s, d, n);
}
void f32_to_bf16_avx2(const float* s, bfloat16* d, int64_t n) {
  groups_of_8<float, bfloat16, f32_to_bf16_8>(s, d, n);
}
void f16_to_f32_f16c(const float16* s, float* d, int64_t n) {
  groups_of_8<float16, float, f16_to_f32_8>(s, d, n);
}
void f32_to_f16_f16c(const float* s, float16* d, int64_t n) {
  groups_of_8<float, float16, f32_to_f16_8>(s, d, n);
}

bool cpu_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}
bool cpu_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"); }
#else
bool cpu_avx512() { return false; }
bool cpu_avx2() { return false; }
#endif

// The versions chosen for this CPU, once. OAR_CPU_LOWP_ISA=avx2|scalar forces a lower one (tests run
// every version on one machine that way).
struct Table {
  void (*bf16_in)(const bfloat16*, float*, int64_t) = bf16_to_f32_scalar;
  void (*bf16_out)(const float*, bfloat16*, int64_t) = f32_to_bf16_scalar;
  void (*f16_in)(const float16*, float*, int64_t) = f16_to_f32_scalar;
  void (*f16_out)(const float*, float16*, int64_t) = f32_to_f16_scalar;
  const char* isa = "scalar";
  Table() {
    const char* env = std::getenv("OAR_CPU_LOWP_ISA");
    const std::string cap = env ? env : "";
#if defined(__x86_64__)
    if (cap.empty() && cpu_avx512()) {
      bf16_in = bf16_to_f32_avx512, bf16_out = f32_to_bf16_avx512;
      f16_in = f16_to_f32_avx512, f16_out = f32_to_f16_avx512;
      isa = "avx512";
    } else if ((cap.empty() || cap == "avx2") && cpu_avx2()) {
      bf16_in = bf16_to_f32_avx2, bf16_out = f32_to_bf16_avx2;
      f16_in = f16_to_f32_f16c, f16_out = f32_to_f16_f16c;
      isa = "avx2";
    }
#endif
  }
};
const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

void to_f32(const bfloat16* src, float* dst, int64_t n) { table().bf16_in(src, dst, n); }
void to_f32(const float16* src, float* dst, int64_t n) { table().f16_in(src, dst, n); }
void from_f32(const float* src, bfloat16* dst, int64_t n) { table().bf16_out(src, dst, n); }
void from_f32(const float* src, float16* dst, int64_t n) { table().f16_out(src, dst, n); }
const char* lowp_isa() { return table().isa; }

float* lowp_scratch(int slot, int64_t n) {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<float, Free> bufs[6];
  thread_local int64_t caps[6] = {};
  if (n > caps[slot]) {
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    bufs[slot].reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!bufs[slot]) {
      caps[slot] = 0;
      throw std::bad_alloc();
    }
    caps[slot] = n;
  }
  return bufs[slot].get();
}

bool use_native_lowp(const char* impl) {
  static const int forced = [] {
    const char* e = std::getenv("OAR_CPU_LOWP_NATIVE");
    return e && *e ? (std::string(e) == "0" ? 0 : 1) : -1;
  }();
  const std::string s(impl);
  if (s.rfind("ref", 0) == 0) return false;  // oneDNN's reference loops: always slower than float32
  return forced >= 0 ? forced == 1 : s.find("amx") != std::string::npos;
}

int vec_isa() {
  static const int isa = [] {
    const char* env = std::getenv("OAR_CPU_VEC_ISA");
    const std::string cap = env ? env : "";
#if defined(__x86_64__)
    if (cap.empty() && __builtin_cpu_supports("avx512f")) return 2;
    if ((cap.empty() || cap == "avx2") && __builtin_cpu_supports("avx2")) return 1;
#endif
    return 0;
  }();
  return isa;
}

}  // namespace oar_cpu
