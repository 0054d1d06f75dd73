// Manipulation, gather/scatter, sort and search ops.
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
// Most of the Python manipulation API (stack, split, tile, pad, tril, ...) is composite over these
// few kernels and the foundation ops (docs/ops_manip.md).
#include <oar/core/error.h>
#include <oar/core/ops_manip.h>

#include <algorithm>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

void require_index(const InferContext& c, int i) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(
      d == DType::kInt32 || d == DType::kInt64, ErrorCode::kType,
      op_name(c) << ": " << input_name(c, i) << ".dtype must be int32 or int64, got " << dtype_name(d));
}

// index[..., k] addresses the first k dims of x; the addressed part has shape x.shape[k:].
Dims nd_result_dims(const InferContext& c, const Dims& x, const Dims& index) {
  OAR_ENFORCE(index.size() >= 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": index must have at least 1 dimension, got shape " << index.to_string());
  int64_t k = index[index.size() - 1];
  OAR_ENFORCE(k <= x.size(), ErrorCode::kInvalidArgument,
              op_name(c) << ": index.shape[-1] (" << k << ") exceeds the rank of x (" << x.size() << ")");
  Dims out(index.data(), index.size() - 1);
  for (int32_t i = static_cast<int32_t>(k); i < x.size(); ++i) out.push_back(x[i]);
  return out;
}

void infer_gather_nd(InferContext& c) {
  require_index(c, 1);
  c.outputs[0] = {c.inputs[0].dtype, nd_result_dims(c, c.inputs[0].dims, c.inputs[1].dims)};
}

// scatter_nd_add(x, index, updates) and index_put(x, index, value): updates has the gathered shape.
void check_nd_updates(InferContext& c) {
  require_index(c, 1);
  require_same_dtype(c, 0, 2);
  Dims want = nd_result_dims(c, c.inputs[0].dims, c.inputs[1].dims);
  OAR_ENFORCE(c.inputs[2].dims == want, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << c.op->inputs[2] << ".shape " << c.inputs[2].dims.to_string()
                         << " must be " << want.to_string()
                         << " (index.shape[:-1] + x.shape[index.shape[-1]:])");
}
void infer_scatter_nd_add(InferContext& c) {
  check_nd_updates(c);
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType, "scatter_nd_add: bool is not supported");
  c.outputs[0] = c.inputs[0];
}
void infer_index_put(InferContext& c) {
  check_nd_updates(c);
  OAR_ENFORCE(!(c.attrs->get_int("accumulate") && c.inputs[0].dtype == DType::kBool), ErrorCode::kType,
              "index_put: accumulate=True is not supported for bool x (a sum of bools); cast x first");
}

// take_along_axis(x, index): index has x's rank and x's sizes except along axis.
void check_along(InferContext& c) {
  const Dims &x = c.inputs[0].dims, &idx = c.inputs[1].dims;
  require_index(c, 1);
  OAR_ENFORCE(x.size() == idx.size() && x.size() >= 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": index rank (" << idx.size() << ") must equal x rank (" << x.size()
                         << ") and be at least 1");
  int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), x.size());
  c.attrs->set("axis", axis);
  for (int32_t i = 0; i < x.size(); ++i)
    OAR_ENFORCE(i == axis || x[i] == idx[i], ErrorCode::kInvalidArgument,
                op_name(c) << ": index.shape " << idx.to_string() << " must match x.shape " << x.to_string()
                           << " except along axis " << axis);
}
void infer_take_along_axis(InferContext& c) {
  check_along(c);
  c.outputs[0] = {c.inputs[0].dtype, c.inputs[1].dims};
}
void infer_put_along_axis(InferContext& c) {
  check_along(c);
  require_same_dtype(c, 0, 2);
  OAR_ENFORCE(c.inputs[2].dims == c.inputs[1].dims, ErrorCode::kInvalidArgument,
              "put_along_axis: values.shape " << c.inputs[2].dims.to_string() << " must equal index.shape "
                                              << c.inputs[1].dims.to_string());
  int64_t red = c.attrs->get_int("reduce");
  OAR_ENFORCE(red >= 0 && red <= 2, ErrorCode::kInvalidArgument,
              "put_along_axis: reduce must be 0 (assign), 1 (add) or 2 (multiply), got " << red);
  c.outputs[0] = c.inputs[0];
}

