// Program IR: building, protobuf round trips, validation, hostile ProgramDesc bytes, op versions,
// the .pdiparams tensor stream and the .pdiparams.info pickle.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/ir/op_version.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cstring>
#include <limits>

#include "program_test_util.h"

using namespace oar;
using namespace oar::ir;

namespace {

VarDesc tensor_var(const std::string& name, DType dt, std::vector<int64_t> shape, bool persistable = false) {
  VarDesc v;
  v.name = name;
  v.dtype = dt;
  v.shape = std::move(shape);
  v.persistable = persistable;
  return v;
}

// A program using every attribute type, a sub-block, every var flag and several dtypes.
Program make_program() {
  Program p;
  Block& g = p.global_block();
  VarDesc feed;
  feed.name = "feed";
  feed.type = VarType::kFeedMinibatch;
  feed.persistable = true;
  g.add_var(feed);
  VarDesc fetch = feed;
  fetch.name = "fetch";
  fetch.type = VarType::kFetchList;
  g.add_var(fetch);
  VarDesc x = tensor_var("x", DType::kFloat32, {-1, 4});
  x.need_check_feed = true;
  x.stop_gradient = true;
  g.add_var(x);
  VarDesc w = tensor_var("w", DType::kFloat32, {4, 3}, true);
  w.is_parameter = true;
  w.attrs.emplace_back("dist", Attribute(std::vector<int32_t>{0, -1}));
  g.add_var(w);
  g.add_var(tensor_var("ids", DType::kInt64, {-1, 1}));
  g.add_var(tensor_var("h", DType::kBFloat16, {-1, 3}));
  g.add_var(tensor_var("c", DType::kComplex128, {2}));
  VarDesc seq = tensor_var("seq", DType::kFloat16, {-1, 0, 7});
  seq.lod_level = 2;
  g.add_var(seq);
  VarDesc arr = tensor_var("arr", DType::kInt8, {3});
  arr.type = VarType::kLoDTensorArray;
  arr.lod_level = 1;
  g.add_var(arr);
  g.add_var(tensor_var("out", DType::kFloat32, {-1, 3}));

  OpDesc f;
  f.type = "feed";
  f.set_input("X", {"feed"});
  f.set_output("Out", {"x"});
  f.set_attr("col", int32_t{0});
  g.append_op(f);

  Block& sub = p.append_block(0);
  sub.add_var(tensor_var("tmp", DType::kFloat32, {-1, 3}));
  OpDesc inner;
  inner.type = "relu";
  inner.set_input("X", {"h"});  // declared in the parent block
  inner.set_output("Out", {"tmp"});
  p.block(1).append_op(inner);

  OpDesc all;
  all.type = "conditional_block";
  all.set_input("Cond", {"ids"});
  all.set_input("Input", {"x", "w"});
  all.set_input("Empty", {});
  all.set_output("Out", {"out"});
  all.set_attr("i", int32_t{-7});
  all.set_attr("f", 0.25f);
  all.set_attr("s", std::string("hello"));
  all.set_attr("ints", std::vector<int32_t>{1, 2, 3});
  all.set_attr("floats", std::vector<float>{1.5f, -2.f});
  all.set_attr("strings", std::vector<std::string>{"a", "", "c"});
  all.set_attr("b", true);
  all.set_attr("bools", std::vector<bool>{true, false, true});
  all.set_attr("sub_block", BlockRef{1});
  all.set_attr("l", int64_t{1} << 40);
  all.set_attr("blocks", std::vector<BlockRef>{{1}});
  all.set_attr("longs", std::vector<int64_t>{-1, int64_t{1} << 50});
  all.set_attr("float64s", std::vector<double>{0.1, 1e300});
  all.set_attr("var", VarRef{"x"});
  all.set_attr("vars", std::vector<VarRef>{{"x"}, {"w"}});
  all.set_attr("float64", 3.141592653589793);
  Scalar sc;
  sc.kind = Scalar::Kind::kComplex128;
  sc.re = 1;
  sc.im = -2;
  all.set_attr("scalar", sc);
  Scalar s1, s2;
  s1.kind = Scalar::Kind::kBool;
  s1.b = true;
  s2.kind = Scalar::Kind::kLong;
  s2.i = -5;
  all.set_attr("scalars", std::vector<Scalar>{s1, s2});
  all.set_attr("empty_ints", std::vector<int32_t>{});
  all.is_target = true;
  g.append_op(all);

  OpDesc ft;
  ft.type = "fetch";
  ft.set_input("X", {"out"});
  ft.set_output("Out", {"fetch"});
  ft.set_attr("col", int32_t{0});
  g.append_op(ft);
  fill_op_version_map(&p);
  return p;
}

template <typename F>
std::string error_of(F&& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_ERROR(stmt, code_, substr)                \
  do {                                                   \
    ErrorCode c_ = ErrorCode::kInternal;                 \
    std::string m_ = error_of([&] { stmt; }, &c_);       \
    EXPECT_NE(m_, "<no error>") << #stmt;                \
    EXPECT_EQ(c_, code_) << m_;                          \
    EXPECT_NE(m_.find(substr), std::string::npos) << m_; \
  } while (0)

}  // namespace

TEST(Program, RoundTripThroughProtobuf) {
  Program p = make_program();
  p.validate();
  std::string bytes = p.serialize();
  Program q = Program::parse(bytes);
  EXPECT_EQ(p, q);
  EXPECT_EQ(q.serialize(), bytes);  // deterministic
  EXPECT_EQ(q.num_blocks(), 2);
  EXPECT_EQ(q.block(1).parent_idx(), 0);
  const OpDesc& op = q.global_block().ops()[1];
  EXPECT_EQ(op.attr<BlockRef>("sub_block").idx, 1);
  EXPECT_EQ(op.attr<int64_t>("l"), int64_t{1} << 40);
  EXPECT_EQ(op.attr<std::vector<std::string>>("strings")[1], "");
  EXPECT_EQ(op.attr<Scalar>("scalar").im, -2);
  EXPECT_TRUE(op.is_target);
  EXPECT_EQ(op.input("Input"), (std::vector<std::string>{"x", "w"}));
  EXPECT_TRUE(op.input("Nope").empty());
  const VarDesc* seq = q.global_block().find_var("seq");
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->dtype, DType::kFloat16);
  EXPECT_EQ(seq->lod_level, 2);
  EXPECT_EQ(seq->shape, (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_TRUE(q.global_block().find_var("w")->is_parameter);
  EXPECT_TRUE(q.global_block().find_var("x")->need_check_feed);
  EXPECT_EQ(q.global_block().find_var("arr")->type, VarType::kLoDTensorArray);
  EXPECT_EQ(q.find_var_recursive(1, "w")->name, "w");
  EXPECT_EQ(q.find_var_recursive(0, "tmp"), nullptr);
  EXPECT_EQ(q.version(), Program::kDefaultVersion);
  EXPECT_EQ(q.op_version("conv2d"), 1);
  EXPECT_ERROR(op.attr<float>("i"), ErrorCode::kType, "attribute 'i' has type INT");
  EXPECT_ERROR(op.attr<float>("zzz"), ErrorCode::kNotFound, "no attribute 'zzz'");
}

TEST(Program, CloneIsIndependent) {
  Program p = make_program();
  Program c = p.clone();
  EXPECT_EQ(p, c);
  c.global_block().find_var("w")->shape[0] = 5;
  c.global_block().mutable_ops()[0].set_attr("col", int32_t{3});
  EXPECT_NE(p, c);
  EXPECT_EQ(p.global_block().find_var("w")->shape[0], 4);
}

TEST(Program, TextDump) {
  std::string s = make_program().to_string();
  EXPECT_NE(s.find("{ // block_idx:0  parent_idx:-1"), std::string::npos) << s;
  EXPECT_NE(s.find("persist param var w : LOD_TENSOR.shape(4, 3).dtype(float32)"), std::string::npos) << s;
  EXPECT_NE(s.find("{Out=['x']} = feed(inputs={X=['feed']}, col = 0)"), std::string::npos) << s;
  EXPECT_NE(s.find("sub_block = block[1]"), std::string::npos) << s;
  EXPECT_NE(s.find("bools = [True, False, True]"), std::string::npos) << s;
  EXPECT_NE(s.find("{ // block_idx:1  parent_idx:0"), std::string::npos) << s;
}

TEST(Program, DtypeCodes) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    EXPECT_EQ(paddle_code_to_dtype(dtype_to_paddle_code(t)), t) << dtype_name(t);
  }
  EXPECT_EQ(dtype_to_paddle_code(DType::kFloat32), 5);
  EXPECT_EQ(dtype_to_paddle_code(DType::kBFloat16), 22);
  EXPECT_EQ(dtype_to_paddle_code(DType::kUInt8), 20);
  EXPECT_EQ(dtype_to_paddle_code(DType::kComplex128), 24);
  EXPECT_FALSE(paddle_code_to_dtype(19));  // SIZE_T
  EXPECT_FALSE(paddle_code_to_dtype(7));   // LOD_TENSOR is a kind
  EXPECT_FALSE(paddle_code_to_dtype(-1));
  EXPECT_EQ(paddle_code_name(32), "FP8_E4M3FN");
  EXPECT_EQ(paddle_code_name(99), "code 99");
}

