// custom_cpu: a complete oar backend plugin built against the oar SDK alone, the template a hardware
// vendor copies (README.md, docs/plugin_guide.md).
//
// The "device" is host memory pretending to be device memory: the plugin does not tell the core it may
// read it (no OAR_CAP_HOST_ACCESSIBLE), so every transfer goes through memcpy exactly as it would for a
// real accelerator. Each stream is a worker thread with a queue: kernels, copies and event records are
// enqueued and the call returns at once, so a missing synchronisation in the core or in this plugin shows
// up as a wrong answer (CUSTOM_CPU_LATENCY_US delays every task to make that likelier).
//
// Streams, events and the profiler are the SDK's worker-thread implementation (oar/sdk/streams.h), the
// tables and entry points come from oar/sdk/tables.h (OAR_SDK_PLUGIN). What a port to real hardware
// replaces: the memory table (allocation), the stream/event tables (the vendor's queues and events,
// instead of worker_streams().install), and the kernel bodies (which would launch device code on the
// stream instead of enqueueing a host lambda). The shape of the file stays: a setup function that fills
// the tables and registers kernels, every entry point returning an OarError* through oar::sdk::guard.
//
// Environment (read once at init): CUSTOM_CPU_DEVICE_COUNT (default 2), CUSTOM_CPU_MEMORY_MB per
// device (default 1024), CUSTOM_CPU_LATENCY_US per task (default 0), CUSTOM_CPU_COMM_TIMEOUT_MS (how long
// a collective waits for the other ranks, default 60000), CUSTOM_CPU_COLLECTIVE_TRANSPORT=store (move
// collective data through the core's key-value store even when all ranks are in this process).
#include <oar/sdk.h>
#include <oar/sdk/store.h>
#include <unistd.h>  // gethostname, getpid

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

// Fault injection for the plugin kit's own tests (CMake option CUSTOM_CPU_TEST_FAULTS): `add` gives wrong
// numbers, stream_wait_event does not wait (and memset sleeps 100 ms first, so that shows on any machine),
// the profiler calls trace_event without checking an older core has it, a copy of exactly
// kFaultyCopyBytes bytes fails, and `relu` fails on a tensor of kFaultyKernelNumel
// elements. A vendor deletes this; it exists so the conformance suite can be seen to fail and so errors can
// be seen to reach Python with this plugin's message.
#ifdef CUSTOM_CPU_TEST_FAULTS
constexpr bool kFaults = true;
#else
constexpr bool kFaults = false;
#endif
constexpr uint64_t kFaultyCopyBytes = 4 * 1013;
constexpr int64_t kFaultyKernelNumel = 1019;

namespace {

namespace sdk = oar::sdk;
using sdk::Error;

constexpr uint64_t kAlignment = 64;

uint64_t env_uint(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  return (end && *end == 0) ? x : fallback;
}

// ---- plugin state ------------------------------------------------------------------------------------
struct Allocation {
  uint64_t bytes;
  int32_t device;
  int32_t kind;
};

struct State {
  int32_t device_count = 2;
  uint64_t memory_per_device = 1ull << 30;
  uint64_t latency_us = 0;
  int64_t comm_timeout_ms = 60000;         // how long a rank waits for the others
  bool collectives_through_store = false;  // CUSTOM_CPU_COLLECTIVE_TRANSPORT=store
  std::mutex mu;
  std::map<const void*, Allocation> allocations;  // every pointer we handed out
  std::vector<uint64_t> used;                     // device bytes in use, per device
};
// Never destroyed: the core may free memory during its own exit-time cleanup, after this library's
// statics would be gone.
State& state() {
  static State* s = new State();
  return *s;
}

void check_device(int32_t device) {
  const int32_t n = state().device_count;
  OAR_SDK_CHECK(device >= 0 && device < n, OAR_ERR_OUT_OF_RANGE,
                "custom_cpu: no device " << device << " (there are " << n << ")");
}

// Runs fn on `stream` (enqueued; returns at once) or right now when stream is NULL (synchronous).
void submit(int32_t device, OarStream stream, const char* name, const char* category,
            std::function<void()> fn) {
  sdk::worker_streams().submit(device, stream, name, category, std::move(fn));
}

// ---- device table ------------------------------------------------------------------------------------
OarError* device_count(int32_t* count) {
  return sdk::guard([&] { *count = state().device_count; });
}
OarError* device_open(int32_t device) {
  return sdk::guard([&] { check_device(device); });
}
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  return sdk::guard([&] {
    check_device(device);
    OarDeviceProperties p{};
    p.struct_size = sizeof(p);
    std::snprintf(p.name, sizeof(p.name), "custom_cpu sample device %d", device);
    p.total_memory = state().memory_per_device;
    // Not OAR_CAP_HOST_ACCESSIBLE: the core must copy through memcpy, as for real device memory.
    p.capabilities = OAR_CAP_ASYNC_STREAMS | OAR_CAP_FP64;
    p.alloc_alignment = kAlignment;
    p.alloc_chunk_bytes = 0;  // the core's default growth chunk
    p.compute_units = 1;
    p.max_streams = 0;
    sdk::fill_sized(props, p);
  });
}
OarError* device_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes) {
  return sdk::guard([&] {
    check_device(device);
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    *total_bytes = s.memory_per_device;
    *free_bytes = s.memory_per_device - s.used[device];
  });
}

