// Pattern-matching helpers shared by the program passes (passes.cc: inference passes on Paddle's
// dialect; training_passes.cc and attention_passes.cc: training passes on oar's native dialect).
// Internal to liboar_core.
#pragma once

#include <oar/ir/executor.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace oar::ir::passutil {

using NameSet = std::unordered_set<std::string>;

template <typename F>
void for_each_arg(const Slots& slots, F&& f) {
  for (auto& [slot, names] : slots)
    for (auto& n : names)
      if (n != kEmptyVarName) f(n);
}

inline bool op_reads(const OpDesc& op, const std::string& name) {
  bool r = false;
  for_each_arg(op.inputs, [&](const std::string& n) { r = r || n == name; });
  return r;
}
inline bool op_writes(const OpDesc& op, const std::string& name) {
  bool r = false;
  for_each_arg(op.outputs, [&](const std::string& n) { r = r || n == name; });
  return r;
}

inline void rename_args(Slots& slots, const std::string& from, const std::string& to) {
  for (auto& [slot, names] : slots)
    for (auto& n : names)
      if (n == from) n = to;
}

// Whether an op strictly between lo and hi reads `name`.
inline bool read_between(const std::vector<OpDesc>& ops, size_t lo, size_t hi, const std::string& name) {
  for (size_t k = lo + 1; k < hi; ++k)
    if (op_reads(ops[k], name)) return true;
  return false;
}

// Removes the ops whose index is in `dead` (sorted or not).
inline void erase_ops(Block& b, const std::vector<size_t>& dead) {
  if (dead.empty()) return;
  std::vector<char> drop(b.ops().size(), 0);
  for (size_t i : dead) drop[i] = 1;
  std::vector<OpDesc> kept;
  for (size_t i = 0; i < b.ops().size(); ++i)
    if (!drop[i]) kept.push_back(std::move(b.mutable_ops()[i]));
  b.mutable_ops() = std::move(kept);
}

// Drops block-0 variable descriptions no op of any block names any more. Persistable ones are dropped
// (and erased from `params`) only when `params` is given (and, with `only`, only those named there).
inline int64_t prune_vars(Program& p, Scope* params, const NameSet* only = nullptr) {
  NameSet used;
  for (int32_t bi = 0; bi < p.num_blocks(); ++bi)
    for (const OpDesc& op : p.block(bi).ops()) {
      for_each_arg(op.inputs, [&](const std::string& n) { used.insert(n); });
      for_each_arg(op.outputs, [&](const std::string& n) { used.insert(n); });
    }
  Block& b = p.global_block();
  std::vector<VarDesc> kept;
  int64_t removed = 0;
  for (VarDesc& v : b.mutable_vars()) {
    bool special = v.type == VarType::kFeedMinibatch || v.type == VarType::kFetchList;
    bool drop = !used.count(v.name) && !special &&
                (!v.persistable || (params != nullptr && (only == nullptr || only->count(v.name))));
    if (drop) {
      if (v.persistable) params->erase(v.name);
      ++removed;
    } else {
      kept.push_back(std::move(v));
    }
  }
  b.mutable_vars() = std::move(kept);
  b.reindex();
  return removed;
}

// Attribute values in either dialect (Paddle's INT / FLOAT, the native LONG / FLOAT64), or `def`.
inline int64_t attr_int_or(const OpDesc& op, const std::string& name, int64_t def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<int32_t>(a)) return *v;
  if (auto* v = std::get_if<int64_t>(a)) return *v;
  if (auto* v = std::get_if<bool>(a)) return *v ? 1 : 0;
  return def;
}
inline double attr_float_or(const OpDesc& op, const std::string& name, double def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<float>(a)) return *v;
  if (auto* v = std::get_if<double>(a)) return *v;
  return def;
}
inline std::string attr_str_or(const OpDesc& op, const std::string& name, const std::string& def) {
  const Attribute* a = op.find_attr(name);
  if (a == nullptr) return def;
  if (auto* v = std::get_if<std::string>(a)) return *v;
  return def;
}

// The single argument of a slot, or "" when the slot is unbound or has several.
inline std::string one(const std::vector<std::string>& args) {
  return args.size() == 1 ? args[0] : std::string();
}

inline int rank_of(const Block& b, const std::string& n) {
  const VarDesc* v = b.find_var(n);
  return v == nullptr || !v->has_tensor() ? -1 : static_cast<int>(v->shape.size());
}

// ---- for the training passes (native dialect; training_passes.cc, attention_passes.cc) ----------------

