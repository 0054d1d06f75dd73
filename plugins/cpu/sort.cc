// CPU kernels of sort (values and positions: sort and argsort) and topk (framework/src/ops_manip.cc
// defines the ops). Every sort is stable: ties keep their order, as numpy's kind="stable".
//
// Each value becomes an unsigned key whose integer order is the value order (sort_key), stored with
// its position in one item: keys of up to 32 bits packed above a 32-bit position in a uint64 (one
// integer compare orders key then position), 64-bit keys in a 12-byte {key, position}. Rows of up to
// kRadixMin items sort by comparison; longer ones by MSD radix sort (sort_items). One long line is
// split over the threads by its highest varying digit first (a parallel scatter into buckets), then
// each bucket is sorted on the lower digits, buckets balanced over the threads by size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;

// An unsigned key whose integer order is the value order: NaN (any sign) after +inf, -0.0 equal to
// +0.0, signed values with the sign bit flipped, floats with the negative ones bit-inverted.
template <class T>
uint64_t sort_key(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else if constexpr (std::is_floating_point_v<T> || is_float_v<T>) {
    if constexpr (sizeof(T) == 8) {
      double d = static_cast<double>(v);
      uint64_t u;
      std::memcpy(&u, &d, 8);
      if (std::isnan(d)) u = 0x7ff8000000000000ull;
      if (d == 0) u = 0;  // -0.0 ties with +0.0
      return (u >> 63) ? ~u : (u | (1ull << 63));
    } else {
      float f = static_cast<float>(v);  // float16 / bfloat16 widen exactly
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (std::isnan(f)) u = 0x7fc00000u;
      if (f == 0) u = 0;
      return (u >> 31) ? static_cast<uint32_t>(~u) : (u | 0x80000000u);
    }
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<U>(static_cast<U>(v) ^ (U(1) << (sizeof(T) * 8 - 1)));
  } else {
    return static_cast<uint64_t>(v);
  }
}

// How many low bits of sort_key can differ for T (16-bit floats sort through their float32 bits).
template <class T>
constexpr int key_bits() {
  return 8 * static_cast<int>(sizeof(T) == 2 && !std::is_integral_v<T> ? 4 : sizeof(T));
}

// The value of T whose sort_key is k, and whether that value is exact: every key of an integer or bool
// decodes exactly; a float key does unless it is the key of zero (-0.0 shares it with +0.0) or of NaN
// (one key for every NaN), where the caller reads the input instead. Lets the sorted values be written
// in order from the keys rather than gathered from the input at random positions.
template <class T>
inline T key_value(uint64_t k, bool* exact) {
  if constexpr (std::is_same_v<T, bool>) {
    *exact = true;
    return k != 0;
  } else if constexpr (std::is_floating_point_v<T> || is_float_v<T>) {
    if constexpr (sizeof(T) == 8) {
      const uint64_t u = (k >> 63) ? (k & ~(1ull << 63)) : ~k;
      double d;
      std::memcpy(&d, &u, 8);
      *exact = k != (1ull << 63) && !(d != d);
      return static_cast<T>(d);
    } else {
      const uint32_t k32 = static_cast<uint32_t>(k);
      const uint32_t u = (k32 >> 31) ? (k32 & 0x7fffffffu) : ~k32;
      float f;
      std::memcpy(&f, &u, 4);
      *exact = k32 != 0x80000000u && !(f != f);
      return static_cast<T>(f);  // float16 / bfloat16 keys are their exact float32 widenings
    }
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    *exact = true;
    return static_cast<T>(static_cast<U>(static_cast<U>(k) ^ (U(1) << (sizeof(T) * 8 - 1))));
  } else {
    *exact = true;
    return static_cast<T>(k);
  }
}

// Keys of up to 32 bits above a 32-bit position.
struct Packed {
  using Item = uint64_t;
  static Item make(uint64_t key, uint32_t pos) { return (key << 32) | pos; }
  static uint64_t key(Item v) { return v >> 32; }
  static uint32_t pos(Item v) { return static_cast<uint32_t>(v); }
  static bool less(Item a, Item b) { return a < b; }
};

// 64-bit keys with a 32-bit position, 12 bytes (radix passes move memory: 25% less than 16).
struct Wide {
  struct __attribute__((packed)) Item {
    uint64_t key;
    uint32_t pos;
  };
  static Item make(uint64_t key, uint32_t pos) { return Item{key, pos}; }
  static uint64_t key(const Item& v) { return v.key; }
  static uint32_t pos(const Item& v) { return v.pos; }
  static bool less(const Item& a, const Item& b) { return a.key != b.key ? a.key < b.key : a.pos < b.pos; }
};

