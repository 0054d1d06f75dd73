"""oar.sparse (COO/CSR tensors and their functions) against numpy dense references, gradients checked
numerically in float64; Embedding(sparse=True) row-sparse gradients against dense training."""
import os

import numpy as np
import pytest

import oar
import oar.sparse as sp

RNG = np.random.default_rng(7)


def _num_grad(f, x0, eps=1e-6):
    """Central differences of the scalar f at the float64 array x0."""
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _rand_sparse_dense(shape, density=0.4):
    a = RNG.standard_normal(shape)
    a[RNG.random(shape) > density] = 0
    return a


def _coo(arr, stop_gradient=True):
    idx = np.stack(np.nonzero(arr))
    return sp.sparse_coo_tensor(idx, arr[tuple(idx)], list(arr.shape), stop_gradient=stop_gradient)


# ---- creation and layouts ---------------------------------------------------------------------------------
def test_coo_to_dense_default_shape_and_duplicates():
    x = sp.sparse_coo_tensor([[1, 0, 1], [0, 4, 0]], [1.0, 2.0, 3.0])
    assert x.shape == [2, 5] and x.is_sparse() and x.is_sparse_coo() and not x.is_sparse_csr()
    ref = np.zeros((2, 5), np.float32)
    ref[1, 0] = 4.0
    ref[0, 4] = 2.0
    np.testing.assert_array_equal(x.to_dense().numpy(), ref)  # the duplicated (1, 0) is a sum
    c = x.coalesce()
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1], [4, 0]])
    np.testing.assert_array_equal(c.values().numpy(), [2.0, 4.0])
    assert x.nnz() == 3 and c.nnz() == 2


def test_dense_to_coo_with_dense_dims_and_back():
    a = _rand_sparse_dense((4, 3, 2), 0.3)
    a[1] = 0
    t = oar.to_tensor(a)
    assert not t.is_sparse()
    for sd in (1, 2, 3):
        c = t.to_sparse_coo(sd)
        assert c.sparse_dim == sd and c.values().shape[1:] == list(a.shape[sd:])
        np.testing.assert_array_equal(c.to_dense().numpy(), a)
    assert 1 not in t.to_sparse_coo(1).indices().numpy()[0]


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5)])
def test_csr_round_trip(shape):
    a = _rand_sparse_dense(shape)
    a[..., 1, :] = 0  # an empty row
    c = oar.to_tensor(a).to_sparse_csr()
    assert c.is_sparse_csr()
    np.testing.assert_array_equal(c.to_dense().numpy(), a)
    np.testing.assert_array_equal(_coo(a).to_sparse_csr().crows().numpy(), c.crows().numpy())
    again = sp.sparse_csr_tensor(c.crows(), c.cols(), c.values(), list(shape))
    np.testing.assert_array_equal(again.to_sparse_coo().to_dense().numpy(), a)
    m = shape[-2]
    crows = c.crows().numpy().reshape(-1, m + 1)
    np.testing.assert_array_equal(crows[:, -1], (a != 0).reshape(-1, m * shape[-1]).sum(-1))


