// The pooled best-fit allocator, over raw memory that counts every call.
#include <gtest/gtest.h>
#include <oar/core/allocator.h>
#include <oar/core/error.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using oar::AllocatorStats;
using oar::BestFitAllocator;

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
constexpr size_t kAlign = 256;

// Raw memory from aligned_alloc/free that records every call. raw_alloc fails (nullptr) for requests
// above `limit` or beyond `capacity` bytes live, like a device that is out of memory.
struct CountingRaw {
  std::mutex mu;
  std::map<void*, size_t> live;     // chunk -> size
  std::vector<size_t> alloc_sizes;  // every raw_alloc request, in order
  std::atomic<int> allocs{0}, frees{0}, failed{0}, syncs{0};
  size_t limit = SIZE_MAX;     // largest single request that succeeds
  size_t capacity = SIZE_MAX;  // most bytes live at once

  oar::RawMemory make() {
    oar::RawMemory r;
    r.raw_alloc = [this](size_t bytes) -> void* {
      std::lock_guard<std::mutex> lock(mu);
      size_t in_use = 0;
      for (auto& kv : live) in_use += kv.second;
      if (bytes > limit || in_use + bytes > capacity) {
        ++failed;
        return nullptr;
      }
      void* p = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
      if (!p) return nullptr;
      live[p] = bytes;
      alloc_sizes.push_back(bytes);
      ++allocs;
      return p;
    };
    r.raw_free = [this](void* p) {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(live.count(p), 1u) << "raw_free of a pointer raw_alloc did not return";
      live.erase(p);
      ++frees;
      std::free(p);
    };
    r.synchronize = [this] { ++syncs; };
    r.device_name = "testdev:0";
    return r;
  }
  size_t live_bytes() {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (auto& kv : live) n += kv.second;
    return n;
  }
  size_t live_count() {
    std::lock_guard<std::mutex> lock(mu);
    return live.size();
  }
};

// A raw memory and an allocator over it. The raw memory outlives the allocator (the allocator's
// destructor returns chunks through it).
struct Fixture {
  CountingRaw raw;
  std::unique_ptr<BestFitAllocator> a;
  int base_allocs = 0;
  Fixture(size_t chunk, size_t align = kAlign) {
    a = std::make_unique<BestFitAllocator>(raw.make(), chunk, align);
    base_allocs = raw.allocs.load();  // a chunk pre-allocated at construction is allowed
  }
  int grew() const { return raw.allocs.load() - base_allocs; }
};

const OarStream kStreamA = reinterpret_cast<OarStream>(uintptr_t{0x1000});
const OarStream kStreamB = reinterpret_cast<OarStream>(uintptr_t{0x2000});

bool overlaps(const void* p, size_t pn, const void* q, size_t qn) {
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(q);
  return a < b + qn && b < a + pn;
}

TEST(BestFitAllocator, ReturnsAlignedDistinctMemory) {
  Fixture f(1 * MiB);
  EXPECT_EQ(f.a->alignment(), kAlign);
  EXPECT_EQ(f.a->chunk_bytes(), 1 * MiB);
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t n : {size_t{1}, size_t{100}, size_t{256}, size_t{257}, size_t{4000}, size_t{12345}}) {
    void* p = f.a->allocate(n, nullptr);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kAlign, 0u) << n << " bytes";
    std::memset(p, 0xab, n);  // usable for all n bytes
    for (auto& b : blocks) EXPECT_FALSE(overlaps(p, n, b.first, b.second));
    blocks.push_back({p, n});
  }
  for (auto& b : blocks) f.a->free(b.first);
  EXPECT_EQ(f.a->stats().allocated, 0u);
}

