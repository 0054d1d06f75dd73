// CPU kernels of the manip op family (framework/src/ops_manip.cc defines the ops): gather_nd,
// scatter_nd_add, index_put (in place), take_along_axis, put_along_axis and nonzero (sort and topk are
// in sort.cc).
#include <algorithm>
#include <numeric>
#include <utility>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;

// The indices of `index` as int64; negative ones count from the end of their axis (numpy style).
// `size_of(j)` gives the size of the axis that element j addresses.
template <class SizeOf>
std::vector<int64_t> read_indices(const char* op, const TensorView& index, SizeOf size_of) {
  const int64_t n = index.numel();
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (index.dtype() == OAR_DTYPE_INT32) {
    const int32_t* p = index.data<int32_t>();
    std::copy(p, p + n, v.begin());
  } else {
    OAR_SDK_CHECK(index.dtype() == OAR_DTYPE_INT64, OAR_ERR_TYPE,
                  op << ": index must be int32 or int64, got " << oar::sdk::dtype_name(index.dtype()));
    const int64_t* p = index.data<int64_t>();
    std::copy(p, p + n, v.begin());
  }
  for (int64_t j = 0; j < n; ++j) {
    const int64_t size = size_of(j);
    int64_t i = v[j];
    OAR_SDK_CHECK(i >= -size && i < size, OAR_ERR_OUT_OF_RANGE,
                  op << ": index " << i << " (at flat position " << j
                     << ") is out of range for an axis of size " << size);
    v[j] = i < 0 ? i + size : i;
  }
  return v;
}

// index[..., k] addressing the first k dims of a tensor with dims `d`: the element offsets (in units
// of `strides`) of each addressed sub-tensor.
std::vector<int64_t> nd_offsets(const char* op, const TensorView& index, const int64_t* d,
                                const int64_t* strides) {
  const int64_t k = index.ndim() == 0 ? 0 : index.dim(-1);
  const int64_t m = product(index.dims(), 0, index.ndim() - 1);
  std::vector<int64_t> idx = read_indices(op, index, [&](int64_t j) { return d[j % k]; });
  std::vector<int64_t> off(static_cast<size_t>(m), 0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j) off[r] += idx[r * k + j] * strides[j];
  return off;
}

void gather_nd_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), out = ctx.output(0);
  const int64_t k = index.dim(-1);
  const int64_t inner = product(x.dims(), k, x.ndim());
  std::vector<int64_t> st = contiguous_strides(x.shape());
  std::vector<int64_t> off = nd_offsets("gather_nd", index, x.dims(), st.data());
  const int64_t m = static_cast<int64_t>(off.size());
  if (out.numel() == 0) return;
  Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = xs.view().data<T>();
    T* po = os.view().data<T>();
    parallel_for(0, m, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r)
                     std::copy(px + off[r], px + off[r] + inner, po + r * inner);
                 });
  });
}

// out = x, then out[index[r]] += updates[r]; repeated indices accumulate, so rows run serially and
// the elements of one row in parallel.
void scatter_nd_add_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), upd = ctx.input(2), out = ctx.output(0);
  const int64_t k = index.dim(-1);
  const int64_t inner = product(x.dims(), k, x.ndim());
  std::vector<int64_t> st = contiguous_strides(x.shape());
  std::vector<int64_t> off = nd_offsets("scatter_nd_add", index, x.dims(), st.data());
  dispatch<NotBool>("scatter_nd_add", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = oar::sdk::compute_t<T>;
    const T* px = x.data<T>();
    const T* pu = upd.data<T>();
    T* po = out.data<T>();
    std::copy(px, px + x.numel(), po);
    for (size_t r = 0; r < off.size(); ++r) {
      T* d = po + off[r];
      const T* s = pu + static_cast<int64_t>(r) * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = static_cast<T>(C(d[i]) + C(s[i]));
    }
  });
}

