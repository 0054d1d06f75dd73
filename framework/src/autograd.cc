// Autograd: grad mode, graph recording, the backward engine, and the gradient rule of each op.
#include <oar/core/autograd.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>

#include <atomic>
#include <cmath>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "grad_util.h"
#include "op_util.h"

namespace oar {

// ---- grad mode ----------------------------------------------------------------------------------
// Grad mode is the engagement of the autograd dispatch hook on this thread (dispatch_hooks.h): run_op
// skips the hook entirely while it is off.
bool grad_enabled() { return dispatch_hook_engaged(HookSlot::kAutograd); }
void set_grad_enabled(bool enabled) { set_dispatch_hook_engaged(HookSlot::kAutograd, enabled); }

namespace autograd {
namespace {

AutogradMeta* meta(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

AutogradMeta& ensure_meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}

}  // namespace

Tensor sum_to(const Tensor& g, const Dims& shape) {
  if (!g.defined() || g.dims() == shape) return g;
  const int32_t lead = g.ndim() - shape.size();
  std::vector<int64_t> axes;
  for (int32_t i = 0; i < lead; ++i) axes.push_back(i);
  for (int32_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && g.dims()[lead + i] != 1) axes.push_back(lead + i);
  if (axes.empty()) return g.reshape(shape);
  // Only leading axes reduced: the sum without keepdim has the target shape already; without leading
  // axes the keepdim sum has it. Either way no reshape op follows (a bias gradient is one op).
  const bool inner = static_cast<int32_t>(axes.size()) > lead;
  if (!inner) return ops::sum(g, axes, /*keepdim=*/false);
  if (lead == 0) return ops::sum(g, axes, /*keepdim=*/true);
  return ops::sum(g, axes, /*keepdim=*/true).reshape(shape);
}

namespace {

using gradutil::scalar_like;

// ---- nodes ---------------------------------------------------------------------------------------
// A tensor saved for backward, with the storage version it had then. It is kept as an alias without
// history (so an in-place op that later gives the original tensor a new history cannot form a cycle
// through this node) and gets its history back when the node runs: an output's is the node itself, an
// input's is the edge it had when saved.
// Counts the alias on its storage while it lives (Storage::saved_aliases).
struct SavedAlias {
  Tensor tensor;
  explicit SavedAlias(const Tensor& t) : tensor(detach(t)) { tensor.storage()->add_saved_alias(1); }
  ~SavedAlias() { tensor.storage()->add_saved_alias(-1); }
  SavedAlias(const SavedAlias&) = delete;
  SavedAlias& operator=(const SavedAlias&) = delete;
};

struct SavedTensor {
  Tensor tensor;
  std::shared_ptr<SavedAlias> alias;
  uint32_t version = 0;
  bool is_output = false;
  Edge edge;  // inputs that required gradients: where their gradient flowed when saved

