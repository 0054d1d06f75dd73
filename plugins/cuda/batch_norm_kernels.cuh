// The device code of batch_norm and batch_norm_grad (batch_norm.cu plans and launches it). Kept apart from
// the launches, like own_blas_kernels.cuh, so that tests/cuda_host/block_emu.h runs the very same kernels on
// the host (test_cuda_batch_norm_host.py). CUDA's spelling throughout; HIP and the emulator provide the
// names.
//
// x is seen as [outer, C, inner] (NCHW: inner = H*W; channel-last: inner = 1) and read in vectors of V
// elements, as [outer, G, P] vectors: G channel groups of P vectors per segment. Either V divides inner
// (P = inner / V, G = C: every lane of a vector is in one channel) or inner is 1 and V divides C
// (kChannelLast: P = 1, G = C / V, lane l of group g is channel g * V + l).
//
// Each pass over x is one launch: the per-channel reductions split every channel group over `splits`
// blocks, write partial results to scratch, and a one-thread-per-channel kernel combines them in split
// order (deterministic, no atomics); the elementwise passes are grid-stride loops over the vectors.
#pragma once

#include <type_traits>

#include "family_common.cuh"

namespace oar_cuda::bn {

// The statistics dtype: float for float16/bfloat16/float32, double for float64 (what acc_t is too).
template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// A channel's coefficients for an elementwise pass, one 16-byte load for float:
// forward out = (x - mean) * a + b; backward dx = a * dy - b * (x - mean) - c.
template <typename S>
struct alignas(16) Coef {
  S mean, a, b, c;
};

// x in vectors: `outer` segments of G groups of P vectors; each group's reduction is split `splits` ways
// (split k takes the group's vectors j in [R k / splits, R (k + 1) / splits), R = outer * P).
struct Geom {
  int64_t outer, G, P, splits;
};

constexpr int kUnroll = 4;          // vectors a thread loads before it uses them (loads in flight)
constexpr int kFinishThreads = 64;  // threads per channel combining the splits

// q = a / b, r = a % b for a >= 0, b > 0; in 32 bits when both fit (a 64-bit division is a long subroutine
// on a GPU, and every thread of the walks below starts with a few).
OAR_D void divmod(int64_t a, int64_t b, int64_t& q, int64_t& r) {
  if (((a | b) >> 32) == 0) {
    const uint32_t q32 = static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    q = q32;
    r = static_cast<uint32_t>(a) - q32 * static_cast<uint32_t>(b);
  } else {
    q = a / b;
    r = a - q * b;
  }
}

// The vectors of group g a thread visits in a reduction: j = j_first, j_first + step, ... below j_end, where
// vector j of the group sits at (j / P) * G * P + g * P + j % P. The division happens once; each step adds.
struct SplitWalk {
  int64_t off, i, left;         // the current vector's offset and position in its segment; vectors left
  int64_t d_off, d_i, wrap, P;  // per step; `wrap` is added when a step crosses into the next segment
  OAR_D SplitWalk(const Geom& q, int64_t g, int64_t j, int64_t j_end, int step) : P(q.P) {
    int64_t o, so, r;
    divmod(j, P, o, i);
    off = o * q.G * P + g * P + i;
    if (j < j_end)
      divmod(j_end - j + step - 1, step, left, r);
    else
      left = 0;
    divmod(step, P, so, d_i);
    d_off = so * q.G * P + d_i;
    wrap = (q.G - 1) * P;
  }
  OAR_D void next() {
    off += d_off;
    i += d_i;
    if (i >= P) {
      i -= P;
      off += wrap;
    }
  }
};

// The channel group of vector v = (o * G + g) * P + i of the whole tensor, as v advances by a fixed step.
struct GroupWalk {
  int64_t i, g, d_i, d_g, P, G;
  OAR_D GroupWalk(int64_t v, int64_t step, int64_t P_, int64_t G_) : P(P_), G(G_) {
    int64_t s, t;
    divmod(v, P, s, i);
    divmod(s, G, t, g);
    divmod(step, P, s, d_i);
    divmod(s, G, t, d_g);
  }
  OAR_D void next() {
    i += d_i;
    int64_t carry = 0;
    if (i >= P) {
      i -= P;
      carry = 1;
    }
    g += d_g + carry;  // < 2 G
    if (g >= G) g -= G;
  }
};

// Tree over threadIdx.y in shared memory: merge(dst, src) on flattened thread indices, so that row y = 0
// ends with each column's result. Every thread of the block calls it (it synchronises); the order of the
// merges depends only on the thread layout (deterministic).
template <typename F>
__device__ void tree_over_y(F merge) {
  const int bx = blockDim.x, y = threadIdx.y, t = y * bx + threadIdx.x;
  for (int s = blockDim.y / 2; s > 0; s /= 2) {
    __syncthreads();
    if (y < s) merge(t, t + s * bx);
  }
  __syncthreads();
}

// Chan et al.'s merge of two (count, mean, sum of squared deviations) triples into a: no cancellation.
template <typename S>
OAR_D void chan_merge(S& na, S& ma, S& qa, S nb, S mb, S qb) {
  if (nb == S(0)) return;
  if (na == S(0)) {
    na = nb, ma = mb, qa = qb;
    return;
  }
  const S n = na + nb, d = mb - ma, f = nb / n;
  ma += d * f;
  qa += qb + d * d * na * f;
  na = n;
}

// ---- forward -------------------------------------------------------------------------------------------

// Partial statistics of (group tile blockIdx.x, split blockIdx.y): part holds [3][splits][C] (mean, sum of
// squared deviations, count). A thread sums x - shift and its square, shift being the first value it reads
// (near its values' mean, so the squares do not cancel), then turns them into its own (count, mean, M2);
// the block and the splits combine those with chan_merge.
template <typename T, int V, bool kChannelLast>
__global__ void bn_stats(Geom q, int64_t C, const T* __restrict__ x, stat_t<T>* __restrict__ part) {
  using S = stat_t<T>;
  constexpr int L = kChannelLast ? V : 1;  // channels per thread
  __shared__ S sh_n[kThreads];
  __shared__ S sh_m[kThreads];
  __shared__ S sh_q[kThreads];
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, k = blockIdx.y;
  const bool active = g < q.G;
  const int64_t R = q.outer * q.P;
  SplitWalk w(q, active ? g : 0, R * k / q.splits + threadIdx.y, active ? R * (k + 1) / q.splits : 0,
              blockDim.y);
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  S shift[L], s1[L], s2[L];
  for (int l = 0; l < L; ++l) shift[l] = s1[l] = s2[l] = S(0);
  const int64_t visits = w.left;
  if (visits > 0) {
    const Vec<T, V> first = xv[w.off];
    for (int l = 0; l < L; ++l) shift[l] = S(to_acc(first.v[l]));
  }
  while (w.left > 0) {
    const int n = w.left < kUnroll ? static_cast<int>(w.left) : kUnroll;
    Vec<T, V> buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < n) {
        buf[u] = xv[w.off];
        w.next();
      }
    w.left -= n;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < n)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const int l = kChannelLast ? e : 0;
          const S d = S(to_acc(buf[u].v[e])) - shift[l];
          s1[l] += d;
          s2[l] += d * d;
        }
  }
  const S count = S(visits * (kChannelLast ? 1 : V));
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  // One tree per channel of the thread; row y = 0 reads only its own slots after a tree, so the next
  // channel's writes need no barrier before them.
  for (int l = 0; l < L; ++l) {
    S mean = S(0), m2 = S(0);
    if (visits > 0) {
      mean = shift[l] + s1[l] / count;
      m2 = s2[l] - s1[l] * (s1[l] / count);
      if (m2 < S(0)) m2 = S(0);  // rounding below zero (NaN stays NaN)
    }
    sh_n[t] = count;
    sh_m[t] = mean;
    sh_q[t] = m2;
    tree_over_y([&](int a, int b) { chan_merge(sh_n[a], sh_m[a], sh_q[a], sh_n[b], sh_m[b], sh_q[b]); });
    if (threadIdx.y == 0 && active) {
      const int64_t c = kChannelLast ? g * V + l : g, at = k * C + c, plane = q.splits * C;
      part[at] = sh_m[threadIdx.x];
      part[plane + at] = sh_q[threadIdx.x];
      part[2 * plane + at] = sh_n[threadIdx.x];
    }
  }
}

