// Autograd: every gradient rule against central finite differences (float64) on cpu and sim, and the
// engine's semantics (accumulation, retain_graph, create_graph, grad(), hooks, no_grad, version checks).
#include <oar/core/autograd.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

using oar::Dims;
using oar::DType;
using oar::Place;
using oar::Tensor;
namespace ops = oar::ops;
namespace ag = oar::autograd;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

std::vector<double> random_values(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

Tensor leaf(const std::vector<double>& v, const Dims& dims, Place p) {
  Tensor t = Tensor::from_vector(v, dims, DType::kFloat64, p);
  ag::set_requires_grad(t, true);
  return t;
}

// loss = sum(f(inputs) * w) with fixed random weights, so every output element matters differently.
double loss_value(const Fn& f, const std::vector<Tensor>& in, const std::vector<double>& w) {
  oar::NoGradGuard no_grad;
  Tensor out = f(in);
  std::vector<double> o = out.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < o.size(); ++i) s += o[i] * w[i];
  return s;
}

struct Input {
  Dims dims;
  double lo = -1, hi = 1;
};

// Checks d loss / d input for each input against central differences.
void check_gradients(const std::string& name, const Fn& f, const std::vector<Input>& specs, Place p) {
  SCOPED_TRACE(name + " on " + p.to_string());
  std::vector<std::vector<double>> values;
  std::vector<Tensor> in;
  for (size_t i = 0; i < specs.size(); ++i) {
    values.push_back(random_values(specs[i].dims.numel(), specs[i].lo, specs[i].hi, 17 + 31 * i));
    in.push_back(leaf(values.back(), specs[i].dims, p));
  }
  Tensor out = f(in);
  ASSERT_TRUE(ag::requires_grad(out)) << "the output has no history";
  std::vector<double> w = random_values(out.numel(), 0.5, 1.5, 99);
  Tensor loss = ops::sum(ops::multiply(out, Tensor::from_vector(w, out.dims(), DType::kFloat64, p)));
  ag::backward({loss});
  const double eps = 1e-6;
  for (size_t i = 0; i < specs.size(); ++i) {
    Tensor g = ag::grad(in[i]);
    ASSERT_TRUE(g.defined()) << "no gradient for input " << i;
    ASSERT_EQ(g.dims(), specs[i].dims);
    std::vector<double> analytic = g.to_vector<double>();
    for (size_t k = 0; k < values[i].size(); ++k) {
      std::vector<Tensor> plus = in, minus = in;
      std::vector<double> vp = values[i], vm = values[i];
      vp[k] += eps;
      vm[k] -= eps;
      plus[i] = Tensor::from_vector(vp, specs[i].dims, DType::kFloat64, p);
      minus[i] = Tensor::from_vector(vm, specs[i].dims, DType::kFloat64, p);
      double numeric = (loss_value(f, plus, w) - loss_value(f, minus, w)) / (2 * eps);
      EXPECT_NEAR(analytic[k], numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << "input " << i << " element " << k;
    }
  }
}

Tensor scalar(double v, Place p) { return ops::full({}, v, DType::kFloat64, p); }

class Gradients : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const { return Place::parse(GetParam()); }
};

TEST_P(Gradients, BinaryWithBroadcasting) {
  Place p = place();
  std::vector<Input> bc = {{{2, 3}}, {{3}}};
  check_gradients("add", [](auto& v) { return ops::add(v[0], v[1]); }, bc, p);
  check_gradients("subtract", [](auto& v) { return ops::subtract(v[0], v[1]); }, {{{3}}, {{2, 3}}}, p);
  check_gradients("multiply", [](auto& v) { return ops::multiply(v[0], v[1]); }, {{{2, 1, 3}}, {{4, 1}}}, p);
  check_gradients("divide", [](auto& v) { return ops::divide(v[0], v[1]); }, {{{2, 3}}, {{2, 3}, 0.5, 2.0}}, p);
  check_gradients("pow", [](auto& v) { return ops::pow(v[0], v[1]); }, {{{2, 3}, 0.5, 2.0}, {{3}, -1, 2}}, p);
  check_gradients("maximum", [](auto& v) { return ops::maximum(v[0], v[1]); }, {{{2, 3}}, {{2, 3}}}, p);
  check_gradients("minimum", [](auto& v) { return ops::minimum(v[0], v[1]); }, {{{2, 3}}, {{3}}}, p);
}

