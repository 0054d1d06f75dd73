// Manipulation, gather/scatter, sort and search ops.
// Each op's schema, shape/dtype inference and gradient rule, in one place (op_util.h).
#include <oar/core/error.h>

#include "grad_util.h"
#include "op_util.h"

namespace oar {
namespace {
using namespace opdef;
using namespace gradutil;

}  // namespace

void register_manip_ops(OpRegistry& r) { (void)r; }

void register_manip_grads(GradRuleSetter set) { (void)set; }

}  // namespace oar
