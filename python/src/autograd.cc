// Autograd bindings: Tensor.stop_gradient / grad / backward / hooks, grad mode, and oar._C.grad.
//
// All state lives in the core (oar::autograd, AutogradMeta); these are thin wrappers. The GIL stays
// held during backward and grad: hooks are Python callables run from inside the engine, and holding the
// GIL throughout is the simplest correct choice (the engine runs on the calling thread). Hooks still
// take the GIL themselves (re-entrant), so they stay correct if a later change releases it.
#include "common.h"

#include <oar/core/autograd.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>

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

// A PyLayer's node: its backward is the layer's Python `backward(ctx, *grads)`. The ctx and the
// function are released with the GIL held (PyCallable), when the graph is freed or the node dies.
class PyLayerNode final : public oar::GradNode {
 public:
  PyLayerNode(py::object backward, py::object ctx, std::vector<oar::TensorMeta> out_meta,
              std::vector<oar::TensorMeta> in_meta, std::vector<oar::Place> out_places, bool materialize)
      : backward_(std::make_shared<PyCallable>(std::move(backward))),
        ctx_(std::make_shared<PyCallable>(std::move(ctx))),
        out_meta_(std::move(out_meta)),
        in_meta_(std::move(in_meta)),
        out_places_(std::move(out_places)),
        materialize_(materialize) {}
  std::string name() const override { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  void release() override {
    backward_.reset();
    ctx_.reset();
  }
  std::vector<oar::Tensor> apply(std::vector<oar::Tensor>&& grads) override {
    if (!backward_)
      throw oar::Error(oar::ErrorCode::kPrecondition,
                       name_ + ": trying to run backward through the graph a second time (it was freed); pass "
                               "retain_graph=True to the first backward");
    py::gil_scoped_acquire gil;
    py::tuple args(1 + out_meta_.size());
    args[0] = ctx_->fn;
    for (size_t i = 0; i < out_meta_.size(); ++i) {
      oar::Tensor g = i < grads.size() ? grads[i] : oar::Tensor();
      if (!g.defined() && materialize_) g = oar::ops::zeros(out_meta_[i].dims, out_meta_[i].dtype, out_places_[i]);
      args[1 + i] = g.defined() ? wrap(g) : py::none();
    }
    py::object r = backward_->fn(*args);
    std::vector<py::object> items;
    if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
      for (auto x : r) items.push_back(py::reinterpret_borrow<py::object>(x));
    } else {
      items.push_back(r);
    }
    if (items.size() != in_meta_.size())
      throw py::value_error(name_ + ": backward returned " + std::to_string(items.size()) + " gradient(s), but forward " +
                            "had " + std::to_string(in_meta_.size()) + " Tensor input(s); return one per input (None " +
                            "for inputs without a gradient)");
    std::vector<oar::Tensor> out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].is_none() || !next[i].valid()) {
        out.emplace_back();
        continue;
      }
      if (!is_tensor(items[i]))
        throw py::type_error(name_ + ": backward must return Tensors or None, got " +
                             std::string(py::str(py::type::handle_of(items[i]).attr("__name__"))) + " for input " +
                             std::to_string(i));
      const oar::Tensor& g = tensor_of(items[i]).t;
      if (g.dims() != in_meta_[i].dims)
        throw py::value_error(name_ + ": backward returned a gradient of shape " + g.dims().to_string() +
                              " for input " + std::to_string(i) + " of shape " + in_meta_[i].dims.to_string());
      out.push_back(g);
    }
    return out;
  }

 private:
  std::shared_ptr<PyCallable> backward_, ctx_;
  std::vector<oar::TensorMeta> out_meta_, in_meta_;
  std::vector<oar::Place> out_places_;
  bool materialize_;
  std::string name_ = "PyLayer_backward";
};

}  // namespace

void init_autograd(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<PyTensor>>(reinterpret_cast<PyObject*>(g_tensor_type));
  cls.def_property(
         "stop_gradient", [](const PyTensor& s) { return ag::stop_gradient(s.t); },
         [](const PyTensor& s, bool stop) { ag::set_requires_grad(s.t, !stop); },
         "True (the default) when no gradient is computed for this tensor. Outputs of ops whose inputs "
         "need gradients get False. Only settable on leaves; integer and bool tensors may be set to "
         "False (as in Paddle) but never receive a gradient.")
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
      .def(
          "_register_backward_hook",
          [](const PyTensor& s, py::object fn) {
            auto holder = std::make_shared<PyCallable>(std::move(fn));
            return ag::register_post_accumulate_hook(s.t, [holder] {
              py::gil_scoped_acquire gil;
              holder->fn();
            });
          },
          "Calls `hook()` each time backward has accumulated a gradient into this leaf's .grad (Paddle's "
          "_register_backward_hook). Returns an id for _remove_backward_hook.")
      .def("_remove_backward_hook", [](const PyTensor& s, int64_t id) { return ag::remove_post_accumulate_hook(s.t, id); })
      .def(
          "_set_grad",
          [](const PyTensor& s, py::handle g) { ag::set_grad(s.t, g.is_none() ? oar::Tensor() : tensor_of(g).t); },
          "Replaces the accumulated gradient (None: no gradient).")
      .def("retain_grads", [](const PyTensor& s) { ag::retain_grad(s.t); },
           "Keeps .grad of a non-leaf tensor after backward (leaves always keep it).");

  // PyLayer.apply, after forward ran without recording: the outputs (None for non-Tensor or
  // non-differentiable ones) become fresh aliases whose history is a node calling `backward`. Fresh
  // aliases, so tensors the forward saved on ctx never point back at the node (no reference cycle).
  m.def("_pylayer_record", [](py::object backward, py::object ctx, py::handle inputs, py::list outputs,
                              bool materialize, const std::string& name) {
    std::vector<oar::Tensor> ins = tensor_list(inputs, "inputs", false);
    std::vector<oar::TensorMeta> in_meta, out_meta;
    std::vector<oar::Place> places;
    for (const auto& t : ins) in_meta.push_back({t.dtype(), t.dims()});
    std::vector<oar::Tensor> outs;
    for (auto o : outputs) {
      if (o.is_none()) {
        outs.emplace_back();
        out_meta.push_back({});
        places.push_back(oar::cpu_place());
        continue;
      }
      const oar::Tensor& t = tensor_of(o).t;
      outs.push_back(ag::detach(t));
      out_meta.push_back({t.dtype(), t.dims()});
      places.push_back(t.place());
    }
    auto node = std::make_shared<PyLayerNode>(std::move(backward), std::move(ctx), out_meta, in_meta, places, materialize);
    node->set_name(name + "_backward");
    ag::record_custom(node, ins, outs);
    py::list result;
    for (const auto& t : outs) result.append(t.defined() ? wrap(t) : py::none());
    return result;
  });

  m.def(
      "_queue_backward_callback",
      [](py::object fn) {
        auto holder = std::make_shared<PyCallable>(std::move(fn));
        ag::queue_backward_callback([holder] {
          py::gil_scoped_acquire gil;
          holder->fn();
        });
      },
      "Runs `fn()` once when the outermost running backward has finished its graph (from a hook).");
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
