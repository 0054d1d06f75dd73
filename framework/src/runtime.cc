// Plugin discovery and loading, device types and devices, copies between places, trace events.
#include <glog/logging.h>
#include <oar/core/error.h>
#include <oar/core/graph.h>
#include <oar/core/runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/filesystem.hpp>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "internal.h"

namespace oar {

// Defined in allocator.cc: hands the plugin's message for a failed raw allocation to the allocator.
void set_raw_alloc_error(std::string message);

namespace {
inline constexpr int kMaxDevicesPerType = 64;

// Copies min(table's own size, ours) bytes of a plugin table into a zeroed struct of ours.
template <typename T>
void read_table(T& dst, const T* src) {
  dst = T{};
  if (!src) return;
  std::memcpy(&dst, src, std::min(src->struct_size, sizeof(T)));
  dst.struct_size = sizeof(T);
}

std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string take_message(OarError* e) {
  std::string m = std::string(error_code_name(static_cast<ErrorCode>(e->code))) + ": " + e->message;
  delete e;
  return m;
}

void init_logging() {
  if (!google::IsGoogleLoggingInitialized()) {
    FLAGS_logtostderr = true;
    google::InitGoogleLogging("oar");
  }
}
}  // namespace

struct Runtime::Impl {
  std::vector<std::unique_ptr<Plugin>> plugins;
  // kernels[op_id][device_type * kNumDTypes + dtype]
  StableTable<std::array<KernelEntry, kMaxDeviceTypes * kNumDTypes>> kernels;
  std::array<std::array<std::atomic<Device*>, kMaxDevicesPerType>, kMaxDeviceTypes> devices{};
  std::mutex mu;  // loading and opening devices
  std::mutex trace_mu;
  std::vector<Runtime::TraceEvent> trace;
};

void trace_event_sink(const OarTraceEvent* e) {
  if (!e) return;
  OarTraceEvent c{};  // an older plugin's event may be shorter: the rest reads as zero
  std::memcpy(&c, e, std::min(e->struct_size, sizeof(c)));
  Runtime::TraceEvent t{
      c.name ? c.name : "", c.category ? c.category : "", c.start_ns, c.end_ns, c.device, c.stream_id,
      c.correlation_id};
  auto& impl = Runtime::get().impl();
  std::lock_guard<std::mutex> lock(impl.trace_mu);
  impl.trace.push_back(std::move(t));
}

std::vector<Runtime::TraceEvent> Runtime::take_trace_events() {
  std::lock_guard<std::mutex> lock(impl_->trace_mu);
  return std::exchange(impl_->trace, {});
}

void Runtime::start_profiling() {
  take_trace_events();  // start from a clean slate
  for (const auto& p : impl_->plugins)
    if (p->tables.profiler.start) check_plugin_error(p->name, "profiler start", p->tables.profiler.start());
}

std::vector<Runtime::TraceEvent> Runtime::stop_profiling() {
  std::vector<TraceEvent> out = take_trace_events();  // emitted before the flushes: plugin unknown
  for (const auto& p : impl_->plugins) {
    if (p->tables.profiler.stop) check_plugin_error(p->name, "profiler stop", p->tables.profiler.stop());
    if (!p->tables.profiler.flush) continue;
    check_plugin_error(p->name, "profiler flush", p->tables.profiler.flush());
    for (TraceEvent& e : take_trace_events()) {  // what this plugin's flush emitted
      e.device_type = p->device_type;
      out.push_back(std::move(e));
    }
  }
  return out;
}

// ---- Device -------------------------------------------------------------------------------------
Device::Device(const DeviceType* type, int32_t index) : type_(type), place_{type->id, index} {
  const PluginTables& t = tables();
  const std::string& plugin = plugin_name();
  if (t.device.open) check_plugin_error(plugin, "device open", t.device.open(index));
  props_.struct_size = sizeof(props_);
  if (t.device.properties)
    check_plugin_error(plugin, "device properties", t.device.properties(index, &props_));
  props_.struct_size = sizeof(props_);
  if (t.stream.create) check_plugin_error(plugin, "stream create", t.stream.create(index, 0, &stream_));
  current_.store(stream_, std::memory_order_release);
  RawMemory raw;
  raw.device_name = place_.to_string();
  raw.raw_alloc = [this, index](size_t bytes) -> void* {
    void* p = nullptr;
    OarError* e = tables().memory.allocate(index, OAR_MEM_DEVICE, bytes, &p);
    if (e) {
      std::string why = take_message(e);
      LOG(WARNING) << plugin_name() << ": allocate(" << bytes << ") failed: " << why;
      set_raw_alloc_error("plugin " + plugin_name() + ": " + why);
      return nullptr;
    }
    return p;
  };
  raw.raw_free = [this, index](void* p) {
    OarError* e = tables().memory.free(index, OAR_MEM_DEVICE, p);
    if (e) LOG(WARNING) << plugin_name() << ": free failed: " << take_message(e);
  };
  raw.synchronize = [this] { synchronize(); };
  size_t chunk = props_.alloc_chunk_bytes ? props_.alloc_chunk_bytes : (size_t{2} << 20);
  size_t align = std::max<uint64_t>(props_.alloc_alignment, 64);
  raw_ = raw;
  allocator_ = std::make_unique<BestFitAllocator>(std::move(raw), chunk, align);
}

GraphPool* Device::new_graph_pool() const {
  RawMemory raw = raw_;
  // A pool dies with its last tensor, maybe while another graph captures this device, when the device's
  // synchronize is refused: its chunks are then freed after a warning (a plugin's free waits for the
  // device itself, as cudaFree does; the sim's does).
  raw.synchronize = [this] {
    try {
      synchronize();
    } catch (const std::exception& e) {
      LOG(WARNING) << name() << ": freeing a graph's memory pool: " << e.what();
    }
  };
  return new GraphPool(std::move(raw), allocator_->chunk_bytes(), allocator_->alignment());
}

Device::~Device() = default;

const PluginTables& Device::tables() const { return type_->plugin->tables; }
const std::string& Device::plugin_name() const { return type_->plugin->name; }

void Device::synchronize_stream() const {
  OarStream s = stream();
  if (s && tables().stream.synchronize)
    check_plugin_error(plugin_name(), "stream synchronize", tables().stream.synchronize(place_.index, s));
}

void Device::synchronize() const {
  if (tables().device.synchronize)
    check_plugin_error(plugin_name(), "device synchronize", tables().device.synchronize(place_.index));
  else
    synchronize_stream();
}

// ---- Stream and Event ---------------------------------------------------------------------------
namespace {
const PluginTables& checked_tables(Device* d, bool ok, const char* what) {
  OAR_ENFORCE(ok, ErrorCode::kUnimplemented,
              d->name() << ": the " << d->plugin_name() << " plugin does not implement " << what);
  return d->tables();
}
}  // namespace

Stream::Stream(Place place, int32_t priority) : device_(&Runtime::get().device(place)) {
  const auto& t = checked_tables(device_, device_->tables().stream.create, "stream creation");
  check_plugin_error(device_->plugin_name(), "stream create",
                     t.stream.create(place.index, priority, &stream_));
}
std::unique_ptr<Stream> Stream::view(Place place, OarStream stream) {
  std::unique_ptr<Stream> s(new Stream());
  s->device_ = &Runtime::get().device(place);
  s->stream_ = stream;
  s->owned_ = false;
  return s;
}
Stream::~Stream() {
  if (owned_ && stream_ && device_->tables().stream.destroy) {
    OarError* e = device_->tables().stream.destroy(device_->place().index, stream_);
    if (e) LOG(WARNING) << device_->name() << ": stream destroy failed: " << take_message(e);
  }
}
// A NULL stream (a device without a stream table) is synchronous: nothing is ever pending on it.
void Stream::synchronize() const {
  if (!stream_) return;
  const auto& t = checked_tables(device_, device_->tables().stream.synchronize, "stream synchronize");
  check_plugin_error(device_->plugin_name(), "stream synchronize",
                     t.stream.synchronize(device_->place().index, stream_));
}
bool Stream::query() const {
  if (!stream_) return true;
  const auto& t = checked_tables(device_, device_->tables().stream.query, "stream query");
  int32_t done = 0;
  check_plugin_error(device_->plugin_name(), "stream query",
                     t.stream.query(device_->place().index, stream_, &done));
  return done != 0;
}
void Stream::wait(const Event& event) const {
  OAR_ENFORCE(
      event.place() == device_->place(), ErrorCode::kInvalidArgument,
      "a stream of " << device_->name() << " cannot wait for an event of " << event.place().to_string());
  if (!stream_) return event.synchronize();  // later synchronous work starts after the event
  const auto& t = checked_tables(device_, device_->tables().stream.wait_event, "stream wait_event");
  check_plugin_error(device_->plugin_name(), "stream wait_event",
                     t.stream.wait_event(device_->place().index, stream_, event.handle()));
}

Event::Event(Place place, bool timing) : device_(&Runtime::get().device(place)) {
  const auto& t = checked_tables(device_, device_->tables().event.create, "events");
  check_plugin_error(
      device_->plugin_name(), "event create",
      t.event.create(place.index, timing ? OAR_EVENT_DEFAULT : OAR_EVENT_DISABLE_TIMING, &event_));
}
Event::~Event() {
  if (event_ && device_->tables().event.destroy) {
    OarError* e = device_->tables().event.destroy(device_->place().index, event_);
    if (e) LOG(WARNING) << device_->name() << ": event destroy failed: " << take_message(e);
  }
}
void Event::record() { record_on(device_->stream()); }
void Event::record(const Stream& stream) {
  OAR_ENFORCE(stream.place() == device_->place(), ErrorCode::kInvalidArgument,
              "an event of " << device_->name() << " cannot be recorded on a stream of "
                             << stream.place().to_string());
  record_on(stream.handle());
}
void Event::record_on(OarStream s) {
  const auto& t = checked_tables(device_, device_->tables().event.record, "event record");
  check_plugin_error(device_->plugin_name(), "event record",
                     t.event.record(device_->place().index, event_, s));
}
void Event::synchronize() const {
  const auto& t = checked_tables(device_, device_->tables().event.synchronize, "event synchronize");
  check_plugin_error(device_->plugin_name(), "event synchronize",
                     t.event.synchronize(device_->place().index, event_));
}
bool Event::query() const {
  const auto& t = checked_tables(device_, device_->tables().event.query, "event query");
  int32_t done = 0;
  check_plugin_error(device_->plugin_name(), "event query",
                     t.event.query(device_->place().index, event_, &done));
  return done != 0;
}
float Event::elapsed_ms(const Event& end) const {
  const auto& t = checked_tables(device_, device_->tables().event.elapsed_ms, "event timing");
  float ms = 0;
  check_plugin_error(device_->plugin_name(), "event elapsed_ms",
                     t.event.elapsed_ms(device_->place().index, event_, end.handle(), &ms));
  return ms;
}

// ---- Runtime ------------------------------------------------------------------------------------
Runtime& Runtime::get() {
  // Never destroyed: plugin code and tensors may still run during static destruction.
  static Runtime* rt = [] {
    auto* r = new Runtime();
    r->discover();
    return r;
  }();
  return *rt;
}

Runtime::Runtime() : impl_(std::make_unique<Impl>()) {
  init_logging();
  // Room for ops registered later (custom op libraries) without moving the table under lock-free readers.
  impl_->kernels.grow_to(static_cast<size_t>(OpRegistry::get().size()));
  device_types_.reserve(kMaxDeviceTypes);
  device_types_.push_back(DeviceType{kCpuDeviceType, "cpu", nullptr, 0});  // cpu is always type 0
}

namespace {
// OpenMP threads that spin at a barrier keep the cores other processes need, and while another process
// holds a core, the parallel region waits for its descheduled thread for a whole time slice: a training
// step went from 0.36 ms to 20-48 ms while a compiler ran (issue 20). So, unless the user chose a policy
// (OMP_WAIT_POLICY or GOMP_SPINCOUNT), oar sets libgomp's spin count to OAR_OMP_SPINCOUNT or
// kDefaultOmpSpin (measured: tests/benchmarks/bench_contention.py, decision 84); OAR_OMP_SPINCOUNT=keep
// leaves libgomp's default. libgomp reads it once, when the first plugin using OpenMP loads it: a process
// that loaded libgomp before oar (another library) keeps what it had.
constexpr const char* kDefaultOmpSpin = "10000";
void default_omp_wait_policy() {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  const char* chosen = std::getenv("OAR_OMP_SPINCOUNT");
  if (chosen && std::strcmp(chosen, "keep") == 0) return;
  ::setenv("GOMP_SPINCOUNT", chosen && *chosen ? chosen : kDefaultOmpSpin, 0);
}

// The device type a skipped candidate would have provided: its query's; when its query was never reached,
// gpu for liboar_plugin_cuda.so (the usual case: a gpu plugin whose vendor library is missing cannot even
// be opened), else unknown.
std::string candidate_type(const PluginRecord& r) {
  if (!r.device_type.empty()) return r.device_type;
  return boost::filesystem::path(r.path).filename() == "liboar_plugin_cuda.so" ? "gpu" : "";
}
}  // namespace

std::vector<std::string> Runtime::refused_device_types() const {
  std::vector<std::string> out;
  for (const auto& r : records_) {
    const std::string t = r.loaded ? "" : candidate_type(r);
    if (!t.empty() && !find_device_type(t) && std::find(out.begin(), out.end(), t) == out.end())
      out.push_back(t);
  }
  return out;
}

std::string Runtime::unavailable_reason(const std::string& type) const {
  std::string out;
  for (const auto& r : records_) {
    if (r.loaded || candidate_type(r) != type) continue;
    out += (out.empty() ? "" : "; ") + std::string("the plugin ") + r.path + " was not loaded: " + r.reason;
  }
  if (out.empty())
    out = "no installed plugin provides device type '" + type + "'" +
          (type == "gpu" ? " (the CUDA backend is the oar-cuda wheel: pip install oar-cuda)" : "");
  return out;
}

std::vector<std::string> Runtime::plugin_search_path() {
  std::vector<std::string> dirs;
  // OAR_PLUGIN_PATH, then PaddlePaddle's CUSTOM_DEVICE_ROOT (for users coming from Paddle; we still only
  // load liboar_plugin_*.so files from it). Both may list several folders separated by ':'.
  for (const char* var : {"OAR_PLUGIN_PATH", "CUSTOM_DEVICE_ROOT"}) {
    const char* env = std::getenv(var);
    if (!env) continue;
    std::stringstream ss(env);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  boost::system::error_code ec;
  auto self = boost::dll::symbol_location(plugin_search_path, ec);  // liboar_core itself
  if (!ec) {
    auto libdir = self.parent_path();
    dirs.push_back((libdir / "oar" / "plugins").string());
    dirs.push_back((libdir.parent_path() / "plugins").string());
  }
  return dirs;
}

const DeviceType* Runtime::find_device_type(const std::string& name) const {
  for (const auto& t : device_types_)
    if (t.name == name && t.plugin) return &t;
  return nullptr;
}

void Runtime::discover() {
  namespace fs = boost::filesystem;
  default_omp_wait_policy();  // before any plugin loads libgomp
  std::vector<std::string> candidates;
  std::map<std::string, std::string> seen;  // file name -> first path
  for (const auto& dir : plugin_search_path()) {
    boost::system::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string fname = it->path().filename().string();
      if (fname.rfind("liboar_plugin_", 0) == 0 && it->path().extension() == ".so")
        files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string fname = fs::path(f).filename().string();
      if (seen.count(fname)) {
        PluginRecord r;
        r.path = f;
        r.reason = "shadowed by " + seen[fname] + " (earlier in the search path)";
        records_.push_back(r);
        continue;
      }
      seen[fname] = f;
      candidates.push_back(f);
    }
  }
  // Order candidates so that, per device type, the highest score is tried first (query only).
  std::vector<std::pair<int32_t, std::string>> order;
  for (const auto& path : candidates) {
    int32_t score = 0;
    try {
      boost::dll::shared_library lib(path,
                                     boost::dll::load_mode::rtld_lazy | boost::dll::load_mode::rtld_local);
      if (lib.has(OAR_PLUGIN_QUERY_SYMBOL)) {
        OarPluginInfo info{};
        info.struct_size = sizeof(info);
        if (lib.get<int32_t(OarPluginInfo*)>(OAR_PLUGIN_QUERY_SYMBOL)(&info) == 0) score = info.score;
      }
    } catch (...) {
      // load_plugin() below reports the reason.
    }
    order.emplace_back(-score, path);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [neg_score, path] : order) load_plugin(path);
  if (!device_types_[kCpuDeviceType].plugin)
    LOG(WARNING) << "the cpu plugin (liboar_plugin_cpu.so) was not loaded; run oar-doctor to see why";
}

PluginRecord Runtime::load_plugin(const std::string& path) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  PluginRecord rec;
  rec.path = path;
  auto finish = [&](const std::string& reason) {
    rec.loaded = reason.empty();
    rec.reason = reason;
    // A skipped plugin is often normal (a GPU plugin on a machine without a GPU); oar-doctor explains.
    if (!rec.loaded) VLOG(1) << "plugin " << path << " skipped: " << reason;
    records_.push_back(rec);
    return rec;
  };

