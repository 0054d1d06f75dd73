// Random draws that oar.distribution needs beyond the math family's (ops_math.cc): standard_gamma,
// from which the Gamma, Beta and Dirichlet distributions sample, and the gradient of its draws with
// respect to the concentration. Schema, inference, gradient rule and samples here.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <cmath>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

void infer_standard_gamma(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = c.inputs[0];
}
void infer_standard_gamma_grad(InferContext& c) {
  require_floating(c, 0);
  OAR_ENFORCE(c.inputs[1].dtype == c.inputs[0].dtype && c.inputs[1].dims == c.inputs[0].dims,
              ErrorCode::kInvalidArgument,
              "standard_gamma_grad: out must have x's shape and dtype, got "
                  << c.inputs[1].dims.to_string() << " and " << c.inputs[0].dims.to_string());
  c.outputs[0] = c.inputs[0];
}

// Implicit reparameterisation: a draw x = F^-1(u; a) moves with the concentration as
// dx/da = -(dF(x; a)/da) / p(x; a) at fixed u, which standard_gamma_grad computes from (a, x).
std::vector<Tensor> standard_gamma_grad_rule(const GradContext& c) {
  return {ops::multiply(g0(c), call_op("standard_gamma_grad", {X(c), OUT(c)})[0])};
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  // Gamma(concentration x[i], rate 1), element i on its own stream random_bits(seed, offset + i) (as
  // poisson). Its gradient is the implicit reparameterisation one (standard_gamma_grad).
  def(r, "standard_gamma", {"x"}, {req_int("seed"), int_attr("offset", 0)}, infer_standard_gamma);
  def(r, "standard_gamma_grad", {"x", "out"}, {}, infer_standard_gamma_grad).differentiable = false;
  set_grad(r, "standard_gamma", standard_gamma_grad_rule, /*saved_inputs=*/1, /*saved_outputs=*/true);
}

void register_random_samples(OpRegistry& r) {
  using namespace sample;
  const char* why = "random numbers: the device's stream need not match the CPU's";
  AttrList seed{{"seed", int64_t{42}}, {"offset", int64_t{3}}};
  // Gamma(a) has mean a and standard deviation sqrt(a); a < 1 takes the boosted path.
  add(r, "standard_gamma",
      {random("alpha 3", {real({40, 25}, 3, 3)}, seed, 0, 1e9, 3, std::sqrt(3.0), why),
       random("alpha 0.5", {real({40, 25}, 0.5, 0.5)}, seed, 0, 1e9, 0.5, std::sqrt(0.5), why)});
  // (a, x) pairs on both sides of x = a + 1 (series and continued fraction); not smooth where the
  // method switches, so no finite-difference check of its own.
  add(r, "standard_gamma_grad",
      {nonsmooth(S("3x4", {real({3, 4}, 0.2, 6), real({3, 4}, 0.05, 9)})),
       nonsmooth(S("0-d", {real({}, 2, 2), real({}, 1.5, 1.5)}))});
}

}  // namespace oar
