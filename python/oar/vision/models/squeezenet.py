"""SqueezeNet 1.0 and 1.1 (Paddle's paddle.vision.models.SqueezeNet: layer names _conv, _conv1..
_conv9 and MakeFire's _conv/_conv_path1/_conv_path2, so state_dict keys match)."""
from ... import nn
from ...nn import functional as F
from ...tensor.manipulation import concat, squeeze
from ._utils import _no_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


class MakeFireConv(nn.Layer):
    """Conv2D followed by ReLU."""

    def __init__(self, input_channels, output_channels, filter_size, padding=0):
        super().__init__()
        self._conv = nn.Conv2D(input_channels, output_channels, filter_size, padding=padding)

    def forward(self, x):
        return F.relu(self._conv(x))


class MakeFire(nn.Layer):
    """A Fire module: 1x1 squeeze, then 1x1 and 3x3 expand paths concatenated on channels."""

    def __init__(self, input_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        self._conv = MakeFireConv(input_channels, squeeze_channels, 1)
        self._conv_path1 = MakeFireConv(squeeze_channels, expand1x1_channels, 1)
        self._conv_path2 = MakeFireConv(squeeze_channels, expand3x3_channels, 3, padding=1)

    def forward(self, inputs):
        x = self._conv(inputs)
        return concat([self._conv_path1(x), self._conv_path2(x)], axis=1)


class SqueezeNet(nn.Layer):
    """SqueezeNet; version is "1.0" or "1.1". The classifier is a 1x1 conv (_conv9) after dropout;
    with_pool applies ReLU, a global average pool and squeezes to [N, num_classes]."""

    def __init__(self, version, num_classes=1000, with_pool=True):
        super().__init__()
        supported_versions = ["1.0", "1.1"]
        if version not in supported_versions:
            raise ValueError("SqueezeNet: supported versions are {} but input version is {!r}".format(
                supported_versions, version))
        self.version = version
        self.num_classes = num_classes
        self.with_pool = with_pool
        if version == "1.0":
            self._conv = nn.Conv2D(3, 96, 7, stride=2)
            first = 96
        else:
            self._conv = nn.Conv2D(3, 64, 3, stride=2, padding=1)
            first = 64
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)
        self._conv1 = MakeFire(first, 16, 64, 64)
        self._conv2 = MakeFire(128, 16, 64, 64)
        self._conv3 = MakeFire(128, 32, 128, 128)
        self._conv4 = MakeFire(256, 32, 128, 128)
        self._conv5 = MakeFire(256, 48, 192, 192)
        self._conv6 = MakeFire(384, 48, 192, 192)
        self._conv7 = MakeFire(384, 64, 256, 256)
        self._conv8 = MakeFire(512, 64, 256, 256)
        self._drop = nn.Dropout(p=0.5, mode="downscale_in_infer")
        # Paddle creates the classifier conv unconditionally; with num_classes <= 0 it is skipped
        # in forward (and cannot be built with 0 output channels, so it is left out here).
        if num_classes > 0:
            self._conv9 = nn.Conv2D(512, num_classes, 1)
        self._avg_pool = nn.AdaptiveAvgPool2D(1)

    def forward(self, inputs):
        x = self._pool(F.relu(self._conv(inputs)))
        if self.version == "1.0":
            x = self._conv3(self._conv2(self._conv1(x)))
            x = self._pool(x)
            x = self._conv7(self._conv6(self._conv5(self._conv4(x))))
            x = self._pool(x)
            x = self._conv8(x)
        else:
            x = self._conv2(self._conv1(x))
            x = self._pool(x)
            x = self._conv4(self._conv3(x))
            x = self._pool(x)
            x = self._conv8(self._conv7(self._conv6(self._conv5(x))))
        if self.num_classes > 0:
            x = self._drop(x)
            x = self._conv9(x)
        if self.with_pool:
            x = F.relu(x)
            x = self._avg_pool(x)
            x = squeeze(x, axis=[2, 3])
        return x


def squeezenet1_0(pretrained=False, **kwargs):
    """SqueezeNet 1.0. kwargs: num_classes, with_pool."""
    if pretrained:
        _no_pretrained("squeezenet1_0")
    return SqueezeNet("1.0", **kwargs)


def squeezenet1_1(pretrained=False, **kwargs):
    """SqueezeNet 1.1. kwargs: num_classes, with_pool."""
    if pretrained:
        _no_pretrained("squeezenet1_1")
    return SqueezeNet("1.1", **kwargs)
