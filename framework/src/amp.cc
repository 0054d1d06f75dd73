// auto_cast's dispatcher hook (amp.h, docs/amp.md). run_op calls cast_inputs before shape inference
// while the kAmp slot is engaged on the thread; the casts it makes are ordinary `cast` op calls, so
// autograd records them (gradients flow back to float32 parameters in float32) and a static program
// being built records them too.
#include <oar/core/amp.h>
#include <oar/core/autograd.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <unordered_map>

namespace oar::amp {
namespace {

struct CacheEntry {
  Tensor source;                     // held, so its address cannot be reused by another tensor
  std::shared_ptr<Storage> storage;  // the storage cast (set_value may give the tensor another one)
  uint32_t version;
  Tensor cast;
};

struct ThreadState {
  std::shared_ptr<const Config> config;
  // Keyed by (TensorImpl*, target dtype).
  std::unordered_map<const TensorImpl*, CacheEntry> cache[2];  // [0]: to the low dtype, [1]: to float32
  int64_t casts = 0;
  bool collect = false;
  std::vector<std::array<int64_t, 4>> stats;  // by op id
};

thread_local ThreadState t_state;

bool castable(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32; }
int width(DType d) { return d == DType::kFloat32 ? 2 : 1; }

// A parameter: a leaf that requires gradients, with real memory (not a static-graph variable).
bool cacheable(const Tensor& t) {
  return t.impl()->symbol == nullptr && !dispatch_hook_engaged(HookSlot::kStaticGraph) &&
         autograd::requires_grad(t) && autograd::is_leaf(t);
}

Tensor cast_one(ThreadState& st, const Tensor& t, DType to) {
  const bool cache = cacheable(t);
  auto& map = st.cache[to == DType::kFloat32 ? 1 : 0];
  if (cache) {
    auto it = map.find(t.impl());
    if (it != map.end() && it->second.storage == t.storage() && it->second.version == t.storage()->version())
      return it->second.cast;
  }
  Tensor out = ops::cast(t, to);
  ++st.casts;
  if (cache) map[t.impl()] = CacheEntry{t, t.storage(), t.storage()->version(), out};
  return out;
}

bool decide_casts(ThreadState& st, const OpDef& op, const Tensor* inputs, int32_t n_in,
                  std::vector<Tensor>& cast);

void count(ThreadState& st, const OpDef& op, const Tensor* inputs, int32_t n_in) {
  int kind = 3;
  for (int32_t i = 0; i < n_in; ++i) {
    if (!inputs[i].defined() || !is_floating(inputs[i].dtype())) continue;
    const DType d = inputs[i].dtype();
    kind = d == DType::kFloat16 ? 0 : d == DType::kBFloat16 ? 1 : d == DType::kFloat32 ? 2 : 3;
    break;
  }
  if (st.stats.size() <= static_cast<size_t>(op.id)) st.stats.resize(op.id + 1, {0, 0, 0, 0});
  ++st.stats[op.id][kind];
}

bool cast_inputs(const OpDef& op, const Tensor* inputs, int32_t n_in, std::vector<Tensor>& cast) {
  ThreadState& st = t_state;
  const bool replaced = st.config && decide_casts(st, op, inputs, n_in, cast);
  if (st.collect) count(st, op, replaced ? cast.data() : inputs, n_in);
  return replaced;
}

bool decide_casts(ThreadState& st, const OpDef& op, const Tensor* inputs, int32_t n_in,
                  std::vector<Tensor>& cast) {
  const Config* c = st.config.get();
  if (n_in == 0 || op.inplace_input >= 0 || op.inplace_mask != 0) return false;
  const Place place = inputs[0].defined() ? inputs[0].place() : cpu_place();
  if (static_cast<size_t>(place.type) >= c->policy.size()) return false;
  const std::vector<int8_t>& table = c->policy[place.type];
  if (table.empty()) return false;  // the low dtype is not supported on this device type
  const Policy p = op.id < static_cast<int32_t>(table.size()) ? static_cast<Policy>(table[op.id]) : kPromote;
  if (p == kKeep) return false;
  // The floating inputs we may cast, and the widest of them.
  int n_float = 0, widest = 0;
  bool mixed = false;
  DType first = DType::kFloat32;
  for (int32_t i = 0; i < n_in; ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !castable(t.dtype())) continue;
    if (n_float++ == 0) first = t.dtype();
    mixed |= t.dtype() != first;
    widest = std::max(widest, width(t.dtype()));
  }
  if (n_float == 0) return false;
  DType to;
  switch (p) {
    case kWhite:
      to = c->dtype;
      break;
    case kBlack:
      to = DType::kFloat32;
      break;
    default:  // not listed
      if (c->level == Level::kOD)
        to = DType::kFloat32;
      else if (c->level == Level::kO2 && !c->use_promote)
        to = c->dtype;
      else if (widest == 2)  // promote: any float32 input makes the op run in float32 (as Paddle)
        to = mixed ? DType::kFloat32 : first;
      else
        to = mixed ? c->dtype : first;
      break;
  }
  if (to != DType::kFloat32) {  // no kernel in the low dtype here nor on the cpu fallback: float32
    const Runtime& rt = Runtime::get();
    if (!rt.kernel(op.id, place.type, to) && !rt.kernel(op.id, kCpuDeviceType, to)) to = DType::kFloat32;
  }
  bool any = false;
  for (int32_t i = 0; i < n_in && !any; ++i)
    any = inputs[i].defined() && castable(inputs[i].dtype()) && inputs[i].dtype() != to;
  if (!any) return false;
  cast.assign(inputs, inputs + n_in);
  for (Tensor& t : cast)
    if (t.defined() && castable(t.dtype()) && t.dtype() != to) t = cast_one(st, t, to);
  return true;
}

const DispatchHook kAmpHook = [] {
  DispatchHook h;
  h.cast_inputs = cast_inputs;
  return h;
}();

}  // namespace

void set_config(std::shared_ptr<const Config> config) {
  ThreadState& st = t_state;
  const bool on = config && config->level != Level::kO0;
  st.config = on ? std::move(config) : nullptr;
  for (auto& m : st.cache) m.clear();
  set_dispatch_hook_engaged(HookSlot::kAmp, on || st.collect);
}

void set_collect_stats(bool on) {
  ThreadState& st = t_state;
  st.collect = on;
  if (on) st.stats.clear();
  set_dispatch_hook_engaged(HookSlot::kAmp, on || st.config != nullptr);
}

std::vector<std::pair<std::string, std::array<int64_t, 4>>> op_stats() {
  std::vector<std::pair<std::string, std::array<int64_t, 4>>> out;
  const OpRegistry& reg = OpRegistry::get();
  const auto& stats = t_state.stats;
  for (size_t id = 0; id < stats.size(); ++id) {
    const auto& c = stats[id];
    if (c[0] + c[1] + c[2] + c[3] > 0) out.emplace_back(reg.at(static_cast<int32_t>(id)).name, c);
  }
  return out;
}

std::shared_ptr<const Config> config() { return t_state.config; }

bool casts_on(int16_t device_type) {
  const Config* c = t_state.config.get();
  return c && static_cast<size_t>(device_type) < c->policy.size() && !c->policy[device_type].empty();
}

void clear_cache() {
  for (auto& m : t_state.cache) m.clear();
}

int64_t cast_count() { return t_state.casts; }

void install_hook() { install_dispatch_hook(HookSlot::kAmp, &kAmpHook); }

}  // namespace oar::amp