def test_creation_errors():
    with pytest.raises(ValueError, match="sparse_coo_tensor.*out of range"):
        sp.sparse_coo_tensor([[0, 3]], [1.0, 2.0], [3])
    with pytest.raises(ValueError, match="sparse_coo_tensor.*nnz"):
        sp.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], [3])
    with pytest.raises(ValueError, match="sparse_csr_tensor.*crows"):
        sp.sparse_csr_tensor([0, 2, 1], [0, 1], [1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="sparse_csr_tensor.*cols"):
        sp.sparse_csr_tensor([0, 1, 2], [0, 5], [1.0, 2.0], [2, 2])
    with pytest.raises(TypeError, match="sparse.matmul: x must be a sparse"):
        sp.matmul(oar.ones([2, 2]), oar.ones([2, 2]))
    x = _coo(_rand_sparse_dense((2, 3)))
    with pytest.raises(ValueError, match="sparse.matmul: shapes"):
        sp.matmul(x, oar.ones([2, 2], "float64"))
    with pytest.raises(TypeError, match="sparse.add: x and y must have the same layout"):
        sp.add(x, x.to_sparse_csr())
    with pytest.raises(TypeError, match="sparse.add: y must be a sparse"):
        sp.add(x, oar.ones([2, 3], "float64"))
    with pytest.raises(TypeError, match="sparse.matmul: x and y must have the same dtype"):
        sp.matmul(x, oar.ones([3, 2], "float32"))
    with pytest.raises(ValueError, match="sparse_coo_tensor: shape must not have negative"):
        sp.sparse_coo_tensor([[0, 1]], [1.0, 2.0], [-1])
    with pytest.raises(TypeError, match="sparse_coo_tensor: indices must be integers"):
        sp.sparse_coo_tensor([[0.5, 1]], [1.0, 2.0], [3])
    with pytest.raises(ValueError, match="sparse.sum: axis"):
        sp.sum(x, axis=3)
    with pytest.raises(ValueError, match="to_sparse_coo: sparse_dim"):
        oar.ones([2, 2]).to_sparse_coo(3)


# ---- products -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("batched", [False, True])
def test_matmul_values_and_gradients(layout, batched):
    xs, ys = ((2, 3, 4), (2, 4, 3)) if batched else ((3, 4), (4, 5))
    a = _rand_sparse_dense(xs)
    b = RNG.standard_normal(ys)
    w = RNG.standard_normal(xs[:-1] + ys[-1:])
    idx = np.stack(np.nonzero(a))
    vals0 = a[tuple(idx)]

    def run(vals, bmat, need_grad=False):
        x = sp.sparse_coo_tensor(idx, vals, list(xs), stop_gradient=not need_grad)
        if layout == "csr":  # a leaf CSR tensor (np.nonzero's order is CSR's row order)
            c = x.to_sparse_csr()
            x = sp.sparse_csr_tensor(c.crows(), c.cols(), vals, list(xs), stop_gradient=not need_grad)
        y = oar.to_tensor(bmat, stop_gradient=not need_grad)
        out = sp.matmul(x, y)
        return x, y, out, (out * oar.to_tensor(w)).sum()

    x, y, out, loss = run(vals0, b, True)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    loss.backward()
    gv = _num_grad(lambda v: float(run(v, b)[3]), vals0)
    gy = _num_grad(lambda m: float(run(vals0, m)[3]), b)
    # x.grad keeps x's layout and pattern; the CSR values are stored in row order, as the coo ones here
    np.testing.assert_allclose(x.grad.values().numpy(), gv, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad.numpy(), gy, rtol=1e-6, atol=1e-8)


def test_matmul_sparse_sparse_is_sparse():
    a, b = _rand_sparse_dense((3, 4)), _rand_sparse_dense((4, 2))
    out = sp.matmul(_coo(a), _coo(b))
    assert out.is_sparse_coo()
    np.testing.assert_allclose(out.to_dense().numpy(), a @ b, rtol=1e-12)
    assert sp.matmul(_coo(a).to_sparse_csr(), _coo(b).to_sparse_csr()).is_sparse_csr()


def test_mv_and_addmm():
    a = _rand_sparse_dense((4, 3))
    v = RNG.standard_normal(3)
    np.testing.assert_allclose(sp.mv(_coo(a).to_sparse_csr(), oar.to_tensor(v)).numpy(), a @ v, rtol=1e-12)
    inp, b = RNG.standard_normal((4, 2)), RNG.standard_normal((3, 2))
    out = sp.addmm(oar.to_tensor(inp), _coo(a), oar.to_tensor(b), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(out.numpy(), 0.5 * inp + 2.0 * (a @ b), rtol=1e-12)
    s_inp = _rand_sparse_dense((4, 4))
    out = sp.addmm(_coo(s_inp), _coo(a), _coo(_rand_sparse_dense((3, 4))), 1.0, 1.0)
    assert out.is_sparse_coo()


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_masked_matmul_values_and_gradients(layout):
    xm, ym = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5))
    mask_arr = _rand_sparse_dense((3, 5))
    mask = _coo(mask_arr)
    if layout == "csr":
        mask = mask.to_sparse_csr()
    nz = np.nonzero(mask_arr)
    wv = RNG.standard_normal(len(nz[0]))

    def run(a, b, need_grad=False):
        x, y = oar.to_tensor(a, stop_gradient=not need_grad), oar.to_tensor(b, stop_gradient=not need_grad)
        out = sp.masked_matmul(x, y, mask)
        return x, y, out, (out.values() * oar.to_tensor(wv)).sum()

    x, y, out, loss = run(xm, ym, True)
    assert out.is_sparse_csr() == (layout == "csr")
    np.testing.assert_allclose(out.to_dense().numpy(), np.where(mask_arr != 0, xm @ ym, 0), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), _num_grad(lambda a: float(run(a, ym)[3]), xm), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y.grad.numpy(), _num_grad(lambda b: float(run(xm, b)[3]), ym), rtol=1e-6, atol=1e-8)


