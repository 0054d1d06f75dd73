// Paddle 2.0/2.1-style custom-op source (paddle::Tensor(place) + reshape + mutable_data, copy_to<T>,
// PlaceType comparisons), compiled into the same library as oar_ops.cc: two translation units sharing
// one registry and one entry point.
#include "paddle/extension.h"

#include <vector>

namespace {
// out = x * x, computed on the host.
std::vector<paddle::Tensor> SquareForward(const paddle::Tensor& x) {
  paddle::Tensor host = x.place() == paddle::PlaceType::kCPU ? x : x.copy_to<float>(paddle::PlaceType::kCPU);
  auto out = paddle::Tensor(paddle::PlaceType::kCPU);
  out.reshape(host.shape());
  PD_DISPATCH_FLOATING_TYPES(host.type(), "custom_square_v21", ([&] {
                               const data_t* a = host.data<data_t>();
                               data_t* o = out.mutable_data<data_t>(paddle::PlaceType::kCPU);
                               for (int64_t i = 0; i < host.size(); ++i) o[i] = a[i] * a[i];
                             }));
  if (x.place() != paddle::PlaceType::kCPU) return {out.copy_to(x.place())};
  return {out};
}
std::vector<std::vector<int64_t>> SquareInferShape(std::vector<int64_t> x_shape) { return {x_shape}; }
std::vector<paddle::DataType> SquareInferDtype(paddle::DataType x_dtype) { return {x_dtype}; }
}  // namespace

PD_BUILD_OP(custom_square_v21)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(SquareForward))
    .SetInferShapeFn(PD_INFER_SHAPE(SquareInferShape))
    .SetInferDtypeFn(PD_INFER_DTYPE(SquareInferDtype));
