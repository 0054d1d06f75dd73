// The sim plugin's collective table driven directly, with both transports: in-process (the default when
// all ranks are in this process) and the core's key-value store (forced by
// OAR_SIM_COLLECTIVE_TRANSPORT=store, the path ranks in several processes take). Each rank is a thread
// with its own stream, rank r on sim device r % 2. The store transport must give bit-identical results
// to the in-process one, and mismatched calls / missing peers must give errors naming both sides.
// CTest runs this binary with OAR_SIM_COMM_TIMEOUT_MS=3000 so the timeout test is quick.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/core/runtime.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace oar {
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
}  // namespace oar

namespace {

const OarCommUniqueId kNoId{};

struct RankIO {
  std::vector<float> in;   // this rank's input (host)
  size_t out_elems = 0;    // elements of its output buffer
  std::vector<float> out;  // filled after the call
  std::string error;       // the first failure, if any
};

struct Ctx {
  int32_t rank, nranks, dev;
  const OarCollectiveTable* c;
  OarComm comm;
  OarStream stream;
  void *send, *recv;
};

// Runs `call` on every rank (one thread each) and returns each rank's output buffer, or its error.
void run_ranks(std::vector<RankIO>& io, const std::function<OarError*(const Ctx&)>& call) {
  oar::Device& d0 = oar::Runtime::get().device(oar::Place::parse("sim:0"));
  const oar::PluginTables& tb = d0.tables();
  const OarCollectiveTable& c = tb.collective;
  const int32_t n = static_cast<int32_t>(io.size());
  OarCommUniqueId id = kNoId;
  oar::check_plugin_error("sim", "get_unique_id", c.get_unique_id(&id));
  auto body = [&](int32_t r) {
    RankIO& me = io[r];
    const int32_t dev = r % 2;
    oar::Runtime::get().device(oar::Place::parse("sim:" + std::to_string(dev)));  // opens it
    const OarMemLocation dloc{OAR_MEM_DEVICE, dev}, hloc{OAR_MEM_HOST, 0};
    Ctx x{r, n, dev, &c, nullptr, nullptr, nullptr, nullptr};
    try {
      oar::check_plugin_error("sim", "allocate",
                              tb.memory.allocate(dev, OAR_MEM_DEVICE, me.in.size() * 4 + 4, &x.send));
      oar::check_plugin_error("sim", "allocate",
                              tb.memory.allocate(dev, OAR_MEM_DEVICE, me.out_elems * 4 + 4, &x.recv));
      oar::check_plugin_error(
          "sim", "memcpy",
          tb.memory.memcpy(dev, x.send, dloc, me.in.data(), hloc, me.in.size() * 4, nullptr));
      oar::check_plugin_error("sim", "stream create", tb.stream.create(dev, 0, &x.stream));
      oar::check_plugin_error("sim", "comm_init", c.comm_init(dev, n, r, &id, &x.comm));
      oar::check_plugin_error("sim", "call", call(x));
      oar::check_plugin_error("sim", "synchronize", tb.stream.synchronize(dev, x.stream));
      me.out.resize(me.out_elems);
      oar::check_plugin_error(
          "sim", "memcpy",
          tb.memory.memcpy(dev, me.out.data(), hloc, x.recv, dloc, me.out_elems * 4, nullptr));
    } catch (const std::exception& e) {
      me.error = e.what();
    }
    if (x.comm) c.comm_destroy(x.comm);
    if (x.stream) tb.stream.destroy(dev, x.stream);
    if (x.send) tb.memory.free(dev, OAR_MEM_DEVICE, x.send);
    if (x.recv) tb.memory.free(dev, OAR_MEM_DEVICE, x.recv);
  };
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < n; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

std::vector<RankIO> inputs(int32_t nranks, size_t elems, size_t out_elems) {
  std::vector<RankIO> io(static_cast<size_t>(nranks));
  for (int32_t r = 0; r < nranks; ++r) {
    io[r].out_elems = out_elems;
    for (size_t i = 0; i < elems; ++i)  // values whose float sums depend on the order of addition
      io[r].in.push_back(1.0f / static_cast<float>(3 + 7 * r + static_cast<int>(i % 13)) + 1e4f * (r % 2));
  }
  return io;
}

// Every collective kind on 3 ranks, as (name, outputs of every rank).
std::vector<std::pair<std::string, std::vector<std::vector<float>>>> run_all_kinds() {
  const int32_t n = 3;
  const uint64_t k = 10;
  std::vector<std::pair<std::string, std::vector<std::vector<float>>>> results;
  auto keep = [&](const std::string& name, std::vector<RankIO>& io) {
    std::vector<std::vector<float>> outs;
    for (auto& r : io) {
      EXPECT_EQ(r.error, "") << name;
      outs.push_back(r.out);
    }
    results.emplace_back(name, outs);
  };
  const int32_t f32 = OAR_DTYPE_FLOAT32;
  for (int32_t op : {OAR_REDUCE_SUM, OAR_REDUCE_AVG, OAR_REDUCE_MAX}) {
    auto io = inputs(n, k, k);
    run_ranks(io,
              [&](const Ctx& x) { return x.c->all_reduce(x.send, x.recv, k, f32, op, x.comm, x.stream); });
    keep("all_reduce op " + std::to_string(op), io);
  }
  {
    auto io = inputs(n, k, k);
    run_ranks(io, [&](const Ctx& x) {
      return x.c->reduce(x.send, x.recv, k, f32, OAR_REDUCE_PROD, 2, x.comm, x.stream);
    });
    io[0].out.clear(), io[1].out.clear();  // only the root's output is defined
    keep("reduce", io);
  }
  {
    auto io = inputs(n, k, k);
    run_ranks(io, [&](const Ctx& x) {
      OarError* e = x.c->broadcast(x.send, k, f32, 1, x.comm, x.stream);
      if (e) return e;  // the result is in the send buffer: copy it to recv on the stream
      const OarMemLocation dl{OAR_MEM_DEVICE, x.dev};
      return oar::Runtime::get()
          .device(oar::Place::parse("sim:" + std::to_string(x.dev)))
          .tables()
          .memory.memcpy(x.dev, x.recv, dl, x.send, dl, k * 4, x.stream);
    });
    keep("broadcast", io);
  }
  {
    auto io = inputs(n, k, k * n);
    run_ranks(io, [&](const Ctx& x) { return x.c->all_gather(x.send, x.recv, k, f32, x.comm, x.stream); });
    keep("all_gather", io);
  }
  {
    auto io = inputs(n, k * n, k);
    run_ranks(io, [&](const Ctx& x) {
      return x.c->reduce_scatter(x.send, x.recv, k, f32, OAR_REDUCE_SUM, x.comm, x.stream);
    });
    keep("reduce_scatter", io);
  }
  {
    auto io = inputs(n, k * n, k * n);
    run_ranks(io, [&](const Ctx& x) { return x.c->all_to_all(x.send, x.recv, k, f32, x.comm, x.stream); });
    keep("all_to_all", io);
  }
  {
    auto io = inputs(n, k, k);  // a ring: send to r + 1, receive from r - 1
    run_ranks(io, [&](const Ctx& x) {
      if (OarError* e = x.c->send(x.send, k, f32, (x.rank + 1) % x.nranks, x.comm, x.stream)) return e;
      return x.c->recv(x.recv, k, f32, (x.rank + x.nranks - 1) % x.nranks, x.comm, x.stream);
    });
    keep("send_recv", io);
  }
  return results;
}

class StoreTransport : public ::testing::Test {
 protected:
  void SetUp() override { setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "store", 1); }
  void TearDown() override { unsetenv("OAR_SIM_COLLECTIVE_TRANSPORT"); }
};

}  // namespace

