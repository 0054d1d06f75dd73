// Fused row kernels: softmax, log_softmax, layer_norm (+ grad), softmax_cross_entropy (+ grad).
// A block per row when the reduced axis is the last one (block-wide tree reductions, deterministic);
// a thread per column, sequential along the axis, otherwise. Semantics and accumulator types follow the
// CPU kernels (misc.cc, nn.cc): softmax sums exponentials in double; layer_norm and cross entropy keep
// statistics in float (double for float64).
#include <limits>

#include "family_common.cuh"

namespace oar_cuda {
namespace {

template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Threads per row of n elements: a warp for short rows (several rows per block), the block for long ones.
inline int row_group(int64_t n) { return n <= 1024 ? OAR_GPU_WARP_SIZE : kThreads; }
inline int64_t row_blocks(int64_t rows, int group) {
  const int64_t per_block = kThreads / group;
  return (rows + per_block - 1) / per_block;
}

// ---- softmax / log_softmax ----------------------------------------------------------------------------
// A NaN wins the max and then sticks, so a row holding a NaN is all NaN (as the CPU kernel).
template <typename C>
OAR_D C max_nan(C a, C b) {
  return (b > a || b != b) ? b : a;
}

// `group` threads per row (a warp for short rows, the block for long ones), several rows per block.
template <typename T, bool kLog>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t n,
                             int group) {
  using C = acc_t<T>;
  __shared__ C shm[kThreads];
  __shared__ double shs[kThreads];
  const int per_block = blockDim.x / group;
  const int lane = threadIdx.x % group, lead = threadIdx.x - lane;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < rows; base += int64_t(gridDim.x) * per_block) {
    const int64_t row = base + threadIdx.x / group;
    const bool valid = row < rows;  // every thread takes part in the reductions (they synchronise)
    const int64_t len = valid ? n : 0;
    const T* r = x + (valid ? row : 0) * n;
    T* w = out + (valid ? row : 0) * n;
    C m = C(-INFINITY);
    for (int64_t i = lane; i < len; i += group) m = max_nan(m, to_acc(r[i]));
    fam::group_reduce(shm, m, group, [](C a, C b) { return max_nan(a, b); });
    m = shm[lead];
    double s = 0;
    for (int64_t i = lane; i < len; i += group) s += static_cast<double>(exp(to_acc(r[i]) - m));
    fam::group_reduce(shs, s, group, [](double a, double b) { return a + b; });
    s = shs[lead];
    if constexpr (kLog) {
      const C ls = C(log(s));
      for (int64_t i = lane; i < len; i += group) w[i] = from_acc<T>(C(to_acc(r[i]) - m - ls));
    } else {
      const double inv = 1.0 / s;
      for (int64_t i = lane; i < len; i += group)
        w[i] = from_acc<T>(C(static_cast<double>(exp(to_acc(r[i]) - m)) * inv));
    }
  }
}

// x is [outer, n, inner], inner > 1: one thread per (outer, inner) column.
template <typename T, bool kLog>
__global__ void softmax_cols(const T* __restrict__ x, T* __restrict__ out, int64_t outer, int64_t n,
                             int64_t inner) {
  using C = acc_t<T>;
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; col < outer * inner;
       col += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (col / inner) * n * inner + col % inner;
    C m = C(-INFINITY);
    for (int64_t i = 0; i < n; ++i) m = max_nan(m, to_acc(x[base + i * inner]));
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(exp(to_acc(x[base + i * inner]) - m));
    const double k = kLog ? log(s) : 1.0 / s;
    for (int64_t i = 0; i < n; ++i) {
      const C v = to_acc(x[base + i * inner]) - m;
      out[base + i * inner] =
          kLog ? from_acc<T>(C(v - C(k))) : from_acc<T>(C(static_cast<double>(exp(v)) * k));
    }
  }
}

// A scalar: softmax is 1, log_softmax 0 (NaN stays NaN).
template <typename T, bool kLog>
struct ScalarSoftmax {
  OAR_D T operator()(T a) const {
    const acc_t<T> v = to_acc(a);
    return from_acc<T>(v != v ? v : acc_t<T>(kLog ? 0 : 1));
  }
};

