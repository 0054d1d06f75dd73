// cast (every source dtype to every target dtype) and copy (any strides to contiguous).
#include <array>

#include "elementwise.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace oar_cpu {
namespace {

using oar::sdk::compute_t;
using oar::sdk::kMaxDims;
using oar::sdk::parallel_for;

// ---- copy ----------------------------------------------------------------------------------------
// A transposed-like input (its unit stride is not the innermost dimension) read element by element
// misses the cache on every read; copying 64x64 tiles keeps both sides in cache (measured 2-4x
// faster for a 4096x4096 float transpose). Returns false for other stride patterns.
template <class T>
bool copy_tiled(const TensorView& out, const TensorView& in) {
  const int32_t nd = in.ndim();
  if (nd < 2 || in.numel() < 4096) return false;
  std::array<std::array<int64_t, kMaxDims>, 2> st{};
  const std::vector<int64_t> os = contiguous_strides(out.shape());
  for (int32_t i = 0; i < nd; ++i) st[0][i] = os[i], st[1][i] = in.strides()[i];
  const oar::sdk::StridedLoop<2> loop(nd, in.dims(), st);  // dims coalesced, size-1 dims dropped
  const int last = loop.ndim - 1;
  if (last < 1 || loop.strides[1][last] == 1) return false;
  int k = -1;  // the input's unit-stride dimension
  for (int d = 0; d < last; ++d)
    if (loop.strides[1][d] == 1) k = d;
  if (k < 0) return false;
  const int64_t dk = loop.dims[k], dl = loop.dims[last];
  const int64_t out_sk = loop.strides[0][k], in_sl = loop.strides[1][last];
  int64_t odims[kMaxDims], oout[kMaxDims], oin[kMaxDims];  // the remaining (outer) dimensions
  int on = 0;
  for (int d = 0; d < last; ++d)
    if (d != k) odims[on] = loop.dims[d], oout[on] = loop.strides[0][d], oin[on] = loop.strides[1][d], ++on;
  constexpr int64_t kTile = 64;
  const int64_t tk = (dk + kTile - 1) / kTile, tl = (dl + kTile - 1) / kTile;
  const int64_t units = loop.numel / (dk * dl) * tk * tl;
  const T* pi = in.data<T>();
  T* po = out.data<T>();
  parallel_for(0, units, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u) {
      int64_t t = u;
      const int64_t bl = t % tl;
      t /= tl;
      const int64_t bk = t % tk;
      t /= tk;
      int64_t off_o = 0, off_i = 0;
      for (int d = on - 1; d >= 0; --d) {
        const int64_t idx = t % odims[d];
        t /= odims[d];
        off_o += idx * oout[d], off_i += idx * oin[d];
      }
      const int64_t k0 = bk * kTile, k1 = std::min(dk, k0 + kTile);
      const int64_t l0 = bl * kTile, l1 = std::min(dl, l0 + kTile);
      for (int64_t kk = k0; kk < k1; ++kk) {
        T* o = po + off_o + kk * out_sk;
        const T* i = pi + off_i + kk;
        for (int64_t ll = l0; ll < l1; ++ll) o[ll] = i[ll * in_sl];
      }
    }
  });
  return true;
}

// Moves elements bit for bit: 2-byte floats travel as int16, so no NaN payload is rewritten.
void copy_bits(const TensorView& out, const TensorView& x) {
  Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!copy_tiled<T>(os.view(), xs.view())) oar::sdk::strided_copy<T>(os.view(), xs.view());
  });
}

// assign(dst, src): writes src (broadcast) into dst's own memory; dst is an input by design.
void assign_kernel(KernelContext& ctx) {
  TensorView dst = ctx.input(0), src = ctx.input(1);
  OAR_SDK_CHECK(dst.dtype() == src.dtype(), OAR_ERR_TYPE, "assign: dst and src dtypes differ");
  Retyped ds(dst, bits_dtype(dst.dtype())), ss(src, bits_dtype(src.dtype()));
  visit_bits(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    oar::sdk::assign_loop<T>(ds.view(), ss.view());
  });
}

void copy_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("copy", x);
  OAR_SDK_CHECK(x.dtype() == out.dtype(), OAR_ERR_TYPE, "copy: output dtype differs from x");
  copy_bits(out, x);
}

// ---- cast ----------------------------------------------------------------------------------------
#if defined(__x86_64__)
// float32 <-> float16 with the F16C instructions (mixed precision casts every step); chosen at run
// time, since the plugin is built for baseline x86-64. Same round-to-nearest-even as float16.
__attribute__((target("avx,f16c"))) void f32_to_f16_f16c(const float* s, oar::sdk::float16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) d[i] = oar::sdk::float16(s[i]);
}
__attribute__((target("avx,f16c"))) void f16_to_f32_f16c(const oar::sdk::float16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = float(s[i]);
}
bool has_f16c() {
  static const bool v = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return v;
}

bool cast_f16c(const TensorView& out, const TensorView& x) {
  if (!has_f16c() || !x.is_contiguous()) return false;
  using oar::sdk::float16;
  const bool down = x.dtype() == OAR_DTYPE_FLOAT32 && out.dtype() == OAR_DTYPE_FLOAT16;
  const bool up = x.dtype() == OAR_DTYPE_FLOAT16 && out.dtype() == OAR_DTYPE_FLOAT32;
  if (!down && !up) return false;
  parallel_for(0, x.numel(), oar::sdk::kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    if (down)
      f32_to_f16_f16c(x.data<float>() + lo, out.data<float16>() + lo, hi - lo);
    else
      f16_to_f32_f16c(x.data<float16>() + lo, out.data<float>() + lo, hi - lo);
  });
  return true;
}
#else
bool cast_f16c(const TensorView&, const TensorView&) { return false; }
#endif

void cast_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("cast", x);
  // The output's dtype is the `dtype` attribute; the core allocated it, so it is the one to trust.
  if (x.dtype() == out.dtype()) {
    copy_bits(out, x);
    return;
  }
  if (cast_f16c(out, x)) return;
  dispatch<AnyType>("cast", x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch<AnyType>("cast", out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      oar::sdk::unary_loop<To, From>(out, x, [](compute_t<From> v) { return convert<To>(From(v)); });
    });
  });
}

}  // namespace

void register_cast_kernels(Registry& r) {
  r.add("cast", all_dtypes(), &cast_kernel, kStrided);
  r.add("copy", all_dtypes(), &copy_kernel, kStrided);
  r.add("assign", all_dtypes(), &assign_kernel, kStrided);
}

}  // namespace oar_cpu
