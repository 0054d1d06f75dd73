// Helpers shared by the gpu plugin's reduction, scan/sort, softmax/norm and indexing files (reduce.cu,
// scan_sort.cu, softmax_norm.cu, index.cu): host-side axis arithmetic, a block-wide tree reduction over
// shared memory, element moves by size, and index reading.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cuda_common.h"

namespace oar_cuda {
namespace fam {

// ---- host side ---------------------------------------------------------------------------------------
inline int64_t product(const int64_t* d, int64_t lo, int64_t hi) {
  int64_t p = 1;
  for (int64_t i = lo; i < hi; ++i) p *= d[i];
  return p;
}

// Axes arrive normalised (docs/ops.md); a negative one is still accepted, numpy style.
inline int64_t normalize_axis(const char* op, int64_t axis, int32_t ndim) {
  const int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= (ndim == 0 ? 1 : ndim))
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, std::string(op) + ": axis " + std::to_string(axis) +
                                                   " is out of range for a rank-" + std::to_string(ndim) +
                                                   " tensor");
  return a;
}

inline void check_rank(const char* op, const sdk::TensorView& t) {
  if (t.ndim() > sdk::kMaxDims)
    throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, std::string(op) + ": rank " + std::to_string(t.ndim()) +
                                                   " exceeds the gpu plugin's limit of " +
                                                   std::to_string(sdk::kMaxDims));
}

// Blocks for `items` units of work of one block each, capped (kernels loop over the rest).
inline unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(items, 65535)));
}

// Element moves need only the element's size (cuda_common.h); these kernels see no 16-byte dtype.
template <typename F>
void dispatch_bits(int32_t dtype, const char* op, F&& f) {
  oar_cuda::dispatch_bits<8>(dtype, op, std::forward<F>(f));
}

// Index tensors are int32 or int64; anything else is declined (the CPU kernel reports it).
inline bool is_index_dtype(int32_t d) { return d == OAR_DTYPE_INT32 || d == OAR_DTYPE_INT64; }

#if defined(OAR_GPU_DEVICE_CODE)
// ---- device side --------------------------------------------------------------------------------------
// Reads index element i of an int32 or int64 tensor (contiguous).
OAR_D int64_t load_index(const void* p, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(p)[i] : static_cast<int64_t>(static_cast<const int32_t*>(p)[i]);
}
// A kernel's bad-index report (cuda_common.h): bad_index(c, kErrGatherNd).report(index, dim_size).
using BadIndex = DataErrorReporter;
inline BadIndex bad_index(const sdk::KernelContext& c, int32_t op) { return data_error_reporter(c, op); }

// numpy-style negative indices; -1 when out of range (the caller skips the element: a GPU kernel
// cannot raise, see README.md).
OAR_D int64_t wrap_index(int64_t i, int64_t size) {
  if (i < 0) i += size;
  return (i >= 0 && i < size) ? i : -1;
}
#endif

#if defined(OAR_GPU_KERNEL_CODE)
// Tree reduction of one value per thread within groups of `group` consecutive threads (a power of two
// dividing blockDim.x); `sh` holds blockDim.x values. Every thread of the block must call it (it
// synchronises). The group's result ends in sh[first thread of the group]. Deterministic: the
// combination order depends only on the thread layout.
template <typename A, typename Merge>
__device__ void group_reduce(A* sh, A v, int group, Merge merge) {
  const int t = threadIdx.x;
  const int lane = t % group;
  __syncthreads();  // a previous call's result may still be read by other threads
  sh[t] = v;
  __syncthreads();
  for (int s = group / 2; s > 0; s /= 2) {
    if (lane < s) sh[t] = merge(sh[t], sh[t + s]);
    __syncthreads();
  }
}
#endif

}  // namespace fam

// The family's registration functions (one per file); register_reduction_family calls them all.
void register_reduce(Registry& r);
void register_scan_sort(Registry& r);
void register_softmax_norm(Registry& r);
void register_batch_norm(Registry& r);  // batch_norm.cu
void register_index(Registry& r);
}  // namespace oar_cuda
