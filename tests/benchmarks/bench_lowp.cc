// bfloat16 on the CPU, below oar: oneDNN's bf16 and f32 matmul and convolution called directly (the
// ceiling the plugin's kernels are measured against; tests/benchmarks/bench_amp_ops.py has oar and
// torch on the same problems), and the plugin's float32 <-> bfloat16 array conversion (plugins/cpu/
// lowp.cc, compiled in) against AVX512-BF16's vcvtneps2bf16 and a scalar loop.
//   ./bin/oar_bench_lowp [--benchmark_filter=...]    (OMP_NUM_THREADS sets oneDNN's threads)
#include <benchmark/benchmark.h>

#include <dnnl.hpp>
#include <random>
#include <vector>

#include "../../plugins/cpu/lowp.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::vector<float> randn(size_t n) {
  std::mt19937 g(0);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// n x n x n matmul in dt (plain row-major), as the plugin creates it (destination of the same type).
void BM_MatmulDirect(benchmark::State& st, memory::data_type dt) {
  const int64_t n = st.range(0);
  dnnl::stream s(engine());
  memory::desc md({n, n}, dt, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), engine());
  } catch (const dnnl::error&) {
    st.SkipWithError("oneDNN has no matmul for this data type on this CPU");
    return;
  }
  dnnl::matmul prim(pd);
  memory a(md, engine()), b(md, engine()), c(md, engine());
  std::vector<float> v = randn(static_cast<size_t>(n * n));
  for (memory* m : {&a, &b}) {  // fill through a reorder from float32
    memory f({{n, n}, memory::data_type::f32, memory::format_tag::ab}, engine(), v.data());
    dnnl::reorder(f, *m).execute(s, f, *m);
  }
  s.wait();
  for (auto _ : st) {
    prim.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * st.iterations(), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  st.SetLabel(pd.impl_info_str());
}
BENCHMARK_CAPTURE(BM_MatmulDirect, f32, memory::data_type::f32)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulDirect, bf16, memory::data_type::bf16)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulDirect, f16, memory::data_type::f16)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The same with the weights in the layout oneDNN prefers (format `any`), reordered from row-major on
// every call when `reorder_each_call` (what a kernel must do when the weights are an ordinary tensor).
void BM_MatmulDirectAnyWeights(benchmark::State& st, memory::data_type dt, bool reorder_each_call) {
  const int64_t n = st.range(0);
  dnnl::stream s(engine());
  memory::desc md({n, n}, dt, memory::format_tag::ab), wany({n, n}, dt, memory::format_tag::any);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, wany, md), engine());
  dnnl::matmul prim(pd);
  memory a(md, engine()), bu(md, engine()), b(pd.weights_desc(), engine()), c(md, engine());
  dnnl::reorder re(bu, b);
  re.execute(s, bu, b);
  for (auto _ : st) {
    if (reorder_each_call) re.execute(s, bu, b);
    prim.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n * st.iterations(), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  st.SetLabel(pd.impl_info_str());
}
BENCHMARK_CAPTURE(BM_MatmulDirectAnyWeights, bf16_prepacked, memory::data_type::bf16, false)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulDirectAnyWeights, bf16_reordered, memory::data_type::bf16, true)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulDirectAnyWeights, f32_prepacked, memory::data_type::f32, false)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// 3x3 convolution, 64 -> 64 channels, N=32, 56x56, padding 1, forward: oneDNN's preferred layouts
// for all three tensors (no reorders timed; the plugin adds nchw <-> blocked reorders).
void BM_ConvDirect(benchmark::State& st, memory::data_type dt) {
  const int64_t N = 32, C = 64, H = 56, W = 56;
  dnnl::stream s(engine());
  memory::desc src({N, C, H, W}, dt, memory::format_tag::any), wei({C, C, 3, 3}, dt, memory::format_tag::any),
      dst({N, C, H, W}, dt, memory::format_tag::any);
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                    src, wei, dst, {1, 1}, {0, 0}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc pd(d, engine());
  memory a(pd.src_desc(), engine()), b(pd.weights_desc(), engine()), c(pd.dst_desc(), engine());
  for (auto _ : st) {
    dnnl::convolution_forward(pd).execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * N * C * H * W * C * 9 * st.iterations(),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  st.SetLabel(pd.impl_info_str());
}
BENCHMARK_CAPTURE(BM_ConvDirect, f32, memory::data_type::f32)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ConvDirect, bf16, memory::data_type::bf16)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- float32 -> bfloat16 over 4M elements (one thread) ---------------------------------------------
constexpr int64_t kConvN = int64_t{1} << 22;

void BM_ToBf16_Plugin(benchmark::State& st) {
  std::vector<float> src = randn(kConvN);
  std::vector<oar_cpu::bfloat16> dst(kConvN);
  for (auto _ : st) {
    oar_cpu::from_f32(src.data(), dst.data(), kConvN);
    benchmark::DoNotOptimize(dst.data());
  }
  st.SetBytesProcessed(st.iterations() * kConvN * 6);
  st.SetLabel(oar_cpu::lowp_isa());
}
BENCHMARK(BM_ToBf16_Plugin)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ToF32_Plugin(benchmark::State& st) {
  std::vector<float> f = randn(kConvN), dst(kConvN);
  std::vector<oar_cpu::bfloat16> src(kConvN);
  oar_cpu::from_f32(f.data(), src.data(), kConvN);
  for (auto _ : st) {
    oar_cpu::to_f32(src.data(), dst.data(), kConvN);
    benchmark::DoNotOptimize(dst.data());
  }
  st.SetBytesProcessed(st.iterations() * kConvN * 6);
  st.SetLabel(oar_cpu::lowp_isa());
}
BENCHMARK(BM_ToF32_Plugin)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ToBf16_Scalar(benchmark::State& st) {
  std::vector<float> src = randn(kConvN);
  std::vector<oar_cpu::bfloat16> dst(kConvN);
  for (auto _ : st) {
    for (int64_t i = 0; i < kConvN; ++i) dst[i] = oar_cpu::bfloat16(src[i]);
    benchmark::DoNotOptimize(dst.data());
  }
  st.SetBytesProcessed(st.iterations() * kConvN * 6);
}
BENCHMARK(BM_ToBf16_Scalar)->UseRealTime()->Unit(benchmark::kMicrosecond);

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16,avx512vl"))) void to_bf16_native(const float* s, uint16_t* d,
                                                                           int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + i)));
}

void BM_ToBf16_Avx512Bf16Instruction(benchmark::State& st) {
  if (!__builtin_cpu_supports("avx512bf16")) {
    st.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  std::vector<float> src = randn(kConvN);
  std::vector<uint16_t> dst(kConvN);
  for (auto _ : st) {
    to_bf16_native(src.data(), dst.data(), kConvN);
    benchmark::DoNotOptimize(dst.data());
  }
  st.SetBytesProcessed(st.iterations() * kConvN * 6);
}
BENCHMARK(BM_ToBf16_Avx512Bf16Instruction)->UseRealTime()->Unit(benchmark::kMicrosecond);
#endif

}  // namespace

BENCHMARK_MAIN();
