// The gpu plugin's runtime over the CUDA runtime API: devices, memory, streams, events, the profiler,
// and the kernel registry wrapper the profiler times kernels through.
//
// Handles: an OarStream is a cudaStream_t and an OarEvent a cudaEvent_t, cast. Streams are created
// non-blocking, so they never wait for the legacy default stream. A NULL stream means "synchronous":
// the copy or memset is done (and waited for) before the call returns.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda_common.h"

namespace oar_cuda {

using sdk::guard;

void throw_gpu_error(gpuError_t e, const std::string& what) {
  OarErrorCode code = OAR_ERR_EXTERNAL;
  if (e == gpuErrorMemoryAllocation) code = OAR_ERR_OUT_OF_MEMORY;
  if (e == gpuErrorInsufficientDriver || e == gpuErrorNoDevice) code = OAR_ERR_UNAVAILABLE;
  (void)gpuGetLastError();  // clear a non-sticky error so the next call does not report it again
  throw sdk::Error(code, what + ": " + gpuGetErrorString(e) + " (" + gpuGetErrorName(e) + ")",
                   static_cast<int64_t>(e));
}

namespace {

int32_t checked_count() {
  int n = 0;
  gpu_check(gpuGetDeviceCount(&n), OAR_GPU_API_PREFIX "GetDeviceCount");
  return n;
}

void check_device(int32_t device) {
  static const int32_t count = [] {
    int n = 0;
    return gpuGetDeviceCount(&n) == gpuSuccess ? n : 0;
  }();
  OAR_SDK_CHECK(device >= 0 && device < count, OAR_ERR_INVALID_ARGUMENT,
                "gpu: no device " << device << " (this machine has " << count << ")");
}

}  // namespace

void set_device(int32_t device) {
  thread_local int32_t current = -1;
  if (current == device) return;
  gpu_check(gpuSetDevice(device), OAR_GPU_API_PREFIX "SetDevice");
  current = device;
}

const gpuDeviceProp& device_prop(int32_t device) {
  // Read on every kernel launch (grid sizes): a lock-free read once filled. Entries are never freed.
  constexpr int32_t kMaxDevices = 64;
  static std::atomic<gpuDeviceProp*> cache[kMaxDevices];
  if (device >= 0 && device < kMaxDevices)
    if (gpuDeviceProp* p = cache[device].load(std::memory_order_acquire)) return *p;
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  check_device(device);
  OAR_SDK_CHECK(device < kMaxDevices, OAR_ERR_INVALID_ARGUMENT,
                "gpu: device " << device << " beyond " << kMaxDevices);
  if (gpuDeviceProp* p = cache[device].load(std::memory_order_acquire)) return *p;
  auto* p = new gpuDeviceProp();
  gpu_check(gpuGetDeviceProperties(p, device), OAR_GPU_API_PREFIX "GetDeviceProperties");
  cache[device].store(p, std::memory_order_release);
  return *p;
}

DeviceError* device_error_word(int32_t device) {
  constexpr int32_t kMaxDevices = 64;
  static std::atomic<DeviceError*> words[kMaxDevices];
  OAR_SDK_CHECK(device >= 0 && device < kMaxDevices, OAR_ERR_INVALID_ARGUMENT, "gpu: no device " << device);
  if (DeviceError* w = words[device].load(std::memory_order_acquire)) return w;
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  if (DeviceError* w = words[device].load(std::memory_order_acquire)) return w;
  set_device(device);
  void* p = nullptr;
  gpu_check(gpuHostAllocMapped(&p, sizeof(DeviceError)), OAR_GPU_API_PREFIX "HostAlloc (error word)");
  std::memset(p, 0, sizeof(DeviceError));
  void* d = nullptr;
  gpu_check(gpuHostGetDevicePointer(&d, p, 0), OAR_GPU_API_PREFIX "HostGetDevicePointer (error word)");
  OAR_SDK_CHECK(d == p, OAR_ERR_INTERNAL,
                "gpu: the error word's device address differs from its host address");
  words[device].store(static_cast<DeviceError*>(p), std::memory_order_release);  // never freed
  return static_cast<DeviceError*>(p);
}

namespace {
const char* error_op_name(int32_t op) {
  switch (op) {
    case kErrIndexSelect:
      return "index_select";
    case kErrIndexAdd:
      return "index_add";
    case kErrGatherNd:
      return "gather_nd";
    case kErrScatterNdAdd:
      return "scatter_nd_add";
    case kErrIndexPut:
      return "index_put";
    case kErrTakeAlongAxis:
      return "take_along_axis";
    case kErrPutAlongAxis:
      return "put_along_axis";
    case kErrSoftmaxCrossEntropy:
      return "softmax_cross_entropy";
    case kErrBernoulli:
      return "bernoulli";
    case kErrNonzeroCount:
      return "nonzero";
  }
  return "a gpu kernel";
}
}  // namespace

void raise_device_error(int32_t device) {
  volatile DeviceError* w = device_error_word(device);
  if (w->code == kNoDeviceError) return;
  const int32_t kind = w->code, op = w->op;
  const int64_t value = w->value, bound = w->bound;
  w->value = 0;
  w->bound = 0;
  w->op = 0;
  w->code = kNoDeviceError;
  const std::string where =
      " (found on gpu:" + std::to_string(device) +
      " by the kernel, reported at the next synchronization; that op's output is not valid)";
  if (kind == kBadIndex)
    throw sdk::Error(OAR_ERR_OUT_OF_RANGE,
                     std::string(error_op_name(op)) + ": index " + std::to_string(value) +
                         " is out of range for a dimension of size " + std::to_string(bound) + where);
  if (op == kErrBernoulli)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "bernoulli: x must hold probabilities in [0, 1]; element " +
                                                   std::to_string(value) + " does not" + where);
  if (op == kErrNonzeroCount)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "nonzero: attribute count (" + std::to_string(bound) +
                                                   ") != number of nonzero elements (" +
                                                   std::to_string(value) + ")" + where);
  throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, std::string(error_op_name(op)) + ": a bad value" + where);
}

