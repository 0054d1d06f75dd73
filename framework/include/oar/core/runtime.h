// The runtime: loaded plugins, the device types they provide, devices (each with its pooled
// allocator and default stream), copies between devices, streams and events.
#pragma once

#include <oar/core/allocator.h>
#include <oar/core/dispatch.h>
#include <oar/core/place.h>
#include <oar/device_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace oar {

struct Plugin;
struct KernelEntry;
struct GraphPool;
class DeviceGraph;

// What the loader decided about one candidate plugin file (the doctor prints these).
struct PluginRecord {
  std::string path;
  std::string name;         // from query, when it got that far
  std::string device_type;
  std::string version;
  std::string vendor_versions;
  uint32_t abi_major = 0, abi_minor = 0;
  int32_t score = 0;
  bool loaded = false;
  std::string reason;       // why it was skipped
  int32_t num_devices = 0;
  int32_t num_kernels = 0;  // (op, dtype) pairs registered
  std::vector<std::string> warnings;  // e.g. kernels for ops this core does not know
};

// The plugin's tables as the core reads them: zero-filled copies of min(plugin size, ours) bytes,
// so a function an older plugin lacks is simply NULL.
struct PluginTables {
  OarDeviceTable device{};
  OarMemoryTable memory{};
  OarStreamTable stream{};
  OarEventTable event{};
  OarCollectiveTable collective{};
  OarProfilerTable profiler{};
  void (*shutdown)(void) = nullptr;
};

struct DeviceType {
  int16_t id = 0;
  std::string name;
  Plugin* plugin = nullptr;
  int32_t count = 0;
};

class Device {
 public:
  Device(const DeviceType* type, int32_t index);
  ~Device();
  Place place() const { return place_; }
  const DeviceType& type() const { return *type_; }
  const PluginTables& tables() const;
  const std::string& plugin_name() const;
  const OarDeviceProperties& properties() const { return props_; }
  bool host_accessible() const { return props_.capabilities & OAR_CAP_HOST_ACCESSIBLE; }
  BestFitAllocator& allocator() { return *allocator_; }
  // The current stream: kernels, copies and new allocations go there. It is the default stream unless
  // set_stream chose another (NULL: synchronous).
  OarStream stream() const { return current_.load(std::memory_order_acquire); }
  OarStream default_stream() const { return stream_; }
  // Makes `s` (a stream of this device, or default_stream()) current, for every thread, as Paddle's
  // paddle.device.set_stream; returns the previous one. The caller keeps `s` alive while it is current.
  OarStream set_stream(OarStream s) { return current_.exchange(s, std::memory_order_acq_rel); }
  void synchronize_stream() const;  // the current stream
  void synchronize() const;  // the whole device
  std::string name() const { return place_.to_string(); }
  // Graph capture (oar/core/graph.h): while a DeviceGraph captures this device, new storages come from
  // its pool (null otherwise: one predictable branch on the allocation path).
  GraphPool* capture_pool() const { return capture_pool_.load(std::memory_order_acquire); }
  DeviceGraph* capture_graph() const { return capture_graph_.load(std::memory_order_acquire); }
  // A new pool over this device's raw memory, with the device allocator's chunk size and alignment.
  GraphPool* new_graph_pool() const;

 private:
  friend class DeviceGraph;
  const DeviceType* type_;
  Place place_;
  OarDeviceProperties props_{};
  std::unique_ptr<BestFitAllocator> allocator_;
  RawMemory raw_;  // what allocator_ (and each graph pool) takes memory from
  std::atomic<GraphPool*> capture_pool_{nullptr};
  std::atomic<DeviceGraph*> capture_graph_{nullptr};
  OarStream stream_ = nullptr;
  std::atomic<OarStream> current_{nullptr};
};

