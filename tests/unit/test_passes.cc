// Inference passes (framework/src/ir/passes.cc): each pass on hand-built programs (the op list after
// the pass, and the executor's results before and after) and on the PaddlePaddle fixtures.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/ir/executor.h>
#include <oar/ir/params.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "program_test_util.h"

using namespace oar;
using namespace oar::ir;

namespace {

using AttrList = std::vector<std::pair<std::string, Attribute>>;

// Builds block 0 op by op.
struct Builder {
  Program p;
  Block& g = p.global_block();
  void var(const std::string& n, std::vector<int64_t> shape = {}, bool persistable = false) {
    VarDesc v;
    v.name = n;
    v.shape = std::move(shape);
    v.persistable = persistable;
    g.add_var(v);
  }
  void op(const std::string& type, Slots in, Slots out, AttrList attrs = {}) {
    OpDesc o;
    o.type = type;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.attrs = std::move(attrs);
    g.append_op(o);
  }
  void feed(const std::string& n, int col = 0) {
    if (!g.has_var("feed")) {
      VarDesc v;
      v.name = "feed";
      v.type = VarType::kFeedMinibatch;
      v.persistable = true;
      g.add_var(v);
    }
    op("feed", {{"X", {"feed"}}}, {{"Out", {n}}}, {{"col", int32_t{col}}});
  }
  void fetch(const std::string& n, int col = 0) {
    if (!g.has_var("fetch")) {
      VarDesc v;
      v.name = "fetch";
      v.type = VarType::kFetchList;
      v.persistable = true;
      g.add_var(v);
    }
    op("fetch", {{"X", {n}}}, {{"Out", {"fetch"}}}, {{"col", int32_t{col}}});
  }
};

std::vector<std::string> op_types(const Program& p) {
  std::vector<std::string> t;
  for (auto& o : p.global_block().ops()) t.push_back(o.type);
  return t;
}

std::vector<Tensor> run(const Program& p, const Scope& params, const std::map<std::string, Tensor>& feeds,
                        ExecutorOptions opts = {}) {
  Executor ex(p, cpu_place(), opts);
  copy_scope(params, ex.scope());
  return ex.run(feeds);
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what,
                 double tol = 1e-5) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].dims(), b[k].dims()) << what << " fetch " << k;
    std::vector<float> x = a[k].cpu().to_vector<float>(), y = b[k].cpu().to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(x[i] - y[i]), tol * (1 + std::fabs(y[i])))
          << what << " fetch " << k << " element " << i;
  }
}

Tensor random_tensor(Dims d, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(d.numel()));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector(v, d, DType::kFloat32);
}

}  // namespace

// ---- DCE --------------------------------------------------------------------------------------------

TEST(Passes, DeadCodeEliminationRemovesUnusedOps) {
  Builder b;
  for (auto n : {"x", "a", "b", "c", "d", "e"}) b.var(n, {2, 3});
  b.var("state", {2, 3}, true);
  b.feed("x");
  b.op("relu", {{"X", {"x"}}}, {{"Out", {"a"}}});
  b.op("sigmoid", {{"X", {"x"}}}, {{"Out", {"b"}}});  // dead: only feeds c
  b.op("tanh", {{"X", {"b"}}}, {{"Out", {"c"}}});     // dead: nobody reads c
  b.op("exp", {{"X", {"a"}}}, {{"Out", {"d"}}});
  b.op("abs", {{"X", {"x"}}}, {{"Out", {"e"}}});  // writes e, but e is rewritten before its use
  b.op("square", {{"X", {"d"}}}, {{"Out", {"e"}}});
  b.op("scale", {{"X", {"a"}}}, {{"Out", {"state"}}}, {{"scale", 2.0f}});  // a persistable write: kept
  b.fetch("e");
  Program before = b.p;
  Scope params;
  Tensor x = random_tensor(Dims{2, 3}, 1);
  auto ref = run(before, params, {{"x", x}});
  PassStat st = dead_code_elimination(b.p, &params);
  EXPECT_EQ(st.ops_removed, 3);
  EXPECT_EQ(op_types(b.p), (std::vector<std::string>{"feed", "relu", "exp", "square", "scale", "fetch"}));
  EXPECT_FALSE(b.g.has_var("b"));  // unreferenced descriptions go too
  EXPECT_FALSE(b.g.has_var("c"));
  EXPECT_TRUE(b.g.has_var("state"));
  b.p.validate();
  expect_same(run(b.p, params, {{"x", x}}), ref, "dce");
}

TEST(Passes, DeadCodeEliminationKeepsUnknownOps) {
  Builder b;
  for (auto n : {"x", "a", "b", "c"}) b.var(n, {2});
  b.feed("x");
  b.op("relu", {{"X", {"x"}}}, {{"Out", {"a"}}});
  b.op("tanh", {{"X", {"x"}}}, {{"Out", {"b"}}});
  b.op("my_print", {{"In", {"b"}}}, {{"Out", {"c"}}});  // unknown: may have side effects
  b.op("oar.relu", {{"x", {"x"}}}, {{"out", {"c"}}});   // native oar op, unknown to the passes
  b.fetch("a");
  Scope params;
  PassReport r = run_inference_passes(b.p, params);
  EXPECT_EQ(op_types(b.p),
            (std::vector<std::string>{"feed", "relu", "tanh", "my_print", "oar.relu", "fetch"}));
  EXPECT_EQ(b.p.global_block().ops()[2].input("X"), std::vector<std::string>{"x"});
  EXPECT_EQ(b.p.global_block().ops()[3].input("In"), std::vector<std::string>{"b"});
  EXPECT_EQ(r.ops_before, r.ops_after);
}

