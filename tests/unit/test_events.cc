// The core's Stream and Event wrappers over the plugins' stream and event tables.
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <gtest/gtest.h>

#include <cstdlib>

using oar::DType;
using oar::Event;
using oar::Place;
using oar::Stream;
using oar::Tensor;

namespace {
// Enough queued sim work that the host clearly runs ahead of the device.
Tensor busy_chain(Place p, int steps) {
  Tensor x = oar::ops::full({256, 256}, 0.5, DType::kFloat32, p);
  Tensor acc = x;
  for (int i = 0; i < steps; ++i) acc = oar::ops::add(oar::ops::matmul(acc, x), x);
  return acc;
}
}  // namespace

TEST(Events, TimeWorkOnTheDefaultStream) {
  for (const char* device : {"cpu", "sim:0"}) {
    Place p = Place::parse(device);
    Event start(p), end(p);
    start.record();
    Tensor r = busy_chain(p, 4);
    end.record();
    end.synchronize();
    EXPECT_TRUE(end.query()) << device;
    EXPECT_GE(start.elapsed_ms(end), 0.0f) << device;
    // The work really completed: the values are right (x = 0.5, 256 columns).
    double v = 0.5;
    for (int i = 0; i < 4; ++i) v = v * 0.5 * 256 + 0.5;
    EXPECT_FLOAT_EQ(r.to_vector<float>()[0], static_cast<float>(v)) << device;
  }
}

TEST(Events, ExtraStreamWaitsForAnEvent) {
  Place p = Place::parse("sim:1");
  Stream side(p);
  EXPECT_TRUE(side.query()) << "a new stream has no work";
  Event done(p);
  Tensor r = busy_chain(p, 6);
  done.record();     // on the default stream, after the chain
  side.wait(done);   // the side stream now waits for it
  side.synchronize();
  EXPECT_TRUE(done.query()) << "synchronising the waiting stream implies the event completed";
  EXPECT_TRUE(side.query());
}

TEST(Events, RecordOnAnotherDevicesStreamIsRefused) {
  Stream s0(Place::parse("sim:0"));
  Event e1(Place::parse("sim:1"));
  try {
    e1.record(s0);
    FAIL() << "recording a sim:1 event on a sim:0 stream must fail";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("sim:0"), std::string::npos) << e.what();
  }
}

TEST(Events, UnrecordedEventHasNoTiming) {
  Place p = Place::parse("sim:0");
  Event a(p), b(p);
  EXPECT_THROW(a.elapsed_ms(b), oar::Error);
}
