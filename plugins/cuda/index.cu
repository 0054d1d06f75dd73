// Indexing kernels: index_select (nn.Embedding's lookup), index_add, gather_nd, scatter_nd_add,
// index_put (in place, x strided), take_along_axis, put_along_axis, concat, pad.
// Pure moves work on the element's bits (one kernel per element size, not per dtype). Additions with
// possibly repeated indices use atomicAdd (float16/bfloat16/float32/float64/int32/int64; other dtypes
// are declined to the CPU), so their rounding order may vary from run to run.
// Out-of-range indices: a GPU kernel cannot raise at the call. Gathers write 0 for such an element and
// scatters skip it; nothing outside the tensors is ever touched. The CPU kernels raise IndexError
// (README.md, "Reductions, scans, sort, fused nn, indexing").
#include <cstring>

#include "family_common.cuh"

namespace oar_cuda {
namespace {

using fam::load_index;
using fam::wrap_index;

inline unsigned grid_of(const sdk::KernelContext& c, int64_t n) {
  return static_cast<unsigned>(grid_for(n, c.device()));
}

// ---- atomics ----------------------------------------------------------------------------------------------
// *p = op(*p, v) atomically, op: add (bool: or) or multiply (bool: and), in T's arithmetic (16-bit floats
// through float, ints wrapping), as the CPU kernels. Native atomicAdd where the hardware has it
// (float32/float64/int32/int64; float16/bfloat16 where gpu_runtime.h says so), else a compare-and-swap loop;
// 1- and 2-byte elements swap the aligned 4-byte word holding them (allocations are at least 4-byte aligned
// and padded).
enum AtomicOp { kAtomicAdd, kAtomicMul };

template <typename T, int kOp>
OAR_D T combine(T a, T b) {
  if constexpr (std::is_same_v<T, bool>)
    return kOp == kAtomicAdd ? (a || b) : (a && b);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(kOp == kAtomicAdd ? a + b : a * b);
  else
    return from_acc<T>(kOp == kAtomicAdd ? to_acc(a) + to_acc(b) : to_acc(a) * to_acc(b));
}

template <typename T, int kOp>
__device__ void atomic_cas_update(T* p, T v) {
  if constexpr (sizeof(T) == 8) {
    auto* w = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *w, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 8);
      const T next = combine<T, kOp>(cur, v);
      unsigned long long bits;
      memcpy(&bits, &next, 8);
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 4) {
    auto* w = reinterpret_cast<unsigned int*>(p);
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 4);
      const T next = combine<T, kOp>(cur, v);
      unsigned int bits;
      memcpy(&bits, &next, 4);
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else {  // 1 or 2 bytes inside an aligned 4-byte word
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    auto* w = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    const unsigned mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const unsigned cur_bits = (assumed & mask) >> shift;
      T cur;
      memcpy(&cur, &cur_bits, sizeof(T));  // little-endian: the low bytes
      const T next = combine<T, kOp>(cur, v);
      unsigned next_bits = 0;
      memcpy(&next_bits, &next, sizeof(T));
      old = atomicCAS(w, assumed, (assumed & ~mask) | ((next_bits << shift) & mask));
    } while (old != assumed);
  }
}

template <typename T, int kOp>
__device__ __forceinline__ void atomic_apply(T* p, T v) {
  if constexpr (kOp == kAtomicAdd && std::is_same_v<T, int64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // wraps
  else if constexpr (kOp == kAtomicAdd &&
                     (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>))
    atomicAdd(p, v);
  else if constexpr (kOp == kAtomicAdd && OAR_GPU_HAS_ATOMIC_ADD_16BIT_FLOAT &&
                     (std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>))
    atomicAdd(p, v);  // gpu_runtime.h says whether the vendor has it
  else
    atomic_cas_update<T, kOp>(p, v);
}
template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  atomic_apply<T, kAtomicAdd>(p, v);
}