TEST_P(Gradients, Unary) {
  Place p = place();
  struct U {
    const char* op;
    double lo, hi;
  };
  for (U u : {U{"neg", -1, 1}, U{"exp", -1, 1}, U{"expm1", -1, 1}, U{"log", 0.5, 2}, U{"log1p", 0, 1},
              U{"sqrt", 0.5, 2}, U{"rsqrt", 0.5, 2}, U{"reciprocal", 0.5, 2}, U{"tanh", -1, 1},
              U{"sigmoid", -2, 2}, U{"relu", 0.1, 1}, U{"relu", -1, -0.1}, U{"abs", 0.1, 1}, U{"abs", -1, -0.1},
              U{"square", -1, 1}, U{"sin", -2, 2}, U{"cos", -2, 2}, U{"erf", -1, 1}}) {
    std::string op = u.op;
    check_gradients(op, [op](auto& v) { return ops::unary(op.c_str(), v[0]); }, {{{2, 3}, u.lo, u.hi}}, p);
  }
}

TEST_P(Gradients, Reductions) {
  Place p = place();
  check_gradients("sum all", [](auto& v) { return ops::sum(v[0]); }, {{{2, 3, 4}}}, p);
  check_gradients("sum axis 1", [](auto& v) { return ops::sum(v[0], {1}); }, {{{2, 3, 4}}}, p);
  check_gradients("sum keepdim", [](auto& v) { return ops::sum(v[0], {0, -1}, true); }, {{{2, 3, 4}}}, p);
  check_gradients("mean", [](auto& v) { return ops::mean(v[0], {2}); }, {{{2, 3, 4}}}, p);
  check_gradients("max", [](auto& v) { return ops::max(v[0], {1}); }, {{{2, 5}}}, p);
  check_gradients("min all", [](auto& v) { return ops::min(v[0]); }, {{{3, 2}}}, p);
  check_gradients("softmax", [](auto& v) { return ops::softmax(v[0], 1); }, {{{2, 4}}}, p);
  check_gradients("log_softmax", [](auto& v) { return ops::log_softmax(v[0], 0); }, {{{3, 2}}}, p);
}

TEST_P(Gradients, Matmul) {
  Place p = place();
  check_gradients("mm", [](auto& v) { return ops::matmul(v[0], v[1]); }, {{{2, 3}}, {{3, 4}}}, p);
  check_gradients("mm tx", [](auto& v) { return ops::matmul(v[0], v[1], true); }, {{{3, 2}}, {{3, 4}}}, p);
  check_gradients("mm ty", [](auto& v) { return ops::matmul(v[0], v[1], false, true); }, {{{2, 3}}, {{4, 3}}}, p);
  check_gradients("mm txty", [](auto& v) { return ops::matmul(v[0], v[1], true, true); }, {{{3, 2}}, {{4, 3}}},
                  p);
  check_gradients("bmm broadcast", [](auto& v) { return ops::matmul(v[0], v[1]); }, {{{2, 1, 2, 3}}, {{3, 3, 2}}},
                  p);
  check_gradients("vec @ mat", [](auto& v) { return ops::matmul(v[0], v[1]); }, {{{3}}, {{3, 2}}}, p);
  check_gradients("mat @ vec", [](auto& v) { return ops::matmul(v[0], v[1]); }, {{{2, 3}}, {{3}}}, p);
  check_gradients("dot", [](auto& v) { return ops::matmul(v[0], v[1]); }, {{{3}}, {{3}}}, p);
}