// ---- memory table ------------------------------------------------------------------------------------
OarError* mem_allocate(int32_t device, int32_t kind, uint64_t bytes, void** ptr) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(kind >= OAR_MEM_HOST && kind <= OAR_MEM_UNIFIED, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: unknown memory kind " << kind);
    State& s = state();
    if (kind == OAR_MEM_DEVICE) {
      check_device(device);
      std::lock_guard<std::mutex> lk(s.mu);
      OAR_SDK_CHECK(bytes <= s.memory_per_device - s.used[device], OAR_ERR_OUT_OF_MEMORY,
                    "custom_cpu: out of device memory on device "
                        << device << ": " << bytes << " bytes requested, "
                        << (s.memory_per_device - s.used[device])
                        << " free (CUSTOM_CPU_MEMORY_MB sets the size)");
    }
    const uint64_t rounded =
        std::max<uint64_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    void* p = std::aligned_alloc(kAlignment, rounded);
    OAR_SDK_CHECK(p, OAR_ERR_OUT_OF_MEMORY, "custom_cpu: the host could not allocate " << bytes << " bytes");
    std::lock_guard<std::mutex> lk(s.mu);
    s.allocations[p] = Allocation{bytes, device, kind};
    if (kind == OAR_MEM_DEVICE) s.used[device] += bytes;
    *ptr = p;
  });
}
OarError* mem_free(int32_t device, int32_t kind, void* ptr) {
  return sdk::guard([&] {
    if (!ptr) return;
    State& s = state();
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = s.allocations.find(ptr);
    OAR_SDK_CHECK(it != s.allocations.end() && it->second.kind == kind, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: free of a pointer this plugin did not allocate as kind " << kind);
    if (kind == OAR_MEM_DEVICE) {
      OAR_SDK_CHECK(it->second.device == device, OAR_ERR_INVALID_ARGUMENT,
                    "custom_cpu: free on device " << device << " of memory of device " << it->second.device);
      s.used[device] -= it->second.bytes;
    }
    s.allocations.erase(it);
    std::free(ptr);
  });
}
OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (!bytes) return;
    submit(device, stream, "memset", "memcpy", [=] {
      // With the broken wait, a slow producer makes the consumer read stale bytes on any machine, so the
      // negative test does not depend on thread timing.
      if (kFaults) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::memset(ptr, value, bytes);
    });
  });
}
OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation dst_loc, const void* src,
                     OarMemLocation src_loc, uint64_t bytes, OarStream stream) {
  return sdk::guard([&] {
    if (!bytes) return;
    OAR_SDK_CHECK(dst && src, OAR_ERR_INVALID_ARGUMENT, "custom_cpu: memcpy with a NULL pointer");
    if (kFaults && bytes == kFaultyCopyBytes)
      throw Error(OAR_ERR_EXTERNAL, "custom_cpu: injected copy failure (" + std::to_string(bytes) + " bytes)",
                  77);
    if (dst_loc.kind == OAR_MEM_DEVICE) check_device(dst_loc.device);
    if (src_loc.kind == OAR_MEM_DEVICE) check_device(src_loc.device);
    if (stream && src_loc.kind == OAR_MEM_HOST) {
      // A pageable host source is staged now (as CUDA does), so the caller may reuse it at once.
      auto staging = std::make_shared<std::vector<unsigned char>>(
          static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
      submit(device, stream, "memcpy", "memcpy",
             [dst, staging] { std::memcpy(dst, staging->data(), staging->size()); });
      return;
    }
    submit(device, stream, "memcpy", "memcpy", [dst, src, bytes] { std::memmove(dst, src, bytes); });
  });
}

// The deliberately broken wait (CUSTOM_CPU_TEST_FAULTS): orders nothing.
OarError* faulty_wait_event(int32_t, OarStream, OarEvent) { return nullptr; }

// ---- collectives -------------------------------------------------------------------------------------
// Communicators created with the same unique id form a group. Every call is enqueued on the caller's
// stream and runs when the stream reaches it; the call's sequence number (counted per communicator, in
// the order the rank enqueues) matches the calls of the different ranks. A real backend calls its
// vendor's collective library (NCCL-like) here instead. Two transports move the data:
//
// - In-process (all ranks in this process): the rank's task waits at a rendezvous for the same call of
//   every other rank; the last to arrive computes every rank's result into scratch buffers first (so
//   in-place calls, send == recv, are safe) and copies them out. Ranks must therefore run on different
//   streams, as they do on a real device.
// - Store (ranks in several processes, or CUSTOM_CPU_COLLECTIVE_TRANSPORT=store): each rank writes its
//   input to the core's key-value store (services->store_set) under "<prefix>/c<seq>/r<rank>", behind a
//   small header saying what it called, reads every other rank's key (store_get waits for it), checks
//   the headers agree, and computes its own result locally with the same code, in rank order, so every
//   rank gets bit-identical results. The store has no delete: every call leaves one key per rank behind,
//   so this is for tests and small (bootstrap-scale) data. A real device moves data over its fabric and
//   uses the store only to share the unique id.
//
// comm_init picks the transport: each rank publishes its process identity under "<prefix>/join/<rank>"
// and reads the others'; the ranks use the in-process transport only if they all found the same process.
// send/recv always go through the store (a buffered mailbox: send writes "<prefix>/p<src>-<dst>/<n>",
// recv waits for it), in one process as across processes.
enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

const char* coll_name(Coll kind) {
  switch (kind) {
    case Coll::kAllReduce:
      return "all_reduce";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
    case Coll::kAllGather:
      return "all_gather";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kAllToAll:
      return "all_to_all";
    case Coll::kSendRecv:
      return "send/recv";
  }
  return "?";
}

struct Call {
  Coll kind = Coll::kAllReduce;
  uint64_t count = 0;
  int32_t dtype = 0, op = 0, root = 0;
  std::vector<const void*> send;  // every rank's input
  std::vector<void*> recv;        // every rank's output (store transport: only this rank's)
  int32_t arrived = 0, departed = 0;
  bool done = false;
  std::string error;
};

struct Group {  // the ranks of this process that share a unique id
  int32_t nranks = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Call> calls;    // in-process transport: by call sequence number
  std::atomic<bool> aborted{false};  // read without the lock by store waits
};

struct Comm {
  std::shared_ptr<Group> group;
  int32_t rank = 0, device = 0, nranks = 0;
  bool use_store = false;
  std::string prefix;                    // store keys of this communicator start with it
  uint64_t next_seq = 0;                 // advanced on the host, in the order the rank enqueues its calls
  std::vector<uint64_t> sent, received;  // send/recv messages so far, per peer
};

std::mutex g_groups_mu;
std::map<std::string, std::weak_ptr<Group>>& groups() {
  static auto* g = new std::map<std::string, std::weak_ptr<Group>>();  // never destroyed, as state()
  return *g;
}

// Elementwise reduction of `n` elements starting at element `offset` of every rank's send buffer.
void reduce_any(const Call& c, uint64_t offset, uint64_t n, unsigned char* out) {
  const uint64_t es = static_cast<uint64_t>(sdk::dtype_size(c.dtype));
  std::memcpy(out, static_cast<const unsigned char*>(c.send[0]) + offset * es, n * es);
  for (size_t r = 1; r < c.send.size(); ++r)
    sdk::accumulate(out, static_cast<const unsigned char*>(c.send[r]) + offset * es, n, c.dtype, c.op);
  if (c.op == OAR_REDUCE_AVG) sdk::finish_average(out, n, c.dtype, static_cast<int32_t>(c.send.size()));
}

// Computes the result of every rank whose c.recv entry is set (the in-process transport: all of them,
// run by the last rank to arrive under the group's lock; the store transport: this rank's only).
void compute(Call& c) {
  const int32_t nr = static_cast<int32_t>(c.send.size());
  const uint64_t es = static_cast<uint64_t>(sdk::dtype_size(c.dtype));
  const uint64_t bytes = c.count * es;
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(nr));
  switch (c.kind) {
    case Coll::kAllReduce:
    case Coll::kReduce: {
      std::vector<unsigned char> sum(bytes);
      reduce_any(c, 0, c.count, sum.data());
      for (int32_t r = 0; r < nr; ++r)
        if (c.kind == Coll::kAllReduce || r == c.root) out[r] = sum;
      break;
    }
    case Coll::kBroadcast: {
      const auto* src = static_cast<const unsigned char*>(c.send[c.root]);
      for (int32_t r = 0; r < nr; ++r) out[r].assign(src, src + bytes);
      break;
    }
    case Coll::kAllGather: {
      std::vector<unsigned char> all;
      for (int32_t r = 0; r < nr; ++r) {
        const auto* src = static_cast<const unsigned char*>(c.send[r]);
        all.insert(all.end(), src, src + bytes);
      }
      for (int32_t r = 0; r < nr; ++r) out[r] = all;
      break;
    }
    case Coll::kReduceScatter:  // count = elements each rank receives
      for (int32_t r = 0; r < nr; ++r) {
        out[r].resize(bytes);
        reduce_any(c, static_cast<uint64_t>(r) * c.count, c.count, out[r].data());
      }
      break;
    case Coll::kAllToAll:  // count = elements per peer
      for (int32_t r = 0; r < nr; ++r)
        for (int32_t j = 0; j < nr; ++j) {
          const auto* src = static_cast<const unsigned char*>(c.send[j]) + static_cast<uint64_t>(r) * bytes;
          out[r].insert(out[r].end(), src, src + bytes);
        }
      break;
    case Coll::kSendRecv:
      break;
  }
  for (int32_t r = 0; r < nr; ++r)
    if (c.recv[r] && !out[r].empty()) std::memcpy(c.recv[r], out[r].data(), out[r].size());
}

