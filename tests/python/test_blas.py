"""The CPU plugin's BLAS paths against numpy: float64/complex matmul through OpenBLAS's gemm (every
transpose, batch and broadcast layout), the blocked integer kernel (wrapping as numpy wraps), LAPACK
ops through the same library, and the sort kernels (NaN order, stability, empty and 1-element rows,
small and long rows, non-contiguous inputs)."""
import numpy as np
import pytest

import oar
from _util import check, check_grad

RNG = np.random.default_rng(20)


def T(a, **kw):
    return oar.to_tensor(a, place="cpu", **kw)


def rand(dtype, *shape):
    if np.dtype(dtype).kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)  # products wrap
    return RNG.standard_normal(shape).astype(dtype)


def ref_matmul(a, b, tx, ty):
    if tx and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if ty and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    if a.dtype.kind in "iu":  # numpy's integer matmul wraps; object arithmetic then cast checks it
        with np.errstate(over="ignore"):
            return np.matmul(a, b)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    return np.matmul(a.astype(wide), b.astype(wide))


SHAPES = [  # (x shape, y shape): plain, vectors, batched, batch times one matrix, mixed broadcast, odd sizes
    ((7, 5), (5, 9)),
    ((5,), (5, 3)),
    ((4, 5), (5,)),
    ((3, 6, 5), (3, 5, 4)),
    ((3, 6, 5), (5, 4)),
    ((2, 1, 4, 3), (1, 3, 3, 6)),
    ((130, 70), (70, 1030)),  # several column blocks of the integer kernel, rows not a multiple of 4
    ((2, 80, 90), (2, 90, 100)),  # batched matrices big enough for one threaded gemm each
]