TEST_P(Gradients, DataMovementAndViews) {
  Place p = place();
  check_gradients("where", [p](auto& v) { return ops::where(ops::greater_than(v[0], scalar(0, p)), v[0], v[1]); },
                  {{{2, 3}}, {{3}}}, p);
  check_gradients("concat", [](auto& v) { return ops::concat({v[0], v[1]}, 1); }, {{{2, 3}}, {{2, 2}}}, p);
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0, 2}, {3}, DType::kInt64, p);
  check_gradients("index_select", [idx](auto& v) { return ops::index_select(v[0], idx, 1); }, {{{2, 4}}}, p);
  check_gradients("index_add", [idx](auto& v) { return ops::exp(ops::index_add(v[0], idx, v[1], 0)); },
                  {{{3, 2}}, {{3, 2}}}, p);
  check_gradients("reshape", [](auto& v) { return ops::exp(v[0].reshape({3, -1})); }, {{{2, 3}}}, p);
  check_gradients("transpose", [](auto& v) { return ops::matmul(v[0].transpose({1, 0}), v[1]); },
                  {{{3, 2}}, {{3, 2}}}, p);
  check_gradients("slice step 2", [](auto& v) { return ops::unary("square", v[0].slice(1, 0, 5, 2)); }, {{{2, 5}}}, p);
  check_gradients("slice reversed", [](auto& v) { return ops::unary("square", v[0].slice(0, -1, -5, -1)); }, {{{5, 2}}}, p);
  check_gradients("squeeze/unsqueeze", [](auto& v) { return ops::exp(v[0].squeeze().unsqueeze(0)); }, {{{2, 1, 3}}},
                  p);
  check_gradients("expand", [](auto& v) { return ops::multiply(v[0].expand({4, 2, 3}), v[1]); },
                  {{{2, 1}}, {{4, 2, 3}}}, p);
}

INSTANTIATE_TEST_SUITE_P(Devices, Gradients, ::testing::Values("cpu", "sim:0"),
                         [](const auto& info) { return info.param == "cpu" ? std::string("cpu") : "sim"; });

// ---- engine semantics -----------------------------------------------------------------------------
Tensor f64(std::vector<double> v, Dims d) { return Tensor::from_vector(v, d, DType::kFloat64); }

TEST(Autograd, GradientsAccumulateUntilCleared) {
  Tensor x = leaf({1, 2, 3}, {3}, oar::cpu_place());
  ag::backward({ops::sum(ops::multiply(x, x))});
  ag::backward({ops::sum(ops::multiply(x, x))});
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{4, 8, 12}));
  ag::clear_grad(x);
  EXPECT_FALSE(ag::grad(x).defined());
  ag::backward({ops::sum(x)});
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{1, 1, 1}));
  ag::clear_grad(x, /*set_to_zero=*/true);
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  Tensor y = ops::sum(ops::exp(x));
  ag::backward({y}, {}, /*retain_graph=*/true);
  ag::backward({y});  // allowed: the graph was retained
  try {
    ag::backward({y});
    FAIL() << "a third backward through a freed graph must fail";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kPrecondition);
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
}

TEST(Autograd, HigherOrderWithCreateGraph) {
  Tensor x = leaf({0.5, -2.0}, {2}, oar::cpu_place());
  Tensor y = ops::sum(ops::multiply(ops::multiply(x, x), x));  // sum x^3
  Tensor dx = ag::grad({y}, {x}, {}, false, /*create_graph=*/true)[0];
  EXPECT_EQ(dx.to_vector<double>(), (std::vector<double>{0.75, 12.0}));  // 3x^2
  ASSERT_TRUE(ag::requires_grad(dx));
  Tensor ddx = ag::grad({ops::sum(dx)}, {x})[0];
  EXPECT_EQ(ddx.to_vector<double>(), (std::vector<double>{3.0, -12.0}));  // 6x
  EXPECT_FALSE(ag::grad(x).defined()) << "grad() must not accumulate into .grad";
}

