// The Paddle op map: one entry per PaddlePaddle legacy op type oar knows, in paddle_map.def. Each entry
// gives the Paddle type, its op version, the oar op(s) it maps to and how each direction works: a
// regular form (from which both the import translation and the export rule are derived) or the
// hand-written translation (paddle_ops.cc) and export rules (paddle_export.cc) it names.
//
// Three files read the table, each taking what it needs (docs/program_ir.md, "The Paddle op map"):
// op_version.cc (versions; it is also built into the fuzzers, without the rest of the core),
// paddle_ops.cc (import: find_op_translation) and paddle_export.cc (export: export_paddle_dialect). A
// reader defines IMPORT(fn) and RULE(fn) before including paddle_map.def: `fn` where the function is
// in the file, nullptr elsewhere.
#pragma once

#include <oar/core/op.h>
#include <oar/ir/executor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace oar::ir::paddle_map {

struct ExportCtx;  // paddle_export.cc: what an export rule works on
using ImportFn = OpKernelFn (*)(const OpDesc& op);
using ImportAttrsFn = Attrs (*)(const OpDesc& op);
using ExportFn = bool (*)(ExportCtx& c, const char* arg);

enum class Form : uint8_t {
  kCustom,       // hand-written translation and rules
  kUnary,        // X -> Out, no attributes
  kElementwise,  // X, Y -> Out with Paddle's elementwise `axis` (exported as -1: numpy broadcasting)
  kBinary,       // X, Y -> Out, numpy broadcasting, no attributes
  kReduce,       // X -> Out with dim / keep_dim / reduce_all (reduce_sum: out_dtype)
  kSlots,        // Paddle slots <-> the oar op's inputs / outputs by position; attributes renamed
};

// An attribute of a kSlots entry: Paddle's `paddle` <-> oar's `oar`; `def` is used on import when the
// Paddle op does not carry it. Export refuses values Paddle's type cannot hold (int32, float32).
enum class AttrKind : uint8_t {
  kInt,    // INT <-> LONG
  kBool,   // BOOLEAN <-> LONG 0 / 1
  kFloat,  // FLOAT <-> FLOAT64
};
struct AttrRename {
  const char* paddle;
  const char* oar;
  AttrKind kind;
  double def;
};

// A native op this entry's Paddle type is the canonical export of.
struct Export {
  const char* native;         // OpDef name, or a view op (no OpDef; recorded by tensor.cc)
  ExportFn fn = nullptr;      // nullptr: the rule of the entry's form
  const char* arg = nullptr;  // passed to fn; nullptr: the Paddle type
  bool view = false;
  bool run_time_attrs = false;  // fn reads the op's run-time attribute inputs (@shape, ...) itself
};

constexpr int32_t kNoVersion = -1;  // oar records no version for the type (accepted on load unchecked)

struct Entry {
  const char* paddle = nullptr;
  int32_t version = kNoVersion;
  Form form = Form::kCustom;
  const char* op = nullptr;              // regular forms: the oar op imported to and exported from
  bool imported = false;                 // the Executor runs this type
  ImportFn import = nullptr;             // kCustom: the translation
  std::vector<const char*> ins, outs;    // kSlots: Paddle slots in the oar op's input / output order
  std::vector<AttrRename> attrs;         // kSlots
  ImportAttrsFn import_attrs = nullptr;  // kSlots whose attributes are not plain renames
  std::vector<Export> exports;           // the native ops written as this type (empty: import only)
  const char* also_from = nullptr;       // also written by this native op's rule (not the canonical one)
  const char* declined = nullptr;        // why oar's op `op` is not exported although Paddle has the name

  // This type is also written by the export rule of native op `native` (owned by another entry).
  Entry also(const char* native) const {
    Entry e = *this;
    e.also_from = native;
    return e;
  }
};

// ---- the forms (paddle_map.def uses these) ---------------------------------------------------------

inline Entry named(const char* paddle, int32_t version) {
  Entry e;
  e.paddle = paddle;
  e.version = version;
  return e;
}
inline Entry regular(Form f, const char* paddle, int32_t version, const char* op, bool exported) {
  Entry e = named(paddle, version);
  e.form = f;
  e.op = op;
  e.imported = true;
  if (exported) e.exports = {{op}};
  return e;
}
inline Entry unary(const char* paddle, int32_t version, const char* op) {
  return regular(Form::kUnary, paddle, version, op, true);
}
// A second Paddle name for an op another entry exports (import only).
inline Entry unary_alias(const char* paddle, int32_t version, const char* op) {
  return regular(Form::kUnary, paddle, version, op, false);
}
inline Entry elementwise(const char* paddle, int32_t version, const char* op) {
  return regular(Form::kElementwise, paddle, version, op, true);
}
inline Entry binary(const char* paddle, int32_t version, const char* op) {
  return regular(Form::kBinary, paddle, version, op, true);
}
inline Entry reduce(const char* paddle, int32_t version, const char* op) {
  return regular(Form::kReduce, paddle, version, op, true);
}
// Both directions from the slots and the attribute renames.
inline Entry slots(const char* paddle, int32_t version, const char* op, std::vector<const char*> ins,
                   std::vector<const char*> outs, std::vector<AttrRename> attrs = {}) {
  Entry e = regular(Form::kSlots, paddle, version, op, true);
  e.ins = std::move(ins);
  e.outs = std::move(outs);
  e.attrs = std::move(attrs);
  return e;
}
// Slots on import with hand-written attribute conversion; a hand-written export rule.
inline Entry slots(const char* paddle, int32_t version, const char* op, std::vector<const char*> ins,
                   std::vector<const char*> outs, ImportAttrsFn import_attrs, ExportFn rule) {
  Entry e = slots(paddle, version, op, std::move(ins), std::move(outs));
  e.import_attrs = import_attrs;
  e.exports = {{op, rule}};
  return e;
}
// Hand-written translation; `exports`: the native ops (and their rules) written as this type.
inline Entry custom(const char* paddle, int32_t version, ImportFn import, std::vector<Export> exports = {}) {
  Entry e = named(paddle, version);
  e.imported = true;
  e.import = import;
  e.exports = std::move(exports);
  return e;
}
// A type oar versions but does not run yet.
inline Entry versioned(const char* paddle, int32_t version) { return named(paddle, version); }
// Paddle has an op named like oar's `op` that computes something else: `op` stays native on export.
inline Entry declined(const char* paddle, const char* op, const char* why) {
  Entry e = named(paddle, kNoVersion);
  e.op = op;
  e.declined = why;
  return e;
}
inline AttrRename int_attr(const char* paddle, const char* oar, int32_t def) {
  return {paddle, oar, AttrKind::kInt, static_cast<double>(def)};
}
inline AttrRename bool_attr(const char* paddle, const char* oar, bool def) {
  return {paddle, oar, AttrKind::kBool, def ? 1.0 : 0.0};
}
inline AttrRename float_attr(const char* paddle, const char* oar, double def) {
  return {paddle, oar, AttrKind::kFloat, def};
}

// A reader's copy of the table (map_entries() in each reading file) indexed by Paddle type.
inline std::map<std::string, const Entry*> index_by_type(const std::vector<Entry>& entries) {
  std::map<std::string, const Entry*> m;
  for (const Entry& e : entries) m.emplace(e.paddle, &e);
  return m;
}

}  // namespace oar::ir::paddle_map
