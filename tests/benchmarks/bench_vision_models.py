"""oar.vision.models throughput on CPU (two threads): eval forward of resnet18 and mobilenet_v2
(batch 8, 3x224x224) and LeNet forward+backward (batch 64, 1x28x28), against
paddle.vision.models and torchvision.models (torch's own LeNet for LeNet) when they import.

Run by hand: PYTHONPATH=<oar install> python3 tests/benchmarks/bench_vision_models.py [--quick]
Not a test and not part of CI. Prints images/s (best of a few alternating rounds; higher is better).
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402
import oar.vision.models as oar_models  # noqa: E402

try:
    import torch
    torch.set_num_threads(2)
except ImportError:  # pragma: no cover
    torch = None
try:
    import torchvision
except ImportError:  # pragma: no cover
    torchvision = None
try:
    import paddle
    paddle.set_device("cpu")
except ImportError:  # pragma: no cover
    paddle = None

QUICK = "--quick" in sys.argv
REPEAT = 2 if QUICK else 5


def images_per_s(fns, batch):
    """{framework: images/s} for {framework: step}. Rounds alternate between the frameworks so that
    load from other processes on a shared machine hits them alike; the best round counts."""
    for fn in fns.values():
        fn()  # warm up
    best = {k: float("inf") for k in fns}
    for _ in range(REPEAT):
        for k, fn in fns.items():
            best[k] = min(best[k], timeit.timeit(fn, number=1))
    return {k: batch / t for k, t in best.items()}


def bench_forward(name, batch):
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype("float32")
    res = {}
    m = getattr(oar_models, name)().eval()
    ox = oar.to_tensor(x)

    def o_fwd():
        with oar.no_grad():
            return m(ox).numpy()
    res["oar"] = o_fwd
    if paddle is not None:
        pm = getattr(paddle.vision.models, name)()
        pm.eval()
        px = paddle.to_tensor(x)

        def p_fwd():
            with paddle.no_grad():
                return pm(px).numpy()
        res["paddle"] = p_fwd
    if torchvision is not None:
        tm = getattr(torchvision.models, name)().eval()
        tx = torch.from_numpy(x)

        def t_fwd():
            with torch.no_grad():
                return tm(tx).numpy()
        res["torchvision"] = t_fwd
    return images_per_s(res, batch)


def _torch_lenet():
    # Paddle's LeNet layout (no activations between the Linear layers), written in torch.
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 6, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))


def bench_lenet_train(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 1, 28, 28)).astype("float32")
    y = rng.integers(0, 10, (batch, 1)).astype("int64")
    res = {}
    m = oar_models.LeNet()
    ox, oy = oar.to_tensor(x), oar.to_tensor(y)

    def o_step():
        loss = F.cross_entropy(m(ox), oy)
        loss.backward()
        m.clear_gradients()
    res["oar"] = o_step
    if paddle is not None:
        pm = paddle.vision.models.LeNet()
        px, py = paddle.to_tensor(x), paddle.to_tensor(y)

        def p_step():
            loss = paddle.nn.functional.cross_entropy(pm(px), py)
            loss.backward()
            pm.clear_gradients()
        res["paddle"] = p_step
    if torch is not None:
        tm = _torch_lenet()
        tx, ty = torch.from_numpy(x), torch.from_numpy(y[:, 0])

        def t_step():
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            loss.backward()
            tm.zero_grad()
        res["torch"] = t_step
    return images_per_s(res, batch)


def main():
    print("CPU, {} threads; images/s, best of {} (higher is better)".format(os.environ["OMP_NUM_THREADS"], REPEAT))
    if torchvision is None:
        print("(torchvision not importable: no torchvision column for resnet18/mobilenet_v2)")
    rows = [("resnet18 eval fwd, batch 8, 3x224x224", lambda: bench_forward("resnet18", 8)),
            ("mobilenet_v2 eval fwd, batch 8, 3x224x224", lambda: bench_forward("mobilenet_v2", 8)),
            ("LeNet fwd+bwd, batch 64, 1x28x28", lambda: bench_lenet_train(64))]
    for title, fn in rows:
        res = fn()
        print("{:44s} ".format(title) + "  ".join("{}: {:8.1f}".format(k, v) for k, v in res.items()), flush=True)


if __name__ == "__main__":
    main()