  auto plugin = std::make_unique<Plugin>();
  plugin->path = path;
  try {
    plugin->library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    return finish(std::string("cannot be loaded: ") + e.what());
  }
  if (!plugin->library.has(OAR_PLUGIN_QUERY_SYMBOL))
    return finish("missing entry point " OAR_PLUGIN_QUERY_SYMBOL);
  if (!plugin->library.has(OAR_PLUGIN_INIT_SYMBOL))
    return finish("missing entry point " OAR_PLUGIN_INIT_SYMBOL);
  auto query = plugin->library.get<int32_t(OarPluginInfo*)>(OAR_PLUGIN_QUERY_SYMBOL);
  auto init = plugin->library.get<OarError*(const OarCoreServices*, OarRegistrar*, OarPluginTables*)>(
      OAR_PLUGIN_INIT_SYMBOL);

  // Query: side-effect free, tells us whether to go on.
  OarPluginInfo info{};
  info.struct_size = sizeof(info);
  int32_t rc = 0;
  try {
    rc = query(&info);
  } catch (...) {
    return finish(OAR_PLUGIN_QUERY_SYMBOL
                  " threw a C++ exception (plugins must not let exceptions cross the ABI)");
  }
  if (rc != 0) return finish(OAR_PLUGIN_QUERY_SYMBOL " failed with code " + std::to_string(rc));
  if (!info.name || !info.device_type || !*info.name || !*info.device_type)
    return finish(OAR_PLUGIN_QUERY_SYMBOL " returned no name or device type");
  rec.name = info.name;
  rec.device_type = info.device_type;
  rec.version = info.plugin_version ? info.plugin_version : "";
  rec.vendor_versions = info.vendor_versions ? info.vendor_versions : "";
  rec.abi_major = info.abi_major;
  rec.abi_minor = info.abi_minor;
  rec.score = info.score;
  plugin->name = rec.name;
  plugin->device_type = rec.device_type;
  // The file is to be liboar_plugin_<name>.so: discovery and the search path go by file name, error
  // messages and the doctor by the query's name. A mismatch still loads, with a warning in the record.
  const std::string file_name = boost::filesystem::path(path).filename().string();
  if (file_name != "liboar_plugin_" + rec.name + ".so") {
    rec.warnings.push_back("the plugin's name '" + rec.name + "' does not match its file name " + file_name +
                           " (expected liboar_plugin_" + rec.name + ".so)");
    LOG(WARNING) << "plugin " << path << ": " << rec.warnings.back();
  }

