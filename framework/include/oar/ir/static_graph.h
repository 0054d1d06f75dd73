// Static graph building: in static mode every oar op call is recorded into a Program instead of run.
//
// A ProgramBuilder owns the Program being built. While one is current (thread-local, set by
// oar.static.program_guard and by jit.to_static), run_op appends an OpDesc per call and returns
// *symbolic* tensors: tensors whose TensorImpl names a program variable and holds no memory. Shape and
// dtype inference still run, so errors surface while building, as in eager mode.
//
// Recorded ops are "native": OpDesc.type is "oar." + the OpDef name, one input slot per OpDef input
// (a variadic op has one slot holding all variables), one output slot per OpDef output, and every
// attribute with defaults completed (int -> LONG, float -> FLOAT64, ints -> LONGS, floats -> FLOAT64S,
// string -> STRING). An op that writes into inputs lists each written input again as an output in a
// slot of the same name. The view methods of Tensor record "oar.reshape", "oar.transpose",
// "oar.slice", "oar.squeeze", "oar.unsqueeze" and "oar.expand" (find_view_op below).
//
// Unknown extents (None in static.data / InputSpec) are carried as the sentinel kUnknownDim, a large
// prime, so that shape inference, views and gradient rules run unchanged; products of it stay
// recognisable. Python sees -1 for them, VarDescs store -1, and the executor substitutes the run's
// actual size into attributes that captured the sentinel (see executor.h).
//
// Run-time attributes (decision 96): an extent known only from a variable's value (paddle.ones(shape=
// var), arange with variable bounds, nonzero's count) never enters an attribute. The native op gets an
// input slot "@<attr>" naming the variable, and the executor reads the variable's value into that
// attribute each time the op runs; shape inference then runs on the real attributes. While building,
// the attribute holds a placeholder that gives the output the sentinel extent (shown as -1).
//
// Concrete tensors used by a recorded op (a Layer's parameters under to_static, constants) are
// *captured*: they become persistable variables of the program and the builder keeps them, so an
// executor can bind them by reference (updates in place are seen by both).
#pragma once

#include <oar/core/op.h>
#include <oar/core/tensor.h>
#include <oar/ir/program.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oar/core/unknown_extent.h>

