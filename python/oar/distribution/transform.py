"""Transforms y = f(x) with their log-abs-det-Jacobians, for TransformedDistribution. A transform's
_domain and _codomain (variable.py) say how many rightmost axes form one event on each side."""
import enum
import math
import numbers
import typing

import numpy as np

from .. import _C
from . import variable
from .distribution import _sum_rightmost, _const

__all__ = ["Transform", "AbsTransform", "AffineTransform", "ChainTransform", "ExpTransform",
           "IndependentTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform"]


def _oar():
    import oar
    return oar


def _F():
    import oar.nn.functional as F
    return F


def _broadcast_shape(*shapes):
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


class Type(enum.Enum):
    BIJECTION = "bijection"  # one-to-one and onto
    INJECTION = "injection"  # one-to-one
    SURJECTION = "surjection"  # onto
    OTHER = "other"

    @classmethod
    def is_injective(cls, _type):
        return _type in (cls.BIJECTION, cls.INJECTION)


def _need_tensor(what, name, v):
    if not isinstance(v, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(what, name, type(v).__name__))


class Transform(object):
    """Base class. Subclasses define _forward, _inverse and one of _forward_log_det_jacobian /
    _inverse_log_det_jacobian (the other is derived), plus _domain/_codomain and the shape maps when
    they change shapes. Calling a transform on a Distribution gives a TransformedDistribution, on a
    Transform a ChainTransform, on a Tensor its forward value."""
    _type = Type.INJECTION

    def __init__(self):
        super().__init__()

    @classmethod
    def _is_injective(cls):
        return Type.is_injective(cls._type)

    def __call__(self, input):
        from .distribution import Distribution
        from .transformed_distribution import TransformedDistribution
        if isinstance(input, Distribution):
            return TransformedDistribution(input, [self])
        if isinstance(input, Transform):
            return ChainTransform([self, input])
        return self.forward(input)

    def _check(self, method, arg, v, rank):
        _need_tensor("{}.{}".format(type(self).__name__, method), arg, v)
        if v.ndim < rank:
            raise ValueError("{}.{}: {} needs at least {} axes, got shape {}".format(
                type(self).__name__, method, arg, rank, list(v.shape)))

    def forward(self, x):
        self._check("forward", "x", x, self._domain.event_rank)
        return self._forward(x)

    def inverse(self, y):
        self._check("inverse", "y", y, self._codomain.event_rank)
        return self._inverse(y)

    def forward_log_det_jacobian(self, x):
        self._check("forward_log_det_jacobian", "x", x, self._domain.event_rank)
        if not self._is_injective():
            raise NotImplementedError("{}.forward_log_det_jacobian: the transform is not injective".format(
                type(self).__name__))
        return self._call_forward_log_det_jacobian(x)

    def inverse_log_det_jacobian(self, y):
        self._check("inverse_log_det_jacobian", "y", y, self._codomain.event_rank)
        return self._call_inverse_log_det_jacobian(y)

    def forward_shape(self, shape):
        if not isinstance(shape, typing.Sequence):
            raise TypeError("{}.forward_shape: shape must be a sequence of ints, got {}".format(
                type(self).__name__, type(shape).__name__))
        return self._forward_shape(tuple(shape))

    def inverse_shape(self, shape):
        if not isinstance(shape, typing.Sequence):
            raise TypeError("{}.inverse_shape: shape must be a sequence of ints, got {}".format(
                type(self).__name__, type(shape).__name__))
        return self._inverse_shape(tuple(shape))

    @property
    def _domain(self):
        return variable.real

    @property
    def _codomain(self):
        return variable.real

    def _forward(self, x):
        raise NotImplementedError("{}: forward is not implemented".format(type(self).__name__))

    def _inverse(self, y):
        raise NotImplementedError("{}: inverse is not implemented".format(type(self).__name__))

    def _call_forward_log_det_jacobian(self, x):
        if hasattr(self, "_forward_log_det_jacobian"):
            return self._forward_log_det_jacobian(x)
        if hasattr(self, "_inverse_log_det_jacobian"):
            return -self._inverse_log_det_jacobian(self.forward(x))
        raise NotImplementedError("{}: no log-det-Jacobian".format(type(self).__name__))

    def _call_inverse_log_det_jacobian(self, y):
        if hasattr(self, "_inverse_log_det_jacobian"):
            return self._inverse_log_det_jacobian(y)
        if hasattr(self, "_forward_log_det_jacobian"):
            return -self._forward_log_det_jacobian(self._inverse(y))
        raise NotImplementedError("{}: no log-det-Jacobian".format(type(self).__name__))

    def _forward_shape(self, shape):
        return shape

    def _inverse_shape(self, shape):
        return shape