// Who writes and reads each name in block 0, and what must keep its value (the caller's pinned names,
// persistables, names used by sub-blocks).
struct Uses {
  NameSet pinned;
  std::unordered_map<std::string, std::vector<size_t>> writers;  // ops of block 0 writing it
  std::unordered_map<std::string, std::vector<size_t>> readers;  // ops of block 0 reading it (once per op)

  Uses(const Program& p, const std::set<std::string>& pin) : pinned(pin.begin(), pin.end()) {
    for (const VarDesc& v : p.global_block().vars())
      if (v.persistable) pinned.insert(v.name);
    for (int32_t bi = 1; bi < p.num_blocks(); ++bi)  // control-flow bodies: names keep their values
      for (const OpDesc& op : p.block(bi).ops()) {
        for_each_arg(op.inputs, [&](const std::string& n) { pinned.insert(n); });
        for_each_arg(op.outputs, [&](const std::string& n) { pinned.insert(n); });
      }
    const auto& ops = p.global_block().ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      for_each_arg(ops[i].outputs, [&](const std::string& n) { writers[n].push_back(i); });
      NameSet seen;
      for_each_arg(ops[i].inputs, [&](const std::string& n) {
        if (seen.insert(n).second) readers[n].push_back(i);
      });
    }
  }
  static const std::vector<size_t>& of(const std::unordered_map<std::string, std::vector<size_t>>& m,
                                       const std::string& n) {
    static const std::vector<size_t> none;
    auto it = m.find(n);
    return it == m.end() ? none : it->second;
  }
  int n_writes(const std::string& n) const { return static_cast<int>(of(writers, n).size()); }
  bool one_writer(const std::string& n) const { return n_writes(n) == 1; }
  size_t writer_of(const std::string& n) const { return of(writers, n).front(); }  // one_writer(n) first
  const std::vector<size_t>& readers_of(const std::string& n) const { return of(readers, n); }
  // An intermediate a fusion may make disappear: one writer, not pinned, read by exactly one op.
  bool single_use_temp(const std::string& n) const {
    return !pinned.count(n) && n_writes(n) == 1 && readers_of(n).size() == 1;
  }
  // An intermediate the fusion of `ops` removes: one writer, not pinned, read by those ops only.
  bool temp_read_by(const std::string& n, std::initializer_list<size_t> ops) const {
    if (pinned.count(n) || !one_writer(n)) return false;
    for (size_t r : readers_of(n))
      if (std::find(ops.begin(), ops.end(), r) == ops.end()) return false;
    return true;
  }
};

inline const VarDesc* tensor_var(const Block& b, const std::string& n) {
  const VarDesc* v = b.find_var(n);
  return v != nullptr && v->has_tensor() ? v : nullptr;
}

// A fused op replacing ops i and `fused` (all after i, the last one last) at position i: its inputs must
// hold the same values at i as where the original ops read them, and its outputs are written earlier
// than before: no other op in between may write an input, or read or write an output.
inline bool can_hoist(const std::vector<OpDesc>& ops, size_t i, const std::vector<size_t>& fused,
                      const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
  for (size_t k = i + 1; k <= fused.back(); ++k) {
    if (std::find(fused.begin(), fused.end(), k) != fused.end()) continue;
    for (auto& n : ins)
      if (op_writes(ops[k], n)) return false;
    for (auto& n : outs)
      if (op_reads(ops[k], n) || op_writes(ops[k], n)) return false;
  }
  return true;
}

// The fused op keeps the pattern's op_role (forward / backward / optimizer).
inline void copy_role(const OpDesc& from, OpDesc& to) {
  if (const Attribute* a = from.find_attr("op_role")) to.set_attr("op_role", *a);
}

// Runs try_at(p, uses, i) at every op until no rewrite is left (uses recomputed after each rewrite);
// try_at returns the number of ops it removed (0: no rewrite at i).
template <typename F>
PassStat repeat(const char* name, Program& p, const std::set<std::string>& pinned, F&& try_at) {
  PassStat st{name};
  for (bool again = true; again;) {
    again = false;
    Uses u(p, pinned);
    for (size_t i = 0; i < p.global_block().ops().size() && !again; ++i) {
      int64_t removed = try_at(p, u, i);
      if (removed > 0) {
        ++st.ops_fused;
        st.ops_removed += removed;
        again = true;
      }
    }
  }
  prune_vars(p, nullptr);
  return st;
}

}  // namespace oar::ir::passutil
