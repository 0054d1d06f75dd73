// Fused ops the training passes introduce (framework/src/ir/training_passes.cc, docs/static.md
// "Training passes"): each computes what a chain of ordinary ops computes, in one kernel. Their
// gradient rules are written with ordinary ops, so eager mode and append_backward work through them.
//
//   fused_gemm_epilogue(x, y, bias)        act(x @ y + bias); Paddle's op of that name (trans_x, trans_y,
//                                          activation none / relu / gelu); y 2-D, bias [N]
//   fused_elemwise_add_activation(x, y)    act(x + y), y x's trailing shape; Paddle's op with
//                                          functor_list [act, elementwise_add]
//   fused_add_layer_norm(x, residual, weight, bias) -> out, sum, mean, rstd
//                                          sum = x + residual, out = layer_norm(sum): the post-norm
//                                          Transformer's norm(x + sublayer(x)); sum is an output
//                                          because layer_norm's gradient reads it
//   fused_linear_param_grad(x, dout) -> dweight, dbias
//                                          a Linear's parameter gradients: x's rows^T @ dout's rows and
//                                          dout's column sums (Paddle's fused_linear_param_grad_add
//                                          without the accumulation inputs); no gradient of its own
#include <oar/core/autograd.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

AttrDef string_attr(const char* name, const char* def) {
  return {name, AttrType::kString, false, std::string(def)};
}

void require_activation(const InferContext& c, std::initializer_list<const char*> allowed) {
  const std::string& a = c.attrs->get_string("activation");
  std::string list;
  for (const char* n : allowed) {
    if (a == n) return;
    list += list.empty() ? "" : ", ";
    list += n;
  }
  OAR_THROW(ErrorCode::kInvalidArgument,
            op_name(c) << ": activation '" << a << "' is not supported (expected one of " << list << ")");
}

// fused_gemm_epilogue: x [..., M, K] (or [K, M] with trans_x, 2-D only), y [K, N] (or [N, K]), bias [N].
void infer_gemm_epilogue(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_same_dtype(c, 0, 2);
  require_activation(c, {"none", "relu", "gelu"});
  const Dims &x = c.inputs[0].dims, &y = c.inputs[1].dims, &b = c.inputs[2].dims;
  const bool tx = c.attrs->get_int("trans_x") != 0, ty = c.attrs->get_int("trans_y") != 0;
  OAR_ENFORCE(x.size() >= 2, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must have at least 2 dimensions, got shape " << x.to_string());
  OAR_ENFORCE(!tx || x.size() == 2, ErrorCode::kInvalidArgument,
              op_name(c) << ": trans_x needs a 2-D x, got shape " << x.to_string());
  OAR_ENFORCE(y.size() == 2, ErrorCode::kInvalidArgument,
              op_name(c) << ": y must be 2-D, got shape " << y.to_string());
  const int64_t m = tx ? x[1] : x[x.size() - 2], kx = tx ? x[0] : x[x.size() - 1];
  const int64_t ky = ty ? y[1] : y[0], n = ty ? y[0] : y[1];
  OAR_ENFORCE(kx == ky, ErrorCode::kInvalidArgument,
              op_name(c) << ": x.shape " << x.to_string() << " and y.shape " << y.to_string() << " (trans_x="
                         << tx << ", trans_y=" << ty << ") do not multiply: " << kx << " != " << ky);
  OAR_ENFORCE(b.size() == 1 && b[0] == n, ErrorCode::kInvalidArgument,
              op_name(c) << ": bias.shape " << b.to_string() << " must be [" << n << "]");
  Dims out(x.data(), x.size() - 2);
  out.push_back(m);
  out.push_back(n);
  c.outputs[0] = {c.inputs[0].dtype, out};
}

// fused_elemwise_add_activation: y broadcasts along x's leading axes (y's shape is x's trailing shape).
void infer_add_act(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_activation(c, {"relu", "sigmoid", "tanh", "gelu"});
  const Dims &x = c.inputs[0].dims, &y = c.inputs[1].dims;
  bool ok = y.size() <= x.size();
  for (int32_t i = 0; ok && i < y.size(); ++i) ok = y[i] == x[x.size() - y.size() + i];
  OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
              op_name(c) << ": y.shape " << y.to_string() << " must be the trailing part of x.shape "
                         << x.to_string());
  c.outputs[0] = c.inputs[0];
}