// ---- CSE --------------------------------------------------------------------------------------------

TEST(Passes, CommonSubexpressionElimination) {
  Builder b;
  for (auto n : {"x", "a", "a2", "s", "s2", "t", "u", "v", "w", "z", "k", "k2"}) b.var(n, {2, 3});
  b.feed("x");
  AttrList callstack1{{"op_callstack", std::vector<std::string>{"line 1"}}};
  AttrList callstack2{{"op_callstack", std::vector<std::string>{"line 2"}}};
  b.op("relu", {{"X", {"x"}}}, {{"Out", {"a"}}}, callstack1);
  b.op("relu", {{"X", {"x"}}}, {{"Out", {"a2"}}}, callstack2);  // same as a (callstack ignored)
  b.op("scale", {{"X", {"a"}}}, {{"Out", {"s"}}}, {{"scale", 2.0f}});
  b.op("scale", {{"X", {"a2"}}}, {{"Out", {"s2"}}}, {{"scale", 3.0f}});  // another attribute: kept
  b.op("elementwise_add", {{"X", {"s"}}, {"Y", {"s2"}}}, {{"Out", {"t"}}});
  b.op("elementwise_add", {{"X", {"s"}}, {"Y", {"s2"}}}, {{"Out", {"u"}}});  // same as t (after a2 -> a)
  b.op("elementwise_mul", {{"X", {"t"}}, {"Y", {"u"}}}, {{"Out", {"v"}}});
  // x is rewritten between two identical ops: they see different values and must both stay.
  b.op("exp", {{"X", {"v"}}}, {{"Out", {"k"}}});
  b.op("scale", {{"X", {"v"}}}, {{"Out", {"v"}}}, {{"scale", 0.5f}});
  b.op("exp", {{"X", {"v"}}}, {{"Out", {"k2"}}});
  b.op("elementwise_sub", {{"X", {"k"}}, {"Y", {"k2"}}}, {{"Out", {"w"}}});
  b.fetch("w");
  Scope params;
  Tensor x = random_tensor(Dims{2, 3}, 2);
  auto ref = run(b.p, params, {{"x", x}});
  PassStat st = common_subexpression_elimination(b.p);
  EXPECT_EQ(st.ops_removed, 2);
  EXPECT_EQ(op_types(b.p),
            (std::vector<std::string>{"feed", "relu", "scale", "scale", "elementwise_add", "elementwise_mul",
                                      "exp", "scale", "exp", "elementwise_sub", "fetch"}));
  const auto& ops = b.p.global_block().ops();
  EXPECT_EQ(ops[3].input("X"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[5].input("Y"), std::vector<std::string>{"t"});
  EXPECT_FALSE(b.g.has_var("a2"));
  EXPECT_FALSE(b.g.has_var("u"));
  b.p.validate();
  expect_same(run(b.p, params, {{"x", x}}), ref, "cse");
}

// Attribute values are compared exactly (not through their 9-digit text form).
TEST(Passes, CommonSubexpressionEliminationComparesAttributesExactly) {
  Builder b;
  for (auto n : {"x", "a", "c", "d"}) b.var(n, {2});
  b.feed("x");
  b.op("scale", {{"X", {"x"}}}, {{"Out", {"a"}}}, {{"scale", 0.1}});
  b.op("scale", {{"X", {"x"}}}, {{"Out", {"c"}}}, {{"scale", 0.1 + 1e-15}});
  b.op("elementwise_add", {{"X", {"a"}}, {"Y", {"c"}}}, {{"Out", {"d"}}});
  b.fetch("d");
  EXPECT_EQ(common_subexpression_elimination(b.p).ops_removed, 0);
  b.p.global_block().mutable_ops()[2].set_attr("scale", 0.1);
  EXPECT_EQ(common_subexpression_elimination(b.p).ops_removed, 1);
}

// ---- constant folding -------------------------------------------------------------------------------

TEST(Passes, ConstantFoldingFoldsFillConstantChains) {
  Builder b;
  b.var("x", {2, 3});
  for (auto n : {"c", "c2", "c3", "y", "wt", "m", "out"}) b.var(n);
  b.var("w", {4, 3}, true);
  b.feed("x");
  b.op("fill_constant", {}, {{"Out", {"c"}}},
       {{"shape", std::vector<int64_t>{3}}, {"dtype", int32_t{5}}, {"value", 2.0f}});
  b.op("scale", {{"X", {"c"}}}, {{"Out", {"c2"}}}, {{"scale", 3.0f}, {"bias", 1.0f}});  // 7
  b.op("scale", {{"X", {"c2"}}}, {{"Out", {"c3"}}}, {{"scale", 0.5f}});                 // 3.5
  b.op("elementwise_add", {{"X", {"x"}}, {"Y", {"c3"}}}, {{"Out", {"y"}}});
  // A parameter-only subgraph: the transposed weight is computed once.
  b.op("transpose2", {{"X", {"w"}}}, {{"Out", {"wt"}}, {"XShape", {}}},
       {{"axis", std::vector<int32_t>{1, 0}}});
  b.op("matmul_v2", {{"X", {"y"}}, {"Y", {"wt"}}}, {{"Out", {"m"}}});
  b.op("relu", {{"X", {"m"}}}, {{"Out", {"out"}}});
  b.fetch("out");
  Scope params;
  params.set("w", random_tensor(Dims{4, 3}, 3));
  Tensor x = random_tensor(Dims{2, 3}, 4);
  auto ref = run(b.p, params, {{"x", x}});
  PassStat st = constant_folding(b.p, params);
  EXPECT_EQ(st.ops_removed, 4);
  EXPECT_EQ(op_types(b.p),
            (std::vector<std::string>{"feed", "elementwise_add", "matmul_v2", "relu", "fetch"}));
  ASSERT_TRUE(params.has("c3"));
  EXPECT_EQ(params.find("c3")->to_vector<float>(), (std::vector<float>{3.5f, 3.5f, 3.5f}));
  EXPECT_TRUE(b.g.find_var("c3")->persistable);
  EXPECT_EQ(b.g.find_var("c3")->shape, (std::vector<int64_t>{3}));
  EXPECT_TRUE(params.has("wt"));
  EXPECT_FALSE(b.g.has_var("c"));  // intermediate constants are dropped
  EXPECT_FALSE(b.g.has_var("c2"));
  b.p.validate();
  expect_same(run(b.p, params, {{"x", x}}), ref, "constant folding");
}

TEST(Passes, ConstantFoldingLeavesFetchedAndWrittenVariables) {
  Builder b;
  b.var("c", {3});
  b.var("p", {3}, true);
  b.var("q", {3});
  b.op("fill_constant", {}, {{"Out", {"c"}}},
       {{"shape", std::vector<int64_t>{3}}, {"dtype", int32_t{5}}, {"value", 1.0f}});
  b.op("scale", {{"X", {"p"}}}, {{"Out", {"q"}}}, {{"scale", 2.0f}});  // p is written below: not constant
  b.op("scale", {{"X", {"q"}}}, {{"Out", {"p"}}}, {{"scale", 2.0f}});
  b.fetch("c");
  Scope params;
  params.set("p", random_tensor(Dims{3}, 5));
  PassStat st = constant_folding(b.p, params);
  EXPECT_EQ(st.ops_removed, 0);
  EXPECT_EQ(op_types(b.p), (std::vector<std::string>{"fill_constant", "scale", "scale", "fetch"}));
}

// ---- fusions ----------------------------------------------------------------------------------------

TEST(Passes, FuseMatmulBiasActIntoFc) {
  Builder b;
  b.var("x", {-1, 5, 4});
  b.var("x2", {-1, 6});
  for (auto n : {"m", "a", "r", "m2", "a2", "m3", "a3", "e"}) b.var(n);
  b.var("w", {4, 3}, true);
  b.var("bias", {3}, true);
  b.var("w2", {6, 3}, true);
  b.feed("x");
  b.feed("x2", 1);
  b.op("matmul_v2", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"m"}}}, {{"trans_x", false}, {"trans_y", false}});
  b.op("elementwise_add", {{"X", {"m"}}, {"Y", {"bias"}}}, {{"Out", {"a"}}}, {{"axis", int32_t{-1}}});
  b.op("relu", {{"X", {"a"}}}, {{"Out", {"r"}}});
  b.op("mul", {{"X", {"x2"}}, {"Y", {"w2"}}}, {{"Out", {"m2"}}},
       {{"x_num_col_dims", int32_t{1}}, {"y_num_col_dims", int32_t{1}}});
  b.op("elementwise_add", {{"X", {"m2"}}, {"Y", {"bias"}}}, {{"Out", {"a2"}}}, {{"axis", int32_t{1}}});
  // The matmul output is read twice: not fused.
  b.op("matmul_v2", {{"X", {"x2"}}, {"Y", {"w2"}}}, {{"Out", {"m3"}}});
  b.op("elementwise_add", {{"X", {"m3"}}, {"Y", {"bias"}}}, {{"Out", {"a3"}}});
  b.op("exp", {{"X", {"m3"}}}, {{"Out", {"e"}}});
  b.fetch("r");
  b.fetch("a2", 1);
  b.fetch("a3", 2);
  b.fetch("e", 3);
  Scope params;
  params.set("w", random_tensor(Dims{4, 3}, 6));
  params.set("w2", random_tensor(Dims{6, 3}, 7));
  params.set("bias", random_tensor(Dims{3}, 8));
  std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{2, 5, 4}, 9)},
                                      {"x2", random_tensor(Dims{7, 6}, 10)}};
  auto ref = run(b.p, params, feeds);
  PassStat st = fuse_matmul_bias(b.p, params);
  EXPECT_EQ(st.ops_fused, 2);
  EXPECT_EQ(st.ops_removed, 3);
  EXPECT_EQ(op_types(b.p),
            (std::vector<std::string>{"feed", "feed", "fc", "fc", "matmul_v2", "elementwise_add", "exp",
                                      "fetch", "fetch", "fetch", "fetch"}));
  const OpDesc& fc = b.p.global_block().ops()[2];
  EXPECT_EQ(fc.attr<int32_t>("in_num_col_dims"), 2);
  EXPECT_EQ(fc.attr<std::string>("activation_type"), "relu");
  EXPECT_EQ(fc.output("Out"), std::vector<std::string>{"r"});
  EXPECT_EQ(b.p.global_block().ops()[3].attr<int32_t>("in_num_col_dims"), 1);
  EXPECT_EQ(b.p.global_block().ops()[3].attr<std::string>("activation_type"), "");
  b.p.validate();
  expect_same(run(b.p, params, feeds), ref, "fc");
}

