"""oar.distribution: log_prob/entropy/mean/variance/cdf/kl against float64 formulas written here with
numpy and math (no scipy) and against numerical integration of the density; sample moments and
empirical cdfs with fixed seeds; gradients through rsample and log_prob against finite differences;
transforms' log-det-Jacobians against numerical derivatives."""
import math

import numpy as np
import pytest

import oar
import oar.distribution as D
from _util import check_grad

F64 = "float64"
EULER = 0.5772156649015329
lgamma = np.vectorize(math.lgamma)


def T(a, dtype=F64):
    return oar.to_tensor(np.asarray(a, dtype=dtype))


def digamma(x):
    """psi(x) by recurrence up to x >= 10, then the asymptotic series (float64, |err| < 1e-13)."""
    x = np.asarray(x, dtype=np.float64).copy()
    acc = np.zeros_like(x)
    while np.any(x < 10):
        small = x < 10
        acc = acc - np.where(small, 1.0 / x, 0.0)
        x = np.where(small, x + 1, x)
    inv2 = 1.0 / (x * x)
    series = np.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return acc + series


def test_digamma_reference():
    # psi(1) = -gamma, psi(1/2) = -gamma - 2 log 2, psi(n+1) = psi(n) + 1/n
    np.testing.assert_allclose(digamma([1.0, 0.5, 5.0]), [-EULER, -EULER - 2 * math.log(2),
                                                          -EULER + 1 + 1 / 2 + 1 / 3 + 1 / 4], rtol=1e-12)


def close(t, want, rtol=1e-10, atol=1e-12):
    got = t.numpy() if isinstance(t, oar.Tensor) else np.asarray(t)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# ---- closed forms against float64 formulas --------------------------------------------------------
LOC = np.array([-1.0, 0.3, 2.0])
SCALE = np.array([0.5, 1.0, 2.5])
X = np.array([-0.7, 0.9, 4.0])


def test_normal_formulas():
    d = D.Normal(T(LOC), T(SCALE))
    assert d.batch_shape == (3,) and d.event_shape == ()
    close(d.log_prob(T(X)), np.log(np.exp(-(X - LOC) ** 2 / (2 * SCALE ** 2)) / (SCALE * np.sqrt(2 * np.pi))))
    close(d.prob(T(X)), np.exp(-(X - LOC) ** 2 / (2 * SCALE ** 2)) / (SCALE * np.sqrt(2 * np.pi)))
    close(d.entropy(), 0.5 * np.log(2 * np.pi * np.e * SCALE ** 2))
    close(d.mean, LOC)
    close(d.variance, SCALE ** 2)
    erf = np.vectorize(math.erf)
    close(d.cdf(T(X)), 0.5 * (1 + erf((X - LOC) / (SCALE * np.sqrt(2)))))
    close(d.icdf(d.cdf(T(X))), X, rtol=1e-8)


def test_uniform_formulas():
    lo, hi = np.array([0.0, -2.0, 1.0]), np.array([1.0, 3.0, 1.5])
    d = D.Uniform(T(lo), T(hi))
    x = np.array([0.5, 3.5, 1.0])  # inside, above, at the lower bound
    close(d.log_prob(T(x)), [0.0, -np.inf, -np.log(0.5)])
    close(d.prob(T(x)), [1.0, 0.0, 2.0])
    close(d.entropy(), np.log(hi - lo))
    close(d.mean, (lo + hi) / 2)
    close(d.variance, (hi - lo) ** 2 / 12)


def test_laplace_formulas():
    d = D.Laplace(T(LOC), T(SCALE))
    close(d.log_prob(T(X)), -np.log(2 * SCALE) - np.abs(X - LOC) / SCALE)
    close(d.entropy(), 1 + np.log(2 * SCALE))
    close(d.mean, LOC)
    close(d.variance, 2 * SCALE ** 2)
    close(d.stddev, np.sqrt(2) * SCALE)
    cdf = np.where(X < LOC, 0.5 * np.exp((X - LOC) / SCALE), 1 - 0.5 * np.exp(-(X - LOC) / SCALE))
    close(d.cdf(T(X)), cdf)
    close(d.icdf(T(cdf)), X, rtol=1e-9)


def test_cauchy_formulas():
    d = D.Cauchy(T(LOC), T(SCALE))
    close(d.log_prob(T(X)), -np.log(np.pi * SCALE * (1 + ((X - LOC) / SCALE) ** 2)))
    close(d.cdf(T(X)), np.arctan((X - LOC) / SCALE) / np.pi + 0.5)
    close(d.entropy(), np.log(4 * np.pi * SCALE))
    for prop in ("mean", "variance", "stddev"):
        with pytest.raises(ValueError, match="Cauchy"):
            getattr(d, prop)


def test_exponential_formulas():
    rate = np.array([0.5, 1.0, 3.0])
    x = np.array([0.2, 1.5, 0.01])
    d = D.Exponential(T(rate))
    close(d.log_prob(T(x)), np.log(rate * np.exp(-rate * x)))
    close(d.entropy(), 1 - np.log(rate))
    close(d.mean, 1 / rate)
    close(d.variance, 1 / rate ** 2)
    close(d.cdf(T(x)), 1 - np.exp(-rate * x))
    close(d.icdf(d.cdf(T(x))), x, rtol=1e-9)


def test_gamma_formulas():
    a, r = np.array([0.5, 2.0, 7.5]), np.array([1.0, 0.5, 3.0])
    x = np.array([0.3, 2.0, 2.2])
    d = D.Gamma(T(a), T(r))
    close(d.log_prob(T(x)), np.log(r ** a * x ** (a - 1) * np.exp(-r * x) / np.exp(lgamma(a))))
    close(d.entropy(), a - np.log(r) + lgamma(a) + (1 - a) * digamma(a), rtol=1e-9)
    close(d.mean, a / r)
    close(d.variance, a / r ** 2)


def test_beta_formulas():
    a, b = np.array([0.5, 2.0, 5.0]), np.array([0.7, 2.0, 1.5])
    x = np.array([0.1, 0.5, 0.8])
    d = D.Beta(T(a), T(b))
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    close(d.log_prob(T(x)), np.log(x ** (a - 1) * (1 - x) ** (b - 1) / np.exp(lbeta)))
    close(d.entropy(), lbeta - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b),
          rtol=1e-9)
    close(d.mean, a / (a + b))
    close(d.variance, a * b / ((a + b) ** 2 * (a + b + 1)))


