// custom_cpu: a complete oar backend plugin built against the oar SDK alone, the template a hardware
// vendor copies (README.md, docs/plugin_guide.md).
//
// The "device" is host memory pretending to be device memory: the plugin does not tell the core it may
// read it (no OAR_CAP_HOST_ACCESSIBLE), so every transfer goes through memcpy exactly as it would for a
// real accelerator. Each stream is a worker thread with a queue: kernels, copies and event records are
// enqueued and the call returns at once, so a missing synchronisation in the core or in this plugin shows
// up as a wrong answer (CUSTOM_CPU_LATENCY_US delays every task to make that likelier).
//
// What a port to real hardware replaces: `DeviceMemory` (allocation), `Stream` (the vendor's queue),
// `Event`, and the kernel bodies (which would launch device code on the stream instead of enqueueing a
// host lambda). The shape of the file stays: query, init, tables, kernels registered in init, every
// entry point returning an OarError* through oar::sdk::guard.
//
// Environment (read once at init): CUSTOM_CPU_DEVICE_COUNT (default 2), CUSTOM_CPU_MEMORY_MB per
// device (default 1024), CUSTOM_CPU_LATENCY_US per task (default 0), CUSTOM_CPU_COMM_TIMEOUT_MS (how long
// a collective waits for the other ranks, default 60000), CUSTOM_CPU_COLLECTIVE_TRANSPORT=store (move
// collective data through the core's key-value store even when all ranks are in this process).
#include <oar/sdk.h>
#include <unistd.h>  // gethostname, getpid

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

// Fault injection for the plugin kit's own tests (CMake option CUSTOM_CPU_TEST_FAULTS): `add` gives wrong
// numbers, stream_wait_event does not wait (and memset sleeps 100 ms first, so that shows on any machine),
// the profiler calls trace_event without checking an older core has it, a copy of exactly
// kFaultyCopyBytes bytes fails, and `relu` fails on a tensor of kFaultyKernelNumel
// elements. A vendor deletes this; it exists so the conformance suite can be seen to fail and so errors can
// be seen to reach Python with this plugin's message.
#ifdef CUSTOM_CPU_TEST_FAULTS
constexpr bool kFaults = true;
#else
constexpr bool kFaults = false;
#endif
constexpr uint64_t kFaultyCopyBytes = 4 * 1013;
constexpr int64_t kFaultyKernelNumel = 1019;

namespace {

namespace sdk = oar::sdk;
using sdk::Error;

constexpr uint64_t kAlignment = 64;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t env_uint(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  return (end && *end == 0) ? x : fallback;
}

// ---- profiling: spans of executed tasks, emitted as trace events on flush -----------------------------
struct Span {
  const char* name;
  const char* category;
  uint64_t start, end;
  int32_t device;
  uint64_t stream;
};
std::atomic<bool> g_profiling{false};
struct Spans {
  std::mutex mu;
  std::vector<Span> spans;
};
// Never destroyed: stream workers and the core may still call in while the process exits, after
// function-local statics would have been destroyed (a destroyed mutex aborts the process).
Spans& spans() {
  static Spans* s = new Spans();
  return *s;
}

void record_span(const Span& s) {
  if (!g_profiling.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lk(spans().mu);
  spans().spans.push_back(s);
}

// ---- streams: a worker thread per stream --------------------------------------------------------------
struct Task {
  std::function<void()> fn;
  const char* name;
  const char* category;
};

class Stream {
 public:
  Stream(int32_t device, uint64_t id, uint64_t latency_us)
      : device_(device), id_(id), latency_us_(latency_us) {
    worker_ = std::thread([this] { loop(); });
  }
  ~Stream() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // drains the queue first
  }
  int32_t device() const { return device_; }
  void enqueue(Task t) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(std::move(t));
    }
    cv_.notify_all();
  }
  // Waits until everything queued so far has run; a task's failure is reported here (once).
  void synchronize() {
    OAR_SDK_CHECK(std::this_thread::get_id() != worker_.get_id(), OAR_ERR_PRECONDITION,
                  "custom_cpu: a stream cannot be synchronized from its own worker");
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return queue_.empty() && !busy_; });
    report_locked();
  }
  bool idle() {
    std::lock_guard<std::mutex> lk(mu_);
    const bool idle = queue_.empty() && !busy_;
    report_locked();
    return idle;
  }

 private:
  void report_locked() {
    if (error_.empty()) return;
    std::string e = std::move(error_);
    error_.clear();
    throw Error(OAR_ERR_EXTERNAL, e);
  }
  void loop() {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop_ and drained
        t = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      if (latency_us_) std::this_thread::sleep_for(std::chrono::microseconds(latency_us_));
      const uint64_t t0 = now_ns();
      std::string failure;
      try {
        t.fn();
      } catch (const std::exception& e) {
        failure = std::string("custom_cpu: ") + t.name + " failed on the stream: " + e.what();
      }
      record_span({t.name, t.category, t0, now_ns(), device_, id_});
      {
        std::lock_guard<std::mutex> lk(mu_);
        busy_ = false;
        if (!failure.empty() && error_.empty()) error_ = failure;  // the first one is reported
      }
      done_cv_.notify_all();
    }
  }

  int32_t device_;
  uint64_t id_;
  uint64_t latency_us_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Task> queue_;
  bool busy_ = false, stop_ = false;
  std::string error_;
  std::thread worker_;
};

// One record() of an event: completes when the stream reaches it.
struct EventPoint {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t time_ns = 0;
  void complete() {
    {
      std::lock_guard<std::mutex> lk(mu);
      done = true;
      time_ns = now_ns();
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done; });
  }
  bool is_done() {
    std::lock_guard<std::mutex> lk(mu);
    return done;
  }
};
struct Event {
  int32_t device;
  uint32_t flags;
  std::mutex mu;
  std::shared_ptr<EventPoint> point;  // latest record; null until recorded
  std::shared_ptr<EventPoint> latest() {
    std::lock_guard<std::mutex> lk(mu);
    return point;
  }
};

// ---- plugin state ------------------------------------------------------------------------------------
struct Allocation {
  uint64_t bytes;
  int32_t device;
  int32_t kind;
};

struct State {
  int32_t device_count = 2;
  uint64_t memory_per_device = 1ull << 30;
  uint64_t latency_us = 0;
  int64_t comm_timeout_ms = 60000;         // how long a rank waits for the others
  bool collectives_through_store = false;  // CUSTOM_CPU_COLLECTIVE_TRANSPORT=store
  std::mutex mu;
  std::map<const void*, Allocation> allocations;  // every pointer we handed out
  std::vector<uint64_t> used;                     // device bytes in use, per device
  std::map<OarStream, std::shared_ptr<Stream>> streams;
  std::map<OarEvent, std::shared_ptr<Event>> events;
  std::atomic<uint64_t> next_stream_id{1};
};
// Never destroyed (see spans()): the core may free memory or destroy streams during its own exit-time
// cleanup, after this library's statics would be gone. shutdown() joins the stream workers.
State& state() {
  static State* s = new State();
  return *s;
}

