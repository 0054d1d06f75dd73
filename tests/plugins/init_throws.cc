// Defect: init throws a C++ exception with no guard around it (the SDK's guard() is deliberately not
// used). The loader must catch it, skip the plugin and stay alive.
#include "test_plugin_common.h"

#include <stdexcept>

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "init_throws", "test_init_throws", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables*) {
  oar::sdk::init_services(services);
  throw std::runtime_error("init_throws: the vendor runtime blew up");
}
