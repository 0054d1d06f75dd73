// Scans (cumsum, cumprod, logcumsumexp), sort, topk and nonzero, on CUB (shipped with the toolkit) or
// rocPRIM (gpu_primitives.cuh).
// - Scans: a block per line with a block scan and a running prefix when the axis is the last one and
//   long; a thread per line, sequential, otherwise. Accumulators as the CPU (math_ext.cc): wrapping
//   int64 for ints, float for 16-bit floats, double for float32/float64.
// - sort / topk: every element gets an unsigned key whose order is the value order (NaN last, -0 == +0;
//   descending: inverted keys), then one stable radix sort by key over all lines at once and a
//   second stable one by line number, so each line ends sorted with ties in position order (the CPU's
//   stable order). topk is the first k of that sort.
// - nonzero: the core passes the count (docs/ops_manip.md), so the output is already sized: flags, an
//   exclusive prefix sum and a scatter of coordinates. No host synchronisation.
#include <climits>

#include "family_common.cuh"
#include "gpu_primitives.cuh"

namespace oar_cuda {
namespace {

// ---- scans ---------------------------------------------------------------------------------------------
enum ScanMode { kSum, kProd, kLogSumExp };

template <typename T>
struct ScanAcc {
  using type = double;
};
template <>
struct ScanAcc<gpu_half> {
  using type = float;
};
template <>
struct ScanAcc<gpu_bf16> {
  using type = float;
};
template <>
struct ScanAcc<int8_t> {
  using type = unsigned long long;
};
template <>
struct ScanAcc<uint8_t> {
  using type = unsigned long long;
};
template <>
struct ScanAcc<int16_t> {
  using type = unsigned long long;
};
template <>
struct ScanAcc<int32_t> {
  using type = unsigned long long;
};
template <>
struct ScanAcc<int64_t> {
  using type = unsigned long long;
};

template <typename A, int kMode>
struct Combine {
  OAR_HD A operator()(A a, A b) const {
    if constexpr (kMode == kSum) {
      return a + b;
    } else if constexpr (kMode == kProd) {
      return a * b;
    } else {  // logaddexp: equal values (also +-inf) give a + log 2, NaN propagates
      if (a == b) return a + A(0.6931471805599453);
      const A m = a > b ? a : b;
      if (m != m || a != a || b != b) return a + b;
      const A d = a > b ? a - b : b - a;
      return m + log1p(exp(-d));
    }
  }
};

template <typename T, typename A>
OAR_D A scan_in(T v) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<int64_t>(v));
  else
    return static_cast<A>(to_acc(v));
}
template <typename T, typename A>
OAR_D T scan_out(A a) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<T>(static_cast<int64_t>(a));
  else
    return from_acc<T>(static_cast<acc_t<T>>(a));
}

template <typename A, int kMode>
OAR_HD A scan_identity() {
  if constexpr (kMode == kProd)
    return A(1);
  else if constexpr (kMode == kLogSumExp)
    return A(-INFINITY);
  else
    return A(0);
}

// A thread per line; line l starts at (l / inner) * n * inner + l % inner and steps by inner.
template <typename T, typename A, int kMode>
__global__ void scan_lines(const T* __restrict__ x, T* __restrict__ out, int64_t lines, int64_t n,
                           int64_t inner, bool reverse) {
  const Combine<A, kMode> op;
  for (int64_t l = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; l < lines;
       l += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    A acc = scan_identity<A, kMode>();
    for (int64_t p = 0; p < n; ++p) {
      const int64_t e = base + (reverse ? n - 1 - p : p) * inner;
      acc = op(acc, scan_in<T, A>(x[e]));
      out[e] = scan_out<T, A>(acc);
    }
  }
}

// The running total carried from one tile of a line to the next (the block scan's prefix callback).
template <typename A, int kMode>
struct RunningPrefix {
  A total;
  __device__ A operator()(A tile_aggregate) {
    const A old = total;
    total = Combine<A, kMode>{}(total, tile_aggregate);
    return old;
  }
};

