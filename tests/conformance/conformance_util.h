// Shared helpers of the conformance tests: host-side values of every dtype (encoded and decoded by the
// test itself, never by the code under test), seeded input generation, and tolerant comparison.
#pragma once

#include <gtest/gtest.h>
#include <oar/core/dtype.h>
#include <oar/core/error.h>
#include <oar/core/place.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace oar_conformance {

using oar::DType;
using oar::Place;
using oar::Tensor;
using cd = std::complex<double>;
using Shape = std::vector<int64_t>;

inline constexpr DType kBool = DType::kBool, kI8 = DType::kInt8, kU8 = DType::kUInt8, kI16 = DType::kInt16,
                       kI32 = DType::kInt32, kI64 = DType::kInt64, kF16 = DType::kFloat16,
                       kBF16 = DType::kBFloat16, kF32 = DType::kFloat32, kF64 = DType::kFloat64,
                       kC64 = DType::kComplex64, kC128 = DType::kComplex128;

// ---- dtype groups (the names docs/ops.md uses) ----------------------------------------------------
inline std::vector<DType> ints() { return {kI8, kU8, kI16, kI32, kI64}; }
inline std::vector<DType> floats() { return {kF16, kBF16, kF32, kF64}; }
inline std::vector<DType> complexes() { return {kC64, kC128}; }
inline std::vector<DType> join(std::initializer_list<std::vector<DType>> groups) {
  std::vector<DType> out;
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}
inline std::vector<DType> all_dtypes() { return join({{kBool}, ints(), floats(), complexes()}); }
inline std::vector<DType> all_but_bool() { return join({ints(), floats(), complexes()}); }
inline std::vector<DType> real_dtypes() { return join({{kBool}, ints(), floats()}); }  // "all real"
inline std::vector<DType> real_not_bool() { return join({ints(), floats()}); }

inline bool is_int(DType d) { return d == kI8 || d == kU8 || d == kI16 || d == kI32 || d == kI64; }
inline bool is_flt(DType d) { return d == kF16 || d == kBF16 || d == kF32 || d == kF64; }
inline bool is_cplx(DType d) { return d == kC64 || d == kC128; }
inline std::string dname(DType d) { return oar::dtype_name(d); }

inline int64_t esize(DType d) {
  switch (d) {
    case kBool:
    case kI8:
    case kU8:
      return 1;
    case kI16:
    case kF16:
    case kBF16:
      return 2;
    case kI32:
    case kF32:
      return 4;
    case kI64:
    case kF64:
    case kC64:
      return 8;
    default:
      return 16;
  }
}
inline double int_min(DType d) {
  switch (d) {
    case kI8:
      return -128;
    case kU8:
      return 0;
    case kI16:
      return -32768;
    case kI32:
      return -2147483648.0;
    default:
      return -1e15;  // int64: keep values exactly representable as double
  }
}
inline double int_max(DType d) {
  switch (d) {
    case kI8:
      return 127;
    case kU8:
      return 255;
    case kI16:
      return 32767;
    case kI32:
      return 2147483647.0;
    default:
      return 1e15;
  }
}

inline constexpr double kPi = 3.14159265358979323846;

// v wrapped to the integer dtype d (two's complement, as numpy).
inline double wrap_int(DType d, int64_t v) {
  switch (d) {
    case kI8:
      return static_cast<int8_t>(v);
    case kU8:
      return static_cast<uint8_t>(v);
    case kI16:
      return static_cast<int16_t>(v);
    case kI32:
      return static_cast<int32_t>(v);
    default:
      return static_cast<double>(v);
  }
}

