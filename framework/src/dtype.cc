#include <oar/core/dtype.h>
#include <oar/core/error.h>

namespace oar {

namespace {
struct DTypeInfo {
  const char* name;
  int64_t size;
};
constexpr DTypeInfo kInfo[kNumDTypes] = {
    {"bool", 1},     {"int8", 1},    {"uint8", 1},    {"int16", 2},     {"int32", 4},     {"int64", 8},
    {"float16", 2},  {"bfloat16", 2}, {"float32", 4}, {"float64", 8},  {"complex64", 8}, {"complex128", 16}};
}  // namespace

bool is_valid_dtype(int32_t v) { return v >= 0 && v < kNumDTypes; }
int64_t dtype_size(DType t) { return kInfo[static_cast<int32_t>(t)].size; }
const char* dtype_name(DType t) {
  return is_valid_dtype(static_cast<int32_t>(t)) ? kInfo[static_cast<int32_t>(t)].name : "invalid";
}

DType parse_dtype(const std::string& name) {
  for (int32_t i = 0; i < kNumDTypes; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  // Aliases Paddle and numpy users write.
  if (name == "float" || name == "fp32") return DType::kFloat32;
  if (name == "double" || name == "fp64") return DType::kFloat64;
  if (name == "half" || name == "fp16") return DType::kFloat16;
  if (name == "bf16") return DType::kBFloat16;
  if (name == "int" || name == "long") return DType::kInt64;
  OAR_THROW(ErrorCode::kType, "unknown dtype '" << name
                                                << "'; expected one of bool, int8, uint8, int16, int32, int64, "
                                                   "float16, bfloat16, float32, float64, complex64, complex128");
}

bool is_floating(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 || t == DType::kFloat64;
}
bool is_integral(DType t) {
  return t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kInt32 ||
         t == DType::kInt64;
}
bool is_complex(DType t) { return t == DType::kComplex64 || t == DType::kComplex128; }

}  // namespace oar
