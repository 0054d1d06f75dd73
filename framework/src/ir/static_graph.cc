// Static graph building (see static_graph.h).
#include <oar/core/autograd.h>
#include <oar/core/custom_op.h>
#include <oar/core/dispatch.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/runtime.h>
#include <oar/ir/executor.h>
#include <oar/ir/static_graph.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace oar::ir {

std::vector<int64_t> visible_dims(const Dims& d) {
  std::vector<int64_t> out(d.begin(), d.end());
  for (auto& v : out)
    if (is_unknown_extent(v)) v = -1;
  return out;
}

Dims internal_dims(const std::vector<int64_t>& shape) {
  Dims d;
  for (int64_t v : shape) d.push_back(v < 0 ? kUnknownDim : v);
  return d;
}

bool is_symbolic(const Tensor& t) { return t.defined() && t.impl()->symbol != nullptr; }

const std::string& symbolic_name(const Tensor& t) {
  OAR_ENFORCE(is_symbolic(t), ErrorCode::kInvalidArgument, "the tensor is not a static-graph variable");
  return t.impl()->symbol->name;
}

void throw_symbolic_access(const Tensor& t) {
  OAR_THROW(ErrorCode::kInvalidArgument,
            "'" << symbolic_name(t)
                << "' is a variable of a static program: it has no value while the program is "
                << "being built; run the program with an Executor and fetch it");
}

// ---- attributes -------------------------------------------------------------------------------------

Attribute to_ir_attr(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return std::get<int64_t>(v);
    case 1:
      return std::get<double>(v);
    case 2:
      return std::get<std::vector<int64_t>>(v);
    case 3:
      return std::get<std::vector<double>>(v);
    default:
      return std::get<std::string>(v);
  }
}

// A custom op's attribute in the IR type Paddle gives its declared C++ type (bool -> BOOLEAN, int -> INT,
// float -> FLOAT, int vectors -> INTS, ...), so a saved program reads like one Paddle saved.
static Attribute custom_ir_attr(const std::string& type, const AttrValue& v) {
  auto as_int = [&] { return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : int64_t{0}; };
  auto as_double = [&] {
    return std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(as_int());
  };
  if (type == "bool") return as_int() != 0;
  if (type == "int") return static_cast<int32_t>(as_int());
  if (type == "int64_t") return as_int();
  if (type == "float") return static_cast<float>(as_double());
  if (type == "double") return as_double();
  if (type == "std::vector<int>" && std::holds_alternative<std::vector<int64_t>>(v)) {
    const auto& x = std::get<std::vector<int64_t>>(v);
    return std::vector<int32_t>(x.begin(), x.end());
  }
  if (type == "std::vector<float>" && std::holds_alternative<std::vector<double>>(v)) {
    const auto& x = std::get<std::vector<double>>(v);
    return std::vector<float>(x.begin(), x.end());
  }
  return to_ir_attr(v);
}

AttrValue from_ir_attr(const Attribute& a, oar::AttrType want, const std::string& op,
                       const std::string& name) {
  auto bad = [&]() -> AttrValue {
    OAR_THROW(ErrorCode::kType, op << ": attribute '" << name << "' has type " << attr_type_name(attr_type(a))
                                   << ", which does not fit the op's schema");
  };
  switch (want) {
    case oar::AttrType::kInt:
      if (auto* v = std::get_if<int64_t>(&a)) return *v;
      if (auto* v = std::get_if<int32_t>(&a)) return int64_t{*v};
      if (auto* v = std::get_if<bool>(&a)) return int64_t{*v};
      return bad();
    case oar::AttrType::kFloat:
      if (auto* v = std::get_if<double>(&a)) return *v;
      if (auto* v = std::get_if<float>(&a)) return double{*v};
      if (auto* v = std::get_if<int64_t>(&a)) return static_cast<double>(*v);
      if (auto* v = std::get_if<int32_t>(&a)) return double{static_cast<double>(*v)};
      return bad();
    case oar::AttrType::kInts:
      if (auto* v = std::get_if<std::vector<int64_t>>(&a)) return *v;
      if (auto* v = std::get_if<std::vector<int32_t>>(&a)) return std::vector<int64_t>(v->begin(), v->end());
      return bad();
    case oar::AttrType::kFloats:
      if (auto* v = std::get_if<std::vector<double>>(&a)) return *v;
      if (auto* v = std::get_if<std::vector<float>>(&a)) return std::vector<double>(v->begin(), v->end());
      return bad();
    case oar::AttrType::kString:
      if (auto* v = std::get_if<std::string>(&a)) return *v;
      return bad();
  }
  return bad();
}

// ---- the current builder -------------------------------------------------------------------------------

namespace {
// The owner, and a plain pointer for the hook's check on every op: a thread_local with a trivial type
// needs no initialisation guard on access (the shared_ptr one would cost a call per op).
thread_local std::shared_ptr<ProgramBuilder> t_builder;
thread_local ProgramBuilder* t_current = nullptr;

VarDesc tensor_var(const std::string& name, const Dims& dims, DType dtype) {
  VarDesc v;
  v.name = name;
  v.dtype = dtype;
  v.shape = visible_dims(dims);
  return v;
}
}  // namespace

ProgramBuilder* current_builder() { return t_current; }

std::shared_ptr<ProgramBuilder> set_current_builder(std::shared_ptr<ProgramBuilder> b) {
  std::swap(t_builder, b);
  t_current = t_builder.get();
  set_dispatch_hook_engaged(HookSlot::kStaticGraph, t_current != nullptr);
  return b;
}

