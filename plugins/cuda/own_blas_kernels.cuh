// The device code of the plugin's own matmul and convolutions (own_blas.cu launches it): a shared-memory
// tiled GEMM and direct convolutions. Kept apart from the launches so that tests/cuda_host/block_emu.h can
// run the very same kernels on the host, block by block, where test_cuda_own_kernels_host.py compares them
// with the CPU plugin (docs/rocm.md, "What is verified"). Kernels use CUDA's spelling (__global__,
// __shared__, threadIdx, __syncthreads); HIP and the host emulator provide the same names.
#pragma once

#include "family_common.cuh"
#include "matmul_plan.h"

namespace oar_cuda::own {

// ---- matmul ---------------------------------------------------------------------------------------------
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

// ---- convolutions --------------------------------------------------------------------------------------
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

}  // namespace oar_cuda::own
