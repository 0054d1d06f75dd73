"""The math op family (docs/ops_math.md): forward against numpy (or mpmath/math) on every device,
gradients against finite differences, error messages, and random-op reproducibility."""
import math

import numpy as np
import pytest

import oar
from _util import check, check_grad, raises_on


rng = np.random.default_rng(0)


def T(a, device, **kw):
    return oar.to_tensor(a, place=device, **kw)


# ---- unary ----------------------------------------------------------------------------------------
# name -> (numpy reference, input sampler)
UNARY = {
    "sinh": (np.sinh, lambda s: rng.uniform(-2, 2, s)),
    "cosh": (np.cosh, lambda s: rng.uniform(-2, 2, s)),
    "tan": (np.tan, lambda s: rng.uniform(-1.2, 1.2, s)),
    "asin": (np.arcsin, lambda s: rng.uniform(-0.9, 0.9, s)),
    "acos": (np.arccos, lambda s: rng.uniform(-0.9, 0.9, s)),
    "atan": (np.arctan, lambda s: rng.uniform(-3, 3, s)),
    "asinh": (np.arcsinh, lambda s: rng.uniform(-3, 3, s)),
    "acosh": (np.arccosh, lambda s: rng.uniform(1.2, 4, s)),
    "atanh": (np.arctanh, lambda s: rng.uniform(-0.9, 0.9, s)),
    "log2": (np.log2, lambda s: rng.uniform(0.1, 5, s)),
    "log10": (np.log10, lambda s: rng.uniform(0.1, 5, s)),
    "trunc": (np.trunc, lambda s: rng.uniform(-5, 5, s)),
    "lgamma": (np.vectorize(math.lgamma), lambda s: rng.uniform(0.1, 6, s)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_forward(name, dtype, device):
    ref, sample = UNARY[name]
    a = sample((3, 4)).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    check(getattr(oar, name)(T(a, device)), ref(a.astype(np.float64)), rtol=tol, atol=tol, dtype=oar.to_tensor(a).dtype)
    # non-contiguous input, and the Tensor method
    check(getattr(T(a, device).transpose([1, 0]), name)(), ref(a.T.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_half(name, device):
    ref, sample = UNARY[name]
    a = sample((5,)).astype(np.float32)
    for dt in ("float16", "bfloat16"):
        out = getattr(oar, name)(T(a, device).astype(dt))
        assert out.dtype == oar.to_tensor(a).astype(dt).dtype
        np.testing.assert_allclose(out.astype("float32").numpy(), ref(a.astype(np.float64)), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"trunc"}))
def test_unary_grad(name, device):
    a = UNARY[name][1]((2, 3))
    check_grad(getattr(oar, name), [a], device)


def test_trunc_int_and_grad(device):
    a = np.array([-3, 0, 7], dtype=np.int32)
    check(oar.trunc(T(a, device)), a, dtype=oar.int32)
    x = T(np.array([-1.5, 0.3, 2.7]), device, stop_gradient=False)
    oar.trunc(x).sum().backward()
    check(x.grad, np.zeros(3))


def test_digamma(device):
    import mpmath
    a = np.array([0.3, 1.0, 2.5, 7.0, 15.0, -0.5, -2.3])
    check(oar.digamma(T(a, device)), [float(mpmath.digamma(v)) for v in a], rtol=1e-12, atol=1e-12)
    assert np.isnan(oar.digamma(T(np.array([-2.0]), device)).numpy()[0])
    # lgamma's gradient is digamma
    check_grad(oar.lgamma, [np.array([0.7, 2.5, 11.0])], device)


def test_polygamma(device):
    import mpmath
    a = np.array([0.3, 1.0, 2.5, 7.0, 31.0, -0.5, -2.3])
    for n in (0, 1, 2, 3):
        ref = [float(mpmath.polygamma(n, v)) for v in a]
        check(oar.polygamma(T(a, device), n), ref, rtol=1e-10, atol=1e-10)
    check(oar.polygamma(T(a.astype(np.float32), device), 1), [float(mpmath.polygamma(1, v)) for v in a], rtol=1e-5)
    # digamma's gradient is polygamma(x, 1); polygamma's is polygamma(x, n + 1)
    check_grad(oar.digamma, [np.array([0.7, 2.5, 11.0, -0.4])], device)
    check_grad(lambda t: oar.polygamma(t, 2), [np.array([0.7, 2.5, 11.0])], device, rtol=1e-4)
    with pytest.raises(ValueError, match="polygamma"):
        oar.polygamma(T(a, device), -1)


def test_erfinv(device):
    import mpmath
    a = np.array([-0.999, -0.5, 0.0, 0.1, 0.9, 0.99999])
    check(oar.erfinv(T(a, device)), [float(mpmath.erfinv(v)) for v in a], rtol=1e-12, atol=1e-12)
    out = oar.erfinv(T(np.array([1.0, -1.0, 1.5]), device)).numpy()
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])
    check(oar.erfinv(T(a.astype(np.float32), device)), [float(mpmath.erfinv(v)) for v in a], rtol=1e-4, atol=1e-5)
    check_grad(oar.erfinv, [np.array([-0.7, 0.0, 0.4])], device)


def test_unary_int_is_type_error(device):
    with pytest.raises(TypeError, match="sinh"):
        oar.sinh(T(np.array([1, 2]), device))


