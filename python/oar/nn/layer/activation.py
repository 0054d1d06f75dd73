"""Activation layers (Paddle's paddle.nn.layer.activation): each wraps one oar.nn.functional op."""
from ... import _C
from .. import functional as F
from ..initializer import Constant
from .layers import Layer

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardswish", "Hardsigmoid", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Maxout", "Mish", "PReLU", "ReLU", "ReLU6", "RReLU", "SELU", "Sigmoid",
           "Silu", "SiLU", "Softmax", "Softmax2D", "Softplus", "Softshrink", "Softsign", "Swish", "Tanh",
           "Tanhshrink", "ThresholdedReLU"]


def _name_str(name, lead=", "):
    return "{}name={}".format(lead, name) if name else ""


class _Simple(Layer):
    """An activation without arguments: forward is `_fn(x)`; repr shows only the name."""
    _fn = None

    def __init__(self, name=None):
        super().__init__()
        self._name = name

    def forward(self, x):
        return type(self)._fn(x)

    def extra_repr(self):
        return _name_str(self._name, "")


class ReLU(_Simple):
    """max(x, 0)."""
    _fn = staticmethod(F.relu)


class ReLU6(_Simple):
    """min(max(x, 0), 6)."""
    _fn = staticmethod(F.relu6)


class Sigmoid(_Simple):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Hardsigmoid(_Simple):
    """clip(x / 6 + 0.5, 0, 1) (Paddle's slope 0.1666667, offset 0.5)."""
    _fn = staticmethod(F.hardsigmoid)


class Tanh(_Simple):
    """tanh(x)."""
    _fn = staticmethod(F.tanh)


class Hardswish(_Simple):
    """x * relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardswish)


class Softsign(_Simple):
    """x / (1 + |x|)."""
    _fn = staticmethod(F.softsign)


class Swish(_Simple):
    """x * sigmoid(x)."""
    _fn = staticmethod(F.swish)


class Silu(_Simple):
    """x * sigmoid(x)."""
    _fn = staticmethod(F.silu)


SiLU = Silu


class Mish(_Simple):
    """x * tanh(softplus(x))."""
    _fn = staticmethod(F.mish)


class Tanhshrink(_Simple):
    """x - tanh(x)."""
    _fn = staticmethod(F.tanhshrink)


class LogSigmoid(_Simple):
    """log(sigmoid(x))."""
    _fn = staticmethod(F.log_sigmoid)


class CELU(Layer):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha=1.0, name=None):
        super().__init__()
        self._alpha = alpha
        self._name = name

    def forward(self, x):
        return F.celu(x, self._alpha)

    def extra_repr(self):
        return "alpha={}{}".format(self._alpha, _name_str(self._name))


class ELU(Layer):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, name=None):
        super().__init__()
        self._alpha = alpha
        self._name = name

    def forward(self, x):
        return F.elu(x, self._alpha)

    def extra_repr(self):
        return "alpha={}{}".format(self._alpha, _name_str(self._name))


class GLU(Layer):
    """a * sigmoid(b), a and b the halves of x along `axis`."""

    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis
        self._name = name

    def forward(self, x):
        return F.glu(x, self._axis)

    def extra_repr(self):
        return "axis={}{}".format(self._axis, _name_str(self._name))


class GELU(Layer):
    """x * Phi(x); approximate=True (or 'tanh') uses the tanh approximation."""

    def __init__(self, approximate=False, name=None):
        super().__init__()
        self._approximate = approximate
        self._name = name

    def forward(self, x):
        approx = self._approximate in (True, "tanh")
        return F.gelu(x, approx)

    def extra_repr(self):
        return "approximate={}{}".format(self._approximate, _name_str(self._name))


class Hardshrink(Layer):
    """x where |x| > threshold, else 0."""

    def __init__(self, threshold=0.5, name=None):
        super().__init__()
        self._threshold = threshold
        self._name = name

    def forward(self, x):
        return F.hardshrink(x, self._threshold)

    def extra_repr(self):
        return "threshold={}{}".format(self._threshold, _name_str(self._name))


class Softshrink(Layer):
    """x - threshold where x > threshold, x + threshold where x < -threshold, else 0."""

    def __init__(self, threshold=0.5, name=None):
        super().__init__()
        if threshold < 0:
            raise ValueError("Softshrink: threshold must be >= 0, got {}".format(threshold))
        self._threshold = threshold
        self._name = name

    def forward(self, x):
        return F.softshrink(x, self._threshold)

    def extra_repr(self):
        return "threshold={}{}".format(self._threshold, _name_str(self._name))


class Hardtanh(Layer):
    """clip(x, min, max)."""

    def __init__(self, min=-1.0, max=1.0, name=None):
        super().__init__()
        self._min = min
        self._max = max
        self._name = name

    def forward(self, x):
        return F.hardtanh(x, self._min, self._max)

    def extra_repr(self):
        return "min={}, max={}{}".format(self._min, self._max, _name_str(self._name))


class PReLU(Layer):
    """max(0, x) + weight * min(0, x) with a learned weight `_weight` of num_parameters elements (1, or one
    per channel), initialised to `init` (0.25)."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, data_format="NCHW", name=None):
        super().__init__()
        if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
            raise ValueError("PReLU: unsupported data_format {!r}".format(data_format))
        self._num_parameters = num_parameters
        self._init = init
        self._weight_attr = weight_attr
        self._name = name
        self._data_format = data_format
        self._dtype = _C.get_default_dtype()
        self._weight = self.create_parameter(attr=weight_attr, shape=[num_parameters], dtype=self._dtype,
                                             is_bias=False, default_initializer=Constant(init))

    def forward(self, x):
        return F.prelu(x, self._weight, data_format=self._data_format)

    def extra_repr(self):
        return "num_parameters={}, data_format={}, init={}, dtype={}{}".format(
            self._num_parameters, self._data_format, self._init, self._dtype, _name_str(self._name))


