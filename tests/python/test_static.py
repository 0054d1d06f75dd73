"""Static mode (oar.static): programs built from oar ops, run by the executor, differentiated with
append_backward, trained with minimize, saved as inference models. Results are compared with eager
execution of the same model and parameters."""
import os

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import static


@pytest.fixture
def static_mode():
    oar.enable_static()
    yield
    oar.disable_static()


def _mlp(seed=0):
    oar.seed(seed)
    return oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.Tanh(), oar.nn.Linear(8, 3))


def _eager_copy(model):
    """An eager twin of `model` with the same parameter values."""
    twin = _mlp(1)
    twin.set_state_dict({k: oar.to_tensor(v.numpy()) for k, v in model.state_dict().items()})
    return twin


def test_mode_switches():
    assert oar.in_dynamic_mode()
    oar.enable_static()
    try:
        assert not oar.in_dynamic_mode()
    finally:
        oar.disable_static()
    assert oar.in_dynamic_mode()


def test_forward_matches_eager(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4], "float32")
        model = _mlp()
        y = model(x)
        assert y.shape == [-1, 3]
        assert isinstance(y, static.Variable) and isinstance(oar.ones([1]), static.Variable)
    exe = static.Executor()
    exe.run(startup)
    xs = np.random.RandomState(0).randn(5, 4).astype("float32")
    out, = exe.run(main, feed={"x": xs}, fetch_list=[y])
    oar.disable_static()
    ref = _eager_copy(model)(oar.to_tensor(xs)).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    # Another batch size through the same program.
    out7, = exe.run(main, feed={"x": np.ones((7, 4), "float32")}, fetch_list=[y])
    assert out7.shape == (7, 3)


def test_program_print_and_vars(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [2, 3])
        y = oar.nn.functional.relu(x) * 2.0
    text = str(main)
    assert "oar.relu" in text and "oar.multiply" in text
    assert "var x : LOD_TENSOR.shape(2, 3).dtype(float32).stop_gradient(True)" in text
    # repr of a program variable, as Paddle 2.6.2 prints it (a tuple's inside: "3," for one dim)
    with static.program_guard(static.Program()):
        assert repr(static.data("a", [-1, 4, 5])) == "var a : LOD_TENSOR.shape(-1, 4, 5).dtype(float32).stop_gradient(True)"
        assert repr(static.data("b", [3])) == "var b : LOD_TENSOR.shape(3,).dtype(float32).stop_gradient(True)"
        assert repr(static.data("c", [])) == "var c : LOD_TENSOR.shape().dtype(float32).stop_gradient(True)"
    assert main.global_block().has_var(y.name)
    with pytest.raises(ValueError, match="has no value while the program is being built"):
        y.numpy()


def test_append_backward_matches_eager_gradients(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 4])
        label = static.data("label", [None, 3])
        model = _mlp()
        loss = F.mse_loss(model(x), label)
        pg = static.append_backward(loss)
    assert {p.name for p, _ in pg} == {p.name for p in model.parameters()}
    assert all(g.name == p.name + "@GRAD" for p, g in pg)
    rs = np.random.RandomState(1)
    xs, ls = rs.randn(6, 4).astype("float32"), rs.randn(6, 3).astype("float32")
    exe = static.Executor()
    grads = exe.run(main, feed={"x": xs, "label": ls}, fetch_list=[g for _, g in pg])
    oar.disable_static()
    twin = _eager_copy(model)
    F.mse_loss(twin(oar.to_tensor(xs)), oar.to_tensor(ls)).backward()
    by_name = dict(zip([p.name for p, _ in pg], grads))
    for (k, p), tp in zip(model.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(by_name[p.name], tp.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
    # The unknown batch size enters the mean's gradient: another batch size must still be right.
    xs2, ls2 = rs.randn(3, 4).astype("float32"), rs.randn(3, 3).astype("float32")
    oar.enable_static()
    grads2 = exe.run(main, feed={"x": xs2, "label": ls2}, fetch_list=[g for _, g in pg])
    oar.disable_static()
    twin.clear_gradients()
    F.mse_loss(twin(oar.to_tensor(xs2)), oar.to_tensor(ls2)).backward()
    np.testing.assert_allclose(grads2[0], list(twin.parameters())[0].grad.numpy(), rtol=1e-4, atol=1e-6)


def test_gradients_of_input(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [3])
        x.stop_gradient = False
        y = (x * x).sum()
        gx, = static.gradients([y], [x])
    out, = static.Executor().run(main, feed={"x": np.array([1.0, -2.0, 3.0], "float32")}, fetch_list=[gx])
    np.testing.assert_allclose(out, [2.0, -4.0, 6.0])


def _train_static_and_eager(make_opt, steps=4):
    """Trains the MLP with minimize in a static program and its eager twin with the same optimizer
    (make_opt(parameters) -> (optimizer, scheduler or None)); both schedulers step after every step.
    Losses and final parameters must agree."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        label = static.data("label", [None, 3])
        model = _mlp()
        loss = F.mse_loss(model(x), label)
        opt, sched = make_opt(None)
        opt.minimize(loss)
    oar.disable_static()
    twin = _eager_copy(model)
    eager_opt, eager_sched = make_opt(twin.parameters())
    oar.enable_static()
    exe = static.Executor()
    exe.run(startup)
    rs = np.random.RandomState(2)
    for step in range(steps):
        xs, ls = rs.randn(8, 4).astype("float32"), rs.randn(8, 3).astype("float32")
        lv, = exe.run(main, feed={"x": xs, "label": ls}, fetch_list=[loss])
        oar.disable_static()
        el = F.mse_loss(twin(oar.to_tensor(xs)), oar.to_tensor(ls))
        el.backward()
        eager_opt.step()
        eager_opt.clear_grad()
        for sc in (sched, eager_sched):
            if sc is not None:
                sc.step()
        oar.enable_static()
        np.testing.assert_allclose(lv, el.numpy(), rtol=1e-5, atol=1e-6, err_msg="step {}".format(step))
    oar.disable_static()
    for p, tp in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.numpy(), tp.numpy(), rtol=1e-5, atol=1e-6)
    return main


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_minimize_trains_like_eager(static_mode, opt):
    _train_static_and_eager(lambda params: (getattr(oar.optimizer, opt)(learning_rate=0.05, parameters=params),
                                            None))


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_minimize_follows_the_lr_scheduler(static_mode, opt):
    """A scheduler stepped between Executor.run calls changes the static program's learning rate, also
    from a rate of 0 (warm-up), as Paddle's learning-rate variable does."""
    def make(params):
        sched = oar.optimizer.lr.LinearWarmup(oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5),
                                              warmup_steps=2, start_lr=0.0, end_lr=0.1)
        return getattr(oar.optimizer, opt)(learning_rate=sched, parameters=params), sched

    main = _train_static_and_eager(make, steps=5)
    lrs = [op.attr("learning_rate") for op in main.global_block().ops if op.has_attr("learning_rate")]
    assert lrs and all(v != [0.0] for v in lrs)  # the last run used a rate past the warm-up


def test_clone_for_test_drops_training_ops(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 4])
        model = _mlp()
        out = model(x)
        loss = out.mean()
        test_prog = main.clone(for_test=True)
        oar.optimizer.SGD(0.1).minimize(loss)
    n_main, n_test = main.desc.num_ops(0), test_prog.desc.num_ops(0)
    assert n_test < n_main
    xs = np.ones((2, 4), "float32")
    exe = static.Executor()
    before = [p.numpy().copy() for p in model.parameters()]
    r, = exe.run(test_prog, feed={"x": xs}, fetch_list=[out.name])
    for b, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(b, p.numpy())  # the test program does not update
    assert r.shape == (2, 3)