// ---- the dispatch hook: static mode records op calls and views instead of running them ------------
namespace {
bool record_op_call(OpCall& c) {
  if (ProgramBuilder* b = t_current) {
    b->record(c.op, c.inputs, c.n_inputs, c.attrs, c.infer, c.place, c.outputs);
    return true;
  }
  OAR_ENFORCE(!c.symbolic_inputs, ErrorCode::kInvalidArgument,
              c.op.name << ": an input is a static-graph variable, used outside of the program being built "
                           "(program_guard / to_static)");
  return false;
}

// While a program is built, a view is recorded as a view op whose result is a new variable with the
// view's dims; a concrete base (a parameter) is captured, so that the program reads its current value
// when it runs.
void record_view_call(const Tensor& base, Tensor& v, const char* op, const Attrs& attrs) {
  ProgramBuilder* b = t_current;
  if (b == nullptr && !is_symbolic(base)) return;
  // A reshape / squeeze / unsqueeze / expand that keeps the shape is the variable itself: `v` (made by
  // make_view) stands for the same variable, so no op is recorded (gradient rules make many of these).
  if (is_symbolic(base) && v.dims() == base.dims() && std::strcmp(op, "transpose") != 0 &&
      std::strcmp(op, "slice") != 0)
    return;
  OAR_ENFORCE(b != nullptr, ErrorCode::kInvalidArgument,
              op << ": '" << symbolic_name(base)
                 << "' is a static-graph variable, used outside of the program being built (program_guard)");
  v = b->record_view(base, *find_view_op(op), attrs, v.dims());
}

const DispatchHook kStaticGraphHook{record_op_call, nullptr, record_view_call, throw_symbolic_access};
}  // namespace

void install_static_graph_hook() { install_dispatch_hook(HookSlot::kStaticGraph, &kStaticGraphHook); }

// ---- ProgramBuilder ------------------------------------------------------------------------------------

ProgramBuilder::ProgramBuilder(std::shared_ptr<Program> program)
    : program_(program ? std::move(program) : std::make_shared<Program>()) {}

void ProgramBuilder::set_current_block(int32_t idx) {
  OAR_ENFORCE(idx >= 0 && idx < program_->num_blocks(), ErrorCode::kInvalidArgument,
              "program has no block " << idx);
  block_ = idx;
}

int32_t ProgramBuilder::push_block() {
  Block& b = program_->append_block(block_);
  block_ = b.idx();
  return block_;
}

void ProgramBuilder::pop_block() {
  const int32_t parent = program_->block(block_).parent_idx();
  OAR_ENFORCE(parent >= 0, ErrorCode::kInvalidArgument, "pop_block: already in the global block");
  block_ = parent;
}

namespace {
NameSource& name_source() {
  static NameSource source;
  return source;
}
}  // namespace

void set_name_source(NameSource source) { name_source() = std::move(source); }

std::string ProgramBuilder::unique_name(const std::string& prefix) {
  const NameSource& source = name_source();
  for (;;) {
    std::string name = source ? source(prefix) : prefix + "_" + std::to_string(counters_[prefix]++);
    if (program_->find_var_recursive(block_, name) == nullptr && captures_.count(name) == 0) return name;
  }
}

Tensor ProgramBuilder::make_symbolic(const std::string& name, const Dims& dims, DType dtype, Place place,
                                     bool is_view) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = dtype;
  impl->dims = dims;
  impl->strides = contiguous_strides(dims);
  Device& dev = Runtime::get().device(place);
  impl->storage = std::make_shared<Storage>(&dev, nullptr, 0, nullptr);  // no memory: a name only
  impl->symbol = std::make_shared<SymbolicVar>(SymbolicVar{name, this, is_view});
  live_.push_back(impl);
  return Tensor(std::move(impl));
}

Tensor ProgramBuilder::live_tensor(const std::string& name) const {
  if (auto it = captures_.find(name); it != captures_.end()) return it->second;
  Tensor found;
  size_t keep = 0;
  for (size_t i = 0; i < live_.size(); ++i) {  // drops the dead entries on the way
    std::shared_ptr<TensorImpl> impl = live_[i].lock();
    if (!impl) continue;
    live_[keep++] = live_[i];
    if (impl->symbol->name != name) continue;
    Tensor t(impl);
    if (!found.defined() || autograd::requires_grad(t)) found = t;
  }
  live_.resize(keep);
  return found;
}

Tensor ProgramBuilder::create_var(const std::string& name, const std::vector<int64_t>& shape, DType dtype,
                                  Place place, bool persistable, bool is_parameter, bool stop_gradient) {
  OAR_ENFORCE(!name.empty(), ErrorCode::kInvalidArgument, "a program variable needs a name");
  Block& blk = program_->block(persistable ? 0 : block_);
  OAR_ENFORCE(!blk.has_var(name) && captures_.count(name) == 0, ErrorCode::kInvalidArgument,
              "the program already has a variable named '" << name << "'");
  Dims dims = internal_dims(shape);
  VarDesc v = tensor_var(name, dims, dtype);
  v.persistable = persistable;
  v.is_parameter = is_parameter;
  v.stop_gradient = stop_gradient;
  blk.add_var(std::move(v));
  return make_symbolic(name, dims, dtype, place);
}

Tensor ProgramBuilder::var(const std::string& name, Place place) {
  const VarDesc* v = program_->find_var_recursive(block_, name);
  OAR_ENFORCE(v != nullptr && v->has_tensor(), ErrorCode::kNotFound,
              "the program has no tensor variable named '" << name << "'");
  return make_symbolic(name, internal_dims(v->shape), v->dtype, place);
}

void ProgramBuilder::bind_capture(const Tensor& t, const std::string& name, bool is_parameter) {
  OAR_ENFORCE(t.defined() && !is_symbolic(t), ErrorCode::kInvalidArgument,
              "bind_capture: '" << name << "' must be a concrete tensor");
  Block& g = program_->global_block();
  OAR_ENFORCE(!g.has_var(name) && captures_.count(name) == 0, ErrorCode::kInvalidArgument,
              "the program already has a variable named '" << name << "'");
  VarDesc v = tensor_var(name, t.dims(), t.dtype());
  v.persistable = true;
  v.is_parameter = is_parameter;
  v.stop_gradient = !is_parameter;
  g.add_var(std::move(v));
  captures_[name] = t;
  capture_names_[t.impl()] = name;
}

