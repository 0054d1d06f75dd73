// An older plugin: built for ABI minor 1.1, so its structs end before fields
// appended since. It must be accepted and work. Emulated faithfully:
//  - every struct it hands over says a smaller struct_size than the core's sizeof; the bytes past
//    that size hold "poison" (a function or value that reports an error when used), so a core that
//    reads past struct_size fails the test instead of silently working;
//  - it writes only the prefix it knows of the structs the core passes in (info, tables, properties).
// It registers a float32 "add" kernel through a truncated OarKernelDef (no user_data field) and
// nothing else, so other ops on its device fall back to the CPU plugin. (If the core refuses that
// kernel definition the plugin still loads without it; the test then reports the missing kernel.)
#include "test_plugin_common.h"

#include <cstddef>

// Built twice (tests/plugins/CMakeLists.txt): as older_minor (1.1: the minor before OAR_ERR_DECLINED, whose
// code 12 it must not be able to send; pinned there when 1.3 came) and as abi_1_0
// (claiming ABI 1.0), so plugins of every older published minor are loaded by the tests.
#ifndef OLDER_MINOR_NAME
#define OLDER_MINOR_NAME "older_minor"
#define OLDER_MINOR_DEVICE "test_older"
#define OLDER_MINOR_ABI 1
#endif

namespace {
constexpr const char* kDeviceType = OLDER_MINOR_DEVICE;

// Copies only the first `known` bytes of `src` into the caller's struct, keeping its struct_size.
template <typename T> void fill_prefix(T* dst, const T& src, size_t known) {
  size_t n = dst->struct_size < known ? dst->struct_size : known;
  size_t keep = dst->struct_size;
  std::memcpy(dst, &src, n);
  dst->struct_size = keep;
}

OarError* poison_memory_info(int32_t, uint64_t*, uint64_t*) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL,
                              "older_minor: the core called memory_info, past the device table's struct_size");
}
OarError* poison_launch_host_func(int32_t, OarStream, void (*)(void*), void*) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL,
                              "older_minor: the core called launch_host_func, past the stream table's struct_size");
}
OarError* poison_elapsed_ms(int32_t, OarEvent, OarEvent, float*) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL,
                              "older_minor: the core called elapsed_ms, past the event table's struct_size");
}

OarError* properties(int32_t device, OarDeviceProperties* props) {
  if (device != 0) return oar_test_plugin::bad_device(device);
  OarDeviceProperties mine = oar_test_plugin::make_properties(OLDER_MINOR_DEVICE " test device");
  mine.max_streams = 7;  // not part of the older struct: the core must not see it
  fill_prefix(props, mine, offsetof(OarDeviceProperties, max_streams));
  return nullptr;
}

void* const kPoisonUserData = reinterpret_cast<void*>(uintptr_t{0xdeadbeef});

// The add kernel, written against the C signature; user_data is absent from the older OarKernelDef,
// so the core must pass NULL.
OarError* add_kernel(OarKernelContext* ctx, void* user_data) {
  if (user_data != nullptr)
    return oar::sdk::make_error(OAR_ERR_INTERNAL,
                                "older_minor: the core read OarKernelDef.user_data past its struct_size");
  oar::sdk::KernelContext c(ctx);
  // A plugin older than 1.2 cannot know OAR_ERR_DECLINED (12); this one returns that code anyway for
  // 13-element calls, and the core must treat it as the ordinary error it was then, not a decline.
  if (c.output(0).numel() == 13)
    return oar::sdk::services().error_new(OAR_ERR_DECLINED, 0, "older_minor: error code 12 from a 1.1 plugin");
  return oar::sdk::guard([&] { oar_test_plugin::add_f32(c); });
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  OarPluginInfo mine{};
  mine.struct_size = sizeof(mine);
  mine.name = OLDER_MINOR_NAME;
  mine.device_type = kDeviceType;
  mine.plugin_version = "0.0.1-test";
  mine.abi_major = OAR_ABI_VERSION_MAJOR;
  mine.abi_minor = OLDER_MINOR_ABI;
  mine.vendor_versions = "older vendor sdk 1.0";
  mine.score = 99;  // not part of the older struct
  fill_prefix(info, mine, offsetof(OarPluginInfo, score));
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  oar::sdk::init_services(services);
  static OarDeviceTable device = oar_test_plugin::device_table();
  device.struct_size = offsetof(OarDeviceTable, memory_info);
  device.properties = properties;
  device.memory_info = poison_memory_info;
  static OarMemoryTable memory = oar_test_plugin::memory_table();
  static OarStreamTable stream = oar_test_plugin::stream_table();
  stream.struct_size = offsetof(OarStreamTable, launch_host_func);
  stream.launch_host_func = poison_launch_host_func;
  static OarEventTable event = oar_test_plugin::event_table();
  event.struct_size = offsetof(OarEventTable, elapsed_ms);
  event.elapsed_ms = poison_elapsed_ms;

  OarPluginTables mine{};
  mine.struct_size = sizeof(mine);
  mine.device = &device;
  mine.memory = &memory;
  mine.stream = &stream;
  mine.event = &event;
  fill_prefix(tables, mine, offsetof(OarPluginTables, shutdown));  // an older plugin has no shutdown

  static const int32_t dtypes[] = {OAR_DTYPE_FLOAT32};
  OarKernelDef def{};
  def.struct_size = offsetof(OarKernelDef, user_data);
  def.op_name = "add";
  def.op_version = 1;
  def.dtypes = dtypes;
  def.num_dtypes = 1;
  def.layout = OAR_LAYOUT_STRIDED;
  def.flags = 0;
  def.fn = add_kernel;
  def.user_data = kPoisonUserData;
  // A core that refuses the older OarKernelDef is a bug the test reports (num_kernels, has_kernel);
  // the plugin still loads so that the rest of the older-minor checks run.
  if (OarError* err = oar::sdk::services().register_kernel(registrar, &def)) {
    oar::sdk::log(OAR_LOG_ERROR, std::string("older_minor: register_kernel refused an OarKernelDef of the older size: ") +
                                     oar::sdk::services().error_message(err));
    oar::sdk::services().error_free(err);
  }
  return nullptr;
}