// An op without a gradient rule is never a constant by mistake (docs/decisions.md, 34): its outputs
// raise, naming it, when differentiated; ops without a gradient by nature stay constants.
TEST(Autograd, OpWithoutRuleRaisesWhenDifferentiated) {
  Tensor x = leaf({1.0, -2.0, 0.5}, {3}, oar::cpu_place());
  // layer_norm's gradient is the layer_norm_grad kernel, which has no rule: first order works and keeps
  // its history, differentiating it again names the kernel.
  Tensor w = leaf({1, 1, 1}, {3}, oar::cpu_place()), b = leaf({0, 0, 0}, {3}, oar::cpu_place());
  Tensor y = oar::call_op("layer_norm", {x, w, b}, oar::Attrs{{"begin_norm_axis", int64_t{0}}})[0];
  Tensor c = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}, DType::kFloat64, oar::cpu_place());
  Tensor g = ag::grad({ops::sum(ops::multiply(y, c))}, {x}, {}, false, /*create_graph=*/true)[0];
  ASSERT_TRUE(ag::requires_grad(g));
  try {
    ag::grad({ops::sum(ops::multiply(g, g))}, {x});
    FAIL() << "expected an error";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("layer_norm_grad: has no gradient rule, so layer_norm cannot be "
                                         "differentiated twice"),
              std::string::npos)
        << e.what();
  }
  // Piecewise constant: floor, round and sign carry zero gradients, as in Paddle (decision 97);
  // floor_divide stays a constant. The rest of the loss differentiates as before.
  for (const char* op : {"floor", "round", "sign"}) EXPECT_TRUE(ag::requires_grad(ops::unary(op, x))) << op;
  EXPECT_FALSE(ag::requires_grad(ops::floor_divide(x, x)));
  ag::backward({ops::sum(ops::add(ops::multiply(ops::unary("floor", x), x), x))});
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{2, -1, 1}));  // floor(x) + 1
}

TEST(Autograd, HigherOrderThroughSavedOutputs) {
  Tensor x = leaf({0.3}, {1}, oar::cpu_place());
  Tensor y = ops::sum(ops::exp(x));  // the exp rule uses its saved output
  Tensor dx = ag::grad({y}, {x}, {}, false, true)[0];
  Tensor ddx = ag::grad({ops::sum(dx)}, {x})[0];
  EXPECT_NEAR(ddx.to_vector<double>()[0], std::exp(0.3), 1e-12);
}

TEST(Autograd, GradWithUnusedInputs) {
  Tensor x = leaf({1}, {1}, oar::cpu_place()), z = leaf({1}, {1}, oar::cpu_place());
  Tensor y = ops::sum(ops::multiply(x, x));
  EXPECT_THROW(ag::grad({y}, {x, z}, {}, true), oar::Error);
  auto g = ag::grad({y}, {x, z}, {}, false, false, /*allow_unused=*/true);
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{2}));
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, PartialGradTreatsInputsAsIndependent) {
  // y = h * w with h = w * x: grad() gives dy/dw in total (through h too), partial_grad() only the
  // direct part, and the gradient reaching h, as if h did not depend on w.
  Tensor x = leaf({3}, {1}, oar::cpu_place()), w = leaf({2}, {1}, oar::cpu_place());
  Tensor h = ops::multiply(w, x);
  Tensor y = ops::sum(ops::multiply(h, w));
  auto total = ag::grad({y}, {h, w}, {}, true);
  EXPECT_EQ(total[0].to_vector<double>(), (std::vector<double>{2}));   // w
  EXPECT_EQ(total[1].to_vector<double>(), (std::vector<double>{12}));  // h + w * x = 6 + 6
  auto part = ag::partial_grad({y}, {h, w}, {}, true, false, false);
  EXPECT_EQ(part[0].to_vector<double>(), (std::vector<double>{2}));
  EXPECT_EQ(part[1].to_vector<double>(), (std::vector<double>{6}));  // h only
  auto only_x = ag::partial_grad({y}, {h, x}, {}, true, false, true);
  EXPECT_FALSE(only_x[1].defined());  // x is reached only through h
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  Tensor y;
  {
    oar::NoGradGuard guard;
    y = ops::multiply(x, x);
  }
  EXPECT_FALSE(ag::requires_grad(y));
  EXPECT_TRUE(ag::is_leaf(y));
  EXPECT_THROW(ag::backward({ops::sum(y)}), oar::Error);
}