void check_device(int32_t device) {
  const int32_t n = state().device_count;
  OAR_SDK_CHECK(device >= 0 && device < n, OAR_ERR_OUT_OF_RANGE,
                "custom_cpu: no device " << device << " (there are " << n << ")");
}

std::shared_ptr<Stream> find_stream(OarStream handle, int32_t device) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  auto it = s.streams.find(handle);
  OAR_SDK_CHECK(it != s.streams.end(), OAR_ERR_INVALID_ARGUMENT, "custom_cpu: unknown stream handle");
  OAR_SDK_CHECK(it->second->device() == device, OAR_ERR_INVALID_ARGUMENT,
                "custom_cpu: stream of device " << it->second->device() << " used on device " << device);
  return it->second;
}

std::shared_ptr<Event> find_event(OarEvent handle) {
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  auto it = s.events.find(handle);
  OAR_SDK_CHECK(it != s.events.end(), OAR_ERR_INVALID_ARGUMENT, "custom_cpu: unknown event handle");
  return it->second;
}

// Runs fn on `stream` (enqueued; returns at once) or right now when stream is NULL (synchronous).
void submit(int32_t device, OarStream stream, const char* name, const char* category,
            std::function<void()> fn) {
  if (!stream) {
    check_device(device);
    const uint64_t t0 = now_ns();
    fn();
    record_span({name, category, t0, now_ns(), device, 0});
    return;
  }
  find_stream(stream, device)->enqueue(Task{std::move(fn), name, category});
}

// ---- device table ------------------------------------------------------------------------------------
OarError* device_count(int32_t* count) {
  return sdk::guard([&] { *count = state().device_count; });
}
OarError* device_open(int32_t device) {
  return sdk::guard([&] { check_device(device); });
}
OarError* device_close(int32_t device) {
  return sdk::guard([&] { check_device(device); });
}
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  return sdk::guard([&] {
    check_device(device);
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    std::snprintf(p.name, sizeof(p.name), "custom_cpu sample device %d", device);
    p.total_memory = state().memory_per_device;
    // Not OAR_CAP_HOST_ACCESSIBLE: the core must copy through memcpy, as for real device memory.
    p.capabilities = OAR_CAP_ASYNC_STREAMS | OAR_CAP_FP64;
    p.alloc_alignment = kAlignment;
    p.alloc_chunk_bytes = 0;  // the core's default growth chunk
    p.compute_units = 1;
    p.max_streams = 0;
    sdk::fill_sized(props, p);
  });
}
OarError* device_synchronize(int32_t device) {
  return sdk::guard([&] {
    check_device(device);
    std::vector<std::shared_ptr<Stream>> mine;
    {
      State& s = state();
      std::lock_guard<std::mutex> lk(s.mu);
      for (auto& kv : s.streams)
        if (kv.second->device() == device) mine.push_back(kv.second);
    }
    for (const auto& st : mine) st->synchronize();
  });
}
OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  return sdk::guard([&] {
    check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    *total_bytes = s.memory_per_device;
    *free_bytes = s.memory_per_device - s.used[device];
  });
}

// ---- memory table ------------------------------------------------------------------------------------
OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(kind >= OAR_MEM_HOST && kind <= OAR_MEM_UNIFIED, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: unknown memory kind " << kind);
    State& s = state();
    if (kind == OAR_MEM_DEVICE) {
      check_device(device);
      std::lock_guard<std::mutex> lk(s.mu);
      OAR_SDK_CHECK(bytes <= s.memory_per_device - s.used[device], OAR_ERR_OUT_OF_MEMORY,
                    "custom_cpu: out of device memory on device "
                        << device << ": " << bytes << " bytes requested, "
                        << (s.memory_per_device - s.used[device])
                        << " free (CUSTOM_CPU_MEMORY_MB sets the size)");
    }
    const uint64_t rounded =
        std::max<uint64_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    void* p = std::aligned_alloc(kAlignment, rounded);
    OAR_SDK_CHECK(p, OAR_ERR_OUT_OF_MEMORY, "custom_cpu: the host could not allocate " << bytes << " bytes");
    std::lock_guard<std::mutex> lk(s.mu);
    s.allocations[p] = Allocation{bytes, device, kind};
    if (kind == OAR_MEM_DEVICE) s.used[device] += bytes;
    *ptr = p;
  });
}
OarError* mem_free(int32_t device, int32_t kind, void* ptr) {
  return sdk::guard([&] {
    if (!ptr) return;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.allocations.find(ptr);
    OAR_SDK_CHECK(it != s.allocations.end() && it->second.kind == kind, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: free of a pointer this plugin did not allocate as kind " << kind);
    if (kind == OAR_MEM_DEVICE) {
      OAR_SDK_CHECK(it->second.device == device, OAR_ERR_INVALID_ARGUMENT,
                    "custom_cpu: free on device " << device << " of memory of device " << it->second.device);
      s.used[device] -= it->second.bytes;
    }
    s.allocations.erase(it);
    std::free(ptr);
  });
}
OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (!bytes) return;
    submit(device, stream, "memset", "memcpy", [=] {
      // With the broken wait, a slow producer makes the consumer read stale bytes on any machine, so the
      // negative test does not depend on thread timing.
      if (kFaults) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::memset(ptr, value, bytes);
    });
  });
}
OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                     OarMemLocation src_loc, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (!bytes) return;
    OAR_SDK_CHECK(dst && src, OAR_ERR_INVALID_ARGUMENT, "custom_cpu: memcpy with a NULL pointer");
    if (kFaults && bytes == kFaultyCopyBytes)
      throw Error(OAR_ERR_EXTERNAL, "custom_cpu: injected copy failure (" + std::to_string(bytes) + " bytes)",
                  77);
    if (dst_loc.kind == OAR_MEM_DEVICE) check_device(dst_loc.device);
    if (src_loc.kind == OAR_MEM_DEVICE) check_device(src_loc.device);
    if (stream && src_loc.kind == OAR_MEM_HOST) {
      // A pageable host source is staged now (as CUDA does), so the caller may reuse it at once.
      auto staging = std::make_shared<std::vector<unsigned char>>(
          static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
      submit(device, stream, "memcpy", "memcpy",
             [dst, staging] { std::memcpy(dst, staging->data(), staging->size()); });
      return;
    }
    submit(device, stream, "memcpy", "memcpy", [dst, src, bytes] { std::memmove(dst, src, bytes); });
  });
}

