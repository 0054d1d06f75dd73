// More elementwise math, scans (cumsum, cumprod), reductions (all, any, ...) and creation/random ops.
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
// docs/ops_math.md lists them, with which Paddle functions are composites in Python instead.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <cmath>
#include <limits>

#include "grad_util.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;
using ops::divide;
using ops::multiply;
using ops::subtract;

// ---- inference ------------------------------------------------------------------------------------
bool is_int_or_bool(DType d) { return d == DType::kBool || (!is_floating(d) && !is_complex(d)); }

void infer_binary_float(InferContext& c) {
  require_floating(c, 0);
  infer_binary(c);
}
void infer_bitwise(InferContext& c) {
  OAR_ENFORCE(is_int_or_bool(c.inputs[0].dtype), ErrorCode::kType,
              op_name(c) << ": x.dtype " << dtype_name(c.inputs[0].dtype)
                         << " is not supported; expected bool or an integer dtype");
  if (c.num_inputs == 1) {
    c.outputs[0] = c.inputs[0];
    return;
  }
  infer_binary(c);
}
void infer_int_binary(InferContext& c) {  // gcd, lcm
  DType d = c.inputs[0].dtype;
  OAR_ENFORCE(is_int_or_bool(d) && d != DType::kBool, ErrorCode::kType,
              op_name(c) << ": x.dtype " << dtype_name(d) << " is not supported; expected an integer dtype");
  infer_binary(c);
}
void infer_clip(InferContext& c) {
  require_not_complex(c, 0);
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType, "clip: bool is not supported");
  double lo = c.attrs->get_float("min"), hi = c.attrs->get_float("max");
  OAR_ENFORCE(!(lo > hi), ErrorCode::kInvalidArgument,
              "clip: min (" << lo << ") must be <= max (" << hi << ")");
  c.outputs[0] = c.inputs[0];
}
// Scans: attribute "flatten" scans the flattened input (Paddle's axis=None), else along "axis".
void infer_scan(InferContext& c) {
  require_not_complex(c, 0);
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType,
              op_name(c) << ": bool is not supported; cast x to an integer dtype first");
  const Dims& in = c.inputs[0].dims;
  if (c.attrs->get_int("flatten") != 0) {
    c.outputs[0] = {c.inputs[0].dtype, Dims{in.numel()}};
    c.attrs->set("axis", int64_t{0});
    return;
  }
  c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), in.size()));
  c.outputs[0] = c.inputs[0];
}
void infer_scan_float(InferContext& c) {
  require_floating(c, 0);
  infer_scan(c);
}
void infer_bool_reduce(InferContext& c) {  // all, any
  require_not_complex(c, 0);
  c.outputs[0] = {DType::kBool, reduce_dims(c)};
}
void infer_linspace(InferContext& c) {
  int64_t num = c.attrs->get_int("num");
  OAR_ENFORCE(num >= 0, ErrorCode::kInvalidArgument, "linspace: num (" << num << ") must be >= 0");
  DType d = attr_dtype(c);
  OAR_ENFORCE(d != DType::kBool && !is_complex(d), ErrorCode::kType,
              "linspace: dtype " << dtype_name(d) << " is not supported");
  c.outputs[0] = {d, Dims{num}};
}
void infer_eye(InferContext& c) {
  int64_t rows = c.attrs->get_int("num_rows"), cols = c.attrs->get_int("num_columns");
  OAR_ENFORCE(rows >= 0, ErrorCode::kInvalidArgument, "eye: num_rows (" << rows << ") must be >= 0");
  OAR_ENFORCE(cols >= 0, ErrorCode::kInvalidArgument, "eye: num_columns (" << cols << ") must be >= 0");
  c.outputs[0] = {attr_dtype(c), Dims{rows, cols}};
}
void infer_bernoulli(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = c.inputs[0];
}
void infer_polygamma(InferContext& c) {
  require_floating(c, 0);
  int64_t n = c.attrs->get_int("n");
  OAR_ENFORCE(n >= 0, ErrorCode::kInvalidArgument, "polygamma: n (" << n << ") must be >= 0");
  c.outputs[0] = c.inputs[0];
}
void infer_multinomial(InferContext& c) {
  require_floating(c, 0);
  const Dims& in = c.inputs[0].dims;
  OAR_ENFORCE(in.size() == 1 || in.size() == 2, ErrorCode::kInvalidArgument,
              "multinomial: x must be 1-D or 2-D, got shape " << in.to_string());
  int64_t k = c.attrs->get_int("num_samples"), n = in[in.size() - 1];
  OAR_ENFORCE(k >= 1, ErrorCode::kInvalidArgument, "multinomial: num_samples (" << k << ") must be >= 1");
  OAR_ENFORCE(n >= 1, ErrorCode::kInvalidArgument,
              "multinomial: x has no categories (shape " << in.to_string() << ")");
  OAR_ENFORCE(c.attrs->get_int("replacement") != 0 || k <= n, ErrorCode::kInvalidArgument,
              "multinomial: num_samples (" << k << ") > the number of categories (" << n
                                           << ") needs replacement=True");
  Dims out = in;
  out[out.size() - 1] = k;
  c.outputs[0] = {DType::kInt64, out};
}
void infer_randperm(InferContext& c) {
  int64_t n = c.attrs->get_int("n");
  OAR_ENFORCE(n >= 0, ErrorCode::kInvalidArgument, "randperm: n (" << n << ") must be >= 0");
  DType d = attr_dtype(c);
  OAR_ENFORCE(d != DType::kBool && !is_complex(d), ErrorCode::kType,
              "randperm: dtype " << dtype_name(d) << " is not supported");
  c.outputs[0] = {d, Dims{n}};
}