namespace oar::ir {

// The sentinels and is_unknown_extent live in the core (oar/core/unknown_extent.h): shape inference of
// the core's ops lets two unknown extents broadcast while a program is built.
using oar::is_unknown_extent;
using oar::kNumUnknownDims;
using oar::kUnknownDim;
using oar::kUnknownDims;
// The sentinel for the next value-dependent extent (cycles through kUnknownDims[1..]).
int64_t new_unknown_extent();
// Dims as the user sees them: extents derived from the sentinel become -1.
std::vector<int64_t> visible_dims(const Dims& d);
// The reverse, for shapes given by users: -1 / None becomes the sentinel.
Dims internal_dims(const std::vector<int64_t>& shape);

class ProgramBuilder;

inline constexpr char kVarAttrPrefix = '@';  // "@shape": attribute `shape` comes from a variable

// Reading the memory of a symbolic tensor: an error naming the variable (its value exists only when
// an executor runs the program).
[[noreturn]] void throw_symbolic_access(const Tensor& t);

// What makes a tensor symbolic: the variable it stands for.
struct SymbolicVar {
  std::string name;
  const ProgramBuilder* builder = nullptr;  // identity only: which program it belongs to
  bool is_view = false;                     // made by a view op (in-place writes into it are refused)
};

bool is_symbolic(const Tensor& t);
// The variable name of a symbolic tensor; throws kInvalidArgument for a concrete one.
const std::string& symbolic_name(const Tensor& t);

// The process-wide source of variable names: key -> a new name ("fill.tmp" -> "fill.tmp_3"). The Python
// package installs Paddle's unique_name generator here, so layer, parameter and program-variable names
// come from one counter that unique_name.guard() resets. Empty (the default): per-program counters.
using NameSource = std::function<std::string(const std::string& key)>;
void set_name_source(NameSource source);

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::shared_ptr<Program> program = nullptr);

  Program& program() { return *program_; }
  const std::shared_ptr<Program>& program_ptr() const { return program_; }
  int32_t current_block() const { return block_; }
  void set_current_block(int32_t idx);
  // A new sub-block of the current one, made current; returns its index.
  int32_t push_block();
  // Back to the current block's parent.
  void pop_block();

  // A fresh variable name, unique in this program: from the process's name source when one is set
  // (set_name_source), else prefix + "_" + a counter of this program.
  std::string unique_name(const std::string& prefix);

  // Declares a variable in the current block (global block when persistable) and returns the
  // symbolic tensor standing for it. Negative extents are unknown. Throws on a duplicate name.
  Tensor create_var(const std::string& name, const std::vector<int64_t>& shape, DType dtype, Place place,
                    bool persistable = false, bool is_parameter = false, bool stop_gradient = true);
  // A symbolic tensor for an existing variable (looked up from the current block outwards).
  Tensor var(const std::string& name, Place place);

  // Concrete tensors the program reads (see the header comment). bind_capture names one in advance
  // (a parameter's name) and marks it a parameter or not.
  void bind_capture(const Tensor& t, const std::string& name, bool is_parameter);
  const std::map<std::string, Tensor>& captures() const { return captures_; }
  // The variable standing for concrete tensor `t`, capturing it on first use.
  std::string capture(const Tensor& t);

  // Records op `op` with `inputs` (symbolic or concrete) and completed `attrs`; `metas` are the
  // inferred outputs. Fills `outputs` with new symbolic tensors (none for in-place ops).
  void record(const OpDef& op, const Tensor* inputs, int32_t n_in, const Attrs& attrs, const InferContext& ic,
              Place place, Tensor* outputs);
  // Records view op `view_def` (find_view_op) of `base` whose result has `dims`; returns the result.
  Tensor record_view(const Tensor& base, const OpDef& view_def, const Attrs& attrs, const Dims& dims);

  // Renames variable `t` (symbolic, of this program) everywhere in the program; every tensor standing
  // for it follows. Throws when `new_name` is taken.
  void rename(const Tensor& t, const std::string& new_name);

  // Appends `op` as it is to the current block (control-flow ops built by oar.static.nn).
  void append_op(OpDesc op);
  // The variables that the ops of block `idx` (and of its sub-blocks) read / write and that are declared
  // outside it: a control-flow op's inputs and outputs.
  std::vector<std::string> outer_reads(int32_t idx) const;
  std::vector<std::string> outer_writes(int32_t idx) const;
  // Moves to block 0 the variables that block `idx` reads and that are declared in a block other than
  // `idx`'s ancestors: a sub-block's own variables are erased after each run of it, so a gradient
  // block reading a forward branch's intermediates needs them declared where they outlive it.
  void keep_alive_for(int32_t idx);

  // Op role of ops recorded from now on (Paddle's op_role attribute: 0 forward, 1 backward, 2 optimize).
  void set_op_role(int32_t role) { op_role_ = role; }
  int32_t op_role() const { return op_role_; }

  // Train/test variants. Layers whose behaviour depends on the mode (dropout, batch_norm) record both
  // variants into a static program: the training one with mode "train", the inference one with mode
  // "test" (attribute `oar_mode`), the latter's result redirected onto the former's variable.
  // select_mode() then keeps one variant. "" records ops for both modes.
  void set_mode(std::string mode);
  const std::string& mode() const { return mode_; }
  // The live tensor standing for variable `name` with its autograd history (a capture, or the symbolic
  // tensor recorded under that name, preferring one that takes part in differentiation); undefined when
  // none is alive. Control flow uses it to differentiate through its sub-blocks.
  Tensor live_tensor(const std::string& name) const;
  void note_live(const Tensor& t) { live_.push_back(t.impl_ptr()); }  // an alias made elsewhere (PyLayer)
  // Makes the op of the current block that produced `produced` (recorded after op index `first_op`)
  // write `target` instead and drops `produced`'s variable; `produced` then stands for `target`.
  void redirect_output(const Tensor& produced, const Tensor& target, int32_t first_op);

 private:
  Tensor make_symbolic(const std::string& name, const Dims& dims, DType dtype, Place place,
                       bool is_view = false);
  std::string input_var(const Tensor& t, const OpDef& op, int32_t i);
  void stamp(OpDesc& op) const;  // the op_role and oar_mode attributes of a recorded op

  std::shared_ptr<Program> program_;
  int32_t block_ = 0;
  int32_t op_role_ = 0;
  std::string mode_;
  mutable std::vector<std::weak_ptr<TensorImpl>> live_;  // the symbolic tensors made (see live_tensor)
  std::unordered_map<std::string, int64_t> counters_;
  std::map<std::string, Tensor> captures_;
  std::unordered_map<const TensorImpl*, std::string> capture_names_;
};

