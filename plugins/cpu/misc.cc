// Creation (fill, arange), random (uniform, normal), concat, index_select, where, softmax, log_softmax.
#include <algorithm>
#include <array>

#include "elementwise.h"

namespace oar_cpu {
// softmax (log: log_softmax) of float32 rows over the last axis, vectorised (nn.cc).
void softmax_rows_f32(float* out, const float* x, int64_t rows, int64_t n, bool log);

namespace {

using oar::sdk::compute_t;
using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;

// ---- creation -------------------------------------------------------------------------------------
// Each creation kernel writes out[i] = gen(i) for every element, in parallel.
template <class T, class Gen>
void generate(const TensorView& out, Gen gen) {
  T* po = out.data<T>();
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = gen(i);
  });
}

void fill_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const double value = ctx.attr_float("value");
  dispatch<AnyType>("fill", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = from_double<T>(value);
    generate<T>(out, [v](int64_t) { return v; });
  });
}

bool is_integral_value(double v) { return std::floor(v) == v && std::fabs(v) < 9.0e18; }

void arange_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const double start = ctx.attr_float("start"), step = ctx.attr_float("step");
  dispatch<IntOrFloat>("arange", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_int_v<T>) {
      if (is_integral_value(start) && is_integral_value(step)) {  // exact, even beyond 2^53
        const uint64_t s0 = static_cast<uint64_t>(static_cast<int64_t>(start));
        const uint64_t d = static_cast<uint64_t>(static_cast<int64_t>(step));
        generate<T>(out, [=](int64_t i) { return T(static_cast<int64_t>(s0 + uint64_t(i) * d)); });
        return;
      }
    }
    generate<T>(out, [=](int64_t i) { return from_double<T>(start + static_cast<double>(i) * step); });
  });
}

// The largest value of T below hi: uniform's result, rounded to T, must stay inside [min, max).
template <class T>
T largest_below(double hi) {
  using C = compute_t<T>;
  T t = T(static_cast<C>(hi));
  if (static_cast<double>(static_cast<C>(t)) < hi) return t;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return std::nextafter(t, -std::numeric_limits<T>::infinity());
  } else {  // 16-bit floats: one step down in the bit pattern
    if ((t.bits & 0x7fffu) == 0)
      t.bits = 0x8001u;  // +-0 -> the smallest negative subnormal
    else if (t.bits & 0x8000u)
      ++t.bits;
    else
      --t.bits;
    return t;
  }
}

// Counter-based, so every device gives the same numbers (docs/ops.md, "Creation"): element i uses
// counter offset + i. 16-bit floats are drawn as float32 and rounded; a value that rounds up to max
// becomes the largest value of the dtype below max.
void uniform_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const double lo = attr_float_or(ctx, "min", -1.0), hi = attr_float_or(ctx, "max", 1.0);
  const uint64_t seed = static_cast<uint64_t>(ctx.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(attr_int_or(ctx, "offset", 0));
  const double range = hi - lo;
  dispatch<FloatType>("uniform", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const bool clamp = range > 0;
    const T top = clamp ? largest_below<T>(hi) : T(Cm(0));
    generate<T>(out, [=](int64_t i) {
      const uint64_t c = offset + static_cast<uint64_t>(i);
      double u;
      if constexpr (std::is_same_v<T, double>)
        u = oar::sdk::uniform01(seed, c);  // top 53 bits
      else
        u = static_cast<float>(oar::sdk::random_bits(seed, c) >> 40) * (1.0f / 16777216.0f);  // top 24
      const T v = T(static_cast<Cm>(lo + range * u));
      return (clamp && static_cast<double>(static_cast<Cm>(v)) >= hi) ? top : v;
    });
  });
}

void normal_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  const double mean = attr_float_or(ctx, "mean", 0.0), stddev = attr_float_or(ctx, "std", 1.0);
  const uint64_t seed = static_cast<uint64_t>(ctx.attr_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(attr_int_or(ctx, "offset", 0));
  dispatch<FloatType>("normal", out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    generate<T>(out, [=](int64_t i) {
      const double z = oar::sdk::standard_normal(seed, offset + static_cast<uint64_t>(i));
      return T(static_cast<compute_t<T>>(mean + stddev * z));
    });
  });
}