  // The version rule (docs/device_abi.md): same major; minor within the window, either direction.
  const std::string core_abi = abi_string(OAR_ABI_VERSION_MAJOR, OAR_ABI_VERSION_MINOR);
  if (info.abi_major != OAR_ABI_VERSION_MAJOR)
    return finish("ABI major version mismatch: plugin built for ABI " +
                  abi_string(info.abi_major, info.abi_minor) + ", this core implements ABI " + core_abi +
                  " (the major must match)");
  int64_t minor_gap = static_cast<int64_t>(info.abi_minor) - OAR_ABI_VERSION_MINOR;
  if (minor_gap > OAR_ABI_MINOR_WINDOW || minor_gap < -OAR_ABI_MINOR_WINDOW)
    return finish("ABI minor version outside the accepted window: plugin built for ABI " +
                  abi_string(info.abi_major, info.abi_minor) + ", this core implements ABI " + core_abi +
                  " and accepts minors within +/-" + std::to_string(OAR_ABI_MINOR_WINDOW));
  // discover() tries candidates for one device type best score first, so the first one wins.
  if (const DeviceType* existing = find_device_type(rec.device_type))
    return finish("device type '" + rec.device_type + "' is already provided by " + existing->plugin->path +
                  " (it has a higher or equal score)");
  if (rec.device_type != "cpu" && device_types_.size() >= static_cast<size_t>(kMaxDeviceTypes))
    return finish("too many device types (at most " + std::to_string(kMaxDeviceTypes) + ")");

