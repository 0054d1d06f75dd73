// Worker-thread streams and events: the stream, event and profiler tables of a device whose work runs on
// host threads (a simulator, a CPU-like device, or the first port of a real one before its own queues).
//
// Each stream is a real thread with a queue. Copies, kernels and event records are enqueued and the call
// returns at once, so a synchronisation the core (or the plugin) forgot shows up as a wrong answer, as on
// real hardware. A task's failure is kept and reported by the next synchronize / query of its stream (or
// of its device). A NULL stream means "run it now" (synchronous).
//
// Graph capture (ABI 1.3): between begin_capture and end_capture a stream appends the tasks enqueued on
// it to a CapturedGraph instead of running them; graph_launch enqueues one task that runs them all again,
// in order. Tasks are std::function closures, so each must be re-runnable: it holds what it needs by value
// or through a shared_ptr and never moves its state out. Tasks of category "event" or "collective" cannot
// be captured (an event record's completion and a collective's sequence number are fixed when enqueued):
// enqueuing one on a capturing stream is OAR_ERR_UNIMPLEMENTED. A host synchronisation of a capturing
// stream (synchronize, query, device synchronize) is OAR_ERR_PRECONDITION; a plugin refuses its copies to
// host and from pageable host memory on a capturing stream itself (WorkerStreams::capturing).
//
// Use: configure once in setup, route every piece of device work through submit(), install the tables:
//
//   auto& ws = oar::sdk::worker_streams();
//   ws.configure({"mydev", latency_us, check_device});
//   ws.install(tables);               // stream, event and profiler tables; device synchronize / close
//   ...  ws.submit(device, stream, "memcpy", "memcpy", [=] { std::memcpy(d, s, n); });
//   tables.shutdown = [] { oar::sdk::worker_streams().shutdown(); };
#pragma once

#include <oar/sdk/plugin.h>
#include <oar/sdk/tables.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oar::sdk {

inline uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct WorkerOptions {
  std::string plugin = "plugin";  // names the plugin in messages
  uint64_t latency_us = 0;        // sleep before each task: makes a missing synchronisation likelier to show
  std::function<void(int32_t)> check_device;  // throws sdk::Error for a device index that does not exist
  std::function<void()> on_worker_start;      // first thing on every worker thread (e.g. omp_set_num_threads)
};

// A failure that happened on a worker, kept until the host asks.
struct StoredError {
  bool set = false;
  OarErrorCode code = OAR_OK;
  std::string message;
};

