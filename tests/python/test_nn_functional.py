"""oar.nn.functional: activations, normalisation, common layers and losses against numpy references, on
every device; gradients against finite differences (float64); errors naming the op."""
import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from _util import check, check_grad, raises_on


RNG = np.random.default_rng(0)
_erf = np.vectorize(math.erf)


def T(a, device, **kw):
    return oar.to_tensor(a, place=device, **kw)


def rnd(*shape, dtype="float64", low=-3, high=3):
    return RNG.uniform(low, high, shape).astype(dtype)


def np_softplus(x, beta=1.0, threshold=20.0):
    z = beta * x
    return np.where(z > threshold, x, np.logaddexp(0, z) / beta)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---- activations ------------------------------------------------------------------------------------
ACTS = [
    ("relu6", lambda x: F.relu6(x), lambda x: np.clip(x, 0, 6)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("selu", lambda x: F.selu(x), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    ("celu", lambda x: F.celu(x, 1.5), lambda x: np.maximum(x, 0) + np.minimum(0, 1.5 * np.expm1(x / 1.5))),
    ("gelu", lambda x: F.gelu(x), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("gelu_tanh", lambda x: F.gelu(x, approximate=True),
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("silu", lambda x: F.silu(x), lambda x: x * np_sigmoid(x)),
    ("swish", lambda x: F.swish(x), lambda x: x * np_sigmoid(x)),
    ("mish", lambda x: F.mish(x), lambda x: x * np.tanh(np_softplus(x))),
    ("softplus", lambda x: F.softplus(x, 2.0, 4.0), lambda x: np_softplus(x, 2.0, 4.0)),
    ("softsign", lambda x: F.softsign(x), lambda x: x / (1 + np.abs(x))),
    ("softshrink", lambda x: F.softshrink(x, 0.7),
     lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0))),
    ("hardshrink", lambda x: F.hardshrink(x, 0.7), lambda x: np.where(np.abs(x) > 0.7, x, 0)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x), lambda x: np.clip(x * 0.1666667 + 0.5, 0, 1)),
    ("hardswish", lambda x: F.hardswish(x), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("tanhshrink", lambda x: F.tanhshrink(x), lambda x: x - np.tanh(x)),
    ("thresholded_relu", lambda x: F.thresholded_relu(x, 0.5), lambda x: np.where(x > 0.5, x, 0)),
    ("log_sigmoid", lambda x: F.log_sigmoid(x), lambda x: -np.logaddexp(0, -x)),
    ("sigmoid", lambda x: F.sigmoid(x), np_sigmoid),
    ("tanh", lambda x: F.tanh(x), np.tanh),
    ("relu", lambda x: F.relu(x), lambda x: np.maximum(x, 0)),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3, training=False), lambda x: np.where(x >= 0, x, 0.2 * x)),
]


