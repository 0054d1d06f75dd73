// oar._C: module init, error translation, dtype objects, places, the current device and memory statistics.
#include "common.h"

#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <array>

namespace oarpy {
namespace {

// ---- errors -------------------------------------------------------------------------------------
PyObject* exception_for(oar::ErrorCode code) {
  switch (code) {
    case oar::ErrorCode::kInvalidArgument: return PyExc_ValueError;
    case oar::ErrorCode::kType: return PyExc_TypeError;
    case oar::ErrorCode::kOutOfRange: return PyExc_IndexError;
    case oar::ErrorCode::kOutOfMemory: return PyExc_MemoryError;
    case oar::ErrorCode::kUnimplemented: return PyExc_NotImplementedError;
    default: return PyExc_RuntimeError;
  }
}

// The error class word Paddle puts before its messages ("(InvalidArgument) ..."); scripts and Paddle's
// own tests look for it in str(e), so the message starts with it (decision 98).
const char* paddle_error_class(oar::ErrorCode code) {
  switch (code) {
    case oar::ErrorCode::kType: return "InvalidType";
    case oar::ErrorCode::kOutOfMemory: return "ResourceExhausted";
    case oar::ErrorCode::kInternal: return "Fatal";
    default: return oar::error_code_name(code);
  }
}

// ---- dtypes -------------------------------------------------------------------------------------
// Leaked on purpose: Python objects must not be released by static destructors after the interpreter
// has finalised.
auto& g_dtype_objects = *new std::array<py::object, oar::kNumDTypes>();
auto& g_numpy_dtypes = *new std::array<py::object, oar::kNumDTypes>();
oar::DType g_default_dtype = oar::DType::kFloat32;
PyTypeObject* g_dtype_type = nullptr;

bool parse_dtype_name(std::string name, oar::DType* out) {
  for (const char* prefix : {"oar.", "paddle.", "torch.", "numpy.", "np."})
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::strlen(prefix));
  // Paddle's name for bfloat16 in its Python API (its bfloat16 arrays are numpy uint16), decision 98.
  if (name == "uint16") {
    *out = oar::DType::kBFloat16;
    return true;
  }
  try {
    *out = oar::parse_dtype(name);
    return true;
  } catch (const oar::Error&) {
    return false;
  }
}

// ---- places -------------------------------------------------------------------------------------
oar::Place g_place;  // the current device (oar.set_device)

struct PyCPUPlace : PyPlace {};
struct PyCustomPlace : PyPlace {};
struct PyCUDAPlace : PyPlace {};

oar::Place parse_place(const std::string& text) {
  try {
    return oar::Place::parse(text);
  } catch (const oar::Error& e) {
    // An unknown or malformed device is a bad argument from Python's point of view.
    throw py::value_error(e.what());
  }
}

oar::Device& device_of(py::handle h) { return oar::Runtime::get().device(to_place(h)); }

}  // namespace

// ---- dtype helpers used by the other files ------------------------------------------------------
py::object dtype_object(oar::DType d) { return g_dtype_objects[static_cast<int>(d)]; }
oar::DType default_dtype() { return g_default_dtype; }

bool numpy_to_dtype(const py::dtype& dt, oar::DType* out) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  using D = oar::DType;
  switch (kind) {
    case 'b': *out = D::kBool; return true;
    case 'i':
      if (size == 1) *out = D::kInt8;
      else if (size == 2) *out = D::kInt16;
      else if (size == 4) *out = D::kInt32;
      else if (size == 8) *out = D::kInt64;
      else return false;
      return true;
    case 'u':
      if (size != 1) return false;
      *out = D::kUInt8;
      return true;
    case 'f':
      if (size == 2) *out = D::kFloat16;
      else if (size == 4) *out = D::kFloat32;
      else if (size == 8) *out = D::kFloat64;
      else return false;
      return true;
    case 'c':
      if (size == 8) *out = D::kComplex64;
      else if (size == 16) *out = D::kComplex128;
      else return false;
      return true;
    default: return false;
  }
}

py::dtype numpy_dtype(oar::DType d) { return py::reinterpret_borrow<py::dtype>(g_numpy_dtypes[static_cast<int>(d)]); }