// Runs fn; what it throws becomes a StoredError naming where it ran.
inline StoredError capture_error(const std::function<void()>& fn, const std::string& where) {
  StoredError e;
  auto set = [&](OarErrorCode code, const char* msg) {
    e.set = true;
    e.code = code;
    e.message = where + ": " + msg;
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

// Executed tasks as trace events (OarCoreServices.trace_event), while the core profiles.
class TaskProfiler {
 public:
  bool on() const { return on_.load(std::memory_order_relaxed); }
  void set(bool on) { on_.store(on); }
  void record(const char* name, const char* category, uint64_t start_ns, uint64_t end_ns, int32_t device,
              uint64_t stream_id) {
    OarTraceEvent ev{};
    ev.struct_size = sizeof(ev);
    ev.name = name;  // static strings only
    ev.category = category;
    ev.start_ns = start_ns;
    ev.end_ns = end_ns;
    ev.device = device;
    ev.stream_id = stream_id;
    ev.correlation_id = next_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lk(mu_);
    events_.push_back(ev);
  }
  // Emits and clears the buffer. A core older than ABI 1.1 has no trace_event: the events are dropped.
  void flush() {
    std::vector<OarTraceEvent> events = take();
    if (auto emit = services().trace_event)
      for (const OarTraceEvent& e : events) emit(&e);
  }
  std::vector<OarTraceEvent> take() {  // the buffered events, cleared
    std::lock_guard<std::mutex> lk(mu_);
    return std::exchange(events_, {});
  }
  void clear() {
    std::lock_guard<std::mutex> lk(mu_);
    events_.clear();
  }

 private:
  std::atomic<bool> on_{false};
  std::atomic<uint64_t> next_{1};
  std::mutex mu_;
  std::vector<OarTraceEvent> events_;
};

struct StreamTask {
  std::function<void()> fn;
  const char* name = "";  // static strings only
  const char* category = "";
};

// The tasks one capture recorded (OarGraph of the SDK's worker streams). Immutable once ended.
struct CapturedGraph {
  int32_t device = 0;
  uint64_t stream_id = 0;  // the stream it was captured on (for messages)
  std::vector<StreamTask> tasks;
};

class WorkerStream {
 public:
  WorkerStream(int32_t device, uint64_t id, const WorkerOptions& o, TaskProfiler* prof)
      : device_(device), id_(id), latency_us_(o.latency_us), plugin_(o.plugin), prof_(prof) {
    worker_ = std::thread([this, start = o.on_worker_start] {
      current() = this;
      if (start) start();
      run();
    });
  }
  ~WorkerStream() { shutdown(); }
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  int32_t device() const { return device_; }
  uint64_t id() const { return id_; }
  // The stream whose worker is the calling thread, or nullptr.
  static WorkerStream*& current() {
    static thread_local WorkerStream* s = nullptr;
    return s;
  }
  bool is_current_thread() const { return current() == this; }

  void enqueue(StreamTask task) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      OAR_SDK_CHECK(!stop_, OAR_ERR_PRECONDITION, plugin_ << ": stream " << id_ << " is being destroyed");
      if (capture_) {  // recorded, not run
        OAR_SDK_CHECK(
            std::strcmp(task.category, "event") != 0 && std::strcmp(task.category, "collective") != 0,
            OAR_ERR_UNIMPLEMENTED,
            plugin_ << ": '" << task.name << "' cannot be captured into a graph (stream " << id_
                    << " is capturing; events and collectives are fixed when enqueued)");
        capture_->tasks.push_back(std::move(task));
        return;
      }
      queue_.push_back(std::move(task));
      ++submitted_;
    }
    work_cv_.notify_one();
  }
  // Graph capture: from now on enqueue() records instead of running.
  void begin_capture() {
    std::lock_guard<std::mutex> lk(mu_);
    OAR_SDK_CHECK(!capture_, OAR_ERR_PRECONDITION,
                  plugin_ << ": stream " << id_ << " is already capturing a graph (end_capture first)");
    capture_ = std::make_shared<CapturedGraph>();
    capture_->device = device_;
    capture_->stream_id = id_;
  }
  std::shared_ptr<CapturedGraph> end_capture() {
    std::lock_guard<std::mutex> lk(mu_);
    OAR_SDK_CHECK(capture_, OAR_ERR_PRECONDITION,
                  plugin_ << ": end_capture: stream " << id_ << " is not capturing (begin_capture first)");
    return std::exchange(capture_, nullptr);
  }
  bool capturing() {
    std::lock_guard<std::mutex> lk(mu_);
    return capture_ != nullptr;
  }
  // Throws OAR_ERR_PRECONDITION naming `what` when the stream is capturing: a host wait would hang on
  // work that is only recorded.
  void check_not_capturing(const char* what) {
    OAR_SDK_CHECK(!capturing(), OAR_ERR_PRECONDITION,
                  plugin_ << ": " << what << " of stream " << id_
                          << " while it captures a graph (its work is recorded, not run, until end_capture)");
  }
  void wait_idle() {  // until every task queued so far has run
    std::unique_lock<std::mutex> lk(mu_);
    const uint64_t target = submitted_;
    done_cv_.wait(lk, [&] { return completed_ >= target; });
  }
  bool idle() {
    std::lock_guard<std::mutex> lk(mu_);
    return completed_ == submitted_;
  }
  StoredError take_error() {  // the first asynchronous failure, cleared
    std::lock_guard<std::mutex> lk(mu_);
    return std::exchange(error_, StoredError{});
  }
  void shutdown() {  // drain, then join
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    std::lock_guard<std::mutex> jl(join_mu_);
    if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  }

 private:
  void run() {
    for (;;) {
      StreamTask task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopped and drained
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      if (latency_us_) std::this_thread::sleep_for(std::chrono::microseconds(latency_us_));
      const bool prof = prof_->on();
      const uint64_t t0 = prof ? steady_ns() : 0;
      StoredError err =
          capture_error(task.fn, plugin_ + " device " + std::to_string(device_) + ", stream " +
                                     std::to_string(id_) + ": asynchronous error in '" + task.name + "'");
      if (prof) prof_->record(task.name, task.category, t0, steady_ns(), device_, id_);
      task.fn = nullptr;  // release what the task captured before the work counts as done
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
      if (dropped) log(OAR_LOG_WARNING, err.message + " (a previous error is still pending)");
    }
  }

  const int32_t device_;
  const uint64_t id_;
  const uint64_t latency_us_;
  const std::string plugin_;
  TaskProfiler* prof_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<StreamTask> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  bool stop_ = false;
  std::shared_ptr<CapturedGraph> capture_;  // non-null while capturing
  StoredError error_;
  std::thread worker_;
  std::mutex join_mu_;
};

