// Collectives of the sim plugin, with two transports.
//
// In-process (the default when every rank of a communicator lives in this process): communicators that
// share a unique id form a group. Every call is enqueued on the caller's stream; the tasks of the ranks
// meet at a rendezvous slot (matched by the per-communicator call sequence). The last rank to arrive
// computes the result from every rank's input into a scratch buffer; each rank then copies its part out,
// so in-place calls (send == recv) are safe. send is buffered (the data is copied when the sender's
// stream reaches it), so send/recv never deadlock on ordering and group_start/group_end have nothing to
// batch.
//
// Store (when the ranks are in several processes, or always with OAR_SIM_COLLECTIVE_TRANSPORT=store):
// every rank writes its input, behind a small header (kind, dtype, count, op, root), to the core's
// key-value store under <prefix>/c<seq>/r<rank> and reads the other ranks' keys; each rank then computes
// its own result locally with the same code and the same rank order as the in-process transport, so the
// results are bit-identical on every rank. send writes <prefix>/p<src>-<dst>/<seq>, recv waits for it.
// comm_init decides the transport: every rank publishes its process identity (host, pid, a random
// per-process nonce) under <prefix>/join/<rank> and reads the others'. The ABI's store has no delete, so
// every call leaves one key per rank behind: this transport is for tests and bootstrap-scale data; a
// real backend moves data over its fabric and uses the store only to exchange the unique id.
#include <oar/sdk/collective.h>
#include <oar/sdk/store.h>
#include <oar/sdk/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "sim_state.h"

namespace oar::sim {
namespace {

constexpr char kMagic[8] = {'o', 'a', 'r', 's', 'i', 'm', 'I', 'D'};

// kSend only labels send/recv messages of the store transport.
enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kSend };

const char* kind_name(Kind k) {
  static const char* const names[] = {"all_reduce",     "broadcast",  "reduce", "all_gather",
                                      "reduce_scatter", "all_to_all", "send"};
  return names[static_cast<int>(k)];
}

struct Slot {  // one collective call, seen from every rank
  bool init = false;
  Kind kind = Kind::kAllReduce;
  uint64_t count = 0;
  int32_t dtype = 0, op = 0, root = 0;
  std::vector<const void*> send;
  std::vector<void*> recv;
  int arrived = 0, departed = 0;
  bool ready = false;
  std::string error;  // set when the ranks disagree
  std::vector<unsigned char> result;
};

struct Message {  // one buffered send
  std::vector<unsigned char> data;
  int32_t dtype = 0;
  uint64_t count = 0;
};

struct Group {
  std::string key;
  int32_t nranks = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<bool> joined;
  int32_t njoined = 0;
  std::string broken;  // non-empty once aborted or failed: every pending and later call fails
  std::map<uint64_t, std::shared_ptr<Slot>> slots;
  std::map<std::tuple<int32_t, int32_t, uint64_t>, Message> messages;  // (src, dst, seq)
};

struct Comm {
  // The ranks of this process that share the unique id. With the store transport it only carries
  // `broken` (abort, shutdown) to this process's ranks; the data goes through the store.
  std::shared_ptr<Group> group;
  bool use_store = false;
  std::string prefix;  // store transport: every key of this communicator starts with it
  int32_t nranks = 0;
  int32_t rank = 0;
  int32_t device = 0;
  std::mutex mu;  // guards the sequence counters and the async error
  uint64_t seq = 0;
  std::vector<uint64_t> send_seq, recv_seq;
  sdk::StoredError async_error;
};

// A communicator for `rank` of `nranks` on this process's `device`, in `group`.
std::shared_ptr<Comm> new_comm(std::shared_ptr<Group> group, int32_t nranks, int32_t rank, int32_t device) {
  auto c = std::make_shared<Comm>();
  c->group = std::move(group);
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->send_seq.assign(static_cast<size_t>(nranks), 0);
  c->recv_seq.assign(static_cast<size_t>(nranks), 0);
  return c;
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Group>> forming;     // groups still waiting for ranks
  std::map<std::string, std::weak_ptr<Group>> store_groups;  // store transport: this process's ranks
  std::map<Comm*, std::shared_ptr<Comm>> comms;
};
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

std::shared_ptr<Comm> find_comm(OarComm handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.comms.find(reinterpret_cast<Comm*>(handle));
  OAR_SDK_CHECK(it != r.comms.end(), OAR_ERR_INVALID_ARGUMENT,
                "sim: not a live sim communicator (destroyed or never created)");
  return it->second;
}

std::chrono::steady_clock::time_point deadline() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(state().comm_timeout_ms);
}

