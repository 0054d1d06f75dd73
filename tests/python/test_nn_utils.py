"""nn.utils reparameterisations and parameter/vector transforms (Paddle semantics): weight_norm
(weight_g / weight_v, recomputed in a forward pre-hook), spectral_norm (power iteration, weight_u /
weight_v buffers), parameters_to_vector / vector_to_parameters."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.nn.utils.spectral_norm_hook import spectral_norm
from oar.nn.utils.transform_parameters import parameters_to_vector, vector_to_parameters
from oar.nn.utils.weight_norm_hook import remove_weight_norm, weight_norm

rng = np.random.default_rng(0)


def T(a, device=None, dtype=None):
    return oar.to_tensor(np.asarray(a), dtype=dtype, place=device)


def np_weight_norm(v, g, dim):
    if dim is None:
        return v / np.sqrt((v ** 2).sum()) * g
    axes = tuple(d for d in range(v.ndim) if d != dim)
    shape = [1] * v.ndim
    shape[dim] = -1
    return v / np.sqrt((v ** 2).sum(axis=axes, keepdims=True)) * g.reshape(shape)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_linear(dim, device):
    lin = nn.Linear(3, 4)
    lin.to(device)
    w0 = lin.weight.numpy().copy()
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y0 = lin(T(x, device)).numpy()
    weight_norm(lin, dim=dim)
    assert [k for k in lin.state_dict()] == ["bias", "weight_v", "weight_g"]
    assert lin.weight_g.shape == ([[3], [4]][dim] if dim is not None else [])
    expected_g = np.sqrt((w0 ** 2).sum()) if dim is None else np.sqrt((w0 ** 2).sum(axis=1 - dim))
    np.testing.assert_allclose(lin.weight_g.numpy(), expected_g, rtol=1e-5)
    np.testing.assert_allclose(lin.weight_v.numpy(), w0)
    np.testing.assert_allclose(lin.weight.numpy(), w0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin(T(x, device)).numpy(), y0, rtol=1e-5, atol=1e-5)
    # the hook recomputes the weight from g and v at every call
    g_new = rng.uniform(0.5, 2.0, lin.weight_g.shape).astype(np.float32)
    lin.weight_g.set_value(T(g_new, device))
    w = np_weight_norm(w0.astype(np.float64), g_new.astype(np.float64), dim)
    out = lin(T(x, device))
    np.testing.assert_allclose(out.numpy(), x @ w + lin.bias.numpy(), rtol=1e-4, atol=1e-5)
    remove_weight_norm(lin)
    assert [k for k in lin.state_dict()] == ["bias", "weight"]
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.trainable
    np.testing.assert_allclose(lin.weight.numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin(T(x, device)).numpy(), out.numpy(), rtol=1e-5, atol=1e-6)
    assert len(lin._forward_pre_hooks) == 0


def test_weight_norm_grads_conv():
    conv = nn.Conv2D(2, 3, 2)
    weight_norm(conv, dim=0)
    conv.to(dtype="float64")
    x = T(rng.standard_normal((1, 2, 3, 3)))
    wts = rng.uniform(0.5, 1.5, (1, 3, 2, 2))
    (conv(x) * T(wts)).sum().backward()
    v, g = conv.weight_v.numpy().copy(), conv.weight_g.numpy().copy()
    xb, b = x.numpy(), conv.bias.numpy()

    def f(vv, gg):
        w = np_weight_norm(vv, gg, 0)
        out = np.zeros((1, 3, 2, 2))
        for i in range(2):
            for j in range(2):
                out[0, :, i, j] = np.tensordot(w, xb[0, :, i:i + 2, j:j + 2], axes=3) + b
        return (out * wts).sum()

    eps = 1e-6
    for arr, grad, which in ((v, conv.weight_v.grad.numpy(), "v"), (g, conv.weight_g.grad.numpy(), "g")):
        num = np.zeros_like(arr)
        for k in np.ndindex(arr.shape):
            p, m = arr.copy(), arr.copy()
            p[k] += eps
            m[k] -= eps
            num[k] = ((f(p, g) - f(m, g)) if which == "v" else (f(v, p) - f(v, m))) / (2 * eps)
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-7, err_msg=which)
    assert conv.weight_g.shape == [3]


def test_weight_norm_errors():
    lin = weight_norm(nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="two weight_norm"):
        weight_norm(lin)
    with pytest.raises(ValueError, match="not found"):
        remove_weight_norm(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="dim"):
        weight_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError, match="no parameter named"):
        weight_norm(nn.Linear(2, 2), name="foo")


def test_spectral_norm(device):
    oar.seed(11)
    lin = nn.Linear(4, 6)
    lin.to(device)
    w0 = lin.weight.numpy().copy()
    spectral_norm(lin, n_power_iterations=3)
    assert list(lin.state_dict().keys()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    # Linear: dim 1, so the matrix is weight^T [6, 4]; u has 6 entries, v 4
    assert lin.weight_u.shape == [6] and lin.weight_v.shape == [4]
    np.testing.assert_allclose(np.linalg.norm(lin.weight_u.numpy()), 1.0, rtol=1e-5)
    x = T(rng.standard_normal((3, 4)).astype(np.float32), device)
    for _ in range(10):
        lin(x)
    sigma = np.linalg.svd(w0.astype(np.float64), compute_uv=False)[0]
    np.testing.assert_allclose(lin.weight.numpy(), w0 / sigma, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.svd(lin.weight.numpy(), compute_uv=False)[0], 1.0, rtol=1e-4)
    np.testing.assert_allclose(lin(x).numpy(), x.numpy() @ (w0 / sigma) + lin.bias.numpy(), rtol=1e-4, atol=1e-5)
    # eval: no power iteration, the buffers stay
    lin.eval()
    u = lin.weight_u.numpy().copy()
    lin(x)
    np.testing.assert_array_equal(lin.weight_u.numpy(), u)
    # gradients reach weight_orig: d/dW of sum(W / sigma(W)) with u, v fixed
    lin.train()
    lin.clear_gradients()
    lin(x).sum().backward()
    assert lin.weight_orig.grad is not None and lin.weight_orig.grad.shape == [4, 6]
    assert lin.weight_u.grad is None
    with pytest.raises(RuntimeError, match="two spectral_norm"):
        spectral_norm(lin)


def test_spectral_norm_conv_grad():
    conv = nn.Conv2D(2, 3, 2)
    spectral_norm(conv)
    assert conv.weight_u.shape == [3] and conv.weight_v.shape == [8]
    conv.eval()  # fixed u, v: weight = W / (u . W v)
    conv.to(dtype="float64")
    x = T(rng.standard_normal((1, 2, 2, 2)))
    conv(x).sum().backward()
    W = conv.weight_orig.numpy().copy()
    u, v = conv.weight_u.numpy(), conv.weight_v.numpy()
    xs = x.numpy()[0]

    def f(Wv):
        s = u @ Wv.reshape(3, -1) @ v
        return float(((Wv / s) * xs[None]).sum())

    num = np.zeros_like(W)
    for k in np.ndindex(W.shape):
        p, m = W.copy(), W.copy()
        p[k] += 1e-6
        m[k] -= 1e-6
        num[k] = (f(p) - f(m)) / 2e-6
    np.testing.assert_allclose(conv.weight_orig.grad.numpy(), num, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="n_power_iterations"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_parameters_vector_round_trip():
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    params = net.parameters()
    vec = parameters_to_vector(params)
    assert vec.shape == [3 * 4 + 4 + 4 * 2 + 2] and not vec.stop_gradient
    np.testing.assert_allclose(vec.numpy(), np.concatenate([p.numpy().reshape(-1) for p in params]))
    new = np.arange(vec.shape[0], dtype=np.float32)
    vector_to_parameters(T(new), params)
    np.testing.assert_array_equal(params[0].numpy(), new[:12].reshape(3, 4))
    np.testing.assert_array_equal(params[3].numpy(), new[-2:])
    assert params[0].shape == [3, 4] and params[0].trainable
    # a longer vector is accepted (the tail is ignored), a shorter one is an error
    vector_to_parameters(T(np.zeros(40, np.float32)), params)
    assert (parameters_to_vector(params).numpy() == 0).all()
    with pytest.raises(ValueError, match="elements"):
        vector_to_parameters(T(np.zeros(5, np.float32)), params)
    with pytest.raises(ValueError, match="1-D"):
        vector_to_parameters(T(np.zeros((2, 13), np.float32)), params)


def test_spectral_norm_layer():
    sn = nn.SpectralNorm([3, 4, 2], dim=1, power_iters=30)
    assert list(sn.state_dict().keys()) == ["weight_u", "weight_v"]
    assert sn.weight_u.shape == [4] and sn.weight_v.shape == [6] and not sn.weight_u.trainable
    w = rng.standard_normal((3, 4, 2))
    out = sn(T(w, dtype="float32"))
    mat = w.transpose(1, 0, 2).reshape(4, 6)
    sigma = np.linalg.svd(mat, compute_uv=False)[0]
    np.testing.assert_allclose(out.numpy(), w / sigma, rtol=1e-4, atol=1e-5)
    # one step from the stored vectors, computed by hand; the stored vectors do not change
    sn1 = nn.SpectralNorm([3, 4], power_iters=1)
    u, v = sn1.weight_u.numpy().astype(np.float64), sn1.weight_v.numpy().astype(np.float64)
    w2 = rng.standard_normal((3, 4))
    v1 = w2.T @ u
    v1 /= np.linalg.norm(v1)
    u1 = w2 @ v1
    u1 /= np.linalg.norm(u1)
    np.testing.assert_allclose(sn1(T(w2, dtype="float32")).numpy(), w2 / (u1 @ w2 @ v1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(sn1.weight_u.numpy(), u.astype(np.float32))
    with pytest.raises(ValueError, match="SpectralNorm"):
        sn1(T(np.zeros((4, 3)), dtype="float32"))
