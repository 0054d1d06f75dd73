// Paddle op type -> oar ops: one translation per op type. A translation runs once, at lowering: it
// reads the OpDesc's attributes (refusing values oar does not implement) and returns the closure that
// runs each time, reading inputs from and writing outputs to the scope through OpRunContext. Which
// types exist and how each is translated is the Paddle op map (paddle_map.def): the regular forms are
// translated at the end of this file, the others by the tr_* functions the map names.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/ops_manip.h>
#include <oar/core/ops_nn.h>
#include <oar/ir/executor.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "paddle_map.h"

namespace oar::ir {
namespace {

// ---- attribute readers: Paddle writes some attributes with different widths across versions -------

[[noreturn]] void bad_attr(const OpDesc& op, const std::string& name, const std::string& why) {
  OAR_THROW(ErrorCode::kInvalidArgument, op.type << ": attribute " << name << " " << why);
}

int64_t attr_int(const OpDesc& op, const std::string& name, int64_t def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<int32_t>(a)) return *v;
  if (auto* v = std::get_if<int64_t>(a)) return *v;
  if (auto* v = std::get_if<bool>(a)) return *v ? 1 : 0;
  bad_attr(op, name, "is not an integer");
}

bool attr_bool(const OpDesc& op, const std::string& name, bool def) { return attr_int(op, name, def) != 0; }

double attr_float(const OpDesc& op, const std::string& name, double def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<float>(a)) return *v;
  if (auto* v = std::get_if<double>(a)) return *v;
  if (auto* v = std::get_if<int32_t>(a)) return *v;
  if (auto* v = std::get_if<int64_t>(a)) return static_cast<double>(*v);
  bad_attr(op, name, "is not a number");
}

std::vector<int64_t> attr_ints(const OpDesc& op, const std::string& name, std::vector<int64_t> def = {}) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<std::vector<int32_t>>(a)) return std::vector<int64_t>(v->begin(), v->end());
  if (auto* v = std::get_if<std::vector<int64_t>>(a)) return *v;
  bad_attr(op, name, "is not a list of integers");
}

std::string attr_str(const OpDesc& op, const std::string& name, const std::string& def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<std::string>(a)) return *v;
  bad_attr(op, name, "is not a string");
}

// Optional input slots the translation does not implement must be empty.
void require_unbound(const OpDesc& op, const char* slot) {
  OAR_ENFORCE(
      op.input(slot).empty(), ErrorCode::kUnimplemented,
      op.type << ": input " << slot << " (a tensor-valued attribute) is not supported by the executor yet");
}

void require_nchw(const OpDesc& op, const char* name) {
  std::string f = attr_str(op, name, "NCHW");
  OAR_ENFORCE(f == "NCHW" || f == "AnyLayout", ErrorCode::kUnimplemented,
              op.type << ": " << name << " '" << f << "' is not supported (only NCHW)");
}

Tensor scalar_like(double v, const Tensor& like) { return ops::full(Dims{}, v, like.dtype(), like.place()); }

// ---- feed / fetch -----------------------------------------------------------------------------------

OpKernelFn tr_feed(const OpDesc& op) {
  size_t col = static_cast<size_t>(attr_int(op, "col", 0));
  return [col](OpRunContext& c) { c.set_out("Out", (*c.feed_list)[col]); };
}

OpKernelFn tr_fetch(const OpDesc& op) {
  size_t col = static_cast<size_t>(attr_int(op, "col", 0));
  return [col](OpRunContext& c) { (*c.fetch_list)[col] = c.in("X"); };
}

// ---- elementwise ------------------------------------------------------------------------------------

// Paddle's elementwise `axis`: with -1 (or equal ranks) numpy broadcasting; otherwise the lower-rank
// operand's dims (trailing 1s dropped) line up with the other's starting at `axis`.
Tensor align_for_axis(const OpDesc& op, const Tensor& small, int32_t big_rank, int64_t axis) {
  std::vector<int64_t> d = small.dims().to_vector();
  while (!d.empty() && d.back() == 1) d.pop_back();
  int64_t r = static_cast<int64_t>(d.size());
  OAR_ENFORCE(axis >= 0 && axis + r <= big_rank, ErrorCode::kInvalidArgument,
              op.type << ": axis " << axis << " does not fit a shape " << small.dims().to_string()
                      << " operand into rank " << big_rank);
  std::vector<int64_t> shape(static_cast<size_t>(axis), 1);
  shape.insert(shape.end(), d.begin(), d.end());
  shape.resize(static_cast<size_t>(big_rank), 1);
  return small.reshape(Dims(shape));
}

// One call of a one-output op without attributes, allocation-free as the ops:: functions are (the unary,
// elementwise and binary forms run on every executor step).
Tensor call1(const OpDef& def, std::initializer_list<Tensor> inputs) {
  Attrs attrs;
  Tensor out;
  run_op(def, inputs.begin(), static_cast<int32_t>(inputs.size()), attrs, cpu_place(), &out);
  return out;
}

// The elementwise form of the Paddle op map: oar op `def` on X and Y.
OpKernelFn tr_elementwise(const OpDesc& op, const OpDef* def) {
  int64_t axis = attr_int(op, "axis", -1);
  OAR_ENFORCE(axis >= -1, ErrorCode::kUnimplemented,
              op.type << ": axis " << axis << " < -1 is not supported");
  const OpDesc* o = &op;
  return [axis, o, def](OpRunContext& c) {
    Tensor x = c.in("X"), y = c.in("Y");
    if (axis != -1 && x.ndim() != y.ndim()) {
      if (y.ndim() < x.ndim())
        y = align_for_axis(*o, y, x.ndim(), axis);
      else
        x = align_for_axis(*o, x, y.ndim(), axis);
    }
    c.set_out("Out", call1(*def, {x, y}));
  };
}

// ---- activations ------------------------------------------------------------------------------------

// hard_swish: x * min(max(x + offset, 0), threshold) / scale; oar's hardswish is the 6 / 6 / 3 case.
OpKernelFn tr_hard_swish(const OpDesc& op) {
  double th = attr_float(op, "threshold", 6.0), sc = attr_float(op, "scale", 6.0),
         off = attr_float(op, "offset", 3.0);
  OAR_ENFORCE(th == 6.0 && sc == 6.0 && off == 3.0, ErrorCode::kUnimplemented,
              "hard_swish: threshold " << th << ", scale " << sc << ", offset " << off
                                       << " are not supported (only 6, 6, 3)");
  return [](OpRunContext& c) { c.set_out("Out", ops::unary("hardswish", c.in("X"))); };
}

// scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias).
OpKernelFn tr_scale(const OpDesc& op) {
  require_unbound(op, "ScaleTensor");
  require_unbound(op, "BiasTensor");
  double s = attr_float(op, "scale", 1.0), b = attr_float(op, "bias", 0.0);
  bool after = attr_bool(op, "bias_after_scale", true);
  return [s, b, after](OpRunContext& c) {
    Tensor x = c.in("X");
    Tensor out;
    if (after) {
      out = s == 1.0 ? x : ops::multiply(x, scalar_like(s, x));
      if (b != 0.0) out = ops::add(out, scalar_like(b, x));
    } else {
      out = b == 0.0 ? x : ops::add(x, scalar_like(b, x));
      if (s != 1.0) out = ops::multiply(out, scalar_like(s, x));
    }
    c.set_out("Out", out);
  };
}

// dropout at inference: identity for upscale_in_train, X * (1 - p) for downgrade_in_infer (Paddle's
// default). The executor runs programs for inference only, so is_test is not consulted.
OpKernelFn tr_dropout(const OpDesc& op) {
  require_unbound(op, "Seed");
  double p = attr_float(op, "dropout_prob", 0.5);
  std::string impl = attr_str(op, "dropout_implementation", "downgrade_in_infer");
  OAR_ENFORCE(
      impl == "downgrade_in_infer" || impl == "upscale_in_train", ErrorCode::kInvalidArgument,
      "dropout: dropout_implementation '" << impl << "' is not one of downgrade_in_infer, upscale_in_train");
  bool downgrade = impl == "downgrade_in_infer";
  return [p, downgrade](OpRunContext& c) {
    Tensor x = c.in("X");
    c.set_out("Out", downgrade ? ops::multiply(x, scalar_like(1.0 - p, x)) : x);
  };
}

// ---- matmul -----------------------------------------------------------------------------------------

