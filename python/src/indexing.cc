// Tensor indexing with numpy semantics: basic indexing (ints, slices, None, ...) gives views;
// advanced indexing (bool masks, integer lists / arrays / tensors) gathers with gather_nd, so it is
// differentiable. __setitem__ writes through a view with assign, or with the in-place index_put.
#include <oar/core/autograd.h>
#include <oar/core/ops.h>
#include <oar/ir/static_graph.h>

#include "common.h"

namespace oarpy {
namespace {

using oar::DType;

// One element of an integer or bool tensor, as int64.
int64_t read_int(const oar::Tensor& t) {
  return oar::ops::cast(t, DType::kInt64).cpu().to_vector<int64_t>()[0];
}

[[noreturn]] void bad_index(py::handle idx, const std::string& why) {
  throw py::index_error("oar indexing: index " + std::string(py::repr(idx)) + " " + why);
}

// An advanced index (list / tuple / numpy array / non-scalar tensor) as a tensor on `place`: bool
// (a mask) or int64.
oar::Tensor advanced_tensor(py::handle it, oar::Place place) {
  if (is_tensor(it)) {
    oar::Tensor t = tensor_of(it).t;
    if (t.dtype() == DType::kBool) return t.to(place);
    if (!oar::is_integral(t.dtype()))
      bad_index(it, "must be a bool or integer tensor, got " + std::string(oar::dtype_name(t.dtype())));
    return oar::ops::cast(t, DType::kInt64).to(place);
  }
  py::module_ np = py::module_::import("numpy");
  py::array arr = np.attr("ascontiguousarray")(np.attr("asarray")(it));
  const char kind = arr.dtype().kind();
  if (arr.size() == 0 && kind != 'b') {
    arr = np.attr("ascontiguousarray")(arr.attr("astype")("int64"));
  } else if (kind == 'b') {
    arr = np.attr("ascontiguousarray")(arr.attr("astype")("bool"));
  } else if (kind == 'i' || kind == 'u') {
    arr = np.attr("ascontiguousarray")(arr.attr("astype")("int64"));
  } else {
    bad_index(it, "is not supported: arrays used as indices must be of integer or boolean type");
  }
  oar::Dims dims;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) dims.push_back(arr.shape(i));
  return oar::Tensor::from_host(arr.data(), dims, kind == 'b' ? DType::kBool : DType::kInt64, place);
}

bool is_int_like(py::handle it) {
  PyObject* o = it.ptr();
  if (PyBool_Check(o)) return false;
  if (is_tensor(it)) {
    const oar::Tensor& t = tensor_of(it).t;
    return t.ndim() == 0 && oar::is_integral(t.dtype());
  }
  if (PySequence_Check(o)) return false;
  return PyIndex_Check(o) && !py::isinstance<py::array>(it);
}

bool is_advanced(py::handle it) {
  PyObject* o = it.ptr();
  if (o == Py_None || o == Py_Ellipsis || PySlice_Check(o) || is_int_like(it)) return false;
  return is_tensor(it) || PyList_Check(o) || PyTuple_Check(o) || py::isinstance<py::array>(it) ||
         PyBool_Check(o);
}

int64_t int_of(py::handle it) {
  if (is_tensor(it)) return read_int(tensor_of(it).t);
  Py_ssize_t i = PyNumber_AsSsize_t(it.ptr(), PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
  return i;
}

// The result of resolving an index against a tensor: `view` is the tensor after the basic part, with
// the dims the advanced indices address still in place; `adv_axes` are those dims (in order) and
// `adv` their int64 index tensors, broadcast to one shape.
struct Resolved {
  oar::Tensor view;
  std::vector<int64_t> adv_axes;
  std::vector<oar::Tensor> adv;
};

Resolved resolve(const oar::Tensor& base, py::handle index) {
  py::tuple items;
  if (PyTuple_Check(index.ptr()))
    items = py::reinterpret_borrow<py::tuple>(index);
  else
    items = py::make_tuple(index);
  bool any_adv = false;
  for (auto it : items) any_adv = any_adv || is_advanced(it);

  // Convert advanced items first: a bool mask consumes as many dims as it has.
  std::vector<oar::Tensor> converted(items.size());
  const int32_t ndim = base.ndim();
  int32_t consumed = 0, ellipses = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    py::handle it = items[k];
    PyObject* o = it.ptr();
    if (o == Py_None) continue;
    if (o == Py_Ellipsis) {
      ++ellipses;
      continue;
    }
    if (PyBool_Check(o))
      bad_index(it, "is not supported: a Python bool as an index (use a bool tensor mask)");
    if (is_advanced(it)) {
      converted[k] = advanced_tensor(it, base.place());
      consumed += converted[k].dtype() == DType::kBool ? converted[k].ndim() : 1;
    } else if (PySlice_Check(o) || is_int_like(it)) {
      ++consumed;
    } else {
      bad_index(it, "is not supported; use ints, slices, None, ..., bool masks or integer arrays");
    }
  }
  if (ellipses > 1) throw py::index_error("an index can only have a single ellipsis ('...')");
  if (consumed > ndim)
    throw py::index_error("too many indices for tensor: tensor is " + std::to_string(ndim) +
                          "-dimensional, but " + std::to_string(consumed) + " were indexed");

  Resolved r;
  oar::Tensor t = base;
  std::vector<int64_t> squeeze_axes;
  std::vector<std::pair<int64_t, oar::Tensor>> adv;  // (axis in t, int64 index)
  int64_t d = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    py::handle it = items[k];
    PyObject* o = it.ptr();
    if (o == Py_None) {
      t = t.unsqueeze(d);
      ++d;
    } else if (o == Py_Ellipsis) {
      d += ndim - consumed;
    } else if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw py::error_already_set();
      t = t.slice(d, start, stop, step);
      ++d;
    } else if (converted[k].defined() && converted[k].dtype() == DType::kBool) {
      const oar::Tensor& m = converted[k];
      for (int32_t j = 0; j < m.ndim(); ++j)
        if (m.dims()[j] != t.dims()[static_cast<int32_t>(d) + j])
          throw py::index_error("boolean index did not match indexed tensor along axis " +
                                std::to_string(d + j) + "; size of axis is " +
                                std::to_string(t.dims()[static_cast<int32_t>(d) + j]) +
                                " but size of corresponding boolean axis is " + std::to_string(m.dims()[j]));
      const int64_t count = read_int(oar::ops::sum(m));
      oar::Tensor nz = oar::call_op("nonzero", {m}, oar::Attrs{{"count", count}})[0];  // [count, m.ndim]
      for (int32_t j = 0; j < m.ndim(); ++j) adv.push_back({d + j, nz.slice(1, j, j + 1).squeeze({1})});
      d += m.ndim();
    } else if (converted[k].defined()) {
      adv.push_back({d, converted[k]});
      ++d;
    } else {  // an int
      int64_t i = int_of(it);
      const int64_t n = t.dims()[static_cast<int32_t>(d)];
      if (i < -n || i >= n)
        throw py::index_error("index " + std::to_string(i) + " is out of bounds for axis " +
                              std::to_string(d) + " with size " + std::to_string(n));
      if (i < 0) i += n;
      if (any_adv) {  // numpy: with advanced indices present, an int is a 0-d advanced index
        adv.push_back({d, oar::ops::full({}, static_cast<double>(i), DType::kInt64, base.place())});
      } else {
        t = t.slice(d, i, i + 1, 1);
        squeeze_axes.push_back(d);
      }
      ++d;
    }
  }
  if (!squeeze_axes.empty()) t = t.squeeze(squeeze_axes);
  r.view = t;
  if (adv.empty()) return r;
  // Broadcast the index tensors to one shape.
  oar::Dims b;
  for (auto& [ax, ix] : adv) {
    const oar::Dims& s = ix.dims();
    oar::Dims out;
    const int32_t n = std::max(b.size(), s.size());
    out.resize(n);
    for (int32_t i = 0; i < n; ++i) {
      const int32_t ib = i - (n - b.size()), is = i - (n - s.size());
      const int64_t db = ib >= 0 ? b[ib] : 1, ds = is >= 0 ? s[is] : 1;
      if (db != ds && db != 1 && ds != 1)
        throw py::index_error("shape mismatch: indexing arrays could not be broadcast together with shapes " +
                              b.to_string() + " and " + s.to_string());
      out[i] = db == 1 ? ds : db;
    }
    b = out;
  }
  for (auto& [ax, ix] : adv) {
    r.adv_axes.push_back(ax);
    r.adv.push_back(ix.expand(b));
  }
  return r;
}