  // Testing knob (the conformance suite's abi.older_core check): hand the plugin the services as an
  // older core of this major would, to show it copes with the fields that core lacks.
  const OarCoreServices* services = core_services();
  if (const char* emulate = std::getenv("OAR_ABI_EMULATE_CORE_MINOR")) {
    char* end = nullptr;
    long minor = std::strtol(emulate, &end, 10);
    if (!*emulate || *end || minor < 0 || minor > OAR_ABI_VERSION_MINOR ||
        OAR_ABI_VERSION_MINOR - minor > OAR_ABI_MINOR_WINDOW)
      return finish(std::string("OAR_ABI_EMULATE_CORE_MINOR='") + emulate +
                    "' is not a minor this core can present (0.." + std::to_string(OAR_ABI_VERSION_MINOR) +
                    ")");
    services = core_services_as_minor(static_cast<uint32_t>(minor));
  }
  plugin->may_decline = info.abi_minor >= 2 && services->abi_minor >= 2;

  // Init: the plugin registers kernels (held back until init succeeds) and returns its tables.
  OarRegistrar registrar{plugin.get(), true, {}};
  OarPluginTables tables{};
  tables.struct_size = sizeof(tables);
  OarError* err = nullptr;
  try {
    err = init(services, &registrar, &tables);
  } catch (const std::exception& e) {
    return finish(std::string(OAR_PLUGIN_INIT_SYMBOL " threw a C++ exception: ") + e.what());
  } catch (...) {
    return finish(OAR_PLUGIN_INIT_SYMBOL " threw a C++ exception of unknown type");
  }
  registrar.open = false;
  if (err) return finish(OAR_PLUGIN_INIT_SYMBOL " failed: " + take_message(err));

