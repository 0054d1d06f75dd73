// Inference programs from built programs (see inference_program.h).
#include <oar/core/error.h>
#include <oar/ir/inference_program.h>
#include <oar/ir/static_graph.h>

#include <algorithm>
#include <set>

namespace oar::ir {
namespace {

int32_t op_role(const OpDesc& op) {
  if (const Attribute* a = op.find_attr("op_role")) {
    if (auto* v = std::get_if<int32_t>(a)) return *v;
    if (auto* v = std::get_if<int64_t>(a)) return static_cast<int32_t>(*v);
  }
  return 0;
}

void names_of(const Slots& slots, std::set<std::string>& out) {
  for (auto& [slot, args] : slots)
    for (auto& a : args) out.insert(a);
}

// Every variable an op reads, its sub-blocks included.
void reads_of(const Program& p, const OpDesc& op, std::set<std::string>& out) {
  names_of(op.inputs, out);
  for (auto& [name, a] : op.attrs) {
    if (auto* b = std::get_if<BlockRef>(&a)) {
      for (const OpDesc& sub : p.block(b->idx).ops()) reads_of(p, sub, out);
    }
  }
}

// Every variable an op writes, its sub-blocks included (a branch's intermediates that a gradient block
// reads are declared in block 0 by keep_alive_for, yet written inside the branch).
void writes_of(const Program& p, const OpDesc& op, std::set<std::string>& out) {
  names_of(op.outputs, out);
  for (auto& [name, a] : op.attrs) {
    if (auto* b = std::get_if<BlockRef>(&a)) {
      for (const OpDesc& sub : p.block(b->idx).ops()) writes_of(p, sub, out);
    }
  }
}

}  // namespace

Program prepare_inference_program(const Program& built, const std::vector<std::string>& feed_names,
                                  const std::vector<std::string>& fetch_names) {
  const Program program = select_mode(built, /*for_test=*/true);  // dropout/batch_norm in inference mode
  const Block& g = program.global_block();
  for (auto& n : feed_names)
    OAR_ENFORCE(g.has_var(n), ErrorCode::kInvalidArgument,
                "inference program: no variable '" << n << "' to feed");
  for (auto& n : fetch_names)
    OAR_ENFORCE(g.has_var(n), ErrorCode::kInvalidArgument,
                "inference program: no variable '" << n << "' to fetch");
  OAR_ENFORCE(!fetch_names.empty(), ErrorCode::kInvalidArgument, "inference program: nothing to fetch");

  // Walk the forward ops backwards from the fetch targets.
  std::set<std::string> needed(fetch_names.begin(), fetch_names.end());
  const std::set<std::string> fed(feed_names.begin(), feed_names.end());
  std::vector<bool> keep(g.ops().size(), false);
  for (size_t i = g.ops().size(); i-- > 0;) {
    const OpDesc& op = g.ops()[i];
    if (op_role(op) != 0) continue;
    std::set<std::string> outs;
    names_of(op.outputs, outs);
    bool useful = false;
    for (auto& o : outs) useful |= needed.count(o) > 0 && fed.count(o) == 0;
    if (!useful) continue;
    keep[i] = true;
    std::set<std::string> ins;
    reads_of(program, op, ins);
    needed.insert(ins.begin(), ins.end());
  }
  for (auto& n : needed) {
    const VarDesc* v = g.find_var(n);
    if (v == nullptr || v->persistable || fed.count(n)) continue;
    bool produced = false;
    for (size_t i = 0; i < g.ops().size() && !produced; ++i) {
      if (!keep[i]) continue;
      std::set<std::string> outs;
      writes_of(program, g.ops()[i], outs);
      produced = outs.count(n) > 0;
    }
    OAR_ENFORCE(produced, ErrorCode::kInvalidArgument,
                "inference program: the fetch targets need '"
                    << n << "', which is neither fed, a parameter, nor computed");
  }

  Program out(program);
  Block& ob = out.global_block();
  std::vector<OpDesc> ops;
  for (size_t i = 0; i < g.ops().size(); ++i)
    if (keep[i]) ops.push_back(g.ops()[i]);
  std::set<std::string> used(feed_names.begin(), feed_names.end());
  for (const OpDesc& op : ops) {
    names_of(op.inputs, used);
    names_of(op.outputs, used);
  }
  // Sub-blocks no kept op runs (the backward's: gradient branches, reverse loops) are emptied below: their
  // ops read variables pruned here. They stay, empty, so that block indices do not change. Variables of
  // block 0 that only the kept sub-blocks name (moved there by keep_alive_for) are kept.
  std::vector<bool> reached(out.num_blocks(), false);
  std::vector<int32_t> todo;
  auto reach = [&](const OpDesc& op) {
    for (auto& [name, a] : op.attrs)
      if (auto* r = std::get_if<BlockRef>(&a);
          r != nullptr && r->idx > 0 && r->idx < out.num_blocks() && !reached[r->idx]) {
        reached[r->idx] = true;
        todo.push_back(r->idx);
      }
  };
  for (const OpDesc& op : ops) reach(op);
  while (!todo.empty()) {
    const int32_t bi = todo.back();
    todo.pop_back();
    for (const OpDesc& op : out.block(bi).ops()) {
      names_of(op.inputs, used);
      names_of(op.outputs, used);
      reach(op);
    }
  }
  for (int32_t bi = 1; bi < out.num_blocks(); ++bi) {
    if (reached[bi]) continue;
    out.block(bi).mutable_ops().clear();
    out.block(bi).mutable_vars().clear();
    out.block(bi).reindex();
  }
  auto& vars = ob.mutable_vars();
  vars.erase(
      std::remove_if(vars.begin(), vars.end(), [&](const VarDesc& v) { return used.count(v.name) == 0; }),
      vars.end());
  for (VarDesc& v : vars)
    if (fed.count(v.name)) v.need_check_feed = true, v.wire_fields |= VarDesc::kWireNeedCheckFeed;
  VarDesc feed_var, fetch_var;
  feed_var.name = "feed";
  feed_var.type = VarType::kFeedMinibatch;
  feed_var.persistable = true;
  fetch_var.name = "fetch";
  fetch_var.type = VarType::kFetchList;
  fetch_var.persistable = true;
  vars.insert(vars.begin(), fetch_var);
  vars.insert(vars.begin(), feed_var);
  ob.reindex();

  std::vector<OpDesc> final_ops;
  // Feed ops in descending column order, as Paddle's save writes them (it prepends one per input):
  // Paddle's jit.load (TranslatedLayer) takes its inputs in reversed op order and ignores `col`.
  for (size_t c = feed_names.size(); c-- > 0;) {
    OpDesc f;
    f.type = "feed";
    f.set_input("X", {"feed"});
    f.set_output("Out", {feed_names[c]});
    f.set_attr("col", static_cast<int32_t>(c));
    final_ops.push_back(std::move(f));
  }
  for (auto& op : ops) final_ops.push_back(std::move(op));
  for (size_t c = 0; c < fetch_names.size(); ++c) {
    OpDesc f;
    f.type = "fetch";
    f.set_input("X", {fetch_names[c]});
    f.set_output("Out", {"fetch"});
    f.set_attr("col", static_cast<int32_t>(c));
    final_ops.push_back(std::move(f));
  }
  ob.mutable_ops() = std::move(final_ops);
  return out;
}

std::vector<std::string> persistable_inputs(const Program& program) {
  std::set<std::string> read;
  for (const OpDesc& op : program.global_block().ops()) reads_of(program, op, read);
  std::vector<std::string> out;
  for (auto& n : read) {
    const VarDesc* v = program.global_block().find_var(n);
    if (v != nullptr && v->persistable && v->has_tensor()) out.push_back(n);
  }
  return out;
}

}  // namespace oar::ir
