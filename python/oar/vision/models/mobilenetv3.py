"""MobileNetV3 Small and Large (Paddle's paddle.vision.models.mobilenetv3: conv, blocks.N
(expand_conv / bottleneck_conv / mid_se / linear_conv), lastconv, classifier, so state_dict keys
match)."""
import functools

from ... import nn
from ...tensor.manipulation import flatten
from ._utils import ConvNormActivation, _make_divisible, _no_pretrained

__all__ = ["MobileNetV3Small", "MobileNetV3Large", "mobilenet_v3_small", "mobilenet_v3_large"]


class SqueezeExcitation(nn.Layer):
    """Channel attention: global average pool, 1x1 conv (fc1), activation, 1x1 conv (fc2), gate
    activation; the input is multiplied by the gate."""

    def __init__(self, input_channels, squeeze_channels, activation=None, scale_activation=None):
        super().__init__()
        activation = nn.ReLU if activation is None else activation
        scale_activation = nn.Sigmoid if scale_activation is None else scale_activation
        self.avgpool = nn.AdaptiveAvgPool2D(1)
        self.fc1 = nn.Conv2D(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2D(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.fc1(self.avgpool(input))
        scale = self.fc2(self.activation(scale))
        return self.scale_activation(scale)

    def forward(self, input):
        return self._scale(input) * input


class InvertedResidualConfig:
    """One block's configuration; channel counts are scaled and rounded to multiples of 8."""

    def __init__(self, in_channels, kernel, expanded_channels, out_channels, use_se, activation, stride,
                 scale=1.0):
        self.in_channels = self.adjust_channels(in_channels, scale=scale)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, scale=scale)
        self.out_channels = self.adjust_channels(out_channels, scale=scale)
        self.use_se = use_se
        if activation is None:
            self.activation_layer = None
        elif activation == "relu":
            self.activation_layer = nn.ReLU
        elif activation == "hardswish":
            self.activation_layer = nn.Hardswish
        else:
            raise ValueError("The activation function is not supported: {!r}".format(activation))
        self.stride = stride

    @staticmethod
    def adjust_channels(channels, scale=1.0):
        return _make_divisible(channels * scale, 8)


class InvertedResidual(nn.Layer):
    """Optional 1x1 expansion, kxk depthwise conv, optional squeeze-excitation (Hardsigmoid gate),
    1x1 linear projection; residual when the stride is 1 and channel counts agree."""

    def __init__(self, in_channels, expanded_channels, out_channels, filter_size, stride, use_se, activation_layer,
                 norm_layer):
        super().__init__()
        self.use_res_connect = stride == 1 and in_channels == out_channels
        self.use_se = use_se
        self.expand = in_channels != expanded_channels
        if self.expand:
            self.expand_conv = ConvNormActivation(in_channels=in_channels, out_channels=expanded_channels,
                                                  kernel_size=1, stride=1, padding=0, norm_layer=norm_layer,
                                                  activation_layer=activation_layer)
        self.bottleneck_conv = ConvNormActivation(in_channels=expanded_channels, out_channels=expanded_channels,
                                                  kernel_size=filter_size, stride=stride,
                                                  padding=int((filter_size - 1) // 2), groups=expanded_channels,
                                                  norm_layer=norm_layer, activation_layer=activation_layer)
        if self.use_se:
            self.mid_se = SqueezeExcitation(expanded_channels, _make_divisible(expanded_channels // 4),
                                            scale_activation=nn.Hardsigmoid)
        self.linear_conv = ConvNormActivation(in_channels=expanded_channels, out_channels=out_channels, kernel_size=1,
                                              stride=1, padding=0, norm_layer=norm_layer, activation_layer=None)

    def forward(self, x):
        identity = x
        if self.expand:
            x = self.expand_conv(x)
        x = self.bottleneck_conv(x)
        if self.use_se:
            x = self.mid_se(x)
        x = self.linear_conv(x)
        if self.use_res_connect:
            x = identity + x
        return x


class MobileNetV3(nn.Layer):
    """MobileNetV3 body shared by the Small and Large variants (config: a list of
    InvertedResidualConfig; last_channel: the classifier's hidden width)."""

    def __init__(self, config, last_channel, scale=1.0, num_classes=1000, with_pool=True):
        super().__init__()
        self.config = config
        self.scale = scale
        self.last_channel = last_channel
        self.num_classes = num_classes
        self.with_pool = with_pool
        self.firstconv_in_channels = config[0].in_channels
        self.lastconv_in_channels = config[-1].in_channels
        self.lastconv_out_channels = self.lastconv_in_channels * 6
        # Paddle's MobileNetV3 BatchNorm settings (momentum in Paddle's sense: weight of the old value).
        norm_layer = functools.partial(nn.BatchNorm2D, epsilon=0.001, momentum=0.99)
        self.conv = ConvNormActivation(in_channels=3, out_channels=self.firstconv_in_channels, kernel_size=3,
                                       stride=2, padding=1, groups=1, activation_layer=nn.Hardswish,
                                       norm_layer=norm_layer)
        self.blocks = nn.Sequential(*[
            InvertedResidual(in_channels=cfg.in_channels, expanded_channels=cfg.expanded_channels,
                             out_channels=cfg.out_channels, filter_size=cfg.kernel, stride=cfg.stride,
                             use_se=cfg.use_se, activation_layer=cfg.activation_layer, norm_layer=norm_layer)
            for cfg in self.config])
        self.lastconv = ConvNormActivation(in_channels=self.lastconv_in_channels,
                                           out_channels=self.lastconv_out_channels, kernel_size=1, stride=1,
                                           padding=0, groups=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish)
        if with_pool:
            self.avgpool = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self.classifier = nn.Sequential(
                nn.Linear(self.lastconv_out_channels, self.last_channel), nn.Hardswish(), nn.Dropout(p=0.2),
                nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.lastconv(self.blocks(self.conv(x)))
        if self.with_pool:
            x = self.avgpool(x)
        if self.num_classes > 0:
            x = flatten(x, 1)
            x = self.classifier(x)
        return x


class MobileNetV3Small(MobileNetV3):
    """MobileNetV3-Small; scale multiplies channel counts. kwargs as MobileNetV3."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        c = InvertedResidualConfig
        config = [
            c(16, 3, 16, 16, True, "relu", 2, scale),
            c(16, 3, 72, 24, False, "relu", 2, scale),
            c(24, 3, 88, 24, False, "relu", 1, scale),
            c(24, 5, 96, 40, True, "hardswish", 2, scale),
            c(40, 5, 240, 40, True, "hardswish", 1, scale),
            c(40, 5, 240, 40, True, "hardswish", 1, scale),
            c(40, 5, 120, 48, True, "hardswish", 1, scale),
            c(48, 5, 144, 48, True, "hardswish", 1, scale),
            c(48, 5, 288, 96, True, "hardswish", 2, scale),
            c(96, 5, 576, 96, True, "hardswish", 1, scale),
            c(96, 5, 576, 96, True, "hardswish", 1, scale),
        ]
        super().__init__(config, last_channel=_make_divisible(1024 * scale, 8), scale=scale, with_pool=with_pool,
                         num_classes=num_classes)


class MobileNetV3Large(MobileNetV3):
    """MobileNetV3-Large; scale multiplies channel counts. kwargs as MobileNetV3."""

    def __init__(self, scale=1.0, num_classes=1000, with_pool=True):
        c = InvertedResidualConfig
        config = [
            c(16, 3, 16, 16, False, "relu", 1, scale),
            c(16, 3, 64, 24, False, "relu", 2, scale),
            c(24, 3, 72, 24, False, "relu", 1, scale),
            c(24, 5, 72, 40, True, "relu", 2, scale),
            c(40, 5, 120, 40, True, "relu", 1, scale),
            c(40, 5, 120, 40, True, "relu", 1, scale),
            c(40, 3, 240, 80, False, "hardswish", 2, scale),
            c(80, 3, 200, 80, False, "hardswish", 1, scale),
            c(80, 3, 184, 80, False, "hardswish", 1, scale),
            c(80, 3, 184, 80, False, "hardswish", 1, scale),
            c(80, 3, 480, 112, True, "hardswish", 1, scale),
            c(112, 3, 672, 112, True, "hardswish", 1, scale),
            c(112, 5, 672, 160, True, "hardswish", 2, scale),
            c(160, 5, 960, 160, True, "hardswish", 1, scale),
            c(160, 5, 960, 160, True, "hardswish", 1, scale),
        ]
        super().__init__(config, last_channel=_make_divisible(1280 * scale, 8), scale=scale, with_pool=with_pool,
                         num_classes=num_classes)


def mobilenet_v3_small(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV3-Small with channel multiplier `scale`. kwargs: num_classes, with_pool."""
    if pretrained:
        _no_pretrained("mobilenet_v3_small")
    return MobileNetV3Small(scale=scale, **kwargs)


def mobilenet_v3_large(pretrained=False, scale=1.0, **kwargs):
    """MobileNetV3-Large with channel multiplier `scale`. kwargs: num_classes, with_pool."""
    if pretrained:
        _no_pretrained("mobilenet_v3_large")
    return MobileNetV3Large(scale=scale, **kwargs)
