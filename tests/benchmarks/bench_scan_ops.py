"""The ops that replaced Python compositions (issue 19, item 9), against those compositions: logsumexp,
cummax, p_norm and segment_sum, forward and forward+backward, float32 on the cpu. Not a test.

    python tests/benchmarks/bench_scan_ops.py [--repeat 20]
"""
import argparse
import time

import numpy as np

import oar


def lse_composition(x, axis):  # oar's logsumexp before it became an op
    m = oar.max(x, axis, keepdim=True).detach()
    m = oar.where(oar.isfinite(m), m, oar.zeros_like(m))
    return (oar.log(oar.sum(oar.exp(x - m), axis, keepdim=True)) + m).squeeze(axis)


def cummax_composition(x, axis):  # a running max without the op: log2(n) shifted maxima (values only)
    n, out, step = x.shape[axis], x, 1
    while step < n:
        pad = oar.full_like(oar.slice(out, [axis], [0], [step]), -np.inf)
        out = oar.maximum(out, oar.concat([pad, oar.slice(out, [axis], [0], [n - step])], axis))
        step *= 2
    return out


def segment_sum_composition(x, ids, n):  # one-hot matmul, a common workaround
    onehot = (ids.unsqueeze(0) == oar.arange(n).unsqueeze(1)).astype(x.dtype)
    return oar.matmul(onehot, x)


def norm2_composition(x, axis):  # linalg.norm(p=2) before the p_norm op
    return oar.sqrt(oar.sum(x * x, axis))


def timeit(fn, repeat):
    fn()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((512, 2048)).astype(np.float32), stop_gradient=False)
    ids = oar.to_tensor(np.sort(rng.integers(0, 256, 512)))

    def fb(f):
        def run():
            y = f()
            (y[0] if isinstance(y, tuple) else y).sum().backward()
            x.clear_gradient()
        return run

    cases = [
        ("logsumexp axis -1", lambda: oar.logsumexp(x, -1), lambda: lse_composition(x, -1)),
        ("logsumexp axis 0", lambda: oar.logsumexp(x, 0), lambda: lse_composition(x, 0)),
        ("cummax axis -1", lambda: oar.cummax(x, -1)[0], lambda: cummax_composition(x, 1)),
        ("norm p=2 axis -1", lambda: oar.linalg.norm(x, 2, axis=-1), lambda: norm2_composition(x, -1)),
        ("segment_sum", lambda: oar.geometric.segment_sum(x, ids), lambda: segment_sum_composition(x, ids, 256)),
    ]
    print("{:<20} {:>10} {:>12} {:>12} {:>14}".format("[512, 2048] f32", "op ms", "compos. ms", "op fwd+bwd", "compos. f+b"))
    for name, op, comp in cases:
        print("{:<20} {:>10.2f} {:>12.2f} {:>12.2f} {:>14.2f}".format(
            name, timeit(op, a.repeat), timeit(comp, a.repeat), timeit(fb(op), a.repeat), timeit(fb(comp), a.repeat)))
    big = oar.to_tensor(np.array([[1e4, 1e4 - 1, -1e4]], np.float32))
    print("accuracy: logsumexp op", oar.logsumexp(big, 1).item(), "composition", lse_composition(big, 1).item(),
          "exact", 1e4 + np.log1p(np.exp(-1.0)))


if __name__ == "__main__":
    main()
