// A minimal, private binding of the program IR and the model-file formats, for testing from Python
// (phase 2's static-graph API will build on it): oar._C._ProgramDesc and the parameter-file helpers.
#include <oar/ir/executor.h>
#include <oar/ir/op_version.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cstring>

#include "common.h"

namespace oarpy {

namespace {

using namespace oar::ir;

py::object scalar_to_py(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::kBool:
      return py::bool_(s.b);
    case Scalar::Kind::kLong:
      return py::int_(s.i);
    case Scalar::Kind::kFloat64:
      return py::float_(s.r);
    case Scalar::Kind::kComplex128:
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(s.re, s.im));
  }
  return py::none();
}

// Attribute values as plain Python values; BLOCK(S) become block indices, VAR(S) variable names (the
// type names are in the op's "attr_types").
py::object attr_to_py(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, BlockRef>) {
          return py::int_(v.idx);
        } else if constexpr (std::is_same_v<T, VarRef>) {
          return py::str(v.name);
        } else if constexpr (std::is_same_v<T, Scalar>) {
          return scalar_to_py(v);
        } else if constexpr (std::is_same_v<T, std::vector<BlockRef>>) {
          py::list l;
          for (auto& b : v) l.append(b.idx);
          return std::move(l);
        } else if constexpr (std::is_same_v<T, std::vector<VarRef>>) {
          py::list l;
          for (auto& r : v) l.append(r.name);
          return std::move(l);
        } else if constexpr (std::is_same_v<T, std::vector<Scalar>>) {
          py::list l;
          for (auto& s : v) l.append(scalar_to_py(s));
          return std::move(l);
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          py::list l;
          for (bool b : v) l.append(py::bool_(b));
          return std::move(l);
        } else {
          return py::cast(v);
        }
      },
      a);
}

py::dict slots_to_py(const Slots& slots) {
  py::dict d;
  for (auto& [name, args] : slots) d[py::str(name)] = py::cast(args);
  return d;
}

py::dict block_to_py(const Block& b) {
  py::list vars, ops;
  for (const VarDesc& v : b.vars()) {
    py::dict d;
    d["name"] = v.name;
    d["type"] = var_type_name(v.type);
    if (v.has_tensor()) {
      d["dtype"] = dtype_object(v.dtype);
      d["shape"] = py::cast(v.shape);
      d["lod_level"] = v.lod_level;
    }
    d["persistable"] = v.persistable;
    d["is_parameter"] = v.is_parameter;
    d["stop_gradient"] = v.stop_gradient;
    d["need_check_feed"] = v.need_check_feed;
    vars.append(d);
  }
  for (const OpDesc& op : b.ops()) {
    py::dict d, attrs, types;
    d["type"] = op.type;
    d["inputs"] = slots_to_py(op.inputs);
    d["outputs"] = slots_to_py(op.outputs);
    for (auto& [name, a] : op.attrs) {
      attrs[py::str(name)] = attr_to_py(a);
      types[py::str(name)] = attr_type_name(attr_type(a));
    }
    d["attrs"] = attrs;
    d["attr_types"] = types;
    ops.append(d);
  }
  py::dict out;
  out["idx"] = b.idx();
  out["parent_idx"] = b.parent_idx();
  out["forward_block_idx"] = b.forward_block_idx();
  out["vars"] = vars;
  out["ops"] = ops;
  return out;
}

std::string bytes_of(const py::bytes& b) { return std::string(b); }

py::array tensor_to_numpy(const TensorData& t) {
  std::vector<py::ssize_t> shape(t.dims.begin(), t.dims.end());
  py::array a(numpy_dtype(t.dtype), shape);
  if (!t.data.empty()) std::memcpy(a.mutable_data(), t.data.data(), t.data.size());
  return a;
}

TensorData numpy_to_tensor(const std::string& name, py::handle h) {
  py::array a = py::array::ensure(h, py::array::c_style);
  OAR_ENFORCE(a, oar::ErrorCode::kType, "_save_combined_params: '" << name << "' is not an array");
  TensorData t;
  OAR_ENFORCE(numpy_to_dtype(a.dtype(), &t.dtype), oar::ErrorCode::kType,
              "_save_combined_params: '" << name << "' has a numpy dtype oar does not support");
  for (py::ssize_t i = 0; i < a.ndim(); ++i) t.dims.push_back(a.shape(i));
  const auto* p = static_cast<const uint8_t*>(a.data());
  t.data.assign(p, p + a.nbytes());
  return t;
}

}  // namespace

