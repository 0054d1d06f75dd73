// Ops that were Python compositions before (issue 19, item 9): logsumexp (a stable one-pass reduction),
// cummax/cummin (running extremum with its index) and segment_pool (segment_sum/mean/max/min and
// send_u_recv). Each op's schema, inference, gradient rule and samples, in one place (op_util.h).
// docs/ops_math.md describes them.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops_manip.h>

#include <cmath>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

// ---- inference ------------------------------------------------------------------------------------
void infer_logsumexp(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, reduce_dims(c)};
}
void infer_p_norm(InferContext& c) {
  require_floating(c, 0);
  double p = c.attrs->get_float("porder");
  OAR_ENFORCE(p > 0 && std::isfinite(p), ErrorCode::kInvalidArgument,
              "p_norm: porder must be finite and > 0, got " << p);
  c.outputs[0] = {c.inputs[0].dtype, reduce_dims(c)};
}

// cummax/cummin: like the scans (ops_math.cc), plus an int64 index output of the same shape.
void infer_cumextreme(InferContext& c) {
  require_not_complex(c, 0);
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType,
              op_name(c) << ": bool is not supported; cast x to an integer dtype first");
  const Dims& in = c.inputs[0].dims;
  Dims out = in;
  if (c.attrs->get_int("flatten") != 0) {
    out = Dims{in.numel()};
    c.attrs->set("axis", int64_t{0});
  } else {
    c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), in.size()));
  }
  c.outputs[0] = {c.inputs[0].dtype, out};
  c.outputs[1] = {DType::kInt64, out};
}

// segment_pool(data, segment_ids; num_segments, pooltype): out[s] = reduce of data[i] over the i with
// segment_ids[i] == s; pooltype 0 sum, 1 mean, 2 max, 3 min. An empty segment gives 0. The ids need
// not be sorted (send_u_recv scatters in any order); an id outside [0, num_segments) is an
// OAR_ERR_OUT_OF_RANGE error from the kernel.
void infer_segment_pool(InferContext& c) {
  require_not_complex(c, 0);
  const DType d = c.inputs[0].dtype;
  OAR_ENFORCE(d != DType::kBool, ErrorCode::kType, "segment_pool: data.dtype bool is not supported");
  const Dims& x = c.inputs[0].dims;
  const Dims& ids = c.inputs[1].dims;
  OAR_ENFORCE(x.size() >= 1, ErrorCode::kInvalidArgument,
              "segment_pool: data must have at least 1 dimension, got shape " << x.to_string());
  DType id = c.inputs[1].dtype;
  OAR_ENFORCE(id == DType::kInt32 || id == DType::kInt64, ErrorCode::kType,
              "segment_pool: segment_ids must be int32 or int64, got " << dtype_name(id));
  OAR_ENFORCE(ids.size() == 1 && ids[0] == x[0], ErrorCode::kInvalidArgument,
              "segment_pool: segment_ids must be 1-D with data.shape[0] (" << x[0] << ") elements, got shape "
                                                                           << ids.to_string());
  int64_t n = c.attrs->get_int("num_segments"), type = c.attrs->get_int("pooltype");
  OAR_ENFORCE(n >= 0, ErrorCode::kInvalidArgument, "segment_pool: num_segments (" << n << ") must be >= 0");
  OAR_ENFORCE(type >= 0 && type <= 3, ErrorCode::kInvalidArgument,
              "segment_pool: pooltype must be 0 (sum), 1 (mean), 2 (max) or 3 (min), got " << type);
  Dims out = x;
  out[0] = n;
  c.outputs[0] = {d, out};
}

// ---- gradients ------------------------------------------------------------------------------------
// logsumexp: d out / d x = exp(x - out) (softmax over the reduced axes).
std::vector<Tensor> logsumexp_grad(const GradContext& c) {
  Tensor w = ops::exp(ops::subtract(X(c), expand_reduced(c, OUT(c))));
  return {ops::multiply(expand_reduced(c, g0(c)), w)};
}

// p_norm: d out / d x = sign(x) (|x| / out)^(p - 1); 0 where x is 0 (also where out is 0, as Paddle).
// The division is by out on the reduced shape (made 1 where out is 0, where x is all 0 anyway).
std::vector<Tensor> p_norm_grad(const GradContext& c) {
  const double p = c.attrs.get_float("porder");
  const Tensor& x = X(c);
  Tensor g = expand_reduced(c, g0(c));
  if (p == 1) return {ops::multiply(g, ops::unary("sign", x))};
  Tensor safe = ops::where(ops::equal(OUT(c), scalar_like(0, OUT(c))), scalar_like(1, OUT(c)), OUT(c));
  Tensor inv = expand_reduced(c, ops::divide(scalar_like(1, safe), safe));
  if (p == 2) return {ops::multiply(g, ops::multiply(x, inv))};
  Tensor w =
      ops::multiply(ops::unary("sign", x), ops::pow(ops::multiply(ops::abs(x), inv), scalar_like(p - 1, x)));
  if (p < 1) {  // 0^(p-1) is inf: those positions get 0
    Tensor zero = scalar_like(0, x);
    w = ops::where(ops::equal(x, zero), zero, w);
  }
  return {ops::multiply(g, w)};
}

// cummax/cummin: each output took its value from the input the index names; those inputs collect the
// gradients (add: one input can feed many outputs).
std::vector<Tensor> cumextreme_grad(const GradContext& c) {
  if (in_dims(c, 0).size() == 0) return {g0(c)};
  const Tensor& g = g0(c);
  Tensor z = ops::zeros(g.dims(), g.dtype(), g.place());
  return {ops::put_along_axis(z, c.outputs[1], g, c.attrs.get_int("axis"), 1).reshape(in_dims(c, 0))};
}

