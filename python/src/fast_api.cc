// C fast paths of everyday Python API calls (decision 134): x.reshape([..]), oar.full(..), x.add_(y),
// F.cross_entropy(..), ...
//
// Each fast path wraps one Python function of the API, its fallback, and takes its signature (the
// parameter names). A call binds its arguments to those names in C; the path's `impl` then either runs
// the common case (plain Python ints and lists, tensors, the default options) with the same core calls,
// in the same order, as the Python function, or declines, and the call goes to the Python function
// unchanged. So arguments the impl does not know, every unusual type (a Tensor as a shape, a program
// variable's unknown extent, a TensorArray, ...) and every error message stay the Python function's;
// an impl raises only what the same core call raises on the Python path. The functions are builtin
// functions (for methods: method descriptors on Tensor), called through vectorcall: no pybind11
// dispatcher, no Python frame.
#include <oar/core/autograd.h>
#include <oar/core/ops.h>
#include <oar/ir/static_graph.h>

#include <cstring>
#include <utility>

#include "common.h"

namespace oarpy {
namespace {

using oar::DType;

constexpr int kMaxParams = 12;
constexpr int kMaxSlots = 160;  // 81 in use; a full table raises at import, naming this constant

struct Slot;
// Runs the call from its bound arguments (a[i]: parameter i, null when not passed) into *out (a new
// reference); false leaves the call to the fallback.
using Impl = bool (*)(const Slot& s, PyObject* const* a, PyObject** out);

struct Slot {
  Impl impl = nullptr;
  PyObject* fallback = nullptr;     // the Python function
  std::vector<PyObject*> params;    // its parameter names (interned str), in order
  const OpHandle* op = nullptr;     // the op of the op-based impls, as the Python function's _C.Op
  const oar::OpDef* def = nullptr;  // the same op's definition, for impls that run it directly
  double value = 0;                 // zeros / ones: the fill value
  bool flag = false;  // unary ops: int32/int64 inputs go to the fallback; in-place binary: true division
  std::string name, doc;
  PyMethodDef fdef{}, mdef{};  // as a function, as a Tensor method
};
Slot g_slots[kMaxSlots];
int g_num_slots = 0;

// Binds a vectorcall's arguments to the parameters; false when there are too many, or a keyword is
// unknown or given twice (the fallback then raises Python's error).
bool bind(const Slot& s, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** a) {
  const size_t np = s.params.size();
  if (static_cast<size_t>(nargs) > np) return false;
  for (size_t i = 0; i < np; ++i) a[i] = i < static_cast<size_t>(nargs) ? args[i] : nullptr;
  if (!kwnames) return true;
  const Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nk; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    size_t i = 0;
    while (i < np && s.params[i] != key) ++i;  // keywords are usually interned
    if (i == np) {
      i = 0;
      while (i < np && PyUnicode_Compare(s.params[i], key) != 0) ++i;
      if (PyErr_Occurred()) PyErr_Clear();
    }
    if (i == np || a[i]) return false;
    a[i] = args[nargs + k];
  }
  return true;
}

PyObject* run_slot(const Slot& s, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* a[kMaxParams];
  PyObject* out = nullptr;
  try {
    if (bind(s, args, nargs, kwnames, a) && s.impl(s, a, &out)) return out;
  } catch (...) {
    return raise_cpp_exception();
  }
  return PyObject_Vectorcall(s.fallback, args, static_cast<size_t>(nargs), kwnames);
}

template <size_t I>
PyObject* slot_function(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return run_slot(g_slots[I], args, nargs, kwnames);
}

// A method: self goes first, as when the Python function is a method.
template <size_t I>
PyObject* slot_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  PyObject* buf[kMaxParams + 1];
  if (nargs + nk + 1 > kMaxParams + 1) {
    PyObject* bound = PyMethod_New(g_slots[I].fallback, self);
    if (!bound) return nullptr;
    PyObject* r = PyObject_Vectorcall(bound, args, static_cast<size_t>(nargs), kwnames);
    Py_DECREF(bound);
    return r;
  }
  buf[0] = self;
  for (Py_ssize_t i = 0; i < nargs + nk; ++i) buf[i + 1] = args[i];
  return run_slot(g_slots[I], buf, nargs + 1, kwnames);
}

