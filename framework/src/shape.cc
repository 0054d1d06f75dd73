#include <oar/core/shape.h>

#include <sstream>

namespace oar {

std::string Dims::to_string() const {
  std::ostringstream os;
  os << '[';
  for (int32_t i = 0; i < n_; ++i) os << (i ? ", " : "") << d_[i];
  os << ']';
  return os.str();
}

int64_t Dims::numel_overflowed() const {
  for (int32_t i = 0; i < n_; ++i)
    if (d_[i] == 0) return 0;
  OAR_THROW(ErrorCode::kInvalidArgument, "shape " << to_string() << " has more than 2^63-1 elements");
}

void throw_size_overflow(const char* op, const char* what, int64_t a, char sign, int64_t b) {
  OAR_THROW(ErrorCode::kInvalidArgument,
            op << ": " << what << " overflows int64 (" << a << ' ' << sign << ' ' << b << ')');
}

int64_t checked_numel(const Dims& dims, const char* op) {
  int64_t n = 1;
  bool empty = false;
  for (int32_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    OAR_ENFORCE(d >= 0, ErrorCode::kInvalidArgument,
                op << ": shape " << dims.to_string() << " has a negative dimension at axis " << i);
    if (d == 0)
      empty = true;
    else
      OAR_ENFORCE(!__builtin_mul_overflow(n, d, &n), ErrorCode::kInvalidArgument,
                  op << ": shape " << dims.to_string() << " has more than 2^63-1 elements");
  }
  return empty ? 0 : n;
}

Dims contiguous_strides(const Dims& dims) {
  Dims s;
  s.resize(dims.size());
  int64_t acc = 1;
  for (int32_t i = dims.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= dims[i] > 0 ? dims[i] : 1;
  }
  return s;
}

}  // namespace oar
