// Internal state of the sim plugin: tagged device memory, worker-thread streams, events, profiler.
// Nothing here crosses the ABI; the entry points (sim_plugin.cc) wrap every call in sdk::guard.
#pragma once

#include <oar/sdk/plugin.h>
#include <oar/sdk/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace oar::sim {

// Device addresses are host addresses plus this tag: a non-canonical x86-64 address, so any
// dereference by the core faults instead of silently working. Linear, so byte offsets survive.
inline constexpr uintptr_t kTag = 0x4000000000000000ull;
inline constexpr uint64_t kAlignment = 256;

inline bool is_tagged(const void* p) { return reinterpret_cast<uintptr_t>(p) >= kTag; }
inline void* untag(const void* p) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) - kTag);
}
inline void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + kTag); }

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// An error that happened on a worker, kept until the host asks (synchronize / query).
struct StoredError {
  bool set = false;
  OarErrorCode code = OAR_OK;
  std::string message;
};

// Runs fn and converts what it throws into a StoredError (empty when fn succeeded).
StoredError capture_error(const std::function<void()>& fn, const char* what, int32_t device,
                          uint64_t stream_id);
[[noreturn]] void rethrow(const StoredError& e);

// ---- profiler ---------------------------------------------------------------------------------
void profile_record(const char* name, const char* category, uint64_t start_ns, uint64_t end_ns,
                    int32_t device, uint64_t stream_id);
bool profiling();

// ---- streams ------------------------------------------------------------------------------------
struct Task {
  std::function<void()> fn;
  const char* name = "";      // static strings only
  const char* category = "";
};

class Stream {
 public:
  Stream(int32_t device, uint64_t id, uint64_t latency_us);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t device() const { return device_; }
  uint64_t id() const { return id_; }

  void enqueue(Task task);
  void wait_idle();          // until every task queued so far has run
  bool idle();
  StoredError take_error();  // the first asynchronous error, cleared
  void shutdown();           // drain, then join the worker
  bool is_current_thread() const;

 private:
  void run();

  const int32_t device_;
  const uint64_t id_;
  const uint64_t latency_us_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Task> queue_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  bool stop_ = false;
  StoredError error_;
  std::thread worker_;
  std::mutex join_mu_;
};

// The worker thread's stream, or nullptr on other threads.
Stream* current_stream();

// ---- events -------------------------------------------------------------------------------------
struct EventPoint {  // one record() of an event
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t time_ns = 0;
  void complete() {
    {
      std::lock_guard<std::mutex> lk(mu);
      time_ns = now_ns();
      done = true;
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
  int32_t device = 0;
  uint32_t flags = 0;
  std::mutex mu;
  std::shared_ptr<EventPoint> point;  // the latest record(); null until recorded
  std::shared_ptr<EventPoint> latest() {
    std::lock_guard<std::mutex> lk(mu);
    return point;
  }
};

// ---- memory -------------------------------------------------------------------------------------
struct Allocation {
  void* host = nullptr;  // real memory
  uint64_t bytes = 0;
  int32_t device = 0;
  int32_t kind = OAR_MEM_DEVICE;
};

// ---- global state -------------------------------------------------------------------------------
struct State {
  std::mutex mu;
  int32_t device_count = 2;
  uint64_t budget_bytes = 4096ull << 20;
  uint64_t latency_us = 0;
  int64_t comm_timeout_ms = 60000;
  bool poison = false;
  int32_t threads_per_stream = 1;  // OpenMP threads a task may use (OAR_SIM_THREADS)
  std::vector<uint64_t> used_bytes;                  // per device
  std::map<uintptr_t, Allocation> device_allocs;     // key: tagged base address
  std::map<uintptr_t, Allocation> host_allocs;       // key: host base address
  std::unordered_map<Stream*, std::shared_ptr<Stream>> streams;
  std::unordered_map<Event*, std::shared_ptr<Event>> events;
  std::atomic<uint64_t> next_stream_id{1};
};

State& state();  // freed at unload only after shutdown joined every worker
void configure_from_env();

void check_device(int32_t device);
std::shared_ptr<Stream> find_stream(OarStream handle, int32_t device);  // throws on an unknown handle
std::shared_ptr<Event> find_event(OarEvent handle);

// Validates that [ptr, ptr + bytes) lies in one live device allocation (of `device` when >= 0)
// and returns the host address of ptr.
void* device_to_host(const void* ptr, uint64_t bytes, int32_t device, const char* what);

// Runs a task on `stream` (of `device`), or right here when stream is NULL (synchronous).
void submit(int32_t device, OarStream stream, const char* name, const char* category,
            std::function<void()> fn);

// Waits for every stream of the device (except the calling worker's own) and returns the first
// stored asynchronous error.
StoredError synchronize_device(int32_t device);

void shutdown_runtime();

// Tables (defined in the .cc files).
extern const OarDeviceTable kDeviceTable;
extern const OarMemoryTable kMemoryTable;
extern const OarStreamTable kStreamTable;
extern const OarEventTable kEventTable;
extern const OarCollectiveTable kCollectiveTable;
extern const OarProfilerTable kProfilerTable;

void register_kernels(OarRegistrar* registrar);
void shutdown_collectives();
void release_collectives();  // at unload, after shutdown

}  // namespace oar::sim
