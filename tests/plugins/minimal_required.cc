// A plugin with only what the ABI requires (docs/device_abi.md): the device table's count and the memory
// table's allocate, free and memcpy; no open/close/properties, no memset, no stream, event, collective or
// profiler table (a synchronous device). One kernel, float32 `add`. The conformance suite must pass it,
// skipping what it leaves out with the reason (tests/python/test_plugin_kit.py).
//
// Built three times (tests/plugins/CMakeLists.txt), each with its own device type:
//  - minimal_required: as described;
//  - minimal_broken (MINIMAL_BROKEN_COPY): memcpy leaves the last byte of every copy of 8+ bytes
//    unwritten, a broken required behaviour the suite must fail;
//  - misnamed (MINIMAL_NAME "renamed"): the query's name differs from the file name
//    liboar_plugin_misnamed.so; the loader warns (tests/unit/test_loader.cc).
#include "test_plugin_common.h"

#ifndef MINIMAL_NAME
#define MINIMAL_NAME "minimal_required"
#endif
#ifndef MINIMAL_DEVICE_TYPE
#define MINIMAL_DEVICE_TYPE "test_minimal"
#endif
#ifndef MINIMAL_BROKEN_COPY
#define MINIMAL_BROKEN_COPY 0
#endif

namespace {
OarError* memcpy_required(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                          OarMemLocation src_loc, uint64_t bytes, OarStream stream) {
  if (MINIMAL_BROKEN_COPY && bytes >= 8) --bytes;  // the defect: the last byte stays as it was
  return oar_test_plugin::mem_memcpy(device, dst, dst_loc, src, src_loc, bytes, stream);
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, MINIMAL_NAME, MINIMAL_DEVICE_TYPE, OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  oar::sdk::init_services(services);
  static OarDeviceTable device{};
  device.struct_size = sizeof(device);
  device.count = oar_test_plugin::device_count;
  static OarMemoryTable memory{};
  memory.struct_size = sizeof(memory);
  memory.allocate = oar_test_plugin::mem_allocate;
  memory.free = oar_test_plugin::mem_free;
  memory.memcpy = memcpy_required;
  OarPluginTables mine{};
  mine.struct_size = sizeof(mine);
  mine.device = &device;
  mine.memory = &memory;
  oar::sdk::fill_sized(tables, mine);
  return oar::sdk::guard([&] {
    oar::sdk::KernelRegistrar reg(registrar);
    reg.add("add", {OAR_DTYPE_FLOAT32}, oar_test_plugin::add_f32);
  });
}