@pytest.mark.parametrize("name,fn,ref", ACTS, ids=[a[0] for a in ACTS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_forward(name, fn, ref, dtype, device):
    a = rnd(4, 5, dtype=dtype, low=-5, high=5)
    tol = 1e-5 if dtype == "float32" else 1e-12
    check(fn(T(a, device)), ref(a.astype(np.float64)).astype(dtype), rtol=tol, atol=tol)
    # non-contiguous input
    t = T(a, device).transpose([1, 0])
    check(fn(t), ref(a.astype(np.float64).T).astype(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,fn,ref", ACTS, ids=[a[0] for a in ACTS])
def test_activation_grad(name, fn, ref, device):
    # keep away from the kinks (where finite differences are meaningless)
    a = rnd(3, 4, low=-4, high=4)
    for k in (0.0, 0.5, 0.7, -0.5, -0.7, 1.5, 3.0, -3.0, 6.0, 2.0, -2.0):
        a[np.abs(a - k) < 0.05] += 0.11
    check_grad(fn, [a], device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fused_activations_half(dtype, device):
    a = rnd(4, 6, dtype="float32")
    x = T(a, device).astype(dtype)
    for fn, ref in [(F.gelu, lambda v: 0.5 * v * (1 + _erf(v / np.sqrt(2)))), (F.silu, lambda v: v * np_sigmoid(v)),
                    (F.hardswish, lambda v: v * np.clip(v + 3, 0, 6) / 6)]:
        got = fn(x).astype("float32").numpy()
        np.testing.assert_allclose(got, ref(x.astype("float32").numpy()), rtol=2e-2, atol=2e-2)


FUSED = [
    ("gelu", lambda x: F.gelu(x)), ("gelu_tanh", lambda x: F.gelu(x, approximate=True)),
    ("silu", lambda x: F.silu(x)), ("leaky_relu", lambda x: F.leaky_relu(x, 0.2)),
    ("elu", lambda x: F.elu(x, 0.7)), ("softplus", lambda x: F.softplus(x, 2.0, 4.0)),
    ("hardswish", lambda x: F.hardswish(x)), ("hardsigmoid", lambda x: F.hardsigmoid(x)),
]


@pytest.mark.parametrize("name,fn", FUSED, ids=[f[0] for f in FUSED])
def test_fused_activation_second_order(name, fn, device):
    """The "<act>_grad" ops are differentiable: check d/dx and d/dg of g * f'(x) by finite differences."""
    a = rnd(2, 3, low=-4, high=4)
    for k in (0.0, 3.0, -3.0, 2.0):
        a[np.abs(a - k) < 0.05] += 0.11
    g = rnd(2, 3)

    xt = T(a, device, stop_gradient=False)
    gt = T(g, device, stop_gradient=False)
    (dx,) = oar.grad([fn(xt)], [xt], [gt], create_graph=True)
    ddx, dg = oar.grad([dx.sum()], [xt, gt])
    eps = 1e-6

    def fprime(v, gy):
        vt = T(v, device, stop_gradient=False)
        (d,) = oar.grad([fn(vt)], [vt], [T(gy, device)])
        return d.numpy()

    num = (fprime(a + eps, g) - fprime(a - eps, g)) / (2 * eps)
    np.testing.assert_allclose(ddx.numpy(), num, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dg.numpy(), fprime(a, np.ones_like(g)), rtol=1e-12, atol=1e-12)


def test_prelu(device):
    x = rnd(2, 3, 4)
    w = np.array([0.1, 0.2, 0.3])
    ref = np.where(x > 0, x, x * w.reshape(1, 3, 1))
    check(F.prelu(T(x, device), T(w, device)), ref, rtol=1e-12, atol=1e-12)
    ref_last = np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3, 0.4]))
    check(F.prelu(T(x, device), T(np.array([0.1, 0.2, 0.3, 0.4]), device), data_format="NHWC"), ref_last,
          rtol=1e-12, atol=1e-12)
    check(F.prelu(T(x, device), T(np.array([0.25]), device)), np.where(x > 0, x, 0.25 * x), rtol=1e-12)
    x[np.abs(x) < 0.05] = 0.3
    check_grad(lambda a, b: F.prelu(a, b), [x, w], device)
    with pytest.raises(ValueError, match="prelu"):
        F.prelu(T(x, device), T(np.ones(5), device))


def test_rrelu_training(device):
    oar.seed(3)
    x = rnd(200)
    y = F.rrelu(T(x, device), 0.1, 0.3, training=True).numpy()
    np.testing.assert_array_equal(y[x >= 0], x[x >= 0])
    ratio = y[x < 0] / x[x < 0]
    assert ratio.min() >= 0.1 - 1e-6 and ratio.max() <= 0.3 + 1e-6 and ratio.std() > 0.01
    with pytest.raises(ValueError, match="rrelu"):
        F.rrelu(T(x, device), 0.5, 0.2)


def test_maxout_glu(device):
    x = rnd(2, 6, 3)
    check(F.maxout(T(x, device), 3), x.reshape(2, 2, 3, 3).max(axis=2), rtol=0)
    xl = x.transpose(0, 2, 1).copy()
    check(F.maxout(T(xl, device), 3, axis=-1), x.reshape(2, 2, 3, 3).max(axis=2).transpose(0, 2, 1), rtol=0)
    g = F.glu(T(x, device), axis=1)
    check(g, x[:, :3] * np_sigmoid(x[:, 3:]), rtol=1e-12)
    check_grad(lambda t: F.glu(t, axis=1), [x], device)
    check_grad(lambda t: F.maxout(t, 2), [x], device)
    with pytest.raises(ValueError, match="maxout"):
        F.maxout(T(x, device), 4)
    with pytest.raises(ValueError, match="glu"):
        F.glu(T(x, device), axis=2)


def test_gumbel_softmax(device):
    oar.seed(1)
    x = T(rnd(4, 5), device)
    y = F.gumbel_softmax(x, 0.5)
    np.testing.assert_allclose(y.numpy().sum(-1), 1, rtol=1e-10)
    h = F.gumbel_softmax(x, hard=True).numpy()
    np.testing.assert_array_equal(h.sum(-1), 1)
    assert set(np.unique(h)) <= {0.0, 1.0}


def test_softmax_dtype_and_activation_errors(device):
    x = T(rnd(2, 3, dtype="float32"), device)
    assert F.softmax(x, dtype="float64").dtype == oar.float64
    with pytest.raises(TypeError, match="gelu"):
        F.gelu(T(np.array([1, 2], dtype="int64"), device))
    with pytest.raises(ValueError, match="selu"):
        F.selu(x, scale=0.5)
    with pytest.raises(ValueError, match="softshrink"):
        F.softshrink(x, -1)


# ---- normalisation ----------------------------------------------------------------------------------
def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_forward(dtype, device):
    x = rnd(3, 4, 5, dtype=dtype)
    w, b = rnd(4, 5, dtype=dtype), rnd(4, 5, dtype=dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    check(F.layer_norm(T(x, device), [4, 5], T(w, device), T(b, device)), np_layer_norm(x, 2, w, b), rtol=tol,
          atol=tol)
    check(F.layer_norm(T(x, device), 5), np_layer_norm(x, 1), rtol=tol, atol=tol)
    xt = T(x, device).transpose([0, 2, 1])
    check(F.layer_norm(xt, 4, epsilon=1e-3), np_layer_norm(x.transpose(0, 2, 1), 1, eps=1e-3), rtol=tol,
          atol=tol)


def test_layer_norm_half(device):
    x = rnd(4, 8, dtype="float32")
    y = F.layer_norm(T(x, device).astype("float16"), 8).astype("float32").numpy()
    np.testing.assert_allclose(y, np_layer_norm(x, 1), rtol=1e-2, atol=1e-2)


def test_layer_norm_grad(device):
    x, w, b = rnd(3, 2, 4), rnd(2, 4), rnd(2, 4)
    check_grad(lambda a, ww, bb: F.layer_norm(a, [2, 4], ww, bb), [x, w, b], device)
    check_grad(lambda a: F.layer_norm(a, 4), [x], device)
    # rows longer than the kernel's 8 lanes, with a tail
    check_grad(lambda a, ww: F.layer_norm(a, 19, ww), [rnd(2, 19), rnd(19)], device)


def test_layer_norm_errors(device):
    x = T(rnd(2, 3), device)
    with pytest.raises(ValueError, match="layer_norm"):
        F.layer_norm(x, 4)
    with pytest.raises(ValueError, match="layer_norm"):
        F.layer_norm(x, 3, weight=T(np.ones(4), device))
    with pytest.raises(TypeError, match="layer_norm"):
        F.layer_norm(T(np.ones((2, 3), dtype="int64"), device), 3)


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_batch_norm_training_and_eval(data_format, device):
    x = rnd(4, 3, 2, 5)
    if data_format == "NHWC":
        x = x.transpose(0, 2, 3, 1).copy()
    c_axis = 1 if data_format == "NCHW" else 3
    axes = tuple(i for i in range(4) if i != c_axis)
    shp = [1, 1, 1, 1]
    shp[c_axis] = 3
    w, b = rnd(3), rnd(3)
    rm, rv = T(np.zeros(3), device), T(np.ones(3), device)
    y = F.batch_norm(T(x, device), rm, rv, T(w, device), T(b, device), training=True, momentum=0.8,
                     data_format=data_format)
    m, v = x.mean(axis=axes), x.var(axis=axes)
    ref = (x - m.reshape(shp)) / np.sqrt(v.reshape(shp) + 1e-5) * w.reshape(shp) + b.reshape(shp)
    check(y, ref, rtol=1e-10, atol=1e-10)
    check(rm, 0.2 * m, rtol=1e-10, atol=1e-12)
    check(rv, 0.8 + 0.2 * v, rtol=1e-10)
    # inference: running statistics
    y2 = F.batch_norm(T(x, device), rm, rv, T(w, device), T(b, device), training=False, data_format=data_format)
    rmn, rvn = rm.numpy(), rv.numpy()
    ref2 = (x - rmn.reshape(shp)) / np.sqrt(rvn.reshape(shp) + 1e-5) * w.reshape(shp) + b.reshape(shp)
    check(y2, ref2, rtol=1e-10, atol=1e-10)
    # use_global_stats in training leaves the running stats alone
    F.batch_norm(T(x, device), rm, rv, training=True, use_global_stats=True, data_format=data_format)
    check(rm, rmn, rtol=0)


def test_batch_norm_grad(device):
    x, w, b = rnd(3, 2, 2), rnd(2), rnd(2)

    def fn(a, ww, bb):
        rm = oar.to_tensor(np.zeros(2), place=device)
        rv = oar.to_tensor(np.ones(2), place=device)
        return F.batch_norm(a, rm, rv, ww, bb, training=True)

    check_grad(fn, [x, w, b], device)
    with pytest.raises(ValueError, match="batch_norm"):
        F.batch_norm(T(x, device), T(np.zeros(3), device), T(np.ones(3), device))


def test_instance_group_norm(device):
    x = rnd(2, 4, 3, 2)
    w, b = rnd(4), rnd(4)
    m = x.mean(axis=(2, 3), keepdims=True)
    v = x.var(axis=(2, 3), keepdims=True)
    ref = (x - m) / np.sqrt(v + 1e-5) * w.reshape(1, 4, 1, 1) + b.reshape(1, 4, 1, 1)
    check(F.instance_norm(T(x, device), weight=T(w, device), bias=T(b, device)), ref, rtol=1e-10, atol=1e-10)
    g = x.reshape(2, 2, -1)
    gm, gv = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    gref = ((g - gm) / np.sqrt(gv + 1e-5)).reshape(x.shape) * w.reshape(1, 4, 1, 1) + b.reshape(1, 4, 1, 1)
    check(F.group_norm(T(x, device), 2, weight=T(w, device), bias=T(b, device)), gref, rtol=1e-10, atol=1e-10)
    xl = x.transpose(0, 2, 3, 1).copy()
    check(F.group_norm(T(xl, device), 2, weight=T(w, device), bias=T(b, device), data_format="NHWC"),
          gref.transpose(0, 2, 3, 1), rtol=1e-10, atol=1e-10)
    check_grad(lambda a, ww: F.group_norm(a, 2, weight=ww), [x[:, :, :2, :1], w], device)
    check_grad(lambda a: F.instance_norm(a), [x[:1, :2]], device)
    with pytest.raises(ValueError, match="group_norm"):
        F.group_norm(T(x, device), 3)


def test_local_response_norm(device):
    x = rnd(2, 5, 3)
    size, alpha, beta, k = 3, 1e-2, 0.75, 1.0
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0)))
    s = sum(sq[:, i:i + 5] for i in range(size))
    ref = x / (k + alpha / size * s) ** beta
    check(F.local_response_norm(T(x, device), size, alpha, beta, k), ref, rtol=1e-10)
    check_grad(lambda a: F.local_response_norm(a, 3, 1e-2), [x[:1]], device)


