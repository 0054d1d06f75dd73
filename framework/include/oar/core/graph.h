// Device graph capture (CUDA graphs, through ABI 1.3's OarStreamTable.begin_capture & co;
// docs/device_graph.md). A DeviceGraph records the work queued on its device's current stream between
// capture_begin and capture_end, and replay() queues it again: the same kernels on the same device addresses.
// So that those addresses stay valid and private, every storage created on the device while it captures comes
// from the graph's own memory pool (GraphPool), which lives until reset() and until the last storage from it
// dies; storages from outside the pool that captured kernels read are kept alive by the graph. What cannot be
// replayed is refused while capturing: a CPU fallback, a random op (its seed would be baked in), a copy
// between the capturing device and the host.
#pragma once

#include <oar/core/allocator.h>
#include <oar/core/place.h>
#include <oar/device_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace oar {

class Device;
class Storage;
struct OpDef;
class Tensor;

// The memory of one graph: a pooled allocator of its own over the device's raw memory, freed (chunks back
// to the plugin) when its last reference goes: the graph's own (dropped by reset) and one per storage.
struct GraphPool {
  GraphPool(RawMemory raw, size_t chunk_bytes, size_t alignment)
      : alloc(std::move(raw), chunk_bytes, alignment) {}
  void retain() { refs.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  BestFitAllocator alloc;
  std::atomic<int64_t> refs{1};
};

// Number of graphs capturing in the process: the dispatcher's and the copies' capture checks sit behind
// one relaxed load of it, so the eager path pays a predictable branch only.
extern std::atomic<int32_t> g_graph_captures;

class DeviceGraph {
 public:
  // The CPU device has no graph capture (its kernels run on the calling thread: nothing to record).
  explicit DeviceGraph(Place place);
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  Place place() const { return place_; }
  // Starts recording the device's current stream; one capture per device at a time.
  void capture_begin();
  // Ends it; the graph can then be replayed.
  void capture_end();
  // Ends a capture that failed half way: nothing recorded is kept (used on errors; never throws).
  void capture_abort() noexcept;
  bool capturing() const { return capturing_; }
  bool captured() const { return graph_ != nullptr; }
  // Queues the recorded work on the device's current stream (asynchronous, like any kernel).
  void replay();
  // Forgets the recorded work, the kept storages and the pool's reference (the pool's memory goes back to
  // the plugin once no tensor from it is alive). A graph can capture again after it.
  void reset();
  // The pool's statistics (zero before the first capture or after reset).
  AllocatorStats pool_stats() const;
  // Storages kept alive for replay (read by captured kernels, not from the pool).
  size_t num_kept() const;

  // The graph capturing on `device`, or nullptr.
  static DeviceGraph* capturing_on(const Device& device);

  // Dispatch's checks while any graph captures (g_graph_captures != 0): refuses a random op or a CPU
  // fallback on a capturing device and keeps the storages of the call's inputs alive.
  static void check_op(const OpDef& op, const Tensor* inputs, int32_t n_in, Place place);
  static void check_fallback(const OpDef& op, Place place, const std::string& why);
  // Refuses a copy between the host and a capturing device (Runtime::copy_bytes).
  static void check_copy(Place dst, Place src);

 private:
  void keep(const std::shared_ptr<Storage>& s);
  Place place_;
  Device* device_;
  OarStream stream_ = nullptr;  // the stream captured
  OarGraph graph_ = nullptr;
  GraphPool* pool_ = nullptr;
  bool capturing_ = false;
  mutable std::mutex mu_;  // kept_ (kernels may be dispatched from several threads while capturing)
  std::vector<std::shared_ptr<Storage>> kept_;
};

}  // namespace oar
