// The attention training passes (framework/src/ir/attention_passes.cc) on hand-built native programs:
// where the fused op goes, and chains they must leave alone. Values are compared in
// tests/python/test_attention_fusion.py.
#include <gtest/gtest.h>
#include <oar/ir/training_passes.h>

#include <string>
#include <vector>

using namespace oar;
using namespace oar::ir;

namespace {

struct Builder {
  Program p;
  void var(const std::string& n, std::vector<int64_t> shape) {
    VarDesc v;
    v.name = n;
    v.dtype = DType::kFloat32;
    v.shape = std::move(shape);
    p.global_block().add_var(v);
  }
  void op(const std::string& type, Slots in, Slots out,
          std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    OpDesc o;
    o.type = "oar." + type;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.attrs = std::move(attrs);
    p.global_block().append_op(o);
  }
  void matmul(const std::string& x, const std::string& y, const std::string& out, int64_t tx, int64_t ty) {
    op("matmul", {{"x", {x}}, {"y", {y}}}, {{"out", {out}}}, {{"transpose_x", tx}, {"transpose_y", ty}});
  }
};

std::vector<std::string> types(const Program& p) {
  std::vector<std::string> t;
  for (auto& o : p.global_block().ops()) t.push_back(o.type);
  return t;
}

// q, k, v [2, 3, 4], scores and softmax [2, 3, 3], out [2, 3, 4], and a spare w like v.
Builder attention_vars() {
  Builder b;
  for (const char* n : {"q", "k", "v", "w", "o", "r"}) b.var(n, {2, 3, 4});
  for (const char* n : {"s", "p", "c"}) b.var(n, {2, 3, 3});
  return b;
}

}  // namespace

TEST(AttentionPasses, ForwardFusesAtTheFirstOpAndKeepsTheSoftmax) {
  Builder b = attention_vars();
  b.matmul("q", "k", "s", 0, 1);
  b.op("softmax", {{"x", {"s"}}}, {{"out", {"p"}}}, {{"axis", int64_t{2}}});
  b.matmul("p", "v", "o", 0, 0);
  b.op("copy", {{"x", {"p"}}}, {{"out", {"c"}}});  // the softmax has another reader: still written
  PassStat st = fuse_attention(b.p, {"q", "k", "v", "o", "c"});
  EXPECT_EQ(st.ops_fused, 1);
  EXPECT_EQ(st.ops_removed, 2);
  ASSERT_EQ(types(b.p), (std::vector<std::string>{"oar.fused_attention", "oar.copy"}));
  const OpDesc& f = b.p.global_block().ops()[0];
  EXPECT_EQ(f.input("x"), (std::vector<std::string>{"q", "k", "v"}));
  EXPECT_EQ(f.output("out"), std::vector<std::string>{"o"});
  EXPECT_EQ(f.output("softmax"), std::vector<std::string>{"p"});
  EXPECT_EQ(b.p.global_block().find_var("s"), nullptr);  // the scores are gone
}

TEST(AttentionPasses, ForwardSinksWhenAnInputIsComputedLate) {
  // v is computed after the scores: the fused op takes the product's place.
  Builder b = attention_vars();
  b.matmul("q", "k", "s", 0, 1);
  b.op("softmax", {{"x", {"s"}}}, {{"out", {"p"}}}, {{"axis", int64_t{-1}}});
  b.op("copy", {{"x", {"w"}}}, {{"out", {"v"}}});
  b.matmul("p", "v", "o", 0, 0);
  EXPECT_EQ(fuse_attention(b.p, {"q", "k", "w", "o"}).ops_fused, 1);
  EXPECT_EQ(types(b.p), (std::vector<std::string>{"oar.copy", "oar.fused_attention"}));
}

TEST(AttentionPasses, ForwardLeavesAChainNoPlaceFits) {
  // v is written between the chain's ops (no hoisting) and the softmax is read before the product (no
  // sinking): the program stays as it is.
  Builder b = attention_vars();
  b.matmul("q", "k", "s", 0, 1);
  b.op("softmax", {{"x", {"s"}}}, {{"out", {"p"}}}, {{"axis", int64_t{2}}});
  b.op("copy", {{"x", {"p"}}}, {{"out", {"c"}}});
  b.op("copy", {{"x", {"w"}}}, {{"out", {"v"}}});
  b.matmul("p", "v", "o", 0, 0);
  const std::vector<std::string> before = types(b.p);
  EXPECT_EQ(fuse_attention(b.p, {"q", "k", "w", "o", "c"}).ops_fused, 0);
  EXPECT_EQ(types(b.p), before);
}

