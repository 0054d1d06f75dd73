"""Continuous distributions: Normal, Uniform, Laplace, Cauchy, Exponential, Gamma, Beta, Dirichlet,
LogNormal, Gumbel. Every formula is composed from oar's ops, so gradients reach Tensor parameters;
rsample is reparameterised (x = f(params, noise)) where the distribution allows it."""
import math

from .distribution import (Distribution, _params, _value, _sample_shape, _uniform, _normal,
                           _standard_gamma, _tiny, _eps)
from .exponential_family import ExponentialFamily
from .transformed_distribution import TransformedDistribution
from . import transform as _transform

_EULER = 0.57721566490153286061


def _oar():
    import oar
    return oar


def _lbeta_sum(c, axis=-1):
    """log B(c) = sum(lgamma(c)) - lgamma(sum(c)) over `axis`."""
    o = _oar()
    return o.lgamma(c).sum(axis) - o.lgamma(c.sum(axis))


class Normal(Distribution):
    """N(loc, scale^2)."""

    def __init__(self, loc, scale, name=None):
        self.name = name if name is not None else "Normal"
        self.loc, self.scale = _params("Normal", loc=loc, scale=scale)
        self.dtype = self.loc.dtype
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale.pow(2)

    @property
    def stddev(self):
        return self.scale

    def sample(self, shape=(), seed=0):
        shape = _sample_shape("Normal.sample", shape)
        o = _oar()
        with o.no_grad():
            out = (_normal(self._extend_shape(shape), self.loc, seed) * self.scale + self.loc).detach()
        return out

    def rsample(self, shape=()):
        shape = _sample_shape("Normal.rsample", shape)
        return self.loc + _normal(self._extend_shape(shape), self.loc) * self.scale

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def log_prob(self, value):
        value = _value("Normal.log_prob", value, self.loc)
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (2.0 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def probs(self, value):
        return self.prob(value)

    def cdf(self, value):
        value = _value("Normal.cdf", value, self.loc)
        return 0.5 * (1 + _oar().erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        value = _value("Normal.icdf", value, self.loc)
        return self.loc + self.scale * _oar().erfinv(2 * value - 1) * math.sqrt(2)

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)


class Uniform(Distribution):
    """U[low, high)."""

    def __init__(self, low, high, name=None):
        self.name = name if name is not None else "Uniform"
        self.low, self.high = _params("Uniform", low=low, high=high)
        self.dtype = self.low.dtype
        super().__init__(self.low.shape)

    @property
    def mean(self):
        return (self.low + self.high) / 2

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def sample(self, shape=(), seed=0):
        """seed 0 draws from oar's generator; another value gives a fixed draw (as Paddle)."""
        shape = _sample_shape("Uniform.sample", shape)
        o = _oar()
        with o.no_grad():
            return self._draw(shape, seed).detach()

    def rsample(self, shape=()):
        return self._draw(_sample_shape("Uniform.rsample", shape), 0)

    def _draw(self, shape, seed):
        u = _uniform(self._extend_shape(shape), self.low, 0.0, 1.0, seed)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = _value("Uniform.log_prob", value, self.low)
        inside = ((self.low <= value) & (value < self.high)).astype(self.dtype)
        return inside.log() - (self.high - self.low).log()

    def probs(self, value):
        return self.prob(value)

    def cdf(self, value):
        value = _value("Uniform.cdf", value, self.low)
        return ((value - self.low) / (self.high - self.low)).clip(0.0, 1.0)

    def entropy(self):
        return (self.high - self.low).log()


class Laplace(Distribution):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    def __init__(self, loc, scale):
        self.loc, self.scale = _params("Laplace", loc=loc, scale=scale)
        self.dtype = self.loc.dtype
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape):
        shape = _sample_shape("Laplace.rsample", shape)
        # u in (-1, 1): x = loc - scale * sign(u) * log(1 - |u|), the inverse cdf.
        u = _uniform(self._extend_shape(shape), self.loc, -1 + _eps(self.dtype), 1.0)
        return self.loc - self.scale * u.sign() * _oar().log1p(-u.abs())

    def log_prob(self, value):
        value = _value("Laplace.log_prob", value, self.loc)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def entropy(self):
        return 1 + (2 * self.scale).log()

    def cdf(self, value):
        value = _value("Laplace.cdf", value, self.loc)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * _oar().expm1(-z.abs() / self.scale)

    def icdf(self, value):
        value = _value("Laplace.icdf", value, self.loc)
        t = value - 0.5
        return self.loc - self.scale * t.sign() * _oar().log1p(-2 * t.abs())


