// Defect: collectives whose ranks only meet in process memory, and whose comm_init waits (up to ten
// minutes) for ranks that never come instead of recognising a foreign unique id. In-process ranks work;
// the conformance check collectives.two_processes must fail it by its own timeout with a readable
// message, not hang (tests/python/test_plugin_kit.py).
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "test_plugin_common.h"

namespace {

struct Group {
  std::mutex mu;
  std::condition_variable cv;
  int32_t nranks = 0, joined = 0;
  // The all_reduce rendezvous: each rank posts its buffers; the last one sums into every recv buffer.
  std::vector<const float*> send;
  std::vector<float*> recv;
  int32_t arrived = 0;
  uint64_t generation = 0;
};
struct Comm {
  std::shared_ptr<Group> group;
  int32_t rank;
};

std::mutex g_mu;
std::map<std::string, std::shared_ptr<Group>> g_groups;  // by unique id: this process only

OarError* get_unique_id(OarCommUniqueId* id) {
  std::random_device rd;
  for (size_t i = 0; i < sizeof(id->bytes); i += 4) {
    uint32_t v = rd();
    std::memcpy(id->bytes + i, &v, 4);
  }
  return nullptr;
}

OarError* comm_init(int32_t, int32_t nranks, int32_t rank, const OarCommUniqueId* id, OarComm* out) {
  std::shared_ptr<Group> g;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& slot = g_groups[std::string(reinterpret_cast<const char*>(id->bytes), sizeof(id->bytes))];
    if (!slot) {
      slot = std::make_shared<Group>();
      slot->nranks = nranks;
      slot->send.resize(nranks);
      slot->recv.resize(nranks);
    }
    g = slot;
  }
  std::unique_lock<std::mutex> lock(g->mu);
  ++g->joined;
  g->cv.notify_all();
  if (!g->cv.wait_for(lock, std::chrono::minutes(10), [&] { return g->joined == g->nranks; }))
    return oar::sdk::make_error(OAR_ERR_UNAVAILABLE,
                                "inproc_collectives: comm_init: the other ranks never came");
  *out = reinterpret_cast<OarComm>(new Comm{g, rank});
  return nullptr;
}

OarError* comm_destroy(OarComm comm) {
  delete reinterpret_cast<Comm*>(comm);
  return nullptr;
}

OarError* all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, OarComm comm,
                     OarStream) {
  if (dtype != OAR_DTYPE_FLOAT32 || op != OAR_REDUCE_SUM)
    return oar::sdk::make_error(OAR_ERR_UNIMPLEMENTED, "inproc_collectives: all_reduce: float32 sums only");
  Comm* c = reinterpret_cast<Comm*>(comm);
  Group& g = *c->group;
  std::unique_lock<std::mutex> lock(g.mu);
  const uint64_t gen = g.generation;
  g.send[c->rank] = static_cast<const float*>(send);
  g.recv[c->rank] = static_cast<float*>(recv);
  if (++g.arrived == g.nranks) {
    std::vector<float> sum(count, 0.0f);
    for (int32_t r = 0; r < g.nranks; ++r)
      for (uint64_t i = 0; i < count; ++i) sum[i] += g.send[r][i];
    for (int32_t r = 0; r < g.nranks; ++r) std::memcpy(g.recv[r], sum.data(), count * sizeof(float));
    g.arrived = 0;
    ++g.generation;
    g.cv.notify_all();
  } else {
    g.cv.wait(lock, [&] { return g.generation != gen; });
  }
  return nullptr;
}

}  // namespace

extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {
  oar_test_plugin::fill_info(info, "inproc_collectives", "test_inproc_coll", OAR_ABI_VERSION_MAJOR,
                             OAR_ABI_VERSION_MINOR);
  return 0;
}

extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services, OarRegistrar*,
                                                       OarPluginTables* tables) {
  oar_test_plugin::init_good(services, tables, "test_inproc_coll");
  static OarCollectiveTable collective{};
  collective.struct_size = sizeof(collective);
  collective.get_unique_id = get_unique_id;
  collective.comm_init = comm_init;
  collective.comm_destroy = comm_destroy;
  collective.all_reduce = all_reduce;
  OarPluginTables mine{};
  std::memcpy(&mine, tables, std::min(tables->struct_size, sizeof(mine)));
  mine.collective = &collective;
  oar::sdk::fill_sized(tables, mine);
  return nullptr;
}