OpKernelFn tr_matmul_v2(const OpDesc& op) {
  bool tx = attr_bool(op, "trans_x", false), ty = attr_bool(op, "trans_y", false);
  return [tx, ty](OpRunContext& c) { c.set_out("Out", ops::matmul(c.in("X"), c.in("Y"), tx, ty)); };
}

OpKernelFn tr_matmul(const OpDesc& op) {  // the 1.x matmul with alpha
  bool tx = attr_bool(op, "transpose_X", false), ty = attr_bool(op, "transpose_Y", false);
  double alpha = attr_float(op, "alpha", 1.0);
  return [tx, ty, alpha](OpRunContext& c) {
    Tensor out = ops::matmul(c.in("X"), c.in("Y"), tx, ty);
    c.set_out("Out", alpha == 1.0 ? out : ops::multiply(out, scalar_like(alpha, out)));
  };
}

// mul: X flattened to 2-D at x_num_col_dims, Y at y_num_col_dims; Out is X.dims[:xn] + Y.dims[yn:].
OpKernelFn tr_mul(const OpDesc& op) {
  int64_t xn = attr_int(op, "x_num_col_dims", 1), yn = attr_int(op, "y_num_col_dims", 1);
  return [xn, yn](OpRunContext& c) {
    Tensor x = c.in("X"), y = c.in("Y");
    OAR_ENFORCE(xn >= 1 && xn < x.ndim() && yn >= 1 && yn < y.ndim(), ErrorCode::kInvalidArgument,
                "mul: x_num_col_dims " << xn << " / y_num_col_dims " << yn << " do not fit X "
                                       << x.dims().to_string() << " and Y " << y.dims().to_string());
    auto prod = [](const Dims& d, int64_t a, int64_t b) {
      int64_t p = 1;
      for (int64_t i = a; i < b; ++i) p *= d[static_cast<int32_t>(i)];
      return p;
    };
    Tensor x2 = x.reshape(Dims{prod(x.dims(), 0, xn), prod(x.dims(), xn, x.ndim())});
    Tensor y2 = y.reshape(Dims{prod(y.dims(), 0, yn), prod(y.dims(), yn, y.ndim())});
    std::vector<int64_t> od(x.dims().begin(), x.dims().begin() + xn);
    od.insert(od.end(), y.dims().begin() + yn, y.dims().end());
    c.set_out("Out", ops::matmul(x2, y2).reshape(Dims(od)));
  };
}

// ---- fused ops produced by the inference passes (passes.cc) -------------------------------------

// The activations fc and fused_elemwise_add_activation accept (Paddle's fc kernel only runs "relu";
// gelu / tanh / sigmoid are oar extensions the fusion pass may produce).
using ActFn = Tensor (*)(const Tensor&);
Tensor act_gelu(const Tensor& x) { return ops::gelu(x, false); }
Tensor act_identity(const Tensor& x) { return x; }
ActFn find_act(const OpDesc& op, const std::string& name, bool allow_identity) {
  if (allow_identity && (name.empty() || name == "identity")) return act_identity;
  if (name == "relu") return ops::relu;
  if (name == "sigmoid") return ops::sigmoid;
  if (name == "tanh") return ops::tanh;
  if (name == "gelu") return act_gelu;
  OAR_THROW(ErrorCode::kUnimplemented,
            op.type << ": activation '" << name << "' is not supported (relu, gelu, tanh, sigmoid)");
}

// fc: Out = act(flatten(Input, in_num_col_dims) @ W + Bias), reshaped to Input.dims[:k] + [N].
OpKernelFn tr_fc(const OpDesc& op) {
  int64_t k = attr_int(op, "in_num_col_dims", 1);
  ActFn act = find_act(op, attr_str(op, "activation_type", ""), true);
  OAR_ENFORCE(!attr_bool(op, "padding_weights", false), ErrorCode::kUnimplemented,
              "fc: padding_weights is not supported");
  return [k, act](OpRunContext& c) {
    const Tensor& x = c.in("Input");
    const Tensor& w = c.in("W");
    OAR_ENFORCE(w.ndim() == 2 && k >= 1 && k < x.ndim(), ErrorCode::kInvalidArgument,
                "fc: W " << w.dims().to_string() << " must be 2-D and in_num_col_dims " << k
                         << " in [1, rank) of Input " << x.dims().to_string());
    int64_t rows = 1, cols = 1;
    for (int32_t i = 0; i < x.ndim(); ++i) (i < k ? rows : cols) *= x.dim(i);
    OAR_ENFORCE(cols == w.dim(0), ErrorCode::kInvalidArgument,
                "fc: Input " << x.dims().to_string() << " flattened at " << k << " has " << cols
                             << " columns but W is " << w.dims().to_string());
    Tensor out = ops::matmul(x.reshape(Dims{rows, cols}), w);
    if (c.has_in("Bias")) out = ops::add(out, c.in("Bias").reshape(Dims{1, -1}));
    out = act(out);
    std::vector<int64_t> od(x.dims().begin(), x.dims().begin() + k);
    od.push_back(w.dim(1));
    c.set_out("Out", out.reshape(Dims(od)));
  };
}

// fused_elemwise_add_activation with functor_list [act, "elementwise_add"]: Out = act(X + Y), or
// ["elementwise_add", act]: Out = X + act(Y); act is relu, sigmoid, tanh, gelu or scale (attr scale).
// IntermediateOut (X + Y, resp. act(Y)) is written only when save_intermediate_out is true.
OpKernelFn tr_fused_add_act(const OpDesc& op) {
  const Attribute* fl = op.find_attr("functor_list");
  const auto* list = fl ? std::get_if<std::vector<std::string>>(fl) : nullptr;
  OAR_ENFORCE(list != nullptr && list->size() == 2 &&
                  ((*list)[0] == "elementwise_add") != ((*list)[1] == "elementwise_add"),
              ErrorCode::kUnimplemented,
              op.type << ": functor_list must be [act, elementwise_add] or [elementwise_add, act]");
  bool add_first = (*list)[1] == "elementwise_add";  // act(X + Y)
  std::string an = add_first ? (*list)[0] : (*list)[1];
  double scale = attr_float(op, "scale", 0.0);
  ActFn act = an == "scale" ? nullptr : find_act(op, an, false);
  int64_t axis = attr_int(op, "axis", -1);
  bool save = attr_bool(op, "save_intermediate_out", false);
  const OpDesc* o = &op;
  return [=](OpRunContext& c) {
    Tensor x = c.in("X"), y = c.in("Y");
    auto f = [&](const Tensor& t) { return act ? act(t) : ops::multiply(t, scalar_like(scale, t)); };
    if (!add_first) y = f(y);
    Tensor inter = y;
    if (axis != -1 && x.ndim() != y.ndim()) {
      if (y.ndim() < x.ndim())
        y = align_for_axis(*o, y, x.ndim(), axis);
      else
        x = align_for_axis(*o, x, y.ndim(), axis);
    }
    Tensor sum = ops::add(x, y);
    if (add_first) inter = sum;
    c.set_out("Out", add_first ? f(sum) : sum);
    if (save) c.set_out("IntermediateOut", inter);
  };
}

// ---- conv / pool ------------------------------------------------------------------------------------

// Paddle paddings: [ph, pw] (symmetric) or [top, bottom, left, right]; oar wants before/after per dim.
std::vector<int64_t> expand_pads(const OpDesc& op, std::vector<int64_t> p, size_t nd) {
  if (p.size() == nd) {
    std::vector<int64_t> out;
    for (int64_t v : p) out.insert(out.end(), {v, v});
    return out;
  }
  OAR_ENFORCE(p.size() == 2 * nd, ErrorCode::kInvalidArgument,
              op.type << ": paddings must have " << nd << " or " << 2 * nd << " values, got " << p.size());
  return p;
}

// SAME / VALID padding (padding_algorithm), computed from the input size at run time.
std::vector<int64_t> algo_pads(const std::string& algo, const std::vector<int64_t>& pads, const Dims& x,
                               const std::vector<int64_t>& k, const std::vector<int64_t>& s) {
  if (algo == "VALID") return std::vector<int64_t>(pads.size(), 0);
  if (algo != "SAME") return pads;
  std::vector<int64_t> out;
  for (size_t i = 0; i < k.size(); ++i) {
    int64_t in = x[static_cast<int32_t>(2 + i)];
    int64_t o = (in + s[i] - 1) / s[i];
    int64_t total = std::max<int64_t>((o - 1) * s[i] + k[i] - in, 0);
    out.insert(out.end(), {total / 2, total - total / 2});
  }
  return out;
}