def test_save_and_load_inference_model(static_mode, tmp_path):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        model = _mlp()
        y = F.softmax(model(x))
        loss = y.mean()
        oar.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    xs = np.random.RandomState(3).randn(5, 4).astype("float32")
    ref, = exe.run(main, feed={"x": xs}, fetch_list=[y])  # also one SGD step
    ref, = exe.run(main.clone(for_test=True), feed={"x": xs}, fetch_list=[y])
    prefix = str(tmp_path / "mlp")
    static.save_inference_model(prefix, [x], [y], exe, program=main)
    assert os.path.exists(prefix + ".pdmodel") and os.path.exists(prefix + ".pdiparams")
    prog, feeds, fetches = static.load_inference_model(prefix, exe)
    assert feeds == ["x"]
    optypes = [op.type for op in prog.global_block().ops]
    assert optypes[0] == "feed" and optypes[-1] == "fetch"
    assert not any("sgd" in t for t in optypes)  # pruned to the forward
    out, = exe.run(prog, feed={"x": xs}, fetch_list=fetches)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7)


def test_static_nn_fc_and_errors(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 2, 3])
        y = static.nn.fc(x, 5, num_flatten_dims=1, activation="relu")
        assert y.shape == [-1, 5]
    exe = static.Executor()
    out, = exe.run(main, feed={"x": np.ones((4, 2, 3), "float32")}, fetch_list=[y])
    assert out.shape == (4, 5) and (out >= 0).all()
    # as Paddle: a feed entry the program lacks is skipped with a warning; 'x' is then missing
    with pytest.warns(UserWarning, match="The variable nope is not found"), \
            pytest.raises(RuntimeError, match="'x' has no value"):
        exe.run(main, feed={"nope": np.ones(1, "float32")}, fetch_list=[y])
    with pytest.raises(TypeError, match="dtype"):
        exe.run(main, feed={"x": np.ones((4, 2, 3), "int64")}, fetch_list=[y])
    with pytest.raises(ValueError, match="shape"):
        exe.run(main, feed={"x": np.ones((4, 3, 3), "float32")}, fetch_list=[y])


def test_concrete_control_flow_in_static_nn(static_mode):
    # cond/while_loop with Python or concrete conditions pick branches now.
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [2])
        y = static.nn.cond(True, lambda: x + 1, lambda: x - 1)
        i, = static.nn.while_loop(lambda i: i < 3, lambda i: [i + 1], [0])
    out, = static.Executor().run(main, feed={"x": np.zeros(2, "float32")}, fetch_list=[y])
    np.testing.assert_array_equal(out, [1, 1])
    assert i == 3


def test_symbolic_outside_guard_is_refused():
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [2])
    with pytest.raises(ValueError, match="static-graph variable"):
        oar.nn.functional.relu(x)


