"""Training benchmark: oar vs PyTorch vs PaddlePaddle on the CPU, side by side in one run.

Tasks (each framework and task in its own subprocess, so peak RSS is that run's alone):
  lenet   LeNet (Paddle's: conv3x3(6)-pool-conv5x5(16)-pool-fc120-fc84-fc10) on Fashion-MNIST, batch 64,
          Adam: training throughput in images/s (best of 5 windows of steps/5 steps, after a warm-up).
  mlp     784-512-512-10 MLP (ReLU), batch 128, Adam: train steps/s (measured the same way).
  to88    time to 88% test accuracy: the main job's recipe for all three (LeNet, batch 64, Adam with
          lr 2e-3 and cosine decay, here over --epochs 5; the same shuffled order), evaluated after every epoch;
          the time counts training only (not evaluation).
  hapi    oar only: the lenet task through oar.Model.train_batch (the high-level API's overhead).
Every framework trains from the same in-memory numpy batches (no data-loader cost) with a hand-written
loop: forward, cross-entropy, backward, optimizer step, clear gradients. Initialisations differ (each
framework's defaults). Threads: 2 for all (OMP_NUM_THREADS/MKL_NUM_THREADS=2, torch.set_num_threads(2)); another
count with OAR_BENCH_THREADS=N, or OAR_BENCH_THREADS=default for each framework's own choice (oar's adapts to the
load, decision 128).

Run by hand (not a test, not in CI):
    PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_training.py [--tasks lenet,mlp,to88,hapi]
        [--frameworks oar,torch,paddle] [--steps 200] [--epochs 5]
Frameworks that are not importable are skipped.
"""
import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