// out = x (both contiguous, same size), enqueued.
void copy_input(sdk::KernelContext& c, const sdk::TensorView& x, const sdk::TensorView& out, const char* op) {
  const uint64_t bytes = static_cast<uint64_t>(x.numel()) * sdk::dtype_size(x.dtype());
  if (bytes) gpu_check(gpuMemcpyAsync(out.raw(), x.raw(), bytes, gpuMemcpyDefault, stream_of(c)), op);
}

void need_index(const sdk::TensorView& index) {
  if (!fam::is_index_dtype(index.dtype()))
    sdk::decline("index must be int32 or int64 (the CPU reports others)");
}

// ---- index_select / index_add ---------------------------------------------------------------------------
// out [outer, ni, inner] = x [outer, n, inner] at index along the middle dim (no negative indices, as
// the CPU kernel).
template <typename U>
__global__ void index_select_k(const U* __restrict__ x, const void* __restrict__ index, bool i64,
                               U* __restrict__ out, int64_t total, int64_t n, int64_t ni, int64_t inner,
                               fam::BadIndex bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e % inner, j = (e / inner) % ni, o = e / (inner * ni);
    const int64_t idx = load_index(index, i64, j);
    const bool ok = idx >= 0 && idx < n;
    if (!ok) bad.report(idx, n);
    out[e] = ok ? x[(o * n + idx) * inner + k] : U(0);
  }
}

// The same for long rows (inner >= 128, e.g. embedding lookups): a block per output row, so the index
// is read and the row located once per row instead of once per element.
template <typename U>
__global__ void index_select_rows(const U* __restrict__ x, const void* __restrict__ index, bool i64,
                                  U* __restrict__ out, int64_t rows, int64_t n, int64_t ni, int64_t inner,
                                  fam::BadIndex bad) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t idx = load_index(index, i64, row % ni), o = row / ni;
    const bool ok = idx >= 0 && idx < n;
    if (!ok && threadIdx.x == 0) bad.report(idx, n);
    const U* src = x + (o * n + (ok ? idx : 0)) * inner;
    U* dst = out + row * inner;
    for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) dst[k] = ok ? src[k] : U(0);
  }
}

void index_select_supports(sdk::KernelContext& c) {
  need_index(c.input(1));
  if (c.input(0).ndim() == 0) sdk::decline("x must have at least 1 dimension (the CPU reports it)");
  if (c.input(1).ndim() > 1) sdk::decline("index must be 1-D (the CPU reports it)");
}

void index_select_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), out = c.output(0);
  const int64_t axis = fam::normalize_axis("index_select", c.attr_int_or("axis", 0), x.ndim());
  const int64_t n = x.dim(static_cast<int32_t>(axis)), ni = index.numel();
  const int64_t inner = fam::product(x.dims(), axis + 1, x.ndim());
  const int64_t total = out.numel();
  if (total == 0) return;
  fam::dispatch_bits(x.dtype(), "index_select", [&](auto tag) {
    using U = typename decltype(tag)::type;
    const bool i64 = index.dtype() == OAR_DTYPE_INT64;
    if (inner >= 128)
      index_select_rows<U><<<fam::blocks_for(total / inner), kThreads, 0, stream_of(c)>>>(
          static_cast<const U*>(x.raw()), index.raw(), i64, static_cast<U*>(out.raw()), total / inner, n, ni,
          inner, fam::bad_index(c, kErrIndexSelect));
    else
      index_select_k<U><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
          static_cast<const U*>(x.raw()), index.raw(), i64, static_cast<U*>(out.raw()), total, n, ni, inner,
          fam::bad_index(c, kErrIndexSelect));
  });
  check_launch("index_select");
}

// out[o, index[j], k] += src[o, j, k]
template <typename T>
__global__ void index_add_k(T* __restrict__ out, const void* __restrict__ index, bool i64,
                            const T* __restrict__ src, int64_t total, int64_t n, int64_t ni, int64_t inner,
                            fam::BadIndex bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = e % inner, j = (e / inner) % ni, o = e / (inner * ni);
    const int64_t idx = load_index(index, i64, j);
    if (idx >= 0 && idx < n)
      atomic_add(out + (o * n + idx) * inner + k, src[e]);
    else
      bad.report(idx, n);
  }
}

