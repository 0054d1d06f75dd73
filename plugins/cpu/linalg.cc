// CPU kernels of the linalg op family (framework/src/ops_linalg.cc defines the ops), on LAPACK's
// Fortran routines. LAPACK is column-major: a row-major matrix is its transpose in column-major order,
// which several kernels use directly (det(A^T) = det(A), inv(A^T) = inv(A)^T, svd(A^T) swaps U and V).
// Each matrix of a batch is independent; the batch runs in parallel, one LAPACK call per matrix.
// Failures (singular, not positive definite) are collected and reported after the parallel loop, so
// no exception crosses an OpenMP region.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

#include "blas.h"
#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

// LAPACK comes from blas.cc (OpenBLAS's optimized LAPACK when installed). Kernels call lapack() before
// their parallel loop, so a missing library throws there.
const Blas& lapack() { return blas("linalg"); }

// ---- overloads by element type ----------------------------------------------------------------------
// LU-family calls (getrf/getri/getrs) on matrices up to OAR_LU_SERIAL_N (default 512; 0: never) run on one
// thread. Their blocked algorithm is a chain of short parallel regions (one per panel step); on this 2-core
// VM, after the process idled a moment, every region waited for the second thread to wake: solve 512 took
// 12-27 ms instead of 2.5 (inverse up to 46 ms instead of 5), so bench_blas swung between 0.4x and 1.4x
// numpy. One thread: solve 3.6-4.5 ms, inverse 8.3-9.3 ms, hot or not (numpy: 4.3-4.7 and 11-12.5 ms).
// Inside our own parallel loops (a batch of matrices) OpenBLAS already runs one thread (blas.cc).
class SmallLuOnOneThread {
 public:
  explicit SmallLuOnOneThread(int n) {
    static const int cutoff = [] {
      const char* e = std::getenv("OAR_LU_SERIAL_N");
      return e != nullptr && *e != '\0' ? std::atoi(e) : 512;
    }();
    if (n <= cutoff && !omp_in_parallel() && omp_get_max_threads() > 1) {
      saved_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
  }
  ~SmallLuOnOneThread() {
    if (saved_ > 0) omp_set_num_threads(saved_);  // back to oar's count (decision 128 sees no change)
  }
  SmallLuOnOneThread(const SmallLuOnOneThread&) = delete;
  SmallLuOnOneThread& operator=(const SmallLuOnOneThread&) = delete;

 private:
  int saved_ = 0;
};

void getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().sgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().dgetrf_(&m, &n, a, &lda, ipiv, info);
}
void getri(int n, float* a, int* ipiv, float* w, int lw, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().sgetri_(&n, a, &n, ipiv, w, &lw, info);
}
void getri(int n, double* a, int* ipiv, double* w, int lw, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().dgetri_(&n, a, &n, ipiv, w, &lw, info);
}
void getrs(char t, int n, int k, float* a, int* ipiv, float* b, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().sgetrs_(&t, &n, &k, a, &n, ipiv, b, &n, info);
}
void getrs(char t, int n, int k, double* a, int* ipiv, double* b, int* info) {
  SmallLuOnOneThread one_thread(n);
  lapack().dgetrs_(&t, &n, &k, a, &n, ipiv, b, &n, info);
}
void potrf(char u, int n, float* a, int* info) { lapack().spotrf_(&u, &n, a, &n, info); }
void potrf(char u, int n, double* a, int* info) { lapack().dpotrf_(&u, &n, a, &n, info); }
void trtrs(char u, char t, char d, int n, int k, float* a, float* b, int* info) {
  lapack().strtrs_(&u, &t, &d, &n, &k, a, &n, b, &n, info);
}
void trtrs(char u, char t, char d, int n, int k, double* a, double* b, int* info) {
  lapack().dtrtrs_(&u, &t, &d, &n, &k, a, &n, b, &n, info);
}
void geqrf(int m, int n, float* a, int lda, float* tau, float* w, int lw, int* info) {
  lapack().sgeqrf_(&m, &n, a, &lda, tau, w, &lw, info);
}
void geqrf(int m, int n, double* a, int lda, double* tau, double* w, int lw, int* info) {
  lapack().dgeqrf_(&m, &n, a, &lda, tau, w, &lw, info);
}
void orgqr(int m, int n, int k, float* a, int lda, float* tau, float* w, int lw, int* info) {
  lapack().sorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info);
}
void orgqr(int m, int n, int k, double* a, int lda, double* tau, double* w, int lw, int* info) {
  lapack().dorgqr_(&m, &n, &k, a, &lda, tau, w, &lw, info);
}
void gesdd(char j, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt,
           float* w, int lw, int* iw, int* info) {
  lapack().sgesdd_(&j, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info);
}
void gesdd(char j, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt,
           double* w, int lw, int* iw, int* info) {
  lapack().dgesdd_(&j, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, iw, info);
}
void syevd(char u, int n, float* a, float* w, float* wk, int lw, int* iw, int liw, int* info) {
  char j = 'V';
  lapack().ssyevd_(&j, &u, &n, a, &n, w, wk, &lw, iw, &liw, info);
}
void syevd(char u, int n, double* a, double* w, double* wk, int lw, int* iw, int liw, int* info) {
  char j = 'V';
  lapack().dsyevd_(&j, &u, &n, a, &n, w, wk, &lw, iw, &liw, info);
}

