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
// Convolutions: x [N, C, *in], w [Co, C/groups, *k], y [N, Co, *out] with 1 to 3 spatial dims, padded
// to 3 with unit dims in front. Only the leading padding of each dim matters (the output sizes come from
// y's shape), so asymmetric paddings need no special case.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "family_common.cuh"
#include "matmul_plan.h"

namespace oar_cuda {
namespace {

// ---- matmul -------------------------------------------------------------------------------------------
constexpr int kTile = 16;  // kTile x kTile threads, one output each

// D (m x n, column-major, ldc) = op(A) (m x k) * op(B) (k x n), for `count` matrices (strides in elements;
// 0 = the same matrix for every entry). Grid: x over m tiles, y and z stride over n tiles and matrices.
template <typename T>
__global__ void gemm_tiled(Problem q, const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ d) {
  using A = acc_t<T>;
  __shared__ A sa[kTile][kTile + 1];  // sa[l][i] = op(A)(i0 + i, l0 + l)
  __shared__ A sb[kTile][kTile + 1];  // sb[j][l] = op(B)(l0 + l, j0 + j)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i = int64_t(blockIdx.x) * kTile + tx;
  for (int64_t z = blockIdx.z; z < q.count; z += gridDim.z) {
    const T* az = a + z * q.stride_a;
    const T* bz = b + z * q.stride_b;
    for (int64_t jt = blockIdx.y; jt * kTile < q.n; jt += gridDim.y) {
      const int64_t j = jt * kTile + ty;
      const int64_t jb = jt * kTile + tx;  // the column this thread loads into sb
      A acc = A(0);
      for (int64_t l0 = 0; l0 < q.k; l0 += kTile) {
        const int64_t la = l0 + ty, lb = l0 + ty;
        A va = A(0), vb = A(0);
        if (i < q.m && la < q.k) va = to_acc(q.trans_a ? az[la + i * q.lda] : az[i + la * q.lda]);
        if (jb < q.n && lb < q.k) vb = to_acc(q.trans_b ? bz[jb + lb * q.ldb] : bz[lb + jb * q.ldb]);
        sa[ty][tx] = va;
        sb[tx][ty] = vb;
        __syncthreads();
        for (int l = 0; l < kTile; ++l) acc += sa[l][tx] * sb[ty][l];
        __syncthreads();
      }
      if (i < q.m && j < q.n) d[z * q.stride_c + i + j * q.ldc] = from_acc<T>(acc);
    }
  }
}

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
      gemm_tiled<T><<<grid, block, 0, stream>>>(q, static_cast<const T*>(y.raw()) + run.y,
                                                static_cast<const T*>(x.raw()) + run.x,
                                                static_cast<T*>(out.raw()) + run.out);
      check_launch("matmul");
    }
  });
}

// ---- convolutions --------------------------------------------------------------------------------------
enum Kind : int32_t { kFwd = 0, kBwdData = 1, kBwdFilter = 2 };
const char* const kOpNames[] = {"conv", "conv_grad_input", "conv_grad_filter"};

// One convolution, spatial dims padded to 3 (unit dims in front).
struct Conv {
  int64_t n, c, co, groups;
  int64_t in[3], k[3], out[3];
  int64_t pad[3], stride[3], dil[3];
  OAR_HD int64_t cg() const { return c / groups; }    // input channels per group
  OAR_HD int64_t cog() const { return co / groups; }  // output channels per group
  OAR_HD int64_t in_sz() const { return in[0] * in[1] * in[2]; }
  OAR_HD int64_t k_sz() const { return k[0] * k[1] * k[2]; }
  OAR_HD int64_t out_sz() const { return out[0] * out[1] * out[2]; }
};

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

// y[n, co, o] = sum over the group's input channels and the window of x * w.
template <typename T>
__global__ void conv_fwd(Conv p, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y) {
  using A = acc_t<T>;
  const int64_t total = p.n * p.co * p.out_sz();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = e;
    const int64_t o2 = r % p.out[2];
    r /= p.out[2];
    const int64_t o1 = r % p.out[1];
    r /= p.out[1];
    const int64_t o0 = r % p.out[0];
    r /= p.out[0];
    const int64_t co = r % p.co, n = r / p.co;
    const int64_t g = co / p.cog();
    A acc = A(0);
    for (int64_t ci = 0; ci < p.cg(); ++ci) {
      const T* xc = x + (n * p.c + g * p.cg() + ci) * p.in_sz();
      const T* wc = w + (co * p.cg() + ci) * p.k_sz();
      for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
        const int64_t i0 = o0 * p.stride[0] - p.pad[0] + k0 * p.dil[0];
        if (i0 < 0 || i0 >= p.in[0]) continue;
        for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
          const int64_t i1 = o1 * p.stride[1] - p.pad[1] + k1 * p.dil[1];
          if (i1 < 0 || i1 >= p.in[1]) continue;
          for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
            const int64_t i2 = o2 * p.stride[2] - p.pad[2] + k2 * p.dil[2];
            if (i2 < 0 || i2 >= p.in[2]) continue;
            acc +=
                to_acc(xc[(i0 * p.in[1] + i1) * p.in[2] + i2]) * to_acc(wc[(k0 * p.k[1] + k1) * p.k[2] + k2]);
          }
        }
      }
    }
    y[e] = from_acc<T>(acc);
  }
}