// ---- stream table ------------------------------------------------------------------------------------
OarError* stream_create(int32_t device, int32_t /*priority*/, OarStream* stream) {
  return sdk::guard([&] {
    check_device(device);
    State& s = state();
    auto st = std::make_shared<Stream>(device, s.next_stream_id++, s.latency_us);
    OarStream h = reinterpret_cast<OarStream>(st.get());
    std::lock_guard<std::mutex> lk(s.mu);
    s.streams[h] = std::move(st);
    *stream = h;
  });
}
OarError* stream_destroy(int32_t device, OarStream stream) {
  return sdk::guard([&] {
    find_stream(stream, device);
    std::shared_ptr<Stream> st;
    {
      State& s = state();
      std::lock_guard<std::mutex> lk(s.mu);
      st = std::move(s.streams[stream]);
      s.streams.erase(stream);
    }
    st.reset();  // drains and joins outside the lock
  });
}
OarError* stream_synchronize(int32_t device, OarStream stream) {
  return sdk::guard([&] { find_stream(stream, device)->synchronize(); });
}
OarError* stream_query(int32_t device, OarStream stream, int32_t* done) {
  return sdk::guard([&] { *done = find_stream(stream, device)->idle() ? 1 : 0; });
}
OarError* stream_wait_event(int32_t device, OarStream stream, OarEvent event) {
  return sdk::guard([&] {
    std::shared_ptr<EventPoint> p = find_event(event)->latest();
    if (!p) return;       // never recorded: nothing to wait for
    if (kFaults) return;  // the deliberately broken wait (CUSTOM_CPU_TEST_FAULTS): orders nothing
    if (!stream) return p->wait();
    find_stream(stream, device)->enqueue(Task{[p] { p->wait(); }, "wait_event", "event"});
  });
}
OarError* stream_launch_host_func(int32_t device, OarStream stream, void (*fn)(void*), void* arg) {
  return sdk::guard([&] { submit(device, stream, "host_func", "host_func", [fn, arg] { fn(arg); }); });
}

// ---- event table -------------------------------------------------------------------------------------
OarError* event_create(int32_t device, uint32_t flags, OarEvent* event) {
  return sdk::guard([&] {
    check_device(device);
    auto ev = std::make_shared<Event>();
    ev->device = device;
    ev->flags = flags;
    OarEvent h = reinterpret_cast<OarEvent>(ev.get());
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.events[h] = std::move(ev);
    *event = h;
  });
}
OarError* event_destroy(int32_t /*device*/, OarEvent event) {
  return sdk::guard([&] {
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    s.events.erase(event);  // a pending record keeps its EventPoint alive
  });
}
OarError* event_record(int32_t device, OarEvent event, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Event> ev = find_event(event);
    OAR_SDK_CHECK(ev->device == device, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: event of device " << ev->device << " recorded on device " << device);
    auto p = std::make_shared<EventPoint>();
    {
      std::lock_guard<std::mutex> lk(ev->mu);
      ev->point = p;
    }
    if (!stream) return p->complete();
    find_stream(stream, device)->enqueue(Task{[p] { p->complete(); }, "event_record", "event"});
  });
}
OarError* event_synchronize(int32_t /*device*/, OarEvent event) {
  return sdk::guard([&] {
    if (auto p = find_event(event)->latest()) p->wait();
  });
}
OarError* event_query(int32_t /*device*/, OarEvent event, int32_t* done) {
  return sdk::guard([&] {
    auto p = find_event(event)->latest();
    *done = (!p || p->is_done()) ? 1 : 0;
  });
}
OarError* event_elapsed_ms(int32_t /*device*/, OarEvent start, OarEvent end, float* ms) {
  return sdk::guard([&] {
    std::shared_ptr<Event> a = find_event(start), b = find_event(end);
    OAR_SDK_CHECK(!(a->flags & OAR_EVENT_DISABLE_TIMING) && !(b->flags & OAR_EVENT_DISABLE_TIMING),
                  OAR_ERR_INVALID_ARGUMENT, "custom_cpu: elapsed_ms on an event created without timing");
    auto pa = a->latest(), pb = b->latest();
    OAR_SDK_CHECK(pa && pb && pa->is_done() && pb->is_done(), OAR_ERR_PRECONDITION,
                  "custom_cpu: elapsed_ms needs two recorded, completed events");
    *ms = static_cast<float>((static_cast<double>(pb->time_ns) - static_cast<double>(pa->time_ns)) / 1e6);
  });
}

// ---- collectives -------------------------------------------------------------------------------------
// Communicators created with the same unique id form a group. Every call is enqueued on the caller's
// stream and runs when the stream reaches it; the call's sequence number (counted per communicator, in
// the order the rank enqueues) matches the calls of the different ranks. A real backend calls its
// vendor's collective library (NCCL-like) here instead. Two transports move the data:
//
// - In-process (all ranks in this process): the rank's task waits at a rendezvous for the same call of
//   every other rank; the last to arrive computes every rank's result into scratch buffers first (so
//   in-place calls, send == recv, are safe) and copies them out. Ranks must therefore run on different
//   streams, as they do on a real device.
// - Store (ranks in several processes, or CUSTOM_CPU_COLLECTIVE_TRANSPORT=store): each rank writes its
//   input to the core's key-value store (services->store_set) under "<prefix>/c<seq>/r<rank>", behind a
//   small header saying what it called, reads every other rank's key (store_get waits for it), checks
//   the headers agree, and computes its own result locally with the same code, in rank order, so every
//   rank gets bit-identical results. The store has no delete: every call leaves one key per rank behind,
//   so this is for tests and small (bootstrap-scale) data. A real device moves data over its fabric and
//   uses the store only to share the unique id.
//
// comm_init picks the transport: each rank publishes its process identity under "<prefix>/join/<rank>"
// and reads the others'; the ranks use the in-process transport only if they all found the same process.
// send/recv always go through the store (a buffered mailbox: send writes "<prefix>/p<src>-<dst>/<n>",
// recv waits for it), in one process as across processes.
enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

const char* coll_name(Coll kind) {
  switch (kind) {
    case Coll::kAllReduce:
      return "all_reduce";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
    case Coll::kAllGather:
      return "all_gather";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kAllToAll:
      return "all_to_all";
    case Coll::kSendRecv:
      return "send/recv";
  }
  return "?";
}

struct Call {
  Coll kind = Coll::kAllReduce;
  uint64_t count = 0;
  int32_t dtype = 0, op = 0, root = 0;
  std::vector<const void*> send;  // every rank's input
  std::vector<void*> recv;        // every rank's output (store transport: only this rank's)
  int32_t arrived = 0, departed = 0;
  bool done = false;
  std::string error;
};

struct Group {  // the ranks of this process that share a unique id
  int32_t nranks = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Call> calls;    // in-process transport: by call sequence number
  std::atomic<bool> aborted{false};  // read without the lock by store waits
};

struct Comm {
  std::shared_ptr<Group> group;
  int32_t rank = 0, device = 0, nranks = 0;
  bool use_store = false;
  std::string prefix;                    // store keys of this communicator start with it
  uint64_t next_seq = 0;                 // advanced on the host, in the order the rank enqueues its calls
  std::vector<uint64_t> sent, received;  // send/recv messages so far, per peer
};

std::mutex g_groups_mu;
std::map<std::string, std::weak_ptr<Group>>& groups() {
  static auto* g = new std::map<std::string, std::weak_ptr<Group>>();  // never destroyed, as state()
  return *g;
}

