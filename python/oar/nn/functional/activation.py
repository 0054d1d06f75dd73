"""Activations (paddle.nn.functional names, arguments and defaults).

gelu, silu, leaky_relu, elu, softplus, hardswish and hardsigmoid are fused kernels (each with a fused
gradient op); the rest are composites of elementwise ops, so autograd comes for free.
"""
from ... import _C

__all__ = [
    "relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "silu", "swish", "mish", "leaky_relu",
    "elu", "selu", "celu", "softplus", "softsign", "softshrink", "hardshrink", "hardtanh", "hardsigmoid",
    "hardswish", "tanhshrink", "thresholded_relu", "log_sigmoid", "prelu", "rrelu", "maxout", "glu",
    "gumbel_softmax", "relu_", "elu_", "leaky_relu_", "softmax_",
]

_relu = _C.Op("relu")
_sigmoid = _C.Op("sigmoid")
_tanh = _C.Op("tanh")
_softmax = _C.Op("softmax", "axis")
_log_softmax = _C.Op("log_softmax", "axis")
_cast = _C.Op("cast", "dtype")
_exp = _C.Op("exp")
_expm1 = _C.Op("expm1")
_abs = _C.Op("abs")
_max = _C.Op("max", "axis", "keepdim")
_log = _C.Op("log")
_gelu = _C.Op("gelu", "approximate")
_silu = _C.Op("silu")
_leaky_relu = _C.Op("leaky_relu", "negative_slope")
_elu = _C.Op("elu", "alpha")
_softplus = _C.Op("softplus", "beta", "threshold")
_hardswish = _C.Op("hardswish")
_hardsigmoid = _C.Op("hardsigmoid", "slope", "offset")


def _mask(cond, like):
    """A bool tensor as 0/1 in like's dtype (no gradient flows through it)."""
    return _cast(cond, like.dtype)


def relu(x, name=None):
    """max(x, 0), elementwise."""
    return _relu(x)


def sigmoid(x, name=None):
    return _sigmoid(x)


def tanh(x, name=None):
    return _tanh(x)


def softmax(x, axis=-1, dtype=None, name=None):
    """exp(x) / sum(exp(x)) along `axis`; `dtype` casts x first."""
    if dtype is not None:
        x = _cast(x, dtype)
    return _softmax(x, axis)


def log_softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = _cast(x, dtype)
    return _log_softmax(x, axis)


def gelu(x, approximate=False, name=None):
    """x * Phi(x); approximate=True uses the tanh form. Fused kernel."""
    return _gelu(x, 1 if approximate else 0)


def silu(x, name=None):
    """x * sigmoid(x). Fused kernel."""
    return _silu(x)


def swish(x, name=None):
    """x * sigmoid(x) (Paddle's swish has beta = 1)."""
    return _silu(x)


def leaky_relu(x, negative_slope=0.01, name=None):
    """x if x > 0 else negative_slope * x. Fused kernel."""
    return _leaky_relu(x, float(negative_slope))


def elu(x, alpha=1.0, name=None):
    """x if x > 0 else alpha * (exp(x) - 1). Fused kernel."""
    return _elu(x, float(alpha))


def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
    """scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    if scale <= 1.0:
        raise ValueError("selu: scale must be greater than 1.0, got {}".format(scale))
    if alpha < 0:
        raise ValueError("selu: alpha must be no less than zero, got {}".format(alpha))
    return _elu(x, float(alpha)) * float(scale)


def celu(x, alpha=1.0, name=None):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ZeroDivisionError("celu: alpha cannot be 0")
    pos = _relu(x)
    neg = _expm1(x / float(alpha)) * float(alpha)
    return pos + neg * _mask(x <= 0, x)


def softplus(x, beta=1, threshold=20, name=None):
    """log(1 + exp(beta * x)) / beta; x where beta * x > threshold. Fused kernel."""
    return _softplus(x, float(beta), float(threshold))


def mish(x, name=None):
    """x * tanh(softplus(x))."""
    return x * _tanh(_softplus(x, 1.0, 20.0))


def softsign(x, name=None):
    """x / (1 + |x|)."""
    return x / (_abs(x) + 1.0)


def softshrink(x, threshold=0.5, name=None):
    """x - t where x > t, x + t where x < -t, 0 elsewhere."""
    if threshold < 0:
        raise ValueError("softshrink: threshold must be no less than zero, got {}".format(threshold))
    t = float(threshold)
    return (x - t) * _mask(x > t, x) + (x + t) * _mask(x < -t, x)


def hardshrink(x, threshold=0.5, name=None):
    """x where |x| > threshold, 0 elsewhere."""
    return x * _mask(_abs(x) > float(threshold), x)


def hardtanh(x, min=-1.0, max=1.0, name=None):
    """x clipped to [min, max]: one clip kernel; the gradient passes where min < x < max (as Paddle)."""
    from ...tensor.math import clip
    lo, hi = float(min), float(max)
    # Paddle computes min(max(x, min), max): with min > max that is max everywhere, with a zero gradient
    # (clip itself refuses min > max, as Paddle's does)
    return clip(x, hi if lo > hi else lo, hi)


def relu6(x, name=None):
    """min(max(x, 0), 6)."""
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    """clip(slope * x + offset, 0, 1). Fused kernel."""
    return _hardsigmoid(x, float(slope), float(offset))


def hardswish(x, name=None):
    """x * relu6(x + 3) / 6. Fused kernel."""
    return _hardswish(x)


def tanhshrink(x, name=None):
    """x - tanh(x)."""
    return x - _tanh(x)


def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    """x where x > threshold, `value` elsewhere."""
    m = _mask(x > float(threshold), x)
    out = x * m
    if value != 0.0:
        out = out + (1.0 - m) * float(value)
    return out


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), computed stably."""
    return -_softplus(-x, 1.0, float("inf"))