TEST(SimCollectives, InProcessResultsAreRight) {
  auto res = run_all_kinds();
  // Against a direct computation from the inputs (the transports are compared with each other below).
  const size_t k = 10;
  const auto small = inputs(3, k, k), large = inputs(3, 3 * k, 3 * k);  // what run_all_kinds used
  std::vector<float> sum(k), gathered;
  for (size_t i = 0; i < k; ++i) sum[i] = (small[0].in[i] + small[1].in[i]) + small[2].in[i];  // rank order
  for (int r = 0; r < 3; ++r) gathered.insert(gathered.end(), small[r].in.begin(), small[r].in.end());
  std::map<std::string, std::vector<std::vector<float>>> got(res.begin(), res.end());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(got["all_reduce op 0"][r], sum) << r;
    EXPECT_EQ(got["broadcast"][r], small[1].in) << r;
    EXPECT_EQ(got["all_gather"][r], gathered) << r;
    EXPECT_EQ(got["send_recv"][r], small[(r + 2) % 3].in) << r;
    std::vector<float> scattered(k), exchanged;
    for (size_t i = 0; i < k; ++i)
      scattered[i] = (large[0].in[r * k + i] + large[1].in[r * k + i]) + large[2].in[r * k + i];
    EXPECT_EQ(got["reduce_scatter"][r], scattered) << r;
    for (int j = 0; j < 3; ++j)
      exchanged.insert(exchanged.end(), large[j].in.begin() + r * k, large[j].in.begin() + (r + 1) * k);
    EXPECT_EQ(got["all_to_all"][r], exchanged) << r;
  }
}

