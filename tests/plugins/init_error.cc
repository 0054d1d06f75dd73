// Defect: init fails the way a backend whose vendor library is absent fails: it returns an OarError
// (OAR_ERR_UNAVAILABLE) with the vendor's message. The loader must skip it with that message.
#include "test_plugin_common.h"

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "init_error", "test_init_error", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables*) {
  oar::sdk::init_services(services);
  return oar::sdk::make_error(OAR_ERR_UNAVAILABLE, "vendor library libfoo.so.1 not found", 2);
}