def test_cond_on_a_variable_runs_the_right_branch(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [3])
        pred = x.sum() > 0
        y, z = static.nn.cond(pred, lambda: (x * 2, x.max()), lambda: (x - 1, x.min()))
    exe = static.Executor()
    pos = np.array([1.0, 2.0, -0.5], "float32")
    neg = -pos
    a, b = exe.run(main, feed={"x": pos}, fetch_list=[y, z])
    np.testing.assert_allclose(a, pos * 2)
    np.testing.assert_allclose(b, 2.0)
    a, b = exe.run(main, feed={"x": neg}, fetch_list=[y, z])
    np.testing.assert_allclose(a, neg - 1)
    np.testing.assert_allclose(b, -2.0)
    types = [op.type for op in main.global_block().ops]
    assert types.count("conditional_block") == 2 and main.num_blocks == 3


def test_while_loop_on_a_variable(static_mode):
    main = static.Program()
    with static.program_guard(main):
        n = static.data("n", [], "int64")
        x = static.data("x", [2])

        def body(i, acc, a, b):
            return i + 1, acc + x * i.astype("float32"), b, a  # a and b swap each step

        i, acc, a, b = static.nn.while_loop(lambda i, acc, a, b: i < n, body,
                                            [oar.zeros([], "int64"), oar.zeros([2]), oar.ones([1]), oar.zeros([1])])
    exe = static.Executor()
    for steps in (0, 1, 4):
        ri, racc, ra = exe.run(main, feed={"n": np.array(steps, "int64"), "x": np.array([1.0, 2.0], "float32")},
                               fetch_list=[i, acc, a])
        assert int(ri) == steps
        np.testing.assert_allclose(racc, np.array([1.0, 2.0]) * sum(range(steps)))
        np.testing.assert_allclose(ra, [1.0 if steps % 2 == 0 else 0.0])


def _cond_model(x, lin, lin2, cond):
    h = lin(x)
    # parameters used inside the branches, an outer variable passed through, a nested cond
    y = cond(h.sum() > 0, lambda: oar.tanh(lin2(h)) * 2.0, lambda: (h * h).sum(axis=1, keepdim=True) - h)
    z = cond(y.mean() < 1.0, lambda: cond(y.max() > 0.5, lambda: y * y, lambda: -y), lambda: y + 1.0)
    return (z * h).mean()


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_append_backward_through_cond_matches_eager(static_mode, seed):
    """Gradients through static.nn.cond (each branch's backward under a conditional_block) equal eager
    autograd's through the Python branch taken, for parameters used inside and outside the branches
    and for the input; the seeds take different branches."""
    rs = np.random.RandomState(seed)
    xs = (rs.randn(3, 4) * 2).astype("float32")
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 4])
        x.stop_gradient = False
        oar.seed(seed)
        lin, lin2 = oar.nn.Linear(4, 1), oar.nn.Linear(1, 1)
        loss = _cond_model(x, lin, lin2, static.nn.cond)
        params = lin.parameters() + lin2.parameters()
        grads = static.gradients([loss], [x] + params)
    fetch = [loss] + [g for g in grads if g is not None]
    got = static.Executor().run(main, feed={"x": xs}, fetch_list=fetch)
    oar.disable_static()
    ex = oar.to_tensor(xs, stop_gradient=False)
    eloss = _cond_model(ex, lin, lin2, lambda p, t, f: t() if bool(p) else f())
    eloss.backward()
    oar.enable_static()
    want = [eloss.numpy(), ex.grad.numpy()] + [
        p.grad.numpy() if p.grad is not None else np.zeros(p.shape, "float32") for p in params]
    want = [w for w, g in zip(want, [loss] + grads) if g is not None]
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="fetch {}".format(i))


def test_minimize_through_cond_trains_like_eager(static_mode):
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        oar.seed(7)
        lin, lin2 = oar.nn.Linear(4, 1), oar.nn.Linear(1, 1)
        loss = _cond_model(x, lin, lin2, static.nn.cond)
        oar.optimizer.SGD(0.1).minimize(loss)
    oar.disable_static()
    oar.seed(7)
    elin, elin2 = oar.nn.Linear(4, 1), oar.nn.Linear(1, 1)
    for a, b in zip(lin.parameters() + lin2.parameters(), elin.parameters() + elin2.parameters()):
        b.set_value(a.numpy())
    eopt = oar.optimizer.SGD(0.1, parameters=elin.parameters() + elin2.parameters())
    oar.enable_static()
    exe = static.Executor()
    exe.run(startup)
    rs = np.random.RandomState(3)
    for step in range(6):
        xs = (rs.randn(3, 4) * 2).astype("float32")
        lv, = exe.run(main, feed={"x": xs}, fetch_list=[loss])
        oar.disable_static()
        el = _cond_model(oar.to_tensor(xs), elin, elin2, lambda p, t, f: t() if bool(p) else f())
        el.backward()
        eopt.step()
        eopt.clear_grad()
        oar.enable_static()
        np.testing.assert_allclose(lv, el.numpy(), rtol=1e-5, atol=1e-6, err_msg="step {}".format(step))


def _rnn_model(x, n, lin, lin2, while_loop, cond):
    """h = tanh(lin(h) + ctx) n times (a counter condition), the initial h and an accumulator depending
    on parameters, lin2 a closure parameter also behind the closure value ctx, a cond inside the body."""
    h0 = oar.tanh(lin(x))
    ctx = lin2(x) * 0.5

    def body(i, h, acc):
        h = oar.tanh(lin(h) + ctx)
        s = cond(h.sum() > 0, lambda: h * 1.5, lambda: lin2(h))
        return i + 1, h, acc + s * s

    _, h, acc = while_loop(lambda i, h, acc: i < n, body, [oar.zeros([], "int64"), h0, h0 * 0.5])
    return (h * acc).mean() + lin2(h).sum()


