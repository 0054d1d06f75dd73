// The CPU quota of the process's cgroups (cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us, cgroup v2
// cpu.max): `docker run --cpus=2` or a Kubernetes CPU limit. threads.cc caps the OpenMP thread count with
// it (decision 129).
#pragma once

#include <cstdint>
#include <string>

namespace oar_cpu {

struct CpuQuota {
  int64_t quota_us = 0;  // 0: no quota
  int64_t period_us = 0;
  std::string dir;  // the cgroup directory that sets it
  bool limited() const { return quota_us > 0 && period_us > 0; }
  double cpus() const {
    return limited() ? static_cast<double>(quota_us) / static_cast<double>(period_us) : 0;
  }
  // The threads that fit the quota: ceil(quota / period), at least 1.
  int threads() const;
};

// One quota file's contents; false where there is no quota ("max", -1) or the text is not understood.
bool parse_cpu_max(const std::string& text, int64_t& quota_us, int64_t& period_us);  // v2: "200000 100000"
bool parse_cfs(const std::string& quota_text, const std::string& period_text, int64_t& quota_us,
               int64_t& period_us);  // v1: "200000", "100000"

// The most restrictive quota on the path from the process's cgroup up to its hierarchy's mount root, over
// the v1 hierarchy with the cpu controller and the v2 one, given the text of /proc/self/cgroup and
// /proc/self/mountinfo (the quota files are read under the mount points named there). Unreadable files
// and lines not understood count as no quota.
CpuQuota find_cpu_quota(const std::string& proc_cgroup, const std::string& mountinfo);

// find_cpu_quota for this process.
CpuQuota process_cpu_quota();

}  // namespace oar_cpu
