// Normalisation, activation and loss ops (oar.nn.functional).
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
//
// Kernels here are the hot paths only: fused activations (each with a fused "<op>_grad" op),
// layer_norm, batch_norm (+ their _grad ops) and softmax_cross_entropy (+ its grad). Everything else in
// oar.nn.functional is a Python composite of existing ops (docs/ops_nn.md).
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops_nn.h>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

// The fused activations: name, attributes. Each has a "<name>_grad" op (x, grad) -> dx.
struct ActDef {
  const char* name;
  const char* grad_name;
  std::vector<AttrDef> attrs;
};
const std::vector<ActDef>& activations() {
  static const std::vector<ActDef> defs = {
      {"gelu", "gelu_grad", {int_attr("approximate", 0)}},
      {"silu", "silu_grad", {}},
      {"leaky_relu", "leaky_relu_grad", {float_attr("negative_slope", 0.01)}},
      {"elu", "elu_grad", {float_attr("alpha", 1.0)}},
      {"softplus", "softplus_grad", {float_attr("beta", 1.0), float_attr("threshold", 20.0)}},
      {"hardswish", "hardswish_grad", {}},
      {"hardsigmoid", "hardsigmoid_grad", {float_attr("slope", 1.0 / 6.0), float_attr("offset", 0.5)}},
  };
  return defs;
}

void infer_act_grad(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  OAR_ENFORCE(c.inputs[0].dims == c.inputs[1].dims, ErrorCode::kInvalidArgument,
              op_name(c) << ": grad.shape " << c.inputs[1].dims.to_string() << " != x.shape "
                         << c.inputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
}

// Statistics of 16-bit inputs are kept in float32.
DType stat_dtype(DType d) { return (d == DType::kFloat16 || d == DType::kBFloat16) ? DType::kFloat32 : d; }

// layer_norm(x, weight, bias): normalises over the dims from begin_norm_axis on; weight and bias
// have that trailing shape. Outputs out, mean and rstd ([outer] each).
void infer_layer_norm(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_same_dtype(c, 0, 2);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() >= 1, ErrorCode::kInvalidArgument, "layer_norm: x must have at least 1 dimension");
  int64_t b = c.attrs->get_int("begin_norm_axis");
  OAR_ENFORCE(b >= 0 && b < x.size(), ErrorCode::kOutOfRange,
              "layer_norm: begin_norm_axis " << b << " is out of range for x of rank " << x.size());
  Dims norm(x.data() + b, x.size() - static_cast<int32_t>(b));
  for (int i = 1; i <= 2; ++i)
    OAR_ENFORCE(c.inputs[i].dims.numel() == norm.numel(), ErrorCode::kInvalidArgument,
                "layer_norm: " << c.op->inputs[i] << ".shape " << c.inputs[i].dims.to_string()
                               << " does not match normalized_shape " << norm.to_string());
  OAR_ENFORCE(c.attrs->get_float("epsilon") >= 0, ErrorCode::kInvalidArgument,
              "layer_norm: epsilon " << c.attrs->get_float("epsilon") << " must be >= 0");
  Dims outer(x.data(), static_cast<int32_t>(b));
  DType sd = stat_dtype(c.inputs[0].dtype);
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = {sd, outer};
  c.outputs[2] = {sd, outer};
}

