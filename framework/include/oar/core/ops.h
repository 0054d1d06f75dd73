// The C++ eager API: one thin function per op, each forwarding to call_op with the op's definition
// (looked up once). Semantics are in docs/ops.md.
#pragma once

#include <oar/core/dispatch.h>
#include <oar/core/tensor.h>

#include <cstdint>
#include <vector>

namespace oar::ops {

// Elementwise binary (numpy broadcasting; same dtype).
Tensor add(const Tensor& x, const Tensor& y);
Tensor subtract(const Tensor& x, const Tensor& y);
Tensor multiply(const Tensor& x, const Tensor& y);
Tensor divide(const Tensor& x, const Tensor& y);
Tensor floor_divide(const Tensor& x, const Tensor& y);
Tensor remainder(const Tensor& x, const Tensor& y);
Tensor maximum(const Tensor& x, const Tensor& y);
Tensor minimum(const Tensor& x, const Tensor& y);
Tensor pow(const Tensor& x, const Tensor& y);
Tensor equal(const Tensor& x, const Tensor& y);
Tensor not_equal(const Tensor& x, const Tensor& y);
Tensor less_than(const Tensor& x, const Tensor& y);
Tensor less_equal(const Tensor& x, const Tensor& y);
Tensor greater_than(const Tensor& x, const Tensor& y);
Tensor greater_equal(const Tensor& x, const Tensor& y);
Tensor logical_and(const Tensor& x, const Tensor& y);
Tensor logical_or(const Tensor& x, const Tensor& y);
Tensor logical_xor(const Tensor& x, const Tensor& y);

// Elementwise unary, by op name ("exp", "relu", ...; see docs/ops.md).
Tensor unary(const char* op, const Tensor& x);  // looks the op up: OAR_OP handles in hot code
Tensor unary(const OpDef& op, const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);

// Reductions; empty axis = all axes; negative axes count from the end.
Tensor sum(const Tensor& x, const std::vector<int64_t>& axis = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axis = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axis = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axis = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& axis = {}, bool keepdim = false);
// axis = nullopt-like: flatten = true reduces over all elements.
Tensor argmax(const Tensor& x, int64_t axis, bool keepdim = false, bool flatten = false);
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim = false, bool flatten = false);

Tensor matmul(const Tensor& x, const Tensor& y, bool transpose_x = false, bool transpose_y = false);
Tensor cast(const Tensor& x, DType dtype);
Tensor copy(const Tensor& x);  // a contiguous copy on the same place

Tensor full(const Dims& shape, double value, DType dtype = DType::kFloat32, Place place = cpu_place());
Tensor zeros(const Dims& shape, DType dtype = DType::kFloat32, Place place = cpu_place());
Tensor ones(const Dims& shape, DType dtype = DType::kFloat32, Place place = cpu_place());
Tensor arange(double start, double end, double step = 1, DType dtype = DType::kInt64,
              Place place = cpu_place());
// Seeded random tensors; seed 0 draws from the global generator (see manual_seed).
Tensor uniform(const Dims& shape, double min = -1, double max = 1, DType dtype = DType::kFloat32,
               uint64_t seed = 0, Place place = cpu_place());
Tensor normal(const Dims& shape, double mean = 0, double std = 1, DType dtype = DType::kFloat32,
              uint64_t seed = 0, Place place = cpu_place());
void manual_seed(uint64_t seed);
// For random ops outside this API: the global generator's seed and `count` counters reserved for the
// caller starting at *offset (the generator moves past them), so oar.seed makes the op reproducible.
void reserve_random(uint64_t count, uint64_t* seed, uint64_t* offset);

Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor index_select(const Tensor& x, const Tensor& index, int64_t axis = 0);
// x with source's slices added at `index` along axis (repeated indices accumulate).
Tensor index_add(const Tensor& x, const Tensor& index, const Tensor& source, int64_t axis = 0);
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
// Writes src (cast to dst's dtype, broadcast to its shape) into dst's memory, which may be a view;
// every tensor sharing that storage sees the change and its version counter moves on.
void assign(const Tensor& dst, const Tensor& src);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);

}  // namespace oar::ops
