"""Edge cases of the CPU kernels' fast paths (issue 20: take_along_axis, pad, logsumexp/p_norm rows, atan2,
cross_entropy, layer_norm backward, sort): each against numpy or a float64 reference."""
import numpy as np
import pytest

import oar


def T(a):
    return oar.to_tensor(a)


@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_take_along_axis_negative_and_out_of_range(idx_dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7, 3)).astype(np.float32)
    for axis in (0, 1, 2):
        n = x.shape[axis]
        shp = list(x.shape)
        shp[axis] = 4
        ix = rng.integers(-n, n, shp).astype(idx_dtype)
        np.testing.assert_array_equal(oar.take_along_axis(T(x), T(ix), axis).numpy(),
                                      np.take_along_axis(x, ix.astype(np.int64) % n, axis))
    # a bad index anywhere (last element, first element) raises and names the op and the value
    ix = np.zeros((5, 2, 3), idx_dtype)
    ix[-1, -1, -1] = 7
    with pytest.raises(IndexError, match=r"take_along_axis: index 7 .*axis of size 7"):
        oar.take_along_axis(T(x), T(ix), 1)
    ix[-1, -1, -1] = 0
    ix[0, 0, 0] = -8
    with pytest.raises(IndexError, match=r"take_along_axis: index -8"):
        oar.take_along_axis(T(x), T(ix), 1)


def test_take_along_axis_broadcast_and_dtypes():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 9)).astype(np.float64)
    ix = rng.integers(0, 9, (1, 4))  # broadcast over the rows
    np.testing.assert_array_equal(oar.take_along_axis(T(x), T(ix), 1).numpy(),
                                  np.take_along_axis(x, np.broadcast_to(ix, (6, 4)), 1))
    for dt in ("int8", "int16", "bool", "float16"):
        xd = (x * 10).astype(dt)
        ix2 = rng.integers(0, 9, (6, 12))
        np.testing.assert_array_equal(oar.take_along_axis(T(xd), T(ix2), 1).numpy(), np.take_along_axis(xd, ix2, 1))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_last_axis_widths_near_the_size(mode):
    rng = np.random.default_rng(2)
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    for w in (1, 2, 5, 6):
        a = rng.standard_normal((2, 3, 4, w)).astype(np.float32)
        pmax = w - 1 if mode == "reflect" else w
        for left, right in ((pmax, 0), (0, pmax), (pmax, pmax), (1 if pmax else 0, pmax)):
            got = oar.pad(T(a), [left, right, 1 if mode != "reflect" or a.shape[2] > 1 else 0, 0], mode=mode,
                          value=2.5).numpy()
            top = 1 if mode != "reflect" or a.shape[2] > 1 else 0
            kw = {"constant_values": 2.5} if mode == "constant" else {}
            np.testing.assert_array_equal(got, np.pad(a, [(0, 0), (0, 0), (top, 0), (left, right)], np_mode, **kw))


def test_logsumexp_and_norm_rows_against_float64():
    rng = np.random.default_rng(3)
    for n in (1, 7, 8, 9, 255, 256, 257, 2048, 3000):
        x = (rng.standard_normal((5, n)) * 10).astype(np.float32)
        x64 = x.astype(np.float64)
        m = x64.max(-1, keepdims=True)
        ref = (np.log(np.exp(x64 - m).sum(-1, keepdims=True)) + m)[:, 0]
        np.testing.assert_allclose(oar.logsumexp(T(x), -1).numpy(), ref, rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(oar.linalg.norm(T(x), 2, axis=-1).numpy(), np.sqrt((x64 * x64).sum(-1)),
                                   rtol=2e-6)
    x = np.array([[1.0, np.nan, 2.0], [-np.inf, -np.inf, -np.inf], [np.inf, 1.0, 2.0], [0.0, 0.0, 0.0]], np.float32)
    np.testing.assert_array_equal(oar.logsumexp(T(x), -1).numpy(),
                                  np.array([np.nan, -np.inf, np.inf, np.log(3.0)], np.float32))
    np.testing.assert_array_equal(oar.linalg.norm(T(x), 2, axis=-1).numpy(), [np.nan, np.inf, np.inf, 0.0])


def test_atan2_float32_quadrants_and_reduction_boundary():
    rng = np.random.default_rng(4)
    a = rng.standard_normal(1 << 16).astype(np.float32)
    b = rng.standard_normal(1 << 16).astype(np.float32)
    # ratios at tan(pi/8), where the reduction switches on, and at 1 (both branches meet)
    t = np.float32(np.tan(np.pi / 8))
    a[:4], b[:4] = [t, -t, 1, -1], [1, 1, -1, 1]
    b[4:8] = np.nextafter(np.float32(1), np.float32(2)) * np.array([1, -1, 1, -1], np.float32)
    a[4:8] = 1
    got = oar.atan2(T(a), T(b)).numpy()
    ref = np.arctan2(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, ref, rtol=4e-7, atol=0)
    s = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, np.nan], np.float32)
    A, B = np.meshgrid(s, s)
    got = oar.atan2(T(A.ravel()), T(B.ravel())).numpy()
    ref = np.arctan2(A.ravel(), B.ravel())
    np.testing.assert_allclose(got, ref, rtol=3e-7, atol=0, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))