def _eager_while(cond, body, loop_vars):
    while bool(cond(*loop_vars)):
        loop_vars = list(body(*loop_vars))
    return loop_vars


def _eager_cond(p, t, f):
    return t() if bool(p) else f()


@pytest.mark.parametrize("steps", [0, 1, 2, 5])
def test_append_backward_through_while_loop_matches_eager(static_mode, steps):
    """Gradients through static.nn.while_loop (the iterations' loop variables stacked, the body re-run
    and differentiated in a reverse loop) equal eager autograd's through the unrolled Python loop, for
    the input, the parameters used before, inside (also in a nested cond) and after the loop."""
    rs = np.random.RandomState(steps)
    xs = rs.randn(3, 4).astype("float32")
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 4])
        n = static.data("n", [], "int64")
        x.stop_gradient = False
        oar.seed(steps)
        lin, lin2 = oar.nn.Linear(4, 4), oar.nn.Linear(4, 4)
        loss = _rnn_model(x, n, lin, lin2, static.nn.while_loop, static.nn.cond)
        params = lin.parameters() + lin2.parameters()
        grads = static.gradients([loss], [x] + params)
    assert all(g is not None for g in grads)
    exe = static.Executor()
    got = exe.run(main, feed={"x": xs, "n": np.array(steps, "int64")}, fetch_list=[loss] + grads)
    oar.disable_static()
    ex = oar.to_tensor(xs, stop_gradient=False)
    eloss = _rnn_model(ex, steps, lin, lin2, _eager_while, _eager_cond)
    eloss.backward()
    want = [eloss.numpy(), ex.grad.numpy()] + [p.grad.numpy() for p in params]
    for p in params:
        p.clear_gradient()
    oar.enable_static()
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="fetch {}".format(i))


def _nested_while_model(x, n, m, lin, while_loop, cond):
    def inner(j, h):
        return j + 1, oar.tanh(lin(h)) + h * 0.5

    def outer(i, h):
        _, h = while_loop(lambda j, h: j < m, inner, [oar.zeros([], "int64"), h])
        return i + 1, h * 0.9 + x

    _, h = while_loop(lambda i, h: i < n, outer, [oar.zeros([], "int64"), x * 1.0])
    return (h * h).mean()


def _while_in_cond_model(x, n, m, lin, while_loop, cond):
    h = lin(x)

    def loop():
        _, r = while_loop(lambda i, r: i < n, lambda i, r: (i + 1, oar.tanh(lin(r))), [oar.zeros([], "int64"), h])
        return r * 2.0

    # the branches read h and lin's parameters, which h depends on (partial derivatives in the node)
    y = cond(h.sum() > 0, loop, lambda: lin(h) * h)
    return (y * h).mean()  # m (the inner trip count of the nested model) is unused here


def _swap_model(x, n, m, lin, while_loop, cond):
    def body(i, a, b, c):
        return i + 1, b, a * 1.5, c  # a and b swap each step, c passes through unchanged

    _, a, b, c = while_loop(lambda i, a, b, c: i < n, body, [oar.zeros([], "int64"), lin(x), x * 2.0, lin(x) * 3.0])
    return (a + b * 2.0 + c * c).sum()


@pytest.mark.parametrize("model", [_nested_while_model, _while_in_cond_model, _swap_model])
def test_gradients_through_nested_control_flow_match_eager(static_mode, model):
    """A while_loop inside a while_loop's body, inside a cond branch whose branches also read a parameter
    the branch input depends on, and loop variables swapping or passing through unchanged: static
    gradients equal eager's for several trip counts."""
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 3])
        x.stop_gradient = False
        n, m = static.data("n", [], "int64"), static.data("m", [], "int64")
        oar.seed(2)
        lin = oar.nn.Linear(3, 3)
        loss = model(x, n, m, lin, static.nn.while_loop, static.nn.cond)
        grads = static.gradients([loss], [x] + lin.parameters())
    exe = static.Executor()
    for seed, (steps, inner) in enumerate([(0, 2), (1, 0), (2, 3), (3, 1)]):
        xs = np.random.RandomState(seed).randn(2, 3).astype("float32")
        got = exe.run(main, feed={"x": xs, "n": np.array(steps, "int64"), "m": np.array(inner, "int64")},
                      fetch_list=[loss] + grads)
        oar.disable_static()
        ex = oar.to_tensor(xs, stop_gradient=False)
        eloss = model(ex, steps, inner, lin, _eager_while, _eager_cond)
        eloss.backward()
        want = [eloss.numpy(), ex.grad.numpy()] + [
            p.grad.numpy() if p.grad is not None else np.zeros(p.shape, "float32") for p in lin.parameters()]
        lin.clear_gradients()
        oar.enable_static()
        for i, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="case {} fetch {}".format(seed, i))