// A block per contiguous line (inner == 1), tiles of kThreads elements.
template <typename T, typename A, int kMode>
__global__ void scan_rows(const T* __restrict__ x, T* __restrict__ out, int64_t lines, int64_t n,
                          bool reverse) {
  using BlockScan = prim::BlockScan<A, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const Combine<A, kMode> op;
  for (int64_t l = blockIdx.x; l < lines; l += gridDim.x) {
    const T* r = x + l * n;
    T* w = out + l * n;
    RunningPrefix<A, kMode> prefix{scan_identity<A, kMode>()};
    for (int64_t t0 = 0; t0 < n; t0 += kThreads) {
      const int64_t p = t0 + threadIdx.x;
      const int64_t e = reverse ? n - 1 - p : p;
      A v = p < n ? scan_in<T, A>(r[e]) : scan_identity<A, kMode>();
      BlockScan{temp}.inclusive_scan(v, v, op, prefix);
      __syncthreads();  // temp is reused by the next tile
      if (p < n) w[e] = scan_out<T, A>(v);
    }
  }
}

template <int kMode>
void scan_kernel(sdk::KernelContext& c) {
  const char* name = kMode == kProd ? "cumprod" : (kMode == kSum ? "cumsum" : "logcumsumexp");
  sdk::TensorView x = c.input(0), out = c.output(0);
  fam::check_rank(name, x);
  const bool flatten = c.attr_int_or("flatten", 0) != 0;
  const bool reverse = kMode != kProd && c.attr_int_or("reverse", 0) != 0;
  const int64_t numel = x.numel();
  if (numel == 0) return;
  int64_t outer = 1, n = numel, inner = 1;
  if (!flatten && x.ndim() > 0) {
    const int64_t axis = fam::normalize_axis(name, c.attr_int_or("axis", -1), x.ndim());
    outer = fam::product(x.dims(), 0, axis);
    n = x.dim(static_cast<int32_t>(axis));
    inner = fam::product(x.dims(), axis + 1, x.ndim());
  }
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = typename ScanAcc<T>::type;
    const T* px = static_cast<const T*>(x.raw());
    T* po = static_cast<T*>(out.raw());
    gpuStream_t s = stream_of(c);
    const int64_t lines = outer * inner;
    if (inner == 1 && n > 64)
      scan_rows<T, A, kMode><<<fam::blocks_for(lines), kThreads, 0, s>>>(px, po, lines, n, reverse);
    else
      scan_lines<T, A, kMode><<<static_cast<unsigned>(grid_for(lines, c.device())), kThreads, 0, s>>>(
          px, po, lines, n, inner, reverse);
    check_launch(name);
  };
  if constexpr (kMode == kLogSumExp)
    dispatch_float(x.dtype(), name, run);
  else
    dispatch_real(x.dtype(), name, run);
}

// ---- sort / topk
// ------------------------------------------------------------------------------------------- Bits of the key
// of T (the CPU's width: 16-bit floats widen to float32 keys).
template <typename T>
constexpr int key_bits() {
  return (std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>) ? 32 : int(sizeof(T)) * 8;
}

template <typename T>
OAR_D uint64_t sort_key(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t u = static_cast<uint64_t>(__double_as_longlong(v));
    if (v != v) u = 0x7ff8000000000000ull;
    if (v == 0) u = 0;  // -0.0 ties with +0.0
    return (u >> 63) ? ~u : (u | (1ull << 63));
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<U>(static_cast<U>(v) ^ static_cast<U>(U(1) << (sizeof(T) * 8 - 1)));
    } else {
      return static_cast<uint64_t>(v);
    }
  } else {  // float, float16, bfloat16 (widened exactly)
    const float f = static_cast<float>(to_acc(v));
    uint32_t u = static_cast<uint32_t>(__float_as_uint(f));
    if (f != f) u = 0x7fc00000u;
    if (f == 0) u = 0;
    return (u >> 31) ? static_cast<uint32_t>(~u) : (u | 0x80000000u);
  }
}

// Line l = (o, i) of x ([outer, n, inner]); element j of line l goes to slot l * n + j.
template <typename T>
__global__ void sort_keys(const T* __restrict__ x, uint64_t* __restrict__ keys, int64_t* __restrict__ vals,
                          int64_t total, int64_t n, int64_t inner, uint64_t flip) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = e / n, j = e % n;
    keys[e] = sort_key<T>(x[(l / inner) * n * inner + l % inner + j * inner]) ^ flip;
    vals[e] = e;
  }
}

__global__ void line_keys(const int64_t* __restrict__ slots, uint64_t* __restrict__ keys, int64_t total,
                          int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    keys[e] = static_cast<uint64_t>(slots[e] / n);
}

// Sorted slot e = l * n + j holds the original slot of line l's j-th element; the first k per line are
// written ([outer, k, inner] outputs).
template <typename T>
__global__ void sort_write(const T* __restrict__ x, const int64_t* __restrict__ slots, T* __restrict__ vals,
                           int64_t* __restrict__ inds, int64_t lines, int64_t n, int64_t k, int64_t inner) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < lines * k;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = e / k, j = e % k;
    const int64_t src = slots[l * n + j] % n;
    const int64_t o = l / inner, i = l % inner;
    vals[o * k * inner + i + j * inner] = x[o * n * inner + i + src * inner];
    inds[o * k * inner + i + j * inner] = src;
  }
}

