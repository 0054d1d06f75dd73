// Defect: exports oar_plugin_query only; oar_plugin_init is missing. The loader must skip it and say
// that oar_plugin_init is missing.
#include "test_plugin_common.h"

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "missing_init", "test_missing_init", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}
