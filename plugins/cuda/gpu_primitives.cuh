// The vendor's device-wide and block-wide primitives the gpu plugin uses (sort, scan), under one name
// for both builds: CUB with CUDA, rocPRIM with HIP (Debian packages rocPRIM but not hipCUB, so its own
// API is mapped here). Only scan_sort.cu includes it: these headers are heavy to compile.
#pragma once

#include "gpu_runtime.h"

#if defined(OAR_GPU_HIP)
#include <rocprim/rocprim.hpp>
#else
#include <cub/cub.cuh>
#endif

namespace oar_cuda {
namespace prim {

#if defined(OAR_GPU_HIP)
// Inclusive scan of one value per thread over a block of kBlock threads; `prefix(tile_total)` returns
// what comes before this tile (the running total of a line scanned tile by tile).
template <typename A, int kBlock>
struct BlockScan {
  using TempStorage = typename rocprim::block_scan<A, kBlock>::storage_type;
  TempStorage& temp;
  template <typename Op, typename Prefix>
  __device__ void inclusive_scan(A in, A& out, Op op, Prefix& prefix) {
    rocprim::block_scan<A, kBlock>().inclusive_scan(in, out, temp, prefix, op);
  }
};

// Stable LSD radix sort of (key, value) pairs by key bits [begin_bit, end_bit). The first call with
// temp == nullptr sets temp_bytes (the scratch it needs).
template <typename K, typename V>
gpuError_t radix_sort_pairs(void* temp, size_t& temp_bytes, const K* keys_in, K* keys_out, const V* vals_in,
                            V* vals_out, int64_t n, int begin_bit, int end_bit, gpuStream_t s) {
  return rocprim::radix_sort_pairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out,
                                   static_cast<size_t>(n), static_cast<unsigned>(begin_bit),
                                   static_cast<unsigned>(end_bit), s);
}

// out[i] = in[0] + ... + in[i - 1] (out[0] = 0).
template <typename T>
gpuError_t exclusive_sum(void* temp, size_t& temp_bytes, const T* in, T* out, int64_t n, gpuStream_t s) {
  return rocprim::exclusive_scan(temp, temp_bytes, in, out, T(0), static_cast<size_t>(n), rocprim::plus<T>(),
                                 s);
}
#else
template <typename A, int kBlock>
struct BlockScan {
  using TempStorage = typename cub::BlockScan<A, kBlock>::TempStorage;
  TempStorage& temp;
  template <typename Op, typename Prefix>
  __device__ void inclusive_scan(A in, A& out, Op op, Prefix& prefix) {
    cub::BlockScan<A, kBlock>(temp).InclusiveScan(in, out, op, prefix);
  }
};

template <typename K, typename V>
gpuError_t radix_sort_pairs(void* temp, size_t& temp_bytes, const K* keys_in, K* keys_out, const V* vals_in,
                            V* vals_out, int64_t n, int begin_bit, int end_bit, gpuStream_t s) {
  return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, vals_in, vals_out, n, begin_bit,
                                         end_bit, s);
}

template <typename T>
gpuError_t exclusive_sum(void* temp, size_t& temp_bytes, const T* in, T* out, int64_t n, gpuStream_t s) {
  return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, n, s);
}
#endif

}  // namespace prim
}  // namespace oar_cuda
