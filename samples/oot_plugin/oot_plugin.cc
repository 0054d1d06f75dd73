// A complete oar backend plugin in one file, built against the SDK alone (never liboar_core).
//
// It provides the device type "oot" with one device whose "device memory" is ordinary host memory,
// synchronous streams and events, and one kernel: `multiply` for float32 with numpy broadcasting.
// Every op it has no kernel for runs on the CPU plugin through the core's fallback.
//
// To port it to real hardware, replace the bodies of the table functions with calls into your
// runtime (allocation, copies, streams, events) and add kernels; keep the shape of the file:
//   1. setup(): fills the tables (oar/sdk/tables.h sets their sizes) and registers the kernels;
//   2. OAR_SDK_PLUGIN(kPlugin, setup) defines the two exported entry points from it;
//   3. every entry point returns an OarError* (NULL = success) and lets no exception escape
//      (oar::sdk::guard turns one into an error).
#include <oar/sdk.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int32_t kNumDevices = 1;
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kTotalMemory = 1ull << 30;

OarError* check_device(int32_t device) {
  if (device >= 0 && device < kNumDevices) return nullptr;
  return oar::sdk::make_error(OAR_ERR_OUT_OF_RANGE, "oot: no device " + std::to_string(device) +
                                                        " (there are " + std::to_string(kNumDevices) + ")");
}

// ---- device ---------------------------------------------------------------------------------------
OarError* device_count(int32_t* count) {
  *count = kNumDevices;  // a real backend asks its driver; a failure here means "no devices, skip me"
  return nullptr;
}
OarError* device_open(int32_t device) { return check_device(device); }
OarError* device_close(int32_t device) { return check_device(device); }
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  if (OarError* e = check_device(device)) return e;
  OarDeviceProperties p{};
  p.struct_size = sizeof(p);
  std::strncpy(p.name, "oot sample device", sizeof(p.name) - 1);
  p.total_memory = kTotalMemory;
  // Our device memory is host memory, so the core may read it directly.
  p.capabilities = OAR_CAP_HOST_ACCESSIBLE | OAR_CAP_FP64;
  p.alloc_alignment = kAlignment;
  p.alloc_chunk_bytes = 0;  // let the core choose its growth chunk
  p.compute_units = 1;
  p.max_streams = 0;
  oar::sdk::fill_sized(props, p);  // writes no more than the core's struct holds
  return nullptr;
}
OarError* device_synchronize(int32_t device) { return check_device(device); }
OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  if (OarError* e = check_device(device)) return e;
  *free_bytes = kTotalMemory;
  *total_bytes = kTotalMemory;
  return nullptr;
}

// ---- memory ---------------------------------------------------------------------------------------
OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  if (OarError* e = check_device(device)) return e;
  if (kind < OAR_MEM_HOST || kind > OAR_MEM_UNIFIED)
    return oar::sdk::make_error(OAR_ERR_INVALID_ARGUMENT, "oot: unknown memory kind " + std::to_string(kind));
  // Honour the size the properties report, so the core (and the conformance suite) see a real limit.
  if (kind == OAR_MEM_DEVICE && bytes > kTotalMemory)
    return oar::sdk::make_error(OAR_ERR_OUT_OF_MEMORY, "oot: cannot allocate " + std::to_string(bytes) +
                                                           " bytes: the device has " +
                                                           std::to_string(kTotalMemory));
  uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  *ptr = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
  if (!*ptr)
    return oar::sdk::make_error(OAR_ERR_OUT_OF_MEMORY,
                                "oot: cannot allocate " + std::to_string(bytes) + " bytes");
  return nullptr;
}
OarError* mem_free(int32_t device, int32_t, void* ptr) {
  if (OarError* e = check_device(device)) return e;
  std::free(ptr);
  return nullptr;
}
OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream) {
  if (OarError* e = check_device(device)) return e;
  std::memset(ptr, value, bytes);
  return nullptr;
}
// One copy for every direction: host<->device and device<->device are all host memory here.
OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation, const void* src, OarMemLocation,
                     uint64_t bytes, OarStream) {
  if (OarError* e = check_device(device)) return e;
  if (bytes) std::memmove(dst, src, bytes);
  return nullptr;
}