template <size_t... I>
void set_entries(std::index_sequence<I...>) {
  ((g_slots[I].fdef.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&slot_function<I>)),
    g_slots[I].mdef.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&slot_method<I>))),
   ...);
}

// ---- argument readers: true only for the plain types the fast paths take ----------------------------
// While a program is built (static mode, to_static) the composite functions keep their Python path.
inline bool building() { return oar::ir::current_builder() != nullptr; }

inline bool given(PyObject* v) { return v && v != Py_None; }

// A Python int (not bool, which the Python functions refuse in shapes) that fits in int64.
bool plain_int(PyObject* o, int64_t* v) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  *v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || (*v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// A list or tuple of Python ints, or one Python int (as the Python functions take it).
bool plain_ints(PyObject* o, std::vector<int64_t>* out) {
  int64_t v;
  if (plain_int(o, &v)) {
    out->assign(1, v);
    return true;
  }
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > oar::kMaxDims) return false;
  PyObject** items = PySequence_Fast_ITEMS(o);
  out->resize(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!plain_int(items[i], &(*out)[static_cast<size_t>(i)])) return false;
  return true;
}

// A Python float, or an int a double holds exactly (float(v) of the Python functions).
bool plain_number(PyObject* o, double* v) {
  if (PyFloat_CheckExact(o)) {
    *v = PyFloat_AS_DOUBLE(o);
    return true;
  }
  int64_t i;
  if (!plain_int(o, &i) || i > (int64_t{1} << 53) || i < -(int64_t{1} << 53)) return false;
  *v = static_cast<double>(i);
  return true;
}

// A list or tuple of tensors (not a TensorArray or another iterable).
bool tensor_list(PyObject* o) {
  if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!is_tensor(items[i])) return false;
  return true;
}

inline bool done(py::object r, PyObject** out) {
  *out = r.release().ptr();
  return true;
}
inline bool done(oar::Tensor t, PyObject** out) { return done(wrap(std::move(t)), out); }

// A dtype argument: None/absent is the default dtype; else what to_dtype takes (it raises for the rest,
// as the Python functions' _C.to_dtype does first).
DType dtype_arg(PyObject* v) { return given(v) ? to_dtype(v) : default_dtype(); }

template <size_t N>
py::object run(const Slot& s, PyObject* const (&args)[N]) {
  return call_op(*s.op, args, N);
}

// ---- shape manipulation (python/oar/tensor/manipulation.py) -----------------------------------------
// reshape(x, shape) / expand(x, shape) / broadcast_to(x, shape)
bool reshape_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> shape;
  if (!is_tensor(a[0]) || !a[1] || !plain_ints(a[1], &shape)) return false;
  return done(fast_tensor(a[0]).reshape(oar::Dims(shape)), out);
}
bool expand_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> shape;
  if (!is_tensor(a[0]) || !a[1] || !plain_ints(a[1], &shape)) return false;
  return done(fast_tensor(a[0]).expand(oar::Dims(shape)), out);
}

// flatten(x, start_axis=0, stop_axis=-1): the Python function's checks; program variables decline.
bool flatten_impl(const Slot&, PyObject* const* a, PyObject** out) {
  int64_t s = 0, e = -1;
  if (!is_tensor(a[0]) || (a[1] && !plain_int(a[1], &s)) || (a[2] && !plain_int(a[2], &e))) return false;
  const oar::Tensor& x = fast_tensor(a[0]);
  // a program variable's dims hold the recording sentinel for unknown extents (x.shape shows -1)
  if (oar::ir::is_symbolic(x)) return false;
  const oar::Dims& d = x.dims();
  const int64_t nd = d.size();
  if (nd == 0) return done(x.reshape(oar::Dims{1}), out);
  if (s < 0) s += nd;
  if (e < 0) e += nd;
  if (s < 0 || s >= nd || e < 0 || e >= nd || s > e) return false;
  oar::Dims shape;
  int64_t n = 1;
  for (int64_t i = 0; i < nd; ++i) {
    if (i < s || i > e) {
      shape.push_back(d[static_cast<int32_t>(i)]);
      continue;
    }
    if (d[static_cast<int32_t>(i)] < 0) return false;
    n *= d[static_cast<int32_t>(i)];
    if (i == e) shape.push_back(n);
  }
  return done(x.reshape(shape), out);
}

// transpose(x, perm)
bool transpose_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> perm;
  if (!is_tensor(a[0]) || !a[1] || !plain_ints(a[1], &perm)) return false;
  return done(fast_tensor(a[0]).transpose(perm), out);
}

