// Inference passes over block 0 (see passes.h and docs/program_ir.md, "Passes").
//
// Programs are not in SSA form (a variable may be written by several ops), so every rewrite checks
// what it relies on: how many ops write a variable, who reads it, whether it is "pinned" (persistable,
// fed, fetched or named by a sub-block) and so must keep its name and value.
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/ir/params.h>
#include <oar/ir/passes.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "pass_util.h"

namespace oar::ir {
namespace {

using namespace passutil;

bool has_block_attr(const OpDesc& op) {
  for (auto& [name, a] : op.attrs) {
    AttrType t = attr_type(a);
    if (t == AttrType::kBlock || t == AttrType::kBlocks) return true;
  }
  return false;
}

// Ops a pass may remove, merge or move: the executor knows them and they have no side effect.
bool is_pure_known(const OpDesc& op) {
  if (op.type == "feed" || op.type == "fetch") return false;
  if (has_block_attr(op)) return false;
  return find_op_translation(op.type) != nullptr;
}

// What the passes need to know about block 0, recomputed after each rewrite.
struct Analysis {
  NameSet pinned;       // never renamed, removed or folded
  NameSet persistable;  // declared persistable in block 0
  NameSet fetched;      // fetch sources
  NameSet sticky;       // pinned names every write of which matters: persistable, sub-block, unknown ops
  std::unordered_map<std::string, int> writes;                   // ops of block 0 writing each name
  std::unordered_map<std::string, std::vector<size_t>> readers;  // ops of block 0 reading it (once per op)

