// The generic op entry point (oar._C.Op), Paddle's type promotion, and the Tensor operators.
//
// An Op handle is made once per Python function at import time: it holds the op's definition and its
// attribute schema, so a call converts each argument once by the schema's type and goes straight to
// oar::run_op. Attributes go by name: keywords name them, and positional arguments after the inputs are
// the attributes the handle declared when it was made, in that order (`Op("cumsum", "axis", "flatten")`),
// resolved to schema slots once, there, so a reordered schema cannot misroute them. A handle declaring
// no names takes attributes by keyword only. `place=` picks the device of ops without inputs (creation
// ops).
#include <oar/core/amp.h>
#include <oar/core/dispatch_hooks.h>

#include "common.h"

#include <oar/core/autograd.h>
#include <oar/core/ops.h>
#include <oar/ir/static_graph.h>

#include <algorithm>
#include <cstring>

namespace oarpy {
namespace {

using oar::DType;

// ---- type promotion -----------------------------------------------------------------------------
// Kinds of Python scalars, in promotion order.
enum ScalarKind { kNotScalar = -1, kBoolScalar = 0, kIntScalar = 1, kFloatScalar = 2, kComplexScalar = 3 };

PyObject* g_numpy_generic = nullptr;  // numpy.generic, for numpy scalars

// The kind of a Python (or numpy) scalar; numpy scalars are replaced by the equivalent Python scalar.
ScalarKind scalar_kind(py::handle& h, py::object& holder) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return kBoolScalar;
  if (PyLong_Check(o)) return kIntScalar;
  if (PyFloat_Check(o)) return kFloatScalar;
  if (PyComplex_Check(o)) return kComplexScalar;
  if (g_numpy_generic && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_numpy_generic))) {
    holder = py::reinterpret_borrow<py::object>(h).attr("item")();
    h = holder;
    return scalar_kind(h, holder);
  }
  return kNotScalar;
}

int rank_of(DType d) {  // for same-category promotion
  switch (d) {
    case DType::kBool: return 0;
    case DType::kUInt8: return 1;
    case DType::kInt8: return 1;
    case DType::kInt16: return 2;
    case DType::kInt32: return 3;
    case DType::kInt64: return 4;
    case DType::kFloat16: return 1;
    case DType::kBFloat16: return 1;
    case DType::kFloat32: return 2;
    case DType::kFloat64: return 3;
    case DType::kComplex64: return 2;
    case DType::kComplex128: return 3;
  }
  return 0;
}

// Promotion between two tensors: bool < ints < floats < complex; within floats the wider one
// (float16 with bfloat16 gives float32); within ints the wider one (uint8 with int8 gives int16).
DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const bool ca = oar::is_complex(a), cb = oar::is_complex(b);
  if (ca || cb) {
    if (ca && cb) return rank_of(a) >= rank_of(b) ? a : b;
    DType c = ca ? a : b, r = ca ? b : a;
    return (c == DType::kComplex128 || r == DType::kFloat64) ? DType::kComplex128 : DType::kComplex64;
  }
  const bool fa = oar::is_floating(a), fb = oar::is_floating(b);
  if (fa && fb) {
    if ((a == DType::kFloat16 && b == DType::kBFloat16) || (a == DType::kBFloat16 && b == DType::kFloat16))
      return DType::kFloat32;
    return rank_of(a) >= rank_of(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // two integer types
  if ((a == DType::kUInt8 && b == DType::kInt8) || (a == DType::kInt8 && b == DType::kUInt8)) return DType::kInt16;
  return rank_of(a) >= rank_of(b) ? a : b;
}

// Paddle 2.x with a Python scalar: an int scalar keeps the tensor's dtype, a float scalar keeps a float
// tensor's dtype and turns an integer tensor into the default float dtype.
DType promote_with_scalar(DType t, ScalarKind k) {
  switch (k) {
    case kBoolScalar: return t;
    case kIntScalar: return t == DType::kBool ? DType::kInt64 : t;
    case kFloatScalar: return (oar::is_floating(t) || oar::is_complex(t)) ? t : default_dtype();
    case kComplexScalar:
      if (oar::is_complex(t)) return t;
      return t == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
    default: return t;
  }
}

inline oar::Tensor cast_to(const oar::Tensor& t, DType d) { return t.dtype() == d ? t : oar::ops::cast(t, d); }

// Two float dtypes that auto_cast's dispatcher hook brings to one dtype itself (by the op's list) when an
// auto_cast block runs the low dtype on their device: promoting here first would cast twice.
inline bool amp_mixes(const oar::Tensor& a, const oar::Tensor& b) {
  auto low_or_f32 = [](DType d) { return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32; };
  return low_or_f32(a.dtype()) && low_or_f32(b.dtype()) && oar::dispatch_hook_engaged(oar::HookSlot::kAmp) &&
         a.place() == b.place() && oar::amp::casts_on(a.place().type);
}

}  // namespace