oar::DType to_dtype(py::handle h) {
  if (Py_TYPE(h.ptr()) == g_dtype_type) return h.cast<PyDType&>().d;
  if (PyUnicode_Check(h.ptr())) {
    std::string name = h.cast<std::string>();
    oar::DType d;
    if (parse_dtype_name(name, &d)) return d;
    oar::parse_dtype(name);  // throws the core's TypeError with the list of names
  }
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return oar::DType::kFloat64;  // as numpy
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return oar::DType::kInt64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return oar::DType::kBool;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return oar::DType::kComplex128;
  // numpy dtypes and scalar types (np.float32, np.dtype('int32')).
  if (py::isinstance<py::dtype>(h) ||
      (PyType_Check(h.ptr()) && py::hasattr(h, "dtype") && py::hasattr(h, "itemsize"))) {
    py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
    oar::DType d;
    if (numpy_to_dtype(dt, &d)) return d;
    throw py::type_error("numpy dtype " + std::string(py::str(dt)) + " has no oar equivalent");
  }
  if (h.is_none()) throw py::type_error("dtype must not be None here");
  throw py::type_error("unsupported dtype " + std::string(py::repr(h)) +
                       "; expected oar.float32 etc., a name such as 'float32', or a numpy dtype");
}

// ---- place helpers ------------------------------------------------------------------------------
oar::Place current_place() { return g_place; }

py::object place_object(oar::Place p) { return py::cast(PyPlace{p}); }

oar::Place to_place(py::handle h) {
  if (h.is_none()) return g_place;
  if (py::isinstance<PyPlace>(h)) return h.cast<PyPlace&>().p;
  if (PyUnicode_Check(h.ptr())) return parse_place(h.cast<std::string>());
  if (PyLong_Check(h.ptr())) {
    oar::Place p = g_place;
    p.index = h.cast<int32_t>();
    return parse_place(p.to_string());  // validates the index
  }
  throw py::type_error("expected a place (oar.CPUPlace(), oar.CustomPlace('sim', 0)) or a device string "
                       "('cpu', 'sim:0'), got " + std::string(py::repr(h)));
}

