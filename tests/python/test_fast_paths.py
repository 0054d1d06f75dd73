"""The per-step fast paths (docs/static.md "Performance", docs/optimizer.md): the CPU small-GEMM loop
against numpy (odd shapes, transposes, batches, broadcasts, strided inputs; also forced onto larger
shapes in a subprocess), the vectorised float32 Adam against numpy on odd sizes, clear_grad's deferred
zeroing (Paddle's set_to_zero semantics), the optimizer's cached step plan (invalidated by every
attribute a step reads), the executor scope's slots, and to_static training equal to eager."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import _C
from oar.nn.clip import ClipGradByGlobalNorm
from oar.regularizer import L1Decay, L2Decay

RNG = np.random.default_rng(11)

# (x shape, y shape, transpose_x, transpose_y): all small enough for the small path by default
MATMUL_CASES = [
    ((1, 1), (1, 1), False, False),
    ((3, 5), (5, 7), False, False),
    ((5, 3), (5, 7), True, False),
    ((3, 5), (7, 5), False, True),
    ((5, 3), (7, 5), True, True),
    ((8, 16), (16, 10), False, False),
    ((16, 8), (16, 16), True, False),
    ((8, 16), (16, 16), False, True),
    ((4, 3, 5), (4, 5, 2), False, False),      # batch
    ((4, 5, 3), (4, 2, 5), True, True),
    ((4, 3, 5), (5, 6), False, False),          # batch times one matrix
    ((3, 5), (4, 5, 6), False, False),          # one matrix times a batch
    ((2, 1, 3, 5), (1, 3, 5, 2), False, False),  # mixed broadcast
    ((2, 1, 3, 5), (1, 3, 2, 5), False, True),
    ((7,), (7, 3), False, False),               # 1-D operands
    ((3, 7), (7,), False, False),
    ((7,), (7,), False, False),
    ((1, 9), (9, 1), False, False),
    ((13, 1), (1, 11), False, False),           # K = 1
]


def _np_matmul(x, y, tx, ty):
    x, y = x.astype(np.float64), y.astype(np.float64)
    if tx and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if ty and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y)


@pytest.mark.parametrize("xs,ys,tx,ty", MATMUL_CASES)
def test_small_matmul_matches_numpy(xs, ys, tx, ty):
    x = RNG.standard_normal(xs).astype("float32")
    y = RNG.standard_normal(ys).astype("float32")
    got = oar.matmul(oar.to_tensor(x), oar.to_tensor(y), tx, ty).numpy()
    np.testing.assert_allclose(got, _np_matmul(x, y, tx, ty), rtol=1e-5, atol=1e-5)


def test_small_matmul_strided_inputs_and_gradients():
    a = RNG.standard_normal((6, 4)).astype("float32")
    b = RNG.standard_normal((6, 5)).astype("float32")
    x = oar.to_tensor(a, stop_gradient=False)
    y = oar.to_tensor(b, stop_gradient=False)
    xt = x.transpose([1, 0])  # a non-contiguous view: [4, 6]
    out = oar.matmul(xt, y)
    np.testing.assert_allclose(out.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)
    g = RNG.standard_normal((4, 5)).astype("float32")
    out.backward(oar.to_tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), b @ g.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), a @ g, rtol=1e-5, atol=1e-5)


_FORCED = r"""
import numpy as np, oar
rng = np.random.default_rng(3)
cases = [((33, 65), (65, 17), 0, 0), ((65, 33), (65, 17), 1, 0), ((33, 65), (17, 65), 0, 1),
         ((5, 31, 9), (5, 9, 40), 0, 0), ((3, 1, 8, 9), (1, 4, 10, 9), 0, 1), ((64, 64), (64, 64), 1, 1)]
