// The Tensor class: numpy in and out, properties, scalars; indexing is in indexing.cc.
#include "common.h"

#include <oar/ir/static_graph.h>
#include <oar/sdk/types.h>  // float16 / bfloat16 conversions, shared with the plugins

#include <oar/core/runtime.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <new>

namespace oarpy {

PyTypeObject* g_tensor_type = nullptr;

// ---- the Python objects of new tensors ----------------------------------------------------------
// pybind11's cast of a new value looks its type up by typeid, builds the instance and registers it in a
// global map (so that a C++ pointer cast back to Python finds its object), and its dealloc looks the type
// up and deregisters again: about a thousand instructions per eager op. A PyTensor is only ever
// returned by value (never by pointer or reference), so wrap() builds the instance itself in the layout
// pybind11 uses for a one-type class (value pointer, then the unique_ptr holder that owns the value),
// left unregistered (pybind11 skips deregistration for such an instance), and tensor_dealloc frees such
// instances directly. Every other instance (made through pybind11 casts or Tensor(...)) goes through
// pybind11's own dealloc. init_tensor checks once that pybind11 lays a Tensor out that way; if not,
// both fall back to pybind11's paths.
namespace {
using Holder = std::unique_ptr<PyTensor>;
bool g_fast_instances = false;
destructor g_pybind_dealloc = nullptr;

Holder& holder_of(py::detail::instance* inst) {
  return *reinterpret_cast<Holder*>(&inst->simple_value_holder[1]);
}

// Mirrors pybind11_object_dealloc for an instance wrap() made (same steps, in the same order).
void tensor_dealloc(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  if (!inst->simple_layout || inst->simple_instance_registered || !inst->simple_holder_constructed ||
      inst->has_patients) {
    g_pybind_dealloc(self);
    return;
  }
  PyTypeObject* type = Py_TYPE(self);
  if (PyType_HasFeature(type, Py_TPFLAGS_HAVE_GC)) PyObject_GC_UnTrack(self);
#if PY_VERSION_HEX >= 0x030D0000
  if (PyType_HasFeature(type, Py_TPFLAGS_MANAGED_DICT)) PyObject_ClearManagedDict(self);
#endif
  holder_of(inst).~Holder();  // deletes the PyTensor
  inst->simple_holder_constructed = false;
  inst->simple_value_holder[0] = nullptr;
  if (inst->weakrefs) PyObject_ClearWeakRefs(self);
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  type->tp_free(self);
  Py_DECREF(type);  // a heap type's instances hold a reference to it
}
}  // namespace

py::object wrap(oar::Tensor t) {
  if (!g_fast_instances) return py::cast(PyTensor{std::move(t)});
  PyObject* self = g_tensor_type->tp_alloc(g_tensor_type, 0);  // zeroed, GC-tracked, holds a type reference
  if (!self) throw py::error_already_set();
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  auto* value = new PyTensor{std::move(t)};
  inst->simple_layout = true;
  inst->owned = true;
  inst->simple_value_holder[0] = value;
  new (&holder_of(inst)) Holder(value);
  inst->simple_holder_constructed = true;
  return py::reinterpret_steal<py::object>(self);
}

// Checks that pybind11 builds a Tensor in the simple layout wrap() copies, then takes over.
void enable_fast_instances() {
  py::object probe = py::cast(PyTensor{});
  auto* inst = reinterpret_cast<py::detail::instance*>(probe.ptr());
  const py::detail::type_info* ti = py::detail::get_type_info(typeid(PyTensor));
  const bool simple = ti && ti->type == g_tensor_type && ti->simple_type && ti->simple_ancestors &&
                      inst->simple_layout && inst->simple_holder_constructed &&
                      inst->simple_value_holder[0] == holder_of(inst).get() &&
                      sizeof(Holder) <= sizeof(void*) * py::detail::instance_simple_holder_in_ptrs();
  if (!simple) return;
  g_pybind_dealloc = g_tensor_type->tp_dealloc;
  g_tensor_type->tp_dealloc = tensor_dealloc;
  g_fast_instances = true;
}

// indexing.cc: numpy indexing (views for basic indexing, gather_nd / index_put for advanced).
oar::Tensor getitem(const oar::Tensor& base, py::handle index);
void setitem(const oar::Tensor& base, py::handle index, py::handle value);

namespace {

using oar::DType;

// Writes `value` (a Python bool/int/float/complex) as one element of dtype `d` into `dst` (16 bytes).
void write_scalar(py::handle value, DType d, void* dst) {
  PyObject* o = value.ptr();
  const bool is_int = PyLong_Check(o);  // bool is an int too
  const bool is_complex = PyComplex_Check(o);
  int64_t iv = 0;
  double dv = 0, imag = 0;
  if (is_int) {
    int overflow = 0;
    iv = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) throw py::value_error("integer " + std::string(py::str(value)) + " does not fit in int64");
    dv = static_cast<double>(iv);
  } else if (is_complex) {
    dv = PyComplex_RealAsDouble(o);
    imag = PyComplex_ImagAsDouble(o);
  } else {
    dv = PyFloat_AsDouble(o);
    if (dv == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    // Only read when the target is an integer type (explicit casts); NaN/inf have no integer value.
    iv = std::isfinite(dv) && std::fabs(dv) < 9.2e18 ? static_cast<int64_t>(dv) : 0;
  }
  switch (d) {
    case DType::kBool: *static_cast<uint8_t*>(dst) = (is_int ? iv != 0 : (dv != 0 || imag != 0)); break;
    case DType::kInt8: *static_cast<int8_t*>(dst) = static_cast<int8_t>(iv); break;
    case DType::kUInt8: *static_cast<uint8_t*>(dst) = static_cast<uint8_t>(iv); break;
    case DType::kInt16: *static_cast<int16_t*>(dst) = static_cast<int16_t>(iv); break;
    case DType::kInt32: *static_cast<int32_t*>(dst) = static_cast<int32_t>(iv); break;
    case DType::kInt64: *static_cast<int64_t*>(dst) = iv; break;
    case DType::kFloat16: *static_cast<uint16_t*>(dst) = oar::sdk::float16::from_float(static_cast<float>(dv)); break;
    case DType::kBFloat16: *static_cast<uint16_t*>(dst) = oar::sdk::bfloat16::from_float(static_cast<float>(dv)); break;
    case DType::kFloat32: *static_cast<float*>(dst) = static_cast<float>(dv); break;
    case DType::kFloat64: *static_cast<double*>(dst) = dv; break;
    case DType::kComplex64: *static_cast<std::complex<float>*>(dst) = {static_cast<float>(dv), static_cast<float>(imag)}; break;
    case DType::kComplex128: *static_cast<std::complex<double>*>(dst) = {dv, imag}; break;
  }
}

// The one element of a one-element tensor as a Python scalar.
py::object item(const oar::Tensor& t) {
  if (t.numel() != 1)
    throw py::value_error("only a tensor with exactly one element can be converted to a Python scalar; this one has shape " +
                          t.dims().to_string() + " (" + std::to_string(t.numel()) + " elements)");
  alignas(16) unsigned char buf[16];
  const int64_t size = oar::dtype_size(t.dtype());
  if (t.place().is_cpu()) {
    std::memcpy(buf, t.data_ptr(), static_cast<size_t>(size));
  } else {
    t.copy_to_host(buf, static_cast<size_t>(size));
  }
  switch (t.dtype()) {
    case DType::kBool: return py::bool_(buf[0] != 0);
    case DType::kInt8: return py::int_(*reinterpret_cast<int8_t*>(buf));
    case DType::kUInt8: return py::int_(*reinterpret_cast<uint8_t*>(buf));
    case DType::kInt16: return py::int_(*reinterpret_cast<int16_t*>(buf));
    case DType::kInt32: return py::int_(*reinterpret_cast<int32_t*>(buf));
    case DType::kInt64: return py::int_(*reinterpret_cast<int64_t*>(buf));
    case DType::kFloat16: return py::float_(oar::sdk::float16::to_float(*reinterpret_cast<uint16_t*>(buf)));
    case DType::kBFloat16: return py::float_(float(*reinterpret_cast<oar::sdk::bfloat16*>(buf)));
    case DType::kFloat32: return py::float_(*reinterpret_cast<float*>(buf));
    case DType::kFloat64: return py::float_(*reinterpret_cast<double*>(buf));
    case DType::kComplex64: {
      auto c = *reinterpret_cast<std::complex<float>*>(buf);
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(c.real(), c.imag()));
    }
    case DType::kComplex128: {
      auto c = *reinterpret_cast<std::complex<double>*>(buf);
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(c.real(), c.imag()));
    }
  }
  throw py::type_error("invalid dtype");
}

