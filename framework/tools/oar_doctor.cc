// oar-doctor: what the runtime found. For each candidate plugin: loaded, or skipped and why; the
// devices each device type has; the kernels each registered.
#include <oar/core/error.h>
#include <oar/core/runtime.h>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  bool verbose = argc > 1 && (std::strcmp(argv[1], "-v") == 0 || std::strcmp(argv[1], "--kernels") == 0);
  oar::Runtime& rt = oar::Runtime::get();
  std::cout << "oar device ABI " << OAR_ABI_VERSION_MAJOR << "." << OAR_ABI_VERSION_MINOR << " (accepts minors within +/-"
            << OAR_ABI_MINOR_WINDOW << ")\n";
  std::cout << "plugin search path:\n";
  for (const auto& d : oar::Runtime::plugin_search_path()) std::cout << "  " << d << "\n";
  std::cout << "\nplugins:\n";
  if (rt.plugin_records().empty()) std::cout << "  (no candidate liboar_plugin_*.so found)\n";
  for (const auto& r : rt.plugin_records()) {
    std::cout << "  " << r.path << "\n    ";
    if (r.loaded)
      std::cout << "loaded: " << r.name << " " << r.version << " (device type '" << r.device_type << "', ABI "
                << r.abi_major << "." << r.abi_minor << (r.vendor_versions.empty() ? "" : ", " + r.vendor_versions)
                << "), " << r.num_devices << " device(s), " << r.num_kernels << " kernels\n";
    else
      std::cout << "skipped: " << r.reason << "\n";
    for (const auto& w : r.warnings) std::cout << "    warning: " << w << "\n";
  }
  std::cout << "\ndevices:\n";
  for (const auto& t : rt.device_types()) {
    if (!t.plugin) {
      std::cout << "  " << t.name << ": not available\n";
      continue;
    }
    for (int32_t i = 0; i < t.count; ++i) {
      try {
        oar::Device& d = rt.device(oar::Place{t.id, i});
        const auto& p = d.properties();
        std::cout << "  " << d.name() << ": " << p.name << ", " << (p.total_memory >> 20) << " MiB"
                  << (d.host_accessible() ? ", host accessible" : "") << "\n";
      } catch (const oar::Error& e) {
        std::cout << "  " << t.name << ":" << i << ": cannot open: " << e.what() << "\n";
      }
    }
    auto kernels = rt.kernels_of(t.id);
    std::cout << "    kernels: " << kernels.size() << " ops\n";
    if (verbose)
      for (const auto& [op, dtypes] : kernels) {
        std::cout << "      " << op << ":";
        for (auto d : dtypes) std::cout << " " << oar::dtype_name(d);
        std::cout << "\n";
      }
  }
  // Device types whose plugins were all refused, with the loader's reasons (a gpu plugin without a GPU).
  for (const auto& t : rt.refused_device_types())
    std::cout << "  " << t << ": not available: " << rt.unavailable_reason(t) << "\n";
  return rt.find_device_type("cpu") ? 0 : 1;
}