// Bytes of the input a rank contributes to a call (what it writes to the store).
uint64_t input_bytes(Coll kind, uint64_t count, int32_t dtype, int32_t nranks, int32_t rank, int32_t root) {
  const uint64_t bytes = count * static_cast<uint64_t>(sdk::dtype_size(dtype));
  switch (kind) {
    case Coll::kBroadcast:
      return rank == root ? bytes : 0;  // only the root has something to say
    case Coll::kReduceScatter:
    case Coll::kAllToAll:
      return bytes * static_cast<uint64_t>(nranks);
    default:
      return bytes;
  }
}

// ---- the store transport: the core's key-value store as the wire ----

// What precedes the data in every store value, so that ranks calling different things get an error
// naming both calls instead of reading each other's bytes as garbage.
struct Header {
  uint32_t magic;  // kHeaderMagic
  int32_t kind;    // Coll
  int32_t dtype, op, root, rank;
  uint64_t count, seq, data_bytes;
};
constexpr uint32_t kHeaderMagic = 0x43435331;  // "CCS1"

std::string describe(const Header& h) {
  return std::string(coll_name(static_cast<Coll>(h.kind))) + "(count " + std::to_string(h.count) + ", " +
         sdk::dtype_name(h.dtype) + ", op " + std::to_string(h.op) + ", root " + std::to_string(h.root) + ")";
}