// conv2d / depthwise_conv2d (ND = 2) and conv3d (ND = 3), NCHW / NCDHW.
template <size_t ND>
OpKernelFn tr_conv(const OpDesc& op) {
  std::string layout = attr_str(op, "data_format", ND == 2 ? "NCHW" : "NCDHW");
  OAR_ENFORCE(layout == (ND == 2 ? "NCHW" : "NCDHW") || layout == "AnyLayout", ErrorCode::kUnimplemented,
              op.type << ": data_format '" << layout << "' is not supported (only "
                      << (ND == 2 ? "NCHW" : "NCDHW") << ")");
  std::vector<int64_t> strides = attr_ints(op, "strides", std::vector<int64_t>(ND, 1));
  std::vector<int64_t> dil = attr_ints(op, "dilations", std::vector<int64_t>(ND, 1));
  std::vector<int64_t> pads = expand_pads(op, attr_ints(op, "paddings", std::vector<int64_t>(ND, 0)), ND);
  OAR_ENFORCE(strides.size() == ND && dil.size() == ND, ErrorCode::kInvalidArgument,
              op.type << ": strides and dilations must have " << ND << " values");
  int64_t groups = attr_int(op, "groups", 1);
  std::string algo = attr_str(op, "padding_algorithm", "EXPLICIT");
  OAR_ENFORCE(algo == "EXPLICIT" || algo == "SAME" || algo == "VALID", ErrorCode::kInvalidArgument,
              op.type << ": padding_algorithm '" << algo << "' is not EXPLICIT, SAME or VALID");
  return [=](OpRunContext& c) {
    const Tensor& x = c.in("Input");
    const Tensor& w = c.in("Filter");
    OAR_ENFORCE(w.ndim() == static_cast<int32_t>(ND + 2), ErrorCode::kInvalidArgument,
                c.op->type << ": Filter must have rank " << ND + 2 << ", got " << w.dims().to_string());
    std::vector<int64_t> k, eff_k;
    for (size_t i = 0; i < ND; ++i) {
      k.push_back(w.dim(static_cast<int32_t>(2 + i)));
      eff_k.push_back(dil[i] * (k[i] - 1) + 1);
    }
    std::vector<int64_t> p = algo_pads(algo, pads, x.dims(), eff_k, strides);
    Attrs a{{"strides", strides}, {"paddings", p}, {"dilations", dil}, {"groups", groups}};
    Tensor out = call_op("conv", {x, w}, a)[0];
    if (c.has_in("Bias")) {
      std::vector<int64_t> bd(ND + 2, 1);
      bd[1] = -1;
      out = ops::add(out, c.in("Bias").reshape(Dims(bd)));
    }
    c.set_out("Output", out);
  };
}
OpKernelFn tr_conv2d(const OpDesc& op) { return tr_conv<2>(op); }
OpKernelFn tr_conv3d(const OpDesc& op) { return tr_conv<3>(op); }

// pool2d (ND = 2, NCHW) and pool3d (ND = 3, NCDHW).
template <size_t ND>
OpKernelFn tr_pool(const OpDesc& op) {
  std::string layout = attr_str(op, "data_format", ND == 2 ? "NCHW" : "NCDHW");
  OAR_ENFORCE(layout == (ND == 2 ? "NCHW" : "NCDHW") || layout == "AnyLayout", ErrorCode::kUnimplemented,
              op.type << ": data_format '" << layout << "' is not supported");
  std::string type = attr_str(op, "pooling_type", "max");
  OAR_ENFORCE(type == "max" || type == "avg", ErrorCode::kInvalidArgument,
              op.type << ": pooling_type '" << type << "' is not max or avg");
  std::vector<int64_t> ksize = attr_ints(op, "ksize");
  OAR_ENFORCE(ksize.size() == ND, ErrorCode::kInvalidArgument,
              op.type << ": ksize must have " << ND << " values, got " << ksize.size());
  std::vector<int64_t> strides = attr_ints(op, "strides", std::vector<int64_t>(ND, 1));
  std::vector<int64_t> pads = expand_pads(op, attr_ints(op, "paddings", std::vector<int64_t>(ND, 0)), ND);
  bool global = attr_bool(op, "global_pooling", false), adaptive = attr_bool(op, "adaptive", false);
  bool ceil = attr_bool(op, "ceil_mode", false), exclusive = attr_bool(op, "exclusive", true);
  std::string algo = attr_str(op, "padding_algorithm", "EXPLICIT");
  return [=](OpRunContext& c) {
    const Tensor& x = c.in("X");
    std::vector<int64_t> k = ksize, p = pads, s = strides;
    if (global) {
      // One window over the whole plane; oar's adaptive pooling to 1x1 is exactly that.
      k.assign(ND, 1);
      p.assign(2 * ND, 0);
    } else if (!adaptive) {
      p = algo_pads(algo, pads, x.dims(), k, s);
    }
    Attrs a{{"kernel_size", k},
            {"strides", s},
            {"paddings", p},
            {"ceil_mode", int64_t{ceil}},
            {"adaptive", int64_t{adaptive || global}}};
    if (type == "max") {
      c.set_out("Out", call_op("max_pool", {x}, a)[0]);
    } else {
      a.set("exclusive", int64_t{exclusive});
      c.set_out("Out", call_op("avg_pool", {x}, a)[0]);
    }
  };
}
OpKernelFn tr_pool2d(const OpDesc& op) { return tr_pool<2>(op); }
OpKernelFn tr_pool3d(const OpDesc& op) { return tr_pool<3>(op); }

// max_pool2d_with_index (what paddle.nn.functional.adaptive_max_pool2d / max_pool2d(return_mask) write):
// the pooled values; Mask (Paddle's flat index in the input plane) is not produced.
OpKernelFn tr_max_pool2d_with_index(const OpDesc& op) {
  std::vector<int64_t> ksize = attr_ints(op, "ksize");
  OAR_ENFORCE(ksize.size() == 2, ErrorCode::kInvalidArgument,
              "max_pool2d_with_index: ksize must have 2 values, got " << ksize.size());
  std::vector<int64_t> strides = attr_ints(op, "strides", {1, 1});
  std::vector<int64_t> pads = expand_pads(op, attr_ints(op, "paddings", {0, 0}), 2);
  bool global = attr_bool(op, "global_pooling", false), adaptive = attr_bool(op, "adaptive", false);
  bool ceil = attr_bool(op, "ceil_mode", false);
  return [=](OpRunContext& c) {
    std::vector<int64_t> k = ksize, p = pads;
    if (global) {
      k = {1, 1};
      p.assign(4, 0);
    }
    Attrs a{{"kernel_size", k},
            {"strides", strides},
            {"paddings", p},
            {"ceil_mode", int64_t{ceil}},
            {"adaptive", int64_t{adaptive || global}}};
    c.set_out("Out", call_op("max_pool", {c.in("X")}, a)[0]);
  };
}

// ---- normalisation ----------------------------------------------------------------------------------

// batch_norm onto oar's op: data_layout NCHW (channel axis 1) or NHWC (the last). Inference (is_test
// without trainable_statistics, or use_global_stats) normalises with Mean / Variance; training with the
// batch's statistics, MeanOut / VarianceOut (Paddle names them as Mean / Variance) getting the moved
// running statistics, and SavedMean / SavedVariance (the inverse std, as Paddle's) the batch's.
OpKernelFn tr_batch_norm(const OpDesc& op) {
  const std::string layout = attr_str(op, "data_layout", "NCHW");
  OAR_ENFORCE(layout == "NCHW" || layout == "NHWC" || layout == "AnyLayout", ErrorCode::kUnimplemented,
              "batch_norm: data_layout '" << layout << "' is not supported (NCHW or NHWC)");
  const bool global = (attr_bool(op, "is_test", false) && !attr_bool(op, "trainable_statistics", false)) ||
                      attr_bool(op, "use_global_stats", false);
  const double eps = attr_float(op, "epsilon", 1e-5), mom = attr_float(op, "momentum", 0.9);
  const bool last = layout == "NHWC";
  return [global, eps, mom, last](OpRunContext& c) {
    const Tensor& x = c.in("X");
    const int64_t axis = last ? x.ndim() - 1 : 1;
    const int64_t ch = x.ndim() > axis ? x.dim(static_cast<int32_t>(axis)) : 0;
    const Tensor mean = c.in("Mean");
    auto param = [&](const char* slot, double fill) {
      return c.has_in(slot) ? c.in(slot) : ops::full(Dims{ch}, fill, mean.dtype(), mean.place());
    };
    std::vector<Tensor> r =
        call_op("batch_norm", {x, param("Scale", 1), param("Bias", 0), mean, c.in("Variance")},
                Attrs{{"channel_axis", axis},
                      {"epsilon", eps},
                      {"momentum", mom},
                      {"use_global_stats", int64_t{global ? 1 : 0}}});
    c.set_out("Y", r[0]);
    if (global) {  // the statistics stay the same tensors; SavedMean / SavedVariance are not produced
      c.set_out("MeanOut", mean);
      c.set_out("VarianceOut", c.in("Variance"));
      return;
    }
    c.set_out("MeanOut", r[1]);
    c.set_out("VarianceOut", r[2]);
    c.set_out("SavedMean", r[3]);
    c.set_out("SavedVariance", r[4]);
  };
}

