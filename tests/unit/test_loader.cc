// The plugin loader: every deliberately broken plugin in OAR_TEST_PLUGIN_DIR is skipped with its
// specific reason (and the process survives), the evolved-ABI ones load and work, and the real
// plugins (cpu, sim) are loaded, link no liboar_core and export only the two entry points.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <gtest/gtest.h>

#include "run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using oar::DType;
using oar::Dims;
using oar::PluginRecord;
using oar::Runtime;
using oar::Tensor;

std::string test_plugin(const std::string& name) {
  return std::string(OAR_TEST_PLUGIN_DIR) + "/liboar_plugin_" + name + ".so";
}

// The records of plugin discovery, before any test loaded a plugin explicitly.
const std::vector<PluginRecord>& discovered() {
  static const std::vector<PluginRecord> records = Runtime::get().plugin_records();
  return records;
}

// Each test plugin is loaded once per process; tests may run in any order or alone.
const PluginRecord& load(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, PluginRecord> cache;
  discovered();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, Runtime::get().load_plugin(test_plugin(name))).first;
  return it->second;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool mentions(const std::string& text, const std::string& what) {
  return lower(text).find(lower(what)) != std::string::npos;
}

std::string describe(const PluginRecord& r) {
  std::ostringstream os;
  os << "record{path=" << r.path << ", name=" << r.name << ", device_type=" << r.device_type
     << ", abi=" << r.abi_major << "." << r.abi_minor << ", loaded=" << r.loaded << ", reason=\"" << r.reason
     << "\", devices=" << r.num_devices << ", kernels=" << r.num_kernels << ", warnings=[";
  for (const std::string& w : r.warnings) os << "\"" << w << "\" ";
  os << "]}";
  return os.str();
}

// A refused plugin leaves no device type behind.
void expect_no_device_type(const std::string& type) {
  EXPECT_EQ(Runtime::get().find_device_type(type), nullptr) << "refused plugin registered device type " << type;
  try {
    oar::Place::parse(type + ":0");
    ADD_FAILURE() << "Place::parse(\"" << type << ":0\") succeeded for a refused plugin";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kNotFound) << e.what();
  }
}

void expect_refused(const PluginRecord& r, const std::vector<std::string>& causes) {
  EXPECT_FALSE(r.loaded) << describe(r);
  EXPECT_FALSE(r.reason.empty()) << describe(r);
  for (const std::string& c : causes) EXPECT_TRUE(mentions(r.reason, c)) << "reason should mention \"" << c << "\": " << describe(r);
}

int64_t fallback_count(const std::string& op, const std::string& device_type, DType dtype) {
  auto counts = oar::fallback_counts();
  auto it = counts.find(oar::FallbackKey{op, device_type, dtype});
  return it == counts.end() ? 0 : it->second;
}

Tensor floats(const std::vector<float>& v, const Dims& dims) { return Tensor::from_vector(v, dims, DType::kFloat32); }

// Runs commands for the binary checks; returns exit status (-1 when it could not run) and output.
using oar_test::run_command;
bool have_tool(const std::string& tool) {
  std::string out;
  return run_command("command -v " + tool, &out) == 0 && !out.empty();
}

