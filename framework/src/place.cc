#include <oar/core/error.h>
#include <oar/core/place.h>
#include <oar/core/runtime.h>

#include <cctype>

namespace oar {

std::string Place::to_string() const {
  if (is_cpu()) return "cpu";
  const auto& types = Runtime::get().device_types();
  std::string name = type >= 0 && type < static_cast<int16_t>(types.size()) ? types[type].name : "unknown";
  return name + ":" + std::to_string(index);
}

Place Place::parse(const std::string& text) {
  std::string type_name = text;
  int32_t index = 0;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    type_name = text.substr(0, colon);
    std::string idx = text.substr(colon + 1);
    bool digits = !idx.empty() && idx.size() < 9;
    for (char c : idx) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    OAR_ENFORCE(digits, ErrorCode::kInvalidArgument,
                "malformed device '" << text << "': expected 'type' or 'type:index', e.g. 'sim:0'");
    index = std::stoi(idx);
  }
  OAR_ENFORCE(!type_name.empty(), ErrorCode::kInvalidArgument, "malformed device '" << text << "'");
  const DeviceType* t = Runtime::get().find_device_type(type_name);
  if (!t) {
    std::string known;
    for (const auto& dt : Runtime::get().device_types()) known += (known.empty() ? "" : ", ") + dt.name;
    OAR_THROW(ErrorCode::kNotFound, "unknown device type '" << type_name << "' in '" << text
                                                            << "'; available: " << known << "; "
                                                            << Runtime::get().unavailable_reason(type_name));
  }
  OAR_ENFORCE(index < t->count, ErrorCode::kNotFound,
              "device '" << text << "' does not exist: " << type_name << " has " << t->count << " device(s)");
  return Place{t->id, index};
}

}  // namespace oar