# ---- elementwise ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_elementwise_against_dense(layout):
    a, b = _rand_sparse_dense((3, 4)), _rand_sparse_dense((3, 4))
    x, y = _coo(a), _coo(b)
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
    for fn, ref in ((sp.add, a + b), (sp.subtract, a - b), (sp.multiply, a * b)):
        out = fn(x, y)
        assert out.is_sparse_csr() == (layout == "csr")
        np.testing.assert_allclose(out.to_dense().numpy(), ref, rtol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(sp.divide(x, y).to_dense().numpy(), a / b, rtol=1e-12)
    np.testing.assert_allclose(sp.multiply(x, 3.0).to_dense().numpy(), a * 3.0)
    np.testing.assert_allclose(sp.divide(x, 4.0).to_dense().numpy(), a / 4.0)


def test_add_multiply_gradients_reach_both_values():
    a, b = _rand_sparse_dense((3, 4), 0.6), _rand_sparse_dense((3, 4), 0.6)
    ia, ib = np.stack(np.nonzero(a)), np.stack(np.nonzero(b))
    w = RNG.standard_normal((3, 4))

    def run(va, vb, need_grad=False):
        x = sp.sparse_coo_tensor(ia, va, [3, 4], stop_gradient=not need_grad)
        y = sp.sparse_coo_tensor(ib, vb, [3, 4], stop_gradient=not need_grad)
        out = sp.add(sp.multiply(x, y), x)
        return x, y, (out.to_dense() * oar.to_tensor(w)).sum()

    va, vb = a[tuple(ia)], b[tuple(ib)]
    x, y, loss = run(va, vb, True)
    loss.backward()
    np.testing.assert_allclose(x.grad.values().numpy(), _num_grad(lambda v: float(run(v, vb)[2]), va), rtol=1e-6)
    np.testing.assert_allclose(y.grad.values().numpy(), _num_grad(lambda v: float(run(va, v)[2]), vb), rtol=1e-6,
                               atol=1e-9)


# ---- unary, sum, shape ------------------------------------------------------------------------------------
UNARY = [("abs", np.abs), ("sin", np.sin), ("sinh", np.sinh), ("tan", np.tan), ("tanh", np.tanh),
         ("asin", np.arcsin), ("asinh", np.arcsinh), ("atan", np.arctan), ("atanh", np.arctanh),
         ("square", np.square), ("neg", np.negative), ("expm1", np.expm1), ("log1p", np.log1p),
         ("deg2rad", np.deg2rad), ("rad2deg", np.rad2deg)]


@pytest.mark.parametrize("name,ref", UNARY)
def test_unary_on_values_with_duplicates(name, ref):
    # the duplicated entry (0, 1) holds 0.3 + 0.2: the function applies to the sum
    x = sp.sparse_coo_tensor([[0, 1, 0], [1, 2, 1]], [0.3, -0.4, 0.2], [2, 3], dtype="float64")
    dense = x.to_dense().numpy()
    np.testing.assert_allclose(getattr(sp, name)(x).to_dense().numpy(), ref(dense), rtol=1e-12, atol=1e-15)


def test_sqrt_pow_cast_relu_and_layers():
    a = np.abs(_rand_sparse_dense((3, 4)))
    x = _coo(a)
    np.testing.assert_allclose(sp.sqrt(x).to_dense().numpy(), np.sqrt(a), rtol=1e-12)
    np.testing.assert_allclose(sp.pow(x, 3).to_dense().numpy(), a ** 3, rtol=1e-12)
    c = sp.cast(x, "int32", "float32")
    assert c.indices().dtype == oar.int32 and c.dtype == oar.float32
    b = _rand_sparse_dense((3, 4))
    xb = _coo(b).to_sparse_csr()
    np.testing.assert_allclose(sp.nn.functional.relu(xb).to_dense().numpy(), np.maximum(b, 0))
    np.testing.assert_allclose(sp.nn.ReLU()(_coo(b)).to_dense().numpy(), np.maximum(b, 0))
    np.testing.assert_allclose(sp.nn.ReLU6()(_coo(b * 10)).to_dense().numpy(), np.clip(b * 10, 0, 6))
    np.testing.assert_allclose(sp.nn.LeakyReLU(0.1)(_coo(b)).to_dense().numpy(), np.where(b > 0, b, 0.1 * b))


def test_softmax_over_stored_entries_with_gradient():
    a = _rand_sparse_dense((3, 5), 0.6)
    a[0, :2] = [0.5, -1.0]
    idx = np.stack(np.nonzero(a))
    v0 = a[tuple(idx)]
    w = RNG.standard_normal(len(v0))

    def ref(v):
        out = np.zeros_like(v)
        for r in np.unique(idx[0]):
            sel = idx[0] == r
            e = np.exp(v[sel] - v[sel].max())
            out[sel] = e / e.sum()
        return out

    def run(v, need_grad=False):
        c = sp.sparse_coo_tensor(idx, v, [3, 5]).to_sparse_csr()
        x = sp.sparse_csr_tensor(c.crows(), c.cols(), v, [3, 5], stop_gradient=not need_grad)
        out = sp.nn.functional.softmax(x)
        return x, out, (out.values() * oar.to_tensor(w)).sum()

    x, out, loss = run(v0, True)
    np.testing.assert_allclose(out.values().numpy(), ref(v0), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.values().numpy(), _num_grad(lambda v: float(run(v)[2]), v0), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("axis,keepdim", [(None, False), (None, True), (0, False), (1, False), (1, True),
                                          (-1, False)])
def test_sum(axis, keepdim):
    a = _rand_sparse_dense((3, 4))
    out = sp.sum(_coo(a), axis=axis, keepdim=keepdim)
    ref = a.sum(axis=axis, keepdims=keepdim) if axis is not None else np.array([a.sum()])
    if axis is None and keepdim:
        ref = ref.reshape(1, 1)
    assert out.shape == list(ref.shape)
    np.testing.assert_allclose(out.to_dense().numpy(), ref, rtol=1e-12)
    csr = sp.sum(_coo(a).to_sparse_csr(), axis=-1)
    assert csr.is_sparse_csr() and csr.shape == [3, 1]
    np.testing.assert_allclose(csr.to_dense().numpy(), a.sum(-1, keepdims=True), rtol=1e-12)


def test_sum_gradient():
    a = _rand_sparse_dense((3, 4), 0.7)
    idx = np.stack(np.nonzero(a))
    x = sp.sparse_coo_tensor(idx, a[tuple(idx)], [3, 4], stop_gradient=False)
    out = sp.sum(sp.square(x), axis=0)
    (out.values() * oar.to_tensor(np.arange(out.nnz()) + 1.0)).sum().backward()
    cols = np.unique(idx[1])
    weight = {c: k + 1.0 for k, c in enumerate(cols)}
    np.testing.assert_allclose(x.grad.values().numpy(), [2 * a[r, c] * weight[c] for r, c in idx.T], rtol=1e-12)


def test_transpose_and_reshape():
    a = _rand_sparse_dense((2, 3, 4))
    x = _coo(a)
    np.testing.assert_array_equal(sp.transpose(x, [2, 0, 1]).to_dense().numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(sp.reshape(x, [4, -1]).to_dense().numpy(), a.reshape(4, -1))
    c = x.to_sparse_csr()
    np.testing.assert_array_equal(sp.transpose(c, [0, 2, 1]).to_dense().numpy(), a.transpose(0, 2, 1))
    assert sp.transpose(c, [0, 2, 1]).is_sparse_csr()
    np.testing.assert_array_equal(sp.reshape(c, [3, 2, 4]).to_dense().numpy(), a.reshape(3, 2, 4))
    with pytest.raises(ValueError, match="sparse.reshape"):
        sp.reshape(x, [5, 5])
    with pytest.raises(ValueError, match="sparse.transpose"):
        sp.transpose(x, [0, 0, 1])


# ---- Embedding(sparse=True) -------------------------------------------------------------------------------
def _train(make_opt, sparse, steps=4, padding_idx=None, clip=None, seed=3):
    oar.seed(seed)
    emb = oar.nn.Embedding(12, 4, padding_idx=padding_idx, sparse=sparse)
    lin = oar.nn.Linear(4, 1)
    params = emb.parameters() + lin.parameters()
    opt = make_opt(params, clip)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        ids = oar.to_tensor(rng.integers(0, 6, size=(3, 5)))  # rows 6.. never looked up; repeats
        loss = (lin(emb(ids)) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
    return emb.weight.numpy(), lin.weight.numpy()


OPTS = {
    "sgd": lambda ps, clip: oar.optimizer.SGD(0.1, parameters=ps, grad_clip=clip),
    "sgd_l2": lambda ps, clip: oar.optimizer.SGD(0.1, parameters=ps, weight_decay=0.01, grad_clip=clip),
    "momentum": lambda ps, clip: oar.optimizer.Momentum(0.1, 0.9, parameters=ps, grad_clip=clip),
    "adam": lambda ps, clip: oar.optimizer.Adam(0.05, parameters=ps, grad_clip=clip),
    "adamw": lambda ps, clip: oar.optimizer.AdamW(0.05, parameters=ps, grad_clip=clip),
}


@pytest.mark.parametrize("opt", sorted(OPTS))
@pytest.mark.parametrize("clip", [None, "global", "norm", "value"])
def test_embedding_sparse_trains_as_dense(opt, clip):
    make = {None: lambda: None, "global": lambda: oar.nn.ClipGradByGlobalNorm(0.01),
            "norm": lambda: oar.nn.ClipGradByNorm(0.01), "value": lambda: oar.nn.ClipGradByValue(0.001)}[clip]
    dense = _train(lambda ps, c: OPTS[opt](ps, make()), False, padding_idx=2)
    sparse = _train(lambda ps, c: OPTS[opt](ps, make()), True, padding_idx=2)
    for d, s in zip(dense, sparse):
        np.testing.assert_allclose(s, d, rtol=1e-5, atol=1e-6)


def test_embedding_sparse_gradient_is_selected_rows_and_accumulates():
    emb = oar.nn.Embedding(10, 3, sparse=True)
    ids = oar.to_tensor([[1, 2], [2, 5]])
    w = oar.to_tensor(RNG.standard_normal((2, 2, 3)).astype("float32"))
    (emb(ids) * w).sum().backward()
    g = emb.weight.grad
    assert g.is_selected_rows() and g.rows() == [1, 2, 2, 5] and g.shape == [4, 3]
    ref = np.zeros((10, 3), np.float32)
    np.add.at(ref, ids.numpy().reshape(-1), w.numpy().reshape(-1, 3))
    np.testing.assert_allclose(g.to_dense().numpy(), ref, rtol=1e-6)
    (emb(ids) * w).sum().backward()  # a second backward adds to it
    g = emb.weight.grad
    assert g.rows() == [1, 2, 5]
    np.testing.assert_allclose(g.to_dense().numpy(), 2 * ref, rtol=1e-6)
    emb.clear_gradients()
    assert emb.weight.grad is None


def test_embedding_tied_weight_dense_and_sparse_parts_add():
    emb = oar.nn.Embedding(6, 2, sparse=True)
    ids = oar.to_tensor([0, 3, 3])
    (emb(ids).sum() + (emb.weight * 2.0).sum()).backward()
    ref = np.full((6, 2), 2.0, np.float32)
    ref[0] += 1
    ref[3] += 2
    np.testing.assert_allclose(emb.weight.grad.numpy(), ref)


def _lazy_adam_reference(w, grads, lr, b1, b2, eps, coeff=0.0):
    """Paddle's lazy Adam in float64: only the rows of each step's gradient move."""
    m1, m2 = np.zeros_like(w), np.zeros_like(w)
    b1p, b2p = b1, b2
    for rows, vals in grads:
        g = np.zeros_like(w)
        np.add.at(g, rows, vals)
        r = np.unique(rows)
        lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
        m1[r] = b1 * m1[r] + (1 - b1) * g[r]
        m2[r] = b2 * m2[r] + (1 - b2) * g[r] ** 2
        w[r] = w[r] * (1 - lr * coeff) - lr_t * m1[r] / (np.sqrt(m2[r]) + eps * np.sqrt(1 - b2p))
        b1p, b2p = b1p * b1, b2p * b2
    return w


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_lazy_adam_updates_only_the_rows_present(cls):
    oar.seed(5)
    emb = oar.nn.Embedding(8, 3, sparse=True)
    w0 = emb.weight.numpy().astype(np.float64)
    kw = {"weight_decay": 0.1} if cls == "AdamW" else {}
    opt = getattr(oar.optimizer, cls)(0.1, parameters=emb.parameters(), lazy_mode=True, **kw)
    steps = [np.array([0, 1, 1]), np.array([4]), np.array([1, 4, 6])]
    grads = []
    for rows in steps:
        wgt = RNG.standard_normal((len(rows), 3))
        (emb(oar.to_tensor(rows)) * oar.to_tensor(wgt.astype("float32"))).sum().backward()
        grads.append((rows, wgt))
        opt.step()
        opt.clear_grad()
    ref = _lazy_adam_reference(w0.copy(), grads, 0.1, 0.9, 0.999, 1e-8, 0.1 if cls == "AdamW" else 0.0)
    out = emb.weight.numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    untouched = [2, 3, 5, 7]
    np.testing.assert_array_equal(out[untouched], w0[untouched].astype(np.float32))


def test_non_lazy_adam_moves_rows_without_gradient_as_dense():
    dense = _train(lambda ps, c: oar.optimizer.Adam(0.05, parameters=ps), False, steps=3)
    sparse = _train(lambda ps, c: oar.optimizer.Adam(0.05, parameters=ps, lazy_mode=False), True, steps=3)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-5, atol=1e-6)


def test_embedding_sparse_minimize_and_no_grad():
    emb = oar.nn.Embedding(5, 2, sparse=True)
    w0 = emb.weight.numpy().copy()
    opt = oar.optimizer.SGD(1.0, parameters=emb.parameters())
    loss = emb(oar.to_tensor([1, 1, 3])).sum()
    loss.backward()
    opt.minimize(loss)
    ref = w0.copy()
    ref[1] -= 2
    ref[3] -= 1
    np.testing.assert_allclose(emb.weight.numpy(), ref, rtol=1e-6)
    with oar.no_grad():
        out = emb(oar.to_tensor([0]))
    np.testing.assert_allclose(out.numpy(), ref[[0]])


def test_on_every_device(device):
    """The compositions run on each device (sim has no scatter/gather kernels of its own for some dtypes:
    the fallback covers them) and give the CPU's results."""
    oar.set_device(device)
    a = _rand_sparse_dense((3, 4))
    b = RNG.standard_normal((4, 2))
    x = oar.to_tensor(a).to_sparse_csr()
    y = oar.to_tensor(b, stop_gradient=False)
    out = sp.matmul(x, y)
    assert str(out.place).startswith("Place(" + device.split(":")[0])
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.repeat(a.sum(0)[:, None], 2, 1), rtol=1e-12)
    np.testing.assert_allclose(sp.add(x, x).to_dense().numpy(), 2 * a)
    dense = _train(lambda ps, c: oar.optimizer.Adam(0.05, parameters=ps, lazy_mode=False), False, steps=2)
    sparse = _train(lambda ps, c: oar.optimizer.Adam(0.05, parameters=ps, lazy_mode=False), True, steps=2)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-5, atol=1e-6)


def _dp_sparse_worker(out):
    import oar.distributed as dist
    dist.init_parallel_env()
    model = oar.nn.Sequential(oar.nn.Embedding(6, 2, sparse=True), oar.nn.Linear(2, 1))
    try:
        oar.DataParallel(model)
        msg = "no error"
    except NotImplementedError as e:
        msg = str(e)
    with open(os.path.join(out, "rank{}.txt".format(dist.get_rank())), "w") as f:
        f.write(msg)


def test_data_parallel_refuses_sparse_embedding(tmp_path, monkeypatch):
    import oar.distributed as dist
    from _util import clean_job
    with clean_job(monkeypatch):
        monkeypatch.setenv("OAR_COLLECTIVE_TIMEOUT", "60")
        dist.spawn(_dp_sparse_worker, args=(str(tmp_path),), nprocs=2)
    for r in (0, 1):
        msg = (tmp_path / "rank{}.txt".format(r)).read_text()
        assert "DataParallel" in msg and "sparse=True" in msg and "'0'" in msg, msg


def _train_tools(sparse, tool):
    """A few steps through GradScaler or the in-place clip utilities, sparse or dense Embedding."""
    oar.seed(11)
    emb = oar.nn.Embedding(9, 3, sparse=sparse)
    lin = oar.nn.Linear(3, 2)
    params = emb.parameters() + lin.parameters()
    opt = oar.optimizer.Adam(0.05, parameters=params)
    scaler = oar.amp.GradScaler(init_loss_scaling=1024.0) if tool == "scaler" else None
    rng = np.random.default_rng(1)
    for _ in range(3):
        ids = oar.to_tensor(rng.integers(0, 5, size=(4, 3)))
        loss = (lin(emb(ids)) ** 2).mean()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            if tool == "norm":
                oar.nn.utils.clip_grad_norm_(params, 0.05)
            else:
                oar.nn.utils.clip_grad_value_(params, 0.002)
            opt.step()
        opt.clear_grad()
    return emb.weight.numpy()


@pytest.mark.parametrize("tool", ["scaler", "norm", "value"])
def test_grad_scaler_and_inplace_clips_match_dense(tool):
    np.testing.assert_allclose(_train_tools(True, tool), _train_tools(False, tool), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_slice_values_and_gradient(layout):
    a = _rand_sparse_dense((3, 5, 4), 0.5)
    idx = np.stack(np.nonzero(a))
    v0 = a[tuple(idx)]

    def run(v, need_grad=False):
        x = sp.sparse_coo_tensor(idx, v, [3, 5, 4], stop_gradient=not need_grad)
        if layout == "csr":
            c = x.to_sparse_csr()
            x = sp.sparse_csr_tensor(c.crows(), c.cols(), v, [3, 5, 4], stop_gradient=not need_grad)
        out = sp.slice(x, [1, -1], [1, -3], [-1, 100])
        return x, out, (out.to_dense() * oar.to_tensor(np.arange(3 * 3 * 3.0).reshape(3, 3, 3))).sum()

    x, out, loss = run(v0, True)
    assert out.is_sparse_csr() == (layout == "csr")
    np.testing.assert_array_equal(out.to_dense().numpy(), a[:, 1:-1, -3:])
    loss.backward()
    np.testing.assert_allclose(x.grad.values().numpy(), _num_grad(lambda v: float(run(v)[2]), v0), atol=1e-8)
    empty = sp.slice(_coo(a), [0], [2], [2])
    assert empty.shape == [0, 5, 4] and empty.nnz() == 0


def test_dense_tensor_sparse_methods():
    t = oar.to_tensor([[0.0, 1.0], [2.0, 0.0]])
    assert t.is_dense() and not t.is_sparse() and not t.is_selected_rows() and t.to_dense() is t
    with pytest.raises(TypeError, match="Tensor.indices: the tensor is dense"):
        t.indices()
    with pytest.raises(TypeError, match="Tensor.values: the tensor is dense"):
        t.values()


def test_sparse_coo_matmul_op_checks_its_entries():
    op = oar._C.Op("sparse_coo_matmul", "nrows")
    v = oar.to_tensor([1.0, 2.0])
    y = oar.ones([3, 2])
    with pytest.raises(IndexError, match="sparse_coo_matmul: entry 1 at \\(5, 0\\) is out of range"):
        op(v, oar.to_tensor([0, 5]), oar.to_tensor([0, 0]), y, 2)
    with pytest.raises(TypeError, match="sparse_coo_matmul: rows must be int64"):
        op(v, oar.to_tensor([0, 1], "int32"), oar.to_tensor([0, 0]), y, 2)
    out = op(v, oar.to_tensor([1, 1]), oar.to_tensor([2, 2]), y, 2)  # repeated entries add
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [3, 3]])


def test_oar_grad_through_sparse_embedding_is_dense_and_accumulates_nothing():
    emb = oar.nn.Embedding(6, 2, sparse=True)
    ids = oar.to_tensor([1, 4, 1])
    loss = (emb(ids) ** 2).sum()
    (g,) = oar.grad(loss, [emb.weight])
    w = emb.weight.numpy()
    ref = np.zeros_like(w)
    np.add.at(ref, [1, 4, 1], 2 * w[[1, 4, 1]])
    np.testing.assert_allclose(g.numpy(), ref, rtol=1e-6)
    assert emb.weight.grad is None
