// Internal state of the sim plugin: configuration and tagged device memory. Streams, events and the
// profiler are the SDK's worker-thread implementation (oar/sdk/streams.h). Nothing here crosses the ABI.
#pragma once

#include <oar/sdk/plugin.h>
#include <oar/sdk/streams.h>
#include <oar/sdk/tables.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace oar::sim {

// Device addresses are host addresses plus this tag: a non-canonical x86-64 address, so any
// dereference by the core faults instead of silently working. Linear, so byte offsets survive.
inline constexpr uintptr_t kTag = 0x4000000000000000ull;
inline constexpr uint64_t kAlignment = 256;

inline bool is_tagged(const void* p) { return reinterpret_cast<uintptr_t>(p) >= kTag; }
inline void* untag(const void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) - kTag); }
inline void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + kTag); }

struct Allocation {
  void* host = nullptr;  // real memory
  uint64_t bytes = 0;
  int32_t device = 0;
  int32_t kind = OAR_MEM_DEVICE;
};

struct State {
  std::mutex mu;
  int32_t device_count = 2;
  uint64_t budget_bytes = 4096ull << 20;
  uint64_t latency_us = 0;
  int64_t comm_timeout_ms = 60000;
  bool poison = false;
  int32_t threads_per_stream = 1;                 // OpenMP threads a task may use (OAR_SIM_THREADS)
  std::vector<uint64_t> used_bytes;               // per device
  std::map<uintptr_t, Allocation> device_allocs;  // key: tagged base address
  std::map<uintptr_t, Allocation> host_allocs;    // key: host base address
};

State& state();  // never destroyed: the core may call in during process exit
void configure_from_env();
void check_device(int32_t device);

// Validates that [ptr, ptr + bytes) lies in one live device allocation (of `device` when >= 0)
// and returns the host address of ptr.
void* device_to_host(const void* ptr, uint64_t bytes, int32_t device, const char* what);

// Runs a task on `stream` (of `device`), or right here when stream is NULL (synchronous).
inline void submit(int32_t device, OarStream stream, const char* name, const char* category,
                   std::function<void()> fn) {
  sdk::worker_streams().submit(device, stream, name, category, std::move(fn));
}

void setup_runtime(sdk::Tables& t);      // device and memory tables; streams, events, profiler
void setup_collectives(sdk::Tables& t);  // collective table
void register_kernels(sdk::KernelRegistrar& reg);
void shutdown_runtime();
void shutdown_collectives();

}  // namespace oar::sim
