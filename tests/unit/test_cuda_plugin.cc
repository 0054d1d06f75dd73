// The CUDA plugin's build rules (issue 15, CI checks): it exports only the two entry points, links neither
// the core nor the shared CUDA runtime (cudart is static; cuBLAS, cuDNN and NCCL are found at run time), and
// loading it reports the CUDA runtime's own answer: on a machine without a usable GPU the refusal carries
// the runtime's message, on one with a GPU it loads with the runtime's device count. The test asks the same
// runtime (cudart, linked statically here too) for that answer, so the oracle is not the plugin.
// Without the toolkit (no nvcc at configure time) the plugin is not built and every test skips, saying so.
#include <gtest/gtest.h>
#include <oar/core/runtime.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"

#ifdef OAR_HAVE_CUDA_PLUGIN
#include <cuda_runtime_api.h>
#endif

namespace {

using oar::PluginRecord;
using oar::Runtime;
using oar_test::run_command;

const char kFile[] = "liboar_plugin_cuda.so";

#ifdef OAR_HAVE_CUDA_PLUGIN
#define SKIP_WITHOUT_PLUGIN() (void)0
#else
#define SKIP_WITHOUT_PLUGIN() \
  GTEST_SKIP() << "the CUDA plugin was not built: no CUDA toolkit (nvcc) at configure time"
#endif

// OAR_TEST_CUDA_PLUGIN, else the build's plugin folder, else (a build moved to another machine, as
// scripts/gpu_check.sh does) the copy the runtime discovered.
std::string plugin_path() {
  if (const char* p = std::getenv("OAR_TEST_CUDA_PLUGIN")) return p;
  std::string built = std::string(OAR_BUILD_PLUGIN_DIR) + "/" + kFile;
  if (access(built.c_str(), R_OK) == 0) return built;
  for (const PluginRecord& r : Runtime::get().plugin_records())
    if (r.path.size() >= sizeof(kFile) - 1 &&
        r.path.compare(r.path.size() - (sizeof(kFile) - 1), std::string::npos, kFile) == 0)
      return r.path;
  return built;
}

bool have_tool(const std::string& tool) {
  std::string out;
  return run_command("command -v " + tool, &out) == 0;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TEST(CudaPlugin, IsBuilt) {
  SKIP_WITHOUT_PLUGIN();
  const std::string path = plugin_path();
  EXPECT_EQ(access(path.c_str(), R_OK), 0) << path << " does not exist although the toolkit was found";
}

TEST(CudaPlugin, ExportsOnlyTheEntryPoints) {
  SKIP_WITHOUT_PLUGIN();
  if (!have_tool("nm")) GTEST_SKIP() << "nm is not installed";
  const std::string path = plugin_path();
  std::string out;
  ASSERT_EQ(run_command("nm -D --defined-only '" + path + "'", &out), 0) << out;
  std::set<std::string> exported;
  for (const std::string& line : lines_of(out)) {
    std::istringstream fields(line);
    std::string w, sym;
    while (fields >> w) sym = w;
    if (sym.empty() || sym[0] == '_') continue;  // reserved / C++-mangled (weak template instances)
    exported.insert(sym);
  }
  EXPECT_EQ(exported, (std::set<std::string>{"oar_plugin_init", "oar_plugin_query"})) << path << ":\n" << out;
}

TEST(CudaPlugin, LinksNeitherTheCoreNorTheSharedCudaRuntime) {
  SKIP_WITHOUT_PLUGIN();
  if (!have_tool("readelf")) GTEST_SKIP() << "readelf is not installed";
  const std::string path = plugin_path();
  std::string out;
  ASSERT_EQ(run_command("readelf -d '" + path + "'", &out), 0) << out;
  int needed = 0;
  for (const std::string& line : lines_of(out)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    EXPECT_EQ(line.find("liboar_core"), std::string::npos) << path << " links the core: " << line;
    EXPECT_EQ(line.find("libcudart"), std::string::npos)
        << path << " links the shared CUDA runtime: " << line;
  }
  EXPECT_GT(needed, 0) << "no NEEDED entries read from:\n" << out;
}

TEST(CudaPlugin, LoadingReportsTheCudaRuntimesAnswer) {
  SKIP_WITHOUT_PLUGIN();
#ifdef OAR_HAVE_CUDA_PLUGIN
  const std::string path = plugin_path();
  // The runtime discovered it already when it sits in the plugin folder; otherwise load it here.
  PluginRecord rec;
  bool found = false;
  for (const PluginRecord& r : Runtime::get().plugin_records())
    if (r.path == path) rec = r, found = true;
  if (!found) rec = Runtime::get().load_plugin(path);

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) {
    EXPECT_TRUE(rec.loaded) << path << ": " << rec.reason;
    EXPECT_EQ(rec.device_type, "gpu");
    EXPECT_EQ(rec.num_devices, count);
    EXPECT_NE(Runtime::get().find_device_type("gpu"), nullptr);
    return;
  }
  EXPECT_FALSE(rec.loaded) << "loaded although cudaGetDeviceCount found no device ("
                           << cudaGetErrorString(err) << ")";
  EXPECT_EQ(Runtime::get().find_device_type("gpu"), nullptr);
  if (err != cudaSuccess) {
    const std::string message = cudaGetErrorString(err), name = cudaGetErrorName(err);
    EXPECT_TRUE(rec.reason.find(message) != std::string::npos || rec.reason.find(name) != std::string::npos)
        << "the refusal should carry the CUDA runtime's message \"" << message << "\" (" << name
        << "); the record says: " << rec.reason;
  } else {
    EXPECT_FALSE(rec.reason.empty()) << "refused without a reason although the runtime sees 0 devices";
  }
#endif
}

}  // namespace