  static SavedTensor of(const Tensor& t, bool is_output) {
    SavedTensor s;
    s.alias = std::make_shared<SavedAlias>(t);
    s.tensor = s.alias->tensor;
    s.version = t.storage()->version();
    s.is_output = is_output;
    if (!is_output) s.edge = edge_of(t);
    return s;
  }
  Tensor unpack(const std::shared_ptr<GradNode>& owner, int32_t output_nr, const char* op, const char* what,
                int32_t index) const {
    if (!tensor.defined()) return tensor;  // not saved: the rule only needs its shape
    OAR_ENFORCE(tensor.storage()->version() == version, ErrorCode::kPrecondition,
                op << ": " << what << " " << index
                   << " saved for backward was modified by an in-place operation "
                   << "(its version is " << tensor.storage()->version() << ", it was " << version
                   << " when saved); compute the backward before modifying it, or clone it first");
    if (!grad_enabled() || !(is_output || edge.valid())) return tensor;
    Tensor t = detach(tensor);  // with its history, so create_graph can see through it
    AutogradMeta& m = ensure_meta(t);
    m.requires_grad = true;
    m.grad_fn = is_output ? owner : edge.node;
    m.output_nr = is_output ? output_nr : edge.input_nr;
    return t;
  }
};

class OpNode final : public GradNode, public std::enable_shared_from_this<OpNode> {
 public:
  OpNode(const OpDef& op, GradFn rule, const Attrs& attrs) : op_(op), rule_(rule), attrs_(attrs) {}
  std::vector<TensorMeta> input_meta_, output_meta_;
  std::string name() const override { return std::string(op_.name) + "_grad"; }
  void release() override {
    // A node that saved nothing (a cast) can run again: nothing of it was freed. AMP's cached weight
    // casts are such nodes, shared by every forward of an auto_cast region.
    for (const auto* saved : {&inputs_, &outputs_})
      for (const SavedTensor& t : *saved) released_ = released_ || t.tensor.defined();
    inputs_.clear();
    outputs_.clear();
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    OAR_ENFORCE(
        !released_, ErrorCode::kPrecondition,
        op_.name << ": trying to run backward through the graph a second time (its saved tensors were "
                    "freed); pass retain_graph=True to the first backward");
    auto self = shared_from_this();
    std::vector<Tensor> in, out;
    for (size_t i = 0; i < inputs_.size(); ++i)
      in.push_back(inputs_[i].unpack(self, 0, op_.name, "input", static_cast<int32_t>(i)));
    for (size_t i = 0; i < outputs_.size(); ++i)
      out.push_back(
          outputs_[i].unpack(self, static_cast<int32_t>(i), op_.name, "output", static_cast<int32_t>(i)));
    std::vector<bool> needs(next.size());
    for (size_t i = 0; i < next.size(); ++i) needs[i] = next[i].valid();
    // The engine hands over as many gradients as the highest output that received one; the rule
    // sees one (possibly undefined) per output.
    if (grad_outputs.size() < output_meta_.size()) grad_outputs.resize(output_meta_.size());
    GradContext ctx{&op_, in, out, input_meta_, output_meta_, attrs_, grad_outputs, needs};
    std::vector<Tensor> grads = rule_(ctx);
    grads.resize(next.size());
    return grads;
  }

  std::vector<SavedTensor> inputs_, outputs_;

 private:
  const OpDef& op_;
  GradFn rule_;
  Attrs attrs_;
  bool released_ = false;
};

// A view's backward: one input, one output, a function of the output's gradient.
class ViewNode final : public GradNode {
 public:
  ViewNode(const char* name, std::function<Tensor(const Tensor&)> fn) : name_(name), fn_(std::move(fn)) {}
  std::string name() const override { return std::string(name_) + "_grad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {g[0].defined() ? fn_(g[0]) : Tensor()};
  }

