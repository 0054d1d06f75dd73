// The built-in op set: every op's schema and shape/dtype inference, defined once. docs/ops.md is the
// plugin author's view of the same contract.
#include <oar/core/error.h>

#include <algorithm>
#include <cmath>

#include "op_util.h"

namespace oar {
namespace opdef {

const char* op_name(const InferContext& c) { return c.op->name; }

std::string input_name(const InferContext& c, int i) {
  const std::vector<const char*>& names = c.op->inputs;
  if (!c.op->variadic && i >= 0 && static_cast<size_t>(i) < names.size()) return names[i];
  return std::string(names.empty() ? "input" : names[0]) + "[" + std::to_string(i) + "]";
}

// numpy broadcasting of two shapes.
Dims broadcast(const InferContext& c, const Dims& a, const Dims& b, const char* an, const char* bn) {
  Dims out;
  int32_t n = std::max(a.size(), b.size());
  out.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    int32_t ia = i - (n - a.size()), ib = i - (n - b.size());
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    OAR_ENFORCE(da == db || da == 1 || db == 1, ErrorCode::kInvalidArgument,
                op_name(c) << ": shapes " << an << a.to_string() << " and " << bn << b.to_string()
                           << " are not broadcastable (dimension " << i << ": " << da << " vs " << db << ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void require_same_dtype(const InferContext& c, int a, int b) {
  DType da = c.inputs[a].dtype, db = c.inputs[b].dtype;
  OAR_ENFORCE(da == db, ErrorCode::kType,
              op_name(c) << ": " << input_name(c, a) << ".dtype (" << dtype_name(da) << ") != "
                         << input_name(c, b) << ".dtype (" << dtype_name(db) << "); cast one of them first");
}

void require_floating(const InferContext& c, int i) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(is_floating(d), ErrorCode::kType,
              op_name(c) << ": " << input_name(c, i) << ".dtype " << dtype_name(d)
                         << " is not supported; expected float16, bfloat16, float32 or float64");
}

void require_not_complex(const InferContext& c, int i) {
  OAR_ENFORCE(!is_complex(c.inputs[i].dtype), ErrorCode::kType,
              op_name(c) << ": complex dtype " << dtype_name(c.inputs[i].dtype) << " is not supported");
}

int64_t normalize_axis(const InferContext& c, int64_t axis, int32_t ndim) {
  int32_t n = std::max(ndim, 1);  // a 0-d tensor accepts axis 0 / -1
  OAR_ENFORCE(axis >= -n && axis < n, ErrorCode::kOutOfRange,
              op_name(c) << ": axis " << axis << " is out of range for a tensor of rank " << ndim
                         << " (expected " << -n << " <= axis < " << n << ")");
  return axis < 0 ? axis + n : axis;
}

// Normalises attribute "axis" (ints) to sorted unique non-negative axes; empty means all.
Dims reduce_dims(InferContext& c) {
  const Dims& in = c.inputs[0].dims;
  std::vector<int64_t> axes = c.attrs->get_ints("axis");
  for (auto& a : axes) a = normalize_axis(c, a, in.size());
  axes.erase(std::remove_if(axes.begin(), axes.end(), [&](int64_t a) { return a >= in.size(); }), axes.end());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.size() == static_cast<size_t>(in.size())) axes.clear();
  if (axes.empty())
    for (int32_t i = 0; i < in.size(); ++i) axes.push_back(i);
  bool keep = c.attrs->get_int("keepdim") != 0;
  Dims out;
  for (int32_t i = 0; i < in.size(); ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced)
      out.push_back(in[i]);
    else if (keep)
      out.push_back(1);
  }
  c.attrs->set("axis", axes);
  return out;
}
void require_nonempty_reduction(InferContext& c) {
  const Dims& in = c.inputs[0].dims;
  for (int64_t a : c.attrs->get_ints("axis"))
    OAR_ENFORCE(
        in[static_cast<int32_t>(a)] > 0, ErrorCode::kInvalidArgument,
        op_name(c) << ": cannot reduce over axis " << a << " of size 0 (shape " << in.to_string() << ")");
}
DType attr_dtype(InferContext& c) {
  int64_t d = c.attrs->get_int("dtype");
  OAR_ENFORCE(is_valid_dtype(static_cast<int32_t>(d)), ErrorCode::kType,
              op_name(c) << ": invalid dtype value " << d);
  return static_cast<DType>(d);
}
Dims attr_shape(InferContext& c) {
  Dims s(c.attrs->get_ints("shape"));
  for (int32_t i = 0; i < s.size(); ++i)
    OAR_ENFORCE(s[i] >= 0, ErrorCode::kInvalidArgument,
                op_name(c) << ": shape " << s.to_string() << " has a negative dimension");
  return s;
}

AttrDef int_attr(const char* name, int64_t def) { return {name, AttrType::kInt, false, def}; }
AttrDef req_int(const char* name) { return {name, AttrType::kInt, true, int64_t{0}}; }
AttrDef float_attr(const char* name, double def) { return {name, AttrType::kFloat, false, def}; }
AttrDef req_float(const char* name) { return {name, AttrType::kFloat, true, 0.0}; }
AttrDef ints_attr(const char* name) { return {name, AttrType::kInts, false, std::vector<int64_t>{}}; }
AttrDef req_ints(const char* name) { return {name, AttrType::kInts, true, std::vector<int64_t>{}}; }

OpDef& def(OpRegistry& r, const char* name, std::vector<const char*> inputs, std::vector<AttrDef> attrs,
           InferFn infer, int32_t dispatch_input, bool variadic) {
  OpDef d;
  d.name = name;
  d.inputs = std::move(inputs);
  d.outputs = {"out"};
  d.attrs = std::move(attrs);
  d.infer = infer;
  d.dispatch_input = dispatch_input;
  d.variadic = variadic;
  return r.add(std::move(d));
}

// ---- inference functions --------------------------------------------------------------------------
void infer_binary(InferContext& c) {
  require_same_dtype(c, 0, 1);
  c.outputs[0] = {c.inputs[0].dtype, broadcast(c, c.inputs[0].dims, c.inputs[1].dims, "x", "y")};
}
void infer_binary_real(InferContext& c) {
  require_not_complex(c, 0);
  infer_binary(c);
}
void infer_compare(InferContext& c) {
  infer_binary(c);
  c.outputs[0].dtype = DType::kBool;
}
void infer_compare_real(InferContext& c) {
  require_not_complex(c, 0);
  infer_compare(c);
}
void infer_unary(InferContext& c) { c.outputs[0] = c.inputs[0]; }
void infer_unary_real(InferContext& c) {
  require_not_complex(c, 0);
  c.outputs[0] = c.inputs[0];
}
void infer_unary_float(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = c.inputs[0];
}
void infer_unary_bool(InferContext& c) {
  require_not_complex(c, 0);
  c.outputs[0] = {DType::kBool, c.inputs[0].dims};
}
void infer_float_predicate(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {DType::kBool, c.inputs[0].dims};
}

void infer_sum(InferContext& c) {
  Dims out = reduce_dims(c);
  DType d = c.inputs[0].dtype;
  bool widen = d == DType::kBool || d == DType::kInt8 || d == DType::kUInt8 || d == DType::kInt16 ||
               d == DType::kInt32;
  c.outputs[0] = {widen ? DType::kInt64 : d, out};
}
void infer_mean(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, reduce_dims(c)};
}
void infer_prod(InferContext& c) {
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType, op_name(c) << ": bool is not supported");
  c.outputs[0] = {c.inputs[0].dtype, reduce_dims(c)};
}
void infer_minmax(InferContext& c) {
  require_not_complex(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, reduce_dims(c)};
  require_nonempty_reduction(c);
}
}  // namespace opdef

