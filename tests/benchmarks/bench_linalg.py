"""Linear algebra benchmark: oar vs numpy vs torch (CPU), on 32 x 256 x 256 float64.

inverse and solve (LAPACK in all three) and einsum 'bij,bjk->bik' (a batched matmul).
Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_linalg.py
Not a test and not part of CI. Every framework gets the same thread count (OAR_BENCH_THREADS, default 2).
"""
import os

_THREADS = os.environ.get("OAR_BENCH_THREADS", "2")
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import sys  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

B, N, K = 32, 256, 16


def best_ms(fn, number=3, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((B, N, N)) + N * np.eye(N)
    b = rng.standard_normal((B, N, K))
    c = rng.standard_normal((B, N, N))
    ref_inv, ref_solve, ref_ein = np.linalg.inv(a), np.linalg.solve(a, b), np.einsum("bij,bjk->bik", a, c)
    rows = []

    def add(name, label, fn, to_np, ref):
        print("  running {} ({})".format(name, label), file=sys.stderr, flush=True)
        np.testing.assert_allclose(to_np(fn()), ref, rtol=1e-8, atol=1e-8)
        rows.append((name, label, best_ms(fn)))

    add("inverse", "numpy", lambda: np.linalg.inv(a), lambda r: r, ref_inv)
    add("solve", "numpy", lambda: np.linalg.solve(a, b), lambda r: r, ref_solve)
    add("einsum", "numpy", lambda: np.einsum("bij,bjk->bik", a, c, optimize=True), lambda r: r, ref_ein)
    try:
        import torch

        # Threads come from OMP_NUM_THREADS: torch.set_num_threads(2) makes this torch build's MKL
        # getrf fail ("Parameter 6 was incorrect on entry to DLASWP").
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        add("inverse", "torch", lambda: torch.linalg.inv(ta), lambda r: r.numpy(), ref_inv)
        add("solve", "torch", lambda: torch.linalg.solve(ta, tb), lambda r: r.numpy(), ref_solve)
        add("einsum", "torch", lambda: torch.einsum("bij,bjk->bik", ta, tc), lambda r: r.numpy(), ref_ein)
    except ImportError:
        pass
    import oar

    oa, ob, oc = oar.to_tensor(a), oar.to_tensor(b), oar.to_tensor(c)
    add("inverse", "oar", lambda: oar.linalg.inv(oa), lambda r: r.numpy(), ref_inv)
    add("solve", "oar", lambda: oar.linalg.solve(oa, ob), lambda r: r.numpy(), ref_solve)
    add("einsum", "oar", lambda: oar.einsum("bij,bjk->bik", oa, oc), lambda r: r.numpy(), ref_ein)

    print("float64, batch {}, {}x{} (solve: {} right-hand sides), {} threads".format(B, N, N, K, _THREADS))
    for op in ("inverse", "solve", "einsum"):
        print("  " + op + ": " + ", ".join("{} {:.2f} ms".format(lab, ms) for name, lab, ms in rows if name == op))


if __name__ == "__main__":
    main()