OpKernelFn tr_layer_norm(const OpDesc& op) {
  int64_t begin = attr_int(op, "begin_norm_axis", 1);
  double eps = attr_float(op, "epsilon", 1e-5);
  return [begin, eps](OpRunContext& c) {
    const Tensor& x = c.in("X");
    int64_t b = begin < 0 ? begin + x.ndim() : begin;
    OAR_ENFORCE(b >= 0 && b < x.ndim(), ErrorCode::kInvalidArgument,
                "layer_norm: begin_norm_axis " << begin << " out of range for X of rank " << x.ndim());
    int64_t n = 1;
    for (int64_t i = b; i < x.ndim(); ++i) n *= x.dim(static_cast<int32_t>(i));
    Tensor w = c.has_in("Scale") ? c.in("Scale") : ops::ones(Dims{n}, x.dtype(), x.place());
    Tensor bias = c.has_in("Bias") ? c.in("Bias") : ops::zeros(Dims{n}, x.dtype(), x.place());
    std::vector<Tensor> r =
        call_op("layer_norm", {x, w, bias}, Attrs{{"begin_norm_axis", b}, {"epsilon", eps}});
    c.set_out("Y", r[0]);
  };
}

// ---- shape ops --------------------------------------------------------------------------------------

// reshape2: 0 copies the input's extent, -1 is inferred. XShape (shape bookkeeping for the grad op) is
// not produced.
OpKernelFn tr_reshape2(const OpDesc& op) {
  require_unbound(op, "ShapeTensor");
  std::vector<int64_t> shape = attr_ints(op, "shape");
  return [shape](OpRunContext& c) {
    const Tensor& x = c.in("X");
    std::vector<int64_t> s = shape;
    if (c.has_in("Shape")) {
      Tensor st = ops::cast(c.in("Shape"), DType::kInt64).cpu();
      s = st.to_vector<int64_t>();
    }
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == 0) {
        OAR_ENFORCE(static_cast<int32_t>(i) < x.ndim(), ErrorCode::kInvalidArgument,
                    "reshape2: shape " << Dims(s).to_string() << " copies dim " << i << " of X "
                                       << x.dims().to_string() << " which has no such dim");
        s[i] = x.dim(static_cast<int32_t>(i));
      }
    c.set_out("Out", x.reshape(Dims(s)));
  };
}

OpKernelFn tr_flatten_range(const OpDesc& op) {
  int64_t start = attr_int(op, "start_axis", 1), stop = attr_int(op, "stop_axis", 1);
  return [start, stop](OpRunContext& c) {
    const Tensor& x = c.in("X");
    int64_t r = std::max<int64_t>(x.ndim(), 1);
    int64_t a = start < 0 ? start + r : start, b = stop < 0 ? stop + r : stop;
    OAR_ENFORCE(a >= 0 && a <= b && b < r, ErrorCode::kInvalidArgument,
                "flatten_contiguous_range: start_axis " << start << " / stop_axis " << stop
                                                        << " invalid for rank " << x.ndim());
    std::vector<int64_t> s;
    for (int64_t i = 0; i < x.ndim(); ++i) {
      if (i <= a || i > b)
        s.push_back(x.dim(static_cast<int32_t>(i)));
      else
        s.back() *= x.dim(static_cast<int32_t>(i));
    }
    c.set_out("Out", x.reshape(Dims(s)));
  };
}

OpKernelFn tr_transpose2(const OpDesc& op) {
  std::vector<int64_t> perm = attr_ints(op, "axis");
  return [perm](OpRunContext& c) { c.set_out("Out", c.in("X").transpose(perm)); };
}

OpKernelFn tr_concat(const OpDesc& op) {
  require_unbound(op, "AxisTensor");
  int64_t axis = attr_int(op, "axis", 0);
  return [axis](OpRunContext& c) { c.set_out("Out", ops::concat(c.in_list("X"), axis)); };
}

OpKernelFn tr_assign(const OpDesc&) {
  return [](OpRunContext& c) { c.set_out("Out", c.in("X")); };
}

// An integer tensor's values read to the host (shapes given as tensors).
std::vector<int64_t> host_ints(const Tensor& t) {
  return ops::cast(t, DType::kInt64).cpu().to_vector<int64_t>();
}

// fill_constant: the shape is the attribute, or at run time ShapeTensor (1-D) or ShapeTensorList (one
// one-element tensor per dim; what Paddle writes for shapes holding the batch size, e.g. nn.LSTM's zero
// initial states).
OpKernelFn tr_fill_constant(const OpDesc& op) {
  require_unbound(op, "ValueTensor");
  bool shape_tensor = !op.input("ShapeTensor").empty(), shape_list = !op.input("ShapeTensorList").empty();
  std::vector<int64_t> shape = attr_ints(op, "shape");
  int64_t code = attr_int(op, "dtype", 5);
  std::optional<DType> dt = paddle_code_to_dtype(static_cast<int32_t>(code));
  OAR_ENFORCE(dt.has_value(), ErrorCode::kInvalidArgument,
              "fill_constant: dtype code " << code << " is not supported");
  double value = attr_float(op, "value", 0.0);
  std::string sv = attr_str(op, "str_value", "");
  if (!sv.empty()) value = std::stod(sv);  // Paddle writes big or exact values as a string
  DType d = *dt;
  return [shape, d, value, shape_tensor, shape_list](OpRunContext& c) {
    std::vector<int64_t> s = shape;
    if (shape_tensor) {
      s = host_ints(c.in("ShapeTensor"));
    } else if (shape_list) {
      s.clear();
      for (const Tensor& t : c.in_list("ShapeTensorList")) {
        OAR_ENFORCE(
            t.numel() == 1, ErrorCode::kInvalidArgument,
            "fill_constant: ShapeTensorList entries must hold one value, got shape " << t.dims().to_string());
        s.push_back(host_ints(t)[0]);
      }
    }
    c.set_out("Out", ops::full(Dims(s), value, d, c.place));
  };
}

// shape: Input's dims as an int32 tensor (Paddle's dtype for it).
OpKernelFn tr_shape(const OpDesc&) {
  return [](OpRunContext& c) {
    std::vector<int32_t> d;
    for (int64_t v : c.in("Input").dims().to_vector()) d.push_back(static_cast<int32_t>(v));
    c.set_out("Out", Tensor::from_vector(d, Dims{static_cast<int64_t>(d.size())}, DType::kInt32, c.place));
  };
}

// ---- rnn: Paddle's fused recurrent op (what paddle.nn.LSTM / GRU / SimpleRNN save) --------------------
// Input [T, B, I] (time major; the layers transpose batch-major input around it). PreState: LSTM [h0, c0],
// the others [h0], each [L * D, B, H], row l * D + d for layer l and direction d (1 = reverse). WeightList
// (Paddle's flattened cuDNN-style layout): first W_ih [G * H, in], W_hh [G * H, H] for every (l, d) in that
// order, then b_ih, b_hh [G * H] in the same order. Gate blocks (rows of W): LSTM i, f, g, o; GRU r, z, c
// with the reset gate applied to (W_hc h + b_hc) as Paddle's GRUCell does. Out [T, B, D * H] (directions
// concatenated, also the next layer's input); State like PreState. SequenceLength [B] (optional): steps at
// or past a sequence's length keep its state and output zeros. Dropout between layers is a training
// feature; the executor runs inference, so it is not applied.
enum class RnnMode { kLstm, kGru, kTanh, kRelu };

