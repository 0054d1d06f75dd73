"""Attention ops and passes (framework/src/ops_attention.cc, framework/src/ir/attention_passes.cc,
plugins/cpu/attention.cc; docs/static.md "Attention fusions"): softmax_grad / log_softmax_grad against
numpy and numerical gradients (double backward through softmax), fused_attention (+ grad) against numpy
with masks, strided inputs and heads-last outputs, what each pass rewrites and what it leaves alone,
bad input, and to_static Transformer training with the passes equal to eager."""
import os

import numpy as np
import pytest

import oar
from oar import _C
from _util import train_side_by_side

F32, F64 = np.float32, np.float64


def _t(a):
    return oar.to_tensor(a)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _attention(q, k, v, mask=None, scale=1.0):
    s = scale * q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        s = s + mask
    p = _softmax(s, -1)
    return p @ v, p


def _attention_grad(q, k, v, p, g, scale=1.0):
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True)) * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g


_fa = _C.Op("fused_attention")
_fag = _C.Op("fused_attention_grad")
_smg = _C.Op("softmax_grad")
_lsmg = _C.Op("log_softmax_grad")


# ---- softmax_grad / log_softmax_grad ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_grad_ops_match_numpy(dtype, axis):
    rs = np.random.RandomState(0)
    x, g = rs.randn(3, 5, 7).astype(dtype), rs.randn(3, 5, 7).astype(dtype)
    y = _softmax(x.astype(F64), axis).astype(dtype)
    tol = 1e-6 if dtype == F32 else 1e-12
    want = y * (g - (g * y).sum(axis, keepdims=True))
    np.testing.assert_allclose(_smg(_t(y), _t(g), axis=axis).numpy(), want, rtol=tol, atol=tol)
    ly = np.log(y)
    want = g - np.exp(ly) * g.sum(axis, keepdims=True)
    np.testing.assert_allclose(_lsmg(_t(ly), _t(g), axis=axis).numpy(), want, rtol=tol * 10, atol=tol * 10)


def test_softmax_backward_uses_the_op_and_handles_masked_rows():
    # A row masked with -inf in places: those probabilities are 0 and get no gradient.
    x = np.array([[0.5, -np.inf, 1.0, -np.inf], [2.0, 1.0, 0.0, -1.0]], F32)
    g = np.random.RandomState(1).randn(2, 4).astype(F32)
    t = _t(x)
    t.stop_gradient = False
    y = oar.nn.functional.softmax(t, axis=-1)
    (y * _t(g)).sum().backward()
    p = y.numpy()
    want = p * (g - (g * p).sum(-1, keepdims=True))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6, atol=1e-7)
    assert t.grad.numpy()[0, 1] == 0 and t.grad.numpy()[0, 3] == 0
    # The recorded backward of a softmax is one softmax_grad op.
    def fn(a):
        return oar.nn.functional.softmax(a * 2.0, axis=1)

    model = oar.jit.to_static(fn)
    a = _t(np.random.RandomState(2).randn(3, 4).astype(F32))
    a.stop_gradient = False
    model(a).sum().backward()
    cp = next(iter(model._cache.values()))
    bwd = [op["type"] for op in _C._filter_ops_by_role(cp.main_program.desc, [1]).block(0)["ops"]]
    assert "oar.softmax_grad" in bwd and "oar.subtract" not in bwd, bwd


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_double_backward_through_softmax(fn):
    # d/dx of sum(w * dL/dx) with L = sum(c * f(x)): the gradient of the gradient against central
    # differences of the first gradient (float64).
    rs = np.random.RandomState(3)
    x0, c, w = rs.randn(3, 5), rs.randn(3, 5), rs.randn(3, 5)
    f = getattr(oar.nn.functional, fn)

    def first(xv, create_graph=False):
        x = _t(xv)
        x.stop_gradient = False
        (gx,) = oar.grad((f(x, axis=1) * _t(c)).sum(), [x], create_graph=create_graph)
        return x, gx

    x, gx = first(x0, create_graph=True)
    (ggx,) = oar.grad((gx * _t(w)).sum(), [x])
    num = np.zeros_like(x0)
    eps = 1e-6
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        num[i] = ((first(x0 + d)[1].numpy() * w).sum() - (first(x0 - d)[1].numpy() * w).sum()) / (2 * eps)
    np.testing.assert_allclose(ggx.numpy(), num, rtol=1e-6, atol=1e-7)