def test_while_loop_gradient_with_a_data_dependent_trip_count(static_mode):
    """A loop whose condition depends on the loop variable itself (h grows until its norm passes a
    limit): the trip count varies with the input; the gradient flows through the body, none through the
    comparison (as in eager), and a tensor only the condition reads gets no gradient."""
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 3])
        x.stop_gradient = False
        limit = static.data("limit", [])
        limit.stop_gradient = False
        oar.seed(4)
        lin = oar.nn.Linear(3, 3)
        h0 = lin(x)
        h, = static.nn.while_loop(lambda h: (h * h).sum() < limit, lambda h: [h * 1.5 + oar.sin(h) * 0.1], [h0])
        loss = (h * h).sum()
        grads = static.gradients([loss], [x, limit] + lin.parameters())
    assert grads[1] is None
    exe = static.Executor()
    rs = np.random.RandomState(0)
    trips = set()
    for lim in (0.0, 1.0, 30.0, 500.0):
        xs = rs.randn(2, 3).astype("float32")
        got = exe.run(main, feed={"x": xs, "limit": np.array(lim, "float32")},
                      fetch_list=[loss, grads[0], grads[2], grads[3]])
        oar.disable_static()
        ex = oar.to_tensor(xs, stop_gradient=False)
        eh, k = lin(ex), 0
        while float((eh * eh).sum()) < lim:
            eh, k = eh * 1.5 + oar.sin(eh) * 0.1, k + 1
        trips.add(k)
        el = (eh * eh).sum()
        el.backward()
        want = [el.numpy(), ex.grad.numpy(), lin.weight.grad.numpy(), lin.bias.grad.numpy()]
        lin.clear_gradients()
        oar.enable_static()
        for i, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg="limit {} fetch {}".format(lim, i))
    assert 0 in trips and len(trips) >= 3


def _while_train_model(x, n, lin, lin2, while_loop):
    h = oar.tanh(lin(x))
    _, h = while_loop(lambda i, h: i < n, lambda i, h: (i + 1, oar.tanh(lin2(h) + h)), [oar.zeros([], "int64"), h])
    return ((h - 0.5) ** 2).mean()


def test_minimize_through_while_loop_trains_like_eager(static_mode, tmp_path):
    """SGD through a while_loop: the static losses equal eager training's step by step and decrease;
    clone(for_test=True) and the saved inference model of the trained program run the loop without its
    gradient bookkeeping and match eager inference."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        n = static.data("n", [], "int64")
        oar.seed(11)
        lin, lin2 = oar.nn.Linear(4, 4), oar.nn.Linear(4, 4)
        loss = _while_train_model(x, n, lin, lin2, static.nn.while_loop)
        test_prog = main.clone(for_test=True)
        oar.optimizer.SGD(0.2).minimize(loss)
        after = main.clone(for_test=True)
    oar.disable_static()
    oar.seed(11)
    elin, elin2 = oar.nn.Linear(4, 4), oar.nn.Linear(4, 4)
    for a, b in zip(lin.parameters() + lin2.parameters(), elin.parameters() + elin2.parameters()):
        b.set_value(a.numpy())
    eopt = oar.optimizer.SGD(0.2, parameters=elin.parameters() + elin2.parameters())
    oar.enable_static()
    exe = static.Executor()
    exe.run(startup)
    xs = np.random.RandomState(5).randn(6, 4).astype("float32")
    losses = []
    for step in range(8):
        steps = [3, 0, 1, 4][step % 4]
        lv, = exe.run(main, feed={"x": xs, "n": np.array(steps, "int64")}, fetch_list=[loss])
        oar.disable_static()
        el = _while_train_model(oar.to_tensor(xs), steps, elin, elin2, _eager_while)
        el.backward()
        eopt.step()
        eopt.clear_grad()
        oar.enable_static()
        np.testing.assert_allclose(lv, el.numpy(), rtol=1e-5, atol=1e-6, err_msg="step {}".format(step))
        losses.append(float(lv))
    assert losses[4] < losses[0] and losses[7] < losses[3]

    # The test clones (before and after minimize) run the forward only: no stacks, no updates.
    for prog in (test_prog, after):
        ops = [op for i in range(prog.num_blocks) for op in prog.block(i).ops]
        assert not any(op.all_attrs().get("oar_mode") for op in ops)
        assert not any(op.type in ("concat", "sgd") for op in ops)
    before = [p.numpy().copy() for p in lin.parameters()]
    r, = exe.run(after, feed={"x": xs, "n": np.array(3, "int64")}, fetch_list=[loss])
    oar.disable_static()
    want = _while_train_model(oar.to_tensor(xs), 3, elin, elin2, _eager_while).numpy()
    oar.enable_static()
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)
    for a, p in zip(before, lin.parameters()):
        np.testing.assert_array_equal(a, p.numpy())
    prefix = str(tmp_path / "rnn")
    static.save_inference_model(prefix, [x, n], [loss], exe, program=main)
    prog, feeds, fetches = static.load_inference_model(prefix, exe)
    ops = [op for i in range(prog.num_blocks) for op in prog.block(i).ops]
    assert "while" in [op.type for op in ops] and not any(op.all_attrs().get("oar_mode") for op in ops)
    out, = exe.run(prog, feed={"x": xs, "n": np.array(3, "int64")}, fetch_list=fetches)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_save_inference_model_after_minimize_through_cond(static_mode, tmp_path):
    """A branch intermediate that the cond's gradient block reads is declared in block 0 but written in
    the branch: the inference program keeps it, and drops the gradient blocks' ops."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        oar.seed(6)
        lin, lin2 = oar.nn.Linear(4, 4), oar.nn.Linear(4, 1)
        h = lin(x)
        y = static.nn.cond(h.sum() > 0, lambda: oar.tanh(lin(h)), lambda: h * h)
        loss = lin2(y).mean()
        oar.optimizer.SGD(0.1).minimize(loss)
    exe = static.Executor()
    exe.run(startup)
    rs = np.random.RandomState(0)
    for _ in range(2):
        exe.run(main, feed={"x": rs.randn(3, 4).astype("float32")}, fetch_list=[loss])
    prefix = str(tmp_path / "condnet")
    static.save_inference_model(prefix, [x], [loss], exe, program=main)
    prog, feeds, fetches = static.load_inference_model(prefix, exe)
    test_prog = main.clone(for_test=True)
    for sign in (1.0, -1.0):
        xs = np.abs(rs.randn(3, 4)).astype("float32") * sign
        ref, = exe.run(test_prog, feed={"x": xs}, fetch_list=[loss])
        out, = exe.run(prog, feed={"x": xs}, fetch_list=fetches)
        np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_append_backward_through_while_loop_refusals(static_mode):
    """What the reverse loop cannot reproduce is refused, naming the loop: a body writing an outer
    variable in place, random ops in the body (re-running it draws new values), a loop variable
    changing shape. A loop the loss does not depend on through such a body is not refused."""
    def build(body, name=None):
        main = static.Program()
        with static.program_guard(main):
            x = static.data("x", [None, 3])
            lin = oar.nn.Linear(3, 3)
            h = lin(x)
            outer = h * 1.0
            _, y = static.nn.while_loop(lambda i, h: i < 3, lambda i, h: body(i, h, outer),
                                        [oar.zeros([], "int64"), h], name=name)
            return main, y, outer

    def writes_outer(i, h, outer):
        outer.add_(h)
        return i + 1, h * 2

    main, y, _ = build(writes_outer)
    with static.program_guard(main):
        with pytest.raises(NotImplementedError, match=r"while_loop \(block 1\): its body writes the outer"):
            static.append_backward(y.mean())
    main, y, _ = build(lambda i, h, o: (i + 1, F.dropout(h, 0.5)), name="noisy")
    with static.program_guard(main):
        with pytest.raises(NotImplementedError, match="noisy: its body has random ops"):
            static.append_backward(y.mean())
    main, y, _ = build(lambda i, h, o: (i + 1, oar.concat([h, h], axis=1)))
    with static.program_guard(main):
        with pytest.raises(NotImplementedError, match="loop variable 1 changes shape"):
            static.append_backward(y.mean())
    main, y, outer = build(lambda i, h, o: (i + 1, F.dropout(h, 0.5)), name="unused")
    with static.program_guard(main):
        assert len(static.append_backward(outer.mean())) == 2  # the loop's results are not differentiated


