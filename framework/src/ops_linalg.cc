// Linear algebra (oar.linalg), LAPACK-backed on the CPU: inverse, det, slogdet, solve,
// triangular_solve, cholesky, qr, svd, eigh. Everything else (einsum, norms, pinv, ...) is a Python
// composite in python/oar/tensor/linalg.py. Each op's schema, shape/dtype inference and gradient rule,
// in one place (op_util.h). Matrices are the last two dims; leading dims are a batch.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <algorithm>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

// ---- inference ------------------------------------------------------------------------------------
// LAPACK covers float32 and float64 only.
void require_lapack_dtype(const InferContext& c, int i, const char* arg) {
  DType d = c.inputs[i].dtype;
  OAR_ENFORCE(d == DType::kFloat32 || d == DType::kFloat64, ErrorCode::kType,
              op_name(c) << ": " << arg << " must be float32 or float64, got " << dtype_name(d));
}
void require_matrix(const InferContext& c, int i, const char* arg) {
  const Dims& d = c.inputs[i].dims;
  OAR_ENFORCE(
      d.size() >= 2, ErrorCode::kInvalidArgument,
      op_name(c) << ": " << arg << " must have at least 2 dims [..., M, N], got shape " << d.to_string());
}
void require_square(const InferContext& c, int i, const char* arg) {
  require_lapack_dtype(c, i, arg);
  require_matrix(c, i, arg);
  const Dims& d = c.inputs[i].dims;
  OAR_ENFORCE(
      d[d.size() - 1] == d[d.size() - 2], ErrorCode::kInvalidArgument,
      op_name(c) << ": " << arg << " must be square in its last two dims, got shape " << d.to_string());
}
Dims batch_of(const Dims& d, int32_t drop) { return Dims(d.data(), d.size() - drop); }

void infer_square_same(InferContext& c) {
  require_square(c, 0, "x");
  c.outputs[0] = c.inputs[0];
}
void infer_det(InferContext& c) {
  require_square(c, 0, "x");
  c.outputs[0] = {c.inputs[0].dtype, batch_of(c.inputs[0].dims, 2)};
}
void infer_slogdet(InferContext& c) {
  infer_det(c);
  c.outputs[1] = c.outputs[0];
}
// x [..., N, N], y [..., N, K] with the same batch dims (Python broadcasts them first).
void infer_solve(InferContext& c) {
  require_square(c, 0, "x");
  require_lapack_dtype(c, 1, "y");
  require_matrix(c, 1, "y");
  require_same_dtype(c, 0, 1);
  const Dims &x = c.inputs[0].dims, &y = c.inputs[1].dims;
  OAR_ENFORCE(y[y.size() - 2] == x[x.size() - 1], ErrorCode::kInvalidArgument,
              op_name(c) << ": y.shape[-2] (" << y[y.size() - 2] << ") != x.shape[-1] (" << x[x.size() - 1]
                         << ") (x" << x.to_string() << ", y" << y.to_string() << ")");
  OAR_ENFORCE(batch_of(x, 2) == batch_of(y, 2), ErrorCode::kInvalidArgument,
              op_name(c) << ": batch dims of x" << x.to_string() << " and y" << y.to_string() << " differ");
  c.outputs[0] = c.inputs[1];
}
void infer_qr(InferContext& c) {
  require_lapack_dtype(c, 0, "x");
  require_matrix(c, 0, "x");
  const Dims& d = c.inputs[0].dims;
  const int64_t m = d[d.size() - 2], n = d[d.size() - 1], k = std::min(m, n);
  const bool complete = c.attrs->get_int("complete") != 0;
  Dims q = batch_of(d, 2), r = q;
  q.push_back(m), q.push_back(complete ? m : k);
  r.push_back(complete ? m : k), r.push_back(n);
  c.outputs[0] = {c.inputs[0].dtype, q};
  c.outputs[1] = {c.inputs[0].dtype, r};
}
void infer_svd(InferContext& c) {
  require_lapack_dtype(c, 0, "x");
  require_matrix(c, 0, "x");
  const Dims& d = c.inputs[0].dims;
  const int64_t m = d[d.size() - 2], n = d[d.size() - 1], k = std::min(m, n);
  const bool full = c.attrs->get_int("full_matrices") != 0;
  Dims u = batch_of(d, 2), s = u, vh = u;
  u.push_back(m), u.push_back(full ? m : k);
  s.push_back(k);
  vh.push_back(full ? n : k), vh.push_back(n);
  c.outputs[0] = {c.inputs[0].dtype, u};
  c.outputs[1] = {c.inputs[0].dtype, s};
  c.outputs[2] = {c.inputs[0].dtype, vh};
}
void infer_eigh(InferContext& c) {
  require_square(c, 0, "x");
  const Dims& d = c.inputs[0].dims;
  c.outputs[0] = {c.inputs[0].dtype, batch_of(d, 1)};
  c.outputs[1] = c.inputs[0];
}

