// Iteration helpers for kernels: numpy broadcasting, N-ary elementwise loops over strided tensors
// (dimensions coalesced, a tight inner loop, parallel over the element range), and reductions over
// any set of axes. Everything works on host-addressable data: a device plugin calls these on the
// pointers it translated itself.
#pragma once

#include <oar/sdk/kernel.h>
#include <oar/sdk/parallel.h>
#include <oar/sdk/types.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace oar::sdk {

inline constexpr int kMaxDims = 16;

// Strides of `t` laid against an output of rank `out_ndim` with dims `out_dims`: right-aligned,
// 0 where `t` broadcasts (its dim is 1 or missing).
inline std::array<int64_t, kMaxDims> broadcast_strides(const TensorView& t, int32_t out_ndim,
                                                        const int64_t* out_dims) {
  std::array<int64_t, kMaxDims> s{};
  int32_t lead = out_ndim - t.ndim();
  OAR_SDK_CHECK(lead >= 0 && out_ndim <= kMaxDims, OAR_ERR_INVALID_ARGUMENT,
                "cannot broadcast a rank-" << t.ndim() << " tensor to rank " << out_ndim);
  for (int32_t i = 0; i < out_ndim; ++i) {
    if (i < lead) continue;
    int64_t d = t.dims()[i - lead];
    OAR_SDK_CHECK(d == out_dims[i] || d == 1, OAR_ERR_INVALID_ARGUMENT,
                  "dimension " << i << " of size " << d << " does not broadcast to " << out_dims[i]);
    s[i] = d == 1 ? 0 : t.strides()[i - lead];
  }
  return s;
}

// The loop nest over N operands sharing one shape, with dimensions of size 1 dropped and adjacent
// dimensions merged wherever every operand allows it.
template <int N> struct StridedLoop {
  int ndim = 0;
  int64_t dims[kMaxDims];
  int64_t strides[N][kMaxDims];
  int64_t numel = 1;

  StridedLoop(int32_t nd, const int64_t* d, const std::array<std::array<int64_t, kMaxDims>, N>& st) {
    for (int32_t i = 0; i < nd; ++i) {
      numel *= d[i];
      if (d[i] == 1) continue;
      if (ndim > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k)
          if (strides[k][ndim - 1] != st[k][i] * d[i]) merge = false;
        if (merge) {
          dims[ndim - 1] *= d[i];
          for (int k = 0; k < N; ++k) strides[k][ndim - 1] = st[k][i];
          continue;
        }
      }
      dims[ndim] = d[i];
      for (int k = 0; k < N; ++k) strides[k][ndim] = st[k][i];
      ++ndim;
    }
    if (ndim == 0) {  // a scalar: one row of one element
      dims[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
      ndim = 1;
    }
  }

  int64_t inner_stride(int k) const { return strides[k][ndim - 1]; }

  // Calls row(offsets, count) for each innermost run inside elements [begin, end) (in row-major
  // order of the shape); offsets are in elements per operand, the run continues with inner_stride.
  template <typename Row> void for_range(int64_t begin, int64_t end, Row&& row) const {
    if (begin >= end) return;
    int64_t idx[kMaxDims];
    int64_t rem = begin;
    for (int d = ndim - 1; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
    }
    int64_t off[N];
    for (int k = 0; k < N; ++k) {
      off[k] = 0;
      for (int d = 0; d < ndim; ++d) off[k] += idx[d] * strides[k][d];
    }
    int64_t pos = begin;
    const int last = ndim - 1;
    while (pos < end) {
      int64_t n = std::min(dims[last] - idx[last], end - pos);
      row(off, n);
      pos += n;
      for (int k = 0; k < N; ++k) off[k] += n * strides[k][last];
      idx[last] += n;
      for (int d = last; d > 0 && idx[d] == dims[d]; --d) {  // carry into outer dimensions
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < N; ++k) off[k] += strides[k][d - 1] - dims[d] * strides[k][d];
      }
    }
  }
};

// ---- streaming stores ---------------------------------------------------------------------------
// Outputs far larger than the caches are written with non-temporal stores: a normal store first reads
// the destination line (write-allocate), so an elementwise op would move 4 bytes per 3 it needs.
inline constexpr int64_t kStreamingBytes = int64_t{8} << 20;  // total output size that uses them
inline constexpr int64_t kStreamBlock = 2048;                  // elements computed per block

inline void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // streaming stores are weakly ordered: publish them before the loop ends
#endif
}

// Runs body(o, lo, hi) over [lo, hi) with `o` pointing at where element lo's output goes: straight
// into `out` for small outputs, else into a cache-resident block that is then streamed out.
template <typename Out, typename Body> void write_range(Out* out, int64_t lo, int64_t hi, int64_t total, Body&& body) {
  if (total * static_cast<int64_t>(sizeof(Out)) < kStreamingBytes) {
    body(out + lo, lo, hi);
    return;
  }
  alignas(64) Out block[kStreamBlock];
  for (int64_t b = lo; b < hi; b += kStreamBlock) {
    int64_t e = std::min(hi, b + kStreamBlock);
    body(block, b, e);
    stream_copy(out + b, block, static_cast<size_t>(e - b) * sizeof(Out));
  }
  stream_fence();
}

