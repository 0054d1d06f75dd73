// Fused optimizer updates (oar.optimizer; docs/optimizer.md). Each op updates parameters and their
// accumulators in place in one kernel and has no outputs and no gradient rule.
//
// "merged_<opt>" ops take one flat list of tensors made of equal blocks, one block per role:
// [params..., grads..., accumulator 1..., ...], n tensors per block, so one dispatch updates a whole
// parameter group. The per-parameter ops ("sgd", "momentum", "adam") are the same update for one
// parameter with named inputs. Every block but the gradients is written (OpDef::inplace_mask).
//
// Attributes that may differ per parameter (learning rate with its multipliers, L2 coefficients,
// decoupled weight decay) are float lists with one value for all parameters or one per parameter.
// The gradient used is grad_scale * grad + l2_coeff * param: "grad_scale" is global-norm gradient
// clipping folded into the update, "l2_coeff" Paddle's L2Decay regularizer, fused.
// "merged_sum_squares" (an ordinary op) gives the squared global norm of a list for gradient clipping.
#include <oar/core/error.h>

#include <cstring>

#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;

// The inputs of one update, block by block.
enum Role { kParam, kGrad, kState, kScalar, kOptional };
struct Layout {
  const char* merged;  // the multi-tensor op
  const char* single;  // the per-parameter op, or nullptr
  std::vector<std::pair<const char*, Role>> blocks;
  std::vector<AttrDef> attrs;
};

std::vector<AttrDef> with_common(std::vector<AttrDef> attrs) {
  attrs.insert(attrs.begin(), AttrDef{"learning_rate", AttrType::kFloats, true, std::vector<double>{}});
  attrs.push_back(AttrDef{"l2_coeff", AttrType::kFloats, false, std::vector<double>{}});
  attrs.push_back(AttrDef{"grad_scale", AttrType::kFloats, false, std::vector<double>{}});
  return attrs;
}

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> defs = {
      {"merged_sgd", "sgd", {{"param", kParam}, {"grad", kGrad}}, with_common({})},
      {"merged_momentum",
       "momentum",
       {{"param", kParam}, {"grad", kGrad}, {"velocity", kState}},
       with_common({float_attr("mu", 0.9), int_attr("use_nesterov", 0), float_attr("rescale_grad", 1.0)})},
      // Adam and AdamW: coeff (per parameter) is AdamW's decoupled weight decay, 0 for Adam.
      // moment2_max is read and written only when amsgrad is set (otherwise any tensor will do).
      {"merged_adam",
       "adam",
       {{"param", kParam},
        {"grad", kGrad},
        {"moment1", kState},
        {"moment2", kState},
        {"beta1_pow", kScalar},
        {"beta2_pow", kScalar},
        {"moment2_max", kOptional}},
       with_common({float_attr("beta1", 0.9), float_attr("beta2", 0.999), float_attr("epsilon", 1e-8),
                    AttrDef{"coeff", AttrType::kFloats, false, std::vector<double>{}},
                    int_attr("amsgrad", 0)})},
      {"merged_adamax",
       nullptr,
       {{"param", kParam}, {"grad", kGrad}, {"moment", kState}, {"inf_norm", kState}, {"beta1_pow", kScalar}},
       with_common({float_attr("beta1", 0.9), float_attr("beta2", 0.999), float_attr("epsilon", 1e-8)})},
      {"merged_adagrad",
       nullptr,
       {{"param", kParam}, {"grad", kGrad}, {"moment", kState}},
       with_common({float_attr("epsilon", 1e-6)})},
      {"merged_adadelta",
       nullptr,
       {{"param", kParam}, {"grad", kGrad}, {"avg_squared_grad", kState}, {"avg_squared_update", kState}},
       with_common({float_attr("rho", 0.95), float_attr("epsilon", 1e-6)})},
      {"merged_rmsprop",
       nullptr,
       {{"param", kParam},
        {"grad", kGrad},
        {"mean_square", kState},
        {"mean_grad", kState},
        {"moment", kState}},
       with_common({float_attr("rho", 0.95), float_attr("epsilon", 1e-6), float_attr("momentum", 0.0),
                    int_attr("centered", 0)})},
      // lamb_weight_decay per parameter (0 for the excluded ones).
      {"merged_lamb",
       nullptr,
       {{"param", kParam},
        {"grad", kGrad},
        {"moment1", kState},
        {"moment2", kState},
        {"beta1_pow", kScalar},
        {"beta2_pow", kScalar}},
       with_common({AttrDef{"weight_decay", AttrType::kFloats, false, std::vector<double>{}},
                    float_attr("beta1", 0.9), float_attr("beta2", 0.999), float_attr("epsilon", 1e-6),
                    int_attr("always_adapt", 0)})},
  };
  return defs;
}

