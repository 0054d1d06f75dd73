#include <oar/core/allocator.h>
#include <oar/core/error.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

namespace oar {

// The plugin's reason for the last failed raw allocation on this thread, set by the runtime's raw_alloc
// (framework/src/runtime.cc) and appended to the out-of-memory error, so the exception carries the
// plugin's own message (which plugin, which device, how much was free).
thread_local std::string t_raw_alloc_error;
void set_raw_alloc_error(std::string message) { t_raw_alloc_error = std::move(message); }

// ---- per-thread caches ---------------------------------------------------------------------------
struct BestFitAllocator::ThreadCache {
  std::atomic<bool> busy{false};         // held by the owner thread on each use, or by a drain
  std::vector<std::vector<char*>> bins;  // [size / alignment - 1] -> free blocks of that size
  uint64_t owner_id;
  // Allocations served from here (written by the owner only, so no atomic add; stats() sums them
  // with num_allocs_ under the allocator's mutex, which also folds them in when the thread exits).
  std::atomic<uint64_t> allocs{0};

  void lock() {
    // Contended only by a drain (or the owner during one): let the holder run on a busy machine.
    while (busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  void unlock() { busy.store(false, std::memory_order_release); }
};

namespace {

// The allocators alive, by id: a thread that exits gives its caches back only to those. Never
// destroyed (threads may exit during static destruction).
struct LiveAllocators {
  std::mutex mu;
  std::unordered_map<uint64_t, BestFitAllocator*> by_id;
  uint64_t next_id = 1;
};
LiveAllocators& live_allocators() {
  static auto* live = new LiveAllocators;
  return *live;
}

// This thread's caches, one per allocator it used (owned here, given back at thread exit).
struct ThreadCaches {
  std::vector<std::unique_ptr<BestFitAllocator::ThreadCache>> caches;
  ~ThreadCaches();
};
thread_local ThreadCaches t_caches;
// The one used last, looked at first. Trivial and constant-initialised, so the hot path reads it
// without the guard a thread_local with a destructor needs.
struct LastCache {
  uint64_t id;
  BestFitAllocator::ThreadCache* cache;
};
thread_local LastCache t_last{0, nullptr};
// Set once this thread's caches were given back (its thread_locals are being destroyed): tensors freed
// after that, e.g. by static destructors at exit, take the locked path.
thread_local bool t_caches_gone = false;

// The bin of a rounded size: a shift when the alignment is a power of two (always, in practice), so
// the hot path has no division.
inline size_t bin_of(size_t size, size_t alignment) {
  return ((alignment & (alignment - 1)) == 0 ? size >> __builtin_ctzll(alignment) : size / alignment) - 1;
}
inline size_t round_up(size_t bytes, size_t alignment) {
  bytes = bytes ? bytes : 1;
  return (alignment & (alignment - 1)) == 0 ? (bytes + alignment - 1) & ~(alignment - 1)
                                            : (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

// Called at thread exit (ThreadCaches' destructor): blocks go back to their allocators' trees.
void give_back_thread_caches(std::vector<std::unique_ptr<BestFitAllocator::ThreadCache>>& caches) {
  auto& live = live_allocators();
  std::lock_guard<std::mutex> lock(live.mu);
  for (auto& tc : caches) {
    auto it = live.by_id.find(tc->owner_id);
    if (it != live.by_id.end()) it->second->forget_thread_cache(tc.get());
  }
  caches.clear();
}

namespace {
ThreadCaches::~ThreadCaches() {
  t_caches_gone = true;
  t_last = LastCache{0, nullptr};
  give_back_thread_caches(caches);
}
}  // namespace

// Inline (only this file calls it): the hot path is the first test; the rest runs once per thread and
// allocator, out of line.
inline __attribute__((always_inline)) BestFitAllocator::ThreadCache* BestFitAllocator::thread_cache() {
  LastCache& last = t_last;
  if (__builtin_expect(last.id == id_, 1)) return last.cache;
  return [this]() __attribute__((noinline))->ThreadCache* {
    LastCache& last = t_last;
    if (t_caches_gone) return nullptr;
    ThreadCaches& mine = t_caches;
    ThreadCache* found = nullptr;
    for (auto& tc : mine.caches)
      if (tc->owner_id == id_) found = tc.get();
    if (!found) {
      auto tc = std::make_unique<ThreadCache>();
      tc->bins.resize(kSmallBytes / alignment_);
      tc->owner_id = id_;
      found = tc.get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        thread_caches_.push_back(found);
      }
      mine.caches.push_back(std::move(tc));
    }
    last.id = id_;
    last.cache = found;
    return found;
  }
  ();
}

void BestFitAllocator::forget_thread_cache(ThreadCache* tc) {
  std::lock_guard<std::mutex> lock(mu_);
  drain_thread_cache_locked(tc);
  num_allocs_.fetch_add(tc->allocs.load(std::memory_order_relaxed), std::memory_order_relaxed);
  thread_caches_.erase(std::find(thread_caches_.begin(), thread_caches_.end(), tc));
}

// The blocks of one thread cache back into the tree (the block map counts them as handed out).
void BestFitAllocator::drain_thread_cache_locked(ThreadCache* tc) {
  tc->lock();
  for (size_t bin = 0; bin < tc->bins.size(); ++bin) {
    for (char* ptr : tc->bins[bin]) {
      auto it = blocks_.find(ptr);
      OAR_ENFORCE(it != blocks_.end() && !it->second.free && !it->second.cached &&
                      it->second.size == (bin + 1) * alignment_,
                  ErrorCode::kInternal,
                  "a thread's allocator cache holds "
                      << static_cast<void*>(ptr) << ", which is not a handed out block of "
                      << (bin + 1) * alignment_ << " bytes on " << raw_.device_name
                      << " (a free with the wrong size?)");
      free_to_tree_locked(it);
    }
    tc->bins[bin].clear();
  }
  tc->unlock();
}

void BestFitAllocator::drain_thread_caches_locked() {
  for (ThreadCache* tc : thread_caches_) drain_thread_cache_locked(tc);
}

BestFitAllocator::BestFitAllocator(RawMemory raw, size_t chunk_bytes, size_t alignment)
    : raw_(std::move(raw)),
      chunk_bytes_(chunk_bytes),
      alignment_(std::max<size_t>(alignment, 1)),
      small_(kSmallBytes / std::max<size_t>(alignment, 1)),
      id_([] {
        auto& live = live_allocators();
        std::lock_guard<std::mutex> lock(live.mu);
        return live.next_id++;
      }()) {
  auto& live = live_allocators();
  std::lock_guard<std::mutex> lock(live.mu);
  live.by_id[id_] = this;
}

BestFitAllocator::~BestFitAllocator() {
  {
    // Threads that exit from now on leave this allocator alone; their caches are dropped unused.
    auto& live = live_allocators();
    std::lock_guard<std::mutex> lock(live.mu);
    live.by_id.erase(id_);
  }
  // Live blocks at exit belong to tensors that outlive the runtime; their memory goes back anyway.
  std::lock_guard<std::mutex> lock(mu_);
  if (!chunks_.empty() && raw_.synchronize) raw_.synchronize();
  for (auto& [ptr, size] : chunks_) raw_.raw_free(ptr);
}

void* BestFitAllocator::allocate(size_t bytes, OarStream stream) {
  const size_t size = round_up(bytes, alignment_);
  ThreadCache* tc;
  // bytes is tested first: rounding a huge request could wrap to a small size.
  if (bytes <= kSmallBytes && small_default(size, stream) &&
      (tc = thread_cache())) {  // the hot path: no shared lock
    tc->lock();
    auto& bin = tc->bins[bin_of(size, alignment_)];
    if (!bin.empty()) {
      char* ptr = bin.back();
      bin.pop_back();
      tc->allocs.store(tc->allocs.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      tc->unlock();
      const uint64_t now = allocated_.fetch_add(size, std::memory_order_relaxed) + size;
      uint64_t peak = peak_allocated_.load(std::memory_order_relaxed);
      while (now > peak && !peak_allocated_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
      }
      return ptr;
    }
    tc->unlock();
  }
  std::lock_guard<std::mutex> lock(mu_);
  return allocate_locked(bytes, stream);
}

void* BestFitAllocator::allocate_locked(size_t bytes, OarStream stream) {
  // No device has 2^62 bytes; the rounding below must not wrap for a request from a plugin's workspace.
  OAR_ENFORCE(bytes <= (size_t{1} << 62), ErrorCode::kOutOfMemory,
              "out of memory on " << raw_.device_name << ": cannot allocate " << bytes << " bytes");
  // Zero-byte tensors still get a distinct, valid address.
  const size_t size = round(bytes);
  if (small_default(size, stream)) {
    auto& cache = small_[size / alignment_ - 1];
    if (!cache.empty()) {
      char* ptr = cache.back();
      cache.pop_back();
      --num_small_;
      Block& b = blocks_.find(ptr)->second;
      b.cached = false;
      count_alloc(b.size);
      return ptr;
    }
  }
  // An exact-size hit above is a best fit by definition. Otherwise cached blocks that fit better than
  // the tree's best go back into the tree first (flushing every cache on each miss made a training
  // loop push all its blocks through the tree again and again); when the tree then has nothing that
  // fits, all caches go back (merging with their neighbours) before the pool grows.
  auto fits = [&] {
    auto i = free_.lower_bound(FreeKey{stream, size, nullptr});
    return i != free_.end() && std::get<0>(*i) == stream ? i : free_.end();
  };
  auto it = fits();
  if (num_small_ > 0 && small_default(size, stream)) {
    const size_t tree_best = it == free_.end() ? SIZE_MAX : std::get<1>(*it);
    bool flushed = false;
    for (size_t s = size; s <= kSmallBytes && s < tree_best; s += alignment_)
      flushed |= flush_small_bin_locked(s / alignment_ - 1);
    if (flushed) it = fits();
  }
  if (it == free_.end() && (num_small_ > 0 || !thread_caches_.empty())) {
    flush_small_locked();  // the shared cache and every thread's
    it = fits();
  }
  char* ptr = nullptr;
  if (it != free_.end()) {
    ptr = std::get<2>(*it);
    free_.erase(it);
  } else {
    // Grow: a chunk of at least chunk_bytes, or exactly the request when it is that big.
    size_t chunk = size >= chunk_bytes_ ? size : chunk_bytes_;
    t_raw_alloc_error.clear();
    char* base = static_cast<char*>(raw_.raw_alloc(chunk));
    if (!base && !chunks_.empty()) {  // give cached chunks back and try once more
      release_cached_locked();
      base = static_cast<char*>(raw_.raw_alloc(chunk));
    }
    OAR_ENFORCE(base != nullptr, ErrorCode::kOutOfMemory,
                "out of memory on " << raw_.device_name << ": failed to allocate " << bytes
                                    << " bytes (allocated " << allocated_.load() << ", reserved "
                                    << stats_.reserved << " bytes)" << (t_raw_alloc_error.empty() ? "" : ": ")
                                    << t_raw_alloc_error);
    chunks_[base] = chunk;
    blocks_[base] = Block{chunk, true, false, base, stream};
    stats_.reserved += chunk;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
    ++stats_.num_raw_allocs;
    ptr = base;
  }
  Block& b = blocks_[ptr];
  // Split; the remainder stays free. Always, even below the alignment (a chunk's tail need not be a
  // multiple of it): a block handed out is exactly the rounded request, which lets free(ptr, bytes,
  // stream) know its size without a lookup.
  if (b.size > size) {
    char* rest = ptr + size;
    blocks_[rest] = Block{b.size - size, true, false, b.chunk, stream};
    free_.insert(FreeKey{stream, b.size - size, rest});
    b.size = size;
  }
  b.free = false;
  b.stream = stream;
  count_alloc(b.size);
  return ptr;
}

void BestFitAllocator::free(void* p, size_t bytes, OarStream stream) {
  if (!p) return;
  const size_t size = round_up(bytes, alignment_);
  ThreadCache* tc;
  // bytes is tested first: rounding a huge request could wrap to a small size.
  if (bytes <= kSmallBytes && small_default(size, stream) &&
      (tc = thread_cache())) {  // the hot path: no lookup, no shared lock
    tc->lock();
    auto& bin = tc->bins[bin_of(size, alignment_)];
    if (bin.size() < kThreadBinCap) {
      bin.push_back(static_cast<char*>(p));
      tc->unlock();
      allocated_.fetch_sub(size, std::memory_order_relaxed);
      return;
    }
    tc->unlock();
  }
  free(p);
}

void BestFitAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(static_cast<char*>(p));
  OAR_ENFORCE(it != blocks_.end() && !it->second.free && !it->second.cached, ErrorCode::kInternal,
              "free of a pointer this allocator did not hand out (" << p << ") on " << raw_.device_name);
  Block& b = it->second;
  allocated_.fetch_sub(b.size, std::memory_order_relaxed);
  if (!small_stream_known_.load(std::memory_order_relaxed)) {
    small_stream_ = b.stream;
    small_stream_known_.store(true, std::memory_order_release);
  }
  if (b.size <= kSmallBytes && b.stream == small_stream_) {
    b.cached = true;
    small_[b.size / alignment_ - 1].push_back(it->first);
    ++num_small_;
    return;
  }
  free_to_tree_locked(it);
}

bool BestFitAllocator::flush_small_bin_locked(size_t bin) {
  auto& cache = small_[bin];
  if (cache.empty()) return false;
  for (char* ptr : cache) {
    auto it = blocks_.find(ptr);
    it->second.cached = false;
    free_to_tree_locked(it);
  }
  num_small_ -= cache.size();
  cache.clear();
  return true;
}

void BestFitAllocator::flush_small_locked() {
  drain_thread_caches_locked();
  for (auto& cache : small_) {
    for (char* ptr : cache) {
      auto it = blocks_.find(ptr);
      it->second.cached = false;
      free_to_tree_locked(it);
    }
    cache.clear();
  }
  num_small_ = 0;
}

// Marks a block free in the tree, merging it with free neighbours of the same chunk and stream.
void BestFitAllocator::free_to_tree_locked(std::map<char*, Block>::iterator it) {
  Block& b = it->second;
  b.free = true;
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.free && next->second.chunk == b.chunk &&
      next->second.stream == b.stream) {
    free_.erase(FreeKey{next->second.stream, next->second.size, next->first});
    b.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.chunk == b.chunk && prev->second.stream == b.stream) {
      free_.erase(FreeKey{prev->second.stream, prev->second.size, prev->first});
      prev->second.size += b.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  free_.insert(FreeKey{it->second.stream, it->second.size, it->first});
}

AllocatorStats BestFitAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  AllocatorStats s = stats_;
  s.allocated = allocated_.load(std::memory_order_relaxed);
  s.peak_allocated = peak_allocated_.load(std::memory_order_relaxed);
  s.num_allocs = num_allocs_.load(std::memory_order_relaxed);
  for (const ThreadCache* tc : thread_caches_) s.num_allocs += tc->allocs.load(std::memory_order_relaxed);
  return s;
}

void BestFitAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_allocated_.store(allocated_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  stats_.peak_reserved = stats_.reserved;
}

void BestFitAllocator::reset_peak_allocated() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_allocated_.store(allocated_.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void BestFitAllocator::reset_peak_reserved() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_reserved = stats_.reserved;
}

size_t BestFitAllocator::num_free_blocks() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_small_locked();
  return free_.size();
}

void BestFitAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
}

void BestFitAllocator::release_cached_locked() {
  flush_small_locked();
  bool synced = false;
  for (auto it = chunks_.begin(); it != chunks_.end();) {
    auto b = blocks_.find(it->first);
    bool whole_free = b != blocks_.end() && b->second.free && b->second.size == it->second;
    if (!whole_free) {
      ++it;
      continue;
    }
    if (!synced && raw_.synchronize) {  // queued work may still touch memory that is free here
      raw_.synchronize();
      synced = true;
    }
    free_.erase(FreeKey{b->second.stream, b->second.size, b->first});
    blocks_.erase(b);
    raw_.raw_free(it->first);
    stats_.reserved -= it->second;
    ++stats_.num_raw_frees;
    it = chunks_.erase(it);
  }
}

}  // namespace oar
