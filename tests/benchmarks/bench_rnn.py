"""2-layer LSTM(128, 256) forward+backward on a [32 batch, 50 steps, 128] input: oar (fused rnn op and
the Python loop) vs torch vs paddle (CPU). BENCH_CELL=GRU or SimpleRNN (tanh) runs that layer instead.

Run by hand: PYTHONPATH=<oar install> python3 tests/benchmarks/bench_rnn.py
Each framework may run under its own interpreter: OAR_PYTHON, TORCH_PYTHON, PADDLE_PYTHON (default: this
one). Not a test and not part of CI. Each framework runs in its own subprocess with BENCH_THREADS threads
(default 1) and is timed in process CPU time: on a shared, loaded machine multi-threaded BLAS spin-waits
(small matmuls get 50x slower) and wall time mostly measures the other jobs. torch and paddle are
skipped when they cannot be imported. "oar ... per-step input matmul" forces the generic loop (a no-op
hook on the cell), i.e. without the whole-sequence input projection, to show what that saves.
"""
import os
import subprocess
import sys

BATCH, STEPS, INPUT, HIDDEN, LAYERS = 32, 50, 128, 256, 2
THREADS = os.environ.get("BENCH_THREADS", "1")
CELL = os.environ.get("BENCH_CELL", "LSTM")
if CELL not in ("LSTM", "GRU", "SimpleRNN"):
    raise SystemExit("BENCH_CELL must be LSTM, GRU or SimpleRNN, got {!r}".format(CELL))


def first_state(states):
    return states[0] if isinstance(states, tuple) else states


def best_ms(fn, number=3, repeat=7):
    # CPU time of this process (all its threads), best of `repeat`: on a shared machine wall time mostly
    # measures the other jobs.
    import time
    import timeit
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number * 1e3


def run_oar():
    import numpy as np
    import oar
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((BATCH, STEPS, INPUT)).astype("float32"))
    net = getattr(oar.nn, CELL)(INPUT, HIDDEN, num_layers=LAYERS)

    def fb():
        y, states = net(x)
        (y.sum() + first_state(states).sum()).backward()
        net.clear_gradients()

    def fwd():
        with oar.no_grad():
            net(x)

    print("oar fwd (fused)    %8.2f ms" % best_ms(fwd))
    print("oar fwd+bwd (fused) %7.2f ms" % best_ms(fb))
    net.use_fused_rnn = False
    print("oar fwd (loop)     %8.2f ms" % best_ms(fwd))
    print("oar fwd+bwd (loop) %8.2f ms" % best_ms(fb))
    net[0].cell.register_forward_pre_hook(lambda layer, inputs: None)
    print("oar fwd, per-step input matmul     %8.2f ms" % best_ms(fwd))
    print("oar fwd+bwd, per-step input matmul %8.2f ms" % best_ms(fb))


def run_torch():
    import torch
    torch.set_num_threads(int(THREADS))
    x = torch.randn(BATCH, STEPS, INPUT)
    net = getattr(torch.nn, {"SimpleRNN": "RNN"}.get(CELL, CELL))(INPUT, HIDDEN, num_layers=LAYERS,
                                                                  batch_first=True)

    def fb():
        y, states = net(x)
        (y.sum() + first_state(states).sum()).backward()
        net.zero_grad()

    def fwd():
        with torch.no_grad():
            net(x)

    print("torch fwd          %8.2f ms" % best_ms(fwd))
    print("torch fwd+bwd      %8.2f ms" % best_ms(fb))


def run_paddle():
    import paddle
    paddle.set_device("cpu")
    x = paddle.randn([BATCH, STEPS, INPUT])
    net = getattr(paddle.nn, CELL)(INPUT, HIDDEN, num_layers=LAYERS)

    def fb():
        y, states = net(x)
        (y.sum() + first_state(states).sum()).backward()
        net.clear_gradients()

    def fwd():
        with paddle.no_grad():
            net(x)

    print("paddle fwd         %8.2f ms" % best_ms(fwd))
    print("paddle fwd+bwd     %8.2f ms" % best_ms(fb))


def main():
    if len(sys.argv) > 1:
        {"oar": run_oar, "torch": run_torch, "paddle": run_paddle}[sys.argv[1]]()
        return
    print("{}({}, {}, num_layers={}), input [{}, {}, {}], float32, CPU, {} thread(s)".format(
        CELL, INPUT, HIDDEN, LAYERS, BATCH, STEPS, INPUT, THREADS))
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = THREADS
    for fw in ("oar", "torch", "paddle"):
        python = os.environ.get(fw.upper() + "_PYTHON", sys.executable)
        r = subprocess.run([python, os.path.abspath(__file__), fw], env=env, capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["failed"])[-1]
            print("{:<18} skipped ({})".format(fw, last[:100]))
        print("\n".join(lines))


if __name__ == "__main__":
    main()
