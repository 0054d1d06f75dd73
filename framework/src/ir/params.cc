// .pdiparams (combined tensor stream) and .pdiparams.info (a small pickle) readers and writers.
// Inputs are untrusted: every length is checked against the bytes left before anything is allocated.
#include <oar/core/error.h>
#include <oar/core/shape.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "proto/framework.pb.h"

namespace oar::ir {

namespace pb = ::oar::proto;

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the file formats are little-endian; add byte swapping");

// A bounds-checked little-endian reader over a byte range.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, size_t offset, const char* what)
      : data_(data), size_(size), pos_(offset), what_(what) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  template <typename T>
  T read(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const uint8_t* take(uint64_t n, const char* field) {
    need(n, field);
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  void need(uint64_t n, const char* field) const {
    OAR_ENFORCE(n <= left(), ErrorCode::kInvalidArgument,
                what_ << ": truncated at offset " << pos_ << ": " << field << " needs " << n
                      << " bytes but only " << left() << " remain");
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_;
  const char* what_;
};

template <typename T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

constexpr const char* kStream = "pdiparams";

}  // namespace

int64_t TensorData::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d, kStream, "the element count");
  return n;
}

TensorData read_tensor_record(const uint8_t* data, size_t size, size_t* offset,
                              const TensorStreamLimits& limits) {
  Reader r(data, size, *offset, kStream);
  const size_t start = r.pos();
  TensorData t;
  uint32_t version = r.read<uint32_t>("the tensor's version");
  OAR_ENFORCE(
      version == 0, ErrorCode::kInvalidArgument,
      kStream << ": tensor at offset " << start << ": version " << version << " is not supported (only 0)");
  uint64_t levels = r.read<uint64_t>("the LoD level count");
  OAR_ENFORCE(levels <= static_cast<uint64_t>(limits.max_lod_levels), ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": " << levels << " LoD levels exceed the limit "
                      << limits.max_lod_levels);
  r.need(levels * sizeof(uint64_t), "the LoD level sizes");
  for (uint64_t l = 0; l < levels; ++l) {
    uint64_t bytes = r.read<uint64_t>("a LoD level's byte size");
    OAR_ENFORCE(bytes % sizeof(uint64_t) == 0, ErrorCode::kInvalidArgument,
                kStream << ": tensor at offset " << start << ": LoD level " << l << " has " << bytes
                        << " bytes, not a multiple of 8");
    const uint8_t* p = r.take(bytes, "a LoD level's offsets");
    std::vector<uint64_t> level(static_cast<size_t>(bytes / sizeof(uint64_t)));
    if (bytes) std::memcpy(level.data(), p, static_cast<size_t>(bytes));
    t.lod.push_back(std::move(level));
  }
  uint32_t tversion = r.read<uint32_t>("the tensor data's version");
  OAR_ENFORCE(tversion == 0, ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": data version " << tversion
                      << " is not supported (only 0)");
  int32_t desc_size = r.read<int32_t>("the TensorDesc size");
  OAR_ENFORCE(desc_size >= 0, ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": negative TensorDesc size " << desc_size);
  const uint8_t* desc_bytes = r.take(static_cast<uint64_t>(desc_size), "the TensorDesc");
  pb::VarType::TensorDesc desc;
  OAR_ENFORCE(desc.ParsePartialFromArray(desc_bytes, desc_size), ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": the " << desc_size
                      << "-byte TensorDesc is not valid protobuf");
  if (!desc.has_data_type()) {
    // proto2 keeps an enum code it does not define among the unknown fields; name it if it is there.
    const auto& unknown = desc.GetReflection()->GetUnknownFields(desc);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const auto& f = unknown.field(i);
      if (f.number() == 1 && f.type() == google::protobuf::UnknownField::TYPE_VARINT) {
        OAR_THROW(ErrorCode::kInvalidArgument, kStream << ": tensor at offset " << start
                                                       << ": unknown dtype code "
                                                       << static_cast<int64_t>(f.varint()));
      }
    }
    OAR_THROW(ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": TensorDesc has no data_type");
  }
  auto dt = paddle_code_to_dtype(desc.data_type());
  OAR_ENFORCE(dt.has_value(), ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": dtype " << paddle_code_name(desc.data_type())
                      << " is not supported by oar");
  t.dtype = *dt;
  OAR_ENFORCE(desc.dims_size() <= limits.max_rank, ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": rank " << desc.dims_size()
                      << " exceeds the limit " << limits.max_rank);
  uint64_t numel = 1;
  for (int i = 0; i < desc.dims_size(); ++i) {
    int64_t d = desc.dims(i);
    OAR_ENFORCE(d >= 0, ErrorCode::kInvalidArgument,
                kStream << ": tensor at offset " << start << ": dims[" << i << "] = " << d
                        << " (a stored tensor needs known, non-negative dims)");
    OAR_ENFORCE(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel), ErrorCode::kInvalidArgument,
                kStream << ": tensor at offset " << start << ": the element count of dims overflows 64 bits");
    t.dims.push_back(d);
  }
  uint64_t nbytes = 0;
  OAR_ENFORCE(
      !__builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(t.dtype)), &nbytes) &&
          numel <= static_cast<uint64_t>(INT64_MAX),
      ErrorCode::kInvalidArgument,
      kStream << ": tensor at offset " << start << ": the byte size of " << numel << " elements overflows");
  // The allocation below is bounded by the bytes the input really holds.
  OAR_ENFORCE(nbytes <= r.left(), ErrorCode::kInvalidArgument,
              kStream << ": tensor at offset " << start << ": its dims claim " << numel << " "
                      << dtype_name(t.dtype) << " elements (" << nbytes << " bytes) but only " << r.left()
                      << " bytes remain (truncated or corrupt file)");
  const uint8_t* p = r.take(nbytes, "the tensor data");
  t.data.assign(p, p + nbytes);
  *offset = r.pos();
  return t;
}