// One record() of an event: completes when its stream reaches it.
struct EventPoint {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  uint64_t time_ns = 0;
  void complete() {
    {
      std::lock_guard<std::mutex> lk(mu);
      time_ns = steady_ns();
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
  uint64_t time() {
    std::lock_guard<std::mutex> lk(mu);
    return time_ns;
  }
};

struct WorkerEvent {
  int32_t device = 0;
  uint32_t flags = 0;
  std::mutex mu;
  std::shared_ptr<EventPoint> point;  // the latest record(); null until recorded
  std::shared_ptr<EventPoint> latest() {
    std::lock_guard<std::mutex> lk(mu);
    return point;
  }
};

// Every stream and event of the plugin.
class WorkerStreams {
 public:
  void configure(WorkerOptions o) { opt_ = std::move(o); }
  const WorkerOptions& options() const { return opt_; }
  TaskProfiler& profiler() { return prof_; }

  void check_device(int32_t device) const {
    if (opt_.check_device) opt_.check_device(device);
  }

  std::shared_ptr<WorkerStream> create(int32_t device) {
    check_device(device);
    auto st = std::make_shared<WorkerStream>(device, next_id_.fetch_add(1), opt_, &prof_);
    std::lock_guard<std::mutex> lk(mu_);
    streams_[st.get()] = st;
    return st;
  }
  // The live stream behind a handle, checked to belong to `device` (unless device < 0).
  std::shared_ptr<WorkerStream> stream(OarStream handle, int32_t device) {
    std::shared_ptr<WorkerStream> st;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = streams_.find(reinterpret_cast<WorkerStream*>(handle));
      if (it != streams_.end()) st = it->second;
    }
    OAR_SDK_CHECK(st, OAR_ERR_INVALID_ARGUMENT,
                  opt_.plugin << ": " << static_cast<const void*>(handle)
                              << " is not a live stream of this plugin (destroyed, or never created)");
    OAR_SDK_CHECK(device < 0 || st->device() == device, OAR_ERR_INVALID_ARGUMENT,
                  opt_.plugin << ": stream " << st->id() << " belongs to device " << st->device()
                              << ", but was used with device " << device);
    return st;
  }
  std::shared_ptr<WorkerStream> remove(OarStream handle, int32_t device) {
    std::shared_ptr<WorkerStream> st = stream(handle, device);
    std::lock_guard<std::mutex> lk(mu_);
    streams_.erase(st.get());
    return st;
  }
  std::shared_ptr<WorkerEvent> create_event(int32_t device, uint32_t flags) {
    check_device(device);
    auto ev = std::make_shared<WorkerEvent>();
    ev->device = device;
    ev->flags = flags;
    std::lock_guard<std::mutex> lk(mu_);
    events_[ev.get()] = ev;
    return ev;
  }
  std::shared_ptr<WorkerEvent> event(OarEvent handle) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = events_.find(reinterpret_cast<WorkerEvent*>(handle));
    OAR_SDK_CHECK(
        it != events_.end(), OAR_ERR_INVALID_ARGUMENT,
        opt_.plugin << ": " << static_cast<const void*>(handle) << " is not a live event of this plugin");
    return it->second;
  }
  void destroy_event(OarEvent handle) {
    std::shared_ptr<WorkerEvent> ev = event(handle);  // pending records keep their own point alive
    std::lock_guard<std::mutex> lk(mu_);
    events_.erase(ev.get());
  }

  // Runs fn on `stream` of `device`, or right here when stream is NULL (synchronous).
  void submit(int32_t device, OarStream stream, const char* name, const char* category,
              std::function<void()> fn) {
    if (stream) return this->stream(stream, device)->enqueue(StreamTask{std::move(fn), name, category});
    check_device(device);
    const bool prof = prof_.on();
    const uint64_t t0 = prof ? steady_ns() : 0;
    struct Record {  // also when fn throws
      TaskProfiler& p;
      bool on;
      uint64_t t0;
      const char *name, *category;
      int32_t device;
      ~Record() {
        if (on) p.record(name, category, t0, steady_ns(), device, 0);
      }
    } record{prof_, prof, t0, name, category, device};
    fn();
  }

