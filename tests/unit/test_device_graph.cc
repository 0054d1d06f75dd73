// Graph capture (ABI 1.3) on the sim plugin: the SDK worker streams' semantics through the raw stream
// table, then the core's DeviceGraph (private pool, kept inputs, refusals). docs/device_graph.md.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/core/graph.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <atomic>
#include <string>
#include <vector>

namespace oar {
// Exported by liboar_core (framework/src/internal.h): a plugin's OarError as oar::Error.
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
}  // namespace oar

using oar::DeviceGraph;
using oar::DType;
using oar::ErrorCode;
using oar::Place;
using oar::Tensor;

namespace {

const Place kSim = Place::parse("sim:0");

oar::Device& sim() { return oar::Runtime::get().device(kSim); }

// Calls a plugin function and returns (code, message) of its error; OAR_OK for success.
std::pair<int, std::string> call(OarError* e) {
  if (!e) return {OAR_OK, ""};
  try {
    oar::check_plugin_error("sim", "test", e);
  } catch (const oar::Error& x) {
    return {static_cast<int>(x.code()), x.what()};
  }
  return {OAR_OK, ""};
}

bool mentions(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

Tensor on_sim(const std::vector<float>& v) {
  return Tensor::from_vector(v, oar::Dims{int64_t(v.size())}, DType::kFloat32).to(kSim);
}

void bump(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

}  // namespace

TEST(SimCapture, WorkIsRecordedNotRunAndEachLaunchRunsItAgain) {
  oar::Device& d = sim();
  const OarStreamTable& t = d.tables().stream;
  ASSERT_TRUE(t.begin_capture && t.end_capture && t.graph_launch && t.graph_destroy);
  OarStream s = d.default_stream();
  Tensor out = on_sim({1, 2, 3, 4});
  std::atomic<int> runs{0};
  ASSERT_EQ(call(t.begin_capture(0, s)).first, OAR_OK);
  ASSERT_EQ(call(d.tables().memory.memset(0, out.data_ptr(), 0, 16, s)).first, OAR_OK);
  ASSERT_EQ(call(t.launch_host_func(0, s, bump, &runs)).first, OAR_OK);
  OarGraph g = nullptr;
  ASSERT_EQ(call(t.end_capture(0, s, &g)).first, OAR_OK);
  ASSERT_NE(g, nullptr);
  d.synchronize();
  EXPECT_EQ(runs.load(), 0) << "captured work ran at capture";
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 2, 3, 4})) << "the captured memset ran at capture";
  ASSERT_EQ(call(t.graph_launch(0, g, s)).first, OAR_OK);
  ASSERT_EQ(call(t.graph_launch(0, g, s)).first, OAR_OK);
  d.synchronize();
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(call(t.graph_destroy(0, g)).first, OAR_OK);
  auto again = call(t.graph_launch(0, g, s));
  EXPECT_EQ(again.first, OAR_ERR_INVALID_ARGUMENT) << "a destroyed graph launched";
}

TEST(SimCapture, HostWaitsOnACapturingStreamAreRefusedAndTheCaptureStaysOpen) {
  oar::Device& d = sim();
  const OarStreamTable& t = d.tables().stream;
  OarStream s = d.default_stream();
  Tensor x = on_sim({5, 6});
  std::vector<float> host(2, 0.0f);
  const OarMemLocation dev{OAR_MEM_DEVICE, 0}, pageable{OAR_MEM_HOST, 0};
  ASSERT_EQ(call(t.begin_capture(0, s)).first, OAR_OK);
  auto e = call(t.synchronize(0, s));
  EXPECT_EQ(e.first, OAR_ERR_PRECONDITION);
  EXPECT_TRUE(mentions(e.second, "captures a graph")) << e.second;
  int32_t done = 0;
  EXPECT_EQ(call(t.query(0, s, &done)).first, OAR_ERR_PRECONDITION);
  EXPECT_EQ(call(d.tables().device.synchronize(0)).first, OAR_ERR_PRECONDITION);
  e = call(d.tables().memory.memcpy(0, host.data(), pageable, x.data_ptr(), dev, 8, s));
  EXPECT_EQ(e.first, OAR_ERR_PRECONDITION);
  EXPECT_TRUE(mentions(e.second, "to pageable host memory")) << e.second;
  e = call(d.tables().memory.memcpy(0, x.data_ptr(), dev, host.data(), pageable, 8, s));
  EXPECT_EQ(e.first, OAR_ERR_PRECONDITION);
  EXPECT_TRUE(mentions(e.second, "from pageable host memory")) << e.second;
  OarEvent ev = nullptr;
  ASSERT_EQ(call(d.tables().event.create(0, 0, &ev)).first, OAR_OK);
  EXPECT_EQ(call(d.tables().event.record(0, ev, s)).first, OAR_ERR_UNIMPLEMENTED);
  EXPECT_EQ(call(t.begin_capture(0, s)).first, OAR_ERR_PRECONDITION)
      << "a second begin on a capturing stream";
  OarGraph g = nullptr;
  ASSERT_EQ(call(t.end_capture(0, s, &g)).first, OAR_OK) << "the capture must survive the refusals";
  OarGraph none = nullptr;
  EXPECT_EQ(call(t.end_capture(0, s, &none)).first, OAR_ERR_PRECONDITION) << "end without begin";
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(call(t.graph_destroy(0, g)).first, OAR_OK);
  EXPECT_EQ(call(d.tables().event.destroy(0, ev)).first, OAR_OK);
  d.synchronize();  // usable again
}

