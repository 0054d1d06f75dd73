// Opens BLAS/LAPACK at run time. First choice: Debian's OpenBLAS built on OpenMP (libopenblas0-openmp,
// scripts/install_deps.sh), by its own path: oneDNN and our kernels run on libgomp, so OpenBLAS then
// shares that one thread pool (the pthread variant would start a second pool and oversubscribe the
// cores), runs one thread when called inside our parallel loops, and follows omp_set_num_threads.
// The path, not the liblapack.so.3 alternative, so that installing another variant (pthread has a
// higher alternatives priority) does not change what we load. Fallbacks: any libopenblas.so.0, then
// the reference liblapack.so.3 (which brings libblas.so.3): same results, slower.
//
// OAR_BLAS_LIBRARY=<path or soname> names the one library to load instead (another LAPACK, or the
// reference one to check the fallback); its symbols must be the Fortran LAPACK/BLAS ones.
//
// Opened with RTLD_DEEPBIND instead of linked: a process that has already loaded another LAPACK/BLAS
// into the global scope (torch's MKL, which exports the same Fortran names with other integer widths)
// would otherwise capture our calls and the library's internal ones.
#include "blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

// The sanitizers' runtimes refuse RTLD_DEEPBIND (it would bypass their interceptors) and end the
// process; a sanitizer build (scripts/sanitize.sh) loads the library without it.
#if defined(__SANITIZE_ADDRESS__)
#define OAR_BLAS_DEEPBIND 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OAR_BLAS_DEEPBIND 0
#endif
#endif
#ifndef OAR_BLAS_DEEPBIND
#define OAR_BLAS_DEEPBIND RTLD_DEEPBIND
#endif

#if defined(__x86_64__)
#define OAR_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define OAR_MULTIARCH "aarch64-linux-gnu"
#else
#define OAR_MULTIARCH ""
#endif

struct Loaded {
  Blas blas;
  std::string error;  // empty when loaded
};

// OpenBLAS picks its kernels by CPU model, and a model newer than the library falls back to generic
// SSE3 kernels ("Prescott"): Debian's 0.3.21 on an Emerald Rapids Xeon (model 207) ran dgemm 5x
// slower than numpy's newer OpenBLAS. Unless the user chose a core (OPENBLAS_CORETYPE), name the
// family the CPU's features support, for the library's constructor only (restored right after).
const char* openblas_core() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
#endif
  return nullptr;
}

void* open_library(const char* name) {
  const char* core = std::getenv("OPENBLAS_CORETYPE") ? nullptr : openblas_core();
  if (core) setenv("OPENBLAS_CORETYPE", core, 0);
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL | OAR_BLAS_DEEPBIND);
  if (core) unsetenv("OPENBLAS_CORETYPE");
  return h;
}

Loaded load() {
  Loaded r;
  void* h = nullptr;
  std::string tried;
  std::vector<const char*> names{"/usr/lib/" OAR_MULTIARCH "/openblas-openmp/libopenblas.so.0",
                                 "libopenblas.so.0", "liblapack.so.3"};
  const char* chosen = std::getenv("OAR_BLAS_LIBRARY");
  if (chosen && *chosen) names = {strdup(chosen)};  // kept for the process: Blas::library points at it
  for (const char* name : names) {
    h = open_library(name);
    if (h) {
      r.blas.library = name;
      break;
    }
    const char* e = dlerror();
    tried += std::string("\n  ") + (e ? e : name);
  }
  if (!h) {
    r.error = chosen && *chosen ? "cannot load the BLAS/LAPACK library OAR_BLAS_LIBRARY names:" + tried
                                : "cannot load BLAS/LAPACK (install Debian's libopenblas0-openmp, see "
                                  "scripts/install_deps.sh):" +
                                      tried;
    return r;
  }
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && r.error.empty()) r.error = std::string(r.blas.library) + " has no symbol " + name;
  };
#define OAR_BLAS_GET(name) get(r.blas.name, #name);
  OAR_BLAS_GET(sgetrf_)
  OAR_BLAS_GET(dgetrf_)
  OAR_BLAS_GET(sgetri_)
  OAR_BLAS_GET(dgetri_)
  OAR_BLAS_GET(sgetrs_)
  OAR_BLAS_GET(dgetrs_)
  OAR_BLAS_GET(spotrf_)
  OAR_BLAS_GET(dpotrf_)
  OAR_BLAS_GET(strtrs_)
  OAR_BLAS_GET(dtrtrs_)
  OAR_BLAS_GET(sgeqrf_)
  OAR_BLAS_GET(dgeqrf_)
  OAR_BLAS_GET(sorgqr_)
  OAR_BLAS_GET(dorgqr_)
  OAR_BLAS_GET(sgesdd_)
  OAR_BLAS_GET(dgesdd_)
  OAR_BLAS_GET(ssyevd_)
  OAR_BLAS_GET(dsyevd_)
  OAR_BLAS_GET(dgemm_)
  OAR_BLAS_GET(cgemm_)
  OAR_BLAS_GET(zgemm_)
#undef OAR_BLAS_GET
  return r;  // the handle stays open for the life of the process
}

const Loaded& loaded() {
  static const Loaded l = load();  // once: a missing library is not retried on every call
  return l;
}

}  // namespace

const Blas& blas(const char* op) {
  const Loaded& l = loaded();
  OAR_SDK_CHECK(l.error.empty(), OAR_ERR_UNAVAILABLE, op << ": " << l.error);
  return l.blas;
}

bool blas_available() { return loaded().error.empty(); }

}  // namespace oar_cpu