// The 1.x matmul joins the fc fusion when alpha is 1 and nothing is transposed.
TEST(Passes, FuseLegacyMatmulBias) {
  for (float alpha : {1.0f, 2.0f}) {
    Builder b;
    b.var("x", {-1, 4});
    for (auto n : {"m", "a"}) b.var(n);
    b.var("w", {4, 3}, true);
    b.var("bias", {3}, true);
    b.feed("x");
    b.op("matmul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"m"}}},
         {{"transpose_X", false}, {"transpose_Y", false}, {"alpha", alpha}});
    b.op("elementwise_add", {{"X", {"m"}}, {"Y", {"bias"}}}, {{"Out", {"a"}}});
    b.fetch("a");
    Scope params;
    params.set("w", random_tensor(Dims{4, 3}, 50));
    params.set("bias", random_tensor(Dims{3}, 51));
    std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{5, 4}, 52)}};
    auto ref = run(b.p, params, feeds);
    EXPECT_EQ(fuse_matmul_bias(b.p, params).ops_fused, alpha == 1.0f ? 1 : 0);
    expect_same(run(b.p, params, feeds), ref, "legacy matmul");
  }
}

// A fusion moves the write of its output up to the first op; a read of that variable in between (here a
// persistable's old value) blocks it.
TEST(Passes, FusionsKeepReadsOfTheOldValue) {
  Builder b;
  b.var("x", {2, 4});
  for (auto n : {"m", "r", "s"}) b.var(n);
  b.var("w", {4, 3}, true);
  b.var("bias", {3}, true);
  b.var("state", {2, 3}, true);
  b.feed("x");
  b.op("matmul_v2", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"m"}}});
  b.op("relu", {{"X", {"state"}}}, {{"Out", {"r"}}});  // reads the old state
  b.op("elementwise_add", {{"X", {"m"}}, {"Y", {"bias"}}}, {{"Out", {"state"}}});
  b.op("elementwise_add", {{"X", {"r"}}, {"Y", {"state"}}}, {{"Out", {"s"}}});
  b.fetch("s");
  Scope params;
  params.set("w", random_tensor(Dims{4, 3}, 40));
  params.set("bias", random_tensor(Dims{3}, 41));
  params.set("state", random_tensor(Dims{2, 3}, 42));
  std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{2, 4}, 43)}};
  auto ref = run(b.p, params, feeds);
  Program q = b.p;
  Scope qp;
  copy_scope(params, qp);
  EXPECT_EQ(fuse_matmul_bias(q, qp).ops_fused, 0);
  run_inference_passes(q, qp);
  expect_same(run(q, qp, feeds), ref, "old value read");
}

