"""Concrete layers of oar.nn (Paddle 2.x semantics): parameter shapes, names and default initializers,
forward against numpy references written here, gradients w.r.t. inputs and parameters against finite
differences (float64, tiny shapes), state_dict keys, extra_repr strings, train/eval, errors."""
import math

import numpy as np
import pytest

import oar
import oar.nn as nn
from _util import check

rng = np.random.default_rng(0)


def T(a, device=None, dtype=None, stop_gradient=True):
    return oar.to_tensor(np.asarray(a), dtype=dtype, place=device, stop_gradient=stop_gradient)


def layer_grad_check(layer, *arrays, rtol=1e-5, atol=1e-6, eps=1e-6, device=None, wrt_inputs=None):
    """Gradients of sum(layer(*x) * w) w.r.t. the float inputs and every trainable parameter, against
    central finite differences; the layer is cast to float64 first."""
    layer.to(dtype="float64")
    if device is not None:
        layer.to(device)
    arrays = [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a) for a in arrays]
    if wrt_inputs is None:
        wrt_inputs = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    xs = [T(a, device, stop_gradient=i not in wrt_inputs) for i, a in enumerate(arrays)]
    out = layer(*xs)
    w = np.random.default_rng(7).uniform(0.5, 1.5, out.shape)
    (out * T(w, device)).sum().backward()

    def value():
        with oar.no_grad():
            o = layer(*[T(a, device) for a in arrays]).numpy()
        return float((o * w).sum())

    for i in wrt_inputs:
        num = np.zeros_like(arrays[i])
        for k in np.ndindex(arrays[i].shape):
            orig = arrays[i][k]
            arrays[i][k] = orig + eps
            fp = value()
            arrays[i][k] = orig - eps
            fm = value()
            arrays[i][k] = orig
            num[k] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(xs[i].grad.numpy(), num, rtol=rtol, atol=atol, err_msg="input {}".format(i))
    for name, p in layer.named_parameters():
        if not p.trainable:
            continue
        base = p.numpy().copy()
        num = np.zeros_like(base)
        for k in np.ndindex(base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[k] += sign * eps
                p.set_value(T(v, device))
                num[k] += sign * value() / (2 * eps)
        p.set_value(T(base, device))
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), num, rtol=rtol, atol=atol, err_msg="parameter " + name)


# ---- numpy references ------------------------------------------------------------------------------
def np_conv(x, w, b=None, stride=1, pad=0, dil=1, groups=1):
    nd = x.ndim - 2
    s, p, d = ([v] * nd if isinstance(v, int) else list(v) for v in (stride, pad, dil))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i]) for i in range(nd)])
    n, c = x.shape[:2]
    o, k = w.shape[0], w.shape[2:]
    osz = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros([n, o] + osz)
    cg, og = c // groups, o // groups
    for g in range(groups):
        for pos in np.ndindex(*osz):
            sl = tuple(slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(nd))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            out[(slice(None), slice(g * og, (g + 1) * og)) + pos] = np.tensordot(
                patch, w[g * og:(g + 1) * og], axes=(list(range(1, nd + 2)), list(range(1, nd + 2))))
    if b is not None:
        out += b.reshape([1, -1] + [1] * nd)
    return out


def np_conv_transpose(x, w, b=None, stride=1, pad=0, out_pad=0, dil=1, groups=1):
    nd = x.ndim - 2
    s, p, op, d = ([v] * nd if isinstance(v, int) else list(v) for v in (stride, pad, out_pad, dil))
    n, c = x.shape[:2]
    og, k = w.shape[1], w.shape[2:]
    size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(nd)]
    full = np.zeros([n, og * groups] + [size[i] + 2 * p[i] for i in range(nd)])
    cg = c // groups
    for g in range(groups):
        for pos in np.ndindex(*x.shape[2:]):
            contrib = np.tensordot(x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos], w[g * cg:(g + 1) * cg],
                                   axes=([1], [0]))  # [n, og, *k]
            sl = tuple(slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(nd))
            full[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
    out = full[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + size[i]) for i in range(nd))]
    if b is not None:
        out = out + b.reshape([1, -1] + [1] * nd)
    return out


