// CPU fallback on the sim device (design rule 8): an op without a sim kernel runs on the CPU plugin
// (copy in, compute, copy out), is counted per (op, device type, dtype), and obeys the policy
// (allow / warn / error) and the deny and force lists.
#include <oar/core/dispatch.h>
#include <oar/core/ops.h>

#include "conformance_util.h"

namespace oar_conformance {
namespace {

using oar::ErrorCode;
using oar::FallbackConfig;
using oar::FallbackPolicy;

Place sim0() { return Place::parse("sim:0"); }

int64_t count_of(const std::string& op, DType d) {
  const auto counts = oar::fallback_counts();
  auto it = counts.find(oar::FallbackKey{op, "sim", d});
  return it == counts.end() ? 0 : it->second;
}

// Sets a fallback configuration for the test and restores the previous one afterwards.
class FallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(oar::Runtime::get().find_device_type("sim"), nullptr) << "the sim plugin did not load";
    saved_ = oar::fallback_config();
    oar::reset_fallback_counts();
  }
  void TearDown() override { oar::set_fallback_config(saved_); }
  void set(FallbackPolicy policy, std::vector<std::string> deny = {}, std::vector<std::string> force = {}) {
    FallbackConfig c;
    c.policy = policy;
    c.deny = std::move(deny);
    c.force = std::move(force);
    oar::set_fallback_config(c);
  }
  Host host(DType d, Shape s, std::vector<cd> v) { return Host{d, std::move(s), std::move(v)}; }
  Tensor sim(const Host& h) { return upload(h, sim0()); }
  FallbackConfig saved_;
};

Host map(const Host& x, double (*f)(double)) {
  Host h = x;
  for (cd& v : h.v) v = f(v.real());
  return h;
}

const Host kX{kF32, {2, 3}, {0.5, -1, 2, 0, 1.5, -0.25}};
const Host kY{kF32, {2, 3}, {1, 2, 3, 4, 5, 6}};

TEST_F(FallbackTest, OpWithoutSimKernelRunsAndIsCounted) {
  set(FallbackPolicy::kAllow);
  ASSERT_FALSE(oar::has_kernel("exp", sim0(), kF32))
      << "the sim device gained an exp kernel; pick another op";
  ASSERT_TRUE(oar::has_kernel("exp", oar::cpu_place(), kF32));
  const Tensor x = sim(kX);
  const Tensor e = oar::ops::exp(x);
  EXPECT_EQ(e.place().to_string(), "sim:0") << "the result comes back to the device";
  expect_matches(map(kX, [](double v) { return std::exp(v); }), download(e));
  EXPECT_EQ(count_of("exp", kF32), 1);
  oar::ops::exp(x);
  EXPECT_EQ(count_of("exp", kF32), 2) << "every fallback is counted";

  const Tensor d = oar::ops::subtract(x, sim(kY));
  Host want = kX;
  for (size_t i = 0; i < want.v.size(); ++i) want.v[i] -= kY.v[i];
  expect_matches(want, download(d));
  EXPECT_EQ(count_of("subtract", kF32), 1);
  EXPECT_EQ(count_of("exp", kF64), 0) << "counted per dtype";
}

TEST_F(FallbackTest, WarnPolicyStillRunsAndCounts) {
  set(FallbackPolicy::kWarn);
  const Tensor e = oar::ops::unary("cos", sim(kX));
  expect_matches(map(kX, [](double v) { return std::cos(v); }), download(e));
  oar::ops::unary("cos", sim(kX));
  EXPECT_EQ(count_of("cos", kF32), 2);
}

TEST_F(FallbackTest, FallbackIsCountedPerDtype) {
  set(FallbackPolicy::kAllow);
  // add has sim kernels for float32/float64/int32/int64 only: int16 falls back.
  ASSERT_TRUE(oar::has_kernel("add", sim0(), kI32));
  ASSERT_FALSE(oar::has_kernel("add", sim0(), kI16));
  const Host a{kI16, {4}, {1, -2, 300, 7}}, b{kI16, {4}, {10, 20, 30, 40}};
  expect_matches(Host{kI16, {4}, {11, 18, 330, 47}}, download(oar::ops::add(sim(a), sim(b))));
  EXPECT_EQ(count_of("add", kI16), 1);
  EXPECT_EQ(count_of("add", kI32), 0);
  oar::ops::add(sim(Host{kI32, {1}, {1}}), sim(Host{kI32, {1}, {2}}));
  EXPECT_EQ(count_of("add", kI32), 0);
}

TEST_F(FallbackTest, FallbackTakesStridedInputs) {
  set(FallbackPolicy::kAllow);
  // A transposed, a reversed and an expanded view of sim memory go through the host copy.
  const Tensor base = sim(Host{kF32, {2, 3}, {1, 2, 3, 4, 5, 6}});
  expect_matches(Host{kF32, {3, 2}, {0, 3, 1, 4, 2, 5}},
                 download(oar::ops::subtract(base.transpose({1, 0}), sim(Host{kF32, {1}, {1}}))));
  expect_matches(Host{kF32, {2, 3}, {4, 5, 6, 1, 2, 3}}, download(oar::ops::copy(base.slice(0, 1, -3, -1))));
  expect_matches(Host{kF32, {2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}},
                 download(oar::ops::copy(base.expand(oar::Dims{2, 2, 3}))));
  EXPECT_EQ(count_of("subtract", kF32), 1);
}

