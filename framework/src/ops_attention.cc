// Attention ops: the softmax gradients as single ops, and a fused attention block for training
// programs (docs/ops_nn.md, "Attention"; the passes that use them: framework/src/ir/attention_passes.cc).
//
// softmax_grad(out, grad)     -> out * (grad - sum(grad * out, axis))   (softmax's gradient rule)
// log_softmax_grad(out, grad) -> grad - exp(out) * sum(grad, axis)        (log_softmax's)
// fused_attention(q, k, v[, mask]) -> out = P v, softmax P = softmax(scale * q k^T [+ mask]) over the
//   last axis; q [..., Lq, d], k [..., Lk, d], v [..., Lk, dv] with the same leading dims, mask
//   broadcastable to [..., Lq, Lk]. P is an output because the backward reads it.
// fused_attention_grad(q, k, v, softmax, dout) -> dq, dk, dv: the four matmul gradients and the
//   softmax gradient of the block in one op (the mask's gradient is not part of it).
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {

void register_attention_ops(OpRegistry& r);      // called from op_defs.cc
void register_attention_grads(OpRegistry& r);    // called from op_defs.cc
void register_attention_samples(OpRegistry& r);  // called from op_samples.cc

namespace {
using namespace opdef;
using namespace gradutil;

// softmax_grad / log_softmax_grad (out, grad): floating, same dtype and shape; axis normalised.
void infer_softmax_grad(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  OAR_ENFORCE(c.inputs[0].dims == c.inputs[1].dims, ErrorCode::kInvalidArgument,
              op_name(c) << ": grad.shape " << c.inputs[1].dims.to_string() << " != out.shape "
                         << c.inputs[0].dims.to_string());
  c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), c.inputs[0].dims.size()));
  c.outputs[0] = c.inputs[0];
}

const char* const kQkvNames[] = {"q", "k", "v", "mask", "dout"};

// d[size + i] for negative i (Dims indexes from the front only).
int64_t back(const Dims& d, int32_t i) { return d[d.size() + i]; }

// The leading ("batch") dims of a [..., L, d] operand.
Dims lead(const Dims& d) { return Dims(d.data(), d.size() - 2); }

void require_rank2(const InferContext& c, int i) {
  OAR_ENFORCE(c.inputs[i].dims.size() >= 2, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << kQkvNames[i]
                         << " must have at least 2 dimensions [..., length, dim], got shape "
                         << c.inputs[i].dims.to_string());
}

// Checks q, k, v (inputs 0..2) and returns the scores' shape [..., Lq, Lk].
Dims attention_scores_dims(const InferContext& c) {
  for (int i = 0; i < 3; ++i) {
    OAR_ENFORCE(c.inputs[i].dtype == DType::kFloat32 || c.inputs[i].dtype == DType::kFloat64,
                ErrorCode::kType,
                op_name(c) << ": " << kQkvNames[i] << ".dtype " << dtype_name(c.inputs[i].dtype)
                           << " is not supported; expected float32 or float64");
    require_rank2(c, i);
  }
  const Dims &q = c.inputs[0].dims, &k = c.inputs[1].dims, &v = c.inputs[2].dims;
  OAR_ENFORCE(lead(q) == lead(k) && lead(q) == lead(v), ErrorCode::kInvalidArgument,
              op_name(c) << ": q, k and v must have the same leading dims, got shapes " << q.to_string()
                         << ", " << k.to_string() << ", " << v.to_string());
  OAR_ENFORCE(back(q, -1) == back(k, -1), ErrorCode::kInvalidArgument,
              op_name(c) << ": q.shape " << q.to_string() << " and k.shape " << k.to_string()
                         << " differ in the last dim (the contraction)");
  OAR_ENFORCE(back(k, -2) == back(v, -2), ErrorCode::kInvalidArgument,
              op_name(c) << ": k.shape " << k.to_string() << " and v.shape " << v.to_string()
                         << " differ in the key length (dim -2)");
  Dims s = q;
  s[s.size() - 1] = back(k, -2);
  return s;
}

