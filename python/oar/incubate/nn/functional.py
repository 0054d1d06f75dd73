"""paddle.incubate.nn.functional: Paddle's fused transformer pieces. oar has no fused kernels for these:
each is a composition of oar's ops (matmul, layer_norm, softmax, dropout, ...) that computes what
Paddle's fused kernel computes, in the same order (docs/incubate.md lists them). The quantised
variants of fused_layer_norm/fused_rms_norm (quant_scale > 0) are not supported."""
import math

from ... import _C
from ...nn import functional as F

__all__ = ["fused_matmul_bias", "fused_linear", "fused_linear_activation", "fused_dropout_add",
           "fused_bias_dropout_residual_layer_norm", "fused_feedforward", "fused_multi_head_attention",
           "fused_layer_norm", "fused_rms_norm"]

_matmul = _C.Op("matmul", "transpose_x", "transpose_y")


def _tensor(fn, name, t, ndim_min=1):
    if not isinstance(t, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, name, type(t).__name__))
    if t.ndim < ndim_min:
        raise ValueError("{}: {} must have at least {} dims, got shape {}".format(fn, name, ndim_min, t.shape))


def _mode(fn, mode):
    if mode not in ("upscale_in_train", "downscale_in_infer"):
        raise ValueError("{}: mode must be 'upscale_in_train' or 'downscale_in_infer', got {!r}".format(fn, mode))


def _rate(fn, name, p):
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError("{}: {} must be a float in [0, 1], got {!r}".format(fn, name, p))
    return float(p)


def _ln_last(fn, x, scale, bias, epsilon):
    """layer_norm over the last dim (scale/bias of that size or None) as Paddle's fused kernels do."""
    d = x.shape[-1]
    for name, t in (("scale", scale), ("bias", bias)):
        if t is not None and (not isinstance(t, _C.Tensor) or t.shape != [d]):
            raise ValueError("{}: layer norm {} must be a 1-D tensor of size {}, got {}".format(
                fn, name, d, getattr(t, "shape", t)))
    return F.layer_norm(x, [d], scale, bias, epsilon)


def fused_matmul_bias(x, y, bias=None, transpose_x=False, transpose_y=False, name=None):
    """matmul(x, y) (optionally transposed) + bias; Paddle's cublasLt epilogue as one matmul and an add."""
    fn = "fused_matmul_bias"
    _tensor(fn, "x", x)
    _tensor(fn, "y", y)
    out = _matmul(x, y, bool(transpose_x), bool(transpose_y))
    if bias is not None:
        _tensor(fn, "bias", bias)
        out = out + bias
    return out


def fused_linear(x, weight, bias=None, transpose_weight=False, name=None):
    """x @ weight + bias (weight [in, out], or [out, in] with transpose_weight)."""
    return fused_matmul_bias(x, weight, bias, False, transpose_weight)


def fused_linear_activation(x, y, bias, trans_x=False, trans_y=False, activation=None):
    """activation(matmul(x, y) + bias); activation None/'none', 'relu' or 'gelu' (exact erf form)."""
    if activation not in (None, "none", "relu", "gelu"):
        raise ValueError("fused_linear_activation: activation must be None, 'none', 'relu' or 'gelu', got {!r}".format(
            activation))
    out = fused_matmul_bias(x, y, bias, trans_x, trans_y)
    if activation == "relu":
        return F.relu(out)
    if activation == "gelu":
        return F.gelu(out)
    return out


def fused_dropout_add(x, y, p=0.5, training=True, mode="upscale_in_train", name=None):
    """dropout(x, p) + y."""
    fn = "fused_dropout_add"
    _tensor(fn, "x", x)
    _tensor(fn, "y", y)
    _mode(fn, mode)
    return F.dropout(x, _rate(fn, "p", p), training=training, mode=mode) + y


