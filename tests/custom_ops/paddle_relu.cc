// Paddle 2.x's documented custom relu example, written against paddle/extension.h unchanged in style:
// it must compile against oar's SDK and behave like Paddle's. Kernels for every device (CPU code; other
// devices go through a host copy), a grad op and a double grad op.
#include <vector>

#include "paddle/extension.h"

#define CHECK_INPUT(x) PD_CHECK(x.place() == paddle::PlaceType::kCPU, #x " must be a CPU Tensor.")

template <typename data_t>
void relu_cpu_forward_kernel(const data_t* x_data, data_t* out_data, int64_t x_numel) {
  for (int64_t i = 0; i < x_numel; ++i)
    out_data[i] = x_data[i] > static_cast<data_t>(0) ? x_data[i] : static_cast<data_t>(0);
}

template <typename data_t>
void relu_cpu_backward_kernel(const data_t* grad_out_data, const data_t* out_data, data_t* grad_x_data,
                              int64_t out_numel) {
  for (int64_t i = 0; i < out_numel; ++i)
    grad_x_data[i] = grad_out_data[i] * (out_data[i] > static_cast<data_t>(0) ? 1. : 0.);
}

template <typename data_t>
void relu_cpu_double_backward_kernel(const data_t* out_data, const data_t* ddx_data, data_t* ddout_data,
                                     int64_t ddout_numel) {
  for (int64_t i = 0; i < ddout_numel; ++i)
    ddout_data[i] = ddx_data[i] * (out_data[i] > static_cast<data_t>(0) ? 1. : 0.);
}

std::vector<paddle::Tensor> ReluCPUForward(const paddle::Tensor& x) {
  CHECK_INPUT(x);
  auto out = paddle::empty(x.shape(), x.dtype(), x.place());
  PD_DISPATCH_FLOATING_TYPES(x.type(), "relu_cpu_forward", ([&] {
                               relu_cpu_forward_kernel<data_t>(x.data<data_t>(),
                                                               out.mutable_data<data_t>(x.place()), x.size());
                             }));
  return {out};
}

std::vector<paddle::Tensor> ReluCPUBackward(const paddle::Tensor& x, const paddle::Tensor& out,
                                            const paddle::Tensor& grad_out) {
  CHECK_INPUT(out);
  auto grad_x = paddle::empty(x.shape(), x.dtype(), x.place());
  PD_DISPATCH_FLOATING_TYPES(out.type(), "relu_cpu_backward", ([&] {
                               relu_cpu_backward_kernel<data_t>(grad_out.data<data_t>(), out.data<data_t>(),
                                                                grad_x.mutable_data<data_t>(x.place()),
                                                                out.size());
                             }));
  return {grad_x};
}

std::vector<paddle::Tensor> ReluCPUDoubleBackward(const paddle::Tensor& out, const paddle::Tensor& ddx) {
  CHECK_INPUT(out);
  auto ddout = paddle::empty(out.shape(), out.dtype(), out.place());
  PD_DISPATCH_FLOATING_TYPES(out.type(), "relu_cpu_double_backward", ([&] {
                               relu_cpu_double_backward_kernel<data_t>(
                                   out.data<data_t>(), ddx.data<data_t>(),
                                   ddout.mutable_data<data_t>(out.place()), ddout.size());
                             }));
  return {ddout};
}

// Any other device: compute on the host (copy in, copy out), through the public Tensor API only.
template <typename Fn, typename... T>
std::vector<paddle::Tensor> on_host(Fn fn, const T&... in) {
  const paddle::Place place = std::get<0>(std::tie(in...)).place();
  if (place == paddle::PlaceType::kCPU) return fn(in...);
  std::vector<paddle::Tensor> outs = fn(in.copy_to(paddle::CPUPlace(), true)...);
  for (auto& o : outs) o = o.copy_to(place, true);
  return outs;
}
std::vector<paddle::Tensor> ReluForward(const paddle::Tensor& x) { return on_host(ReluCPUForward, x); }
std::vector<paddle::Tensor> ReluBackward(const paddle::Tensor& x, const paddle::Tensor& out,
                                         const paddle::Tensor& grad_out) {
  return on_host(ReluCPUBackward, x, out, grad_out);
}
std::vector<paddle::Tensor> ReluDoubleBackward(const paddle::Tensor& out, const paddle::Tensor& ddx) {
  return on_host(ReluCPUDoubleBackward, out, ddx);
}

std::vector<std::vector<int64_t>> ReluDoubleBackwardInferShape(const std::vector<int64_t>& out_shape,
                                                               const std::vector<int64_t>& ddx_shape) {
  return {out_shape};
}

PD_BUILD_OP(custom_relu).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(PD_KERNEL(ReluForward));

PD_BUILD_GRAD_OP(custom_relu)
    .Inputs({"X", "Out", paddle::Grad("Out")})
    .Outputs({paddle::Grad("X")})
    .SetKernelFn(PD_KERNEL(ReluBackward));

PD_BUILD_DOUBLE_GRAD_OP(custom_relu)
    .Inputs({"Out", paddle::Grad(paddle::Grad("X"))})
    .Outputs({paddle::Grad(paddle::Grad("Out"))})
    .SetKernelFn(PD_KERNEL(ReluDoubleBackward))
    .SetInferShapeFn(PD_INFER_SHAPE(ReluDoubleBackwardInferShape));