// Brings (a, b) — tensors or Python scalars, at least one a tensor — to one dtype. `true_divide` makes
// integer results the default float dtype (Paddle's `/`). False when neither is usable.
bool promote_pair(py::handle a, py::handle b, bool true_divide, oar::Tensor& x, oar::Tensor& y) {
  const bool at = is_tensor(a), bt = is_tensor(b);
  if (at && bt) {
    const oar::Tensor &ta = fast_tensor(a), &tb = fast_tensor(b);
    if (ta.dtype() != tb.dtype() && amp_mixes(ta, tb)) {  // auto_cast's hook picks the dtype
      x = ta;
      y = tb;
      return true;
    }
    DType r = promote_types(ta.dtype(), tb.dtype());
    if (true_divide && !oar::is_floating(r) && !oar::is_complex(r)) r = default_dtype();
    x = cast_to(ta, r);
    y = cast_to(tb, r);
    return true;
  }
  if (!at && !bt) return false;
  py::handle s = at ? b : a;
  py::object holder;
  ScalarKind k = scalar_kind(s, holder);
  if (k == kNotScalar) return false;
  const oar::Tensor& t = fast_tensor(at ? a : b);
  DType r = promote_with_scalar(t.dtype(), k);
  if (true_divide && !oar::is_floating(r) && !oar::is_complex(r)) r = default_dtype();
  oar::Tensor st = scalar_tensor(s, r, t.place());
  if (at) {
    x = cast_to(t, r);
    y = std::move(st);
  } else {
    x = std::move(st);
    y = cast_to(t, r);
  }
  return true;
}

// ---- the generic entry point --------------------------------------------------------------------
struct AttrSlot {
  const oar::AttrDef* def;
  std::string name;
  bool is_dtype;
};

struct OpHandle {
  const oar::OpDef* def = nullptr;
  std::vector<AttrSlot> attrs;       // every attribute of the schema, for keywords
  std::vector<uint32_t> positional;  // the declared names, as indices into attrs, in declared order
  bool promote = false;      // elementwise binary: inputs may be scalars; dtypes are promoted
  bool true_divide = false;  // divide: integer results become the default float dtype
};

namespace {

const char* type_name(py::handle h) { return Py_TYPE(h.ptr())->tp_name; }

[[noreturn]] void attr_type_error(const OpHandle& h, const AttrSlot& s, const char* expected, py::handle v) {
  throw py::type_error(std::string(h.def->name) + ": argument '" + s.name + "' expects " + expected + ", got " +
                       type_name(v) + " " + std::string(py::repr(v)));
}

int64_t to_int(const OpHandle& h, const AttrSlot& s, py::handle v) {
  PyObject* o = v.ptr();
  if (PyLong_Check(o)) {  // bool included
    int overflow = 0;
    long long r = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) throw py::value_error(std::string(h.def->name) + ": argument '" + s.name + "' is out of range");
    return r;
  }
  if (PyIndex_Check(o) && !PyFloat_Check(o)) {  // numpy ints, one-element integer tensors
    Py_ssize_t r = PyNumber_AsSsize_t(o, PyExc_OverflowError);
    if (r == -1 && PyErr_Occurred()) throw py::error_already_set();
    return r;
  }
  attr_type_error(h, s, "an int", v);
}

