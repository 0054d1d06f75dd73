// Per-step helpers of the optimizers (oar.optimizer): one C++ call instead of a Python loop over the
// parameters, for clear_grad and for collecting the gradients a step updates.
#include <oar/core/autograd.h>

#include <cstring>

#include "common.h"

namespace oarpy {
namespace {

namespace ag = oar::autograd;

const oar::Tensor& param_of(py::handle h, size_t i) {
  if (!is_tensor(h))
    throw py::type_error("parameter " + std::to_string(i) + " is a " +
                         std::string(py::str(py::type::handle_of(h).attr("__name__"))) + ", not a Tensor");
  return tensor_of(h).t;
}

}  // namespace

void init_fastpath(py::module_& m) {
  m.def(
      "_clear_grads",
      [](py::sequence params, bool set_to_zero) {
        size_t i = 0;
        for (py::handle h : params) {
          const oar::Tensor& t = param_of(h, i++);
          if (ag::requires_grad(t)) ag::clear_grad(t, set_to_zero);
        }
      },
      py::arg("params"), py::arg("set_to_zero"),
      "Tensor.clear_gradient(set_to_zero) on every tensor of `params` with stop_gradient False.");
  m.def(
      "_params_grads",
      [](py::sequence params) {
        // key: per parameter 16 bytes (the object's address, has a gradient, dtype, place type, place
        // index); equal keys mean the same parameter objects, the same of them with gradients, the same
        // dtypes and places (the caller keeps the parameters alive, so addresses are not reused).
        constexpr size_t kStride = 16;
        std::string key(params.size() * kStride, '\0');
        py::list grads(params.size());
        size_t i = 0;
        for (py::handle h : params) {
          const oar::Tensor& t = param_of(h, i);
          oar::Tensor g = ag::requires_grad(t) ? ag::grad(t) : oar::Tensor();
          char* k = &key[i * kStride];
          const PyObject* obj = h.ptr();
          std::memcpy(k, &obj, sizeof(obj));
          k += 8;
          if (g.defined()) {
            const oar::Place pl = t.place();
            k[0] = 1;
            k[1] = static_cast<char>(t.dtype());
            std::memcpy(k + 2, &pl.type, sizeof(pl.type));
            std::memcpy(k + 4, &pl.index, sizeof(pl.index));
            grads[i] = wrap(g);
          } else {
            grads[i] = py::none();  // py::list(n) starts with empty (NULL) slots
          }
          ++i;
        }
        return py::make_tuple(std::move(grads), py::bytes(key));
      },
      py::arg("params"),
      "(grads, key): grads[i] is params[i].grad, or None when it has none or stop_gradient is True; key "
      "(bytes) describes which parameters have gradients, and their dtypes and places.");
}

}  // namespace oarpy