worst = 0.0
for xs, ys, tx, ty in cases:
    x = rng.standard_normal(xs).astype("float32"); y = rng.standard_normal(ys).astype("float32")
    got = oar.matmul(oar.to_tensor(x), oar.to_tensor(y), bool(tx), bool(ty)).numpy()
    xx = np.swapaxes(x, -1, -2) if tx else x
    yy = np.swapaxes(y, -1, -2) if ty else y
    ref = np.matmul(xx.astype(np.float64), yy.astype(np.float64))
    worst = max(worst, float(np.max(np.abs(got - ref))) / float(np.max(np.abs(ref))))
print(worst)
"""


@pytest.mark.parametrize("cutoff", ["1000000000", "0"])
def test_matmul_paths_forced_by_env(cutoff):
    """OAR_CPU_SMALL_GEMM=<huge> runs larger shapes through the small loop, 0 runs all through oneDNN:
    both agree with numpy."""
    env = dict(os.environ, OAR_CPU_SMALL_GEMM=cutoff)
    out = subprocess.run([sys.executable, "-c", _FORCED], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip()) < 1e-5  # max error relative to the largest entry


# ---- Adam (the vectorised float32 loop) against numpy on odd sizes ---------------------------------------
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_float32_odd_sizes(amsgrad):
    shapes = [(1,), (7,), (33,), (3, 11), (1000,), (17, 65)]
    ws = [RNG.standard_normal(s).astype("float32") for s in shapes]
    ps = [oar.to_tensor(w, stop_gradient=False) for w in ws]
    opt = oar.optimizer.Adam(0.01, parameters=ps, amsgrad=amsgrad, weight_decay=0.1)
    ref = [w.astype(np.float64) for w in ws]
    m1 = [np.zeros_like(r) for r in ref]
    m2 = [np.zeros_like(r) for r in ref]
    mx = [np.zeros_like(r) for r in ref]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, 5):
        gs = [RNG.standard_normal(s).astype("float32") for s in shapes]
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g)).sum().backward()
        opt.step()
        opt.clear_grad()
        for k, g in enumerate(gs):
            gg = g + 0.1 * ref[k]
            m1[k] = b1 * m1[k] + (1 - b1) * gg
            m2[k] = b2 * m2[k] + (1 - b2) * gg * gg
            v = m2[k]
            if amsgrad:
                mx[k] = np.maximum(mx[k], m2[k])
                v = mx[k]
            lr_t = 0.01 * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            ref[k] = ref[k] - lr_t * m1[k] / (np.sqrt(v) + eps * np.sqrt(1 - b2 ** t))
    for p, r in zip(ps, ref):
        np.testing.assert_allclose(p.numpy(), r, rtol=1e-4, atol=1e-5)


# ---- clear_grad: deferred zeroing keeps Paddle's set_to_zero semantics ------------------------------------
def _param(values):
    return oar.to_tensor(np.asarray(values, "float32"), stop_gradient=False)


def test_clear_grad_set_to_zero_reads_zeros_and_next_backward_replaces():
    p = _param([1.0, 2.0, 3.0])
    (p * 2).sum().backward()
    held = p.grad
    opt = oar.optimizer.SGD(0.1, parameters=[p])
    opt.clear_grad()  # set_to_zero=True
    np.testing.assert_array_equal(held.numpy(), [2, 2, 2])  # a held gradient keeps its values
    z = p.grad
    assert z is not None and z.shape == [3] and z.dtype == oar.float32
    np.testing.assert_array_equal(z.numpy(), [0, 0, 0])
    opt.clear_grad()
    (p * 3).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [3, 3, 3])
    (p * 4).sum().backward()  # accumulates as usual
    np.testing.assert_array_equal(p.grad.numpy(), [7, 7, 7])
    np.testing.assert_array_equal(z.numpy(), [0, 0, 0])  # the zeros read before are untouched


def test_clear_grad_then_in_place_write_then_backward_accumulates():
    p = _param([1.0, 1.0])
    (p * 2).sum().backward()
    p.clear_gradient()  # set_to_zero
    g = p.grad          # materialises the zeros
    g.add_(oar.to_tensor(np.array([5.0, 5.0], "float32")))
    (p * 1).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [6, 6])


def test_clear_grad_to_none_and_stop_gradient_untouched():
    p = _param([1.0])
    frozen = oar.to_tensor(np.ones(1, "float32"))
    (p * 2).sum().backward()
    opt = oar.optimizer.SGD(0.1, parameters=[p, frozen])
    opt.clear_grad(set_to_zero=False)
    assert p.grad is None and frozen.grad is None
    opt.clear_grad()  # no gradient yet: stays None (as Paddle)
    assert p.grad is None


def test_layer_clear_gradients_and_step_after_clear():
    lin = oar.nn.Linear(3, 2)
    x = oar.to_tensor(RNG.standard_normal((4, 3)).astype("float32"))
    lin(x).sum().backward()
    lin.clear_gradients()
    for p in lin.parameters():
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, "float32"))
    before = [p.numpy().copy() for p in lin.parameters()]
    oar.optimizer.SGD(0.5, parameters=lin.parameters()).step()  # zero gradients: no change
    for p, b in zip(lin.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)


# ---- the optimizer's step plan: every attribute a step reads still takes effect ---------------------------
def _sgd_run(mutate, opt_kwargs=None, steps=3):
    """SGD on two Parameters with gradient 1 everywhere; `mutate(step, params, opt)` runs before each
    step. Returns the parameters' values after every step."""
    lin = oar.nn.Linear(2, 2, bias_attr=False)
    lin2 = oar.nn.Linear(2, 1, bias_attr=False)
    ps = [lin.weight, lin2.weight]
    for p in ps:
        p.set_value(np.zeros(p.shape, "float32"))
    opt = oar.optimizer.SGD(1.0, parameters=ps, **(opt_kwargs or {}))
    hist = []
    for s in range(steps):
        for p in ps:
            p.sum().backward()
        mutate(s, ps, opt)
        opt.step()
        opt.clear_grad()
        hist.append([p.numpy().copy() for p in ps])
    return hist


