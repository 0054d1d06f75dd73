"""MobileNetV1 (Paddle's paddle.vision.models.MobileNetV1: sublayers conv1, conv2_1 .. conv6 with
_depthwise_conv / _pointwise_conv Conv-BN-ReLU blocks, so state_dict keys match)."""
from ... import nn
from ...tensor.manipulation import flatten
from ._utils import ConvNormActivation, _no_pretrained

__all__ = ["MobileNetV1", "mobilenet_v1"]


class DepthwiseSeparable(nn.Layer):
    """A 3x3 depthwise Conv-BN-ReLU followed by a 1x1 pointwise Conv-BN-ReLU, channels scaled."""

    def __init__(self, in_channels, out_channels1, out_channels2, num_groups, stride, scale):
        super().__init__()
        self._depthwise_conv = ConvNormActivation(in_channels, int(out_channels1 * scale), kernel_size=3,
                                                  stride=stride, padding=1, groups=int(num_groups * scale))
        self._pointwise_conv = ConvNormActivation(int(out_channels1 * scale), int(out_channels2 * scale),
                                                  kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        return self._pointwise_conv(self._depthwise_conv(x))


# (name, out_channels1, out_channels2, num_groups, stride); the input channels are the previous
# block's out_channels2.
_V1_BLOCKS = [("conv2_1", 32, 64, 32, 1), ("conv2_2", 64, 128, 64, 2), ("conv3_1", 128, 128, 128, 1),
              ("conv3_2", 128, 256, 128, 2), ("conv4_1", 256, 256, 256, 1), ("conv4_2", 256, 512, 256, 2)] + \
             [("conv5_{}".format(i + 1), 512, 512, 512, 1) for i in range(5)] + \
             [("conv5_6", 512, 1024, 512, 2), ("conv6", 1024, 1024, 1024, 1)]


class MobileNetV1(nn.Layer):
    """MobileNetV1; scale multiplies every channel count. num_classes <= 0 drops the final Linear;
    with_pool=False drops the global average pool."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.conv1 = ConvNormActivation(in_channels=3, out_channels=int(32 * scale), kernel_size=3, stride=2,
                                        padding=1)
        # A plain list (as in Paddle): the blocks are registered by add_sublayer under their names.
        self.dwsl = []
        in_channels = 32
        for name, c1, c2, groups, stride in _V1_BLOCKS:
            block = DepthwiseSeparable(in_channels=int(in_channels * scale), out_channels1=c1, out_channels2=c2,
                                       num_groups=groups, stride=stride, scale=scale)
            self.dwsl.append(self.add_sublayer(name, block))
            in_channels = c2
        if with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.fc = nn.Linear(int(1024 * scale), num_classes)

    def forward(self, x):
        x = self.conv1(x)
        for dws in self.dwsl:
            x = dws(x)
        if self.with_pool:
            x = self.pool2d_avg(x)
        if self.num_classes > 0:
            x = flatten(x, 1)
            x = self.fc(x)
        return x


def mobilenet_v1(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV1 with channel multiplier `scale`. kwargs: num_classes, with_pool."""
    if pretrained:
        _no_pretrained("mobilenet_v1")
    return MobileNetV1(scale=scale, **kwargs)
