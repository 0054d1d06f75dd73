"""MLP training steps while other processes take CPU time: how a step degrades under contention, for
several OpenMP thread policies (issue 20: a step should degrade in proportion, not by 50x).

    python3 tests/benchmarks/bench_contention.py [--steps 300] [--runs 3] [--burners 0,1,2]
        [--policies default,spin=10000,passive,threads=1,oar] [--torch] [--cgroup-cpus Q]

Each (policy, burners) cell runs in a fresh process (libgomp reads its environment once, when it loads):
  default    libgomp's own wait policy (its default spin before sleeping), all cores, no adaptation
  spin=N     GOMP_SPINCOUNT=N, all cores, no adaptation (oar's default before decision 128 was 10000)
  passive    OMP_WAIT_POLICY=PASSIVE (threads sleep at once at every barrier), no adaptation
  threads=N  OMP_NUM_THREADS=N (a fixed count: oar then adapts nothing)
  oar        what oar does when the user set nothing (docs/python.md: the spin count of decision 84 and
             the thread count adapted to the load of decision 128)
A burner is a separate process spinning on one core for the whole cell. Prints the median and 90th
percentile step time per cell and run, the cells of one run interleaved (policies next to each other in
time), then the median over the runs; and the 1-minute load average at the start of each run (the
machine may be shared: compare the rows of one run only).

--cgroup-cpus Q runs every cell inside a fresh cgroup (v1 cpu controller, made under its mount and removed
at the end; needs root) with a CPU quota of Q CPUs, as `docker run --cpus=Q` does (decision 129), and
prints the mean step time too (the throughput: under a quota most steps run at full speed and one per
period waits for the next). The cgroup gets the largest cpu.shares, so that other sessions' processes on
this shared machine do not take its cores: the cell sees what a container on a host with free cores sees,
the quota being its only limit (it still takes at most Q CPUs from the others). In a 1-CPU cgroup on this
2-core machine, threads=2 is what oar did before it read the quota (the affinity mask's 2 cores; the load
adaptation sees no other process), and oar is the quota-aware default:

    python3 tests/benchmarks/bench_contention.py --cgroup-cpus 1 --burners 0 --policies threads=2,oar
"""
import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import numpy as np
import oar
nn = oar.nn
oar.seed(0)
net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=net.parameters())
x = oar.to_tensor(np.random.RandomState(0).rand(128, 784).astype("float32"))
y = oar.to_tensor(np.random.RandomState(1).randint(0, 10, (128,)).astype("int64"))
def step():
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward(); opt.step(); opt.clear_grad()
    return float(loss)
for _ in range(20): step()
times = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print(json.dumps(times))
"""

TORCH_CHILD = r"""
import json, sys, time
import torch
nn = torch.nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.rand(128, 784); y = torch.randint(0, 10, (128,))
def step():
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward(); opt.step(); opt.zero_grad()
    return float(loss)
for _ in range(20): step()
times = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def burn(stop):
    while not stop.is_set():
        for _ in range(100000):
            pass


