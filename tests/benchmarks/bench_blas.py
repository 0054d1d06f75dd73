"""BLAS/LAPACK/sort benchmark: oar vs numpy (numpy's own OpenBLAS), side by side in one run.

float64 matmul 512/1024/2048, inverse and solve 512/1024, int64 matmul, sort/argsort of 1M float64,
float32 and int64 values and of [10000, 16] rows, topk of [10000, 16] rows. numpy and oar run alternately,
each after a pause that lets the other's BLAS threads sleep, and the best time of each is kept (the machine is
shared and noisy).
Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_blas.py [--quick]
Not a test and not part of CI. Both get the same thread count (OAR_BENCH_THREADS, default 2).
"""
import os

_THREADS = os.environ.get("OAR_BENCH_THREADS", "2")
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402


# numpy's OpenBLAS (pthreads) keeps its worker threads spinning for ~0.1 s after a call; run at once, the next
# oar call shared the cores with them and float64 matmul measured 0.5x numpy (16 ms alone, 30 ms right after
# numpy). Each call therefore starts after the other's threads have gone to sleep.
SETTLE_S = 0.25


def best_ms_pair(f, g, repeat):
    """Best times of f and g, run alternately (so both see the same load on a shared machine)."""
    f(), g()
    tf, tg = [], []
    for _ in range(repeat):
        time.sleep(SETTLE_S)
        tf.append(timeit.timeit(f, number=1))
        time.sleep(SETTLE_S)
        tg.append(timeit.timeit(g, number=1))
    return min(tf) * 1e3, min(tg) * 1e3


def main():
    quick = "--quick" in sys.argv
    rng = np.random.default_rng(0)
    rows = []

    def pair(name, np_fn, oar_fn, check, repeat=9):
        print("  running " + name, file=sys.stderr, flush=True)
        check(np.asarray(np_fn()), oar_fn().numpy())
        rows.append((name,) + best_ms_pair(np_fn, oar_fn, repeat))

    def close(a, b):
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-8)

    def equal(a, b):
        np.testing.assert_array_equal(b, a)

    for n in (512, 1024) if quick else (512, 1024, 2048):
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        oa, ob = oar.to_tensor(a), oar.to_tensor(b)
        pair("matmul f64 {}".format(n), lambda: a @ b, lambda: oar.matmul(oa, ob),
             lambda x, y: np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-9 * n), repeat=3 if n > 1024 else 7)
    for n in (512, 1024):
        a = rng.standard_normal((n, n)) + n * np.eye(n)
        b = rng.standard_normal((n, 16))
        oa, ob = oar.to_tensor(a), oar.to_tensor(b)
        pair("inverse f64 {}".format(n), lambda: np.linalg.inv(a), lambda: oar.linalg.inv(oa), close)
        pair("solve f64 {} (16 rhs)".format(n), lambda: np.linalg.solve(a, b), lambda: oar.linalg.solve(oa, ob), close)
    a, b = rng.integers(-100, 100, (512, 512)), rng.integers(-100, 100, (512, 512))
    oa, ob = oar.to_tensor(a), oar.to_tensor(b)
    pair("matmul int64 512", lambda: a @ b, lambda: oar.matmul(oa, ob), equal, repeat=5)
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    oa32, ob32 = oar.to_tensor(a32), oar.to_tensor(b32)
    pair("matmul int32 512", lambda: a32 @ b32, lambda: oar.matmul(oa32, ob32), equal, repeat=5)
    for dtype in ("float64", "float32"):
        x = rng.standard_normal(1 << 20).astype(dtype)
        ox = oar.to_tensor(x)
        pair("sort 1M " + dtype, lambda: np.sort(x), lambda: oar.sort(ox), equal)
        pair("argsort 1M " + dtype, lambda: np.argsort(x, kind="stable"), lambda: oar.argsort(ox), equal)
        pair("argsort 1M {} (np default)".format(dtype), lambda: np.argsort(x), lambda: oar.argsort(ox), lambda p, q: None)
    xi = rng.integers(-(1 << 40), 1 << 40, 1 << 20)
    oxi = oar.to_tensor(xi)
    pair("sort 1M int64", lambda: np.sort(xi), lambda: oar.sort(oxi), equal)
    pair("argsort 1M int64", lambda: np.argsort(xi, kind="stable"), lambda: oar.argsort(oxi), equal)
    r = rng.standard_normal((10000, 16))
    orr = oar.to_tensor(r)
    pair("sort [10000,16] f64", lambda: np.sort(r, -1), lambda: oar.sort(orr, -1), equal)
    pair("argsort [10000,16] f64", lambda: np.argsort(r, -1, kind="stable"), lambda: oar.argsort(orr, -1), equal)
    ri = rng.integers(0, 1000, (10000, 16)).astype(np.int32)
    ori = oar.to_tensor(ri)
    pair("argsort [10000,16] i32", lambda: np.argsort(ri, -1, kind="stable"), lambda: oar.argsort(ori, -1), equal)
    pair("topk 4 of [10000,16] f64", lambda: -np.sort(-r, -1)[:, :4], lambda: oar.topk(orr, 4)[0], equal)

    print("{} threads; time in ms (best of runs, numpy and oar alternating); ratio = numpy time / oar time "
          "(>1: oar faster)".format(_THREADS))
    print("  numpy's sort and default argsort are unstable AVX-512 sorts (np.sort returns no positions); "
          "oar's sort always returns positions and is stable")
    print("  {:<26} {:>9} {:>9} {:>7}".format("case", "numpy", "oar", "ratio"))
    for name, t_np, t_oar in rows:
        print("  {:<26} {:>9.2f} {:>9.2f} {:>7.2f}".format(name, t_np, t_oar, t_np / t_oar))


if __name__ == "__main__":
    main()