def np_pool(x, k, s, reduce):
    nd = x.ndim - 2
    osz = [(x.shape[2 + i] - k) // s + 1 for i in range(nd)]
    out = np.zeros(list(x.shape[:2]) + osz)
    for pos in np.ndindex(*osz):
        sl = tuple(slice(pos[i] * s, pos[i] * s + k) for i in range(nd))
        out[(slice(None), slice(None)) + pos] = reduce(x[(slice(None), slice(None)) + sl],
                                                       axis=tuple(range(2, 2 + nd)))
    return out


def np_adaptive(x, out, reduce):
    nd = x.ndim - 2
    res = np.zeros(list(x.shape[:2]) + list(out))
    for pos in np.ndindex(*out):
        sl = []
        for i in range(nd):
            n = x.shape[2 + i]
            sl.append(slice((pos[i] * n) // out[i], -(-((pos[i] + 1) * n) // out[i])))
        res[(slice(None), slice(None)) + pos] = reduce(x[(slice(None), slice(None)) + tuple(sl)],
                                                       axis=tuple(range(2, 2 + nd)))
    return res


# ---- Linear ------------------------------------------------------------------------------------------
def test_linear_params_init_and_repr():
    oar.seed(1)
    lin = nn.Linear(64, 32)
    assert lin.weight.shape == [64, 32] and lin.bias.shape == [32]
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert list(lin.state_dict().keys()) == ["weight", "bias"]
    assert lin.weight.name.startswith(lin.full_name() + ".w_") and lin.bias.name.startswith(lin.full_name() + ".b_")
    w = lin.weight.numpy()
    bound = math.sqrt(6.0 / (64 + 32))  # XavierUniform
    assert np.abs(w).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert abs(w.mean()) < 0.05 * bound
    np.testing.assert_array_equal(lin.bias.numpy(), 0)
    assert repr(lin) == "Linear(in_features=64, out_features=32, dtype=float32)"
    assert repr(nn.Linear(2, 3, name="fc")) == "Linear(in_features=2, out_features=3, dtype=float32, name=fc)"
    assert nn.Linear(2, 3, bias_attr=False).bias is None
    assert len(nn.Linear(2, 3, bias_attr=False).parameters()) == 1
    lin2 = nn.Linear(2, 3, weight_attr=oar.ParamAttr(name="my_w", initializer=nn.initializer.Constant(0.5)))
    assert lin2.weight.name == "my_w"
    np.testing.assert_array_equal(lin2.weight.numpy(), 0.5)


def test_linear_forward_grad(device):
    lin = nn.Linear(3, 2)
    lin.to(device)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = lin(T(x, device))
    check(y, x @ lin.weight.numpy() + lin.bias.numpy(), rtol=1e-5, atol=1e-5)
    x3 = rng.standard_normal((2, 5, 3)).astype(np.float32)
    assert lin(T(x3, device)).shape == [2, 5, 2]
    layer_grad_check(nn.Linear(3, 2), rng.standard_normal((4, 3)), device=device)


def test_linear_errors():
    with pytest.raises(ValueError, match="Linear"):
        nn.Linear(3, 2)(oar.randn([4, 5]))


# ---- convolutions ------------------------------------------------------------------------------------
def test_conv_params_init_and_repr():
    oar.seed(2)
    conv = nn.Conv2D(16, 32, 3)
    assert conv.weight.shape == [32, 16, 3, 3] and conv.bias.shape == [32]
    std = math.sqrt(2.0 / (16 * 9))  # Paddle: Normal(0, sqrt(2 / (in_channels * k * k)))
    w = conv.weight.numpy()
    assert abs(w.std() - std) < 0.05 * std and abs(w.mean()) < 0.05 * std
    np.testing.assert_array_equal(conv.bias.numpy(), 0)
    assert list(conv.state_dict().keys()) == ["weight", "bias"]
    # Paddle does not divide in_channels by groups in the default std.
    g = nn.Conv2D(8, 8, 3, groups=4)
    assert g.weight.shape == [8, 2, 3, 3]
    assert repr(conv) == "Conv2D(16, 32, kernel_size=[3, 3], data_format=NCHW)"
    assert repr(nn.Conv2D(2, 4, 3, stride=2, padding=1, groups=2)) == \
        "Conv2D(2, 4, kernel_size=[3, 3], stride=[2, 2], padding=1, groups=2, data_format=NCHW)"
    assert repr(nn.Conv1D(2, 4, 3, dilation=2, padding_mode="reflect", padding=1)) == \
        "Conv1D(2, 4, kernel_size=[3], padding=1, padding_mode=reflect, dilation=[2], data_format=NCL)"
    t = nn.Conv2DTranspose(4, 6, 3, groups=2, stride=2, output_padding=1)
    assert t.weight.shape == [4, 3, 3, 3]
    assert repr(t) == ("Conv2DTranspose(4, 6, kernel_size=[3, 3], stride=[2, 2], output_padding=1, groups=2, "
                       "data_format=NCHW)")
    assert nn.Conv3D(2, 3, (1, 2, 3)).weight.shape == [3, 2, 1, 2, 3]
    assert nn.Conv1DTranspose(2, 3, 4).weight.shape == [2, 3, 4]
    assert nn.Conv2D(2, 3, 3, bias_attr=False).bias is None


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=2), dict(groups=2)])
def test_conv2d_forward(kw, device):
    conv = nn.Conv2D(4, 6, 3, **kw)
    conv.to(device)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    ref = np_conv(x.astype(np.float64), conv.weight.numpy().astype(np.float64), conv.bias.numpy() + 0.0,
                  kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1), kw.get("groups", 1))
    conv.bias.set_value(T(rng.standard_normal(6).astype(np.float32), device))
    ref = ref + conv.bias.numpy().reshape(1, -1, 1, 1)
    check(conv(T(x, device)), ref, rtol=1e-4, atol=1e-4)


def test_conv1d_conv3d_forward_and_nhwc():
    c1 = nn.Conv1D(3, 4, 3, stride=2, padding=1)
    x1 = rng.standard_normal((2, 3, 9))
    check(c1(T(x1, dtype="float32")), np_conv(x1, c1.weight.numpy(), c1.bias.numpy(), 2, 1), rtol=1e-4, atol=1e-4)
    c3 = nn.Conv3D(2, 3, 2, padding=1)
    x3 = rng.standard_normal((1, 2, 3, 4, 3))
    check(c3(T(x3, dtype="float32")), np_conv(x3, c3.weight.numpy(), c3.bias.numpy(), 1, 1), rtol=1e-4, atol=1e-4)
    # channels-last: the same weights give the transposed result
    c = nn.Conv2D(3, 4, 3, padding=1)
    cl = nn.Conv2D(3, 4, 3, padding=1, data_format="NHWC")
    cl.set_state_dict(c.state_dict())
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    check(cl(T(x.transpose(0, 2, 3, 1))), c(T(x)).numpy().transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_conv_padding_modes():
    x = rng.standard_normal((1, 2, 5, 6))
    for mode, npmode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        c = nn.Conv2D(2, 3, 3, padding=1, padding_mode=mode)
        xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode=npmode)
        check(c(T(x, dtype="float32")), np_conv(xp, c.weight.numpy(), c.bias.numpy()), rtol=1e-4, atol=1e-4)
    c1 = nn.Conv1D(2, 3, 3, padding=2, padding_mode="reflect")
    x1 = rng.standard_normal((1, 2, 6))
    check(c1(T(x1, dtype="float32")), np_conv(np.pad(x1, [(0, 0), (0, 0), (2, 2)], mode="reflect"),
                                              c1.weight.numpy(), c1.bias.numpy()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2)])