def test_normalize(device):
    x = rnd(3, 4)
    check(F.normalize(T(x, device)), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)
    check(F.normalize(T(x, device), p=1, axis=0), x / np.abs(x).sum(0, keepdims=True), rtol=1e-12)
    check(F.normalize(T(x, device), p=3, axis=-1),
          x / (np.abs(x) ** 3).sum(-1, keepdims=True) ** (1 / 3), rtol=1e-10)
    check_grad(lambda a: F.normalize(a), [x], device)
    with pytest.raises(IndexError, match="normalize"):
        F.normalize(T(x, device), axis=2)


# ---- common -----------------------------------------------------------------------------------------
def test_linear_bilinear(device):
    x, w, b = rnd(2, 3, 4), rnd(4, 5), rnd(5)
    check(F.linear(T(x, device), T(w, device), T(b, device)), x @ w + b, rtol=1e-12)
    check_grad(lambda a, ww, bb: F.linear(a, ww, bb), [x, w, b], device)
    with pytest.raises(ValueError, match="linear"):
        F.linear(T(x, device), T(rnd(3, 5), device))
    x1, x2, bw, bb = rnd(2, 3), rnd(2, 4), rnd(5, 3, 4), rnd(5)
    ref = np.einsum("ni,oij,nj->no", x1, bw, x2) + bb
    check(F.bilinear(T(x1, device), T(x2, device), T(bw, device), T(bb, device)), ref, rtol=1e-12)
    check_grad(lambda a, c, ww: F.bilinear(a, c, ww), [x1, x2, bw], device)