template <bool kLog>
void softmax_kernel(sdk::KernelContext& c) {
  const char* name = kLog ? "log_softmax" : "softmax";
  sdk::TensorView x = c.input(0), out = c.output(0);
  fam::check_rank(name, x);
  dispatch_float(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.ndim() == 0) {
      unary<T, T>(c, name, ScalarSoftmax<T, kLog>{});
      return;
    }
    const int64_t axis = fam::normalize_axis(name, c.attr_int_or("axis", -1), x.ndim());
    const int64_t outer = fam::product(x.dims(), 0, axis), n = x.dim(static_cast<int32_t>(axis));
    const int64_t inner = fam::product(x.dims(), axis + 1, x.ndim());
    if (outer == 0 || n == 0 || inner == 0) return;
    const T* px = static_cast<const T*>(x.raw());
    T* po = static_cast<T*>(out.raw());
    gpuStream_t s = stream_of(c);
    if (inner == 1) {
      const int group = row_group(n);
      softmax_rows<T, kLog>
          <<<fam::blocks_for(row_blocks(outer, group)), kThreads, 0, s>>>(px, po, outer, n, group);
    } else {
      softmax_cols<T, kLog><<<static_cast<unsigned>(grid_for(outer * inner, c.device())), kThreads, 0, s>>>(
          px, po, outer, n, inner);
    }
    check_launch(name);
  });
}

// ---- layer_norm ------------------------------------------------------------------------------------------
template <typename T>
__global__ void layer_norm_fwd(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                               T* __restrict__ out, stat_t<T>* __restrict__ mean,
                               stat_t<T>* __restrict__ rstd, int64_t outer, int64_t n, double eps,
                               int group) {
  using S = stat_t<T>;
  __shared__ S sh[kThreads];
  const int per_block = blockDim.x / group;
  const int lane = threadIdx.x % group, lead = threadIdx.x - lane;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < outer; base += int64_t(gridDim.x) * per_block) {
    const int64_t row0 = base + threadIdx.x / group;
    const bool valid = row0 < outer;  // every thread takes part in the reductions (they synchronise)
    const int64_t row = valid ? row0 : 0, len = valid ? n : 0;
    const T* r = x + row * n;
    S sum = 0;
    for (int64_t i = lane; i < len; i += group) sum += S(to_acc(r[i]));
    fam::group_reduce(sh, sum, group, [](S a, S b) { return a + b; });
    const S m = sh[lead] / S(n);
    S var = 0;
    for (int64_t i = lane; i < len; i += group) {
      const S d = S(to_acc(r[i])) - m;
      var += d * d;
    }
    fam::group_reduce(sh, var, group, [](S a, S b) { return a + b; });
    const S rs = S(1) / sqrt(sh[lead] / S(n) + S(eps));
    if (valid && lane == 0) {
      mean[row] = m;
      rstd[row] = rs;
    }
    T* o = out + row * n;
    for (int64_t i = lane; i < len; i += group)
      o[i] = from_acc<T>(acc_t<T>((S(to_acc(r[i])) - m) * rs * S(to_acc(w[i])) + S(to_acc(b[i]))));
  }
}

void layer_norm_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), w = c.input(1), b = c.input(2);
  const double eps = c.attr_float_or("epsilon", 1e-5);
  dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const int64_t n = w.numel(), outer = n == 0 ? 0 : x.numel() / n;
    if (outer == 0) return;
    const int group = row_group(n);
    layer_norm_fwd<T><<<fam::blocks_for(row_blocks(outer, group)), kThreads, 0, stream_of(c)>>>(
        static_cast<const T*>(x.raw()), static_cast<const T*>(w.raw()), static_cast<const T*>(b.raw()),
        static_cast<T*>(c.output(0).raw()), static_cast<S*>(c.output(1).raw()),
        static_cast<S*>(c.output(2).raw()), outer, n, eps, group);
    check_launch("layer_norm");
  });
}

