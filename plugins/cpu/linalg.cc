// CPU kernels of the linalg op family (framework/src/ops_linalg.cc defines the ops).
#include "elementwise.h"

namespace oar_cpu {

void register_linalg_kernels(Registry& r) { (void)r; }

}  // namespace oar_cpu