def test_dropout(device):
    oar.seed(5)
    x = np.ones((100, 50))
    y = F.dropout(T(x, device), 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.03
    np.testing.assert_allclose(y[kept], 1 / 0.7)
    check(F.dropout(T(x, device), 0.3, training=False), x)
    check(F.dropout(T(x, device), 0.3, training=False, mode="downscale_in_infer"), x * 0.7)
    y = F.dropout(T(x, device), 0.3, mode="downscale_in_infer").numpy()
    assert set(np.unique(y)) <= {0.0, 1.0}
    y = F.dropout(T(x, device), 0.5, axis=1).numpy()
    assert (y == y[:1]).all()  # the mask is shared along axis 0
    check(F.dropout(T(x, device), 1.0), np.zeros_like(x))
    x4 = np.ones((2, 8, 3, 3))
    y4 = F.dropout2d(T(x4, device), 0.5).numpy()
    assert ((y4 == 0).all(axis=(2, 3)) | (y4 != 0).all(axis=(2, 3))).all()
    y5 = F.dropout3d(T(np.ones((2, 8, 2, 2, 2)), device), 0.5).numpy()
    assert ((y5 == 0).all(axis=(2, 3, 4)) | (y5 != 0).all(axis=(2, 3, 4))).all()
    z = F.alpha_dropout(T(RNG.standard_normal((200, 200)), device), 0.2).numpy()
    assert abs(z.mean()) < 0.05 and abs(z.std() - 1) < 0.05
    # gradient flows through the kept elements only, scaled
    t = T(x[:4, :4], device, stop_gradient=False)
    out = F.dropout(t, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), out.numpy())
    with pytest.raises(ValueError, match="dropout"):
        F.dropout(T(x, device), 1.5)
    with pytest.raises(ValueError, match="dropout"):
        F.dropout(T(x, device), 0.5, mode="bad")


def test_embedding(device):
    w = rnd(6, 3)
    ids = np.array([[0, 2, 5], [2, 1, 2]], dtype="int64")
    check(F.embedding(T(ids, device), T(w, device)), w[ids], rtol=0)
    ref = w[ids].copy()
    ref[ids == 2] = 0
    check(F.embedding(T(ids, device), T(w, device), padding_idx=2), ref, rtol=0)
    check(F.embedding(T(ids, device), T(w, device), padding_idx=-4, sparse=True), ref, rtol=0)
    wt = T(w, device, stop_gradient=False)
    F.embedding(T(ids, device), wt, padding_idx=2).sum().backward()
    want = np.zeros_like(w)
    for i in ids.ravel():
        if i != 2:
            want[i] += 1
    check(wt.grad, want, rtol=0)
    with pytest.raises(IndexError, match="embedding"):
        F.embedding(T(np.array([7]), device), T(w, device))
    with pytest.raises(TypeError, match="embedding"):
        F.embedding(T(np.array([1.0]), device), T(w, device))


def test_one_hot_label_smooth(device):
    x = np.array([[1, 0], [3, 2]], dtype="int64")
    oh = F.one_hot(T(x, device), 4)
    check(oh, np.eye(4, dtype="float32")[x], dtype=oar.float32)
    with pytest.raises(ValueError, match="one_hot"):
        F.one_hot(T(x, device), 3)
    lab = np.eye(4)[[0, 2, 3]]
    check(F.label_smooth(T(lab, device), epsilon=0.2), lab * 0.8 + 0.05, rtol=1e-12)
    prior = np.array([[0.1, 0.2, 0.3, 0.4]])
    check(F.label_smooth(T(lab, device), T(prior, device), 0.2), lab * 0.8 + 0.2 * prior, rtol=1e-12)


def test_cosine_similarity_pairwise_distance(device):
    a, b = rnd(3, 4), rnd(3, 4)
    ref = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    check(F.cosine_similarity(T(a, device), T(b, device)), ref, rtol=1e-12)
    check_grad(lambda x, y: F.cosine_similarity(x, y, axis=1), [a, b], device)
    check(F.pairwise_distance(T(a, device), T(b, device)), np.linalg.norm(a - b + 1e-6, axis=-1), rtol=1e-12)
    check(F.pairwise_distance(T(a, device), T(b, device), p=1, keepdim=True),
          np.abs(a - b + 1e-6).sum(-1, keepdims=True), rtol=1e-12)
    check_grad(lambda x, y: F.pairwise_distance(x, y), [a, b], device)