COMPOSITE_UNARY = {
    "frac": (lambda a: a - np.trunc(a), lambda s: rng.uniform(-5, 5, s)),
    "deg2rad": (np.deg2rad, lambda s: rng.uniform(-180, 180, s)),
    "rad2deg": (np.rad2deg, lambda s: rng.uniform(-3, 3, s)),
    "logit": (lambda a: np.log(a / (1 - a)), lambda s: rng.uniform(0.1, 0.9, s)),
    "stanh": (lambda a: 1.7159 * np.tanh(0.67 * a), lambda s: rng.uniform(-3, 3, s)),
    "sgn": (np.sign, lambda s: rng.uniform(-3, 3, s)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITE_UNARY))
def test_composite_unary(name, device):
    ref, sample = COMPOSITE_UNARY[name]
    a = sample((3, 4))
    check(getattr(oar, name)(T(a, device)), ref(a), rtol=1e-12, atol=1e-12)
    if name not in ("sgn", "frac"):
        check_grad(getattr(oar, name), [sample((2, 3))], device)


def test_composite_unary_extras(device):
    a = np.array([0.0, 0.05, 0.5, 1.0])
    check(oar.logit(T(a, device), eps=0.1), np.log(np.clip(a, 0.1, 0.9) / (1 - np.clip(a, 0.1, 0.9))), rtol=1e-12)
    check(oar.deg2rad(T(np.array([180, 90]), device)), np.deg2rad([180.0, 90.0]), dtype=oar.float32)
    x = T(np.array([[1.0, -2.0]]), device)
    check(oar.scale(x, 2.0, 1.0), [[3.0, -3.0]])
    check(oar.scale(x, 2.0, 1.0, bias_after_scale=False), [[4.0, -2.0]])
    check(oar.scale(x, T(np.array([3.0]), device)), [[3.0, -6.0]])
    check_grad(lambda t: oar.scale(t, 1.5, 0.5), [np.array([0.3, -1.0])], device)


# ---- binary ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_atan2(dtype, device):
    x, y = rng.uniform(-2, 2, (3, 4)).astype(dtype), rng.uniform(-2, 2, (4,)).astype(dtype)
    check(oar.atan2(T(x, device), T(y, device)), np.arctan2(x, y), rtol=1e-6, dtype=oar.to_tensor(x).dtype)
    xi, yi = np.array([1, -1, 0]), np.array([2, 3, -1])
    check(oar.atan2(T(xi, device), T(yi, device)), np.arctan2(xi, yi), dtype=oar.float64)
    check_grad(oar.atan2, [rng.uniform(0.5, 2, (2, 3)), rng.uniform(0.5, 2, (3,))], device)


def test_atan2_float32_accuracy_and_special_values(device):
    # the float32 kernel has its own polynomial: all quadrants, both octants, tiny and huge ratios
    x = np.concatenate([rng.uniform(-10, 10, 2000), rng.uniform(-1e-30, 1e-30, 50), [1e30, -1e30, 3.0, -3.0]])
    y = np.concatenate([rng.uniform(-10, 10, 2000), rng.uniform(-1, 1, 50), [1e-30, 1e-30, -1e30, 1e30]])
    x, y = x.astype(np.float32), y.astype(np.float32)
    got = oar.atan2(T(x, device), T(y, device)).numpy()
    ref = np.arctan2(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=3e-7, atol=0)
    s = np.array([0.0, -0.0, 0.0, -0.0, np.inf, np.inf, -np.inf, 1.0, np.nan, 1.0, np.inf], dtype=np.float32)
    t = np.array([0.0, 0.0, -0.0, -0.0, np.inf, -np.inf, 1.0, np.inf, 1.0, np.nan, 2.0], dtype=np.float32)
    got = oar.atan2(T(s, device), T(t, device)).numpy()
    ref = np.arctan2(s, t)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-7)


def test_fmax_fmin(device):
    x = np.array([1.0, np.nan, 3.0, np.nan, 2.0])
    y = np.array([2.0, 1.0, np.nan, np.nan, 2.0])
    check(oar.fmax(T(x, device), T(y, device)), np.fmax(x, y))
    check(oar.fmin(T(x, device), T(y, device)), np.fmin(x, y))
    xi, yi = np.array([1, 5, -3], dtype=np.int32), np.array([[2], [-7]], dtype=np.int32)
    check(oar.fmax(T(xi, device), T(yi, device)), np.fmax(xi, yi), dtype=oar.int32)
    check(oar.fmin(T(xi, device), T(yi, device)), np.fmin(xi, yi))
    check(oar.fmax(T(x.astype(np.float16), device), T(y.astype(np.float16), device)), np.fmax(x, y))
    # gradient: to the larger, split on ties, to the other operand when one is NaN
    a = T(x, device, stop_gradient=False)
    b = T(y, device, stop_gradient=False)
    oar.fmax(a, b).sum().backward()
    check(a.grad, [0, 0, 1, 0, 0.5])
    check(b.grad, [1, 1, 0, 0, 0.5])
    check_grad(oar.fmax, [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))], device)
    check_grad(oar.fmin, [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (3,))], device)


def test_heaviside(device):
    x, y = np.array([-1.5, 0.0, 2.0, 0.0]), np.array([0.5, 0.25, 0.5, 0.75])
    check(oar.heaviside(T(x, device), T(y, device)), np.heaviside(x, y))
    a, b = T(x, device, stop_gradient=False), T(y, device, stop_gradient=False)
    oar.heaviside(a, b).sum().backward()
    check(a.grad, np.zeros(4))
    check(b.grad, [0, 1, 0, 1])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64"])
