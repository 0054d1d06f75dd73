// export_paddle_dialect: native oar ops -> PaddlePaddle op types. Each mapped op is recorded by hand as
// a native program (feed -> oar.X -> fetch), exported, checked for Paddle's types, slots and attributes,
// serialized and parsed back, run with the Executor and compared with the eager result of call_op.
#include <gtest/gtest.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/ops_manip.h>
#include <oar/core/ops_nn.h>
#include <oar/ir/executor.h>
#include <oar/ir/op_version.h>
#include <oar/ir/paddle_export.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

using namespace oar;
using namespace oar::ir;

namespace {

using AttrList = std::vector<std::pair<std::string, Attribute>>;

VarDesc tensor_var(const std::string& name, DType dtype, std::vector<int64_t> shape,
                   bool persistable = false) {
  VarDesc v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.persistable = persistable;
  return v;
}

void add_feed_fetch_vars(Block& g) {
  VarDesc feed;
  feed.name = kFeedVarName;
  feed.type = VarType::kFeedMinibatch;
  feed.persistable = true;
  g.add_var(feed);
  VarDesc fetch = feed;
  fetch.name = kFetchVarName;
  fetch.type = VarType::kFetchList;
  g.add_var(fetch);
}

void add_feed(Block& g, const std::string& var, int32_t col) {
  OpDesc f;
  f.type = "feed";
  f.set_input("X", {kFeedVarName});
  f.set_output("Out", {var});
  f.set_attr("col", col);
  g.append_op(f);
}

void add_fetch(Block& g, const std::string& var, int32_t col) {
  OpDesc f;
  f.type = "fetch";
  f.set_input("X", {var});
  f.set_output("Out", {kFetchVarName});
  f.set_attr("col", col);
  g.append_op(f);
}

Attribute to_ir(const AttrValue& v) {
  return std::visit([](const auto& x) -> Attribute { return x; }, v);
}

// A native op as static mode records it: slots named after the OpDef, every attribute completed with
// its default.
OpDesc native_op(const OpDef& def, const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                 const Attrs& attrs) {
  OpDesc op;
  op.type = std::string("oar.") + def.name;
  if (def.variadic) {
    op.set_input(def.inputs[0], ins);
  } else {
    for (size_t i = 0; i < def.inputs.size(); ++i) op.set_input(def.inputs[i], {ins.at(i)});
  }
  for (size_t i = 0; i < def.outputs.size(); ++i) op.set_output(def.outputs[i], {outs.at(i)});
  for (const AttrDef& a : def.attrs) {
    const AttrValue* v = attrs.find(a.name);
    op.set_attr(a.name, to_ir(v != nullptr ? *v : a.default_value));
  }
  return op;
}

struct Case {
  Program program;
  std::map<std::string, Tensor> feeds;
  std::vector<std::string> fetched;  // output variable names, by fetch col
  std::vector<Tensor> eager;         // what call_op returned
};

// feed x0..xn -> oar.<name> -> fetch every output (`fetch_outputs`: which outputs are fetched; all
// when empty).
Case make_case(const std::string& name, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
               std::vector<int> fetch_outputs = {}) {
  const OpDef& def = OpRegistry::get().at(name);
  Case c;
  c.eager = call_op(def, inputs, attrs);
  Block& g = c.program.global_block();
  add_feed_fetch_vars(g);
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string n = "in" + std::to_string(i);
    g.add_var(tensor_var(n, inputs[i].dtype(), inputs[i].dims().to_vector()));
    ins.push_back(n);
    c.feeds[n] = inputs[i];
    add_feed(g, n, static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < def.outputs.size(); ++i) {
    std::string n = std::string("out_") + def.outputs[i];
    g.add_var(tensor_var(n, c.eager[i].dtype(), c.eager[i].dims().to_vector()));
    outs.push_back(n);
  }
  g.append_op(native_op(def, ins, outs, attrs));
  if (fetch_outputs.empty())
    for (size_t i = 0; i < outs.size(); ++i) fetch_outputs.push_back(static_cast<int>(i));
  for (size_t k = 0; k < fetch_outputs.size(); ++k) {
    add_fetch(g, outs[fetch_outputs[k]], static_cast<int32_t>(k));
    c.fetched.push_back(outs[fetch_outputs[k]]);
  }
  std::vector<Tensor> kept;
  for (int i : fetch_outputs) kept.push_back(c.eager[i]);
  c.eager = kept;
  return c;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-6) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  std::vector<double> a = ops::cast(got.cpu(), DType::kFloat64).to_vector<double>();
  std::vector<double> b = ops::cast(want.cpu(), DType::kFloat64).to_vector<double>();
  bool exact = !is_floating(want.dtype());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " element " << i;
    } else if (exact || std::isinf(b[i])) {
      ASSERT_EQ(a[i], b[i]) << what << " element " << i;
    } else {
      ASSERT_LE(std::fabs(a[i] - b[i]), tol + tol * std::fabs(b[i]))
          << what << " element " << i << ": " << a[i] << " vs " << b[i];
    }
  }
}

// A .npy (version 1.0) of a tensor, for the PaddlePaddle check scripts.
void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  switch (t.dtype()) {
    case DType::kBool:
      descr = "|b1";
      break;
    case DType::kInt32:
      descr = "<i4";
      break;
    case DType::kInt64:
      descr = "<i8";
      break;
    case DType::kFloat32:
      descr = "<f4";
      break;
    case DType::kFloat64:
      descr = "<f8";
      break;
    case DType::kComplex64:  // the fft programs' feeds
      descr = "<c8";
      break;
    case DType::kComplex128:
      descr = "<c16";
      break;
    default:
      throw std::runtime_error(std::string("write_npy: dtype ") + dtype_name(t.dtype()));
  }
  std::string shape = "(";
  for (int64_t d : t.dims().to_vector()) shape += std::to_string(d) + ", ";
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  std::string data(static_cast<size_t>(t.numel() * dtype_size(t.dtype())), '\0');
  t.cpu().contiguous().copy_to_host(data.data(), data.size());
  write_file_bytes(path, out + data);
}

// With OAR_IR_EXPORT_DIR set, every checked case is written as <dir>/cases/NNN_<test>.pdmodel with its
// feeds (.feed.<name>.npy) and oar's eager outputs (.fetch<k>.npy), for check_oar_exported.py to run
// in PaddlePaddle.
void dump_case(const Program& e, const Case& c) {
  const char* dir = std::getenv("OAR_IR_EXPORT_DIR");
  if (dir == nullptr) return;
  static int n = 0;
  std::string cases = std::string(dir) + "/cases";
  std::system(("mkdir -p '" + cases + "'").c_str());
  char num[16];
  std::snprintf(num, sizeof num, "%03d", n++);
  std::string base =
      cases + "/" + num + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  e.save(base + ".pdmodel");
  for (auto& [name, t] : c.feeds) write_npy(base + ".feed." + name + ".npy", t);
  for (size_t k = 0; k < c.eager.size(); ++k)
    write_npy(base + ".fetch" + std::to_string(k) + ".npy", c.eager[k]);
}

// The op types of block 0 other than feed / fetch.
std::vector<std::string> body_types(const Program& p) {
  std::vector<std::string> t;
  for (const OpDesc& op : p.global_block().ops())
    if (op.type != "feed" && op.type != "fetch") t.push_back(op.type);
  return t;
}

const OpDesc& first_op(const Program& p, const std::string& type) {
  for (const OpDesc& op : p.global_block().ops())
    if (op.type == type) return op;
  throw std::runtime_error("no op " + type);
}

// Exports, checks the types, round-trips through the wire format, runs on the Executor and compares.
Program check(const Case& c, const std::vector<std::string>& want_types, double tol = 1e-6) {
  ExportReport rep;
  Program e = export_paddle_dialect(c.program, &rep);
  EXPECT_TRUE(rep.complete()) << rep.to_string();
  EXPECT_EQ(body_types(e), want_types) << rep.to_string();
  e.validate();
  check_op_versions(e, /*require_known_ops=*/true);  // every emitted type is one oar knows
  for (const std::string& t : body_types(e)) {
    EXPECT_NE(find_op_translation(t), nullptr) << t;
    EXPECT_TRUE(e.op_version(t).has_value()) << t << " missing from op_version_map";
  }
  Program parsed = Program::parse(e.serialize());
  EXPECT_EQ(parsed, e);
  dump_case(e, c);
  Executor ex(parsed);
  std::vector<Tensor> got = ex.run(c.feeds);
  EXPECT_EQ(got.size(), c.eager.size());
  for (size_t i = 0; i < got.size() && i < c.eager.size(); ++i)
    expect_same(got[i], c.eager[i], want_types.empty() ? "?" : want_types[0] + " output " + std::to_string(i),
                tol);
  return e;
}

Tensor rand(Dims d, double lo = -1, double hi = 1, uint64_t seed = 1, DType dt = DType::kFloat32) {
  return ops::uniform(d, lo, hi, dt, seed);
}
Tensor ivec(std::vector<int64_t> v, Dims d, DType dt = DType::kInt64) {
  return ops::cast(Tensor::from_vector(v, d, DType::kInt64), dt);
}

// Checks attr `name` of `op` equals `want` (same Paddle attribute type).
void expect_attr(const OpDesc& op, const std::string& name, const Attribute& want) {
  const Attribute* a = op.find_attr(name);
  ASSERT_NE(a, nullptr) << op.type << " has no attribute " << name;
  EXPECT_TRUE(attr_equal(*a, want)) << op.type << "." << name << " = " << attr_to_string(*a) << " ("
                                    << attr_type_name(attr_type(*a)) << "), want " << attr_to_string(want)
                                    << " (" << attr_type_name(attr_type(want)) << ")";
}

// ---- elementwise ----------------------------------------------------------------------------------------

