// The sim plugin's entry points. See README.md for what "sim" simulates and why.
#include "sim_state.h"

namespace {

void sim_shutdown() {
  oar::sim::shutdown_collectives();  // wakes ranks blocked in a rendezvous so streams can drain
  oar::sim::shutdown_runtime();      // drains and joins every stream, frees all memory
}

void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
  using namespace oar::sim;
  configure_from_env();
  setup_runtime(t);
  setup_collectives(t);
  register_kernels(kernels);
  t.shutdown = &sim_shutdown;
}

const oar::sdk::PluginDescription kPlugin{"sim", "sim", "0.1.0", nullptr, 100};

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
