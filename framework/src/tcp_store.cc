// The TCP key-value store (framework/include/oar/core/store.h): a poll()-driven server on its own thread
// in the master process, and a client that every process (the master too) uses through plain sockets.
//
// Wire protocol (native byte order; every process of a job runs on one architecture):
//   request: u32 magic 'OARS' | u8 command | u32 field count | per field: u64 length, bytes
//   reply:   u32 magic 'OARR' | u8 status (0 ok, 1 error, 2 timed out, 3 refused) | u64 length | payload
//            (errors: the message)
// Every new connection first sends `auth` with this process's token (empty: none); a store whose token
// differs answers "refused" and closes it (docs/distributed.md, "Security model").
// Integers travel as 8-byte fields. get and wait carry their timeout (ms) as the first field: the server
// answers status 2 ("timed out") when it passes, so the connection stays in step and is reused; the
// client waits a little longer than that before it gives up on a silent server. Lengths are checked against
// the limits in store.h before anything is buffered, and buffers only grow with bytes actually received, so a
// hostile length costs nothing. A malformed frame gets an error reply and the connection is closed; a
// well-formed request the server refuses (a key too long, a non-integer under add) gets an error reply and
// the connection stays.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <oar/core/error.h>
#include <oar/core/store.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace oar {
namespace {

constexpr uint32_t kRequestMagic = 0x5352414f;  // "OARS"
constexpr uint32_t kReplyMagic = 0x5252414f;    // "OARR"
constexpr size_t kRequestHeader = 4 + 1 + 4;
constexpr size_t kReplyHeader = 4 + 1 + 8;
constexpr uint32_t kMaxFields = kStoreMaxKeysPerCall + 1;
// The largest well-formed request: a value plus the most keys of the largest size.
constexpr uint64_t kMaxRequestBytes =
    kRequestHeader + kStoreMaxValueBytes + uint64_t{kMaxFields} * (8 + kStoreMaxKeyBytes);

enum Command : uint8_t { kSet = 1, kGet, kAdd, kWait, kCheck, kDelete, kNumKeys, kAuth };
// Reply status: 0 ok, 1 error, 2 timed out, 3 refused (token; the server closes the connection).
constexpr uint8_t kRefused = 3;
// Bytes a peer may send before it has presented the token (the auth request itself is far smaller).
constexpr size_t kMaxBytesBeforeAuth = 64 * 1024;

const char* command_name(uint8_t c) {
  switch (c) {
    case kSet:
      return "set";
    case kGet:
      return "get";
    case kAdd:
      return "add";
    case kWait:
      return "wait";
    case kCheck:
      return "check";
    case kDelete:
      return "delete_key";
    case kNumKeys:
      return "num_keys";
    case kAuth:
      return "auth";
  }
  return "?";
}

using Clock = std::chrono::steady_clock;

std::string errno_text(int e) { return std::strerror(e); }

std::string int_field(int64_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(v)); }
int64_t field_int(const std::string& f) {
  int64_t v = 0;
  std::memcpy(&v, f.data(), std::min(f.size(), sizeof(v)));
  return v;
}

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