int bits_for(int64_t v) {  // bits needed to hold 0..v
  int b = 0;
  while (b < 63 && (int64_t(1) << b) <= v) ++b;
  return std::max(b, 1);
}

// Sorts every line of x along axis (ascending keys, `flip` inverts them) and writes the first k.
void sort_lines(sdk::KernelContext& c, const char* name, int64_t axis, int64_t k, bool descending) {
  sdk::TensorView x = c.input(0), vals = c.output(0), inds = c.output(1);
  const int32_t nd = x.ndim();
  const int64_t n = nd == 0 ? 1 : x.dim(static_cast<int32_t>(axis));
  const int64_t inner = nd == 0 ? 1 : fam::product(x.dims(), axis + 1, nd);
  const int64_t total = x.numel();
  if (total == 0 || k == 0) return;
  const int64_t lines = total / n;
  gpuStream_t s = stream_of(c);
  dispatch_all(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int bits = key_bits<T>();
    const uint64_t flip = descending ? (bits == 64 ? ~0ull : ((1ull << (bits % 64)) - 1)) : 0;
    size_t temp1 = 0, temp2 = 0;
    gpu_check(prim::radix_sort_pairs(nullptr, temp1, static_cast<const uint64_t*>(nullptr),
                                     static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
                                     static_cast<int64_t*>(nullptr), total, 0, bits, s),
              name);
    if (lines > 1)
      gpu_check(prim::radix_sort_pairs(nullptr, temp2, static_cast<const uint64_t*>(nullptr),
                                       static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
                                       static_cast<int64_t*>(nullptr), total, 0, bits_for(lines - 1), s),
                name);
    const size_t temp = std::max<size_t>(std::max(temp1, temp2), 16);
    const uint64_t u = static_cast<uint64_t>(total);
    char* ws = static_cast<char*>(c.workspace(temp + 4 * 8 * u + 512));
    auto align = [](char* p) {
      return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + 255) & ~uintptr_t(255));
    };
    char* base = align(ws);
    uint64_t* keys_a = reinterpret_cast<uint64_t*>(base);
    uint64_t* keys_b = keys_a + u;
    int64_t* slots_a = reinterpret_cast<int64_t*>(keys_b + u);
    int64_t* slots_b = slots_a + u;
    void* tmp = align(reinterpret_cast<char*>(slots_b + u));  // CUB wants 256-byte aligned scratch
    const T* px = static_cast<const T*>(x.raw());
    const unsigned grid = static_cast<unsigned>(grid_for(total, c.device()));
    sort_keys<T><<<grid, kThreads, 0, s>>>(px, keys_a, slots_a, total, n, inner, flip);
    check_launch(name);
    size_t t1 = temp1;
    gpu_check(prim::radix_sort_pairs(tmp, t1, keys_a, keys_b, slots_a, slots_b, total, 0, bits, s), name);
    const int64_t* sorted = slots_b;
    if (lines > 1) {  // stable by line: each line keeps its key order
      line_keys<<<grid, kThreads, 0, s>>>(slots_b, keys_a, total, n);
      check_launch(name);
      size_t t2 = temp2;
      gpu_check(
          prim::radix_sort_pairs(tmp, t2, keys_a, keys_b, slots_b, slots_a, total, 0, bits_for(lines - 1), s),
          name);
      sorted = slots_a;
    }
    sort_write<T><<<static_cast<unsigned>(grid_for(lines * k, c.device())), kThreads, 0, s>>>(
        px, sorted, static_cast<T*>(vals.raw()), static_cast<int64_t*>(inds.raw()), lines, n, k, inner);
    check_launch(name);
  });
}

int64_t sort_axis(const sdk::KernelContext& c, const char* name, const sdk::TensorView& x) {
  return x.ndim() == 0 ? 0 : fam::normalize_axis(name, c.attr_int_or("axis", -1), x.ndim());
}

void sort_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0);
  const int64_t axis = sort_axis(c, "sort", x);
  const int64_t n = x.ndim() == 0 ? 1 : x.dim(static_cast<int32_t>(axis));
  sort_lines(c, "sort", axis, n, c.attr_int_or("descending", 0) != 0);
}