def test_dirichlet_formulas():
    c = np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 1.5]])
    x = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    d = D.Dirichlet(T(c))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    c0 = c.sum(-1)
    lnorm = lgamma(c).sum(-1) - lgamma(c0)
    close(d.log_prob(T(x)), np.log(np.prod(x ** (c - 1), -1)) - lnorm)
    close(d.entropy(), lnorm + (c0 - 3) * digamma(c0) - ((c - 1) * digamma(c)).sum(-1), rtol=1e-9)
    close(d.mean, c / c0[:, None])
    close(d.variance, c * (c0[:, None] - c) / (c0[:, None] ** 2 * (c0[:, None] + 1)))
    # Dirichlet with two categories is Beta on its first coordinate (density of the pair on the simplex)
    b = D.Beta(T(c[:, 0]), T(c[:, 1]))
    d2 = D.Dirichlet(T(c[:, :2]))
    close(d2.log_prob(T(np.stack([x[:, 0], 1 - x[:, 0]], -1))), b.log_prob(T(x[:, 0])).numpy(), rtol=1e-9)
    close(d2.entropy(), b.entropy().numpy(), rtol=1e-9)


def test_lognormal_formulas():
    d = D.LogNormal(T(LOC), T(SCALE))
    y = np.exp(X) * 0.7
    close(d.log_prob(T(y)), -np.log(y * SCALE * np.sqrt(2 * np.pi)) - (np.log(y) - LOC) ** 2 / (2 * SCALE ** 2))
    close(d.mean, np.exp(LOC + SCALE ** 2 / 2))
    close(d.variance, (np.exp(SCALE ** 2) - 1) * np.exp(2 * LOC + SCALE ** 2))
    close(d.entropy(), LOC + 0.5 + 0.5 * np.log(2 * np.pi * SCALE ** 2))


def test_gumbel_formulas():
    d = D.Gumbel(T(LOC), T(SCALE))
    z = (X - LOC) / SCALE
    close(d.log_prob(T(X)), np.log(np.exp(-(z + np.exp(-z))) / SCALE))
    close(d.cdf(T(X)), np.exp(-np.exp(-z)))
    close(d.mean, LOC + EULER * SCALE)
    close(d.variance, np.pi ** 2 / 6 * SCALE ** 2)
    close(d.stddev, np.pi / np.sqrt(6) * SCALE)
    close(d.entropy(), np.log(SCALE) + 1 + EULER)


def test_bernoulli_formulas():
    p = np.array([0.1, 0.5, 0.8])
    d = D.Bernoulli(T(p))
    close(d.log_prob(T([1.0, 0.0, 0.0])), np.log([0.1, 0.5, 0.2]))
    close(d.prob(T([0.0, 1.0, 1.0])), [0.9, 0.5, 0.8])
    close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)))
    close(d.mean, p)
    close(d.variance, p * (1 - p))
    close(d.cdf(T([-0.5, 0.5, 1.0])), [0.0, 0.5, 1.0])


def test_categorical_follows_paddle():
    w = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 2.0, 1.0]])
    d = D.Categorical(T(w))
    assert d.batch_shape == (2,) and d.event_shape == ()
    # probs/log_prob read the input as unnormalised probabilities (Paddle 2.x)
    close(d.probs(T(np.array([[3], [0]]), "int64")), [[0.4], [0.125]])
    close(d.log_prob(T(np.array([1, 2]), "int64")), np.log(w[:, [1, 2]] / w.sum(-1, keepdims=True)))
    # entropy reads it as logits
    s = np.exp(w) / np.exp(w).sum(-1, keepdims=True)
    close(d.entropy(), -(s * np.log(s)).sum(-1))
    d1 = D.Categorical(T(w[0]))
    close(d1.probs(T(np.array([0, 3, 3]), "int64")), [0.1, 0.4, 0.4])


def test_geometric_formulas():
    p = np.array([0.2, 0.5, 0.9])
    k = np.array([0.0, 3.0, 2.0])
    d = D.Geometric(T(p))
    close(d.pmf(T(k)), (1 - p) ** k * p)
    close(d.log_pmf(T(k)), np.log((1 - p) ** k * p))
    close(d.cdf(T(k)), 1 - (1 - p) ** (k + 1))
    close(d.mean, (1 - p) / p)
    close(d.variance, (1 - p) / p ** 2)
    # entropy as the series -sum pmf log pmf
    ks = np.arange(0, 400)[:, None]
    pmf = (1 - p) ** ks * p
    close(d.entropy(), -np.where(pmf > 0, pmf * np.log(np.where(pmf > 0, pmf, 1)), 0).sum(0), rtol=1e-9)


def _multinomial_pmf(n, p, x):
    log_coef = math.lgamma(n + 1) - sum(math.lgamma(v + 1) for v in x)
    return math.exp(log_coef + sum(v * math.log(q) for v, q in zip(x, p)))


def test_multinomial_formulas():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    n = 4
    d = D.Multinomial(n, T(p * 3))  # normalised on construction
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = np.array([[1.0, 1.0, 2.0], [4.0, 0.0, 0.0]])
    close(d.log_prob(T(x)), [math.log(_multinomial_pmf(n, p[i], x[i])) for i in range(2)])
    # one value broadcast against the batch: the counts are summed after broadcasting
    close(d.log_prob(T(x[0])), [math.log(_multinomial_pmf(n, p[i], x[0])) for i in range(2)])
    close(d.mean, n * p)
    close(d.variance, n * p * (1 - p))
    # entropy by enumerating every outcome
    want = []
    for i in range(2):
        h = 0.0
        for a in range(n + 1):
            for b in range(n + 1 - a):
                q = _multinomial_pmf(n, p[i], [a, b, n - a - b])
                h -= q * math.log(q)
        want.append(h)
    close(d.entropy(), want, rtol=1e-9)
    # a zero-probability category that was never drawn contributes nothing
    z = D.Multinomial(3, T([0.5, 0.5, 0.0]))
    close(z.log_prob(T([2.0, 1.0, 0.0])), math.log(3 * 0.125))


# ---- densities integrate to what the closed forms say ------------------------------------------------
def _grid(lo, hi, n=400001):
    x = np.linspace(lo, hi, n)
    return x, x[1] - x[0]


def _trapz(y, dx):
    return float((y[1:] + y[:-1]).sum() * dx / 2)