// Compares without an early exit, so the time taken says nothing about where a guess first differs.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string address_text(const sockaddr* a) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (a->sa_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(a);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
    port = ntohs(in->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// ---- server -----------------------------------------------------------------------------------------

struct Conn {
  int fd = -1;
  std::string in;   // bytes received, not yet parsed
  std::string out;  // reply bytes, sent up to out_pos
  size_t out_pos = 0;
  bool closing = false;  // close once `out` is flushed (after a framing error)
  bool dead = false;
  bool authed = false;  // presented the token (always true when the store has none)
  std::string peer;     // the peer's address, for the refusal message
  // A get / wait whose keys do not all exist yet: answered when the last one is set.
  bool waiting = false;
  uint8_t wait_cmd = 0;
  std::vector<std::string> wait_keys;
  std::chrono::steady_clock::time_point wait_deadline;
};

class Server {
 public:
  // Listens on `host`'s addresses only (every address it resolves to, e.g. ::1 and 127.0.0.1 for
  // localhost): a job's store is not reachable from other networks. "0.0.0.0" / "::" listen everywhere.
  Server(const std::string& host, int port, std::string token) : token_(std::move(token)) {
    open_listeners(host, port);
    if (::pipe(wake_) != 0) {
      for (int fd : listen_fds_) ::close(fd);
      OAR_THROW(ErrorCode::kUnavailable, "TCPStore: pipe() failed: " << errno_text(errno));
    }
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    const char stop = 0;
    (void)!::write(wake_[1], &stop, 1);
    thread_.join();
    for (auto& conn : conns_) ::close(conn.fd);
    for (int fd : listen_fds_) ::close(fd);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return port_; }
  pid_t owner() const { return owner_; }

 private:
  void open_listeners(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    OAR_ENFORCE(rc == 0, ErrorCode::kInvalidArgument,
                "TCPStore: the master cannot resolve host '" << host << "': " << ::gai_strerror(rc));
    int last_errno = 0;
    std::string failed_at;
    for (addrinfo* a = res; a; a = a->ai_next) {
      sockaddr_storage addr{};
      std::memcpy(&addr, a->ai_addr, a->ai_addrlen);
      // Every address gets the same port: the one asked for, or the one the first bind picked.
      const uint16_t want = htons(static_cast<uint16_t>(port_ ? port_ : port));
      bool any = false;
      if (a->ai_family == AF_INET6) {
        auto* in = reinterpret_cast<sockaddr_in6*>(&addr);
        in->sin6_port = want;
        any = IN6_IS_ADDR_UNSPECIFIED(&in->sin6_addr);
      } else if (a->ai_family == AF_INET) {
        reinterpret_cast<sockaddr_in*>(&addr)->sin_port = want;
      } else {
        continue;
      }
      int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        last_errno = errno;
        continue;
      }
      int one = 1, v6only = any ? 0 : 1;  // "::" also takes IPv4 where the system allows it
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (a->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        set_nonblocking(fd, true);
        listen_fds_.push_back(fd);
        if (!port_) {
          sockaddr_storage bound{};
          socklen_t len = sizeof(bound);
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
          port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
        }
        continue;
      }
      last_errno = errno;
      failed_at = address_text(reinterpret_cast<sockaddr*>(&addr));
      ::close(fd);
      // An address without IPv6 (say) is skipped; one where another process holds the port is not: its
      // clients would reach that process.
      if (last_errno == EADDRINUSE) break;
    }
    ::freeaddrinfo(res);
    if (!listen_fds_.empty() && last_errno != EADDRINUSE) return;
    for (int fd : listen_fds_) ::close(fd);
    listen_fds_.clear();
    OAR_THROW(ErrorCode::kUnavailable,
              "TCPStore: the master cannot listen on port "
                  << port << " of '" << host << "' (" << failed_at << "): " << errno_text(last_errno)
                  << (last_errno == EADDRINUSE      ? " (another process uses it)"
                      : last_errno == EADDRNOTAVAIL ? " (it is not an address of this machine)"
                                                    : ""));
  }

  void loop() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      for (int fd : listen_fds_) fds.push_back({fd, POLLIN, 0});
      const size_t first_conn = fds.size();
      for (auto& c : conns_)
        fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      if (::poll(fds.data(), fds.size(), poll_timeout_ms()) < 0) {
        if (errno == EINTR) continue;
        return;  // nothing sensible left to do; clients see their connections fail
      }
      expire_waiters();
      if (fds[0].revents) return;
      for (size_t i = 1; i < first_conn; ++i)
        if (fds[i].revents & POLLIN) accept_all(fds[i].fd);
      // conns_ may have grown in accept_all(): only the first fds.size() - first_conn have poll results.
      for (size_t i = first_conn; i < fds.size(); ++i) {
        Conn& c = conns_[i - first_conn];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) receive(c);
        if (!c.dead && !c.out.empty()) flush(c);
      }
      for (size_t i = 0; i < conns_.size();) {
        Conn& c = conns_[i];
        if (c.dead || (c.closing && c.out.empty())) {
          ::close(c.fd);
          conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
    }
  }

  // Until the earliest get / wait deadline (-1: none pending).
  int poll_timeout_ms() const {
    int64_t best = -1;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& c : conns_) {
      if (!c.waiting) continue;
      const int64_t left = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(c.wait_deadline - now).count() + 1);
      if (best < 0 || left < best) best = left;
    }
    return static_cast<int>(std::min<int64_t>(best, 1 << 30));
  }

  void expire_waiters() {
    const auto now = std::chrono::steady_clock::now();
    for (auto& c : conns_) {
      if (!c.waiting || now < c.wait_deadline) continue;
      c.waiting = false;
      c.wait_keys.clear();
      reply(c, 2, "timed out");
      process(c);  // requests it sent meanwhile
      flush(c);
    }
  }

  void accept_all(int listen_fd) {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t len = sizeof(peer);
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a connection that went away before we took it
      set_nodelay(fd);
      Conn c;
      c.fd = fd;
      c.authed = token_.empty();
      c.peer = address_text(reinterpret_cast<sockaddr*>(&peer));
      conns_.push_back(std::move(c));
    }
  }

  void receive(Conn& c) {
    char buf[64 * 1024];
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (!c.closing) c.in.append(buf, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof(buf)) break;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      c.dead = true;  // closed by the client (or reset): its pending wait goes with it
      return;
    }
    process(c);
  }

  // Empties `s`, giving back its memory after a large value (an idle connection keeps none).
  static void release_if_large(std::string& s) {
    if (s.capacity() > (1u << 20))
      std::string().swap(s);
    else
      s.clear();
  }

  void flush(Conn& c) {
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<size_t>(n);  // an offset, not erase(): large values would move repeatedly
        if (c.out_pos == c.out.size()) {
          release_if_large(c.out);
          c.out_pos = 0;
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      c.dead = true;
      return;
    }
  }

  static void reply(Conn& c, uint8_t status, const std::string& payload) {
    char h[kReplyHeader];
    const uint64_t len = payload.size();
    std::memcpy(h, &kReplyMagic, 4);
    h[4] = static_cast<char>(status);
    std::memcpy(h + 5, &len, 8);
    c.out.append(h, sizeof(h));
    c.out.append(payload);
  }
  static void fail(Conn& c, const std::string& message) { reply(c, 1, "TCPStore server: " + message); }

  // Parses and serves complete requests in c.in, in order, until one has to wait or the bytes run out.
  void process(Conn& c) {
    while (!c.waiting && !c.closing && !c.dead) {
      if (!c.authed && c.in.size() > kMaxBytesBeforeAuth) {
        refuse(c, "sent " + std::to_string(c.in.size()) + " bytes without presenting the token");
        return;
      }
      uint8_t cmd = 0;
      std::vector<std::string> fields;
      size_t used = 0;
      std::string error;
      if (!parse(c.in, &cmd, &fields, &used, &error)) {
        if (!error.empty()) {  // a framing error: the stream cannot be trusted past this point
          fail(c, error);
          c.closing = true;
          c.in.clear();
        }
        return;
      }
      c.in.erase(0, used);
      if (c.in.empty()) release_if_large(c.in);
      serve(c, cmd, std::move(fields));
    }
  }

  // true: a whole request was parsed. false with `error` empty: more bytes needed.
  static bool parse(const std::string& in, uint8_t* cmd, std::vector<std::string>* fields, size_t* used,
                    std::string* error) {
    if (in.size() < kRequestHeader) return false;
    uint32_t magic = 0, count = 0;
    std::memcpy(&magic, in.data(), 4);
    if (magic != kRequestMagic) {
      *error = "garbled request (bad magic number): is this client an oar TCPStore?";
      return false;
    }
    *cmd = static_cast<uint8_t>(in[4]);
    std::memcpy(&count, in.data() + 5, 4);
    if (count > kMaxFields) {
      *error = "request with " + std::to_string(count) + " fields refused (at most " +
               std::to_string(kMaxFields) + ")";
      return false;
    }
    uint64_t pos = kRequestHeader;
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (uint32_t i = 0; i < count; ++i) {
      if (in.size() < pos + 8) return false;
      uint64_t len = 0;
      std::memcpy(&len, in.data() + pos, 8);
      if (len > kStoreMaxValueBytes || pos + 8 + len > kMaxRequestBytes) {
        *error = "request field of " + std::to_string(len) + " bytes refused (values at most " +
                 std::to_string(kStoreMaxValueBytes) + " bytes)";
        return false;
      }
      pos += 8;
      spans.emplace_back(pos, len);
      pos += len;
    }
    if (in.size() < pos) return false;
    fields->clear();
    for (const auto& s : spans) fields->emplace_back(in, s.first, s.second);
    *used = pos;
    return true;
  }

  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& k : keys)
      if (!data_.count(k)) return false;
    return true;
  }

  // Refuses a peer without the job's token: it gets the reason, the connection closes, and the master's
  // stderr says so (the first few times: a port scanner must not flood it).
  void refuse(Conn& c, const std::string& why) {
    reply(c, kRefused, "TCPStore server: refused: " + why);
    c.closing = true;
    c.in.clear();
    if (++refusals_ <= 10)
      std::fprintf(stderr, "oar TCPStore master (port %d): refused a peer from %s: %s%s\n", port_,
                   c.peer.c_str(), why.c_str(),
                   refusals_ == 10 ? " (further refusals are not reported)" : "");
  }

  // The token gate: a store with a token serves a connection only after an auth request carrying it.
  // A peer with a token meeting a store without one is refused too, so a mismatch fails on both sides.
  bool admitted(Conn& c, uint8_t cmd, const std::vector<std::string>& f) {
    if (cmd == kAuth) {
      if (f.size() != 1)
        refuse(c, "malformed auth request");
      else if (token_.empty() && !f[0].empty())
        refuse(c, "the peer presented a token (OAR_STORE_TOKEN) but this store has none");
      else if (!token_.empty() && f[0].empty())
        refuse(c, "this store requires the job's token (OAR_STORE_TOKEN) and the peer presented none");
      else if (!same_token(f[0], token_))
        refuse(c, "the peer presented a wrong token (OAR_STORE_TOKEN differs)");
      else {
        c.authed = true;
        reply(c, 0, "");
      }
      return false;
    }
    if (!c.authed)
      refuse(c, "this store requires the job's token (OAR_STORE_TOKEN) and the peer presented none");
    return c.authed;
  }

  void serve(Conn& c, uint8_t cmd, std::vector<std::string> f) {
    if (!admitted(c, cmd, f)) return;
    const char* name = command_name(cmd);
    auto need = [&](size_t lo, size_t hi) {
      if (f.size() < lo || f.size() > hi) {
        fail(c, std::string(name) + ": wrong number of fields (" + std::to_string(f.size()) + ")");
        return false;
      }
      for (size_t i = 0; i < f.size(); ++i)
        if (!(cmd == kSet && i == 1) && !(cmd == kAdd && i == 1) &&
            !((cmd == kGet || cmd == kWait) && i == 0) && f[i].size() > kStoreMaxKeyBytes) {
          fail(c, std::string(name) + ": key of " + std::to_string(f[i].size()) + " bytes refused (at most " +
                      std::to_string(kStoreMaxKeyBytes) + ")");
          return false;
        }
      return true;
    };
    switch (cmd) {
      case kSet:
        if (!need(2, 2)) return;
        data_[f[0]] = std::move(f[1]);
        reply(c, 0, "");
        wake_waiters();
        return;
      case kGet:
      case kWait:
        if (!need(2, cmd == kGet ? 2 : kMaxFields)) return;
        if (f[0].size() != 8 || field_int(f[0]) < 0) {
          fail(c, std::string(name) + ": the timeout must be 8 bytes, not negative");
          return;
        }
        c.waiting = true;
        c.wait_cmd = cmd;
        c.wait_deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(std::min<int64_t>(field_int(f[0]), int64_t{1} << 40));
        c.wait_keys.assign(std::make_move_iterator(f.begin() + 1), std::make_move_iterator(f.end()));
        answer_if_ready(c);
        return;
      case kAdd: {
        if (!need(2, 2) || f[1].size() != 8) {
          if (f.size() == 2) fail(c, "add: the increment must be 8 bytes");
          return;
        }
        int64_t value = 0;
        auto it = data_.find(f[0]);
        if (it != data_.end()) {
          const std::string& s = it->second;
          char* end = nullptr;
          errno = 0;
          value = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || s.size() > 20 || errno || end != s.c_str() + s.size()) {
            fail(c, "add: the value under key '" + f[0] + "' is not an integer");
            return;
          }
        }
        value += field_int(f[1]);
        data_[f[0]] = std::to_string(value);
        reply(c, 0, int_field(value));
        wake_waiters();
        return;
      }
      case kCheck:
        if (!need(1, kMaxFields)) return;
        reply(c, 0, std::string(1, has_all(f) ? 1 : 0));
        return;
      case kDelete:
        if (!need(1, 1)) return;
        reply(c, 0, std::string(1, data_.erase(f[0]) ? 1 : 0));
        return;
      case kNumKeys:
        if (!need(0, 0)) return;
        reply(c, 0, int_field(static_cast<int64_t>(data_.size())));
        return;
    }
    fail(c, "unknown command " + std::to_string(cmd));
  }

  void answer_if_ready(Conn& c) {
    if (!c.waiting || !has_all(c.wait_keys)) return;
    c.waiting = false;
    reply(c, 0, c.wait_cmd == kGet ? data_[c.wait_keys[0]] : std::string());
    c.wait_keys.clear();
  }

  void wake_waiters() {
    for (auto& w : conns_) {
      if (!w.waiting) continue;
      answer_if_ready(w);
      if (!w.waiting) process(w);  // requests it sent meanwhile
    }
  }

  const std::string token_;  // empty: no authentication (as before tokens existed)
  std::vector<int> listen_fds_;
  int port_ = 0;
  int refusals_ = 0;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  const pid_t owner_ = ::getpid();
  std::vector<Conn> conns_;                  // server thread only
  std::map<std::string, std::string> data_;  // server thread only
};

