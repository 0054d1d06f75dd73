"""The training fusion passes (framework/src/ir/training_passes.cc, docs/static.md "Training passes"):
what each pass rewrites and what it must leave alone (pinned names), the fused ops against numpy and
their gradients, bad input, and training with the passes equal to eager (to_static) and to the unfused
program (static mode with a BuildStrategy)."""
import numpy as np
import pytest

import oar
from oar import _C
from _util import small_training_model, train_side_by_side
from oar.jit.api import training_pass_flags

F32 = np.float32


def _op(name, *inputs, **attrs):
    return _C.Op(name)(*[oar.to_tensor(a) if isinstance(a, np.ndarray) else a for a in inputs], **attrs)


def _types(desc):
    return [op["type"] for op in desc.block(0)["ops"]]


def _record(fn, shapes):
    """fn(*vars) recorded into a static program; returns (main program, input names, output names)."""
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        xs = [oar.static.data("in{}".format(i), s, "float32") for i, s in enumerate(shapes)]
        outs = fn(*xs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return main, [x.name for x in xs], [o.name for o in outs]


def _passes(main, pinned, **flags):
    desc, _, report = _C._run_training_passes(main.desc, None, set(pinned), set(), **flags)
    return desc, report


def _run(main, desc, feed, fetch):
    exe = _C._Executor(desc, oar.CPUPlace(), feed_names=list(feed), fetch_names=list(fetch))
    for n, t in main._all_captures().items():
        exe.scope.set(n, t)
    return [o.numpy() for o in exe.run({k: oar.to_tensor(v) for k, v in feed.items()})]


def _check_same(main, desc, names, outs, shapes, seed=0):
    rs = np.random.RandomState(seed)
    feed = {n: rs.randn(*s).astype(F32) for n, s in zip(names, shapes)}
    want = _run(main, main.desc, feed, outs)
    got = _run(main, desc, feed, outs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# ---- the passes --------------------------------------------------------------------------------------------
def test_gemm_epilogue_takes_matmul_bias_and_relu():
    oar.enable_static()
    try:
        lin = oar.nn.Linear(8, 6)
        main, names, outs = _record(lambda x: oar.nn.functional.relu(lin(x)), [[4, 8]])
    finally:
        oar.disable_static()
    before = _types(main.desc)
    assert before.count("oar.matmul") == 1 and "oar.relu" in before, before
    desc, report = _passes(main, names + outs)
    assert _types(desc) == ["oar.fused_gemm_epilogue"], _types(desc)
    op = desc.block(0)["ops"][0]
    assert op["attrs"]["activation"] == "relu" and op["outputs"]["out"] == outs
    assert report["fuse_gemm_epilogue"] == {"ops_removed": 2, "ops_fused": 1}
    assert report["ops_before"] == len(before) and report["ops_after"] == 1
    _check_same(main, desc, names, outs, [[4, 8]])


def test_gemm_epilogue_keeps_a_pinned_pre_activation():
    oar.enable_static()
    try:
        lin = oar.nn.Linear(8, 6)
        main, names, outs = _record(lambda x: (lambda h: [h, oar.nn.functional.relu(h)])(lin(x)), [[2, 3, 8]])
    finally:
        oar.disable_static()
    desc, _ = _passes(main, names + outs)
    # The biased product is fetched: the fused op writes it (no activation) and relu stays.
    assert _types(desc) == ["oar.fused_gemm_epilogue", "oar.relu"], _types(desc)
    assert desc.block(0)["ops"][0]["attrs"]["activation"] == "none"
    assert desc.block(0)["ops"][0]["outputs"]["out"] == [outs[0]]
    _check_same(main, desc, names, outs, [[2, 3, 8]])


def test_gemm_epilogue_leaves_a_product_read_elsewhere_and_tanh_gelu():
    oar.enable_static()
    try:
        w = oar.static.create_parameter([8, 6], "float32")
        b = oar.static.create_parameter([6], "float32")

        def fn(x):
            t = oar.matmul(x, w)
            return [oar.nn.functional.gelu(t + b, approximate=True), t * 2.0]
        main, names, outs = _record(fn, [[4, 8]])
    finally:
        oar.disable_static()
    desc, report = _passes(main, names + outs)
    assert "oar.fused_gemm_epilogue" not in _types(desc), _types(desc)  # t has two readers
    assert report["fuse_gemm_epilogue"]["ops_fused"] == 0


def test_gemm_epilogue_pins_what_the_backward_reads():
    oar.enable_static()
    try:
        lin = oar.nn.Linear(8, 6)
        main, names, outs = _record(lambda x: oar.nn.functional.gelu(lin(x)), [[4, 8]])
    finally:
        oar.disable_static()
    pre = main.desc.block(0)["ops"][1]["outputs"]["out"][0]  # the biased product gelu reads
    desc, _ = _passes(main, names + outs + [pre])
    assert _types(desc) == ["oar.fused_gemm_epilogue", "oar.gelu"], _types(desc)
    desc, _ = _passes(main, names + outs)
    assert _types(desc) == ["oar.fused_gemm_epilogue"] and desc.block(0)["ops"][0]["attrs"]["activation"] == "gelu"
    _check_same(main, desc, names, outs, [[4, 8]])


@pytest.mark.parametrize("shape", [[4, 8], [2, 3, 8]])
def test_linear_parameter_gradients_fuse(shape):
    oar.enable_static()
    try:
        lin = oar.nn.Linear(8, 6)

        def fn(x):
            x.stop_gradient = False
            loss = (lin(x) * lin(x)).sum()
            return oar.static.gradients([loss], [lin.weight, lin.bias, x])
        main, names, outs = _record(fn, [shape])
    finally:
        oar.disable_static()
    desc, report = _passes(main, names + outs)
    types = _types(desc)
    # Two calls of the Linear: two forward fusions and two parameter-gradient fusions, the second at the
    # first sum's place (the bias gradients' accumulation reads it before the weight products run).
    assert types.count("oar.fused_linear_param_grad") == 2, types
    assert types.count("oar.sum") == 1, types  # the loss's; the bias gradients' sums are gone
    assert report["fuse_gemm_epilogue"]["ops_fused"] == 4, report
    _check_same(main, desc, names, outs, [shape])


def test_elewise_add_act_and_its_pinned_sum():
    oar.enable_static()
    try:
        main, names, outs = _record(lambda a, b: oar.tanh(a + b), [[3, 5], [5]])
        main2, names2, outs2 = _record(lambda a, b: (lambda s: [s, oar.tanh(s)])(a + b), [[3, 5], [3, 5]])
    finally:
        oar.disable_static()
    desc, report = _passes(main, names + outs)
    assert _types(desc) == ["oar.fused_elemwise_add_activation"] and report["fuse_elewise_add_act"]["ops_fused"] == 1
    _check_same(main, desc, names, outs, [[3, 5], [5]])
    desc, _ = _passes(main2, names2 + outs2)
    assert _types(desc) == ["oar.add", "oar.tanh"], _types(desc)
    # Off by its flag.
    desc, report = _passes(main, names + outs, fuse_elewise_add_act=False)
    assert _types(desc) == ["oar.add", "oar.tanh"] and "fuse_elewise_add_act" not in report


def test_residual_layer_norm_writes_the_sum():
    oar.enable_static()
    try:
        ln = oar.nn.LayerNorm(8)
        main, names, outs = _record(lambda x, r: ln(x + r), [[2, 3, 8], [2, 3, 8]])
    finally:
        oar.disable_static()
    s = main.desc.block(0)["ops"][0]["outputs"]["out"][0]
    desc, report = _passes(main, names + outs + [s])
    assert _types(desc) == ["oar.fused_add_layer_norm"], _types(desc)
    op = desc.block(0)["ops"][0]
    assert op["outputs"]["sum"] == [s] and op["outputs"]["out"] == outs
    _check_same(main, desc, names, outs + [s], [[2, 3, 8], [2, 3, 8]])


def test_a_write_in_between_blocks_the_fusion():
    # The layer_norm weight is written between the add and the norm: the fused op at the add's place
    # would read the old weight.
    oar.enable_static()
    try:
        def fn(x, r, w):
            w2 = w * 1.0
            s = x + r
            oar.assign(w * 2.0, w2)
            return oar.nn.functional.layer_norm(s, 4, w2, w)
        main, names, outs = _record(fn, [[2, 4], [2, 4], [4]])
    finally:
        oar.disable_static()
    assert "oar.assign" in _types(main.desc), _types(main.desc)
    desc, _ = _passes(main, names + outs)
    assert "oar.fused_add_layer_norm" not in _types(desc), _types(desc)
    # Without the write in between it fuses.
    oar.enable_static()
    try:
        def fn2(x, r, w):
            w2 = w * 2.0  # computed before the add: nothing is written in between
            return oar.nn.functional.layer_norm(x + r, 4, w2, w)
        main, names, outs = _record(fn2, [[2, 4], [2, 4], [4]])
    finally:
        oar.disable_static()
    desc, _ = _passes(main, names + outs)
    assert "oar.fused_add_layer_norm" in _types(desc), _types(desc)
    _check_same(main, desc, names, outs, [[2, 4], [2, 4], [4]])


def test_build_strategy_flags():
    assert training_pass_flags(None) == {}
    bs = oar.static.BuildStrategy()
    assert training_pass_flags(bs) is None  # Paddle's defaults ask for no fusion
    bs.fuse_gemm_epilogue = True
    assert training_pass_flags(bs) == dict(fuse_gemm_epilogue=True, fuse_elewise_add_act=False,
                                           fuse_residual_layer_norm=False, fuse_attention=False,
                                           fuse_softmax_grad=False)


# ---- the fused ops -----------------------------------------------------------------------------------------
def _gelu(v):
    from math import erf
    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


ACTS = {"none": lambda v: v, "relu": lambda v: np.maximum(v, 0), "gelu": _gelu, "tanh": np.tanh,
        "sigmoid": lambda v: 1 / (1 + np.exp(-v))}


@pytest.mark.parametrize("act", ["none", "relu", "gelu"])
@pytest.mark.parametrize("tx,ty,xs", [(0, 0, (3, 4, 6)), (1, 0, (6, 5)), (0, 1, (5, 6)), (1, 1, (6, 5)),
                                       (0, 0, (40, 70))])
def test_fused_gemm_epilogue_matches_numpy(act, tx, ty, xs):
    rs = np.random.RandomState(0)
    k = xs[0] if tx else xs[-1]
    n = 33 if k == 70 else 7
    x = rs.randn(*xs).astype(F32)
    y = rs.randn(*((n, k) if ty else (k, n))).astype(F32)
    b = rs.randn(n).astype(F32)
    got = _op("fused_gemm_epilogue", x, y, b, trans_x=tx, trans_y=ty, activation=act).numpy()
    x64, y64 = x.astype("float64"), y.astype("float64")
    ref = ACTS[act]((x64.T if tx else x64) @ (y64.T if ty else y64) + b)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("act", ["relu", "gelu", "tanh", "sigmoid"])
def test_fused_add_act_matches_numpy_and_gradients(act):
    rs = np.random.RandomState(1)
    x, y = rs.randn(4, 3, 5), rs.randn(5)
    tx, ty = oar.to_tensor(x, stop_gradient=False), oar.to_tensor(y, stop_gradient=False)
    out = _C.Op("fused_elemwise_add_activation")(tx, ty, activation=act)
    np.testing.assert_allclose(out.numpy(), ACTS[act](x + y), rtol=1e-12, atol=1e-12)
    g = rs.randn(4, 3, 5)
    out.backward(oar.to_tensor(g))
    eps = 1e-6
    d = (ACTS[act](x + y + eps) - ACTS[act](x + y - eps)) / (2 * eps) * g
    np.testing.assert_allclose(tx.grad.numpy(), d, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ty.grad.numpy(), d.sum((0, 1)), rtol=1e-6, atol=1e-6)


def test_fused_gemm_epilogue_gradients_match_the_unfused_chain():
    rs = np.random.RandomState(2)
    x, w, b, g = rs.randn(2, 3, 4), rs.randn(4, 5), rs.randn(5), rs.randn(2, 3, 5)
    for act in ["none", "relu", "gelu"]:
        ts = [oar.to_tensor(a, stop_gradient=False) for a in (x, w, b)]
        _C.Op("fused_gemm_epilogue")(*ts, activation=act).backward(oar.to_tensor(g))
        us = [oar.to_tensor(a, stop_gradient=False) for a in (x, w, b)]
        h = oar.matmul(us[0], us[1]) + us[2]
        h = {"none": lambda v: v, "relu": oar.nn.functional.relu, "gelu": oar.nn.functional.gelu}[act](h)
        h.backward(oar.to_tensor(g))
        for t, u in zip(ts, us):
            np.testing.assert_allclose(t.grad.numpy(), u.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_fused_add_layer_norm_matches_the_unfused_chain():
    rs = np.random.RandomState(3)
    x, r, w, b = rs.randn(2, 3, 6), rs.randn(2, 3, 6), rs.rand(6) + 0.5, rs.randn(6)
    g_out, g_sum = rs.randn(2, 3, 6), rs.randn(2, 3, 6)
    ts = [oar.to_tensor(a, stop_gradient=False) for a in (x, r, w, b)]
    out, s, mean, rstd = _C.Op("fused_add_layer_norm")(*ts, begin_norm_axis=2, epsilon=1e-5)
    np.testing.assert_allclose(s.numpy(), x + r, rtol=1e-12)
    m = (x + r).mean(-1, keepdims=True)
    v = ((x + r - m) ** 2).mean(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x + r - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(mean.numpy(), m[..., 0], rtol=1e-12)
    (out * oar.to_tensor(g_out) + s * oar.to_tensor(g_sum)).sum().backward()
    us = [oar.to_tensor(a, stop_gradient=False) for a in (x, r, w, b)]
    su = us[0] + us[1]
    o2 = oar.nn.functional.layer_norm(su, 6, us[2], us[3], 1e-5)
    (o2 * oar.to_tensor(g_out) + su * oar.to_tensor(g_sum)).sum().backward()
    for t, u in zip(ts, us):
        np.testing.assert_allclose(t.grad.numpy(), u.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_fused_linear_param_grad_matches_numpy():
    rs = np.random.RandomState(4)
    # Above matmul's small-problem cutoff the float32 op runs its own x^T g loop on AVX-512 (the bias sums
    # in the same pass): a Transformer's Linear shapes, the final Linear's [8, 1024] x [8, 10], and column
    # (N mod 32) and row (K mod 8) remainders.
    for xs, gs in [((5, 4), (5, 3)), ((2, 3, 4), (2, 3, 6)), ((300, 40), (300, 50)), ((8, 16, 64), (8, 16, 64)),
                   ((8, 16, 128), (8, 16, 64)), ((8, 1024), (8, 10)), ((513, 129), (513, 31)),
                   ((64, 7), (64, 100)), ((1000, 33), (1000, 47)), ((40, 9), (40, 16))]:
        x, g = rs.randn(*xs).astype(F32), rs.randn(*gs).astype(F32)
        dw, db = _op("fused_linear_param_grad", x, g)
        x2, g2 = x.reshape(-1, xs[-1]).astype("float64"), g.reshape(-1, gs[-1]).astype("float64")
        np.testing.assert_allclose(dw.numpy(), x2.T @ g2, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(db.numpy(), g2.sum(0), rtol=1e-5, atol=1e-5)
        # bit for bit what the unfused backward computes
        ref_w = oar.matmul(oar.to_tensor(x).reshape([-1, xs[-1]]), oar.to_tensor(g).reshape([-1, gs[-1]]),
                           transpose_x=True).numpy()
        ref_b = oar.to_tensor(g).sum(list(range(len(gs) - 1))).numpy()
        assert (dw.numpy() == ref_w).all() and (db.numpy() == ref_b).all()
    with pytest.raises(ValueError, match="fused_linear_param_grad: x.shape .* must have the same leading extents"):
        _op("fused_linear_param_grad", np.ones((4, 3), F32), np.ones((5, 3), F32))


def test_fused_ops_bad_input():
    x, y, b = np.ones((3, 4), F32), np.ones((4, 5), F32), np.ones(5, F32)
    with pytest.raises(ValueError, match="fused_gemm_epilogue: activation 'swish' is not supported"):
        _op("fused_gemm_epilogue", x, y, b, activation="swish")
    with pytest.raises(ValueError, match=r"fused_gemm_epilogue: bias.shape \[4\] must be \[5\]"):
        _op("fused_gemm_epilogue", x, y, np.ones(4, F32))
    with pytest.raises(ValueError, match="do not multiply"):
        _op("fused_gemm_epilogue", x, np.ones((3, 5), F32), b)
    with pytest.raises(ValueError, match="y must be 2-D"):
        _op("fused_gemm_epilogue", x, np.ones((1, 4, 5), F32), b)
    with pytest.raises(ValueError, match="trans_x needs a 2-D x"):
        _op("fused_gemm_epilogue", np.ones((2, 4, 3), F32), y, b, trans_x=1)
    with pytest.raises(TypeError, match="fused_gemm_epilogue"):
        _op("fused_gemm_epilogue", x, y.astype("float64"), b)
    with pytest.raises(ValueError, match=r"fused_elemwise_add_activation: y.shape \[3\] must be the trailing part"):
        _op("fused_elemwise_add_activation", x, np.ones(3, F32))
    with pytest.raises(ValueError, match="residual.shape"):
        _op("fused_add_layer_norm", x, np.ones((4, 3), F32), np.ones(4, F32), np.ones(4, F32), begin_norm_axis=1)
    with pytest.raises(IndexError, match="begin_norm_axis 2 is out of range"):
        _op("fused_add_layer_norm", x, x, np.ones(4, F32), np.ones(4, F32), begin_norm_axis=2)


# ---- training with the passes ------------------------------------------------------------------------------
def _model(kind):
    return small_training_model(kind)


@pytest.mark.parametrize("kind", ["mlp", "transformer", "lenet"])
def test_to_static_training_with_passes_equals_eager(kind):
    oar.seed(0)
    a, x, y = _model(kind)
    oar.seed(0)
    b, _, _ = _model(kind)
    b.set_state_dict({k: oar.to_tensor(v.numpy()) for k, v in a.state_dict().items()})
    b = oar.jit.to_static(b)
    train_side_by_side(a, b, (x,), y)
    cp = next(iter(b.forward._cache.values()))
    report = cp.pass_report
    assert report is not None and report["ops_after"] < report["ops_before"], report
    # Every Linear: its forward (matmul + bias (+ relu)) and its parameter gradients in the backward.
    linears = {"mlp": 4, "transformer": 13, "lenet": 3}[kind]
    assert report["fuse_gemm_epilogue"]["ops_fused"] == linears, report
    # (the transformer's two frozen key biases leave their Linears' weight gradients unfused)
    assert report["fuse_gemm_epilogue[backward]"]["ops_fused"] == linears - (2 if kind == "transformer" else 0), report
    if kind == "transformer":
        assert report["fuse_residual_layer_norm"]["ops_fused"] == 4, report


def test_to_static_build_strategy_is_obeyed(monkeypatch):
    oar.seed(0)
    model, x, y = _model("mlp")
    bs = oar.static.BuildStrategy()
    bs.fuse_elewise_add_act_ops = True  # no fuse_gemm_epilogue: the bias adds + relu fuse instead
    m = oar.jit.to_static(model, build_strategy=bs)
    oar.nn.CrossEntropyLoss()(m(x), y).backward()
    report = next(iter(m.forward._cache.values())).pass_report
    assert "fuse_gemm_epilogue" not in report and report["fuse_elewise_add_act"]["ops_fused"] == 3, report
    monkeypatch.setenv("OAR_TRAINING_PASSES", "0")
    oar.seed(0)
    model, x, y = _model("mlp")
    m = oar.jit.to_static(model)
    oar.nn.CrossEntropyLoss()(m(x), y).backward()
    assert next(iter(m.forward._cache.values())).pass_report is None


def _static_train(build_strategy, steps=4):
    oar.seed(0)
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [8, 16], "float32")
            label = oar.static.data("label", [8], "int64")
            h = oar.nn.functional.relu(oar.static.nn.fc(x, 32))
            h = oar.nn.LayerNorm(32)(h + oar.static.nn.fc(h, 32))
            loss = oar.nn.functional.cross_entropy(oar.static.nn.fc(h, 10), label)
            oar.optimizer.Adam(1e-2).minimize(loss)
        exe = oar.static.Executor(oar.CPUPlace())
        exe.run(startup)
        prog = main if build_strategy is None else oar.static.CompiledProgram(main, build_strategy=build_strategy)
        rs = np.random.RandomState(0)
        feed = {"x": rs.randn(8, 16).astype(F32), "label": rs.randint(0, 10, (8,)).astype("int64")}
        losses = [float(exe.run(prog, feed=feed, fetch_list=[loss])[0]) for _ in range(steps)]
        return losses, prog
    finally:
        oar.disable_static()


def test_static_training_with_build_strategy():
    plain, _ = _static_train(None)
    bs = oar.static.BuildStrategy()
    bs.fuse_gemm_epilogue = True
    bs.fuse_residual_layer_norm = True
    fused, prog = _static_train(bs)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert plain[-1] < plain[0]
    report = prog.pass_report
    assert report["fuse_gemm_epilogue"]["ops_fused"] == 6, report  # 3 forward, 3 parameter gradients
    assert report["fuse_residual_layer_norm"]["ops_fused"] == 1, report
