// What the runtime found, for oar.utils.doctor (the same facts as the C++ oar-doctor) and oar.device.
#include "common.h"

#include <oar/core/dispatch.h>
#include <oar/core/op.h>
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
  // Opens a device and describes it: {name, place, total_memory, compute_units, host_accessible,
// shared_device_ranks, plugin}.
  m.def("device_properties", [](py::handle place) {
    oar::Device& d = oar::Runtime::get().device(to_place(place));
    const auto& p = d.properties();
    py::dict out;
    out["name"] = std::string(p.name);
    out["place"] = d.name();
    out["total_memory"] = p.total_memory;
    out["compute_units"] = p.compute_units;  // streaming multiprocessors on a GPU
    out["host_accessible"] = d.host_accessible();
    out["shared_device_ranks"] = (p.capabilities & OAR_CAP_SHARED_DEVICE_RANKS) != 0;
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
  // ABI 1.2 placement query: would `place`'s device run this call itself (its kernel, and the kernel's
  // supports query says yes)? inputs: tensors or (shape, dtype) pairs; no data is read. -> (bool, reason).
  m.def(
      "kernel_supports",
      [](const std::string& op_name, py::handle place, py::sequence inputs, py::object attrs) {
        const oar::OpDef& op = oar::OpRegistry::get().at(op_name);
        std::vector<oar::TensorMeta> metas;
        for (py::handle h : inputs) {
          if (is_tensor(h)) {
            const oar::Tensor& t = tensor_of(h).t;
            metas.push_back({t.dtype(), t.dims()});
          } else {
            if (!py::isinstance<py::tuple>(h) || py::len(h) != 2)
              throw py::type_error("kernel_supports: each input must be a Tensor or a (shape, dtype) pair");
            py::tuple pair = py::reinterpret_borrow<py::tuple>(h);
            metas.push_back({to_dtype(pair[1]), oar::Dims(pair[0].cast<std::vector<int64_t>>())});
          }
        }
        oar::Attrs a;
        if (!attrs.is_none())
          for (auto kv : attrs.cast<py::dict>()) {
            const std::string name = kv.first.cast<std::string>();
            const oar::AttrDef* def = nullptr;
            for (const auto& d : op.attrs)
              if (name == d.name) def = &d;
            if (!def) throw py::type_error("kernel_supports: " + op_name + " has no attribute '" + name + "'");
            switch (def->type) {
              case oar::AttrType::kInt: a.set(def->name, kv.second.cast<int64_t>()); break;
              case oar::AttrType::kFloat: a.set(def->name, kv.second.cast<double>()); break;
              case oar::AttrType::kInts: a.set(def->name, kv.second.cast<std::vector<int64_t>>()); break;
              case oar::AttrType::kFloats: a.set(def->name, kv.second.cast<std::vector<double>>()); break;
              case oar::AttrType::kString: a.set(def->name, kv.second.cast<std::string>()); break;
            }
          }
        std::string reason;
        bool yes = oar::kernel_supports(op_name, metas, std::move(a), to_place(place), &reason);
        return py::make_tuple(yes, reason);
      },
      py::arg("op"), py::arg("place"), py::arg("inputs"), py::arg("attrs") = py::none());
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