namespace {
using namespace opdef;

void infer_arg(InferContext& c) {
  require_not_complex(c, 0);
  const Dims& in = c.inputs[0].dims;
  bool keep = c.attrs->get_int("keepdim") != 0;
  bool flatten = c.attrs->get_int("flatten") != 0;
  OAR_ENFORCE(in.numel() > 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": the input is empty (shape " << in.to_string() << ")");
  Dims out;
  if (flatten) {
    if (keep) out.resize(in.size(), 1);
  } else {
    int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), in.size());
    c.attrs->set("axis", axis);
    for (int32_t i = 0; i < in.size(); ++i) {
      if (i != axis)
        out.push_back(in[i]);
      else if (keep)
        out.push_back(1);
    }
  }
  c.outputs[0] = {DType::kInt64, out};
}

void infer_matmul(InferContext& c) {
  require_same_dtype(c, 0, 1);
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType, "matmul: bool is not supported");
  Dims x = c.inputs[0].dims, y = c.inputs[1].dims;
  OAR_ENFORCE(
      x.size() >= 1 && y.size() >= 1, ErrorCode::kInvalidArgument,
      "matmul: x and y must have at least 1 dimension, got x" << x.to_string() << " y" << y.to_string());
  bool tx = c.attrs->get_int("transpose_x") != 0, ty = c.attrs->get_int("transpose_y") != 0;
  bool x1 = x.size() == 1, y1 = y.size() == 1;
  // Shapes of the matrices after the transposes, with 1-D operands promoted as numpy does.
  int64_t m, kx, ky, n;
  if (x1) {
    m = 1;
    kx = x[0];
  } else {
    m = tx ? x[x.size() - 1] : x[x.size() - 2];
    kx = tx ? x[x.size() - 2] : x[x.size() - 1];
  }
  if (y1) {
    ky = y[0];
    n = 1;
  } else {
    ky = ty ? y[y.size() - 1] : y[y.size() - 2];
    n = ty ? y[y.size() - 2] : y[y.size() - 1];
  }
  OAR_ENFORCE(kx == ky, ErrorCode::kInvalidArgument,
              "matmul: x.shape[-1] (" << kx << ") != y.shape[-2] (" << ky << ") (x" << x.to_string() << ", y"
                                      << y.to_string() << ", transpose_x=" << tx << ", transpose_y=" << ty
                                      << ")");
  Dims xb(x.data(), x1 ? 0 : x.size() - 2), yb(y.data(), y1 ? 0 : y.size() - 2);
  Dims out = broadcast(c, xb, yb, "batch of x", "batch of y");
  if (!x1) out.push_back(m);
  if (!y1) out.push_back(n);
  c.outputs[0] = {c.inputs[0].dtype, out};
}