CONTINUOUS = {
    "normal": (lambda: D.Normal(T(0.7), T(1.3)), (-12, 14)),
    "laplace": (lambda: D.Laplace(T(-0.4), T(0.8)), (-30, 30)),
    "gumbel": (lambda: D.Gumbel(T(1.0), T(2.0)), (-12, 70)),
    "exponential": (lambda: D.Exponential(T(1.7)), (0, 40)),
    "gamma": (lambda: D.Gamma(T(2.5), T(1.5)), (1e-12, 50)),
    "beta": (lambda: D.Beta(T(2.5), T(3.5)), (0, 1)),
    "lognormal": (lambda: D.LogNormal(T(-0.2), T(0.5)), (1e-12, 40)),
    "uniform": (lambda: D.Uniform(T(-1.0), T(2.0)), (-1, 2 - 1e-12)),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_density_moments_entropy_by_integration(name):
    make, (lo, hi) = CONTINUOUS[name]
    d = make()
    x, dx = _grid(lo, hi)
    with np.errstate(all="ignore"):
        lp = d.log_prob(T(x)).numpy()
        p = np.exp(lp)
        plogp = np.where(p > 0, p * lp, 0.0)
    assert abs(_trapz(p, dx) - 1) < 1e-6
    m = _trapz(x * p, dx)
    assert abs(m - float(d.mean.numpy())) < 1e-5
    assert abs(_trapz((x - m) ** 2 * p, dx) - float(d.variance.numpy())) < 1e-4
    assert abs(-_trapz(plogp, dx) - float(d.entropy().numpy())) < 1e-4


KL_PAIRS = {
    "normal": (lambda: D.Normal(T(0.3), T(0.8)), lambda: D.Normal(T(-0.5), T(1.4)), (-15, 15)),
    "laplace": (lambda: D.Laplace(T(0.3), T(0.8)), lambda: D.Laplace(T(-0.5), T(1.4)), (-40, 40)),
    "cauchy": (lambda: D.Cauchy(T(0.3), T(0.8)), lambda: D.Cauchy(T(-0.5), T(1.4)), None),
    "exponential": (lambda: D.Exponential(T(0.7)), lambda: D.Exponential(T(2.0)), (0, 80)),
    "gamma": (lambda: D.Gamma(T(2.5), T(1.5)), lambda: D.Gamma(T(1.5), T(0.7)), (1e-12, 60)),
    "beta": (lambda: D.Beta(T(2.5), T(3.5)), lambda: D.Beta(T(1.5), T(1.2)), (1e-9, 1 - 1e-9)),
    "lognormal": (lambda: D.LogNormal(T(0.1), T(0.5)), lambda: D.LogNormal(T(-0.3), T(0.9)), (1e-12, 40)),
    "uniform": (lambda: D.Uniform(T(0.0), T(1.0)), lambda: D.Uniform(T(-1.0), T(2.0)), (0, 1 - 1e-12)),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_by_integration(name):
    mp, mq, rng = KL_PAIRS[name]
    p, q = mp(), mq()
    kl = float(D.kl_divergence(p, q).numpy())
    if rng is None:  # Cauchy's tails: integrate in u = atan(x) over (-pi/2, pi/2)
        u, du = _grid(-np.pi / 2 + 1e-9, np.pi / 2 - 1e-9)
        x = np.tan(u)
        jac = 1 / np.cos(u) ** 2
    else:
        x, du = _grid(*rng)
        jac = 1.0
    lp, lq = p.log_prob(T(x)).numpy(), q.log_prob(T(x)).numpy()
    want = _trapz(np.exp(lp) * (lp - lq) * jac, du)
    assert abs(kl - want) < 1e-5, (kl, want)
    assert kl > 0.01  # a distinct pair: a KL of 0 would not test anything


def test_kl_discrete_by_summation():
    p, q = np.array([0.3, 0.6]), np.array([0.7, 0.2])
    close(D.kl_divergence(D.Bernoulli(T(p)), D.Bernoulli(T(q))),
          p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)))
    ks = np.arange(0, 3000)[:, None]
    logpp, logqq = ks * np.log1p(-p) + np.log(p), ks * np.log1p(-q) + np.log(q)
    close(D.kl_divergence(D.Geometric(T(p)), D.Geometric(T(q))), (np.exp(logpp) * (logpp - logqq)).sum(0),
          rtol=1e-9)
    a, b = np.array([[1.0, 2.0, 0.5]]), np.array([[0.0, 1.0, 3.0]])
    sa, sb = np.exp(a) / np.exp(a).sum(), np.exp(b) / np.exp(b).sum()
    close(D.kl_divergence(D.Categorical(T(a)), D.Categorical(T(b))), [[(sa * np.log(sa / sb)).sum()]])
    close(D.Categorical(T(a)).kl_divergence(D.Categorical(T(b))), [[(sa * np.log(sa / sb)).sum()]])


def test_kl_dirichlet_by_monte_carlo_identity():
    # KL(p||q) = E_p[log p - log q]; with the Beta special case checked exactly.
    a1, b1, a2, b2 = 2.5, 3.5, 1.5, 1.2
    dp, dq = D.Dirichlet(T([a1, b1])), D.Dirichlet(T([a2, b2]))
    close(D.kl_divergence(dp, dq), D.kl_divergence(D.Beta(T(a1), T(b1)), D.Beta(T(a2), T(b2))).numpy(),
          rtol=1e-9)


def test_kl_uniform_outside_support_is_inf():
    kl = D.kl_divergence(D.Uniform(T([0.0, 0.0]), T([1.0, 3.0])), D.Uniform(T([-1.0, 0.5]), T([2.0, 4.0])))
    close(kl, [np.log(3.0), np.inf])


def test_kl_expfamily_bregman_matches_closed_forms():
    # The generic exponential-family rule (autograd of the log normaliser) against the closed forms.
    kl_ef = D.kl._kl_expfamily_expfamily
    pairs = [(D.Beta(T([2.5, 0.7]), T([3.5, 1.1])), D.Beta(T([1.5, 2.0]), T([1.2, 0.4]))),
             (D.Gamma(T([2.5, 0.6]), T([1.5, 2.0])), D.Gamma(T([1.5, 3.0]), T([0.7, 1.0]))),
             (D.Exponential(T([0.7, 2.0])), D.Exponential(T([2.0, 0.3]))),
             (D.Dirichlet(T([[0.5, 1.0, 2.0]])), D.Dirichlet(T([[3.0, 4.0, 1.5]]))),
             (D.Bernoulli(T([0.3, 0.6])), D.Bernoulli(T([0.7, 0.2])))]
    for p, q in pairs:
        close(kl_ef(p, q), D.kl_divergence(p, q).numpy(), rtol=1e-8)
    for p in (pairs[0][0], pairs[1][0], pairs[2][0], pairs[3][0]):  # entropy through the same autograd path
        close(D.ExponentialFamily.entropy(p), p.entropy().numpy(), rtol=1e-8)