void infer_sort(InferContext& c) {
  require_not_complex(c, 0);
  const Dims& x = c.inputs[0].dims;
  c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), x.size()));
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = {DType::kInt64, x};
}

void infer_topk(InferContext& c) {
  require_not_complex(c, 0);
  Dims x = c.inputs[0].dims;
  int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), x.size());
  c.attrs->set("axis", axis);
  int64_t n = x.size() == 0 ? 1 : x[static_cast<int32_t>(axis)];
  int64_t k = c.attrs->get_int("k");
  OAR_ENFORCE(k >= 0 && k <= n, ErrorCode::kInvalidArgument,
              "topk: k (" << k << ") must be between 0 and x.shape[" << axis << "] (" << n << ")");
  if (x.size() > 0) x[static_cast<int32_t>(axis)] = k;
  c.outputs[0] = {c.inputs[0].dtype, x};
  c.outputs[1] = {DType::kInt64, x};
}

void infer_tri(InferContext& c) {
  OAR_ENFORCE(
      c.inputs[0].dims.size() >= 2, ErrorCode::kInvalidArgument,
      op_name(c) << ": x must have at least 2 dimensions, got shape " << c.inputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
}

// pad(x; pads = [before_0, after_0, before_1, ...] for every dim, mode 0 constant / 1 reflect /
// 2 replicate / 3 circular, value).
void infer_pad(InferContext& c) {
  const Dims& x = c.inputs[0].dims;
  const std::vector<int64_t>& p = c.attrs->get_ints("pads");
  int64_t mode = c.attrs->get_int("mode");
  OAR_ENFORCE(mode >= 0 && mode <= 3, ErrorCode::kInvalidArgument,
              "pad: mode must be 0 (constant), 1 (reflect), 2 (replicate) or 3 (circular), got " << mode);
  OAR_ENFORCE(p.size() == static_cast<size_t>(2 * x.size()), ErrorCode::kInvalidArgument,
              "pad: pads has " << p.size() << " entries, expected 2 * rank = " << 2 * x.size());
  Dims out = x;
  for (int32_t d = 0; d < x.size(); ++d) {
    int64_t b = p[2 * d], a = p[2 * d + 1];
    OAR_ENFORCE(b >= 0 && a >= 0, ErrorCode::kInvalidArgument,
                "pad: negative padding (" << b << ", " << a << ") at dim " << d);
    if (mode == 1)
      OAR_ENFORCE(b < x[d] && a < x[d], ErrorCode::kInvalidArgument,
                  "pad: reflect padding (" << b << ", " << a << ") must be smaller than dim " << d
                                           << " (size " << x[d] << ")");
    if (mode != 0 && (b || a))
      OAR_ENFORCE(x[d] > 0, ErrorCode::kInvalidArgument, "pad: cannot pad the empty dim " << d);
    out[d] = checked_add(checked_add(x[d], b, "pad", "the padded size"), a, "pad", "the padded size");
  }
  c.outputs[0] = {c.inputs[0].dtype, out};
}

// nonzero(x, count): the caller counts the nonzero elements first (the output shape depends on data).
void infer_nonzero(InferContext& c) {
  require_not_complex(c, 0);
  int64_t n = c.attrs->get_int("count");
  OAR_ENFORCE(n >= 0 && n <= c.inputs[0].dims.numel(), ErrorCode::kInvalidArgument,
              "nonzero: count " << n << " is out of range for " << c.inputs[0].dims.numel() << " elements");
  c.outputs[0] = {DType::kInt64, Dims{n, static_cast<int64_t>(c.inputs[0].dims.size())}};
}

// ---- gradient rules -------------------------------------------------------------------------------
Tensor zeros_of(const GradContext& c, int i) {
  return ops::zeros(in_dims(c, i), c.input_meta[i].dtype, g0(c).place());
}
Tensor gather_nd(const Tensor& x, const Tensor& index) { return call_op(OAR_OP("gather_nd"), {x, index})[0]; }
Tensor scatter_nd_add(const Tensor& x, const Tensor& index, const Tensor& u) {
  return call_op(OAR_OP("scatter_nd_add"), {x, index, u})[0];
}
Tensor take_along(const Tensor& x, const Tensor& index, int64_t axis) {
  return call_op(OAR_OP("take_along_axis"), {x, index}, Attrs{{"axis", axis}})[0];
}
Tensor put_along(const Tensor& x, const Tensor& index, const Tensor& v, int64_t axis, int64_t reduce) {
  return call_op(OAR_OP("put_along_axis"), {x, index, v}, Attrs{{"axis", axis}, {"reduce", reduce}})[0];
}

std::vector<Tensor> tri_grad(const GradContext& c) {
  return {call_op(c.op->name, {g0(c)}, Attrs{{"diagonal", c.attrs.get_int("diagonal")}})[0]};
}
// The source index of each output position of a padded dim (reflect / replicate / circular).
std::vector<int64_t> pad_map(int64_t n, int64_t before, int64_t after, int64_t mode) {
  std::vector<int64_t> m;
  for (int64_t j = -before; j < n + after; ++j) {
    if (mode == 2) {
      m.push_back(std::min(std::max<int64_t>(j, 0), n - 1));
    } else if (mode == 3) {
      m.push_back(((j % n) + n) % n);
    } else {
      const int64_t period = 2 * (n - 1);
      int64_t k = period ? ((j % period) + period) % period : 0;
      m.push_back(k >= n ? period - k : k);
    }
  }
  return m;
}
// Constant: the interior of g. Otherwise the padded dims are separable, so g is folded back one dim at
// a time with index_add (several output positions may come from one source).
std::vector<Tensor> pad_grad(const GradContext& c) {
  const Dims& x = in_dims(c, 0);
  const std::vector<int64_t>& p = c.attrs.get_ints("pads");
  const int64_t mode = c.attrs.get_int("mode");
  Tensor g = g0(c);
  for (int32_t d = 0; d < x.size(); ++d) {
    const int64_t b = p[2 * d], a = p[2 * d + 1];
    if (!b && !a) continue;
    if (mode == 0) {
      g = g.slice(d, b, b + x[d]);
      continue;
    }
    std::vector<int64_t> m = pad_map(x[d], b, a, mode);
    Tensor index = Tensor::from_vector(m, Dims{static_cast<int64_t>(m.size())}, DType::kInt64).to(g.place());
    Dims shape = g.dims();
    shape[d] = x[d];
    g = ops::index_add(ops::zeros(shape, g.dtype(), g.place()), index, g, d);
  }
  return {g};
}

std::vector<Tensor> gather_nd_grad(const GradContext& c) {
  return {scatter_nd_add(zeros_of(c, 0), c.inputs[1], g0(c)), Tensor()};
}
std::vector<Tensor> scatter_nd_add_grad(const GradContext& c) {
  return {g0(c), Tensor(), c.needs_grad[2] ? gather_nd(g0(c), c.inputs[1]) : Tensor()};
}
// index_put overwrites: the overwritten elements of x get no gradient.
std::vector<Tensor> index_put_grad(const GradContext& c) {
  const Tensor& index = c.inputs[1];
  Tensor gx = g0(c);
  if (c.attrs.get_int("accumulate") == 0) {
    Tensor hit =
        scatter_nd_add(zeros_of(c, 0), index, ops::ones(in_dims(c, 2), g0(c).dtype(), g0(c).place()));
    gx = ops::where(ops::equal(hit, scalar_like(0, hit)), g0(c), scalar_like(0, g0(c)));
  }
  return {gx, Tensor(), c.needs_grad[2] ? gather_nd(g0(c), index) : Tensor()};
}
std::vector<Tensor> take_along_axis_grad(const GradContext& c) {
  return {put_along(zeros_of(c, 0), c.inputs[1], g0(c), c.attrs.get_int("axis"), 1), Tensor()};
}
std::vector<Tensor> put_along_axis_grad(const GradContext& c) {
  const Tensor &index = c.inputs[1], &g = g0(c);
  int64_t axis = c.attrs.get_int("axis"), reduce = c.attrs.get_int("reduce");
  Tensor gx, gv;
  if (reduce == 0) {  // assign: overwritten elements get no gradient
    gx = put_along(g, index, ops::zeros(in_dims(c, 2), g.dtype(), g.place()), axis, 0);
    if (c.needs_grad[2]) gv = take_along(g, index, axis);
  } else if (reduce == 1) {
    gx = g;
    if (c.needs_grad[2]) gv = take_along(g, index, axis);
  } else {  // multiply (exact for distinct indices): out = x * v at the hit positions (conj: complex)
    gx = put_along(g, index, conj(c.inputs[2]), axis, 2);
    if (c.needs_grad[2]) gv = take_along(ops::multiply(g, conj(c.inputs[0])), index, axis);
  }
  return {gx, Tensor(), gv};
}
// sort and topk: the values' gradient goes back to the positions the indices name.
std::vector<Tensor> sort_grad(const GradContext& c) {
  if (in_dims(c, 0).size() == 0)
    return {g0(c)};  // a 0-d input is its own sorted value (no index to scatter by)
  return {put_along(zeros_of(c, 0), c.outputs[1], g0(c), c.attrs.get_int("axis"), 1)};
}

}  // namespace

