// The gpu plugin's two entry points: what it is (oar_plugin_query) and its setup (oar_plugin_init):
// the runtime tables, collectives and every kernel family. Nothing here touches the GPU: a machine
// without a driver or a GPU fails at the core's device count, with the runtime's own reason. The same
// file makes liboar_plugin_cuda.so and liboar_plugin_rocm.so (gpu_runtime.h).
#include <cstdlib>
#include <string>

#include "cuda_common.h"

namespace oar_cuda {
void fill_runtime_tables(sdk::Tables& t);
void fill_collective_table(OarCollectiveTable& t);
bool own_kernels_requested();
}  // namespace oar_cuda

namespace {

// The versions built against, and which matmul/conv kernels run; the doctor shows them next to the
// plugin. Built on first use (the query may come before any other static of the plugin is ready).
const char* vendor_versions() {
  static const std::string s = [] {
    std::string v = OAR_GPU_VENDOR " " OAR_GPU_RUNTIME_VERSION_TEXT;
#if defined(OAR_GPU_STATIC_RUNTIME)
    v += " (runtime linked statically)";
#endif
    v += std::string(", ") + oar_cuda::library_versions();
    if (oar_cuda::own_kernels_requested())
      v += "; matmul/conv: the plugin's own kernels (OAR_GPU_OWN_KERNELS=1)";
    return v;
  }();
  return s.c_str();
}

const oar::sdk::PluginDescription kPlugin{OAR_GPU_PLUGIN_NAME, "gpu", "0.1.0", vendor_versions(), 100};

void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
  oar_cuda::fill_runtime_tables(t);
  oar_cuda::fill_collective_table(t.collective);
  oar_cuda::Registry r(kernels);
  oar_cuda::register_elementwise(r);
  oar_cuda::register_vendor(r);
  oar_cuda::register_reduction_family(r);
  t.shutdown = [] {};
}

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
