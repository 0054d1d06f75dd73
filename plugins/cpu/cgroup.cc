// Finding the process's CPU quota: /proc/self/cgroup names the process's cgroup in each hierarchy
// ("ID:controllers:path"; "0::path" for v2), /proc/self/mountinfo where each hierarchy is mounted and
// which of its cgroups the mount shows (field 4, the mount's root: "/docker/<id>" in a container without a
// cgroup namespace). A quota set on any ancestor limits its descendants, so every level from the process's
// cgroup up to the mount's root is read and the smallest quota (in CPUs) wins.
#include "cgroup.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace oar_cpu {
namespace {

bool read_text(const std::string& path, std::string& out) {
  std::ifstream f(path);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  out = s.str();
  return !f.bad();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

// A whole decimal integer (surrounding whitespace allowed); false on anything else or overflow.
bool parse_int(const std::string& text, int64_t& v) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(s, &end, 10);
  if (end == s || errno == ERANGE) return false;
  while (*end == ' ' || *end == '\n' || *end == '\t') ++end;
  if (*end != '\0') return false;
  v = x;
  return true;
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo (octal).
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_token(const std::string& list, const std::string& token) {
  for (const std::string& t : split(list, ','))
    if (t == token) return true;
  return false;
}

struct Mount {
  std::string root;   // the cgroup the mount shows, in the hierarchy's own paths
  std::string point;  // where it is mounted
};

// The first mount of the v1 hierarchy with the cpu controller (v2: the cgroup2 mount) whose root contains
// `path`; false when there is none.
bool find_mount(const std::string& mountinfo, bool v2, const std::string& path, Mount& out) {
  for (const std::string& line : split(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional fields] - fstype source super-options
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::vector<std::string> head, tail;
    for (const std::string& f : split(line.substr(0, dash), ' '))
      if (!f.empty()) head.push_back(f);
    for (const std::string& f : split(line.substr(dash + 3), ' '))
      if (!f.empty()) tail.push_back(f);
    if (head.size() < 5 || tail.empty()) continue;
    if (v2 ? tail[0] != "cgroup2" : (tail[0] != "cgroup" || tail.size() < 3 || !has_token(tail[2], "cpu")))
      continue;
    Mount m{unescape(head[3]), unescape(head[4])};
    const bool inside = m.root == "/" || path == m.root ||
                        (path.size() > m.root.size() && path.compare(0, m.root.size(), m.root) == 0 &&
                         path[m.root.size()] == '/');
    if (!inside) continue;
    out = m;
    return true;
  }
  return false;
}

// The smallest quota from the process's cgroup (`path` in the hierarchy) up to the mount's root.
void walk_up(const Mount& m, const std::string& path, bool v2, CpuQuota& best) {
  std::string rel = m.root == "/" ? path : path.substr(m.root.size());  // below the mount point
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  for (;;) {
    const std::string dir = m.point + rel;
    int64_t q = 0, p = 0;
    std::string a, b;
    const bool found = v2 ? read_text(dir + "/cpu.max", a) && parse_cpu_max(a, q, p)
                          : read_text(dir + "/cpu.cfs_quota_us", a) &&
                                read_text(dir + "/cpu.cfs_period_us", b) && parse_cfs(a, b, q, p);
    // q/p < best.q/best.p, in integers (quota and period are at most ~2^40 us: no overflow).
    if (found && (!best.limited() ||
                  static_cast<__int128>(q) * best.period_us < static_cast<__int128>(best.quota_us) * p)) {
      best.quota_us = q;
      best.period_us = p;
      best.dir = dir;
    }
    if (rel.empty()) break;
    rel.erase(rel.rfind('/'));
  }
}

}  // namespace

int CpuQuota::threads() const {
  if (!limited()) return 0;
  const int64_t n = (quota_us + period_us - 1) / period_us;
  return n < 1 ? 1 : (n > (1 << 20) ? (1 << 20) : static_cast<int>(n));
}

bool parse_cpu_max(const std::string& text, int64_t& quota_us, int64_t& period_us) {
  std::istringstream in(text);
  std::string q, p, rest;
  if (!(in >> q >> p) || (in >> rest)) return false;
  int64_t qv = 0, pv = 0;
  if (q == "max" || !parse_int(q, qv) || !parse_int(p, pv) || qv <= 0 || pv <= 0) return false;
  quota_us = qv;
  period_us = pv;
  return true;
}

bool parse_cfs(const std::string& quota_text, const std::string& period_text, int64_t& quota_us,
               int64_t& period_us) {
  int64_t qv = 0, pv = 0;
  // -1: no quota.
  if (!parse_int(quota_text, qv) || !parse_int(period_text, pv) || qv <= 0 || pv <= 0) return false;
  quota_us = qv;
  period_us = pv;
  return true;
}

CpuQuota find_cpu_quota(const std::string& proc_cgroup, const std::string& mountinfo) {
  CpuQuota best;
  for (const std::string& line : split(proc_cgroup, '\n')) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const bool v2 = id == "0" && controllers.empty();
    if ((!v2 && !has_token(controllers, "cpu")) || path.empty() || path[0] != '/') continue;
    Mount m;
    if (find_mount(mountinfo, v2, path, m)) walk_up(m, path, v2, best);
  }
  return best;
}

CpuQuota process_cpu_quota() {
  std::string cgroup, mountinfo;
  if (!read_text("/proc/self/cgroup", cgroup) || !read_text("/proc/self/mountinfo", mountinfo)) return {};
  return find_cpu_quota(cgroup, mountinfo);
}

}  // namespace oar_cpu