// ---- gradient helpers -----------------------------------------------------------------------------
// The matrix transpose of the last two dims (a view).
Tensor mT(const Tensor& t) {
  std::vector<int64_t> perm(t.ndim());
  for (int32_t i = 0; i < t.ndim(); ++i) perm[i] = i;
  std::swap(perm[t.ndim() - 1], perm[t.ndim() - 2]);
  return t.transpose(perm);
}
Tensor mm(const Tensor& a, const Tensor& b, bool ta = false, bool tb = false) {
  return ops::matmul(a, b, ta, tb);
}
Tensor mul(const Tensor& a, const Tensor& b) { return ops::multiply(a, b); }
Tensor add(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return ops::subtract(a, b); }
Tensor scal(double v, const Tensor& t) { return mul(scalar_like(v, t), t); }
// An n x n 0/1 mask in like's dtype: kind 0 identity, 1 lower (i >= j), 2 strictly lower, 3 upper (i <= j).
Tensor tri_mask(int64_t rows, int64_t cols, int kind, const Tensor& like) {
  Tensor i = ops::arange(0, static_cast<double>(rows), 1, DType::kInt64, like.place()).unsqueeze(1);
  Tensor j = ops::arange(0, static_cast<double>(cols), 1, DType::kInt64, like.place());
  Tensor b = kind == 0   ? ops::equal(i, j)
             : kind == 1 ? ops::greater_equal(i, j)
             : kind == 2 ? ops::greater_than(i, j)
                         : ops::less_equal(i, j);
  return mask(b, like);
}
Tensor eye_like(int64_t n, const Tensor& like) { return tri_mask(n, n, 0, like); }
// [..., n] -> [..., n, n] with v on the diagonal.
Tensor diag_embed(const Tensor& v) { return mul(v.unsqueeze(-1), eye_like(v.dim(-1), v)); }
Tensor call1(const char* op, const std::vector<Tensor>& in, Attrs attrs = {}) {
  return call_op(op, in, std::move(attrs))[0];
}
Tensor inverse_of(const Tensor& a) { return call1("inverse", {a}); }
// op(A)^-1 B for a triangular A (op = transpose when `trans`).
Tensor tri_solve(const Tensor& a, const Tensor& b, bool upper, bool trans, bool unit = false) {
  return call1(
      "triangular_solve", {a, b},
      Attrs{{"upper", int64_t(upper)}, {"transpose", int64_t(trans)}, {"unitriangular", int64_t(unit)}});
}
// A scalar per matrix ([...]) as [..., 1, 1].
Tensor per_matrix(const Tensor& s) { return s.unsqueeze(-1).unsqueeze(-1); }