class AbsTransform(Transform):
    """y = |x|. Not injective: inverse(y) is the pair (-y, y), each with log-det-Jacobian 0."""
    _type = Type.SURJECTION

    def _forward(self, x):
        return x.abs()

    def _inverse(self, y):
        return -y, y

    def _inverse_log_det_jacobian(self, y):
        zero = _const(0.0, y)
        return zero, zero

    @property
    def _codomain(self):
        return variable.positive


class AffineTransform(Transform):
    """y = loc + scale * x."""
    _type = Type.BIJECTION

    def __init__(self, loc, scale):
        _need_tensor("AffineTransform", "loc", loc)
        _need_tensor("AffineTransform", "scale", scale)
        self._loc, self._scale = loc, scale
        super().__init__()

    @property
    def loc(self):
        return self._loc

    @property
    def scale(self):
        return self._scale

    def _forward(self, x):
        return self._loc + self._scale * x

    def _inverse(self, y):
        return (y - self._loc) / self._scale

    def _forward_log_det_jacobian(self, x):
        return self._scale.abs().log() + _oar().zeros_like(x)

    def _forward_shape(self, shape):
        return _broadcast_shape(shape, self._loc.shape, self._scale.shape)

    def _inverse_shape(self, shape):
        return _broadcast_shape(shape, self._loc.shape, self._scale.shape)


class ChainTransform(Transform):
    """transforms[0], then transforms[1], ... The event rank grows to the largest any member needs."""

    def __init__(self, transforms):
        if not isinstance(transforms, typing.Sequence):
            raise TypeError("ChainTransform: transforms must be a sequence, got {}".format(type(transforms).__name__))
        if not all(isinstance(t, Transform) for t in transforms):
            raise TypeError("ChainTransform: every element of transforms must be a Transform")
        self.transforms = list(transforms)
        super().__init__()

    def _is_injective(self):
        return all(t._is_injective() for t in self.transforms)

    def _forward(self, x):
        for t in self.transforms:
            x = t.forward(x)
        return x

    def _inverse(self, y):
        for t in reversed(self.transforms):
            y = t.inverse(y)
        return y

    def _forward_log_det_jacobian(self, x):
        total = 0.0
        rank = self._domain.event_rank
        for t in self.transforms:
            total = total + _sum_rightmost(t.forward_log_det_jacobian(x), rank - t._domain.event_rank)
            x = t.forward(x)
            rank += t._codomain.event_rank - t._domain.event_rank
        return total

    def _forward_shape(self, shape):
        for t in self.transforms:
            shape = t.forward_shape(shape)
        return shape

    def _inverse_shape(self, shape):
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        return shape

    def _sum_rightmost(self, value, n):
        return _sum_rightmost(value, n)

    @property
    def _domain(self):
        if not self.transforms:
            return variable.real
        domain = self.transforms[0]._domain
        rank = self.transforms[-1]._codomain.event_rank
        for t in reversed(self.transforms):
            rank = max(rank - (t._codomain.event_rank - t._domain.event_rank), t._domain.event_rank)
        return variable.Independent(domain, rank - domain.event_rank)

    @property
    def _codomain(self):
        if not self.transforms:
            return variable.real
        codomain = self.transforms[-1]._codomain
        rank = self.transforms[0]._domain.event_rank
        for t in self.transforms:
            rank = max(rank + t._codomain.event_rank - t._domain.event_rank, t._codomain.event_rank)
        return variable.Independent(codomain, rank - codomain.event_rank)


