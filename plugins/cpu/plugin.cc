// The CPU plugin's entry points and its device, memory, stream and event tables.
//
// One device, "cpu". All memory kinds are ordinary host memory. Kernels and copies are synchronous: they
// run to completion on the calling thread (with OpenMP inside). Collectives (collectives.cc, Gloo) run on
// their stream's communication worker; kernels, copies and host functions on a stream first wait for its
// queued collectives, so every stream stays ordered. The profiler table times kernels and collectives.
#include <dnnl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>

#include "cpu_common.h"

namespace oar_cpu {

void register_amp_kernels(Registry& r);         // amp.cc: loss scaling for GradScaler
void register_random_ext_kernels(Registry& r);  // random_ext.cc: standard_gamma (framework/src/ops_random.cc)
void register_fft_kernels(Registry& r);         // fft.cc: the FFT ops on FFTW (dlopened)
void register_sort_kernels(Registry& r);        // sort.cc: sort (and argsort) and topk
void register_scan_kernels(Registry& r);        // scan.cc: logsumexp, p_norm, cummax/cummin, segment_pool
void register_detection_kernels(Registry& r);   // detection.cc: RoI pooling, deformable im2col, nms
void register_ctc_kernels(Registry& r);         // ctc.cc: CTC loss
void register_hsigmoid_kernels(Registry& r);    // hsigmoid.cc: hierarchical sigmoid loss
void register_sparse_kernels(Registry& r);      // sparse.cc: sparse x dense products (oar.sparse)
void register_complex_kernels(Registry& r);     // complex.cc: real, imag, conj, ... and complex unary kernels
void register_rnn_kernels(Registry& r);         // rnn.cc: the fused recurrent op (oneDNN)
void register_fused_kernels(Registry& r);       // fused.cc: the fused ops of the training passes
void fused_shutdown();                          // fused.cc: drops its cached oneDNN primitives
void register_attention_kernels(Registry& r);   // attention.cc: softmax_grad, fused_attention (+ grad)

// threads.cc: sets the calling thread's OpenMP count to the cores other processes leave free. Some of
// oneDNN's kernels fix their thread count when the primitive is created, so every cached oneDNN primitive
// (matmul.cc, fused.cc, conv.cc, rnn.cc) is keyed on oar::sdk::max_threads() too.
void adapt_threads();
int default_threads();                // the count without other processes' load (cgroup quota applied)
const std::string& threads_source();  // where it comes from: the affinity mask, the cgroup quota, ...

namespace {
// The plugin's profiler (its table: start, stop, flush): kernels and collectives as trace events.
oar::sdk::TaskProfiler& profiler() {
  static auto* p = new oar::sdk::TaskProfiler();  // never destroyed: kernels may run during exit
  return *p;
}

// A registered kernel: its op name (for the trace) and body. Kept for the process's lifetime.
struct NamedKernel {
  std::string op;
  oar::sdk::KernelBody body;
};

// Every cpu kernel's C entry: the collectives queued on its stream finish first (their outputs may be its
// inputs); a stream without collectives costs one atomic load, and so does the profiler when off.
OarError* kernel_entry(OarKernelContext* ctx, void* user_data) {
  const auto* k = static_cast<const NamedKernel*>(user_data);
  return oar::sdk::guard([&] {
    oar::sdk::KernelContext c(ctx);
    comm_drain(c.stream());
    adapt_threads();
    oar::sdk::TaskProfiler& p = profiler();
    if (!p.on()) return k->body(c);
    const uint64_t t0 = oar::sdk::steady_ns();
    k->body(c);  // a kernel that throws is not recorded
    p.record(k->op.c_str(), "kernel", t0, oar::sdk::steady_ns(), 0, reinterpret_cast<uintptr_t>(c.stream()));
  });
}
}  // namespace

void Registry::add(const char* op, const std::vector<OarDType>& dtypes, oar::sdk::KernelBody body,
                   uint32_t flags) {
  static auto* kernels = new std::deque<NamedKernel>();  // never destroyed: kernels may run during exit
  try {
    kernels->push_back({op, body});
    reg_.add_raw(op, dtypes, &kernel_entry, &kernels->back(), flags);
    ++count_;
  } catch (const oar::sdk::Error& e) {
    oar::sdk::log(OAR_LOG_WARNING, std::string("cpu: kernel for '") + op + "' not registered: " + e.what());
  }
}

namespace {

using oar::sdk::guard;

constexpr uint64_t kAlignment = 64;

void check_device(int32_t device) {
  OAR_SDK_CHECK(device == 0, OAR_ERR_INVALID_ARGUMENT,
                "cpu: no device " << device << " (the cpu plugin has one device, 0)");
}

// MemTotal / MemAvailable from /proc/meminfo (bytes), sysconf where it is missing.
void host_memory(uint64_t* free_bytes, uint64_t* total_bytes) {
  uint64_t total = 0, avail = 0;
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kb;
  std::string unit;
  while (f >> key >> kb) {
    std::getline(f, unit);
    if (key == "MemTotal:") total = kb * 1024;
    if (key == "MemAvailable:") avail = kb * 1024;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (!total) total = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page;
  if (!avail) avail = static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
  if (free_bytes) *free_bytes = avail;
  if (total_bytes) *total_bytes = total;
}

// ---- device table ------------------------------------------------------------------------------------
OarError* device_count(int32_t* count) {
  return guard([&] { *count = 1; });
}
OarError* device_open(int32_t device) {
  return guard([&] { check_device(device); });
}
OarError* device_close(int32_t device) {
  return guard([&] { check_device(device); });
}
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  return guard([&] {
    check_device(device);
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    // The thread count and its source, for the doctor and users in containers (decision 129).
    std::snprintf(p.name, sizeof(p.name), "cpu, OpenMP threads: %d (%s)", default_threads(),
                  threads_source().c_str());
    host_memory(nullptr, &p.total_memory);
    // Several ranks may share the one cpu device (Gloo ranks are processes or threads; decision 51).
    p.capabilities =
        OAR_CAP_HOST_ACCESSIBLE | OAR_CAP_FP16 | OAR_CAP_BF16 | OAR_CAP_FP64 | OAR_CAP_SHARED_DEVICE_RANKS;
    p.alloc_alignment = kAlignment;
    p.alloc_chunk_bytes = 0;
    p.compute_units = default_threads();
    p.max_streams = 0;
    oar::sdk::fill_sized(props, p);
  });
}
OarError* device_synchronize(int32_t device);  // with the streams below
OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  return guard([&] {
    check_device(device);
    host_memory(free_bytes, total_bytes);
  });
}

// ---- memory table ------------------------------------------------------------------------------------
// Every kind is host memory on the cpu device, so `device` and `kind` only get validated.
void check_kind(int32_t kind) {
  OAR_SDK_CHECK(kind >= OAR_MEM_HOST && kind <= OAR_MEM_UNIFIED, OAR_ERR_INVALID_ARGUMENT,
                "cpu: unknown memory kind " << kind);
}

OarError* mem_allocate(int32_t, int32_t kind, uint64_t bytes, void** ptr) {
  return guard([&] {
    check_kind(kind);
    OAR_SDK_CHECK(bytes <= (uint64_t{1} << 62), OAR_ERR_OUT_OF_MEMORY,
                  "cpu: out of memory allocating " << bytes << " bytes");  // and the rounding can't wrap
    // aligned_alloc wants a multiple of the alignment; 0 bytes still gets a unique pointer.
    const uint64_t n = (std::max<uint64_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, n);
    OAR_SDK_CHECK(p != nullptr, OAR_ERR_OUT_OF_MEMORY, "cpu: out of memory allocating " << bytes << " bytes");
#ifdef MADV_HUGEPAGE
    // Big tensors: ask for transparent huge pages (fewer page faults and TLB misses).
    constexpr uint64_t kHuge = 2u << 20;
    if (n >= 2 * kHuge) {
      uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
      uintptr_t e = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
      if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
    }
#endif
    *ptr = p;
  });
}
OarError* mem_free(int32_t, int32_t kind, void* ptr) {
  return guard([&] {
    check_kind(kind);
    std::free(ptr);
  });
}
OarError* mem_set(int32_t, void* ptr, int32_t value, uint64_t bytes, OarStream stream) {
  return guard([&] {
    comm_drain(stream);
    std::memset(ptr, value, bytes);
  });
}
OarError* mem_copy(int32_t, void* dst, OarMemLocation dst_loc, const void* src, OarMemLocation src_loc,
                   uint64_t bytes, OarStream stream) {
  return guard([&] {
    comm_drain(stream);
    check_kind(dst_loc.kind);
    check_kind(src_loc.kind);
    if (bytes == 0 || dst == src) return;
    // Copies of a few MiB and more are split into one piece per thread: one core does not saturate
    // memory bandwidth (measured: 2 threads copy 4-64 MiB about 1.8x faster than one).
    constexpr uint64_t kPiece = 1u << 20;
    const int64_t parts = static_cast<int64_t>(std::min<uint64_t>(oar::sdk::max_threads(), bytes / kPiece));
    if (parts <= 1) {
      std::memcpy(dst, src, bytes);
      return;
    }
    const uint64_t step = (bytes / parts + 63) / 64 * 64;
    oar::sdk::parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const uint64_t b = i * step, e = std::min<uint64_t>(bytes, b + step);
        if (b < e) std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
      }
    });
  });
}