// An output written as its transpose over dims -3 and -2 ([..., heads, L, d] stored as [..., L, heads, d],
// the head merge of attention) when the attribute is set.
Dims maybe_heads_last(const InferContext& c, Dims d, const char* attr) {
  const int64_t flag = c.attrs->get_int(attr);
  OAR_ENFORCE(flag == 0 || flag == 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << attr << " must be 0 or 1, got " << flag);
  if (flag == 0) return d;
  OAR_ENFORCE(d.size() >= 3, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << attr << " needs outputs of rank >= 3, got shape " << d.to_string());
  std::swap(d[d.size() - 3], d[d.size() - 2]);
  return d;
}

void infer_fused_attention(InferContext& c) {
  OAR_ENFORCE(c.num_inputs == 3 || c.num_inputs == 4, ErrorCode::kInvalidArgument,
              "fused_attention: takes q, k, v and an optional mask, got " << c.num_inputs << " inputs");
  Dims s = attention_scores_dims(c);
  for (int i = 1; i < c.num_inputs; ++i)
    OAR_ENFORCE(c.inputs[i].dtype == c.inputs[0].dtype, ErrorCode::kType,
                "fused_attention: " << kQkvNames[i] << ".dtype (" << dtype_name(c.inputs[i].dtype)
                                    << ") != q.dtype (" << dtype_name(c.inputs[0].dtype) << ")");
  if (c.num_inputs == 4) {
    Dims b = broadcast(c, s, c.inputs[3].dims, "scores", "mask");
    OAR_ENFORCE(b == s, ErrorCode::kInvalidArgument,
                "fused_attention: mask.shape " << c.inputs[3].dims.to_string()
                                               << " does not broadcast to the scores' shape "
                                               << s.to_string());
  }
  Dims o = c.inputs[0].dims;
  o[o.size() - 1] = back(c.inputs[2].dims, -1);
  c.outputs[0] = {c.inputs[0].dtype, maybe_heads_last(c, o, "transpose_out")};
  c.outputs[1] = {c.inputs[0].dtype, s};
}

void infer_fused_attention_grad(InferContext& c) {
  Dims s = attention_scores_dims(c);
  for (int i = 1; i < 5; ++i) require_same_dtype(c, 0, i);
  OAR_ENFORCE(
      c.inputs[3].dims == s, ErrorCode::kInvalidArgument,
      "fused_attention_grad: softmax.shape " << c.inputs[3].dims.to_string() << " must be " << s.to_string());
  Dims o = c.inputs[0].dims;
  o[o.size() - 1] = back(c.inputs[2].dims, -1);
  OAR_ENFORCE(
      c.inputs[4].dims == o, ErrorCode::kInvalidArgument,
      "fused_attention_grad: dout.shape " << c.inputs[4].dims.to_string() << " must be " << o.to_string());
  const char* flags[] = {"transpose_dq", "transpose_dk", "transpose_dv"};
  for (int i = 0; i < 3; ++i)
    c.outputs[i] = {c.inputs[i].dtype, maybe_heads_last(c, c.inputs[i].dims, flags[i])};
}

// fused_softmax_mask(x, mask): softmax(x + mask) over the last axis, mask broadcast to x (Paddle's
// fused_softmax_mask, behind paddle.incubate.softmax_mask_fuse).
void infer_fused_softmax_mask(InferContext& c) {
  for (int i = 0; i < 2; ++i)
    OAR_ENFORCE(
        c.inputs[i].dtype == DType::kFloat32 || c.inputs[i].dtype == DType::kFloat64, ErrorCode::kType,
        "fused_softmax_mask: " << (i == 0 ? "x" : "mask") << ".dtype " << dtype_name(c.inputs[i].dtype)
                               << " is not supported; expected float32 or float64");
  require_same_dtype(c, 0, 1);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() >= 1, ErrorCode::kInvalidArgument,
              "fused_softmax_mask: x must have at least 1 dimension");
  Dims b = broadcast(c, x, c.inputs[1].dims, "x", "mask");
  OAR_ENFORCE(b == x, ErrorCode::kInvalidArgument,
              "fused_softmax_mask: mask.shape " << c.inputs[1].dims.to_string()
                                                << " does not broadcast to x.shape " << x.to_string());
  c.outputs[0] = c.inputs[0];
}

