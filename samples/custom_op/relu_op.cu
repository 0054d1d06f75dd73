// The CUDA half of custom_relu (relu_op.cc calls it for GPU tensors). Built only when nvcc is there:
// load(..., sources=["relu_op.cc", "relu_op.cu"]) or CUDAExtension in setup.py.
#include <vector>

#include "paddle/extension.h"

template <typename data_t>
__global__ void relu_cuda_forward_kernel(const data_t* x, data_t* y, int64_t num) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < num; i += blockDim.x * gridDim.x) {
    y[i] = x[i] > static_cast<data_t>(0) ? x[i] : static_cast<data_t>(0);
  }
}

template <typename data_t>
__global__ void relu_cuda_backward_kernel(const data_t* dy, const data_t* y, data_t* dx, int64_t num) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < num; i += blockDim.x * gridDim.x) {
    dx[i] = y[i] > static_cast<data_t>(0) ? dy[i] : static_cast<data_t>(0);
  }
}

static int blocks_for(int64_t numel, int threads) {
  int64_t b = (numel + threads - 1) / threads;
  return static_cast<int>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

std::vector<paddle::Tensor> relu_cuda_forward(const paddle::Tensor& x) {
  auto out = paddle::empty(x.shape(), x.dtype(), x.place());
  const int64_t numel = x.numel();
  PD_DISPATCH_FLOATING_TYPES(x.dtype(), "relu_cuda_forward", ([&] {
                               relu_cuda_forward_kernel<data_t><<<blocks_for(numel, 256), 256>>>(
                                   x.data<data_t>(), out.mutable_data<data_t>(x.place()), numel);
                             }));
  return {out};
}

std::vector<paddle::Tensor> relu_cuda_backward(const paddle::Tensor& x, const paddle::Tensor& out,
                                               const paddle::Tensor& grad_out) {
  auto grad_x = paddle::empty(x.shape(), x.dtype(), x.place());
  const int64_t numel = out.numel();
  PD_DISPATCH_FLOATING_TYPES(out.dtype(), "relu_cuda_backward", ([&] {
                               relu_cuda_backward_kernel<data_t><<<blocks_for(numel, 256), 256>>>(
                                   grad_out.data<data_t>(), out.data<data_t>(),
                                   grad_x.mutable_data<data_t>(x.place()), numel);
                             }));
  return {grad_x};
}