TEST(PaddleExport, ElementwiseBroadcasting) {
  struct B {
    const char *oar, *paddle;
  };
  std::vector<B> ops = {{"add", "elementwise_add"},      {"subtract", "elementwise_sub"},
                        {"multiply", "elementwise_mul"}, {"divide", "elementwise_div"},
                        {"maximum", "elementwise_max"},  {"minimum", "elementwise_min"},
                        {"pow", "elementwise_pow"}};
  // Same shapes, y of lower rank, x of lower rank, both sides broadcast.
  std::vector<std::pair<Dims, Dims>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3, 4}, {4}}, {{3, 1}, {2, 3, 4}}, {{2, 1, 4}, {3, 1}}};
  for (const B& b : ops) {
    for (auto& [xs, ys] : shapes) {
      Tensor x = rand(xs, 0.5, 2, 3), y = rand(ys, 0.5, 2, 4);
      Program e = check(make_case(b.oar, {x, y}), {b.paddle});
      const OpDesc& op = first_op(e, b.paddle);
      EXPECT_EQ(op.input("X"), std::vector<std::string>{"in0"});
      EXPECT_EQ(op.input("Y"), std::vector<std::string>{"in1"});
      EXPECT_EQ(op.output("Out"), std::vector<std::string>{"out_out"});
      expect_attr(op, "axis", int32_t{-1});
    }
  }
}

TEST(PaddleExport, OtherDtypes) {
  for (DType d : {DType::kFloat64, DType::kInt32, DType::kInt64}) {
    Tensor x = ops::cast(rand({2, 3}, -5, 5, 70, DType::kFloat64), d);
    Tensor y = ops::cast(rand({3}, 1, 5, 71, DType::kFloat64), d);
    for (auto [n, p] : std::vector<std::pair<const char*, const char*>>{{"add", "elementwise_add"},
                                                                        {"subtract", "elementwise_sub"},
                                                                        {"multiply", "elementwise_mul"},
                                                                        {"maximum", "elementwise_max"},
                                                                        {"minimum", "elementwise_min"}})
      check(make_case(n, {x, y}), {p});
    check(make_case("matmul", {x, ops::cast(rand({3, 2}, -3, 3, 72, DType::kFloat64), d)}), {"matmul_v2"});
    check(make_case("sum", {x}, Attrs{{"axis", std::vector<int64_t>{1}}}), {"reduce_sum"});
    check(make_case("max", {x}), {"reduce_max"});
    check(make_case("concat", {x, x}, Attrs{{"axis", int64_t{0}}}), {"concat"});
    check(make_case("abs", {x}), {"abs"});
    check(make_case("cumsum", {x}, Attrs{{"axis", int64_t{1}}}), {"cumsum"});
    check(make_case("argmax", {x}, Attrs{{"axis", int64_t{1}}}), {"arg_max"});
  }
  check(make_case("exp", {rand({4}, -1, 1, 73, DType::kFloat64)}), {"exp"});
  check(make_case("softmax", {rand({2, 4}, -1, 1, 74, DType::kFloat64)}), {"softmax"});
}

TEST(PaddleExport, ElementwiseUnbroadcastableShapesStayNative) {
  Case c = make_case("add", {rand({2, 3}), rand({2, 3})});
  // Declare y with a shape that cannot broadcast against x: the exporter must not emit Paddle's op.
  c.program.global_block().find_var("in1")->shape = {4};
  ExportReport rep;
  Program e = export_paddle_dialect(c.program, &rep);
  EXPECT_EQ(body_types(e), std::vector<std::string>{"oar.add"});
  ASSERT_EQ(rep.kept.size(), 1u);
  EXPECT_NE(rep.to_string().find("not broadcastable"), std::string::npos) << rep.to_string();
}

TEST(PaddleExport, IntegerDivisionAndComparisons) {
  Tensor a = ivec({7, -7, 7, -7, 9, 0}, {2, 3}), b = ivec({2, 2, -2, -2, 4, 3}, {2, 3});
  check(make_case("floor_divide", {a, b}), {"elementwise_floordiv"});
  check(make_case("remainder", {a, b}), {"elementwise_mod"});
  Tensor fx = rand({2, 3}, -2, 2, 5), fy = rand({2, 3}, -2, 2, 6);
  check(make_case("remainder", {fx, fy}), {"elementwise_mod"});
  for (const char* n : {"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal"}) {
    Program e = check(make_case(n, {a, ivec({2}, {1})}), {n});
    expect_attr(first_op(e, n), "axis", int32_t{-1});
  }
  Tensor p = ops::greater_than(fx, ops::full(Dims{}, 0.0)), q = ops::greater_than(fy, ops::full(Dims{}, 0.0));
  for (const char* n : {"logical_and", "logical_or", "logical_xor"}) {
    Program e = check(make_case(n, {p, q}), {n});
    EXPECT_TRUE(first_op(e, n).attrs.empty());
  }
  check(make_case("logical_not", {p}), {"logical_not"});
}

// ---- unary and activations ------------------------------------------------------------------------------

TEST(PaddleExport, UnaryOps) {
  Tensor unit = rand({2, 5}, 0.1, 0.9, 7);  // inside every domain below
  for (const char* n : {"relu",   "sigmoid", "tanh",  "exp",   "log",  "sqrt",       "rsqrt",  "abs",
                        "square", "sin",     "cos",   "tan",   "asin", "acos",       "atan",   "sinh",
                        "cosh",   "asinh",   "atanh", "floor", "ceil", "reciprocal", "erf",    "erfinv",
                        "log1p",  "expm1",   "log2",  "log10", "silu", "lgamma",     "digamma"})
    check(make_case(n, {unit}), {n});
  check(make_case("acosh", {ops::add(unit, ops::full(Dims{}, 1.0))}), {"acosh"});
  Tensor wide = Tensor::from_vector(std::vector<float>{-2.5f, -1.5f, -0.5f, 0.f, 0.5f, 1.5f, 2.5f, 3.7f},
                                    Dims{2, 4}, DType::kFloat32);
  for (const char* n : {"sign", "trunc", "floor", "relu", "abs"}) check(make_case(n, {wide}), {n});
  // Paddle 3.3's round takes halves to even (checked with the wheel); oar's goes away from zero.
  ExportReport rep;
  export_paddle_dialect(make_case("round", {wide}).program, &rep);
  EXPECT_NE(rep.to_string().find("oar.round x1 (Paddle's round rounds halves to even"), std::string::npos)
      << rep.to_string();
  Program e = check(make_case("neg", {wide}), {"scale"});
  expect_attr(first_op(e, "scale"), "scale", -1.0f);
  expect_attr(first_op(e, "scale"), "bias", 0.0f);
  check(make_case("neg", {ivec({1, -2, 3}, {3})}), {"scale"});
  check(make_case("copy", {wide}), {"assign"});
}

TEST(PaddleExport, ActivationsWithAttributes) {
  Tensor x = rand({3, 4}, -4, 4, 9);
  for (int64_t approx : {0, 1}) {
    Program e = check(make_case("gelu", {x}, Attrs{{"approximate", approx}}), {"gelu"});
    expect_attr(first_op(e, "gelu"), "approximate", approx != 0);
  }
  Program e = check(make_case("leaky_relu", {x}, Attrs{{"negative_slope", 0.2}}), {"leaky_relu"});
  expect_attr(first_op(e, "leaky_relu"), "alpha", 0.2f);
  check(make_case("elu", {x}, Attrs{{"alpha", 0.5}}), {"elu"});
  e = check(make_case("softplus", {x}, Attrs{{"beta", 2.0}, {"threshold", 3.0}}), {"softplus"});
  expect_attr(first_op(e, "softplus"), "threshold", 3.0f);
  e = check(make_case("hardswish", {x}), {"hard_swish"});
  expect_attr(first_op(e, "hard_swish"), "offset", 3.0f);
  for (OpDesc& op : e.global_block().mutable_ops())
    if (op.type == "hard_swish") op.set_attr("offset", 2.0f);  // a hard_swish oar does not implement
  EXPECT_THROW(Executor{e}, Error);
  check(make_case("hardsigmoid", {x}, Attrs{{"slope", 0.25}, {"offset", 0.4}}), {"hard_sigmoid"});
  e = check(make_case("softmax", {x}, Attrs{{"axis", int64_t{0}}}), {"softmax"});
  expect_attr(first_op(e, "softmax"), "axis", int32_t{0});
  check(make_case("log_softmax", {x}), {"log_softmax"});
  e = check(make_case("clip", {x}, Attrs{{"min", -0.5}, {"max", 0.25}}), {"clip"});
  expect_attr(first_op(e, "clip"), "min", -0.5f);
  check(make_case("clip", {x}, Attrs{{"max", 1.0}}), {"clip"});  // min -inf (the default)
}

// ---- dtype, creation, reductions ------------------------------------------------------------------------

