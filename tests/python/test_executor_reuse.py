"""The executor's buffer reuse (decision 145): values released after their last use go to the scope's
pool only when nothing else can see them, and later outputs of the same size are written into them.
A wrong plan would overwrite a value that is still alive (a fetched output, a view of it, a fed tensor,
what the backward program reads, a parameter's gradient): every test keeps such values and compares
them with numpy after later runs have reused buffers."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F


def _cp(fn):
    """The one traced program of a to_static function."""
    (cp,) = fn._cache.values()
    return cp


def chain(x):
    # Same-sized temporaries: each is released right after the next op, so later ops reuse them.
    a = x * 2.0
    b = a + 1.0
    c = oar.tanh(b)
    d = c * b
    e = d - a
    return e, c  # c is fetched: it must keep its values while e is computed


def chain_np(x):
    a = x * 2.0
    b = a + 1.0
    c = np.tanh(b)
    d = c * b
    return d - a, c


def test_reuse_happens_and_fetches_are_not_clobbered():
    f = oar.jit.to_static(chain)
    rng = np.random.RandomState(0)
    xs = [rng.randn(16, 64).astype("float32") for _ in range(4)]
    held = []
    with oar.no_grad():
        for x in xs:
            held.append((x, f(oar.to_tensor(x))))
    stats = _cp(f)._exe.stats()
    assert stats["runs"] == 4 and stats["reused"] > 0  # later runs write into recycled buffers
    for x, (e, c) in held:  # every run's outputs kept their own values
        want_e, want_c = chain_np(x.astype("float64"))
        np.testing.assert_allclose(e.numpy(), want_e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-5, atol=1e-6)
        assert e.numpy().ctypes.data != c.numpy().ctypes.data


def test_same_results_without_reuse():
    p = None

    def g(x):
        y = oar.matmul(x, x)
        z = F.relu(y) + x
        return oar.nn.functional.softmax(z * y, axis=-1).sum(axis=0)

    f = oar.jit.to_static(g)
    x = oar.to_tensor(np.random.RandomState(1).randn(32, 32).astype("float32"))
    with oar.no_grad():
        outs = [f(x).numpy() for _ in range(3)]
    cp = _cp(f)
    p = oar._C._select_mode(oar._C._filter_ops_by_role(cp.main_program.desc, [0]), True)
    plain = cp._bind(oar._C._Executor(p, cp.place, feed_names=list(cp.feed_names),
                                      fetch_names=list(cp.fetch_names), reuse_buffers=False))
    want = plain.run({cp.feed_names[0]: x})[0].numpy()
    assert plain.stats()["reused"] == 0
    for o in outs:
        np.testing.assert_array_equal(o, want)  # the same kernels in the same order: bit for bit


def test_views_and_fed_tensors_are_not_recycled():
    def g(x):
        a = x + 1.0
        v = a.reshape([64, 16])  # a view of a: fetched, so a's buffer stays with the caller
        t = a.transpose([1, 0])  # a permuted view, read by the next op only
        b = t * 3.0
        c = b - 1.0
        return v, c

    f = oar.jit.to_static(g)
    rng = np.random.RandomState(2)
    arrays = [rng.randn(16, 64).astype("float32") for _ in range(3)]
    fed = [oar.to_tensor(a) for a in arrays]
    with oar.no_grad():
        outs = [f(t) for t in fed]
    for a, t, (v, c) in zip(arrays, fed, outs):
        np.testing.assert_array_equal(t.numpy(), a)  # the fed tensor (held here) is never written
        np.testing.assert_allclose(v.numpy(), (a + 1.0).reshape(64, 16), rtol=1e-6)
        np.testing.assert_allclose(c.numpy(), (a + 1.0).T * 3.0 - 1.0, rtol=1e-5, atol=1e-6)


def test_changing_shapes_give_stale_buffers_back():
    # One program with an unknown batch extent, run with a new batch size each time.
    f = oar.jit.to_static(chain, input_spec=[oar.static.InputSpec([None, 8], "float32")])
    cp = f.concrete_program
    exe = cp._executor()
    with oar.no_grad():
        for n in [k // 3 for k in range(3, 60)]:  # each batch size three runs in a row
            x = np.full((n, 8), 0.25 * n, "float32")
            e, c = exe.run({cp.feed_names[0]: oar.to_tensor(x)})
            want_e, want_c = chain_np(x.astype("float64"))
            np.testing.assert_allclose(e.numpy(), want_e, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-5, atol=1e-6)
            # Only sizes asked for in this run or the previous one are kept (a few buffers each), not
            # one set per shape seen.
            assert exe.stats()["recycled_now"] <= 6
    assert exe.stats()["runs"] == 57 and exe.stats()["reused"] > 0


def test_training_equals_eager_and_gradients_survive_the_next_step():
    def make():
        oar.seed(3)
        layer = oar.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0)
        return oar.nn.Sequential(oar.nn.TransformerEncoder(layer, 2), oar.nn.Flatten(), oar.nn.Linear(8 * 32, 5))

    rng = np.random.RandomState(4)
    xs = [oar.to_tensor(rng.randn(4, 8, 32).astype("float32")) for _ in range(4)]
    ys = [oar.to_tensor(rng.randint(0, 5, (4,)).astype("int64")) for _ in range(4)]
    losses, grads = {}, {}
    for mode in ("eager", "static"):
        model = make()
        run = oar.jit.to_static(model) if mode == "static" else model
        opt = oar.optimizer.Adam(1e-3, parameters=model.parameters())
        losses[mode], grads[mode] = [], []
        for x, y in zip(xs, ys):
            loss = F.cross_entropy(run(x), y)
            loss.backward()
            # The gradient tensors themselves (not copies): a later step must not write into them.
            grads[mode].append([(p.grad, p.grad.numpy().copy()) for p in model.parameters()])
            opt.step()
            opt.clear_grad()
            losses[mode].append(float(loss))
        if mode == "static":
            t = _cp(run.forward)._train
            assert t.fexe.stats()["reused"] > 0 and t.bexe.stats()["reused"] > 0
    np.testing.assert_allclose(losses["static"], losses["eager"], rtol=1e-5, atol=1e-6)
    for step_s, step_e in zip(grads["static"], grads["eager"]):
        for (gs, copy_s), (_, copy_e) in zip(step_s, step_e):
            np.testing.assert_array_equal(gs.numpy(), copy_s)
            np.testing.assert_allclose(copy_s, copy_e, rtol=1e-4, atol=1e-6)


def test_leaf_gradients_are_distinct_tensors():
    # The engine stores a kernel's gradient in .grad as it is when nobody else holds it (no detach view);
    # a gradient someone else holds (a hook kept it) still gives the leaf its own tensor.
    x1 = oar.to_tensor(np.ones(3, "float32"), stop_gradient=False)
    x2 = oar.to_tensor(np.ones(3, "float32"), stop_gradient=False)
    (x1 + x2).sum().backward()
    assert x1.grad.stop_gradient and x2.grad.stop_gradient
    x1.grad.stop_gradient = False  # autograd state on x1's gradient only
    assert x2.grad.stop_gradient
    np.testing.assert_array_equal(x2.grad.numpy(), np.ones(3))
    w = oar.to_tensor(np.arange(3, dtype="float32"), stop_gradient=False)
    seen = []
    w.register_hook(lambda g: seen.append(g))  # the hook keeps the gradient it was given
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.arange(3))
    seen[0].stop_gradient = False
    assert w.grad.stop_gradient  # .grad is not the tensor the hook kept