void index_add_supports(sdk::KernelContext& c) {
  need_index(c.input(1));
  if (c.input(0).ndim() == 0) sdk::decline("x must have at least 1 dimension");
  if (c.input(1).ndim() > 1) sdk::decline("index must be 1-D");
}

void index_add_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), src = c.input(2), out = c.output(0);
  const int64_t axis = fam::normalize_axis("index_add", c.attr_int_or("axis", 0), x.ndim());
  const int64_t n = x.dim(static_cast<int32_t>(axis)), ni = index.numel();
  const int64_t inner = fam::product(x.dims(), axis + 1, x.ndim());
  const int64_t outer = fam::product(x.dims(), 0, axis);
  const int64_t total = outer * ni * inner;
  if (src.numel() != total)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "index_add: source has " + std::to_string(src.numel()) +
                                                   " elements, expected " + std::to_string(total));
  copy_input(c, x, out, "index_add");
  if (total == 0) return;
  dispatch_real(x.dtype(), "index_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    index_add_k<T><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
        static_cast<T*>(out.raw()), index.raw(), index.dtype() == OAR_DTYPE_INT64,
        static_cast<const T*>(src.raw()), total, n, ni, inner, fam::bad_index(c, kErrIndexAdd));
  });
  check_launch("index_add");
}

// ---- gather_nd / scatter_nd_add / index_put ---------------------------------------------------------------
// The first k dims of the addressed tensor (sizes and strides) and the rest (the sub-tensor each index
// row addresses).
struct NdGeom {
  int k, rest;
  int64_t dims[sdk::kMaxDims], strides[sdk::kMaxDims];    // the k addressed dims
  int64_t rdims[sdk::kMaxDims], rstrides[sdk::kMaxDims];  // the remaining dims
  int64_t inner;                                          // elements per sub-tensor
  fam::BadIndex bad;                                      // where a bad index is reported

  // Offset of index row r, or -1 when one of its indices is out of range.
  OAR_D int64_t row_offset(const void* index, bool i64, int64_t r) const {
    int64_t off = 0;
    for (int j = 0; j < k; ++j) {
      const int64_t raw = load_index(index, i64, r * k + j);
      const int64_t i = wrap_index(raw, dims[j]);
      if (i < 0) {
        bad.report(raw, dims[j]);
        return -1;
      }
      off += i * strides[j];
    }
    return off;
  }
  OAR_D int64_t inner_offset(int64_t i) const {
    int64_t off = 0;
    for (int d = rest - 1; d >= 0; --d) {
      off += (i % rdims[d]) * rstrides[d];
      i /= rdims[d];
    }
    return off;
  }
};

// x's geometry with its own strides (`contiguous`: row-major strides instead).
NdGeom nd_geom(const sdk::TensorView& x, int64_t k, bool contiguous) {
  NdGeom g{};
  g.k = static_cast<int>(k);
  g.rest = x.ndim() - g.k;
  int64_t st = 1;
  int64_t cs[sdk::kMaxDims];
  for (int32_t d = x.ndim() - 1; d >= 0; --d) {
    cs[d] = st;
    st *= x.dim(d);
  }
  g.inner = 1;
  for (int32_t d = 0; d < x.ndim(); ++d) {
    const int64_t s = contiguous ? cs[d] : x.stride(d);
    if (d < k) {
      g.dims[d] = x.dim(d);
      g.strides[d] = s;
    } else {
      g.rdims[d - k] = x.dim(d);
      g.rstrides[d - k] = s;
      g.inner *= x.dim(d);
    }
  }
  return g;
}

// index[..., k] with k <= x's rank; int32/int64.
void nd_supports(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1);
  need_index(index);
  if (index.ndim() == 0) sdk::decline("index must have at least 1 dimension (the CPU reports it)");
  if (index.dim(-1) > x.ndim()) sdk::decline("index's last dim exceeds x's rank (the CPU reports it)");
  if (x.ndim() > sdk::kMaxDims) sdk::decline("rank above the gpu plugin's limit");
}

