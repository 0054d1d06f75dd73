// C++ element types for every OarDType, and the dtype <-> type mapping plugins dispatch on.
#pragma once

#include <oar/device_api.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace oar::sdk {

// IEEE half precision stored as bits; arithmetic goes through float.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  float16(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a builtin float
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu);
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf/nan
    int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (e <= 0) {                                                  // subnormal or zero
      if (e < -10) return static_cast<uint16_t>(sign);
      mant |= 0x800000u;
      uint32_t shift = static_cast<uint32_t>(14 - e);
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // round to nearest even
    return static_cast<uint16_t>(half);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1f) {
      x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
      if (mant == 0) {
        x = sign;
      } else {  // normalise a subnormal
        int32_t e = -1;
        do {
          mant <<= 1;
          ++e;
        } while (!(mant & 0x400u));
        x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
      }
    } else {
      x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// bfloat16: the top 16 bits of a float, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const {
    uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
  }
};

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <typename T> struct DTypeOf;
#define OAR_SDK_DTYPE_OF(T, D) \
  template <> struct DTypeOf<T> { static constexpr OarDType value = D; };
OAR_SDK_DTYPE_OF(bool, OAR_DTYPE_BOOL)
OAR_SDK_DTYPE_OF(int8_t, OAR_DTYPE_INT8)
OAR_SDK_DTYPE_OF(uint8_t, OAR_DTYPE_UINT8)
OAR_SDK_DTYPE_OF(int16_t, OAR_DTYPE_INT16)
OAR_SDK_DTYPE_OF(int32_t, OAR_DTYPE_INT32)
OAR_SDK_DTYPE_OF(int64_t, OAR_DTYPE_INT64)
OAR_SDK_DTYPE_OF(float16, OAR_DTYPE_FLOAT16)
OAR_SDK_DTYPE_OF(bfloat16, OAR_DTYPE_BFLOAT16)
OAR_SDK_DTYPE_OF(float, OAR_DTYPE_FLOAT32)
OAR_SDK_DTYPE_OF(double, OAR_DTYPE_FLOAT64)
OAR_SDK_DTYPE_OF(complex64, OAR_DTYPE_COMPLEX64)
OAR_SDK_DTYPE_OF(complex128, OAR_DTYPE_COMPLEX128)
#undef OAR_SDK_DTYPE_OF

template <typename T> inline constexpr OarDType dtype_of = DTypeOf<T>::value;

inline int64_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case OAR_DTYPE_BOOL: case OAR_DTYPE_INT8: case OAR_DTYPE_UINT8: return 1;
    case OAR_DTYPE_INT16: case OAR_DTYPE_FLOAT16: case OAR_DTYPE_BFLOAT16: return 2;
    case OAR_DTYPE_INT32: case OAR_DTYPE_FLOAT32: return 4;
    case OAR_DTYPE_INT64: case OAR_DTYPE_FLOAT64: case OAR_DTYPE_COMPLEX64: return 8;
    case OAR_DTYPE_COMPLEX128: return 16;
    default: return 0;
  }
}

inline const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"bool",    "int8",     "uint8",   "int16",
                                      "int32",   "int64",    "float16", "bfloat16",
                                      "float32", "float64",  "complex64", "complex128"};
  return dtype >= 0 && dtype < OAR_DTYPE_COUNT ? names[dtype] : "unknown";
}

template <typename T> inline constexpr bool is_complex_v = false;
template <typename T> inline constexpr bool is_complex_v<std::complex<T>> = true;
template <typename T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// The type arithmetic is done in: float for the 16-bit floats, the type itself otherwise.
template <typename T> struct ComputeType { using type = T; };
template <> struct ComputeType<float16> { using type = float; };
template <> struct ComputeType<bfloat16> { using type = float; };
template <typename T> using compute_t = typename ComputeType<T>::type;

// Calls fn(T{}) with the C++ type for `dtype`, for the dtypes in the listed category.
// Returns false when dtype is outside it, so the caller can report a type error.
template <typename Fn> bool visit_dtype(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case OAR_DTYPE_BOOL: fn(bool{}); return true;
    case OAR_DTYPE_INT8: fn(int8_t{}); return true;
    case OAR_DTYPE_UINT8: fn(uint8_t{}); return true;
    case OAR_DTYPE_INT16: fn(int16_t{}); return true;
    case OAR_DTYPE_INT32: fn(int32_t{}); return true;
    case OAR_DTYPE_INT64: fn(int64_t{}); return true;
    case OAR_DTYPE_FLOAT16: fn(float16{}); return true;
    case OAR_DTYPE_BFLOAT16: fn(bfloat16{}); return true;
    case OAR_DTYPE_FLOAT32: fn(float{}); return true;
    case OAR_DTYPE_FLOAT64: fn(double{}); return true;
    case OAR_DTYPE_COMPLEX64: fn(complex64{}); return true;
    case OAR_DTYPE_COMPLEX128: fn(complex128{}); return true;
    default: return false;
  }
}

}  // namespace oar::sdk