  // Whether `stream` (of `device`) is capturing a graph; false for NULL (the synchronous stream).
  bool capturing(int32_t device, OarStream stream) {
    return stream && this->stream(stream, device)->capturing();
  }
  // Graphs handed out by end_capture, until graph_destroy.
  OarGraph add_graph(std::shared_ptr<CapturedGraph> g) {
    OarGraph h = reinterpret_cast<OarGraph>(g.get());
    std::lock_guard<std::mutex> lk(mu_);
    graphs_[g.get()] = std::move(g);
    return h;
  }
  std::shared_ptr<CapturedGraph> graph(OarGraph handle, int32_t device) {
    std::shared_ptr<CapturedGraph> g;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = graphs_.find(reinterpret_cast<CapturedGraph*>(handle));
      if (it != graphs_.end()) g = it->second;
    }
    OAR_SDK_CHECK(
        g, OAR_ERR_INVALID_ARGUMENT,
        opt_.plugin << ": " << static_cast<const void*>(handle) << " is not a live graph of this plugin");
    OAR_SDK_CHECK(
        g->device == device, OAR_ERR_INVALID_ARGUMENT,
        opt_.plugin << ": a graph captured on device " << g->device << " used with device " << device);
    return g;
  }
  void remove_graph(OarGraph handle, int32_t device) {
    std::shared_ptr<CapturedGraph> g = graph(handle, device);  // pending launches keep their own reference
    std::lock_guard<std::mutex> lk(mu_);
    graphs_.erase(g.get());
  }

  // Streams of `device` (all devices when < 0), oldest first.
  std::vector<std::shared_ptr<WorkerStream>> streams_of(int32_t device) {
    std::vector<std::shared_ptr<WorkerStream>> out;
    {
      std::lock_guard<std::mutex> lk(mu_);
      for (auto& kv : streams_)
        if (device < 0 || kv.second->device() == device) out.push_back(kv.second);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
    return out;
  }
  // Waits for every stream of the device (except the calling worker's own).
  void wait_device_idle(int32_t device) {
    for (auto& st : streams_of(device))
      if (!st->is_current_thread()) st->wait_idle();
  }
  // wait_device_idle, then throws the first failure a stream of the device kept.
  void synchronize_device(int32_t device) {
    check_device(device);
    for (auto& st : streams_of(device)) st->check_not_capturing("device synchronize, waiting for");
    StoredError first;
    for (auto& st : streams_of(device)) {
      if (st->is_current_thread()) continue;
      st->wait_idle();
      if (!first.set) first = st->take_error();
    }
    if (first.set) throw Error(first.code, first.message);
  }

  // Drains and joins every stream and forgets every event (the plugin's shutdown).
  void shutdown() {
    prof_.set(false);
    std::unordered_map<WorkerStream*, std::shared_ptr<WorkerStream>> streams;
    {
      std::lock_guard<std::mutex> lk(mu_);
      streams.swap(streams_);
      events_.clear();
      graphs_.clear();
    }
    for (auto& kv : streams) kv.second->shutdown();
    prof_.clear();
  }

  // Sets the stream, event and profiler tables, and the device table's synchronize and close where the
  // plugin left them NULL. Any of them can be replaced after the call.
  void install(Tables& t);

 private:
  WorkerOptions opt_;
  TaskProfiler prof_;
  std::mutex mu_;
  std::unordered_map<WorkerStream*, std::shared_ptr<WorkerStream>> streams_;
  std::unordered_map<WorkerEvent*, std::shared_ptr<WorkerEvent>> events_;
  std::unordered_map<CapturedGraph*, std::shared_ptr<CapturedGraph>> graphs_;
  std::atomic<uint64_t> next_id_{1};
};

// The plugin's one instance. Never destroyed: the core may still call in during process exit, after
// static destructors ran; shutdown() joins the workers.
inline WorkerStreams& worker_streams() {
  static WorkerStreams* ws = new WorkerStreams();
  return *ws;
}

