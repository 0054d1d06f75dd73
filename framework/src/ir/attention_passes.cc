// Attention fusions on training programs in oar's native dialect (training_passes.h; docs/static.md,
// "Training passes"; decision 119).
//
// fuse_attention, forward: matmul(q, k, transpose_y) [+ add(mask)] -> softmax(last axis) -> matmul(., v)
//   becomes fused_attention(q, k, v[, mask]) writing the softmax too (the backward reads it); the
//   scores disappear when nothing else reads them.
// fuse_attention, backward: the block's gradient as autograd records it,
//   dP = matmul(g, v, transpose_y), dV = matmul(P, g, transpose_x), dS = softmax_grad(P, dP),
//   dQ = matmul(dS, k), dK = matmul(dS, q, transpose_x)
//   becomes fused_attention_grad(q, k, v, P, g) -> dQ, dK, dV, when dP and dS are read by nothing else
//   (a mask that needs a gradient reads dS: left alone). The rewrite is local: it needs no knowledge of
//   the forward, the five ops compute exactly what the fused op computes.
// fuse_softmax_grad: the composite softmax gradient y * (g - sum(g * y, axis, keepdim)) (programs
//   recorded before softmax's gradient rule emitted softmax_grad, or written out by hand) -> softmax_grad.
//
// q, k, v read by the fused ops may be strided views (the head split's transposes): their kernels read
// them in place, which is where most of the time saved comes from (no transposing copies).
#include <oar/core/dispatch.h>
#include <oar/core/op.h>
#include <oar/ir/training_passes.h>

#include <algorithm>
#include <unordered_map>

#include "pass_util.h"

