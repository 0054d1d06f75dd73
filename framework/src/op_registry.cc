#include <oar/core/error.h>
#include <oar/core/op.h>

#include <cstring>

#include "op_samples.h"

namespace oar {

void Attrs::set(const char* name, AttrValue v) {
  for (auto& item : items_)
    if (std::strcmp(item.first, name) == 0) {
      item.second = std::move(v);
      return;
    }
  items_.emplace_back(name, std::move(v));
}

const AttrValue* Attrs::find(const char* name) const {
  for (const auto& item : items_)
    if (std::strcmp(item.first, name) == 0) return &item.second;
  return nullptr;
}

namespace {
template <typename T> const T& get_as(const Attrs& a, const char* name, const char* type) {
  const AttrValue* v = a.find(name);
  OAR_ENFORCE(v != nullptr, ErrorCode::kNotFound, "attribute '" << name << "' is missing");
  const T* p = std::get_if<T>(v);
  OAR_ENFORCE(p != nullptr, ErrorCode::kType, "attribute '" << name << "' is not of type " << type);
  return *p;
}
}  // namespace

int64_t Attrs::get_int(const char* name) const { return get_as<int64_t>(*this, name, "int"); }
double Attrs::get_float(const char* name) const {
  const AttrValue* v = find(name);
  if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
  return get_as<double>(*this, name, "float");
}
const std::vector<int64_t>& Attrs::get_ints(const char* name) const {
  return get_as<std::vector<int64_t>>(*this, name, "ints");
}
const std::vector<double>& Attrs::get_floats(const char* name) const {
  return get_as<std::vector<double>>(*this, name, "floats");
}
const std::string& Attrs::get_string(const char* name) const { return get_as<std::string>(*this, name, "string"); }

OpRegistry& OpRegistry::get() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: kernels may outlive statics
  return *registry;
}

OpRegistry::OpRegistry() {
  ops_.reserve(1024);  // custom op libraries add ops later: lookups on other threads must not see a move
  register_builtin_ops(*this);
  register_builtin_samples(*this);  // the op suite's inputs, declared next to each family's ops
}

const OpDef* OpRegistry::find(const std::string& name) const {
  for (const auto& op : ops_)
    if (name == op->name) return op.get();
  return nullptr;
}

const OpDef& OpRegistry::at(const std::string& name) const {
  const OpDef* op = find(name);
  OAR_ENFORCE(op != nullptr, ErrorCode::kNotFound, "unknown op '" << name << "'");
  return *op;
}

OpDef& OpRegistry::add(OpDef def) {
  OAR_ENFORCE(find(def.name) == nullptr, ErrorCode::kInternal, "op '" << def.name << "' defined twice");
  def.id = static_cast<int32_t>(ops_.size());
  ops_.push_back(std::make_unique<OpDef>(std::move(def)));
  return *ops_.back();
}

}  // namespace oar