// unsqueeze(x, axis): an int, or a list inserted in order
bool unsqueeze_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> axes;
  if (!is_tensor(a[0]) || !a[1] || !plain_ints(a[1], &axes)) return false;
  oar::Tensor x = fast_tensor(a[0]);
  for (int64_t ax : axes) x = x.unsqueeze(ax);
  if (axes.empty()) return done(py::reinterpret_borrow<py::object>(a[0]), out);  // as the Python loop
  return done(std::move(x), out);
}

// squeeze(x, axis=None)
bool squeeze_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> axes;
  if (!is_tensor(a[0]) || (given(a[1]) && !plain_ints(a[1], &axes))) return false;
  return done(fast_tensor(a[0]).squeeze(axes), out);
}

// concat(x, axis=0): the op on the list
bool concat_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  int64_t axis = 0;
  if (!a[0] || !tensor_list(a[0]) || (a[1] && !plain_int(a[1], &axis))) return false;
  py::object list = PyList_CheckExact(a[0]) ? py::reinterpret_borrow<py::object>(a[0])
                                            : py::reinterpret_steal<py::object>(PySequence_List(a[0]));
  if (!list) throw py::error_already_set();
  py::int_ ax(axis);
  return done(run(s, {list.ptr(), ax.ptr()}), out);
}

// stack(x, axis=0): concat of the inputs unsqueezed at axis (same shapes, axis in range, else declines)
bool stack_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  int64_t axis = 0;
  if (!a[0] || !tensor_list(a[0]) || (a[1] && !plain_int(a[1], &axis))) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(a[0]);
  PyObject** items = PySequence_Fast_ITEMS(a[0]);
  if (n == 0) return false;
  const oar::Dims& d0 = fast_tensor(items[0]).dims();
  const int64_t rank = d0.size() + 1;
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  for (Py_ssize_t i = 1; i < n; ++i)  // checked before any view is made (a program would record it)
    if (fast_tensor(items[i]).dims() != d0) return false;
  py::list parts(n);
  for (Py_ssize_t i = 0; i < n; ++i)
    parts[static_cast<size_t>(i)] = wrap(fast_tensor(items[i]).unsqueeze(axis));
  py::int_ ax(axis);
  return done(run(s, {parts.ptr(), ax.ptr()}), out);
}

// ---- creation (python/oar/tensor/creation.py, random.py) --------------------------------------------
const oar::OpDef* g_fill_def = nullptr;

// The fill op, with the attributes _C.Op("fill", "shape", "value", "dtype") sets from the same values.
oar::Tensor run_fill(std::vector<int64_t> shape, double value, DType dtype, oar::Place place) {
  oar::Attrs attrs{{"shape", std::move(shape)}, {"value", value}, {"dtype", static_cast<int64_t>(dtype)}};
  oar::Tensor out;
  oar::run_op(*g_fill_def, nullptr, 0, attrs, place, &out);
  return out;
}

// full(shape, fill_value, dtype=None) / zeros(shape, dtype=None), ones(..) with the slot's value
bool full_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> shape;
  double v;
  if (!a[0] || !a[1] || !plain_number(a[1], &v)) return false;
  const DType dt = dtype_arg(a[2]);
  if (!plain_ints(a[0], &shape)) return false;
  return done(run_fill(std::move(shape), v, dt, current_place()), out);
}
bool filled_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> shape;
  if (!a[0]) return false;
  const DType dt = dtype_arg(a[1]);
  if (!plain_ints(a[0], &shape)) return false;
  return done(run_fill(std::move(shape), s.value, dt, current_place()), out);
}

// arange(start=0, end=None, step=1, dtype=None): Python ints and floats
bool arange_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  PyObject* v[3] = {a[0], a[1], a[2]};
  if (!given(v[1])) {  // arange(n): 0 .. n
    if (a[1] && a[1] != Py_None) return false;
    v[1] = v[0];
    v[0] = nullptr;
  }
  double d[3] = {0.0, 0.0, 1.0};
  bool all_int = true;
  for (int i = 0; i < 3; ++i) {
    if (!v[i]) continue;  // the default (an int)
    if (!plain_number(v[i], &d[i])) return false;
    all_int = all_int && PyLong_CheckExact(v[i]);
  }
  if (!v[1]) return false;  // arange() with no bound: the Python function's error
  py::object dt =
      given(a[3]) ? dtype_object(to_dtype(a[3])) : dtype_object(all_int ? DType::kInt64 : default_dtype());
  py::float_ x0(d[0]), x1(d[1]), x2(d[2]);
  return done(run(s, {x0.ptr(), x1.ptr(), x2.ptr(), dt.ptr()}), out);
}