  explicit Analysis(const Program& p) {
    const Block& b = p.global_block();
    for (const VarDesc& v : b.vars())
      if (v.persistable) {
        persistable.insert(v.name);
        pinned.insert(v.name);
        sticky.insert(v.name);
      }
    // Names used by other blocks (control flow bodies) keep their name and value.
    for (int32_t bi = 1; bi < p.num_blocks(); ++bi)
      for (const OpDesc& op : p.block(bi).ops()) {
        for_each_arg(op.inputs, [&](const std::string& n) { pinned.insert(n), sticky.insert(n); });
        for_each_arg(op.outputs, [&](const std::string& n) { pinned.insert(n), sticky.insert(n); });
      }
    const auto& ops = b.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpDesc& op = ops[i];
      if (op.type == "feed") for_each_arg(op.outputs, [&](const std::string& n) { pinned.insert(n); });
      if (op.type == "fetch")
        for_each_arg(op.inputs, [&](const std::string& n) {
          pinned.insert(n);
          fetched.insert(n);
        });
      // Names referenced by ops the passes do not understand (unknown types, control flow) keep
      // their name: such an op may read or write them in ways its slots do not show.
      if (op.type != "feed" && op.type != "fetch" && !is_pure_known(op)) {
        for_each_arg(op.inputs, [&](const std::string& n) { pinned.insert(n), sticky.insert(n); });
        for_each_arg(op.outputs, [&](const std::string& n) { pinned.insert(n), sticky.insert(n); });
      }
      for_each_arg(op.outputs, [&](const std::string& n) { ++writes[n]; });
      NameSet seen;
      for_each_arg(op.inputs, [&](const std::string& n) {
        if (seen.insert(n).second) readers[n].push_back(i);
      });
    }
  }
  int n_writes(const std::string& n) const {
    auto it = writes.find(n);
    return it == writes.end() ? 0 : it->second;
  }
  const std::vector<size_t>& readers_of(const std::string& n) const {
    static const std::vector<size_t> none;
    auto it = readers.find(n);
    return it == readers.end() ? none : it->second;
  }
  // An intermediate a fusion may make disappear: one writer, not pinned, read by exactly one op.
  bool single_use_temp(const std::string& n) const {
    return !pinned.count(n) && n_writes(n) == 1 && readers_of(n).size() == 1;
  }
  // A parameter: persistable, never written by block 0, with a value in `params`.
  bool is_param(const std::string& n, const Scope& params) const {
    return persistable.count(n) && n_writes(n) == 0 && params.has(n);
  }
};

std::string unique_name(const Block& b, const std::string& base) {
  std::string n = base;
  for (int i = 1; b.has_var(n); ++i) n = base + "_" + std::to_string(i);
  return n;
}

void declare_param(Block& b, const std::string& name, const Tensor& t) {
  VarDesc v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = t.dims().to_vector();
  v.persistable = true;
  b.add_var(std::move(v));
}

// Activations the fusions fold into fc / fused_elemwise_add_activation (their names there).
const char* fusable_act(const OpDesc& op) {
  if (op.type == "relu" || op.type == "sigmoid" || op.type == "tanh") return op.type.c_str();
  if (op.type == "gelu" && attr_int_or(op, "approximate", 0) == 0) return "gelu";
  return nullptr;
}

// Attributes that only record where an op came from; they do not change what it computes.
bool is_bookkeeping_attr(const std::string& n) {
  return n == "op_callstack" || n == "op_namescope" || n == "op_role" || n == "op_role_var" ||
         n == "op_device" || n == "with_quant_attr" || n == "use_mkldnn" || n == "use_cudnn";
}

// An exact, unambiguous text form of a value for CSE keys: strings length-prefixed, floating values as
// their bits (attr_to_string rounds doubles to 9 digits).
void key_of(std::ostream& o, const std::string& v) { o << v.size() << '"' << v; }
void key_of(std::ostream& o, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  o << 'f' << u;
}
void key_of(std::ostream& o, double v) {
  uint64_t u;
  std::memcpy(&u, &v, 8);
  o << 'd' << u;
}
void key_of(std::ostream& o, int32_t v) { o << 'i' << v; }
void key_of(std::ostream& o, int64_t v) { o << 'l' << v; }
void key_of(std::ostream& o, bool v) { o << (v ? 'T' : 'F'); }
void key_of(std::ostream& o, const BlockRef& v) { o << 'B' << v.idx; }
void key_of(std::ostream& o, const VarRef& v) { key_of(o, v.name); }
void key_of(std::ostream& o, const Scalar& v) {
  o << 'S' << static_cast<int>(v.kind);
  key_of(o, v.b);
  key_of(o, v.i);
  key_of(o, v.r);
  key_of(o, v.re);
  key_of(o, v.im);
}
template <typename T>
void key_of(std::ostream& o, const std::vector<T>& v) {
  o << '[' << v.size();
  for (const auto& x : v) {
    o << ',';
    key_of(o, static_cast<T>(x));
  }
  o << ']';
}
void key_of(std::ostream& o, const Attribute& a) {
  o << a.index() << ':';
  std::visit([&](const auto& v) { key_of(o, v); }, a);
}

}  // namespace

// ---- report -----------------------------------------------------------------------------------------

const PassStat* PassReport::find(const std::string& pass) const {
  for (auto& p : passes)
    if (p.pass == pass) return &p;
  return nullptr;
}

std::string PassReport::to_string() const {
  std::ostringstream s;
  s << "ops " << ops_before << " -> " << ops_after;
  for (auto& p : passes)
    s << "; " << p.pass << ": removed " << p.ops_removed << ", fused " << p.ops_fused << ", renamed "
      << p.vars_renamed;
  return s.str();
}

// ---- dead-code elimination ------------------------------------------------------------------------

PassStat dead_code_elimination(Program& p, Scope* params) {
  PassStat st{"dce"};
  Block& b = p.global_block();
  Analysis an(p);
  const auto& ops = b.ops();
  // Backward liveness: an op is needed when it is not a pure known op (feed, fetch, unknown types,
  // control flow) or when something later reads one of its outputs, or it writes a pinned name.
  NameSet live = an.pinned;
  std::vector<size_t> dead;
  for (size_t k = ops.size(); k-- > 0;) {
    const OpDesc& op = ops[k];
    bool needed = !is_pure_known(op);
    for_each_arg(op.outputs, [&](const std::string& n) { needed = needed || live.count(n) > 0; });
    if (!needed) {
      dead.push_back(k);
      continue;
    }
    // The op defines its outputs: earlier writers of them are not needed for later readers (a fetch
    // source too), except for sticky names (persistable, sub-block, unknown ops: every write counts).
    for_each_arg(op.outputs, [&](const std::string& n) {
      if (!an.sticky.count(n)) live.erase(n);
    });
    for_each_arg(op.inputs, [&](const std::string& n) { live.insert(n); });
  }
  erase_ops(b, dead);
  st.ops_removed = static_cast<int64_t>(dead.size());
  prune_vars(p, params);
  return st;
}

