// oar.distributed.TCPStore (PaddlePaddle's core.TCPStore / paddle.distributed store methods): the core's
// TCP key-value store (framework/include/oar/core/store.h), and private helpers to make a store the one
// the plugin services use for collective bootstrap.
#include <oar/core/store.h>

#include <chrono>
#include <cmath>

#include "common.h"

namespace oarpy {
namespace {

// Seconds (int or float, PaddlePaddle) or a datetime.timedelta (PyTorch) -> milliseconds.
int64_t timeout_ms_of(py::handle t, const char* what) {
  double seconds = 0;
  if (py::hasattr(t, "total_seconds"))
    seconds = t.attr("total_seconds")().cast<double>();
  else if (py::isinstance<py::int_>(t) || py::isinstance<py::float_>(t))
    seconds = t.cast<double>();
  else
    throw py::type_error(std::string(what) +
                         ": timeout must be seconds (a number) or a datetime.timedelta, got " +
                         std::string(py::str(py::type::handle_of(t).attr("__name__"))));
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw py::value_error(std::string(what) + ": timeout must be a positive number of seconds, got " +
                          std::to_string(seconds));
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(seconds * 1000)));
}

std::vector<std::string> keys_of(py::handle keys) {
  if (py::isinstance<py::str>(keys) || py::isinstance<py::bytes>(keys)) return {keys.cast<std::string>()};
  return keys.cast<std::vector<std::string>>();
}

// Value as bytes: bytes, bytearray and str (UTF-8) are accepted, as by PaddlePaddle and PyTorch.
std::string value_of(py::handle v) {
  if (py::isinstance<py::bytes>(v) || py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::bytearray>(v))
    return std::string(PyByteArray_AsString(v.ptr()), static_cast<size_t>(PyByteArray_Size(v.ptr())));
  throw py::type_error("TCPStore.set: value must be bytes or str, got " +
                       std::string(py::str(py::type::handle_of(v).attr("__name__"))));
}

}  // namespace

void init_store(py::module_& m) {
  using oar::TCPStore;
  py::class_<TCPStore, std::shared_ptr<TCPStore>>(m, "TCPStore", R"doc(
A key-value store over TCP shared by the processes of a job (rendezvous for collectives).

TCPStore(hostname, port, is_master, world_size, timeout=900, wait_for_workers=True, token=None)

The master process (is_master=True, usually rank 0) runs the server on `port` (0: any free port, read
it back from `.port`), listening on hostname's addresses only; every process connects to hostname:port, retrying until `timeout` seconds pass.
With wait_for_workers and world_size > 0 the master's constructor returns once world_size processes
made their store. set / get / add / wait / delete_key / check / num_keys; values are bytes; get and wait
block until the keys exist, raising RuntimeError after the timeout. `token` (None: the OAR_STORE_TOKEN
environment variable) is the job's shared secret: a master with one refuses peers without it, and a peer
with one refuses a master without it (RuntimeError naming the refusal). See docs/distributed.md.)doc")
      .def(py::init([](const std::string& host, int port, bool is_master, int world_size, py::handle timeout,
                       bool wait_for_workers, std::optional<std::string> token) {
             const int64_t ms = timeout_ms_of(timeout, "TCPStore");
             py::gil_scoped_release nogil;
             return std::make_shared<TCPStore>(host, port, is_master, world_size, ms, wait_for_workers,
                                               std::move(token));
           }),
           py::arg("hostname"), py::arg("port"), py::arg("is_master") = false, py::arg("world_size") = 1,
           py::arg("timeout") = 900, py::arg("wait_for_workers") = true, py::arg("token") = py::none())
      .def_property_readonly("host", &TCPStore::host)
      .def_property_readonly("port", &TCPStore::port)
      .def_property_readonly("is_master", &TCPStore::is_master)
      .def_property_readonly("world_size", &TCPStore::world_size)
      .def_property_readonly("timeout", [](const TCPStore& s) { return s.timeout_ms() / 1000.0; })
      .def(
          "set",
          [](TCPStore& s, const std::string& key, py::handle value) {
            std::string v = value_of(value);
            py::gil_scoped_release nogil;
            s.set(key, v);
          },
          py::arg("key"), py::arg("value"), "Stores `value` (bytes or str) under `key`.")
      .def(
          "get",
          [](TCPStore& s, const std::string& key) {
            std::string v;
            {
              py::gil_scoped_release nogil;
              v = s.get(key);
            }
            return py::bytes(v);
          },
          py::arg("key"),
          "The value under `key` as bytes, waiting until it is set (up to the store's timeout).")
      .def(
          "add",
          [](TCPStore& s, const std::string& key, int64_t value) {
            py::gil_scoped_release nogil;
            return s.add(key, value);
          },
          py::arg("key"), py::arg("value"),
          "Adds `value` to the integer under `key` (missing: 0); returns the new value.")
      .def(
          "wait",
          [](TCPStore& s, py::handle keys, py::handle timeout) {
            std::vector<std::string> k = keys_of(keys);
            const int64_t ms = timeout.is_none() ? -1 : timeout_ms_of(timeout, "TCPStore.wait");
            py::gil_scoped_release nogil;
            s.wait(k, ms);
          },
          py::arg("keys"), py::arg("timeout") = py::none(),
          "Waits until every key (a str or a list of str) exists; timeout in seconds (default: the store's).")
      .def(
          "check",
          [](TCPStore& s, py::handle keys) {
            std::vector<std::string> k = keys_of(keys);
            py::gil_scoped_release nogil;
            return s.check(k);
          },
          py::arg("keys"), "Whether every key exists now (no waiting).")
      .def(
          "delete_key",
          [](TCPStore& s, const std::string& key) {
            py::gil_scoped_release nogil;
            return s.delete_key(key);
          },
          py::arg("key"), "Removes `key`; returns whether it existed.")
      .def("num_keys", &TCPStore::num_keys, py::call_guard<py::gil_scoped_release>(),
           "Number of keys stored.")
      .def("__repr__", [](const TCPStore& s) {
        return "TCPStore(" + s.host() + ":" + std::to_string(s.port()) + (s.is_master() ? ", master" : "") +
               ", world_size=" + std::to_string(s.world_size()) + ")";
      });

  // Private: the store the plugin services (store_set / store_get) use; None: back to the in-process map.
  m.def(
      "_store_set_global", [](std::shared_ptr<TCPStore> s) { oar::set_global_store(std::move(s)); },
      py::arg("store").none(true));
  // The global store, made from the launcher's environment variables on first use (None when unset).
  m.def("_store_global", [] {
    py::gil_scoped_release nogil;
    return oar::global_store();
  });
}

}  // namespace oarpy
