// The C++ eager API of the manip op family (framework/src/ops_manip.cc, docs/ops_manip.md).
#pragma once

#include <oar/core/tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace oar::ops {

// x[index[..., 0], ..., index[..., k-1]]: shape index.shape[:-1] + x.shape[k:].
Tensor gather_nd(const Tensor& x, const Tensor& index);
// x with updates added at index[..., :] (repeated positions accumulate).
Tensor scatter_nd_add(const Tensor& x, const Tensor& index, const Tensor& updates);
// In place: x[index[b]] = value[b] (accumulate: +=); value has shape index.shape[:-1] + x.shape[k:].
void index_put(const Tensor& x, const Tensor& index, const Tensor& value, bool accumulate = false);
Tensor take_along_axis(const Tensor& x, const Tensor& index, int64_t axis);
// reduce: 0 assign, 1 add, 2 multiply.
Tensor put_along_axis(const Tensor& x, const Tensor& index, const Tensor& values, int64_t axis,
                      int64_t reduce = 0);
// (values, int64 indices); always stable.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis = -1, bool descending = false);
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis = -1, bool largest = true);
// int64 [count, ndim] coordinates of the nonzero elements (counted here first).
Tensor nonzero(const Tensor& x);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// pads: (before, after) for every dim; mode 0 constant, 1 reflect, 2 replicate, 3 circular.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, int64_t mode = 0, double value = 0);

}  // namespace oar::ops
