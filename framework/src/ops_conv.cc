// Convolution, pooling and resampling ops (oar.nn.functional).
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
//
// One N-d op per family member: the spatial rank is x.ndim - 2 (1, 2 or 3), so conv1d/2d/3d share
// "conv", and transposed convolution is "conv_grad_input". Paddings are explicit
// [begin0, end0, begin1, end1, ...]; the Python wrappers turn 'SAME' / ceil_mode etc. into them.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <cmath>
#include <string>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The spatial rank of input `i` (a [N, C, spatial...] tensor), checked to be 1..3.
int32_t spatial_rank(const InferContext& c, int i, const char* arg) {
  const Dims& d = c.inputs[i].dims;
  OAR_ENFORCE(d.size() >= 3 && d.size() <= 5, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << arg << " must be 3-D, 4-D or 5-D ([N, C, spatial...]), got shape "
                         << d.to_string());
  return d.size() - 2;
}

// Attribute `name` must hold n values (an empty list means `fill` for each), each >= lo.
std::vector<int64_t> spatial_attr(InferContext& c, const char* name, int32_t n, int64_t fill, int64_t lo) {
  std::vector<int64_t> v = c.attrs->get_ints(name);
  if (v.empty()) v.assign(n, fill);
  OAR_ENFORCE(static_cast<int32_t>(v.size()) == n, ErrorCode::kInvalidArgument,
              op_name(c) << ": " << name << " must have " << n << " values, got " << ints_str(v));
  for (int64_t x : v)
    OAR_ENFORCE(x >= lo, ErrorCode::kInvalidArgument,
                op_name(c) << ": " << name << " must be >= " << lo << ", got " << ints_str(v));
  c.attrs->set(name, v);
  return v;
}

struct ConvGeom {
  int32_t nd;
  std::vector<int64_t> strides, pads, dilations;
  int64_t groups;
};

ConvGeom conv_geom(InferContext& c, int32_t nd) {
  ConvGeom g;
  g.nd = nd;
  g.strides = spatial_attr(c, "strides", nd, 1, 1);
  g.pads = spatial_attr(c, "paddings", 2 * nd, 0, 0);
  g.dilations = spatial_attr(c, "dilations", nd, 1, 1);
  g.groups = c.attrs->get_int("groups");
  OAR_ENFORCE(g.groups >= 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": groups must be >= 1, got " << g.groups);
  return g;
}

// The output length of one convolved dimension, checked positive.
int64_t conv_out_len(const InferContext& c, const ConvGeom& g, int32_t i, int64_t in, int64_t k) {
  const char* op = op_name(c);
  OAR_ENFORCE(k >= 1, ErrorCode::kInvalidArgument,
              op << ": the kernel's spatial dim " << i << " has size " << k << "; it must be at least 1");
  int64_t span = checked_add(checked_mul(g.dilations[i], k - 1, op, "the dilated kernel size"), 1, op);
  int64_t padded = checked_add(checked_add(in, g.pads[2 * i], op, "the padded size"), g.pads[2 * i + 1], op,
                               "the padded size");
  OAR_ENFORCE(padded >= span, ErrorCode::kInvalidArgument,
              op_name(c) << ": spatial dim " << i << " of size " << in << " (padded " << padded
                         << ") is smaller than the dilated kernel (" << span << ")");
  return (padded - span) / g.strides[i] + 1;
}

void require_float_same(const InferContext& c, int a, int b) {
  require_floating(c, a);
  require_same_dtype(c, a, b);
}

// conv(x [N, Cin, *], weight [Cout, Cin/groups, *k]) -> [N, Cout, *out].
void infer_conv(InferContext& c) {
  const TensorMeta &x = c.inputs[0], &w = c.inputs[1];
  int32_t nd = spatial_rank(c, 0, "x");
  OAR_ENFORCE(w.dims.size() == x.dims.size(), ErrorCode::kInvalidArgument,
              op_name(c) << ": weight must have rank " << x.dims.size() << " like x, got shape "
                         << w.dims.to_string());
  require_float_same(c, 0, 1);
  ConvGeom g = conv_geom(c, nd);
  OAR_ENFORCE(x.dims[1] == checked_mul(w.dims[1], g.groups, op_name(c), "weight.shape[1] * groups"),
              ErrorCode::kInvalidArgument,
              op_name(c) << ": x has " << x.dims[1] << " channels but weight.shape[1] (" << w.dims[1]
                         << ") * groups (" << g.groups << ") = " << w.dims[1] * g.groups);
  OAR_ENFORCE(w.dims[0] % g.groups == 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": weight.shape[0] (" << w.dims[0] << ") is not divisible by groups (" << g.groups
                         << ")");
  Dims out{x.dims[0], w.dims[0]};
  for (int32_t i = 0; i < nd; ++i) out.push_back(conv_out_len(c, g, i, x.dims[2 + i], w.dims[2 + i]));
  c.outputs[0] = {x.dtype, out};
}