  PluginTables& t = plugin->tables;
  OarPluginTables given{};
  std::memcpy(&given, &tables,
              std::min(tables.struct_size ? tables.struct_size : sizeof(tables), sizeof(tables)));
  read_table(t.device, given.device);
  read_table(t.memory, given.memory);
  read_table(t.stream, given.stream);
  read_table(t.event, given.event);
  read_table(t.collective, given.collective);
  read_table(t.profiler, given.profiler);
  t.shutdown = given.shutdown;
  if (!t.device.count) return finish("the device table lacks count()");
  if (!t.memory.allocate || !t.memory.free || !t.memory.memcpy)
    return finish("the memory table lacks allocate(), free() or memcpy()");

  int32_t count = 0;
  OarError* cerr = t.device.count(&count);
  if (cerr) return finish("found no usable device: " + take_message(cerr));
  if (count <= 0) return finish("found no devices");
  rec.num_devices = std::min(count, kMaxDevicesPerType);

  // Accept: give the device type an id and publish the kernels.
  int16_t type_id;
  if (rec.device_type == "cpu") {
    type_id = kCpuDeviceType;
  } else {
    type_id = static_cast<int16_t>(device_types_.size());
    device_types_.push_back(DeviceType{type_id, rec.device_type, nullptr, 0});
  }
  DeviceType& dt = device_types_[type_id];
  dt.plugin = plugin.get();
  dt.count = rec.num_devices;
  const OpRegistry& ops = OpRegistry::get();
  for (const PendingKernel& k : registrar.kernels) {
    const OpDef* op = ops.find(k.op);
    if (!op) {
      rec.warnings.push_back("kernel for unknown op '" + k.op + "' ignored");
      LOG(WARNING) << "plugin " << rec.name << ": kernel for unknown op '" << k.op << "' ignored";
      continue;
    }
    if (k.op_version > op->version) {
      rec.warnings.push_back("kernel for op '" + k.op + "' targets schema version " +
                             std::to_string(k.op_version) + ", newer than this core's " +
                             std::to_string(op->version) + "; ignored");
      continue;
    }
    for (int32_t d : k.dtypes) {
      impl_->kernels[op->id][type_id * kNumDTypes + d] =
          KernelEntry{k.fn, k.user_data, k.flags, plugin.get(), k.supports, k.supports_user_data};
      ++rec.num_kernels;
    }
  }
  plugin->record_index = records_.size();
  impl_->plugins.push_back(std::move(plugin));
  if (t.shutdown) {
    // Registered after init, so it runs before the plugin's own static destructors.
    static std::vector<void (*)(void)>* shutdowns = new std::vector<void (*)(void)>();
    shutdowns->push_back(t.shutdown);
    if (shutdowns->size() == 1)
      std::atexit([] {
        for (auto it = shutdowns->rbegin(); it != shutdowns->rend(); ++it) (*it)();
      });
  }
  return finish("");
}

