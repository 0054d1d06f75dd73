"""Convolution, pooling and resampling ops: forward against numpy references written here, on every
device; gradients against finite differences (float64, tiny shapes); errors naming the op."""
import itertools

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from _util import check, check_grad


rng = np.random.default_rng(0)


def T(a, device, dtype=None):
    return oar.to_tensor(np.asarray(a), dtype=dtype, place=device)


# ---- numpy references ------------------------------------------------------------------------------
def conv_ref(x, w, s, p, d, g):
    """N-d convolution; p = [b0, e0, b1, e1, ...]."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[2 * i], p[2 * i + 1]) for i in range(nd)])
    n, c = x.shape[:2]
    o = w.shape[0]
    k = w.shape[2:]
    osz = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros([n, o] + osz)
    cg, og = c // g, o // g
    for gi in range(g):
        xg = xp[:, gi * cg:(gi + 1) * cg]
        wg = w[gi * og:(gi + 1) * og]
        for kk in np.ndindex(*k):
            sl = tuple(slice(kk[i] * d[i], kk[i] * d[i] + s[i] * (osz[i] - 1) + 1, s[i]) for i in range(nd))
            patch = xg[(slice(None), slice(None)) + sl]
            out[:, gi * og:(gi + 1) * og] += np.einsum("nc...,oc->no...", patch, wg[(slice(None), slice(None)) + kk])
    return out


def conv_transpose_ref(x, w, s, p, d, g, size):
    """Scatter form of the transposed convolution; w [Cin, Cout/g, k...]; crops to `size`."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    og = w.shape[1]
    k = w.shape[2:]
    full = [max((x.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1, size[i] + p[2 * i]) for i in range(nd)]
    y = np.zeros([n, og * g] + full)
    cg = c // g
    for gi in range(g):
        xg = x[:, gi * cg:(gi + 1) * cg]
        wg = w[gi * cg:(gi + 1) * cg]
        for kk in np.ndindex(*k):
            sl = tuple(slice(kk[i] * d[i], kk[i] * d[i] + s[i] * (x.shape[2 + i] - 1) + 1, s[i]) for i in range(nd))
            y[(slice(None), slice(gi * og, (gi + 1) * og)) + sl] += np.einsum(
                "nc...,co->no...", xg, wg[(slice(None), slice(None)) + kk])
    return y[(slice(None), slice(None)) + tuple(slice(p[2 * i], p[2 * i] + size[i]) for i in range(nd))]


def windows(L, k, s, p, O):
    """Paddle's pooling windows: start o*s-p, end min(start+k, L), start clipped to 0."""
    out = []
    for o in range(O):
        b = o * s - p
        out.append((max(b, 0), min(b + k, L)))
    return out


def adaptive_windows(L, O):
    return [((o * L) // O, -((-(o + 1) * L) // O)) for o in range(O)]


def pool_ref(x, wins, kind, kprod=None, exclusive=True, divisor=None):
    nd = x.ndim - 2
    shape = list(x.shape[:2]) + [len(w) for w in wins]
    out = np.zeros(shape)
    mask = np.zeros(shape, dtype=np.int32)
    for o in np.ndindex(*shape[2:]):
        sl = tuple(slice(*wins[i][o[i]]) for i in range(nd))
        patch = x[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1)
        if kind == "max":
            out[(Ellipsis,) + o] = patch.max(-1)
            am = patch.argmax(-1)
            # the flat in-plane index of the argmax
            sub = np.unravel_index(am, [wins[i][o[i]][1] - wins[i][o[i]][0] for i in range(nd)])
            flat = np.zeros_like(am)
            for i in range(nd):
                flat = flat * x.shape[2 + i] + sub[i] + wins[i][o[i]][0]
            mask[(Ellipsis,) + o] = flat
        else:
            div = divisor or (patch.shape[-1] if exclusive else kprod)
            out[(Ellipsis,) + o] = patch.sum(-1) / div
    return out, mask


def interp_matrix(L, O, mode, ratio, align, align_mode):
    """The [O, L] matrix of one dimension's resampling (Paddle's index rules)."""
    M = np.zeros((O, L))
    for o in range(O):
        if mode == "nearest":
            i = int(ratio * o + 0.5) if align else int(ratio * o)
            M[o, min(i, L - 1)] = 1
        elif mode == "linear":
            flag = align_mode == 0 and not align
            src = max(ratio * (o + 0.5) - 0.5 if flag else ratio * o, 0)
            i0 = min(int(src), L - 1)
            lam = src - i0
            M[o, i0] += 1 - lam
            M[o, min(i0 + 1, L - 1)] += lam
        else:  # cubic, A = -0.75
            src = ratio * o if align else ratio * (o + 0.5) - 0.5
            i0 = int(np.floor(src))
            t = src - i0
            A = -0.75

            def w(v):
                v = abs(v)
                if v <= 1:
                    return ((A + 2) * v - (A + 3)) * v * v + 1
                if v < 2:
                    return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
                return 0.0

            for j in range(4):
                M[o, min(max(i0 - 1 + j, 0), L - 1)] += w(t + 1 - j)
    return M


def interp_ref(x, size, mode, align=False, align_mode=0, scales=None):
    y = x
    for i, O in enumerate(size):
        L = x.shape[2 + i]
        if align:
            r = (L - 1) / (O - 1) if O > 1 else 0.0
        elif scales is not None:
            r = 1.0 / scales[i]
        else:
            r = L / O
        r = float(np.float32(r))
        M = interp_matrix(L, O, mode, r, align, align_mode)
        y = np.moveaxis(np.tensordot(M, np.moveaxis(y, 2 + i, 0), axes=(1, 0)), 0, 2 + i)
    return y


# ---- convolution -------------------------------------------------------------------------------
CONV_CASES = [
    # nd, N, Cin, Cout, spatial, k, stride, padding (Python form), explicit pads, dilation, groups
    (1, 2, 3, 4, [9], [3], [2], 1, [1, 1], [1], 1),
    (2, 2, 4, 6, [7, 6], [3, 2], [1, 2], [1, 0], [1, 1, 0, 0], [2, 1], 2),
    (2, 1, 3, 2, [5, 5], [3, 3], [1, 1], [0, 1, 2, 0], [0, 1, 2, 0], [1, 1], 1),
    (3, 1, 2, 4, [4, 5, 3], [2, 3, 2], [1, 2, 1], [[0, 0], [0, 0], [1, 0], [0, 1], [1, 1]], [1, 0, 0, 1, 1, 1],
     [1, 1, 1], 2),
]
FN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
FNT = {1: F.conv1d_transpose, 2: F.conv2d_transpose, 3: F.conv3d_transpose}


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_forward(device, case, dtype):
    nd, n, ci, co, sp, k, s, pad, pads, d, g = CONV_CASES[case]
    x = rng.standard_normal([n, ci] + sp)
    w = rng.standard_normal([co, ci // g] + k)
    b = rng.standard_normal(co)
    ref = conv_ref(x, w, s, pads, d, g) + b.reshape([1, co] + [1] * nd)
    y = FN[nd](T(x, device, dtype), T(w, device, dtype), T(b, device, dtype), stride=s, padding=pad, dilation=d,
               groups=g)
    tol = 1e-4 if dtype == "float32" else 1e-10
    check(y, ref, rtol=tol, atol=tol, dtype=getattr(oar, dtype))


def test_conv2d_channels_last_same_valid_and_noncontiguous(device):
    x = rng.standard_normal([2, 5, 6, 3])  # NHWC
    w = rng.standard_normal([4, 3, 3, 3])
    xc = x.transpose(0, 3, 1, 2)
    y = F.conv2d(T(x, device), T(w, device), stride=2, padding="SAME", data_format="NHWC")
    # SAME: out = ceil(in / 2); total pad = (out - 1) * 2 + 3 - in
    ref = conv_ref(xc, w, [2, 2], [1, 1, 0, 1], [1, 1], 1).transpose(0, 2, 3, 1)
    check(y, ref, rtol=1e-4, atol=1e-4)
    y = F.conv2d(T(xc, device), T(w, device), padding="VALID")
    check(y, conv_ref(xc, w, [1, 1], [0] * 4, [1, 1], 1), rtol=1e-4, atol=1e-4)
    # a transposed (non-contiguous) input view
    xt = T(x, device).transpose([0, 3, 1, 2])
    check(F.conv2d(xt, T(w, device), padding=1), conv_ref(xc, w, [1, 1], [1] * 4, [1, 1], 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_half(device, dtype):
    x = rng.standard_normal([1, 2, 5, 5]).astype(np.float32)
    w = rng.standard_normal([3, 2, 3, 3]).astype(np.float32)
    y = F.conv2d(T(x, device, dtype), T(w, device, dtype), padding=1)
    assert y.dtype == getattr(oar, dtype)
    ref = conv_ref(x, w, [1, 1], [1] * 4, [1, 1], 1)
    np.testing.assert_allclose(y.astype("float32").numpy(), ref, rtol=5e-2, atol=1e-1)


TCASES = [
    # nd, N, Cin, Cout/g, spatial, k, stride, padding, output_padding, dilation, groups
    (1, 2, 2, 3, [4], [3], [2], [1], [1], [1], 1),
    (2, 1, 4, 2, [3, 4], [3, 2], [2, 1], [1, 0], [1, 0], [1, 2], 2),
    (3, 1, 2, 2, [2, 3, 2], [2, 2, 3], [1, 2, 1], [0, 1, 1], [0, 1, 0], [1, 1, 1], 1),
]


@pytest.mark.parametrize("case", range(len(TCASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_transpose_forward(device, case, dtype):
    nd, n, ci, cog, sp, k, s, p, op_, d, g = TCASES[case]
    x = rng.standard_normal([n, ci] + sp)
    w = rng.standard_normal([ci, cog] + k)
    b = rng.standard_normal(cog * g)
    size = [(sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1 + op_[i] for i in range(nd)]
    pads = [v for q in p for v in (q, q)]
    ref = conv_transpose_ref(x, w, s, pads, d, g, size) + b.reshape([1, -1] + [1] * nd)
    y = FNT[nd](T(x, device, dtype), T(w, device, dtype), T(b, device, dtype), stride=s, padding=p,
                output_padding=op_, dilation=d, groups=g)
    tol = 1e-4 if dtype == "float32" else 1e-10
    check(y, ref, rtol=tol, atol=tol)
    # output_size instead of output_padding gives the same
    y2 = FNT[nd](T(x, device, dtype), T(w, device, dtype), T(b, device, dtype), stride=s, padding=p,
                 dilation=d, groups=g, output_size=size)
    check(y2, ref, rtol=tol, atol=tol)


def test_conv_transpose_channels_last(device):
    x = rng.standard_normal([1, 3, 4, 2])
    w = rng.standard_normal([2, 3, 2, 2])
    y = F.conv2d_transpose(T(x, device), T(w, device), stride=2, data_format="NHWC")
    ref = conv_transpose_ref(x.transpose(0, 3, 1, 2), w, [2, 2], [0] * 4, [1, 1], 1, [6, 8]).transpose(0, 2, 3, 1)
    check(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_grad(device, case):
    nd, n, ci, co, sp, k, s, pad, pads, d, g = CONV_CASES[case]
    sp = [min(v, 5) for v in sp]
    n = 1
    x = rng.standard_normal([n, ci] + sp)
    w = rng.standard_normal([co, ci // g] + k)
    b = rng.standard_normal(co)
    check_grad(lambda x, w, b: FN[nd](x, w, b, stride=s, padding=pad, dilation=d, groups=g), [x, w, b], device)


@pytest.mark.parametrize("case", range(len(TCASES)))
def test_conv_transpose_grad(device, case):
    nd, n, ci, cog, sp, k, s, p, op_, d, g = TCASES[case]
    x = rng.standard_normal([1, ci] + sp)
    w = rng.standard_normal([ci, cog] + k)
    check_grad(lambda x, w: FNT[nd](x, w, stride=s, padding=p, output_padding=op_, dilation=d, groups=g), [x, w],
               device)


def test_conv_double_grad(device):
    # The gradient ops are themselves differentiable: d/dx of sum(dL/dw * v).
    x = rng.standard_normal([1, 2, 4, 4])
    w = rng.standard_normal([2, 2, 2, 2])

    def fn(x, w):
        with oar.enable_grad():
            if w.stop_gradient:  # check_grad's finite-difference pass: a fresh leaf
                w = w.detach()
                w.stop_gradient = False
            y = F.conv2d(x, w, stride=1, padding=1)
            (gw,) = oar.grad([(y * y).sum()], [w], create_graph=True)
        return gw

    check_grad(fn, [x, w], device, rtol=1e-4, atol=1e-5)


def test_conv_float32_grads_match_float64(device):
    # oneDNN backward-data / backward-weights against the float64 loops
    x = rng.standard_normal([2, 4, 7, 7])
    w = rng.standard_normal([6, 2, 3, 3])
    gy = rng.standard_normal([2, 6, 4, 4])
    out = {}
    for dt in ("float32", "float64"):
        xt = T(x, device, dt)
        wt = T(w, device, dt)
        xt.stop_gradient = False
        wt.stop_gradient = False
        y = F.conv2d(xt, wt, stride=2, padding=1, groups=2)
        (y * T(gy, device, dt)).sum().backward()
        out[dt] = (y.numpy(), xt.grad.numpy(), wt.grad.numpy())
    for a, b in zip(out["float32"], out["float64"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nd,groups", [(1, 1), (2, 1), (2, 4), (3, 2)])
def test_conv_float32_blocked_layouts(nd, groups):
    # Enough channels that oneDNN picks blocked layouts (reorders in and out); checked against the
    # float64 loops for forward, backward-data and backward-weights.
    sp = {1: [11], 2: [9, 8], 3: [5, 6, 4]}[nd]
    x = rng.standard_normal([2, 32] + sp)
    w = rng.standard_normal([48, 32 // groups] + [3] * nd) * 0.1
    out = {}
    for dt in ("float32", "float64"):
        xt, wt = T(x, "cpu", dt), T(w, "cpu", dt)
        xt.stop_gradient = False
        wt.stop_gradient = False
        y = FN[nd](xt, wt, stride=2, padding=1, groups=groups)
        (y * y).sum().backward()
        out[dt] = (y.numpy(), xt.grad.numpy(), wt.grad.numpy())
    for a, b in zip(out["float32"], out["float64"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)


def test_conv_errors(device):
    x = T(rng.standard_normal([1, 4, 5, 5]), device)
    w = T(rng.standard_normal([2, 3, 3, 3]), device)
    with pytest.raises(ValueError, match="conv2d.*channels"):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match="conv"):
        F.conv2d(x, T(rng.standard_normal([3, 2, 3, 3]), device), groups=2)  # 3 % 2
    with pytest.raises(ValueError, match="conv2d.*x must be 4-D"):
        F.conv2d(T(rng.standard_normal([4, 5, 5]), device), w)
    with pytest.raises(ValueError, match="conv2d.*data_format"):
        F.conv2d(x, w, data_format="NCWH")
    with pytest.raises(ValueError, match="conv2d.*padding"):
        F.conv2d(x, T(rng.standard_normal([2, 4, 3, 3]), device), padding=[1, 2, 3])
    with pytest.raises(ValueError, match="conv.*kernel"):
        F.conv2d(x, T(rng.standard_normal([2, 4, 7, 7]), device))
    with pytest.raises(TypeError, match="conv"):
        F.conv2d(T(np.ones([1, 4, 5, 5], np.int32), device), T(np.ones([2, 4, 3, 3], np.int32), device))
    with pytest.raises(ValueError, match="conv2d_transpose.*output_padding"):
        F.conv2d_transpose(x, T(rng.standard_normal([4, 2, 3, 3]), device), stride=1, output_padding=1)
    with pytest.raises(ValueError, match="conv2d_transpose.*output_size"):
        F.conv2d_transpose(x, T(rng.standard_normal([4, 2, 3, 3]), device), stride=2, output_size=[20, 20])


# ---- pooling --------------------------------------------------------------------------------------
POOL_CASES = [
    # nd, shape, kernel, stride, padding, ceil_mode
    (1, [2, 3, 9], [3], [2], [1], False),
    (2, [1, 2, 7, 6], [3, 2], [2, 2], [1, 0], True),
    (2, [2, 1, 5, 5], [2, 2], None, [0, 0], False),
    (3, [1, 2, 4, 5, 3], [2, 3, 2], [2, 1, 1], [0, 1, 1], False),
]
MAXP = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
AVGP = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool_windows(shape, k, s, p, ceil):
    s = s or k
    wins = []
    for i, L in enumerate(shape[2:]):
        num = L + 2 * p[i] - k[i] + (s[i] - 1 if ceil else 0)
        wins.append(windows(L, k[i], s[i], p[i], num // s[i] + 1))
    return wins


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool_forward(device, case, dtype):
    nd, shape, k, s, p, ceil = POOL_CASES[case]
    x = rng.standard_normal(shape)
    ref, mref = pool_ref(x, _pool_windows(shape, k, s, p, ceil), "max")
    y, m = MAXP[nd](T(x, device, dtype), k, stride=s, padding=p, ceil_mode=ceil, return_mask=True)
    check(y, ref, rtol=1e-6, atol=1e-6)
    check(m, mref)
    assert m.dtype == oar.int32


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("exclusive", [True, False])
def test_avg_pool_forward(device, case, exclusive):
    nd, shape, k, s, p, ceil = POOL_CASES[case]
    x = rng.standard_normal(shape)
    ref, _ = pool_ref(x, _pool_windows(shape, k, s, p, ceil), "avg", int(np.prod(k)), exclusive)
    y = AVGP[nd](T(x, device), k, stride=s, padding=p, ceil_mode=ceil, exclusive=exclusive)
    check(y, ref, rtol=1e-5, atol=1e-6)


def test_avg_pool_divisor_and_channels_last(device):
    x = rng.standard_normal([1, 2, 4, 4])
    ref, _ = pool_ref(x, _pool_windows(x.shape, [2, 2], [2, 2], [1, 1], False), "avg", divisor=3)
    check(F.avg_pool2d(T(x, device), 2, 2, 1, divisor_override=3), ref, rtol=1e-5, atol=1e-6)
    xl = x.transpose(0, 2, 3, 1)
    ref, _ = pool_ref(x, _pool_windows(x.shape, [2, 2], [1, 1], [0, 0], False), "max")
    check(F.max_pool2d(T(xl, device), 2, 1, data_format="NHWC"), ref.transpose(0, 2, 3, 1))
    # SAME: out = ceil(in / s)
    y = F.max_pool2d(T(x, device), 3, 2, padding="SAME")
    assert y.shape == [1, 2, 2, 2]


@pytest.mark.parametrize("nd,shape,out", [(1, [2, 3, 7], [3]), (2, [1, 2, 5, 7], [3, 4]),
                                          (3, [1, 1, 4, 5, 6], [2, 3, 4])])
def test_adaptive_pools(device, nd, shape, out):
    x = rng.standard_normal(shape)
    wins = [adaptive_windows(L, O) for L, O in zip(shape[2:], out)]
    aref, _ = pool_ref(x, wins, "avg")
    mref, mask = pool_ref(x, wins, "max")
    avg = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nd]
    mx = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[nd]
    arg = out if nd > 1 else out[0]
    check(avg(T(x, device), arg), aref, rtol=1e-6, atol=1e-6)
    y, m = mx(T(x, device), arg, return_mask=True)
    check(y, mref)
    check(m, mask)
    if nd == 2:  # None keeps the input size
        assert F.adaptive_avg_pool2d(T(x, device), [None, 3]).shape == [1, 2, 5, 3]


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pool_grads(device, case):
    nd, shape, k, s, p, ceil = POOL_CASES[case]
    shape = [1] + shape[1:]
    # distinct values keep the max away from ties (finite differences need a unique argmax)
    x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1
    check_grad(lambda x: MAXP[nd](x, k, stride=s, padding=p, ceil_mode=ceil), [x], device)
    check_grad(lambda x: AVGP[nd](x, k, stride=s, padding=p, ceil_mode=ceil, exclusive=False), [x], device)
    check_grad(lambda x: AVGP[nd](x, k, stride=s, padding=p, ceil_mode=ceil), [x], device)


def test_adaptive_pool_grads(device):
    x = rng.permutation(35).reshape(1, 1, 5, 7) * 0.1
    check_grad(lambda x: F.adaptive_max_pool2d(x, [2, 3]), [x], device)
    check_grad(lambda x: F.adaptive_avg_pool2d(x, [3, 4]), [x], device)
    # avg_pool_grad is differentiable (its rule is avg_pool)
    x = rng.standard_normal([1, 1, 4, 4])

    def fn(x):
        with oar.enable_grad():
            if x.stop_gradient:
                x = x.detach()
                x.stop_gradient = False
            y = F.avg_pool2d(x, 2, 1, exclusive=False)
            (gx,) = oar.grad([(y * y).sum()], [x], create_graph=True)
        return gx

    check_grad(fn, [x], device)


def test_pool_errors(device):
    x = T(rng.standard_normal([1, 2, 4, 4]), device)
    with pytest.raises(ValueError, match="max_pool2d.*kernel_size"):
        F.max_pool2d(x, [2, 2, 2])
    with pytest.raises(ValueError, match="max_pool"):
        F.max_pool2d(x, 6)
    with pytest.raises(ValueError, match="avg_pool2d.*x must be 4-D"):
        F.avg_pool2d(T(rng.standard_normal([2, 4, 4]), device), 2)
    with pytest.raises(ValueError, match="adaptive_avg_pool2d.*output_size"):
        F.adaptive_avg_pool2d(x, [0, 2])
    with pytest.raises(TypeError, match="max_pool"):
        F.max_pool2d(T(np.ones([1, 1, 4, 4], np.int64), device), 2)


# ---- resampling ---------------------------------------------------------------------------------
INTERP_CASES = [
    # mode, shape, size, scale, align_corners, align_mode
    ("nearest", [1, 2, 4, 5], [7, 3], None, False, 0),
    ("nearest", [1, 1, 3], None, 2.0, False, 0),
    ("bilinear", [2, 1, 4, 5], [6, 7], None, False, 0),
    ("bilinear", [1, 2, 4, 5], [3, 8], None, True, 0),
    ("bilinear", [1, 1, 4, 4], None, [1.5, 2.0], False, 1),
    ("linear", [1, 2, 5], [8], None, False, 0),
    ("trilinear", [1, 1, 3, 4, 2], [4, 3, 5], None, False, 0),
    ("bicubic", [1, 1, 4, 5], [7, 6], None, False, 0),
    ("bicubic", [1, 1, 4, 5], [6, 3], None, True, 0),
]


@pytest.mark.parametrize("case", range(len(INTERP_CASES)))
def test_interpolate_forward(device, case):
    mode, shape, size, scale, align, amode = INTERP_CASES[case]
    x = rng.standard_normal(shape)
    nd = len(shape) - 2
    fmt = ("NCW", "NCHW", "NCDHW")[nd - 1]
    if size is None:
        sc = [scale] * nd if np.isscalar(scale) else scale
        osz = [int(n * s) for n, s in zip(shape[2:], sc)]
    else:
        sc, osz = None, size
    kind = "nearest" if mode == "nearest" else "cubic" if mode == "bicubic" else "linear"
    ref = interp_ref(x, osz, kind, align, amode, sc)
    y = F.interpolate(T(x, device), size=size, scale_factor=scale, mode=mode, align_corners=align, align_mode=amode,
                      data_format=fmt)
    check(y, ref, rtol=1e-5, atol=1e-5)


def test_interpolate_channels_last_and_area(device):
    x = rng.standard_normal([1, 4, 5, 2])
    ref = interp_ref(x.transpose(0, 3, 1, 2), [8, 3], "linear").transpose(0, 2, 3, 1)
    check(F.upsample(T(x, device), size=[8, 3], mode="bilinear", data_format="NHWC"), ref, rtol=1e-5, atol=1e-5)
    xc = x.transpose(0, 3, 1, 2)
    aref, _ = pool_ref(xc, [adaptive_windows(4, 2), adaptive_windows(5, 3)], "avg")
    check(F.interpolate(T(xc, device), size=[2, 3], mode="area"), aref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode,align", [("nearest", False), ("bilinear", False), ("bilinear", True),
                                        ("bicubic", False)])
def test_interpolate_grad(device, mode, align):
    x = rng.standard_normal([1, 2, 3, 4])
    check_grad(lambda x: F.interpolate(x, size=[5, 3], mode=mode, align_corners=align), [x], device)


def test_interpolate_errors(device):
    x = T(rng.standard_normal([1, 2, 3, 4]), device)
    with pytest.raises(ValueError, match="interpolate.*mode"):
        F.interpolate(x, size=[4, 4], mode="cubic")
    with pytest.raises(ValueError, match="interpolate.*trilinear"):
        F.interpolate(x, size=[4, 4], mode="trilinear")
    with pytest.raises(ValueError, match="interpolate.*size"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="interpolate.*align_corners"):
        F.interpolate(x, size=[4, 4], mode="nearest", align_corners=True)


def test_pixel_and_channel_shuffle(device):
    x = rng.standard_normal([2, 8, 3, 2])
    r = 2
    ref = x.reshape(2, 2, r, r, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 4)
    y = F.pixel_shuffle(T(x, device), 2)
    check(y, ref)
    check(F.pixel_unshuffle(y, 2), x)
    check(F.pixel_shuffle(T(x.transpose(0, 2, 3, 1), device), 2, data_format="NHWC"), ref.transpose(0, 2, 3, 1))
    check(F.channel_shuffle(T(x, device), 4), x.reshape(2, 4, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(x.shape))
    check_grad(lambda x: F.pixel_shuffle(x, 2), [x[:1]], device)
    with pytest.raises(ValueError, match="pixel_shuffle"):
        F.pixel_shuffle(T(x, device), 3)
    with pytest.raises(ValueError, match="channel_shuffle"):
        F.channel_shuffle(T(x, device), 3)


def unfold_ref(x, k, s, p, d):
    """p = [top, left, bottom, right] as Paddle."""
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])])
    n, c, H, W = xp.shape
    oh = (H - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = np.zeros((n, c, k[0], k[1], oh, ow))
    for a, b in itertools.product(range(k[0]), range(k[1])):
        cols[:, :, a, b] = xp[:, :, a * d[0]:a * d[0] + s[0] * (oh - 1) + 1:s[0], b * d[1]:b * d[1] + s[1] * (ow - 1) + 1:s[1]]
    return cols.reshape(n, c * k[0] * k[1], oh * ow)


def test_unfold_fold(device):
    x = rng.standard_normal([2, 3, 5, 6])
    k, s, p, d = [2, 3], [1, 2], [1, 0, 0, 1], [2, 1]
    ref = unfold_ref(x, k, s, p, d)
    y = F.unfold(T(x, device), k, s, p, d)
    check(y, ref, rtol=1e-6, atol=1e-6)
    # fold is the adjoint of unfold: <unfold(x), c> == <x, fold(c)>
    c = rng.standard_normal(ref.shape)
    f = F.fold(T(c, device), [5, 6], k, s, p, d).numpy()
    np.testing.assert_allclose((ref * c).sum(), (x * f).sum(), rtol=1e-5)
    # non-overlapping blocks: fold(unfold(x)) == x
    check(F.fold(F.unfold(T(x[:, :, :4, :6], device), 2, 2), [4, 6], 2, 2), x[:, :, :4, :6])
    check_grad(lambda x: F.unfold(x, [2, 2], 1, 1), [x[:1, :1, :3, :3]], device)
    check_grad(lambda c: F.fold(c, [3, 3], 2, 1), [rng.standard_normal([1, 4, 4])], device)
    with pytest.raises(ValueError, match="fold"):
        F.fold(T(c, device), [7, 7], k, s, p, d)
    with pytest.raises(ValueError, match="unfold.*4-D"):
        F.unfold(T(x[0], device), 2)


def grid_sample_ref(x, grid, mode, pad, align):
    n, c, H, W = x.shape
    ho, wo = grid.shape[1:3]
    out = np.zeros((n, c, ho, wo))

    def src(g, size):
        v = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        if pad == "border":
            v = min(max(v, 0), size - 1)
        elif pad == "reflection":
            lo, hi = (0, size - 1) if align else (-0.5, size - 0.5)
            span = hi - lo
            if span <= 0:
                v = 0
            else:
                t = abs(v - lo) % (2 * span)
                v = lo + (t if t <= span else 2 * span - t)
            v = min(max(v, 0), size - 1)
        return v

    def at(b, yy, xx):
        if 0 <= yy < H and 0 <= xx < W:
            return x[b, :, yy, xx]
        return np.zeros(c)

    for b, i, j in np.ndindex(n, ho, wo):
        gx = src(grid[b, i, j, 0], W)
        gy = src(grid[b, i, j, 1], H)
        if mode == "nearest":
            out[b, :, i, j] = at(b, int(np.rint(gy)), int(np.rint(gx)))
        else:
            x0, y0 = int(np.floor(gx)), int(np.floor(gy))
            fx, fy = gx - x0, gy - y0
            out[b, :, i, j] = (at(b, y0, x0) * (1 - fx) * (1 - fy) + at(b, y0, x0 + 1) * fx * (1 - fy) +
                               at(b, y0 + 1, x0) * (1 - fx) * fy + at(b, y0 + 1, x0 + 1) * fx * fy)
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
def test_grid_sample(device, mode, pad, align):
    x = rng.standard_normal([2, 3, 4, 5])
    grid = rng.uniform(-1.4, 1.4, [2, 3, 2, 2])
    y = F.grid_sample(T(x, device), T(grid, device), mode=mode, padding_mode=pad, align_corners=align)
    check(y, grid_sample_ref(x, grid, mode, pad, align), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_grid_sample_grad(device, pad):
    x = rng.standard_normal([1, 2, 3, 4])
    # keep sample points away from pixel edges and clip boundaries (kinks for finite differences)
    grid = rng.uniform(-0.9, 0.9, [1, 2, 3, 2])
    check_grad(lambda x, g: F.grid_sample(x, g, padding_mode=pad, align_corners=False), [x, grid], device,
               rtol=1e-4, atol=1e-5)
    check_grad(lambda x: F.grid_sample(x, oar.to_tensor(grid, place=device), mode="nearest"), [x], device)


def test_affine_grid_and_errors(device):
    theta = rng.standard_normal([2, 2, 3])
    for align in (True, False):
        g = F.affine_grid(T(theta, device), [2, 1, 3, 4], align_corners=align)
        xs = np.linspace(-1, 1, 4) if align else (np.arange(4) * 2 + 1) / 4 - 1
        ys = np.linspace(-1, 1, 3) if align else (np.arange(3) * 2 + 1) / 3 - 1
        base = np.stack(list(np.meshgrid(xs, ys)) + [np.ones((3, 4))], -1)
        check(g, np.einsum("hwk,njk->nhwj", base, theta), rtol=1e-6, atol=1e-6)
    check_grad(lambda t: F.affine_grid(t, [2, 1, 2, 3]), [theta], device)
    with pytest.raises(ValueError, match="affine_grid"):
        F.affine_grid(T(theta, device), [3, 1, 2, 2])
    x = T(rng.standard_normal([1, 2, 3, 3]), device)
    with pytest.raises(ValueError, match="grid_sample.*grid"):
        F.grid_sample(x, T(rng.standard_normal([1, 2, 2, 3]), device))
    with pytest.raises(ValueError, match="grid_sample.*padding_mode"):
        F.grid_sample(x, T(rng.standard_normal([1, 2, 2, 2]), device), padding_mode="wrap")