// conv_grad_input(grad_out [N, Cout, *o], weight [Cout, Cin/groups, *k]) -> [N, Cin, *input_size]:
// the gradient of conv wrt x, also the transposed convolution.
void infer_conv_grad_input(InferContext& c) {
  const TensorMeta &gy = c.inputs[0], &w = c.inputs[1];
  int32_t nd = spatial_rank(c, 0, "x");
  OAR_ENFORCE(w.dims.size() == gy.dims.size(), ErrorCode::kInvalidArgument,
              op_name(c) << ": weight must have rank " << gy.dims.size() << " like x, got shape "
                         << w.dims.to_string());
  require_float_same(c, 0, 1);
  ConvGeom g = conv_geom(c, nd);
  OAR_ENFORCE(gy.dims[1] == w.dims[0], ErrorCode::kInvalidArgument,
              op_name(c) << ": x has " << gy.dims[1] << " channels but weight.shape[0] is " << w.dims[0]);
  OAR_ENFORCE(w.dims[0] % g.groups == 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": weight.shape[0] (" << w.dims[0] << ") is not divisible by groups (" << g.groups
                         << ")");
  std::vector<int64_t> size = spatial_attr(c, "input_size", nd, 0, 1);
  Dims out{gy.dims[0], checked_mul(w.dims[1], g.groups, op_name(c), "weight.shape[1] * groups")};
  for (int32_t i = 0; i < nd; ++i) {
    int64_t o = conv_out_len(c, g, i, size[i], w.dims[2 + i]);
    OAR_ENFORCE(o == gy.dims[2 + i], ErrorCode::kInvalidArgument,
                op_name(c) << ": output size " << size[i] << " in spatial dim " << i
                           << " does not match input size " << gy.dims[2 + i]
                           << " (a convolution of it gives " << o << ")");
    out.push_back(size[i]);
  }
  c.outputs[0] = {gy.dtype, out};
}

// conv_grad_filter(x [N, Cin, *], grad_out [N, Cout, *o]) -> [Cout, Cin/groups, *filter_size].
void infer_conv_grad_filter(InferContext& c) {
  const TensorMeta &x = c.inputs[0], &gy = c.inputs[1];
  int32_t nd = spatial_rank(c, 0, "x");
  OAR_ENFORCE(gy.dims.size() == x.dims.size() && gy.dims[0] == x.dims[0], ErrorCode::kInvalidArgument,
              op_name(c) << ": grad_out shape " << gy.dims.to_string() << " does not fit x shape "
                         << x.dims.to_string());
  require_float_same(c, 0, 1);
  ConvGeom g = conv_geom(c, nd);
  OAR_ENFORCE(x.dims[1] % g.groups == 0 && gy.dims[1] % g.groups == 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": channels (" << x.dims[1] << ", " << gy.dims[1] << ") not divisible by groups ("
                         << g.groups << ")");
  std::vector<int64_t> k = spatial_attr(c, "filter_size", nd, 0, 1);
  Dims out{gy.dims[1], x.dims[1] / g.groups};
  for (int32_t i = 0; i < nd; ++i) {
    int64_t o = conv_out_len(c, g, i, x.dims[2 + i], k[i]);
    OAR_ENFORCE(
        o == gy.dims[2 + i], ErrorCode::kInvalidArgument,
        op_name(c) << ": grad_out spatial dim " << i << " is " << gy.dims[2 + i] << ", expected " << o);
    out.push_back(k[i]);
  }
  c.outputs[0] = {x.dtype, out};
}