int64_t elem_size(int32_t dtype) {
  int64_t es = sdk::dtype_size(dtype);
  OAR_SDK_CHECK(es > 0, OAR_ERR_TYPE, "sim collective: unknown dtype " << dtype);
  return es;
}

// Computed by the last rank to arrive, under the group lock, while every other rank waits.
void compute(Slot& s, int32_t n) {
  const uint64_t es = static_cast<uint64_t>(elem_size(s.dtype));
  const uint64_t bytes = s.count * es;
  switch (s.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
      s.result.assign(static_cast<const unsigned char*>(s.send[0]),
                      static_cast<const unsigned char*>(s.send[0]) + bytes);
      for (int32_t r = 1; r < n; ++r) sdk::accumulate(s.result.data(), s.send[r], s.count, s.dtype, s.op);
      if (s.op == OAR_REDUCE_AVG) sdk::finish_average(s.result.data(), s.count, s.dtype, n);
      break;
    case Kind::kReduceScatter: {  // count = recv_count; inputs are n * count
      const uint64_t total = bytes * static_cast<uint64_t>(n);
      s.result.assign(static_cast<const unsigned char*>(s.send[0]),
                      static_cast<const unsigned char*>(s.send[0]) + total);
      for (int32_t r = 1; r < n; ++r)
        sdk::accumulate(s.result.data(), s.send[r], s.count * static_cast<uint64_t>(n), s.dtype, s.op);
      if (s.op == OAR_REDUCE_AVG)
        sdk::finish_average(s.result.data(), s.count * static_cast<uint64_t>(n), s.dtype, n);
      break;
    }
    case Kind::kBroadcast:
      s.result.assign(static_cast<const unsigned char*>(s.send[s.root]),
                      static_cast<const unsigned char*>(s.send[s.root]) + bytes);
      break;
    case Kind::kAllGather:  // count = send_count
      s.result.resize(bytes * static_cast<uint64_t>(n));
      for (int32_t r = 0; r < n; ++r) std::memcpy(s.result.data() + r * bytes, s.send[r], bytes);
      break;
    case Kind::kAllToAll: {  // count = per rank; each input is n * count
      const uint64_t row = bytes * static_cast<uint64_t>(n);
      s.result.resize(row * static_cast<uint64_t>(n));
      for (int32_t r = 0; r < n; ++r) std::memcpy(s.result.data() + r * row, s.send[r], row);
      break;
    }
    case Kind::kSend:
      break;  // never a slot
  }
}

// What rank `r` copies out of the result.
void deliver(const Slot& s, int32_t r, int32_t n) {
  const uint64_t bytes = s.count * static_cast<uint64_t>(elem_size(s.dtype));
  unsigned char* out = static_cast<unsigned char*>(s.recv[r]);
  switch (s.kind) {
    case Kind::kAllReduce:
      std::memcpy(out, s.result.data(), bytes);
      break;
    case Kind::kReduce:
      if (r == s.root) std::memcpy(out, s.result.data(), bytes);
      break;
    case Kind::kBroadcast:
      if (r != s.root) std::memcpy(out, s.result.data(), bytes);
      break;
    case Kind::kAllGather:
      std::memcpy(out, s.result.data(), bytes * static_cast<uint64_t>(n));
      break;
    case Kind::kReduceScatter:
      std::memcpy(out, s.result.data() + r * bytes, bytes);
      break;
    case Kind::kAllToAll: {
      const uint64_t row = bytes * static_cast<uint64_t>(n);
      for (int32_t j = 0; j < n; ++j)
        std::memcpy(out + j * bytes, s.result.data() + j * row + r * bytes, bytes);
      break;
    }
    case Kind::kSend:
      break;
  }
}