int64_t grid_for(int64_t n, int32_t device, int threads) {
  const int64_t wanted = (n + threads - 1) / threads;
  const int64_t full = static_cast<int64_t>(device_prop(device).multiProcessorCount) * 32;
  return std::max<int64_t>(1, std::min(wanted, full));
}

// ---- profiler ----------------------------------------------------------------------------------------
// While started, every kernel call is bracketed by two CUDA events on its stream and an NVTX range
// (visible to Nsight). flush() waits for the events and emits one OarTraceEvent per kernel, placed on the
// host's steady clock through an anchor event recorded at start().
namespace {

struct KernelRecord {
  const char* name;
  int32_t device;
  uint64_t stream_id;
  gpuEvent_t begin, end;
};

struct Profiler {
  std::mutex mu;
  std::atomic<bool> on{false};  // read without the lock by every kernel call
  std::vector<KernelRecord> records;
  struct Anchor {
    gpuEvent_t event = nullptr;
    uint64_t host_ns = 0;
  };
  std::vector<Anchor> anchors;  // per device
};
Profiler& profiler() {
  static Profiler* p = new Profiler();
  return *p;
}

uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

OarError* profiler_start() {
  return guard([&] {
    Profiler& p = profiler();
    std::lock_guard<std::mutex> lk(p.mu);
    if (p.on) return;
    const int32_t n = checked_count();
    p.anchors.assign(static_cast<size_t>(n), {});
    for (int32_t d = 0; d < n; ++d) {
      set_device(d);
      gpu_check(gpuEventCreateWithFlags(&p.anchors[d].event, gpuEventDefault),
                OAR_GPU_API_PREFIX "EventCreate");
      gpu_check(gpuDeviceSynchronize(), OAR_GPU_API_PREFIX "DeviceSynchronize");
      gpu_check(gpuEventRecord(p.anchors[d].event, nullptr), OAR_GPU_API_PREFIX "EventRecord");
      gpu_check(gpuEventSynchronize(p.anchors[d].event), OAR_GPU_API_PREFIX "EventSynchronize");
      p.anchors[d].host_ns = steady_ns();
    }
    p.on = true;
  });
}

OarError* profiler_stop() {
  return guard([&] {
    Profiler& p = profiler();
    std::lock_guard<std::mutex> lk(p.mu);
    p.on = false;
  });
}

OarError* profiler_flush() {
  return guard([&] {
    Profiler& p = profiler();
    std::vector<KernelRecord> records;
    {
      std::lock_guard<std::mutex> lk(p.mu);
      records.swap(p.records);
    }
    uint64_t correlation = 0;
    for (const KernelRecord& r : records) {
      float from_anchor = 0, length = 0;
      set_device(r.device);
      gpu_check(gpuEventSynchronize(r.end), OAR_GPU_API_PREFIX "EventSynchronize");
      gpu_check(gpuEventElapsedTime(&from_anchor, p.anchors[r.device].event, r.begin),
                OAR_GPU_API_PREFIX "EventElapsedTime");
      gpu_check(gpuEventElapsedTime(&length, r.begin, r.end), OAR_GPU_API_PREFIX "EventElapsedTime");
      OarTraceEvent e{};
      e.struct_size = sizeof(e);
      e.name = r.name;
      e.category = "kernel";
      e.start_ns = p.anchors[r.device].host_ns + static_cast<uint64_t>(from_anchor * 1e6);
      e.end_ns = e.start_ns + static_cast<uint64_t>(length * 1e6);
      e.device = r.device;
      e.stream_id = r.stream_id;
      e.correlation_id = ++correlation;
      if (sdk::services().trace_event) sdk::services().trace_event(&e);
      (void)gpuEventDestroy(r.begin);
      (void)gpuEventDestroy(r.end);
    }
  });
}

// A registered kernel: its op name and body, for the profiling trampoline.
struct NamedKernel {
  const char* op;
  sdk::KernelBody body;
};

OarError* profiled_trampoline(OarKernelContext* ctx, void* user_data) {
  const auto* k = static_cast<const NamedKernel*>(user_data);
  return guard([&] {
    sdk::KernelContext c(ctx);
    Profiler& p = profiler();
    if (!p.on) return k->body(c);  // a plain read: start/stop race only decides whether one call is timed
    KernelRecord r{k->op, c.device(), 0, nullptr, nullptr};
    gpuStream_t s = stream_of(c);
    r.stream_id = reinterpret_cast<uint64_t>(s);
    gpu_check(gpuEventCreateWithFlags(&r.begin, gpuEventDefault), OAR_GPU_API_PREFIX "EventCreate");
    gpu_check(gpuEventCreateWithFlags(&r.end, gpuEventDefault), OAR_GPU_API_PREFIX "EventCreate");
    gpu_range_push(k->op);
    gpu_check(gpuEventRecord(r.begin, s), OAR_GPU_API_PREFIX "EventRecord");
    try {
      k->body(c);
    } catch (...) {
      gpu_range_pop();
      (void)gpuEventDestroy(r.begin);
      (void)gpuEventDestroy(r.end);
      throw;
    }
    gpu_check(gpuEventRecord(r.end, s), OAR_GPU_API_PREFIX "EventRecord");
    gpu_range_pop();
    std::lock_guard<std::mutex> lk(p.mu);
    p.records.push_back(r);
  });
}

NamedKernel* keep(const char* op, sdk::KernelBody body) {
  static auto* kernels = new std::deque<NamedKernel>();  // never destroyed: kernels may run during exit
  kernels->push_back({op, body});
  return &kernels->back();
}

OarError* supports_trampoline(const OarSupportsQuery* q, void* user_data) {
  auto body = reinterpret_cast<sdk::SupportsBody>(user_data);
  return guard([&] {
    sdk::KernelContext c(const_cast<OarKernelContext*>(q->ctx));
    body(c);
  });
}

}  // namespace

