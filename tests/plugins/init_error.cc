// Defect: init fails the way a backend whose vendor library is absent fails: it returns an OarError
// (OAR_ERR_UNAVAILABLE) with the vendor's message. The loader must skip it with that message.
// Built a second time as gpu_refused (CMakeLists.txt): device type "gpu", refusing as the CUDA plugin does
// on a machine without a driver, for the Python tests of oar.device.cuda without a GPU.
#include "test_plugin_common.h"

#ifndef INIT_ERROR_NAME
#define INIT_ERROR_NAME "init_error"
#define INIT_ERROR_DEVICE_TYPE "test_init_error"
#define INIT_ERROR_MESSAGE "vendor library libfoo.so.1 not found"
#endif

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, INIT_ERROR_NAME, INIT_ERROR_DEVICE_TYPE, OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables*) {
  oar::sdk::init_services(services);
  return oar::sdk::make_error(OAR_ERR_UNAVAILABLE, INIT_ERROR_MESSAGE, 2);
}
