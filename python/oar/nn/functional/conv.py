"""Convolutions and transposed convolutions (oneDNN on the CPU).

Every function runs the one N-d core op: "conv" (forward), "conv_grad_input" (its gradient wrt x,
which is also the transposed convolution) and "conv_grad_filter". Channels-last layouts (NLC, NHWC,
NDHWC) are transposed to channels-first around the op; bias is added as a broadcast add.
"""
import numbers

from ... import _C
from ...tensor.manipulation import reshape, transpose

__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]

_conv = _C.Op("conv")
_conv_grad_input = _C.Op("conv_grad_input")

_FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _ntuple(v, n, what, op):
    """An int or a list/tuple of n ints as a list of n ints."""
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    if isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(a, numbers.Integral) for a in v):
        return [int(a) for a in v]
    raise ValueError("{}: {} must be an int or a list of {} ints, got {!r}".format(op, what, n, v))


def _channel_last(data_format, nd, op):
    formats = _FORMATS[nd]
    if data_format not in formats:
        raise ValueError("{}: data_format must be one of {}, got {!r}".format(op, formats, data_format))
    return data_format == formats[1]


def _to_first(x, nd):  # channels-last -> channels-first
    return transpose(x, [0, nd + 1] + list(range(1, nd + 1)))


def _to_last(x, nd):
    return transpose(x, [0] + list(range(2, nd + 2)) + [1])


def _check_x(x, nd, op):
    if x.ndim != nd + 2:
        raise ValueError("{}: x must be {}-D, got shape {}".format(op, nd + 2, x.shape))


