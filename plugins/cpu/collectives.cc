// Collectives of the cpu plugin through Gloo (TCP transport), behind the ABI's collective table.
//
// Bootstrap: the unique id is a magic plus 16 random bytes; comm_init builds a Gloo full mesh whose
// rendezvous store is the core's key-value store (store_set / store_get), every key prefixed with
// "oar/gloo/<id in hex>/", so any number of jobs and communicators can share one store.
//
// Streams: a collective is queued on its stream's communication worker (one thread per stream, created by
// the stream's first collective) and the call returns at once, so compute on other streams (and the
// caller's own Python) overlaps it. Kernels, copies and host functions on that stream wait for the queue
// first (plugin.cc), stream_synchronize waits and reports a failure, and events recorded on it complete
// when the queue reaches them. A NULL stream runs the collective synchronously.
//
// Checks: before its data, every collective exchanges a 32-byte descriptor (kind, dtype, count, op, root)
// with every peer, each from its own buffer with its own deadline, so ranks that disagree, a peer that
// died (its connection closes) and a peer that never comes (Gloo's timeout) are errors naming that rank,
// not hangs or wrong answers. send/recv carry the same descriptor ahead of the data.
//
// Reductions run in Gloo's algorithms with our element-wise functions (sdk/collective.h's arithmetic), so
// every dtype the sdk reduces works natively, float16 and bfloat16 included (each step rounds to the
// dtype, as NCCL does); bool and complex reductions are refused. AVG is SUM then a division by nranks.
// reduce_scatter is an all_reduce into scratch followed by a copy of this rank's block (Gloo's own
// reduce-scatter is float-only and old-style).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <oar/sdk/collective.h>
#include <oar/sdk/store.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

using oar::sdk::guard;
namespace sdk = oar::sdk;

constexpr char kMagic[8] = {'o', 'a', 'r', 'g', 'l', 'o', 'o', '1'};
// Slot prefixes of our own messages; Gloo's algorithms use prefixes 0x01..0x08 (gloo/types.h).
constexpr uint64_t kHeaderSlot = uint64_t{0x7e} << 56;
constexpr uint64_t kP2pSlot = uint64_t{0x7d} << 56;
constexpr uint64_t kInitSlot = uint64_t{0x7c} << 56;  // comm_init's closing exchange