// ---- gradient rules -------------------------------------------------------------------------------
Attrs axis_attrs(const GradContext& c) { return Attrs{{"axis", c.attrs.get_int("axis")}}; }

// Whether y's device runs `op` itself. A device without the kernel (the GPU plugins today) keeps the
// composite gradient, whose ops it has, rather than sending each call through the CPU fallback.
bool device_has(const std::string& op, const Tensor& y) { return has_kernel(op, y.place(), y.dtype()); }

std::vector<Tensor> softmax_rule(const GradContext& c) {
  static const std::string kOp = "softmax_grad";
  const Tensor &y = OUT(c), &g = g0(c);
  if (device_has(kOp, y)) return {call_op(OAR_OP("softmax_grad"), {y, g}, axis_attrs(c))[0]};
  const int64_t axis = c.attrs.get_int("axis");
  return {ops::multiply(y, ops::subtract(g, ops::sum(ops::multiply(g, y), {axis}, true)))};
}
std::vector<Tensor> log_softmax_rule(const GradContext& c) {
  static const std::string kOp = "log_softmax_grad";
  const Tensor &y = OUT(c), &g = g0(c);
  if (device_has(kOp, y)) return {call_op(OAR_OP("log_softmax_grad"), {y, g}, axis_attrs(c))[0]};
  const int64_t axis = c.attrs.get_int("axis");
  return {ops::subtract(g, ops::multiply(ops::exp(y), ops::sum(g, {axis}, true)))};
}

// softmax_grad(y, g) = y (g - s), s = sum(g y): with gg the incoming gradient and t = sum(gg y),
// d/dg = y (gg - t) (the op again: the Jacobian is symmetric), d/dy = gg (g - s) - g t.
std::vector<Tensor> softmax_grad_rule(const GradContext& c) {
  const Tensor &y = c.inputs[0], &g = c.inputs[1], &gg = g0(c);
  const int64_t axis = c.attrs.get_int("axis");
  Tensor dy, dg;
  if (c.needs_grad[0]) {
    Tensor s = ops::sum(ops::multiply(g, y), {axis}, true), t = ops::sum(ops::multiply(gg, y), {axis}, true);
    dy = ops::subtract(ops::multiply(gg, ops::subtract(g, s)), ops::multiply(g, t));
  }
  if (c.needs_grad[1]) dg = call_op(OAR_OP("softmax_grad"), {y, gg}, axis_attrs(c))[0];
  return {dy, dg};
}

// log_softmax_grad(y, g) = g - exp(y) S, S = sum(g): d/dg = gg - sum(gg exp(y)), d/dy = -gg exp(y) S.
std::vector<Tensor> log_softmax_grad_rule(const GradContext& c) {
  const Tensor &y = c.inputs[0], &g = c.inputs[1], &gg = g0(c);
  const int64_t axis = c.attrs.get_int("axis");
  Tensor e = ops::exp(y), dy, dg;
  if (c.needs_grad[0]) dy = ops::neg(ops::multiply(ops::multiply(gg, e), ops::sum(g, {axis}, true)));
  if (c.needs_grad[1]) dg = ops::subtract(gg, ops::sum(ops::multiply(gg, e), {axis}, true));
  return {dy, dg};
}

Attrs scale_attrs(const GradContext& c) { return Attrs{{"scale", c.attrs.get_float("scale")}}; }