template <typename T>
T reduce_two(T a, T b, int32_t op) {
  switch (op) {
    case OAR_REDUCE_SUM:
    case OAR_REDUCE_AVG:
      return a + b;
    case OAR_REDUCE_PROD:
      return a * b;
    case OAR_REDUCE_MAX:
      return a > b ? a : b;
    case OAR_REDUCE_MIN:
      return a < b ? a : b;
  }
  throw Error(OAR_ERR_INVALID_ARGUMENT, "custom_cpu: unknown reduce op " + std::to_string(op));
}

// Elementwise reduction of `n` elements starting at element `offset` of every rank's send buffer.
template <typename T>
void reduce_into(const Call& c, uint64_t offset, uint64_t n, unsigned char* out) {
  T* o = reinterpret_cast<T*>(out);
  const int32_t nr = static_cast<int32_t>(c.send.size());
  for (uint64_t i = 0; i < n; ++i) {
    T acc = static_cast<const T*>(c.send[0])[offset + i];
    for (int32_t r = 1; r < nr; ++r)
      acc = reduce_two(acc, static_cast<const T*>(c.send[r])[offset + i], c.op);
    if (c.op == OAR_REDUCE_AVG) acc = static_cast<T>(acc / static_cast<T>(nr));
    o[i] = acc;
  }
}

void reduce_any(const Call& c, uint64_t offset, uint64_t n, unsigned char* out) {
  switch (c.dtype) {
    case OAR_DTYPE_FLOAT32:
      return reduce_into<float>(c, offset, n, out);
    case OAR_DTYPE_FLOAT64:
      return reduce_into<double>(c, offset, n, out);
    case OAR_DTYPE_INT32:
      return reduce_into<int32_t>(c, offset, n, out);
    case OAR_DTYPE_INT64:
      return reduce_into<int64_t>(c, offset, n, out);
  }
  throw Error(OAR_ERR_TYPE, "custom_cpu: collectives support float32, float64, int32 and int64, not " +
                                std::string(sdk::dtype_name(c.dtype)));
}

// Computes the result of every rank whose c.recv entry is set (the in-process transport: all of them,
// run by the last rank to arrive under the group's lock; the store transport: this rank's only).
void compute(Call& c) {
  const int32_t nr = static_cast<int32_t>(c.send.size());
  const uint64_t es = static_cast<uint64_t>(sdk::dtype_size(c.dtype));
  const uint64_t bytes = c.count * es;
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(nr));
  switch (c.kind) {
    case Coll::kAllReduce:
    case Coll::kReduce: {
      std::vector<unsigned char> sum(bytes);
      reduce_any(c, 0, c.count, sum.data());
      for (int32_t r = 0; r < nr; ++r)
        if (c.kind == Coll::kAllReduce || r == c.root) out[r] = sum;
      break;
    }
    case Coll::kBroadcast: {
      const auto* src = static_cast<const unsigned char*>(c.send[c.root]);
      for (int32_t r = 0; r < nr; ++r) out[r].assign(src, src + bytes);
      break;
    }
    case Coll::kAllGather: {
      std::vector<unsigned char> all;
      for (int32_t r = 0; r < nr; ++r) {
        const auto* src = static_cast<const unsigned char*>(c.send[r]);
        all.insert(all.end(), src, src + bytes);
      }
      for (int32_t r = 0; r < nr; ++r) out[r] = all;
      break;
    }
    case Coll::kReduceScatter:  // count = elements each rank receives
      for (int32_t r = 0; r < nr; ++r) {
        out[r].resize(bytes);
        reduce_any(c, static_cast<uint64_t>(r) * c.count, c.count, out[r].data());
      }
      break;
    case Coll::kAllToAll:  // count = elements per peer
      for (int32_t r = 0; r < nr; ++r)
        for (int32_t j = 0; j < nr; ++j) {
          const auto* src = static_cast<const unsigned char*>(c.send[j]) + static_cast<uint64_t>(r) * bytes;
          out[r].insert(out[r].end(), src, src + bytes);
        }
      break;
    case Coll::kSendRecv:
      break;
  }
  for (int32_t r = 0; r < nr; ++r)
    if (c.recv[r] && !out[r].empty()) std::memcpy(c.recv[r], out[r].data(), out[r].size());
}

// Bytes of the input a rank contributes to a call (what it writes to the store).
uint64_t input_bytes(Coll kind, uint64_t count, int32_t dtype, int32_t nranks, int32_t rank, int32_t root) {
  const uint64_t bytes = count * static_cast<uint64_t>(sdk::dtype_size(dtype));
  switch (kind) {
    case Coll::kBroadcast:
      return rank == root ? bytes : 0;  // only the root has something to say
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
      return bytes * static_cast<uint64_t>(nranks);
    default:
      return bytes;
  }
}

// ---- the store transport: the core's key-value store as the wire ----

// What precedes the data in every store value, so that ranks calling different things get an error
// naming both calls instead of reading each other's bytes as garbage.
struct Header {
  uint32_t magic;  // kHeaderMagic
  int32_t kind;    // Coll
  int32_t dtype, op, root, rank;
  uint64_t count, seq, data_bytes;
};
constexpr uint32_t kHeaderMagic = 0x43435331;  // "CCS1"

std::string describe(const Header& h) {
  return std::string(coll_name(static_cast<Coll>(h.kind))) + "(count " + std::to_string(h.count) + ", " +
         sdk::dtype_name(h.dtype) + ", op " + std::to_string(h.op) + ", root " + std::to_string(h.root) + ")";
}

void store_put(const std::string& key, const Header& h, const void* data) {
  std::string value(sizeof(h) + h.data_bytes, '\0');
  std::memcpy(&value[0], &h, sizeof(h));
  if (h.data_bytes) std::memcpy(&value[sizeof(h)], data, h.data_bytes);
  sdk::throw_if_error(sdk::services().store_set(key.c_str(), value.data(), value.size()));
}

// Waits for `key` and returns its value. store_get is called in slices of 200 ms so that abort and shutdown
// (which mark the group aborted) get a waiting rank out; the whole wait is bounded by
// CUSTOM_CPU_COMM_TIMEOUT_MS, and a timeout names the call, this rank and the peer it waited for.
std::string store_wait(const Group& g, const std::string& key, uint64_t expected_bytes,
                       const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(state().comm_timeout_ms);
  std::string value(std::max<uint64_t>(expected_bytes, 64), '\0');
  std::string store_said;
  for (;;) {
    if (g.aborted) throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: " + what + ": the communicator was aborted");
    const auto now = std::chrono::steady_clock::now();
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    const int64_t slice =
        std::min<int64_t>(std::max<int64_t>(left, 1), 200);  // never 0 ("no limit" to some stores)
    uint64_t size = 0;
    OarError* err = sdk::services().store_get(key.c_str(), &value[0], value.size(), &size, slice);
    if (!err) {
      value.resize(size);
      return value;
    }
    const int32_t code = sdk::services().error_code(err);
    store_said = sdk::services().error_message(err);
    sdk::services().error_free(err);
    if (code == OAR_ERR_OUT_OF_RANGE) {  // the value is larger than our buffer: grow it and read again
      value.resize(size > value.size() ? size : value.size() * 2);
      continue;
    }
    if (left <= 0)
      throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: " + what + ": timed out after " +
                                           std::to_string(state().comm_timeout_ms) +
                                           " ms (CUSTOM_CPU_COMM_TIMEOUT_MS); store: " + store_said);
    if (std::chrono::steady_clock::now() - now < std::chrono::milliseconds(slice / 2))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a store failing at once is not spun on
  }
}