// ---- common-subexpression elimination ---------------------------------------------------------------

PassStat common_subexpression_elimination(Program& p) {
  PassStat st{"cse"};
  Block& b = p.global_block();
  Analysis an(p);
  auto& ops = b.mutable_ops();
  std::unordered_map<std::string, std::string> ren;  // later output -> earlier output
  std::unordered_map<std::string, int> version;      // writes seen so far
  std::unordered_map<std::string, size_t> first;     // op key -> index of the first such op
  std::vector<size_t> dead;
  auto ver = [&](const std::string& n) {
    auto it = version.find(n);
    return it == version.end() ? 0 : it->second;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    OpDesc& op = ops[i];
    for (auto& [slot, names] : op.inputs)
      for (auto& n : names) {
        auto it = ren.find(n);
        if (it != ren.end()) n = it->second;
      }
    bool eligible = is_pure_known(op);
    // Outputs must be plain single-writer temporaries that are not also inputs of the op.
    for_each_arg(op.outputs, [&](const std::string& n) {
      eligible = eligible && an.n_writes(n) == 1 && !an.pinned.count(n) && !op_reads(op, n);
    });
    if (eligible) {
      // The key: type, inputs with the version of each (a variable rewritten in between is another
      // value), output slot shapes, and the attributes that matter, sorted by name.
      std::ostringstream key;
      key_of(key, op.type);
      auto ins = op.inputs;
      std::sort(ins.begin(), ins.end());
      for (auto& [slot, names] : ins) {
        key_of(key, slot);
        key << '(' << names.size();
        for (auto& n : names) {
          key_of(key, n);
          key << '#' << ver(n);
        }
        key << ')';
      }
      auto outs = op.outputs;
      std::sort(outs.begin(), outs.end());
      for (auto& [slot, names] : outs) {
        key_of(key, slot);
        key << '>';
        for (auto& n : names) key << (n == kEmptyVarName ? '-' : 'v');
      }
      std::vector<std::pair<std::string, Attribute>> attrs;
      for (auto& a : op.attrs)
        if (!is_bookkeeping_attr(a.first)) attrs.push_back(a);
      std::sort(attrs.begin(), attrs.end(), [](auto& x, auto& y) { return x.first < y.first; });
      for (auto& [n, a] : attrs) {
        key_of(key, n);
        key_of(key, a);
      }
      auto [it, inserted] = first.emplace(key.str(), i);
      if (!inserted) {
        const OpDesc& prev = ops[it->second];
        auto pouts = prev.outputs, louts = op.outputs;
        std::sort(pouts.begin(), pouts.end());
        std::sort(louts.begin(), louts.end());
        for (size_t s = 0; s < louts.size(); ++s)
          for (size_t a = 0; a < louts[s].second.size(); ++a) {
            const std::string& ln = louts[s].second[a];
            if (ln != kEmptyVarName) ren[ln] = pouts[s].second[a];
          }
        dead.push_back(i);
        continue;
      }
    }
    for_each_arg(op.outputs, [&](const std::string& n) { ++version[n]; });
  }
  erase_ops(b, dead);
  st.ops_removed = static_cast<int64_t>(dead.size());
  prune_vars(p, nullptr);
  return st;
}

// ---- constant folding -------------------------------------------------------------------------------