// fused_add_layer_norm: x and residual of one shape; weight and bias of the normalised shape.
void infer_add_layer_norm(InferContext& c) {
  require_floating(c, 0);
  for (int i = 1; i <= 3; ++i) require_same_dtype(c, 0, i);
  const Dims &x = c.inputs[0].dims, &r = c.inputs[1].dims;
  OAR_ENFORCE(x == r, ErrorCode::kInvalidArgument,
              op_name(c) << ": residual.shape " << r.to_string() << " != x.shape " << x.to_string());
  OAR_ENFORCE(x.size() >= 1, ErrorCode::kInvalidArgument, op_name(c) << ": x must have at least 1 dimension");
  const int64_t b = c.attrs->get_int("begin_norm_axis");
  OAR_ENFORCE(b >= 0 && b < x.size(), ErrorCode::kOutOfRange,
              op_name(c) << ": begin_norm_axis " << b << " is out of range for x of rank " << x.size());
  Dims norm(x.data() + b, x.size() - static_cast<int32_t>(b));
  for (int i = 2; i <= 3; ++i)
    OAR_ENFORCE(c.inputs[i].dims.numel() == norm.numel(), ErrorCode::kInvalidArgument,
                op_name(c) << ": " << input_name(c, i) << ".shape " << c.inputs[i].dims.to_string()
                           << " does not match normalized_shape " << norm.to_string());
  OAR_ENFORCE(c.attrs->get_float("epsilon") >= 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": epsilon " << c.attrs->get_float("epsilon") << " must be >= 0");
  const DType d = c.inputs[0].dtype;
  const DType sd = (d == DType::kFloat16 || d == DType::kBFloat16) ? DType::kFloat32 : d;
  Dims outer(x.data(), static_cast<int32_t>(b));
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[0];
  c.outputs[2] = {sd, outer};
  c.outputs[3] = {sd, outer};
}

// fused_linear_param_grad: x [..., K] and dout [..., N] with the same leading extents.
void infer_linear_param_grad(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  const Dims &x = c.inputs[0].dims, &g = c.inputs[1].dims;
  bool ok = x.size() >= 1 && x.size() == g.size();
  for (int32_t i = 0; ok && i + 1 < x.size(); ++i) ok = x[i] == g[i];
  OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
              op_name(c) << ": x.shape " << x.to_string() << " and dout.shape " << g.to_string()
                         << " must have the same leading extents");
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[x.size() - 1], g[g.size() - 1]}};
  c.outputs[1] = {c.inputs[0].dtype, Dims{g[g.size() - 1]}};
}

// ---- gradient rules -------------------------------------------------------------------------------

// The gradient through act at the pre-activation, from the output (relu, sigmoid, tanh) or from the
// pre-activation recomputed by `pre` (gelu).
template <class Pre>
Tensor act_backward(const std::string& act, const Tensor& out, const Tensor& g, Pre&& pre) {
  if (act == "none") return g;
  if (act == "relu") return call_op(OAR_OP("leaky_relu_grad"), {out, g}, Attrs{{"negative_slope", 0.0}})[0];
  if (act == "sigmoid") return ops::multiply(g, ops::multiply(out, ops::subtract(scalar_like(1, out), out)));
  if (act == "tanh") return ops::multiply(g, ops::subtract(scalar_like(1, out), ops::multiply(out, out)));
  return call_op(OAR_OP("gelu_grad"), {pre(), g}, Attrs{{"approximate", int64_t{0}}})[0];  // gelu
}

