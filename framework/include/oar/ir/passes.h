// Inference optimisation passes over block 0 of a Program (docs/program_ir.md, "Passes").
//
// Each pass rewrites the program in place and returns what it did. Passes that need parameter values
// (constant folding, conv + batch_norm folding) read them from a Scope holding the parameters by name
// and write the tensors they create into it (as new persistable variables of the program). Op types a
// pass does not know (including native "oar.<op>" ops) are never removed, merged or rewritten, and
// variables used by sub-blocks, fed, fetched or persistable are never renamed or fused away.
// Persistable variables no op names any more (batch_norm parameters after folding, a weight whose
// transpose was folded) are dropped from the program and from the scope by DCE / fold_conv_bn.
#pragma once

#include <oar/core/place.h>
#include <oar/ir/executor.h>
#include <oar/ir/program.h>

#include <cstdint>
#include <string>
#include <vector>

namespace oar::ir {

struct PassOptions {
  bool dce = true;                   // dead-code elimination
  bool constant_folding = true;      // ops whose inputs are all constants -> precomputed parameters
  bool cse = true;                   // common-subexpression elimination
  bool fuse_elementwise_act = true;  // elementwise_add + act -> fused_elemwise_add_activation
  bool fuse_matmul_bias = true;      // matmul_v2 / mul + elementwise_add (+ act) -> fc
  bool fold_conv_bn = true;          // conv2d (+ bias add) + batch_norm(is_test) -> conv2d + add
  bool memory_reuse = true;          // outputs take over a dead input's variable (in-place form)
  Place place = cpu_place();         // where folded tensors are computed and stored
};

// What one pass did.
struct PassStat {
  std::string pass;
  int64_t ops_removed = 0;   // ops deleted from block 0 (merged, folded, dead)
  int64_t ops_fused = 0;     // fusion / folding patterns rewritten
  int64_t vars_renamed = 0;  // memory reuse: outputs renamed to a dead input
};

struct PassReport {
  std::vector<PassStat> passes;  // in the order they ran
  int64_t ops_before = 0, ops_after = 0;
  const PassStat* find(const std::string& pass) const;  // nullptr when that pass did not run
  std::string to_string() const;
};

// Removes pure ops whose outputs nobody needs; with `params`, also unreferenced persistables.
PassStat dead_code_elimination(Program& program, Scope* params = nullptr);
// Merges an op into an earlier identical one (same type, input values and attributes).
PassStat common_subexpression_elimination(Program& program);
// Precomputes ops whose inputs are all constants (parameters, fill_constant, ...) into `params`.
PassStat constant_folding(Program& program, Scope& params, Place place = cpu_place());
// matmul_v2 / mul + elementwise_add of a bias (+ relu / gelu / tanh / sigmoid) -> fc.
PassStat fuse_matmul_bias(Program& program, Scope& params);
// elementwise_add + relu / sigmoid / tanh / gelu -> fused_elemwise_add_activation.
PassStat fuse_elementwise_act(Program& program);
// conv2d (+ per-channel bias add) + batch_norm (inference) -> conv2d with a folded filter + add.
PassStat fold_conv_bn(Program& program, Scope& params);
// Elementwise ops write into their dead input's variable (Paddle's in-place form Out == X).
PassStat memory_reuse(Program& program);

// Runs the enabled passes in this order: DCE, CSE, constant folding, conv+bn folding, matmul+bias
// fusion, elementwise+act fusion, DCE again (one "dce" entry in the report), memory reuse (last: it
// renames variables, which hides patterns from the others).
PassReport run_inference_passes(Program& program, Scope& params, const PassOptions& opts = {});

// Helpers for using the passes with an Executor. The passes change the set of persistable variables,
// so parameters are loaded with the *original* program (load_param_scope), the passes run on a copy,
// and the resulting scope is copied into the executor built from the optimised program.
Scope load_param_scope(const Program& original, const std::string& pdiparams_bytes,
                       Place place = cpu_place());
void copy_scope(const Scope& from, Scope& to);

}  // namespace oar::ir
