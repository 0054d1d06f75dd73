// Defect: the device count fails the way the CUDA runtime does on a machine without a driver
// ("CUDA driver version is insufficient for CUDA runtime version", cudaErrorInsufficientDriver = 35).
// The loader must skip the plugin with that reason: zero devices, never a crash.
#include "test_plugin_common.h"

namespace {
OarError* failing_count(int32_t* count) {
  *count = 0;
  return oar::sdk::make_error(OAR_ERR_UNAVAILABLE,
                              "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version",
                              35);
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "zero_devices", "test_zero_devices", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_zero_devices");
  static OarDeviceTable device = oar_test_plugin::device_table();
  device.count = failing_count;
  tables->device = &device;
  return nullptr;
}
