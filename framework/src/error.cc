#include <oar/core/error.h>

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>
#include <memory>
#include <sstream>

namespace oar {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kType: return "TypeError";
    case ErrorCode::kOutOfRange: return "OutOfRange";
    case ErrorCode::kOutOfMemory: return "OutOfMemory";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kUnimplemented: return "Unimplemented";
    case ErrorCode::kUnavailable: return "Unavailable";
    case ErrorCode::kPrecondition: return "PreconditionNotMet";
    case ErrorCode::kAbiMismatch: return "AbiMismatch";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kExternal: return "External";
  }
  return "Unknown";
}

int call_stack_level() {
  static const int level = [] {
    const char* v = std::getenv("OAR_CALL_STACK_LEVEL");
    return v ? std::atoi(v) : 0;
  }();
  return level;
}

namespace {

// "module(mangled+0x12) [0x...]" -> "module: demangled"
std::string describe_frame(const char* raw) {
  std::string s(raw);
  size_t open = s.find('('), plus = s.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return s;
  std::string mangled = s.substr(open + 1, plus - open - 1);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                  std::free);
  std::string module = s.substr(0, open);
  size_t slash = module.rfind('/');
  if (slash != std::string::npos) module = module.substr(slash + 1);
  return module + ": " + (status == 0 && demangled ? demangled.get() : mangled);
}

// The C++ frames above the throw, for OAR_CALL_STACK_LEVEL=2 (most recent call first).
std::string cpp_stack() {
  void* frames[64];
  int n = backtrace(frames, 64);
  std::unique_ptr<char*, void (*)(void*)> names(backtrace_symbols(frames, n), std::free);
  std::ostringstream os;
  os << "\n\nC++ call stack (OAR_CALL_STACK_LEVEL=2), most recent call first:";
  for (int i = 2; i < n && names; ++i) os << "\n  #" << (i - 2) << " " << describe_frame(names.get()[i]);
  return os.str();
}

}  // namespace

namespace detail {
void throw_error(ErrorCode code, const std::string& message) {
  if (call_stack_level() >= 2) throw Error(code, message + cpp_stack());
  throw Error(code, message);
}
}  // namespace detail

}  // namespace oar
