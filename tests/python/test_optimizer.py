"""oar.optimizer: every optimizer's updates against numpy references written here, over several steps
(weight decay, parameter groups, per-parameter learning rates, clipping, schedulers), state_dict with
Paddle's key names and exact resumption, errors; and the fused update ops themselves (in place, on
every device, CPU fallback write-back)."""
import numpy as np
import pytest

import oar
from oar.nn.clip import ClipGradByGlobalNorm, ClipGradByValue
from oar.regularizer import L1Decay, L2Decay


RNG = np.random.default_rng(7)
W0 = [RNG.standard_normal((3, 4)), RNG.standard_normal((5,))]
GRADS = [[RNG.standard_normal(w.shape) for w in W0] for _ in range(4)]


def make_params(device="cpu", dtype="float32"):
    ps = []
    for i, w in enumerate(W0):
        p = oar.to_tensor(w.astype(dtype), place=device, stop_gradient=False)
        p.name = f"lin_{i}.w_0"
        ps.append(p)
    return ps


def run(opt_fn, steps=4, device="cpu", dtype="float32"):
    ps = make_params(device, dtype)
    opt = opt_fn(ps)
    for gs in GRADS[:steps]:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype(dtype)).to(p.place)).sum().backward()
        opt.step()
        opt.clear_grad()
    return [p.numpy() for p in ps], opt


# ---- numpy references (float64), one parameter at a time -----------------------------------------------
def ref(update, steps=4, l2=0.0, lrs=(0.1, 0.1), **hp):
    out = []
    for k, w in enumerate(W0):
        p, state = w.copy(), {}
        for t in range(steps):
            g = GRADS[t][k] + l2 * p
            p = update(p, g, state, lrs[k], t + 1, **hp)
        out.append(p)
    return out


def sgd(p, g, s, lr, t):
    return p - lr * g


def momentum(p, g, s, lr, t, mu=0.9, nesterov=False):
    v = mu * s.get("v", 0) + g
    s["v"] = v
    return p - lr * (g + mu * v) if nesterov else p - lr * v


def adam(p, g, s, lr, t, b1=0.9, b2=0.999, eps=1e-8, coeff=0.0, amsgrad=False):
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    if amsgrad:
        v = s["vmax"] = np.maximum(s.get("vmax", 0), v)
    p = p * (1 - lr * coeff)
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return p - lr_t * m / (np.sqrt(v) + eps * np.sqrt(1 - b2 ** t))


def adamax(p, g, s, lr, t, b1=0.9, b2=0.999, eps=1e-8):
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    u = s["u"] = np.maximum(b2 * s.get("u", 0) + eps, np.abs(g))
    return p - lr / (1 - b1 ** t) * m / u


def adagrad(p, g, s, lr, t, eps=1e-6, init=0.0):
    m = s["m"] = s.get("m", init) + g * g
    return p - lr * g / (np.sqrt(m) + eps)


def adadelta(p, g, s, lr, t, rho=0.95, eps=1e-6):
    eg = s["eg"] = rho * s.get("eg", 0) + (1 - rho) * g * g
    d = -np.sqrt((s.get("ed", 0) + eps) / (eg + eps)) * g
    s["ed"] = rho * s.get("ed", 0) + (1 - rho) * d * d
    return p + lr * d


def rmsprop(p, g, s, lr, t, rho=0.95, eps=1e-6, mom=0.0, centered=False):
    ms = s["ms"] = rho * s.get("ms", 0) + (1 - rho) * g * g
    den = ms + eps
    if centered:
        mg = s["mg"] = rho * s.get("mg", 0) + (1 - rho) * g
        den = ms - mg * mg + eps
    mo = s["mo"] = mom * s.get("mo", 0) + lr * g / np.sqrt(den)
    return p - mo


def lamb(p, g, s, lr, t, wd=0.01, b1=0.9, b2=0.999, eps=1e-6, always_adapt=False):
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    r = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps) + wd * p
    pn, rn = np.linalg.norm(p), np.linalg.norm(r)
    ratio = pn / rn if (wd > 0 or always_adapt) and pn > 0 and rn > 0 else 1.0
    return p - lr * ratio * r


def check(got, want, rtol=2e-5, atol=2e-6):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


