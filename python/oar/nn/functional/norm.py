"""Normalisation: batch_norm, layer_norm, group_norm, instance_norm, local_response_norm, normalize.

layer_norm and batch_norm are kernels (statistics saved, a fused backward op); group_norm and
instance_norm reuse layer_norm on a reshaped view; the rest are composites.
"""
from ... import _C
from ...static import program as _static
from ...autograd import no_grad

__all__ = ["layer_norm", "batch_norm", "instance_norm", "group_norm", "local_response_norm", "normalize"]

_layer_norm = _C.Op("layer_norm", "begin_norm_axis", "epsilon")
_fill = _C.Op("fill", "shape", "value", "dtype")
_assign = _C.Op("assign")
_mean = _C.Op("mean", "axis", "keepdim")
_sum = _C.Op("sum", "axis", "keepdim")
_sqrt = _C.Op("sqrt")
_abs = _C.Op("abs")
_pow = _C.Op("pow")
_maximum = _C.Op("maximum")
_concat = _C.Op("concat", "axis")


def _const(shape, value, like):
    return _fill(list(shape), float(value), like.dtype, place=like.place)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalises over the trailing dims `normalized_shape`, then scales by weight and shifts by bias."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    normalized_shape = list(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or k > x.ndim or list(x.shape[x.ndim - k:]) != normalized_shape:
        raise ValueError("layer_norm: normalized_shape {} does not match the trailing dims of x.shape {}"
                         .format(normalized_shape, x.shape))
    if weight is None:
        weight = _const(normalized_shape, 1.0, x)
    if bias is None:
        bias = _const(normalized_shape, 0.0, x)
    return _layer_norm(x, weight, bias, x.ndim - k, float(epsilon))[0]


# the common call in C (python/src/fast_api.cc, decision 134); the function above runs the rest
from ..._fast import fast as _fast  # noqa: E402

layer_norm = _fast("layer_norm", layer_norm, "layer_norm", ["begin_norm_axis", "epsilon"])


def _channel_axis(op, x, data_format):
    if data_format in ("NC", "NCL", "NCHW", "NCDHW"):
        return 1
    if data_format in ("NLC", "NHWC", "NDHWC"):
        return x.ndim - 1
    raise ValueError("{}: data_format must be one of NC, NCL, NCHW, NCDHW, NLC, NHWC, NDHWC; got {}"
                     .format(op, data_format))


def _per_channel(t, x, axis):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return t.reshape(shape)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9,
               epsilon=1e-05, data_format="NCHW", use_global_stats=None, name=None):
    """Batch normalisation over every axis but the channel one (the batch_norm op). In training (unless
    use_global_stats), batch statistics normalise x and the running statistics are updated in place as
    Paddle does: running = momentum * running + (1 - momentum) * batch (with the biased batch variance).
    For float16/bfloat16 x the parameters and statistics are float32 (others are cast)."""
    if x.ndim < 2:
        raise ValueError("batch_norm: x must have at least 2 dimensions, got shape {}".format(x.shape))
    c_axis = _channel_axis("batch_norm", x, data_format)
    c = x.shape[c_axis]
    for nm, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                  ("bias", bias)):
        if t is not None and _prod(t.shape) != c:
            raise ValueError("batch_norm: {}.shape {} does not match the {} channels of x".format(nm, t.shape, c))
    if use_global_stats is None:
        use_global_stats = not training
    if not use_global_stats:
        return _static._train_and_test(
            lambda: _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, epsilon, c_axis,
                                False),
            lambda: _batch_norm(x, running_mean, running_var, weight, bias, False, momentum, epsilon, c_axis,
                                True))
    return _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, epsilon, c_axis, True)


_batch_norm_op = _C.Op("batch_norm", "channel_axis", "epsilon", "momentum", "use_global_stats")


def _stat_dtype(x):
    """The dtype of batch_norm's per-channel tensors: float32 for 16-bit x, else x's."""
    return _C.float32 if x.dtype in (_C.float16, _C.bfloat16) else x.dtype


def _as_channels(t, c, dtype):
    """A [c] tensor of `dtype` from a per-channel parameter or statistic (any shape of c elements)."""
    if list(t.shape) != [c]:
        t = t.reshape([c])
    return t if t.dtype == dtype else t.astype(dtype)


