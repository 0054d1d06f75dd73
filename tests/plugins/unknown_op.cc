// Defect: registers a kernel for "no_such_op_xyz", an op the core does not know, next to a working
// float32 "add" kernel. The loader must load it, record a warning naming the op, and run its add.
#include "test_plugin_common.h"

namespace {
void no_such_op_kernel(oar::sdk::KernelContext&) {
  OAR_SDK_CHECK(false, OAR_ERR_INTERNAL, "the kernel of an unknown op must never be called");
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "unknown_op", "test_unknown_op", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_unknown_op");
  return oar::sdk::guard([&] {
    oar::sdk::KernelRegistrar reg(registrar);
    reg.add("no_such_op_xyz", {OAR_DTYPE_FLOAT32}, no_such_op_kernel);
    reg.add("add", {OAR_DTYPE_FLOAT32}, oar_test_plugin::add_f32);
  });
}
