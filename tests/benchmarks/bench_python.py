"""Python-level micro benchmarks: oar vs torch vs paddle (CPU).

Run by hand: python3 tests/benchmarks/bench_python.py [--api]
(--api: only the "Python API" section, oar vs torch side by side.)
Not a test and not part of CI. A framework that cannot be imported is skipped.
"""
import os

# Two threads for every framework (set before any of them is imported).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import importlib  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

N_BIG = 16 * 1024 * 1024  # elements of the large add
MM = 1024  # size of the large matmul
CHAIN = 20  # ops in the autograd chain


# ---------------------------------------------------------------- measurement helpers
def best_seconds(fn, number, repeat=5):
    """Best time of one call of fn (seconds), from `repeat` timeit runs of `number` calls."""
    fn()  # warm up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def micro_us(fn, number=20000):
    """Microseconds per call: the best of 50 short runs of number/10 calls (as many calls as 5 runs of
    `number`). A run of a few milliseconds fits between the scheduler's preemptions on a loaded machine,
    so the best of many short runs is the op's own time; 5 long runs were all preempted when other work
    ran (the same code measured 0.20-0.50x PyTorch from run to run, against 0.362-0.365x this way)."""
    return best_seconds(fn, max(1, number // 10), repeat=50) * 1e6


def checked(fn, to_numpy, expected):
    """Check once that fn really computes the expected result. All three frameworks run CPU ops
    eagerly and synchronously, so the timed call is the op alone: no .numpy() in the loop, since
    that is a zero-copy view in oar and torch but a 64 MB copy in paddle."""
    np.testing.assert_allclose(to_numpy(fn()), expected, rtol=1e-3, atol=1e-2)
    return fn


def gbytes_per_s(fn, nbytes, number=10):
    return nbytes / best_seconds(fn, number) / 1e9


def gflops_per_s(fn, flops, number=10):
    return flops / best_seconds(fn, number) / 1e9


# ---------------------------------------------------------------- inputs (shared, from numpy)
rng = np.random.default_rng(0)
ONE_A = np.array([1.5], np.float32)
ONE_B = np.array([2.5], np.float32)
X16 = rng.standard_normal((16, 16)).astype(np.float32)
W16 = rng.standard_normal((16, 16)).astype(np.float32)
X2 = rng.standard_normal((2, 2)).astype(np.float32)
C2 = np.full((2, 2), 1.01, np.float32)
BIG_A = rng.standard_normal(N_BIG).astype(np.float32)
BIG_B = rng.standard_normal(N_BIG).astype(np.float32)
BIG_SUM = BIG_A + BIG_B
MM_A = rng.standard_normal((MM, MM)).astype(np.float32)
MM_B = rng.standard_normal((MM, MM)).astype(np.float32)
MM_PROD = MM_A @ MM_B


def chain(x, c):
    """CHAIN ops alternating add and multiply with a constant tensor, then sum."""
    y = x
    for i in range(CHAIN):
        y = y + c if i % 2 == 0 else y * c
    return y.sum()


# ---------------------------------------------------------------- oar and paddle (same API)
def paddle_like(p):
    t = p.to_tensor
    relu = p.nn.functional.relu
    to_np = p.Tensor.numpy

    def add_scalar():
        a, b = t(ONE_A), t(ONE_B)
        return micro_us(lambda: a + b)

    def mlp16():
        x, w = t(X16), t(W16)
        return micro_us(lambda: relu(p.matmul(x, w) + x), number=5000)

    def fwd_bwd():
        c = t(C2)

        def step():
            x = t(X2, stop_gradient=False)
            chain(x, c).backward()
            return x.grad

        return micro_us(step, number=1000)

    def big_add():
        a, b = t(BIG_A), t(BIG_B)
        return gbytes_per_s(checked(lambda: p.add(a, b), to_np, BIG_SUM), 3 * 4 * N_BIG)

    def matmul():
        a, b = t(MM_A), t(MM_B)
        return gflops_per_s(checked(lambda: p.matmul(a, b), to_np, MM_PROD), 2 * MM ** 3)

    return [add_scalar, mlp16, fwd_bwd, big_add, matmul]


# ---------------------------------------------------------------- torch
def torch_benches(torch):
    torch.set_num_threads(2)
    t = torch.from_numpy
    relu = torch.nn.functional.relu
    to_np = torch.Tensor.numpy

    def add_scalar():
        a, b = t(ONE_A), t(ONE_B)
        return micro_us(lambda: a + b)

    def mlp16():
        x, w = t(X16), t(W16)
        return micro_us(lambda: relu(torch.matmul(x, w) + x), number=5000)

    def fwd_bwd():
        c = t(C2)

        def step():
            x = torch.tensor(X2, requires_grad=True)
            chain(x, c).backward()
            return x.grad

        return micro_us(step, number=1000)

    def big_add():
        a, b = t(BIG_A), t(BIG_B)
        return gbytes_per_s(checked(lambda: torch.add(a, b), to_np, BIG_SUM), 3 * 4 * N_BIG)

    def matmul():
        a, b = t(MM_A), t(MM_B)
        return gflops_per_s(checked(lambda: torch.matmul(a, b), to_np, MM_PROD), 2 * MM ** 3)

    return [add_scalar, mlp16, fwd_bwd, big_add, matmul]


# ---------------------------------------------------------------- the Python API's everyday calls
# Calls that go through Python wrappers (creation, shape manipulation, in-place methods, losses) on
# 2x2 float32 tensors: per-call overhead, oar and torch measured row by row, side by side.
def api_rows(oar, torch):
    F, TF = oar.nn.functional, torch.nn.functional
    a, b = oar.to_tensor(X2), oar.to_tensor(C2)
    ta, tb = torch.from_numpy(X2.copy()), torch.from_numpy(C2.copy())
    lab, tlab = oar.to_tensor([0, 1]), torch.tensor([0, 1])
    ia, ita = oar.to_tensor(X2), torch.from_numpy(X2.copy())  # targets of the in-place rows
    one = oar.to_tensor(np.ones((2, 2), np.float32))
    tone = torch.ones(2, 2)
    lin, tlin = oar.nn.Linear(2, 2), torch.nn.Linear(2, 2)

    def iadd():
        nonlocal ia
        ia += one

    def tiadd():
        nonlocal ita
        ita += tone

    return [
        ("F.cross_entropy(a, lab)", lambda: F.cross_entropy(a, lab), lambda: TF.cross_entropy(ta, tlab)),
        ("a.expand([3,2,2])", lambda: a.expand([3, 2, 2]), lambda: ta.expand(3, 2, 2)),
        ("stack([a,b])", lambda: oar.stack([a, b]), lambda: torch.stack([ta, tb])),
        ("a.flatten()", lambda: a.flatten(), lambda: ta.flatten()),
        ("full([2,2], 3.0)", lambda: oar.full([2, 2], 3.0), lambda: torch.full([2, 2], 3.0)),
        ("ones([2,2])", lambda: oar.ones([2, 2]), lambda: torch.ones([2, 2])),
        ("zeros([4])", lambda: oar.zeros([4]), lambda: torch.zeros([4])),
        ("arange(4)", lambda: oar.arange(4), lambda: torch.arange(4)),
        ("a.add_(one)", lambda: ia.add_(one), lambda: ita.add_(tone)),
        ("a.multiply_(one) / mul_", lambda: ia.multiply_(one), lambda: ita.mul_(tone)),
        ("a.reshape([4])", lambda: a.reshape([4]), lambda: ta.reshape([4])),
        ("concat([a,b])", lambda: oar.concat([a, b]), lambda: torch.cat([ta, tb])),
        ("F.layer_norm(a, [2])", lambda: F.layer_norm(a, [2]), lambda: TF.layer_norm(ta, [2])),
        ("randn([2,2])", lambda: oar.randn([2, 2]), lambda: torch.randn([2, 2])),
        ("a.transpose([1,0])", lambda: a.transpose([1, 0]), lambda: ta.permute(1, 0)),
        ("a.max()", lambda: a.max(), lambda: ta.max()),
        ("a.unsqueeze(0)", lambda: a.unsqueeze(0), lambda: ta.unsqueeze(0)),
        ("a.exp()", lambda: a.exp(), lambda: ta.exp()),
        ("a + 1.0", lambda: a + 1.0, lambda: ta + 1.0),
        ("a += one", iadd, tiadd),
        ("nn.Linear(2, 2)(a)", lambda: lin(a), lambda: tlin(ta)),
    ]


def api_main():
    import oar
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        print(f"the Python API section needs torch ({type(e).__name__}: {e})")
        return
    # one torch thread: these are per-call overheads, and torch's 2-thread log_softmax now and then spins
    # against other work on this machine (cross_entropy measured 4 us or 325 us from run to run)
    torch.set_num_threads(1)
    rows = api_rows(oar, torch)
    width = max(len(r[0]) for r in rows)
    print(f"oar {oar.__version__} vs torch {torch.__version__}: us per call (best of short runs)\n")
    print(f"{'call':<{width}}{'oar':>9}{'torch':>9}{'ratio':>8}")
    for label, fo, ft in rows:
        to, tt = micro_us(fo, number=5000), micro_us(ft, number=5000)
        print(f"{label:<{width}}{to:>9.3f}{tt:>9.3f}{to / tt:>8.2f}", flush=True)
    print(f"\ntorch threads: 1; load: {os.getloadavg()}")


# ---------------------------------------------------------------- driver
ROWS = [
    "a + b, 1 elem (us/op)",
    "relu(x@w+x) 16x16 (us/iter)",
    f"fwd+bwd {CHAIN}-op chain 2x2 (us/iter)",
    "add 16M f32 (GB/s)",
    "matmul 1024^3 f32 (GFLOP/s)",
]
FRAMEWORKS = [("oar", "oar", paddle_like), ("torch", "torch", torch_benches), ("paddle", "paddle", paddle_like)]


def main():
    columns = []
    for name, module, make in FRAMEWORKS:
        try:
            mod = importlib.import_module(module)
        except Exception as e:  # noqa: BLE001
            print(f"skipping {name}: cannot import {module} ({type(e).__name__}: {e})")
            continue
        if name == "paddle":
            mod.set_device("cpu")
        print(f"{name} {getattr(mod, '__version__', '?')}: running ...", flush=True)
        columns.append((name, [bench() for bench in make(mod)]))

    width = max(len(r) for r in ROWS)
    print()
    print(f"{'benchmark':<{width}}" + "".join(f"{name:>12}" for name, _ in columns))
    for i, row in enumerate(ROWS):
        print(f"{row:<{width}}" + "".join(f"{vals[i]:>12.2f}" for _, vals in columns))
    print(f"\nthreads: 2 (OMP/MKL env, torch.set_num_threads); cpus: {os.cpu_count()}; load: {os.getloadavg()}")


if __name__ == "__main__":
    import sys
    if "--api" in sys.argv[1:]:
        api_main()
    else:
        main()