PassStat constant_folding(Program& p, Scope& params, Place place) {
  PassStat st{"constant_folding"};
  Block& b = p.global_block();
  Analysis an(p);
  auto& ops = b.mutable_ops();
  NameSet constant;  // parameters never written, and the outputs of folded ops
  for (auto& n : an.persistable)
    if (an.is_param(n, params)) constant.insert(n);
  std::vector<size_t> dead;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    if (!is_pure_known(op)) continue;
    bool ok = true;
    for_each_arg(op.inputs, [&](const std::string& n) { ok = ok && constant.count(n) > 0; });
    int outs = 0;
    for_each_arg(op.outputs, [&](const std::string& n) {
      const VarDesc* v = b.find_var(n);
      ok = ok && v != nullptr && v->has_tensor() && !an.pinned.count(n) && an.n_writes(n) == 1;
      ++outs;
    });
    if (!ok || outs == 0) continue;
    // Run the op now, through the executor's own translation, on the constants.
    Scope tmp;
    for_each_arg(op.inputs, [&](const std::string& n) { tmp.set(n, *params.find(n)); });
    try {
      OpKernelFn fn = find_op_translation(op.type)(op);
      OpRunContext ctx{&tmp, place, &op, 0, static_cast<int32_t>(i), nullptr, nullptr};
      fn(ctx);
    } catch (const Error&) {
      continue;  // not foldable here (unsupported attribute, ...): the executor reports it later
    }
    for_each_arg(op.outputs, [&](const std::string& n) {
      const Tensor* t = tmp.find(n);
      if (t == nullptr || !t->defined() || op_reads(op, n)) return;  // e.g. XShape: not produced
      params.set(n, t->to(place).contiguous());                      // computed once, not a strided view
      VarDesc* v = b.find_var(n);
      v->persistable = true;
      v->dtype = t->dtype();
      v->shape = t->dims().to_vector();
      constant.insert(n);
    });
    dead.push_back(i);
  }
  erase_ops(b, dead);
  st.ops_removed = static_cast<int64_t>(dead.size());
  st.ops_fused = st.ops_removed;
  // Folded intermediates (c in c -> scale -> c2) are persistable now; drop the unreferenced ones.
  NameSet folded;
  for (auto& n : constant)
    if (!an.persistable.count(n)) folded.insert(n);
  prune_vars(p, &params, &folded);
  return st;
}

// ---- matmul + bias (+ act) -> fc --------------------------------------------------------------------

namespace {

// One fc rewrite starting at op i, or false when op i does not start the pattern.
bool try_fuse_fc(Program& p, Scope& params, const Analysis& an, size_t i, int64_t* removed) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& mm = ops[i];
  std::string x = one(mm.input("X")), w = one(mm.input("Y")), t = one(mm.output("Out"));
  if (x.empty() || w.empty() || t.empty() || x == w) return false;
  if (!an.is_param(w, params) || params.find(w)->ndim() != 2) return false;
  int64_t in_num_col_dims;
  if (mm.type == "matmul_v2" || mm.type == "matmul") {
    bool v2 = mm.type == "matmul_v2";
    if (attr_int_or(mm, v2 ? "trans_x" : "transpose_X", 0) ||
        attr_int_or(mm, v2 ? "trans_y" : "transpose_Y", 0))
      return false;
    if (!v2 && attr_float_or(mm, "alpha", 1.0) != 1.0) return false;  // the 1.x matmul's scale
    int r = rank_of(b, x);
    if (r < 2) return false;
    in_num_col_dims = r - 1;
  } else if (mm.type == "mul") {
    if (attr_int_or(mm, "y_num_col_dims", 1) != 1) return false;
    in_num_col_dims = attr_int_or(mm, "x_num_col_dims", 1);
    if (in_num_col_dims < 1) return false;
  } else {
    return false;
  }
  int64_t n = params.find(w)->dim(1);
  // The bias add: Out = T + B with B a [N] parameter added along the last axis.
  if (!an.single_use_temp(t)) return false;
  size_t j = an.readers_of(t)[0];
  const OpDesc& add = ops[j];
  std::string bias = one(add.input("Y")), a = one(add.output("Out"));
  if (add.type != "elementwise_add" || one(add.input("X")) != t || bias.empty() || a.empty()) return false;
  if (!an.is_param(bias, params) || params.find(bias)->ndim() != 1 || params.find(bias)->dim(0) != n)
    return false;
  int64_t axis = attr_int_or(add, "axis", -1);
  if (axis != -1 && axis != in_num_col_dims) return false;
  if (an.n_writes(a) != 1 || op_reads(add, a)) return false;
  std::string act, out = a;
  std::vector<size_t> gone{j};
  if (an.single_use_temp(a)) {
    size_t k = an.readers_of(a)[0];
    const char* name = fusable_act(ops[k]);
    std::string ao = one(ops[k].output("Out"));
    if (name != nullptr && one(ops[k].input("X")) == a && !ao.empty() && an.n_writes(ao) == 1 &&
        !op_reads(ops[k], ao)) {
      act = name;
      out = ao;
      gone.push_back(k);
    }
  }
  // The fc runs at op i, so its output is written earlier than before: nothing in between may read
  // it (a persistable output's old value, say).
  if (read_between(ops, i, gone.back(), out)) return false;
  OpDesc fc;
  fc.type = "fc";
  fc.inputs = {{"Input", {x}}, {"W", {w}}, {"Bias", {bias}}};
  fc.outputs = {{"Out", {out}}};
  fc.attrs = {{"in_num_col_dims", static_cast<int32_t>(in_num_col_dims)},
              {"activation_type", act},
              {"padding_weights", false}};
  ops[i] = std::move(fc);
  erase_ops(b, gone);
  *removed += static_cast<int64_t>(gone.size());
  return true;
}