void Registry::add(const char* op, const std::vector<OarDType>& dtypes, sdk::KernelBody body,
                   uint32_t flags) {
  try {
    reg_.add_raw(op, dtypes, &profiled_trampoline, keep(op, body), flags);
    ++count_;
  } catch (const sdk::Error& e) {
    sdk::log(OAR_LOG_WARNING, std::string("gpu: kernel for '") + op + "' not registered: " + e.what());
  }
}

void Registry::add(const char* op, const std::vector<OarDType>& dtypes, sdk::KernelBody body,
                   sdk::SupportsBody supports, uint32_t flags) {
  try {
    reg_.add_raw(op, dtypes, &profiled_trampoline, keep(op, body), flags, 1, &supports_trampoline,
                 reinterpret_cast<void*>(supports));
    ++count_;
  } catch (const sdk::Error& e) {
    sdk::log(OAR_LOG_WARNING, std::string("gpu: kernel for '") + op + "' not registered: " + e.what());
  }
}

namespace {

// ---- graph capture state (ABI 1.3) --------------------------------------------------------------------
// The streams capturing now, per device. CUDA itself fails a synchronisation of a capturing stream and
// invalidates the capture; oar refuses it first (OAR_ERR_PRECONDITION naming the capture), so the capture
// stays usable and the error says what happened.
struct Captures {
  std::mutex mu;
  std::vector<std::pair<int32_t, gpuStream_t>> open;
};
Captures& captures() {
  static auto* c = new Captures;
  return *c;
}
bool device_capturing(int32_t device) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lk(c.mu);
  for (auto& o : c.open)
    if (o.first == device) return true;
  return false;
}
bool stream_capturing(gpuStream_t s) {
  if (!s) return false;
  gpuStreamCaptureStatus st = gpuStreamCaptureStatusNone;
  gpu_check(gpuStreamIsCapturing(s, &st), OAR_GPU_API_PREFIX "StreamIsCapturing");
  return st != gpuStreamCaptureStatusNone;
}
void refuse_while_capturing(bool capturing, int32_t device, const char* what) {
  if (capturing)
    throw sdk::Error(OAR_ERR_PRECONDITION, "gpu:" + std::to_string(device) + ": " + what +
                                               " while a stream captures a graph (its work is recorded, not "
                                               "run, until end_capture)");
}

