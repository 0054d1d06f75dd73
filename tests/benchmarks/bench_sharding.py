"""Group sharding against replicated Adam, 2 cpu processes (Gloo): per rank, the optimizer state held, the
memory held between steps (parameters, kept gradients, state), the allocator's peak during a step above
what was live before it, and the step time. Not a test.

    python tests/benchmarks/bench_sharding.py [--layers 4] [--width 1024] [--batch 64] [--iters 10]

'replicated': every rank all-reduces the gradients (one flat buffer) and steps every parameter, what
DataParallel + Adam holds; 'os' and 'os_g': group_sharded_parallel's stage 1 and 2.
"""
import argparse
import gc
import time

import numpy as np

import oar
import oar.distributed as dist
from oar.distributed.sharding import group_sharded_parallel


def _state_bytes(opt):
    return sum(int(np.prod(t.shape)) * 4 for k, t in opt.state_dict().items() if k != "LR_Scheduler")


def _replicated_step(opt, params, world):
    grads = [p.grad for p in params]
    flat = oar.concat([g.reshape([-1]) for g in grads])
    dist.all_reduce(flat)
    flat.scale_(1.0 / world)
    off = 0
    for g in grads:
        n = int(np.prod(g.shape))
        oar._C._assign(g, flat[off:off + n].reshape(g.shape))
        off += n
    opt.step()


def _worker(layers, width, batch, iters):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = []
    for mode in ("replicated", "os", "os_g"):
        oar.seed(0)
        net = oar.nn.Sequential(*[oar.nn.Linear(width, width) for _ in range(layers)])
        opt = oar.optimizer.Adam(1e-3, parameters=net.parameters())
        if mode != "replicated":
            net, opt, _ = group_sharded_parallel(net, opt, mode)
        x = oar.randn([batch, width])
        times, peak, held = [], 0, 0
        for it in range(iters + 1):
            base = oar._C.memory_allocated("cpu")
            oar._C.reset_max_memory_allocated("cpu")
            t0 = time.perf_counter()
            net(x).mean().backward()
            if mode == "replicated":
                _replicated_step(opt, net.parameters(), world)
            else:
                opt.step()
            opt.clear_grad()
            dist.barrier()
            if it:  # the first step creates the accumulators
                times.append(time.perf_counter() - t0)
                peak = max(peak, oar._C.max_memory_allocated("cpu") - base)
                held = oar._C.memory_allocated("cpu")
        state = _state_bytes(opt)
        del net, opt, x
        gc.collect()  # the next mode starts from the same memory
        rows.append((mode, state, peak, held, float(np.median(times))))
    if rank == 0:
        params = layers * (width * width + width) * 4
        print(f"{layers} x Linear({width}), batch {batch}, {world} ranks: parameters {params / 2**20:.1f} MiB")
        for mode, state, peak, held, secs in rows:
            print(f"  {mode:10s}: optimizer state {state / 2**20:5.1f} MiB, held between steps {held / 2**20:5.1f} MiB, "
                  f"step peak above that {peak / 2**20:5.1f} MiB, step {secs * 1e3:7.1f} ms (median)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=10)
    a = ap.parse_args()
    oar.set_device("cpu")
    dist.spawn(_worker, args=(a.layers, a.width, a.batch, a.iters), nprocs=2)


if __name__ == "__main__":
    main()