def test_register_kl_dispatch():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(T(0.0), T(1.0)), D.Normal(T(1.0), T(2.0))
    base = float(D.kl_divergence(p, q).numpy())  # the (Normal, Normal) rule applies to a subclass
    assert abs(base - (math.log(2) + (1 + 1) / 8 - 0.5)) < 1e-12

    @D.register_kl(MyNormal, D.Normal)
    def _kl(a, b):
        return oar.to_tensor(42.0)

    assert float(D.kl_divergence(p, q).numpy()) == 42.0
    assert abs(float(D.kl_divergence(q, D.Normal(T(0.0), T(1.0))).numpy()) - 0) > 0  # unaffected
    with pytest.raises(NotImplementedError, match="Normal"):
        D.kl_divergence(D.Normal(T(0.0), T(1.0)), D.Laplace(T(0.0), T(1.0)))
    with pytest.raises(TypeError, match="register_kl"):
        D.register_kl(int, D.Normal)
    with pytest.raises(TypeError, match="kl_divergence"):
        D.kl_divergence(1, 2)


# ---- sampling: moments and empirical cdfs with fixed seeds --------------------------------------------
N = 200000


def _moments_ok(s, mean, var, what):
    """The sample mean within 6 standard errors and the variance within 6 of its (normal-theory,
    kurtosis-padded) standard errors: a wrong parameterisation misses by far more."""
    s = np.asarray(s, dtype=np.float64)
    se = math.sqrt(var / s.size)
    assert abs(s.mean() - mean) < 6 * se, (what, s.mean(), mean)
    assert abs(s.var() - var) < 6 * var * math.sqrt(8.0 / s.size), (what, s.var(), var)


SAMPLED = {
    "normal": (lambda: D.Normal(T([0.7, -2.0]), T([1.3, 0.2])), "rsample"),
    "uniform": (lambda: D.Uniform(T([-1.0, 2.0]), T([2.0, 2.5])), "rsample"),
    "laplace": (lambda: D.Laplace(T([-0.4, 3.0]), T([0.8, 2.0])), "rsample"),
    "gumbel": (lambda: D.Gumbel(T([1.0, -1.0]), T([2.0, 0.5])), "rsample"),
    "exponential": (lambda: D.Exponential(T([1.7, 0.3])), "rsample"),
    "lognormal": (lambda: D.LogNormal(T([-0.2, 0.4]), T([0.5, 0.3])), "rsample"),
    "gamma": (lambda: D.Gamma(T([2.5, 0.4]), T([1.5, 2.0])), "rsample"),
    "beta": (lambda: D.Beta(T([2.5, 0.5]), T([3.5, 0.8])), "rsample"),
    "bernoulli": (lambda: D.Bernoulli(T([0.3, 0.85])), "sample"),
    "geometric": (lambda: D.Geometric(T([0.3, 0.85])), "sample"),
}


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_sample_moments(name):
    make, method = SAMPLED[name]
    d = make()
    oar.seed(2024)
    s = getattr(d, method)([N])
    assert s.shape == [N, 2]
    if method == "rsample":
        oar.seed(2024)
        np.testing.assert_array_equal(d.sample([N]).numpy(), s.numpy())  # one stream for both
    a = s.numpy()
    mean, var = d.mean.numpy(), d.variance.numpy()
    for j in range(2):
        _moments_ok(a[:, j], mean[j], var[j], (name, j))


def _ecdf_ok(s, cdf_fn, what):
    """Kolmogorov-Smirnov: sup |F_n - F| < 1.95 / sqrt(n) (a 0.1% level)."""
    s = np.sort(np.asarray(s, dtype=np.float64))
    n = s.size
    f = cdf_fn(s)
    dmax = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(0, n) / n))
    assert dmax < 1.95 / math.sqrt(n), (what, dmax)


def _gamma_cdf(a, x):
    """The regularised lower incomplete gamma P(a, x) by its series x^a e^-x sum x^n / Gamma(a+n+1)."""
    x = np.asarray(x, dtype=np.float64)
    n = np.arange(0, 400)[:, None]
    with np.errstate(divide="ignore"):
        lx = np.log(x)[None, :]
    terms = np.exp(a * lx - x[None, :] + n * lx - lgamma(a + n + 1))
    return np.where(x > 0, np.minimum(terms.sum(0), 1.0), 0.0)


def _beta_cdf(a, b, x):
    """The regularised incomplete beta I_x(a, b) by its power series (x <= 1/2; the symmetry
    I_x(a, b) = 1 - I_(1-x)(b, a) above)."""
    x = np.asarray(x, dtype=np.float64)

    def series(a, b, x):
        n = np.arange(0, 200)
        coef = np.concatenate([[1.0], np.cumprod((n[:-1] + 1 - b) / (n[:-1] + 1))])  # (1-b)_n / n!
        with np.errstate(divide="ignore"):
            lb = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
            pre = np.exp(a * np.log(x) - math.log(a) - lb)
        return pre * ((coef * a / (a + n))[:, None] * x[None, :] ** n[:, None]).sum(0)

    low = x <= 0.5
    out = np.empty_like(x)
    out[low] = series(a, b, x[low])
    out[~low] = 1 - series(b, a, 1 - x[~low])
    return np.clip(out, 0, 1)


def test_cdf_references():
    # P(1, x) = 1 - e^-x; I_x(1/2, 1/2) = 2/pi asin(sqrt x); I_x(2, 3) = 1 - (1-x)^4 - 4x(1-x)^3
    x = np.array([0.01, 0.3, 2.0, 9.0])
    np.testing.assert_allclose(_gamma_cdf(1.0, x), 1 - np.exp(-x), rtol=1e-12)
    u = np.array([0.001, 0.2, 0.5, 0.7, 0.999])
    np.testing.assert_allclose(_beta_cdf(0.5, 0.5, u), 2 / np.pi * np.arcsin(np.sqrt(u)), rtol=1e-10)
    np.testing.assert_allclose(_beta_cdf(2.0, 3.0, u), 1 - (1 - u) ** 4 - 4 * u * (1 - u) ** 3, rtol=1e-10)


