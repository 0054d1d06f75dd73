// Program IR: names, dtype mapping, attribute helpers, the structure classes, validation, text dump.
#include <oar/core/error.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string_view>
#include <unordered_set>

namespace oar::ir {

// ---- names and codes --------------------------------------------------------------------------------

const char* var_type_name(VarType t) {
  switch (t) {
    case VarType::kBool:
      return "BOOL";
    case VarType::kInt16:
      return "INT16";
    case VarType::kInt32:
      return "INT32";
    case VarType::kInt64:
      return "INT64";
    case VarType::kFP16:
      return "FP16";
    case VarType::kFP32:
      return "FP32";
    case VarType::kFP64:
      return "FP64";
    case VarType::kLoDTensor:
      return "LOD_TENSOR";
    case VarType::kSelectedRows:
      return "SELECTED_ROWS";
    case VarType::kFeedMinibatch:
      return "FEED_MINIBATCH";
    case VarType::kFetchList:
      return "FETCH_LIST";
    case VarType::kStepScopes:
      return "STEP_SCOPES";
    case VarType::kLoDRankTable:
      return "LOD_RANK_TABLE";
    case VarType::kLoDTensorArray:
      return "LOD_TENSOR_ARRAY";
    case VarType::kPlaceList:
      return "PLACE_LIST";
    case VarType::kReader:
      return "READER";
    case VarType::kRaw:
      return "RAW";
    case VarType::kTuple:
      return "TUPLE";
    case VarType::kSizeT:
      return "SIZE_T";
    case VarType::kUInt8:
      return "UINT8";
    case VarType::kInt8:
      return "INT8";
    case VarType::kBF16:
      return "BF16";
    case VarType::kComplex64:
      return "COMPLEX64";
    case VarType::kComplex128:
      return "COMPLEX128";
    case VarType::kString:
      return "STRING";
    case VarType::kStrings:
      return "STRINGS";
    case VarType::kVocab:
      return "VOCAB";
    case VarType::kFeedList:
      return "FEED_LIST";
    case VarType::kPString:
      return "PSTRING";
    case VarType::kSparseCoo:
      return "SPARSE_COO";
    case VarType::kSparseCsr:
      return "SPARSE_CSR";
  }
  return "UNKNOWN";
}

bool is_known_var_kind(int32_t c) {
  return (c >= 7 && c <= 15) || c == 17 || c == 18 || (c >= 25 && c <= 31);
}

bool var_kind_has_tensor(VarType t) {
  return t == VarType::kLoDTensor || t == VarType::kSelectedRows || t == VarType::kLoDTensorArray;
}

std::optional<DType> paddle_code_to_dtype(int32_t code) {
  switch (code) {
    case 0:
      return DType::kBool;
    case 1:
      return DType::kInt16;
    case 2:
      return DType::kInt32;
    case 3:
      return DType::kInt64;
    case 4:
      return DType::kFloat16;
    case 5:
      return DType::kFloat32;
    case 6:
      return DType::kFloat64;
    case 20:
      return DType::kUInt8;
    case 21:
      return DType::kInt8;
    case 22:
      return DType::kBFloat16;
    case 23:
      return DType::kComplex64;
    case 24:
      return DType::kComplex128;
    default:
      return std::nullopt;
  }
}

int32_t dtype_to_paddle_code(DType t) {
  switch (t) {
    case DType::kBool:
      return 0;
    case DType::kInt16:
      return 1;
    case DType::kInt32:
      return 2;
    case DType::kInt64:
      return 3;
    case DType::kFloat16:
      return 4;
    case DType::kFloat32:
      return 5;
    case DType::kFloat64:
      return 6;
    case DType::kUInt8:
      return 20;
    case DType::kInt8:
      return 21;
    case DType::kBFloat16:
      return 22;
    case DType::kComplex64:
      return 23;
    case DType::kComplex128:
      return 24;
  }
  OAR_THROW(ErrorCode::kInvalidArgument,
            "program: dtype code " << static_cast<int32_t>(t) << " is not an oar dtype");
}

std::string paddle_code_name(int32_t code) {
  switch (code) {
    case 19:
      return "SIZE_T";
    case 32:
      return "FP8_E4M3FN";
    case 33:
      return "FP8_E5M2";
    case 36:
      return "UINT16";
    case 37:
      return "UINT32";
    case 38:
      return "UINT64";
    default:
      break;
  }
  if (paddle_code_to_dtype(code) || is_known_var_kind(code)) return var_type_name(static_cast<VarType>(code));
  return "code " + std::to_string(code);
}

const char* attr_type_name(AttrType t) {
  static const char* kNames[kNumAttrTypes] = {
      "INT",  "FLOAT",  "STRING", "INTS",     "FLOATS", "STRINGS", "BOOLEAN", "BOOLEANS", "BLOCK",
      "LONG", "BLOCKS", "LONGS",  "FLOAT64S", "VAR",    "VARS",    "FLOAT64", "SCALAR",   "SCALARS"};
  int32_t i = static_cast<int32_t>(t);
  return i >= 0 && i < kNumAttrTypes ? kNames[i] : "UNKNOWN";
}

// ---- attributes -----------------------------------------------------------------------------------

namespace {
// Bit equality for floating values: a program with a NaN attribute equals its own copy.
template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}
}  // namespace