// ---- settings -------------------------------------------------------------------------------------------
// OAR_COLLECTIVE_TIMEOUT (seconds): how long a rank waits for its peers in comm_init and in every
// collective. Paddle's default is 30 minutes; tests set seconds.
std::chrono::milliseconds collective_timeout() {
  if (const char* t = std::getenv("OAR_COLLECTIVE_TIMEOUT")) {
    char* end = nullptr;
    const double s = std::strtod(t, &end);
    OAR_SDK_CHECK(
        end != t && *end == '\0' && s > 0, OAR_ERR_INVALID_ARGUMENT,
        "cpu collectives: OAR_COLLECTIVE_TIMEOUT must be a positive number of seconds, got '" << t << "'");
    return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  return std::chrono::minutes(30);
}

// The address this process listens on for its peers: OAR_GLOO_IFNAME (an interface) or OAR_GLOO_HOSTNAME,
// else this host's name when it resolves, else the loopback (one machine only).
std::shared_ptr<gloo::transport::Device> tcp_device() {
  static std::mutex mu;
  static std::shared_ptr<gloo::transport::Device> dev;
  std::lock_guard<std::mutex> lk(mu);
  if (dev) return dev;
  gloo::transport::tcp::attr attr;
  if (const char* i = std::getenv("OAR_GLOO_IFNAME")) {
    attr.iface = i;
  } else if (const char* h = std::getenv("OAR_GLOO_HOSTNAME")) {
    attr.hostname = h;
  } else {
    char host[256] = {0};
    addrinfo* res = nullptr;
    if (::gethostname(host, sizeof(host) - 1) == 0 && ::getaddrinfo(host, nullptr, nullptr, &res) == 0) {
      attr.hostname = host;
      ::freeaddrinfo(res);
    } else {
      attr.hostname = "127.0.0.1";
    }
  }
  try {
    dev = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw sdk::Error(OAR_ERR_UNAVAILABLE, std::string("cpu collectives: Gloo's TCP device on '") +
                                              (attr.iface.empty() ? attr.hostname : attr.iface) +
                                              "' failed: " + e.what() +
                                              " (set OAR_GLOO_IFNAME or OAR_GLOO_HOSTNAME)");
  }
  return dev;
}

// ---- the core's store as Gloo's rendezvous store -------------------------------------------------------
class CoreStore : public gloo::rendezvous::Store {
 public:
  CoreStore(std::string prefix, std::chrono::milliseconds timeout, std::function<void()> check)
      : prefix_(std::move(prefix)), timeout_(timeout), check_(std::move(check)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    sdk::throw_if_error(sdk::services().store_set((prefix_ + key).c_str(), data.data(), data.size()));
  }
  std::vector<char> get(const std::string& key) override {
    std::string err;
    auto v = sdk::store_wait(prefix_ + key, 256, timeout_.count(), check_, &err);
    OAR_SDK_CHECK(v, OAR_ERR_UNAVAILABLE,
                  "cpu comm_init: key '" << key << "' not in the store after " << timeout_.count()
                                         << " ms (is every rank started with this unique id?): " << err);
    return std::vector<char>(v->begin(), v->end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const auto& k : keys) {
      std::string err;
      OAR_SDK_CHECK(sdk::store_wait(prefix_ + k, 256, timeout.count(), check_, &err), OAR_ERR_UNAVAILABLE,
                    "cpu comm_init: rank key '" << k << "' did not appear within " << timeout.count()
                                                << " ms: a peer rank did not call comm_init (" << err << ")");
    }
  }

 private:
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::function<void()> check_;
};

// ---- communicators --------------------------------------------------------------------------------------
enum Kind : int32_t {
  kAllReduce = 1,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSend,
  kInit
};
const char* kind_name(int32_t k) {
  static const char* const names[] = {"?",          "all_reduce", "broadcast",
                                      "reduce",     "all_gather", "reduce_scatter",
                                      "all_to_all", "send/recv",  "comm_init"};
  return k >= 1 && k <= kInit ? names[k] : "?";
}
const char* op_name(int32_t op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op <= 4 ? names[op] : "?";
}

struct Header {  // what one rank calls; every rank must call the same
  int32_t kind = 0, dtype = 0, op = 0, root = 0;
  uint64_t count = 0;
  uint64_t seq = 0;
};
static_assert(sizeof(Header) == 32, "the descriptor is 32 bytes on the wire");

std::string describe(const Header& h) {
  std::ostringstream os;
  if (h.kind == kInit) {
    os << "comm_init with " << h.count << " ranks";
    return os.str();
  }
  os << kind_name(h.kind) << " of " << h.count << " " << sdk::dtype_name(h.dtype);
  if (h.kind == kAllReduce || h.kind == kReduce || h.kind == kReduceScatter)
    os << " (op " << op_name(h.op) << ")";
  if (h.kind == kBroadcast || h.kind == kReduce) os << " (root " << h.root << ")";
  return os.str();
}

struct Comm {
  std::shared_ptr<gloo::rendezvous::Context> ctx;
  int32_t rank = 0, nranks = 0, device = 0;
  std::chrono::milliseconds timeout{0};
  std::atomic<bool> aborted{false};
  std::mutex mu;                             // guards what follows
  uint64_t seq = 0;                          // collectives issued (the tag; the same sequence on every rank)
  std::vector<uint64_t> send_seq, recv_seq;  // point-to-point messages per peer
  std::string broken;                        // the first failure: every later call fails with it
  std::set<gloo::transport::UnboundBuffer*> waiting;  // buffers a worker waits on (abort wakes them)
  sdk::StoredError async_error;                       // reported once by get_async_error
};

std::mutex g_comms_mu;
std::map<Comm*, std::shared_ptr<Comm>>& comms() {
  static auto* m = new std::map<Comm*, std::shared_ptr<Comm>>();
  return *m;
}
std::shared_ptr<Comm> find_comm(OarComm handle) {
  OAR_SDK_CHECK(handle, OAR_ERR_INVALID_ARGUMENT, "cpu collectives: NULL communicator");
  std::lock_guard<std::mutex> lk(g_comms_mu);
  auto it = comms().find(reinterpret_cast<Comm*>(handle));
  OAR_SDK_CHECK(it != comms().end(), OAR_ERR_INVALID_ARGUMENT,
                "cpu collectives: " << static_cast<const void*>(handle) << " is not a live communicator");
  return it->second;
}

std::string where(const Comm& c, const char* what) {
  std::ostringstream os;
  os << "cpu " << what << " (rank " << c.rank << " of " << c.nranks << ")";
  return os.str();
}
void check_usable(Comm& c, const char* what) {
  OAR_SDK_CHECK(!c.aborted, OAR_ERR_PRECONDITION, where(c, what) << ": the communicator was aborted");
  std::lock_guard<std::mutex> lk(c.mu);
  OAR_SDK_CHECK(c.broken.empty(), OAR_ERR_PRECONDITION,
                where(c, what) << ": the communicator failed earlier: " << c.broken);
}
// Records the first failure (later calls fail fast) and keeps it for get_async_error.
void mark_broken(Comm& c, OarErrorCode code, const std::string& msg) {
  std::lock_guard<std::mutex> lk(c.mu);
  if (c.broken.empty()) c.broken = msg;
  if (!c.async_error.set) c.async_error = sdk::StoredError{true, code, msg};
}

// Waits for an unbound buffer's receive or send until `end`; false when the communicator is aborted.
// Gloo's own errors propagate: a closed connection, and its timeout (which also fails every other
// pending operation of the context, so a wait is never retried in slices).
bool wait_op(Comm& c, gloo::transport::UnboundBuffer& b, bool recv,
             std::chrono::steady_clock::time_point end) {
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.aborted) return false;
    c.waiting.insert(&b);
  }
  struct Unregister {
    Comm& c;
    gloo::transport::UnboundBuffer* b;
    ~Unregister() {
      std::lock_guard<std::mutex> lk(c.mu);
      c.waiting.erase(b);
    }
  } unregister{c, &b};
  const auto left = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()),
      std::chrono::milliseconds(1));
  return recv ? b.waitRecv(left) : b.waitSend(left);
}
bool timed_out(const gloo::Exception& e) { return std::strstr(e.what(), "Timed out") != nullptr; }