def _batch_norm(x, running_mean, running_var, weight, bias, training, momentum, epsilon, c_axis,
                use_global_stats):
    # The batch_norm op (one kernel forward, one backward: batch_norm_grad). In training its mean_out /
    # var_out are the updated running statistics, assigned back without gradient.
    c = x.shape[c_axis]
    sd = _stat_dtype(x)
    w = _fill([c], 1.0, sd, place=x.place) if weight is None else _as_channels(weight, c, sd)
    b = _fill([c], 0.0, sd, place=x.place) if bias is None else _as_channels(bias, c, sd)
    rm = _as_channels(running_mean, c, sd)
    rv = _as_channels(running_var, c, sd)
    out, mean_out, var_out = _batch_norm_op(x, w, b, rm, rv, c_axis, float(epsilon), float(momentum),
                                            1 if use_global_stats else 0)[:3]
    if training and not use_global_stats:
        with no_grad():
            for dst, src in ((running_mean, mean_out), (running_var, var_out)):
                if list(src.shape) != list(dst.shape):
                    src = src.reshape(dst.shape)
                _assign(dst, src if src.dtype == dst.dtype else src.astype(dst.dtype))
    return out


def _to_channels_first(x, c_axis):
    if c_axis == 1:
        return x, None
    perm = [0, x.ndim - 1] + list(range(1, x.ndim - 1))
    back = [0] + list(range(2, x.ndim)) + [1]
    return x.transpose(perm), back


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Normalises each (sample, channel) over its spatial dims (layer_norm kernel on [N*C, spatial])."""
    if x.ndim < 3:
        raise ValueError("instance_norm: x must have at least 3 dimensions, got shape {}".format(x.shape))
    c_axis = _channel_axis("instance_norm", x, data_format)
    xc, back = _to_channels_first(x, c_axis)
    n, c = xc.shape[0], xc.shape[1]
    flat = xc.reshape([n * c, -1])
    y = _layer_norm(flat, _const([flat.shape[1]], 1.0, x), _const([flat.shape[1]], 0.0, x), 1, float(eps))[0]
    y = y.reshape(xc.shape)
    if weight is not None:
        y = y * _per_channel(weight, y, 1)
    if bias is not None:
        y = y + _per_channel(bias, y, 1)
    return y if back is None else y.transpose(back)


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW", name=None):
    """Normalises each sample's channel groups (layer_norm kernel on [N*G, C/G*spatial])."""
    if x.ndim < 2:
        raise ValueError("group_norm: x must have at least 2 dimensions, got shape {}".format(x.shape))
    c_axis = _channel_axis("group_norm", x, data_format)
    xc, back = _to_channels_first(x, c_axis)
    n, c = xc.shape[0], xc.shape[1]
    if num_groups <= 0 or c % num_groups != 0:
        raise ValueError("group_norm: the channel count {} is not divisible by num_groups {}".format(c, num_groups))
    flat = xc.reshape([n * num_groups, -1])
    y = _layer_norm(flat, _const([flat.shape[1]], 1.0, x), _const([flat.shape[1]], 0.0, x), 1,
                    float(epsilon))[0]
    y = y.reshape(xc.shape)
    if weight is not None:
        y = y * _per_channel(weight, y, 1)
    if bias is not None:
        y = y + _per_channel(bias, y, 1)
    return y if back is None else y.transpose(back)


def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""
    if x.ndim < 3:
        raise ValueError("local_response_norm: x must have at least 3 dimensions, got shape {}".format(x.shape))
    if size <= 0:
        raise ValueError("local_response_norm: size must be positive, got {}".format(size))
    c_axis = _channel_axis("local_response_norm", x, data_format)
    c = x.shape[c_axis]
    sq = x * x
    before, after = size // 2, (size - 1) // 2
    zshape = list(x.shape)
    parts = []
    if before:
        zshape[c_axis] = before
        parts.append(_const(zshape, 0.0, x))
    parts.append(sq)
    if after:
        zshape[c_axis] = after
        parts.append(_const(zshape, 0.0, x))
    padded = _concat(parts, c_axis) if len(parts) > 1 else sq
    acc = None
    for s in range(size):
        idx = [slice(None)] * x.ndim
        idx[c_axis] = slice(s, s + c)
        part = padded[tuple(idx)]
        acc = part if acc is None else acc + part
    div = _pow(acc * (float(alpha) / size) + float(k), _const([], float(beta), x))
    return x / div


_p_norm = _C.Op("p_norm", "axis", "keepdim", "porder")


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """x / max(||x||_p along axis, epsilon)."""
    nd = x.ndim
    if not -max(nd, 1) <= axis < max(nd, 1):
        raise IndexError("normalize: axis {} is out of range for a tensor of rank {}".format(axis, nd))
    if 0 < p < float("inf"):  # the p_norm op: scaled (no overflow), a 0 gradient at a zero vector
        n = _p_norm(x, [axis], True, float(p))
    elif p == 1:
        n = _sum(_abs(x), [axis], True)
    else:
        n = _pow(_sum(_pow(_abs(x), _const([], float(p), x)), [axis], True), _const([], 1.0 / p, x))
    return x / _maximum(n, _const([], float(epsilon), x))
