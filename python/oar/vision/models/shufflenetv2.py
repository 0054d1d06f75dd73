"""ShuffleNetV2 (Paddle's paddle.vision.models.ShuffleNetV2: _conv1, blocks named "2_1".."4_4",
_last_conv, _fc, so state_dict keys match)."""
from ... import nn
from ...tensor.manipulation import concat, flatten, reshape, split, transpose
from ._utils import ConvNormActivation, _no_pretrained

__all__ = ["ShuffleNetV2", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
           "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish"]


def create_activation_layer(act):
    if act == "swish":
        return nn.Swish
    if act == "relu":
        return nn.ReLU
    if act is None:
        return None
    raise ValueError("The activation function is not supported: {!r} (use 'relu', 'swish' or None)".format(act))


def channel_shuffle(x, groups):
    """Interleaves the channels of `groups` equal channel groups."""
    batch_size, num_channels, height, width = x.shape[0:4]
    channels_per_group = num_channels // groups
    x = reshape(x, shape=[batch_size, groups, channels_per_group, height, width])
    x = transpose(x, perm=[0, 2, 1, 3, 4])
    return reshape(x, shape=[batch_size, num_channels, height, width])


class InvertedResidual(nn.Layer):
    """Stride-1 unit: half the channels pass through, the other half go pointwise-depthwise-pointwise;
    concatenated and channel-shuffled."""

    def __init__(self, in_channels, out_channels, stride, activation_layer=None):
        super().__init__()
        activation_layer = nn.ReLU if activation_layer is None else activation_layer
        half = out_channels // 2
        self._conv_pw = ConvNormActivation(in_channels=in_channels // 2, out_channels=half, kernel_size=1, stride=1,
                                           padding=0, groups=1, activation_layer=activation_layer)
        self._conv_dw = ConvNormActivation(in_channels=half, out_channels=half, kernel_size=3, stride=stride, padding=1,
                                           groups=half, activation_layer=None)
        self._conv_linear = ConvNormActivation(in_channels=half, out_channels=half, kernel_size=1, stride=1, padding=0,
                                               groups=1, activation_layer=activation_layer)

    def forward(self, inputs):
        c = inputs.shape[1] // 2
        x1, x2 = split(inputs, num_or_sections=[c, c], axis=1)
        x2 = self._conv_linear(self._conv_dw(self._conv_pw(x2)))
        return channel_shuffle(concat([x1, x2], axis=1), 2)


class InvertedResidualDS(nn.Layer):
    """Down-sampling unit: two strided branches over the whole input, concatenated and shuffled."""

    def __init__(self, in_channels, out_channels, stride, activation_layer=None):
        super().__init__()
        activation_layer = nn.ReLU if activation_layer is None else activation_layer
        half = out_channels // 2
        self._conv_dw_1 = ConvNormActivation(in_channels=in_channels, out_channels=in_channels, kernel_size=3,
                                             stride=stride, padding=1, groups=in_channels, activation_layer=None)
        self._conv_linear_1 = ConvNormActivation(in_channels=in_channels, out_channels=half, kernel_size=1, stride=1,
                                                 padding=0, groups=1, activation_layer=activation_layer)
        self._conv_pw_2 = ConvNormActivation(in_channels=in_channels, out_channels=half, kernel_size=1, stride=1,
                                             padding=0, groups=1, activation_layer=activation_layer)
        self._conv_dw_2 = ConvNormActivation(in_channels=half, out_channels=half, kernel_size=3, stride=stride,
                                             padding=1, groups=half, activation_layer=None)
        self._conv_linear_2 = ConvNormActivation(in_channels=half, out_channels=half, kernel_size=1, stride=1,
                                                 padding=0, groups=1, activation_layer=activation_layer)

    def forward(self, inputs):
        x1 = self._conv_linear_1(self._conv_dw_1(inputs))
        x2 = self._conv_linear_2(self._conv_dw_2(self._conv_pw_2(inputs)))
        return channel_shuffle(concat([x1, x2], axis=1), 2)


_STAGE_OUT_CHANNELS = {0.25: [-1, 24, 24, 48, 96, 512], 0.33: [-1, 24, 32, 64, 128, 512],
                       0.5: [-1, 24, 48, 96, 192, 1024], 1.0: [-1, 24, 116, 232, 464, 1024],
                       1.5: [-1, 24, 176, 352, 704, 1024], 2.0: [-1, 24, 224, 488, 976, 2048]}


