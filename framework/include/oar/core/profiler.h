// The host side of oar.profiler: op calls timed by the dispatcher's kProfiler hook, user ranges
// (RecordEvent), and the plugins' device events (kernels, copies) gathered through their profiler tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oar::profiler {

struct Event {
  std::string name;
  std::string category;               // "operator", "user", or a plugin's category ("kernel", "memcpy", ...)
  uint64_t start_ns = 0, end_ns = 0;  // steady clock
  uint64_t thread = 0;                // host events: the recording thread's id; device events: 0
  int32_t device = -1;                // device events: the plugin's device index; host events: -1
  std::string device_type;            // device events: the plugin's device type
  uint64_t stream_id = 0;
  std::string shapes;  // operator events with record_shapes: the input shapes, e.g. "[2, 3], [3]"
  int64_t bytes = 0;   // operator events with profile_memory: allocated bytes after minus before
};

struct Options {
  bool record_shapes = false;
  bool profile_memory = false;
  bool devices = true;  // start the plugins' profilers too
};

// Starts recording on the calling thread (the thread that runs the model): its op calls and ranges,
// and the device events of every plugin with a profiler table. Throws when already started.
void start(const Options& options);
// Stops, and returns everything recorded since start(), host and device events, by start time.
std::vector<Event> stop();
bool active();

// A user range on the calling thread (RecordEvent); recorded only while active() on that thread.
void push_range(const std::string& name);
void pop_range();

// The hook's installation (core_hooks.cc).
void install_hook();

}  // namespace oar::profiler