// Per channel (a block of kFinishThreads each): the batch statistics from the partials (splits > 0), or the
// running ones (use_global_stats: splits = 0); the [C] outputs (keep = 1 - momentum, rounded once from
// double), and the coefficients of the elementwise pass. The block's threads read the splits in parallel
// (they are independent loads) and merge them in a fixed tree.
template <typename S>
__global__ void bn_stats_finish(int64_t C, int64_t splits, const S* __restrict__ part,
                                const S* __restrict__ rmean, const S* __restrict__ rvar,
                                const S* __restrict__ w, const S* __restrict__ b, S eps, S momentum, S keep,
                                S* __restrict__ mean_out, S* __restrict__ var_out, S* __restrict__ saved_mean,
                                S* __restrict__ saved_rstd, Coef<S>* __restrict__ coef) {
  __shared__ S sh_n[kFinishThreads];
  __shared__ S sh_m[kFinishThreads];
  __shared__ S sh_q[kFinishThreads];
  const int y = threadIdx.y;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {  // thread 0 reads only its own slots: no barrier
    S n = S(0), mean = S(0), m2 = S(0);
    for (int64_t k = y; k < splits; k += blockDim.y) {
      const int64_t at = k * C + c;
      chan_merge(n, mean, m2, part[2 * splits * C + at], part[at], part[splits * C + at]);
    }
    sh_n[y] = n;
    sh_m[y] = mean;
    sh_q[y] = m2;
    tree_over_y([&](int a, int b) { chan_merge(sh_n[a], sh_m[a], sh_q[a], sh_n[b], sh_m[b], sh_q[b]); });
    if (y != 0) continue;
    const S rm = rmean[c], rv = rvar[c];
    mean = rm;
    S var = rv;
    if (splits > 0) {
      mean = sh_m[0];
      var = sh_q[0] / sh_n[0];  // biased
      mean_out[c] = rm * momentum + mean * keep;
      var_out[c] = rv * momentum + var * keep;
    } else {
      mean_out[c] = rm;
      var_out[c] = rv;
    }
    const S rstd = S(1) / sqrt(var + eps);
    saved_mean[c] = mean;
    saved_rstd[c] = rstd;
    coef[c] = Coef<S>{mean, rstd * w[c], b[c], S(0)};
  }
}