// The permutation that moves the advanced axes of `r.view` to the front, and the index [..., k].
struct Gather {
  oar::Tensor front;   // r.view with the advanced axes first
  oar::Tensor index;   // B + [k], int64
  int64_t bdims = 0;   // rank of B
  int64_t insert = 0;  // where numpy puts the B dims in the result (0 when the advanced axes are apart)
};

Gather prepare(const Resolved& r) {
  Gather g;
  const int32_t nd = r.view.ndim();
  std::vector<int64_t> perm = r.adv_axes;
  for (int64_t a = 0; a < nd; ++a)
    if (std::find(r.adv_axes.begin(), r.adv_axes.end(), a) == r.adv_axes.end()) perm.push_back(a);
  g.front = r.view.transpose(perm);
  std::vector<oar::Tensor> cols;
  for (const oar::Tensor& ix : r.adv) cols.push_back(ix.unsqueeze(ix.ndim()));
  g.index = oar::ops::concat(cols, -1);
  g.bdims = r.adv.empty() ? 0 : r.adv[0].ndim();
  bool adjacent = true;
  for (size_t i = 1; i < r.adv_axes.size(); ++i)
    adjacent = adjacent && r.adv_axes[i] == r.adv_axes[i - 1] + 1;
  g.insert = adjacent ? r.adv_axes[0] : 0;
  return g;
}