TEST(PaddleExport, CastFillEye) {
  Tensor x = rand({2, 3}, -3, 3, 11);
  Program e = check(make_case("cast", {x}, Attrs{{"dtype", static_cast<int64_t>(DType::kInt32)}}), {"cast"});
  expect_attr(first_op(e, "cast"), "in_dtype", int32_t{5});   // FP32
  expect_attr(first_op(e, "cast"), "out_dtype", int32_t{2});  // INT32
  check(make_case("cast", {ivec({1, 2, 3}, {3})}, Attrs{{"dtype", static_cast<int64_t>(DType::kFloat64)}}),
        {"cast"});

  e = check(make_case("fill", {},
                      Attrs{{"shape", std::vector<int64_t>{2, 3}},
                            {"value", 0.1},
                            {"dtype", static_cast<int64_t>(DType::kFloat64)}}),
            {"fill_constant"}, 0);
  const OpDesc& f = first_op(e, "fill_constant");
  expect_attr(f, "shape", std::vector<int64_t>{2, 3});
  expect_attr(f, "dtype", int32_t{6});
  expect_attr(f, "str_value", std::string("0.10000000000000001"));  // exact in float64
  // An int64 beyond float precision survives through str_value.
  e = check(make_case("fill", {},
                      Attrs{{"shape", std::vector<int64_t>{2}},
                            {"value", 9007199254740993.0},
                            {"dtype", static_cast<int64_t>(DType::kInt64)}}),
            {"fill_constant"});
  check(make_case("fill", {},
                  Attrs{{"shape", std::vector<int64_t>{}},
                        {"value", -INFINITY},
                        {"dtype", static_cast<int64_t>(DType::kFloat32)}}),
        {"fill_constant"});
  for (auto [d, v] :
       std::vector<std::pair<DType, double>>{{DType::kBool, 1}, {DType::kInt32, -7}, {DType::kFloat32, 1e30}})
    check(make_case(
              "fill", {},
              Attrs{{"shape", std::vector<int64_t>{3}}, {"value", v}, {"dtype", static_cast<int64_t>(d)}}),
          {"fill_constant"});
  e = check(make_case("eye", {},
                      Attrs{{"num_rows", int64_t{3}},
                            {"num_columns", int64_t{4}},
                            {"dtype", static_cast<int64_t>(DType::kFloat32)}}),
            {"eye"});
  expect_attr(first_op(e, "eye"), "num_rows", int64_t{3});
}

TEST(PaddleExport, Reductions) {
  Tensor x = rand({2, 3, 4}, 0.5, 1.5, 12);
  struct R {
    const char *oar, *paddle;
  };
  for (R r : {R{"sum", "reduce_sum"}, R{"mean", "reduce_mean"}, R{"max", "reduce_max"},
              R{"min", "reduce_min"}, R{"prod", "reduce_prod"}}) {
    Program e =
        check(make_case(r.oar, {x}, Attrs{{"axis", std::vector<int64_t>{1, -1}}, {"keepdim", int64_t{1}}}),
              {r.paddle}, 1e-5);
    expect_attr(first_op(e, r.paddle), "dim", std::vector<int32_t>{1, 2});
    expect_attr(first_op(e, r.paddle), "keep_dim", true);
    expect_attr(first_op(e, r.paddle), "reduce_all", false);
    e = check(make_case(r.oar, {x}), {r.paddle}, 1e-5);  // all axes
    expect_attr(first_op(e, r.paddle), "reduce_all", true);
  }
  // oar widens an int32 sum to int64: out_dtype says so.
  Program e = check(
      make_case("sum", {ivec({1, 2, 3, 4}, {2, 2}, DType::kInt32)}, Attrs{{"axis", std::vector<int64_t>{0}}}),
      {"reduce_sum"});
  expect_attr(first_op(e, "reduce_sum"), "out_dtype", int32_t{3});
  Tensor b = ops::greater_than(rand({3, 4}, -1, 1, 13), ops::full(Dims{}, 0.0));
  for (const char* n : {"all", "any"}) {
    e = check(make_case(n, {b}, Attrs{{"axis", std::vector<int64_t>{1}}}), {std::string("reduce_") + n});
    expect_attr(first_op(e, std::string("reduce_") + n), "dim", std::vector<int64_t>{1});
  }
  // Paddle's reduce_all takes bool only.
  ExportReport rep;
  export_paddle_dialect(make_case("all", {x}).program, &rep);
  EXPECT_EQ(rep.num_kept(), 1);
}

TEST(PaddleExport, ArgMaxArgMinCumsum) {
  Tensor x = rand({3, 5}, -1, 1, 14);
  for (const char* n : {"argmax", "argmin"}) {
    std::string p = std::string(n) == "argmax" ? "arg_max" : "arg_min";
    Program e = check(make_case(n, {x}, Attrs{{"axis", int64_t{1}}, {"keepdim", int64_t{1}}}), {p});
    expect_attr(first_op(e, p), "axis", int64_t{1});
    expect_attr(first_op(e, p), "dtype", int32_t{3});
    check(make_case(n, {x}, Attrs{{"flatten", int64_t{1}}}), {p});
    check(make_case(n, {x}, Attrs{{"axis", int64_t{-2}}}), {p});
  }
  check(make_case("cumsum", {x}, Attrs{{"axis", int64_t{0}}}), {"cumsum"});
  check(make_case("cumsum", {x}, Attrs{{"axis", int64_t{1}}, {"reverse", int64_t{1}}}), {"cumsum"});
  check(make_case("cumsum", {x}, Attrs{{"flatten", int64_t{1}}}), {"cumsum"});
}

// ---- matmul, indexing, manipulation ---------------------------------------------------------------------

TEST(PaddleExport, MatmulConcatIndexing) {
  Tensor a = rand({2, 3, 4}, -1, 1, 15), b = rand({5, 4}, -1, 1, 16);
  Program e = check(make_case("matmul", {a, b}, Attrs{{"transpose_y", int64_t{1}}}), {"matmul_v2"});
  expect_attr(first_op(e, "matmul_v2"), "trans_x", false);
  expect_attr(first_op(e, "matmul_v2"), "trans_y", true);
  check(make_case("matmul", {rand({4}), rand({4, 2})}), {"matmul_v2"});

  e = check(make_case("concat", {rand({2, 3}), rand({2, 1}), rand({2, 2})}, Attrs{{"axis", int64_t{-1}}}),
            {"concat"});
  EXPECT_EQ(first_op(e, "concat").input("X"), (std::vector<std::string>{"in0", "in1", "in2"}));

  Tensor idx = ivec({2, 0, 2}, {3});
  e = check(make_case("index_select", {a, idx}, Attrs{{"axis", int64_t{2}}}), {"index_select"});
  expect_attr(first_op(e, "index_select"), "dim", int32_t{2});
  Tensor cond = ops::greater_than(rand({2, 3}, -1, 1, 17), ops::full(Dims{}, 0.0));
  e = check(make_case("where", {cond, rand({2, 3}), rand({2, 3}, -1, 1, 18)}), {"where"});
  EXPECT_EQ(first_op(e, "where").input("Condition"), std::vector<std::string>{"in0"});
  check(make_case("gather_nd", {a, ivec({1, 2, 0, 1}, {2, 2})}), {"gather_nd"});
  Tensor sq = rand({4, 4}, -1, 1, 19);
  e = check(make_case("tril", {sq}, Attrs{{"diagonal", int64_t{-1}}}), {"tril_triu"});
  expect_attr(first_op(e, "tril_triu"), "lower", true);
  e = check(make_case("triu", {sq}, Attrs{{"diagonal", int64_t{1}}}), {"tril_triu"});
  expect_attr(first_op(e, "tril_triu"), "lower", false);
  e = check(make_case("topk", {sq}, Attrs{{"k", int64_t{2}}, {"largest", int64_t{0}}}), {"top_k_v2"});
  EXPECT_EQ(first_op(e, "top_k_v2").output("Indices"), std::vector<std::string>{"out_indices"});
  check(make_case("sort", {sq}, Attrs{{"axis", int64_t{0}}, {"descending", int64_t{1}}}), {"argsort"});
  e = check(make_case("pad", {sq}, Attrs{{"pads", std::vector<int64_t>{1, 0, 2, 1}}, {"value", 1.5}}),
            {"pad"});
  expect_attr(first_op(e, "pad"), "paddings", std::vector<int32_t>{1, 0, 2, 1});
}

TEST(PaddleExport, WhereBroadcastsLikePaddleWhere) {
  Tensor cond = ops::greater_than(rand({2, 3}), ops::full(Dims{}, 0.0));
  Tensor x = rand({2, 3}, -1, 1, 80), row = rand({3}, -1, 1, 81), scalar = ops::full(Dims{}, -5.0);
  // Known shapes: expand_v2 to [2, 3] for the smaller operands.
  Program e = check(make_case("where", {cond, x, row}), {"expand_v2", "where"});
  expect_attr(first_op(e, "expand_v2"), "shape", std::vector<int32_t>{2, 3});
  e = check(make_case("where", {cond.slice(0, 0, 1), scalar, row}), {"expand_v2", "expand_v2", "where"});
  e = check(make_case("where", {cond.slice(1, 0, 1), scalar, row}),
            {"expand_v2", "expand_v2", "expand_v2", "where"});
  // A batch of unknown size: expand_as_v2 to the operand that has the result's shape.
  Case c = make_case("where", {cond, x, scalar});
  for (const char* n : {"in0", "in1", "out_out"}) c.program.global_block().find_var(n)->shape[0] = -1;
  e = check(c, {"expand_as_v2", "where"});
  EXPECT_EQ(first_op(e, "expand_as_v2").input("Y"), std::vector<std::string>{"in0"});
  expect_attr(first_op(e, "expand_as_v2"), "target_shape", std::vector<int32_t>{-1, 3});
  // Unknown extents and no operand of the result's shape: kept native.
  Case d = make_case("where", {cond.slice(1, 0, 1), x.slice(0, 0, 1), scalar});
  for (const char* n : {"in0", "in1", "out_out"}) {
    auto& s = d.program.global_block().find_var(n)->shape;
    for (auto& v : s) v = v == 1 ? v : -1;
  }
  d.program.global_block().find_var("out_out")->shape = {-1, -1};
  ExportReport rep;
  Program k = export_paddle_dialect(d.program, &rep);
  EXPECT_EQ(body_types(k), std::vector<std::string>{"oar.where"});
  EXPECT_EQ(k.global_block().vars().size(), d.program.global_block().vars().size());  // no stray temporaries
}

TEST(PaddleExport, ReflectPadOf3DStaysNative) {
  ExportReport rep;
  Program e;
  // Non-constant padding of a 3-D tensor (pad3d wants 4-D / 5-D).
  e = export_paddle_dialect(
      make_case("pad", {rand({1, 4, 4})},
                Attrs{{"pads", std::vector<int64_t>{0, 0, 0, 0, 1, 1}}, {"mode", int64_t{1}}})
          .program,
      &rep);
  EXPECT_EQ(body_types(e), std::vector<std::string>{"oar.pad"});
  EXPECT_NE(rep.to_string().find("4-D and 5-D"), std::string::npos) << rep.to_string();
}

