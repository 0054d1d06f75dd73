"""oar.incubate: LookAhead and ModelAverage against hand-written references of their update rules,
softmax_mask_fuse and the fused_* compositions against numpy references (float64) with finite-difference
gradients, the Fused* layers' parameters, the graph_* names, and bad input."""
import math

import numpy as np
import pytest

import oar
import oar.incubate as I
import oar.incubate.nn.functional as FF

from _util import check, check_grad


# ---- optimizers ---------------------------------------------------------------------------------------
def _lookahead_ref(w0, target, steps, lr, alpha, k):
    fast = w0.copy()
    slow = None
    out = []
    for i in range(steps):
        fast = fast - lr * 2 * (fast - target) * (i + 1)
        if slow is None:
            slow = fast.copy()
        if (i + 1) % k == 0:
            slow = slow + alpha * (fast - slow)
            fast = slow.copy()
        out.append(fast.copy())
    return np.array(out)


def test_lookahead_matches_reference():
    w = oar.create_parameter([3], "float64")
    w0 = np.array([1.0, -2.0, 0.5])
    w.set_value(w0)
    target = np.array([0.3, 0.1, -0.4])
    la = I.LookAhead(oar.optimizer.SGD(learning_rate=0.05, parameters=[w]), alpha=0.3, k=3)
    got = []
    for i in range(8):
        ((w - oar.to_tensor(target)) ** 2 * float(i + 1)).sum().backward()
        la.step()
        la.clear_grad()
        got.append(w.numpy().copy())
    np.testing.assert_allclose(np.array(got), _lookahead_ref(w0, target, 8, 0.05, 0.3, 3), rtol=1e-12)
    assert la.get_lr() == 0.05


def test_lookahead_state_dict_round_trip():
    def make():  # the same parameter name, so the state's entries find their tensors
        w = oar.create_parameter([2], "float64", attr=oar.ParamAttr(name="lookahead_w"))
        w.set_value(np.array([1.0, 2.0]))
        return w, I.LookAhead(oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=[w]), alpha=0.5, k=2)

    def step(w, la, i):
        (w * w * float(i + 1)).sum().backward()
        la.step()
        la.clear_grad()

    w1, la1 = make()
    for i in range(3):
        step(w1, la1, i)
    state = la1.state_dict()
    assert state["lookahead_step"] == 3 and any(n.endswith("_slow_0") for n in state)
    w2, la2 = make()
    w2.set_value(w1.numpy())
    la2.set_state_dict({k: (v.numpy() if isinstance(v, oar.Tensor) else v) for k, v in state.items()})
    for i in range(3, 6):
        step(w1, la1, i)
        step(w2, la2, i)
    np.testing.assert_allclose(w2.numpy(), w1.numpy(), rtol=1e-12)


def test_lookahead_bad_arguments():
    w = oar.create_parameter([2], "float32")
    sgd = oar.optimizer.SGD(parameters=[w])
    with pytest.raises(ValueError, match="LookAhead: alpha"):
        I.LookAhead(sgd, alpha=1.5)
    with pytest.raises(ValueError, match="LookAhead: k"):
        I.LookAhead(sgd, k=0)
    with pytest.raises(TypeError, match="LookAhead: inner_optimizer"):
        I.LookAhead(None)


def _model_average_ref(values, rate, min_w, max_w):
    """Paddle's average_accumulates rule over the parameter values seen at each step; returns the
    average apply() would give after each step."""
    s1 = s2 = s3 = np.zeros_like(values[0])
    num_acc = old_num = num_upd = 0
    out = []
    for v in values:
        num_upd += 1
        num_acc += 1
        s1 = s1 + v
        if num_acc >= min_w and num_acc >= min(max_w, int(num_upd * rate)):
            s3 = s1 + s2
            s1 = s2 = np.zeros_like(v)
            old_num, num_acc = num_acc, 0
        out.append((s1 + s2 + s3) / (num_acc + old_num))
    return np.array(out)