 private:
  const char* name_;
  std::function<Tensor(const Tensor&)> fn_;
};

// The end of every path into a leaf: adds the arriving gradient to the leaf's .grad.
class AccumulateGrad final : public GradNode {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::string name() const override { return "accumulate_grad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    Tensor grad = std::move(g[0]);
    if (!grad.defined()) return {};
    Tensor leaf(leaf_);
    AutogradMeta& m = ensure_meta(leaf);
    for (const auto& hook : m.hooks) {
      Tensor r = hook(grad);
      if (r.defined()) grad = r;
    }
    // Without create_graph the stored grad has no history: a new view, unless the gradient has no
    // autograd state and nobody else holds it (the usual case: a kernel's output passed on by the engine;
    // one gradient reaching two leaves, or kept by a hook, is shared and gets its own view each).
    if (!grad_enabled() && (grad.impl()->autograd || grad.impl_ptr().use_count() != 1)) grad = detach(grad);
    if (!grad.is_contiguous()) grad = grad.contiguous();
    m.grad = m.grad.defined() && !m.grad_is_zero ? ops::add(m.grad, grad) : grad;
    m.grad_is_zero = false;
    const auto post = m.post_hooks;  // a copy: a hook may register or remove hooks on this leaf
    for (const auto& [id, hook] : post) hook();
    return {};
  }
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

void attach_output(Tensor& out, const std::shared_ptr<GradNode>& node, int32_t nr) {
  if (!differentiable_dtype(out.dtype())) return;
  // A fresh impl: outputs of ops are new tensors, views share storage but carry their own history.
  AutogradMeta& m = ensure_meta(out);
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = nr;
}

}  // namespace

// ---- tensor-level API ---------------------------------------------------------------------------
bool requires_grad(const Tensor& t) {
  const AutogradMeta* m = meta(t);
  return m && m->requires_grad;
}

bool stop_gradient(const Tensor& t) {
  const AutogradMeta* m = meta(t);
  return !(m && (m->requires_grad || m->keep_nondiff));
}

void set_requires_grad(const Tensor& t, bool value) {
  AutogradMeta* m = meta(t);
  if (m && m->grad_fn) {
    // An op's output: stop_gradient = True cuts it from its history (Paddle), so it becomes a leaf
    // that needs no gradient; False changes nothing, it already has one.
    if (!value) {
      m->grad_fn.reset();
      m->requires_grad = false;
    }
    return;
  }
  if (!differentiable_dtype(t.dtype())) {  // Paddle accepts it; no gradient ever flows to such a tensor
    if (value || m) ensure_meta(t).keep_nondiff = value;
    return;
  }
  if (!value && !m) return;
  ensure_meta(t).requires_grad = value;
}

bool is_leaf(const Tensor& t) {
  const AutogradMeta* m = meta(t);
  return !(m && m->grad_fn);
}

Tensor grad(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (!m) return Tensor();
  if (m->grad_is_zero) {  // cleared with set_to_zero: the zeros are made when someone looks
    m->grad = ops::zeros(m->grad.dims(), m->grad.dtype(), m->grad.place());
    m->grad_is_zero = false;
  }
  return m->grad;
}

void clear_grad(const Tensor& t, bool set_to_zero) {
  AutogradMeta* m = meta(t);
  if (!m || !m->grad.defined()) return;
  // No work now: the flag stands for the zeros (AutogradMeta::grad_is_zero). The old tensor is never
  // written, so whoever still holds it keeps its values, as with a fresh zeros tensor.
  m->grad_is_zero = set_to_zero;
  if (!set_to_zero) m->grad = Tensor();
}

void register_hook(const Tensor& t, TensorHook hook) {
  OAR_ENFORCE(requires_grad(t), ErrorCode::kPrecondition,
              "register_hook: the tensor does not require gradients (stop_gradient is True)");
  AutogradMeta& m = ensure_meta(t);
  if (!m.grad_fn) {
    m.hooks.push_back(std::move(hook));
    return;
  }
  auto& pre = m.grad_fn->pre_hooks;
  if (static_cast<int32_t>(pre.size()) <= m.output_nr) pre.resize(m.output_nr + 1);
  pre[m.output_nr].push_back(std::move(hook));
}

int64_t register_post_accumulate_hook(const Tensor& t, PostAccumulateHook hook) {
  OAR_ENFORCE(requires_grad(t) && is_leaf(t), ErrorCode::kPrecondition,
              "register_post_accumulate_hook: the tensor must be a leaf that requires gradients "
              "(stop_gradient False)");
  static std::atomic<int64_t> next_id{1};
  const int64_t id = next_id++;
  ensure_meta(t).post_hooks.emplace_back(id, std::move(hook));
  return id;
}

bool remove_post_accumulate_hook(const Tensor& t, int64_t id) {
  AutogradMeta* m = meta(t);
  if (!m) return false;
  auto& v = m->post_hooks;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it->first == id) {
      v.erase(it);
      return true;
    }
  return false;
}

void set_grad(const Tensor& t, const Tensor& g) {
  if (!g.defined()) {
    clear_grad(t, false);
    return;
  }
  OAR_ENFORCE(g.dims() == t.dims() && g.dtype() == t.dtype() && g.place() == t.place(), ErrorCode::kInvalidArgument,
              "set_grad: the gradient (" << g.dims().to_string() << ", " << dtype_name(g.dtype())
                                         << ") does not match the tensor (" << t.dims().to_string() << ", "
                                         << dtype_name(t.dtype()) << ") or is on another place");
  AutogradMeta& m = ensure_meta(t);
  m.grad = g.is_contiguous() ? g : g.contiguous();
  m.grad_is_zero = false;
}

void retain_grad(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (!m || !m->grad_fn || m->retain_grad) return;
  m->retain_grad = true;
  std::weak_ptr<TensorImpl> weak = t.impl_ptr();
  register_hook(t, [weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      AutogradMeta& mm = *impl->autograd;
      Tensor gg = grad_enabled() ? g : detach(g);
      mm.grad = mm.grad.defined() && !mm.grad_is_zero ? ops::add(mm.grad, gg) : gg;
      mm.grad_is_zero = false;
    }
    return Tensor();
  });
}

Tensor detach(const Tensor& t) { return make_view(t, t.dims(), t.strides(), t.offset()); }

Edge edge_of(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (!m || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  std::shared_ptr<GradNode> acc = m->accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    m->accumulator = acc;
  }
  return {acc, 0};
}

namespace {
// The rule of a differentiable op that has none (OpDef::differentiable): its outputs take part in
// differentiation, and reaching them raises, naming the op, instead of treating them as constants.
std::vector<Tensor> missing_grad(const GradContext& c) {
  const std::string name = c.op->name;
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_grad") == 0)
    OAR_THROW(ErrorCode::kUnimplemented,
              name << ": has no gradient rule, so " << name.substr(0, name.size() - 5)
                   << " cannot be differentiated twice (its gradient, recorded with create_graph=True, was "
                      "differentiated again)");
  OAR_THROW(
      ErrorCode::kUnimplemented,
      name << ": has no gradient rule, so it cannot be differentiated; compute it under no_grad() or on "
              "detached inputs");
}
const GradRule kMissingGrad{missing_grad};
}  // namespace

void record_op(const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs, Tensor* outputs,
               int32_t n_out) {
  bool any = false;
  for (int32_t i = 0; i < n_in && !any; ++i) any = requires_grad(inputs[i]);
  if (!any) return;
  const GradRule* rule = grad_rule(op);
  if (!rule) {
    // Not differentiable by nature (comparisons, rounding, argmax, random) or no floating output: the
    // outputs carry no history. Otherwise they get a node that raises when differentiated.
    bool float_out = false;
    for (int32_t i = 0; i < n_out; ++i) float_out = float_out || differentiable_dtype(outputs[i].dtype());
    if (!op.differentiable || !float_out) return;
    rule = &kMissingGrad;
  }
  auto node = std::make_shared<OpNode>(op, rule->fn, attrs);
  auto others_need = [&](int32_t i) {
    for (int32_t j = 0; j < n_in; ++j)
      if (j != i && requires_grad(inputs[j])) return true;
    return false;
  };
  node->next.resize(n_in);
  node->inputs_.resize(n_in);
  for (int32_t i = 0; i < n_in; ++i) {
    node->next[i] = edge_of(inputs[i]);
    node->input_meta_.push_back({inputs[i].dtype(), inputs[i].dims()});
    if (i < 32 && (rule->saved_inputs >> i & 1u) && (!(rule->saved_for_others >> i & 1u) || others_need(i)))
      node->inputs_[i] = SavedTensor::of(inputs[i], false);
  }
  node->outputs_.resize(n_out);
  for (int32_t i = 0; i < n_out; ++i) {
    node->output_meta_.push_back({outputs[i].dtype(), outputs[i].dims()});
    if (rule->saved_outputs) node->outputs_[i] = SavedTensor::of(outputs[i], true);
  }
  for (int32_t i = 0; i < n_out; ++i) attach_output(outputs[i], node, i);
}

void check_inplace(const OpDef& op, const Tensor* inputs, int32_t n_in) {
  bool any = false;
  for (int32_t i = 0; i < n_in && !any; ++i) any = requires_grad(inputs[i]);
  if (!any) return;
  OAR_ENFORCE(op.inplace_input >= 0, ErrorCode::kPrecondition,
              op.name << ": writes into its inputs in place and is not differentiable; run it under no_grad");
  const Tensor& dst = inputs[op.inplace_input];
  OAR_ENFORCE(!(requires_grad(dst) && is_leaf(dst)), ErrorCode::kPrecondition,
              op.name << ": a leaf tensor that requires gradients (stop_gradient=False) cannot be modified in "
                         "place; do it under no_grad, or on a copy");
  const GradRule* rule = grad_rule(op);
  OAR_ENFORCE(rule, ErrorCode::kUnimplemented,
              op.name << ": this in-place op is not differentiable; use the out-of-place op, or no_grad");
  // The rule runs after the write, so it cannot read the destination's old values.
  OAR_ENFORCE(!(rule->saved_inputs >> op.inplace_input & 1u), ErrorCode::kInternal,
              op.name << ": the gradient rule of an in-place op must not read its destination");
  // A write through one tensor would change what another one sharing the memory holds without
  // giving it the new history: refuse rather than compute wrong gradients.
  // (Copies saved for backward do not count: their version check catches a write they would miss.)
  OAR_ENFORCE(dst.storage().use_count() - dst.storage()->saved_aliases() == 1, ErrorCode::kUnimplemented,
              op.name << ": cannot write in place, with gradients involved, into a tensor that shares its memory "
                         "with another tensor (a view of it, the tensor it is a view of, or a tensor saved for "
                         "backward); assign through the base tensor with x[index] = value, or use the "
                         "out-of-place op");
}

void record_inplace(const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs) {
  Tensor dst = inputs[op.inplace_input];  // shares the impl: the caller's tensor gets the new history
  record_op(op, inputs, n_in, attrs, &dst, 1);
}

namespace {
// x[index] = value on a tensor taking part in differentiation: the write's node replaces base's
// history. base's gradient is the incoming one with the written region zeroed; value's is that
// region, summed back to value's shape.
class AssignRegionNode final : public GradNode {
 public:
  AssignRegionNode(const Tensor& base, const Tensor& view, const Tensor& value)
      : base_dims_(base.dims()),
        view_dims_(view.dims()),
        view_strides_(view.strides()),
        offset_(view.offset() - base.offset()),
        value_dims_(value.dims()),
        value_dtype_(value.dtype()) {}
  std::string name() const override { return "setitem_grad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    Tensor gb, gv;
    if (next[0].valid()) {
      Tensor keep = ops::ones(base_dims_, g[0].dtype(), g[0].place());
      {
        NoGradGuard ng;
        ops::assign(make_view(keep, view_dims_, view_strides_, offset_), scalar_like(0, keep));
      }
      gb = ops::multiply(g[0], keep);
    }
    if (next[1].valid()) {
      Tensor gc = g[0].contiguous();
      Tensor region = make_view(gc, view_dims_, view_strides_, gc.offset() + offset_);
      gv = sum_to(ops::cast(region, value_dtype_), value_dims_);
    }
    return {gb, gv};
  }