// The permutation taking the gathered layout (B, rest) to numpy's (rest[:insert], B, rest[insert:]).
std::vector<int64_t> result_perm(const Gather& g, int32_t rank) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < g.insert; ++i) perm.push_back(g.bdims + i);
  for (int64_t i = 0; i < g.bdims; ++i) perm.push_back(i);
  for (int64_t i = g.bdims + g.insert; i < rank; ++i) perm.push_back(i);
  return perm;
}

// A value for __setitem__ as a tensor of `d` on `p`.
oar::Tensor value_tensor(py::handle value, DType d, oar::Place p) {
  if (is_tensor(value)) {
    oar::Tensor v = tensor_of(value).t;
    if (v.dtype() != d) v = oar::ops::cast(v, d);
    return v.to(p);
  }
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o))
    return scalar_tensor(value, d, p);
  py::module_ np = py::module_::import("numpy");
  py::array arr = np.attr("ascontiguousarray")(np.attr("asarray")(value));
  DType src;
  if (!numpy_to_dtype(arr.dtype(), &src))
    throw py::type_error("oar __setitem__: value of numpy dtype " + std::string(py::str(arr.dtype())) +
                         " is not supported");
  oar::Dims dims;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) dims.push_back(arr.shape(i));
  oar::Tensor v = oar::Tensor::from_host(arr.data(), dims, src, p);
  return src == d ? v : oar::ops::cast(v, d);
}

// numpy's broadcast of a value to `shape` (leading dims added, size-1 dims stretched).
oar::Tensor broadcast_value(const oar::Tensor& v, const oar::Dims& shape) {
  oar::Tensor t = v;
  while (t.ndim() > shape.size() && t.dims()[0] == 1) t = t.squeeze({0});
  if (t.ndim() > shape.size())
    throw py::value_error("oar __setitem__: value of shape " + v.dims().to_string() +
                          " cannot be broadcast to the indexed shape " + shape.to_string());
  for (int32_t i = 0; i < t.ndim(); ++i) {
    int64_t a = t.dims()[i], b = shape[shape.size() - t.ndim() + i];
    if (a != b && a != 1)
      throw py::value_error("oar __setitem__: value of shape " + v.dims().to_string() +
                            " cannot be broadcast to the indexed shape " + shape.to_string());
  }
  return t.expand(shape);
}

}  // namespace

oar::Tensor getitem(const oar::Tensor& base, py::handle index) {
  Resolved r = resolve(base, index);
  if (r.adv.empty()) return r.view;
  Gather g = prepare(r);
  oar::Tensor out = oar::call_op("gather_nd", {g.front, g.index})[0];
  if (g.insert == 0) return out;
  return out.transpose(result_perm(g, out.ndim()));
}

