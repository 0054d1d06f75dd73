// Complex numbers: the ops that take complex values apart and put them together (real, imag, conj,
// angle, complex, as_complex, as_real), with their gradient rules and samples. The arithmetic ops
// that also take complex dtypes (add ... pow, exp, log, sqrt, abs, sign, sum, mean, matmul) live with
// their families; their gradient rules conjugate through gradutil::conj (docs/ops_complex.md).
//
// Gradient convention (Paddle's, checked against Paddle 2.6.2): for a real loss L of a complex z =
// x + iy, z.grad is dL/dx + i dL/dy. A holomorphic f then passes g * conj(f'(z)) back.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace opdef {

DType complex_of(DType d) { return d == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64; }
DType real_of(DType d) {
  if (d == DType::kComplex128) return DType::kFloat64;
  if (d == DType::kComplex64) return DType::kFloat32;
  return d;
}

}  // namespace opdef

namespace {
using namespace opdef;
using namespace gradutil;

void require_complex(const InferContext& c, int i) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(is_complex(d), ErrorCode::kType,
              op_name(c) << ": " << input_name(c, i) << ".dtype " << dtype_name(d)
                         << " is not supported; expected complex64 or complex128");
}
void require_float32_or_64(const InferContext& c, int i) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(d == DType::kFloat32 || d == DType::kFloat64, ErrorCode::kType,
              op_name(c) << ": " << input_name(c, i) << ".dtype " << dtype_name(d)
                         << " is not supported; expected float32 or float64");
}

// real, imag: complex in, its real dtype out.
void infer_complex_part(InferContext& c) {
  require_complex(c, 0);
  c.outputs[0] = {real_of(c.inputs[0].dtype), c.inputs[0].dims};
}
// conj: identity on real dtypes (as Paddle), not bool.
void infer_conj(InferContext& c) {
  OAR_ENFORCE(c.inputs[0].dtype != DType::kBool, ErrorCode::kType, "conj: bool is not supported");
  c.outputs[0] = c.inputs[0];
}
// angle: floats and complex; a complex input gives its real dtype.
void infer_angle(InferContext& c) {
  DType d = c.inputs[0].dtype;
  OAR_ENFORCE(
      is_floating(d) || is_complex(d), ErrorCode::kType,
      "angle: x.dtype " << dtype_name(d) << " is not supported; expected a floating or complex dtype");
  c.outputs[0] = {real_of(d), c.inputs[0].dims};
}
// complex(real, imag): float32/float64 of one dtype, broadcast.
void infer_complex(InferContext& c) {
  require_float32_or_64(c, 0);
  require_same_dtype(c, 0, 1);
  c.outputs[0] = {complex_of(c.inputs[0].dtype),
                  broadcast(c, c.inputs[0].dims, c.inputs[1].dims, "real", "imag")};
}
// as_complex: [..., 2] float32/float64 -> [...] complex.
void infer_as_complex(InferContext& c) {
  require_float32_or_64(c, 0);
  const Dims& in = c.inputs[0].dims;
  OAR_ENFORCE(in.size() >= 1 && in[in.size() - 1] == 2, ErrorCode::kInvalidArgument,
              "as_complex: the last dimension of x must be 2 (real and imaginary parts), got shape "
                  << in.to_string());
  c.outputs[0] = {complex_of(c.inputs[0].dtype), Dims(in.data(), in.size() - 1)};
}
// as_real: complex [...] -> [..., 2] of the real dtype.
void infer_as_real(InferContext& c) {
  require_complex(c, 0);
  Dims out = c.inputs[0].dims;
  out.push_back(2);
  c.outputs[0] = {real_of(c.inputs[0].dtype), out};
}

// ---- gradients ------------------------------------------------------------------------------------
Tensor make_complex(const Tensor& re, const Tensor& im) { return call_op(OAR_OP("complex"), {re, im})[0]; }