std::vector<Tensor> gemm_epilogue_grad(const GradContext& c) {
  const Tensor &x = X(c), &y = Y(c);
  const bool tx = c.attrs.get_int("trans_x") != 0, ty = c.attrs.get_int("trans_y") != 0;
  const std::string& act = c.attrs.get_string("activation");
  Tensor g = act_backward(act, OUT(c), g0(c), [&] {
    Attrs a = c.attrs;
    a.set("activation", std::string("none"));
    return call_op(OAR_OP("fused_gemm_epilogue"), {x, y, c.inputs[2]}, a)[0];
  });
  Tensor gx, gy, gb;
  if (c.needs_grad[0]) gx = tx ? ops::matmul(y, g, ty, true) : ops::matmul(g, y, false, !ty);
  if (c.needs_grad[1]) {
    if (tx) {
      gy = ty ? ops::matmul(g, x, true, true) : ops::matmul(x, g, false, false);
    } else {  // the rows of x and g flattened: one 2-D product (as matmul's rule for nn.Linear)
      const int64_t k = x.dim(-1), n = g.dim(-1);
      Tensor x2 = x.reshape({-1, k}), g2 = g.reshape({-1, n});
      gy = ty ? ops::matmul(g2, x2, true, false) : ops::matmul(x2, g2, true, false);
    }
  }
  if (c.needs_grad[2]) gb = unbroadcast(g, in_dims(c, 2));
  return {gx, gy, gb};
}

std::vector<Tensor> add_act_grad(const GradContext& c) {
  Tensor g =
      act_backward(c.attrs.get_string("activation"), OUT(c), g0(c), [&] { return ops::add(X(c), Y(c)); });
  Tensor gx, gy;
  if (c.needs_grad[0]) gx = g;
  if (c.needs_grad[1]) gy = unbroadcast(g, in_dims(c, 1));
  return {gx, gy};
}

// layer_norm's own rule on (sum, weight, bias) with the gradients of (out, mean, rstd); the sum's
// gradient (from layer_norm and from readers of the sum output) goes to x and residual alike.
std::vector<Tensor> add_layer_norm_grad(const GradContext& c) {
  const OpDef& ln = OpRegistry::get().at("layer_norm");
  std::vector<Tensor> ins = {c.outputs[1], c.inputs[2], c.inputs[3]};
  std::vector<Tensor> outs = {c.outputs[0], c.outputs[2], c.outputs[3]};
  std::vector<TensorMeta> in_meta = {c.output_meta[1], c.input_meta[2], c.input_meta[3]};
  std::vector<TensorMeta> out_meta = {c.output_meta[0], c.output_meta[2], c.output_meta[3]};
  std::vector<Tensor> gouts = {c.grad_outputs[0], c.grad_outputs[2], c.grad_outputs[3]};
  Attrs a{{"begin_norm_axis", c.attrs.get_int("begin_norm_axis")}, {"epsilon", c.attrs.get_float("epsilon")}};
  const bool need_sum = c.needs_grad[0] || c.needs_grad[1];
  GradContext lc{&ln, ins, outs, in_meta, out_meta, a, gouts, {need_sum, c.needs_grad[2], c.needs_grad[3]}};
  std::vector<Tensor> r;
  if (gouts[0].defined() || gouts[1].defined() || gouts[2].defined()) r = ln.grad.fn(lc);
  Tensor ds = r.empty() ? Tensor() : r[0];
  const Tensor& g_sum = c.grad_outputs[1];
  if (g_sum.defined()) ds = ds.defined() ? ops::add(ds, g_sum) : g_sum;
  if (need_sum && !ds.defined()) ds = ops::zeros(in_dims(c, 0), c.input_meta[0].dtype, c.outputs[1].place());
  return {c.needs_grad[0] ? ds : Tensor(), c.needs_grad[1] ? ds : Tensor(), r.size() > 1 ? r[1] : Tensor(),
          r.size() > 2 ? r[2] : Tensor()};
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  def(r, "fused_gemm_epilogue", {"x", "y", "bias"},
      {int_attr("trans_x", 0), int_attr("trans_y", 0), string_attr("activation", "none")},
      infer_gemm_epilogue);
  def(r, "fused_elemwise_add_activation", {"x", "y"}, {string_attr("activation", "relu")}, infer_add_act);
  def(r, "fused_add_layer_norm", {"x", "residual", "weight", "bias"},
      {req_int("begin_norm_axis"), float_attr("epsilon", 1e-5)}, infer_add_layer_norm)
      .outputs = {"out", "sum", "mean", "rstd"};
  def(r, "fused_linear_param_grad", {"x", "dout"}, {}, infer_linear_param_grad).outputs = {"dweight",
                                                                                           "dbias"};
}