TEST(AttentionPasses, PinnedScoresOrAnotherSoftmaxAxisAreLeftAlone) {
  for (int variant = 0; variant < 2; ++variant) {
    Builder b = attention_vars();
    b.matmul("q", "k", "s", 0, 1);
    b.op("softmax", {{"x", {"s"}}}, {{"out", {"p"}}}, {{"axis", int64_t{variant == 0 ? 2 : 1}}});
    b.matmul("p", "v", "o", 0, 0);
    std::set<std::string> pinned = {"q", "k", "v", "o"};
    if (variant == 0) pinned.insert("s");
    EXPECT_EQ(fuse_attention(b.p, pinned).ops_fused, 0) << variant;
    EXPECT_EQ(b.p.global_block().ops().size(), 3u) << variant;
  }
}

TEST(AttentionPasses, BackwardFusesTheFiveGradientOps) {
  Builder b = attention_vars();
  for (const char* n : {"g", "dq", "dk", "dv"}) b.var(n, {2, 3, 4});
  for (const char* n : {"dp", "ds"}) b.var(n, {2, 3, 3});
  b.matmul("g", "v", "dp", 0, 1);
  b.matmul("p", "g", "dv", 1, 0);
  b.op("softmax_grad", {{"out", {"p"}}, {"grad", {"dp"}}}, {{"out", {"ds"}}}, {{"axis", int64_t{2}}});
  b.matmul("ds", "k", "dq", 0, 0);
  b.matmul("ds", "q", "dk", 1, 0);
  PassStat st = fuse_attention(b.p, {"q", "k", "v", "p", "g", "dq", "dk", "dv"});
  EXPECT_EQ(st.ops_fused, 1);
  EXPECT_EQ(st.ops_removed, 4);
  ASSERT_EQ(types(b.p), std::vector<std::string>{"oar.fused_attention_grad"});
  const OpDesc& f = b.p.global_block().ops()[0];
  EXPECT_EQ(f.input("dout"), std::vector<std::string>{"g"});
  EXPECT_EQ(f.output("dk"), std::vector<std::string>{"dk"});
}

TEST(AttentionPasses, BackwardLeavesAScoresGradientReadElsewhere) {
  // A mask that needs a gradient reads dS: the block stays unfused.
  Builder b = attention_vars();
  for (const char* n : {"g", "dq", "dk", "dv"}) b.var(n, {2, 3, 4});
  for (const char* n : {"dp", "ds", "dm"}) b.var(n, {2, 3, 3});
  b.matmul("g", "v", "dp", 0, 1);
  b.matmul("p", "g", "dv", 1, 0);
  b.op("softmax_grad", {{"out", {"p"}}, {"grad", {"dp"}}}, {{"out", {"ds"}}}, {{"axis", int64_t{2}}});
  b.matmul("ds", "k", "dq", 0, 0);
  b.matmul("ds", "q", "dk", 1, 0);
  b.op("copy", {{"x", {"ds"}}}, {{"out", {"dm"}}});
  EXPECT_EQ(fuse_attention(b.p, {"q", "k", "v", "p", "g", "dq", "dk", "dv", "dm"}).ops_fused, 0);
  EXPECT_EQ(b.p.global_block().ops().size(), 6u);
}

TEST(AttentionPasses, BackwardLeavesABroadcastOutputGradient) {
  // g [3, 4] broadcast over the batch by the products: fused_attention_grad takes g of q's batch only.
  Builder b = attention_vars();
  b.var("g", {3, 4});
  for (const char* n : {"dq", "dk", "dv"}) b.var(n, {2, 3, 4});
  for (const char* n : {"dp", "ds"}) b.var(n, {2, 3, 3});
  b.matmul("g", "v", "dp", 0, 1);
  b.matmul("p", "g", "dv", 1, 0);
  b.op("softmax_grad", {{"out", {"p"}}, {"grad", {"dp"}}}, {{"out", {"ds"}}}, {{"axis", int64_t{2}}});
  b.matmul("ds", "k", "dq", 0, 0);
  b.matmul("ds", "q", "dk", 1, 0);
  EXPECT_EQ(fuse_attention(b.p, {"q", "k", "v", "p", "g", "dq", "dk", "dv"}).ops_fused, 0);
  EXPECT_EQ(b.p.global_block().ops().size(), 5u);
}
