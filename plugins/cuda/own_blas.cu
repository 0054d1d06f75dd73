// The plugin's own matmul and convolution kernels, for builds without vendor libraries (ROCm on Debian:
// no rocBLAS/hipBLASLt/MIOpen) and, with OAR_GPU_OWN_KERNELS=1, in the CUDA build (vendor.cc), so the
// same kernels are tested on NVIDIA hardware. Correct first, reasonably fast second: a shared-memory
// tiled GEMM and direct convolutions, deterministic (every output is summed by one thread, or by one
// block in a fixed tree order), accumulating in float (float64: double) like the CPU kernels.
//
// matmul uses the same mapping as the cuBLASLt path (matmul_plan.h): out^T = Y^T X^T as column-major
// strided-batched problems, so every shape the vendor path handles (1-D operands, broadcast and mixed
// batch dims, transposes) is handled here too.
//
// The kernels are in own_blas_kernels.cuh (tests/cuda_host runs them on the host); this file plans and
// launches them.
//
// Convolutions: x [N, C, *in], w [Co, C/groups, *k], y [N, Co, *out] with 1 to 3 spatial dims, padded
// to 3 with unit dims in front. Only the leading padding of each dim matters (the output sizes come from
// y's shape), so asymmetric paddings need no special case.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "own_blas_kernels.cuh"

namespace oar_cuda {
namespace {
using own::Conv;
using own::kTile;

// ---- matmul -------------------------------------------------------------------------------------------
constexpr int64_t kGridMax = 65535;

Plan own_plan(const sdk::KernelContext& c) {
  const sdk::TensorView x = c.input(0), y = c.input(1);
  if (x.dtype() != y.dtype())
    sdk::decline(std::string("matmul: mixed dtypes ") + sdk::dtype_name(x.dtype()) + " x " +
                 sdk::dtype_name(y.dtype()));
  return make_plan(x, y, c.attr_int_or("transpose_x", 0) != 0, c.attr_int_or("transpose_y", 0) != 0);
}

void matmul_supports(sdk::KernelContext& c) { own_plan(c); }

void matmul_kernel(sdk::KernelContext& c) {
  const Plan p = own_plan(c);
  const sdk::TensorView x = c.input(0), y = c.input(1), out = c.output(0);
  OAR_SDK_CHECK(out.numel() == p.batch * p.M * p.N, OAR_ERR_INVALID_ARGUMENT,
                "matmul: output has " << out.numel() << " elements, expected " << p.batch * p.M * p.N);
  if (out.numel() == 0) return;
  gpuStream_t stream = stream_of(c);
  const size_t elem = sdk::dtype_size(x.dtype());
  if (p.K == 0) {  // an empty contraction: zeros
    gpu_check(gpuMemsetAsync(out.raw(), 0, out.numel() * elem, stream), "matmul: memset");
    return;
  }
  const Problem q = problem_of(p);
  const int64_t m_tiles = (q.m + kTile - 1) / kTile;
  if (m_tiles > std::numeric_limits<int32_t>::max()) sdk::decline("matmul: more than 2^31-1 row tiles");
  const dim3 grid(static_cast<unsigned>(m_tiles),
                  static_cast<unsigned>(std::min((q.n + kTile - 1) / kTile, kGridMax)),
                  static_cast<unsigned>(std::min(q.count, kGridMax)));
  const dim3 block(kTile, kTile);
  dispatch_float(x.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Launch& run : launches(p)) {
      const T* a = static_cast<const T*>(y.raw()) + run.y;  // A = Y, B = X (matmul_plan.h)
      const T* b = static_cast<const T*>(x.raw()) + run.x;
      T* d = static_cast<T*>(out.raw()) + run.out;
      OAR_LAUNCH(own::gemm_tiled<T>, grid, block, stream)(q, a, b, d);
      check_launch("matmul");
    }
  });
}

// ---- convolutions --------------------------------------------------------------------------------------
enum Kind : int32_t { kFwd = 0, kBwdData = 1, kBwdFilter = 2 };
const char* const kOpNames[] = {"conv", "conv_grad_input", "conv_grad_filter"};