// ---- shared plumbing ----------------------------------------------------------------------------------
template <class Fn>
void dispatch_lapack(const char* op, int32_t dtype, Fn&& fn) {
  lapack();
  if (dtype == OAR_DTYPE_FLOAT32)
    fn(float{});
  else if (dtype == OAR_DTYPE_FLOAT64)
    fn(double{});
  else
    OAR_SDK_CHECK(false, OAR_ERR_TYPE, op << ": only float32 and float64 are supported");
}

int as_int(const char* op, int64_t v) {
  OAR_SDK_CHECK(v <= std::numeric_limits<int>::max(), OAR_ERR_INVALID_ARGUMENT,
                op << ": matrix dimension " << v << " exceeds LAPACK's 32-bit index range");
  return static_cast<int>(v);
}

// The first failing batch entry and its LAPACK info, reported after the parallel loop.
struct Failure {
  std::atomic<int64_t> batch{-1};
  std::atomic<int> info{0};
  void record(int64_t b, int i) {
    int64_t expected = -1;
    if (batch.compare_exchange_strong(expected, b)) info = i;
  }
  bool failed() const { return batch.load() >= 0; }
};

// Rows x cols row-major `src` to column-major `dst` with leading dimension ld (>= rows).
template <class T>
void to_colmajor(const T* src, T* dst, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ld + i] = src[i * cols + j];
}
template <class T>
void from_colmajor(const T* src, T* dst, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[j * ld + i];
}

int64_t batch_count(const TensorView& t, int drop) {
  int64_t b = 1;
  for (int32_t i = 0; i + drop < t.ndim(); ++i) b *= t.shape()[i];
  return b;
}

// ---- inverse, det, slogdet ---------------------------------------------------------------------------
void inverse_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const int64_t n = x.shape().back(), batch = batch_count(x, 2);
  const int ni = as_int("inverse", n);
  Failure fail;
  dispatch_lapack("inverse", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    std::copy(px, px + batch * n * n, po);
    if (n == 0) return;
    // Workspace size from one query.
    T wq;
    int lw = -1, info = 0;
    std::vector<int> piv_q(n);
    getri(ni, po, piv_q.data(), &wq, lw, &info);
    lw = std::max<int>(static_cast<int>(wq), ni);
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<int> piv(n);
      std::vector<T> work(lw);
      for (int64_t b = lo; b < hi; ++b) {
        T* a = po + b * n * n;  // row-major A is column-major A^T; inv(A^T) = inv(A)^T
        int inf = 0;
        getrf(ni, ni, a, ni, piv.data(), &inf);
        if (inf == 0) getri(ni, a, piv.data(), work.data(), lw, &inf);
        if (inf != 0) fail.record(b, inf);
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "inverse: matrix " << fail.batch.load() << " of the batch is singular (U["
                                   << fail.info.load() - 1 << "," << fail.info.load() - 1 << "] is zero)");
}