std::string ProgramBuilder::capture(const Tensor& t) {
  auto it = capture_names_.find(t.impl());
  if (it != capture_names_.end()) return it->second;
  const std::string name = unique_name("captured");
  bind_capture(t, name, false);
  return name;
}

std::string ProgramBuilder::input_var(const Tensor& t, const OpDef& op, int32_t i) {
  if (!is_symbolic(t)) return capture(t);
  const SymbolicVar& s = *t.impl()->symbol;
  OAR_ENFORCE(s.builder == this, ErrorCode::kInvalidArgument,
              op.name << ": input '" << op.inputs[op.variadic ? 0 : i] << "' is variable '" << s.name
                      << "' of another program");
  return s.name;
}

void ProgramBuilder::record(const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs,
                            const InferContext& ic, Place place, Tensor* outputs) {
  Block& blk = program_->block(block_);
  OpDesc od;
  // Custom ops are recorded under their own type with Paddle's slots, as Paddle saves them.
  od.type = op.custom ? std::string(op.name) : std::string("oar.") + op.name;
  std::vector<std::string> names(n_in);
  for (int32_t i = 0; i < n_in; ++i) names[i] = input_var(inputs[i], op, i);
  if (op.custom) {
    const std::vector<int32_t> counts = custom_op_slot_counts(op, attrs, n_in);
    int32_t k = 0;
    for (size_t s = 0; s < counts.size(); ++s) {
      od.set_input(op.inputs[s], std::vector<std::string>(names.begin() + k, names.begin() + k + counts[s]));
      k += counts[s];
    }
  } else if (op.variadic) {
    od.set_input(op.inputs[0], names);
  } else {
    for (int32_t i = 0; i < n_in; ++i) od.set_input(op.inputs[i], {names[i]});
  }
  // Inputs written in place reappear as outputs under their slot name.
  std::vector<std::string> written;
  for (int32_t i = 0; i < n_in; ++i) {
    if (!op_writes_input(op, i, n_in)) continue;
    OAR_ENFORCE(
        !is_symbolic(inputs[i]) || !inputs[i].impl()->symbol->is_view, ErrorCode::kUnimplemented,
        op.name << ": writing in place into '" << names[i]
                << "', a view (reshape/slice/...) of another static-graph variable, is not supported; "
                   "compute the new value out of place (e.g. with oar.where or oar.scatter)");
    written.push_back(names[i]);
  }
  if (!written.empty() && !op.custom) {  // a custom op names its in-place output itself
    if (op.variadic) {
      od.set_output(op.inputs[0], written);
    } else {
      int32_t w = 0;
      for (int32_t i = 0; i < n_in; ++i)
        if (op_writes_input(op, i, n_in)) od.set_output(op.inputs[i], {written[w++]});
    }
  }
  const int32_t n_out = static_cast<int32_t>(op.outputs.size());
  for (int32_t i = 0; i < n_out; ++i) {
    const TensorMeta& m = ic.outputs[i];
    std::string name = unique_name(std::string(op.name) + ".tmp");
    blk.add_var(tensor_var(name, m.dims, m.dtype));
    od.set_output(op.outputs[i], {name});
    outputs[i] = make_symbolic(name, m.dims, m.dtype, place);
  }
  const CustomOpInfo* custom = custom_op_info(op);
  for (size_t i = 0; i < attrs.size(); ++i) {
    const std::string name = attrs[i].first;
    if (!custom) {
      od.set_attr(attrs[i].first, to_ir_attr(attrs[i].second));
      continue;
    }
    const auto it = std::find(custom->attr_names.begin(), custom->attr_names.end(), name);
    if (it == custom->attr_names.end()) continue;  // the hidden input counts: the slots carry them
    od.set_attr(attrs[i].first,
                custom_ir_attr(custom->attr_types[it - custom->attr_names.begin()], attrs[i].second));
  }
  stamp(od);
  blk.append_op(std::move(od));
}

Tensor ProgramBuilder::record_view(const Tensor& base, const OpDef& view_def, const Attrs& attrs,
                                   const Dims& dims) {
  OpDesc od;
  od.type = std::string("oar.") + view_def.name;
  od.set_input("x", {input_var(base, view_def, 0)});
  std::string name = unique_name(std::string(view_def.name) + ".tmp");
  program_->block(block_).add_var(tensor_var(name, dims, base.dtype()));
  od.set_output("out", {name});
  for (size_t i = 0; i < attrs.size(); ++i) od.set_attr(attrs[i].first, to_ir_attr(attrs[i].second));
  stamp(od);
  program_->block(block_).append_op(std::move(od));
  return make_symbolic(name, dims, base.dtype(), base.place(), /*is_view=*/true);
}

int64_t new_unknown_extent() {
  thread_local int next = 0;
  next = next % (kNumUnknownDims - 1) + 1;
  return kUnknownDims[next];
}

void bind_var_attrs(const Tensor& out, const std::vector<std::pair<std::string, Tensor>>& vars,
                    const Dims* dims) {
  ProgramBuilder* b = current_builder();
  OAR_ENFORCE(b != nullptr && is_symbolic(out), ErrorCode::kInvalidArgument,
              "bind_var_attrs: needs a variable of the program being built");
  const std::string& name = symbolic_name(out);
  auto& ops = b->program().block(b->current_block()).mutable_ops();
  for (auto op = ops.rbegin(); op != ops.rend(); ++op)
    for (auto& [slot, args] : op->outputs)
      if (std::find(args.begin(), args.end(), name) != args.end()) {
        for (auto& [attr, t] : vars) {
          OAR_ENFORCE(t.defined(), ErrorCode::kInvalidArgument,
                      op->type << ": the variable for attribute '" << attr << "' is undefined");
          op->set_input(kVarAttrPrefix + attr, {is_symbolic(t) ? symbolic_name(t) : b->capture(t)});
        }
        if (dims != nullptr) {
          TensorImpl& impl = *out.impl();
          impl.dims = *dims;
          impl.strides = contiguous_strides(*dims);
          for (int32_t bi = 0; bi < b->program().num_blocks(); ++bi)
            for (VarDesc& v : b->program().block(bi).mutable_vars())
              if (v.name == name) v.shape = visible_dims(*dims);
        }
        op->set_attr("@out_dims", to_ir_attr(out.dims().to_vector()));
        return;
      }
  OAR_THROW(ErrorCode::kNotFound, "bind_var_attrs: no op of the current block writes '" << name << "'");
}

