// Stream semantics on the sim device, whose streams are worker threads. OAR_SIM_LATENCY_US=200 (set in
// main, before the runtime loads the plugins) makes every task wait, so the host runs far ahead of the
// device and any missing synchronisation shows up as a wrong answer. Values are small integers held
// in floating point, so every result is exact and compared with ==.
#include <oar/core/dispatch.h>
#include <oar/core/ops.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "conformance_util.h"

namespace oar_conformance {
namespace {

using Clock = std::chrono::steady_clock;

Place sim(int i) { return Place::parse("sim:" + std::to_string(i)); }

// A row-major host matrix of doubles and the plain reference operations the tests chain.
struct Mat {
  Shape shape;
  std::vector<double> v;
};
Mat random_ints(Shape shape, int lo, int hi, std::mt19937& g) {
  Mat m{shape, std::vector<double>(static_cast<size_t>(numel(shape)))};
  std::uniform_int_distribution<int> d(lo, hi);
  for (double& x : m.v) x = d(g);
  return m;
}
Mat random_signs(Shape shape, std::mt19937& g) {
  Mat m = random_ints(shape, 0, 1, g);
  for (double& x : m.v) x = x ? 1 : -1;
  return m;
}
Mat permutation(int64_t n, std::mt19937& g) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  std::shuffle(p.begin(), p.end(), g);
  Mat m{{n, n}, std::vector<double>(static_cast<size_t>(n * n), 0.0)};
  for (int64_t i = 0; i < n; ++i) m.v[i * n + p[i]] = 1;
  return m;
}
Mat ref_add(const Mat& a, const Mat& b) {
  Mat r = a;
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] += b.v[i];
  return r;
}
Mat ref_mul(const Mat& a, const Mat& b) {
  Mat r = a;
  for (size_t i = 0; i < r.v.size(); ++i) r.v[i] *= b.v[i];
  return r;
}
Mat ref_relu(const Mat& a) {
  Mat r = a;
  for (double& x : r.v) x = x > 0 ? x : 0;
  return r;
}
Mat ref_matmul(const Mat& a, const Mat& b) {
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  Mat r{{m, n}, std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double x = a.v[i * k + p];
      for (int64_t j = 0; j < n; ++j) r.v[i * n + j] += x * b.v[p * n + j];
    }
  return r;
}
double ref_sum(const Mat& a) {
  double s = 0;
  for (double x : a.v) s += x;
  return s;
}

Tensor up(const Mat& m, DType d, Place p) {
  std::vector<cd> v(m.v.begin(), m.v.end());
  return upload(Host{d, m.shape, v}, p);
}
// Copies to the host (the only synchronisation) and compares exactly.
void expect_equal(const Tensor& t, const Mat& want, const std::string& what) {
  const Host got = download(t);
  ASSERT_EQ(shape_str(got.shape), shape_str(want.shape)) << what;
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < want.v.size(); ++i)
    if (got.v[i].real() != want.v[i] && bad++ < 5)
      first << "  [" << i << "] got " << got.v[i].real() << " want " << want.v[i] << "\n";
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.v.size() << " elements differ\n" << first.str();
}

class Streams : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(oar::Runtime::get().find_device_type("sim"), nullptr) << "the sim plugin did not load";
    ASSERT_STREQ(std::getenv("OAR_SIM_LATENCY_US"), "200");
    // Only sim kernels in the chains below; a fallback would synchronise and hide a race.
    saved_ = oar::fallback_config();
    oar::FallbackConfig c = saved_;
    c.policy = oar::FallbackPolicy::kError;
    c.force.clear();
    oar::set_fallback_config(c);
  }
  void TearDown() override { oar::set_fallback_config(saved_); }
  oar::FallbackConfig saved_;
};

// The latency is in effect, and enqueueing does not wait for the device.
TEST_F(Streams, WorkIsAsynchronousAndDelayed) {
  std::mt19937 g(1);
  const Mat a = random_ints({64}, -3, 3, g), b = random_ints({64}, -3, 3, g);
  Tensor x = up(a, kF32, sim(0));
  const Tensor y = up(b, kF32, sim(0));
  Mat want = a;
  const auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) {
    x = oar::ops::add(x, y);
    want = ref_add(want, b);
  }
  const auto t1 = Clock::now();
  expect_equal(x, want, "100 adds");
  const auto t2 = Clock::now();
  const double enqueue_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double total_ms = std::chrono::duration<double, std::milli>(t2 - t0).count();
  EXPECT_GE(total_ms, 100 * 0.2) << "OAR_SIM_LATENCY_US=200 did not slow the device down";
  EXPECT_LT(enqueue_ms, total_ms / 2)
      << "enqueueing waited for the device (enqueue " << enqueue_ms << " ms, total " << total_ms << " ms)";
}