class ExpTransform(Transform):
    """y = exp(x)."""
    _type = Type.BIJECTION

    def __init__(self):
        super().__init__()

    @property
    def _codomain(self):
        return variable.positive

    def _forward(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def _forward_log_det_jacobian(self, x):
        return x


class IndependentTransform(Transform):
    """`base` with its `reinterpreted_batch_rank` rightmost axes treated as one event: the
    log-det-Jacobian is summed over them."""

    def __init__(self, base, reinterpreted_batch_rank):
        if not isinstance(base, Transform):
            raise TypeError("IndependentTransform: base must be a Transform, got {}".format(type(base).__name__))
        if (isinstance(reinterpreted_batch_rank, bool) or not isinstance(reinterpreted_batch_rank, numbers.Integral)
                or reinterpreted_batch_rank <= 0):
            raise ValueError("IndependentTransform: reinterpreted_batch_rank must be an int > 0, got {!r}".format(
                reinterpreted_batch_rank))
        self._base = base
        self._reinterpreted_batch_rank = int(reinterpreted_batch_rank)
        super().__init__()

    def _is_injective(self):
        return self._base._is_injective()

    def _forward(self, x):
        return self._base.forward(x)

    def _inverse(self, y):
        return self._base.inverse(y)

    def _forward_log_det_jacobian(self, x):
        return _sum_rightmost(self._base.forward_log_det_jacobian(x), self._reinterpreted_batch_rank)

    def _forward_shape(self, shape):
        return self._base.forward_shape(shape)

    def _inverse_shape(self, shape):
        return self._base.inverse_shape(shape)

    @property
    def _domain(self):
        return variable.Independent(self._base._domain, self._reinterpreted_batch_rank)

    @property
    def _codomain(self):
        return variable.Independent(self._base._codomain, self._reinterpreted_batch_rank)


class PowerTransform(Transform):
    """y = x ** power on x > 0."""
    _type = Type.BIJECTION

    def __init__(self, power):
        _need_tensor("PowerTransform", "power", power)
        self._power = power
        super().__init__()

    @property
    def power(self):
        return self._power

    @property
    def _domain(self):
        return variable.positive

    @property
    def _codomain(self):
        return variable.positive

    def _forward(self, x):
        return x.pow(self._power)

    def _inverse(self, y):
        return y.pow(1 / self._power)

    def _forward_log_det_jacobian(self, x):
        return (self._power * x.pow(self._power - 1)).abs().log()

    def _forward_shape(self, shape):
        return _broadcast_shape(shape, self._power.shape)

    def _inverse_shape(self, shape):
        return _broadcast_shape(shape, self._power.shape)


class ReshapeTransform(Transform):
    """Reshapes the event from in_event_shape to out_event_shape (same number of elements)."""
    _type = Type.BIJECTION

    def __init__(self, in_event_shape, out_event_shape):
        if not isinstance(in_event_shape, typing.Sequence) or not isinstance(out_event_shape, typing.Sequence):
            raise TypeError("ReshapeTransform: in_event_shape and out_event_shape must be sequences of ints, "
                            "got {!r} and {!r}".format(in_event_shape, out_event_shape))
        n_in = int(math.prod(in_event_shape))
        n_out = int(math.prod(out_event_shape))
        if n_in != n_out:
            raise ValueError("ReshapeTransform: in_event_shape {} has {} elements but out_event_shape {} has {}".format(
                list(in_event_shape), n_in, list(out_event_shape), n_out))
        self._in_event_shape = tuple(in_event_shape)
        self._out_event_shape = tuple(out_event_shape)
        super().__init__()

    @property
    def in_event_shape(self):
        return self._in_event_shape

    @property
    def out_event_shape(self):
        return self._out_event_shape

    @property
    def _domain(self):
        return variable.Independent(variable.real, len(self._in_event_shape))

    @property
    def _codomain(self):
        return variable.Independent(variable.real, len(self._out_event_shape))

    def _forward(self, x):
        lead = list(x.shape)[:x.ndim - len(self._in_event_shape)]
        return x.reshape(lead + list(self._out_event_shape))

    def _inverse(self, y):
        lead = list(y.shape)[:y.ndim - len(self._out_event_shape)]
        return y.reshape(lead + list(self._in_event_shape))

    def _map_shape(self, method, shape, src, dst):
        n = len(src)
        if len(shape) < n or tuple(shape[len(shape) - n:]) != src:
            raise ValueError("ReshapeTransform.{}: shape {} does not end with the event shape {}".format(
                method, list(shape), list(src)))
        return tuple(shape[:len(shape) - n]) + dst

    def _forward_shape(self, shape):
        return self._map_shape("forward_shape", shape, self._in_event_shape, self._out_event_shape)

    def _inverse_shape(self, shape):
        return self._map_shape("inverse_shape", shape, self._out_event_shape, self._in_event_shape)

    def _forward_log_det_jacobian(self, x):
        return _const(np.zeros(list(x.shape)[:x.ndim - len(self._in_event_shape)]), x)


class SigmoidTransform(Transform):
    """y = 1 / (1 + exp(-x))."""

    @property
    def _codomain(self):
        return variable.unit_interval

    def _forward(self, x):
        return _F().sigmoid(x)

    def _inverse(self, y):
        return y.log() - _oar().log1p(-y)

    def _forward_log_det_jacobian(self, x):
        sp = _F().softplus
        return -sp(-x) - sp(x)


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis. Not injective (x + c gives the same y): inverse is log(y),
    one of the preimages, and there is no log-det-Jacobian."""
    _type = Type.OTHER

    @property
    def _domain(self):
        return variable.Independent(variable.real, 1)

    @property
    def _codomain(self):
        return variable.simplex

    def _forward(self, x):
        return _F().softmax(x, axis=-1)

    def _inverse(self, y):
        return y.log()

    def _forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("SoftmaxTransform.forward_shape: shape needs at least 1 axis, got []")
        return shape

    def _inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("SoftmaxTransform.inverse_shape: shape needs at least 1 axis, got []")
        return shape


class StackTransform(Transform):
    """transforms[i] applied to slice i along `axis`."""

    def __init__(self, transforms, axis=0):
        if not transforms or not isinstance(transforms, typing.Sequence):
            raise TypeError("StackTransform: transforms must be a non-empty sequence of Transforms, got {!r}".format(
                transforms))
        if not all(isinstance(t, Transform) for t in transforms):
            raise TypeError("StackTransform: every element of transforms must be a Transform")
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            raise TypeError("StackTransform: axis must be an int, got {!r}".format(axis))
        self._transforms = list(transforms)
        self._axis = int(axis)
        super().__init__()

    def _is_injective(self):
        return all(t._is_injective() for t in self._transforms)

    @property
    def transforms(self):
        return self._transforms

    @property
    def axis(self):
        return self._axis

    def _map(self, v, method):
        if not -v.ndim <= self._axis < v.ndim:
            raise ValueError("StackTransform: axis {} is out of range for shape {}".format(self._axis, list(v.shape)))
        if v.shape[self._axis] != len(self._transforms):
            raise ValueError("StackTransform: size {} along axis {} differs from the number of transforms ({})".format(
                v.shape[self._axis], self._axis, len(self._transforms)))
        o = _oar()
        parts = o.unbind(v, self._axis)
        return o.stack([getattr(t, method)(p) for p, t in zip(parts, self._transforms)], self._axis)

    def _forward(self, x):
        return self._map(x, "forward")

    def _inverse(self, y):
        return self._map(y, "inverse")

    def _forward_log_det_jacobian(self, x):
        return self._map(x, "forward_log_det_jacobian")

    @property
    def _domain(self):
        return variable.Stack([t._domain for t in self._transforms], self._axis)

    @property
    def _codomain(self):
        return variable.Stack([t._codomain for t in self._transforms], self._axis)


class StickBreakingTransform(Transform):
    """R^k -> the simplex in R^(k+1): z_i = sigmoid(x_i - log(k + 1 - i)) breaks off a fraction z_i of
    what remains of the stick."""
    _type = Type.BIJECTION

    def _offset_log(self, k, like):
        return _const(np.log(np.arange(k, 0, -1, dtype=np.float64)), like)  # log(k + 1 - i), i = 1..k

    def _forward(self, x):
        o = _oar()
        k = x.shape[-1]
        z = _F().sigmoid(x - self._offset_log(k, x))
        rest = o.cumprod(1 - z, dim=-1)  # the stick left after each break
        ones = _const(np.ones(list(x.shape[:-1]) + [1]), x)
        return o.concat([z, ones], -1) * o.concat([ones, rest], -1)

    def _inverse(self, y):
        o = _oar()
        k = y.shape[-1] - 1
        head = y[..., :k]
        left = 1 - o.cumsum(head, axis=-1)
        return head.log() - left.log() + self._offset_log(k, y)

    def _forward_log_det_jacobian(self, x):
        y = self._forward(x)
        k = x.shape[-1]
        t = x - self._offset_log(k, x)
        return (-t + _F().log_sigmoid(t) + y[..., :k].log()).sum(-1)

    def _forward_shape(self, shape):
        if not shape:
            raise ValueError("StickBreakingTransform.forward_shape: shape needs at least 1 axis, got []")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def _inverse_shape(self, shape):
        if not shape:
            raise ValueError("StickBreakingTransform.inverse_shape: shape needs at least 1 axis, got []")
        return tuple(shape[:-1]) + (shape[-1] - 1,)

    @property
    def _domain(self):
        return variable.Independent(variable.real, 1)

    @property
    def _codomain(self):
        return variable.simplex


class TanhTransform(Transform):
    """y = tanh(x)."""
    _type = Type.BIJECTION

    @property
    def _codomain(self):
        return variable.symmetric_unit_interval

    def _forward(self, x):
        return x.tanh()

    def _inverse(self, y):
        return _oar().atanh(y)

    def _forward_log_det_jacobian(self, x):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|
        return 2.0 * (math.log(2.0) - x - _F().softplus(-2.0 * x))