// Reads what rank `peer` wrote at `key`, checks it made the same call as `mine`, returns its data.
std::string store_read(const Comm& comm, const std::string& key, const Header& mine, int32_t peer,
                       uint64_t expected_bytes) {
  const std::string what = std::string(coll_name(static_cast<Coll>(mine.kind))) + " call " +
                           std::to_string(mine.seq) + ": rank " + std::to_string(comm.rank) +
                           " waiting for rank " + std::to_string(peer);
  std::string value = store_wait(*comm.group, key, sizeof(Header) + expected_bytes, what);
  Header h{};
  if (value.size() >= sizeof(h)) std::memcpy(&h, value.data(), sizeof(h));
  if (h.magic != kHeaderMagic)
    throw Error(OAR_ERR_INTERNAL, "custom_cpu: " + what + ": key '" + key + "' holds no custom_cpu message");
  if (h.kind != mine.kind || h.count != mine.count || h.dtype != mine.dtype || h.op != mine.op ||
      h.root != mine.root || h.data_bytes != expected_bytes || value.size() != sizeof(h) + expected_bytes)
    throw Error(OAR_ERR_INVALID_ARGUMENT, "custom_cpu: the ranks disagree at call " +
                                              std::to_string(mine.seq) + ": rank " +
                                              std::to_string(comm.rank) + " called " + describe(mine) +
                                              ", rank " + std::to_string(peer) + " called " + describe(h));
  return value.substr(sizeof(h));
}

// One collective of the store transport, run on the rank's stream.
void store_collective(const Comm& comm, uint64_t seq, Coll kind, const void* send, void* recv, uint64_t count,
                      int32_t dtype, int32_t op, int32_t root) {
  const int32_t n = comm.nranks;
  const std::string key = comm.prefix + "/c" + std::to_string(seq) + "/r";
  Header mine{kHeaderMagic,
              static_cast<int32_t>(kind),
              dtype,
              op,
              root,
              comm.rank,
              count,
              seq,
              input_bytes(kind, count, dtype, n, comm.rank, root)};
  store_put(key + std::to_string(comm.rank), mine, send);

  Call c;
  c.kind = kind, c.count = count, c.dtype = dtype, c.op = op, c.root = root;
  c.send.assign(static_cast<size_t>(n), nullptr);
  c.recv.assign(static_cast<size_t>(n), nullptr);
  c.send[comm.rank] = send;
  c.recv[comm.rank] = recv;
  std::vector<std::string> inputs(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) {  // every rank reads every other rank's input, even when it needs none,
    if (j == comm.rank) continue;    // so that a rank calling something else is always noticed
    inputs[j] =
        store_read(comm, key + std::to_string(j), mine, j, input_bytes(kind, count, dtype, n, j, root));
    c.send[j] = inputs[j].data();
  }
  compute(c);
}

// comm_init's handshake: publishes "<process identity>\n<nranks>" and reads every other rank's. Returns
// whether every rank is in this process. All ranks read the same records, so they all decide alike.
bool all_ranks_in_this_process(const std::string& prefix, int32_t nranks, int32_t rank, const Group& g) {
  static const std::string me = [] {  // host, pid and a random nonce (two hosts may share a name and pid)
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + std::to_string(std::random_device{}());
  }();
  const std::string record = me + "\n" + std::to_string(nranks);
  sdk::throw_if_error(sdk::services().store_set((prefix + "/join/" + std::to_string(rank)).c_str(),
                                                record.data(), record.size()));
  bool all_here = true;
  for (int32_t j = 0; j < nranks; ++j) {
    if (j == rank) continue;
    const std::string theirs = store_wait(
        g, prefix + "/join/" + std::to_string(j), 256,
        "comm_init: rank " + std::to_string(rank) + " waiting for rank " + std::to_string(j) + " to join");
    const size_t nl = theirs.find('\n');
    OAR_SDK_CHECK(nl != std::string::npos && theirs.substr(nl + 1) == std::to_string(nranks),
                  OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: rank " << rank << " says " << nranks << " ranks, rank " << j
                                                 << " disagrees ('" << theirs.substr(nl + 1) << "')");
    if (theirs.substr(0, nl) != me) all_here = false;
  }
  return all_here;
}

// ---- the collective table ----

OarError* coll_get_unique_id(OarCommUniqueId* id) {
  return sdk::guard([&] {
    // Readable text, unique across processes and hosts: "custom_cpu:<host>:<pid>:<random>".
    char host[64] = {0};
    gethostname(host, sizeof(host) - 1);
    std::random_device rd;
    const std::string text = "custom_cpu:" + std::string(host) + ":" + std::to_string(getpid()) + ":" +
                             std::to_string(rd()) + std::to_string(rd());
    std::memset(id->bytes, 0, sizeof(id->bytes));
    std::memcpy(id->bytes, text.data(), std::min(text.size(), sizeof(id->bytes) - 1));
  });
}

