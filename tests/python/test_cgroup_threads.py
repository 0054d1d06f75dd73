"""The cpu plugin's default OpenMP thread count respects the cgroup CPU quota (decision 129): a child
process runs inside a real cgroup (v1 cpu controller) with a quota, and reports the count the plugin set
on its kernel-calling thread (from the same libgomp), the cpu device's compute_units and name, and the
doctor's line. Needs root and a writable cgroup v1 cpu hierarchy; skipped elsewhere, with the reason."""
import json
import os
import subprocess
import sys
import uuid

import pytest

CORES = len(os.sched_getaffinity(0))

# Runs kernels, then prints what the plugin chose; WORK=1: also the CPU ticks each thread spent on
# 256x256 matmuls (with one thread, the others do nothing).
CHILD = r"""
import ctypes, glob, json, os
import numpy as np
import oar
from oar import _C
from oar.utils import doctor
gomp = ctypes.CDLL("libgomp.so.1")  # already loaded by the cpu plugin: the same runtime
a = oar.to_tensor(np.random.rand(256, 256).astype("float32"))
c = oar.matmul(a, a)
out = {"count": gomp.omp_get_max_threads(), "cgroup": open("/proc/self/cgroup").read()}
p = _C.device_properties("cpu")
out["compute_units"], out["name"] = p["compute_units"], p["name"]
out["doctor"] = [l.strip() for l in doctor.report().splitlines() if l.strip().startswith("cpu:")]
def ticks():
    t = {}
    for f in glob.glob("/proc/self/task/*/stat"):
        v = open(f).read().rsplit(")", 1)[1].split()
        t[f.split("/")[4]] = int(v[11]) + int(v[12])
    return t
if os.environ.get("WORK") == "1":
    t0 = ticks()
    for _ in range(1000):
        c = oar.matmul(a, a)
    c.numpy()
    t1 = ticks()
    main = str(os.getpid())
    out["main_ticks"] = t1[main] - t0[main]
    out["other_ticks"] = sum(t1[k] - t0.get(k, 0) for k in t1 if k != main)
print(json.dumps(out))
"""


def _cpu_mount():
    """The mount point of the cgroup v1 hierarchy with the cpu controller (showing its root), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            head, _, tail = line.partition(" - ")
            h, t = head.split(), tail.split()
            if len(h) >= 5 and len(t) >= 3 and t[0] == "cgroup" and "cpu" in t[2].split(",") and h[3] == "/":
                return h[4]
    return None


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Cgroups:
    """Cgroups made under the cpu hierarchy's root for one test, removed afterwards (children first)."""

    def __init__(self):
        self.mount = _cpu_mount()
        self.made = []
        if CORES < 2:
            pytest.skip("one core: the quota cannot lower the count")
        if self.mount is None:
            pytest.skip("no cgroup v1 hierarchy with the cpu controller is mounted")
        try:
            self.root = self.make(self.mount, "oar_test_" + uuid.uuid4().hex[:8])
        except OSError as e:
            pytest.skip(f"cannot create a cgroup under {self.mount}: {e}")

    def make(self, parent, name, quota_us=-1, period_us=100000):
        d = os.path.join(parent, name)
        os.mkdir(d)
        self.made.append(d)
        _write(os.path.join(d, "cpu.cfs_period_us"), str(period_us))
        _write(os.path.join(d, "cpu.cfs_quota_us"), str(quota_us))
        return d

    def quota(self, d, quota_us, period_us=100000):
        _write(os.path.join(d, "cpu.cfs_period_us"), str(period_us))
        _write(os.path.join(d, "cpu.cfs_quota_us"), str(quota_us))

    def run(self, d, **env):
        """Runs CHILD inside cgroup `d` (the shell joins it before Python starts) and returns its report."""
        e = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OAR_OMP_ADAPT")}
        e.update(env)
        procs = os.path.join(d, "cgroup.procs")
        out = subprocess.run(["sh", "-c", 'echo $$ > "$1" && exec "$2" -c "$3"', "sh", procs, sys.executable, CHILD],
                             env=e, capture_output=True, text=True, timeout=600)
        if out.returncode != 0 and "cgroup.procs" in out.stderr:
            pytest.skip(f"cannot move a process into {d}: {out.stderr.strip()}")
        assert out.returncode == 0, out.stderr[-3000:]
        r = json.loads(out.stdout.splitlines()[-1])
        rel = d[len(self.mount):]
        assert any(l.split(":")[1].split(",").count("cpu") and l.split(":", 2)[2] == rel
                   for l in r["cgroup"].splitlines()), f"the child is not in {rel}: {r['cgroup']}"
        return r

    def close(self):
        for d in reversed(self.made):
            try:
                os.rmdir(d)
            except OSError:  # a process still inside: retry once it is gone
                subprocess.run(["sleep", "0.5"])
                os.rmdir(d)


@pytest.fixture
def cgroups():
    c = Cgroups()
    yield c
    c.close()


def _check(r, count, source):
    assert r["count"] == count, r
    assert r["compute_units"] == count, r
    want = f"cpu, OpenMP threads: {count} ({source}"
    assert r["name"].startswith(want), (r["name"], want)
    assert any(want in l for l in r["doctor"]), r["doctor"]


def test_one_cpu_quota_one_thread(cgroups):
    cgroups.quota(cgroups.root, 100000)
    r = cgroups.run(cgroups.root, WORK="1")  # the adaptation left on: the default path
    _check(r, 1, f"cgroup CPU quota 1.00 CPUs at {cgroups.root})")
    # The matmuls really ran on the calling thread alone.
    assert r["main_ticks"] >= 10, "enough work to see where it ran"
    assert r["other_ticks"] <= max(2, r["main_ticks"] // 10), r


def test_fractional_quota_rounds_up(cgroups):
    cgroups.quota(cgroups.root, 150000)  # 1.5 CPUs: 2 threads, capped by the cores
    r = cgroups.run(cgroups.root, OAR_OMP_ADAPT="0")  # no load-following: the count is the default
    quota = f"cgroup CPU quota 1.50 CPUs at {cgroups.root}"
    if CORES <= 2:
        _check(r, CORES, f"affinity mask; {quota})")
    else:
        _check(r, 2, quota + ")")
    # Another period: 50 ms quota per 20 ms period is 2.5 CPUs, 3 threads.
    cgroups.quota(cgroups.root, 50000, 20000)
    r = cgroups.run(cgroups.root, OAR_OMP_ADAPT="0")
    assert r["count"] == min(CORES, 3), r


def test_nested_cgroup_parent_quota_applies(cgroups):
    cgroups.quota(cgroups.root, 100000)  # 1 CPU on the parent
    inner = cgroups.make(cgroups.root, "inner")  # no quota of its own
    _check(cgroups.run(inner), 1, f"cgroup CPU quota 1.00 CPUs at {cgroups.root})")
    # A smaller quota further down wins (v1 refuses a child's quota above its parent's).
    cgroups.quota(cgroups.root, 300000)
    deeper = cgroups.make(inner, "deeper", quota_us=50000)
    _check(cgroups.run(deeper), 1, f"cgroup CPU quota 0.50 CPUs at {deeper})")


def test_no_quota_and_user_count(cgroups):
    # A cgroup without a quota (-1): the affinity mask's cores.
    _check(cgroups.run(cgroups.root, OAR_OMP_ADAPT="0"), CORES, "affinity mask)")
    # OMP_NUM_THREADS wins over the quota.
    cgroups.quota(cgroups.root, 100000)
    _check(cgroups.run(cgroups.root, OMP_NUM_THREADS=str(CORES)), CORES, f"OMP_NUM_THREADS={CORES})")