// Keys alone (sort's values_only: no positions wanted), 4 or 8 bytes an item: half or two thirds of the
// memory the radix passes move with positions. Equal keys are then equal values (the caller checks for
// -0.0 and NaN, whose keys are shared), so stability does not matter.
template <class U>
struct KeyOnly {
  using Item = U;
  static constexpr bool kKeysOnly = true;
  static Item make(uint64_t key, uint32_t) { return static_cast<U>(key); }
  static uint64_t key(Item v) { return v; }
  static uint32_t pos(Item) { return 0; }
  static bool less(Item a, Item b) { return a < b; }
};
template <class Tr, class = void>
struct keys_only : std::false_type {};
template <class Tr>
struct keys_only<Tr, std::void_t<decltype(Tr::kKeysOnly)>> : std::true_type {};

// Below this many items a comparison sort beats a radix pass (its histogram costs a fixed amount).
constexpr size_t kRadixMin = 256;

// The key bits [0, bits) that differ between items of a[0, n), as a mask.
template <class Tr>
uint64_t varying_bits(const typename Tr::Item* a, size_t n, int bits) {
  const uint64_t low = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  const uint64_t k0 = Tr::key(a[0]);
  uint64_t d = 0;
  for (size_t i = 1; i < n; ++i) d |= Tr::key(a[i]) ^ k0;
  return d & low;
}

// LSD radix sort of a[0, n) on `digits` digits of dbits bits from key bit `low` up (the key bits
// outside are equal in all items): every digit's histogram in one read, a digit that is the same in
// every key skipped, then one stable scatter per digit. Returns where the items are: a or tmp.
template <class Tr>
typename Tr::Item* lsd_items(typename Tr::Item* a, typename Tr::Item* tmp, size_t n, int low, int digits,
                             int dbits) {
  const size_t radix = size_t{1} << dbits, mask = radix - 1;
  std::vector<uint32_t> count(static_cast<size_t>(digits) * radix, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = Tr::key(a[i]) >> low;
    for (int d = 0; d < digits; ++d) ++count[d * radix + ((k >> (d * dbits)) & mask)];
  }
  for (int d = 0; d < digits; ++d) {
    uint32_t* c = count.data() + d * radix;
    if (std::find(c, c + radix, static_cast<uint32_t>(n)) != c + radix) continue;
    uint32_t sum = 0;
    for (size_t b = 0; b < radix; ++b) sum += std::exchange(c[b], sum);
    const int shift = low + d * dbits;
    for (size_t i = 0; i < n; ++i) tmp[c[(Tr::key(a[i]) >> shift) & mask]++] = a[i];
    std::swap(a, tmp);
  }
  return a;
}

