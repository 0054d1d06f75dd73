"""Discrete distributions: Bernoulli, Categorical, Geometric, Multinomial."""
import math
import numbers

import numpy as np

from .. import _C
from .distribution import (Distribution, _params, _value, _sample_shape, _uniform, _tiny, _eps, _to_tensor,
                           _const)
from .exponential_family import ExponentialFamily


def _oar():
    import oar
    return oar


def _clip_probs(p):
    eps = _eps(p.dtype)
    return p.clip(eps, 1 - eps)


def _check_unit(name, p):
    if not _oar().in_dynamic_mode():  # a static program's variable has no value yet (Paddle checks eagerly only)
        return
    a = p.numpy()
    if np.any(np.isnan(a)) or np.any(a < 0) or np.any(a > 1):
        raise ValueError("{}: probs must lie in [0, 1], got {}".format(name, a))


class Bernoulli(ExponentialFamily):
    """Bernoulli(probs): 1 with probability probs, else 0. probs is clipped to [eps, 1 - eps] so that
    logits and log_prob stay finite (as Paddle)."""

    def __init__(self, probs, name=None):
        self.name = name if name is not None else "Bernoulli"
        (p,) = _params("Bernoulli", probs=probs)
        _check_unit("Bernoulli", p)
        self.probs = _clip_probs(p)
        self.logits = self.probs.log() - _oar().log1p(-self.probs)
        self.dtype = self.probs.dtype
        super().__init__(batch_shape=self.probs.shape, event_shape=())

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, shape):
        shape = _sample_shape("Bernoulli.sample", shape)
        o = _oar()
        with o.no_grad():
            p = o.broadcast_to(self.probs, list(self._extend_shape(shape)))
            return o.bernoulli(p).detach()

    def rsample(self, shape, temperature=1.0):
        """The relaxed (Concrete / Gumbel-softmax) sample on the logit scale: (logits + log(u) -
        log(1 - u)) / temperature; sigmoid of it lies in (0, 1) and tends to a Bernoulli draw as the
        temperature falls (as Paddle)."""
        shape = _sample_shape("Bernoulli.rsample", shape)
        if not isinstance(temperature, numbers.Real) or not temperature > 0:
            raise ValueError("Bernoulli.rsample: temperature must be > 0, got {!r}".format(temperature))
        u = _uniform(self._extend_shape(shape), self.probs, _tiny(self.dtype), 1.0)
        return (self.logits + u.log() - _oar().log1p(-u)) / float(temperature)

    def cdf(self, value):
        value = _value("Bernoulli.cdf", value, self.probs)
        o = _oar()
        zero = o.zeros_like(value)
        one = o.ones_like(value)
        p = self.probs + zero
        return o.where(value < 0, zero, o.where(value < 1, 1 - p, one + 0 * p))

    def log_prob(self, value):
        value = _value("Bernoulli.log_prob", value, self.probs)
        softplus = _oar().nn.functional.softplus
        # value * log(p) + (1 - value) * log(1 - p) with log(p) = -softplus(-logits)
        return -(value * softplus(-self.logits) + (1 - value) * softplus(self.logits))

    def prob(self, value):
        return self.log_prob(value).exp()

    def entropy(self):
        softplus = _oar().nn.functional.softplus
        return self.probs * softplus(-self.logits) + (1 - self.probs) * softplus(self.logits)

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)

    @property
    def _natural_parameters(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        return _oar().nn.functional.softplus(x)

    @property
    def _mean_carrier_measure(self):
        return 0.0


class Categorical(Distribution):
    """Categorical(logits) over the last axis, as Paddle 2.x: sample, entropy and kl_divergence read
    the input as logits (softmax), while probs and log_prob read it as unnormalised probabilities
    (logits / sum(logits)), which is what Paddle 2.x's Categorical does."""

    def __init__(self, logits, name=None):
        self.name = name if name is not None else "Categorical"
        (self.logits,) = _params("Categorical", logits=logits)
        if self.logits.ndim < 1:
            raise ValueError("Categorical: logits must be at least 1-D, got shape []")
        self.dtype = self.logits.dtype
        self._prob = self.logits / self.logits.sum(-1, keepdim=True)
        super().__init__(self.logits.shape[:-1], ())

    def sample(self, shape):
        shape = _sample_shape("Categorical.sample", shape)
        o = _oar()
        n = int(np.prod(shape)) if shape else 1
        k = self.logits.shape[-1]
        with o.no_grad():
            p = o.nn.functional.softmax(self.logits.reshape([-1, k]), axis=-1)
            idx = o.multinomial(p, max(n, 1), True)  # [batch, n]
            return idx.transpose([1, 0]).reshape(list(shape) + list(self.batch_shape))

    def _gather(self, table, value):
        o = _oar()
        if value.dtype not in (o.int64, o.int32):
            value = value.astype("int64")
        if table.ndim == 1:
            return o.gather(table, value.reshape([-1])).reshape(value.shape)
        if value.ndim == 1:
            value = value.reshape([1] * (table.ndim - 1) + [-1])
        return o.take_along_axis(table, value, axis=-1)

    def probs(self, value):
        if not isinstance(value, _C.Tensor):
            value = _to_tensor(np.asarray(value, dtype="int64"))
        return self._gather(self._prob, value)

    def prob(self, value):
        return self.probs(value)

    def log_prob(self, value):
        return self.probs(value).log()

    def entropy(self):
        o = _oar()
        logp = o.nn.functional.log_softmax(self.logits, axis=-1)
        return -(logp.exp() * logp).sum(-1)

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)