class _LoopNet(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.inp, self.cell = oar.nn.Linear(3, 4), oar.nn.Linear(4, 4)

    def forward(self, x, n):
        h = oar.tanh(self.inp(x))
        i = oar.zeros([], "int64")
        while i < n:  # a tensor condition: a while_loop in the program
            h = oar.tanh(self.cell(h) + h)
            i = i + 1
        return (h * x.sum()).mean()


def test_to_static_trains_through_while_loop(tmp_path):
    """to_static's backward program through a converted tensor `while` (loop variables depending on the
    input and the parameters) gives eager's gradients for several trip counts; after training, inference
    runs the loop without the gradient bookkeeping and jit.save/load keeps the loop."""
    oar.seed(3)
    net = _LoopNet()
    static_net = oar.jit.to_static(net)
    xs = np.random.RandomState(1).randn(2, 3).astype("float32")
    for steps in (0, 1, 3):
        x = oar.to_tensor(xs, stop_gradient=False)
        n = oar.to_tensor(np.array(steps, "int64"))
        net.clear_gradients()
        static_net(x, n).backward()
        got = [x.grad.numpy()] + [p.grad.numpy().copy() for p in net.parameters()]
        net.clear_gradients()
        x = oar.to_tensor(xs, stop_gradient=False)
        net.forward(x, n).backward()  # the Python loop, eagerly
        want = [x.grad.numpy()] + [p.grad.numpy() for p in net.parameters()]
        for i, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="steps {} grad {}".format(steps, i))
    n = oar.to_tensor(np.array(2, "int64"))
    with oar.no_grad():
        ref = net.forward(oar.to_tensor(xs), n).numpy()
        np.testing.assert_allclose(static_net(oar.to_tensor(xs), n).numpy(), ref, rtol=1e-5)
    path = str(tmp_path / "loopnet")
    oar.jit.save(static_net, path, input_spec=[oar.static.InputSpec([None, 3], "float32"),
                                               oar.static.InputSpec([], "int64")])
    loaded = oar.jit.load(path)
    np.testing.assert_allclose(loaded(oar.to_tensor(xs), n).numpy(), ref, rtol=1e-5)


def test_to_static_trains_through_cond_mixed_with_other_paths():
    """A cond's output combined with a value that bypasses it: the backward program holds the cond's
    gradient blocks (before, the cond's part of the gradient was missing)."""
    oar.seed(0)
    lin = oar.nn.Linear(3, 1)

    @oar.jit.to_static
    def f(x):
        h = lin(x)
        return static.nn.cond(h.sum() > 0, lambda: h * 3.0, lambda: h * -1.0) + h * h

    for sign in (1.0, -1.0):
        x = oar.to_tensor(np.full((2, 3), sign, "float32"))
        lin.clear_gradients()
        f(x).sum().backward()
        g_static = lin.weight.grad.numpy().copy()
        lin.clear_gradients()
        h = lin(x)
        ((h * 3.0 if float(h.sum()) > 0 else h * -1.0) + h * h).sum().backward()
        np.testing.assert_allclose(g_static, lin.weight.grad.numpy(), rtol=1e-6)