# ---- losses -----------------------------------------------------------------------------------------
def np_log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_hard(dtype, device):
    x = rnd(6, 5, dtype=dtype)
    y = np.array([0, 4, 2, -100, 1, 4], dtype="int64")
    lp = np_log_softmax(x.astype(np.float64))
    valid = y != -100
    per = np.where(valid, -lp[np.arange(6), np.where(valid, y, 0)], 0)
    tol = 1e-5 if dtype == "float32" else 1e-12
    xt, yt = T(x, device), T(y, device)
    check(F.cross_entropy(xt, yt, reduction="none"), per.astype(dtype), rtol=tol, atol=tol)
    # Paddle: with a negative ignore_index the mean runs over every sample; with ignore_index >= 0 over
    # the samples not ignored
    check(F.cross_entropy(xt, yt), np.array(per.sum() / 6, dtype=dtype), rtol=tol)
    y4 = np.where(valid, y, 4)
    per4 = np.where(y4 != 4, -lp[np.arange(6), y4], 0)
    check(F.cross_entropy(xt, T(y4, device), ignore_index=4), np.array(per4.sum() / (y4 != 4).sum(), dtype=dtype),
          rtol=tol)
    check(F.cross_entropy(xt, T(np.full(6, 4), device), ignore_index=4), np.array(0, dtype=dtype))
    check(F.cross_entropy(xt, yt, reduction="sum"), np.array(per.sum(), dtype=dtype), rtol=tol)
    check(F.cross_entropy(xt, T(y.reshape(6, 1), device), reduction="none"), per.reshape(6, 1).astype(dtype),
          rtol=tol, atol=tol)
    w = RNG.uniform(0.5, 2, 5).astype(dtype)
    wi = np.where(valid, w[np.where(valid, y, 0)], 0)
    check(F.cross_entropy(xt, yt, weight=T(w, device)), np.array((per * wi).sum() / wi.sum(), dtype=dtype),
          rtol=tol)
    check(F.cross_entropy(xt, T(y.astype("int32"), device), reduction="sum"), np.array(per.sum(), dtype=dtype),
          rtol=tol)
    # use_softmax=False takes probabilities
    p = np.exp(lp).astype(dtype)
    check(F.cross_entropy(T(p, device), yt, use_softmax=False, reduction="none"), per.astype(dtype), rtol=1e-4,
          atol=1e-5)


def test_cross_entropy_axis_soft_smoothing(device):
    x = rnd(2, 4, 3)  # classes on axis 1
    y = RNG.integers(0, 4, (2, 3)).astype("int64")
    lp = np_log_softmax(x, axis=1)
    per = -np.take_along_axis(lp, y[:, None], 1)[:, 0]
    check(F.cross_entropy(T(x, device), T(y, device), axis=1, reduction="none"), per, rtol=1e-12)
    check(F.cross_entropy(T(x, device), T(y[:, None], device), axis=1), per.mean(), rtol=1e-12)
    soft = RNG.uniform(0, 1, (2, 4, 3))
    soft /= soft.sum(1, keepdims=True)
    check(F.cross_entropy(T(x, device), T(soft, device), soft_label=True, axis=1, reduction="none"),
          -(soft * lp).sum(1, keepdims=True), rtol=1e-12)
    check(F.cross_entropy(T(x, device), T(soft, device), soft_label=True, axis=1), -(soft * lp).sum(1).mean(),
          rtol=1e-12)
    eps = 0.1
    x2 = rnd(5, 4)
    y2 = np.array([0, 1, 2, 3, 1])
    sm = np.eye(4)[y2] * (1 - eps) + eps / 4
    ref = -(sm * np_log_softmax(x2)).sum(-1)
    check(F.cross_entropy(T(x2, device), T(y2, device), label_smoothing=eps), ref.mean(), rtol=1e-12)
    # Paddle: smoothed hard labels go through the soft-label path, whose 'none' output keeps [N, 1]
    check(F.cross_entropy(T(x2, device), T(y2, device), label_smoothing=eps, reduction="none"), ref[:, None],
          rtol=1e-12)


def test_cross_entropy_grad(device):
    x = rnd(4, 5)
    y = np.array([1, -100, 4, 0], dtype="int64")
    w = RNG.uniform(0.5, 2, 5)
    check_grad(lambda a: F.cross_entropy(a, oar.to_tensor(y, place=device)), [x], device)
    check_grad(lambda a: F.cross_entropy(a, oar.to_tensor(y, place=device), reduction="none"), [x], device)
    check_grad(lambda a, ww: F.cross_entropy(a, oar.to_tensor(y, place=device), weight=ww), [x, w], device)
    check_grad(lambda a: F.cross_entropy(a, oar.to_tensor(y[[0, 2, 3, 0]], place=device), label_smoothing=0.2),
               [x], device)
    soft = RNG.uniform(0, 1, (4, 5))
    check_grad(lambda a, s: F.cross_entropy(a, s, soft_label=True), [x, soft], device)
    x3 = rnd(2, 3, 2)
    y3 = RNG.integers(0, 3, (2, 2)).astype("int64")
    check_grad(lambda a: F.cross_entropy(a, oar.to_tensor(y3, place=device), axis=1), [x3], device)


def test_cross_entropy_errors(device):
    x = T(rnd(3, 4), device)
    with pytest.raises(ValueError, match="cross_entropy"):
        F.cross_entropy(x, T(np.array([0, 1]), device))
    with raises_on(device, IndexError, match="softmax_cross_entropy"):
        F.cross_entropy(x, T(np.array([0, 1, 4]), device))
    with pytest.raises(TypeError, match="cross_entropy"):
        F.cross_entropy(x, T(np.array([0.0, 1.0, 2.0]), device))
    with pytest.raises(ValueError, match="cross_entropy"):
        F.cross_entropy(x, T(np.array([0, 1, 2]), device), reduction="avg")
    with pytest.raises(IndexError, match="cross_entropy"):
        F.cross_entropy(x, T(np.array([0, 1, 2]), device), axis=2)