def prelu(x, weight, data_format="NCHW", name=None):
    """max(0, x) + weight * min(0, x); weight has 1 element or one per channel."""
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError("prelu: data_format must be one of NC, NCL, NCHW, NCDHW, NLC, NHWC, NDHWC, got "
                         + str(data_format))
    n = weight.size
    if n != 1:
        if x.ndim < 2:
            raise ValueError("prelu: x must have at least 2 dimensions for a per-channel weight, got shape {}"
                             .format(x.shape))
        ch_axis = 1 if data_format[1] == "C" else x.ndim - 1
        if x.shape[ch_axis] != n:
            raise ValueError("prelu: weight has {} elements but x has {} channels".format(n, x.shape[ch_axis]))
        shape = [1] * x.ndim
        shape[ch_axis] = n
        w = weight.reshape(shape)
    else:
        w = weight.reshape([])
    return _relu(x) + w * (x - _relu(x))


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None):
    """Randomized leaky relu: negative inputs scaled by a slope drawn from U[lower, upper] in training,
    by (lower + upper) / 2 in evaluation."""
    if not (0 <= lower <= upper <= 1):
        raise ValueError("rrelu: expected 0 <= lower <= upper <= 1, got lower={} upper={}".format(lower, upper))
    if not training:
        return _leaky_relu(x, (lower + upper) / 2.0)
    slope = _C._uniform(list(x.shape), float(lower), float(upper), x.dtype, 0, x.place) if upper > lower else None
    neg = x - _relu(x)
    if slope is None:
        return _relu(x) + neg * float(lower)
    return _relu(x) + neg * slope


def maxout(x, groups, axis=1, name=None):
    """Max over `groups` consecutive channels: C channels become C / groups."""
    nd = x.ndim
    if nd < 2:
        raise ValueError("maxout: x must have at least 2 dimensions, got shape {}".format(x.shape))
    if axis not in (1, -1, 3) or (axis == 3 and nd != 4):
        raise ValueError("maxout: axis must be 1 or -1 (or 3 for 4-D input), got {}".format(axis))
    ax = axis % nd
    c = x.shape[ax]
    if groups <= 1:  # Paddle refuses groups = 1 too
        raise ValueError("maxout: groups must be larger than 1, got {}".format(groups))
    if c % groups != 0:
        raise ValueError("maxout: the channel count {} is not divisible by groups {}".format(c, groups))
    shape = list(x.shape)
    new = shape[:ax] + [c // groups, groups] + shape[ax + 1:]
    return _max(x.reshape(new), [ax + 1], False)


def glu(x, axis=-1, name=None):
    """a * sigmoid(b) where a, b are the two halves of x along `axis`."""
    nd = x.ndim
    if not -nd <= axis < nd:
        raise IndexError("glu: axis {} is out of range for a tensor of rank {}".format(axis, nd))
    ax = axis % nd
    n = x.shape[ax]
    if n % 2 != 0:
        raise ValueError("glu: the size of axis {} ({}) must be even".format(axis, n))
    idx_a = [slice(None)] * nd
    idx_b = [slice(None)] * nd
    idx_a[ax] = slice(0, n // 2)
    idx_b[ax] = slice(n // 2, n)
    return x[tuple(idx_a)] * _sigmoid(x[tuple(idx_b)])


def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None):
    """softmax((x + g) / temperature) with Gumbel noise g; hard=True returns one-hot of the argmax with the
    soft gradient (straight-through)."""
    u = _C._uniform(list(x.shape), 1e-10, 1.0, x.dtype, 0, x.place)
    g = -_log(-_log(u))
    y = _softmax((x + g) / float(temperature), axis)
    if not hard:
        return y
    from ...tensor.search import argmax
    idx = argmax(y, axis=axis, keepdim=True)
    nd = x.ndim
    ax = axis % nd
    shape = [1] * nd
    shape[ax] = x.shape[ax]
    from ...tensor.creation import arange
    rng = arange(0, x.shape[ax], dtype="int64").reshape(shape)
    if str(x.place) != str(rng.place):
        rng = rng._copy_to(x.place, True)
    onehot = _mask(idx == rng, y)
    return onehot - y.detach() + y


# In-place variants: oar has no autograd through in-place writes yet, so these compute out of place and
# write the result back into x with the assign op.
_assign = _C.Op("assign")


def _inplace(x, y):
    _assign(x, y)
    return x


def relu_(x, name=None):
    return _inplace(x, _relu(x))


def elu_(x, alpha=1.0, name=None):
    return _inplace(x, elu(x, alpha))


def leaky_relu_(x, negative_slope=0.01, name=None):
    return _inplace(x, leaky_relu(x, negative_slope))


def softmax_(x, axis=-1, dtype=None, name=None):
    return _inplace(x, softmax(x, axis, dtype))