def test_model_average_matches_reference_and_restores():
    w = oar.create_parameter([3], "float32")
    w.set_value(np.array([1.0, -2.0, 0.5], np.float32))
    sgd = oar.optimizer.SGD(learning_rate=0.05, parameters=[w])
    ma = I.ModelAverage(0.5, parameters=[w], min_average_window=2, max_average_window=3)
    values, averaged = [], []
    for i in range(9):
        (w * w * float(i + 1)).sum().backward()
        sgd.step()
        ma.step()
        sgd.clear_grad()
        trained = w.numpy().copy()
        values.append(trained.astype(np.float64))
        with ma.apply():
            averaged.append(w.numpy().copy())
        np.testing.assert_array_equal(w.numpy(), trained)  # restored on exit
    np.testing.assert_allclose(np.array(averaged), _model_average_ref(values, 0.5, 2, 3), rtol=1e-6)
    with ma.apply(need_restore=False):
        pass
    np.testing.assert_allclose(w.numpy(), averaged[-1], rtol=1e-6)
    ma.restore()
    np.testing.assert_array_equal(w.numpy(), values[-1].astype(np.float32))


def test_model_average_state_dict_and_errors():
    w = oar.create_parameter([2], "float32")
    ma = I.ModelAverage(0.15, parameters=[w], min_average_window=2, max_average_window=4)
    (w * w).sum().backward()
    ma.step()
    names = sorted(n[len(w.name) + 1:] for n in ma.state_dict())
    assert names == sorted(["sum_1_0", "sum_2_0", "sum_3_0", "restore_0", "num_accumulates_0",
                            "old_num_accumulates_0", "num_updates_0"])
    ma2 = I.ModelAverage(0.15, parameters=[w], min_average_window=2, max_average_window=4)
    ma2.set_state_dict({k: v.numpy() for k, v in ma.state_dict().items()})
    ma2.step()
    assert int(ma2.state_dict()[w.name + "_num_updates_0"].item()) == 2
    with pytest.raises(ValueError, match="ModelAverage: average_window_rate"):
        I.ModelAverage(0, parameters=[w])
    with pytest.raises(ValueError, match="ModelAverage: min_average_window .* must be <= max_average_window"):
        I.ModelAverage(0.1, parameters=[w], min_average_window=5, max_average_window=2)
    with pytest.raises(AttributeError, match="ModelAverage: parameters must be given"):
        I.ModelAverage(0.1)


# ---- softmax_mask_fuse --------------------------------------------------------------------------------
def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_softmax_mask_fuse():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    mask = np.where(rng.uniform(size=(2, 1, 4, 5)) < 0.3, -1e4, 0.0)
    check(I.softmax_mask_fuse(oar.to_tensor(x), oar.to_tensor(mask)), _softmax(x + mask), rtol=1e-12, atol=1e-12)
    check_grad(lambda a: I.softmax_mask_fuse(a, oar.to_tensor(mask)), [x])
    causal = np.where(np.triu(np.ones((4, 5), bool), 1), -np.inf, 0.0)
    check(I.softmax_mask_fuse_upper_triangle(oar.to_tensor(x)), _softmax(x + causal), rtol=1e-12, atol=1e-12)
    check_grad(I.softmax_mask_fuse_upper_triangle, [x])
    with pytest.raises(ValueError, match="softmax_mask_fuse: x must be 4-D"):
        I.softmax_mask_fuse(oar.ones([2, 3]), oar.ones([2, 3]))
    with pytest.raises(TypeError, match="softmax_mask_fuse_upper_triangle: x must be a float tensor"):
        I.softmax_mask_fuse_upper_triangle(oar.ones([1, 1, 2, 2], dtype="int32"))


# ---- fused functional ---------------------------------------------------------------------------------
def _ln(a, scale=None, bias=None, eps=1e-5):
    mu = a.mean(-1, keepdims=True)
    var = ((a - mu) ** 2).mean(-1, keepdims=True)
    out = (a - mu) / np.sqrt(var + eps)
    return out * (1 if scale is None else scale) + (0 if bias is None else bias)


def _gelu(a):
    from math import erf
    return 0.5 * a * (1 + np.vectorize(erf)(a / math.sqrt(2)))


