// Custom ops written against oar/extension.h, covering what tests/python/test_custom_op_core.py and
// tests/unit/test_custom_op.cc check: vector and optional inputs, attributes of every type, several
// outputs, in-place, second-order gradients, per-device kernels, and ops that fail on purpose.
#include <oar/extension.h>

#include <cmath>
#include <stdexcept>
#include <vector>

using oar::Tensor;
using Shape = std::vector<int64_t>;

namespace {

// Runs a CPU implementation for tensors on any device: inputs copied to the host, outputs copied back.
template <typename Fn, typename... T>
std::vector<Tensor> on_host(Fn fn, const T&... in) {
  const oar::Place place = std::get<0>(std::tie(in...)).place();
  if (place.is_cpu()) return fn(in...);
  std::vector<Tensor> outs = fn((in.defined() ? in.copy_to(oar::CPUPlace()) : in)...);
  for (auto& o : outs)
    if (o.defined()) o = o.copy_to(place);
  return outs;
}

template <typename F>
Tensor map1(const Tensor& x, F f) {
  Tensor out = oar::empty(x.shape(), x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "map1", ([&] {
                                const data_t* a = x.data<data_t>();
                                data_t* o = out.data<data_t>();
                                for (int64_t i = 0; i < x.numel(); ++i)
                                  o[i] = static_cast<data_t>(f(a[i], i));
                              }));
  return out;
}

// ---- vector input: out = sum of the list -----------------------------------------------------------
std::vector<Tensor> AddNCPU(const std::vector<Tensor>& xs) {
  OAR_CHECK(!xs.empty(), "custom_add_n needs at least one tensor");
  Tensor out = oar::zeros(xs[0].shape(), xs[0].dtype(), xs[0].place());
  for (const Tensor& x : xs) {
    OAR_CHECK(x.shape() == xs[0].shape(), "custom_add_n: all tensors must have one shape");
    OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_add_n", ([&] {
                                  const data_t* a = x.data<data_t>();
                                  data_t* o = out.data<data_t>();
                                  for (int64_t i = 0; i < x.numel(); ++i) o[i] += a[i];
                                }));
  }
  return {out};
}
std::vector<Tensor> AddN(const std::vector<Tensor>& xs) {
  OAR_CHECK(!xs.empty(), "custom_add_n needs at least one tensor");
  if (xs[0].is_cpu()) return AddNCPU(xs);
  std::vector<Tensor> host;
  for (const auto& x : xs) host.push_back(x.copy_to(oar::CPUPlace()));
  return {AddNCPU(host)[0].copy_to(xs[0].place())};
}
std::vector<Shape> AddNInferShape(const std::vector<Shape>& shapes) { return {shapes.at(0)}; }
std::vector<oar::DataType> AddNInferDtype(const std::vector<oar::DataType>& dtypes) { return {dtypes.at(0)}; }

// ---- optional input: out = alpha * x + (y or 0) ----------------------------------------------------
std::vector<Tensor> AxpyCPU(const Tensor& x, const Tensor& y, float alpha) {
  Tensor out = map1(x, [&](auto v, int64_t) { return alpha * v; });
  if (y.defined()) {
    OAR_CHECK(y.shape() == x.shape(), "custom_axpy: y must have x's shape");
    OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_axpy", ([&] {
                                  const data_t* b = y.data<data_t>();
                                  data_t* o = out.data<data_t>();
                                  for (int64_t i = 0; i < x.numel(); ++i) o[i] += b[i];
                                }));
  }
  return {out};
}
std::vector<Tensor> Axpy(const Tensor& x, const oar::optional<Tensor>& y, float alpha) {
  return on_host([alpha](const Tensor& a, const Tensor& b) { return AxpyCPU(a, b, alpha); }, x,
                 y ? *y : Tensor());
}
// Gradient: dX = alpha * dOut, dY = dOut (only when Y was given; otherwise no tensor).
std::vector<Tensor> AxpyGrad(const oar::optional<Tensor>& y, const Tensor& gout, float alpha) {
  std::vector<Tensor> g = on_host(
      [alpha](const Tensor& go) {
        return std::vector<Tensor>{map1(go, [&](auto v, int64_t) { return alpha * v; })};
      },
      gout);
  g.push_back(y ? on_host(
                      [](const Tensor& go) {
                        return std::vector<Tensor>{map1(go, [](auto v, int64_t) { return v; })};
                      },
                      gout)[0]
                : Tensor());
  return g;
}

