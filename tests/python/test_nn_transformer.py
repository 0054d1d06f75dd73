"""MultiHeadAttention and the Transformer layers against numpy references (eval mode), masks, caches,
Paddle's parameter names, shapes and errors."""
import numpy as np
import pytest

import oar
import oar.nn as nn

from _util import check, check_grad


def _w(layer):
    return {k: v.numpy().astype(np.float64) for k, v in layer.state_dict().items()}


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_mha(w, q, k, v, heads, mask=None, prefix=""):
    """Reference multi-head attention; mask is additive (float) or bool (True = attend)."""
    lin = lambda x, n: x @ w[prefix + n + ".weight"] + w[prefix + n + ".bias"]  # noqa: E731
    Q, K, V = lin(q, "q_proj"), lin(k, "k_proj"), lin(v, "v_proj")
    b, lq, e = Q.shape
    d = e // heads
    split = lambda x: x.reshape(b, x.shape[1], heads, d).transpose(0, 2, 1, 3)  # noqa: E731
    Q, K, V = split(Q), split(K), split(V)
    s = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(d)
    if mask is not None:
        s = s + (np.where(mask, 0.0, -1e9) if mask.dtype == bool else mask)
    a = _softmax(s)
    o = (a @ V).transpose(0, 2, 1, 3).reshape(b, lq, e)
    return lin(o, "out_proj"), a


def _ln(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def np_encoder_layer(w, x, heads, mask=None, normalize_before=False, p=""):
    lin = lambda x, n: x @ w[p + n + ".weight"] + w[p + n + ".bias"]  # noqa: E731
    ln = lambda x, n: _ln(x, w[p + n + ".weight"], w[p + n + ".bias"])  # noqa: E731
    r = x
    h = ln(x, "norm1") if normalize_before else x
    h = r + np_mha(w, h, h, h, heads, mask, p + "self_attn.")[0]
    if not normalize_before:
        h = ln(h, "norm1")
    r = h
    if normalize_before:
        h = ln(h, "norm2")
    h = r + lin(np.maximum(lin(h, "linear1"), 0), "linear2")
    return h if normalize_before else ln(h, "norm2")


RNG = np.random.default_rng(0)


def test_mha_matches_numpy_with_masks(device):
    oar.set_device(device)
    oar.seed(1)
    mha = nn.MultiHeadAttention(8, 2, need_weights=True)
    w = _w(mha)
    q = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    kv = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    out, weights = mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv))
    eo, ea = np_mha(w, q, kv, kv, 2)
    check(out, eo, rtol=1e-4, atol=1e-5)
    check(weights, ea, rtol=1e-4, atol=1e-5)
    # bool mask: True marks the positions that may be attended
    bmask = RNG.random((2, 1, 3, 5)) > 0.4
    bmask[..., 0] = True
    out, weights = mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv), attn_mask=oar.to_tensor(bmask))
    eo, ea = np_mha(w, q, kv, kv, 2, bmask)
    check(out, eo, rtol=1e-4, atol=1e-5)
    assert np.all(weights.numpy()[np.broadcast_to(~bmask, (2, 2, 3, 5))] < 1e-6)
    # float mask: added to the scores
    fmask = RNG.standard_normal((3, 5)).astype(np.float32)
    out, _ = mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv), attn_mask=oar.to_tensor(fmask))
    check(out, np_mha(w, q, kv, kv, 2, fmask)[0], rtol=1e-4, atol=1e-5)
    # int mask behaves like bool
    imask = oar.to_tensor(bmask.astype(np.int64))
    out_i, _ = mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv), attn_mask=imask)
    out_b, _ = mha(oar.to_tensor(q), oar.to_tensor(kv), oar.to_tensor(kv), attn_mask=oar.to_tensor(bmask))
    check(out_i, out_b.numpy())