double to_float(const OpHandle& h, const AttrSlot& s, py::handle v) {
  PyObject* o = v.ptr();
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
  if (PyLong_Check(o) || PyNumber_Check(o)) {
    double r = PyFloat_AsDouble(o);
    if (r == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      attr_type_error(h, s, "a number", v);
    }
    return r;
  }
  attr_type_error(h, s, "a number", v);
}

void set_attr(oar::Attrs& attrs, const OpHandle& h, const AttrSlot& s, py::handle v) {
  if (v.is_none()) return;  // the schema's default
  switch (s.def->type) {
    case oar::AttrType::kInt:
      attrs.set(s.def->name, s.is_dtype ? static_cast<int64_t>(to_dtype(v)) : to_int(h, s, v));
      return;
    case oar::AttrType::kFloat: attrs.set(s.def->name, to_float(h, s, v)); return;
    case oar::AttrType::kInts: {
      std::vector<int64_t> out;
      if (is_tensor(v)) {
        py::list values = py::reinterpret_borrow<py::object>(v).attr("tolist")();
        for (auto e : values) out.push_back(to_int(h, s, e));
      } else if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
        py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
        out.reserve(seq.size());
        for (auto e : seq) out.push_back(to_int(h, s, e));
      } else {
        out.push_back(to_int(h, s, v));
      }
      attrs.set(s.def->name, std::move(out));
      return;
    }
    case oar::AttrType::kFloats: {
      std::vector<double> out;
      if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
        for (auto e : py::reinterpret_borrow<py::sequence>(v)) out.push_back(to_float(h, s, e));
      } else {
        out.push_back(to_float(h, s, v));
      }
      attrs.set(s.def->name, std::move(out));
      return;
    }
    case oar::AttrType::kString:
      if (!PyUnicode_Check(v.ptr())) attr_type_error(h, s, "a str", v);
      attrs.set(s.def->name, v.cast<std::string>());
      return;
  }
}

py::object wrap_outputs(const oar::OpDef& def, oar::Tensor* outs) {
  const size_t n = def.outputs.size();
  if (n == 1) return wrap(std::move(outs[0]));
  py::tuple t(n);
  for (size_t i = 0; i < n; ++i) t[i] = wrap(std::move(outs[i]));
  return std::move(t);
}

[[noreturn]] void positional_error(const OpHandle& h, size_t got) {
  const std::string op = h.def->name;
  if (h.positional.empty())
    throw py::type_error(op +
                         ": takes attributes by keyword only (this Op handle declares no positional "
                         "attribute names), got " +
                         std::to_string(got) + " positional argument(s) after its inputs");
  std::string names;
  for (uint32_t i : h.positional) names += (names.empty() ? "" : ", ") + h.attrs[i].name;
  throw py::type_error(op + ": takes at most " + std::to_string(h.positional.size()) +
                       " positional attribute(s) after its inputs (" + names + "), got " +
                       std::to_string(got));
}

// Paddle's eager argument parser takes a tuple whose first item is a Tensor as that Tensor (so
// paddle.mean((out, mask)) is the mean of out). While a program is built Paddle refuses it, and so does oar.
py::handle paddle_tuple_head(py::handle a) {
  if (!PyTuple_Check(a.ptr()) || PyTuple_GET_SIZE(a.ptr()) == 0 || oar::ir::current_builder() != nullptr) return a;
  py::handle first = PyTuple_GET_ITEM(a.ptr(), 0);
  return is_tensor(first) ? first : a;
}

}  // namespace

