// Defect: exports oar_plugin_init only; oar_plugin_query is missing. The loader must skip it and
// say that oar_plugin_query is missing (without calling init).
#include "test_plugin_common.h"

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_missing_query");
  return nullptr;
}