def fused_bias_dropout_residual_layer_norm(x, residual, bias=None, ln_scale=None, ln_bias=None, dropout_rate=0.5,
                                           ln_epsilon=1e-5, training=True, mode="upscale_in_train", name=None):
    """layer_norm(residual + dropout(x + bias)) over the last dim."""
    fn = "fused_bias_dropout_residual_layer_norm"
    _tensor(fn, "x", x)
    _tensor(fn, "residual", residual)
    if x.shape != residual.shape:
        raise ValueError("{}: x and residual must have the same shape, got {} and {}".format(
            fn, x.shape, residual.shape))
    _mode(fn, mode)
    rate = _rate(fn, "dropout_rate", dropout_rate)
    h = x + bias if bias is not None else x
    return _ln_last(fn, residual + F.dropout(h, rate, training=training, mode=mode), ln_scale, ln_bias, ln_epsilon)


def _activation(fn, name):
    if name not in ("relu", "gelu"):
        raise ValueError("{}: activation must be 'relu' or 'gelu', got {!r}".format(fn, name))
    return F.relu if name == "relu" else F.gelu


def fused_feedforward(x, linear1_weight, linear2_weight, linear1_bias=None, linear2_bias=None, ln1_scale=None,
                      ln1_bias=None, ln2_scale=None, ln2_bias=None, dropout1_rate=0.5, dropout2_rate=0.5,
                      activation="relu", ln1_epsilon=1e-5, ln2_epsilon=1e-5, pre_layer_norm=False, training=True,
                      mode="upscale_in_train", ring_id=-1, add_residual=True, name=None):
    """The transformer feed-forward block:
    pre_layer_norm: out = x + dropout2(linear2(dropout1(act(linear1(layer_norm1(x))))))
    otherwise:      out = layer_norm2(x + dropout2(linear2(dropout1(act(linear1(x))))))
    (the residual only with add_residual). ring_id (tensor-parallel all-reduce) must be -1."""
    fn = "fused_feedforward"
    _tensor(fn, "x", x)
    _tensor(fn, "linear1_weight", linear1_weight, 2)
    _tensor(fn, "linear2_weight", linear2_weight, 2)
    _mode(fn, mode)
    if ring_id != -1:
        raise NotImplementedError("{}: ring_id {} (tensor-parallel) is not supported; use -1".format(fn, ring_id))
    act = _activation(fn, activation)
    r1, r2 = _rate(fn, "dropout1_rate", dropout1_rate), _rate(fn, "dropout2_rate", dropout2_rate)
    h = _ln_last(fn, x, ln1_scale, ln1_bias, ln1_epsilon) if pre_layer_norm else x
    h = F.dropout(act(fused_linear(h, linear1_weight, linear1_bias)), r1, training=training, mode=mode)
    h = F.dropout(fused_linear(h, linear2_weight, linear2_bias), r2, training=training, mode=mode)
    if add_residual:
        h = x + h
    return h if pre_layer_norm else _ln_last(fn, h, ln2_scale, ln2_bias, ln2_epsilon)