void append_tensor_record(std::string* out, const TensorData& t) {
  OAR_ENFORCE(static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype) == t.data.size(),
              ErrorCode::kInvalidArgument,
              kStream << ": tensor data holds " << t.data.size() << " bytes but its dims and dtype need "
                      << t.numel() * dtype_size(t.dtype));
  put<uint32_t>(out, 0);
  put<uint64_t>(out, t.lod.size());
  for (auto& level : t.lod) {
    put<uint64_t>(out, level.size() * sizeof(uint64_t));
    out->append(reinterpret_cast<const char*>(level.data()), level.size() * sizeof(uint64_t));
  }
  put<uint32_t>(out, 0);
  pb::VarType::TensorDesc desc;
  desc.set_data_type(static_cast<pb::VarType::Type>(dtype_to_paddle_code(t.dtype)));
  for (int64_t d : t.dims) desc.add_dims(d);
  std::string d = desc.SerializeAsString();
  put<int32_t>(out, static_cast<int32_t>(d.size()));
  out->append(d);
  out->append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
}

std::vector<TensorData> parse_tensor_stream(const void* data, size_t size, const TensorStreamLimits& limits) {
  std::vector<TensorData> out;
  size_t offset = 0;
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (offset < size) out.push_back(read_tensor_record(bytes, size, &offset, limits));
  return out;
}

std::string serialize_tensor_stream(const std::vector<TensorData>& tensors) {
  std::string out;
  for (auto& t : tensors) append_tensor_record(&out, t);
  return out;
}

TensorData parse_tensor_file(const std::string& bytes, const TensorStreamLimits& limits) {
  size_t offset = 0;
  TensorData t =
      read_tensor_record(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &offset, limits);
  OAR_ENFORCE(
      offset == bytes.size(), ErrorCode::kInvalidArgument,
      kStream << ": " << (bytes.size() - offset) << " bytes follow the tensor in a one-variable file");
  return t;
}

std::string serialize_tensor_file(const TensorData& t) {
  std::string out;
  append_tensor_record(&out, t);
  return out;
}

std::vector<std::string> combined_param_names(const Program& program) {
  std::set<std::string> names;
  for (int32_t bi = 0; bi < program.num_blocks(); ++bi) {
    for (const VarDesc& v : program.block(bi).vars()) {
      if (!v.persistable) continue;
      if (v.type == VarType::kFeedMinibatch || v.type == VarType::kFetchList || v.type == VarType::kReader ||
          v.type == VarType::kRaw)
        continue;
      names.insert(v.name);
    }
  }
  return {names.begin(), names.end()};
}

