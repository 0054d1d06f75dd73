// A TCP key-value store shared by the processes of a job (the rendezvous for collective bootstrap).
//
// One process (the master, usually rank 0) runs the server on its own thread; every process, the master
// included, talks to it as a client. Values are bytes. `get` and `wait` block until the keys exist (or the
// timeout passes); `add` is an atomic counter stored as a decimal string. Every call has a timeout, and
// a master that is gone gives an error, never a hang. Semantics follow PaddlePaddle's / PyTorch's
// TCPStore. The wire protocol and its limits are described in docs/distributed.md.
//
// The core's plugin services (OarCoreServices.store_set / store_get) use the global store once one is
// set (set_global_store, or lazily from the launcher's environment variables, see global_store()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oar {

// Hard limits: a request or reply announcing more is refused with an error, never allocated.
inline constexpr uint64_t kStoreMaxKeyBytes = 4096;
inline constexpr uint64_t kStoreMaxValueBytes = uint64_t{256} << 20;  // 256 MiB
inline constexpr uint32_t kStoreMaxKeysPerCall = 4096;
inline constexpr int64_t kStoreDefaultTimeoutMs = 900 * 1000;  // PaddlePaddle's default, 900 s

class TCPStore {
 public:
  // `is_master`: start the server on `port` (0: any free port, see port()), listening on `host`'s
  // addresses only ("0.0.0.0" or "::": every interface). Every process then connects to host:port,
  // retrying until `timeout_ms` passes (launchers start ranks in any order). With `wait_for_workers` and
  // world_size > 0, each process checks in and the master's constructor returns once `world_size`
  // processes have (PaddlePaddle's behaviour). `token`: the job's shared secret (nullopt: the
  // OAR_STORE_TOKEN environment variable; empty: none). A master with a token serves only connections
  // that present it; a client presents its own on every connection; a mismatch either way is refused.
  TCPStore(const std::string& host, int port, bool is_master, int world_size,
           int64_t timeout_ms = kStoreDefaultTimeoutMs, bool wait_for_workers = true,
           std::optional<std::string> token = std::nullopt);
  ~TCPStore();  // a master stops its server: clients of other processes then get errors
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  const std::string& host() const;
  int port() const;  // the real port (useful with port 0)
  bool is_master() const;
  int world_size() const;
  int64_t timeout_ms() const;

  void set(const std::string& key, const std::string& value);
  // Blocks until `key` exists; timeout_ms < 0: the store's timeout.
  std::string get(const std::string& key, int64_t timeout_ms = -1);
  // Adds `delta` to the integer under `key` (missing: 0) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // Blocks until every key exists; timeout_ms < 0: the store's timeout.
  void wait(const std::vector<std::string>& keys, int64_t timeout_ms = -1);
  // Whether every key exists now (no waiting).
  bool check(const std::vector<std::string>& keys);
  // Removes `key`; returns whether it existed.
  bool delete_key(const std::string& key);
  // Number of keys in the store.
  int64_t num_keys();
  // Blocks until `world_size` processes called barrier() the same number of times (built from add +
  // wait; the n-th call of every process meets the n-th call of the others).
  void barrier(int64_t timeout_ms = -1);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// OAR_STORE_TOKEN, or "" when unset.
std::string store_token_from_env();

// The store the plugin services use (store_set / store_get). Setting nullptr goes back to the
// in-process map. Thread-safe.
void set_global_store(std::shared_ptr<TCPStore> store);
// The global store: the one set, else (once, on first call) one made from the launcher's environment
// when PADDLE_MASTER or MASTER_ADDR + MASTER_PORT is set (rank from PADDLE_TRAINER_ID or RANK, world
// size from PADDLE_TRAINERS_NUM or WORLD_SIZE, timeout in seconds from OAR_STORE_TIMEOUT), else nullptr.
// Throws when the environment names a store that cannot be reached or is malformed.
std::shared_ptr<TCPStore> global_store();

}  // namespace oar