// An extra stream on a device (the device's own is Device::default_stream()), or a view of one. RAII.
class Stream {
 public:
  // priority: 0 normal, larger is more urgent; plugins clamp it to their range.
  explicit Stream(Place place, int32_t priority = 0);
  // A view of a stream owned elsewhere (a device's default stream): never destroyed through it.
  static std::unique_ptr<Stream> view(Place place, OarStream stream);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  OarStream handle() const { return stream_; }
  Place place() const { return device_->place(); }
  void synchronize() const;
  bool query() const;  // true when all queued work is done
  void wait(const class Event& event) const;  // later work on this stream waits for the event

 private:
  Stream() = default;
  Device* device_ = nullptr;
  OarStream stream_ = nullptr;
  bool owned_ = true;
};

// A marker in a stream's work, for ordering between streams and for timing. RAII.
class Event {
 public:
  explicit Event(Place place, bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  OarEvent handle() const { return event_; }
  Place place() const { return device_->place(); }
  void record();                     // on the device's current stream
  void record(const Stream& stream);
  void synchronize() const;
  bool query() const;
  float elapsed_ms(const Event& end) const;  // from this event to `end`, both recorded and complete

 private:
  void record_on(OarStream stream);
  Device* device_;
  OarEvent event_ = nullptr;
};

class Runtime {
 public:
  // The process-wide runtime; plugins are discovered and loaded on first use.
  static Runtime& get();

  // Folders searched for liboar_plugin_*.so: OAR_PLUGIN_PATH, then CUSTOM_DEVICE_ROOT (both ':'-separated),
  // then the package's own plugin folder next to liboar_core (<libdir>/oar/plugins, <libdir>/../plugins).
  static std::vector<std::string> plugin_search_path();

  const std::vector<PluginRecord>& plugin_records() const { return records_; }
  const std::vector<DeviceType>& device_types() const { return device_types_; }
  const DeviceType* find_device_type(const std::string& name) const;
  // Why no plugin provides device type `type`: each refused candidate ("the plugin <path> was not loaded:
  // <reason>"), or that none is installed. Errors for an unknown device, the doctors and
  // oar.device.cuda quote it (a gpu plugin on a machine without a GPU says why).
  std::string unavailable_reason(const std::string& type) const;
  // The device types that only refused candidates would provide, in the order of the records.
  std::vector<std::string> refused_device_types() const;
  Device& device(Place place);  // opens it on first use; throws kNotFound for a bad place
  std::vector<Place> all_places();
  // Kernel table lookup; lock-free.
  const KernelEntry* kernel(int32_t op_id, int16_t device_type, DType dtype) const;
  // (op name, dtypes) registered per device type, for the doctor.
  std::vector<std::pair<std::string, std::vector<DType>>> kernels_of(int16_t device_type) const;
  // Publishes a kernel the core provides itself (custom op libraries, custom_op.cc).
  void add_kernel(int32_t op_id, int16_t device_type, DType dtype, const KernelEntry& entry);

  // Loads one more plugin file explicitly (the tests' broken plugins use this); never throws for a
  // bad plugin: the returned record says loaded or skipped and why.
  PluginRecord load_plugin(const std::string& path);

  // Copies `bytes` between two places through the plugins' memcpy, ordered after work queued on
  // both devices' default streams; returns once the destination is usable from its stream.
  void copy_bytes(void* dst, Place dst_place, const void* src, Place src_place, size_t bytes);

  // Trace events plugins emitted through the services table since the last call.
  struct TraceEvent {
    std::string name, category;
    uint64_t start_ns = 0, end_ns = 0;
    int32_t device = 0;
    uint64_t stream_id = 0, correlation_id = 0;
    std::string device_type;  // the emitting plugin's, filled by stop_profiling
  };
  std::vector<TraceEvent> take_trace_events();
  // Starts the profiler of every loaded plugin that has one.
  void start_profiling();
  // Stops them, has them flush their buffered events, and returns what was collected.
  std::vector<TraceEvent> stop_profiling();

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  Runtime();
  void discover();
  std::unique_ptr<Impl> impl_;
  std::vector<PluginRecord> records_;
  std::vector<DeviceType> device_types_;
};

}  // namespace oar