// ---- shapes ---------------------------------------------------------------------------------------
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
inline Shape unravel(int64_t i, const Shape& s) {
  Shape c(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    c[k] = s[k] ? i % s[k] : 0;
    i = s[k] ? i / s[k] : 0;
  }
  return c;
}
inline int64_t ravel(const Shape& c, const Shape& s) {
  int64_t i = 0;
  for (size_t k = 0; k < s.size(); ++k) i = i * s[k] + c[k];
  return i;
}
// Flat index into a tensor of shape `in` for output coordinates `c` under numpy broadcasting.
inline int64_t bcast_index(const Shape& c, const Shape& in) {
  int64_t i = 0;
  const size_t lead = c.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) i = i * in[k] + (in[k] == 1 ? 0 : c[lead + k]);
  return i;
}
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t ia = static_cast<int64_t>(i) - static_cast<int64_t>(n - a.size());
    const int64_t ib = static_cast<int64_t>(i) - static_cast<int64_t>(n - b.size());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}
inline std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// ---- element encoding -----------------------------------------------------------------------------
inline uint16_t f16_bits(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
inline float f16_value(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
inline uint16_t bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}
inline float bf16_value(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Values to the dtype's bytes. Integers truncate toward zero then wrap (numpy's astype); bool is != 0.
inline std::vector<uint8_t> encode(DType d, const std::vector<cd>& v) {
  const size_t es = static_cast<size_t>(esize(d));
  std::vector<uint8_t> buf(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    uint8_t* p = buf.data() + i * es;
    const double re = v[i].real(), im = v[i].imag();
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
    auto as_int = [&]() { return std::isfinite(re) ? static_cast<int64_t>(re) : int64_t{0}; };
    switch (d) {
      case kBool:
        put(static_cast<uint8_t>(re != 0 || im != 0));
        break;
      case kI8:
        put(static_cast<int8_t>(as_int()));
        break;
      case kU8:
        put(static_cast<uint8_t>(as_int()));
        break;
      case kI16:
        put(static_cast<int16_t>(as_int()));
        break;
      case kI32:
        put(static_cast<int32_t>(as_int()));
        break;
      case kI64:
        put(as_int());
        break;
      case kF16:
        put(f16_bits(static_cast<float>(re)));
        break;
      case kBF16:
        put(bf16_bits(static_cast<float>(re)));
        break;
      case kF32:
        put(static_cast<float>(re));
        break;
      case kF64:
        put(re);
        break;
      case kC64:
        put(std::complex<float>(static_cast<float>(re), static_cast<float>(im)));
        break;
      case kC128:
        put(cd(re, im));
        break;
    }
  }
  return buf;
}

inline std::vector<cd> decode(DType d, const uint8_t* p, int64_t n) {
  std::vector<cd> v(static_cast<size_t>(n));
  const size_t es = static_cast<size_t>(esize(d));
  for (int64_t i = 0; i < n; ++i, p += es) {
    auto get = [&](auto x) {
      std::memcpy(&x, p, sizeof(x));
      return x;
    };
    switch (d) {
      case kBool:
        v[i] = get(uint8_t{}) != 0 ? 1.0 : 0.0;
        break;
      case kI8:
        v[i] = get(int8_t{});
        break;
      case kU8:
        v[i] = get(uint8_t{});
        break;
      case kI16:
        v[i] = get(int16_t{});
        break;
      case kI32:
        v[i] = get(int32_t{});
        break;
      case kI64:
        v[i] = static_cast<double>(get(int64_t{}));
        break;
      case kF16:
        v[i] = f16_value(get(uint16_t{}));
        break;
      case kBF16:
        v[i] = bf16_value(get(uint16_t{}));
        break;
      case kF32:
        v[i] = get(float{});
        break;
      case kF64:
        v[i] = get(double{});
        break;
      case kC64: {
        auto c = get(std::complex<float>{});
        v[i] = cd(c.real(), c.imag());
        break;
      }
      case kC128:
        v[i] = get(cd{});
        break;
    }
  }
  return v;
}

// The values a tensor of dtype d actually holds for `v` (rounding of 16-bit floats, integer wrap).
inline std::vector<cd> quantize(DType d, const std::vector<cd>& v) {
  std::vector<uint8_t> b = encode(d, v);
  return decode(d, b.data(), static_cast<int64_t>(v.size()));
}

// ---- host tensors ---------------------------------------------------------------------------------
struct Host {
  DType dtype = kF32;
  Shape shape;
  std::vector<cd> v;        // row-major logical values
  std::vector<double> mag;  // optional: per element scale of the computation (e.g. sum of |terms|)
};

// Integer and bool results take the dtype's exact values; float results are compared with a tolerance.
inline Host finish(Host h) {
  if (is_int(h.dtype) || h.dtype == kBool) h.v = quantize(h.dtype, h.v);
  return h;
}

inline Tensor upload(const Host& h, Place place) {
  std::vector<uint8_t> b = encode(h.dtype, h.v);
  return Tensor::from_host(b.data(), oar::Dims(h.shape), h.dtype, place);
}

inline Host download(const Tensor& t) {
  Host h;
  h.dtype = t.dtype();
  h.shape = t.dims().to_vector();
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * esize(t.dtype())));
  t.copy_to_host(b.data(), b.size());
  h.v = decode(h.dtype, b.data(), t.numel());
  return h;
}

