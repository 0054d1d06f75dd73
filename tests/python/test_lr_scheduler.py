"""oar.optimizer.lr: each scheduler's sequence against formulas written here (Paddle's), state round
trips and argument errors."""
import math

import numpy as np
import pytest

from oar.optimizer import lr as L


def seq(s, n=15):
    out = []
    for _ in range(n):
        out.append(s())
        s.step()
    return out


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_noam():
    want = [2.0 * 64 ** -0.5 * min(1 if e == 0 else e ** -0.5, e * 5 ** -1.5) for e in range(15)]
    close(seq(L.NoamDecay(64, 5, learning_rate=2.0)), want)


def test_piecewise():
    close(seq(L.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1]), 9), [1.0] * 3 + [0.5] * 3 + [0.1] * 3)


def test_natural_exp_inverse_time_exponential():
    close(seq(L.NaturalExpDecay(0.5, 0.1)), [0.5 * math.exp(-0.1 * e) for e in range(15)])
    close(seq(L.InverseTimeDecay(0.5, 0.1)), [0.5 / (1 + 0.1 * e) for e in range(15)])
    close(seq(L.ExponentialDecay(0.5, 0.9)), [0.5 * 0.9 ** e for e in range(15)])


def test_polynomial():
    close(seq(L.PolynomialDecay(0.5, 4, end_lr=0.01, power=2.0), 8),
          [(0.5 - 0.01) * (1 - min(e, 4) / 4) ** 2 + 0.01 for e in range(8)])
    want = []
    for e in range(10):
        T = 4 * (1 if e == 0 else math.ceil(e / 4))
        want.append((0.5 - 1e-4) * (1 - e / T) + 1e-4)
    close(seq(L.PolynomialDecay(0.5, 4, cycle=True), 10), want)