TEST(Passes, FuseElementwiseAddActivation) {
  Builder b;
  b.var("x", {2, 3, 4});
  b.var("y", {3});
  for (auto n : {"s", "r", "s2", "g", "s3", "t"}) b.var(n);
  b.feed("x");
  b.feed("y", 1);
  b.op("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}, {{"Out", {"s"}}}, {{"axis", int32_t{1}}});
  b.op("relu", {{"X", {"s"}}}, {{"Out", {"r"}}});
  b.op("elementwise_add", {{"X", {"r"}}, {"Y", {"x"}}}, {{"Out", {"s2"}}});
  b.op("gelu", {{"X", {"s2"}}}, {{"Out", {"g"}}}, {{"approximate", false}});
  b.op("elementwise_add", {{"X", {"g"}}, {"Y", {"x"}}}, {{"Out", {"s3"}}});
  b.op("tanh", {{"X", {"s3"}}}, {{"Out", {"t"}}});
  b.fetch("t");
  b.fetch("s3", 1);  // s3 is fetched: that add + tanh stays unfused
  Scope params;
  std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{2, 3, 4}, 11)},
                                      {"y", random_tensor(Dims{3}, 12)}};
  auto ref = run(b.p, params, feeds);
  PassStat st = fuse_elementwise_act(b.p);
  EXPECT_EQ(st.ops_fused, 2);
  EXPECT_EQ(op_types(b.p), (std::vector<std::string>{"feed", "feed", "fused_elemwise_add_activation",
                                                     "fused_elemwise_add_activation", "elementwise_add",
                                                     "tanh", "fetch", "fetch"}));
  const OpDesc& f = b.p.global_block().ops()[2];
  EXPECT_EQ(f.attr<std::vector<std::string>>("functor_list"),
            (std::vector<std::string>{"relu", "elementwise_add"}));
  EXPECT_EQ(f.attr<int32_t>("axis"), 1);
  EXPECT_EQ(b.p.global_block().ops()[3].attr<std::vector<std::string>>("functor_list")[0], "gelu");
  b.p.validate();
  expect_same(run(b.p, params, feeds), ref, "fused add act");
}

