"""Eager vs to_static training steps (forward + backward + optimizer step) on dispatch-bound deep narrow
MLPs (tiny: width 16, batch 8, 32 layers; width 64, batch 32, 16 layers), a small Transformer encoder,
and a compute-bound LeNet; median step time over repeats.
PaddlePaddle's eager and to_static run side by side when the `paddle` package imports.

    python3 tests/benchmarks/bench_jit.py [--steps 50] [--threads 2]   (--threads 0: oar's own choice, which
    adapts to the load, decision 128)
"""
import argparse
import os
import statistics
import time

import numpy as np


def build(fw, kind):
    nn = fw.nn
    if kind in ("mlp", "tiny_mlp"):  # tiny: so small that op dispatch, not arithmetic, is the cost
        width, batch, depth = (64, 32, 16) if kind == "mlp" else (16, 8, 32)
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(width, 10))
        x = fw.to_tensor(np.random.RandomState(0).randn(batch, width).astype("float32"))
        y = fw.to_tensor(np.random.RandomState(1).randint(0, 10, (batch,)).astype("int64"))
    elif kind == "transformer":
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0)
        model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Flatten(), nn.Linear(16 * 64, 10))
        x = fw.to_tensor(np.random.RandomState(0).randn(8, 16, 64).astype("float32"))
        y = fw.to_tensor(np.random.RandomState(1).randint(0, 10, (8,)).astype("int64"))
    else:
        model = fw.vision.models.LeNet()
        x = fw.to_tensor(np.random.RandomState(0).randn(64, 1, 28, 28).astype("float32"))
        y = fw.to_tensor(np.random.RandomState(1).randint(0, 10, (64,)).astype("int64"))
    return model, x, y


def step_time(fw, kind, static, steps):
    fw.seed(0)
    model, x, y = build(fw, kind)
    if static:
        model = fw.jit.to_static(model)
    opt = fw.optimizer.Adam(1e-3, parameters=model.parameters())
    loss_fn = fw.nn.CrossEntropyLoss()

    def one():
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    for _ in range(5):
        one()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        float(one())
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.threads > 0:
        os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import oar
    fws = [("oar", oar)]
    try:
        import paddle
        fws.append(("paddle", paddle))
    except ImportError:
        print("(paddle not installed: PaddlePaddle columns skipped)")
    print("{:<12} {:>10} {:>12} {:>8}".format("model", "framework", "eager ms", "static ms") + "  speedup")
    for kind in ("tiny_mlp", "mlp", "transformer", "lenet"):
        for name, fw in fws:
            e = step_time(fw, kind, False, args.steps)
            s = step_time(fw, kind, True, args.steps)
            print("{:<12} {:>10} {:>12.3f} {:>9.3f}  {:.2f}x".format(kind, name, e, s, e / s))


if __name__ == "__main__":
    main()