// randn(shape, dtype=None) / rand(..): the global generator, as _C._normal / _C._uniform with seed 0
template <bool kNormal>
bool random_impl(const Slot&, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> shape;
  if (!a[0]) return false;
  const DType dt = dtype_arg(a[1]);
  if (!plain_ints(a[0], &shape)) return false;
  const oar::Dims dims(shape);
  return done(kNormal ? oar::ops::normal(dims, 0.0, 1.0, dt, 0, current_place())
                      : oar::ops::uniform(dims, 0.0, 1.0, dt, 0, current_place()),
              out);
}

// ---- math (python/oar/tensor/math.py) -----------------------------------------------------------------
// unary ops fn(x): int32/int64 inputs of the exp family (flag) go to the fallback, which casts first
inline bool int_input(const oar::Tensor& t) {
  return t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64;
}

bool unary_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!is_tensor(a[0]) || (s.flag && int_input(fast_tensor(a[0])))) return false;
  return done(run(s, {a[0]}), out);
}

// reductions fn(x, axis=None, keepdim=False) (a Tensor axis goes to the fallback, which reads it)
bool reduce_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!a[0] || (a[1] && is_tensor(a[1]))) return false;
  return done(run(s, {a[0], a[1] ? a[1] : Py_None, a[2] ? a[2] : Py_False}), out);
}

// In-place forms x.add_(y), x.exp_(), ...: the op, then the result written into x (_write_back's
// checks: a result of another dtype or shape goes to the fallback, which raises).
bool write_back(PyObject* self, const oar::Tensor& y, PyObject** out) {
  const oar::Tensor& x = fast_tensor(self);
  if (y.dtype() != x.dtype() || y.dims() != x.dims()) return false;
  oar::ops::assign(x, y);
  Py_INCREF(self);
  *out = self;
  return true;
}
bool inplace_binary_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!is_tensor(a[0]) || !a[1]) return false;
  if (!is_tensor(a[1]) && !PyFloat_CheckExact(a[1]) && !PyLong_CheckExact(a[1])) return false;
  // as the Op call of math.add etc.: promoted inputs, the current place
  oar::Tensor in[2];
  if (!promote_pair(a[0], a[1], s.flag, in[0], in[1])) return false;
  oar::Attrs attrs;
  oar::Tensor r;
  oar::run_op(*s.def, in, 2, attrs, current_place(), &r);
  return write_back(a[0], r, out);
}
bool inplace_unary_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!is_tensor(a[0]) || (s.flag && int_input(fast_tensor(a[0])))) return false;
  oar::Attrs attrs;
  oar::Tensor r;
  oar::run_op(*s.def, &fast_tensor(a[0]), 1, attrs, current_place(), &r);
  return write_back(a[0], r, out);
}

// ---- nn.functional ----------------------------------------------------------------------------------
// layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05): normalized_shape matching the
// trailing dims (else the fallback raises); missing weight/bias are ones/zeros, as in norm.py.

bool layer_norm_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  std::vector<int64_t> ns;
  double eps = 1e-5;
  if (building() || !is_tensor(a[0]) || !a[1] || !plain_ints(a[1], &ns) ||
      (a[4] && !plain_number(a[4], &eps)))
    return false;
  for (int i = 2; i <= 3; ++i)
    if (given(a[i]) && !is_tensor(a[i])) return false;
  const oar::Tensor& x = fast_tensor(a[0]);
  const int64_t k = static_cast<int64_t>(ns.size()), nd = x.ndim();
  if (k == 0 || k > nd) return false;
  for (int64_t i = 0; i < k; ++i)
    if (x.dims()[static_cast<int32_t>(nd - k + i)] != ns[static_cast<size_t>(i)]) return false;
  // norm.py's _const: ones / zeros of x's dtype on x's place
  oar::Tensor in[3] = {x, given(a[2]) ? fast_tensor(a[2]) : run_fill(ns, 1.0, x.dtype(), x.place()),
                       given(a[3]) ? fast_tensor(a[3]) : run_fill(ns, 0.0, x.dtype(), x.place())};
  oar::Attrs attrs{{"begin_norm_axis", nd - k}, {"epsilon", eps}};
  oar::Tensor outs[oar::kMaxOpOutputs];
  oar::run_op(*s.def, in, 3, attrs, current_place(), outs);
  return done(std::move(outs[0]), out);
}