def fused_multi_head_attention(x, qkv_weight, linear_weight, pre_layer_norm=False, pre_ln_scale=None,
                               pre_ln_bias=None, ln_scale=None, ln_bias=None, pre_ln_epsilon=1e-5, qkv_bias=None,
                               linear_bias=None, cache_kv=None, attn_mask=None, dropout_rate=0.5,
                               attn_dropout_rate=0.5, ln_epsilon=1e-5, training=True, mode="upscale_in_train",
                               ring_id=-1, add_residual=True, num_heads=-1, transpose_qkv_wb=False, name=None):
    """Paddle's fused attention block on x [batch, seq, embed]:
    h = layer_norm(x) if pre_layer_norm else x; q, k, v = h @ qkv_weight (+ qkv_bias), split by head;
    k, v gain cache_kv [2, batch, heads, cache_len, head_dim] in front; attention =
    dropout(softmax(q k^T / sqrt(head_dim) + attn_mask)) v; out = dropout(attention @ linear_weight +
    linear_bias); out = x + out with add_residual; layer_norm(out) unless pre_layer_norm.
    qkv_weight is [3, num_heads, head_dim, embed] (qkv_bias [3, num_heads, head_dim]), or with
    transpose_qkv_wb [embed, 3 * embed] (qkv_bias [3 * embed]) and num_heads given.
    Returns out, or (out, cache_kv_out) when cache_kv is given."""
    fn = "fused_multi_head_attention"
    _tensor(fn, "x", x, 3)
    if x.ndim != 3:
        raise ValueError("{}: x must be [batch, seq_len, embed_dim], got shape {}".format(fn, x.shape))
    _tensor(fn, "qkv_weight", qkv_weight, 2)
    _tensor(fn, "linear_weight", linear_weight, 2)
    _mode(fn, mode)
    if ring_id != -1:
        raise NotImplementedError("{}: ring_id {} (tensor-parallel) is not supported; use -1".format(fn, ring_id))
    b, s, e = x.shape
    if transpose_qkv_wb:
        if num_heads is None or num_heads <= 0 or e % num_heads:
            raise ValueError("{}: with transpose_qkv_wb, num_heads must be a positive divisor of embed_dim {}, "
                             "got {!r}".format(fn, e, num_heads))
        if qkv_weight.shape != [e, 3 * e]:
            raise ValueError("{}: qkv_weight must be [{}, {}] with transpose_qkv_wb, got {}".format(
                fn, e, 3 * e, qkv_weight.shape))
        heads, head_dim = int(num_heads), e // int(num_heads)
        w = qkv_weight  # [e, 3e]: h @ w
        bias = qkv_bias
    else:
        if qkv_weight.ndim != 4 or qkv_weight.shape[0] != 3 or qkv_weight.shape[3] != e:
            raise ValueError("{}: qkv_weight must be [3, num_heads, head_dim, {}], got {}".format(
                fn, e, qkv_weight.shape))
        heads, head_dim = qkv_weight.shape[1], qkv_weight.shape[2]
        w = qkv_weight.reshape([3 * heads * head_dim, e])  # h @ w^T
        bias = None if qkv_bias is None else qkv_bias.reshape([3 * heads * head_dim])
    r_out, r_attn = _rate(fn, "dropout_rate", dropout_rate), _rate(fn, "attn_dropout_rate", attn_dropout_rate)
    h = _ln_last(fn, x, pre_ln_scale, pre_ln_bias, pre_ln_epsilon) if pre_layer_norm else x
    qkv = fused_matmul_bias(h, w, bias, False, not transpose_qkv_wb)  # [b, s, 3 * heads * head_dim]
    qkv = qkv.reshape([b, s, 3, heads, head_dim]).transpose([2, 0, 3, 1, 4])  # [3, b, heads, s, head_dim]
    q, k, v = qkv[0], qkv[1], qkv[2]
    cache_out = None
    if cache_kv is not None:
        _tensor(fn, "cache_kv", cache_kv, 5)
        if cache_kv.ndim != 5 or cache_kv.shape[0] != 2 or cache_kv.shape[1] != b or cache_kv.shape[2] != heads \
                or cache_kv.shape[4] != head_dim:
            raise ValueError("{}: cache_kv must be [2, {}, {}, cache_len, {}], got {}".format(
                fn, b, heads, head_dim, cache_kv.shape))
        from ...tensor.manipulation import concat, stack
        k = concat([cache_kv[0], k], axis=2)
        v = concat([cache_kv[1], v], axis=2)
        cache_out = stack([k, v])
    scores = _matmul(q * (1.0 / math.sqrt(head_dim)), k, False, True)  # [b, heads, s, s_kv]
    if attn_mask is not None:
        scores = scores + attn_mask
    probs = F.dropout(F.softmax(scores, axis=-1), r_attn, training=training, mode=mode)
    ctx = _matmul(probs, v, False, False).transpose([0, 2, 1, 3]).reshape([b, s, heads * head_dim])
    out = F.dropout(fused_linear(ctx, linear_weight, linear_bias), r_out, training=training, mode=mode)
    if add_residual:
        out = x + out
    if not pre_layer_norm:
        out = _ln_last(fn, out, ln_scale, ln_bias, ln_epsilon)
    return (out, cache_out) if cache_kv is not None else out