// The problem of a call of `kind`. The operands' roles: conv (x, w) -> y, conv_grad_input (dy, w) -> dx,
// conv_grad_filter (x, dy) -> dw.
Conv conv_of(const sdk::KernelContext& c, int32_t kind) {
  const char* op = kOpNames[kind];
  const sdk::TensorView a = c.input(0), b = c.input(1), o = c.output(0);
  const sdk::TensorView& x = kind == kBwdData ? o : a;
  const sdk::TensorView& w = kind == kBwdFilter ? o : b;
  const sdk::TensorView& y = kind == kFwd ? o : kind == kBwdData ? a : b;
  if (a.dtype() != b.dtype())
    sdk::decline(std::string(op) + ": mixed dtypes " + sdk::dtype_name(a.dtype()) + " and " +
                 sdk::dtype_name(b.dtype()));
  const int32_t sd = x.ndim() - 2;
  OAR_SDK_CHECK(sd >= 1 && sd <= 3 && w.ndim() == x.ndim() && y.ndim() == x.ndim(), OAR_ERR_INVALID_ARGUMENT,
                op << ": x, w and y must all be 3-D, 4-D or 5-D");
  std::vector<int64_t> s = c.attr_ints_or("strides", {}), pd = c.attr_ints_or("paddings", {}),
                       d = c.attr_ints_or("dilations", {});
  if (s.empty()) s.assign(sd, 1);
  if (pd.empty()) pd.assign(2 * sd, 0);
  if (d.empty()) d.assign(sd, 1);
  OAR_SDK_CHECK(static_cast<int32_t>(s.size()) == sd && static_cast<int32_t>(pd.size()) == 2 * sd &&
                    static_cast<int32_t>(d.size()) == sd,
                OAR_ERR_INVALID_ARGUMENT, op << ": strides/paddings/dilations do not fit the spatial rank");
  Conv p{};
  p.n = x.dim(0), p.c = x.dim(1), p.co = w.dim(0);
  p.groups = c.attr_int_or("groups", 1);
  OAR_SDK_CHECK(p.groups >= 1 && p.c % p.groups == 0 && p.co % p.groups == 0 && w.dim(1) == p.c / p.groups &&
                    y.dim(0) == p.n && y.dim(1) == p.co,
                OAR_ERR_INVALID_ARGUMENT,
                op << ": shapes do not fit groups=" << p.groups << " (x channels " << p.c << ", w "
                   << w.dim(0) << "x" << w.dim(1) << ")");
  const int32_t lead = 3 - sd;
  for (int32_t i = 0; i < 3; ++i) {
    const int32_t j = i - lead;  // the op's spatial dim, or < 0 for a unit dim
    p.in[i] = j < 0 ? 1 : x.dim(2 + j);
    p.k[i] = j < 0 ? 1 : w.dim(2 + j);
    p.out[i] = j < 0 ? 1 : y.dim(2 + j);
    p.pad[i] = j < 0 ? 0 : pd[2 * j];
    p.stride[i] = j < 0 ? 1 : s[j];
    p.dil[i] = j < 0 ? 1 : d[j];
    OAR_SDK_CHECK(p.stride[i] >= 1 && p.dil[i] >= 1 && p.pad[i] >= 0, OAR_ERR_INVALID_ARGUMENT,
                  op << ": strides and dilations must be >= 1 and paddings >= 0");
  }
  return p;
}

template <int32_t kKind>
void conv_supports(sdk::KernelContext& c) {
  conv_of(c, kKind);
}

template <int32_t kKind>
void conv_kernel(sdk::KernelContext& c) {
  const char* op = kOpNames[kKind];
  const sdk::TensorView a = c.input(0), b = c.input(1), out = c.output(0);
  if (out.numel() == 0) return;
  gpuStream_t stream = stream_of(c);
  if (a.numel() == 0 || b.numel() == 0) {  // e.g. the filter gradient of an empty batch: zeros
    gpu_check(gpuMemsetAsync(out.raw(), 0, out.numel() * sdk::dtype_size(out.dtype()), stream), op);
    return;
  }
  const Conv p = conv_of(c, kKind);
  dispatch_float(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a.raw());
    const T* pb = static_cast<const T*>(b.raw());
    T* po = static_cast<T*>(out.raw());
    const unsigned grid = static_cast<unsigned>(grid_for(out.numel(), c.device()));
    if (kKind == kFwd)
      OAR_LAUNCH(own::conv_fwd<T>, grid, kThreads, stream)(p, pa, pb, po);
    else if (kKind == kBwdData)
      OAR_LAUNCH(own::conv_bwd_data<T>, grid, kThreads, stream)(p, pa, pb, po);
    else
      OAR_LAUNCH(own::conv_bwd_filter<T>, fam::blocks_for(out.numel()), kThreads, stream)(p, pa, pb, po);
    check_launch(op);
  });
}

}  // namespace

void register_own_blas(Registry& r) {
  const auto f = gpu_float_dtypes();
  // Contiguous inputs only (no OAR_KERNEL_STRIDED_INPUTS), as the vendor path.
  r.add("matmul", f, &matmul_kernel, &matmul_supports);
  r.add("conv", f, &conv_kernel<kFwd>, &conv_supports<kFwd>);
  r.add("conv_grad_input", f, &conv_kernel<kBwdData>, &conv_supports<kBwdData>);
  r.add("conv_grad_filter", f, &conv_kernel<kBwdFilter>, &conv_supports<kBwdFilter>);
}

}  // namespace oar_cuda
