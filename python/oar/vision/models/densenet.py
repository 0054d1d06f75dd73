"""DenseNet 121/161/169/201/264 (Paddle's paddle.vision.models.DenseNet: conv1_func, db_conv_N,
tr_convN_blk, batch_norm, out; old-style nn.BatchNorm with a fused activation; so state_dict keys
match)."""
import math

from ... import nn
from ...framework.param_attr import ParamAttr
from ...tensor.manipulation import concat, flatten
from ._utils import _no_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264"]


class BNACConvLayer(nn.Layer):
    """BatchNorm + activation, then a bias-free Conv2D (pre-activation)."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1, act="relu"):
        super().__init__()
        self._batch_norm = nn.BatchNorm(num_channels, act=act)
        self._conv = nn.Conv2D(in_channels=num_channels, out_channels=num_filters, kernel_size=filter_size,
                               stride=stride, padding=pad, groups=groups, bias_attr=False)

    def forward(self, input):
        return self._conv(self._batch_norm(input))


class DenseLayer(nn.Layer):
    """1x1 bottleneck and 3x3 conv (both pre-activated); the output is concatenated to the input."""

    def __init__(self, num_channels, growth_rate, bn_size, dropout):
        super().__init__()
        self.dropout = dropout
        self.bn_ac_func1 = BNACConvLayer(num_channels=num_channels, num_filters=bn_size * growth_rate, filter_size=1,
                                         pad=0, stride=1)
        self.bn_ac_func2 = BNACConvLayer(num_channels=bn_size * growth_rate, num_filters=growth_rate, filter_size=3,
                                         pad=1, stride=1)
        if dropout:
            self.dropout_func = nn.Dropout(p=dropout, mode="downscale_in_infer")

    def forward(self, input):
        conv = self.bn_ac_func2(self.bn_ac_func1(input))
        if self.dropout:
            conv = self.dropout_func(conv)
        return concat([input, conv], axis=1)


class DenseBlock(nn.Layer):
    """num_layers DenseLayers, registered as "<name>_<i>"."""

    def __init__(self, num_channels, num_layers, bn_size, growth_rate, dropout, name=None):
        super().__init__()
        self.dropout = dropout
        self.dense_layer_func = []
        pre_channel = num_channels
        for layer in range(num_layers):
            self.dense_layer_func.append(self.add_sublayer(
                "{}_{}".format(name, layer + 1),
                DenseLayer(num_channels=pre_channel, growth_rate=growth_rate, bn_size=bn_size, dropout=dropout)))
            pre_channel = pre_channel + growth_rate

    def forward(self, input):
        conv = input
        for func in self.dense_layer_func:
            conv = func(conv)
        return conv


class TransitionLayer(nn.Layer):
    """Pre-activated 1x1 conv and a 2x2 average pool between dense blocks."""

    def __init__(self, num_channels, num_output_features):
        super().__init__()
        self.conv_ac_func = BNACConvLayer(num_channels=num_channels, num_filters=num_output_features, filter_size=1,
                                          pad=0, stride=1)
        self.pool2d_avg = nn.AvgPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, input):
        return self.pool2d_avg(self.conv_ac_func(input))


class ConvBNLayer(nn.Layer):
    """Bias-free Conv2D, then BatchNorm + activation."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, pad=0, groups=1, act="relu"):
        super().__init__()
        self._conv = nn.Conv2D(in_channels=num_channels, out_channels=num_filters, kernel_size=filter_size,
                               stride=stride, padding=pad, groups=groups, bias_attr=False)
        self._batch_norm = nn.BatchNorm(num_filters, act=act)

    def forward(self, input):
        return self._batch_norm(self._conv(input))


_DENSENET_SPEC = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]), 169: (64, 32, [6, 12, 32, 32]),
                  201: (64, 32, [6, 12, 48, 32]), 264: (64, 32, [6, 12, 64, 48])}