TEST(Passes, FusedAddActivationTranslationForms) {
  // Out = X + scale * Y (functor_list [elementwise_add, scale]) with IntermediateOut saved.
  Builder b;
  for (auto n : {"x", "y", "o", "i"}) b.var(n, {2, 2});
  b.feed("x");
  b.feed("y", 1);
  b.op("fused_elemwise_add_activation", {{"X", {"x"}}, {"Y", {"y"}}},
       {{"Out", {"o"}}, {"IntermediateOut", {"i"}}},
       {{"functor_list", std::vector<std::string>{"elementwise_add", "scale"}},
        {"scale", 3.0f},
        {"save_intermediate_out", true}});
  b.fetch("o");
  b.fetch("i", 1);
  Scope params;
  auto r = run(b.p, params,
               {{"x", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, Dims{2, 2}, DType::kFloat32)},
                {"y", Tensor::from_vector(std::vector<float>{1, -1, 0, 2}, Dims{2, 2}, DType::kFloat32)}});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{4, -1, 3, 10}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{3, -3, 0, 6}));
  // A functor list without elementwise_add is refused at lowering.
  b.p.global_block().mutable_ops()[2].set_attr("functor_list", std::vector<std::string>{"relu", "tanh"});
  EXPECT_THROW(Executor ex(b.p), Error);
}

TEST(Passes, FoldConvBatchNorm) {
  // mode 0: conv + bn; 1: conv + add([C], axis 1) + bn; 2: conv + add([1, C, 1, 1], axis -1) + bn.
  for (int mode : {0, 1, 2}) {
    bool with_bias = mode > 0;
    Builder b;
    b.var("x", {-1, 3, 6, 6});
    for (auto n : {"c", "cb", "y", "r", "saved_mean", "saved_var"}) b.var(n);
    b.var("filter", {4, 3, 3, 3}, true);
    for (auto n : {"conv_b", "scale", "bias", "mean", "var"}) b.var(n, {4}, true);
    b.feed("x");
    b.op("conv2d", {{"Input", {"x"}}, {"Filter", {"filter"}}}, {{"Output", {"c"}}},
         {{"strides", std::vector<int32_t>{1, 1}},
          {"paddings", std::vector<int32_t>{1, 1}},
          {"dilations", std::vector<int32_t>{1, 1}},
          {"groups", int32_t{1}},
          {"data_format", std::string("NCHW")}});
    std::string bn_in = "c";
    if (with_bias) {
      b.op("elementwise_add", {{"X", {"c"}}, {"Y", {"conv_b"}}}, {{"Out", {"cb"}}},
           {{"axis", int32_t{mode == 1 ? 1 : -1}}});
      bn_in = "cb";
    }
    b.op(
        "batch_norm",
        {{"X", {bn_in}}, {"Scale", {"scale"}}, {"Bias", {"bias"}}, {"Mean", {"mean"}}, {"Variance", {"var"}}},
        {{"Y", {"y"}},
         {"MeanOut", {"mean"}},
         {"VarianceOut", {"var"}},
         {"SavedMean", {"saved_mean"}},
         {"SavedVariance", {"saved_var"}}},
        {{"is_test", true}, {"epsilon", 1e-5f}, {"data_layout", std::string("NCHW")}});
    b.op("relu", {{"X", {"y"}}}, {{"Out", {"r"}}});
    b.fetch("r");
    Scope params;
    params.set("filter", random_tensor(Dims{4, 3, 3, 3}, 20));
    params.set("conv_b", random_tensor(mode == 2 ? Dims{1, 4, 1, 1} : Dims{4}, 21));
    params.set("scale", random_tensor(Dims{4}, 22, 0.5, 2));
    params.set("bias", random_tensor(Dims{4}, 23));
    params.set("mean", random_tensor(Dims{4}, 24));
    params.set("var", random_tensor(Dims{4}, 25, 0.1, 3));
    if (!with_bias) params.erase("conv_b");
    std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{2, 3, 6, 6}, 26)}};
    auto ref = run(b.p, params, feeds);
    PassStat st = fold_conv_bn(b.p, params);
    EXPECT_EQ(st.ops_fused, 1);
    EXPECT_EQ(op_types(b.p),
              (std::vector<std::string>{"feed", "conv2d", "elementwise_add", "relu", "fetch"}));
    const auto& ops = b.p.global_block().ops();
    std::string wn = ops[1].input("Filter")[0], bn = ops[2].input("Y")[0];
    EXPECT_NE(wn, "filter");
    EXPECT_TRUE(params.has(wn) && params.has(bn));
    EXPECT_TRUE(b.g.find_var(wn)->persistable);
    EXPECT_EQ(ops[2].output("Out"), std::vector<std::string>{"y"});
    // The batch_norm parameters and the original filter are gone from the program and the scope.
    for (auto n : {"filter", "scale", "bias", "mean", "var", "conv_b"}) {
      EXPECT_FALSE(params.has(n)) << n;
      EXPECT_FALSE(b.g.has_var(n)) << n;
    }
    b.p.validate();
    expect_same(run(b.p, params, feeds), ref, "conv+bn mode " + std::to_string(mode));
    EXPECT_EQ(ops[2].attr<int32_t>("axis"), 1);
  }
}