// The output position along one dim that input position i reaches through tap k, or -1.
OAR_D int64_t out_pos(int64_t i, int64_t k, int64_t pad, int64_t stride, int64_t dil, int64_t out) {
  const int64_t t = i + pad - k * dil;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < out ? o : -1;
}

// dx[n, c, i] = sum over the group's output channels and the taps that reach i of dy * w.
template <typename T>
__global__ void conv_bwd_data(Conv p, const T* __restrict__ dy, const T* __restrict__ w, T* __restrict__ dx) {
  using A = acc_t<T>;
  const int64_t total = p.n * p.c * p.in_sz();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = e;
    const int64_t i2 = r % p.in[2];
    r /= p.in[2];
    const int64_t i1 = r % p.in[1];
    r /= p.in[1];
    const int64_t i0 = r % p.in[0];
    r /= p.in[0];
    const int64_t c = r % p.c, n = r / p.c;
    const int64_t g = c / p.cg(), ci = c % p.cg();
    A acc = A(0);
    for (int64_t cog = 0; cog < p.cog(); ++cog) {
      const int64_t co = g * p.cog() + cog;
      const T* dyc = dy + (n * p.co + co) * p.out_sz();
      const T* wc = w + (co * p.cg() + ci) * p.k_sz();
      for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
        const int64_t o0 = out_pos(i0, k0, p.pad[0], p.stride[0], p.dil[0], p.out[0]);
        if (o0 < 0) continue;
        for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
          const int64_t o1 = out_pos(i1, k1, p.pad[1], p.stride[1], p.dil[1], p.out[1]);
          if (o1 < 0) continue;
          for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
            const int64_t o2 = out_pos(i2, k2, p.pad[2], p.stride[2], p.dil[2], p.out[2]);
            if (o2 < 0) continue;
            acc += to_acc(dyc[(o0 * p.out[1] + o1) * p.out[2] + o2]) *
                   to_acc(wc[(k0 * p.k[1] + k1) * p.k[2] + k2]);
          }
        }
      }
    }
    dx[e] = from_acc<T>(acc);
  }
}

// dw[co, ci, k] = sum over the batch and the output positions of x * dy: a block per weight element, its
// threads striding over (n, output position), then a tree reduction in a fixed order.
template <typename T>
__global__ void conv_bwd_filter(Conv p, const T* __restrict__ x, const T* __restrict__ dy,
                                T* __restrict__ dw) {
  using A = acc_t<T>;
  __shared__ A sh[kThreads];
  const int64_t total = p.co * p.cg() * p.k_sz();
  const int64_t per_weight = p.n * p.out_sz();
  for (int64_t e = blockIdx.x; e < total; e += gridDim.x) {
    int64_t r = e;
    const int64_t k2 = r % p.k[2];
    r /= p.k[2];
    const int64_t k1 = r % p.k[1];
    r /= p.k[1];
    const int64_t k0 = r % p.k[0];
    r /= p.k[0];
    const int64_t ci = r % p.cg(), co = r / p.cg();
    const int64_t c = (co / p.cog()) * p.cg() + ci;
    A acc = A(0);
    for (int64_t t = threadIdx.x; t < per_weight; t += blockDim.x) {
      int64_t q = t;
      const int64_t o2 = q % p.out[2];
      q /= p.out[2];
      const int64_t o1 = q % p.out[1];
      q /= p.out[1];
      const int64_t o0 = q % p.out[0];
      const int64_t n = q / p.out[0];
      const int64_t i0 = o0 * p.stride[0] - p.pad[0] + k0 * p.dil[0];
      const int64_t i1 = o1 * p.stride[1] - p.pad[1] + k1 * p.dil[1];
      const int64_t i2 = o2 * p.stride[2] - p.pad[2] + k2 * p.dil[2];
      if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1] || i2 < 0 || i2 >= p.in[2]) continue;
      acc += to_acc(x[((n * p.c + c) * p.in[0] + i0) * p.in[1] * p.in[2] + i1 * p.in[2] + i2]) *
             to_acc(dy[(n * p.co + co) * p.out_sz() + (o0 * p.out[1] + o1) * p.out[2] + o2]);
    }
    fam::group_reduce(sh, acc, kThreads, [](A u, A v) { return u + v; });
    if (threadIdx.x == 0) dw[e] = from_acc<T>(sh[0]);
  }
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
      conv_fwd<T><<<grid, kThreads, 0, stream>>>(p, pa, pb, po);
    else if (kKind == kBwdData)
      conv_bwd_data<T><<<grid, kThreads, 0, stream>>>(p, pa, pb, po);
    else
      conv_bwd_filter<T><<<fam::blocks_for(out.numel()), kThreads, 0, stream>>>(p, pa, pb, po);
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
