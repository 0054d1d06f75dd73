#include <oar/core/allocator.h>
#include <oar/core/error.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace oar {

// The plugin's reason for the last failed raw allocation on this thread, set by the runtime's raw_alloc
// (framework/src/runtime.cc) and appended to the out-of-memory error, so the exception carries the
// plugin's own message (which plugin, which device, how much was free).
thread_local std::string t_raw_alloc_error;
void set_raw_alloc_error(std::string message) { t_raw_alloc_error = std::move(message); }

BestFitAllocator::BestFitAllocator(RawMemory raw, size_t chunk_bytes, size_t alignment)
    : raw_(std::move(raw)),
      chunk_bytes_(chunk_bytes),
      alignment_(std::max<size_t>(alignment, 1)),
      small_(kSmallBytes / std::max<size_t>(alignment, 1)) {}

BestFitAllocator::~BestFitAllocator() {
  // Live blocks at exit belong to tensors that outlive the runtime; their memory goes back anyway.
  std::lock_guard<std::mutex> lock(mu_);
  if (!chunks_.empty() && raw_.synchronize) raw_.synchronize();
  for (auto& [ptr, size] : chunks_) raw_.raw_free(ptr);
}

void* BestFitAllocator::allocate(size_t bytes, OarStream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return allocate_locked(bytes, stream);
}

void* BestFitAllocator::allocate_locked(size_t bytes, OarStream stream) {
  // No device has 2^62 bytes; the rounding below must not wrap for a request from a plugin's workspace.
  OAR_ENFORCE(bytes <= (size_t{1} << 62), ErrorCode::kOutOfMemory,
              "out of memory on " << raw_.device_name << ": cannot allocate " << bytes << " bytes");
  // Zero-byte tensors still get a distinct, valid address.
  size_t size = (std::max<size_t>(bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
  if (size <= kSmallBytes && small_stream_known_ && stream == small_stream_) {
    auto& cache = small_[size / alignment_ - 1];
    if (!cache.empty()) {
      char* ptr = cache.back();
      cache.pop_back();
      --num_small_;
      Block& b = blocks_.find(ptr)->second;
      b.cached = false;
      stats_.allocated += b.size;
      stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
      ++stats_.num_allocs;
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
  if (num_small_ > 0 && small_stream_known_ && stream == small_stream_ && size <= kSmallBytes) {
    const size_t tree_best = it == free_.end() ? SIZE_MAX : std::get<1>(*it);
    bool flushed = false;
    for (size_t s = size; s <= kSmallBytes && s < tree_best; s += alignment_)
      flushed |= flush_small_bin_locked(s / alignment_ - 1);
    if (flushed) it = fits();
  }
  if (it == free_.end() && num_small_ > 0) {
    flush_small_locked();
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
                                    << " bytes (allocated " << stats_.allocated << ", reserved "
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
  if (b.size - size >= alignment_) {  // split; the remainder stays free
    char* rest = ptr + size;
    blocks_[rest] = Block{b.size - size, true, false, b.chunk, stream};
    free_.insert(FreeKey{stream, b.size - size, rest});
    b.size = size;
  }
  b.free = false;
  b.stream = stream;
  stats_.allocated += b.size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.num_allocs;
  return ptr;
}

void BestFitAllocator::free(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.find(static_cast<char*>(p));
  OAR_ENFORCE(it != blocks_.end() && !it->second.free && !it->second.cached, ErrorCode::kInternal,
              "free of a pointer this allocator did not hand out (" << p << ") on " << raw_.device_name);
  Block& b = it->second;
  stats_.allocated -= b.size;
  if (!small_stream_known_) {
    small_stream_ = b.stream;
    small_stream_known_ = true;
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
  return stats_;
}

void BestFitAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
}

void BestFitAllocator::reset_peak_allocated() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated = stats_.allocated;
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