def test_softmax_with_cross_entropy(device):
    x = rnd(3, 4)
    y = np.array([[1], [0], [3]], dtype="int64")
    lp = np_log_softmax(x)
    loss, sm = F.softmax_with_cross_entropy(T(x, device), T(y, device), return_softmax=True)
    check(loss, -np.take_along_axis(lp, y, 1), rtol=1e-12)
    check(sm, np.exp(lp), rtol=1e-12)
    soft = np.exp(lp[::-1].copy())
    check(F.softmax_with_cross_entropy(T(x, device), T(soft, device), soft_label=True),
          -(soft * lp).sum(-1, keepdims=True), rtol=1e-12)
    x3 = rnd(2, 3, 2)
    y3 = RNG.integers(0, 3, (2, 1, 2)).astype("int64")
    check(F.softmax_with_cross_entropy(T(x3, device), T(y3, device), axis=1),
          -np.take_along_axis(np_log_softmax(x3, 1), y3, 1), rtol=1e-12)


def test_nll_loss(device):
    x = np_log_softmax(rnd(5, 4))
    y = np.array([0, 3, -100, 1, 3], dtype="int64")
    w = RNG.uniform(0.5, 2, 4)
    valid = y != -100
    sy = np.where(valid, y, 0)
    per = np.where(valid, -x[np.arange(5), sy], 0)
    check(F.nll_loss(T(x, device), T(y, device), reduction="none"), per, rtol=1e-12)
    check(F.nll_loss(T(x, device), T(y, device)), per.sum() / valid.sum(), rtol=1e-12)
    wi = np.where(valid, w[sy], 0)
    check(F.nll_loss(T(x, device), T(y, device), T(w, device)), (per * wi).sum() / wi.sum(), rtol=1e-12)
    x4 = rnd(2, 3, 2, 2)
    y4 = RNG.integers(0, 3, (2, 2, 2)).astype("int64")
    ref = -np.take_along_axis(x4, y4[:, None], 1)[:, 0]
    check(F.nll_loss(T(x4, device), T(y4, device), reduction="sum"), ref.sum(), rtol=1e-12)
    check_grad(lambda a, ww: F.nll_loss(a, oar.to_tensor(y, place=device), ww), [x, w], device)
    with pytest.raises(IndexError, match="nll_loss"):
        F.nll_loss(T(x, device), T(np.array([0, 1, 2, 3, 4]), device))
    with pytest.raises(ValueError, match="nll_loss"):
        F.nll_loss(T(x, device), T(np.array([0, 1]), device))


def _elementwise_losses():
    x, y = rnd(3, 4), rnd(3, 4)
    p = RNG.uniform(0.05, 0.95, (3, 4))
    t = RNG.uniform(0, 1, (3, 4))
    s = np.sign(rnd(3, 4))
    d = x - y
    return [
        ("mse", lambda a, b, r: F.mse_loss(a, b, r), x, y, d * d),
        ("l1", lambda a, b, r: F.l1_loss(a, b, r), x, y, np.abs(d)),
        ("smooth_l1", lambda a, b, r: F.smooth_l1_loss(a, b, r, delta=1.5), x, y,
         np.where(np.abs(d) < 1.5, 0.5 * d * d, 1.5 * (np.abs(d) - 0.75))),
        ("bce", lambda a, b, r: F.binary_cross_entropy(a, b, reduction=r), p, t,
         -(t * np.log(p) + (1 - t) * np.log(1 - p))),
        ("bce_logits", lambda a, b, r: F.binary_cross_entropy_with_logits(a, b, reduction=r), x, t,
         -(t * np.log(np_sigmoid(x)) + (1 - t) * np.log(1 - np_sigmoid(x)))),
        ("kl_div", lambda a, b, r: F.kl_div(a, b, r), x, t, t * (np.log(t) - x)),
        ("kl_div_log_target", lambda a, b, r: F.kl_div(a, b, r, log_target=True), x, y, np.exp(y) * (y - x)),
        ("soft_margin", lambda a, b, r: F.soft_margin_loss(a, b, r), x, s, np.log1p(np.exp(-s * x))),
        ("poisson", lambda a, b, r: F.poisson_nll_loss(a, b, reduction=r), x, t, np.exp(x) - t * x),
        ("hinge_embedding", lambda a, b, r: F.hinge_embedding_loss(a, b, 0.5, r), x, s,
         np.where(s == 1, x, np.maximum(0, 0.5 - x))),
    ]


@pytest.mark.parametrize("case", _elementwise_losses(), ids=lambda c: c[0])
def test_elementwise_losses(case, device):
    name, fn, a, b, per = case
    check(fn(T(a, device), T(b, device), "none"), per, rtol=1e-10, atol=1e-12)
    check(fn(T(a, device), T(b, device), "mean"), per.mean(), rtol=1e-10)
    check(fn(T(a, device), T(b, device), "sum"), per.sum(), rtol=1e-10)
    grad_args = [a, b] if name not in ("soft_margin", "hinge_embedding") else [a]
    if name in ("l1", "smooth_l1", "hinge_embedding"):
        a = a.copy()
    if len(grad_args) == 2:
        check_grad(lambda u, v: fn(u, v, "mean"), [a, b], device)
    else:
        check_grad(lambda u: fn(u, oar.to_tensor(b, place=device), "sum"), [a], device)
    with pytest.raises(ValueError, match="reduction"):
        fn(T(a, device), T(b, device), "bad")


