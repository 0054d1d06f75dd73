// oar.amp's hooks into the core (framework/include/oar/core/amp.h): the thread's auto_cast configuration,
// built from the op lists the Python side keeps (python/oar/amp/amp_lists.py), and the cast counter.
#include <oar/core/amp.h>
#include <oar/core/op.h>
#include <oar/core/runtime.h>

#include "common.h"

namespace oarpy {
namespace {

namespace amp = oar::amp;
using ConfigPtr = std::shared_ptr<const amp::Config>;

struct PyAmpConfig {
  ConfigPtr c;
};

// lists: {device type name: (white ops, black ops, kept ops)}; device types not named get no table (the
// low dtype is not run there). Unknown op names are ignored (a list may name ops of other builds).
ConfigPtr make_config(int level, py::handle dtype, bool use_promote, const py::dict& lists) {
  auto c = std::make_shared<amp::Config>();
  if (level < 0 || level > 3) throw py::value_error("auto_cast: level must be O0, OD, O1 or O2");
  c->level = static_cast<amp::Level>(level);
  c->dtype = to_dtype(dtype);
  if (c->dtype != oar::DType::kFloat16 && c->dtype != oar::DType::kBFloat16)
    throw py::value_error(std::string("auto_cast: dtype must be float16 or bfloat16, got ") +
                          oar::dtype_name(c->dtype));
  c->use_promote = use_promote;
  const auto& types = oar::Runtime::get().device_types();
  const oar::OpRegistry& reg = oar::OpRegistry::get();
  c->policy.resize(types.size());
  for (size_t t = 0; t < types.size(); ++t) {
    py::str name(types[t].name);
    if (!lists.contains(name)) continue;
    auto table =
        lists[name]
            .cast<std::tuple<std::vector<std::string>, std::vector<std::string>, std::vector<std::string>>>();
    std::vector<int8_t>& p = c->policy[t];
    p.assign(static_cast<size_t>(reg.size()), amp::kPromote);
    auto mark = [&](const std::vector<std::string>& ops, amp::Policy v) {
      for (const std::string& op : ops)
        if (const oar::OpDef* d = reg.find(op)) p[d->id] = v;
    };
    mark(std::get<1>(table), amp::kBlack);
    mark(std::get<0>(table), amp::kWhite);
    mark(std::get<2>(table), amp::kKeep);
  }
  return c;
}

}  // namespace

void init_amp(py::module_& m) {
  py::class_<PyAmpConfig>(m, "_AmpConfig")
      .def_property_readonly("level", [](const PyAmpConfig& p) { return static_cast<int>(p.c->level); })
      .def_property_readonly("dtype", [](const PyAmpConfig& p) { return dtype_object(p.c->dtype); });
  m.def(
      "_amp_make_config",
      [](int level, py::handle dtype, bool use_promote, const py::dict& lists) {
        return PyAmpConfig{make_config(level, dtype, use_promote, lists)};
      },
      py::arg("level"), py::arg("dtype"), py::arg("use_promote"), py::arg("lists"));
  m.def(
      "_amp_set_config",
      [](py::object cfg) { amp::set_config(cfg.is_none() ? nullptr : cfg.cast<PyAmpConfig&>().c); },
      py::arg("config"),
      "Sets this thread's auto_cast configuration (None: off); clears the weight-cast cache.");
  m.def("_amp_config", []() -> py::object {
    ConfigPtr c = amp::config();
    if (!c) return py::none();
    return py::cast(PyAmpConfig{c});
  });
  m.def("_amp_cast_count", &amp::cast_count, "Casts auto_cast made on this thread (cache hits not counted).");
  m.def("_amp_clear_cache", &amp::clear_cache);
  m.def("_amp_collect_stats", &amp::set_collect_stats, py::arg("on"));
  m.def(
      "_amp_op_stats",
      [] {
        py::dict out;
        for (const auto& [name, c] : amp::op_stats())
          out[py::str(name)] = py::make_tuple(c[0], c[1], c[2], c[3]);
        return out;
      },
      "{op: (float16, bfloat16, float32, other) calls} since collection began on this thread.");
}

}  // namespace oarpy
