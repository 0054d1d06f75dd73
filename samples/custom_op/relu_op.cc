// custom_relu: PaddlePaddle 2.x's custom-operator example, written against paddle/extension.h only, so
// the same file builds with Paddle and with oar. Forward and backward; a CPU kernel, a CUDA kernel in
// relu_op.cu (compiled only when nvcc builds it: PADDLE_WITH_CUDA), and for any other device (oar's
// sim) the CPU kernel on a host copy.
#include <vector>

#include "paddle/extension.h"

template <typename data_t>
void relu_cpu_forward_kernel(const data_t* x_data, data_t* out_data, int64_t x_numel) {
  for (int64_t i = 0; i < x_numel; ++i) {
    out_data[i] = x_data[i] > static_cast<data_t>(0) ? x_data[i] : static_cast<data_t>(0);
  }
}

template <typename data_t>
void relu_cpu_backward_kernel(const data_t* grad_out_data, const data_t* out_data, data_t* grad_x_data,
                              int64_t out_numel) {
  for (int64_t i = 0; i < out_numel; ++i) {
    grad_x_data[i] = out_data[i] > static_cast<data_t>(0) ? grad_out_data[i] : static_cast<data_t>(0);
  }
}

std::vector<paddle::Tensor> relu_cpu_forward(const paddle::Tensor& x) {
  auto out = paddle::empty(x.shape(), x.dtype(), x.place());
  PD_DISPATCH_FLOATING_TYPES(x.dtype(), "relu_cpu_forward", ([&] {
                               relu_cpu_forward_kernel<data_t>(
                                   x.data<data_t>(), out.mutable_data<data_t>(x.place()), x.numel());
                             }));
  return {out};
}

std::vector<paddle::Tensor> relu_cpu_backward(const paddle::Tensor& x, const paddle::Tensor& out,
                                              const paddle::Tensor& grad_out) {
  auto grad_x = paddle::empty(x.shape(), x.dtype(), x.place());
  PD_DISPATCH_FLOATING_TYPES(out.dtype(), "relu_cpu_backward", ([&] {
                               relu_cpu_backward_kernel<data_t>(grad_out.data<data_t>(), out.data<data_t>(),
                                                                grad_x.mutable_data<data_t>(x.place()),
                                                                out.numel());
                             }));
  return {grad_x};
}

#ifdef PADDLE_WITH_CUDA
std::vector<paddle::Tensor> relu_cuda_forward(const paddle::Tensor& x);
std::vector<paddle::Tensor> relu_cuda_backward(const paddle::Tensor& x, const paddle::Tensor& out,
                                               const paddle::Tensor& grad_out);
#endif

std::vector<paddle::Tensor> ReluForward(const paddle::Tensor& x) {
  if (x.place() == paddle::PlaceType::kCPU) return relu_cpu_forward(x);
#ifdef PADDLE_WITH_CUDA
  if (x.place() == paddle::PlaceType::kGPU) return relu_cuda_forward(x);
#endif
  // A device whose memory the host cannot read (oar's sim): compute on a CPU copy, move the result back.
  auto out = relu_cpu_forward(x.copy_to(paddle::CPUPlace(), true))[0];
  return {out.copy_to(x.place(), true)};
}

std::vector<paddle::Tensor> ReluBackward(const paddle::Tensor& x, const paddle::Tensor& out,
                                         const paddle::Tensor& grad_out) {
  if (x.place() == paddle::PlaceType::kCPU) return relu_cpu_backward(x, out, grad_out);
#ifdef PADDLE_WITH_CUDA
  if (x.place() == paddle::PlaceType::kGPU) return relu_cuda_backward(x, out, grad_out);
#endif
  auto cpu = paddle::CPUPlace();
  auto grad_x =
      relu_cpu_backward(x.copy_to(cpu, true), out.copy_to(cpu, true), grad_out.copy_to(cpu, true))[0];
  return {grad_x.copy_to(x.place(), true)};
}

std::vector<std::vector<int64_t>> ReluInferShape(const std::vector<int64_t>& x_shape) { return {x_shape}; }

std::vector<paddle::DataType> ReluInferDtype(const paddle::DataType& x_dtype) { return {x_dtype}; }

PD_BUILD_OP(custom_relu)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(ReluForward))
    .SetInferShapeFn(PD_INFER_SHAPE(ReluInferShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(ReluInferDtype));

PD_BUILD_GRAD_OP(custom_relu)
    .Inputs({"X", "Out", paddle::Grad("Out")})
    .Outputs({paddle::Grad("X")})
    .SetKernelFn(PD_KERNEL(ReluBackward));
