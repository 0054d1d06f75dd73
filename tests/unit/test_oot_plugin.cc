// Builds samples/oot_plugin out of tree exactly as a vendor would (find_package(oar) from the build
// tree's SDK package, nothing else), loads the result and runs its kernel through the core.
#include <oar/core/dispatch.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <gtest/gtest.h>

#include "run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using oar::DType;
using oar::Dims;
using oar::Tensor;

const std::string kSource = std::string(OAR_SOURCE_DIR) + "/samples/oot_plugin";
const std::string kBuild = std::string(OAR_BINARY_DIR) + "/oot_plugin_build";
const std::string kPlugin = kBuild + "/liboar_plugin_oot.so";

std::string quote(const std::string& s) { return "'" + s + "'"; }

using oar_test::run_command;

// Configures and builds the sample once per process; returns "" on success, else the failure.
const std::string& build_sample() {
  static const std::string result = [] {
    std::error_code ec;
    std::filesystem::remove_all(kBuild, ec);  // a fresh build, as a vendor's first one
    std::string out;
    std::string configure = quote(OAR_CMAKE_COMMAND) + " -S " + quote(kSource) + " -B " + quote(kBuild) +
                            " -Doar_DIR=" + quote(std::string(OAR_BINARY_DIR) + "/sdk") +
                            " -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=" + quote(OAR_CXX_COMPILER);
    if (run_command(configure, &out) != 0) return "configure failed:\n$ " + configure + "\n" + out;
    std::string build = quote(OAR_CMAKE_COMMAND) + " --build " + quote(kBuild);
    if (run_command(build, &out) != 0) return "build failed:\n$ " + build + "\n" + out;
    if (access(kPlugin.c_str(), R_OK) != 0) return "the build did not produce " + kPlugin + ":\n" + out;
    return std::string();
  }();
  return result;
}

const oar::PluginRecord& load_sample() {
  static const oar::PluginRecord record = oar::Runtime::get().load_plugin(kPlugin);
  return record;
}

int64_t fallback_count(const std::string& op, DType dtype) {
  auto counts = oar::fallback_counts();
  auto it = counts.find(oar::FallbackKey{op, "oot", dtype});
  return it == counts.end() ? 0 : it->second;
}

Tensor floats(const std::vector<float>& v, const Dims& dims, oar::Place place) {
  return Tensor::from_vector(v, dims, DType::kFloat32).to(place);
}

class OotPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string& failure = build_sample();
    ASSERT_EQ(failure, "") << failure;
    const oar::PluginRecord& r = load_sample();
    ASSERT_TRUE(r.loaded) << "liboar_plugin_oot.so was skipped: " << r.reason;
    place_ = oar::Place::parse("oot:0");
    oar::set_fallback_config(oar::FallbackConfig{});
    oar::reset_fallback_counts();
  }
  oar::Place place_;
};

TEST_F(OotPlugin, LoadsWithItsDeviceAndKernel) {
  const oar::PluginRecord& r = load_sample();
  EXPECT_EQ(r.name, "oot");
  EXPECT_EQ(r.device_type, "oot");
  EXPECT_EQ(r.abi_major, static_cast<uint32_t>(OAR_ABI_VERSION_MAJOR));
  EXPECT_EQ(r.abi_minor, static_cast<uint32_t>(OAR_ABI_VERSION_MINOR));
  EXPECT_EQ(r.num_devices, 1);
  EXPECT_EQ(r.num_kernels, 1);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(oar::has_kernel("multiply", place_, DType::kFloat32));
  EXPECT_FALSE(oar::has_kernel("multiply", place_, DType::kFloat64));
  EXPECT_STREQ(oar::Runtime::get().device(place_).properties().name, "oot sample device");
}

