// oar._C streams and events: the core's oar::Stream and oar::Event (framework/include/oar/core/runtime.h)
// under oar.device.Stream / Event (python/oar/device), and each device's current stream, which kernels,
// copies and new allocations use (oar.device.set_stream / stream_guard). oar.testing.plugin_conformance
// uses the same classes (_KitStream / _KitEvent are these).
#include <oar/core/runtime.h>

#include <cstdint>
#include <memory>

#include "common.h"

namespace oarpy {

void init_streams(py::module_& m) {
  py::class_<oar::Stream>(m, "_Stream",
                          "A stream of a device: one the core created, or a view of the device's own.")
      .def(py::init([](py::handle place, int32_t priority) {
             return std::make_unique<oar::Stream>(to_place(place), priority);
           }),
           py::arg("place"), py::arg("priority") = 0)
      .def_static(
          "current",
          [](py::handle place) {
            const oar::Place p = to_place(place);
            return oar::Stream::view(p, oar::Runtime::get().device(p).stream());
          },
          py::arg("place"), "A view of the device's current stream.")
      .def_static(
          "default",
          [](py::handle place) {
            const oar::Place p = to_place(place);
            return oar::Stream::view(p, oar::Runtime::get().device(p).default_stream());
          },
          py::arg("place"), "A view of the device's default stream.")
      .def_property_readonly("place", [](const oar::Stream& s) { return place_object(s.place()); })
      // The plugin's handle as an integer (a cudaStream_t on the gpu plugin); 0 for a synchronous device.
      .def_property_readonly("handle",
                             [](const oar::Stream& s) { return reinterpret_cast<uintptr_t>(s.handle()); })
      .def("synchronize", &oar::Stream::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("query", &oar::Stream::query)
      .def("wait", &oar::Stream::wait, py::arg("event"), py::call_guard<py::gil_scoped_release>());

  py::class_<oar::Event>(m, "_Event", "A marker in a stream's work, for ordering and timing.")
      .def(py::init([](py::handle place, bool timing) {
             return std::make_unique<oar::Event>(to_place(place), timing);
           }),
           py::arg("place"), py::arg("timing") = true)
      .def_property_readonly("place", [](const oar::Event& e) { return place_object(e.place()); })
      .def(
          "record",
          [](oar::Event& e, py::handle s) {
            if (s.is_none())
              e.record();  // the device's current stream
            else
              e.record(s.cast<oar::Stream&>());
          },
          py::arg("stream") = py::none())
      .def("synchronize", &oar::Event::synchronize, py::call_guard<py::gil_scoped_release>())
      .def("query", &oar::Event::query)
      .def("elapsed_ms", &oar::Event::elapsed_ms, py::arg("end"));

  // Makes `stream` its device's current stream. The caller (oar.device.set_stream) keeps the Python
  // object alive while it is current; the device only holds the plugin's handle.
  m.def("_set_current_stream",
        [](const oar::Stream& s) { oar::Runtime::get().device(s.place()).set_stream(s.handle()); });
}

}  // namespace oarpy