TEST(BestFitAllocator, ReusesAFreedBlock) {
  Fixture f(1 * MiB);
  void* p = f.a->allocate(4 * KiB, nullptr);
  int after_first = f.grew();
  EXPECT_LE(after_first, 1);
  f.a->free(p);
  void* q = f.a->allocate(4 * KiB, nullptr);
  EXPECT_EQ(q, p);
  EXPECT_EQ(f.grew(), after_first) << "a freed block must be reused without a new raw allocation";
  for (int i = 0; i < 100; ++i) {
    f.a->free(q);
    q = f.a->allocate(4 * KiB, nullptr);
  }
  EXPECT_EQ(f.grew(), after_first);
  EXPECT_EQ(f.raw.frees.load(), 0);
  f.a->free(q);
}

TEST(BestFitAllocator, BestFitPicksTheSmallestFittingBlock) {
  Fixture f(1 * MiB);
  void* a = f.a->allocate(4096, nullptr);
  void* s1 = f.a->allocate(256, nullptr);
  void* b = f.a->allocate(1024, nullptr);
  void* s2 = f.a->allocate(256, nullptr);
  void* c = f.a->allocate(2048, nullptr);
  void* s3 = f.a->allocate(256, nullptr);
  int grown = f.grew();
  // Three holes of 4096, 1024 and 2048 bytes, kept apart by the separators, plus the chunk's tail.
  f.a->free(a);
  f.a->free(b);
  f.a->free(c);
  EXPECT_EQ(f.a->allocate(1000, nullptr), b);  // 1024 is the smallest block >= 1000
  EXPECT_EQ(f.a->allocate(2048, nullptr), c);
  EXPECT_EQ(f.a->allocate(3000, nullptr), a);
  EXPECT_EQ(f.grew(), grown);
  for (void* p : {a, b, c, s1, s2, s3}) f.a->free(p);
  EXPECT_EQ(f.a->stats().allocated, 0u);
}

TEST(BestFitAllocator, SplitsAndCoalesces) {
  Fixture f(1 * MiB);
  void* a = f.a->allocate(1024, nullptr);
  void* b = f.a->allocate(1024, nullptr);
  void* c = f.a->allocate(1024, nullptr);
  void* d = f.a->allocate(1024, nullptr);  // keeps c from merging with the chunk's tail
  int grown = f.grew();
  EXPECT_EQ(grown, 1) << "four small blocks come from one chunk (split, not one chunk each)";
  size_t tail_only = f.a->num_free_blocks();
  EXPECT_EQ(tail_only, 1u) << "the rest of the chunk is one free block";
  f.a->free(a);
  f.a->free(c);
  EXPECT_EQ(f.a->num_free_blocks(), tail_only + 2);
  f.a->free(b);  // merges with both neighbours
  EXPECT_EQ(f.a->num_free_blocks(), tail_only + 1);
  void* abc = f.a->allocate(3072, nullptr);
  EXPECT_EQ(abc, std::min({a, b, c}));
  EXPECT_EQ(f.grew(), grown) << "the merged neighbours must hold the combined size";
  f.a->free(abc);
  f.a->free(d);
  EXPECT_EQ(f.a->num_free_blocks(), 1u) << "everything merges back into one block per chunk";
  EXPECT_EQ(f.a->stats().allocated, 0u);
}

TEST(BestFitAllocator, GrowsByChunks) {
  const size_t chunk = 64 * KiB;
  Fixture f(chunk);
  std::vector<void*> ps;
  for (int i = 0; i < 16; ++i) ps.push_back(f.a->allocate(8 * KiB, nullptr));  // 128 KiB: two chunks
  EXPECT_EQ(f.grew(), 2);
  {
    std::lock_guard<std::mutex> lock(f.raw.mu);
    for (size_t s : f.raw.alloc_sizes) EXPECT_EQ(s, chunk) << "small requests grow by chunk_bytes";
  }
  AllocatorStats st = f.a->stats();
  EXPECT_EQ(st.reserved, f.raw.live_bytes());
  EXPECT_EQ(st.num_raw_allocs, static_cast<uint64_t>(f.raw.allocs.load()));

  // A request above chunk_bytes gets a chunk of its own, about its own size.
  const size_t big = 200 * KiB;
  int before = f.raw.allocs.load();
  void* p = f.a->allocate(big, nullptr);
  ASSERT_EQ(f.raw.allocs.load(), before + 1);
  size_t big_chunk;
  {
    std::lock_guard<std::mutex> lock(f.raw.mu);
    big_chunk = f.raw.alloc_sizes.back();
  }
  EXPECT_GE(big_chunk, big);
  EXPECT_LT(big_chunk, big + chunk);
  std::memset(p, 1, big);
  // Its chunk holds nothing else: once freed, release_cached gives exactly that chunk back.
  f.a->free(p);
  int frees = f.raw.frees.load();
  f.a->release_cached();
  EXPECT_EQ(f.raw.frees.load(), frees + 1);
  EXPECT_EQ(f.a->stats().reserved, 2 * chunk);
  for (void* q : ps) f.a->free(q);
}

