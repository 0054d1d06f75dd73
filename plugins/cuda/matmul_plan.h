// How one numpy-style matmul call (plugins/cpu/matmul.cc's semantics: 1-D operands, broadcast batch
// dims, transpose_x/transpose_y) maps onto column-major strided-batched GEMMs (cuBLASLt or cuBLAS):
// out^T = Y^T X^T, so A = Y and B = X. Plain C++ (no CUDA), so matmul_plan_test.cc checks the mapping
// against a reference column-major GEMM on any machine.
#pragma once

#include <oar/sdk/kernel.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace oar_cuda {

// One matmul call as a strided batch of column-major problems (see the top of the file).
struct Plan {
  int64_t M = 1, K = 1, N = 1;
  bool tx = false, ty = false;
  int64_t batch = 1, x_batch = 1, y_batch = 1;
  bool mixed = false;               // a broadcast that is not "full or single" per operand
  std::vector<int64_t> xb, yb, ob;  // batch dims of X, Y (1 where broadcast) and the output, right-aligned
};

inline Plan make_plan(const oar::sdk::TensorView& x, const oar::sdk::TensorView& y, bool tx, bool ty) {
  Plan p;
  std::vector<int64_t> xd = x.shape(), yd = y.shape();
  OAR_SDK_CHECK(!xd.empty() && !yd.empty(), OAR_ERR_INVALID_ARGUMENT,
                "matmul: operands must have at least 1 dimension");
  int64_t ky;
  std::vector<int64_t>&xb = p.xb, &yb = p.yb;
  if (xd.size() == 1) {  // [k] is [1, k]
    p.M = 1, p.K = xd[0];
  } else {
    const size_t r = xd.size();
    p.tx = tx;
    p.M = tx ? xd[r - 1] : xd[r - 2];
    p.K = tx ? xd[r - 2] : xd[r - 1];
    xb.assign(xd.begin(), xd.end() - 2);
  }
  if (yd.size() == 1) {  // [k] is [k, 1]
    ky = yd[0], p.N = 1;
  } else {
    const size_t r = yd.size();
    p.ty = ty;
    ky = ty ? yd[r - 1] : yd[r - 2];
    p.N = ty ? yd[r - 2] : yd[r - 1];
    yb.assign(yd.begin(), yd.end() - 2);
  }
  OAR_SDK_CHECK(p.K == ky, OAR_ERR_INVALID_ARGUMENT,
                "matmul: contraction sizes differ (x gives " << p.K << ", y gives " << ky << ")");
  const size_t nb = std::max(xb.size(), yb.size());
  xb.insert(xb.begin(), nb - xb.size(), 1);
  yb.insert(yb.begin(), nb - yb.size(), 1);
  for (size_t i = 0; i < nb; ++i) {
    OAR_SDK_CHECK(
        xb[i] == yb[i] || xb[i] == 1 || yb[i] == 1, OAR_ERR_INVALID_ARGUMENT,
        "matmul: batch dimension " << i << " does not broadcast (" << xb[i] << " vs " << yb[i] << ")");
    p.ob.push_back(xb[i] == 1 ? yb[i] : xb[i]);
    p.batch *= p.ob.back();
    p.x_batch *= xb[i];
    p.y_batch *= yb[i];
  }
  p.mixed = !((p.x_batch == p.batch || p.x_batch == 1) && (p.y_batch == p.batch || p.y_batch == 1));
  return p;
}

// The column-major problem handed to cuBLAS: D (m x n) = op(A) (m x k) * op(B) (k x n), `count`
// matrices, A = Y, B = X.
struct Problem {
  int64_t m, n, k, count;
  bool trans_a, trans_b;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c;  // elements; 0 = the same matrix for every batch entry
};

inline Problem problem_of(const Plan& p) {
  Problem q{};
  int64_t M = p.M, batch = p.batch;
  bool x_full = p.x_batch > 1, y_full = p.y_batch > 1;
  if (p.mixed) {  // the last batch dim only (launches() walks the others)
    batch = p.ob.back();
    x_full = p.xb.back() > 1, y_full = p.yb.back() > 1;
  } else if (batch > 1 && p.y_batch == 1 && !p.tx && p.x_batch == batch) {
    // A batch of X times one Y, X not transposed: X is one (batch * M) x K row-major matrix.
    M *= batch, batch = 1;
  }
  q.m = p.N, q.n = M, q.k = p.K, q.count = batch;
  q.trans_a = p.ty, q.trans_b = p.tx;
  q.lda = p.ty ? p.K : p.N;  // Y stored K x N row-major = N x K column-major (ld N); transposed: ld K
  q.ldb = p.tx ? M : p.K;
  q.ldc = p.N;
  q.stride_a = (batch > 1 && y_full) ? p.K * p.N : 0;
  q.stride_b = (batch > 1 && x_full) ? M * p.K : 0;
  q.stride_c = M * p.N;
  return q;
}

// The element offsets of X, Y and the output for each launch of the problem: one launch, or for a
// mixed broadcast one per index of the batch dims before the last.
struct Launch {
  int64_t x, y, out;
};
inline std::vector<Launch> launches(const Plan& p) {
  if (!p.mixed) return {{0, 0, 0}};
  const size_t outer = p.ob.size() - 1;
  int64_t count = 1;
  for (size_t d = 0; d < outer; ++d) count *= p.ob[d];
  // Strides of X's and Y's batch dims in matrices (0 where broadcast).
  std::vector<int64_t> xs(p.ob.size(), 0), ys(p.ob.size(), 0);
  for (int64_t d = static_cast<int64_t>(p.ob.size()) - 1, sx = 1, sy = 1; d >= 0; --d) {
    if (p.xb[d] > 1) xs[d] = sx;
    if (p.yb[d] > 1) ys[d] = sy;
    sx *= p.xb[d], sy *= p.yb[d];
  }
  std::vector<Launch> out;
  out.reserve(static_cast<size_t>(count));
  std::vector<int64_t> idx(outer, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t xm = 0, ym = 0;
    for (size_t d = 0; d < outer; ++d) xm += idx[d] * xs[d], ym += idx[d] * ys[d];
    out.push_back({xm * p.M * p.K, ym * p.K * p.N, i * p.ob.back() * p.M * p.N});
    for (size_t d = outer; d-- > 0;) {  // next index, row-major
      if (++idx[d] < p.ob[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace oar_cuda