TEST_F(OotPlugin, MultiplyBroadcasts) {
  Tensor x = floats({1, 2, 3, 4, 5, 6}, Dims{2, 3}, place_);
  Tensor y = floats({10, 20, 30}, Dims{3}, place_);
  Tensor z = oar::ops::multiply(x, y);
  EXPECT_EQ(z.place(), place_);
  EXPECT_EQ(z.dims(), (Dims{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{10, 40, 90, 40, 100, 180}));

  // [3, 1] * [1, 4] -> [3, 4]
  Tensor col = floats({1, 2, 3}, Dims{3, 1}, place_);
  Tensor row = floats({0.5f, -1, 2, 4}, Dims{1, 4}, place_);
  Tensor outer = oar::ops::multiply(col, row);
  EXPECT_EQ(outer.dims(), (Dims{3, 4}));
  EXPECT_EQ(outer.to_vector<float>(),
            (std::vector<float>{0.5f, -1, 2, 4, 1, -2, 4, 8, 1.5f, -3, 6, 12}));

  // A scalar operand.
  Tensor two = floats({2}, Dims{}, place_);
  EXPECT_EQ(oar::ops::multiply(x, two).to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(fallback_count("multiply", DType::kFloat32), 0) << "multiply must run on the oot kernel";
}

TEST_F(OotPlugin, MultiplyTakesStridedInputs) {
  Tensor x = floats({1, 2, 3, 4, 5, 6}, Dims{2, 3}, place_);
  Tensor xt = x.transpose({1, 0});  // [[1, 4], [2, 5], [3, 6]]
  Tensor y = floats({10, 100}, Dims{2}, place_);
  Tensor z = oar::ops::multiply(xt, y);
  EXPECT_EQ(z.dims(), (Dims{3, 2}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{10, 400, 20, 500, 30, 600}));
  Tensor stepped = x.slice(1, 0, 3, 2);  // [[1, 3], [4, 6]]
  EXPECT_EQ(oar::ops::multiply(stepped, stepped).to_vector<float>(), (std::vector<float>{1, 9, 16, 36}));
  EXPECT_EQ(fallback_count("multiply", DType::kFloat32), 0);
}

TEST_F(OotPlugin, LargeMultiplyMatchesTheCpu) {
  const int64_t n = 1 << 18;  // past the SDK's parallel grain
  Tensor a = oar::ops::uniform(Dims{n}, -2, 2, DType::kFloat32, 7);
  Tensor b = oar::ops::uniform(Dims{n}, -2, 2, DType::kFloat32, 8);
  std::vector<float> want = oar::ops::multiply(a, b).to_vector<float>();
  std::vector<float> got = oar::ops::multiply(a.to(place_), b.to(place_)).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
}

TEST_F(OotPlugin, OtherOpsFallBackToTheCpu) {
  Tensor x = floats({1, 2, 3}, Dims{3}, place_);
  Tensor y = floats({4, 5, 6}, Dims{3}, place_);
  Tensor z = oar::ops::add(x, y);
  EXPECT_EQ(z.place(), place_);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_GE(fallback_count("add", DType::kFloat32), 1);

  std::vector<double> dv = {1.5, 2.5};
  Tensor d = Tensor::from_vector(dv, Dims{2}, DType::kFloat64).to(place_);
  EXPECT_EQ(oar::ops::multiply(d, d).to_vector<double>(), (std::vector<double>{2.25, 6.25}));
  EXPECT_GE(fallback_count("multiply", DType::kFloat64), 1);
}

TEST_F(OotPlugin, BinaryLinksNoCoreAndExportsOnlyTheEntryPoints) {
  std::string out;
  if (run_command("command -v ldd", &out) == 0) {
    ASSERT_EQ(run_command("ldd " + quote(kPlugin), &out), 0) << out;
    EXPECT_EQ(out.find("liboar_core"), std::string::npos) << out;
  }
  if (run_command("command -v nm", &out) != 0) GTEST_SKIP() << "nm is not installed";
  ASSERT_EQ(run_command("nm -D --defined-only " + quote(kPlugin), &out), 0) << out;
  std::set<std::string> exported;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string w, last;
    while (fields >> w) last = w;
    if (!last.empty() && last[0] != '_') exported.insert(last);
  }
  EXPECT_EQ(exported, (std::set<std::string>{"oar_plugin_init", "oar_plugin_query"})) << out;
}

}  // namespace