// oar.assign(dst, src) writes src into dst: Paddle's assign with Out = dst.
TEST(PaddleExport, InPlaceAssign) {
  Tensor dst = rand({2, 3}, -1, 1, 20), src = rand({2, 3}, -1, 1, 21);
  const OpDef& def = OpRegistry::get().at("assign");
  Program p;
  Block& g = p.global_block();
  add_feed_fetch_vars(g);
  g.add_var(tensor_var("dst", DType::kFloat32, {2, 3}));
  g.add_var(tensor_var("src", DType::kFloat32, {2, 3}));
  add_feed(g, "dst", 0);
  add_feed(g, "src", 1);
  g.append_op(native_op(def, {"dst", "src"}, {}, {}));
  add_fetch(g, "dst", 0);
  Program e = export_paddle_dialect(p);
  ASSERT_EQ(body_types(e), std::vector<std::string>{"assign"});
  EXPECT_EQ(first_op(e, "assign").input("X"), std::vector<std::string>{"src"});
  EXPECT_EQ(first_op(e, "assign").output("Out"), std::vector<std::string>{"dst"});
  Executor ex(e);
  Tensor want = ops::copy(dst);
  ops::assign(want, src);
  expect_same(ex.run({{"dst", dst}, {"src", src}})[0], want, "assign");
}

// ---- nn -------------------------------------------------------------------------------------------------

TEST(PaddleExport, LayerNorm) {
  Tensor x = rand({2, 3, 4}, -2, 2, 22);
  // weight / bias with the 2-D normalized shape: Paddle wants them 1-D, so reshape2 ops come first.
  Case c = make_case("layer_norm", {x, rand({3, 4}, 0.5, 1.5, 23), rand({3, 4}, -1, 1, 24)},
                     Attrs{{"begin_norm_axis", int64_t{1}}, {"epsilon", 1e-3}}, {0});
  Program e = check(c, {"reshape2", "reshape2", "layer_norm"}, 1e-5);
  const OpDesc& ln = first_op(e, "layer_norm");
  expect_attr(ln, "begin_norm_axis", int32_t{1});
  expect_attr(ln, "epsilon", 1e-3f);
  EXPECT_EQ(ln.output("Y"), std::vector<std::string>{"out_out"});
  ASSERT_EQ(ln.output("Mean").size(), 1u);
  const VarDesc* mean = e.global_block().find_var(ln.output("Mean")[0]);
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->shape, std::vector<int64_t>{2});
  const OpDesc& r = first_op(e, "reshape2");
  ASSERT_EQ(r.output("XShape").size(), 1u);
  EXPECT_EQ(e.global_block().find_var(r.output("XShape")[0])->shape, (std::vector<int64_t>{0, 3, 4}));
  // 1-D weight: no reshape.
  check(make_case("layer_norm", {x, rand({4}, 0.5, 1.5, 25), rand({4})},
                  Attrs{{"begin_norm_axis", int64_t{2}}}, {0}),
        {"layer_norm"}, 1e-5);
  // Its rstd output fetched: Paddle's layer_norm has no rstd, so the op stays native.
  ExportReport rep;
  Program k = export_paddle_dialect(
      make_case("layer_norm", {x, rand({4}), rand({4})}, Attrs{{"begin_norm_axis", int64_t{2}}}, {0, 2})
          .program,
      &rep);
  EXPECT_EQ(body_types(k), std::vector<std::string>{"oar.layer_norm"});
  EXPECT_NE(rep.to_string().find("rstd"), std::string::npos) << rep.to_string();
}

TEST(PaddleExport, Convolution) {
  Tensor x = rand({2, 4, 7, 6}, -1, 1, 26), w = rand({6, 2, 3, 2}, -1, 1, 27);
  Attrs a{{"strides", std::vector<int64_t>{2, 1}},
          {"paddings", std::vector<int64_t>{1, 0, 2, 1}},
          {"dilations", std::vector<int64_t>{1, 2}},
          {"groups", int64_t{2}}};
  Program e = check(make_case("conv", {x, w}, a), {"conv2d"}, 1e-5);
  const OpDesc& c = first_op(e, "conv2d");
  EXPECT_EQ(c.input("Input"), std::vector<std::string>{"in0"});
  EXPECT_EQ(c.input("Filter"), std::vector<std::string>{"in1"});
  EXPECT_EQ(c.output("Output"), std::vector<std::string>{"out_out"});
  expect_attr(c, "paddings", std::vector<int32_t>{1, 0, 2, 1});
  expect_attr(c, "dilations", std::vector<int32_t>{1, 2});
  expect_attr(c, "groups", int32_t{2});
  expect_attr(c, "data_format", std::string("NCHW"));
  check(make_case("conv", {x, rand({3, 4, 3, 3})}), {"conv2d"}, 1e-5);  // defaults
  check(make_case("conv", {rand({1, 2, 4, 5, 4}), rand({3, 2, 2, 3, 2})},
                  Attrs{{"paddings", std::vector<int64_t>{1, 1, 0, 1, 1, 0}}}),
        {"conv3d"}, 1e-5);
  // 1-D, as paddle.nn.functional.conv1d writes it.
  e = check(make_case("conv", {rand({2, 4, 9}), rand({6, 2, 3})},
                      Attrs{{"strides", std::vector<int64_t>{2}},
                            {"paddings", std::vector<int64_t>{1, 2}},
                            {"dilations", std::vector<int64_t>{2}},
                            {"groups", int64_t{2}}}),
            {"unsqueeze2", "unsqueeze2", "conv2d", "squeeze2"}, 1e-5);
  expect_attr(first_op(e, "conv2d"), "paddings", std::vector<int32_t>{0, 0, 1, 2});
  expect_attr(first_op(e, "conv2d"), "strides", std::vector<int32_t>{1, 2});
}

TEST(PaddleExport, Pooling) {
  Tensor x = rand({2, 3, 7, 6}, -1, 1, 28);
  Attrs a{{"kernel_size", std::vector<int64_t>{3, 2}},
          {"strides", std::vector<int64_t>{2, 2}},
          {"paddings", std::vector<int64_t>{1, 1, 0, 1}}};
  Program e = check(make_case("max_pool", {x}, a, {0}), {"pool2d"});
  const OpDesc& p = first_op(e, "pool2d");
  expect_attr(p, "pooling_type", std::string("max"));
  expect_attr(p, "ksize", std::vector<int32_t>{3, 2});
  expect_attr(p, "paddings", std::vector<int32_t>{1, 1, 0, 1});
  expect_attr(p, "adaptive", false);
  // ceil_mode: exported when no window lies wholly in the padding (oar gives -inf there, Paddle
  // -FLT_MAX); here the last window of the width would.
  Attrs ceil{{"kernel_size", std::vector<int64_t>{2, 2}},
             {"strides", std::vector<int64_t>{2, 2}},
             {"ceil_mode", int64_t{1}}};
  e = check(make_case("max_pool", {x}, ceil, {0}), {"pool2d"});
  expect_attr(first_op(e, "pool2d"), "ceil_mode", true);
  check(make_case("avg_pool", {x}, ceil), {"pool2d"});
  Attrs empty_window = a;
  empty_window.set("ceil_mode", int64_t{1});
  ExportReport ceil_rep;
  export_paddle_dialect(make_case("max_pool", {x}, empty_window, {0}).program, &ceil_rep);
  EXPECT_NE(ceil_rep.to_string().find("wholly in the padding"), std::string::npos) << ceil_rep.to_string();
  for (int64_t excl : {0, 1}) {
    Attrs b = a;
    b.set("exclusive", excl);
    e = check(make_case("avg_pool", {x}, b), {"pool2d"});
    expect_attr(first_op(e, "pool2d"), "exclusive", excl != 0);
  }
  Attrs ad{{"kernel_size", std::vector<int64_t>{3, 4}}, {"adaptive", int64_t{1}}};
  check(make_case("avg_pool", {x}, ad), {"pool2d"});
  // Adaptive max: Paddle's pool2d picks other windows than its adaptive_max_pool2d (checked with the
  // wheel), so the latter's max_pool2d_with_index is written.
  e = check(make_case("max_pool", {x}, ad, {0}), {"max_pool2d_with_index"});
  EXPECT_EQ(first_op(e, "max_pool2d_with_index").output("Mask").size(), 1u);
  // 1-D pooling as Paddle writes it: over [N, C, 1, L].
  Tensor x1 = rand({2, 3, 9}, -1, 1, 62);
  Attrs a1{{"kernel_size", std::vector<int64_t>{3}},
           {"strides", std::vector<int64_t>{2}},
           {"paddings", std::vector<int64_t>{1, 0}}};
  e = check(make_case("max_pool", {x1}, a1, {0}), {"unsqueeze2", "pool2d", "squeeze2"});
  expect_attr(first_op(e, "pool2d"), "paddings", std::vector<int32_t>{0, 0, 1, 0});
  a1.set("exclusive", int64_t{0});
  check(make_case("avg_pool", {x1}, a1), {"unsqueeze2", "pool2d", "squeeze2"});
  Attrs ad1{{"kernel_size", std::vector<int64_t>{4}}, {"adaptive", int64_t{1}}};
  check(make_case("avg_pool", {x1}, ad1), {"unsqueeze2", "pool2d", "squeeze2"});
  check(make_case("max_pool", {x1}, ad1, {0}), {"unsqueeze2", "max_pool2d_with_index", "squeeze2"});
  // 3-D: pool3d.
  Tensor x3 = rand({1, 2, 5, 6, 4}, -1, 1, 63);
  Attrs a3{{"kernel_size", std::vector<int64_t>{2, 3, 2}},
           {"strides", std::vector<int64_t>{2, 2, 1}},
           {"paddings", std::vector<int64_t>{1, 0, 0, 1, 1, 0}}};
  e = check(make_case("max_pool", {x3}, a3, {0}), {"pool3d"});
  expect_attr(first_op(e, "pool3d"), "data_format", std::string("NCDHW"));
  check(make_case("avg_pool", {x3}, a3), {"pool3d"});
  Attrs ad3{{"kernel_size", std::vector<int64_t>{2, 3, 2}}, {"adaptive", int64_t{1}}};
  check(make_case("avg_pool", {x3}, ad3), {"pool3d"});
  export_paddle_dialect(make_case("max_pool", {x3}, ad3, {0}).program, &ceil_rep);
  EXPECT_EQ(ceil_rep.num_kept(), 1);
  // The mask fetched, or a divisor override: no pool2d equivalent.
  ExportReport rep;
  export_paddle_dialect(make_case("max_pool", {x}, a).program, &rep);
  EXPECT_EQ(rep.num_kept(), 1);
  Attrs d = a;
  d.set("divisor", int64_t{5});
  export_paddle_dialect(make_case("avg_pool", {x}, d).program, &rep);
  EXPECT_EQ(rep.num_kept(), 1);
}

