// Sparse × dense products for oar.sparse (decision 94): the one op a sparse tensor needs a kernel
// for. A sparse matrix reaches it as its COO parts (values, rows, cols), so a plugin implements a
// plain loop; everything else about sparse tensors is dense ops on those parts (python/oar/sparse).
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {

void register_sparse_ops(OpRegistry& r);  // called from op_defs.cc and op_samples.cc
void register_sparse_grads(OpRegistry& r);
void register_sparse_samples(OpRegistry& r);

namespace {
using namespace opdef;
using namespace gradutil;

// values [nnz] (floats), rows, cols [nnz] (int64), y [K, N] (values' dtype), nrows >= 0:
// out [nrows, N] with out[rows[k], :] += values[k] * y[cols[k], :]. Index ranges are the kernel's check.
void infer_sparse_coo_matmul(InferContext& c) {
  const TensorMeta &v = c.inputs[0], &rows = c.inputs[1], &cols = c.inputs[2], &y = c.inputs[3];
  require_floating(c, 0);
  require_not_complex(c, 0);
  require_same_dtype(c, 0, 3);
  OAR_ENFORCE(v.dims.size() == 1, ErrorCode::kInvalidArgument,
              "sparse_coo_matmul: values must be 1-D [nnz], got shape " << v.dims.to_string());
  for (const TensorMeta* m : {&rows, &cols}) {
    const char* name = m == &rows ? "rows" : "cols";
    OAR_ENFORCE(m->dtype == DType::kInt64, ErrorCode::kType,
                "sparse_coo_matmul: " << name << " must be int64, got " << dtype_name(m->dtype));
    OAR_ENFORCE(m->dims == v.dims, ErrorCode::kInvalidArgument,
                "sparse_coo_matmul: " << name << " must have values' shape " << v.dims.to_string() << ", got "
                                      << m->dims.to_string());
  }
  OAR_ENFORCE(y.dims.size() == 2, ErrorCode::kInvalidArgument,
              "sparse_coo_matmul: y must be 2-D [K, N], got shape " << y.dims.to_string());
  const int64_t nrows = c.attrs->get_int("nrows");
  OAR_ENFORCE(nrows >= 0, ErrorCode::kInvalidArgument,
              "sparse_coo_matmul: nrows must be >= 0, got " << nrows);
  c.outputs[0] = {v.dtype, Dims({nrows, y.dims[1]})};
}

// out = S y with S[rows[k], cols[k]] += values[k]: d values[k] = <g[rows[k]], y[cols[k]]>; d y = S^T g,
// the same op with rows and cols swapped (so it is differentiable again).
std::vector<Tensor> sparse_coo_matmul_grad(const GradContext& c) {
  const Tensor &v = c.inputs[0], &rows = c.inputs[1], &cols = c.inputs[2], &y = c.inputs[3];
  const Tensor& g = g0(c);
  Tensor gv, gy;
  if (c.needs_grad[0])
    gv = ops::sum(ops::multiply(ops::index_select(g, rows, 0), ops::index_select(y, cols, 0)), {1}, false);
  if (c.needs_grad[3])
    gy = call_op(OAR_OP("sparse_coo_matmul"), {v, cols, rows, g}, {{"nrows", in_dims(c, 3)[0]}})[0];
  return {gv, Tensor(), Tensor(), gy};
}

}  // namespace

void register_sparse_ops(OpRegistry& r) {
  def(r, "sparse_coo_matmul", {"values", "rows", "cols", "y"}, {int_attr("nrows", 0)},
      infer_sparse_coo_matmul)
      .doc =
      "S @ y for the sparse [nrows, K] matrix S given as COO parts (duplicates add) and dense y [K, N].";
}

void register_sparse_grads(OpRegistry& r) {
  set_grad(r, "sparse_coo_matmul", sparse_coo_matmul_grad, /*values, rows, cols, y*/ 0xF, false);
}

void register_sparse_samples(OpRegistry& r) {
  using namespace sample;
  add(r, "sparse_coo_matmul",
      {S("repeats", {real({6}), index({6}, 0, 3), index({6}, 0, 4), real({5, 3})}, {{"nrows", int64_t{4}}}),
       S("empty rows", {real({3}), index({3}, 1, 2), index({3}, 0, 2), real({3, 2})},
         {{"nrows", int64_t{5}}}),
       S("no entries", {real({0}), index({0}, 0, 1), index({0}, 0, 1), real({2, 3})},
         {{"nrows", int64_t{2}}}),
       S("transposed y", {real({4}), index({4}, 0, 2), index({4}, 0, 3), transposed(real({4, 5}))},
         {{"nrows", int64_t{3}}})});
}

}  // namespace oar