class Geometric(Distribution):
    """Geometric(probs): the number of failures before the first success, k = 0, 1, 2, ...;
    pmf (1 - p)^k p."""

    def __init__(self, probs):
        if isinstance(probs, numbers.Real) and not isinstance(probs, bool):
            probs = float(probs)
        elif not isinstance(probs, _C.Tensor):
            raise TypeError("Geometric: probs must be a real number or Tensor, got {}".format(type(probs).__name__))
        (p,) = _params("Geometric", probs=probs)
        if _oar().in_dynamic_mode():
            a = p.numpy()
            if np.any(np.isnan(a)) or np.any(a <= 0) or np.any(a > 1):
                raise ValueError("Geometric: probs must lie in (0, 1], got {}".format(a))
        self.probs = p
        self.dtype = p.dtype
        super().__init__(p.shape)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _k(self, name, k):
        if isinstance(k, bool) or not isinstance(k, (numbers.Real, _C.Tensor)):
            raise TypeError("Geometric.{}: k must be a number or Tensor, got {}".format(name, type(k).__name__))
        return _value("Geometric." + name, k, self.probs)

    def pmf(self, k):
        k = self._k("pmf", k)
        return (1.0 - self.probs).pow(k) * self.probs

    def log_pmf(self, k):
        k = self._k("log_pmf", k)
        return k * _oar().log1p(-self.probs) + self.probs.log()

    def prob(self, value):
        return self.pmf(value)

    def log_prob(self, value):
        return self.log_pmf(value)

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape=()):
        shape = _sample_shape("Geometric.rsample", shape)
        u = _uniform(self._extend_shape(shape), self.probs, _tiny(self.dtype), 1.0)
        return (u.log() / _oar().log1p(-self.probs)).floor()

    def entropy(self):
        p = self.probs
        return -((1.0 - p) * _oar().log1p(-p) + p * p.log()) / p

    def cdf(self, k):
        k = self._k("cdf", k)
        return 1.0 - (1.0 - self.probs).pow(k + 1)

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)


class Multinomial(Distribution):
    """Multinomial(total_count, probs): counts of total_count draws over the last axis of probs
    (normalised to sum to 1)."""

    def __init__(self, total_count, probs):
        if isinstance(total_count, bool) or not isinstance(total_count, numbers.Integral) or total_count < 1:
            raise ValueError("Multinomial: total_count must be an int >= 1, got {!r}".format(total_count))
        (p,) = _params("Multinomial", probs=probs)
        if p.ndim < 1:
            raise ValueError("Multinomial: probs must be at least 1-D, got shape []")
        self.total_count = int(total_count)
        self.probs = p / p.sum(-1, keepdim=True)
        self.dtype = p.dtype
        super().__init__(p.shape[:-1], p.shape[-1:])

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def prob(self, value):
        return self.log_prob(value).exp()

    def log_prob(self, value):
        value = _value("Multinomial.log_prob", value, self.probs)
        o = _oar()
        logits, value = o.broadcast_tensors([self.probs.log(), value])  # value's counts sum after broadcasting
        # 0 * log(0) counts as 0: a category of probability 0 that was never drawn.
        term = o.where(value == 0, o.zeros_like(value * logits), value * logits)
        return o.lgamma(value.sum(-1) + 1) - o.lgamma(value + 1).sum(-1) + term.sum(-1)

    def sample(self, shape=()):
        shape = _sample_shape("Multinomial.sample", shape)
        o = _oar()
        k = self.probs.shape[-1]
        n = int(np.prod(shape)) if shape else 1
        with o.no_grad():
            idx = o.multinomial(self.probs.reshape([-1, k]), n * self.total_count, True)  # [batch, n*count]
            hot = o.nn.functional.one_hot(idx, k).astype(self.dtype)  # [batch, n*count, k]
            counts = hot.reshape([-1, n, self.total_count, k]).sum(2)  # [batch, n, k]
            counts = counts.transpose([1, 0, 2])
            return counts.reshape(list(shape) + list(self.batch_shape) + [k])

    def entropy(self):
        """-lgamma(n+1) - n sum p log p + sum_i E[lgamma(X_i + 1)], X_i ~ Binomial(n, p_i)."""
        o = _oar()
        n = self.total_count
        p = self.probs
        support = _const(np.arange(1, n + 1).reshape([-1] + [1] * p.ndim), p)
        logc = (math.lgamma(n + 1) - o.lgamma(support + 1) - o.lgamma(n - support + 1))
        q = (1 - p).clip(0.0, 1.0)
        logpmf = logc + support * o.log(p.clip(_tiny(self.dtype), 1.0)) + (n - support) * o.log(
            q.clip(_tiny(self.dtype), 1.0))
        # where p is 0 or 1 the pmf of x in 1..n is exactly 0 or (x == n)
        pmf = o.where(p == 0, o.zeros_like(logpmf), logpmf.exp())
        expected = (pmf * o.lgamma(support + 1)).sum([0, -1])
        plogp = o.where(p == 0, o.zeros_like(p), p * p.clip(_tiny(self.dtype), 1.0).log())
        return -math.lgamma(n + 1) - n * plogp.sum(-1) + expected
