#include <oar/core/error.h>

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

namespace detail {
void throw_error(ErrorCode code, const std::string& message) { throw Error(code, message); }
}  // namespace detail

}  // namespace oar
