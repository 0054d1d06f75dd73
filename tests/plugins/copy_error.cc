// Defect: every memcpy fails with the vendor's own error (OAR_ERR_EXTERNAL, native code 719 and a
// message). The plugin loads; a copy to or from its device must surface as an error naming the plugin
// and carrying that message (tests/python/test_custom_op_core.py, issue 6 item 4).
#include "test_plugin_common.h"

namespace {
OarError* failing_memcpy(int32_t, void*, OarMemLocation, const void*, OarMemLocation, uint64_t bytes,
                         OarStream) {
  return oar::sdk::services().error_new(
      OAR_ERR_EXTERNAL, 719,
      ("DMA engine fault while copying " + std::to_string(bytes) + " bytes (injected by the test)").c_str());
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "copy_error", "test_copy_error", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_copy_error");
  static OarMemoryTable memory = oar_test_plugin::memory_table();
  memory.memcpy = failing_memcpy;
  OarPluginTables mine{};
  std::memcpy(&mine, tables, std::min(tables->struct_size, sizeof(mine)));
  mine.memory = &memory;
  oar::sdk::fill_sized(tables, mine);
  return nullptr;
}