void store_put(const std::string& key, const Header& h, const void* data) {
  sdk::store_put(key, h, data, h.data_bytes);
}

// Waits for `key` and returns its value (oar/sdk/store.h): abort and shutdown (which mark the group
// aborted) get a waiting rank out; the whole wait is bounded by CUSTOM_CPU_COMM_TIMEOUT_MS, and a timeout
// names the call, this rank and the peer it waited for.
std::string store_wait(const Group& g, const std::string& key, uint64_t expected_bytes,
                       const std::string& what) {
  std::string store_said;
  std::optional<std::string> v = sdk::store_wait(
      key, expected_bytes, state().comm_timeout_ms,
      [&] {
        if (g.aborted)
          throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: " + what + ": the communicator was aborted");
      },
      &store_said);
  if (!v)
    throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: " + what + ": timed out after " +
                                         std::to_string(state().comm_timeout_ms) +
                                         " ms (CUSTOM_CPU_COMM_TIMEOUT_MS); store: " + store_said);
  return *v;
}

// Reads what rank `peer` wrote at `key`, checks it made the same call as `mine`, returns its data.
std::string store_read(const Comm& comm, const std::string& key, const Header& mine, int32_t peer,
                       uint64_t expected_bytes) {
  const std::string what = std::string(coll_name(static_cast<Coll>(mine.kind))) + " call " +
                           std::to_string(mine.seq) + ": rank " + std::to_string(comm.rank) +
                           " waiting for rank " + std::to_string(peer);
  std::string value = store_wait(*comm.group, key, sizeof(Header) + expected_bytes, what);
  Header h{};
  if (value.size() >= sizeof(h)) std::memcpy(&h, value.data(), sizeof(h));
  if (h.magic != kHeaderMagic)
    throw Error(OAR_ERR_INTERNAL, "custom_cpu: " + what + ": key '" + key + "' holds no custom_cpu message");
  if (h.kind != mine.kind || h.count != mine.count || h.dtype != mine.dtype || h.op != mine.op ||
      h.root != mine.root || h.data_bytes != expected_bytes || value.size() != sizeof(h) + expected_bytes)
    throw Error(OAR_ERR_INVALID_ARGUMENT, "custom_cpu: the ranks disagree at call " +
                                              std::to_string(mine.seq) + ": rank " +
                                              std::to_string(comm.rank) + " called " + describe(mine) +
                                              ", rank " + std::to_string(peer) + " called " + describe(h));
  return value.substr(sizeof(h));
}

// One collective of the store transport, run on the rank's stream.
void store_collective(const Comm& comm, uint64_t seq, Coll kind, const void* send, void* recv, uint64_t count,
                      int32_t dtype, int32_t op, int32_t root) {
  const int32_t n = comm.nranks;
  const std::string key = comm.prefix + "/c" + std::to_string(seq) + "/r";
  Header mine{kHeaderMagic,
              static_cast<int32_t>(kind),
              dtype,
              op,
              root,
              comm.rank,
              count,
              seq,
              input_bytes(kind, count, dtype, n, comm.rank, root)};
  store_put(key + std::to_string(comm.rank), mine, send);

  Call c;
  c.kind = kind, c.count = count, c.dtype = dtype, c.op = op, c.root = root;
  c.send.assign(static_cast<size_t>(n), nullptr);
  c.recv.assign(static_cast<size_t>(n), nullptr);
  c.send[comm.rank] = send;
  c.recv[comm.rank] = recv;
  std::vector<std::string> inputs(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) {  // every rank reads every other rank's input, even when it needs none,
    if (j == comm.rank) continue;    // so that a rank calling something else is always noticed
    inputs[j] =
        store_read(comm, key + std::to_string(j), mine, j, input_bytes(kind, count, dtype, n, j, root));
    c.send[j] = inputs[j].data();
  }
  compute(c);
}

// comm_init's handshake: publishes "<process identity>\n<nranks>" and reads every other rank's. Returns
// whether every rank is in this process. All ranks read the same records, so they all decide alike.
bool all_ranks_in_this_process(const std::string& prefix, int32_t nranks, int32_t rank, const Group& g) {
  const std::string& me = sdk::process_identity();
  const std::string record = me + "\n" + std::to_string(nranks);
  sdk::throw_if_error(sdk::services().store_set((prefix + "/join/" + std::to_string(rank)).c_str(),
                                                record.data(), record.size()));
  bool all_here = true;
  for (int32_t j = 0; j < nranks; ++j) {
    if (j == rank) continue;
    const std::string theirs = store_wait(
        g, prefix + "/join/" + std::to_string(j), 256,
        "comm_init: rank " + std::to_string(rank) + " waiting for rank " + std::to_string(j) + " to join");
    const size_t nl = theirs.find('\n');
    OAR_SDK_CHECK(nl != std::string::npos && theirs.substr(nl + 1) == std::to_string(nranks),
                  OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: rank " << rank << " says " << nranks << " ranks, rank " << j
                                                 << " disagrees ('" << theirs.substr(nl + 1) << "')");
    if (theirs.substr(0, nl) != me) all_here = false;
  }
  return all_here;
}

// ---- the collective table ----

OarError* coll_get_unique_id(OarCommUniqueId* id) {
  return sdk::guard([&] {
    // Readable text, unique across processes and hosts: "custom_cpu:<host>:<pid>:<random>".
    char host[64] = {0};
    gethostname(host, sizeof(host) - 1);
    std::random_device rd;
    const std::string text = "custom_cpu:" + std::string(host) + ":" + std::to_string(getpid()) + ":" +
                             std::to_string(rd()) + std::to_string(rd());
    std::memset(id->bytes, 0, sizeof(id->bytes));
    std::memcpy(id->bytes, text.data(), std::min(text.size(), sizeof(id->bytes) - 1));
  });
}

