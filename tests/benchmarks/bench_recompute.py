"""Memory and time of fleet.utils.recompute against the plain run: a stack of Linear-ReLU-Dropout-Linear
blocks, one forward + backward, peak bytes of the cpu allocator above the live parameters and input
(oar._C.max_memory_allocated), and the wall time. Not a test.

    python tests/benchmarks/bench_recompute.py [--blocks 8] [--width 512] [--batch 512] [--device cpu]
"""
import argparse
import time

import oar
from oar.distributed.fleet.utils import recompute


def run(blocks, x, use_recompute, device):
    oar.seed(1)
    for b in blocks:
        b.clear_gradients()
    oar._C.synchronize(device)
    base = oar._C.memory_allocated(device)
    oar._C.reset_max_memory_allocated(device)
    t0 = time.perf_counter()
    h = x
    for b in blocks:
        h = recompute(b, h) if use_recompute else b(h)
    h.mean().backward()
    oar._C.synchronize(device)
    return oar._C.max_memory_allocated(device) - base, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    oar.set_device(a.device)
    device = oar.get_device()
    blocks = [oar.nn.Sequential(oar.nn.Linear(a.width, a.width), oar.nn.ReLU(), oar.nn.Dropout(0.1),
                                oar.nn.Linear(a.width, a.width)) for _ in range(a.blocks)]
    x = oar.randn([a.batch, a.width])
    x.stop_gradient = False
    run(blocks, x, False, device)  # warm-up (first-touch allocations, kernel caches)
    act = a.batch * a.width * 4 / 2**20
    print(f"{a.blocks} blocks, width {a.width}, batch {a.batch} on {device}: one activation {act:.1f} MiB")
    for use in (False, True):
        peak, secs = run(blocks, x, use, device)
        print(f"  {'recompute' if use else 'plain    '}: peak above parameters {peak / 2**20:8.1f} MiB, "
              f"forward+backward {secs * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
