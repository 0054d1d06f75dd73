// Defect: built for ABI major OAR_ABI_VERSION_MAJOR + 1. Otherwise a working plugin; the loader must
// refuse it (naming the major version) and must not call its init.
#include "test_plugin_common.h"

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "abi_major", "test_abi_major", OAR_ABI_VERSION_MAJOR + 1,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_abi_major");
  return nullptr;
}
