// The ops' sample declarations (oar/core/op_sample.h) as plain Python data, for the op suite
// (python/oar/testing/ops.py).
#include <oar/core/op.h>

#include <cstring>

#include "common.h"

namespace oarpy {
namespace {

const char* kind_name(oar::SampleKind k) {
  switch (k) {
    case oar::SampleKind::kInteger:
      return "integer";
    case oar::SampleKind::kNonZero:
      return "nonzero";
    case oar::SampleKind::kHalves:
      return "halves";
    case oar::SampleKind::kUnique:
      return "unique";
    case oar::SampleKind::kSpd:
      return "spd";
    case oar::SampleKind::kTriangular:
      return "triangular";
    default:
      return "real";
  }
}

const char* view_name(oar::SampleView v) {
  switch (v) {
    case oar::SampleView::kTranspose:
      return "transpose";
    case oar::SampleView::kFlip:
      return "flip";
    case oar::SampleView::kExpand:
      return "expand";
    default:
      return "";
  }
}

py::object value_of(const oar::SampleAttrValue& v) {
  if (auto p = std::get_if<int64_t>(&v)) return py::int_(*p);
  if (auto p = std::get_if<double>(&v)) return py::float_(*p);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return py::cast(*p);
  if (auto p = std::get_if<std::vector<double>>(&v)) return py::cast(*p);
  return py::str(std::get<std::string>(v));
}

}  // namespace

void init_op_samples(py::module_& m) {
  // [{name, inputs: [{shape, kind, lo, hi, dtype (name or None), view, expand_from, specials, zeros}],
  //   attrs: {name: value}, dtypes (names or None), smooth, tol, check ("values" / "random"), reason,
  //   out_lo, out_hi, out_mean, out_std, written: [input indices the op writes into]}] of one op.
  m.def("_op_samples", [](const std::string& name) {
    const oar::OpDef& def = oar::OpRegistry::get().at(name);
    py::list out;
    for (const oar::OpSample& s : def.samples) {
      py::dict d;
      d["name"] = s.name;
      py::list inputs;
      for (const oar::SampleInput& in : s.inputs) {
        py::dict i;
        i["shape"] = py::cast(in.shape);
        i["kind"] = kind_name(in.kind);
        i["lo"] = in.lo;
        i["hi"] = in.hi;
        i["dtype"] = in.dtype < 0 ? py::object(py::none())
                                  : py::object(py::str(oar::dtype_name(static_cast<oar::DType>(in.dtype))));
        i["view"] = view_name(in.view);
        i["expand_from"] = py::cast(in.expand_from);
        i["specials"] = in.specials;
        i["zeros"] = in.zeros;
        inputs.append(i);
      }
      d["inputs"] = inputs;
      py::dict attrs;
      for (const auto& [k, v] : s.attrs) {
        const auto* d = std::get_if<int64_t>(&v);  // a dtype goes to Python by name, as the op takes it
        attrs[py::str(k)] = std::strcmp(k, "dtype") == 0 && d ? py::str(oar::dtype_name(static_cast<oar::DType>(*d)))
                                                              : value_of(v);
      }
      d["attrs"] = attrs;
      if (s.dtypes.empty()) {
        d["dtypes"] = py::none();
      } else {
        py::list names;
        for (oar::DType t : s.dtypes) names.append(oar::dtype_name(t));
        d["dtypes"] = names;
      }
      d["smooth"] = s.smooth;
      d["tol"] = s.tol;
      d["check"] = s.check == oar::SampleCheck::kRandom ? "random" : "values";
      d["reason"] = s.reason;
      d["out_lo"] = s.out_lo;
      d["out_hi"] = s.out_hi;
      d["out_mean"] = s.out_mean;
      d["out_std"] = s.out_std;
      py::list written;
      const auto n = static_cast<int32_t>(s.inputs.size());
      for (int32_t k = 0; k < n; ++k)
        if (oar::op_writes_input(def, k, n)) written.append(k);
      d["written"] = written;
      out.append(d);
    }
    return out;
  });
}

}  // namespace oarpy