THREADS = os.environ.get("OAR_BENCH_THREADS", "2")
DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def load_fashion_mnist():
    def read(name, offset):
        with gzip.open(os.path.join(DATA, name)) as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    xtr = read("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    xte = read("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    norm = lambda x: ((x.astype(np.float32) / 255.0 - MEAN) / STD).astype(np.float32)
    ytr = read("train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    yte = read("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return norm(xtr), ytr, norm(xte), yte


def cosine_lr(base, step, total):
    return 0.5 * base * (1 + np.cos(np.pi * step / total))


# ---- one adapter per framework: build a model, one train step, predict ----
class OarRunner:
    name = "oar"

    def __init__(self):
        import oar
        self.oar = oar
        oar.set_device("cpu")
        oar.seed(0)

    def lenet(self):
        from oar.vision.models import LeNet
        return LeNet()

    def mlp(self):
        nn = self.oar.nn
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def setup(self, net, lr):
        self.net = net
        self.opt = self.oar.optimizer.Adam(learning_rate=lr, parameters=net.parameters())

    def set_lr(self, lr):
        self.opt.set_lr(lr)

    def step(self, x, y):
        F = self.oar.nn.functional
        loss = F.cross_entropy(self.net(self.oar.to_tensor(x)), self.oar.to_tensor(y.reshape(-1, 1)))
        loss.backward()
        self.opt.step()
        self.opt.clear_grad()
        return loss

    def sync(self, loss):
        return float(loss.numpy())

    def predict(self, x):
        with self.oar.no_grad():
            self.net.eval()
            out = self.net(self.oar.to_tensor(x)).numpy()
            self.net.train()
        return out


class HapiRunner(OarRunner):
    name = "oar (Model.train_batch)"

    def setup(self, net, lr):
        super().setup(net, lr)
        self.model = self.oar.Model(net)
        self.model.prepare(self.opt, self.oar.nn.CrossEntropyLoss())

    def step(self, x, y):
        return self.model.train_batch([x], [y.reshape(-1, 1)])[0]

    def sync(self, loss):
        return float(loss)


class TorchRunner:
    name = "torch"

    def __init__(self):
        import torch
        self.torch = torch
        if THREADS != "default":
            torch.set_num_threads(int(THREADS))
        torch.manual_seed(0)

    def lenet(self):
        nn = self.torch.nn
        return nn.Sequential(nn.Conv2d(1, 6, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(6, 16, 5),
                             nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84),
                             nn.Linear(84, 10))

    def mlp(self):
        nn = self.torch.nn
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def setup(self, net, lr):
        self.net = net
        self.opt = self.torch.optim.Adam(net.parameters(), lr=lr)

    def set_lr(self, lr):
        for g in self.opt.param_groups:
            g["lr"] = lr

    def step(self, x, y):
        loss = self.torch.nn.functional.cross_entropy(self.net(self.torch.from_numpy(x)), self.torch.from_numpy(y))
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return loss

    def sync(self, loss):
        return float(loss.item())

    def predict(self, x):
        with self.torch.no_grad():
            return self.net(self.torch.from_numpy(x)).numpy()


class PaddleRunner:
    name = "paddle"

    def __init__(self):
        import paddle
        self.paddle = paddle
        paddle.set_device("cpu")
        paddle.seed(0)

    def lenet(self):
        return self.paddle.vision.models.LeNet()

    def mlp(self):
        nn = self.paddle.nn
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def setup(self, net, lr):
        self.net = net
        self.opt = self.paddle.optimizer.Adam(learning_rate=lr, parameters=net.parameters())

    def set_lr(self, lr):
        self.opt.set_lr(lr)

    def step(self, x, y):
        F = self.paddle.nn.functional
        loss = F.cross_entropy(self.net(self.paddle.to_tensor(x)), self.paddle.to_tensor(y.reshape(-1, 1)))
        loss.backward()
        self.opt.step()
        self.opt.clear_grad()
        return loss

    def sync(self, loss):
        return float(loss.numpy())

    def predict(self, x):
        with self.paddle.no_grad():
            self.net.eval()
            out = self.net(self.paddle.to_tensor(x)).numpy()
            self.net.train()
        return out


RUNNERS = {"oar": OarRunner, "hapi": HapiRunner, "torch": TorchRunner, "paddle": PaddleRunner}


def timed_steps(runner, x, y, batch, steps, warmup=10, windows=5):
    """Seconds per step: the best of `windows` timed windows of steps/windows steps each (the machine is
    shared, so the best window is the least disturbed one)."""
    n = len(x)
    rng = np.random.RandomState(0)
    per = max(1, steps // windows)
    idx = rng.randint(0, n - batch, size=per * windows + warmup)
    for i in range(warmup):
        runner.sync(runner.step(x[idx[i]:idx[i] + batch], y[idx[i]:idx[i] + batch]))
    best = float("inf")
    for w in range(windows):
        start = time.perf_counter()
        loss = None
        for i in range(warmup + w * per, warmup + (w + 1) * per):
            loss = runner.step(x[idx[i]:idx[i] + batch], y[idx[i]:idx[i] + batch])
        runner.sync(loss)
        best = min(best, (time.perf_counter() - start) / per)
    return best


def task_lenet(runner, steps, **_):
    xtr, ytr, _, _ = load_fashion_mnist()
    runner.setup(runner.lenet(), 1e-3)
    t = timed_steps(runner, xtr, ytr, 64, steps)
    return {"images_per_s": 64 / t, "ms_per_step": t * 1e3}


def task_mlp(runner, steps, **_):
    rng = np.random.RandomState(0)
    x = rng.randn(4096, 784).astype(np.float32)
    y = rng.randint(0, 10, size=4096).astype(np.int64)
    runner.setup(runner.mlp(), 1e-3)
    t = timed_steps(runner, x, y, 128, steps)
    return {"steps_per_s": 1 / t, "ms_per_step": t * 1e3}


def task_to88(runner, epochs, **_):
    xtr, ytr, xte, yte = load_fashion_mnist()
    batch, base_lr = 64, 2e-3
    steps_per_epoch = (len(xtr) + batch - 1) // batch
    total = epochs * steps_per_epoch
    runner.setup(runner.lenet(), base_lr)
    rng = np.random.RandomState(0)
    train_time, step, accs, reached = 0.0, 0, [], None
    for epoch in range(epochs):
        perm = rng.permutation(len(xtr))
        start = time.perf_counter()
        loss = None
        for i in range(0, len(xtr), batch):
            runner.set_lr(cosine_lr(base_lr, step, total))
            sel = perm[i:i + batch]
            loss = runner.step(xtr[sel], ytr[sel])
            step += 1
        runner.sync(loss)
        train_time += time.perf_counter() - start
        pred = np.concatenate([runner.predict(xte[i:i + 1000]).argmax(1) for i in range(0, len(xte), 1000)])
        acc = float(np.mean(pred == yte))
        accs.append(round(acc, 4))
        print("    {} epoch {}: test acc {:.4f} ({:.1f} s training so far)".format(runner.name, epoch + 1, acc,
                                                                                  train_time), file=sys.stderr,
              flush=True)
        if reached is None and acc >= 0.88:
            reached = {"seconds": train_time, "epochs": epoch + 1}
            break
    return {"time_to_88_s": reached["seconds"] if reached else None, "epochs": reached["epochs"] if reached else None,
            "test_acc_per_epoch": accs}


TASKS = {"lenet": task_lenet, "mlp": task_mlp, "to88": task_to88, "hapi": task_lenet}


def worker(framework, task, steps, epochs):
    runner = RUNNERS[framework]()
    result = TASKS[task](runner, steps=steps, epochs=epochs)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    print("RESULT " + json.dumps(result))


def importable(module):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", "import " + module], env=env, capture_output=True).returncode == 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tasks", default="lenet,mlp,hapi,to88")
    p.add_argument("--frameworks", default="oar,torch,paddle")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--epochs", type=int, default=5, help="at most this many epochs for to88")
    p.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "TASK"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker[0], args.worker[1], args.steps, args.epochs)

    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if THREADS == "default":
            env.pop(var, None)
        else:
            env[var] = THREADS
    frameworks = [f for f in args.frameworks.split(",") if importable(f)]
    print("threads: {}  load average: {}  frameworks: {}".format(THREADS, os.getloadavg(), frameworks))
    results = {}
    for task in args.tasks.split(","):
        for fw in (["oar"] if task == "hapi" else frameworks):
            if task == "hapi" and "oar" not in frameworks:
                continue
            name = "hapi" if task == "hapi" else fw
            print("  running {} / {}".format(task, fw), file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name, task, "--steps",
                                   str(args.steps), "--epochs", str(args.epochs)], env=env, capture_output=True,
                                  text=True)
            line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
            if proc.returncode != 0 or not line:
                results[(task, fw)] = {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
            else:
                results[(task, fw)] = json.loads(line[-1][len("RESULT "):])
            sys.stderr.write(proc.stderr if task == "to88" else "")
            print("  {:6} {:8} {}".format(task, fw, results[(task, fw)]), flush=True)

    print("\n| task | framework | result | peak RSS (MB) |\n| --- | --- | --- | --- |")
    for (task, fw), r in results.items():
        if "error" in r:
            text = "error: {}".format(r["error"])
        elif task in ("lenet", "hapi"):
            text = "{:.0f} images/s ({:.1f} ms/step)".format(r["images_per_s"], r["ms_per_step"])
        elif task == "mlp":
            text = "{:.1f} steps/s ({:.2f} ms/step)".format(r["steps_per_s"], r["ms_per_step"])
        else:
            text = ("{:.1f} s ({} epochs)".format(r["time_to_88_s"], r["epochs"]) if r["time_to_88_s"] is not None
                    else "not reached") + "; acc/epoch {}".format(r["test_acc_per_epoch"])
        label = "oar (Model.train_batch)" if task == "hapi" else fw
        print("| {} | {} | {} | {} |".format(task, label, text, "{:.0f}".format(r["peak_rss_mb"]) if "peak_rss_mb"
                                             in r else "-"))


if __name__ == "__main__":
    main()