// ---- every attribute type: out = x * f * d + i + l + b + len(s) + sum(vi) + sum(vl) + sum(vf) + sum(vd)
std::vector<Tensor> AttrsCPU(const Tensor& x, int i, int64_t l, float f, double d, bool b,
                             const std::string& s, const std::vector<int>& vi, const std::vector<int64_t>& vl,
                             const std::vector<float>& vf, const std::vector<double>& vd) {
  double add = i + static_cast<double>(l) + (b ? 1 : 0) + static_cast<double>(s.size());
  for (int v : vi) add += v;
  for (int64_t v : vl) add += static_cast<double>(v);
  for (float v : vf) add += v;
  for (double v : vd) add += v;
  return {map1(x, [&](auto v, int64_t) { return v * f * d + add; })};
}
std::vector<Tensor> Attrs(const Tensor& x, int i, int64_t l, float f, double d, bool b, const std::string& s,
                          const std::vector<int>& vi, const std::vector<int64_t>& vl,
                          const std::vector<float>& vf, const std::vector<double>& vd) {
  return on_host([&](const Tensor& a) { return AttrsCPU(a, i, l, f, d, b, s, vi, vl, vf, vd); }, x);
}
// Shape from an attribute: out has shape [len(vl)] when mode == "shape", else x's shape.
std::vector<Shape> AttrsInferShape(const Shape& x, int, int64_t, float, double, bool, const std::string&,
                                   const std::vector<int>&, const std::vector<int64_t>&,
                                   const std::vector<float>&, const std::vector<double>&) {
  return {x};
}

// ---- two outputs: (sin x, cos x), with a gradient ---------------------------------------------------
std::vector<Tensor> SinCosCPU(const Tensor& x) {
  return {map1(x, [](auto v, int64_t) { return std::sin(v); }),
          map1(x, [](auto v, int64_t) { return std::cos(v); })};
}
std::vector<Tensor> SinCos(const Tensor& x) { return on_host(SinCosCPU, x); }
std::vector<Tensor> SinCosGradCPU(const Tensor& x, const Tensor& gs, const Tensor& gc) {
  Tensor out = oar::empty(x.shape(), x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_sincos_grad", ([&] {
                                const data_t *a = x.data<data_t>(), *s = gs.data<data_t>(),
                                             *c = gc.data<data_t>();
                                data_t* o = out.data<data_t>();
                                for (int64_t i = 0; i < x.numel(); ++i)
                                  o[i] = std::cos(a[i]) * s[i] - std::sin(a[i]) * c[i];
                              }));
  return {out};
}
std::vector<Tensor> SinCosGrad(const Tensor& x, const Tensor& gs, const Tensor& gc) {
  return on_host(SinCosGradCPU, x, gs, gc);
}

// ---- tanh with first and second order gradients -------------------------------------------------------
std::vector<Tensor> TanhCPU(const Tensor& x) {
  return {map1(x, [](auto v, int64_t) { return std::tanh(v); })};
}
std::vector<Tensor> Tanh(const Tensor& x) { return on_host(TanhCPU, x); }
std::vector<Tensor> TanhGradCPU(const Tensor& out, const Tensor& gout) {
  const Tensor& o = out;
  Tensor r = oar::empty(o.shape(), o.dtype(), o.place());
  OAR_DISPATCH_FLOATING_TYPES(o.dtype(), "custom_tanh_grad", ([&] {
                                const data_t *y = o.data<data_t>(), *g = gout.data<data_t>();
                                data_t* d = r.data<data_t>();
                                for (int64_t i = 0; i < o.numel(); ++i) d[i] = g[i] * (1 - y[i] * y[i]);
                              }));
  return {r};
}
std::vector<Tensor> TanhGrad(const Tensor& out, const Tensor& gout) {
  return on_host(TanhGradCPU, out, gout);
}
// Inputs Out, Out@GRAD, X@GRAD@GRAD; outputs Out@GRAD (d/dOut) and Out@GRAD@GRAD (d/dOut@GRAD).
std::vector<Tensor> TanhDoubleGradCPU(const Tensor& out, const Tensor& gout, const Tensor& ddx) {
  Tensor dout = oar::empty(out.shape(), out.dtype(), out.place());
  Tensor ddout = oar::empty(out.shape(), out.dtype(), out.place());
  OAR_DISPATCH_FLOATING_TYPES(out.dtype(), "custom_tanh_grad_grad", ([&] {
                                const data_t *y = out.data<data_t>(), *g = gout.data<data_t>(),
                                             *dd = ddx.data<data_t>();
                                data_t *a = dout.data<data_t>(), *b = ddout.data<data_t>();
                                for (int64_t i = 0; i < out.numel(); ++i) {
                                  a[i] = -2 * y[i] * g[i] * dd[i];
                                  b[i] = dd[i] * (1 - y[i] * y[i]);
                                }
                              }));
  return {dout, ddout};
}
std::vector<Tensor> TanhDoubleGrad(const Tensor& out, const Tensor& gout, const Tensor& ddx) {
  return on_host(TanhDoubleGradCPU, out, gout, ddx);
}