OarError* coll_comm_init(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                         OarComm* comm) {
  return sdk::guard([&] {
    check_device(local_device);
    OAR_SDK_CHECK(nranks >= 1 && rank >= 0 && rank < nranks, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: rank " << rank << " of " << nranks);
    const std::string key(reinterpret_cast<const char*>(id->bytes),
                          strnlen(reinterpret_cast<const char*>(id->bytes), sizeof(id->bytes)));
    OAR_SDK_CHECK(key.rfind("custom_cpu:", 0) == 0, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: the id was not made by custom_cpu's get_unique_id");
    std::shared_ptr<Group> g;
    {
      std::lock_guard<std::mutex> lk(g_groups_mu);
      g = groups()[key].lock();
      if (!g) {
        g = std::make_shared<Group>();
        g->nranks = nranks;
        groups()[key] = g;
      }
    }
    OAR_SDK_CHECK(g->nranks == nranks, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: comm_init: " << nranks << " ranks, the group has " << g->nranks);
    auto c = std::make_unique<Comm>();
    c->prefix = key;
    c->use_store = state().collectives_through_store;
    if (sdk::services().store_set && sdk::services().store_get) {
      if (!all_ranks_in_this_process(c->prefix, nranks, rank, *g)) c->use_store = true;
    } else {
      OAR_SDK_CHECK(!c->use_store, OAR_ERR_UNAVAILABLE,
                    "custom_cpu: CUSTOM_CPU_COLLECTIVE_TRANSPORT=store, but the core has no key-value store");
    }
    c->group = std::move(g);
    c->rank = rank;
    c->device = local_device;
    c->nranks = nranks;
    c->sent.assign(static_cast<size_t>(nranks), 0);
    c->received.assign(static_cast<size_t>(nranks), 0);
    *comm = reinterpret_cast<OarComm>(c.release());
  });
}

OarError* coll_comm_destroy(OarComm comm) {
  delete reinterpret_cast<Comm*>(comm);  // queued work holds its own copy of what it needs
  return nullptr;
}

OarError* coll_abort(OarComm comm) {
  return sdk::guard([&] {
    Group& g = *reinterpret_cast<Comm*>(comm)->group;
    {
      std::lock_guard<std::mutex> lk(g.mu);
      g.aborted = true;
    }
    g.cv.notify_all();
  });
}

// The in-process transport's rendezvous for one call, run on the rank's stream.
void rendezvous(Group& g, int32_t rank, uint64_t seq, Coll kind, const void* send, void* recv, uint64_t count,
                int32_t dtype, int32_t op, int32_t root) {
  std::unique_lock<std::mutex> lk(g.mu);
  Call& c = g.calls[seq];
  if (c.send.empty()) {
    c.kind = kind, c.count = count, c.dtype = dtype, c.op = op, c.root = root;
    c.send.assign(static_cast<size_t>(g.nranks), nullptr);
    c.recv.assign(static_cast<size_t>(g.nranks), nullptr);
  } else if (c.kind != kind || c.count != count || c.dtype != dtype || c.root != root) {
    c.error = "custom_cpu: the ranks called different collectives (or counts, dtypes, roots) at call " +
              std::to_string(seq);
  }
  c.send[rank] = send;
  c.recv[rank] = recv;
  if (++c.arrived == g.nranks) {
    if (c.error.empty()) {
      try {
        compute(c);
      } catch (const std::exception& e) {
        c.error = e.what();
      }
    }
    c.done = true;
    g.cv.notify_all();
  } else if (!g.cv.wait_for(lk, std::chrono::milliseconds(state().comm_timeout_ms),
                            [&] { return c.done || g.aborted; })) {
    throw Error(OAR_ERR_UNAVAILABLE, "custom_cpu: collective call " + std::to_string(seq) + ": only " +
                                         std::to_string(c.arrived) + " of " + std::to_string(g.nranks) +
                                         " ranks arrived within " + std::to_string(state().comm_timeout_ms) +
                                         " ms (CUSTOM_CPU_COMM_TIMEOUT_MS)");
  }
  if (!c.done) throw Error(OAR_ERR_PRECONDITION, "custom_cpu: communicator aborted");
  const std::string error = c.error;
  if (++c.departed == g.nranks) g.calls.erase(seq);
  if (!error.empty()) throw Error(OAR_ERR_INVALID_ARGUMENT, error);
}

Comm& comm_of(OarComm handle, OarStream stream) {
  OAR_SDK_CHECK(handle, OAR_ERR_INVALID_ARGUMENT, "custom_cpu: collective on a NULL communicator");
  OAR_SDK_CHECK(stream, OAR_ERR_INVALID_ARGUMENT,
                "custom_cpu: collectives need a stream (ranks meet on their streams' workers)");
  return *reinterpret_cast<Comm*>(handle);
}

// Enqueues this rank's part of one collective on `stream`.
void enqueue(Coll kind, const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
             OarComm handle, OarStream stream) {
  Comm& comm = comm_of(handle, stream);
  const uint64_t seq = comm.next_seq++;
  if (comm.use_store) {
    Comm copy = comm;  // the task outlives neither the group nor the prefix, whatever the host does
    submit(comm.device, stream, "collective", "collective",
           [=] { store_collective(copy, seq, kind, send, recv, count, dtype, op, root); });
    return;
  }
  std::shared_ptr<Group> g = comm.group;
  const int32_t rank = comm.rank;
  submit(comm.device, stream, "collective", "collective",
         [=] { rendezvous(*g, rank, seq, kind, send, recv, count, dtype, op, root); });
}

OarError* coll_all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                          OarComm comm, OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllReduce, send, recv, count, dtype, op, 0, comm, stream); });
}
OarError* coll_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm,
                         OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kBroadcast, buf, buf, count, dtype, 0, root, comm, stream); });
}
OarError* coll_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
                      OarComm comm, OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kReduce, send, recv, count, dtype, op, root, comm, stream); });
}
OarError* coll_all_gather(const void* send, void* recv, uint64_t send_count, int32_t dtype, OarComm comm,
                          OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllGather, send, recv, send_count, dtype, 0, 0, comm, stream); });
}
OarError* coll_reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype, int32_t op,
                              OarComm comm, OarStream stream) {
  return sdk::guard(
      [&] { enqueue(Coll::kReduceScatter, send, recv, recv_count, dtype, op, 0, comm, stream); });
}
OarError* coll_all_to_all(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype, OarComm comm,
                          OarStream stream) {
  return sdk::guard([&] { enqueue(Coll::kAllToAll, send, recv, count_per_rank, dtype, 0, 0, comm, stream); });
}

