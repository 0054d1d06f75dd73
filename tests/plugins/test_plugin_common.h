// Shared working parts of the deliberately broken test plugins (tests/unit/test_loader.cc loads them).
//
// Each test plugin is a real plugin built against the SDK only: host memory from aligned_alloc, one
// device, synchronous streams, events with timing. The broken variants differ from a good plugin
// only in their one defect, which their own small source file shows. Every plugin that could load
// uses its own device type ("test_<something>") so it never collides with cpu or sim.
#pragma once

#include <oar/sdk.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace oar_test_plugin {

inline constexpr uint64_t kAlign = 64;

inline OarError* bad_device(int32_t device) {
  return oar::sdk::make_error(OAR_ERR_OUT_OF_RANGE,
                              "test plugin: device " + std::to_string(device) + " does not exist (1 device)");
}

// ---- device -------------------------------------------------------------------------------------
inline OarError* device_count(int32_t* count) {
  *count = 1;
  return nullptr;
}
inline OarError* device_open(int32_t device) { return device == 0 ? nullptr : bad_device(device); }
inline OarError* device_close(int32_t device) { return device == 0 ? nullptr : bad_device(device); }

// The properties a good test device reports; `name` names the device type.
inline OarDeviceProperties make_properties(const char* name) {
  OarDeviceProperties p{};
  p.struct_size = sizeof(p);
  std::snprintf(p.name, sizeof(p.name), "%s", name);
  p.total_memory = 1ull << 30;
  // One device: a plugin with collectives (inproc_collectives) runs all its ranks on it.
  p.capabilities = OAR_CAP_HOST_ACCESSIBLE | OAR_CAP_FP64 | OAR_CAP_SHARED_DEVICE_RANKS;
  p.alloc_alignment = kAlign;
  p.alloc_chunk_bytes = 0;
  p.compute_units = 3;
  p.max_streams = 0;
  return p;
}
// The name the device reports; set by the plugin's init.
inline std::string& device_name() {
  static std::string name = "test device";
  return name;
}
inline OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  if (device != 0) return bad_device(device);
  oar::sdk::fill_sized(props, make_properties(device_name().c_str()));
  return nullptr;
}
inline OarError* device_synchronize(int32_t device) { return device == 0 ? nullptr : bad_device(device); }
inline OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  if (device != 0) return bad_device(device);
  *free_bytes = 1ull << 30;
  *total_bytes = 1ull << 30;
  return nullptr;
}

// ---- memory: plain host memory whatever the kind --------------------------------------------------
inline OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  if (device != 0) return bad_device(device);
  if (kind < OAR_MEM_HOST || kind > OAR_MEM_UNIFIED)
    return oar::sdk::make_error(OAR_ERR_INVALID_ARGUMENT,
                                "test plugin: bad memory kind " + std::to_string(kind));
  uint64_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  *ptr = std::aligned_alloc(kAlign, rounded ? rounded : kAlign);
  if (!*ptr)
    return oar::sdk::make_error(OAR_ERR_OUT_OF_MEMORY,
                                "test plugin: cannot allocate " + std::to_string(bytes) + " bytes");
  return nullptr;
}
inline OarError* mem_free(int32_t device, int32_t, void* ptr) {
  if (device != 0) return bad_device(device);
  std::free(ptr);
  return nullptr;
}
inline OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream) {
  if (device != 0) return bad_device(device);
  std::memset(ptr, value, bytes);
  return nullptr;
}
inline OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation, const void* src, OarMemLocation,
                            uint64_t bytes, OarStream) {
  if (device != 0) return bad_device(device);
  if (bytes) std::memmove(dst, src, bytes);
  return nullptr;
}

// ---- streams: synchronous (work is done when it is enqueued); handles are distinct heap cells ----
struct StreamCell {
  int32_t device;
};
inline OarError* stream_create(int32_t device, int32_t, OarStream* stream) {
  if (device != 0) return bad_device(device);
  *stream = reinterpret_cast<OarStream>(new StreamCell{device});
  return nullptr;
}
inline OarError* stream_destroy(int32_t, OarStream stream) {
  delete reinterpret_cast<StreamCell*>(stream);
  return nullptr;
}
inline OarError* stream_synchronize(int32_t, OarStream) { return nullptr; }
inline OarError* stream_query(int32_t, OarStream, int32_t* done) {
  *done = 1;
  return nullptr;
}
inline OarError* stream_wait_event(int32_t, OarStream, OarEvent) { return nullptr; }
inline OarError* stream_launch_host_func(int32_t, OarStream, void (*fn)(void*), void* arg) {
  fn(arg);
  return nullptr;
}