bool Scalar::operator==(const Scalar& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::kBool:
      return b == o.b;
    case Kind::kLong:
      return i == o.i;
    case Kind::kFloat64:
      return same_bits(r, o.r);
    case Kind::kComplex128:
      return same_bits(re, o.re) && same_bits(im, o.im);
  }
  return false;
}

bool attr_equal(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, std::vector<float>> || std::is_same_v<T, std::vector<double>>) {
          return same_bits(x, y);
        } else {
          return x == y;
        }
      },
      a);
}

namespace {

std::string fmt_double(double v) {
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}
std::string quote(const std::string& s) { return "'" + s + "'"; }
std::string fmt(int32_t v) { return std::to_string(v); }
std::string fmt(int64_t v) { return std::to_string(v); }
std::string fmt(float v) { return fmt_double(v); }
std::string fmt(double v) { return fmt_double(v); }
std::string fmt(bool v) { return v ? "True" : "False"; }
std::string fmt(const std::string& v) { return quote(v); }
std::string fmt(const BlockRef& v) { return "block[" + std::to_string(v.idx) + "]"; }
std::string fmt(const VarRef& v) { return "var " + quote(v.name); }
std::string fmt(const Scalar& v) {
  switch (v.kind) {
    case Scalar::Kind::kBool:
      return fmt(v.b);
    case Scalar::Kind::kLong:
      return fmt(v.i);
    case Scalar::Kind::kFloat64:
      return fmt(v.r);
    case Scalar::Kind::kComplex128:
      return "(" + fmt(v.re) + "+" + fmt(v.im) + "j)";
  }
  return "?";
}
template <typename T>
std::string fmt(const std::vector<T>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    if constexpr (std::is_same_v<T, bool>) {
      s += fmt(static_cast<bool>(v[i]));
    } else {
      s += fmt(v[i]);
    }
  }
  return s + "]";
}

const std::vector<std::string>& slot_args(const Slots& slots, const std::string& name) {
  static const std::vector<std::string> kNone;
  for (auto& s : slots)
    if (s.first == name) return s.second;
  return kNone;
}
void set_slot(Slots* slots, const std::string& name, std::vector<std::string> args) {
  for (auto& s : *slots)
    if (s.first == name) {
      s.second = std::move(args);
      return;
    }
  slots->emplace_back(name, std::move(args));
}

}  // namespace

std::string attr_to_string(const Attribute& a) {
  return std::visit([](const auto& v) { return fmt(v); }, a);
}

namespace detail {
void throw_attr_error(const OpDesc& op, const std::string& name, const Attribute* found) {
  OAR_ENFORCE(found != nullptr, ErrorCode::kNotFound, op.type << ": no attribute '" << name << "'");
  OAR_THROW(ErrorCode::kType, op.type << ": attribute '" << name << "' has type "
                                      << attr_type_name(attr_type(*found))
                                      << ", which is not the type asked for");
}
}  // namespace detail

// ---- VarDesc / OpDesc -----------------------------------------------------------------------------

namespace {
bool attrs_equal(const std::vector<std::pair<std::string, Attribute>>& a,
                 const std::vector<std::pair<std::string, Attribute>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !attr_equal(a[i].second, b[i].second)) return false;
  return true;
}
}  // namespace

bool VarDesc::operator==(const VarDesc& o) const {
  bool tensor_eq = !has_tensor() || (dtype == o.dtype && shape == o.shape && lod_level == o.lod_level);
  return name == o.name && type == o.type && tensor_eq && persistable == o.persistable &&
         need_check_feed == o.need_check_feed && is_parameter == o.is_parameter &&
         stop_gradient == o.stop_gradient && attrs_equal(attrs, o.attrs);
}

