// cast (every source dtype to every target dtype) and copy (any strides to contiguous).
#include <array>

#include "elementwise.h"

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
// float32 <-> bfloat16/float16 (mixed precision casts every step) and bfloat16 <-> float16, contiguous:
// whole blocks through the vectorised conversions of lowp.h. Same rounding as the scalar path.
template <class From, class To>
void cast_block(const From* s, To* d, int64_t n) {
  if constexpr (std::is_same_v<From, float>) {
    from_f32(s, d, n);
  } else if constexpr (std::is_same_v<To, float>) {
    to_f32(s, d, n);
  } else {  // 16-bit to 16-bit through float32
    alignas(64) float buf[kLowpBlock];
    for (int64_t b = 0; b < n; b += kLowpBlock) {
      const int64_t m = std::min(kLowpBlock, n - b);
      to_f32(s + b, buf, m);
      from_f32(buf, d + b, m);
    }
  }
}

bool cast_lowp(const TensorView& out, const TensorView& x) {
  if (!x.is_contiguous()) return false;
  auto kind = [](int32_t d) {
    return d == OAR_DTYPE_FLOAT32 || d == OAR_DTYPE_BFLOAT16 || d == OAR_DTYPE_FLOAT16;
  };
  if (!kind(x.dtype()) || !kind(out.dtype()) || x.dtype() == out.dtype()) return false;
  dispatch<FloatType>("cast", x.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch<FloatType>("cast", out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      if constexpr ((std::is_same_v<From, float> || is_lowp_v<From>)&&(
                        std::is_same_v<To, float> || is_lowp_v<To>)&&!std::is_same_v<From, To>) {
        const From* ps = x.data<From>();
        To* pd = out.data<To>();
        parallel_for(0, x.numel(), oar::sdk::kElementwiseGrain,
                     [&](int64_t lo, int64_t hi) { cast_block(ps + lo, pd + lo, hi - lo); });
      }
    });
  });
  return true;
}

void cast_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  check_rank("cast", x);
  // The output's dtype is the `dtype` attribute; the core allocated it, so it is the one to trust.
  if (x.dtype() == out.dtype()) {
    copy_bits(out, x);
    return;
  }
  if (cast_lowp(out, x)) return;
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
