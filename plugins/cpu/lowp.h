// Internal: 16-bit float (bfloat16, float16) <-> float32 conversion of whole arrays, vectorised and
// chosen at run time (the .so is built for baseline x86-64), and the elementwise loops that use it.
//
// Every 16-bit kernel here works the same way: convert a block of up to kLowpBlock elements to float32
// (16 lanes at a time), compute in float32, convert the block back. No element is converted on its own,
// and the float32 loop in between is the same code (and speed) as the float32 kernel's.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <type_traits>

#include "cpu_common.h"

namespace oar_cpu {

using oar::sdk::bfloat16;
using oar::sdk::float16;

// n elements; the rounding is round-to-nearest-even, NaN stays NaN (quiet), inf stays inf, and the
// results are bit for bit those of the SDK's scalar bfloat16/float16 constructors (denormals kept).
void to_f32(const bfloat16* src, float* dst, int64_t n);
void to_f32(const float16* src, float* dst, int64_t n);
void from_f32(const float* src, bfloat16* dst, int64_t n);
void from_f32(const float* src, float16* dst, int64_t n);
inline void to_f32(const float* src, float* dst, int64_t n) { std::copy(src, src + n, dst); }
inline void from_f32(const float* src, float* dst, int64_t n) { std::copy(src, src + n, dst); }

// Which instruction set the conversions use on this CPU ("avx512", "avx2" or "scalar").
const char* lowp_isa();

// Whether a 16-bit oneDNN primitive whose implementation is `impl` (its impl_info_str) should run, or
// the float32 primitive between vectorised conversions instead. Measured on AVX512-BF16 without AMX
// (docs/amp.md): oneDNN's bf16 matmul and convolution are 1.3-1.7x slower than its float32 ones, so
// the native ones run only on AMX (and never oneDNN's reference code). OAR_CPU_LOWP_NATIVE=1 / 0
// forces native / float32 for every 16-bit matmul and conv.
bool use_native_lowp(const char* impl);

template <class T>
inline constexpr bool is_lowp_v = std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

inline constexpr int64_t kLowpBlock = 512;  // floats per block: 2 KiB per operand, stays in L1

// Loads n elements of a 16-bit tensor, `stride` apart (0: one value broadcast), into float32 `buf`.
template <class T>
inline void load_f32(const T* p, int64_t stride, float* buf, int64_t n) {
  if (stride == 1) {
    to_f32(p, buf, n);
  } else if (stride == 0) {
    std::fill(buf, buf + n, float(p[0]));
  } else {  // gather the raw bits, then convert them as one block
    alignas(64) T tmp[kLowpBlock];
    for (int64_t i = 0; i < n; ++i) tmp[i] = p[i * stride];
    to_f32(tmp, buf, n);
  }
}

// out[i] = f(a[i]) for 16-bit T: out contiguous, `a` of the same shape with any strides.
template <class T, class F>
void lowp_unary_loop(const TensorView& out, const TensorView& a, F f) {
  T* po = out.data<T>();
  const T* pa = a.data<T>();
  auto run = [&](T* o, const T* x, int64_t sx, int64_t n) {
    alignas(64) float buf[kLowpBlock];
    for (int64_t b = 0; b < n; b += kLowpBlock) {
      const int64_t m = std::min(kLowpBlock, n - b);
      load_f32(x + b * sx, sx, buf, m);
      for (int64_t i = 0; i < m; ++i) buf[i] = f(buf[i]);
      from_f32(buf, o + b, m);
    }
  };
  if (a.is_contiguous()) {
    oar::sdk::parallel_for(0, out.numel(), oar::sdk::kElementwiseGrain,
                           [&](int64_t lo, int64_t hi) { run(po + lo, pa + lo, 1, hi - lo); });
    return;
  }
  std::array<std::array<int64_t, oar::sdk::kMaxDims>, 2> st{};
  for (int32_t i = 0; i < out.ndim(); ++i) st[1][i] = a.strides()[i];
  const std::vector<int64_t> os = contiguous_strides(out.shape());
  for (int32_t i = 0; i < out.ndim(); ++i) st[0][i] = os[i];
  oar::sdk::StridedLoop<2> loop(out.ndim(), out.dims(), st);
  const int64_t sa = loop.inner_stride(1);
  oar::sdk::parallel_for(0, loop.numel, oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) { run(po + off[0], pa + off[1], sa, n); });
  });
}