std::map<std::string, TensorData> load_combined_params(const Program& program, const std::string& bytes,
                                                       const TensorStreamLimits& limits) {
  std::vector<std::string> names = combined_param_names(program);
  std::map<std::string, TensorData> out;
  size_t offset = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (const std::string& name : names) {
    OAR_ENFORCE(offset < bytes.size(), ErrorCode::kInvalidArgument,
                kStream << ": the file ends after " << out.size() << " tensors but the program has "
                        << names.size() << " persistable variables (first missing: '" << name << "')");
    TensorData t = read_tensor_record(p, bytes.size(), &offset, limits);
    const VarDesc* v = nullptr;
    for (int32_t bi = 0; bi < program.num_blocks(); ++bi)
      if ((v = program.block(bi).find_var(name)) != nullptr) break;
    if (v != nullptr && v->has_tensor()) {
      OAR_ENFORCE(t.dtype == v->dtype, ErrorCode::kInvalidArgument,
                  kStream << ": variable '" << name << "' is " << dtype_name(t.dtype) << " in the file but "
                          << dtype_name(v->dtype) << " in the program");
      bool shape_ok = t.dims.size() == v->shape.size();
      for (size_t i = 0; shape_ok && i < t.dims.size(); ++i)
        shape_ok = v->shape[i] == -1 || v->shape[i] == t.dims[i];
      OAR_ENFORCE(shape_ok, ErrorCode::kInvalidArgument,
                  kStream << ": variable '" << name << "' has dims of rank " << t.dims.size()
                          << " in the file that do not match its declared shape of rank " << v->shape.size());
    }
    out.emplace(name, std::move(t));
  }
  OAR_ENFORCE(offset == bytes.size(), ErrorCode::kInvalidArgument,
              kStream << ": " << (bytes.size() - offset) << " bytes are left after the " << names.size()
                      << " tensors the program declares");
  return out;
}

std::map<std::string, TensorData> load_combined_params_file(const Program& program, const std::string& path) {
  // A 64 GiB ceiling keeps a corrupt size from exhausting memory; every tensor is bounded by the file.
  return load_combined_params(program, read_file_bytes(path, uint64_t{64} << 30));
}

std::string save_combined_params(const std::map<std::string, TensorData>& params) {
  std::string out;
  for (auto& [name, t] : params) append_tensor_record(&out, t);
  return out;
}

// ---- .pdiparams.info: a subset of Python's pickle ---------------------------------------------------

namespace {

constexpr const char* kInfo = "pdiparams.info";

// The values the subset builds. All owned by the parser's arena, so memo aliasing and cycles are safe.
struct PValue {
  enum class Kind { kNone, kBool, kInt, kStr, kDict, kMark } kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  std::string s;
  std::vector<std::pair<PValue*, PValue*>> items;
};

class Unpickler {
 public:
  Unpickler(const std::string& bytes)
      : r_(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, kInfo) {}

