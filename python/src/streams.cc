// oar._C streams and events: the core's oar::Stream and oar::Event (framework/include/oar/core/runtime.h)
// under oar.device.Stream / Event (python/oar/device), and each device's current stream, which kernels,
// copies and new allocations use (oar.device.set_stream / stream_guard). oar.testing.plugin_conformance
// uses the same classes (_KitStream / _KitEvent are these).
#include <oar/core/graph.h>
#include <oar/core/runtime.h>

#include <cstdint>
#include <memory>

#include "common.h"

namespace oar {
// Exported by liboar_core (framework/src/internal.h): a plugin's OarError as oar::Error naming the plugin.
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
}  // namespace oar

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
  // Device graph capture (oar/core/graph.h): oar.device.cuda.graphs.CUDAGraph is this.
  py::class_<oar::DeviceGraph>(m, "_DeviceGraph", "Records a device stream's work once and replays it.")
      .def(py::init([](py::handle place) { return std::make_unique<oar::DeviceGraph>(to_place(place)); }),
           py::arg("place"))
      .def_property_readonly("place", [](const oar::DeviceGraph& g) { return place_object(g.place()); })
      .def("capture_begin", &oar::DeviceGraph::capture_begin, py::call_guard<py::gil_scoped_release>())
      .def("capture_end", &oar::DeviceGraph::capture_end, py::call_guard<py::gil_scoped_release>())
      .def("capture_abort", &oar::DeviceGraph::capture_abort)
      .def("replay", &oar::DeviceGraph::replay, py::call_guard<py::gil_scoped_release>())
      .def("reset", &oar::DeviceGraph::reset, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("capturing", &oar::DeviceGraph::capturing)
      .def_property_readonly("captured", &oar::DeviceGraph::captured)
      .def_property_readonly("num_kept", &oar::DeviceGraph::num_kept)
      .def("pool_stats", [](const oar::DeviceGraph& g) {
        oar::AllocatorStats s = g.pool_stats();
        py::dict d;
        d["allocated"] = s.allocated;
        d["reserved"] = s.reserved;
        d["peak_allocated"] = s.peak_allocated;
        d["peak_reserved"] = s.peak_reserved;
        return d;
      });
  m.def(
      "_device_memory_info",
      [](py::handle place) {
        oar::Device& d = oar::Runtime::get().device(to_place(place));
        OAR_ENFORCE(d.tables().device.memory_info, oar::ErrorCode::kUnimplemented,
                    d.name() << ": the " << d.plugin_name() << " plugin does not report memory_info");
        uint64_t free_bytes = 0, total = 0;
        oar::check_plugin_error(d.plugin_name(), "memory_info",
                                d.tables().device.memory_info(d.place().index, &free_bytes, &total));
        return py::make_tuple(free_bytes, total);
      },
      py::arg("place"), "(free, total) bytes as the device's plugin reports them.");
  m.def(
      "_graph_supported",
      [](py::handle place) {
        const oar::Place p = to_place(place);
        if (p.is_cpu()) return false;
        const OarStreamTable& t = oar::Runtime::get().device(p).tables().stream;
        return t.begin_capture && t.end_capture && t.graph_launch && t.graph_destroy;
      },
      py::arg("place"), "Whether the device's plugin implements graph capture (ABI 1.3).");
  m.def(
      "_graph_capturing",
      [](py::handle place) {
        const oar::Place p = to_place(place);
        return !p.is_cpu() && oar::Runtime::get().device(p).capture_graph() != nullptr;
      },
      py::arg("place"), "Whether a graph is capturing the device.");

  m.def("_set_current_stream",
        [](const oar::Stream& s) { oar::Runtime::get().device(s.place()).set_stream(s.handle()); });
}

}  // namespace oarpy