TEST_F(StoreTransport, GivesBitIdenticalResultsToInProcess) {
  unsetenv("OAR_SIM_COLLECTIVE_TRANSPORT");
  auto in_process = run_all_kinds();
  setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "store", 1);
  auto through_store = run_all_kinds();
  ASSERT_EQ(in_process.size(), through_store.size());
  for (size_t i = 0; i < in_process.size(); ++i) {
    ASSERT_EQ(in_process[i].first, through_store[i].first);
    for (size_t r = 0; r < in_process[i].second.size(); ++r) {
      const auto& a = in_process[i].second[r];
      const auto& b = through_store[i].second[r];
      ASSERT_EQ(a.size(), b.size()) << in_process[i].first << " rank " << r;
      // (memcmp of two empty vectors would pass null pointers: undefined, found by UBSan)
      EXPECT_TRUE(a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0)
          << in_process[i].first << " rank " << r;
    }
  }
}

TEST_F(StoreTransport, MismatchedCallsNameBothRanks) {
  auto io = inputs(2, 8, 16);
  run_ranks(io, [](const Ctx& x) {
    if (x.rank == 0)
      return x.c->all_reduce(x.send, x.recv, 8, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, x.comm, x.stream);
    return x.c->all_gather(x.send, x.recv, 8, OAR_DTYPE_FLOAT32, x.comm, x.stream);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(io[r].error.find("ranks disagree on collective #0"), std::string::npos) << io[r].error;
    EXPECT_NE(io[r].error.find("rank 0 called all_reduce(count 8, float32, op 0)"), std::string::npos)
        << io[r].error;
    EXPECT_NE(io[r].error.find("rank 1 called all_gather(count 8, float32)"), std::string::npos)
        << io[r].error;
  }
}

TEST_F(StoreTransport, MismatchedMessageNamesBothRanks) {
  auto io = inputs(2, 8, 8);
  run_ranks(io, [](const Ctx& x) {
    if (x.rank == 0) return x.c->send(x.send, 8, OAR_DTYPE_FLOAT32, 1, x.comm, x.stream);
    return x.c->recv(x.recv, 4, OAR_DTYPE_FLOAT32, 0, x.comm, x.stream);
  });
  EXPECT_EQ(io[0].error, "");
  EXPECT_NE(io[1].error.find("rank 1 called recv(count 4, float32)"), std::string::npos) << io[1].error;
  EXPECT_NE(io[1].error.find("rank 0 called send(count 8, float32)"), std::string::npos) << io[1].error;
}

TEST_F(StoreTransport, AMissingPeerTimesOutNamingCallRankAndPeer) {
  auto io = inputs(2, 4, 4);
  run_ranks(io, [](const Ctx& x) -> OarError* {
    if (x.rank == 1) return nullptr;  // rank 1 never calls
    return x.c->all_reduce(x.send, x.recv, 4, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, x.comm, x.stream);
  });
  EXPECT_EQ(io[1].error, "");
  const std::string& e = io[0].error;
  EXPECT_NE(e.find("all_reduce: rank 0 timed out in all_reduce #0 waiting for rank 1"), std::string::npos)
      << e;
  EXPECT_NE(e.find("OAR_SIM_COMM_TIMEOUT_MS"), std::string::npos) << e;
}

TEST(SimCollectives, AnUnknownTransportIsRefused) {
  setenv("OAR_SIM_COLLECTIVE_TRANSPORT", "carrier_pigeon", 1);
  auto io = inputs(2, 4, 4);
  run_ranks(io, [](const Ctx&) -> OarError* { return nullptr; });
  unsetenv("OAR_SIM_COLLECTIVE_TRANSPORT");
  for (auto& r : io)
    EXPECT_NE(r.error.find("OAR_SIM_COLLECTIVE_TRANSPORT='carrier_pigeon' is neither 'auto' nor 'store'"),
              std::string::npos)
        << r.error;
}

TEST(SimCollectives, RanksDisagreeingOnNranksAreNamed) {
  oar::Device& d0 = oar::Runtime::get().device(oar::Place::parse("sim:0"));
  const OarCollectiveTable& c = d0.tables().collective;
  OarCommUniqueId id = kNoId;
  oar::check_plugin_error("sim", "get_unique_id", c.get_unique_id(&id));
  std::string errors[2];
  auto body = [&](int32_t r) {
    OarComm comm = nullptr;
    try {
      oar::check_plugin_error("sim", "comm_init", c.comm_init(0, r == 0 ? 2 : 3, r, &id, &comm));
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
    if (comm) c.comm_destroy(comm);
  };
  std::thread a(body, 0), b(body, 1);
  a.join(), b.join();
  EXPECT_NE(errors[0].find("rank 0 says 2 ranks, rank 1 says 3"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("rank 1 says 3 ranks, rank 0 says 2"), std::string::npos) << errors[1];
}
