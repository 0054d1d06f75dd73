"""Max/average pooling and adaptive pooling.

All of them run the N-d core ops "max_pool" (values and an int32 mask of flat in-plane argmax
indices) and "avg_pool"; adaptive pooling is the same ops with attribute adaptive=1 (kernel_size then
holds the output size). Channels-last layouts are transposed around the op.
"""
import numbers

import numpy as np

from ... import _C
from .conv import _channel_last, _explicit_padding, _ntuple, _to_first, _to_last

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_max_pool = _C.Op("max_pool")
_avg_pool = _C.Op("avg_pool")
_pad = _C.Op("pad", "pads", "mode", "value")


def _pool_args(nd, op, x, kernel_size, stride, padding, data_format):
    if x.ndim != nd + 2:
        raise ValueError("{}: x must be {}-D, got shape {}".format(op, nd + 2, x.shape))
    last = _channel_last(data_format, nd, op)
    ks = _ntuple(kernel_size, nd, "kernel_size", op)
    strides = ks if stride is None else _ntuple(stride, nd, "stride", op)
    if any(k < 1 for k in ks) or any(s < 1 for s in strides):
        raise ValueError("{}: kernel_size {} and stride {} must be positive".format(op, ks, strides))
    if last:
        x = _to_first(x, nd)
    pads = _explicit_padding(padding, nd, last, op)
    if pads is None:  # 'SAME': out = ceil(in / stride)
        pads = []
        for n, k, s in zip(x.shape[2:], ks, strides):
            total = max(((n + s - 1) // s - 1) * s + k - n, 0)
            pads += [total // 2, total - total // 2]
    return x, last, ks, strides, pads


def _max_pool_nd(nd, op, x, kernel_size, stride, padding, return_mask, ceil_mode, data_format):
    x, last, ks, strides, pads = _pool_args(nd, op, x, kernel_size, stride, padding, data_format)
    out, mask = _max_pool(x, kernel_size=ks, strides=strides, paddings=pads, ceil_mode=int(bool(ceil_mode)))
    if last:
        out, mask = _to_last(out, nd), _to_last(mask, nd)
    return (out, mask) if return_mask else out


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    return _max_pool_nd(1, "max_pool1d", x, kernel_size, stride, padding, return_mask, ceil_mode, "NCL")


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    return _max_pool_nd(2, "max_pool2d", x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
               name=None):
    return _max_pool_nd(3, "max_pool3d", x, kernel_size, stride, padding, return_mask, ceil_mode, data_format)


def _avg_pool_nd(nd, op, x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format):
    x, last, ks, strides, pads = _pool_args(nd, op, x, kernel_size, stride, padding, data_format)
    if divisor_override is not None and (not isinstance(divisor_override, numbers.Integral) or divisor_override <= 0):
        raise ValueError("{}: divisor_override must be a positive int, got {!r}".format(op, divisor_override))
    if not exclusive and ceil_mode and not divisor_override:
        # Paddle divides a non-exclusive window by its size clipped to the padded input (the kernel's size
        # except at the extra ceil_mode window): the exclusive count of the explicitly zero-padded input.
        x = _pad(x, [0, 0, 0, 0] + list(pads), 0, 0.0)
        pads, exclusive = [0] * len(pads), True
    out = _avg_pool(x, kernel_size=ks, strides=strides, paddings=pads, ceil_mode=int(bool(ceil_mode)),
                    exclusive=int(bool(exclusive)), divisor=int(divisor_override or 0))
    return _to_last(out, nd) if last else out


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    return _avg_pool_nd(1, "avg_pool1d", x, kernel_size, stride, padding, ceil_mode, exclusive, None, "NCL")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    return _avg_pool_nd(2, "avg_pool2d", x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                        data_format)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    return _avg_pool_nd(3, "avg_pool3d", x, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override,
                        data_format)


def _adaptive_size(nd, op, x, output_size):
    if isinstance(output_size, (_C.Tensor, np.ndarray)):  # Paddle takes a Tensor (its values) too
        if isinstance(output_size, _C.Tensor) and _C._is_symbolic(output_size):
            raise ValueError("{}: output_size must have a value while the program is built; got the program "
                             "variable '{}'".format(op, output_size.name))
        output_size = output_size.numpy() if isinstance(output_size, _C.Tensor) else output_size
        output_size = int(output_size) if output_size.ndim == 0 else output_size.tolist()
    if isinstance(output_size, numbers.Integral):
        size = [int(output_size)] * nd
    elif isinstance(output_size, (list, tuple)) and len(output_size) == nd:
        size = [x.shape[2 + i] if s is None else int(s) for i, s in enumerate(output_size)]
    else:
        raise ValueError("{}: output_size must be an int or a list of {} ints, got {!r}".format(op, nd, output_size))
    if any(s < 1 for s in size):
        raise ValueError("{}: output_size must be positive, got {}".format(op, size))
    return size


def _adaptive_nd(nd, op, x, output_size, data_format, is_max, return_mask=False):
    if x.ndim != nd + 2:
        raise ValueError("{}: x must be {}-D, got shape {}".format(op, nd + 2, x.shape))
    last = _channel_last(data_format, nd, op)
    if last:
        x = _to_first(x, nd)
    if _C._is_symbolic_building():
        from ...static import var_attrs
        if var_attrs.has_var(output_size):  # read when the program runs (decision 96)
            out, mask = _adaptive_var(nd, op, x, output_size, is_max)
            if last:
                out, mask = _to_last(out, nd), (_to_last(mask, nd) if is_max else None)
            return (out, mask) if return_mask else out
    size = _adaptive_size(nd, op, x, output_size)
    if is_max:
        out, mask = _max_pool(x, kernel_size=size, adaptive=1)
        if last:
            out, mask = _to_last(out, nd), _to_last(mask, nd)
        return (out, mask) if return_mask else out
    out = _avg_pool(x, kernel_size=size, adaptive=1)
    return _to_last(out, nd) if last else out


def _adaptive_var(nd, op, x, output_size, is_max):
    """Adaptive pooling whose output_size is (or holds) a program variable: the pooling op's kernel_size
    (the output size) is bound to it; the gradient's attributes, which capture the sentinels, get the
    sizes measured when the op runs."""
    from ...static import var_attrs
    built, var = var_attrs.shape_var(output_size, op, "output_size")
    if len(built) != nd:
        raise ValueError("{}: output_size must have {} values, got {}".format(op, nd, len(built)))
    dims = var_attrs.sentinel(built)
    if is_max:
        out, mask = _max_pool(x, kernel_size=dims, adaptive=1)
        return var_attrs.bind(out, kernel_size=var), mask
    return var_attrs.bind(_avg_pool(x, kernel_size=dims, adaptive=1), kernel_size=var), None


def adaptive_avg_pool1d(x, output_size, name=None):
    return _adaptive_nd(1, "adaptive_avg_pool1d", x, output_size, "NCL", False)


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    return _adaptive_nd(2, "adaptive_avg_pool2d", x, output_size, data_format, False)


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    return _adaptive_nd(3, "adaptive_avg_pool3d", x, output_size, data_format, False)


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    return _adaptive_nd(1, "adaptive_max_pool1d", x, output_size, "NCL", True, return_mask)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    return _adaptive_nd(2, "adaptive_max_pool2d", x, output_size, "NCHW", True, return_mask)


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    return _adaptive_nd(3, "adaptive_max_pool3d", x, output_size, "NCDHW", True, return_mask)


def _max_unpool_nd(nd, op, x, indices, kernel_size, stride, padding, data_format, output_size):
    """Scatters x back to the positions `indices` (max_pool's flat in-plane indices) of a zero map."""
    from ...tensor.manipulation import put_along_axis
    fmt = ("NCL", "NCHW", "NCDHW")[nd - 1]
    if data_format != fmt:
        raise ValueError("{}: data_format must be {!r}, got {!r}".format(op, fmt, data_format))
    if x.ndim != nd + 2:
        raise ValueError("{}: x must be {}-D, got shape {}".format(op, nd + 2, x.shape))
    if list(indices.shape) != list(x.shape):
        raise ValueError("{}: indices.shape {} must equal x.shape {}".format(op, indices.shape, x.shape))
    if indices.dtype not in (_C.int32, _C.int64):
        raise TypeError("{}: indices must be int32 or int64, got {}".format(op, indices.dtype))
    ks = _ntuple(kernel_size, nd, "kernel_size", op)
    st = ks if stride is None else _ntuple(stride, nd, "stride", op)
    pd = _ntuple(padding, nd, "padding", op)
    n, c = x.shape[:2]
    if output_size is None:
        out_sp = [(i - 1) * s - 2 * p + k for i, s, p, k in zip(x.shape[2:], st, pd, ks)]
    else:
        out_sp = [int(v) for v in list(output_size)[-nd:]]
        if len(out_sp) != nd:
            raise ValueError("{}: output_size must list {} spatial sizes, got {!r}".format(op, nd, output_size))
    if any(v <= 0 for v in out_sp):
        raise ValueError("{}: the output size {} must be positive".format(op, out_sp))
    flat = 1
    for v in out_sp:
        flat *= v
    zeros = _C.Op("fill", "shape", "value", "dtype")([n, c, flat], 0.0, x.dtype, place=x.place)
    idx = indices.reshape([n, c, -1]).astype("int64")
    out = put_along_axis(zeros, idx, x.reshape([n, c, -1]), 2, broadcast=False)
    return out.reshape([n, c] + out_sp)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
    return _max_unpool_nd(1, "max_unpool1d", x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
    return _max_unpool_nd(2, "max_unpool2d", x, indices, kernel_size, stride, padding, data_format, output_size)


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None, name=None):
    return _max_unpool_nd(3, "max_unpool3d", x, indices, kernel_size, stride, padding, data_format, output_size)
