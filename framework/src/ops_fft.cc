// Discrete Fourier transforms (oar.fft), with Paddle's three ops and attributes so programs record what
// Paddle records: fft_c2c (complex -> complex), fft_r2c (real -> complex, optionally one-sided) and
// fft_c2r (one-sided complex -> real). `normalization` is "backward" (scale 1 forward, 1/n inverse),
// "forward" (the reverse) or "ortho" (1/sqrt(n) both ways), n the product of the transformed sizes;
// `forward` picks the exponent's sign (-1 forward). Everything else in oar.fft (n/s resizing, the 2-D
// and N-D forms, hfft/ihfft) is Python on these three.
//
// Gradients are the adjoint transforms, written with the same ops: the adjoint of a transform with
// sign σ and scale c is the transform with sign -σ and scale c, which is the opposite direction with
// the "dual" normalization (backward <-> forward, ortho stays).
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <set>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

DType complex_of(DType d) { return d == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64; }
DType real_of(DType d) { return d == DType::kComplex128 ? DType::kFloat64 : DType::kFloat32; }

// Validates `normalization` and the transformed axes (normalised in place, order kept: the last one is
// the halved axis of r2c/c2r). Every transformed size must be >= 1.
void check_fft_attrs(InferContext& c) {
  const std::string& norm = c.attrs->get_string("normalization");
  OAR_ENFORCE(norm == "backward" || norm == "forward" || norm == "ortho", ErrorCode::kInvalidArgument,
              op_name(c) << ": normalization must be 'backward', 'forward' or 'ortho', got '" << norm << "'");
  const int32_t nd = c.inputs[0].dims.size();
  std::vector<int64_t> axes = c.attrs->get_ints("axes");
  OAR_ENFORCE(!axes.empty(), ErrorCode::kInvalidArgument, op_name(c) << ": axes must not be empty");
  std::set<int64_t> seen;
  for (int64_t& a : axes) {
    a = normalize_axis(c, a, nd);
    OAR_ENFORCE(seen.insert(a).second, ErrorCode::kInvalidArgument, op_name(c) << ": axes repeat axis " << a);
  }
  c.attrs->set("axes", axes);
}

void require_complex_input(const InferContext& c) {
  OAR_ENFORCE(is_complex(c.inputs[0].dtype), ErrorCode::kType,
              op_name(c) << ": x must be complex64 or complex128, got " << dtype_name(c.inputs[0].dtype));
}

void require_nonempty_axes(const InferContext& c, const Dims& d) {
  for (int64_t a : c.attrs->get_ints("axes"))
    OAR_ENFORCE(d[a] >= 1, ErrorCode::kInvalidArgument,
                op_name(c) << ": the transformed axis " << a << " of x" << c.inputs[0].dims.to_string()
                           << " is empty");
}

void infer_c2c(InferContext& c) {
  require_complex_input(c);
  check_fft_attrs(c);
  require_nonempty_axes(c, c.inputs[0].dims);
  c.outputs[0] = c.inputs[0];
}

void infer_r2c(InferContext& c) {
  const DType d = c.inputs[0].dtype;
  OAR_ENFORCE(d == DType::kFloat32 || d == DType::kFloat64, ErrorCode::kType,
              op_name(c) << ": x must be float32 or float64, got " << dtype_name(d));
  check_fft_attrs(c);
  require_nonempty_axes(c, c.inputs[0].dims);
  Dims out = c.inputs[0].dims;
  if (c.attrs->get_int("onesided")) {
    const int64_t last = c.attrs->get_ints("axes").back();
    out[last] = out[last] / 2 + 1;
  }
  c.outputs[0] = {complex_of(d), out};
}

// The output's last transformed size is last_dim_size, or 2 * (m - 1) when it is 0; the input holds its
// n / 2 + 1 non-redundant values.
void infer_c2r(InferContext& c) {
  require_complex_input(c);
  check_fft_attrs(c);
  require_nonempty_axes(c, c.inputs[0].dims);
  const int64_t last = c.attrs->get_ints("axes").back();
  const int64_t m = c.inputs[0].dims[last];
  int64_t n = c.attrs->get_int("last_dim_size");
  OAR_ENFORCE(n >= 0, ErrorCode::kInvalidArgument,
              op_name(c) << ": last_dim_size must be >= 0 (0: 2 * (m - 1)), got " << n);
  if (n == 0) n = 2 * (m - 1);
  OAR_ENFORCE(n >= 1 && n / 2 + 1 == m, ErrorCode::kInvalidArgument,
              op_name(c) << ": an output size of " << n << " along axis " << last << " needs " << n / 2 + 1
                         << " input values there, x has " << m << " (x" << c.inputs[0].dims.to_string()
                         << ")");
  Dims out = c.inputs[0].dims;
  out[last] = n;
  c.outputs[0] = {real_of(c.inputs[0].dtype), out};
}

// ---- gradients ------------------------------------------------------------------------------------
std::string dual_norm(const std::string& norm) {
  return norm == "backward" ? "forward" : norm == "forward" ? "backward" : norm;
}
Tensor c2c(const Tensor& x, const std::vector<int64_t>& axes, const std::string& norm, bool forward) {
  return call_op(OAR_OP("fft_c2c"), {x},
                 {{"axes", axes}, {"normalization", norm}, {"forward", int64_t{forward}}})[0];
}

std::vector<Tensor> c2c_grad(const GradContext& c) {
  return {c2c(g0(c), c.attrs.get_ints("axes"), dual_norm(c.attrs.get_string("normalization")),
              c.attrs.get_int("forward") == 0)};
}