// ---- gradient rules -------------------------------------------------------------------------------
// d(A^-1) = -A^-1 dA A^-1  =>  gA = -A^-T g A^-T.
std::vector<Tensor> inverse_grad(const GradContext& c) {
  const Tensor& y = OUT(c);
  return {ops::neg(mm(mm(y, g0(c), true, false), y, false, true))};
}
// d det = det * tr(A^-1 dA)  =>  gA = g det A^-T (needs A invertible).
std::vector<Tensor> det_grad(const GradContext& c) {
  return {mul(per_matrix(mul(g0(c), OUT(c))), mT(inverse_of(X(c))))};
}
// Output i's gradient, undefined when it has none. The engine sizes grad_outputs by the outputs that got
// a gradient (GradNode::num_outputs is not set for op nodes), so later entries may be missing.
Tensor gout(const GradContext& c, size_t i) {
  return i < c.grad_outputs.size() ? c.grad_outputs[i] : Tensor();
}
// Only logabsdet is differentiable: gA = g A^-T.
std::vector<Tensor> slogdet_grad(const GradContext& c) {
  Tensor g = gout(c, 1);
  if (!g.defined()) return {Tensor()};
  return {mul(per_matrix(g), mT(inverse_of(X(c))))};
}
// X = A^-1 B: gB = A^-T g, gA = -gB X^T.
std::vector<Tensor> solve_grad(const GradContext& c) {
  Tensor gb = call1("solve", {mT(X(c)), g0(c)});
  Tensor ga = c.needs_grad[0] ? ops::neg(mm(gb, OUT(c), false, true)) : Tensor();
  return {ga, c.needs_grad[1] ? gb : Tensor()};
}
// X = op(A)^-1 B: gB = op(A)^-T g; gA = -gB X^T (or -X gB^T for op = transpose), on A's triangle.
std::vector<Tensor> triangular_solve_grad(const GradContext& c) {
  const bool upper = c.attrs.get_int("upper") != 0, trans = c.attrs.get_int("transpose") != 0;
  const bool unit = c.attrs.get_int("unitriangular") != 0;
  Tensor gb = tri_solve(X(c), g0(c), upper, !trans, unit);
  Tensor ga;
  if (c.needs_grad[0]) {
    ga = trans ? ops::neg(mm(OUT(c), gb, false, true)) : ops::neg(mm(gb, OUT(c), false, true));
    const int64_t n = X(c).dim(-1);
    Tensor m = unit ? (upper ? mT(tri_mask(n, n, 2, ga)) : tri_mask(n, n, 2, ga))
                    : (upper ? tri_mask(n, n, 3, ga) : tri_mask(n, n, 1, ga));
    ga = mul(ga, m);
  }
  return {ga, c.needs_grad[1] ? gb : Tensor()};
}
// A = L L^T: gA = sym(L^-T Phi(L^T gL) L^-1), Phi = lower triangle with the diagonal halved.
std::vector<Tensor> cholesky_grad(const GradContext& c) {
  const bool upper = c.attrs.get_int("upper") != 0;
  Tensor l = upper ? mT(OUT(c)) : OUT(c), gl = upper ? mT(g0(c)) : g0(c);
  const int64_t n = l.dim(-1);
  Tensor lower = tri_mask(n, n, 1, l);
  gl = mul(gl, lower);  // the zero upper triangle is not a function of A
  Tensor half_diag = sub(lower, scal(0.5, eye_like(n, l)));
  Tensor phi = mul(mm(l, gl, true, false), half_diag);
  Tensor x = tri_solve(l, phi, /*upper=*/false, /*trans=*/true);         // L^-T Phi
  Tensor ga = mT(tri_solve(l, mT(x), /*upper=*/false, /*trans=*/true));  // (L^-T X^T)^T = X L^-1
  return {scal(0.5, add(ga, mT(ga)))};
}
// A = QR (m >= n, reduced): M = gR R^T - Q^T gQ; gA = (gQ + Q copyu(M)) R^-T, copyu mirrors the upper
// triangle of M onto the lower one.
std::vector<Tensor> qr_grad(const GradContext& c) {
  const Dims& d = in_dims(c, 0);
  const int64_t m = d[d.size() - 2], n = d[d.size() - 1];
  const bool complete = c.attrs.get_int("complete") != 0;
  OAR_ENFORCE(m >= n && (!complete || m == n), ErrorCode::kUnimplemented,
              "qr: the gradient needs rows >= cols and mode='reduced', got a "
                  << m << "x" << n << " matrix" << (complete ? " in mode='complete'" : ""));
  const Tensor &q = c.outputs[0], &r = c.outputs[1];
  Tensor gq = gout(c, 0), gr = gout(c, 1);
  Tensor mmat;
  if (gr.defined()) mmat = mm(gr, r, false, true);
  if (gq.defined())
    mmat = mmat.defined() ? sub(mmat, mm(q, gq, true, false)) : ops::neg(mm(q, gq, true, false));
  if (!mmat.defined()) return {Tensor()};
  Tensor up = mul(mmat, tri_mask(n, n, 3, mmat));
  Tensor sym = sub(add(up, mT(up)), mul(mmat, eye_like(n, mmat)));
  Tensor b = mm(q, sym);
  if (gq.defined()) b = add(b, gq);
  // B R^-T = (R^-1 B^T)^T
  return {mT(tri_solve(r, mT(b), /*upper=*/true, /*trans=*/false))};
}
// A = U diag(S) V^T (distinct, non-zero singular values):
// gA = U [ (skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS) ] V^T
//      + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),  E_ij = s_j^2 - s_i^2.
std::vector<Tensor> svd_grad(const GradContext& c) {
  const Dims& d = in_dims(c, 0);
  const int64_t m = d[d.size() - 2], n = d[d.size() - 1], k = std::min(m, n);
  const bool full = c.attrs.get_int("full_matrices") != 0;
  OAR_ENFORCE(!full || m == n, ErrorCode::kUnimplemented,
              "svd: the gradient needs full_matrices=False for a non-square matrix, got " << m << "x" << n);
  const Tensor &u = c.outputs[0], &s = c.outputs[1], &vh = c.outputs[2];
  Tensor gu = gout(c, 0), gs = gout(c, 1), gvh = gout(c, 2);
  if (!gu.defined() && !gs.defined() && !gvh.defined()) return {Tensor()};
  Tensor inner;
  if (gs.defined()) inner = diag_embed(gs);
  if (gu.defined() || gvh.defined()) {
    Tensor s2 = mul(s, s);
    Tensor e = sub(s2.unsqueeze(-2), s2.unsqueeze(-1));  // E_ij = s_j^2 - s_i^2
    Tensor eye = eye_like(k, s);
    e = add(e, eye);  // the diagonal of the skew parts is zero; avoid 0/0
    Tensor t;
    if (gu.defined()) {
      Tensor ug = mm(u, gu, true, false);
      t = mul(sub(ug, mT(ug)), s.unsqueeze(-2));
    }
    if (gvh.defined()) {
      Tensor vg = mm(vh, gvh, false, true);  // V^T gV with gV = gVH^T
      Tensor tv = mul(s.unsqueeze(-1), sub(vg, mT(vg)));
      t = t.defined() ? add(t, tv) : tv;
    }
    Tensor te = ops::divide(t, e);
    inner = inner.defined() ? add(inner, te) : te;
  }
  Tensor ga = mm(mm(u, inner), vh);
  if (m > k && gu.defined()) {
    Tensor proj = sub(gu, mm(u, mm(u, gu, true, false)));
    ga = add(ga, mm(ops::divide(proj, s.unsqueeze(-2)), vh));
  }
  if (n > k && gvh.defined()) {
    Tensor proj = sub(gvh, mm(mm(gvh, vh, false, true), vh));
    ga = add(ga, mm(u, ops::divide(proj, s.unsqueeze(-1))));
  }
  return {ga};
}
// A = V diag(w) V^T (distinct eigenvalues): gA = V (diag(gw) + sym(F o V^T gV)) V^T, F_ij = 1/(w_j - w_i).
std::vector<Tensor> eigh_grad(const GradContext& c) {
  const Tensor &w = c.outputs[0], &v = c.outputs[1];
  Tensor gw = gout(c, 0), gv = gout(c, 1);
  if (!gw.defined() && !gv.defined()) return {Tensor()};
  const int64_t n = w.dim(-1);
  Tensor inner;
  if (gv.defined()) {
    Tensor vg = mm(v, gv, true, false);
    Tensor e = add(sub(w.unsqueeze(-2), w.unsqueeze(-1)), eye_like(n, w));
    inner = ops::divide(scal(0.5, sub(vg, mT(vg))), e);
  }
  if (gw.defined()) inner = inner.defined() ? add(inner, diag_embed(gw)) : diag_embed(gw);
  return {mm(mm(v, inner), v, false, true)};
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  def(r, "inverse", {"x"}, {}, infer_square_same).doc =
      "Inverse of each square matrix; singular is an error.";
  def(r, "det", {"x"}, {}, infer_det).doc = "Determinant of each square matrix (LU).";
  OpDef& sl = def(r, "slogdet", {"x"}, {}, infer_slogdet);
  sl.outputs = {"sign", "logabsdet"};
  sl.doc = "Sign and log|det| of each square matrix; a singular matrix gives sign 0, logabsdet -inf.";
  def(r, "solve", {"x", "y"}, {}, infer_solve).doc = "X with x X = y for square x (LU with pivoting).";
  def(r, "triangular_solve", {"x", "y"},
      {int_attr("upper", 1), int_attr("transpose", 0), int_attr("unitriangular", 0)}, infer_solve)
      .doc = "X with op(x) X = y for triangular x, op = transpose when `transpose`.";
  def(r, "cholesky", {"x"}, {int_attr("upper", 0)}, infer_square_same).doc =
      "Cholesky factor L (A = L L^T) or U (A = U^T U) of symmetric positive-definite matrices.";
  OpDef& qr = def(r, "qr", {"x"}, {int_attr("complete", 0)}, infer_qr);
  qr.outputs = {"q", "r"};
  qr.doc = "QR decomposition (Householder); complete=1 gives square Q.";
  OpDef& svd = def(r, "svd", {"x"}, {int_attr("full_matrices", 0)}, infer_svd);
  svd.outputs = {"u", "s", "vh"};
  svd.doc = "Singular value decomposition x = U diag(S) VH, S descending (divide and conquer).";
  OpDef& eigh = def(r, "eigh", {"x"}, {int_attr("lower", 1)}, infer_eigh);
  eigh.outputs = {"eigenvalues", "eigenvectors"};
  eigh.doc = "Eigenvalues (ascending) and eigenvectors of symmetric matrices, read from one triangle.";
}