// ---- data movement -----------------------------------------------------------------------------------
// dst (with dst_strides, same dims as src) = src (any strides). Element types move bit for bit.
template <class T>
void copy_to_strided(T* dst, const int64_t* dst_strides, const TensorView& src) {
  using oar::sdk::kMaxDims;
  std::array<std::array<int64_t, kMaxDims>, 2> st{};
  for (int32_t i = 0; i < src.ndim(); ++i) st[0][i] = dst_strides[i], st[1][i] = src.strides()[i];
  oar::sdk::StridedLoop<2> loop(src.ndim(), src.dims(), st);
  const T* ps = src.data<T>();
  const int64_t sd = loop.inner_stride(0), ss = loop.inner_stride(1);
  parallel_for(0, loop.numel, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      T* d = dst + off[0];
      const T* s = ps + off[1];
      if (sd == 1 && ss == 1)
        std::copy(s, s + n, d);
      else
        for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
    });
  });
}

// Inputs may be strided: each is copied straight into its slab of the output, no extra pass.
void concat_kernel(KernelContext& ctx) {
  TensorView out = ctx.output(0);
  check_rank("concat", out);
  const int32_t nd = out.ndim();
  OAR_SDK_CHECK(nd > 0, OAR_ERR_INVALID_ARGUMENT, "concat: inputs must have at least 1 dimension");
  const int64_t axis = normalize_axis("concat", attr_int_or(ctx, "axis", 0), nd);
  const std::vector<int64_t> ostrides = contiguous_strides(out.shape());
  Retyped os(out, bits_dtype(out.dtype()));
  int64_t pos = 0;  // where along `axis` the next input starts
  for (int32_t k = 0; k < ctx.num_inputs(); ++k) {
    TensorView x = ctx.input(k);
    if (!x.defined()) continue;
    OAR_SDK_CHECK(x.dtype() == out.dtype() && x.ndim() == nd, OAR_ERR_INVALID_ARGUMENT,
                  "concat: input " << k << " does not match the output's dtype or rank");
    for (int32_t d = 0; d < nd; ++d)
      OAR_SDK_CHECK(d == axis || x.dim(d) == out.dim(d), OAR_ERR_INVALID_ARGUMENT,
                    "concat: input " << k << " has size " << x.dim(d) << " in dimension " << d
                                     << ", expected " << out.dim(d));
    OAR_SDK_CHECK(pos + x.dim(axis) <= out.dim(axis), OAR_ERR_INVALID_ARGUMENT,
                  "concat: inputs are longer than the output along axis " << axis);
    Retyped xs(x, bits_dtype(x.dtype()));
    visit_bits(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      copy_to_strided<T>(os.view().data<T>() + pos * ostrides[axis], ostrides.data(), xs.view());
    });
    pos += x.dim(axis);
  }
}

void index_select_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), out = ctx.output(0);
  OAR_SDK_CHECK(x.ndim() > 0, OAR_ERR_INVALID_ARGUMENT, "index_select: x must have at least 1 dimension");
  const int64_t axis = normalize_axis("index_select", attr_int_or(ctx, "axis", 0), x.ndim());
  OAR_SDK_CHECK(index.ndim() <= 1, OAR_ERR_INVALID_ARGUMENT,
                "index_select: index must be 1-D, got rank " << index.ndim());
  const int64_t ni = index.numel();
  const int64_t n = x.dim(static_cast<int32_t>(axis));
  // Indices as int64, each checked before any read.
  std::vector<int64_t> idx(static_cast<size_t>(ni));
  if (index.dtype() == OAR_DTYPE_INT32) {
    const int32_t* p = index.data<int32_t>();
    std::copy(p, p + ni, idx.begin());
  } else {
    OAR_SDK_CHECK(index.dtype() == OAR_DTYPE_INT64, OAR_ERR_TYPE,
                  "index_select: index must be int32 or int64, got " << oar::sdk::dtype_name(index.dtype()));
    const int64_t* p = index.data<int64_t>();
    std::copy(p, p + ni, idx.begin());
  }
  for (int64_t j = 0; j < ni; ++j)
    OAR_SDK_CHECK(idx[j] >= 0 && idx[j] < n, OAR_ERR_OUT_OF_RANGE,
                  "index_select: index " << idx[j] << " (at position " << j << ") is out of range for axis "
                                         << axis << " of size " << n << " (valid: 0 to " << n - 1 << ")");
  const int64_t outer = product(x.dims(), 0, axis);
  const int64_t inner = product(x.dims(), axis + 1, x.ndim());
  Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = xs.view().data<T>();
    T* po = os.view().data<T>();
    parallel_for(0, outer * ni, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const int64_t o = r / ni, j = r % ni;
                     const T* s = px + (o * n + idx[j]) * inner;
                     std::copy(s, s + inner, po + r * inner);
                   }
                 });
  });
}