// ---- the C tables over worker_streams() ----------------------------------------------------------------
namespace worker_tables {

inline OarError* stream_create(int32_t device, int32_t /*priority*/, OarStream* stream) {
  return guard([&] {
    OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT, "stream create: out pointer is NULL");
    *stream = reinterpret_cast<OarStream>(worker_streams().create(device).get());
  });
}
inline OarError* stream_destroy(int32_t device, OarStream stream) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    OAR_SDK_CHECK(!ws.stream(stream, device)->is_current_thread(), OAR_ERR_PRECONDITION,
                  ws.options().plugin << ": a stream cannot be destroyed from its own worker");
    std::shared_ptr<WorkerStream> st = ws.remove(stream, device);
    st->shutdown();  // drains, then joins
    StoredError e = st->take_error();
    if (e.set) log(OAR_LOG_WARNING, e.message + " (never reported: the stream was destroyed)");
  });
}
inline OarError* stream_synchronize(int32_t device, OarStream stream) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    std::shared_ptr<WorkerStream> st = ws.stream(stream, device);
    OAR_SDK_CHECK(!st->is_current_thread(), OAR_ERR_PRECONDITION,
                  ws.options().plugin << ": a stream cannot be synchronized from its own worker");
    st->check_not_capturing("synchronize");
    st->wait_idle();
    StoredError e = st->take_error();
    if (e.set) throw Error(e.code, e.message);
  });
}
inline OarError* stream_query(int32_t device, OarStream stream, int32_t* done) {
  return guard([&] {
    OAR_SDK_CHECK(done, OAR_ERR_INVALID_ARGUMENT, "stream query: done is NULL");
    std::shared_ptr<WorkerStream> st = worker_streams().stream(stream, device);
    st->check_not_capturing("query");
    *done = st->idle() ? 1 : 0;
    StoredError e = st->take_error();
    if (e.set) throw Error(e.code, e.message);
  });
}
inline OarError* stream_wait_event(int32_t device, OarStream stream, OarEvent event) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    std::shared_ptr<EventPoint> p = ws.event(event)->latest();
    if (!stream) {
      ws.check_device(device);
      if (p) p->wait();
      return;
    }
    std::shared_ptr<WorkerStream> st = ws.stream(stream, device);
    if (p) st->enqueue(StreamTask{[p] { p->wait(); }, "wait_event", "event"});  // never recorded: no wait
  });
}
inline OarError* stream_launch_host_func(int32_t device, OarStream stream, void (*fn)(void*), void* arg) {
  return guard([&] {
    OAR_SDK_CHECK(fn, OAR_ERR_INVALID_ARGUMENT, "launch_host_func: fn is NULL");
    worker_streams().submit(device, stream, "host_func", "host_func", [fn, arg] { fn(arg); });
  });
}

inline OarError* stream_begin_capture(int32_t device, OarStream stream) {
  return guard([&] {
    OAR_SDK_CHECK(
        stream, OAR_ERR_INVALID_ARGUMENT,
        worker_streams().options().plugin << ": begin_capture: the NULL (synchronous) stream cannot capture");
    worker_streams().stream(stream, device)->begin_capture();
  });
}
inline OarError* stream_end_capture(int32_t device, OarStream stream, OarGraph* graph) {
  return guard([&] {
    OAR_SDK_CHECK(graph, OAR_ERR_INVALID_ARGUMENT, "end_capture: graph is NULL");
    *graph = nullptr;
    OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT,
                  worker_streams().options().plugin << ": end_capture: the NULL stream never captures");
    WorkerStreams& ws = worker_streams();
    *graph = ws.add_graph(ws.stream(stream, device)->end_capture());
  });
}
// One task that runs every recorded task in order (one queue round trip per launch, like a real graph
// launch). The first failure stops the launch and is reported like any task's.
inline OarError* stream_graph_launch(int32_t device, OarGraph graph, OarStream stream) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    std::shared_ptr<CapturedGraph> g = ws.graph(graph, device);
    OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT,
                  ws.options().plugin << ": graph_launch needs a stream (the NULL stream is synchronous)");
    std::shared_ptr<WorkerStream> st = ws.stream(stream, device);
    OAR_SDK_CHECK(!st->capturing(), OAR_ERR_UNIMPLEMENTED,
                  ws.options().plugin
                      << ": launching a graph into a capturing stream (nested graphs) is not supported");
    st->enqueue(StreamTask{[g] {
                             for (const StreamTask& t : g->tasks) t.fn();
                           },
                           "graph_launch", "graph"});
  });
}
inline OarError* stream_graph_destroy(int32_t device, OarGraph graph) {
  return guard([&] { worker_streams().remove_graph(graph, device); });
}