def test_bitwise(dtype, device):
    if dtype == "bool":
        x, y = rng.integers(0, 2, (3, 4)).astype(bool), rng.integers(0, 2, (4,)).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (3, 4), endpoint=True).astype(dtype)
        y = rng.integers(info.min, info.max, (4,), endpoint=True).astype(dtype)
    tx, ty = T(x, device), T(y, device)
    check(oar.bitwise_and(tx, ty), np.bitwise_and(x, y))
    check(oar.bitwise_or(tx, ty), np.bitwise_or(x, y))
    check(oar.bitwise_xor(tx, ty), np.bitwise_xor(x, y))
    check(oar.bitwise_not(tx), np.invert(x))
    check(tx.transpose([1, 0]).bitwise_not(), np.invert(x.T))


def test_bitwise_float_is_type_error(device):
    with pytest.raises(TypeError, match="bitwise_and"):
        oar.bitwise_and(T(np.array([1.0]), device), T(np.array([1.0]), device))
    with pytest.raises(TypeError, match="bitwise_not"):
        oar.bitwise_not(T(np.array([1.0]), device))


def test_gcd_lcm(device):
    x = np.array([12, -18, 0, 7, 0], dtype=np.int64)
    y = np.array([8, 12, 5, -3, 0], dtype=np.int64)
    check(oar.gcd(T(x, device), T(y, device)), np.gcd(x, y))
    check(oar.lcm(T(x, device), T(y, device)), np.lcm(x, y))
    check(oar.gcd(T(x.astype(np.int32), device), T(np.array([6], dtype=np.int32), device)), np.gcd(x, 6))
    with pytest.raises(TypeError, match="gcd"):
        oar.gcd(T(np.array([1.0]), device), T(np.array([2.0]), device))


def test_binary_composites(device):
    x, y = rng.uniform(-3, 3, (3, 4)), rng.uniform(-3, 3, (4,))
    check(oar.logaddexp(T(x, device), T(y, device)), np.logaddexp(x, y), rtol=1e-12)
    big = np.array([1000.0, -1000.0])
    check(oar.logaddexp(T(big, device), T(big, device)), np.logaddexp(big, big))
    check(oar.hypot(T(x, device), T(y, device)), np.hypot(x, y), rtol=1e-12)
    check(oar.hypot(T(np.array([1e200, 0.0]), device), T(np.array([1e200, 0.0]), device)), np.hypot([1e200, 0], [1e200, 0]))
    check(oar.add_n([T(x, device), T(x, device), T(x, device)]), 3 * x)
    w = rng.uniform(0, 1, (4,))
    check(oar.lerp(T(x, device), T(y, device), 0.3), x + 0.3 * (y - x), rtol=1e-12)
    check(oar.lerp(T(x, device), T(y, device), T(w, device)), x + w * (y - x), rtol=1e-12)
    check_grad(oar.logaddexp, [x[:2, :2], y[:2]], device)
    check_grad(oar.hypot, [rng.uniform(0.5, 2, (2, 2)), rng.uniform(0.5, 2, (2,))], device)
    check_grad(oar.lerp, [x[:2, :2], y[:2], w[:2]], device)
    check_grad(lambda a, b: oar.add_n([a, b, a]), [x[:2, :2], x[1:, 1:3]], device)


# ---- clip -----------------------------------------------------------------------------------------
def test_clip(device):
    a = rng.uniform(-3, 3, (3, 4))
    check(oar.clip(T(a, device), -1.0, 2.0), np.clip(a, -1, 2))
    check(oar.clip(T(a, device), min=0.5), np.clip(a, 0.5, None))
    check(oar.clip(T(a, device), max=0.5), np.clip(a, None, 0.5))
    check(oar.clip(T(a, device)), a)
    check(oar.clip(T(a, device), T(np.array([-0.5]), device), T(np.array([0.5]), device)), np.clip(a, -0.5, 0.5))
    check(T(a, device).transpose([1, 0]).clip(-1, 1), np.clip(a.T, -1, 1))
    ai = np.array([-5, 0, 3, 100], dtype=np.int32)
    check(oar.clip(T(ai, device), -2, 50), np.clip(ai, -2, 50), dtype=oar.int32)
    check(oar.clip(T(ai, device), min=1), np.clip(ai, 1, None), dtype=oar.int32)
    check(oar.clip(T(np.array([np.nan, 5.0]), device), 0, 1), [np.nan, 1.0])
    check(oar.clip(T(a.astype(np.float16), device), -1, 1), np.clip(a, -1, 1), rtol=1e-3, atol=1e-3)
    check_grad(lambda t: oar.clip(t, -1.0, 1.0), [np.array([-2.0, -0.5, 0.3, 1.7])], device)


def test_clip_errors(device):
    with pytest.raises(ValueError, match="clip"):
        oar.clip(T(np.array([1.0]), device), 2.0, 1.0)
    with pytest.raises(TypeError, match="clip"):
        oar.clip(T(np.array([True]), device), 0, 1)