void register_manip_ops(OpRegistry& r) {
  def(r, "gather_nd", {"x", "index"}, {}, infer_gather_nd);
  def(r, "scatter_nd_add", {"x", "index", "updates"}, {}, infer_scatter_nd_add);
  {
    // In place: dst[index[j]] = value[j] (accumulate: +=). The caller broadcasts value.
    OpDef& d = def(r, "index_put", {"x", "index", "value"}, {int_attr("accumulate", 0)}, infer_index_put);
    d.outputs.clear();
    d.inplace_input = 0;
  }
  def(r, "take_along_axis", {"x", "index"}, {req_int("axis")}, infer_take_along_axis);
  def(r, "put_along_axis", {"x", "index", "values"}, {req_int("axis"), int_attr("reduce", 0)},
      infer_put_along_axis);
  // values_only = 1: the caller drops the indices (eager sort() of a tensor that needs no gradient), so a
  // kernel may leave them unwritten (decision 135); 0 (the default, and in every program): both written.
  def(r, "sort", {"x"},
      {int_attr("axis", -1), int_attr("descending", 0), int_attr("stable", 0), int_attr("values_only", 0)},
      infer_sort)
      .outputs = {"values", "indices"};
  def(r, "topk", {"x"}, {req_int("k"), int_attr("axis", -1), int_attr("largest", 1)}, infer_topk).outputs = {
      "values", "indices"};
  def(r, "nonzero", {"x"}, {req_int("count")}, infer_nonzero).differentiable = false;
  def(r, "tril", {"x"}, {int_attr("diagonal", 0)}, infer_tri);
  def(r, "pad", {"x"}, {req_ints("pads"), int_attr("mode", 0), float_attr("value", 0.0)}, infer_pad);
  def(r, "triu", {"x"}, {int_attr("diagonal", 0)}, infer_tri);
}

