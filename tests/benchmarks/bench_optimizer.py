"""Optimizer step benchmark (Adam, float32, CPU): oar's fused multi-tensor step vs one fused op per
parameter vs an unfused composition of elementwise ops, side by side with torch.optim.Adam (for-loop,
foreach, fused) and paddle.optimizer.Adam (default, use_multi_tensor) when they import.

Parameter sets: 100 tensors of 1000 elements (dispatch-bound), and the ResNet-18 parameter list
(62 tensors, 11.7M floats; bandwidth-bound).

Run by hand: PYTHONPATH=<installed oar> python3 tests/benchmarks/bench_optimizer.py [threads]
Not a test and not part of CI.
"""
import os
import sys

THREADS = sys.argv[1] if len(sys.argv) > 1 else "2"
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = THREADS

import timeit  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402


def best_ms(fn, number, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def resnet18_shapes():
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            shapes += [(cout, cin, 3, 3), (cout,), (cout,), (cout, cout, 3, 3), (cout,), (cout,)]
            if block == 0 and (s != 1 or cin != cout):
                shapes += [(cout, cin, 1, 1), (cout,), (cout,)]
            cin = cout
    return shapes + [(1000, 512), (1000,)]


def oar_params(arrays, grads):
    ps = []
    for i, (a, g) in enumerate(zip(arrays, grads)):
        p = oar.to_tensor(a, stop_gradient=False)
        p.name = f"p_{i}"
        (p * oar.to_tensor(g)).sum().backward()
        ps.append(p)
    return ps


def oar_rows(arrays, grads, number):
    rows = []
    ps = oar_params(arrays, grads)
    opt = oar.optimizer.Adam(1e-3, parameters=ps)
    rows.append(("oar Adam.step (one merged_adam op)", best_ms(opt.step, number)))

    # one fused "adam" op per parameter
    op = oar._C.Op("adam", "learning_rate")
    st = [(p, p.grad, oar.zeros(p.shape), oar.zeros(p.shape), oar.to_tensor([0.9]), oar.to_tensor([0.999]))
          for p in ps]
    dummy = oar.zeros([1])

    def per_param():
        with oar.no_grad():
            for p, g, m1, m2, b1, b2 in st:
                op(p, g, m1, m2, b1, b2, dummy, [1e-3])
    rows.append(("oar fused op per parameter", best_ms(per_param, number)))

    # unfused: the same update as ~10 elementwise ops per parameter
    state = [[p, p.grad, oar.zeros(p.shape), oar.zeros(p.shape), 1.0, 1.0] for p in ps]

    def unfused():
        with oar.no_grad():
            for s in state:
                p, g, m1, m2 = s[:4]
                s[4] *= 0.9
                s[5] *= 0.999
                m1.scale_(0.9).add_(g.scale(0.1))
                m2.scale_(0.999).add_((g * g).scale(0.001))
                lr_t = 1e-3 * (1 - s[5]) ** 0.5 / (1 - s[4])
                p.subtract_((m1 / (m2.sqrt() + 1e-8 * (1 - s[5]) ** 0.5)).scale(lr_t))
    rows.append(("oar unfused elementwise ops", best_ms(unfused, number)))
    return rows


def torch_rows(arrays, grads, number):
    try:
        import torch
    except ImportError:
        return []
    torch.set_num_threads(int(THREADS))
    rows = []
    for label, kw in (("for-loop", {"foreach": False}), ("foreach", {"foreach": True}), ("fused", {"fused": True})):
        ps = [torch.tensor(a, requires_grad=True) for a in arrays]
        for p, g in zip(ps, grads):
            p.grad = torch.tensor(g)
        try:
            opt = torch.optim.Adam(ps, lr=1e-3, **kw)
            rows.append((f"torch Adam {label}", best_ms(opt.step, number)))
        except (RuntimeError, TypeError) as e:
            rows.append((f"torch Adam {label} (unavailable: {str(e)[:40]})", float("nan")))
    return rows


def paddle_rows(arrays, grads, number):
    try:
        import paddle
    except ImportError:
        return []
    paddle.set_device("cpu")
    rows = []
    for label, kw in (("default", {}), ("use_multi_tensor", {"use_multi_tensor": True})):
        ps = []
        for a, g in zip(arrays, grads):
            p = paddle.create_parameter(list(a.shape), "float32",
                                        default_initializer=paddle.nn.initializer.Assign(a))
            (p * paddle.to_tensor(g)).sum().backward()
            ps.append(p)
        try:
            opt = paddle.optimizer.Adam(1e-3, parameters=ps, **kw)
            rows.append((f"paddle Adam {label}", best_ms(opt.step, number)))
        except Exception as e:  # noqa: BLE001 - report and go on
            rows.append((f"paddle Adam {label} (failed: {str(e)[:40]})", float("nan")))
    return rows


def main():
    rng = np.random.default_rng(0)
    sets = [("100 x 1000 floats", [(1000,)] * 100, 20), ("ResNet-18 (62 tensors, 11.7M floats)", resnet18_shapes(), 3)]
    print(f"Adam step, float32, CPU, {THREADS} threads (best of 5, ms per step)")
    for title, shapes, number in sets:
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        print(f"\n{title}: {len(shapes)} tensors, {sum(a.size for a in arrays) / 1e6:.2f}M elements")
        for name, ms in oar_rows(arrays, grads, number) + torch_rows(arrays, grads, number) + \
                paddle_rows(arrays, grads, number):
            print(f"  {name:45s} {ms:9.3f}")


if __name__ == "__main__":
    main()