TEST(Program, BuilderErrors) {
  Program p;
  p.global_block().add_var(tensor_var("a", DType::kFloat32, {1}));
  EXPECT_ERROR(p.global_block().add_var(tensor_var("a", DType::kFloat32, {1})), ErrorCode::kInvalidArgument,
               "'a' is declared twice");
  EXPECT_ERROR(p.append_block(3), ErrorCode::kOutOfRange, "parent block index 3");
  EXPECT_ERROR(p.block(2), ErrorCode::kOutOfRange, "block index 2");
}

// ---- validation of hand-written ProgramDesc bytes --------------------------------------------------

TEST(ProgramParse, HandWrittenBytesParse) {
  using namespace pbw;
  std::string bytes =
      program({block(0, -1, {lod_tensor_var("x", 5, {-1, 2}), lod_tensor_var("y", 5, {-1, 2})},
                     {op("relu", {op_var("X", {"x"})}, {op_var("Out", {"y"})})})});
  Program p = Program::parse(bytes);
  EXPECT_EQ(p.global_block().ops()[0].type, "relu");
  EXPECT_EQ(p.version(), std::nullopt);
  EXPECT_FALSE(p.has_op_version_map());
  EXPECT_EQ(p.serialize(), bytes);  // same presence rules as the hand-written bytes
}

