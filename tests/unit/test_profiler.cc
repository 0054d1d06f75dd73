// Profiling through the ABI: the sim plugin records one trace event per task it runs on a stream and
// emits them through the core's services table when the runtime stops profiling.
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <gtest/gtest.h>

#include <algorithm>

using oar::DType;
using oar::Place;
using oar::Runtime;
using oar::Tensor;

TEST(Profiler, SimKernelsAndCopiesAreTraced) {
  Runtime& rt = Runtime::get();
  Place sim = Place::parse("sim:0");
  Tensor x = Tensor::from_vector(std::vector<float>(64, 1.0f), {8, 8}, DType::kFloat32, sim);
  rt.start_profiling();
  Tensor y = oar::ops::relu(oar::ops::add(x, x));
  std::vector<float> host = y.to_vector<float>();  // synchronises the stream
  auto events = rt.stop_profiling();
  EXPECT_EQ(host, std::vector<float>(64, 2.0f));
  auto find = [&](const std::string& name) {
    return std::find_if(events.begin(), events.end(), [&](const Runtime::TraceEvent& e) { return e.name == name; });
  };
  for (const char* name : {"add", "relu"}) {
    auto it = find(name);
    ASSERT_NE(it, events.end()) << "no trace event for " << name << " (" << events.size() << " events)";
    EXPECT_EQ(it->category, "kernel");
    EXPECT_LE(it->start_ns, it->end_ns);
    EXPECT_EQ(it->device, 0);
  }
  EXPECT_NE(find("memcpy"), events.end()) << "the device-to-host copy is traced too";
  // Ordered on one stream: add finished before relu started.
  EXPECT_LE(find("add")->end_ns, find("relu")->start_ns);

  // Nothing is recorded once stopped.
  oar::ops::add(x, x).to_vector<float>();
  EXPECT_TRUE(rt.stop_profiling().empty());
}