TEST(BestFitAllocator, ReuseIsPerStream) {
  Fixture f(1 * MiB);
  void* p = f.a->allocate(4096, kStreamA);
  f.a->free(p);
  // A block freed on stream A may still be in use by A's queued work: B must not get it.
  void* q = f.a->allocate(4096, kStreamB);
  EXPECT_FALSE(overlaps(p, 4096, q, 4096)) << "stream B got memory stream A freed";
  // A reuses its own block.
  void* r = f.a->allocate(4096, kStreamA);
  EXPECT_EQ(r, p);
  f.a->free(q);
  f.a->free(r);
  // The synchronous "stream" (nullptr) is a stream of its own too.
  void* s = f.a->allocate(4096, nullptr);
  EXPECT_FALSE(overlaps(s, 4096, p, 4096));
  EXPECT_FALSE(overlaps(s, 4096, q, 4096));
  f.a->free(s);
  EXPECT_EQ(f.a->stats().allocated, 0u);
}

TEST(BestFitAllocator, Statistics) {
  const size_t chunk = 1 * MiB;
  Fixture f(chunk);
  AllocatorStats s0 = f.a->stats();
  EXPECT_EQ(s0.allocated, 0u);
  EXPECT_EQ(s0.peak_allocated, 0u);
  void* a = f.a->allocate(1024, nullptr);
  void* b = f.a->allocate(2048, nullptr);
  AllocatorStats s1 = f.a->stats();
  EXPECT_EQ(s1.allocated, 3072u);
  EXPECT_EQ(s1.peak_allocated, 3072u);
  EXPECT_EQ(s1.num_allocs, s0.num_allocs + 2);
  EXPECT_EQ(s1.reserved, f.raw.live_bytes());
  EXPECT_GE(s1.reserved, chunk);
  EXPECT_GE(s1.peak_reserved, s1.reserved);
  EXPECT_EQ(s1.num_raw_allocs, static_cast<uint64_t>(f.raw.allocs.load()));

  f.a->free(a);
  AllocatorStats s2 = f.a->stats();
  EXPECT_EQ(s2.allocated, 2048u);
  EXPECT_EQ(s2.peak_allocated, 3072u);
  f.a->reset_peak();
  AllocatorStats s3 = f.a->stats();
  EXPECT_EQ(s3.peak_allocated, 2048u);
  EXPECT_EQ(s3.allocated, 2048u);

  void* c = f.a->allocate(512, nullptr);
  EXPECT_EQ(f.a->stats().peak_allocated, 2560u);
  f.a->free(b);
  f.a->free(c);
  AllocatorStats s4 = f.a->stats();
  EXPECT_EQ(s4.allocated, 0u);
  EXPECT_EQ(s4.peak_allocated, 2560u);
  EXPECT_EQ(s4.num_allocs, s0.num_allocs + 3);
  EXPECT_EQ(s4.reserved, s1.reserved) << "freeing keeps the memory cached";
}