// out[i] = f(a[i]) with out contiguous and `a` of the same shape, any strides.
template <typename Out, typename A, typename F>
void unary_loop(const TensorView& out, const TensorView& a, F f) {
  Out* po = out.data<Out>();
  const A* pa = a.data<A>();
  if (a.is_contiguous()) {
    const int64_t n = out.numel();
    parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      write_range(po, b, e, n, [&](Out* o, int64_t lo, int64_t hi) {
        const A* x = pa + lo;
        for (int64_t i = 0; i < hi - lo; ++i) o[i] = static_cast<Out>(f(static_cast<compute_t<A>>(x[i])));
      });
    });
    return;
  }
  std::array<std::array<int64_t, kMaxDims>, 2> st{};
  for (int32_t i = 0; i < out.ndim(); ++i) st[1][i] = a.strides()[i];
  int64_t expect = 1;
  for (int32_t i = out.ndim() - 1; i >= 0; --i) st[0][i] = expect, expect *= out.dims()[i];
  StridedLoop<2> loop(out.ndim(), out.dims(), st);
  const int64_t sa = loop.inner_stride(1);
  parallel_for(0, loop.numel, kElementwiseGrain, [&](int64_t b, int64_t e) {
    loop.for_range(b, e, [&](const int64_t* off, int64_t n) {
      Out* o = po + off[0];
      const A* x = pa + off[1];
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(static_cast<compute_t<A>>(x[i * sa])));
    });
  });
}

// out[i] = f(a[i], b[i]) with numpy broadcasting of a and b to out's shape; out contiguous.
template <typename Out, typename A, typename B, typename F>
void binary_loop(const TensorView& out, const TensorView& a, const TensorView& b, F f) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  Out* po = out.data<Out>();
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const int64_t n_out = out.numel();
  // Fast paths: same-shape contiguous operands, or one of them a single element.
  const bool a_full = a.numel() == n_out && a.is_contiguous();
  const bool b_full = b.numel() == n_out && b.is_contiguous();
  if ((a_full || a.numel() == 1) && (b_full || b.numel() == 1) && n_out > 0) {
    parallel_for(0, n_out, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      write_range(po, lo, hi, n_out, [&](Out* o, int64_t first, int64_t last) {
        const int64_t n = last - first;
        if (a_full && b_full) {
          const A* x = pa + first;
          const B* y = pb + first;
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(CA(x[i]), CB(y[i])));
        } else if (a_full) {
          const A* x = pa + first;
          const CB y = CB(pb[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(CA(x[i]), y));
        } else if (b_full) {
          const B* y = pb + first;
          const CA x = CA(pa[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(x, CB(y[i])));
        } else {
          const Out v = static_cast<Out>(f(CA(pa[0]), CB(pb[0])));
          for (int64_t i = 0; i < n; ++i) o[i] = v;
        }
      });
    });
    return;
  }
  std::array<std::array<int64_t, kMaxDims>, 3> st{};
  int64_t expect = 1;
  for (int32_t i = out.ndim() - 1; i >= 0; --i) st[0][i] = expect, expect *= out.dims()[i];
  st[1] = broadcast_strides(a, out.ndim(), out.dims());
  st[2] = broadcast_strides(b, out.ndim(), out.dims());
  StridedLoop<3> loop(out.ndim(), out.dims(), st);
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2);
  parallel_for(0, loop.numel, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      Out* o = po + off[0];
      const A* x = pa + off[1];
      const B* y = pb + off[2];
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(CA(x[i]), CB(y[i])));
      } else if (sa == 1 && sb == 0) {
        const CB yv = CB(y[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(CA(x[i]), yv));
      } else if (sa == 0 && sb == 1) {
        const CA xv = CA(x[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(xv, CB(y[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<Out>(f(CA(x[i * sa]), CB(y[i * sb])));
      }
    });
  });
}

// out[i] = f(a[i], b[i], c[i]) with broadcasting; used by `where`.
template <typename Out, typename A, typename B, typename C, typename F>
void ternary_loop(const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView& c, F f) {
  Out* po = out.data<Out>();
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  std::array<std::array<int64_t, kMaxDims>, 4> st{};
  int64_t expect = 1;
  for (int32_t i = out.ndim() - 1; i >= 0; --i) st[0][i] = expect, expect *= out.dims()[i];
  st[1] = broadcast_strides(a, out.ndim(), out.dims());
  st[2] = broadcast_strides(b, out.ndim(), out.dims());
  st[3] = broadcast_strides(c, out.ndim(), out.dims());
  StridedLoop<4> loop(out.ndim(), out.dims(), st);
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2), sc = loop.inner_stride(3);
  parallel_for(0, loop.numel, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      Out* o = po + off[0];
      const A* x = pa + off[1];
      const B* y = pb + off[2];
      const C* z = pc + off[3];
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<Out>(f(compute_t<A>(x[i * sa]), compute_t<B>(y[i * sb]), compute_t<C>(z[i * sc])));
    });
  });
}

