// Program <-> ProgramDesc protobuf bytes. The generated classes are used only here and in params.cc.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <oar/core/error.h>
#include <oar/ir/op_version.h>
#include <oar/ir/program.h>

#include <string_view>
#include <unordered_set>

#include "proto/framework.pb.h"

namespace oar::ir {

namespace pb = ::oar::proto;

namespace {

// ---- IR -> proto ----------------------------------------------------------------------------------

void tensor_to_pb(const VarDesc& v, pb::VarType::TensorDesc* t) {
  t->set_data_type(static_cast<pb::VarType::Type>(dtype_to_paddle_code(v.dtype)));
  for (int64_t d : v.shape) t->add_dims(d);
}

template <typename PbAttr>
void simple_attr_to_pb(const std::string& name, const Attribute& a, PbAttr* out) {
  out->set_name(name);
  out->set_type(static_cast<pb::AttrType>(a.index()));
}

void scalar_to_pb(const Scalar& s, pb::Scalar* out) {
  out->set_type(static_cast<pb::Scalar::Type>(s.kind));
  switch (s.kind) {
    case Scalar::Kind::kBool:
      out->set_b(s.b);
      break;
    case Scalar::Kind::kLong:
      out->set_i(s.i);
      break;
    case Scalar::Kind::kFloat64:
      out->set_r(s.r);
      break;
    case Scalar::Kind::kComplex128:
      out->mutable_c()->set_r(s.re);
      out->mutable_c()->set_i(s.im);
      break;
  }
}

void attr_to_pb(const std::string& name, const Attribute& a, pb::OpDesc::Attr* out) {
  simple_attr_to_pb(name, a, out);
  switch (attr_type(a)) {
    case AttrType::kInt:
      out->set_i(std::get<int32_t>(a));
      break;
    case AttrType::kFloat:
      out->set_f(std::get<float>(a));
      break;
    case AttrType::kString:
      out->set_s(std::get<std::string>(a));
      break;
    case AttrType::kInts:
      for (auto v : std::get<std::vector<int32_t>>(a)) out->add_ints(v);
      break;
    case AttrType::kFloats:
      for (auto v : std::get<std::vector<float>>(a)) out->add_floats(v);
      break;
    case AttrType::kStrings:
      for (auto& v : std::get<std::vector<std::string>>(a)) out->add_strings(v);
      break;
    case AttrType::kBool:
      out->set_b(std::get<bool>(a));
      break;
    case AttrType::kBools:
      for (bool v : std::get<std::vector<bool>>(a)) out->add_bools(v);
      break;
    case AttrType::kBlock:
      out->set_block_idx(std::get<BlockRef>(a).idx);
      break;
    case AttrType::kLong:
      out->set_l(std::get<int64_t>(a));
      break;
    case AttrType::kBlocks:
      for (auto& v : std::get<std::vector<BlockRef>>(a)) out->add_blocks_idx(v.idx);
      break;
    case AttrType::kLongs:
      for (auto v : std::get<std::vector<int64_t>>(a)) out->add_longs(v);
      break;
    case AttrType::kFloat64s:
      for (auto v : std::get<std::vector<double>>(a)) out->add_float64s(v);
      break;
    case AttrType::kVar:
      out->set_var_name(std::get<VarRef>(a).name);
      break;
    case AttrType::kVars:
      for (auto& v : std::get<std::vector<VarRef>>(a)) out->add_vars_name(v.name);
      break;
    case AttrType::kFloat64:
      out->set_float64(std::get<double>(a));
      break;
    case AttrType::kScalar:
      scalar_to_pb(std::get<Scalar>(a), out->mutable_scalar());
      break;
    case AttrType::kScalars:
      for (auto& v : std::get<std::vector<Scalar>>(a)) scalar_to_pb(v, out->add_scalars());
      break;
  }
}

void slots_to_pb(const Slots& slots, google::protobuf::RepeatedPtrField<pb::OpDesc::Var>* out) {
  for (auto& s : slots) {
    auto* v = out->Add();
    v->set_parameter(s.first);
    for (auto& a : s.second) v->add_arguments(a);
  }
}

void var_to_pb(const VarDesc& v, pb::VarDesc* out) {
  out->set_name(v.name);
  auto* t = out->mutable_type();
  t->set_type(static_cast<pb::VarType::Type>(v.type));
  switch (v.type) {
    case VarType::kLoDTensor: {
      auto* lt = t->mutable_lod_tensor();
      tensor_to_pb(v, lt->mutable_tensor());
      if (v.lod_level != 0 || (v.wire_fields & VarDesc::kWireLodLevel)) lt->set_lod_level(v.lod_level);
      break;
    }
    case VarType::kLoDTensorArray: {
      auto* ta = t->mutable_tensor_array();
      tensor_to_pb(v, ta->mutable_tensor());
      if (v.lod_level != 0 || (v.wire_fields & VarDesc::kWireLodLevel)) ta->set_lod_level(v.lod_level);
      break;
    }
    case VarType::kSelectedRows:
      tensor_to_pb(v, t->mutable_selected_rows());
      break;
    default:
      break;
  }
  // A flag is written when set, or when wire_fields asks for it (see VarDesc::wire_fields).
  if (v.persistable || (v.wire_fields & VarDesc::kWirePersistable)) out->set_persistable(v.persistable);
  if (v.need_check_feed || (v.wire_fields & VarDesc::kWireNeedCheckFeed))
    out->set_need_check_feed(v.need_check_feed);
  if (v.is_parameter || (v.wire_fields & VarDesc::kWireIsParameter)) out->set_is_parameter(v.is_parameter);
  if (v.stop_gradient || (v.wire_fields & VarDesc::kWireStopGradient))
    out->set_stop_gradient(v.stop_gradient);
  for (auto& [name, a] : v.attrs) {
    auto* pa = out->add_attrs();
    simple_attr_to_pb(name, a, pa);
    switch (attr_type(a)) {
      case AttrType::kInt:
        pa->set_i(std::get<int32_t>(a));
        break;
      case AttrType::kString:
        pa->set_s(std::get<std::string>(a));
        break;
      case AttrType::kInts:
        for (auto x : std::get<std::vector<int32_t>>(a)) pa->add_ints(x);
        break;
      default:
        OAR_THROW(ErrorCode::kInvalidArgument, "program: variable '"
                                                   << v.name << "': attribute '" << name << "' has type "
                                                   << attr_type_name(attr_type(a))
                                                   << "; variable attributes are INT, STRING or INTS");
    }
  }
}

// ---- proto -> IR (the bytes are untrusted) --------------------------------------------------------

std::string var_where(int32_t block, const std::string& name) {
  return "program: block " + std::to_string(block) + ", variable '" + name + "'";
}

void tensor_from_pb(int32_t block, const pb::VarType::TensorDesc& t, VarDesc* v) {
  auto dt = paddle_code_to_dtype(t.data_type());
  OAR_ENFORCE(dt.has_value(), ErrorCode::kInvalidArgument,
              var_where(block, v->name)
                  << ": dtype " << paddle_code_name(t.data_type()) << " is not supported by oar");
  v->dtype = *dt;
  v->shape.assign(t.dims().begin(), t.dims().end());
}

Scalar scalar_from_pb(const pb::Scalar& s, const std::string& where) {
  Scalar out;
  out.kind = static_cast<Scalar::Kind>(s.type());
  int fields = s.has_b() + s.has_i() + s.has_r() + s.has_c();
  bool ok = false;
  switch (s.type()) {
    case pb::Scalar::BOOLEAN:
      ok = s.has_b();
      out.b = s.b();
      break;
    case pb::Scalar::LONG:
      ok = s.has_i();
      out.i = s.i();
      break;
    case pb::Scalar::FLOAT64:
      ok = s.has_r();
      out.r = s.r();
      break;
    case pb::Scalar::COMPLEX128:
      ok = s.has_c();
      out.re = s.c().r();
      out.im = s.c().i();
      break;
  }
  OAR_ENFORCE(ok && fields == 1, ErrorCode::kInvalidArgument,
              where << ": a Scalar of type " << pb::Scalar::Type_Name(s.type())
                    << " must carry exactly that one value (it has " << fields << " values set)");
  return out;
}

Attribute attr_from_pb(const pb::OpDesc::Attr& a, const std::string& where) {
  // Which value fields are populated, as a mask over AttrType codes; only the attribute's own type may be.
  uint32_t set = 0;
  auto mark = [&](bool present, AttrType t) {
    if (present) set |= 1u << static_cast<int>(t);
  };
  mark(a.has_i(), AttrType::kInt);
  mark(a.has_f(), AttrType::kFloat);
  mark(a.has_s(), AttrType::kString);
  mark(a.ints_size() > 0, AttrType::kInts);
  mark(a.floats_size() > 0, AttrType::kFloats);
  mark(a.strings_size() > 0, AttrType::kStrings);
  mark(a.has_b(), AttrType::kBool);
  mark(a.bools_size() > 0, AttrType::kBools);
  mark(a.has_block_idx(), AttrType::kBlock);
  mark(a.has_l(), AttrType::kLong);
  mark(a.blocks_idx_size() > 0, AttrType::kBlocks);
  mark(a.longs_size() > 0, AttrType::kLongs);
  mark(a.float64s_size() > 0, AttrType::kFloat64s);
  mark(a.has_var_name(), AttrType::kVar);
  mark(a.vars_name_size() > 0, AttrType::kVars);
  mark(a.has_float64(), AttrType::kFloat64);
  mark(a.has_scalar(), AttrType::kScalar);
  mark(a.scalars_size() > 0, AttrType::kScalars);
  const auto type = static_cast<AttrType>(a.type());
  const uint32_t own = 1u << static_cast<int>(type);
  if (set & ~own) {
    int other = __builtin_ctz(set & ~own);
    OAR_THROW(ErrorCode::kInvalidArgument, where << ": declared " << attr_type_name(type) << " but carries a "
                                                 << attr_type_name(static_cast<AttrType>(other)) << " value");
  }
  // A single value must be present; a list may be empty.
  static constexpr uint32_t kSingles = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 6) | (1u << 8) | (1u << 9) |
                                       (1u << 13) | (1u << 15) | (1u << 16);
  OAR_ENFORCE(!(kSingles & own) || (set & own), ErrorCode::kInvalidArgument,
              where << ": declared " << attr_type_name(type) << " but carries no value");
  switch (type) {
    case AttrType::kInt:
      return a.i();
    case AttrType::kFloat:
      return a.f();
    case AttrType::kString:
      return a.s();
    case AttrType::kInts:
      return std::vector<int32_t>(a.ints().begin(), a.ints().end());
    case AttrType::kFloats:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case AttrType::kStrings:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case AttrType::kBool:
      return a.b();
    case AttrType::kBools:
      return std::vector<bool>(a.bools().begin(), a.bools().end());
    case AttrType::kBlock:
      return BlockRef{a.block_idx()};
    case AttrType::kLong:
      return static_cast<int64_t>(a.l());
    case AttrType::kBlocks: {
      std::vector<BlockRef> v;
      for (int32_t i : a.blocks_idx()) v.push_back(BlockRef{i});
      return v;
    }
    case AttrType::kLongs:
      return std::vector<int64_t>(a.longs().begin(), a.longs().end());
    case AttrType::kFloat64s:
      return std::vector<double>(a.float64s().begin(), a.float64s().end());
    case AttrType::kVar:
      return VarRef{a.var_name()};
    case AttrType::kVars: {
      std::vector<VarRef> v;
      for (auto& n : a.vars_name()) v.push_back(VarRef{n});
      return v;
    }
    case AttrType::kFloat64:
      return a.float64();
    case AttrType::kScalar:
      return scalar_from_pb(a.scalar(), where);
    case AttrType::kScalars: {
      std::vector<Scalar> v;
      for (auto& s : a.scalars()) v.push_back(scalar_from_pb(s, where));
      return v;
    }
  }
  OAR_THROW(ErrorCode::kInvalidArgument,
            where << ": unknown attribute type code " << static_cast<int>(a.type()));
}

void slots_from_pb(const google::protobuf::RepeatedPtrField<pb::OpDesc::Var>& in, Slots* out,
                   const std::string& where, const char* what) {
  std::unordered_set<std::string_view> seen;  // linear even for hostile slot counts
  for (auto& v : in) {
    OAR_ENFORCE(seen.insert(v.parameter()).second, ErrorCode::kInvalidArgument,
                where << ": " << what << " slot '" << v.parameter() << "' appears twice");
    out->emplace_back(v.parameter(), std::vector<std::string>(v.arguments().begin(), v.arguments().end()));
  }
}

VarDesc var_from_pb(int32_t block, const pb::VarDesc& in) {
  VarDesc v;
  v.wire_fields = 0;
  v.name = in.name();
  const int32_t kind = in.type().type();
  OAR_ENFORCE(is_known_var_kind(kind), ErrorCode::kInvalidArgument,
              var_where(block, v.name) << ": type " << paddle_code_name(kind) << " is not a variable kind");
  v.type = static_cast<VarType>(kind);
  const auto& t = in.type();
  switch (v.type) {
    case VarType::kLoDTensor:
      if (t.has_lod_tensor()) {
        tensor_from_pb(block, t.lod_tensor().tensor(), &v);
        v.lod_level = t.lod_tensor().lod_level();
        if (t.lod_tensor().has_lod_level()) v.wire_fields |= VarDesc::kWireLodLevel;
      }
      break;
    case VarType::kLoDTensorArray:
      if (t.has_tensor_array()) {
        tensor_from_pb(block, t.tensor_array().tensor(), &v);
        v.lod_level = t.tensor_array().lod_level();
        if (t.tensor_array().has_lod_level()) v.wire_fields |= VarDesc::kWireLodLevel;
      }
      break;
    case VarType::kSelectedRows:
      if (t.has_selected_rows()) tensor_from_pb(block, t.selected_rows(), &v);
      break;
    default:
      break;
  }
  if (in.has_persistable()) v.wire_fields |= VarDesc::kWirePersistable;
  if (in.has_need_check_feed()) v.wire_fields |= VarDesc::kWireNeedCheckFeed;
  if (in.has_is_parameter()) v.wire_fields |= VarDesc::kWireIsParameter;
  if (in.has_stop_gradient()) v.wire_fields |= VarDesc::kWireStopGradient;
  v.persistable = in.persistable();
  v.need_check_feed = in.need_check_feed();
  v.is_parameter = in.is_parameter();
  v.stop_gradient = in.stop_gradient();
  for (auto& a : in.attrs()) {
    std::string where = var_where(block, v.name) + ", attribute '" + a.name() + "'";
    switch (a.type()) {
      case pb::INT:
        OAR_ENFORCE(a.has_i(), ErrorCode::kInvalidArgument, where << ": declared INT but carries no value");
        v.attrs.emplace_back(a.name(), a.i());
        break;
      case pb::STRING:
        OAR_ENFORCE(a.has_s(), ErrorCode::kInvalidArgument,
                    where << ": declared STRING but carries no value");
        v.attrs.emplace_back(a.name(), a.s());
        break;
      case pb::INTS:
        v.attrs.emplace_back(a.name(), std::vector<int32_t>(a.ints().begin(), a.ints().end()));
        break;
      default:
        OAR_THROW(ErrorCode::kInvalidArgument, where << ": type " << pb::AttrType_Name(a.type())
                                                     << " is not allowed on a variable (INT, STRING, INTS)");
    }
  }
  return v;
}

std::string clip(const std::string& s, size_t n = 300) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

}  // namespace

