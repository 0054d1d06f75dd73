// Inference passes on the PaddlePaddle LeNet fixture (tests/fixtures/paddle/lenet): latency of one
// Executor::run with the passes off and on, at batch 1 and batch 64, plus the peak live
// bytes ExecutorStats reports (counters peak_live_bytes / ops). Run ./bin/oar_bench_passes by hand
// (on a shared machine: OMP_NUM_THREADS=1 ./bin/oar_bench_passes --benchmark_repetitions=10).
#include <benchmark/benchmark.h>
#include <oar/core/tensor.h>
#include <oar/ir/executor.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace oar;
using namespace oar::ir;

std::string lenet(const std::string& f) {
  return std::string(OAR_SOURCE_DIR) + "/tests/fixtures/paddle/lenet/" + f;
}

// args: passes (0 off, 1 all but memory reuse, 2 all), batch, stats (collect ExecutorStats).
void BM_LenetRun(benchmark::State& state) {
  int64_t passes = state.range(0);
  int64_t batch = state.range(1);
  Program p = Program::load(lenet("model.pdmodel"));
  Scope params = load_param_scope(p, read_file_bytes(lenet("model.pdiparams"), 1 << 24));
  PassOptions po;
  po.memory_reuse = passes == 2;
  if (passes > 0) run_inference_passes(p, params, po);
  ExecutorOptions eo;
  eo.collect_stats = state.range(2) != 0;
  Executor ex(p, cpu_place(), eo);
  copy_scope(params, ex.scope());
  std::vector<int64_t> shape = p.global_block().find_var(ex.feed_names()[0])->shape;
  shape[0] = batch;
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(static_cast<size_t>(Dims(shape).numel()));
  for (float& x : v) x = d(g);
  Tensor x = Tensor::from_vector(v, Dims(shape), DType::kFloat32);
  std::map<std::string, Tensor> feeds{{ex.feed_names()[0], x}};
  for (auto _ : state) benchmark::DoNotOptimize(ex.run(feeds));
  state.counters["ops"] = static_cast<double>(ex.num_instructions());
  if (eo.collect_stats) state.counters["peak_live_bytes"] = static_cast<double>(ex.stats().peak_live_bytes);
}
// Timing runs without stats collection (it walks the scope per instruction); the stats rows report bytes.
BENCHMARK(BM_LenetRun)
    ->ArgNames({"passes", "batch", "stats"})
    ->ArgsProduct({{0, 2}, {1, 64}, {0}})
    ->ArgsProduct({{0, 1, 2}, {1, 64}, {1}})
    ->ComputeStatistics("min",
                        [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); })
    ->UseRealTime()
    ->MinTime(1.0)
    ->Unit(benchmark::kMicrosecond);

// The passes themselves (on a fresh copy of the program each time).
void BM_LenetPasses(benchmark::State& state) {
  Program p = Program::load(lenet("model.pdmodel"));
  Scope params = load_param_scope(p, read_file_bytes(lenet("model.pdiparams"), 1 << 24));
  for (auto _ : state) {
    Program q = p;
    Scope s;
    copy_scope(params, s);
    benchmark::DoNotOptimize(run_inference_passes(q, s));
  }
}
BENCHMARK(BM_LenetPasses)->UseRealTime()->MinTime(0.5)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