// The header of the n-th point-to-point message between this rank and a peer (both sides build the same
// one, so the receiver can check the sender's call).
Header message_header(const Comm& comm, int32_t dtype, uint64_t count, uint64_t n) {
  const uint64_t bytes = count * static_cast<uint64_t>(sdk::dtype_size(dtype));
  return Header{kHeaderMagic, static_cast<int32_t>(Coll::kSendRecv), dtype, 0, 0, comm.rank, count, n, bytes};
}

// send/recv: a mailbox in the store, "<prefix>/p<src>-<dst>/<n>" for the n-th message from src to dst.
// send is buffered (it returns once its stream has written the key), so the two sides never deadlock.
OarError* coll_send(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle,
                    OarStream stream) {
  return sdk::guard([&] {
    Comm& comm = comm_of(handle, stream);
    OAR_SDK_CHECK(peer >= 0 && peer < comm.nranks && peer != comm.rank, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: send to " << peer << ", not another rank of " << comm.nranks);
    const uint64_t n = comm.sent[peer]++;
    const Header h = message_header(comm, dtype, count, n);
    const std::string key =
        comm.prefix + "/p" + std::to_string(comm.rank) + "-" + std::to_string(peer) + "/" + std::to_string(n);
    submit(comm.device, stream, "send", "collective", [=] { store_put(key, h, buf); });
  });
}
OarError* coll_recv(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle,
                    OarStream stream) {
  return sdk::guard([&] {
    Comm& comm = comm_of(handle, stream);
    OAR_SDK_CHECK(peer >= 0 && peer < comm.nranks && peer != comm.rank, OAR_ERR_INVALID_ARGUMENT,
                  "custom_cpu: recv from " << peer << ", not another rank of " << comm.nranks);
    const uint64_t n = comm.received[peer]++;
    const Header mine = message_header(comm, dtype, count, n);
    const std::string key =
        comm.prefix + "/p" + std::to_string(peer) + "-" + std::to_string(comm.rank) + "/" + std::to_string(n);
    Comm copy = comm;
    submit(comm.device, stream, "recv", "collective", [=] {
      const std::string data = store_read(copy, key, mine, peer, mine.data_bytes);
      if (!data.empty()) std::memcpy(buf, data.data(), data.size());
    });
  });
}

// ---- profiler ----------------------------------------------------------------------------------------
// The SDK's profiler drops trace events under an ABI 1.0 core (it has no trace_event). The fault build
// calls it without checking, so the suite's abi.older_core check can be seen to catch it.
OarError* faulty_profiler_flush() {
  return sdk::guard([] {
    for (const OarTraceEvent& e : sdk::worker_streams().profiler().take()) sdk::services().trace_event(&e);
  });
}

// ---- kernels -----------------------------------------------------------------------------------------
// A kernel's descriptors are only valid during the call, but the work runs later on the stream's worker,
// so each launch copies what it needs (descriptor, dims, strides) into an object the task owns.
using Arg = sdk::HeldTensor;
struct Launch {
  Arg in[2];
  Arg out;
  std::vector<int64_t> ints;  // attributes the body needs
  double real = 0;
};

// Copies inputs/outputs into a Launch and enqueues body(launch) on the kernel's stream.
template <typename Body>
void launch(sdk::KernelContext& ctx, const char* name, int32_t num_inputs, Body&& body,
            std::shared_ptr<Launch> l = nullptr) {
  if (!l) l = std::make_shared<Launch>();
  for (int32_t i = 0; i < num_inputs; ++i) l->in[i].hold(ctx.input(i).desc());
  l->out.hold(ctx.output(0).desc());
  submit(ctx.device(), ctx.stream(), name, "kernel", [l, body] { body(*l); });
}

template <typename T>
T add_op(T x, T y) {
  if (kFaults) return x + y + T(1);  // the deliberately broken kernel (CUSTOM_CPU_TEST_FAULTS)
  return x + y;
}

template <typename T>
void add_kernel(sdk::KernelContext& ctx) {
  launch(ctx, "add", 2, [](const Launch& l) {
    sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(),
                              [](T x, T y) { return add_op(x, y); });
  });
}
template <typename T>
void multiply_kernel(sdk::KernelContext& ctx) {
  launch(ctx, "multiply", 2, [](const Launch& l) {
    sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(), [](T x, T y) { return x * y; });
  });
}
template <typename T>
void relu_kernel(sdk::KernelContext& ctx) {
  if (kFaults && ctx.input(0).numel() == kFaultyKernelNumel)
    throw Error(OAR_ERR_INVALID_ARGUMENT, "custom_cpu: relu: injected kernel failure");
  launch(ctx, "relu", 1, [](const Launch& l) {
    sdk::unary_loop<T, T>(l.out.view(), l.in[0].view(),
                          [](T x) { return x > T(0) || x != x ? x : T(0); });  // NaN propagates
  });
}
// relu's gradient: the core's autograd calls leaky_relu_grad(x = relu's output, grad) with slope 0.
template <typename T>
void leaky_relu_grad_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->real = ctx.attr_float_or("negative_slope", 0.01);  // absent: the schema default
  launch(
      ctx, "leaky_relu_grad", 2,
      [](const Launch& l) {
        const T a = static_cast<T>(l.real);
        sdk::binary_loop<T, T, T>(l.out.view(), l.in[0].view(), l.in[1].view(),
                                  [a](T x, T g) { return x > T(0) ? g : g * a; });
      },
      l);
}