def _layer_norm_ref(x, w, b, g, eps=1e-5):
    x, w, b, g = (a.astype(np.float64) for a in (x, w, b, g))
    m = x.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    xh = (x - m) * rs
    wg = g * w
    dx = rs * (wg - wg.mean(-1, keepdims=True) - xh * (wg * xh).mean(-1, keepdims=True))
    return xh * w + b, dx, (g * xh).sum(0), g.sum(0)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 130, 768])
def test_layer_norm_float32_rows_forward_and_backward(n):
    import oar.nn.functional as F
    rng = np.random.default_rng(5)
    rows = 67
    x = (rng.standard_normal((rows, n)) * 3 + 1).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal((rows, n)).astype(np.float32)
    tx, tw, tb = (oar.to_tensor(a, stop_gradient=False) for a in (x, w, b))
    y = F.layer_norm(tx, n, tw, tb)
    dx, dw, db = oar.grad([y], [tx, tw, tb], [T(g)])
    ry, rdx, rdw, rdb = _layer_norm_ref(x, w, b, g)
    np.testing.assert_allclose(y.numpy(), ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx.numpy(), rdx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw.numpy(), rdw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.numpy(), rdb, rtol=1e-5, atol=1e-4)


def _log_softmax64(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("c", [1, 5, 8, 17, 1000])
def test_cross_entropy_float32_rows(c):
    import oar.nn.functional as F
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((33, c)) * 4).astype(np.float32)
    x[0, 0] = 80.0  # a large logit: the shift by the row max keeps exp finite
    lab = rng.integers(0, c, 33)
    lab[3] = -100  # ignored (the default ignore_index)
    tx = oar.to_tensor(x, stop_gradient=False)
    loss = F.cross_entropy(tx, T(lab), reduction="none")
    lp = _log_softmax64(x)
    ref = np.where(lab == -100, 0.0, -lp[np.arange(33), np.where(lab == -100, 0, lab)])
    np.testing.assert_allclose(loss.numpy().ravel(), ref, rtol=1e-5, atol=1e-5)
    (dx,) = oar.grad([F.cross_entropy(tx, T(lab))], [tx])
    onehot = np.eye(c)[np.where(lab == -100, 0, lab)] * (lab != -100)[:, None]
    rdx = (np.exp(lp) - onehot) * (lab != -100)[:, None] / 33  # negative ignore_index: mean over all rows
    np.testing.assert_allclose(dx.numpy(), rdx, rtol=1e-4, atol=1e-7)
    # ignore_index >= 0 leaves those rows out of the mean
    lab2 = rng.integers(0, c, 33)
    lab2[:5] = 0
    got = F.cross_entropy(T(x), T(lab2), ignore_index=0).numpy()
    keep = lab2 != 0
    np.testing.assert_allclose(got, -lp[np.arange(33), lab2][keep].mean() if keep.any() else 0.0, rtol=1e-5)
    # soft labels
    soft = rng.random((33, c)).astype(np.float32)
    soft /= soft.sum(-1, keepdims=True)
    got = F.cross_entropy(T(x), T(soft), soft_label=True).numpy()
    np.testing.assert_allclose(got, -(soft * lp).sum(-1).mean(), rtol=1e-5)
    bad = lab.copy()
    bad[7] = c
    with pytest.raises(Exception, match="cross_entropy"):
        F.cross_entropy(T(x), T(bad))


def _stable_sort_ref(a, descending):
    """numpy's stable order with -0.0 == 0.0 and every NaN after +inf (before -inf descending), ties in
    input order (descending: the flipped keys, so ties still in input order)."""
    key = np.where(np.isnan(a), np.inf, a).astype(np.float64)
    nan = np.isnan(a)
    if descending:
        order = np.lexsort((np.arange(a.size), -key, ~nan))
    else:
        order = np.lexsort((np.arange(a.size), key, nan))
    return a[order], order


