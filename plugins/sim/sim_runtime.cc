// The sim runtime: configuration, tagged device memory, worker-thread streams, events, the
// profiler, and the device / memory / stream / event / profiler tables over them.
#include "sim_state.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oar::sim {

using sdk::Error;

namespace {

thread_local Stream* t_current_stream = nullptr;

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return buf;
}

// A non-negative integer from the environment, or `fallback` (with a warning) when unset/invalid.
uint64_t env_uint(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < 0) {
    sdk::log(OAR_LOG_WARNING, std::string("sim: ignoring ") + name + "='" + v +
                                  "' (not a non-negative integer); using " +
                                  std::to_string(fallback));
    return fallback;
  }
  return static_cast<uint64_t>(x);
}

// ---- profiler ----
std::atomic<bool> g_profiling{false};
std::atomic<uint64_t> g_correlation{1};
std::mutex g_trace_mu;
std::vector<OarTraceEvent>& trace_buffer() {
  static auto* v = new std::vector<OarTraceEvent>();
  return *v;
}

}  // namespace

State& state() {
  static State* s = new State();  // leaked unless shutdown ran: see release_at_unload below
  return *s;
}

namespace {
std::atomic<bool> g_shut_down{false};

// At dlclose: if shutdown joined every worker, the singletons can go; otherwise (no shutdown, e.g.
// process exit) they are left alone, because a destructor must never wait on a worker thread.
struct ReleaseAtUnload {
  ~ReleaseAtUnload() {
    if (!g_shut_down.load()) return;
    release_collectives();
    delete &state();
    delete &trace_buffer();
  }
} release_at_unload;
}  // namespace

void configure_from_env() {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  s.device_count = static_cast<int32_t>(std::min<uint64_t>(env_uint("OAR_SIM_DEVICE_COUNT", 2), 64));
  uint64_t mb = env_uint("OAR_SIM_MEMORY_MB", 4096);
  s.budget_bytes = mb << 20;
  s.latency_us = env_uint("OAR_SIM_LATENCY_US", 0);
  s.comm_timeout_ms = static_cast<int64_t>(env_uint("OAR_SIM_COMM_TIMEOUT_MS", 60000));
  s.poison = env_uint("OAR_SIM_POISON", 0) != 0;
  s.threads_per_stream = static_cast<int32_t>(std::clamp<uint64_t>(env_uint("OAR_SIM_THREADS", 1), 1, 256));
  s.used_bytes.assign(static_cast<size_t>(s.device_count), 0);
}

// ---- errors ---------------------------------------------------------------------------------------

StoredError capture_error(const std::function<void()>& fn, const char* what, int32_t device,
                          uint64_t stream_id) {
  StoredError e;
  auto set = [&](OarErrorCode code, const char* msg) {
    e.set = true;
    e.code = code;
    std::ostringstream os;
    os << "sim device " << device << ", stream " << stream_id << ": asynchronous error in '"
       << what << "': " << msg;
    e.message = os.str();
  };
  try {
    fn();
  } catch (const Error& x) {
    set(x.code(), x.what());
  } catch (const std::bad_alloc&) {
    set(OAR_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::invalid_argument& x) {
    set(OAR_ERR_INVALID_ARGUMENT, x.what());
  } catch (const std::out_of_range& x) {
    set(OAR_ERR_OUT_OF_RANGE, x.what());
  } catch (const std::exception& x) {
    set(OAR_ERR_INTERNAL, x.what());
  } catch (...) {
    set(OAR_ERR_INTERNAL, "unknown C++ exception");
  }
  return e;
}

void rethrow(const StoredError& e) { throw Error(e.code, e.message); }

// ---- profiler ------------------------------------------------------------------------------------

bool profiling() { return g_profiling.load(std::memory_order_relaxed); }

void profile_record(const char* name, const char* category, uint64_t start_ns, uint64_t end_ns,
                    int32_t device, uint64_t stream_id) {
  OarTraceEvent ev{};
  ev.struct_size = sizeof(ev);
  ev.name = name;  // static strings
  ev.category = category;
  ev.start_ns = start_ns;
  ev.end_ns = end_ns;
  ev.device = device;
  ev.stream_id = stream_id;
  ev.correlation_id = g_correlation.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lk(g_trace_mu);
  trace_buffer().push_back(ev);
}

// ---- streams -------------------------------------------------------------------------------------

Stream::Stream(int32_t device, uint64_t id, uint64_t latency_us)
    : device_(device), id_(id), latency_us_(latency_us) {
  const int threads = state().threads_per_stream;
  worker_ = std::thread([this, threads] {
    t_current_stream = this;
#ifdef _OPENMP
    omp_set_num_threads(threads);  // this worker's parallel_for width (OAR_SIM_THREADS)
#else
    (void)threads;
#endif
    run();
  });
}

Stream::~Stream() { shutdown(); }

Stream* current_stream() { return t_current_stream; }

bool Stream::is_current_thread() const { return t_current_stream == this; }

void Stream::enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    OAR_SDK_CHECK(!stop_, OAR_ERR_PRECONDITION, "sim stream " << id_ << " is being destroyed");
    queue_.push_back(std::move(task));
    ++submitted_;
  }
  work_cv_.notify_one();
}