// layer_norm_grad(x, weight, mean, rstd, dy) -> dx, dweight, dbias.
void infer_layer_norm_grad(InferContext& c) {
  // (x, weight, mean, rstd, dy): the statistics come from layer_norm in its statistics dtype.
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_same_dtype(c, 0, 4);
  const DType sd = stat_dtype(c.inputs[0].dtype);
  for (int i = 2; i <= 3; ++i)
    OAR_ENFORCE(c.inputs[i].dtype == sd, ErrorCode::kType,
                "layer_norm_grad: " << c.op->inputs[i] << ".dtype " << dtype_name(c.inputs[i].dtype)
                                    << " must be " << dtype_name(sd) << " for x.dtype "
                                    << dtype_name(c.inputs[0].dtype));
  OAR_ENFORCE(c.inputs[4].dims == c.inputs[0].dims, ErrorCode::kInvalidArgument,
              "layer_norm_grad: dy.shape " << c.inputs[4].dims.to_string() << " != x.shape "
                                           << c.inputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[1];
  c.outputs[2] = c.inputs[1];
}

// batch_norm(x, weight, bias, running_mean, running_var) -> out, mean_out, var_out, saved_mean,
// saved_rstd. Normalises every channel (axis channel_axis of x) over all the other axes. Training
// (use_global_stats 0): with the batch's mean and biased variance, and mean_out / var_out are the
// running statistics moved towards them (running * momentum + batch * (1 - momentum), as Paddle does);
// the caller assigns them back. use_global_stats 1: with running_mean / running_var, which mean_out /
// var_out then repeat. saved_mean / saved_rstd are the statistics used and 1 / sqrt(var + epsilon), for
// batch_norm_grad. The four [C] inputs and outputs are in x's statistics dtype (float32 for 16-bit x).
void infer_batch_norm(InferContext& c) {
  require_floating(c, 0);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() >= 2, ErrorCode::kInvalidArgument,
              "batch_norm: x must have at least 2 dimensions, got shape " << x.to_string());
  const int64_t axis = normalize_axis(c, c.attrs->get_int("channel_axis"), x.size());
  c.attrs->set("channel_axis", axis);
  const int64_t ch = x[static_cast<int32_t>(axis)];
  const DType sd = stat_dtype(c.inputs[0].dtype);
  for (int i = 1; i <= 4; ++i) {
    OAR_ENFORCE(c.inputs[i].dims.size() == 1 && c.inputs[i].dims[0] == ch, ErrorCode::kInvalidArgument,
                "batch_norm: " << c.op->inputs[i] << ".shape " << c.inputs[i].dims.to_string() << " must be ["
                               << ch << "] (the channels of x, axis " << axis << ")");
    OAR_ENFORCE(c.inputs[i].dtype == sd, ErrorCode::kType,
                "batch_norm: " << c.op->inputs[i] << ".dtype " << dtype_name(c.inputs[i].dtype) << " must be "
                               << dtype_name(sd) << " for x.dtype " << dtype_name(c.inputs[0].dtype));
  }
  OAR_ENFORCE(c.attrs->get_float("epsilon") >= 0, ErrorCode::kInvalidArgument,
              "batch_norm: epsilon " << c.attrs->get_float("epsilon") << " must be >= 0");
  if (!c.attrs->get_int("use_global_stats"))
    OAR_ENFORCE(x.numel() > 0, ErrorCode::kInvalidArgument,
                "batch_norm: training statistics need a non-empty x, got shape " << x.to_string());
  c.outputs[0] = c.inputs[0];
  for (int i = 1; i <= 4; ++i) c.outputs[i] = {sd, Dims{ch}};
}

// batch_norm_grad(x, weight, saved_mean, saved_rstd, dy) -> dx, dweight, dbias, with batch_norm's
// channel_axis and use_global_stats (1: the statistics were constants, so dx = dy * weight * rstd).
void infer_batch_norm_grad(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 4);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() >= 2, ErrorCode::kInvalidArgument,
              "batch_norm_grad: x must have at least 2 dimensions, got shape " << x.to_string());
  const int64_t axis = normalize_axis(c, c.attrs->get_int("channel_axis"), x.size());
  c.attrs->set("channel_axis", axis);
  const int64_t ch = x[static_cast<int32_t>(axis)];
  const DType sd = stat_dtype(c.inputs[0].dtype);
  for (int i = 1; i <= 3; ++i) {
    OAR_ENFORCE(c.inputs[i].dims.size() == 1 && c.inputs[i].dims[0] == ch, ErrorCode::kInvalidArgument,
                "batch_norm_grad: " << c.op->inputs[i] << ".shape " << c.inputs[i].dims.to_string()
                                    << " must be [" << ch << "]");
    OAR_ENFORCE(c.inputs[i].dtype == sd, ErrorCode::kType,
                "batch_norm_grad: " << c.op->inputs[i] << ".dtype " << dtype_name(c.inputs[i].dtype)
                                    << " must be " << dtype_name(sd) << " for x.dtype "
                                    << dtype_name(c.inputs[0].dtype));
  }
  OAR_ENFORCE(
      c.inputs[4].dims == x, ErrorCode::kInvalidArgument,
      "batch_norm_grad: dy.shape " << c.inputs[4].dims.to_string() << " != x.shape " << x.to_string());
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = {sd, Dims{ch}};
  c.outputs[2] = {sd, Dims{ch}};
}

