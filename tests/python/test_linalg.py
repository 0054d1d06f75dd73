"""Linear algebra (oar.linalg and the top-level matmul family): forward against numpy.linalg on every
device, gradients against finite differences (float64, small well-conditioned matrices), errors."""
import numpy as np
import pytest

import oar
from _util import check, check_grad


RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64"]


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)


def rand(*shape, dtype="float64"):
    return RNG.standard_normal(shape).astype(dtype)


def well_conditioned(*shape, dtype="float64"):
    """Random square matrices plus n * I: comfortably invertible."""
    n = shape[-1]
    return (RNG.standard_normal(shape) * 0.5 + n * np.eye(n)).astype(dtype)


def spd(*shape, dtype="float64"):
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def T(a, device):
    return oar.to_tensor(a, place=device)


def sym(x):
    """Symmetrises inside the differentiated function, so finite differences see a symmetric input."""
    return (x + x.transpose([1, 0] if x.ndim == 2 else [0, 2, 1])) * 0.5


# ---- matmul family ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_family_forward(device, dtype):
    a, b = rand(2, 3, 4, dtype=dtype), rand(2, 4, 5, dtype=dtype)
    check(oar.bmm(T(a, device), T(b, device)), a @ b, **tol(dtype))
    check(oar.mm(T(a[0], device), T(b[0], device)), a[0] @ b[0], **tol(dtype))
    v, w = rand(4, dtype=dtype), rand(4, dtype=dtype)
    check(oar.dot(T(v, device), T(w, device)), np.dot(v, w), **tol(dtype))
    check(oar.dot(T(a[0], device), T(a[1], device)), (a[0] * a[1]).sum(-1), **tol(dtype))
    check(oar.mv(T(a[0], device), T(v, device)), a[0] @ v, **tol(dtype))
    check(oar.outer(T(v, device), T(w[:3], device)), np.outer(v, w[:3]), **tol(dtype))
    check(oar.inner(T(a, device), T(b[0].T, device)), np.inner(a, b[0].T), **tol(dtype))
    c = rand(3, 5, dtype=dtype)
    check(oar.addmm(T(c, device), T(a[0], device), T(b[0], device), beta=0.5, alpha=2.0),
          0.5 * c + 2.0 * a[0] @ b[0], **tol(dtype))
    check(oar.t(T(c, device)), c.T)
    check(oar.t(T(v, device)), v)
    x = rand(3, 4, 5, dtype=dtype)
    check(oar.trace(T(x, device)), np.trace(x), **tol(dtype))
    check(oar.trace(T(x, device), offset=1, axis1=1, axis2=2), np.trace(x, 1, 1, 2), **tol(dtype))
    # Paddle sorts the two axes first (checked on Paddle 2.6.2): axis1=2, axis2=0 is numpy's (0, 2)
    check(oar.trace(T(x, device), offset=-1, axis1=2, axis2=0), np.trace(x, -1, 0, 2), **tol(dtype))
    check(oar.kron(T(a[0], device), T(c, device)), np.kron(a[0], c), **tol(dtype))
    check(oar.kron(T(v, device), T(x, device)), np.kron(v, x), **tol(dtype))
    p, q = rand(4, 3, dtype=dtype), rand(4, 3, dtype=dtype)
    check(oar.cross(T(p, device), T(q, device)), np.cross(p, q), **tol(dtype))
    check(oar.cross(T(p.T, device), T(q.T, device), axis=0), np.cross(p.T, q.T, axis=0), **tol(dtype))
    m = [rand(2, 3, dtype=dtype), rand(3, 4, dtype=dtype), rand(4, 2, dtype=dtype)]
    check(oar.linalg.multi_dot([T(e, device) for e in m]), np.linalg.multi_dot(m), **tol(dtype))
    # non-contiguous operand
    check(oar.mm(T(c, device).transpose([1, 0]), T(c, device)), c.T @ c, **tol(dtype))