// dx = rstd * (w*dy - mean(w*dy) - xhat * mean(w*dy*xhat)), `group` threads per row.
template <typename T>
__global__ void layer_norm_dx(const T* __restrict__ x, const T* __restrict__ w,
                              const stat_t<T>* __restrict__ mean, const stat_t<T>* __restrict__ rstd,
                              const T* __restrict__ dy, T* __restrict__ dx, int64_t outer, int64_t n,
                              int group) {
  using S = stat_t<T>;
  __shared__ S sh[kThreads];
  const int per_block = blockDim.x / group;
  const int lane = threadIdx.x % group, lead = threadIdx.x - lane;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < outer; base += int64_t(gridDim.x) * per_block) {
    const int64_t row0 = base + threadIdx.x / group;
    const bool valid = row0 < outer;  // every thread takes part in the reductions (they synchronise)
    const int64_t row = valid ? row0 : 0, len = valid ? n : 0;
    const T* xr = x + row * n;
    const T* gr = dy + row * n;
    const S m = mean[row], rs = rstd[row];
    S sg = 0, sgx = 0;
    for (int64_t i = lane; i < len; i += group) {
      const S wg = S(to_acc(gr[i])) * S(to_acc(w[i]));
      sg += wg;
      sgx += wg * (S(to_acc(xr[i])) - m) * rs;
    }
    fam::group_reduce(sh, sg, group, [](S a, S b) { return a + b; });
    const S mg = sh[lead] / S(n);
    fam::group_reduce(sh, sgx, group, [](S a, S b) { return a + b; });
    const S mgx = sh[lead] / S(n);
    T* d = dx + row * n;
    for (int64_t i = lane; i < len; i += group) {
      const S xh = (S(to_acc(xr[i])) - m) * rs;
      d[i] = from_acc<T>(acc_t<T>(rs * (S(to_acc(gr[i])) * S(to_acc(w[i])) - mg - xh * mgx)));
    }
  }
}

// Partial dweight/dbias of one chunk of rows per blockIdx.y, a thread per column.
template <typename T>
__global__ void layer_norm_dwb_partial(const T* __restrict__ x, const stat_t<T>* __restrict__ mean,
                                       const stat_t<T>* __restrict__ rstd, const T* __restrict__ dy,
                                       stat_t<T>* __restrict__ pdw, stat_t<T>* __restrict__ pdb,
                                       int64_t outer, int64_t n, int64_t chunks) {
  using S = stat_t<T>;
  const int64_t ch = blockIdx.y;
  const int64_t r0 = outer * ch / chunks, r1 = outer * (ch + 1) / chunks;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    S aw = 0, ab = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const S g = S(to_acc(dy[r * n + j]));
      aw += g * (S(to_acc(x[r * n + j])) - mean[r]) * rstd[r];
      ab += g;
    }
    pdw[ch * n + j] = aw;
    pdb[ch * n + j] = ab;
  }
}

template <typename T>
__global__ void layer_norm_dwb_finish(const stat_t<T>* __restrict__ pdw, const stat_t<T>* __restrict__ pdb,
                                      T* __restrict__ dw, T* __restrict__ db, int64_t n, int64_t chunks) {
  using S = stat_t<T>;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
       j += int64_t(gridDim.x) * blockDim.x) {
    S a = 0, b = 0;
    for (int64_t ch = 0; ch < chunks; ++ch) a += pdw[ch * n + j], b += pdb[ch * n + j];
    dw[j] = from_acc<T>(acc_t<T>(a));
    db[j] = from_acc<T>(acc_t<T>(b));
  }
}

