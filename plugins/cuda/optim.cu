// The fused optimizer updates (framework/src/ops_optim.cc defines the ops and the input layout: equal
// blocks [params, grads, accumulators...], n tensors each; plugins/cpu/optim.cc is the reference).
//
// Multi-tensor: one launch updates up to 24 parameters (blockIdx.y picks one; a launch that packs
// small tensors' elements densely into one grid is the next step), lamb excepted (three launches per
// parameter). The per-element arithmetic is in optim_math.h, host+device,
// where optim_math_test.cc checks it against the CPU kernel's loops: sgd, momentum, adam (amsgrad,
// AdamW decay), adamax, adagrad, adadelta and rmsprop give the CPU's bits. lamb's norms and
// merged_sum_squares sum in float64 in another order than the CPU (per block, then the blocks in
// order: deterministic, but not the CPU's association), so they agree to rounding.
//
// The beta-power accumulators (one float32/float64 element each) live on the GPU: the update kernels
// read them there (the bias corrections in float64 per thread, as the CPU does on the host), and a
// one-thread kernel advances them afterwards on the same stream.
#include <algorithm>

#include "cuda_common.h"
#include "optim_math.h"

namespace oar_cuda {
namespace {

using optim::Hyper;
using optim::Param;

#define OAR_GRID_LOOP(i, n)                                                 \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

// Up to kBatch parameters per launch (kernel arguments are limited to 4 KiB); blockIdx.y picks the
// parameter, the x blocks stride over its elements.
constexpr int32_t kBatch = 24;
struct Batch {
  Param q[kBatch];
  int32_t count;
};
static_assert(sizeof(Batch) < 4000, "a Batch must fit in CUDA's 4 KiB of kernel arguments");

// Every element of the batch's parameters through the update U<T> (optim_math.h).
template <typename T, template <typename> class U>
__global__ void update_k(Batch b, Hyper h) {
  const Param& q = b.q[blockIdx.y];
  const U<T> u(q, h);
  OAR_GRID_LOOP(i, q.n) u(q, i);
}

// ---- deterministic float64 sums ----------------------------------------------------------------------
// Blocks per tensor for a partial sum: a function of the size alone, so the result does not depend on
// the GPU.
constexpr int64_t kMaxSumBlocks = 128;
int64_t sum_blocks(int64_t n) {
  return std::max<int64_t>(1, std::min<int64_t>(kMaxSumBlocks, (n + kThreads - 1) / kThreads));
}

// Sums v over the block (a fixed tree): the total in thread 0.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] = __dadd_rn(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  return shared[0];
}

// part[blockIdx.x] = sum over this block's elements of x^2 (x in its compute type, then float64).
template <typename T>
__global__ void sum_squares_part(int64_t n, const T* x, double* part) {
  __shared__ double sh[kThreads];
  double acc = 0;
  OAR_GRID_LOOP(i, n) {
    const double v = static_cast<double>(to_acc(x[i]));
    acc = __dadd_rn(acc, __dmul_rn(v, v));
  }
  const double total = block_sum(acc, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = total;
}

// out = sum of part[0..n) in order (float32 or float64 out).
__global__ void sum_parts(int64_t n, const double* part, void* out, int32_t f64) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s = __dadd_rn(s, part[i]);
  if (f64)
    *static_cast<double*>(out) = s;
  else
    *static_cast<float*>(out) = static_cast<float>(s);
}

// ---- lamb: moments and the two squared norms, the trust ratio, then the update ----------------------
// part[2 * block] = sum p^2, part[2 * block + 1] = sum r^2 over this block's elements.
template <typename T>
__global__ void lamb_moments(Param q, Hyper h, double* part) {
  __shared__ double sh[kThreads];
  const optim::Lamb<T> u(q, h);
  double ps = 0, rs = 0;
  OAR_GRID_LOOP(i, q.n) {
    acc_t<T> pv, rv;
    u.moments(q, i, pv, rv);
    ps = __dadd_rn(ps, __dmul_rn(double(pv), double(pv)));
    rs = __dadd_rn(rs, __dmul_rn(double(rv), double(rv)));
  }
  const double pt = block_sum(ps, sh);
  __syncthreads();  // sh is reused
  const double rt = block_sum(rs, sh);
  if (threadIdx.x == 0) part[2 * blockIdx.x] = pt, part[2 * blockIdx.x + 1] = rt;
}

__global__ void lamb_step_k(Param q, Hyper h, int64_t blocks, const double* part, double* step) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double pn = 0, rn = 0;
  for (int64_t b = 0; b < blocks; ++b) pn = __dadd_rn(pn, part[2 * b]), rn = __dadd_rn(rn, part[2 * b + 1]);
  *step = optim::lamb_step(q.lr, q.extra, h.flag != 0, pn, rn);
}