TEST(PaddleExport, MoreOneToOneOps) {
  const float nan = NAN, inf = INFINITY;
  Tensor a = Tensor::from_vector(std::vector<float>{1, nan, 3, -1, 0, -2}, Dims{2, 3}, DType::kFloat32);
  Tensor b = Tensor::from_vector(std::vector<float>{nan, 2, 1, 0, 0, 5}, Dims{2, 3}, DType::kFloat32);
  check(make_case("fmax", {a, b}), {"elementwise_fmax"});
  check(make_case("fmin", {a, b}), {"elementwise_fmin"});
  Tensor h = Tensor::from_vector(std::vector<float>{-1, 0, 2, 0, 3, -4}, Dims{2, 3}, DType::kFloat32);
  check(make_case("heaviside", {h, rand({3}, 0, 1, 31)}), {"elementwise_heaviside"});
  Tensor i1 = ivec({12, -7, 5, 0}, {4}, DType::kInt32), i2 = ivec({10, 3, -1, 9}, {4}, DType::kInt32);
  for (const char* n : {"bitwise_and", "bitwise_or", "bitwise_xor"}) check(make_case(n, {i1, i2}), {n});
  check(make_case("bitwise_not", {i1}), {"bitwise_not"});
  Program e = check(make_case("atan2", {rand({2, 3}, -1, 1, 32), rand({2, 3}, -1, 1, 33)}), {"atan2"});
  EXPECT_EQ(first_op(e, "atan2").input("X2"), std::vector<std::string>{"in1"});
  // Paddle's atan2 does not broadcast (checked with the wheel): the operand is expanded first.
  e = check(make_case("atan2", {rand({2, 3}), rand({3}, -1, 1, 39)}), {"expand_v2", "atan2"});
  Tensor special = Tensor::from_vector(std::vector<float>{1, nan, inf, -inf}, Dims{4}, DType::kFloat32);
  check(make_case("isnan", {special}), {"isnan_v2"});
  check(make_case("isinf", {special}), {"isinf_v2"});
  check(make_case("isfinite", {special}), {"isfinite_v2"});

  Tensor x = rand({3, 4}, -1, 1, 34);
  check(make_case("logcumsumexp", {x}, Attrs{{"axis", int64_t{1}}, {"reverse", int64_t{1}}}),
        {"logcumsumexp"}, 1e-5);
  check(make_case("logcumsumexp", {x}, Attrs{{"flatten", int64_t{1}}}), {"logcumsumexp"}, 1e-5);
  e = check(make_case("logsumexp", {x}, Attrs{{"axis", std::vector<int64_t>{-1}}}), {"logsumexp"}, 1e-5);
  expect_attr(first_op(e, "logsumexp"), "axis", std::vector<int32_t>{1});
  check(make_case("logsumexp", {x}, Attrs{{"keepdim", int64_t{1}}}), {"logsumexp"}, 1e-5);
  e = check(make_case("cumprod", {x}, Attrs{{"axis", int64_t{0}}}), {"cumprod"});
  expect_attr(first_op(e, "cumprod"), "dim", int32_t{0});
  ExportReport rep;
  export_paddle_dialect(make_case("cumprod", {x}, Attrs{{"flatten", int64_t{1}}}).program, &rep);
  EXPECT_EQ(rep.num_kept(), 1);

  Tensor idx = ivec({3, 0, 1, 1, 2, 2}, {3, 2});
  check(make_case("take_along_axis", {x, idx}, Attrs{{"axis", int64_t{1}}}), {"take_along_axis"});
  Tensor pidx = ivec({2, 0, 3}, {3, 1}), vals = rand({3, 1}, 1, 2, 35);
  for (int64_t r : {0, 1, 2}) {
    e = check(make_case("put_along_axis", {x, pidx, vals}, Attrs{{"axis", int64_t{1}}, {"reduce", r}}),
              {"put_along_axis"});
    expect_attr(first_op(e, "put_along_axis"), "Reduce",
                std::string(r == 0   ? "assign"
                            : r == 1 ? "add"
                                     : "mul"));
  }
  check(make_case("scatter_nd_add", {rand({4, 3}), ivec({1, 3, 1}, {3, 1}), rand({3, 3}, -1, 1, 36)}),
        {"scatter_nd_add"});
  check(make_case("index_add", {rand({4, 3}), ivec({0, 2}, {2}), rand({2, 3}, -1, 1, 37)}), {"index_add"});
  check(make_case("polygamma", {rand({5}, 0.5, 2, 38)}, Attrs{{"n", int64_t{1}}}), {"polygamma"}, 1e-5);
}

TEST(PaddleExport, LinearAlgebra) {
  Tensor r = rand({3, 3}, -1, 1, 40);
  Tensor eye4 = ops::multiply(call_op("eye", {},
                                      Attrs{{"num_rows", int64_t{3}},
                                            {"num_columns", int64_t{3}},
                                            {"dtype", static_cast<int64_t>(DType::kFloat32)}})[0],
                              ops::full(Dims{}, 4.0));
  Tensor well = ops::add(r, eye4);                              // well conditioned
  Tensor spd = ops::add(ops::matmul(r, r, false, true), eye4);  // symmetric positive definite
  Tensor rhs = rand({3, 2}, -1, 1, 44);
  check(make_case("inverse", {well}), {"inverse"}, 1e-5);
  check(make_case("det", {well}), {"determinant"}, 1e-5);
  for (int64_t up : {0, 1}) {
    Program e = check(make_case("cholesky", {spd}, Attrs{{"upper", up}}), {"cholesky"}, 1e-5);
    expect_attr(first_op(e, "cholesky"), "upper", up != 0);
  }
  check(make_case("solve", {well, rhs}), {"solve"}, 1e-5);
  check(make_case("triangular_solve", {ops::triu(well), rhs}, Attrs{{"upper", int64_t{1}}}),
        {"triangular_solve"}, 1e-5);
  check(make_case("triangular_solve", {ops::tril(well), rhs},
                  Attrs{{"upper", int64_t{0}}, {"transpose", int64_t{1}}, {"unitriangular", int64_t{1}}}),
        {"triangular_solve"}, 1e-5);
  Program s = check(make_case("slogdet", {well}), {"slogdeterminant", "slice", "slice"}, 1e-5);
  expect_attr(s.global_block().ops()[3], "starts", std::vector<int32_t>{1});
  Tensor batch =
      ops::concat({well.unsqueeze(0), ops::multiply(well, ops::full(Dims{}, -1.0)).unsqueeze(0)}, 0);
  check(make_case("slogdet", {batch}), {"slogdeterminant", "slice", "slice"}, 1e-5);
  Tensor tall = rand({4, 3}, -1, 1, 45);
  Program e = check(make_case("qr", {tall}), {"qr"}, 1e-5);
  expect_attr(first_op(e, "qr"), "mode", std::string("reduced"));
  check(make_case("qr", {tall}, Attrs{{"complete", int64_t{1}}}), {"qr"}, 1e-5);
  check(make_case("svd", {tall}), {"svd"}, 1e-5);
  for (int64_t lower : {0, 1}) {
    e = check(make_case("eigh", {spd}, Attrs{{"lower", lower}}), {"eigh"}, 1e-5);
    expect_attr(first_op(e, "eigh"), "UPLO", std::string(lower ? "L" : "U"));
  }
}

// The FFT ops are Paddle's own ops with Paddle's attributes (LONGS axes, STRING normalization, BOOLEAN
// forward/onesided, LONG last_dim_size). expect_same compares real parts of complex results.
TEST(PaddleExport, Fft) {
  using V = std::vector<int64_t>;
  Tensor x = rand({3, 8}, -1, 1, 90);
  Attrs r2c{{"axes", V{1}},
            {"normalization", std::string("ortho")},
            {"forward", int64_t{1}},
            {"onesided", int64_t{1}}};
  Program e = check(make_case("fft_r2c", {x}, r2c), {"fft_r2c"}, 1e-5);
  expect_attr(first_op(e, "fft_r2c"), "axes", V{1});
  expect_attr(first_op(e, "fft_r2c"), "normalization", std::string("ortho"));
  expect_attr(first_op(e, "fft_r2c"), "onesided", true);
  Tensor c = ops::cast(x, DType::kComplex64);
  e = check(
      make_case("fft_c2c", {c},
                Attrs{{"axes", V{0, 1}}, {"normalization", std::string("forward")}, {"forward", int64_t{0}}}),
      {"fft_c2c"}, 1e-5);
  expect_attr(first_op(e, "fft_c2c"), "forward", false);
  Tensor half = call_op("fft_r2c", {x}, r2c)[0];
  e = check(make_case("fft_c2r", {half},
                      Attrs{{"axes", V{1}},
                            {"normalization", std::string("backward")},
                            {"forward", int64_t{1}},
                            {"last_dim_size", int64_t{8}}}),
            {"fft_c2r"}, 1e-5);
  expect_attr(first_op(e, "fft_c2r"), "last_dim_size", int64_t{8});
}