OarError* coll_comm_init(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                         OarComm* comm) {
  return sdk::guard([&] {
    check_device(local_device);
    OAR_SDK_CHECK(nranks >= 1 && rank >= 0 && rank < nranks, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: rank " << rank << " of " << nranks);
    const std::string key(reinterpret_cast<const char*>(id->bytes),
                          strnlen(reinterpret_cast<const char*>(id->bytes), sizeof(id->bytes)));
    OAR_SDK_CHECK(key.rfind("custom_cpu:", 0) == 0, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: the id was not made by custom_cpu's get_unique_id");
    std::shared_ptr<Group> g;
    {
      std::lock_guard<std::mutex> lk(g_groups_mu);
      g = groups()[key].lock();
      if (!g) {
        g = std::make_shared<Group>();
        g->nranks = nranks;
        groups()[key] = g;
      }
    }
    OAR_SDK_CHECK(g->nranks == nranks, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: " << nranks << " ranks, the group has " << g->nranks);
    auto c = std::make_unique<Comm>();
    c->prefix = key;
    c->use_store = state().collectives_through_store;
    if (sdk::services().store_set && sdk::services().store_get) {
      if (!all_ranks_in_this_process(c->prefix, nranks, rank, *g)) c->use_store = true;
    } else {
      OAR_SDK_CHECK(!c->use_store, OAR_ERR_UNAVAILABLE,
                    "custom_cpu: CUSTOM_CPU_COLLECTIVE_TRANSPORT=store, but the core has no key-value store");
    }
    c->group = std::move(g);
    c->rank = rank;
    c->device = local_device;
    c->nranks = nranks;
    c->sent.assign(static_cast<size_t>(nranks), 0);
    c->received.assign(static_cast<size_t>(nranks), 0);
    *comm = reinterpret_cast<OarComm>(c.release());
  });
}

OarError* coll_comm_destroy(OarComm comm) {
  delete reinterpret_cast<Comm*>(comm);  // queued work holds its own copy of what it needs
  return nullptr;
}

OarError* coll_abort(OarComm comm) {
  return sdk::guard([&] {
    Group& g = *reinterpret_cast<Comm*>(comm)->group;
    {
      std::lock_guard<std::mutex> lk(g.mu);
      g.aborted = true;
    }
    g.cv.notify_all();
  });
}

// The in-process transport's rendezvous for one call, run on the rank's stream.
void rendezvous(Group& g, int32_t rank, uint64_t seq, Coll kind, const void* send, void* recv, uint64_t count,
                int32_t dtype, int32_t op, int32_t root) {
  std::unique_lock<std::mutex> lk(g.mu);
  Call& c = g.calls[seq];
  if (c.send.empty()) {
    c.kind = kind, c.count = count, c.dtype = dtype, c.op = op, c.root = root;
    c.send.assign(static_cast<size_t>(g.nranks), nullptr);
    c.recv.assign(static_cast<size_t>(g.nranks), nullptr);
  } else if (c.kind != kind || c.count != count || c.dtype != dtype || c.root != root) {
    c.error = "custom_cpu: the ranks called different collectives (or counts, dtypes, roots) at call " +
              std::to_string(seq);
  }
  c.send[rank] = send;
  c.recv[rank] = recv;
  if (++c.arrived == g.nranks) {
    if (c.error.empty()) {
      try {
        compute(c);
      } catch (const std::exception& e) {
        c.error = e.what();
      }
    }
    c.done = true;
    g.cv.notify_all();
  } else if (!g.cv.wait_for(lk, std::chrono::milliseconds(state().comm_timeout_ms),
                            [&] { return c.done || g.aborted; })) {
    throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: collective call " + std::to_string(seq) + ": only " +
                                         std::to_string(c.arrived) + " of " + std::to_string(g.nranks) +
                                         " ranks arrived within " + std::to_string(state().comm_timeout_ms) +
                                         " ms (CUSTOM_CPU_COMM_TIMEOUT_MS)");
  }
  if (!c.done) throw Error(OAR_ERR_PRECONDITION, "custom_cpu: communicator aborted");
  const std::string error = c.error;
  if (++c.departed == g.nranks) g.calls.erase(seq);
  if (!error.empty()) throw Error(OAR_ERR_INVALID_ARGUMENT, error);
}

Comm& comm_of(OarComm handle, OarStream stream) {
  OAR_SDK_CHECK(handle, OAR_ERR_INVALID_ARGUMENT, "custom_cpu: collective on a NULL communicator");
  OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT,
                "custom_cpu: collectives need a stream (ranks meet on their streams' workers)");
  return *reinterpret_cast<Comm*>(handle);
}

// Enqueues this rank's part of one collective on `stream`.
void enqueue(Coll kind, const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
             OarComm handle, OarStream stream) {
  Comm& comm = comm_of(handle, stream);
  const uint64_t seq = comm.next_seq++;
  if (comm.use_store) {
    Comm copy = comm;  // the task outlives neither the group nor the prefix, whatever the host does
    submit(comm.device, stream, "collective", "collective",
           [=] { store_collective(copy, seq, kind, send, recv, count, dtype, op, root); });
    return;
  }
  std::shared_ptr<Group> g = comm.group;
  const int32_t rank = comm.rank;
  submit(comm.device, stream, "collective", "collective",
         [=] { rendezvous(*g, rank, seq, kind, send, recv, count, dtype, op, root); });
}

OarError* coll_all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                          OarComm comm, OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllReduce, send, recv, count, dtype, op, 0, comm, stream); });
}
OarError* coll_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm,
                         OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kBroadcast, buf, buf, count, dtype, 0, root, comm, stream); });
}
OarError* coll_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
                      OarComm comm, OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kReduce, send, recv, count, dtype, op, root, comm, stream); });
}
OarError* coll_all_gather(const void* send, void* recv, uint64_t send_count, int32_t dtype, OarComm comm,
                          OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllGather, send, recv, send_count, dtype, 0, 0, comm, stream); });
}
OarError* coll_reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype, int32_t op,
                              OarComm comm, OarStream stream) {
  return sdk::guard(
      [&] { enqueue(Coll::kReduceScatter, send, recv, recv_count, dtype, op, 0, comm, stream); });
}
OarError* coll_all_to_all(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype, OarComm comm,
                          OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllToAll, send, recv, count_per_rank, dtype, 0, 0, comm, stream); });
}

// The header of the n-th point-to-point message between this rank and a peer (both sides build the same
// one, so the receiver can check the sender's call).
Header message_header(const Comm& comm, int32_t dtype, uint64_t count, uint64_t n) {
  const uint64_t bytes = count * static_cast<uint64_t>(sdk::dtype_size(dtype));
  return Header{kHeaderMagic, static_cast<int32_t>(Coll::kSendRecv), dtype, 0, 0, comm.rank, count, n, bytes};
}