// ---- pooling ----------------------------------------------------------------------------------------
// Attributes: kernel_size (for adaptive pooling: the output size), strides, paddings [b0, e0, ...],
// ceil_mode, adaptive. Output length as Paddle: floor or ceil of (L + b + e - k) / s + 1.
Dims pool_out_dims(InferContext& c, const Dims& x) {
  int32_t nd = spatial_rank(c, 0, "x");
  bool adaptive = c.attrs->get_int("adaptive") != 0;
  std::vector<int64_t> k = spatial_attr(c, "kernel_size", nd, 0, 1);
  Dims out{x[0], x[1]};
  if (adaptive) {
    for (int32_t i = 0; i < nd; ++i) out.push_back(k[i]);
    return out;
  }
  std::vector<int64_t> s = spatial_attr(c, "strides", nd, 1, 1);
  std::vector<int64_t> p = spatial_attr(c, "paddings", 2 * nd, 0, 0);
  bool ceil = c.attrs->get_int("ceil_mode") != 0;
  for (int32_t i = 0; i < nd; ++i) {
    OAR_ENFORCE(
        p[2 * i] < k[i] && p[2 * i + 1] < k[i] + (ceil ? s[i] : 0), ErrorCode::kInvalidArgument,
        op_name(c) << ": paddings " << ints_str(p) << " must be smaller than kernel_size " << ints_str(k));
    const char* op = op_name(c);
    int64_t padded = checked_add(checked_add(x[2 + i], p[2 * i], op, "the padded size"), p[2 * i + 1], op,
                                 "the padded size") -
                     k[i];
    OAR_ENFORCE(padded >= 0, ErrorCode::kInvalidArgument,
                op_name(c) << ": kernel_size " << ints_str(k) << " is larger than the padded input "
                           << x.to_string());
    out.push_back(checked_add(padded, ceil ? s[i] - 1 : 0, op, "the pooled size") / s[i] + 1);
  }
  return out;
}

std::vector<AttrDef> pool_attrs() {
  return {req_ints("kernel_size"), ints_attr("strides"), ints_attr("paddings"), int_attr("ceil_mode", 0),
          int_attr("adaptive", 0)};
}

void infer_max_pool(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, pool_out_dims(c, c.inputs[0].dims)};
  c.outputs[1] = {DType::kInt32, c.outputs[0].dims};
}
void infer_avg_pool(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, pool_out_dims(c, c.inputs[0].dims)};
}
// The pool of input_size must give grad_out's shape.
Dims pool_grad_dims(InferContext& c) {
  const Dims& gy = c.inputs[0].dims;
  int32_t nd = spatial_rank(c, 0, "grad_out");
  std::vector<int64_t> size = spatial_attr(c, "input_size", nd, 0, 0);
  Dims in{gy[0], gy[1]};
  for (int64_t s : size) in.push_back(s);
  Dims expect = pool_out_dims(c, in);
  OAR_ENFORCE(expect == gy, ErrorCode::kInvalidArgument,
              op_name(c) << ": grad_out shape " << gy.to_string() << " does not match the pooled shape "
                         << expect.to_string());
  return in;
}
void infer_max_pool_grad(InferContext& c) {
  require_floating(c, 0);
  OAR_ENFORCE(c.inputs[1].dtype == DType::kInt32 && c.inputs[1].dims == c.inputs[0].dims,
              ErrorCode::kInvalidArgument, op_name(c) << ": mask must be int32 with grad_out's shape");
  c.outputs[0] = {c.inputs[0].dtype, pool_grad_dims(c)};
}
void infer_avg_pool_grad(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = {c.inputs[0].dtype, pool_grad_dims(c)};
}

// ---- resampling ---------------------------------------------------------------------------------
// interpolate(x [N, C, *in]) -> [N, C, *out_size]; mode 0 nearest, 1 (bi/tri)linear, 2 bicubic.
// ratios: per dim, the source step (Paddle: in/out, 1/scale, or (in-1)/(out-1) with align_corners).
void infer_interp(InferContext& c) {
  require_floating(c, 0);
  const Dims& x = c.inputs[0].dims;
  int32_t nd = spatial_rank(c, 0, "x");
  std::vector<int64_t> size = spatial_attr(c, "out_size", nd, 0, 1);
  OAR_ENFORCE(c.attrs->get_floats("ratios").size() == static_cast<size_t>(nd), ErrorCode::kInvalidArgument,
              op_name(c) << ": ratios must have " << nd << " values");
  int64_t mode = c.attrs->get_int("mode");
  OAR_ENFORCE(mode >= 0 && mode <= 2, ErrorCode::kInvalidArgument, op_name(c) << ": bad mode " << mode);
  Dims out{x[0], x[1]};
  for (int64_t s : size) out.push_back(s);
  c.outputs[0] = {c.inputs[0].dtype, out};
}
void infer_interp_grad(InferContext& c) {
  require_floating(c, 0);
  const Dims& g = c.inputs[0].dims;
  int32_t nd = spatial_rank(c, 0, "grad_out");
  std::vector<int64_t> size = spatial_attr(c, "input_size", nd, 0, 1);
  std::vector<int64_t> osz = spatial_attr(c, "out_size", nd, 0, 1);
  for (int32_t i = 0; i < nd; ++i)
    OAR_ENFORCE(
        osz[i] == g[2 + i], ErrorCode::kInvalidArgument,
        op_name(c) << ": grad_out shape " << g.to_string() << " does not match out_size " << ints_str(osz));
  Dims in{g[0], g[1]};
  for (int64_t s : size) in.push_back(s);
  c.outputs[0] = {c.inputs[0].dtype, in};
}
std::vector<AttrDef> interp_attrs() {
  return {req_ints("out_size"), AttrDef{"ratios", AttrType::kFloats, true, std::vector<double>{}},
          int_attr("mode", 1), int_attr("align_corners", 0), int_attr("align_mode", 0)};
}

