"""oar.nn.initializer: distributions, fans and gains as Paddle defines them."""
import math

import numpy as np
import pytest

import oar
from oar.nn import initializer as I


def _param(shape, dtype="float32"):
    return oar.create_parameter(list(shape), dtype, default_initializer=I.Constant(0.0))


def _draw(init, shape, dtype="float32"):
    p = _param(shape, dtype)
    init(p)
    return p.numpy()


def test_constant_and_assign():
    np.testing.assert_array_equal(_draw(I.Constant(2.5), [2, 3]), np.full([2, 3], 2.5, np.float32))
    v = np.arange(6, dtype=np.float64).reshape(2, 3)
    np.testing.assert_array_equal(_draw(I.Assign(v), [2, 3]), v.astype(np.float32))
    with pytest.raises(ValueError, match="Assign"):
        _draw(I.Assign(np.zeros(5)), [2, 3])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_uniform_and_normal_moments(dtype):
    oar.seed(1)
    u = _draw(I.Uniform(-2.0, 4.0), [200, 100], dtype).astype(np.float64)
    assert u.min() >= -2.0 and u.max() <= 4.0
    assert abs(u.mean() - 1.0) < 0.05 and abs(u.std() - 6 / math.sqrt(12)) < 0.05
    n = _draw(I.Normal(3.0, 0.5), [200, 100], dtype).astype(np.float64)
    assert abs(n.mean() - 3.0) < 0.02 and abs(n.std() - 0.5) < 0.02


def test_truncated_normal_bounds_and_moments():
    oar.seed(2)
    t = _draw(I.TruncatedNormal(0.0, 1.0, a=-2.0, b=2.0), [400, 100]).astype(np.float64)
    assert t.min() >= -2.0 and t.max() <= 2.0
    # Variance of the standard normal truncated to [-2, 2]: 1 - 2*2*phi(2)/(Phi(2)-Phi(-2)).
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    z = math.erf(2 / math.sqrt(2))
    assert abs(t.var() - (1 - 4 * phi2 / z)) < 0.02 and abs(t.mean()) < 0.02


def test_xavier_and_kaiming_use_paddle_fans():
    oar.seed(3)
    # 2-D [in, out]: fan_in = 300, fan_out = 100.
    x = _draw(I.XavierUniform(), [300, 100])
    limit = math.sqrt(6.0 / 400)
    assert x.max() <= limit and x.max() > 0.95 * limit
    xn = _draw(I.XavierNormal(), [300, 100])
    assert abs(xn.std() - math.sqrt(2.0 / 400)) < 0.05 * math.sqrt(2.0 / 400)
    # 4-D conv [out, in, kh, kw]: fan_in = in*kh*kw = 16*9.
    k = _draw(I.KaimingNormal(), [64, 16, 3, 3])
    assert abs(k.std() - math.sqrt(2.0 / 144)) < 0.05 * math.sqrt(2.0 / 144)
    ku = _draw(I.KaimingUniform(nonlinearity="leaky_relu", negative_slope=0.2), [64, 16, 3, 3])
    bound = math.sqrt(2.0 / 1.04) * math.sqrt(3.0 / 144)
    assert ku.max() <= bound + 1e-6 and ku.max() > 0.95 * bound
    # Explicit fans override.
    xf = _draw(I.XavierUniform(fan_in=1, fan_out=1), [50, 50])
    assert xf.max() <= math.sqrt(3.0) and xf.max() > 0.9 * math.sqrt(3.0)


def test_orthogonal():
    oar.seed(4)
    w = _draw(I.Orthogonal(gain=2.0), [6, 10]).astype(np.float64)
    np.testing.assert_allclose(w @ w.T, 4.0 * np.eye(6), atol=1e-5)
    tall = _draw(I.Orthogonal(), [10, 4]).astype(np.float64)
    np.testing.assert_allclose(tall.T @ tall, np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match="Orthogonal"):
        _draw(I.Orthogonal(), [5])


def test_dirac_and_bilinear():
    w = _draw(I.Dirac(), [4, 4, 3, 3])
    x = np.random.RandomState(0).randn(1, 4, 5, 5).astype(np.float32)
    y = oar.nn.functional.conv2d(oar.to_tensor(x), oar.to_tensor(w), padding=1).numpy()
    np.testing.assert_allclose(y, x, rtol=1e-6)
    b = _draw(I.Bilinear(), [1, 1, 4, 4])
    np.testing.assert_allclose(b[0, 0], np.outer([0.25, 0.75, 0.75, 0.25], [0.25, 0.75, 0.75, 0.25]))


def test_seed_reproducible():
    oar.seed(7)
    a = _draw(I.Normal(), [10])
    oar.seed(7)
    b = _draw(I.Normal(), [10])
    np.testing.assert_array_equal(a, b)


def test_calculate_gain_and_errors():
    assert I.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert I.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert I.calculate_gain("leaky_relu", 0.1) == pytest.approx(math.sqrt(2 / 1.01))
    with pytest.raises(ValueError, match="nonlinearity"):
        I.calculate_gain("bogus")
    with pytest.raises(ValueError, match="Uniform"):
        I.Uniform(1.0, 0.0)
    with pytest.raises(TypeError, match="Tensor"):
        I.Constant(1.0)(np.zeros(3))
    with pytest.raises(TypeError, match="Initializer"):
        I.set_global_initializer(3)
