// Custom op libraries from Python: oar._C._load_custom_op_library(path) loads one and describes its ops;
// oar._C._custom_op_call(name, inputs, attrs) runs one (python/oar/utils/_custom_op.py wraps both).
#include <oar/core/custom_op.h>
#include <oar/custom_op_api.h>

#include "common.h"

namespace oarpy {
namespace {

py::dict describe(const oar::CustomOpInfo& i) {
  py::dict d;
  d["name"] = i.name;
  d["library"] = i.library;
  d["inputs"] = i.inputs;
  py::list kinds;
  for (uint32_t f : i.input_flags)
    kinds.append((f & OAR_CUSTOM_INPUT_VECTOR)     ? "vector"
                 : (f & OAR_CUSTOM_INPUT_OPTIONAL) ? "optional"
                                                   : "tensor");
  d["input_kinds"] = kinds;
  d["outputs"] = i.outputs;
  d["attrs"] = i.attr_names;
  d["attr_types"] = i.attr_types;
  d["inplace"] = i.inplace;
  d["kernel_devices"] = i.kernel_devices;
  return d;
}

[[noreturn]] void bad_attr(const oar::CustomOpInfo& op, size_t i, const char* expected, py::handle v) {
  throw py::type_error(
      op.name + ": attribute '" + op.attr_names[i] + "' (" + op.attr_types[i] + ") expects " + expected +
      ", got " + std::string(py::str(py::type::of(v).attr("__name__"))) + " " + std::string(py::repr(v)));
}

int64_t as_int(const oar::CustomOpInfo& op, size_t i, py::handle v) {
  if (PyFloat_Check(v.ptr()) || PyUnicode_Check(v.ptr()) || !PyIndex_Check(v.ptr()))
    bad_attr(op, i, "an int", v);
  return v.cast<int64_t>();
}
double as_float(const oar::CustomOpInfo& op, size_t i, py::handle v) {
  if (PyBool_Check(v.ptr()) || PyUnicode_Check(v.ptr()) ||
      !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()) || PyNumber_Check(v.ptr())))
    bad_attr(op, i, "a number", v);
  return v.cast<double>();
}

// One declared attribute, converted by its C++ type.
oar::AttrValue to_attr(const oar::CustomOpInfo& op, size_t i, py::handle v) {
  const std::string& t = op.attr_types[i];
  if (t == "bool") {
    if (!PyBool_Check(v.ptr()) && !py::isinstance(v, py::module_::import("numpy").attr("bool_")))
      bad_attr(op, i, "a bool", v);
    return int64_t{v.cast<bool>() ? 1 : 0};
  }
  if (t == "int" || t == "int64_t") return as_int(op, i, v);
  if (t == "float" || t == "double") return as_float(op, i, v);
  if (t == "std::string") {
    if (!PyUnicode_Check(v.ptr())) bad_attr(op, i, "a str", v);
    return v.cast<std::string>();
  }
  if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) bad_attr(op, i, "a list", v);
  if (t == "std::vector<int>" || t == "std::vector<int64_t>") {
    std::vector<int64_t> out;
    for (auto e : py::reinterpret_borrow<py::sequence>(v)) out.push_back(as_int(op, i, e));
    return out;
  }
  std::vector<double> out;
  for (auto e : py::reinterpret_borrow<py::sequence>(v)) out.push_back(as_float(op, i, e));
  return out;
}

const oar::Tensor& tensor_arg(const oar::CustomOpInfo& op, size_t slot, py::handle h,
                              const std::string& what) {
  if (!is_tensor(h))
    throw py::type_error(op.name + ": input '" + op.inputs[slot] + "' expects " + what + ", got " +
                         std::string(py::str(py::type::of(h).attr("__name__"))));
  return tensor_of(h).t;
}

py::tuple call(const std::string& name, const py::sequence& inputs, const py::sequence& attr_values) {
  const oar::OpDef& def = oar::OpRegistry::get().at(name);
  const oar::CustomOpInfo* info = oar::custom_op_info(def);
  if (!info) throw py::value_error("'" + name + "' is not a custom op");
  const oar::CustomOpInfo& op = *info;
  if (inputs.size() != op.inputs.size())
    throw py::type_error(op.name + ": expects " + std::to_string(op.inputs.size()) + " input(s), got " +
                         std::to_string(inputs.size()));
  if (attr_values.size() != op.attr_names.size())
    throw py::type_error(op.name + ": expects " + std::to_string(op.attr_names.size()) +
                         " attribute(s), got " + std::to_string(attr_values.size()));
  std::vector<oar::Tensor> flat;
  std::vector<int64_t> counts;
  for (size_t s = 0; s < op.inputs.size(); ++s) {
    py::handle h = inputs[s];
    const uint32_t f = op.input_flags[s];
    if (f & OAR_CUSTOM_INPUT_VECTOR) {
      if (is_tensor(h) || !(PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())))
        throw py::type_error(op.name + ": input '" + op.inputs[s] + "' expects a list of Tensors");
      py::sequence seq = py::reinterpret_borrow<py::sequence>(h);
      for (auto e : seq) flat.push_back(tensor_arg(op, s, e, "a list of Tensors"));
      counts.push_back(static_cast<int64_t>(seq.size()));
    } else if ((f & OAR_CUSTOM_INPUT_OPTIONAL) && h.is_none()) {
      counts.push_back(0);
    } else {
      flat.push_back(tensor_arg(op, s, h, (f & OAR_CUSTOM_INPUT_OPTIONAL) ? "a Tensor or None" : "a Tensor"));
      counts.push_back(1);
    }
  }
  oar::Attrs attrs;
  for (size_t i = 0; i < op.attr_names.size(); ++i)
    attrs.set(def.attrs[i].name, to_attr(op, i, attr_values[i]));
  if (def.variadic) attrs.set(oar::kCustomInputCounts, counts);
  oar::Place place = flat.empty() ? current_place() : flat[0].place();
  oar::Tensor outs[oar::kMaxOpOutputs];
  oar::run_op(def, flat.data(), static_cast<int32_t>(flat.size()), attrs, place, outs);
  py::tuple result(op.outputs.size());
  for (size_t o = 0; o < op.outputs.size(); ++o)
    result[o] = outs[o].defined() ? wrap(std::move(outs[o])) : py::none();
  return result;
}

}  // namespace

void init_custom_op(py::module_& m) {
  m.def(
      "_load_custom_op_library",
      [](const std::string& path) {
        std::vector<oar::CustomOpInfo> ops;
        {
          py::gil_scoped_release release;
          ops = oar::load_custom_op_library(path);
        }
        py::list out;
        for (const auto& i : ops) out.append(describe(i));
        return out;
      },
      py::arg("path"), "Loads a custom op library (once) and describes its ops.");
  m.def("_custom_op_call", &call, py::arg("name"), py::arg("inputs"), py::arg("attrs"),
        "Runs a custom op: inputs per declared slot (Tensor, None, or a list), attrs in declared order.");
}

}  // namespace oarpy
