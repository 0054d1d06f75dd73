// The executor runs models written by the real PaddlePaddle (tests/fixtures/paddle) and reproduces
// Paddle's own outputs; garbage collection, and the errors for unknown ops and bad feeds.
#include <gtest/gtest.h>
#include <oar/core/autograd.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/ir/executor.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "program_test_util.h"

using namespace oar;
using namespace oar::ir;

namespace {

// Like numpy.allclose(got, ref, rtol=1e-5, atol=1e-6).
void expect_close(const Tensor& got, const Npy& ref, const std::string& what) {
  ASSERT_EQ(got.dims().to_vector(), ref.shape) << what;
  ASSERT_EQ(got.dtype(), DType::kFloat32) << what;
  std::vector<float> g = got.cpu().to_vector<float>();
  std::vector<float> r(g.size());
  ASSERT_EQ(ref.data.size(), r.size() * 4) << what;
  std::memcpy(r.data(), ref.data.data(), ref.data.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_LE(std::fabs(g[i] - r[i]), 1e-6 + 1e-5 * std::fabs(r[i])) << what << " element " << i;
}

std::unique_ptr<Executor> load_model(const std::string& model, Place place, ExecutorOptions opts = {}) {
  Program p = Program::load(fixture(model + "/model.pdmodel"));
  auto ex = std::make_unique<Executor>(p, place, opts);
  ex->load_params_file(fixture(model + "/model.pdiparams"));
  return ex;
}

class PaddleModels : public ::testing::TestWithParam<std::string> {};

void run_fixture(const std::string& model, Place place) {
  auto ex = load_model(model, place);
  ASSERT_EQ(ex->feed_names().size(), 1u);
  ASSERT_EQ(ex->fetch_names().size(), 1u);
  Npy in = read_npy(fixture(model + "/input.npy"));
  Npy out = read_npy(fixture(model + "/output.npy"));
  std::vector<Tensor> r = ex->run({{ex->feed_names()[0], npy_tensor(in)}});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].place(), place);
  expect_close(r[0], out, model + " on " + place.to_string());
  // A second run reuses the lowered program and gives the same result.
  r = ex->run({{ex->feed_names()[0], npy_tensor(in)}});
  expect_close(r[0], out, model + " (second run)");
  EXPECT_EQ(ex->stats().runs, 2);
  // Only the parameters stay in the scope between runs.
  EXPECT_EQ(ex->scope().size(),
            combined_param_names(Program::load(fixture(model + "/model.pdmodel"))).size());
}

}  // namespace

TEST_P(PaddleModels, MatchesPaddleOnCpu) { run_fixture(GetParam(), cpu_place()); }

TEST_P(PaddleModels, MatchesPaddleOnSim) { run_fixture(GetParam(), Place::parse("sim:0")); }

// lstm, gru_rnn, rnn_seqlen: Paddle's fused `rnn` op in modes LSTM (2 bidirectional layers), GRU,
// RNN_RELU, RNN_TANH, and with SequenceLength (LSTM bidirectional, GRU).
INSTANTIATE_TEST_SUITE_P(Fixtures, PaddleModels,
                         ::testing::Values("mlp", "lenet", "static_mlp", "lstm", "gru_rnn", "rnn_seqlen"));

TEST(Executor, FeedAndFetchNames) {
  auto ex = load_model("lenet", cpu_place());
  EXPECT_EQ(ex->feed_names(), std::vector<std::string>{"image"});
  EXPECT_EQ(ex->fetch_names(), std::vector<std::string>{"linear_0.tmp_1"});
  EXPECT_EQ(ex->num_instructions(), 16u);
}