const std::vector<std::string>& OpDesc::input(const std::string& slot) const {
  return slot_args(inputs, slot);
}
const std::vector<std::string>& OpDesc::output(const std::string& slot) const {
  return slot_args(outputs, slot);
}
void OpDesc::set_input(const std::string& slot, std::vector<std::string> args) {
  set_slot(&inputs, slot, std::move(args));
}
void OpDesc::set_output(const std::string& slot, std::vector<std::string> args) {
  set_slot(&outputs, slot, std::move(args));
}
const Attribute* OpDesc::find_attr(const std::string& name) const {
  for (auto& a : attrs)
    if (a.first == name) return &a.second;
  return nullptr;
}
void OpDesc::set_attr(const std::string& name, Attribute value) {
  for (auto& a : attrs)
    if (a.first == name) {
      a.second = std::move(value);
      return;
    }
  attrs.emplace_back(name, std::move(value));
}
bool OpDesc::operator==(const OpDesc& o) const {
  return type == o.type && inputs == o.inputs && outputs == o.outputs && attrs_equal(attrs, o.attrs) &&
         is_target == o.is_target;
}

// ---- Block ----------------------------------------------------------------------------------------

VarDesc& Block::add_var(VarDesc v) {
  OAR_ENFORCE(!v.name.empty(), ErrorCode::kInvalidArgument,
              "program: block " << idx_ << ": a variable has no name");
  OAR_ENFORCE(index_.count(v.name) == 0, ErrorCode::kInvalidArgument,
              "program: block " << idx_ << ": variable '" << v.name << "' is declared twice");
  index_.emplace(v.name, vars_.size());
  vars_.push_back(std::move(v));
  return vars_.back();
}
const VarDesc* Block::find_var(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &vars_[it->second];
}
VarDesc* Block::find_var(const std::string& name) {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &vars_[it->second];
}
OpDesc& Block::append_op(OpDesc op) {
  ops_.push_back(std::move(op));
  return ops_.back();
}
OpDesc& Block::prepend_op(OpDesc op) {
  ops_.insert(ops_.begin(), std::move(op));
  return ops_.front();
}
void Block::reindex() {
  index_.clear();
  for (size_t i = 0; i < vars_.size(); ++i) {
    OAR_ENFORCE(index_.emplace(vars_[i].name, i).second, ErrorCode::kInvalidArgument,
                "program: block " << idx_ << ": variable '" << vars_[i].name << "' is declared twice");
  }
}
bool Block::operator==(const Block& o) const {
  return idx_ == o.idx_ && parent_idx_ == o.parent_idx_ && forward_block_idx_ == o.forward_block_idx_ &&
         vars_ == o.vars_ && ops_ == o.ops_;
}

// ---- Program --------------------------------------------------------------------------------------

Program::Program() { blocks_.push_back(std::make_unique<Block>(0, -1)); }
Program::Program(const Program& o)
    : version_(o.version_),
      op_versions_(o.op_versions_),
      has_op_version_map_(o.has_op_version_map_),
      op_compatible_map_(o.op_compatible_map_) {
  for (auto& b : o.blocks_) blocks_.push_back(std::make_unique<Block>(*b));
}
Program& Program::operator=(const Program& o) {
  if (this != &o) *this = Program(o);
  return *this;
}

Block& Program::block(int32_t i) {
  OAR_ENFORCE(i >= 0 && i < num_blocks(), ErrorCode::kOutOfRange,
              "program: block index " << i << " out of range [0, " << num_blocks() << ")");
  return *blocks_[i];
}
const Block& Program::block(int32_t i) const { return const_cast<Program*>(this)->block(i); }

Block& Program::append_block(int32_t parent_idx) {
  OAR_ENFORCE(parent_idx >= 0 && parent_idx < num_blocks(), ErrorCode::kOutOfRange,
              "program: parent block index " << parent_idx << " out of range [0, " << num_blocks() << ")");
  blocks_.push_back(std::make_unique<Block>(num_blocks(), parent_idx));
  return *blocks_.back();
}

const VarDesc* Program::find_var_recursive(int32_t block_idx, const std::string& name) const {
  // Bounded by the block count so a malformed parent chain cannot loop.
  for (int32_t i = block_idx, steps = 0; i >= 0 && i < num_blocks() && steps <= num_blocks();
       i = blocks_[i]->parent_idx(), ++steps) {
    if (const VarDesc* v = blocks_[i]->find_var(name)) return v;
  }
  return nullptr;
}

std::optional<int32_t> Program::op_version(const std::string& op) const {
  for (auto& p : op_versions_)
    if (p.first == op) return p.second;
  return std::nullopt;
}