// The handle's call: args[0..nargs) positional, kwargs a dict or null.
py::object call_op(const OpHandle& h, PyObject* const* args, size_t nargs, PyObject* kwargs) {
  const oar::OpDef& def = *h.def;
  oar::Tensor small[4];
  std::vector<oar::Tensor> large;
  oar::Tensor* inputs = small;
  int32_t n_in = 0;
  size_t pos = 0;
  if (def.variadic) {
    if (nargs < 1) throw py::type_error(std::string(def.name) + ": missing the list of input tensors");
    py::handle seq = args[0];
    if (is_tensor(seq) || !PySequence_Check(seq.ptr()))
      throw py::type_error(std::string(def.name) + ": '" + def.inputs[0] + "' must be a list or tuple of tensors, got " +
                           type_name(seq));
    for (auto e : py::reinterpret_borrow<py::sequence>(seq)) {
      if (!is_tensor(e))
        throw py::type_error(std::string(def.name) + ": '" + def.inputs[0] + "[" + std::to_string(large.size()) +
                             "]' must be a Tensor, got " + type_name(e));
      large.push_back(fast_tensor(e));
    }
    inputs = large.data();
    n_in = static_cast<int32_t>(large.size());
    pos = 1;
  } else {
    const size_t want = def.inputs.size();
    if (nargs < want)
      throw py::type_error(std::string(def.name) + ": missing input '" + def.inputs[nargs] + "'");
    if (h.promote && want == 2) {
      if (!promote_pair(args[0], args[1], h.true_divide, small[0], small[1]))
        throw py::type_error(std::string(def.name) + ": expects tensors or Python scalars for x and y, got " +
                             type_name(args[0]) + " and " + type_name(args[1]));
    } else {
      if (want > 4) {  // more inputs than the small buffer holds
        large.resize(want);
        inputs = large.data();
      }
      for (size_t i = 0; i < want; ++i) {
        py::handle a = is_tensor(args[i]) ? py::handle(args[i]) : paddle_tuple_head(args[i]);
        if (!is_tensor(a))
          throw py::type_error(std::string(def.name) + ": input '" + def.inputs[i] + "' must be a Tensor, got " +
                               type_name(a));
        inputs[i] = fast_tensor(a);
      }
    }
    n_in = static_cast<int32_t>(want);
    pos = want;
  }
  if (nargs - pos > h.positional.size()) positional_error(h, nargs - pos);
  oar::Attrs attrs;
  for (size_t j = 0; pos + j < nargs; ++j) set_attr(attrs, h, h.attrs[h.positional[j]], py::handle(args[pos + j]));
  oar::Place place = current_place();
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    for (auto kv : py::reinterpret_borrow<py::dict>(kwargs)) {
      std::string key = kv.first.cast<std::string>();
      if (key == "place") {
        place = to_place(kv.second);
        continue;
      }
      const AttrSlot* slot = nullptr;
      for (const auto& s : h.attrs)
        if (s.name == key) slot = &s;
      if (!slot) throw py::type_error(std::string(def.name) + ": got an unexpected keyword argument '" + key + "'");
      if (attrs.find(slot->def->name))
        throw py::type_error(std::string(def.name) + ": got multiple values for argument '" + key + "'");
      set_attr(attrs, h, *slot, kv.second);
    }
  }
  oar::Tensor outs[oar::kMaxOpOutputs];
  oar::run_op(def, inputs, n_in, attrs, place, outs);
  return wrap_outputs(def, outs);
}

namespace {

// Op objects are called through this tp_call slot, not through pybind11's dispatcher for __call__.
PyObject* op_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
  try {
    auto* inst = reinterpret_cast<py::detail::instance*>(self);
    const OpHandle& h = *inst->get_value_and_holder().value_ptr<OpHandle>();
    return call_op(h, &PyTuple_GET_ITEM(args, 0), static_cast<size_t>(PyTuple_GET_SIZE(args)), kwargs)
        .release()
        .ptr();
  } catch (...) {
    return raise_cpp_exception();
  }
}