TEST(PaddleExport, UnfoldFoldGridSample) {
  Tensor x = rand({1, 2, 5, 5}, -1, 1, 41);
  Attrs u{{"kernel_sizes", std::vector<int64_t>{2, 3}},
          {"strides", std::vector<int64_t>{1, 2}},
          {"paddings", std::vector<int64_t>{1, 0, 0, 1}}};  // top 1, bottom 0, left 0, right 1
  Program e = check(make_case("unfold", {x}, u), {"unfold"});
  expect_attr(first_op(e, "unfold"), "paddings", std::vector<int32_t>{1, 0, 0, 1});  // Paddle: t, l, b, r
  Attrs u2 = u;
  u2.set("paddings", std::vector<int64_t>{1, 2, 0, 1});
  e = check(make_case("unfold", {x}, u2), {"unfold"});
  expect_attr(first_op(e, "unfold"), "paddings", std::vector<int32_t>{1, 0, 2, 1});
  Attrs f{{"kernel_sizes", std::vector<int64_t>{2, 2}},
          {"output_sizes", std::vector<int64_t>{4, 5}},
          {"paddings", std::vector<int64_t>{0, 0, 1, 1}}};
  // L = (4 - 1) * (5 + 2 - 1) = 18 blocks of 2 * 2 * 2 values.
  e = check(make_case("fold", {rand({1, 8, 18}, -1, 1, 42)}, f), {"fold"});
  expect_attr(first_op(e, "fold"), "paddings", std::vector<int32_t>{0, 1, 0, 1});
  // Asymmetric: Paddle's fold would size the blocks from paddings[0] and [1] alone.
  f.set("paddings", std::vector<int64_t>{0, 1, 1, 0});
  ExportReport rep;
  export_paddle_dialect(make_case("fold", {rand({1, 8, 20}, -1, 1, 42)}, f).program, &rep);
  EXPECT_NE(rep.to_string().find("symmetric"), std::string::npos) << rep.to_string();
  Tensor grid = rand({1, 3, 4, 2}, -1.2, 1.2, 43);
  for (int64_t mode : {0, 1})
    for (int64_t pad : {0, 1, 2})
      for (int64_t align : {0, 1}) {
        e = check(make_case("grid_sample", {x, grid},
                            Attrs{{"mode", mode}, {"padding_mode", pad}, {"align_corners", align}}),
                  {"grid_sampler"}, 1e-5);
        expect_attr(first_op(e, "grid_sampler"), "mode", std::string(mode == 0 ? "bilinear" : "nearest"));
      }
}

TEST(PaddleExport, MultiOpRules) {
  struct A {
    double start, end, step;
    DType d;
  };
  for (A a : {A{0, 10, 3, DType::kInt64}, A{0.5, 2.0, 0.25, DType::kFloat32}, A{5, -1, -2, DType::kInt32},
              A{0, 1, 0.1, DType::kFloat64}}) {
    Program e = check(
        make_case(
            "arange", {},
            Attrs{
                {"start", a.start}, {"end", a.end}, {"step", a.step}, {"dtype", static_cast<int64_t>(a.d)}}),
        {"fill_constant", "fill_constant", "fill_constant", "range"});
    EXPECT_EQ(first_op(e, "range").input("Start").size(), 1u);
  }
  check(make_case("linspace", {},
                  Attrs{{"start", 0.0},
                        {"stop", 1.0},
                        {"num", int64_t{5}},
                        {"dtype", static_cast<int64_t>(DType::kFloat32)}}),
        {"fill_constant", "fill_constant", "fill_constant", "linspace"});
  check(make_case("linspace", {},
                  Attrs{{"start", -2.0},
                        {"stop", 10.0},
                        {"num", int64_t{4}},
                        {"dtype", static_cast<int64_t>(DType::kInt64)}}),
        {"fill_constant", "fill_constant", "fill_constant", "linspace"});

  Tensor logits = rand({4, 5}, -2, 2, 60);
  Program e = check(make_case("softmax_cross_entropy", {logits, ivec({1, 2, 4, 0}, {4})},
                              Attrs{{"ignore_index", int64_t{2}}}),
                    {"unsqueeze2", "softmax_with_cross_entropy", "squeeze2"}, 1e-5);
  expect_attr(first_op(e, "softmax_with_cross_entropy"), "ignore_index", int32_t{2});
  EXPECT_EQ(first_op(e, "squeeze2").output("Out"), std::vector<std::string>{"out_loss"});
  check(make_case("softmax_cross_entropy", {logits, ivec({3, 0, 0, 1}, {4}, DType::kInt32)}),
        {"unsqueeze2", "softmax_with_cross_entropy", "squeeze2"}, 1e-5);

  // Non-constant padding: pad3d (a 4-D input gets a unit depth dim around it).
  Tensor img = rand({1, 2, 4, 5}, -1, 1, 61);
  for (int64_t mode : {1, 2, 3}) {
    e = check(make_case("pad", {img},
                        Attrs{{"pads", std::vector<int64_t>{0, 0, 0, 0, 1, 2, 3, 1}}, {"mode", mode}}),
              {"unsqueeze2", "pad3d", "squeeze2"});
    expect_attr(first_op(e, "pad3d"), "paddings", std::vector<int32_t>{3, 1, 1, 2, 0, 0});
  }
  check(make_case("pad", {rand({1, 1, 3, 4, 5})},
                  Attrs{{"pads", std::vector<int64_t>{0, 0, 0, 0, 1, 0, 0, 2, 2, 1}}, {"mode", int64_t{2}}}),
        {"pad3d"});
}

// The ratios oar's Python interpolate computes (float32, like Paddle).
std::vector<double> interp_ratios(const Tensor& x, const std::vector<int64_t>& size, bool align,
                                  const std::vector<double>& scales = {}) {
  std::vector<double> r;
  for (size_t i = 0; i < size.size(); ++i) {
    double n = static_cast<double>(x.dim(static_cast<int32_t>(2 + i))), o = static_cast<double>(size[i]);
    double v = align ? (o > 1 ? (n - 1) / (o - 1) : 0.0) : !scales.empty() ? 1.0 / scales[i] : n / o;
    r.push_back(static_cast<float>(v));
  }
  return r;
}

Case interp_case(const Tensor& x, std::vector<int64_t> size, int64_t mode, bool align, int64_t align_mode = 0,
                 std::vector<double> scales = {}) {
  return make_case("interpolate", {x},
                   Attrs{{"out_size", size},
                         {"ratios", interp_ratios(x, size, align, scales)},
                         {"mode", mode},
                         {"align_corners", int64_t{align}},
                         {"align_mode", align_mode}});
}

TEST(PaddleExport, Interpolate) {
  Tensor x = rand({1, 2, 5, 7}, -1, 1, 64);
  for (bool align : {false, true})
    for (int64_t am : {0, 1}) {
      Program e = check(interp_case(x, {8, 4}, 1, align, am), {"bilinear_interp_v2"}, 1e-5);
      expect_attr(first_op(e, "bilinear_interp_v2"), "out_h", int32_t{8});
      expect_attr(first_op(e, "bilinear_interp_v2"), "out_w", int32_t{4});
      check(interp_case(x, {9, 6}, 2, align), {"bicubic_interp_v2"}, 1e-5);
    }
  check(interp_case(x, {10, 14}, 0, false), {"nearest_interp_v2"});
  check(interp_case(x, {3, 4}, 0, false), {"nearest_interp_v2"});
  // By scale factor 1.5: sizes int(5 * 1.5), int(7 * 1.5), ratios 1 / 1.5 (not 5 / 7 and 7 / 10).
  Program e = check(interp_case(x, {7, 10}, 1, false, 0, {1.5, 1.5}), {"bilinear_interp_v2"}, 1e-5);
  expect_attr(first_op(e, "bilinear_interp_v2"), "scale", std::vector<float>{1.5f, 1.5f});
  check(interp_case(x, {7, 10}, 0, false, 0, {1.5, 1.5}), {"nearest_interp_v2"});
  check(interp_case(rand({1, 2, 6}), {9}, 1, false), {"linear_interp_v2"}, 1e-5);
  check(interp_case(rand({1, 2, 6}), {4}, 1, true), {"linear_interp_v2"}, 1e-5);
  Tensor v = rand({1, 1, 3, 4, 5}, -1, 1, 65);
  check(interp_case(v, {5, 6, 7}, 1, false), {"trilinear_interp_v2"}, 1e-5);
  check(interp_case(v, {5, 6, 7}, 1, true, 1), {"trilinear_interp_v2"}, 1e-5);
  check(interp_case(v, {6, 8, 10}, 0, false), {"nearest_interp_v2"});
  // Ratios Paddle cannot derive: kept native.
  Case odd = interp_case(x, {8, 4}, 1, false);
  odd.program.global_block().mutable_ops()[1].set_attr("ratios", std::vector<double>{0.3, 0.3});
  ExportReport rep;
  export_paddle_dialect(odd.program, &rep);
  EXPECT_NE(rep.to_string().find("neither the sizes nor a scale"), std::string::npos) << rep.to_string();
}

// ---- views (no OpDef: recorded as oar.reshape / transpose / squeeze / unsqueeze / slice / expand / flatten)

