// Program IR: Program -> Blocks (sub-blocks for control flow) -> variables (VarDesc) and operators
// (OpDesc). It is the in-memory form of PaddlePaddle 2.x's ProgramDesc: operators keep Paddle's op
// type names, slot names and attribute names, and a Program serializes to (and parses from) the same
// protobuf bytes as a `.pdmodel` file. Nothing here depends on protobuf: the generated code stays
// inside liboar_core.
#pragma once

#include <oar/core/dtype.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace oar::ir {

// Paddle's VarType.Type codes. Element types (BOOL..COMPLEX128) are the dtype codes of tensor
// descriptions; the rest are variable kinds.
enum class VarType : int32_t {
  kBool = 0,
  kInt16 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFP16 = 4,
  kFP32 = 5,
  kFP64 = 6,
  kLoDTensor = 7,
  kSelectedRows = 8,
  kFeedMinibatch = 9,
  kFetchList = 10,
  kStepScopes = 11,
  kLoDRankTable = 12,
  kLoDTensorArray = 13,
  kPlaceList = 14,
  kReader = 15,
  kRaw = 17,
  kTuple = 18,
  kSizeT = 19,
  kUInt8 = 20,
  kInt8 = 21,
  kBF16 = 22,
  kComplex64 = 23,
  kComplex128 = 24,
  kString = 25,
  kStrings = 26,
  kVocab = 27,
  kFeedList = 28,
  kPString = 29,
  kSparseCoo = 30,
  kSparseCsr = 31,
};
const char* var_type_name(VarType t);  // Paddle's spelling: "LOD_TENSOR", "FP32", ...
// Is `code` a variable kind oar represents (the kinds above from LOD_TENSOR on, element types excluded)?
bool is_known_var_kind(int32_t code);
// Does a variable of this kind carry a tensor description (dtype, shape)?
bool var_kind_has_tensor(VarType t);

// Paddle dtype code <-> oar::DType. `paddle_code_to_dtype` returns nullopt for codes oar does not
// support (SIZE_T, FP8, UINT16/32/64, kinds, garbage).
std::optional<DType> paddle_code_to_dtype(int32_t code);
int32_t dtype_to_paddle_code(DType t);
// "FP32", "BF16", ... or "code 99" for unknown codes; for error messages.
std::string paddle_code_name(int32_t code);

// ---- attributes -----------------------------------------------------------------------------------

// Paddle's AttrType codes. The code is the index of the value in Attribute's variant.
enum class AttrType : int32_t {
  kInt = 0,
  kFloat = 1,
  kString = 2,
  kInts = 3,
  kFloats = 4,
  kStrings = 5,
  kBool = 6,
  kBools = 7,
  kBlock = 8,
  kLong = 9,
  kBlocks = 10,
  kLongs = 11,
  kFloat64s = 12,
  kVar = 13,
  kVars = 14,
  kFloat64 = 15,
  kScalar = 16,
  kScalars = 17,
};
inline constexpr int32_t kNumAttrTypes = 18;
const char* attr_type_name(AttrType t);  // "INT", "FLOATS", "BLOCK", ...

struct BlockRef {  // a sub-block, by index in the program
  int32_t idx = 0;
  bool operator==(const BlockRef& o) const { return idx == o.idx; }
};
struct VarRef {  // a variable, by name
  std::string name;
  bool operator==(const VarRef& o) const { return name == o.name; }
};
// Paddle's Scalar attribute value: a tagged bool / int64 / float64 / complex128.
struct Scalar {
  enum class Kind : int32_t { kBool = 1, kLong = 2, kFloat64 = 3, kComplex128 = 4 };
  Kind kind = Kind::kFloat64;
  bool b = false;
  int64_t i = 0;
  double r = 0;           // kFloat64
  double re = 0, im = 0;  // kComplex128
  bool operator==(const Scalar& o) const;
};

using Attribute = std::variant<int32_t, float, std::string, std::vector<int32_t>, std::vector<float>,
                               std::vector<std::string>, bool, std::vector<bool>, BlockRef, int64_t,
                               std::vector<BlockRef>, std::vector<int64_t>, std::vector<double>, VarRef,
                               std::vector<VarRef>, double, Scalar, std::vector<Scalar>>;