// cross_entropy(input, label, weight=None, ignore_index=-100, reduction='mean', soft_label=False,
// axis=-1, use_softmax=True, label_smoothing=0.0): the common case of loss.py's hard-label path (no
// weight, softmax, no smoothing, class axis last, and no mean over an ignore_index >= 0).
const OpHandle *g_mean = nullptr, *g_sum = nullptr;

bool is_false(PyObject* v) { return !v || v == Py_False; }
bool is_true(PyObject* v) { return !v || v == Py_True; }

bool cross_entropy_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  int64_t ignore = -100, axis = -1;
  double smoothing = 0.0;
  if (building() || !is_tensor(a[0]) || !is_tensor(a[1]) || given(a[2]) ||
      (a[3] && !plain_int(a[3], &ignore)) || !is_false(a[5]) || (a[6] && !plain_int(a[6], &axis)) ||
      !is_true(a[7]) || (a[8] && (!plain_number(a[8], &smoothing) || smoothing != 0.0)))
    return false;
  int reduction = 0;  // mean, sum, none
  if (a[4]) {
    if (!PyUnicode_Check(a[4])) return false;
    if (PyUnicode_CompareWithASCIIString(a[4], "sum") == 0)
      reduction = 1;
    else if (PyUnicode_CompareWithASCIIString(a[4], "none") == 0)
      reduction = 2;
    else if (PyUnicode_CompareWithASCIIString(a[4], "mean") != 0)
      return false;
  }
  const oar::Tensor& x = fast_tensor(a[0]);
  const oar::Tensor& label = fast_tensor(a[1]);
  const int64_t nd = x.ndim();
  if (nd < 1 || (axis != -1 && axis != nd - 1) || !int_input(label)) return false;
  if (reduction == 0 && ignore >= 0) return false;  // the mean over the labels not ignored
  // the label: input's shape without the class axis, or with it of size 1
  const oar::Dims& xd = x.dims();
  const oar::Dims& ld = label.dims();
  oar::Dims want(xd.data(), static_cast<int32_t>(nd - 1));
  oar::Tensor lab;
  if (ld == want) {
    lab = label;
  } else {
    oar::Dims with_one = xd;
    with_one[static_cast<int32_t>(nd - 1)] = 1;
    if (ld != with_one) return false;
    lab = label.squeeze({nd - 1});
  }
  const int64_t c = xd[static_cast<int32_t>(nd - 1)];
  py::object lab1 = wrap(lab.reshape(oar::Dims{-1}));  // in loss.py's order
  py::object x2 = wrap(x.reshape(oar::Dims{-1, c}));
  py::int_ ig(ignore);
  // No gradient to come: the kernel skips writing the softmax (loss_only, decision 137), as loss.py does.
  PyObject* loss_only = oar::autograd::stop_gradient(x) || !oar::grad_enabled() ? Py_True : Py_False;
  py::object r = run(s, {x2.ptr(), lab1.ptr(), ig.ptr(), loss_only});
  py::object loss = py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(r.ptr(), 0));
  if (reduction == 2) return done(fast_tensor(loss).reshape(ld), out);
  py::list all;
  PyObject* args[3] = {loss.ptr(), all.ptr(), Py_False};
  return done(call_op(reduction == 1 ? *g_sum : *g_mean, args, 3), out);
}

// linear(x, weight, bias=None): x @ weight (+ bias), as common.py: a 2-D weight whose rows match x's last
// dim (else the fallback raises), the matmul op, then the + operator with the bias.
bool linear_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!is_tensor(a[0]) || !a[1] || !is_tensor(a[1]) || (given(a[2]) && !is_tensor(a[2]))) return false;
  const oar::Tensor& x = fast_tensor(a[0]);
  const oar::Tensor& w = fast_tensor(a[1]);
  if (w.ndim() != 2 || x.ndim() < 1 || x.dims()[x.ndim() - 1] != w.dims()[0]) return false;
  py::object r = run(s, {a[0], a[1], Py_False, Py_False});
  if (!given(a[2])) return done(std::move(r), out);
  PyObject* sum = PyNumber_Add(r.ptr(), a[2]);
  if (!sum) throw py::error_already_set();
  *out = sum;
  return true;
}