void Stream::wait_idle() {
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t target = submitted_;
  done_cv_.wait(lk, [&] { return completed_ >= target; });
}

bool Stream::idle() {
  std::lock_guard<std::mutex> lk(mu_);
  return completed_ == submitted_;
}

StoredError Stream::take_error() {
  std::lock_guard<std::mutex> lk(mu_);
  StoredError e = std::move(error_);
  error_ = StoredError{};
  return e;
}

void Stream::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  std::lock_guard<std::mutex> jl(join_mu_);
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void Stream::run() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (latency_us_) std::this_thread::sleep_for(std::chrono::microseconds(latency_us_));
    const bool prof = profiling();
    const uint64_t t0 = prof ? now_ns() : 0;
    StoredError err = capture_error(task.fn, task.name, device_, id_);
    if (prof) profile_record(task.name, task.category, t0, now_ns(), device_, id_);
    task.fn = nullptr;  // release captured resources before the work counts as done
    bool dropped = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (err.set) {
        if (!error_.set)
          error_ = std::move(err);
        else
          dropped = true;
      }
      ++completed_;
    }
    done_cv_.notify_all();
    if (dropped) sdk::log(OAR_LOG_WARNING, err.message + " (a previous error is still pending)");
  }
}

// ---- lookups -------------------------------------------------------------------------------------

void check_device(int32_t device) {
  State& s = state();
  OAR_SDK_CHECK(device >= 0 && device < s.device_count, OAR_ERR_NOT_FOUND,
                "sim: no device " << device << " (there are " << s.device_count
                                  << "; OAR_SIM_DEVICE_COUNT sets it)");
}

std::shared_ptr<Stream> find_stream(OarStream handle, int32_t device) {
  State& s = state();
  std::shared_ptr<Stream> st;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.streams.find(reinterpret_cast<Stream*>(handle));
    if (it != s.streams.end()) st = it->second;
  }
  OAR_SDK_CHECK(st, OAR_ERR_INVALID_ARGUMENT,
                "sim: " << hex(handle) << " is not a live sim stream (destroyed, or never created)");
  OAR_SDK_CHECK(device < 0 || st->device() == device, OAR_ERR_INVALID_ARGUMENT,
                "sim: stream " << st->id() << " belongs to device " << st->device()
                               << ", but was used with device " << device);
  return st;
}

std::shared_ptr<Event> find_event(OarEvent handle) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  auto it = s.events.find(reinterpret_cast<Event*>(handle));
  OAR_SDK_CHECK(it != s.events.end(), OAR_ERR_INVALID_ARGUMENT,
                "sim: " << hex(handle) << " is not a live sim event");
  return it->second;
}