def test_matmul_family_grads(device):
    check_grad(lambda x, y: oar.bmm(x, y), [rand(2, 2, 3), rand(2, 3, 2)], device)
    check_grad(lambda x, y: oar.dot(x, y), [rand(2, 3), rand(2, 3)], device)
    check_grad(lambda x, y: oar.outer(x, y), [rand(3), rand(2)], device)
    check_grad(lambda x, y: oar.inner(x, y), [rand(2, 3), rand(4, 3)], device)
    check_grad(lambda c, x, y: oar.addmm(c, x, y, beta=0.5, alpha=2.0), [rand(2, 2), rand(2, 3), rand(3, 2)], device)
    check_grad(lambda x: oar.trace(x, offset=1), [rand(3, 4)], device)
    check_grad(lambda x, y: oar.kron(x, y), [rand(2, 2), rand(2, 3)], device)
    check_grad(lambda x, y: oar.cross(x, y), [rand(2, 3), rand(2, 3)], device)
    check_grad(lambda a, b, c: oar.linalg.multi_dot([a, b, c]), [rand(2, 3), rand(3, 2), rand(2, 2)], device)


def test_matmul_family_errors(device):
    x = T(rand(2, 3, 4), device)
    with pytest.raises(ValueError, match="bmm"):
        oar.bmm(x, x)
    with pytest.raises(ValueError, match="bmm"):
        oar.bmm(x[0], x)
    with pytest.raises(ValueError, match="dot"):
        oar.dot(T(rand(3), device), T(rand(4), device))
    with pytest.raises(ValueError, match="t"):
        oar.t(x)
    with pytest.raises(ValueError, match="cross"):
        oar.cross(T(rand(2, 4), device), T(rand(2, 4), device))
    with pytest.raises(IndexError, match="diagonal"):
        oar.trace(x, axis1=5)


