// ABI 1.2: a kernel declines a call (its supports query says no, or it returns OAR_ERR_DECLINED) and the
// core runs that call on the CPU fallback, counted and under the fallback policy; kernel_supports()
// answers placement questions from metadata. Uses tests/plugins/declining.cc (device type test_declining).
#include <gtest/gtest.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

using oar::Dims;
using oar::DType;
using oar::Tensor;

oar::Place place() {
  static const oar::Place p = [] {
    const oar::PluginRecord r =
        oar::Runtime::get().load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/liboar_plugin_declining.so");
    EXPECT_TRUE(r.loaded) << r.reason;
    return oar::Place::parse("test_declining:0");
  }();
  return p;
}

int64_t fallbacks(const std::string& op, DType dtype) {
  auto counts = oar::fallback_counts();
  auto it = counts.find(oar::FallbackKey{op, "test_declining", dtype});
  return it == counts.end() ? 0 : it->second;
}

std::vector<float> iota(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

Tensor on_device(const std::vector<float>& v, const Dims& dims) {
  return Tensor::from_vector(v, dims, DType::kFloat32).to(place());
}

// The plugin's own call counts (its "subtract" kernel reports them): {add, multiply}.
std::vector<float> device_calls() {
  Tensor z = on_device({0, 0}, Dims{2});
  return oar::ops::subtract(z, z).to_vector<float>();
}

struct Decline : ::testing::Test {
  void SetUp() override {
    place();
    oar::set_fallback_config(oar::FallbackConfig{});
    oar::reset_fallback_counts();
  }
  void TearDown() override { oar::set_fallback_config(oar::FallbackConfig{}); }
};

TEST_F(Decline, SupportedCallsRunOnTheDevice) {
  const float before = device_calls()[0];
  Tensor x = on_device(iota(12, 0), Dims{3, 4}), y = on_device(iota(12, 100), Dims{3, 4});
  Tensor z = oar::ops::add(x, y);
  EXPECT_EQ(z.place(), place());
  EXPECT_EQ(z.to_vector<float>()[11], 11.0f + 111.0f);
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 0);
  EXPECT_EQ(device_calls()[0], before + 1) << "the add kernel ran";
}

TEST_F(Decline, ASupportsNoFallsBackWithACountAndNeverCallsTheKernel) {
  const float before = device_calls()[0];
  Tensor x = on_device(iota(100, 0), Dims{10, 10}), y = on_device(iota(100, 1000), Dims{10, 10});
  Tensor z = oar::ops::add(x, y);
  EXPECT_EQ(z.place(), place()) << "the fallback's output comes back to the device";
  const std::vector<float> got = z.to_vector<float>();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(got[i], static_cast<float>(i + 1000 + i)) << i;
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 1);
  EXPECT_EQ(device_calls()[0], before) << "the kernel was called although its supports query said no";
  oar::ops::add(x, y);
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 2) << "every declined call is counted";
}

TEST_F(Decline, AKernelDecliningAtCallTimeFallsBackAndItsOutputsAreReplaced) {
  Tensor x = on_device(iota(12, 0), Dims{3, 4}), y = on_device(iota(12, 50), Dims{4, 3});
  Tensor xt = x.transpose({1, 0});  // [4, 3], not contiguous: the kernel declines
  Tensor z = oar::ops::add(xt, y);
  EXPECT_EQ(z.place(), place());
  EXPECT_EQ(z.dims(), (Dims{4, 3}));
  const std::vector<float> got = z.to_vector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) ASSERT_EQ(got[i * 3 + j], static_cast<float>(j * 4 + i + 50 + i * 3 + j));
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 1);
}

TEST_F(Decline, AnotherDtypeIsDeclinedByTheQuery) {
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2}, Dims{2}, DType::kFloat64).to(place());
  EXPECT_EQ(oar::ops::add(x, x).to_vector<double>(), (std::vector<double>{2, 4}));
  EXPECT_EQ(fallbacks("add", DType::kFloat64), 1);
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 0);
}

TEST_F(Decline, PolicyErrorNamesTheOpTheDtypeAndThePluginsReason) {
  oar::FallbackConfig c;
  c.policy = oar::FallbackPolicy::kError;
  oar::set_fallback_config(c);
  Tensor x = on_device(iota(100, 0), Dims{100});
  try {
    oar::ops::add(x, x);
    FAIL() << "a declined call fell back under policy 'error'";
  } catch (const oar::Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), oar::ErrorCode::kUnimplemented) << m;
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("float32"), std::string::npos) << m;
    EXPECT_NE(m.find("add takes at most 64 elements, got 100"), std::string::npos) << m;
    EXPECT_NE(m.find("policy is 'error'"), std::string::npos) << m;
  }
  Tensor s = on_device(iota(12, 0), Dims{3, 4});
  try {
    oar::ops::add(s.transpose({1, 0}), s.transpose({1, 0}));
    FAIL() << "a call-time decline fell back under policy 'error'";
  } catch (const oar::Error& e) {
    EXPECT_NE(std::string(e.what()).find("add reads only contiguous x"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fallbacks("add", DType::kFloat32), 0);
  EXPECT_EQ(oar::ops::add(s, s).to_vector<float>()[3], 6.0f) << "supported calls still run";
}

TEST_F(Decline, TheDenyListAppliesToDeclines) {
  oar::FallbackConfig c;
  c.deny = {"add"};
  oar::set_fallback_config(c);
  Tensor x = on_device(iota(100, 0), Dims{100});
  EXPECT_THROW(oar::ops::add(x, x), oar::Error);
}

TEST_F(Decline, KernelSupportsAnswersPlacementFromMetadata) {
  const float before = device_calls()[0];
  std::string why = "unset";
  EXPECT_TRUE(oar::kernel_supports("add", {{DType::kFloat32, Dims{3, 4}}, {DType::kFloat32, Dims{4}}}, {},
                                   place(), &why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(oar::kernel_supports("add", {{DType::kFloat32, Dims{10, 10}}, {DType::kFloat32, Dims{10}}}, {},
                                    place(), &why));
  EXPECT_NE(why.find("at most 64 elements, got 100"), std::string::npos) << why;
  EXPECT_FALSE(oar::kernel_supports("add", {{DType::kFloat64, Dims{2}}, {DType::kFloat64, Dims{2}}}, {},
                                    place(), &why));
  EXPECT_NE(why.find("no float64 units"), std::string::npos) << why;
  EXPECT_FALSE(oar::kernel_supports("exp", {{DType::kFloat32, Dims{2}}}, {}, place(), &why));
  EXPECT_NE(why.find("no kernel for exp"), std::string::npos) << why;
  EXPECT_TRUE(oar::kernel_supports("multiply", {{DType::kFloat32, Dims{1000}}, {DType::kFloat32, Dims{1000}}},
                                   {}, place()))
      << "a kernel without a query supports every call of its dtypes";
  EXPECT_THROW(oar::kernel_supports("add", {{DType::kFloat32, Dims{2}}}, {}, place()), oar::Error)
      << "wrong arity is an error, not a 'no'";
  EXPECT_EQ(device_calls()[0], before) << "a query runs no kernel";
  EXPECT_TRUE(oar::fallback_counts().empty()) << "a query is not a fallback";
}

TEST_F(Decline, CpuKernelsCannotDecline) {
  // The cpu plugin registers no query; kernel_supports on cpu is has_kernel.
  EXPECT_TRUE(oar::kernel_supports("add", {{DType::kFloat32, Dims{1000}}, {DType::kFloat32, Dims{1000}}}, {},
                                   oar::cpu_place()));
}

}  // namespace
