// Eager dispatch. The hot path (inputs on a device that has the kernel) does: validate arity and
// attributes, infer outputs, one lock-free table lookup, allocate outputs, call the kernel.
#include <glog/logging.h>
#include <oar/core/autograd.h>
#include <oar/core/dispatch.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/graph.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>

#include "internal.h"

namespace oar {
namespace {

// Fallback configuration: per-op flags read lock-free on the hot path; the lists for reporting.
struct FallbackState {
  std::atomic<int> policy{static_cast<int>(FallbackPolicy::kWarn)};
  // Per op id; an op added after the configuration (a custom op library's) has neither flag.
  StableTable<std::atomic<bool>> forced, denied;
  std::mutex mu;
  FallbackConfig config;
  std::map<FallbackKey, int64_t> counts;
  std::set<FallbackKey> warned;
};

std::vector<std::string> split_list(const char* s) {
  std::vector<std::string> out;
  if (!s) return out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

FallbackPolicy parse_policy(const std::string& s) {
  if (s == "allow") return FallbackPolicy::kAllow;
  if (s == "warn") return FallbackPolicy::kWarn;
  if (s == "error") return FallbackPolicy::kError;
  OAR_THROW(ErrorCode::kInvalidArgument, "OAR_FALLBACK_POLICY must be allow, warn or error, got '" << s << "'");
}

void apply_config(FallbackState& st, const FallbackConfig& c) {
  const OpRegistry& reg = OpRegistry::get();
  for (const auto& list : {c.deny, c.force})
    for (const auto& name : list) reg.at(name);  // unknown op names are an error, not ignored
  st.policy = static_cast<int>(c.policy);
  const size_t n = static_cast<size_t>(reg.size());
  st.forced.grow_to(n);
  st.denied.grow_to(n);
  for (size_t i = 0; i < n; ++i) st.forced[i] = st.denied[i] = false;
  for (const auto& name : c.force) st.forced[reg.at(name).id] = true;
  for (const auto& name : c.deny) st.denied[reg.at(name).id] = true;
  st.config = c;
}

FallbackState& fallback_state() {
  static FallbackState* st = [] {
    auto* s = new FallbackState();
    FallbackConfig c;
    if (const char* p = std::getenv("OAR_FALLBACK_POLICY")) c.policy = parse_policy(p);
    c.deny = split_list(std::getenv("OAR_FALLBACK_DENY"));
    c.force = split_list(std::getenv("OAR_FALLBACK_FORCE"));
    apply_config(*s, c);
    return s;
  }();
  return *st;
}

// Fills defaults and checks the types of the attributes the caller gave.
void complete_attrs(const OpDef& op, Attrs& attrs) {
  for (const AttrDef& a : op.attrs) {
    const AttrValue* v = attrs.find(a.name);
    if (!v) {
      OAR_ENFORCE(!a.required, ErrorCode::kInvalidArgument, op.name << ": attribute '" << a.name << "' is required");
      attrs.set(a.name, a.default_value);
      continue;
    }
    bool ok = v->index() == a.default_value.index() ||
              (a.type == AttrType::kFloat && std::holds_alternative<int64_t>(*v));
    OAR_ENFORCE(ok, ErrorCode::kType, op.name << ": attribute '" << a.name << "' has the wrong type");
  }
}

// Returns false when the kernel declined the call (ABI 1.2: its supports query said no, or it returned
// OAR_ERR_DECLINED); *declined then holds the plugin's reason and no output is set.
bool run_kernel(const OpDef& op, const KernelEntry& k, const Tensor* inputs, int32_t n_in, const Attrs& attrs,
                Device& dev, const InferContext& ic, DType kd, Tensor* outputs, std::string* declined) {
  const int32_t n_out = static_cast<int32_t>(op.outputs.size());
  if (k.supports) {  // asked before anything is copied or allocated
    *declined = ask_supports(k, op, inputs, nullptr, n_in, ic.outputs, attrs, dev, kd);
    if (!declined->empty()) return false;
  }
  // Kernels that did not opt in to strided inputs get contiguous ones.
  const Tensor* in = inputs;
  std::vector<Tensor> contiguous_inputs;
  if (!(k.flags & OAR_KERNEL_STRIDED_INPUTS)) {
    for (int32_t i = 0; i < n_in; ++i) {
      if (inputs[i].is_contiguous()) continue;
      if (contiguous_inputs.empty()) contiguous_inputs.assign(inputs, inputs + n_in);
      NoGradGuard no_grad;  // an internal copy: the op's own node covers the gradient
      contiguous_inputs[i] = inputs[i].contiguous();
    }
    if (!contiguous_inputs.empty()) in = contiguous_inputs.data();
  }
  OarTensorDesc in_small[4];
  std::vector<OarTensorDesc> in_large;
  OarTensorDesc* in_desc = in_small;
  if (n_in > 4) {
    in_large.resize(n_in);
    in_desc = in_large.data();
  }
  for (int32_t i = 0; i < n_in; ++i) fill_desc(in_desc[i], in[i]);

  OarTensorDesc out_desc[kMaxOpOutputs] = {};
  if (!(k.flags & kKernelOwnsOutputs)) {
    for (int32_t i = 0; i < n_out; ++i) {
      outputs[i] = empty_tensor(dev, ic.outputs[i].dims, ic.outputs[i].dtype, op.name);
      fill_desc(out_desc[i], outputs[i]);
    }
  }
  std::vector<Tensor> workspaces;  // empty unless the kernel asks for scratch memory
  OarKernelContext ctx{&op, in_desc, n_in, out_desc, outputs, n_out, &attrs, &dev, &workspaces, in, &ic};
  OarError* err = k.fn(&ctx, k.user_data);
  if (err && err->code == OAR_ERR_DECLINED && k.plugin->may_decline) {
    *declined = err->message.empty() ? "no reason given" : err->message;
    delete err;
    for (int32_t i = 0; i < n_out; ++i) outputs[i] = Tensor();  // the fallback makes its own
    return false;
  }
  check_plugin_error(k.plugin->name, op.name, err);
  return true;
}

}  // namespace

FallbackConfig fallback_config() {
  FallbackState& st = fallback_state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.config;
}

void set_fallback_config(const FallbackConfig& config) {
  FallbackState& st = fallback_state();
  std::lock_guard<std::mutex> lock(st.mu);
  apply_config(st, config);
}

std::map<FallbackKey, int64_t> fallback_counts() {
  FallbackState& st = fallback_state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.counts;
}

void reset_fallback_counts() {
  FallbackState& st = fallback_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.counts.clear();
  st.warned.clear();
}

bool has_kernel(const std::string& op, Place place, DType dtype) {
  return Runtime::get().kernel(OpRegistry::get().at(op).id, place.type, dtype) != nullptr;
}

bool kernel_supports(const std::string& op_name, const std::vector<TensorMeta>& inputs, Attrs attrs, Place place,
                     std::string* reason) {
  const OpDef& op = OpRegistry::get().at(op_name);
  const int32_t n_in = static_cast<int32_t>(inputs.size());
  OAR_ENFORCE(op.variadic ? n_in >= 1 : n_in == static_cast<int32_t>(op.inputs.size()), ErrorCode::kInvalidArgument,
              op.name << ": expects " << (op.variadic ? "at least 1" : std::to_string(op.inputs.size()))
                      << " input(s), got " << n_in);
  complete_attrs(op, attrs);
  InferContext ic{&op, inputs.data(), n_in, &attrs, {}};
  op.infer(ic);
  const DType kd = op.dispatch_input >= 0 ? inputs[op.dispatch_input].dtype : static_cast<DType>(attrs.get_int("dtype"));
  Runtime& rt = Runtime::get();
  const KernelEntry* k = rt.kernel(op.id, place.type, kd);
  std::string why;
  if (!k)
    why = rt.device_types()[place.type].name + " has no kernel for " + op.name + " with dtype " + dtype_name(kd);
  else if (k->supports)
    why = ask_supports(*k, op, nullptr, inputs.data(), n_in, ic.outputs, attrs, rt.device(place), kd);
  if (reason) *reason = why;
  return why.empty();
}

namespace {

// No kernel on `place`'s device, its kernel declined the call (`declined`: the plugin's reason), or the
// op is forced to the CPU: run it on the CPU plugin with the inputs copied to the host and copy the
// outputs back, if the policy allows.
void run_fallback(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place, DType kd,
                  bool forced, const std::string& declined, Tensor* outputs) {
  Runtime& rt = Runtime::get();
  const std::string type_name = rt.device_types()[place.type].name;
  const std::string why = declined.empty()
                              ? type_name + " has no kernel for dtype " + dtype_name(kd)
                              : "the " + type_name + " kernel declined this " + dtype_name(kd) + " call (" + declined + ")";
  OAR_ENFORCE(!place.is_cpu() || declined.empty(), ErrorCode::kUnimplemented,
              op.name << ": " << why << " and cpu has nothing to fall back to");
  if (g_graph_captures.load(std::memory_order_relaxed) != 0) DeviceGraph::check_fallback(op, place, why);
  // Nothing to fall back to: the dtype is not supported by this op anywhere we could run it.
  OAR_ENFORCE(rt.kernel(op.id, kCpuDeviceType, kd) != nullptr, ErrorCode::kType,
              op.name << ": dtype " << dtype_name(kd) << " is not supported"
                      << (place.is_cpu() ? " on cpu" : " on " + type_name + " nor on cpu"));
  FallbackState& st = fallback_state();
  const auto policy = static_cast<FallbackPolicy>(st.policy.load());
  const bool denied = st.denied.has(op.id) && st.denied[op.id];
  OAR_ENFORCE(forced || !denied, ErrorCode::kUnimplemented,
              op.name << ": " << why << " and the op is on the fallback deny list (OAR_FALLBACK_DENY)");
  OAR_ENFORCE(forced || policy != FallbackPolicy::kError, ErrorCode::kUnimplemented,
              op.name << ": " << why << " and the CPU fallback policy is 'error' (OAR_FALLBACK_POLICY)");
  {
    std::lock_guard<std::mutex> lock(st.mu);
    FallbackKey key{op.name, type_name, kd};
    ++st.counts[key];
    if (policy == FallbackPolicy::kWarn && !forced && st.warned.insert(key).second)
      LOG(WARNING) << op.name << ": " << why
                   << "; running it on cpu (copying inputs and outputs). Shown once per op and dtype; "
                      "OAR_FALLBACK_POLICY=allow|warn|error controls this.";
  }
  std::vector<Tensor> host_inputs;
  host_inputs.reserve(n_in);
  // The device range behind each input an in-place op writes: (input, first element, count).
  struct WriteBack {
    int32_t input;
    int64_t first, count;
  };
  std::vector<WriteBack> written;
  for (int32_t i = 0; i < n_in; ++i) {
    if (op_writes_input(op, i, n_in)) {
      WriteBack w{i, 0, 0};
      host_inputs.push_back(host_view(inputs[i], &w.first, &w.count));
      if (w.count > 0) written.push_back(w);
    } else {
      host_inputs.push_back(host_view(inputs[i]));
    }
  }
  run_op(op, host_inputs.data(), n_in, attrs, cpu_place(), outputs);
  for (size_t i = 0; i < op.outputs.size(); ++i) outputs[i] = outputs[i].to(place);
  for (const WriteBack& w : written) {  // write the modified host copies back to the device
    const Tensor& dst = inputs[w.input];
    const int64_t esize = dtype_size(dst.dtype());
    rt.copy_bytes(static_cast<char*>(dst.storage()->data()) + w.first * esize, place,
                  host_inputs[w.input].storage()->data(), cpu_place(), static_cast<size_t>(w.count * esize));
  }
}

}  // namespace

namespace {
// Runs one inferred call: the device's kernel for the dispatch dtype, or the CPU fallback.
void launch(OpCall& call) {
  const OpDef& op = call.op;
  const int32_t n_in = call.n_inputs;
  const DType kd = op.dispatch_input >= 0 ? call.inputs[op.dispatch_input].dtype()
                                          : static_cast<DType>(call.attrs.get_int("dtype"));
  if (op.inplace_mask)  // a kernel writing a contiguous copy of a strided input would lose the update
    for (int32_t i = 0; i < n_in; ++i)
      OAR_ENFORCE(!op_writes_input(op, i, n_in) || call.inputs[i].is_contiguous(),
                  ErrorCode::kInvalidArgument,
                  op.name << ": input " << i << " ('" << op.inputs[op.variadic ? 0 : i]
                          << "') is written in place and must be contiguous");
  if (__builtin_expect(g_graph_captures.load(std::memory_order_relaxed) != 0, 0))
    DeviceGraph::check_op(op, call.inputs, n_in, call.place);  // a graph is capturing somewhere
  Runtime& rt = Runtime::get();
  const bool forced = !call.place.is_cpu() && [&] {
    const std::atomic<bool>* f = fallback_state().forced.find(op.id);
    return f && f->load(std::memory_order_relaxed);
  }();
  const KernelEntry* k = forced ? nullptr : rt.kernel(op.id, call.place.type, kd);
  std::string declined;  // the plugin's reason when its kernel declines this call (ABI 1.2)
  if (!k || !run_kernel(op, *k, call.inputs, n_in, call.attrs, rt.device(call.place), call.infer, kd,
                        call.outputs, &declined))
    run_fallback(op, call.inputs, n_in, call.attrs, call.place, kd, forced, declined, call.outputs);
}
}  // namespace

// ---- hooks ----------------------------------------------------------------------------------------
namespace {
constexpr int kHookSlots = static_cast<int>(HookSlot::kCount);
std::atomic<const DispatchHook*> g_hooks[kHookSlots];
// The slots engaged on this thread, one bit each (dispatch_hooks.h); a constant initialiser, so that
// reading it needs no initialisation guard.
thread_local uint32_t t_engaged = 1u << static_cast<int>(HookSlot::kAutograd);
}  // namespace

void install_dispatch_hook(HookSlot slot, const DispatchHook* hook) {
  g_hooks[static_cast<int>(slot)].store(hook, std::memory_order_release);
}
const DispatchHook* dispatch_hook(HookSlot slot) {
  return g_hooks[static_cast<int>(slot)].load(std::memory_order_acquire);
}

void set_dispatch_hook_engaged(HookSlot slot, bool engaged) {
  const uint32_t bit = 1u << static_cast<int>(slot);
  t_engaged = engaged ? (t_engaged | bit) : (t_engaged & ~bit);
}
bool dispatch_hook_engaged(HookSlot slot) { return t_engaged >> static_cast<int>(slot) & 1u; }

void run_view_hooks(const Tensor& base, Tensor& view, const char* op, const Attrs& attrs) {
  for (const auto& slot : g_hooks)
    if (const DispatchHook* h = slot.load(std::memory_order_acquire); h && h->view)
      h->view(base, view, op, attrs);
}

void throw_symbolic_access(const Tensor& t) {
  for (const auto& slot : g_hooks)
    if (const DispatchHook* h = slot.load(std::memory_order_acquire); h && h->symbolic_access)
      h->symbolic_access(t);
  OAR_THROW(ErrorCode::kInvalidArgument, "the tensor is a symbolic variable: it has no memory to read");
}

namespace {
// One op call after inference: the engaged hooks' `before` in slot order (one may take the call over),
// the kernel (or the CPU fallback), new versions for written inputs, then the engaged hooks' `after`.
void dispatch(OpCall& call, TensorMeta* out_meta) {
  const OpDef& op = call.op;
  const bool writes = op.inplace_input >= 0 || op.inplace_mask != 0;
  const uint32_t engaged = t_engaged;
  const uint32_t run_before = call.symbolic_inputs ? ~0u : engaged;
  bool taken = false;
  for (int i = 0; run_before != 0 && i < kHookSlots && !taken; ++i) {
    if (!(run_before >> i & 1u)) continue;
    const DispatchHook* h = g_hooks[i].load(std::memory_order_relaxed);
    if (h && h->before && (writes || !h->before_writes_only)) taken = h->before(call);
  }
  if (!taken) {
    if (out_meta)
      for (size_t i = 0; i < op.outputs.size(); ++i) out_meta[i] = call.infer.outputs[i];
    launch(call);
  }
  if (writes)
    for (int32_t i = 0; i < call.n_inputs; ++i)
      if (op_writes_input(op, i, call.n_inputs)) call.inputs[i].storage()->bump_version();
  for (int i = 0; engaged != 0 && i < kHookSlots; ++i) {
    if (!(engaged >> i & 1u)) continue;
    const DispatchHook* h = g_hooks[i].load(std::memory_order_relaxed);
    if (h && h->after) h->after(call);
  }
}
}  // namespace

void run_op(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place, Tensor* outputs,
            TensorMeta* out_meta) {
  OAR_ENFORCE(op.variadic ? n_in >= 1 : n_in == static_cast<int32_t>(op.inputs.size()),
              ErrorCode::kInvalidArgument,
              op.name << ": expects " << (op.variadic ? "at least 1" : std::to_string(op.inputs.size()))
                      << " input(s), got " << n_in);
  std::vector<Tensor> cast;  // AMP's replacement inputs (empty unless auto_cast is on for this thread)
  if (t_engaged >> static_cast<int>(HookSlot::kAmp) & 1u) {
    const DispatchHook* h = g_hooks[static_cast<int>(HookSlot::kAmp)].load(std::memory_order_relaxed);
    if (h && h->cast_inputs && h->cast_inputs(op, inputs, n_in, cast)) inputs = cast.data();
  }
  TensorMeta meta_small[4];
  std::vector<TensorMeta> meta_large;
  TensorMeta* metas = meta_small;
  if (n_in > 4) {
    meta_large.resize(n_in);
    metas = meta_large.data();
  }
  bool symbolic = false;
  for (int32_t i = 0; i < n_in; ++i) {
    const Tensor& t = inputs[i];
    OAR_ENFORCE(t.defined(), ErrorCode::kInvalidArgument,
                op.name << ": input '" << op.inputs[op.variadic ? 0 : i] << "' is an undefined tensor");
    symbolic |= t.impl()->symbol != nullptr;
    if (i == 0) {
      place = t.place();
    } else {
      OAR_ENFORCE(t.place() == place, ErrorCode::kInvalidArgument,
                  op.name << ": input '" << op.inputs[op.variadic ? 0 : i] << "' is on " << t.place().to_string()
                          << " but '" << op.inputs[0] << "' is on " << place.to_string()
                          << "; move them to one device first");
    }
    metas[i].dtype = t.dtype();
    metas[i].dims = t.dims();
  }
  if (!op.attrs.empty()) complete_attrs(op, attrs);
  InferContext ic{&op, metas, n_in, &attrs, {}};
  op.infer(ic);
  OpCall call{op, inputs, n_in, attrs, ic, place, outputs, symbolic};
  dispatch(call, out_meta);
}

void run_op_inferred(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place,
                     const TensorMeta* out_meta, Tensor* outputs) {
  InferContext ic{&op, nullptr, n_in, &attrs, {}};
  for (size_t i = 0; i < op.outputs.size(); ++i) ic.outputs[i] = out_meta[i];
  if (n_in > 0) place = inputs[0].place();
  OpCall call{op, inputs, n_in, attrs, ic, place, outputs};
  dispatch(call, nullptr);
}

std::vector<Tensor> call_op(const OpDef& op, const std::vector<Tensor>& inputs, Attrs attrs, Place place) {
  std::vector<Tensor> outputs(op.outputs.size());
  run_op(op, inputs.data(), static_cast<int32_t>(inputs.size()), attrs, place, outputs.data());
  return outputs;
}


std::vector<Tensor> call_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs, Place place) {
  return call_op(OpRegistry::get().at(op), inputs, std::move(attrs), place);
}

}  // namespace oar