void* device_to_host(const void* ptr, uint64_t bytes, int32_t device, const char* what) {
  OAR_SDK_CHECK(is_tagged(ptr), OAR_ERR_INVALID_ARGUMENT,
                "sim: " << what << ": " << hex(ptr)
                        << " is not a sim device address (host memory passed as device memory?)");
  State& s = state();
  const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lk(s.mu);
  auto it = s.device_allocs.upper_bound(a);
  OAR_SDK_CHECK(it != s.device_allocs.begin(), OAR_ERR_INVALID_ARGUMENT,
                "sim: " << what << ": " << hex(ptr) << " is not in a live device allocation");
  --it;
  const uintptr_t base = it->first;
  const Allocation& al = it->second;
  OAR_SDK_CHECK(a - base <= al.bytes && bytes <= al.bytes - (a - base), OAR_ERR_INVALID_ARGUMENT,
                "sim: " << what << ": " << bytes << " bytes at " << hex(ptr)
                        << (a - base < al.bytes ? " run past the end of" : " are not in")
                        << " the live allocation of " << al.bytes << " bytes at "
                        << hex(reinterpret_cast<void*>(base))
                        << " (freed memory, or a size computed wrong?)");
  OAR_SDK_CHECK(device < 0 || al.device == device, OAR_ERR_INVALID_ARGUMENT,
                "sim: " << what << ": " << hex(ptr) << " is memory of device " << al.device
                        << ", used as memory of device " << device);
  return untag(ptr);
}

void submit(int32_t device, OarStream stream, const char* name, const char* category,
            std::function<void()> fn) {
  if (!stream) {  // synchronous
    check_device(device);
    const bool prof = profiling();
    const uint64_t t0 = prof ? now_ns() : 0;
    try {
      fn();
    } catch (...) {
      if (prof) profile_record(name, category, t0, now_ns(), device, 0);
      throw;
    }
    if (prof) profile_record(name, category, t0, now_ns(), device, 0);
    return;
  }
  std::shared_ptr<Stream> s = find_stream(stream, device);
  s->enqueue(Task{std::move(fn), name, category});
}

namespace {

std::vector<std::shared_ptr<Stream>> streams_of(int32_t device) {
  State& s = state();
  std::vector<std::shared_ptr<Stream>> out;
  std::lock_guard<std::mutex> lk(s.mu);
  for (auto& kv : s.streams)
    if (device < 0 || kv.second->device() == device) out.push_back(kv.second);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  return out;
}

void wait_device_idle(int32_t device) {
  for (auto& st : streams_of(device))
    if (!st->is_current_thread()) st->wait_idle();
}

}  // namespace

StoredError synchronize_device(int32_t device) {
  StoredError first;
  for (auto& st : streams_of(device)) {
    if (st->is_current_thread()) continue;
    st->wait_idle();
    if (!first.set) first = st->take_error();
  }
  return first;
}

// ---- device table --------------------------------------------------------------------------------

namespace {

OarError* dev_count(int32_t* count) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(count, OAR_ERR_INVALID_ARGUMENT, "sim: count is NULL");
    *count = state().device_count;
  });
}

OarError* dev_open(int32_t device) { return sdk::guard([&] { check_device(device); }); }

OarError* dev_close(int32_t device) {
  return sdk::guard([&] {
    check_device(device);
    wait_device_idle(device);
  });
}

OarError* dev_properties(int32_t device, OarDeviceProperties* props) {
  return sdk::guard([&] {
    check_device(device);
    OAR_SDK_CHECK(props, OAR_ERR_INVALID_ARGUMENT, "sim: props is NULL");
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    std::snprintf(p.name, sizeof(p.name), "%s", "oar simulated accelerator");
    p.total_memory = state().budget_bytes;
    p.capabilities = OAR_CAP_ASYNC_STREAMS | OAR_CAP_FP64;
    p.alloc_alignment = kAlignment;
    p.alloc_chunk_bytes = 0;
    unsigned hc = std::thread::hardware_concurrency();
    p.compute_units = hc ? static_cast<int32_t>(hc) : 1;
    p.max_streams = 0;
    sdk::fill_sized(props, p);
  });
}

OarError* dev_synchronize(int32_t device) {
  return sdk::guard([&] {
    check_device(device);
    StoredError e = synchronize_device(device);
    if (e.set) rethrow(e);
  });
}

OarError* dev_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  return sdk::guard([&] {
    check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    uint64_t used = s.used_bytes[static_cast<size_t>(device)];
    if (free_bytes) *free_bytes = used < s.budget_bytes ? s.budget_bytes - used : 0;
    if (total_bytes) *total_bytes = s.budget_bytes;
  });
}

// ---- memory table --------------------------------------------------------------------------------