// ---- device table --------------------------------------------------------------------------------------
OarError* device_count(int32_t* count) {
  return guard([&] { *count = checked_count(); });
}
OarError* device_open(int32_t device) {
  return guard([&] {
    check_device(device);
    set_device(device);
  });
}
OarError* device_close(int32_t device) {
  return guard([&] { check_device(device); });
}
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  return guard([&] {
    const gpuDeviceProp& d = device_prop(device);
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    std::snprintf(p.name, sizeof(p.name), "%.127s", d.name);
    p.total_memory = d.totalGlobalMem;
    p.capabilities = OAR_CAP_ASYNC_STREAMS | OAR_CAP_FP16 | OAR_CAP_FP64 | OAR_CAP_PINNED_MEMORY;
    if (d.major >= 8) p.capabilities |= OAR_CAP_BF16;
    p.alloc_alignment = 256;
    p.alloc_chunk_bytes = uint64_t{32}
                          << 20;  // cudaMalloc is slow and synchronizing: grow the pool in big steps
    p.compute_units = d.multiProcessorCount;
    p.max_streams = 0;
    sdk::fill_sized(props, p);
  });
}
OarError* device_synchronize(int32_t device) {
  return guard([&] {
    check_device(device);
    set_device(device);
    refuse_while_capturing(device_capturing(device), device, "device synchronize");
    gpu_check(gpuDeviceSynchronize(), OAR_GPU_API_PREFIX "DeviceSynchronize");
    raise_device_error(device);
  });
}
OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  return guard([&] {
    check_device(device);
    set_device(device);
    size_t f = 0, t = 0;
    gpu_check(gpuMemGetInfo(&f, &t), OAR_GPU_API_PREFIX "MemGetInfo");
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
  });
}