def test_fused_matmul_bias_linear_activation():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    X, W, B = map(oar.to_tensor, (x, w, b))
    check(FF.fused_matmul_bias(X, W, B), x @ w + b, rtol=1e-12)
    check(FF.fused_matmul_bias(X, oar.to_tensor(w.T.copy()), B, transpose_y=True), x @ w + b, rtol=1e-12)
    check(FF.fused_linear(X, W), x @ w, rtol=1e-12)
    check(FF.fused_linear(X, oar.to_tensor(w.T.copy()), B, transpose_weight=True), x @ w + b, rtol=1e-12)
    check(FF.fused_linear_activation(X, W, B, activation="relu"), np.maximum(x @ w + b, 0), rtol=1e-12)
    check(FF.fused_linear_activation(X, W, B, activation="gelu"), _gelu(x @ w + b), rtol=1e-10, atol=1e-12)
    check_grad(lambda a, c, d: FF.fused_matmul_bias(a, c, d), [x, w, b])
    with pytest.raises(ValueError, match="fused_linear_activation: activation"):
        FF.fused_linear_activation(X, W, B, activation="tanh")


def test_fused_dropout_add_and_bias_dropout_residual_layer_norm():
    rng = np.random.default_rng(2)
    x, r = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 3, 6))
    bias, scale, shift = rng.standard_normal(6), rng.uniform(0.5, 2, 6), rng.standard_normal(6)
    X, R = oar.to_tensor(x), oar.to_tensor(r)
    check(FF.fused_dropout_add(X, R, p=0.0), x + r, rtol=1e-12)
    check(FF.fused_dropout_add(X, R, p=0.4, training=False), x + r, rtol=1e-12)  # upscale_in_train: identity
    ones = FF.fused_dropout_add(oar.ones([1000]), oar.zeros([1000]), p=0.5).numpy()
    assert set(np.unique(ones)) <= {0.0, 2.0} and 300 < (ones == 0).sum() < 700
    ref = _ln(r + x + bias, scale, shift)
    out = FF.fused_bias_dropout_residual_layer_norm(X, R, oar.to_tensor(bias), oar.to_tensor(scale),
                                                    oar.to_tensor(shift), dropout_rate=0.0)
    check(out, ref, rtol=1e-10, atol=1e-12)
    check_grad(lambda a, b, c, d, e: FF.fused_bias_dropout_residual_layer_norm(a, b, c, d, e, dropout_rate=0.0),
               [x, r, bias, scale, shift], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="fused_bias_dropout_residual_layer_norm: x and residual"):
        FF.fused_bias_dropout_residual_layer_norm(X, oar.ones([2, 6]))
    with pytest.raises(ValueError, match="fused_bias_dropout_residual_layer_norm: dropout_rate"):
        FF.fused_bias_dropout_residual_layer_norm(X, R, dropout_rate=1.5)