// Op(name, *attr_names): the attribute names the handle will receive positionally, checked against the
// schema now (at import) so that a schema change fails there rather than misrouting a call: an unknown
// or repeated name, or a required attribute missing from a non-empty list, raises naming op and attribute.
OpHandle make_handle(const std::string& name, const py::args& attr_names) {
  OpHandle h;
  h.def = &oar::OpRegistry::get().at(name);
  for (const auto& a : h.def->attrs) h.attrs.push_back({&a, a.name, std::strcmp(a.name, "dtype") == 0});
  auto schema_names = [&] {
    std::string all;
    for (const auto& s : h.attrs) all += (all.empty() ? "" : ", ") + s.name;
    return all.empty() ? std::string("none") : all;
  };
  for (auto n : attr_names) {
    if (!PyUnicode_Check(n.ptr()))
      throw py::type_error("Op('" + name + "'): attribute names must be str, got " + type_name(n));
    const std::string key = n.cast<std::string>();
    uint32_t i = 0;
    while (i < h.attrs.size() && h.attrs[i].name != key) ++i;
    if (i == h.attrs.size())
      throw py::value_error("Op('" + name + "'): the op has no attribute '" + key +
                            "' (its attributes: " + schema_names() + ")");
    if (std::find(h.positional.begin(), h.positional.end(), i) != h.positional.end())
      throw py::value_error("Op('" + name + "'): attribute '" + key + "' is declared twice");
    h.positional.push_back(i);
  }
  if (!h.positional.empty())
    for (uint32_t i = 0; i < h.attrs.size(); ++i)
      if (h.attrs[i].def->required &&
          std::find(h.positional.begin(), h.positional.end(), i) == h.positional.end())
        throw py::value_error(
            "Op('" + name + "'): the required attribute '" + h.attrs[i].name +
            "' is not among the declared positional attributes; declare it so every call passes it");
  static const char* kPromoting[] = {"add",         "subtract",    "multiply",     "divide",        "floor_divide",
                                     "remainder",   "maximum",     "minimum",      "pow",           "equal",
                                     "not_equal",   "less_than",   "less_equal",   "greater_than",  "greater_equal",
                                     "logical_and", "logical_or",  "logical_xor",  "matmul"};
  for (const char* p : kPromoting)
    if (name == p) h.promote = true;
  h.true_divide = name == "divide";
  return h;
}

}  // namespace

const OpHandle* internal_op_handle(const std::string& name, const std::vector<std::string>& attr_names) {
  py::tuple names(attr_names.size());
  size_t i = 0;
  for (const auto& n : attr_names) names[i++] = py::str(n);
  return new OpHandle(make_handle(name, py::reinterpret_borrow<py::args>(names)));  // kept for the process
}

namespace {

// ---- operators ----------------------------------------------------------------------------------
struct BinaryOp {
  const oar::OpDef* def;
  bool true_divide;
};

py::object run_binary(const BinaryOp& op, py::handle a, py::handle b) {
  oar::Tensor in[2];
  if (!promote_pair(a, b, op.true_divide, in[0], in[1]))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  oar::Attrs attrs;
  oar::Tensor out;
  oar::run_op(*op.def, in, 2, attrs, in[0].place(), &out);
  return wrap(std::move(out));
}

// x op= y: Paddle's in-place operators. The result must keep x's dtype and shape; it is written back
// into x's memory (so views of x see it) and x takes the write's autograd history.
py::object run_inplace(const BinaryOp& op, const char* symbol, py::handle self, py::handle other) {
  oar::Tensor in[2];
  if (!promote_pair(self, other, op.true_divide, in[0], in[1]))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  const oar::Tensor& x = fast_tensor(self);
  oar::Attrs attrs;
  oar::Tensor out;
  oar::run_op(*op.def, in, 2, attrs, in[0].place(), &out);
  if (out.dtype() != x.dtype())
    throw py::type_error(std::string(symbol) + ": the result dtype " + oar::dtype_name(out.dtype()) +
                         " cannot be written in place into a " + oar::dtype_name(x.dtype()) +
                         " tensor; use the out-of-place operator");
  if (out.dims() != x.dims())
    throw py::value_error(std::string(symbol) + ": the result shape " + out.dims().to_string() +
                          " differs from the in-place target's shape " + x.dims().to_string() +
                          " (broadcasting may not enlarge it)");
  oar::ops::assign(x, out);
  return py::reinterpret_borrow<py::object>(self);
}

py::object run_unary(const oar::OpDef& def, const oar::Tensor& x) {
  oar::Attrs attrs;
  oar::Tensor out;
  oar::run_op(def, &x, 1, attrs, x.place(), &out);
  return wrap(std::move(out));
}

// ---- number slots ---------------------------------------------------------------------------------
// Python runs `a + b` through the type's number slots (nb_add, ...). pybind11 leaves them to CPython's
// generic slot functions, which look `__add__` up in the type's dict and go through pybind11's argument
// dispatcher; these slots run the same code as the methods (run_binary / run_inplace) straight away.
// CPython passes a binary slot the operands in source order, whichever of them is the Tensor (so one
// function serves `a + b` and the reflected `2 + a`), and an in-place slot the Tensor first. Python
// subclasses of Tensor keep CPython's generic slots (they may override the methods), and CPython's rules
// for subclasses and NotImplemented are unchanged. The methods stay, for explicit calls such as
// Tensor.__add__(a, b) and for subclasses.
enum SlotOp {
  kSlotAdd,
  kSlotSub,
  kSlotMul,
  kSlotDiv,
  kSlotFloorDiv,
  kSlotMod,
  kSlotPow,
  kSlotMatMul,
  kSlotAnd,
  kSlotOr,
  kSlotXor,
  kNumSlotOps
};
// The arithmetic operators, in SlotOp order: their methods, reflected methods, in-place methods (Paddle
// has seven; for @, &, |, ^ Python rebinds instead) and number slots all come from this table.
struct OperatorDef {
  const char* method;
  const char* rmethod;
  const char* imethod;
  const char* symbol;  // of the in-place form, for its errors
  const char* op;
};
constexpr OperatorDef kOperators[kNumSlotOps] = {
    {"__add__", "__radd__", "__iadd__", "+=", "add"},
    {"__sub__", "__rsub__", "__isub__", "-=", "subtract"},
    {"__mul__", "__rmul__", "__imul__", "*=", "multiply"},
    {"__truediv__", "__rtruediv__", "__itruediv__", "/=", "divide"},
    {"__floordiv__", "__rfloordiv__", "__ifloordiv__", "//=", "floor_divide"},
    {"__mod__", "__rmod__", "__imod__", "%=", "remainder"},
    {"__pow__", "__rpow__", "__ipow__", "**=", "pow"},
    {"__matmul__", "__rmatmul__", nullptr, nullptr, "matmul"},
    // Paddle's &, |, ^ and ~ are the bitwise ops (on bool tensors the same as the logical ones)
    {"__and__", "__rand__", nullptr, nullptr, "bitwise_and"},
    {"__or__", "__ror__", nullptr, nullptr, "bitwise_or"},
    {"__xor__", "__rxor__", nullptr, nullptr, "bitwise_xor"},
};
BinaryOp g_slot_ops[kNumSlotOps];

// The C++ exception in flight, raised as the Python exception pybind11 would raise for it: a pybind11
// function rethrows it, so the module's exception translators (oar::Error -> ValueError, ...) apply.
thread_local std::exception_ptr t_slot_exception;
PyObject* g_rethrow = nullptr;

}  // namespace