const KernelEntry* Runtime::kernel(int32_t op_id, int16_t device_type, DType dtype) const {
  const auto* row = impl_->kernels.find(static_cast<size_t>(op_id));
  if (!row) return nullptr;  // an op added after any kernel was
  const KernelEntry& e = (*row)[device_type * kNumDTypes + static_cast<int32_t>(dtype)];
  return e.fn ? &e : nullptr;
}

void Runtime::add_kernel(int32_t op_id, int16_t device_type, DType dtype, const KernelEntry& entry) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  OAR_ENFORCE(op_id >= 0 && op_id < OpRegistry::get().size(), ErrorCode::kOutOfRange,
              "add_kernel: op id " << op_id << " out of range");
  impl_->kernels.grow_to(static_cast<size_t>(op_id) + 1);
  impl_->kernels[op_id][device_type * kNumDTypes + static_cast<int32_t>(dtype)] = entry;
}

std::vector<std::pair<std::string, std::vector<DType>>> Runtime::kernels_of(int16_t device_type) const {
  std::vector<std::pair<std::string, std::vector<DType>>> out;
  const OpRegistry& ops = OpRegistry::get();
  for (int32_t id = 0; id < ops.size(); ++id) {
    if (ops.at(id).custom) continue;  // a custom op library's, not the plugin's
    std::vector<DType> dts;
    if (!impl_->kernels.has(static_cast<size_t>(id))) continue;
    for (int32_t d = 0; d < kNumDTypes; ++d)
      if (impl_->kernels[id][device_type * kNumDTypes + d].fn) dts.push_back(static_cast<DType>(d));
    if (!dts.empty()) out.emplace_back(ops.at(id).name, dts);
  }
  return out;
}

