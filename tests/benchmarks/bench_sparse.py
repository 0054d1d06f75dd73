"""Embedding(sparse=True) against sparse=False, and sparse.matmul against a dense matmul, side by side in
one run on the CPU. Not a test.

    python tests/benchmarks/bench_sparse.py [--rows 200000] [--dim 64] [--batch 512]

A training step is forward (lookup of batch ids), backward and optimizer.step() + clear_grad(); it reports
milliseconds per step (median of 20 after 3 warm-ups) for SGD, Adam (dense update) and Adam(lazy_mode=True).
"""
import argparse
import statistics
import time

import numpy as np

import oar


def _step_ms(sparse, make_opt, rows, dim, batch, steps=20):
    oar.seed(0)
    emb = oar.nn.Embedding(rows, dim, sparse=sparse)
    opt = make_opt(emb.parameters())
    rng = np.random.default_rng(0)
    ids = [oar.to_tensor(rng.integers(0, rows, size=batch)) for _ in range(steps + 3)]
    times = []
    for i, x in enumerate(ids):
        t0 = time.perf_counter()
        emb(x).sum().backward()
        opt.step()
        opt.clear_grad()
        emb.weight[:1].numpy()  # the update has finished
        if i >= 3:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _matmul_ms(m, k, n, density, reps=20):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype("float32")
    a[rng.random((m, k)) > density] = 0
    dense, y = oar.to_tensor(a), oar.to_tensor(rng.standard_normal((k, n)).astype("float32"))
    coo = dense.to_sparse_coo(2)
    out = {}
    for name, fn in (("dense matmul", lambda: oar.matmul(dense, y)), ("sparse.matmul", lambda: oar.sparse.matmul(coo, y))):
        fn()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn().numpy()
            t.append((time.perf_counter() - t0) * 1e3)
        out[name] = statistics.median(t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--batch", type=int, default=512)
    a = ap.parse_args()
    opts = {"SGD": lambda ps: oar.optimizer.SGD(0.1, parameters=ps),
            "Adam": lambda ps: oar.optimizer.Adam(0.01, parameters=ps),
            "Adam lazy_mode": lambda ps: oar.optimizer.Adam(0.01, parameters=ps, lazy_mode=True)}
    print("Embedding({}, {}), batch {} ids: ms per training step".format(a.rows, a.dim, a.batch))
    for name, make in opts.items():
        d = _step_ms(False, make, a.rows, a.dim, a.batch)
        s = _step_ms(True, make, a.rows, a.dim, a.batch)
        print("  {:15s} sparse=False {:8.2f}   sparse=True {:8.2f}".format(name, d, s))
    for density in (0.01, 0.1):
        r = _matmul_ms(2048, 2048, 64, density)
        print("[2048, 2048] (density {}) @ [2048, 64]: ".format(density)
              + ", ".join("{} {:.2f} ms".format(k, v) for k, v in r.items()))


if __name__ == "__main__":
    main()
