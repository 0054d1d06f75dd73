"""AlexNet (Paddle's paddle.vision.models.AlexNet: layer names _conv1.._conv5, _fc6.._fc8, so
state_dict keys match; weights initialised Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) as in Paddle)."""
import math

from ... import nn
from ...framework.param_attr import ParamAttr
from ...nn import functional as F
from ...tensor.manipulation import flatten
from ._utils import _no_pretrained

__all__ = ["AlexNet", "alexnet"]


def _uniform_attrs(stdv):
    u = nn.initializer.Uniform
    return dict(weight_attr=ParamAttr(initializer=u(-stdv, stdv)), bias_attr=ParamAttr(initializer=u(-stdv, stdv)))


class ConvPoolLayer(nn.Layer):
    """Conv2D (+ ReLU when act == "relu") followed by a 3x3 stride-2 max pool."""

    def __init__(self, input_channels, output_channels, filter_size, stride, padding, stdv, groups=1, act=None):
        super().__init__()
        self.relu = nn.ReLU() if act == "relu" else None
        self._conv = nn.Conv2D(in_channels=input_channels, out_channels=output_channels, kernel_size=filter_size,
                               stride=stride, padding=padding, groups=groups, **_uniform_attrs(stdv))
        self._pool = nn.MaxPool2D(kernel_size=3, stride=2, padding=0)

    def forward(self, inputs):
        x = self._conv(inputs)
        if self.relu is not None:
            x = self.relu(x)
        return self._pool(x)


class AlexNet(nn.Layer):
    """AlexNet for 3x224x224 inputs; num_classes <= 0 drops the fully connected part."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.num_classes = num_classes
        self._conv1 = ConvPoolLayer(3, 64, 11, 4, 2, 1.0 / math.sqrt(3 * 11 * 11), act="relu")
        self._conv2 = ConvPoolLayer(64, 192, 5, 1, 2, 1.0 / math.sqrt(64 * 5 * 5), act="relu")
        self._conv3 = nn.Conv2D(192, 384, 3, stride=1, padding=1, **_uniform_attrs(1.0 / math.sqrt(192 * 3 * 3)))
        self._conv4 = nn.Conv2D(384, 256, 3, stride=1, padding=1, **_uniform_attrs(1.0 / math.sqrt(384 * 3 * 3)))
        self._conv5 = ConvPoolLayer(256, 256, 3, 1, 1, 1.0 / math.sqrt(256 * 3 * 3), act="relu")
        if self.num_classes > 0:
            # Paddle uses the same bound (from fc6's fan-in) for all three Linear layers.
            stdv = 1.0 / math.sqrt(256 * 6 * 6)
            self._drop1 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc6 = nn.Linear(in_features=256 * 6 * 6, out_features=4096, **_uniform_attrs(stdv))
            self._drop2 = nn.Dropout(p=0.5, mode="downscale_in_infer")
            self._fc7 = nn.Linear(in_features=4096, out_features=4096, **_uniform_attrs(stdv))
            self._fc8 = nn.Linear(in_features=4096, out_features=num_classes, **_uniform_attrs(stdv))

    def forward(self, inputs):
        x = self._conv1(inputs)
        x = self._conv2(x)
        x = F.relu(self._conv3(x))
        x = F.relu(self._conv4(x))
        x = self._conv5(x)
        if self.num_classes > 0:
            x = flatten(x, start_axis=1, stop_axis=-1)
            x = self._drop1(x)
            x = F.relu(self._fc6(x))
            x = self._drop2(x)
            x = F.relu(self._fc7(x))
            x = self._fc8(x)
        return x


def alexnet(pretrained=False, **kwargs):
    """AlexNet. kwargs: num_classes."""
    if pretrained:
        _no_pretrained("alexnet")
    return AlexNet(**kwargs)