# ---- scans ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_cumsum(dtype, device):
    a = (rng.uniform(-3, 3, (3, 4, 5)) * (1 if dtype.startswith("float") else 10)).astype(dtype)
    t = T(a, device)
    for axis in (0, 1, 2, -1):
        check(oar.cumsum(t, axis), np.cumsum(a, axis), rtol=1e-5, atol=1e-5, dtype=t.dtype)
    check(oar.cumsum(t), np.cumsum(a), rtol=1e-5, atol=1e-5)
    check(t.transpose([2, 0, 1]).cumsum(1), np.cumsum(a.transpose(2, 0, 1), 1), rtol=1e-5, atol=1e-5)
    check(oar.cumsum(t, 1, dtype="float64"), np.cumsum(a.astype(np.float64), 1), rtol=1e-12, dtype=oar.float64)


def test_cumsum_long_and_bool(device):
    a = rng.uniform(-1, 1, 300000)  # long enough for the parallel scan
    check(oar.cumsum(T(a, device)), np.cumsum(a), rtol=1e-9, atol=1e-9)
    check(oar.cumsum(T(a, device), 0), np.cumsum(a), rtol=1e-9, atol=1e-9)
    b = rng.integers(0, 2, (4, 3)).astype(bool)
    check(oar.cumsum(T(b, device), 0), np.cumsum(b, 0), dtype=oar.int64)
    check(oar.cumsum(T(np.zeros((0, 3)), device), 0), np.zeros((0, 3)))
    check(oar.cumsum(T(np.array(2.5), device)), np.array([2.5]))


def test_cumsum_grad(device):
    check_grad(lambda t: oar.cumsum(t, 1), [rng.uniform(-1, 1, (2, 3, 2))], device)
    check_grad(lambda t: oar.cumsum(t, 0), [rng.uniform(-1, 1, (3, 2))], device)
    check_grad(lambda t: oar.cumsum(t), [rng.uniform(-1, 1, (2, 3))], device)
    # second order: the gradient rule is itself differentiable
    x = T(rng.uniform(-1, 1, (4,)), device, stop_gradient=False)
    y = (oar.cumsum(x, 0) ** 2).sum()
    (g,) = oar.grad(y, x, create_graph=True)
    g.sum().backward()
    assert x.grad is not None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cumprod(dtype, device):
    a = rng.uniform(0.5, 1.5, (3, 4)).astype(dtype) if dtype != "int64" else rng.integers(-3, 4, (3, 4))
    t = T(a, device)
    for dim in (0, 1, -1):
        check(oar.cumprod(t, dim), np.cumprod(a, dim), rtol=1e-5, dtype=t.dtype)
    check(oar.cumprod(t), np.cumprod(a), rtol=1e-5)
    check(t.transpose([1, 0]).cumprod(1), np.cumprod(a.T, 1), rtol=1e-5)


def test_cumprod_grad(device):
    check_grad(lambda t: oar.cumprod(t, 1), [rng.uniform(0.5, 1.5, (2, 3)) * np.array([1, -1, 1])], device)
    check_grad(lambda t: oar.cumprod(t, 0), [rng.uniform(0.5, 1.5, (3, 2))], device)
    check_grad(lambda t: oar.cumprod(t), [rng.uniform(0.5, 1.5, (2, 2))], device)


def test_logcumsumexp(device):
    a = rng.uniform(-3, 3, (3, 4))
    ref = lambda v, ax: np.logaddexp.accumulate(v, ax)  # noqa: E731
    for axis in (0, 1, -1):
        check(oar.logcumsumexp(T(a, device), axis), ref(a, axis), rtol=1e-12)
    check(oar.logcumsumexp(T(a, device)), ref(a.reshape(-1), 0), rtol=1e-12)
    check(T(a, device).transpose([1, 0]).logcumsumexp(1), ref(a.T, 1), rtol=1e-12)
    big = np.array([1000.0, 1000.0, -np.inf, -1000.0])
    check(oar.logcumsumexp(T(big, device), 0), ref(big, 0))
    check(oar.logcumsumexp(T(np.array([-np.inf, -np.inf, 0.0]), device), 0), [-np.inf, -np.inf, 0.0])
    check(oar.logcumsumexp(T(a.astype(np.float32), device), 1), ref(a, 1), rtol=1e-5)
    check_grad(lambda t: oar.logcumsumexp(t, 1), [a[:2]], device)
    check_grad(lambda t: oar.logcumsumexp(t, 0), [a[:, :2]], device)
    check_grad(lambda t: oar.logcumsumexp(t), [a[:2, :2]], device)
    with pytest.raises(TypeError, match="logcumsumexp"):
        oar.logcumsumexp(T(np.array([1, 2]), device))


def test_scan_errors(device):
    with pytest.raises(IndexError, match="cumsum"):
        oar.cumsum(T(np.ones((2, 3)), device), 2)
    with pytest.raises(IndexError, match="cumprod"):
        oar.cumprod(T(np.ones((2, 3)), device), -3)
    with pytest.raises(TypeError, match="cumprod"):
        oar.cumprod(T(np.ones(3, dtype=bool), device), 0)


# ---- reductions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_all_any(dtype, device):
    a = (rng.integers(0, 4, (3, 4, 2)) > 0).astype(dtype) if dtype != "bool" else rng.integers(0, 4, (3, 4, 2)) > 0
    t = T(a, device)
    check(oar.all(t), np.all(a), dtype=oar.bool)
    check(oar.any(t), np.any(a), dtype=oar.bool)
    for axis in (0, 1, -1, [0, 2]):
        ax = tuple(axis) if isinstance(axis, list) else axis
        check(oar.all(t, axis), np.all(a, ax))
        check(oar.any(t, axis, keepdim=True), np.any(a, ax, keepdims=True))
    check(t.transpose([2, 0, 1]).all(1), np.all(a.transpose(2, 0, 1), 1))
    check(oar.all(T(np.zeros((0, 2)), device), 0), [True, True])
    check(oar.any(T(np.zeros((0, 2)), device)), False)
    with pytest.raises(IndexError, match="all"):
        oar.all(t, 3)