void require_label(const InferContext& c, int i) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(d == DType::kInt64 || d == DType::kInt32, ErrorCode::kType,
              op_name(c) << ": label.dtype must be int32 or int64, got " << dtype_name(d));
}

// softmax_cross_entropy(logits [N, C], label [N]) -> loss [N], softmax [N, C]. Rows whose label is
// ignore_index get loss 0 and no gradient.
void infer_softmax_ce(InferContext& c) {
  require_floating(c, 0);
  require_label(c, 1);
  const Dims &x = c.inputs[0].dims, &l = c.inputs[1].dims;
  OAR_ENFORCE(x.size() == 2, ErrorCode::kInvalidArgument,
              "softmax_cross_entropy: logits must be 2-D [N, C], got shape " << x.to_string());
  OAR_ENFORCE(l.size() == 1 && l[0] == x[0], ErrorCode::kInvalidArgument,
              "softmax_cross_entropy: label.shape " << l.to_string() << " must be [" << x[0] << "]");
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0]}};
  c.outputs[1] = c.inputs[0];
}
// softmax_cross_entropy_grad(softmax, label, dloss) -> dlogits.
void infer_softmax_ce_grad(InferContext& c) { c.outputs[0] = c.inputs[0]; }

// ---- gradient rules -------------------------------------------------------------------------------
std::vector<Tensor> act_grad(const GradContext& c) {
  std::string grad_name = std::string(c.op->name) + "_grad";
  return {call_op(grad_name, {X(c), g0(c)}, c.attrs)[0]};
}

// f''(x) of a fused activation, written with ops so the "<act>_grad" ops are differentiable as well.
Tensor act_second_derivative(const std::string& name, const Tensor& x, const Attrs& a) {
  using ops::multiply;
  using ops::subtract;
  auto s = [&](double v) { return scalar_like(v, x); };
  if (name == "elu")
    return multiply(mask(ops::less_equal(x, s(0)), x), multiply(s(a.get_float("alpha")), ops::exp(x)));
  if (name == "silu") {  // s (1 - s) (2 + x (1 - 2 s))
    Tensor sg = ops::sigmoid(x);
    return multiply(multiply(sg, subtract(s(1), sg)),
                    ops::add(s(2), multiply(x, subtract(s(1), multiply(s(2), sg)))));
  }
  if (name == "softplus") {  // beta s (1 - s) below the threshold, 0 above
    double beta = a.get_float("beta"), th = a.get_float("threshold");
    Tensor bx = multiply(x, s(beta));
    Tensor sg = ops::sigmoid(bx);
    return multiply(mask(ops::less_equal(bx, s(th)), x), multiply(s(beta), multiply(sg, subtract(s(1), sg))));
  }
  if (name == "hardswish")
    return multiply(mask(ops::logical_and(ops::greater_than(x, s(-3)), ops::less_than(x, s(3))), x),
                    s(1.0 / 3));
  if (name == "gelu") {
    Tensor x2 = multiply(x, x);
    if (a.get_int("approximate") == 0)  // phi(x) (2 - x^2)
      return multiply(multiply(s(0.3989422804014327), ops::exp(multiply(s(-0.5), x2))), subtract(s(2), x2));
    // u = k (x + c x^3), t = tanh u: f'' = (1 - t^2) (u' - x t u'^2 + 3 k c x^2)
    const double k = 0.7978845608028654, cc = 0.044715;
    Tensor t = ops::tanh(multiply(s(k), ops::add(x, multiply(s(cc), multiply(x2, x)))));
    Tensor du = multiply(s(k), ops::add(s(1), multiply(s(3 * cc), x2)));
    Tensor inner =
        ops::add(subtract(du, multiply(multiply(x, t), multiply(du, du))), multiply(s(3 * k * cc), x2));
    return multiply(subtract(s(1), multiply(t, t)), inner);
  }
  return ops::zeros(x.dims(), x.dtype(), x.place());  // leaky_relu, hardsigmoid: piecewise linear
}