// Negative control: reading device memory with a synchronous copy that is not ordered after the
// queued work sees stale values. This shows the latency makes a missing synchronisation visible;
// the ordinary copy (Tensor::copy_to_host) then sees the right ones.
TEST_F(Streams, UnorderedReadSeesStaleDataNegativeControl) {
  std::mt19937 g(7);
  const Mat a = random_ints({1024}, 1, 3, g);
  Tensor x = up(a, kF32, sim(0));
  Mat want = a;
  for (int i = 0; i < 200; ++i) {
    x = oar::ops::add(x, x);
    want = ref_mul(want, Mat{{}, std::vector<double>(want.v.size(), 2.0)});
    if (i % 20 == 19)
      want = ref_mul(want, Mat{{}, std::vector<double>(want.v.size(), 1.0 / 1024)}),
      x = oar::ops::multiply(x, up(Mat{{1}, {1.0 / 1024}}, kF32, sim(0)));
  }
  oar::Device& dev = oar::Runtime::get().device(sim(0));
  std::vector<float> raw(want.v.size());
  const OarMemLocation host{OAR_MEM_HOST, 0}, device{OAR_MEM_DEVICE, 0};
  // NULL stream: synchronous and not ordered after the default stream's queue.
  ASSERT_EQ(dev.tables().memory.memcpy(0, raw.data(), host, x.data_ptr(), device, raw.size() * sizeof(float),
                                       nullptr),
            nullptr);
  int stale = 0;
  for (size_t i = 0; i < raw.size(); ++i) stale += raw[i] != static_cast<float>(want.v[i]);
  EXPECT_GT(stale, 0) << "an unordered read saw the final values: the latency does not expose races";
  expect_equal(x, want, "ordered read");
}

// add -> multiply -> matmul -> relu, 64 dependent steps on 256x256 float32, then sum: exact.
TEST_F(Streams, LongDependentChainIsExact) {
  std::mt19937 g(2);
  const int64_t n = 256;
  Mat a = random_ints({n, n}, -4, 4, g);
  const Mat b = random_ints({n, n}, -3, 3, g), s = random_signs({n, n}, g), p = permutation(n, g);
  Tensor ta = up(a, kF32, sim(0));
  const Tensor tb = up(b, kF32, sim(0)), ts = up(s, kF32, sim(0)), tp = up(p, kF32, sim(0));
  for (int step = 0; step < 64; ++step) {
    switch (step % 4) {
      case 0:
        ta = oar::ops::add(ta, tb), a = ref_add(a, b);
        break;
      case 1:
        ta = oar::ops::multiply(ta, ts), a = ref_mul(a, s);
        break;
      case 2:
        ta = oar::ops::matmul(ta, tp), a = ref_matmul(a, p);
        break;
      default:
        ta = oar::ops::relu(ta), a = ref_relu(a);
        break;
    }
  }
  const Tensor total = oar::ops::sum(ta);
  expect_equal(total, Mat{{}, {ref_sum(a)}}, "sum after the chain");
  expect_equal(ta, a, "the chain's last tensor");
}

// 60 steps of add / multiply on 4M-element float64 vectors (32 MB each).
TEST_F(Streams, LongChainOnLargeTensorsIsExact) {
  std::mt19937 g(3);
  const int64_t n = int64_t{1} << 22;
  Mat a = random_ints({n}, -5, 5, g);
  const Mat b = random_ints({n}, -3, 3, g), s = random_signs({n}, g);
  Tensor ta = up(a, kF64, sim(0));
  const Tensor tb = up(b, kF64, sim(0)), ts = up(s, kF64, sim(0));
  for (int step = 0; step < 60; ++step) {
    if (step % 2 == 0)
      ta = oar::ops::add(ta, tb), a = ref_add(a, b);
    else
      ta = oar::ops::multiply(ta, ts), a = ref_mul(a, s);
  }
  expect_equal(oar::ops::sum(ta), Mat{{}, {ref_sum(a)}}, "sum of the large chain");
  expect_equal(ta, a, "the large chain's last tensor");
}