TEST(Executor, GarbageCollectionLowersPeak) {
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  ExecutorOptions keep;
  keep.garbage_collect = false;
  keep.collect_stats = true;
  ExecutorOptions gc;
  gc.collect_stats = true;
  auto a = load_model("lenet", cpu_place(), keep);
  auto b = load_model("lenet", cpu_place(), gc);
  expect_close(a->run({{"image", npy_tensor(in)}})[0], out, "no gc");
  expect_close(b->run({{"image", npy_tensor(in)}})[0], out, "gc");
  std::printf("lenet peak live tensors / bytes: %lld / %lld without GC, %lld / %lld with GC\n",
              static_cast<long long>(a->stats().peak_live_tensors),
              static_cast<long long>(a->stats().peak_live_bytes),
              static_cast<long long>(b->stats().peak_live_tensors),
              static_cast<long long>(b->stats().peak_live_bytes));
  EXPECT_EQ(a->stats().released, 0);
  EXPECT_GT(b->stats().released, 10);
  // Without GC every intermediate stays alive: image + 14 temporaries (XShape / SavedMean are not
  // produced). With GC at most a producer's inputs and outputs are alive at once.
  EXPECT_GE(a->stats().peak_live_tensors, 14);
  EXPECT_LE(b->stats().peak_live_tensors, 3);
  EXPECT_LT(b->stats().peak_live_bytes, a->stats().peak_live_bytes);
  EXPECT_EQ(b->stats().live_tensors, 0);
  // The conv output dies right after the elementwise_add that reads it.
  const auto& rel = b->released_after(3);
  EXPECT_NE(std::find(rel.begin(), rel.end(), "conv2d_0.tmp_0"), rel.end());
  // Persistables and the fetch target are never in a release list.
  for (size_t i = 0; i < b->num_instructions(); ++i)
    for (auto& n : b->released_after(i)) {
      EXPECT_NE(n, "conv2d_0.w_0");
      EXPECT_NE(n, "linear_0.tmp_1");
      EXPECT_NE(n, "feed");
    }
}

// The scope's buffer pool (decision 145): only buffers nobody else can see are kept, at most as many
// per size as a run asked for, handed back reshaped, and given back once no run asks for the size.
TEST(Executor, ScopeRecyclesOnlyUnsharedBuffers) {
  Scope s;
  const int32_t user = s.add_pool_user();
  Device* dev = &Runtime::get().device(cpu_place());
  const TensorMeta m16{DType::kFloat32, Dims{16}}, m2x8{DType::kFloat32, Dims{2, 8}};
  s.new_run(user);
  Tensor a = Tensor::empty(Dims{4, 4}, DType::kFloat32);
  EXPECT_FALSE(s.recycle(a)) << "no run asked for 64 bytes yet";
  EXPECT_FALSE(s.take(64, dev, m16).defined()) << "nothing kept: the caller allocates";
  Tensor view = a.reshape(Dims{16});  // shares a's storage
  EXPECT_FALSE(s.recycle(a)) << "a view still reads the storage";
  view = Tensor();
  Tensor alias = a;
  EXPECT_FALSE(s.recycle(a)) << "another Tensor holds the same impl";
  alias = Tensor();
  Tensor graded = Tensor::empty(Dims{16}, DType::kFloat32);
  autograd::set_requires_grad(graded, true);
  EXPECT_FALSE(s.recycle(graded)) << "autograd state";
  const void* data = a.storage()->data();
  EXPECT_TRUE(s.recycle(a));
  EXPECT_EQ(s.recycled_count(), 1u);
  Tensor b = Tensor::empty(Dims{16}, DType::kFloat32);
  EXPECT_FALSE(s.recycle(b)) << "one take of 64 bytes per run: one buffer kept";
  Tensor got = s.take(64, dev, m2x8);
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.storage()->data(), data);
  EXPECT_EQ(got.dims(), (Dims{2, 8}));
  EXPECT_TRUE(got.is_contiguous());
  EXPECT_EQ(s.recycled_count(), 0u);
  // A permuted view covering its whole storage is reshaped contiguous when taken.
  Tensor t = Tensor::empty(Dims{4, 4}, DType::kFloat32).transpose({1, 0});
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_TRUE(s.recycle(t));
  EXPECT_TRUE(s.take(64, dev, m16).is_contiguous());
  // Two runs without a take of 64 bytes: the size is stale, its buffers go back to the allocator.
  Tensor c = Tensor::empty(Dims{16}, DType::kFloat32);
  EXPECT_TRUE(s.recycle(c));
  s.new_run(user);
  EXPECT_EQ(s.recycled_count(), 1u) << "asked for in the previous run";
  s.new_run(user);
  EXPECT_EQ(s.recycled_count(), 0u);
  Tensor d = Tensor::empty(Dims{16}, DType::kFloat32);
  EXPECT_FALSE(s.recycle(d));
  // Two users (a forward and a backward executor): each one's most takes count; a user removed (its
  // executor destroyed, e.g. re-lowered for a new learning rate) stops counting and its id is reused.
  const int32_t other = s.add_pool_user();
  s.new_run(user);
  EXPECT_FALSE(s.take(64, dev, m16).defined());
  s.new_run(other);
  EXPECT_FALSE(s.take(64, dev, m16).defined());
  EXPECT_FALSE(s.take(64, dev, m16).defined());
  for (int i = 0; i < 4; ++i) {
    Tensor e = Tensor::empty(Dims{16}, DType::kFloat32);
    EXPECT_EQ(s.recycle(e), i < 3) << i;  // 1 + 2 takes
  }
  s.remove_pool_user(other);
  EXPECT_EQ(s.recycled_count(), 1u);
  EXPECT_EQ(s.add_pool_user(), other);
}

