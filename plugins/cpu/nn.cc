// CPU kernels of the nn op family (framework/src/ops_nn.cc defines the ops).
#include "elementwise.h"

namespace oar_cpu {

void register_nn_kernels(Registry& r) { (void)r; }

}  // namespace oar_cpu