OpKernelFn tr_rnn(const OpDesc& op) {
  std::string m = attr_str(op, "mode", "LSTM");
  RnnMode mode;
  if (m == "LSTM")
    mode = RnnMode::kLstm;
  else if (m == "GRU")
    mode = RnnMode::kGru;
  else if (m == "RNN_TANH")
    mode = RnnMode::kTanh;
  else if (m == "RNN_RELU")
    mode = RnnMode::kRelu;
  else
    OAR_THROW(ErrorCode::kInvalidArgument,
              "rnn: mode '" << m << "' is not one of LSTM, GRU, RNN_TANH, RNN_RELU");
  bool has_lengths = !op.input("SequenceLength").empty();
  int64_t hs = attr_int(op, "hidden_size", 0), layers = attr_int(op, "num_layers", 1);
  int64_t dirs = attr_bool(op, "is_bidirec", false) ? 2 : 1;
  OAR_ENFORCE(hs > 0 && layers > 0, ErrorCode::kInvalidArgument,
              "rnn: hidden_size " << hs << " and num_layers " << layers << " must be positive");
  int64_t gates = mode == RnnMode::kLstm ? 4 : mode == RnnMode::kGru ? 3 : 1;
  size_t cells = static_cast<size_t>(layers * dirs);
  OAR_ENFORCE(op.input("WeightList").size() == 4 * cells, ErrorCode::kUnimplemented,
              "rnn: WeightList has " << op.input("WeightList").size() << " tensors; expected " << 4 * cells
                                     << " (W_ih, W_hh, b_ih, b_hh per layer and direction; rnns without "
                                        "biases are not supported)");
  OAR_ENFORCE(
      op.input("PreState").size() == (mode == RnnMode::kLstm ? 2u : 1u), ErrorCode::kInvalidArgument,
      "rnn: PreState must hold " << (mode == RnnMode::kLstm ? "h0 and c0" : "h0") << " for mode " << m);
  return [=](OpRunContext& c) {
    const Tensor& x = c.in("Input");
    std::vector<Tensor> w = c.in_list("WeightList");
    Tensor h0 = c.in("PreState", 0), c0 = mode == RnnMode::kLstm ? c.in("PreState", 1) : Tensor();
    OAR_ENFORCE(x.ndim() == 3, ErrorCode::kInvalidArgument,
                "rnn: Input must be [time, batch, features], got " << x.dims().to_string());
    int64_t steps = x.dims()[0], batch = x.dims()[1];
    Dims state_dims{layers * dirs, batch, hs};
    OAR_ENFORCE(h0.dims() == state_dims && (mode != RnnMode::kLstm || c0.dims() == state_dims),
                ErrorCode::kInvalidArgument,
                "rnn: PreState must be " << state_dims.to_string() << ", got " << h0.dims().to_string());
    // The native fused op where it applies (float32/float64, at most 7 (layer, direction) pairs); the
    // composition below otherwise.
    if (cells <= 7 && (x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat64)) {
      std::vector<Tensor> ins{x, h0, mode == RnnMode::kLstm ? c0 : h0};
      ins.insert(ins.end(), w.begin(), w.end());
      if (has_lengths) {
        const Tensor& len = c.in("SequenceLength");
        OAR_ENFORCE(
            len.dims() == Dims({batch}), ErrorCode::kInvalidArgument,
            "rnn: SequenceLength must be [batch] = [" << batch << "], got " << len.dims().to_string());
        ins.push_back(len);
      }
      Attrs a{{"mode", m},
              {"hidden_size", hs},
              {"num_layers", layers},
              {"is_bidirec", int64_t{dirs == 2 ? 1 : 0}},
              {"dropout_prob", 0.0},
              {"is_test", int64_t{1}}};
      std::vector<Tensor> r = call_op("rnn", ins, a);
      c.set_out("Out", r[0]);
      c.set_out("State", r[1], 0);
      if (mode == RnnMode::kLstm) c.set_out("State", r[2], 1);
      return;
    }
    Dims hd{batch, hs};
    // SequenceLength [B]: step t of sequence b is valid when t < length[b]. Invalid steps keep the state
    // and output zeros, so the reverse direction starts at each sequence's own last step (Paddle's rule).
    std::vector<Tensor> valid;  // per step, bool [B, 1]
    if (has_lengths) {
      const Tensor& len = c.in("SequenceLength");
      OAR_ENFORCE(len.dims() == Dims({batch}), ErrorCode::kInvalidArgument,
                  "rnn: SequenceLength must be [batch] = [" << batch << "], got " << len.dims().to_string());
      Tensor l64 = ops::cast(len, DType::kInt64).reshape(Dims{batch, 1});
      for (int64_t t = 0; t < steps; ++t)
        valid.push_back(
            ops::less_than(ops::full(Dims{}, static_cast<double>(t), DType::kInt64, c.place), l64));
    }
    Tensor zero = ops::zeros(hd, x.dtype(), c.place);
    std::vector<Tensor> h_last(cells), c_last(cells);
    Tensor in = x;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<Tensor> dir_out;
      for (int64_t d = 0; d < dirs; ++d) {
        size_t k = static_cast<size_t>(l * dirs + d);
        const Tensor &w_ih = w[2 * k], &w_hh = w[2 * k + 1], &b_ih = w[2 * cells + 2 * k],
                     &b_hh = w[2 * cells + 2 * k + 1];
        OAR_ENFORCE(w_ih.ndim() == 2 && w_ih.dims()[0] == gates * hs && w_ih.dims()[1] == in.dims()[2] &&
                        w_hh.dims() == Dims({gates * hs, hs}),
                    ErrorCode::kInvalidArgument,
                    "rnn: layer " << l << " direction " << d << ": weights " << w_ih.dims().to_string()
                                  << ", " << w_hh.dims().to_string() << " do not fit input "
                                  << in.dims().to_string() << " with " << gates << " gates of hidden_size "
                                  << hs);
        // The input projection of every step at once: [T, B, G * H].
        Tensor xg = ops::add(ops::matmul(in, w_ih, false, true), b_ih);
        Tensor h = h0.slice(0, k, k + 1).reshape(hd), cell;
        if (mode == RnnMode::kLstm) cell = c0.slice(0, k, k + 1).reshape(hd);
        std::vector<Tensor> outs(static_cast<size_t>(steps));
        for (int64_t s = 0; s < steps; ++s) {
          int64_t t = d == 0 ? s : steps - 1 - s;
          Tensor xt = xg.slice(0, t, t + 1).reshape(Dims{batch, gates * hs});
          Tensor hg = ops::add(ops::matmul(h, w_hh, false, true), b_hh);
          Tensor h_prev = h, c_prev = cell;
          auto gate = [hs](const Tensor& g, int64_t i) { return g.slice(1, i * hs, (i + 1) * hs); };
          if (mode == RnnMode::kLstm) {
            Tensor g = ops::add(xt, hg);
            Tensor i = ops::sigmoid(gate(g, 0)), f = ops::sigmoid(gate(g, 1)), cand = ops::tanh(gate(g, 2)),
                   o = ops::sigmoid(gate(g, 3));
            cell = ops::add(ops::multiply(f, cell), ops::multiply(i, cand));
            h = ops::multiply(o, ops::tanh(cell));
          } else if (mode == RnnMode::kGru) {
            Tensor r = ops::sigmoid(ops::add(gate(xt, 0), gate(hg, 0)));
            Tensor z = ops::sigmoid(ops::add(gate(xt, 1), gate(hg, 1)));
            Tensor cand = ops::tanh(ops::add(gate(xt, 2), ops::multiply(r, gate(hg, 2))));
            h = ops::add(ops::multiply(ops::subtract(h, cand), z), cand);  // z * h + (1 - z) * cand
          } else {
            Tensor a = ops::add(xt, hg);
            h = mode == RnnMode::kTanh ? ops::tanh(a) : ops::relu(a);
          }
          Tensor out = h;
          if (has_lengths) {
            const Tensor& v = valid[static_cast<size_t>(t)];
            h = ops::where(v, h, h_prev);
            if (mode == RnnMode::kLstm) cell = ops::where(v, cell, c_prev);
            out = ops::where(v, out, zero);
          }
          outs[static_cast<size_t>(t)] = out.reshape(Dims{1, batch, hs});
        }
        dir_out.push_back(ops::concat(outs, 0));
        h_last[k] = h.reshape(Dims{1, batch, hs});
        if (mode == RnnMode::kLstm) c_last[k] = cell.reshape(Dims{1, batch, hs});
      }
      in = dirs == 1 ? dir_out[0] : ops::concat(dir_out, 2);
    }
    c.set_out("Out", in);
    c.set_out("State", ops::concat(h_last, 0), 0);
    if (mode == RnnMode::kLstm) c.set_out("State", ops::concat(c_last, 0), 1);
    // Reserve and DropoutState are training-only buffers: nothing reads them at inference.
  };
}