Tensor record_view_var_attrs(const Tensor& base, const std::string& view, const Attrs& attrs,
                             const Dims& dims, const std::vector<std::pair<std::string, Tensor>>& vars) {
  ProgramBuilder* b = current_builder();
  const OpDef* def = find_view_op(view);
  OAR_ENFORCE(b != nullptr && def != nullptr, ErrorCode::kInvalidArgument,
              "record_view_var_attrs: '" << view << "' outside a program being built, or not a view op");
  Dims d = dims;  // -1: the base's extent at that axis (right-aligned), sentinels included
  for (int32_t i = 0, lead = d.size() - base.ndim(); i < d.size(); ++i)
    if (d[i] == -1) {
      OAR_ENFORCE(i >= lead, ErrorCode::kInvalidArgument, "record_view_var_attrs: -1 at a new leading axis");
      d[i] = base.dims()[i - lead];
    }
  Tensor v = b->record_view(base, *def, attrs, d);
  bind_var_attrs(v, vars);
  // The gradient reads only the base's build-time dims, so it needs no run-time attribute.
  if (view == "reshape")
    autograd::record_view(base, v, "reshape", [d = base.dims()](const Tensor& g) {
      // Recorded without Tensor::reshape's element-count check: g's extents may be sentinels other
      // than the base's (the counts agree when the program runs).
      ProgramBuilder* pb = current_builder();
      if (pb == nullptr || !is_symbolic(g)) return g.reshape(d);
      return pb->record_view(g, *find_view_op("reshape"), Attrs{{"shape", d.to_vector()}}, d);
    });
  else if (view == "expand")
    autograd::record_view(base, v, "expand",
                          [d = base.dims()](const Tensor& g) { return autograd::sum_to(g, d); });
  return v;
}

void ProgramBuilder::rename(const Tensor& t, const std::string& new_name) {
  const std::string old = symbolic_name(t);
  if (old == new_name) return;
  OAR_ENFORCE(t.impl()->symbol->builder == this, ErrorCode::kInvalidArgument,
              "rename: '" << old << "' is a variable of another program");
  for (int32_t b = 0; b < program_->num_blocks(); ++b)
    OAR_ENFORCE(!program_->block(b).has_var(new_name), ErrorCode::kInvalidArgument,
                "rename: the program already has a variable named '" << new_name << "'");
  for (int32_t b = 0; b < program_->num_blocks(); ++b) {
    Block& blk = program_->block(b);
    for (VarDesc& v : blk.mutable_vars())
      if (v.name == old) v.name = new_name;
    blk.reindex();
    for (OpDesc& op : blk.mutable_ops())
      for (Slots* slots : {&op.inputs, &op.outputs})
        for (auto& [slot, args] : *slots)
          for (auto& a : args)
            if (a == old) a = new_name;
  }
  t.impl()->symbol->name = new_name;
}

void ProgramBuilder::stamp(OpDesc& op) const {
  op.set_attr("op_role", int32_t{op_role_});
  if (!mode_.empty()) op.set_attr("oar_mode", mode_);
}

void ProgramBuilder::set_mode(std::string mode) {
  OAR_ENFORCE(mode.empty() || mode == "train" || mode == "test", ErrorCode::kInvalidArgument,
              "set_mode: mode must be '', 'train' or 'test', got '" << mode << "'");
  mode_ = std::move(mode);
}

void ProgramBuilder::redirect_output(const Tensor& produced, const Tensor& target, int32_t first_op) {
  const std::string from = symbolic_name(produced), to = symbolic_name(target);
  Block& blk = program_->block(block_);
  auto& ops = blk.mutable_ops();
  for (size_t i = ops.size(); i-- > static_cast<size_t>(std::max(first_op, 0));) {
    for (auto& [slot, args] : ops[i].outputs) {
      for (auto& a : args) {
        if (a != from) continue;
        a = to;
        auto& vars = blk.mutable_vars();
        vars.erase(std::remove_if(vars.begin(), vars.end(), [&](const VarDesc& v) { return v.name == from; }),
                   vars.end());
        blk.reindex();
        produced.impl()->symbol->name = to;
        return;
      }
    }
  }
  OAR_THROW(ErrorCode::kInvalidArgument,
            "redirect_output: no op recorded after op " << first_op << " produces '" << from << "'");
}

void ProgramBuilder::append_op(OpDesc op) {
  stamp(op);
  program_->block(block_).append_op(std::move(op));
}

