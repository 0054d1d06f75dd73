// The collective table of a build without a collective library (the ROCm build: Debian packages no
// RCCL). Creating a communicator is refused with the reason; no collective op is offered, so the
// conformance suite and oar.distributed see that this plugin has none.
#include "cuda_common.h"

namespace oar_cuda {
namespace {

using sdk::guard;

[[noreturn]] void refuse(const char* what) {
  throw sdk::Error(OAR_ERR_UNIMPLEMENTED,
                   std::string("gpu plugin " OAR_GPU_PLUGIN_NAME ": ") + what +
                       ": collectives need RCCL, which was not found when this plugin was built");
}

OarError* get_unique_id(OarCommUniqueId*) {
  return guard([] { refuse("get_unique_id"); });
}
OarError* comm_init(int32_t, int32_t, int32_t, const OarCommUniqueId*, OarComm*) {
  return guard([] { refuse("comm_init"); });
}
OarError* comm_destroy(OarComm) {
  return guard([] { refuse("comm_destroy"); });
}

}  // namespace

void fill_collective_table(OarCollectiveTable& t) {
  t.get_unique_id = get_unique_id;
  t.comm_init = comm_init;
  t.comm_destroy = comm_destroy;
}

}  // namespace oar_cuda