// In place: x[index[r]] = value[r] (accumulate: +=). x may be a strided view (kStrided); index and
// value are contiguous (the caller makes them so).
void index_put_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), val = ctx.input(2);
  if (val.numel() == 0) return;  // nothing to write (empty tensors may carry any strides)
  OAR_SDK_CHECK(index.is_contiguous() && val.is_contiguous(), OAR_ERR_INVALID_ARGUMENT,
                "index_put: index and value must be contiguous");
  const bool acc = attr_int_or(ctx, "accumulate", 0) != 0;
  const int32_t k = static_cast<int32_t>(index.dim(-1));
  std::vector<int64_t> off = nd_offsets("index_put", index, x.dims(), x.strides());
  // Offsets of the addressed sub-tensor's elements, in row-major order.
  std::vector<int64_t> inner_off{0};
  for (int32_t d = k; d < x.ndim(); ++d) {
    std::vector<int64_t> next;
    next.reserve(inner_off.size() * x.dim(d));
    for (int64_t o : inner_off)
      for (int64_t i = 0; i < x.dim(d); ++i) next.push_back(o + i * x.stride(d));
    inner_off.swap(next);
  }
  const int64_t inner = static_cast<int64_t>(inner_off.size());
  if (!acc) {
    Retyped xs(x, bits_dtype(x.dtype())), vs(val, bits_dtype(val.dtype()));
    visit_bits(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* px = xs.view().data<T>();
      const T* pv = vs.view().data<T>();
      for (size_t r = 0; r < off.size(); ++r)
        for (int64_t i = 0; i < inner; ++i)
          px[off[r] + inner_off[i]] = pv[static_cast<int64_t>(r) * inner + i];
    });
    return;
  }
  dispatch<NotBool>("index_put", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = oar::sdk::compute_t<T>;
    T* px = x.data<T>();
    const T* pv = val.data<T>();
    for (size_t r = 0; r < off.size(); ++r)
      for (int64_t i = 0; i < inner; ++i) {
        T& d = px[off[r] + inner_off[i]];
        d = static_cast<T>(C(d) + C(pv[static_cast<int64_t>(r) * inner + i]));
      }
  });
}

// Along `axis`: outer x n x inner for x, outer x ni x inner for index.
struct AlongShape {
  int64_t outer, n, ni, inner;
};
AlongShape along_shape(const TensorView& x, const TensorView& index, int64_t axis) {
  return {product(x.dims(), 0, axis), x.dim(static_cast<int32_t>(axis)),
          index.dim(static_cast<int32_t>(axis)), product(x.dims(), axis + 1, x.ndim())};
}

// The indices are read in place (int32 or int64) inside the parallel loop: copying and checking them
// into a vector first took most of the time. A bad index sets a flag; read_indices then names it.
template <class T, class I>
void take_along(const T* px, const I* pi, T* po, const AlongShape& s, ErrorFlag& bad) {
  const int64_t n = s.n, inner = s.inner;
  const int64_t rows = s.outer * s.ni;
  if (inner == 1) {  // the last axis: rows of ni gathered elements
    parallel_for(0, s.outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(s.ni, 1)),
                 [&](int64_t lo, int64_t hi) {
                   bool fail = false;
                   for (int64_t o = lo; o < hi; ++o) {
                     const T* src = px + o * n;
                     const I* ir = pi + o * s.ni;
                     T* dst = po + o * s.ni;
                     for (int64_t j = 0; j < s.ni; ++j) {
                       int64_t k = static_cast<int64_t>(ir[j]);
                       k += k < 0 ? n : 0;
                       const bool out_of_range = static_cast<uint64_t>(k) >= static_cast<uint64_t>(n);
                       fail |= out_of_range;
                       dst[j] = src[out_of_range ? 0 : k];  // never read outside x
                     }
                   }
                   if (fail) bad.set();
                 });
    return;
  }
  parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t lo, int64_t hi) {
                 bool fail = false;
                 int64_t o = lo / s.ni, j = lo % s.ni;  // row r = (o, j): no division per row
                 for (int64_t r = lo; r < hi; ++r) {
                   const T* src = px + o * n * inner;
                   const I* ir = pi + r * inner;
                   T* dst = po + r * inner;
                   for (int64_t i = 0; i < inner; ++i) {
                     int64_t k = static_cast<int64_t>(ir[i]);
                     k += k < 0 ? n : 0;
                     const bool out_of_range = static_cast<uint64_t>(k) >= static_cast<uint64_t>(n);
                     fail |= out_of_range;
                     dst[i] = src[(out_of_range ? 0 : k) * inner + i];  // never read outside x
                   }
                   if (++j == s.ni) j = 0, ++o;
                 }
                 if (fail) bad.set();
               });
}