template <typename T>
struct SumOp {
  using acc_t = double;
  acc_t init() const { return 0; }
  acc_t step(acc_t a, double v, int64_t) const { return a + v; }
  acc_t merge(acc_t a, acc_t b) const { return a + b; }
  T finish(acc_t a, int64_t) const { return static_cast<T>(a); }
};
template <typename T>
void sum_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->ints = ctx.attr_ints("axis");  // the core normalised it: sorted, unique, non-negative
  if (l->ints.empty())
    for (int32_t i = 0; i < ctx.input(0).ndim(); ++i) l->ints.push_back(i);
  launch(
      ctx, "sum", 1,
      [](const Launch& l) { sdk::reduce_loop<T, T>(l.out.view(), l.in[0].view(), l.ints, SumOp<T>()); }, l);
}

// matmul on contiguous inputs (registered without OAR_KERNEL_STRIDED_INPUTS, so the core makes them so):
// 1-D operands, transpose_x / transpose_y and broadcast batch dimensions.
template <typename T>
void matmul_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->ints = {ctx.attr_int("transpose_x"), ctx.attr_int("transpose_y")};
  launch(
      ctx, "matmul", 2,
      [](const Launch& l) {
        const auto &x = l.in[0], &y = l.in[1], &o = l.out;
        const int32_t nx = x.desc().ndim, ny = y.desc().ndim, no = o.desc().ndim;
        const bool tx = l.ints[0] && nx > 1, ty = l.ints[1] && ny > 1;
        // Logical [M, K] x [K, N]; a 1-D x is [1, K], a 1-D y is [K, 1].
        const int64_t xr = nx > 1 ? x.desc().dims[nx - 2] : 1, xc = x.desc().dims[nx - 1];
        const int64_t yr = ny > 1 ? y.desc().dims[ny - 2] : y.desc().dims[0],
                      yc = ny > 1 ? y.desc().dims[ny - 1] : 1;
        const int64_t M = tx ? xc : xr, K = tx ? xr : xc, N = ty ? yr : yc;
        // Batch dims of the output (all but its matrix dims), broadcast against x's and y's.
        const int32_t nb = no - (nx > 1 ? 1 : 0) - (ny > 1 ? 1 : 0);
        int64_t batches = 1;
        for (int32_t d = 0; d < nb; ++d) batches *= o.desc().dims[d];
        const T* px = x.view().data<T>();
        const T* py = y.view().data<T>();
        T* po = o.view().data<T>();
        const int64_t xmat = xr * xc, ymat = yr * yc;
        auto batch_offset = [&](const Arg& a, int32_t nmat, int64_t b, int64_t mat) {
          // Row-major index of batch b in a's own (possibly smaller, broadcast) batch dims.
          const int32_t na = a.desc().ndim - nmat;
          int64_t off = 0, stride = 1;
          for (int32_t d = nb - 1, ad = na - 1; d >= 0; --d, --ad) {
            const int64_t idx = b % o.desc().dims[d];
            b /= o.desc().dims[d];
            if (ad >= 0) {
              if (a.desc().dims[ad] != 1) off += idx * stride;
              stride *= a.desc().dims[ad];
            }
          }
          return off * mat;
        };
        for (int64_t b = 0; b < batches; ++b) {
          const T* bx = px + batch_offset(x, nx > 1 ? 2 : 1, b, xmat);
          const T* by = py + batch_offset(y, ny > 1 ? 2 : 1, b, ymat);
          T* bo = po + b * M * N;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0;
              for (int64_t k = 0; k < K; ++k) {
                const T a = tx ? bx[k * xc + i] : bx[i * xc + k];
                const T c = ty ? by[j * yc + k] : by[k * yc + j];
                acc += static_cast<double>(a) * static_cast<double>(c);
              }
              bo[i * N + j] = static_cast<T>(acc);
            }
        }
      },
      l);
}

// fill has no inputs: its dtype comes from the "dtype" attribute.
template <typename T>
void fill_kernel(sdk::KernelContext& ctx) {
  auto l = std::make_shared<Launch>();
  l->real = ctx.attr_float("value");
  launch(
      ctx, "fill", 0,
      [](const Launch& l) {
        T* p = l.out.view().data<T>();
        std::fill(p, p + l.out.view().numel(), static_cast<T>(l.real));
      },
      l);
}

