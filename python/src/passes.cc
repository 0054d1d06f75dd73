// Private binding of the inference passes (framework/include/oar/ir/passes.h), for tests and for the
// Python predictor to build on: oar._C._run_inference_passes and _Executor parameter injection; and of
// the training passes (training_passes.h): oar._C._run_training_passes, used by to_static and Executor.
#include <oar/ir/executor.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>
#include <oar/ir/training_passes.h>

#include "common.h"

namespace oarpy {

using namespace oar::ir;

void init_passes(py::module_& m) {
  m.def(
      "_run_inference_passes",
      [](const Program& program, const py::dict& params, py::handle place, bool dce, bool constant_folding,
         bool cse, bool fuse_elementwise_act, bool fuse_matmul_bias, bool fold_conv_bn, bool memory_reuse) {
        Scope scope;
        for (auto& [k, v] : params) {
          std::string name = py::str(k);
          OAR_ENFORCE(is_tensor(v), oar::ErrorCode::kType,
                      "_run_inference_passes: params['" << name << "'] must be a Tensor, got "
                                                        << std::string(py::str(py::type::of(v))));
          scope.set(name, tensor_of(v).t);
        }
        PassOptions o;
        o.dce = dce;
        o.constant_folding = constant_folding;
        o.cse = cse;
        o.fuse_elementwise_act = fuse_elementwise_act;
        o.fuse_matmul_bias = fuse_matmul_bias;
        o.fold_conv_bn = fold_conv_bn;
        o.memory_reuse = memory_reuse;
        o.place = to_place(place);
        Program p = program;
        PassReport r = run_inference_passes(p, scope, o);
        py::dict out_params, report;
        for (auto& n : scope.names()) out_params[py::str(n)] = wrap(*scope.find(n));
        for (auto& s : r.passes) {
          py::dict d;
          d["ops_removed"] = s.ops_removed;
          d["ops_fused"] = s.ops_fused;
          d["vars_renamed"] = s.vars_renamed;
          report[py::str(s.pass)] = d;
        }
        report["ops_before"] = r.ops_before;
        report["ops_after"] = r.ops_after;
        return py::make_tuple(std::move(p), out_params, report);
      },
      py::arg("program"), py::arg("params"), py::arg("place") = py::none(), py::arg("dce") = true,
      py::arg("constant_folding") = true, py::arg("cse") = true, py::arg("fuse_elementwise_act") = true,
      py::arg("fuse_matmul_bias") = true, py::arg("fold_conv_bn") = true, py::arg("memory_reuse") = true,
      "Runs the inference passes on a copy of `program` with {name: Tensor} parameters; returns "
      "(optimised program, its parameters, {pass: stats, 'ops_before', 'ops_after'})");
  m.def(
      "_run_training_passes",
      [](const Program& forward, const std::optional<Program>& backward,
         const std::set<std::string>& pinned_forward, const std::set<std::string>& pinned_backward,
         py::handle place, bool fuse_gemm_epilogue, bool fuse_elewise_add_act, bool fuse_residual_layer_norm,
         bool fuse_attention, bool fuse_softmax_grad) {
        TrainingPassOptions o;
        o.fuse_gemm_epilogue = fuse_gemm_epilogue;
        o.fuse_elewise_add_act = fuse_elewise_add_act;
        o.fuse_residual_layer_norm = fuse_residual_layer_norm;
        o.fuse_attention = fuse_attention;
        o.fuse_softmax_grad = fuse_softmax_grad;
        o.place = to_place(place);
        Program f = forward;
        std::optional<Program> b = backward;
        PassReport r = run_training_passes(f, b ? &*b : nullptr, pinned_forward, pinned_backward, o);
        py::dict report;
        for (auto& s : r.passes) {
          py::dict d;
          d["ops_removed"] = s.ops_removed;
          d["ops_fused"] = s.ops_fused;
          report[py::str(s.pass)] = d;
        }
        report["ops_before"] = r.ops_before;
        report["ops_after"] = r.ops_after;
        py::object bo = b ? py::cast(std::move(*b)) : py::none();
        return py::make_tuple(std::move(f), bo, report);
      },
      py::arg("forward"), py::arg("backward"), py::arg("pinned_forward"), py::arg("pinned_backward"),
      py::arg("place") = py::none(), py::arg("fuse_gemm_epilogue") = true,
      py::arg("fuse_elewise_add_act") = true, py::arg("fuse_residual_layer_norm") = true,
      py::arg("fuse_attention") = true, py::arg("fuse_softmax_grad") = true,
      "Runs the training fusion passes on copies of `forward` and `backward` (None: one program) with the "
      "names each must keep; returns (forward, backward, {pass: stats, 'ops_before', 'ops_after'})");
  m.def(
      "_executor_set_params",
      [](Executor& e, const py::dict& params) {
        for (auto& [k, v] : params) {
          std::string name = py::str(k);
          OAR_ENFORCE(is_tensor(v), oar::ErrorCode::kType,
                      "_executor_set_params: params['" << name << "'] must be a Tensor");
          e.scope().set(name, tensor_of(v).t.to(e.place()));
        }
      },
      py::arg("executor"), py::arg("params"),
      "Puts {name: Tensor} into an _Executor's scope (parameters of an optimised program)");
  m.def(
      "_load_param_tensors",
      [](const Program& program, const py::bytes& data, py::handle place) {
        Scope s = load_param_scope(program, std::string(data), to_place(place));
        py::dict out;
        for (auto& n : s.names()) out[py::str(n)] = wrap(*s.find(n));
        return out;
      },
      py::arg("program"), py::arg("data"), py::arg("place") = py::none(),
      "Reads a combined .pdiparams written for `program` into {name: Tensor} on `place`");
}

}  // namespace oarpy