static_assert(std::variant_size_v<Attribute> == kNumAttrTypes);
inline AttrType attr_type(const Attribute& a) { return static_cast<AttrType>(a.index()); }
std::string attr_to_string(const Attribute& a);
// Equality with floating values compared bit for bit (so NaN attributes compare equal to themselves).
bool attr_equal(const Attribute& a, const Attribute& b);  // Python-like: 1, 0.5, 's', [1, 2], True, block[1]

// ---- variables and operators ------------------------------------------------------------------------

struct VarDesc {
  std::string name;
  VarType type = VarType::kLoDTensor;  // the variable's kind
  DType dtype = DType::kFloat32;       // meaningful when var_kind_has_tensor(type)
  std::vector<int64_t> shape;          // -1 = unknown extent
  int32_t lod_level = 0;
  bool persistable = false;
  bool need_check_feed = false;
  bool is_parameter = false;
  bool stop_gradient = false;
  // Paddle 2.x's per-variable attributes (VarDesc.attrs): only INT, STRING and INTS exist there.
  std::vector<std::pair<std::string, Attribute>> attrs;
  // Wire detail only (ignored by ==): which optional fields to write even when they hold their default
  // value. Paddle writes e.g. `persistable: false` or `lod_level: 0` for some variables and omits them
  // for others; a parsed VarDesc remembers which, so re-serializing a file is byte-identical. A field
  // with a non-default value is always written.
  enum WireField : uint8_t {
    kWirePersistable = 1,
    kWireNeedCheckFeed = 2,
    kWireIsParameter = 4,
    kWireStopGradient = 8,
    kWireLodLevel = 16,
  };
  uint8_t wire_fields = kWirePersistable;

  bool has_tensor() const { return var_kind_has_tensor(type); }
  bool operator==(const VarDesc& o) const;
  bool operator!=(const VarDesc& o) const { return !(*this == o); }
};

using Slots = std::vector<std::pair<std::string, std::vector<std::string>>>;  // slot -> variable names

struct OpDesc {
  std::string type;
  Slots inputs, outputs;                                 // in file order
  std::vector<std::pair<std::string, Attribute>> attrs;  // in file order (Paddle writes them sorted)
  bool is_target = false;

  // The variable names bound to a slot; empty when the op has no such slot.
  const std::vector<std::string>& input(const std::string& slot) const;
  const std::vector<std::string>& output(const std::string& slot) const;
  void set_input(const std::string& slot, std::vector<std::string> args);
  void set_output(const std::string& slot, std::vector<std::string> args);
  const Attribute* find_attr(const std::string& name) const;
  bool has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
  // The attribute's value; throws kNotFound when absent and kType when it has another type.
  template <typename T>
  const T& attr(const std::string& name) const;
  void set_attr(const std::string& name, Attribute value);  // replaces or appends
  bool operator==(const OpDesc& o) const;
  bool operator!=(const OpDesc& o) const { return !(*this == o); }
};

class Block {
 public:
  Block(int32_t idx = 0, int32_t parent_idx = -1) : idx_(idx), parent_idx_(parent_idx) {}

  int32_t idx() const { return idx_; }
  int32_t parent_idx() const { return parent_idx_; }
  int32_t forward_block_idx() const { return forward_block_idx_; }
  void set_forward_block_idx(int32_t i) { forward_block_idx_ = i; }

  // Variables in declaration order. add_var throws kInvalidArgument on a duplicate name.
  VarDesc& add_var(VarDesc v);
  const VarDesc* find_var(const std::string& name) const;  // this block only
  VarDesc* find_var(const std::string& name);
  bool has_var(const std::string& name) const { return find_var(name) != nullptr; }
  const std::vector<VarDesc>& vars() const { return vars_; }
  std::vector<VarDesc>& mutable_vars() { return vars_; }  // call reindex() after renaming

  OpDesc& append_op(OpDesc op);
  OpDesc& prepend_op(OpDesc op);
  const std::vector<OpDesc>& ops() const { return ops_; }
  std::vector<OpDesc>& mutable_ops() { return ops_; }

  void reindex();  // rebuilds the name index (after direct edits through mutable_vars)
  bool operator==(const Block& o) const;
  bool operator!=(const Block& o) const { return !(*this == o); }

 private:
  int32_t idx_;
  int32_t parent_idx_;
  int32_t forward_block_idx_ = -1;
  std::vector<VarDesc> vars_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<OpDesc> ops_;
};

