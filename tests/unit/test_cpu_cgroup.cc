// The cpu plugin's cgroup CPU quota lookup (plugins/cpu/cgroup.cc) over fixture trees: v1 and v2 files,
// "max" and -1, nested cgroups, mounts that show a sub-tree (containers), escaped mount points, garbage.
// The real-cgroup test is tests/python/test_cgroup_threads.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../../plugins/cpu/cgroup.h"

namespace fs = std::filesystem;
using oar_cpu::CpuQuota;
using oar_cpu::find_cpu_quota;
using oar_cpu::parse_cfs;
using oar_cpu::parse_cpu_max;

namespace {

class Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("oar_cgroup_fixture_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  // Writes `text` to root_/rel, creating the folders.
  void put(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string dir(const std::string& rel) const { return (root_ / rel).string(); }
  // A mountinfo line for a v1 cpu,cpuacct hierarchy (or v2) showing `root`, mounted at root_/rel.
  std::string v1_mount(const std::string& rel, const std::string& root = "/") const {
    return "32 31 0:29 " + root + " " + dir(rel) + " rw,nosuid shared:9 - cgroup cgroup rw,cpu,cpuacct\n";
  }
  std::string v2_mount(const std::string& rel, const std::string& root = "/") const {
    return "41 31 0:38 " + root + " " + dir(rel) + " rw,relatime - cgroup2 cgroup2 rw\n";
  }
  fs::path root_;
};

TEST(CgroupParse, CpuMax) {
  int64_t q = 0, p = 0;
  EXPECT_TRUE(parse_cpu_max("200000 100000\n", q, p));
  EXPECT_EQ(q, 200000);
  EXPECT_EQ(p, 100000);
  EXPECT_TRUE(parse_cpu_max("150000 100000", q, p));
  EXPECT_EQ(q, 150000);
  for (const char* none : {"max 100000\n", "max", "", "\n", "abc 100000", "100000", "0 100000", "-5 100000",
                           "100000 0", "100000 100000 7", "1e5 100000", "99999999999999999999999 100000"})
    EXPECT_FALSE(parse_cpu_max(none, q, p)) << none;
}

TEST(CgroupParse, Cfs) {
  int64_t q = 0, p = 0;
  EXPECT_TRUE(parse_cfs("50000\n", "100000\n", q, p));
  EXPECT_EQ(q, 50000);
  EXPECT_EQ(p, 100000);
  for (auto [a, b] : {std::pair{"-1\n", "100000\n"},
                      {"", "100000"},
                      {"50000", ""},
                      {"50000", "0"},
                      {"x", "100000"},
                      {"50000 1", "100000"}})
    EXPECT_FALSE(parse_cfs(a, b, q, p)) << a << " / " << b;
}

TEST(CgroupParse, Threads) {
  CpuQuota q;
  EXPECT_FALSE(q.limited());
  EXPECT_EQ(q.threads(), 0);
  q.period_us = 100000;
  for (auto [quota, threads] :
       {std::pair{100000, 1}, {100001, 2}, {150000, 2}, {200000, 2}, {10000, 1}, {6400000, 64}}) {
    q.quota_us = quota;
    EXPECT_EQ(q.threads(), threads) << quota;
  }
}

TEST_F(Tree, V1NestedSmallestWins) {
  put("cpu/a/cpu.cfs_quota_us", "200000\n");
  put("cpu/a/cpu.cfs_period_us", "100000\n");
  put("cpu/a/b/cpu.cfs_quota_us", "-1\n");
  put("cpu/a/b/cpu.cfs_period_us", "100000\n");
  put("cpu/a/b/c/cpu.cfs_quota_us", "300000\n");
  put("cpu/a/b/c/cpu.cfs_period_us", "100000\n");
  const std::string mounts = v2_mount("unified") + v1_mount("cpu");
  CpuQuota q = find_cpu_quota("12:memory:/x\n3:cpu,cpuacct:/a/b/c\n0::/\n", mounts);
  ASSERT_TRUE(q.limited());
  EXPECT_EQ(q.quota_us, 200000);
  EXPECT_EQ(q.dir, dir("cpu/a"));
  EXPECT_EQ(q.threads(), 2);
  // A smaller quota below wins; another period compares in CPUs (40000/50000 = 0.8 < 2).
  put("cpu/a/b/cpu.cfs_quota_us", "40000\n");
  put("cpu/a/b/cpu.cfs_period_us", "50000\n");
  q = find_cpu_quota("3:cpu,cpuacct:/a/b/c\n", mounts);
  EXPECT_EQ(q.dir, dir("cpu/a/b"));
  EXPECT_DOUBLE_EQ(q.cpus(), 0.8);
  EXPECT_EQ(q.threads(), 1);
  // The quota at the mount point itself counts too.
  put("cpu/cpu.cfs_quota_us", "10000\n");
  put("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(find_cpu_quota("3:cpu,cpuacct:/a/b/c\n", mounts).dir, dir("cpu"));
}

TEST_F(Tree, V1ContainerMountShowsASubtree) {
  // Docker without a cgroup namespace: the process is in /docker/abc, the mount shows /docker/abc.
  put("cpu/cpu.cfs_quota_us", "100000\n");
  put("cpu/cpu.cfs_period_us", "100000\n");
  CpuQuota q = find_cpu_quota("4:cpu:/docker/abc\n", v1_mount("cpu", "/docker/abc"));
  ASSERT_TRUE(q.limited());
  EXPECT_EQ(q.dir, dir("cpu"));
  // A process outside the mounted sub-tree (or a path that only shares a prefix) is not looked up.
  EXPECT_FALSE(find_cpu_quota("4:cpu:/docker/abcd\n", v1_mount("cpu", "/docker/abc")).limited());
  EXPECT_FALSE(find_cpu_quota("4:cpu:/other\n", v1_mount("cpu", "/docker/abc")).limited());
}

TEST_F(Tree, V2CpuMax) {
  put("u/cpu.max", "max 100000\n");
  put("u/k/cpu.max", "250000 100000\n");
  put("u/k/pod/cpu.max", "max 100000\n");
  CpuQuota q = find_cpu_quota("0::/k/pod\n", v1_mount("cpuonly_not_here") + v2_mount("u"));
  ASSERT_TRUE(q.limited());
  EXPECT_EQ(q.dir, dir("u/k"));
  EXPECT_EQ(q.threads(), 3);
  // v2 lets a child's quota exceed its parent's: the parent's still limits.
  put("u/k/pod/cpu.max", "800000 100000\n");
  EXPECT_EQ(find_cpu_quota("0::/k/pod\n", v2_mount("u")).dir, dir("u/k"));
}

TEST_F(Tree, EscapedMountPoint) {
  put("my cg/cpu.max", "50000 100000\n");
  const std::string line = "41 31 0:38 / " + dir("my\\040cg") + " rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(find_cpu_quota("0::/\n", line).dir, dir("my cg"));
}

TEST_F(Tree, NothingOrGarbage) {
  put("cpu/cpu.cfs_quota_us", "garbage\n");
  put("cpu/cpu.cfs_period_us", "100000\n");
  put("u/cpu.max", "\n");
  const std::string mounts = v1_mount("cpu") + v2_mount("u");
  for (const char* cgroup : {"3:cpu,cpuacct:/\n0::/\n", "", "garbage", "3:cpuacct:/\n", "3:cpuset:/\n",
                             "3:cpu:relative\n", "::\n", "0::/missing/dir\n"})
    EXPECT_FALSE(find_cpu_quota(cgroup, mounts).limited()) << cgroup;
  // The cpu controller must be a whole token in the mount's options (cpuset, cpuacct are not cpu).
  put("cs/cpu.cfs_quota_us", "100000\n");
  put("cs/cpu.cfs_period_us", "100000\n");
  const std::string cpuset = "34 31 0:31 / " + dir("cs") + " rw - cgroup cgroup rw,cpuset,cpuacct\n";
  EXPECT_FALSE(find_cpu_quota("3:cpu:/\n", cpuset).limited());
  for (const char* mountinfo : {"", "garbage\n", "1 2 3\n", " - cgroup2 cgroup2 rw\n"})
    EXPECT_FALSE(find_cpu_quota("3:cpu:/\n0::/\n", mountinfo).limited()) << mountinfo;
}

}  // namespace