TEST(BestFitAllocator, ReleaseCachedReturnsWholeFreeChunks) {
  const size_t chunk = 64 * KiB;
  Fixture f(chunk);
  void* a = f.a->allocate(48 * KiB, nullptr);
  void* b = f.a->allocate(48 * KiB, nullptr);  // does not fit a's chunk: a second one
  ASSERT_EQ(f.grew(), 2);
  f.a->free(a);
  int syncs = f.raw.syncs.load();
  f.a->release_cached();
  EXPECT_EQ(f.raw.frees.load(), 1) << "only the wholly free chunk goes back";
  EXPECT_GE(f.raw.syncs.load(), syncs + 1) << "device work must finish before a chunk goes back";
  AllocatorStats st = f.a->stats();
  EXPECT_EQ(st.reserved, chunk);
  EXPECT_EQ(st.num_raw_frees, 1u);
  EXPECT_EQ(f.raw.live_count(), 1u);
  std::memset(b, 7, 48 * KiB);  // b's chunk is still there

  f.a->free(b);
  f.a->release_cached();
  EXPECT_EQ(f.a->stats().reserved, 0u);
  EXPECT_EQ(f.raw.live_count(), 0u);
  EXPECT_EQ(f.raw.frees.load(), f.raw.allocs.load());
  EXPECT_EQ(f.a->stats().num_raw_frees, static_cast<uint64_t>(f.raw.frees.load()));

  // Still usable afterwards.
  void* c = f.a->allocate(1024, nullptr);
  ASSERT_NE(c, nullptr);
  f.a->free(c);
}

TEST(BestFitAllocator, DestructorReturnsEveryChunk) {
  CountingRaw raw;
  {
    BestFitAllocator a(raw.make(), 64 * KiB, kAlign);
    void* p = a.allocate(10 * KiB, nullptr);
    void* q = a.allocate(100 * KiB, kStreamA);
    a.free(p);
    a.free(q);
  }
  EXPECT_EQ(raw.live_count(), 0u);
  EXPECT_EQ(raw.frees.load(), raw.allocs.load());
}

TEST(BestFitAllocator, OutOfMemoryNamesDeviceAndSize) {
  Fixture f(1 * MiB);
  f.raw.limit = 2 * MiB;
  const size_t want = 3 * MiB;
  try {
    f.a->allocate(want, nullptr);
    FAIL() << "allocating more than the device has must throw";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kOutOfMemory) << e.what();
    std::string msg = e.what();
    EXPECT_NE(msg.find("testdev:0"), std::string::npos) << "message does not name the device: " << msg;
    bool names_size = msg.find(std::to_string(want)) != std::string::npos ||
                      msg.find("3.00 MiB") != std::string::npos || msg.find("3 MiB") != std::string::npos ||
                      msg.find("3.0 MiB") != std::string::npos;
    EXPECT_TRUE(names_size) << "message does not name the size: " << msg;
  }
  EXPECT_GE(f.raw.failed.load(), 1);
  EXPECT_EQ(f.a->stats().allocated, 0u);
  // The allocator keeps working after an out-of-memory error.
  void* p = f.a->allocate(4096, nullptr);
  ASSERT_NE(p, nullptr);
  f.a->free(p);
}

TEST(BestFitAllocator, OutOfMemoryReleasesCacheAndRetries) {
  // A device with 2 MiB in all: one cached free chunk of 1 MiB, then a 1.5 MiB request. The pool must
  // give the cached chunk back and retry (as PaddlePaddle's and PyTorch's pools do), not fail.
  Fixture f(1 * MiB);
  f.raw.capacity = 2 * MiB;
  void* p = f.a->allocate(512 * KiB, nullptr);
  f.a->free(p);
  void* big = nullptr;
  EXPECT_NO_THROW(big = f.a->allocate(1536 * KiB, nullptr));
  if (big) {
    std::memset(big, 3, 1536 * KiB);
    f.a->free(big);
  }
  EXPECT_LE(f.raw.live_bytes(), 2 * MiB);
}

