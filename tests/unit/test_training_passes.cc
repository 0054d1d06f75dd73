// Training fusion passes (framework/src/ir/training_passes.cc) on hand-built native programs: what must
// block a fusion in a program that is not SSA (a second write, a write in between, a pinned name), and the
// driver's report. tests/python/test_training_passes.py runs the fused programs against the unfused ones.
#include <gtest/gtest.h>
#include <oar/ir/program.h>
#include <oar/ir/training_passes.h>

#include <string>
#include <vector>

using namespace oar;
using namespace oar::ir;

namespace {

struct Builder {
  Program p;
  Block& g = p.global_block();
  void var(const std::string& n, std::vector<int64_t> shape, bool persistable = false) {
    VarDesc v;
    v.name = n;
    v.shape = std::move(shape);
    v.persistable = persistable;
    g.add_var(v);
  }
  void op(const std::string& type, Slots in, Slots out,
          std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    OpDesc o;
    o.type = "oar." + type;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.attrs = std::move(attrs);
    g.append_op(o);
  }
  // x [4, 8] @ w [8, 6] + b [6] -> a, relu(a) -> r
  void linear_relu() {
    var("x", {4, 8});
    var("w", {8, 6}, true);
    var("b", {6}, true);
    var("t", {4, 6});
    var("a", {4, 6});
    var("r", {4, 6});
    op("matmul", {{"x", {"x"}}, {"y", {"w"}}}, {{"out", {"t"}}},
       {{"transpose_x", int64_t{0}}, {"transpose_y", int64_t{0}}});
    op("add", {{"x", {"t"}}, {"y", {"b"}}}, {{"out", {"a"}}});
    op("relu", {{"x", {"a"}}}, {{"out", {"r"}}});
  }
};

std::vector<std::string> types(const Program& p) {
  std::vector<std::string> t;
  for (auto& o : p.global_block().ops()) t.push_back(o.type);
  return t;
}

TEST(TrainingPasses, GemmEpilogueTakesTheChain) {
  Builder b;
  b.linear_relu();
  PassStat s = fuse_gemm_epilogue(b.p, {"x", "r"});
  EXPECT_EQ(types(b.p), std::vector<std::string>{"oar.fused_gemm_epilogue"});
  EXPECT_EQ(s.ops_fused, 1);
  EXPECT_EQ(s.ops_removed, 2);
  const OpDesc& f = b.p.global_block().ops()[0];
  EXPECT_EQ(f.attr<std::string>("activation"), "relu");
  EXPECT_EQ(f.output("out"), std::vector<std::string>{"r"});
  EXPECT_FALSE(b.g.has_var("t"));  // the dropped intermediates' descriptions go too
  EXPECT_FALSE(b.g.has_var("a"));
}

TEST(TrainingPasses, PinnedProductIsNotFused) {
  Builder b;
  b.linear_relu();
  EXPECT_EQ(fuse_gemm_epilogue(b.p, {"x", "r", "t"}).ops_fused, 0);
  EXPECT_EQ(types(b.p).size(), 3u);
}

TEST(TrainingPasses, SecondWriteOfTheSumBlocksTheFusion) {
  Builder b;
  b.linear_relu();
  b.op("scale", {{"x", {"r"}}}, {{"out", {"a"}}});  // a written again after relu read it
  EXPECT_EQ(fuse_gemm_epilogue(b.p, {"x", "r"}).ops_fused, 0);
  EXPECT_EQ(types(b.p).size(), 4u);
}

TEST(TrainingPasses, BiasWrittenInBetweenBlocksTheFusion) {
  Builder b;
  b.var("x", {4, 8});
  b.var("w", {8, 6}, true);
  b.var("b", {6});
  b.var("t", {4, 6});
  b.var("a", {4, 6});
  b.op("matmul", {{"x", {"x"}}, {"y", {"w"}}}, {{"out", {"t"}}});
  b.op("scale", {{"x", {"b"}}}, {{"out", {"b"}}});  // b changes between the product and the add
  b.op("add", {{"x", {"t"}}, {"y", {"b"}}}, {{"out", {"a"}}});
  EXPECT_EQ(fuse_gemm_epilogue(b.p, {"x", "a"}).ops_fused, 0);
}

TEST(TrainingPasses, LinearParamGradAndAWriteInBetween) {
  for (bool write_between : {false, true}) {
    Builder b;
    b.var("x", {2, 3, 8});
    b.var("g", {2, 3, 6});
    b.var("db", {6});
    b.var("x2", {6, 8});
    b.var("g2", {6, 6});
    b.var("dw", {8, 6});
    b.op("sum", {{"x", {"g"}}}, {{"out", {"db"}}},
         {{"axis", std::vector<int64_t>{0, 1}}, {"keepdim", int64_t{0}}});
    if (write_between) b.op("scale", {{"x", {"x"}}}, {{"out", {"x"}}});
    b.op("reshape", {{"x", {"x"}}}, {{"out", {"x2"}}}, {{"shape", std::vector<int64_t>{-1, 8}}});
    b.op("reshape", {{"x", {"g"}}}, {{"out", {"g2"}}}, {{"shape", std::vector<int64_t>{-1, 6}}});
    b.op("matmul", {{"x", {"x2"}}, {"y", {"g2"}}}, {{"out", {"dw"}}},
         {{"transpose_x", int64_t{1}}, {"transpose_y", int64_t{0}}});
    PassStat s = fuse_gemm_epilogue(b.p, {"g", "db", "dw"});
    if (write_between) {
      EXPECT_EQ(s.ops_fused, 0);
    } else {
      EXPECT_EQ(types(b.p), std::vector<std::string>{"oar.fused_linear_param_grad"});
      EXPECT_EQ(s.ops_removed, 3);
    }
  }
}

TEST(TrainingPasses, ResidualLayerNormKeepsTheSum) {
  Builder b;
  b.var("x", {4, 8});
  b.var("r", {4, 8});
  b.var("s", {4, 8});
  b.var("w", {8}, true);
  b.var("bb", {8}, true);
  for (const char* n : {"o", "m", "rs"}) b.var(n, {4});
  b.op("add", {{"x", {"x"}}, {"y", {"r"}}}, {{"out", {"s"}}});
  b.op("layer_norm", {{"x", {"s"}}, {"weight", {"w"}}, {"bias", {"bb"}}},
       {{"out", {"o"}}, {"mean", {"m"}}, {"rstd", {"rs"}}},
       {{"begin_norm_axis", int64_t{1}}, {"epsilon", 1e-5}});
  EXPECT_EQ(fuse_residual_layer_norm(b.p, {"o"}).ops_fused, 1);
  const OpDesc& f = b.p.global_block().ops().at(0);
  EXPECT_EQ(f.type, "oar.fused_add_layer_norm");
  EXPECT_EQ(f.output("sum"), std::vector<std::string>{"s"});
}

TEST(TrainingPasses, DriverReportsBothPrograms) {
  Builder f, g;
  f.linear_relu();
  g.linear_relu();
  TrainingPassOptions o;
  o.fuse_residual_layer_norm = false;
  PassReport r = run_training_passes(f.p, &g.p, {"x", "r"}, {"x", "r"}, o);
  EXPECT_EQ(r.ops_before, 6);
  EXPECT_EQ(r.ops_after, 2);
  ASSERT_NE(r.find("fuse_gemm_epilogue[backward]"), nullptr);
  EXPECT_EQ(r.find("fuse_gemm_epilogue[backward]")->ops_fused, 1);
  EXPECT_EQ(r.find("fuse_residual_layer_norm"), nullptr);
}

}  // namespace