void init_program(py::module_& m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "_ProgramDesc", "Program IR (framework/include/oar/ir/program.h); private")
      .def_static(
          "from_bytes", [](const py::bytes& b) { return Program::parse(bytes_of(b)); }, py::arg("data"),
          "Parses and validates ProgramDesc bytes (a .pdmodel); ValueError on bad input")
      .def("to_bytes", [](const Program& p) { return py::bytes(p.serialize()); })
      .def("to_string", &Program::to_string)
      .def("__str__", &Program::to_string)
      .def("clone", &Program::clone)
      .def("validate", [](const Program& p) { p.validate(); })
      .def_property_readonly("num_blocks", &Program::num_blocks)
      .def("num_ops", [](const Program& p, int32_t b) { return p.block(b).ops().size(); }, py::arg("block") = 0)
      .def("num_vars", [](const Program& p, int32_t b) { return p.block(b).vars().size(); }, py::arg("block") = 0)
      .def_property_readonly("version", [](const Program& p) { return p.version(); })
      .def_property_readonly("op_version_map",
                             [](const Program& p) {
                               py::dict d;
                               for (auto& [name, v] : p.op_version_map()) d[py::str(name)] = v;
                               return d;
                             })
      .def(
          "block", [](const Program& p, int32_t i) { return block_to_py(p.block(i)); }, py::arg("idx"))
      .def("param_names", &combined_param_names)
      .def("__eq__", [](const Program& a, const Program& b) { return a == b; });
  m.def(
      "_paddle_op_types",
      []() {
        // native op name -> the Paddle type its export writes (the op map's canonical exports)
        py::dict out;
        for (const oar::ir::PaddleOpMapping& m : oar::ir::paddle_op_map()) {
          for (const auto* names : {&m.exported_from, &m.exported_views})
            for (const std::string& n : *names)
              if (!out.contains(py::str(n))) out[py::str(n)] = m.paddle_type;
        }
        return out;
      },
      "{native op name: Paddle op type} from the Paddle op map (Operator.type reports these)");
  m.def(
      "_load_combined_params",
      [](const Program& p, const py::bytes& b) {
        py::dict out;
        for (auto& [name, t] : load_combined_params(p, bytes_of(b))) out[py::str(name)] = tensor_to_numpy(t);
        return out;
      },
      py::arg("program"), py::arg("data"), "Reads a .pdiparams written for `program`: {name: numpy array}");
  m.def(
      "_save_combined_params",
      [](const py::dict& arrays) {
        std::map<std::string, TensorData> params;
        for (auto& [k, v] : arrays) {
          std::string name = py::str(k);
          params.emplace(name, numpy_to_tensor(name, v));
        }
        return py::bytes(save_combined_params(params));
      },
      py::arg("arrays"), "Writes {name: array} as a .pdiparams (sorted by name)");
  m.def(
      "_parse_params_info",
      [](const py::bytes& b) {
        py::dict out;
        for (auto& [name, i] : parse_params_info(bytes_of(b))) {
          py::dict d;
          d["structured_name"] = i.structured_name;
          d["stop_gradient"] = i.stop_gradient;
          d["trainable"] = i.trainable;
          out[py::str(name)] = d;
        }
        return out;
      },
      py::arg("data"));
  m.def(
      "_serialize_params_info",
      [](const py::dict& info) {
        std::map<std::string, ParamInfo> out;
        for (auto& [k, v] : info) {
          py::dict d = v.cast<py::dict>();
          out[py::str(k)] = ParamInfo{d["structured_name"].cast<std::string>(),
                                      d["stop_gradient"].cast<bool>(), d["trainable"].cast<bool>()};
        }
        return py::bytes(serialize_params_info(out));
      },
      py::arg("info"));

  // The block-0 executor (framework/include/oar/ir/executor.h); private until oar.static wraps it.
  py::class_<Executor>(m, "_Executor", "Runs block 0 of a _ProgramDesc on one place; private")
      .def(py::init([](const Program& p, py::handle place, bool gc, bool stats, std::shared_ptr<Scope> scope,
                       std::vector<std::string> feed_names, std::vector<std::string> fetch_names,
                       std::vector<std::string> keep, bool reuse_buffers) {
             ExecutorOptions o;
             o.reuse_buffers = reuse_buffers;
             o.garbage_collect = gc;
             o.collect_stats = stats;
             o.scope = std::move(scope);
             o.feed_names = std::move(feed_names);
             o.fetch_names = std::move(fetch_names);
             o.keep = std::move(keep);
             return std::make_unique<Executor>(p, to_place(place), o);
           }),
           py::arg("program"), py::arg("place") = py::none(), py::arg("garbage_collect") = true,
           py::arg("collect_stats") = false, py::arg("scope") = nullptr,
           py::arg("feed_names") = std::vector<std::string>{},
           py::arg("fetch_names") = std::vector<std::string>{}, py::arg("keep") = std::vector<std::string>{},
           py::arg("reuse_buffers") = true)
      .def_property_readonly("scope", &Executor::scope_ptr)
      .def(
          "load_params", [](Executor& e, const py::bytes& b) { e.load_params(bytes_of(b)); }, py::arg("data"),
          "Loads a combined .pdiparams (bytes) into the executor's scope")
      .def_property_readonly("feed_names", &Executor::feed_names)
      .def_property_readonly("fetch_names", &Executor::fetch_names)
      .def(
          "run",
          [](Executor& e, const py::dict& feeds) {
            std::map<std::string, oar::Tensor> f;
            for (auto& [k, v] : feeds) {
              std::string name = py::str(k);
              OAR_ENFORCE(is_tensor(v), oar::ErrorCode::kType,
                          "_Executor.run: feed '" << name << "' must be a Tensor, got "
                                                  << std::string(py::str(py::type::of(v))));
              f.emplace(name, tensor_of(v).t);
            }
            std::vector<oar::Tensor> r = e.run(f);
            py::list out;
            for (auto& t : r) out.append(wrap(t));
            return out;
          },
          py::arg("feeds"), "Runs with {feed name: Tensor}; returns the fetched Tensors in col order")
      .def("stats", [](Executor& e) {
        py::dict d;
        d["live_tensors"] = e.stats().live_tensors;
        d["peak_live_tensors"] = e.stats().peak_live_tensors;
        d["peak_live_bytes"] = e.stats().peak_live_bytes;
        d["released"] = e.stats().released;
        d["runs"] = e.stats().runs;
        d["reused"] = e.stats().reused;
        d["recycled_now"] = e.scope().recycled_count();
        return d;
      });
}

}  // namespace oarpy