// ---- client -----------------------------------------------------------------------------------------

int64_t ms_left(Clock::time_point deadline) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

// Waits for `events` on fd until the deadline. false: timed out.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms_left(deadline), 1 << 30)));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return true;  // let the following send/recv report the error
  }
}

}  // namespace

struct TCPStore::Impl {
  std::string host;
  int port = 0;
  bool is_master = false;
  int world_size = 0;
  int64_t timeout_ms = kStoreDefaultTimeoutMs;
  std::string token;  // presented on every new connection; empty: none
  std::unique_ptr<Server> server;
  std::mutex mu;
  std::vector<int> idle;  // connected sockets not in use: one per concurrent caller at most
  std::atomic<int64_t> barriers{0};
  pid_t owner = ::getpid();  // a forked child must not share this process's connections

  ~Impl() {
    for (int fd : idle) ::close(fd);
  }

  std::string where() const { return host + ":" + std::to_string(port); }

  // One connection attempt to every address of host:port. -1 and `why` on failure.
  int connect_once(Clock::time_point deadline, std::string* why, bool* resolvable) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    if (rc != 0) {
      *resolvable = false;
      *why = std::string("cannot resolve host '") + host + "': " + ::gai_strerror(rc);
      return -1;
    }
    *resolvable = true;
    int fd = -1;
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        *why = errno_text(errno);
        continue;
      }
      set_nonblocking(fd, true);  // so connecting to a silent address is bounded by the deadline
      int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
      int err = r == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        err = ETIMEDOUT;
        if (wait_fd(fd, POLLOUT, deadline)) {
          socklen_t len = sizeof(err);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
      if (err != 0) {
        *why = errno_text(err);
        ::close(fd);
        fd = -1;
        continue;
      }
      set_nonblocking(fd, false);
      set_nodelay(fd);
    }
    ::freeaddrinfo(res);
    return fd;
  }

  // Connects, retrying until the deadline while the master is not up yet.
  int connect_retry(Clock::time_point deadline) {
    std::string why;
    for (;;) {
      bool resolvable = true;
      int fd = connect_once(deadline, &why, &resolvable);
      if (fd >= 0) {
        authenticate(fd, deadline);
        return fd;
      }
      OAR_ENFORCE(resolvable, ErrorCode::kInvalidArgument, "TCPStore: " << why);
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(100, ms_left(deadline))));
    }
    OAR_THROW(ErrorCode::kUnavailable, "TCPStore: could not connect to the store master at "
                                           << where() << " within " << timeout_ms << " ms: " << why
                                           << " (is the master process running?)");
  }

  int take_connection() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (owner != ::getpid()) {  // forked (a DataLoader worker, say): the inherited sockets are the parent's
        for (int fd : idle) ::close(fd);
        idle.clear();
        owner = ::getpid();
      }
      if (!idle.empty()) {
        int fd = idle.back();
        idle.pop_back();
        return fd;
      }
    }
    // Another concurrent caller (or a connection dropped by an error): the master was up before, so a
    // refusal now means it is gone. A short retry window covers a momentarily full accept queue.
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 2000));
    std::string why;
    for (;;) {
      bool resolvable = true;
      int fd = connect_once(deadline, &why, &resolvable);
      if (fd >= 0) {
        authenticate(fd, deadline);
        return fd;
      }
      if (!resolvable || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    OAR_THROW(ErrorCode::kUnavailable,
              "TCPStore: cannot reach the store master at " << where() << ": " << why << " (has it exited?)");
  }

  void give_back(int fd) {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(fd);
  }

  // Sends one request on `fd` and reads the reply (status, payload) before `deadline`. A broken or silent
  // connection closes `fd` and throws, naming the command.
  std::pair<uint8_t, std::string> exchange(int fd, uint8_t cmd, const std::vector<std::string>& fields,
                                           Clock::time_point deadline, int64_t allowed_ms) {
    const char* name = command_name(cmd);
    auto lost = [&](const std::string& why) {
      ::close(fd);
      OAR_THROW(ErrorCode::kUnavailable, "TCPStore." << name
                                                     << ": lost the connection to the store master at "
                                                     << where() << ": " << why << " (has it exited?)");
    };
    auto timed_out = [&]() {
      ::close(fd);  // the server may still answer later: this connection cannot be reused
      OAR_THROW(ErrorCode::kUnavailable, "TCPStore." << name << ": no answer from the store master at "
                                                     << where() << " within " << allowed_ms << " ms");
    };
    std::string msg(kRequestHeader, '\0');
    const uint32_t count = static_cast<uint32_t>(fields.size());
    std::memcpy(&msg[0], &kRequestMagic, 4);
    msg[4] = static_cast<char>(cmd);
    std::memcpy(&msg[5], &count, 4);
    for (const auto& f : fields) {
      const uint64_t len = f.size();
      msg.append(reinterpret_cast<const char*>(&len), 8);
      msg.append(f);
    }
    for (size_t sent = 0; sent < msg.size();) {
      if (!wait_fd(fd, POLLOUT, deadline)) timed_out();
      ssize_t n = ::send(fd, msg.data() + sent, msg.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) lost(errno_text(errno));
      sent += static_cast<size_t>(n);
    }
    auto read_exact = [&](char* dst, size_t len) {
      for (size_t got = 0; got < len;) {
        if (!wait_fd(fd, POLLIN, deadline)) timed_out();
        ssize_t n = ::recv(fd, dst + got, len - got, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (n == 0) lost("connection closed");
        if (n < 0) lost(errno_text(errno));
        got += static_cast<size_t>(n);
      }
    };
    char h[kReplyHeader];
    read_exact(h, sizeof(h));
    uint32_t magic = 0;
    uint64_t len = 0;
    std::memcpy(&magic, h, 4);
    std::memcpy(&len, h + 5, 8);
    if (magic != kReplyMagic) lost("garbled reply (bad magic number): is " + where() + " an oar TCPStore?");
    if (len > kStoreMaxValueBytes) lost("reply of " + std::to_string(len) + " bytes refused");
    std::string payload;
    // Grows with the bytes received, in chunks, not with the announced length.
    for (uint64_t got = 0; got < len;) {
      const uint64_t chunk = std::min<uint64_t>(len - got, 1 << 20);
      payload.resize(got + chunk);
      read_exact(&payload[got], chunk);
      got += chunk;
    }
    if (static_cast<uint8_t>(h[4]) == kRefused) {
      ::close(fd);  // the server closes it too
      OAR_THROW(ErrorCode::kPrecondition, "TCPStore." << name << ": the store master at " << where()
                                                      << " refused this process: " << payload);
    }
    return {static_cast<uint8_t>(h[4]), std::move(payload)};
  }

  // A fresh connection presents this process's token first (empty when it has none), so a mismatch is
  // an error when the store is made, not at some later call.
  void authenticate(int fd, Clock::time_point deadline) {
    const auto limit =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 10000)));
    exchange(fd, kAuth, {token}, limit, std::min<int64_t>(timeout_ms, 10000));
  }

  // Sends one request and returns the reply's payload. `timeout` bounds the whole call; `waits_for`
  // names the keys a get / wait blocks on, for the timeout message.
  std::string call(uint8_t cmd, const std::vector<std::string>& fields, int64_t timeout,
                   const std::string& waits_for = "") {
    const char* name = command_name(cmd);
    if (timeout < 0) timeout = timeout_ms;
    // A get / wait is timed by the server (it answers "timed out"); the client allows it a margin.
    const int64_t margin = waits_for.empty() ? 0 : std::min<int64_t>(timeout_ms, 5000);
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout + margin);
    int fd = take_connection();
    auto [status, payload] = exchange(fd, cmd, fields, deadline, timeout + margin);
    give_back(fd);
    OAR_ENFORCE(status != 2, ErrorCode::kUnavailable,
                "TCPStore." << name << ": timed out after " << timeout << " ms waiting for " << waits_for);
    OAR_ENFORCE(status == 0, ErrorCode::kInvalidArgument, payload);
    return payload;
  }
};