// "<act>_grad"(x, g) = g f'(x): d/dx = gg g f''(x), d/dg = gg f'(x) (the grad op again).
std::vector<Tensor> act_grad_grad(const GradContext& c) {
  std::string name(c.op->name);
  name.resize(name.size() - 5);  // strip "_grad"
  const Tensor &x = c.inputs[0], &g = c.inputs[1], &gg = g0(c);
  Tensor dx, dg;
  if (c.needs_grad[0]) dx = ops::multiply(ops::multiply(gg, g), act_second_derivative(name, x, c.attrs));
  if (c.needs_grad[1]) dg = call_op(c.op->name, {x, gg}, c.attrs)[0];
  return {dx, dg};
}

// layer_norm's outputs are (out, mean, rstd); mean and rstd are statistics of x over the N normalised
// elements of each row: d mean / dx = 1 / N and d rstd / dx = -rstd^3 (x - mean) / N.
std::vector<Tensor> layer_norm_grad_rule(const GradContext& c) {
  const Tensor &g = c.grad_outputs[0], &g_mean = c.grad_outputs[1], &g_rstd = c.grad_outputs[2];
  Tensor dx, dw, db;
  if (g.defined()) {
    std::vector<Tensor> r =
        call_op(OAR_OP("layer_norm_grad"), {c.inputs[0], c.inputs[1], c.outputs[1], c.outputs[2], g},
                Attrs{{"begin_norm_axis", c.attrs.get_int("begin_norm_axis")}});
    dx = r[0];
    if (c.needs_grad[1]) dw = r[1].reshape(in_dims(c, 1));
    if (c.needs_grad[2]) db = r[2].reshape(in_dims(c, 2));
  }
  if (c.needs_grad[0] && (g_mean.defined() || g_rstd.defined())) {
    const Tensor& x = c.inputs[0];
    const int32_t b = static_cast<int32_t>(c.attrs.get_int("begin_norm_axis"));
    Dims kept = in_dims(c, 0);  // the statistics' shape with the normalised axes kept as 1
    int64_t n = 1;
    for (int32_t i = b; i < kept.size(); ++i) {
      n *= kept[i];
      kept[i] = 1;
    }
    const Tensor &mean = c.outputs[1], &rstd = c.outputs[2];
    const Tensor xs = x.dtype() == mean.dtype() ? x : ops::cast(x, mean.dtype());
    Tensor stat;  // d(statistics) / dx, in the statistics' dtype, broadcast over the normalised axes
    if (g_mean.defined()) stat = ops::divide(g_mean.reshape(kept), scalar_like(static_cast<double>(n), mean));
    if (g_rstd.defined()) {
      Tensor r3 = ops::multiply(rstd, ops::multiply(rstd, rstd));
      Tensor coef = ops::multiply(ops::multiply(g_rstd, r3), scalar_like(-1.0 / static_cast<double>(n), rstd))
                        .reshape(kept);
      Tensor t = ops::multiply(coef, ops::subtract(xs, mean.reshape(kept)));
      stat = stat.defined() ? ops::add(stat, t) : t;
    }
    stat = ops::add(stat, ops::zeros(in_dims(c, 0), stat.dtype(), stat.place()));  // to x's shape
    if (stat.dtype() != x.dtype()) stat = ops::cast(stat, x.dtype());
    dx = dx.defined() ? ops::add(dx, stat) : stat;
  }
  return {c.needs_grad[0] ? dx : Tensor(), dw, db};
}

// batch_norm: out's gradient through batch_norm_grad. The running statistics (mean_out, var_out) and
// the saved statistics are not differentiated, nor are running_mean / running_var (buffers): a gradient
// asked of them is refused rather than silently left out.
std::vector<Tensor> batch_norm_grad_rule(const GradContext& c) {
  for (int i = 1; i <= 4; ++i)
    OAR_ENFORCE(
        !c.grad_outputs[i].defined(), ErrorCode::kUnimplemented,
        "batch_norm: the gradient through its statistics output " << c.op->outputs[i] << " is not supported");
  for (int i = 3; i <= 4; ++i)
    OAR_ENFORCE(!c.needs_grad[i], ErrorCode::kUnimplemented,
                "batch_norm: no gradient for " << c.op->inputs[i] << " (the running statistics are buffers)");
  const Tensor& g = c.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  std::vector<Tensor> r =
      call_op(OAR_OP("batch_norm_grad"), {c.inputs[0], c.inputs[1], c.outputs[3], c.outputs[4], g},
              Attrs{{"channel_axis", c.attrs.get_int("channel_axis")},
                    {"use_global_stats", c.attrs.get_int("use_global_stats")}});
  return {c.needs_grad[0] ? r[0] : Tensor(), c.needs_grad[1] ? r[1] : Tensor(),
          c.needs_grad[2] ? r[2] : Tensor(), Tensor(), Tensor()};
}