// ---- memory table --------------------------------------------------------------------------------------
OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  return guard([&] {
    *ptr = nullptr;
    if (bytes == 0) bytes = 1;
    switch (kind) {
      case OAR_MEM_DEVICE: {
        check_device(device);
        set_device(device);
        gpuError_t e = gpuMalloc(ptr, bytes);
        if (e == gpuErrorMemoryAllocation) {
          (void)gpuGetLastError();
          size_t f = 0, t = 0;
          (void)gpuMemGetInfo(&f, &t);
          throw sdk::Error(OAR_ERR_OUT_OF_MEMORY,
                           "gpu:" + std::to_string(device) + ": " OAR_GPU_API_PREFIX "Malloc of " +
                               std::to_string(bytes) + " bytes failed: out of memory (" + std::to_string(f) +
                               " of " + std::to_string(t) + " bytes free)");
        }
        gpu_check(e, OAR_GPU_API_PREFIX "Malloc");
        return;
      }
      case OAR_MEM_PINNED_HOST:
        gpu_check(gpuMallocHost(ptr, bytes), OAR_GPU_API_PREFIX "MallocHost");
        return;
      case OAR_MEM_HOST:
        *ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!*ptr) throw std::bad_alloc();
        return;
    }
    throw sdk::Error(OAR_ERR_UNIMPLEMENTED,
                     "gpu: memory kind " + std::to_string(kind) +
                         " is not provided (unified memory is not offered: the core pools device memory)");
  });
}
OarError* mem_free(int32_t device, int32_t kind, void* ptr) {
  return guard([&] {
    if (!ptr) return;
    switch (kind) {
      case OAR_MEM_DEVICE:
        check_device(device);
        set_device(device);
        // cudaFree synchronizes the device, which would invalidate an open capture.
        refuse_while_capturing(device_capturing(device), device, "freeing device memory");
        gpu_check(gpuFree(ptr), OAR_GPU_API_PREFIX "Free");
        return;
      case OAR_MEM_PINNED_HOST:
        gpu_check(gpuFreeHost(ptr), OAR_GPU_API_PREFIX "FreeHost");
        return;
      case OAR_MEM_HOST:
        std::free(ptr);
        return;
    }
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "gpu: free of unknown memory kind " + std::to_string(kind));
  });
}
OarError* mem_set(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream stream) {
  return guard([&] {
    check_device(device);
    set_device(device);
    auto s = reinterpret_cast<gpuStream_t>(stream);
    if (!s) refuse_while_capturing(device_capturing(device), device, "a synchronous memset");
    gpu_check(gpuMemsetAsync(ptr, value, bytes, s), OAR_GPU_API_PREFIX "MemsetAsync");
    if (!s) {
      gpu_check(gpuStreamSynchronize(nullptr), OAR_GPU_API_PREFIX "StreamSynchronize");
      raise_device_error(device);
    }
  });
}
OarError* mem_copy(int32_t device, void* dst, OarMemLocation dst_loc, const void* src, OarMemLocation src_loc,
                   uint64_t bytes, OarStream stream) {
  return guard([&] {
    if (bytes == 0) return;
    const bool host_only = dst_loc.kind != OAR_MEM_DEVICE && src_loc.kind != OAR_MEM_DEVICE;
    auto s = reinterpret_cast<gpuStream_t>(stream);
    if (host_only && !s) {
      std::memcpy(dst, src, bytes);
      return;
    }
    check_device(device);
    set_device(device);
    if (!s)
      refuse_while_capturing(device_capturing(device), device, "a synchronous memcpy");
    else if (dst_loc.kind == OAR_MEM_HOST || src_loc.kind == OAR_MEM_HOST)
      // CUDA cannot capture pageable copies: a copy to it needs a host wait, a copy from it would fix
      // the bytes of the capture in every replay.
      refuse_while_capturing(stream_capturing(s), device,
                             dst_loc.kind == OAR_MEM_HOST ? "a memcpy to pageable host memory"
                                                          : "a memcpy from pageable host memory");
    // Unified addressing: the runtime knows where each pointer lives; one call serves every direction.
    gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, s), OAR_GPU_API_PREFIX "MemcpyAsync");
    if (!s) {
      gpu_check(gpuStreamSynchronize(nullptr), OAR_GPU_API_PREFIX "StreamSynchronize");
      raise_device_error(device);
    }
  });
}