// The body every rank runs on its stream for a collective.
void rendezvous(const std::shared_ptr<Comm>& c, uint64_t seq, Kind kind, const void* send, void* recv,
                uint64_t count, int32_t dtype, int32_t op, int32_t root) {
  Group& g = *c->group;
  const int32_t n = g.nranks, r = c->rank;
  std::shared_ptr<Slot> slot;
  {
    std::unique_lock<std::mutex> lk(g.mu);
    OAR_SDK_CHECK(g.broken.empty(), OAR_ERR_UNAVAILABLE, kind_name(kind) << ": " << g.broken);
    auto& sp = g.slots[seq];
    if (!sp) sp = std::make_shared<Slot>();
    slot = sp;
    Slot& s = *slot;
    if (!s.init) {
      s.init = true, s.kind = kind, s.count = count, s.dtype = dtype, s.op = op, s.root = root;
      s.send.assign(static_cast<size_t>(n), nullptr);
      s.recv.assign(static_cast<size_t>(n), nullptr);
    } else if (s.kind != kind || s.count != count || s.dtype != dtype || s.op != op || s.root != root) {
      std::ostringstream os;
      os << "ranks disagree on collective #" << seq << ": rank " << r << " called " << kind_name(kind)
         << "(count " << count << ", " << sdk::dtype_name(dtype) << ", op " << op << ", root " << root
         << "), another rank " << kind_name(s.kind) << "(count " << s.count << ", "
         << sdk::dtype_name(s.dtype) << ", op " << s.op << ", root " << s.root << ")";
      if (s.error.empty()) s.error = os.str();
    }
    s.send[r] = send;
    s.recv[r] = recv;
    if (++s.arrived == n) {
      if (s.error.empty()) {
        try {
          compute(s, n);
        } catch (const std::exception& e) {
          s.error = e.what();
        }
      }
      s.ready = true;
      g.cv.notify_all();
    } else if (!g.cv.wait_until(lk, deadline(), [&] { return s.ready || !g.broken.empty(); })) {
      std::ostringstream os;
      os << "rank " << r << " timed out in " << kind_name(kind) << " #" << seq << " after "
         << state().comm_timeout_ms << " ms: only " << s.arrived << " of " << n
         << " ranks arrived (OAR_SIM_COMM_TIMEOUT_MS sets the limit)";
      g.broken = os.str();
      g.cv.notify_all();
      throw sdk::Error(OAR_ERR_UNAVAILABLE, std::string(kind_name(kind)) + ": " + g.broken);
    }
    if (!s.ready) throw sdk::Error(OAR_ERR_UNAVAILABLE, std::string(kind_name(kind)) + ": " + g.broken);
  }
  Slot& s = *slot;
  const bool failed = !s.error.empty();
  if (!failed) deliver(s, r, n);  // the result is immutable once ready
  {
    std::lock_guard<std::mutex> lk(g.mu);
    if (++s.departed == n) g.slots.erase(seq);
  }
  if (failed) throw sdk::Error(OAR_ERR_INVALID_ARGUMENT, std::string(kind_name(kind)) + ": " + s.error);
}

// ---- the store transport ----

// Set in the environment of every process of a job: "store" forces the store transport even when all
// ranks are in this process (so the in-process tests cover it); "auto" or unset decides at comm_init.
bool store_transport_forced() {
  const char* v = std::getenv("OAR_SIM_COLLECTIVE_TRANSPORT");
  const std::string t = v ? v : "";
  OAR_SDK_CHECK(t.empty() || t == "auto" || t == "store", OAR_ERR_INVALID_ARGUMENT,
                "sim: OAR_SIM_COLLECTIVE_TRANSPORT='" << t << "' is neither 'auto' nor 'store'");
  return t == "store";
}

bool have_store() { return sdk::services().store_set && sdk::services().store_get; }

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  return s;
}

// What every store value starts with: enough to tell that two ranks called different things.
struct WireHeader {
  uint32_t magic;
  int32_t kind;  // Kind
  int32_t dtype, op, root, rank;
  uint64_t count, seq, payload_bytes;
};
constexpr uint32_t kWireMagic = 0x4f534331;  // "OSC1"

std::string describe(const WireHeader& h) {
  std::ostringstream os;
  os << kind_name(static_cast<Kind>(h.kind)) << "(count " << h.count << ", " << sdk::dtype_name(h.dtype);
  if (h.kind == static_cast<int32_t>(Kind::kAllReduce) || h.kind == static_cast<int32_t>(Kind::kReduce) ||
      h.kind == static_cast<int32_t>(Kind::kReduceScatter))
    os << ", op " << h.op;
  if (h.kind == static_cast<int32_t>(Kind::kBroadcast) || h.kind == static_cast<int32_t>(Kind::kReduce))
    os << ", root " << h.root;
  os << ")";
  return os.str();
}

// Waits up to OAR_SIM_COMM_TIMEOUT_MS for `key` (nullopt on timeout); abort and shutdown, which mark
// this process's group broken, get a blocked rank out.
std::optional<std::string> store_wait(Group& g, const std::string& key, uint64_t expected_bytes,
                                      const char* what, std::string* last_error) {
  return sdk::store_wait(
      key, std::max<uint64_t>(expected_bytes, sizeof(WireHeader)), state().comm_timeout_ms,
      [&] {
        std::lock_guard<std::mutex> lk(g.mu);
        OAR_SDK_CHECK(g.broken.empty(), OAR_ERR_UNAVAILABLE, what << ": " << g.broken);
      },
      last_error);
}