// ---- gradient rules -------------------------------------------------------------------------------
Tensor op1(const char* name, const Tensor& x) { return call_op(name, {x})[0]; }
Tensor one_like(const Tensor& t) { return scalar_like(1, t); }

std::vector<Tensor> sinh_grad(const GradContext& c) { return {multiply(g0(c), op1("cosh", X(c)))}; }
std::vector<Tensor> cosh_grad(const GradContext& c) { return {multiply(g0(c), op1("sinh", X(c)))}; }
std::vector<Tensor> tan_grad(const GradContext& c) {  // 1 + tan^2
  return {multiply(g0(c), ops::add(one_like(OUT(c)), multiply(OUT(c), OUT(c))))};
}
std::vector<Tensor> asin_grad(const GradContext& c) {  // 1 / sqrt(1 - x^2)
  return {divide(g0(c), ops::sqrt(subtract(one_like(X(c)), multiply(X(c), X(c)))))};
}
std::vector<Tensor> acos_grad(const GradContext& c) {
  return {ops::neg(divide(g0(c), ops::sqrt(subtract(one_like(X(c)), multiply(X(c), X(c))))))};
}
std::vector<Tensor> atan_grad(const GradContext& c) {
  return {divide(g0(c), ops::add(one_like(X(c)), multiply(X(c), X(c))))};
}
std::vector<Tensor> asinh_grad(const GradContext& c) {
  return {divide(g0(c), ops::sqrt(ops::add(multiply(X(c), X(c)), one_like(X(c)))))};
}
std::vector<Tensor> acosh_grad(const GradContext& c) {
  return {divide(g0(c), ops::sqrt(subtract(multiply(X(c), X(c)), one_like(X(c)))))};
}
std::vector<Tensor> atanh_grad(const GradContext& c) {
  return {divide(g0(c), subtract(one_like(X(c)), multiply(X(c), X(c))))};
}
std::vector<Tensor> log2_grad(const GradContext& c) {
  return {divide(g0(c), multiply(X(c), scalar_like(M_LN2, X(c))))};
}
std::vector<Tensor> log10_grad(const GradContext& c) {
  return {divide(g0(c), multiply(X(c), scalar_like(M_LN10, X(c))))};
}
std::vector<Tensor> zero_grad(const GradContext& c) {  // trunc: piecewise constant
  return {ops::zeros(in_dims(c, 0), g0(c).dtype(), g0(c).place())};
}
std::vector<Tensor> lgamma_grad(const GradContext& c) { return {multiply(g0(c), op1("digamma", X(c)))}; }
Tensor polygamma_call(const Tensor& x, int64_t n) { return call_op("polygamma", {x}, Attrs{{"n", n}})[0]; }
std::vector<Tensor> digamma_grad(const GradContext& c) { return {multiply(g0(c), polygamma_call(X(c), 1))}; }
std::vector<Tensor> polygamma_grad(const GradContext& c) {
  return {multiply(g0(c), polygamma_call(X(c), c.attrs.get_int("n") + 1))};
}
std::vector<Tensor> erfinv_grad(const GradContext& c) {  // sqrt(pi)/2 * exp(out^2)
  return {
      multiply(g0(c), multiply(ops::exp(multiply(OUT(c), OUT(c))), scalar_like(0.886226925452758, OUT(c))))};
}