// L depends on Re(z) only: z.grad = g + 0i.
std::vector<Tensor> real_grad(const GradContext& c) { return {ops::cast(g0(c), c.input_meta[0].dtype)}; }
// L depends on Im(z) only: z.grad = 0 + gi.
std::vector<Tensor> imag_grad(const GradContext& c) {
  return {make_complex(ops::zeros(g0(c).dims(), g0(c).dtype(), g0(c).place()), g0(c))};
}
std::vector<Tensor> conj_grad(const GradContext& c) { return {conj(g0(c))}; }
// angle = atan2(y, x): dL/dx + i dL/dy = g * (-y + ix) / |z|^2 = g * i z / |z|^2, 0 at z = 0. A real
// input is piecewise constant: no gradient (zeros, as Paddle).
std::vector<Tensor> angle_grad(const GradContext& c) {
  const Tensor& z = X(c);
  if (!is_complex(z.dtype())) return {ops::zeros(z.dims(), z.dtype(), z.place())};
  Tensor re = ops::unary(OAR_OP("real"), z), im = ops::unary(OAR_OP("imag"), z);
  Tensor r2 = ops::add(ops::multiply(re, re), ops::multiply(im, im));
  Tensor zero = scalar_like(0, r2);
  Tensor at0 = ops::equal(r2, zero);
  Tensor scale = ops::divide(g0(c), ops::where(at0, scalar_like(1, r2), r2));
  scale = ops::where(at0, zero, scale);
  return {make_complex(ops::neg(ops::multiply(im, scale)), ops::multiply(re, scale))};
}
std::vector<Tensor> complex_grad(const GradContext& c) {
  return {c.needs_grad[0] ? unbroadcast(ops::unary(OAR_OP("real"), g0(c)), in_dims(c, 0)) : Tensor(),
          c.needs_grad[1] ? unbroadcast(ops::unary(OAR_OP("imag"), g0(c)), in_dims(c, 1)) : Tensor()};
}
std::vector<Tensor> as_complex_grad(const GradContext& c) { return {ops::unary(OAR_OP("as_real"), g0(c))}; }
std::vector<Tensor> as_real_grad(const GradContext& c) { return {ops::unary(OAR_OP("as_complex"), g0(c))}; }

}  // namespace

void register_complex_ops(OpRegistry& r) {
  def(r, "real", {"x"}, {}, infer_complex_part);
  def(r, "imag", {"x"}, {}, infer_complex_part);
  def(r, "conj", {"x"}, {}, infer_conj);
  def(r, "angle", {"x"}, {}, infer_angle);
  def(r, "complex", {"x", "y"}, {}, infer_complex);  // x real parts, y imaginary parts (Paddle's X, Y)
  def(r, "as_complex", {"x"}, {}, infer_as_complex);
  def(r, "as_real", {"x"}, {}, infer_as_real);
}

void register_complex_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kX = 1;
  set_grad(r, "real", real_grad, kNone, false);
  set_grad(r, "imag", imag_grad, kNone, false);
  set_grad(r, "conj", conj_grad, kNone, false);
  set_grad(r, "angle", angle_grad, kX, false);
  set_grad(r, "complex", complex_grad, kNone, false);
  set_grad(r, "as_complex", as_complex_grad, kNone, false);
  set_grad(r, "as_real", as_real_grad, kNone, false);
}

void register_complex_samples(OpRegistry& r) {
  using namespace sample;
  const std::vector<DType> cx = {DType::kComplex64, DType::kComplex128};
  auto complex_only = [&](std::vector<OpSample> v) {
    for (OpSample& s : v) s = only(s, cx);
    return v;
  };
  add(r, {"real", "imag", "as_real"}, complex_only(unary(-3, 3)));
  add(r, "conj", unary(-3, 3));
  // angle: away from the branch cut on the negative real axis for the finite differences.
  add(r, "angle", complex_only(unary(0.1, 3)));
  add(r, "angle",
      {only(nonsmooth(S("real signs", {with_zeros(real({4, 5}, -3, 3))})), floats()),
       only(nonsmooth(S("branch cut", {real({4, 5}, -3, -0.1)})), cx)});
  add(r, "complex", binary(-3, 3, -3, 3));
  add(r, "as_complex",
      {S("2-d", {real({3, 2})}), S("3-d", {real({2, 4, 2})}), S("0-d out", {real({2})}),
       S("empty", {real({0, 2})}), S("transposed", {transposed(real({2, 5, 2}))})});
}

}  // namespace oar
