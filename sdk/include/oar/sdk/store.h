// The core's key-value store (OarCoreServices.store_set / store_get) as a plugin's collective transport:
// bootstrap of communicators across processes, or, for tests and host-side devices, the data itself.
#pragma once

#include <oar/sdk/plugin.h>
#include <unistd.h>  // gethostname, getpid

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

namespace oar::sdk {

// host:pid:nonce, the same for the whole process. Ranks that publish it learn whether they all share one
// process (the nonce tells apart equal pids on hosts of the same name, e.g. containers).
inline const std::string& process_identity() {
  static const std::string id = [] {
    char host[256] = {0};
    if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "?");
    std::random_device rd;
    std::ostringstream os;
    os << host << ":" << ::getpid() << ":" << std::hex << rd() << rd();
    return os.str();
  }();
  return id;
}

// store_set of `header` (a plain struct) followed by `payload_bytes` of payload.
template <typename Header>
void store_put(const std::string& key, const Header& header, const void* payload, uint64_t payload_bytes) {
  std::string v(sizeof(header) + payload_bytes, '\0');
  std::memcpy(&v[0], &header, sizeof(header));
  if (payload_bytes) std::memcpy(&v[sizeof(header)], payload, payload_bytes);
  throw_if_error(services().store_set(key.c_str(), v.data(), v.size()));
}

// Waits up to timeout_ms for `key` and returns its value; nullopt on timeout (*last_error then holds the
// store's last message). It waits in slices of at most 200 ms and runs `check` before each, so a check
// that throws (an aborted communicator, a plugin shutting down) gets a blocked rank out.
inline std::optional<std::string> store_wait(const std::string& key, uint64_t expected_bytes,
                                             int64_t timeout_ms, const std::function<void()>& check,
                                             std::string* last_error) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint64_t capacity = std::max<uint64_t>(expected_bytes, 64);
  for (;;) {
    if (check) check();
    const auto now = std::chrono::steady_clock::now();
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(end - now).count();
    const int64_t slice = std::clamp<int64_t>(left, 1, 200);  // never 0: a store may read 0 as "no limit"
    std::string buf(capacity, '\0');
    uint64_t size = 0;
    OarError* e = services().store_get(key.c_str(), &buf[0], capacity, &size, slice);
    if (!e) {
      buf.resize(size);
      return buf;
    }
    const int32_t code = services().error_code(e);
    if (last_error) *last_error = services().error_message(e);
    services().error_free(e);
    if (code == OAR_ERR_OUT_OF_RANGE) {  // the key is there but larger than we guessed
      capacity = size > capacity ? size : capacity * 2;
      continue;
    }
    if (left <= 0) return std::nullopt;
    // A store that fails at once (rather than waiting out the slice) is not polled in a tight loop.
    if (std::chrono::steady_clock::now() - now < std::chrono::milliseconds(slice / 2))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace oar::sdk
