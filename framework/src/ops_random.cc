// Random draws that oar.distribution needs beyond the math family's (ops_math.cc): standard_gamma,
// from which the Gamma, Beta and Dirichlet distributions sample. Schema, inference and samples here.
#include <oar/core/error.h>

#include <cmath>

#include "op_samples.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;

void infer_standard_gamma(InferContext& c) {
  require_floating(c, 0);
  c.outputs[0] = c.inputs[0];
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  // Gamma(concentration x[i], rate 1), element i on its own stream random_bits(seed, offset + i) (as
  // poisson). No gradient: the draw is not reparameterised (Paddle's Beta/Dirichlet have no rsample).
  def(r, "standard_gamma", {"x"}, {req_int("seed"), int_attr("offset", 0)}, infer_standard_gamma)
      .differentiable = false;
}

void register_random_samples(OpRegistry& r) {
  using namespace sample;
  const char* why = "random numbers: the device's stream need not match the CPU's";
  AttrList seed{{"seed", int64_t{42}}, {"offset", int64_t{3}}};
  // Gamma(a) has mean a and standard deviation sqrt(a); a < 1 takes the boosted path.
  add(r, "standard_gamma",
      {random("alpha 3", {real({40, 25}, 3, 3)}, seed, 0, 1e9, 3, std::sqrt(3.0), why),
       random("alpha 0.5", {real({40, 25}, 0.5, 0.5)}, seed, 0, 1e9, 0.5, std::sqrt(0.5), why)});
}

}  // namespace oar