void init_module_basics(py::module_& m) {
  // Errors: oar::Error's code picks the Python exception; the message is the core's after Paddle's class
  // word.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const oar::Error& e) {
      const std::string msg = std::string("(") + paddle_error_class(e.code()) + ") " + e.what();
      PyErr_SetString(exception_for(e.code()), msg.c_str());
    }
  });

  // dtypes
  py::class_<PyDType> dtype(m, "dtype", "An element type: oar.float32, oar.int64, oar.bool, ...");
  g_dtype_type = reinterpret_cast<PyTypeObject*>(dtype.ptr());
  dtype.def_property_readonly("name", [](const PyDType& d) { return oar::dtype_name(d.d); })
      .def_property_readonly("itemsize", [](const PyDType& d) { return oar::dtype_size(d.d); })
      .def_property_readonly("is_floating_point", [](const PyDType& d) { return oar::is_floating(d.d); })
      .def_property_readonly("is_complex", [](const PyDType& d) { return oar::is_complex(d.d); })
      .def_property_readonly("is_integer", [](const PyDType& d) { return oar::is_integral(d.d); })
      .def("__repr__", [](const PyDType& d) { return std::string("oar.") + oar::dtype_name(d.d); })
      .def("__str__", [](const PyDType& d) { return std::string("oar.") + oar::dtype_name(d.d); })
      .def("__hash__", [](const PyDType& d) { return py::hash(py::str(oar::dtype_name(d.d))); })
      .def("__eq__",
           [](const PyDType& d, py::handle other) -> py::object {
             if (Py_TYPE(other.ptr()) == g_dtype_type) return py::bool_(other.cast<PyDType&>().d == d.d);
             if (PyUnicode_Check(other.ptr())) {
               oar::DType o;
               return py::bool_(parse_dtype_name(other.cast<std::string>(), &o) && o == d.d);
             }
             if (py::isinstance<py::dtype>(other)) {
               oar::DType o;
               return py::bool_(numpy_to_dtype(other.cast<py::dtype>(), &o) && o == d.d);
             }
             return py::reinterpret_borrow<py::object>(Py_NotImplemented);
           })
      .def("__reduce__", [](const PyDType& d) {
        return py::make_tuple(py::module_::import("oar").attr("_dtype_from_name"),
                              py::make_tuple(oar::dtype_name(d.d)));
      });
  const char* numpy_names[oar::kNumDTypes] = {"bool",    "int8",    "uint8",   "int16",     "int32",
                                              "int64",   "float16", "uint16",  "float32",   "float64",
                                              "complex64", "complex128"};
  for (int i = 0; i < oar::kNumDTypes; ++i) {
    auto d = static_cast<oar::DType>(i);
    g_dtype_objects[i] = py::cast(PyDType{d});
    g_numpy_dtypes[i] = py::dtype(numpy_names[i]);
    m.attr(oar::dtype_name(d)) = g_dtype_objects[i];
  }
  m.def("to_dtype", [](py::handle h) { return dtype_object(to_dtype(h)); },
        "Converts a dtype object, name or numpy dtype to the oar dtype object (TypeError otherwise).");
  m.def("numpy_dtype", [](py::handle h) { return numpy_dtype(to_dtype(h)); },
        "The numpy dtype holding this dtype's values (uint16 bits for bfloat16).");
  m.def("get_default_dtype", [] { return std::string(oar::dtype_name(g_default_dtype)); });
  m.def("set_default_dtype", [](py::handle h) {
    oar::DType d = to_dtype(h);
    if (!oar::is_floating(d))
      throw py::type_error(std::string("set_default_dtype only supports float16, bfloat16, float32 and float64, got ") +
                           oar::dtype_name(d));
    g_default_dtype = d;
  });

  // places
  py::class_<PyPlace> place(m, "Place", "Where a tensor lives: Place(cpu), Place(sim:0).");
  place.def(py::init([](py::handle h) { return PyPlace{to_place(h)}; }), py::arg("device"))
      .def("__repr__", [](const PyPlace& p) { return "Place(" + p.p.to_string() + ")"; })
      .def("__str__", [](const PyPlace& p) { return "Place(" + p.p.to_string() + ")"; })
      .def("__eq__",
           [](const PyPlace& p, py::handle other) -> py::object {
             if (py::isinstance<PyPlace>(other)) return py::bool_(other.cast<PyPlace&>().p == p.p);
             if (PyUnicode_Check(other.ptr())) {
               try {
                 return py::bool_(to_place(other) == p.p);
               } catch (const py::value_error&) {
                 return py::bool_(false);
               }
             }
             return py::reinterpret_borrow<py::object>(Py_NotImplemented);
           })
      .def("__hash__", [](const PyPlace& p) { return (static_cast<int64_t>(p.p.type) << 32) | p.p.index; })
      .def("is_cpu_place", [](const PyPlace& p) { return p.p.is_cpu(); })
      .def("is_gpu_place",
           [](const PyPlace& p) { return !p.p.is_cpu() && oar::Runtime::get().device_types()[p.p.type].name == "gpu"; })
      .def("is_custom_place",
           [](const PyPlace& p) { return !p.p.is_cpu() && oar::Runtime::get().device_types()[p.p.type].name != "gpu"; })
      .def("get_device_id", [](const PyPlace& p) { return p.p.index; })
      .def("get_device_type",
           [](const PyPlace& p) { return oar::Runtime::get().device_types()[p.p.type].name; })
      .def("__reduce__", [](const PyPlace& p) {
        return py::make_tuple(py::module_::import("oar").attr("_C").attr("Place"), py::make_tuple(p.p.to_string()));
      });
  py::class_<PyCPUPlace, PyPlace>(m, "CPUPlace").def(py::init([] { return PyCPUPlace{{oar::cpu_place()}}; }));
  py::class_<PyCustomPlace, PyPlace>(m, "CustomPlace")
      .def(py::init([](const std::string& type, int32_t id) {
             return PyCustomPlace{{parse_place(type + ":" + std::to_string(id))}};
           }),
           py::arg("device_type"), py::arg("device_id") = 0);
  py::class_<PyCUDAPlace, PyPlace>(m, "CUDAPlace")
      .def(py::init([](int32_t id) { return PyCUDAPlace{{parse_place("gpu:" + std::to_string(id))}}; }),
           py::arg("id") = 0);

  // the current device
  m.def(
      "set_device",
      [](py::handle device) {
        g_place = to_place(device);           // "sim" means sim:0
        oar::Runtime::get().device(g_place);  // open it now: errors surface here
        return place_object(g_place);
      },
      py::arg("device"));
  m.def("get_device", [] { return g_place.to_string(); });
  m.def("_current_place", [] { return place_object(g_place); });
  m.def("_to_place", [](py::handle h) { return place_object(to_place(h)); });
  // The core's size check, for Python code that sizes a host buffer itself (docs/python.md, "Sizes and
  // bad input"): ValueError on overflow, MemoryError beyond the device's memory.
  m.def("_check_size",
        [](const std::string& op, const std::vector<int64_t>& shape, py::handle dtype, py::handle place) {
          oar::checked_tensor_bytes(oar::Dims(shape), to_dtype(dtype),
                                    oar::Runtime::get().device(to_place(place)), op.c_str());
        });

  // devices
  m.def("get_all_device_type", [] {
    std::vector<std::string> out;
    for (const auto& t : oar::Runtime::get().device_types())
      if (t.plugin) out.push_back(t.name);
    return out;
  });
  m.def("get_all_custom_device_type", [] {
    std::vector<std::string> out;
    for (const auto& t : oar::Runtime::get().device_types())
      if (t.plugin && t.name != "cpu" && t.name != "gpu") out.push_back(t.name);
    return out;
  });
  m.def("get_available_device", [] {
    std::vector<std::string> out;
    for (const auto& p : oar::Runtime::get().all_places()) out.push_back(p.to_string());
    return out;
  });
  m.def(
      "_device_type_refusal",
      [](const std::string& type) { return oar::Runtime::get().unavailable_reason(type); },
      "Why no plugin provides this device type: each refused candidate's path and the loader's reason.");
  m.def(
      "_refused_device_types", [] { return oar::Runtime::get().refused_device_types(); },
      "Device types that only refused plugins would provide (a gpu plugin on a machine without a GPU).");
  m.def("device_count", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    return t ? t->count : 0;
  });
  m.def("synchronize", [](py::handle device) { device_of(device).synchronize(); }, py::arg("device") = py::none());
  m.def("memory_allocated", [](py::handle device) { return device_of(device).allocator().stats().allocated; },
        py::arg("device") = py::none());
  m.def("max_memory_allocated",
        [](py::handle device) { return device_of(device).allocator().stats().peak_allocated; },
        py::arg("device") = py::none());
  m.def("memory_reserved", [](py::handle device) { return device_of(device).allocator().stats().reserved; },
        py::arg("device") = py::none());
  m.def("max_memory_reserved",
        [](py::handle device) { return device_of(device).allocator().stats().peak_reserved; },
        py::arg("device") = py::none());
  m.def(
      "reset_max_memory_allocated",
      [](py::handle device) { device_of(device).allocator().reset_peak_allocated(); },
      py::arg("device") = py::none());
  m.def(
      "reset_max_memory_reserved",
      [](py::handle device) { device_of(device).allocator().reset_peak_reserved(); },
      py::arg("device") = py::none());
  m.def("empty_cache", [](py::handle device) { device_of(device).allocator().release_cached(); },
        py::arg("device") = py::none());
}