namespace {
// Names the ops of block `idx` (recursively) bind in `in` or `out` slots, minus those declared in it.
void outer_names(const Program& p, int32_t idx, bool writes, std::vector<std::string>& out) {
  const Block& b = p.block(idx);
  for (const OpDesc& op : b.ops()) {
    for (auto& [slot, args] : writes ? op.outputs : op.inputs)
      for (auto& a : args)
        if (!b.has_var(a) && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
    for (auto& [name, attr] : op.attrs)
      if (auto* r = std::get_if<BlockRef>(&attr)) {
        std::vector<std::string> inner;
        outer_names(p, r->idx, writes, inner);
        for (auto& a : inner)
          if (!b.has_var(a) && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
      }
  }
}
}  // namespace

std::vector<std::string> ProgramBuilder::outer_reads(int32_t idx) const {
  std::vector<std::string> out;
  outer_names(*program_, idx, false, out);
  return out;
}

std::vector<std::string> ProgramBuilder::outer_writes(int32_t idx) const {
  std::vector<std::string> out;
  outer_names(*program_, idx, true, out);
  return out;
}

void ProgramBuilder::keep_alive_for(int32_t idx) {
  std::vector<int32_t> ancestors;
  for (int32_t b = idx; b >= 0; b = program_->block(b).parent_idx()) ancestors.push_back(b);
  for (const std::string& name : outer_reads(idx)) {
    for (int32_t b = 1; b < program_->num_blocks(); ++b) {
      Block& blk = program_->block(b);
      const VarDesc* v = blk.find_var(name);
      if (v == nullptr || std::find(ancestors.begin(), ancestors.end(), b) != ancestors.end()) continue;
      VarDesc moved = *v;
      auto& vars = blk.mutable_vars();
      vars.erase(std::remove_if(vars.begin(), vars.end(), [&](const VarDesc& d) { return d.name == name; }),
                 vars.end());
      blk.reindex();
      program_->global_block().add_var(std::move(moved));
      break;
    }
  }
}

Program select_mode(const Program& program, bool for_test) {
  const std::string drop = for_test ? "train" : "test";
  Program out(program);
  for (int32_t b = 0; b < out.num_blocks(); ++b) {
    auto& ops = out.block(b).mutable_ops();
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const OpDesc& op) {
                               const Attribute* a = op.find_attr("oar_mode");
                               return a && std::get_if<std::string>(a) && std::get<std::string>(*a) == drop;
                             }),
              ops.end());
    for (OpDesc& op : ops)
      op.attrs.erase(std::remove_if(op.attrs.begin(), op.attrs.end(),
                                    [](const auto& kv) { return kv.first == "oar_mode"; }),
                     op.attrs.end());
  }
  return out;
}

Program filter_ops_by_role(const Program& program, const std::vector<int32_t>& roles) {
  Program out(program);
  for (int32_t b = 0; b < out.num_blocks(); ++b) {
    auto& ops = out.block(b).mutable_ops();
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const OpDesc& op) {
                               int32_t role = 0;
                               if (const Attribute* a = op.find_attr("op_role")) {
                                 if (auto* v = std::get_if<int32_t>(a))
                                   role = *v;
                                 else if (auto* w = std::get_if<int64_t>(a))
                                   role = static_cast<int32_t>(*w);
                               }
                               return std::find(roles.begin(), roles.end(), role) == roles.end();
                             }),
              ops.end());
  }
  return out;
}

// ---- view ops ---------------------------------------------------------------------------------------------

namespace {
OpDef view_def(const char* name, std::vector<AttrDef> attrs) {
  OpDef d;
  d.name = name;
  d.inputs = {"x"};
  d.outputs = {"out"};
  d.attrs = std::move(attrs);
  return d;
}
AttrDef ints_attr(const char* n) { return {n, oar::AttrType::kInts, true, std::vector<int64_t>{}}; }
AttrDef int_attr(const char* n) { return {n, oar::AttrType::kInt, true, int64_t{0}}; }

const std::vector<OpDef>& view_defs() {
  static const std::vector<OpDef> defs = {
      view_def("reshape", {ints_attr("shape")}),
      view_def("transpose", {ints_attr("perm")}),
      view_def("slice", {int_attr("axis"), int_attr("start"), int_attr("end"), int_attr("step")}),
      view_def("squeeze", {ints_attr("axes")}),
      view_def("unsqueeze", {int_attr("axis")}),
      view_def("expand", {ints_attr("shape")}),
  };
  return defs;
}
}  // namespace

const OpDef* find_view_op(const std::string& name) {
  for (const OpDef& d : view_defs())
    if (name == d.name) return &d;
  return nullptr;
}

Tensor run_view_op(const OpDef& view, const Tensor& x, const Attrs& a) {
  const std::string n = view.name;
  if (n == "reshape") return x.reshape(Dims(a.get_ints("shape")));
  if (n == "transpose") return x.transpose(a.get_ints("perm"));
  if (n == "slice")
    return x.slice(a.get_int("axis"), a.get_int("start"), a.get_int("end"), a.get_int("step"));
  if (n == "squeeze") return x.squeeze(a.get_ints("axes"));
  if (n == "unsqueeze") return x.unsqueeze(a.get_int("axis"));
  if (n == "expand") return x.expand(Dims(a.get_ints("shape")));
  OAR_THROW(ErrorCode::kNotFound, "unknown view op '" << n << "'");
}

}  // namespace oar::ir

// ---- running native ops (the executor's side) -------------------------------------------------------------