// Sorts a[0, n) by key bits [0, bits) (higher key bits are equal in all items), stably: positions
// increase among equal keys on entry (as built), and every step keeps that. `tmp` has room for n
// items. Returns where the sorted items are: a or tmp.
// Keys whose varying bits fit in three digits: LSD radix (lsd_items). Wider: MSD radix, one scatter by
// the highest digit where the keys differ, then each bucket the same way on the bits below, down to
// comparison sorts of small buckets: random 64-bit keys take two scatters where LSD would take six,
// while LSD's streaming passes beat MSD's many small buckets on 32-bit keys.
template <class Tr>
typename Tr::Item* sort_items(typename Tr::Item* a, typename Tr::Item* tmp, size_t n, int bits) {
  using Item = typename Tr::Item;
  if (n < kRadixMin) {
    if (n <= 16) {  // insertion sort: small rows, the common case of many rows
      for (size_t i = 1; i < n; ++i) {
        Item v = a[i];
        size_t j = i;
        for (; j > 0 && Tr::less(v, a[j - 1]); --j) a[j] = a[j - 1];
        a[j] = v;
      }
    } else {
      std::sort(a, a + n, [](const Item& x, const Item& y) { return Tr::less(x, y); });
    }
    return a;
  }
  const uint64_t diff = varying_bits<Tr>(a, n, bits);
  if (diff == 0) return a;  // all keys equal: already in position order
  const int low = __builtin_ctzll(diff), high = 64 - __builtin_clzll(diff), width = high - low;
  // LSD when the varying bits fit in three digits: 8- or 11-bit digits, whichever moves the items
  // fewer times counting a histogram bin as one item (the buckets of a long line's first split carry
  // about 21 varying bits: two passes of 11 bits instead of three of 8 from about 4K items).
  const auto lsd_cost = [&](int d) { return ((width + d - 1) / d) * (n + (size_t{1} << d)); };
  if (width <= 24 || (width <= 33 && n >= (size_t{1} << 12))) {
    const int d = width > 24 || lsd_cost(11) < lsd_cost(8) ? 11 : 8;
    return lsd_items<Tr>(a, tmp, n, low, (width + d - 1) / d, d);
  }
  const int dbits = n < (size_t{1} << 16) ? 8 : 11;  // wider digits once n pays for their histogram
  const size_t radix = size_t{1} << dbits, mask = radix - 1;
  const int shift = high - dbits;
  std::vector<uint32_t> start(radix + 1, 0);
  for (size_t i = 0; i < n; ++i) ++start[((Tr::key(a[i]) >> shift) & mask) + 1];
  for (size_t b = 0; b < radix; ++b) start[b + 1] += start[b];
  std::vector<uint32_t> next(start.begin(), start.end() - 1);
  for (size_t i = 0; i < n; ++i) tmp[next[(Tr::key(a[i]) >> shift) & mask]++] = a[i];
  for (size_t b = 0; b < radix; ++b) {
    const size_t s = start[b], e = start[b + 1];
    if (e - s < 2) continue;
    const Item* r = sort_items<Tr>(tmp + s, a + s, e - s, shift);
    if (r != tmp + s) std::copy(r, r + (e - s), tmp + s);
  }
  return tmp;
}

// Two buffers of n items for sorting lines: per-thread ones kept between calls for short lines (no
// allocation per call), fresh ones for long lines (not kept alive after a one-off big sort). Not
// value-initialised: zeroing them would be one more pass over the memory.
template <class Item>
struct LineBuffers {
  static constexpr int64_t kKeep = int64_t{1} << 16;
  std::unique_ptr<Item[]> own;
  Item *a, *tmp;
  explicit LineBuffers(int64_t n) {
    thread_local std::unique_ptr<Item[]> keep;
    thread_local int64_t kept = 0;
    if (n > kKeep) {
      own.reset(new Item[static_cast<size_t>(2 * n)]);
      a = own.get();
    } else {
      if (kept < n) {
        keep.reset(new Item[static_cast<size_t>(2 * kKeep)]);
        kept = kKeep;
      }
      a = keep.get();
    }
    tmp = a + n;
  }
};

// Sorts one line: n values of x, `stride` apart, into v and ind (the same stride). flip: xor applied
// to the keys (all key bits for descending, so NaN comes first and ties keep their order). Stride is
// a compile-time 1 for the last axis, so those loops are plain sequential ones.
template <class Tr, class T, class S>
void sort_line(const T* x, S stride, T* v, int64_t* ind, const int64_t n, const uint64_t flip,
               typename Tr::Item* a, typename Tr::Item* tmp) {
  constexpr int bits = key_bits<T>();
  for (int64_t j = 0; j < n; ++j) a[j] = Tr::make(sort_key(x[j * stride]) ^ flip, static_cast<uint32_t>(j));
  const typename Tr::Item* s = sort_items<Tr>(a, tmp, static_cast<size_t>(n), bits);
  for (int64_t j = 0; j < n; ++j) {
    bool exact;
    const T val = key_value<T>(Tr::key(s[j]) ^ flip, &exact);
    if constexpr (keys_only<Tr>::value) {
      v[j * stride] = val;  // exact: no -0.0 or NaN in x (checked by the caller)
    } else {
      const int64_t src = Tr::pos(s[j]);
      v[j * stride] = exact ? val : x[src * stride];  // x is read only for zeros and NaN
      ind[j * stride] = src;
    }
  }
}

using One = std::integral_constant<int64_t, 1>;  // the stride of the last axis, known at compile time

// Rows of up to kRankMax: each element goes to the place given by the number of keys below it plus
// the equal keys before it (stable by construction). n^2 compares, but without branches and
// vectorised: faster than a branching sort on such rows (the many-short-rows case).
constexpr int64_t kRankMax = 16;