uint64_t round_up(uint64_t n) { return (std::max<uint64_t>(n, 1) + kAlignment - 1) / kAlignment * kAlignment; }

OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(ptr, OAR_ERR_INVALID_ARGUMENT, "sim: allocate: ptr is NULL");
    *ptr = nullptr;
    State& s = state();
    OAR_SDK_CHECK(bytes <= (1ull << 48), OAR_ERR_OUT_OF_MEMORY,
                  "sim: cannot allocate " << bytes << " bytes (request is absurdly large)");
    const uint64_t rounded = round_up(bytes);
    if (kind == OAR_MEM_DEVICE) {
      check_device(device);
      {
        std::lock_guard<std::mutex> lk(s.mu);
        uint64_t& used = s.used_bytes[static_cast<size_t>(device)];
        OAR_SDK_CHECK(used + rounded <= s.budget_bytes, OAR_ERR_OUT_OF_MEMORY,
                      "sim device " << device << ": out of memory: cannot allocate " << bytes
                                    << " bytes; " << used << " of the " << s.budget_bytes
                                    << "-byte budget (" << (s.budget_bytes >> 20)
                                    << " MiB, set by OAR_SIM_MEMORY_MB) are in use");
        used += rounded;  // reserve before the (slow) host allocation
      }
      void* host = std::aligned_alloc(kAlignment, rounded);
      if (!host) {
        std::lock_guard<std::mutex> lk(s.mu);
        s.used_bytes[static_cast<size_t>(device)] -= rounded;
        throw Error(OAR_ERR_OUT_OF_MEMORY, "sim device " + std::to_string(device) +
                                               ": the host could not back an allocation of " +
                                               std::to_string(bytes) + " bytes");
      }
      if (s.poison) std::memset(host, 0xff, rounded);  // NaN / -1 everywhere: uninitialised reads show
      void* dev = tag(host);
      {
        std::lock_guard<std::mutex> lk(s.mu);
        s.device_allocs[reinterpret_cast<uintptr_t>(dev)] = Allocation{host, bytes, device, kind};
      }
      *ptr = dev;
      return;
    }
    if (kind == OAR_MEM_HOST || kind == OAR_MEM_PINNED_HOST) {
      void* host = std::aligned_alloc(kAlignment, rounded);
      OAR_SDK_CHECK(host, OAR_ERR_OUT_OF_MEMORY,
                    "sim: cannot allocate " << bytes << " bytes of host memory");
      std::lock_guard<std::mutex> lk(s.mu);
      s.host_allocs[reinterpret_cast<uintptr_t>(host)] = Allocation{host, bytes, device, kind};
      *ptr = host;
      return;
    }
    OAR_SDK_CHECK(kind != OAR_MEM_UNIFIED, OAR_ERR_UNIMPLEMENTED,
                  "sim: unified memory is not supported (the device lacks OAR_CAP_UNIFIED_MEMORY)");
    throw Error(OAR_ERR_INVALID_ARGUMENT, "sim: allocate: unknown memory kind " + std::to_string(kind));
  });
}