void topk_supports(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0);
  const int64_t axis = sort_axis(c, "topk", x);
  const int64_t n = x.ndim() == 0 ? 1 : x.dim(static_cast<int32_t>(axis));
  const int64_t k = c.attr_int_or("k", 1);
  if (k < 0 || k > n) sdk::decline("k out of range (the CPU kernel reports it)");
}

void topk_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0);
  const int64_t axis = sort_axis(c, "topk", x);
  sort_lines(c, "topk", axis, c.attr_int_or("k", 1), c.attr_int_or("largest", 1) != 0);
}

void sort_supports(sdk::KernelContext& c) {
  if (c.input(0).ndim() > sdk::kMaxDims) sdk::decline("rank above the gpu plugin's limit");
}

// ---- nonzero
// ---------------------------------------------------------------------------------------------------
template <typename T>
__global__ void nonzero_flags(const T* __restrict__ x, int64_t* __restrict__ flags, int64_t total) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x)
    flags[e] = to_acc(x[e]) != acc_t<T>(0) ? 1 : 0;  // NaN counts as nonzero
}

struct Dims {
  int nd;
  int64_t d[sdk::kMaxDims];
};

// Row pos[e] of out gets e's coordinates; rows beyond `count` are skipped, and a count that is not the
// number of nonzeros (the Python wrapper computes it with sum, so only a direct call gets it wrong) is
// reported through the error word by the thread of the last element.
__global__ void nonzero_write(const int64_t* __restrict__ flags, const int64_t* __restrict__ pos,
                              int64_t* __restrict__ out, int64_t total, int64_t count, Dims dims,
                              DataErrorReporter bad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    if (e == total - 1 && pos[e] + flags[e] != count) bad.report(kBadValue, pos[e] + flags[e], count);
    if (!flags[e] || pos[e] >= count) continue;
    int64_t rest = e;
    for (int k = dims.nd - 1; k >= 0; --k) {
      out[pos[e] * dims.nd + k] = rest % dims.d[k];
      rest /= dims.d[k];
    }
  }
}

void nonzero_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), out = c.output(0);
  fam::check_rank("nonzero", x);
  const int64_t count = c.attr_int_or("count", 0);
  const int64_t total = x.numel();
  OAR_SDK_CHECK(total != 0 || count == 0, OAR_ERR_INVALID_ARGUMENT,
                "nonzero: attribute count (" << count << ") != number of nonzero elements (0)");
  if (total == 0 || x.ndim() == 0) return;  // a scalar: [count, 0], nothing to write
  gpuStream_t s = stream_of(c);
  size_t temp = 0;
  gpu_check(prim::exclusive_sum(nullptr, temp, static_cast<const int64_t*>(nullptr),
                                static_cast<int64_t*>(nullptr), total, s),
            "nonzero");
  const uint64_t u = static_cast<uint64_t>(total);
  int64_t* flags = static_cast<int64_t*>(c.workspace(2 * 8 * u + temp + 512));
  int64_t* pos = flags + u;
  // CUB wants 256-byte aligned scratch
  void* tmp = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(pos + u) + 255) & ~uintptr_t(255));
  const unsigned grid = static_cast<unsigned>(grid_for(total, c.device()));
  dispatch_all(x.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    nonzero_flags<T><<<grid, kThreads, 0, s>>>(static_cast<const T*>(x.raw()), flags, total);
  });
  check_launch("nonzero");
  gpu_check(prim::exclusive_sum(tmp, temp, static_cast<const int64_t*>(flags), pos, total, s), "nonzero");
  Dims dims;
  dims.nd = x.ndim();
  for (int32_t d = 0; d < x.ndim(); ++d) dims.d[d] = x.dim(d);
  nonzero_write<<<grid, kThreads, 0, s>>>(flags, pos, static_cast<int64_t*>(out.raw()), total, count, dims,
                                          data_error_reporter(c, kErrNonzeroCount));
  check_launch("nonzero");
}

}  // namespace

void register_scan_sort(Registry& r) {
  const auto real = gpu_real_dtypes();  // ints and floats
  r.add("cumsum", real, &scan_kernel<kSum>);
  r.add("cumprod", real, &scan_kernel<kProd>);
  r.add("logcumsumexp", gpu_float_dtypes(), &scan_kernel<kLogSumExp>);
  r.add("sort", gpu_all_dtypes(), &sort_kernel, &sort_supports);
  r.add("topk", gpu_all_dtypes(), &topk_kernel, &topk_supports);
  r.add("nonzero", gpu_all_dtypes(), &nonzero_kernel);
}

}  // namespace oar_cuda