// ---- streams and events --------------------------------------------------------------------------------
// An event's latest record: complete at once on a stream with nothing queued, else when its
// communication worker reaches it.
struct CpuEvent {
  uint32_t flags;
  std::mutex mu;
  std::shared_ptr<oar::sdk::EventPoint> point;  // null until recorded
  std::shared_ptr<oar::sdk::EventPoint> latest() {
    std::lock_guard<std::mutex> lk(mu);
    return point;
  }
};

}  // namespace
void collectives_shutdown();  // collectives.cc
namespace {

// Every live stream that has a communication worker, for device_synchronize.
std::mutex g_streams_mu;
std::set<CpuStream*>& comm_streams() {
  static auto* s = new std::set<CpuStream*>();
  return *s;
}
// The worker of a stream, or null when it never ran a collective.
oar::sdk::WorkerStream* queue_of(OarStream stream) {
  return stream ? reinterpret_cast<CpuStream*>(stream)->queue.load(std::memory_order_acquire) : nullptr;
}

OarError* stream_create(int32_t device, int32_t priority, OarStream* stream) {
  return guard([&] {
    check_device(device);
    auto* s = new CpuStream();
    s->priority = priority;
    *stream = reinterpret_cast<OarStream>(s);
  });
}
OarError* stream_destroy(int32_t, OarStream stream) {
  return guard([&] {
    auto* s = reinterpret_cast<CpuStream*>(stream);
    if (s->comm) {
      {
        std::lock_guard<std::mutex> lk(g_streams_mu);
        comm_streams().erase(s);
      }
      s->comm->shutdown();  // runs what is queued, then joins
    }
    delete s;
  });
}
OarError* stream_synchronize(int32_t, OarStream stream) {
  return guard([&] { comm_drain(stream); });
}
OarError* stream_query(int32_t, OarStream stream, int32_t* done) {
  return guard([&] {
    oar::sdk::WorkerStream* q = queue_of(stream);
    *done = !q || q->idle();
  });
}
// Kernels on `stream` run on the host after this returns, so the host waits; a communication worker
// with queued work waits in its queue instead (the host goes on).
OarError* stream_wait_event(int32_t, OarStream stream, OarEvent event) {
  return guard([&] {
    auto point = reinterpret_cast<CpuEvent*>(event)->latest();
    if (!point || point->is_done()) return;
    oar::sdk::WorkerStream* q = queue_of(stream);
    if (q && !q->idle() && !q->is_current_thread())
      q->enqueue({[point] { point->wait(); }, "wait_event", "sync"});
    else
      point->wait();
  });
}
OarError* stream_launch_host_func(int32_t, OarStream stream, void (*fn)(void*), void* arg) {
  return guard([&] {
    oar::sdk::WorkerStream* q = queue_of(stream);
    if (q && !q->idle() && !q->is_current_thread())
      q->enqueue({[fn, arg] { fn(arg); }, "host_func", "host"});
    else
      fn(arg);  // everything queued before it is already done
  });
}

OarError* event_create(int32_t device, uint32_t flags, OarEvent* event) {
  return guard([&] {
    check_device(device);
    auto* e = new CpuEvent();
    e->flags = flags;
    *event = reinterpret_cast<OarEvent>(e);
  });
}
OarError* event_destroy(int32_t, OarEvent event) {
  return guard([&] { delete reinterpret_cast<CpuEvent*>(event); });
}
OarError* event_record(int32_t, OarEvent event, OarStream stream) {
  return guard([&] {
    auto* e = reinterpret_cast<CpuEvent*>(event);
    auto point = std::make_shared<oar::sdk::EventPoint>();
    oar::sdk::WorkerStream* q = queue_of(stream);
    if (q && !q->idle() && !q->is_current_thread())
      q->enqueue({[point] { point->complete(); }, "event_record", "sync"});
    else
      point->complete();
    std::lock_guard<std::mutex> lk(e->mu);
    e->point = point;
  });
}
OarError* event_synchronize(int32_t, OarEvent event) {
  return guard([&] {
    if (auto p = reinterpret_cast<CpuEvent*>(event)->latest()) p->wait();
  });
}
OarError* event_query(int32_t, OarEvent event, int32_t* done) {
  return guard([&] {
    auto p = reinterpret_cast<CpuEvent*>(event)->latest();
    *done = !p || p->is_done();
  });
}
OarError* event_elapsed_ms(int32_t, OarEvent start, OarEvent end, float* ms) {
  return guard([&] {
    auto* a = reinterpret_cast<CpuEvent*>(start);
    auto* b = reinterpret_cast<CpuEvent*>(end);
    OAR_SDK_CHECK(!(a->flags & OAR_EVENT_DISABLE_TIMING) && !(b->flags & OAR_EVENT_DISABLE_TIMING),
                  OAR_ERR_PRECONDITION, "cpu: elapsed_ms on an event created with timing disabled");
    auto pa = a->latest(), pb = b->latest();
    OAR_SDK_CHECK(pa && pb, OAR_ERR_PRECONDITION, "cpu: elapsed_ms on an event that was never recorded");
    OAR_SDK_CHECK(pa->is_done() && pb->is_done(), OAR_ERR_PRECONDITION,
                  "cpu: elapsed_ms on an event that has not completed");
    *ms = static_cast<float>((static_cast<double>(pb->time()) - static_cast<double>(pa->time())) / 1e6);
  });
}

OarError* device_synchronize(int32_t device) {
  return guard([&] {
    check_device(device);
    std::vector<CpuStream*> streams;
    {
      std::lock_guard<std::mutex> lk(g_streams_mu);
      streams.assign(comm_streams().begin(), comm_streams().end());
    }
    for (CpuStream* s : streams) comm_drain(reinterpret_cast<OarStream>(s));
  });
}

const OarDeviceTable kDeviceTable = {sizeof(OarDeviceTable), device_count,      device_open,
                                     device_close,           device_properties, device_synchronize,
                                     device_memory_info};
const OarMemoryTable kMemoryTable = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_set, mem_copy};
const OarStreamTable kStreamTable = {sizeof(OarStreamTable), stream_create, stream_destroy,
                                     stream_synchronize,     stream_query,  stream_wait_event,
                                     stream_launch_host_func};
