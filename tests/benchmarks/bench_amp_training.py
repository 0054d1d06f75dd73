"""Mixed-precision training steps on the CPU, side by side in one run (issue 18): a Transformer encoder
and ResNet-18 (the models of train_steps.py), each as

  oar fp32 | oar O1 bf16 | oar O2 bf16 (decorate + master weights) | torch fp32 | torch.autocast('cpu', bf16)

one training step = forward, cross-entropy, backward, Adam step (oar's AMP steps go through a GradScaler,
as a Paddle AMP loop does). Each row is the median of the timed steps after warm-up, in ms/step.

    python tests/benchmarks/bench_amp_training.py [--models transformer,resnet18] [--steps 6] [--small]
        [--torch-python /work/venv_gloo_bench/bin/python]

The torch columns run the same file with --torch-worker in the given interpreter (torch is not a
dependency of oar). --small shrinks the inputs (ResNet-18 at batch 8, 64x64; the encoder at batch 16) for
a loaded 2-core machine; the default sizes are train_steps.py's (ResNet-18 batch 32 at 224x224; encoder
batch 64, sequence 128, d_model 256, 2 layers).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def sizes(small):
    if small:
        return {"resnet18": dict(batch=8, img=64), "transformer": dict(batch=16, seq=64, vocab=1000, d=256, ff=1024)}
    return {"resnet18": dict(batch=32, img=224), "transformer": dict(batch=64, seq=128, vocab=1000, d=256, ff=1024)}


def data(name, s):
    rng = np.random.default_rng(0)
    if name == "resnet18":
        return (rng.standard_normal((s["batch"], 3, s["img"], s["img"])).astype(np.float32),
                rng.integers(0, 10, (s["batch"],)).astype(np.int64), 10)
    tokens = rng.integers(0, s["vocab"], (s["batch"], s["seq"])).astype(np.int64)
    return tokens, np.roll(tokens, -1, axis=1).reshape(-1), s["vocab"]


def timed(step, steps, warmup=2):
    times = []
    for i in range(warmup + steps):
        t = time.perf_counter()
        step()
        if i >= warmup:
            times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


# ---- oar -----------------------------------------------------------------------------------------------
def oar_rows(names, small, steps):
    import oar
    import oar.nn.functional as F
    from oar.vision.models import resnet18

    class Encoder(oar.nn.Layer):
        def __init__(self, s):
            super().__init__()
            self.embed = oar.nn.Embedding(s["vocab"], s["d"])
            layer = oar.nn.TransformerEncoderLayer(s["d"], 4, s["ff"], dropout=0.0)
            self.encoder = oar.nn.TransformerEncoder(layer, 2)
            self.head = oar.nn.Linear(s["d"], s["vocab"])

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)))

    rows = {}
    for name in names:
        s = sizes(small)[name]
        x_np, y_np, classes = data(name, s)
        for mode in ("fp32", "O1", "O2"):
            oar.seed(0)
            net = resnet18(num_classes=10) if name == "resnet18" else Encoder(s)
            net.train()
            opt = oar.optimizer.Adam(1e-4, parameters=net.parameters())
            scaler = None
            if mode != "fp32":
                if mode == "O2":
                    net, opt = oar.amp.decorate(net, opt, level="O2", dtype="bfloat16")
                scaler = oar.amp.GradScaler(init_loss_scaling=1024.0)
            x, y = oar.to_tensor(x_np), oar.to_tensor(y_np.reshape(-1, 1))

            def step():
                if scaler is None:
                    loss = F.cross_entropy(net(x).reshape([-1, classes]), y)
                    loss.backward()
                    opt.step()
                else:
                    with oar.amp.auto_cast(level=mode, dtype="bfloat16"):
                        logits = net(x).reshape([-1, classes])
                    loss = F.cross_entropy(logits.astype("float32"), y)
                    scaled = scaler.scale(loss)
                    scaled.backward()
                    scaler.minimize(opt, scaled)
                opt.clear_grad()
                float(loss)

            rows[(name, "oar " + mode)] = timed(step, steps)
            print(f"  {name:12s} oar {mode:5s} {rows[(name, 'oar ' + mode)]:9.1f} ms/step", flush=True)
    return rows


# ---- torch (run with --torch-worker in torch's interpreter) ---------------------------------------------
def torch_rows(names, small, steps):
    import torch
    import torch.nn as nn
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + idt)

    def resnet18():  # torchvision's layout, written out (torchvision is not installed there)
        layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
            cin = cout
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
        return nn.Sequential(*layers)

    class Encoder(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.embed = nn.Embedding(s["vocab"], s["d"])
            layer = nn.TransformerEncoderLayer(s["d"], 4, s["ff"], dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(s["d"], s["vocab"])

        def forward(self, t):
            return self.head(self.encoder(self.embed(t)))

    rows = {}
    for name in names:
        s = sizes(small)[name]
        x_np, y_np, classes = data(name, s)
        for mode in ("fp32", "autocast bf16"):
            torch.manual_seed(0)
            net = resnet18() if name == "resnet18" else Encoder(s)
            net.train()
            opt = torch.optim.Adam(net.parameters(), 1e-4)
            x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

            def step():
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode != "fp32"):
                    logits = net(x).reshape(-1, classes)
                loss = nn.functional.cross_entropy(logits.float(), y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                float(loss)

            rows[(name, "torch " + mode)] = timed(step, steps)
            print(f"  {name:12s} torch {mode:13s} {rows[(name, 'torch ' + mode)]:9.1f} ms/step", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="transformer,resnet18")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--torch-python", default="/work/venv_gloo_bench/bin/python")
    ap.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = args.models.split(",")
    if args.torch_worker:
        rows = torch_rows(names, args.small, args.steps)
        print("JSON " + json.dumps({f"{k[0]}|{k[1]}": v for k, v in rows.items()}))
        return 0
    print("oar:")
    rows = oar_rows(names, args.small, args.steps)
    if os.path.exists(args.torch_python):
        print("torch:")
        cmd = [args.torch_python, os.path.abspath(__file__), "--torch-worker", "--models", args.models,
               "--steps", str(args.steps)] + (["--small"] if args.small else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write("".join(line + "\n" for line in proc.stdout.splitlines() if not line.startswith("JSON ")))
        for line in proc.stdout.splitlines():
            if line.startswith("JSON "):
                rows.update({tuple(k.split("|")): v for k, v in json.loads(line[5:]).items()})
        if proc.returncode:
            print(proc.stderr[-2000:])
    cols = ["oar fp32", "oar O1", "oar O2", "torch fp32", "torch autocast bf16"]
    print("\nms/step (lower is better)")
    print(f"{'model':12s}" + "".join(f"{c:>21s}" for c in cols) + f"{'O2 speed-up':>14s}")
    for name in names:
        vals = [rows.get((name, c)) for c in cols]
        cells = "".join(f"{v:21.1f}" if v is not None else f"{'-':>21s}" for v in vals)
        print(f"{name:12s}" + cells + f"{vals[0] / vals[2]:13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