// index_add(x, index, source): out = x, then out[..., index[j], ...] += source[..., j, ...] along axis.
// Repeated indices accumulate, so the loop over j stays serial; rows of the outer dims run in parallel.
void index_add_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), src = ctx.input(2), out = ctx.output(0);
  const int64_t axis = normalize_axis("index_add", attr_int_or(ctx, "axis", 0), x.ndim());
  const int64_t ni = index.numel(), n = x.dim(static_cast<int32_t>(axis));
  std::vector<int64_t> idx(static_cast<size_t>(ni));
  if (index.dtype() == OAR_DTYPE_INT32) {
    const int32_t* p = index.data<int32_t>();
    std::copy(p, p + ni, idx.begin());
  } else {
    const int64_t* p = index.data<int64_t>();
    std::copy(p, p + ni, idx.begin());
  }
  for (int64_t j = 0; j < ni; ++j)
    OAR_SDK_CHECK(idx[j] >= 0 && idx[j] < n, OAR_ERR_OUT_OF_RANGE,
                  "index_add: index " << idx[j] << " (at position " << j << ") is out of range for axis "
                                      << axis << " of size " << n << " (valid: 0 to " << n - 1 << ")");
  const int64_t outer = product(x.dims(), 0, axis);
  const int64_t inner = product(x.dims(), axis + 1, x.ndim());
  const bool ok = oar::sdk::visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = oar::sdk::compute_t<T>;
      const T* px = x.data<T>();
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      std::copy(px, px + x.numel(), po);
      parallel_for(0, outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(ni * inner, 1)),
                   [&](int64_t lo, int64_t hi) {
                     for (int64_t o = lo; o < hi; ++o)
                       for (int64_t j = 0; j < ni; ++j) {
                         T* d = po + (o * n + idx[j]) * inner;
                         const T* s = ps + (o * ni + j) * inner;
                         for (int64_t k = 0; k < inner; ++k) d[k] = static_cast<T>(C(d[k]) + C(s[k]));
                       }
                   });
    }
  });
  OAR_SDK_CHECK(ok && x.dtype() != OAR_DTYPE_BOOL, OAR_ERR_TYPE,
                "index_add: dtype " << oar::sdk::dtype_name(x.dtype()) << " is not supported");
}

// where(condition, x, y): pure selection, so elements move as same-size integers.
void where_kernel(KernelContext& ctx) {
  TensorView cond = ctx.input(0), x = ctx.input(1), y = ctx.input(2), out = ctx.output(0);
  check_rank("where", out);
  OAR_SDK_CHECK(cond.dtype() == OAR_DTYPE_BOOL, OAR_ERR_TYPE,
                "where: condition must be bool, got " << oar::sdk::dtype_name(cond.dtype()));
  OAR_SDK_CHECK(
      x.dtype() == y.dtype() && x.dtype() == out.dtype(), OAR_ERR_TYPE,
      "where: x is " << oar::sdk::dtype_name(x.dtype()) << " but y is " << oar::sdk::dtype_name(y.dtype()));
  Retyped xs(x, bits_dtype(x.dtype())), ys(y, bits_dtype(y.dtype())), os(out, bits_dtype(out.dtype()));
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    oar::sdk::ternary_loop<T, bool, T, T>(os.view(), cond, xs.view(), ys.view(),
                                          [](bool c, T a, T b) { return c ? a : b; });
  });
}