template <typename U>
__global__ void gather_nd_k(const U* __restrict__ x, const void* __restrict__ index, bool i64,
                            U* __restrict__ out, int64_t total, NdGeom g) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / g.inner, i = e % g.inner;
    const int64_t off = g.row_offset(index, i64, r);
    out[e] = off >= 0 ? x[off + g.inner_offset(i)] : U(0);
  }
}

void gather_nd_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), out = c.output(0);
  NdGeom g = nd_geom(x, index.dim(-1), true);
  g.bad = fam::bad_index(c, kErrGatherNd);
  const int64_t total = out.numel();
  if (total == 0) return;
  fam::dispatch_bits(x.dtype(), "gather_nd", [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather_nd_k<U><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
        static_cast<const U*>(x.raw()), index.raw(), index.dtype() == OAR_DTYPE_INT64,
        static_cast<U*>(out.raw()), total, g);
  });
  check_launch("gather_nd");
}

// x[row r's sub-tensor, element i] (+)= v[r * inner + i]; x addressed through g (its strides).
template <typename T, bool kAdd>
__global__ void scatter_nd_k(T* __restrict__ x, const void* __restrict__ index, bool i64,
                             const T* __restrict__ v, int64_t total, NdGeom g) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / g.inner, i = e % g.inner;
    const int64_t off = g.row_offset(index, i64, r);
    if (off < 0) continue;
    if constexpr (kAdd)
      atomic_add(x + off + g.inner_offset(i), v[e]);
    else
      x[off + g.inner_offset(i)] = v[e];
  }
}

void scatter_nd_add_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), upd = c.input(2), out = c.output(0);
  NdGeom g = nd_geom(x, index.dim(-1), true);
  g.bad = fam::bad_index(c, kErrScatterNdAdd);
  const int64_t rows = index.numel() / std::max<int64_t>(index.dim(-1), 1);
  const int64_t total = index.dim(-1) == 0 ? upd.numel() : rows * g.inner;
  copy_input(c, x, out, "scatter_nd_add");
  if (total == 0) return;
  if (upd.numel() != total)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "scatter_nd_add: updates have " + std::to_string(upd.numel()) +
                                                   " elements, expected " + std::to_string(total));
  dispatch_real(x.dtype(), "scatter_nd_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    scatter_nd_k<T, true><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
        static_cast<T*>(out.raw()), index.raw(), index.dtype() == OAR_DTYPE_INT64,
        static_cast<const T*>(upd.raw()), total, g);
  });
  check_launch("scatter_nd_add");
}

void scatter_nd_add_supports(sdk::KernelContext& c) {
  nd_supports(c);
  if (c.input(1).dim(-1) == 0) sdk::decline("an empty index row (k = 0) goes to the CPU");
}

// In place on x (any strides); index and value contiguous. Repeated indices: with accumulate they add up;
// without, one of the values wins (the CPU: the last).
void index_put_supports(sdk::KernelContext& c) {
  nd_supports(c);
  if (c.input(1).dim(-1) == 0) sdk::decline("an empty index row (k = 0) goes to the CPU");
  if (!c.input(1).is_contiguous() || !c.input(2).is_contiguous())
    sdk::decline("index and value must be contiguous (the CPU reports it)");
  if (c.attr_int_or("accumulate", 0) != 0 && c.input(0).dtype() == OAR_DTYPE_BOOL)
    sdk::decline("accumulate on bool: the CPU kernel reports it");
}

void index_put_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), val = c.input(2);
  if (val.numel() == 0) return;
  NdGeom g = nd_geom(x, index.dim(-1), false);
  g.bad = fam::bad_index(c, kErrIndexPut);
  const int64_t rows = index.numel() / index.dim(-1);
  const int64_t total = rows * g.inner;
  if (val.numel() != total)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "index_put: value has " + std::to_string(val.numel()) +
                                                   " elements, expected " + std::to_string(total));
  const bool i64 = index.dtype() == OAR_DTYPE_INT64;
  if (c.attr_int_or("accumulate", 0) != 0) {
    dispatch_real(x.dtype(), "index_put", [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatter_nd_k<T, true><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
          static_cast<T*>(x.raw()), index.raw(), i64, static_cast<const T*>(val.raw()), total, g);
    });
  } else {
    fam::dispatch_bits(x.dtype(), "index_put", [&](auto tag) {
      using U = typename decltype(tag)::type;
      scatter_nd_k<U, false><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
          static_cast<U*>(x.raw()), index.raw(), i64, static_cast<const U*>(val.raw()), total, g);
    });
  }
  check_launch("index_put");
}