// ---- cube: custom_cube has a grad op only, custom_cube_dd a grad_grad op too ---------------------------
std::vector<Tensor> CubeCPU(const Tensor& x) {
  return {map1(x, [](auto v, int64_t) { return v * v * v; })};
}
std::vector<Tensor> Cube(const Tensor& x) { return on_host(CubeCPU, x); }
// Inputs X, Out@GRAD; output X@GRAD = 3 x^2 g.
std::vector<Tensor> CubeGradCPU(const Tensor& x, const Tensor& gout) {
  Tensor r = oar::empty(x.shape(), x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_cube_grad", ([&] {
                                const data_t *a = x.data<data_t>(), *g = gout.data<data_t>();
                                data_t* d = r.data<data_t>();
                                for (int64_t i = 0; i < x.numel(); ++i) d[i] = 3 * a[i] * a[i] * g[i];
                              }));
  return {r};
}
std::vector<Tensor> CubeGrad(const Tensor& x, const Tensor& gout) { return on_host(CubeGradCPU, x, gout); }
// Inputs X, Out@GRAD, X@GRAD@GRAD; outputs X@GRAD = 6 x g gg (d/dX) and Out@GRAD@GRAD = 3 x^2 gg
// (d/dOut@GRAD).
std::vector<Tensor> CubeDoubleGradCPU(const Tensor& x, const Tensor& gout, const Tensor& ddx) {
  Tensor dx = oar::empty(x.shape(), x.dtype(), x.place());
  Tensor ddout = oar::empty(x.shape(), x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_cube_dd_grad_grad", ([&] {
                                const data_t *a = x.data<data_t>(), *g = gout.data<data_t>(),
                                             *dd = ddx.data<data_t>();
                                data_t *p = dx.data<data_t>(), *q = ddout.data<data_t>();
                                for (int64_t i = 0; i < x.numel(); ++i) {
                                  p[i] = 6 * a[i] * g[i] * dd[i];
                                  q[i] = 3 * a[i] * a[i] * dd[i];
                                }
                              }));
  return {dx, ddout};
}
std::vector<Tensor> CubeDoubleGrad(const Tensor& x, const Tensor& gout, const Tensor& ddx) {
  return on_host(CubeDoubleGradCPU, x, gout, ddx);
}

// ---- in place: x *= scale --------------------------------------------------------------------------
void ScaleInplace(Tensor& x, float scale) {
  OAR_CHECK(x.is_cpu(), "custom_scale_ runs on the CPU only");
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_scale_", ([&] {
                                data_t* a = x.data<data_t>();
                                for (int64_t i = 0; i < x.numel(); ++i)
                                  a[i] = static_cast<data_t>(a[i] * scale);
                              }));
}
std::vector<Tensor> ScaleInplaceGrad(const Tensor& gout, float scale) {
  return {map1(gout, [&](auto v, int64_t) { return v * scale; })};
}

// ---- one kernel per device type: cpu adds 1, sim adds 2 ----------------------------------------------
std::vector<Tensor> DevTagCPU(const Tensor& x) {
  return {map1(x, [](auto v, int64_t) { return v + 1; })};
}
std::vector<Tensor> DevTagSim(const Tensor& x) {
  OAR_CHECK(x.place().GetDeviceType() == "sim", "the sim kernel got a tensor on ", x.place());
  Tensor h = x.copy_to(oar::CPUPlace());
  return {map1(h, [](auto v, int64_t) { return v + 2; }).copy_to(x.place())};
}

