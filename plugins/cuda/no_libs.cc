// The vendor-library hooks of a build without BLAS/DNN/collective libraries (the ROCm build on Debian,
// which packages neither rocBLAS/hipBLASLt, MIOpen nor RCCL): matmul and conv run the plugin's own
// kernels (own_blas.cu), and collectives are refused with the reason (collectives_none.cc).
#include "cuda_common.h"

namespace oar_cuda {

const char* library_versions() {
  return "no rocBLAS, MIOpen or RCCL at build time: matmul and convolution use the plugin's own kernels, "
         "collectives are unavailable";
}

bool register_library_blas(Registry&) { return false; }

}  // namespace oar_cuda