void layer_norm_grad_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), w = c.input(1), mean = c.input(2), rstd = c.input(3), dy = c.input(4);
  dispatch_float(x.dtype(), "layer_norm_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = stat_t<T>;
    const int64_t n = w.numel(), outer = n == 0 ? 0 : x.numel() / n;
    if (n == 0) return;
    gpuStream_t s = stream_of(c);
    const T* px = static_cast<const T*>(x.raw());
    const T* pg = static_cast<const T*>(dy.raw());
    const S* pm = static_cast<const S*>(mean.raw());
    const S* pr = static_cast<const S*>(rstd.raw());
    if (outer > 0) {
      const int group = row_group(n);
      layer_norm_dx<T><<<fam::blocks_for(row_blocks(outer, group)), kThreads, 0, s>>>(
          px, static_cast<const T*>(w.raw()), pm, pr, pg, static_cast<T*>(c.output(0).raw()), outer, n,
          group);
      check_launch("layer_norm_grad");
    }
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(outer, 128));
    S* part = static_cast<S*>(c.workspace(2 * sizeof(S) * static_cast<uint64_t>(chunks * n)));
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 1024)),
                    static_cast<unsigned>(chunks));
    layer_norm_dwb_partial<T>
        <<<grid, kThreads, 0, s>>>(px, pm, pr, pg, part, part + chunks * n, outer, n, chunks);
    check_launch("layer_norm_grad");
    layer_norm_dwb_finish<T><<<static_cast<unsigned>(grid_for(n, c.device())), kThreads, 0, s>>>(
        part, part + chunks * n, static_cast<T*>(c.output(1).raw()), static_cast<T*>(c.output(2).raw()), n,
        chunks);
    check_launch("layer_norm_grad");
  });
}

// ---- softmax cross entropy (hard labels)
// ------------------------------------------------------------------- loss = logsumexp(x) - x[label]; the
// softmax is saved for the backward. A label equal to ignore_index gives loss 0. A label out of [0, K) is
// reported through the device's error word (raised at the next synchronization, as the CPU's IndexError)
// and its loss is NaN.
template <typename T>
__global__ void softmax_ce_fwd(const T* __restrict__ x, const void* __restrict__ label, bool label64,
                               T* __restrict__ loss, T* __restrict__ sm, int64_t N, int64_t K, int64_t ignore,
                               fam::BadIndex bad) {
  using S = stat_t<T>;
  __shared__ S sh[kThreads];
  const int bd = blockDim.x;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T* r = x + row * K;
    T* w = sm + row * K;
    S m = S(-INFINITY);  // NaN ignored here (the CPU's std::max); exp(NaN - m) still makes the row NaN
    for (int64_t i = threadIdx.x; i < K; i += bd) {
      const S v = S(to_acc(r[i]));
      m = v > m ? v : m;
    }
    fam::group_reduce(sh, m, bd, [](S a, S b) { return b > a ? b : a; });
    m = sh[0];
    S s = 0;
    for (int64_t i = threadIdx.x; i < K; i += bd) s += S(exp(S(to_acc(r[i])) - m));
    fam::group_reduce(sh, s, bd, [](S a, S b) { return a + b; });
    s = sh[0];
    const S inv = S(1) / s;
    for (int64_t i = threadIdx.x; i < K; i += bd) {
      const T e = from_acc<T>(acc_t<T>(exp(S(to_acc(r[i])) - m)));  // rounded to T first, as the CPU
      w[i] = from_acc<T>(acc_t<T>(S(to_acc(e)) * inv));
    }
    if (threadIdx.x == 0) {
      const int64_t l = fam::load_index(label, label64, row);
      if (l == ignore)
        loss[row] = from_acc<T>(acc_t<T>(0));
      else if (l < 0 || l >= K) {
        bad.report(l, K);
        loss[row] = from_acc<T>(acc_t<T>(NAN));
      } else
        loss[row] = from_acc<T>(acc_t<T>(m + S(log(s)) - S(to_acc(r[l]))));
    }
  }
}

void softmax_ce_supports(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), label = c.input(1);
  if (x.ndim() != 2) sdk::decline("softmax_cross_entropy on gpu takes 2-D logits");
  if (!fam::is_index_dtype(label.dtype()))
    sdk::decline("labels must be int32 or int64 (the CPU reports others)");
  if (label.numel() != x.dim(0)) sdk::decline("label count does not match the rows (the CPU reports it)");
}

void softmax_ce_kernel(sdk::KernelContext& c) {
  sdk::TensorView x = c.input(0), label = c.input(1);
  const int64_t ignore = c.attr_int_or("ignore_index", -100);
  dispatch_float(x.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t N = x.dim(0), K = x.dim(1);
    if (N == 0) return;
    softmax_ce_fwd<T><<<fam::blocks_for(N), kThreads, 0, stream_of(c)>>>(
        static_cast<const T*>(x.raw()), label.raw(), label.dtype() == OAR_DTYPE_INT64,
        static_cast<T*>(c.output(0).raw()), static_cast<T*>(c.output(1).raw()), N, K, ignore,
        fam::bad_index(c, kErrSoftmaxCrossEntropy));
    check_launch("softmax_cross_entropy");
  });
}