bool Program::operator==(const Program& o) const {
  if (blocks_.size() != o.blocks_.size()) return false;
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (*blocks_[i] != *o.blocks_[i]) return false;
  return version_ == o.version_ && op_versions_ == o.op_versions_ &&
         has_op_version_map_ == o.has_op_version_map_ && op_compatible_map_ == o.op_compatible_map_;
}

// ---- validation -----------------------------------------------------------------------------------

namespace {

void check_attr(const Program& p, const Block& b, const OpDesc& op, const std::string& name,
                const Attribute& a) {
  auto where = [&] {
    std::ostringstream os;
    os << "block " << b.idx() << ", op '" << op.type << "', attribute '" << name << "'";
    return os.str();
  };
  auto check_block = [&](int32_t idx) {
    OAR_ENFORCE(
        idx >= 0 && idx < p.num_blocks(), ErrorCode::kInvalidArgument,
        "program: " << where() << ": block index " << idx << " out of range [0, " << p.num_blocks() << ")");
    OAR_ENFORCE(idx != b.idx(), ErrorCode::kInvalidArgument,
                "program: " << where() << ": refers to its own block " << idx);
  };
  if (auto* r = std::get_if<BlockRef>(&a)) check_block(r->idx);
  if (auto* rs = std::get_if<std::vector<BlockRef>>(&a))
    for (auto& r : *rs) check_block(r.idx);
}

void check_dims(const Block& b, const VarDesc& v, const ParseOptions& limits) {
  OAR_ENFORCE(static_cast<int64_t>(v.shape.size()) <= limits.max_rank, ErrorCode::kInvalidArgument,
              "program: block " << b.idx() << ", variable '" << v.name << "': rank " << v.shape.size()
                                << " exceeds the limit " << limits.max_rank);
  for (size_t i = 0; i < v.shape.size(); ++i) {
    OAR_ENFORCE(v.shape[i] >= -1, ErrorCode::kInvalidArgument,
                "program: block " << b.idx() << ", variable '" << v.name << "': dims[" << i
                                  << "] = " << v.shape[i] << " (must be >= -1; -1 means unknown)");
  }
}

}  // namespace

void Program::validate(const ParseOptions& limits) const {
  const int32_t n = num_blocks();
  OAR_ENFORCE(n >= 1, ErrorCode::kInvalidArgument,
              "program: has no blocks (a program needs a global block 0)");
  OAR_ENFORCE(n <= limits.max_blocks, ErrorCode::kInvalidArgument,
              "program: " << n << " blocks exceed the limit " << limits.max_blocks);
  for (int32_t i = 0; i < n; ++i) {
    const Block& b = *blocks_[i];
    OAR_ENFORCE(
        b.idx() == i, ErrorCode::kInvalidArgument,
        "program: blocks[" << i << "] has idx " << b.idx() << " (block indices must equal their position)");
    if (i == 0) {
      OAR_ENFORCE(b.parent_idx() == -1, ErrorCode::kInvalidArgument,
                  "program: the global block 0 has parent_idx " << b.parent_idx() << " (must be -1)");
    } else {
      OAR_ENFORCE(b.parent_idx() >= 0 && b.parent_idx() < n && b.parent_idx() != i,
                  ErrorCode::kInvalidArgument,
                  "program: block " << i << " has parent_idx " << b.parent_idx()
                                    << " (must be another block in [0, " << n << "))");
    }
    OAR_ENFORCE(b.forward_block_idx() >= -1 && b.forward_block_idx() < n && b.forward_block_idx() != i,
                ErrorCode::kInvalidArgument,
                "program: block " << i << " has forward_block_idx " << b.forward_block_idx()
                                  << " (must be -1 or another block in [0, " << n << "))");
  }
  // Every parent chain must reach block 0 within n steps; otherwise it is a cycle.
  for (int32_t i = 1; i < n; ++i) {
    int32_t cur = i, steps = 0;
    while (cur != 0) {
      cur = blocks_[cur]->parent_idx();
      OAR_ENFORCE(++steps <= n, ErrorCode::kInvalidArgument,
                  "program: the parent chain of block " << i << " is a cycle (it never reaches block 0)");
    }
  }
  for (const auto& bp : blocks_) {
    const Block& b = *bp;
    for (const VarDesc& v : b.vars()) {
      if (v.has_tensor()) {
        check_dims(b, v, limits);
        OAR_ENFORCE(v.lod_level >= 0, ErrorCode::kInvalidArgument,
                    "program: block " << b.idx() << ", variable '" << v.name << "': lod_level " << v.lod_level
                                      << " is negative");
      }
    }
    const Block* fwd = b.forward_block_idx() >= 0 ? blocks_[b.forward_block_idx()].get() : nullptr;
    for (size_t k = 0; k < b.ops().size(); ++k) {
      const OpDesc& op = b.ops()[k];
      OAR_ENFORCE(!op.type.empty(), ErrorCode::kInvalidArgument,
                  "program: block " << b.idx() << ", op #" << k << " has an empty type");
      for (auto& slot : op.inputs) {
        for (auto& arg : slot.second) {
          if (arg == kEmptyVarName) continue;
          bool declared = find_var_recursive(b.idx(), arg) != nullptr ||
                          (fwd != nullptr && find_var_recursive(fwd->idx(), arg) != nullptr);
          OAR_ENFORCE(declared, ErrorCode::kInvalidArgument,
                      "program: block " << b.idx() << ", op #" << k << " '" << op.type << "': input "
                                        << slot.first << " refers to variable '" << arg
                                        << "', which is not declared in this block or its ancestors");
        }
      }
      // A hash set keeps this linear: a hostile op may carry millions of attributes.
      std::unordered_set<std::string_view> seen;
      for (size_t i = 0; i < op.attrs.size(); ++i) {
        OAR_ENFORCE(seen.insert(op.attrs[i].first).second, ErrorCode::kInvalidArgument,
                    "program: block " << b.idx() << ", op #" << k << " '" << op.type << "': attribute '"
                                      << op.attrs[i].first << "' appears twice");
        check_attr(*this, b, op, op.attrs[i].first, op.attrs[i].second);
      }
    }
  }
}

