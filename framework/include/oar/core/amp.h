// Automatic mixed precision (oar.amp.auto_cast; docs/amp.md): a dispatcher hook that casts an op's
// floating inputs before shape inference, by a per-op policy given as data (Paddle's white / black /
// promote lists, turned into one table per device type by the Python front end).
#pragma once

#include <oar/core/dtype.h>
#include <oar/core/tensor.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oar::amp {

// What an op does under auto_cast (Paddle's lists).
enum Policy : int8_t {
  kPromote = 0,  // not listed: mixed float inputs run in the widest of them (O1) / the low dtype (O2)
  kWhite = 1,    // runs in the low dtype (matmul, conv)
  kBlack = 2,    // runs in float32 (reductions, norms, exp/log, softmax, losses)
  kKeep = 3,     // never touched (cast, copy, in-place writes, optimizer updates, loss scaling)
};

enum class Level : int { kO0 = 0, kOD = 1, kO1 = 2, kO2 = 3 };

struct Config {
  Level level = Level::kO1;
  DType dtype = DType::kBFloat16;  // the low dtype: float16 or bfloat16
  bool use_promote = true;
  // policy[device type][op id]; a device type with an empty table is left alone (its low dtype is not
  // supported there: the front end warned). Ops registered after the table was made are kPromote.
  std::vector<std::vector<int8_t>> policy;
};

// The calling thread's configuration (nullptr: AMP off). Setting it engages or disengages the hook and
// clears this thread's cast cache.
void set_config(std::shared_ptr<const Config> config);
std::shared_ptr<const Config> config();
// Whether auto_cast is on for this thread and runs its low dtype on `device_type` (front ends leave mixed
// float inputs to the hook then instead of promoting them first).
bool casts_on(int16_t device_type);

// The weight-cast cache of this thread: casts of leaf tensors that require gradients (parameters),
// reused while the tensor is unchanged (same storage version) until the configuration changes.
void clear_cache();
// How many casts the hook made on this thread (cache hits do not count); for tests and stats.
int64_t cast_count();

// Operator statistics (oar.amp.debugging): while on, every op call on this thread is counted by the
// dtype it runs in (after auto_cast's casts): {op name: [float16, bfloat16, float32, other]}.
void set_collect_stats(bool on);
std::vector<std::pair<std::string, std::array<int64_t, 4>>> op_stats();

void install_hook();

}  // namespace oar::amp