// Binds attributes of the op that recorded `out` (the last op of the current block writing it) to the
// variables of `vars` (symbolic, or concrete ones, which are captured): see "Run-time attributes".
// `dims` (when not null) replaces out's build-time dims (a placeholder could not give the sentinels).
// The op keeps out's dims (attribute "@out_dims"): when it runs, each extent that is a sentinel there
// is measured on its result, for later ops whose attributes captured that sentinel.
void bind_var_attrs(const Tensor& out, const std::vector<std::pair<std::string, Tensor>>& vars,
                    const Dims* dims = nullptr);
// Records view op `view` ("reshape", "expand", "slice") of symbolic `base` with placeholder `attrs`,
// build-time `dims` (-1: base's extent at that axis, right-aligned) and attributes bound to `vars`;
// reshape and expand also get their gradient.
Tensor record_view_var_attrs(const Tensor& base, const std::string& view, const Attrs& attrs,
                             const Dims& dims, const std::vector<std::pair<std::string, Tensor>>& vars);

// Installs static mode's dispatch hook (dispatch_hooks.h): op calls and views are recorded into the
// current builder. Called once at start-up (core_hooks.cc).
void install_static_graph_hook();

// The builder ops are recorded into on this thread (nullptr: eager execution).
ProgramBuilder* current_builder();
// Makes `b` current; returns the previous one. Pass nullptr for eager execution.
std::shared_ptr<ProgramBuilder> set_current_builder(std::shared_ptr<ProgramBuilder> b);

// The view ops the builder records, as op definitions outside the registry (input "x", output "out"):
// reshape(shape), transpose(perm), slice(axis, start, end, step), squeeze(axes), unsqueeze(axis),
// expand(shape). nullptr for other names.
const OpDef* find_view_op(const std::string& name);
// Runs a recorded view op on a concrete tensor (the executor's side of record_view).
Tensor run_view_op(const OpDef& view_def, const Tensor& x, const Attrs& attrs);

// A copy of `program` keeping, in every block, only the ops whose op_role attribute (0 when absent) is
// in `roles` (e.g. the forward part {0} and the backward part {1} of a to_static program).
Program filter_ops_by_role(const Program& program, const std::vector<int32_t>& roles);

// A copy of `program` with one variant of its mode-dependent ops (ProgramBuilder::set_mode): the "test"
// ones when for_test, else the "train" ones; the other variant's ops are dropped and the `oar_mode`
// attribute is removed from the rest.
Program select_mode(const Program& program, bool for_test);

// Whether an op type is a native one ("oar.<name>").
bool is_native_op_type(const std::string& type);

// oar attribute value -> program attribute (the native encoding above), and back by the schema.
Attribute to_ir_attr(const AttrValue& v);
AttrValue from_ir_attr(const Attribute& a, oar::AttrType want, const std::string& op,
                       const std::string& name);

}  // namespace oar::ir