// Exchanges `mine` with every peer; throws, naming the rank, when one disagrees, died or never came.
void check_peers(Comm& c, const Header& mine, uint64_t slot_prefix = kHeaderSlot) {
  if (c.nranks == 1) return;
  const auto end = std::chrono::steady_clock::now() + c.timeout;
  const uint64_t slot = slot_prefix | (mine.seq & 0xffffffffffffULL);
  std::vector<Header> theirs(c.nranks);
  Header out = mine;
  auto sbuf = c.ctx->createUnboundBuffer(&out, sizeof(out));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> rbufs(c.nranks);
  for (int32_t p = 0; p < c.nranks; ++p) {
    if (p == c.rank) continue;
    rbufs[p] = c.ctx->createUnboundBuffer(&theirs[p], sizeof(Header));
    try {
      rbufs[p]->recv(p, slot);
      sbuf->send(p, slot);
    } catch (const gloo::Exception& e) {
      throw sdk::Error(OAR_ERR_UNAVAILABLE, "lost the connection to rank " + std::to_string(p) +
                                                " (did that process exit?): " + e.what());
    }
  }
  for (int32_t p = 0; p < c.nranks; ++p) {
    if (p == c.rank) continue;
    bool ok = false;
    try {
      ok = wait_op(c, *rbufs[p], true, end);
    } catch (const gloo::Exception& e) {
      OAR_SDK_CHECK(!timed_out(e), OAR_ERR_UNAVAILABLE,
                    "rank " << p << " did not reach " << kind_name(mine.kind) << " within "
                            << c.timeout.count() << " ms (OAR_COLLECTIVE_TIMEOUT)");
      throw sdk::Error(OAR_ERR_UNAVAILABLE, "lost the connection to rank " + std::to_string(p) +
                                                " (did that process exit?): " + e.what());
    }
    OAR_SDK_CHECK(ok, OAR_ERR_PRECONDITION, "the communicator was aborted");
    const Header& h = theirs[p];
    OAR_SDK_CHECK(h.kind == mine.kind && h.dtype == mine.dtype && h.count == mine.count && h.op == mine.op &&
                      h.root == mine.root,
                  OAR_ERR_INVALID_ARGUMENT,
                  "ranks disagree: rank " << c.rank << " called " << describe(mine) << ", rank " << p
                                          << " called " << describe(h));
  }
  for (int32_t p = 0; p < c.nranks; ++p) {  // our sends: the peers have received (we heard from each)
    if (p == c.rank) continue;
    try {
      OAR_SDK_CHECK(wait_op(c, *sbuf, false, end), OAR_ERR_PRECONDITION, "the communicator was aborted");
    } catch (const gloo::Exception& e) {
      throw sdk::Error(OAR_ERR_UNAVAILABLE, std::string("lost a connection while sending: ") + e.what());
    }
  }
}

