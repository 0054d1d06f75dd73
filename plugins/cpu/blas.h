// BLAS and LAPACK for the CPU plugin, opened at run time (blas.cc says which library and why).
// Fortran interfaces: column-major, every argument by pointer, 32-bit integers (Debian's LP64 builds).
#pragma once

#include <complex>

extern "C" {
void sgetrf_(int* m, int* n, float* a, int* lda, int* ipiv, int* info);
void dgetrf_(int* m, int* n, double* a, int* lda, int* ipiv, int* info);
void sgetri_(int* n, float* a, int* lda, int* ipiv, float* work, int* lwork, int* info);
void dgetri_(int* n, double* a, int* lda, int* ipiv, double* work, int* lwork, int* info);
void sgetrs_(char* trans, int* n, int* nrhs, float* a, int* lda, int* ipiv, float* b, int* ldb, int* info);
void dgetrs_(char* trans, int* n, int* nrhs, double* a, int* lda, int* ipiv, double* b, int* ldb, int* info);
void spotrf_(char* uplo, int* n, float* a, int* lda, int* info);
void dpotrf_(char* uplo, int* n, double* a, int* lda, int* info);
void strtrs_(char* uplo, char* trans, char* diag, int* n, int* nrhs, float* a, int* lda, float* b, int* ldb,
             int* info);
void dtrtrs_(char* uplo, char* trans, char* diag, int* n, int* nrhs, double* a, int* lda, double* b, int* ldb,
             int* info);
void sgeqrf_(int* m, int* n, float* a, int* lda, float* tau, float* work, int* lwork, int* info);
void dgeqrf_(int* m, int* n, double* a, int* lda, double* tau, double* work, int* lwork, int* info);
void sorgqr_(int* m, int* n, int* k, float* a, int* lda, float* tau, float* work, int* lwork, int* info);
void dorgqr_(int* m, int* n, int* k, double* a, int* lda, double* tau, double* work, int* lwork, int* info);
void sgesdd_(char* jobz, int* m, int* n, float* a, int* lda, float* s, float* u, int* ldu, float* vt,
             int* ldvt, float* work, int* lwork, int* iwork, int* info);
void dgesdd_(char* jobz, int* m, int* n, double* a, int* lda, double* s, double* u, int* ldu, double* vt,
             int* ldvt, double* work, int* lwork, int* iwork, int* info);
void ssyevd_(char* jobz, char* uplo, int* n, float* a, int* lda, float* w, float* work, int* lwork,
             int* iwork, int* liwork, int* info);
void dsyevd_(char* jobz, char* uplo, int* n, double* a, int* lda, double* w, double* work, int* lwork,
             int* iwork, int* liwork, int* info);
void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc);
void cgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const std::complex<float>* alpha, const std::complex<float>* a, const int* lda,
            const std::complex<float>* b, const int* ldb, const std::complex<float>* beta,
            std::complex<float>* c, const int* ldc);
void zgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const std::complex<double>* alpha, const std::complex<double>* a, const int* lda,
            const std::complex<double>* b, const int* ldb, const std::complex<double>* beta,
            std::complex<double>* c, const int* ldc);
}

namespace oar_cpu {

// The entry points (the declarations above only give their types).
struct Blas {
#define OAR_BLAS_FN(name) decltype(&::name) name = nullptr;
  OAR_BLAS_FN(sgetrf_)
  OAR_BLAS_FN(dgetrf_)
  OAR_BLAS_FN(sgetri_)
  OAR_BLAS_FN(dgetri_)
  OAR_BLAS_FN(sgetrs_)
  OAR_BLAS_FN(dgetrs_)
  OAR_BLAS_FN(spotrf_)
  OAR_BLAS_FN(dpotrf_)
  OAR_BLAS_FN(strtrs_)
  OAR_BLAS_FN(dtrtrs_)
  OAR_BLAS_FN(sgeqrf_)
  OAR_BLAS_FN(dgeqrf_)
  OAR_BLAS_FN(sorgqr_)
  OAR_BLAS_FN(dorgqr_)
  OAR_BLAS_FN(sgesdd_)
  OAR_BLAS_FN(dgesdd_)
  OAR_BLAS_FN(ssyevd_)
  OAR_BLAS_FN(dsyevd_)
  OAR_BLAS_FN(dgemm_)
  OAR_BLAS_FN(cgemm_)
  OAR_BLAS_FN(zgemm_)
#undef OAR_BLAS_FN
  const char* library = "";  // the file that was opened
};

// Opened on first use; throws OAR_ERR_UNAVAILABLE (naming the Debian package) when no library loads.
// `op` names the caller in that message.
const Blas& blas(const char* op);

// True when blas() would succeed (no exception): callers with a fallback ask first.
bool blas_available();

}  // namespace oar_cpu
