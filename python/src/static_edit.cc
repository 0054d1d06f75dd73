// Program edits that control-flow gradients need (private helpers of oar.static.control_flow).
#include <oar/core/autograd.h>
#include <oar/ir/static_graph.h>

#include <algorithm>

#include "common.h"

namespace oarpy {

using namespace oar::ir;

void init_static_edit(py::module_& m) {
  // while_loop's gradient is built after its forward: the values each iteration's backward needs are
  // saved by ops recorded at the end of a block, then moved to where they must run (see
  // oar/static/control_flow.py, _WhileGrad).
  m.def(
      "_move_ops",
      [](ProgramBuilder& b, int32_t block, int32_t first, int32_t before_sub_block) {
        Program& p = b.program();
        OAR_ENFORCE(block >= 0 && block < p.num_blocks(), oar::ErrorCode::kInvalidArgument,
                    "_move_ops: the program has no block " << block);
        auto& ops = p.block(block).mutable_ops();
        const auto n = static_cast<int32_t>(ops.size());
        OAR_ENFORCE(first >= 0 && first <= n, oar::ErrorCode::kOutOfRange,
                    "_move_ops: block " << block << " has " << n << " ops, cannot move from op " << first);
        int32_t to = 0;
        if (before_sub_block >= 0) {
          to = -1;
          for (int32_t i = 0; i < first && to < 0; ++i)
            for (auto& [name, a] : ops[i].attrs)
              if (auto* r = std::get_if<BlockRef>(&a); r != nullptr && r->idx == before_sub_block) to = i;
          OAR_ENFORCE(to >= 0, oar::ErrorCode::kNotFound,
                      "_move_ops: no op before op " << first << " of block " << block << " runs block "
                                                    << before_sub_block);
        }
        std::rotate(ops.begin() + to, ops.begin() + first, ops.end());
      },
      py::arg("builder"), py::arg("block"), py::arg("first"), py::arg("before_sub_block"),
      "Moves ops [first, end) of `block` to just before the op running sub-block `before_sub_block` (the "
      "front of the block when it is -1)");

  // The gradient nodes of cond and while_loop differentiate their sub-graph with respect to their inputs
  // as independent variables (oar::autograd::partial_grad); None entries: no gradient given / reached.
  m.def(
      "_partial_grad",
      [](const py::list& outputs, const py::list& inputs, const py::list& grad_outputs) {
        auto tensors = [](const py::list& l, const char* what) {
          std::vector<oar::Tensor> out;
          for (auto x : l) {
            if (!is_tensor(x))
              throw py::type_error(std::string("_partial_grad: ") + what + " must be Tensors");
            out.push_back(tensor_of(x).t);
          }
          return out;
        };
        std::vector<oar::Tensor> res =
            oar::autograd::partial_grad(tensors(outputs, "outputs"), tensors(inputs, "inputs"),
                                        tensors(grad_outputs, "grad_outputs"), true, false, true);
        py::list out;
        for (const auto& t : res) out.append(t.defined() ? py::object(wrap(t)) : py::object(py::none()));
        return out;
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs"));
}

}  // namespace oarpy
