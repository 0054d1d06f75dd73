// Trains a two-layer MLP on the real Fashion-MNIST data (Debian's dataset-fashion-mnist) with the
// C++ eager API only: forward, hand-written backward and SGD, all through oar ops dispatched to the
// plugins. First it shows which plugins loaded and where a few ops ran (native kernel or fallback).
//
//   oar_train_mlp [--device cpu|sim:0] [--epochs N] [--batch B] [--lr LR] [--data DIR]
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using oar::DType;
using oar::Place;
using oar::Tensor;
namespace ops = oar::ops;

namespace {

std::vector<uint8_t> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path + " (install Debian's dataset-fashion-mnist)");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }

// idx files: magic (0x0803 images / 0x0801 labels), counts, then raw bytes.
struct Split {
  std::vector<float> images;  // n x 784, scaled to [0, 1]
  std::vector<int64_t> labels;
  int64_t n = 0;
};

Split load_split(const std::string& dir, const std::string& prefix) {
  auto img = read_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  auto lab = read_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (img.size() < 16 || be32(img.data()) != 0x803 || lab.size() < 8 || be32(lab.data()) != 0x801)
    throw std::runtime_error("not an idx file pair: " + dir + "/" + prefix);
  Split s;
  s.n = be32(img.data() + 4);
  int64_t pixels = int64_t(be32(img.data() + 8)) * be32(img.data() + 12);
  if (pixels != 784 || int64_t(be32(lab.data() + 4)) != s.n || img.size() < size_t(16 + s.n * 784))
    throw std::runtime_error("unexpected idx layout in " + dir + "/" + prefix);
  s.images.resize(size_t(s.n * 784));
  for (size_t i = 0; i < s.images.size(); ++i) s.images[i] = img[16 + i] / 255.0f;
  s.labels.assign(lab.begin() + 8, lab.begin() + 8 + s.n);
  return s;
}

Tensor scalar(float v, Place p) { return ops::full({}, v, DType::kFloat32, p); }

struct Mlp {
  Tensor w1, b1, w2, b2;
};

// One SGD step on a batch; returns (loss, correct predictions).
std::pair<float, int64_t> train_step(Mlp& m, const Tensor& x, const Tensor& y, const Tensor& classes,
                                     const Tensor& lr, Place p) {
  const int64_t b = x.dim(0);
  Tensor h_pre = ops::add(ops::matmul(x, m.w1), m.b1);
  Tensor h = ops::relu(h_pre);
  Tensor logits = ops::add(ops::matmul(h, m.w2), m.b2);
  Tensor onehot = ops::cast(ops::equal(y.unsqueeze(1), classes), DType::kFloat32);
  Tensor logp = ops::log_softmax(logits, 1);
  Tensor loss = ops::neg(ops::mean(ops::sum(ops::multiply(onehot, logp), {1})));
  Tensor correct = ops::sum(ops::equal(ops::argmax(logits, 1), y));

  // Backward of mean cross-entropy through softmax, the MLP and relu.
  Tensor dlogits = ops::multiply(ops::subtract(ops::softmax(logits, 1), onehot), scalar(1.0f / b, p));
  Tensor dw2 = ops::matmul(h, dlogits, /*transpose_x=*/true);
  Tensor db2 = ops::sum(dlogits, {0});
  Tensor dh = ops::matmul(dlogits, m.w2, false, /*transpose_y=*/true);
  Tensor dz = ops::multiply(dh, ops::cast(ops::greater_than(h_pre, scalar(0, p)), DType::kFloat32));
  Tensor dw1 = ops::matmul(x, dz, /*transpose_x=*/true);
  Tensor db1 = ops::sum(dz, {0});
  m.w1 = ops::subtract(m.w1, ops::multiply(dw1, lr));
  m.b1 = ops::subtract(m.b1, ops::multiply(db1, lr));
  m.w2 = ops::subtract(m.w2, ops::multiply(dw2, lr));
  m.b2 = ops::subtract(m.b2, ops::multiply(db2, lr));
  return {loss.to_vector<float>()[0], correct.to_vector<int64_t>()[0]};
}