OarError* mem_free(int32_t device, int32_t kind, void* ptr) {
  return sdk::guard([&] {
    if (!ptr) return;
    State& s = state();
    const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
    if (kind == OAR_MEM_DEVICE) {
      check_device(device);
      {
        std::lock_guard<std::mutex> lk(s.mu);
        auto it = s.device_allocs.find(a);
        OAR_SDK_CHECK(it != s.device_allocs.end(), OAR_ERR_INVALID_ARGUMENT,
                      "sim: free: " << hex(ptr)
                                    << " is not the start of a live device allocation (double free, "
                                       "an interior pointer, or host memory?)");
        OAR_SDK_CHECK(it->second.device == device, OAR_ERR_INVALID_ARGUMENT,
                      "sim: free: " << hex(ptr) << " belongs to device " << it->second.device
                                    << ", freed on device " << device);
      }
      // Like cudaFree: work already queued on the device may still use the memory.
      wait_device_idle(device);
      Allocation al;
      {
        std::lock_guard<std::mutex> lk(s.mu);
        auto it = s.device_allocs.find(a);
        OAR_SDK_CHECK(it != s.device_allocs.end(), OAR_ERR_INVALID_ARGUMENT,
                      "sim: free: " << hex(ptr) << " was freed concurrently (double free)");
        al = it->second;
        s.device_allocs.erase(it);
        s.used_bytes[static_cast<size_t>(device)] -= round_up(al.bytes);
      }
      std::free(al.host);
      return;
    }
    if (kind == OAR_MEM_HOST || kind == OAR_MEM_PINNED_HOST) {
      Allocation al;
      {
        std::lock_guard<std::mutex> lk(s.mu);
        auto it = s.host_allocs.find(a);
        OAR_SDK_CHECK(it != s.host_allocs.end(), OAR_ERR_INVALID_ARGUMENT,
                      "sim: free: " << hex(ptr) << " is not a live host allocation of this plugin"
                                    << (is_tagged(ptr) ? " (it is a device address)" : ""));
        OAR_SDK_CHECK(it->second.kind == kind, OAR_ERR_INVALID_ARGUMENT,
                      "sim: free: " << hex(ptr) << " was allocated as kind " << it->second.kind
                                    << ", freed as kind " << kind);
        al = it->second;
        s.host_allocs.erase(it);
      }
      std::free(al.host);
      return;
    }
    throw Error(OAR_ERR_INVALID_ARGUMENT, "sim: free: unsupported memory kind " + std::to_string(kind));
  });
}

// Host address for one side of a copy; validates device addresses against the registry.
void* resolve(const void* ptr, OarMemLocation loc, uint64_t bytes, const char* what) {
  OAR_SDK_CHECK(ptr, OAR_ERR_INVALID_ARGUMENT, "sim: memcpy: " << what << " is NULL");
  switch (loc.kind) {
    case OAR_MEM_DEVICE:
      check_device(loc.device);
      return device_to_host(ptr, bytes, loc.device, what);
    case OAR_MEM_HOST:
    case OAR_MEM_PINNED_HOST:
    case OAR_MEM_UNIFIED:
      OAR_SDK_CHECK(!is_tagged(ptr), OAR_ERR_INVALID_ARGUMENT,
                    "sim: memcpy: " << what << " " << hex(ptr)
                                    << " is a device address but its location says host memory");
      return const_cast<void*>(ptr);
    default:
      throw Error(OAR_ERR_INVALID_ARGUMENT,
                  std::string("sim: memcpy: unknown memory kind for ") + what);
  }
}

OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                     OarMemLocation src_loc, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (bytes == 0) return;
    void* d = resolve(dst, dst_loc, bytes, "destination");
    const void* sp = resolve(src, src_loc, bytes, "source");
    if (stream && src_loc.kind == OAR_MEM_HOST) {
      // Pageable host source: staged now (as CUDA does), so the caller may reuse its buffer at once.
      auto staging = std::make_shared<std::vector<unsigned char>>(
          static_cast<const unsigned char*>(sp), static_cast<const unsigned char*>(sp) + bytes);
      submit(device, stream, "memcpy", "memcpy",
             [d, staging] { std::memcpy(d, staging->data(), staging->size()); });
      return;
    }
    submit(device, stream, "memcpy", "memcpy", [d, sp, bytes] { std::memmove(d, sp, bytes); });
  });
}

OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (bytes == 0) return;
    void* h = nullptr;
    if (is_tagged(ptr)) {
      check_device(device);
      h = device_to_host(ptr, bytes, device, "memset");
    } else {
      State& s = state();
      const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
      std::lock_guard<std::mutex> lk(s.mu);
      auto it = s.host_allocs.upper_bound(a);
      bool ok = it != s.host_allocs.begin();
      if (ok) {
        --it;
        ok = a - it->first <= it->second.bytes && bytes <= it->second.bytes - (a - it->first);
      }
      OAR_SDK_CHECK(ok, OAR_ERR_INVALID_ARGUMENT,
                    "sim: memset: " << hex(ptr) << " (" << bytes
                                    << " bytes) is not inside memory this plugin allocated");
      h = ptr;
    }
    const int v = value & 0xff;
    submit(device, stream, "memset", "memset", [h, v, bytes] { std::memset(h, v, bytes); });
  });
}

// ---- stream table --------------------------------------------------------------------------------

