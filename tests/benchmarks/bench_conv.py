"""conv2d / max_pool2d benchmark: oar vs torch (CPU), float32.

Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_conv.py [threads]
Not a test and not part of CI. torch is skipped when it cannot be imported.
"""
import os
import sys

THREADS = sys.argv[1] if len(sys.argv) > 1 else "2"
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = THREADS

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402


def best_ms(fn, number=5, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main():
    n, c, h, w, co, k = 32, 64, 56, 56, 64, 3
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((co, c, k, k)).astype(np.float32) * 0.05
    flops = 2.0 * n * co * h * w * c * k * k  # padding 1: output 56x56
    ox, ow = oar.to_tensor(x), oar.to_tensor(wt)
    rows = []
    ref = F.conv2d(ox, ow, padding=1).numpy()
    rows.append(("conv2d fwd", "oar", best_ms(lambda: F.conv2d(ox, ow, padding=1))))
    ox.stop_gradient = False
    ow.stop_gradient = False

    def oar_fwd_bwd():
        y = F.conv2d(ox, ow, padding=1)
        y.sum().backward()

    rows.append(("conv2d fwd+bwd", "oar", best_ms(oar_fwd_bwd, number=2, repeat=3)))
    px = oar.to_tensor(x)
    rows.append(("max_pool2d 3x3/2", "oar", best_ms(lambda: F.max_pool2d(px, 3, 2, 1), number=10)))
    try:
        import torch
        torch.set_num_threads(int(THREADS))
        tx, tw = torch.from_numpy(x), torch.from_numpy(wt)
        np.testing.assert_allclose(torch.nn.functional.conv2d(tx, tw, padding=1).numpy(), ref, rtol=1e-3, atol=1e-3)
        with torch.no_grad():
            rows.append(("conv2d fwd", "torch", best_ms(lambda: torch.nn.functional.conv2d(tx, tw, padding=1))))
        tx.requires_grad_(True)
        tw.requires_grad_(True)

        def torch_fwd_bwd():
            tx.grad = tw.grad = None
            torch.nn.functional.conv2d(tx, tw, padding=1).sum().backward()

        rows.append(("conv2d fwd+bwd", "torch", best_ms(torch_fwd_bwd, number=2, repeat=3)))
        tpx = torch.from_numpy(x)
        rows.append(("max_pool2d 3x3/2", "torch",
                     best_ms(lambda: torch.nn.functional.max_pool2d(tpx, 3, 2, 1), number=10)))
    except ImportError:
        pass
    print("threads:", THREADS, " conv2d: N=32 C=64 H=W=56 3x3 pad 1 -> 64, float32")
    for name, fw, ms in rows:
        extra = ""
        if name == "conv2d fwd":
            extra = "  {:.1f} GFLOP/s".format(flops / ms / 1e6)
        elif name == "conv2d fwd+bwd":
            extra = "  {:.1f} GFLOP/s".format(3 * flops / ms / 1e6)
        print("{:18s} {:6s} {:9.2f} ms{}".format(name, fw, ms, extra))


if __name__ == "__main__":
    main()
