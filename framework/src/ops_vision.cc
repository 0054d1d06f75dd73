// Detection and sequence ops (oar.vision.ops, F.ctc_loss): RoI pooling (roi_align, roi_pool,
// psroi_pool), the sampling half of deformable convolution (deform_im2col; the product with the
// weight is an ordinary matmul in Python), greedy NMS and the CTC loss. Each op's schema, inference
// and gradient rule in one place (op_util.h).
//
// Boxes are [R, 4] (x1, y1, x2, y2) in float32 or float64, independent of x's dtype (they carry no
// gradient, as in Paddle); boxes_num [N] (int32/int64) says how many boxes belong to each image, and
// the kernel checks that they add up to R.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <string>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {

void register_vision_ops(OpRegistry& r);  // called from op_defs.cc
void register_vision_grads(OpRegistry& r);
void register_vision_samples(OpRegistry& r);  // called from op_samples.cc
namespace {
using namespace opdef;
using namespace gradutil;

bool is_int_index(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

void require_index(const InferContext& c, int i) {
  OAR_ENFORCE(is_int_index(c.inputs[i].dtype), ErrorCode::kType,
              op_name(c) << ": " << input_name(c, i) << ".dtype must be int32 or int64, got "
                         << dtype_name(c.inputs[i].dtype));
}

// x [N, C, H, W] float, boxes [R, 4] float32/float64, boxes_num [N] int.
void check_rois(const InferContext& c, int x, int boxes, int num) {
  const Dims& xd = c.inputs[x].dims;
  OAR_ENFORCE(xd.size() == 4, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 4-D [N, C, H, W], got shape " << xd.to_string());
  const Dims& b = c.inputs[boxes].dims;
  DType bt = c.inputs[boxes].dtype;
  OAR_ENFORCE(bt == DType::kFloat32 || bt == DType::kFloat64, ErrorCode::kType,
              op_name(c) << ": boxes.dtype must be float32 or float64, got " << dtype_name(bt));
  OAR_ENFORCE(b.size() == 2 && b[1] == 4, ErrorCode::kInvalidArgument,
              op_name(c) << ": boxes must have shape [num_boxes, 4], got " << b.to_string());
  require_index(c, num);
  const Dims& n = c.inputs[num].dims;
  OAR_ENFORCE(n.size() == 1 && n[0] == xd[0], ErrorCode::kInvalidArgument,
              op_name(c) << ": boxes_num must have shape [" << xd[0] << "] (one count per image), got "
                         << n.to_string());
}

void check_pooled(const InferContext& c) {
  int64_t ph = c.attrs->get_int("pooled_height"), pw = c.attrs->get_int("pooled_width");
  OAR_ENFORCE(ph >= 1 && pw >= 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": output_size must be positive, got (" << ph << ", " << pw << ")");
  double s = c.attrs->get_float("spatial_scale");
  OAR_ENFORCE(s > 0, ErrorCode::kInvalidArgument, op_name(c) << ": spatial_scale must be > 0, got " << s);
}

// Attribute input_size [N, C, H, W] of a grad op, checked.
Dims input_size(InferContext& c) {
  std::vector<int64_t> s = c.attrs->get_ints("input_size");
  OAR_ENFORCE(s.size() == 4, ErrorCode::kInvalidArgument, op_name(c) << ": input_size must have 4 values");
  for (int64_t v : s) OAR_ENFORCE(v >= 0, ErrorCode::kInvalidArgument, op_name(c) << ": bad input_size");
  return Dims{s[0], s[1], s[2], s[3]};
}

// roi_align / roi_pool / psroi_pool (x, boxes, boxes_num) -> [R, C_out, ph, pw].
void infer_roi(InferContext& c) {
  require_floating(c, 0);
  check_rois(c, 0, 1, 2);
  check_pooled(c);
  const Dims& x = c.inputs[0].dims;
  int64_t ph = c.attrs->get_int("pooled_height"), pw = c.attrs->get_int("pooled_width");
  int64_t ch = x[1];
  if (c.attrs->find("output_channels")) {
    ch = c.attrs->get_int("output_channels");
    OAR_ENFORCE(ch >= 1 && x[1] == checked_mul(checked_mul(ch, ph, op_name(c), "channels"), pw, op_name(c),
                                               "channels"),
                ErrorCode::kInvalidArgument,
                op_name(c) << ": x has " << x[1] << " channels; it needs output_channels * pooled_height * "
                           << "pooled_width = " << ch << " * " << ph << " * " << pw);
  }
  c.outputs[0] = {c.inputs[0].dtype, Dims{c.inputs[1].dims[0], ch, ph, pw}};
  if (c.op->outputs.size() > 1) c.outputs[1] = {DType::kInt64, c.outputs[0].dims};  // roi_pool's argmax
}

// roi_align_grad / psroi_pool_grad (boxes, boxes_num, grad_out) -> dx of shape input_size.
void infer_roi_grad(InferContext& c) {
  require_floating(c, 2);
  check_pooled(c);
  Dims in = input_size(c);
  const Dims& b = c.inputs[0].dims;
  DType bt = c.inputs[0].dtype;
  OAR_ENFORCE((bt == DType::kFloat32 || bt == DType::kFloat64) && b.size() == 2 && b[1] == 4,
              ErrorCode::kInvalidArgument,
              op_name(c) << ": boxes must be float [R, 4], got " << b.to_string());
  require_index(c, 1);
  OAR_ENFORCE(c.inputs[1].dims == Dims{in[0]}, ErrorCode::kInvalidArgument,
              op_name(c) << ": boxes_num must have shape [" << in[0] << "]");
  int64_t ch = c.attrs->find("output_channels") ? c.attrs->get_int("output_channels") : in[1];
  Dims want{b[0], ch, c.attrs->get_int("pooled_height"), c.attrs->get_int("pooled_width")};
  OAR_ENFORCE(
      c.inputs[2].dims == want, ErrorCode::kInvalidArgument,
      op_name(c) << ": grad_out shape " << c.inputs[2].dims.to_string() << " != " << want.to_string());
  c.outputs[0] = {c.inputs[2].dtype, in};
}

// roi_pool_grad (boxes_num, argmax, grad_out) -> dx of shape input_size.
void infer_roi_pool_grad(InferContext& c) {
  require_floating(c, 2);
  require_index(c, 0);
  Dims in = input_size(c);
  OAR_ENFORCE(c.inputs[1].dtype == DType::kInt64 && c.inputs[1].dims == c.inputs[2].dims &&
                  c.inputs[2].dims.size() == 4 && c.inputs[2].dims[1] == in[1],
              ErrorCode::kInvalidArgument,
              op_name(c) << ": argmax must be int64 with grad_out's shape [R, C, ph, pw]");
  OAR_ENFORCE(c.inputs[0].dims == Dims{in[0]}, ErrorCode::kInvalidArgument,
              op_name(c) << ": boxes_num must have shape [" << in[0] << "]");
  c.outputs[0] = {c.inputs[2].dtype, in};
}

// ---- deform_im2col -------------------------------------------------------------------------------
// deform_im2col(x [N, C, H, W], offset [N, 2*dg*kh*kw, Ho, Wo], mask [N, dg*kh*kw, Ho, Wo])
//   -> columns [N, C*kh*kw, Ho*Wo]: row c*kh*kw + i*kw + j holds x[c] sampled bilinearly at
//   (ho*sh - ph + i*dh + offset_h, wo*sw - pw + j*dw + offset_w), times the mask. Offsets of
//   deformable group g (channels g*C/dg ...) are channels 2*(g*kh*kw + i*kw + j) (h) and + 1 (w).
struct DeformGeom {
  std::vector<int64_t> k, s, p, d;
  int64_t dg, ho, wo;
};
DeformGeom deform_geom(InferContext& c, const Dims& x) {
  const char* op = op_name(c);
  DeformGeom g;
  auto two = [&](const char* name, int64_t fill, int64_t lo) {
    std::vector<int64_t> v = c.attrs->get_ints(name);
    if (v.empty()) v.assign(2, fill);
    OAR_ENFORCE(v.size() == 2 && v[0] >= lo && v[1] >= lo, ErrorCode::kInvalidArgument,
                op << ": " << name << " must be two values >= " << lo);
    c.attrs->set(name, v);
    return v;
  };
  g.k = two("kernel_sizes", 0, 1);
  g.s = two("strides", 1, 1);
  g.p = two("paddings", 0, 0);
  g.d = two("dilations", 1, 1);
  g.dg = c.attrs->get_int("deformable_groups");
  OAR_ENFORCE(
      g.dg >= 1 && x[1] % g.dg == 0, ErrorCode::kInvalidArgument,
      op << ": deformable_groups (" << g.dg << ") must be >= 1 and divide the channels (" << x[1] << ")");
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    int64_t span = checked_add(checked_mul(g.d[i], g.k[i] - 1, op, "the dilated kernel"), 1, op);
    int64_t padded = checked_add(x[2 + i], checked_mul(g.p[i], 2, op, "the padding"), op, "the padded size");
    OAR_ENFORCE(padded >= span, ErrorCode::kInvalidArgument,
                op << ": spatial dim " << i << " of size " << x[2 + i] << " (padded " << padded
                   << ") is smaller than the dilated kernel (" << span << ")");
    out[i] = (padded - span) / g.s[i] + 1;
  }
  g.ho = out[0];
  g.wo = out[1];
  return g;
}
void infer_deform_im2col(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_same_dtype(c, 0, 2);
  const Dims& x = c.inputs[0].dims;
  OAR_ENFORCE(x.size() == 4, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 4-D [N, C, H, W], got shape " << x.to_string());
  DeformGeom g = deform_geom(c, x);
  const char* op = op_name(c);
  int64_t kk = checked_mul(g.k[0], g.k[1], op, "the kernel area");
  Dims off{x[0], checked_mul(2 * g.dg, kk, op, "offset channels"), g.ho, g.wo};
  Dims msk{x[0], g.dg * kk, g.ho, g.wo};
  OAR_ENFORCE(c.inputs[1].dims == off, ErrorCode::kInvalidArgument,
              op << ": offset must have shape " << off.to_string() << " (2 * deformable_groups * kh * kw "
                 << "channels at the output size), got " << c.inputs[1].dims.to_string());
  OAR_ENFORCE(c.inputs[2].dims == msk, ErrorCode::kInvalidArgument,
              op << ": mask must have shape " << msk.to_string() << ", got " << c.inputs[2].dims.to_string());
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0], checked_mul(x[1], kk, op, "the columns"),
                                          checked_mul(g.ho, g.wo, op, "the output size")}};
}
void infer_deform_im2col_grad(InferContext& c) {
  InferContext f = c;
  infer_deform_im2col(f);
  OAR_ENFORCE(c.inputs[3].dims == f.outputs[0].dims && c.inputs[3].dtype == c.inputs[0].dtype,
              ErrorCode::kInvalidArgument,
              op_name(c) << ": grad_out shape " << c.inputs[3].dims.to_string()
                         << " != " << f.outputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[1];
  c.outputs[2] = c.inputs[2];
}
std::vector<AttrDef> deform_attrs() {
  return {req_ints("kernel_sizes"), ints_attr("strides"), ints_attr("paddings"), ints_attr("dilations"),
          int_attr("deformable_groups", 1)};
}

// ---- nms ---------------------------------------------------------------------------------------
// nms(boxes [N, 4]) -> keep bool [N]: greedy in the given order, a box is dropped when its IoU with
// a kept earlier box exceeds iou_threshold.
void infer_nms(InferContext& c) {
  require_floating(c, 0);
  const Dims& b = c.inputs[0].dims;
  OAR_ENFORCE(b.size() == 2 && b[1] == 4, ErrorCode::kInvalidArgument,
              "nms: boxes must have shape [num_boxes, 4], got " << b.to_string());
  c.outputs[0] = {DType::kBool, Dims{b[0]}};
}

// ---- ctc_loss ----------------------------------------------------------------------------------
// ctc_loss(log_probs [T, B, C], labels [B, L], input_lengths [B], label_lengths [B]) -> loss [B],
// -log of the summed probability of every alignment (the alpha recursion in log space). log_probs
// are used as given (the front end applies log_softmax, as Paddle's warpctc applies softmax).
void infer_ctc(InferContext& c) {
  require_floating(c, 0);
  for (int i = 1; i < 4; ++i) require_index(c, i);
  const Dims &lp = c.inputs[0].dims, &lab = c.inputs[1].dims;
  OAR_ENFORCE(
      lp.size() == 3, ErrorCode::kInvalidArgument,
      "ctc_loss: log_probs must be 3-D [max_logit_length, batch, classes], got shape " << lp.to_string());
  OAR_ENFORCE(
      lab.size() == 2 && lab[0] == lp[1], ErrorCode::kInvalidArgument,
      "ctc_loss: labels must have shape [" << lp[1] << ", max_label_length], got " << lab.to_string());
  OAR_ENFORCE(c.inputs[2].dims == Dims{lp[1]} && c.inputs[3].dims == Dims{lp[1]}, ErrorCode::kInvalidArgument,
              "ctc_loss: input_lengths and label_lengths must have shape ["
                  << lp[1] << "], got " << c.inputs[2].dims.to_string() << " and "
                  << c.inputs[3].dims.to_string());
  int64_t blank = c.attrs->get_int("blank");
  OAR_ENFORCE(blank >= 0 && blank < lp[2], ErrorCode::kInvalidArgument,
              "ctc_loss: blank must be in [0, " << lp[2] << "), got " << blank);
  c.outputs[0] = {c.inputs[0].dtype, Dims{lp[1]}};
}
void infer_ctc_grad(InferContext& c) {
  InferContext f = c;
  infer_ctc(f);
  OAR_ENFORCE(c.inputs[4].dims == f.outputs[0].dims && c.inputs[4].dtype == c.inputs[0].dtype,
              ErrorCode::kInvalidArgument,
              "ctc_loss_grad: grad_loss must have log_probs' dtype and shape [batch]");
  c.outputs[0] = c.inputs[0];
}

// ---- hsigmoid_loss --------------------------------------------------------------------------------
// hsigmoid_loss(x [N, D], weight [K, D], bias [K, 1], path_table [N, L], path_code [N, L]) -> out [N, 1],
// pre_out [N, L]: row i's path is path_table[i, j] until the first negative entry; pre = clip(w[node] . x
// + b[node], -40, 40) and out = sum over the path of softplus(pre) - code * pre, plus log 2 for each
// position past the path (as Paddle, whose padded pre-activations are 0). pre_out keeps the clipped
// pre-activations (0 past the path) for the gradient.
void infer_hsigmoid(InferContext& c) {
  require_floating(c, 0);
  require_same_dtype(c, 0, 1);
  require_same_dtype(c, 0, 2);
  require_index(c, 3);
  require_index(c, 4);
  const Dims &x = c.inputs[0].dims, &w = c.inputs[1].dims, &b = c.inputs[2].dims, &t = c.inputs[3].dims;
  OAR_ENFORCE(x.size() == 2, ErrorCode::kInvalidArgument,
              "hsigmoid_loss: input must be 2-D [N, D], got shape " << x.to_string());
  OAR_ENFORCE(w.size() == 2 && w[1] == x[1], ErrorCode::kInvalidArgument,
              "hsigmoid_loss: weight must be [num_nodes, " << x[1] << "], got " << w.to_string());
  OAR_ENFORCE(b == (Dims{w[0], 1}), ErrorCode::kInvalidArgument,
              "hsigmoid_loss: bias must be [" << w[0] << ", 1], got " << b.to_string());
  OAR_ENFORCE(t.size() == 2 && t[0] == x[0] && c.inputs[4].dims == t, ErrorCode::kInvalidArgument,
              "hsigmoid_loss: path_table and path_code must both be ["
                  << x[0] << ", L], got " << t.to_string() << " and " << c.inputs[4].dims.to_string());
  c.outputs[0] = {c.inputs[0].dtype, Dims{x[0], 1}};
  c.outputs[1] = {c.inputs[0].dtype, t};
}
// hsigmoid_loss_grad(x, weight, path_table, path_code, pre_out, grad_out [N, 1], grad_pre [N, L])
//   -> dx, dweight, dbias.
void infer_hsigmoid_grad(InferContext& c) {
  require_floating(c, 0);
  const Dims &x = c.inputs[0].dims, &w = c.inputs[1].dims;
  OAR_ENFORCE(x.size() == 2 && w.size() == 2 && w[1] == x[1] && c.inputs[4].dims == c.inputs[2].dims &&
                  c.inputs[5].dims == (Dims{x[0], 1}) && c.inputs[6].dims == c.inputs[2].dims,
              ErrorCode::kInvalidArgument, "hsigmoid_loss_grad: inputs do not fit x " << x.to_string());
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[1];
  c.outputs[2] = {c.inputs[1].dtype, Dims{w[0], 1}};
}

// ---- gradient rules -----------------------------------------------------------------------------
Attrs roi_attrs(const Attrs& a) {
  Attrs b{{"pooled_height", a.get_int("pooled_height")},
          {"pooled_width", a.get_int("pooled_width")},
          {"spatial_scale", a.get_float("spatial_scale")}};
  for (const char* n : {"sampling_ratio", "aligned", "output_channels"})
    if (a.find(n)) b.set(n, a.get_int(n));
  return b;
}
std::vector<int64_t> dims_vec(const Dims& d) { return std::vector<int64_t>(d.data(), d.data() + d.size()); }

// roi_align and psroi_pool are linear in x: dx = <op>_grad(boxes, boxes_num, g); the grad op's own
// gradient is the forward op again.
std::vector<Tensor> roi_linear_grad(const GradContext& c) {
  Attrs b = roi_attrs(c.attrs);
  b.set("input_size", dims_vec(in_dims(c, 0)));
  std::string g = std::string(c.op->name) + "_grad";
  return {call_op(g, {c.inputs[1], c.inputs[2], g0(c)}, b)[0], Tensor(), Tensor()};
}
std::vector<Tensor> roi_linear_grad_grad(const GradContext& c) {
  std::string fwd(c.op->name);
  fwd.resize(fwd.size() - 5);  // drop "_grad"
  return {Tensor(), Tensor(), call_op(fwd, {g0(c), c.inputs[0], c.inputs[1]}, roi_attrs(c.attrs))[0]};
}
std::vector<Tensor> roi_pool_grad_rule(const GradContext& c) {
  Attrs b = roi_attrs(c.attrs);
  b.set("input_size", dims_vec(in_dims(c, 0)));
  return {call_op(OAR_OP("roi_pool_grad"), {c.inputs[2], c.outputs[1], g0(c)}, b)[0], Tensor(), Tensor()};
}

Attrs deform_of(const Attrs& a) {
  return Attrs{{"kernel_sizes", a.get_ints("kernel_sizes")},
               {"strides", a.get_ints("strides")},
               {"paddings", a.get_ints("paddings")},
               {"dilations", a.get_ints("dilations")},
               {"deformable_groups", a.get_int("deformable_groups")}};
}
std::vector<Tensor> deform_im2col_grad_rule(const GradContext& c) {
  std::vector<Tensor> r = call_op(OAR_OP("deform_im2col_grad"),
                                  {c.inputs[0], c.inputs[1], c.inputs[2], g0(c)}, deform_of(c.attrs));
  return {c.needs_grad[0] ? r[0] : Tensor(), c.needs_grad[1] ? r[1] : Tensor(),
          c.needs_grad[2] ? r[2] : Tensor()};
}

std::vector<Tensor> ctc_grad_rule(const GradContext& c) {
  Attrs b{{"blank", c.attrs.get_int("blank")}, {"norm_by_times", c.attrs.get_int("norm_by_times")}};
  return {call_op(OAR_OP("ctc_loss_grad"), {c.inputs[0], c.inputs[1], c.inputs[2], c.inputs[3], g0(c)}, b)[0],
          Tensor(), Tensor(), Tensor()};
}

// Both outputs carry gradients: out's through (sigmoid(pre) - code), pre_out's directly; an absent one
// is passed as zeros.
std::vector<Tensor> hsigmoid_grad_rule(const GradContext& c) {
  const Tensor& pre = c.outputs[1];
  Tensor g_out = c.grad_outputs[0].defined() ? c.grad_outputs[0]
                                             : ops::full(c.outputs[0].dims(), 0.0, pre.dtype(), pre.place());
  Tensor g_pre =
      c.grad_outputs[1].defined() ? c.grad_outputs[1] : ops::full(pre.dims(), 0.0, pre.dtype(), pre.place());
  std::vector<Tensor> r =
      call_op(OAR_OP("hsigmoid_loss_grad"),
              {c.inputs[0], c.inputs[1], c.inputs[3], c.inputs[4], pre, g_out, g_pre}, {});
  return {c.needs_grad[0] ? r[0] : Tensor(), c.needs_grad[1] ? r[1] : Tensor(),
          c.needs_grad[2] ? r[2] : Tensor(), Tensor(), Tensor()};
}

std::vector<AttrDef> roi_attr_defs() {
  return {req_int("pooled_height"), req_int("pooled_width"), float_attr("spatial_scale", 1.0)};
}
std::vector<AttrDef> with(std::vector<AttrDef> a, std::vector<AttrDef> more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

}  // namespace

void register_vision_ops(OpRegistry& r) {
  auto align = with(roi_attr_defs(), {int_attr("sampling_ratio", -1), int_attr("aligned", 1)});
  def(r, "roi_align", {"x", "boxes", "boxes_num"}, align, infer_roi);
  def(r, "roi_align_grad", {"boxes", "boxes_num", "grad_out"}, with(align, {req_ints("input_size")}),
      infer_roi_grad, 2);
  def(r, "roi_pool", {"x", "boxes", "boxes_num"}, roi_attr_defs(), infer_roi).outputs = {"out", "argmax"};
  def(r, "roi_pool_grad", {"boxes_num", "argmax", "grad_out"},
      with(roi_attr_defs(), {req_ints("input_size")}), infer_roi_pool_grad, 2);
  auto ps = with(roi_attr_defs(), {req_int("output_channels")});
  def(r, "psroi_pool", {"x", "boxes", "boxes_num"}, ps, infer_roi);
  def(r, "psroi_pool_grad", {"boxes", "boxes_num", "grad_out"}, with(ps, {req_ints("input_size")}),
      infer_roi_grad, 2);
  def(r, "deform_im2col", {"x", "offset", "mask"}, deform_attrs(), infer_deform_im2col);
  def(r, "deform_im2col_grad", {"x", "offset", "mask", "grad_out"}, deform_attrs(), infer_deform_im2col_grad)
      .outputs = {"grad_x", "grad_offset", "grad_mask"};
  def(r, "nms", {"boxes"}, {float_attr("iou_threshold", 0.3)}, infer_nms).differentiable = false;
  def(r, "hsigmoid_loss", {"x", "weight", "bias", "path_table", "path_code"}, {}, infer_hsigmoid).outputs = {
      "out", "pre_out"};
  def(r, "hsigmoid_loss_grad", {"x", "weight", "path_table", "path_code", "pre_out", "grad_out", "grad_pre"},
      {}, infer_hsigmoid_grad)
      .outputs = {"grad_x", "grad_weight", "grad_bias"};
  def(r, "ctc_loss", {"log_probs", "labels", "input_lengths", "label_lengths"},
      {int_attr("blank", 0), int_attr("norm_by_times", 0)}, infer_ctc);
  def(r, "ctc_loss_grad", {"log_probs", "labels", "input_lengths", "label_lengths", "grad_loss"},
      {int_attr("blank", 0), int_attr("norm_by_times", 0)}, infer_ctc_grad);
}

void register_vision_grads(OpRegistry& r) {
  constexpr uint32_t kBoxes = 6, kAll3 = 7, kGradBoxes = 3, kCtc = 15;
  set_grad(r, "roi_align", roi_linear_grad, kBoxes, false);
  set_grad(r, "roi_align_grad", roi_linear_grad_grad, kGradBoxes, false);
  set_grad(r, "psroi_pool", roi_linear_grad, kBoxes, false);
  set_grad(r, "psroi_pool_grad", roi_linear_grad_grad, kGradBoxes, false);
  set_grad(r, "roi_pool", roi_pool_grad_rule, 4, true);
  set_grad(r, "deform_im2col", deform_im2col_grad_rule, kAll3, false);
  set_grad(r, "ctc_loss", ctc_grad_rule, kCtc, false);
  set_grad(r, "hsigmoid_loss", hsigmoid_grad_rule, 0x1b, true);  // x, weight, path_table, path_code
}

// Sample inputs for the op suite. Boxes are float64 whatever the dtype under test (they carry no
// gradient), and boxes_num is a constant that adds up to the number of boxes.
void register_vision_samples(OpRegistry& r) {
  using namespace sample;
  auto boxes = [](int64_t n, double lo, double hi) { return fixed(real({n, 4}, lo, hi), DType::kFloat64); };
  auto count = [](int64_t images, int64_t each) { return index({images}, each, each, DType::kInt32); };
  auto A = [](int64_t ph, int64_t pw, double scale, int64_t ratio, int64_t aligned) {
    return AttrList{{"pooled_height", ph},
                    {"pooled_width", pw},
                    {"spatial_scale", scale},
                    {"sampling_ratio", ratio},
                    {"aligned", aligned}};
  };
  add(r, "roi_align",
      {S("aligned, adaptive grid", {real({2, 3, 8, 8}), boxes(4, 0, 7), count(2, 2)}, A(2, 2, 1.0, -1, 1)),
       S("legacy, ratio 2, scaled", {real({1, 2, 10, 9}), boxes(3, 0, 16), count(1, 3)}, A(3, 2, 0.5, 2, 0)),
       S("boxes outside", {real({1, 2, 5, 5}), boxes(2, -3, 8), count(1, 2)}, A(2, 3, 1.0, 1, 1)),
       S("transposed x", {transposed(real({1, 2, 6, 6})), boxes(2, 0, 5), count(1, 2)},
         A(2, 2, 1.0, -1, 1))});
  auto AG = [&](Shape in, int64_t ph, int64_t pw) {
    AttrList a = A(ph, pw, 1.0, -1, 1);
    a.emplace_back("input_size", in);
    return a;
  };
  add(r, "roi_align_grad",
      {S("2 images", {boxes(4, 0, 7), count(2, 2), real({4, 3, 2, 2})}, AG({2, 3, 8, 8}, 2, 2))});
  auto P = [](int64_t ph, int64_t pw, double scale) {
    return AttrList{{"pooled_height", ph}, {"pooled_width", pw}, {"spatial_scale", scale}};
  };
  add(r, "roi_pool",
      {S("2 images", {real({2, 3, 8, 8}), boxes(4, 0, 7), count(2, 2)}, P(2, 2, 1.0)),
       S("scaled, outside", {real({1, 2, 6, 7}), boxes(3, -4, 14), count(1, 3)}, P(3, 2, 0.5))});
  add(r, "roi_pool_grad", {S("2x2", {count(2, 1), index({2, 3, 2, 2}, 0, 63), real({2, 3, 2, 2})}, [&] {
        AttrList a = P(2, 2, 1.0);
        a.emplace_back("input_size", Shape{2, 3, 8, 8});
        return a;
      }())});
  auto PS = [](int64_t oc, int64_t ph, int64_t pw, double scale) {
    return AttrList{
        {"output_channels", oc}, {"pooled_height", ph}, {"pooled_width", pw}, {"spatial_scale", scale}};
  };
  add(r, "psroi_pool",
      {S("2 images", {real({2, 8, 6, 6}), boxes(4, 0, 5), count(2, 2)}, PS(2, 2, 2, 1.0)),
       S("scaled", {real({1, 6, 8, 8}), boxes(2, 0, 14), count(1, 2)}, PS(1, 3, 2, 0.5))});
  add(r, "psroi_pool_grad", {S("2 images", {boxes(4, 0, 5), count(2, 2), real({4, 2, 2, 2})}, [&] {
        AttrList a = PS(2, 2, 2, 1.0);
        a.emplace_back("input_size", Shape{2, 8, 6, 6});
        return a;
      }())});
  auto D = [](Shape k, Shape s, Shape p, Shape d, int64_t dg) {
    return AttrList{
        {"kernel_sizes", k}, {"strides", s}, {"paddings", p}, {"dilations", d}, {"deformable_groups", dg}};
  };
  add(r, "deform_im2col",
      {S("3x3 padded", {real({2, 2, 5, 5}), real({2, 18, 5, 5}, -1.5, 1.5), real({2, 9, 5, 5}, 0, 1)},
         D({3, 3}, {1, 1}, {1, 1}, {1, 1}, 1)),
       S("2 groups, strided, dilated",
         {real({1, 4, 7, 6}), real({1, 16, 3, 2}, -2, 2), real({1, 8, 3, 2}, 0, 1)},
         D({2, 2}, {2, 2}, {0, 0}, {2, 2}, 2))});
  add(r, "deform_im2col_grad",
      {S("3x3",
         {real({1, 2, 4, 4}), real({1, 18, 4, 4}, -1.5, 1.5), real({1, 9, 4, 4}, 0, 1), real({1, 18, 16})},
         D({3, 3}, {1, 1}, {1, 1}, {1, 1}, 1))});
  add(r, "nms",
      {S("20 boxes", {real({20, 4}, 0, 10)}, {{"iou_threshold", 0.3}}), S("empty", {real({0, 4})})});
  // Lengths: inputs of 5..6 steps, labels of 1..2 ids in [1, 4] (never the blank 0), so every
  // label has an alignment.
  // Paths of 1..3 nodes of 5 (a -1 ends a path early); bits 0/1.
  add(r, "hsigmoid_loss",
      {S("full paths", {real({4, 3}), real({5, 3}), real({5, 1}), index({4, 3}, 0, 4), index({4, 3}, 0, 1)}),
       S("short paths",
         {real({3, 2}), real({4, 2}), real({4, 1}), index({3, 2}, -1, 3), index({3, 2}, 0, 1)})});
  add(r, "hsigmoid_loss_grad",
      {S("full paths", {real({4, 3}), real({5, 3}), index({4, 3}, 0, 4), index({4, 3}, 0, 1), real({4, 3}),
                        real({4, 1}), real({4, 3})})});
  add(r, "ctc_loss",
      {S("batch 3", {real({6, 3, 5}, -3, 0), index({3, 2}, 1, 4), index({3}, 5, 6), index({3}, 1, 2)}),
       S("blank last, int32",
         {real({5, 2, 4}, -3, 0), index({2, 3}, 0, 2, DType::kInt32), index({2}, 5, 5, DType::kInt32),
          index({2}, 0, 2, DType::kInt32)},
         {{"blank", int64_t{3}}})});
  add(r, "ctc_loss_grad",
      {S("batch 3",
         {real({6, 3, 5}, -3, 0), index({3, 2}, 1, 4), index({3}, 5, 6), index({3}, 1, 2), real({3})}),
       S("norm by times",
         {real({6, 2, 5}, -3, 0), index({2, 2}, 1, 4), index({2}, 4, 6), index({2}, 1, 2), real({2})},
         {{"norm_by_times", int64_t{1}}})});
}

}  // namespace oar