def _norm_input(fn, x, bias, residual, residual_alpha, quant_scale):
    _tensor(fn, "x", x)
    if quant_scale > 0:
        raise NotImplementedError("{}: quantised output (quant_scale {}) is not supported".format(fn, quant_scale))
    if bias is not None:
        x = x + bias
    if residual is not None:
        _tensor(fn, "residual", residual)
        x = x + residual * residual_alpha if residual_alpha != 1.0 else x + residual
    return x


def _norm_axis(fn, x, begin_norm_axis):
    if isinstance(begin_norm_axis, bool) or not isinstance(begin_norm_axis, int) \
            or not -x.ndim <= begin_norm_axis < x.ndim:
        raise ValueError("{}: begin_norm_axis must be an int in [{}, {}), got {!r}".format(
            fn, -x.ndim, x.ndim, begin_norm_axis))
    return begin_norm_axis % x.ndim


def _norm_param(fn, name, t, size):
    if t is not None and (not isinstance(t, _C.Tensor) or t.numel() != size):
        raise ValueError("{}: {} must be a tensor of {} elements, got {}".format(
            fn, name, size, getattr(t, "shape", t)))


def fused_layer_norm(x, norm_weight, norm_bias, epsilon, residual_alpha=1.0, begin_norm_axis=1, bias=None,
                     residual=None, quant_scale=-1, quant_round_type=0, quant_max_bound=0, quant_min_bound=0):
    """h = x + bias + residual_alpha * residual; out = layer_norm(h) over dims >= begin_norm_axis with
    norm_weight/norm_bias (their product's size); both None: out = h. Returns out, or (out, h) when
    residual is given."""
    fn = "fused_layer_norm"
    h = _norm_input(fn, x, bias, residual, residual_alpha, quant_scale)
    axis = _norm_axis(fn, h, begin_norm_axis)
    if norm_weight is None and norm_bias is None:
        out = h
    else:
        size = int(math.prod(h.shape[axis:]))
        _norm_param(fn, "norm_weight", norm_weight, size)
        _norm_param(fn, "norm_bias", norm_bias, size)
        flat = h.reshape(h.shape[:axis] + [size])
        wt = norm_weight.reshape([size]) if norm_weight is not None else None
        bs = norm_bias.reshape([size]) if norm_bias is not None else None
        out = F.layer_norm(flat, [size], wt, bs, float(epsilon)).reshape(h.shape)
    return (out, h) if residual is not None else out


def fused_rms_norm(x, norm_weight, norm_bias, epsilon, begin_norm_axis, bias=None, residual=None, quant_scale=-1,
                   quant_round_type=0, quant_max_bound=0, quant_min_bound=0):
    """h = x + bias + residual; out = h / sqrt(mean(h^2 over dims >= begin_norm_axis) + epsilon) *
    norm_weight + norm_bias (statistics in float32 for float16/bfloat16 input). Returns out, or (out, h)
    when residual is given."""
    fn = "fused_rms_norm"
    h = _norm_input(fn, x, bias, residual, 1.0, quant_scale)
    axis = _norm_axis(fn, h, begin_norm_axis)
    size = int(math.prod(h.shape[axis:]))
    _norm_param(fn, "norm_weight", norm_weight, size)
    _norm_param(fn, "norm_bias", norm_bias, size)
    low = h.dtype in (_C.float16, _C.bfloat16)
    hf = h.astype("float32") if low else h
    flat = hf.reshape(h.shape[:axis] + [size])
    out = flat * (flat * flat).mean(axis=-1, keepdim=True).__add__(float(epsilon)).rsqrt()
    if norm_weight is not None:
        out = out * norm_weight.reshape([size]).astype(out.dtype)
    if norm_bias is not None:
        out = out + norm_bias.reshape([size]).astype(out.dtype)
    out = out.reshape(h.shape)
    if low:
        out = out.astype(h.dtype)
    return (out, h) if residual is not None else out