def test_reduction_composites(device):
    a = rng.uniform(-2, 2, (3, 4))
    an = a.copy()
    an[0, 1] = an[2, 2] = np.nan
    t, tn = T(a, device), T(an, device)
    check(oar.count_nonzero(T(np.array([[0, 1, 2], [0, 0, 3]]), device), 1), [2, 1], dtype=oar.int64)
    check(oar.count_nonzero(T(np.array([[0.0, 1.5], [0.0, 2.0]]), device)), 2)
    check(oar.nansum(tn), np.nansum(an), rtol=1e-12)
    check(oar.nansum(tn, 1), np.nansum(an, 1), rtol=1e-12)
    check(oar.nanmean(tn, 0), np.nanmean(an, 0), rtol=1e-12)
    check(oar.nanmean(tn), np.nanmean(an), rtol=1e-12)
    for axis in (None, 0, 1, [0, 1]):
        ax = tuple(axis) if isinstance(axis, list) else axis
        check(oar.var(t, axis), np.var(a, ax, ddof=1), rtol=1e-12)
        check(oar.std(t, axis, unbiased=False, keepdim=True), np.std(a, ax, keepdims=True), rtol=1e-12)
        m = np.max(a, ax, keepdims=True)
        ref = np.log(np.sum(np.exp(a - m), ax, keepdims=True)) + m
        check(oar.logsumexp(t, axis), ref if axis is None and False else np.squeeze(ref, ax) if ax is not None
              else ref.reshape(()), rtol=1e-12)
        check(oar.logsumexp(t, axis, keepdim=True), ref, rtol=1e-12)
        check(oar.amax(t, axis), np.max(a, ax))
        check(oar.amin(t, axis), np.min(a, ax))
    big = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]])
    check(oar.logsumexp(T(big, device), 1), [1000.0 + np.log(2.0), -np.inf])
    check_grad(lambda x: oar.var(x, 1), [a[:2]], device)
    check_grad(lambda x: oar.std(x), [a[:2]], device)
    check_grad(lambda x: oar.logsumexp(x, 0), [a[:2]], device)
    check_grad(lambda x: oar.nansum(x, 1), [a[:2]], device)
    check_grad(lambda x: oar.amax(x, 1), [a[:2]], device)
    with pytest.raises(TypeError, match="var"):
        oar.var(T(np.array([1, 2]), device))


def test_isclose_allclose_equal_all(device):
    x = np.array([1.0, 2.0, np.nan, np.inf, 1e-9, 1.0, -np.inf])
    y = np.array([1.0 + 1e-6, 2.1, np.nan, np.inf, 0.0, np.inf, np.inf])
    tx, ty = T(x, device), T(y, device)
    check(oar.isclose(tx, ty), np.isclose(x, y))
    check(oar.isclose(tx, ty, equal_nan=True), np.isclose(x, y, equal_nan=True))
    check(oar.isclose(tx, ty, rtol=0.1), np.isclose(x, y, rtol=0.1))
    out = oar.allclose(tx, tx, equal_nan=True)
    assert out.dtype == oar.bool and out.shape == [] and bool(out)
    assert not bool(oar.allclose(tx, ty))
    assert bool(oar.allclose(T(x[:2], device), T(x[:2] + 1e-7, device)))
    assert bool(oar.equal_all(T(x[:2], device), T(x[:2], device)))
    assert not bool(oar.equal_all(T(x[:2], device), T(y[:2], device)))
    assert not bool(oar.equal_all(T(x[:2], device), T(x[:1], device)))


# ---- creation -------------------------------------------------------------------------------------
def test_linspace_logspace(device):
    oar.set_device(device)
    try:
        check(oar.linspace(0, 1, 5), np.linspace(0, 1, 5), dtype=oar.float32)
        check(oar.linspace(-2.5, 7, 11, dtype="float64"), np.linspace(-2.5, 7, 11), rtol=1e-15, dtype=oar.float64)
        out = oar.linspace(0.1, 0.7, 7, dtype="float64").numpy()
        assert out[0] == 0.1 and out[-1] == 0.7
        check(oar.linspace(3, 3, 1), [3.0])
        check(oar.linspace(0, 1, 0), np.zeros(0))
        check(oar.linspace(0, 10, 6, dtype="int64"), [0, 2, 4, 6, 8, 10], dtype=oar.int64)
        check(oar.linspace(oar.to_tensor(1.0), oar.to_tensor(2.0), 3), [1.0, 1.5, 2.0])
        check(oar.logspace(0, 3, 4), [1.0, 10.0, 100.0, 1000.0], rtol=1e-6)
        check(oar.logspace(0, 2, 3, base=2.0, dtype="float64"), [1.0, 2.0, 4.0], dtype=oar.float64)
        with pytest.raises(ValueError, match="linspace"):
            oar.linspace(0, 1, -1)
        with pytest.raises(TypeError, match="linspace"):
            oar.linspace(0, 1, 2.5)
    finally:
        oar.set_device("cpu")


