"""The Distribution base class and the helpers every distribution shares (parameter conversion,
sample shapes, random draws on oar's generator)."""
import numbers

import numpy as np

from .. import _C
from ..tensor import random as _random
from ..tensor.creation import to_tensor as _to_tensor

_Tensor = _C.Tensor
_FLOATS = ("float32", "float64")


def _dtype_name(d):
    return str(d).replace("oar.", "").replace("paddle.", "")


def _as_param(name, what, v, dtype=None):
    """One parameter as a float tensor: Tensors keep a float32/float64 dtype (ints become float32, as
    Paddle), numbers and lists become `dtype` (float32 unless given), float64 arrays stay float64."""
    if isinstance(v, _Tensor):
        if _dtype_name(v.dtype) not in _FLOATS:
            v = v.astype("float32")
        return v
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, list, tuple, np.ndarray)):
        raise TypeError("{}: {} must be a float, list, tuple, numpy.ndarray or Tensor, got {}".format(
            name, what, type(v).__name__))
    a = np.asarray(v)
    if a.dtype == np.float64 and isinstance(v, np.ndarray):
        d = "float64"
    else:
        d = dtype or "float32"
    if a.dtype.kind not in "biuf":
        raise TypeError("{}: {} must hold real numbers, got dtype {}".format(name, what, a.dtype))
    return _to_tensor(a.astype(d))


def _params(name, **named):
    """Converts the named parameters and broadcasts them to one shape (the batch shape); all take the
    dtype of the widest float among them. Gradients flow back to Tensor parameters."""
    import oar
    ts = {}
    dtype = None
    for k, v in named.items():
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            dtype = "float64"
        if isinstance(v, _Tensor) and _dtype_name(v.dtype) == "float64":
            dtype = "float64"
    for k, v in named.items():
        t = _as_param(name, k, v, dtype)
        if dtype is not None and _dtype_name(t.dtype) != dtype:
            t = t.astype(dtype)
        ts[k] = t
    vals = list(ts.values())
    if len(vals) > 1:
        try:
            shape = list(np.broadcast_shapes(*[tuple(t.shape) for t in vals]))
        except ValueError:
            raise ValueError("{}: the shapes of {} do not broadcast: {}".format(
                name, ", ".join(ts), ", ".join(str(list(t.shape)) for t in vals)))
        vals = [t if list(t.shape) == shape else oar.broadcast_to(t, shape) for t in vals]
    return vals


def _value(name, value, like):
    """The `value` argument of log_prob/prob/cdf as a tensor of the parameters' dtype."""
    import oar
    if not isinstance(value, _Tensor):
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, list, tuple, np.ndarray)):
            raise TypeError("{}: value must be a number, list, numpy.ndarray or Tensor, got {}".format(
                name, type(value).__name__))
        return _to_tensor(np.asarray(value, dtype=_dtype_name(like.dtype)))
    if value.dtype != like.dtype:
        value = value.astype(like.dtype)
    return value


def _const(array, like):
    """A constant tensor of `like`'s dtype on `like`'s device."""
    return _to_tensor(np.asarray(array, dtype=_dtype_name(like.dtype)), place=like.place)


def _sample_shape(name, shape):
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        return [int(shape)]
    if isinstance(shape, _Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    ok = not isinstance(shape, (str, bytes))
    try:
        out = [int(v) for v in shape] if ok else None
        ok = ok and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) or
                        (isinstance(v, float) and v.is_integer()) for v in shape)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TypeError("{}: shape must be a sequence of ints, got {!r}".format(name, shape))
    if any(v < 0 for v in out):
        raise ValueError("{}: shape must hold sizes >= 0, got {}".format(name, out))
    return out


def _uniform(shape, like, low=0.0, high=1.0, seed=0):
    """U[low, high) of `like`'s dtype and place, from oar's global generator (oar.seed) unless a nonzero
    seed is given."""
    return _C._uniform(list(shape), float(low), float(high), like.dtype, int(seed), like.place)


def _normal(shape, like, seed=0):
    return _C._normal(list(shape), 0.0, 1.0, like.dtype, int(seed), like.place)


_ops = {}


def _standard_gamma(alpha):
    """Gamma(alpha, 1) draws (the core op standard_gamma), differentiable in alpha through implicit
    reparameterisation (its gradient op standard_gamma_grad)."""
    if "standard_gamma" not in _ops:
        _ops["standard_gamma"] = _C.Op("standard_gamma", "seed", "offset")
    return _ops["standard_gamma"](alpha, *_random._reserve(alpha.size))


def _tiny(dtype):
    return float(np.finfo(_dtype_name(dtype)).tiny)


def _eps(dtype):
    return float(np.finfo(_dtype_name(dtype)).eps)


def _sum_rightmost(value, n):
    return value.sum(list(range(-n, 0))) if n > 0 else value


class Distribution(object):
    """The base of every distribution: `batch_shape` (independent, differently parameterised
    distributions) and `event_shape` (the shape of one draw). A sample of `shape` has shape
    shape + batch_shape + event_shape."""

    def __init__(self, batch_shape=(), event_shape=()):
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        super().__init__()

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError("{} has no mean".format(type(self).__name__))

    @property
    def variance(self):
        raise NotImplementedError("{} has no variance".format(type(self).__name__))

    def sample(self, shape=()):
        raise NotImplementedError("{}.sample is not implemented".format(type(self).__name__))

    def rsample(self, shape=()):
        raise NotImplementedError("{} has no reparameterised sample (rsample)".format(type(self).__name__))

    def entropy(self):
        raise NotImplementedError("{}.entropy is not implemented".format(type(self).__name__))

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)

    def prob(self, value):
        return self.log_prob(value).exp()

    def log_prob(self, value):
        raise NotImplementedError("{}.log_prob is not implemented".format(type(self).__name__))

    def probs(self, value):
        """Deprecated name of prob (as Paddle)."""
        return self.prob(value)

    def _extend_shape(self, sample_shape):
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    # Paddle's helpers, which subclasses written for Paddle call.
    def _validate_args(self, *args):
        """True when every argument is a Tensor (then they are used as given)."""
        return all(isinstance(a, _Tensor) for a in args)

    def _to_tensor(self, *args):
        """Numbers, lists and arrays as tensors of one float dtype, broadcast together."""
        return tuple(_params(type(self).__name__, **{"arg{}".format(i): a for i, a in enumerate(args)}))

    def _check_values_dtype_in_probs(self, param, value):
        return _value("{}.log_prob".format(type(self).__name__), value, param)

    def _probs_to_logits(self, probs, is_binary=False):
        import oar
        eps = _eps(probs.dtype)
        if is_binary:
            p = probs.clip(eps, 1 - eps)
            return p.log() - oar.log1p(-p)
        return probs.clip(eps, 1.0).log()

    def _logits_to_probs(self, logits, is_binary=False):
        import oar.nn.functional as F
        return F.sigmoid(logits) if is_binary else F.softmax(logits, axis=-1)

    def _sample_no_grad(self, shape):
        import oar
        with oar.no_grad():
            return self.rsample(shape).detach()

    def __repr__(self):
        return "{}(batch_shape={}, event_shape={})".format(type(self).__name__, list(self.batch_shape),
                                                           list(self.event_shape))