// LU of each matrix; calls fn(b, sign, logabsdet) (sign 0 and logabsdet -inf when singular).
template <class T, class Fn>
void lu_logdet(const TensorView& x, Fn fn) {
  const int64_t n = x.shape().back(), batch = batch_count(x, 2);
  const int ni = static_cast<int>(n);
  const T* px = x.data<T>();
  parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
    std::vector<T> a(n * n);
    std::vector<int> piv(n);
    for (int64_t b = lo; b < hi; ++b) {
      std::copy(px + b * n * n, px + (b + 1) * n * n, a.begin());
      int info = 0;
      if (n > 0) getrf(ni, ni, a.data(), ni, piv.data(), &info);
      double sign = 1, logabs = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(a[i * n + i]);
        if (piv[i] != i + 1) sign = -sign;
        if (d < 0) sign = -sign;
        if (d == 0) {
          sign = 0;
          logabs = -std::numeric_limits<double>::infinity();
          break;
        }
        logabs += std::log(std::fabs(d));
      }
      fn(b, sign, logabs);
    }
  });
}

void det_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  as_int("det", x.shape().back());
  dispatch_lapack("det", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    lu_logdet<T>(x, [&](int64_t b, double sign, double logabs) {
      po[b] = static_cast<T>(sign == 0 ? 0.0 : sign * std::exp(logabs));
    });
  });
}

void slogdet_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), sign = ctx.output(0), logabs = ctx.output(1);
  as_int("slogdet", x.shape().back());
  dispatch_lapack("slogdet", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T *ps = sign.data<T>(), *pl = logabs.data<T>();
    lu_logdet<T>(x, [&](int64_t b, double s, double l) {
      ps[b] = static_cast<T>(s);
      pl[b] = static_cast<T>(l);
    });
  });
}

// ---- solve, triangular_solve ----------------------------------------------------------------------------
void solve_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  const int64_t n = x.shape().back(), k = y.shape().back(), batch = batch_count(x, 2);
  const int ni = as_int("solve", n), ki = as_int("solve", k);
  Failure fail;
  dispatch_lapack("solve", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *py = y.data<T>();
    T* po = out.data<T>();
    if (n == 0 || k == 0) return;
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> a(n * n), rhs(n * k);
      std::vector<int> piv(n);
      for (int64_t b = lo; b < hi; ++b) {
        std::copy(px + b * n * n, px + (b + 1) * n * n, a.begin());  // column-major A^T
        to_colmajor(py + b * n * k, rhs.data(), n, k, n);
        int info = 0;
        getrf(ni, ni, a.data(), ni, piv.data(), &info);
        if (info != 0) {
          fail.record(b, info);
          continue;
        }
        getrs('T', ni, ki, a.data(), piv.data(), rhs.data(), &info);  // (A^T)^T X = B
        from_colmajor(rhs.data(), po + b * n * k, n, k, n);
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "solve: matrix x " << fail.batch.load() << " of the batch is singular");
}

void triangular_solve_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), y = ctx.input(1), out = ctx.output(0);
  const bool upper = attr_int_or(ctx, "upper", 1) != 0, trans = attr_int_or(ctx, "transpose", 0) != 0;
  const bool unit = attr_int_or(ctx, "unitriangular", 0) != 0;
  const int64_t n = x.shape().back(), k = y.shape().back(), batch = batch_count(x, 2);
  const int ni = as_int("triangular_solve", n), ki = as_int("triangular_solve", k);
  Failure fail;
  dispatch_lapack("triangular_solve", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *py = y.data<T>();
    T* po = out.data<T>();
    if (n == 0 || k == 0) return;
    // The row-major buffer is A^T in column-major order: the other triangle, the other transpose.
    const char uplo = upper ? 'L' : 'U', tr = trans ? 'N' : 'T', diag = unit ? 'U' : 'N';
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> a(n * n), rhs(n * k);
      for (int64_t b = lo; b < hi; ++b) {
        std::copy(px + b * n * n, px + (b + 1) * n * n, a.begin());
        to_colmajor(py + b * n * k, rhs.data(), n, k, n);
        int info = 0;
        trtrs(uplo, tr, diag, ni, ki, a.data(), rhs.data(), &info);
        if (info != 0) fail.record(b, info);
        from_colmajor(rhs.data(), po + b * n * k, n, k, n);
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "triangular_solve: matrix x " << fail.batch.load()
                                              << " of the batch is singular (diagonal entry "
                                              << fail.info.load() - 1 << " is zero)");
}

