// Host harness for the gpu plugin's pointwise kernels (plugins/cuda/*.cu): each pw_*.cu includes one
// kernel file with OAR_D redefined as __host__ __device__, so its functors run on the host, where
// tests/python/test_cuda_pointwise_host.py compares them with the CPU plugin over special values, with
// no GPU. Device-only intrinsics get host stand-ins below (the _rn intrinsics: plain unfused arithmetic,
// which is what they guarantee); erfinv and digamma are the SDK's host-and-device functions.
// Protocol: pw_X OP DTYPE ARITY [key=value ...]; stdin: n, then ARITY lines of n values; stdout: n values.
#pragma once
#include "cuda_common.h"
#undef OAR_D
#define OAR_D __host__ __device__ inline
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>
#define __dadd_rn(a, b) ((a) + (b))
#define __dsub_rn(a, b) ((a) - (b))
#define __dmul_rn(a, b) ((a) * (b))
#define __fmul_rn(a, b) ((a) * (b))

namespace oar_cuda {
void Registry::add(const char*, const std::vector<OarDType>&, sdk::KernelBody, uint32_t) {}
void Registry::add(const char*, const std::vector<OarDType>&, sdk::KernelBody, sdk::SupportsBody, uint32_t) {}
int64_t grid_for(int64_t, int32_t, int) { return 1; }
void throw_gpu_error(gpuError_t, const std::string&) { abort(); }
void set_device(int32_t) {}
DeviceError* device_error_word(int32_t) { return nullptr; }  // the functors here take a null word
}  // namespace oar_cuda

#include "pointwise.h"

namespace h {
using namespace oar_cuda;
template <class T>
T from_d(double v) {
  if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<int64_t>(v));
  else if constexpr (std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>)
    return from_acc<T>(float(v));
  else
    return static_cast<T>(v);
}
template <class T>
double to_d(T v) {
  if constexpr (std::is_same_v<T, gpu_half> || std::is_same_v<T, gpu_bf16>)
    return double(to_acc<T>(v));
  else if constexpr (std::is_same_v<T, gpu_complex<float>> || std::is_same_v<T, gpu_complex<double>>)
    return double(v.re);
  else
    return static_cast<double>(v);
}
std::map<std::string, double> attrs;
std::vector<double> in[3];
int64_t n = 0;
double attr(const char* k, double d) {
  auto it = attrs.find(k);
  return it == attrs.end() ? d : it->second;
}
template <class T, class F>
void out1(F f) {
  for (int64_t i = 0; i < n; ++i) printf("%.17g\n", to_d(f(from_d<T>(in[0][i]))));
}
template <class T, class F>
void out2(F f) {
  for (int64_t i = 0; i < n; ++i) printf("%.17g\n", to_d(f(from_d<T>(in[0][i]), from_d<T>(in[1][i]))));
}
template <class F>
void outi(F f) {
  for (int64_t i = 0; i < n; ++i) printf("%.17g\n", to_d(f(i)));
}
void read(int argc, char** argv, int& dtype, int& arity) {
  dtype = atoi(argv[2]);
  arity = atoi(argv[3]);
  for (int i = 4; i < argc; ++i) {
    std::string s = argv[i];
    auto e = s.find('=');
    attrs[s.substr(0, e)] = strtod(s.c_str() + e + 1, nullptr);
  }
  std::cin >> n;
  for (int k = 0; k < arity; ++k) {
    in[k].resize(n);
    for (int64_t i = 0; i < n; ++i) {
      std::string t;
      std::cin >> t;
      in[k][i] = strtod(t.c_str(), nullptr);
    }
  }
}
}  // namespace h