// ---- ops export_paddle_dialect emits (paddle_export.cc) ------------------------------------------------

DType paddle_dtype_attr(const OpDesc& op, const char* name, int64_t def) {
  int64_t code = attr_int(op, name, def);
  std::optional<DType> dt = paddle_code_to_dtype(static_cast<int32_t>(code));
  OAR_ENFORCE(dt.has_value(), ErrorCode::kInvalidArgument,
              op.type << ": " << name << " code " << code << " is not a dtype oar supports");
  return *dt;
}

OpKernelFn tr_cast(const OpDesc& op) {
  DType to = paddle_dtype_attr(op, "out_dtype", 5);
  return [to](OpRunContext& c) { c.set_out("Out", ops::cast(c.in("X"), to)); };
}

OpKernelFn tr_clip(const OpDesc& op) {
  require_unbound(op, "Min");
  require_unbound(op, "Max");
  double lo = attr_float(op, "min", 0.0), hi = attr_float(op, "max", 0.0);
  return [lo, hi](OpRunContext& c) {
    c.set_out("Out", call_op("clip", {c.in("X")}, Attrs{{"min", lo}, {"max", hi}})[0]);
  };
}

OpKernelFn tr_eye(const OpDesc& op) {
  int64_t rows = attr_int(op, "num_rows", 0), cols = attr_int(op, "num_columns", -1);
  if (cols < 0) cols = rows;
  DType d = paddle_dtype_attr(op, "dtype", 5);
  return [rows, cols, d](OpRunContext& c) {
    Attrs a{{"num_rows", rows}, {"num_columns", cols}, {"dtype", static_cast<int64_t>(d)}};
    c.set_out("Out", call_op("eye", {}, a, c.place)[0]);
  };
}

// The reduce form of the Paddle op map (reduce_* -> oar op `def`): dim (negative counts from the end),
// keep_dim, reduce_all; reduce_sum's out_dtype.
OpKernelFn tr_reduce(const OpDesc& op, const OpDef* def) {
  require_unbound(op, "AxisTensor");
  require_unbound(op, "AxisTensorList");
  std::vector<int64_t> dim = attr_ints(op, "dim", {0});
  bool keep = attr_bool(op, "keep_dim", false), all = attr_bool(op, "reduce_all", false);
  int64_t out_code = attr_int(op, "out_dtype", -1);
  std::optional<DType> out_dt;
  if (out_code != -1) out_dt = paddle_dtype_attr(op, "out_dtype", -1);
  std::string name = def->name;
  return [=](OpRunContext& c) {
    const Tensor& x = c.in("X");
    Attrs a{{"axis", all ? std::vector<int64_t>{} : dim}, {"keepdim", int64_t{keep}}};
    Tensor r = call_op(*def, {x}, a)[0];
    // oar's sum widens small integers to int64; Paddle's keeps the input dtype unless out_dtype is set.
    DType want = out_dt ? *out_dt : (name == "sum" ? x.dtype() : r.dtype());
    c.set_out("Out", r.dtype() == want ? r : ops::cast(r, want));
  };
}

OpKernelFn tr_arg(const OpDesc& op) {
  int64_t axis = attr_int(op, "axis", 0);
  bool keep = attr_bool(op, "keepdims", false), flatten = attr_bool(op, "flatten", false);
  // dtype -1 (the OpProto default) means int64, as in Paddle.
  DType d = attr_int(op, "dtype", -1) == -1 ? DType::kInt64 : paddle_dtype_attr(op, "dtype", 3);
  bool is_max = op.type == "arg_max";
  return [=](OpRunContext& c) {
    Tensor r =
        is_max ? ops::argmax(c.in("X"), axis, keep, flatten) : ops::argmin(c.in("X"), axis, keep, flatten);
    c.set_out("Out", r.dtype() == d ? r : ops::cast(r, d));
  };
}

OpKernelFn tr_cumsum(const OpDesc& op) {
  OAR_ENFORCE(!attr_bool(op, "exclusive", false), ErrorCode::kUnimplemented,
              "cumsum: exclusive = true is not supported");
  int64_t axis = attr_int(op, "axis", -1);
  bool flatten = attr_bool(op, "flatten", false), reverse = attr_bool(op, "reverse", false);
  return [=](OpRunContext& c) {
    Attrs a{{"axis", axis}, {"flatten", int64_t{flatten}}, {"reverse", int64_t{reverse}}};
    c.set_out("Out", call_op("cumsum", {c.in("X")}, a)[0]);
  };
}

// fft_c2c / fft_r2c / fft_c2r: oar has Paddle's ops with Paddle's attributes (decision 85).
OpKernelFn tr_fft(const OpDesc& op) {
  Attrs a{{"axes", attr_ints(op, "axes")},
          {"normalization", attr_str(op, "normalization", "backward")},
          {"forward", int64_t{attr_bool(op, "forward", op.type != "fft_c2r")}}};
  if (op.type == "fft_r2c") a.set("onesided", int64_t{attr_bool(op, "onesided", true)});
  if (op.type == "fft_c2r") a.set("last_dim_size", attr_int(op, "last_dim_size", 0));
  const OpDef& def = OpRegistry::get().at(op.type);
  return [a, &def](OpRunContext& c) { c.set_out("Out", call_op(def, {c.in("X")}, a)[0]); };
}

OpKernelFn tr_tril_triu(const OpDesc& op) {
  int64_t diag = attr_int(op, "diagonal", 0);
  bool lower = attr_bool(op, "lower", true);
  return [diag, lower](OpRunContext& c) {
    c.set_out("Out", lower ? ops::tril(c.in("X"), diag) : ops::triu(c.in("X"), diag));
  };
}

OpKernelFn tr_top_k_v2(const OpDesc& op) {
  require_unbound(op, "K");
  OAR_ENFORCE(attr_bool(op, "sorted", true), ErrorCode::kUnimplemented,
              "top_k_v2: sorted = false is not supported");
  int64_t k = attr_int(op, "k", 1), axis = attr_int(op, "axis", -1);
  bool largest = attr_bool(op, "largest", true);
  return [=](OpRunContext& c) {
    auto [v, i] = ops::topk(c.in("X"), k, axis, largest);
    c.set_out("Out", v);
    c.set_out("Indices", i);
  };
}

OpKernelFn tr_argsort(const OpDesc& op) {
  int64_t axis = attr_int(op, "axis", -1);
  bool desc = attr_bool(op, "descending", false);
  return [axis, desc](OpRunContext& c) {  // oar's sort is stable, which satisfies stable = false as well
    auto [v, i] = ops::sort(c.in("X"), axis, desc);
    c.set_out("Out", v);
    c.set_out("Indices", i);
  };
}

OpKernelFn tr_pad(const OpDesc& op) {
  std::vector<int64_t> pads = attr_ints(op, "paddings");
  double value = attr_float(op, "pad_value", 0.0);
  return [pads, value](OpRunContext& c) { c.set_out("Out", ops::pad(c.in("X"), pads, 0, value)); };
}

// squeeze2: axes empty squeezes every size-1 dim; listed axes of another size stay.
OpKernelFn tr_squeeze2(const OpDesc& op) {
  std::vector<int64_t> axes = attr_ints(op, "axes");
  return [axes](OpRunContext& c) { c.set_out("Out", c.in("X").squeeze(axes)); };
}

// unsqueeze2: the axes are inserted one after the other, each counted in the rank reached so far.
OpKernelFn tr_unsqueeze2(const OpDesc& op) {
  require_unbound(op, "AxesTensor");
  require_unbound(op, "AxesTensorList");
  std::vector<int64_t> axes = attr_ints(op, "axes");
  return [axes](OpRunContext& c) {
    Tensor t = c.in("X");
    for (int64_t a : axes) t = t.unsqueeze(a < 0 ? a + t.ndim() + 1 : a);
    c.set_out("Out", t);
  };
}