def test_linear_warmup_float_and_scheduler():
    close(seq(L.LinearWarmup(0.5, 4, 0.0, 0.5), 8), [0.5 * e / 4 for e in range(4)] + [0.5] * 4)
    inner = L.StepDecay(0.4, step_size=2, gamma=0.5)
    s = L.LinearWarmup(inner, 3, 0.1, 0.4)
    want = [0.1 + 0.3 * e / 3 for e in range(3)] + [0.4 * 0.5 ** ((e - 3) // 2) for e in range(3, 10)]
    close(seq(s, 10), want)
    sd = s.state_dict()
    assert sd["LinearWarmup_LR"]["last_epoch"] == 7 and sd["last_epoch"] == 10
    s2 = L.LinearWarmup(L.StepDecay(0.4, step_size=2, gamma=0.5), 3, 0.1, 0.4)
    s2.set_state_dict(sd)
    assert s2.learning_rate.last_epoch == 7 and s2() == s()
    with pytest.raises(ValueError, match="end_lr"):
        L.LinearWarmup(0.5, 4, 0.5, 0.1)


def test_multistep_step_lambda_multiplicative():
    close(seq(L.MultiStepDecay(0.5, [2, 5, 9], gamma=0.5), 12),
          [0.5 * 0.5 ** sum(e >= m for m in (2, 5, 9)) for e in range(12)])
    close(seq(L.StepDecay(0.5, 3)), [0.5 * 0.1 ** (e // 3) for e in range(15)])
    close(seq(L.LambdaDecay(0.5, lambda e: 0.95 ** e)), [0.5 * 0.95 ** e for e in range(15)])
    close(seq(L.MultiplicativeDecay(0.5, lambda e: 0.9)), [0.5 * 0.9 ** e for e in range(15)])


def test_cosine_annealing_recursive_and_closed_form():
    base, T, eta = 0.5, 4, 0.01
    want, last = [], base
    for e in range(20):  # Paddle's recursion, restarts included
        if e == 0:
            lr = base
        elif (e - 1 - T) % (2 * T) == 0:
            lr = last + (base - eta) * (1 - math.cos(math.pi / T)) / 2
        else:
            lr = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (last - eta) + eta
        want.append(lr)
        last = lr
    got = seq(L.CosineAnnealingDecay(base, T, eta_min=eta), 20)
    close(got, want)
    # within the first period the recursion equals the closed form
    close(got[:T + 1], [eta + (base - eta) * (1 + math.cos(math.pi * e / T)) / 2 for e in range(T + 1)])
    s = L.CosineAnnealingDecay(base, T, eta_min=eta)
    s.step(3)
    close([s()], [eta + (base - eta) * (1 + math.cos(math.pi * 3 / T)) / 2])


def test_one_cycle():
    n, mx, div, end = 20, 1.0, 25.0, 1e-4
    init = mx / div
    up = 0.3 * n - 1

    def cos(a, b, pct):
        return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)
    want = [cos(init, mx, e / up) if e <= up else cos(mx, end, (e - up) / (n - 1 - up)) for e in range(n)]
    close(seq(L.OneCycleLR(mx, n), n), want)
    # three phases, linear
    a, b = 0.2 * n - 1, 2 * 0.2 * n - 2

    def lin(x, y, pct):
        return (y - x) * pct + x
    want = [lin(init, mx, e / a) if e <= a else lin(mx, init, (e - a) / (b - a)) if e <= b
            else lin(init, end, (e - b) / (n - 1 - b)) for e in range(n)]
    close(seq(L.OneCycleLR(mx, n, phase_pct=0.2, anneal_strategy="linear", three_phase=True), n), want)
    s = L.OneCycleLR(mx, 3)
    seq(s, 3)
    with pytest.raises(ValueError, match="total_steps"):
        s.step()


def test_cyclic():
    base, mx, up, down = 0.1, 1.0, 3, 2
    cyc = up + down

    def lr(it, fn, by_cycle=True):
        c = 1 + it // cyc
        pct = 1 + it / cyc - c
        sc = pct / (up / cyc) if pct <= up / cyc else (1 - pct) / (1 - up / cyc)
        return base + (mx - base) * sc * fn(c if by_cycle else it)
    close(seq(L.CyclicLR(base, mx, up, down)), [lr(e, lambda x: 1.0) for e in range(15)])
    close(seq(L.CyclicLR(base, mx, up, down, mode="triangular2")),
          [lr(e, lambda x: 1 / 2 ** (x - 1)) for e in range(15)])
    close(seq(L.CyclicLR(base, mx, up, down, mode="exp_range", exp_gamma=0.9)),
          [lr(e, lambda x: 0.9 ** x, False) for e in range(15)])


def test_reduce_on_plateau():
    s = L.ReduceOnPlateau(1.0, patience=2, cooldown=1, factor=0.5)
    got = []
    for m in [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 2]:
        s.step(m)
        got.append(s())
    # bad epochs 1, 2, 3 > patience at the 5th metric; one cooldown step; then 3 bad steps again
    assert got == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    assert s.state_dict() == {"cooldown_counter": 0, "best": 2, "num_bad_epochs": 0, "last_epoch": 12,
                              "last_lr": 0.25}
    s = L.ReduceOnPlateau(1.0, mode="max", patience=0, threshold=0.1, threshold_mode="abs", min_lr=0.3)
    for m in [1.0, 1.05, 1.2, 1.25]:
        s.step(np.array([m]))
    assert s() == 0.3  # 1.05 and 1.25 are no improvement by 0.1: 1.0 -> 0.1 clamped to min_lr
    with pytest.raises(TypeError, match="metrics"):
        s.step("bad")
    with pytest.raises(ValueError, match="mode"):
        L.ReduceOnPlateau(1.0, mode="avg")


def test_step_epoch_state_round_trip_and_call():
    s = L.StepDecay(0.5, 2)
    s.step(5)
    assert s.last_epoch == 5 and s() == s.last_lr == pytest.approx(0.5 * 0.01)
    s2 = L.StepDecay(0.5, 2)
    s2.set_state_dict(s.state_dict())
    assert (s2.last_epoch, s2()) == (5, s())
    with pytest.raises(RuntimeError, match="last_lr"):
        s2.set_state_dict({"last_epoch": 3})


def test_argument_errors():
    with pytest.raises(TypeError, match="learning_rate"):
        L.ExponentialDecay("0.1", 0.5)
    with pytest.raises(ValueError, match="gamma"):
        L.ExponentialDecay(0.1, 1.5)
    with pytest.raises(ValueError, match="boundaries"):
        L.PiecewiseDecay([], [1.0])
    with pytest.raises(ValueError, match="values"):
        L.PiecewiseDecay([2, 4], [1.0, 0.5])
    with pytest.raises(ValueError, match="milestones"):
        L.MultiStepDecay(0.1, [3, 2])
    with pytest.raises(TypeError, match="step_size"):
        L.StepDecay(0.1, 2.5)
    with pytest.raises(TypeError, match="lr_lambda"):
        L.LambdaDecay(0.1, 3)
    with pytest.raises(TypeError, match="T_max"):
        L.CosineAnnealingDecay(0.1, 2.0)
    with pytest.raises(ValueError, match="anneal_strategy"):
        L.OneCycleLR(0.1, 10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="mode"):
        L.CyclicLR(0.1, 1.0, 2, mode="sine")
    with pytest.raises(ValueError, match="decay_steps"):
        L.PolynomialDecay(0.1, 0)