// Sample inputs for the op suite (op_sample.h): well-conditioned matrices. Ops that read one triangle
// (cholesky, eigh) get no finite-difference check: a perturbation of the other triangle changes nothing
// while their rules return the symmetric gradient.
void register_linalg_samples(OpRegistry& r) {
  using namespace sample;
  add(r, {"inverse", "det", "slogdet"},
      {S("4x4", {spd({4, 4})}), S("batch", {spd({2, 3, 3})}), S("general", {triangular({3, 3})}),
       S("transposed", {transposed(spd({3, 3}))}), S("empty batch", {spd({0, 2, 2})})});
  add(r, "solve",
      {S("matrix rhs", {spd({3, 3}), real({3, 2})}), S("batch", {spd({2, 3, 3}), real({2, 3, 4})}),
       S("transposed", {transposed(spd({4, 4})), flipped(real({4, 2}))})});
  auto T = [](int64_t upper, int64_t transpose, int64_t unit) {
    return AttrList{{"upper", upper}, {"transpose", transpose}, {"unitriangular", unit}};
  };
  add(r, "triangular_solve",
      {S("upper", {triangular({3, 3}), real({3, 2})}, T(1, 0, 0)),
       S("transpose", {triangular({3, 3}), real({3, 2})}, T(1, 1, 0)),
       S("unit", {triangular({4, 4}), real({4, 3})}, T(1, 0, 1)),
       S("lower part of an upper matrix", {transposed(triangular({3, 3})), real({3, 2})}, T(0, 0, 0))});
  add(r, "cholesky",
      {nonsmooth(S("lower", {spd({4, 4})})),
       nonsmooth(S("upper batch", {spd({2, 3, 3})}, {{"upper", int64_t{1}}}))});
  add(r, "qr",
      {S("tall", {real({5, 3}, -1, 1)}), S("complete", {real({4, 3}, -1, 1)}, {{"complete", int64_t{1}}}),
       S("batch", {real({2, 3, 3}, -1, 1)})});
  add(r, "svd",
      {S("tall", {real({5, 3}, -1, 1)}), S("wide batch", {real({2, 3, 4}, -1, 1)}),
       nonsmooth(S("full", {real({4, 3}, -1, 1)}, {{"full_matrices", int64_t{1}}}))});
  add(r, "eigh",
      {nonsmooth(S("lower", {spd({4, 4})})),
       nonsmooth(S("upper batch", {spd({2, 3, 3})}, {{"lower", int64_t{0}}}))});
}

void register_linalg_grads(OpRegistry& r) {
  constexpr uint32_t kNone = 0, kX = 1;
  set_grad(r, "inverse", inverse_grad, kNone, true);
  set_grad(r, "det", det_grad, kX, true);
  set_grad(r, "slogdet", slogdet_grad, kX, false);
  set_grad(r, "solve", solve_grad, kX, true);
  set_grad(r, "triangular_solve", triangular_solve_grad, kX, true);
  set_grad(r, "cholesky", cholesky_grad, kNone, true);
  set_grad(r, "qr", qr_grad, kNone, true);
  set_grad(r, "svd", svd_grad, kNone, true);
  set_grad(r, "eigh", eigh_grad, kNone, true);
}

}  // namespace oar