inline OarError* event_create(int32_t device, uint32_t flags, OarEvent* event) {
  return guard([&] {
    OAR_SDK_CHECK(event, OAR_ERR_INVALID_ARGUMENT, "event create: out pointer is NULL");
    *event = reinterpret_cast<OarEvent>(worker_streams().create_event(device, flags).get());
  });
}
inline OarError* event_destroy(int32_t /*device*/, OarEvent event) {
  return guard([&] { worker_streams().destroy_event(event); });
}
inline OarError* event_record(int32_t device, OarEvent event, OarStream stream) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    std::shared_ptr<WorkerEvent> ev = ws.event(event);
    OAR_SDK_CHECK(
        ev->device == device, OAR_ERR_INVALID_ARGUMENT,
        ws.options().plugin << ": event of device " << ev->device << " recorded on device " << device);
    auto p = std::make_shared<EventPoint>();
    std::shared_ptr<WorkerStream> st = stream ? ws.stream(stream, device) : nullptr;
    if (!st) ws.check_device(device);
    OAR_SDK_CHECK(!st || !st->capturing(), OAR_ERR_UNIMPLEMENTED,
                  ws.options().plugin << ": event_record cannot be captured into a graph (stream " << st->id()
                                      << " is capturing)");
    {
      std::lock_guard<std::mutex> lk(ev->mu);
      ev->point = p;
    }
    if (st)
      st->enqueue(StreamTask{[p] { p->complete(); }, "event_record", "event"});
    else
      p->complete();
  });
}
inline OarError* event_synchronize(int32_t /*device*/, OarEvent event) {
  return guard([&] {
    if (auto p = worker_streams().event(event)->latest()) p->wait();
  });
}
inline OarError* event_query(int32_t /*device*/, OarEvent event, int32_t* done) {
  return guard([&] {
    OAR_SDK_CHECK(done, OAR_ERR_INVALID_ARGUMENT, "event query: done is NULL");
    auto p = worker_streams().event(event)->latest();
    *done = (!p || p->is_done()) ? 1 : 0;
  });
}
inline OarError* event_elapsed_ms(int32_t /*device*/, OarEvent start, OarEvent end, float* ms) {
  return guard([&] {
    WorkerStreams& ws = worker_streams();
    OAR_SDK_CHECK(ms, OAR_ERR_INVALID_ARGUMENT, "elapsed_ms: ms is NULL");
    std::shared_ptr<WorkerEvent> a = ws.event(start), b = ws.event(end);
    OAR_SDK_CHECK(!(a->flags & OAR_EVENT_DISABLE_TIMING) && !(b->flags & OAR_EVENT_DISABLE_TIMING),
                  OAR_ERR_INVALID_ARGUMENT,
                  ws.options().plugin << ": elapsed_ms: an event was created with OAR_EVENT_DISABLE_TIMING");
    auto pa = a->latest(), pb = b->latest();
    OAR_SDK_CHECK(pa && pb, OAR_ERR_PRECONDITION,
                  ws.options().plugin << ": elapsed_ms: an event was never recorded");
    OAR_SDK_CHECK(
        pa->is_done() && pb->is_done(), OAR_ERR_PRECONDITION,
        ws.options().plugin << ": elapsed_ms: an event has not completed yet (synchronize it first)");
    *ms = static_cast<float>((static_cast<double>(pb->time()) - static_cast<double>(pa->time())) / 1e6);
  });
}

inline OarError* device_synchronize(int32_t device) {
  return guard([&] { worker_streams().synchronize_device(device); });
}
inline OarError* device_close(int32_t device) {
  return guard([&] {
    worker_streams().check_device(device);
    worker_streams().wait_device_idle(device);
  });
}

inline OarError* profiler_start() {
  return guard([] { worker_streams().profiler().set(true); });
}
inline OarError* profiler_stop() {
  return guard([] { worker_streams().profiler().set(false); });
}
inline OarError* profiler_flush() {
  return guard([] { worker_streams().profiler().flush(); });
}

}  // namespace worker_tables

inline void WorkerStreams::install(Tables& t) {
  using namespace worker_tables;
  t.stream = {sizeof(OarStreamTable), stream_create,       stream_destroy,          stream_synchronize,
              stream_query,           stream_wait_event,   stream_launch_host_func, stream_begin_capture,
              stream_end_capture,     stream_graph_launch, stream_graph_destroy};
  t.event = {sizeof(OarEventTable), event_create, event_destroy,   event_record,
             event_synchronize,     event_query,  event_elapsed_ms};
  t.profiler = {sizeof(OarProfilerTable), profiler_start, profiler_stop, profiler_flush};
  if (!t.device.synchronize) t.device.synchronize = device_synchronize;
  if (!t.device.close) t.device.close = device_close;
}

}  // namespace oar::sdk