def test_to_static_trains_through_cond():
    oar.seed(0)
    lin = oar.nn.Linear(3, 1)

    @oar.jit.to_static
    def f(x):
        h = lin(x)
        return static.nn.cond(h.sum() > 0, lambda: h * 3.0, lambda: h * -1.0)

    for sign in (1.0, -1.0):
        x = oar.to_tensor(np.full((2, 3), sign, "float32"))
        lin.clear_gradients()
        f(x).sum().backward()
        g_static = lin.weight.grad.numpy().copy()
        lin.clear_gradients()
        h = lin(x)
        (h * 3.0 if float(h.sum()) > 0 else h * -1.0).sum().backward()
        np.testing.assert_allclose(g_static, lin.weight.grad.numpy(), rtol=1e-6)


def test_static_save_load_and_serialize(static_mode, tmp_path):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [None, 4])
        model = _mlp()
        y = model(x)
    exe = static.Executor()
    xs = np.ones((2, 4), "float32")
    ref, = exe.run(main, feed={"x": xs}, fetch_list=[y])
    path = str(tmp_path / "ckpt" / "m")
    static.save(main, path)
    oar.disable_static()
    for p in model.parameters():  # clobber (eagerly), then load back
        p.set_value(oar.zeros(p.shape))
    oar.enable_static()
    zero, = exe.run(main, feed={"x": xs}, fetch_list=[y])
    assert not np.allclose(zero, ref)
    static.load(main, path, exe)
    back, = exe.run(main, feed={"x": xs}, fetch_list=[y])
    np.testing.assert_allclose(back, ref, rtol=1e-6)
    state = static.load_program_state(path)
    assert set(state) >= {p.name for p in model.parameters()}
    # serialize / deserialize: the inference program and its parameters as bytes.
    prog_bytes = static.serialize_program([x], [y], program=main)
    param_bytes = static.serialize_persistables([x], [y], exe, program=main)
    prog = static.deserialize_program(prog_bytes)
    static.deserialize_persistables(prog, param_bytes, exe)
    feeds = [op.output("Out")[0] for op in prog.global_block().ops if op.type == "feed"]
    fetches = [op.input("X")[0] for op in prog.global_block().ops if op.type == "fetch"]
    prog._feed_fetch = (feeds, fetches)
    out, = exe.run(prog, feed={"x": xs}, fetch_list=fetches)
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_static_nn_layers_match_functional(static_mode):
    main = static.Program()
    with static.program_guard(main):
        img = static.data("img", [None, 3, 8, 8])
        ids = static.data("ids", [None, 5], "int64")
        c = static.nn.conv2d(img, 4, 3, padding=1, act="relu")
        bn = static.nn.batch_norm(c, is_test=True)
        ln = static.nn.layer_norm(bn, begin_norm_axis=1)
        emb = static.nn.embedding(ids, (10, 6))
    params = {p.name: p for p in main.all_parameters()}
    assert len(params) == 2 + 2 + 2 + 1  # conv w/b, bn scale/bias, ln scale/bias, embedding
    rs = np.random.RandomState(0)
    xi = rs.randn(2, 3, 8, 8).astype("float32")
    xid = rs.randint(0, 10, (2, 5)).astype("int64")
    exe = static.Executor()
    got_ln, got_emb = exe.run(main, feed={"img": xi, "ids": xid}, fetch_list=[ln, emb])
    oar.disable_static()
    p = list(params.values())
    w, b = p[0], p[1]
    ref = F.relu(F.conv2d(oar.to_tensor(xi), w, b, padding=1))
    # batch_norm in inference form with mean 0 / variance 1 and scale 1 / bias 0: x / sqrt(1 + eps)
    ref = ref / np.sqrt(1 + 1e-5)
    ref = F.layer_norm(ref, ref.shape[1:], epsilon=1e-5)
    np.testing.assert_allclose(got_ln, ref.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_emb, p[-1].numpy()[xid], rtol=1e-6)


def _dropout_bn_net():
    oar.seed(3)
    return oar.nn.Sequential(oar.nn.Linear(4, 6), oar.nn.BatchNorm1D(6), oar.nn.ReLU(), oar.nn.Dropout(0.5),
                             oar.nn.Linear(6, 2))