def cpu_cgroup_mount():
    """The mount point of the cgroup v1 hierarchy with the cpu controller (showing its root), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            head, _, tail = line.partition(" - ")
            h, t = head.split(), tail.split()
            if len(h) >= 5 and len(t) >= 3 and t[0] == "cgroup" and "cpu" in t[2].split(",") and h[3] == "/":
                return h[4]
    return None


def make_cgroup(cpus):
    """A new cgroup with a quota of `cpus` CPUs (100 ms periods); its folder."""
    mount = cpu_cgroup_mount()
    if mount is None:
        raise SystemExit("--cgroup-cpus: no cgroup v1 hierarchy with the cpu controller is mounted")
    d = os.path.join(mount, f"oar_bench_{os.getpid()}")
    os.mkdir(d)
    for name, value in (("cpu.cfs_period_us", 100000), ("cpu.cfs_quota_us", round(cpus * 100000)),
                        ("cpu.shares", 262144)):
        with open(os.path.join(d, name), "w") as f:
            f.write(str(value))
    return d


def run_cell(code, env, steps, burners, cgroup=None):
    cmd = [sys.executable, "-c", code, str(steps)]
    if cgroup:  # the shell joins the cgroup, then becomes Python
        cmd = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(cgroup, "cgroup.procs")] + cmd
    stop = mp.Event()
    procs = [mp.Process(target=burn, args=(stop,), daemon=True) for _ in range(burners)]
    for p in procs:
        p.start()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        stop.set()
        for p in procs:
            p.join()
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    times = json.loads(out.stdout.strip().splitlines()[-1])
    times.sort()
    return statistics.fmean(times) * 1e3, statistics.median(times) * 1e3, times[int(0.9 * (len(times) - 1))] * 1e3


def policy_env(policy):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OAR_OMP_SPINCOUNT", "OAR_OMP_ADAPT"):
        env.pop(k, None)
    if policy == "default":
        env["OAR_OMP_SPINCOUNT"] = "keep"  # oar leaves libgomp's default alone
        env["OAR_OMP_ADAPT"] = "0"
    elif policy == "passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        env["OAR_OMP_ADAPT"] = "0"
    elif policy.startswith("spin="):
        env["GOMP_SPINCOUNT"] = policy.split("=", 1)[1]
        env["OAR_OMP_ADAPT"] = "0"
    elif policy.startswith("threads="):
        env["OMP_NUM_THREADS"] = policy.split("=", 1)[1]
    elif policy != "oar":
        raise SystemExit(f"unknown policy {policy!r}")
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burners", default="0,1,2")
    ap.add_argument("--policies", default="default,spin=10000,passive,threads=1,oar")
    ap.add_argument("--torch", action="store_true", help="also PyTorch's MLP (its own OpenMP) in the same run")
    ap.add_argument("--cgroup-cpus", type=float, default=0, help="run each cell in a cgroup with this CPU quota")
    args = ap.parse_args()
    cgroup = make_cgroup(args.cgroup_cpus) if args.cgroup_cpus > 0 else None
    try:
        measure(args, cgroup)
    finally:
        if cgroup:
            os.rmdir(cgroup)


def measure(args, cgroup):
    burners = [int(b) for b in args.burners.split(",")]
    rows = [(p, CHILD, policy_env(p)) for p in args.policies.split(",")]
    if args.torch:
        rows.append(("torch", TORCH_CHILD, dict(os.environ)))
    # Under a quota most steps run at full speed and one in a period waits for the next: the mean is the
    # throughput, which the median and p90 can hide.
    stats = (0, 1, 2) if cgroup else (1, 2)
    show = lambda cell: " / ".join(f"{cell[i]:7.2f}" for i in stats).rjust(28)  # noqa: E731
    print(f"{os.cpu_count()} cpus; MLP 784-512-512-10, batch 128, Adam; step time ms (" +
          ("mean / median / p90" if cgroup else "median / p90") + ")" +
          (f"; in a cgroup with a {args.cgroup_cpus:g}-CPU quota" if cgroup else ""))
    header = "policy".ljust(14) + "".join(f"{b} burner(s)".rjust(28) for b in burners)
    results = {}  # (policy, burners) -> [(mean, median, p90) per run]
    for r in range(args.runs):
        print(f"run {r + 1}/{args.runs}, load average {os.getloadavg()[0]:.2f}")
        print(header)
        cells = {}
        for b in burners:  # interleaved: each burner count runs every policy back to back
            for name, code, env in rows:
                cells[name, b] = run_cell(code, env, args.steps, b, cgroup)
                results.setdefault((name, b), []).append(cells[name, b])
        for name, _, _ in rows:
            print(name.ljust(14) + "".join(show(cells[name, b]) for b in burners), flush=True)
    print(f"median over {args.runs} runs, load average now {os.getloadavg()[0]:.2f}")
    print(header)
    for name, _, _ in rows:
        line = name.ljust(14)
        for b in burners:
            line += show([statistics.median(cell[i] for cell in results[name, b]) for i in range(3)])
        print(line)


if __name__ == "__main__":
    main()
