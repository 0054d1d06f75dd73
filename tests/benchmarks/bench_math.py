"""Math-family kernels against numpy and torch on the CPU: cumsum and atan2 over 16M float32.

Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_math.py
Not a test and not part of CI. torch is skipped when it cannot be imported.
"""
import os

# The same thread count for every framework (set before any of them is imported).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402

N = 16 * 1024 * 1024


def best_ms(fn, number=3, repeat=5):
    fn()  # warm up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, N).astype(np.float32)
    b = rng.uniform(-1, 1, N).astype(np.float32)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    try:
        import torch
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        pa, pb = torch.from_numpy(a), torch.from_numpy(b)
    except ImportError:
        torch = None

    # Correctness once (float32 sums drift differently per accumulation order, so a loose check).
    np.testing.assert_allclose(oar.cumsum(ta, 0).numpy()[-1000:], np.cumsum(a.astype(np.float64))[-1000:],
                               rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(oar.atan2(ta, tb).numpy(), np.arctan2(a, b), rtol=1e-5, atol=1e-6)

    rows = [
        ("cumsum 16M float32", lambda: oar.cumsum(ta, 0), lambda: np.cumsum(a),
         (lambda: torch.cumsum(pa, 0)) if torch else None),
        ("cumsum [4096, 4096] axis 0", lambda: oar.cumsum(ta.reshape([4096, 4096]), 0),
         lambda: np.cumsum(a.reshape(4096, 4096), 0),
         (lambda: torch.cumsum(pa.view(4096, 4096), 0)) if torch else None),
        ("atan2 16M float32", lambda: oar.atan2(ta, tb), lambda: np.arctan2(a, b),
         (lambda: torch.atan2(pa, pb)) if torch else None),
    ]
    print("threads: {} (OMP_NUM_THREADS)".format(os.environ["OMP_NUM_THREADS"]))
    print("{:<30} {:>10} {:>10} {:>10}".format("op", "oar ms", "numpy ms", "torch ms"))
    for name, fo, fn, ft in rows:
        t_o, t_n = best_ms(fo), best_ms(fn)
        t_t = best_ms(ft) if ft else float("nan")
        print("{:<30} {:>10.1f} {:>10.1f} {:>10.1f}".format(name, t_o, t_n, t_t))


if __name__ == "__main__":
    main()