TEST(ProgramParse, KeepsPaddle2OpCompatibleMap) {
  // Paddle 2.x writes op_compatible_map (field 3): {pair {op_name, compatible_info {version, type}},
  // default_required_version}. oar keeps it as it was.
  using namespace pbw;
  std::string compat = b(1, b(1, "conv2d") + b(2, b(1, "1.6.0") + u(2, 0))) + b(2, "1.5.0");
  std::string bytes = program({block(0, -1, {}, {})}) + b(3, compat) + b(4, u(1, 2004002));
  Program p = Program::parse(bytes);
  EXPECT_EQ(p.version(), 2004002);
  EXPECT_EQ(p.op_compatible_map_bytes(), compat);
  EXPECT_EQ(p.serialize(), bytes);
}

TEST(ProgramParse, RefusesStructuralErrors) {
  using namespace pbw;
  auto x = lod_tensor_var("x", 5, {2});
  auto relu = [](const std::string& in) { return op("relu", {op_var("X", {in})}, {op_var("Out", {"x"})}); };
  const auto kInv = ErrorCode::kInvalidArgument;
  EXPECT_ERROR(Program::parse(program({})), kInv, "no blocks");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {relu("nope")})})), kInv,
               "input X refers to variable 'nope', which is not declared");
  EXPECT_ERROR(Program::parse(program({block(1, -1, {x}, {})})), kInv, "blocks[0] has idx 1");
  EXPECT_ERROR(Program::parse(program({block(0, 0, {x}, {})})), kInv, "global block 0 has parent_idx 0");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {}), block(1, 7, {}, {})})), kInv,
               "block 1 has parent_idx 7");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {}), block(1, 1, {}, {})})), kInv,
               "block 1 has parent_idx 1");
  // 1 -> 2 -> 1: a cycle that never reaches the global block.
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {}), block(1, 2, {}, {}), block(2, 1, {}, {})})),
               kInv, "is a cycle");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {}) + u(5, 4)})), kInv, "forward_block_idx 4");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x, x}, {})})), kInv, "declared twice");
  EXPECT_ERROR(Program::parse(program({block(0, -1, {lod_tensor_var("x", 5, {2, -2})}, {})})), kInv,
               "dims[1] = -2");
  // A sub-block may use the parent's variables.
  Program ok = Program::parse(program({block(0, -1, {x}, {}), block(1, 0, {}, {relu("x")})}));
  EXPECT_EQ(ok.num_blocks(), 2);
  // ...but the parent may not use the child's.
  EXPECT_ERROR(Program::parse(
                   program({block(0, -1, {x}, {relu("t")}), block(1, 0, {lod_tensor_var("t", 5, {1})}, {})})),
               kInv, "'t', which is not declared");
  // Too many blocks for the caller's limit.
  ParseOptions lim;
  lim.max_blocks = 1;
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {}), block(1, 0, {}, {})}), lim), kInv,
               "exceed the limit 1");
  lim = {};
  lim.max_bytes = 4;
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {})}), lim), kInv, "exceed the limit of 4 bytes");
}