// Reads rank `peer`'s value at `key` and checks its header against ours; returns the payload.
std::string store_read(const std::shared_ptr<Comm>& c, const std::string& key, const WireHeader& mine,
                       int32_t peer, uint64_t expected_payload) {
  const char* name = kind_name(static_cast<Kind>(mine.kind));
  std::ostringstream what;
  what << name << " #" << mine.seq;
  std::string last;
  std::optional<std::string> v =
      store_wait(*c->group, key, sizeof(WireHeader) + expected_payload, what.str().c_str(), &last);
  OAR_SDK_CHECK(v, OAR_ERR_UNAVAILABLE,
                name << ": rank " << c->rank << " timed out in " << what.str() << " waiting for rank " << peer
                     << " after " << state().comm_timeout_ms << " ms (key '" << key
                     << "'; OAR_SIM_COMM_TIMEOUT_MS sets the limit; the store said: " << last << ")");
  WireHeader h{};
  OAR_SDK_CHECK(v->size() >= sizeof(h), OAR_ERR_INTERNAL, name << ": store key '" << key << "' is too short");
  std::memcpy(&h, v->data(), sizeof(h));
  OAR_SDK_CHECK(h.magic == kWireMagic, OAR_ERR_INTERNAL,
                name << ": store key '" << key << "' was not written by sim");
  const bool same = h.kind == mine.kind && h.dtype == mine.dtype && h.count == mine.count &&
                    h.op == mine.op && h.root == mine.root;
  OAR_SDK_CHECK(
      same, OAR_ERR_INVALID_ARGUMENT,
      "ranks disagree on " << (mine.kind == static_cast<int32_t>(Kind::kSend) ? "message" : "collective")
                           << " #" << mine.seq << ": rank " << c->rank << " called "
                           << (mine.kind == static_cast<int32_t>(Kind::kSend) ? "recv" : name)
                           << describe(mine).substr(std::string(name).size()) << ", rank " << h.rank
                           << " called " << describe(h));
  OAR_SDK_CHECK(
      h.payload_bytes == expected_payload && v->size() == sizeof(h) + expected_payload, OAR_ERR_INTERNAL,
      name << ": rank " << h.rank << " wrote " << h.payload_bytes << " bytes, expected " << expected_payload);
  return v->substr(sizeof(h));
}

// The store transport's body of one collective, on the rank's stream: publish, read every other rank,
// compute this rank's result as the in-process transport would.
void store_collective(const std::shared_ptr<Comm>& c, uint64_t seq, Kind kind, const void* send, void* recv,
                      uint64_t count, int32_t dtype, int32_t op, int32_t root) {
  const int32_t n = c->nranks, r = c->rank;
  const uint64_t es = static_cast<uint64_t>(elem_size(dtype));
  uint64_t send_elems = count;
  if (kind == Kind::kReduceScatter || kind == Kind::kAllToAll) send_elems = count * static_cast<uint64_t>(n);
  auto payload_of = [&](int32_t rank) -> uint64_t {
    return (kind == Kind::kBroadcast && rank != root) ? 0 : send_elems * es;
  };
  WireHeader mine{kWireMagic, static_cast<int32_t>(kind), dtype, op, root, r, count, seq, payload_of(r)};
  const std::string base = c->prefix + "/c" + std::to_string(seq) + "/r";
  sdk::store_put(base + std::to_string(r), mine, send, mine.payload_bytes);

  Slot s;
  s.kind = kind, s.count = count, s.dtype = dtype, s.op = op, s.root = root;
  s.send.assign(static_cast<size_t>(n), nullptr);
  s.recv.assign(static_cast<size_t>(n), nullptr);
  s.send[r] = send;
  s.recv[r] = recv;
  std::vector<std::string> payloads(static_cast<size_t>(n));  // every rank reads every rank: same order
  for (int32_t j = 0; j < n; ++j) {
    if (j == r) continue;
    payloads[j] = store_read(c, base + std::to_string(j), mine, j, payload_of(j));
    s.send[j] = payloads[j].data();
  }
  compute(s, n);
  deliver(s, r, n);
}

void store_send(const std::shared_ptr<Comm>& c, const void* data, uint64_t bytes, uint64_t count,
                int32_t dtype, int32_t peer, uint64_t seq) {
  WireHeader h{kWireMagic, static_cast<int32_t>(Kind::kSend), dtype, 0, 0, c->rank, count, seq, bytes};
  sdk::store_put(
      c->prefix + "/p" + std::to_string(c->rank) + "-" + std::to_string(peer) + "/" + std::to_string(seq), h,
      data, bytes);
}