void infer_cast(InferContext& c) { c.outputs[0] = {attr_dtype(c), c.inputs[0].dims}; }
void infer_fill(InferContext& c) { c.outputs[0] = {attr_dtype(c), attr_shape(c)}; }
void infer_random(InferContext& c) {
  DType d = attr_dtype(c);
  OAR_ENFORCE(is_floating(d), ErrorCode::kType,
              op_name(c) << ": dtype " << dtype_name(d) << " is not supported; expected a floating dtype");
  c.outputs[0] = {d, attr_shape(c)};
}
void infer_arange(InferContext& c) {
  double start = c.attrs->get_float("start"), end = c.attrs->get_float("end"),
         step = c.attrs->get_float("step");
  OAR_ENFORCE(step != 0, ErrorCode::kInvalidArgument, "arange: step must not be 0");
  OAR_ENFORCE(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), ErrorCode::kInvalidArgument,
              "arange: start, end and step must be finite");
  double len = std::ceil((end - start) / step);
  c.outputs[0] = {attr_dtype(c), Dims{len > 0 ? static_cast<int64_t>(len) : 0}};
}

void infer_concat(InferContext& c) {
  OAR_ENFORCE(c.num_inputs >= 1, ErrorCode::kInvalidArgument, "concat: needs at least one input");
  const Dims& d0 = c.inputs[0].dims;
  OAR_ENFORCE(d0.size() >= 1, ErrorCode::kInvalidArgument, "concat: 0-d tensors cannot be concatenated");
  int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), d0.size());
  c.attrs->set("axis", axis);
  Dims out = d0;
  for (int32_t i = 1; i < c.num_inputs; ++i) {
    const Dims& d = c.inputs[i].dims;
    OAR_ENFORCE(c.inputs[i].dtype == c.inputs[0].dtype, ErrorCode::kType,
                "concat: x[" << i << "].dtype (" << dtype_name(c.inputs[i].dtype) << ") != x[0].dtype ("
                             << dtype_name(c.inputs[0].dtype) << ")");
    OAR_ENFORCE(d.size() == d0.size(), ErrorCode::kInvalidArgument,
                "concat: x[" << i << "] has rank " << d.size() << ", x[0] has rank " << d0.size());
    for (int32_t k = 0; k < d.size(); ++k)
      OAR_ENFORCE(k == axis || d[k] == d0[k], ErrorCode::kInvalidArgument,
                  "concat: x[" << i << "].shape" << d.to_string() << " differs from x[0].shape"
                               << d0.to_string() << " at axis " << k << " (only axis " << axis
                               << " may differ)");
    out[static_cast<int32_t>(axis)] += d[static_cast<int32_t>(axis)];
  }
  c.outputs[0] = {c.inputs[0].dtype, out};
}