class Cauchy(Distribution):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)). It has no mean or
    variance."""

    def __init__(self, loc, scale, name=None):
        self.name = name if name is not None else "Cauchy"
        self.loc, self.scale = _params("Cauchy", loc=loc, scale=scale)
        self.dtype = self.loc.dtype
        super().__init__(self.loc.shape)

    @property
    def mean(self):
        raise ValueError("Cauchy distribution has no mean.")

    @property
    def variance(self):
        raise ValueError("Cauchy distribution has no variance.")

    @property
    def stddev(self):
        raise ValueError("Cauchy distribution has no stddev.")

    def sample(self, shape, name=None):
        return self._sample_no_grad(shape)

    def rsample(self, shape, name=None):
        shape = _sample_shape("Cauchy.rsample", shape)
        u = _uniform(self._extend_shape(shape), self.loc, _tiny(self.dtype), 1.0)
        return self.loc + self.scale * _oar().tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        value = _value("Cauchy.log_prob", value, self.loc)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - _oar().log1p(z * z)

    def cdf(self, value):
        value = _value("Cauchy.cdf", value, self.loc)
        return _oar().atan((value - self.loc) / self.scale) / math.pi + 0.5

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Exponential(ExponentialFamily):
    """Exponential(rate): density rate exp(-rate x) on x >= 0 (Paddle 3.x's class)."""

    def __init__(self, rate):
        (self.rate,) = _params("Exponential", rate=rate)
        self.dtype = self.rate.dtype
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape=()):
        shape = _sample_shape("Exponential.rsample", shape)
        u = _uniform(self._extend_shape(shape), self.rate)
        return -_oar().log1p(-u) / self.rate

    def log_prob(self, value):
        value = _value("Exponential.log_prob", value, self.rate)
        return self.rate.log() - self.rate * value

    def entropy(self):
        return 1.0 - self.rate.log()

    def cdf(self, value):
        value = _value("Exponential.cdf", value, self.rate)
        return -_oar().expm1(-self.rate * value)

    def icdf(self, value):
        value = _value("Exponential.icdf", value, self.rate)
        return -_oar().log1p(-value) / self.rate

    @property
    def _natural_parameters(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -(-x).log()

    @property
    def _mean_carrier_measure(self):
        return 0.0


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^a x^(a-1) exp(-rate x) / Gamma(a) (Paddle 3.x's class).
    Draws come from the core op standard_gamma; rsample's gradient with respect to the concentration is
    the implicit reparameterisation one (dx/da = -(dF/da) / p at the drawn x)."""

    def __init__(self, concentration, rate):
        self.concentration, self.rate = _params("Gamma", concentration=concentration, rate=rate)
        self.dtype = self.rate.dtype
        super().__init__(self.rate.shape)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape=()):
        shape = _sample_shape("Gamma.rsample", shape)
        a = _oar().broadcast_to(self.concentration, list(self._extend_shape(shape)))
        return _standard_gamma(a) / self.rate

    def log_prob(self, value):
        value = _value("Gamma.log_prob", value, self.rate)
        a, r = self.concentration, self.rate
        return a * r.log() + (a - 1) * value.log() - r * value - _oar().lgamma(a)

    def entropy(self):
        o = _oar()
        a = self.concentration
        return a - self.rate.log() + o.lgamma(a) + (1.0 - a) * o.digamma(a)

    @property
    def _natural_parameters(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _oar().lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()

    @property
    def _mean_carrier_measure(self):
        return 0.0


class Beta(ExponentialFamily):
    """Beta(alpha, beta) on [0, 1]."""

    def __init__(self, alpha, beta):
        self.alpha, self.beta = _params("Beta", alpha=alpha, beta=beta)
        self.dtype = self.alpha.dtype
        super().__init__(self.alpha.shape)

    @property
    def mean(self):
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s.pow(2) * (s + 1))

    def prob(self, value):
        return self.log_prob(value).exp()

    def log_prob(self, value):
        value = _value("Beta.log_prob", value, self.alpha)
        o = _oar()
        a, b = self.alpha, self.beta
        lbeta = o.lgamma(a) + o.lgamma(b) - o.lgamma(a + b)
        return (a - 1) * value.log() + (b - 1) * o.log1p(-value) - lbeta

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape=()):
        """X / (X + Y) with X ~ Gamma(alpha), Y ~ Gamma(beta); differentiable through the gamma draws
        (Paddle 2.6 has no Beta.rsample)."""
        shape = _sample_shape("Beta.rsample", shape)
        o = _oar()
        full = list(self._extend_shape(shape))
        x = _standard_gamma(o.broadcast_to(self.alpha, full))
        y = _standard_gamma(o.broadcast_to(self.beta, full))
        return x / (x + y)

    def entropy(self):
        o = _oar()
        a, b = self.alpha, self.beta
        lbeta = o.lgamma(a) + o.lgamma(b) - o.lgamma(a + b)
        return (lbeta - (a - 1) * o.digamma(a) - (b - 1) * o.digamma(b) + (a + b - 2) * o.digamma(a + b))

    # eta = (alpha - 1, beta - 1) with T(x) = (log x, log(1 - x)), so the carrier measure is 1
    @property
    def _natural_parameters(self):
        return (self.alpha - 1, self.beta - 1)

    def _log_normalizer(self, x, y):
        o = _oar()
        return o.lgamma(x + 1) + o.lgamma(y + 1) - o.lgamma(x + y + 2)

    @property
    def _mean_carrier_measure(self):
        return 0.0


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): the last axis of concentration is the event (k >= 1 categories)."""

    def __init__(self, concentration):
        (c,) = _params("Dirichlet", concentration=concentration)
        if c.ndim < 1:
            raise ValueError("Dirichlet: concentration must be at least 1-D, got shape {}".format(list(c.shape)))
        self.concentration = c
        self.dtype = c.dtype
        super().__init__(c.shape[:-1], c.shape[-1:])

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def sample(self, shape=()):
        return self._sample_no_grad(shape)

    def rsample(self, shape=()):
        """Normalised Gamma(concentration) draws; differentiable through them (Paddle 2.6 has no
        Dirichlet.rsample)."""
        shape = _sample_shape("Dirichlet.rsample", shape)
        g = _standard_gamma(_oar().broadcast_to(self.concentration, list(self._extend_shape(shape))))
        return g / g.sum(-1, keepdim=True)

    def prob(self, value):
        return self.log_prob(value).exp()

    def log_prob(self, value):
        value = _value("Dirichlet.log_prob", value, self.concentration)
        c = self.concentration
        return ((c - 1) * value.log()).sum(-1) - _lbeta_sum(c)

    def entropy(self):
        o = _oar()
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return _lbeta_sum(c) + (c0 - k) * o.digamma(c0) - ((c - 1) * o.digamma(c)).sum(-1)

    # eta = concentration - 1 with T(x) = log x, so the carrier measure is 1
    @property
    def _natural_parameters(self):
        return (self.concentration - 1,)

    def _log_normalizer(self, x):
        return _lbeta_sum(x + 1)

    @property
    def _mean_carrier_measure(self):
        return 0.0


class LogNormal(TransformedDistribution):
    """exp(N(loc, scale^2))."""

    def __init__(self, loc, scale):
        self._base = Normal(loc=loc, scale=scale)
        self.loc, self.scale = self._base.loc, self._base.scale
        self.dtype = self.loc.dtype
        super().__init__(self._base, [_transform.ExpTransform()])

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return _oar().expm1(s2) * (2 * self.loc + s2).exp()

    def entropy(self):
        return self._base.entropy() + self.loc

    def probs(self, value):
        return self.prob(value)

    def kl_divergence(self, other):
        from .kl import kl_divergence
        return kl_divergence(self, other)


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): cdf exp(-exp(-(x - loc) / scale))."""

    def __init__(self, loc, scale):
        self.loc, self.scale = _params("Gumbel", loc=loc, scale=scale)
        self.dtype = self.loc.dtype
        o = _oar()
        base = Uniform(o.full_like(self.loc, _tiny(self.dtype)), o.full_like(self.loc, 1 - _eps(self.dtype)))
        super().__init__(base, [])

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def variance(self):
        return self.scale.pow(2) * math.pi ** 2 / 6

    @property
    def stddev(self):
        return self.variance.sqrt()

    def prob(self, value):
        return self.log_prob(value).exp()

    def log_prob(self, value):
        value = _value("Gumbel.log_prob", value, self.loc)
        z = (value - self.loc) / self.scale
        return -(z + (-z).exp()) - self.scale.log()

    def cdf(self, value):
        value = _value("Gumbel.cdf", value, self.loc)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def entropy(self):
        return self.scale.log() + 1 + _EULER

    def sample(self, shape):
        return self._sample_no_grad(shape)

    def rsample(self, shape):
        shape = _sample_shape("Gumbel.rsample", shape)
        u = _uniform(self._extend_shape(shape), self.loc, _tiny(self.dtype), 1.0)
        return self.loc - self.scale * (-u.log()).log()