O = oar.optimizer
CASES = [
    ("sgd", lambda ps: O.SGD(0.1, parameters=ps), lambda: ref(sgd)),
    ("sgd_l2", lambda ps: O.SGD(0.1, parameters=ps, weight_decay=0.05), lambda: ref(sgd, l2=0.05)),
    ("momentum", lambda ps: O.Momentum(0.1, parameters=ps), lambda: ref(momentum)),
    ("momentum_nesterov_l2", lambda ps: O.Momentum(0.1, momentum=0.8, parameters=ps, use_nesterov=True,
                                                   weight_decay=L2Decay(0.02)),
     lambda: ref(momentum, l2=0.02, mu=0.8, nesterov=True)),
    ("adam", lambda ps: O.Adam(0.1, parameters=ps), lambda: ref(adam)),
    ("adam_l2_betas", lambda ps: O.Adam(0.05, beta1=0.8, beta2=0.99, epsilon=1e-6, parameters=ps, weight_decay=0.1),
     lambda: ref(adam, l2=0.1, lrs=(0.05, 0.05), b1=0.8, b2=0.99, eps=1e-6)),
    ("adam_amsgrad", lambda ps: O.Adam(0.1, parameters=ps, amsgrad=True), lambda: ref(adam, amsgrad=True)),
    ("adamw", lambda ps: O.AdamW(0.1, parameters=ps), lambda: ref(adam, coeff=0.01)),
    ("adamw_fun_ratio", lambda ps: O.AdamW(0.1, parameters=ps, weight_decay=0.3, lr_ratio=lambda p: 0.5,
                                           apply_decay_param_fun=lambda n: n.startswith("lin_0")),
     lambda: [ref(adam, lrs=(0.05, 0.05), coeff=0.3)[0], ref(adam, lrs=(0.05, 0.05))[1]]),
    ("adamax", lambda ps: O.Adamax(0.1, parameters=ps), lambda: ref(adamax)),
    ("adagrad", lambda ps: O.Adagrad(0.1, parameters=ps, initial_accumulator_value=0.1),
     lambda: ref(adagrad, init=0.1)),
    ("adadelta", lambda ps: O.Adadelta(0.5, rho=0.9, parameters=ps), lambda: ref(adadelta, lrs=(0.5, 0.5), rho=0.9)),
    ("rmsprop", lambda ps: O.RMSProp(0.01, parameters=ps), lambda: ref(rmsprop, lrs=(0.01, 0.01))),
    ("rmsprop_centered", lambda ps: O.RMSProp(0.01, rho=0.9, momentum=0.5, centered=True, parameters=ps),
     lambda: ref(rmsprop, lrs=(0.01, 0.01), rho=0.9, mom=0.5, centered=True)),
    ("lamb", lambda ps: O.Lamb(0.1, parameters=ps), lambda: ref(lamb)),
    ("lamb_exclude", lambda ps: O.Lamb(0.1, lamb_weight_decay=0.1, parameters=ps,
                                       exclude_from_weight_decay_fn=lambda p: p.name.startswith("lin_1")),
     lambda: [ref(lamb, wd=0.1)[0], ref(lamb, wd=0.0)[1]]),
    ("lamb_always_adapt", lambda ps: O.Lamb(0.1, lamb_weight_decay=0.0, always_adapt=True, parameters=ps),
     lambda: ref(lamb, wd=0.0, always_adapt=True)),
]


@pytest.mark.parametrize("name,make,want", CASES, ids=[c[0] for c in CASES])
def test_updates_match_reference(name, make, want):
    got, _ = run(make)
    check(got, want())


DEVICE_CASES = [c for c in CASES if c[0] in ("adam", "momentum", "lamb", "adadelta")]


@pytest.mark.parametrize("name,make,want", DEVICE_CASES, ids=[c[0] for c in DEVICE_CASES])
def test_updates_on_device_and_float64(device, name, make, want):
    got, _ = run(make, device=device)
    check(got, want())
    got, _ = run(make, dtype="float64")
    check(got, want(), rtol=1e-10, atol=1e-12)