// ---- stream table --------------------------------------------------------------------------------------
OarError* stream_create(int32_t device, int32_t priority, OarStream* stream) {
  return guard([&] {
    check_device(device);
    set_device(device);
    int least = 0, greatest = 0;
    gpu_check(gpuDeviceGetStreamPriorityRange(&least, &greatest),
              OAR_GPU_API_PREFIX "DeviceGetStreamPriorityRange");
    // oar: larger = more urgent; CUDA: smaller (negative) = more urgent.
    const int p = std::clamp(-priority, greatest, least);
    gpuStream_t s = nullptr;
    gpu_check(gpuStreamCreateWithPriority(&s, gpuStreamNonBlocking, p),
              OAR_GPU_API_PREFIX "StreamCreateWithPriority");
    *stream = reinterpret_cast<OarStream>(s);
  });
}
OarError* stream_destroy(int32_t device, OarStream stream) {
  return guard([&] {
    set_device(device);
    // Drain first: the core's pool reuses memory by stream handle, and CUDA may give this handle to the
    // next stream created.
    gpu_check(gpuStreamSynchronize(reinterpret_cast<gpuStream_t>(stream)),
              OAR_GPU_API_PREFIX "StreamSynchronize");
    gpu_check(gpuStreamDestroy(reinterpret_cast<gpuStream_t>(stream)), OAR_GPU_API_PREFIX "StreamDestroy");
  });
}
OarError* stream_synchronize(int32_t device, OarStream stream) {
  return guard([&] {
    set_device(device);
    refuse_while_capturing(
        stream ? stream_capturing(reinterpret_cast<gpuStream_t>(stream)) : device_capturing(device), device,
        "stream synchronize");
    if (!stream)
      gpu_check(gpuDeviceSynchronize(), OAR_GPU_API_PREFIX "DeviceSynchronize");
    else
      gpu_check(gpuStreamSynchronize(reinterpret_cast<gpuStream_t>(stream)),
                OAR_GPU_API_PREFIX "StreamSynchronize");
    raise_device_error(device);
  });
}
OarError* stream_query(int32_t device, OarStream stream, int32_t* done) {
  return guard([&] {
    set_device(device);
    refuse_while_capturing(stream_capturing(reinterpret_cast<gpuStream_t>(stream)), device, "stream query");
    gpuError_t e = gpuStreamQuery(reinterpret_cast<gpuStream_t>(stream));
    if (e == gpuErrorNotReady) {
      *done = 0;
      return;
    }
    gpu_check(e, OAR_GPU_API_PREFIX "StreamQuery");
    *done = 1;
    raise_device_error(device);
  });
}
OarError* stream_wait_event(int32_t device, OarStream stream, OarEvent event) {
  return guard([&] {
    set_device(device);
    gpu_check(
        gpuStreamWaitEvent(reinterpret_cast<gpuStream_t>(stream), reinterpret_cast<gpuEvent_t>(event), 0),
        OAR_GPU_API_PREFIX "StreamWaitEvent");
  });
}
OarError* stream_launch_host_func(int32_t device, OarStream stream, void (*fn)(void*), void* arg) {
  return guard([&] {
    set_device(device);
    gpu_check(gpuLaunchHostFunc(reinterpret_cast<gpuStream_t>(stream), fn, arg),
              OAR_GPU_API_PREFIX "LaunchHostFunc");
  });
}