// softmax_cross_entropy's outputs are (loss, softmax): the softmax's own gradient adds its Jacobian
// product, softmax * (g - sum(g * softmax)) over the class axis.
std::vector<Tensor> softmax_ce_grad_rule(const GradContext& c) {
  const Tensor &g = c.grad_outputs[0], &g_sm = c.grad_outputs[1];
  Tensor d;
  if (g.defined())
    d = call_op(OAR_OP("softmax_cross_entropy_grad"), {c.outputs[1], c.inputs[1], g},
                Attrs{{"ignore_index", c.attrs.get_int("ignore_index")}})[0];
  if (g_sm.defined()) {
    const Tensor& sm = c.outputs[1];
    Tensor t = ops::multiply(sm, ops::subtract(g_sm, ops::sum(ops::multiply(g_sm, sm), {1}, true)));
    d = d.defined() ? ops::add(d, t) : t;
  }
  return {d, Tensor()};
}

}  // namespace

void register_nn_ops(OpRegistry& r) {
  for (const ActDef& a : activations()) {
    def(r, a.name, {"x"}, a.attrs, infer_unary_float);
    def(r, a.grad_name, {"x", "grad"}, a.attrs, infer_act_grad);
  }
  def(r, "layer_norm", {"x", "weight", "bias"}, {req_int("begin_norm_axis"), float_attr("epsilon", 1e-5)},
      infer_layer_norm)
      .outputs = {"out", "mean", "rstd"};
  def(r, "layer_norm_grad", {"x", "weight", "mean", "rstd", "dy"}, {req_int("begin_norm_axis")},
      infer_layer_norm_grad)
      .outputs = {"dx", "dweight", "dbias"};
  def(r, "batch_norm", {"x", "weight", "bias", "running_mean", "running_var"},
      {int_attr("channel_axis", 1), float_attr("epsilon", 1e-5), float_attr("momentum", 0.9),
       int_attr("use_global_stats", 0)},
      infer_batch_norm)
      .outputs = {"out", "mean_out", "var_out", "saved_mean", "saved_rstd"};
  def(r, "batch_norm_grad", {"x", "weight", "saved_mean", "saved_rstd", "dy"},
      {int_attr("channel_axis", 1), int_attr("use_global_stats", 0)}, infer_batch_norm_grad)
      .outputs = {"dx", "dweight", "dbias"};
  // loss_only = 1: the caller needs no gradient and drops the softmax (eager cross_entropy without
  // gradient), so a kernel may leave it unwritten (decision 137); 0 (the default, and in every program):
  // both written.
  def(r, "softmax_cross_entropy", {"logits", "label"},
      {int_attr("ignore_index", -100), int_attr("loss_only", 0)}, infer_softmax_ce)
      .outputs = {"loss", "softmax"};
  def(r, "softmax_cross_entropy_grad", {"softmax", "label", "dloss"}, {int_attr("ignore_index", -100)},
      infer_softmax_ce_grad);
}