def test_mha_self_attention_kdim_vdim_and_names():
    mha = nn.MultiHeadAttention(8, 4, kdim=3, vdim=5)
    assert list(mha.state_dict().keys()) == [
        "q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
        "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"]
    assert mha.k_proj.weight.shape == [3, 8] and mha.v_proj.weight.shape == [5, 8]
    q = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    k = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    v = RNG.standard_normal((2, 6, 5)).astype(np.float32)
    out = mha(oar.to_tensor(q), oar.to_tensor(k), oar.to_tensor(v))
    assert isinstance(out, oar.Tensor)  # need_weights=False: just the output
    check(out, np_mha(_w(mha), q, k, v, 4)[0], rtol=1e-4, atol=1e-5)
    self_only = nn.MultiHeadAttention(8, 2)
    check(self_only(oar.to_tensor(q)), np_mha(_w(self_only), q, q, q, 2)[0], rtol=1e-4, atol=1e-5)


def test_mha_incremental_cache_equals_full_causal_attention():
    oar.seed(2)
    mha = nn.MultiHeadAttention(8, 2).eval()
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    causal = np.tril(np.ones((4, 4), bool))
    full = mha(oar.to_tensor(x), attn_mask=oar.to_tensor(causal)).numpy()
    cache = mha.gen_cache(oar.to_tensor(x))
    assert cache.k.shape == [2, 2, 0, 4]
    for t in range(4):
        out, cache = mha(oar.to_tensor(x[:, t:t + 1]), cache=cache)
        assert isinstance(cache, nn.MultiHeadAttention.Cache) and cache.k.shape == [2, 2, t + 1, 4]
        check(out, full[:, t:t + 1], rtol=1e-4, atol=1e-5)
    mem = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    static = mha.gen_cache(oar.to_tensor(mem), oar.to_tensor(mem), type=nn.MultiHeadAttention.StaticCache)
    out, same = mha(oar.to_tensor(x), None, None, None, static)
    assert same is static
    check(out, mha(oar.to_tensor(x), oar.to_tensor(mem), oar.to_tensor(mem)).numpy(), rtol=1e-5, atol=1e-6)


def test_mha_gradients_flow_to_projections():
    mha = nn.MultiHeadAttention(4, 2)
    x = oar.randn([2, 3, 4])
    x.stop_gradient = False
    mha(x).sum().backward()
    assert x.grad is not None
    for name, p in mha.named_parameters():
        assert p.grad is not None, name
    assert np.abs(mha.q_proj.weight.grad.numpy()).sum() > 0


def test_mha_input_gradients_match_finite_differences():
    oar.seed(7)
    mha = nn.MultiHeadAttention(4, 2, kdim=3).to(dtype="float64")
    mask = np.array([[True, True, False], [True, False, True]])
    rng = np.random.default_rng(7)
    check_grad(lambda q, k: mha(q, k, k[..., :3] @ oar.ones([3, 4], dtype="float64"), attn_mask=oar.to_tensor(mask)),
               [rng.standard_normal((1, 2, 4)), rng.standard_normal((1, 3, 3))])


def test_attrs_without_bias_and_attr_lists():
    mha = nn.MultiHeadAttention(4, 2, bias_attr=False)
    assert list(mha.state_dict().keys()) == ["q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight"]
    layer = nn.TransformerEncoderLayer(4, 2, 8, bias_attr=[False, None])
    keys = list(layer.state_dict().keys())
    assert "self_attn.q_proj.bias" not in keys and "linear1.bias" in keys
    model = nn.Transformer(4, 2, 1, 1, 8, bias_attr=[None, None, False])
    keys = model.state_dict().keys()
    assert "decoder.layers.0.linear1.bias" not in keys and "encoder.layers.0.linear1.bias" not in keys
    assert "decoder.layers.0.cross_attn.q_proj.bias" in keys
    assert model(oar.randn([1, 3, 4]), oar.randn([1, 2, 4])).shape == [1, 2, 4]


