// The built-in op set: every op's schema and shape/dtype inference, defined once. docs/ops.md is the
// plugin author's view of the same contract.
#include <oar/core/error.h>
#include <oar/core/unknown_extent.h>

#include <algorithm>
#include <cmath>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {

void register_sparse_ops(OpRegistry& r);    // ops_sparse.cc: sparse x dense products (oar.sparse)
void register_sparse_grads(OpRegistry& r);  // ops_sparse.cc

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
    // Two extents known only when a program runs (-1 in Paddle) broadcast while it is built, as in
    // Paddle; the kernels check the real sizes then.
    OAR_ENFORCE(da == db || da == 1 || db == 1 || (is_unknown_extent(da) && is_unknown_extent(db)),
                ErrorCode::kInvalidArgument,
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
  OAR_ENFORCE(is_floating(c.inputs[0].dtype) || is_complex(c.inputs[0].dtype), ErrorCode::kType,
              "mean: x.dtype " << dtype_name(c.inputs[0].dtype)
                               << " is not supported; expected a floating or complex dtype");
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
  OAR_ENFORCE(len < 9223372036854775808.0, ErrorCode::kInvalidArgument,
              "arange: start " << start << ", end " << end << " and step " << step << " make " << len
                               << " values, more than 2^63-1");
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
    out[static_cast<int32_t>(axis)] = checked_add(
        out[static_cast<int32_t>(axis)], d[static_cast<int32_t>(axis)], "concat", "the output length");
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

// exp, log, sqrt: floats and complex.
void infer_unary_float_complex(InferContext& c) {
  if (!is_complex(c.inputs[0].dtype)) require_floating(c, 0);
  c.outputs[0] = c.inputs[0];
}
// abs: a complex input gives its modulus in the real dtype.
void infer_abs(InferContext& c) { c.outputs[0] = {real_of(c.inputs[0].dtype), c.inputs[0].dims}; }

void infer_softmax(InferContext& c) {
  require_floating(c, 0);
  c.attrs->set("axis", normalize_axis(c, c.attrs->get_int("axis"), c.inputs[0].dims.size()));
  c.outputs[0] = c.inputs[0];
}

}  // namespace

// ops_vision.cc: RoI pooling, deformable im2col, nms, ctc_loss (declared here, its only caller)
void register_vision_ops(OpRegistry& r);
void register_vision_grads(OpRegistry& r);
// ops_rnn.cc: the fused recurrent op rnn and rnn_grad
void register_rnn_ops(OpRegistry& r);
void register_rnn_grads(OpRegistry& r);
// ops_fused.cc: the fused ops of the training passes (fused_gemm_epilogue, ...)
void register_fused_ops(OpRegistry& r);
void register_fused_grads(OpRegistry& r);
// ops_attention.cc: softmax_grad, log_softmax_grad (softmax's gradient rules), fused_attention
void register_attention_ops(OpRegistry& r);
void register_attention_grads(OpRegistry& r);

void register_builtin_ops(OpRegistry& r) {
  // Each family's ops, then their gradient rules (OpDef::grad), from the same file (op_util.h).
  register_foundation_ops(r);
  register_foundation_grads(r);
  register_math_ops(r);
  register_math_grads(r);
  register_manip_ops(r);
  register_manip_grads(r);
  register_conv_ops(r);
  register_conv_grads(r);
  register_nn_ops(r);
  register_nn_grads(r);
  register_linalg_ops(r);
  register_linalg_grads(r);
  register_scan_ops(r);
  register_scan_grads(r);
  register_random_ops(r);  // draws without gradients (ops_random.cc)
  register_fft_ops(r);
  register_fft_grads(r);
  register_vision_ops(r);
  register_vision_grads(r);
  register_sparse_ops(r);
  register_sparse_grads(r);
  register_rnn_ops(r);
  register_rnn_grads(r);
  register_attention_ops(r);
  register_attention_grads(r);
  register_optim_ops(r);  // the fused optimizer updates have no gradients
  register_complex_ops(r);
  register_complex_grads(r);
  register_fused_ops(r);
  register_fused_grads(r);
  // Inference and dispatch keep an op's outputs in fixed arrays of kMaxOpOutputs: a definition with more
  // would write past them (custom ops are refused the same way when loaded, custom_op.cc).
  for (int32_t id = 0; id < r.size(); ++id)
    OAR_ENFORCE(r.at(id).outputs.size() <= static_cast<size_t>(kMaxOpOutputs), ErrorCode::kInternal,
                "op " << r.at(id).name << " declares " << r.at(id).outputs.size() << " outputs; at most "
                      << kMaxOpOutputs << " are supported");
}