class RReLU(Layer):
    """Leaky relu with a random slope in U[lower, upper] while training, (lower + upper) / 2 in eval."""

    def __init__(self, lower=1.0 / 8.0, upper=1.0 / 3.0, name=None):
        super().__init__()
        if not 0 <= lower <= upper <= 1:
            raise ValueError("RReLU: expected 0 <= lower <= upper <= 1, got lower={} upper={}".format(lower, upper))
        self._lower = lower
        self._upper = upper
        self._name = name

    def forward(self, x):
        return F.rrelu(x, lower=self._lower, upper=self._upper, training=self.training)

    def extra_repr(self):
        return "lower={}, upper={}, training={}, dtype={}{}".format(self._lower, self._upper, self.training,
                                                                   self._dtype, _name_str(self._name))


class SELU(Layer):
    """scale * (x if x > 0 else alpha * (exp(x) - 1))."""

    def __init__(self, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
        super().__init__()
        self._scale = scale
        self._alpha = alpha
        self._name = name

    def forward(self, x):
        return F.selu(x, self._scale, self._alpha)

    def extra_repr(self):
        return "scale={:.16f}, alpha={:.16f}{}".format(self._scale, self._alpha, _name_str(self._name))


class LeakyReLU(Layer):
    """x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope=0.01, name=None):
        super().__init__()
        self._negative_slope = negative_slope
        self._name = name

    def forward(self, x):
        return F.leaky_relu(x, self._negative_slope)

    def extra_repr(self):
        return "negative_slope={}{}".format(self._negative_slope, _name_str(self._name))


class Softplus(Layer):
    """log(1 + exp(beta * x)) / beta, linear above `threshold`."""

    def __init__(self, beta=1, threshold=20, name=None):
        super().__init__()
        self._beta = beta
        self._threshold = threshold
        self._name = name

    def forward(self, x):
        return F.softplus(x, self._beta, self._threshold)

    def extra_repr(self):
        return "beta={}, threshold={}{}".format(self._beta, self._threshold, _name_str(self._name))


class ThresholdedReLU(Layer):
    """x where x > threshold, else `value`."""

    def __init__(self, threshold=1.0, value=0.0, name=None):
        super().__init__()
        self._threshold = threshold
        self._value = value
        self._name = name

    def forward(self, x):
        return F.thresholded_relu(x, self._threshold, self._value)

    def extra_repr(self):
        return "threshold={}, value={}{}".format(self._threshold, self._value, _name_str(self._name))


class Softmax(Layer):
    """softmax along `axis`."""

    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis
        self._name = name

    def forward(self, x):
        return F.softmax(x, self._axis)

    def extra_repr(self):
        return "axis={}{}".format(self._axis, _name_str(self._name))


class LogSoftmax(Layer):
    """log_softmax along `axis`."""

    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis
        self._name = name

    def forward(self, x):
        return F.log_softmax(x, self._axis)

    def extra_repr(self):
        return "axis={}{}".format(self._axis, _name_str(self._name))


class Maxout(Layer):
    """Max over `groups` consecutive channels along `axis`."""

    def __init__(self, groups, axis=1, name=None):
        super().__init__()
        self._groups = groups
        self._axis = axis
        self._name = name

    def forward(self, x):
        return F.maxout(x, self._groups, self._axis)

    def extra_repr(self):
        return "groups={}, axis={}{}".format(self._groups, self._axis, _name_str(self._name))


class Softmax2D(Layer):
    """softmax over the channel axis of a [C, H, W] or [N, C, H, W] input."""

    def __init__(self, name=None):
        super().__init__()
        self._name = name

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError("Softmax2D: requires a 3-D or 4-D input, got {}-D (shape {})".format(x.ndim, x.shape))
        return F.softmax(x, axis=-3)

    def extra_repr(self):
        return _name_str(self._name, "")