std::vector<Tensor> atan2_grad(const GradContext& c) {  // atan2(x, y): d/dx = y/r^2, d/dy = -x/r^2
  Tensor r2 = ops::add(multiply(X(c), X(c)), multiply(Y(c), Y(c)));
  Tensor gr = divide(g0(c), r2);
  return {c.needs_grad[0] ? unbroadcast(multiply(gr, Y(c)), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(ops::neg(multiply(gr, X(c))), in_dims(c, 1)) : Tensor()};
}
// fmax/fmin: as maximum/minimum (ties split evenly), and a NaN operand passes the gradient to the other.
std::vector<Tensor> fselect_grad(const GradContext& c, bool is_max) {
  Tensor xnan = op1("isnan", X(c)), ynan = op1("isnan", Y(c));
  auto wins = [&](const Tensor& a, const Tensor& b, const Tensor& anan, const Tensor& bnan) {
    Tensor better = is_max ? ops::greater_than(a, b) : ops::less_than(a, b);
    return mask(ops::logical_or(better, ops::logical_and(bnan, op1("logical_not", anan))), g0(c));
  };
  Tensor ties = multiply(mask(ops::equal(X(c), Y(c)), g0(c)), scalar_like(0.5, g0(c)));
  Tensor wx = ops::add(wins(X(c), Y(c), xnan, ynan), ties);
  Tensor wy = ops::add(wins(Y(c), X(c), ynan, xnan), ties);  // both NaN: neither gets a gradient
  return {c.needs_grad[0] ? unbroadcast(multiply(g0(c), wx), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(multiply(g0(c), wy), in_dims(c, 1)) : Tensor()};
}
std::vector<Tensor> fmax_grad(const GradContext& c) { return fselect_grad(c, true); }
std::vector<Tensor> fmin_grad(const GradContext& c) { return fselect_grad(c, false); }
std::vector<Tensor> heaviside_grad(const GradContext& c) {  // x: 0 almost everywhere; y: where x == 0
  Tensor gx = c.needs_grad[0] ? ops::zeros(in_dims(c, 0), g0(c).dtype(), g0(c).place()) : Tensor();
  Tensor gy;
  if (c.needs_grad[1])
    gy = unbroadcast(multiply(g0(c), mask(ops::equal(X(c), scalar_like(0, X(c))), g0(c))), in_dims(c, 1));
  return {gx, gy};
}

// clip: the gradient passes where min < x < max (as Paddle's clip_grad).
std::vector<Tensor> clip_grad(const GradContext& c) {
  double lo = c.attrs.get_float("min"), hi = c.attrs.get_float("max");
  Tensor inside = ops::logical_and(ops::greater_than(X(c), scalar_like(lo, X(c))),
                                   ops::less_than(X(c), scalar_like(hi, X(c))));
  return {multiply(g0(c), mask(inside, g0(c)))};
}

Tensor cumsum_call(const Tensor& x, int64_t axis, bool reverse) {
  return call_op("cumsum", {x},
                 Attrs{{"axis", axis}, {"flatten", int64_t{0}}, {"reverse", int64_t{reverse}}})[0];
}
// cumsum: each input element feeds every later output, so the gradient is the reversed cumsum.
std::vector<Tensor> cumsum_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  bool reverse = c.attrs.get_int("reverse") != 0;
  return {cumsum_call(g0(c), axis, !reverse).reshape(in_dims(c, 0))};
}
// cumprod: d out_j / d x_i = out_j / x_i (j >= i), so grad = revcumsum(g * out) / x. Exact for nonzero x;
// a zero in x gives inf/NaN there (docs/ops_math.md).
std::vector<Tensor> cumprod_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  Tensor s = cumsum_call(multiply(g0(c), OUT(c)), axis, true).reshape(in_dims(c, 0));
  return {divide(s, X(c))};
}