// The shared checks for a test device that works: data goes there and back, `add` runs on it through
// the plugin's own kernel, `multiply` (no kernel there) through the CPU fallback.
void exercise_device(const std::string& device_type) {
  SCOPED_TRACE("device type " + device_type);
  oar::Place place = oar::Place::parse(device_type + ":0");
  const oar::DeviceType* type = Runtime::get().find_device_type(device_type);
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(place.type, type->id);
  EXPECT_EQ(type->count, 1);
  EXPECT_EQ(place.to_string(), device_type + ":0");

  Tensor e = Tensor::empty(Dims{2, 3}, DType::kFloat32, place);
  EXPECT_EQ(e.place(), place);
  EXPECT_NE(e.data_ptr(), nullptr);

  std::vector<float> xv = {1, 2, 3, 4, 5, 6}, yv = {10, 20, 30};
  Tensor x = floats(xv, Dims{2, 3}).to(place);
  Tensor y = floats(yv, Dims{3}).to(place);
  ASSERT_EQ(x.place(), place);
  EXPECT_EQ(x.to_vector<float>(), xv);
  EXPECT_EQ(x.cpu().to_vector<float>(), xv);
  Tensor direct = Tensor::from_host(yv.data(), Dims{3}, DType::kFloat32, place);
  EXPECT_EQ(direct.place(), place);
  EXPECT_EQ(direct.to_vector<float>(), yv);

  oar::set_fallback_config(oar::FallbackConfig{});  // default policy: warn and fall back
  oar::reset_fallback_counts();
  EXPECT_TRUE(oar::has_kernel("add", place, DType::kFloat32));
  Tensor z = oar::ops::add(x, y);
  EXPECT_EQ(z.place(), place);
  EXPECT_EQ(z.dims(), (Dims{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(fallback_count("add", device_type, DType::kFloat32), 0) << "add must run on the plugin's own kernel";

  EXPECT_FALSE(oar::has_kernel("multiply", place, DType::kFloat32));
  Tensor m = oar::ops::multiply(x, y);
  EXPECT_EQ(m.place(), place);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{10, 40, 90, 40, 100, 180}));
  EXPECT_GE(fallback_count("multiply", device_type, DType::kFloat32), 1) << "multiply should have fallen back";

  // A strided view on the device: the core makes it contiguous for a kernel that did not opt in.
  Tensor xt = x.transpose({1, 0});  // [3, 2]
  Tensor yt = floats({100, 200}, Dims{2}).to(place);
  EXPECT_EQ(oar::ops::add(xt, yt).to_vector<float>(), (std::vector<float>{101, 204, 102, 205, 103, 206}));

  // Device to device and back.
  Tensor copy = z.to(oar::cpu_place()).to(place);
  EXPECT_FALSE(copy.shares_storage(z));
  EXPECT_EQ(copy.to_vector<float>(), z.to_vector<float>());
  Runtime::get().device(place).synchronize();
}

// ---- the real plugins ---------------------------------------------------------------------------------

TEST(Loader, CpuAndSimAreLoaded) {
  const auto& records = discovered();
  for (const char* name : {"cpu", "sim"}) {
    auto it = std::find_if(records.begin(), records.end(), [&](const PluginRecord& r) { return r.name == name; });
    ASSERT_NE(it, records.end()) << "no record for the " << name << " plugin";
    EXPECT_TRUE(it->loaded) << describe(*it);
    EXPECT_EQ(it->device_type, name);
    EXPECT_GE(it->num_devices, 1) << describe(*it);
    EXPECT_GT(it->num_kernels, 0) << describe(*it);
    EXPECT_EQ(it->abi_major, static_cast<uint32_t>(OAR_ABI_VERSION_MAJOR));
    EXPECT_NE(Runtime::get().find_device_type(name), nullptr);
  }
  const oar::DeviceType* cpu = Runtime::get().find_device_type("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->id, oar::kCpuDeviceType);
  // The test plugins' folder is not searched by default.
  for (const auto& r : records)
    if (r.path.find(OAR_TEST_PLUGIN_DIR) == 0) ADD_FAILURE() << "a test plugin was discovered: " << describe(r);
}

std::string real_plugin(const char* name) {
  return std::string(OAR_BUILD_PLUGIN_DIR) + "/liboar_plugin_" + name + ".so";
}

TEST(Loader, RealPluginsDoNotLinkTheCore) {
  if (!have_tool("ldd")) GTEST_SKIP() << "ldd is not installed";
  for (const char* name : {"cpu", "sim"}) {
    std::string path = real_plugin(name), out;
    ASSERT_EQ(access(path.c_str(), R_OK), 0) << path << " does not exist";
    ASSERT_EQ(run_command("ldd '" + path + "'", &out), 0) << out;
    EXPECT_EQ(out.find("liboar_core"), std::string::npos) << path << " links the core:\n" << out;
    EXPECT_EQ(out.find("not found"), std::string::npos) << path << " has unresolved libraries:\n" << out;
  }
}

TEST(Loader, RealPluginsExportOnlyTheEntryPoints) {
  if (!have_tool("nm")) GTEST_SKIP() << "nm is not installed";
  for (const char* name : {"cpu", "sim"}) {
    std::string path = real_plugin(name), out;
    ASSERT_EQ(access(path.c_str(), R_OK), 0) << path << " does not exist";
    ASSERT_EQ(run_command("nm -D --defined-only '" + path + "'", &out), 0) << out;
    std::set<std::string> exported;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::vector<std::string> f;
      std::string w;
      while (fields >> w) f.push_back(w);
      if (f.empty()) continue;
      const std::string& sym = f.back();
      if (sym.empty() || sym[0] == '_') continue;  // reserved / C++-mangled (weak template instances)
      exported.insert(sym);
    }
    EXPECT_EQ(exported, (std::set<std::string>{"oar_plugin_init", "oar_plugin_query"})) << path << ":\n" << out;
  }
}

// ---- plugins that must be refused ----------------------------------------------------------------------

TEST(Loader, MissingFile) {
  discovered();
  PluginRecord r = Runtime::get().load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/liboar_plugin_does_not_exist.so");
  EXPECT_FALSE(r.loaded);
  EXPECT_FALSE(r.reason.empty());
}

TEST(Loader, NotAPlugin) {
  const PluginRecord& r = load("not_a_plugin");
  expect_refused(r, {"oar_plugin"});
}

TEST(Loader, MissingInit) {
  const PluginRecord& r = load("missing_init");
  expect_refused(r, {"oar_plugin_init"});
  expect_no_device_type("test_missing_init");
}

TEST(Loader, MissingQuery) {
  const PluginRecord& r = load("missing_query");
  expect_refused(r, {"oar_plugin_query"});
  expect_no_device_type("test_missing_query");
}

TEST(Loader, AbiMajorMismatch) {
  const PluginRecord& r = load("abi_major");
  expect_refused(r, {"major"});
  EXPECT_EQ(r.abi_major, static_cast<uint32_t>(OAR_ABI_VERSION_MAJOR + 1)) << describe(r);
  EXPECT_EQ(r.name, "abi_major");
  expect_no_device_type("test_abi_major");
}

TEST(Loader, MinorOutsideWindow) {
  const PluginRecord& r = load("minor_outside_window");
  expect_refused(r, {"minor"});
  EXPECT_EQ(r.abi_minor, static_cast<uint32_t>(OAR_ABI_VERSION_MINOR + OAR_ABI_MINOR_WINDOW + 1)) << describe(r);
  expect_no_device_type("test_minor_window");
}

TEST(Loader, InitReturnsError) {
  const PluginRecord& r = load("init_error");
  expect_refused(r, {"vendor library libfoo.so.1 not found"});
  expect_no_device_type("test_init_error");
}

TEST(Loader, InitThrows) {
  const PluginRecord& r = load("init_throws");
  expect_refused(r, {"exception"});
  EXPECT_TRUE(mentions(r.reason, "the vendor runtime blew up")) << "reason should carry what(): " << describe(r);
  expect_no_device_type("test_init_throws");
}

TEST(Loader, ZeroDevicesIsSkippedWithTheVendorReason) {
  const PluginRecord& r = load("zero_devices");
  expect_refused(r, {"CUDA driver version is insufficient"});
  EXPECT_EQ(r.num_devices, 0);
  const oar::DeviceType* t = Runtime::get().find_device_type("test_zero_devices");
  if (t) {
    EXPECT_EQ(t->count, 0);
  }
  EXPECT_ANY_THROW(Runtime::get().device(oar::Place::parse("test_zero_devices:0")));
}

TEST(Loader, RefusedPluginsAreRecorded) {
  for (const char* name : {"missing_init", "abi_major", "init_error", "init_throws", "zero_devices"}) load(name);
  const auto& records = Runtime::get().plugin_records();
  for (const char* name : {"missing_init", "abi_major", "init_error", "init_throws", "zero_devices"}) {
    std::string path = test_plugin(name);
    auto it = std::find_if(records.begin(), records.end(), [&](const PluginRecord& r) { return r.path == path; });
    ASSERT_NE(it, records.end()) << "no record for " << path;
    EXPECT_FALSE(it->loaded);
    EXPECT_FALSE(it->reason.empty());
  }
}

// ---- plugins that must load ---------------------------------------------------------------------------------

TEST(Loader, OlderMinorLoadsAndWorks) {
  const PluginRecord& r = load("older_minor");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_EQ(r.name, "older_minor");
  EXPECT_EQ(r.device_type, "test_older");
  EXPECT_EQ(r.abi_minor, 1u);  // older_minor claims 1.1 (tests/plugins/older_minor.cc)
  EXPECT_EQ(r.vendor_versions, "older vendor sdk 1.0");
  EXPECT_EQ(r.score, 0) << "score lies past the older OarPluginInfo and must read as 0";
  EXPECT_EQ(r.num_devices, 1);
  EXPECT_EQ(r.num_kernels, 1);
  EXPECT_TRUE(r.warnings.empty()) << describe(r);

  oar::Device& dev = Runtime::get().device(oar::Place::parse("test_older:0"));
  EXPECT_STREQ(dev.properties().name, "test_older test device");
  EXPECT_EQ(dev.properties().compute_units, 3);
  EXPECT_EQ(dev.properties().max_streams, 0) << "max_streams lies past the older properties and must read as 0";
  EXPECT_EQ(dev.tables().device.memory_info, nullptr) << "memory_info lies past the older device table";
  EXPECT_EQ(dev.tables().stream.launch_host_func, nullptr) << "launch_host_func lies past the older stream table";
  EXPECT_EQ(dev.tables().event.elapsed_ms, nullptr) << "elapsed_ms lies past the older event table";
  EXPECT_NE(dev.tables().memory.memcpy, nullptr);
  exercise_device("test_older");

  // Code 12 (OAR_ERR_DECLINED since ABI 1.2) from a plugin built for 1.1 is an error, never a fallback.
  oar::reset_fallback_counts();
  Tensor x = floats(std::vector<float>(13, 1.0f), Dims{13}).to(oar::Place::parse("test_older:0"));
  try {
    oar::ops::add(x, x);
    ADD_FAILURE() << "error code 12 from an ABI 1.1 plugin was taken as a decline";
  } catch (const oar::Error& e) {
    EXPECT_TRUE(mentions(e.what(), "error code 12 from a 1.1 plugin")) << e.what();
  }
  EXPECT_EQ(fallback_count("add", "test_older", DType::kFloat32), 0);
}

TEST(Loader, Abi10PluginLoadsAndWorks) {
  // older_minor.cc built claiming ABI 1.0 (the first published minor): still loads and works under 1.2.
  const PluginRecord& r = load("abi_1_0");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_EQ(r.abi_minor, 0u);
  EXPECT_EQ(r.num_kernels, 1);
  EXPECT_STREQ(Runtime::get().device(oar::Place::parse("test_abi_1_0:0")).properties().name,
               "test_abi_1_0 test device");
  exercise_device("test_abi_1_0");
}

TEST(Loader, NewerMinorLoadsAndWorks) {
  const PluginRecord& r = load("newer_minor");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_EQ(r.device_type, "test_newer");
  EXPECT_EQ(r.abi_minor, static_cast<uint32_t>(OAR_ABI_VERSION_MINOR + 1));
  EXPECT_EQ(r.num_devices, 1);
  EXPECT_EQ(r.num_kernels, 1);
  oar::Device& dev = Runtime::get().device(oar::Place::parse("test_newer:0"));
  EXPECT_STREQ(dev.properties().name, "test_newer test device");
  EXPECT_EQ(dev.properties().struct_size, sizeof(OarDeviceProperties));
  EXPECT_NE(dev.tables().device.memory_info, nullptr);
  exercise_device("test_newer");
}

TEST(Loader, UnknownOpIsAWarningNotAFailure) {
  const PluginRecord& r = load("unknown_op");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_EQ(r.device_type, "test_unknown_op");
  bool warned = std::any_of(r.warnings.begin(), r.warnings.end(),
                            [](const std::string& w) { return w.find("no_such_op_xyz") != std::string::npos; });
  EXPECT_TRUE(warned) << "no warning names no_such_op_xyz: " << describe(r);
  EXPECT_EQ(r.num_kernels, 1) << "only the add kernel counts: " << describe(r);

  // The loaded record is also what the runtime keeps.
  const auto& records = Runtime::get().plugin_records();
  auto it = std::find_if(records.begin(), records.end(),
                         [&](const PluginRecord& x) { return x.path == test_plugin("unknown_op"); });
  ASSERT_NE(it, records.end());
  EXPECT_TRUE(it->loaded);
  EXPECT_EQ(it->warnings, r.warnings);

  oar::Place place = oar::Place::parse("test_unknown_op:0");
  auto kernels = Runtime::get().kernels_of(place.type);
  bool has_add = false;
  for (const auto& k : kernels) {
    EXPECT_NE(k.first, "no_such_op_xyz");
    if (k.first == "add") has_add = std::find(k.second.begin(), k.second.end(), DType::kFloat32) != k.second.end();
  }
  EXPECT_TRUE(has_add);

  oar::reset_fallback_counts();
  Tensor x = floats({1.5f, -2, 3, 0.25f, 5, 6}, Dims{2, 3}).to(place);
  Tensor y = floats({0.5f, 2}, Dims{2, 1}).to(place);
  Tensor z = oar::ops::add(x, y);  // broadcast [2, 3] + [2, 1]
  EXPECT_EQ(z.place(), place);
  EXPECT_EQ(z.dims(), (Dims{2, 3}));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{2, -1.5f, 3.5f, 2.25f, 7, 8}));
  EXPECT_EQ(fallback_count("add", "test_unknown_op", DType::kFloat32), 0);
}