// Limits and checks applied when parsing untrusted bytes (defaults suit real models).
struct ParseOptions {
  uint64_t max_bytes = uint64_t{1} << 30;  // 1 GiB of serialized program
  int32_t max_blocks = 1 << 16;
  int32_t max_rank = 64;     // dims per tensor description
  int32_t max_nesting = 64;  // protobuf message nesting (the format needs < 10)
  // Refuse a program that needs a newer version of an op than oar implements (see op_version.h).
  bool check_op_versions = true;
};

class Program {
 public:
  // Paddle writes its own version (e.g. 2006000 for 2.6.0); oar writes the 2.6 format.
  static constexpr int64_t kDefaultVersion = 2006000;

  Program();                  // one empty global block (idx 0, parent -1)
  Program(const Program& o);  // deep copy
  Program& operator=(const Program& o);
  Program(Program&&) = default;
  Program& operator=(Program&&) = default;

  Block& global_block() { return *blocks_[0]; }
  const Block& global_block() const { return *blocks_[0]; }
  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  Block& block(int32_t i);
  const Block& block(int32_t i) const;
  // A new sub-block whose parent is `parent_idx`. References to existing blocks stay valid.
  Block& append_block(int32_t parent_idx);

  // Looks `name` up in block `block_idx`, then in its ancestors; nullptr when not declared.
  const VarDesc* find_var_recursive(int32_t block_idx, const std::string& name) const;

  std::optional<int64_t> version() const { return version_; }
  void set_version(std::optional<int64_t> v) { version_ = v; }
  // The op versions the program was written with (op name -> version), in file order.
  const std::vector<std::pair<std::string, int32_t>>& op_version_map() const { return op_versions_; }
  void set_op_version_map(std::vector<std::pair<std::string, int32_t>> m) { op_versions_ = std::move(m); }
  std::optional<int32_t> op_version(const std::string& op) const;
  bool has_op_version_map() const { return has_op_version_map_; }
  void set_has_op_version_map(bool b) { has_op_version_map_ = b; }

  // Serialized ProgramDesc (the .pdmodel bytes).
  std::string serialize() const;
  // Parses and validates; throws oar::Error(kInvalidArgument) naming what is wrong.
  static Program parse(const void* data, size_t size, const ParseOptions& limits = {});
  static Program parse(const std::string& bytes, const ParseOptions& limits = {}) {
    return parse(bytes.data(), bytes.size(), limits);
  }
  static Program load(const std::string& path, const ParseOptions& limits = {});  // reads a .pdmodel
  void save(const std::string& path) const;

  // Structural checks (also run by parse): block indices and parents in range and acyclic, unique
  // names, every op input declared in its block or an ancestor, attribute values consistent (block
  // references in range), dims >= -1. Throws kInvalidArgument.
  void validate(const ParseOptions& limits = {}) const;

  Program clone() const { return *this; }
  std::string to_string() const;  // readable dump, like print(program) in Paddle

  bool operator==(const Program& o) const;
  bool operator!=(const Program& o) const { return !(*this == o); }

  // Paddle 2.x's op_compatible_map (field 3), kept as its serialized bytes so it survives a round trip.
  const std::string& op_compatible_map_bytes() const { return op_compatible_map_; }
  void set_op_compatible_map_bytes(std::string b) { op_compatible_map_ = std::move(b); }

 private:
  std::vector<std::unique_ptr<Block>> blocks_;
  std::optional<int64_t> version_ = kDefaultVersion;
  std::vector<std::pair<std::string, int32_t>> op_versions_;
  bool has_op_version_map_ = false;
  std::string op_compatible_map_;
};

// Names a Paddle program uses for special variables.
inline constexpr const char* kEmptyVarName = "@EMPTY@";
inline constexpr const char* kFeedVarName = "feed";
inline constexpr const char* kFetchVarName = "fetch";

// Reads a whole file; refuses files larger than `max_bytes` (kInvalidArgument) and missing ones
// (kNotFound).
std::string read_file_bytes(const std::string& path, uint64_t max_bytes);
void write_file_bytes(const std::string& path, const std::string& bytes);

namespace detail {
[[noreturn]] void throw_attr_error(const OpDesc& op, const std::string& name, const Attribute* found);
}

template <typename T>
const T& OpDesc::attr(const std::string& name) const {
  const Attribute* a = find_attr(name);
  if (a != nullptr) {
    if (const T* v = std::get_if<T>(a)) return *v;
  }
  detail::throw_attr_error(*this, name, a);
}

}  // namespace oar::ir
