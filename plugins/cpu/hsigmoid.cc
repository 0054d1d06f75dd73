// hsigmoid_loss and its gradient (framework/src/ops_vision.cc), in double. The forward is parallel over
// rows; the gradient writes dweight/dbias rows shared between samples, so it runs serially (the op is
// small: N * L dot products of length D).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

int64_t int_at(const TensorView& t, int64_t i) {
  return t.dtype() == OAR_DTYPE_INT64 ? t.data<int64_t>()[i] : static_cast<int64_t>(t.data<int32_t>()[i]);
}
template <class T>
double ld(T v) {
  return static_cast<double>(oar::sdk::compute_t<T>(v));
}

// Row i's path length: up to the first negative node.
int64_t path_len(const TensorView& table, int64_t i, int64_t L) {
  int64_t j = 0;
  while (j < L && int_at(table, i * L + j) >= 0) ++j;
  return j;
}

void hsigmoid_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.input(1), b = ctx.input(2), table = ctx.input(3), code = ctx.input(4);
  const int64_t N = x.dim(0), D = x.dim(1), K = w.dim(0), L = table.dim(1);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0, n = path_len(table, i, L); j < n; ++j)
      OAR_SDK_CHECK(int_at(table, i * L + j) < K, OAR_ERR_OUT_OF_RANGE,
                    "hsigmoid_loss: path_table[" << i << ", " << j << "] = " << int_at(table, i * L + j)
                                                 << " is outside the " << K << " weight rows");
  dispatch<FloatType>("hsigmoid_loss", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *pw = w.data<T>(), *pb = b.data<T>();
    T *out = ctx.output(0).data<T>(), *pre = ctx.output(1).data<T>();
    parallel_for(0, N, 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t n = path_len(table, i, L);
        double s = 0;
        for (int64_t j = 0; j < L; ++j) {
          if (j >= n) {
            pre[i * L + j] = T(0.0f);
            s += std::log(2.0);
            continue;
          }
          const int64_t node = int_at(table, i * L + j);
          double v = ld(pb[node]);
          for (int64_t d = 0; d < D; ++d) v += ld(pw[node * D + d]) * ld(px[i * D + d]);
          v = std::min(std::max(v, -40.0), 40.0);
          pre[i * L + j] = convert<T>(v);
          const double softplus = v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
          s += softplus - static_cast<double>(int_at(code, i * L + j) != 0) * v;
        }
        out[i] = convert<T>(s);
      }
    });
  });
}

void hsigmoid_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), w = ctx.input(1), table = ctx.input(2), code = ctx.input(3),
             pre = ctx.input(4), gout = ctx.input(5), gpre = ctx.input(6);
  const int64_t N = x.dim(0), D = x.dim(1), K = w.dim(0), L = table.dim(1);
  dispatch<FloatType>("hsigmoid_loss_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *pw = w.data<T>(), *pp = pre.data<T>(), *pg = gout.data<T>(),
            *pgp = gpre.data<T>();
    std::vector<double> dx(static_cast<size_t>(N * D)), dw(static_cast<size_t>(K * D)),
        db(static_cast<size_t>(K));
    for (int64_t i = 0; i < N; ++i) {
      const int64_t n = path_len(table, i, L);
      for (int64_t j = 0; j < n; ++j) {
        const int64_t node = int_at(table, i * L + j);
        OAR_SDK_CHECK(node < K, OAR_ERR_OUT_OF_RANGE,
                      "hsigmoid_loss_grad: path_table value " << node << " out of range");
        const double v = ld(pp[i * L + j]);
        const double bit = static_cast<double>(int_at(code, i * L + j) != 0);
        // d out / d pre = sigmoid(pre) - code; pre_out's own gradient passes where pre was not clipped
        double g = ld(pg[i]) * (1.0 / (1.0 + std::exp(-v)) - bit);
        if (std::fabs(v) < 40.0) g += ld(pgp[i * L + j]);
        for (int64_t d = 0; d < D; ++d) {
          dx[i * D + d] += g * ld(pw[node * D + d]);
          dw[node * D + d] += g * ld(px[i * D + d]);
        }
        db[node] += g;
      }
    }
    T *ox = ctx.output(0).data<T>(), *ow = ctx.output(1).data<T>(), *ob = ctx.output(2).data<T>();
    for (size_t k = 0; k < dx.size(); ++k) ox[k] = convert<T>(dx[k]);
    for (size_t k = 0; k < dw.size(); ++k) ow[k] = convert<T>(dw[k]);
    for (size_t k = 0; k < db.size(); ++k) ob[k] = convert<T>(db[k]);
  });
}

}  // namespace

void register_hsigmoid_kernels(Registry& r) {
  const auto& f = oar::sdk::float_dtypes();
  r.add("hsigmoid_loss", f, &hsigmoid_kernel);
  r.add("hsigmoid_loss_grad", f, &hsigmoid_grad_kernel);
}

}  // namespace oar_cpu