void store_recv(const std::shared_ptr<Comm>& c, void* data, uint64_t bytes, uint64_t count, int32_t dtype,
                int32_t peer, uint64_t seq) {
  WireHeader mine{kWireMagic, static_cast<int32_t>(Kind::kSend), dtype, 0, 0, c->rank, count, seq, bytes};
  const std::string payload = store_read(
      c, c->prefix + "/p" + std::to_string(peer) + "-" + std::to_string(c->rank) + "/" + std::to_string(seq),
      mine, peer, bytes);
  if (bytes) std::memcpy(data, payload.data(), bytes);
}

// comm_init's exchange: publishes this rank's process identity and nranks, reads every other rank's.
// Returns whether all ranks are in this process. Every rank reads the same values, so all decide alike.
bool exchange_identities(const std::string& prefix, int32_t nranks, int32_t rank, Group& local) {
  const std::string mine = sdk::process_identity() + "\n" + std::to_string(nranks);
  sdk::throw_if_error(sdk::services().store_set((prefix + "/join/" + std::to_string(rank)).c_str(),
                                                mine.data(), mine.size()));
  bool all_local = true;
  for (int32_t j = 0; j < nranks; ++j) {
    if (j == rank) continue;
    const std::string key = prefix + "/join/" + std::to_string(j);
    std::string last;
    std::optional<std::string> v = store_wait(local, key, 256, "sim: comm_init", &last);
    OAR_SDK_CHECK(v, OAR_ERR_UNAVAILABLE,
                  "sim: comm_init: rank "
                      << rank << " timed out after " << state().comm_timeout_ms << " ms waiting for rank "
                      << j << " to join (key '" << key
                      << "'; OAR_SIM_COMM_TIMEOUT_MS sets the limit; the store said: " << last << ")");
    const size_t nl = v->find('\n');
    OAR_SDK_CHECK(nl != std::string::npos, OAR_ERR_INTERNAL,
                  "sim: comm_init: bad join record at '" << key << "'");
    const std::string their_nranks = v->substr(nl + 1);
    OAR_SDK_CHECK(their_nranks == std::to_string(nranks), OAR_ERR_INVALID_ARGUMENT,
                  "sim: comm_init: rank " << rank << " says " << nranks << " ranks, rank " << j << " says "
                                          << their_nranks);
    if (v->substr(0, nl) != sdk::process_identity()) all_local = false;
  }
  return all_local;
}

// Wraps a collective body: a failure is also kept as the communicator's async error.
void enqueue_comm(const std::shared_ptr<Comm>& c, OarStream stream, const char* name,
                  std::function<void()> body) {
  std::shared_ptr<Comm> comm = c;
  submit(c->device, stream, name, "collective", [comm, body = std::move(body)] {
    auto keep = [&](OarErrorCode code, const char* msg) {
      std::lock_guard<std::mutex> lk(comm->mu);
      if (comm->async_error.set) return;
      comm->async_error.set = true;
      comm->async_error.code = code;
      comm->async_error.message = std::string("sim rank ") + std::to_string(comm->rank) + ": " + msg;
    };
    try {
      body();
    } catch (const sdk::Error& e) {
      keep(e.code(), e.what());
      throw;
    } catch (const std::exception& e) {
      keep(OAR_ERR_INTERNAL, e.what());
      throw;
    }
  });
}

void* buffer(const std::shared_ptr<Comm>& c, const void* p, uint64_t bytes, const char* what) {
  if (bytes == 0) return const_cast<void*>(p);
  return device_to_host(p, bytes, c->device, what);
}

void check_usable(const std::shared_ptr<Comm>& c) {
  std::lock_guard<std::mutex> lk(c->group->mu);
  OAR_SDK_CHECK(c->group->broken.empty(), OAR_ERR_UNAVAILABLE, "sim communicator: " << c->group->broken);
}