template <typename T>
__global__ void lamb_update(Param q, Hyper h, const double* step) {
  const optim::Lamb<T> u(q, h);
  const acc_t<T> s = acc_t<T>(*step);
  OAR_GRID_LOOP(i, q.n) u.apply(q, i, s);
}

// The beta powers advance after the update, one parameter after the other in one thread (a beta power
// passed for two parameters advances twice, as on the CPU, without a race).
__global__ void scale_pows(Batch b, double f1, double f2) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int32_t k = 0; k < b.count; ++k) {
    optim::scale_pow(const_cast<void*>(b.q[k].pow[0]), f1, b.q[k].pow_f64);
    if (b.q[k].pow[1]) optim::scale_pow(const_cast<void*>(b.q[k].pow[1]), f2, b.q[k].pow_f64);
  }
}

// ---- host side ----------------------------------------------------------------------------------------
// A per-parameter attribute list: empty -> fallback, one value -> for all, else value k.
std::vector<double> per_param(const sdk::KernelContext& c, const char* name, int32_t n, double fallback) {
  std::vector<double> v = c.attr_floats(name);
  if (v.empty()) return std::vector<double>(n, fallback);
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  OAR_SDK_CHECK(
      static_cast<int32_t>(v.size()) == n, OAR_ERR_INVALID_ARGUMENT,
      "optimizer: attribute '" << name << "' has " << v.size() << " values for " << n << " parameters");
  return v;
}

// The call's parameters: blocks of n tensors.
struct Call {
  sdk::KernelContext& c;
  const char* op;
  int32_t blocks, n;
  std::vector<double> lr, l2, gs;
  Call(sdk::KernelContext& ctx, const char* name, int32_t nblocks)
      : c(ctx), op(name), blocks(nblocks), n(ctx.num_inputs() / nblocks) {
    lr = per_param(c, "learning_rate", n, 0);
    l2 = per_param(c, "l2_coeff", n, 0);
    gs = per_param(c, "grad_scale", n, 1);
  }
  sdk::TensorView at(int32_t block, int32_t k) const { return c.input(block * n + k); }
  // Parameter k: param, grad, `states` accumulators, the beta powers from block `pow_block` (-1: none).
  Param param(int32_t k, int32_t pow_block = -1, int32_t states = 0) const {
    Param q{};
    for (int32_t b = 0; b < 2 + states && b < blocks; ++b) q.t[b] = at(b, k).raw();
    if (pow_block >= 0) {
      q.pow[0] = at(pow_block, k).raw();
      if (pow_block + 1 < blocks) q.pow[1] = at(pow_block + 1, k).raw();  // beta2_pow (adam, lamb)
      q.pow_f64 = at(pow_block, k).dtype() == OAR_DTYPE_FLOAT64;
    }
    q.n = at(0, k).numel();
    q.lr = lr[k], q.l2 = l2[k], q.gs = gs[k];
    return q;
  }
  int32_t dtype() const { return at(0, 0).dtype(); }
};