TEST(ProgramParse, RefusesBadTypesAndAttributes) {
  using namespace pbw;
  const auto kInv = ErrorCode::kInvalidArgument;
  auto prog_with_var = [](const std::string& var) { return program({block(0, -1, {var}, {})}); };
  EXPECT_ERROR(Program::parse(prog_with_var(lod_tensor_var("x", 99, {2}))), kInv, "lacks required fields");
  EXPECT_ERROR(Program::parse(prog_with_var(lod_tensor_var("x", 19, {2}))), kInv,
               "dtype SIZE_T is not supported");
  EXPECT_ERROR(Program::parse(prog_with_var(lod_tensor_var("x", 33, {2}))), kInv,
               "FP8_E5M2 is not supported");
  EXPECT_ERROR(Program::parse(prog_with_var(b(1, "x") + b(2, u(1, 5)))), kInv,
               "type FP32 is not a variable kind");
  EXPECT_ERROR(Program::parse(prog_with_var(b(1, "x"))), kInv, "lacks required fields");

  auto x = lod_tensor_var("x", 5, {2});
  auto with_attr = [&](const std::string& attr) {
    return program({block(0, -1, {x}, {op("relu", {op_var("X", {"x"})}, {op_var("Out", {"x"})}, {attr})})});
  };
  // INT declared, STRING value carried.
  EXPECT_ERROR(Program::parse(with_attr(b(1, "axis") + u(2, 0) + b(5, "s"))), kInv,
               "attribute 'axis': declared INT but carries a STRING value");
  EXPECT_ERROR(Program::parse(with_attr(b(1, "axis") + u(2, 0))), kInv, "declared INT but carries no value");
  EXPECT_ERROR(Program::parse(with_attr(b(1, "sub") + u(2, 8) + u(12, 3))), kInv,
               "block index 3 out of range");
  EXPECT_ERROR(Program::parse(with_attr(b(1, "sub") + u(2, 8) + u(12, 0))), kInv,
               "refers to its own block 0");
  EXPECT_ERROR(Program::parse(with_attr(b(1, "a") + u(2, 77) + u(3, 1))), kInv, "lacks required fields");
  // A Scalar whose tag and value disagree.
  EXPECT_ERROR(Program::parse(with_attr(b(1, "sc") + u(2, 16) + b(20, u(1, 2) + u(2, 1)))), kInv,
               "a Scalar of type LONG must carry exactly that one value");
  EXPECT_NO_THROW(Program::parse(with_attr(b(1, "axis") + u(2, 0) + u(3, 1))));
}

TEST(ProgramParse, DuplicateAttributeAndSlots) {
  using namespace pbw;
  auto x = lod_tensor_var("x", 5, {2});
  std::string a = b(1, "axis") + u(2, 0) + u(3, 1);
  std::string o = b(3, "relu") + b(1, op_var("X", {"x"})) + b(4, a) + b(4, a);
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {o})})), ErrorCode::kInvalidArgument,
               "attribute 'axis' appears twice");
  std::string o2 = b(3, "relu") + b(1, op_var("X", {"x"})) + b(1, op_var("X", {"x"}));
  EXPECT_ERROR(Program::parse(program({block(0, -1, {x}, {o2})})), ErrorCode::kInvalidArgument,
               "input slot 'X' appears twice");
}