PyObject* raise_cpp_exception() noexcept {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    t_slot_exception = std::current_exception();
    Py_XDECREF(PyObject_CallNoArgs(g_rethrow));  // returns NULL with the error set
  }
  return nullptr;
}

namespace {

template <int I>
PyObject* nb_binary(PyObject* a, PyObject* b) noexcept {
  try {
    return run_binary(g_slot_ops[I], a, b).release().ptr();
  } catch (...) {
    return raise_cpp_exception();
  }
}

template <int I>
PyObject* nb_inplace(PyObject* self, PyObject* other) noexcept {
  try {
    return run_inplace(g_slot_ops[I], kOperators[I].symbol, self, other).release().ptr();
  } catch (...) {
    return raise_cpp_exception();
  }
}

// pow(a, b, mod) has no tensor form: NotImplemented, as from the generic slot, makes it a TypeError.
PyObject* nb_power(PyObject* a, PyObject* b, PyObject* mod) noexcept {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return nb_binary<kSlotPow>(a, b);
}
PyObject* nb_inplace_power(PyObject* self, PyObject* other, PyObject* mod) noexcept {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return nb_inplace<kSlotPow>(self, other);
}

// -x, abs(x), ~x: the Tensor is the only operand.
enum UnarySlotOp { kSlotNeg, kSlotAbs, kSlotInvert, kNumUnarySlotOps };
struct UnaryOperatorDef {
  const char* method;
  const char* op;
};
constexpr UnaryOperatorDef kUnaryOperators[kNumUnarySlotOps] = {
    {"__neg__", "neg"}, {"__abs__", "abs"}, {"__invert__", "bitwise_not"}};
const oar::OpDef* g_unary_slot_ops[kNumUnarySlotOps];

template <int I>
PyObject* nb_unary(PyObject* self) noexcept {
  try {
    return run_unary(*g_unary_slot_ops[I], fast_tensor(self)).release().ptr();
  } catch (...) {
    return raise_cpp_exception();
  }
}

// Called after the operator methods are defined (defining a method resets its slot to the generic one).
void install_number_slots() {
  g_rethrow = py::cpp_function([] {
                std::exception_ptr e = std::move(t_slot_exception);
                std::rethrow_exception(e);
              })
                  .release()
                  .ptr();
  PyNumberMethods* nb = g_tensor_type->tp_as_number;
  nb->nb_add = nb_binary<kSlotAdd>;
  nb->nb_subtract = nb_binary<kSlotSub>;
  nb->nb_multiply = nb_binary<kSlotMul>;
  nb->nb_true_divide = nb_binary<kSlotDiv>;
  nb->nb_floor_divide = nb_binary<kSlotFloorDiv>;
  nb->nb_remainder = nb_binary<kSlotMod>;
  nb->nb_power = nb_power;
  nb->nb_matrix_multiply = nb_binary<kSlotMatMul>;
  nb->nb_and = nb_binary<kSlotAnd>;
  nb->nb_or = nb_binary<kSlotOr>;
  nb->nb_xor = nb_binary<kSlotXor>;
  nb->nb_inplace_add = nb_inplace<kSlotAdd>;
  nb->nb_inplace_subtract = nb_inplace<kSlotSub>;
  nb->nb_inplace_multiply = nb_inplace<kSlotMul>;
  nb->nb_inplace_true_divide = nb_inplace<kSlotDiv>;
  nb->nb_inplace_floor_divide = nb_inplace<kSlotFloorDiv>;
  nb->nb_inplace_remainder = nb_inplace<kSlotMod>;
  nb->nb_inplace_power = nb_inplace_power;
  nb->nb_negative = nb_unary<kSlotNeg>;
  nb->nb_absolute = nb_unary<kSlotAbs>;
  nb->nb_invert = nb_unary<kSlotInvert>;
  PyType_Modified(g_tensor_type);
}

}  // namespace

