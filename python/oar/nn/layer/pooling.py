"""Pooling layers (Paddle's paddle.nn.layer.pooling): max/avg pooling and their adaptive forms."""
from .. import functional as F
from .layers import Layer

__all__ = ["AvgPool1D", "AvgPool2D", "AvgPool3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AdaptiveAvgPool1D",
           "AdaptiveAvgPool2D", "AdaptiveAvgPool3D", "AdaptiveMaxPool1D", "AdaptiveMaxPool2D", "AdaptiveMaxPool3D", "MaxUnPool1D", "MaxUnPool2D", "MaxUnPool3D"]


def _check_rank(layer, x, nd):
    if x.ndim != nd + 2:
        raise ValueError("{}: the input must be {}-D, got shape {}".format(type(layer).__name__, nd + 2, x.shape))


class AvgPool1D(Layer):
    """Average pooling over [N, C, L]; exclusive=True leaves padding out of the divisor."""

    def __init__(self, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.exclusive = exclusive
        self.name = name

    def forward(self, x):
        _check_rank(self, x, 1)
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.exclusive, self.ceil_mode, self.name)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class _AvgPoolNd(Layer):
    _nd, _fn = 2, None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format=None, name=None):
        super().__init__()
        self.ksize = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.exclusive = exclusive
        self.divisor = divisor_override
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        _check_rank(self, x, self._nd)
        return type(self)._fn(x, kernel_size=self.ksize, stride=self.stride, padding=self.padding,
                              ceil_mode=self.ceil_mode, exclusive=self.exclusive, divisor_override=self.divisor,
                              data_format=self.data_format, name=self.name)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.ksize, self.stride, self.padding)


class AvgPool2D(_AvgPoolNd):
    """Average pooling over [N, C, H, W] (or NHWC)."""
    _nd, _fn = 2, staticmethod(F.avg_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCHW", name=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, name)


class AvgPool3D(_AvgPoolNd):
    """Average pooling over [N, C, D, H, W] (or NDHWC)."""
    _nd, _fn = 3, staticmethod(F.avg_pool3d)

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
                 data_format="NCDHW", name=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, name)


class MaxPool1D(Layer):
    """Max pooling over [N, C, L]; return_mask also returns the argmax indices."""

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.return_mask = return_mask
        self.name = name

    def forward(self, input):
        _check_rank(self, input, 1)
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.return_mask, self.ceil_mode,
                            self.name)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class _MaxPoolNd(Layer):
    _nd, _fn = 2, None

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format=None,
                 name=None):
        super().__init__()
        self.ksize = kernel_size
        self.stride = stride
        self.padding = padding
        self.return_mask = return_mask
        self.ceil_mode = ceil_mode
        self.data_format = data_format
        self.name = name

    def forward(self, x):
        _check_rank(self, x, self._nd)
        return type(self)._fn(x, kernel_size=self.ksize, stride=self.stride, padding=self.padding,
                              return_mask=self.return_mask, ceil_mode=self.ceil_mode, data_format=self.data_format,
                              name=self.name)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.ksize, self.stride, self.padding)


class MaxPool2D(_MaxPoolNd):
    """Max pooling over [N, C, H, W] (or NHWC)."""
    _nd, _fn = 2, staticmethod(F.max_pool2d)

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
                 name=None):
        super().__init__(kernel_size, stride, padding, return_mask, ceil_mode, data_format, name)


class MaxPool3D(_MaxPoolNd):
    """Max pooling over [N, C, D, H, W] (or NDHWC)."""
    _nd, _fn = 3, staticmethod(F.max_pool3d)

    def __init__(self, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
                 name=None):
        super().__init__(kernel_size, stride, padding, return_mask, ceil_mode, data_format, name)


class AdaptiveAvgPool1D(Layer):
    """Average pooling to a fixed output length."""

    def __init__(self, output_size, name=None):
        super().__init__()
        self.output_size = output_size
        self.name = name

    def forward(self, input):
        _check_rank(self, input, 1)
        return F.adaptive_avg_pool1d(input, self.output_size, self.name)

    def extra_repr(self):
        return "output_size={}".format(self.output_size)


class _AdaptiveAvgPoolNd(Layer):
    _nd, _fn = 2, None

    def __init__(self, output_size, data_format=None, name=None):
        super().__init__()
        self._output_size = output_size
        self._data_format = data_format
        self._name = name

    @property
    def output_size(self):
        return self._output_size

    def forward(self, x):
        _check_rank(self, x, self._nd)
        return type(self)._fn(x, output_size=self._output_size, data_format=self._data_format, name=self._name)

    def extra_repr(self):
        return "output_size={}".format(self._output_size)


class AdaptiveAvgPool2D(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed [H, W] (None keeps that dim)."""
    _nd, _fn = 2, staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size, data_format="NCHW", name=None):
        super().__init__(output_size, data_format, name)


class AdaptiveAvgPool3D(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed [D, H, W] (None keeps that dim)."""
    _nd, _fn = 3, staticmethod(F.adaptive_avg_pool3d)

    def __init__(self, output_size, data_format="NCDHW", name=None):
        super().__init__(output_size, data_format, name)


class AdaptiveMaxPool1D(Layer):
    """Max pooling to a fixed output length (return_mask also returns indices)."""

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self.output_size = output_size
        self.return_mask = return_mask
        self.name = name

    def forward(self, input):
        _check_rank(self, input, 1)
        return F.adaptive_max_pool1d(input, self.output_size, self.return_mask, self.name)

    def extra_repr(self):
        return "output_size={}, return_mask={}".format(self.output_size, self.return_mask)


class _AdaptiveMaxPoolNd(Layer):
    _nd, _fn = 2, None

    def __init__(self, output_size, return_mask=False, name=None):
        super().__init__()
        self._output_size = output_size
        self._return_mask = return_mask
        self._name = name

    @property
    def output_size(self):
        return self._output_size

    def forward(self, x):
        _check_rank(self, x, self._nd)
        return type(self)._fn(x, output_size=self._output_size, return_mask=self._return_mask, name=self._name)

    def extra_repr(self):
        return "output_size={}, return_mask={}".format(self._output_size, self._return_mask)


class AdaptiveMaxPool2D(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed [H, W] (NCHW)."""
    _nd, _fn = 2, staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3D(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed [D, H, W] (NCDHW)."""
    _nd, _fn = 3, staticmethod(F.adaptive_max_pool3d)


class _MaxUnPoolNd(Layer):
    """The inverse of MaxPoolND(return_mask=True): puts each value back at its recorded index, zeros elsewhere."""
    _fn, _fmt = None, None

    def __init__(self, kernel_size, stride=None, padding=0, data_format=None, output_size=None, name=None):
        super().__init__()
        self.ksize, self.stride, self.padding = kernel_size, stride, padding
        self.data_format = data_format or self._fmt
        self.output_size = output_size
        self.name = name

    def forward(self, x, indices):
        return getattr(F, self._fn)(x, indices, self.ksize, stride=self.stride, padding=self.padding,
                                    data_format=self.data_format, output_size=self.output_size, name=self.name)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.ksize, self.stride, self.padding)


class MaxUnPool1D(_MaxUnPoolNd):
    _fn, _fmt = "max_unpool1d", "NCL"


class MaxUnPool2D(_MaxUnPoolNd):
    _fn, _fmt = "max_unpool2d", "NCHW"


class MaxUnPool3D(_MaxUnPoolNd):
    _fn, _fmt = "max_unpool3d", "NCDHW"