// ---- text dump ------------------------------------------------------------------------------------

namespace {

std::string fmt_slots(const Slots& slots) {
  std::string s = "{";
  for (size_t i = 0; i < slots.size(); ++i) {
    if (i) s += ", ";
    s += slots[i].first + "=" + fmt(slots[i].second);
  }
  return s + "}";
}

}  // namespace

std::string Program::to_string() const {
  std::ostringstream os;
  for (const auto& bp : blocks_) {
    const Block& b = *bp;
    os << "{ // block_idx:" << b.idx() << "  parent_idx:" << b.parent_idx()
       << "  forward_idx:" << b.forward_block_idx() << "\n";
    for (const VarDesc& v : b.vars()) {
      os << "    " << (v.persistable ? "persist " : "") << (v.is_parameter ? "param " : "") << "var "
         << v.name << " : " << var_type_name(v.type);
      if (v.has_tensor()) {
        os << ".shape(";
        for (size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
        os << ").dtype(" << dtype_name(v.dtype) << ")";
        if (v.lod_level) os << ".lod_level(" << v.lod_level << ")";
      }
      os << ".stop_gradient(" << fmt(v.stop_gradient) << ")\n";
    }
    if (!b.vars().empty() && !b.ops().empty()) os << "\n";
    for (const OpDesc& op : b.ops()) {
      os << "    " << fmt_slots(op.outputs) << " = " << op.type << "(inputs=" << fmt_slots(op.inputs);
      for (auto& a : op.attrs) {
        if (a.first == "op_callstack") continue;  // long and only useful for debugging Paddle itself
        os << ", " << a.first << " = " << attr_to_string(a.second);
      }
      os << ")\n";
    }
    os << "}\n";
  }
  return os.str();
}

// ---- files ----------------------------------------------------------------------------------------

std::string read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  OAR_ENFORCE(f.good(), ErrorCode::kNotFound, "cannot open '" << path << "'");
  std::streamoff size = f.tellg();
  OAR_ENFORCE(size >= 0, ErrorCode::kInvalidArgument, "cannot read the size of '" << path << "'");
  OAR_ENFORCE(static_cast<uint64_t>(size) <= max_bytes, ErrorCode::kInvalidArgument,
              "'" << path << "' is " << size << " bytes, more than the limit of " << max_bytes << " bytes");
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  OAR_ENFORCE(f.gcount() == size, ErrorCode::kInvalidArgument, "could not read all of '" << path << "'");
  return bytes;
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  OAR_ENFORCE(f.good(), ErrorCode::kNotFound, "cannot open '" << path << "' for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  OAR_ENFORCE(f.good(), ErrorCode::kExternal, "writing '" << path << "' failed");
}

Program Program::load(const std::string& path, const ParseOptions& limits) {
  return parse(read_file_bytes(path, limits.max_bytes), limits);
}
void Program::save(const std::string& path) const { write_file_bytes(path, serialize()); }

}  // namespace oar::ir