def test_gamma_beta_dirichlet_empirical_cdf():
    oar.seed(7)
    for a, r in [(0.3, 1.0), (1.0, 2.0), (4.5, 0.5)]:
        s = D.Gamma(T(a), T(r)).sample([40000]).numpy()
        _ecdf_ok(s, lambda v: _gamma_cdf(a, r * v), ("gamma", a, r))
    for a, b in [(0.5, 0.5), (2.0, 5.0)]:
        s = D.Beta(T(a), T(b)).sample([40000]).numpy()
        _ecdf_ok(s, lambda v: _beta_cdf(a, b, v), ("beta", a, b))
    # a Dirichlet coordinate is Beta(c_i, c0 - c_i)
    c = np.array([0.7, 2.0, 3.3])
    s = D.Dirichlet(T(c)).sample([40000]).numpy()
    assert s.shape == (40000, 3)
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    for i in range(3):
        _ecdf_ok(s[:, i], lambda v: _beta_cdf(c[i], c.sum() - c[i], v), ("dirichlet", i))
    # float32 draws follow the same law
    s = D.Gamma(oar.to_tensor(0.3), oar.to_tensor(1.0)).sample([40000]).numpy()
    assert s.dtype == np.float32
    _ecdf_ok(s, lambda v: _gamma_cdf(0.3, v), ("gamma float32", 0.3))


def test_exact_cdf_samplers():
    oar.seed(11)
    for d, name in [(D.Cauchy(T(0.5), T(2.0)), "cauchy"), (D.Laplace(T(0.5), T(2.0)), "laplace"),
                    (D.Normal(T(0.5), T(2.0)), "normal"), (D.Gumbel(T(0.5), T(2.0)), "gumbel")]:
        s = d.sample([40000])
        _ecdf_ok(s.numpy(), lambda v: d.cdf(T(v)).numpy(), name)


def test_categorical_multinomial_sample_frequencies():
    oar.seed(5)
    w = np.array([[1.0, 0.0, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    d = D.Categorical(T(w))
    s = d.sample([50000])
    assert s.shape == [50000, 2] and s.dtype == oar.int64
    sm = np.exp(w) / np.exp(w).sum(-1, keepdims=True)  # sample reads the input as logits
    for b in range(2):
        freq = np.bincount(s.numpy()[:, b], minlength=4) / 50000
        np.testing.assert_allclose(freq, sm[b], atol=5 * math.sqrt(0.25 / 50000))
    p = np.array([0.1, 0.6, 0.3])
    m = D.Multinomial(10, T(p)).sample([20000, 2])
    assert m.shape == [20000, 2, 3]
    a = m.numpy().reshape(-1, 3)
    np.testing.assert_array_equal(a.sum(-1), 10)
    for i in range(3):
        _moments_ok(a[:, i], 10 * p[i], 10 * p[i] * (1 - p[i]), ("multinomial", i))


def test_seed_reproducible():
    d = D.Beta(T([2.0, 0.5]), T([1.0, 3.0]))
    oar.seed(99)
    a = d.sample([5]).numpy()
    b = d.sample([5]).numpy()
    oar.seed(99)
    np.testing.assert_array_equal(d.sample([5]).numpy(), a)
    assert not np.array_equal(a, b)


# ---- shapes ---------------------------------------------------------------------------------------
def test_batch_shape_broadcast_and_sample_shapes():
    d = D.Normal(T(np.zeros((3, 1))), T(np.ones(4)))
    assert d.batch_shape == (3, 4)
    assert d.sample([2, 5]).shape == [2, 5, 3, 4]
    assert d.rsample([]).shape == [3, 4]
    assert d.log_prob(T(np.zeros(4))).shape == [3, 4]
    n = D.Normal(0.0, 1.0)
    assert n.batch_shape == () and n.sample([7]).shape == [7] and n.dtype == oar.float32
    assert D.Normal(np.float64(0.0) + np.zeros(2), 1.0).dtype == oar.float64
    dd = D.Dirichlet(T(np.ones((2, 3, 4))))
    assert (dd.batch_shape, dd.event_shape) == ((2, 3), (4,))
    assert dd.sample([5]).shape == [5, 2, 3, 4]
    assert dd.log_prob(T(np.full((2, 3, 4), 0.25))).shape == [2, 3]
    ind = D.Independent(D.Normal(T(np.zeros((2, 3))), T(np.ones((2, 3)))), 1)
    assert (ind.batch_shape, ind.event_shape) == ((2,), (3,))
    x = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])
    close(ind.log_prob(T(x)), D.Normal(T(np.zeros((2, 3))), T(np.ones((2, 3)))).log_prob(T(x)).numpy().sum(-1))
    close(ind.entropy(), np.full(2, 3 * 0.5 * np.log(2 * np.pi * np.e)))
    assert ind.sample([4]).shape == [4, 2, 3]
    with pytest.raises(ValueError, match="reinterpreted_batch_rank"):
        D.Independent(D.Normal(T(np.zeros(2)), T(np.ones(2))), 2)


def test_bad_parameters():
    with pytest.raises(ValueError, match="Normal: the shapes"):
        D.Normal(T(np.zeros(3)), T(np.ones(2)))
    with pytest.raises(TypeError, match="Normal: loc"):
        D.Normal("a", 1.0)
    with pytest.raises(ValueError, match="Bernoulli: probs"):
        D.Bernoulli(T([0.5, 1.5]))
    with pytest.raises(ValueError, match="Geometric: probs"):
        D.Geometric(T([0.0]))
    with pytest.raises(ValueError, match="Multinomial: total_count"):
        D.Multinomial(0, T([0.5, 0.5]))
    with pytest.raises(ValueError, match="Dirichlet: concentration"):
        D.Dirichlet(T(1.0))
    for bad in (None, "ab", [1.5], [True]):
        with pytest.raises(TypeError, match="Normal.sample: shape"):
            D.Normal(0.0, 1.0).sample(bad)
    with pytest.raises(ValueError, match="Categorical.sample: shape"):
        D.Categorical(T([1.0, 2.0])).sample([-1])
    with pytest.raises(TypeError, match="Normal.log_prob: value"):
        D.Normal(0.0, 1.0).log_prob("x")
    with pytest.raises(ValueError, match="standard_gamma|concentration"):
        D.Gamma(T([-1.0]), T([1.0])).sample([2])


# ---- gradients ------------------------------------------------------------------------------------
def _reseeded(fn, seed=31):
    """fn with the same noise on every call, so finite differences see a smooth function."""
    def run(*a):
        oar.seed(seed)
        return fn(*a)
    return run


RSAMPLE_GRADS = {
    "normal": (lambda l, s: D.Normal(l, s).rsample([3]), [LOC, SCALE]),
    "uniform": (lambda l, h: D.Uniform(l, h).rsample([3]), [LOC, LOC + SCALE]),
    "laplace": (lambda l, s: D.Laplace(l, s).rsample([3]), [LOC, SCALE]),
    "cauchy": (lambda l, s: D.Cauchy(l, s).rsample([3]), [LOC, SCALE]),
    "gumbel": (lambda l, s: D.Gumbel(l, s).rsample([3]), [LOC, SCALE]),
    "lognormal": (lambda l, s: D.LogNormal(l, s).rsample([3]), [LOC, SCALE]),
    "exponential": (lambda r: D.Exponential(r).rsample([3]), [SCALE]),
    "bernoulli": (lambda p: D.Bernoulli(p).rsample([3], temperature=0.5), [np.array([0.2, 0.5, 0.7])]),
    "independent": (lambda l, s: D.Independent(D.Normal(l, s), 1).rsample([2]), [LOC, SCALE]),
    "transformed": (lambda l, s: D.TransformedDistribution(D.Normal(l, s), [D.TanhTransform()]).rsample([2]),
                    [LOC, SCALE]),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_GRADS))