TEST_F(FallbackTest, OpsWithSimKernelsAreNotCounted) {
  set(FallbackPolicy::kError);  // they must not even try to fall back
  const Tensor x = sim(kX), y = sim(kY);
  for (const char* op : {"add", "multiply", "relu", "sum", "matmul"})
    ASSERT_TRUE(oar::has_kernel(op, sim0(), kF32)) << op;
  expect_matches(Host{kF32, {2, 3}, {1.5, 1, 5, 4, 6.5, 5.75}}, download(oar::ops::add(x, y)));
  expect_matches(Host{kF32, {2, 3}, {0.5, -2, 6, 0, 7.5, -1.5}}, download(oar::ops::multiply(x, y)));
  expect_matches(Host{kF32, {2, 3}, {0.5, 0, 2, 0, 1.5, 0}}, download(oar::ops::relu(x)));
  expect_matches(Host{kF32, {3}, {0.5, 0.5, 1.75}}, download(oar::ops::sum(x, {0})));
  expect_matches(Host{kF32, {2, 2}, {4.5, 9, 2.25, 6}}, download(oar::ops::matmul(x, y, false, true)));
  EXPECT_TRUE(oar::fallback_counts().empty()) << "ops with sim kernels were counted as fallbacks";
}

TEST_F(FallbackTest, ErrorPolicyThrowsUnimplementedNamingTheOp) {
  set(FallbackPolicy::kError);
  const Tensor x = sim(kX);
  EXPECT_TRUE(throws_error([&] { oar::ops::exp(x); }, ErrorCode::kUnimplemented, "exp"));
  EXPECT_TRUE(throws_error([&] { oar::ops::subtract(x, x); }, ErrorCode::kUnimplemented, "subtract"));
  EXPECT_EQ(count_of("exp", kF32), 0) << "a refused fallback is not counted";
  // The device stays usable, and ops with kernels still run.
  expect_matches(Host{kF32, {2, 3}, {1, -2, 4, 0, 3, -0.5}}, download(oar::ops::add(x, x)));
  // cpu never falls back, so the policy does not concern it.
  expect_matches(map(kX, [](double v) { return std::exp(v); }),
                 download(oar::ops::exp(upload(kX, oar::cpu_place()))));
}

TEST_F(FallbackTest, DenyListRefusesOneOpWhileOthersFallBack) {
  set(FallbackPolicy::kAllow, {"exp"});
  const Tensor x = sim(kX);
  EXPECT_TRUE(throws_error([&] { oar::ops::exp(x); }, ErrorCode::kUnimplemented, "exp"));
  expect_matches(map(kX, [](double v) { return std::tanh(v); }), download(oar::ops::tanh(x)));
  EXPECT_EQ(count_of("tanh", kF32), 1);
  EXPECT_EQ(count_of("exp", kF32), 0);
  EXPECT_EQ(oar::fallback_config().deny, std::vector<std::string>{"exp"});
}

TEST_F(FallbackTest, ForceListRunsAnOpWithASimKernelOnCpu) {
  set(FallbackPolicy::kAllow, {}, {"add"});
  ASSERT_TRUE(oar::has_kernel("add", sim0(), kF32));
  const Tensor r = oar::ops::add(sim(kX), sim(kY));
  EXPECT_EQ(r.place().to_string(), "sim:0");
  Host want = kX;
  for (size_t i = 0; i < want.v.size(); ++i) want.v[i] += kY.v[i];
  expect_matches(want, download(r));
  EXPECT_EQ(count_of("add", kF32), 1);
  // multiply is not forced: it runs on its sim kernel, uncounted.
  oar::ops::multiply(sim(kX), sim(kY));
  EXPECT_EQ(count_of("multiply", kF32), 0);
}

TEST_F(FallbackTest, ConfigRoundTripsAndRejectsUnknownOps) {
  set(FallbackPolicy::kWarn, {"exp", "log"}, {"add"});
  const FallbackConfig c = oar::fallback_config();
  EXPECT_EQ(c.policy, FallbackPolicy::kWarn);
  EXPECT_EQ(c.deny, (std::vector<std::string>{"exp", "log"}));
  EXPECT_EQ(c.force, std::vector<std::string>{"add"});
  FallbackConfig bad;
  bad.deny = {"no_such_op"};
  EXPECT_THROW(oar::set_fallback_config(bad), oar::Error);
  EXPECT_EQ(oar::fallback_config().deny, (std::vector<std::string>{"exp", "log"}))
      << "a bad config changes nothing";
}

TEST_F(FallbackTest, ResetClearsCounts) {
  set(FallbackPolicy::kAllow);
  oar::ops::exp(sim(kX));
  EXPECT_EQ(count_of("exp", kF32), 1);
  oar::reset_fallback_counts();
  EXPECT_TRUE(oar::fallback_counts().empty());
}

}  // namespace
}  // namespace oar_conformance
