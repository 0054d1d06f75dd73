// CPU kernels of the math op family (framework/src/ops_math.cc defines the ops).
#include "elementwise.h"

namespace oar_cpu {

void register_math_ext_kernels(Registry& r) { (void)r; }

}  // namespace oar_cpu