// send/recv: a mailbox in the store, "<prefix>/p<src>-<dst>/<n>" for the n-th message from src to dst.
// send is buffered (it returns once its stream has written the key), so the two sides never deadlock.
OarError* coll_send(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle,
                    OarStream stream) {
  return sdk::guard([&] {
    Comm& comm = comm_of(handle, stream);
    OAR_SDK_CHECK(peer >= 0 && peer < comm.nranks && peer != comm.rank, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: send to " << peer << ", not another rank of " << comm.nranks);
    const uint64_t n = comm.sent[peer]++;
    const Header h = message_header(comm, dtype, count, n);
    const std::string key =
        comm.prefix + "/p" + std::to_string(comm.rank) + "-" + std::to_string(peer) + "/" + std::to_string(n);
    submit(comm.device, stream, "send", "collective", [=] { store_put(key, h, buf); });
  });
}
OarError* coll_recv(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle,
                    OarStream stream) {
  return sdk::guard([&] {
    Comm& comm = comm_of(handle, stream);
    OAR_SDK_CHECK(peer >= 0 && peer < comm.nranks && peer != comm.rank, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: recv from " << peer << ", not another rank of " << comm.nranks);
    const uint64_t n = comm.received[peer]++;
    const Header mine = message_header(comm, dtype, count, n);
    const std::string key =
        comm.prefix + "/p" + std::to_string(peer) + "-" + std::to_string(comm.rank) + "/" + std::to_string(n);
    Comm copy = comm;
    submit(comm.device, stream, "recv", "collective", [=] {
      const std::string data = store_read(copy, key, mine, peer, mine.data_bytes);
      if (!data.empty()) std::memcpy(buf, data.data(), data.size());
    });
  });
}

// ---- profiler table ----------------------------------------------------------------------------------
OarError* profiler_start() {
  g_profiling = true;
  return nullptr;
}
OarError* profiler_stop() {
  g_profiling = false;
  return nullptr;
}
OarError* profiler_flush() {
  return sdk::guard([] {
    std::vector<Span> batch;
    {
      std::lock_guard<std::mutex> lk(spans().mu);
      batch.swap(spans().spans);
    }
    // An older core (ABI 1.0) has no trace events. The fault build forgets this check, so the suite's
    // abi.older_core check can be seen to catch it.
    if (!kFaults && !sdk::services().trace_event) return;
    for (const Span& s : batch) {
      OarTraceEvent e{};
      e.struct_size = sizeof(e);
      e.name = s.name;  // string literals: valid for the life of the plugin
      e.category = s.category;
      e.start_ns = s.start;
      e.end_ns = s.end;
      e.device = s.device;
      e.stream_id = s.stream;
      sdk::services().trace_event(&e);
    }
  });
}

// ---- kernels -----------------------------------------------------------------------------------------
// A kernel's descriptors are only valid during the call, but the work runs later on the stream's worker,
// so each launch copies what it needs (descriptor, dims, strides) into an object the task owns.
struct Arg {
  OarTensorDesc desc{};
  std::vector<int64_t> dims, strides;
  void set(const OarTensorDesc* d) {
    OAR_SDK_CHECK(d, OAR_ERR_INVALID_ARGUMENT, "custom_cpu: a required input is missing");
    desc = *d;
    dims.assign(d->dims, d->dims + d->ndim);
    strides.assign(d->strides, d->strides + d->ndim);
    desc.dims = dims.data();
    desc.strides = strides.data();
  }
  sdk::TensorView view() const { return sdk::TensorView(&desc); }
};
struct Launch {
  Arg in[2];
  Arg out;
  std::vector<int64_t> ints;  // attributes the body needs
  double real = 0;
};

// Copies inputs/outputs into a Launch and enqueues body(launch) on the kernel's stream.
template <typename Body>
void launch(sdk::KernelContext& ctx, const char* name, int32_t num_inputs, Body&& body,
            std::shared_ptr<Launch> l = nullptr) {
  if (!l) l = std::make_shared<Launch>();
  for (int32_t i = 0; i < num_inputs; ++i) l->in[i].set(ctx.input(i).desc());
  l->out.set(ctx.output(0).desc());
  submit(ctx.device(), ctx.stream(), name, "kernel", [l, body] { body(*l); });
}

template <typename T>
T add_op(T x, T y) {
  if (kFaults) return x + y + T(1);  // the deliberately broken kernel (CUSTOM_CPU_TEST_FAULTS)
  return x + y;
}

template <typename T>
void add_kernel(sdk::KernelContext& ctx) {
  launch(ctx, "add", 2, [](const Launch& l) {
    sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(),
                              [](T x, T y) { return add_op(x, y); });
  });
}
template <typename T>
void multiply_kernel(sdk::KernelContext& ctx) {
  launch(ctx, "multiply", 2, [](const Launch& l) {
    sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(), [](T x, T y) { return x * y; });
  });
}
template <typename T>
void relu_kernel(sdk::KernelContext& ctx) {
  if (kFaults && ctx.input(0).numel() == kFaultyKernelNumel)
    throw Error(OAR_ERR_INVALID_ARGUMENT, "custom_cpu: relu: injected kernel failure");
  launch(ctx, "relu", 1, [](const Launch& l) {
    sdk::unary_loop<T, T>(l.out.view(), l.in[0].view(),
                          [](T x) { return x > T(0) || x != x ? x : T(0); });  // NaN propagates
  });
}
// relu's gradient: the core's autograd calls leaky_relu_grad(x = relu's output, grad) with slope 0.
template <typename T>
void leaky_relu_grad_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->real = 0.01;
  OarError* e = sdk::kernel_api().attr_float(ctx.raw(), "negative_slope", &l->real);
  if (e) sdk::services().error_free(e);  // absent: the schema default
  launch(
      ctx, "leaky_relu_grad", 2,
      [](const Launch& l) {
        const T a = static_cast<T>(l.real);
        sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(),
                                  [a](T x, T g) { return x > T(0) ? g : g * a; });
      },
      l);
}

template <typename T>
struct SumOp {
  using acc_t = double;
  acc_t init() const { return 0; }
  acc_t step(acc_t a, double v, int64_t) const { return a + v; }
  acc_t merge(acc_t a, acc_t b) const { return a + b; }
  T finish(acc_t a, int64_t) const { return static_cast<T>(a); }
};
template <typename T>
void sum_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->ints = ctx.attr_ints("axis");  // the core normalised it: sorted, unique, non-negative
  if (l->ints.empty())
    for (int32_t i = 0; i < ctx.input(0).ndim(); ++i) l->ints.push_back(i);
  launch(
      ctx, "sum", 1,
      [](const Launch& l) { sdk::reduce_loop<T, T>(l.out.view(), l.in[0].view(), l.ints, SumOp<T>()); }, l);
}

// matmul on contiguous inputs (registered without OAR_KERNEL_STRIDED_INPUTS, so the core makes them so):
// 1-D operands, transpose_x / transpose_y and broadcast batch dimensions.
template <typename T>
void matmul_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->ints = {ctx.attr_int("transpose_x"), ctx.attr_int("transpose_y")};
  launch(
      ctx, "matmul", 2,
      [](const Launch& l) {
        const auto &x = l.in[0], &y = l.in[1], &o = l.out;
        const int32_t nx = x.desc.ndim, ny = y.desc.ndim, no = o.desc.ndim;
        const bool tx = l.ints[0] && nx > 1, ty = l.ints[1] && ny > 1;
        // Logical [M, K] x [K, N]; a 1-D x is [1, K], a 1-D y is [K, 1].
        const int64_t xr = nx > 1 ? x.dims[nx - 2] : 1, xc = x.dims[nx - 1];
        const int64_t yr = ny > 1 ? y.dims[ny - 2] : y.dims[0], yc = ny > 1 ? y.dims[ny - 1] : 1;
        const int64_t M = tx ? xc : xr, K = tx ? xr : xc, N = ty ? yr : yc;
        // Batch dims of the output (all but its matrix dims), broadcast against x's and y's.
        const int32_t nb = no - (nx > 1 ? 1 : 0) - (ny > 1 ? 1 : 0);
        int64_t batches = 1;
        for (int32_t d = 0; d < nb; ++d) batches *= o.dims[d];
        const T* px = x.view().data<T>();
        const T* py = y.view().data<T>();
        T* po = o.view().data<T>();
        const int64_t xmat = xr * xc, ymat = yr * yc;
        auto batch_offset = [&](const Arg& a, int32_t nmat, int64_t b, int64_t mat) {
          // Row-major index of batch b in a's own (possibly smaller, broadcast) batch dims.
          const int32_t na = a.desc.ndim - nmat;
          int64_t off = 0, stride = 1;
          for (int32_t d = nb - 1, ad = na - 1; d >= 0; --d, --ad) {
            const int64_t idx = b % o.dims[d];
            b /= o.dims[d];
            if (ad >= 0) {
              if (a.dims[ad] != 1) off += idx * stride;
              stride *= a.dims[ad];
            }
          }
          return off * mat;
        };
        for (int64_t b = 0; b < batches; ++b) {
          const T* bx = px + batch_offset(x, nx > 1 ? 2 : 1, b, xmat);
          const T* by = py + batch_offset(y, ny > 1 ? 2 : 1, b, ymat);
          T* bo = po + b * M * N;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0;
              for (int64_t k = 0; k < K; ++k) {
                const T a = tx ? bx[k * xc + i] : bx[i * xc + k];
                const T c = ty ? by[j * yc + k] : by[k * yc + j];
                acc += static_cast<double>(a) * static_cast<double>(c);
              }
              bo[i * N + j] = static_cast<T>(acc);
            }
        }
      },
      l);
}

