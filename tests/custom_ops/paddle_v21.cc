// Paddle 2.0/2.1-style custom-op source (paddle::Tensor(place) + reshape + mutable_data, copy_to<T>,
// PlaceType comparisons), compiled into the same library as oar_ops.cc: two translation units sharing
// one registry and one entry point.
#include <vector>

#include "paddle/extension.h"

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

namespace {
// out = float64 copy of x (Tensor::cast).
std::vector<paddle::Tensor> ToDouble(const paddle::Tensor& x) { return {x.cast(paddle::DataType::FLOAT64)}; }
std::vector<paddle::DataType> ToDoubleDtype(paddle::DataType) { return {paddle::DataType::FLOAT64}; }
}  // namespace

PD_BUILD_OP(custom_to_double)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(ToDouble))
    .SetInferDtypeFn(PD_INFER_DTYPE(ToDoubleDtype));

namespace {
// Paddle's concat example shape: a Vec input whose gradient is a Vec output (which oar does not
// support): the forward op works, differentiating it raises.
std::vector<paddle::Tensor> Concat0(const std::vector<paddle::Tensor>& xs) {
  int64_t rows = 0;
  for (const auto& x : xs) rows += x.shape()[0];
  std::vector<int64_t> shape = xs[0].shape();
  shape[0] = rows;
  paddle::Tensor out = paddle::empty(shape, xs[0].dtype(), paddle::CPUPlace());
  PD_DISPATCH_FLOATING_TYPES(xs[0].dtype(), "custom_concat0", ([&] {
                               data_t* o = out.data<data_t>();
                               for (const auto& x : xs) {
                                 paddle::Tensor h = x.copy_to(paddle::CPUPlace());
                                 const data_t* a = h.data<data_t>();
                                 for (int64_t i = 0; i < h.numel(); ++i) *o++ = a[i];
                               }
                             }));
  return {out.copy_to(xs[0].place())};
}
std::vector<std::vector<int64_t>> Concat0Shape(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<int64_t> s = shapes[0];
  s[0] = 0;
  for (const auto& x : shapes) s[0] += x[0];
  return {s};
}
std::vector<paddle::Tensor> Concat0Grad(const std::vector<paddle::Tensor>& xs, const paddle::Tensor&) {
  return xs;
}
}  // namespace

PD_BUILD_OP(custom_concat0)
    .Inputs({paddle::Vec("X")})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(Concat0))
    .SetInferShapeFn(PD_INFER_SHAPE(Concat0Shape));
PD_BUILD_GRAD_OP(custom_concat0)
    .Inputs({paddle::Vec("X"), paddle::Grad("Out")})
    .Outputs({paddle::Grad(paddle::Vec("X"))})
    .SetKernelFn(PD_KERNEL(Concat0Grad));
