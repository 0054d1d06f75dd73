// The op versions oar implements for the Paddle op types it maps, read from the Paddle op map
// (paddle_map.def, where each type's entry gives its version). A version there is the newest
// PaddlePaddle op definition (its REGISTER_OP_VERSION checkpoint count) whose semantics oar's mapping
// follows; ops Paddle never versioned are 0. Older versions are accepted: the mapping handles them.
// This file is also built into the fuzzers, without the rest of the core: it reads the map's data only.
#include <oar/core/error.h>
#include <oar/ir/op_version.h>
#include <oar/ir/program.h>

#include <set>
#include <string_view>
#include <unordered_map>

#include "paddle_map.h"

namespace oar::ir {
namespace {

const std::vector<paddle_map::Entry>& map_entries() {
#define IMPORT(fn) nullptr
#define RULE(fn) nullptr
  using namespace paddle_map;
  static const std::vector<Entry> t = {
#include "paddle_map.def"
  };
#undef IMPORT
#undef RULE
  return t;
}

const char* form_name(paddle_map::Form f) {
  switch (f) {
    case paddle_map::Form::kUnary:
      return "unary";
    case paddle_map::Form::kElementwise:
      return "elementwise";
    case paddle_map::Form::kBinary:
      return "binary";
    case paddle_map::Form::kReduce:
      return "reduce";
    case paddle_map::Form::kSlots:
      return "slots";
    case paddle_map::Form::kCustom:
      break;
  }
  return "custom";
}

}  // namespace

const std::vector<PaddleOpMapping>& paddle_op_map() {
  static const std::vector<PaddleOpMapping> t = [] {
    std::vector<PaddleOpMapping> out;
    for (const paddle_map::Entry& e : map_entries()) {
      PaddleOpMapping m;
      m.paddle_type = e.paddle;
      m.version = e.version;
      m.form = form_name(e.form);
      m.oar_op = e.op != nullptr ? e.op : "";
      m.imported = e.imported;
      m.num_inputs = static_cast<int32_t>(e.ins.size());
      m.num_outputs = static_cast<int32_t>(e.outs.size());
      for (const paddle_map::AttrRename& r : e.attrs) m.renamed_attrs.push_back(r.oar);
      for (const paddle_map::Export& x : e.exports)
        (x.view ? m.exported_views : m.exported_from).push_back(x.native);
      m.also_from = e.also_from != nullptr ? e.also_from : "";
      m.declined = e.declined != nullptr ? e.declined : "";
      out.push_back(std::move(m));
    }
    return out;
  }();
  return t;
}

const std::vector<std::pair<std::string, int32_t>>& supported_op_versions() {
  static const std::vector<std::pair<std::string, int32_t>> kVersions = [] {
    std::vector<std::pair<std::string, int32_t>> v;
    for (const paddle_map::Entry& e : map_entries())
      if (e.version != paddle_map::kNoVersion) v.emplace_back(e.paddle, e.version);
    return v;
  }();
  return kVersions;
}

std::optional<int32_t> supported_op_version(const std::string& op_type) {
  for (auto& [name, v] : supported_op_versions())
    if (name == op_type) return v;
  return std::nullopt;
}

void check_op_versions(const Program& program, bool require_known_ops) {
  // Hash lookups: a hostile program may list millions of op types and version entries.
  std::unordered_map<std::string_view, int32_t> recorded;
  for (auto& [name, v] : program.op_version_map()) recorded.emplace(name, v);
  std::set<std::string> used;
  for (int32_t bi = 0; bi < program.num_blocks(); ++bi)
    for (const OpDesc& op : program.block(bi).ops()) used.insert(op.type);
  for (const std::string& type : used) {
    auto ours = supported_op_version(type);
    if (!ours) {
      OAR_ENFORCE(!require_known_ops, ErrorCode::kUnimplemented,
                  type << ": oar does not implement this PaddlePaddle op type");
      continue;
    }
    auto it = recorded.find(type);
    int32_t needed = it == recorded.end() ? 0 : it->second;
    OAR_ENFORCE(needed <= *ours, ErrorCode::kUnimplemented,
                type << ": the model needs version " << needed << " of this op, oar implements version "
                     << *ours << " (the model was saved by a newer PaddlePaddle)");
  }
}

void fill_op_version_map(Program* program) {
  program->set_op_version_map(supported_op_versions());
  program->set_has_op_version_map(true);
}

}  // namespace oar::ir