// ---- take_along_axis / put_along_axis ---------------------------------------------------------------------
// x [outer, n, inner], index (and values) [outer, ni, inner]; negative indices count from the end.
template <typename U>
__global__ void take_along_k(const U* __restrict__ x, const void* __restrict__ index, bool i64,
                             U* __restrict__ out, int64_t total, int64_t n, int64_t ni, int64_t inner,
                             fam::BadIndex bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e % inner, o = e / (inner * ni);
    const int64_t raw = load_index(index, i64, e);
    const int64_t idx = wrap_index(raw, n);
    if (idx < 0) bad.report(raw, n);
    out[e] = idx >= 0 ? x[(o * n + idx) * inner + i] : U(0);
  }
}

// kMode: 0 assign (bits), 1 add, 2 multiply.
template <typename T, int kMode>
__global__ void put_along_k(T* __restrict__ out, const void* __restrict__ index, bool i64,
                            const T* __restrict__ v, int64_t total, int64_t n, int64_t ni, int64_t inner,
                            fam::BadIndex bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e % inner, o = e / (inner * ni);
    const int64_t raw = load_index(index, i64, e);
    const int64_t idx = wrap_index(raw, n);
    if (idx < 0) {
      bad.report(raw, n);
      continue;
    }
    T* d = out + (o * n + idx) * inner + i;
    if constexpr (kMode == 0)
      *d = v[e];
    else
      atomic_apply<T, kMode == 1 ? kAtomicAdd : kAtomicMul>(d, v[e]);
  }
}

// index must have x's dims except along axis (the CPU kernel assumes it too).
void along_supports(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1);
  need_index(index);
  if (x.ndim() == 0 || index.ndim() != x.ndim())
    sdk::decline("index must have x's rank (the CPU reports it)");
  const int64_t axis = fam::normalize_axis("take_along_axis", c.attr_int_or("axis", 0), x.ndim());
  for (int32_t d = 0; d < x.ndim(); ++d)
    if (d != axis && index.dim(d) != x.dim(d)) sdk::decline("index must match x outside axis");
}

void put_along_supports(sdk::KernelContext& c) {
  along_supports(c);
  const int64_t reduce = c.attr_int_or("reduce", 0);
  if (reduce < 0 || reduce > 2) sdk::decline("unknown reduce mode (the CPU reports it)");
  if (c.input(2).numel() != c.input(1).numel())
    sdk::decline("values must have index's shape (already broadcast)");
}

void take_along_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), out = c.output(0);
  const int64_t axis = fam::normalize_axis("take_along_axis", c.attr_int_or("axis", 0), x.ndim());
  const int64_t n = x.dim(static_cast<int32_t>(axis)), ni = index.dim(static_cast<int32_t>(axis));
  const int64_t inner = fam::product(x.dims(), axis + 1, x.ndim());
  const int64_t total = out.numel();
  if (total == 0) return;
  fam::dispatch_bits(x.dtype(), "take_along_axis", [&](auto tag) {
    using U = typename decltype(tag)::type;
    take_along_k<U><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
        static_cast<const U*>(x.raw()), index.raw(), index.dtype() == OAR_DTYPE_INT64,
        static_cast<U*>(out.raw()), total, n, ni, inner, fam::bad_index(c, kErrTakeAlongAxis));
  });
  check_launch("take_along_axis");
}