OarError* collective(Kind kind, const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                     int32_t root, OarComm handle, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);
    check_usable(c);
    const int32_t n = c->nranks;
    const uint64_t es = static_cast<uint64_t>(elem_size(dtype));
    const uint64_t un = static_cast<uint64_t>(n);
    uint64_t send_elems = count, recv_elems = count;
    if (kind == Kind::kReduceScatter || kind == Kind::kAllToAll) send_elems = count * un;
    if (kind == Kind::kAllGather || kind == Kind::kAllToAll) recv_elems = count * un;
    if (kind == Kind::kAllReduce || kind == Kind::kReduce || kind == Kind::kReduceScatter)
      sdk::check_reduction(dtype, op);
    if (kind == Kind::kBroadcast || kind == Kind::kReduce)
      OAR_SDK_CHECK(root >= 0 && root < n, OAR_ERR_INVALID_ARGUMENT,
                    kind_name(kind) << ": root " << root << " is not a rank of " << n);
    const char* name = kind_name(kind);
    const void* hs = buffer(c, send, send_elems * es, name);
    void* hr = nullptr;
    const bool wants_recv = !(kind == Kind::kReduce && c->rank != root) && kind != Kind::kBroadcast;
    if (wants_recv)
      hr = buffer(c, recv, recv_elems * es, name);
    else if (kind == Kind::kBroadcast)
      hr = const_cast<void*>(hs);
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lk(c->mu);
      seq = c->seq++;
    }
    enqueue_comm(c, stream, name, [c, seq, kind, hs, hr, count, dtype, op, root] {
      if (c->use_store)
        store_collective(c, seq, kind, hs, hr, count, dtype, op, root);
      else
        rendezvous(c, seq, kind, hs, hr, count, dtype, op, root);
    });
  });
}

// ---- the table's entry points ----

OarError* get_unique_id(OarCommUniqueId* id) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(id, OAR_ERR_INVALID_ARGUMENT, "sim: get_unique_id: id is NULL");
    std::memset(id->bytes, 0, sizeof(id->bytes));
    std::memcpy(id->bytes, kMagic, sizeof(kMagic));
    const int64_t pid = static_cast<int64_t>(::getpid());
    std::memcpy(id->bytes + 8, &pid, sizeof(pid));
    std::random_device rd;
    for (size_t i = 16; i < 48; i += 4) {
      uint32_t v = rd();
      std::memcpy(id->bytes + i, &v, 4);
    }
    // The creator's host name, for messages only: comm_init decides the transport from every rank's
    // identity, not from the creator's (the creator need not hold a rank).
    char host[80] = {0};
    if (::gethostname(host, sizeof(host) - 1) == 0) std::memcpy(id->bytes + 48, host, sizeof(host) - 1);
  });
}

OarError* comm_init(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                    OarComm* out) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(id && out, OAR_ERR_INVALID_ARGUMENT, "sim: comm_init: NULL argument");
    check_device(local_device);
    OAR_SDK_CHECK(nranks >= 1 && rank >= 0 && rank < nranks, OAR_ERR_INVALID_ARGUMENT,
                  "sim: comm_init: rank " << rank << " of " << nranks << " is out of range");
    OAR_SDK_CHECK(std::memcmp(id->bytes, kMagic, sizeof(kMagic)) == 0, OAR_ERR_INVALID_ARGUMENT,
                  "sim: comm_init: the id was not made by the sim plugin's get_unique_id");
    const std::string key(reinterpret_cast<const char*>(id->bytes), sizeof(id->bytes));
    const std::string prefix = "oar.sim/" + hex(id->bytes + 8, 40);  // pid + random bytes of the id
    const bool forced = store_transport_forced();
    bool use_store = forced;
    if (have_store()) {
      Group scratch;  // never broken: comm_init is bounded by the timeout alone
      use_store = !exchange_identities(prefix, nranks, rank, scratch) || forced;
    } else {  // an older core without a store: only ranks of the process that made the id can meet
      int64_t pid = 0;
      std::memcpy(&pid, id->bytes + 8, sizeof(pid));
      OAR_SDK_CHECK(!forced && pid == static_cast<int64_t>(::getpid()), OAR_ERR_UNAVAILABLE,
                    "sim: comm_init: the core gives no key-value store, so only ranks inside the process "
                    "that made the id can meet (the id comes from process "
                        << pid << (forced ? "; OAR_SIM_COLLECTIVE_TRANSPORT=store needs the store)" : ")"));
    }
    Registry& reg = registry();
    if (use_store) {
      std::shared_ptr<Comm> c;
      {
        std::lock_guard<std::mutex> lk(reg.mu);
        std::shared_ptr<Group> g = reg.store_groups[key].lock();
        if (!g) {
          g = std::make_shared<Group>();
          g->key = key;
          g->nranks = nranks;
          reg.store_groups[key] = g;
        }
        c = new_comm(g, nranks, rank, local_device);
        c->use_store = true;
        c->prefix = prefix;
        reg.comms[c.get()] = c;
        for (auto it = reg.store_groups.begin(); it != reg.store_groups.end();)  // forget dead groups
          it = it->second.expired() ? reg.store_groups.erase(it) : std::next(it);
      }
      *out = reinterpret_cast<OarComm>(c.get());
      return;
    }
    std::shared_ptr<Group> g;
    {
      std::lock_guard<std::mutex> lk(reg.mu);
      auto& slot = reg.forming[key];
      if (!slot) {
        slot = std::make_shared<Group>();
        slot->key = key;
        slot->nranks = nranks;
        slot->joined.assign(static_cast<size_t>(nranks), false);
      }
      g = slot;
      std::lock_guard<std::mutex> gl(g->mu);
      OAR_SDK_CHECK(g->nranks == nranks, OAR_ERR_INVALID_ARGUMENT,
                    "sim: comm_init: rank " << rank << " says " << nranks
                                            << " ranks, the group was created for " << g->nranks);
      OAR_SDK_CHECK(!g->joined[static_cast<size_t>(rank)], OAR_ERR_INVALID_ARGUMENT,
                    "sim: comm_init: rank " << rank << " already joined this group");
      g->joined[static_cast<size_t>(rank)] = true;
      if (++g->njoined == nranks) {
        reg.forming.erase(key);  // complete: the id may not be joined again
        g->cv.notify_all();
      }
    }
    {
      std::unique_lock<std::mutex> gl(g->mu);
      if (!g->cv.wait_until(gl, deadline(), [&] { return g->njoined == g->nranks; })) {
        const int32_t got = g->njoined;
        g->joined[static_cast<size_t>(rank)] = false;
        --g->njoined;
        gl.unlock();
        std::lock_guard<std::mutex> lk(reg.mu);
        auto it = reg.forming.find(key);
        if (it != reg.forming.end() && it->second == g) {
          std::lock_guard<std::mutex> gl2(g->mu);
          if (g->njoined == 0) reg.forming.erase(it);
        }
        throw sdk::Error(OAR_ERR_UNAVAILABLE,
                         "sim: comm_init: timed out after " + std::to_string(state().comm_timeout_ms) +
                             " ms waiting for the other ranks: " + std::to_string(got) + " of " +
                             std::to_string(nranks) + " joined (OAR_SIM_COMM_TIMEOUT_MS sets the limit)");
      }
    }
    std::shared_ptr<Comm> c = new_comm(g, nranks, rank, local_device);
    {
      std::lock_guard<std::mutex> lk(reg.mu);
      reg.comms[c.get()] = c;
    }
    *out = reinterpret_cast<OarComm>(c.get());
  });
}

