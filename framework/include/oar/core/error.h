// The one error mechanism of the core: oar::Error carries a typed code (the ABI's OarErrorCode) and a
// message. OAR_ENFORCE checks a condition and builds the message only when it fails.
#pragma once

#include <oar/device_api.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace oar {

enum class ErrorCode : int32_t {
  kInvalidArgument = OAR_ERR_INVALID_ARGUMENT,  // -> Python ValueError
  kType = OAR_ERR_TYPE,                          // -> TypeError
  kOutOfRange = OAR_ERR_OUT_OF_RANGE,            // -> IndexError
  kOutOfMemory = OAR_ERR_OUT_OF_MEMORY,          // -> MemoryError
  kNotFound = OAR_ERR_NOT_FOUND,
  kUnimplemented = OAR_ERR_UNIMPLEMENTED,        // -> NotImplementedError
  kUnavailable = OAR_ERR_UNAVAILABLE,
  kPrecondition = OAR_ERR_PRECONDITION,
  kAbiMismatch = OAR_ERR_ABI_MISMATCH,
  kInternal = OAR_ERR_INTERNAL,
  kExternal = OAR_ERR_EXTERNAL,
};

const char* error_code_name(ErrorCode code);

// OAR_CALL_STACK_LEVEL (read once): 0 or 1 (default 0): error messages only; 2: errors raised by
// OAR_ENFORCE also carry the C++ call stack of the throw.
int call_stack_level();

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, int64_t native_code = 0)
      : std::runtime_error(message), code_(code), native_code_(native_code) {}
  ErrorCode code() const { return code_; }
  int64_t native_code() const { return native_code_; }

 private:
  ErrorCode code_;
  int64_t native_code_;
};

namespace detail {
[[noreturn]] void throw_error(ErrorCode code, const std::string& message);
}  // namespace detail

}  // namespace oar

// OAR_ENFORCE(cond, ErrorCode::kX, "stream " << "message") throws oar::Error when cond is false.
#define OAR_ENFORCE(cond, code, msg)                           \
  do {                                                         \
    if (__builtin_expect(!(cond), 0)) {                        \
      std::ostringstream oar_enforce_os_;                      \
      oar_enforce_os_ << msg;                                  \
      ::oar::detail::throw_error((code), oar_enforce_os_.str()); \
    }                                                          \
  } while (0)

#define OAR_THROW(code, msg) OAR_ENFORCE(false, code, msg)