// Sample inputs for the op suite (op_sample.h). Index inputs stay in range; writes that would race on
// repeated indices (assignments) use distinct indices.
void register_manip_samples(OpRegistry& r) {
  using namespace sample;
  add(r, "gather_nd",
      {S("2 of 3 dims", {real({3, 4, 5}), index({2, 2}, 0, 2)}),
       S("1 dim", {real({4, 3}), index({5, 1}, 0, 3)}), S("every dim", {real({3, 4}), index({2, 2}, 0, 2)}),
       S("int32 0-d result", {real({3, 4}), index({2}, 0, 2, DType::kInt32)}),
       S("empty index", {real({3, 4}), index({0, 1}, 0, 2)}),
       S("flipped x", {flipped(real({4, 3})), index({3, 1}, 0, 3)})});
  add(r, "scatter_nd_add",
      {S("rows repeated", {real({4, 3}), index({5, 1}, 0, 3), real({5, 3})}),
       S("elements", {real({3, 4}), index({4, 2}, 0, 2), real({4})}),
       S("int32", {real({4, 3}), index({2, 1}, 0, 3, DType::kInt32), real({2, 3})}),
       S("transposed x", {transposed(real({3, 4})), index({2, 1}, 0, 2), real({2, 4})})});
  add(r, "index_put",
      {S("assign rows", {real({5, 3}), unique_index({3, 1}, 0, 4), real({3, 3})}),
       only(S("accumulate repeated", {real({4, 3}), index({5, 1}, 0, 3), real({5, 3})},
              {{"accumulate", int64_t{1}}}),
            {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kFloat16,
             DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kComplex64,
             DType::kComplex128}),  // no bool sums

       S("elements", {real({4, 4}), unique_index({2, 2}, 0, 3), real({2})})});
  add(r, "take_along_axis",
      {S("axis 1", {real({3, 4}), index({3, 2}, 0, 3)}, {{"axis", int64_t{1}}}),
       S("axis 0", {real({3, 4}), index({2, 4}, 0, 2)}, {{"axis", int64_t{0}}}),
       S("3-d axis -1", {real({2, 3, 4}), index({2, 3, 5}, 0, 3)}, {{"axis", int64_t{-1}}}),
       S("transposed x", {transposed(real({4, 3})), index({4, 2}, 0, 2)}, {{"axis", int64_t{1}}})});
  add(r, "put_along_axis",
      {S("assign", {real({3, 4}), unique_index({3, 1}, 0, 3), real({3, 1})}, {{"axis", int64_t{1}}}),
       S("add repeated", {real({3, 4}), index({3, 3}, 0, 3), real({3, 3})},
         {{"axis", int64_t{1}}, {"reduce", int64_t{1}}}),
       S("multiply", {real({4, 3}), unique_index({1, 3}, 0, 3), real({1, 3})},
         {{"axis", int64_t{0}}, {"reduce", int64_t{2}}})});
  // Stable sorts everywhere a tie may occur: the order of equal keys is then defined.
  add(r, "sort", along_axis(-3, 3, {{"stable", int64_t{1}}}));
  add(r, "sort",
      {S("descending", {real({3, 6})}, {{"descending", int64_t{1}}, {"stable", int64_t{1}}}),
       S("ties", {integer({4, 7}, -2, 2)}, {{"axis", int64_t{1}}, {"stable", int64_t{1}}}),
       S("ties descending", {integer({4, 7}, -2, 2)}, {{"descending", int64_t{1}}, {"stable", int64_t{1}}}),
       S("specials", {with_specials(real({3, 6}))}, {{"stable", int64_t{1}}})});
  auto K = [](int64_t k, int64_t axis, int64_t largest) {
    return AttrList{{"k", k}, {"axis", axis}, {"largest", largest}};
  };
  add(r, "topk",
      {S("largest", {real({3, 5})}, K(2, -1, 1)), S("smallest axis 0", {real({4, 3})}, K(2, 0, 0)),
       S("k 0", {real({3, 5})}, K(0, 1, 1)), S("all", {real({2, 4})}, K(4, 1, 1)),
       S("0-d", {real({})}, K(1, 0, 1)), S("transposed", {transposed(real({5, 3}))}, K(3, 1, 1))});
  // count is filled in by the suite from the data (the number of nonzero elements).
  add(r, "nonzero",
      {S("2-d", {with_zeros(integer({4, 5}, -2, 2))}), S("1-d", {with_zeros(integer({7}, -1, 1))}),
       S("0-d", {integer({}, 1, 2)}), S("empty", {real({0, 3})}),
       S("transposed", {transposed(with_zeros(integer({3, 4}, -1, 1)))})});
  for (const char* n : {"tril", "triu"})
    add(r, n,
        {S("diagonal 0", {real({4, 5})}), S("diagonal 1", {real({4, 5})}, {{"diagonal", int64_t{1}}}),
         S("diagonal -2", {real({5, 4})}, {{"diagonal", int64_t{-2}}}), S("batch", {real({2, 3, 4})}),
         S("empty", {real({0, 3})}), S("transposed", {transposed(real({4, 4}))}, {{"diagonal", int64_t{-1}}}),
         S("flipped", {flipped(real({4, 3}))})});
  auto P = [](Shape pads, int64_t mode) { return AttrList{{"pads", pads}, {"mode", mode}, {"value", 0.5}}; };
  for (int64_t mode : {0, 1, 2, 3})
    add(r, "pad",
        {S("mode " + std::to_string(mode) + " 2-d", {real({3, 4})}, P({1, 2, 0, 1}, mode)),
         S("mode " + std::to_string(mode) + " 4-d", {real({1, 2, 3, 4})}, P({0, 0, 0, 0, 1, 1, 2, 2}, mode)),
         S("mode " + std::to_string(mode) + " transposed", {transposed(real({4, 3}))},
           P({2, 0, 1, 1}, mode))});
  add(r, "pad", {S("empty dim, constant", {real({0, 3})}, P({1, 1, 0, 2}, 0))});
}

