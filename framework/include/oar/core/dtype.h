// Element types. Values equal the ABI's OarDType so they cross the boundary unchanged.
#pragma once

#include <oar/device_api.h>

#include <cstdint>
#include <string>

namespace oar {

enum class DType : int32_t {
  kBool = OAR_DTYPE_BOOL,
  kInt8 = OAR_DTYPE_INT8,
  kUInt8 = OAR_DTYPE_UINT8,
  kInt16 = OAR_DTYPE_INT16,
  kInt32 = OAR_DTYPE_INT32,
  kInt64 = OAR_DTYPE_INT64,
  kFloat16 = OAR_DTYPE_FLOAT16,
  kBFloat16 = OAR_DTYPE_BFLOAT16,
  kFloat32 = OAR_DTYPE_FLOAT32,
  kFloat64 = OAR_DTYPE_FLOAT64,
  kComplex64 = OAR_DTYPE_COMPLEX64,
  kComplex128 = OAR_DTYPE_COMPLEX128,
};
inline constexpr int kNumDTypes = OAR_DTYPE_COUNT;

int64_t dtype_size(DType t);
const char* dtype_name(DType t);
// Accepts "float32", "int64", "bool", "bfloat16", ... (Paddle's names); throws kType otherwise.
DType parse_dtype(const std::string& name);
bool is_valid_dtype(int32_t value);
bool is_floating(DType t);  // float16, bfloat16, float32, float64
bool is_integral(DType t);  // int8..int64, uint8 (not bool)
bool is_complex(DType t);

}  // namespace oar