 private:
  Dims base_dims_, view_dims_, view_strides_;
  int64_t offset_;
  Dims value_dims_;
  DType value_dtype_;
};
}  // namespace

void assign_region(const Tensor& base, const Tensor& view, const Tensor& value) {
  const bool track = grad_enabled() && (requires_grad(base) || requires_grad(value));
  if (!track) {
    ops::assign(view, value);
    return;
  }
  OAR_ENFORCE(!(requires_grad(base) && is_leaf(base)), ErrorCode::kPrecondition,
              "setitem: a leaf tensor that requires gradients (stop_gradient=False) cannot be modified in place; "
              "do it under no_grad, or on a copy (x = x.clone())");
  OAR_ENFORCE(base.is_contiguous(), ErrorCode::kUnimplemented,
              "setitem: writing into a non-contiguous tensor with gradients involved is not supported; "
              "use x = x.contiguous() first");
  OAR_ENFORCE(differentiable_dtype(base.dtype()), ErrorCode::kType,
              "setitem: a value that requires gradients cannot be written into a " << dtype_name(base.dtype())
                                                                                   << " tensor");
  OAR_ENFORCE(view.storage() == base.storage(), ErrorCode::kInvalidArgument,
              "setitem: the destination is not a view of the tensor being assigned to");
  auto node = std::make_shared<AssignRegionNode>(base, view, value);
  node->next = {edge_of(base), edge_of(value)};
  {
    NoGradGuard ng;
    ops::assign(view, value);
  }
  Tensor b = base;
  attach_output(b, node, 0);
}

void record_custom(const std::shared_ptr<GradNode>& node, const std::vector<Tensor>& inputs,
                   std::vector<Tensor>& outputs) {
  node->next.clear();
  for (const Tensor& t : inputs) node->next.push_back(t.defined() ? edge_of(t) : Edge{});
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined()) attach_output(outputs[i], node, static_cast<int32_t>(i));
}