TEST(Loader, OnlyTheRequiredTablesLoadsAndWorks) {
  // tests/plugins/minimal_required.cc: device.count and memory.allocate/free/memcpy, nothing else (no
  // stream: the device is synchronous; no properties: zeros).
  const PluginRecord& r = load("minimal_required");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_TRUE(r.warnings.empty()) << describe(r);
  oar::Device& dev = Runtime::get().device(oar::Place::parse("test_minimal:0"));
  EXPECT_EQ(dev.tables().stream.create, nullptr);
  EXPECT_EQ(dev.tables().device.properties, nullptr);
  EXPECT_EQ(dev.tables().memory.memset, nullptr);
  exercise_device("test_minimal");
}

TEST(Loader, NameDifferentFromFileNameLoadsWithAWarning) {
  // liboar_plugin_misnamed.so answers the query with the name "renamed".
  const PluginRecord& r = load("misnamed");
  ASSERT_TRUE(r.loaded) << describe(r);
  EXPECT_EQ(r.name, "renamed");
  ASSERT_EQ(r.warnings.size(), 1u) << describe(r);
  EXPECT_EQ(r.warnings[0],
            "the plugin's name 'renamed' does not match its file name liboar_plugin_misnamed.so (expected "
            "liboar_plugin_renamed.so)");
  exercise_device("test_misnamed");
}

}  // namespace
