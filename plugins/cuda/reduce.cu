// Reductions over any set of axes: sum, mean, max, min, prod, all, any, argmax, argmin.
// The host splits x's dims into kept and reduced ones (strides as they are: no copies, any layout),
// merging runs of dims that address memory as one. A group of threads (1, a warp or a block, by the
// reduced size) reduces one output; few outputs over a huge reduced size split it into chunks whose
// partials go to the workspace and a second kernel combines them in order. No atomics: the result does
// not depend on scheduling. Accumulators follow the CPU kernels (reduce.cc): int64 wrapping for ints and
// bool, float for 16-bit floats, double for float32/float64 sums and products.
#include <limits>

#include "family_common.cuh"

namespace oar_cuda {
namespace {

constexpr uint32_t kStrided = OAR_KERNEL_STRIDED_INPUTS;

// Dims and strides of one side (kept or reduced) of a reduction.
struct DimSet {
  int n = 0;
  int64_t dims[sdk::kMaxDims];
  int64_t strides[sdk::kMaxDims];

  void push(int64_t d, int64_t s) {
    if (d == 1) return;
    // Row-major merge: the previous dim steps over exactly this one.
    if (n > 0 && strides[n - 1] == s * d) {
      dims[n - 1] *= d;
      strides[n - 1] = s;
      return;
    }
    dims[n] = d;
    strides[n] = s;
    ++n;
  }
  OAR_HD int64_t offset(int64_t linear) const {
    if (n == 1) return linear * strides[0];  // the common case after merging: no division
    int64_t off = 0;
    for (int k = n - 1; k >= 0; --k) {
      off += (linear % dims[k]) * strides[k];
      linear /= dims[k];
    }
    return off;
  }
};

struct Geom {
  DimSet kept, red;
  int64_t n_out, R, chunks, chunk_len;
};

// Each op: Acc, Out, init(), step(acc, x, r) with r the row-major position within the reduced dims,
// merge(a, b) (associative and commutative), finish(acc).
template <typename T, typename AccT, typename OutT>
struct SumOp {
  using Acc = AccT;
  using Out = OutT;
  bool mean = false;
  double count = 1;
  OAR_HD Acc init() const { return Acc(0); }
  OAR_D Acc step(Acc a, T v, int64_t) const {
    if constexpr (std::is_integral_v<Acc>)
      return a + static_cast<Acc>(static_cast<int64_t>(v));
    else
      return a + static_cast<Acc>(to_acc(v));
  }
  OAR_D Acc merge(Acc a, Acc b) const { return a + b; }
  OAR_D Out finish(Acc a) const {
    if constexpr (std::is_integral_v<Acc>) {
      return static_cast<Out>(static_cast<int64_t>(a));
    } else {
      if (mean) a = a / static_cast<Acc>(count);
      return from_acc<Out>(static_cast<acc_t<Out>>(a));
    }
  }
};

template <typename T, typename AccT>
struct ProdOp {
  using Acc = AccT;
  using Out = T;
  OAR_HD Acc init() const { return Acc(1); }
  OAR_D Acc step(Acc a, T v, int64_t) const {
    if constexpr (std::is_integral_v<Acc>)
      return a * static_cast<Acc>(static_cast<int64_t>(v));
    else
      return a * static_cast<Acc>(to_acc(v));
  }
  OAR_D Acc merge(Acc a, Acc b) const { return a * b; }
  OAR_D Out finish(Acc a) const {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Out>(static_cast<int64_t>(a));
    else
      return from_acc<Out>(static_cast<acc_t<Out>>(a));
  }
};

// max / min: a NaN wins and then sticks (as the CPU kernel).
template <typename T, bool kMax>
struct MaxOp {
  using Acc = acc_t<T>;
  using Out = T;
  Acc start;  // -inf / +inf for floats, the type's lowest / highest otherwise (set on the host)
  OAR_HD Acc init() const { return start; }
  OAR_D Acc merge(Acc a, Acc b) const {
    const bool better = kMax ? (b > a) : (b < a);
    return (better || b != b) ? b : a;
  }
  OAR_D Acc step(Acc a, T v, int64_t) const { return merge(a, to_acc(v)); }
  OAR_D Out finish(Acc a) const { return from_acc<T>(a); }
};

template <typename T, bool kAll>
struct BoolOp {
  using Acc = bool;
  using Out = bool;
  OAR_HD Acc init() const { return kAll; }
  OAR_D Acc step(Acc a, T v, int64_t) const {
    const bool nz = to_acc(v) != acc_t<T>(0);
    return kAll ? (a && nz) : (a || nz);
  }
  OAR_D Acc merge(Acc a, Acc b) const { return kAll ? (a && b) : (a || b); }
  OAR_D Out finish(Acc a) const { return a; }
};

// (value, index), index -1 for "nothing seen". The first NaN wins (numpy); otherwise the better value,
// ties to the smaller index, so the merge order does not matter.
template <typename T, bool kMax>
struct ArgOp {
  struct Acc {
    acc_t<T> v;
    int64_t i;
  };
  using Out = int64_t;
  OAR_HD Acc init() const { return Acc{acc_t<T>(0), -1}; }
  OAR_D Acc merge(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (kMax ? b.v > a.v : b.v < a.v) ? b : a;
  }
  OAR_D Acc step(Acc a, T v, int64_t r) const { return merge(a, Acc{to_acc(v), r}); }
  OAR_D Out finish(Acc a) const { return a.i < 0 ? 0 : a.i; }
};

// Groups of `group` threads, one (output, chunk) item each; grid-stride over items.
template <typename T, typename Op>
__global__ void reduce_kernel(const T* __restrict__ x, typename Op::Out* __restrict__ out,
                              typename Op::Acc* __restrict__ partial, Geom g, Op op, int group) {
  using Acc = typename Op::Acc;
  extern __shared__ __align__(16) unsigned char smem[];
  Acc* sh = reinterpret_cast<Acc*>(smem);
  const int per_block = blockDim.x / group;
  const int gid = threadIdx.x / group, lane = threadIdx.x % group;
  const int64_t items = g.n_out * g.chunks;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < items; base += int64_t(gridDim.x) * per_block) {
    const int64_t item = base + gid;
    Acc acc = op.init();
    if (item < items) {
      // Neighbouring items are neighbouring outputs (coalesced reads when a thread takes one).
      const int64_t o = item % g.n_out, ch = item / g.n_out;
      const int64_t xo = g.kept.offset(o);
      const int64_t lo = ch * g.chunk_len;
      const int64_t hi = lo + g.chunk_len < g.R ? lo + g.chunk_len : g.R;
      // Four independent accumulators keep four loads in flight per thread; merged in a fixed order.
      Acc a1 = op.init(), a2 = op.init(), a3 = op.init();
      int64_t r = lo + lane;
      for (; r + 3 * group < hi; r += 4 * group) {
        acc = op.step(acc, x[xo + g.red.offset(r)], r);
        a1 = op.step(a1, x[xo + g.red.offset(r + group)], r + group);
        a2 = op.step(a2, x[xo + g.red.offset(r + 2 * group)], r + 2 * group);
        a3 = op.step(a3, x[xo + g.red.offset(r + 3 * group)], r + 3 * group);
      }
      for (; r < hi; r += group) acc = op.step(acc, x[xo + g.red.offset(r)], r);
      acc = op.merge(op.merge(acc, a1), op.merge(a2, a3));
    }
    fam::group_reduce(sh, acc, group, [&](Acc a, Acc b) { return op.merge(a, b); });
    if (item < items && lane == 0) {
      if (g.chunks == 1)
        out[item] = op.finish(sh[threadIdx.x]);
      else  // partials of output o side by side, in chunk order (reduce_finish)
        partial[(item % g.n_out) * g.chunks + item / g.n_out] = sh[threadIdx.x];
    }
  }
}

// Combines each output's chunk partials ([n_out, chunks]) with `group` threads per output, in a fixed
// order (a thread per output for few chunks, the block for many).
template <typename Op>
__global__ void reduce_finish(const typename Op::Acc* __restrict__ partial,
                              typename Op::Out* __restrict__ out, int64_t n_out, int64_t chunks, Op op,
                              int group) {
  using Acc = typename Op::Acc;
  extern __shared__ __align__(16) unsigned char smem[];
  Acc* sh = reinterpret_cast<Acc*>(smem);
  const int per_block = blockDim.x / group;
  const int lane = threadIdx.x % group;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < n_out; base += int64_t(gridDim.x) * per_block) {
    const int64_t o = base + threadIdx.x / group;
    Acc acc = op.init();
    if (o < n_out)
      for (int64_t c = lane; c < chunks; c += group) acc = op.merge(acc, partial[o * chunks + c]);
    fam::group_reduce(sh, acc, group, [&](Acc a, Acc b) { return op.merge(a, b); });
    if (o < n_out && lane == 0) out[o] = op.finish(sh[threadIdx.x]);
  }
}