void record_view(const Tensor& base, Tensor& view, const char* name,
                 std::function<Tensor(const Tensor&)> backward) {
  if (!grad_enabled() || !requires_grad(base)) return;
  auto node = std::make_shared<ViewNode>(name, std::move(backward));
  node->next = {edge_of(base)};
  attach_output(view, node, 0);
}

// ---- the engine -----------------------------------------------------------------------------------
namespace {

// Backward runs on the calling thread: the nesting depth of backward() and the callbacks queued for the
// end of the outermost one are per thread.
thread_local int32_t backward_depth = 0;
thread_local std::vector<std::function<void()>> backward_callbacks;

struct Capture {  // for grad(): which (node, slot) gradients to hand back instead of accumulating
  std::vector<Edge> targets;
  std::vector<Tensor> results;
  bool stop = false;  // partial_grad: a target's gradient is not propagated further
};

void run_graph(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, bool retain_graph,
               bool create_graph, Capture* capture) {
  struct GradModeScope {
    bool prev;
    explicit GradModeScope(bool on) : prev(grad_enabled()) { set_grad_enabled(on); }
    ~GradModeScope() { set_grad_enabled(prev); }
  } mode(create_graph);
  // Gradients run in the dtypes of the forward: auto_cast does not apply inside backward (as PyTorch and
  // Paddle); a create_graph backward records the same ops.
  struct AmpOff {
    bool prev = dispatch_hook_engaged(HookSlot::kAmp);
    AmpOff() { set_dispatch_hook_engaged(HookSlot::kAmp, false); }
    ~AmpOff() { set_dispatch_hook_engaged(HookSlot::kAmp, prev); }
  } amp_off;

  // Dependencies: how many edges point at each node from nodes reachable from the roots.
  std::unordered_map<GradNode*, int32_t> deps;
  std::unordered_map<GradNode*, std::shared_ptr<GradNode>> keep;
  std::vector<GradNode*> stack;
  for (const Edge& r : roots)
    if (r.valid() && keep.emplace(r.node.get(), r.node).second) stack.push_back(r.node.get());
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.valid()) continue;
      ++deps[e.node.get()];
      if (keep.emplace(e.node.get(), e.node).second) stack.push_back(e.node.get());
    }
  }
  std::unordered_map<GradNode*, std::vector<Tensor>> buffers;
  auto add_to = [&](const Edge& e, const Tensor& g) {
    auto& buf = buffers[e.node.get()];
    if (buf.size() <= static_cast<size_t>(e.input_nr)) buf.resize(e.input_nr + 1);
    buf[e.input_nr] = buf[e.input_nr].defined() ? ops::add(buf[e.input_nr], g) : g;
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) add_to(roots[i], root_grads[i]);

  std::deque<GradNode*> ready;
  for (const auto& [n, node] : keep)
    if (deps[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    GradNode* n = ready.front();
    ready.pop_front();
    std::vector<Tensor> grads = std::move(buffers[n]);
    grads.resize(std::max<size_t>(grads.size(), static_cast<size_t>(n->num_outputs())));
    for (size_t nr = 0; nr < n->pre_hooks.size() && nr < grads.size(); ++nr)
      for (const auto& hook : n->pre_hooks[nr])
        if (grads[nr].defined()) {
          Tensor r = hook(grads[nr]);
          if (r.defined()) grads[nr] = r;
        }
    bool skip = false;
    if (capture) {
      for (size_t k = 0; k < capture->targets.size(); ++k)
        if (capture->targets[k].node.get() == n) {
          const Tensor& g = grads[capture->targets[k].input_nr];
          if (g.defined())
            capture->results[k] = capture->results[k].defined() ? ops::add(capture->results[k], g) : g;
        }
      if (capture->stop)
        for (const Edge& t : capture->targets)
          if (t.node.get() == n) grads[t.input_nr] = Tensor();
      skip = dynamic_cast<AccumulateGrad*>(n) != nullptr;  // grad() leaves .grad alone
    }
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    std::vector<Tensor> in_grads;
    if (!skip && any) in_grads = n->apply(std::move(grads));
    if (!retain_graph) n->release();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.valid()) continue;
      if (i < in_grads.size() && in_grads[i].defined()) add_to(e, in_grads[i]);
      if (--deps[e.node.get()] == 0) ready.push_back(e.node.get());
    }
  }
}