// unfold (im2col, 2-D): x [N, C, H, W] -> [N, C*kh*kw, L]; fold is its adjoint.
struct Im2col {
  std::vector<int64_t> k, s, p, d;
};
Im2col im2col_attrs(InferContext& c) {
  return {spatial_attr(c, "kernel_sizes", 2, 0, 1), spatial_attr(c, "strides", 2, 1, 1),
          spatial_attr(c, "paddings", 4, 0, 0), spatial_attr(c, "dilations", 2, 1, 1)};
}
int64_t im2col_len(const InferContext& c, const Im2col& a, int32_t i, int64_t in) {
  const char* op = op_name(c);
  int64_t span = checked_add(checked_mul(a.d[i], a.k[i] - 1, op, "the dilated kernel size"), 1, op);
  int64_t padded =
      checked_add(checked_add(in, a.p[2 * i], op, "the padded size"), a.p[2 * i + 1], op, "the padded size");
  OAR_ENFORCE(padded >= span, ErrorCode::kInvalidArgument,
              op_name(c) << ": spatial size " << in << " (padded " << padded
                         << ") is smaller than the kernel (" << span << ")");
  return (padded - span) / a.s[i] + 1;
}
void infer_unfold(InferContext& c) {
  require_floating(c, 0);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() == 4, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 4-D [N, C, H, W], got shape " << x.to_string());
  Im2col a = im2col_attrs(c);
  const char* op = op_name(c);
  int64_t L = checked_mul(im2col_len(c, a, 0, x[2]), im2col_len(c, a, 1, x[3]), op, "the number of blocks");
  int64_t kk = checked_mul(a.k[0], a.k[1], op, "the kernel area");
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0], checked_mul(x[1], kk, op, "the output channels"), L}};
}
void infer_fold(InferContext& c) {
  require_floating(c, 0);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() == 3, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 3-D [N, C*kh*kw, L], got shape " << x.to_string());
  Im2col a = im2col_attrs(c);
  std::vector<int64_t> os = spatial_attr(c, "output_sizes", 2, 0, 1);
  int64_t kk = checked_mul(a.k[0], a.k[1], op_name(c), "the kernel area");
  OAR_ENFORCE(
      x[1] % kk == 0, ErrorCode::kInvalidArgument,
      op_name(c) << ": x.shape[1] (" << x[1] << ") is not divisible by the kernel area (" << kk << ")");
  int64_t L =
      checked_mul(im2col_len(c, a, 0, os[0]), im2col_len(c, a, 1, os[1]), op_name(c), "the number of blocks");
  OAR_ENFORCE(x[2] == L, ErrorCode::kInvalidArgument,
              op_name(c) << ": x.shape[2] (" << x[2] << ") != the number of blocks (" << L
                         << ") for output_sizes " << ints_str(os));
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0], x[1] / kk, os[0], os[1]}};
}
std::vector<AttrDef> im2col_attr_defs() {
  return {req_ints("kernel_sizes"), ints_attr("strides"), ints_attr("paddings"), ints_attr("dilations")};
}