void register_manip_grads(OpRegistry& r) {
  constexpr uint32_t kIndex = 2, kAll = 7;  // input bits: 1 x, 2 index, 4 values
  set_grad(r, "gather_nd", gather_nd_grad, kIndex, false);
  set_grad(r, "scatter_nd_add", scatter_nd_add_grad, kIndex, false);
  set_grad(r, "index_put", index_put_grad, kIndex, false);
  set_grad(r, "take_along_axis", take_along_axis_grad, kIndex, false);
  set_grad(r, "put_along_axis", put_along_axis_grad, kAll, false);
  set_grad(r, "sort", sort_grad, 0, true);
  set_grad(r, "topk", sort_grad, 0, true);
  set_grad(r, "tril", tri_grad, 0, false);
  set_grad(r, "pad", pad_grad, 0, false);
  set_grad(r, "triu", tri_grad, 0, false);
}

namespace ops {

Tensor gather_nd(const Tensor& x, const Tensor& index) { return call_op(OAR_OP("gather_nd"), {x, index})[0]; }
Tensor scatter_nd_add(const Tensor& x, const Tensor& index, const Tensor& updates) {
  return call_op(OAR_OP("scatter_nd_add"), {x, index, updates})[0];
}
void index_put(const Tensor& x, const Tensor& index, const Tensor& value, bool accumulate) {
  call_op(OAR_OP("index_put"), {x, index.contiguous(), value.contiguous()},
          Attrs{{"accumulate", int64_t{accumulate}}});
}
Tensor take_along_axis(const Tensor& x, const Tensor& index, int64_t axis) {
  return call_op(OAR_OP("take_along_axis"), {x, index}, Attrs{{"axis", axis}})[0];
}
Tensor put_along_axis(const Tensor& x, const Tensor& index, const Tensor& values, int64_t axis,
                      int64_t reduce) {
  return call_op(OAR_OP("put_along_axis"), {x, index, values}, Attrs{{"axis", axis}, {"reduce", reduce}})[0];
}
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t axis, bool descending) {
  auto r = call_op(OAR_OP("sort"), {x}, Attrs{{"axis", axis}, {"descending", int64_t{descending}}});
  return {r[0], r[1]};
}
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t axis, bool largest) {
  auto r = call_op(OAR_OP("topk"), {x}, Attrs{{"k", k}, {"axis", axis}, {"largest", int64_t{largest}}});
  return {r[0], r[1]};
}
Tensor nonzero(const Tensor& x) {
  Tensor n = ops::sum(x.dtype() == DType::kBool ? x : ops::cast(x, DType::kBool));
  const int64_t count = n.cpu().to_vector<int64_t>()[0];
  return call_op(OAR_OP("nonzero"), {x}, Attrs{{"count", count}})[0];
}
Tensor tril(const Tensor& x, int64_t diagonal) {
  return call_op(OAR_OP("tril"), {x}, Attrs{{"diagonal", diagonal}})[0];
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return call_op(OAR_OP("triu"), {x}, Attrs{{"diagonal", diagonal}})[0];
}
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, int64_t mode, double value) {
  return call_op(OAR_OP("pad"), {x}, Attrs{{"pads", pads}, {"mode", mode}, {"value", value}})[0];
}

}  // namespace ops
}  // namespace oar