std::vector<Tensor> default_root_grads(const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  OAR_ENFORCE(given.empty() || given.size() == roots.size(), ErrorCode::kInvalidArgument,
              "backward: got " << given.size() << " gradients for " << roots.size() << " tensors");
  std::vector<Tensor> out;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    OAR_ENFORCE(requires_grad(r), ErrorCode::kPrecondition,
                "backward: tensor " << i
                                    << " does not require gradients (stop_gradient is True) and has no "
                                       "history to differentiate");
    if (i < given.size() && given[i].defined()) {
      OAR_ENFORCE(given[i].dims() == r.dims(), ErrorCode::kInvalidArgument,
                  "backward: the gradient's shape " << given[i].dims().to_string()
                                                    << " differs from the tensor's " << r.dims().to_string());
      out.push_back(given[i]);
    } else {
      // Paddle fills ones of the tensor's shape when no gradient is given (PyTorch requires a scalar).
      out.push_back(ops::full(r.dims(), 1.0, r.dtype(), r.place()));
    }
  }
  return out;
}

}  // namespace

void queue_backward_callback(std::function<void()> fn) {
  OAR_ENFORCE(backward_depth > 0, ErrorCode::kPrecondition,
              "queue_backward_callback: no backward is running on this thread");
  backward_callbacks.push_back(std::move(fn));
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, bool retain_graph,
              bool create_graph) {
  std::vector<Tensor> grads = default_root_grads(roots, grad_roots);
  std::vector<Edge> edges;
  for (const Tensor& r : roots) edges.push_back(edge_of(r));
  struct Depth {
    Depth() { ++backward_depth; }
    ~Depth() {
      if (--backward_depth == 0) backward_callbacks.clear();  // also drops them when the graph failed
    }
  } depth;
  run_graph(edges, grads, retain_graph || create_graph, create_graph, nullptr);
  if (backward_depth > 1) return;
  for (size_t i = 0; i < backward_callbacks.size(); ++i) {  // by index: a callback may queue more
    std::function<void()> fn = std::move(backward_callbacks[i]);
    fn();
  }
}