const OarEventTable kEventTable = {sizeof(OarEventTable), event_create, event_destroy,   event_record,
                                   event_synchronize,     event_query,  event_elapsed_ms};

OarError* profiler_start() {
  return guard([] {
    profiler().clear();
    profiler().set(true);
  });
}
OarError* profiler_stop() {
  return guard([] { profiler().set(false); });
}
OarError* profiler_flush() {
  return guard([] { profiler().flush(); });
}
const OarProfilerTable kProfilerTable = {sizeof(OarProfilerTable), profiler_start, profiler_stop,
                                         profiler_flush};

void shutdown() {
  collectives_shutdown();  // first: a worker blocked on a peer gets out
  std::vector<CpuStream*> streams;
  {
    std::lock_guard<std::mutex> lk(g_streams_mu);
    streams.assign(comm_streams().begin(), comm_streams().end());
  }
  for (CpuStream* s : streams) s->comm->shutdown();
  matmul_shutdown();
  fused_shutdown();
}

OarCollectiveTable make_collective_table() {
  OarCollectiveTable t{};
  fill_collective_table(t);
  return t;
}
const OarCollectiveTable kCollectiveTable = make_collective_table();

const char* onednn_version() {
  static const std::string v = [] {
    const dnnl_version_t* d = dnnl_version();
    std::ostringstream os;
    os << "oneDNN " << d->major << "." << d->minor << "." << d->patch;
    return os.str();
  }();
  return v.c_str();
}

}  // namespace

