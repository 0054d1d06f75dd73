// Defect: built for ABI minor OAR_ABI_VERSION_MINOR + OAR_ABI_MINOR_WINDOW + 1, outside the window of
// minors the core accepts. Otherwise a working plugin; the loader must refuse it (naming the minor).
#include "test_plugin_common.h"

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "minor_outside_window", "test_minor_window", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR + OAR_ABI_MINOR_WINDOW + 1);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_minor_window");
  return nullptr;
}