def test_plan_sees_learning_rate_multiplier_changes():
    def mutate(s, ps, opt):
        if s == 1:
            ps[1].optimize_attr["learning_rate"] = 0.5  # in-place dict change
        if s == 2:
            ps[0].optimize_attr = {"learning_rate": 2.0}  # a new dict
    h = _sgd_run(mutate)
    np.testing.assert_allclose(h[-1][0], np.full((2, 2), -4.0))  # -1, -1, -2
    np.testing.assert_allclose(h[-1][1], np.full((2, 1), -2.0))  # -1, -0.5, -0.5


def test_plan_sees_regularizer_and_set_lr_changes():
    def mutate(s, ps, opt):
        if s == 1:
            ps[0].regularizer = L2Decay(0.5)
        if s == 2:
            opt.set_lr(0.1)
    h = _sgd_run(mutate)
    # p0: step0 -1; step1 g = 1 + 0.5 * (-1) = 0.5 -> -1.5; step2 g = 1 + 0.5 * -1.5 = 0.25, lr 0.1 -> -1.525
    np.testing.assert_allclose(h[-1][0], np.full((2, 2), -1.525), rtol=1e-6)
    np.testing.assert_allclose(h[-1][1], np.full((2, 1), -2.1), rtol=1e-6)


def test_plan_sees_optimizer_regularization_and_l1():
    def mutate(s, ps, opt):
        if s == 1:
            opt.regularization = L1Decay(0.25)  # not fusable: the general path
    h = _sgd_run(mutate, {"weight_decay": L2Decay(0.5)})
    # step0: g = 1 + 0.5 * 0 = 1 -> -1; step1: g = 1 + 0.25 * sign(-1) = 0.75 -> -1.75; step2: -2.5
    np.testing.assert_allclose(h[-1][0], np.full((2, 2), -2.5), rtol=1e-6)