@pytest.mark.parametrize("n", [300, 5000, 70000, 300000])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_values_written_from_keys_keep_zero_signs_and_nans(n, dtype, descending):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(n).astype(dtype)
    k = n // 10
    pos = rng.permutation(n)[:3 * k]
    a[pos[:k]] = 0.0
    a[pos[k:2 * k]] = -0.0
    a[pos[2 * k:2 * k + 5]] = np.inf
    a[pos[2 * k + 5:2 * k + 10]] = -np.inf
    bits = a.view(np.uint16 if dtype == "float16" else np.uint32 if dtype == "float32" else np.uint64)
    nan_bits = {"float16": [0x7e01, 0xfe00], "float32": [0x7fc00001, 0xffc00000],
                "float64": [0x7ff8000000000001, 0xfff8000000000000]}[dtype]
    bits[pos[2 * k + 10:2 * k + 20]] = nan_bits[0]  # payload NaN
    bits[pos[2 * k + 20:2 * k + 30]] = nan_bits[1]  # negative NaN
    v, i = oar.sort(T(a), descending=descending), oar.argsort(T(a), descending=descending)
    rv, ri = _stable_sort_ref(a, descending)
    np.testing.assert_array_equal(i.numpy(), ri)
    # the same bits: zeros keep their sign, NaNs their payload and sign
    np.testing.assert_array_equal(v.numpy().view(bits.dtype), rv.view(bits.dtype))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_sort_integer_values_from_keys(dtype):
    rng = np.random.default_rng(8)
    for n in (300, 70000):
        if dtype == "bool":
            a = rng.random(n) < 0.5
        else:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
            a[:2] = [info.min, info.max]
        np.testing.assert_array_equal(oar.sort(T(a)).numpy(), np.sort(a, kind="stable"))
        np.testing.assert_array_equal(oar.sort(T(a), descending=True).numpy(), np.sort(a, kind="stable")[::-1])
        m = a.reshape(-1, 10) if n % 10 == 0 else a
        np.testing.assert_array_equal(oar.sort(T(m), axis=0).numpy(), np.sort(m, 0, kind="stable"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_sort_values_only_path(dtype):
    """oar.sort of a tensor that needs no gradient sorts keys alone (values_only); a line holding -0.0 or
    NaN goes the positions way; a tensor that needs a gradient gets it through the positions."""
    rng = np.random.default_rng(9)
    for shape, axis in (((300,), -1), ((70000,), -1), ((3, 5000), 1), ((5000, 3), 0), ((2, 40), 1)):
        if dtype.startswith("float") or dtype == "bfloat16":
            a = rng.standard_normal(shape).astype(np.float32)
            t = oar.to_tensor(a).astype(dtype)
            a = t.astype("float32").numpy()  # the values t holds
        else:
            a = rng.integers(0, 200 if dtype == "uint8" else 1 << 30, shape).astype(dtype)
            a[..., :3] = 7  # ties
            t = T(a)
        for desc in (False, True):
            exp = np.sort(a, axis, kind="stable")
            exp = np.flip(exp, axis) if desc else exp
            got = oar.sort(t, axis, descending=desc)
            np.testing.assert_array_equal(got.astype("float32").numpy() if dtype == "bfloat16" else got.numpy(), exp)
    x = rng.standard_normal((4, 300)).astype(np.float32)
    tx = oar.to_tensor(x, stop_gradient=False)
    g = rng.standard_normal((4, 300)).astype(np.float32)
    (dx,) = oar.grad([oar.sort(tx, 1)], [tx], [T(g)])
    order = np.argsort(x, 1, kind="stable")
    ref = np.zeros_like(x)
    np.put_along_axis(ref, order, g, 1)
    np.testing.assert_array_equal(dx.numpy(), ref)
    with oar.no_grad():
        np.testing.assert_array_equal(oar.sort(tx, 1).numpy(), np.sort(x, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_cross_entropy_without_gradient_equals_the_training_loss(dtype):
    """Without a gradient cross_entropy asks for the loss alone (loss_only, no softmax written): the same bits
    as the loss computed with the softmax for the backward."""
    import oar.nn.functional as F
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((37, 1000)) * 3).astype(np.float32)
    lab = rng.integers(0, 1000, 37)
    lab[4] = -100
    tx = oar.to_tensor(x).astype(dtype)
    tx.stop_gradient = False
    for red in ("none", "mean", "sum"):
        with_grad = F.cross_entropy(tx, T(lab), reduction=red).numpy()
        with oar.no_grad():
            no_grad = F.cross_entropy(tx, T(lab), reduction=red).numpy()
        np.testing.assert_array_equal(no_grad, with_grad)
    stopped = F.cross_entropy(oar.to_tensor(x).astype(dtype), T(lab), reduction="none").numpy()
    np.testing.assert_array_equal(stopped, F.cross_entropy(tx, T(lab), reduction="none").numpy())
    bad = lab.copy()
    bad[0] = 1000
    with oar.no_grad(), pytest.raises(Exception, match="cross_entropy"):
        F.cross_entropy(tx, T(bad))


def test_norm2_float32_rows_extreme_magnitudes():
    """The float32 2-norm rows sum squares in double: no overflow near the float maximum, no loss to
    underflow among denormals, NaN and inf as before."""
    x = np.array([[2e38, 2e38, 1.0] + [0.0] * 9,  # the norm, 2.8e38, is a float; the squares are not
                  [1e-40, -2e-40, 3e-42] + [0.0] * 9,
                  [np.inf, np.nan] + [1.0] * 10,
                  [-np.inf] + [1.0] * 11], np.float32)
    got = oar.linalg.norm(T(x), 2, axis=-1).numpy()
    ref = np.sqrt((x.astype(np.float64) ** 2).sum(-1))
    np.testing.assert_allclose(got[:2], ref[:2].astype(np.float32), rtol=1e-6)
    assert np.isnan(got[2]) and got[3] == np.inf
    assert np.isfinite(got[0])