# ---- einsum -----------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (3, 4, 2)]),
    ("bi...,bi...->b...", [(2, 3, 4), (2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij->j", [(3, 3, 2)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]),
    ("...i,...i", [(2, 3), (3,)]),
    ("ba,ca->bc", [(2, 3), (4, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum(device, eq, shapes):
    arrs = [rand(*s) for s in shapes]
    check(oar.einsum(eq, *[T(a, device) for a in arrs]), np.einsum(eq, *arrs), rtol=1e-10, atol=1e-10)


def test_einsum_float32_and_grad(device):
    a, b = rand(2, 3, 4, dtype="float32"), rand(2, 4, 5, dtype="float32")
    check(oar.einsum("bij,bjk->bik", T(a, device), T(b, device)), a @ b, rtol=1e-5, atol=1e-5)
    check_grad(lambda x, y: oar.einsum("bij,bjk->bik", x, y), [rand(2, 2, 3), rand(2, 3, 2)], device)
    check_grad(lambda x: oar.einsum("ii->i", x), [rand(3, 3)], device)
    check_grad(lambda x, y: oar.einsum("...ij,jk", x, y), [rand(2, 2, 3), rand(3, 2)], device)
    check_grad(lambda x, y, z: oar.einsum("abc,cd,bd->a", x, y, z), [rand(2, 3, 2), rand(2, 2), rand(3, 2)], device)


def test_einsum_errors(device):
    x = T(rand(3, 4), device)
    with pytest.raises(ValueError, match="einsum"):
        oar.einsum("ij,jk", x, x)
    with pytest.raises(ValueError, match="einsum"):
        oar.einsum("ijk", x)
    with pytest.raises(ValueError, match="einsum"):
        oar.einsum("ij->ik", x)
    with pytest.raises(ValueError, match="einsum"):
        oar.einsum("ij,jk", x)


# ---- LAPACK-backed kernels ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_inverse_det_slogdet(device, dtype):
    a = well_conditioned(2, 3, 4, 4, dtype=dtype)
    check(oar.linalg.inv(T(a, device)), np.linalg.inv(a), dtype=getattr(oar, dtype), **tol(dtype))
    check(oar.inverse(T(a[0, 0], device)), np.linalg.inv(a[0, 0]), **tol(dtype))
    check(oar.linalg.det(T(a, device)), np.linalg.det(a), **tol(dtype))
    b = rand(3, 3, 3, dtype=dtype)
    sign, logabs = np.linalg.slogdet(b)
    check(oar.linalg.slogdet(T(b, device)), np.stack([sign, logabs]), **tol(dtype))
    # non-contiguous input
    check(oar.linalg.inv(T(a[0, 0], device).transpose([1, 0])), np.linalg.inv(a[0, 0].T), **tol(dtype))
    # singular: det 0, slogdet (0, -inf), inverse an error
    s = np.ones((3, 3), dtype=dtype)
    check(oar.linalg.det(T(s, device)), 0.0)
    check(oar.linalg.slogdet(T(s, device)), np.array([0.0, -np.inf]))
    with pytest.raises(ValueError, match="inverse.*singular"):
        oar.linalg.inv(T(s, device))


def test_inverse_det_grads(device):
    check_grad(lambda x: oar.linalg.inv(x), [well_conditioned(2, 3, 3)], device)
    check_grad(lambda x: oar.linalg.det(x), [well_conditioned(2, 3, 3)], device)
    check_grad(lambda x: oar.linalg.slogdet(x)[1], [well_conditioned(3, 3)], device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve(device, dtype):
    a, b = well_conditioned(2, 4, 4, dtype=dtype), rand(2, 4, 3, dtype=dtype)
    check(oar.linalg.solve(T(a, device), T(b, device)), np.linalg.solve(a, b), **tol(dtype))
    v = rand(4, dtype=dtype)
    check(oar.linalg.solve(T(a[0], device), T(v, device)), np.linalg.solve(a[0], v), **tol(dtype))
    # broadcast batch
    check(oar.linalg.solve(T(a[0], device), T(b, device)), np.linalg.solve(a[0], b), **tol(dtype))
    with pytest.raises(ValueError, match="solve.*singular"):
        oar.linalg.solve(T(np.ones((3, 3), dtype), device), T(b[0, :3], device))


def test_solve_grad(device):
    check_grad(lambda x, y: oar.linalg.solve(x, y), [well_conditioned(2, 3, 3), rand(2, 3, 2)], device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_triangular_solve(device, dtype, upper, transpose):
    a = well_conditioned(2, 4, 4, dtype=dtype)
    a = np.triu(a) if upper else np.tril(a)
    b = rand(2, 4, 3, dtype=dtype)
    op = np.swapaxes(a, -1, -2) if transpose else a
    check(oar.linalg.triangular_solve(T(a, device), T(b, device), upper=upper, transpose=transpose),
          np.linalg.solve(op, b), **tol(dtype))
    unit = a.copy()
    idx = np.arange(4)
    unit[..., idx, idx] = 1
    op = np.swapaxes(unit, -1, -2) if transpose else unit
    # unitriangular ignores the stored diagonal
    check(oar.linalg.triangular_solve(T(a, device), T(b, device), upper=upper, transpose=transpose,
                                      unitriangular=True), np.linalg.solve(op, b), **tol(dtype))


def test_triangular_solve_grad(device):
    a = np.triu(well_conditioned(3, 3))
    for upper, tr, unit in [(True, False, False), (True, True, False), (True, False, True)]:
        check_grad(lambda x, y: oar.linalg.triangular_solve(x, y, upper=upper, transpose=tr, unitriangular=unit),
                   [a, rand(3, 2)], device)
    check_grad(lambda x, y: oar.linalg.triangular_solve(x, y, upper=False), [a.T.copy(), rand(3, 2)], device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(device, dtype):
    a = spd(2, 4, 4, dtype=dtype)
    lo = np.linalg.cholesky(a)
    check(oar.linalg.cholesky(T(a, device)), lo, **tol(dtype))
    check(oar.cholesky(T(a, device), upper=True), np.swapaxes(lo, -1, -2), **tol(dtype))
    b = rand(2, 4, 2, dtype=dtype)
    check(oar.linalg.cholesky_solve(T(b, device), T(lo, device)), np.linalg.solve(a, b), **tol(dtype))
    check(oar.linalg.cholesky_solve(T(b, device), T(np.swapaxes(lo, -1, -2).copy(), device), upper=True),
          np.linalg.solve(a, b), **tol(dtype))
    with pytest.raises(ValueError, match="cholesky.*positive definite"):
        oar.linalg.cholesky(T(-np.eye(3, dtype=dtype), device))


def test_cholesky_grad(device):
    check_grad(lambda x: oar.linalg.cholesky(sym(x)), [spd(3, 3)], device)
    check_grad(lambda x: oar.linalg.cholesky(sym(x), upper=True), [spd(2, 3, 3)], device)
    check_grad(lambda x, l: oar.linalg.cholesky_solve(x, l), [rand(3, 2), np.linalg.cholesky(spd(3, 3))], device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4), (3, 5)])
def test_qr(device, dtype, shape):
    a = rand(*shape, dtype=dtype)
    for mode in ("reduced", "complete"):
        q, r = oar.linalg.qr(T(a, device), mode=mode)
        nq, nr = np.linalg.qr(a, mode=mode)
        # unique up to the signs of R's diagonal
        s = np.sign(np.diagonal(nr, axis1=-2, axis2=-1)) * np.sign(np.diagonal(r.numpy(), axis1=-2, axis2=-1))
        k = s.shape[-1]
        check(q[..., :k] * oar.to_tensor(s[..., None, :], place=device), nq[..., :k], **tol(dtype))
        check(r[..., :k, :] * oar.to_tensor(s[..., :, None], place=device), nr[..., :k, :], **tol(dtype))
        check(oar.matmul(q, r), a, **tol(dtype))
    r_only = oar.linalg.qr(T(a, device), mode="r")
    np.testing.assert_allclose(np.abs(r_only.numpy()), np.abs(np.linalg.qr(a, mode="r")), **tol(dtype))


def test_qr_grad(device):
    check_grad(lambda x: oar.linalg.qr(x)[0], [rand(4, 3)], device)
    check_grad(lambda x: oar.linalg.qr(x)[1], [rand(2, 3, 3)], device)
    check_grad(lambda x: oar.linalg.qr(x, mode="r"), [rand(4, 2)], device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 5), (4, 4)])
def test_svd(device, dtype, shape):
    a = rand(*shape, dtype=dtype)
    for full in (False, True):
        u, s, vh = oar.linalg.svd(T(a, device), full_matrices=full)
        nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
        assert u.shape == list(nu.shape) and vh.shape == list(nvh.shape)
        check(s, ns, **tol(dtype))
        k = ns.shape[-1]
        rec = np.matmul(u.numpy()[..., :k] * s.numpy()[..., None, :], vh.numpy()[..., :k, :])
        np.testing.assert_allclose(rec, a, **tol(dtype))
        np.testing.assert_allclose(np.abs(u.numpy()[..., :k]), np.abs(nu[..., :k]), **tol(dtype))


def test_svd_grad(device):
    check_grad(lambda x: oar.linalg.svd(x)[1], [rand(4, 3)], device)
    # U and V up to sign: use sign-invariant products
    def f(x):
        u, s, vh = oar.linalg.svd(x)
        return oar.matmul(u * u, vh * vh)
    check_grad(f, [rand(4, 3)], device)
    check_grad(f, [rand(3, 4)], device)
    check_grad(lambda x: oar.matmul(*[oar.linalg.svd(x)[i] for i in (0, 2)]), [rand(2, 3, 3)], device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(device, dtype):
    a = spd(2, 4, 4, dtype=dtype) - 4 * np.eye(4, dtype=dtype)
    w, v = oar.linalg.eigh(T(a, device))
    nw, nv = np.linalg.eigh(a)
    check(w, nw, **tol(dtype))
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(nv), **tol(dtype))
    check(oar.linalg.eigvalsh(T(a, device)), nw, **tol(dtype))
    # UPLO picks the triangle that is read
    b = np.tril(a) + np.triu(rand(4, 4, dtype=dtype), 1)
    check(oar.linalg.eigvalsh(T(b, device), UPLO="L"), np.linalg.eigvalsh(b, UPLO="L"), **tol(dtype))
    b = np.triu(a) + np.tril(rand(4, 4, dtype=dtype), -1)
    check(oar.linalg.eigvalsh(T(b, device), UPLO="U"), np.linalg.eigvalsh(b, UPLO="U"), **tol(dtype))


def test_eigh_grad(device):
    a = spd(3, 3)
    check_grad(lambda x: oar.linalg.eigvalsh(sym(x)), [a], device)
    check_grad(lambda x: oar.linalg.eigh(sym(x))[1] ** 2, [a], device)  # sign-invariant


def test_lapack_errors(device):
    x = T(rand(3, 4), device)
    for fn in (oar.linalg.inv, oar.linalg.det, oar.linalg.cholesky, oar.linalg.eigh):
        with pytest.raises(ValueError, match="square"):
            fn(x)
    with pytest.raises(ValueError, match="inverse"):
        oar.linalg.inv(T(rand(3), device))
    with pytest.raises(TypeError, match="inverse.*float32 or float64"):
        oar.linalg.inv(oar.to_tensor(np.eye(3, dtype=np.int64), place=device))
    with pytest.raises(TypeError, match="svd"):
        oar.linalg.svd(oar.to_tensor(np.eye(3, dtype=np.int32), place=device))
    with pytest.raises(ValueError, match="solve"):
        oar.linalg.solve(T(well_conditioned(3, 3), device), T(rand(4, 2), device))
    with pytest.raises(ValueError, match="qr"):
        oar.linalg.qr(x, mode="bad")


# ---- norms and derived --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(device, dtype):
    x = rand(2, 3, 4, dtype=dtype)
    tx = T(x, device)
    check(oar.norm(tx), np.sqrt((x ** 2).sum()), **tol(dtype))
    check(oar.linalg.norm(tx, p="fro", axis=[1, 2]), np.linalg.norm(x, "fro", axis=(1, 2)), **tol(dtype))
    check(oar.linalg.norm(tx, p="nuc", axis=[1, 2], keepdim=True),
          np.linalg.norm(x, "nuc", axis=(1, 2), keepdims=True), **tol(dtype))
    for p in [1, 2, 3, 0.5, np.inf, -np.inf]:
        check(oar.norm(tx, p=p, axis=-1), np.linalg.norm(x, p, axis=-1), **tol(dtype))
        check(oar.norm(tx, p=p, axis=1, keepdim=True), np.linalg.norm(x, p, axis=1, keepdims=True), **tol(dtype))
    check(oar.norm(tx, p=0, axis=2), (x != 0).sum(-1).astype(dtype))
    check(oar.norm(tx, p=2), np.linalg.norm(x.ravel()), **tol(dtype))
    # Paddle 2.x: numeric p over two axes is the flattened vector norm
    check(oar.norm(tx, p=3, axis=[1, 2]), (np.abs(x) ** 3).sum((1, 2)) ** (1 / 3), **tol(dtype))
    for p in ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]:
        check(oar.linalg.matrix_norm(tx, p=p), np.linalg.norm(x, p, axis=(-2, -1)), **tol(dtype))
    check(oar.linalg.matrix_norm(tx, p=1, axis=[0, 2]), np.linalg.norm(x, 1, axis=(0, 2)), **tol(dtype))
    check(oar.linalg.vector_norm(tx, p=3, axis=[0, 2]), (np.abs(x) ** 3).sum((0, 2)) ** (1 / 3), **tol(dtype))
    y = rand(3, 4, dtype=dtype)
    check(oar.dist(tx, T(y, device)), np.linalg.norm((x - y).ravel()), **tol(dtype))
    check(oar.dist(tx, T(y, device), p=np.inf), np.abs(x - y).max(), **tol(dtype))
    check(oar.dist(tx, T(y, device), p=1), np.abs(x - y).sum(), **tol(dtype))


def test_norm_grads(device):
    x = rand(2, 3)
    check_grad(lambda t: oar.norm(t), [x], device)
    check_grad(lambda t: oar.norm(t, p=3, axis=1), [x], device)
    check_grad(lambda t: oar.norm(t, p=1, axis=0, keepdim=True), [x], device)
    check_grad(lambda t: oar.linalg.matrix_norm(t, p="nuc"), [x], device)
    check_grad(lambda t: oar.linalg.matrix_norm(t, p=2), [x], device)
    check_grad(lambda t, u: oar.dist(t, u), [x, rand(2, 3)], device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_power_rank_cond(device, dtype):
    a = rand(2, 4, 3, dtype=dtype)
    check(oar.linalg.pinv(T(a, device)), np.linalg.pinv(a), **tol(dtype))
    sq = well_conditioned(2, 3, 3, dtype=dtype)
    for n in [0, 1, 3, -2]:
        check(oar.linalg.matrix_power(T(sq, device), n), np.linalg.matrix_power(sq, n), rtol=1e-3 if dtype ==
              "float32" else 1e-9, atol=1e-3 if dtype == "float32" else 1e-9)
    low = (rand(4, 2) @ rand(2, 5)).astype(dtype)
    check(oar.linalg.matrix_rank(T(low, device)), np.linalg.matrix_rank(low))
    check(oar.linalg.matrix_rank(T(spd(4, 4, dtype=dtype), device), hermitian=True), 4)
    for p in [None, 2, -2, "fro", "nuc", 1, np.inf]:
        check(oar.linalg.cond(T(sq, device), p=p), np.linalg.cond(sq, p), rtol=1e-3, atol=1e-3)
    obs = rand(3, 6, dtype=dtype)
    check(oar.linalg.cov(T(obs, device)), np.cov(obs), **tol(dtype))
    check(oar.linalg.cov(T(obs, device), rowvar=False, ddof=False), np.cov(obs, rowvar=False, ddof=0), **tol(dtype))
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = RNG.uniform(0.5, 1.5, 6).astype(dtype)
    check(oar.linalg.cov(T(obs, device), fweights=oar.to_tensor(fw, place=device),
                         aweights=T(aw, device)), np.cov(obs, fweights=fw, aweights=aw), **tol(dtype))
    check(oar.linalg.corrcoef(T(obs, device)), np.corrcoef(obs), **tol(dtype))
    b = rand(4, 2, dtype=dtype)
    sol = oar.linalg.lstsq(T(a[0], device), T(b, device))[0]
    check(sol, np.linalg.lstsq(a[0], b, rcond=None)[0], **tol(dtype))


def test_derived_grads(device):
    check_grad(lambda x: oar.linalg.pinv(x), [rand(3, 2)], device)
    check_grad(lambda x: oar.linalg.matrix_power(x, -2), [well_conditioned(3, 3)], device)
    check_grad(lambda x: oar.linalg.matrix_power(x, 3), [rand(2, 2)], device)
    check_grad(lambda x: oar.linalg.cov(x), [rand(2, 4)], device)


def test_namespaces():
    for name in ["inv", "det", "slogdet", "solve", "qr", "svd", "eigh", "eigvalsh", "pinv", "matrix_power",
                 "matrix_rank", "cond", "lstsq", "triangular_solve", "cholesky_solve", "norm", "vector_norm",
                 "matrix_norm", "multi_dot", "cov", "corrcoef", "einsum", "cholesky"]:
        assert callable(getattr(oar.linalg, name)), name
    for name in ["einsum", "bmm", "mm", "dot", "outer", "inner", "addmm", "t", "trace", "kron", "cross", "norm",
                 "dist", "cholesky", "inverse", "mv"]:
        assert callable(getattr(oar, name)), name
    x = oar.to_tensor(well_conditioned(3, 3))
    check(x.inverse(), np.linalg.inv(x.numpy()))
    check(x.trace(), np.trace(x.numpy()))