def test_rsample_gradient(name):
    fn, args = RSAMPLE_GRADS[name]
    check_grad(_reseeded(fn), args, rtol=1e-6, atol=1e-8)


LOGPROB_GRADS = {
    "normal": (lambda l, s, x: D.Normal(l, s).log_prob(x), [LOC, SCALE, X]),
    "laplace": (lambda l, s, x: D.Laplace(l, s).log_prob(x), [LOC, SCALE, X + 0.1]),
    "cauchy": (lambda l, s, x: D.Cauchy(l, s).log_prob(x), [LOC, SCALE, X]),
    "gumbel": (lambda l, s, x: D.Gumbel(l, s).log_prob(x), [LOC, SCALE, X]),
    "lognormal": (lambda l, s, x: D.LogNormal(l, s).log_prob(x), [LOC, SCALE, np.exp(X)]),
    "exponential": (lambda r, x: D.Exponential(r).log_prob(x), [SCALE, np.abs(X)]),
    "gamma": (lambda a, r, x: D.Gamma(a, r).log_prob(x), [np.array([0.5, 2.0, 7.5]), SCALE, np.abs(X)]),
    "beta": (lambda a, b, x: D.Beta(a, b).log_prob(x), [np.array([0.5, 2.0, 5.0]), SCALE, np.array([0.1, 0.5, 0.8])]),
    "dirichlet": (lambda c, x: D.Dirichlet(c).log_prob(x), [np.array([[0.5, 1.0, 2.0]]), np.array([[0.2, 0.3, 0.5]])]),
    "bernoulli": (lambda p: D.Bernoulli(p).log_prob(T([1.0, 0.0, 1.0])), [np.array([0.2, 0.5, 0.7])]),
    "geometric": (lambda p: D.Geometric(p).log_pmf(T([0.0, 2.0, 5.0])), [np.array([0.2, 0.5, 0.7])]),
    "multinomial": (lambda p: D.Multinomial(4, p).log_prob(T([1.0, 1.0, 2.0])), [np.array([0.2, 0.3, 0.5])]),
    "categorical": (lambda w: D.Categorical(w).log_prob(T(np.array([1, 2]), "int64")), [np.array([1.0, 2.0, 3.0])]),
}


@pytest.mark.parametrize("name", sorted(LOGPROB_GRADS))
def test_log_prob_gradient(name):
    fn, args = LOGPROB_GRADS[name]
    check_grad(fn, args, rtol=1e-6, atol=1e-8)


ENTROPY_KL_GRADS = {
    "gamma entropy": (lambda a, r: D.Gamma(a, r).entropy(), [np.array([0.5, 2.0]), np.array([1.5, 0.3])]),
    "beta entropy": (lambda a, b: D.Beta(a, b).entropy(), [np.array([0.5, 2.0]), np.array([1.5, 0.3])]),
    "dirichlet entropy": (lambda c: D.Dirichlet(c).entropy(), [np.array([[0.5, 2.0, 1.5]])]),
    "categorical entropy": (lambda w: D.Categorical(w).entropy(), [np.array([1.0, -2.0, 0.5])]),
    "normal kl": (lambda a, b, c, d: D.kl_divergence(D.Normal(a, b), D.Normal(c, d)),
                  [LOC, SCALE, LOC[::-1].copy(), SCALE[::-1].copy()]),
    "beta kl": (lambda a, b, c, d: D.kl_divergence(D.Beta(a, b), D.Beta(c, d)),
                [SCALE, SCALE + 1, SCALE[::-1] + 0.5, SCALE * 2]),
    "gamma entropy generic": (lambda a, r: D.ExponentialFamily.entropy(D.Gamma(a, r)),
                              [np.array([0.5, 2.0]), np.array([1.5, 0.3])]),
    "bernoulli kl bregman": (lambda p, q: D.kl._kl_expfamily_expfamily(D.Bernoulli(p), D.Bernoulli(q)),
                             [np.array([0.3, 0.6]), np.array([0.7, 0.2])]),
}


@pytest.mark.parametrize("name", sorted(ENTROPY_KL_GRADS))
def test_entropy_kl_gradient(name):
    fn, args = ENTROPY_KL_GRADS[name]
    check_grad(fn, args, rtol=1e-6, atol=1e-8)


def test_gamma_implicit_reparameterisation_gradient():
    """dx/da of each draw against -(dP(a, x)/da) / p(x; a) with P's series differentiated numerically."""
    a_np = np.repeat([0.3, 1.0, 2.5, 10.0, 40.0], 8)
    a = oar.to_tensor(a_np, stop_gradient=False)
    oar.seed(17)
    x = D.Gamma(a, T(1.0)).rsample([])
    x.sum().backward()
    got, xs = a.grad.numpy(), x.numpy()
    h = 1e-6
    want = np.array([-(_gamma_cdf(ai + h, [xi])[0] - _gamma_cdf(ai - h, [xi])[0]) / (2 * h)
                     / math.exp((ai - 1) * math.log(xi) - xi - math.lgamma(ai)) for ai, xi in zip(a_np, xs)])
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _mean_ok(values, want, what):
    v = np.asarray(values, dtype=np.float64)
    se = v.std(0) / math.sqrt(v.shape[0])
    assert np.all(np.abs(v.mean(0) - want) < 6 * se + 1e-12), (what, v.mean(0), want, se)