def test_bce_weights_and_stability(device):
    x = np.array([-200.0, -5.0, 0.0, 5.0, 200.0])
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    pw = np.array([2.0, 2.0, 2.0, 2.0, 2.0])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    ls = -np.logaddexp(0, -x)
    lns = -np.logaddexp(0, x)
    ref = -(2.0 * t * ls + (1 - t) * lns) * w
    got = F.binary_cross_entropy_with_logits(T(x, device), T(t, device), T(w, device), "none", T(pw, device))
    check(got, ref, rtol=1e-12)
    check_grad(lambda a, ww, p: F.binary_cross_entropy_with_logits(a, oar.to_tensor(t[1:4], place=device), ww,
                                                                   pos_weight=p),
               [x[1:4], w[1:4], pw[1:4]], device)
    p = np.array([0.0, 0.3, 1.0])
    check(F.binary_cross_entropy(T(p, device), T(np.array([1.0, 1.0, 0.0]), device), T(np.array([1.0, 2, 3]), device),
                                 "none"), np.array([100.0, -2 * np.log(0.3), 300.0]), rtol=1e-12)
    with pytest.raises(ValueError, match="binary_cross_entropy"):
        F.binary_cross_entropy(T(p, device), T(np.ones(2), device))


def test_kl_div_batchmean(device):
    x, t = rnd(4, 3), RNG.uniform(0, 1, (4, 3))
    t[0, 0] = 0
    per = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - x), 0)
    check(F.kl_div(T(x, device), T(t, device), "batchmean"), per.sum() / 4, rtol=1e-12)


def test_ranking_and_embedding_losses(device):
    a, b = rnd(5), rnd(5)
    lab = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
    ref = np.maximum(0, -lab * (a - b) + 0.3)
    check(F.margin_ranking_loss(T(a, device), T(b, device), T(lab, device), 0.3, "none"), ref, rtol=1e-12)
    a2, b2 = rnd(5, 4), rnd(5, 4)
    cos = (a2 * b2).sum(1) / np.linalg.norm(a2, axis=1) / np.linalg.norm(b2, axis=1)
    ref = np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1))
    check(F.cosine_embedding_loss(T(a2, device), T(b2, device), T(lab, device), 0.1, "none"), ref, rtol=1e-8)
    check_grad(lambda u, v: F.cosine_embedding_loss(u, v, oar.to_tensor(lab, place=device), 0.1), [a2, b2], device)
    n2 = rnd(5, 4)
    dp = np.linalg.norm(a2 - b2 + 1e-6, axis=1)
    dn = np.linalg.norm(a2 - n2 + 1e-6, axis=1)
    check(F.triplet_margin_loss(T(a2, device), T(b2, device), T(n2, device), reduction="none"),
          np.maximum(dp - dn + 1.0, 0), rtol=1e-12)
    check_grad(lambda u, v, w: F.triplet_margin_loss(u, v, w, margin=3.0), [a2, b2, n2], device)


def test_focal_square_log_loss(device):
    x, t = rnd(3, 4), (RNG.uniform(0, 1, (3, 4)) > 0.5).astype("float64")
    p = np_sigmoid(x)
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    pt = p * t + (1 - p) * (1 - t)
    ref = (0.25 * t + 0.75 * (1 - t)) * ce * (1 - pt) ** 2
    check(F.sigmoid_focal_loss(T(x, device), T(t, device)), ref.sum(), rtol=1e-10)
    check(F.sigmoid_focal_loss(T(x, device), T(t, device), normalizer=T(np.array([4.0]), device), reduction="none"),
          ref / 4, rtol=1e-10)
    check_grad(lambda u: F.sigmoid_focal_loss(u, oar.to_tensor(t, place=device)), [x], device)
    a, b = rnd(3), rnd(3)
    check(F.square_error_cost(T(a, device), T(b, device)), (a - b) ** 2, rtol=1e-12)
    q = RNG.uniform(0.1, 0.9, 3)
    check(F.log_loss(T(q, device), T(np.array([1.0, 0.0, 1.0]), device)),
          -np.array([1, 0, 1]) * np.log(q + 1e-4) - np.array([0, 1, 0]) * np.log(1 - q + 1e-4), rtol=1e-12)