// Graph capture (ABI 1.3): relaxed mode, so that the core may allocate (cudaMalloc) while capturing;
// a graph is instantiated once at end_capture and launched as often as asked.
struct GpuGraph {
  int32_t device;
  gpuGraphExec_t exec;
};
OarError* stream_begin_capture(int32_t device, OarStream stream) {
  return guard([&] {
    check_device(device);
    set_device(device);
    OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT,
                  "gpu: begin_capture: the NULL (synchronous) stream cannot capture");
    auto s = reinterpret_cast<gpuStream_t>(stream);
    gpu_check(gpuStreamBeginCapture(s, gpuStreamCaptureModeRelaxed), OAR_GPU_API_PREFIX "StreamBeginCapture");
    Captures& c = captures();
    std::lock_guard<std::mutex> lk(c.mu);
    c.open.emplace_back(device, s);
  });
}
OarError* stream_end_capture(int32_t device, OarStream stream, OarGraph* graph) {
  return guard([&] {
    OAR_SDK_CHECK(graph, OAR_ERR_INVALID_ARGUMENT, "gpu: end_capture: graph is NULL");
    *graph = nullptr;
    set_device(device);
    auto s = reinterpret_cast<gpuStream_t>(stream);
    {
      Captures& c = captures();
      std::lock_guard<std::mutex> lk(c.mu);
      auto it = std::find(c.open.begin(), c.open.end(), std::make_pair(device, s));
      OAR_SDK_CHECK(it != c.open.end(), OAR_ERR_PRECONDITION,
                    "gpu:" << device << ": end_capture: the stream is not capturing (begin_capture first)");
      c.open.erase(it);
    }
    gpuGraph_t g = nullptr;
    gpu_check(gpuStreamEndCapture(s, &g), OAR_GPU_API_PREFIX "StreamEndCapture");
    gpuGraphExec_t exec = nullptr;
    gpuError_t e = gpuGraphInstantiate(&exec, g);
    (void)gpuGraphDestroy(g);  // the executable graph is independent of it
    gpu_check(e, OAR_GPU_API_PREFIX "GraphInstantiate");
    *graph = reinterpret_cast<OarGraph>(new GpuGraph{device, exec});
  });
}
OarError* stream_graph_launch(int32_t device, OarGraph graph, OarStream stream) {
  return guard([&] {
    OAR_SDK_CHECK(graph, OAR_ERR_INVALID_ARGUMENT, "gpu: graph_launch: graph is NULL");
    auto* g = reinterpret_cast<GpuGraph*>(graph);
    OAR_SDK_CHECK(g->device == device, OAR_ERR_INVALID_ARGUMENT,
                  "gpu: a graph captured on gpu:" << g->device << " launched on gpu:" << device);
    set_device(device);
    gpu_check(gpuGraphLaunch(g->exec, reinterpret_cast<gpuStream_t>(stream)),
              OAR_GPU_API_PREFIX "GraphLaunch");
  });
}
OarError* stream_graph_destroy(int32_t device, OarGraph graph) {
  return guard([&] {
    if (!graph) return;
    auto* g = reinterpret_cast<GpuGraph*>(graph);
    set_device(device);
    gpuError_t e = gpuGraphExecDestroy(g->exec);
    delete g;
    gpu_check(e, OAR_GPU_API_PREFIX "GraphExecDestroy");
  });
}

