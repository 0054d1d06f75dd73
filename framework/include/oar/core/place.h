// Where a tensor lives: a device type (a small id given to each plugin's device type when it loads;
// "cpu" is always 0) and a device index. Printed and parsed as "cpu", "sim:0", "gpu:1".
#pragma once

#include <cstdint>
#include <string>

namespace oar {

inline constexpr int kMaxDeviceTypes = 16;
inline constexpr int16_t kCpuDeviceType = 0;

struct Place {
  int16_t type = kCpuDeviceType;
  int32_t index = 0;

  bool is_cpu() const { return type == kCpuDeviceType; }
  bool operator==(const Place& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Place& o) const { return !(*this == o); }
  std::string to_string() const;
  // "cpu", "cpu:0", "sim", "sim:1". Throws kNotFound for an unknown device type and kInvalidArgument
  // for a malformed string.
  static Place parse(const std::string& text);
};

inline Place cpu_place() { return Place{}; }

}  // namespace oar