// Sample inputs for the op suite (op_sample.h).
void register_nn_samples(OpRegistry& r) {
  using namespace sample;
  for (const ActDef& a : activations()) {
    add(r, a.name, unary(-4, 4));
    add(r, a.grad_name,
        {S("2-d", {real({3, 4}, -4, 4), real({3, 4})}), S("0-d", {real({}, -4, 4), real({})}),
         S("empty", {real({0, 3}), real({0, 3})}),
         S("views", {transposed(real({3, 4}, -4, 4)), flipped(real({3, 4}))})});
  }
  add(r, "gelu", unary(-4, 4, false, {{"approximate", int64_t{1}}}));
  add(r, "leaky_relu", {S("slope 0.2", {real({3, 4})}, {{"negative_slope", 0.2}})});
  add(r, "softplus", {S("beta 2 threshold 3", {real({3, 4}, -4, 4)}, {{"beta", 2.0}, {"threshold", 3.0}})});
  add(r, "layer_norm",
      {S("last dim", {real({4, 6}), real({6}, 0.5, 1.5), real({6}, -1, 1)},
         {{"begin_norm_axis", int64_t{1}}}),
       S("last two dims", {real({2, 3, 4}), real({12}, 0.5, 1.5), real({12}, -1, 1)},
         {{"begin_norm_axis", int64_t{1}}}),
       S("one group", {real({2, 5}), real({10}, 0.5, 1.5), real({10})}, {{"begin_norm_axis", int64_t{0}}}),
       S("transposed x", {transposed(real({6, 4})), real({4}, 0.5, 1.5), real({4})},
         {{"begin_norm_axis", int64_t{1}}})});
  // The statistics are float32 for float16/bfloat16 x (layer_norm's statistics dtype).
  const std::vector<SampleInput> stats = {real({4}, -0.5, 0.5), real({4}, 0.5, 2)};
  add(r, "layer_norm_grad",
      {only(S("last dim", {real({4, 6}), real({6}, 0.5, 1.5), stats[0], stats[1], real({4, 6})},
              {{"begin_norm_axis", int64_t{1}}}),
            {DType::kFloat32, DType::kFloat64}),
       only(S("last dim, float32 statistics",
              {real({4, 6}), real({6}, 0.5, 1.5), fixed(stats[0], DType::kFloat32),
               fixed(stats[1], DType::kFloat32), real({4, 6})},
              {{"begin_norm_axis", int64_t{1}}}),
            {DType::kFloat16, DType::kBFloat16})});
  // batch_norm's [C] inputs are in the statistics dtype: each sample twice, with them following the dtype
  // under test (float32, float64) and fixed at float32 (float16, bfloat16).
  const auto bn_samples = [](std::vector<OpSample> in) {
    std::vector<OpSample> out;
    for (const OpSample& s : in) {
      out.push_back(only(s, {DType::kFloat32, DType::kFloat64}));
      OpSample low = s;
      low.name += ", float32 statistics";
      for (size_t i = 1; i < low.inputs.size(); ++i)
        if (low.inputs[i].shape.size() == 1) low.inputs[i] = fixed(low.inputs[i], DType::kFloat32);
      out.push_back(only(low, {DType::kFloat16, DType::kBFloat16}));
    }
    return out;
  };
  const auto bn_in = [](SampleInput x, int64_t c) {
    return std::vector<SampleInput>{x, real({c}, 0.5, 1.5), real({c}, -1, 1), real({c}, -0.5, 0.5),
                                    real({c}, 0.5, 2)};
  };
  const auto axis = [](int64_t a) { return AttrList{{"channel_axis", a}}; };
  add(r, "batch_norm",
      bn_samples({S("2-d [N, C]", bn_in(real({6, 4}), 4), axis(1)),
                  S("NCHW", bn_in(real({2, 3, 4, 5}), 3), axis(1)),
                  S("channel last", bn_in(real({2, 4, 5, 3}), 3), axis(-1)),
                  S("5-d", bn_in(real({2, 3, 2, 3, 2}), 3), axis(1)),
                  S("use_global_stats", bn_in(real({2, 3, 4, 5}), 3),
                    {{"channel_axis", int64_t{1}}, {"use_global_stats", int64_t{1}}}),
                  S("momentum 0.5, epsilon 0.01", bn_in(real({4, 3, 2}, 1, 3), 3),
                    {{"channel_axis", int64_t{1}}, {"momentum", 0.5}, {"epsilon", 0.01}}),
                  S("empty x, use_global_stats", bn_in(real({2, 3, 0}), 3),
                    {{"channel_axis", int64_t{1}}, {"use_global_stats", int64_t{1}}}),
                  S("long rows", bn_in(real({2, 2, 4100}), 2), axis(1)),  // rows cut into pieces
                  S("many rows", bn_in(real({2100, 3}), 3), axis(1)),     // row blocks
                  S("transposed x", bn_in(transposed(real({5, 4})), 4), axis(1)),
                  S("flipped x, channel last", bn_in(flipped(real({3, 2, 4})), 4), axis(2))}));
  const auto bng_in = [](SampleInput x, int64_t c) {
    SampleInput dy = x;
    return std::vector<SampleInput>{x, real({c}, 0.5, 1.5), real({c}, -0.5, 0.5), real({c}, 0.5, 2), dy};
  };
  add(r, "batch_norm_grad",
      bn_samples({S("2-d [N, C]", bng_in(real({6, 4}), 4), axis(1)),
                  S("NCHW", bng_in(real({2, 3, 4, 5}), 3), axis(1)),
                  S("channel last", bng_in(real({2, 4, 5, 3}), 3), axis(3)),
                  S("5-d", bng_in(real({2, 3, 2, 3, 2}), 3), axis(1)),
                  S("use_global_stats", bng_in(real({2, 3, 4, 5}), 3),
                    {{"channel_axis", int64_t{1}}, {"use_global_stats", int64_t{1}}}),
                  S("global, channel last", bng_in(real({5, 4}), 4),
                    {{"channel_axis", int64_t{1}}, {"use_global_stats", int64_t{1}}}),
                  S("empty x, use_global_stats", bng_in(real({0, 3}), 3),
                    {{"channel_axis", int64_t{1}}, {"use_global_stats", int64_t{1}}}),
                  S("long rows", bng_in(real({2, 2, 4100}), 2), axis(1)),
                  S("many rows", bng_in(real({2100, 3}), 3), axis(1)),
                  S("transposed x", bng_in(transposed(real({5, 4})), 4), axis(1))}));
  add(r, "softmax_cross_entropy",
      {S("int64 labels", {real({4, 5}), index({4}, 0, 4)}),
       S("int32 labels", {real({3, 7}), index({3}, 0, 6, DType::kInt32)}),
       S("ignored row", {real({4, 5}), index({4}, 0, 4)}, {{"ignore_index", int64_t{2}}}),
       S("transposed logits", {transposed(real({5, 4})), index({5}, 0, 3)})});
  add(r, "softmax_cross_entropy_grad",
      {S("2-d", {real({4, 5}, 0.05, 0.3), index({4}, 0, 4), real({4})}),
       S("ignored row", {real({4, 5}, 0.05, 0.3), index({4}, 0, 4), real({4})},
         {{"ignore_index", int64_t{1}}})});
}

