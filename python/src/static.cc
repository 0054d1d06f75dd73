// Static-graph building (oar/ir/static_graph.h) for oar.static and oar.jit: the program builder, the
// scope executors share, and symbolic-tensor queries. Private (underscored); oar.static wraps them.
#include <oar/ir/executor.h>
#include <oar/ir/inference_program.h>
#include <oar/ir/paddle_export.h>
#include <oar/ir/static_graph.h>

#include <optional>

#include "common.h"

namespace oarpy {

using namespace oar::ir;

void init_static(py::module_& m) {
  py::class_<Scope, std::shared_ptr<Scope>>(m, "_Scope", "Variables by name (oar::ir::Scope); private")
      .def(py::init([]() { return std::make_shared<Scope>(); }))
      .def("set", [](Scope& s, const std::string& name, const PyTensor& t) { s.set(name, t.t); })
      .def("find",
           [](Scope& s, const std::string& name) -> py::object {
             oar::Tensor* t = s.find(name);
             if (t == nullptr || !t->defined()) return py::none();
             return wrap(*t);
           })
      .def("erase", [](Scope& s, const std::string& name) { return s.erase(name); })
      .def("names", &Scope::names)
      .def("__len__", &Scope::size)
      .def("__contains__", [](const Scope& s, const std::string& n) { return s.has(n); });

  // oar.framework.unique_name installs its generate() here (None: per-program counters). The callable is
  // kept for the life of the process: it must not be released after the interpreter is gone.
  m.def(
      "_set_name_source",
      [](py::object fn) {
        if (fn.is_none()) {
          set_name_source(nullptr);
          return;
        }
        auto* keep = new py::object(std::move(fn));
        set_name_source([keep](const std::string& key) {
          py::gil_scoped_acquire gil;
          return (*keep)(key).cast<std::string>();
        });
      },
      py::arg("source"));

  py::class_<ProgramBuilder, std::shared_ptr<ProgramBuilder>>(m, "_ProgramBuilder",
                                                              "Records oar op calls into a program; private")
      .def(
          py::init([](std::shared_ptr<Program> p) { return std::make_shared<ProgramBuilder>(std::move(p)); }),
          py::arg("program") = nullptr)
      .def_property_readonly("desc", &ProgramBuilder::program_ptr)
      .def_property_readonly(
          "_address", [](const ProgramBuilder& b) { return reinterpret_cast<uintptr_t>(&b); },
          "Identity of the builder (a symbolic tensor's _symbolic_builder); private")
      .def_property("current_block", &ProgramBuilder::current_block, &ProgramBuilder::set_current_block)
      .def_property("op_role", &ProgramBuilder::op_role, &ProgramBuilder::set_op_role)
      .def_property("mode", &ProgramBuilder::mode, &ProgramBuilder::set_mode)
      .def(
          "redirect_output",
          [](ProgramBuilder& b, const PyTensor& produced, const PyTensor& target, int32_t first_op) {
            b.redirect_output(produced.t, target.t, first_op);
          },
          py::arg("produced"), py::arg("target"), py::arg("first_op"))
      .def("live_tensor",
           [](const ProgramBuilder& b, const std::string& name) -> py::object {
             oar::Tensor t = b.live_tensor(name);
             return t.defined() ? py::object(wrap(t)) : py::object(py::none());
           })
      .def("keep_alive_for", &ProgramBuilder::keep_alive_for, py::arg("block"))
      .def("note_live", [](ProgramBuilder& b, const PyTensor& t) { b.note_live(t.t); })
      .def("push_block", &ProgramBuilder::push_block)
      .def("pop_block", &ProgramBuilder::pop_block)
      .def("unique_name", &ProgramBuilder::unique_name, py::arg("prefix"))
      .def(
          "create_var",
          [](ProgramBuilder& b, const std::string& name, const std::vector<int64_t>& shape, py::handle dtype,
             py::handle place, bool persistable, bool is_parameter, bool stop_gradient) {
            return wrap(b.create_var(name, shape, to_dtype(dtype),
                                     place.is_none() ? current_place() : to_place(place), persistable,
                                     is_parameter, stop_gradient));
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype"), py::arg("place") = py::none(),
          py::arg("persistable") = false, py::arg("is_parameter") = false, py::arg("stop_gradient") = true)
      .def(
          "var",
          [](ProgramBuilder& b, const std::string& name, py::handle place) {
            return wrap(b.var(name, place.is_none() ? current_place() : to_place(place)));
          },
          py::arg("name"), py::arg("place") = py::none())
      .def(
          "bind_capture",
          [](ProgramBuilder& b, const PyTensor& t, const std::string& name, bool is_parameter) {
            b.bind_capture(t.t, name, is_parameter);
          },
          py::arg("tensor"), py::arg("name"), py::arg("is_parameter") = false)
      .def("capture", [](ProgramBuilder& b, const PyTensor& t) { return b.capture(t.t); })
      .def(
          "append_op",
          [](ProgramBuilder& b, const std::string& type,
             const std::map<std::string, std::vector<std::string>>& inputs,
             const std::map<std::string, std::vector<std::string>>& outputs, const py::dict& attrs,
             const std::map<std::string, int32_t>& block_attrs) {
            OpDesc op;
            op.type = type;
            for (auto& [k, v] : inputs) op.set_input(k, v);
            for (auto& [k, v] : outputs) op.set_output(k, v);
            for (auto& [k, v] : attrs) {
              const std::string name = py::str(k);
              if (py::isinstance<py::bool_>(v))
                op.set_attr(name, v.cast<bool>());
              else if (py::isinstance<py::int_>(v))
                op.set_attr(name, v.cast<int32_t>());
              else if (py::isinstance<py::float_>(v))
                op.set_attr(name, v.cast<float>());
              else if (py::isinstance<py::str>(v))
                op.set_attr(name, v.cast<std::string>());
              else
                throw py::type_error("append_op: attribute '" + name + "' must be a bool, int, float or str");
            }
            for (auto& [k, v] : block_attrs) op.set_attr(k, BlockRef{v});
            b.append_op(std::move(op));
          },
          py::arg("type"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict(),
          py::arg("block_attrs") = std::map<std::string, int32_t>{})
      .def("outer_reads", &ProgramBuilder::outer_reads, py::arg("block"))
      .def("outer_writes", &ProgramBuilder::outer_writes, py::arg("block"))
      .def(
          "rename", [](ProgramBuilder& b, const PyTensor& t, const std::string& n) { b.rename(t.t, n); },
          py::arg("tensor"), py::arg("new_name"))
      .def("captures", [](const ProgramBuilder& b) {
        py::dict d;
        for (auto& [name, t] : b.captures()) d[py::str(name)] = wrap(t);
        return d;
      });

  m.def(
      "_set_builder", [](std::shared_ptr<ProgramBuilder> b) { return set_current_builder(std::move(b)); },
      py::arg("builder").none(true), "Makes `builder` current (None: eager); returns the previous one");
  m.def(
      "_filter_ops_by_role",
      [](const Program& p, const std::vector<int32_t>& roles) {
        return std::make_shared<Program>(filter_ops_by_role(p, roles));
      },
      py::arg("program"), py::arg("roles"));
  m.def(
      "_select_mode",
      [](const Program& p, bool for_test) { return std::make_shared<Program>(select_mode(p, for_test)); },
      py::arg("program"), py::arg("for_test"));
  m.def(
      "_set_op_float64s",
      [](Program& p, int32_t block, int32_t op, const std::string& name, const std::vector<double>& values) {
        auto& ops = p.block(block).mutable_ops();
        OAR_ENFORCE(op >= 0 && op < static_cast<int32_t>(ops.size()), oar::ErrorCode::kOutOfRange,
                    "_set_op_float64s: block " << block << " has no op " << op);
        ops[op].set_attr(name, values);
      },
      py::arg("program"), py::arg("block"), py::arg("op"), py::arg("name"), py::arg("values"),
      "Sets a FLOAT64S attribute of one op (static learning rates follow their scheduler this way)");
  m.def(
      "_prepare_inference_program",
      [](const Program& p, const std::vector<std::string>& feeds, const std::vector<std::string>& fetches) {
        return std::make_shared<Program>(prepare_inference_program(p, feeds, fetches));
      },
      py::arg("program"), py::arg("feed_names"), py::arg("fetch_names"));
  m.def(
      "_export_paddle_dialect",
      [](const Program& p) {
        ExportReport report;
        auto out = std::make_shared<Program>(export_paddle_dialect(p, &report));
        return py::make_tuple(out, report.complete() ? std::string() : report.to_string());
      },
      py::arg("program"),
      "Native ops -> Paddle's op types where mapped: (program, report of ops kept native)");
  m.def("_persistable_inputs", &persistable_inputs, py::arg("program"));
  m.def("_is_symbolic_building", []() { return current_builder() != nullptr; });
  m.def("_current_builder", []() -> py::object {
    ProgramBuilder* b = current_builder();
    if (b == nullptr) return py::none();
    // the current builder is held by set_current_builder's thread-local shared_ptr; hand out a copy
    std::shared_ptr<ProgramBuilder> held = set_current_builder(nullptr);
    set_current_builder(held);
    return py::cast(held);
  });
  m.def("_is_symbolic", [](const PyTensor& t) { return is_symbolic(t.t); });
  m.def("_symbolic_name", [](const PyTensor& t) { return symbolic_name(t.t); });
  m.def(
      "_symbolic_builder",
      [](const PyTensor& t) -> uintptr_t {
        return is_symbolic(t.t) ? reinterpret_cast<uintptr_t>(t.t.impl()->symbol->builder) : 0;
      },
      "The _address of the builder whose program a symbolic tensor belongs to (0: none)");
  m.def("_unknown_dim", []() { return kUnknownDim; });

  // Run-time attributes (static_graph.h): {attribute: variable} of the op that just recorded `out`.
  auto var_list = [](const py::dict& vars) {
    std::vector<std::pair<std::string, oar::Tensor>> out;
    for (auto kv : vars) out.emplace_back(kv.first.cast<std::string>(), kv.second.cast<PyTensor>().t);
    return out;
  };
  m.def(
      "_bind_var_attrs",
      [var_list](const PyTensor& out, const py::dict& vars, std::optional<std::vector<int64_t>> dims) {
        oar::Dims d = dims ? oar::Dims(*dims) : oar::Dims();
        bind_var_attrs(out.t, var_list(vars), dims ? &d : nullptr);
      },
      py::arg("out"), py::arg("vars"), py::arg("dims") = py::none());
  m.def("_new_unknown_dim", []() { return new_unknown_extent(); });
  m.def("_record_view_var_attrs",
        [var_list](const PyTensor& base, const std::string& view, const py::dict& attrs,
                   const std::vector<int64_t>& dims, const py::dict& vars) {
          const oar::OpDef* def = find_view_op(view);
          if (def == nullptr)
            throw py::value_error("_record_view_var_attrs: '" + view + "' is not a view op");
          oar::Attrs a;
          for (const oar::AttrDef& d : def->attrs) {
            if (!attrs.contains(d.name)) continue;
            py::handle v = attrs[d.name];
            if (d.type == oar::AttrType::kInts)
              a.set(d.name, v.cast<std::vector<int64_t>>());
            else
              a.set(d.name, v.cast<int64_t>());
          }
          return PyTensor{record_view_var_attrs(base.t, view, a, oar::Dims(dims), var_list(vars))};
        });
}

}  // namespace oarpy