// elementwise_add + act -> fused_elemwise_add_activation at op i.
bool try_fuse_add_act(Program& p, const Analysis& an, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& add = ops[i];
  if (add.type != "elementwise_add") return false;
  std::string x = one(add.input("X")), y = one(add.input("Y")), t = one(add.output("Out"));
  if (x.empty() || y.empty() || t.empty() || !an.single_use_temp(t) || op_reads(add, t)) return false;
  size_t j = an.readers_of(t)[0];
  const OpDesc& act = ops[j];
  const char* name = fusable_act(act);
  std::string out = one(act.output("Out"));
  if (name == nullptr || one(act.input("X")) != t || out.empty() || an.n_writes(out) != 1 || out == t)
    return false;
  if (read_between(ops, i, j, out)) return false;  // the fused op writes `out` at op i (see fc)
  OpDesc f;
  f.type = "fused_elemwise_add_activation";
  f.inputs = {{"X", {x}}, {"Y", {y}}};
  // IntermediateOut (X + Y) is declared as Paddle does but, with save_intermediate_out false, not
  // produced; nothing reads it (t had a single reader).
  f.outputs = {{"Out", {out}}, {"IntermediateOut", {t}}};
  f.attrs = {{"functor_list", std::vector<std::string>{name, "elementwise_add"}},
             {"axis", static_cast<int32_t>(attr_int_or(add, "axis", -1))},
             {"scale", 0.0f},
             {"save_intermediate_out", false}};
  ops[i] = std::move(f);
  erase_ops(b, {j});
  return true;
}

}  // namespace

PassStat fuse_matmul_bias(Program& p, Scope& params) {
  PassStat st{"fuse_matmul_bias"};
  for (bool again = true; again;) {
    again = false;
    Analysis an(p);
    for (size_t i = 0; i < p.global_block().ops().size() && !again; ++i)
      if (try_fuse_fc(p, params, an, i, &st.ops_removed)) {
        ++st.ops_fused;
        again = true;
      }
  }
  prune_vars(p, nullptr);
  return st;
}

PassStat fuse_elementwise_act(Program& p) {
  PassStat st{"fuse_elementwise_act"};
  for (bool again = true; again;) {
    again = false;
    Analysis an(p);
    for (size_t i = 0; i < p.global_block().ops().size() && !again; ++i)
      if (try_fuse_add_act(p, an, i)) {
        ++st.ops_fused;
        ++st.ops_removed;
        again = true;
      }
  }
  prune_vars(p, nullptr);
  return st;
}

// ---- conv2d (+ bias add) + batch_norm -> conv2d + add ------------------------------------------------