const Layout& layout_of(const InferContext& c) {
  for (const Layout& l : layouts())
    if (!std::strcmp(c.op->name, l.merged) || (l.single && !std::strcmp(c.op->name, l.single))) return l;
  OAR_THROW(ErrorCode::kInternal, op_name(c) << ": no optimizer layout");
}

// A per-parameter float list: empty (default), one value, or one per parameter.
void check_list(const InferContext& c, const char* attr, int64_t n, bool required) {
  const auto& v = c.attrs->get_floats(attr);
  OAR_ENFORCE((!required && v.empty()) || v.size() == 1 || static_cast<int64_t>(v.size()) == n,
              ErrorCode::kInvalidArgument,
              op_name(c) << ": attribute '" << attr << "' needs 1 or " << n
                         << " values (one per parameter), got " << v.size());
}

// Every block has n tensors; parameters are floating; gradients and states match their parameter;
// scalar accumulators (beta powers) are one float32/float64 element.
void infer_optim(InferContext& c) {
  const Layout& l = layout_of(c);
  const int32_t blocks = static_cast<int32_t>(l.blocks.size());
  OAR_ENFORCE(
      c.num_inputs % blocks == 0, ErrorCode::kInvalidArgument,
      op_name(c) << ": expects " << blocks << " equal lists of tensors (" <<
          [&] {
            std::string s;
            for (const auto& b : l.blocks) s += (s.empty() ? "" : ", ") + std::string(b.first);
            return s;
          }() << "), got "
                 << c.num_inputs << " tensors");
  const int32_t n = c.num_inputs / blocks;
  for (int32_t k = 0; k < n; ++k) {
    const TensorMeta& p = c.inputs[k];
    require_floating(c, k);
    for (int32_t b = 1; b < blocks; ++b) {
      const TensorMeta& t = c.inputs[b * n + k];
      const char* role = l.blocks[b].first;
      switch (l.blocks[b].second) {
        case kGrad:
        case kState:
          OAR_ENFORCE(t.dtype == p.dtype && t.dims == p.dims, ErrorCode::kInvalidArgument,
                      op_name(c) << ": " << role << "[" << k << "] is " << dtype_name(t.dtype)
                                 << t.dims.to_string() << " but param[" << k << "] is " << dtype_name(p.dtype)
                                 << p.dims.to_string());
          break;
        case kScalar:
          OAR_ENFORCE(t.dims.numel() == 1 && (t.dtype == DType::kFloat32 || t.dtype == DType::kFloat64),
                      ErrorCode::kInvalidArgument,
                      op_name(c) << ": " << role << "[" << k << "] must be one float32/float64 element, got "
                                 << dtype_name(t.dtype) << t.dims.to_string());
          break;
        default:
          break;
      }
    }
  }
  check_list(c, "learning_rate", n, true);
  check_list(c, "l2_coeff", n, false);
  check_list(c, "grad_scale", n, false);
  for (const char* a : {"coeff", "weight_decay"})
    if (c.attrs->find(a)) check_list(c, a, n, false);
  if (c.attrs->find("amsgrad") && c.attrs->get_int("amsgrad"))
    for (int32_t k = 0; k < n; ++k) {
      const TensorMeta& t = c.inputs[6 * n + k];
      OAR_ENFORCE(t.dtype == c.inputs[k].dtype && t.dims == c.inputs[k].dims, ErrorCode::kInvalidArgument,
                  op_name(c) << ": amsgrad needs moment2_max[" << k << "] shaped like param[" << k << "]");
    }
}