// ---- comparison -----------------------------------------------------------------------------------
struct Tol {
  double rtol, atol;
};
inline Tol tol_for(DType d) {
  switch (d) {
    case kF16:
    case kBF16:
      return {1e-2, 1e-2};
    case kF32:
    case kC64:
      return {1e-5, 1e-6};
    case kF64:
    case kC128:
      return {1e-9, 1e-12};
    default:
      return {0, 0};  // ints and bool: exact
  }
}
inline bool close(double got, double want, double scale, Tol t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (!std::isfinite(got)) return false;
  return std::fabs(got - want) <= t.atol + t.rtol * scale;
}
inline std::string value_str(DType d, cd v) {
  std::ostringstream os;
  os.precision(10);
  if (is_cplx(d))
    os << v;
  else
    os << v.real();
  return os.str();
}

// Checks dtype, shape and every value of `got` against `want`; reports the first few differences.
inline void expect_matches(const Host& want, const Host& got, const std::string& what = "output") {
  EXPECT_EQ(dname(got.dtype), dname(want.dtype)) << what << " dtype";
  ASSERT_EQ(shape_str(got.shape), shape_str(want.shape)) << what << " shape";
  ASSERT_EQ(got.v.size(), want.v.size());
  const Tol t = tol_for(want.dtype);
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.v.size(); ++i) {
    const double a = std::abs(want.v[i]);
    const double scale = std::max(std::isfinite(a) ? a : 0.0, want.mag.empty() ? 0.0 : want.mag[i]);
    const bool ok = close(got.v[i].real(), want.v[i].real(), scale, t) &&
                    close(got.v[i].imag(), want.v[i].imag(), scale, t);
    if (!ok && bad++ < 8)
      first << "  at " << shape_str(unravel(static_cast<int64_t>(i), want.shape)) << ": got "
            << value_str(got.dtype, got.v[i]) << ", want " << value_str(want.dtype, want.v[i]) << "\n";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.v.size() << " elements differ (rtol " << t.rtol
                    << ", atol " << t.atol << "):\n"
                    << first.str();
}

// ---- places ---------------------------------------------------------------------------------------
inline std::vector<std::string> place_names() {
  std::vector<std::string> out;
  for (const Place& p : oar::Runtime::get().all_places()) out.push_back(p.to_string());
  return out;
}
inline std::string sanitize(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// ---- errors ---------------------------------------------------------------------------------------
// Runs fn, expecting an oar::Error with `code` whose message contains `needle`.
template <class Fn>
::testing::AssertionResult throws_error(Fn&& fn, oar::ErrorCode code, const std::string& needle) {
  try {
    fn();
  } catch (const oar::Error& e) {
    if (e.code() != code)
      return ::testing::AssertionFailure() << "threw " << oar::error_code_name(e.code()) << " (\"" << e.what()
                                           << "\"), expected " << oar::error_code_name(code);
    if (std::string(e.what()).find(needle) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message \"" << e.what() << "\" does not mention '" << needle << "'";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-oar exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw (expected " << oar::error_code_name(code) << ")";
}

}  // namespace oar_conformance