void show_runtime() {
  auto& rt = oar::Runtime::get();
  std::cout << "plugins:\n";
  for (const auto& r : rt.plugin_records())
    std::cout << "  " << (r.loaded ? "loaded  " : "skipped ") << r.path << (r.loaded ? "" : ": " + r.reason) << "\n";
  std::cout << "where ops run:\n";
  for (Place p : rt.all_places()) {
    std::cout << "  " << p.to_string() << ":";
    for (const char* op : {"add", "matmul", "softmax", "exp"})
      std::cout << " " << op << (oar::has_kernel(op, p, DType::kFloat32) ? "=native" : "=cpu-fallback");
    std::cout << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cpu", data = "/usr/share/datasets/fashion-mnist";
  int epochs = 3;
  int64_t batch = 128, hidden = 128;
  float lr_value = 0.1f;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--device") device = v;
    else if (a == "--epochs") epochs = std::stoi(v);
    else if (a == "--batch") batch = std::stoll(v);
    else if (a == "--lr") lr_value = std::stof(v);
    else if (a == "--data") data = v;
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  try {
    show_runtime();
    Place p = Place::parse(device);
    Split train = load_split(data, "train"), test = load_split(data, "t10k");
    std::cout << "Fashion-MNIST: " << train.n << " training and " << test.n << " test images; training a 784-"
              << hidden << "-10 MLP on " << p.to_string() << " for " << epochs << " epochs (batch " << batch
              << ", lr " << lr_value << ")\n";
    Tensor x_all = Tensor::from_vector(train.images, {train.n, 784}, DType::kFloat32, p);
    Tensor y_all = Tensor::from_vector(train.labels, {train.n}, DType::kInt64, p);
    Tensor classes = ops::arange(0, 10, 1, DType::kInt64, p);
    Tensor lr = scalar(lr_value, p);

    ops::manual_seed(2026);
    Mlp m;  // Kaiming-uniform weights, zero biases
    m.w1 = ops::uniform({784, hidden}, -std::sqrt(6.0 / 784), std::sqrt(6.0 / 784), DType::kFloat32, 0, p);
    m.b1 = ops::zeros({hidden}, DType::kFloat32, p);
    m.w2 = ops::uniform({hidden, 10}, -std::sqrt(6.0 / hidden), std::sqrt(6.0 / hidden), DType::kFloat32, 0, p);
    m.b2 = ops::zeros({10}, DType::kFloat32, p);

    std::vector<int64_t> perm(static_cast<size_t>(train.n));
    std::mt19937_64 rng(7);
    const int64_t steps = train.n / batch;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      Tensor order = Tensor::from_vector(perm, {train.n}, DType::kInt64, p);
      Tensor xs = ops::index_select(x_all, order), ys = ops::index_select(y_all, order);
      auto t0 = std::chrono::steady_clock::now();
      double loss_sum = 0;
      int64_t correct = 0, seen = 0;
      for (int64_t s = 0; s < steps; ++s) {
        auto [loss, ok] = train_step(m, xs.slice(0, s * batch, (s + 1) * batch), ys.slice(0, s * batch, (s + 1) * batch),
                                     classes, lr, p);
        loss_sum += loss;
        correct += ok;
        seen += batch;
        if ((s + 1) % 50 == 0 || s + 1 == steps) {
          double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::printf("\repoch %d/%d  step %4lld/%lld  loss %.4f  acc %.4f  %.2f ms/step  ", epoch, epochs,
                      static_cast<long long>(s + 1), static_cast<long long>(steps), loss_sum / (s + 1),
                      double(correct) / seen, 1000 * secs / (s + 1));
          std::fflush(stdout);
        }
      }
      // Test accuracy.
      Tensor xt = Tensor::from_vector(test.images, {test.n, 784}, DType::kFloat32, p);
      Tensor yt = Tensor::from_vector(test.labels, {test.n}, DType::kInt64, p);
      Tensor logits = ops::add(ops::matmul(ops::relu(ops::add(ops::matmul(xt, m.w1), m.b1)), m.w2), m.b2);
      int64_t test_ok = ops::sum(ops::equal(ops::argmax(logits, 1), yt)).to_vector<int64_t>()[0];
      std::printf("\n  epoch %d: test accuracy %.4f\n", epoch, double(test_ok) / test.n);
    }
    auto counts = oar::fallback_counts();
    if (!counts.empty()) {
      std::cout << "ops that fell back to cpu:\n";
      for (const auto& [k, n] : counts)
        std::cout << "  " << k.op << " (" << oar::dtype_name(k.dtype) << " on " << k.device_type << "): " << n << "\n";
    }
    auto st = oar::Runtime::get().device(p).allocator().stats();
    std::cout << "memory on " << p.to_string() << ": peak allocated " << (st.peak_allocated >> 20) << " MiB, reserved "
              << (st.reserved >> 20) << " MiB\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
