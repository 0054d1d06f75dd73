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
  return oar::sdk::answer_query(info, {"sim", "sim", "0.1.0", nullptr, 100});
}

OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar* registrar,
                                            OarPluginTables* tables) {
  return oar::sdk::run_init(services, tables, "sim", [&](OarPluginTables& t) {
    using namespace oar::sim;
    configure_from_env();
    register_kernels(registrar);
    t.device = &kDeviceTable;
    t.memory = &kMemoryTable;
    t.stream = &kStreamTable;
    t.event = &kEventTable;
    t.collective = &kCollectiveTable;
    t.profiler = &kProfilerTable;
    t.shutdown = &sim_shutdown;
  });
}

}  // extern "C"
