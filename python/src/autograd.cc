// Autograd bindings: Tensor.stop_gradient / grad / backward / hooks, grad mode, and oar._C.grad.
//
// All state lives in the core (oar::autograd, AutogradMeta); these are thin wrappers. The GIL stays
// held during backward and grad: hooks are Python callables run from inside the engine, and holding the
// GIL throughout is the simplest correct choice (the engine runs on the calling thread). Hooks still
// take the GIL themselves (re-entrant), so they stay correct if a later change releases it.
#include "common.h"

#include <oar/core/autograd.h>

#include <memory>

namespace oarpy {
namespace {

namespace ag = oar::autograd;

// A Tensor, or a list/tuple of Tensors. With `allow_none`, None entries become undefined tensors.
std::vector<oar::Tensor> tensor_list(py::handle h, const char* what, bool allow_none) {
  std::vector<oar::Tensor> out;
  auto one = [&](py::handle x) {
    if (allow_none && x.is_none()) {
      out.emplace_back();
    } else if (is_tensor(x)) {
      out.push_back(tensor_of(x).t);
    } else {
      throw py::type_error(std::string(what) + " must be a Tensor or a list of Tensors, got an element of type " +
                           std::string(py::str(py::type::handle_of(x).attr("__name__"))));
    }
  };
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    for (auto x : h) one(x);
  } else {
    one(h);
  }
  return out;
}

py::object wrap_or_none(const oar::Tensor& t) { return t.defined() ? wrap(t) : py::none(); }

// A Python callable kept by the core (inside a std::function): it is released with the GIL held.
struct PyCallable {
  py::object fn;
  explicit PyCallable(py::object f) : fn(std::move(f)) {}
  ~PyCallable() {
    if (!Py_IsInitialized()) {
      fn.release();  // the interpreter is gone: leak rather than touch it
      return;
    }
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

oar::TensorHook make_hook(py::object fn) {
  auto holder = std::make_shared<PyCallable>(std::move(fn));
  return [holder](const oar::Tensor& g) -> oar::Tensor {
    py::gil_scoped_acquire gil;
    py::object r = holder->fn(wrap(g));
    if (r.is_none()) return oar::Tensor();
    if (!is_tensor(r))
      throw py::type_error("a tensor hook must return a Tensor or None, got " +
                           std::string(py::str(py::type::handle_of(r).attr("__name__"))));
    const oar::Tensor& out = tensor_of(r).t;
    if (out.dims() != g.dims())
      throw py::value_error("a tensor hook returned a gradient of shape " + out.dims().to_string() +
                            " for a tensor of shape " + g.dims().to_string());
    return out;
  };
}

}  // namespace

void init_autograd(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<PyTensor>>(reinterpret_cast<PyObject*>(g_tensor_type));
  cls.def_property(
         "stop_gradient", [](const PyTensor& s) { return !ag::requires_grad(s.t); },
         [](const PyTensor& s, bool stop) { ag::set_requires_grad(s.t, !stop); },
         "True (the default) when no gradient is computed for this tensor. Outputs of ops whose inputs "
         "need gradients get False. Only settable on leaves; integer tensors cannot be set to False.")
      .def_property_readonly("is_leaf", [](const PyTensor& s) { return ag::is_leaf(s.t); },
                             "True for tensors not produced by a recorded op (user-created ones).")
      .def_property_readonly("grad", [](const PyTensor& s) { return wrap_or_none(ag::grad(s.t)); },
                             "The accumulated gradient (a Tensor), or None.")
      .def("_clear_gradient", [](const PyTensor& s, bool set_to_zero) { ag::clear_grad(s.t, set_to_zero); },
           py::arg("set_to_zero") = true)
      .def(
          "_backward",
          [](const PyTensor& s, py::handle grad_tensor, bool retain_graph) {
            std::vector<oar::Tensor> g;
            if (!grad_tensor.is_none()) g = tensor_list(grad_tensor, "grad_tensor", false);
            ag::backward({s.t}, g, retain_graph);
          },
          py::arg("grad_tensor") = py::none(), py::arg("retain_graph") = false)
      .def("detach", [](const PyTensor& s) { return PyTensor{ag::detach(s.t)}; },
           "A new leaf sharing this tensor's storage, with no history and stop_gradient True.")
      .def("_register_hook", [](const PyTensor& s, py::object fn) { ag::register_hook(s.t, make_hook(std::move(fn))); })
      .def("retain_grads", [](const PyTensor& s) { ag::retain_grad(s.t); },
           "Keeps .grad of a non-leaf tensor after backward (leaves always keep it).");

  m.def("is_grad_enabled", [] { return oar::grad_enabled(); });
  m.def("_set_grad_enabled", [](bool enabled) { oar::set_grad_enabled(enabled); });
  m.def(
      "_backward",
      [](py::handle tensors, py::handle grad_tensors, bool retain_graph) {
        std::vector<oar::Tensor> roots = tensor_list(tensors, "tensors", false);
        std::vector<oar::Tensor> g;
        if (!grad_tensors.is_none()) g = tensor_list(grad_tensors, "grad_tensors", true);
        ag::backward(roots, g, retain_graph);
      },
      py::arg("tensors"), py::arg("grad_tensors") = py::none(), py::arg("retain_graph") = false);
  m.def(
      "_grad",
      [](py::handle outputs, py::handle inputs, py::handle grad_outputs, bool retain_graph, bool create_graph,
         bool allow_unused) {
        std::vector<oar::Tensor> outs = tensor_list(outputs, "outputs", false);
        std::vector<oar::Tensor> ins = tensor_list(inputs, "inputs", false);
        std::vector<oar::Tensor> g;
        if (!grad_outputs.is_none()) g = tensor_list(grad_outputs, "grad_outputs", true);
        std::vector<oar::Tensor> res = ag::grad(outs, ins, g, retain_graph, create_graph, allow_unused);
        py::list out;
        for (const auto& t : res) out.append(wrap_or_none(t));
        return out;
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs"), py::arg("retain_graph"),
      py::arg("create_graph"), py::arg("allow_unused"));
}

}  // namespace oarpy
