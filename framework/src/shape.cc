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
