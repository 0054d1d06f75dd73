"""Cost of oar.distributed's cross-rank call check (OAR_DISTRIBUTED_CHECK, decision 63): two processes on
the cpu device, synchronous all_reduce of 1 and of 262144 float32 (1 MiB), with the check off (0), on every
call (1) and at its default (auto: calls 1, 2, 4, 8, ... of each group). Not a test.

    python tests/benchmarks/bench_collective_check.py [--iters 100] [--rounds 5]

It also times the store operations a compared call makes with two ranks (set, wait, get, delete: the
"store ops" line, microseconds for the four). Each round makes one fresh group per mode (the mode is read when a group is made) and times `iters` calls
on it, the modes interleaved so that a machine's changing load hits them alike; rank 0 prints the median
over the rounds, in microseconds per call.
"""
import argparse
import os
import statistics
import time

import numpy as np

import oar
import oar.distributed as dist

_MODES = ("0", "1", "auto")


def _worker(iters, rounds, results):
    dist.init_parallel_env()
    times = {}
    for _ in range(rounds):
        for n in (1, 262144):
            t = oar.to_tensor(np.ones(n, dtype="float32"))
            for mode in _MODES:
                os.environ["OAR_DISTRIBUTED_CHECK"] = mode
                g = dist.new_group([0, 1])
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    dist.all_reduce(t, group=g)
                times.setdefault((mode, n), []).append((time.perf_counter() - t0) / iters * 1e6)
                dist.destroy_process_group(g)
    # What a compared call adds: one set, one wait + get per peer, one delete on the store (rank 0 hosts it).
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), False, 2, 60,
                          wait_for_workers=False)
    key = f"bench/{dist.get_rank()}"
    t0 = time.perf_counter()
    for _ in range(iters * rounds):
        store.set(key, b"all_reduce of float32 [1] (op sum)")
        store.wait([key], 60)
        store.get(key)
        store.delete_key(key)
    times[("store-ops", 4)] = [(time.perf_counter() - t0) / (iters * rounds) * 1e6]
    if dist.get_rank() == 0:
        with open(results, "w") as f:
            for (mode, n), v in times.items():
                f.write(f"{mode} {n} {statistics.median(v):.0f} {min(v):.0f} {max(v):.0f}\n")
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    oar.set_device("cpu")
    results = f"/tmp/oar_bench_check_{os.getpid()}.txt"
    dist.spawn(_worker, args=(args.iters, args.rounds, results), nprocs=2)
    print("check  elements  us/call (median, min, max over rounds)")
    with open(results) as f:
        for line in f:
            mode, n, med, lo, hi = line.split()
            if mode == "store-ops":
                print(f"store ops of one compared call (2 ranks): {med} us")
            else:
                print(f"{mode:>5}  {n:>8}  {med:>7} {lo:>7} {hi:>7}")
    os.unlink(results)


if __name__ == "__main__":
    main()
