// Collectives through NCCL. The unique id is NCCL's own (128 bytes, the ABI's OarCommUniqueId), handed
// between ranks by the caller through the core's store; every call is enqueued on the caller's stream.
#include <nccl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "cuda_common.h"

namespace oar_cuda {
namespace {

using sdk::guard;

static_assert(sizeof(ncclUniqueId) <= sizeof(OarCommUniqueId), "NCCL's unique id must fit the ABI's");

struct Comm {
  ncclComm_t nccl = nullptr;
  int32_t device = 0;
};

Comm* as_comm(OarComm c) {
  OAR_SDK_CHECK(c, OAR_ERR_INVALID_ARGUMENT, "gpu collectives: NULL communicator");
  return reinterpret_cast<Comm*>(c);
}
// A communicator a collective can run on: not aborted.
Comm* live_comm(OarComm c) {
  Comm* comm = as_comm(c);
  OAR_SDK_CHECK(comm->nccl, OAR_ERR_PRECONDITION, "gpu collectives: the communicator was aborted");
  return comm;
}

void nccl_check(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  const OarErrorCode code = r == ncclInvalidArgument || r == ncclInvalidUsage ? OAR_ERR_INVALID_ARGUMENT
                            : r == ncclSystemError || r == ncclRemoteError    ? OAR_ERR_UNAVAILABLE
                                                                              : OAR_ERR_EXTERNAL;
  throw sdk::Error(code,
                   std::string(what) + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")",
                   static_cast<int64_t>(r));
}

ncclDataType_t nccl_dtype(int32_t dtype) {
  switch (dtype) {
    case OAR_DTYPE_INT8:
      return ncclInt8;
    case OAR_DTYPE_UINT8:
      return ncclUint8;
    case OAR_DTYPE_BOOL:
      return ncclUint8;
    case OAR_DTYPE_INT32:
      return ncclInt32;
    case OAR_DTYPE_INT64:
      return ncclInt64;
    case OAR_DTYPE_FLOAT16:
      return ncclFloat16;
    case OAR_DTYPE_BFLOAT16:
      return ncclBfloat16;
    case OAR_DTYPE_FLOAT32:
      return ncclFloat32;
    case OAR_DTYPE_FLOAT64:
      return ncclFloat64;
  }
  throw sdk::Error(OAR_ERR_TYPE,
                   std::string("gpu collectives: NCCL has no ") + sdk::dtype_name(dtype) + " type");
}

ncclRedOp_t nccl_op(int32_t op, int32_t dtype) {
  OAR_SDK_CHECK(dtype != OAR_DTYPE_BOOL || op == OAR_REDUCE_MAX || op == OAR_REDUCE_MIN, OAR_ERR_TYPE,
                "gpu collectives: bool tensors reduce only with max (any) or min (all)");
  switch (op) {
    case OAR_REDUCE_SUM:
      return ncclSum;
    case OAR_REDUCE_PROD:
      return ncclProd;
    case OAR_REDUCE_MAX:
      return ncclMax;
    case OAR_REDUCE_MIN:
      return ncclMin;
    case OAR_REDUCE_AVG:
      return ncclAvg;
  }
  throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, "gpu collectives: unknown reduce op " + std::to_string(op));
}

// The devices each communicator (by unique id) has a rank on in this process. Entries stay: an id is
// used once, and a few bytes per communicator made is no leak worth a lifetime.
std::mutex& ranks_mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::set<int32_t>>& ranks_on_device() {
  static auto* m = new std::map<std::string, std::set<int32_t>>();
  return *m;
}

gpuStream_t as_stream(OarStream s) { return reinterpret_cast<gpuStream_t>(s); }

OarError* get_unique_id(OarCommUniqueId* id) {
  return guard([&] {
    ncclUniqueId u;
    nccl_check(ncclGetUniqueId(&u), "ncclGetUniqueId");
    std::memset(id->bytes, 0, sizeof(id->bytes));
    std::memcpy(id->bytes, &u, sizeof(u));
  });
}
OarError* comm_init(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                    OarComm* comm) {
  return guard([&] {
    OAR_SDK_CHECK(nranks > 0 && rank >= 0 && rank < nranks, OAR_ERR_INVALID_ARGUMENT,
                  "gpu collectives: rank " << rank << " is not in [0, " << nranks << ")");
    // NCCL runs one rank per GPU: two ranks of one communicator on one device would fail deep in
    // NCCL's bootstrap ("Duplicate GPU detected"); say so at once.
    const std::string key(reinterpret_cast<const char*>(id->bytes), sizeof(ncclUniqueId));
    {
      std::lock_guard<std::mutex> lk(ranks_mu());
      auto& used = ranks_on_device()[key];
      OAR_SDK_CHECK(
          used.insert(local_device).second, OAR_ERR_UNIMPLEMENTED,
          "gpu collectives: NCCL runs one rank per GPU, and another rank of this communicator already "
          "uses gpu:"
              << local_device << " in this process (rank " << rank << " of " << nranks << ")");
    }
    set_device(local_device);
    ncclUniqueId u;
    std::memcpy(&u, id->bytes, sizeof(u));
    auto c = std::make_unique<Comm>();
    c->device = local_device;
    nccl_check(ncclCommInitRank(&c->nccl, nranks, u, rank), "ncclCommInitRank");
    *comm = reinterpret_cast<OarComm>(c.release());
  });
}
OarError* comm_destroy(OarComm comm) {
  return guard([&] {
    Comm* c = as_comm(comm);
    set_device(c->device);
    // An aborted communicator was already freed by ncclCommAbort: only the wrapper is left.
    ncclResult_t r = c->nccl ? ncclCommDestroy(c->nccl) : ncclSuccess;
    delete c;
    nccl_check(r, "ncclCommDestroy");
  });
}
OarError* all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(
        ncclAllReduce(send, recv, count, nccl_dtype(dtype), nccl_op(op, dtype), c->nccl, as_stream(stream)),
        "ncclAllReduce");
  });
}
OarError* broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm, OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclBroadcast(buf, buf, count, nccl_dtype(dtype), root, c->nccl, as_stream(stream)),
               "ncclBroadcast");
  });
}
OarError* reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
                 OarComm comm, OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclReduce(send, recv, count, nccl_dtype(dtype), nccl_op(op, dtype), root, c->nccl,
                          as_stream(stream)),
               "ncclReduce");
  });
}
OarError* all_gather(const void* send, void* recv, uint64_t send_count, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclAllGather(send, recv, send_count, nccl_dtype(dtype), c->nccl, as_stream(stream)),
               "ncclAllGather");
  });
}
OarError* reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype, int32_t op,
                         OarComm comm, OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclReduceScatter(send, recv, recv_count, nccl_dtype(dtype), nccl_op(op, dtype), c->nccl,
                                 as_stream(stream)),
               "ncclReduceScatter");
  });
}
// NCCL has no all-to-all call: one send and one receive per peer, grouped so they run together.
OarError* all_to_all(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    int nranks = 0;
    nccl_check(ncclCommCount(c->nccl, &nranks), "ncclCommCount");
    const ncclDataType_t t = nccl_dtype(dtype);
    const uint64_t bytes = count_per_rank * static_cast<uint64_t>(sdk::dtype_size(dtype));
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < nranks; ++peer) {
      nccl_check(ncclSend(static_cast<const char*>(send) + peer * bytes, count_per_rank, t, peer, c->nccl,
                          as_stream(stream)),
                 "ncclSend");
      nccl_check(ncclRecv(static_cast<char*>(recv) + peer * bytes, count_per_rank, t, peer, c->nccl,
                          as_stream(stream)),
                 "ncclRecv");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  });
}
OarError* send(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm, OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclSend(buf, count, nccl_dtype(dtype), peer, c->nccl, as_stream(stream)), "ncclSend");
  });
}
OarError* recv(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm, OarStream stream) {
  return guard([&] {
    Comm* c = live_comm(comm);
    set_device(c->device);
    nccl_check(ncclRecv(buf, count, nccl_dtype(dtype), peer, c->nccl, as_stream(stream)), "ncclRecv");
  });
}
OarError* group_start() {
  return guard([&] { nccl_check(ncclGroupStart(), "ncclGroupStart"); });
}
OarError* group_end() {
  return guard([&] { nccl_check(ncclGroupEnd(), "ncclGroupEnd"); });
}
OarError* abort_comm(OarComm comm) {
  return guard([&] {
    Comm* c = as_comm(comm);
    if (!c->nccl) return;
    ncclComm_t n = c->nccl;
    c->nccl = nullptr;  // ncclCommAbort frees it; later calls on this communicator fail cleanly
    nccl_check(ncclCommAbort(n), "ncclCommAbort");
  });
}
OarError* get_async_error(OarComm comm, OarError** error) {
  return guard([&] {
    *error = nullptr;
    ncclResult_t async = ncclSuccess;
    Comm* c = as_comm(comm);
    if (!c->nccl) {
      *error = sdk::make_error(OAR_ERR_PRECONDITION, "NCCL: the communicator was aborted");
      return;
    }
    nccl_check(ncclCommGetAsyncError(c->nccl, &async), "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress)
      *error = sdk::make_error(OAR_ERR_EXTERNAL, std::string("NCCL: ") + ncclGetErrorString(async), async);
  });
}

}  // namespace

void fill_collective_table(OarCollectiveTable& t) {
  t.get_unique_id = get_unique_id;
  t.comm_init = comm_init;
  t.comm_destroy = comm_destroy;
  t.all_reduce = all_reduce;
  t.broadcast = broadcast;
  t.reduce = reduce;
  t.all_gather = all_gather;
  t.reduce_scatter = reduce_scatter;
  t.all_to_all = all_to_all;
  t.send = send;
  t.recv = recv;
  t.group_start = group_start;
  t.group_end = group_end;
  t.abort = abort_comm;
  t.get_async_error = get_async_error;
}

}  // namespace oar_cuda