def test_l1_decay_and_param_regularizer_override():
    ps = make_params()
    ps[1].regularizer = L1Decay(0.1)  # takes precedence over the optimizer's L2Decay
    opt = O.SGD(0.1, parameters=ps, weight_decay=0.05)
    for gs in GRADS[:3]:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
    w0 = ref(sgd, steps=3, l2=0.05)[0]
    w1 = W0[1].copy()
    for t in range(3):
        w1 = w1 - 0.1 * (GRADS[t][1] + 0.1 * np.sign(w1))
    check([p.numpy() for p in ps], [w0, w1])


def test_param_groups_and_per_param_lr():
    ps = make_params()
    ps[0].optimize_attr = {"learning_rate": 0.5}
    opt = O.Momentum(0.1, parameters=[{"params": [ps[0]]},
                                      {"params": [ps[1]], "learning_rate": 2.0, "momentum": 0.5,
                                       "weight_decay": 0.01}], weight_decay=0.02)
    assert opt._param_groups[1]["momentum"] == 0.5
    for gs in GRADS:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
    # Paddle: a group's learning_rate replaces optimize_attr["learning_rate"] (default 1.0) and its
    # weight_decay becomes the parameters' regularizer
    assert ps[0].optimize_attr["learning_rate"] == 1.0 and ps[1].optimize_attr["learning_rate"] == 2.0
    want0 = ref(momentum, l2=0.02)[0]
    want1 = ref(momentum, l2=0.01, lrs=(0.2, 0.2), mu=0.5)[1]
    check([p.numpy() for p in ps], [want0, want1])


def test_per_param_learning_rate_multiplier():
    ps = make_params()
    ps[1].optimize_attr = {"learning_rate": 0.25}
    opt = O.Adam(0.1, parameters=ps)
    for gs in GRADS:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
    check([p.numpy() for p in ps], ref(adam, lrs=(0.1, 0.025)))


def test_skips_stop_gradient_and_missing_grads():
    ps = make_params()
    extra = oar.to_tensor(np.ones(3, "float32"), stop_gradient=False)
    extra.name = "no_grad_yet"
    frozen = oar.to_tensor(np.ones(2, "float32"))  # stop_gradient=True
    opt = O.Adam(0.1, parameters=ps + [extra, frozen])
    for gs in GRADS:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad(set_to_zero=False)
        assert ps[0].grad is None
    check([p.numpy() for p in ps], ref(adam))
    np.testing.assert_array_equal(extra.numpy(), np.ones(3))
    assert not any(k.startswith("no_grad_yet") for k in opt.state_dict())


def test_grad_clip_in_optimizer():
    ps = make_params()
    ps[1].need_clip = False
    opt = O.SGD(1.0, parameters=ps, grad_clip=ClipGradByGlobalNorm(0.5))
    for p, g in zip(ps, GRADS[0]):
        (p * oar.to_tensor(g.astype("float32"))).sum().backward()
    opt.step()
    g0 = GRADS[0][0] * 0.5 / max(np.linalg.norm(GRADS[0][0]), 0.5)
    check([p.numpy() for p in ps], [W0[0] - g0, W0[1] - GRADS[0][1]])
    # clipping comes before weight decay (Paddle's order)
    ps = make_params()
    opt = O.SGD(1.0, parameters=ps, grad_clip=ClipGradByValue(0.1), weight_decay=0.5)
    for p, g in zip(ps, GRADS[0]):
        (p * oar.to_tensor(g.astype("float32"))).sum().backward()
    opt.step()
    check([p.numpy() for p in ps], [w - (np.clip(g, -0.1, 0.1) + 0.5 * w) for w, g in zip(W0, GRADS[0])])


def test_lr_scheduler_drives_the_rate():
    sched = O.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    ps = make_params()
    opt = O.SGD(sched, parameters=ps)
    lrs = []
    for gs in GRADS:
        lrs.append(opt.get_lr())
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
        sched.step()
    assert lrs == [0.1, 0.1, 0.05, 0.05]
    want = [W0[k] - sum(lrs[t] * GRADS[t][k] for t in range(4)) for k in range(2)]
    check([p.numpy() for p in ps], want)
    assert opt.state_dict()["LR_Scheduler"] == {"last_epoch": 4, "last_lr": 0.025}
    with pytest.raises(RuntimeError, match="LRScheduler"):
        opt.set_lr(0.3)
    assert opt._learning_rate is sched