@pytest.mark.parametrize("dtype", ["float64", "complex64", "complex128", "int8", "uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])) + "@" + "x".join(map(str, s[1])))
def test_matmul_paths(dtype, shapes):
    xs, ys = shapes
    for tx in (False, True):
        for ty in (False, True):
            a = rand(dtype, *xs)
            b = rand(dtype, *ys)
            sa = np.swapaxes(a, -1, -2).copy() if tx and a.ndim >= 2 else a
            sb = np.swapaxes(b, -1, -2).copy() if ty and b.ndim >= 2 else b
            got = oar.matmul(T(sa), T(sb), transpose_x=tx, transpose_y=ty)
            exp = ref_matmul(sa, sb, tx and a.ndim >= 2, ty and b.ndim >= 2)
            assert got.dtype == getattr(oar, dtype)
            if np.dtype(dtype).kind in "iu":
                check(got, exp.astype(dtype))
            else:
                tol = 1e-4 if dtype == "complex64" else 1e-10
                check(got, exp.astype(dtype), rtol=tol, atol=tol * max(1, xs[-1]))


def test_matmul_noncontiguous_and_empty():
    a, b = rand("float64", 6, 8), rand("float64", 8, 10)
    check(oar.matmul(T(a)[:, ::2], T(b)[::2]), a[:, ::2] @ b[::2], rtol=1e-12, atol=1e-12)
    check(oar.matmul(T(a).transpose([1, 0]), T(a)), a.T @ a, rtol=1e-12, atol=1e-12)
    i = rand("int64", 6, 8)
    with np.errstate(over="ignore"):
        check(oar.matmul(T(i).transpose([1, 0]), T(i)), i.T @ i)
    for dtype in ("float64", "complex128", "int32"):
        check(oar.matmul(T(np.zeros((3, 0), dtype)), T(np.zeros((0, 4), dtype))), np.zeros((3, 4), dtype))
        check(oar.matmul(T(np.zeros((0, 5), dtype)), T(np.ones((5, 4), dtype))), np.zeros((0, 4), dtype))


def test_matmul_float64_large_and_gradient():
    # One gemm threaded by OpenBLAS, and the backward (two more gemms with transposes).
    a, b = rand("float64", 300, 200), rand("float64", 200, 250)
    x, y = T(a, stop_gradient=False), T(b, stop_gradient=False)
    out = oar.matmul(x, y)
    check(out, a @ b, rtol=1e-12, atol=1e-10)
    g = rand("float64", 300, 250)
    out.backward(T(g))
    check(x.grad, g @ b.T, rtol=1e-12, atol=1e-10)
    check(y.grad, a.T @ g, rtol=1e-12, atol=1e-10)


def test_einsum_float64_batched():
    a, c = rand("float64", 8, 40, 40), rand("float64", 8, 40, 30)
    check(oar.einsum("bij,bjk->bik", T(a), T(c)), np.einsum("bij,bjk->bik", a, c), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 64, 200])
def test_lapack_ops_float64(n):
    a = rand("float64", 2, n, n) + n * np.eye(n)
    b = rand("float64", 2, n, 3)
    check(oar.linalg.inv(T(a)), np.linalg.inv(a), rtol=1e-9, atol=1e-9)
    check(oar.linalg.solve(T(a), T(b)), np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
    check(oar.linalg.det(T(a / n)), np.linalg.det(a / n), rtol=1e-9, atol=0)  # scaled: no overflow
    spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    check(oar.linalg.cholesky(T(spd)), np.linalg.cholesky(spd), rtol=1e-9, atol=1e-9)
    w = oar.linalg.eigvalsh(T(spd))
    check(w, np.linalg.eigvalsh(spd), rtol=1e-9, atol=1e-9)
    s = oar.linalg.svd(T(a))[1]
    check(s, np.linalg.svd(a, compute_uv=False), rtol=1e-9, atol=1e-9)
    q, r = oar.linalg.qr(T(a))
    check(oar.matmul(q, r), a, rtol=1e-9, atol=1e-9)


def test_lapack_singular_is_an_error():
    with pytest.raises(Exception, match="inv|singular"):
        oar.linalg.inv(T(np.zeros((3, 3)))).numpy()


# ---- sort --------------------------------------------------------------------------------------------
SORT_DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64"]


def sort_input(dtype, shape, ties):
    if np.dtype(dtype).kind == "f":
        a = RNG.standard_normal(shape) * (3 if ties else 1e3)
        a = (a.round() if ties else a).astype(dtype)
        flat = a.reshape(-1)
        if flat.size > 3:
            flat[:: max(1, flat.size // 7)] = np.nan
            flat[1 :: max(1, flat.size // 5)] = -np.inf
            flat[2 :: max(1, flat.size // 6)] = -0.0
        return a
    info = np.iinfo(dtype)
    lo, hi = (-3, 3) if ties else (info.min, info.max)
    return RNG.integers(max(lo, info.min), hi, shape, dtype=dtype, endpoint=True)


def desc_ref(a, axis):
    # Paddle's descending order: NaN first, then largest to smallest, ties by position.
    k = a.astype(np.float64)
    k = np.where(np.isnan(k), -np.inf, -k) if a.dtype.kind == "f" else -k
    return np.argsort(k, axis, kind="stable")


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (5, 0), (4, 1), (1000, 1), (2000, 3), (3000, 16), (7, 100), (3, 5000), (70000,)])
def test_sort_argsort_against_numpy(dtype, shape):
    for ties in (True, False):
        a = sort_input(dtype, shape, ties)
        t = T(a)
        exp = np.argsort(a, -1, kind="stable")
        check(oar.argsort(t), exp)
        check(oar.sort(t), np.take_along_axis(a, exp, -1))
        d = desc_ref(a, -1)
        check(oar.argsort(t, descending=True), d)
        check(oar.sort(t, descending=True), np.take_along_axis(a, d, -1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_sort_other_axes_and_noncontiguous(dtype):
    a = sort_input(dtype, (6, 40, 5), True)
    for axis in (0, 1, 2):
        check(oar.argsort(T(a), axis), np.argsort(a, axis, kind="stable"))
    v = T(a).transpose([2, 0, 1])
    check(oar.argsort(v, -1), np.argsort(a.transpose(2, 0, 1), -1, kind="stable"))
    check(oar.sort(T(a)[:, ::3, 1], 1), np.sort(a[:, ::3, 1], 1, kind="stable"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("shape,k", [((2000, 16), 3), ((4, 3000), 10), ((100000,), 5), ((3, 1), 1)])
def test_topk_against_numpy(dtype, shape, k):
    a = sort_input(dtype, shape, True)
    t = T(a)
    v, i = oar.topk(t, k)
    d = desc_ref(a, -1)[..., :k]
    check(i, d)
    check(v, np.take_along_axis(a, d, -1))
    v, i = oar.topk(t, k, largest=False)
    e = np.argsort(a, -1, kind="stable")[..., :k]
    check(i, e)
    check(v, np.take_along_axis(a, e, -1))


@pytest.mark.parametrize("dtype", ["float64", "int16", "float16"])
def test_topk_short_rows_other_axis(dtype):
    a = sort_input(dtype, (5, 300), True)  # rows of 5 along axis 0: the rank path with a stride
    for k in (1, 3, 5):
        v, i = oar.topk(T(a), k, axis=0)
        d = desc_ref(a, 0)[:k]
        check(i, d)
        check(v, np.take_along_axis(a, d, 0))
        v, i = oar.topk(T(a), k, axis=0, largest=False)
        e = np.argsort(a, 0, kind="stable")[:k]
        check(i, e)
        check(v, np.take_along_axis(a, e, 0))


def _views(dtype, m, k, n, batch):
    """(name, x view, y view, numpy x, numpy y) over layouts a matmul kernel gets without a copy by the
    core: transposed views (read in place), head-split permutations and column slices (oneDNN strides in
    float32, a copy otherwise), flipped and expanded views."""
    a = rand(dtype, batch, m, k)
    b = rand(dtype, batch, k, n)
    aT = rand(dtype, batch, k, m)  # stored transposed
    bT = rand(dtype, n, k)
    h = rand(dtype, 2, m, batch, k)  # [b, L, heads, d]: heads split by a permutation
    wide = rand(dtype, batch, m, 2 * k + 1)
    ta, tb, taT, tbT, th, tw = (T(v) for v in (a, b, aT, bT, h, wide))
    return [
        ("x.T @ y", taT[0].T, tb[0], aT[0].T, b[0]),
        ("x @ y.T", ta[0], tbT.T, a[0], bT.T),
        ("x.T @ y.T", taT[0].T, tbT.T, aT[0].T, bT.T),
        ("batched transpose", taT.transpose([0, 2, 1]), tb, aT.transpose(0, 2, 1), b),
        ("batched x @ broadcast y.T", ta, tbT.T, a, bT.T),
        ("head split", th.transpose([0, 2, 1, 3]), tb.unsqueeze(0), h.transpose(0, 2, 1, 3), b[None]),
        ("head split q @ q^T", th.transpose([0, 2, 1, 3]), th.transpose([0, 2, 3, 1]),
         h.transpose(0, 2, 1, 3), h.transpose(0, 2, 3, 1)),
        ("column slice", tw[:, :, 1:k + 1], tb, wide[:, :, 1:k + 1], b),
        ("strided columns", tw[:, :, ::2][:, :, :k], tb, wide[:, :, ::2][:, :, :k], b),
        ("flipped", oar.flip(ta, [1]), tb, a[:, ::-1], b),
        ("expanded batch", ta, tb[:1].expand([batch, k, n]), a, np.broadcast_to(b[:1], (batch, k, n))),
        ("strided vector", ta, tw[0, 0, ::2][:k], a, wide[0, 0, ::2][:k]),
        ("strided vector @ y", tw[0, 1, ::2][:k], tb, wide[0, 1, ::2][:k], b),
    ]


def swap_last(t):
    perm = list(range(t.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return t.transpose(perm)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int32"])
@pytest.mark.parametrize("size", [(3, 4, 5, 2), (40, 48, 56, 3)], ids=["small", "large"])
def test_matmul_of_strided_views(dtype, size):
    # Every layout against numpy, with and without the transpose attributes (a transposed view read
    # transposed again is its base read plainly).
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-10

    def ok(got, exp):
        if dtype == "int32":
            check(got, exp.astype(dtype))
        else:
            check(got, exp.astype(dtype), rtol=tol, atol=tol * size[1])

    for name, x, y, a, b in _views(dtype, *size):
        exp = ref_matmul(a, b, False, False)
        ok(oar.matmul(x, y), exp)
        if x.ndim >= 2 and y.ndim >= 2:
            xt, yt = swap_last(x), swap_last(y)
            ok(oar.matmul(xt, yt, transpose_x=True, transpose_y=True), exp)
            ok(oar.matmul(xt, y, transpose_x=True), exp)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_of_strided_views_gradients(dtype):
    # The gradient rule's matmuls read the saved views (and the output gradient) in place; the gradients
    # must equal those of contiguous copies, and float64's the finite differences.
    cases = [  # x base, y base, views taken of the leaves
        ((30, 20), (30, 25), lambda p: p.T, lambda q: q),
        ((20, 30), (25, 30), lambda p: p, lambda q: q.T),
        ((2, 30, 20), (2, 25, 30), swap_last, swap_last),
        ((2, 20, 3, 30), (2, 25, 3, 30), lambda p: p.transpose([0, 2, 1, 3]), lambda q: q.transpose([0, 2, 3, 1])),
        ((2, 20, 61), (30, 25), lambda p: p[:, :, 1:31], lambda q: q),
    ]
    tol = 1e-4 if dtype == "float32" else 1e-10
    for xs, ys, fx, fy in cases:
        a, b = rand(dtype, *xs), rand(dtype, *ys)
        x, y = T(a, stop_gradient=False), T(b, stop_gradient=False)
        out = oar.matmul(fx(x), fy(y))
        g = rand(dtype, *out.shape)
        out.backward(T(g))
        # The same product of contiguous copies, and its gradients taken back through the views.
        xc, yc = T(a, stop_gradient=False), T(b, stop_gradient=False)
        ref = oar.matmul(fx(xc).contiguous(), fy(yc).contiguous())
        ref.backward(T(g))
        check(out, ref.numpy(), rtol=tol, atol=tol)
        check(x.grad, xc.grad.numpy(), rtol=tol, atol=tol)
        check(y.grad, yc.grad.numpy(), rtol=tol, atol=tol)
        if dtype == "float64" and len(xs) > 2:
            check_grad(lambda p, q: oar.matmul(fx(p), fy(q)), [a[:1], b[:1] if len(ys) > 2 else b])
