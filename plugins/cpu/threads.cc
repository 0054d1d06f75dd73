// How many OpenMP threads the cpu kernels use (ours, oneDNN's and OpenBLAS's: all on libgomp's pool),
// adapted to what other processes take (issue 20, decision 128) and capped by the cgroup CPU quota
// (decision 129).
//
// The default count is the cores of the affinity mask (libgomp's own default), lowered to ceil(quota /
// period) when the process's cgroup (or an ancestor) has a CPU quota (cgroup.h): in a container started
// with `--cpus=2` on a 64-core host the mask shows 64 cores, and 64 threads would be throttled every CFS
// period.
//
// A parallel region is only as fast as its slowest thread. When another process holds one of the cores,
// a region's thread there waits for a time slice at every barrier, and a 2 ms training step took 6-30 ms
// on 2 cores; the same step on one thread took what one free core gives. So the thread count follows the
// cores the other processes leave: every kWindowNs, from /proc/stat (all CPU time spent on the cores we
// may run on) minus this process's own CPU time (which includes its spinning threads), the cores others
// used; the count is the free cores (a core counts as taken from 70% on), between 1 and the default.
//
// The count is applied with omp_set_num_threads on each calling thread, at kernel entry (oneDNN and
// OpenBLAS read it per call; the oneDNN primitive caches key on it). The user stays in charge: nothing is
// set when OMP_NUM_THREADS is set, OAR_OMP_ADAPT=0 keeps the default (the quota still applies), and a
// thread whose count someone else changed (a predictor with set_cpu_math_library_num_threads, the user's
// own omp_set_num_threads) is left alone until its count is back to the one set here.
#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cgroup.h"
#include "cpu_common.h"

namespace oar_cpu {
namespace {

// /proc/stat counts CPU time in ticks (usually 10 ms): a window of 100 ms sees 10 per core, enough to
// tell a busy core from a free one, and adapts within a few steps of a burst.
constexpr uint64_t kWindowNs = 100'000'000;
// A core counts as taken when the others used more than 70% of one: a process that wants a whole core
// measured 0.75-1.0 beside our two threads (its share shrinks while ours spin), and a lighter one stalls
// a region less often than losing a thread costs (measured: bench_contention.py, decision 128).
constexpr double kTakenCore = 0.7;
// Kernel entries between two looks at the clock (reading it costs 20-40 ns, a small kernel ~1 us).
constexpr uint32_t kCallsPerLook = 8;

struct Load {
  uint64_t wall_ns = 0;
  double busy_s = 0;  // CPU time spent on our cores by everyone
  double ours_s = 0;  // this process's CPU time
};

class Adapter {
 public:
  Adapter() {
    const char* user_count = std::getenv("OMP_NUM_THREADS");
    if (user_count && *user_count) {  // libgomp's count is the user's: nothing to set
      default_ = omp_get_max_threads();
      source_ = std::string("OMP_NUM_THREADS=") + user_count;
      return;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus_.push_back(c);
    }
    // libgomp's default count is the cores of the affinity mask: the count a thread starts with.
    start_ = cpus_.empty() ? omp_get_max_threads() : static_cast<int>(cpus_.size());
    default_ = start_;
    source_ = "affinity mask";
    const CpuQuota q = process_cpu_quota();
    if (q.limited()) {
      char text[64];
      std::snprintf(text, sizeof text, "%.2f", q.cpus());
      const std::string quota = "cgroup CPU quota " + std::string(text) + " CPUs at " + q.dir;
      if (q.threads() < default_) {
        default_ = q.threads();
        source_ = quota;
      } else {
        source_ += "; " + quota;
      }
    }
    target_.store(default_, std::memory_order_relaxed);
    on_ = default_ != start_;  // the quota alone: every calling thread gets the default
    const char* adapt = std::getenv("OAR_OMP_ADAPT");
    tick_s_ = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    // One thread leaves nothing to adapt.
    Load first;
    if ((adapt && std::strcmp(adapt, "0") == 0) || default_ < 2 || tick_s_ <= 0 || !read(first)) return;
    last_ = first;
    next_ns_.store(first.wall_ns + kWindowNs, std::memory_order_relaxed);
    on_ = adapting_ = true;
  }
  // Whether calling threads get counts from here (else libgomp's default or the user's count stands).
  bool on() const { return on_; }
  bool adapting() const { return adapting_; }
  int start_count() const { return start_; }
  int default_count() const { return default_; }
  const std::string& source() const { return source_; }
  int target() const { return target_.load(std::memory_order_relaxed); }