OarError* stream_create(int32_t device, int32_t /*priority*/, OarStream* stream) {
  return sdk::guard([&] {
    check_device(device);
    OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT, "sim: stream create: out pointer is NULL");
    State& s = state();
    auto st = std::make_shared<Stream>(device, s.next_stream_id.fetch_add(1), s.latency_us);
    {
      std::lock_guard<std::mutex> lk(s.mu);
      s.streams[st.get()] = st;
    }
    *stream = reinterpret_cast<OarStream>(st.get());
  });
}

OarError* stream_destroy(int32_t device, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Stream> st = find_stream(stream, device);
    OAR_SDK_CHECK(!st->is_current_thread(), OAR_ERR_PRECONDITION,
                  "sim: a stream cannot be destroyed from its own host function");
    {
      State& s = state();
      std::lock_guard<std::mutex> lk(s.mu);
      s.streams.erase(st.get());
    }
    st->shutdown();  // drains, then joins
    StoredError e = st->take_error();
    if (e.set) sdk::log(OAR_LOG_WARNING, e.message + " (never reported: the stream was destroyed)");
  });
}

OarError* stream_synchronize(int32_t device, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Stream> st = find_stream(stream, device);
    OAR_SDK_CHECK(!st->is_current_thread(), OAR_ERR_PRECONDITION,
                  "sim: a stream cannot be synchronized from its own host function");
    st->wait_idle();
    StoredError e = st->take_error();
    if (e.set) rethrow(e);
  });
}

OarError* stream_query(int32_t device, OarStream stream, int32_t* done) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(done, OAR_ERR_INVALID_ARGUMENT, "sim: stream query: done is NULL");
    std::shared_ptr<Stream> st = find_stream(stream, device);
    *done = st->idle() ? 1 : 0;
    StoredError e = st->take_error();
    if (e.set) rethrow(e);
  });
}

OarError* stream_wait_event(int32_t device, OarStream stream, OarEvent event) {
  return sdk::guard([&] {
    std::shared_ptr<Event> ev = find_event(event);
    std::shared_ptr<EventPoint> p = ev->latest();
    if (!stream) {
      check_device(device);
      if (p) p->wait();
      return;
    }
    std::shared_ptr<Stream> st = find_stream(stream, device);
    if (!p) return;  // never recorded: nothing to wait for
    st->enqueue(Task{[p] { p->wait(); }, "wait_event", "event"});
  });
}

OarError* stream_launch_host_func(int32_t device, OarStream stream, void (*fn)(void*), void* arg) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(fn, OAR_ERR_INVALID_ARGUMENT, "sim: launch_host_func: fn is NULL");
    submit(device, stream, "host_func", "host_func", [fn, arg] { fn(arg); });
  });
}

// ---- event table ---------------------------------------------------------------------------------

OarError* event_create(int32_t device, uint32_t flags, OarEvent* event) {
  return sdk::guard([&] {
    check_device(device);
    OAR_SDK_CHECK(event, OAR_ERR_INVALID_ARGUMENT, "sim: event create: out pointer is NULL");
    auto ev = std::make_shared<Event>();
    ev->device = device;
    ev->flags = flags;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.events[ev.get()] = ev;
    *event = reinterpret_cast<OarEvent>(ev.get());
  });
}

OarError* event_destroy(int32_t /*device*/, OarEvent event) {
  return sdk::guard([&] {
    std::shared_ptr<Event> ev = find_event(event);  // pending records keep their own point alive
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.events.erase(ev.get());
  });
}

OarError* event_record(int32_t device, OarEvent event, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Event> ev = find_event(event);
    OAR_SDK_CHECK(ev->device == device, OAR_ERR_INVALID_ARGUMENT,
                  "sim: event of device " << ev->device << " recorded on device " << device);
    auto p = std::make_shared<EventPoint>();
    if (!stream) {
      check_device(device);
      p->complete();
      std::lock_guard<std::mutex> lk(ev->mu);
      ev->point = p;
      return;
    }
    std::shared_ptr<Stream> st = find_stream(stream, device);
    {
      std::lock_guard<std::mutex> lk(ev->mu);
      ev->point = p;
    }
    st->enqueue(Task{[p] { p->complete(); }, "event_record", "event"});
  });
}