TEST(Executor, UnknownOpFailsAtLowering) {
  Program p = Program::load(fixture("mlp/model.pdmodel"));
  p.global_block().mutable_ops()[3].type = "my_custom_relu";
  try {
    Executor ex(p);
    ADD_FAILURE() << "lowered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    std::string m = e.what();
    EXPECT_NE(m.find("'my_custom_relu'"), std::string::npos) << m;
    EXPECT_NE(m.find("block 0, op 3"), std::string::npos) << m;
  }
}

// Paddle's own while_loop program (a `while` op over a sub-block) runs and gives Paddle's output.
TEST(Executor, PaddleWhileLoop) {
  Program w = Program::load(fixture("while_loop/model.pdmodel"));
  Executor ex(w);
  Npy in = read_npy(fixture("while_loop/input.npy"));
  std::map<std::string, Tensor> feeds{{ex.feed_names()[0], npy_tensor(in)}};
  expect_close(ex.run(feeds)[0], read_npy(fixture("while_loop/output.npy")), "while_loop");
}

// The rnn translation refuses what it does not implement, naming the op and the reason.
TEST(Executor, RnnRefusals) {
  auto lowering_error = [](const std::function<void(OpDesc&)>& edit) -> std::string {
    Program p = Program::load(fixture("lstm/model.pdmodel"));
    for (OpDesc& op : p.global_block().mutable_ops())
      if (op.type == "rnn") edit(op);
    try {
      Executor ex(p);
    } catch (const Error& e) {
      return e.what();
    }
    return "lowered";
  };
  std::string m = lowering_error([](OpDesc& op) { op.set_attr("mode", std::string("LSTMP")); });
  EXPECT_NE(m.find("rnn: mode 'LSTMP' is not one of LSTM, GRU, RNN_TANH, RNN_RELU"), std::string::npos) << m;
  m = lowering_error([](OpDesc& op) {
    std::vector<std::string> w = op.input("WeightList");
    w.resize(w.size() / 2);  // weights without their biases
    op.set_input("WeightList", w);
  });
  EXPECT_NE(m.find("rnns without biases are not supported"), std::string::npos) << m;
  m = lowering_error([](OpDesc& op) { op.set_attr("mode", std::string("GRU")); });  // 2 states for GRU
  EXPECT_NE(m.find("PreState must hold h0 for mode GRU"), std::string::npos) << m;
  // Weights that do not fit the hidden size fail at run time, naming the layer.
  Program p = Program::load(fixture("lstm/model.pdmodel"));
  for (OpDesc& op : p.global_block().mutable_ops())
    if (op.type == "rnn") op.set_attr("hidden_size", int32_t{5});
  Executor ex(p);
  ex.load_params_file(fixture("lstm/model.pdiparams"));
  Npy in = read_npy(fixture("lstm/input.npy"));
  try {
    ex.run({{ex.feed_names()[0], npy_tensor(in)}});
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rnn: "), std::string::npos) << e.what();
  }
  // SequenceLength must be [batch].
  Program q = Program::load(fixture("lstm/model.pdmodel"));
  for (OpDesc& op : q.global_block().mutable_ops())
    if (op.type == "rnn") op.set_input("SequenceLength", {"x"});
  Executor eq(q);
  eq.load_params_file(fixture("lstm/model.pdiparams"));
  try {
    eq.run({{eq.feed_names()[0], npy_tensor(in)}});
    ADD_FAILURE() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rnn: SequenceLength must be [batch] = [2], got [2, 5, 3]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Executor, BadFeeds) {
  auto ex = load_model("mlp", cpu_place());
  Tensor good = ops::ones(Dims{2, 4});
  auto expect_error = [&](const std::map<std::string, Tensor>& feeds, const std::string& needle) {
    try {
      ex->run(feeds);
      ADD_FAILURE() << "ran with bad feeds, expected " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{"y", good}}, "'y' is not a feed target");
  expect_error({}, "feed 'x' (col 0) is missing");
  expect_error({{"x", ops::ones(Dims{2, 5})}}, "feed 'x' has shape [2, 5] but the program declares [-1, 4]");
  expect_error({{"x", ops::ones(Dims{4})}}, "feed 'x' has shape [4]");
  expect_error({{"x", ops::ones(Dims{2, 4}, DType::kFloat64)}}, "feed 'x' has dtype float64");
  // The executor is still usable after refused runs; any batch size works.
  EXPECT_EQ(ex->run({{"x", ops::ones(Dims{5, 4})}})[0].dims(), (Dims{5, 3}));
}

TEST(Executor, RunTimeErrorNamesTheOpAndCleansUp) {
  Program p = Program::load(fixture("mlp/model.pdmodel"));
  p.global_block().find_var("x")->shape = {-1, -1};  // so the bad width gets past the feed check
  Executor ex(p);
  ex.load_params_file(fixture("mlp/model.pdiparams"));
  try {
    ex.run({{"x", ops::ones(Dims{2, 5})}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("running op 1 (matmul_v2) of block 0"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ex.scope().size(), 4u);  // the parameters only
  EXPECT_EQ(ex.run({{"x", ops::ones(Dims{2, 4})}})[0].dims(), (Dims{2, 3}));
}

TEST(Executor, MissingParameters) {
  Program p = Program::load(fixture("mlp/model.pdmodel"));
  Executor ex(p);
  try {
    ex.run({{"x", ops::ones(Dims{2, 4})}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("linear_0.w_0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("matmul_v2"), std::string::npos) << e.what();
  }
}

// Ops the fixtures do not contain, in a program built here, against values computed by hand.
TEST(Executor, CommonOps) {
  Program p;
  Block& g = p.global_block();
  auto var = [&](const std::string& n, std::vector<int64_t> shape) {
    VarDesc v;
    v.name = n;
    v.shape = std::move(shape);
    g.add_var(v);
  };
  var("x", {2, 3});
  var("c", {3});
  for (auto n : {"a", "b", "d", "e", "f", "t", "k", "s"}) var(n, {});
  add_op(g, "feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", int32_t{0}}});
  add_op(g, "fill_constant", {}, {{"Out", {"c"}}},
         {{"shape", std::vector<int64_t>{3}}, {"dtype", int32_t{5}}, {"value", 2.0f}});
  add_op(g, "elementwise_sub", {{"X", {"x"}}, {"Y", {"c"}}}, {{"Out", {"a"}}}, {{"axis", int32_t{1}}});  // x - 2
  add_op(g, "elementwise_mul", {{"X", {"a"}}, {"Y", {"c"}}}, {{"Out", {"b"}}}, {{"axis", int32_t{-1}}});  // *2
  add_op(g, "dropout", {{"X", {"b"}}}, {{"Out", {"d"}}, {"Mask", {}}},
         {{"dropout_prob", 0.5f}, {"dropout_implementation", std::string("downgrade_in_infer")}});  // *0.5
  add_op(g, "transpose2", {{"X", {"d"}}}, {{"Out", {"t"}}, {"XShape", {}}},
         {{"axis", std::vector<int32_t>{1, 0}}});
  add_op(g, "concat", {{"X", {"t", "t"}}}, {{"Out", {"k"}}}, {{"axis", int32_t{1}}});
  add_op(g, "elementwise_div", {{"X", {"k"}}, {"Y", {"c"}}}, {{"Out", {"e"}}},
         {{"axis", int32_t{0}}});  // /2 per row
  add_op(g, "layer_norm", {{"X", {"e"}}}, {{"Y", {"f"}}, {"Mean", {}}, {"Variance", {}}},
         {{"begin_norm_axis", int32_t{1}}, {"epsilon", 1e-5f}});
  add_op(g, "sigmoid", {{"X", {"f"}}}, {{"Out", {"s"}}});
  add_op(g, "fetch", {{"X", {"e"}}}, {{"Out", {"fetch"}}}, {{"col", int32_t{0}}});
  add_op(g, "fetch", {{"X", {"s"}}}, {{"Out", {"fetch"}}}, {{"col", int32_t{1}}});
  Executor ex(p);
  std::vector<float> xv{1, 2, 3, 4, 5, 6};
  auto r = ex.run({{"x", Tensor::from_vector(xv, Dims{2, 3}, DType::kFloat32)}});
  ASSERT_EQ(r.size(), 2u);
  // d = (x - 2) * 2 * 0.5 = x - 2; t = d^T [3, 2]; k = [t, t] [3, 4]; e = k / 2.
  ASSERT_EQ(r[0].dims(), (Dims{3, 4}));
  std::vector<float> e = r[0].to_vector<float>();
  std::vector<float> want{-0.5f, 1.f, -0.5f, 1.f, 0.f, 1.5f, 0.f, 1.5f, 0.5f, 2.f, 0.5f, 2.f};
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(e[i], want[i], 1e-6) << i;
  // Each row of e is [u, v, u, v]: normalised it is [-1, 1, -1, 1] (up to epsilon).
  std::vector<float> s = r[1].to_vector<float>();
  for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i], 1 / (1 + std::exp(i % 2 ? -1.0 : 1.0)), 1e-4) << i;
}

// conv2d with SAME padding and stride, global pooling, scale with the bias first, reshape2 with 0,
// the 1.x matmul with alpha, and mul with x_num_col_dims = 2, against the same computation in eager ops.
TEST(Executor, MoreOpsAgainstEager) {
  Program p;
  Block& g = p.global_block();
  for (auto n : {"x", "w", "c", "pool", "flat", "sc", "r", "mm", "ones", "ml"}) {
    VarDesc v;
    v.name = n;
    if (v.name == "x") v.shape = {-1, 2, 5, 5};
    if (v.name == "w") v.shape = {3, 2, 3, 3};
    g.add_var(v);
  }
  add_op(g, "feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", int32_t{0}}});
  add_op(g, "feed", {{"X", {"feed"}}}, {{"Out", {"w"}}}, {{"col", int32_t{1}}});
  add_op(g, "conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"c"}}},
         {{"strides", std::vector<int32_t>{2, 2}},
          {"paddings", std::vector<int32_t>{0, 0}},
          {"dilations", std::vector<int32_t>{1, 1}},
          {"groups", int32_t{1}},
          {"padding_algorithm", std::string("SAME")},
          {"data_format", std::string("NCHW")}});
  add_op(g, "pool2d", {{"X", {"c"}}}, {{"Out", {"pool"}}},
         {{"pooling_type", std::string("avg")},
          {"ksize", std::vector<int32_t>{2, 2}},
          {"global_pooling", true},
          {"strides", std::vector<int32_t>{1, 1}},
          {"paddings", std::vector<int32_t>{0, 0}}});
  add_op(g, "flatten_contiguous_range", {{"X", {"pool"}}}, {{"Out", {"flat"}}, {"XShape", {}}},
         {{"start_axis", int32_t{1}}, {"stop_axis", int32_t{-1}}});
  add_op(g, "scale", {{"X", {"flat"}}}, {{"Out", {"sc"}}},
         {{"scale", 3.0f}, {"bias", 1.0f}, {"bias_after_scale", false}});
  add_op(g, "reshape2", {{"X", {"sc"}}}, {{"Out", {"r"}}, {"XShape", {"r_xshape"}}},
         {{"shape", std::vector<int32_t>{0, 3, 1}}});
  add_op(g, "matmul", {{"X", {"flat"}}, {"Y", {"sc"}}}, {{"Out", {"mm"}}},
         {{"transpose_X", false}, {"transpose_Y", true}, {"alpha", 0.5f}});
  add_op(g, "fill_constant", {}, {{"Out", {"ones"}}},
         {{"shape", std::vector<int32_t>{1, 4}}, {"dtype", int32_t{5}}, {"value", 2.0f}});
  add_op(g, "mul", {{"X", {"r"}}, {"Y", {"ones"}}}, {{"Out", {"ml"}}},
         {{"x_num_col_dims", int32_t{2}}, {"y_num_col_dims", int32_t{1}}});
  int32_t col = 0;
  for (auto n : {"c", "sc", "mm", "ml"})
    add_op(g, "fetch", {{"X", {n}}}, {{"Out", {"fetch"}}}, {{"col", col++}});

  Tensor x = ops::uniform(Dims{1, 2, 5, 5}, -1, 1, DType::kFloat32, 7);
  Tensor w = ops::uniform(Dims{3, 2, 3, 3}, -1, 1, DType::kFloat32, 8);
  Executor ex(p);
  auto r = ex.run({{"x", x}, {"w", w}});
  ASSERT_EQ(r.size(), 4u);

  // SAME with stride 2 on 5x5 and a 3x3 kernel: output 3x3, one pixel of padding on each side.
  Tensor c = call_op("conv", {x, w},
                     Attrs{{"strides", std::vector<int64_t>{2, 2}},
                           {"paddings", std::vector<int64_t>{1, 1, 1, 1}},
                           {"dilations", std::vector<int64_t>{1, 1}},
                           {"groups", int64_t{1}}})[0];
  Tensor flat = ops::mean(c, {2, 3});
  Tensor sc = ops::multiply(ops::add(flat, ops::full(Dims{}, 1.0)), ops::full(Dims{}, 3.0));
  Tensor mm = ops::multiply(ops::matmul(flat, sc, false, true), ops::full(Dims{}, 0.5));
  Tensor ml = ops::multiply(sc.reshape(Dims{1, 3, 1}), ops::full(Dims{1, 1, 4}, 2.0));
  std::vector<Tensor> want{c, sc, mm, ml};
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(r[i].dims(), want[i].dims()) << i;
    std::vector<float> a = r[i].to_vector<float>(), b = want[i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j)
      EXPECT_NEAR(a[j], b[j], 1e-5 + 1e-5 * std::fabs(b[j])) << i << "/" << j;
  }
}

// A GC threshold (Paddle's FLAGS_eager_delete_tensor_gb) holds released variables as garbage until it
// reaches the threshold; results do not change, and threshold 0 frees at once.
TEST(Executor, GarbageCollectionThreshold) {
  Program p = Program::load(fixture("lenet/model.pdmodel"));
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  for (int64_t threshold : {int64_t{0}, int64_t{2000}, int64_t{1} << 30}) {
    ExecutorOptions o;
    o.gc_threshold_bytes = threshold;
    Executor ex(p, cpu_place(), o);
    ex.load_params_file(fixture("lenet/model.pdiparams"));
    std::map<std::string, Tensor> feeds{{ex.feed_names()[0], npy_tensor(in)}};
    expect_close(ex.run(feeds)[0], out, "threshold " + std::to_string(threshold));
    if (threshold == 0) EXPECT_EQ(ex.stats().peak_garbage_bytes, 0);
    if (threshold == 2000) EXPECT_LT(ex.stats().peak_garbage_bytes, 2000 + 4096);
    if (threshold > 2000) EXPECT_GT(ex.stats().peak_garbage_bytes, 4000);  // everything released waits
    EXPECT_GT(ex.stats().released, 0);
  }
}