@pytest.mark.parametrize("normalize_before", [False, True])
def test_encoder_layer_matches_numpy_in_eval(normalize_before):
    oar.seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, normalize_before=normalize_before).eval()
    x = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    mask = RNG.random((2, 1, 5, 5)) > 0.3
    mask[..., 0] = True
    out = layer(oar.to_tensor(x), oar.to_tensor(mask))
    check(out, np_encoder_layer(_w(layer), x, 2, mask, normalize_before), rtol=1e-4, atol=1e-4)
    keys = list(layer.state_dict().keys())
    assert keys[:8] == ["self_attn.q_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.weight",
                        "self_attn.k_proj.bias", "self_attn.v_proj.weight", "self_attn.v_proj.bias",
                        "self_attn.out_proj.weight", "self_attn.out_proj.bias"]
    assert keys[8:] == ["linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]


def test_encoder_stack_layers_are_independent_and_match_numpy():
    oar.seed(4)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, norm=None).eval()
    assert len(enc.layers) == 2
    a, b = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert a is not b and not np.allclose(a.numpy(), b.numpy())
    assert "layers.1.norm2.bias" in enc.state_dict()
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    w = _w(enc)
    ref = np_encoder_layer(w, np_encoder_layer(w, x, 2, p="layers.0."), 2, p="layers.1.")
    check(enc(oar.to_tensor(x)), ref, rtol=1e-4, atol=1e-4)


def test_decoder_and_transformer_shapes():
    oar.seed(5)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2)
    tgt, mem = oar.randn([2, 4, 8]), oar.randn([2, 6, 8])
    assert dec(tgt, mem).shape == [2, 4, 8]
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16)
    keys = model.state_dict().keys()
    assert "encoder.layers.1.self_attn.q_proj.weight" in keys and "encoder.norm.weight" in keys
    assert "decoder.layers.0.cross_attn.out_proj.bias" in keys and "decoder.norm.bias" in keys
    mask = model.generate_square_subsequent_mask(4)
    m = mask.numpy()
    assert mask.shape == [4, 4] and np.all(m[np.tril_indices(4)] == 0) and np.all(np.isneginf(m[np.triu_indices(4, 1)]))
    out = model(oar.randn([2, 6, 8]), tgt, tgt_mask=mask)
    assert out.shape == [2, 4, 8]
    out.sum().backward()
    assert model.encoder.layers[0].linear1.weight.grad is not None


def test_decoder_incremental_cache_matches_causal_forward():
    oar.seed(6)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, normalize_before=True), 2).eval()
    tgt = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    mem = oar.to_tensor(RNG.standard_normal((2, 5, 8)).astype(np.float32))
    causal = nn.Transformer.generate_square_subsequent_mask(None, 3)
    full = dec(oar.to_tensor(tgt), mem, tgt_mask=causal).numpy()
    cache = dec.gen_cache(mem)
    assert len(cache) == 2 and isinstance(cache[0][1], nn.MultiHeadAttention.StaticCache)
    for t in range(3):
        out, cache = dec(oar.to_tensor(tgt[:, t:t + 1]), mem, cache=cache)
        check(out, full[:, t:t + 1], rtol=1e-4, atol=1e-4)


def test_dropout_is_active_only_in_training():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = oar.randn([2, 3, 8])
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
    layer.train()
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())


def test_errors():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="MultiHeadAttention.*query"):
        nn.MultiHeadAttention(8, 2)(oar.zeros([2, 3, 6]))
    with pytest.raises(ValueError, match="MultiHeadAttention.*key"):
        nn.MultiHeadAttention(8, 2, kdim=4)(oar.zeros([2, 3, 8]), oar.zeros([2, 3, 8]), oar.zeros([2, 3, 8]))
    with pytest.raises(ValueError, match="TransformerEncoderLayer: unknown activation"):
        nn.TransformerEncoderLayer(8, 2, 16, activation="nope")
    with pytest.raises(ValueError, match="TransformerEncoderLayer: d_model"):
        nn.TransformerEncoderLayer(0, 2, 16)
    with pytest.raises(ValueError, match="weight_attr"):
        nn.Transformer(8, 2, 1, 1, 16, weight_attr=[None] * 4)