template <typename T>
__global__ void softmax_ce_bwd(const T* __restrict__ sm, const void* __restrict__ label, bool label64,
                               const T* __restrict__ dloss, T* __restrict__ dx, int64_t N, int64_t K,
                               int64_t ignore) {
  using C = acc_t<T>;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < N * K;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = e / K, i = e % K;
    const int64_t l = fam::load_index(label, label64, o);
    if (l == ignore || l < 0 || l >= K) {
      dx[e] = from_acc<T>(C(0));
      continue;
    }
    const C g = to_acc(dloss[o]);
    T v = from_acc<T>(C(to_acc(sm[e]) * g));
    if (i == l) v = from_acc<T>(C(to_acc(v) - g));
    dx[e] = v;
  }
}

void softmax_ce_grad_supports(sdk::KernelContext& c) {
  sdk::TensorView sm = c.input(0), label = c.input(1), dloss = c.input(2);
  if (sm.ndim() != 2) sdk::decline("softmax_cross_entropy_grad on gpu takes a 2-D softmax");
  if (!fam::is_index_dtype(label.dtype())) sdk::decline("labels must be int32 or int64");
  if (label.numel() != sm.dim(0) || dloss.numel() != sm.dim(0))
    sdk::decline("label / dloss count does not match the rows (the CPU reports it)");
}

void softmax_ce_grad_kernel(sdk::KernelContext& c) {
  sdk::TensorView sm = c.input(0), label = c.input(1);
  const int64_t ignore = c.attr_int_or("ignore_index", -100);
  dispatch_float(sm.dtype(), "softmax_cross_entropy_grad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t N = sm.dim(0), K = sm.dim(1);
    if (N * K == 0) return;
    softmax_ce_bwd<T><<<static_cast<unsigned>(grid_for(N * K, c.device())), kThreads, 0, stream_of(c)>>>(
        static_cast<const T*>(sm.raw()), label.raw(), label.dtype() == OAR_DTYPE_INT64,
        static_cast<const T*>(c.input(2).raw()), static_cast<T*>(c.output(0).raw()), N, K, ignore);
    check_launch("softmax_cross_entropy_grad");
  });
}

void layer_norm_supports(sdk::KernelContext& c) {
  // weight and bias are required by the op; a call without them goes to the CPU, which explains it.
  if (!c.input(1).defined() || !c.input(2).defined()) sdk::decline("layer_norm on gpu needs weight and bias");
  if (c.input(1).numel() != c.input(2).numel()) sdk::decline("weight and bias sizes differ");
  if (c.input(1).numel() > 0 && c.input(0).numel() % c.input(1).numel() != 0)
    sdk::decline("weight size does not divide x (the CPU reports it)");
}

void layer_norm_grad_supports(sdk::KernelContext& c) {
  if (!c.input(1).defined()) sdk::decline("layer_norm_grad on gpu needs weight");
  if (c.input(1).numel() > 0 && c.input(0).numel() % c.input(1).numel() != 0)
    sdk::decline("weight size does not divide x (the CPU reports it)");
}

}  // namespace

void register_softmax_norm(Registry& r) {
  const auto floats = gpu_float_dtypes();
  r.add("softmax", floats, &softmax_kernel<false>);
  r.add("log_softmax", floats, &softmax_kernel<true>);
  r.add("layer_norm", floats, &layer_norm_kernel, &layer_norm_supports);
  r.add("layer_norm_grad", floats, &layer_norm_grad_kernel, &layer_norm_grad_supports);
  r.add("softmax_cross_entropy", floats, &softmax_ce_kernel, &softmax_ce_supports);
  r.add("softmax_cross_entropy_grad", floats, &softmax_ce_grad_kernel, &softmax_ce_grad_supports);
}

}  // namespace oar_cuda