def test_rsample_gradients_have_the_right_expectation():
    """E[d x / d theta] = d E[x] / d theta for the gamma-based rsamples (per-draw gradients through a
    sum over independent draws give each draw's own derivative)."""
    n = 100000
    oar.seed(23)
    av = oar.to_tensor(np.full(n, 2.5), stop_gradient=False)
    rv = oar.to_tensor(np.full(n, 1.5), stop_gradient=False)
    x = D.Gamma(av, rv).rsample([])
    ga, gr = oar.grad(x.sum(), [av, rv], retain_graph=True)
    (gsq,) = oar.grad((x * x).sum(), [av])
    # E[x] = a / r and E[x^2] = a (a + 1) / r^2
    _mean_ok(ga.numpy(), 1 / 1.5, "gamma dx/da")
    _mean_ok(gr.numpy(), -2.5 / 1.5 ** 2, "gamma dx/drate")
    _mean_ok(gsq.numpy(), (2 * 2.5 + 1) / 1.5 ** 2, "gamma dx^2/da")
    # Beta: E[x] = al / (al + be)
    al = oar.to_tensor(np.full(n, 2.0), stop_gradient=False)
    be = oar.to_tensor(np.full(n, 3.0), stop_gradient=False)
    D.Beta(al, be).rsample([]).sum().backward()
    _mean_ok(al.grad.numpy(), 3.0 / 25, "beta dx/dalpha")
    _mean_ok(be.grad.numpy(), -2.0 / 25, "beta dx/dbeta")
    # Dirichlet: E[x_0] = c_0 / c0, so dE[x_0]/dc_j = (delta_0j c0 - c_0) / c0^2
    c = oar.to_tensor(np.tile([1.5, 0.7, 2.8], (n, 1)), stop_gradient=False)
    D.Dirichlet(c).rsample([])[:, 0].sum().backward()
    c0 = 5.0
    _mean_ok(c.grad.numpy(), np.array([c0 - 1.5, -1.5, -1.5]) / c0 ** 2, "dirichlet dx0/dc")


def test_gamma_sample_has_no_gradient_and_matches_rsample():
    a = oar.to_tensor([2.0, 0.5], dtype=F64, stop_gradient=False)
    oar.seed(3)
    s = D.Gamma(a, T(1.0)).sample([4])
    assert s.stop_gradient
    oar.seed(3)
    np.testing.assert_array_equal(D.Gamma(a, T(1.0)).rsample([4]).numpy(), s.numpy())


# ---- transforms -----------------------------------------------------------------------------------
def _num_logdet(f, x, eps=1e-6):
    """log|det J| of f: R^k -> R^k at each row of x, by central differences."""
    out = []
    for row in x.reshape(-1, x.shape[-1]):
        k = row.size
        J = np.zeros((k, k))
        for j in range(k):
            e = np.zeros(k)
            e[j] = eps
            J[:, j] = (f(row + e) - f(row - e)) / (2 * eps)
        out.append(np.linalg.slogdet(J)[1])
    return np.array(out).reshape(x.shape[:-1])


ELEMENTWISE = {
    "exp": (lambda: D.ExpTransform(), np.array([-1.0, 0.2, 2.0])),
    "affine": (lambda: D.AffineTransform(T([1.0, -2.0, 0.5]), T([2.0, -0.5, 3.0])), np.array([-1.0, 0.2, 2.0])),
    "power": (lambda: D.PowerTransform(T([2.0, 0.5, 3.0])), np.array([0.5, 1.2, 2.0])),
    "sigmoid": (lambda: D.SigmoidTransform(), np.array([-3.0, 0.2, 4.0])),
    "tanh": (lambda: D.TanhTransform(), np.array([-3.0, 0.2, 5.0])),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_transforms(name):
    make, x = ELEMENTWISE[name]
    t = make()
    y = t.forward(T(x))
    close(t.inverse(y), x, rtol=1e-9)
    eps = 1e-6
    num = np.log(np.abs((t.forward(T(x + eps)).numpy() - t.forward(T(x - eps)).numpy()) / (2 * eps)))
    close(t.forward_log_det_jacobian(T(x)), num, rtol=1e-6, atol=1e-6)
    close(t.inverse_log_det_jacobian(y), -num, rtol=1e-6, atol=1e-6)
    close(t(T(x)), y.numpy())
    assert t.forward_shape((2, 3)) == (2, 3)
    check_grad(lambda v: t.forward_log_det_jacobian(v) + t.forward(v), [x], rtol=1e-6, atol=1e-8)


def test_stick_breaking_transform():
    t = D.StickBreakingTransform()
    x = np.array([[0.3, -1.2, 2.0], [0.0, 0.5, -0.5]])
    y = t.forward(T(x)).numpy()
    assert y.shape == (2, 4) and np.all(y > 0)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-12)
    close(t.inverse(T(y)), x, rtol=1e-9)

    def head(v):
        return t.forward(T(v[None])).numpy()[0, :3]

    close(t.forward_log_det_jacobian(T(x)), _num_logdet(head, x), rtol=1e-6)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)
    check_grad(lambda v: t.forward_log_det_jacobian(v), [x], rtol=1e-6, atol=1e-8)


def test_softmax_abs_reshape_stack_independent_chain():
    x = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    s = D.SoftmaxTransform().forward(T(x)).numpy()
    close(s, np.exp(x) / np.exp(x).sum(-1, keepdims=True))
    close(D.SoftmaxTransform().forward(D.SoftmaxTransform().inverse(T(s))), s)
    with pytest.raises(NotImplementedError, match="injective"):
        D.SoftmaxTransform().forward_log_det_jacobian(T(x))
    a = D.AbsTransform()
    close(a.forward(T([-2.0, 3.0])), [2.0, 3.0])
    neg, pos = a.inverse(T([2.0]))
    close(neg, [-2.0])
    close(pos, [2.0])
    r = D.ReshapeTransform((2, 3), (3, 2))
    close(r.forward(T(x)), x.reshape(3, 2))
    close(r.forward_log_det_jacobian(T(x)), np.array(0.0))
    assert r.forward_shape((4, 2, 3)) == (4, 3, 2)
    with pytest.raises(ValueError, match="ReshapeTransform"):
        D.ReshapeTransform((2, 3), (4,))
    st = D.StackTransform([D.ExpTransform(), D.TanhTransform()], axis=1)
    v = np.array([[0.5, 0.5], [1.0, -2.0]])
    close(st.forward(T(v)), np.stack([np.exp(v[:, 0]), np.tanh(v[:, 1])], 1))
    close(st.inverse(st.forward(T(v))), v, rtol=1e-9)
    close(st.forward_log_det_jacobian(T(v)), np.stack([v[:, 0], np.log(1 - np.tanh(v[:, 1]) ** 2)], 1), rtol=1e-9)
    with pytest.raises(ValueError, match="StackTransform"):
        st.forward(T(np.ones((2, 3))))
    it = D.IndependentTransform(D.ExpTransform(), 1)
    close(it.forward_log_det_jacobian(T(x)), x.sum(-1))
    ch = D.ChainTransform([D.AffineTransform(T(1.0), T(2.0)), D.ExpTransform()])
    close(ch.forward(T(x)), np.exp(1 + 2 * x))
    close(ch.inverse(ch.forward(T(x))), x, rtol=1e-9)
    close(ch.forward_log_det_jacobian(T(x)), np.log(2.0) + 1 + 2 * x)
    chain2 = D.ExpTransform()(D.AffineTransform(T(1.0), T(2.0)))
    assert isinstance(chain2, D.ChainTransform)
    with pytest.raises(TypeError, match="AffineTransform: loc"):
        D.AffineTransform(1.0, T(2.0))


