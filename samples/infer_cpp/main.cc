// oar_infer_cpp: loads a model saved for inference (PaddlePaddle's .pdmodel + .pdiparams, as oar's
// jit.save and paddle.jit.save write them) through the C++ inference API and runs it. No Python.
//
//   oar_infer_cpp <model path prefix | model folder> [--device cpu|sim:0] [--threads N] [--batch N]
//                 [--input x.npy] [--check y.npy] [--repeat N]
//
// "path/model" means path/model.pdmodel + path/model.pdiparams. Without --input every input is filled
// with a fixed pattern, its unknown extents set to --batch (default 1). It prints each output's shape
// and the largest values of its first row; --check compares output 0 with a reference .npy.
#include <oar/core/error.h>
#include <oar/inference/predictor.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace {

// A float32 little-endian, C-order .npy (format 1.0 / 2.0).
struct Npy {
  std::vector<int> shape;
  std::vector<float> data;
};

Npy read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw std::runtime_error(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, start;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else {
    if (bytes.size() < 12) throw std::runtime_error(path + ": truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    start = 12;
  }
  if (start + hlen > bytes.size()) throw std::runtime_error(path + ": truncated header");
  const std::string header = bytes.substr(start, hlen);
  if (header.find("'descr': '<f4'") == std::string::npos ||
      header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": only float32 C-order arrays are supported");
  Npy n;
  const size_t open = header.find('(', header.find("'shape'")), close = header.find(')', open);
  std::string dims = header.substr(open + 1, close - open - 1);
  for (size_t p = 0; p < dims.size();) {
    size_t q = dims.find(',', p);
    std::string d = dims.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (d.find_first_of("0123456789") != std::string::npos) n.shape.push_back(std::stoi(d));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  size_t count = 1;
  for (int d : n.shape) count *= static_cast<size_t>(d);
  if (bytes.size() - start - hlen != count * 4)
    throw std::runtime_error(path + ": data size does not match the shape");
  n.data.resize(count);
  std::memcpy(n.data.data(), bytes.data() + start + hlen, count * 4);
  return n;
}

std::string shape_str(const std::vector<int>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t numel(const std::vector<int>& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>());
}

int usage() {
  std::fprintf(stderr,
               "usage: oar_infer_cpp <model path prefix | model folder> [--device cpu|sim:0] [--threads N] "
               "[--batch N] [--input x.npy] [--check y.npy] [--repeat N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string model = argv[1], device = "cpu", input_npy, check_npy;
  int threads = 0, batch = 1, repeat = 1;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--device")
      device = v;
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--batch")
      batch = std::stoi(v);
    else if (a == "--input")
      input_npy = v;
    else if (a == "--check")
      check_npy = v;
    else if (a == "--repeat")
      repeat = std::max(1, std::stoi(v));
    else
      return usage();
  }
  try {
    oar_infer::Config config;
    if (std::filesystem::is_directory(model))
      config.SetModel(model);
    else
      config.SetModel(model + ".pdmodel", model + ".pdiparams");
    config.SetDevice(device);
    config.SetCpuMathLibraryNumThreads(threads);
    config.EnableMemoryOptim();
    std::printf("%s", config.Summary().c_str());
    auto predictor = oar_infer::CreatePredictor(config);

    std::vector<std::string> inputs = predictor->GetInputNames();
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto h = predictor->GetInputHandle(inputs[k]);
      if (!input_npy.empty() && k == 0) {
        Npy x = read_npy(input_npy);
        h->Reshape(x.shape);
        h->CopyFromCpu(x.data.data());
      } else {
        std::vector<int> shape = h->shape();
        for (int& d : shape)
          if (d < 0) d = batch;
        h->Reshape(shape);
        if (h->type() != oar_infer::DataType::FLOAT32)
          throw std::runtime_error("input '" + inputs[k] + "' is " + oar_infer::DataTypeName(h->type()) +
                                   ": pass float32 inputs only (or --input for input 0)");
        std::vector<float> x(static_cast<size_t>(numel(shape)));
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i)));
        h->CopyFromCpu(x.data());
      }
      std::printf("input %s shape %s\n", inputs[k].c_str(), shape_str(h->shape()).c_str());
    }

    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      predictor->Run();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("run: %d time(s), median %.3f ms\n", repeat, ms[ms.size() / 2]);

    std::vector<float> out0;
    for (const std::string& name : predictor->GetOutputNames()) {
      auto h = predictor->GetOutputHandle(name);
      std::vector<int> shape = h->shape();
      std::printf("output %s shape %s dtype %s\n", name.c_str(), shape_str(shape).c_str(),
                  oar_infer::DataTypeName(h->type()));
      if (h->type() != oar_infer::DataType::FLOAT32) continue;
      std::vector<float> y(static_cast<size_t>(numel(shape)));
      h->CopyToCpu(y.data());
      if (out0.empty()) out0 = y;
      // The largest values of the first row (of everything for a 0-d or 1-d output).
      const size_t row = shape.size() >= 2 ? y.size() / static_cast<size_t>(shape[0]) : y.size();
      std::vector<size_t> idx(row);
      std::iota(idx.begin(), idx.end(), 0);
      const size_t k = std::min<size_t>(5, row);
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [&](size_t a, size_t b) { return y[a] > y[b]; });
      std::printf("  top %zu of row 0:", k);
      for (size_t i = 0; i < k; ++i) std::printf(" [%zu] %.6g", idx[i], y[idx[i]]);
      std::printf("\n");
    }

    if (!check_npy.empty()) {
      Npy ref = read_npy(check_npy);
      if (ref.data.size() != out0.size()) {
        std::printf("check: output 0 has %zu values, the reference %zu: MISMATCH\n", out0.size(),
                    ref.data.size());
        return 1;
      }
      double worst = 0;
      bool ok = true;
      for (size_t i = 0; i < out0.size(); ++i) {
        double d = std::fabs(static_cast<double>(out0[i]) - ref.data[i]);
        worst = std::max(worst, d);
        ok = ok && d <= 1e-6 + 1e-5 * std::fabs(ref.data[i]);
      }
      std::printf("check: max abs difference %.3g: %s\n", worst,
                  ok ? "output matches the reference" : "MISMATCH");
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oar_infer_cpp: %s\n", e.what());
    return 1;
  }
  return 0;
}