// merged_sum_squares: sum of x*x over every element of every input (gradient clipping's global norm);
// a 0-d float32 result (float64 for float64 inputs).
void infer_sum_squares(InferContext& c) {
  for (int32_t k = 0; k < c.num_inputs; ++k) {
    require_floating(c, k);
    require_same_dtype(c, 0, k);
  }
  c.outputs[0] = {c.inputs[0].dtype == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32, Dims()};
}

// ---- loss scaling (oar.amp.GradScaler; Paddle's op names) -----------------------------------------------
// check_finite_and_unscale(x..., scale): every x (floating, any mix of dtypes) is multiplied by 1/scale in
// place, in one pass that also looks for inf/NaN; found_inf (bool[1]) says whether any was found.
void infer_check_finite(InferContext& c) {
  OAR_ENFORCE(
      c.num_inputs >= 2, ErrorCode::kInvalidArgument,
      op_name(c) << ": expects the tensors to unscale then the scale, got " << c.num_inputs << " input(s)");
  const TensorMeta& s = c.inputs[c.num_inputs - 1];
  OAR_ENFORCE(s.dims.numel() == 1 && (s.dtype == DType::kFloat32 || s.dtype == DType::kFloat64),
              ErrorCode::kInvalidArgument,
              op_name(c) << ": scale must be one float32 (or float64) element, got " << dtype_name(s.dtype)
                         << s.dims.to_string());
  for (int32_t k = 0; k + 1 < c.num_inputs; ++k) require_floating(c, k);
  c.outputs[0] = {DType::kBool, Dims({1})};
}

// update_loss_scaling(found_inf, loss_scaling, good_steps, bad_steps), all updated in place as Paddle's
// kernel: after decr_every_n_nan_or_inf steps with inf the scale is multiplied by decr_ratio (not below
// 1), after incr_every_n_steps finite steps by incr_ratio (kept when that overflows).
void infer_update_loss_scaling(InferContext& c) {
  auto one = [&](int i, DType d, const char* what, bool or_f64 = false) {
    const TensorMeta& t = c.inputs[i];
    OAR_ENFORCE(t.dims.numel() == 1 && (t.dtype == d || (or_f64 && t.dtype == DType::kFloat64)),
                ErrorCode::kInvalidArgument,
                op_name(c) << ": " << what << " must be one " << dtype_name(d)
                           << (or_f64 ? " (or float64)" : "") << " element, got " << dtype_name(t.dtype)
                           << t.dims.to_string());
  };
  one(0, DType::kBool, "found_inf");
  one(1, DType::kFloat32, "loss_scaling", true);
  one(2, DType::kInt32, "good_steps");
  one(3, DType::kInt32, "bad_steps");
  for (const char* a : {"incr_every_n_steps", "decr_every_n_nan_or_inf"})
    OAR_ENFORCE(c.attrs->get_int(a) >= 1, ErrorCode::kInvalidArgument,
                op_name(c) << ": " << a << " must be >= 1, got " << c.attrs->get_int(a));
  OAR_ENFORCE(c.attrs->get_float("incr_ratio") >= 1.0, ErrorCode::kInvalidArgument,
              op_name(c) << ": incr_ratio must be >= 1, got " << c.attrs->get_float("incr_ratio"));
  const double d = c.attrs->get_float("decr_ratio");
  OAR_ENFORCE(d > 0.0 && d < 1.0, ErrorCode::kInvalidArgument,
              op_name(c) << ": decr_ratio must be in (0, 1), got " << d);
}

}  // namespace