void take_along_axis_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), out = ctx.output(0);
  const int64_t axis = normalize_axis("take_along_axis", attr_int_or(ctx, "axis", 0), x.ndim());
  const AlongShape s = along_shape(x, index, axis);
  OAR_SDK_CHECK(index.dtype() == OAR_DTYPE_INT32 || index.dtype() == OAR_DTYPE_INT64, OAR_ERR_TYPE,
                "take_along_axis: index must be int32 or int64, got " << oar::sdk::dtype_name(index.dtype()));
  if (out.numel() == 0) return;
  if (s.n == 0)
    read_indices("take_along_axis", index, [&](int64_t) { return s.n; });  // throws: no valid index
  Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
  ErrorFlag bad;
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = xs.view().data<T>();
    T* po = os.view().data<T>();
    if (index.dtype() == OAR_DTYPE_INT32)
      take_along(px, index.data<int32_t>(), po, s, bad);
    else
      take_along(px, index.data<int64_t>(), po, s, bad);
  });
  if (bad.get()) read_indices("take_along_axis", index, [&](int64_t) { return s.n; });  // throws, naming it
}

// out = x, then out[o, index[o, j, i], i] (op)= values[o, j, i]; op: 0 assign, 1 add, 2 multiply.
// Each outer slab is written by one thread, so repeated indices apply in order.
void put_along_axis_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), index = ctx.input(1), val = ctx.input(2), out = ctx.output(0);
  const int64_t axis = normalize_axis("put_along_axis", attr_int_or(ctx, "axis", 0), x.ndim());
  const int64_t reduce = attr_int_or(ctx, "reduce", 0);
  const AlongShape s = along_shape(x, index, axis);
  std::vector<int64_t> idx = read_indices("put_along_axis", index, [&](int64_t) { return s.n; });
  dispatch<AnyType>("put_along_axis", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pv = val.data<T>();
    T* po = out.data<T>();
    std::copy(px, px + x.numel(), po);
    const int64_t slab = s.ni * s.inner;
    parallel_for(0, s.outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(slab, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t o = lo; o < hi; ++o)
                     for (int64_t j = 0; j < s.ni; ++j)
                       for (int64_t i = 0; i < s.inner; ++i) {
                         const int64_t e = (o * s.ni + j) * s.inner + i;
                         T& d = po[(o * s.n + idx[e]) * s.inner + i];
                         if (reduce == 0) {
                           d = pv[e];
                         } else if constexpr (std::is_same_v<T, bool>) {
                           d = reduce == 1 ? (d || pv[e]) : (d && pv[e]);
                         } else {
                           using C = oar::sdk::compute_t<T>;
                           d = static_cast<T>(reduce == 1 ? C(d) + C(pv[e]) : C(d) * C(pv[e]));
                         }
                       }
                 });
  });
}

// tril / triu of the last two dims: keeps elements with col - row <= diagonal (tril) or >= (triu).
template <bool kLower>
void tri_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const char* op = kLower ? "tril" : "triu";
  OAR_SDK_CHECK(x.ndim() >= 2, OAR_ERR_INVALID_ARGUMENT, op << ": x must have at least 2 dimensions");
  const int64_t m = x.dim(-2), n = x.dim(-1);
  // Beyond +-(m + n) every diagonal keeps or drops whole rows: clamped, i + diag + 1 can't overflow.
  const int64_t diag = std::min(std::max(attr_int_or(ctx, "diagonal", 0), -(m + n)), m + n);
  const int64_t rows = m == 0 || n == 0 ? 0 : x.numel() / n;
  Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
  visit_bits(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = xs.view().data<T>();
    T* po = os.view().data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const int64_t i = r % m;
                     // Columns [0, split) are kept by tril and zeroed by triu (split - 1 - i == diagonal).
                     const int64_t split = std::min(std::max<int64_t>(i + diag + (kLower ? 1 : 0), 0), n);
                     const T* s = px + r * n;
                     T* d = po + r * n;
                     if (kLower) {
                       std::copy(s, s + split, d);
                       std::fill(d + split, d + n, T(0));
                     } else {
                       std::fill(d, d + split, T(0));
                       std::copy(s + split, s + n, d + split);
                     }
                   }
                 });
  });
}