// The vectors a thread of an elementwise pass takes, kUnroll at a time (their loads in flight together):
// v, v + step, ... below nv, each with its channel group.
struct Batch {
  int64_t at[kUnroll], g[kUnroll];
  int n;
  OAR_D void take(int64_t& v, int64_t nv, int64_t step, GroupWalk& w) {
    n = 0;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (v < nv) {
        at[u] = v;
        g[u] = w.g;
        ++n;
        v += step;
        w.next();
      }
  }
};

// out = (x - mean) * a + b over nv vectors.
template <typename T, int V, bool kChannelLast>
__global__ void bn_apply(int64_t nv, int64_t P, int64_t G, const T* __restrict__ x,
                         const Coef<stat_t<T>>* __restrict__ coef, T* __restrict__ out) {
  using S = stat_t<T>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (v >= nv) return;
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  Vec<T, V>* ov = reinterpret_cast<Vec<T, V>*>(out);
  GroupWalk w(v, step, P, G);
  Batch q;
  while (v < nv) {
    q.take(v, nv, step, w);
    Vec<T, V> a[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < q.n) a[u] = xv[q.at[u]];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < q.n) {
        Vec<T, V> r;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const Coef<S> k = coef[kChannelLast ? q.g[u] * V + e : q.g[u]];
          r.v[e] = from_acc<T>((S(to_acc(a[u].v[e])) - k.mean) * k.a + k.b);
        }
        ov[q.at[u]] = r;
      }
  }
}

// ---- backward ------------------------------------------------------------------------------------------