TEST(ProgramParse, ManyAttributesAndSlotsStayLinear) {
  // 100000 attributes and slots on one op: the duplicate checks must not be quadratic.
  using namespace pbw;
  std::string o;
  for (int i = 0; i < 100000; ++i) o += b(1, op_var("S" + std::to_string(i), {}));
  o += b(3, "relu");
  for (int i = 0; i < 100000; ++i) o += b(4, b(1, "a" + std::to_string(i)) + u(2, 0) + u(3, i));
  Program p = Program::parse(program({block(0, -1, {}, {o})}));
  EXPECT_EQ(p.global_block().ops()[0].attrs.size(), 100000u);
  EXPECT_EQ(p.global_block().ops()[0].attr<int32_t>("a99999"), 99999);
}

TEST(ProgramParse, NestingAndGarbage) {
  const auto kInv = ErrorCode::kInvalidArgument;
  // Deeply nested length-delimited field 1: below BlockDesc it is a wire-type mismatch (kept as an
  // unknown field), so the parse ends with missing required fields, not a crash.
  std::string nested;
  for (int i = 0; i < 5000; ++i) nested = pbw::b(1, nested);
  EXPECT_ERROR(Program::parse(nested), kInv, "program: ");
  // 100000 nested unknown groups: refused by the recursion limit.
  std::string groups;
  for (int i = 0; i < 100000; ++i) groups += pbw::tag(99, 3);
  EXPECT_ERROR(Program::parse(groups), kInv, "not a valid ProgramDesc");
  EXPECT_ERROR(Program::parse(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)), kInv,
               "not a valid ProgramDesc");
  EXPECT_ERROR(Program::parse(std::string("hello world")), kInv, "");
}

TEST(ProgramParse, EveryPrefixAndEveryFlippedByte) {
  std::string bytes = make_program().serialize();
  int ok = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      Program::parse(bytes.data(), n);
      ++ok;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_LT(ok, 5);  // a prefix is almost never a whole program
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0xff, 0x01, 0x80}) {
      std::string c = bytes;
      c[i] = static_cast<char>(c[i] ^ mask);
      try {
        Program q = Program::parse(c);
        q.serialize();
        q.to_string();
      } catch (const Error& e) {
        EXPECT_TRUE(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kUnimplemented)
            << e.what();
      }
    }
  }
}

// ---- op versions ------------------------------------------------------------------------------------

TEST(OpVersion, RefusesNewerOpVersions) {
  Program p = make_program();
  OpDesc conv;
  conv.type = "conv2d";
  conv.set_input("Input", {"x"});
  p.global_block().append_op(conv);
  EXPECT_NO_THROW(check_op_versions(p));
  auto m = p.op_version_map();
  for (auto& e : m)
    if (e.first == "conv2d") e.second = 5;
  p.set_op_version_map(m);
  EXPECT_ERROR(check_op_versions(p), ErrorCode::kUnimplemented,
               "conv2d: the model needs version 5 of this op, oar implements version 1");
  std::string bytes = p.serialize();
  EXPECT_ERROR(Program::parse(bytes), ErrorCode::kUnimplemented, "needs version 5");
  ParseOptions opts;
  opts.check_op_versions = false;
  EXPECT_EQ(Program::parse(bytes, opts).op_version("conv2d"), 5);
}

TEST(OpVersion, UnknownOpsAndOlderVersions) {
  Program p;
  p.global_block().add_var(tensor_var("x", DType::kFloat32, {1}));
  OpDesc op;
  op.type = "fill_constant";
  op.set_output("Out", {"x"});
  p.global_block().append_op(op);
  p.set_op_version_map({{"fill_constant", 1}});  // older than oar's 2: accepted
  EXPECT_NO_THROW(check_op_versions(p, true));
  OpDesc strange;
  strange.type = "my_custom_op";
  p.global_block().append_op(strange);
  EXPECT_NO_THROW(check_op_versions(p));
  EXPECT_ERROR(check_op_versions(p, true), ErrorCode::kUnimplemented, "my_custom_op: oar does not implement");
  EXPECT_EQ(supported_op_version("matmul_v2"), 0);
  EXPECT_EQ(supported_op_version("fill_constant"), 2);
  EXPECT_FALSE(supported_op_version("no_such_op"));
}