// segment_pool: sum sends g[s] back to every member of s; mean divides by the segment's size; max and
// min send it to every member equal to the result (ties all get it, as Paddle).
std::vector<Tensor> segment_pool_grad(const GradContext& c) {
  const Tensor& ids = c.inputs[1];
  const Tensor& g = g0(c);
  int64_t type = c.attrs.get_int("pooltype");
  Tensor back = ops::index_select(g, ids, 0);
  if (type == 1) {
    const int64_t n = c.attrs.get_int("num_segments"), m = in_dims(c, 0)[0];
    Tensor count =
        ops::index_add(ops::zeros({n}, g.dtype(), g.place()), ids, ops::ones({m}, g.dtype(), g.place()));
    Tensor per = ops::index_select(ops::maximum(count, scalar_like(1, count)), ids, 0);
    Dims shape;
    shape.resize(in_dims(c, 0).size(), 1);
    shape[0] = m;
    back = ops::divide(back, per.reshape(shape));
  } else if (type >= 2) {
    back = ops::multiply(back, mask(ops::equal(X(c), ops::index_select(OUT(c), ids, 0)), back));
  }
  return {back, Tensor()};
}

}  // namespace

void register_scan_ops(OpRegistry& r) {
  def(r, "logsumexp", {"x"}, {ints_attr("axis"), int_attr("keepdim", 0)}, infer_logsumexp);
  def(r, "p_norm", {"x"}, {ints_attr("axis"), int_attr("keepdim", 0), float_attr("porder", 2.0)},
      infer_p_norm);
  for (const char* n : {"cummax", "cummin"})
    def(r, n, {"x"}, {int_attr("axis", -1), int_attr("flatten", 0)}, infer_cumextreme).outputs = {"values",
                                                                                                  "indices"};
  def(r, "segment_pool", {"data", "segment_ids"}, {req_int("num_segments"), int_attr("pooltype", 0)},
      infer_segment_pool);
}

void register_scan_grads(OpRegistry& r) {
  set_grad(r, "logsumexp", logsumexp_grad, 1, true);
  set_grad(r, "p_norm", p_norm_grad, 1, true);
  set_grad(r, "cummax", cumextreme_grad, 0, true);
  set_grad(r, "cummin", cumextreme_grad, 0, true);
  set_grad(r, "segment_pool", segment_pool_grad, 3, true);
}

// Sample inputs for the op suite (op_sample.h).
void register_scan_samples(OpRegistry& r) {
  using namespace sample;
  add(r, "logsumexp", reduction(-5, 5));
  add(r, "logsumexp", {S("large", {real({3, 4}, 500, 800)}, {{"axis", Shape{1}}, {"keepdim", int64_t{0}}})});
  for (double p : {2.0, 1.0, 3.0, 0.5}) {
    std::vector<OpSample> v;
    for (OpSample& s : reduction(-3, 3)) {
      s.attrs.emplace_back("porder", p);
      // |x|^0.5 is not differentiable at 0 (and steep near it); its long rows pass float16's range
      v.push_back(p < 1 ? only(nonsmooth(s), {DType::kFloat32, DType::kFloat64}) : s);
    }
    add(r, "p_norm", v);
  }
  add(r, "p_norm",
      // beyond the square's range: the kernel scales by the running max |x| (values only)
      {nonsmooth(only(S("huge", {real({3, 4}, 1e200, 3e200)}, {{"axis", Shape{1}}, {"porder", 2.0}}),
                      {DType::kFloat64})),
       nonsmooth(only(S("tiny", {real({3, 4}, 1e-200, 3e-200)}, {{"axis", Shape{1}}, {"porder", 3.0}}),
                      {DType::kFloat64})),
       S("zeros", {with_zeros(real({3, 4}))}, {{"axis", Shape{1}}, {"porder", 2.0}})});
  for (const char* n : {"cummax", "cummin"}) {
    add(r, n, along_axis(-3, 3, {{"flatten", int64_t{0}}}));
    add(r, n,
        {S("flatten", {real({3, 4}, -3, 3)}, {{"flatten", int64_t{1}}}),
         nonsmooth(S("ties", {integer({4, 6}, -2, 2)}, {{"axis", int64_t{1}}})),
         S("specials", {with_specials(real({3, 5}))}, {{"axis", int64_t{1}}})});
  }
  auto P = [](int64_t n, int64_t type) { return AttrList{{"num_segments", n}, {"pooltype", type}}; };
  for (int64_t type = 0; type < 4; ++type) {
    add(r, "segment_pool",
        {S("rows", {real({6, 3}), index({6}, 0, 3)}, P(4, type)),
         S("1-d", {real({5}), index({5}, 0, 2)}, P(3, type)),
         S("int32 ids, 3-d", {real({4, 2, 3}), index({4}, 0, 1, DType::kInt32)}, P(2, type)),
         S("empty", {real({0, 3}), index({0}, 0, 0)}, P(2, type)),
         S("transposed", {transposed(real({3, 5})), index({3}, 0, 2)}, P(3, type))});
  }
  add(r, "segment_pool",
      {nonsmooth(S("max ties", {integer({6, 3}, -1, 1), index({6}, 0, 1)}, P(2, 2))),
       nonsmooth(S("min ties", {integer({6, 3}, -1, 1), index({6}, 0, 1)}, P(2, 3)))});
}

}  // namespace oar
