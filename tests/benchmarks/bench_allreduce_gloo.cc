// all_reduce bus bandwidth of one rank, 1 KiB .. 256 MiB float32: the cpu plugin's collective table (loaded
// with dlopen, driven through the ABI on a stream, as the core drives it) against Gloo called directly.
// Not a test. Run two ranks (tests/benchmarks/bench_allreduce.py does, and adds torch.distributed):
//   oar_bench_allreduce_gloo <liboar_plugin_cpu.so> <rank> <nranks> <empty shared dir> [max MiB]
// The ranks meet through files in the shared dir (a tiny store for the plugin, Gloo's FileStore for Gloo).
// Prints "<impl> <bytes> <seconds per call> <bus GB/s>" lines.
#include <dlfcn.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <oar/device_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

struct OarError {  // the ABI's opaque error, as this stand-in core makes it
  int32_t code;
  std::string message;
};

namespace {

std::string g_dir;
OarError* error_new(int32_t code, int64_t, const char* m) { return new OarError{code, m ? m : ""}; }
void error_free(OarError* e) { delete e; }
int32_t error_code(const OarError* e) { return e->code; }
int64_t error_native_code(const OarError*) { return 0; }
const char* error_message(const OarError* e) { return e->message.c_str(); }
void log_msg(int32_t level, const char* m) {
  if (level >= OAR_LOG_WARNING) std::fprintf(stderr, "plugin: %s\n", m);
}
OarError* register_kernel(OarRegistrar*, const OarKernelDef*) { return nullptr; }
OarError* register_kernel_ex(OarRegistrar*, const OarKernelRegistration*) { return nullptr; }

std::string key_path(const char* key) {
  std::string k(key);
  for (char& ch : k)
    if (ch == '/') ch = '_';
  return g_dir + "/oar_" + k;
}
OarError* store_set(const char* key, const void* value, uint64_t size) {
  const std::string p = key_path(key), tmp = p + ".tmp";
  std::ofstream(tmp, std::ios::binary)
      .write(static_cast<const char*>(value), static_cast<std::streamsize>(size));
  std::rename(tmp.c_str(), p.c_str());
  return nullptr;
}
OarError* store_get(const char* key, void* buf, uint64_t cap, uint64_t* size, int64_t timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::ifstream f(key_path(key), std::ios::binary);
    if (f) {
      std::string v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      *size = v.size();
      if (v.size() > cap) return error_new(OAR_ERR_OUT_OF_RANGE, 0, "larger");
      std::memcpy(buf, v.data(), v.size());
      return nullptr;
    }
    if (std::chrono::steady_clock::now() > end) return error_new(OAR_ERR_NOT_FOUND, 0, "timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void check(OarError* e, const char* what) {
  if (!e) return;
  std::fprintf(stderr, "%s: %s\n", what, e->message.c_str());
  std::exit(1);
}

int iterations(uint64_t bytes) {  // the same on every rank: about 0.5 GB moved per size, 3..200 calls
  const uint64_t n = (uint64_t{512} << 20) / bytes;
  return static_cast<int>(std::max<uint64_t>(3, std::min<uint64_t>(200, n)));
}

void report(const char* impl, uint64_t bytes, double s, int nranks) {
  const double bus = static_cast<double>(bytes) / s * 2.0 * (nranks - 1) / nranks / 1e9;
  std::printf("%s %llu %.9f %.3f\n", impl, static_cast<unsigned long long>(bytes), s, bus);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <liboar_plugin_cpu.so> <rank> <nranks> <dir> [max MiB]\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[2]), nranks = std::atoi(argv[3]);
  g_dir = argv[4];
  const uint64_t max_bytes = (argc > 5 ? std::strtoull(argv[5], nullptr, 10) : 256) << 20;

  // ---- the plugin through the ABI
  void* so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto init = reinterpret_cast<OarPluginInitFn>(dlsym(so, OAR_PLUGIN_INIT_SYMBOL));
  static OarKernelApi kapi{};
  kapi.struct_size = sizeof(kapi);
  static OarCoreServices sv{};
  sv.struct_size = sizeof(sv);
  sv.abi_major = OAR_ABI_VERSION_MAJOR;
  sv.abi_minor = OAR_ABI_VERSION_MINOR;
  sv.error_new = error_new;
  sv.error_free = error_free;
  sv.error_code = error_code;
  sv.error_native_code = error_native_code;
  sv.error_message = error_message;
  sv.log = log_msg;
  sv.register_kernel = register_kernel;
  sv.register_kernel_ex = register_kernel_ex;
  sv.kernel_api = &kapi;
  sv.store_set = store_set;
  sv.store_get = store_get;
  OarPluginTables t{};
  t.struct_size = sizeof(t);
  check(init(&sv, nullptr, &t), "plugin init");
  const OarCollectiveTable& c = *t.collective;
  OarCommUniqueId id{};
  if (rank == 0) {
    check(c.get_unique_id(&id), "get_unique_id");
    store_set("bench/uid", id.bytes, sizeof(id.bytes));
  } else {
    uint64_t size = 0;
    check(store_get("bench/uid", id.bytes, sizeof(id.bytes), &size, 60000), "unique id");
  }
  OarComm comm = nullptr;
  OarStream stream = nullptr;
  check(t.stream->create(0, 0, &stream), "stream");
  check(c.comm_init(0, nranks, rank, &id, &comm), "comm_init");

  // ---- Gloo directly
  gloo::rendezvous::FileStore fstore(g_dir);
  auto dev = gloo::transport::tcp::CreateDevice("127.0.0.1");
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  ctx->connectFullMesh(fstore, dev);

  std::vector<float> buf(max_bytes / 4, 1.0f);
  for (uint64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const uint64_t n = bytes / 4;
    const int iters = iterations(bytes);
    // oar: every call on the stream, one synchronize at the end (as a training step would)
    check(c.all_reduce(buf.data(), buf.data(), n, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, comm, stream),
          "warm-up");
    check(t.stream->synchronize(0, stream), "sync");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      check(c.all_reduce(buf.data(), buf.data(), n, OAR_DTYPE_FLOAT32, OAR_REDUCE_SUM, comm, stream),
            "all_reduce");
    check(t.stream->synchronize(0, stream), "sync");
    report("oar", bytes, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters,
           nranks);
    // Gloo: the same sum, called on this thread
    auto gloo_call = [&](uint32_t tag) {
      gloo::AllreduceOptions o(ctx);
      o.setOutput(buf.data(), n);
      o.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      o.setTag(tag);
      gloo::allreduce(o);
    };
    gloo_call(0);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) gloo_call(static_cast<uint32_t>(i + 1));
    report("gloo", bytes,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters, nranks);
  }
  check(c.comm_destroy(comm), "comm_destroy");
  check(t.stream->destroy(0, stream), "stream destroy");
  return 0;
}