def test_more_losses(device):
    x, t = rnd(3, 4), (RNG.uniform(0, 1, (3, 4)) > 0.5).astype("float64")
    w = RNG.uniform(0.5, 2, 4)
    ls = -np.logaddexp(0, -x)
    lns = -np.logaddexp(0, x)
    ref = -((t * ls + (1 - t) * lns) * w).mean(-1)
    check(F.multi_label_soft_margin_loss(T(x, device), T(t, device), T(w, device), "none"), ref, rtol=1e-12)
    check_grad(lambda a: F.multi_label_soft_margin_loss(a, oar.to_tensor(t, place=device)), [x], device)
    y = np.array([0, 3, 1], dtype="int64")
    m = np.maximum(0, 1.0 - x[np.arange(3), y][:, None] + x)
    m[np.arange(3), y] = 0
    check(F.multi_margin_loss(T(x, device), T(y, device), reduction="none"), m.sum(1) / 4, rtol=1e-12)
    check(F.multi_margin_loss(T(x, device), T(y, device), p=2, weight=T(w, device)),
          ((m * m).sum(1) / 4 * w[y]).mean(), rtol=1e-12)
    check_grad(lambda a: F.multi_margin_loss(a, oar.to_tensor(y, place=device)), [x], device)
    var = RNG.uniform(0.5, 2, (3, 4))
    lab = rnd(3, 4)
    ref = 0.5 * (np.log(var) + (x - lab) ** 2 / var)
    check(F.gaussian_nll_loss(T(x, device), T(lab, device), T(var, device)), ref.mean(), rtol=1e-12)
    check(F.gaussian_nll_loss(T(x, device), T(lab, device), T(var, device), full=True, reduction="sum"),
          (ref + 0.5 * np.log(2 * np.pi)).sum(), rtol=1e-12)
    check_grad(lambda a, v: F.gaussian_nll_loss(a, oar.to_tensor(lab, place=device), v), [x, var], device)
    prob = RNG.uniform(0, 1, (2, 3, 4))
    lbl = RNG.integers(0, 4, (2, 3, 1)).astype("int64")
    oh = np.eye(4)[lbl[..., 0]]
    ref = (1 - 2 * (prob * oh).sum((1, 2)) / (prob.sum((1, 2)) + oh.sum((1, 2)) + 1e-5)).mean()
    check(F.dice_loss(T(prob, device), T(lbl, device)), ref, rtol=1e-12)
    a, p, n = rnd(3, 4), rnd(3, 4), rnd(3, 4)
    l1 = lambda u, v: (u - v).abs().sum(-1)  # noqa: E731
    ref = np.maximum(np.abs(a - p).sum(-1) - np.abs(a - n).sum(-1) + 1.0, 0).mean()
    check(F.triplet_margin_with_distance_loss(T(a, device), T(p, device), T(n, device), l1), ref, rtol=1e-12)
    with pytest.raises(ValueError, match="multi_margin_loss"):
        F.multi_margin_loss(T(x, device), T(y[:2], device))


def test_inplace_variants(device):
    a = rnd(3, 4)
    x = T(a, device)
    y = F.relu_(x)
    check(x, np.maximum(a, 0), rtol=0)
    assert y is x
    x = T(a, device)
    F.elu_(x, 0.5)
    check(x, np.where(a > 0, a, 0.5 * np.expm1(a)), rtol=1e-12)
    x = T(a, device)
    F.leaky_relu_(x, 0.1)
    check(x, np.where(a > 0, a, 0.1 * a), rtol=1e-12)
    x = T(a, device)
    F.softmax_(x)
    check(x, np.exp(np_log_softmax(a)), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cross_entropy_half(dtype, device):
    x = rnd(6, 5, dtype="float32")
    y = np.array([0, 4, 2, 1, 1, 3], dtype="int64")
    xt = T(x, device).astype(dtype)
    xt.stop_gradient = False
    loss = F.cross_entropy(xt, T(y, device))
    assert loss.dtype == xt.dtype
    lp = np_log_softmax(xt.astype("float32").numpy().astype(np.float64))
    np.testing.assert_allclose(float(loss.astype("float32")), -lp[np.arange(6), y].mean(), rtol=2e-2)
    loss.backward()
    want = (np.exp(lp) - np.eye(5)[y]) / 6
    np.testing.assert_allclose(xt.grad.astype("float32").numpy(), want, atol=1e-2)


def test_probability_inputs_with_zeros(device):
    """use_softmax=False and nll_loss pick the label's entry without touching log(0) elsewhere."""
    p = np.array([[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.5, 0.5, 0.0]])
    y = np.array([0, 1, -100])
    pt = T(p, device, stop_gradient=False)
    loss = F.cross_entropy(pt, T(y, device), use_softmax=False, reduction="sum")
    check(loss, -np.log(0.8), rtol=1e-12)
    loss.backward()
    want = np.zeros_like(p)
    want[0, 0], want[1, 1] = -1.0, -1 / 0.8
    check(pt.grad, want, rtol=1e-12)
    with np.errstate(divide="ignore"):
        lp = T(np.log(p), device, stop_gradient=False)  # -inf entries
    nl = F.nll_loss(lp, T(y, device))
    check(nl, np.log(0.8) / -2, rtol=1e-12)
    nl.backward()
    assert np.isfinite(lp.grad.numpy()).all()


def test_softmax_cross_entropy_float32_accuracy(device):
    """The float32 kernel's vectorised exp: softmax within ~1e-6 relative of the exact value over a wide
    range (including -87 and below, where exp underflows), NaN rows stay NaN."""
    x = (RNG.standard_normal((16, 300)) * RNG.uniform(0.1, 40, (16, 1))).astype("float32")
    x[0, :4] = [0, -87, -88, -1e30]
    y = RNG.integers(0, 300, (16, 1))
    loss, sm = F.softmax_with_cross_entropy(T(x, device), T(y, device), return_softmax=True)
    d = (x - x.max(1, keepdims=True)).astype(np.float64)
    ref = np.exp(d) / np.exp(d).sum(1, keepdims=True)
    big = ref > 1e-37
    np.testing.assert_allclose(sm.numpy()[big], ref[big], rtol=2e-6)
    assert np.abs(sm.numpy() - ref).max() < 1e-6
    lse = x.max(1).astype(np.float64) + np.log(np.exp(d).sum(1))
    np.testing.assert_allclose(loss.numpy()[:, 0], lse - x[np.arange(16), y[:, 0]], rtol=1e-6, atol=1e-5)
    xn = x.copy()
    xn[1, 3] = np.nan
    out = F.cross_entropy(T(xn, device), T(y, device), reduction="none").numpy()
    assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all()