// ---- streams: synchronous, so work is complete when a call returns ------------------------------------
struct Stream {
  int32_t device;
};
OarError* stream_create(int32_t device, int32_t, OarStream* stream) {
  if (OarError* e = check_device(device)) return e;
  *stream = reinterpret_cast<OarStream>(new Stream{device});
  return nullptr;
}
OarError* stream_destroy(int32_t, OarStream stream) {
  delete reinterpret_cast<Stream*>(stream);
  return nullptr;
}
OarError* stream_synchronize(int32_t, OarStream) { return nullptr; }
OarError* stream_query(int32_t, OarStream, int32_t* done) {
  *done = 1;
  return nullptr;
}
OarError* stream_wait_event(int32_t, OarStream, OarEvent) { return nullptr; }
OarError* stream_launch_host_func(int32_t, OarStream, void (*fn)(void*), void* arg) {
  fn(arg);  // everything before it on the stream is already done
  return nullptr;
}

// ---- events ---------------------------------------------------------------------------------------
struct Event {
  std::chrono::steady_clock::time_point when{};
  bool recorded = false;
};
OarError* event_create(int32_t device, uint32_t, OarEvent* event) {
  if (OarError* e = check_device(device)) return e;
  *event = reinterpret_cast<OarEvent>(new Event());
  return nullptr;
}
OarError* event_destroy(int32_t, OarEvent event) {
  delete reinterpret_cast<Event*>(event);
  return nullptr;
}
OarError* event_record(int32_t, OarEvent event, OarStream) {
  auto* e = reinterpret_cast<Event*>(event);
  e->when = std::chrono::steady_clock::now();
  e->recorded = true;
  return nullptr;
}
OarError* event_synchronize(int32_t, OarEvent) { return nullptr; }
OarError* event_query(int32_t, OarEvent, int32_t* done) {
  *done = 1;
  return nullptr;
}
OarError* event_elapsed_ms(int32_t, OarEvent start, OarEvent end, float* ms) {
  auto* a = reinterpret_cast<Event*>(start);
  auto* b = reinterpret_cast<Event*>(end);
  if (!a->recorded || !b->recorded)
    return oar::sdk::make_error(OAR_ERR_PRECONDITION, "oot: elapsed_ms on an event never recorded");
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return nullptr;
}

// ---- kernels --------------------------------------------------------------------------------------
// out = x * y. The core allocated `out` (contiguous, broadcast shape); x and y keep their own shapes
// and, because we register with OAR_KERNEL_STRIDED_INPUTS, any strides: binary_loop handles both.
// A device whose memory the host cannot touch would launch its own kernel on ctx.stream() instead.
void multiply_f32(oar::sdk::KernelContext& ctx) {
  oar::sdk::binary_loop<float, float, float>(ctx.output(0), ctx.input(0), ctx.input(1),
                                             [](float x, float y) { return x * y; });
}

// Fills the tables and registers the kernels. OAR_SDK_PLUGIN (oar/sdk/tables.h) turns it into the two
// entry points: oar_plugin_query (side-effect free: who we are, which ABI we were built for) and
// oar_plugin_init (the core's services first, the ABI major checked, any exception turned into an
// OarError, the required functions checked, the tables handed back).
void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
  t.device = {sizeof(OarDeviceTable), device_count,       device_open,       device_close,
              device_properties,      device_synchronize, device_memory_info};
  t.memory = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_memset, mem_memcpy};
  t.stream = {sizeof(OarStreamTable), stream_create,     stream_destroy,         stream_synchronize,
              stream_query,           stream_wait_event, stream_launch_host_func};
  t.event = {sizeof(OarEventTable), event_create, event_destroy,   event_record,
             event_synchronize,     event_query,  event_elapsed_ms};
  // collectives, profiler, shutdown: left NULL = not implemented
  kernels.add("multiply", {OAR_DTYPE_FLOAT32}, multiply_f32, OAR_KERNEL_STRIDED_INPUTS);
  oar::sdk::log(OAR_LOG_DEBUG, "oot: initialised with 1 device and 1 kernel");
}

// name must match the file name liboar_plugin_oot.so; vendor_versions would be e.g. "acme-runtime 3.2"
const oar::sdk::PluginDescription kPlugin{"oot", "oot", "0.1.0", nullptr, 0};

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