// x real: gx = Re(adjoint(g)), the one-sided g first zero-padded back to the full length.
std::vector<Tensor> r2c_grad(const GradContext& c) {
  const std::vector<int64_t>& axes = c.attrs.get_ints("axes");
  Tensor g = g0(c);
  if (c.attrs.get_int("onesided")) {
    const int64_t last = axes.back(), n = in_dims(c, 0)[last], m = g.dim(last);
    if (n > m) {
      Dims zshape = g.dims();
      zshape[last] = n - m;
      g = ops::concat({g, ops::full(zshape, 0.0, g.dtype(), g.place())}, last);
    }
  }
  Tensor full = c2c(g, axes, dual_norm(c.attrs.get_string("normalization")), c.attrs.get_int("forward") == 0);
  return {ops::cast(full, c.input_meta[0].dtype)};  // complex -> real keeps the real part
}

// y = Re(L x) with L the transform of the Hermitian extension: each bin k of the last axis that has a
// mirror image (1 <= k < n - m + 1) counts twice. gx = w * r2c(g) in the opposite direction.
std::vector<Tensor> c2r_grad(const GradContext& c) {
  const std::vector<int64_t>& axes = c.attrs.get_ints("axes");
  const int64_t last = axes.back(), m = in_dims(c, 0)[last], n = c.output_meta[0].dims[last];
  Tensor gx = call_op(OAR_OP("fft_r2c"), {g0(c)},
                      {{"axes", axes},
                       {"normalization", dual_norm(c.attrs.get_string("normalization"))},
                       {"forward", int64_t{c.attrs.get_int("forward") == 0}},
                       {"onesided", int64_t{1}}})[0];
  const int64_t twice = n - m;  // bins 1 .. n - m
  if (twice <= 0) return {gx};
  Dims shape(std::vector<int64_t>(gx.ndim(), 1));
  auto piece = [&](int64_t len, double v) {
    shape[last] = len;
    return ops::full(shape, v, gx.dtype(), gx.place());
  };
  std::vector<Tensor> parts = {piece(1, 1.0), piece(twice, 2.0)};
  if (m - 1 - twice > 0) parts.push_back(piece(m - 1 - twice, 1.0));
  return {ops::multiply(gx, ops::concat(parts, last))};
}

AttrDef string_attr(const char* name, const char* def) {
  return {name, AttrType::kString, false, std::string(def)};
}

}  // namespace

void register_fft_ops(OpRegistry& r) {
  def(r, "fft_c2c", {"x"},
      {req_ints("axes"), string_attr("normalization", "backward"), int_attr("forward", 1)}, infer_c2c)
      .doc = "Complex-to-complex DFT over `axes` (FFTW on the CPU).";
  def(r, "fft_r2c", {"x"},
      {req_ints("axes"), string_attr("normalization", "backward"), int_attr("forward", 1),
       int_attr("onesided", 1)},
      infer_r2c)
      .doc = "Real-to-complex DFT over `axes`; onesided keeps the first n/2+1 bins of the last axis.";
  def(r, "fft_c2r", {"x"},
      {req_ints("axes"), string_attr("normalization", "backward"), int_attr("forward", 0),
       int_attr("last_dim_size", 0)},
      infer_c2r)
      .doc = "One-sided complex-to-real DFT over `axes` (the inverse of r2c), Hermitian symmetry implied.";
}

void register_fft_grads(OpRegistry& r) {
  set_grad(r, "fft_c2c", c2c_grad, 0, false);
  set_grad(r, "fft_r2c", r2c_grad, 0, false);
  set_grad(r, "fft_c2r", c2r_grad, 0, false);
}

// The suite feeds complex64/complex128 for c2c/c2r and float32/float64 for r2c.
void register_fft_samples(OpRegistry& r) {
  using namespace sample;
  auto A = [](std::vector<int64_t> axes, const char* norm, int64_t fwd) {
    return AttrList{{"axes", axes}, {"normalization", std::string(norm)}, {"forward", fwd}};
  };
  add(r, "fft_c2c",
      {S("1-d", {real({8})}, A({0}, "backward", 1)), S("inverse ortho", {real({3, 5})}, A({1}, "ortho", 0)),
       S("2-d forward-norm", {real({4, 6})}, A({0, 1}, "forward", 1)),
       S("middle axis of a view", {transposed(real({3, 4, 2}))}, A({1}, "backward", 0)),
       S("empty batch", {real({0, 4})}, A({1}, "backward", 1))});
  auto R = [&](std::vector<int64_t> axes, const char* norm, int64_t fwd, int64_t onesided) {
    AttrList a = A(std::move(axes), norm, fwd);
    a.push_back({"onesided", onesided});
    return a;
  };
  add(r, "fft_r2c",
      {S("1-d onesided", {real({8})}, R({0}, "backward", 1, 1)),
       S("odd full", {real({2, 5})}, R({1}, "ortho", 1, 0)),
       S("2-d, halved axis first", {real({4, 6})}, R({1, 0}, "forward", 1, 1)),
       S("inverse (ihfft)", {flipped(real({3, 7}))}, R({1}, "backward", 0, 1))});
  auto C = [&](std::vector<int64_t> axes, const char* norm, int64_t fwd, int64_t n) {
    AttrList a = A(std::move(axes), norm, fwd);
    a.push_back({"last_dim_size", n});
    return a;
  };
  add(r, "fft_c2r",
      {S("1-d even", {real({5})}, C({0}, "backward", 0, 0)),
       S("odd size", {real({2, 4})}, C({1}, "ortho", 0, 7)),
       S("2-d", {real({3, 4})}, C({0, 1}, "forward", 0, 6)),
       S("hfft over the first axis", {real({4, 3})}, C({0}, "backward", 1, 6))});
}

}  // namespace oar
