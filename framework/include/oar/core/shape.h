// Fixed-capacity dimension lists, so a tensor's shape and strides never touch the heap.
#pragma once

#include <oar/core/error.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace oar {

inline constexpr int kMaxDims = 16;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) { assign(v.begin(), static_cast<int32_t>(v.size())); }
  explicit Dims(const std::vector<int64_t>& v) { assign(v.data(), static_cast<int32_t>(v.size())); }
  Dims(const int64_t* p, int32_t n) { assign(p, n); }

  int32_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int32_t i) const { return d_[i]; }
  int64_t& operator[](int32_t i) { return d_[i]; }
  const int64_t* data() const { return d_; }
  int64_t* data() { return d_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  void push_back(int64_t v) {
    OAR_ENFORCE(n_ < kMaxDims, ErrorCode::kInvalidArgument, "a tensor has at most " << kMaxDims << " dims");
    d_[n_++] = v;
  }
  void resize(int32_t n, int64_t fill = 0) {
    OAR_ENFORCE(n >= 0 && n <= kMaxDims, ErrorCode::kInvalidArgument,
                "a tensor has at most " << kMaxDims << " dims, got " << n);
    for (int32_t i = n_; i < n; ++i) d_[i] = fill;
    n_ = n;
  }
  int64_t numel() const {
    int64_t p = 1;
    for (int32_t i = 0; i < n_; ++i) p *= d_[i];
    return p;
  }
  bool operator==(const Dims& o) const {
    if (n_ != o.n_) return false;
    for (int32_t i = 0; i < n_; ++i)
      if (d_[i] != o.d_[i]) return false;
    return true;
  }
  bool operator!=(const Dims& o) const { return !(*this == o); }
  std::vector<int64_t> to_vector() const { return std::vector<int64_t>(d_, d_ + n_); }
  std::string to_string() const;  // "[2, 3]"

 private:
  void assign(const int64_t* p, int32_t n) {
    resize(n);
    for (int32_t i = 0; i < n; ++i) d_[i] = p[i];
  }
  int32_t n_ = 0;
  int64_t d_[kMaxDims];
};

// Row-major strides (in elements) for `dims`.
Dims contiguous_strides(const Dims& dims);

}  // namespace oar
