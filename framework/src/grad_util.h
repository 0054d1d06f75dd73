// What gradient rules share: accessors into a GradContext and a few tensor helpers.
#pragma once

#include <oar/core/autograd.h>
#include <oar/core/ops.h>

namespace oar::gradutil {

inline const Tensor& g0(const GradContext& c) { return c.grad_outputs[0]; }  // the first output's gradient
inline const Tensor& X(const GradContext& c) { return c.inputs[0]; }
inline const Tensor& Y(const GradContext& c) { return c.inputs[1]; }
inline const Tensor& OUT(const GradContext& c) { return c.outputs[0]; }
inline const Dims& in_dims(const GradContext& c, int i) { return c.input_meta[i].dims; }
// A 0-d tensor of value v with t's dtype and place.
inline Tensor scalar_like(double v, const Tensor& t) { return ops::full({}, v, t.dtype(), t.place()); }
// A bool tensor as 0/1 in like's dtype.
inline Tensor mask(const Tensor& b, const Tensor& like) { return ops::cast(b, like.dtype()); }
// conj(t) for complex t, t itself otherwise: gradient rules of ops that take complex values pass
// g * conj(f'(z)) back (Paddle's convention, docs/ops_complex.md).
inline Tensor conj(const Tensor& t) { return is_complex(t.dtype()) ? ops::unary("conj", t) : t; }
// Sums a broadcast gradient back to an input's shape.
inline Tensor unbroadcast(const Tensor& g, const Dims& shape) { return autograd::sum_to(g, shape); }
// A reduced output's gradient laid out against input 0 again (attribute "axis" holds the normalised
// reduced axes): reshaped to the keepdim shape, then expanded.
inline Tensor expand_reduced(const GradContext& c, const Tensor& g) {
  const Dims& in = in_dims(c, 0);
  Dims kept = in;
  for (int64_t a : c.attrs.get_ints("axis")) kept[static_cast<int32_t>(a)] = 1;
  return g.reshape(kept).expand(in);
}
// The gradient of a piecewise-constant op (floor, ceil, round, trunc, sign; decision 97): zeros, as
// Paddle gives, rather than no gradient.
inline std::vector<Tensor> zero_grad(const GradContext& c) {
  return {ops::zeros(in_dims(c, 0), g0(c).dtype(), g0(c).place())};
}

}  // namespace oar::gradutil