TEST(BestFitAllocator, ThreadSafety) {
  const size_t chunk = 1 * MiB;
  Fixture f(chunk);
  constexpr int kThreads = 8;
  constexpr int kIters = 3000;
  std::atomic<int> corrupt{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      // Half the threads share the synchronous stream, the others each have their own.
      OarStream stream = t % 2 ? reinterpret_cast<OarStream>(uintptr_t(0x100 * (t + 1))) : nullptr;
      struct Live {
        unsigned char* p;
        size_t n;
        unsigned char pattern;
      };
      std::vector<Live> live;
      auto check_and_free = [&](size_t i) {
        Live l = live[i];
        for (size_t k = 0; k < l.n; ++k)
          if (l.p[k] != l.pattern) {
            ++corrupt;
            break;
          }
        f.a->free(l.p);
        live[i] = live.back();
        live.pop_back();
      };
      for (int it = 0; it < kIters; ++it) {
        bool do_alloc = live.empty() || (live.size() < 32 && rng() % 3 != 0);
        if (do_alloc) {
          size_t n = 1 + rng() % (rng() % 8 == 0 ? 300 * KiB : 16 * KiB);
          auto* p = static_cast<unsigned char*>(f.a->allocate(n, stream));
          if (!p) {
            ++corrupt;
            continue;
          }
          unsigned char pattern = static_cast<unsigned char>((t * 37 + it) | 1);
          std::memset(p, pattern, n);
          live.push_back({p, n, pattern});
        } else {
          check_and_free(rng() % live.size());
        }
      }
      while (!live.empty()) check_and_free(live.size() - 1);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupt.load(), 0) << "a block was overwritten by another thread: blocks overlapped";
  AllocatorStats st = f.a->stats();
  EXPECT_EQ(st.allocated, 0u);
  EXPECT_EQ(st.reserved, f.raw.live_bytes());
  f.a->release_cached();
  EXPECT_EQ(f.a->stats().reserved, 0u);
  EXPECT_EQ(f.raw.live_count(), 0u);
}

TEST(BestFitAllocator, FragmentationScenario) {
  const size_t chunk = 1 * MiB;
  Fixture f(chunk);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(f.a->allocate(16 * KiB, nullptr));  // fills one chunk
  EXPECT_EQ(f.grew(), 1);
  // Free every other block: 32 holes of 16 KiB, none adjacent.
  std::vector<void*> kept;
  for (int i = 0; i < 64; ++i) {
    if (i % 2 == 0)
      f.a->free(blocks[i]);
    else
      kept.push_back(blocks[i]);
  }
  EXPECT_EQ(f.a->num_free_blocks(), 32u);
  EXPECT_EQ(f.a->stats().allocated, 32 * 16 * KiB);
  // 32 KiB fits no hole although 512 KiB are free: the pool grows.
  void* wide = f.a->allocate(32 * KiB, nullptr);
  EXPECT_EQ(f.grew(), 2);
  // 16 KiB fits a hole exactly (best fit prefers it to the new chunk's tail).
  void* narrow = f.a->allocate(16 * KiB, nullptr);
  EXPECT_TRUE(std::find(blocks.begin(), blocks.end(), narrow) != blocks.end())
      << "a 16 KiB request must reuse a 16 KiB hole";
  EXPECT_EQ(f.grew(), 2);
  // Free everything: each chunk coalesces back into a single free block.
  for (void* p : kept) f.a->free(p);
  f.a->free(wide);
  f.a->free(narrow);
  EXPECT_EQ(f.a->num_free_blocks(), 2u);
  EXPECT_EQ(f.a->stats().allocated, 0u);
  // Now almost a whole chunk fits without growth.
  void* most = f.a->allocate(chunk - 4 * KiB, nullptr);
  EXPECT_EQ(f.grew(), 2);
  f.a->free(most);
  f.a->release_cached();
  EXPECT_EQ(f.a->stats().reserved, 0u);
  EXPECT_EQ(f.raw.frees.load(), f.raw.allocs.load());
}

}  // namespace

// ---- the per-thread cache of small blocks (free(ptr, bytes, stream), the tensors' path) ----------

