"""Manip-family benchmarks: sort of 1M float32, gather (index_select rows), take_along_axis and
advanced indexing, oar vs numpy vs torch (CPU, 2 threads).

Run by hand: PYTHONPATH=<oar install> python3 tests/benchmarks/bench_manip.py
Not a test and not part of CI. torch is skipped when it cannot be imported.
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(2)
except ImportError:
    torch = None


def ms(fn, number=3, repeat=9):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main():
    rng = np.random.default_rng(0)
    rows = []

    a = rng.standard_normal(1 << 20).astype(np.float32)
    ta = oar.to_tensor(a)
    np.testing.assert_array_equal(oar.sort(ta).numpy(), np.sort(a))
    r = ["sort 1M float32", ms(lambda: oar.sort(ta)), ms(lambda: np.sort(a))]
    if torch is not None:
        pa = torch.from_numpy(a)
        r.append(ms(lambda: torch.sort(pa)))
    rows.append(r)

    r = ["argsort 1M float32 (stable)", ms(lambda: oar.argsort(ta)), ms(lambda: np.argsort(a, kind="stable"))]
    if torch is not None:
        r.append(ms(lambda: torch.sort(pa, stable=True)))
    rows.append(r)

    x = rng.standard_normal((4096, 256)).astype(np.float32)
    idx = rng.integers(0, 4096, 4096)
    tx, ti = oar.to_tensor(x), oar.to_tensor(idx)
    np.testing.assert_array_equal(oar.gather(tx, ti).numpy(), x[idx])
    r = ["gather rows 4096x256[4096]", ms(lambda: oar.gather(tx, ti), 3), ms(lambda: x[idx], 3)]
    if torch is not None:
        px, pi = torch.from_numpy(x), torch.from_numpy(idx)
        r.append(ms(lambda: torch.index_select(px, 0, pi), 3))
    rows.append(r)

    ix = rng.integers(0, 256, (4096, 64))
    tix = oar.to_tensor(ix)
    np.testing.assert_array_equal(oar.take_along_axis(tx, tix, 1).numpy(), np.take_along_axis(x, ix, 1))
    r = ["take_along_axis 4096x256 -> 4096x64", ms(lambda: oar.take_along_axis(tx, tix, 1), 3),
         ms(lambda: np.take_along_axis(x, ix, 1), 3)]
    if torch is not None:
        pix = torch.from_numpy(ix)
        r.append(ms(lambda: torch.gather(px, 1, pix), 3))
    rows.append(r)

    pads = [2, 2, 2, 2]
    x4 = x[None, None]
    t4 = oar.to_tensor(x4)
    r = ["pad reflect 4096x256 by 2", ms(lambda: oar.pad(t4, pads, mode="reflect")),
         ms(lambda: np.pad(x4, [(0, 0), (0, 0), (2, 2), (2, 2)], "reflect"))]
    if torch is not None:
        p4 = torch.from_numpy(x4)
        r.append(ms(lambda: torch.nn.functional.pad(p4, pads, mode="reflect")))
    rows.append(r)

    r = ["topk k=10 of 4096x256 rows", ms(lambda: oar.topk(tx, 10)), ms(lambda: np.argpartition(-x, 10, 1))]
    if torch is not None:
        r.append(ms(lambda: torch.topk(px, 10)))
    rows.append(r)

    r = ["x[idx] advanced getitem", ms(lambda: tx[ti], 3), ms(lambda: x[idx], 3)]
    if torch is not None:
        r.append(ms(lambda: px[pi], 3))
    rows.append(r)

    hdr = ["op", "oar ms", "numpy ms"] + (["torch ms"] if torch is not None else [])
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for r in rows:
        print("| " + r[0] + " | " + " | ".join("{:.3f}".format(v) for v in r[1:]) + " |")


if __name__ == "__main__":
    main()
