// Fusion passes on training programs in oar's native dialect (training_passes.h, docs/static.md).
#include <oar/core/dispatch.h>
#include <oar/core/op.h>
#include <oar/ir/training_passes.h>

#include <algorithm>

#include "pass_util.h"

namespace oar::ir {
namespace {

using namespace passutil;

// The dtypes the fused ops' CPU kernels implement.
bool fusable_dtype(const Block& b, const std::string& n) {
  const VarDesc* v = tensor_var(b, n);
  return v != nullptr && (v->dtype == DType::kFloat32 || v->dtype == DType::kFloat64);
}

// add(x, y) with one of them the single-use `t`: the other operand, or "".
std::string other_operand(const OpDesc& add, const std::string& t) {
  std::string x = one(add.input("x")), y = one(add.input("y"));
  if (x == t && y != t) return y;
  if (y == t && x != t) return x;
  return "";
}

// ---- matmul + bias (+ act) -------------------------------------------------------------------------

int64_t try_gemm_epilogue(Program& p, const Uses& u, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& mm = ops[i];
  if (mm.type != "oar.matmul") return 0;
  std::string x = one(mm.input("x")), w = one(mm.input("y")), t = one(mm.output("out"));
  if (x.empty() || w.empty() || t.empty() || !u.single_use_temp(t) || !fusable_dtype(b, t)) return 0;
  bool tx = attr_int_or(mm, "transpose_x", 0) != 0, ty = attr_int_or(mm, "transpose_y", 0) != 0;
  const VarDesc *xv = tensor_var(b, x), *wv = tensor_var(b, w);
  if (xv == nullptr || wv == nullptr || wv->shape.size() != 2 || xv->shape.size() < 2) return 0;
  if (tx && xv->shape.size() != 2) return 0;  // a transposed x only as one matrix
  const int64_t n = ty ? wv->shape[0] : wv->shape[1];
  size_t j = u.readers_of(t)[0];
  const OpDesc& add = ops[j];
  if (add.type != "oar.add") return 0;
  std::string bias = other_operand(add, t), a = one(add.output("out"));
  const VarDesc* bv = bias.empty() ? nullptr : tensor_var(b, bias);
  if (bv == nullptr || bv->shape != std::vector<int64_t>{n} || n < 0 || bv->dtype != wv->dtype) return 0;
  if (a.empty() || u.n_writes(a) != 1 || op_reads(add, a)) return 0;
  std::string act = "none", out = a;
  size_t last = j;
  if (u.single_use_temp(a)) {
    size_t k = u.readers_of(a)[0];
    const OpDesc& ao = ops[k];
    std::string o = one(ao.output("out"));
    bool relu = ao.type == "oar.relu", gelu = ao.type == "oar.gelu" && attr_int_or(ao, "approximate", 0) == 0;
    if ((relu || gelu) && one(ao.input("x")) == a && !o.empty() && u.n_writes(o) == 1 && !op_reads(ao, o)) {
      act = relu ? "relu" : "gelu";
      out = o;
      last = k;
    }
  }
  std::vector<size_t> gone{j};
  if (last != j) gone.push_back(last);
  if (!can_hoist(ops, i, gone, {x, w, bias}, {out})) return 0;
  OpDesc f;
  f.type = "oar.fused_gemm_epilogue";
  f.inputs = {{"x", {x}}, {"y", {w}}, {"bias", {bias}}};
  f.outputs = {{"out", {out}}};
  f.attrs = {{"trans_x", int64_t{tx}}, {"trans_y", int64_t{ty}}, {"activation", act}};
  copy_role(mm, f);
  ops[i] = std::move(f);
  erase_ops(b, gone);
  return static_cast<int64_t>(gone.size());
}

// ---- a Linear's parameter gradients (the backward of matmul + bias) ------------------------------
// db = sum(g, all axes but the last) and dW = matmul(x, g, transpose_x) (2-D x), or
// dW = matmul(reshape(x, [-1, K]), reshape(g, [-1, N]), transpose_x) (N-D x: matmul's gradient rule)
// -> fused_linear_param_grad(x, g) at the first of these ops.

// The reshape writing `n` when it is a single-use [-1, last] flattening of a variable; its source, else "".
std::string flattened_from(const Block& b, const Uses& u, const std::string& n, size_t* at) {
  if (!u.single_use_temp(n) || u.n_writes(n) != 1) return "";
  const auto& ops = b.ops();
  for (size_t k = 0; k < ops.size(); ++k) {
    if (!op_writes(ops[k], n)) continue;
    if (ops[k].type != "oar.reshape") return "";
    std::string src = one(ops[k].input("x"));
    const VarDesc *sv = src.empty() ? nullptr : tensor_var(b, src), *nv = tensor_var(b, n);
    if (sv == nullptr || nv == nullptr || sv->shape.size() < 2 || nv->shape.size() != 2 ||
        nv->shape[1] != sv->shape.back() || sv->shape.back() < 0)
      return "";
    *at = k;
    return src;
  }
  return "";
}

int64_t try_linear_param_grad(Program& p, const Uses& u, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& mm = ops[i];
  if (mm.type != "oar.matmul" || attr_int_or(mm, "transpose_x", 0) == 0 ||
      attr_int_or(mm, "transpose_y", 0) != 0)
    return 0;
  std::string a = one(mm.input("x")), c = one(mm.input("y")), dw = one(mm.output("out"));
  if (a.empty() || c.empty() || dw.empty() || u.n_writes(dw) != 1 || !fusable_dtype(b, dw)) return 0;
  const VarDesc *av = tensor_var(b, a), *cv = tensor_var(b, c);
  if (av == nullptr || cv == nullptr || av->shape.size() != 2 || cv->shape.size() != 2) return 0;
  std::vector<size_t> fused{i};
  std::string x = a, g = c;
  size_t ra = 0, rc = 0;
  std::string xs = flattened_from(b, u, a, &ra), gs = flattened_from(b, u, c, &rc);
  if (!xs.empty() && !gs.empty()) {  // N-D x: both operands flattened rows
    x = xs, g = gs;
    fused.push_back(ra);
    fused.push_back(rc);
  }
  const VarDesc *xv = tensor_var(b, x), *gv = tensor_var(b, g);
  if (xv == nullptr || gv == nullptr || xv->shape.size() != gv->shape.size()) return 0;
  // The bias gradient: sum(g) over every axis but the last, not kept.
  std::vector<int64_t> lead;
  for (size_t d = 0; d + 1 < gv->shape.size(); ++d) lead.push_back(static_cast<int64_t>(d));
  size_t s = 0;
  bool found = false;
  for (size_t k : u.readers_of(g)) {
    const OpDesc& op = ops[k];
    const Attribute* ax = op.find_attr("axis");
    const auto* axes = ax ? std::get_if<std::vector<int64_t>>(ax) : nullptr;
    if (op.type == "oar.sum" && one(op.input("x")) == g && attr_int_or(op, "keepdim", 0) == 0 && axes &&
        *axes == lead) {
      s = k;
      found = true;
      break;
    }
  }
  if (!found) return 0;
  std::string db = one(ops[s].output("out"));
  if (db.empty() || u.n_writes(db) != 1 || op_reads(ops[s], db)) return 0;
  fused.push_back(s);
  std::sort(fused.begin(), fused.end());
  const size_t first = fused.front(), last = fused.back();
  // The fused op runs at `first` (readers of the bias gradient may follow the sum, e.g. the accumulation
  // of a shared Linear's gradients): x and g must keep their values from there to the last fused op, and
  // dW / db, each written once, are then written no later than before.
  for (size_t k = first; k <= last; ++k) {
    if (std::find(fused.begin(), fused.end(), k) != fused.end()) continue;
    for (const std::string& n : {x, g, dw, db})
      if (op_writes(ops[k], n)) return 0;
  }
  OpDesc f;
  f.type = "oar.fused_linear_param_grad";
  f.inputs = {{"x", {x}}, {"dout", {g}}};
  f.outputs = {{"dweight", {dw}}, {"dbias", {db}}};
  copy_role(mm, f);
  ops[first] = std::move(f);
  fused.erase(fused.begin());
  erase_ops(b, fused);
  return static_cast<int64_t>(fused.size());
}

// ---- add + act ---------------------------------------------------------------------------------------

int64_t try_add_act(Program& p, const Uses& u, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& add = ops[i];
  if (add.type != "oar.add") return 0;
  std::string x = one(add.input("x")), y = one(add.input("y")), t = one(add.output("out"));
  if (x.empty() || y.empty() || t.empty() || !u.single_use_temp(t) || op_reads(add, t) ||
      !fusable_dtype(b, t))
    return 0;
  const VarDesc *xv = tensor_var(b, x), *yv = tensor_var(b, y), *tv = tensor_var(b, t);
  if (xv == nullptr || yv == nullptr || xv->dtype != yv->dtype) return 0;
  // y must be x's trailing shape (the kernel's broadcast); the operands of a sum may swap.
  auto trailing = [](const std::vector<int64_t>& big, const std::vector<int64_t>& small) {
    if (small.size() > big.size()) return false;
    for (int64_t d : big)
      if (d < 0) return false;
    return std::equal(small.begin(), small.end(), big.end() - static_cast<std::ptrdiff_t>(small.size()));
  };
  if (!trailing(xv->shape, yv->shape)) {
    if (!trailing(yv->shape, xv->shape)) return 0;
    std::swap(x, y);
    std::swap(xv, yv);
  }
  if (tv->shape != xv->shape) return 0;
  size_t j = u.readers_of(t)[0];
  const OpDesc& ao = ops[j];
  std::string out = one(ao.output("out"));
  std::string act;
  if (ao.type == "oar.relu" || ao.type == "oar.sigmoid" || ao.type == "oar.tanh")
    act = ao.type.substr(4);
  else if (ao.type == "oar.gelu" && attr_int_or(ao, "approximate", 0) == 0)
    act = "gelu";
  if (act.empty() || one(ao.input("x")) != t || out.empty() || u.n_writes(out) != 1 || out == t) return 0;
  if (!can_hoist(ops, i, {j}, {x, y}, {out})) return 0;
  OpDesc f;
  f.type = "oar.fused_elemwise_add_activation";
  f.inputs = {{"x", {x}}, {"y", {y}}};
  f.outputs = {{"out", {out}}};
  f.attrs = {{"activation", act}};
  copy_role(add, f);
  ops[i] = std::move(f);
  erase_ops(b, {j});
  return 1;
}

// ---- residual add + layer_norm ---------------------------------------------------------------------

int64_t try_residual_layer_norm(Program& p, const Uses& u, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& add = ops[i];
  if (add.type != "oar.add") return 0;
  std::string x = one(add.input("x")), r = one(add.input("y")), s = one(add.output("out"));
  if (x.empty() || r.empty() || s.empty() || u.n_writes(s) != 1 || op_reads(add, s) || !fusable_dtype(b, s))
    return 0;
  const VarDesc *xv = tensor_var(b, x), *rv = tensor_var(b, r), *sv = tensor_var(b, s);
  if (xv == nullptr || rv == nullptr || xv->shape != rv->shape || sv->shape != xv->shape ||
      xv->dtype != rv->dtype)
    return 0;
  // The first layer_norm reading s as its x; the sum stays written (the backward usually reads it).
  size_t j = 0;
  bool found = false;
  for (size_t k : u.readers_of(s))
    if (ops[k].type == "oar.layer_norm" && one(ops[k].input("x")) == s) {
      j = k;
      found = true;
      break;
    }
  if (!found) return 0;
  const OpDesc& ln = ops[j];
  std::string w = one(ln.input("weight")), bb = one(ln.input("bias"));
  std::vector<std::string> outs = {one(ln.output("out")), one(ln.output("mean")), one(ln.output("rstd"))};
  if (w.empty() || bb.empty()) return 0;
  for (auto& o : outs)
    if (o.empty() || u.n_writes(o) != 1 || op_reads(ln, o) || o == s) return 0;
  if (!can_hoist(ops, i, {j}, {x, r, w, bb}, outs)) return 0;
  OpDesc f;
  f.type = "oar.fused_add_layer_norm";
  f.inputs = {{"x", {x}}, {"residual", {r}}, {"weight", {w}}, {"bias", {bb}}};
  f.outputs = {{"out", {outs[0]}}, {"sum", {s}}, {"mean", {outs[1]}}, {"rstd", {outs[2]}}};
  f.attrs = {{"begin_norm_axis", int64_t{attr_int_or(ln, "begin_norm_axis", 1)}},
             {"epsilon", attr_float_or(ln, "epsilon", 1e-5)}};
  copy_role(add, f);
  ops[i] = std::move(f);
  erase_ops(b, {j});
  return 1;
}

// Whether `place`'s device has a float32 kernel of native op `op` (an op this core does not define: no).
bool runs_on(const std::string& op, Place place) {
  return OpRegistry::get().find(op) != nullptr && has_kernel(op, place, DType::kFloat32);
}

}  // namespace

PassStat fuse_gemm_epilogue(Program& p, const std::set<std::string>& pinned) {
  return repeat("fuse_gemm_epilogue", p, pinned, [](Program& q, const Uses& u, size_t i) {
    int64_t n = try_gemm_epilogue(q, u, i);
    return n > 0 ? n : try_linear_param_grad(q, u, i);
  });
}
PassStat fuse_elewise_add_act(Program& p, const std::set<std::string>& pinned) {
  return repeat("fuse_elewise_add_act", p, pinned, try_add_act);
}
PassStat fuse_residual_layer_norm(Program& p, const std::set<std::string>& pinned) {
  return repeat("fuse_residual_layer_norm", p, pinned, try_residual_layer_norm);
}

PassReport run_training_passes(Program& forward, Program* backward,
                               const std::set<std::string>& pinned_forward,
                               const std::set<std::string>& pinned_backward,
                               const TrainingPassOptions& opts) {
  PassReport r;
  auto count = [&] {
    return static_cast<int64_t>(forward.global_block().ops().size()) +
           (backward ? static_cast<int64_t>(backward->global_block().ops().size()) : 0);
  };
  r.ops_before = count();
  // Each pass on both programs; the backward's entries are suffixed.
  auto run = [&](bool enabled, const char* op, PassStat (*pass)(Program&, const std::set<std::string>&)) {
    if (!enabled || !runs_on(op, opts.place)) return;
    r.passes.push_back(pass(forward, pinned_forward));
    if (backward != nullptr) {
      PassStat s = pass(*backward, pinned_backward);
      s.pass += "[backward]";
      r.passes.push_back(s);
    }
  };
  // Order: matmul + bias (+ act) first, so add + act takes only the adds no matmul produced.
  run(opts.fuse_gemm_epilogue && runs_on("fused_linear_param_grad", opts.place), "fused_gemm_epilogue",
      fuse_gemm_epilogue);
  run(opts.fuse_residual_layer_norm, "fused_add_layer_norm", fuse_residual_layer_norm);
  run(opts.fuse_elewise_add_act, "fused_elemwise_add_activation", fuse_elewise_add_act);
  // Attention passes (attention_passes.cc): the composite softmax gradient first, so that a program
  // recorded with it still gets its attention backward fused.
  run(opts.fuse_softmax_grad, "softmax_grad", fuse_softmax_grad);
  run(opts.fuse_attention, "fused_attention", fuse_attention);
  r.ops_after = count();
  return r;
}

}  // namespace oar::ir