Device& Runtime::device(Place place) {
  if (place.type >= 0 && place.type < static_cast<int16_t>(device_types_.size()) && place.index >= 0 &&
      place.index < kMaxDevicesPerType) {
    Device* d = impl_->devices[place.type][place.index].load(std::memory_order_acquire);
    if (d) return *d;
  }
  OAR_ENFORCE(place.type >= 0 && place.type < static_cast<int16_t>(device_types_.size()),
              ErrorCode::kNotFound, "unknown device type id " << place.type);
  const DeviceType& dt = device_types_[place.type];
  OAR_ENFORCE(dt.plugin != nullptr, ErrorCode::kUnavailable,
              "no plugin provides device type '"
                  << dt.name << "'"
                  << (place.is_cpu() ? " (liboar_plugin_cpu.so was not loaded; run "
                                       "oar-doctor or check OAR_PLUGIN_PATH)"
                                     : ""));
  OAR_ENFORCE(place.index >= 0 && place.index < dt.count, ErrorCode::kNotFound,
              "device " << dt.name << ":" << place.index << " does not exist (" << dt.count << " device(s))");
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto& slot = impl_->devices[place.type][place.index];
  if (!slot.load()) slot.store(new Device(&dt, place.index), std::memory_order_release);  // lives forever
  return *slot.load();
}