// ---- tensor stream -----------------------------------------------------------------------------------

namespace {

TensorData make_tensor(DType dt, std::vector<int64_t> dims, uint8_t seed) {
  TensorData t;
  t.dtype = dt;
  t.dims = std::move(dims);
  t.data.resize(static_cast<size_t>(t.numel() * dtype_size(dt)));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(seed + 7 * i);
  return t;
}

// One record by hand, with any header values.
std::string record(uint32_t version, std::vector<std::vector<uint64_t>> lod, uint32_t tversion,
                   const std::string& desc, const std::string& data, int32_t desc_size = -1) {
  std::string s;
  auto put = [&](const void* p, size_t n) { s.append(static_cast<const char*>(p), n); };
  put(&version, 4);
  uint64_t levels = lod.size();
  put(&levels, 8);
  for (auto& l : lod) {
    uint64_t n = l.size() * 8;
    put(&n, 8);
    put(l.data(), n);
  }
  put(&tversion, 4);
  int32_t ds = desc_size >= 0 ? desc_size : static_cast<int32_t>(desc.size());
  put(&ds, 4);
  s += desc + data;
  return s;
}

}  // namespace

TEST(TensorStream, RoundTripAllDtypes) {
  std::vector<TensorData> ts;
  for (int i = 0; i < kNumDTypes; ++i) ts.push_back(make_tensor(static_cast<DType>(i), {2, 3}, i));
  ts.push_back(make_tensor(DType::kFloat32, {}, 1));      // a scalar
  ts.push_back(make_tensor(DType::kFloat32, {0, 5}, 1));  // empty
  TensorData lod = make_tensor(DType::kInt64, {5, 1}, 3);
  lod.lod = {{0, 2, 5}, {0, 1, 2, 3, 4, 5}};
  ts.push_back(lod);
  std::string bytes = serialize_tensor_stream(ts);
  std::vector<TensorData> back = parse_tensor_stream(bytes.data(), bytes.size());
  ASSERT_EQ(back.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) EXPECT_EQ(back[i], ts[i]) << i;
  EXPECT_EQ(serialize_tensor_stream(back), bytes);
}

TEST(TensorStream, LayoutIsPaddles) {
  TensorData t = make_tensor(DType::kFloat32, {2}, 0);
  std::string bytes = serialize_tensor_stream({t});
  // version 0 | 0 LoD levels | tensor version 0 | desc size 4 | desc {data_type: FP32, dims: 2} | 8 data
  // bytes
  std::string expect =
      record(0, {}, 0, pbw::u(1, 5) + pbw::u(2, 2), std::string(t.data.begin(), t.data.end()));
  EXPECT_EQ(bytes, expect);
  EXPECT_EQ(bytes.size(), 4u + 8 + 4 + 4 + 4 + 8);
}