// cast(x, dtype) / Tensor.astype(dtype): the cast op on the arguments as given (the functions' whole body)
bool cast_impl(const Slot& s, PyObject* const* a, PyObject** out) {
  if (!is_tensor(a[0]) || !a[1]) return false;
  return done(run(s, {a[0], a[1]}), out);
}

// ---- the kinds -------------------------------------------------------------------------------------
struct Kind {
  const char* name;
  Impl impl;
};
constexpr Kind kKinds[] = {
    {"reshape", reshape_impl},
    {"expand", expand_impl},
    {"flatten", flatten_impl},
    {"transpose", transpose_impl},
    {"unsqueeze", unsqueeze_impl},
    {"squeeze", squeeze_impl},
    {"concat", concat_impl},
    {"stack", stack_impl},
    {"full", full_impl},
    {"filled", filled_impl},
    {"arange", arange_impl},
    {"randn", random_impl<true>},
    {"rand", random_impl<false>},
    {"unary", unary_impl},
    {"reduce", reduce_impl},
    {"inplace_binary", inplace_binary_impl},
    {"inplace_unary", inplace_unary_impl},
    {"layer_norm", layer_norm_impl},
    {"cross_entropy", cross_entropy_impl},
    {"linear", linear_impl},
    {"cast", cast_impl},
};

}  // namespace

void init_fast_api(py::module_& m) {
  set_entries(std::make_index_sequence<kMaxSlots>());
  g_fill_def = &oar::OpRegistry::get().at("fill");
  g_mean = internal_op_handle("mean", {"axis", "keepdim"});
  g_sum = internal_op_handle("sum", {"axis", "keepdim"});
  m.def(
      "_fast_api",
      [](const std::string& kind, py::object fallback, const std::vector<std::string>& params, py::object op,
         const std::vector<std::string>& op_attrs, double value, bool flag) {
        if (g_num_slots == kMaxSlots)
          throw std::runtime_error("_fast_api: all slots are taken (raise kMaxSlots)");
        if (params.size() > static_cast<size_t>(kMaxParams))
          throw py::value_error("_fast_api: at most " + std::to_string(kMaxParams) + " parameters");
        const Kind* k = nullptr;
        for (const Kind& c : kKinds)
          if (kind == c.name) k = &c;
        if (!k) throw py::value_error("_fast_api: unknown kind '" + kind + "'");
        Slot& s = g_slots[g_num_slots++];
        s.impl = k->impl;
        s.fallback = fallback.inc_ref().ptr();  // kept for the process, as the slot
        for (const auto& p : params) s.params.push_back(PyUnicode_InternFromString(p.c_str()));
        if (!op.is_none()) {
          s.op = internal_op_handle(op.cast<std::string>(), op_attrs);
          s.def = &oar::OpRegistry::get().at(op.cast<std::string>());
        }
        s.value = value;
        s.flag = flag;
        s.name = py::str(fallback.attr("__name__"));
        py::object doc = fallback.attr("__doc__");
        s.doc = doc.is_none() ? std::string() : doc.cast<std::string>();
        for (PyMethodDef* d : {&s.fdef, &s.mdef}) {
          d->ml_name = s.name.c_str();
          d->ml_flags = METH_FASTCALL | METH_KEYWORDS;
          d->ml_doc = s.doc.empty() ? nullptr : s.doc.c_str();
        }
        py::object fn = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&s.fdef, nullptr, nullptr));
        py::object method = py::reinterpret_steal<py::object>(PyDescr_NewMethod(g_tensor_type, &s.mdef));
        if (!fn || !method) throw py::error_already_set();
        return py::make_tuple(fn, method);
      },
      py::arg("kind"), py::arg("fallback"), py::arg("params"), py::arg("op") = py::none(),
      py::arg("op_attrs") = std::vector<std::string>(), py::arg("value") = 0.0, py::arg("flag") = false,
      "(function, Tensor method): fast paths of the Python function `fallback` (whose parameter names are "
      "`params`), which runs every call the kind's C path declines (decision 134).");
}

}  // namespace oarpy