namespace oar::ir {
namespace {

// Whether x is k * p for an integer k >= 1, to the precision of values derived from the sentinels.
bool near_multiple(double x, double p) {
  if (x < p / 2.0 || x > 9.0e15) return false;
  const double k = std::round(x / p);
  // Values derived from the sentinel are exact to a few ulps. A looser window took round constants for
  // extents: 1e-12 (normalize's epsilon) is 1 / (999997 * kUnknownDim + 9).
  return k >= 1 && std::fabs(x - k * p) <= 1e-12 * x;
}

// A double derived from the sentinels: k * p or 1 / (k * p) (k may hold other sentinels); the index of
// the first sentinel found, or -1.
int sentinel_of(double v) {
  if (v == 0 || !std::isfinite(v)) return -1;
  const double a = std::fabs(v), r = 1.0 / a;
  for (int i = 0; i < kNumUnknownDims; ++i) {
    const auto p = static_cast<double>(kUnknownDims[i]);
    if (near_multiple(a, p) || near_multiple(r, p)) return i;
  }
  return -1;
}

bool mentions_unknown(double v) { return sentinel_of(v) >= 0; }

// The run's value of sentinel i; throws naming the op when it is not known.
int64_t extent_of(const OpRunContext& c, int i) {
  const int64_t e = c.extents != nullptr ? c.extents[i] : 0;
  if (i == 0)
    OAR_ENFORCE(
        e > 0, ErrorCode::kInvalidArgument,
        c.op->type << ": an attribute depends on the unknown (-1) extent of the inputs, but "
                   << (c.unknown_extent < 0 ? "the fed variables' -1 extents have different sizes in this run"
                                            : "no fed variable has one"));
  else
    OAR_ENFORCE(
        e >= 0 && c.extents != nullptr && c.extents[i] != 0, ErrorCode::kInvalidArgument,
        c.op->type << ": an attribute depends on an extent that an earlier op computes from a variable's "
                      "value, and it has not run in this run (the same sentinel serves more than "
                   << kNumUnknownDims - 1 << " such extents of one program?)");
  return e;
}

// v = +-(k * product of sentinels) or its reciprocal (a mean's 1 / numel): each sentinel replaced by its
// value in this run, k rounded to the integer it stands for.
double substitute(double v, const OpRunContext& c) {
  if (sentinel_of(v) < 0) return v;
  const double s = v < 0 ? -1.0 : 1.0;
  double a = std::fabs(v);
  const bool reciprocal = a < 1.0;
  if (reciprocal) a = 1.0 / a;
  double values = 1.0;
  for (int i = 0; i < kNumUnknownDims; ++i) {
    const auto p = static_cast<double>(kUnknownDims[i]);
    while (near_multiple(a, p)) {
      a /= p;
      values *= static_cast<double>(extent_of(c, i));
    }
  }
  const double out = std::round(a) * values;
  return s * (reciprocal ? 1.0 / out : out);
}

// v = rest * product of sentinels: each sentinel replaced by its value in this run.
int64_t substitute(int64_t v, const OpRunContext& c) {
  if (!is_unknown_extent(v)) return v;
  int64_t rest = v, out = 1;
  for (int i = 0; i < kNumUnknownDims; ++i)
    while (rest % kUnknownDims[i] == 0) {
      rest /= kUnknownDims[i];
      out *= extent_of(c, i);
    }
  return rest * out;
}

bool mentions_unknown(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return is_unknown_extent(std::get<int64_t>(v));
    case 1:
      return mentions_unknown(std::get<double>(v));
    case 2:
      for (int64_t x : std::get<std::vector<int64_t>>(v))
        if (is_unknown_extent(x)) return true;
      return false;
    case 3:
      for (double x : std::get<std::vector<double>>(v))
        if (mentions_unknown(x)) return true;
      return false;
    default:
      return false;
  }
}

AttrValue substitute(const AttrValue& v, const OpRunContext& c) {
  switch (v.index()) {
    case 0:
      return substitute(std::get<int64_t>(v), c);
    case 1:
      return substitute(std::get<double>(v), c);
    case 2: {
      auto out = std::get<std::vector<int64_t>>(v);
      for (auto& x : out) x = substitute(x, c);
      return out;
    }
    case 3: {
      auto out = std::get<std::vector<double>>(v);
      for (auto& x : out) x = substitute(x, c);
      return out;
    }
    default:
      return v;
  }
}

// One native instruction: the op's definition, its attributes by schema and the variables it binds.
struct NativeOp {
  const OpDef* def = nullptr;
  bool is_view = false;
  Attrs attrs;
  bool needs_extent = false;  // an attribute captured the unknown-extent sentinel
  // Run-time attributes ("@<attr>" input slots): the attribute, its type and the variable holding it.
  struct VarAttr {
    const char* attr;
    oar::AttrType type;
    std::string var;
    int32_t slot = -1;
  };
  std::vector<VarAttr> var_attrs;
  // (axis, sentinel index): extents of the first output measured when the op runs ("@out_dims").
  std::vector<std::pair<int32_t, int32_t>> measures;
  void measure(const OpRunContext& c, const Tensor& out) const {
    if (c.extents == nullptr) return;
    for (auto [axis, i] : measures)
      if (axis < out.ndim()) c.extents[i] = out.dims()[axis];
  }
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;  // empty names: outputs nobody reads
  // The variables' slots in `scope` (the last scope run in; -1 for unnamed outputs).
  Scope* scope = nullptr;
  std::vector<int32_t> in_slots, out_slots;
  // The input metas and place of the last run that inferred the outputs, and those outputs: a run
  // with the same inputs skips attribute completion and shape inference (run_op_inferred).
  bool inferred = false;
  Place place;
  std::vector<TensorMeta> in_meta;
  TensorMeta out_meta[kMaxOpOutputs];
  // Outputs may be written into recycled buffers (Scope::take): not for ops writing an input in place.
  bool may_reuse = false;
  Device* device = nullptr;              // place's
  size_t out_bytes[kMaxOpOutputs] = {};  // of out_meta; 0: allocate (empty)
  bool same_inputs(const Tensor* in, int32_t n_in) const {
    if (!inferred || static_cast<int32_t>(in_meta.size()) != n_in) return false;
    for (int32_t i = 0; i < n_in; ++i) {
      const Tensor& t = in[i];
      // The device pointer stands for the place (one Device per place): no out-of-line place() call.
      if (t.impl()->symbol != nullptr || t.dtype() != in_meta[i].dtype || !(t.dims() == in_meta[i].dims) ||
          t.storage()->device() != device)
        return false;
    }
    return true;
  }
  void bind(Scope* s) {
    in_slots.clear();
    out_slots.clear();
    for (auto& name : inputs) in_slots.push_back(s->slot(name));
    for (auto& name : outputs) out_slots.push_back(name.empty() ? -1 : s->slot(name));
    for (auto& v : var_attrs) v.slot = s->slot(v.var);
    scope = s;
  }
};

// The value of a run-time attribute: the variable's elements (any integer, bool or float dtype) as the
// attribute's type. reshape's 0 keeps the input's extent, as in Paddle (expand keeps it for -1 itself).
AttrValue read_var_attr(const OpRunContext& c, const NativeOp& n, const NativeOp::VarAttr& va,
                        const Tensor& x) {
  const Tensor* t = c.scope->find(va.slot);
  OAR_ENFORCE(t != nullptr && t->defined(), ErrorCode::kNotFound,
              c.op->type << ": variable '" << va.var << "' (attribute " << va.attr << ") has no value");
  const DType dt = t->dtype();
  const int64_t count = t->numel();
  const bool list = va.type == oar::AttrType::kInts || va.type == oar::AttrType::kFloats;
  OAR_ENFORCE(list || count == 1, ErrorCode::kInvalidArgument,
              c.op->type << ": attribute " << va.attr << " needs one value, but variable '" << va.var
                         << "' has " << count << " (shape " << t->dims().to_string() << ")");
  OAR_ENFORCE(count <= (int64_t{1} << 20), ErrorCode::kInvalidArgument,
              c.op->type << ": variable '" << va.var << "' is too large for attribute " << va.attr);
  std::vector<double> f(static_cast<size_t>(count));
  std::vector<int64_t> i(static_cast<size_t>(count));
  const bool is_float = dt == DType::kFloat32 || dt == DType::kFloat64;
  OAR_ENFORCE(is_float || dt == DType::kInt64 || dt == DType::kInt32 || dt == DType::kBool, ErrorCode::kType,
              c.op->type << ": attribute " << va.attr << " from variable '" << va.var << "' of dtype "
                         << dtype_name(dt) << "; expected int32, int64, bool, float32 or float64");
  const Tensor h = t->cpu();
  if (dt == DType::kFloat32) {
    auto v = h.to_vector<float>();
    for (int64_t k = 0; k < count; ++k) f[k] = v[k];
  } else if (dt == DType::kFloat64) {
    f = h.to_vector<double>();
  } else if (dt == DType::kInt64) {
    i = h.to_vector<int64_t>();
  } else if (dt == DType::kInt32) {
    auto v = h.to_vector<int32_t>();
    for (int64_t k = 0; k < count; ++k) i[k] = v[k];
  } else {
    auto v = h.to_vector<uint8_t>();
    for (int64_t k = 0; k < count; ++k) i[k] = v[k] != 0;
  }
  if (va.type == oar::AttrType::kFloat || va.type == oar::AttrType::kFloats) {
    if (!is_float)
      for (int64_t k = 0; k < count; ++k) f[k] = static_cast<double>(i[k]);
    if (va.type == oar::AttrType::kFloat) return f[0];
    return f;
  }
  if (is_float)
    for (int64_t k = 0; k < count; ++k) {
      OAR_ENFORCE(std::isfinite(f[k]) && std::fabs(f[k]) < 9.0e18, ErrorCode::kInvalidArgument,
                  c.op->type << ": attribute " << va.attr << " from variable '" << va.var << "': " << f[k]
                             << " is not an integer in range");
      i[k] = static_cast<int64_t>(f[k]);
    }
  if (va.type == oar::AttrType::kInt) return i[0];
  if (n.is_view && std::strcmp(n.def->name, "reshape") == 0)  // Paddle's 0: the input's extent there
    for (int64_t k = 0; k < count && k < x.ndim(); ++k)
      if (i[k] == 0) i[k] = x.dims()[static_cast<int32_t>(k)];
  return i;
}

}  // namespace