// The first op set: arithmetic, unary math, reductions, matmul, creation, random, concat, indexing,
// where, softmax (docs/ops.md).
void register_foundation_ops(OpRegistry& r) {
  for (const char* n : {"add", "subtract", "multiply", "divide"}) def(r, n, {"x", "y"}, {}, infer_binary);
  // differentiable = false: no gradient by nature (bool/integer results, or floor_divide, which Paddle
  // also leaves constant), so the outputs are constants (OpDef::differentiable).
  for (const char* n : {"floor_divide", "remainder", "maximum", "minimum"})
    def(r, n, {"x", "y"}, {}, infer_binary_real).differentiable = std::string(n) != "floor_divide";
  def(r, "pow", {"x", "y"}, {}, infer_binary);
  for (const char* n : {"equal", "not_equal"})
    def(r, n, {"x", "y"}, {}, infer_compare).differentiable = false;
  for (const char* n : {"less_than", "less_equal", "greater_than", "greater_equal", "logical_and",
                        "logical_or", "logical_xor"})
    def(r, n, {"x", "y"}, {}, infer_compare_real).differentiable = false;

  // sign and the rounding ops are piecewise constant: their gradient is zeros, as Paddle's (decision 97).
  // neg, sign and abs take complex too (sign(z) = z / |z|, abs(z) = |z| in the real dtype).
  for (const char* n : {"neg", "sign"}) def(r, n, {"x"}, {}, infer_unary);
  def(r, "abs", {"x"}, {}, infer_abs);
  for (const char* n : {"square", "relu"}) def(r, n, {"x"}, {}, infer_unary_real);
  for (const char* n : {"exp", "log", "sqrt"}) def(r, n, {"x"}, {}, infer_unary_float_complex);
  for (const char* n : {"log1p", "expm1", "rsqrt", "sin", "cos", "tanh", "sigmoid", "floor", "ceil", "round",
                        "reciprocal", "erf"})
    def(r, n, {"x"}, {}, infer_unary_float);
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

// ---- gradient rules of the foundation ops ----------------------------------------------------------
namespace {
using namespace gradutil;
using ops::divide;
using ops::multiply;
using ops::subtract;

std::vector<Tensor> add_grad(const GradContext& c) {
  // Only where needed: an additive attention mask's broadcast sum was computed (and, in to_static's
  // backward program, recorded) for nothing.
  return {c.needs_grad[0] ? unbroadcast(g0(c), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(g0(c), in_dims(c, 1)) : Tensor()};
}
std::vector<Tensor> subtract_grad(const GradContext& c) {
  return {unbroadcast(g0(c), in_dims(c, 0)),
          c.needs_grad[1] ? unbroadcast(ops::neg(g0(c)), in_dims(c, 1)) : Tensor()};
}
// Complex inputs: every rule passes g * conj(d out / d input) back (gradutil::conj, docs/ops_complex.md).
std::vector<Tensor> multiply_grad(const GradContext& c) {
  return {c.needs_grad[0] ? unbroadcast(multiply(g0(c), conj(Y(c))), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(multiply(g0(c), conj(X(c))), in_dims(c, 1)) : Tensor()};
}
std::vector<Tensor> divide_grad(const GradContext& c) {
  return {c.needs_grad[0] ? unbroadcast(divide(g0(c), conj(Y(c))), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1]
              ? unbroadcast(ops::neg(divide(multiply(g0(c), conj(OUT(c))), conj(Y(c)))), in_dims(c, 1))
              : Tensor()};
}
std::vector<Tensor> pow_grad(const GradContext& c) {
  Tensor gx, gy;
  if (c.needs_grad[0])
    gx = unbroadcast(
        multiply(g0(c), conj(multiply(Y(c), ops::pow(X(c), subtract(Y(c), scalar_like(1, Y(c))))))),
        in_dims(c, 0));
  if (c.needs_grad[1])
    gy = unbroadcast(multiply(g0(c), conj(multiply(OUT(c), ops::log(X(c))))), in_dims(c, 1));
  return {gx, gy};
}
// maximum/minimum: the gradient goes to the chosen operand; ties split it evenly.
std::vector<Tensor> select_grad(const GradContext& c, bool is_max) {
  Tensor wins = is_max ? ops::greater_than(X(c), Y(c)) : ops::less_than(X(c), Y(c));
  Tensor ties = multiply(mask(ops::equal(X(c), Y(c)), g0(c)), scalar_like(0.5, g0(c)));
  Tensor wx = ops::add(mask(wins, g0(c)), ties);
  Tensor wy = subtract(scalar_like(1, g0(c)), wx);
  return {unbroadcast(multiply(g0(c), wx), in_dims(c, 0)), unbroadcast(multiply(g0(c), wy), in_dims(c, 1))};
}
// sign: zeros for real inputs (piecewise constant, decision 97). For complex z, sign(z) = z / |z| varies
// with z and Paddle has no complex sign to follow: refused rather than a silently wrong zero.
std::vector<Tensor> sign_grad(const GradContext& c) {
  OAR_ENFORCE(!is_complex(c.input_meta[0].dtype), ErrorCode::kUnimplemented,
              "sign: the gradient for complex inputs is not implemented");
  return zero_grad(c);
}
std::vector<Tensor> maximum_grad(const GradContext& c) { return select_grad(c, true); }
std::vector<Tensor> minimum_grad(const GradContext& c) { return select_grad(c, false); }

// remainder: out = x - floor(x / y) * y, so dx = g and dy = -g * floor(x / y) (as Paddle's
// elementwise_mod_grad); undefined only on the jumps, where x / y is an integer.
std::vector<Tensor> remainder_grad(const GradContext& c) {
  return {c.needs_grad[0] ? unbroadcast(g0(c), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(ops::neg(multiply(g0(c), ops::floor_divide(X(c), Y(c)))), in_dims(c, 1))
                          : Tensor()};
}
std::vector<Tensor> neg_grad(const GradContext& c) { return {ops::neg(g0(c))}; }
std::vector<Tensor> exp_grad(const GradContext& c) { return {multiply(g0(c), conj(OUT(c)))}; }
std::vector<Tensor> expm1_grad(const GradContext& c) {
  return {multiply(g0(c), ops::add(OUT(c), scalar_like(1, OUT(c))))};
}
std::vector<Tensor> log_grad(const GradContext& c) { return {divide(g0(c), conj(X(c)))}; }
std::vector<Tensor> log1p_grad(const GradContext& c) {
  return {divide(g0(c), ops::add(X(c), scalar_like(1, X(c))))};
}
std::vector<Tensor> sqrt_grad(const GradContext& c) {
  return {divide(g0(c), multiply(conj(OUT(c)), scalar_like(2, OUT(c))))};
}
std::vector<Tensor> rsqrt_grad(const GradContext& c) {  // d x^-1/2 = -1/2 x^-3/2 = -1/2 out^3
  return {multiply(g0(c), multiply(multiply(OUT(c), multiply(OUT(c), OUT(c))), scalar_like(-0.5, OUT(c))))};
}
std::vector<Tensor> reciprocal_grad(const GradContext& c) {
  return {ops::neg(multiply(g0(c), multiply(OUT(c), OUT(c))))};
}
std::vector<Tensor> tanh_grad(const GradContext& c) {
  return {multiply(g0(c), subtract(scalar_like(1, OUT(c)), multiply(OUT(c), OUT(c))))};
}
std::vector<Tensor> sigmoid_grad(const GradContext& c) {
  return {multiply(g0(c), multiply(OUT(c), subtract(scalar_like(1, OUT(c)), OUT(c))))};
}
// out > 0 exactly where x > 0, so leaky_relu's fused gradient with slope 0 at `out` is relu's: one kernel
// instead of compare + cast + multiply (static backward programs are a third shorter for MLPs).
std::vector<Tensor> relu_grad(const GradContext& c) {
  if (!is_floating(OUT(c).dtype()))
    return {multiply(g0(c), mask(ops::greater_than(OUT(c), scalar_like(0, OUT(c))), g0(c)))};
  return {call_op(OAR_OP("leaky_relu_grad"), {OUT(c), g0(c)}, Attrs{{"negative_slope", 0.0}})[0]};
}
// A complex z: |z| moves along z / |z| = sign(z) (0 at 0, as Paddle), with the real g.
std::vector<Tensor> abs_grad(const GradContext& c) {
  if (is_complex(X(c).dtype()))
    return {multiply(ops::cast(g0(c), X(c).dtype()), ops::unary(OAR_OP("sign"), X(c)))};
  return {multiply(g0(c), ops::unary(OAR_OP("sign"), X(c)))};
}
std::vector<Tensor> square_grad(const GradContext& c) {
  return {multiply(g0(c), multiply(X(c), scalar_like(2, X(c))))};
}
std::vector<Tensor> sin_grad(const GradContext& c) {
  return {multiply(g0(c), ops::unary(OAR_OP("cos"), X(c)))};
}
std::vector<Tensor> cos_grad(const GradContext& c) {
  return {ops::neg(multiply(g0(c), ops::unary(OAR_OP("sin"), X(c))))};
}
std::vector<Tensor> erf_grad(const GradContext& c) {  // 2/sqrt(pi) exp(-x^2)
  Tensor e = ops::exp(ops::neg(multiply(X(c), X(c))));
  return {multiply(g0(c), multiply(e, scalar_like(1.1283791670955126, X(c))))};
}

std::vector<Tensor> sum_grad(const GradContext& c) { return {expand_reduced(c, g0(c))}; }
std::vector<Tensor> mean_grad(const GradContext& c) {
  double count =
      static_cast<double>(in_dims(c, 0).numel()) / std::max<int64_t>(c.output_meta[0].dims.numel(), 1);
  return {expand_reduced(c, divide(g0(c), scalar_like(count, g0(c))))};
}
// prod over axes: d out / d x_i is the product of the other elements. out / x_i where x_i != 0; where
// x_i == 0 it is the product of the rest when x_i is its slice's only zero, else 0 (no division by 0).
std::vector<Tensor> prod_grad(const GradContext& c) {
  const std::vector<int64_t>& axes = c.attrs.get_ints("axis");
  const Tensor& x = X(c);
  Tensor zero = scalar_like(0, x), one = scalar_like(1, x);
  Tensor is_zero = ops::equal(x, zero);
  Tensor zeros_in_slice = expand_reduced(c, ops::sum(mask(is_zero, x), axes, true));
  Tensor others = expand_reduced(c, ops::prod(ops::where(is_zero, one, x), axes, true));
  Tensor at_zero = ops::where(ops::equal(zeros_in_slice, one), others, zero);
  Tensor elsewhere = divide(expand_reduced(c, OUT(c)), ops::where(is_zero, one, x));
  return {multiply(expand_reduced(c, g0(c)), conj(ops::where(is_zero, at_zero, elsewhere)))};
}
// max/min over axes: the gradient goes to the elements equal to the result, split among ties.
std::vector<Tensor> extreme_grad(const GradContext& c) {
  Tensor hit = mask(ops::equal(X(c), expand_reduced(c, OUT(c))), X(c));
  Tensor count = ops::sum(hit, c.attrs.get_ints("axis"), /*keepdim=*/true);
  return {multiply(expand_reduced(c, g0(c)), divide(hit, count))};
}

std::vector<Tensor> matmul_grad(const GradContext& c) {
  bool tx = c.attrs.get_int("transpose_x") != 0, ty = c.attrs.get_int("transpose_y") != 0;
  Tensor x = conj(X(c)), y = conj(Y(c)), g = g0(c);  // g @ conj(y)^T, conj(x)^T @ g for complex
  // 1-D operands behave as [1, k] and [k, 1]; put the dropped dims back into g.
  if (x.ndim() == 1) {
    x = x.unsqueeze(0);
    tx = false;
    g = g.unsqueeze(y.ndim() == 1 ? -1 : -2);
  }
  if (y.ndim() == 1) {
    y = y.unsqueeze(-1);
    ty = false;
    g = g.unsqueeze(-1);
  }
  if (X(c).ndim() == 1 && Y(c).ndim() == 1) g = g.reshape({1, 1});
  Tensor gx, gy;
  if (c.needs_grad[0]) {
    gx = tx ? ops::matmul(y, g, ty, true) : ops::matmul(g, y, false, !ty);
    gx = unbroadcast(gx, x.dims()).reshape(in_dims(c, 0));
  }
  if (c.needs_grad[1] && y.ndim() == 2 && x.ndim() > 2 && !tx) {
    // A batch times one matrix (nn.Linear on N-D input): the weight gradient summed over the batch is
    // one 2-D product of the flattened rows, not a batched product and a sum over its batch.
    const int64_t k = x.dim(-1), n = g.dim(-1);
    Tensor x2 = x.reshape({-1, k}), g2 = g.reshape({-1, n});
    gy = ty ? ops::matmul(g2, x2, true, false) : ops::matmul(x2, g2, true, false);
    gy = gy.reshape(in_dims(c, 1));
  } else if (c.needs_grad[1]) {
    gy = ty ? ops::matmul(g, x, true, tx) : ops::matmul(x, g, !tx, false);
    gy = unbroadcast(gy, y.dims()).reshape(in_dims(c, 1));
  }
  return {gx, gy};
}

std::vector<Tensor> cast_grad(const GradContext& c) {
  DType from = c.input_meta[0].dtype;
  return {autograd::differentiable_dtype(from) ? ops::cast(g0(c), from) : Tensor()};
}
std::vector<Tensor> copy_grad(const GradContext& c) { return {g0(c)}; }
std::vector<Tensor> where_grad(const GradContext& c) {
  const Tensor& cond = c.inputs[0];
  Tensor zero = scalar_like(0, g0(c));
  return {Tensor(), c.needs_grad[1] ? unbroadcast(ops::where(cond, g0(c), zero), in_dims(c, 1)) : Tensor(),
          c.needs_grad[2] ? unbroadcast(ops::where(cond, zero, g0(c)), in_dims(c, 2)) : Tensor()};
}
std::vector<Tensor> concat_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis"), offset = 0;
  std::vector<Tensor> out;
  for (const TensorMeta& in : c.input_meta) {
    int64_t len = in.dims[static_cast<int32_t>(axis)];
    out.push_back(g0(c).slice(axis, offset, offset + len));
    offset += len;
  }
  return out;
}

std::vector<Tensor> index_select_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  Tensor zeros = ops::zeros(in_dims(c, 0), g0(c).dtype(), g0(c).place());
  return {ops::index_add(zeros, c.inputs[1], g0(c), axis), Tensor()};
}
// assign(dst, src): dst's old values are overwritten (no gradient); src's is the incoming one, cast
// back and summed over the broadcast dimensions.
std::vector<Tensor> assign_grad(const GradContext& c) {
  if (!c.needs_grad[1]) return {Tensor(), Tensor()};
  return {Tensor(), unbroadcast(ops::cast(g0(c), c.input_meta[1].dtype), in_dims(c, 1))};
}
std::vector<Tensor> index_add_grad(const GradContext& c) {
  int64_t axis = c.attrs.get_int("axis");
  return {g0(c), Tensor(), c.needs_grad[2] ? ops::index_select(g0(c), c.inputs[1], axis) : Tensor()};
}

}  // namespace

void register_foundation_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kX = 1, kY = 2, kXY = 3;
  constexpr bool kOut = true, kNoOut = false;
  auto set = [&](const char* op, GradFn f, uint32_t inputs, bool outputs) {
    r.get_mutable(op).grad = {f, inputs, outputs};
  };
  set("add", add_grad, kNone, kNoOut);
  set("subtract", subtract_grad, kNone, kNoOut);
  r.get_mutable("multiply").grad = {multiply_grad, kXY, kNoOut, /*saved_for_others=*/kXY};
  set("divide", divide_grad, kY, kOut);
  set("pow", pow_grad, kXY, kOut);
  set("maximum", maximum_grad, kXY, kNoOut);
  set("minimum", minimum_grad, kXY, kNoOut);
  set("neg", neg_grad, kNone, kNoOut);
  set("exp", exp_grad, kNone, kOut);
  set("expm1", expm1_grad, kNone, kOut);
  set("log", log_grad, kX, kNoOut);
  set("log1p", log1p_grad, kX, kNoOut);
  set("sqrt", sqrt_grad, kNone, kOut);
  set("rsqrt", rsqrt_grad, kNone, kOut);
  set("reciprocal", reciprocal_grad, kNone, kOut);
  set("tanh", tanh_grad, kNone, kOut);
  set("sigmoid", sigmoid_grad, kNone, kOut);
  set("relu", relu_grad, kNone, kOut);
  set("abs", abs_grad, kX, kNoOut);
  set("square", square_grad, kX, kNoOut);
  set("sin", sin_grad, kX, kNoOut);
  set("cos", cos_grad, kX, kNoOut);
  set("erf", erf_grad, kX, kNoOut);
  for (const char* n : {"floor", "ceil", "round"}) set(n, zero_grad, kNone, kNoOut);
  set("sign", sign_grad, kNone, kNoOut);
  set("sum", sum_grad, kNone, kNoOut);
  set("mean", mean_grad, kNone, kNoOut);
  set("max", extreme_grad, kX, kOut);
  set("prod", prod_grad, kX, kOut);
  set("remainder", remainder_grad, kXY, kNoOut);
  set("min", extreme_grad, kX, kOut);
  set("matmul", matmul_grad, kXY, kNoOut);
  set("cast", cast_grad, kNone, kNoOut);
  set("copy", copy_grad, kNone, kNoOut);
  // softmax, log_softmax: ops_attention.cc (their gradients are ops of their own)
  set("where", where_grad, kX, kNoOut);  // the condition
  set("concat", concat_grad, kNone, kNoOut);
  set("index_select", index_select_grad, kY, kNoOut);  // the index
  set("index_add", index_add_grad, kY, kNoOut);        // the index
  set("assign", assign_grad, kNone, kNoOut);
}

// The foundation ops' sample inputs for the op suite (op_sample.h; ranges keep every op in its domain).
void register_foundation_samples(OpRegistry& r) {
  using namespace sample;
  add(r, {"add", "subtract", "multiply", "maximum", "minimum"}, binary());
  add(r, "divide", binary(-2, 2, -2, 2, /*y_nonzero=*/true));
  add(r, {"floor_divide", "remainder"}, binary(-5, 5, -3, 3, /*y_nonzero=*/true));
  add(r, "remainder", {nonsmooth(S("signs", {integer({4, 5}, -7, 7), nonzero({4, 5}, -3, 3)}))});
  // Integer edge cases (docs/ops.md): the dtype's minimum (a range below it clips to it) divided by -1
  // wraps as numpy does; MIN % -1 == 0.
  const OpSample min_by_minus_one = only(nonsmooth(S("MIN by -1", {real({4}, -1e300, -1e300), integer({4}, -1, -1)})),
                                         {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64});
  add(r, {"divide", "floor_divide", "remainder"}, {min_by_minus_one});
  {
    std::vector<OpSample> v;
    for (OpSample& s : binary(0.5, 2, -2, 2)) v.push_back(only(s, floats()));  // a real base
    for (OpSample& s : binary(-3, 3, 0, 3, false, false))
      v.push_back(only(s, ints()));  // no negative exponent
    for (OpSample& s : binary(0.5, 2, -2, 2, false, false))  // complex base and exponent, away from 0
      v.push_back(only(s, {DType::kComplex64, DType::kComplex128}));
    add(r, "pow", v);
  }
  const OpSample ties = S("ties", {integer({4, 5}, -2, 2), integer({4, 5}, -2, 2)});
  for (const char* n : {"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal"}) {
    add(r, n, binary());
    add(r, n, {ties});
  }
  for (const char* n : {"logical_and", "logical_or", "logical_xor"}) {
    add(r, n, binary(-1, 1, -1, 1));
    add(r, n, {S("zeros", {with_zeros(integer({4, 5}, -1, 1)), with_zeros(integer({4, 5}, -1, 1))})});
  }

  add(r, {"neg", "abs", "square"}, unary(-10, 10));
  add(r, {"neg", "abs"},
      {only(S("MIN", {real({3}, -1e300, -1e300)}),  // wraps: neg(MIN) == abs(MIN) == MIN
            {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64})});
  add(r, {"sign", "relu"}, unary(-10, 10));
  add(r, {"sign", "relu", "abs"}, {S("zeros", {with_zeros(real({4, 5}, -10, 10))})});
  add(r, "exp", unary(-3, 3));
  add(r, "log", unary(0.05, 10));
  add(r, "log1p", unary(-0.9, 5));
  add(r, "expm1", unary(-2, 2));
  add(r, {"sqrt", "rsqrt"}, unary(0.05, 10));
  add(r, "sqrt", {S("zeros", {with_zeros(real({4, 5}, 0, 10))})});
  add(r, {"sin", "cos"}, unary(-4, 4));
  add(r, "tanh", unary(-3, 3));
  add(r, "sigmoid", unary(-8, 8));
  add(r, {"floor", "ceil"}, unary(-10, 10));
  add(r, "round", unary(-10, 10, true, {}, SampleKind::kHalves));  // ties round away from 0
  add(r, "round", {S("real", {real({7, 9}, -10, 10)})});
  add(r, "reciprocal", unary(-4, 4, true, {}, SampleKind::kNonZero));
  add(r, "erf", unary(-3, 3));
  add(r, "logical_not", unary(-2, 2, true, {}, SampleKind::kInteger));
  add(r, {"isnan", "isinf", "isfinite"}, unary(-10, 10));

  add(r, "sum", reduction(-5, 5));
  add(r, "sum",
      {only(S("widen int32", {real({64}, 1e9, 3e9)}), {DType::kInt32}),
       only(S("widen uint8", {real({4096}, 200, 255)}), {DType::kUInt8}),
       only(S("widen int16", {real({1024}, 30000, 40000)}), {DType::kInt16}),
       only(S("widen int8", {real({1024}, -128, -100)}), {DType::kInt8}),
       loose(only(S("long accumulate", {real({200, 300}, 0, 1)}), {DType::kFloat16, DType::kBFloat16}), 4)});
  add(r, "mean", reduction(-5, 5));
  add(r, "mean", {loose(S("long accumulate", {real({200, 300}, 0, 1)}), 4)});
  add(r, {"max", "min"}, reduction(-5, 5, /*allow_empty=*/false));
  add(r, {"max", "min"},
      {S("ties", {integer({4, 6}, -2, 2)}, {{"axis", Shape{1}}, {"keepdim", int64_t{0}}})});
  {
    std::vector<OpSample> v;
    for (OpSample& s : reduction(0.5, 1.5, true, false)) v.push_back(only(s, floats()));
    for (OpSample& s : reduction(-2, 2, true, false)) v.push_back(only(s, ints()));  // wraps as numpy
    v.push_back(S("complex", {real({3, 4}, 0.6, 1.0)}, {{"axis", Shape{1}}, {"keepdim", int64_t{0}}}));
    add(r, "prod", v);
  }
  {
    auto A = [](int64_t axis, int64_t keep, int64_t flatten) {
      return AttrList{{"axis", axis}, {"keepdim", keep}, {"flatten", flatten}};
    };
    add(r, {"argmax", "argmin"},
        {S("ties axis 1", {integer({3, 4, 5}, -3, 3)}, A(1, 0, 0)),
         S("ties axis -1 keepdim", {integer({3, 4, 5}, -3, 3)}, A(-1, 1, 0)),
         S("flatten", {integer({3, 4, 5}, -3, 3)}, A(0, 0, 1)),
         S("flatten keepdim", {integer({3, 4}, -3, 3)}, A(0, 1, 1)),
         S("real", {real({5, 7}, -5, 5)}, A(0, 0, 0)), S("0-d", {real({}, -5, 5)}, A(0, 0, 0)),
         S("transposed", {transposed(integer({4, 6}, -3, 3))}, A(1, 0, 0)),
         S("flipped", {flipped(integer({5, 6}, -3, 3))}, A(0, 0, 0)),
         S("long rows", {real({20, 301}, -5, 5)}, A(1, 0, 0)),
         S("specials", {with_specials(real({4, 6}, -5, 5))}, A(1, 0, 0))});
  }

  {
    auto M = [](int64_t tx, int64_t ty) { return AttrList{{"transpose_x", tx}, {"transpose_y", ty}}; };
    auto m = [](Shape s) { return real(std::move(s), -1, 1); };
    add(r, "matmul",
        {S("2-d", {m({3, 4}), m({4, 5})}, M(0, 0)), S("batch", {m({2, 3, 4}), m({4, 5})}, M(0, 0)),
         S("transpose x", {m({4, 3}), m({4, 5})}, M(1, 0)), S("transpose y", {m({3, 4}), m({5, 4})}, M(0, 1)),
         S("transpose both", {m({2, 4, 3}), m({5, 4})}, M(1, 1)),
         S("vector x", {m({4}), m({2, 4, 5})}, M(0, 0)), S("vector y", {m({3, 4}), m({4})}, M(0, 0)),
         S("dot", {m({7}), m({7})}, M(0, 0)), S("batch broadcast", {m({2, 1, 3, 4}), m({3, 4, 5})}, M(0, 0)),
         S("transposed views", {transposed(m({3, 4})), transposed(m({4, 5}))}, M(0, 0)),
         S("flipped views", {flipped(m({3, 4})), flipped(m({4, 5}))}, M(0, 0)),
         S("expanded x", {expanded(m({2, 3, 4}), {1, 3, 4}), m({2, 4, 5})}, M(0, 0)),
         S("view and flag", {transposed(m({4, 3})), flipped(m({5, 4}))}, M(1, 1)),
         S("k 0", {m({3, 0}), m({0, 5})}, M(0, 0)), S("m 0", {m({0, 4}), m({4, 5})}, M(0, 0)),
         S("batch 0", {m({0, 3, 4}), m({4, 5})}, M(0, 0)),
         loose(S("odd sizes", {m({67, 129}), m({131, 129})}, M(0, 1)), 4)});
  }
  for (DType to : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat16,
                   DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kComplex64}) {
    const double lo = to == DType::kUInt8 ? 0 : -100;  // a negative float to uint8 is undefined in C
    add(r, "cast",
        {S(std::string("to ") + dtype_name(to), {with_zeros(real({3, 4}, lo, 100))},
           {{"dtype", static_cast<int64_t>(to)}})});
  }
  add(r, "cast",
      {S("to float64 transposed", {transposed(real({4, 6}, 0, 100))}, {{"dtype", int64_t(DType::kFloat64)}}),
       S("to int32 flipped", {flipped(real({4, 6}, 0, 100))}, {{"dtype", int64_t(DType::kInt32)}}),
       S("to float16 0-d", {real({}, 0, 100)}, {{"dtype", int64_t(DType::kFloat16)}}),
       S("to float32 empty", {real({0, 3})}, {{"dtype", int64_t(DType::kFloat32)}}),
       // values past float16's range become inf
       only(S("overflow to float16", {real({20}, 6e4, 1e5)}, {{"dtype", int64_t(DType::kFloat16)}}),
            {DType::kFloat32, DType::kFloat64}),
       only(nonsmooth(S("negative overflow to float32", {real({20}, -1e39, -3e38)},
                        {{"dtype", int64_t(DType::kFloat32)}})),
            {DType::kFloat64})});
  add(r, "copy", unary(-10, 10));

  auto F = [](Shape shape, double value) { return AttrList{{"shape", shape}, {"value", value}}; };
  const std::vector<DType> signed_dtypes = {
      DType::kInt8,     DType::kInt16,   DType::kInt32,   DType::kInt64,     DType::kFloat16,
      DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128};
  add(r, "fill",
      {S("2-d", {}, F({2, 3}, 2.5)), only(S("negative", {}, F({4}, -7)), signed_dtypes),
       only(S("0-d", {}, F({}, -1.25)), signed_dtypes), S("empty", {}, F({0, 3}, 1)),
       only(S("fraction", {}, F({4}, -2.75)), signed_dtypes), S("0-d positive", {}, F({}, 3))});
  auto R = [](double start, double end, double step) {
    return AttrList{{"start", start}, {"end", end}, {"step", step}};
  };
  add(r, "arange", {S("up", {}, R(1, 11, 2)), S("down", {}, R(10, 0, -3)), S("empty", {}, R(5, 5, 1))});
  add(r, "arange", {only(S("fraction", {}, R(0.5, 3, 0.25)), floats())});
  auto U = [](double lo, double hi, int64_t offset) {
    return AttrList{
        {"shape", Shape{40, 25}}, {"min", lo}, {"max", hi}, {"seed", int64_t{1234}}, {"offset", offset}};
  };
  const char* why = "random numbers: the device's stream need not match the CPU's";
  add(r, "uniform",
      {random("[-2, 3)", {}, U(-2, 3, 0), -2, 3, 0.5, 5 / std::sqrt(12.0), why),
       random("offset", {}, U(0, 1, 77), 0, 1, 0.5, 1 / std::sqrt(12.0), why)});
  auto N = [](double mean, double std) {
    return AttrList{{"shape", Shape{40, 25}},
                    {"mean", mean},
                    {"std", std},
                    {"seed", int64_t{1234}},
                    {"offset", int64_t{5}}};
  };
  add(r, "normal", {random("N(1, 2^2)", {}, N(1, 2), -1e30, 1e30, 1, 2, why)});

  add(r, "concat",
      {S("axis 1", {real({3, 4}), real({3, 2})}, {{"axis", int64_t{1}}}),
       S("three axis 0", {real({2, 3}), real({1, 3}), real({4, 3})}, {{"axis", int64_t{0}}}),
       S("negative axis", {real({2, 2, 3}), real({2, 2, 1})}, {{"axis", int64_t{-1}}}),
       S("one", {real({2, 3})}, {{"axis", int64_t{0}}}),
       S("empty part", {real({0, 4}), real({3, 4})}, {{"axis", int64_t{0}}}),
       S("views", {transposed(real({4, 3})), flipped(real({2, 3}))}, {{"axis", int64_t{0}}}),
       S("expanded", {expanded(real({3, 4}), {1, 4}), real({3, 4})}, {{"axis", int64_t{1}}})});
  add(r, "index_select",
      {S("axis 0", {real({5, 4}), index({3}, 0, 4)}, {{"axis", int64_t{0}}}),
       S("axis 1 repeats", {real({5, 4}), index({6}, 0, 3)}, {{"axis", int64_t{1}}}),
       S("int32 index", {real({5, 4}), index({3}, 0, 3, DType::kInt32)}, {{"axis", int64_t{-1}}}),
       S("empty index", {real({5, 4}), index({0}, 0, 4)}, {{"axis", int64_t{0}}}),
       S("flipped x", {flipped(real({5, 4})), index({4}, 0, 4)}, {{"axis", int64_t{0}}}),
       S("1-d", {real({6}), index({4}, 0, 5)}, {{"axis", int64_t{0}}})});
  add(r, "index_add",
      {S("axis 0", {real({5, 3}), index({4}, 0, 4), real({4, 3})}, {{"axis", int64_t{0}}}),
       S("axis 1 int32", {real({3, 5}), index({2}, 0, 4, DType::kInt32), real({3, 2})},
         {{"axis", int64_t{1}}}),
       S("empty index", {real({5, 3}), index({0}, 0, 4), real({0, 3})}, {{"axis", int64_t{0}}}),
       S("transposed x", {transposed(real({5, 3})), index({3}, 0, 4), real({3, 3})},
         {{"axis", int64_t{0}}})});
  add(r, "assign",
      {S("same shape", {real({3, 4}), real({3, 4})}), S("broadcast src", {real({3, 4}), real({4})}),
       S("0-d src", {real({2, 3}), real({})}), S("0-d", {real({}), real({})}),
       S("empty", {real({0, 3}), real({0, 3})}),
       S("transposed dst", {transposed(real({4, 3})), real({4, 3})}),
       S("flipped dst", {flipped(real({4, 3})), flipped(real({4, 3}))})});
  add(r, "where",
      {S("same shape", {mask({3, 4}), real({3, 4}), real({3, 4})}),
       S("broadcast", {mask({3, 1}), real({1, 4}), real({3, 4})}),
       S("0-d condition", {mask({}), real({2, 3}), real({2, 3})}),
       S("empty", {mask({0, 4}), real({0, 4}), real({4})}),
       S("views", {transposed(mask({3, 4})), flipped(real({3, 4})), expanded(real({3, 4}), {1, 4})})});
  add(r, {"softmax", "log_softmax"}, along_axis(-3, 3));
}

}  // namespace oar