// ---- events: a timestamp taken when recorded ------------------------------------------------------
struct EventCell {
  std::chrono::steady_clock::time_point when{};
  bool recorded = false;
};
inline OarError* event_create(int32_t device, uint32_t, OarEvent* event) {
  if (device != 0) return bad_device(device);
  *event = reinterpret_cast<OarEvent>(new EventCell());
  return nullptr;
}
inline OarError* event_destroy(int32_t, OarEvent event) {
  delete reinterpret_cast<EventCell*>(event);
  return nullptr;
}
inline OarError* event_record(int32_t, OarEvent event, OarStream) {
  auto* e = reinterpret_cast<EventCell*>(event);
  e->when = std::chrono::steady_clock::now();
  e->recorded = true;
  return nullptr;
}
inline OarError* event_synchronize(int32_t, OarEvent) { return nullptr; }
inline OarError* event_query(int32_t, OarEvent, int32_t* done) {
  *done = 1;
  return nullptr;
}
inline OarError* event_elapsed_ms(int32_t, OarEvent start, OarEvent end, float* ms) {
  auto* a = reinterpret_cast<EventCell*>(start);
  auto* b = reinterpret_cast<EventCell*>(end);
  if (!a->recorded || !b->recorded)
    return oar::sdk::make_error(OAR_ERR_PRECONDITION, "test plugin: event was never recorded");
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return nullptr;
}

// ---- the tables of a good plugin --------------------------------------------------------------------
inline OarDeviceTable device_table() {
  OarDeviceTable t{};
  t.struct_size = sizeof(t);
  t.count = device_count;
  t.open = device_open;
  t.close = device_close;
  t.properties = device_properties;
  t.synchronize = device_synchronize;
  t.memory_info = device_memory_info;
  return t;
}
inline OarMemoryTable memory_table() {
  OarMemoryTable t{};
  t.struct_size = sizeof(t);
  t.allocate = mem_allocate;
  t.free = mem_free;
  t.memset = mem_memset;
  t.memcpy = mem_memcpy;
  return t;
}
inline OarStreamTable stream_table() {
  OarStreamTable t{};
  t.struct_size = sizeof(t);
  t.create = stream_create;
  t.destroy = stream_destroy;
  t.synchronize = stream_synchronize;
  t.query = stream_query;
  t.wait_event = stream_wait_event;
  t.launch_host_func = stream_launch_host_func;
  return t;
}
inline OarEventTable event_table() {
  OarEventTable t{};
  t.struct_size = sizeof(t);
  t.create = event_create;
  t.destroy = event_destroy;
  t.record = event_record;
  t.synchronize = event_synchronize;
  t.query = event_query;
  t.elapsed_ms = event_elapsed_ms;
  return t;
}

// Fills the caller's info (keeping the struct_size the caller set).
inline void fill_info(OarPluginInfo* info, const char* name, const char* device_type, uint32_t abi_major,
                      uint32_t abi_minor) {
  OarPluginInfo mine{};
  mine.struct_size = sizeof(mine);
  mine.name = name;
  mine.device_type = device_type;
  mine.plugin_version = "0.0.1-test";
  mine.abi_major = abi_major;
  mine.abi_minor = abi_minor;
  mine.vendor_versions = nullptr;
  mine.score = 1;
  oar::sdk::fill_sized(info, mine);
}

// A working "add" kernel for float32 (numpy broadcasting through oar/sdk/iter.h).
inline void add_f32(oar::sdk::KernelContext& ctx) {
  oar::sdk::binary_loop<float, float, float>(ctx.output(0), ctx.input(0), ctx.input(1),
                                             [](float a, float b) { return a + b; });
}

// Sets up the services and returns a good plugin's tables (static storage: they must outlive init).
inline void init_good(const OarCoreServices* services, OarPluginTables* tables, const char* device_type) {
  oar::sdk::init_services(services);
  device_name() = std::string(device_type) + " test device";
  static const OarDeviceTable device = device_table();
  static const OarMemoryTable memory = memory_table();
  static const OarStreamTable stream = stream_table();
  static const OarEventTable event = event_table();
  OarPluginTables mine{};
  mine.struct_size = sizeof(mine);
  mine.device = &device;
  mine.memory = &memory;
  mine.stream = &stream;
  mine.event = &event;
  mine.shutdown = nullptr;
  oar::sdk::fill_sized(tables, mine);
}

}  // namespace oar_test_plugin
