#!/usr/bin/env python3
"""Latency of the LeNet fixture (tests/fixtures/paddle/lenet) through

  * oar's predictor (oar.inference, the C++ oar_infer API),
  * PaddlePaddle's own inference API (paddle.inference) on the same files, when paddle is importable,
  * eager oar (the same LeNet built with oar.nn, the same weights loaded), under no_grad.

Each measurement is the median of N timed calls (after warm-up runs) of: copy the input in, run, copy
the output out (what a serving loop does). Batch 1 and 64 by default.

    python3 tests/benchmarks/bench_predictor.py [--runs 200] [--batches 1,64] [--threads 1]
            [--paddle-path /tmp/paddle_pkgs]

Paddle is looked up on sys.path, then in --paddle-path (default $OAR_PADDLE_PATH or /tmp/paddle_pkgs; a
`pip install --target` folder with the CPU wheel `paddlepaddle`), appended at the end so it does not
shadow this interpreter's numpy. When it is missing, its column is skipped with a message.
"""
import argparse
import os
import pickle
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LENET = os.path.join(HERE, "..", "fixtures", "paddle", "lenet")
PROG = os.path.join(LENET, "model.pdmodel")
PARAMS = os.path.join(LENET, "model.pdiparams")


def median_ms(fn, runs, warmup=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def reference():
    return np.load(os.path.join(LENET, "input.npy")), np.load(os.path.join(LENET, "output.npy"))


def batch_input(n):
    x, _ = reference()
    return np.ascontiguousarray(np.resize(x, (n,) + x.shape[1:]).astype(np.float32))


# ---- oar's predictor ---------------------------------------------------------------------------------
def bench_oar_predictor(batches, runs, threads):
    from oar import inference

    c = inference.Config(PROG, PARAMS)
    c.disable_gpu()
    c.enable_memory_optim()
    if threads:
        c.set_cpu_math_library_num_threads(threads)
    p = inference.create_predictor(c)
    x, want = reference()
    (y,) = p.run([x])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    hin = p.get_input_handle(p.get_input_names()[0])
    hout = p.get_output_handle(p.get_output_names()[0])
    out = {}
    for n in batches:
        xb = batch_input(n)

        def step():
            hin.copy_from_cpu(xb)
            p.run()
            return hout.copy_to_cpu()

        out[n] = median_ms(step, runs)
    return out


# ---- PaddlePaddle ------------------------------------------------------------------------------------
def import_paddle_inference(paddle_path):
    os.environ.setdefault("FLAGS_enable_pir_api", "0")
    os.environ.setdefault("GLOG_minloglevel", "2")
    try:
        import paddle.inference as pi  # noqa: F401
        return pi, None
    except ImportError:
        pass
    if paddle_path and os.path.isdir(paddle_path) and paddle_path not in sys.path:
        sys.path.append(paddle_path)
    try:
        import paddle
        import paddle.inference as pi

        return pi, paddle.__version__
    except ImportError as e:
        return None, str(e)


def bench_paddle(pi, batches, runs, threads):
    c = pi.Config(PROG, PARAMS)
    c.disable_gpu()
    c.disable_glog_info()
    c.enable_memory_optim()
    if threads:
        c.set_cpu_math_library_num_threads(threads)
    p = pi.create_predictor(c)
    hin = p.get_input_handle(p.get_input_names()[0])
    hout = p.get_output_handle(p.get_output_names()[0])
    x, want = reference()
    hin.reshape(list(x.shape))
    hin.copy_from_cpu(x)
    p.run()
    np.testing.assert_allclose(hout.copy_to_cpu(), want, rtol=1e-5, atol=1e-5)
    out = {}
    for n in batches:
        xb = batch_input(n)

        def step():
            hin.reshape(list(xb.shape))
            hin.copy_from_cpu(xb)
            p.run()
            return hout.copy_to_cpu()

        out[n] = median_ms(step, runs)
    return out


# ---- eager oar ---------------------------------------------------------------------------------------
def bench_eager(batches, runs):
    import oar
    import oar.nn.functional as F

    class LeNet(oar.nn.Layer):
        """The fixture's network (tests/fixtures/paddle/make_fixtures.py), in oar.nn."""

        def __init__(self):
            super().__init__()
            self.conv1 = oar.nn.Conv2D(1, 2, 3, padding=1)
            self.bn1 = oar.nn.BatchNorm2D(2)
            self.conv2 = oar.nn.Conv2D(2, 4, 3)
            self.fc = oar.nn.Linear(4 * 2 * 2, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc(oar.flatten(x, 1))

    # .pdiparams.info maps each saved variable to its layer attribute ("conv1.weight", "bn1._mean", ...).
    with open(PARAMS + ".info", "rb") as f:
        info = pickle.load(f)
    state = {v["structured_name"]: np.load(os.path.join(LENET, "params", name + ".npy")) for name, v in info.items()}
    net = LeNet()
    missing = set(net.state_dict().keys()) - set(state)
    if missing:
        raise RuntimeError(f"eager LeNet: no saved value for {sorted(missing)}")
    net.set_state_dict({k: oar.to_tensor(v) for k, v in state.items()})
    net.eval()
    x, want = reference()
    with oar.no_grad():
        np.testing.assert_allclose(net(oar.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    out = {}
    for n in batches:
        xb = batch_input(n)

        def step():
            with oar.no_grad():
                return net(oar.to_tensor(xb)).numpy()

        out[n] = median_ms(step, runs)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU math threads for the predictors, and OMP_NUM_THREADS for eager oar (0: default)")
    ap.add_argument("--paddle-path", default=os.environ.get("OAR_PADDLE_PATH", "/tmp/paddle_pkgs"))
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if args.threads:
        # Eager oar has no thread setting of its own: OpenMP reads this when the plugins load (oar is
        # imported below). On a loaded machine, --threads 1 avoids OpenMP teams waiting for a
        # descheduled thread (tens of ms per run).
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    results = {}
    results["oar predictor"] = bench_oar_predictor(batches, args.runs, args.threads)
    pi, why = import_paddle_inference(args.paddle_path)
    if pi is None:
        print(f"[skip] PaddlePaddle: not importable ({why}); install the CPU wheel with\n"
              f"       python3 -m pip install --target {args.paddle_path} paddlepaddle")
    else:
        results["paddle.inference"] = bench_paddle(pi, batches, args.runs, args.threads)
    try:
        results["eager oar (no_grad)"] = bench_eager(batches, args.runs)
    except Exception as e:  # noqa: BLE001  (the other columns are still worth printing)
        print(f"[skip] eager oar: {type(e).__name__}: {e}")

    print(f"\nLeNet fixture, median of {args.runs} runs (copy in + run + copy out), ms; threads: "
          f"{args.threads or 'default'}")
    print(f"{'':24}" + "".join(f"{'batch ' + str(b):>12}" for b in batches))
    for name, r in results.items():
        print(f"{name:24}" + "".join(f"{r[b]:12.4f}" for b in batches))


if __name__ == "__main__":
    main()
