// CPU kernels of the manip op family (framework/src/ops_manip.cc defines the ops).
#include "elementwise.h"

namespace oar_cpu {

void register_manip_kernels(Registry& r) { (void)r; }

}  // namespace oar_cpu