std::string Program::serialize() const {
  pb::ProgramDesc desc;
  for (const auto& bp : blocks_) {
    const Block& b = *bp;
    auto* pbb = desc.add_blocks();
    pbb->set_idx(b.idx());
    pbb->set_parent_idx(b.parent_idx());
    for (const VarDesc& v : b.vars()) var_to_pb(v, pbb->add_vars());
    for (const OpDesc& op : b.ops()) {
      auto* pop = pbb->add_ops();
      pop->set_type(op.type);
      slots_to_pb(op.inputs, pop->mutable_inputs());
      slots_to_pb(op.outputs, pop->mutable_outputs());
      for (auto& [name, a] : op.attrs) attr_to_pb(name, a, pop->add_attrs());
      if (op.is_target) pop->set_is_target(true);
    }
    if (b.forward_block_idx() != -1) pbb->set_forward_block_idx(b.forward_block_idx());
  }
  if (!op_compatible_map_.empty()) {
    OAR_ENFORCE(desc.mutable_op_compatible_map()->ParseFromString(op_compatible_map_), ErrorCode::kInternal,
                "program: the kept op_compatible_map bytes do not parse");
  }
  if (version_) desc.mutable_version()->set_version(*version_);
  if (has_op_version_map_ || !op_versions_.empty()) {
    auto* m = desc.mutable_op_version_map();
    for (auto& [name, ver] : op_versions_) {
      auto* p = m->add_pair();
      p->set_op_name(name);
      p->mutable_op_version()->set_version(ver);
    }
  }
  std::string out;
  OAR_ENFORCE(desc.SerializeToString(&out), ErrorCode::kInternal, "program: serialization failed");
  return out;
}

