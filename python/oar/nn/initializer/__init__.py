"""oar.nn.initializer: parameter initializers (Paddle's paddle.nn.initializer).

An initializer is called on a parameter and fills it in place, drawing from oar's global random state
(oar.seed makes it reproducible). Fan-in/fan-out follow Paddle: a 2-D weight [in, out] (Linear) has
fan_in = shape[0], fan_out = shape[1]; an N-D weight [out, in, *k] (conv) has fan_in = in * prod(k),
fan_out = out * prod(k).
"""
import math

import numpy as np

from ... import _C
from ...autograd import no_grad

__all__ = ["Initializer", "Constant", "Normal", "TruncatedNormal", "Uniform", "XavierNormal", "XavierUniform",
           "KaimingNormal", "KaimingUniform", "Orthogonal", "Assign", "Bilinear", "Dirac", "set_global_initializer",
           "calculate_gain"]

_global = {"weight": None, "bias": None}


def set_global_initializer(weight_init, bias_init=None):
    """Initializers used by every parameter created afterwards whose ParamAttr names none (None resets)."""
    for v in (weight_init, bias_init):
        if v is not None and not isinstance(v, Initializer):
            raise TypeError("set_global_initializer: expected Initializer objects or None, got {!r}".format(v))
    _global["weight"] = weight_init
    _global["bias"] = bias_init