TEST(DeviceGraph, ReplayRecomputesFromTheInputsCurrentContents) {
  Tensor a = on_sim({1, 2, 3}), b = on_sim({10, 20, 30});
  DeviceGraph g(kSim);
  g.capture_begin();
  Tensor y = oar::ops::multiply(oar::ops::add(a, b), a);  // (a + b) * a, recorded
  g.capture_end();
  g.replay();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 44, 99}));
  // New input values, written in place outside the capture: the next replay uses them.
  std::vector<float> a2{-1, 0, 2};
  oar::Runtime::get().copy_bytes(a.data_ptr(), kSim, a2.data(), oar::cpu_place(), 12);
  g.replay();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-9, 0, 64}));
  EXPECT_EQ(y.storage()->graph_pool() != nullptr, true)
      << "a tensor made while capturing comes from the pool";
  EXPECT_GE(g.num_kept(), 2u) << "the inputs read by captured kernels are kept alive";
}

TEST(DeviceGraph, ResetGivesThePoolBackOnceItsTensorsAreGone) {
  oar::Device& d = sim();
  auto used = [&] {
    uint64_t f = 0, total = 0;
    oar::check_plugin_error("sim", "memory_info", d.tables().device.memory_info(0, &f, &total));
    return total - f;
  };
  Tensor a = on_sim(std::vector<float>(1000, 1.0f));
  d.synchronize();
  const uint64_t before = used();
  {
    DeviceGraph g(kSim);
    g.capture_begin();
    Tensor y = oar::ops::add(a, a);
    g.capture_end();
    EXPECT_GT(g.pool_stats().reserved, 0u);
    EXPECT_GT(used(), before) << "the pool's chunk comes from the plugin";
    g.reset();
    EXPECT_GT(used(), before) << "y still lives in the pool: its memory must stay";
    y = Tensor();
    EXPECT_EQ(used(), before) << "reset and the last tensor gone: the pool goes back to the plugin";
    // The graph captures again after a reset.
    g.capture_begin();
    Tensor z = oar::ops::add(a, a);
    g.capture_end();
    g.replay();
    EXPECT_EQ(z.to_vector<float>()[999], 2.0f);
  }
  EXPECT_EQ(used(), before) << "graph and tensors destroyed";
}

TEST(DeviceGraph, WhatCannotBeReplayedIsRefusedWhileCapturing) {
  Tensor a = on_sim({1, 2});
  DeviceGraph g(kSim);
  g.capture_begin();
  auto expect_refused = [](auto fn, const char* what) {
    try {
      fn();
      ADD_FAILURE() << "not refused: " << what;
    } catch (const oar::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPrecondition) << e.what();
      EXPECT_TRUE(mentions(e.what(), what)) << e.what();
    }
  };
  expect_refused([&] { a.to_vector<float>(); }, "a copy to the host");
  expect_refused([&] { on_sim({1}); }, "a copy from the host");
  expect_refused([&] { oar::ops::exp(a); }, "the CPU fallback cannot be captured");
  expect_refused([&] { oar::ops::uniform({4}, 0, 1, DType::kFloat32, 7, kSim); },
                 "a random op cannot be captured");
  // Ops on the CPU run (once) and are not part of the graph; they are not refused.
  Tensor c = oar::ops::exp(Tensor::from_vector(std::vector<float>{0}, oar::Dims{1}, DType::kFloat32));
  EXPECT_FLOAT_EQ(c.to_vector<float>()[0], 1.0f);
  EXPECT_THROW(g.replay(), oar::Error) << "replay while capturing";
  EXPECT_THROW(g.reset(), oar::Error) << "reset while capturing";
  DeviceGraph other(kSim);
  EXPECT_THROW(other.capture_begin(), oar::Error) << "two captures on one device";
  Tensor ok = oar::ops::add(a, a);  // still capturing: the refusals left the capture usable
  g.capture_end();
  g.replay();
  EXPECT_EQ(ok.to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_THROW(g.capture_end(), oar::Error) << "end twice";
  EXPECT_THROW(g.capture_begin(), oar::Error) << "capture over a capture without reset";
}

TEST(DeviceGraph, TheCpuHasNoGraphCapture) {
  try {
    DeviceGraph g(oar::cpu_place());
    FAIL() << "a graph on the CPU";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_TRUE(mentions(e.what(), "cpu has no graph capture")) << e.what();
  }
}

TEST(DeviceGraph, AFailedCaptureIsAbortedAndTheDeviceCapturesAgain) {
  Tensor a = on_sim({3});
  {
    DeviceGraph g(kSim);
    g.capture_begin();
    g.capture_abort();
    EXPECT_FALSE(g.captured());
    EXPECT_THROW(g.replay(), oar::Error);
  }
  DeviceGraph g2(kSim);
  g2.capture_begin();
  Tensor y = oar::ops::add(a, a);
  g2.capture_end();
  g2.replay();
  EXPECT_EQ(y.to_vector<float>()[0], 6.0f);
  a.to_vector<float>();  // host copies work again after the capture
}

TEST(DeviceGraph, APluginOlderThanAbi13HasNoCaptureAndTheCoreSaysSo) {
  // older_minor (tests/plugins/older_minor.cc) claims ABI 1.1: its stream table ends long before the
  // capture entries, which the core reads as NULL.
  const oar::PluginRecord r =
      oar::Runtime::get().load_plugin(std::string(OAR_TEST_PLUGIN_DIR) + "/liboar_plugin_older_minor.so");
  ASSERT_TRUE(r.loaded) << r.reason;
  try {
    DeviceGraph g(Place::parse("test_older:0"));
    FAIL() << "a graph on a plugin without capture";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_TRUE(mentions(e.what(), "does not implement graph capture (ABI 1.3")) << e.what();
  }
}