// fill has no inputs: its dtype comes from the "dtype" attribute.
template <typename T>
void fill_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->real = ctx.attr_float("value");
  launch(
      ctx, "fill", 0,
      [](const Launch& l) {
        T* p = l.out.view().data<T>();
        std::fill(p, p + l.out.view().numel(), static_cast<T>(l.real));
      },
      l);
}

void register_kernels(OarRegistrar* registrar) {
  sdk::KernelRegistrar reg(registrar);
  const uint32_t strided = OAR_KERNEL_STRIDED_INPUTS;
  reg.add("add", {OAR_DTYPE_FLOAT32}, add_kernel<float>, strided);
  reg.add("add", {OAR_DTYPE_FLOAT64}, add_kernel<double>, strided);
  reg.add("multiply", {OAR_DTYPE_FLOAT32}, multiply_kernel<float>, strided);
  reg.add("multiply", {OAR_DTYPE_FLOAT64}, multiply_kernel<double>, strided);
  reg.add("relu", {OAR_DTYPE_FLOAT32}, relu_kernel<float>, strided);
  reg.add("relu", {OAR_DTYPE_FLOAT64}, relu_kernel<double>, strided);
  reg.add("leaky_relu_grad", {OAR_DTYPE_FLOAT32}, leaky_relu_grad_kernel<float>, strided);
  reg.add("leaky_relu_grad", {OAR_DTYPE_FLOAT64}, leaky_relu_grad_kernel<double>, strided);
  reg.add("sum", {OAR_DTYPE_FLOAT32}, sum_kernel<float>, strided);
  reg.add("sum", {OAR_DTYPE_FLOAT64}, sum_kernel<double>, strided);
  reg.add("matmul", {OAR_DTYPE_FLOAT32}, matmul_kernel<float>);
  reg.add("matmul", {OAR_DTYPE_FLOAT64}, matmul_kernel<double>);
  reg.add("fill", {OAR_DTYPE_FLOAT32}, fill_kernel<float>);
  reg.add("fill", {OAR_DTYPE_FLOAT64}, fill_kernel<double>);
}

void shutdown() {
  {  // ranks waiting in a collective give up, so that the stream workers can be joined
    std::lock_guard<std::mutex> lk(g_groups_mu);
    for (auto& kv : groups())
      if (auto g = kv.second.lock()) {
        std::lock_guard<std::mutex> glk(g->mu);
        g->aborted = true;
        g->cv.notify_all();
      }
  }
  State& s = state();
  std::map<OarStream, std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    streams.swap(s.streams);
    s.events.clear();
  }
  streams.clear();  // joins the workers
}

}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  // The name must match the file: liboar_plugin_custom_cpu.so.
  return sdk::answer_query(info, {"custom_cpu", "custom_cpu", "0.1.0", nullptr, 100});
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  return sdk::run_init(services, tables, "custom_cpu", [&](OarPluginTables& t) {
    State& s = state();
    s.device_count = static_cast<int32_t>(std::min<uint64_t>(env_uint("CUSTOM_CPU_DEVICE_COUNT", 2), 16));
    s.memory_per_device = env_uint("CUSTOM_CPU_MEMORY_MB", 1024) << 20;
    s.latency_us = env_uint("CUSTOM_CPU_LATENCY_US", 0);
    s.comm_timeout_ms = static_cast<int64_t>(env_uint("CUSTOM_CPU_COMM_TIMEOUT_MS", 60000));
    const char* transport = std::getenv("CUSTOM_CPU_COLLECTIVE_TRANSPORT");
    s.collectives_through_store = transport && std::string(transport) == "store";
    s.used.assign(static_cast<size_t>(s.device_count), 0);

    static OarDeviceTable device{};
    device.struct_size = sizeof(device);
    device.count = device_count;
    device.open = device_open;
    device.close = device_close;
    device.properties = device_properties;
    device.synchronize = device_synchronize;
    device.memory_info = device_memory_info;

    static OarMemoryTable memory{};
    memory.struct_size = sizeof(memory);
    memory.allocate = mem_allocate;
    memory.free = mem_free;
    memory.memset = mem_memset;
    memory.memcpy = mem_memcpy;

    static OarStreamTable stream{};
    stream.struct_size = sizeof(stream);
    stream.create = stream_create;
    stream.destroy = stream_destroy;
    stream.synchronize = stream_synchronize;
    stream.query = stream_query;
    stream.wait_event = stream_wait_event;
    stream.launch_host_func = stream_launch_host_func;

    static OarEventTable event{};
    event.struct_size = sizeof(event);
    event.create = event_create;
    event.destroy = event_destroy;
    event.record = event_record;
    event.synchronize = event_synchronize;
    event.query = event_query;
    event.elapsed_ms = event_elapsed_ms;

    static OarProfilerTable profiler{};
    profiler.struct_size = sizeof(profiler);
    profiler.start = profiler_start;
    profiler.stop = profiler_stop;
    profiler.flush = profiler_flush;

    static OarCollectiveTable collective{};
    collective.struct_size = sizeof(collective);
    collective.get_unique_id = coll_get_unique_id;
    collective.comm_init = coll_comm_init;
    collective.comm_destroy = coll_comm_destroy;
    collective.all_reduce = coll_all_reduce;
    collective.broadcast = coll_broadcast;
    collective.reduce = coll_reduce;
    collective.all_gather = coll_all_gather;
    collective.reduce_scatter = coll_reduce_scatter;
    collective.all_to_all = coll_all_to_all;
    collective.send = coll_send;
    collective.recv = coll_recv;
    collective.abort = coll_abort;  // group_start/end, get_async_error: NULL (not implemented)

    t.device = &device;
    t.memory = &memory;
    t.stream = &stream;
    t.event = &event;
    t.profiler = &profiler;
    t.collective = &collective;
    t.shutdown = shutdown;

    register_kernels(registrar);
    sdk::log(OAR_LOG_DEBUG, "custom_cpu: initialised");
  });
}