// Writes `src` (broadcast to dst's shape) into `dst`, whose strides may be anything but overlapping.
// The one elementwise helper whose destination is strided: in-place ops write through it.
template <typename T> void assign_loop(const TensorView& dst, const TensorView& src) {
  std::array<std::array<int64_t, kMaxDims>, 2> st{};
  for (int32_t i = 0; i < dst.ndim(); ++i) st[0][i] = dst.strides()[i];
  st[1] = broadcast_strides(src, dst.ndim(), dst.dims());
  StridedLoop<2> loop(dst.ndim(), dst.dims(), st);
  T* pd = dst.data<T>();
  const T* ps = src.data<T>();
  const int64_t sd = loop.inner_stride(0), ss = loop.inner_stride(1);
  parallel_for(0, loop.numel, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    loop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      T* d = pd + off[0];
      const T* x = ps + off[1];
      for (int64_t i = 0; i < n; ++i) d[i * sd] = x[i * ss];
    });
  });
}

// Copies a strided tensor into contiguous `out` (same dtype and shape).
template <typename T> void strided_copy(const TensorView& out, const TensorView& in) {
  unary_loop<T, T>(out, in, [](compute_t<T> v) { return v; });
}

// A reduction over `axes` (sorted, unique) of `in` into contiguous `out`, whose elements are the kept
// dimensions in order. Op provides:
//   using acc_t; acc_t init() const; acc_t step(acc_t, compute_t<T> value, int64_t index) const;
//   acc_t merge(acc_t, acc_t) const; Out finish(acc_t, int64_t count) const;
// `index` is the position inside the reduced extent (row-major over the reduced axes), for arg ops.
template <typename Out, typename T, typename Op>
void reduce_loop(const TensorView& out, const TensorView& in, const std::vector<int64_t>& axes,
                 const Op& op) {
  using Acc = typename Op::acc_t;
  const int32_t nd = in.ndim();
  bool reduced[kMaxDims] = {};
  for (int64_t a : axes) reduced[a] = true;
  // Kept dims, then reduced dims, each keeping their order.
  std::array<std::array<int64_t, kMaxDims>, 1> kst{}, rst{};
  int64_t kdims[kMaxDims], rdims[kMaxDims];
  int kn = 0, rn = 0;
  int64_t red_count = 1;
  for (int32_t i = 0; i < nd; ++i) {
    if (reduced[i]) {
      rdims[rn] = in.dims()[i];
      rst[0][rn++] = in.strides()[i];
      red_count *= in.dims()[i];
    } else {
      kdims[kn] = in.dims()[i];
      kst[0][kn++] = in.strides()[i];
    }
  }
  const T* pin = in.data<T>();
  Out* po = out.data<Out>();
  const int64_t n_out = out.numel();
  // Merging reduced dims keeps the row-major index order, so `index` stays meaningful.
  StridedLoop<1> rloop(rn, rdims, rst);
  StridedLoop<1> kloop(kn, kdims, kst);
  const int64_t rs = rloop.inner_stride(0);

  auto reduce_range = [&](const T* base, int64_t lo, int64_t hi, Acc acc) {
    rloop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
      const T* p = base + off[0];
      // position of this run inside the reduced extent
      int64_t start = lo;
      for (int64_t i = 0; i < n; ++i) acc = op.step(acc, compute_t<T>(p[i * rs]), start + i);
      lo += n;
    });
    return acc;
  };

  if (n_out >= max_threads() || red_count < kElementwiseGrain) {
    // Parallel over outputs, each reduced serially.
    parallel_for(0, n_out, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(red_count, 1)),
                 [&](int64_t lo, int64_t hi) {
                   kloop.for_range(lo, hi, [&](const int64_t* off, int64_t n) {
                     const int64_t ks = kloop.inner_stride(0);
                     for (int64_t j = 0; j < n; ++j) {
                       int64_t o = lo++;
                       Acc acc = reduce_range(pin + off[0] + j * ks, 0, red_count, op.init());
                       po[o] = op.finish(acc, red_count);
                     }
                   });
                 });
    return;
  }
  // Few outputs, long reductions: split each reduction across threads and merge partials.
  for (int64_t o = 0; o < n_out; ++o) {
    int64_t base_off = 0;
    kloop.for_range(o, o + 1, [&](const int64_t* off, int64_t) { base_off = off[0]; });
    const int nt = max_threads();
    std::vector<Acc> partial(nt, op.init());
    std::vector<char> used(nt, 0);
    int64_t chunk = (red_count + nt - 1) / nt;
    parallel_for(0, nt, 1, [&](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) {
        int64_t lo = t * chunk, hi = std::min(red_count, lo + chunk);
        if (lo >= hi) continue;
        partial[t] = reduce_range(pin + base_off, lo, hi, op.init());
        used[t] = 1;
      }
    });
    Acc acc = op.init();
    for (int t = 0; t < nt; ++t)
      if (used[t]) acc = op.merge(acc, partial[t]);
    po[o] = op.finish(acc, red_count);
  }
}

}  // namespace oar::sdk