def test_plan_sees_need_clip_and_stop_gradient_changes():
    def mutate(s, ps, opt):
        if s == 1:
            ps[1].need_clip = False
        if s == 2:
            ps[0].trainable = False
    h = _sgd_run(mutate, {"grad_clip": ClipGradByGlobalNorm(1.0)})
    # 6 gradient elements of 1: global norm sqrt(6) -> scale 1/sqrt(6) for clipped ones
    s6 = 1 / np.sqrt(6)
    np.testing.assert_allclose(h[0][0], np.full((2, 2), -s6), rtol=1e-5)
    # step1: only p0 clipped: norm sqrt(4) = 2 -> p0 -= 0.5, p1 -= 1
    np.testing.assert_allclose(h[1][0], np.full((2, 2), -s6 - 0.5), rtol=1e-5)
    np.testing.assert_allclose(h[1][1], np.full((2, 1), -s6 - 1.0), rtol=1e-5)
    # step2: p0 frozen; p1 not clipped
    np.testing.assert_allclose(h[2][0], h[1][0])
    np.testing.assert_allclose(h[2][1], np.full((2, 1), -s6 - 2.0), rtol=1e-5)


def test_plan_with_plain_tensors_and_missing_gradients():
    a = _param([0.0, 0.0])
    b = _param([0.0])
    opt = oar.optimizer.Adam(0.1, parameters=[a, b])
    for s in range(3):
        (a * 1).sum().backward()
        if s != 1:
            (b * 1).sum().backward()
        opt.step()
        opt.clear_grad(set_to_zero=False)
    # Adam's first steps move by ~lr per step whatever the gradient's size
    np.testing.assert_allclose(a.numpy(), [-0.3, -0.3], rtol=1e-3)
    np.testing.assert_allclose(b.numpy(), [-0.2], rtol=1e-3)


def test_plan_param_groups_and_dtypes():
    w32 = oar.create_parameter([3], "float32")
    w64 = oar.create_parameter([2], "float64")
    for w in (w32, w64):
        w.set_value(np.zeros(w.shape, w.dtype.name))
    opt = oar.optimizer.SGD(1.0, parameters=[{"params": [w32]}, {"params": [w64], "learning_rate": 0.5}])
    for _ in range(2):
        (w32.sum() + w64.sum().astype("float32")).backward()
        opt.step()
        opt.clear_grad()
    np.testing.assert_allclose(w32.numpy(), [-2, -2, -2])
    np.testing.assert_allclose(w64.numpy(), [-1, -1])


# ---- the scope's slots keep its name semantics ---------------------------------------------------------------
def test_scope_slots_semantics():
    s = _C._Scope()
    t = oar.to_tensor(np.ones(2, "float32"))
    s.set("a", t)
    s.set("b", t)
    assert len(s) == 2 and "a" in s and s.names() == ["a", "b"]
    assert s.erase("a") and not s.erase("a") and not s.erase("never")
    assert "a" not in s and s.find("a") is None and len(s) == 1 and s.names() == ["b"]
    s.set("a", t)
    assert "a" in s and s.names() == ["a", "b"]
    np.testing.assert_array_equal(s.find("a").numpy(), [1, 1])


# ---- to_static training equals eager (through the fast paths) --------------------------------------------
def test_to_static_training_matches_eager():
    def train(static):
        oar.seed(5)
        layers = []
        for _ in range(4):
            layers += [oar.nn.Linear(16, 16), oar.nn.ReLU()]
        model = oar.nn.Sequential(*layers, oar.nn.Linear(16, 10))
        if static:
            model = oar.jit.to_static(model)
        opt = oar.optimizer.Adam(1e-2, parameters=model.parameters())
        x = oar.to_tensor(np.random.RandomState(0).randn(8, 16).astype("float32"))
        y = oar.to_tensor(np.random.RandomState(1).randint(0, 10, (8,)).astype("int64"))
        losses = []
        for _ in range(5):
            loss = oar.nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        return losses, [p.numpy() for p in model.parameters()]
    le, pe = train(False)
    ls, ps = train(True)
    np.testing.assert_allclose(ls, le, rtol=1e-5)
    for a, b in zip(ps, pe):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