def test_eye_empty_meshgrid_diagflat(device):
    oar.set_device(device)
    try:
        check(oar.eye(3), np.eye(3), dtype=oar.float32)
        check(oar.eye(2, 4, dtype="int32"), np.eye(2, 4), dtype=oar.int32)
        check(oar.eye(3, 2, dtype="bool"), np.eye(3, 2).astype(bool))
        check(oar.eye(0), np.eye(0))
        with pytest.raises(TypeError, match="eye"):  # as Paddle
            oar.eye(-1)
        e = oar.empty([2, 3], dtype="int64")
        assert e.shape == [2, 3] and e.dtype == oar.int64
        el = oar.empty_like(oar.ones([4]))
        assert el.shape == [4] and el.dtype == oar.float32
        check(oar.zeros_like(oar.ones([2]), dtype="int32"), [0, 0], dtype=oar.int32)
        check(oar.full_like(oar.ones([2]), 7.0), [7.0, 7.0])
    finally:
        oar.set_device("cpu")
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    gx, gy = oar.meshgrid(T(a, device), T(b, device))
    rx, ry = np.meshgrid(a, b, indexing="ij")
    check(gx, rx)
    check(gy, ry)
    gx2, _ = oar.meshgrid([T(a, device), T(b, device)])
    check(gx2, rx)
    check(oar.diagflat(T(a, device)), np.diagflat(a))
    check(oar.diagflat(T(a, device), 1), np.diagflat(a, 1))
    check(oar.diagflat(T(np.array([[1.0, 2.0], [3.0, 4.0]]), device), -2), np.diagflat([[1, 2], [3, 4]], -2))
    check_grad(lambda t: oar.diagflat(t, 1), [a], device)
    check_grad(lambda s, t: oar.meshgrid(s, t)[0] * oar.meshgrid(s, t)[1], [a, b], device)


def test_tri_indices():
    check(oar.tril_indices(4, 3), np.stack(np.tril_indices(4, 0, 3)), dtype=oar.int64)
    check(oar.tril_indices(4, 4, -1), np.stack(np.tril_indices(4, -1, 4)))
    check(oar.triu_indices(3, 5, 1), np.stack(np.triu_indices(3, 1, 5)))
    check(oar.triu_indices(3), np.stack(np.triu_indices(3)))
    check(oar.triu_indices(3, dtype="int32"), np.stack(np.triu_indices(3)), dtype=oar.int32)


# ---- random ---------------------------------------------------------------------------------------
def test_bernoulli(device):
    p = np.full((200, 100), 0.3)
    p[:, :10] = 0.0
    p[:, 10:20] = 1.0
    oar.seed(5)
    out = oar.bernoulli(T(p, device))
    o = out.numpy()
    assert out.dtype == oar.float64 and set(np.unique(o)) <= {0.0, 1.0}
    assert (o[:, :10] == 0).all() and (o[:, 10:20] == 1).all()
    assert abs(o[:, 20:].mean() - 0.3) < 0.01
    oar.seed(5)
    np.testing.assert_array_equal(oar.bernoulli(T(p, device)).numpy(), o)  # reproducible
    assert not np.array_equal(oar.bernoulli(T(p, device)).numpy(), o)  # the generator moved on
    oar.seed(5)
    np.testing.assert_array_equal(oar.bernoulli(T(p, "cpu")).numpy(), o)  # same on every device
    with raises_on(device, ValueError, match="bernoulli"):
        oar.bernoulli(T(np.array([1.5]), device))
    with pytest.raises(TypeError, match="bernoulli"):
        oar.bernoulli(T(np.array([1]), device))


def test_poisson(device):
    lam = np.array([0.0, 0.5, 4.0, 30.0, 500.0])
    x = T(np.tile(lam, (4000, 1)), device)
    oar.seed(21)
    s = oar.poisson(x)
    assert s.dtype == oar.float64 and s.shape == [4000, 5]
    v = s.numpy()
    assert (v == np.floor(v)).all() and (v >= 0).all() and (v[:, 0] == 0).all()
    np.testing.assert_allclose(v.mean(0)[1:], lam[1:], rtol=0.05)
    np.testing.assert_allclose(v.var(0)[1:], lam[1:], rtol=0.15)
    oar.seed(21)
    np.testing.assert_array_equal(oar.poisson(x).numpy(), v)
    with pytest.raises(ValueError, match="poisson"):
        oar.poisson(T(np.array([-1.0]), device))
    r = T(np.array([2.0, 3.0]), device, stop_gradient=False)
    s = oar.poisson(r)
    (s * r).sum().backward()  # poisson passes a zero gradient, so d/dr (s * r) = s
    check(r.grad, s.numpy())


def test_multinomial(device):
    w = np.array([[1.0, 2.0, 0.0, 7.0], [0.0, 0.0, 5.0, 5.0]])
    oar.seed(11)
    s = oar.multinomial(T(w, device), 4000, replacement=True)
    assert s.dtype == oar.int64 and s.shape == [2, 4000]
    s = s.numpy()
    freq = np.stack([np.bincount(r, minlength=4) / 4000 for r in s])
    np.testing.assert_allclose(freq, w / w.sum(1, keepdims=True), atol=0.03)
    oar.seed(11)
    np.testing.assert_array_equal(oar.multinomial(T(w, device), 4000, replacement=True).numpy(), s)
    # without replacement: distinct categories, never a zero-weight one
    for _ in range(20):
        r = oar.multinomial(T(w[0], device), 3).numpy()
        assert sorted(r) == [0, 1, 3]
    assert oar.multinomial(T(w[0].astype(np.float32), device)).shape == [1]
    with pytest.raises(ValueError, match="multinomial"):
        oar.multinomial(T(w[0], device), 5)
    with pytest.raises(ValueError, match="multinomial"):
        oar.multinomial(T(w[0], device), 4)  # only 3 nonzero weights
    with pytest.raises(ValueError, match="multinomial"):
        oar.multinomial(T(np.array([1.0, -1.0]), device))
    with pytest.raises(ValueError, match="multinomial"):
        oar.multinomial(T(np.zeros((2, 2, 2)), device))