oar::sdk::WorkerStream* comm_queue(OarStream stream) {
  auto* s = reinterpret_cast<CpuStream*>(stream);
  if (auto* q = s->queue.load(std::memory_order_acquire)) return q;
  std::lock_guard<std::mutex> lk(s->mu);
  if (!s->comm) {
    oar::sdk::WorkerOptions o;
    o.plugin = "cpu";
    s->comm = std::make_unique<oar::sdk::WorkerStream>(0, reinterpret_cast<uintptr_t>(s), o, &profiler());
    s->queue.store(s->comm.get(), std::memory_order_release);
    std::lock_guard<std::mutex> g(g_streams_mu);
    comm_streams().insert(s);
  }
  return s->comm.get();
}

void comm_drain(OarStream stream) {
  oar::sdk::WorkerStream* q = queue_of(stream);
  if (!q || q->is_current_thread()) return;
  q->wait_idle();
  oar::sdk::StoredError e = q->take_error();
  if (e.set) throw oar::sdk::Error(e.code, e.message);
}

}  // namespace oar_cpu

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  return oar::sdk::answer_query(info, {"cpu", "cpu", "0.1.0", oar_cpu::onednn_version(), 100});
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,
                                                       OarRegistrar* registrar, OarPluginTables* tables) {
  return oar::sdk::run_init(services, tables, "cpu", [&](OarPluginTables& t) {
    using namespace oar_cpu;
    Registry r(registrar);
    register_binary_kernels(r);
    register_compare_kernels(r);
    register_unary_kernels(r);
    register_reduce_kernels(r);
    register_matmul_kernels(r);
    register_cast_kernels(r);
    register_misc_kernels(r);
    register_math_ext_kernels(r);
    register_manip_kernels(r);
    register_sort_kernels(r);
    register_conv_kernels(r);
    register_nn_kernels(r);
    register_batch_norm_kernels(r);
    register_linalg_kernels(r);
    register_fft_kernels(r);
    register_sparse_kernels(r);
    register_optim_kernels(r);
    register_random_ext_kernels(r);
    register_scan_kernels(r);
    register_amp_kernels(r);
    register_detection_kernels(r);
    register_ctc_kernels(r);
    register_hsigmoid_kernels(r);
    register_complex_kernels(r);
    register_rnn_kernels(r);
    register_fused_kernels(r);
    register_attention_kernels(r);
    std::ostringstream os;
    os << "cpu: " << r.count() << " kernels, " << onednn_version() << ", " << oar::sdk::max_threads()
       << " threads";
    oar::sdk::log(OAR_LOG_DEBUG, os.str());
    t.device = &kDeviceTable;
    t.memory = &kMemoryTable;
    t.stream = &kStreamTable;
    t.event = &kEventTable;
    t.collective = &kCollectiveTable;
    t.profiler = &kProfilerTable;
    t.shutdown = &shutdown;
  });
}
