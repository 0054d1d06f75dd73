"""Kernels on strided views against the same kernels on contiguous tensors (and numpy, torch): partial
reductions of transposed / permuted views, matmul with a transposed operand.

Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_views.py [reduce|matmul]
Not a test and not part of CI. torch is skipped when it cannot be imported. Each row gives the view's time
and the time of the same op on contiguous tensors (the target), in process CPU time (one thread by
default: OMP_NUM_THREADS).
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402

try:
    import torch  # noqa: E402
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:
    torch = None


def best_us(fn, number=5, repeat=7):
    # CPU time of the process, best of `repeat`: with one thread it is the op's own time, while wall time
    # on the shared machine mostly measures the other jobs.
    fn()  # warm up
    return min(timeit.repeat(fn, timer=time.process_time, number=number, repeat=repeat)) / number * 1e6


def row(name, f_view, f_contig, f_np, f_torch):
    t = [best_us(f) if f else float("nan") for f in (f_view, f_contig, f_np, f_torch)]
    print("{:<40} {:>10.0f} {:>10.0f} {:>10.0f} {:>10.0f}".format(name, *t))


def header(what):
    print("{:<40} {:>10} {:>10} {:>10} {:>10}".format(what, "view us", "contig us", "numpy us", "torch us"))


def reductions():
    # "contig": the underlying contiguous tensor reduced over the corresponding memory axes (the target;
    # its output is the view's output, transposed when the kept axes change order).
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((64, 128, 128)).astype(np.float32)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    aT = ta.T
    bp = tb.transpose([2, 0, 1])  # [128, 64, 128]: view axes 0, 1, 2 are b's axes 2, 0, 1
    pa = torch.from_numpy(a) if torch else None
    pb = torch.from_numpy(b).permute(2, 0, 1) if torch else None
    header("reduction (float32)")
    row("x.T.sum(0)  [1024x1024]", lambda: aT.sum(0), lambda: ta.sum(1), lambda: a.T.sum(0),
        (lambda: pa.T.sum(0)) if torch else None)
    row("x.T.sum(1)  [1024x1024]", lambda: aT.sum(1), lambda: ta.sum(0), lambda: a.T.sum(1),
        (lambda: pa.T.sum(1)) if torch else None)
    row("x.T.max(0, keepdim)", lambda: aT.max(0, keepdim=True), lambda: ta.max(1, keepdim=True),
        lambda: a.T.max(0, keepdims=True), (lambda: pa.T.amax(0, keepdim=True)) if torch else None)
    row("x.T.mean(1)", lambda: aT.mean(1), lambda: ta.mean(0), lambda: a.T.mean(1),
        (lambda: pa.T.mean(1)) if torch else None)
    row("perm[2,0,1].sum(0)  [64,128,128]", lambda: bp.sum(0), lambda: tb.sum(2),
        lambda: b.transpose(2, 0, 1).sum(0), (lambda: pb.sum(0)) if torch else None)
    row("perm[2,0,1].sum([1,2])", lambda: bp.sum([1, 2]), lambda: tb.sum([0, 1]),
        lambda: b.transpose(2, 0, 1).sum((1, 2)), (lambda: pb.sum((1, 2))) if torch else None)
    row("perm[2,0,1].sum(1) (kept axes move)", lambda: bp.sum(1), lambda: tb.sum(0),
        lambda: b.transpose(2, 0, 1).sum(1), (lambda: pb.sum(1)) if torch else None)


def matmuls():
    rng = np.random.default_rng(0)
    header("matmul (float32)")
    for n in (512, 1024):
        x = rng.standard_normal((n, n)).astype(np.float32)
        w = rng.standard_normal((n, n)).astype(np.float32)
        tx, tw = oar.to_tensor(x), oar.to_tensor(w)
        txc, twc = tx.T.contiguous(), tw.T.contiguous()
        px, pw = (torch.from_numpy(x), torch.from_numpy(w)) if torch else (None, None)
        row("x.T @ w  [{0}x{0}]".format(n), lambda: tx.T @ tw, lambda: txc @ tw, lambda: x.T @ w,
            (lambda: px.T @ pw) if torch else None)
        row("x @ w.T  [{0}x{0}]".format(n), lambda: tx @ tw.T, lambda: tx @ twc, lambda: x @ w.T,
            (lambda: px @ pw.T) if torch else None)
    q = rng.standard_normal((8, 128, 8, 64)).astype(np.float32)  # [batch, L, heads, d]
    tq = oar.to_tensor(q)
    qh = tq.transpose([0, 2, 1, 3])  # [batch, heads, L, d]: attention's head split
    qhc = qh.contiguous()
    pq = torch.from_numpy(q).permute(0, 2, 1, 3) if torch else None
    row("heads q @ k^T [8,8,128,64]", lambda: oar.matmul(qh, qh, transpose_y=True),
        lambda: oar.matmul(qhc, qhc, transpose_y=True), lambda: np.matmul(q.transpose(0, 2, 1, 3),
                                                                        q.transpose(0, 2, 3, 1)),
        (lambda: pq @ pq.transpose(-1, -2)) if torch else None)
    x64 = rng.standard_normal((512, 512))
    t64 = oar.to_tensor(x64)
    t64c = t64.T.contiguous()
    p64 = torch.from_numpy(x64) if torch else None
    row("float64 x.T @ x [512x512]", lambda: t64.T @ t64, lambda: t64c @ t64, lambda: x64.T @ x64,
        (lambda: p64.T @ p64) if torch else None)


if __name__ == "__main__":
    what = sys.argv[1:] or ["reduce", "matmul"]
    print("threads: {} (OMP_NUM_THREADS)".format(os.environ["OMP_NUM_THREADS"]))
    if "reduce" in what:
        reductions()
    if "matmul" in what:
        matmuls()