// ---- element-wise reductions for Gloo -------------------------------------------------------------------
gloo::AllreduceOptions::Func reduce_fn(int32_t dtype, int32_t op) {
  sdk::check_reduction(dtype, op);
  const size_t es = sdk::dtype_size(dtype);
  return [dtype, op, es](void* out, const void* a, const void* b, size_t n) {
    if (out != a) std::memcpy(out, a, n * es);
    sdk::accumulate(out, b, n, dtype, op == OAR_REDUCE_AVG ? OAR_REDUCE_SUM : op);
  };
}

// Calls fn with a value of an unsigned type of the dtype's element size (Gloo sizes buffers from the type).
struct Bytes16 {
  uint64_t lo, hi;
};
template <typename F>
void with_element(int32_t dtype, F&& fn) {
  switch (sdk::dtype_size(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    case 16:
      return fn(Bytes16{});
    default:
      throw sdk::Error(OAR_ERR_TYPE,
                       std::string("cpu collectives: unsupported dtype ") + sdk::dtype_name(dtype));
  }
}

// ---- running a call --------------------------------------------------------------------------------------
// Runs `body` on the stream's communication worker (or now, for a NULL stream). Failures name the call and
// the rank, mark the communicator broken and stay for get_async_error; on a worker they surface at the
// stream's next synchronize.
void submit(const std::shared_ptr<Comm>& c, OarStream stream, const char* what, std::function<void()> body) {
  check_usable(*c, what);
  auto task = [c, what, body = std::move(body)] {
    try {
      check_usable(*c, what);
      body();
    } catch (const sdk::Error& e) {
      mark_broken(*c, e.code(), where(*c, what) + ": " + e.what());
      throw sdk::Error(e.code(), where(*c, what) + ": " + e.what());
    } catch (const gloo::Exception& e) {
      std::string peers;
      if (c->nranks == 2) peers = " (peer rank " + std::to_string(1 - c->rank) + ")";
      const std::string msg = where(*c, what) + ": Gloo failed" + peers + ": " + e.what();
      mark_broken(*c, OAR_ERR_UNAVAILABLE, msg);
      throw sdk::Error(OAR_ERR_UNAVAILABLE, msg);
    }
  };
  if (!stream) return task();
  comm_queue(stream)->enqueue({std::move(task), what, "collective"});
}

// The next collective's header (and Gloo tag), in the order the caller issues them.
Header next_header(Comm& c, int32_t kind, int32_t dtype, uint64_t count, int32_t op, int32_t root) {
  OAR_SDK_CHECK(dtype >= 0 && dtype < OAR_DTYPE_COUNT, OAR_ERR_TYPE,
                "cpu " << kind_name(kind) << ": unknown dtype " << dtype);
  OAR_SDK_CHECK(
      root >= 0 && root < c.nranks, OAR_ERR_INVALID_ARGUMENT,
      "cpu " << kind_name(kind) << ": root " << root << " out of range for " << c.nranks << " ranks");
  if (kind == kAllReduce || kind == kReduce || kind == kReduceScatter) sdk::check_reduction(dtype, op);
  std::lock_guard<std::mutex> lk(c.mu);
  return Header{kind, dtype, op, root, count, c.seq++};
}

// ---- the table
// -----------------------------------------------------------------------------------------------
OarError* get_unique_id(OarCommUniqueId* id) {
  return guard([&] {
    OAR_SDK_CHECK(id, OAR_ERR_INVALID_ARGUMENT, "cpu get_unique_id: NULL id");
    std::memset(id->bytes, 0, sizeof(id->bytes));
    std::memcpy(id->bytes, kMagic, sizeof(kMagic));
    std::random_device rd;
    for (int i = 0; i < 16; i += 4) {
      const uint32_t r = rd();
      std::memcpy(id->bytes + 8 + i, &r, 4);
    }
  });
}

OarError* comm_init(int32_t local_device, int32_t nranks, int32_t rank, const OarCommUniqueId* id,
                    OarComm* out) {
  return guard([&] {
    OAR_SDK_CHECK(local_device == 0, OAR_ERR_INVALID_ARGUMENT,
                  "cpu comm_init: no device " << local_device << " (the cpu plugin has one device, 0)");
    OAR_SDK_CHECK(nranks >= 1 && rank >= 0 && rank < nranks, OAR_ERR_INVALID_ARGUMENT,
                  "cpu comm_init: rank " << rank << " out of range for " << nranks << " ranks");
    OAR_SDK_CHECK(id && std::memcmp(id->bytes, kMagic, sizeof(kMagic)) == 0, OAR_ERR_INVALID_ARGUMENT,
                  "cpu comm_init: the unique id does not come from the cpu plugin's get_unique_id");
    std::ostringstream prefix;
    prefix << "oar/gloo/";
    for (int i = 8; i < 24; ++i)
      prefix << "0123456789abcdef"[id->bytes[i] >> 4] << "0123456789abcdef"[id->bytes[i] & 15];
    prefix << "/";
    auto c = std::make_shared<Comm>();
    c->rank = rank, c->nranks = nranks, c->device = local_device;
    c->timeout = collective_timeout();
    c->send_seq.assign(nranks, 0);
    c->recv_seq.assign(nranks, 0);
    c->ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    c->ctx->setTimeout(c->timeout);
    CoreStore store(prefix.str(), c->timeout, nullptr);
    auto dev = tcp_device();
    const std::string me =
        "cpu comm_init (rank " + std::to_string(rank) + " of " + std::to_string(nranks) + ")";
    try {
      c->ctx->connectFullMesh(store, dev);
    } catch (const gloo::Exception& e) {
      throw sdk::Error(OAR_ERR_UNAVAILABLE, me + ": connecting to the peers failed: " + e.what());
    }
    // connectFullMesh can return on one rank while a peer's side of their connection is still being set
    // up (the connecting side is done once it has written its hello, the listening side only once it has
    // read it). A rank that then destroyed its communicator at once (a short program) would cut that
    // handshake and fail the peer with "connection closed by peer", or leave it waiting. So init ends
    // with an exchange over every connection: a rank returns only when each peer has finished its whole
    // mesh and has posted the receive for this rank's message, which then reaches it ahead of any close.
    try {
      check_peers(*c, Header{kInit, 0, 0, 0, static_cast<uint64_t>(nranks), 0}, kInitSlot);
    } catch (const gloo::Exception& e) {
      throw sdk::Error(OAR_ERR_UNAVAILABLE, me + ": connecting to the peers failed: " + e.what());
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), me + ": " + e.what());
    }
    std::lock_guard<std::mutex> lk(g_comms_mu);
    comms()[c.get()] = c;
    *out = reinterpret_cast<OarComm>(c.get());
  });
}