// Writes the first k places (all n for a sort, fewer for topk).
template <class T, class S>
__attribute__((always_inline)) inline void rank_line_body(const T* x, S stride, T* v, int64_t* ind, int64_t n,
                                                          uint64_t flip, int64_t k_out) {
  uint64_t k[kRankMax];
  int64_t pos[kRankMax];
  for (int64_t j = 0; j < n; ++j) k[j] = sort_key(x[j * stride]) ^ flip;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ki = k[i];
    int64_t r = 0;
    for (int64_t j = 0; j < n; ++j) r += (k[j] < ki) | ((k[j] == ki) & (j < i));
    if (k_out == n) {
      v[r * stride] = x[i * stride];
      ind[r * stride] = i;
    } else {
      pos[r] = i;  // topk: places first, then the k wanted (no unpredictable branch per element)
    }
  }
  if (k_out == n) return;
  for (int64_t r = 0; r < k_out; ++r) {
    v[r * stride] = x[pos[r] * stride];
    ind[r * stride] = pos[r];
  }
}
template <class T, class S>
__attribute__((target("avx2"))) void rank_line_avx2(const T* x, S stride, T* v, int64_t* ind, int64_t n,
                                                    uint64_t flip, int64_t k_out) {
  rank_line_body(x, stride, v, ind, n, flip, k_out);
}
template <class T, class S>
void rank_line_base(const T* x, S stride, T* v, int64_t* ind, int64_t n, uint64_t flip, int64_t k_out) {
  rank_line_body(x, stride, v, ind, n, flip, k_out);
}

// rank_line for the CPU: AVX2 when it has it (the .so targets baseline x86-64).
template <class T, class S>
auto rank_line() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2 ? rank_line_avx2<T, S> : rank_line_base<T, S>;
}

// Sorts each line of x along the axis (`lines` lines of n, `inner` apart).
template <class Tr, class T>
void sort_lines(const T* px, T* pv, int64_t* pi, int64_t lines, int64_t n, int64_t inner, uint64_t flip) {
  using Item = typename Tr::Item;
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1));
  parallel_for(0, lines, grain, [&](int64_t lo, int64_t hi) {
    if (n <= kRankMax) {
      if (inner == 1) {
        const auto f = rank_line<T, One>();
        for (int64_t l = lo; l < hi; ++l) f(px + l * n, One{}, pv + l * n, pi + l * n, n, flip, n);
      } else {
        const auto f = rank_line<T, int64_t>();
        for (int64_t l = lo; l < hi; ++l) {
          const int64_t base = (l / inner) * n * inner + l % inner;
          f(px + base, inner, pv + base, pi + base, n, flip, n);
        }
      }
      return;
    }
    LineBuffers<Item> buf(n);
    for (int64_t l = lo; l < hi; ++l) {
      const int64_t o = l / inner, i = l % inner, base = o * n * inner + i;
      if (inner == 1)
        sort_line<Tr>(px + base, One{}, pv + base, pi + base, n, flip, buf.a, buf.tmp);
      else
        sort_line<Tr>(px + base, inner, pv + base, pi + base, n, flip, buf.a, buf.tmp);
    }
  });
}