// logcumsumexp: grad_i = sum over later j of g_j exp(x_i - out_j). Split g into positive and negative
// parts so each sum is a (reversed) logcumsumexp in the log domain, which stays finite.
std::vector<Tensor> logcumsumexp_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  bool reverse = c.attrs.get_int("reverse") != 0;
  const Tensor& g = g0(c);
  Tensor x = X(c).reshape(OUT(c).dims());
  Tensor zero = scalar_like(0, g);
  auto part = [&](const Tensor& gp) {
    Tensor lg = subtract(ops::log(gp), OUT(c));  // log(0) = -inf: no contribution
    Tensor s = call_op("logcumsumexp", {lg},
                       Attrs{{"axis", axis}, {"flatten", int64_t{0}}, {"reverse", int64_t{!reverse}}})[0];
    return ops::exp(ops::add(x, s));
  };
  Tensor pos = ops::where(ops::greater_than(g, zero), g, zero);
  Tensor neg = ops::where(ops::less_than(g, zero), ops::neg(g), zero);
  return {subtract(part(pos), part(neg)).reshape(in_dims(c, 0))};
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  for (const char* n : {"sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2",
                        "log10", "lgamma", "digamma", "erfinv"})
    def(r, n, {"x"}, {}, infer_unary_float);
  def(r, "trunc", {"x"}, {}, infer_unary_real);
  def(r, "polygamma", {"x"}, {req_int("n")}, infer_polygamma);

  def(r, "atan2", {"x", "y"}, {}, infer_binary_float);
  def(r, "heaviside", {"x", "y"}, {}, infer_binary_float);
  for (const char* n : {"fmax", "fmin"}) def(r, n, {"x", "y"}, {}, infer_binary_real);
  // Integer and bool results: not differentiable (OpDef::differentiable).
  for (const char* n : {"bitwise_and", "bitwise_or", "bitwise_xor"})
    def(r, n, {"x", "y"}, {}, infer_bitwise).differentiable = false;
  def(r, "bitwise_not", {"x"}, {}, infer_bitwise).differentiable = false;
  for (const char* n : {"gcd", "lcm"}) def(r, n, {"x", "y"}, {}, infer_int_binary).differentiable = false;

  const double inf = std::numeric_limits<double>::infinity();
  def(r, "clip", {"x"}, {float_attr("min", -inf), float_attr("max", inf)}, infer_clip);
  def(r, "cumsum", {"x"}, {int_attr("axis", -1), int_attr("flatten", 0), int_attr("reverse", 0)}, infer_scan);
  def(r, "logcumsumexp", {"x"}, {int_attr("axis", -1), int_attr("flatten", 0), int_attr("reverse", 0)},
      infer_scan_float);
  def(r, "cumprod", {"x"}, {int_attr("axis", -1), int_attr("flatten", 0)}, infer_scan);
  std::vector<AttrDef> reduce_attrs = {ints_attr("axis"), int_attr("keepdim", 0)};
  def(r, "all", {"x"}, reduce_attrs, infer_bool_reduce).differentiable = false;
  def(r, "any", {"x"}, reduce_attrs, infer_bool_reduce).differentiable = false;

  def(r, "linspace", {}, {req_float("start"), req_float("stop"), req_int("num"), req_int("dtype")},
      infer_linspace, -1);
  def(r, "eye", {}, {req_int("num_rows"), req_int("num_columns"), req_int("dtype")}, infer_eye, -1);
  // Random ops: element i uses counter offset + i of stream `seed` (oar/sdk/random.h); the Python
  // wrappers draw seed from the global generator (python/oar/tensor/random.py).
  // A random draw has no gradient with respect to its probabilities (OpDef::differentiable).
  def(r, "bernoulli", {"x"}, {req_int("seed"), int_attr("offset", 0)}, infer_bernoulli).differentiable =
      false;
  def(r, "multinomial", {"x"},
      {req_int("num_samples"), int_attr("replacement", 0), req_int("seed"), int_attr("offset", 0)},
      infer_multinomial)
      .differentiable = false;
  def(r, "poisson", {"x"}, {req_int("seed"), int_attr("offset", 0)}, infer_bernoulli);
  def(r, "randperm", {}, {req_int("n"), req_int("seed"), int_attr("offset", 0), req_int("dtype")},
      infer_randperm, -1);
}

void register_math_grads(GradRuleSetter set) {
  constexpr uint32_t kNone = 0, kX = 1, kXY = 3;
  constexpr bool kOut = true, kNoOut = false;
  set("sinh", sinh_grad, kX, kNoOut);
  set("cosh", cosh_grad, kX, kNoOut);
  set("tan", tan_grad, kNone, kOut);
  set("asin", asin_grad, kX, kNoOut);
  set("acos", acos_grad, kX, kNoOut);
  set("atan", atan_grad, kX, kNoOut);
  set("asinh", asinh_grad, kX, kNoOut);
  set("acosh", acosh_grad, kX, kNoOut);
  set("atanh", atanh_grad, kX, kNoOut);
  set("log2", log2_grad, kX, kNoOut);
  set("log10", log10_grad, kX, kNoOut);
  set("trunc", zero_grad, kNone, kNoOut);
  set("lgamma", lgamma_grad, kX, kNoOut);
  set("digamma", digamma_grad, kX, kNoOut);
  set("polygamma", polygamma_grad, kX, kNoOut);
  set("erfinv", erfinv_grad, kNone, kOut);
  set("poisson", zero_grad, kNone, kNoOut);  // as Paddle: samples do not depend smoothly on the rate
  set("atan2", atan2_grad, kXY, kNoOut);
  set("fmax", fmax_grad, kXY, kNoOut);
  set("fmin", fmin_grad, kXY, kNoOut);
  set("heaviside", heaviside_grad, kX, kNoOut);
  set("clip", clip_grad, kX, kNoOut);
  set("cumsum", cumsum_grad, kNone, kNoOut);
  set("cumprod", cumprod_grad, kX, kOut);
  set("logcumsumexp", logcumsumexp_grad, kX, kOut);
}

}  // namespace oar
