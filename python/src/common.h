// Shared declarations of the oar._C extension module.
#pragma once

#include <oar/core/dispatch.h>
#include <oar/core/dtype.h>
#include <oar/core/error.h>
#include <oar/core/op.h>
#include <oar/core/place.h>
#include <oar/core/tensor.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace oarpy {

// The Python Tensor. Its autograd state (stop_gradient, grad, history) lives in the core tensor's
// AutogradMeta, so every Python object wrapping the same oar::Tensor sees the same state.
struct PyTensor {
  oar::Tensor t;
};

// A dtype object: oar.float32 etc. are the only instances (compare with `is` or `==`).
struct PyDType {
  oar::DType d;
};

// A place: Place(cpu), Place(sim:0). CPUPlace / CustomPlace / CUDAPlace are subclasses.
struct PyPlace {
  oar::Place p;
};

// ---- dtypes (module.cc) ----
py::object dtype_object(oar::DType d);
// Accepts a dtype object, a name ("float32", "int64", ...), a numpy dtype or scalar type, or the Python
// types bool / int / float / complex. Throws TypeError otherwise.
oar::DType to_dtype(py::handle h);
bool numpy_to_dtype(const py::dtype& dt, oar::DType* out);  // false when numpy's dtype has no oar match
py::dtype numpy_dtype(oar::DType d);                        // bfloat16 -> uint16 (its bits), as Paddle
oar::DType default_dtype();

// ---- places and devices (module.cc) ----
oar::Place current_place();
// None -> the current place; a Place; "cpu", "sim", "sim:1"; an int (index on the current device type).
oar::Place to_place(py::handle h);
py::object place_object(oar::Place p);

// ---- tensors (tensor.cc) ----
extern PyTypeObject* g_tensor_type;
inline bool is_tensor(py::handle h) {
  return Py_TYPE(h.ptr()) == g_tensor_type || PyType_IsSubtype(Py_TYPE(h.ptr()), g_tensor_type);
}
inline PyTensor& tensor_of(py::handle h) { return h.cast<PyTensor&>(); }
py::object wrap(oar::Tensor t);
// A 0-d tensor of dtype `d` on `p` holding a Python scalar (bool, int, float or complex).
oar::Tensor scalar_tensor(py::handle value, oar::DType d, oar::Place p);

// The oar::Tensor of a Tensor object (no type check: callers check is_tensor first).
inline const oar::Tensor& fast_tensor(py::handle h) {
  auto* inst = reinterpret_cast<py::detail::instance*>(h.ptr());
  return inst->get_value_and_holder().value_ptr<PyTensor>()->t;
}

// ---- the generic op entry point (ops.cc) ----
struct OpHandle;  // oar._C.Op: one op's definition and attribute schema
// A handle made once (kept for the process), as Op(name, *attr_names) makes it.
const OpHandle* internal_op_handle(const std::string& name, const std::vector<std::string>& attr_names);
// Runs the handle as Op.__call__ does: args[0..nargs) positional, kwargs a dict or null.
py::object call_op(const OpHandle& h, PyObject* const* args, size_t nargs, PyObject* kwargs = nullptr);
// (a, b), tensors or Python scalars, brought to one dtype as Paddle's binary ops do; false when not usable.
bool promote_pair(py::handle a, py::handle b, bool true_divide, oar::Tensor& x, oar::Tensor& y);
// In a C-level slot or function: sets the Python exception for the C++ exception in flight, as pybind11
// (and the module's translators) would; returns null.
PyObject* raise_cpp_exception() noexcept;

// ---- registration ----
void init_module_basics(py::module_& m);  // errors, dtypes, places, devices
void init_tensor(py::module_& m);
void init_ops(py::module_& m);
void init_runtime(py::module_& m);
void init_dlpack(py::module_& m);    // dlpack.cc: Tensor.__dlpack__, oar.utils.dlpack
void init_autograd(py::module_& m);  // autograd.cc: Tensor.backward/grad/..., grad mode, oar._C.grad
void init_program(py::module_& m);    // program.cc: the program IR and model files (private helpers)
void init_static(py::module_& m);     // static.cc: program building (static mode, to_static)
void init_passes(py::module_& m);     // passes.cc: the inference passes (private helpers)
void init_inference(py::module_& m);  // inference.cc: the inference API (oar.inference)
void init_custom_op(py::module_& m);  // custom_op.cc: custom op libraries (oar.utils.load_op_library)
void init_plugin_kit(py::module_& m);  // plugin_kit.cc: helpers of oar.testing.plugin_conformance
void init_store(py::module_& m);       // store.cc: oar.distributed.TCPStore
void init_distributed(py::module_& m);  // distributed.cc: oar.distributed's process group
void init_fast_api(py::module_& m);  // fast_api.cc: C fast paths of everyday Python API calls

}  // namespace oarpy
