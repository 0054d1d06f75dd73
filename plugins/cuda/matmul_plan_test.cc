// Checks matmul_plan.h without a GPU: every call shape maps onto column-major strided-batched GEMMs
// (run here by a reference GEMM with BLAS's exact argument meaning) that give numpy's matmul.
#include "matmul_plan.h"

#include <cmath>
#include <cstdio>
#include <random>

namespace {

using oar_cuda::Launch;
using oar_cuda::Plan;
using oar_cuda::Problem;

struct Desc {
  OarTensorDesc d{};
  std::vector<int64_t> dims, strides;
  explicit Desc(std::vector<int64_t> shape) : dims(std::move(shape)), strides(dims.size()) {
    int64_t s = 1;
    for (size_t i = dims.size(); i-- > 0;) strides[i] = s, s *= dims[i];
    d.struct_size = sizeof(d);
    d.dtype = OAR_DTYPE_FLOAT64;
    d.ndim = static_cast<int32_t>(dims.size());
    d.dims = dims.data();
    d.strides = strides.data();
  }
};

// BLAS: C[b](i, j) = sum_l op(A[b])(i, l) op(B[b])(l, j), column-major, batch b at b * stride.
void reference_gemm(const Problem& q, const double* A, const double* B, double* C) {
  for (int64_t b = 0; b < q.count; ++b)
    for (int64_t i = 0; i < q.m; ++i)
      for (int64_t j = 0; j < q.n; ++j) {
        const double* a = A + b * q.stride_a;
        const double* bb = B + b * q.stride_b;
        double s = 0;
        for (int64_t l = 0; l < q.k; ++l)
          s += (q.trans_a ? a[l + i * q.lda] : a[i + l * q.lda]) *
               (q.trans_b ? bb[j + l * q.ldb] : bb[l + j * q.ldb]);
        C[b * q.stride_c + i + j * q.ldc] = s;
      }
}

int64_t numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

// numpy's matmul, written directly from the broadcast rules.
std::vector<double> numpy_matmul(const Plan& p, const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.M * p.N));
  const size_t nb = p.ob.size();
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t xo = 0, yo = 0, sx = 1, sy = 1, r = b;
    for (size_t d = nb; d-- > 0;) {
      const int64_t i = r % p.ob[d];
      r /= p.ob[d];
      if (p.xb[d] > 1) xo += i * sx;
      if (p.yb[d] > 1) yo += i * sy;
      sx *= p.xb[d], sy *= p.yb[d];
    }
    const double* xm = x.data() + xo * p.M * p.K;
    const double* ym = y.data() + yo * p.K * p.N;
    for (int64_t i = 0; i < p.M; ++i)
      for (int64_t j = 0; j < p.N; ++j) {
        double s = 0;
        for (int64_t l = 0; l < p.K; ++l)
          s += (p.tx ? xm[l * p.M + i] : xm[i * p.K + l]) * (p.ty ? ym[j * p.K + l] : ym[l * p.N + j]);
        out[b * p.M * p.N + i * p.N + j] = s;
      }
  }
  return out;
}

}  // namespace

int main() {
  struct Case {
    std::vector<int64_t> x, y;
    bool tx, ty;
    bool mixed;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {4, 5}, 0, 0, 0},
      {{2, 3, 4}, {4, 5}, 0, 0, 0},
      {{2, 4, 3}, {4, 5}, 1, 0, 0},
      {{5, 4}, {3, 4, 6}, 0, 0, 0},
      {{3, 5, 4}, {3, 6, 4}, 0, 1, 0},
      {{2, 4, 3}, {5, 4}, 1, 1, 0},
      {{2, 1, 3, 4}, {1, 1, 4, 5}, 0, 0, 0},
      {{4}, {2, 4, 5}, 0, 0, 0},
      {{3, 4}, {4}, 0, 0, 0},
      {{7}, {7}, 0, 0, 0},
      {{2, 3, 4}, {4}, 0, 0, 0},
      {{2, 1, 3, 4}, {3, 4, 5}, 0, 0, 1},
      {{2, 1, 3, 3, 4}, {1, 4, 1, 5, 4}, 0, 1, 1},
      {{2, 1, 1, 4, 3}, {1, 3, 1, 4, 2}, 1, 0, 1},
  };
  std::mt19937 gen(1);
  std::uniform_real_distribution<double> u(-1, 1);
  int failures = 0;
  for (const Case& c : cases) {
    Desc X(c.x), Y(c.y);
    const Plan p = oar_cuda::make_plan(oar::sdk::TensorView(&X.d), oar::sdk::TensorView(&Y.d), c.tx, c.ty);
    std::vector<double> x(static_cast<size_t>(numel(c.x))), y(static_cast<size_t>(numel(c.y)));
    for (double& v : x) v = u(gen);
    for (double& v : y) v = u(gen);
    const std::vector<double> want = numpy_matmul(p, x, y);
    std::vector<double> got(want.size(), NAN);
    const Problem q = oar_cuda::problem_of(p);
    const std::vector<Launch> runs = oar_cuda::launches(p);
    for (const Launch& r : runs) reference_gemm(q, y.data() + r.y, x.data() + r.x, got.data() + r.out);
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i)
      err = std::max(err, std::abs(got[i] - want[i]));  // NaN: unwritten
    const bool ok = err < 1e-12 && p.mixed == c.mixed && (c.mixed || runs.size() == 1) &&
                    q.lda >= (q.trans_a ? q.k : q.m) && q.ldb >= (q.trans_b ? q.n : q.k) && q.ldc >= q.m;
    std::printf("%s x[%zu] y[%zu] tx=%d ty=%d: %ld matrices per launch, %zu launches, max error %g\n",
                ok ? "ok  " : "FAIL", c.x.size(), c.y.size(), c.tx, c.ty, static_cast<long>(q.count),
                runs.size(), err);
    failures += !ok;
  }
  return failures == 0 ? 0 : 1;
}