TEST(BestFitAllocator, SizedFreeReusesThroughTheThreadCache) {
  Fixture f(1 * MiB);
  void* a = f.a->allocate(100, nullptr);
  f.a->free(a, 100, nullptr);  // the first free learns the default stream
  void* b = f.a->allocate(100, nullptr);
  f.a->free(b, 100, nullptr);             // now into this thread's cache
  void* c = f.a->allocate(200, nullptr);  // same rounded size (256): the cached block
  EXPECT_EQ(c, b);
  AllocatorStats st = f.a->stats();
  EXPECT_EQ(st.allocated, 256u);
  EXPECT_EQ(st.peak_allocated, 256u);
  EXPECT_EQ(st.num_allocs, 3u);
  void* d = f.a->allocate(1000, nullptr);  // another size misses the cache
  EXPECT_NE(d, c);
  EXPECT_EQ(f.a->stats().allocated, 256u + 1024u);
  EXPECT_EQ(f.a->stats().peak_allocated, 256u + 1024u);
  f.a->free(c, 200, nullptr);
  f.a->free(d, 1000, nullptr);
  EXPECT_EQ(f.a->stats().allocated, 0u);
  // Cached blocks are still memory of the pool: release_cached drains the cache and returns the chunk.
  EXPECT_EQ(f.a->num_free_blocks(), 1u) << "drained blocks merge back into one free chunk";
  f.a->release_cached();
  EXPECT_EQ(f.a->stats().reserved, 0u);
  EXPECT_EQ(f.raw.live_count(), 0u);
}

TEST(BestFitAllocator, ThreadCacheKeepsStreamsApart) {
  Fixture f(1 * MiB);
  OarStream s2 = reinterpret_cast<OarStream>(uintptr_t(0x200));
  void* a = f.a->allocate(300, nullptr);
  f.a->free(a, 300, nullptr);
  void* b = f.a->allocate(300, nullptr);
  f.a->free(b, 300, nullptr);  // cached for the default stream
  void* c = f.a->allocate(300, s2);
  EXPECT_NE(c, b) << "a block last used on the default stream must not go to another stream";
  f.a->free(c, 300, s2);
  EXPECT_EQ(f.a->stats().allocated, 0u);
}