OarError* comm_destroy(OarComm handle) {
  return sdk::guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);  // queued work keeps its own reference
    Registry& reg = registry();
    std::lock_guard<std::mutex> lk(reg.mu);
    reg.comms.erase(c.get());
  });
}

OarError* all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, OarComm comm,
                     OarStream stream) {
  return collective(Kind::kAllReduce, send, recv, count, dtype, op, 0, comm, stream);
}
OarError* broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm, OarStream stream) {
  return collective(Kind::kBroadcast, buf, buf, count, dtype, 0, root, comm, stream);
}
OarError* reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
                 OarComm comm, OarStream stream) {
  return collective(Kind::kReduce, send, recv, count, dtype, op, root, comm, stream);
}
OarError* all_gather(const void* send, void* recv, uint64_t send_count, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return collective(Kind::kAllGather, send, recv, send_count, dtype, 0, 0, comm, stream);
}
OarError* reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype, int32_t op,
                         OarComm comm, OarStream stream) {
  return collective(Kind::kReduceScatter, send, recv, recv_count, dtype, op, 0, comm, stream);
}
OarError* all_to_all(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return collective(Kind::kAllToAll, send, recv, count_per_rank, dtype, 0, 0, comm, stream);
}

OarError* send(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle,
               OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);
    check_usable(c);
    OAR_SDK_CHECK(peer >= 0 && peer < c->nranks && peer != c->rank, OAR_ERR_INVALID_ARGUMENT,
                  "send: peer " << peer << " is not another rank of " << c->nranks);
    const uint64_t bytes = count * static_cast<uint64_t>(elem_size(dtype));
    const void* h = buffer(c, buf, bytes, "send");
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lk(c->mu);
      seq = c->send_seq[static_cast<size_t>(peer)]++;
    }
    enqueue_comm(c, stream, "send", [c, h, bytes, count, dtype, peer, seq] {
      if (c->use_store) return store_send(c, h, bytes, count, dtype, peer, seq);
      Group& g = *c->group;
      Message m;
      m.data.assign(static_cast<const unsigned char*>(h), static_cast<const unsigned char*>(h) + bytes);
      m.dtype = dtype;
      m.count = count;
      std::lock_guard<std::mutex> lk(g.mu);
      OAR_SDK_CHECK(g.broken.empty(), OAR_ERR_UNAVAILABLE, "send: " << g.broken);
      g.messages[std::make_tuple(c->rank, peer, seq)] = std::move(m);
      g.cv.notify_all();
    });
  });
}