Case view_case(const std::string& name, const Tensor& x, AttrList attrs, const Tensor& want) {
  Case c;
  Block& g = c.program.global_block();
  add_feed_fetch_vars(g);
  g.add_var(tensor_var("x", x.dtype(), x.dims().to_vector()));
  g.add_var(tensor_var("y", want.dtype(), want.dims().to_vector()));
  add_feed(g, "x", 0);
  OpDesc op;
  op.type = "oar." + name;
  op.set_input("x", {"x"});
  op.set_output("out", {"y"});
  op.attrs = std::move(attrs);
  g.append_op(op);
  add_fetch(g, "y", 0);
  c.feeds["x"] = x;
  c.eager = {ops::copy(want)};
  return c;
}

TEST(PaddleExport, Views) {
  Tensor x = rand({2, 1, 3, 4}, -1, 1, 29);
  using V = std::vector<int64_t>;
  Program e = check(view_case("reshape", x, {{"shape", V{-1, 4}}}, x.reshape(Dims{6, 4})), {"reshape2"});
  expect_attr(first_op(e, "reshape2"), "shape", std::vector<int32_t>{-1, 4});
  e = check(view_case("transpose", x, {{"perm", V{3, 0, 2, 1}}}, x.transpose({3, 0, 2, 1})), {"transpose2"});
  expect_attr(first_op(e, "transpose2"), "axis", std::vector<int32_t>{3, 0, 2, 1});
  check(view_case("squeeze", x, {{"axes", V{1}}}, x.squeeze({1})), {"squeeze2"});
  check(view_case("squeeze", x, {{"axes", V{}}}, x.squeeze()), {"squeeze2"});
  check(view_case("unsqueeze", x, {{"axis", int64_t{-1}}}, x.unsqueeze(-1)), {"unsqueeze2"});
  // Other attribute spellings a recorder might choose.
  check(view_case("unsqueeze", x, {{"axes", V{0, 2}}}, x.unsqueeze(0).unsqueeze(2)), {"unsqueeze2"});
  check(view_case("squeeze", x, {{"axis", int64_t{1}}}, x.squeeze({1})), {"squeeze2"});
  check(view_case("transpose", x, {{"axis", V{1, 0, 3, 2}}}, x.transpose({1, 0, 3, 2})), {"transpose2"});
  e = check(
      view_case("slice", x,
                {{"axis", int64_t{2}}, {"start", int64_t{1}}, {"end", int64_t{3}}, {"step", int64_t{1}}},
                x.slice(2, 1, 3)),
      {"slice"});
  expect_attr(first_op(e, "slice"), "axes", std::vector<int32_t>{2});
  check(view_case(
            "slice", x,
            {{"axis", int64_t{3}}, {"start", int64_t{-3}}, {"end", int64_t{1} << 40}, {"step", int64_t{2}}},
            x.slice(3, -3, int64_t{1} << 40, 2)),
        {"strided_slice"});
  check(view_case("expand", x, {{"shape", V{5, 2, 3, 3, 4}}}, x.expand(Dims{5, 2, 3, 3, 4})), {"expand_v2"});
  check(view_case("flatten", x, {{"start_axis", int64_t{1}}, {"stop_axis", int64_t{-1}}},
                  x.reshape(Dims{2, 12})),
        {"flatten_contiguous_range"});
}

// ---- whole programs --------------------------------------------------------------------------------------

TEST(PaddleExport, UnmappedOpsStayNativeAndAreReported) {
  Tensor x = rand({3, 3}, -1, 1, 30);
  Case c = make_case("relu", {x});
  Block& g = c.program.global_block();
  // relu, then two oar.nonzero (no Paddle op with that output) and an oar.exp.
  const OpDef& nz = OpRegistry::get().at("nonzero");
  g.add_var(tensor_var("nz", DType::kInt64, {9, 2}));
  g.add_var(tensor_var("nz2", DType::kInt64, {9, 2}));
  g.add_var(tensor_var("e", DType::kFloat32, {3, 3}));
  std::vector<OpDesc>& ops = g.mutable_ops();
  ops.insert(ops.end() - 1, native_op(nz, {"out_out"}, {"nz"}, Attrs{{"count", int64_t{9}}}));
  ops.insert(ops.end() - 1, native_op(nz, {"out_out"}, {"nz2"}, Attrs{{"count", int64_t{9}}}));
  ops.insert(ops.end() - 1, native_op(OpRegistry::get().at("exp"), {"out_out"}, {"e"}, {}));
  ExportReport rep;
  Program e = export_paddle_dialect(c.program, &rep);
  EXPECT_EQ(body_types(e), (std::vector<std::string>{"relu", "oar.nonzero", "oar.nonzero", "exp"}));
  EXPECT_FALSE(rep.complete());
  ASSERT_EQ(rep.kept.size(), 1u);
  EXPECT_EQ(rep.kept[0], (std::pair<std::string, int64_t>{"oar.nonzero", 2}));
  EXPECT_EQ(rep.num_kept(), 2);
  EXPECT_EQ(rep.exported, (std::vector<std::pair<std::string, int64_t>>{{"oar.exp", 1}, {"oar.relu", 1}}));
  EXPECT_NE(rep.to_string().find("oar.nonzero x2 (no Paddle equivalent)"), std::string::npos)
      << rep.to_string();
  EXPECT_TRUE(is_native_op(first_op(e, "oar.nonzero")));
  expect_attr(first_op(e, "oar.nonzero"), "count", int64_t{9});
  EXPECT_FALSE(is_native_op(first_op(e, "relu")));
  EXPECT_FALSE(e.op_version("oar.nonzero").has_value());
  // The native op survives the wire format unchanged (attributes and all).
  EXPECT_EQ(Program::parse(e.serialize()), e);
}

TEST(PaddleExport, PaddleOpsSubBlocksAndVersions) {
  Case c = make_case("tanh", {rand({2, 2})});
  Program& p = c.program;
  // A Paddle op already there stays as it is; the program's own version entries are kept.
  OpDesc relu;
  relu.type = "relu";
  relu.set_input("X", {"in0"});
  relu.set_output("Out", {"r"});
  p.global_block().add_var(tensor_var("r", DType::kFloat32, {2, 2}));
  p.global_block().append_op(relu);
  p.set_op_version_map({{"relu", 0}, {"custom_thing", 7}});
  // A sub-block with a native op.
  Block& sub = p.append_block(0);
  sub.add_var(tensor_var("s", DType::kFloat32, {2, 2}));
  sub.append_op(native_op(OpRegistry::get().at("sigmoid"), {"r"}, {"s"}, {}));
  Program e = export_paddle_dialect(p);
  EXPECT_EQ(e.global_block().ops().back(), relu);
  ASSERT_EQ(e.block(1).ops().size(), 1u);
  EXPECT_EQ(e.block(1).ops()[0].type, "sigmoid");
  EXPECT_TRUE(e.has_op_version_map());
  EXPECT_EQ(e.op_version("custom_thing"), 7);
  EXPECT_EQ(e.op_version("tanh"), supported_op_version("tanh"));
  EXPECT_EQ(e.op_version("sigmoid"), supported_op_version("sigmoid"));
  EXPECT_EQ(e.op_version("fetch"), 0);
  // The input program is untouched.
  EXPECT_EQ(body_types(p), (std::vector<std::string>{"oar.tanh", "relu"}));
}

TEST(PaddleExport, MalformedNativeOpsThrow) {
  Case c = make_case("add", {rand({2}), rand({2})});
  OpDesc& op = c.program.global_block().mutable_ops()[2];
  ASSERT_EQ(op.type, "oar.add");
  op.set_input("y", {});
  try {
    export_paddle_dialect(c.program);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("oar.add: input slot y"), std::string::npos) << e.what();
  }
  Case s = make_case("softmax", {rand({2})});
  s.program.global_block().mutable_ops()[1].set_attr("axis", std::string("last"));
  EXPECT_THROW(export_paddle_dialect(s.program), Error);
}

// ---- an MLP and a LeNet-like model, with parameters, for PaddlePaddle ------------------------------------

TensorData to_data(const Tensor& t) {
  TensorData d;
  d.dtype = t.dtype();
  d.dims = t.dims().to_vector();
  d.data.resize(static_cast<size_t>(t.numel()) * 4);
  t.cpu().copy_to_host(d.data.data(), d.data.size());
  return d;
}

// Builds a native program op by op, computing the same thing eagerly alongside.
struct Recorder {
  Program p;
  std::map<std::string, Tensor> values, params;
  int n = 0;
  Recorder() { add_feed_fetch_vars(p.global_block()); }
  std::string input(const std::string& name, const Tensor& t, std::vector<int64_t> shape) {
    p.global_block().add_var(tensor_var(name, t.dtype(), std::move(shape)));
    add_feed(p.global_block(), name, 0);
    values[name] = t;
    return name;
  }
  std::string param(const std::string& name, const Tensor& t) {
    p.global_block().add_var(tensor_var(name, t.dtype(), t.dims().to_vector(), true));
    values[name] = t;
    params[name] = t;
    return name;
  }
  std::string op(const std::string& op, std::vector<std::string> ins, Attrs attrs = {}, bool batch = true) {
    const OpDef& def = OpRegistry::get().at(op);
    std::vector<Tensor> in;
    for (auto& i : ins) in.push_back(values.at(i));
    std::vector<Tensor> out = call_op(def, in, attrs);
    std::vector<std::string> names;
    for (size_t k = 0; k < out.size(); ++k) {
      std::string nm = op + "_" + std::to_string(n++);
      std::vector<int64_t> s = out[k].dims().to_vector();
      if (batch && !s.empty()) s[0] = -1;
      p.global_block().add_var(tensor_var(nm, out[k].dtype(), s));
      values[nm] = out[k];
      names.push_back(nm);
    }
    p.global_block().append_op(native_op(def, ins, names, attrs));
    return names[0];
  }
  std::string view(const std::string& type, const std::string& x, AttrList attrs, const Tensor& result) {
    std::string nm = type + "_" + std::to_string(n++);
    std::vector<int64_t> s = result.dims().to_vector();
    s[0] = -1;
    p.global_block().add_var(tensor_var(nm, result.dtype(), s));
    OpDesc o;
    o.type = "oar." + type;
    o.set_input("x", {x});
    o.set_output("out", {nm});
    o.attrs = std::move(attrs);
    p.global_block().append_op(o);
    values[nm] = result;
    return nm;
  }
};

