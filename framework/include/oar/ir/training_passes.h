// Fusion passes on training programs (docs/static.md, "Training passes"; decision 113).
//
// They run on oar's native op dialect ("oar.<op>", what to_static and static mode record): on the
// forward and backward programs of a to_static training run, or on one static-mode program holding
// forward, backward and optimizer ops. Each pass replaces a chain of ops by one fused op that computes
// the same values with fewer kernels (exact fusions: the results equal the unfused chain's up to the
// kernels' own rounding), so a program runs faster and nothing else changes.
//
// `pinned` names the variables that must keep their values: fetched, fed, persistable, or read by the
// other program (the backward reads forward values). A fusion drops an intermediate variable only when
// it is not pinned and no other op of the program reads it; otherwise the fused op still writes it (or
// the pass leaves the chain alone). Programs are not SSA: every rewrite also checks how many ops write
// each name and that moving a write earlier changes no reader in between.
#pragma once

#include <oar/core/place.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>

#include <set>
#include <string>

namespace oar::ir {

struct TrainingPassOptions {
  bool fuse_gemm_epilogue = true;    // matmul + 1-D bias add (+ relu / gelu) -> fused_gemm_epilogue
  bool fuse_elewise_add_act = true;  // add + relu / gelu / sigmoid / tanh -> fused_elemwise_add_activation
  bool fuse_residual_layer_norm = true;  // add + layer_norm -> fused_add_layer_norm (also writes the sum)
  bool fuse_attention = true;            // attention_passes.cc
  bool fuse_softmax_grad = true;         // attention_passes.cc
  // A pass runs only when the device of `place` has a float32 kernel of the op it introduces, so a
  // device without one never gets ops it would run through the CPU fallback.
  Place place = cpu_place();
};

// matmul(x, y) + bias (y 2-D, bias [N]) (+ relu / exact gelu, when the pre-activation is not needed)
// -> fused_gemm_epilogue(x, y, bias); and the backward's parameter gradients of such a Linear,
// sum(g) over the leading axes + x^T g (rows flattened) -> fused_linear_param_grad(x, g).
PassStat fuse_gemm_epilogue(Program& p, const std::set<std::string>& pinned);
// add(x, y) + act (the sum not needed elsewhere; y x's trailing shape) -> fused_elemwise_add_activation.
PassStat fuse_elewise_add_act(Program& p, const std::set<std::string>& pinned);
// layer_norm(x + r) (x, r of one shape) -> fused_add_layer_norm(x, r, weight, bias) writing the sum too.
PassStat fuse_residual_layer_norm(Program& p, const std::set<std::string>& pinned);

// ---- attention passes (attention_passes.cc): declared here by their author, same signature --------
// matmul(q, k^T) [+ mask] -> softmax -> matmul(., v) -> fused_attention (writing the softmax too), and the
// block's backward (two matmuls of dP and dV, softmax_grad, the matmuls of dQ and dK) ->
// fused_attention_grad, when the scores and their gradients are read by nothing else.
PassStat fuse_attention(Program& p, const std::set<std::string>& pinned);
// The composite softmax gradient y * (g - sum(g * y, axis, keepdim)) -> softmax_grad(y, g, axis).
PassStat fuse_softmax_grad(Program& p, const std::set<std::string>& pinned);

// Runs the enabled passes on `forward` and, when given, on `backward` (entries for the backward
// program are reported as "<pass>[backward]"). ops_before / ops_after count both programs.
PassReport run_training_passes(Program& forward, Program* backward,
                               const std::set<std::string>& pinned_forward,
                               const std::set<std::string>& pinned_backward,
                               const TrainingPassOptions& opts = {});

}  // namespace oar::ir