def test_transformed_distribution_log_prob():
    base = D.Normal(T(np.array([0.2, -0.3])), T(np.array([0.7, 1.1])))
    td = D.TransformedDistribution(base, [D.AffineTransform(T(1.0), T(2.0)), D.ExpTransform()])
    y = np.array([1.5, 4.0])
    x = (np.log(y) - 1) / 2
    want = base.log_prob(T(x)).numpy() - np.log(2.0) - np.log(y)
    close(td.log_prob(T(y)), want)
    assert td.batch_shape == (2,) and td.event_shape == ()
    ln = D.LogNormal(T(np.array([0.2, -0.3])), T(np.array([0.7, 1.1])))
    close(D.TransformedDistribution(base, [D.ExpTransform()]).log_prob(T(y)), ln.log_prob(T(y)).numpy())
    # a transform that reads one axis as the event turns the base's batch axis into the event
    sb = D.TransformedDistribution(D.Normal(T(np.zeros(3)), T(np.ones(3))), [D.StickBreakingTransform()])
    assert sb.batch_shape == () and sb.event_shape == (4,)
    oar.seed(1)
    s = sb.sample([5])
    assert s.shape == [5, 4]
    xs = D.StickBreakingTransform().inverse(s).numpy()
    want = (-0.5 * xs ** 2 - 0.5 * np.log(2 * np.pi)).sum(-1) - D.StickBreakingTransform().forward_log_det_jacobian(
        T(xs)).numpy()
    close(sb.log_prob(s), want, rtol=1e-8)
    # transform(distribution) builds the same thing
    close(D.ExpTransform()(base).log_prob(T(y)), ln.log_prob(T(y)).numpy())


def test_float32_parameters_stay_float32():
    d = D.Normal(oar.to_tensor([0.0, 1.0]), oar.to_tensor([1.0, 2.0]))
    assert d.rsample([3]).dtype == oar.float32
    assert d.log_prob(oar.to_tensor([0.5, 0.5])).dtype == oar.float32
    g = D.Gamma(oar.to_tensor([2.0]), oar.to_tensor([1.0]))
    assert g.sample([4]).dtype == oar.float32
    np.testing.assert_allclose(D.Beta(oar.to_tensor(2.0), oar.to_tensor(3.0)).entropy().numpy(),
                               D.Beta(T(2.0), T(3.0)).entropy().numpy(), rtol=1e-5)


def test_on_every_device(device):
    """Parameters on a device keep every result there, and the numbers match the CPU's (the draws are
    counter-based, so the same seed gives the same samples on every device)."""
    def run(place):
        t = lambda a: oar.to_tensor(np.asarray(a, dtype="float32"), place=place)  # noqa: E731
        loc = oar.to_tensor(np.array([0.3, -1.0], dtype="float32"), place=place, stop_gradient=False)
        oar.seed(4)
        n = D.Normal(loc, t([1.0, 2.0]))
        s = n.rsample([3])
        s.sum().backward()
        td = D.TransformedDistribution(D.Normal(t(np.zeros(3)), t(np.ones(3))), [D.StickBreakingTransform()])
        outs = [s, loc.grad, n.log_prob(t([0.5, 0.5])), D.Gamma(t([2.0, 0.5]), t([1.0, 3.0])).sample([4]),
                D.Dirichlet(t([1.0, 2.0, 0.5])).sample([2]), D.Categorical(t([1.0, 2.0, 3.0])).sample([5]),
                D.Multinomial(4, t([0.2, 0.8])).sample([3]), td.log_prob(t([0.2, 0.3, 0.1, 0.4])),
                D.kl_divergence(D.Beta(t(2.0), t(3.0)), D.Beta(t(1.0), t(1.5)))]
        for o in outs:
            assert str(o.place) == str(outs[2].place)
        return [o.numpy() for o in outs]

    for got, want in zip(run(device), run("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_static_program():
    """Distributions and transforms build into a static program (no host reads while it is built) and
    give the eager numbers when it runs."""
    def build(p, x):
        return [D.Bernoulli(p).entropy(), D.Geometric(p).entropy(), D.Beta(p, p + 1).entropy(),
                D.ExponentialFamily.entropy(D.Beta(p, p + 1)), D.Normal(p, 1.0).log_prob(x),
                D.StickBreakingTransform().forward_log_det_jacobian(x), D.Categorical(x).entropy(),
                D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(p, 2.0))]

    pv, xv = np.array([0.3, 0.6], "float32"), np.array([1.0, 2.0], "float32")
    want = [t.numpy() for t in build(oar.to_tensor(pv), oar.to_tensor(xv))]
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            outs = build(oar.static.data("p", [2], "float32"), oar.static.data("x", [2], "float32"))
        exe = oar.static.Executor()
        exe.run(startup)
        got = exe.run(main, feed={"p": pv, "x": xv}, fetch_list=outs)
    finally:
        oar.disable_static()
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_user_subclass_with_paddle_helpers():
    class MyExponential(D.Distribution):
        def __init__(self, rate):
            if self._validate_args(rate):
                self.rate = rate
            else:
                [self.rate] = self._to_tensor(rate)
            super().__init__(self.rate.shape)

        def log_prob(self, value):
            value = self._check_values_dtype_in_probs(self.rate, value)
            return self.rate.log() - self.rate * value

    d = MyExponential([0.5, 2.0])
    assert d.batch_shape == (2,) and d.rate.dtype == oar.float32
    close(d.prob(np.array([1.0, 1.0])), np.array([0.5 * np.exp(-0.5), 2 * np.exp(-2.0)]), rtol=1e-6)
    close(d._probs_to_logits(T([0.25]), is_binary=True), [np.log(0.25 / 0.75)])
    close(d._logits_to_probs(T([0.0, np.log(3.0)])), [0.25, 0.75])
    with pytest.raises(NotImplementedError, match="MyExponential"):
        d.entropy()
    with pytest.raises(NotImplementedError, match="kl_divergence"):
        d.kl_divergence(d)