// out (contiguous, the kept dims in order) = reduction of x over `axes` (sorted, unique).
template <typename T, typename Op>
void run_reduce(sdk::KernelContext& c, const char* name, const std::vector<int64_t>& axes, const Op& op) {
  sdk::TensorView x = c.input(0), out = c.output(0);
  fam::check_rank(name, x);
  Geom g;
  bool reduced[sdk::kMaxDims] = {};
  for (int64_t a : axes) reduced[a] = true;
  g.R = 1;
  g.n_out = 1;
  for (int32_t d = 0; d < x.ndim(); ++d) {
    (reduced[d] ? g.red : g.kept).push(x.dim(d), x.stride(d));
    (reduced[d] ? g.R : g.n_out) *= x.dim(d);
  }
  if (g.n_out == 0 || out.numel() == 0) return;
  if (g.n_out != out.numel())
    throw sdk::Error(OAR_ERR_INTERNAL,
                     std::string("gpu ") + name + ": output size does not match the kept dims");
  using Acc = typename Op::Acc;
  // Along contiguous memory (the last reduced dim has stride 1), a warp or a block reads each output's
  // elements side by side. Otherwise, when the outputs are contiguous (column sums), a thread per output
  // keeps neighbouring threads on neighbouring addresses, and chunks of the reduced size give the
  // parallelism. Few outputs over a long reduced size are split into chunks too.
  const int warp = OAR_GPU_WARP_SIZE;
  const bool rows = g.red.n > 0 && g.red.strides[g.red.n - 1] == 1;
  const bool cols = !rows && g.kept.n > 0 && g.kept.strides[g.kept.n - 1] == 1 && g.R > 8;
  int group = g.R <= 8 ? 1 : (g.R <= 1024 ? warp : kThreads);
  g.chunks = 1;
  if (cols) {
    group = 1;
    constexpr int64_t kWanted = 262144;  // threads to fill the GPU with loads in flight
    if (g.n_out < kWanted)
      g.chunks = std::max<int64_t>(1, std::min<int64_t>((kWanted + g.n_out - 1) / g.n_out, (g.R + 31) / 32));
  } else if (g.R >= 16384 && g.n_out < 2048) {  // too few blocks for the GPU: split each output
    g.chunks = std::max<int64_t>(1, std::min<int64_t>((g.R + 4095) / 4096, (2048 + g.n_out - 1) / g.n_out));
  }
  g.chunk_len = (g.R + g.chunks - 1) / g.chunks;
  const int64_t items = g.n_out * g.chunks;
  const int per_block = kThreads / group;
  Acc* partial = nullptr;
  if (g.chunks > 1) partial = static_cast<Acc*>(c.workspace(sizeof(Acc) * static_cast<uint64_t>(items)));
  gpuStream_t s = stream_of(c);
  const T* px = static_cast<const T*>(x.raw());
  auto* po = static_cast<typename Op::Out*>(out.raw());
  reduce_kernel<T, Op>
      <<<fam::blocks_for((items + per_block - 1) / per_block), kThreads, kThreads * sizeof(Acc), s>>>(
          px, po, partial, g, op, group);
  check_launch(name);
  if (g.chunks > 1) {
    const int fgroup = g.chunks <= 64 ? 1 : kThreads;
    const int64_t fper = kThreads / fgroup;
    reduce_finish<Op><<<fam::blocks_for((g.n_out + fper - 1) / fper), kThreads, kThreads * sizeof(Acc), s>>>(
        partial, po, g.n_out, g.chunks, op, fgroup);
    check_launch(name);
  }
}