namespace {

bool try_fold_conv_bn(Program& p, Scope& params, const Analysis& an, size_t i) {
  Block& b = p.global_block();
  auto& ops = b.mutable_ops();
  const OpDesc& conv = ops[i];
  if (conv.type != "conv2d" && conv.type != "depthwise_conv2d") return false;
  std::string filter = one(conv.input("Filter")), c = one(conv.output("Output"));
  if (filter.empty() || c.empty() || !conv.input("Bias").empty()) return false;
  std::string fmt = attr_str_or(conv, "data_format", "NCHW");
  if (fmt != "NCHW" && fmt != "AnyLayout") return false;
  if (!an.is_param(filter, params) || params.find(filter)->ndim() != 4) return false;
  const Tensor& wt = *params.find(filter);
  int64_t cout = wt.dim(0);
  auto is_vec = [&](const std::string& n) {
    return !n.empty() && an.is_param(n, params) && params.find(n)->ndim() == 1 &&
           params.find(n)->dim(0) == cout && params.find(n)->dtype() == wt.dtype();
  };
  // A conv bias added per output channel: [C] at axis 1, or [1, C, 1, 1] / [C, 1, 1] broadcast the
  // numpy way (axis -1), as Paddle's Conv2D writes it after a reshape2 (folded to a parameter).
  auto is_channel_bias = [&](const std::string& n, int64_t axis) {
    if (n.empty() || !an.is_param(n, params) || params.find(n)->dtype() != wt.dtype()) return false;
    std::vector<int64_t> d = params.find(n)->dims().to_vector();
    if (d.size() > 4) return false;
    if (d.size() == 4 || axis == -1) {
      d.insert(d.begin(), 4 - d.size(), 1);
      return d == std::vector<int64_t>{1, cout, 1, 1};
    }
    while (!d.empty() && d.back() == 1) d.pop_back();
    return axis == 1 && (d == std::vector<int64_t>{cout} || (d.empty() && cout == 1));
  };
  if (!an.single_use_temp(c)) return false;
  size_t j = an.readers_of(c)[0];
  std::optional<size_t> add_idx;
  std::string bn_in = c, conv_bias;
  if (ops[j].type == "elementwise_add") {
    const OpDesc& add = ops[j];
    conv_bias = one(add.input("Y"));
    std::string a = one(add.output("Out"));
    if (one(add.input("X")) != c || !is_channel_bias(conv_bias, attr_int_or(add, "axis", -1)) || a.empty() ||
        !an.single_use_temp(a))
      return false;
    add_idx = j;
    bn_in = a;
    j = an.readers_of(a)[0];
  }
  const OpDesc& bn = ops[j];
  if (bn.type != "batch_norm" || one(bn.input("X")) != bn_in) return false;
  if (!attr_int_or(bn, "is_test", 0) && !attr_int_or(bn, "use_global_stats", 0)) return false;
  std::string layout = attr_str_or(bn, "data_layout", "NCHW");
  if (layout != "NCHW" && layout != "AnyLayout") return false;
  std::string scale = one(bn.input("Scale")), bias = one(bn.input("Bias")), mean = one(bn.input("Mean")),
              var = one(bn.input("Variance")), y = one(bn.output("Y"));
  // Mean and Variance may be written by this batch_norm only (MeanOut / VarianceOut alias them and
  // are unchanged at inference).
  auto is_stat = [&](const std::string& n, const char* out_slot) {
    if (n.empty() || !an.persistable.count(n) || !params.has(n)) return false;
    const Tensor* t = params.find(n);
    int own = one(bn.output(out_slot)) == n ? 1 : 0;
    return an.n_writes(n) == own && t->ndim() == 1 && t->dim(0) == cout && t->dtype() == wt.dtype();
  };
  if (!is_vec(scale) || !is_vec(bias) || !is_stat(mean, "MeanOut") || !is_stat(var, "VarianceOut") ||
      y.empty() || an.n_writes(y) != 1)
    return false;
  // The statistics outputs: aliases of the inputs (unchanged at inference) or values nobody reads.
  for (auto& [slot, names] : bn.outputs) {
    if (slot == "Y") continue;
    for (auto& n : names) {
      if (n == kEmptyVarName) continue;
      bool alias = (slot == "MeanOut" && n == mean) || (slot == "VarianceOut" && n == var);
      if (!alias && (an.pinned.count(n) || !an.readers_of(n).empty())) return false;
    }
  }
  // With a bias add, Y is written at the add (earlier than the batch_norm): nothing in between may read it.
  if (add_idx && read_between(ops, *add_idx, j, y)) return false;
  double eps = attr_float_or(bn, "epsilon", 1e-5);
  // inv = scale / sqrt(var + eps); W' = W * inv per output channel; b' = (b - mean) * inv + bias.
  const Tensor& vt = *params.find(var);
  Tensor inv = ops::divide(*params.find(scale),
                           ops::sqrt(ops::add(vt, ops::full(Dims{}, eps, vt.dtype(), vt.place()))));
  Tensor w2 = ops::multiply(wt, inv.reshape(Dims{cout, 1, 1, 1}));
  Tensor b0 = conv_bias.empty() ? ops::zeros(Dims{cout}, wt.dtype(), wt.place())
                                : params.find(conv_bias)->reshape(Dims{cout});
  Tensor b2 = ops::add(ops::multiply(ops::subtract(b0, *params.find(mean)), inv), *params.find(bias));
  std::string wn = unique_name(b, filter + ".bn_folded"), bnn = unique_name(b, y + ".bn_folded_bias");
  params.set(wn, w2);
  params.set(bnn, b2);
  declare_param(b, wn, w2);
  declare_param(b, bnn, b2);
  ops[i].set_input("Filter", {wn});
  if (add_idx) {
    ops[*add_idx].set_input("Y", {bnn});
    ops[*add_idx].set_attr("axis", int32_t{1});
    ops[*add_idx].set_output("Out", {y});
    erase_ops(b, {j});
  } else {
    OpDesc add;
    add.type = "elementwise_add";
    add.inputs = {{"X", {c}}, {"Y", {bnn}}};
    add.outputs = {{"Out", {y}}};
    add.attrs = {{"axis", int32_t{1}}};
    ops[j] = std::move(add);
  }
  return true;
}

}  // namespace

