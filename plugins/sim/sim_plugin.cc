// The sim plugin's two exported entry points. See README.md for what "sim" simulates and why.
#include "sim_state.h"

#include <oar/sdk/plugin.h>

namespace {

void sim_shutdown() {
  oar::sim::shutdown_collectives();  // wakes ranks blocked in a rendezvous so streams can drain
  oar::sim::shutdown_runtime();      // drains and joins every stream, frees all memory
}

}  // namespace

extern "C" {

OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  if (!info) return 1;
  OarPluginInfo i{};
  i.struct_size = sizeof(i);
  i.name = "sim";
  i.device_type = "sim";
  i.plugin_version = "0.1.0";
  i.abi_major = OAR_ABI_VERSION_MAJOR;
  i.abi_minor = OAR_ABI_VERSION_MINOR;
  i.vendor_versions = nullptr;
  i.score = 100;
  oar::sdk::fill_sized(info, i);
  return 0;
}

OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar* registrar,
                                            OarPluginTables* tables) {
  if (!services || !tables) return nullptr;  // nothing to report an error through
  oar::sdk::init_services(services);
  return oar::sdk::guard([&] {
    using namespace oar::sim;
    OAR_SDK_CHECK(services->abi_major == OAR_ABI_VERSION_MAJOR, OAR_ERR_ABI_MISMATCH,
                  "sim plugin built for ABI " << OAR_ABI_VERSION_MAJOR << ".x, core has "
                                              << services->abi_major << "." << services->abi_minor);
    OAR_SDK_CHECK(services->register_kernel && services->kernel_api, OAR_ERR_PRECONDITION,
                  "sim plugin: the core's services lack register_kernel/kernel_api");
    configure_from_env();
    register_kernels(registrar);
    OarPluginTables t{};
    t.struct_size = sizeof(t);
    t.device = &kDeviceTable;
    t.memory = &kMemoryTable;
    t.stream = &kStreamTable;
    t.event = &kEventTable;
    t.collective = &kCollectiveTable;
    t.profiler = &kProfilerTable;
    t.shutdown = &sim_shutdown;
    oar::sdk::fill_sized(tables, t);
  });
}

}  // extern "C"