TEST(BestFitAllocator, ThreadCacheAcrossThreads) {
  // Producers allocate small blocks and hand half of them to a consumer thread that frees them, so
  // blocks go into a cache other than the one they came from; stats stay exact throughout, and
  // release_cached, called while the threads' caches are full, gives every chunk back.
  Fixture f(256 * KiB);
  void* first = f.a->allocate(64, nullptr);
  f.a->free(first, 64, nullptr);
  constexpr int kProducers = 3;
  constexpr int kIters = 4000;
  std::mutex qmu;
  std::vector<std::pair<unsigned char*, size_t>> queue;
  std::atomic<int> producers_left{kProducers}, corrupt{0};
  std::atomic<uint64_t> max_seen{0};
  auto check = [&](unsigned char* p, size_t n) {
    for (size_t k = 1; k < n; ++k)
      if (p[k] != p[0]) return ++corrupt, void();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kProducers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(99 + t);
      std::vector<std::pair<unsigned char*, size_t>> mine;
      for (int it = 0; it < kIters; ++it) {
        size_t n = 1 + rng() % 4096;
        auto* p = static_cast<unsigned char*>(f.a->allocate(n, nullptr));
        std::memset(p, (t * 31 + it) & 0xff, n);
        if (rng() % 2) {
          std::lock_guard<std::mutex> lock(qmu);
          queue.emplace_back(p, n);
        } else {
          mine.emplace_back(p, n);
        }
        if (mine.size() > 16) {
          check(mine.front().first, mine.front().second);
          f.a->free(mine.front().first, mine.front().second, nullptr);
          mine.erase(mine.begin());
        }
      }
      for (auto& [p, n] : mine) {
        check(p, n);
        f.a->free(p, n, nullptr);
      }
      --producers_left;
    });
  }
  threads.emplace_back([&] {  // the consumer
    for (;;) {
      std::vector<std::pair<unsigned char*, size_t>> got;
      {
        std::lock_guard<std::mutex> lock(qmu);
        got.swap(queue);
      }
      for (auto& [p, n] : got) {
        check(p, n);
        f.a->free(p, n, nullptr);
      }
      if (got.empty() && producers_left.load() == 0) {
        std::lock_guard<std::mutex> lock(qmu);
        if (queue.empty()) break;
      }
      if (got.empty()) std::this_thread::yield();
    }
  });
  threads.emplace_back([&] {  // drains caches while the others run
    for (int i = 0; i < 50; ++i) {
      f.a->release_cached();
      max_seen = std::max<uint64_t>(max_seen.load(), f.a->stats().allocated);
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupt.load(), 0) << "two live blocks overlapped";
  AllocatorStats st = f.a->stats();
  EXPECT_EQ(st.allocated, 0u);
  EXPECT_EQ(st.num_allocs, 1u + kProducers * kIters);
  EXPECT_LE(max_seen.load(), st.peak_allocated);
  EXPECT_LE(st.peak_allocated, uint64_t{kProducers} * kIters * 4096);
  EXPECT_EQ(st.reserved, f.raw.live_bytes());
  f.a->release_cached();
  EXPECT_EQ(f.a->stats().reserved, 0u);
  EXPECT_EQ(f.raw.live_count(), 0u);
}

TEST(BestFitAllocator, ThreadCacheGoesBackWhenTheThreadExits) {
  Fixture f(1 * MiB);
  void* warm = f.a->allocate(512, nullptr);
  f.a->free(warm, 512, nullptr);
  std::thread([&] {
    std::vector<void*> ps;
    for (int i = 0; i < 20; ++i) ps.push_back(f.a->allocate(512, nullptr));
    for (void* p : ps) f.a->free(p, 512, nullptr);  // all into this thread's cache
  }).join();
  // The exited thread's cache went back into the tree and was unregistered (a drain from here
  // touches only live caches: under ASan a dangling one would be reported).
  EXPECT_EQ(f.a->num_free_blocks(), 1u);
  EXPECT_EQ(f.a->stats().allocated, 0u);
  EXPECT_EQ(f.a->stats().num_allocs, 21u);
  f.a->release_cached();
  EXPECT_EQ(f.raw.live_count(), 0u);
}

TEST(BestFitAllocator, ThreadOutlivingItsAllocator) {
  // A thread with a cache for an allocator that is destroyed before the thread exits: the thread's
  // exit leaves the gone allocator alone (run under ASan in CI), and a new allocator never takes
  // the old cache for its own.
  CountingRaw raw;
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;
  auto* a = new BestFitAllocator(raw.make(), 64 * KiB, kAlign);
  std::thread th([&] {
    void* p = a->allocate(100, nullptr);
    a->free(p, 100, nullptr);
    p = a->allocate(100, nullptr);
    a->free(p, 100, nullptr);  // cached in this thread
    std::unique_lock<std::mutex> lock(mu);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
    BestFitAllocator b(raw.make(), 64 * KiB, kAlign);
    void* q = b.allocate(100, nullptr);
    b.free(q, 100, nullptr);
    void* r = b.allocate(100, nullptr);
    EXPECT_EQ(r, q);
    b.free(r, 100, nullptr);
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return step == 1; });
  }
  delete a;
  {
    std::lock_guard<std::mutex> lock(mu);
    step = 2;
  }
  cv.notify_all();
  th.join();
  EXPECT_EQ(raw.live_count(), 0u);
}

TEST(BestFitAllocator, HugeRequestIsNotTakenForASmallOne) {
  // Rounding SIZE_MAX up would wrap to a small size: it must stay an out-of-memory error, also once
  // the thread cache holds blocks.
  Fixture f(1 * MiB);
  void* a = f.a->allocate(10, nullptr);
  f.a->free(a, 10, nullptr);
  void* b = f.a->allocate(10, nullptr);
  f.a->free(b, 10, nullptr);
  EXPECT_THROW(f.a->allocate(SIZE_MAX, nullptr), oar::Error);
  EXPECT_THROW(f.a->allocate(SIZE_MAX - 100, nullptr), oar::Error);
  EXPECT_EQ(f.a->stats().allocated, 0u);
}