// A numpy array of `t`'s values. With `share`, a contiguous CPU tensor shares its storage with the array
// (which keeps it alive): np.asarray(t). .numpy() copies, as Paddle's does. Anything else is copied.
py::array to_numpy(const oar::Tensor& t, bool share) {
  const int64_t esize = oar::dtype_size(t.dtype());
  std::vector<py::ssize_t> shape(t.dims().data(), t.dims().data() + t.ndim());
  py::dtype dt = numpy_dtype(t.dtype());
  if (share && t.place().is_cpu() && t.is_contiguous()) {
    std::vector<py::ssize_t> strides(t.ndim());
    for (int32_t i = 0; i < t.ndim(); ++i) strides[i] = t.strides()[i] * esize;
    auto* keep = new std::shared_ptr<oar::Storage>(t.storage());
    py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<oar::Storage>*>(p); });
    return py::array(dt, shape, strides, t.data_ptr(), owner);
  }
  py::array out(dt, shape);
  t.copy_to_host(out.mutable_data(), static_cast<size_t>(t.numel() * esize));
  return out;
}

// A C-contiguous numpy array (the caller made it so) copied into a new tensor on `place`.
oar::Tensor from_numpy(const py::array& arr, oar::Place place) {
  oar::DType d;
  if (!numpy_to_dtype(arr.dtype(), &d))
    throw py::type_error("numpy dtype " + std::string(py::str(arr.dtype())) +
                         " is not supported; supported: bool, int8, uint8, int16, int32, int64, float16, float32, "
                         "float64, complex64, complex128");
  if (!(arr.flags() & py::array::c_style)) throw py::value_error("from_numpy: the array must be C-contiguous");
  oar::Dims dims;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) dims.push_back(arr.shape(i));
  return oar::Tensor::from_host(arr.data(), dims, d, place);
}

