"""Vision layers (Paddle's paddle.nn.layer.vision): PixelShuffle, PixelUnshuffle, ChannelShuffle."""
from .. import functional as F
from .layers import Layer

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


def _check(cls, what, value, data_format):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("{}: {} must be an int, got {!r}".format(cls, what, value))
    if value <= 0:
        raise ValueError("{}: {} must be positive, got {}".format(cls, what, value))
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("{}: data_format must be 'NCHW' or 'NHWC', got {!r}".format(cls, data_format))


def _repr(main, data_format, name):
    if data_format != "NCHW":
        main += ", data_format={}".format(data_format)
    if name is not None:
        main += ", name={}".format(name)
    return main


class PixelShuffle(Layer):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r]."""

    def __init__(self, upscale_factor, data_format="NCHW", name=None):
        super().__init__()
        _check("PixelShuffle", "upscale_factor", upscale_factor, data_format)
        self._upscale_factor = upscale_factor
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.pixel_shuffle(x, self._upscale_factor, self._data_format)

    def extra_repr(self):
        return _repr("upscale_factor={}".format(self._upscale_factor), self._data_format, self._name)


class PixelUnshuffle(Layer):
    """[N, C, H*r, W*r] -> [N, C*r*r, H, W]."""

    def __init__(self, downscale_factor, data_format="NCHW", name=None):
        super().__init__()
        _check("PixelUnshuffle", "downscale_factor", downscale_factor, data_format)
        self._downscale_factor = downscale_factor
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.pixel_unshuffle(x, self._downscale_factor, self._data_format)

    def extra_repr(self):
        return _repr("downscale_factor={}".format(self._downscale_factor), self._data_format, self._name)


class ChannelShuffle(Layer):
    """Splits the channels into `groups` and interleaves them (ShuffleNet)."""

    def __init__(self, groups, data_format="NCHW", name=None):
        super().__init__()
        _check("ChannelShuffle", "groups", groups, data_format)
        self._groups = groups
        self._data_format = data_format
        self._name = name

    def forward(self, x):
        return F.channel_shuffle(x, self._groups, self._data_format)

    def extra_repr(self):
        return _repr("groups={}".format(self._groups), self._data_format, self._name)