// out[i] = f(a[i], b[i]) for 16-bit T with numpy broadcasting; out contiguous.
template <class T, class F>
void lowp_binary_loop(const TensorView& out, const TensorView& a, const TensorView& b, F f) {
  T* po = out.data<T>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t n_out = out.numel();
  auto run = [&](T* o, const T* x, int64_t sx, const T* y, int64_t sy, int64_t n) {
    alignas(64) float bx[kLowpBlock], by[kLowpBlock];
    for (int64_t k = 0; k < n; k += kLowpBlock) {
      const int64_t m = std::min(kLowpBlock, n - k);
      load_f32(x + k * sx, sx, bx, m);
      load_f32(y + k * sy, sy, by, m);
      for (int64_t i = 0; i < m; ++i) bx[i] = f(bx[i], by[i]);
      from_f32(bx, o + k, m);
    }
  };
  const bool a_full = a.numel() == n_out && a.is_contiguous();
  const bool b_full = b.numel() == n_out && b.is_contiguous();
  if ((a_full || a.numel() == 1) && (b_full || b.numel() == 1) && n_out > 0) {
    const int64_t sa = a_full ? 1 : 0, sb = b_full ? 1 : 0;
    oar::sdk::parallel_for(0, n_out, oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      run(po + lo, pa + lo * sa, sa, pb + lo * sb, sb, hi - lo);
    });
    return;
  }
  std::array<std::array<int64_t, oar::sdk::kMaxDims>, 3> st{};
  const std::vector<int64_t> os = contiguous_strides(out.shape());
  for (int32_t i = 0; i < out.ndim(); ++i) st[0][i] = os[i];
  st[1] = oar::sdk::broadcast_strides(a, out.ndim(), out.dims());
  st[2] = oar::sdk::broadcast_strides(b, out.ndim(), out.dims());
  oar::sdk::StridedLoop<3> loop(out.ndim(), out.dims(), st);
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2);
  oar::sdk::parallel_for(0, loop.numel, oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      run(po + off[0], pa + off[1], sa, pb + off[2], sb, n);
    });
  });
}

// The plugin's elementwise loops: the 16-bit float path above when input and output are the same
// 16-bit type, the SDK's loops otherwise.
template <class Out, class A, class F>
void cpu_unary_loop(const TensorView& out, const TensorView& a, F f) {
  if constexpr (is_lowp_v<A> && std::is_same_v<Out, A>) {
    lowp_unary_loop<A>(out, a, [&](float v) { return static_cast<float>(f(v)); });
  } else {
    oar::sdk::unary_loop<Out, A>(out, a, f);
  }
}
template <class Out, class A, class B, class F>
void cpu_binary_loop(const TensorView& out, const TensorView& a, const TensorView& b, F f) {
  if constexpr (is_lowp_v<A> && std::is_same_v<Out, A> && std::is_same_v<B, A>) {
    lowp_binary_loop<A>(out, a, b, [&](float x, float y) { return static_cast<float>(f(x, y)); });
  } else {
    oar::sdk::binary_loop<Out, A, B>(out, a, b, f);
  }
}

// The calling thread's float32 scratch buffer number `slot` (0..5), at least n floats, 64-byte aligned.
// Kept between calls: the first touch of fresh pages (a page fault per 4 KiB) measured costing more
// than converting the data into them (docs/amp.md).
float* lowp_scratch(int slot, int64_t n);

// n floats for one kernel call: the thread's scratch `slot` up to kScratchMax floats (64 MiB), a
// temporary allocation beyond (not kept).
class F32Buffer {
 public:
  static constexpr int64_t kScratchMax = int64_t{16} << 20;
  F32Buffer(int slot, int64_t n) {
    if (n <= kScratchMax) {
      ptr_ = lowp_scratch(slot, n);
    } else {
      own_.reset(new float[static_cast<size_t>(n)]);
      ptr_ = own_.get();
    }
  }
  float* data() const { return ptr_; }

 private:
  std::unique_ptr<float[]> own_;
  float* ptr_ = nullptr;
};

// A contiguous 16-bit (or float32) array as float32: `data()` points at the input itself for float32,
// else at a converted copy in scratch `slot`.
template <class T>
class AsF32 {
 public:
  AsF32(int slot, const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      ptr_ = p;
    } else {
      buf_.emplace(slot, n);
      float* d = buf_->data();
      oar::sdk::parallel_for(0, n, 65536, [&](int64_t lo, int64_t hi) { to_f32(p + lo, d + lo, hi - lo); });
      ptr_ = d;
    }
  }
  const float* data() const { return ptr_; }

 private:
  std::optional<F32Buffer> buf_;
  const float* ptr_ = nullptr;
};

// A contiguous [outer, n] 16-bit array through a float32 row kernel, in chunks of rows that stay in
// cache: each chunk is converted into the thread's scratch slots 0 (input) and 1 (output), then
// body(x_f32, out_f32, first_row, rows) runs on it, then its output is converted back. Chunks run in
// parallel; a parallel_for inside body then runs inline.
template <class T, class Body>
void lowp_rows(const T* x, T* out, int64_t outer, int64_t n, Body body) {
  const int64_t rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1));  // ~64 KiB of floats
  const int64_t chunks = (outer + rows - 1) / rows;
  oar::sdk::parallel_for(0, chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const int64_t r0 = c * rows, nr = std::min(outer, r0 + rows) - r0, m = nr * n;
      float* xf = lowp_scratch(0, m);
      float* of = lowp_scratch(1, m);
      to_f32(x + r0 * n, xf, m);
      body(xf, of, r0, nr);
      from_f32(of, out + r0 * n, m);
    }
  });
}

// Converts n floats into a contiguous T array in parallel.
template <class T>
void store_f32(const float* src, T* dst, int64_t n) {
  oar::sdk::parallel_for(0, n, 65536, [&](int64_t lo, int64_t hi) { from_f32(src + lo, dst + lo, hi - lo); });
}

}  // namespace oar_cpu