PassStat fold_conv_bn(Program& p, Scope& params) {
  PassStat st{"fold_conv_bn"};
  for (bool again = true; again;) {
    again = false;
    Analysis an(p);
    for (size_t i = 0; i < p.global_block().ops().size() && !again; ++i)
      if (try_fold_conv_bn(p, params, an, i)) {
        ++st.ops_fused;
        ++st.ops_removed;
        again = true;
      }
  }
  prune_vars(p, &params);  // the batch_norm parameters (and unshared filters) are no longer needed
  return st;
}

// ---- memory reuse -----------------------------------------------------------------------------------

namespace {

struct InplaceForm {
  const char* in;
  const char* out;
  bool same_shape_check;  // binary ops: Out takes X's buffer only when their shapes are equal
};

const InplaceForm* inplace_form(const OpDesc& op) {
  static const std::map<std::string, InplaceForm> forms = [] {
    std::map<std::string, InplaceForm> m;
    for (const char* t : {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "square", "silu",
                          "swish", "hard_swish", "gelu", "leaky_relu", "scale", "dropout"})
      m[t] = {"X", "Out", false};
    for (const char* t : {"elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
                          "fused_elemwise_add_activation"})
      m[t] = {"X", "Out", true};
    m["batch_norm"] = {"X", "Y", false};
    return m;
  }();
  auto it = forms.find(op.type);
  return it == forms.end() ? nullptr : &it->second;
}

}  // namespace