// slice / strided_slice with positive strides; decrease_axis drops the (size-1) sliced axes after.
OpKernelFn tr_slice(const OpDesc& op) {
  for (const char* s : {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList", "StridesTensor",
                        "StridesTensorList"})
    require_unbound(op, s);
  std::vector<int64_t> axes = attr_ints(op, "axes"), starts = attr_ints(op, "starts"),
                       ends = attr_ints(op, "ends");
  std::vector<int64_t> steps = attr_ints(op, "strides", std::vector<int64_t>(axes.size(), 1));
  std::vector<int64_t> decrease = attr_ints(op, "decrease_axis");
  OAR_ENFORCE(starts.size() == axes.size() && ends.size() == axes.size() && steps.size() == axes.size(),
              ErrorCode::kInvalidArgument, op.type << ": axes, starts, ends (and strides) differ in length");
  for (int64_t s : steps)
    OAR_ENFORCE(s > 0, ErrorCode::kUnimplemented,
                op.type << ": stride " << s << " is not supported (only > 0)");
  return [=](OpRunContext& c) {
    Tensor t = c.in("Input");
    for (size_t i = 0; i < axes.size(); ++i) t = t.slice(axes[i], starts[i], ends[i], steps[i]);
    if (!decrease.empty()) t = t.squeeze(decrease);
    c.set_out("Out", t);
  };
}

// expand_v2: shape aligned to the trailing dims; -1 keeps the input's extent.
OpKernelFn tr_expand_v2(const OpDesc& op) {
  require_unbound(op, "Shape");
  require_unbound(op, "expand_shapes_tensor");
  std::vector<int64_t> shape = attr_ints(op, "shape");
  return [shape](OpRunContext& c) { c.set_out("Out", ops::copy(c.in("X").expand(Dims(shape)))); };
}

// expand_as_v2: X broadcast to Y's shape (at run time), or to target_shape when Y is not bound.
OpKernelFn tr_expand_as_v2(const OpDesc& op) {
  std::vector<int64_t> target = attr_ints(op, "target_shape");
  return [target](OpRunContext& c) {
    Dims to = c.has_in("Y") ? c.in("Y").dims() : Dims(target);
    c.set_out("Out", ops::copy(c.in("X").expand(to)));
  };
}

// A one-element tensor input read to the host (range / linspace scalars).
double host_scalar(const OpRunContext& c, const char* slot) {
  const Tensor& t = c.in(slot);
  OAR_ENFORCE(t.numel() == 1, ErrorCode::kInvalidArgument,
              c.op->type << ": " << slot << " must hold one value, has shape " << t.dims().to_string());
  return ops::cast(t, DType::kFloat64).cpu().to_vector<double>()[0];
}

OpKernelFn tr_range(const OpDesc&) {
  return [](OpRunContext& c) {
    DType d = c.in("Start").dtype();
    c.set_out("Out", ops::arange(host_scalar(c, "Start"), host_scalar(c, "End"), host_scalar(c, "Step"), d,
                                 c.place));
  };
}

OpKernelFn tr_linspace(const OpDesc& op) {
  DType d = paddle_dtype_attr(op, "dtype", 5);
  return [d](OpRunContext& c) {
    Attrs a{{"start", host_scalar(c, "Start")},
            {"stop", host_scalar(c, "Stop")},
            {"num", static_cast<int64_t>(host_scalar(c, "Num"))},
            {"dtype", static_cast<int64_t>(d)}};
    c.set_out("Out", call_op("linspace", {}, a, c.place)[0]);
  };
}

// softmax_with_cross_entropy, hard labels on the last axis: Label [..., 1] -> Loss [..., 1].
OpKernelFn tr_softmax_with_ce(const OpDesc& op) {
  OAR_ENFORCE(!attr_bool(op, "soft_label", false) && attr_bool(op, "use_softmax", true),
              ErrorCode::kUnimplemented,
              "softmax_with_cross_entropy: soft_label / use_softmax = false are not supported");
  int64_t axis = attr_int(op, "axis", -1), ignore = attr_int(op, "ignore_index", -100);
  return [axis, ignore](OpRunContext& c) {
    const Tensor& logits = c.in("Logits");
    OAR_ENFORCE(logits.ndim() == 2 && (axis == -1 || axis == 1), ErrorCode::kUnimplemented,
                "softmax_with_cross_entropy: only 2-D logits with axis -1 are supported, got "
                    << logits.dims().to_string() << " axis " << axis);
    Tensor label = c.in("Label").reshape(Dims{logits.dim(0)});
    std::vector<Tensor> r =
        call_op("softmax_cross_entropy", {logits, label}, Attrs{{"ignore_index", ignore}});
    c.set_out("Softmax", r[1]);
    c.set_out("Loss", r[0].reshape(Dims{logits.dim(0), 1}));
  };
}

// pad3d (NCDHW): paddings [left, right, top, bottom, front, back].
OpKernelFn tr_pad3d(const OpDesc& op) {
  require_unbound(op, "Paddings");
  std::string layout = attr_str(op, "data_format", "NCDHW");
  OAR_ENFORCE(layout == "NCDHW", ErrorCode::kUnimplemented,
              "pad3d: data_format '" << layout << "' is not supported");
  std::vector<int64_t> p = attr_ints(op, "paddings");
  OAR_ENFORCE(p.size() == 6, ErrorCode::kInvalidArgument, "pad3d: paddings must have 6 values");
  std::vector<int64_t> pads{0, 0, 0, 0, p[4], p[5], p[2], p[3], p[0], p[1]};
  std::string m = attr_str(op, "mode", "constant");
  int64_t mode = m == "constant" ? 0 : m == "reflect" ? 1 : m == "replicate" ? 2 : m == "circular" ? 3 : -1;
  OAR_ENFORCE(mode >= 0, ErrorCode::kUnimplemented, "pad3d: mode '" << m << "' is not supported");
  double value = attr_float(op, "value", 0.0);
  return [pads, mode, value](OpRunContext& c) { c.set_out("Out", ops::pad(c.in("X"), pads, mode, value)); };
}

// <method>_interp_v2 (NCW / NCHW / NCDHW): output sizes from out_d/h/w or the `scale` attribute;
// ratios as Paddle computes them (float32).
OpKernelFn tr_interp_v2(const OpDesc& op) {
  for (const char* s : {"OutSize", "SizeTensor", "Scale"}) require_unbound(op, s);
  std::string method = attr_str(op, "interp_method", "bilinear");
  int64_t mode = method == "nearest" ? 0 : method == "bicubic" ? 2 : 1;
  bool align = attr_bool(op, "align_corners", true);
  int64_t align_mode = attr_int(op, "align_mode", 1);
  std::string layout = attr_str(op, "data_layout", "NCHW");
  OAR_ENFORCE(layout == "NCW" || layout == "NCHW" || layout == "NCDHW", ErrorCode::kUnimplemented,
              op.type << ": data_layout '" << layout << "' is not supported");
  std::vector<int64_t> outs{attr_int(op, "out_d", -1), attr_int(op, "out_h", -1), attr_int(op, "out_w", -1)};
  std::vector<float> scale;
  if (const Attribute* a = op.find_attr("scale")) {
    if (auto* v = std::get_if<std::vector<float>>(a)) scale = *v;
  }
  return [=](OpRunContext& c) {
    const Tensor& x = c.in("X");
    int32_t nd = x.ndim() - 2;
    OAR_ENFORCE(nd >= 1 && nd <= 3, ErrorCode::kInvalidArgument,
                c.op->type << ": X must be 3-D, 4-D or 5-D, got " << x.dims().to_string());
    std::vector<int64_t> size;
    std::vector<double> ratios;
    for (int32_t i = 0; i < nd; ++i) {
      int64_t in = x.dim(2 + i);
      // Paddle lists one scale for every dim, or one per dim.
      float sc = scale.empty() ? 0.0f : scale.size() == 1 ? scale[0] : scale.at(static_cast<size_t>(i));
      int64_t o =
          sc > 0 ? static_cast<int64_t>(static_cast<float>(in) * sc) : outs[static_cast<size_t>(3 - nd + i)];
      OAR_ENFORCE(o > 0, ErrorCode::kInvalidArgument, c.op->type << ": no output size for spatial dim " << i);
      float r = align    ? (o > 1 ? static_cast<float>(in - 1) / static_cast<float>(o - 1) : 0.0f)
                : sc > 0 ? static_cast<float>(1. / sc)
                         : static_cast<float>(in) / static_cast<float>(o);
      size.push_back(o);
      ratios.push_back(r);
    }
    Attrs a{{"out_size", size},
            {"ratios", ratios},
            {"mode", mode},
            {"align_corners", int64_t{align}},
            {"align_mode", align_mode}};
    c.set_out("Out", call_op("interpolate", {x}, a)[0]);
  };
}