// ---- cholesky ---------------------------------------------------------------------------------------
void cholesky_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const bool upper = attr_int_or(ctx, "upper", 0) != 0;
  const int64_t n = x.shape().back(), batch = batch_count(x, 2);
  const int ni = as_int("cholesky", n);
  Failure fail;
  dispatch_lapack("cholesky", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    if (n == 0) return;
    // Column-major 'U' is row-major lower: A = U^T U with U^T = L.
    const char uplo = upper ? 'L' : 'U';
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        T* a = po + b * n * n;
        std::copy(px + b * n * n, px + (b + 1) * n * n, a);
        int info = 0;
        potrf(uplo, ni, a, &info);
        if (info != 0) fail.record(b, info);
        for (int64_t i = 0; i < n; ++i)  // zero the triangle LAPACK leaves untouched
          for (int64_t j = 0; j < n; ++j)
            if (upper ? j < i : j > i) a[i * n + j] = T(0);
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "cholesky: matrix " << fail.batch.load()
                                    << " of the batch is not positive definite (leading minor "
                                    << fail.info.load() << ")");
}

// ---- qr ---------------------------------------------------------------------------------------------
void qr_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), q = ctx.output(0), r = ctx.output(1);
  const bool complete = attr_int_or(ctx, "complete", 0) != 0;
  const int64_t m = x.shape()[x.ndim() - 2], n = x.shape().back(), batch = batch_count(x, 2);
  const int64_t k = std::min(m, n), qc = complete ? m : k, rr = complete ? m : k;
  const int mi = as_int("qr", m), ni = as_int("qr", n);
  dispatch_lapack("qr", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T *pq = q.data<T>(), *pr = r.data<T>();
    if (m == 0 || n == 0) {
      std::fill(pr, pr + batch * rr * n, T(0));
      std::fill(pq, pq + batch * m * qc, T(0));
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < std::min(m, qc); ++i) pq[b * m * qc + i * qc + i] = T(1);
      return;
    }
    const int64_t cols = std::max(n, qc);  // room for Q's columns when complete and m > n
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> a(m * cols), tau(k);
      std::vector<T> work;
      for (int64_t b = lo; b < hi; ++b) {
        to_colmajor(px + b * m * n, a.data(), m, n, m);
        int info = 0, lw = -1;
        T wq;
        geqrf(mi, ni, a.data(), mi, tau.data(), &wq, lw, &info);
        lw = std::max<int>(static_cast<int>(wq), 1);
        orgqr(mi, static_cast<int>(qc), static_cast<int>(k), a.data(), mi, tau.data(), &wq, -1, &info);
        lw = std::max<int>(lw, static_cast<int>(wq));
        if (static_cast<int64_t>(work.size()) < lw) work.resize(lw);
        geqrf(mi, ni, a.data(), mi, tau.data(), work.data(), lw, &info);
        T* rb = pr + b * rr * n;
        for (int64_t i = 0; i < rr; ++i)
          for (int64_t j = 0; j < n; ++j) rb[i * n + j] = j >= i ? a[j * m + i] : T(0);
        orgqr(mi, static_cast<int>(qc), static_cast<int>(k), a.data(), mi, tau.data(), work.data(), lw,
              &info);
        from_colmajor(a.data(), pq + b * m * qc, m, qc, m);
      }
    });
  });
}

