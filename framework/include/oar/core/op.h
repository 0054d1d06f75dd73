// Op definitions: each op is defined once (framework/src/op_defs.cc) with its inputs, attributes,
// outputs, shape/dtype inference and the source of its dispatch dtype. Everything else (the C++ API,
// later the Python binding, autograd and static graph) is derived from that one place.
#pragma once

#include <oar/core/dtype.h>
#include <oar/core/op_sample.h>
#include <oar/core/shape.h>
#include <oar/core/stable_table.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace oar {

enum class AttrType { kInt, kFloat, kInts, kFloats, kString };
using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

// A small ordered list of named attributes; names are string literals owned by the op definition.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const char*, AttrValue>> items) : items_(items) {}
  void set(const char* name, AttrValue v);
  const AttrValue* find(const char* name) const;
  int64_t get_int(const char* name) const;  // throw kNotFound / kType naming the attribute
  double get_float(const char* name) const;
  const std::vector<int64_t>& get_ints(const char* name) const;
  const std::vector<double>& get_floats(const char* name) const;
  const std::string& get_string(const char* name) const;
  size_t size() const { return items_.size(); }
  const std::pair<const char*, AttrValue>& operator[](size_t i) const { return items_[i]; }

 private:
  std::vector<std::pair<const char*, AttrValue>> items_;
};

// What shape inference sees and produces.
struct TensorMeta {
  DType dtype = DType::kFloat32;
  Dims dims;
};

// The most outputs an op may declare (batch_norm has 5: out, mean_out, var_out, saved_mean, saved_rstd).
inline constexpr int kMaxOpOutputs = 5;

struct OpDef;
class Tensor;
struct GradContext;  // autograd.h

// An op's gradient rule: from the saved inputs/outputs, the attributes and the output gradients
// (GradContext), one gradient per input, written with ordinary ops so it can be differentiated again.
// fn == nullptr: no rule; OpDef::differentiable then says whether the outputs are constants or raise.
using GradFn = std::vector<Tensor> (*)(const GradContext& ctx);
struct GradRule {
  GradFn fn = nullptr;
  uint32_t saved_inputs = 0;   // bit i: the rule reads input i's values
  bool saved_outputs = false;  // the rule reads the outputs' values
  // bit i: input i is read only for the other inputs' gradients (x * y: x for dy), so it is saved
  // only when one of them requires a gradient; this keeps `x *= 2` free of a saved copy of x.
  uint32_t saved_for_others = 0;
};

struct InferContext {
  const OpDef* op;
  const TensorMeta* inputs;  // num_inputs entries
  int32_t num_inputs;
  Attrs* attrs;              // inference may normalise attributes (axes) in place
  TensorMeta outputs[kMaxOpOutputs];
};
using InferFn = void (*)(InferContext& ctx);

struct AttrDef {
  const char* name;
  AttrType type;
  bool required;
  AttrValue default_value;
};

struct OpDef {
  int32_t id = -1;
  const char* name = "";
  int32_t version = 1;             // schema version; kernels built for a newer one are refused
  std::vector<const char*> inputs; // names; for a variadic op, one name repeated
  bool variadic = false;
  std::vector<const char*> outputs;
  std::vector<AttrDef> attrs;
  InferFn infer = nullptr;
  // The dispatch dtype comes from input `dispatch_input`, or from attribute "dtype" when it is -1.
  int32_t dispatch_input = 0;
  // An op that writes into one of its inputs (e.g. assign) names it here; it bumps that storage's
  // version, and a CPU fallback writes the host copy back to the device.
  int32_t inplace_input = -1;
  // Ops that write into several inputs (the fused optimizer updates, framework/src/ops_optim.cc;
  // not differentiable): the inputs are cut into `inplace_groups` equal consecutive blocks (0: one
  // input per block) and every input of block b is written when bit b of `inplace_mask` is set. Each
  // written input gets its storage version bumped and, under the CPU fallback, its host copy written
  // back; written inputs must be contiguous.
  uint32_t inplace_mask = 0;
  int32_t inplace_groups = 0;
  // A variadic op's last `inplace_tail` inputs stand outside the blocks and are never written
  // (check_finite_and_unscale: the gradients, then the scale).
  int32_t inplace_tail = 0;
  // false: the op has no gradient by nature (comparisons, argmax, random draws, floor_divide), so its outputs
  // are constants. An op left true without a gradient rule gets outputs whose backward raises, naming
  // the op (docs/decisions.md, "no silently wrong gradients"), e.g. a *_grad kernel differentiated twice.
  bool differentiable = true;
  std::string doc;
  // The gradient rule, declared with the op (built-in ops: next to their definition in op_defs.cc and
  // the family files; custom ops: built by the loader from the library's grad op).
  GradRule grad;
  // Ops from a custom op library (custom_op.cc): the loader's per-op state.
  bool custom = false;
  const void* user = nullptr;
  // Sample inputs for the op suite (op_sample.h), declared in the family's register_*_samples.
  std::vector<OpSample> samples;
};

// Whether op writes into input i of n_in (inplace_input or inplace_mask).
inline bool op_writes_input(const OpDef& op, int32_t i, int32_t n_in) {
  if (i == op.inplace_input) return true;
  if (!op.inplace_mask) return false;
  if (op.inplace_tail > 0) {
    if (i >= n_in - op.inplace_tail) return false;
    n_in -= op.inplace_tail;
  }
  const int32_t per = op.inplace_groups > 0 ? n_in / op.inplace_groups : 1;
  const int32_t block = per > 0 ? i / per : 0;
  return block < 32 && (op.inplace_mask >> block & 1u);
}

// Every op, by id (dense, in registration order) and by name. Both lookups are lock-free; ops are
// only ever added (custom op libraries add theirs at run time) and never move.
class OpRegistry {
 public:
  static OpRegistry& get();
  const OpDef* find(std::string_view name) const;  // nullptr when unknown
  const OpDef& at(std::string_view name) const;    // throws kNotFound
  const OpDef& at(int32_t id) const { return *ops_[static_cast<size_t>(id)]; }
  int32_t size() const { return size_.load(std::memory_order_acquire); }
  OpDef& add(OpDef def);
  OpDef& get_mutable(std::string_view name);  // registration only (gradient rules, samples)

 private:
  OpRegistry();
  // The by-name index: open addressing, each slot an op id or -1. When half full it is replaced by one
  // twice the size; replaced ones are kept, as a reader may still be probing them (at most one per
  // doubling, all together smaller than the current one).
  struct NameIndex {
    explicit NameIndex(size_t capacity);
    size_t mask;
    std::unique_ptr<std::atomic<int32_t>[]> slots;
  };
  void index_name(NameIndex& index, int32_t id);

  StableTable<std::unique_ptr<OpDef>> ops_;
  std::atomic<int32_t> size_{0};
  std::atomic<const NameIndex*> names_{nullptr};
  std::mutex mu_;                                         // serialises adding
  std::vector<std::unique_ptr<NameIndex>> name_indexes_;  // the current one last
};

// Registers the built-in op set (op_defs.cc).
void register_builtin_ops(OpRegistry& registry);

}  // namespace oar
