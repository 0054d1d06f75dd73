"""A few training steps of LeNet, ResNet-18 and a Transformer encoder on one device, with the CPU fallbacks
the core counted (oar._C.fallback_counts()). Each model trains on ONE fixed synthetic batch, so its loss must
go down within the steps; the first step (which allocates and picks algorithms) is not timed.

    python tests/benchmarks/train_steps.py --device gpu:0 [--steps 12] [--models lenet,resnet18,transformer]
        [--quick] [--json out.json]

Prints per model a line "RESULT <model>: OK|FAIL loss a -> b, X ms/step, N fallbacks" and one
"FALLBACK <model> <op> <device type> <dtype> <count>" line per op that fell back. --quick uses small inputs
(for dry runs on the CPU or sim). Exit status 0 when every model's loss went down with no fallback.
Used by scripts/gpu_check.sh; not a test (no timed tests in the suites).
"""
import argparse
import json
import sys
import time
import traceback

import numpy as np

import oar
import oar.nn.functional as F
from oar import _C


class TokenTransformer(oar.nn.Layer):
    """Embedding -> TransformerEncoder (dropout on) -> Linear over the vocabulary."""

    def __init__(self, vocab, d_model, nhead, ff, layers):
        super().__init__()
        self.embed = oar.nn.Embedding(vocab, d_model)
        layer = oar.nn.TransformerEncoderLayer(d_model, nhead, ff, dropout=0.1)
        self.encoder = oar.nn.TransformerEncoder(layer, layers)
        self.head = oar.nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def _models(quick):
    """name -> (build, input array, label array, classes): fixed seeded data."""
    rng = np.random.default_rng(0)
    from oar.vision.models import LeNet, resnet18

    b = 8 if quick else 64
    img = 32 if quick else 224
    rb = 4 if quick else 32
    seq, vocab = (16, 100) if quick else (128, 1000)
    tokens = rng.integers(0, vocab, (b, seq)).astype(np.int64)
    return {
        "lenet": (lambda: LeNet(num_classes=10), rng.standard_normal((b, 1, 28, 28)).astype(np.float32),
                  rng.integers(0, 10, (b, 1)).astype(np.int64), 10),
        "resnet18": (lambda: resnet18(num_classes=10), rng.standard_normal((rb, 3, img, img)).astype(np.float32),
                     rng.integers(0, 10, (rb, 1)).astype(np.int64), 10),
        # The target is the input sequence shifted by one: learnable, so the loss falls fast.
        "transformer": (lambda: TokenTransformer(vocab, 64 if quick else 256, 4, 128 if quick else 1024, 2),
                        tokens, np.roll(tokens, -1, axis=1).reshape(-1, 1), vocab),
    }


def train(name, build, x_np, y_np, classes, device, steps, lr):
    oar.set_device(device)
    oar.seed(0)
    net = build()
    net.train()
    opt = oar.optimizer.Adam(learning_rate=lr, parameters=net.parameters())
    x, y = oar.to_tensor(x_np), oar.to_tensor(y_np)
    losses, times = [], []
    _C.reset_fallback_counts()
    for i in range(steps):
        t = time.perf_counter()
        logits = net(x)
        loss = F.cross_entropy(logits.reshape([-1, classes]), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))  # copies to the host: the step is finished when this returns
        times.append(time.perf_counter() - t)
    fallbacks = {k: v for k, v in _C.fallback_counts().items() if k[1] == device.split(":")[0]}
    timed = times[1:] or times
    return {
        "model": name, "device": device, "steps": steps, "batch": int(x_np.shape[0]),
        "input_shape": list(x_np.shape), "losses": losses,
        "ms_per_step": 1000.0 * float(np.median(timed)), "first_step_ms": 1000.0 * times[0],
        "fallbacks": [{"op": k[0], "device_type": k[1], "dtype": k[2], "count": v}
                      for k, v in sorted(fallbacks.items())],
        # Down: the mean of the last two steps below the first (a fixed batch, so no noise from data).
        "loss_went_down": bool(np.mean(losses[-2:]) < losses[0]),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu:0")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--models", default="lenet,resnet18,transformer")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--quick", action="store_true", help="small inputs (CPU / sim dry runs)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    models = _models(args.quick)
    results, ok = [], True
    for name in args.models.split(","):
        build, x, y, classes = models[name]
        try:
            r = train(name, build, x, y, classes, args.device, args.steps, args.lr)
            good = r["loss_went_down"] and not r["fallbacks"]
            print("RESULT {}: {} loss {:.4f} -> {:.4f}, {:.1f} ms/step (batch {}), {} ops fell back".format(
                name, "OK" if good else "FAIL", r["losses"][0], r["losses"][-1], r["ms_per_step"], r["batch"],
                len(r["fallbacks"])))
            for f in r["fallbacks"]:
                print("FALLBACK {} {} {} {} {}".format(name, f["op"], f["device_type"], f["dtype"], f["count"]))
        except Exception as e:  # noqa: BLE001 -- one model's failure must not hide the others'
            traceback.print_exc()
            r, good = {"model": name, "device": args.device, "error": "{}: {}".format(type(e).__name__, e)}, False
            print("RESULT {}: FAIL {}".format(name, r["error"]))
        sys.stdout.flush()
        ok = ok and good
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