TEST(TensorStream, HostileRecords) {
  const auto kInv = ErrorCode::kInvalidArgument;
  auto parse = [](const std::string& s) { return parse_tensor_stream(s.data(), s.size()); };
  std::string f32x2 = pbw::u(1, 5) + pbw::u(2, 2);
  std::string data8(8, '\1');
  EXPECT_EQ(parse(record(0, {}, 0, f32x2, data8)).size(), 1u);
  EXPECT_ERROR(parse(record(1, {}, 0, f32x2, data8)), kInv, "version 1 is not supported");
  EXPECT_ERROR(parse(record(0, {}, 2, f32x2, data8)), kInv, "data version 2 is not supported");
  // 1e12 elements claimed by a tiny file: refused before allocating.
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(1, 5) + pbw::u(2, 1000000) + pbw::u(2, 1000000), data8)), kInv,
               "claim 1000000000000 float32 elements (4000000000000 bytes) but only 8 bytes remain");
  // Overflowing dims.
  EXPECT_ERROR(parse(record(0, {}, 0,
                            pbw::u(1, 5) + pbw::u(2, int64_t{1} << 40) + pbw::u(2, int64_t{1} << 40), data8)),
               kInv, "overflows");
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(1, 6) + pbw::u(2, int64_t{1} << 61), data8)), kInv, "overflows");
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(1, 5) + pbw::u(2, -1), data8)), kInv, "dims[0] = -1");
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(1, 99) + pbw::u(2, 2), data8)), kInv, "unknown dtype code 99");
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(1, 19) + pbw::u(2, 2), data8)), kInv,
               "dtype SIZE_T is not supported");
  EXPECT_ERROR(parse(record(0, {}, 0, pbw::u(2, 2), data8)), kInv, "TensorDesc has no data_type");
  EXPECT_ERROR(parse(record(0, {}, 0, f32x2, data8, 1000)), kInv, "the TensorDesc needs 1000 bytes");
  EXPECT_ERROR(parse(record(0, {}, 0, "\xff\xff", data8)), kInv, "is not valid protobuf");
  std::string neg = record(0, {}, 0, f32x2, data8);
  int32_t m = -5;
  std::memcpy(&neg[16], &m, 4);
  EXPECT_ERROR(parse(neg), kInv, "negative TensorDesc size -5");
  std::string lod = record(0, {}, 0, f32x2, data8);
  uint64_t many = uint64_t{1} << 60;
  std::memcpy(&lod[4], &many, 8);
  EXPECT_ERROR(parse(lod), kInv, "LoD levels exceed the limit");
  std::string odd = record(0, {{0, 1}}, 0, f32x2, data8);
  uint64_t seven = 7;
  std::memcpy(&odd[12], &seven, 8);
  EXPECT_ERROR(parse(odd), kInv, "not a multiple of 8");
  std::string big_level = record(0, {{0, 1}}, 0, f32x2, data8);
  uint64_t huge = uint64_t{1} << 62;
  std::memcpy(&big_level[12], &huge, 8);
  EXPECT_ERROR(parse(big_level), kInv, "truncated");
  TensorStreamLimits lim;
  lim.max_rank = 1;
  std::string r2 = record(0, {}, 0, pbw::u(1, 5) + pbw::u(2, 1) + pbw::u(2, 2), data8);
  EXPECT_ERROR(parse_tensor_stream(r2.data(), r2.size(), lim), kInv, "rank 2 exceeds the limit 1");
}

TEST(TensorStream, OneVariableFiles) {
  TensorData t = make_tensor(DType::kFloat64, {2, 2}, 9);
  std::string bytes = serialize_tensor_file(t);
  EXPECT_EQ(bytes, serialize_tensor_stream({t}));
  EXPECT_EQ(parse_tensor_file(bytes), t);
  EXPECT_ERROR(parse_tensor_file(bytes + bytes), ErrorCode::kInvalidArgument, "bytes follow the tensor");
  EXPECT_ERROR(parse_tensor_file(""), ErrorCode::kInvalidArgument, "truncated at offset 0");
}