OarError* comm_destroy(OarComm handle) {
  return guard([&] {
    std::shared_ptr<Comm> c = find_comm(handle);
    std::lock_guard<std::mutex> lk(g_comms_mu);
    comms().erase(c.get());  // queued work keeps its own reference; the mesh closes with the last one
  });
}

OarError* all_reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kAllReduce, dtype, count, op, 0);
    submit(c, stream, "all_reduce", [c, h, send, recv] {
      check_peers(*c, h);
      if (h.count == 0) return;
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::AllreduceOptions o(c->ctx);
        if (send != recv) o.setInput(const_cast<T*>(static_cast<const T*>(send)), h.count);
        o.setOutput(static_cast<T*>(recv), h.count);
        o.setReduceFunction(reduce_fn(h.dtype, h.op));
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::allreduce(o);
      });
      if (h.op == OAR_REDUCE_AVG) sdk::finish_average(recv, h.count, h.dtype, c->nranks);
    });
  });
}

OarError* broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root, OarComm comm, OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kBroadcast, dtype, count, 0, root);
    submit(c, stream, "broadcast", [c, h, buf] {
      check_peers(*c, h);
      if (h.count == 0) return;
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::BroadcastOptions o(c->ctx);
        o.setOutput(static_cast<T*>(buf), h.count);
        o.setRoot(h.root);
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::broadcast(o);
      });
    });
  });
}

