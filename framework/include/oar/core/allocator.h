// Device memory for tensors. The plugin only offers raw allocate/free; the core pools it.
#pragma once

#include <oar/device_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace oar {

struct AllocatorStats {
  uint64_t allocated = 0;  // bytes handed out and not yet freed
  uint64_t reserved = 0;   // bytes obtained from the plugin
  uint64_t peak_allocated = 0;
  uint64_t peak_reserved = 0;
  uint64_t num_allocs = 0;      // successful allocate() calls
  uint64_t num_raw_allocs = 0;  // chunks obtained from the plugin
  uint64_t num_raw_frees = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Memory usable in the order of work on `stream` (nullptr for the synchronous stream).
  virtual void* allocate(size_t bytes, OarStream stream) = 0;
  virtual void free(void* ptr) = 0;
  // free() for a caller that knows what it asked for: `bytes` and `stream` exactly as given to the
  // allocate() that returned `ptr`. Lets an allocator skip looking the block up.
  virtual void free(void* ptr, size_t bytes, OarStream stream) {
    (void)bytes;
    (void)stream;
    free(ptr);
  }
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Returns fully unused chunks to the plugin.
  virtual void release_cached() = 0;
};

// The plugin's raw memory, as the allocator sees it. raw_alloc returns nullptr when out of memory.
struct RawMemory {
  std::function<void*(size_t)> raw_alloc;
  std::function<void(void*)> raw_free;
  std::function<void()> synchronize;  // waits for all device work, before chunks go back
  std::string device_name;            // for error messages
};

// A pooled, auto-growing best-fit allocator. It grows by chunks of at least `chunk_bytes` obtained
// from the plugin, hands out best-fitting free blocks (splitting them), merges neighbours on free,
// and only reuses a block for the stream it was last used on (stream-ordered reuse without events).
// Requests of `chunk_bytes` or more get a chunk of their own. Thread-safe.
// Freed blocks of up to kSmallBytes on the default (first used) stream go to an exact-size cache that
// the next request of that size takes without touching the tree (the eager hot path allocates many
// tiny tensors). A small request that misses its cache first moves the cached blocks that fit better
// than the tree's best into the tree, so it gets a best fit among single free blocks; all caches are
// merged back into the tree before the pool grows (cached neighbours that would merge into a better
// fit are not looked for on every miss: that full merge per miss made training loops thrash).
// In front of that sits a per-thread cache of small default-stream blocks, the eager hot path: a
// thread's allocate() of a small size first pops a block of exactly that size from its own cache,
// and free(ptr, bytes, stream) pushes there, neither touching the shared mutex nor the block map
// (the map still counts such blocks as handed out). A block freed on another thread simply joins that
// thread's cache (same stream, so stream-ordered reuse holds). Each thread cache has its own flag,
// taken by its owner on every use and by release_cached/growth when they drain every thread's cache
// into the tree; a thread's cache goes back into the tree when the thread exits. allocated and
// peak_allocated are atomics and num_allocs is summed from per-cache counters: stats stay exact.
class BestFitAllocator final : public Allocator {
 public:
  BestFitAllocator(RawMemory raw, size_t chunk_bytes, size_t alignment);
  ~BestFitAllocator() override;
  void* allocate(size_t bytes, OarStream stream) override;
  void free(void* ptr) override;
  void free(void* ptr, size_t bytes, OarStream stream) override;
  AllocatorStats stats() const override;
  void reset_peak() override;
  void reset_peak_allocated();  // one of the two peaks only (Paddle's reset_max_memory_allocated)
  void reset_peak_reserved();
  void release_cached() override;

  size_t alignment() const { return alignment_; }
  size_t chunk_bytes() const { return chunk_bytes_; }
  size_t num_free_blocks();  // after merging the small-block cache into the tree

  static constexpr size_t kSmallBytes = 4096;
  static constexpr size_t kThreadBinCap = 64;  // blocks per size a thread cache holds; more go to the pool

  struct ThreadCache;  // allocator.cc
  // A thread that exits hands its cache back: the blocks go into the tree, the cache is unregistered.
  void forget_thread_cache(ThreadCache* tc);

 private:
  struct Block {
    size_t size;
    bool free;    // in the best-fit tree
    bool cached;  // in the small-block cache (neither free in the tree nor handed out)
    char* chunk;  // start of the chunk it belongs to; blocks merge only within a chunk
    OarStream stream;
  };
  using FreeKey = std::tuple<OarStream, size_t, char*>;
  void* allocate_locked(size_t bytes, OarStream stream);
  void free_to_tree_locked(std::map<char*, Block>::iterator it);
  void flush_small_locked();
  bool flush_small_bin_locked(size_t bin);  // one exact-size cache into the tree; false when empty
  void release_cached_locked();
  ThreadCache* thread_cache();  // this thread's cache for this allocator, created on first use
  void drain_thread_cache_locked(ThreadCache* tc);
  void drain_thread_caches_locked();
  void count_alloc(size_t size) {
    const uint64_t now = allocated_.fetch_add(size, std::memory_order_relaxed) + size;
    num_allocs_.fetch_add(1, std::memory_order_relaxed);
    uint64_t peak = peak_allocated_.load(std::memory_order_relaxed);
    while (now > peak && !peak_allocated_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  bool small_default(size_t size, OarStream stream) const {
    return size <= kSmallBytes && small_stream_known_.load(std::memory_order_acquire) &&
           stream == small_stream_;
  }
  size_t round(size_t bytes) const {
    return (std::max<size_t>(bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
  }

  RawMemory raw_;
  size_t chunk_bytes_;
  size_t alignment_;
  mutable std::mutex mu_;
  std::map<char*, Block> blocks_;          // every block, by address
  std::set<FreeKey> free_;                 // free blocks by (stream, size, address): best fit per stream
  std::map<char*, size_t> chunks_;         // chunk start -> size
  std::vector<std::vector<char*>> small_;  // [size / alignment - 1] -> cached blocks of that size
  OarStream small_stream_ = nullptr;       // written once, before small_stream_known_ turns true
  std::atomic<bool> small_stream_known_{false};
  size_t num_small_ = 0;
  AllocatorStats stats_;  // reserved, peak_reserved and the raw counts (under mu_); the rest below
  std::atomic<uint64_t> allocated_{0}, peak_allocated_{0}, num_allocs_{0};
  const uint64_t id_;                        // never reused: thread caches find their allocator by it
  std::vector<ThreadCache*> thread_caches_;  // every thread's cache for this allocator (under mu_)
};

}  // namespace oar
