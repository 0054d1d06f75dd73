// Custom operator libraries (docs/custom_op.md): a shared library built against the SDK's
// oar/extension.h, talking to the core only through the C ABI of oar/custom_op_api.h. Loading one
// registers each of its ops in the OpRegistry (so they run eagerly, record into static programs, and
// are differentiable through the library's grad ops) with a kernel entry for every device type.
#pragma once

#include <oar/core/op.h>

#include <string>
#include <vector>

namespace oar {

// What Python needs to build a function per op.
struct CustomOpInfo {
  std::string name;
  std::string library;                // the path it was loaded from
  std::vector<std::string> inputs;    // slot names
  std::vector<uint32_t> input_flags;  // OAR_CUSTOM_INPUT_*
  std::vector<std::string> outputs;
  std::vector<std::string> attr_names;
  std::vector<std::string> attr_types;      // "int", "float", "std::vector<int64_t>", ...
  std::vector<int32_t> inplace;             // per output: the input slot it is written into, or -1
  std::vector<std::string> kernel_devices;  // "" = every device type
};

// Loads `path` (once: a second call returns the same ops) and returns its ops in registration order.
// Throws oar::Error naming the path for a missing file, a library without oar_custom_op_init, an ABI
// version outside the window, a failing init, an op name already registered, a bad declaration.
std::vector<CustomOpInfo> load_custom_op_library(const std::string& path);

// Loads every library in a ':'-separated list (OAR_CUSTOM_OP_LIBS, read by the predictor).
void load_custom_op_libraries_from_env();

// Whether `op` came from a custom op library, and its description.
const CustomOpInfo* custom_op_info(const OpDef& op);

// The attribute that carries, for custom ops with optional or vector inputs, how many of the flattened
// inputs each declared input slot takes (absent: one each).
inline constexpr const char* kCustomInputCounts = "__input_counts";

// Per declared input slot, how many of the n_in flattened inputs it takes; throws kInvalidArgument
// when they do not fit the declaration.
std::vector<int32_t> custom_op_slot_counts(const OpDef& op, const Attrs& attrs, int32_t n_in);

}  // namespace oar