// grid_sample(x [N, C, H, W], grid [N, Ho, Wo, 2]) -> [N, C, Ho, Wo].
void infer_grid_sample(InferContext& c) {
  require_float_same(c, 0, 1);
  const Dims &x = c.inputs[0].dims, &g = c.inputs[1].dims;
  OAR_ENFORCE(x.size() == 4, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 4-D [N, C, H, W], got shape " << x.to_string());
  OAR_ENFORCE(g.size() == 4 && g[3] == 2 && g[0] == x[0], ErrorCode::kInvalidArgument,
              op_name(c) << ": grid must have shape [N, H_out, W_out, 2] with N = " << x[0] << ", got "
                         << g.to_string());
  int64_t mode = c.attrs->get_int("mode"), pad = c.attrs->get_int("padding_mode");
  OAR_ENFORCE(mode == 0 || mode == 1, ErrorCode::kInvalidArgument, op_name(c) << ": bad mode " << mode);
  OAR_ENFORCE(pad >= 0 && pad <= 2, ErrorCode::kInvalidArgument, op_name(c) << ": bad padding_mode " << pad);
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0], x[1], g[1], g[2]}};
}
void infer_grid_sample_grad(InferContext& c) {
  InferContext f = c;
  infer_grid_sample(f);
  OAR_ENFORCE(f.outputs[0].dims == c.inputs[2].dims, ErrorCode::kInvalidArgument,
              op_name(c) << ": grad_out shape " << c.inputs[2].dims.to_string()
                         << " != " << f.outputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[1];
}
std::vector<AttrDef> grid_attrs() {
  return {int_attr("mode", 0), int_attr("padding_mode", 0), int_attr("align_corners", 1)};
}

// ---- gradient rules -------------------------------------------------------------------------------
std::vector<int64_t> spatial_of(const Dims& d) {
  return std::vector<int64_t>(d.data() + 2, d.data() + d.size());
}
Attrs conv_attrs(const Attrs& a) {
  return Attrs{{"strides", a.get_ints("strides")},
               {"paddings", a.get_ints("paddings")},
               {"dilations", a.get_ints("dilations")},
               {"groups", a.get_int("groups")}};
}
Tensor conv_(const Tensor& x, const Tensor& w, const Attrs& a) {
  return call_op(OAR_OP("conv"), {x, w}, conv_attrs(a))[0];
}
Tensor conv_gi(const Tensor& g, const Tensor& w, const Attrs& a, const Dims& x) {
  Attrs b = conv_attrs(a);
  b.set("input_size", spatial_of(x));
  return call_op(OAR_OP("conv_grad_input"), {g, w}, b)[0];
}
Tensor conv_gw(const Tensor& x, const Tensor& g, const Attrs& a, const Dims& w) {
  Attrs b = conv_attrs(a);
  b.set("filter_size", spatial_of(w));
  return call_op(OAR_OP("conv_grad_filter"), {x, g}, b)[0];
}

// y = conv(x, w): dx = conv_grad_input(g, w), dw = conv_grad_filter(x, g).
std::vector<Tensor> conv_grad(const GradContext& c) {
  return {c.needs_grad[0] ? conv_gi(g0(c), c.inputs[1], c.attrs, in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? conv_gw(c.inputs[0], g0(c), c.attrs, in_dims(c, 1)) : Tensor()};
}
// dx = conv_grad_input(gy, w) is linear in gy and w: <G, dx> = <conv(G, w), gy>.
std::vector<Tensor> conv_grad_input_grad(const GradContext& c) {
  return {c.needs_grad[0] ? conv_(g0(c), c.inputs[1], c.attrs) : Tensor(),
          c.needs_grad[1] ? conv_gw(g0(c), c.inputs[0], c.attrs, in_dims(c, 1)) : Tensor()};
}
// dw = conv_grad_filter(x, gy): <G, dw> = <conv(x, G), gy>.
std::vector<Tensor> conv_grad_filter_grad(const GradContext& c) {
  return {c.needs_grad[0] ? conv_gi(c.inputs[1], g0(c), c.attrs, in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? conv_(c.inputs[0], g0(c), c.attrs) : Tensor()};
}

Attrs pool_attrs_of(const Attrs& a) {
  Attrs b{{"kernel_size", a.get_ints("kernel_size")},
          {"strides", a.get_ints("strides")},
          {"paddings", a.get_ints("paddings")},
          {"ceil_mode", a.get_int("ceil_mode")},
          {"adaptive", a.get_int("adaptive")}};
  if (a.find("exclusive")) {
    b.set("exclusive", a.get_int("exclusive"));
    b.set("divisor", a.get_int("divisor"));
  }
  return b;
}
std::vector<Tensor> max_pool_grad_rule(const GradContext& c) {
  Attrs b = pool_attrs_of(c.attrs);
  b.set("input_size", spatial_of(in_dims(c, 0)));
  return {call_op(OAR_OP("max_pool_grad"), {g0(c), c.outputs[1]}, b)[0]};
}
std::vector<Tensor> avg_pool_grad_rule(const GradContext& c) {
  Attrs b = pool_attrs_of(c.attrs);
  b.set("input_size", spatial_of(in_dims(c, 0)));
  return {call_op(OAR_OP("avg_pool_grad"), {g0(c)}, b)[0]};
}
// avg_pool_grad is the adjoint of avg_pool.
std::vector<Tensor> avg_pool_grad_grad(const GradContext& c) {
  return {call_op(OAR_OP("avg_pool"), {g0(c)}, pool_attrs_of(c.attrs))[0]};
}

Attrs interp_attrs_of(const Attrs& a) {
  return Attrs{{"out_size", a.get_ints("out_size")},
               {"ratios", a.get_floats("ratios")},
               {"mode", a.get_int("mode")},
               {"align_corners", a.get_int("align_corners")},
               {"align_mode", a.get_int("align_mode")}};
}
std::vector<Tensor> interp_grad_rule(const GradContext& c) {
  Attrs b = interp_attrs_of(c.attrs);
  b.set("input_size", spatial_of(in_dims(c, 0)));
  return {call_op(OAR_OP("interpolate_grad"), {g0(c)}, b)[0]};
}
std::vector<Tensor> interp_grad_grad(const GradContext& c) {
  return {call_op(OAR_OP("interpolate"), {g0(c)}, interp_attrs_of(c.attrs))[0]};
}

Attrs im2col_of(const Attrs& a) {
  return Attrs{{"kernel_sizes", a.get_ints("kernel_sizes")},
               {"strides", a.get_ints("strides")},
               {"paddings", a.get_ints("paddings")},
               {"dilations", a.get_ints("dilations")}};
}
std::vector<Tensor> unfold_grad(const GradContext& c) {
  Attrs b = im2col_of(c.attrs);
  b.set("output_sizes", spatial_of(in_dims(c, 0)));
  return {call_op(OAR_OP("fold"), {g0(c)}, b)[0]};
}
std::vector<Tensor> fold_grad(const GradContext& c) {
  return {call_op(OAR_OP("unfold"), {g0(c)}, im2col_of(c.attrs))[0]};
}

std::vector<Tensor> grid_sample_grad_rule(const GradContext& c) {
  Attrs b{{"mode", c.attrs.get_int("mode")},
          {"padding_mode", c.attrs.get_int("padding_mode")},
          {"align_corners", c.attrs.get_int("align_corners")}};
  std::vector<Tensor> r = call_op(OAR_OP("grid_sample_grad"), {c.inputs[0], c.inputs[1], g0(c)}, b);
  return {c.needs_grad[0] ? r[0] : Tensor(), c.needs_grad[1] ? r[1] : Tensor()};
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  std::vector<AttrDef> conv_a = {ints_attr("strides"), ints_attr("paddings"), ints_attr("dilations"),
                                 int_attr("groups", 1)};
  def(r, "conv", {"x", "weight"}, conv_a, infer_conv);
  auto gi = conv_a;
  gi.push_back(req_ints("input_size"));
  def(r, "conv_grad_input", {"grad_out", "weight"}, gi, infer_conv_grad_input);
  auto gf = conv_a;
  gf.push_back(req_ints("filter_size"));
  def(r, "conv_grad_filter", {"x", "grad_out"}, gf, infer_conv_grad_filter);

  def(r, "max_pool", {"x"}, pool_attrs(), infer_max_pool).outputs = {"out", "mask"};
  auto avg = pool_attrs();
  avg.push_back(int_attr("exclusive", 1));
  avg.push_back(int_attr("divisor", 0));  // divisor_override; 0 = none
  def(r, "avg_pool", {"x"}, avg, infer_avg_pool);
  auto mg = pool_attrs();
  mg.push_back(req_ints("input_size"));
  def(r, "max_pool_grad", {"grad_out", "mask"}, mg, infer_max_pool_grad);
  auto ag = avg;
  ag.push_back(req_ints("input_size"));
  def(r, "avg_pool_grad", {"grad_out"}, ag, infer_avg_pool_grad);

  def(r, "interpolate", {"x"}, interp_attrs(), infer_interp);
  auto ig = interp_attrs();
  ig.push_back(req_ints("input_size"));
  def(r, "interpolate_grad", {"grad_out"}, ig, infer_interp_grad);

  def(r, "unfold", {"x"}, im2col_attr_defs(), infer_unfold);
  auto fa = im2col_attr_defs();
  fa.push_back(req_ints("output_sizes"));
  def(r, "fold", {"x"}, fa, infer_fold);

  def(r, "grid_sample", {"x", "grid"}, grid_attrs(), infer_grid_sample);
  def(r, "grid_sample_grad", {"x", "grid", "grad_out"}, grid_attrs(), infer_grid_sample_grad).outputs = {
      "grad_x", "grad_grid"};
}

// Sample inputs for the op suite (op_sample.h). Index-like inputs (max_pool_grad's mask) stay inside
// the input planes.
void register_conv_samples(OpRegistry& r) {
  using namespace sample;
  auto m = [](Shape s) { return real(std::move(s), -1, 1); };
  add(r, "conv",
      {S("2-d", {m({2, 3, 8, 8}), m({4, 3, 3, 3})}),
       S("stride and padding", {m({2, 3, 8, 8}), m({4, 3, 3, 3})},
         {{"strides", Shape{2, 2}}, {"paddings", Shape{1, 1, 1, 1}}}),
       S("groups and dilation", {m({1, 4, 6, 6}), m({4, 2, 3, 3})},
         {{"groups", int64_t{2}}, {"dilations", Shape{2, 2}}}),
       S("1-d", {m({2, 3, 10}), m({4, 3, 3})}), S("3-d", {m({1, 2, 4, 4, 4}), m({2, 2, 2, 2, 2})}),
       S("transposed x", {transposed(m({1, 2, 6, 5})), m({3, 2, 2, 2})}),
       S("empty batch", {m({0, 3, 5, 5}), m({2, 3, 3, 3})})});
  add(r, "conv_grad_input",
      {S("2-d", {m({2, 4, 6, 6}), m({4, 3, 3, 3})}, {{"input_size", Shape{8, 8}}}),
       S("stride", {m({1, 4, 3, 3}), m({4, 2, 3, 3})},
         {{"strides", Shape{2, 2}}, {"paddings", Shape{1, 1, 1, 1}}, {"input_size", Shape{6, 6}}})});
  add(r, "conv_grad_filter",
      {S("2-d", {m({2, 3, 8, 8}), m({2, 4, 6, 6})}, {{"filter_size", Shape{3, 3}}}),
       S("groups", {m({1, 4, 5, 5}), m({1, 4, 3, 3})},
         {{"groups", int64_t{2}}, {"filter_size", Shape{3, 3}}})});
  auto pool = [](Shape k, Shape s, Shape p) {
    return AttrList{{"kernel_size", k}, {"strides", s}, {"paddings", p}};
  };
  std::vector<OpSample> pools = {
      S("2x2", {real({2, 3, 8, 8})}, pool({2, 2}, {2, 2}, {0, 0, 0, 0})),
      S("3x3 padded", {real({2, 3, 7, 7})}, pool({3, 3}, {2, 2}, {1, 1, 1, 1})),
      S("ceil mode", {real({1, 2, 7, 7})},
        [&] {
          auto a = pool({2, 2}, {2, 2}, {0, 0, 0, 0});
          a.emplace_back("ceil_mode", int64_t{1});
          return a;
        }()),
      S("adaptive", {real({1, 2, 7, 6})},
        [&] {
          auto a = pool({3, 2}, {}, {});
          a.emplace_back("adaptive", int64_t{1});
          return a;
        }()),
      S("1-d", {real({2, 3, 9})}, pool({3}, {2}, {1, 1})),
      S("transposed", {transposed(real({1, 2, 6, 5}))}, pool({2, 2}, {1, 1}, {0, 0, 0, 0})),
  };
  add(r, "max_pool", pools);
  add(r, "avg_pool", pools);
  add(r, "avg_pool",
      {S("inclusive", {real({1, 2, 7, 7})},
         [&] {
           auto a = pool({3, 3}, {2, 2}, {1, 1, 1, 1});
           a.emplace_back("exclusive", int64_t{0});
           return a;
         }()),
       S("divisor", {real({1, 2, 6, 6})}, [&] {
         auto a = pool({2, 2}, {2, 2}, {0, 0, 0, 0});
         a.emplace_back("divisor", int64_t{3});
         return a;
       }())});
  add(r, "avg_pool_grad",
      {S("2x2", {real({2, 3, 4, 4})},
         [&] {
           auto a = pool({2, 2}, {2, 2}, {0, 0, 0, 0});
           a.emplace_back("input_size", Shape{8, 8});
           return a;
         }()),
       S("padded", {real({1, 2, 4, 4})}, [&] {
         auto a = pool({3, 3}, {2, 2}, {1, 1, 1, 1});
         a.emplace_back("input_size", Shape{7, 7});
         return a;
       }())});
  add(r, "max_pool_grad", {S("2x2", {real({2, 3, 4, 4}), index({2, 3, 4, 4}, 0, 63, DType::kInt32)}, [&] {
        auto a = pool({2, 2}, {2, 2}, {0, 0, 0, 0});
        a.emplace_back("input_size", Shape{8, 8});
        return a;
      }())});
  auto I = [](Shape size, std::vector<double> ratios, int64_t mode, int64_t align) {
    return AttrList{{"out_size", size}, {"ratios", ratios}, {"mode", mode}, {"align_corners", align}};
  };
  add(r, "interpolate",
      {S("bilinear", {real({1, 2, 4, 4})}, I({6, 6}, {1.5, 1.5}, 1, 0)),
       S("bilinear align corners", {real({1, 2, 4, 5})}, I({7, 3}, {1.75, 0.6}, 1, 1)),
       nonsmooth(S("nearest", {real({1, 2, 4, 4})}, I({8, 8}, {2, 2}, 0, 0))),
       S("mode 2", {real({2, 1, 3, 4})}, I({5, 6}, {5.0 / 3, 1.5}, 2, 0)),
       S("transposed", {transposed(real({1, 2, 5, 4}))}, I({6, 6}, {1.5, 1.2}, 1, 0))});
  auto IG = [&](Shape in, Shape out, std::vector<double> ratios, int64_t mode) {
    AttrList a = I(std::move(out), std::move(ratios), mode, 0);
    a.emplace_back("input_size", in);
    return a;
  };
  add(r, "interpolate_grad",
      {S("bilinear", {real({1, 2, 6, 6})}, IG({4, 4}, {6, 6}, {1.5, 1.5}, 1)),
       S("nearest", {real({1, 2, 8, 8})}, IG({4, 4}, {8, 8}, {2, 2}, 0))});
  auto U = [](Shape k, Shape s, Shape p) {
    return AttrList{{"kernel_sizes", k}, {"strides", s}, {"paddings", p}};
  };
  add(r, "unfold",
      {S("2x2", {real({1, 2, 5, 5})}, U({2, 2}, {}, {})),
       S("3x3 strided padded", {real({2, 1, 6, 6})}, U({3, 3}, {2, 2}, {1, 1, 1, 1})),
       S("transposed", {transposed(real({1, 2, 5, 4}))}, U({2, 2}, {1, 1}, {0, 0, 0, 0}))});
  add(r, "fold",
      {S("2x2", {real({1, 8, 16})},
         [&] {
           auto a = U({2, 2}, {}, {});
           a.emplace_back("output_sizes", Shape{5, 5});
           return a;
         }()),
       S("strided", {real({2, 9, 9})}, [&] {
         auto a = U({3, 3}, {2, 2}, {1, 1, 1, 1});
         a.emplace_back("output_sizes", Shape{6, 6});
         return a;
       }())});
  auto G = [](int64_t mode, int64_t padding, int64_t align) {
    return AttrList{{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}};
  };
  add(r, "grid_sample",
      {S("bilinear", {real({1, 2, 4, 5}), real({1, 3, 3, 2}, -1, 1)}, G(0, 0, 1)),
       S("outside, border", {real({2, 1, 4, 4}), real({2, 2, 3, 2}, -1.3, 1.3)}, G(0, 1, 0)),
       nonsmooth(S("nearest", {real({1, 2, 4, 5}), real({1, 3, 3, 2}, -1, 1)}, G(1, 0, 1)))});
  add(r, "grid_sample_grad",
      {S("bilinear", {real({1, 2, 4, 5}), real({1, 3, 3, 2}, -1, 1), real({1, 2, 3, 3})}, G(0, 0, 1)),
       S("border", {real({2, 1, 4, 4}), real({2, 2, 3, 2}, -1.3, 1.3), real({2, 1, 2, 3})}, G(0, 1, 0))});
}

void register_conv_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kX = 1, kXY = 3;
  set_grad(r, "conv", conv_grad, kXY, false);
  set_grad(r, "conv_grad_input", conv_grad_input_grad, kXY, false);
  set_grad(r, "conv_grad_filter", conv_grad_filter_grad, kXY, false);
  set_grad(r, "max_pool", max_pool_grad_rule, kNone, true);
  set_grad(r, "avg_pool", avg_pool_grad_rule, kNone, false);
  set_grad(r, "avg_pool_grad", avg_pool_grad_grad, kNone, false);
  set_grad(r, "interpolate", interp_grad_rule, kNone, false);
  set_grad(r, "interpolate_grad", interp_grad_grad, kNone, false);
  set_grad(r, "unfold", unfold_grad, kNone, false);
  set_grad(r, "fold", fold_grad, kNone, false);
  set_grad(r, "grid_sample", grid_sample_grad_rule, kXY, false);
  (void)kX;
}

}  // namespace oar