void put_along_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), index = c.input(1), val = c.input(2), out = c.output(0);
  const int64_t axis = fam::normalize_axis("put_along_axis", c.attr_int_or("axis", 0), x.ndim());
  const int64_t n = x.dim(static_cast<int32_t>(axis)), ni = index.dim(static_cast<int32_t>(axis));
  const int64_t inner = fam::product(x.dims(), axis + 1, x.ndim());
  const int64_t total = index.numel();
  copy_input(c, x, out, "put_along_axis");
  if (total == 0) return;
  const bool i64 = index.dtype() == OAR_DTYPE_INT64;
  const int64_t reduce = c.attr_int_or("reduce", 0);
  if (reduce == 0) {
    fam::dispatch_bits(x.dtype(), "put_along_axis", [&](auto tag) {
      using U = typename decltype(tag)::type;
      put_along_k<U, 0><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
          static_cast<U*>(out.raw()), index.raw(), i64, static_cast<const U*>(val.raw()), total, n, ni, inner,
          fam::bad_index(c, kErrPutAlongAxis));
    });
  } else {
    dispatch_all(x.dtype(), "put_along_axis", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto* po = static_cast<T*>(out.raw());
      auto* pv = static_cast<const T*>(val.raw());
      if (reduce == 1)
        put_along_k<T, 1><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
            po, index.raw(), i64, pv, total, n, ni, inner, fam::bad_index(c, kErrPutAlongAxis));
      else
        put_along_k<T, 2><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(
            po, index.raw(), i64, pv, total, n, ni, inner, fam::bad_index(c, kErrPutAlongAxis));
    });
  }
  check_launch("put_along_axis");
}

// ---- concat -----------------------------------------------------------------------------------------------
// out [outer, N, inner] gets x [outer, nk, inner] at [:, pos : pos + nk, :].
template <typename U>
__global__ void concat_k(const U* __restrict__ x, U* __restrict__ out, int64_t total, int64_t row,
                         int64_t out_row, int64_t start) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    out[(e / row) * out_row + start + e % row] = x[e];
}

void concat_kernel(sdk::KernelContext& c) {
  sdk::TensorView out = c.output(0);
  const int32_t nd = out.ndim();
  if (nd == 0) throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "concat: inputs must have at least 1 dimension");
  const int64_t axis = fam::normalize_axis("concat", c.attr_int_or("axis", 0), nd);
  const int64_t inner = fam::product(out.dims(), axis + 1, nd);
  const int64_t out_row = out.dim(static_cast<int32_t>(axis)) * inner;
  int64_t pos = 0;
  for (int32_t k = 0; k < c.num_inputs(); ++k) {
    sdk::TensorView x = c.input(k);
    if (!x.defined()) continue;
    if (x.dtype() != out.dtype() || x.ndim() != nd)
      throw sdk::Error(OAR_ERR_INVALID_ARGUMENT,
                       "concat: input " + std::to_string(k) + " does not match the output's dtype or rank");
    for (int32_t d = 0; d < nd; ++d)
      if (d != axis && x.dim(d) != out.dim(d))
        throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "concat: input " + std::to_string(k) + " has size " +
                                                       std::to_string(x.dim(d)) + " in dimension " +
                                                       std::to_string(d) + ", expected " +
                                                       std::to_string(out.dim(d)));
    const int64_t nk = x.dim(static_cast<int32_t>(axis));
    if (pos + nk > out.dim(static_cast<int32_t>(axis)))
      throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "concat: inputs are longer than the output along the axis");
    const int64_t total = x.numel();
    if (total > 0) {
      fam::dispatch_bits(x.dtype(), "concat", [&](auto tag) {
        using U = typename decltype(tag)::type;
        concat_k<U><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(static_cast<const U*>(x.raw()),
                                                                      static_cast<U*>(out.raw()), total,
                                                                      nk * inner, out_row, pos * inner);
      });
      check_launch("concat");
    }
    pos += nk;
  }
}

// ---- pad (constant, reflect, replicate, circular)
// ---------------------------------------------------------------------------------------
struct PadGeom {
  int nd, mode;  // 0 constant, 1 reflect, 2 replicate, 3 circular
  int64_t odims[sdk::kMaxDims], xdims[sdk::kMaxDims], before[sdk::kMaxDims];
};

