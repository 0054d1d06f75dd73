// Operator versions, as PaddlePaddle keeps them: each op type has an integer version that grows when
// its definition changes (a new input, an attribute with new meaning). A program records the versions
// it was written with (ProgramDesc.op_version_map); a program that needs a newer version of an op than
// oar implements is refused on load, naming the op and both versions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace oar::ir {

class Program;

// The Paddle op types oar maps, each with the newest version oar implements (the map's order).
const std::vector<std::pair<std::string, int32_t>>& supported_op_versions();
// nullopt when oar does not know the op type at all.
std::optional<int32_t> supported_op_version(const std::string& op_type);

// For every op type used in `program` (all blocks) that oar knows: the version the program needs
// (its op_version_map entry, 0 when absent) must be <= oar's. Throws kUnimplemented otherwise:
//   "conv2d: the model needs version 3 of this op, oar implements version 1".
// With `require_known_ops`, an op type oar does not know is refused too (kUnimplemented).
void check_op_versions(const Program& program, bool require_known_ops = false);

// Sets program's op_version_map to oar's supported versions (what a saved model records).
void fill_op_version_map(Program* program);

// One entry of the Paddle op map (framework/src/ir/paddle_map.def: the one table from which the
// Executor's translations, export_paddle_dialect's rules and the versions above are derived), as data,
// for tests and tools.
struct PaddleOpMapping {
  std::string paddle_type;
  int32_t version = -1;   // -1: oar records no version for it
  std::string form;       // unary, elementwise, binary, reduce, slots (derived both ways) or custom
  std::string oar_op;     // the regular forms' oar op ("" for custom; the native op for a declined one)
  bool imported = false;  // the Executor translates it
  int32_t num_inputs = 0, num_outputs = 0;  // slots: Paddle's slots, in the oar op's order
  std::vector<std::string> renamed_attrs;   // slots: the oar attributes renamed to Paddle's
  std::vector<std::string> exported_from;   // native ops (OpDefs) whose export writes this type
  std::vector<std::string> exported_views;  // view ops (no OpDef) whose export writes this type
  std::string also_from;                    // a native op another entry exports that writes this type as well
  std::string declined;                     // why oar's op of this name (oar_op) is kept native on export
};
const std::vector<PaddleOpMapping>& paddle_op_map();

}  // namespace oar::ir
