// Core benchmarks, measured side by side with their yardsticks (docs: DESIGN.md "Performance budgets"):
//   dispatch:    oar::ops::add on 1-element float32 cpu tensors, and raw call_op    -> ns per op
//   bandwidth:   16M-element float32 add vs std::memcpy of the same 64 MB            -> bytes/s, GB/s
//   matmul:      1024^3 float32 matmul through oar vs oneDNN called directly          -> GFLOP/s
//   sim:         the same add and matmul on sim:0, for information
// Every benchmark uses real (wall-clock) time.
#include <benchmark/benchmark.h>
#include <oar/core/dispatch.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using oar::DType;
using oar::Tensor;

constexpr int64_t kBigN = int64_t{1} << 24;  // 16M float32 elements = 64 MB
constexpr int64_t kMatN = 1024;

Tensor random_tensor(const oar::Dims& dims, oar::Place place = oar::cpu_place()) {
  std::mt19937 g(42);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(dims.numel()));
  for (float& x : v) x = d(g);
  return Tensor::from_host(v.data(), dims, DType::kFloat32, place);
}

oar::Place sim0() { return oar::Place::parse("sim:0"); }
bool have_sim() { return oar::Runtime::get().find_device_type("sim") != nullptr; }

void add_bandwidth_counters(benchmark::State& state, double bytes_per_iter) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iter) * static_cast<int64_t>(state.iterations()));
  state.counters["GB/s"] = benchmark::Counter(bytes_per_iter * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

void add_flop_counter(benchmark::State& state, double n) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2 * n * n * n * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// ---- (a) dispatch overhead ------------------------------------------------------------------------
void BM_DispatchAdd_OpsApi(benchmark::State& state) {
  const Tensor a = oar::ops::full({1}, 1.0), b = oar::ops::full({1}, 2.0);
  for (auto _ : state) {
    Tensor c = oar::ops::add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DispatchAdd_OpsApi)->UseRealTime()->MinTime(1.0);

void BM_DispatchAdd_CallOpDef(benchmark::State& state) {
  const Tensor a = oar::ops::full({1}, 1.0), b = oar::ops::full({1}, 2.0);
  const oar::OpDef& add = oar::OpRegistry::get().at("add");
  const std::vector<Tensor> inputs = {a, b};
  for (auto _ : state) {
    std::vector<Tensor> out = oar::call_op(add, inputs);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DispatchAdd_CallOpDef)->UseRealTime()->MinTime(1.0);

void BM_DispatchAdd_CallOpByName(benchmark::State& state) {
  const Tensor a = oar::ops::full({1}, 1.0), b = oar::ops::full({1}, 2.0);
  const std::vector<Tensor> inputs = {a, b};
  for (auto _ : state) {
    std::vector<Tensor> out = oar::call_op("add", inputs);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DispatchAdd_CallOpByName)->UseRealTime()->MinTime(1.0);

// The floor under dispatch: allocating the 1-element output tensor alone.
void BM_DispatchFloor_EmptyTensor(benchmark::State& state) {
  for (auto _ : state) {
    Tensor c = Tensor::empty({1}, DType::kFloat32);
    benchmark::DoNotOptimize(c.impl());
  }
}
BENCHMARK(BM_DispatchFloor_EmptyTensor)->UseRealTime()->MinTime(1.0);

// ---- (b) bandwidth: add vs memcpy -----------------------------------------------------------------
void BM_Add16M_Float32_Cpu(benchmark::State& state) {
  const Tensor a = random_tensor({kBigN}), b = random_tensor({kBigN});
  { Tensor warm = oar::ops::add(a, b); }  // the pool keeps the output's chunk afterwards
  for (auto _ : state) {
    Tensor c = oar::ops::add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
    benchmark::ClobberMemory();
  }
  add_bandwidth_counters(state, 3.0 * kBigN * sizeof(float));  // read a, read b, write c
}
BENCHMARK(BM_Add16M_Float32_Cpu)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

// The yardstick: memcpy of the same 64 MB, by one thread and split over two (the machine's cores;
// the add above uses the plugin's thread pool).
struct CopyBuffers {
  size_t bytes = static_cast<size_t>(kBigN) * sizeof(float);
  std::unique_ptr<char[]> src{new char[bytes]}, dst{new char[bytes]};
  CopyBuffers() {
    std::memset(src.get(), 1, bytes);  // touch every page before timing
    std::memset(dst.get(), 2, bytes);
  }
};
CopyBuffers& copy_buffers() {
  static CopyBuffers b;
  return b;
}

void BM_Memcpy64MB(benchmark::State& state) {
  CopyBuffers& b = copy_buffers();
  for (auto _ : state) {
    std::memcpy(b.dst.get(), b.src.get(), b.bytes);
    benchmark::DoNotOptimize(b.dst.get());
    benchmark::ClobberMemory();
  }
  add_bandwidth_counters(state, 2.0 * static_cast<double>(b.bytes));  // read src, write dst
}
BENCHMARK(BM_Memcpy64MB)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

// Two halves copied at once, by this thread and a helper started per iteration (~30 us of 4+ ms).
void BM_Memcpy64MB_TwoThreads(benchmark::State& state) {
  CopyBuffers& b = copy_buffers();
  const size_t half = b.bytes / 2;
  for (auto _ : state) {
    std::thread helper([&] { std::memcpy(b.dst.get() + half, b.src.get() + half, b.bytes - half); });
    std::memcpy(b.dst.get(), b.src.get(), half);
    helper.join();
    benchmark::DoNotOptimize(b.dst.get());
    benchmark::ClobberMemory();
  }
  add_bandwidth_counters(state, 2.0 * static_cast<double>(b.bytes));
}
BENCHMARK(BM_Memcpy64MB_TwoThreads)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

// ---- (c) matmul: oar vs oneDNN directly -----------------------------------------------------------
void BM_Matmul1024_Float32_Oar(benchmark::State& state) {
  const Tensor a = random_tensor({kMatN, kMatN}), b = random_tensor({kMatN, kMatN});
  { Tensor warm = oar::ops::matmul(a, b); }  // primitive creation and caches out of the timing
  for (auto _ : state) {
    Tensor c = oar::ops::matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  add_flop_counter(state, kMatN);
}
BENCHMARK(BM_Matmul1024_Float32_Oar)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

void BM_Matmul1024_Float32_OneDnnDirect(benchmark::State& state) {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const memory::dims dims = {kMatN, kMatN};
  const memory::desc md(dims, memory::data_type::f32, memory::format_tag::ab);
  // oneDNN 2.x: an op descriptor, then its primitive descriptor on the engine; created once.
  const dnnl::matmul::desc desc(md, md, md);
  const dnnl::matmul::primitive_desc pd(desc, eng);
  const dnnl::matmul prim(pd);
  std::vector<float> av(static_cast<size_t>(kMatN * kMatN)), bv(av.size()), cv(av.size());
  std::mt19937 g(42);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& x : av) x = d(g);
  for (float& x : bv) x = d(g);
  memory am(md, eng, av.data()), bm(md, eng, bv.data()), cm(md, eng, cv.data());
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
  prim.execute(strm, args);
  strm.wait();
  for (auto _ : state) {
    prim.execute(strm, args);
    strm.wait();
    benchmark::DoNotOptimize(cv.data());
  }
  add_flop_counter(state, kMatN);
}
BENCHMARK(BM_Matmul1024_Float32_OneDnnDirect)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

// ---- (d) the same on the simulated device (for information) ----------------------------------------
void BM_Add16M_Float32_Sim(benchmark::State& state) {
  if (!have_sim()) return state.SkipWithError("the sim plugin did not load");
  const Tensor a = random_tensor({kBigN}, sim0()), b = random_tensor({kBigN}, sim0());
  oar::Device& dev = oar::Runtime::get().device(sim0());
  { Tensor warm = oar::ops::add(a, b); }
  dev.synchronize_stream();
  for (auto _ : state) {
    Tensor c = oar::ops::add(a, b);
    dev.synchronize_stream();  // the work is asynchronous: wait for it
  }
  add_bandwidth_counters(state, 3.0 * kBigN * sizeof(float));
}
BENCHMARK(BM_Add16M_Float32_Sim)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

void BM_Matmul1024_Float32_Sim(benchmark::State& state) {
  if (!have_sim()) return state.SkipWithError("the sim plugin did not load");
  const Tensor a = random_tensor({kMatN, kMatN}, sim0()), b = random_tensor({kMatN, kMatN}, sim0());
  oar::Device& dev = oar::Runtime::get().device(sim0());
  for (auto _ : state) {
    Tensor c = oar::ops::matmul(a, b);
    dev.synchronize_stream();
  }
  add_flop_counter(state, kMatN);
}
BENCHMARK(BM_Matmul1024_Float32_Sim)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

void BM_DispatchAdd_Sim(benchmark::State& state) {
  if (!have_sim()) return state.SkipWithError("the sim plugin did not load");
  const Tensor a = random_tensor({1}, sim0()), b = random_tensor({1}, sim0());
  oar::Device& dev = oar::Runtime::get().device(sim0());
  int64_t n = 0;
  for (auto _ : state) {
    Tensor c = oar::ops::add(a, b);
    benchmark::DoNotOptimize(c.impl());
    if (++n % 1024 == 0) dev.synchronize_stream();  // keep the device's queue bounded
  }
  dev.synchronize_stream();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DispatchAdd_Sim)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
