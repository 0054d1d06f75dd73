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
  // The element count. A shape whose count exceeds 2^63-1 throws (kInvalidArgument): no tensor can
  // have one, as checked_numel() refuses it where tensors and views are made.
  int64_t numel() const {
    int64_t p = 1;
    for (int32_t i = 0; i < n_; ++i)
      if (__builtin_mul_overflow(p, d_[i], &p)) return numel_overflowed();
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
  int64_t numel_overflowed() const;  // 0 when a dim is 0, else throws
  void assign(const int64_t* p, int32_t n) {
    resize(n);
    for (int32_t i = 0; i < n; ++i) d_[i] = p[i];
  }
  int32_t n_ = 0;
  int64_t d_[kMaxDims];
};

// Row-major strides (in elements) for `dims`.
Dims contiguous_strides(const Dims& dims);

// ---- checked size arithmetic ---------------------------------------------------------------------------
// Every element count, byte size, stride and dimension the core derives from user input is computed
// with these: an overflow is a kInvalidArgument error (Python ValueError) naming the op, never a
// wrapped value (docs/python.md, "Sizes and bad input").
[[noreturn]] void throw_size_overflow(const char* op, const char* what, int64_t a, char sign, int64_t b);

// a * b, or an error "<op>: <what> overflows int64 (a * b)".
inline int64_t checked_mul(int64_t a, int64_t b, const char* op, const char* what = "a size") {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_size_overflow(op, what, a, '*', b);
  return r;
}
// a + b, or an error "<op>: <what> overflows int64 (a + b)".
inline int64_t checked_add(int64_t a, int64_t b, const char* op, const char* what = "a size") {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_size_overflow(op, what, a, '+', b);
  return r;
}

// The element count of a tensor of shape `dims`, checked: every dim is >= 0 and the product of the
// non-zero dims (which bounds every contiguous stride) is at most 2^63-1. The error names `op` and the
// shape: "zeros: shape [1099511627776, 1073741824] has more than 2^63-1 elements".
int64_t checked_numel(const Dims& dims, const char* op);

}  // namespace oar