void infer_index_select(InferContext& c) {
  const TensorMeta &x = c.inputs[0], &idx = c.inputs[1];
  OAR_ENFORCE(idx.dtype == DType::kInt32 || idx.dtype == DType::kInt64, ErrorCode::kType,
              "index_select: index.dtype must be int32 or int64, got " << dtype_name(idx.dtype));
  OAR_ENFORCE(idx.dims.size() == 1, ErrorCode::kInvalidArgument,
              "index_select: index must be 1-D, got shape " << idx.dims.to_string());
  OAR_ENFORCE(x.dims.size() >= 1, ErrorCode::kInvalidArgument,
              "index_select: x must have at least 1 dimension");
  int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), x.dims.size());
  c.attrs->set("axis", axis);
  Dims out = x.dims;
  out[static_cast<int32_t>(axis)] = idx.dims[0];
  c.outputs[0] = {x.dtype, out};
}

void infer_index_add(InferContext& c) {
  const TensorMeta &x = c.inputs[0], &idx = c.inputs[1], &src = c.inputs[2];
  OAR_ENFORCE(x.dtype != DType::kBool, ErrorCode::kType, "index_add: bool is not supported");
  OAR_ENFORCE(idx.dtype == DType::kInt32 || idx.dtype == DType::kInt64, ErrorCode::kType,
              "index_add: index.dtype must be int32 or int64, got " << dtype_name(idx.dtype));
  OAR_ENFORCE(idx.dims.size() == 1, ErrorCode::kInvalidArgument,
              "index_add: index must be 1-D, got shape " << idx.dims.to_string());
  OAR_ENFORCE(x.dims.size() >= 1, ErrorCode::kInvalidArgument, "index_add: x must have at least 1 dimension");
  require_same_dtype(c, 0, 2);
  int64_t axis = normalize_axis(c, c.attrs->get_int("axis"), x.dims.size());
  c.attrs->set("axis", axis);
  Dims want = x.dims;
  want[static_cast<int32_t>(axis)] = idx.dims[0];
  OAR_ENFORCE(src.dims == want, ErrorCode::kInvalidArgument,
              "index_add: source.shape " << src.dims.to_string() << " must be " << want.to_string()
                                         << " (x.shape with len(index) at axis " << axis << ")");
  c.outputs[0] = x;
}

void infer_assign(InferContext& c) {
  const TensorMeta &dst = c.inputs[0], &src = c.inputs[1];
  require_same_dtype(c, 0, 1);
  Dims b = broadcast(c, dst.dims, src.dims, "dst", "src");
  OAR_ENFORCE(b == dst.dims, ErrorCode::kInvalidArgument,
              "assign: src of shape " << src.dims.to_string() << " does not broadcast to dst's shape "
                                      << dst.dims.to_string());
}

void infer_where(InferContext& c) {
  OAR_ENFORCE(c.inputs[0].dtype == DType::kBool, ErrorCode::kType,
              "where: condition.dtype must be bool, got " << dtype_name(c.inputs[0].dtype));
  require_same_dtype(c, 1, 2);
  Dims xy = broadcast(c, c.inputs[1].dims, c.inputs[2].dims, "x", "y");
  c.outputs[0] = {c.inputs[1].dtype, broadcast(c, c.inputs[0].dims, xy, "condition", "broadcast(x, y)")};
}

void infer_softmax(InferContext& c) {
  require_floating(c, 0);
  c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), c.inputs[0].dims.size()));
  c.outputs[0] = c.inputs[0];
}

}  // namespace

void register_builtin_ops(OpRegistry& r) {
  register_foundation_ops(r);
  // The op families, each in its own file with its gradient rules (op_util.h).
  register_math_ops(r);
  register_manip_ops(r);
  register_conv_ops(r);
  register_nn_ops(r);
  register_linalg_ops(r);
  register_optim_ops(r);
}