// Work on sim:0 and sim:1 with copies between them in both directions and fresh uploads in between.
TEST_F(Streams, TwoDevicesAndCopiesBetweenThem) {
  std::mt19937 g(4);
  const int64_t n = 512;
  Mat a0 = random_ints({n, n}, -3, 3, g), acc = random_ints({n, n}, 0, 0, g);
  const Mat b0 = random_ints({n, n}, -3, 3, g), s1 = random_signs({n, n}, g);
  Tensor t0 = up(a0, kF32, sim(0)), tacc = up(acc, kF32, sim(1));
  const Tensor tb0 = up(b0, kF32, sim(0)), ts1 = up(s1, kF32, sim(1));
  for (int it = 0; it < 25; ++it) {
    const Mat c = random_ints({n, n}, -2, 2, g);
    t0 = oar::ops::add(t0, tb0);                                         // sim:0
    const Tensor on1 = t0.to(sim(1));                                    // sim:0 -> sim:1
    const Tensor m1 = oar::ops::multiply(on1, ts1);                      // sim:1
    tacc = oar::ops::add(tacc, oar::ops::add(m1, up(c, kF32, sim(1))));  // host -> sim:1, sim:1
    t0 = oar::ops::relu(m1.to(sim(0)));                                  // sim:1 -> sim:0, sim:0
    a0 = ref_add(a0, b0);
    const Mat m = ref_mul(a0, s1);
    acc = ref_add(acc, ref_add(m, c));
    a0 = ref_relu(m);
  }
  EXPECT_EQ(tacc.place().to_string(), "sim:1");
  expect_equal(t0, a0, "sim:0 result");
  expect_equal(tacc, acc, "sim:1 accumulator");
  expect_equal(oar::ops::sum(tacc.to(sim(0))), Mat{{}, {ref_sum(acc)}}, "sum of the accumulator on sim:0");
}

// A tensor freed while work that reads it is still queued; the next allocation of the same size gets
// its memory (stream-ordered reuse) and is written at once by a host upload. The queued work must
// still see the old values.
TEST_F(Streams, FreedMemoryReusedWhileWorkIsQueued) {
  std::mt19937 g(5);
  const int64_t n = int64_t{1} << 20;
  const Mat x = random_ints({n}, -3, 3, g), y = random_ints({n}, -3, 3, g);
  const Tensor tx = up(x, kF64, sim(0)), ty = up(y, kF64, sim(0));
  std::vector<Tensor> sums, upload_sums;
  std::vector<double> want, want_upload;
  int reused = 0;
  oar::BestFitAllocator& alloc = oar::Runtime::get().device(sim(0)).allocator();
  const uint64_t raw_before = alloc.stats().num_raw_allocs;
  for (int it = 0; it < 40; ++it) {
    void* freed[2];
    {
      const Tensor k = up(Mat{{1}, {static_cast<double>(it)}}, kF64, sim(0));
      const Tensor tmp = oar::ops::multiply(tx, k);  // queued
      const Tensor r = oar::ops::add(tmp, ty);       // queued, reads tmp
      sums.push_back(oar::ops::sum(r));              // queued, reads r
      freed[0] = tmp.data_ptr();
      freed[1] = r.data_ptr();
    }  // tmp and r are freed here, long before the device gets to them
    const Mat u = random_ints({n}, -9, 9, g);
    const Tensor tu = up(u, kF64, sim(0));  // same size: takes tmp's or r's block
    reused += tu.data_ptr() == freed[0] || tu.data_ptr() == freed[1];
    upload_sums.push_back(oar::ops::sum(tu));
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x.v[i] * it + y.v[i];
    want.push_back(s);
    want_upload.push_back(ref_sum(u));
  }
  for (size_t i = 0; i < sums.size(); ++i) {
    expect_equal(sums[i], Mat{{}, {want[i]}}, "iteration " + std::to_string(i));
    expect_equal(upload_sums[i], Mat{{}, {want_upload[i]}}, "upload " + std::to_string(i));
  }
  EXPECT_GT(reused, 0) << "no allocation reused a freed block: the test did not exercise reuse";
  EXPECT_LT(alloc.stats().num_raw_allocs - raw_before, 10u) << "the allocator did not reuse freed blocks";
}

// Temporaries inside a loop, each freed right after its consumer was queued.
TEST_F(Streams, TemporariesInALoop) {
  std::mt19937 g(6);
  const int64_t n = 128;
  Mat a = random_ints({n, n}, -2, 2, g);
  const Mat p = permutation(n, g), b = random_ints({n, n}, -1, 1, g);
  Tensor ta = up(a, kF32, sim(1));
  const Tensor tp = up(p, kF32, sim(1)), tb = up(b, kF32, sim(1));
  for (int it = 0; it < 60; ++it) {
    ta = oar::ops::add(oar::ops::matmul(oar::ops::relu(ta), tp), tb);  // two temporaries per step
    a = ref_add(ref_matmul(ref_relu(a), p), b);
  }
  expect_equal(ta, a, "result");
}