def test_randperm_randint(device):
    oar.set_device(device)
    try:
        oar.seed(3)
        p = oar.randperm(1000)
        assert p.dtype == oar.int64 and sorted(p.numpy()) == list(range(1000))
        assert not np.array_equal(p.numpy(), np.arange(1000))
        oar.seed(3)
        np.testing.assert_array_equal(oar.randperm(1000).numpy(), p.numpy())
        assert oar.randperm(5, dtype="int32").dtype == oar.int32
        assert oar.randperm(0).shape == [0]
        r = oar.randint(-3, 5, [10000])
        assert r.dtype == oar.int64
        vals = r.numpy()
        assert vals.min() == -3 and vals.max() == 4
        assert abs(vals.mean() - 0.5) < 0.1
        r2 = oar.randint(10, shape=[3, 4], dtype="int32")
        assert r2.dtype == oar.int32 and r2.shape == [3, 4] and (r2.numpy() >= 0).all() and (r2.numpy() < 10).all()
        rl = oar.randint_like(oar.zeros([5], dtype="int32"), 2, 4)
        assert rl.dtype == oar.int32 and set(rl.numpy()) <= {2, 3}
        oar.seed(9)
        a = oar.randint(0, 100, [20]).numpy()
        oar.seed(9)
        np.testing.assert_array_equal(oar.randint(0, 100, [20]).numpy(), a)
        z = oar.standard_normal([2000], dtype="float64").numpy()
        assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1
        with pytest.raises(ValueError, match="randint"):
            oar.randint(5, 5)
        with pytest.raises(ValueError, match="randperm"):
            oar.randperm(-1)
    finally:
        oar.set_device("cpu")


def test_tanh_float32_accuracy_over_range():
    # The CPU plugin computes float32 tanh with its own vectorised polynomial (plugins/cpu/vec_math.h):
    # check it stays within ~1.5 ulp of the float64 result over a dense sweep and at special values.
    a = np.concatenate([np.linspace(-12, 12, 200001, dtype=np.float32),
                        np.array([0.0, -0.0, 1e-30, -1e-8, 0.6249, 0.625, 0.6251, 8.7, 9.0, 10.0, 50.0, 1e30,
                                  np.inf, -np.inf], np.float32)])
    got = oar.tanh(oar.to_tensor(a)).numpy()
    ref = np.tanh(a.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - ref) / ulp) <= 1.5
    assert np.isnan(oar.tanh(oar.to_tensor([np.nan], dtype="float32")).numpy()[0])
    assert np.signbit(oar.tanh(oar.to_tensor([-0.0], dtype="float32")).numpy()[0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_atan2_nan_operands(dtype, device):
    # A NaN operand gives NaN whatever the other one is (the branch-free float kernel once gave pi/4 for
    # atan2(inf, NaN) and 0 for atan2(NaN, 0)).
    y = np.array([np.inf, -np.inf, np.nan, np.nan, 1.0, np.nan, 0.0], np.float32)
    x = np.array([np.nan, np.nan, 0.0, -0.0, np.nan, np.nan, np.inf], np.float32)
    got = oar.atan2(oar.to_tensor(y, place=device).astype(dtype),
                    oar.to_tensor(x, place=device).astype(dtype)).astype("float32").numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(np.arctan2(y, x)))
    assert got[-1] == 0.0



def _ulps(got, ref):
    """|got - ref| in units of the float32 spacing at ref (ref in float64)."""
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)