// pad: one pass over the output rows; each dim maps an output position to its source (-1: the
// constant value).
void pad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const int32_t nd = x.ndim();
  const std::vector<int64_t> p = attr_ints_or(ctx, "pads", {});
  const int64_t mode = attr_int_or(ctx, "mode", 0);
  const double value = attr_float_or(ctx, "value", 0.0);
  OAR_SDK_CHECK(p.size() == static_cast<size_t>(2 * nd), OAR_ERR_INVALID_ARGUMENT,
                "pad: pads must have 2 * rank entries");
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(nd));
  for (int32_t d = 0; d < nd; ++d) {
    const int64_t n = x.dim(d), b = p[2 * d], a = p[2 * d + 1];
    for (int64_t j = -b; j < n + a; ++j) {
      int64_t s = j;
      if (j < 0 || j >= n) {
        if (mode == 0) {
          s = -1;
        } else if (mode == 2) {
          s = std::min(std::max<int64_t>(j, 0), n - 1);
        } else if (mode == 3) {
          s = ((j % n) + n) % n;
        } else {
          const int64_t period = 2 * (n - 1);
          const int64_t k = period ? ((j % period) + period) % period : 0;
          s = k >= n ? period - k : k;
        }
      }
      maps[d].push_back(s);
    }
  }
  if (out.numel() == 0) return;
  if (nd == 0) {
    Retyped xs(x, bits_dtype(x.dtype())), os(out, bits_dtype(out.dtype()));
    std::memcpy(os.view().raw(), xs.view().raw(), static_cast<size_t>(oar::sdk::dtype_size(x.dtype())));
    return;
  }
  std::vector<int64_t> xst = contiguous_strides(x.shape());
  const int64_t on = out.dim(-1);
  const int64_t rows = out.numel() / on;
  const std::vector<int64_t>& last = maps[static_cast<size_t>(nd - 1)];
  // Output columns [lb, le) of the last axis copy x's columns [lb - b_last, le - b_last) (a negative pad
  // crops: then lb is 0 and the copy starts at column -b_last).
  const int64_t b_last = p[2 * (nd - 1)], n_last = x.dim(-1);
  const int64_t lb = std::clamp<int64_t>(b_last, 0, on), le = std::clamp<int64_t>(b_last + n_last, lb, on);
  dispatch<AnyType>("pad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T fill = from_double<T>(value);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(on, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     int64_t rest = r, off = 0;
                     bool outside = false;
                     for (int32_t d = nd - 2; d >= 0; --d) {
                       const int64_t od = out.dim(d);
                       const int64_t s = maps[d][rest % od];
                       rest /= od;
                       if (s < 0) outside = true;
                       off += s * xst[d];
                     }
                     T* dst = po + r * on;
                     if (outside) {
                       std::fill(dst, dst + on, fill);
                       continue;
                     }
                     // The last axis: the edges through its map, the inside as one copy.
                     const T* src = px + off;
                     for (int64_t j = 0; j < lb; ++j) dst[j] = last[j] < 0 ? fill : src[last[j]];
                     std::copy(src + (lb - b_last), src + (lb - b_last) + (le - lb), dst + lb);
                     for (int64_t j = le; j < on; ++j) dst[j] = last[j] < 0 ? fill : src[last[j]];
                   }
                 });
  });
}

// The coordinates of the nonzero elements, row-major; the core sized the output from attribute
// "count", which must match.
void nonzero_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const int64_t count = attr_int_or(ctx, "count", 0);
  const int32_t nd = x.ndim();
  const int64_t total = x.numel();
  std::vector<uint8_t> nz(static_cast<size_t>(total));
  dispatch<RealType>("nonzero", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t e = 0; e < total; ++e) nz[e] = convert<bool>(px[e]);
  });
  const int64_t found = std::accumulate(nz.begin(), nz.end(), int64_t{0});
  OAR_SDK_CHECK(found == count, OAR_ERR_INVALID_ARGUMENT,
                "nonzero: attribute count (" << count << ") != number of nonzero elements (" << found << ")");
  int64_t* po = out.data<int64_t>();
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  int64_t r = 0;
  for (int64_t e = 0; e < total; ++e) {
    if (nz[e]) {
      for (int32_t d = 0; d < nd; ++d) po[r * nd + d] = coord[d];
      ++r;
    }
    for (int32_t d = nd - 1; d >= 0; --d) {
      if (++coord[d] < x.dim(d)) break;
      coord[d] = 0;
    }
  }
}

}  // namespace

void register_manip_kernels(Registry& r) {
  r.add("gather_nd", all_dtypes(), &gather_nd_kernel);
  r.add("scatter_nd_add", numeric_dtypes(), &scatter_nd_add_kernel);
  r.add("index_put", all_dtypes(), &index_put_kernel, kStrided);
  r.add("take_along_axis", all_dtypes(), &take_along_axis_kernel);
  r.add("put_along_axis", all_dtypes(), &put_along_axis_kernel);
  r.add("tril", all_dtypes(), &tri_kernel<true>);
  r.add("pad", all_dtypes(), &pad_kernel);
  r.add("triu", all_dtypes(), &tri_kernel<false>);
  r.add("nonzero", real_dtypes(), &nonzero_kernel);
}

}  // namespace oar_cpu