std::vector<int64_t> list_of(const oar::Dims& d) { return std::vector<int64_t>(d.data(), d.data() + d.size()); }

int64_t checked_len(const oar::Tensor& t) {
  if (t.ndim() == 0) throw py::type_error("len() of a 0-D tensor");
  return t.dims()[0];
}

}  // namespace

oar::Tensor scalar_tensor(py::handle value, oar::DType d, oar::Place p) {
  if (p.is_cpu()) {
    oar::Tensor t = oar::Tensor::empty(oar::Dims{}, d, p);
    write_scalar(value, d, t.data_ptr());
    return t;
  }
  alignas(16) unsigned char buf[16];
  write_scalar(value, d, buf);
  return oar::Tensor::from_host(buf, oar::Dims{}, d, p);
}

void init_tensor(py::module_& m) {
  // dynamic_attr: Python code attaches attributes (name, persistable, and a Parameter's trainable,
  // optimize_attr, ...) to tensor objects; the __dict__ is only created when one is set.
  py::class_<PyTensor> cls(m, "Tensor", py::dynamic_attr(),
                           "An n-dimensional array on one device (oar.to_tensor makes one).");
  g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // Tensor(t) shares t's storage and autograd state (it is how Python subclasses such as Parameter wrap
  // a tensor); Tensor(data) is oar.to_tensor(data).
  cls.def(py::init([](py::handle data) {
           if (is_tensor(data)) return PyTensor{tensor_of(data).t};
           py::object t = py::module_::import("oar").attr("to_tensor")(data);
           return PyTensor{tensor_of(t).t};
         }),
          py::arg("data"));
  cls.def_property_readonly("shape",
                            [](const PyTensor& s) {
                              // a static-graph variable shows its unknown extents as -1, as in Paddle
                              if (s.t.impl()->symbol) return oar::ir::visible_dims(s.t.dims());
                              return list_of(s.t.dims());
                            })
      .def_property_readonly("dtype", [](const PyTensor& s) { return dtype_object(s.t.dtype()); })
      .def_property_readonly("place", [](const PyTensor& s) { return place_object(s.t.place()); })
      .def_property_readonly("ndim", [](const PyTensor& s) { return s.t.ndim(); })
      .def_property_readonly("size", [](const PyTensor& s) { return s.t.numel(); })
      .def_property_readonly("strides", [](const PyTensor& s) { return list_of(s.t.strides()); })
      .def_property_readonly("offset", [](const PyTensor& s) { return s.t.offset(); })
      .def_property_readonly("T",
                             [](const PyTensor& s) {
                               const int32_t n = s.t.ndim();
                               if (n < 2) return PyTensor{s.t};
                               std::vector<int64_t> perm(n);
                               for (int32_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
                               return PyTensor{s.t.transpose(perm)};
                             })
      .def("dim", [](const PyTensor& s) { return s.t.ndim(); })
      .def("ndimension", [](const PyTensor& s) { return s.t.ndim(); })
      .def("is_contiguous", [](const PyTensor& s) { return s.t.is_contiguous(); })
      .def("contiguous", [](const PyTensor& s) { return PyTensor{s.t.contiguous()}; })
      .def("data_ptr", [](const PyTensor& s) { return reinterpret_cast<uintptr_t>(s.t.data_ptr()); })
      .def("_is_shared_buffer_with", [](const PyTensor& s, const PyTensor& o) { return s.t.shares_storage(o.t); })
      // Re-points this Python object at another tensor (Layer.to / astype move parameters in place, so
      // optimizers and user references keep working). Autograd state is the new tensor's.
      .def("_replace_with", [](PyTensor& s, const PyTensor& o) { s.t = o.t; })
      .def("_storage_version", [](const PyTensor& s) { return s.t.storage()->version(); })
      // Paddle's numpy() ignores positional arguments (code calls numpy(False)); so does this one.
      .def("numpy", [](const PyTensor& s, const py::args&) { return to_numpy(s.t, false); },
           "A numpy array holding a copy of the values (as Paddle's); np.asarray(t) shares memory instead.")
      .def("_numpy_view", [](const PyTensor& s) { return to_numpy(s.t, true); },
           "A numpy array sharing memory with a contiguous CPU tensor, otherwise a copy; private.")
      .def("_item", [](const PyTensor& s) { return item(s.t); })
      .def("cpu", [](const PyTensor& s) { return PyTensor{s.t.cpu()}; })
      .def("_to_place", [](const PyTensor& s, py::handle place) { return PyTensor{s.t.to(to_place(place))}; })
      .def("__len__", [](const PyTensor& s) { return checked_len(s.t); })
      .def("__getitem__", [](const PyTensor& s, py::handle index) { return PyTensor{getitem(s.t, index)}; })
      .def("__setitem__", [](const PyTensor& s, py::handle index, py::handle value) { setitem(s.t, index, value); })
      .def("__bool__",
           [](const PyTensor& s) {
             if (s.t.numel() != 1)
               throw py::value_error("the truth value of a tensor with " + std::to_string(s.t.numel()) +
                                     " elements is ambiguous; use .any() or .all()");
             return PyObject_IsTrue(item(s.t).ptr()) == 1;
           })
      .def("__float__", [](const PyTensor& s) { return py::float_(item(s.t)); })
      .def("__int__",
           [](const PyTensor& s) -> py::object {
             py::object v = item(s.t);
             return py::reinterpret_steal<py::object>(PyNumber_Long(v.ptr()));
           })
      .def("__complex__",
           [](const PyTensor& s) {
             py::object v = item(s.t);
             return py::reinterpret_steal<py::object>(
                 PyComplex_FromDoubles(PyComplex_RealAsDouble(v.ptr()), PyComplex_ImagAsDouble(v.ptr())));
           })
      .def("__index__",
           [](const PyTensor& s) {
             if (!oar::is_integral(s.t.dtype()) && s.t.dtype() != oar::DType::kBool)
               throw py::type_error(std::string("only integer tensors of a single element can be converted to an "
                                                "index; this one is ") +
                                    oar::dtype_name(s.t.dtype()));
             return item(s.t).cast<int64_t>();
           })
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });

  m.def("_from_numpy", [](const py::array& arr, py::handle place) { return PyTensor{from_numpy(arr, to_place(place))}; },
        py::arg("array"), py::arg("place") = py::none());
  m.def("_scalar_tensor", [](py::handle value, py::handle dtype, py::handle place) {
    return PyTensor{scalar_tensor(value, to_dtype(dtype), to_place(place))};
  });

  // Views: no kernels, they share storage (reshape copies only when no view is possible).
  m.def("_reshape", [](const PyTensor& x, const std::vector<int64_t>& shape) { return PyTensor{x.t.reshape(oar::Dims(shape))}; });
  m.def("_transpose", [](const PyTensor& x, const std::vector<int64_t>& perm) { return PyTensor{x.t.transpose(perm)}; });
  m.def("_squeeze", [](const PyTensor& x, const std::vector<int64_t>& axes) { return PyTensor{x.t.squeeze(axes)}; });
  m.def("_unsqueeze", [](const PyTensor& x, int64_t axis) { return PyTensor{x.t.unsqueeze(axis)}; });
  m.def("_slice", [](const PyTensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
    return PyTensor{x.t.slice(axis, start, end, step)};
  });
  m.def("_expand", [](const PyTensor& x, const std::vector<int64_t>& shape) { return PyTensor{x.t.expand(oar::Dims(shape))}; });
  enable_fast_instances();
}

}  // namespace oarpy