// The axis attribute: empty (or absent) means all.
std::vector<int64_t> reduce_axes(const char* op, const sdk::KernelContext& c, const sdk::TensorView& x) {
  fam::check_rank(op, x);
  std::vector<int64_t> axes = c.attr_ints_or("axis", {});
  if (x.ndim() == 0) return {};
  if (axes.empty())
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  for (int64_t& a : axes) a = fam::normalize_axis(op, a, x.ndim());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

template <typename T>
struct SumAcc {
  using type = double;
};  // float32 / float64: as the CPU
template <>
struct SumAcc<gpu_half> {
  using type = float;
};
template <>
struct SumAcc<gpu_bf16> {
  using type = float;
};

void sum_kernel(sdk::KernelContext& c) {
  auto axes = reduce_axes("sum", c, c.input(0));
  dispatch_all(c.input(0).dtype(), "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)  // bool and ints: int64 output, wrapping
      run_reduce<T>(c, "sum", axes, SumOp<T, unsigned long long, int64_t>{});
    else
      run_reduce<T>(c, "sum", axes, SumOp<T, typename SumAcc<T>::type, T>{});
  });
}

void mean_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0);
  auto axes = reduce_axes("mean", c, x);
  int64_t count = 1;
  for (int64_t a : axes) count *= x.dim(static_cast<int32_t>(a));
  dispatch_float(x.dtype(), "mean", [&](auto tag) {
    using T = typename decltype(tag)::type;
    SumOp<T, typename SumAcc<T>::type, T> op;
    op.mean = true;
    op.count = static_cast<double>(count);
    run_reduce<T>(c, "mean", axes, op);
  });
}