TEST(TensorStream, EveryPrefixIsRefused) {
  TensorData a = make_tensor(DType::kFloat32, {3, 2}, 1);
  a.lod = {{0, 1, 3}};
  std::string bytes = serialize_tensor_stream({a, make_tensor(DType::kInt64, {2}, 5)});
  size_t first = serialize_tensor_stream({a}).size();
  for (size_t n = 1; n < bytes.size(); ++n) {
    if (n == first) continue;  // exactly one whole record
    ErrorCode c = ErrorCode::kInternal;
    std::string m = error_of([&] { parse_tensor_stream(bytes.data(), n); }, &c);
    EXPECT_EQ(c, ErrorCode::kInvalidArgument) << n << ": " << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << n << ": " << m;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string c = bytes;
    c[i] = static_cast<char>(c[i] ^ 0xff);
    try {
      parse_tensor_stream(c.data(), c.size());
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

TEST(TensorStream, CombinedParamsFollowTheProgram) {
  Program p;
  Block& g = p.global_block();
  g.add_var(tensor_var("b", DType::kFloat32, {3}, true));
  g.add_var(tensor_var("a", DType::kInt32, {2, -1}, true));
  g.add_var(tensor_var("tmp", DType::kFloat32, {3}));
  VarDesc feed;
  feed.name = "feed";
  feed.type = VarType::kFeedMinibatch;
  feed.persistable = true;
  g.add_var(feed);
  EXPECT_EQ(combined_param_names(p), (std::vector<std::string>{"a", "b"}));
  std::map<std::string, TensorData> params{{"a", make_tensor(DType::kInt32, {2, 5}, 1)},
                                           {"b", make_tensor(DType::kFloat32, {3}, 2)}};
  std::string bytes = save_combined_params(params);
  EXPECT_EQ(load_combined_params(p, bytes), params);
  const auto kInv = ErrorCode::kInvalidArgument;
  EXPECT_ERROR(load_combined_params(p, bytes + "x"), kInv, "1 bytes are left after the 2 tensors");
  EXPECT_ERROR(load_combined_params(p, serialize_tensor_stream({params["a"]})), kInv, "first missing: 'b'");
  std::map<std::string, TensorData> wrong{{"a", make_tensor(DType::kFloat32, {2, 5}, 1)}, {"b", params["b"]}};
  EXPECT_ERROR(load_combined_params(p, save_combined_params(wrong)), kInv,
               "'a' is float32 in the file but int32");
  std::map<std::string, TensorData> wrong2{{"a", params["a"]}, {"b", make_tensor(DType::kFloat32, {4}, 1)}};
  EXPECT_ERROR(load_combined_params(p, save_combined_params(wrong2)), kInv, "'b' has dims");
  TensorData bad = make_tensor(DType::kFloat32, {3}, 1);
  bad.data.pop_back();
  EXPECT_ERROR(save_combined_params({{"b", bad}}), kInv, "holds 11 bytes");
}

// ---- .pdiparams.info -------------------------------------------------------------------------------

TEST(ParamsInfo, RoundTripAndHostile) {
  std::map<std::string, ParamInfo> info{{"linear_0.w_0", {"fc.weight", false, true}},
                                        {"bn.w_1", {"bn._mean", true, false}}};
  std::string bytes = serialize_params_info(info);
  EXPECT_EQ(parse_params_info(bytes), info);
  EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02", 2));
  for (size_t n = 0; n < bytes.size(); ++n) {
    ErrorCode c = ErrorCode::kInternal;
    std::string m = error_of([&] { parse_params_info(bytes.substr(0, n)); }, &c);
    EXPECT_EQ(c, ErrorCode::kInvalidArgument) << n << ": " << m;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string c = bytes;
    c[i] = static_cast<char>(c[i] ^ 0xff);
    try {
      parse_params_info(c);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_ERROR(parse_params_info(std::string("\x80\x02]q\x00.", 6)), ErrorCode::kInvalidArgument,
               "unsupported pickle opcode 0x5d");
  // One entry: written with SETITEM, as Python does for a batch of one.
  std::map<std::string, ParamInfo> one{{"w", {"fc.w", false, true}}};
  EXPECT_EQ(parse_params_info(serialize_params_info(one)), one);
  // Many entries: SETITEMS batches of 1000 (+ a batch of one at the end).
  std::map<std::string, ParamInfo> many;
  for (int i = 0; i < 1001; ++i)
    many["p" + std::to_string(i)] = {"m.p" + std::to_string(i), i % 2 == 0, true};
  EXPECT_EQ(parse_params_info(serialize_params_info(many)), many);
}

TEST(Program, NanAttributesCompareEqual) {
  Program p;
  OpDesc op;
  op.type = "scale";
  op.set_attr("scale", std::numeric_limits<float>::quiet_NaN());
  op.set_attr("vals", std::vector<double>{std::numeric_limits<double>::quiet_NaN()});
  p.global_block().append_op(op);
  Program q = Program::parse(p.serialize());
  EXPECT_EQ(p, q);
  EXPECT_TRUE(attr_equal(Attribute(0.f), Attribute(0.f)));
  EXPECT_FALSE(attr_equal(Attribute(0.f), Attribute(-0.f)));
  EXPECT_FALSE(attr_equal(Attribute(int32_t{1}), Attribute(int64_t{1})));
}