// ---- memory reuse -----------------------------------------------------------------------------------

TEST(Passes, MemoryReuseRenamesDeadInputs) {
  Builder b;
  for (auto n : {"x", "a", "s", "r", "t", "k"}) b.var(n, {2, 3});
  b.var("y", {3});
  b.feed("x");
  b.feed("y", 1);
  b.op("exp", {{"X", {"x"}}}, {{"Out", {"a"}}});                            // x is fed: not reused
  b.op("elementwise_add", {{"X", {"a"}}, {"Y", {"y"}}}, {{"Out", {"s"}}});  // s takes a
  b.op("relu", {{"X", {"s"}}}, {{"Out", {"r"}}});                           // r takes a again
  b.op("tanh", {{"X", {"r"}}}, {{"Out", {"t"}}});                           // r is read later: kept
  b.op("elementwise_mul", {{"X", {"t"}}, {"Y", {"r"}}}, {{"Out", {"k"}}});  // k is fetched: kept
  b.fetch("k");
  Scope params;
  std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{2, 3}, 30)},
                                      {"y", random_tensor(Dims{3}, 31)}};
  auto ref = run(b.p, params, feeds);
  PassStat st = memory_reuse(b.p);
  EXPECT_EQ(st.vars_renamed, 2);
  const auto& ops = b.p.global_block().ops();
  EXPECT_EQ(ops[2].output("Out"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[3].output("Out"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[4].input("X"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[4].output("Out"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[5].input("X"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[5].output("Out"), std::vector<std::string>{"t"});
  EXPECT_EQ(ops[6].input("Y"), std::vector<std::string>{"a"});
  EXPECT_EQ(ops[6].output("Out"), std::vector<std::string>{"k"});
  EXPECT_FALSE(b.g.has_var("s"));
  EXPECT_FALSE(b.g.has_var("r"));
  b.p.validate();
  expect_same(run(b.p, params, feeds), ref, "memory reuse");
}

// ---- random programs --------------------------------------------------------------------------------

// Random non-SSA programs mixing every pattern (dead ops, duplicates, rewrites of a variable, in-place
// ops, constant chains, matmul + bias (+ relu), add + act): every pass set keeps the fetched values.
TEST(Passes, RandomProgramsKeepResults) {
  std::mt19937 rng(1234);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  const char* unary[] = {"relu", "tanh", "sigmoid", "abs", "scale", "gelu"};
  const char* binary[] = {"elementwise_add", "elementwise_sub", "elementwise_mul"};
  int fused_total = 0, removed_total = 0, renamed_total = 0;
  for (int prog = 0; prog < 150; ++prog) {
    Builder b;
    b.var("W", {4, 4}, true);
    b.var("B", {4}, true);
    std::vector<std::string> vars{"x", "y"};  // readable variables; x and y are fed
    b.var("x", {3, 4});
    b.var("y", {3, 4});
    b.feed("x");
    b.feed("y", 1);
    int next = 0;
    auto fresh = [&]() {
      std::string n = "v" + std::to_string(next++);
      b.var(n, {3, 4});
      return n;
    };
    auto any = [&]() { return vars[static_cast<size_t>(pick(static_cast<int>(vars.size())))]; };
    // Output: a new variable, or (sometimes) a rewrite of an existing non-fed one.
    auto out_for = [&](const std::string& in) {
      int r = pick(10);
      if (r == 0 && in != "x" && in != "y") return in;  // in place
      if (r == 1 && vars.size() > 2) {
        std::string v = vars[2 + static_cast<size_t>(pick(static_cast<int>(vars.size()) - 2))];
        return v;
      }
      std::string n = fresh();
      vars.push_back(n);
      return n;
    };
    std::vector<OpDesc> pure;  // ops that may be duplicated
    int n_ops = 4 + pick(12);
    for (int k = 0; k < n_ops; ++k) {
      int kind = pick(10);
      if (kind < 3) {
        std::string t = unary[pick(6)], in = any();
        AttrList a;
        if (t == "scale") a = {{"scale", 0.5f + static_cast<float>(pick(3))}, {"bias", 0.25f}};
        if (t == "gelu") a = {{"approximate", false}};
        b.op(t, {{"X", {in}}}, {{"Out", {out_for(in)}}}, a);
        pure.push_back(b.g.ops().back());
      } else if (kind < 5) {
        std::string x = any(), y = any();
        b.op(binary[pick(3)], {{"X", {x}}, {"Y", {y}}}, {{"Out", {out_for(x)}}}, {{"axis", int32_t{-1}}});
        pure.push_back(b.g.ops().back());
      } else if (kind == 5 && !pure.empty()) {  // a duplicate (CSE) writing a fresh variable
        OpDesc d = pure[static_cast<size_t>(pick(static_cast<int>(pure.size())))];
        std::string n = fresh();
        vars.push_back(n);
        d.outputs = {{"Out", {n}}};
        b.g.append_op(d);
      } else if (kind == 6) {  // matmul + bias (+ relu)
        std::string t = fresh(), u = fresh();
        b.op("matmul_v2", {{"X", {any()}}, {"Y", {"W"}}}, {{"Out", {t}}});
        b.op("elementwise_add", {{"X", {t}}, {"Y", {"B"}}}, {{"Out", {u}}});
        if (pick(2)) {
          std::string r = fresh();
          b.op("relu", {{"X", {u}}}, {{"Out", {r}}});
          vars.push_back(r);
        } else {
          vars.push_back(u);
        }
      } else if (kind == 7) {  // constant chain added to a variable
        std::string c = fresh(), c2 = fresh(), o = fresh();
        b.op("fill_constant", {}, {{"Out", {c}}},
             {{"shape", std::vector<int64_t>{3, 4}},
              {"dtype", int32_t{5}},
              {"value", 0.5f * static_cast<float>(pick(4))}});
        b.op("scale", {{"X", {c}}}, {{"Out", {c2}}}, {{"scale", 2.0f}, {"bias", -0.5f}});
        b.op("elementwise_add", {{"X", {any()}}, {"Y", {c2}}}, {{"Out", {o}}});
        vars.push_back(o);
      } else {  // add + act
        std::string s1 = fresh(), o = fresh();
        b.op("elementwise_add", {{"X", {any()}}, {"Y", {any()}}}, {{"Out", {s1}}});
        b.op(pick(2) ? "relu" : "tanh", {{"X", {s1}}}, {{"Out", {o}}});
        vars.push_back(o);
      }
    }
    int n_fetch = 1 + pick(3);
    std::vector<std::string> fetched;
    for (int f = 0; f < n_fetch; ++f) {
      std::string v = f == 0 ? vars.back() : any();  // the last result, and maybe others
      if (std::find(fetched.begin(), fetched.end(), v) != fetched.end()) continue;
      b.fetch(v, static_cast<int>(fetched.size()));
      fetched.push_back(v);
    }
    Scope params;
    params.set("W", random_tensor(Dims{4, 4}, 100 + prog));
    params.set("B", random_tensor(Dims{4}, 200 + prog));
    std::map<std::string, Tensor> feeds{{"x", random_tensor(Dims{3, 4}, 300 + prog)},
                                        {"y", random_tensor(Dims{3, 4}, 400 + prog)}};
    auto ref = run(b.p, params, feeds);
    for (int mask : {127, 1, 2, 4, 8, 16, 32, 64, 63}) {
      PassOptions o;
      o.dce = mask & 1, o.cse = mask & 2, o.constant_folding = mask & 4, o.fold_conv_bn = mask & 8;
      o.fuse_matmul_bias = mask & 16, o.fuse_elementwise_act = mask & 32, o.memory_reuse = mask & 64;
      Program q = b.p;
      Scope qp;
      copy_scope(params, qp);
      PassReport r = run_inference_passes(q, qp, o);
      q.validate();
      std::string what = "program " + std::to_string(prog) + " mask " + std::to_string(mask) + "\n" +
                         b.p.to_string() + "\n-> " + q.to_string();
      expect_same(run(q, qp, feeds), ref, what);
      if (HasFatalFailure()) return;
      if (mask == 127)
        for (auto& ps : r.passes) {
          fused_total += static_cast<int>(ps.ops_fused);
          removed_total += static_cast<int>(ps.ops_removed);
          renamed_total += static_cast<int>(ps.vars_renamed);
        }
    }
  }
  std::printf("random programs: %d ops removed, %d patterns fused, %d variables renamed\n", removed_total,
              fused_total, renamed_total);
  EXPECT_GT(fused_total, 50);
  EXPECT_GT(renamed_total, 20);
}

// ---- fixtures ---------------------------------------------------------------------------------------

namespace {

struct FixtureRun {
  std::vector<Tensor> out;
  ExecutorStats stats;
  size_t ops = 0;
};

FixtureRun run_fixture(const std::string& model, const PassOptions* opts, PassReport* report = nullptr) {
  Program p = Program::load(fixture(model + "/model.pdmodel"));
  Scope params = load_param_scope(p, read_file_bytes(fixture(model + "/model.pdiparams"), 1 << 24));
  if (opts) {
    PassReport r = run_inference_passes(p, params, *opts);
    if (report) *report = r;
    p.validate();
  }
  ExecutorOptions eo;
  eo.collect_stats = true;
  Executor ex(p, cpu_place(), eo);
  copy_scope(params, ex.scope());
  Npy in = read_npy(fixture(model + "/input.npy"));
  FixtureRun fr;
  fr.out = ex.run({{ex.feed_names()[0], npy_tensor(in)}});
  fr.stats = ex.stats();
  fr.ops = p.global_block().ops().size();
  return fr;
}

void expect_matches_paddle(const Tensor& got, const std::string& model) {
  Npy ref = read_npy(fixture(model + "/output.npy"));
  std::vector<float> r(ref.data.size() / 4);
  std::memcpy(r.data(), ref.data.data(), ref.data.size());
  std::vector<float> g = got.cpu().to_vector<float>();
  ASSERT_EQ(g.size(), r.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_LE(std::fabs(g[i] - r[i]), 1e-5 + 1e-5 * std::fabs(r[i])) << i;
}

class PassFixtures : public ::testing::TestWithParam<std::string> {};

}  // namespace

// Each pass alone, then all of them: the outputs equal the unoptimised run's and Paddle's.
TEST_P(PassFixtures, EachPassKeepsResults) {
  const std::string model = GetParam();
  FixtureRun base = run_fixture(model, nullptr);
  expect_matches_paddle(base.out[0], model);
  for (int k = 0; k < 8; ++k) {
    PassOptions o;
    if (k < 7) {  // k < 7: only pass k; k == 7: all
      o.dce = k == 0, o.constant_folding = k == 1, o.cse = k == 2, o.fuse_elementwise_act = k == 3,
      o.fuse_matmul_bias = k == 4, o.fold_conv_bn = k == 5, o.memory_reuse = k == 6;
    }
    PassReport rep;
    FixtureRun opt = run_fixture(model, &o, &rep);
    expect_same(opt.out, base.out, model + " pass set " + std::to_string(k) + ": " + rep.to_string());
    expect_matches_paddle(opt.out[0], model);
    if (k == 7) std::printf("%s: %s\n", model.c_str(), rep.to_string().c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PassFixtures, ::testing::Values("mlp", "lenet", "static_mlp"));

TEST(Passes, FixtureOpLists) {
  PassOptions all;
  PassReport rep;
  run_fixture("lenet", &all, &rep);
  Program p = Program::load(fixture("lenet/model.pdmodel"));
  Scope params = load_param_scope(p, read_file_bytes(fixture("lenet/model.pdiparams"), 1 << 24));
  run_inference_passes(p, params);
  // conv + add + batch_norm + relu -> conv2d + fused add/relu; matmul_v2 + add -> fc.
  std::vector<std::string> t = op_types(p);
  EXPECT_EQ(std::count(t.begin(), t.end(), "batch_norm"), 0);
  EXPECT_EQ(std::count(t.begin(), t.end(), "fc"), 1);
  EXPECT_EQ(std::count(t.begin(), t.end(), "fused_elemwise_add_activation"), 2);
  EXPECT_LT(rep.ops_after, rep.ops_before);
  // Running the passes again changes nothing.
  Program again = p;
  run_inference_passes(again, params);
  EXPECT_EQ(again, p);
  // The MLP: two matmul_v2 + add (+ relu) become fc ops.
  Program m = Program::load(fixture("mlp/model.pdmodel"));
  Scope mp = load_param_scope(m, read_file_bytes(fixture("mlp/model.pdiparams"), 1 << 24));
  run_inference_passes(m, mp);
  t = op_types(m);
  EXPECT_GE(std::count(t.begin(), t.end(), "fc"), 2);
  EXPECT_EQ(std::count(t.begin(), t.end(), "matmul_v2"), 0);
}

TEST(Passes, MemoryReuseLowersLenetPeak) {
  PassOptions without;
  without.memory_reuse = false;
  PassOptions with;
  FixtureRun none = run_fixture("lenet", nullptr);
  FixtureRun a = run_fixture("lenet", &without), b = run_fixture("lenet", &with);
  expect_same(b.out, a.out, "lenet memory reuse");
  std::printf("lenet peak live bytes without passes: %lld\n",
              static_cast<long long>(none.stats.peak_live_bytes));
  std::printf(
      "lenet peak live bytes / tensors: %lld / %lld without memory reuse, %lld / %lld with\n",
      static_cast<long long>(a.stats.peak_live_bytes), static_cast<long long>(a.stats.peak_live_tensors),
      static_cast<long long>(b.stats.peak_live_bytes), static_cast<long long>(b.stats.peak_live_tensors));
  EXPECT_LT(b.stats.peak_live_bytes, a.stats.peak_live_bytes);
}

// On sim:0: parameters on the device, folded tensors computed and stored there.
TEST(Passes, LenetOnSim) {
  Place sim = Place::parse("sim:0");
  Program p = Program::load(fixture("lenet/model.pdmodel"));
  Scope params = load_param_scope(p, read_file_bytes(fixture("lenet/model.pdiparams"), 1 << 24), sim);
  PassOptions o;
  o.place = sim;
  run_inference_passes(p, params, o);
  for (auto& n : params.names()) EXPECT_EQ(params.find(n)->place(), sim) << n;
  Executor ex(p, sim);
  copy_scope(params, ex.scope());
  auto r = ex.run({{"image", npy_tensor(read_npy(fixture("lenet/input.npy")))}});
  EXPECT_EQ(r[0].place(), sim);
  expect_matches_paddle(r[0], "lenet");
}

// Programs with sub-blocks: nothing the sub-block names is renamed or removed.
TEST(Passes, SubBlocksAreLeftAlone) {
  Program p = Program::load(fixture("while_loop/model.pdmodel"));
  Program before = p;
  Scope params;
  run_inference_passes(p, params);
  for (int32_t bi = 1; bi < p.num_blocks(); ++bi) EXPECT_EQ(p.block(bi), before.block(bi));
  p.validate();
  // Every op of block 0 that names a sub-block is still there, with the same slots.
  std::vector<OpDesc> ctl_before, ctl_after;
  for (auto& o : before.global_block().ops())
    if (o.type == "while" || o.type == "conditional_block") ctl_before.push_back(o);
  for (auto& o : p.global_block().ops())
    if (o.type == "while" || o.type == "conditional_block") ctl_after.push_back(o);
  EXPECT_EQ(ctl_before, ctl_after);
  EXPECT_FALSE(ctl_after.empty());
}
