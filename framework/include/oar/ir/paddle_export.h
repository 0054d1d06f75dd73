// Native oar ops -> PaddlePaddle's op dialect, for saving a program PaddlePaddle can load.
//
// A program recorded by oar's static mode holds native ops: type "oar.<OpDef name>", one input slot per
// OpDef input (a variadic op: one slot holding every variable), one output slot per OpDef output, and
// every OpDef attribute as LONG / FLOAT64 / LONGS / FLOAT64S / STRING ("dtype" holds the oar DType code).
// export_paddle_dialect rewrites each native op that has a Paddle equivalent into Paddle's legacy op
// types (elementwise_add, matmul_v2, conv2d, reshape2 with its XShape, ...), with Paddle's slot and
// attribute names and types; those are the types oar's Executor runs (paddle_ops.cc), so the exported
// program runs on oar as well. The table and its limits are in docs/program_ir.md ("Exporting to
// PaddlePaddle's op dialect").
#pragma once

#include <oar/ir/program.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace oar::ir {

struct ExportReport {
  // Native op types rewritten into Paddle ops, with how many ops of each (sorted by type).
  std::vector<std::pair<std::string, int64_t>> exported;
  // Native op types left unchanged (no Paddle equivalent, or an attribute value or use Paddle's op
  // cannot express), with counts (sorted by type) and, per type, the reason for its first occurrence.
  std::vector<std::pair<std::string, int64_t>> kept;
  std::vector<std::pair<std::string, std::string>> reasons;

  int64_t num_kept() const;
  bool complete() const { return kept.empty(); }  // the program holds Paddle ops only
  std::string to_string() const;                  // "kept native: oar.svd x1 (no Paddle equivalent)..."
};

// Whether `op` is a native oar op (its type starts with "oar.").
bool is_native_op(const OpDesc& op);

// A copy of `native` in which every native op with a Paddle equivalent (in every block) is replaced by
// one or more Paddle ops. New temporaries (XShape outputs, reshaped operands) are declared in the op's
// block with names "<var>@oar_export.N". Ops already typed as Paddle ops stay unchanged; native ops
// without an equivalent stay unchanged and are listed in `report`. The op_version_map of the result
// holds the native program's entries plus oar's version (op_version.h) of every Paddle op type the
// result uses. Throws kInvalidArgument for a malformed native op (a missing slot or attribute).
Program export_paddle_dialect(const Program& native, ExportReport* report = nullptr);

// The native op names (without "oar.") export_paddle_dialect can rewrite, sorted.
std::vector<std::string> exportable_native_ops();

}  // namespace oar::ir