TEST(Autograd, StopGradientInputsGetNoGradient) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  Tensor c = f64({3, 4}, {2});  // stop_gradient (a constant)
  ag::backward({ops::sum(ops::multiply(x, c))});
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{3, 4}));
  EXPECT_FALSE(ag::grad(c).defined());
  EXPECT_FALSE(ag::requires_grad(ops::equal(x, c))) << "comparisons are not differentiable";
  Tensor y = ops::multiply(x, c);
  ag::set_requires_grad(y, false);  // Paddle's stop_gradient = True on an output: cut from the graph
  EXPECT_TRUE(ag::is_leaf(y));
  EXPECT_FALSE(ag::requires_grad(y));
}

TEST(Autograd, Hooks) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  ag::register_hook(x, [](const Tensor& g) { return ops::multiply(g, ops::full({}, 10.0, DType::kFloat64)); });
  Tensor h = ops::multiply(x, x);
  std::vector<double> seen;
  ag::register_hook(h, [&](const Tensor& g) {
    seen = g.to_vector<double>();
    return Tensor();
  });
  ag::retain_grad(h);
  ag::backward({ops::sum(h)});
  EXPECT_EQ(seen, (std::vector<double>{1, 1}));
  EXPECT_EQ(ag::grad(h).to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{20, 40}));  // 2x, times 10 by the leaf hook
}

TEST(Autograd, PostAccumulateHooksAndFinalCallbacks) {
  // The post-accumulate hook sees .grad already summed over every path into the leaf, once per backward;
  // a callback queued from it runs after the whole graph (the other leaf is done by then).
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  Tensor w = leaf({3, 4}, {2}, oar::cpu_place());
  std::vector<std::string> events;
  int64_t id = ag::register_post_accumulate_hook(x, [&] {
    events.push_back("x:" + std::to_string(ag::grad(x).to_vector<double>()[1]));
    ag::queue_backward_callback([&] {
      events.push_back("final:" + std::to_string(ag::grad(w).defined()));
      ag::queue_backward_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  Tensor y = ops::sum(ops::add(ops::multiply(x, w), ops::multiply(x, x)));  // dy/dx = w + 2x
  ag::backward({y});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "x:" + std::to_string(8.0));
  EXPECT_EQ(events[1], "final:1");
  EXPECT_EQ(events[2], "queued by a callback");
  EXPECT_TRUE(ag::remove_post_accumulate_hook(x, id));
  EXPECT_FALSE(ag::remove_post_accumulate_hook(x, id));
  ag::backward({ops::sum(ops::multiply(x, w))});
  EXPECT_EQ(events.size(), 3u);  // removed: no more calls
  EXPECT_THROW(ag::queue_backward_callback([] {}), oar::Error);  // no backward running
  EXPECT_THROW(ag::register_post_accumulate_hook(ops::multiply(x, x), [] {}), oar::Error);  // not a leaf
}

TEST(Autograd, SetGrad) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  ag::set_grad(x, ops::full({2}, 5.0, DType::kFloat64));
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{5, 5}));
  ag::backward({ops::sum(ops::multiply(x, x))});  // accumulates onto the set gradient
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{7, 9}));
  EXPECT_THROW(ag::set_grad(x, ops::full({3}, 1.0, DType::kFloat64)), oar::Error);
  EXPECT_THROW(ag::set_grad(x, ops::full({2}, 1.0, DType::kFloat32)), oar::Error);
  ag::set_grad(x, Tensor());
  EXPECT_FALSE(ag::grad(x).defined());
}

