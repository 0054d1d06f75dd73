// Plugin-side access to the core's services: errors, logging, and the exception boundary.
// Header-only; a plugin calls oar::sdk::init_services(services) first thing in oar_plugin_init.
#pragma once

#include <oar/device_api.h>

#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

namespace oar::sdk {

// The core's services as this plugin sees them: a zero-filled copy of min(core size, our size) bytes,
// so fields a older core lacks read as NULL.
inline OarCoreServices& services() {
  static OarCoreServices s{};
  return s;
}
inline OarKernelApi& kernel_api() {
  static OarKernelApi k{};
  return k;
}

inline void init_services(const OarCoreServices* core) {
  OarCoreServices& s = services();
  std::memset(&s, 0, sizeof(s));
  std::memcpy(&s, core, core->struct_size < sizeof(s) ? core->struct_size : sizeof(s));
  s.struct_size = sizeof(s);
  OarKernelApi& k = kernel_api();
  std::memset(&k, 0, sizeof(k));
  if (s.kernel_api) {
    size_t n = s.kernel_api->struct_size < sizeof(k) ? s.kernel_api->struct_size : sizeof(k);
    std::memcpy(&k, s.kernel_api, n);
  }
  k.struct_size = sizeof(k);
}

// An exception that carries an ABI error code; anything thrown inside guard() becomes an OarError.
class Error : public std::runtime_error {
 public:
  Error(OarErrorCode code, const std::string& message, int64_t native_code = 0)
      : std::runtime_error(message), code_(code), native_(native_code) {}
  OarErrorCode code() const { return code_; }
  int64_t native_code() const { return native_; }

 private:
  OarErrorCode code_;
  int64_t native_;
};

// Whether the core understands OAR_ERR_DECLINED (ABI 1.2): it is, and says it is, 1.2 or newer.
inline bool core_accepts_decline() { return OAR_ABI_VERSION_MINOR >= 2 && services().abi_minor >= 2; }

inline OarError* make_error(int32_t code, const std::string& message, int64_t native_code = 0) {
  if (!services().error_new) return nullptr;  // no core: nothing can carry the error
  if (code == OAR_ERR_DECLINED && !core_accepts_decline()) {
    // An older core cannot fall back for one call: the decline becomes an ordinary, explained error.
    const std::string m = message + " (the kernel declined the call; a core of ABI 1." +
                          std::to_string(services().abi_minor) + " cannot fall back for it)";
    return services().error_new(OAR_ERR_UNIMPLEMENTED, native_code, m.c_str());
  }
  return services().error_new(code, native_code, message.c_str());
}

// Declines the current kernel call or answers "no" in a supports query (ABI 1.2): the core runs the call
// on the CPU fallback instead. A kernel declines before it enqueues any work. Under an older core it is an
// OAR_ERR_UNIMPLEMENTED error carrying the reason.
[[noreturn]] inline void decline(const std::string& reason) { throw Error(OAR_ERR_DECLINED, reason); }

// Throws the error carried by `err` (taking ownership); used when a core call fails inside a guard.
inline void throw_if_error(OarError* err) {
  if (!err) return;
  OarCoreServices& s = services();
  OarErrorCode code = static_cast<OarErrorCode>(s.error_code(err));
  std::string msg = s.error_message(err);
  int64_t native = s.error_native_code(err);
  s.error_free(err);
  throw Error(code, msg, native);
}

// Throws an sdk::Error with `code` when cond is false; msg is a stream expression (a << b).
#define OAR_SDK_CHECK(cond, code, msg)                    \
  do {                                                    \
    if (!(cond)) {                                        \
      std::ostringstream oar_sdk_os_;                     \
      oar_sdk_os_ << msg;                                 \
      throw ::oar::sdk::Error((code), oar_sdk_os_.str()); \
    }                                                     \
  } while (0)

// Runs fn and turns any C++ exception into an OarError, so nothing unwinds across the ABI.
template <typename Fn>
OarError* guard(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return make_error(e.code(), e.what(), e.native_code());
  } catch (const std::bad_alloc&) {
    return make_error(OAR_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::invalid_argument& e) {
    return make_error(OAR_ERR_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return make_error(OAR_ERR_OUT_OF_RANGE, e.what());
  } catch (const std::exception& e) {
    return make_error(OAR_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(OAR_ERR_INTERNAL, "unknown C++ exception in plugin");
  }
}

inline void log(int32_t level, const std::string& message) {
  if (services().log) services().log(level, message.c_str());
}

// Fills a struct the caller sized: copies min(dst->struct_size, sizeof(T)) bytes of `src`,
// keeping the caller's struct_size. Used for query info and returned tables.
template <typename T>
void fill_sized(T* dst, const T& src) {
  size_t n = dst->struct_size < sizeof(T) ? dst->struct_size : sizeof(T);
  size_t keep = dst->struct_size;
  std::memcpy(dst, &src, n);
  dst->struct_size = keep;
}

// What a plugin says about itself from oar_plugin_query.
struct PluginDescription {
  const char* name;         // the file is liboar_plugin_<name>.so
  const char* device_type;  // "cpu", "sim", "gpu", ...
  const char* version;
  const char* vendor_versions = nullptr;
  int32_t score = 100;
};

// The whole body of oar_plugin_query: fills the caller-sized info for the ABI this plugin is built for.
inline int32_t answer_query(OarPluginInfo* info, const PluginDescription& d) noexcept {
  if (!info) return 1;
  OarPluginInfo i{};
  i.struct_size = sizeof(i);
  i.name = d.name;
  i.device_type = d.device_type;
  i.plugin_version = d.version;
  i.abi_major = OAR_ABI_VERSION_MAJOR;
  i.abi_minor = OAR_ABI_VERSION_MINOR;
  i.vendor_versions = d.vendor_versions;
  i.score = d.score;
  fill_sized(info, i);
  return 0;
}

// The frame of oar_plugin_init: takes the core's services, checks its ABI major and that it can
// register kernels, then runs setup(tables) with every exception turned into an OarError. `setup`
// registers kernels and fills an OarPluginTables, which is handed back with fill_sized.
template <typename Setup>
OarError* run_init(const OarCoreServices* core, OarPluginTables* tables, const char* plugin,
                   Setup&& setup) noexcept {
  if (!core) return nullptr;  // without services no error can even be created
  init_services(core);
  return guard([&] {
    OAR_SDK_CHECK(core->abi_major == OAR_ABI_VERSION_MAJOR, OAR_ERR_ABI_MISMATCH,
                  plugin << ": built for ABI " << OAR_ABI_VERSION_MAJOR << ".x, the core has ABI "
                         << core->abi_major << "." << core->abi_minor);
    OAR_SDK_CHECK(services().register_kernel && services().kernel_api && tables, OAR_ERR_INVALID_ARGUMENT,
                  plugin << ": init needs the core's register_kernel and kernel_api, and a tables struct");
    OarPluginTables t{};
    t.struct_size = sizeof(t);
    setup(t);
    fill_sized(tables, t);
  });
}

}  // namespace oar::sdk