void prod_kernel(sdk::KernelContext& c) {
  auto axes = reduce_axes("prod", c, c.input(0));
  dispatch_real(c.input(0).dtype(), "prod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      run_reduce<T>(c, "prod", axes, ProdOp<T, unsigned long long>{});
    else
      run_reduce<T>(c, "prod", axes, ProdOp<T, typename SumAcc<T>::type>{});
  });
}

template <bool kMax>
void maxmin_kernel(sdk::KernelContext& c) {
  const char* name = kMax ? "max" : "min";
  auto axes = reduce_axes(name, c, c.input(0));
  dispatch_all(c.input(0).dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    MaxOp<T, kMax> op;
    if constexpr (std::is_same_v<T, bool>)
      op.start = !kMax;
    else if constexpr (std::is_integral_v<T>)
      op.start = kMax ? std::numeric_limits<A>::lowest() : std::numeric_limits<A>::max();
    else
      op.start = kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    run_reduce<T>(c, name, axes, op);
  });
}

template <bool kAll>
void bool_kernel(sdk::KernelContext& c) {
  const char* name = kAll ? "all" : "any";
  auto axes = reduce_axes(name, c, c.input(0));
  dispatch_all(c.input(0).dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduce<T>(c, name, axes, BoolOp<T, kAll>{});
  });
}

template <bool kMax>
void arg_kernel(sdk::KernelContext& c) {
  const char* name = kMax ? "argmax" : "argmin";
  sdk::TensorView x = c.input(0);
  fam::check_rank(name, x);
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  const int64_t axis = c.attr_int_or("axis", kNone);
  std::vector<int64_t> axes;
  if (c.attr_int_or("flatten", 0) || axis == kNone) {  // no axis: over all elements (Paddle)
    for (int32_t i = 0; i < x.ndim(); ++i) axes.push_back(i);
  } else if (x.ndim() > 0) {
    axes.push_back(fam::normalize_axis(name, axis, x.ndim()));
  }
  dispatch_all(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_reduce<T>(c, name, axes, ArgOp<T, kMax>{});
  });
}

}  // namespace

void register_reduce(Registry& r) {
  const auto real_bool = gpu_all_dtypes();  // bool, ints, floats
  r.add("sum", real_bool, &sum_kernel, kStrided);
  r.add("mean", gpu_float_dtypes(), &mean_kernel, kStrided);
  r.add("max", real_bool, &maxmin_kernel<true>, kStrided);
  r.add("min", real_bool, &maxmin_kernel<false>, kStrided);
  r.add("prod", gpu_real_dtypes(), &prod_kernel, kStrided);
  r.add("all", real_bool, &bool_kernel<true>, kStrided);
  r.add("any", real_bool, &bool_kernel<false>, kStrided);
  r.add("argmax", real_bool, &arg_kernel<true>, kStrided);
  r.add("argmin", real_bool, &arg_kernel<false>, kStrided);
}

}  // namespace oar_cuda

namespace oar_cuda {
void register_reduction_family(Registry& r) {
  register_reduce(r);
  register_scan_sort(r);
  register_softmax_norm(r);
  register_batch_norm(r);
  register_index(r);
}
}  // namespace oar_cuda
