// oar.profiler's hooks into the core (framework/include/oar/core/profiler.h): start and stop the
// recording, user ranges, and the recorded events as plain tuples for the Python side to summarise.
#include <oar/core/profiler.h>

#include "common.h"

namespace oarpy {

void init_profiler(py::module_& m) {
  namespace prof = oar::profiler;
  m.def(
      "_profiler_start",
      [](bool record_shapes, bool profile_memory, bool devices) {
        prof::start(prof::Options{record_shapes, profile_memory, devices});
      },
      py::arg("record_shapes"), py::arg("profile_memory"), py::arg("devices"));
  // Each event: (name, category, start_ns, end_ns, thread, device, device_type, stream_id, shapes, bytes).
  m.def("_profiler_stop", [] {
    py::list out;
    for (const prof::Event& e : prof::stop())
      out.append(py::make_tuple(e.name, e.category, e.start_ns, e.end_ns, e.thread, e.device, e.device_type,
                                e.stream_id, e.shapes, e.bytes));
    return out;
  });
  m.def("_profiler_active", &prof::active);
  m.def("_profiler_push_range", &prof::push_range, py::arg("name"));
  m.def("_profiler_pop_range", &prof::pop_range);
}

}  // namespace oarpy