std::string store_token_from_env() {
  const char* t = std::getenv("OAR_STORE_TOKEN");
  return t ? t : "";
}

TCPStore::TCPStore(const std::string& host, int port, bool is_master, int world_size, int64_t timeout_ms,
                   bool wait_for_workers, std::optional<std::string> token)
    : impl_(std::make_unique<Impl>()) {
  OAR_ENFORCE(!host.empty(), ErrorCode::kInvalidArgument, "TCPStore: host is empty");
  OAR_ENFORCE(port >= 0 && port <= 65535 && (port > 0 || is_master), ErrorCode::kInvalidArgument,
              "TCPStore: port " << port << " is out of range (1-65535; 0 picks a free port on the master)");
  OAR_ENFORCE(timeout_ms > 0, ErrorCode::kInvalidArgument,
              "TCPStore: timeout must be positive, got " << timeout_ms << " ms");
  Impl& d = *impl_;
  d.host = host;
  d.port = port;
  d.is_master = is_master;
  d.world_size = world_size;
  d.timeout_ms = timeout_ms;
  d.token = token ? *token : store_token_from_env();
  OAR_ENFORCE(d.token.size() <= kStoreMaxKeyBytes, ErrorCode::kInvalidArgument,
              "TCPStore: the token has " << d.token.size() << " bytes, at most " << kStoreMaxKeyBytes);
  if (is_master) {
    d.server = std::make_unique<Server>(host, port, d.token);
    d.port = d.server->port();
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  d.give_back(d.connect_retry(deadline));
  if (wait_for_workers && world_size > 0) {
    // Every process checks in; the one that completes the count opens the door for the master.
    const int64_t n = add("oar/store/init/count", 1);
    if (n == world_size) set("oar/store/init/done", "1");
    if (is_master) {
      try {
        wait({"oar/store/init/done"}, std::max<int64_t>(1, ms_left(deadline)));
      } catch (const Error&) {
        OAR_THROW(ErrorCode::kUnavailable, "TCPStore: the master waited "
                                               << timeout_ms << " ms for " << world_size << " processes; "
                                               << add("oar/store/init/count", 0) << " checked in");
      }
    }
  }
}

TCPStore::~TCPStore() {
  // In a forked child the server thread does not exist (and its wake-up pipe is the parent's): leave it.
  if (impl_->server && impl_->server->owner() != ::getpid()) (void)impl_->server.release();
}

const std::string& TCPStore::host() const { return impl_->host; }
int TCPStore::port() const { return impl_->port; }
bool TCPStore::is_master() const { return impl_->is_master; }
int TCPStore::world_size() const { return impl_->world_size; }
int64_t TCPStore::timeout_ms() const { return impl_->timeout_ms; }

namespace {
void check_key(const char* what, const std::string& key) {
  OAR_ENFORCE(key.size() <= kStoreMaxKeyBytes, ErrorCode::kInvalidArgument,
              "TCPStore." << what << ": key of " << key.size() << " bytes is longer than the limit of "
                          << kStoreMaxKeyBytes);
}
}  // namespace

void TCPStore::set(const std::string& key, const std::string& value) {
  check_key("set", key);
  OAR_ENFORCE(value.size() <= kStoreMaxValueBytes, ErrorCode::kInvalidArgument,
              "TCPStore.set: value of " << value.size() << " bytes for key '" << key
                                        << "' is larger than the limit of " << kStoreMaxValueBytes);
  impl_->call(kSet, {key, value}, -1);
}

std::string TCPStore::get(const std::string& key, int64_t timeout_ms) {
  check_key("get", key);
  const int64_t t = timeout_ms < 0 ? impl_->timeout_ms : timeout_ms;
  return impl_->call(kGet, {int_field(t), key}, t, "key '" + key + "'");
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  check_key("add", key);
  std::string r = impl_->call(kAdd, {key, int_field(delta)}, -1);
  OAR_ENFORCE(r.size() == 8, ErrorCode::kInternal, "TCPStore.add: malformed reply");
  return field_int(r);
}

void TCPStore::wait(const std::vector<std::string>& keys, int64_t timeout_ms) {
  if (keys.empty()) return;
  OAR_ENFORCE(keys.size() <= kStoreMaxKeysPerCall, ErrorCode::kInvalidArgument,
              "TCPStore.wait: " << keys.size() << " keys, at most " << kStoreMaxKeysPerCall);
  std::string names;
  for (const auto& k : keys) {
    check_key("wait", k);
    names += (names.empty() ? "'" : ", '") + k + "'";
  }
  const int64_t t = timeout_ms < 0 ? impl_->timeout_ms : timeout_ms;
  std::vector<std::string> fields{int_field(t)};
  fields.insert(fields.end(), keys.begin(), keys.end());
  impl_->call(kWait, fields, t, (keys.size() == 1 ? "key " : "keys ") + names);
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  OAR_ENFORCE(keys.size() <= kStoreMaxKeysPerCall, ErrorCode::kInvalidArgument,
              "TCPStore.check: " << keys.size() << " keys, at most " << kStoreMaxKeysPerCall);
  if (keys.empty()) return true;
  for (const auto& k : keys) check_key("check", k);
  return impl_->call(kCheck, keys, -1) == std::string(1, 1);
}

bool TCPStore::delete_key(const std::string& key) {
  check_key("delete_key", key);
  return impl_->call(kDelete, {key}, -1) == std::string(1, 1);
}

int64_t TCPStore::num_keys() { return field_int(impl_->call(kNumKeys, {}, -1)); }

void TCPStore::barrier(int64_t timeout_ms) {
  OAR_ENFORCE(impl_->world_size > 0, ErrorCode::kPrecondition,
              "TCPStore.barrier: needs the world size (the store was made with world_size "
                  << impl_->world_size << ")");
  const std::string prefix = "oar/store/barrier/" + std::to_string(++impl_->barriers);
  if (add(prefix + "/count", 1) == impl_->world_size) set(prefix + "/done", "1");
  wait({prefix + "/done"}, timeout_ms);
}

// ---- the global store -------------------------------------------------------------------------------

namespace {
struct Global {
  std::mutex mu;
  std::shared_ptr<TCPStore> store;
  bool env_tried = false;
  std::string env_error;
};
Global& global() {
  static Global* g = new Global();  // leaked: plugins may call in during process exit
  return *g;
}

const char* env(const char* a, const char* b = nullptr) {
  const char* v = std::getenv(a);
  if ((!v || !*v) && b) v = std::getenv(b);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, const char* text) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  OAR_ENFORCE(end != text && *end == '\0' && v >= 0 && v <= (1 << 30), ErrorCode::kInvalidArgument,
              "TCPStore from the environment: " << name << "='" << text << "' is not a non-negative integer");
  return static_cast<int>(v);
}

std::shared_ptr<TCPStore> store_from_env() {
  std::string host, port_text;
  const char* port_name = "MASTER_PORT";
  if (const char* addr = env("MASTER_ADDR")) {
    const char* port = env("MASTER_PORT");
    OAR_ENFORCE(port, ErrorCode::kInvalidArgument,
                "TCPStore from the environment: MASTER_ADDR is set, MASTER_PORT is not");
    host = addr;
    port_text = port;
  } else if (const char* master = env("PADDLE_MASTER")) {
    const std::string m = master;
    const size_t colon = m.rfind(':');
    OAR_ENFORCE(colon != std::string::npos && colon > 0, ErrorCode::kInvalidArgument,
                "TCPStore from the environment: PADDLE_MASTER='" << m << "' is not host:port");
    host = m.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    port_text = m.substr(colon + 1);
    port_name = "PADDLE_MASTER's port";
  } else {
    return nullptr;
  }
  const int port = env_int(port_name, port_text.c_str());
  const char* rank_text = env("PADDLE_TRAINER_ID", "RANK");
  const char* size_text = env("PADDLE_TRAINERS_NUM", "WORLD_SIZE");
  const int rank = rank_text ? env_int("PADDLE_TRAINER_ID / RANK", rank_text) : 0;
  const int world = size_text ? env_int("PADDLE_TRAINERS_NUM / WORLD_SIZE", size_text) : 0;
  int64_t timeout_ms = kStoreDefaultTimeoutMs;
  if (const char* t = env("OAR_STORE_TIMEOUT")) timeout_ms = int64_t{env_int("OAR_STORE_TIMEOUT", t)} * 1000;
  // No check-in wait: rank 0 makes the store on its first use, possibly before the others exist.
  return std::make_shared<TCPStore>(host, port, rank == 0, world, timeout_ms, /*wait_for_workers=*/false);
}
}  // namespace

void set_global_store(std::shared_ptr<TCPStore> store) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  g.store = std::move(store);
  g.env_tried = true;  // an explicit choice wins over the environment
  g.env_error.clear();
}

std::shared_ptr<TCPStore> global_store() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.env_tried) {
    g.env_tried = true;
    try {
      g.store = store_from_env();
    } catch (const Error& e) {
      g.env_error = e.what();
    }
  }
  OAR_ENFORCE(g.env_error.empty(), ErrorCode::kUnavailable, g.env_error);
  return g.store;
}

}  // namespace oar