// ---- ops that fail on purpose ------------------------------------------------------------------------
std::vector<Tensor> Identity(const Tensor& x) {
  return on_host(
      [](const Tensor& a) { return std::vector<Tensor>{map1(a, [](auto v, int64_t) { return v; })}; }, x);
}
std::vector<Shape> WrongInferShape(const Shape& x) { return {Shape{x.empty() ? 1 : x[0] + 1}}; }
std::vector<oar::DataType> WrongInferDtype(oar::DataType) { return {oar::DataType::INT32}; }
std::vector<Tensor> Throws(const Tensor&) {
  throw std::runtime_error("boom from the kernel of custom_throws");
}
std::vector<Tensor> Checks(const Tensor& x, int k) {
  OAR_CHECK(k > 0, "k must be positive, got ", k);
  return Identity(x);
}
std::vector<Shape> InferThrows(const Shape&) { throw std::runtime_error("boom from InferShape"); }

}  // namespace

OAR_BUILD_OP(custom_add_n)
    .Inputs({oar::Vec("X")})
    .Outputs({"Out"})
    .SetKernelFn(OAR_KERNEL(AddN))
    .SetInferShapeFn(OAR_INFER_SHAPE(AddNInferShape))
    .SetInferDtypeFn(OAR_INFER_DTYPE(AddNInferDtype));

OAR_BUILD_OP(custom_axpy)
    .Inputs({"X", oar::Optional("Y")})
    .Outputs({"Out"})
    .Attrs({"alpha: float"})
    .SetKernelFn(OAR_KERNEL(Axpy));
OAR_BUILD_GRAD_OP(custom_axpy)
    .Inputs({oar::Optional("Y"), oar::Grad("Out")})
    .Outputs({oar::Grad("X"), oar::Grad(oar::Optional("Y"))})
    .Attrs({"alpha: float"})
    .SetKernelFn(OAR_KERNEL(AxpyGrad));

OAR_BUILD_OP(custom_attrs)
    .Inputs({"X"})
    .Outputs({"Out"})
    .Attrs({"i: int", "l: int64_t", "f: float", "d: double", "b: bool", "s: std::string",
            "vi: std::vector<int>", "vl: std::vector<int64_t>", "vf: std::vector<float>",
            "vd: std::vector<double>"})
    .SetKernelFn(OAR_KERNEL(Attrs))
    .SetInferShapeFn(OAR_INFER_SHAPE(AttrsInferShape));

OAR_BUILD_OP(custom_sincos).Inputs({"X"}).Outputs({"Sin", "Cos"}).SetKernelFn(OAR_KERNEL(SinCos));
OAR_BUILD_GRAD_OP(custom_sincos)
    .Inputs({"X", oar::Grad("Sin"), oar::Grad("Cos")})
    .Outputs({oar::Grad("X")})
    .SetKernelFn(OAR_KERNEL(SinCosGrad));

OAR_BUILD_OP(custom_tanh).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Tanh));
OAR_BUILD_GRAD_OP(custom_tanh)
    .Inputs({"Out", oar::Grad("Out")})
    .Outputs({oar::Grad("X")})
    .SetKernelFn(OAR_KERNEL(TanhGrad));
OAR_BUILD_DOUBLE_GRAD_OP(custom_tanh)
    .Inputs({"Out", oar::Grad("Out"), oar::Grad(oar::Grad("X"))})
    .Outputs({oar::Grad("Out"), oar::Grad(oar::Grad("Out"))})
    .SetKernelFn(OAR_KERNEL(TanhDoubleGrad));

OAR_BUILD_OP(custom_cube).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Cube));
OAR_BUILD_GRAD_OP(custom_cube)
    .Inputs({"X", oar::Grad("Out")})
    .Outputs({oar::Grad("X")})
    .SetKernelFn(OAR_KERNEL(CubeGrad));

OAR_BUILD_OP(custom_cube_dd).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Cube));
OAR_BUILD_GRAD_OP(custom_cube_dd)
    .Inputs({"X", oar::Grad("Out")})
    .Outputs({oar::Grad("X")})
    .SetKernelFn(OAR_KERNEL(CubeGrad));