// One long contiguous line over all threads: bucket by the highest digit where keys differ (each
// thread scatters its chunk, in chunk order, so the scatter is stable), then sort the buckets.
template <class Tr, class T>
void sort_long_line(const T* x, T* pv, int64_t* pi, int64_t n, uint64_t flip) {
  using Item = typename Tr::Item;
  const int threads = oar::sdk::max_threads();
  LineBuffers<Item> buf(n);
  Item* const a = buf.a;
  Item* const tmp = buf.tmp;
  std::vector<int64_t> bounds(threads + 1);
  for (int t = 0; t <= threads; ++t) bounds[t] = n * t / threads;
  // Items, and which key bits differ from the first key.
  const uint64_t k0 = sort_key(x[0]) ^ flip;
  std::vector<uint64_t> diff(threads, 0);
  parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      uint64_t d = 0;
      for (int64_t j = bounds[t]; j < bounds[t + 1]; ++j) {
        const uint64_t k = sort_key(x[j]) ^ flip;
        d |= k ^ k0;
        a[j] = Tr::make(k, static_cast<uint32_t>(j));
      }
      diff[t] = d;
    }
  });
  uint64_t any = 0;
  for (uint64_t d : diff) any |= d;
  const Item* sorted = a;  // all keys equal: already in order
  if (any) {
    constexpr int kTopBits = 11;
    constexpr size_t radix = size_t{1} << kTopBits;
    const int high = 64 - __builtin_clzll(any);  // bits [high, 64) are the same in every key
    const int shift = std::max(0, high - kTopBits);
    std::vector<uint32_t> count(static_cast<size_t>(threads) * radix, 0);
    parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        uint32_t* c = count.data() + t * radix;
        for (int64_t j = bounds[t]; j < bounds[t + 1]; ++j) ++c[(Tr::key(a[j]) >> shift) & (radix - 1)];
      }
    });
    // Bucket b starts at start[b]; thread t writes its part of b after those of threads before it.
    std::vector<int64_t> start(radix + 1, 0);
    int64_t sum = 0;
    for (size_t b = 0; b < radix; ++b) {
      start[b] = sum;
      for (int t = 0; t < threads; ++t)
        sum += std::exchange(count[t * radix + b], static_cast<uint32_t>(sum));
    }
    start[radix] = n;
    parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        uint32_t* c = count.data() + t * radix;
        for (int64_t j = bounds[t]; j < bounds[t + 1]; ++j)
          tmp[c[(Tr::key(a[j]) >> shift) & (radix - 1)]++] = a[j];
      }
    });
    // Buckets to threads by size: thread t takes the buckets starting in its share of the items.
    // A bucket sorted in place ends in tmp; one whose radix passes end in a is copied back.
    parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        for (size_t b = 0; b < radix; ++b) {
          const int64_t s = start[b], e = start[b + 1];
          if (s == e || s < bounds[t] || s >= bounds[t + 1]) continue;
          const Item* r = sort_items<Tr>(tmp + s, a + s, static_cast<size_t>(e - s), shift);
          if (r != tmp + s) std::copy(r, r + (e - s), tmp + s);
        }
      }
    });
    sorted = tmp;
  }
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      bool exact;
      const T v = key_value<T>(Tr::key(sorted[j]) ^ flip, &exact);
      if constexpr (keys_only<Tr>::value) {
        pv[j] = v;  // exact: no -0.0 or NaN in x (checked by the caller)
      } else {
        const int64_t src = Tr::pos(sorted[j]);
        pv[j] = exact ? v : x[src];  // x is read only for zeros and NaN
        pi[j] = src;
      }
    }
  });
}

// Lines longer than this (and too few lines to share out) sort over all threads.
constexpr int64_t kLongLine = int64_t{1} << 16;

// Whether x holds -0.0 or NaN: values whose sort keys other values share (+0.0, other NaNs), so keys
// alone cannot give them back. Integers never do.
template <class T>
bool shared_keys(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T> || is_float_v<T>) {
    ErrorFlag hit;
    parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      bool h = false;
      if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {  // on the bits: an integer loop that vectorises
        using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
        constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
        constexpr U inf = sizeof(T) == 8 ? U(0x7ff0000000000000ull) : U(0x7f800000u);
        U any = 0;
        for (int64_t i = lo; i < hi; ++i) {
          U u;
          std::memcpy(&u, x + i, sizeof u);
          any |= U((u == sign) | ((u & ~sign) > inf));  // -0.0, NaN
        }
        h = any != 0;
      } else {
        for (int64_t i = lo; i < hi; ++i) {
          const float v = static_cast<float>(x[i]);
          h |= (v != v) | ((v == 0) & std::signbit(v));
        }
      }
      if (h) hit.set();
    });
    return hit.get();
  } else {
    (void)x, (void)n;
    return false;
  }
}

void sort_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), vals = ctx.output(0), inds = ctx.output(1);
  const int32_t nd = x.ndim();
  const int64_t axis = nd == 0 ? 0 : normalize_axis("sort", attr_int_or(ctx, "axis", -1), nd);
  const bool desc = attr_int_or(ctx, "descending", 0) != 0;
  const bool values_only = attr_int_or(ctx, "values_only", 0) != 0;
  const int64_t n = nd == 0 ? 1 : x.dim(static_cast<int32_t>(axis));
  const int64_t inner = nd == 0 ? 1 : product(x.dims(), axis + 1, nd);
  const int64_t lines = n == 0 ? 0 : x.numel() / n;
  OAR_SDK_CHECK(n <= std::numeric_limits<uint32_t>::max(), OAR_ERR_INVALID_ARGUMENT,
                "sort: the sorted axis has " << n << " elements, more than 2^32 - 1");
  if (lines == 0) return;
  dispatch<RealType>("sort", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr int bits = key_bits<T>();
    using Tr = std::conditional_t<bits <= 32, Packed, Wide>;
    const uint64_t flip = desc ? (bits == 64 ? ~0ull : ((1ull << bits) - 1)) : 0;
    const T* px = x.data<T>();
    T* pv = vals.data<T>();
    int64_t* pi = inds.data<int64_t>();
    const auto run = [&](auto tr) {
      using R = decltype(tr);
      if (inner == 1 && n >= kLongLine && lines < oar::sdk::max_threads()) {
        for (int64_t l = 0; l < lines; ++l) sort_long_line<R>(px + l * n, pv + l * n, pi + l * n, n, flip);
      } else {
        sort_lines<R>(px, pv, pi, lines, n, inner, flip);
      }
    };
    // values_only (the caller drops the indices, which are then not written): keys alone, when no two
    // different values share a key. Short lines keep the positions path (its rank sort writes both).
    if (values_only && n > kRankMax && !shared_keys(px, x.numel())) {
      run(KeyOnly<std::conditional_t<bits <= 32, uint32_t, uint64_t>>{});
    } else {
      run(Tr{});
    }
  });
}