std::vector<Place> Runtime::all_places() {
  std::vector<Place> out;
  for (const auto& t : device_types_)
    if (t.plugin)
      for (int32_t i = 0; i < t.count; ++i) out.push_back(Place{t.id, i});
  return out;
}

void Runtime::copy_bytes(void* dst, Place dst_place, const void* src, Place src_place, size_t bytes) {
  if (bytes == 0) return;
  if (dst_place.is_cpu() && src_place.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (__builtin_expect(g_graph_captures.load(std::memory_order_relaxed) != 0, 0))
    DeviceGraph::check_copy(dst_place, src_place);
  const OarMemLocation host{OAR_MEM_HOST, 0};
  if (src_place == dst_place) {  // on one device: ordered on its stream, no host wait needed
    Device& d = device(dst_place);
    OarMemLocation loc{OAR_MEM_DEVICE, d.place().index};
    check_plugin_error(d.plugin_name(), "memcpy device to device",
                       d.tables().memory.memcpy(loc.device, dst, loc, src, loc, bytes, d.stream()));
    return;
  }
  if (src_place.is_cpu()) {
    // The host source may be freed as soon as we return, so wait for the copy.
    Device& d = device(dst_place);
    OarMemLocation loc{OAR_MEM_DEVICE, d.place().index};
    check_plugin_error(d.plugin_name(), "memcpy host to device",
                       d.tables().memory.memcpy(loc.device, dst, loc, src, host, bytes, d.stream()));
    d.synchronize_stream();
    return;
  }
  if (dst_place.is_cpu()) {
    Device& s = device(src_place);
    OarMemLocation loc{OAR_MEM_DEVICE, s.place().index};
    check_plugin_error(s.plugin_name(), "memcpy device to host",
                       s.tables().memory.memcpy(loc.device, dst, host, src, loc, bytes, s.stream()));
    s.synchronize_stream();
    return;
  }
  // Between two devices: stage through the host.
  std::vector<char> staging(bytes);
  copy_bytes(staging.data(), cpu_place(), src, src_place, bytes);
  copy_bytes(dst, dst_place, staging.data(), cpu_place(), bytes);
}

}  // namespace oar