// fused_attention's outputs are (out, softmax). The block's gradient is fused_attention_grad; a
// gradient reaching the softmax output directly, or a mask that needs one, adds composite terms.
std::vector<Tensor> fused_attention_rule(const GradContext& c) {
  const Tensor &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &p = c.outputs[1],
               &gp = c.grad_outputs[1];
  Tensor g = c.grad_outputs[0];
  if (g.defined() && c.attrs.get_int("transpose_out") != 0) {  // back to [..., heads, Lq, dv] (a view)
    std::vector<int64_t> perm(static_cast<size_t>(g.ndim()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::swap(perm[perm.size() - 3], perm[perm.size() - 2]);
    g = g.transpose(perm);
  }
  const bool mask_grad = c.inputs.size() == 4 && c.needs_grad[3];
  const Attrs last{{"axis", static_cast<int64_t>(p.ndim()) - 1}};
  std::vector<Tensor> out(c.inputs.size());
  if (g.defined()) {
    std::vector<Tensor> r = call_op(OAR_OP("fused_attention_grad"), {q, k, v, p, g}, scale_attrs(c));
    for (int i = 0; i < 3; ++i) out[i] = r[i];
  }
  Tensor ds_p;  // the scores' gradient from gp (softmax_grad is linear in its second input)
  if (gp.defined()) {
    ds_p = call_op(OAR_OP("softmax_grad"), {p, gp}, last)[0];
    const Tensor sc = scalar_like(c.attrs.get_float("scale"), q);
    const Tensor dq = ops::multiply(ops::matmul(ds_p, k), sc);
    const Tensor dk = ops::multiply(ops::matmul(ds_p, q, true, false), sc);
    out[0] = out[0].defined() ? ops::add(out[0], dq) : dq;
    out[1] = out[1].defined() ? ops::add(out[1], dk) : dk;
  }
  if (mask_grad) {  // the scores' whole gradient, summed to the mask's shape
    Tensor ds = ds_p;
    if (g.defined()) {
      Tensor ds_g = call_op(OAR_OP("softmax_grad"), {p, ops::matmul(g, v, false, true)}, last)[0];
      ds = ds.defined() ? ops::add(ds, ds_g) : ds_g;
    }
    out[3] = unbroadcast(ds, in_dims(c, 3));
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (!c.needs_grad[i]) out[i] = Tensor();
  return out;
}

// fused_softmax_mask: d x = softmax_grad(out, g) over the last axis; d mask = the same, summed to its shape.
std::vector<Tensor> fused_softmax_mask_rule(const GradContext& c) {
  const Tensor& y = OUT(c);
  Tensor dx =
      call_op(OAR_OP("softmax_grad"), {y, g0(c)}, Attrs{{"axis", static_cast<int64_t>(y.ndim()) - 1}})[0];
  return {c.needs_grad[0] ? dx : Tensor(), c.needs_grad[1] ? unbroadcast(dx, in_dims(c, 1)) : Tensor()};
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  def(r, "softmax_grad", {"out", "grad"}, {int_attr("axis", -1)}, infer_softmax_grad);
  def(r, "fused_softmax_mask", {"x", "mask"}, {}, infer_fused_softmax_mask);
  def(r, "log_softmax_grad", {"out", "grad"}, {int_attr("axis", -1)}, infer_softmax_grad);
  def(r, "fused_attention", {"x"}, {float_attr("scale", 1.0), int_attr("transpose_out", 0)},
      infer_fused_attention, 0, /*variadic=*/true)
      .outputs = {"out", "softmax"};
  // No gradient rule of its own: it only appears in backward programs (attention_passes.cc), which are
  // not differentiated again; differentiating it raises, naming the op.
  def(r, "fused_attention_grad", {"q", "k", "v", "softmax", "dout"},
      {float_attr("scale", 1.0), int_attr("transpose_dq", 0), int_attr("transpose_dk", 0),
       int_attr("transpose_dv", 0)},
      infer_fused_attention_grad)
      .outputs = {"dq", "dk", "dv"};
}

void register_attention_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kXY = 3, kAll = 0xf;
  set_grad(r, "softmax", softmax_rule, kNone, true);
  set_grad(r, "log_softmax", log_softmax_rule, kNone, true);
  set_grad(r, "softmax_grad", softmax_grad_rule, kXY, false);
  set_grad(r, "log_softmax_grad", log_softmax_grad_rule, kXY, false);
  set_grad(r, "fused_attention", fused_attention_rule, kAll, true);
  set_grad(r, "fused_softmax_mask", fused_softmax_mask_rule, kNone, true);
}

void register_attention_samples(OpRegistry& r) {
  using namespace sample;
  auto A = [](int64_t axis) { return AttrList{{"axis", axis}}; };
  // out is a probability-like input (softmax's output); any values are valid for the formula.
  for (const char* op : {"softmax_grad", "log_softmax_grad"}) {
    const double lo = std::string(op) == "softmax_grad" ? 0.05 : -3,
                 hi = std::string(op) == "softmax_grad" ? 0.5 : -0.5;
    add(r, op,
        {S("axis -1", {real({3, 4, 5}, lo, hi), real({3, 4, 5})}, A(-1)),
         S("axis 1", {real({3, 4, 5}, lo, hi), real({3, 4, 5})}, A(1)),
         S("axis 0", {real({4, 3}, lo, hi), real({4, 3})}, A(0)),
         S("0-d", {real({}, lo, hi), real({})}, A(0)), S("empty", {real({0, 4}, lo, hi), real({0, 4})}, A(1)),
         S("long rows", {real({2, 300}, lo, hi), real({2, 300})}, A(-1)),
         S("views", {transposed(real({4, 6}, lo, hi)), flipped(real({4, 6}))}, A(1))});
  }
  add(r, "fused_softmax_mask",
      {S("4-d, mask [b, 1, q, k]", {real({2, 3, 4, 5}), real({2, 1, 4, 5}, -3, 0)}),
       S("same shape", {real({3, 6}), real({3, 6}, -3, 0)}), S("0-d mask", {real({2, 5}), real({}, -1, 0)}),
       S("views", {transposed(real({2, 4, 5})), flipped(real({4, 5}, -3, 0))}),
       S("empty", {real({0, 5}), real({5})})});
  add(r, "fused_attention",
      {S("4-d", {real({2, 2, 3, 4}), real({2, 2, 5, 4}), real({2, 2, 5, 3})}),
       S("scaled, 3-d", {real({2, 3, 4}), real({2, 6, 4}), real({2, 6, 2})}, {{"scale", 0.5}}),
       S("mask", {real({2, 2, 3, 4}), real({2, 2, 5, 4}), real({2, 2, 5, 3}), real({2, 1, 3, 5}, -3, 0)}),
       S("views", {transposed(real({2, 4, 3})), real({2, 5, 3}), flipped(real({2, 5, 4}))}),
       S("empty batch", {real({0, 3, 4}), real({0, 5, 4}), real({0, 5, 2})}),
       S("heads last out", {real({2, 2, 3, 4}), real({2, 2, 5, 4}), real({2, 2, 5, 3})},
         {{"transpose_out", int64_t{1}}})});
  add(r, "fused_attention_grad",
      {S("4-d", {real({2, 2, 3, 4}), real({2, 2, 5, 4}), real({2, 2, 5, 3}), real({2, 2, 3, 5}, 0.05, 0.4),
                 real({2, 2, 3, 3})}),
       S("scaled, views",
         {transposed(real({2, 4, 3})), real({2, 5, 3}), real({2, 5, 2}), real({2, 4, 5}, 0.05, 0.4),
          flipped(real({2, 4, 2}))},
         {{"scale", 0.25}}),
       S("heads last outputs",
         {real({2, 2, 3, 4}), real({2, 2, 5, 4}), real({2, 2, 5, 3}), real({2, 2, 3, 5}, 0.05, 0.4),
          real({2, 2, 3, 3})},
         {{"transpose_dk", int64_t{1}}, {"transpose_dv", int64_t{1}}})});
}

}  // namespace oar
