// More elementwise math, scans (cumsum, cumprod), reductions (all, any, ...) and creation/random ops.
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
// docs/ops_math.md lists them, with which Paddle functions are composites in Python instead.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <cmath>
#include <limits>

#include "grad_util.h"
#include "op_samples.h"
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
std::vector<Tensor> lgamma_grad(const GradContext& c) { return {multiply(g0(c), op1("digamma", X(c)))}; }
Tensor polygamma_call(const Tensor& x, int64_t n) {
  return call_op(OAR_OP("polygamma"), {x}, Attrs{{"n", n}})[0];
}
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
// copysign: out = ±x, so dx = g * out / x (0 where x == 0, as Paddle); y only gives the sign: no gradient.
std::vector<Tensor> copysign_grad(const GradContext& c) {
  Tensor zero = scalar_like(0, g0(c));
  Tensor at_zero = ops::equal(X(c), scalar_like(0, X(c)));
  Tensor ratio = ops::where(at_zero, zero, divide(OUT(c), ops::where(at_zero, scalar_like(1, X(c)), X(c))));
  return {unbroadcast(multiply(g0(c), ratio), in_dims(c, 0)), Tensor()};
}
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
  return call_op(OAR_OP("cumsum"), {x},
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
    Tensor s = call_op(OAR_OP("logcumsumexp"), {lg},
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
  def(r, "copysign", {"x", "y"}, {}, infer_binary_real);
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

// Sample inputs for the op suite (op_sample.h): ranges keep each function inside its domain.
void register_math_samples(OpRegistry& r) {
  using namespace sample;
  add(r, {"sinh", "cosh", "atan", "asinh"}, unary(-3, 3));
  add(r, "tan", unary(-1.2, 1.2));
  add(r, {"asin", "acos", "atanh"}, unary(-0.9, 0.9));
  add(r, "acosh", unary(1.1, 5));
  add(r, {"log2", "log10"}, unary(0.05, 10));
  add(r, "lgamma", unary(0.1, 5));
  add(r, "digamma", unary(0.3, 5));
  add(r, "erfinv", unary(-0.9, 0.9));
  add(r, "trunc", unary(-10, 10));
  add(r, "polygamma",
      {S("n 0", {real({3, 4}, 0.5, 3)}, {{"n", int64_t{0}}}),
       S("n 1", {real({3, 4}, 0.5, 3)}, {{"n", int64_t{1}}}),
       S("n 2 0-d", {real({}, 0.5, 3)}, {{"n", int64_t{2}}}),
       S("n 1 transposed", {transposed(real({4, 3}, 0.5, 3))}, {{"n", int64_t{1}}})});
  add(r, "atan2", binary(-2, 2, -2, 2, true));
  add(r, "heaviside", binary());
  add(r, "heaviside", {S("zeros", {with_zeros(integer({4, 5}, -2, 2)), real({4, 5})})});
  add(r, {"fmax", "fmin"}, binary());
  add(r, "copysign", binary());
  add(r, "copysign", {nonsmooth(S("zeros", {with_zeros(real({4, 5})), with_zeros(real({4, 5}))}))});
  for (const char* n : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    add(r, n, binary(-100, 100, -100, 100, false, false));
  }
  add(r, "bitwise_not", unary(-100, 100, false));
  add(r, {"gcd", "lcm"}, binary(-30, 30, -30, 30, false, false));
  add(r, {"gcd", "lcm"},
      {S("zeros", {with_zeros(real({4, 5}, -12, 12)), with_zeros(real({4, 5}, -12, 12))})});

  auto C = [](double lo, double hi) { return AttrList{{"min", lo}, {"max", hi}}; };
  add(r, "clip",
      {S("both", {real({3, 4}, -3, 3)}, C(-1, 1)), S("min only", {real({3, 4}, -3, 3)}, {{"min", -0.5}}),
       S("max only", {real({2, 3, 4}, -3, 3)}, {{"max", 0.5}}), S("0-d", {real({}, -3, 3)}, C(-1, 1)),
       S("empty", {real({0, 3})}, C(-1, 1)), S("transposed", {transposed(real({4, 3}, -3, 3))}, C(-1, 2)),
       S("flipped", {flipped(real({4, 3}, -3, 3))}, C(0, 1)),
       S("specials", {with_specials(real({4, 5}, -3, 3))}, C(-1, 1))});
  for (const char* n : {"cumsum", "logcumsumexp"}) {
    add(r, n, along_axis(-3, 3, {{"flatten", int64_t{0}}, {"reverse", int64_t{0}}}));
    add(r, n,
        {S("reverse", {real({3, 5}, -3, 3)}, {{"axis", int64_t{1}}, {"reverse", int64_t{1}}}),
         S("flatten", {real({3, 4}, -3, 3)}, {{"flatten", int64_t{1}}}),
         S("flatten reverse", {real({2, 3, 2}, -3, 3)}, {{"flatten", int64_t{1}}, {"reverse", int64_t{1}}})});
  }
  add(r, "cumsum", {loose(S("long", {real({2, 900}, -1, 1)}, {{"axis", int64_t{1}}}), 4)});
  {
    std::vector<OpSample> v;
    for (OpSample& s : along_axis(0.5, 1.5, {{"flatten", int64_t{0}}})) v.push_back(only(s, floats()));
    for (OpSample& s : along_axis(-2, 2, {{"flatten", int64_t{0}}})) v.push_back(only(s, ints()));
    v.push_back(S("flatten", {real({3, 4}, 0.5, 1.5)}, {{"flatten", int64_t{1}}}));
    add(r, "cumprod", v);
  }
  add(r, {"all", "any"}, reduction(-1, 1));
  add(r, {"all", "any"},
      {S("zeros", {with_zeros(integer({4, 6}, -1, 1))}, {{"axis", Shape{1}}, {"keepdim", int64_t{0}}})});

  auto L = [](double start, double stop, int64_t num) {
    return AttrList{{"start", start}, {"stop", stop}, {"num", num}};
  };
  add(r, "linspace",
      {only(S("through 0", {}, L(-1, 1, 7)), floats()), S("down", {}, L(10, 2, 5)), S("one", {}, L(2, 2, 1)),
       S("empty", {}, L(0, 1, 0)), S("integers", {}, L(0, 20, 11))});
  auto E = [](int64_t rows, int64_t cols) { return AttrList{{"num_rows", rows}, {"num_columns", cols}}; };
  add(r, "eye",
      {S("3x4", {}, E(3, 4)), S("square", {}, E(2, 2)), S("tall", {}, E(5, 2)), S("empty", {}, E(0, 3))});

  const char* why = "random numbers: the device's stream need not match the CPU's";
  auto seed = [](AttrList a) {
    a.emplace_back("seed", int64_t{42});
    a.emplace_back("offset", int64_t{3});
    return a;
  };
  add(r, "bernoulli",
      {random("p 0.5", {real({40, 25}, 0.5, 0.5)}, seed({}), 0, 1, 0.5, 0.5, why),
       random("p 0 and 1", {integer({6, 7}, 0, 1)}, seed({}), 0, 1, NAN, NAN, why)});
  add(r, "poisson", {random("rate 3", {real({40, 25}, 3, 3)}, seed({}), 0, 1e9, 3, std::sqrt(3.0), why)});
  add(r, "multinomial",
      {random("with replacement", {real({4, 5}, 0.5, 0.5)},
              seed({{"num_samples", int64_t{50}}, {"replacement", int64_t{1}}}), 0, 4, 2, std::sqrt(2.0),
              why),
       random("without replacement", {real({6, 5}, 0.5, 0.5)}, seed({{"num_samples", int64_t{5}}}), 0, 4, 2,
              0, why),
       random("1-d", {real({8}, 0.1, 1)}, seed({{"num_samples", int64_t{3}}}), 0, 7, NAN, NAN, why)});
  add(r, "randperm",
      {random("n 50", {}, seed({{"n", int64_t{50}}}), 0, 49, 24.5, 0, why),
       random("n 0", {}, seed({{"n", int64_t{0}}}), 0, 0, NAN, NAN, why)});
}

void register_math_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kX = 1, kXY = 3;
  constexpr bool kOut = true, kNoOut = false;
  set_grad(r, "sinh", sinh_grad, kX, kNoOut);
  set_grad(r, "cosh", cosh_grad, kX, kNoOut);
  set_grad(r, "tan", tan_grad, kNone, kOut);
  set_grad(r, "asin", asin_grad, kX, kNoOut);
  set_grad(r, "acos", acos_grad, kX, kNoOut);
  set_grad(r, "atan", atan_grad, kX, kNoOut);
  set_grad(r, "asinh", asinh_grad, kX, kNoOut);
  set_grad(r, "acosh", acosh_grad, kX, kNoOut);
  set_grad(r, "atanh", atanh_grad, kX, kNoOut);
  set_grad(r, "log2", log2_grad, kX, kNoOut);
  set_grad(r, "log10", log10_grad, kX, kNoOut);
  set_grad(r, "trunc", zero_grad, kNone, kNoOut);
  set_grad(r, "lgamma", lgamma_grad, kX, kNoOut);
  set_grad(r, "digamma", digamma_grad, kX, kNoOut);
  set_grad(r, "polygamma", polygamma_grad, kX, kNoOut);
  set_grad(r, "erfinv", erfinv_grad, kNone, kOut);
  set_grad(r, "poisson", zero_grad, kNone, kNoOut);  // as Paddle: samples do not depend smoothly on the rate
  set_grad(r, "atan2", atan2_grad, kXY, kNoOut);
  set_grad(r, "fmax", fmax_grad, kXY, kNoOut);
  set_grad(r, "fmin", fmin_grad, kXY, kNoOut);
  set_grad(r, "heaviside", heaviside_grad, kX, kNoOut);
  set_grad(r, "copysign", copysign_grad, kX, kOut);
  set_grad(r, "clip", clip_grad, kX, kNoOut);
  set_grad(r, "cumsum", cumsum_grad, kNone, kNoOut);
  set_grad(r, "cumprod", cumprod_grad, kX, kOut);
  set_grad(r, "logcumsumexp", logcumsumexp_grad, kX, kOut);
}

}  // namespace oar