// LeNet-like: conv -> add bias -> relu -> max_pool -> conv -> relu -> avg_pool -> flatten -> linear ->
// gelu -> linear -> softmax.
Recorder lenet_like(int64_t batch) {
  Recorder r;
  std::string x = r.input("image", rand({batch, 1, 12, 12}, -1, 1, 40), {-1, 1, 12, 12});
  std::string w1 = r.param("conv1.w", rand({4, 1, 3, 3}, -0.5, 0.5, 41));
  std::string b1 = r.param("conv1.b", rand({4, 1, 1}, -0.1, 0.1, 42));
  std::string w2 = r.param("conv2.w", rand({6, 4, 3, 3}, -0.3, 0.3, 43));
  std::string fw1 = r.param("fc1.w", rand({24, 16}, -0.3, 0.3, 44));
  std::string fb1 = r.param("fc1.b", rand({16}, -0.1, 0.1, 45));
  std::string fw2 = r.param("fc2.w", rand({16, 10}, -0.3, 0.3, 46));
  std::string fb2 = r.param("fc2.b", rand({10}, -0.1, 0.1, 47));
  std::string h = r.op("conv", {x, w1}, Attrs{{"paddings", std::vector<int64_t>{1, 1, 1, 1}}});
  h = r.op("add", {h, b1});
  h = r.op("relu", {h});
  h = r.op("max_pool", {h},
           Attrs{{"kernel_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  h = r.op("conv", {h, w2});
  h = r.op("relu", {h});
  h = r.op("avg_pool", {h},
           Attrs{{"kernel_size", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  const Tensor& hv = r.values[h];
  h = r.view("flatten", h, {{"start_axis", int64_t{1}}, {"stop_axis", int64_t{-1}}},
             hv.reshape(Dims{batch, -1}));
  h = r.op("matmul", {h, fw1});
  h = r.op("add", {h, fb1});
  h = r.op("gelu", {h});
  h = r.op("matmul", {h, fw2});
  h = r.op("add", {h, fb2});
  h = r.op("softmax", {h});
  add_fetch(r.p.global_block(), h, 0);
  r.values["@out"] = r.values[h];
  return r;
}

// MLP: linear -> tanh -> linear -> log_softmax.
Recorder mlp(int64_t batch) {
  Recorder r;
  std::string x = r.input("x", rand({batch, 8}, -1, 1, 50), {-1, 8});
  std::string w1 = r.param("fc1.weight", rand({8, 16}, -0.5, 0.5, 51));
  std::string b1 = r.param("fc1.bias", rand({16}, -0.1, 0.1, 52));
  std::string w2 = r.param("fc2.weight", rand({16, 4}, -0.5, 0.5, 53));
  std::string b2 = r.param("fc2.bias", rand({4}, -0.1, 0.1, 54));
  std::string h = r.op("add", {r.op("matmul", {x, w1}), b1});
  h = r.op("tanh", {h});
  h = r.op("add", {r.op("matmul", {h, w2}), b2});
  h = r.op("log_softmax", {h});
  add_fetch(r.p.global_block(), h, 0);
  r.values["@out"] = r.values[h];
  return r;
}

void check_model(const std::string& name, Recorder r) {
  ExportReport rep;
  Program e = export_paddle_dialect(r.p, &rep);
  EXPECT_TRUE(rep.complete()) << rep.to_string();
  for (const OpDesc& op : e.global_block().ops()) EXPECT_FALSE(is_native_op(op)) << op.type;
  std::map<std::string, TensorData> params;
  for (auto& [n, t] : r.params) params[n] = to_data(t);
  std::string pdiparams = save_combined_params(params);
  Program parsed = Program::parse(e.serialize());
  std::string in_name;
  for (const char* place : {"cpu", "sim:0"}) {  // sim:0 lacks some kernels: the CPU fallback runs those
    Executor ex(parsed, Place::parse(place));
    ex.load_params(pdiparams);
    in_name = ex.feed_names().at(0);
    std::vector<Tensor> got = ex.run({{in_name, r.values[in_name]}});
    EXPECT_EQ(got.at(0).place(), Place::parse(place));
    expect_same(got.at(0), r.values["@out"], name + " on " + place, 1e-5);
  }
  const char* dir = std::getenv("OAR_IR_EXPORT_DIR");
  if (dir == nullptr) return;
  // For tests/fixtures/paddle/check_oar_exported.py: the model, its parameters, an input and oar's output.
  std::string base = std::string(dir) + "/" + name;
  e.save(base + ".pdmodel");
  write_file_bytes(base + ".pdiparams", pdiparams);
  write_npy(base + ".input.npy", r.values[in_name]);
  write_npy(base + ".output.npy", r.values["@out"]);
}

TEST(PaddleExport, MlpModel) { check_model("oar_exported_mlp", mlp(3)); }
TEST(PaddleExport, LenetLikeModel) { check_model("oar_exported_lenet", lenet_like(2)); }

TEST(PaddleExport, EveryExportableOpHasARule) {
  std::vector<std::string> ops = exportable_native_ops();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  std::set<std::string> s(ops.begin(), ops.end());
  for (const char* n :
       {"add", "matmul", "conv", "max_pool", "avg_pool", "layer_norm", "softmax", "reshape", "fill"})
    EXPECT_TRUE(s.count(n)) << n;
  EXPECT_FALSE(s.count("round"));  // a rule that always keeps the op native
}

// The Paddle op map (framework/src/ir/paddle_map.def), from which the Executor's translations, the export
// rules and the op versions are all derived, is consistent.
TEST(PaddleOpMap, IsConsistent) {
  const OpRegistry& reg = OpRegistry::get();
  std::set<std::string> types, imported;
  std::map<std::string, std::string> owner;  // native op -> the Paddle type that is its export
  auto has_attr = [](const OpDef& d, const std::string& a) {
    for (const AttrDef& ad : d.attrs)
      if (a == ad.name) return true;
    return false;
  };
  for (const PaddleOpMapping& m : paddle_op_map()) {
    const std::string& t = m.paddle_type;
    EXPECT_TRUE(types.insert(t).second) << t << " appears twice";
    // Versions and translations come from the entry.
    if (m.version >= 0)
      EXPECT_EQ(supported_op_version(t), m.version) << t;
    else
      EXPECT_FALSE(supported_op_version(t).has_value()) << t;
    EXPECT_EQ(find_op_translation(t) != nullptr, m.imported) << t;
    if (m.imported) imported.insert(t);
    // Every Paddle type the exporter writes is one oar runs and records a version of.
    bool exported = !m.exported_from.empty() || !m.exported_views.empty() || !m.also_from.empty();
    if (exported) {
      EXPECT_TRUE(m.imported) << t << " is exported but has no import";
      EXPECT_GE(m.version, 0) << t << " is exported but has no op version";
    }
    // Native ops exist (views are the ones without an OpDef), each exported by one entry.
    for (const std::string& n : m.exported_from) {
      EXPECT_NE(reg.find(n), nullptr) << t << ": no op " << n;
      EXPECT_TRUE(owner.emplace(n, t).second) << n << " is exported by " << owner[n] << " and " << t;
    }
    for (const std::string& n : m.exported_views) {
      EXPECT_EQ(reg.find(n), nullptr) << t << ": " << n << " has an OpDef, so it is no view op";
      EXPECT_TRUE(owner.emplace(n, t).second) << n << " is exported by " << owner[n] << " and " << t;
    }
    if (!m.declined.empty()) {
      EXPECT_NE(reg.find(m.oar_op), nullptr) << t << ": no op " << m.oar_op;
      EXPECT_FALSE(m.imported || exported) << t << " is declined but mapped";
      continue;
    }
    // The regular forms: the oar op exists and has the signature the form assumes.
    if (m.form == "custom") continue;
    const OpDef* d = reg.find(m.oar_op);
    EXPECT_NE(d, nullptr) << t << ": no op " << m.oar_op;
    if (d == nullptr) continue;
    size_t ni = d->inputs.size(), no = d->outputs.size();
    if (m.form == "unary" || m.form == "reduce") EXPECT_TRUE(ni == 1 && no == 1) << t;
    if (m.form == "elementwise" || m.form == "binary") EXPECT_TRUE(ni == 2 && no == 1) << t;
    if (m.form == "reduce") EXPECT_TRUE(has_attr(*d, "axis") && has_attr(*d, "keepdim")) << t;
    if (m.form == "slots") {
      EXPECT_EQ(static_cast<size_t>(m.num_inputs), ni) << t;
      EXPECT_EQ(static_cast<size_t>(m.num_outputs), no) << t;
      for (const std::string& a : m.renamed_attrs)
        EXPECT_TRUE(has_attr(*d, a)) << t << ": no attribute " << a;
    }
  }
  for (const PaddleOpMapping& m : paddle_op_map())
    if (!m.also_from.empty()) EXPECT_TRUE(owner.count(m.also_from)) << m.paddle_type << ": " << m.also_from;
  // The export rules and the translations are exactly the map's.
  std::vector<std::string> natives;
  for (auto& kv : owner) natives.push_back(kv.first);
  EXPECT_EQ(exportable_native_ops(), natives);
  EXPECT_EQ(translated_op_types(), std::vector<std::string>(imported.begin(), imported.end()));
  // Many to one: Paddle's swish and silu both import to oar's silu, which exports as silu.
  EXPECT_EQ(owner["silu"], "silu");
  EXPECT_NE(find_op_translation("swish"), nullptr);
  EXPECT_FALSE(supported_op_version("round").has_value());  // declined: Paddle's round differs
}

}  // namespace