TEST(Autograd, ModifiedSavedTensorIsCaught) {
  Tensor x = leaf({1, 2}, {2}, oar::cpu_place());
  Tensor y = ops::exp(x);
  Tensor z = ops::sum(ops::multiply(y, y));  // multiply saves y
  y.storage()->bump_version();               // what an in-place write to y does
  try {
    ag::backward({z});
    FAIL() << "backward through a modified saved tensor must fail";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kPrecondition);
    EXPECT_NE(std::string(e.what()).find("in-place"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiply"), std::string::npos) << e.what();
  }
}

TEST(Autograd, DefaultRootGradientIsOnes) {
  Tensor x = leaf({1, 2, 3}, {3}, oar::cpu_place());
  ag::backward({ops::multiply(x, ops::full({}, 2.0, DType::kFloat64))});  // non-scalar root: ones
  EXPECT_EQ(ag::grad(x).to_vector<double>(), (std::vector<double>{2, 2, 2}));
}

TEST(Autograd, CopiesBetweenDevicesAreDifferentiable) {
  Tensor x = leaf({1, 2, 3}, {3}, oar::cpu_place());
  Tensor on_sim = ops::multiply(x, x).to(Place::parse("sim:0"));
  Tensor back = ops::exp(on_sim.transpose({0})).to(oar::cpu_place());
  ASSERT_TRUE(ag::requires_grad(on_sim));
  ag::backward({ops::sum(back)});
  std::vector<double> g = ag::grad(x).to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[i], 2.0 * (i + 1) * std::exp((i + 1.0) * (i + 1.0)), 1e-9);
  EXPECT_TRUE(ag::grad(x).place().is_cpu());
}

TEST(Autograd, IntegerTensorsNeverRequireGrad) {
  // Paddle lets stop_gradient be set to False on an integer tensor: the wish is kept (stop_gradient reads
  // False) but the tensor never requires, nor receives, a gradient.
  Tensor i = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2}, DType::kInt64);
  EXPECT_TRUE(ag::stop_gradient(i));
  ag::set_requires_grad(i, true);
  EXPECT_FALSE(ag::requires_grad(i));
  EXPECT_FALSE(ag::stop_gradient(i));
  EXPECT_FALSE(ag::requires_grad(ops::add(i, i)));
  ag::set_requires_grad(i, false);
  EXPECT_TRUE(ag::stop_gradient(i));
}

TEST(Autograd, TrainsOnSimWithFallbackOps) {
  // A tiny regression on sim: the backward mixes sim kernels and cpu fallbacks and stays exact.
  Place p = Place::parse("sim:0");
  Tensor w = leaf({0.0, 0.0}, {2, 1}, p);
  Tensor xs = Tensor::from_vector(std::vector<double>{1, 0, 0, 1, 1, 1}, {3, 2}, DType::kFloat64, p);
  Tensor ys = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3, 1}, DType::kFloat64, p);  // w = [1, 2]
  for (int step = 0; step < 500; ++step) {
    Tensor err = ops::subtract(ops::matmul(xs, w), ys);
    ag::backward({ops::mean(ops::multiply(err, err))});
    oar::NoGradGuard no_grad;
    Tensor nw = ops::subtract(w, ops::multiply(ag::grad(w), ops::full({}, 0.2, DType::kFloat64, p)));
    w = nw;
    ag::set_requires_grad(w, true);
  }
  std::vector<double> got = w.to_vector<double>();
  EXPECT_NEAR(got[0], 1.0, 1e-3);
  EXPECT_NEAR(got[1], 2.0, 1e-3);
}

}  // namespace

namespace {
TEST(Autograd, SavesOnlyWhatTheRuleNeeds) {
  oar::BestFitAllocator& alloc = oar::Runtime::get().device(oar::cpu_place()).allocator();
  const int64_t n = 1 << 20;  // 8 MB of float64
  Tensor x = leaf(std::vector<double>(n, 1.0), {n}, oar::cpu_place());
  Tensor loss;
  uint64_t with_temporaries;
  {
    Tensor c = Tensor::from_vector(std::vector<double>(n, 2.0), {n}, DType::kFloat64);
    loss = ops::sum(ops::add(x, c));  // add keeps no values (its output is already gone), sum neither
    with_temporaries = alloc.stats().allocated;  // x and c
  }
  // c (8 MB) is freed although the graph that used it is alive.
  EXPECT_LE(alloc.stats().allocated + n * sizeof(double), with_temporaries);
  ag::backward({loss});
  EXPECT_EQ(ag::grad(x).to_vector<double>()[n - 1], 1.0);
}
}  // namespace