OarError* reduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op, int32_t root,
                 OarComm comm, OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kReduce, dtype, count, op, root);
    submit(c, stream, "reduce", [c, h, send, recv] {
      check_peers(*c, h);
      if (h.count == 0) return;
      const bool at_root = c->rank == h.root;
      // Gloo writes partial results to every rank's output: non-root ranks get scratch (their recv may
      // be NULL or in use).
      std::vector<unsigned char> scratch(at_root ? 0 : h.count * sdk::dtype_size(h.dtype));
      void* out = at_root ? recv : scratch.data();
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::ReduceOptions o(c->ctx);
        if (send != out) o.setInput(const_cast<T*>(static_cast<const T*>(send)), h.count);
        o.setOutput(static_cast<T*>(out), h.count);
        o.setRoot(h.root);
        o.setReduceFunction(reduce_fn(h.dtype, h.op));
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::reduce(o);
      });
      if (at_root && h.op == OAR_REDUCE_AVG) sdk::finish_average(recv, h.count, h.dtype, c->nranks);
    });
  });
}

OarError* all_gather(const void* send, void* recv, uint64_t send_count, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kAllGather, dtype, send_count, 0, 0);
    submit(c, stream, "all_gather", [c, h, send, recv] {
      check_peers(*c, h);
      if (h.count == 0) return;
      const size_t bytes = h.count * sdk::dtype_size(h.dtype);
      char* mine = static_cast<char*>(recv) + bytes * c->rank;
      if (send != mine) std::memmove(mine, send, bytes);  // Gloo's in-place form: our block already there
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::AllgatherOptions o(c->ctx);
        o.setOutput(static_cast<T*>(recv), h.count * c->nranks);
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::allgather(o);
      });
    });
  });
}

OarError* reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype, int32_t op,
                         OarComm comm, OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kReduceScatter, dtype, recv_count, op, 0);
    submit(c, stream, "reduce_scatter", [c, h, send, recv] {
      check_peers(*c, h);
      if (h.count == 0) return;
      const size_t es = sdk::dtype_size(h.dtype), total = h.count * c->nranks;
      std::vector<unsigned char> scratch(total * es);
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::AllreduceOptions o(c->ctx);
        o.setInput(const_cast<T*>(static_cast<const T*>(send)), total);
        o.setOutput(reinterpret_cast<T*>(scratch.data()), total);
        o.setReduceFunction(reduce_fn(h.dtype, h.op));
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::allreduce(o);
      });
      std::memcpy(recv, scratch.data() + h.count * es * c->rank, h.count * es);
      if (h.op == OAR_REDUCE_AVG) sdk::finish_average(recv, h.count, h.dtype, c->nranks);
    });
  });
}

OarError* all_to_all(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype, OarComm comm,
                     OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const Header h = next_header(*c, kAllToAll, dtype, count_per_rank, 0, 0);
    submit(c, stream, "all_to_all", [c, h, send, recv] {
      check_peers(*c, h);
      if (h.count == 0) return;
      const size_t total = h.count * c->nranks;
      std::vector<unsigned char> copy;  // Gloo needs distinct buffers: an in-place call sends a copy
      const void* in = send;
      if (send == recv) {
        copy.assign(static_cast<const unsigned char*>(send),
                    static_cast<const unsigned char*>(send) + total * sdk::dtype_size(h.dtype));
        in = copy.data();
      }
      with_element(h.dtype, [&](auto tag) {
        using T = decltype(tag);
        gloo::AlltoallOptions o(c->ctx);
        o.setInput(const_cast<T*>(static_cast<const T*>(in)), total);
        o.setOutput(static_cast<T*>(recv), total);
        o.setTag(static_cast<uint32_t>(h.seq));
        gloo::alltoall(o);
      });
    });
  });
}