// Partial sums of dy and dy * (x - mean) of (group tile blockIdx.x, split blockIdx.y): part holds
// [2][splits][C].
template <typename T, int V, bool kChannelLast>
__global__ void bn_grad_sums(Geom q, int64_t C, const T* __restrict__ x, const T* __restrict__ dy,
                             const stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ part) {
  using S = stat_t<T>;
  constexpr int L = kChannelLast ? V : 1;
  __shared__ S sh_g[kThreads];
  __shared__ S sh_gx[kThreads];
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, k = blockIdx.y;
  const bool active = g < q.G;
  const int64_t R = q.outer * q.P;
  SplitWalk w(q, active ? g : 0, R * k / q.splits + threadIdx.y, active ? R * (k + 1) / q.splits : 0,
              blockDim.y);
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  const Vec<T, V>* gv = reinterpret_cast<const Vec<T, V>*>(dy);
  S m[L], sg[L], sgx[L];
  for (int l = 0; l < L; ++l) {
    m[l] = active ? mean[kChannelLast ? g * V + l : g] : S(0);
    sg[l] = sgx[l] = S(0);
  }
  while (w.left > 0) {
    const int n = w.left < kUnroll ? static_cast<int>(w.left) : kUnroll;
    Vec<T, V> bx[kUnroll], bg[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < n) {
        bx[u] = xv[w.off];
        bg[u] = gv[w.off];
        w.next();
      }
    w.left -= n;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < n)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const int l = kChannelLast ? e : 0;
          const S d = S(to_acc(bg[u].v[e]));
          sg[l] += d;
          sgx[l] += d * (S(to_acc(bx[u].v[e])) - m[l]);
        }
  }
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  for (int l = 0; l < L; ++l) {  // as in bn_stats: no barrier needed before the writes
    sh_g[t] = sg[l];
    sh_gx[t] = sgx[l];
    tree_over_y([&](int a, int b) {
      sh_g[a] += sh_g[b];
      sh_gx[a] += sh_gx[b];
    });
    if (threadIdx.y == 0 && active) {
      const int64_t c = kChannelLast ? g * V + l : g, at = k * C + c;
      part[at] = sh_g[threadIdx.x];
      part[q.splits * C + at] = sh_gx[threadIdx.x];
    }
  }
}

// Per channel (a block of kFinishThreads each): dbias = sum dy, dweight = rstd * sum dy (x - mean), the
// splits summed in a fixed tree, and the coefficients of dx = w rstd (dy - dbias / M - xhat dweight / M)
// (training) or dx = w rstd dy (use_global_stats).
template <typename S>
__global__ void bn_grad_finish(int64_t C, int64_t splits, const S* __restrict__ part, const S* __restrict__ w,
                               const S* __restrict__ mean, const S* __restrict__ rstd, S count, int training,
                               S* __restrict__ dweight, S* __restrict__ dbias, Coef<S>* __restrict__ coef) {
  __shared__ S sh_g[kFinishThreads];
  __shared__ S sh_gx[kFinishThreads];
  const int y = threadIdx.y;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {  // thread 0 reads only its own slots: no barrier
    S sg = S(0), sgx = S(0);
    for (int64_t k = y; k < splits; k += blockDim.y) {
      sg += part[k * C + c];
      sgx += part[splits * C + k * C + c];
    }
    sh_g[y] = sg;
    sh_gx[y] = sgx;
    tree_over_y([&](int a, int b) {
      sh_g[a] += sh_g[b];
      sh_gx[a] += sh_gx[b];
    });
    if (y != 0) continue;
    const S r = rstd[c], dw = sh_gx[0] * r, db = sh_g[0], a = w[c] * r;
    dweight[c] = dw;
    dbias[c] = db;
    coef[c] =
        training ? Coef<S>{mean[c], a, a * r * dw / count, a * db / count} : Coef<S>{mean[c], a, S(0), S(0)};
  }
}

// dx = a * dy - b * (x - mean) - c over nv vectors; x is not read with use_global_stats (training = 0).
template <typename T, int V, bool kChannelLast>
__global__ void bn_apply_grad(int64_t nv, int64_t P, int64_t G, int training, const T* __restrict__ x,
                              const T* __restrict__ dy, const Coef<stat_t<T>>* __restrict__ coef,
                              T* __restrict__ dx) {
  using S = stat_t<T>;
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (v >= nv) return;
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  const Vec<T, V>* gv = reinterpret_cast<const Vec<T, V>*>(dy);
  Vec<T, V>* ov = reinterpret_cast<Vec<T, V>*>(dx);
  GroupWalk w(v, step, P, G);
  Batch q;
  while (v < nv) {
    q.take(v, nv, step, w);
    Vec<T, V> gd[kUnroll], a[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < q.n) {
        gd[u] = gv[q.at[u]];
        if (training) a[u] = xv[q.at[u]];
      }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (u < q.n) {
        Vec<T, V> r;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const Coef<S> k = coef[kChannelLast ? q.g[u] * V + e : q.g[u]];
          S d = k.a * S(to_acc(gd[u].v[e]));
          if (training) d -= k.b * (S(to_acc(a[u].v[e])) - k.mean) + k.c;
          r.v[e] = from_acc<T>(d);
        }
        ov[q.at[u]] = r;
      }
  }
}

}  // namespace oar_cuda::bn