// ---- svd --------------------------------------------------------------------------------------------
void svd_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), u = ctx.output(0), s = ctx.output(1), vh = ctx.output(2);
  const bool full = attr_int_or(ctx, "full_matrices", 0) != 0;
  const int64_t m = x.shape()[x.ndim() - 2], n = x.shape().back(), batch = batch_count(x, 2);
  const int64_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
  const int mi = as_int("svd", m), ni = as_int("svd", n);
  Failure fail;
  dispatch_lapack("svd", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T *pu = u.data<T>(), *ps = s.data<T>(), *pv = vh.data<T>();
    if (k == 0) {  // only identities (full) or nothing
      std::fill(pu, pu + batch * m * uc, T(0));
      std::fill(pv, pv + batch * vr * n, T(0));
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < uc; ++i) pu[b * m * uc + i * uc + i] = T(1);
        for (int64_t i = 0; i < vr; ++i) pv[b * vr * n + i * n + i] = T(1);
      }
      return;
    }
    // Row-major A (m x n) is column-major A^T (n x m) = V S U^T: LAPACK's "U" is our VH (row-major) and
    // its "VT" is our U, with no transposes.
    const char jobz = full ? 'A' : 'S';
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> a(m * n), work;
      std::vector<int> iwork(8 * k);
      for (int64_t b = lo; b < hi; ++b) {
        std::copy(px + b * m * n, px + (b + 1) * m * n, a.begin());
        T* lu = pv + b * vr * n;   // n x vr column-major
        T* lvt = pu + b * m * uc;  // uc x m column-major
        int info = 0;
        T wq;
        gesdd(jobz, ni, mi, a.data(), ni, ps + b * k, lu, ni, lvt, static_cast<int>(uc), &wq, -1,
              iwork.data(), &info);
        const int lw = std::max<int>(static_cast<int>(wq), 1);
        if (static_cast<int64_t>(work.size()) < lw) work.resize(lw);
        gesdd(jobz, ni, mi, a.data(), ni, ps + b * k, lu, ni, lvt, static_cast<int>(uc), work.data(), lw,
              iwork.data(), &info);
        if (info != 0) fail.record(b, info);
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "svd: LAPACK gesdd did not converge for matrix " << fail.batch.load() << " of the batch");
}

// ---- eigh -------------------------------------------------------------------------------------------
void eigh_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.output(0), v = ctx.output(1);
  const bool lower = attr_int_or(ctx, "lower", 1) != 0;
  const int64_t n = x.shape().back(), batch = batch_count(x, 2);
  const int ni = as_int("eigh", n);
  Failure fail;
  dispatch_lapack("eigh", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T *pw = w.data<T>(), *pv = v.data<T>();
    if (n == 0) return;
    const char uplo = lower ? 'U' : 'L';  // row-major lower is column-major upper
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> a(n * n), work;
      std::vector<int> iwork;
      for (int64_t b = lo; b < hi; ++b) {
        std::copy(px + b * n * n, px + (b + 1) * n * n, a.begin());
        int info = 0, iq = 0;
        T wq;
        syevd(uplo, ni, a.data(), pw + b * n, &wq, -1, &iq, -1, &info);
        const int lw = std::max<int>(static_cast<int>(wq), 1), liw = std::max(iq, 1);
        if (static_cast<int64_t>(work.size()) < lw) work.resize(lw);
        if (static_cast<int64_t>(iwork.size()) < liw) iwork.resize(liw);
        syevd(uplo, ni, a.data(), pw + b * n, work.data(), lw, iwork.data(), liw, &info);
        if (info != 0) fail.record(b, info);
        from_colmajor(a.data(), pv + b * n * n, n, n, n);  // column j is eigenvector j
      }
    });
  });
  OAR_SDK_CHECK(!fail.failed(), OAR_ERR_INVALID_ARGUMENT,
                "eigh: LAPACK syevd did not converge for matrix " << fail.batch.load() << " of the batch");
}

}  // namespace

void register_linalg_kernels(Registry& r) {
  const std::vector<OarDType> f = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  r.add("inverse", f, &inverse_kernel);
  r.add("det", f, &det_kernel);
  r.add("slogdet", f, &slogdet_kernel);
  r.add("solve", f, &solve_kernel);
  r.add("triangular_solve", f, &triangular_solve_kernel);
  r.add("cholesky", f, &cholesky_kernel);
  r.add("qr", f, &qr_kernel);
  r.add("svd", f, &svd_kernel);
  r.add("eigh", f, &eigh_kernel);
}

}  // namespace oar_cpu