def test_get_set_lr():
    opt = O.Adam(0.01, parameters=make_params())
    assert opt.get_lr() == 0.01
    opt.set_lr(0.5)
    assert opt.get_lr() == 0.5 and opt._learning_rate == 0.5
    opt.set_lr_scheduler(O.lr.ExponentialDecay(0.2, gamma=0.5))
    assert opt.get_lr() == 0.2
    with pytest.raises(TypeError, match="set_lr"):
        opt.set_lr_scheduler(0.1)


def test_state_dict_names_and_exact_resume():
    ps = make_params()
    sched = O.lr.ExponentialDecay(0.1, gamma=0.9)
    opt = O.Adam(sched, parameters=ps)
    assert opt.state_dict() == {"LR_Scheduler": {"last_epoch": 0, "last_lr": 0.1}}
    for gs in GRADS[:2]:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
        sched.step()
    sd = opt.state_dict()
    assert set(sd) == {f"lin_{i}.w_0_{a}_0" for i in range(2)
                       for a in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc")} | {"LR_Scheduler"}
    np.testing.assert_allclose(sd["lin_0.w_0_beta1_pow_acc_0"].numpy(), [0.9 ** 3], rtol=1e-6)
    assert sd["lin_0.w_0_moment1_0"].shape == [3, 4]
    saved = {k: (v.numpy().copy() if hasattr(v, "numpy") else dict(v)) for k, v in sd.items()}
    params_saved = [p.numpy().copy() for p in ps]

    def continue_(ps, opt, sched):
        for gs in GRADS[2:]:
            for p, g in zip(ps, gs):
                (p * oar.to_tensor(g.astype("float32"))).sum().backward()
            opt.step()
            opt.clear_grad()
            sched.step()
        return [p.numpy() for p in ps]

    first = continue_(ps, opt, sched)
    # a fresh optimizer and parameters restored from the saved state continue identically
    ps2 = make_params()
    for p, v in zip(ps2, params_saved):
        p.set_value(v)
    sched2 = O.lr.ExponentialDecay(0.1, gamma=0.9)
    opt2 = O.Adam(sched2, parameters=ps2)
    opt2.set_state_dict(saved)
    assert sched2.last_epoch == 2
    second = continue_(ps2, opt2, sched2)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # loading into an optimizer whose accumulators exist overwrites them
    opt2.set_state_dict(saved)
    np.testing.assert_array_equal(opt2.state_dict()["lin_1.w_0_moment2_0"].numpy(), saved["lin_1.w_0_moment2_0"])
    with pytest.raises(ValueError, match="lin_0.w_0_moment1_0"):
        opt2.set_state_dict({"LR_Scheduler": saved["LR_Scheduler"]})
    with pytest.raises(ValueError, match="LR_Scheduler"):
        opt2.set_state_dict({k: v for k, v in saved.items() if k != "LR_Scheduler"})


def test_accumulator_names_of_other_optimizers():
    names = {
        O.Momentum: {"velocity"}, O.Adamax: {"moment", "inf_norm", "beta1_pow_acc"},
        O.Adagrad: {"moment"}, O.Adadelta: {"_avg_squared_grad", "_avg_squared_update"},
        O.RMSProp: {"momentum", "mean_square", "mean_grad"}, O.Lamb: {"moment1", "moment2", "beta1_pow_acc",
                                                                    "beta2_pow_acc"},
    }
    for cls, accs in names.items():
        _, opt = run(lambda ps: cls(0.1, parameters=ps), steps=1)
        assert set(opt.state_dict()) == {f"lin_{i}.w_0_{a}_0" for i in range(2) for a in accs}, cls
    _, opt = run(lambda ps: O.Adam(0.1, parameters=ps, amsgrad=True, name="opt"), steps=1)
    assert "lin_0.w_0_opt_moment2_max_0" in opt.state_dict()


def test_minimize_does_not_run_backward():
    ps = make_params()
    opt = O.SGD(0.1, parameters=ps)
    loss = (ps[0] * oar.to_tensor(GRADS[0][0].astype("float32"))).sum()
    _, pg = opt.minimize(loss)
    assert pg == [] and np.array_equal(ps[0].numpy(), W0[0].astype("float32"))
    loss.backward()
    _, pg = opt.minimize(loss, no_grad_set={ps[1].name})
    assert [p.name for p, _ in pg] == ["lin_0.w_0"]
    check([ps[0].numpy()], [W0[0] - 0.1 * GRADS[0][0]])


def test_errors():
    ps = make_params()
    with pytest.raises(AttributeError, match="parameters"):
        O.SGD(0.1)
    with pytest.raises(TypeError, match="learning_rate"):
        O.SGD("fast", parameters=ps)
    with pytest.raises(TypeError, match="one Tensor"):
        O.SGD(0.1, parameters=ps[0])
    with pytest.raises(ValueError, match="beta1"):
        O.Adam(0.1, beta1=1.5, parameters=ps)
    with pytest.raises(ValueError, match="more than one parameter group"):
        O.SGD(0.1, parameters=[{"params": ps}, {"params": ps[:1]}])
    with pytest.raises(TypeError, match="weight_decay"):
        O.SGD(0.1, parameters=ps, weight_decay="l2")
    with pytest.raises(TypeError, match="grad_clip"):
        O.SGD(0.1, parameters=ps, grad_clip=1.0)
    with pytest.raises(TypeError, match="set_lr"):
        O.SGD(0.1, parameters=ps).set_lr("x")


# ---- the fused ops directly ---------------------------------------------------------------------------
def test_merged_ops_update_in_place_on_every_device(device):
    ps = [oar.to_tensor(w.astype("float32"), place=device) for w in W0]
    gs = [oar.to_tensor(g.astype("float32"), place=device) for g in GRADS[0]]
    vs = [oar.zeros(w.shape).to(device) for w in W0]
    oar._C.Op("merged_momentum", "learning_rate")(ps + gs + vs, [0.1, 0.2], mu=0.9, l2_coeff=[0.0, 0.5])
    check([p.numpy() for p in ps], [W0[0] - 0.1 * GRADS[0][0], W0[1] - 0.2 * (GRADS[0][1] + 0.5 * W0[1])])
    check([v.numpy() for v in vs], [GRADS[0][0], GRADS[0][1] + 0.5 * W0[1]])
    # the per-parameter ops are the same update
    p = oar.to_tensor(W0[0].astype("float32"), place=device)
    m1, m2 = oar.zeros([3, 4]).to(device), oar.zeros([3, 4]).to(device)
    b1, b2 = oar.to_tensor([0.9], place=device), oar.to_tensor([0.999], place=device)
    oar._C.Op("adam", "learning_rate")(p, gs[0], m1, m2, b1, b2, oar.zeros([1]).to(device), [0.1])
    check([p.numpy(), b1.numpy(), b2.numpy()], [adam(W0[0], GRADS[0][0], {}, 0.1, 1), [0.81], [0.999 ** 2]])
    p = oar.to_tensor(W0[1].astype("float32"), place=device)
    oar._C.Op("sgd", "learning_rate")(p, gs[1], [0.5])
    check([p.numpy()], [W0[1] - 0.5 * GRADS[0][1]])
    v = oar.zeros([5]).to(device)
    oar._C.Op("momentum", "learning_rate")(p, gs[1], v, [0.5], mu=0.9)
    check([v.numpy()], [GRADS[0][1]])


def test_merged_ops_16bit_and_float64():
    for dt in ("float16", "bfloat16", "float64"):
        p = oar.to_tensor(np.ones(4), dtype=dt)
        g = oar.to_tensor(np.full(4, 0.5), dtype=dt)
        oar._C.Op("merged_sgd", "learning_rate")([p, g], [0.5])
        np.testing.assert_allclose(p.astype("float32").numpy(), np.full(4, 0.75))


def test_merged_op_errors():
    p, g = oar.ones([3]), oar.ones([4])
    with pytest.raises(ValueError, match="merged_sgd: grad\\[0\\]"):
        oar._C.Op("merged_sgd", "learning_rate")([p, g], [0.1])
    with pytest.raises(ValueError, match="merged_momentum: expects 3 equal lists"):
        oar._C.Op("merged_momentum", "learning_rate")([p, p], [0.1])
    with pytest.raises(ValueError, match="learning_rate"):
        oar._C.Op("merged_sgd", "learning_rate")([p, oar.ones([3])], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="beta1_pow"):
        oar._C.Op("adam", "learning_rate")(p, p, p, p, oar.ones([2]), oar.ones([1]), oar.ones([1]), [0.1])
    with pytest.raises(TypeError, match="merged_sgd"):
        oar._C.Op("merged_sgd", "learning_rate")([oar.ones([3], dtype="int32"), oar.ones([3], dtype="int32")], [0.1])
    with pytest.raises(ValueError, match="contiguous"):
        x = oar.ones([4, 4])
        oar._C.Op("merged_sgd", "learning_rate")([x[:, ::2], oar.ones([4, 2])], [0.1])
    # a parameter that requires gradients may only be updated under no_grad
    w = oar.ones([3])
    w.stop_gradient = False
    with pytest.raises(RuntimeError, match="no_grad"):
        oar._C.Op("merged_sgd", "learning_rate")([w, oar.ones([3])], [0.1])
    with oar.no_grad():
        oar._C.Op("merged_sgd", "learning_rate")([w, oar.ones([3])], [0.1])
    np.testing.assert_allclose(w.numpy(), np.full(3, 0.9), rtol=1e-6)


def test_merged_op_writes_through_contiguous_views(device):
    # parameters living inside one flat buffer (offset views): the update, and under the CPU fallback
    # the write-back, touch exactly their ranges
    buf = oar.to_tensor(np.arange(12, dtype="float32"), place=device)
    a, b = buf[2:5], buf[7:11]
    oar._C.Op("merged_sgd", "learning_rate")([a, b, oar.ones([3]).to(device), oar.ones([4]).to(device)], [0.5, 2.0])
    want = np.arange(12, dtype="float32")
    want[2:5] -= 0.5
    want[7:11] -= 2.0
    np.testing.assert_array_equal(buf.numpy(), want)


def test_group_overrides_adam_hyperparameters():
    ps = make_params()
    opt = O.Adam(0.1, parameters=[{"params": [ps[0]], "beta1": 0.5, "epsilon": 1e-3}, {"params": [ps[1]]}])
    for gs in GRADS:
        for p, g in zip(ps, gs):
            (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        opt.step()
        opt.clear_grad()
    check([p.numpy() for p in ps], [ref(adam, b1=0.5, eps=1e-3)[0], ref(adam)[1]])
    np.testing.assert_allclose(opt.state_dict()["lin_0.w_0_beta1_pow_acc_0"].numpy(), [0.5 ** 5], rtol=1e-6)


def test_global_norm_clip_folds_into_update_before_decay():
    # the clipping scale reaches the kernel (grad_scale); L1Decay is added after scaling, L2Decay in
    # the kernel after scaling too; the parameters' .grad stay unscaled
    ps = make_params()
    ps[0].regularizer = L1Decay(0.1)
    opt = O.Momentum(0.5, momentum=0.9, parameters=ps, weight_decay=0.05, grad_clip=ClipGradByGlobalNorm(1.0))
    for p, g in zip(ps, GRADS[0]):
        (p * oar.to_tensor(g.astype("float32"))).sum().backward()
    opt.step()
    s = 1.0 / max(np.sqrt(sum((g ** 2).sum() for g in GRADS[0])), 1.0)
    want0 = W0[0] - 0.5 * (s * GRADS[0][0] + 0.1 * np.sign(W0[0]))
    want1 = W0[1] - 0.5 * (s * GRADS[0][1] + 0.05 * W0[1])
    check([p.numpy() for p in ps], [want0, want1])
    np.testing.assert_allclose(ps[1].grad.numpy(), GRADS[0][1], rtol=1e-6)


def test_grad_scale_attribute(device):
    p = oar.to_tensor(W0[1].astype("float32"), place=device)
    g = oar.to_tensor(GRADS[0][1].astype("float32"), place=device)
    oar._C.Op("merged_sgd", "learning_rate")([p, g], [0.5], l2_coeff=[0.1], grad_scale=[0.25])
    check([p.numpy()], [W0[1] - 0.5 * (0.25 * GRADS[0][1] + 0.1 * W0[1])])
    with pytest.raises(ValueError, match="grad_scale"):
        oar._C.Op("merged_sgd", "learning_rate")([p, g], [0.5], grad_scale=[1.0, 2.0])
