// Which matmul and convolution kernels the plugin registers: the vendor libraries' (cuBLASLt, cuDNN)
// when the build has them, else the plugin's own (own_blas.cu). OAR_GPU_OWN_KERNELS=1 in the
// environment picks the own kernels in a build that has the libraries too, so the kernels a ROCm build
// without rocBLAS/MIOpen runs are tested on NVIDIA hardware (README.md). Read once, at plugin init.
#include <cstdlib>
#include <cstring>

#include "cuda_common.h"

namespace oar_cuda {

void register_amp(Registry& r);  // amp.cu: loss scaling for GradScaler

bool own_kernels_requested() {
  static const bool on = [] {
    const char* e = std::getenv("OAR_GPU_OWN_KERNELS");
    return e && std::strcmp(e, "1") == 0;
  }();
  return on;
}

void register_vendor(Registry& r) {
  if (own_kernels_requested() || !register_library_blas(r)) register_own_blas(r);
  register_pool(r);
  register_optim(r);
  register_amp(r);
}

}  // namespace oar_cuda
