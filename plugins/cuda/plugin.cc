// The gpu plugin's two entry points: what it is (oar_plugin_query) and its setup (oar_plugin_init):
// the runtime tables, NCCL collectives and every kernel family. Nothing here touches the GPU: a
// machine without a driver or a GPU fails at the core's device count, with the runtime's own reason.
#include <cublasLt.h>
#include <cudnn.h>
#include <nccl.h>

#include "cuda_common.h"

namespace oar_cuda {
void fill_runtime_tables(sdk::Tables& t);
void fill_collective_table(OarCollectiveTable& t);
}  // namespace oar_cuda

namespace {

#define OAR_STR2(x) #x
#define OAR_STR(x) OAR_STR2(x)
// The versions built against; the doctor shows them next to the plugin.
constexpr const char* kVendorVersions =
    "CUDA " OAR_STR(CUDART_VERSION) " (runtime linked statically), cuBLASLt " OAR_STR(CUBLAS_VER_MAJOR) "." OAR_STR(
        CUBLAS_VER_MINOR) ", cuDNN " OAR_STR(CUDNN_MAJOR) "." OAR_STR(CUDNN_MINOR) ", NCCL " OAR_STR(NCCL_MAJOR) "." OAR_STR(NCCL_MINOR);

const oar::sdk::PluginDescription kPlugin{"cuda", "gpu", "0.1.0", kVendorVersions, 100};

void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
  oar_cuda::fill_runtime_tables(t);
  oar_cuda::fill_collective_table(t.collective);
  oar_cuda::Registry r(kernels);
  oar_cuda::register_elementwise(r);
  oar_cuda::register_vendor(r);
  t.shutdown = [] {};
}

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
