"""DataLoader throughput: oar vs torch vs paddle on a synthetic Fashion-MNIST-sized dataset.

60000 samples of 1x28x28 float32 and an int label; __getitem__ normalizes its sample ((x - mean) / std,
a cheap per-sample transform); batch 64, shuffled. Reports batches/s and samples/s for num_workers 0
and 2, the best of several timed windows (the machine may be shared). Each framework runs in its own
subprocess (they are never imported together); torch and paddle are skipped when they cannot be
imported.

Run by hand: PYTHONPATH=<oar install> python3 tests/benchmarks/bench_dataloader.py [--batches N] [--windows K]
Not a test and not part of CI.
"""
import argparse
import json
import os
import subprocess
import sys
import time

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

N, BATCH = 60000, 64


def make_dataset_class(base):
    class FashionLike(base):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.images = rng.integers(0, 256, size=(N, 1, 28, 28), dtype=np.uint8)
            self.labels = rng.integers(0, 10, size=N)

        def __len__(self):
            return N

        def __getitem__(self, i):
            x = self.images[i].astype(np.float32) * (1.0 / 255.0)
            return (x - 0.2860) / 0.3530, int(self.labels[i])

    return FashionLike


def run_one(framework, workers, batches, windows):
    if framework == "oar":
        import oar.io as fio
        base, loader_cls, kw = fio.Dataset, fio.DataLoader, {}
    elif framework == "torch":
        import torch
        import torch.utils.data as fio
        torch.set_num_threads(1)
        base, loader_cls, kw = fio.Dataset, fio.DataLoader, {}
    else:
        import paddle
        import paddle.io as fio
        paddle.set_device("cpu")
        base, loader_cls, kw = fio.Dataset, fio.DataLoader, {}
    ds = make_dataset_class(base)()
    loader = loader_cls(ds, batch_size=BATCH, shuffle=True, num_workers=workers, drop_last=True, **kw)
    if 5 + windows * batches > N // BATCH:
        raise SystemExit("--batches * --windows must stay within one epoch ({} batches)".format(N // BATCH - 5))
    it = iter(loader)
    for _ in range(5):  # warm up: worker start, first prefetches
        next(it)
    best = 0.0
    for _ in range(windows):  # the machine is shared: keep the best window
        t0 = time.perf_counter()
        for _ in range(batches):
            x, y = next(it)
        best = max(best, batches / (time.perf_counter() - t0))
    del it
    assert tuple(x.shape) == (BATCH, 1, 28, 28)
    return {"batches_per_s": best, "samples_per_s": best * BATCH}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=250, help="batches per timed window")
    ap.add_argument("--windows", type=int, default=3, help="timed windows; the best is reported")
    ap.add_argument("--one", nargs=2, metavar=("FRAMEWORK", "WORKERS"))
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), args.batches, args.windows)))
        return
    print("DataLoader throughput, best of {} windows of {} batches of {} (1x28x28 float32 + label), shuffled, "
          "per-sample normalization".format(args.windows, args.batches, BATCH))
    print("{:8s} {:>8s} {:>12s} {:>12s}".format("", "workers", "batches/s", "samples/s"))
    for fw in ("oar", "torch", "paddle"):
        for workers in (0, 2):
            proc = subprocess.run([sys.executable, __file__, "--one", fw, str(workers), "--batches",
                                   str(args.batches), "--windows", str(args.windows)], capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["?"])[-1]
                print("{:8s} {:>8d}   skipped: {}".format(fw, workers, last[:80]))
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print("{:8s} {:>8d} {:>12.1f} {:>12.0f}".format(fw, workers, r["batches_per_s"], r["samples_per_s"]))


if __name__ == "__main__":
    main()