def test_float32_exp_erf_and_the_activations_built_on_them_are_accurate():
    # The cpu plugin's branch-free exp and erf (vec_math.h) against float64 over their whole useful range,
    # the switch points of the erf approximation, and the special values.
    x = np.concatenate([np.linspace(-6, 6, 200001), [0.0, -0.0, 1.25, -1.25, np.nextafter(1.25, 0), 3.95, 1e-30, 1e-6,
                                                      -1e-6, 1e6]]).astype(np.float32)
    ref = np.array([math.erf(float(v)) for v in x])
    got = oar.erf(oar.to_tensor(x)).numpy()
    assert _ulps(got, ref).max() <= 4
    assert np.signbit(got[np.signbit(x) & (x == 0)]).all()
    special = oar.erf(oar.to_tensor(np.array([np.inf, -np.inf, np.nan], np.float32))).numpy()
    assert special[0] == 1 and special[1] == -1 and np.isnan(special[2])
    xe = np.linspace(-103, 88.7, 200001).astype(np.float32)
    refe = np.exp(xe.astype(np.float64))
    normal = refe > np.finfo(np.float32).tiny
    assert _ulps(oar.exp(oar.to_tensor(xe)).numpy()[normal], refe[normal]).max() <= 1
    xs = x[np.abs(x) < 1e5].astype(np.float64)
    F = oar.nn.functional
    t = oar.to_tensor(xs.astype(np.float32))
    gelu = 0.5 * xs * (1 + np.array([math.erf(v / math.sqrt(2)) for v in xs]))
    np.testing.assert_allclose(F.gelu(t).numpy(), gelu, rtol=2e-6, atol=1e-7)
    sig = 1 / (1 + np.exp(-xs))
    np.testing.assert_allclose(F.sigmoid(t).numpy(), sig, rtol=2e-6, atol=1e-30)
    np.testing.assert_allclose(F.silu(t).numpy(), xs * sig, rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_full_reductions_of_permuted_and_strided_views(device, dtype):
    # A transposed / permuted view of a contiguous tensor is reduced in memory order (one dense block);
    # flipped, sliced and broadcast views take the general strided loop. Both must match numpy.
    rs = np.random.RandomState(3)
    a = (rs.rand(6, 5, 7) * 10 - 5).astype(dtype)
    t = oar.to_tensor(a, place=device)
    views = {
        "transpose": (t.transpose([2, 0, 1]), a.transpose(2, 0, 1)),
        "swap": (t.transpose([0, 2, 1]), a.transpose(0, 2, 1)),
        "flip": (oar.flip(t, [1]), a[:, ::-1, :]),
        "slice": (t[:, 1:4, ::2], a[:, 1:4, ::2]),
        "expand": (t[:1].expand([3, 5, 7]), np.broadcast_to(a[:1], (3, 5, 7))),
    }
    tol = 1e-5 if dtype == "float32" else 1e-12
    for name, (v, ref) in views.items():
        ref64 = ref.astype(np.float64)
        check(v.sum(), ref64.sum() if dtype.startswith("float") else ref.sum(), rtol=tol, atol=tol)
        check(v.max(), ref.max())
        check(v.min(), ref.min())
        if dtype.startswith("float"):
            check(v.mean(), ref64.mean(), rtol=tol, atol=tol)
            check((v / 5).prod(), np.prod(ref64 / 5), rtol=1e-4 if dtype == "float32" else 1e-10)
        # keepdim over all axes and an explicit axis list: the same path
        check(v.sum(axis=[0, 1, 2], keepdim=True), ref.sum(axis=(0, 1, 2), keepdims=True), rtol=tol, atol=tol)
    # a partial reduction of a transposed view still gives the logical order
    check(t.transpose([2, 0, 1]).sum(axis=[1, 2]), a.transpose(2, 0, 1).sum(axis=(1, 2)), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_partial_reductions_of_permuted_views(device, dtype):
    # A permuted view reduced over axes that are one run in memory order is reduced as the dense block
    # (also when the kept axes come out in another order than in memory: the result is scattered back);
    # axes that are no run in memory, and flipped / sliced views, take the strided loop. All against numpy.
    rs = np.random.RandomState(5)
    a2 = (rs.rand(9, 13) * 10 - 5).astype(dtype)
    a3 = (rs.rand(4, 6, 5) * 10 - 5).astype(dtype)
    a4 = (rs.rand(3, 4, 5, 6) * 10 - 5).astype(dtype)
    t2, t3, t4 = (oar.to_tensor(a, place=device) for a in (a2, a3, a4))
    cases = [(t2.T, a2.T, ax) for ax in (0, 1, [0, 1])]
    for perm in ([2, 0, 1], [1, 2, 0], [0, 2, 1], [2, 1, 0]):
        v, r = t3.transpose(perm), a3.transpose(perm)
        cases += [(v, r, ax) for ax in (0, 1, 2, [0, 1], [1, 2], [0, 2])]
    for perm in ([3, 1, 0, 2], [0, 3, 1, 2], [2, 3, 0, 1]):
        v, r = t4.transpose(perm), a4.transpose(perm)
        cases += [(v, r, ax) for ax in (0, 3, [1, 2], [0, 1], [2, 3], [0, 3], [1, 3])]
    cases += [(oar.flip(t3, [1]).transpose([2, 0, 1]), a3[:, ::-1].transpose(2, 0, 1), 1),
              (t3[:, 1:5].transpose([2, 0, 1]), a3[:, 1:5].transpose(2, 0, 1), [0, 2]),
              (t3.unsqueeze(1).transpose([3, 1, 0, 2]), a3[:, None].transpose(3, 1, 0, 2), [1, 2])]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for v, ref, ax in cases:
        npax = tuple(ax) if isinstance(ax, list) else ax
        for keep in (False, True):
            ref_sum = ref.astype(np.float64).sum(axis=npax, keepdims=keep) if dtype.startswith("float") \
                else ref.sum(axis=npax, keepdims=keep)
            check(v.sum(axis=ax, keepdim=keep), ref_sum, rtol=tol, atol=tol)
            check(v.max(axis=ax, keepdim=keep), ref.max(axis=npax, keepdims=keep))
            check(v.min(axis=ax, keepdim=keep), ref.min(axis=npax, keepdims=keep))
            if dtype.startswith("float"):
                check(v.mean(axis=ax, keepdim=keep), ref.astype(np.float64).mean(axis=npax, keepdims=keep),
                      rtol=tol, atol=tol)
                check((v / 5).prod(axis=ax, keepdim=keep), np.prod(ref.astype(np.float64) / 5, axis=npax,
                                                                   keepdims=keep), rtol=1e-4 if dtype == "float32" else 1e-10)
        if not isinstance(ax, list):
            check(oar.argmax(v, axis=ax), ref.argmax(axis=ax))
            check(oar.argmin(v, axis=ax, keepdim=True), np.expand_dims(ref.argmin(axis=ax), ax))
