#include <oar/core/error.h>
#include <oar/core/op.h>

#include <cstring>

#include "internal.h"
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
  register_builtin_ops(*this);
  register_builtin_samples(*this);  // the op suite's inputs, declared next to each family's ops
  install_core_hooks();
}

namespace {
// FNV-1a: op names are short, and this inlines to a few instructions per character.
size_t hash_name(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<size_t>(h);
}
}  // namespace

OpRegistry::NameIndex::NameIndex(size_t capacity)
    : mask(capacity - 1), slots(new std::atomic<int32_t>[capacity]) {
  for (size_t i = 0; i < capacity; ++i) slots[i].store(-1, std::memory_order_relaxed);
}

void OpRegistry::index_name(NameIndex& index, int32_t id) {
  size_t h = hash_name(ops_[static_cast<size_t>(id)]->name) & index.mask;
  while (index.slots[h].load(std::memory_order_relaxed) >= 0) h = (h + 1) & index.mask;
  index.slots[h].store(id, std::memory_order_release);  // after the op is complete
}

const OpDef* OpRegistry::find(std::string_view name) const {
  const NameIndex* index = names_.load(std::memory_order_acquire);
  if (!index) return nullptr;
  for (size_t h = hash_name(name) & index->mask;; h = (h + 1) & index->mask) {
    const int32_t id = index->slots[h].load(std::memory_order_acquire);
    if (id < 0) return nullptr;
    const OpDef* op = ops_[static_cast<size_t>(id)].get();
    if (op->name == name) return op;
  }
}

const OpDef& OpRegistry::at(std::string_view name) const {
  const OpDef* op = find(name);
  OAR_ENFORCE(op != nullptr, ErrorCode::kNotFound, "unknown op '" << name << "'");
  return *op;
}

OpDef& OpRegistry::get_mutable(std::string_view name) { return const_cast<OpDef&>(at(name)); }

OpDef& OpRegistry::add(OpDef def) {
  std::lock_guard<std::mutex> lock(mu_);
  OAR_ENFORCE(find(def.name) == nullptr, ErrorCode::kInternal, "op '" << def.name << "' defined twice");
  const int32_t id = size_.load(std::memory_order_relaxed);
  def.id = id;
  ops_.grow_to(static_cast<size_t>(id) + 1);
  ops_[static_cast<size_t>(id)] = std::make_unique<OpDef>(std::move(def));
  OpDef& op = *ops_[static_cast<size_t>(id)];
  // Readers see the op only once it is complete: its index slot and size_ are published last.
  if (name_indexes_.empty() || 2 * (static_cast<size_t>(id) + 1) > name_indexes_.back()->mask + 1) {
    auto bigger =
        std::make_unique<NameIndex>(name_indexes_.empty() ? 1024 : 2 * (name_indexes_.back()->mask + 1));
    for (int32_t i = 0; i < id; ++i) index_name(*bigger, i);
    name_indexes_.push_back(std::move(bigger));
    names_.store(name_indexes_.back().get(), std::memory_order_release);
  }
  index_name(*name_indexes_.back(), id);
  size_.store(id + 1, std::memory_order_release);
  return op;
}

}  // namespace oar
