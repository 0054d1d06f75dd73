// An append-only table indexed by a dense id (op ids), whose elements never move: readers index it
// without a lock while a writer, serialised by its own lock, makes room for more. Chunk k holds
// kFirstChunk << k elements, so the table has no fixed capacity and never copies what it holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace oar {

template <typename T>
class StableTable {
 public:
  static constexpr size_t kFirstChunk = 256;

  StableTable() = default;
  StableTable(const StableTable&) = delete;
  StableTable& operator=(const StableTable&) = delete;
  ~StableTable() {
    for (auto& c : chunks_) delete[] c.load(std::memory_order_relaxed);
  }

  // Element i; it must have been made with grow_to(i + 1).
  T& operator[](size_t i) const {
    const auto [k, j] = locate(i);
    return chunks_[k].load(std::memory_order_acquire)[j];
  }
  // Whether element i exists (a lock-free reader may ask before indexing).
  bool has(size_t i) const { return find(i) != nullptr; }
  // Element i, or nullptr when it does not exist: has() and operator[] in one look-up (the hot paths).
  T* find(size_t i) const {
    const auto [k, j] = locate(i);
    if (k >= kChunks) return nullptr;
    T* chunk = chunks_[k].load(std::memory_order_acquire);
    return chunk ? chunk + j : nullptr;
  }
  // Makes elements [0, n) exist, value-initialised. Writers only, one at a time.
  void grow_to(size_t n) {
    if (n == 0) return;
    const size_t last = locate(n - 1).first;
    for (size_t k = 0; k <= last; ++k)
      if (!chunks_[k].load(std::memory_order_relaxed))
        chunks_[k].store(new T[kFirstChunk << k](), std::memory_order_release);
  }

 private:
  static constexpr size_t kChunks = 40;  // 256 * (2^40 - 1) elements: more than any id can reach
  // Chunk k covers [kFirstChunk * (2^k - 1), kFirstChunk * (2^(k+1) - 1)).
  static std::pair<size_t, size_t> locate(size_t i) {
    if (i < kFirstChunk) return {0, i};  // every built-in op's id: no division, no bit scan
    const uint64_t q = i / kFirstChunk + 1;
    const size_t k = 63 - static_cast<size_t>(__builtin_clzll(q));
    return {k, i - kFirstChunk * ((size_t{1} << k) - 1)};
  }
  mutable std::atomic<T*> chunks_[kChunks] = {};
};

}  // namespace oar