// ---- send / recv and groups ------------------------------------------------------------------------------
// One point-to-point message: a descriptor then the data, on slots numbered per (sender, receiver) pair.
struct P2p {
  bool is_send = false;
  void* buf = nullptr;
  uint64_t count = 0;
  int32_t dtype = 0, peer = 0;
  uint64_t seq = 0;
};

// Posts every send, then completes every receive (checking its descriptor), then waits for the sends, so
// the calls of one group never deadlock whatever their order on either side.
void run_p2p(Comm& c, const std::vector<P2p>& ops) {
  const auto end = std::chrono::steady_clock::now() + c.timeout;
  struct Posted {
    const P2p* op;
    Header h;
    std::unique_ptr<gloo::transport::UnboundBuffer> hb, db;
  };
  std::vector<Posted> posted(ops.size());
  auto lost = [&](const P2p& op, const char* doing, const gloo::Exception& e) {
    if (timed_out(e))
      return sdk::Error(OAR_ERR_UNAVAILABLE, std::string(doing) + " rank " + std::to_string(op.peer) +
                                                 ": no matching call within " +
                                                 std::to_string(c.timeout.count()) +
                                                 " ms (OAR_COLLECTIVE_TIMEOUT)");
    return sdk::Error(OAR_ERR_UNAVAILABLE, std::string(doing) + " rank " + std::to_string(op.peer) +
                                               ": lost the connection (did that process exit?): " + e.what());
  };
  auto aborted = [](bool ok) { OAR_SDK_CHECK(ok, OAR_ERR_PRECONDITION, "the communicator was aborted"); };
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2p& op = ops[i];
    Posted& p = posted[i];
    p.op = &op;
    const uint64_t slot = kP2pSlot | ((op.seq & 0xffffffffffULL) << 1);
    p.h = Header{kSend, op.dtype, 0, 0, op.count, op.seq};
    p.hb = c.ctx->createUnboundBuffer(&p.h, sizeof(Header));
    try {
      if (op.is_send) {
        p.hb->send(op.peer, slot);
        if (op.count) {
          p.db = c.ctx->createUnboundBuffer(op.buf, op.count * sdk::dtype_size(op.dtype));
          p.db->send(op.peer, slot | 1);
        }
      } else {
        p.hb->recv(op.peer, slot);
      }
    } catch (const gloo::Exception& e) {
      throw lost(op, op.is_send ? "sending to" : "receiving from", e);
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2p& op = ops[i];
    if (op.is_send) continue;
    Posted& p = posted[i];
    try {
      aborted(wait_op(c, *p.hb, true, end));
      OAR_SDK_CHECK(p.h.dtype == op.dtype && p.h.count == op.count, OAR_ERR_INVALID_ARGUMENT,
                    "rank " << c.rank << " receives " << op.count << " " << sdk::dtype_name(op.dtype)
                            << " from rank " << op.peer << ", which sends " << p.h.count << " "
                            << sdk::dtype_name(p.h.dtype));
      if (op.count) {
        const uint64_t slot = kP2pSlot | ((op.seq & 0xffffffffffULL) << 1);
        p.db = c.ctx->createUnboundBuffer(op.buf, op.count * sdk::dtype_size(op.dtype));
        p.db->recv(op.peer, slot | 1);
        aborted(wait_op(c, *p.db, true, end));
      }
    } catch (const gloo::Exception& e) {
      throw lost(op, "receiving from", e);
    }
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2p& op = ops[i];
    if (!op.is_send) continue;
    Posted& p = posted[i];
    try {
      for (auto* b : {p.hb.get(), p.db.get()})
        if (b) aborted(wait_op(c, *b, false, end));
    } catch (const gloo::Exception& e) {
      throw lost(op, "sending to", e);
    }
  }
}