namespace {
std::vector<Tensor> grad_impl(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& grad_outputs, bool retain_graph, bool create_graph,
                              bool allow_unused, bool stop) {
  std::vector<Tensor> grads = default_root_grads(outputs, grad_outputs);
  std::vector<Edge> edges;
  for (const Tensor& r : outputs) edges.push_back(edge_of(r));
  Capture cap;
  cap.stop = stop;
  for (size_t i = 0; i < inputs.size(); ++i) {
    OAR_ENFORCE(requires_grad(inputs[i]), ErrorCode::kInvalidArgument,
                "grad: inputs[" << i << "] does not require gradients (stop_gradient is True)");
    cap.targets.push_back(edge_of(inputs[i]));
  }
  cap.results.resize(inputs.size());
  run_graph(edges, grads, retain_graph || create_graph, create_graph, &cap);
  for (size_t i = 0; i < inputs.size(); ++i)
    OAR_ENFORCE(
        allow_unused || cap.results[i].defined(), ErrorCode::kInvalidArgument,
        "grad: inputs[" << i << "] is not reachable from the outputs; pass allow_unused=True to get None");
  return cap.results;
}
}  // namespace

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool create_graph,
                         bool allow_unused) {
  return grad_impl(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, false);
}

std::vector<Tensor> partial_grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph, bool create_graph,
                                 bool allow_unused) {
  return grad_impl(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, true);
}

// ---- the dispatch hook: record each op's gradient node --------------------------------------------
namespace {
bool check_op_call(OpCall& c) {
  if ((c.op.inplace_input >= 0 || c.op.inplace_mask != 0) && grad_enabled())
    check_inplace(c.op, c.inputs, c.n_inputs);
  return false;
}
void record_op_call(OpCall& c) {  // runs only in grad mode (the hook is engaged)
  if (c.op.inplace_input >= 0)
    record_inplace(c.op, c.inputs, c.n_inputs, c.attrs);
  else if (!c.op.inplace_mask)
    record_op(c.op, c.inputs, c.n_inputs, c.attrs, c.outputs, static_cast<int32_t>(c.op.outputs.size()));
}
// check_op_call also runs, grad mode or not, on a call with a symbolic input: it checks grad mode itself.
const DispatchHook kAutogradHook{check_op_call, record_op_call, nullptr, nullptr,
                                 /*before_writes_only=*/true};
}  // namespace

void install_hook() { install_dispatch_hook(HookSlot::kAutograd, &kAutogradHook); }

}  // namespace autograd

}  // namespace oar
