// The one place that knows every subsystem watching the dispatcher: installs their hooks in slot order
// (dispatch_hooks.h). The eager core itself depends on none of them (tests/unit/layering, CMake).
#include <oar/core/amp.h>
#include <oar/core/autograd.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/profiler.h>
#include <oar/ir/static_graph.h>

#include "internal.h"

namespace oar {

void install_core_hooks() {
  autograd::install_hook();
  ir::install_static_graph_hook();
  amp::install_hook();
  profiler::install_hook();
}

}  // namespace oar