// ---- softmax ---------------------------------------------------------------------------------------
// Numerically stable: exp(x - max) over the axis. x is [outer, n, inner] (contiguous).
template <class T, bool kLog>
void softmax_impl(T* po, const T* px, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;                                  // float for float32, double for float64
  using S = double;                                        // the sum of exponentials
  auto bigger = [](C v, C m) { return v > m || v != v; };  // NaN wins and then sticks
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) {
      softmax_rows_f32(po, px, outer, n, kLog);
      return;
    }
  }
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 4096 / n), [&](int64_t lo, int64_t hi) {
      std::vector<C> e(static_cast<size_t>(n));
      for (int64_t o = lo; o < hi; ++o) {
        const T* r = px + o * n;
        T* w = po + o * n;
        C m = C(r[0]);
        for (int64_t i = 1; i < n; ++i)
          if (bigger(C(r[i]), m)) m = C(r[i]);
        S s = 0;
        for (int64_t i = 0; i < n; ++i) {
          e[i] = std::exp(C(r[i]) - m);
          s += e[i];
        }
        if constexpr (kLog) {
          const C ls = C(std::log(s));
          for (int64_t i = 0; i < n; ++i) w[i] = T(C(r[i]) - m - ls);
        } else {
          const S inv = S(1) / s;
          for (int64_t i = 0; i < n; ++i) w[i] = T(C(S(e[i]) * inv));
        }
      }
    });
    return;
  }
  // inner > 1: work on blocks of columns, each reduced along the (strided) axis.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(0, outer * blocks, 1, [&](int64_t lo, int64_t hi) {
    C m[kBlock];
    S s[kBlock];
    for (int64_t u = lo; u < hi; ++u) {
      const int64_t o = u / blocks, j0 = (u % blocks) * kBlock, nb = std::min(kBlock, inner - j0);
      const T* base = px + o * n * inner + j0;
      T* wbase = po + o * n * inner + j0;
      for (int64_t j = 0; j < nb; ++j) m[j] = C(base[j]), s[j] = 0;
      for (int64_t i = 1; i < n; ++i)
        for (int64_t j = 0; j < nb; ++j)
          if (bigger(C(base[i * inner + j]), m[j])) m[j] = C(base[i * inner + j]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < nb; ++j) s[j] += std::exp(C(base[i * inner + j]) - m[j]);
      for (int64_t j = 0; j < nb; ++j) s[j] = kLog ? std::log(s[j]) : S(1) / s[j];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < nb; ++j) {
          const C v = C(base[i * inner + j]) - m[j];
          if constexpr (kLog)
            wbase[i * inner + j] = T(C(v - C(s[j])));
          else
            wbase[i * inner + j] = T(C(S(std::exp(v)) * s[j]));
        }
    }
  });
}

template <bool kLog>
void softmax_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const char* name = kLog ? "log_softmax" : "softmax";
  const int64_t axis_attr = attr_int_or(ctx, "axis", -1);
  if (x.ndim() == 0) {  // a scalar: softmax is 1, log_softmax 0 (NaN stays NaN)
    dispatch<FloatType>(name, x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const C v = C(x.data<T>()[0]);
      out.data<T>()[0] = T(v != v ? v : C(kLog ? 0 : 1));
    });
    return;
  }
  const int64_t axis = normalize_axis(name, axis_attr, x.ndim());
  const int64_t outer = product(x.dims(), 0, axis), n = x.dim(static_cast<int32_t>(axis));
  const int64_t inner = product(x.dims(), axis + 1, x.ndim());
  if (n == 0 || outer == 0 || inner == 0) return;
  dispatch<FloatType>(name, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_lowp_v<T>) {  // 16-bit floats: the float32 kernel between vectorised conversions
      if (inner == 1) {            // rows: a chunk at a time, in cache
        lowp_rows(x.data<T>(), out.data<T>(), outer, n,
                  [&](const float* xf, float* of, int64_t, int64_t rows) {
                    softmax_impl<float, kLog>(of, xf, rows, n, 1);
                  });
        return;
      }
      const AsF32<T> fx(0, x.data<T>(), x.numel());
      const F32Buffer fo(1, x.numel());
      softmax_impl<float, kLog>(fo.data(), fx.data(), outer, n, inner);
      store_f32(fo.data(), out.data<T>(), x.numel());
    } else {
      softmax_impl<T, kLog>(out.data<T>(), x.data<T>(), outer, n, inner);
    }
  });
}

}  // namespace

void register_misc_kernels(Registry& r) {
  using oar::sdk::float_dtypes;
  r.add("fill", all_dtypes(), &fill_kernel);
  r.add("arange", int_float_dtypes(), &arange_kernel);
  r.add("uniform", float_dtypes(), &uniform_kernel);
  r.add("normal", float_dtypes(), &normal_kernel);
  r.add("concat", all_dtypes(), &concat_kernel, kStrided);
  r.add("index_select", all_dtypes(), &index_select_kernel);
  r.add("index_add",
        oar::sdk::join({oar::sdk::int_dtypes(), oar::sdk::float_dtypes(), oar::sdk::complex_dtypes()}),
        &index_add_kernel);
  r.add("where", all_dtypes(), &where_kernel, kStrided);
  r.add("softmax", float_dtypes(), &softmax_kernel<false>);
  r.add("log_softmax", float_dtypes(), &softmax_kernel<true>);
}

}  // namespace oar_cpu
