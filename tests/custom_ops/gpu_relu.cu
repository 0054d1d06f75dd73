// A CUDA custom op (Paddle spelling) with a "gpu" kernel only: tests/python/test_custom_op_core.py compiles
// it with nvcc when present and loads it (this machine has no gpu plugin, so calling it reports the missing
// kernel).
#include "paddle/extension.h"
template <typename data_t>
__global__ void relu_kernel(const data_t* x, data_t* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;
}
std::vector<paddle::Tensor> ReluGPU(const paddle::Tensor& x) {
  PD_CHECK(x.place() == paddle::PlaceType::kGPU, "x must be on the GPU");
  auto out = paddle::empty(x.shape(), x.dtype(), x.place());
  int64_t n = x.numel();
  PD_DISPATCH_FLOATING_TYPES(x.type(), "relu_gpu", ([&] {
                               relu_kernel<data_t><<<(n + 255) / 256, 256, 0, (cudaStream_t)x.stream()>>>(
                                   x.data<data_t>(), out.data<data_t>(), n);
                             }));
  return {out};
}
PD_BUILD_OP(gpu_relu).Inputs({"X"}).Outputs({"Out"}).SetKernelFn("gpu", PD_KERNEL(ReluGPU));
