// The TCP key-value store (oar/core/store.h): operations, blocking and timeouts, many client threads,
// a master that goes away, hostile or garbled bytes on the wire, and the plugin services using it.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <oar/core/error.h>
#include <oar/core/store.h>
#include <oar/device_api.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace oar {
const OarCoreServices* core_services();  // framework/src/internal.h
}

namespace {

using oar::TCPStore;
using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A store master on a free port; no check-in wait so tests can add clients as they like.
std::unique_ptr<TCPStore> master(int64_t timeout_ms = 10000) {
  return std::make_unique<TCPStore>("127.0.0.1", 0, true, 0, timeout_ms, false);
}
std::unique_ptr<TCPStore> client(int port, int64_t timeout_ms = 10000) {
  return std::make_unique<TCPStore>("127.0.0.1", port, false, 0, timeout_ms, false);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const oar::Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TCPStore, SetGetAddWaitCheckDelete) {
  auto m = master();
  ASSERT_GT(m->port(), 0);
  auto c = client(m->port());
  c->set("a", std::string("x\0y", 3));
  EXPECT_EQ(m->get("a"), std::string("x\0y", 3));  // binary values survive
  c->set("a", "");
  EXPECT_EQ(m->get("a"), "");
  EXPECT_EQ(c->add("n", 5), 5);
  EXPECT_EQ(m->add("n", -2), 3);
  EXPECT_EQ(c->get("n"), "3");  // counters are decimal strings, as in PaddlePaddle / PyTorch
  EXPECT_TRUE(c->check({"a", "n"}));
  EXPECT_FALSE(c->check({"a", "nope"}));
  c->wait({"a", "n"});  // both exist: returns at once
  EXPECT_EQ(c->num_keys(), 2);
  EXPECT_TRUE(c->delete_key("a"));
  EXPECT_FALSE(c->delete_key("a"));
  EXPECT_FALSE(m->check({"a"}));
  EXPECT_EQ(m->num_keys(), 1);
  // A large value (8 MiB) goes through whole.
  std::string big(8 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  c->set("big", big);
  EXPECT_EQ(m->get("big"), big);
}

TEST(TCPStore, AddOnNonIntegerIsAnError) {
  auto m = master();
  m->set("s", "hello");
  EXPECT_NE(error_of([&] { m->add("s", 1); }).find("not an integer"), std::string::npos);
  EXPECT_EQ(m->get("s"), "hello");  // the connection still works
}

TEST(TCPStore, GetBlocksUntilSetAndWaitForSeveralKeys) {
  auto m = master();
  auto c = client(m->port());
  auto got = std::async(std::launch::async, [&] { return c->get("later"); });
  auto waited = std::async(std::launch::async, [&] {
    auto c2 = client(m->port());
    c2->wait({"k1", "k2", "k3"});
    return true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(got.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  m->set("later", "now");
  EXPECT_EQ(got.get(), "now");
  m->set("k1", "1");
  m->set("k3", "3");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  m->add("k2", 1);
  EXPECT_TRUE(waited.get());
}

TEST(TCPStore, GetAndWaitTimeOut) {
  auto m = master();
  auto c = client(m->port());
  auto t0 = Clock::now();
  std::string e = error_of([&] { c->get("missing", 200); });
  EXPECT_NE(e.find("timed out after 200 ms waiting for key 'missing'"), std::string::npos) << e;
  EXPECT_GE(ms_since(t0), 190);
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
  e = error_of([&] { c->wait({"x", "y"}, 100); });
  EXPECT_NE(e.find("waiting for keys 'x', 'y'"), std::string::npos) << e;
  // The store's own timeout applies by default.
  auto short_c = client(m->port(), 150);
  EXPECT_NE(error_of([&] { short_c->get("missing"); }).find("timed out after 150 ms"), std::string::npos);
  // Timed-out connections are dropped, later calls work.
  c->set("missing", "here");
  EXPECT_EQ(c->get("missing", 200), "here");
  EXPECT_EQ(short_c->get("missing"), "here");
}

int open_fds() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n;
}

TEST(TCPStore, TimedOutGetsKeepTheirConnection) {
  // Plugins poll store_get in short slices: the server answers "timed out", so the client's connection
  // stays in step and is reused instead of a new connection per slice.
  auto m = master();
  auto c = client(m->port());
  EXPECT_NE(error_of([&] { c->get("slice", 5); }).find("timed out"), std::string::npos);
  const int fds = open_fds();
  for (int i = 0; i < 30; ++i)
    EXPECT_NE(error_of([&] { c->get("slice", 5); }).find("timed out"), std::string::npos);
  EXPECT_EQ(open_fds(), fds);
  c->set("slice", "x");
  EXPECT_EQ(c->get("slice", 5), "x");
}

TEST(TCPStore, ManyClientThreads) {
  auto m = master();
  constexpr int kThreads = 8, kAdds = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto c = client(m->port());
        for (int i = 0; i < kAdds; ++i) c->add("counter", 1);
        c->set("from/" + std::to_string(t), std::to_string(t * t));
        // Every thread reads every other thread's key (blocking until it is there).
        for (int o = 0; o < kThreads; ++o)
          if (c->get("from/" + std::to_string(o)) != std::to_string(o * o)) ++failures;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  // One client object shared by several threads too: calls run on separate connections, so a blocked
  // get does not hold up a set from another thread.
  auto shared = client(m->port());
  auto blocked = std::async(std::launch::async, [&] { return shared->get("shared/key"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  shared->set("shared/key", "v");
  EXPECT_EQ(blocked.get(), "v");
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(m->get("counter"), std::to_string(kThreads * kAdds));
}

TEST(TCPStore, WorkersCheckInAndBarrier) {
  // The master's constructor returns once world_size processes (here: threads) checked in.
  constexpr int kWorld = 3;
  auto probe = master();
  const int port = probe->port();
  probe.reset();  // frees the port for a master made with a fixed one below
  std::vector<std::future<void>> workers;
  std::atomic<int> after_barrier{0};
  for (int r = 1; r < kWorld; ++r)
    workers.push_back(std::async(std::launch::async, [&] {
      TCPStore w("127.0.0.1", port, false, kWorld, 10000);  // may start before the master: retries
      w.barrier();
      ++after_barrier;
      w.barrier();
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  TCPStore m("127.0.0.1", port, true, kWorld, 10000);
  EXPECT_EQ(m.get("oar/store/init/count"), std::to_string(kWorld));
  m.barrier();
  m.barrier();  // the second barrier passes only after every worker passed the first
  EXPECT_EQ(after_barrier.load(), kWorld - 1);
  for (auto& f : workers) f.get();
}

TEST(TCPStore, MasterWaitingForWorkersTimesOut) {
  auto t0 = Clock::now();
  std::string e = error_of([] { TCPStore m("127.0.0.1", 0, true, 2, 300); });
  EXPECT_NE(e.find("waited 300 ms for 2 processes; 1 checked in"), std::string::npos) << e;
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
}

TEST(TCPStore, NoMasterIsAnErrorAfterTheTimeout) {
  auto probe = master();
  const int port = probe->port();
  probe.reset();
  auto t0 = Clock::now();
  std::string e = error_of([&] { client(port, 300); });
  EXPECT_NE(e.find("could not connect to the store master at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << e;
  EXPECT_GE(ms_since(t0), 290);
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
  EXPECT_NE(error_of([] { client(0); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { TCPStore s("127.0.0.1", 70000, false, 0, 100); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { TCPStore s("no-such-host.invalid", 1234, false, 0, 100); }).find("cannot resolve host"),
      std::string::npos);
  // A second master on a port in use.
  auto m = master();
  EXPECT_NE(error_of([&] { TCPStore s("127.0.0.1", m->port(), true, 0, 100, false); }).find("cannot listen"),
            std::string::npos);
}

TEST(TCPStore, MasterGoneGivesErrorsNotHangs) {
  auto m = master();
  auto c = client(m->port(), 60000);
  c->set("k", "v");
  // A client blocked in get while the master goes away.
  auto blocked = std::async(std::launch::async, [&] { return error_of([&] { c->get("never"); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = Clock::now();
  m.reset();
  std::string e = blocked.get();
  EXPECT_NE(e.find("lost the connection to the store master"), std::string::npos) << e;
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
  // Later calls fail quickly too (their idle connection is closed, a new one is refused).
  t0 = Clock::now();
  e = error_of([&] { c->get("k"); });
  EXPECT_TRUE(e.find("lost the connection") != std::string::npos ||
              e.find("cannot reach") != std::string::npos)
      << e;
  e = error_of([&] { c->set("k", "v2"); });
  EXPECT_NE(e.find("cannot reach the store master"), std::string::npos) << e;
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
}

TEST(TCPStore, TwoStoresInOneProcess) {
  auto a = master();
  auto b = master();
  ASSERT_NE(a->port(), b->port());
  auto ca = client(a->port());
  auto cb = client(b->port());
  ca->set("k", "in a");
  cb->set("k", "in b");
  EXPECT_EQ(a->get("k"), "in a");
  EXPECT_EQ(b->get("k"), "in b");
  EXPECT_EQ(ca->add("n", 1), 1);
  EXPECT_EQ(cb->add("n", 10), 10);
  EXPECT_EQ(a->num_keys(), 2);
}

TEST(TCPStore, ClientRefusesOversizedKeys) {
  auto m = master();
  const std::string long_key(oar::kStoreMaxKeyBytes + 1, 'k');
  EXPECT_NE(error_of([&] { m->set(long_key, "v"); }).find("longer than the limit"), std::string::npos);
  EXPECT_NE(error_of([&] { m->get(long_key); }).find("longer than the limit"), std::string::npos);
  EXPECT_NE(error_of([&] {
              m->wait(std::vector<std::string>(oar::kStoreMaxKeysPerCall + 1, "k"));
            }).find("at most"),
            std::string::npos);
}

// ---- raw bytes on the wire --------------------------------------------------------------------------

int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string frame(uint32_t magic, uint8_t cmd, const std::vector<std::pair<uint64_t, std::string>>& fields) {
  std::string s(9, '\0');
  const uint32_t n = static_cast<uint32_t>(fields.size());
  std::memcpy(&s[0], &magic, 4);
  s[4] = static_cast<char>(cmd);
  std::memcpy(&s[5], &n, 4);
  for (const auto& f : fields) {
    s.append(reinterpret_cast<const char*>(&f.first), 8);
    s.append(f.second);
  }
  return s;
}

// Reads one reply: status and payload ("" and status -1 when the server closed the connection).
std::pair<int, std::string> read_reply(int fd) {
  char h[13];
  size_t got = 0;
  while (got < sizeof(h)) {
    ssize_t n = ::recv(fd, h + got, sizeof(h) - got, 0);
    if (n <= 0) return {-1, ""};
    got += static_cast<size_t>(n);
  }
  uint64_t len = 0;
  std::memcpy(&len, h + 5, 8);
  EXPECT_LT(len, 1u << 20);
  std::string p(len, '\0');
  got = 0;
  while (got < len) {
    ssize_t n = ::recv(fd, &p[got], len - got, 0);
    if (n <= 0) return {-1, ""};
    got += static_cast<size_t>(n);
  }
  return {h[4], p};
}

bool closed_by_peer(int fd) {
  char c;
  return ::recv(fd, &c, 1, 0) == 0;
}

constexpr uint32_t kMagic = 0x5352414f;

TEST(TCPStore, ServerRefusesGarbledAndHostileRequests) {
  auto m = master();
  {  // Not our protocol at all (an HTTP request): error reply, then the connection is closed.
    int fd = raw_connect(m->port());
    const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
    auto r = read_reply(fd);
    EXPECT_EQ(r.first, 1);
    EXPECT_NE(r.second.find("garbled request"), std::string::npos) << r.second;
    EXPECT_TRUE(closed_by_peer(fd));
    ::close(fd);
  }
  {  // A set announcing a 1 TiB value: refused at once, nothing allocated, connection closed.
    int fd = raw_connect(m->port());
    std::string f = frame(kMagic, 1, {{1, "k"}});
    const uint32_t two = 2;  // the second field's length follows, with no bytes behind it
    std::memcpy(&f[5], &two, 4);
    const uint64_t huge = uint64_t{1} << 40;
    f.append(reinterpret_cast<const char*>(&huge), 8);
    ::send(fd, f.data(), f.size(), 0);
    auto r = read_reply(fd);
    EXPECT_EQ(r.first, 1);
    EXPECT_NE(r.second.find("refused"), std::string::npos) << r.second;
    EXPECT_TRUE(closed_by_peer(fd));
    ::close(fd);
  }
  {  // Four billion fields announced.
    int fd = raw_connect(m->port());
    std::string f = frame(kMagic, 4, {});
    const uint32_t many = 0xffffffffu;
    std::memcpy(&f[5], &many, 4);
    ::send(fd, f.data(), f.size(), 0);
    auto r = read_reply(fd);
    EXPECT_EQ(r.first, 1);
    EXPECT_NE(r.second.find("fields refused"), std::string::npos) << r.second;
    ::close(fd);
  }
  {  // Well-formed but refused requests keep the connection: a long key, an unknown command, bad arity.
    int fd = raw_connect(m->port());
    std::string key(oar::kStoreMaxKeyBytes + 1, 'k');
    std::string f = frame(kMagic, 1, {{key.size(), key}, {1, "v"}});
    f += frame(kMagic, 99, {});
    f += frame(kMagic, 2, {});
    f += frame(kMagic, 1, {{2, "ok"}, {3, "yes"}});
    ::send(fd, f.data(), f.size(), 0);
    auto r = read_reply(fd);
    EXPECT_EQ(r.first, 1);
    EXPECT_NE(r.second.find("key of 4097 bytes refused"), std::string::npos) << r.second;
    r = read_reply(fd);
    EXPECT_NE(r.second.find("unknown command 99"), std::string::npos) << r.second;
    r = read_reply(fd);
    EXPECT_NE(r.second.find("wrong number of fields"), std::string::npos) << r.second;
    r = read_reply(fd);
    EXPECT_EQ(r.first, 0);
    ::close(fd);
  }
  {  // A request split into single bytes still parses.
    int fd = raw_connect(m->port());
    std::string f = frame(kMagic, 1, {{5, "split"}, {2, "ok"}});
    for (char ch : f) {
      ::send(fd, &ch, 1, 0);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    EXPECT_EQ(read_reply(fd).first, 0);
    ::close(fd);
  }
  // The server kept serving everyone else.
  auto c = client(m->port());
  EXPECT_EQ(c->get("ok"), "yes");
  EXPECT_EQ(c->get("split"), "ok");
  EXPECT_FALSE(c->check({std::string(oar::kStoreMaxKeyBytes, 'k')}));
}

TEST(TCPStore, ClientRefusesHostileReplies) {
  // A fake "master" that answers every request with a header announcing 1 TiB, or with garbage.
  for (int mode = 0; mode < 2; ++mode) {
    int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(::listen(lfd, 4), 0);
    socklen_t len = sizeof(a);
    ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
    const int port = ntohs(a.sin_port);
    std::thread fake([lfd, mode] {
      int fd = ::accept(lfd, nullptr, nullptr);
      char buf[256];
      ::recv(fd, buf, sizeof(buf), 0);
      std::string reply(13, '\0');
      const uint32_t magic = mode == 0 ? 0x5252414f : 0x12345678;
      const uint64_t huge = uint64_t{1} << 40;
      std::memcpy(&reply[0], &magic, 4);
      std::memcpy(&reply[5], &huge, 8);
      ::send(fd, reply.data(), reply.size(), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::close(fd);
    });
    // The client's first request (auth, at construction) meets the hostile reply.
    std::string e = error_of([&] { client(port, 2000)->get("k"); });
    EXPECT_NE(e.find(mode == 0 ? "reply of 1099511627776 bytes refused" : "garbled reply"), std::string::npos)
        << e;
    fake.join();
    ::close(lfd);
  }
}

TEST(TCPStore, TokenGatesEveryConnection) {
  TCPStore m("127.0.0.1", 0, true, 0, 5000, false, std::string("tok"));
  TCPStore ok("127.0.0.1", m.port(), false, 0, 5000, false, std::string("tok"));
  ok.set("k", "v");
  EXPECT_EQ(m.get("k"), "v");
  for (const char* token : {"", "tok2", "to"}) {
    std::string e =
        error_of([&] { TCPStore c("127.0.0.1", m.port(), false, 0, 5000, false, std::string(token)); });
    EXPECT_NE(e.find("refused this process"), std::string::npos) << e;
  }
  // A raw peer that skips auth gets "refused" (status 3) and the connection closes; so does one that
  // floods the server before presenting a token.
  int fd = raw_connect(m.port());
  std::string req = frame(kMagic, 2, {{8, std::string(8, '\0')}, {1, "k"}});
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  auto [status, why] = read_reply(fd);
  EXPECT_EQ(status, 3);
  EXPECT_NE(why.find("presented none"), std::string::npos) << why;
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  fd = raw_connect(m.port());
  std::string flood = frame(kMagic, 1, {{1, "k"}, {200000, std::string(200000, 'x')}});
  ::send(fd, flood.data(), flood.size(), MSG_NOSIGNAL);
  EXPECT_EQ(read_reply(fd).first, 3);
  ::close(fd);
  // A tokened client meeting a store without one is refused too.
  TCPStore plain("127.0.0.1", 0, true, 0, 5000, false, std::string());
  std::string e =
      error_of([&] { TCPStore c("127.0.0.1", plain.port(), false, 0, 5000, false, std::string("tok")); });
  EXPECT_NE(e.find("this store has none"), std::string::npos) << e;
  EXPECT_EQ(ok.get("k"), "v");  // the authenticated connection kept working throughout
}

// ---- the plugin services' store ---------------------------------------------------------------------

TEST(TCPStore, ServicesUseTheGlobalStore) {
  const OarCoreServices* s = oar::core_services();
  char buf[64];
  uint64_t size = 0;
  // In-process map first.
  ASSERT_EQ(s->store_set("svc/local", "L", 1), nullptr);
  ASSERT_EQ(s->store_get("svc/local", buf, sizeof(buf), &size, 0), nullptr);
  EXPECT_EQ(size, 1u);

  auto m = std::shared_ptr<TCPStore>(master());
  oar::set_global_store(m);
  EXPECT_EQ(oar::global_store(), m);
  ASSERT_EQ(s->store_set("svc/key", "hello", 5), nullptr);
  EXPECT_EQ(client(m->port())->get("svc/key"), "hello");  // visible to any client of the store
  ASSERT_EQ(s->store_get("svc/key", buf, sizeof(buf), &size, 1000), nullptr);
  EXPECT_EQ(std::string(buf, size), "hello");
  // Missing key, timeout 0 and a short timeout: errors naming the key.
  for (int64_t timeout : {0, 100}) {
    OarError* e = s->store_get("svc/none", buf, sizeof(buf), &size, timeout);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(s->error_code(e), OAR_ERR_UNAVAILABLE);
    EXPECT_NE(std::string(s->error_message(e)).find("svc/none"), std::string::npos) << s->error_message(e);
    s->error_free(e);
  }
  // Too small a buffer: the size is reported so the caller can retry.
  OarError* e = s->store_get("svc/key", buf, 2, &size, 1000);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(s->error_code(e), OAR_ERR_OUT_OF_RANGE);
  EXPECT_EQ(size, 5u);
  s->error_free(e);
  // The in-process key is not in the TCP store.
  e = s->store_get("svc/local", buf, sizeof(buf), &size, 0);
  ASSERT_NE(e, nullptr);
  s->error_free(e);
  // A master that is gone: store calls fail with an error, not a hang.
  m.reset();
  oar::set_global_store(nullptr);
  ASSERT_EQ(s->store_get("svc/local", buf, sizeof(buf), &size, 0), nullptr);  // back to in-process
}

TEST(TCPStore, ServicesStoreErrorsWhenTheMasterIsGone) {
  const OarCoreServices* s = oar::core_services();
  auto m = std::shared_ptr<TCPStore>(master());
  auto c = std::shared_ptr<TCPStore>(client(m->port(), 30000));
  oar::set_global_store(c);
  m.reset();
  auto t0 = Clock::now();
  OarError* e = s->store_set("gone", "x", 1);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(s->error_message(e)).find("store_set('gone')"), std::string::npos)
      << s->error_message(e);
  s->error_free(e);
  char buf[8];
  uint64_t size = 0;
  e = s->store_get("gone", buf, sizeof(buf), &size, 20000);
  ASSERT_NE(e, nullptr);
  s->error_free(e);
  EXPECT_LT(ms_since(t0), 30000);  // against hanging only, not a timing check
  oar::set_global_store(nullptr);
}

}  // namespace
