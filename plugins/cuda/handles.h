// Vendor library handles of the gpu plugin (cuBLASLt, cuBLAS, cuDNN) and the TF32 policy.
//
// Handles are per device and per thread (a cuDNN handle must not be used by two threads at once, and
// each is tied to the device current when it was made), created lazily at the first kernel that needs
// one: plugin init never touches the GPU, so it succeeds on a machine without one. They are never
// destroyed: kernels may run during exit, after static destructors, and the driver may be gone then.
// The caller binds the handle to the kernel's stream on every call (cudnnSetStream / cublasSetStream).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "cuda_common.h"

namespace oar_cuda {

// Errors of the libraries as sdk errors carrying the library's own status name.
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* what);
inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw_cublas_error(s, what);
}
[[noreturn]] void throw_cudnn_error(cudnnStatus_t s, const char* what);
inline void cudnn_check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw_cudnn_error(s, what);
}

// This thread's handles for `device` (made current first).
cublasLtHandle_t cublaslt_handle(int32_t device);
cublasHandle_t cublas_handle(int32_t device);
cudnnHandle_t cudnn_handle(int32_t device);

// OAR_ALLOW_TF32=1 in the environment (read once, at plugin init): float32 matmul computes with
// CUBLAS_COMPUTE_32F_FAST_TF32 and float32 cuDNN convolutions with CUDNN_DEFAULT_MATH (TF32 tensor cores allowed).
// Default: exact float32 (README.md, "TF32 policy").
bool allow_tf32();

// Registration of the vendor-library families (blas.cc, dnn.cc).
void register_blas(Registry& r);
void register_dnn(Registry& r);

}  // namespace oar_cuda