// The first op set: arithmetic, unary math, reductions, matmul, creation, random, concat, indexing,
// where, softmax (docs/ops.md).
void register_foundation_ops(OpRegistry& r) {
  for (const char* n : {"add", "subtract", "multiply", "divide"}) def(r, n, {"x", "y"}, {}, infer_binary);
  // differentiable = false: no gradient by nature (piecewise constant, or bool/integer results), so the
  // outputs are constants (OpDef::differentiable).
  for (const char* n : {"floor_divide", "remainder", "maximum", "minimum", "pow"})
    def(r, n, {"x", "y"}, {}, infer_binary_real).differentiable = std::string(n) != "floor_divide";
  for (const char* n : {"equal", "not_equal"})
    def(r, n, {"x", "y"}, {}, infer_compare).differentiable = false;
  for (const char* n : {"less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
                        "logical_or", "logical_xor"})
    def(r, n, {"x", "y"}, {}, infer_compare_real).differentiable = false;

  for (const char* n : {"neg", "abs", "square", "sign", "relu"})
    def(r, n, {"x"}, {}, infer_unary_real).differentiable = std::string(n) != "sign";
  for (const char* n : {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                        "floor", "ceil", "round", "reciprocal", "erf"}) {
    const std::string s = n;
    def(r, n, {"x"}, {}, infer_unary_float).differentiable = s != "floor" && s != "ceil" && s != "round";
  }
  def(r, "logical_not", {"x"}, {}, infer_unary_bool).differentiable = false;
  for (const char* n : {"isnan", "isinf", "isfinite"})
    def(r, n, {"x"}, {}, infer_float_predicate).differentiable = false;

  std::vector<AttrDef> reduce_attrs = {ints_attr("axis"), int_attr("keepdim", 0)};
  def(r, "sum", {"x"}, reduce_attrs, infer_sum);
  def(r, "mean", {"x"}, reduce_attrs, infer_mean);
  def(r, "max", {"x"}, reduce_attrs, infer_minmax);
  def(r, "min", {"x"}, reduce_attrs, infer_minmax);
  def(r, "prod", {"x"}, reduce_attrs, infer_prod);
  std::vector<AttrDef> arg_attrs = {int_attr("axis", 0), int_attr("keepdim", 0), int_attr("flatten", 0)};
  def(r, "argmax", {"x"}, arg_attrs, infer_arg).differentiable = false;
  def(r, "argmin", {"x"}, arg_attrs, infer_arg).differentiable = false;

  def(r, "matmul", {"x", "y"}, {int_attr("transpose_x", 0), int_attr("transpose_y", 0)}, infer_matmul);
  def(r, "cast", {"x"}, {req_int("dtype")}, infer_cast);
  def(r, "copy", {"x"}, {}, infer_unary);

  def(r, "fill", {}, {req_ints("shape"), req_float("value"), req_int("dtype")}, infer_fill, -1);
  def(r, "arange", {}, {req_float("start"), req_float("end"), float_attr("step", 1.0), req_int("dtype")},
      infer_arange, -1);
  def(r, "uniform", {},
      {req_ints("shape"), float_attr("min", -1.0), float_attr("max", 1.0), req_int("seed"),
       int_attr("offset", 0), req_int("dtype")},
      infer_random, -1);
  def(r, "normal", {},
      {req_ints("shape"), float_attr("mean", 0.0), float_attr("std", 1.0), req_int("seed"),
       int_attr("offset", 0), req_int("dtype")},
      infer_random, -1);

  def(r, "concat", {"x"}, {int_attr("axis", 0)}, infer_concat, 0, /*variadic=*/true);
  def(r, "index_select", {"x", "index"}, {int_attr("axis", 0)}, infer_index_select);
  def(r, "index_add", {"x", "index", "source"}, {int_attr("axis", 0)}, infer_index_add);
  {
    OpDef& a = def(r, "assign", {"dst", "src"}, {}, infer_assign);
    a.outputs.clear();  // writes into dst
    a.inplace_input = 0;
  }
  def(r, "where", {"condition", "x", "y"}, {}, infer_where, 1);
  def(r, "softmax", {"x"}, {int_attr("axis", -1)}, infer_softmax);
  def(r, "log_softmax", {"x"}, {int_attr("axis", -1)}, infer_softmax);
}

}  // namespace oar
