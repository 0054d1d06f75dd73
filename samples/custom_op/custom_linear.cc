// custom_linear: out = act(alpha * (x @ w) + bias), a custom op in oar's own spelling (oar/extension.h)
// with two attributes: "alpha: float" and "activation: std::string" ("identity" or "relu").
// x [M, K], w [K, N], bias [N] -> out [M, N]. Forward and backward on the CPU; on any other device the
// CPU kernel runs on host copies.
#include <oar/extension.h>

#include <string>
#include <vector>

namespace {

bool use_relu(const std::string& activation) {
  OAR_CHECK(activation == "identity" || activation == "relu",
            "custom_linear: activation must be \"identity\" or \"relu\", got \"" + activation + "\"");
  return activation == "relu";
}

template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* out, int64_t m, int64_t k, int64_t n, T alpha,
                    bool relu) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += x[i * k + p] * w[p * n + j];
      T v = alpha * acc + b[j];
      out[i * n + j] = relu && v < T(0) ? T(0) : v;
    }
  }
}

// dpre = dout masked by the activation; dx = alpha dpre w^T; dw = alpha x^T dpre; db = sum_rows(dpre).
template <typename T>
void linear_backward(const T* x, const T* w, const T* out, const T* dout, T* dx, T* dw, T* db, int64_t m,
                     int64_t k, int64_t n, T alpha, bool relu) {
  std::vector<T> dpre(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m * n; ++i) dpre[i] = relu && !(out[i] > T(0)) ? T(0) : dout[i];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      T acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += dpre[i * n + j] * w[p * n + j];
      dx[i * k + p] = alpha * acc;
    }
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t i = 0; i < m; ++i) acc += x[i * k + p] * dpre[i * n + j];
      dw[p * n + j] = alpha * acc;
    }
  for (int64_t j = 0; j < n; ++j) {
    T acc = 0;
    for (int64_t i = 0; i < m; ++i) acc += dpre[i * n + j];
    db[j] = acc;
  }
}

oar::Tensor on_cpu(const oar::Tensor& t) { return t.is_cpu() ? t : t.copy_to(oar::CPUPlace()); }

}  // namespace

std::vector<oar::Tensor> LinearForward(const oar::Tensor& x_in, const oar::Tensor& w_in,
                                       const oar::Tensor& b_in, float alpha, const std::string& activation) {
  const bool relu = use_relu(activation);
  oar::Tensor x = on_cpu(x_in), w = on_cpu(w_in), b = on_cpu(b_in);
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  auto out = oar::empty({m, n}, x.dtype(), oar::CPUPlace());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_linear", ([&] {
                                linear_forward<data_t>(x.data<data_t>(), w.data<data_t>(), b.data<data_t>(),
                                                       out.mutable_data<data_t>(), m, k, n,
                                                       static_cast<data_t>(alpha), relu);
                              }));
  return {x_in.is_cpu() ? out : out.copy_to(x_in.place())};
}

std::vector<oar::Tensor> LinearBackward(const oar::Tensor& x_in, const oar::Tensor& w_in,
                                        const oar::Tensor& out_in, const oar::Tensor& dout_in, float alpha,
                                        const std::string& activation) {
  const bool relu = use_relu(activation);
  oar::Tensor x = on_cpu(x_in), w = on_cpu(w_in), out = on_cpu(out_in), dout = on_cpu(dout_in);
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  auto dx = oar::empty({m, k}, x.dtype(), oar::CPUPlace());
  auto dw = oar::empty({k, n}, x.dtype(), oar::CPUPlace());
  auto db = oar::empty({n}, x.dtype(), oar::CPUPlace());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_linear_grad", ([&] {
                                linear_backward<data_t>(
                                    x.data<data_t>(), w.data<data_t>(), out.data<data_t>(),
                                    dout.data<data_t>(), dx.mutable_data<data_t>(), dw.mutable_data<data_t>(),
                                    db.mutable_data<data_t>(), m, k, n, static_cast<data_t>(alpha), relu);
                              }));
  if (x_in.is_cpu()) return {dx, dw, db};
  return {dx.copy_to(x_in.place()), dw.copy_to(x_in.place()), db.copy_to(x_in.place())};
}

std::vector<std::vector<int64_t>> LinearInferShape(const std::vector<int64_t>& x,
                                                   const std::vector<int64_t>& w,
                                                   const std::vector<int64_t>& b) {
  OAR_CHECK(x.size() == 2 && w.size() == 2 && b.size() == 1,
            "custom_linear: x and w must be 2-D and bias 1-D");
  OAR_CHECK(x[1] == w[0] || x[1] < 0 || w[0] < 0, "custom_linear: x's columns must match w's rows");
  OAR_CHECK(b[0] == w[1] || b[0] < 0 || w[1] < 0, "custom_linear: bias must have w's column count");
  return {{x[0], w[1]}};
}

// The gradients have the shapes of x, w and bias.
std::vector<std::vector<int64_t>> LinearGradInferShape(const std::vector<int64_t>& x,
                                                       const std::vector<int64_t>& w,
                                                       const std::vector<int64_t>& out,
                                                       const std::vector<int64_t>& dout) {
  return {x, w, {w[1]}};
}

OAR_BUILD_OP(custom_linear)
    .Inputs({"X", "W", "Bias"})
    .Outputs({"Out"})
    .Attrs({"alpha: float", "activation: std::string"})
    .SetKernelFn(OAR_KERNEL(LinearForward))
    .SetInferShapeFn(OAR_INFER_SHAPE(LinearInferShape));

OAR_BUILD_GRAD_OP(custom_linear)
    .Inputs({"X", "W", "Out", oar::Grad("Out")})
    .Outputs({oar::Grad("X"), oar::Grad("W"), oar::Grad("Bias")})
    .Attrs({"alpha: float", "activation: std::string"})
    .SetKernelFn(OAR_KERNEL(LinearBackward))
    .SetInferShapeFn(OAR_INFER_SHAPE(LinearGradInferShape));