Program Program::parse(const void* data, size_t size, const ParseOptions& opts) {
  OAR_ENFORCE(size <= opts.max_bytes, ErrorCode::kInvalidArgument,
              "program: " << size << " bytes exceed the limit of " << opts.max_bytes << " bytes");
  OAR_ENFORCE(size <= static_cast<size_t>(INT32_MAX), ErrorCode::kInvalidArgument,
              "program: " << size << " bytes exceed protobuf's 2 GiB limit");
  pb::ProgramDesc desc;
  {
    google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(size));
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetRecursionLimit(opts.max_nesting);
    in.SetTotalBytesLimit(static_cast<int>(size));
    bool ok = desc.MergePartialFromCodedStream(&in) && in.ConsumedEntireMessage();
    OAR_ENFORCE(
        ok, ErrorCode::kInvalidArgument,
        "program: the " << size << " bytes are not a valid ProgramDesc (truncated or corrupt protobuf)");
  }
  OAR_ENFORCE(desc.IsInitialized(), ErrorCode::kInvalidArgument,
              "program: the ProgramDesc lacks required fields (absent, or an enum code the format does not "
              "define): "
                  << clip(desc.InitializationErrorString()));
  OAR_ENFORCE(desc.blocks_size() >= 1, ErrorCode::kInvalidArgument, "program: the ProgramDesc has no blocks");
  OAR_ENFORCE(desc.blocks_size() <= opts.max_blocks, ErrorCode::kInvalidArgument,
              "program: " << desc.blocks_size() << " blocks exceed the limit " << opts.max_blocks);

  Program p;
  p.blocks_.clear();
  for (int32_t i = 0; i < desc.blocks_size(); ++i) {
    const auto& pbb = desc.blocks(i);
    Block b(pbb.idx(), pbb.parent_idx());
    b.set_forward_block_idx(pbb.forward_block_idx());
    for (const auto& pv : pbb.vars()) {
      VarDesc v = var_from_pb(i, pv);
      OAR_ENFORCE(!b.has_var(v.name), ErrorCode::kInvalidArgument,
                  var_where(i, v.name) << ": declared twice in the block");
      b.add_var(std::move(v));
    }
    for (int32_t k = 0; k < pbb.ops_size(); ++k) {
      const auto& pop = pbb.ops(k);
      OpDesc op;
      op.type = pop.type();
      std::string where =
          "program: block " + std::to_string(i) + ", op #" + std::to_string(k) + " '" + op.type + "'";
      slots_from_pb(pop.inputs(), &op.inputs, where, "input");
      slots_from_pb(pop.outputs(), &op.outputs, where, "output");
      for (const auto& pa : pop.attrs()) {
        op.attrs.emplace_back(pa.name(), attr_from_pb(pa, where + ", attribute '" + pa.name() + "'"));
      }
      op.is_target = pop.is_target();
      b.append_op(std::move(op));
    }
    p.blocks_.push_back(std::make_unique<Block>(std::move(b)));
  }
  p.version_ = desc.has_version() ? std::optional<int64_t>(desc.version().version()) : std::nullopt;
  p.has_op_version_map_ = desc.has_op_version_map();
  for (const auto& pair : desc.op_version_map().pair()) {
    OAR_ENFORCE(pair.op_version().version() >= 0, ErrorCode::kInvalidArgument,
                "program: op_version_map: op '" << pair.op_name() << "' has negative version "
                                                << pair.op_version().version());
    p.op_versions_.emplace_back(pair.op_name(), pair.op_version().version());
  }
  if (desc.has_op_compatible_map()) p.op_compatible_map_ = desc.op_compatible_map().SerializeAsString();

  p.validate(opts);
  if (opts.check_op_versions) check_op_versions(p);
  return p;
}

}  // namespace oar::ir