bool is_native_op_type(const std::string& type) { return type.rfind("oar.", 0) == 0; }

OpKernelFn translate_native_op(const OpDesc& od) {
  auto n = std::make_shared<NativeOp>();
  const std::string name = od.type.substr(4);
  n->def = find_view_op(name);
  n->is_view = n->def != nullptr;
  if (!n->def) n->def = OpRegistry::get().find(name);
  OAR_ENFORCE(
      n->def != nullptr, ErrorCode::kUnimplemented,
      od.type << ": this build of oar has no op named '" << name << "' (a custom op library not loaded?)");
  const OpDef& def = *n->def;
  for (auto& [slot, args] : od.inputs) {
    if (slot.empty() || slot[0] != kVarAttrPrefix) continue;
    const std::string attr = slot.substr(1);
    const AttrDef* a = nullptr;
    for (const AttrDef& d : def.attrs)
      if (attr == d.name) a = &d;
    OAR_ENFORCE(
        a != nullptr && args.size() == 1 && a->type != oar::AttrType::kString, ErrorCode::kInvalidArgument,
        od.type << ": input slot '" << slot << "' must name one variable for a numeric attribute of the op");
    n->var_attrs.push_back({a->name, a->type, args[0]});
  }
  if (const Attribute* d = od.find_attr("@out_dims"); d != nullptr && !n->var_attrs.empty()) {
    const auto dims =
        std::get<std::vector<int64_t>>(from_ir_attr(*d, oar::AttrType::kInts, od.type, "@out_dims"));
    for (size_t axis = 0; axis < dims.size(); ++axis)
      for (int i = 0; i < kNumUnknownDims; ++i)
        if (dims[axis] == kUnknownDims[i]) n->measures.emplace_back(static_cast<int32_t>(axis), i);
  }
  for (const AttrDef& a : def.attrs) {
    const Attribute* v = od.find_attr(a.name);
    if (v == nullptr) continue;  // the schema's default
    AttrValue av = from_ir_attr(*v, a.type, od.type, a.name);
    bool from_var = false;  // the placeholder of a run-time attribute may hold the sentinel
    for (auto& va : n->var_attrs) from_var |= std::strcmp(va.attr, a.name) == 0;
    if (!from_var) n->needs_extent |= mentions_unknown(av);
    n->attrs.set(a.name, std::move(av));
  }
  if (def.variadic) {
    n->inputs = od.input(def.inputs[0]);
  } else {
    for (const char* slot : def.inputs) {
      const auto& args = od.input(slot);
      OAR_ENFORCE(
          args.size() == 1, ErrorCode::kInvalidArgument,
          od.type << ": input slot '" << slot << "' must name exactly one variable, got " << args.size());
      n->inputs.push_back(args[0]);
    }
  }
  for (const char* slot : def.outputs) {
    const auto& args = od.output(slot);
    n->outputs.push_back(args.empty() ? std::string() : args[0]);
  }
  n->may_reuse = !n->is_view && def.inplace_input < 0 && def.inplace_mask == 0;
  return [n](OpRunContext& c) {
    const OpDef& def = *n->def;
    if (c.scope != n->scope) n->bind(c.scope);
    Tensor small[4];
    std::vector<Tensor> large;
    Tensor* in = small;
    const auto n_in = static_cast<int32_t>(n->inputs.size());
    if (n_in > 4) {
      large.resize(n_in);
      in = large.data();
    }
    for (int32_t i = 0; i < n_in; ++i) {
      const Tensor* t = c.scope->find(n->in_slots[i]);
      OAR_ENFORCE(t != nullptr && t->defined(), ErrorCode::kNotFound,
                  c.op->type << ": input variable '" << n->inputs[i]
                             << "' has no value (not fed, not a parameter, not computed)");
      in[i] = *t;
    }
    // run_op completes the attributes (defaults) and normalises some (axes) in place; both are
    // idempotent for a fixed program, so one Attrs serves every run instead of a copy per run.
    Attrs* attrs = &n->attrs;
    Attrs sub;
    if (n->needs_extent) {
      for (size_t i = 0; i < n->attrs.size(); ++i)
        sub.set(n->attrs[i].first, substitute(n->attrs[i].second, c));
      attrs = &sub;
    }
    if (!n->var_attrs.empty()) {
      if (attrs != &sub) sub = *attrs;
      for (auto& va : n->var_attrs) sub.set(va.attr, read_var_attr(c, *n, va, in[0]));
      attrs = &sub;
    }
    if (n->is_view) {
      Tensor v = run_view_op(def, in[0], *attrs);
      n->measure(c, v);
      if (n->out_slots[0] >= 0) c.scope->set(n->out_slots[0], std::move(v));
      return;
    }
    Tensor outs[kMaxOpOutputs];
    const bool fixed_attrs = !n->needs_extent && n->var_attrs.empty();
    if (fixed_attrs && current_builder() == nullptr && n->same_inputs(in, n_in)) {
      if (c.reused != nullptr && n->may_reuse) {
        for (size_t i = 0; i < def.outputs.size(); ++i) {
          if (n->out_bytes[i] == 0) continue;
          outs[i] = c.scope->take(n->out_bytes[i], n->device, n->out_meta[i]);
          *c.reused += outs[i].defined();
        }
      }
      run_op_inferred(def, in, n_in, *attrs, c.place, n->out_meta, outs);
    } else {
      run_op(def, in, n_in, *attrs, c.place, outs, n->out_meta);
      // Remembered only for a run that ran (not recorded into a program) with a fixed Attrs.
      n->inferred = fixed_attrs && current_builder() == nullptr;
      n->in_meta.resize(n_in);
      for (int32_t i = 0; i < n_in; ++i) n->in_meta[i] = TensorMeta{in[i].dtype(), in[i].dims()};
      n->place = n_in > 0 ? in[0].place() : c.place;
      n->device = &Runtime::get().device(n->place);
      for (size_t i = 0; i < def.outputs.size(); ++i) {
        const int64_t numel = n->out_meta[i].dims.numel();
        n->out_bytes[i] = numel > 0 ? static_cast<size_t>(numel * dtype_size(n->out_meta[i].dtype)) : 0;
      }
    }
    if (!n->measures.empty()) n->measure(c, outs[0]);
    for (size_t i = 0; i < n->out_slots.size(); ++i)
      if (n->out_slots[i] >= 0) c.scope->set(n->out_slots[i], std::move(outs[i]));
  };
}