void register_optim_ops(OpRegistry& r) {
  def(r, "merged_sum_squares", {"x"}, {}, infer_sum_squares, 0, /*variadic=*/true);
  {
    OpDef& o = def(r, "check_finite_and_unscale", {"x"}, {}, infer_check_finite, 0, /*variadic=*/true);
    o.outputs = {"found_inf"};
    o.inplace_mask = 1;  // the x block; the scale (the tail) is only read
    o.inplace_groups = 1;
    o.inplace_tail = 1;
    o.differentiable = false;
    OpDef& u = def(r, "update_loss_scaling", {"found_inf", "loss_scaling", "good_steps", "bad_steps"},
                   {int_attr("incr_every_n_steps", 1000), int_attr("decr_every_n_nan_or_inf", 2),
                    float_attr("incr_ratio", 2.0), float_attr("decr_ratio", 0.5)},
                   infer_update_loss_scaling, /*dispatch_input=*/1);
    u.outputs.clear();
    u.inplace_mask = 0b1110;
    u.differentiable = false;
  }
  for (const Layout& l : layouts()) {
    uint32_t mask = 0;
    for (size_t b = 0; b < l.blocks.size(); ++b)
      if (l.blocks[b].second != kGrad) mask |= 1u << b;
    const auto n_blocks = static_cast<int32_t>(l.blocks.size());
    OpDef& m = def(r, l.merged, {l.blocks[0].first}, l.attrs, infer_optim, 0, /*variadic=*/true);
    m.outputs.clear();
    m.inplace_mask = mask;
    m.inplace_groups = n_blocks;
    if (l.single) {
      std::vector<const char*> names;
      for (const auto& b : l.blocks) names.push_back(b.first);
      OpDef& s = def(r, l.single, names, l.attrs, infer_optim);
      s.outputs.clear();
      s.inplace_mask = mask;  // one input per block
    }
  }
}

// Sample inputs for the op suite (op_sample.h), made from each optimizer's layout: states are
// non-negative where they are squares, the beta powers are one float32 element.
void register_optim_samples(OpRegistry& r) {
  using namespace sample;
  add(r, "merged_sum_squares",
      {S("two", {real({3, 4}), real({5})}), S("one 0-d", {real({})}),
       S("views", {transposed(real({4, 3})), flipped(real({5}))})});
  for (const Layout& l : layouts()) {
    auto inputs = [&](std::vector<Shape> shapes) {
      std::vector<SampleInput> v;
      for (const auto& b : l.blocks)
        for (const Shape& s : shapes) {
          if (b.second == kScalar)
            v.push_back(fixed(real({1}, 0.5, 0.9), DType::kFloat32));
          else if (b.second == kParam || b.second == kGrad)
            v.push_back(real(s, -1, 1));
          else
            v.push_back(real(s, 0.1, 1));
        }
      return v;
    };
    const AttrList lr = {{"learning_rate", std::vector<double>{0.1}}};
    add(r, l.merged,
        {S("two parameters", inputs({{3, 4}, {5}}), lr),
         S("per-parameter rates", inputs({{2, 3}, {4}}),
           {{"learning_rate", std::vector<double>{0.1, 0.01}}, {"l2_coeff", std::vector<double>{0.01}}})});
    if (l.single) add(r, l.single, {S("one parameter", inputs({{3, 4}}), lr)});
  }
  add(r, "check_finite_and_unscale",
      {S("finite", {real({3, 4}), real({5}), fixed(real({1}, 0.5, 4), DType::kFloat32)}),
       S("inf and NaN", {real({6}), with_specials(real({3, 4})), fixed(real({1}, 0.5, 4), DType::kFloat32)}),
       S("mixed dtypes",
         {real({4}), fixed(real({2, 3}), DType::kFloat32), fixed(real({1}, 0.5, 4), DType::kFloat32)})});
  const AttrList every2 = {{"incr_every_n_steps", int64_t{2}}, {"decr_every_n_nan_or_inf", int64_t{2}}};
  add(r, "update_loss_scaling",
      {only(S("good and bad steps",
              {mask({1}), real({1}, 1, 100), fixed(integer({1}, 0, 1), DType::kInt32),
               fixed(integer({1}, 0, 1), DType::kInt32)},
              every2),
            {DType::kFloat32, DType::kFloat64})});
  add(r, "merged_momentum",
      {S("nesterov", {real({4}), real({4}), real({4}, 0.1, 1)},
         {{"learning_rate", std::vector<double>{0.1}}, {"use_nesterov", int64_t{1}}})});
}

}  // namespace oar
