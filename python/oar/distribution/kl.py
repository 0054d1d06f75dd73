"""kl_divergence(p, q) and register_kl: closed forms chosen by the classes of p and q (the most
specific registered pair wins); two members of one exponential family fall back to the Bregman
divergence of their log normaliser."""
import math
import warnings

from .distribution import Distribution, _sum_rightmost
from .exponential_family import ExponentialFamily, _differentiable

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(cls_p, cls_q):
    """Decorator: registers fn(p, q) as the KL divergence of instances of cls_p and cls_q."""
    if not (isinstance(cls_p, type) and issubclass(cls_p, Distribution)
            and isinstance(cls_q, type) and issubclass(cls_q, Distribution)):
        raise TypeError("register_kl: cls_p and cls_q must be subclasses of Distribution, got {!r} and {!r}".format(
            cls_p, cls_q))

    def decorator(f):
        _KL[cls_p, cls_q] = f
        return f

    return decorator


def _dispatch(cls_p, cls_q):
    matches = [(sp, sq) for sp, sq in _KL if issubclass(cls_p, sp) and issubclass(cls_q, sq)]
    if not matches:
        raise NotImplementedError("kl_divergence: no rule for ({}, {})".format(cls_p.__name__, cls_q.__name__))

    def rank(m, p_first):
        a, b = cls_p.__mro__.index(m[0]), cls_q.__mro__.index(m[1])
        return (a, b) if p_first else (b, a)

    left = min(matches, key=lambda m: rank(m, True))
    right = min(matches, key=lambda m: rank(m, False))
    if left != right:
        warnings.warn("kl_divergence: the rules for {} and {} are equally specific for ({}, {}); using {}".format(
            left, right, cls_p.__name__, cls_q.__name__, left))
    return _KL[left]


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], with the batch shape of p and q broadcast."""
    if not isinstance(p, Distribution) or not isinstance(q, Distribution):
        raise TypeError("kl_divergence: p and q must be Distributions, got {} and {}".format(
            type(p).__name__, type(q).__name__))
    return _dispatch(type(p), type(q))(p, q)


def _oar():
    import oar
    return oar


# The classes are imported here (not at the top) because their kl_divergence methods import this file.
from .continuous import Normal, Uniform, Laplace, Cauchy, Exponential, Gamma, Beta, Dirichlet, LogNormal  # noqa
from .discrete import Bernoulli, Categorical, Geometric  # noqa


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    ratio = (p.scale / q.scale).pow(2)
    t = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (ratio + t - 1 - ratio.log())


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p._base, q._base)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    o = _oar()
    kl = ((q.high - q.low) / (p.high - p.low)).log()
    inside = (q.low <= p.low) & (p.high <= q.high)
    return o.where(inside, kl, o.full_like(kl, math.inf))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    d = (p.loc - q.loc).abs()
    return (q.scale / p.scale).log() + d / q.scale + p.scale / q.scale * (-d / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    s = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (s / (4 * p.scale * q.scale)).log()


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    r = q.rate / p.rate
    return r - 1 - r.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    o = _oar()
    a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return ((a1 - a2) * o.digamma(a1) - o.lgamma(a1) + o.lgamma(a2) + a2 * (r1 / r2).log()
            + a1 * (r2 - r1) / r1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    o = _oar()
    a1, b1, a2, b2 = p.alpha, p.beta, q.alpha, q.beta
    lb = lambda a, b: o.lgamma(a) + o.lgamma(b) - o.lgamma(a + b)  # noqa: E731
    return (lb(a2, b2) - lb(a1, b1) + (a1 - a2) * o.digamma(a1) + (b1 - b2) * o.digamma(b1)
            + (a2 - a1 + b2 - b1) * o.digamma(a1 + b1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    o = _oar()
    c1, c2 = p.concentration, q.concentration
    s1 = c1.sum(-1)
    return (o.lgamma(s1) - o.lgamma(c2.sum(-1)) - (o.lgamma(c1) - o.lgamma(c2)).sum(-1)
            + ((c1 - c2) * (o.digamma(c1) - o.digamma(s1).unsqueeze(-1))).sum(-1))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    sp = _oar().nn.functional.softplus
    # log p = -softplus(-logit), log(1 - p) = -softplus(logit)
    return (p.probs * (sp(-q.logits) - sp(-p.logits)) + (1 - p.probs) * (sp(q.logits) - sp(p.logits)))


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    """Over softmax(logits), kept as a size-1 last axis (as Paddle 2.x)."""
    F = _oar().nn.functional
    lp = F.log_softmax(p.logits, axis=-1)
    lq = F.log_softmax(q.logits, axis=-1)
    return (lp.exp() * (lp - lq)).sum(-1, keepdim=True)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    """sum_k (1-p)^k p [log(p/q) + k log((1-p)/(1-q))] = log(p/q) + (1-p)/p log((1-p)/(1-q))."""
    o = _oar()
    a, b = p.probs, q.probs
    return (a / b).log() + (1 - a) / a * (o.log1p(-a) - o.log1p(-b))


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Bregman divergence of the log normaliser A: A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError("kl_divergence: no rule for ({}, {})".format(type(p).__name__, type(q).__name__))
    o = _oar()
    etas = _differentiable(p._natural_parameters)
    with o.enable_grad():  # also inside no_grad: the gradient is part of the value
        a_p = p._log_normalizer(*etas)
        grads = o.grad(a_p.sum(), etas, create_graph=True)
    kl = q._log_normalizer(*q._natural_parameters) - a_p
    for ep, eq, g in zip(etas, q._natural_parameters, grads):
        kl = kl - _sum_rightmost((eq - ep) * g, len(q.event_shape))
    return kl