class DenseNet(nn.Layer):
    """DenseNet; layers in {121, 161, 169, 201, 264}, bn_size the bottleneck factor, dropout the rate
    after each dense layer (0: none)."""

    def __init__(self, layers=121, bn_size=4, dropout=0.0, num_classes=1000, with_pool=True):
        super().__init__()
        if layers not in _DENSENET_SPEC:
            raise ValueError("DenseNet: supported layers are {} but input layer is {}".format(
                sorted(_DENSENET_SPEC), layers))
        self.num_classes = num_classes
        self.with_pool = with_pool
        num_init_features, growth_rate, block_config = _DENSENET_SPEC[layers]
        self.conv1_func = ConvBNLayer(num_channels=3, num_filters=num_init_features, filter_size=7, stride=2, pad=3,
                                      act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        self.block_config = block_config
        self.dense_block_func_list = []
        self.transition_func_list = []
        pre_num_channels = num_init_features
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            self.dense_block_func_list.append(self.add_sublayer(
                "db_conv_{}".format(i + 2),
                DenseBlock(num_channels=pre_num_channels, num_layers=num_layers, bn_size=bn_size,
                           growth_rate=growth_rate, dropout=dropout, name="conv" + str(i + 2))))
            num_features = num_features + num_layers * growth_rate
            pre_num_channels = num_features
            if i != len(block_config) - 1:
                self.transition_func_list.append(self.add_sublayer(
                    "tr_conv{}_blk".format(i + 2),
                    TransitionLayer(num_channels=pre_num_channels, num_output_features=num_features // 2)))
                pre_num_channels = num_features // 2
                num_features = num_features // 2
        self.batch_norm = nn.BatchNorm(num_features, act="relu")
        if self.with_pool:
            self.pool2d_avg = nn.AdaptiveAvgPool2D(1)
        if self.num_classes > 0:
            stdv = 1.0 / math.sqrt(num_features * 1.0)
            self.out = nn.Linear(num_features, num_classes,
                                 weight_attr=ParamAttr(initializer=nn.initializer.Uniform(-stdv, stdv)),
                                 bias_attr=ParamAttr())

    def forward(self, input):
        conv = self.pool2d_max(self.conv1_func(input))
        for i in range(len(self.block_config)):
            conv = self.dense_block_func_list[i](conv)
            if i != len(self.block_config) - 1:
                conv = self.transition_func_list[i](conv)
        # (Paddle leaves y undefined when with_pool=False; here the features are returned.)
        y = self.batch_norm(conv)
        if self.with_pool:
            y = self.pool2d_avg(y)
        if self.num_classes > 0:
            y = flatten(y, start_axis=1, stop_axis=-1)
            y = self.out(y)
        return y


def _densenet(arch, layers, pretrained, **kwargs):
    if pretrained:
        _no_pretrained(arch)
    return DenseNet(layers=layers, **kwargs)


def densenet121(pretrained=False, **kwargs):
    """DenseNet-121. kwargs: bn_size, dropout, num_classes, with_pool."""
    return _densenet("densenet121", 121, pretrained, **kwargs)


def densenet161(pretrained=False, **kwargs):
    """DenseNet-161. kwargs: bn_size, dropout, num_classes, with_pool."""
    return _densenet("densenet161", 161, pretrained, **kwargs)


def densenet169(pretrained=False, **kwargs):
    """DenseNet-169. kwargs: bn_size, dropout, num_classes, with_pool."""
    return _densenet("densenet169", 169, pretrained, **kwargs)


def densenet201(pretrained=False, **kwargs):
    """DenseNet-201. kwargs: bn_size, dropout, num_classes, with_pool."""
    return _densenet("densenet201", 201, pretrained, **kwargs)


def densenet264(pretrained=False, **kwargs):
    """DenseNet-264. kwargs: bn_size, dropout, num_classes, with_pool."""
    return _densenet("densenet264", 264, pretrained, **kwargs)
