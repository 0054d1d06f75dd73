// The dispatcher's extension points. run_op calls the installed hooks around every op, in a fixed order,
// so the eager core does not know the subsystems that watch op calls or take them over: autograd
// recording (autograd.cc), static-graph recording (ir/static_graph.cc), AMP casts (amp.cc, through
// `cast_inputs`) and the profiler's op timing (profiler.cc), each in its own slot.
#pragma once

#include <oar/core/op.h>
#include <oar/core/tensor.h>

#include <vector>

namespace oar {

// One op call as the hooks see it, after attribute completion and shape inference.
struct OpCall {
  const OpDef& op;
  const Tensor* inputs;
  int32_t n_inputs;
  Attrs& attrs;
  const InferContext& infer;  // the inferred outputs
  Place place;
  Tensor* outputs;  // room for op.outputs.size() tensors; filled by the kernel or by a hook
  bool symbolic_inputs = false;  // some input has a symbol (TensorImpl::symbol: a static-graph variable)
};

struct DispatchHook {
  // Before the kernel runs. Returning true takes the call over: the hook has filled `outputs` and no
  // kernel runs; hooks in later slots do not see this call's `before`. nullptr: nothing to do.
  bool (*before)(OpCall& call) = nullptr;
  // After the kernel (or the hook that took the call over), once written inputs have new versions.
  void (*after)(OpCall& call) = nullptr;
  // A view made by the core (reshape, transpose, slice, squeeze, unsqueeze, expand; `op` names it): the
  // hook may replace `view` (a static-graph recording). nullptr: nothing to do.
  void (*view)(const Tensor& base, Tensor& view, const char* op, const Attrs& attrs) = nullptr;
  // Reading the memory of a tensor that has a symbol (a static-graph variable, made by the hook's own
  // subsystem): throws the subsystem's error naming the variable.
  void (*symbolic_access)(const Tensor& t) = nullptr;
  // `before` matters only for calls that write an input in place: the dispatcher skips it on the others.
  bool before_writes_only = false;
  // Before shape inference: may replace the call's inputs (AMP casts them to the op's precision). Returns
  // true when `cast` holds the inputs to use instead. nullptr: nothing to do.
  bool (*cast_inputs)(const OpDef& op, const Tensor* inputs, int32_t n_inputs,
                      std::vector<Tensor>& cast) = nullptr;
};

// The slots, in the order their hooks run.
// kProfiler comes last, so its `after` sees the time the other slots' `after` took as part of the op.
enum class HookSlot : int { kAutograd = 0, kStaticGraph = 1, kAmp = 2, kProfiler = 3, kCount = 4 };

// Installs `hook` (static storage) in `slot`, replacing what was there. Done once, at start-up, by
// install_core_hooks (core_hooks.cc), before any op runs.
void install_dispatch_hook(HookSlot slot, const DispatchHook* hook);
const DispatchHook* dispatch_hook(HookSlot slot);

// Per thread, a slot is engaged while its subsystem has work on every op (autograd: grad mode is on;
// static graph: a program is being built). run_op calls `before` and `after` of engaged slots only, so
// an idle subsystem costs nothing per op; on a call with a symbolic input it calls every slot's
// `before`, so that the subsystem that made the symbol can refuse the call. A new thread starts with
// kAutograd engaged (grad mode is on by default) and the other slots not. The subsystem that owns a
// slot sets it when its mode changes; grad_enabled() reads kAutograd's.
void set_dispatch_hook_engaged(HookSlot slot, bool engaged);
bool dispatch_hook_engaged(HookSlot slot);

// The views' side of the hooks, called by the core's view methods (tensor.cc).
void run_view_hooks(const Tensor& base, Tensor& view, const char* op, const Attrs& attrs);
[[noreturn]] void throw_symbolic_access(const Tensor& t);

}  // namespace oar