// Between group_start and group_end this thread's send/recv calls are collected and run together (per
// communicator and stream) at group_end; other collectives run as they are called.
struct Pending {
  std::shared_ptr<Comm> comm;
  OarStream stream;
  std::vector<P2p> ops;
};
thread_local int t_group_depth = 0;
thread_local std::vector<Pending> t_group;

OarError* p2p(bool is_send, const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm,
              OarStream stream) {
  return guard([&] {
    auto c = find_comm(comm);
    const char* what = is_send ? "send" : "recv";
    OAR_SDK_CHECK(dtype >= 0 && dtype < OAR_DTYPE_COUNT, OAR_ERR_TYPE,
                  "cpu " << what << ": unknown dtype " << dtype);
    OAR_SDK_CHECK(peer >= 0 && peer < c->nranks && peer != c->rank, OAR_ERR_INVALID_ARGUMENT,
                  "cpu " << what << ": peer " << peer << " is not another rank of " << c->nranks
                         << " (this is rank " << c->rank << ")");
    P2p op{is_send, const_cast<void*>(buf), count, dtype, peer, 0};
    {
      std::lock_guard<std::mutex> lk(c->mu);
      op.seq = is_send ? c->send_seq[peer]++ : c->recv_seq[peer]++;
    }
    if (t_group_depth > 0) {
      for (auto& g : t_group)
        if (g.comm == c && g.stream == stream) return g.ops.push_back(op);
      t_group.push_back({c, stream, {op}});
      return;
    }
    submit(c, stream, what, [c, op] { run_p2p(*c, {op}); });
  });
}
OarError* send(const void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm, OarStream stream) {
  return p2p(true, buf, count, dtype, peer, comm, stream);
}
OarError* recv(void* buf, uint64_t count, int32_t dtype, int32_t peer, OarComm comm, OarStream stream) {
  return p2p(false, buf, count, dtype, peer, comm, stream);
}
OarError* group_start() {
  return guard([&] { ++t_group_depth; });
}
OarError* group_end() {
  return guard([&] {
    OAR_SDK_CHECK(t_group_depth > 0, OAR_ERR_PRECONDITION, "cpu group_end without group_start");
    if (--t_group_depth > 0) return;
    std::vector<Pending> group = std::exchange(t_group, {});
    for (Pending& g : group) {
      auto c = g.comm;
      submit(c, g.stream, "send/recv group", [c, ops = std::move(g.ops)] { run_p2p(*c, ops); });
    }
  });
}

void abort_waits(Comm& c) {
  mark_broken(c, OAR_ERR_PRECONDITION, "the communicator was aborted");
  // Wakes every wait of ours (descriptors, send/recv); a call inside one of Gloo's algorithms ends with
  // Gloo's timeout or when a peer's connection closes.
  std::lock_guard<std::mutex> lk(c.mu);
  c.aborted = true;
  for (auto* b : c.waiting) {
    b->abortWaitRecv();
    b->abortWaitSend();
  }
}

OarError* abort_comm(OarComm handle) {
  return guard([&] { abort_waits(*find_comm(handle)); });
}

OarError* get_async_error(OarComm handle, OarError** error) {
  return guard([&] {
    OAR_SDK_CHECK(error, OAR_ERR_INVALID_ARGUMENT, "cpu get_async_error: NULL output");
    *error = nullptr;
    auto c = find_comm(handle);
    std::lock_guard<std::mutex> lk(c->mu);
    if (c->async_error.set) {
      sdk::StoredError e = std::exchange(c->async_error, sdk::StoredError{});
      *error = sdk::make_error(e.code, e.message);
    }
  });
}

}  // namespace

// Plugin shutdown: every live communicator is aborted, so a stream worker waiting for a peer that will not
// come lets the process exit instead of waiting out the timeout.
void collectives_shutdown() {
  std::vector<std::shared_ptr<Comm>> live;
  {
    std::lock_guard<std::mutex> lk(g_comms_mu);
    for (auto& kv : comms()) live.push_back(kv.second);
  }
  for (auto& c : live) abort_waits(*c);
}

void fill_collective_table(OarCollectiveTable& t) {
  t.struct_size = sizeof(t);
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

}  // namespace oar_cpu