OarError* recv(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm handle, OarStream stream) {
  return sdk::guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);
    check_usable(c);
    OAR_SDK_CHECK(peer >= 0 && peer < c->nranks && peer != c->rank, OAR_ERR_INVALID_ARGUMENT,
                  "recv: peer " << peer << " is not another rank of " << c->nranks);
    const uint64_t bytes = count * static_cast<uint64_t>(elem_size(dtype));
    void* h = buffer(c, buf, bytes, "recv");
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lk(c->mu);
      seq = c->recv_seq[static_cast<size_t>(peer)]++;
    }
    enqueue_comm(c, stream, "recv", [c, h, bytes, count, dtype, peer, seq] {
      if (c->use_store) return store_recv(c, h, bytes, count, dtype, peer, seq);
      Group& g = *c->group;
      const auto key = std::make_tuple(peer, c->rank, seq);
      std::unique_lock<std::mutex> lk(g.mu);
      auto ready = [&] { return g.messages.count(key) > 0 || !g.broken.empty(); };
      if (!g.cv.wait_until(lk, deadline(), ready)) {
        std::ostringstream os;
        os << "rank " << c->rank << " timed out in recv #" << seq << " from rank " << peer << " after "
           << state().comm_timeout_ms << " ms (OAR_SIM_COMM_TIMEOUT_MS)";
        g.broken = os.str();
        g.cv.notify_all();
      }
      auto it = g.messages.find(key);
      OAR_SDK_CHECK(it != g.messages.end(), OAR_ERR_UNAVAILABLE, "recv: " << g.broken);
      Message m = std::move(it->second);
      g.messages.erase(it);
      lk.unlock();
      OAR_SDK_CHECK(m.dtype == dtype && m.count == count, OAR_ERR_INVALID_ARGUMENT,
                    "recv: rank " << peer << " sent " << m.count << " x " << sdk::dtype_name(m.dtype)
                                  << ", rank " << c->rank << " expected " << count << " x "
                                  << sdk::dtype_name(dtype));
      if (bytes) std::memcpy(h, m.data.data(), bytes);
    });
  });
}

OarError* group_start() { return nullptr; }  // nothing to batch: see the top of this file
OarError* group_end() { return nullptr; }

OarError* abort_comm(OarComm handle) {
  return sdk::guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);
    Group& g = *c->group;
    {
      std::lock_guard<std::mutex> lk(g.mu);
      if (g.broken.empty()) g.broken = "the communicator was aborted by rank " + std::to_string(c->rank);
    }
    g.cv.notify_all();
  });
}

OarError* get_async_error(OarComm handle, OarError** error) {
  return sdk::guard([&] {
    OAR_SDK_CHECK(error, OAR_ERR_INVALID_ARGUMENT, "sim: get_async_error: error is NULL");
    *error = nullptr;
    std::shared_ptr<Comm> c = find_comm(handle);
    std::lock_guard<std::mutex> lk(c->mu);
    if (c->async_error.set) *error = sdk::make_error(c->async_error.code, c->async_error.message);
  });
}

}  // namespace

void shutdown_collectives() {
  Registry& reg = registry();
  std::set<Group*> seen;
  std::vector<std::shared_ptr<Group>> groups;
  {
    std::lock_guard<std::mutex> lk(reg.mu);
    for (auto& kv : reg.comms)
      if (seen.insert(kv.second->group.get()).second) groups.push_back(kv.second->group);
    for (auto& kv : reg.forming)
      if (seen.insert(kv.second.get()).second) groups.push_back(kv.second);
    reg.comms.clear();
    reg.forming.clear();
    reg.store_groups.clear();
  }
  for (auto& g : groups) {  // wake every blocked rank so the streams can drain
    {
      std::lock_guard<std::mutex> lk(g->mu);
      if (g->broken.empty()) g->broken = "the sim plugin is shutting down";
    }
    g->cv.notify_all();
  }
}

void setup_collectives(sdk::Tables& t) {
  t.collective = {sizeof(OarCollectiveTable),
                  get_unique_id,
                  comm_init,
                  comm_destroy,
                  all_reduce,
                  broadcast,
                  reduce,
                  all_gather,
                  reduce_scatter,
                  all_to_all,
                  send,
                  recv,
                  group_start,
                  group_end,
                  abort_comm,
                  get_async_error};
}

}  // namespace oar::sim