void init_ops(py::module_& m) {
  try {
    g_numpy_generic = py::object(py::module_::import("numpy").attr("generic")).release().ptr();
  } catch (const py::error_already_set&) {
    PyErr_Clear();
  }

  py::class_<OpHandle> op_class(m, "Op",
                       "Op(name, *attr_names): a handle on one op definition; calling it runs the op: "
                       "op(*inputs, *attrs, place=None, **attrs), where the positional attrs are the ones "
                       "named in attr_names, in that order; any attribute may be passed by keyword.");
  op_class.def(py::init(&make_handle), py::arg("name"))  // then *attr_names
      .def_property_readonly("name", [](const OpHandle& h) { return h.def->name; })
      .def_property_readonly("inputs", [](const OpHandle& h) {
        std::vector<std::string> v(h.def->inputs.begin(), h.def->inputs.end());
        return v;
      })
      .def_property_readonly("attrs", [](const OpHandle& h) {
        std::vector<std::string> v;
        for (const auto& s : h.attrs) v.push_back(s.name);
        return v;
      })
      .def_property_readonly("positional", [](const OpHandle& h) {
        std::vector<std::string> v;  // the names taken positionally after the inputs, in order
        for (uint32_t i : h.positional) v.push_back(h.attrs[i].name);
        return v;
      })
      .def("__call__",
           [](const OpHandle& h, const py::args& args, const py::kwargs& kwargs) {
             return call_op(h, &PyTuple_GET_ITEM(args.ptr(), 0), args.size(), kwargs.ptr());
           })
      .def("__repr__", [](const OpHandle& h) { return std::string("<oar op ") + h.def->name + ">"; });
  // Calls skip pybind11's dispatcher (__call__ stays, for explicit Op.__call__(h, ...)); set after the
  // methods, since defining __call__ resets the slot.
  reinterpret_cast<PyTypeObject*>(op_class.ptr())->tp_call = op_tp_call;
  PyType_Modified(reinterpret_cast<PyTypeObject*>(op_class.ptr()));

  m.def("op_names", [] {
    std::vector<std::string> v;
    const auto& reg = oar::OpRegistry::get();
    for (int32_t i = 0; i < reg.size(); ++i)
      if (!reg.at(i).custom) v.push_back(reg.at(i).name);  // the core's ops, not a custom op library's
    return v;
  });
  m.def("_promote", [](py::handle a, py::handle b) {
    oar::Tensor x, y;
    if (!promote_pair(a, b, false, x, y))
      throw py::type_error(std::string("expected tensors or Python scalars, got ") + type_name(a) + " and " + type_name(b));
    return py::make_tuple(PyTensor{std::move(x)}, PyTensor{std::move(y)});
  });
  m.def("promote_types", [](py::handle a, py::handle b) { return dtype_object(promote_types(to_dtype(a), to_dtype(b))); });

  // Random numbers through the C++ API, which owns the global generator (seed and counter offset).
  m.def("_uniform", [](const std::vector<int64_t>& shape, double min, double max, py::handle dtype, uint64_t seed,
                       py::handle place) {
    return PyTensor{oar::ops::uniform(oar::Dims(shape), min, max, to_dtype(dtype), seed, to_place(place))};
  });
  m.def("_normal", [](const std::vector<int64_t>& shape, double mean, double std, py::handle dtype, uint64_t seed,
                      py::handle place) {
    return PyTensor{oar::ops::normal(oar::Dims(shape), mean, std, to_dtype(dtype), seed, to_place(place))};
  });
  m.def("seed", [](uint64_t s) { oar::ops::manual_seed(s); }, py::arg("seed"));
  m.def("_reserve_random", [](uint64_t count) {
    uint64_t seed = 0, offset = 0;
    oar::ops::reserve_random(count, &seed, &offset);
    return py::make_tuple(seed, offset);
  });

  // Tensor operators, straight to run_op with the op definitions looked up here, once.
  py::class_<PyTensor> cls = py::reinterpret_borrow<py::class_<PyTensor>>(m.attr("Tensor"));
  auto& reg = oar::OpRegistry::get();
  for (int i = 0; i < kNumSlotOps; ++i) {
    const OperatorDef& d = kOperators[i];
    const BinaryOp op{&reg.at(d.op), i == kSlotDiv};
    g_slot_ops[i] = op;
    cls.def(
        d.method, [op](py::handle self, py::handle other) { return run_binary(op, self, other); },
        py::is_operator());
    cls.def(
        d.rmethod, [op](py::handle self, py::handle other) { return run_binary(op, other, self); },
        py::is_operator());
    if (d.imethod) {
      const char* symbol = d.symbol;
      cls.def(
          d.imethod,
          [op, symbol](py::handle self, py::handle other) { return run_inplace(op, symbol, self, other); },
          py::is_operator());
    }
  }
  static const char* const kComparisons[][2] = {
      {"__eq__", "equal"},      {"__ne__", "not_equal"},    {"__lt__", "less_than"},
      {"__le__", "less_equal"}, {"__gt__", "greater_than"}, {"__ge__", "greater_equal"},
  };
  for (const auto& c : kComparisons) {
    const BinaryOp op{&reg.at(c[1]), false};
    cls.def(
        c[0], [op](py::handle self, py::handle other) { return run_binary(op, self, other); },
        py::is_operator());
  }
  // Writes src into dst's memory (dst may be a view); with gradients involved dst takes the history.
  m.def("_assign", [](const PyTensor& dst, const PyTensor& src) { oar::ops::assign(dst.t, src.t); });
  // x[index] = value, where view = x[index] (basic indexing).
  m.def("_assign_region", [](const PyTensor& base, const PyTensor& view, const PyTensor& value) {
    oar::autograd::assign_region(base.t, view.t, value.t);
  });
  for (int i = 0; i < kNumUnarySlotOps; ++i) {
    const oar::OpDef* op = &reg.at(kUnaryOperators[i].op);
    g_unary_slot_ops[i] = op;
    cls.def(kUnaryOperators[i].method, [op](py::handle self) { return run_unary(*op, fast_tensor(self)); });
  }
  // __hash__ (by identity, as Paddle's tensors) was defined before __eq__, so pybind11 keeps it.
  install_number_slots();
}

}  // namespace oarpy
