// A newer plugin: built for ABI minor OAR_ABI_VERSION_MINOR + 1, so its structs carry fields appended
// after the core was built and say a larger struct_size. It must be accepted and work: the core reads
// only the prefix it knows. Into the structs the core passes in (info, tables, properties) it writes
// only the caller's struct_size, as a newer plugin must. It registers a float32 "add" kernel through
// a larger OarKernelDef.
#include "test_plugin_common.h"

namespace {
constexpr const char* kDeviceType = "test_newer";

// Fields a future minor appended (the core must ignore them).
struct NewerDeviceTable {
  OarDeviceTable base;
  OarError* (*reset)(int32_t device);
  uint64_t future_flags;
};
struct NewerMemoryTable {
  OarMemoryTable base;
  OarError* (*memcpy_2d)(int32_t device, void* dst, const void* src, uint64_t rows, uint64_t cols);
};
struct NewerStreamTable {
  OarStreamTable base;
  OarError* (*set_priority)(int32_t device, OarStream stream, int32_t priority);
};
struct NewerDeviceProperties {
  OarDeviceProperties base;
  uint64_t l2_cache_bytes;
  int32_t numa_node;
};
struct NewerKernelDef {
  OarKernelDef base;
  uint64_t future_flags;
  const char* future_name;
};
struct NewerPluginTables {
  OarPluginTables base;
  const void* future_table;
};

OarError* never_called_reset(int32_t) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL, "newer_minor: the core called a field it cannot know");
}
OarError* never_called_memcpy_2d(int32_t, void*, const void*, uint64_t, uint64_t) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL, "newer_minor: the core called a field it cannot know");
}
OarError* never_called_set_priority(int32_t, OarStream, int32_t) {
  return oar::sdk::make_error(OAR_ERR_INTERNAL, "newer_minor: the core called a field it cannot know");
}

OarError* properties(int32_t device, OarDeviceProperties* props) {
  if (device != 0) return oar_test_plugin::bad_device(device);
  NewerDeviceProperties mine{};
  mine.base = oar_test_plugin::make_properties("test_newer test device");
  mine.base.struct_size = sizeof(mine);
  mine.l2_cache_bytes = 1 << 20;
  mine.numa_node = 0;
  size_t n = props->struct_size < sizeof(mine) ? props->struct_size : sizeof(mine);
  size_t keep = props->struct_size;
  std::memcpy(props, &mine, n);  // never more than the caller's struct holds
  props->struct_size = keep;
  return nullptr;
}
}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "newer_minor", kDeviceType, OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR + 1);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  oar::sdk::init_services(services);
  static NewerDeviceTable device{};
  device.base = oar_test_plugin::device_table();
  device.base.struct_size = sizeof(device);
  device.base.properties = properties;
  device.reset = never_called_reset;
  device.future_flags = ~uint64_t{0};
  static NewerMemoryTable memory{};
  memory.base = oar_test_plugin::memory_table();
  memory.base.struct_size = sizeof(memory);
  memory.memcpy_2d = never_called_memcpy_2d;
  static NewerStreamTable stream{};
  stream.base = oar_test_plugin::stream_table();
  stream.base.struct_size = sizeof(stream);
  stream.set_priority = never_called_set_priority;
  static OarEventTable event = oar_test_plugin::event_table();

  NewerPluginTables mine{};
  mine.base.struct_size = sizeof(mine);
  mine.base.device = &device.base;
  mine.base.memory = &memory.base;
  mine.base.stream = &stream.base;
  mine.base.event = &event;
  mine.future_table = &device;
  size_t n = tables->struct_size < sizeof(mine) ? tables->struct_size : sizeof(mine);
  size_t keep = tables->struct_size;
  std::memcpy(tables, &mine, n);
  tables->struct_size = keep;

  return oar::sdk::guard([&] {
    static const int32_t dtypes[] = {OAR_DTYPE_FLOAT32};
    NewerKernelDef def{};
    def.base.struct_size = sizeof(def);
    def.base.op_name = "add";
    def.base.op_version = 1;
    def.base.dtypes = dtypes;
    def.base.num_dtypes = 1;
    def.base.layout = OAR_LAYOUT_STRIDED;
    def.base.flags = 0;
    def.base.fn = &oar::sdk::detail::kernel_trampoline;
    def.base.user_data = reinterpret_cast<void*>(&oar_test_plugin::add_f32);
    def.future_flags = 42;
    def.future_name = "add_v2";
    oar::sdk::throw_if_error(oar::sdk::services().register_kernel(registrar, &def.base));
  });
}