@pytest.mark.parametrize("pre_layer_norm", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_fused_feedforward(pre_layer_norm, activation):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    w1, b1, w2, b2 = rng.standard_normal((4, 8)), rng.standard_normal(8), rng.standard_normal((8, 4)), \
        rng.standard_normal(4)
    s1, t1, s2, t2 = rng.uniform(0.5, 2, 4), rng.standard_normal(4), rng.uniform(0.5, 2, 4), rng.standard_normal(4)
    act = (lambda a: np.maximum(a, 0)) if activation == "relu" else _gelu
    h = _ln(x, s1, t1) if pre_layer_norm else x
    h = x + (act(h @ w1 + b1) @ w2 + b2)
    ref = h if pre_layer_norm else _ln(h, s2, t2)

    def f(a, c, d, e, g):
        return FF.fused_feedforward(a, c, e, d, g, oar.to_tensor(s1), oar.to_tensor(t1), oar.to_tensor(s2),
                                    oar.to_tensor(t2), 0.0, 0.0, activation, pre_layer_norm=pre_layer_norm)
    T = oar.to_tensor
    check(f(T(x), T(w1), T(b1), T(w2), T(b2)), ref, rtol=1e-10, atol=1e-12)
    check_grad(f, [x, w1, b1, w2, b2], rtol=1e-5, atol=1e-6)
    no_res = FF.fused_feedforward(T(x), T(w1), T(w2), T(b1), T(b2), dropout1_rate=0.0, dropout2_rate=0.0,
                                  activation=activation, pre_layer_norm=True, add_residual=False)
    check(no_res, act(_ln(x) @ w1 + b1) @ w2 + b2, rtol=1e-10, atol=1e-12)


def _mha_ref(x, qkv_w, qkv_b, lin_w, lin_b, mask, pre, ln_s, ln_b, cache=None):
    b, s, e = x.shape
    _, heads, hd, _ = qkv_w.shape
    h = _ln(x, ln_s, ln_b) if pre else x
    qkv = np.einsum("bse,thde->tbhsd", h, qkv_w) + qkv_b[:, None, :, None, :]
    q, k, v = qkv
    if cache is not None:
        k = np.concatenate([cache[0], k], axis=2)
        v = np.concatenate([cache[1], v], axis=2)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
    if mask is not None:
        scores = scores + mask
    ctx = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(b, s, heads * hd)
    out = x + ctx @ lin_w + lin_b
    out = out if pre else _ln(out, ln_s, ln_b)
    return out, (None if cache is None else np.stack([k, v]))


@pytest.mark.parametrize("pre_layer_norm", [False, True])
def test_fused_multi_head_attention(pre_layer_norm):
    rng = np.random.default_rng(4)
    b, s, heads, hd = 2, 3, 2, 3
    e = heads * hd
    x = rng.standard_normal((b, s, e))
    qkv_w, qkv_b = rng.standard_normal((3, heads, hd, e)) * 0.5, rng.standard_normal((3, heads, hd))
    lin_w, lin_b = rng.standard_normal((e, e)) * 0.5, rng.standard_normal(e)
    ln_s, ln_b = rng.uniform(0.5, 2, e), rng.standard_normal(e)
    mask = np.where(rng.uniform(size=(b, 1, s, s)) < 0.3, -1e9, 0.0)
    ref, _ = _mha_ref(x, qkv_w, qkv_b, lin_w, lin_b, mask, pre_layer_norm, ln_s, ln_b)
    T = oar.to_tensor
    lnkw = dict(pre_ln_scale=T(ln_s), pre_ln_bias=T(ln_b)) if pre_layer_norm else dict(ln_scale=T(ln_s),
                                                                                       ln_bias=T(ln_b))

    def f(a, w, wb, lw, lb):
        return FF.fused_multi_head_attention(a, w, lw, pre_layer_norm=pre_layer_norm, qkv_bias=wb, linear_bias=lb,
                                             attn_mask=T(mask), dropout_rate=0.0, attn_dropout_rate=0.0, **lnkw)
    check(f(T(x), T(qkv_w), T(qkv_b), T(lin_w), T(lin_b)), ref, rtol=1e-10, atol=1e-12)
    check_grad(f, [x, qkv_w, qkv_b, lin_w, lin_b], rtol=1e-5, atol=1e-6)
    # the transposed weight layout [e, 3e] gives the same numbers
    wt = qkv_w.reshape(3 * e, e).T.copy()
    out_t = FF.fused_multi_head_attention(T(x), T(wt), T(lin_w), pre_layer_norm, qkv_bias=T(qkv_b.reshape(-1)),
                                          linear_bias=T(lin_b), attn_mask=T(mask), dropout_rate=0.0,
                                          attn_dropout_rate=0.0, num_heads=heads, transpose_qkv_wb=True, **lnkw)
    check(out_t, ref, rtol=1e-10, atol=1e-12)
    # a kv cache in front of the keys and values
    cache = rng.standard_normal((2, b, heads, 2, hd))
    ref_c, cache_ref = _mha_ref(x, qkv_w, qkv_b, lin_w, lin_b, None, pre_layer_norm, ln_s, ln_b, cache)
    out_c, cache_out = FF.fused_multi_head_attention(T(x), T(qkv_w), T(lin_w), pre_layer_norm, qkv_bias=T(qkv_b),
                                                     linear_bias=T(lin_b), cache_kv=T(cache), dropout_rate=0.0,
                                                     attn_dropout_rate=0.0, **lnkw)
    check(out_c, ref_c, rtol=1e-10, atol=1e-12)
    check(cache_out, cache_ref, rtol=1e-12, atol=1e-12)


def test_fused_multi_head_attention_bad_input():
    x = oar.ones([2, 3, 4])
    with pytest.raises(ValueError, match="fused_multi_head_attention: qkv_weight must be"):
        FF.fused_multi_head_attention(x, oar.ones([3, 2, 2, 5]), oar.ones([4, 4]))
    with pytest.raises(ValueError, match="fused_multi_head_attention: with transpose_qkv_wb, num_heads"):
        FF.fused_multi_head_attention(x, oar.ones([4, 12]), oar.ones([4, 4]), transpose_qkv_wb=True, num_heads=3)
    with pytest.raises(NotImplementedError, match="fused_multi_head_attention: ring_id"):
        FF.fused_multi_head_attention(x, oar.ones([3, 2, 2, 4]), oar.ones([4, 4]), ring_id=0)


def test_fused_layer_norm_and_rms_norm():
    rng = np.random.default_rng(5)
    x, res, bias = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), rng.standard_normal(4)
    w, b = rng.uniform(0.5, 2, 12), rng.standard_normal(12)
    T = oar.to_tensor
    h = x + bias + 0.5 * res
    flat = h.reshape(2, 12)
    out, h_out = FF.fused_layer_norm(T(x), T(w), T(b), 1e-5, residual_alpha=0.5, begin_norm_axis=1, bias=T(bias),
                                     residual=T(res))
    check(out, _ln(flat, w, b).reshape(2, 3, 4), rtol=1e-10, atol=1e-12)
    check(h_out, h, rtol=1e-12)
    check(FF.fused_layer_norm(T(x), T(w[:4]), T(b[:4]), 1e-5, begin_norm_axis=2), _ln(x, w[:4], b[:4]), rtol=1e-10,
          atol=1e-12)
    check(FF.fused_layer_norm(T(x), None, None, 1e-5, bias=T(bias)), x + bias, rtol=1e-12)
    check_grad(lambda a, c, d: FF.fused_layer_norm(a, c, d, 1e-5, begin_norm_axis=1), [x, w, b])

    def rms(a, wt, bs):
        return a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6) * wt + bs
    out, h_out = FF.fused_rms_norm(T(x), T(w[:4]), T(b[:4]), 1e-6, 2, residual=T(res))
    check(out, rms(x + res, w[:4], b[:4]), rtol=1e-10, atol=1e-12)
    check(h_out, x + res, rtol=1e-12)
    check(FF.fused_rms_norm(T(x), T(w), None, 1e-6, 1), rms(x.reshape(2, 12), w, 0).reshape(2, 3, 4), rtol=1e-10)
    check_grad(lambda a, c: FF.fused_rms_norm(a, c, None, 1e-6, 2), [x, w[:4]])
    half = FF.fused_rms_norm(T(x).astype("float16"), T(w[:4]).astype("float16"), None, 1e-6, 2)
    assert half.dtype == oar.float16
    np.testing.assert_allclose(half.numpy().astype(np.float64), rms(x, w[:4], 0), rtol=5e-3, atol=5e-3)
    with pytest.raises(ValueError, match="fused_rms_norm: norm_weight must be a tensor of 4 elements"):
        FF.fused_rms_norm(T(x), T(w), None, 1e-6, 2)
    with pytest.raises(ValueError, match="fused_layer_norm: begin_norm_axis"):
        FF.fused_layer_norm(T(x), None, None, 1e-5, begin_norm_axis=3)
    with pytest.raises(NotImplementedError, match="fused_layer_norm: quantised"):
        FF.fused_layer_norm(T(x), T(w), T(b), 1e-5, quant_scale=0.5)