// Many threads issuing ops at once on cpu.
TEST_F(Streams, ManyThreadsOnCpu) {
  constexpr int kThreads = 8, kIters = 150;
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &failures, &errors] {
      std::mt19937 g(100 + t);
      try {
        for (int it = 0; it < kIters; ++it) {
          const int64_t m = 1 + g() % 40, k = 1 + g() % 40, n = 1 + g() % 40;
          const Mat a = random_ints({m, k}, -3, 3, g), b = random_ints({k, n}, -3, 3, g),
                    c = random_ints({m, n}, -3, 3, g);
          const Tensor ta = up(a, kF32, oar::cpu_place()), tb = up(b, kF32, oar::cpu_place());
          const Tensor tc = up(c, kF32, oar::cpu_place());
          const Tensor r = oar::ops::multiply(oar::ops::add(oar::ops::matmul(ta, tb), tc), tc);
          const Mat want = ref_mul(ref_add(ref_matmul(a, b), c), c);
          const Host got = download(r);
          for (size_t i = 0; i < want.v.size(); ++i)
            if (got.v[i].real() != want.v[i]) {
              ++failures;
              break;
            }
          const Host s = download(oar::ops::sum(oar::ops::copy(ta.transpose({1, 0})), {0}));
          for (int64_t i = 0; i < m; ++i) {
            double rs = 0;
            for (int64_t j = 0; j < k; ++j) rs += a.v[i * k + j];
            if (s.v[i].real() != rs) {
              ++failures;
              break;
            }
          }
        }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

// Several threads sharing sim:0's stream, each with its own dependent chain.
TEST_F(Streams, ManyThreadsOnSim) {
  constexpr int kThreads = 4, kSteps = 40;
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &failures, &errors] {
      std::mt19937 g(200 + t);
      try {
        const Place p = sim(t % 2);
        Mat a = random_ints({64, 64}, -3, 3, g);
        const Mat b = random_ints({64, 64}, -3, 3, g), s = random_signs({64, 64}, g);
        Tensor ta = up(a, kF32, p);
        const Tensor tb = up(b, kF32, p), ts = up(s, kF32, p);
        for (int i = 0; i < kSteps; ++i) {
          ta = oar::ops::multiply(oar::ops::add(ta, tb), ts);
          a = ref_mul(ref_add(a, b), s);
        }
        const Host got = download(ta);
        for (size_t i = 0; i < a.v.size(); ++i)
          if (got.v[i].real() != a.v[i]) {
            ++failures;
            break;
          }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

// Threads on the sim devices with ops that fall back to cpu (subtract, maximum) between sim kernels.
TEST_F(Streams, ManyThreadsOnSimWithFallback) {
  oar::FallbackConfig c = saved_;
  c.policy = oar::FallbackPolicy::kAllow;
  c.force.clear();
  c.deny.clear();
  oar::set_fallback_config(c);
  constexpr int kThreads = 4, kSteps = 30;
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &failures, &errors] {
      std::mt19937 g(300 + t);
      try {
        const Place p = sim(t % 2);
        Mat a = random_ints({128, 128}, -3, 3, g);
        const Mat b = random_ints({128, 128}, -3, 3, g), z = random_ints({128, 128}, 0, 0, g);
        Tensor ta = up(a, kF32, p);
        const Tensor tb = up(b, kF32, p), tz = up(z, kF32, p);
        for (int i = 0; i < kSteps; ++i) {
          ta = oar::ops::maximum(oar::ops::subtract(oar::ops::add(ta, tb), tb), tz);  // = relu(ta)
          ta = oar::ops::add(ta, tb);
          a = ref_add(ref_relu(a), b);
        }
        const Host got = download(ta);
        for (size_t i = 0; i < a.v.size(); ++i)
          if (got.v[i].real() != a.v[i]) {
            ++failures;
            break;
          }
      } catch (const std::exception&) {
        ++errors;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  const oar::FallbackKey key{"subtract", "sim", kF32};
  EXPECT_GE(oar::fallback_counts()[key], kThreads * kSteps);
}

}  // namespace
}  // namespace oar_conformance

// The latency must be set before the runtime loads the sim plugin, i.e. before any test runs.
int main(int argc, char** argv) {
  setenv("OAR_SIM_LATENCY_US", "200", 1);
  setenv("OAR_SIM_POISON", "1", 1);  // fresh device memory is garbage, so reading unwritten memory shows
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