// Calls launch(batch, most elements of a parameter in it) for the parameters make(0..n) in batches.
template <typename Make, typename Launch>
void for_batches(const Call& call, Make make, Launch launch) {
  Batch b{};
  int64_t most = 0;
  for (int32_t k = 0; k < call.n; ++k) {
    b.q[b.count++] = make(k);
    most = std::max(most, b.q[b.count - 1].n);
    if (b.count == kBatch || k + 1 == call.n) {
      launch(b, most);
      b.count = 0, most = 0;
    }
  }
  check_launch(call.op);
}

// The update U<T> over every parameter: one launch per kBatch parameters.
template <typename T, template <typename> class U, typename Make>
void update_all(const Call& call, gpuStream_t s, const Hyper& h, Make make) {
  const int64_t sms = device_prop(call.c.device()).multiProcessorCount;
  for_batches(call, make, [&](const Batch& b, int64_t most) {
    if (most == 0) return;
    // x blocks for the largest parameter, fewer when many parameters share the launch
    const int64_t bx =
        std::min(grid_for(most, call.c.device()), std::max<int64_t>(4 * sms, 32 * sms / b.count));
    update_k<T, U><<<dim3(static_cast<unsigned>(bx), static_cast<unsigned>(b.count)), kThreads, 0, s>>>(b, h);
  });
}

template <typename Make>
void advance_pows(const Call& call, gpuStream_t s, Make make, double b1, double b2) {
  for_batches(call, make, [&](const Batch& b, int64_t) { scale_pows<<<1, 1, 0, s>>>(b, b1, b2); });
}

// The beta powers must be float32/float64 scalars of one dtype per parameter pair (shape inference
// checks each; a pair of different dtypes is declined rather than read wrongly).
void check_pows(const Call& call, int32_t pow_block, int32_t count) {
  for (int32_t k = 0; k < call.n; ++k)
    for (int32_t j = 1; j < count; ++j)
      if (call.at(pow_block + j, k).dtype() != call.at(pow_block, k).dtype())
        sdk::decline(std::string(call.op) + ": beta powers of different dtypes");
}

template <typename F>
void by_dtype(const Call& call, F f) {
  dispatch_float(call.dtype(), call.op, f);
}

void sgd_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_sgd", 2);
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Sgd>(call, s, Hyper{}, [&](int32_t k) { return call.param(k); });
  });
}

void momentum_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_momentum", 3);
  const Hyper h{c.attr_float("mu"), c.attr_float("rescale_grad"), 0, c.attr_int("use_nesterov") != 0};
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Momentum>(call, s, h, [&](int32_t k) { return call.param(k, -1, 1); });
  });
}

void adam_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_adam", 7);
  check_pows(call, 4, 2);
  const auto coeff = per_param(c, "coeff", call.n, 0);
  const double b1 = c.attr_float("beta1"), b2 = c.attr_float("beta2");
  const Hyper h{b1, b2, c.attr_float("epsilon"), c.attr_int("amsgrad") != 0};
  auto make = [&](int32_t k) {
    Param q = call.param(k, 4, 2);
    q.t[6] = h.flag ? call.at(6, k).raw() : nullptr;
    q.extra = 1 - call.lr[k] * coeff[k];  // AdamW's decay factor, exactly 1 without it (the CPU's formula)
    return q;
  };
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Adam>(call, s, h, make);
  });
  advance_pows(call, s, make, b1, b2);
}

void adamax_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_adamax", 5);
  const double b1 = c.attr_float("beta1");
  const Hyper h{b1, c.attr_float("beta2"), c.attr_float("epsilon"), 0};
  auto make = [&](int32_t k) {
    Param q = call.param(k, 4, 2);
    q.pow[1] = nullptr;  // adamax has beta1_pow only
    return q;
  };
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Adamax>(call, s, h, make);
  });
  advance_pows(call, s, make, b1, 1.0);
}

void adagrad_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_adagrad", 3);
  const Hyper h{c.attr_float("epsilon"), 0, 0, 0};
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Adagrad>(call, s, h, [&](int32_t k) { return call.param(k, -1, 1); });
  });
}

void adadelta_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_adadelta", 4);
  const Hyper h{c.attr_float("rho"), c.attr_float("epsilon"), 0, 0};
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Adadelta>(call, s, h, [&](int32_t k) { return call.param(k, -1, 2); });
  });
}

