// The plugin's tables and its two entry points, built in one place.
//
// A plugin writes one setup function that fills the tables it implements and registers its kernels, and
// one line that defines oar_plugin_query and oar_plugin_init:
//
//   void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
//     t.device.count = my_count;         // required
//     t.memory.allocate = my_allocate;   // required: allocate, free, memcpy
//     ...
//     kernels.add("add", {OAR_DTYPE_FLOAT32}, add_f32);
//   }
//   const oar::sdk::PluginDescription kPlugin{"mydev", "mydev", "0.1.0"};  // liboar_plugin_mydev.so
//   OAR_SDK_PLUGIN(kPlugin, setup)
//
// Every table starts zeroed with its struct_size set. A table the plugin leaves all NULL is not handed to
// the core at all, which is how the ABI says "not implemented" (no stream table: a synchronous device; no
// collective table: no collectives). The required functions are checked before the core sees the tables.
#pragma once

#include <oar/sdk/kernel.h>
#include <oar/sdk/plugin.h>

#include <cstring>

namespace oar::sdk {

template <typename T>
T sized() {
  T t{};
  t.struct_size = sizeof(T);
  return t;
}

// Whether any byte after struct_size is set: a table with no function is "not implemented".
template <typename T>
bool has_any_function(const T& t) {
  const auto* p = reinterpret_cast<const unsigned char*>(&t);
  for (size_t i = sizeof(t.struct_size); i < sizeof(T); ++i)
    if (p[i]) return true;
  return false;
}

struct Tables {
  OarDeviceTable device = sized<OarDeviceTable>();
  OarMemoryTable memory = sized<OarMemoryTable>();
  OarStreamTable stream = sized<OarStreamTable>();
  OarEventTable event = sized<OarEventTable>();
  OarCollectiveTable collective = sized<OarCollectiveTable>();
  OarProfilerTable profiler = sized<OarProfilerTable>();
  void (*shutdown)(void) = nullptr;  // called once before unload
};

// The whole body of oar_plugin_init: services, ABI check, setup(tables, kernels) with exceptions turned
// into an OarError, the required functions checked, and the tables handed back.
template <typename Setup>
OarError* init_plugin(const OarCoreServices* core, OarRegistrar* registrar, OarPluginTables* out,
                      const PluginDescription& d, Setup&& setup) noexcept {
  return run_init(core, out, d.name, [&](OarPluginTables& t) {
    static Tables tables;  // the core keeps pointers to these until unload
    tables = Tables{};
    KernelRegistrar kernels(registrar);
    setup(tables, kernels);
    OAR_SDK_CHECK(tables.device.count, OAR_ERR_INVALID_ARGUMENT,
                  d.name << ": the device table needs count()");
    OAR_SDK_CHECK(tables.memory.allocate && tables.memory.free && tables.memory.memcpy,
                  OAR_ERR_INVALID_ARGUMENT,
                  d.name << ": the memory table needs allocate(), free() and memcpy()");
    t.device = &tables.device;
    t.memory = &tables.memory;
    t.stream = has_any_function(tables.stream) ? &tables.stream : nullptr;
    t.event = has_any_function(tables.event) ? &tables.event : nullptr;
    t.collective = has_any_function(tables.collective) ? &tables.collective : nullptr;
    t.profiler = has_any_function(tables.profiler) ? &tables.profiler : nullptr;
    t.shutdown = tables.shutdown;
  });
}

}  // namespace oar::sdk

// Defines the plugin's two exported entry points. DESCRIPTION names an oar::sdk::PluginDescription
// ({name, device type, version[, vendor versions, score]}; the file must be liboar_plugin_<name>.so),
// SETUP a function void(oar::sdk::Tables&, oar::sdk::KernelRegistrar&).
#define OAR_SDK_PLUGIN(DESCRIPTION, SETUP)                                                                   \
  extern "C" OAR_PLUGIN_EXPORT int32_t oar_plugin_query(OarPluginInfo* info) {                               \
    return ::oar::sdk::answer_query(info, DESCRIPTION);                                                      \
  }                                                                                                          \
  extern "C" OAR_PLUGIN_EXPORT OarError* oar_plugin_init(const OarCoreServices* services,                    \
                                                         OarRegistrar* registrar, OarPluginTables* tables) { \
    return ::oar::sdk::init_plugin(services, registrar, tables, DESCRIPTION, SETUP);                         \
  }
