// The sim runtime: configuration, tagged device memory, and the device and memory tables over it.
// Streams, events and the profiler are the SDK's worker threads (oar/sdk/streams.h).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "sim_state.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace oar::sim {

using sdk::Error;

namespace {

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
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
                                  "' (not a non-negative integer); using " + std::to_string(fallback));
    return fallback;
  }
  return static_cast<uint64_t>(x);
}

}  // namespace

State& state() {
  static State* s = new State();
  return *s;
}

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

void check_device(int32_t device) {
  State& s = state();
  OAR_SDK_CHECK(
      device >= 0 && device < s.device_count, OAR_ERR_NOT_FOUND,
      "sim: no device " << device << " (there are " << s.device_count << "; OAR_SIM_DEVICE_COUNT sets it)");
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

namespace {

// ---- device table --------------------------------------------------------------------------------

OarError* dev_count(int32_t* count) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(count, OAR_ERR_INVALID_ARGUMENT, "sim: count is NULL");
    *count = state().device_count;
  });
}

OarError* dev_open(int32_t device) {
  return sdk::guard([&] { check_device(device); });
}

OarError* dev_properties(int32_t device, OarDeviceProperties* props) {
  return sdk::guard([&] {
    check_device(device);
    OAR_SDK_CHECK(props, OAR_ERR_INVALID_ARGUMENT, "sim: props is NULL");
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    std::snprintf(p.name, sizeof(p.name), "%s", "oar simulated accelerator");
    p.total_memory = state().budget_bytes;
    p.capabilities = OAR_CAP_ASYNC_STREAMS | OAR_CAP_FP64 | OAR_CAP_SHARED_DEVICE_RANKS;
    p.alloc_alignment = kAlignment;
    p.alloc_chunk_bytes = 0;
    unsigned hc = std::thread::hardware_concurrency();
    p.compute_units = hc ? static_cast<int32_t>(hc) : 1;
    p.max_streams = 0;
    sdk::fill_sized(props, p);
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

uint64_t round_up(uint64_t n) {
  return (std::max<uint64_t>(n, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

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
                      "sim device " << device << ": out of memory: cannot allocate " << bytes << " bytes; "
                                    << used << " of the " << s.budget_bytes << "-byte budget ("
                                    << (s.budget_bytes >> 20)
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
      OAR_SDK_CHECK(host, OAR_ERR_OUT_OF_MEMORY, "sim: cannot allocate " << bytes << " bytes of host memory");
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
      sdk::worker_streams().wait_device_idle(device);
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
      throw Error(OAR_ERR_INVALID_ARGUMENT, std::string("sim: memcpy: unknown memory kind for ") + what);
  }
}

OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                     OarMemLocation src_loc, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (bytes == 0) return;
    void* d = resolve(dst, dst_loc, bytes, "destination");
    const void* sp = resolve(src, src_loc, bytes, "source");
    if ((dst_loc.kind == OAR_MEM_HOST || src_loc.kind == OAR_MEM_HOST) &&
        sdk::worker_streams().capturing(device, stream)) {
      // As CUDA: pageable host memory cannot take part in a graph. A copy to it would need a host wait; a
      // copy from it would bake the bytes of the capture into every replay.
      throw Error(OAR_ERR_PRECONDITION,
                  std::string("sim: memcpy ") + (dst_loc.kind == OAR_MEM_HOST ? "to" : "from") +
                      " pageable host memory on a stream that is capturing a graph (copy before "
                      "begin_capture, or use pinned memory)");
    }
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

}  // namespace

void setup_runtime(sdk::Tables& t) {
  const int threads = state().threads_per_stream;
  sdk::worker_streams().configure({"sim", state().latency_us, check_device, [threads] {
#ifdef _OPENMP
                                     omp_set_num_threads(threads);  // this worker's parallel_for width
#else
                                     (void)threads;
#endif
                                   }});
  t.device.count = dev_count;
  t.device.open = dev_open;
  t.device.properties = dev_properties;
  t.device.memory_info = dev_memory_info;
  t.memory = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_memset, mem_memcpy};
  sdk::worker_streams().install(t);  // streams, events, profiler; device synchronize and close
}

void shutdown_runtime() {
  sdk::worker_streams().shutdown();
  State& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  for (auto& kv : s.device_allocs) std::free(kv.second.host);
  for (auto& kv : s.host_allocs) std::free(kv.second.host);
  s.device_allocs.clear();
  s.host_allocs.clear();
  std::fill(s.used_bytes.begin(), s.used_bytes.end(), 0);
}

}  // namespace oar::sim
