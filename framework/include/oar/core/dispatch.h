// Eager execution of one op: infer outputs, pick the kernel for (op, device type, dtype), allocate
// outputs, call the kernel on the device's stream. A device without the kernel falls back to the CPU
// plugin (copy in, compute, copy out) under a configurable policy.
#pragma once

#include <oar/core/op.h>
#include <oar/core/tensor.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace oar {

// Runs `op` on `inputs` (all on one place). `place` is where ops without inputs (creation ops) run.
std::vector<Tensor> call_op(const OpDef& op, const std::vector<Tensor>& inputs, Attrs attrs = {},
                            Place place = cpu_place());
// The allocation-free form behind call_op: `inputs` has n_inputs tensors, `outputs` room for the op's
// outputs. `attrs` is completed (defaults) and normalised in place.
// With `out_meta` (room for the op's outputs), the inferred output metas are written there when the
// op runs (not when a program builder records it).
void run_op(const OpDef& op, const Tensor* inputs, int32_t n_inputs, Attrs& attrs, Place place,
            Tensor* outputs, TensorMeta* out_meta = nullptr);
// run_op for a call whose attributes were completed and whose outputs were inferred by an earlier
// run_op with inputs of the same dtypes, dims and place (out_meta from it), and no program builder
// current: skips the arity checks, attribute completion and shape inference (the executor's repeated
// runs of one instruction). An output already defined in `outputs` is a buffer the caller owns alone,
// contiguous, of out_meta's dtype and dims: the kernel writes into it instead of a new allocation
// (the executor's recycled buffers; a kernel owning its outputs, or the CPU fallback, drops it).
void run_op_inferred(const OpDef& op, const Tensor* inputs, int32_t n_inputs, Attrs& attrs, Place place,
                     const TensorMeta* out_meta, Tensor* outputs);
// A typed handle to the op named by a string literal: looked up once per call site, so code that runs
// per call (gradient rules, composites) does no name lookup: call_op(OAR_OP("conv_grad_input"), ...).
#define OAR_OP(name)                                                               \
  ([]() -> const ::oar::OpDef& {                                                   \
    static const ::oar::OpDef& oar_op_handle_ = ::oar::OpRegistry::get().at(name); \
    return oar_op_handle_;                                                         \
  }())
// Same, by name (slower: looks the op up on every call; for tools and tests).
std::vector<Tensor> call_op(const std::string& op, const std::vector<Tensor>& inputs, Attrs attrs = {},
                            Place place = cpu_place());

enum class FallbackPolicy { kAllow, kWarn, kError };

struct FallbackConfig {
  FallbackPolicy policy = FallbackPolicy::kWarn;
  std::vector<std::string> deny;   // ops that must never fall back (an error instead)
  std::vector<std::string> force;  // ops that always run on the CPU plugin
};

// Read from OAR_FALLBACK_POLICY (allow|warn|error), OAR_FALLBACK_DENY and OAR_FALLBACK_FORCE
// (comma-separated op names) at start-up; settable at run time.
FallbackConfig fallback_config();
void set_fallback_config(const FallbackConfig& config);

struct FallbackKey {
  std::string op;
  std::string device_type;
  DType dtype;
  bool operator<(const FallbackKey& o) const {
    return std::tie(op, device_type, dtype) < std::tie(o.op, o.device_type, o.dtype);
  }
};
// How often each (op, device type, dtype) fell back since start (or the last reset).
std::map<FallbackKey, int64_t> fallback_counts();
void reset_fallback_counts();

// Whether the device type of `place` has its own kernel for (op, dtype).
bool has_kernel(const std::string& op, Place place, DType dtype);

// For placement decisions: whether `place`'s device would run a call of `op` with inputs of these
// dtypes and dims and these attributes itself, rather than falling back: it has the kernel and the
// kernel's side-effect free supports query (ABI 1.2, when it has one) says yes. Touches no data. When
// not, *reason (if given) says why (the plugin's own reason for a "no").
bool kernel_supports(const std::string& op, const std::vector<TensorMeta>& inputs, Attrs attrs, Place place,
                     std::string* reason = nullptr);

}  // namespace oar