# ---- fused_attention ----------------------------------------------------------------------------------------
def _heads(rs, b, L, h, d, dtype):
    """[b, L, h, d] data and its [b, h, L, d] transposed view (the head split, strided)."""
    a = rs.randn(b, L, h, d).astype(dtype)
    return np.swapaxes(a, 1, 2), _t(a).transpose([0, 2, 1, 3])


@pytest.mark.parametrize("dtype", [F32, F64])
def test_fused_attention_matches_numpy_on_head_views(dtype):
    rs = np.random.RandomState(0)
    (q, tq), (k, tk), (v, tv) = _heads(rs, 2, 5, 3, 4, dtype), _heads(rs, 2, 7, 3, 4, dtype), _heads(rs, 2, 7, 3, 6, dtype)
    tol = 1e-5 if dtype == F32 else 1e-12
    out, p = _fa([tq, tk, tv], scale=0.5)
    want_o, want_p = _attention(q, k, v, scale=0.5)
    np.testing.assert_allclose(out.numpy(), want_o, rtol=tol, atol=tol)
    np.testing.assert_allclose(p.numpy(), want_p, rtol=tol, atol=tol)
    out2, _ = _fa([tq, tk, tv], scale=0.5, transpose_out=1)  # the head merge's layout [b, Lq, h, dv]
    assert out2.shape == [2, 5, 3, 6]
    np.testing.assert_allclose(out2.numpy(), np.swapaxes(want_o, 1, 2), rtol=tol, atol=tol)
    g = rs.randn(*want_o.shape).astype(dtype)
    grads = _fag(tq, tk, tv, p, _t(g), scale=0.5, transpose_dk=1, transpose_dv=1)
    want = _attention_grad(q, k, v, want_p, g, scale=0.5)
    np.testing.assert_allclose(grads[0].numpy(), want[0], rtol=tol * 10, atol=tol * 10)
    for got, w in zip(grads[1:], want[1:]):
        np.testing.assert_allclose(got.numpy(), np.swapaxes(w, 1, 2), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_fused_attention_masks(dtype):
    rs = np.random.RandomState(1)
    q, k, v = rs.randn(2, 2, 4, 3).astype(dtype), rs.randn(2, 2, 5, 3).astype(dtype), rs.randn(2, 2, 5, 2).astype(dtype)
    mask = np.zeros((2, 1, 4, 5), dtype)
    mask[0, 0, 1, 3:] = -np.inf  # padding: keys 3 and 4 masked for one query
    mask[1, 0, :, 0] = -1e9
    out, p = _fa([_t(q), _t(k), _t(v), _t(mask)])
    want_o, want_p = _attention(q, k, v, mask)
    tol = 1e-5 if dtype == F32 else 1e-12
    np.testing.assert_allclose(p.numpy(), want_p, rtol=tol, atol=tol)
    np.testing.assert_allclose(out.numpy(), want_o, rtol=tol, atol=tol)
    assert (p.numpy()[0, :, 1, 3:] == 0).all()
    # A row masked everywhere is NaN, as softmax's own output for it.
    full = np.zeros((1, 1, 4, 5), dtype)
    full[0, 0, 2, :] = -np.inf
    _, p = _fa([_t(q), _t(k), _t(v), _t(full)])
    sm = oar.nn.functional.softmax(_t(q @ np.swapaxes(k, -1, -2) + full), axis=-1).numpy()
    assert np.isnan(p.numpy()[:, :, 2]).all() and np.isnan(sm[:, :, 2]).all()
    np.testing.assert_allclose(p.numpy()[:, :, [0, 1, 3]], sm[:, :, [0, 1, 3]], rtol=tol, atol=tol)


def _avx512():
    if os.environ.get("OAR_CPU_VEC_ISA"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512f" in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _avx512(), reason="the small-heads path runs on AVX-512 only")
@pytest.mark.parametrize("shape", [(8, 16, 4, 16, 16, 16), (2, 7, 3, 5, 9, 11), (2, 33, 2, 20, 40, 17),
                                   (1, 64, 1, 64, 64, 64), (3, 5, 2, 8, 1, 3)])
@pytest.mark.parametrize("masked", [False, True])
def test_fused_attention_small_heads_equal_the_unfused_ops_bit_for_bit(shape, masked):
    # float32 at small heads: the products in oneDNN's order, the softmax rows (up to 16 keys) and the
    # scores' gradient as the softmax / softmax_grad ops compute them, so a to_static program with the
    # fused ops rounds as eager does (beyond 16 keys the forward's rows are rows_avx2's: values only).
    # Equal values, compared exactly (a sum of exact zeros may be +0 here where eager's loop has -0).
    b, L, h, d, Lk, dv = shape
    rs = np.random.RandomState(5)
    (_, q), (_, k), (_, v), (_, g) = (_heads(rs, b, L, h, d, F32), _heads(rs, b, Lk, h, d, F32),
                                      _heads(rs, b, Lk, h, dv, F32), _heads(rs, b, L, h, dv, F32))
    m = _t((rs.randn(b, 1, L, Lk) * 2).astype(F32)) if masked else None
    s = oar.matmul(q, k, transpose_y=True)
    p_want = oar.nn.functional.softmax(s + m if masked else s, axis=-1)
    dP = oar.matmul(g, v, transpose_y=True)
    dS = _smg(p_want, dP, axis=-1)
    for heads_last in (0, 1):
        out, p = _fa([q, k, v] + ([m] if masked else []), transpose_out=heads_last)
        if Lk <= 16:
            np.testing.assert_array_equal(p.numpy(), p_want.numpy())
        else:
            np.testing.assert_allclose(p.numpy(), p_want.numpy(), rtol=1e-6, atol=1e-7)
        o_want = oar.matmul(p, v)
        o_want = o_want.transpose([0, 2, 1, 3]) if heads_last else o_want
        np.testing.assert_array_equal(out.numpy(), o_want.numpy())
        grads = _fag(q, k, v, p_want, g, transpose_dq=heads_last, transpose_dk=heads_last, transpose_dv=heads_last)
        wants = [oar.matmul(dS, k), oar.matmul(dS, q, transpose_x=True), oar.matmul(p_want, g, transpose_x=True)]
        for got, want in zip(grads, wants):
            want = want.transpose([0, 2, 1, 3]) if heads_last else want
            np.testing.assert_array_equal(got.numpy(), want.numpy())  # a zero's sign may differ
    # and the numbers themselves, against float64
    qn, kn, vn, gn = (np.asarray(t.numpy(), F64) for t in (q, k, v, g))
    want_o, want_p = _attention(qn, kn, vn, m.numpy().astype(F64) if masked else None)
    out, p = _fa([q, k, v] + ([m] if masked else []))
    np.testing.assert_allclose(out.numpy(), want_o, rtol=1e-5, atol=1e-5)
    for got, want in zip(_fag(q, k, v, p, g), _attention_grad(qn, kn, vn, want_p, gn)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_fused_attention_numerical_gradients():
    # float64 central differences of sum(c * out) + sum(e * softmax) against the gradient rule (which
    # runs fused_attention_grad and the composite terms for the softmax output and the mask).
    rs = np.random.RandomState(2)
    q0, k0, v0 = rs.randn(2, 3, 2), rs.randn(2, 4, 2), rs.randn(2, 4, 3)
    m0 = rs.randn(1, 3, 4)
    c, e = rs.randn(2, 3, 3), rs.randn(2, 3, 4)
    for heads_last in (0, 1):
        def loss_np(q, k, v, m):
            o, p = _attention(q, k, v, m, scale=0.7)
            return (c * o).sum() + (e * p).sum()

        ts = [_t(a) for a in (q0, k0, v0, m0)]
        for t in ts:
            t.stop_gradient = False
        out, p = _fa(ts, scale=0.7, transpose_out=heads_last) if heads_last == 0 else _fa(
            [t.unsqueeze(1) for t in ts[:3]] + [ts[3].unsqueeze(1)], scale=0.7, transpose_out=1)
        if heads_last:  # [2, 3, 1, 3] heads-last for one head: the same numbers as [2, 1, 3, 3]
            out, p = out.squeeze(2), p.squeeze(1)
        ((out * _t(c)).sum() + (p * _t(e)).sum()).backward()
        arrays = [q0, k0, v0, m0]
        for idx, t in enumerate(ts):
            num = np.zeros_like(arrays[idx])
            for i in np.ndindex(num.shape):
                hi = [a.copy() for a in arrays]
                lo = [a.copy() for a in arrays]
                hi[idx][i] += 1e-6
                lo[idx][i] -= 1e-6
                num[i] = (loss_np(*hi) - loss_np(*lo)) / 2e-6
            np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-6, atol=1e-7, err_msg=str((heads_last, idx)))


def test_fused_attention_bad_inputs():
    q, k, v = _t(np.zeros((2, 3, 4), F32)), _t(np.zeros((2, 5, 4), F32)), _t(np.zeros((2, 5, 2), F32))
    with pytest.raises(ValueError, match=r"fused_attention: q.shape \[2, 3, 4\] and k.shape \[2, 5, 3\]"):
        _fa([q, _t(np.zeros((2, 5, 3), F32)), v])
    with pytest.raises(ValueError, match=r"fused_attention: k.shape .* and v.shape .* differ in the key length"):
        _fa([q, k, _t(np.zeros((2, 4, 2), F32))])
    with pytest.raises(ValueError, match="same leading dims"):
        _fa([q, _t(np.zeros((3, 5, 4), F32)), _t(np.zeros((3, 5, 2), F32))])
    with pytest.raises(TypeError, match="fused_attention: k.dtype int64 is not supported"):
        _fa([q, _t(np.zeros((2, 5, 4), np.int64)), v])
    with pytest.raises(ValueError, match=r"fused_attention: shapes scores\[2, 3, 5\] and mask\[2, 4, 5\] are not broadcastable"):
        _fa([q, k, v, _t(np.zeros((2, 4, 5), F32))])
    with pytest.raises(ValueError, match="transpose_out must be 0 or 1, got 2"):
        _fa([q, k, v], transpose_out=2)
    with pytest.raises(ValueError, match="takes q, k, v and an optional mask, got 2"):
        _fa([q, k])
    with pytest.raises(ValueError, match=r"fused_attention_grad: dout.shape \[2, 3, 3\] must be \[2, 3, 2\]"):
        _fag(q, k, v, _t(np.zeros((2, 3, 5), F32)), _t(np.zeros((2, 3, 3), F32)))
    with pytest.raises(ValueError, match=r"softmax_grad: grad.shape \[3, 4\] != out.shape \[4, 3\]"):
        _smg(_t(np.zeros((4, 3), F32)), _t(np.zeros((3, 4), F32)))
    with pytest.raises(IndexError, match="softmax_grad"):
        _smg(_t(np.zeros((4, 3), F32)), _t(np.zeros((4, 3), F32)), axis=2)


# ---- fused_softmax_mask (incubate.softmax_mask_fuse) ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, F64])
def test_softmax_mask_fuse_runs_the_fused_op(dtype):
    rs = np.random.RandomState(4)
    x0, m0 = rs.randn(2, 3, 4, 5).astype(dtype), rs.randn(2, 1, 4, 5).astype(dtype)
    m0[1, 0, 2, 3:] = -np.inf
    x, m = _t(x0), _t(m0)
    x.stop_gradient = m.stop_gradient = False
    out = oar.incubate.softmax_mask_fuse(x, m)
    tol = 1e-6 if dtype == F32 else 1e-12
    want = _softmax(x0.astype(F64) + m0, -1)
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(_C.Op("fused_softmax_mask")(x, m).numpy(), want, rtol=tol, atol=tol)
    g = rs.randn(*x0.shape)
    (out * _t(g.astype(dtype))).sum().backward()
    dx = want * (g - (g * want).sum(-1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(m.grad.numpy(), dx.sum(1, keepdims=True), rtol=tol * 10, atol=tol * 10)
    # Exported as Paddle's op of the same name.
    assert _C._paddle_op_types()["fused_softmax_mask"] == "fused_softmax_mask"
    with pytest.raises(ValueError, match=r"fused_softmax_mask: shapes x\[2, 3, 4, 5\] and mask\[2, 3, 5, 5\]"):
        _C.Op("fused_softmax_mask")(x, _t(np.zeros((2, 3, 5, 5), dtype)))
    with pytest.raises(TypeError, match="fused_softmax_mask: x.dtype int64 is not supported"):
        _C.Op("fused_softmax_mask")(_t(np.zeros((2, 3), np.int64)), _t(np.zeros((2, 3), np.int64)))


# ---- the passes ---------------------------------------------------------------------------------------------
def _record(fn, shapes, grads=False):
    """fn(*vars) recorded in static mode (with its gradients w.r.t. the inputs when `grads`)."""
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            xs = [oar.static.data("in{}".format(i), s, "float32") for i, s in enumerate(shapes)]
            for x in xs:
                x.stop_gradient = False
            outs = list(fn(*xs))
            if grads:
                loss = sum((o * o).sum() for o in outs)
                outs += oar.static.gradients([loss], xs)
    finally:
        oar.disable_static()
    return main, [x.name for x in xs], [o.name for o in outs]


def _types(desc):
    return [op["type"] for op in desc.block(0)["ops"]]


def _run(main, desc, feed, fetch):
    exe = _C._Executor(desc, oar.CPUPlace(), feed_names=list(feed), fetch_names=list(fetch))
    for n, t in main._all_captures().items():
        exe.scope.set(n, t)
    return [o.numpy() for o in exe.run({k: oar.to_tensor(v) for k, v in feed.items()})]


def _passes_equal(main, names, outs, shapes, pinned=(), **flags):
    desc, _, report = _C._run_training_passes(main.desc, None, set(names) | set(outs) | set(pinned), set(), **flags)
    rs = np.random.RandomState(0)
    feed = {n: rs.randn(*s).astype(F32) for n, s in zip(names, shapes)}
    for got, want in zip(_run(main, desc, feed, outs), _run(main, main.desc, feed, outs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return desc, report


def _mha(q, k, v, mask=None):
    """Multi-head attention as nn.MultiHeadAttention records it: head split views, scores, softmax,
    product, head merge."""
    T = oar.tensor

    def split(x):
        return T.transpose(T.reshape(x, [2, 6, 2, 4]), [0, 2, 1, 3])

    s = T.matmul(split(q) * 0.5, split(k), transpose_y=True)
    if mask is not None:
        s = s + mask
    o = T.matmul(oar.nn.functional.softmax(s, axis=-1), split(v))
    return [T.reshape(T.transpose(o, [0, 2, 1, 3]), [2, 6, 8])]


SHAPES = [[2, 6, 8]] * 3


def test_fuse_attention_forward_and_backward():
    main, names, outs = _record(_mha, SHAPES, grads=True)
    before = _types(main.desc)
    assert before.count("oar.softmax_grad") == 1 and before.count("oar.matmul") == 6, before
    desc, report = _passes_equal(main, names, outs, SHAPES)
    after = _types(desc)
    assert after.count("oar.fused_attention") == 1 and after.count("oar.fused_attention_grad") == 1, after
    assert "oar.matmul" not in after and "oar.softmax" not in after and "oar.softmax_grad" not in after, after
    # The head merges of the output and of dk and dv are written by the fused ops (their transposes go);
    # dq's scale multiply now runs on the heads-last tensor.
    assert after.count("oar.transpose") == before.count("oar.transpose") - 4, (before, after)
    ops = {op["type"]: op for op in desc.block(0)["ops"]}
    assert ops["oar.fused_attention"]["attrs"]["transpose_out"] == 1
    assert [ops["oar.fused_attention_grad"]["attrs"][a] for a in ("transpose_dq", "transpose_dk", "transpose_dv")] == [1, 1, 1]
    assert report["fuse_attention"]["ops_fused"] == 6, report


def test_fuse_attention_with_a_mask_and_what_it_leaves():
    mask_shape = [2, 1, 6, 6]
    main, names, outs = _record(lambda q, k, v, m: _mha(q, k, v, m), SHAPES + [mask_shape], grads=True)
    # The mask needs a gradient (it is an input with stop_gradient False): its gradient reads the scores'
    # gradient, so the backward block stays unfused; the forward fuses with the mask as fourth input.
    desc, _ = _passes_equal(main, names, outs, SHAPES + [mask_shape])
    after = _types(desc)
    fa = [op for op in desc.block(0)["ops"] if op["type"] == "oar.fused_attention"]
    assert len(fa) == 1 and len(fa[0]["inputs"]["x"]) == 4, after
    assert "oar.fused_attention_grad" not in after and "oar.softmax_grad" in after, after
    # Scores that must keep their value (pinned): the forward is left alone.
    main, names, outs = _record(_mha, SHAPES)
    scores = [op for op in main.desc.block(0)["ops"] if op["type"] == "oar.softmax"][0]["inputs"]["x"][0]
    desc, report = _passes_equal(main, names, outs, SHAPES, pinned=[scores])
    assert "oar.fused_attention" not in _types(desc) and report["fuse_attention"]["ops_fused"] == 0
    # Turned off: nothing changes.
    desc, _ = _passes_equal(main, names, outs, SHAPES, fuse_attention=False)
    assert _types(desc) == _types(main.desc)


def test_fuse_softmax_grad_rewrites_the_composite_chain():
    def chain(x, g, fetch_t=False):
        y = oar.nn.functional.softmax(x, axis=1)
        t = g * y
        return [y * (g - t.sum(axis=1, keepdim=True))] + ([t] if fetch_t else [])

    shapes = [[4, 5], [4, 5]]
    main, names, outs = _record(chain, shapes)
    desc, report = _passes_equal(main, names, outs, shapes)
    assert _types(desc) == ["oar.softmax", "oar.softmax_grad"], _types(desc)
    assert desc.block(0)["ops"][1]["attrs"]["axis"] == 1 and report["fuse_softmax_grad"]["ops_fused"] == 1
    # An intermediate that is fetched stays computed: the chain is left alone.
    main2, names2, outs2 = _record(lambda x, g: chain(x, g, fetch_t=True), shapes)
    desc, _ = _passes_equal(main2, names2, outs2, shapes)
    assert "oar.softmax_grad" not in _types(desc)


# ---- training ---------------------------------------------------------------------------------------------
class _Encoder(oar.nn.Layer):
    def __init__(self, masked):
        super().__init__()
        layer = oar.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)
        self.enc = oar.nn.TransformerEncoder(layer, 2)
        self.head = oar.nn.Linear(6 * 16, 10)
        self.masked = masked
        # The key projection's bias has a zero gradient by construction (softmax ignores a shift of a row):
        # its computed gradient is rounding noise, which Adam turns into full steps. Frozen.
        for l in self.enc.layers:
            l.self_attn.k_proj.bias.stop_gradient = True

    def forward(self, x, mask):
        h = self.enc(x, mask if self.masked else None)
        return self.head(h.reshape([x.shape[0], -1]))


@pytest.mark.parametrize("masked", [False, True])
def test_to_static_transformer_training_with_fused_attention_equals_eager(masked):
    rs = np.random.RandomState(0)
    x = _t(rs.randn(4, 6, 16).astype(F32))
    mask = np.zeros((4, 1, 6, 6), F32)
    mask[1, :, :, 4:] = -1e9  # padding of the second sequence
    mask = _t(mask)
    y = _t(np.random.RandomState(1).randint(0, 10, (4,)).astype("int64"))
    oar.seed(0)
    a = _Encoder(masked)
    oar.seed(0)
    b = _Encoder(masked)
    b.set_state_dict({k: _t(v.numpy()) for k, v in a.state_dict().items()})
    b = oar.jit.to_static(b)
    train_side_by_side(a, b, (x, mask), y)
    report = next(iter(b.forward._cache.values())).pass_report
    assert report["fuse_attention"]["ops_fused"] == 4, report  # 2 blocks + their head merges
    assert report["fuse_attention[backward]"]["ops_fused"] == 8, report  # 2 blocks + dq, dk, dv merges


@pytest.mark.skipif(not _avx512(), reason="the small-heads path runs on AVX-512 only")
def test_to_static_transformer_training_equals_eager_bit_for_bit():
    # tests/benchmarks/bench_jit.py's Transformer (d 64, 4 heads of 16, 16 keys). With every fused op of
    # its training program rounding as the unfused ops do, to_static trains it exactly as eager does,
    # the key projection's bias included (its gradient is rounding noise that Adam amplifies: any
    # difference in rounding shows there first).
    nn = oar.nn
    rs = np.random.RandomState(0)
    x = _t(rs.randn(8, 16, 64).astype(F32))
    y = _t(np.random.RandomState(1).randint(0, 10, (8,)).astype("int64"))

    def build():
        oar.seed(0)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0)
        return nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Flatten(), nn.Linear(16 * 64, 10))

    eager, model = build(), build()
    model.set_state_dict({k: _t(v.numpy()) for k, v in eager.state_dict().items()})
    static = oar.jit.to_static(model)
    oe = oar.optimizer.Adam(1e-3, parameters=eager.parameters())
    os_ = oar.optimizer.Adam(1e-3, parameters=model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    for step in range(4):
        le, ls = loss_fn(eager(x), y), loss_fn(static(x), y)
        np.testing.assert_array_equal(ls.numpy(), le.numpy(), err_msg=str(step))
        le.backward()
        ls.backward()
        oe.step()
        os_.step()
        oe.clear_grad()
        os_.clear_grad()
        for (k, pe), ps in zip(eager.named_parameters(), model.parameters()):
            np.testing.assert_array_equal(ps.numpy(), pe.numpy(), err_msg="{} {}".format(step, k))
    report = next(iter(static.forward._cache.values())).pass_report  # the fused ops did run
    assert report["fuse_attention"]["ops_fused"] == 4 and report["fuse_attention[backward]"]["ops_fused"] == 8
    assert report["fuse_gemm_epilogue[backward]"]["ops_fused"] > 0, report