  PValue* run() {
    while (true) {
      OAR_ENFORCE(r_.left() > 0, ErrorCode::kInvalidArgument,
                  kInfo << ": the pickle ends without a STOP opcode");
      const size_t at = r_.pos();
      uint8_t op = r_.read<uint8_t>("an opcode");
      switch (op) {
        case 0x80:
          r_.read<uint8_t>("the protocol");
          break;  // PROTO
        case 0x95:
          r_.read<uint64_t>("the frame size");
          break;  // FRAME
        case '}':
          push(make(PValue::Kind::kDict));
          break;  // EMPTY_DICT
        case '(':
          push(make(PValue::Kind::kMark));
          break;  // MARK
        case 'N':
          push(make(PValue::Kind::kNone));
          break;  // NONE
        case 0x88:
          push_bool(true);
          break;  // NEWTRUE
        case 0x89:
          push_bool(false);
          break;  // NEWFALSE
        case 'K':
          push_int(r_.read<uint8_t>("BININT1"));
          break;
        case 'M':
          push_int(r_.read<uint16_t>("BININT2"));
          break;
        case 'J':
          push_int(r_.read<int32_t>("BININT"));
          break;
        case 'X':
          push_str(r_.read<uint32_t>("a string length"));
          break;  // BINUNICODE
        case 0x8c:
          push_str(r_.read<uint8_t>("a string length"));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push_str(r_.read<uint64_t>("a string length"));
          break;  // BINUNICODE8
        case 'q':
          memo_put(r_.read<uint8_t>("a memo index"));
          break;  // BINPUT
        case 'r':
          memo_put(r_.read<uint32_t>("a memo index"));
          break;  // LONG_BINPUT
        case 0x94:
          memo_put(memo_.size());
          break;  // MEMOIZE
        case 'h':
          memo_get(r_.read<uint8_t>("a memo index"));
          break;  // BINGET
        case 'j':
          memo_get(r_.read<uint32_t>("a memo index"));
          break;     // LONG_BINGET
        case 's': {  // SETITEM
          PValue* v = pop();
          PValue* k = pop();
          dict_at(top(), at)->items.emplace_back(k, v);
          break;
        }
        case 'u':    // SETITEMS
        case 'd': {  // DICT
          size_t m = last_mark(at);
          OAR_ENFORCE((stack_.size() - m - 1) % 2 == 0, ErrorCode::kInvalidArgument,
                      kInfo << ": odd number of items for a dict at offset " << at);
          PValue* d = op == 'd' ? make(PValue::Kind::kDict) : nullptr;
          if (op == 'u') {
            OAR_ENFORCE(m >= 1, ErrorCode::kInvalidArgument,
                        kInfo << ": SETITEMS without a dict at offset " << at);
            d = dict_at(stack_[m - 1], at);
          }
          for (size_t i = m + 1; i < stack_.size(); i += 2) d->items.emplace_back(stack_[i], stack_[i + 1]);
          stack_.resize(m);
          if (op == 'd') push(d);
          break;
        }
        case '.':  // STOP
          OAR_ENFORCE(stack_.size() == 1, ErrorCode::kInvalidArgument,
                      kInfo << ": the pickle stops with " << stack_.size() << " values on its stack");
          return stack_[0];
        default:
          OAR_THROW(ErrorCode::kInvalidArgument,
                    kInfo << ": unsupported pickle opcode 0x" << std::hex << static_cast<int>(op) << std::dec
                          << " at offset " << at << " (expected a dict of str -> dict of str/bool)");
      }
    }
  }

 private:
  PValue* make(PValue::Kind k) {
    arena_.push_back(std::make_unique<PValue>());
    arena_.back()->kind = k;
    return arena_.back().get();
  }
  void push(PValue* v) {
    OAR_ENFORCE(stack_.size() < (1u << 20), ErrorCode::kInvalidArgument,
                kInfo << ": the pickle stack is too deep");
    stack_.push_back(v);
  }
  void push_bool(bool b) {
    PValue* v = make(PValue::Kind::kBool);
    v->b = b;
    push(v);
  }
  void push_int(int64_t i) {
    PValue* v = make(PValue::Kind::kInt);
    v->i = i;
    push(v);
  }
  void push_str(uint64_t n) {
    const uint8_t* p = r_.take(n, "a string");
    PValue* v = make(PValue::Kind::kStr);
    v->s.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    push(v);
  }
  PValue* top() {
    OAR_ENFORCE(!stack_.empty(), ErrorCode::kInvalidArgument, kInfo << ": the pickle stack is empty");
    return stack_.back();
  }
  PValue* pop() {
    PValue* v = top();
    OAR_ENFORCE(v->kind != PValue::Kind::kMark, ErrorCode::kInvalidArgument, kInfo << ": unexpected MARK");
    stack_.pop_back();
    return v;
  }
  PValue* dict_at(PValue* v, size_t at) {
    OAR_ENFORCE(v->kind == PValue::Kind::kDict, ErrorCode::kInvalidArgument,
                kInfo << ": setting an item on something that is not a dict at offset " << at);
    return v;
  }
  size_t last_mark(size_t at) {
    for (size_t i = stack_.size(); i-- > 0;)
      if (stack_[i]->kind == PValue::Kind::kMark) return i;
    OAR_THROW(ErrorCode::kInvalidArgument, kInfo << ": no MARK for the opcode at offset " << at);
  }
  void memo_put(uint64_t idx) {
    OAR_ENFORCE(idx <= memo_.size() && idx < (1u << 24), ErrorCode::kInvalidArgument,
                kInfo << ": memo index " << idx << " is out of order");
    if (idx == memo_.size())
      memo_.push_back(top());
    else
      memo_[idx] = top();
  }
  void memo_get(uint64_t idx) {
    OAR_ENFORCE(idx < memo_.size(), ErrorCode::kInvalidArgument,
                kInfo << ": memo index " << idx << " is not set");
    push(memo_[idx]);
  }

