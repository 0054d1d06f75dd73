// Eager dispatch. The hot path (inputs on a device that has the kernel) does: validate arity and
// attributes, infer outputs, one lock-free table lookup, allocate outputs, call the kernel.
#include "internal.h"

#include <oar/core/autograd.h>
#include <oar/core/dispatch.h>
#include <oar/ir/static_graph.h>
#include <oar/core/error.h>

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>

namespace oar {
namespace {

inline constexpr int kMaxOps = 512;

// Fallback configuration: per-op flags read lock-free on the hot path; the lists for reporting.
struct FallbackState {
  std::atomic<int> policy{static_cast<int>(FallbackPolicy::kWarn)};
  std::atomic<bool> forced[kMaxOps] = {};
  std::atomic<bool> denied[kMaxOps] = {};
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
  for (int i = 0; i < kMaxOps; ++i) st.forced[i] = st.denied[i] = false;
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

void run_kernel(const OpDef& op, const KernelEntry& k, const Tensor* inputs, int32_t n_in, const Attrs& attrs,
                Device& dev, const InferContext& ic, Tensor* outputs) {
  const int32_t n_out = static_cast<int32_t>(op.outputs.size());
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
      checked_tensor_bytes(ic.outputs[i].dims, ic.outputs[i].dtype, dev, op.name);  // the error names the op
      outputs[i] = Tensor::empty(ic.outputs[i].dims, ic.outputs[i].dtype, dev.place());
      fill_desc(out_desc[i], outputs[i]);
    }
  }
  std::vector<Tensor> workspaces;  // empty unless the kernel asks for scratch memory
  OarKernelContext ctx{&op, in_desc, n_in, out_desc, outputs, n_out, &attrs, &dev, &workspaces, in, &ic};
  check_plugin_error(k.plugin->name, op.name, k.fn(&ctx, k.user_data));
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

namespace {

// No kernel on `place`'s device (or the op is forced to the CPU): run it on the CPU plugin with the
// inputs copied to the host and copy the outputs back, if the policy allows.
void run_fallback(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place, DType kd,
                  bool forced, Tensor* outputs) {
  Runtime& rt = Runtime::get();
  const std::string type_name = rt.device_types()[place.type].name;
  // Nothing to fall back to: the dtype is not supported by this op anywhere we could run it.
  OAR_ENFORCE(rt.kernel(op.id, kCpuDeviceType, kd) != nullptr, ErrorCode::kType,
              op.name << ": dtype " << dtype_name(kd) << " is not supported"
                      << (place.is_cpu() ? " on cpu" : " on " + type_name + " nor on cpu"));
  FallbackState& st = fallback_state();
  const auto policy = static_cast<FallbackPolicy>(st.policy.load());
  OAR_ENFORCE(forced || !st.denied[op.id], ErrorCode::kUnimplemented,
              op.name << ": " << type_name << " has no kernel for dtype " << dtype_name(kd)
                      << " and the op is on the fallback deny list (OAR_FALLBACK_DENY)");
  OAR_ENFORCE(forced || policy != FallbackPolicy::kError, ErrorCode::kUnimplemented,
              op.name << ": " << type_name << " has no kernel for dtype " << dtype_name(kd)
                      << " and the CPU fallback policy is 'error' (OAR_FALLBACK_POLICY)");
  {
    std::lock_guard<std::mutex> lock(st.mu);
    FallbackKey key{op.name, type_name, kd};
    ++st.counts[key];
    if (policy == FallbackPolicy::kWarn && !forced && st.warned.insert(key).second)
      LOG(WARNING) << op.name << " has no " << type_name << " kernel for " << dtype_name(kd)
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
// After an op ran (or was recorded): written inputs get a new storage version, and autograd records the
// op when gradients are on.
void finish_op(const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs, Tensor* outputs) {
  if (op.inplace_input >= 0 || op.inplace_mask != 0)
    for (int32_t i = 0; i < n_in; ++i)
      if (op_writes_input(op, i, n_in)) inputs[i].storage()->bump_version();
  if (grad_enabled()) {
    if (op.inplace_input >= 0) autograd::record_inplace(op, inputs, n_in, attrs);
    else if (!op.inplace_mask) autograd::record_op(op, inputs, n_in, attrs, outputs, static_cast<int32_t>(op.outputs.size()));
  }
}

// Static mode: the op is appended to the program being built; autograd records it as in eager mode, so
// that gradients of a program are built by the same rules (static_graph.h).
void record_static(ir::ProgramBuilder& b, const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs,
                   const InferContext& ic, Place place, Tensor* outputs) {
  if ((op.inplace_input >= 0 || op.inplace_mask != 0) && grad_enabled()) autograd::check_inplace(op, inputs, n_in);
  b.record(op, inputs, n_in, attrs, ic, place, outputs);
  finish_op(op, inputs, n_in, attrs, outputs);
}
}  // namespace

namespace {
// The part of run_op after shape inference: checks that need the values, kernel lookup, the call,
// version bumps and autograd recording. `place` is inputs[0]'s place when there are inputs.
void execute_op(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place,
                const InferContext& ic, Tensor* outputs) {
  const DType kd =
      op.dispatch_input >= 0 ? inputs[op.dispatch_input].dtype() : static_cast<DType>(attrs.get_int("dtype"));
  const bool writes = op.inplace_input >= 0 || op.inplace_mask != 0;
  if (writes && grad_enabled()) autograd::check_inplace(op, inputs, n_in);
  if (op.inplace_mask)  // a kernel writing a contiguous copy of a strided input would lose the update
    for (int32_t i = 0; i < n_in; ++i)
      OAR_ENFORCE(!op_writes_input(op, i, n_in) || inputs[i].is_contiguous(), ErrorCode::kInvalidArgument,
                  op.name << ": input " << i << " ('" << op.inputs[op.variadic ? 0 : i]
                          << "') is written in place and must be contiguous");
  Runtime& rt = Runtime::get();
  FallbackState& st = fallback_state();
  const bool forced = !place.is_cpu() && st.forced[op.id].load(std::memory_order_relaxed);
  const KernelEntry* k = forced ? nullptr : rt.kernel(op.id, place.type, kd);
  if (k)
    run_kernel(op, *k, inputs, n_in, attrs, rt.device(place), ic, outputs);
  else
    run_fallback(op, inputs, n_in, attrs, place, kd, forced, outputs);
  finish_op(op, inputs, n_in, attrs, outputs);
}
}  // namespace

void run_op(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place, Tensor* outputs,
            TensorMeta* out_meta) {
  OAR_ENFORCE(op.variadic ? n_in >= 1 : n_in == static_cast<int32_t>(op.inputs.size()),
              ErrorCode::kInvalidArgument,
              op.name << ": expects " << (op.variadic ? "at least 1" : std::to_string(op.inputs.size()))
                      << " input(s), got " << n_in);
  TensorMeta meta_small[4];
  std::vector<TensorMeta> meta_large;
  TensorMeta* metas = meta_small;
  if (n_in > 4) {
    meta_large.resize(n_in);
    metas = meta_large.data();
  }
  bool any_symbolic = false;
  for (int32_t i = 0; i < n_in; ++i) {
    const Tensor& t = inputs[i];
    OAR_ENFORCE(t.defined(), ErrorCode::kInvalidArgument,
                op.name << ": input '" << op.inputs[op.variadic ? 0 : i] << "' is an undefined tensor");
    any_symbolic |= t.impl()->symbol != nullptr;
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
  complete_attrs(op, attrs);
  InferContext ic{&op, metas, n_in, &attrs, {}};
  op.infer(ic);
  if (ir::ProgramBuilder* b = ir::current_builder()) {  // static mode: record instead of run
    record_static(*b, op, inputs, n_in, attrs, ic, place, outputs);
    return;
  }
  OAR_ENFORCE(!any_symbolic, ErrorCode::kInvalidArgument,
              op.name << ": an input is a static-graph variable, used outside of the program being built "
                         "(program_guard / to_static)");
  if (out_meta)
    for (size_t i = 0; i < op.outputs.size(); ++i) out_meta[i] = ic.outputs[i];
  execute_op(op, inputs, n_in, attrs, place, ic, outputs);
}

void run_op_inferred(const OpDef& op, const Tensor* inputs, int32_t n_in, Attrs& attrs, Place place,
                     const TensorMeta* out_meta, Tensor* outputs) {
  InferContext ic{&op, nullptr, n_in, &attrs, {}};
  for (size_t i = 0; i < op.outputs.size(); ++i) ic.outputs[i] = out_meta[i];
  if (n_in > 0) place = inputs[0].place();
  execute_op(op, inputs, n_in, attrs, place, ic, outputs);
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