def test_conv2d_transpose_forward(kw, device):
    t = nn.Conv2DTranspose(4, 6, 3, **kw)
    t.to(device)
    t.bias.set_value(T(rng.standard_normal(6).astype(np.float32), device))
    x = rng.standard_normal((2, 4, 4, 5)).astype(np.float32)
    ref = np_conv_transpose(x.astype(np.float64), t.weight.numpy().astype(np.float64), t.bias.numpy(),
                            kw.get("stride", 1), kw.get("padding", 0), kw.get("output_padding", 0),
                            kw.get("dilation", 1), kw.get("groups", 1))
    check(t(T(x, device)), ref, rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_size_and_1d_3d():
    t = nn.Conv2DTranspose(2, 3, 3, stride=2, padding=1)
    x = T(rng.standard_normal((1, 2, 4, 4)), dtype="float32")
    assert t(x).shape == [1, 3, 7, 7]
    assert t(x, output_size=[8, 8]).shape == [1, 3, 8, 8]
    # padding 'SAME' (Paddle): padded as a forward conv of x would be, out = (in-1)*s - pad_sum + k
    for n, s, k, out in ((7, 2, 3, 13), (6, 2, 3, 12), (5, 3, 2, 14), (9, 2, 4, 17)):
        same = nn.Conv2DTranspose(1, 1, k, stride=s, padding="SAME")
        assert same(oar.randn([1, 1, n, n])).shape == [1, 1, out, out]
    t1 = nn.Conv1DTranspose(2, 3, 3, stride=2)
    x1 = rng.standard_normal((2, 2, 4))
    check(t1(T(x1, dtype="float32")), np_conv_transpose(x1, t1.weight.numpy(), t1.bias.numpy(), 2),
          rtol=1e-4, atol=1e-4)
    t3 = nn.Conv3DTranspose(2, 2, 2)
    x3 = rng.standard_normal((1, 2, 2, 3, 2))
    check(t3(T(x3, dtype="float32")), np_conv_transpose(x3, t3.weight.numpy(), t3.bias.numpy()),
          rtol=1e-4, atol=1e-4)


def test_conv_grads(device):
    layer_grad_check(nn.Conv2D(2, 2, 2, stride=1, padding=1, groups=2), rng.standard_normal((1, 2, 3, 3)),
                     device=device)
    layer_grad_check(nn.Conv1D(2, 3, 2, padding=1, padding_mode="reflect"), rng.standard_normal((1, 2, 4)))
    layer_grad_check(nn.Conv2DTranspose(2, 2, 2, stride=2), rng.standard_normal((1, 2, 2, 2)))


def test_conv_errors():
    with pytest.raises(ValueError, match="Conv2D.*in_channels=3"):
        nn.Conv2D(3, 4, 3)(oar.randn([1, 4, 5, 5]))
    with pytest.raises(ValueError, match="Conv2D.*4-D"):
        nn.Conv2D(3, 4, 3)(oar.randn([3, 5, 5]))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2D(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2D(3, 4, 3, padding_mode="bogus")
    with pytest.raises(ValueError, match="data_format"):
        nn.Conv2D(3, 4, 3, data_format="NCL")
    with pytest.raises(ValueError, match="weight_attr"):
        nn.Conv2D(3, 4, 3, weight_attr=False)


# ---- pooling -----------------------------------------------------------------------------------------
def test_pools(device):
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    xt = T(x, device)
    check(nn.MaxPool2D(2)(xt), np_pool(x, 2, 2, np.max))
    check(nn.AvgPool2D(2)(xt), np_pool(x, 2, 2, np.mean), rtol=1e-5, atol=1e-6)
    check(nn.MaxPool2D(3, stride=1)(xt), np_pool(x, 3, 1, np.max))
    out, mask = nn.MaxPool2D(2, return_mask=True)(xt)
    assert out.shape == mask.shape == [2, 3, 3, 4]
    check(nn.AdaptiveAvgPool2D(1)(xt), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveAvgPool2D([4, 3])(xt), np_adaptive(x, [4, 3], np.mean), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveMaxPool2D([4, 3])(xt), np_adaptive(x, [4, 3], np.max))
    x1 = rng.standard_normal((2, 3, 7)).astype(np.float32)
    check(nn.MaxPool1D(2)(T(x1, device)), np_pool(x1, 2, 2, np.max))
    check(nn.AvgPool1D(3, stride=2)(T(x1, device)), np_pool(x1, 3, 2, np.mean), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveAvgPool1D(3)(T(x1, device)), np_adaptive(x1, [3], np.mean), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveMaxPool1D(3)(T(x1, device)), np_adaptive(x1, [3], np.max))
    x3 = rng.standard_normal((1, 2, 4, 4, 6)).astype(np.float32)
    check(nn.MaxPool3D(2)(T(x3, device)), np_pool(x3, 2, 2, np.max))
    check(nn.AvgPool3D(2)(T(x3, device)), np_pool(x3, 2, 2, np.mean), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveAvgPool3D([2, 1, 3])(T(x3, device)), np_adaptive(x3, [2, 1, 3], np.mean), rtol=1e-5, atol=1e-6)
    check(nn.AdaptiveMaxPool3D([2, 1, 3])(T(x3, device)), np_adaptive(x3, [2, 1, 3], np.max))
    # NHWC
    check(nn.MaxPool2D(2, data_format="NHWC")(T(x.transpose(0, 2, 3, 1), device)),
          np_pool(x, 2, 2, np.max).transpose(0, 2, 3, 1))


def test_pool_repr_grad_errors():
    assert repr(nn.MaxPool2D(2)) == "MaxPool2D(kernel_size=2, stride=None, padding=0)"
    assert repr(nn.AvgPool2D(3, 2, 1)) == "AvgPool2D(kernel_size=3, stride=2, padding=1)"
    assert repr(nn.AdaptiveAvgPool2D(7)) == "AdaptiveAvgPool2D(output_size=7)"
    assert repr(nn.AdaptiveMaxPool1D(2)) == "AdaptiveMaxPool1D(output_size=2, return_mask=False)"
    layer_grad_check(nn.AvgPool2D(2, stride=1), rng.standard_normal((1, 2, 3, 3)))
    layer_grad_check(nn.MaxPool2D(2), rng.permutation(16).reshape(1, 1, 4, 4).astype(np.float64))
    with pytest.raises(ValueError, match="MaxPool2D"):
        nn.MaxPool2D(2)(oar.randn([3, 4, 4]))
    with pytest.raises(ValueError, match="AdaptiveAvgPool1D"):
        nn.AdaptiveAvgPool1D(2)(oar.randn([3, 4, 4, 4]))


# ---- normalisation -----------------------------------------------------------------------------------
def test_batchnorm_params_state_and_repr():
    bn = nn.BatchNorm2D(3)
    assert list(bn.state_dict().keys()) == ["weight", "bias", "_mean", "_variance"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias", "_mean", "_variance"]
    assert bn.weight.trainable and bn.bias.trainable
    assert not bn._mean.trainable and bn._mean.stop_gradient and not bn._variance.trainable
    np.testing.assert_array_equal(bn.weight.numpy(), 1)
    np.testing.assert_array_equal(bn.bias.numpy(), 0)
    np.testing.assert_array_equal(bn._mean.numpy(), 0)
    np.testing.assert_array_equal(bn._variance.numpy(), 1)
    assert repr(bn) == "BatchNorm2D(num_features=3, momentum=0.9, epsilon=1e-05)"
    assert repr(nn.BatchNorm1D(4, data_format="NLC")) == \
        "BatchNorm1D(num_features=4, momentum=0.9, epsilon=1e-05, data_format=NLC)"
    named = nn.BatchNorm2D(2, name="bn")
    assert named._mean.name == "bn_mean" and named._variance.name == "bn_variance"
    assert nn.BatchNorm2D(3, weight_attr=False, bias_attr=False).weight is None
    legacy = nn.BatchNorm(3)
    assert list(legacy.state_dict().keys()) == ["weight", "bias", "_mean", "_variance"]


def _np_bn_train(x, axes, gamma, beta, eps=1e-5):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    shape = [1] * x.ndim
    c_axis = [i for i in range(x.ndim) if i not in axes][0]
    shape[c_axis] = -1
    return (x - m) / np.sqrt(v + eps) * gamma.reshape(shape) + beta.reshape(shape), x.mean(axis=axes), x.var(axis=axes)


def test_batchnorm_running_stats_two_steps(device):
    bn = nn.BatchNorm2D(3)
    bn.to(device)
    bn.weight.set_value(T(np.array([1.0, 2.0, 0.5], np.float32), device))
    bn.bias.set_value(T(np.array([0.0, 1.0, -1.0], np.float32), device))
    x1 = rng.standard_normal((4, 3, 2, 2)).astype(np.float32) * 2 + 1
    x2 = rng.standard_normal((4, 3, 2, 2)).astype(np.float32) - 3
    rm, rv = np.zeros(3), np.ones(3)
    for x in (x1, x2):
        y = bn(T(x, device))
        ref, m, v = _np_bn_train(x.astype(np.float64), (0, 2, 3), bn.weight.numpy(), bn.bias.numpy())
        check(y, ref, rtol=1e-4, atol=1e-4)
        rm = 0.9 * rm + 0.1 * m
        rv = 0.9 * rv + 0.1 * v
        np.testing.assert_allclose(bn._mean.numpy(), rm, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(bn._variance.numpy(), rv, rtol=1e-5, atol=1e-6)
    bn.eval()
    x3 = rng.standard_normal((2, 3, 2, 2)).astype(np.float32)
    ref = (x3 - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5) * \
        bn.weight.numpy().reshape(1, 3, 1, 1) + bn.bias.numpy().reshape(1, 3, 1, 1)
    check(bn(T(x3, device)), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn._mean.numpy(), rm, rtol=1e-5, atol=1e-6)  # eval does not update


def test_batchnorm_variants():
    # use_global_stats=True: running statistics even while training, and no update
    bn = nn.BatchNorm1D(2, use_global_stats=True)
    x = rng.standard_normal((5, 2)).astype(np.float32)
    check(bn(T(x)), x / np.sqrt(1 + 1e-5), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(bn._mean.numpy(), 0)
    # 1-D on [N, C, L] and NLC, 3-D
    x3 = rng.standard_normal((3, 2, 4))
    ref = _np_bn_train(x3, (0, 2), np.ones(2), np.zeros(2))[0]
    check(nn.BatchNorm1D(2)(T(x3, dtype="float32")), ref, rtol=1e-4, atol=1e-4)
    check(nn.BatchNorm1D(2, data_format="NLC")(T(x3.transpose(0, 2, 1), dtype="float32")), ref.transpose(0, 2, 1),
          rtol=1e-4, atol=1e-4)
    x5 = rng.standard_normal((2, 2, 2, 3, 2))
    check(nn.BatchNorm3D(2)(T(x5, dtype="float32")), _np_bn_train(x5, (0, 2, 3, 4), np.ones(2), np.zeros(2))[0],
          rtol=1e-4, atol=1e-4)
    x4 = rng.standard_normal((2, 3, 3, 2))
    check(nn.BatchNorm2D(2, data_format="NHWC")(T(x4, dtype="float32")),
          _np_bn_train(x4, (0, 1, 2), np.ones(2), np.zeros(2))[0], rtol=1e-4, atol=1e-4)
    # legacy BatchNorm with an activation, and is_test
    legacy = nn.BatchNorm(3, act="relu")
    xl = rng.standard_normal((4, 3, 2, 2))
    check(legacy(T(xl, dtype="float32")), np.maximum(_np_bn_train(xl, (0, 2, 3), np.ones(3), np.zeros(3))[0], 0),
          rtol=1e-4, atol=1e-4)
    assert not nn.BatchNorm(3, is_test=True).training


def test_batchnorm_grad_and_errors(device):
    bn = nn.BatchNorm2D(2)
    bn.weight.set_value(T(np.array([1.5, 0.5], np.float32)))
    bn.bias.set_value(T(np.array([0.1, -0.2], np.float32)))
    layer_grad_check(bn, rng.standard_normal((3, 2, 2, 1)), device=device, rtol=1e-4, atol=1e-5)
    bn_eval = nn.BatchNorm1D(2)
    bn_eval.eval()
    layer_grad_check(bn_eval, rng.standard_normal((3, 2)))
    with pytest.raises(ValueError, match="BatchNorm2D.*4D"):
        nn.BatchNorm2D(3)(oar.randn([2, 3, 4]))
    with pytest.raises(ValueError, match="BatchNorm2D.*3 channels"):
        nn.BatchNorm2D(3)(oar.randn([2, 4, 2, 2]))
    with pytest.raises(ValueError, match="BatchNorm1D.*2D or 3D"):
        nn.BatchNorm1D(3)(oar.randn([2, 3, 4, 4]))
    with pytest.raises(ValueError, match="data_format"):
        nn.BatchNorm2D(3, data_format="NCL")


def test_sync_batchnorm():
    net = nn.Sequential(nn.Conv2D(2, 3, 1), nn.BatchNorm2D(3), nn.Sequential(nn.BatchNorm2D(3)))
    bn = net[1]
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(conv[1], nn.SyncBatchNorm) and isinstance(conv[2][0], nn.SyncBatchNorm)
    assert isinstance(conv[0], nn.Conv2D)
    assert conv[1].weight is bn.weight and conv[1]._mean is bn._mean
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    s = nn.SyncBatchNorm(3)
    ref = nn.BatchNorm2D(3)
    check(s(T(x)), ref(T(x)).numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s._mean.numpy(), ref._mean.numpy(), rtol=1e-6)
    fixed = nn.SyncBatchNorm(3, weight_attr=False, bias_attr=False)
    assert fixed.weight is not None and not fixed.weight.trainable


def test_layernorm(device):
    ln = nn.LayerNorm([3, 4])
    assert ln.weight.shape == [12] and ln.bias.shape == [12]
    assert repr(ln) == "LayerNorm(normalized_shape=[3, 4], epsilon=1e-05)"
    ln.to(device)
    ln.weight.set_value(T(rng.standard_normal(12).astype(np.float32), device))
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = x.mean(axis=(1, 2), keepdims=True)
    v = x.var(axis=(1, 2), keepdims=True)
    ref = (x - m) / np.sqrt(v + 1e-5) * ln.weight.numpy().reshape(3, 4)
    check(ln(T(x, device)), ref, rtol=1e-4, atol=1e-4)
    ln1 = nn.LayerNorm(4)
    ln1.weight.set_value(T(rng.standard_normal(4).astype(np.float32)))
    layer_grad_check(ln1, rng.standard_normal((2, 4)), device=device, rtol=1e-4, atol=1e-5)
    layer_grad_check(nn.LayerNorm([2, 2]), rng.standard_normal((2, 2, 2)), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="LayerNorm"):
        nn.LayerNorm(5)(oar.randn([2, 4]))
    assert nn.LayerNorm(4, weight_attr=False, bias_attr=False).parameters() == []


def test_group_instance_lrn():
    x = rng.standard_normal((2, 4, 3, 2))
    gn = nn.GroupNorm(2, 4)
    assert gn.weight.shape == [4] and repr(gn) == "GroupNorm(num_groups=2, num_channels=4, epsilon=1e-05)"
    xg = x.reshape(2, 2, -1)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    check(gn(T(x, dtype="float32")), ref, rtol=1e-4, atol=1e-4)
    gn2 = nn.GroupNorm(2, 4)
    gn2.weight.set_value(T(np.array([1.0, 2.0, 3.0, 4.0], np.float32)))
    layer_grad_check(gn2, rng.standard_normal((1, 4, 2)), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match="GroupNorm.*4 channels"):
        nn.GroupNorm(2, 4)(oar.randn([2, 6, 3]))

    inorm = nn.InstanceNorm2D(4)
    assert list(inorm.state_dict().keys()) == ["scale", "bias"]
    assert repr(inorm) == "InstanceNorm2D(num_features=4, epsilon=1e-05)"
    ref = (x - x.mean(axis=(2, 3), keepdims=True)) / np.sqrt(x.var(axis=(2, 3), keepdims=True) + 1e-5)
    check(inorm(T(x, dtype="float32")), ref, rtol=1e-4, atol=1e-4)
    x1 = rng.standard_normal((2, 3, 5))
    ref1 = (x1 - x1.mean(axis=2, keepdims=True)) / np.sqrt(x1.var(axis=2, keepdims=True) + 1e-5)
    check(nn.InstanceNorm1D(3)(T(x1, dtype="float32")), ref1, rtol=1e-4, atol=1e-4)
    assert nn.InstanceNorm3D(2)(oar.randn([1, 2, 2, 2, 2])).shape == [1, 2, 2, 2, 2]
    assert nn.InstanceNorm2D(4, weight_attr=False, bias_attr=False).parameters() == []
    layer_grad_check(nn.InstanceNorm1D(2), rng.standard_normal((1, 2, 3)), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="InstanceNorm2D.*4D"):
        nn.InstanceNorm2D(4)(oar.randn([2, 4, 3]))

    lrn = nn.LocalResponseNorm(3)
    assert repr(lrn) == "LocalResponseNorm(size=3, alpha=0.0001, beta=0.75, k=1.0)"
    xl = rng.standard_normal((1, 5, 2, 2)) * 10
    sq = np.pad(xl ** 2, [(0, 0), (1, 1), (0, 0), (0, 0)])
    div = (1.0 + 1e-4 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.75
    check(lrn(T(xl, dtype="float32")), xl / div, rtol=1e-5, atol=1e-5)


# ---- dropout -----------------------------------------------------------------------------------------
def test_dropout_train_eval():
    oar.seed(3)
    d = nn.Dropout(0.25)
    assert repr(d) == "Dropout(p=0.25, axis=None, mode=upscale_in_train)"
    x = np.ones((200, 50), np.float32) * 2
    y = d(T(x)).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2 / 0.75, rtol=1e-6)
    assert abs(1 - kept.mean() - 0.25) < 0.02
    d.eval()
    check(d(T(x)), x)
    dd = nn.Dropout(0.25, mode="downscale_in_infer")
    y = dd(T(x)).numpy()
    np.testing.assert_allclose(y[y != 0], 2, rtol=1e-6)
    dd.eval()
    check(dd(T(x)), x * 0.75, rtol=1e-6)
    # axis: the mask is shared along the other axes
    da = nn.Dropout(0.5, axis=1)
    y = da(T(np.ones((6, 40), np.float32))).numpy()
    assert (y == y[0:1]).all()
    d2 = nn.Dropout2D(0.5)
    y = d2(T(np.ones((4, 8, 3, 3), np.float32))).numpy()
    per_channel = y.reshape(4, 8, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    d2.eval()
    check(d2(T(np.ones((1, 2, 2, 2), np.float32))), np.ones((1, 2, 2, 2)))
    d3 = nn.Dropout3D(0.5)
    y = d3(T(np.ones((2, 6, 2, 2, 2), np.float32))).numpy().reshape(2, 6, 8)
    assert ((y == 0).all(-1) | (y == 2).all(-1)).all()
    ad = nn.AlphaDropout(0.2)
    xa = rng.standard_normal((400, 50)).astype(np.float32)
    ya = ad(T(xa)).numpy()
    assert abs(ya.mean()) < 0.05 and abs(ya.std() - 1) < 0.05
    ad.eval()
    check(ad(T(xa)), xa)
    with pytest.raises(ValueError, match="Dropout"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="mode"):
        nn.Dropout(0.5, mode="bogus")


def test_train_eval_propagation():
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Sequential(nn.BatchNorm1D(4), nn.Dropout(0.5)))
    net.eval()
    assert all(not l.training for l in net.sublayers(include_self=True))
    x = T(rng.standard_normal((3, 4)).astype(np.float32))
    np.testing.assert_array_equal(net(x).numpy(), net(x).numpy())  # deterministic in eval
    net.train()
    assert all(l.training for l in net.sublayers(include_self=True))


# ---- embedding ---------------------------------------------------------------------------------------
def test_embedding(device):
    oar.seed(4)
    emb = nn.Embedding(10, 4, padding_idx=2)
    assert emb.weight.shape == [10, 4]
    assert list(emb.state_dict().keys()) == ["weight"]
    assert repr(emb) == "Embedding(10, 4, padding_idx=2, sparse=False)"
    np.testing.assert_array_equal(emb.weight.numpy()[2], 0)
    bound = math.sqrt(6.0 / 14)
    assert np.abs(emb.weight.numpy()).max() <= bound
    emb.to(device)
    w = emb.weight.numpy()
    ids = np.array([[1, 2, 3], [2, 9, 1]])
    out = emb(T(ids, device))
    ref = w[ids]
    ref[ids == 2] = 0
    check(out, ref)
    (out * T(np.arange(24, dtype=np.float32).reshape(2, 3, 4), device)).sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[2], 0)
    gref = np.zeros((10, 4), np.float32)
    wts = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for (i, j), idx in np.ndenumerate(ids):
        if idx != 2:
            gref[idx] += wts[i, j]
    np.testing.assert_allclose(g, gref)
    neg = nn.Embedding(5, 2, padding_idx=-1, sparse=True)
    np.testing.assert_array_equal(neg.weight.numpy()[4], 0)
    assert repr(neg) == "Embedding(5, 2, padding_idx=-1, sparse=True)"
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(ValueError, match="num_embeddings"):
        nn.Embedding(0, 2)


# ---- activations -------------------------------------------------------------------------------------
def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _erf(x):
    return np.vectorize(math.erf)(x)


SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ACTS = [
    (lambda: nn.ReLU(), lambda x: np.maximum(x, 0)),
    (lambda: nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (lambda: nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (lambda: nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (lambda: nn.SELU(), lambda x: SELU_S * np.where(x > 0, x, SELU_A * (np.exp(x) - 1))),
    (lambda: nn.CELU(2.0), lambda x: np.maximum(x, 0) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1))),
    (lambda: nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    (lambda: nn.GELU(approximate=True),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (lambda: nn.Sigmoid(), _sig),
    (lambda: nn.Hardsigmoid(), lambda x: np.clip(x * 0.1666667 + 0.5, 0, 1)),
    (lambda: nn.Tanh(), np.tanh),
    (lambda: nn.Hardtanh(-0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0)),
    (lambda: nn.Softmax(axis=1), lambda x: _softmax(x, 1)),
    (lambda: nn.LogSoftmax(), lambda x: np.log(_softmax(x, -1))),
    (lambda: nn.Softplus(), _softplus),
    (lambda: nn.Softplus(beta=2, threshold=1), lambda x: np.where(2 * x > 1, x, _softplus(2 * x) / 2)),
    (lambda: nn.Softshrink(0.3), lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0))),
    (lambda: nn.Hardshrink(0.3), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
    (lambda: nn.Softsign(), lambda x: x / (1 + np.abs(x))),
    (lambda: nn.Swish(), lambda x: x * _sig(x)),
    (lambda: nn.Silu(), lambda x: x * _sig(x)),
    (lambda: nn.SiLU(), lambda x: x * _sig(x)),
    (lambda: nn.Mish(), lambda x: x * np.tanh(_softplus(x))),
    (lambda: nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (lambda: nn.Tanhshrink(), lambda x: x - np.tanh(x)),
    (lambda: nn.ThresholdedReLU(0.5), lambda x: np.where(x > 0.5, x, 0)),
    (lambda: nn.LogSigmoid(), lambda x: np.log(_sig(x))),
    (lambda: nn.GLU(axis=1), lambda x: x[:, :2] * _sig(x[:, 2:])),
    (lambda: nn.Maxout(groups=2), lambda x: x.reshape(3, 2, 2, 5).max(axis=2)),
    (lambda: nn.Softmax2D(), lambda x: _softmax(x, 1)),
    (lambda: nn.PReLU(), lambda x: np.where(x > 0, x, 0.25 * x)),
    (lambda: nn.RReLU(0.1, 0.3).eval(), lambda x: np.where(x >= 0, x, 0.2 * x)),
]


@pytest.mark.parametrize("make,ref", ACTS)
def test_activation_layers(make, ref):
    x = rng.standard_normal((3, 4, 5)) * 2
    x = x.reshape(3, 4, 5, 1) if isinstance(make(), nn.Softmax2D) else x
    layer = make()
    check(layer(T(x, dtype="float32")), ref(x).astype(np.float32), rtol=1e-4, atol=1e-5)
    # avoid kinks for the finite-difference gradient
    xg = rng.uniform(0.05, 1.0, (3, 4, 5)) * rng.choice([-1, 1], (3, 4, 5)) * 2
    xg = np.where(np.abs(np.abs(xg) - 0.5) < 0.05, 0.7, xg)
    xg = np.where(np.abs(np.abs(xg) - 0.3) < 0.05, 0.7, xg)
    xg = xg.reshape(3, 4, 5, 1) if isinstance(layer, nn.Softmax2D) else xg
    layer_grad_check(make(), xg[:2], rtol=1e-4, atol=1e-5)


def test_activation_reprs_and_prelu():
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.ReLU(name="r")) == "ReLU(name=r)"
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert repr(nn.GELU(True)) == "GELU(approximate=True)"
    assert repr(nn.Softmax()) == "Softmax(axis=-1)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min=-1.0, max=1.0)"
    assert repr(nn.SELU()) == "SELU(scale=1.0507009873554805, alpha=1.6732632423543772)"
    assert repr(nn.Maxout(2)) == "Maxout(groups=2, axis=1)"
    assert repr(nn.ThresholdedReLU()) == "ThresholdedReLU(threshold=1.0, value=0.0)"
    p = nn.PReLU(3, init=0.1)
    assert repr(p) == "PReLU(num_parameters=3, data_format=NCHW, init=0.1, dtype=float32)"
    assert list(p.state_dict().keys()) == ["_weight"] and p._weight.shape == [3]
    np.testing.assert_allclose(p._weight.numpy(), 0.1)
    x = rng.standard_normal((2, 3, 4))
    p._weight.set_value(T(np.array([0.1, 0.2, 0.3], np.float32)))
    check(p(T(x, dtype="float32")), np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3]).reshape(1, 3, 1)),
          rtol=1e-5, atol=1e-6)
    layer_grad_check(p, x)
    with pytest.raises(ValueError):
        nn.PReLU(3)(oar.randn([2, 4, 2]))
    r = nn.RReLU(0.1, 0.3)
    y = r(T(-np.ones((100,)), dtype="float32")).numpy()
    assert (y <= -0.1 + 1e-6).all() and (y >= -0.3 - 1e-6).all() and y.std() > 0
    with pytest.raises(ValueError, match="Softmax2D"):
        nn.Softmax2D()(oar.randn([2, 3]))


# ---- common layers -----------------------------------------------------------------------------------
def test_identity_flatten_unflatten():
    x = T(rng.standard_normal((2, 3, 4, 5)), dtype="float32")
    assert nn.Identity(1, 2, foo=3)(x) is x
    assert nn.Flatten()(x).shape == [2, 60]
    assert nn.Flatten(0, 1)(x).shape == [6, 4, 5]
    assert nn.Flatten(2)(x).shape == [2, 3, 20]
    check(nn.Flatten()(x), x.numpy().reshape(2, 60))
    u = nn.Unflatten(1, [3, 1])
    assert u(x).shape == [2, 3, 1, 4, 5]
    assert nn.Unflatten(-1, (-1, 5))(T(np.zeros((2, 10)))).shape == [2, 2, 5]
    assert repr(u) == "Unflatten(axis=1, shape=[3, 1])"
    with pytest.raises(ValueError, match="Unflatten"):
        nn.Unflatten(1, [2, 2])(x)


def test_pad_layers():
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    p = nn.Pad2D([1, 2, 0, 1], value=0.5)
    assert repr(p) == "Pad2D(padding=[1, 2, 0, 1], mode=constant, value=0.5, data_format=NCHW)"
    check(p(T(x)), np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], constant_values=0.5))
    check(nn.ZeroPad2D(1)(T(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)]))
    check(nn.Pad2D(1, mode="reflect")(T(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect"))
    check(nn.ReplicationPad2D([1, 0, 2, 0])(T(x)), np.pad(x, [(0, 0), (0, 0), (2, 0), (1, 0)], mode="edge"))
    check(nn.CircularPad2D(1)(T(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="wrap"))
    check(nn.ConstantPad2D(1, 3.0)(T(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=3.0))
    x1 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    check(nn.Pad1D([2, 1], mode="replicate")(T(x1)), np.pad(x1, [(0, 0), (0, 0), (2, 1)], mode="edge"))
    check(nn.ReflectionPad1D(1)(T(x1)), np.pad(x1, [(0, 0), (0, 0), (1, 1)], mode="reflect"))
    check(nn.ZeroPad1D(1)(T(x1)), np.pad(x1, [(0, 0), (0, 0), (1, 1)]))
    x3 = rng.standard_normal((1, 1, 2, 3, 4)).astype(np.float32)
    check(nn.Pad3D([1, 0, 0, 1, 1, 1])(T(x3)), np.pad(x3, [(0, 0), (0, 0), (1, 1), (0, 1), (1, 0)]))
    check(nn.ZeroPad3D(1)(T(x3)), np.pad(x3, [(0, 0)] * 2 + [(1, 1)] * 3))
    assert nn.ZeroPad2D.__name__ == "ZeroPad2D" and isinstance(nn.ZeroPad2D(1), nn.Pad2D)
    with pytest.raises(ValueError, match="Pad2D"):
        nn.Pad2D(1)(T(x1))
    with pytest.raises(ValueError, match="mode"):
        nn.Pad2D(1, mode="bogus")


def test_upsample_layers():
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    up = nn.Upsample(scale_factor=2)
    check(up(T(x)), x.repeat(2, axis=2).repeat(2, axis=3))
    assert repr(up) == "Upsample(scale_factor=2, mode=nearest, align_corners=False, align_mode=0, data_format=None)"
    check(nn.UpsamplingNearest2D(size=[6, 8])(T(x)), x.repeat(2, axis=2).repeat(2, axis=3))
    # align_corners=True bilinear: corners map to corners; check along a linear ramp
    ramp = np.tile(np.arange(4, dtype=np.float32), (1, 1, 2, 1))
    y = nn.UpsamplingBilinear2D(size=[2, 7])(T(ramp)).numpy()
    np.testing.assert_allclose(y[0, 0, 0], np.linspace(0, 3, 7), rtol=1e-5, atol=1e-6)
    assert repr(nn.UpsamplingBilinear2D(scale_factor=2)) == "UpsamplingBilinear2D(scale_factor=2, data_format=NCHW)"
    x1 = rng.standard_normal((1, 2, 3)).astype(np.float32)
    check(nn.Upsample(scale_factor=2)(T(x1)), x1.repeat(2, axis=2))
    assert nn.Upsample(size=[4, 4, 4], mode="trilinear")(oar.randn([1, 1, 2, 2, 2])).shape == [1, 1, 4, 4, 4]
    with pytest.raises(ValueError, match="Upsample"):
        nn.Upsample(scale_factor=2)(oar.randn([2, 3]))


def test_vision_layers():
    x = rng.standard_normal((2, 8, 3, 3)).astype(np.float32)
    ps = nn.PixelShuffle(2)
    ref = x.reshape(2, 2, 2, 2, 3, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 6)
    check(ps(T(x)), ref)
    check(nn.PixelUnshuffle(2)(ps(T(x))), x)
    assert repr(ps) == "PixelShuffle(upscale_factor=2)"
    assert repr(nn.PixelUnshuffle(2, "NHWC")) == "PixelUnshuffle(downscale_factor=2, data_format=NHWC)"
    cs = nn.ChannelShuffle(2)
    check(cs(T(x)), x.reshape(2, 2, 4, 3, 3).transpose(0, 2, 1, 3, 4).reshape(2, 8, 3, 3))
    assert repr(cs) == "ChannelShuffle(groups=2)"
    with pytest.raises(TypeError):
        nn.PixelShuffle(2.0)
    with pytest.raises(ValueError, match="data_format"):
        nn.ChannelShuffle(2, "NCL")


def test_fold_unfold():
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    unf = nn.Unfold(kernel_sizes=2, strides=2)
    cols = unf(T(x))
    assert cols.shape == [1, 8, 4]
    ref = x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 8, 4)
    check(cols, ref)
    fold = nn.Fold(output_sizes=[4, 4], kernel_sizes=2, strides=2)
    check(fold(cols), x)
    assert repr(unf) == "Unfold(kernel_size=2, dilation=1, padding=0, stride=2)"
    # overlapping windows sum: fold(unfold(ones)) counts coverage
    ones = T(np.ones((1, 1, 3, 3), np.float32))
    cover = nn.Fold([3, 3], 2)(nn.Unfold(2)(ones)).numpy()[0, 0]
    np.testing.assert_array_equal(cover, [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


def test_bilinear_cosine_pairwise(device):
    bl = nn.Bilinear(3, 2, 4)
    assert bl.weight.shape == [4, 3, 2] and bl.bias.shape == [1, 4]
    assert repr(bl) == "Bilinear(in1_features=3, in2_features=2, out_features=4, dtype=float32)"
    bl.to(device)
    bl.bias.set_value(T(rng.standard_normal((1, 4)).astype(np.float32), device))
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    ref = np.einsum("ni,kij,nj->nk", a, bl.weight.numpy(), b) + bl.bias.numpy()
    check(bl(T(a, device), T(b, device)), ref, rtol=1e-4, atol=1e-5)
    layer_grad_check(nn.Bilinear(2, 2, 2), rng.standard_normal((3, 2)), rng.standard_normal((3, 2)))
    cs = nn.CosineSimilarity(axis=1)
    assert repr(cs) == "CosineSimilarity(axis=1, eps=1e-08)"
    ref = (a * a).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(a, axis=1))
    check(cs(T(a, device), T(a, device)), ref, rtol=1e-5, atol=1e-6)
    c = rng.standard_normal((5, 3)).astype(np.float32)
    check(cs(T(a, device), T(c, device)),
          (a * c).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(c, axis=1)), rtol=1e-5, atol=1e-6)
    pd = nn.PairwiseDistance()
    assert repr(pd) == "PairwiseDistance(p=2.0)"
    assert repr(nn.PairwiseDistance(1.0, 1e-3, True)) == "PairwiseDistance(p=1.0, epsilon=0.001, keepdim=True)"
    check(pd(T(a, device), T(c, device)), np.linalg.norm(a - c + 1e-6, axis=1), rtol=1e-5, atol=1e-6)
    check(nn.PairwiseDistance(1.0, keepdim=True)(T(a, device), T(c, device)),
          np.abs(a - c + 1e-6).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


# ---- state, dtype, repr of a model -------------------------------------------------------------------
class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4)
        self.act = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.pool(self.act(self.bn(self.conv(x)))).flatten(1))


def test_state_dict_round_trip_and_to_dtype():
    net = _Net()
    assert list(net.state_dict().keys()) == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn._mean",
                                             "bn._variance", "fc.weight", "fc.bias"]
    x = T(rng.standard_normal((2, 2, 4, 4)).astype(np.float32))
    net(x)  # moves the running statistics
    net.eval()
    y = net(x).numpy()
    sd = {k: v.numpy() for k, v in net.state_dict().items()}
    other = _Net()
    other.set_state_dict(sd)
    other.eval()
    np.testing.assert_allclose(other(x).numpy(), y, rtol=1e-6)
    np.testing.assert_allclose(other.bn._mean.numpy(), net.bn._mean.numpy())
    net.to(dtype="float64")
    assert all(p.dtype == oar.float64 for p in net.parameters())
    assert net.fc._dtype == "float64"
    y64 = net(x.astype("float64"))
    assert y64.dtype == oar.float64
    np.testing.assert_allclose(y64.numpy(), y, rtol=1e-5, atol=1e-6)
    assert repr(net) == ("_Net(\n  (conv): Conv2D(2, 4, kernel_size=[3, 3], padding=1, data_format=NCHW)\n"
                         "  (bn): BatchNorm2D(num_features=4, momentum=0.9, epsilon=1e-05)\n  (act): ReLU()\n"
                         "  (pool): AdaptiveAvgPool2D(output_size=1)\n"
                         "  (fc): Linear(in_features=4, out_features=3, dtype=float64)\n)")


def test_model_trains_on_device(device):
    """A few SGD steps of a tiny conv net reduce the loss on every device (hand-written update)."""
    oar.seed(5)
    net = _Net()
    net.to(device)
    x = T(rng.standard_normal((8, 2, 4, 4)).astype(np.float32), device)
    target = T(rng.standard_normal((8, 3)).astype(np.float32), device)
    losses = []
    for _ in range(5):
        loss = ((net(x) - target) ** 2).mean()
        losses.append(float(loss.numpy()))
        loss.backward()
        with oar.no_grad():
            for p in net.parameters():
                if p.trainable:
                    p.set_value(p - p.grad * 0.1)
        net.clear_gradients()
    assert losses[-1] < losses[0]


def test_default_dtype_and_deepcopy():
    import copy
    oar.set_default_dtype("float64")
    try:
        lin, conv, bn, ln = nn.Linear(2, 3), nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2), nn.LayerNorm(3)
        assert all(p.dtype == oar.float64 for l in (lin, conv, bn, ln) for p in l.parameters())
        assert repr(lin) == "Linear(in_features=2, out_features=3, dtype=float64)"
        assert lin(oar.randn([4, 2], dtype="float64")).dtype == oar.float64
    finally:
        oar.set_default_dtype("float32")
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1D(2))
    twin = copy.deepcopy(net)
    assert twin[0].weight is not net[0].weight
    np.testing.assert_array_equal(twin[0].weight.numpy(), net[0].weight.numpy())
    assert twin[0].weight.name != net[0].weight.name
    x = T(rng.standard_normal((3, 2)).astype(np.float32))
    np.testing.assert_allclose(twin(x).numpy(), net(x).numpy(), rtol=1e-6)