  Reader r_;
  std::vector<std::unique_ptr<PValue>> arena_;
  std::vector<PValue*> stack_;
  std::vector<PValue*> memo_;
};

void pickle_str(std::string* out, const std::string& s) {
  out->push_back('X');
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// BINPUT / LONG_BINPUT as Python's pickler writes them.
void pickle_put(std::string* out, uint32_t idx) {
  if (idx < 256) {
    out->push_back('q');
    out->push_back(static_cast<char>(idx));
  } else {
    out->push_back('r');
    put<uint32_t>(out, idx);
  }
}
void pickle_get(std::string* out, uint32_t idx) {
  if (idx < 256) {
    out->push_back('h');
    out->push_back(static_cast<char>(idx));
  } else {
    out->push_back('j');
    put<uint32_t>(out, idx);
  }
}

}  // namespace

std::map<std::string, ParamInfo> parse_params_info(const std::string& bytes) {
  Unpickler u(bytes);
  PValue* root = u.run();
  OAR_ENFORCE(root->kind == PValue::Kind::kDict, ErrorCode::kInvalidArgument,
              kInfo << ": the pickle is not a dict");
  std::map<std::string, ParamInfo> out;
  for (auto& kv : root->items) {
    PValue* k = kv.first;
    PValue* v = kv.second;
    OAR_ENFORCE(k->kind == PValue::Kind::kStr, ErrorCode::kInvalidArgument,
                kInfo << ": a key is not a string");
    OAR_ENFORCE(v->kind == PValue::Kind::kDict, ErrorCode::kInvalidArgument,
                kInfo << ": the entry for '" << k->s << "' is not a dict");
    ParamInfo info;
    for (auto& ikv : v->items) {
      PValue* ik = ikv.first;
      PValue* iv = ikv.second;
      OAR_ENFORCE(ik->kind == PValue::Kind::kStr, ErrorCode::kInvalidArgument,
                  kInfo << ": the entry for '" << k->s << "' has a key that is not a string");
      auto want = [&](PValue::Kind kind, const char* what) {
        OAR_ENFORCE(iv->kind == kind, ErrorCode::kInvalidArgument,
                    kInfo << ": '" << k->s << "'." << ik->s << " is not a " << what);
      };
      if (ik->s == "structured_name") {
        want(PValue::Kind::kStr, "string");
        info.structured_name = iv->s;
      } else if (ik->s == "stop_gradient") {
        want(PValue::Kind::kBool, "bool");
        info.stop_gradient = iv->b;
      } else if (ik->s == "trainable") {
        want(PValue::Kind::kBool, "bool");
        info.trainable = iv->b;
      }  // other keys: ignored, so newer writers' additions do not break reading
    }
    out[k->s] = std::move(info);
  }
  return out;
}

std::string serialize_params_info(const std::map<std::string, ParamInfo>& info) {
  std::string out = "\x80\x02";  // PROTO 2
  uint32_t memo = 0;
  out.push_back('}');
  pickle_put(&out, memo++);
  // The three inner keys are the same string objects in Python, so its pickler memoizes them once.
  uint32_t key_memo[3] = {0, 0, 0};
  bool key_seen[3] = {false, false, false};
  const char* keys[3] = {"structured_name", "stop_gradient", "trainable"};
  auto key = [&](int k) {
    if (key_seen[k]) {
      pickle_get(&out, key_memo[k]);
    } else {
      pickle_str(&out, keys[k]);
      key_memo[k] = memo;
      key_seen[k] = true;
      pickle_put(&out, memo++);
    }
  };
  size_t n = 0;
  for (auto& [name, p] : info) {
    // Python batches SETITEMS by 1000; a batch of one item is written with SETITEM.
    size_t batch = std::min<size_t>(1000, info.size() - (n / 1000) * 1000);
    if (n % 1000 == 0 && batch > 1) out.push_back('(');
    pickle_str(&out, name);
    pickle_put(&out, memo++);
    out.push_back('}');
    pickle_put(&out, memo++);
    out.push_back('(');
    key(0);
    pickle_str(&out, p.structured_name);
    pickle_put(&out, memo++);
    key(1);
    out.push_back(p.stop_gradient ? '\x88' : '\x89');
    key(2);
    out.push_back(p.trainable ? '\x88' : '\x89');
    out.push_back('u');
    ++n;
    if (n % 1000 == 0 || n == info.size()) out.push_back(batch > 1 ? 'u' : 's');
  }
  out.push_back('.');
  return out;
}

}  // namespace oar::ir