// ---- event table ---------------------------------------------------------------------------------------
OarError* event_create(int32_t device, uint32_t flags, OarEvent* event) {
  return guard([&] {
    check_device(device);
    set_device(device);
    gpuEvent_t e = nullptr;
    gpu_check(gpuEventCreateWithFlags(
                  &e, (flags & OAR_EVENT_DISABLE_TIMING) ? gpuEventDisableTiming : gpuEventDefault),
              OAR_GPU_API_PREFIX "EventCreate");
    *event = reinterpret_cast<OarEvent>(e);
  });
}
OarError* event_destroy(int32_t device, OarEvent event) {
  return guard([&] {
    set_device(device);
    gpu_check(gpuEventDestroy(reinterpret_cast<gpuEvent_t>(event)), OAR_GPU_API_PREFIX "EventDestroy");
  });
}
OarError* event_record(int32_t device, OarEvent event, OarStream stream) {
  return guard([&] {
    set_device(device);
    gpu_check(gpuEventRecord(reinterpret_cast<gpuEvent_t>(event), reinterpret_cast<gpuStream_t>(stream)),
              OAR_GPU_API_PREFIX "EventRecord");
  });
}
OarError* event_synchronize(int32_t device, OarEvent event) {
  return guard([&] {
    set_device(device);
    gpu_check(gpuEventSynchronize(reinterpret_cast<gpuEvent_t>(event)),
              OAR_GPU_API_PREFIX "EventSynchronize");
    raise_device_error(device);
  });
}
OarError* event_query(int32_t device, OarEvent event, int32_t* done) {
  return guard([&] {
    set_device(device);
    gpuError_t e = gpuEventQuery(reinterpret_cast<gpuEvent_t>(event));
    if (e == gpuErrorNotReady) {
      *done = 0;
      return;
    }
    gpu_check(e, OAR_GPU_API_PREFIX "EventQuery");
    *done = 1;
  });
}
OarError* event_elapsed_ms(int32_t device, OarEvent start, OarEvent end, float* ms) {
  return guard([&] {
    set_device(device);
    gpuError_t e =
        gpuEventElapsedTime(ms, reinterpret_cast<gpuEvent_t>(start), reinterpret_cast<gpuEvent_t>(end));
    if (e == gpuErrorNotReady || e == gpuErrorInvalidResourceHandle) {
      (void)gpuGetLastError();
      throw sdk::Error(OAR_ERR_PRECONDITION,
                       std::string("gpu: elapsed_ms needs both events recorded, complete and "
                                   "created with timing: ") +
                           gpuGetErrorString(e));
    }
    gpu_check(e, OAR_GPU_API_PREFIX "EventElapsedTime");
  });
}

}  // namespace

// Fills the device, memory, stream, event and profiler tables.
void fill_runtime_tables(sdk::Tables& t) {
  t.device.count = device_count;
  t.device.open = device_open;
  t.device.close = device_close;
  t.device.properties = device_properties;
  t.device.synchronize = device_synchronize;
  t.device.memory_info = device_memory_info;
  t.memory.allocate = mem_allocate;
  t.memory.free = mem_free;
  t.memory.memset = mem_set;
  t.memory.memcpy = mem_copy;
  t.stream.create = stream_create;
  t.stream.destroy = stream_destroy;
  t.stream.synchronize = stream_synchronize;
  t.stream.query = stream_query;
  t.stream.wait_event = stream_wait_event;
  t.stream.launch_host_func = stream_launch_host_func;
  t.stream.begin_capture = stream_begin_capture;
  t.stream.end_capture = stream_end_capture;
  t.stream.graph_launch = stream_graph_launch;
  t.stream.graph_destroy = stream_graph_destroy;
  t.event.create = event_create;
  t.event.destroy = event_destroy;
  t.event.record = event_record;
  t.event.synchronize = event_synchronize;
  t.event.query = event_query;
  t.event.elapsed_ms = event_elapsed_ms;
  t.profiler.start = profiler_start;
  t.profiler.stop = profiler_stop;
  t.profiler.flush = profiler_flush;
}

// The library versions the doctor shows ("CUDA runtime 13.0, driver 13.0").
std::string runtime_versions() {
  int rt = 0, drv = 0;
  (void)gpuRuntimeGetVersion(&rt);
  (void)gpuDriverGetVersion(&drv);
  char buf[128];
  std::snprintf(buf, sizeof(buf), OAR_GPU_VENDOR " runtime %d.%d, driver %d.%d", gpu_version_major(rt),
                gpu_version_minor(rt), gpu_version_major(drv), gpu_version_minor(drv));
  return buf;
}

}  // namespace oar_cuda
