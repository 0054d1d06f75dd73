// oar.profiler's host recording (profiler.h). The kProfiler dispatch hook is engaged only on the thread
// that started the profiler, so an idle profiler costs nothing per op. `before` notes the start time on
// a per-thread stack; `after` closes the matching entry (nested op calls, e.g. a composition calling
// ops, nest in the trace). A call that an earlier slot took over (static-graph recording) never reaches
// `before`, and `after` then finds no entry of its own and records nothing: no kernel ran.
// Device events come from the plugins' profiler tables (Runtime::start_profiling / stop_profiling).
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/profiler.h>
#include <oar/core/runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <thread>

namespace oar::profiler {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t this_thread_id() { return std::hash<std::thread::id>()(std::this_thread::get_id()); }

struct Session {
  std::mutex mu;
  std::atomic<bool> on{false};
  Options options;
  std::thread::id owner;
  std::vector<Event> events;
};
Session& session() {
  static Session* s = new Session();  // never destroyed: a hook may run during exit
  return *s;
}

struct Open {
  const OpCall* call;  // nullptr for a user range
  std::string name;    // user ranges only
  uint64_t start_ns;
  int64_t allocated;  // with profile_memory: the allocator's bytes in use at the start
};
thread_local std::vector<Open> t_open;

int64_t allocated_on(const OpCall& c) {
  return static_cast<int64_t>(Runtime::get().device(c.place).allocator().stats().allocated);
}

std::string shapes_of(const OpCall& c) {
  std::ostringstream s;
  for (int32_t i = 0; i < c.n_inputs; ++i) {
    if (i) s << ", ";
    s << "[";
    const auto& d = c.inputs[i].dims();
    for (size_t k = 0; k < d.size(); ++k) s << (k ? ", " : "") << d[k];
    s << "]";
  }
  return s.str();
}

void push(Event e) {
  Session& s = session();
  std::lock_guard<std::mutex> lk(s.mu);
  s.events.push_back(std::move(e));
}

bool before(OpCall& c) {
  // Also called, unengaged, for calls with symbolic inputs (dispatch_hooks.h): nothing to time then.
  if (!dispatch_hook_engaged(HookSlot::kProfiler)) return false;
  // An entry left by a call whose kernel threw is stale. Open calls enclosing this one live in outer
  // stack frames, at higher addresses (the stack grows down on every platform oar builds for): drop
  // op entries at or below this call's frame.
  const auto frame = [](const OpCall* call) { return reinterpret_cast<uintptr_t>(call); };
  while (!t_open.empty() && t_open.back().call != nullptr && frame(t_open.back().call) <= frame(&c))
    t_open.pop_back();
  const bool memory = session().options.profile_memory;
  t_open.push_back({&c, {}, now_ns(), memory ? allocated_on(c) : 0});
  return false;
}

void after(OpCall& c) {
  if (t_open.empty() || t_open.back().call != &c) return;  // taken over before our `before`
  const uint64_t end = now_ns();
  Open o = std::move(t_open.back());
  t_open.pop_back();
  const Options& opt = session().options;
  Event e;
  e.name = c.op.name;
  e.category = "operator";
  e.start_ns = o.start_ns;
  e.end_ns = end;
  e.thread = this_thread_id();
  if (opt.record_shapes) e.shapes = shapes_of(c);
  if (opt.profile_memory) e.bytes = allocated_on(c) - o.allocated;
  push(std::move(e));
}

constexpr DispatchHook kProfilerHook{&before, &after};

}  // namespace

void install_hook() { install_dispatch_hook(HookSlot::kProfiler, &kProfilerHook); }

bool active() { return session().on.load(std::memory_order_acquire); }

void start(const Options& options) {
  Session& s = session();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    OAR_ENFORCE(!s.on, ErrorCode::kPrecondition, "profiler: already started; stop() it first");
    s.options = options;
    s.owner = std::this_thread::get_id();
    s.events.clear();
    t_open.clear();
    s.on = true;
  }
  if (options.devices) Runtime::get().start_profiling();
  set_dispatch_hook_engaged(HookSlot::kProfiler, true);
}

std::vector<Event> stop() {
  Session& s = session();
  OAR_ENFORCE(s.on, ErrorCode::kPrecondition, "profiler: stop() without start()");
  OAR_ENFORCE(s.owner == std::this_thread::get_id(), ErrorCode::kPrecondition,
              "profiler: stop() must be called on the thread that called start()");
  set_dispatch_hook_engaged(HookSlot::kProfiler, false);
  t_open.clear();
  std::vector<Event> out;
  if (s.options.devices) {
    for (auto& d : Runtime::get().stop_profiling()) {
      Event e;
      e.name = std::move(d.name);
      e.category = std::move(d.category);
      e.start_ns = d.start_ns;
      e.end_ns = d.end_ns;
      e.device = d.device;
      e.device_type = d.device_type;
      e.stream_id = d.stream_id;
      out.push_back(std::move(e));
    }
  }
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.on = false;
    out.insert(out.end(), std::make_move_iterator(s.events.begin()), std::make_move_iterator(s.events.end()));
    s.events.clear();
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return out;
}

void push_range(const std::string& name) {
  if (!dispatch_hook_engaged(HookSlot::kProfiler)) return;
  t_open.push_back({nullptr, name, now_ns(), 0});
}

void pop_range() {
  if (!dispatch_hook_engaged(HookSlot::kProfiler)) return;
  // The innermost open user range (op entries above it belong to calls still running: none here).
  for (auto it = t_open.rbegin(); it != t_open.rend(); ++it) {
    if (it->call != nullptr) continue;
    Event e;
    e.name = it->name;
    e.category = "user";
    e.start_ns = it->start_ns;
    e.end_ns = now_ns();
    e.thread = this_thread_id();
    t_open.erase(std::next(it).base());
    push(std::move(e));
    return;
  }
}

}  // namespace oar::profiler