// topk along axis: the k smallest keys (largest: of the flipped keys), ties by position as in sort.
// A small k selects first (nth_element) and sorts those; a large k sorts the whole line.
void topk_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), vals = ctx.output(0), inds = ctx.output(1);
  const int32_t nd = x.ndim();
  const int64_t axis = nd == 0 ? 0 : normalize_axis("topk", attr_int_or(ctx, "axis", -1), nd);
  const bool largest = attr_int_or(ctx, "largest", 1) != 0;
  const int64_t k = attr_int_or(ctx, "k", 1);
  const int64_t n = nd == 0 ? 1 : x.dim(static_cast<int32_t>(axis));
  const int64_t inner = nd == 0 ? 1 : product(x.dims(), axis + 1, nd);
  const int64_t lines = n == 0 ? 0 : x.numel() / n;
  OAR_SDK_CHECK(k >= 0 && k <= n, OAR_ERR_INVALID_ARGUMENT,
                "topk: k (" << k << ") is out of range [0, " << n << "]");
  OAR_SDK_CHECK(n <= std::numeric_limits<uint32_t>::max(), OAR_ERR_INVALID_ARGUMENT,
                "topk: the axis has " << n << " elements, more than 2^32 - 1");
  if (k == 0 || lines == 0) return;
  dispatch<RealType>("topk", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr int bits = key_bits<T>();
    using Tr = std::conditional_t<bits <= 32, Packed, Wide>;
    using Item = typename Tr::Item;
    const uint64_t flip = largest ? (bits == 64 ? ~0ull : ((1ull << bits) - 1)) : 0;
    const T* px = x.data<T>();
    T* pv = vals.data<T>();
    int64_t* pi = inds.data<int64_t>();
    const auto less = [](const Item& p, const Item& q) { return Tr::less(p, q); };
    parallel_for(0, lines, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
      if (n <= kRankMax && inner == 1) {
        const auto f = rank_line<T, One>();
        for (int64_t l = lo; l < hi; ++l) f(px + l * n, One{}, pv + l * k, pi + l * k, n, flip, k);
        return;
      }
      if (n <= kRankMax) {
        const auto f = rank_line<T, int64_t>();
        for (int64_t l = lo; l < hi; ++l) {
          const int64_t o = l / inner, i = l % inner;
          f(px + o * n * inner + i, inner, pv + o * k * inner + i, pi + o * k * inner + i, n, flip, k);
        }
        return;
      }
      LineBuffers<Item> buf(n);
      Item* a = buf.a;
      Item* tmp = buf.tmp;
      for (int64_t l = lo; l < hi; ++l) {
        const int64_t o = l / inner, i = l % inner, base = o * n * inner + i, obase = o * k * inner + i;
        const T* xl = px + base;
        for (int64_t j = 0; j < n; ++j)
          a[j] = Tr::make(sort_key(xl[j * inner]) ^ flip, static_cast<uint32_t>(j));
        const Item* s = a;
        if (k * 4 >= n) {
          s = sort_items<Tr>(a, tmp, static_cast<size_t>(n), bits);
        } else {
          std::nth_element(a, a + k, a + n, less);
          std::sort(a, a + k, less);
        }
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src = Tr::pos(s[j]);
          pv[obase + j * inner] = xl[src * inner];
          pi[obase + j * inner] = src;
        }
      }
    });
  });
}

}  // namespace

void register_sort_kernels(Registry& r) {
  r.add("sort", real_dtypes(), &sort_kernel);
  r.add("topk", real_dtypes(), &topk_kernel);
}

}  // namespace oar_cpu
