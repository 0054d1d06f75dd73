// Static-graph recording (oar/ir/static_graph.h): op calls on symbolic tensors become native ops of a
// Program that the executor runs with the same results as eager execution; unknown extents; views of
// captured tensors; in-place writes; errors.
#include <gtest/gtest.h>
#include <oar/core/autograd.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/ir/executor.h>
#include <oar/ir/inference_program.h>
#include <oar/ir/static_graph.h>

#include <cmath>
#include <random>

using namespace oar;
using namespace oar::ir;

namespace {

Tensor random_tensor(const Dims& d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(static_cast<size_t>(d.numel()));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, d, DType::kFloat32);
}

void expect_near(const Tensor& a, const Tensor& b, float tol = 1e-5f) {
  ASSERT_EQ(a.dims(), b.dims());
  auto x = a.cpu().contiguous().to_vector<float>(), y = b.cpu().contiguous().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], tol * (1 + std::fabs(y[i]))) << i;
}

// Records f(inputs) while `b` is current.
template <typename F>
std::vector<Tensor> record(const std::shared_ptr<ProgramBuilder>& b, F f) {
  auto prev = set_current_builder(b);
  std::vector<Tensor> out;
  try {
    out = f();
  } catch (...) {
    set_current_builder(prev);
    throw;
  }
  set_current_builder(prev);
  return out;
}

// A two-layer perceptron with a reshape and a transpose (view ops) in the middle.
std::vector<Tensor> mlp(const Tensor& x, const Tensor& w1, const Tensor& w2) {
  Tensor h = ops::relu(ops::matmul(x, w1));
  Tensor t = h.reshape(Dims{-1, 2, 4}).transpose({0, 2, 1}).reshape(Dims{-1, 8});
  return {ops::mean(ops::matmul(t, w2), {1}), ops::sum(t)};
}

}  // namespace

TEST(StaticGraph, RecordedProgramMatchesEager) {
  Tensor w1 = random_tensor(Dims{3, 8}, 1), w2 = random_tensor(Dims{8, 5}, 2);
  auto b = std::make_shared<ProgramBuilder>();
  auto outs = record(b, [&] {
    Tensor x = b->create_var("x", {-1, 3}, DType::kFloat32, cpu_place());
    EXPECT_TRUE(is_symbolic(x));
    EXPECT_EQ(visible_dims(x.dims()), (std::vector<int64_t>{-1, 3}));
    return mlp(x, w1, w2);
  });
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(visible_dims(outs[0].dims()), std::vector<int64_t>{-1});
  // Native ops, views included; the concrete weights were captured as persistables.
  const Block& g = b->program().global_block();
  std::vector<std::string> types;
  for (auto& op : g.ops()) types.push_back(op.type);
  EXPECT_NE(std::find(types.begin(), types.end(), "oar.matmul"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "oar.transpose"), types.end());
  EXPECT_EQ(b->captures().size(), 2u);
  ASSERT_NE(g.find_var(b->capture(w1)), nullptr);
  EXPECT_TRUE(g.find_var(b->capture(w1))->persistable);

  ExecutorOptions o;
  o.feed_names = {"x"};
  o.fetch_names = {symbolic_name(outs[0]), symbolic_name(outs[1])};
  Executor exe(b->program(), cpu_place(), o);
  for (auto& [name, t] : b->captures()) exe.scope().set(name, t);
  for (int64_t batch : {1, 4, 7}) {  // one program for every batch size
    Tensor x = random_tensor(Dims{batch, 3}, 10 + static_cast<uint32_t>(batch));
    auto got = exe.run({{"x", x}});
    auto ref = mlp(x, w1, w2);
    expect_near(got[0], ref[0]);
    expect_near(got[1], ref[1], 1e-4f);
  }
}

TEST(StaticGraph, GradientsRecordedFromTheEagerRulesHandleTheUnknownBatch) {
  Tensor w = random_tensor(Dims{4, 2}, 3);
  autograd::set_requires_grad(w, true);
  auto b = std::make_shared<ProgramBuilder>();
  auto outs = record(b, [&] {
    Tensor x = b->create_var("x", {-1, 4}, DType::kFloat32, cpu_place());
    Tensor loss = ops::mean(ops::tanh(ops::matmul(x, w)));  // the mean's gradient scales by 1/batch
    b->set_op_role(1);
    auto g = autograd::grad({loss}, {w});
    return std::vector<Tensor>{loss, g[0]};
  });
  ExecutorOptions o;
  o.feed_names = {"x"};
  o.fetch_names = {symbolic_name(outs[1])};
  Executor exe(b->program(), cpu_place(), o);
  for (auto& [name, t] : b->captures()) exe.scope().set(name, t);
  for (int64_t batch : {2, 9}) {
    Tensor x = random_tensor(Dims{batch, 4}, 20 + static_cast<uint32_t>(batch));
    Tensor got = exe.run({{"x", x}})[0];
    Tensor loss = ops::mean(ops::tanh(ops::matmul(x, w)));
    Tensor ref = autograd::grad({loss}, {w})[0];
    expect_near(got, ref);
  }
}