void rmsprop_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_rmsprop", 5);
  const Hyper h{c.attr_float("rho"), c.attr_float("epsilon"), c.attr_float("momentum"),
                c.attr_int("centered") != 0};
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_all<T, optim::Rmsprop>(call, s, h, [&](int32_t k) { return call.param(k, -1, 3); });
  });
}

void lamb_kernel(sdk::KernelContext& c) {
  Call call(c, "merged_lamb", 6);
  check_pows(call, 4, 2);
  const auto wd = per_param(c, "weight_decay", call.n, 0);
  const double b1 = c.attr_float("beta1"), b2 = c.attr_float("beta2");
  const Hyper h{b1, b2, c.attr_float("epsilon"), c.attr_int("always_adapt") != 0};
  // Workspace: per parameter its partial sums (2 per block) and its step, float64.
  std::vector<int64_t> offset(call.n + 1, 0);
  for (int32_t k = 0; k < call.n; ++k) offset[k + 1] = offset[k] + 2 * sum_blocks(call.at(0, k).numel()) + 1;
  auto* ws = static_cast<double*>(c.workspace(offset[call.n] * sizeof(double)));
  gpuStream_t s = stream_of(c);
  by_dtype(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int32_t k = 0; k < call.n; ++k) {
      Param q = call.param(k, 4, 2);
      q.extra = wd[k];
      const int64_t blocks = sum_blocks(q.n);
      double* part = ws + offset[k];
      double* step = part + 2 * blocks;
      if (q.n == 0) continue;
      lamb_moments<T><<<blocks, kThreads, 0, s>>>(q, h, part);
      lamb_step_k<<<1, 1, 0, s>>>(q, h, blocks, part, step);
      lamb_update<T><<<grid_for(q.n, c.device()), kThreads, 0, s>>>(q, h, step);
    }
    check_launch(call.op);
  });
  advance_pows(
      call, s, [&](int32_t k) { return call.param(k, 4, 2); }, b1, b2);
}

void sum_squares_kernel(sdk::KernelContext& c) {
  const int32_t n = c.num_inputs();
  const sdk::TensorView out = c.output(0);
  std::vector<int64_t> offset(n + 1, 0);
  for (int32_t k = 0; k < n; ++k) offset[k + 1] = offset[k] + sum_blocks(c.input(k).numel());
  auto* part = static_cast<double*>(c.workspace(offset[n] * sizeof(double)));
  gpuStream_t s = stream_of(c);
  dispatch_float(c.input(0).dtype(), "merged_sum_squares", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int32_t k = 0; k < n; ++k) {
      const sdk::TensorView x = c.input(k);
      // an empty tensor's one block writes 0
      sum_squares_part<T><<<sum_blocks(x.numel()), kThreads, 0, s>>>(
          x.numel(), static_cast<const T*>(x.raw()), part + offset[k]);
    }
  });
  sum_parts<<<1, 1, 0, s>>>(offset[n], part, out.raw(), out.dtype() == OAR_DTYPE_FLOAT64);
  check_launch("merged_sum_squares");
}

}  // namespace

void register_optim(Registry& r) {
  const auto f = gpu_float_dtypes();
  r.add("merged_sum_squares", f, &sum_squares_kernel);
  r.add("merged_sgd", f, &sgd_kernel);
  r.add("sgd", f, &sgd_kernel);
  r.add("merged_momentum", f, &momentum_kernel);
  r.add("momentum", f, &momentum_kernel);
  r.add("merged_adam", f, &adam_kernel);
  r.add("adam", f, &adam_kernel);
  r.add("merged_adamax", f, &adamax_kernel);
  r.add("merged_adagrad", f, &adagrad_kernel);
  r.add("merged_adadelta", f, &adadelta_kernel);
  r.add("merged_rmsprop", f, &rmsprop_kernel);
  r.add("merged_lamb", f, &lamb_kernel);
}

}  // namespace oar_cuda