void init_fastpath(py::module_& m);  // fastpath.cc: per-step optimizer helpers
void init_jit_run(py::module_& m);   // jit_run.cc: to_static training runs (oar.jit)
void init_static_edit(py::module_& m);  // static_edit.cc: program edits for control-flow gradients
void init_op_samples(py::module_& m);  // op_samples.cc: the op suite's sample declarations (oar.testing.ops)
void init_streams(py::module_& m);     // streams.cc: streams, events, the current stream (oar.device)
void init_amp(py::module_& m);         // amp.cc: auto_cast's configuration (oar.amp)
void init_profiler(py::module_& m);    // profiler.cc: oar.profiler's recording

}  // namespace oarpy

PYBIND11_MODULE(_C, m) {
  m.doc() = "oar's extension module: tensors, ops, devices and the runtime over liboar_core";
  oarpy::init_module_basics(m);
  oarpy::init_tensor(m);
  oarpy::init_ops(m);
  oarpy::init_runtime(m);
  oarpy::init_streams(m);
  oarpy::init_autograd(m);
  oarpy::init_fastpath(m);
  oarpy::init_dlpack(m);
  oarpy::init_program(m);
  oarpy::init_static(m);
  oarpy::init_jit_run(m);
  oarpy::init_static_edit(m);
  oarpy::init_passes(m);
  oarpy::init_inference(m);
  oarpy::init_custom_op(m);
  oarpy::init_plugin_kit(m);
  oarpy::init_store(m);
  oarpy::init_distributed(m);
  oarpy::init_fast_api(m);
  oarpy::init_op_samples(m);
  oarpy::init_amp(m);
  oarpy::init_profiler(m);
}