OAR_BUILD_DOUBLE_GRAD_OP(custom_cube_dd)
    .Inputs({"X", oar::Grad("Out"), oar::Grad(oar::Grad("X"))})
    .Outputs({oar::Grad("X"), oar::Grad(oar::Grad("Out"))})
    .SetKernelFn(OAR_KERNEL(CubeDoubleGrad));

OAR_BUILD_OP(custom_scale_)
    .Inputs({"X"})
    .Outputs({"Out"})
    .Attrs({"scale: float"})
    .SetInplaceMap({{"X", "Out"}})
    .SetKernelFn("cpu", OAR_KERNEL(ScaleInplace));
OAR_BUILD_GRAD_OP(custom_scale_)
    .Inputs({oar::Grad("Out")})
    .Outputs({oar::Grad("X")})
    .Attrs({"scale: float"})
    .SetKernelFn("cpu", OAR_KERNEL(ScaleInplaceGrad));

OAR_BUILD_OP(custom_dev_tag)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn("cpu", OAR_KERNEL(DevTagCPU))
    .SetKernelFn("sim", OAR_KERNEL(DevTagSim));

OAR_BUILD_OP(custom_cpu_only).Inputs({"X"}).Outputs({"Out"}).SetKernelFn("cpu", OAR_KERNEL(Identity));
OAR_BUILD_OP(custom_bad_shape)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(OAR_KERNEL(Identity))
    .SetInferShapeFn(OAR_INFER_SHAPE(WrongInferShape));
OAR_BUILD_OP(custom_bad_dtype)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(OAR_KERNEL(Identity))
    .SetInferDtypeFn(OAR_INFER_DTYPE(WrongInferDtype));
OAR_BUILD_OP(custom_throws).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Throws));
OAR_BUILD_OP(custom_checks).Inputs({"X"}).Outputs({"Out"}).Attrs({"k: int"}).SetKernelFn(OAR_KERNEL(Checks));
OAR_BUILD_OP(custom_infer_throws)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(OAR_KERNEL(Identity))
    .SetInferShapeFn(OAR_INFER_SHAPE(InferThrows));

// Row sums of a 2-D X. The grad op declares no InferShape and takes Out@GRAD before X: the default gives
// X@GRAD the shape of X (Paddle's rule), not the first input's.
std::vector<Tensor> RowSumCPU(const Tensor& x) {
  OAR_CHECK(x.shape().size() == 2, "custom_rowsum: X must be 2-D");
  const int64_t n = x.shape()[0], m = x.shape()[1];
  Tensor r = oar::empty({n}, x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_rowsum", ([&] {
                                const data_t* a = x.data<data_t>();
                                data_t* d = r.data<data_t>();
                                for (int64_t i = 0; i < n; ++i) {
                                  d[i] = 0;
                                  for (int64_t j = 0; j < m; ++j) d[i] += a[i * m + j];
                                }
                              }));
  return {r};
}
std::vector<Tensor> RowSum(const Tensor& x) { return on_host(RowSumCPU, x); }
std::vector<Tensor> RowSumGradCPU(const Tensor& gout, const Tensor& x) {
  const int64_t n = x.shape()[0], m = x.shape()[1];
  Tensor r = oar::empty(x.shape(), x.dtype(), x.place());
  OAR_DISPATCH_FLOATING_TYPES(x.dtype(), "custom_rowsum_grad", ([&] {
                                const data_t* g = gout.data<data_t>();
                                data_t* d = r.data<data_t>();
                                for (int64_t i = 0; i < n * m; ++i) d[i] = g[i / m];
                              }));
  return {r};
}
std::vector<Tensor> RowSumGrad(const Tensor& gout, const Tensor& x) {
  return on_host(RowSumGradCPU, gout, x);
}
std::vector<Shape> RowSumInferShape(const Shape& x) { return {Shape{x.empty() ? 1 : x[0]}}; }

OAR_BUILD_OP(custom_rowsum)
    .Inputs({"X"})
    .Outputs({"Out"})
    .SetKernelFn(OAR_KERNEL(RowSum))
    .SetInferShapeFn(OAR_INFER_SHAPE(RowSumInferShape));
OAR_BUILD_GRAD_OP(custom_rowsum)
    .Inputs({oar::Grad("Out"), "X"})
    .Outputs({oar::Grad("X")})
    .SetKernelFn(OAR_KERNEL(RowSumGrad));