def _explicit_padding(padding, nd, channel_last, op):
    """Paddle's padding forms (int, nd ints, 2*nd ints [before, after, ...], or per-dimension pairs
    including batch and channel) as [b0, e0, b1, e1, ...]; None for 'SAME'."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == "VALID":
            return [0] * (2 * nd)
        if p == "SAME":
            return None
        raise ValueError("{}: padding must be 'SAME' or 'VALID' when a string, got {!r}".format(op, padding))
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * (2 * nd)
    if isinstance(padding, (list, tuple)):
        if len(padding) == nd + 2 and all(isinstance(q, (list, tuple)) for q in padding):
            pairs = list(padding)
            batch_chan = [pairs[0], pairs[-1]] if channel_last else pairs[:2]
            spatial = pairs[1:-1] if channel_last else pairs[2:]
            if any(list(q) != [0, 0] for q in batch_chan):
                raise ValueError("{}: padding of the batch and channel dimensions must be 0, got {!r}".format(op, padding))
            return [int(v) for q in spatial for v in q]
        if all(isinstance(q, numbers.Integral) for q in padding):
            if len(padding) == nd:
                return [int(v) for v in padding for _ in range(2)]
            if len(padding) == 2 * nd:
                return [int(v) for v in padding]
    raise ValueError("{}: bad padding {!r}".format(op, padding))


def _same_padding(in_sizes, kernel, strides):
    """TensorFlow-style 'SAME': out = ceil(in / stride), the padding split with the extra at the end."""
    pads = []
    for n, k, s in zip(in_sizes, kernel, strides):
        out = (n + s - 1) // s
        total = max((out - 1) * s + k - n, 0)
        pads += [total // 2, total - total // 2]
    return pads


def _add_bias(y, bias, op):
    if bias is None:
        return y
    if bias.ndim != 1 or bias.shape[0] != y.shape[1]:
        raise ValueError("{}: bias must have shape [{}], got {}".format(op, y.shape[1], bias.shape))
    return y + reshape(bias, [1, -1] + [1] * (y.ndim - 2))


def _conv_nd(nd, op, x, weight, bias, stride, padding, dilation, groups, data_format):
    _check_x(x, nd, op)
    last = _channel_last(data_format, nd, op)
    if weight.ndim != nd + 2:
        raise ValueError("{}: weight must be {}-D, got shape {}".format(op, nd + 2, weight.shape))
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError("{}: groups must be a positive int, got {!r}".format(op, groups))
    strides = _ntuple(stride, nd, "stride", op)
    dilations = _ntuple(dilation, nd, "dilation", op)
    if last:
        x = _to_first(x, nd)
    cin = x.shape[1]
    if cin != weight.shape[1] * groups:
        raise ValueError("{}: x has {} channels but weight.shape[1] ({}) * groups ({}) = {}".format(
            op, cin, weight.shape[1], groups, weight.shape[1] * groups))
    pads = _explicit_padding(padding, nd, last, op)
    if pads is None:  # Paddle's 'SAME' also resets dilation to 1
        dilations = [1] * nd
        pads = _same_padding(x.shape[2:], weight.shape[2:], strides)
    y = _conv(x, weight, strides=strides, paddings=pads, dilations=dilations, groups=int(groups))
    y = _add_bias(y, bias, op)
    return _to_last(y, nd) if last else y


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """1-D convolution: x [N, C, L] (or NLC), weight [C_out, C/groups, k]."""
    return _conv_nd(1, "conv1d", x, weight, bias, stride, padding, dilation, groups, data_format)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """2-D convolution: x [N, C, H, W] (or NHWC), weight [C_out, C/groups, kh, kw]."""
    return _conv_nd(2, "conv2d", x, weight, bias, stride, padding, dilation, groups, data_format)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None):
    """3-D convolution: x [N, C, D, H, W] (or NDHWC), weight [C_out, C/groups, kd, kh, kw]."""
    return _conv_nd(3, "conv3d", x, weight, bias, stride, padding, dilation, groups, data_format)


def _conv_transpose_nd(nd, op, x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                       data_format):
    _check_x(x, nd, op)
    last = _channel_last(data_format, nd, op)
    if weight.ndim != nd + 2:
        raise ValueError("{}: weight must be {}-D, got shape {}".format(op, nd + 2, weight.shape))
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError("{}: groups must be a positive int, got {!r}".format(op, groups))
    strides = _ntuple(stride, nd, "stride", op)
    dilations = _ntuple(dilation, nd, "dilation", op)
    out_pad = _ntuple(output_padding, nd, "output_padding", op)
    if last:
        x = _to_first(x, nd)
    if x.shape[1] != weight.shape[0]:
        raise ValueError("{}: x has {} channels but weight.shape[0] is {}".format(op, x.shape[1], weight.shape[0]))
    in_sizes = x.shape[2:]
    ks = weight.shape[2:]
    pads = _explicit_padding(padding, nd, last, op)
    if pads is None:  # Paddle's 'SAME': the padding a forward convolution of x would get (dilation 1)
        dilations = [1] * nd
        pads = _same_padding(in_sizes, ks, strides)
    base = [(n - 1) * s - pads[2 * i] - pads[2 * i + 1] + d * (k - 1) + 1
            for i, (n, s, d, k) in enumerate(zip(in_sizes, strides, dilations, ks))]
    if output_size is not None:
        size = _ntuple(list(output_size) if isinstance(output_size, (list, tuple)) else output_size, nd,
                       "output_size", op)
        for i in range(nd):
            if not base[i] <= size[i] < base[i] + strides[i]:
                raise ValueError("{}: output_size {} is out of the valid range [{}, {}) in dim {}".format(
                    op, size, base[i], base[i] + strides[i], i))
    else:
        for i in range(nd):
            if not 0 <= out_pad[i] < max(strides[i], dilations[i]):
                raise ValueError("{}: output_padding {} must be smaller than stride or dilation".format(op, out_pad))
        size = [b + p for b, p in zip(base, out_pad)]
    y = _conv_grad_input(x, weight, strides=strides, paddings=pads, dilations=dilations, groups=int(groups),
                         input_size=size)
    y = _add_bias(y, bias, op)
    return _to_last(y, nd) if last else y


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCL", name=None):
    """1-D transposed convolution: weight [C_in, C_out/groups, k]."""
    return _conv_transpose_nd(1, "conv1d_transpose", x, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, data_format)


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None):
    """2-D transposed convolution: weight [C_in, C_out/groups, kh, kw]."""
    return _conv_transpose_nd(2, "conv2d_transpose", x, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, data_format)


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCDHW", name=None):
    """3-D transposed convolution: weight [C_in, C_out/groups, kd, kh, kw]."""
    return _conv_transpose_nd(3, "conv3d_transpose", x, weight, bias, stride, padding, output_padding, groups,
                              dilation, output_size, data_format)