OpKernelFn translate_custom_op(const OpDesc& od) {
  const OpDef* def = OpRegistry::get().find(od.type);
  OAR_ENFORCE(def != nullptr && def->custom, ErrorCode::kUnimplemented,
              od.type << ": not a loaded custom op (load its library first: oar.utils.load_op_library, or "
                         "OAR_CUSTOM_OP_LIBS for the predictor)");
  auto n = std::make_shared<NativeOp>();
  n->def = def;
  for (const AttrDef& a : def->attrs) {
    const Attribute* v = od.find_attr(a.name);
    if (v == nullptr) continue;
    n->attrs.set(a.name, from_ir_attr(*v, a.type, od.type, a.name));
  }
  std::vector<int64_t> counts;
  for (const char* slot : def->inputs) {
    const auto& args = od.input(slot);
    n->inputs.insert(n->inputs.end(), args.begin(), args.end());
    counts.push_back(static_cast<int64_t>(args.size()));
  }
  if (def->variadic) n->attrs.set(kCustomInputCounts, counts);
  for (const char* slot : def->outputs) {
    const auto& args = od.output(slot);
    n->outputs.push_back(args.empty() ? std::string() : args[0]);
  }
  custom_op_slot_counts(*def, n->attrs, static_cast<int32_t>(n->inputs.size()));  // checks the slots now
  return [n](OpRunContext& c) {
    std::vector<Tensor> in(n->inputs.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor* t = c.scope->find(n->inputs[i]);
      OAR_ENFORCE(t != nullptr && t->defined(), ErrorCode::kNotFound,
                  c.op->type << ": input variable '" << n->inputs[i]
                             << "' has no value (not fed, not a parameter, not computed)");
      in[i] = *t;
    }
    Attrs attrs = n->attrs;
    Tensor outs[kMaxOpOutputs];
    run_op(*n->def, in.data(), static_cast<int32_t>(in.size()), attrs, c.place, outs);
    for (size_t i = 0; i < n->outputs.size(); ++i)
      if (!n->outputs[i].empty()) c.scope->set(n->outputs[i], std::move(outs[i]));
  };
}

}  // namespace oar::ir