OarError* event_synchronize(int32_t /*device*/, OarEvent event) {
  return sdk::guard([&] {
    std::shared_ptr<EventPoint> p = find_event(event)->latest();
    if (p) p->wait();
  });
}

OarError* event_query(int32_t /*device*/, OarEvent event, int32_t* done) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(done, OAR_ERR_INVALID_ARGUMENT, "sim: event query: done is NULL");
    std::shared_ptr<EventPoint> p = find_event(event)->latest();
    *done = (!p || p->is_done()) ? 1 : 0;
  });
}

OarError* event_elapsed_ms(int32_t /*device*/, OarEvent start, OarEvent end, float* ms) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(ms, OAR_ERR_INVALID_ARGUMENT, "sim: elapsed_ms: ms is NULL");
    std::shared_ptr<Event> a = find_event(start), b = find_event(end);
    OAR_SDK_CHECK(!(a->flags & OAR_EVENT_DISABLE_TIMING) && !(b->flags & OAR_EVENT_DISABLE_TIMING),
                  OAR_ERR_INVALID_ARGUMENT,
                  "sim: elapsed_ms: an event was created with OAR_EVENT_DISABLE_TIMING");
    std::shared_ptr<EventPoint> pa = a->latest(), pb = b->latest();
    OAR_SDK_CHECK(pa && pb, OAR_ERR_PRECONDITION, "sim: elapsed_ms: an event was never recorded");
    OAR_SDK_CHECK(pa->is_done() && pb->is_done(), OAR_ERR_PRECONDITION,
                  "sim: elapsed_ms: an event has not completed yet (synchronize it first)");
    uint64_t ta, tb;
    {
      std::lock_guard<std::mutex> la(pa->mu);
      ta = pa->time_ns;
    }
    {
      std::lock_guard<std::mutex> lb(pb->mu);
      tb = pb->time_ns;
    }
    *ms = static_cast<float>((static_cast<double>(tb) - static_cast<double>(ta)) / 1e6);
  });
}

// ---- profiler table ------------------------------------------------------------------------------

OarError* prof_start() {
  return sdk::guard([] { g_profiling.store(true); });
}
OarError* prof_stop() {
  return sdk::guard([] { g_profiling.store(false); });
}
OarError* prof_flush() {
  return sdk::guard([] {
    std::vector<OarTraceEvent> events;
    {
      std::lock_guard<std::mutex> lk(g_trace_mu);
      events.swap(trace_buffer());
    }
    auto emit = sdk::services().trace_event;
    if (!emit) return;
    for (const OarTraceEvent& e : events) emit(&e);
  });
}

}  // namespace

void shutdown_runtime() {
  g_profiling.store(false);
  State& s = state();
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    for (auto& kv : s.streams) streams.push_back(kv.second);
    s.streams.clear();
    s.events.clear();
  }
  for (auto& st : streams) st->shutdown();
  streams.clear();
  std::lock_guard<std::mutex> lk(s.mu);
  for (auto& kv : s.device_allocs) std::free(kv.second.host);
  for (auto& kv : s.host_allocs) std::free(kv.second.host);
  s.device_allocs.clear();
  s.host_allocs.clear();
  std::fill(s.used_bytes.begin(), s.used_bytes.end(), 0);
  std::lock_guard<std::mutex> tl(g_trace_mu);
  trace_buffer().clear();
  g_shut_down.store(true);
}

const OarDeviceTable kDeviceTable = {sizeof(OarDeviceTable), dev_count,      dev_open,
                                     dev_close,              dev_properties, dev_synchronize,
                                     dev_memory_info};
const OarMemoryTable kMemoryTable = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_memset,
                                     mem_memcpy};
const OarStreamTable kStreamTable = {sizeof(OarStreamTable), stream_create,     stream_destroy,
                                     stream_synchronize,     stream_query,      stream_wait_event,
                                     stream_launch_host_func};
const OarEventTable kEventTable = {sizeof(OarEventTable), event_create, event_destroy,
                                   event_record,          event_synchronize, event_query,
                                   event_elapsed_ms};
const OarProfilerTable kProfilerTable = {sizeof(OarProfilerTable), prof_start, prof_stop,
                                         prof_flush};

}  // namespace oar::sim