class ShuffleNetV2(nn.Layer):
    """ShuffleNetV2; scale in {0.25, 0.33, 0.5, 1.0, 1.5, 2.0}, act "relu", "swish" or None."""

    def __init__(self, scale=1.0, act="relu", num_classes=1000, with_pool=True):
        super().__init__()
        if scale not in _STAGE_OUT_CHANNELS:
            raise ValueError("ShuffleNetV2: scale must be one of {}, got {}".format(sorted(_STAGE_OUT_CHANNELS), scale))
        self.scale = scale
        self.num_classes = num_classes
        self.with_pool = with_pool
        stage_repeats = [4, 8, 4]
        activation_layer = create_activation_layer(act)
        stage_out_channels = _STAGE_OUT_CHANNELS[scale]
        self._conv1 = ConvNormActivation(in_channels=3, out_channels=stage_out_channels[1], kernel_size=3, stride=2,
                                         padding=1, activation_layer=activation_layer)
        self._max_pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        # A plain list (as in Paddle): the blocks are registered by add_sublayer as "<stage>_<i>".
        self._block_list = []
        for stage_id, num_repeat in enumerate(stage_repeats):
            for i in range(num_repeat):
                if i == 0:
                    block = InvertedResidualDS(in_channels=stage_out_channels[stage_id + 1],
                                               out_channels=stage_out_channels[stage_id + 2], stride=2,
                                               activation_layer=activation_layer)
                else:
                    block = InvertedResidual(in_channels=stage_out_channels[stage_id + 2],
                                             out_channels=stage_out_channels[stage_id + 2], stride=1,
                                             activation_layer=activation_layer)
                self._block_list.append(self.add_sublayer("{}_{}".format(stage_id + 2, i + 1), block))
        self._last_conv = ConvNormActivation(in_channels=stage_out_channels[-2], out_channels=stage_out_channels[-1],
                                             kernel_size=1, stride=1, padding=0, activation_layer=activation_layer)
        if with_pool:
            self._pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if num_classes > 0:
            self._out_c = stage_out_channels[-1]
            self._fc = nn.Linear(stage_out_channels[-1], num_classes)

    def forward(self, inputs):
        x = self._max_pool(self._conv1(inputs))
        for inv in self._block_list:
            x = inv(x)
        x = self._last_conv(x)
        if self.with_pool:
            x = self._pool2d_avg(x)
        if self.num_classes > 0:
            x = flatten(x, start_axis=1, stop_axis=-1)
            x = self._fc(x)
        return x


def _shufflenet_v2(arch, pretrained=False, scale=1.0, **kwargs):
    if pretrained:
        _no_pretrained(arch)
    return ShuffleNetV2(scale=scale, **kwargs)


def shufflenet_v2_x0_25(pretrained=False, **kwargs):
    """ShuffleNetV2 x0.25. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x0_25", pretrained, 0.25, **kwargs)


def shufflenet_v2_x0_33(pretrained=False, **kwargs):
    """ShuffleNetV2 x0.33. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x0_33", pretrained, 0.33, **kwargs)


def shufflenet_v2_x0_5(pretrained=False, **kwargs):
    """ShuffleNetV2 x0.5. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x0_5", pretrained, 0.5, **kwargs)


def shufflenet_v2_x1_0(pretrained=False, **kwargs):
    """ShuffleNetV2 x1.0. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x1_0", pretrained, 1.0, **kwargs)


def shufflenet_v2_x1_5(pretrained=False, **kwargs):
    """ShuffleNetV2 x1.5. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x1_5", pretrained, 1.5, **kwargs)


def shufflenet_v2_x2_0(pretrained=False, **kwargs):
    """ShuffleNetV2 x2.0. kwargs: act, num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_x2_0", pretrained, 2.0, **kwargs)


def shufflenet_v2_swish(pretrained=False, **kwargs):
    """ShuffleNetV2 x1.0 with Swish activations. kwargs: num_classes, with_pool."""
    return _shufflenet_v2("shufflenet_v2_swish", pretrained, 1.0, act="swish", **kwargs)