// x[index] = value on a static-graph variable. Programs have no views to write through, so the write is
// recorded out of place and x then stands for the result (as Paddle's set_value op writes its input):
// a symbolic bool mask of x's shape becomes `where`; any other index is resolved now, on the flat
// positions of x, into a constant index for index_put on a copy of x.
void setitem_static(const oar::Tensor& base, py::handle index, py::handle value) {
  using oar::ErrorCode;
  OAR_ENFORCE(!base.impl()->symbol->is_view, ErrorCode::kUnimplemented,
              "__setitem__: '" << oar::ir::symbolic_name(base)
                               << "' is a view (reshape/slice/...) of another static-graph variable; writing "
                                  "into it is not supported: index the variable itself");
  oar::Tensor v = value_tensor(value, base.dtype(), base.place());
  oar::Tensor result;
  if (is_tensor(index) && oar::ir::is_symbolic(tensor_of(index).t)) {
    const oar::Tensor mask = tensor_of(index).t;
    OAR_ENFORCE(mask.dtype() == DType::kBool && mask.dims() == base.dims(), ErrorCode::kUnimplemented,
                "__setitem__: a static-graph variable used as the index must be a bool mask with the "
                "indexed variable's shape; got a "
                    << oar::dtype_name(mask.dtype()) << " variable of rank " << mask.ndim());
    result = oar::ops::where(mask, broadcast_value(v, base.dims()), base);
  } else {
    for (int64_t d : base.dims())
      OAR_ENFORCE(!oar::ir::is_unknown_extent(d), ErrorCode::kUnimplemented,
                  "__setitem__: '" << oar::ir::symbolic_name(base)
                                   << "' has an extent known only when the program runs (None / -1); writing "
                                      "into part of it is supported with a bool mask (x[mask] = v) only");
    const int64_t n = base.numel();
    oar::Tensor positions;  // the flat positions the index selects, shape [k, 1]
    oar::Dims region;
    {
      auto held = oar::ir::set_current_builder(nullptr);  // computed now: a constant of the program
      try {
        oar::Tensor ids = oar::ops::arange(0, static_cast<double>(n), 1, DType::kInt64, base.place());
        oar::Tensor picked = getitem(ids.reshape(base.dims()), index);
        region = picked.dims();
        positions = picked.contiguous().reshape({picked.numel(), 1});
      } catch (...) {
        oar::ir::set_current_builder(held);
        throw;
      }
      oar::ir::set_current_builder(held);
    }
    // copy: a recorded op, so the executor hands index_put a contiguous value (contiguous() of a
    // variable records nothing)
    oar::Tensor vb = oar::ops::copy(broadcast_value(v, region)).reshape({positions.dims()[0]});
    oar::Tensor flat = oar::ops::copy(base.reshape({n}));
    oar::call_op("index_put", {flat, positions, vb}, oar::Attrs{{"accumulate", int64_t{0}}});
    result = flat.reshape(base.dims());
  }
  oar::ops::assign(base, result);
}

void setitem(const oar::Tensor& base, py::handle index, py::handle value) {
  if (oar::ir::is_symbolic(base)) return setitem_static(base, index, value);
  Resolved r = resolve(base, index);
  oar::Tensor v = value_tensor(value, base.dtype(), base.place());
  if (r.adv.empty()) {
    // Records the write on base's history when gradients are involved (x[i] = v is differentiable).
    oar::autograd::assign_region(base, r.view, broadcast_value(v, r.view.dims()));
    return;
  }
  Gather g = prepare(r);
  // The gathered layout is B + rest; numpy broadcasts the value against the result's layout.
  oar::Dims gathered;
  for (int32_t i = 0; i < g.index.ndim() - 1; ++i) gathered.push_back(g.index.dims()[i]);
  for (int32_t i = static_cast<int32_t>(r.adv.size()); i < g.front.ndim(); ++i)
    gathered.push_back(g.front.dims()[i]);
  std::vector<int64_t> perm = result_perm(g, gathered.size());
  oar::Dims result;
  for (int64_t p : perm) result.push_back(gathered[static_cast<int32_t>(p)]);
  oar::Tensor vb = broadcast_value(v, result);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  vb = vb.transpose(inv).contiguous();
  const oar::Attrs attrs{{"accumulate", int64_t{0}}};
  if (oar::grad_enabled() && (oar::autograd::requires_grad(base) || oar::autograd::requires_grad(vb))) {
    // g.front is a view of base, which autograd cannot follow a write into; write into a private copy
    // (so index_put's node sees the old values' history), then put that copy back over the region.
    oar::Tensor work = oar::ops::copy(g.front);
    oar::call_op("index_put", {work, g.index.contiguous(), vb}, attrs);
    oar::autograd::assign_region(base, g.front, work);
    return;
  }
  oar::call_op("index_put", {g.front, g.index.contiguous(), vb}, attrs);
}

}  // namespace oarpy