TEST(StaticGraph, InPlaceWritesNameTheWrittenVariableAsOutput) {
  Tensor acc = Tensor::from_vector(std::vector<float>{0, 0}, Dims{2}, DType::kFloat32);
  auto b = std::make_shared<ProgramBuilder>();
  record(b, [&] {
    Tensor x = b->create_var("x", {2}, DType::kFloat32, cpu_place());
    ops::assign(acc, ops::add(acc, x));  // acc += x, in place on the captured tensor
    return std::vector<Tensor>{};
  });
  const OpDesc& op = b->program().global_block().ops().back();
  EXPECT_EQ(op.type, "oar.assign");
  EXPECT_EQ(op.output("dst"), op.input("dst"));
  ExecutorOptions o;
  o.feed_names = {"x"};
  o.fetch_names = {};
  o.keep = {};
  Executor exe(b->program(), cpu_place(), o);
  for (auto& [name, t] : b->captures()) exe.scope().set(name, t);
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, Dims{2}, DType::kFloat32);
  exe.run({{"x", x}});
  exe.run({{"x", x}});
  EXPECT_EQ(acc.to_vector<float>(), (std::vector<float>{2, 4}));  // the captured tensor itself changed
}

TEST(StaticGraph, Errors) {
  auto b = std::make_shared<ProgramBuilder>();
  Tensor x;
  record(b, [&] {
    x = b->create_var("x", {2, 3}, DType::kFloat32, cpu_place());
    EXPECT_THROW(b->create_var("x", {1}, DType::kFloat32, cpu_place()), Error);  // duplicate name
    return std::vector<Tensor>{};
  });
  // Reading a program variable's value, or using it outside its program, is refused by name.
  try {
    x.to_vector<float>();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x' is a variable of a static program"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ops::relu(x), Error);
  {
    NoGradGuard no_grad;  // with no dispatch hook engaged, the static graph's still sees symbolic inputs
    EXPECT_THROW(ops::relu(x), Error);
  }
  EXPECT_THROW(x.reshape(Dims{6}), Error);
  // Another program's variable.
  auto other = std::make_shared<ProgramBuilder>();
  EXPECT_THROW(record(other, [&] { return std::vector<Tensor>{ops::relu(x)}; }), Error);
  // In-place into a view of a variable.
  EXPECT_THROW(record(b,
                      [&] {
                        Tensor v = x.reshape(Dims{6});
                        ops::assign(v, ops::full(Dims{6}, 1.0));
                        return std::vector<Tensor>{};
                      }),
               Error);
}

// Variable names come from the process's name source when one is set (the Python package's unique_name),
// skipping names the program already has; without one, from the builder's own counters.
TEST(StaticGraph, NameSource) {
  auto b = std::make_shared<ProgramBuilder>();
  EXPECT_EQ(b->unique_name("w"), "w_0");
  int calls = 0;
  set_name_source(
      [&calls](const std::string& key) { return "src_" + key + "_" + std::to_string(calls++ / 2); });
  b->create_var("src_v_0", {1}, DType::kFloat32, cpu_place());
  EXPECT_EQ(b->unique_name("v"), "src_v_1");  // src_v_0 (taken), src_v_0 again, then src_v_1
  EXPECT_EQ(calls, 3);
  set_name_source(nullptr);
  EXPECT_EQ(b->unique_name("w"), "w_1");
}

TEST(StaticGraph, InferenceProgramPrunesAndRoundTrips) {
  Tensor w1 = random_tensor(Dims{3, 8}, 4), w2 = random_tensor(Dims{8, 5}, 5);
  auto b = std::make_shared<ProgramBuilder>();
  auto outs = record(b, [&] {
    Tensor x = b->create_var("x", {-1, 3}, DType::kFloat32, cpu_place());
    return mlp(x, w1, w2);
  });
  Program inf = prepare_inference_program(b->program(), {"x"}, {symbolic_name(outs[0])});
  const auto& ops = inf.global_block().ops();
  EXPECT_EQ(ops.front().type, "feed");
  EXPECT_EQ(ops.back().type, "fetch");
  for (auto& op : ops) EXPECT_NE(op.type, "oar.sum");  // only what the fetch needs
  Program parsed = Program::parse(inf.serialize());
  EXPECT_EQ(parsed, inf);
  Executor exe(parsed, cpu_place());
  for (auto& [name, t] : b->captures()) exe.scope().set(name, t);
  Tensor x = random_tensor(Dims{5, 3}, 6);
  expect_near(exe.run({{"x", x}})[0], mlp(x, w1, w2)[0]);
  EXPECT_THROW(prepare_inference_program(b->program(), {"nope"}, {symbolic_name(outs[0])}), Error);
}