// ABI 1.2: a supports query, asked by the core before each matmul call and for placement decisions. It
// sees dtypes, dims and attributes only. This device's matmul accumulates in a loop with 32-bit trip
// counts, so it declines a larger inner dimension and the core runs that call on the CPU instead.
void matmul_supports(sdk::KernelContext& ctx) {
  const sdk::TensorView x = ctx.input(0);
  const bool tx = ctx.attr_int("transpose_x") != 0 && x.ndim() > 1;
  const int64_t k = tx ? x.dim(-2) : x.dim(-1);
  if (k > INT32_MAX)
    sdk::decline("custom_cpu: matmul inner dimension " + std::to_string(k) + " exceeds 2^31 - 1");
}

void register_kernels(sdk::KernelRegistrar& reg) {
  const uint32_t strided = OAR_KERNEL_STRIDED_INPUTS;
  reg.add("add", {OAR_DTYPE_FLOAT32}, add_kernel<float>, strided);
  reg.add("add", {OAR_DTYPE_FLOAT64}, add_kernel<double>, strided);
  reg.add("multiply", {OAR_DTYPE_FLOAT32}, multiply_kernel<float>, strided);
  reg.add("multiply", {OAR_DTYPE_FLOAT64}, multiply_kernel<double>, strided);
  reg.add("relu", {OAR_DTYPE_FLOAT32}, relu_kernel<float>, strided);
  reg.add("relu", {OAR_DTYPE_FLOAT64}, relu_kernel<double>, strided);
  reg.add("leaky_relu_grad", {OAR_DTYPE_FLOAT32}, leaky_relu_grad_kernel<float>, strided);
  reg.add("leaky_relu_grad", {OAR_DTYPE_FLOAT64}, leaky_relu_grad_kernel<double>, strided);
  reg.add("sum", {OAR_DTYPE_FLOAT32}, sum_kernel<float>, strided);
  reg.add("sum", {OAR_DTYPE_FLOAT64}, sum_kernel<double>, strided);
  reg.add("matmul", {OAR_DTYPE_FLOAT32}, matmul_kernel<float>, matmul_supports);
  reg.add("matmul", {OAR_DTYPE_FLOAT64}, matmul_kernel<double>, matmul_supports);
  reg.add("fill", {OAR_DTYPE_FLOAT32}, fill_kernel<float>);
  reg.add("fill", {OAR_DTYPE_FLOAT64}, fill_kernel<double>);
}

void shutdown() {
  {  // ranks waiting in a collective give up, so that the stream workers can be joined
    std::lock_guard<std::mutex> lk(g_groups_mu);
    for (auto& kv : groups())
      if (auto g = kv.second.lock()) {
        std::lock_guard<std::mutex> glk(g->mu);
        g->aborted = true;
        g->cv.notify_all();
      }
  }
  sdk::worker_streams().shutdown();  // drains and joins the stream workers
}

// Fills the tables and registers the kernels; oar/sdk/tables.h hands them to the core.
void setup(sdk::Tables& t, sdk::KernelRegistrar& kernels) {
  State& s = state();
  s.device_count = static_cast<int32_t>(std::min<uint64_t>(env_uint("CUSTOM_CPU_DEVICE_COUNT", 2), 16));
  s.memory_per_device = env_uint("CUSTOM_CPU_MEMORY_MB", 1024) << 20;
  s.latency_us = env_uint("CUSTOM_CPU_LATENCY_US", 0);
  s.comm_timeout_ms = static_cast<int64_t>(env_uint("CUSTOM_CPU_COMM_TIMEOUT_MS", 60000));
  const char* transport = std::getenv("CUSTOM_CPU_COLLECTIVE_TRANSPORT");
  s.collectives_through_store = transport && std::string(transport) == "store";
  s.used.assign(static_cast<size_t>(s.device_count), 0);

  t.device.count = device_count;
  t.device.open = device_open;
  t.device.properties = device_properties;
  t.device.memory_info = device_memory_info;
  t.memory = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_memset, mem_memcpy};
  // Streams (a worker thread each), events, the profiler, device synchronize and close.
  sdk::worker_streams().configure({"custom_cpu", s.latency_us, check_device, {}});
  sdk::worker_streams().install(t);
  if (kFaults) t.stream.wait_event = faulty_wait_event;
  if (kFaults) t.profiler.flush = faulty_profiler_flush;
  t.collective.get_unique_id = coll_get_unique_id;
  t.collective.comm_init = coll_comm_init;
  t.collective.comm_destroy = coll_comm_destroy;
  t.collective.all_reduce = coll_all_reduce;
  t.collective.broadcast = coll_broadcast;
  t.collective.reduce = coll_reduce;
  t.collective.all_gather = coll_all_gather;
  t.collective.reduce_scatter = coll_reduce_scatter;
  t.collective.all_to_all = coll_all_to_all;
  t.collective.send = coll_send;
  t.collective.recv = coll_recv;
  t.collective.abort = coll_abort;  // group_start/end, get_async_error: NULL (not implemented)
  t.shutdown = shutdown;

  register_kernels(kernels);
  sdk::log(OAR_LOG_DEBUG, "custom_cpu: initialised");
}

// The name must match the file: liboar_plugin_custom_cpu.so.
const sdk::PluginDescription kPlugin{"custom_cpu", "custom_cpu", "0.1.0", nullptr, 100};

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