def _global_initializer(is_bias):
    return _global["bias" if is_bias else "weight"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for `nonlinearity` (as Paddle/PyTorch): relu sqrt(2), tanh 5/3, ..."""
    gains = {"sigmoid": 1.0, "linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0,
             "conv1d_transpose": 1.0, "conv2d_transpose": 1.0, "conv3d_transpose": 1.0, "tanh": 5.0 / 3,
             "relu": math.sqrt(2.0), "selu": 3.0 / 4}
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in gains:
        raise ValueError("calculate_gain: unsupported nonlinearity {!r}; expected one of {}".format(
            nonlinearity, sorted(list(gains) + ["leaky_relu"])))
    return gains[nonlinearity]


def _fans(shape):
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


def _work_dtype(p):
    # Half types draw in float32 and are cast, so their distribution is the same as float32's.
    return _C.float32 if p.dtype in (_C.float16, _C.bfloat16) else p.dtype


def _fill(p, value):
    with no_grad():
        p.set_value(value.astype(p.dtype) if value.dtype != p.dtype else value)
    return p


class Initializer:
    """Base class: subclasses implement _init(param) returning the new value as a Tensor."""

    def __call__(self, param, block=None):
        from ...tensor.creation import to_tensor  # noqa: F401  (keeps import order simple)
        if not isinstance(param, _C.Tensor):
            raise TypeError("{}: expected a Tensor to initialise, got {}".format(type(self).__name__,
                                                                                 type(param).__name__))
        return _fill(param, self._init(param))

    def _init(self, param):
        raise NotImplementedError

    def __repr__(self):
        fields = ", ".join("{}={!r}".format(k, v) for k, v in vars(self).items())
        return "{}({})".format(type(self).__name__, fields)


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def _init(self, p):
        from ...tensor.creation import full
        return full(p.shape, self.value, dtype=p.dtype)


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        if low > high:
            raise ValueError("Uniform: low ({}) must not exceed high ({})".format(low, high))
        self.low, self.high = float(low), float(high)

    def _init(self, p):
        from ...tensor.random import uniform
        return uniform(p.shape, dtype=_work_dtype(p), min=self.low, max=self.high)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        # A negative std is accepted, as in Paddle: mean + std * z, the same law as with |std|.
        self.mean, self.std = float(mean), float(std)

    def _init(self, p):
        from ...tensor.random import randn
        return randn(p.shape, dtype=_work_dtype(p)) * self.std + self.mean


class TruncatedNormal(Initializer):
    """Normal(mean, std) restricted to [a, b] (absolute bounds, as Paddle 2.5+), by inverse-CDF sampling."""

    def __init__(self, mean=0.0, std=1.0, a=-2.0, b=2.0, name=None):
        if std < 0 or a >= b:
            raise ValueError("TruncatedNormal: need std >= 0 and a < b, got std={}, a={}, b={}".format(std, a, b))
        self.mean, self.std, self.a, self.b = float(mean), float(std), float(a), float(b)

    def _init(self, p):
        from ...tensor.random import uniform
        from ...tensor.math import clip, erfinv
        if self.std == 0:
            return Constant(self.mean)._init(p)
        cdf = lambda x: 0.5 * (1 + math.erf((x - self.mean) / (self.std * math.sqrt(2))))  # noqa: E731
        lo, hi = cdf(self.a), cdf(self.b)
        u = uniform(p.shape, dtype=_C.float64, min=lo, max=hi)
        x = erfinv(u * 2 - 1) * (self.std * math.sqrt(2)) + self.mean
        return clip(x, self.a, self.b).astype(_work_dtype(p))


class _Xavier(Initializer):
    """Shared by XavierUniform / XavierNormal: explicit fans override the parameter's."""

    def __init__(self, fan_in=None, fan_out=None, name=None, gain=1.0):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _fan_sum(self, p):
        fi, fo = _fans(p.shape)
        fi = self.fan_in if self.fan_in is not None else fi
        fo = self.fan_out if self.fan_out is not None else fo
        return float(fi + fo)


class XavierUniform(_Xavier):
    def _init(self, p):
        limit = self.gain * math.sqrt(6.0 / self._fan_sum(p))
        return Uniform(-limit, limit)._init(p)


class XavierNormal(_Xavier):
    def _init(self, p):
        return Normal(0.0, self.gain * math.sqrt(2.0 / self._fan_sum(p)))._init(p)


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def _init(self, p):
        fi = self.fan_in if self.fan_in is not None else _fans(p.shape)[0]
        gain = calculate_gain(self.nonlinearity, self.negative_slope)
        return Normal(0.0, gain / math.sqrt(float(fi)))._init(p)


class KaimingUniform(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def _init(self, p):
        fi = self.fan_in if self.fan_in is not None else _fans(p.shape)[0]
        gain = calculate_gain(self.nonlinearity, self.negative_slope)
        limit = gain * math.sqrt(3.0 / float(fi))
        return Uniform(-limit, limit)._init(p)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix over the flattened trailing dims, scaled by `gain`."""

    def __init__(self, gain=1.0, name=None):
        self.gain = gain

    def _init(self, p):
        from ...tensor.random import randn
        from ...linalg import qr
        if len(p.shape) < 2:
            raise ValueError("Orthogonal: the parameter needs at least 2 dims, got shape {}".format(p.shape))
        rows = p.shape[0]
        cols = int(np.prod(p.shape[1:]))
        flat = randn([max(rows, cols), min(rows, cols)], dtype=_C.float64)
        q, r = qr(flat)
        # Sign correction makes the distribution uniform (Haar) over orthogonal matrices.
        q = q * r.diagonal().sign().unsqueeze(0)
        if rows < cols:
            q = q.t()
        return (q * self.gain).reshape(p.shape).astype(_work_dtype(p))


class Assign(Initializer):
    """Copies a given value (numpy array, list, scalar or Tensor) of the parameter's shape."""

    def __init__(self, value, name=None):
        self.value = value

    def _init(self, p):
        from ...tensor.creation import to_tensor
        v = self.value if isinstance(self.value, _C.Tensor) else to_tensor(np.asarray(self.value))
        if list(v.shape) != list(p.shape):
            raise ValueError("Assign: value shape {} does not match the parameter's shape {}".format(v.shape, p.shape))
        return v.astype(p.dtype)


class Bilinear(Initializer):
    """Bilinear-upsampling weights for a transposed conv [C_out, C_in, K, K] (Paddle's Bilinear)."""

    def _init(self, p):
        from ...tensor.creation import to_tensor
        shape = p.shape
        if len(shape) != 4 or shape[2] != shape[3]:
            raise ValueError("Bilinear: the parameter must be [C_out, C_in, K, K], got {}".format(shape))
        k = shape[3]
        f = math.ceil(k / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        ii = np.arange(k)
        w1 = 1 - np.abs(ii / f - c)
        w = np.broadcast_to(np.outer(w1, w1), shape).astype(np.float32)
        return to_tensor(np.ascontiguousarray(w))


class Dirac(Initializer):
    """Identity-preserving conv weights: out channel i copies in channel i (per group)."""

    def __init__(self, groups=1, name=None):
        self.groups = groups

    def _init(self, p):
        from ...tensor.creation import to_tensor
        shape = p.shape
        if len(shape) not in (3, 4, 5):
            raise ValueError("Dirac: the parameter must be 3-D to 5-D, got shape {}".format(shape))
        w = np.zeros(shape, np.float32)
        out_per_group = shape[0] // self.groups
        for g in range(self.groups):
            for i in range(min(out_per_group, shape[1])):
                idx = (g * out_per_group + i, i) + tuple(s // 2 for s in shape[2:])
                w[idx] = 1.0
        return to_tensor(w)
