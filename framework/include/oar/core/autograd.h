// Reverse-mode automatic differentiation for eager execution.
//
// When grad mode is on and an op's input requires a gradient, run_op records a GradNode holding what
// the op's gradient rule needs (saved tensors with their storage versions, attributes) and edges to the
// nodes that produced its inputs. backward() runs the graph in topological order; leaves accumulate
// into .grad. Gradient rules are written with ordinary ops, so with create_graph the backward pass is
// itself recorded and can be differentiated again.
#pragma once

#include <oar/core/op.h>
#include <oar/core/tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oar {

class GradNode;

// Where the gradient of one tensor flows: input slot `input_nr` of `node`.
struct Edge {
  std::shared_ptr<GradNode> node;
  int32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

using TensorHook = std::function<Tensor(const Tensor& grad)>;  // may return an undefined tensor: keep grad
// Runs after a leaf's gradient was accumulated into .grad (Paddle's Tensor._register_backward_hook;
// PyTorch's post-accumulate-grad hook). DataParallel's reducer learns from it that a gradient is final.
using PostAccumulateHook = std::function<void()>;

// Per-tensor autograd state; absent (nullptr) on tensors that never took part in differentiation.
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                          // accumulated gradient (leaves, and non-leaves that retain it)
  std::shared_ptr<GradNode> grad_fn;    // the node that produced this tensor; null for leaves
  int32_t output_nr = 0;                // which output of grad_fn
  std::weak_ptr<GradNode> accumulator;  // a leaf's AccumulateGrad node, while a graph uses it
  std::vector<TensorHook> hooks;        // leaf hooks, run before accumulation
  std::vector<std::pair<int64_t, PostAccumulateHook>> post_hooks;  // leaf hooks, run after it (by id)
  bool retain_grad = false;
  // clear_grad(set_to_zero) without work: the gradient is logically all zeros, `grad` only keeps its
  // shape, dtype and place. Reading it (autograd::grad) makes the zeros; the next accumulation simply
  // stores the arriving gradient (0 + g) instead of running an add.
  bool grad_is_zero = false;
  // stop_gradient set to False on an integer/bool leaf (Paddle allows it): remembered so that
  // stop_gradient reads back False, but such a tensor never requires or receives a gradient.
  bool keep_nondiff = false;
};

class GradNode {
 public:
  virtual ~GradNode() = default;
  // Gradients of this node's inputs from the gradients of its outputs (undefined = zero/absent).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  // Drops saved tensors once the graph has been run without retain_graph.
  virtual void release() {}
  int32_t num_outputs() const { return num_outputs_; }

  std::vector<Edge> next;  // one per input; invalid for inputs that need no gradient
  std::vector<std::vector<TensorHook>> pre_hooks;  // per output: hooks on that output's gradient

 protected:
  int32_t num_outputs_ = 1;
};

// A gradient rule: given the op's saved inputs and outputs, its attributes and the output gradients,
// returns one gradient per input (undefined where the input is not differentiable). Only the tensors
// the rule declared are saved (the others are undefined here); shapes and dtypes are always known.
struct GradContext {
  const OpDef* op;
  const std::vector<Tensor>& inputs;   // as the forward saw them; undefined unless saved
  const std::vector<Tensor>& outputs;  // undefined unless saved
  const std::vector<TensorMeta>& input_meta;
  const std::vector<TensorMeta>& output_meta;
  const Attrs& attrs;
  const std::vector<Tensor>& grad_outputs;  // undefined entries are zero
  std::vector<bool> needs_grad;             // per input
};

// The op's gradient rule (OpDef::grad); null = not differentiable.
inline const GradRule* grad_rule(const OpDef& op) { return op.grad.fn ? &op.grad : nullptr; }