  // Takes a new sample when the window is over (one thread at a time; the others go on with the count
  // they have).
  void maybe_sample(uint64_t now) {
    if (now < next_ns_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock() || now < next_ns_.load(std::memory_order_relaxed)) return;
    Load cur;
    if (!read(cur) || cur.wall_ns <= last_.wall_ns) {
      next_ns_.store(now + kWindowNs, std::memory_order_relaxed);
      return;
    }
    const double wall_s = static_cast<double>(cur.wall_ns - last_.wall_ns) * 1e-9;
    const double others = std::max(0.0, (cur.busy_s - last_.busy_s) - (cur.ours_s - last_.ours_s)) / wall_s;
    const double free_cores = static_cast<double>(cpus_.size()) - others;
    const int n = std::clamp(static_cast<int>(std::floor(free_cores + kTakenCore)), 1, default_count());
    target_.store(n, std::memory_order_relaxed);
    last_ = cur;
    next_ns_.store(cur.wall_ns + kWindowNs, std::memory_order_relaxed);
  }

 private:
  // The busy time of our cores from /proc/stat's per-core lines, and our own CPU time.
  bool read(Load& out) const {
    out.wall_ns = oar::sdk::steady_ns();
    timespec ts{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return false;
    out.ours_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    FILE* f = std::fopen("/proc/stat", "re");
    if (!f) return false;
    char line[512];
    double ticks = 0;
    size_t seen = 0;
    while (seen < cpus_.size() && std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "cpu", 3) != 0) break;                      // past the per-core lines
      if (!std::isdigit(static_cast<unsigned char>(line[3]))) continue;  // the all-cores line
      int cpu = -1;
      unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal (older kernels: fewer)
      if (std::sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1], &v[2],
                      &v[3], &v[4], &v[5], &v[6], &v[7]) < 5 ||
          !std::binary_search(cpus_.begin(), cpus_.end(), cpu))
        continue;
      // Idle and iowait are free time; steal (a hypervisor's other guests) is taken time, like the rest.
      ticks += static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
      ++seen;
    }
    std::fclose(f);
    out.busy_s = ticks * tick_s_;
    return seen > 0;
  }

  bool on_ = false;
  bool adapting_ = false;
  int start_ = 0;          // the count a thread starts with (libgomp's default)
  int default_ = 0;        // start_ capped by the cgroup quota; the user's count under OMP_NUM_THREADS
  std::string source_;     // where default_ comes from
  std::vector<int> cpus_;  // the cores this process may run on, ascending
  double tick_s_ = 0;
  std::mutex mu_;  // one sampler at a time
  Load last_;
  std::atomic<uint64_t> next_ns_{0};
  std::atomic<int> target_{0};
};

Adapter& adapter() {
  static auto* a = new Adapter();  // never destroyed: kernels may run during exit
  return *a;
}

}  // namespace

void adapt_threads() {
  // One thread_local (in a dlopened library each costs a __tls_get_addr call).
  thread_local struct {
    uint32_t calls = 0;
    int ours = 0;  // the count this thread had from us last; 0: the default
  } tl;
  if (++tl.calls % kCallsPerLook != 1) return;  // the first call, then every kCallsPerLook-th
  Adapter& a = adapter();
  if (!a.on() || omp_in_parallel()) return;
  if (a.adapting()) a.maybe_sample(oar::sdk::steady_ns());
  if (tl.ours == 0) tl.ours = a.start_count();
  const int want = a.target();
  if (want == tl.ours) return;
  if (omp_get_max_threads() != tl.ours) return;  // someone else chose this thread's count: theirs wins
  omp_set_num_threads(want);
  tl.ours = want;
}

int default_threads() { return adapter().default_count(); }

const std::string& threads_source() { return adapter().source(); }

}  // namespace oar_cpu