PassStat memory_reuse(Program& p) {
  PassStat st{"memory_reuse"};
  Block& b = p.global_block();
  Analysis an(p);
  auto& ops = b.mutable_ops();
  // Last op index naming each variable (as input or output), kept up to date through renames.
  std::unordered_map<std::string, size_t> last;
  for (size_t i = 0; i < ops.size(); ++i) {
    for_each_arg(ops[i].inputs, [&](const std::string& n) { last[n] = i; });
    for_each_arg(ops[i].outputs, [&](const std::string& n) { last[n] = i; });
  }
  NameSet renamed_into;  // variables that took over an output: their write count grew
  for (size_t i = 0; i < ops.size(); ++i) {
    OpDesc& op = ops[i];
    const InplaceForm* f = inplace_form(op);
    if (f == nullptr) continue;
    std::string x = one(op.input(f->in)), o = one(op.output(f->out));
    if (x.empty() || o.empty() || x == o || an.pinned.count(x) || an.pinned.count(o)) continue;
    if (an.n_writes(o) != 1 || last[x] != i) continue;  // x must die here; o has one writer
    int refs = 0;                                       // x named once by the op, o not read by it
    for_each_arg(op.inputs, [&](const std::string& n) { refs += n == x; });
    for_each_arg(op.outputs, [&](const std::string& n) { refs += n == x; });
    if (refs != 1 || op_reads(op, o)) continue;
    const VarDesc* xv = b.find_var(x);
    const VarDesc* ov = b.find_var(o);
    if (xv == nullptr || ov == nullptr || !xv->has_tensor() || !ov->has_tensor() || xv->dtype != ov->dtype ||
        xv->type != ov->type)
      continue;
    if (f->same_shape_check) {
      std::string y = one(op.input("Y"));
      if (xv->shape != ov->shape || y.empty() || rank_of(b, y) < 0 ||
          rank_of(b, y) > static_cast<int>(xv->shape.size()))
        continue;
      // A -1 extent could differ at run time between X and Out only through broadcasting from Y, which
      // the rank check rules out for Paddle's elementwise shape rule (Out = X's shape).
    }
    // Rename o -> x from op i on; x was last named here, so nothing after sees the old x.
    for (size_t k = i; k < ops.size(); ++k) {
      if (k > i) rename_args(ops[k].inputs, o, x);
      rename_args(ops[k].outputs, o, x);
    }
    last[x] = last[o];
    ++st.vars_renamed;
  }
  prune_vars(p, nullptr);
  return st;
}

// ---- driver and helpers -----------------------------------------------------------------------------

PassReport run_inference_passes(Program& program, Scope& params, const PassOptions& opts) {
  PassReport r;
  r.ops_before = static_cast<int64_t>(program.global_block().ops().size());
  // DCE and CSE first, so dead or duplicated readers do not hide single-use intermediates from the
  // fusions; then constant folding (its results are parameters the fusions can use), the fusions, DCE
  // again for what they left unused (reported together with the first), and memory reuse last,
  // because renaming hides the patterns the others look for.
  PassStat dce;
  if (opts.dce) dce = dead_code_elimination(program, &params);
  if (opts.cse) r.passes.push_back(common_subexpression_elimination(program));
  if (opts.constant_folding) r.passes.push_back(constant_folding(program, params, opts.place));
  if (opts.fold_conv_bn) r.passes.push_back(fold_conv_bn(program, params));
  if (opts.fuse_matmul_bias) r.passes.push_back(fuse_matmul_bias(program, params));
  if (opts.fuse_elementwise_act) r.passes.push_back(fuse_elementwise_act(program));
  if (opts.dce) {
    dce.ops_removed += dead_code_elimination(program, &params).ops_removed;
    r.passes.push_back(dce);
  }
  if (opts.memory_reuse) r.passes.push_back(memory_reuse(program));
  r.ops_after = static_cast<int64_t>(program.global_block().ops().size());
  return r;
}

Scope load_param_scope(const Program& original, const std::string& bytes, Place place) {
  Scope s;
  for (auto& [name, t] : load_combined_params(original, bytes))
    s.set(name, Tensor::from_host(t.data.data(), Dims(t.dims), t.dtype, place));
  return s;
}

void copy_scope(const Scope& from, Scope& to) {
  for (auto& n : from.names()) to.set(n, *from.find(n));
}

}  // namespace oar::ir