# ---- layers -------------------------------------------------------------------------------------------
def test_fused_layers_parameters_and_forward():
    import oar.incubate.nn as N
    shapes = lambda m: [(n, p.shape) for n, p in m.named_parameters()]  # noqa: E731
    assert shapes(N.FusedLinear(4, 6)) == [("weight", [4, 6]), ("bias", [6])]
    assert shapes(N.FusedBiasDropoutResidualLayerNorm(8)) == [("linear_bias", [8]), ("ln_scale", [8]),
                                                              ("ln_bias", [8])]
    assert shapes(N.FusedFeedForward(8, 16)) == [("_linear1_weight", [8, 16]), ("_linear1_bias", [16]),
                                                 ("_linear2_weight", [16, 8]), ("_linear2_bias", [8]),
                                                 ("_ln2_scale", [8]), ("_ln2_bias", [8])]
    assert shapes(N.FusedMultiHeadAttention(8, 2)) == [("qkv_weight", [3, 2, 4, 8]), ("qkv_bias", [3, 2, 4]),
                                                       ("linear_weight", [8, 8]), ("linear_bias", [8]),
                                                       ("ln_scale", [8]), ("ln_bias", [8])]
    assert shapes(N.FusedMultiHeadAttention(8, 2, transpose_qkv_wb=True))[:2] == [("qkv_weight", [8, 24]),
                                                                                  ("qkv_bias", [24])]
    enc = N.FusedTransformerEncoderLayer(8, 2, 16, dropout_rate=0.0)
    assert [n for n, _ in enc.named_parameters()][:1] == ["fused_attn.qkv_weight"]
    assert len(enc.state_dict()) == 12
    x = np.random.default_rng(6).standard_normal((2, 3, 8)).astype(np.float32)
    attn, ffn = enc.fused_attn, enc.ffn
    P = {n: p.numpy().astype(np.float64) for n, p in enc.named_parameters()}
    a, _ = _mha_ref(x.astype(np.float64), P["fused_attn.qkv_weight"], P["fused_attn.qkv_bias"],
                    P["fused_attn.linear_weight"], P["fused_attn.linear_bias"], None, False, P["fused_attn.ln_scale"],
                    P["fused_attn.ln_bias"])
    ref = _ln(a + np.maximum(a @ P["ffn._linear1_weight"] + P["ffn._linear1_bias"], 0) @ P["ffn._linear2_weight"]
              + P["ffn._linear2_bias"], P["ffn._ln2_scale"], P["ffn._ln2_bias"])
    check(enc(oar.to_tensor(x)), ref, rtol=1e-4, atol=1e-5)
    assert attn.training and ffn.training
    with pytest.raises(ValueError, match="FusedMultiHeadAttention: num_heads"):
        N.FusedMultiHeadAttention(8, 3)