// Grad mode: thread-local, on by default.
bool grad_enabled();
void set_grad_enabled(bool enabled);
class NoGradGuard {
 public:
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

namespace autograd {

// Whether tensors of dtype d can carry gradients (floating and complex).
inline bool differentiable_dtype(DType d) { return is_floating(d) || is_complex(d); }
bool requires_grad(const Tensor& t);
void set_requires_grad(const Tensor& t, bool value);  // only on leaves
// Paddle's stop_gradient: !requires_grad, except for a non-differentiable leaf set to False.
bool stop_gradient(const Tensor& t);
bool is_leaf(const Tensor& t);
Tensor grad(const Tensor& t);  // undefined when none accumulated
void clear_grad(const Tensor& t, bool set_to_zero = false);
void register_hook(const Tensor& t, TensorHook hook);
// A hook run each time backward has accumulated a gradient into the leaf `t`'s .grad; returns an id
// for remove_post_accumulate_hook (which returns false when no hook has that id).
int64_t register_post_accumulate_hook(const Tensor& t, PostAccumulateHook hook);
bool remove_post_accumulate_hook(const Tensor& t, int64_t id);
// Replaces the accumulated gradient of `t` (undefined: none). Shape, dtype and place must match `t`'s.
void set_grad(const Tensor& t, const Tensor& g);
// Queues `fn` to run once when the outermost backward() running on this thread has finished its graph
// (PyTorch's queue_callback, Paddle's _add_backward_final_hook); callbacks queued by callbacks run too.
// Outside a backward it is an error. If the backward fails, its queued callbacks are dropped.
void queue_backward_callback(std::function<void()> fn);
void retain_grad(const Tensor& t);
Tensor detach(const Tensor& t);  // shares storage, no history
// Sums `g` over the dimensions that broadcasting expanded, so that it has `shape` again.
Tensor sum_to(const Tensor& g, const Dims& shape);
Edge edge_of(const Tensor& t);

// Installs autograd's dispatch hook (dispatch_hooks.h): in-place checks before an op, record_op /
// record_inplace after it. Called once at start-up (core_hooks.cc).
void install_hook();
// Called by the hook after an op ran: records its node when needed.
void record_op(const OpDef& op, const Tensor* inputs, int32_t n_inputs, const Attrs& attrs, Tensor* outputs,
               int32_t n_outputs);
// Called by dispatch around an op that writes into an input. With gradients involved, check_inplace
// refuses writes autograd cannot follow (into a leaf that requires gradients, into memory shared with
// other tensors, or by an op without a gradient rule); record_inplace then gives the destination a new
// history: the op's node, whose edge for the destination is its old history.
void check_inplace(const OpDef& op, const Tensor* inputs, int32_t n_inputs);
void record_inplace(const OpDef& op, const Tensor* inputs, int32_t n_inputs, const Attrs& attrs);
// x[index] = value: writes `value` into `view` (a view of `base`); with gradients involved, base's
// history becomes the write (base must be contiguous and not a leaf that requires gradients).
void assign_region(const Tensor& base, const Tensor& view, const Tensor& value);
// Called by the view methods: `view` gets a node whose backward is `backward(grad of view)`.
void record_view(const Tensor& base, Tensor& view, const char* name, std::function<Tensor(const Tensor&)> backward);

// A custom node (PyLayer): `node` gets an edge for each input (invalid for undefined ones or those
// not requiring gradients) and becomes the history of each defined, differentiable output.
void record_custom(const std::shared_ptr<GradNode>& node, const std::vector<Tensor>& inputs,
                   std::vector<Tensor>& outputs);

// Runs backward from `roots` (gradients default to ones for one-element roots). Leaves accumulate.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots = {},
              bool retain_graph = false, bool create_graph = false);

// Gradients of `outputs` with respect to `inputs`, without touching .grad (paddle.grad / torch.autograd.grad).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);
// grad() with `inputs` treated as independent variables: a gradient reaching an input is handed back and
// not propagated into the input's own history (partial derivatives). A custom node's backward needs this
// when some of its inputs depend on others (static control flow: a branch reading both h = lin(x) and
// lin's weight), or the engine running the node would count the path through h twice.
std::vector<Tensor> partial_grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 bool create_graph, bool allow_unused);

}  // namespace autograd
}  // namespace oar