namespace oar::ir {
namespace {

using namespace passutil;

bool known(const std::vector<int64_t>& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}
bool is_matmul(const OpDesc& op, int64_t tx, int64_t ty) {
  return op.type == "oar.matmul" && attr_int_or(op, "transpose_x", 0) == tx &&
         attr_int_or(op, "transpose_y", 0) == ty;
}
// The softmax-like op's axis is the last one of a rank-r input (recorded normalised, or -1).
bool last_axis(const OpDesc& op, size_t r) {
  int64_t a = attr_int_or(op, "axis", -1);
  return a == -1 || a == static_cast<int64_t>(r) - 1;
}

// Whether the fused op may take the place of the first op of `chain` (sorted indices): no other op between
// it and a chain op that reads an input writes that input, and no other op before an output's original
// writer reads or writes that output (it is now written earlier).
bool can_hoist(const std::vector<OpDesc>& ops, const std::vector<size_t>& chain,
               const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
  auto in_chain = [&](size_t k) { return std::find(chain.begin(), chain.end(), k) != chain.end(); };
  const size_t first = chain.front();
  for (const std::string& n : ins) {
    size_t last_read = first;
    for (size_t c : chain)
      if (op_reads(ops[c], n)) last_read = std::max(last_read, c);
    for (size_t k = first + 1; k < last_read; ++k)
      if (!in_chain(k) && op_writes(ops[k], n)) return false;
  }
  for (const std::string& n : outs) {
    size_t writer = first;
    for (size_t c : chain)
      if (op_writes(ops[c], n)) writer = c;
    for (size_t k = first + 1; k < writer; ++k)
      if (!in_chain(k) && (op_reads(ops[k], n) || op_writes(ops[k], n))) return false;
  }
  return true;
}

// Whether the fused op may take the place of the last op of `chain` instead: no other op between a chain
// op that reads an input and the last one writes that input, and no other op after an output's
// original writer (and before the last) reads or writes that output (it is now written later).
bool can_sink(const std::vector<OpDesc>& ops, const std::vector<size_t>& chain,
              const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
  auto in_chain = [&](size_t k) { return std::find(chain.begin(), chain.end(), k) != chain.end(); };
  const size_t last = chain.back();
  for (const std::string& n : ins) {
    size_t first_read = last;
    for (size_t c : chain)
      if (op_reads(ops[c], n)) first_read = std::min(first_read, c);
    for (size_t k = first_read + 1; k < last; ++k)
      if (!in_chain(k) && op_writes(ops[k], n)) return false;
  }
  for (const std::string& n : outs) {
    size_t writer = last;
    for (size_t c : chain)
      if (op_writes(ops[c], n)) writer = c;
    for (size_t k = writer + 1; k < last; ++k)
      if (!in_chain(k) && (op_reads(ops[k], n) || op_writes(ops[k], n))) return false;
  }
  return true;
}

// Replaces the ops of `chain` (sorted) by `fused`, at the first op's place when that keeps every value
// right, else at the last op's; false (nothing changed) when neither does.
bool replace_chain(Block& b, std::vector<size_t> chain, const std::vector<std::string>& ins,
                   const std::vector<std::string>& outs, OpDesc fused) {
  auto& ops = b.mutable_ops();
  size_t at;
  if (can_hoist(ops, chain, ins, outs))
    at = chain.front();
  else if (can_sink(ops, chain, ins, outs))
    at = chain.back();
  else
    return false;
  if (const Attribute* a = ops[chain.front()].find_attr("op_role")) fused.set_attr("op_role", *a);
  ops[at] = std::move(fused);
  chain.erase(std::find(chain.begin(), chain.end(), at));
  erase_ops(b, chain);
  return true;
}

// q [..., Lq, d], k [..., Lk, d], v [..., Lk, dv]: one rank, equal known leading dims, float32/float64.
bool attention_operands(const Block& b, const std::string& q, const std::string& k, const std::string& v) {
  const VarDesc *qv = tensor_var(b, q), *kv = tensor_var(b, k), *vv = tensor_var(b, v);
  if (qv == nullptr || kv == nullptr || vv == nullptr) return false;
  const auto &qs = qv->shape, &ks = kv->shape, &vs = vv->shape;
  const size_t r = qs.size();
  if (r < 2 || ks.size() != r || vs.size() != r || !known(qs) || !known(ks) || !known(vs)) return false;
  if (qv->dtype != kv->dtype || qv->dtype != vv->dtype ||
      (qv->dtype != DType::kFloat32 && qv->dtype != DType::kFloat64))
    return false;
  if (!std::equal(qs.begin(), qs.end() - 2, ks.begin()) || !std::equal(qs.begin(), qs.end() - 2, vs.begin()))
    return false;
  return qs[r - 1] == ks[r - 1] && ks[r - 2] == vs[r - 2];
}

// mask's shape broadcasts to `scores` (right-aligned; no new dims of its own), same dtype.
bool broadcasts_to(const VarDesc& mask, const VarDesc& scores) {
  const auto &m = mask.shape, &s = scores.shape;
  if (mask.dtype != scores.dtype || m.size() > s.size() || !known(m)) return false;
  for (size_t i = 0; i < m.size(); ++i) {
    const int64_t md = m[m.size() - 1 - i], sd = s[s.size() - 1 - i];
    if (md != 1 && md != sd) return false;
  }
  return true;
}

// An int-list attribute (LONGS or INTS); empty when absent or of another type.
std::vector<int64_t> int_list(const OpDesc& op, const std::string& name) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return {};
  if (auto* v = std::get_if<std::vector<int64_t>>(a)) return *v;
  if (auto* v = std::get_if<std::vector<int32_t>>(a)) return std::vector<int64_t>(v->begin(), v->end());
  return {};
}

// ---- forward ----------------------------------------------------------------------------------------
int64_t try_attention_forward(Program& p, const Uses& g, size_t i) {
  Block& b = p.global_block();
  const auto& ops = b.ops();
  if (!is_matmul(ops[i], 0, 1)) return 0;
  const std::string q = one(ops[i].input("x")), k = one(ops[i].input("y")), s = one(ops[i].output("out"));
  if (s.empty() || g.readers_of(s).size() != 1) return 0;
  std::vector<size_t> chain{i};
  std::string mask, scores = s;
  size_t j = g.readers_of(s)[0];
  if (ops[j].type == "oar.add") {  // + mask (either operand order)
    const std::string x = one(ops[j].input("x")), y = one(ops[j].input("y")), s2 = one(ops[j].output("out"));
    mask = x == s ? y : (y == s ? x : "");
    const VarDesc *mv = tensor_var(b, mask), *sv = tensor_var(b, s), *s2v = tensor_var(b, s2);
    if (mask.empty() || mask == s || mv == nullptr || sv == nullptr || s2v == nullptr ||
        s2v->shape != sv->shape || !broadcasts_to(*mv, *sv) || !g.temp_read_by(s, {j}) ||
        g.readers_of(s2).size() != 1)
      return 0;
    chain.push_back(j);
    scores = s2;
    j = g.readers_of(s2)[0];
  }
  const OpDesc& sm = ops[j];
  if (sm.type != "oar.softmax" || one(sm.input("x")) != scores || !g.temp_read_by(scores, {j})) return 0;
  const std::string P = one(sm.output("out"));
  if (P.empty() || !g.one_writer(P) || rank_of(b, P) < 2 ||
      !last_axis(sm, static_cast<size_t>(rank_of(b, P))))
    return 0;
  chain.push_back(j);
  // The product with v: the first reader of P that is matmul(P, v).
  size_t m2 = 0;
  for (size_t r : g.readers_of(P))
    if (r > j && is_matmul(ops[r], 0, 0) && one(ops[r].input("x")) == P) {
      m2 = r;
      break;
    }
  if (m2 == 0) return 0;
  const std::string v = one(ops[m2].input("y")), out = one(ops[m2].output("out"));
  if (out.empty() || !g.one_writer(out) || v == P || !attention_operands(b, q, k, v)) return 0;
  for (const std::string& n : {q, k, v, mask, P})
    if (n == out) return 0;
  chain.push_back(m2);
  std::vector<std::string> ins{q, k, v};
  if (!mask.empty()) ins.push_back(mask);
  OpDesc f;
  f.type = "oar.fused_attention";
  f.inputs = {{"x", ins}};
  f.outputs = {{"out", {out}}, {"softmax", {P}}};
  f.attrs = {{"scale", 1.0}};
  const int64_t removed = static_cast<int64_t>(chain.size()) - 1;
  return replace_chain(b, chain, ins, {P, out}, std::move(f)) ? removed : 0;
}

// ---- backward ---------------------------------------------------------------------------------------
int64_t try_attention_backward(Program& p, const Uses& g, size_t i) {
  Block& b = p.global_block();
  const auto& ops = b.ops();
  const OpDesc& sg = ops[i];
  if (sg.type != "oar.softmax_grad") return 0;
  const std::string P = one(sg.input("out")), dP = one(sg.input("grad")), dS = one(sg.output("out"));
  const int r = rank_of(b, P);
  if (P.empty() || dP.empty() || dS.empty() || r < 2 || !last_axis(sg, static_cast<size_t>(r))) return 0;
  // dP = matmul(g, v, transpose_y), read by the softmax_grad only.
  auto writer = [&](const std::string& n) { return g.one_writer(n) ? g.writer_of(n) : ops.size(); };
  const size_t a = writer(dP);
  if (a >= ops.size() || !is_matmul(ops[a], 0, 1) || !g.temp_read_by(dP, {i})) return 0;
  const std::string G = one(ops[a].input("x")), v = one(ops[a].input("y"));
  // dS read by exactly matmul(dS, k) and matmul(dS, q, transpose_x).
  const auto& rs = g.readers_of(dS);
  if (rs.size() != 2 || g.pinned.count(dS) || !g.one_writer(dS)) return 0;
  size_t iq = ops.size(), ik = ops.size();
  for (size_t x : rs) {
    if (one(ops[x].input("x")) != dS || one(ops[x].input("y")) == dS) return 0;
    if (is_matmul(ops[x], 0, 0)) iq = x;
    if (is_matmul(ops[x], 1, 0)) ik = x;
  }
  if (iq >= ops.size() || ik >= ops.size()) return 0;
  const std::string k = one(ops[iq].input("y")), q = one(ops[ik].input("y"));
  // dV = matmul(P, g, transpose_x): a reader of P.
  size_t iv = ops.size();
  for (size_t x : g.readers_of(P))
    if (is_matmul(ops[x], 1, 0) && one(ops[x].input("x")) == P && one(ops[x].input("y")) == G) {
      iv = x;
      break;
    }
  if (iv >= ops.size()) return 0;
  const std::string dQ = one(ops[iq].output("out")), dK = one(ops[ik].output("out")),
                    dV = one(ops[iv].output("out"));
  for (const std::string& o : {dQ, dK, dV})
    if (o.empty() || !g.one_writer(o) || o == q || o == k || o == v || o == P || o == G) return 0;
  if (dQ == dK || dQ == dV || dK == dV || !attention_operands(b, q, k, v)) return 0;
  // g and P exactly [..., Lq, dv] and [..., Lq, Lk] (the products may have broadcast them; the fused
  // op does not).
  const VarDesc *gv = tensor_var(b, G), *pv = tensor_var(b, P), *qv = tensor_var(b, q),
                *kv = tensor_var(b, k), *vv = tensor_var(b, v);
  if (gv == nullptr || pv == nullptr || gv->dtype != qv->dtype || pv->dtype != qv->dtype) return 0;
  std::vector<int64_t> want_g = qv->shape, want_p = qv->shape;
  want_g.back() = vv->shape.back();
  want_p.back() = kv->shape[kv->shape.size() - 2];
  if (gv->shape != want_g || pv->shape != want_p) return 0;
  std::vector<size_t> chain{a, i, iq, ik, iv};
  std::sort(chain.begin(), chain.end());
  if (std::adjacent_find(chain.begin(), chain.end()) != chain.end()) return 0;
  OpDesc f;
  f.type = "oar.fused_attention_grad";
  f.inputs = {{"q", {q}}, {"k", {k}}, {"v", {v}}, {"softmax", {P}}, {"dout", {G}}};
  f.outputs = {{"dq", {dQ}}, {"dk", {dK}}, {"dv", {dV}}};
  f.attrs = {{"scale", 1.0}};
  return replace_chain(b, chain, {q, k, v, P, G}, {dQ, dK, dV}, std::move(f)) ? 4 : 0;
}

// ---- the head merge ------------------------------------------------------------------------------------
// An output of the fused ops read only by transpose(perm swapping dims -3 and -2) (the head merge before
// the reshape to [batch, L, heads * d]): the op writes it heads-last itself (transpose_* = 1) and the
// transpose goes; the reshape after it is then a view, not a copy.
int64_t try_heads_last(Program& p, const Uses& g, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const bool fwd = ops[i].type == "oar.fused_attention";
  if (!fwd && ops[i].type != "oar.fused_attention_grad") return 0;
  const std::vector<std::pair<const char*, const char*>> outs =
      fwd ? std::vector<std::pair<const char*, const char*>>{{"out", "transpose_out"}}
          : std::vector<std::pair<const char*, const char*>>{
                {"dq", "transpose_dq"}, {"dk", "transpose_dk"}, {"dv", "transpose_dv"}};
  for (auto [slot, flag] : outs) {
    const std::string o = one(ops[i].output(slot));
    const int r = rank_of(b, o);
    if (o.empty() || r < 3 || attr_int_or(ops[i], flag, 0) != 0 || g.pinned.count(o) || !g.one_writer(o) ||
        g.readers_of(o).size() != 1)
      continue;
    size_t j = g.readers_of(o)[0];
    // A multiply by a scalar in between (dQ's scale in the backward) commutes with the transpose: it
    // then runs on the heads-last tensor, and the transpose still goes.
    size_t ms = 0;
    std::string m_out;
    if (ops[j].type == "oar.multiply" && j > i) {
      const std::string x = one(ops[j].input("x")), y = one(ops[j].input("y"));
      const std::string c = x == o ? y : (y == o ? x : "");
      const VarDesc* cv = tensor_var(b, c);
      m_out = one(ops[j].output("out"));
      const bool scalar = cv != nullptr && (cv->shape.empty() || cv->shape == std::vector<int64_t>{1});
      if (c.empty() || c == o || !scalar || m_out.empty() || m_out == o || g.pinned.count(m_out) ||
          !g.one_writer(m_out) || g.readers_of(m_out).size() != 1 || rank_of(b, m_out) != r)
        continue;
      ms = j;
      j = g.readers_of(m_out)[0];
    }
    const std::string src = ms ? m_out : o;
    if (j <= i || ops[j].type != "oar.transpose" || one(ops[j].input("x")) != src) continue;
    std::vector<int64_t> want(static_cast<size_t>(r));
    for (int d = 0; d < r; ++d) want[static_cast<size_t>(d)] = d;
    std::swap(want[static_cast<size_t>(r - 3)], want[static_cast<size_t>(r - 2)]);
    const std::string t = one(ops[j].output("out"));
    if (int_list(ops[j], "perm") != want || t.empty() || !g.one_writer(t) || t == o) continue;
    if (ms == 0) {
      if (!can_hoist(ops, {i, j}, {}, {t})) continue;
      ops[i].set_attr(flag, int64_t{1});
      rename_args(ops[i].outputs, o, t);
      erase_ops(b, {j});
      return 1;
    }
    // fused -> o (heads-last now, same name, its shape swapped); multiply(o, c) -> t at the multiply's
    // place; the transpose and m_out go.
    if (!can_hoist(ops, {ms, j}, {o}, {t})) continue;
    VarDesc* ov = b.find_var(o);
    const VarDesc* tv = tensor_var(b, t);
    if (ov == nullptr || tv == nullptr) continue;
    ops[i].set_attr(flag, int64_t{1});
    ov->shape = tv->shape;
    rename_args(ops[ms].outputs, m_out, t);
    erase_ops(b, {j});
    return 1;
  }
  return 0;
}

int64_t try_attention(Program& p, const Uses& g, size_t i) {
  if (int64_t n = try_attention_forward(p, g, i)) return n;
  if (int64_t n = try_attention_backward(p, g, i)) return n;
  return try_heads_last(p, g, i);
}

// ---- the composite softmax gradient ------------------------------------------------------------------
// t = multiply(g, y); s = sum(t, [axis], keepdim); d = subtract(g, s); out = multiply(y, d) (operands of
// the multiplies in either order) -> softmax_grad(y, g, axis).
int64_t try_softmax_grad(Program& p, const Uses& gr, size_t i) {
  Block& b = p.global_block();
  const auto& ops = b.ops();
  if (ops[i].type != "oar.multiply") return 0;
  const std::string a0 = one(ops[i].input("x")), a1 = one(ops[i].input("y")), t = one(ops[i].output("out"));
  if (t.empty() || a0 == a1 || gr.readers_of(t).size() != 1) return 0;
  const size_t js = gr.readers_of(t)[0];
  const OpDesc& sum = ops[js];
  const std::vector<int64_t> axes = sum.type == "oar.sum" ? int_list(sum, "axis") : std::vector<int64_t>{};
  if (axes.size() != 1 || attr_int_or(sum, "keepdim", 0) == 0 || !gr.temp_read_by(t, {js})) return 0;
  const std::string s = one(sum.output("out"));
  if (s.empty() || gr.readers_of(s).size() != 1) return 0;
  const size_t jd = gr.readers_of(s)[0];
  const OpDesc& sub = ops[jd];
  if (sub.type != "oar.subtract" || one(sub.input("y")) != s || !gr.temp_read_by(s, {jd})) return 0;
  const std::string g = one(sub.input("x")), d = one(sub.output("out"));
  if (g != a0 && g != a1) return 0;
  const std::string y = g == a0 ? a1 : a0;
  if (d.empty() || gr.readers_of(d).size() != 1) return 0;
  const size_t jo = gr.readers_of(d)[0];
  const OpDesc& mo = ops[jo];
  const std::string m0 = one(mo.input("x")), m1 = one(mo.input("y")), out = one(mo.output("out"));
  if (mo.type != "oar.multiply" || !((m0 == y && m1 == d) || (m0 == d && m1 == y)) ||
      !gr.temp_read_by(d, {jo}))
    return 0;
  const VarDesc *yv = tensor_var(b, y), *gv = tensor_var(b, g), *ov = tensor_var(b, out);
  if (yv == nullptr || gv == nullptr || ov == nullptr || yv->shape != gv->shape || ov->shape != yv->shape ||
      yv->dtype != gv->dtype || !known(yv->shape) || out.empty() || !gr.one_writer(out) || out == y ||
      out == g)
    return 0;
  const int64_t rank = static_cast<int64_t>(yv->shape.size());
  int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (axis < 0 || axis >= rank) return 0;
  std::vector<size_t> chain{i, js, jd, jo};
  std::sort(chain.begin(), chain.end());
  OpDesc f;
  f.type = "oar.softmax_grad";
  f.inputs = {{"out", {y}}, {"grad", {g}}};
  f.outputs = {{"out", {out}}};
  f.attrs = {{"axis", axis}};
  return replace_chain(b, chain, {y, g}, {out}, std::move(f)) ? 3 : 0;
}

}  // namespace

PassStat fuse_attention(Program& p, const std::set<std::string>& pinned) {
  return repeat("fuse_attention", p, pinned, try_attention);
}
PassStat fuse_softmax_grad(Program& p, const std::set<std::string>& pinned) {
  return repeat("fuse_softmax_grad", p, pinned, try_softmax_grad);
}

}  // namespace oar::ir