def test_clone_for_test_runs_dropout_and_batch_norm_in_inference_mode(static_mode, tmp_path):
    """Built in training mode, the main program drops units and updates BatchNorm's running statistics;
    its clone(for_test=True) and the saved inference model use the running statistics and no dropout,
    as the same layers in eval() mode do eagerly."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        net = _dropout_bn_net()
        out = net(x)
        test_prog = main.clone(for_test=True)
        loss = out.mean()
        oar.optimizer.SGD(0.1).minimize(loss)
    assert "oar_mode" not in str(test_prog)
    exe = static.Executor()
    exe.run(startup)
    rs = np.random.RandomState(0)
    mean_before = net[1]._mean.numpy().copy()
    for _ in range(3):
        exe.run(main, feed={"x": rs.randn(8, 4).astype("float32")}, fetch_list=[loss])
    mean_after = net[1]._mean.numpy().copy()
    assert not np.allclose(mean_before, mean_after)  # training updated the running mean
    xs = rs.randn(5, 4).astype("float32")
    r1, = exe.run(test_prog, feed={"x": xs}, fetch_list=[out])
    r2, = exe.run(test_prog, feed={"x": xs}, fetch_list=[out])
    np.testing.assert_array_equal(r1, r2)  # no dropout: deterministic
    np.testing.assert_array_equal(mean_after, net[1]._mean.numpy())  # no statistics update
    oar.disable_static()
    net.eval()
    want = net(oar.to_tensor(xs)).numpy()
    oar.enable_static()
    np.testing.assert_allclose(r1, want, rtol=1e-5, atol=1e-6)
    # The main program itself stays in training mode: dropout draws differ between runs.
    t1, = exe.run(main, feed={"x": xs}, fetch_list=[out])
    t2, = exe.run(main, feed={"x": xs}, fetch_list=[out])
    assert not np.allclose(t1, t2)

    path = str(tmp_path / "net")
    static.save_inference_model(path, [x], [out], exe, program=main)
    prog, feeds, fetches = static.load_inference_model(path, exe)
    r3, = exe.run(prog, feed={feeds[0]: xs}, fetch_list=fetches)
    oar.disable_static()
    want = net(oar.to_tensor(xs)).numpy()  # the main program's runs above trained the parameters further
    oar.enable_static()
    np.testing.assert_allclose(r3, want, rtol=1e-5, atol=1e-6)


def test_setitem_on_a_variable_matches_eager_with_gradients(static_mode):
    """x[index] = v on program variables (slices, ints, steps, advanced indices, a bool mask) gives eager's
    values and eager's gradients for both the variable and the value."""
    rs = np.random.RandomState(4)
    xs, vs = rs.randn(4, 5).astype("float32"), rs.randn(2, 5).astype("float32")

    def body(x, v):
        y = x * 2.0
        y[1:3] = v
        y[0, ::2] = 7.0
        y[[3, 3], [1, 4]] = v[0, :2] * 3.0
        y[y > 5.0] = -1.0
        return (y * y).sum(), y

    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [4, 5])
        v = static.data("v", [2, 5])
        x.stop_gradient = False
        v.stop_gradient = False
        loss, y = body(x, v)
        gx, gv = static.gradients([loss], [x, v])
    out = static.Executor().run(main, feed={"x": xs, "v": vs}, fetch_list=[y, gx, gv])
    oar.disable_static()
    ex, ev = oar.to_tensor(xs, stop_gradient=False), oar.to_tensor(vs, stop_gradient=False)
    eloss, ey = body(ex, ev)
    eloss.backward()
    oar.enable_static()
    for got, want in zip(out, [ey.numpy(), ex.grad.numpy(), ev.grad.numpy()]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_setitem_refusals_name_the_problem(static_mode):
    with static.program_guard(static.Program()):
        x = static.data("x", [None, 3])
        with pytest.raises(NotImplementedError, match="known only when the program runs"):
            x[0] = 1.0
        x[x > 0] = 0.0  # a mask works with unknown extents
        y = static.data("y", [2, 3])
        with pytest.raises(NotImplementedError, match="is a view"):
            y.reshape([3, 2])[0] = 1.0


def test_compiled_program_runs_the_passes_its_build_strategy_selects(static_mode, tmp_path):
    """CompiledProgram of a test clone: the selected passes run (add+act fused), results equal the plain
    clone's, and they follow the parameters while the main program trains. A loaded inference model also
    gets matmul+bias fused into fc."""
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        x = static.data("x", [None, 4])
        net = _dropout_bn_net()
        out = F.relu(net(x) + 1.0)
        test_prog = main.clone(for_test=True)
        loss = out.mean()
        oar.optimizer.Adam(0.05).minimize(loss)
    bs = static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = True
    compiled = static.CompiledProgram(test_prog, build_strategy=bs)
    exe = static.Executor()
    exe.run(startup)
    rs = np.random.RandomState(1)
    xs = rs.randn(6, 4).astype("float32")
    for _ in range(3):
        exe.run(main, feed={"x": rs.randn(8, 4).astype("float32")}, fetch_list=[loss])
        want, = exe.run(test_prog, feed={"x": xs}, fetch_list=[out])
        got, = exe.run(compiled, feed={"x": xs}, fetch_list=[out])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    rep = compiled.pass_report
    assert rep["fuse_elementwise_act"]["ops_fused"] >= 1, rep
    assert rep["ops_after"] < rep["ops_before"], rep

    path = str(tmp_path / "net")
    static.save_inference_model(path, [x], [out], exe, program=test_prog)
    prog, feeds, fetches = static.load_inference_model(path, exe)
    bs2 = static.BuildStrategy()
    bs2.fuse_gemm_epilogue = True
    compiled2 = static.CompiledProgram(prog, build_strategy=bs2)
    got, = exe.run(compiled2, feed={feeds[0]: xs}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert compiled2.pass_report["fuse_matmul_bias"]["ops_fused"] >= 1, compiled2.pass_report


def test_kron_with_an_unknown_dim(static_mode):
    # Paddle 2.6.2: kron of [-1, 2] and [2, 3] is [-1, 6]; it used to reshape to a size computed from the
    # internal stand-in for the unknown extent
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [-1, 2])
        y = static.data("y", [2, 3])
        z = oar.kron(x, y)
    assert z.shape == [-1, 6]
    a = np.random.default_rng(0).random((4, 2)).astype("float32")
    b = np.random.default_rng(1).random((2, 3)).astype("float32")
    (out,) = static.Executor().run(main, feed={"x": a, "y": b}, fetch_list=[z])
    np.testing.assert_allclose(out, np.kron(a, b), rtol=1e-6)