// slogdeterminant: Out[0] = sign, Out[1] = log|det| (stacked on a new leading axis).
OpKernelFn tr_slogdeterminant(const OpDesc&) {
  return [](OpRunContext& c) {
    std::vector<Tensor> r = call_op("slogdet", {c.in("Input")});
    c.set_out("Out", ops::concat({r[0].unsqueeze(0), r[1].unsqueeze(0)}, 0));
  };
}

// ---- attribute conversions of the map's slots entries that are not plain renames ------------------

int64_t reduce_code(const OpDesc& op) {
  std::string r = attr_str(op, "Reduce", "assign");
  OAR_ENFORCE(attr_bool(op, "Include_self", true), ErrorCode::kUnimplemented,
              "put_along_axis: Include_self = false is not supported");
  if (r == "assign") return 0;
  if (r == "add") return 1;
  if (r == "mul" || r == "multiply") return 2;
  OAR_THROW(ErrorCode::kUnimplemented, "put_along_axis: Reduce '" << r << "' is not supported");
}

std::vector<int64_t> im2col_pads(const OpDesc& op) {  // Paddle [top, left, bottom, right] -> oar's order
  std::vector<int64_t> p = attr_ints(op, "paddings", {0, 0, 0, 0});
  if (p.size() == 2) return {p[0], p[0], p[1], p[1]};
  OAR_ENFORCE(p.size() == 4, ErrorCode::kInvalidArgument, op.type << ": paddings must have 2 or 4 values");
  return {p[0], p[2], p[1], p[3]};
}

Attrs im2col_attrs(const OpDesc& op) {
  Attrs a{{"kernel_sizes", attr_ints(op, "kernel_sizes")},
          {"strides", attr_ints(op, "strides", {1, 1})},
          {"paddings", im2col_pads(op)},
          {"dilations", attr_ints(op, "dilations", {1, 1})}};
  if (op.type == "fold") a.set("output_sizes", attr_ints(op, "output_sizes"));
  return a;
}

int64_t index_of(const OpDesc& op, const char* attr, const std::string& def, std::vector<std::string> names) {
  std::string v = attr_str(op, attr, def);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == v) return static_cast<int64_t>(i);
  OAR_THROW(ErrorCode::kUnimplemented, op.type << ": " << attr << " '" << v << "' is not supported");
}

// logsumexp: Paddle's axis (INTS) / keepdim / reduce_all; reduce_all (or no axis) reduces everything.
Attrs logsumexp_attrs(const OpDesc& op) {
  bool all = attr_bool(op, "reduce_all", false);
  return Attrs{{"axis", all ? std::vector<int64_t>{} : attr_ints(op, "axis", {})},
               {"keepdim", int64_t{attr_bool(op, "keepdim", false)}}};
}

Attrs logcumsumexp_attrs(const OpDesc& op) {
  OAR_ENFORCE(!attr_bool(op, "exclusive", false), ErrorCode::kUnimplemented,
              "logcumsumexp: exclusive = true is not supported");
  return Attrs{{"axis", attr_int(op, "axis", -1)},
               {"flatten", int64_t{attr_bool(op, "flatten", false)}},
               {"reverse", int64_t{attr_bool(op, "reverse", false)}}};
}

Attrs cumprod_attrs(const OpDesc& op) {
  OAR_ENFORCE(!attr_bool(op, "exclusive", false) && !attr_bool(op, "reverse", false),
              ErrorCode::kUnimplemented, "cumprod: exclusive / reverse = true are not supported");
  return Attrs{{"axis", attr_int(op, "dim", -1)}, {"flatten", int64_t{0}}};
}

Attrs put_along_axis_attrs(const OpDesc& op) {
  return Attrs{{"axis", attr_int(op, "Axis", 0)}, {"reduce", reduce_code(op)}};
}

Attrs qr_attrs(const OpDesc& op) {
  return Attrs{{"complete", index_of(op, "mode", "reduced", {"reduced", "complete"})}};
}

Attrs eigh_attrs(const OpDesc& op) { return Attrs{{"lower", 1 - index_of(op, "UPLO", "L", {"L", "U"})}}; }

Attrs grid_sampler_attrs(const OpDesc& op) {
  return Attrs{{"mode", index_of(op, "mode", "bilinear", {"bilinear", "nearest"})},
               {"padding_mode", index_of(op, "padding_mode", "zeros", {"zeros", "border", "reflection"})},
               {"align_corners", int64_t{attr_bool(op, "align_corners", true)}}};
}

// ---- the Paddle op map -------------------------------------------------------------------------------

using paddle_map::Entry;
using paddle_map::Form;

const std::vector<Entry>& map_entries() {
#define IMPORT(fn) fn
#define RULE(fn) nullptr
  using namespace paddle_map;
  static const std::vector<Entry> t = {
#include "paddle_map.def"
  };
#undef IMPORT
#undef RULE
  return t;
}

const Entry& entry_of(const std::string& paddle_type) {
  static const std::map<std::string, const Entry*> by_type = paddle_map::index_by_type(map_entries());
  return *by_type.at(paddle_type);
}

// The slots form: Paddle's slots in the oar op's input / output order, attributes renamed (or converted
// by the entry's import_attrs).
OpKernelFn tr_slots(const OpDesc& op, const Entry& e, const OpDef* def) {
  Attrs attrs;
  if (e.import_attrs != nullptr) {
    attrs = e.import_attrs(op);
  } else {
    for (const paddle_map::AttrRename& r : e.attrs) {
      switch (r.kind) {
        case paddle_map::AttrKind::kInt:
          attrs.set(r.oar, attr_int(op, r.paddle, static_cast<int64_t>(r.def)));
          break;
        case paddle_map::AttrKind::kBool:
          attrs.set(r.oar, int64_t{attr_bool(op, r.paddle, r.def != 0)});
          break;
        case paddle_map::AttrKind::kFloat:
          attrs.set(r.oar, attr_float(op, r.paddle, r.def));
          break;
      }
    }
  }
  return [&e, def, attrs](OpRunContext& c) {
    std::vector<Tensor> in;
    for (const char* s : e.ins) in.push_back(c.in(s));
    std::vector<Tensor> out = call_op(*def, in, attrs, c.place);
    for (size_t i = 0; i < e.outs.size() && i < out.size(); ++i) c.set_out(e.outs[i], out[i]);
  };
}

// The translation of every regular-form entry: what the entry of op.type declares.
OpKernelFn tr_regular(const OpDesc& op) {
  const Entry& e = entry_of(op.type);
  const OpDef* def = OpRegistry::get().find(e.op);
  OAR_ENFORCE(def != nullptr, ErrorCode::kUnimplemented, op.type << ": oar has no op " << e.op);
  switch (e.form) {
    case Form::kUnary:
      return [def](OpRunContext& c) { c.set_out("Out", call1(*def, {c.in("X")})); };
    case Form::kElementwise:
      return tr_elementwise(op, def);
    case Form::kBinary:
      return [def](OpRunContext& c) { c.set_out("Out", call1(*def, {c.in("X"), c.in("Y")})); };
    case Form::kReduce:
      return tr_reduce(op, def);
    case Form::kSlots:
      return tr_slots(op, e, def);
    case Form::kCustom:
      break;
  }
  OAR_THROW(ErrorCode::kInternal, op.type << ": the Paddle op map has no translation for this form");
}

// Paddle op type -> translation, from the map.
const std::map<std::string, OpTranslation>& table() {
  static const std::map<std::string, OpTranslation> t = [] {
    std::map<std::string, OpTranslation> m;
    for (const Entry& e : map_entries())
      if (e.imported) m.emplace(e.paddle, e.form == Form::kCustom ? e.import : tr_regular);
    return m;
  }();
  return t;
}

}  // namespace

OpTranslation find_op_translation(const std::string& paddle_op_type) {
  auto it = table().find(paddle_op_type);
  if (it != table().end()) return it->second;
  const OpDef* custom = OpRegistry::get().find(paddle_op_type);  // a loaded custom op library's op
  return custom && custom->custom ? translate_custom_op : nullptr;
}

std::vector<std::string> translated_op_types() {
  std::vector<std::string> out;
  for (auto& kv : table()) out.push_back(kv.first);
  return out;  // sorted: the map's order
}

}  // namespace oar::ir
