// What the runtime found, for oar.utils.doctor (the same facts as the C++ oar-doctor) and oar.device.
#include "common.h"

#include <oar/core/runtime.h>

namespace oarpy {

void init_runtime(py::module_& m) {
  py::class_<oar::PluginRecord>(m, "PluginRecord", "What the loader decided about one candidate plugin file.")
      .def_readonly("path", &oar::PluginRecord::path)
      .def_readonly("name", &oar::PluginRecord::name)
      .def_readonly("device_type", &oar::PluginRecord::device_type)
      .def_readonly("version", &oar::PluginRecord::version)
      .def_readonly("vendor_versions", &oar::PluginRecord::vendor_versions)
      .def_readonly("abi_major", &oar::PluginRecord::abi_major)
      .def_readonly("abi_minor", &oar::PluginRecord::abi_minor)
      .def_readonly("score", &oar::PluginRecord::score)
      .def_readonly("loaded", &oar::PluginRecord::loaded)
      .def_readonly("reason", &oar::PluginRecord::reason)
      .def_readonly("num_devices", &oar::PluginRecord::num_devices)
      .def_readonly("num_kernels", &oar::PluginRecord::num_kernels)
      .def_readonly("warnings", &oar::PluginRecord::warnings)
      .def("__repr__", [](const oar::PluginRecord& r) {
        return "<PluginRecord " + r.path + (r.loaded ? " loaded>" : " skipped: " + r.reason + ">");
      });

  m.def("abi_version", [] { return py::make_tuple(OAR_ABI_VERSION_MAJOR, OAR_ABI_VERSION_MINOR, OAR_ABI_MINOR_WINDOW); },
        "(major, minor, accepted minor window) of the device ABI this core implements.");
  m.def("plugin_search_path", &oar::Runtime::plugin_search_path);
  m.def("plugin_records", [] { return oar::Runtime::get().plugin_records(); });
  m.def("load_plugin", [](const std::string& path) { return oar::Runtime::get().load_plugin(path); },
        "Loads one more plugin file; never raises for a bad plugin: the record says why it was skipped.");
  // [(id, name, available, device count)] for every device type the core knows.
  m.def("device_types", [] {
    py::list out;
    for (const auto& t : oar::Runtime::get().device_types())
      out.append(py::make_tuple(t.id, t.name, t.plugin != nullptr, t.count));
    return out;
  });
  // Opens a device and describes it: {name, place, total_memory, host_accessible, plugin}.
  m.def("device_properties", [](py::handle place) {
    oar::Device& d = oar::Runtime::get().device(to_place(place));
    const auto& p = d.properties();
    py::dict out;
    out["name"] = std::string(p.name);
    out["place"] = d.name();
    out["total_memory"] = p.total_memory;
    out["host_accessible"] = d.host_accessible();
    out["plugin"] = d.plugin_name();
    return out;
  });
  // [(op, [dtype names])] registered by the plugin of one device type.
  m.def("kernels_of", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t) throw py::value_error("unknown or unavailable device type '" + type + "'");
    py::list out;
    for (const auto& [op, dtypes] : oar::Runtime::get().kernels_of(t->id)) {
      std::vector<std::string> names;
      for (auto d : dtypes) names.push_back(oar::dtype_name(d));
      out.append(py::make_tuple(op, names));
    }
    return out;
  });
  m.def("has_kernel", [](const std::string& op, py::handle place, py::handle dtype) {
    return oar::has_kernel(op, to_place(place), to_dtype(dtype));
  });
  // {(op, device type, dtype): count} of CPU fallbacks since start (or the last reset).
  m.def("fallback_counts", [] {
    py::dict out;
    for (const auto& [k, n] : oar::fallback_counts())
      out[py::make_tuple(k.op, k.device_type, oar::dtype_name(k.dtype))] = n;
    return out;
  });
  m.def("reset_fallback_counts", &oar::reset_fallback_counts);
}

}  // namespace oarpy