void register_fused_grads(OpRegistry& r) {
  constexpr uint32_t kAll3 = 7, kNormParams = 4 | 8;
  set_grad(r, "fused_gemm_epilogue", gemm_epilogue_grad, kAll3, true);
  set_grad(r, "fused_elemwise_add_activation", add_act_grad, 3, true);
  set_grad(r, "fused_add_layer_norm", add_layer_norm_grad, kNormParams, true);
}

void register_fused_samples(OpRegistry& r) {
  using namespace sample;
  const std::vector<DType> f = {DType::kFloat32, DType::kFloat64};
  auto G = [](int64_t tx, int64_t ty, const char* act) {
    return AttrList{{"trans_x", tx}, {"trans_y", ty}, {"activation", std::string(act)}};
  };
  add(r, "fused_gemm_epilogue",
      {only(S("2-d", {real({3, 4}), real({4, 5}), real({5})}, G(0, 0, "none")), f),
       only(S("3-d x, relu", {real({2, 3, 4}), real({4, 5}), real({5})}, G(0, 0, "relu")), f),
       only(S("gelu", {real({3, 4}), real({4, 5}), real({5})}, G(0, 0, "gelu")), f),
       only(S("trans_y", {real({3, 4}), real({5, 4}), real({5})}, G(0, 1, "none")), f),
       only(S("trans_x trans_y", {real({4, 3}), real({5, 4}), real({5})}, G(1, 1, "relu")), f),
       only(S("views", {transposed(real({3, 4})), flipped(real({4, 5})), real({5})}, G(0, 0, "none")), f),
       only(S("empty rows", {real({0, 4}), real({4, 5}), real({5})}, G(0, 0, "relu")), f),
       only(loose(S("large", {real({40, 70}), real({70, 33}), real({33})}, G(0, 0, "relu")), 4), f)});
  auto A = [](const char* act) { return AttrList{{"activation", std::string(act)}}; };
  std::vector<OpSample> add_act;
  for (const char* act : {"relu", "sigmoid", "tanh", "gelu"})
    add_act.push_back(only(S(std::string("trailing y, ") + act, {real({3, 4}), real({4})}, A(act)), f));
  add_act.push_back(only(S("same shape", {real({2, 3}), real({2, 3})}, A("relu")), f));
  add_act.push_back(only(S("views", {transposed(real({4, 3})), flipped(real({3}))}, A("tanh")), f));
  add_act.push_back(only(S("empty", {real({0, 3}), real({3})}, A("relu")), f));
  add(r, "fused_elemwise_add_activation", add_act);
  add(r, "fused_add_layer_norm",
      {only(S("last dim", {real({4, 6}), real({4, 6}), real({6}, 0.5, 1.5), real({6}, -1, 1)},
              {{"begin_norm_axis", int64_t{1}}}),
            f),
       only(S("3-d", {real({2, 3, 8}), real({2, 3, 8}), real({8}, 0.5, 1.5), real({8})},
              {{"begin_norm_axis", int64_t{2}}, {"epsilon", 1e-3}}),
            f),
       only(S("views", {transposed(real({4, 6})), flipped(real({4, 6})), real({6}, 0.5, 1.5), real({6})},
              {{"begin_norm_axis", int64_t{1}}}),
            f)});
  add(r, "fused_linear_param_grad",
      {only(S("2-d", {real({5, 4}), real({5, 3})}), f), only(S("3-d", {real({2, 3, 4}), real({2, 3, 6})}), f),
       only(S("views", {transposed(real({5, 4})), flipped(real({5, 3}))}), f),
       only(S("no rows", {real({0, 4}), real({0, 3})}), f),
       only(loose(S("large", {real({300, 40}), real({300, 50})}), 4), f)});
}

}  // namespace oar