void register_nn_grads(OpRegistry& r) {
  constexpr uint32_t kX = 1, kXW = 3, kLabel = 2;
  for (const ActDef& a : activations()) {
    set_grad(r, a.name, act_grad, kX, false);
    set_grad(r, a.grad_name, act_grad_grad, kXW, false);  // x and grad
  }
  set_grad(r, "layer_norm", layer_norm_grad_rule, kXW, true);
  set_grad(r, "batch_norm", batch_norm_grad_rule, kXW, true);
  set_grad(r, "softmax_cross_entropy", softmax_ce_grad_rule, kLabel, true);
}

namespace ops {
namespace {
Tensor call1(const char* name, std::vector<Tensor> inputs, Attrs attrs = {}) {
  return call_op(name, inputs, std::move(attrs))[0];
}
}  // namespace

Tensor gelu(const Tensor& x, bool approximate) {
  return call1("gelu", {x}, Attrs{{"approximate", int64_t{approximate ? 1 : 0}}});
}
Tensor silu(const Tensor& x) { return call1("silu", {x}); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return call1("leaky_relu", {x}, Attrs{{"negative_slope", negative_slope}});
}
Tensor elu(const Tensor& x, double alpha) { return call1("elu", {x}, Attrs{{"alpha", alpha}}); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return call1("softplus", {x}, Attrs{{"beta", beta}, {"threshold", threshold}});
}
Tensor hardswish(const Tensor& x) { return call1("hardswish", {x}); }
Tensor hardsigmoid(const Tensor& x, double slope, double offset) {
  return call1("hardsigmoid", {x}, Attrs{{"slope", slope}, {"offset", offset}});
}
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t begin_norm_axis,
                  double epsilon) {
  return call1("layer_norm", {x, weight, bias},
               Attrs{{"begin_norm_axis", begin_norm_axis}, {"epsilon", epsilon}});
}
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& label, int64_t ignore_index) {
  return call1("softmax_cross_entropy", {logits, label}, Attrs{{"ignore_index", ignore_index}});
}
}  // namespace ops

}  // namespace oar