def test_graph_names():
    x = oar.to_tensor([[0.0, 2.0], [1.0, 4.0], [2.0, 6.0]])
    s, d = oar.to_tensor([0, 1, 2, 0]), oar.to_tensor([1, 2, 1, 0])
    check(I.graph_send_recv(x, s, d, "sum"), [[0, 2], [2, 8], [1, 4]])
    row = oar.to_tensor([3, 7, 0, 9, 1, 4, 2, 9, 3, 9, 1, 9, 7], dtype="int64")
    colptr = oar.to_tensor([0, 2, 4, 5, 6, 7, 9, 11, 11, 13, 13], dtype="int64")
    nodes = oar.to_tensor([0, 8, 1, 2], dtype="int64")
    nb, cnt = I.graph_sample_neighbors(row, colptr, nodes, sample_size=2)
    check(nb, [3, 7, 9, 7, 0, 9, 1])
    src, dst, out_nodes = I.graph_reindex(oar.to_tensor([0, 1, 2]), oar.to_tensor([8, 9, 0, 4, 7, 6, 7]),
                                          oar.to_tensor([2, 3, 2], dtype="int32"))
    check(out_nodes, [0, 1, 2, 8, 9, 4, 7, 6])
    # Paddle 2.6.2's answer for this graph (every hop here has degrees <= 2, so nothing random)
    es, ed, idx, rn = I.graph_khop_sampler(row, colptr, nodes, [2, 2])
    check(es, np.array([4, 5, 6, 5, 0, 6, 2, 7]).reshape(-1, 1))
    check(ed, np.array([0, 0, 1, 1, 2, 2, 3, 4]).reshape(-1, 1))
    check(idx, [0, 8, 1, 2, 3, 7, 9, 4])
    check(rn, [0, 1, 2, 3])
    es, ed, idx, rn, eids = I.graph_khop_sampler(row, colptr, nodes, [2, 2], sorted_eids=oar.arange(13),
                                                 return_eids=True)
    r = row.numpy()
    np.testing.assert_array_equal(r[eids.numpy().ravel()], idx.numpy()[es.numpy().ravel()])


def test_identity_loss():
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    check(I.identity_loss(x, "sum"), np.array(6.0, np.float32))
    check(I.identity_loss(x, 1), np.array(2.0, np.float32))
    assert I.identity_loss(x) is x
    I.identity_loss(x, "mean").backward()
    check(x.grad, np.full(3, 1 / 3, np.float32))
    with pytest.raises(ValueError, match="identity_loss: reduction"):
        I.identity_loss(x, "max")
