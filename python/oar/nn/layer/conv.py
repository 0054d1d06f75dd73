"""Convolution layers (Paddle's paddle.nn.layer.conv): Conv1D/2D/3D and their transposes.

Weights are [out_channels, in_channels/groups, *k] (transposed: [in_channels, out_channels/groups, *k]).
Default init as Paddle: Normal(0, sqrt(2 / (in_channels * prod(k)))) for convs (groups are not divided
out, as Paddle), Paddle's XavierUniform fallback for transposed convs; bias zero.
"""
import math

import numpy as np

from ... import _C
from .. import functional as F
from ..initializer import Normal
from .layers import Layer

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose"]

_FORMATS = {1: ("NCL", "NLC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _to_list(v, n, what, layer):
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    if len(v) != n or not all(isinstance(i, int) for i in v):
        raise ValueError("{}: {} must be an int or {} ints, got {!r}".format(layer, what, n, v))
    return v


def _reverse_repeat_list(t, n):
    # [ph, pw] -> [pw, pw, ph, ph]: F.pad's order for the spatial dims, last dim first.
    return [x for x in reversed(t) for _ in range(n)]


class _ConvNd(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, transposed, dims, stride=1, padding=0,
                 padding_mode="zeros", output_padding=0, dilation=1, groups=1, weight_attr=None, bias_attr=None,
                 data_format="NCHW"):
        super().__init__()
        cls = type(self).__name__
        if weight_attr is False:
            raise ValueError("{}: weight_attr must not be False (a convolution needs its weight)".format(cls))
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("{}: groups must be a positive int, got {!r}".format(cls, groups))
        if in_channels <= 0 or out_channels <= 0:
            raise ValueError("{}: in_channels and out_channels must be positive, got {} and {}".format(
                cls, in_channels, out_channels))
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError("{}: padding_mode must be one of zeros, reflect, replicate, circular; got {!r}".format(
                cls, padding_mode))
        if padding_mode != "zeros" and not isinstance(padding, int):
            raise TypeError("{}: with padding_mode {!r} padding must be an int, got {!r}".format(
                cls, padding_mode, padding))
        if data_format not in _FORMATS[dims]:
            raise ValueError("{}: data_format must be one of {}, got {!r}".format(cls, _FORMATS[dims], data_format))
        if in_channels % groups != 0:
            raise ValueError("{}: in_channels ({}) must be divisible by groups ({})".format(cls, in_channels, groups))
        if transposed and out_channels % groups != 0:
            raise ValueError("{}: out_channels ({}) must be divisible by groups ({})".format(cls, out_channels, groups))
        self._param_attr = weight_attr
        self._bias_attr = bias_attr
        self._groups = groups
        self._in_channels = in_channels
        self._out_channels = out_channels
        self._data_format = data_format
        self._dtype = _C.get_default_dtype()
        self._channel_dim = dims + 1 if data_format[-1] == "C" else 1
        self._dims = dims
        self._transposed = transposed
        self._stride = _to_list(stride, dims, "stride", cls)
        self._dilation = _to_list(dilation, dims, "dilation", cls)
        self._kernel_size = _to_list(kernel_size, dims, "kernel_size", cls)
        self._padding = padding
        self._padding_mode = padding_mode
        self.output_padding = output_padding
        if padding_mode != "zeros":
            self._reversed_padding_repeated_twice = _reverse_repeat_list([padding] * dims, 2)
        if transposed:
            filter_shape = [in_channels, out_channels // groups] + self._kernel_size
            default_init = None
        else:
            filter_shape = [out_channels, in_channels // groups] + self._kernel_size
            std = math.sqrt(2.0 / float(np.prod(self._kernel_size) * in_channels))
            default_init = Normal(0.0, std)
        self.weight = self.create_parameter(shape=filter_shape, attr=weight_attr, dtype=self._dtype,
                                            default_initializer=default_init)
        self.bias = self.create_parameter(shape=[out_channels], attr=bias_attr, dtype=self._dtype, is_bias=True)

    def _check_input(self, x):
        cls = type(self).__name__
        if x.ndim != self._dims + 2:
            raise ValueError("{}: the input must be {}-D ({}), got shape {}".format(
                cls, self._dims + 2, self._data_format, x.shape))
        if x.shape[self._channel_dim] != self._in_channels:
            raise ValueError("{}: expected an input with in_channels={} at dim {} ({}), got shape {}".format(
                cls, self._in_channels, self._channel_dim, self._data_format, x.shape))

    def extra_repr(self):
        s = "{}, {}, kernel_size={}".format(self._in_channels, self._out_channels, self._kernel_size)
        if self._stride != [1] * len(self._stride):
            s += ", stride={}".format(self._stride)
        if self._padding != 0:
            s += ", padding={}".format(self._padding)
        if self._padding_mode != "zeros":
            s += ", padding_mode={}".format(self._padding_mode)
        if self.output_padding != 0:
            s += ", output_padding={}".format(self.output_padding)
        if self._dilation != [1] * len(self._dilation):
            s += ", dilation={}".format(self._dilation)
        if self._groups != 1:
            s += ", groups={}".format(self._groups)
        s += ", data_format={}".format(self._data_format)
        return s


class _Conv(_ConvNd):
    _fn = None

    def forward(self, x):
        self._check_input(x)
        padding = self._padding
        if self._padding_mode != "zeros":
            x = F.pad(x, self._reversed_padding_repeated_twice, mode=self._padding_mode, data_format=self._data_format)
            padding = 0
        return type(self)._fn(x, self.weight, bias=self.bias, stride=self._stride, padding=padding,
                              dilation=self._dilation, groups=self._groups, data_format=self._data_format)


class Conv1D(_Conv):
    """1-D convolution over [N, C, L] (or NLC)."""
    _fn = staticmethod(F.conv1d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, False, 1, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)


class Conv2D(_Conv):
    """2-D convolution over [N, C, H, W] (or NHWC)."""
    _fn = staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, False, 2, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)


class Conv3D(_Conv):
    """3-D convolution over [N, C, D, H, W] (or NDHWC)."""
    _fn = staticmethod(F.conv3d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, False, 3, stride=stride, padding=padding,
                         padding_mode=padding_mode, dilation=dilation, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)


class _ConvTranspose(_ConvNd):
    _fn = None

    def forward(self, x, output_size=None):
        self._check_input(x)
        # As Paddle: an explicit output_size replaces output_padding.
        output_padding = self.output_padding if output_size is None else 0
        return type(self)._fn(x, self.weight, bias=self.bias, stride=self._stride, padding=self._padding,
                              output_padding=output_padding, dilation=self._dilation, groups=self._groups,
                              output_size=output_size, data_format=self._data_format)


class Conv1DTranspose(_ConvTranspose):
    """1-D transposed convolution; weight [in_channels, out_channels/groups, k]."""
    _fn = staticmethod(F.conv1d_transpose)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCL"):
        super().__init__(in_channels, out_channels, kernel_size, True, 1, stride=stride, padding=padding,
                         dilation=dilation, output_padding=output_padding, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)


class Conv2DTranspose(_ConvTranspose):
    """2-D transposed convolution; weight [in_channels, out_channels/groups, kh, kw]."""
    _fn = staticmethod(F.conv2d_transpose)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, True, 2, stride=stride, padding=padding,
                         dilation=dilation, output_padding=output_padding, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)


class Conv3DTranspose(_ConvTranspose):
    """3-D transposed convolution; weight [in_channels, out_channels/groups, kd, kh, kw]."""
    _fn = staticmethod(F.conv3d_transpose)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
                 groups=1, weight_attr=None, bias_attr=None, data_format="NCDHW"):
        super().__init__(in_channels, out_channels, kernel_size, True, 3, stride=stride, padding=padding,
                         dilation=dilation, output_padding=output_padding, groups=groups, weight_attr=weight_attr,
                         bias_attr=bias_attr, data_format=data_format)