template <typename U>
__global__ void pad_k(const U* __restrict__ x, U* __restrict__ out, int64_t total, PadGeom g, U fill) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = e, off = 0, stride = 1;
    bool inside = true;
    for (int d = g.nd - 1; d >= 0; --d) {
      int64_t s = rest % g.odims[d] - g.before[d];
      rest /= g.odims[d];
      const int64_t n = g.xdims[d];
      if (s < 0 || s >= n) {
        if (g.mode == 0) {
          inside = false;
        } else if (g.mode == 2) {
          s = s < 0 ? 0 : n - 1;
        } else if (g.mode == 3) {
          s = ((s % n) + n) % n;
        } else {  // reflect about the edges (not repeating them)
          const int64_t period = 2 * (n - 1);
          const int64_t k = period ? ((s % period) + period) % period : 0;
          s = k >= n ? period - k : k;
        }
      }
      off += s * stride;
      stride *= g.xdims[d];
    }
    out[e] = inside ? x[off] : fill;
  }
}

void pad_supports(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0);
  const int64_t mode = c.attr_int_or("mode", 0);
  if (mode < 0 || mode > 3) sdk::decline("unknown pad mode (the CPU reports it)");
  if (mode != 0)
    for (int32_t d = 0; d < x.ndim(); ++d)
      if (x.dim(d) == 0) sdk::decline("non-constant padding of an empty dim (the CPU reports it)");
  if (c.attr_ints_or("pads", {}).size() != static_cast<size_t>(2 * x.ndim()))
    sdk::decline("pads must have 2 * rank entries (the CPU reports it)");
  if (x.ndim() > sdk::kMaxDims) sdk::decline("rank above the gpu plugin's limit");
}

void pad_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), out = c.output(0);
  const std::vector<int64_t> p = c.attr_ints_or("pads", {});
  const double value = c.attr_float_or("value", 0.0);
  const int64_t total = out.numel();
  if (total == 0) return;
  PadGeom g{};
  g.nd = x.ndim();
  g.mode = static_cast<int>(c.attr_int_or("mode", 0));
  for (int32_t d = 0; d < x.ndim(); ++d) {
    g.odims[d] = out.dim(d);
    g.xdims[d] = x.dim(d);
    g.before[d] = p[2 * d];
  }
  // The fill value as x's dtype, then moved as bits.
  uint64_t fill_bits = 0;
  dispatch_all(x.dtype(), "pad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    if constexpr (std::is_same_v<T, bool>)
      v = value != 0;
    else if constexpr (std::is_integral_v<T>)
      v = static_cast<T>(static_cast<int64_t>(value));
    else
      v = from_acc<T>(static_cast<acc_t<T>>(value));
    std::memcpy(&fill_bits, &v, sizeof(T));
  });
  fam::dispatch_bits(x.dtype(), "pad", [&](auto tag) {
    using U = typename decltype(tag)::type;
    U fill;
    std::memcpy(&fill, &fill_bits, sizeof(U));
    pad_k<U><<<grid_of(c, total), kThreads, 0, stream_of(c)>>>(static_cast<const U*>(x.raw()),
                                                               static_cast<U*>(out.raw()), total, g, fill);
  });
  check_launch("pad");
}

}  // namespace

void register_index(Registry& r) {
  const auto all = gpu_all_dtypes();
  r.add("index_select", all, &index_select_kernel, &index_select_supports);
  r.add("index_add", gpu_real_dtypes(), &index_add_kernel, &index_add_supports);
  r.add("gather_nd", all, &gather_nd_kernel, &nd_supports);
  r.add("scatter_nd_add", gpu_real_dtypes(), &scatter_nd_add_kernel, &scatter_nd_add_supports);
  r.add("index_put", all, &index_put_kernel, &index_put_supports, OAR_KERNEL_STRIDED_INPUTS);
  r.add("take_along_axis", all, &take_along_kernel, &along_supports);
  r.add("put_along_axis", all, &put_along_kernel, &put_along_supports);
  r.add("concat", all, &concat_kernel);
  r.add("pad", all, &pad_kernel, &pad_supports);
}

}  // namespace oar_cuda
