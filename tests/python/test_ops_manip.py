"""The manip op family (framework/src/ops_manip.cc, plugins/cpu/manip.cc, python/oar/tensor/
manipulation.py and search.py) against numpy on every device, with finite-difference gradients."""
import numpy as np
import pytest

import oar
from _util import check, check_grad, raises_on


RNG = np.random.default_rng(0)


def T(a, device, **kw):
    return oar.to_tensor(a, place=device, **kw)


def rand(*shape):
    return RNG.standard_normal(shape)


# ---- composites over views / concat ------------------------------------------------------------------
def test_stack_unbind_unstack(device):
    a, b = rand(2, 3).astype(np.float32), rand(2, 3).astype(np.float32)
    for axis in (0, 1, 2, -1):
        check(oar.stack([T(a, device), T(b, device)], axis), np.stack([a, b], axis))
    parts = oar.unbind(T(a, device), 1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        check(p, a[:, i])
    check(oar.unstack(T(a, device))[1], a[1])
    with pytest.raises(ValueError, match="stack"):
        oar.stack([T(a, device), T(rand(3, 2), device)])
    with pytest.raises(IndexError, match="stack"):
        oar.stack([T(a, device)], 4)


def test_split_chunk(device):
    a = rand(4, 6)
    t = T(a, device)
    for got, exp in zip(oar.split(t, 3, axis=1), np.split(a, 3, axis=1)):
        check(got, exp)
    for got, exp in zip(oar.split(t, [1, -1, 2], axis=1), np.split(a, [1, 4], axis=1)):
        check(got, exp)
    for got, exp in zip(oar.chunk(t, 2), np.split(a, 2)):
        check(got, exp)
    for got, exp in zip(t.split([2, 2]), np.split(a, 2)):  # a Tensor method too
        check(got, exp)
    with pytest.raises(ValueError, match="split"):
        oar.split(t, 4, axis=1)
    with pytest.raises(ValueError, match="split"):
        oar.split(t, [1, 1], axis=1)
    with pytest.raises(ValueError, match="split"):
        oar.split(t, [-1, -1, 6], axis=1)


def test_tile_repeat_interleave(device):
    a = np.arange(6).reshape(2, 3)
    t = T(a, device)
    for reps in ([2, 1], [1, 3], [2, 2, 2], [3]):
        check(oar.tile(t, reps), np.tile(a, reps))
    check(oar.tile(T(a.T, device), [2, 2]), np.tile(a.T, [2, 2]))  # non-contiguous input
    check(oar.repeat_interleave(t, 2), np.repeat(a, 2))
    check(oar.repeat_interleave(t, 2, axis=1), np.repeat(a, 2, axis=1))
    check(oar.repeat_interleave(t, T(np.array([1, 0, 2]), device), axis=1), np.repeat(a, [1, 0, 2], axis=1))
    with pytest.raises(ValueError, match="tile"):
        oar.tile(t, [-1, 1])
    with pytest.raises(ValueError, match="repeat_interleave"):
        oar.repeat_interleave(t, [1, 2], axis=1)


def test_flip_roll_rot90_moveaxis(device):
    a = np.arange(24).reshape(2, 3, 4).astype(np.float32)
    t = T(a, device)
    check(oar.flip(t, 0), np.flip(a, 0))
    check(oar.flip(t, [0, 2]), np.flip(a, [0, 2]))
    check(oar.flip(t[:, ::2], [-1]), np.flip(a[:, ::2], -1))
    check(oar.roll(t, 1), np.roll(a, 1))
    check(oar.roll(t, -2, 2), np.roll(a, -2, 2))
    check(oar.roll(t, [1, 5], [0, 2]), np.roll(a, [1, 5], [0, 2]))
    for k in range(-1, 5):
        check(oar.rot90(t, k, [1, 2]), np.rot90(a, k, (1, 2)))
    check(oar.moveaxis(t, 0, -1), np.moveaxis(a, 0, -1))
    check(oar.moveaxis(t, [0, 1], [2, 0]), np.moveaxis(a, [0, 1], [2, 0]))
    with pytest.raises(ValueError, match="flip"):  # Paddle 2.6.2 raises ValueError (InvalidArgument)
        oar.flip(t, 3)
    with pytest.raises(ValueError, match="roll"):
        oar.roll(t, [1, 2], 0)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode, device):
    a = rand(2, 3, 4, 5)
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    t = T(a, device)
    # NCHW: [left, right, top, bottom] pads W then H.
    check(oar.pad(t, [1, 2, 2, 0], mode=mode, value=1.5),
          np.pad(a, [(0, 0), (0, 0), (2, 0), (1, 2)], np_mode, **kw))
    check(oar.pad(t, [1, 2, 2, 0], mode=mode, value=1.5, data_format="NHWC"),
          np.pad(a, [(0, 0), (2, 0), (1, 2), (0, 0)], np_mode, **kw))
    b = rand(2, 3, 4)
    check(oar.pad(T(b, device), [2, 1], mode=mode, value=1.5, data_format="NCL"),
          np.pad(b, [(0, 0), (0, 0), (2, 1)], np_mode, **kw))
    check(oar.pad(T(a, device).transpose([0, 1, 3, 2]), [1, 1], mode=mode, value=1.5),
          np.pad(a.transpose(0, 1, 3, 2), [(0, 0), (0, 0), (0, 0), (1, 1)], np_mode, **kw))
    check_grad(lambda x: oar.pad(x, [1, 2, 2, 1], mode=mode, value=0.5), [rand(1, 2, 3, 3)], device)


def test_pad_all_dims_and_errors(device):
    a = rand(2, 3)
    check(oar.pad(T(a, device), [1, 0, 0, 2]), np.pad(a, [(1, 0), (0, 2)]))
    with pytest.raises(ValueError, match="pad"):
        oar.pad(T(rand(1, 2, 3), device), [3, 3], mode="reflect", data_format="NCL")
    with pytest.raises(ValueError, match="pad"):
        oar.pad(T(a, device), [1], mode="constant")
    with pytest.raises(ValueError, match="pad"):
        oar.pad(T(a, device), [1, 1], mode="wrap")
    with pytest.raises(ValueError, match="pad"):
        oar.pad(T(a, device), [-1, 0, 0, 0])
    for dt in ("int32", "bool", "float16"):
        check(oar.pad(T(a.astype(dt), device), [1, 0, 2, 1], value=1), np.pad(a.astype(dt), [(1, 0), (2, 1)],
                                                                             constant_values=1))
    check_grad(lambda x: oar.pad(x, [1, 0, 0, 2], value=3.0), [rand(2, 3)], device)


def test_tril_triu_diag_diagonal(device):
    a = rand(3, 4, 5)
    t = T(a, device)
    for d in (-2, 0, 1, 3):
        check(oar.tril(t, d), np.tril(a, d))
        check(oar.triu(t, d), np.triu(a, d))
        check(oar.diagonal(t, d, 1, 2), np.diagonal(a, d, 1, 2))
    check(oar.diagonal(t, 1, 2, 0), np.diagonal(a, 1, 2, 0))
    check(oar.tril(T(a[0].T, device)), np.tril(a[0].T))
    for d in (-9, 9):
        check(oar.tril(t, d), np.tril(a, d))
        check(oar.triu(t, d), np.triu(a, d))
    for dt in ("int32", "bool", "float16"):
        check(oar.triu(T(a.astype(dt), device), 1), np.triu(a.astype(dt), 1))
    v = rand(3)
    for off in (-1, 0, 2):
        check(oar.diag(T(v, device), off), np.diag(v, off))
        check(oar.diag(T(a[0], device), off), np.diag(a[0], off))
    exp = np.diag(v, 1)
    exp[~np.eye(4, k=1, dtype=bool)] = 7
    check(oar.diag(T(v, device), 1, padding_value=7), exp)
    check(oar.diag(T(np.array([1, 2], np.int32), device)), np.diag(np.array([1, 2], np.int32)))
    check(oar.diag(T(np.array([True, False]), device)), np.diag(np.array([True, False])))
    with pytest.raises(ValueError, match="tril"):
        oar.tril(T(v, device))


def test_slice_strided_slice_expand_as_broadcast_tensors(device):
    a = rand(3, 4, 5)
    t = T(a, device)
    check(oar.slice(t, [0, 2], [1, -3], [100, -1]), a[1:, :, -3:-1])
    check(oar.strided_slice(t, [1, 2], [3, 0], [0, 5], [-1, 2]), a[:, 3:0:-1, 0:5:2])
    check(oar.expand_as(T(a[:1], device), t), np.broadcast_to(a[:1], a.shape))
    x, y = oar.broadcast_tensors([T(rand(3, 1), device), T(rand(1, 4), device)])
    assert x.shape == [3, 4] and y.shape == [3, 4]
    with pytest.raises(ValueError, match="broadcast_tensors"):
        oar.broadcast_tensors([T(rand(3), device), T(rand(4), device)])


def test_composite_grads(device):
    check_grad(lambda a, b: oar.stack([a, b], 1), [rand(2, 3), rand(2, 3)], device)
    check_grad(lambda a: oar.split(a, [1, 2], 1)[1] * 2, [rand(2, 3)], device)
    check_grad(lambda a: oar.tile(a, [2, 3]), [rand(2, 2)], device)
    check_grad(lambda a: oar.flip(a, [0, 1]), [rand(2, 3)], device)
    check_grad(lambda a: oar.roll(a, 2, 1), [rand(2, 3)], device)
    check_grad(lambda a: oar.rot90(a), [rand(2, 3)], device)
    check_grad(lambda a: oar.tril(a, -1) + oar.triu(a, 1) * 3, [rand(3, 3)], device)
    check_grad(lambda a: oar.diag(a, 1), [rand(3)], device)
    check_grad(lambda a: oar.diagonal(a, -1), [rand(3, 4)], device)
    check_grad(lambda a: oar.repeat_interleave(a, 2, 0), [rand(2, 3)], device)


# ---- gather / scatter ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "bool"])
def test_gather_nd_dtypes(dtype, device):
    a = (rand(3, 4, 2) * 5).astype(dtype)
    idx = np.array([[0, 1], [2, 3], [1, 0]])
    out = oar.gather_nd(T(a, device), T(idx, device))
    check(out, a[idx[:, 0], idx[:, 1]])
    check(oar.gather_nd(T(a, device), T(np.array([[2], [0]]), device)), a[[2, 0]])
    check(oar.gather(T(a, device), T(np.array([2, 0, 2]), device)), a[[2, 0, 2]])
    check(oar.gather(T(a, device), T(np.array([1, 0]), device), axis=1), a[:, [1, 0]])


def test_gather_scatter_forward(device):
    a = rand(4, 3)
    t = T(a, device)
    check(oar.gather_nd(t.transpose([1, 0]), T(np.array([[2, 1]]), device)), a.T[[2], [1]])
    upd = rand(2, 3)
    exp = a.copy()
    exp[[1, 3]] = upd
    check(oar.scatter(t, T(np.array([1, 3]), device), T(upd, device)), exp)
    exp = a.copy()
    exp[1] = upd[0] + upd[1]
    check(oar.scatter(t, T(np.array([1, 1]), device), T(upd, device), overwrite=False), exp)
    exp = a.copy()
    exp[1] = upd[1]  # overwrite: the last repeated index wins
    check(oar.scatter(t, T(np.array([1, 1]), device), T(upd, device)), exp)
    idx = np.array([[0, 1], [0, 1], [3, 2]])
    u = rand(3)
    exp = a.copy()
    np.add.at(exp, (idx[:, 0], idx[:, 1]), u)
    check(oar.scatter_nd_add(t, T(idx, device), T(u, device)), exp)
    exp = np.zeros((4, 3))
    np.add.at(exp, (idx[:, 0], idx[:, 1]), u)
    check(oar.scatter_nd(T(idx, device), T(u, device), [4, 3]), exp)
    check(oar.bincount(T(np.array([1, 1, 3]), device)), np.bincount([1, 1, 3]))
    w = rand(3)
    check(oar.bincount(T(np.array([1, 1, 3]), device), T(w, device), minlength=6),
          np.bincount([1, 1, 3], w, minlength=6))


def test_take_put_along_axis(device):
    a = rand(3, 4)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    t = T(a, device)
    check(oar.take_along_axis(t, T(idx, device), 1), np.take_along_axis(a, idx, 1))
    check(oar.take_along_axis(t.transpose([1, 0]), T(idx.T, device), 0), np.take_along_axis(a.T, idx.T, 0))
    check(oar.take_along_axis(t, T(np.array([[1, -1]]), device), 1), np.take_along_axis(a, np.array([[1, 3]] * 3), 1))
    v = rand(3, 2)
    # Assigning through duplicate indices (row 1 of idx) keeps the last write on the CPU, as numpy does, and
    # an unspecified one of them on an accelerator (as in Paddle and PyTorch): the assign case has none.
    unique = np.array([[0, 3], [1, 2], [2, 0]])
    exp = a.copy()
    np.put_along_axis(exp, unique, v, 1)
    check(oar.put_along_axis(t, T(unique, device), T(v, device), 1), exp)
    if device == "cpu":
        exp = a.copy()
        np.put_along_axis(exp, idx, v, 1)
        check(oar.put_along_axis(t, T(idx, device), T(v, device), 1), exp)
    exp = a.copy()
    for r in range(3):
        for j in range(2):
            exp[r, idx[r, j]] += v[r, j]
    check(oar.put_along_axis(t, T(idx, device), T(v, device), 1, reduce="add"), exp)
    exp = a.copy()
    for r in range(3):
        for j in range(2):
            exp[r, idx[r, j]] *= v[r, j]
    check(oar.put_along_axis(t, T(idx, device), T(v, device), 1, reduce="multiply"), exp)
    exp = a.copy()
    np.put_along_axis(exp, idx, 9.0, 1)
    check(oar.put_along_axis(t, T(idx, device), 9.0, 1), exp)
    with raises_on(device, IndexError, match="take_along_axis"):
        oar.take_along_axis(t, T(np.array([[4]]), device), 1)
    with pytest.raises(ValueError, match="put_along_axis"):
        oar.put_along_axis(t, T(idx, device), T(v, device), 1, reduce="max")


def test_gather_scatter_grads(device):
    idx = np.array([[0, 1], [2, 0], [0, 1]])
    check_grad(lambda x, i: oar.gather_nd(x, i), [rand(3, 2, 2), idx], device)
    check_grad(lambda x, i: oar.gather(x, i, axis=1), [rand(2, 3), np.array([2, 0, 2])], device)
    check_grad(lambda x, i, u: oar.scatter_nd_add(x, i, u), [rand(3, 2), idx, rand(3)], device)
    check_grad(lambda x, i, u: oar.scatter(x, i, u), [rand(4, 2), np.array([3, 1]), rand(2, 2)], device)
    check_grad(lambda x, i, u: oar.scatter(x, i, u, overwrite=False), [rand(4, 2), np.array([3, 3]), rand(2, 2)],
               device)
    ti = np.array([[0, 2], [1, 1]])
    check_grad(lambda x, i: oar.take_along_axis(x, i, 1), [rand(2, 3), ti], device)
    pi = np.array([[0, 2], [1, 0]])
    for reduce in ("assign", "add", "multiply"):
        check_grad(lambda x, i, v: oar.put_along_axis(x, i, v, 1, reduce=reduce), [rand(2, 3), pi, rand(2, 2)],
                   device)
    check_grad(lambda w: oar.bincount(oar.to_tensor(np.array([0, 2, 2]), place=device), w), [rand(3)], device)


def test_gather_errors(device):
    t = T(rand(3, 2), device)
    with raises_on(device, IndexError, match="gather_nd"):
        oar.gather_nd(t, T(np.array([[3]]), device))
    with pytest.raises(TypeError, match="gather_nd"):
        oar.gather_nd(t, T(np.array([[0.5]]), device))
    with pytest.raises(ValueError, match="gather_nd"):
        oar.gather_nd(t, T(np.array([[0, 0, 0]]), device))
    with pytest.raises(ValueError, match="scatter_nd_add"):
        oar.scatter_nd_add(t, T(np.array([[0]]), device), T(rand(3), device))
    with pytest.raises(ValueError, match="take_along_axis"):
        oar.take_along_axis(t, T(np.array([0]), device), 0)


# ---- sort / search ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "uint8"])
def test_sort_argsort_dtypes(dtype, device):
    a = (RNG.integers(0, 5, (3, 7))).astype(dtype)  # many ties: the order must be stable
    t = T(a, device)
    for axis in (0, 1, -1):
        check(oar.sort(t, axis), np.sort(a, axis, kind="stable"))
        check(oar.argsort(t, axis), np.argsort(a, axis, kind="stable"))
        check(oar.sort(t, axis, descending=True), np.flip(np.sort(a, axis), axis))
    exp = np.argsort(-a.astype(np.float64), 1, kind="stable")
    check(oar.argsort(t, 1, descending=True), exp)


def test_sort_nan_noncontiguous(device):
    a = np.array([[3.0, np.nan, 1.0, 2.0], [np.nan, 0.0, -1.0, 5.0]])
    check(oar.sort(T(a, device)), np.sort(a))
    check(oar.argsort(T(a, device)), np.argsort(a, kind="stable"))
    check(oar.sort(T(a, device), descending=True)[:, 1:], np.array([[3.0, 2.0, 1.0], [5.0, 0.0, -1.0]]))
    b = rand(4, 5)
    check(oar.sort(T(b, device).transpose([1, 0]), 1), np.sort(b.T, 1))
    check(oar.sort(T(b, device)[:, ::2], 0), np.sort(b[:, ::2], 0))


def test_topk_kthvalue_median_mode(device):
    a = rand(3, 6)
    t = T(a, device)
    v, i = oar.topk(t, 2)
    check(v, -np.sort(-a, 1)[:, :2])
    check(i, np.argsort(-a, 1, kind="stable")[:, :2])
    v, i = oar.topk(t, 2, axis=0, largest=False)
    check(v, np.sort(a, 0)[:2])
    check(i, np.argsort(a, 0, kind="stable")[:2])
    v, i = oar.kthvalue(t, 3)
    check(v, np.sort(a, 1)[:, 2])
    check(i, np.argsort(a, 1)[:, 2])
    v, i = oar.kthvalue(t, 1, axis=0, keepdim=True)
    check(v, np.sort(a, 0)[:1])
    check(oar.median(t), np.median(a))
    check(oar.median(t, 1), np.median(a, 1))
    check(oar.median(t, 0, keepdim=True), np.median(a, 0, keepdims=True))
    check(oar.median(T(np.array([[1, 4, 2]]), device), 1), np.array([2.0], np.float32))
    m = np.array([[1, 2, 2, 3], [4, 4, 1, 1]])
    v, i = oar.mode(T(m, device))
    check(v, [2, 1])
    check(i, [2, 3])
    with pytest.raises(ValueError, match="topk"):
        oar.topk(t, 7)
    with pytest.raises(ValueError, match="kthvalue"):
        oar.kthvalue(t, 0)


def test_search_grads(device):
    a = np.array([[0.3, -1.2, 2.5, 0.1], [1.0, 0.2, -0.4, 3.0]])  # distinct values
    check_grad(lambda x: oar.sort(x, 1), [a], device)
    check_grad(lambda x: oar.sort(x, 0, descending=True), [a], device)
    check_grad(lambda x: oar.topk(x, 2)[0], [a], device)
    check_grad(lambda x: oar.kthvalue(x, 2)[0], [a], device)
    check_grad(lambda x: oar.median(x, 1), [a], device)
    check_grad(lambda x: oar.median(x), [a[:, :3]], device)
    check_grad(lambda x, m: oar.masked_select(x, m), [a, a > 0.2], device)


def test_nonzero_where_masked_select(device):
    a = np.array([[0, 1.5, 0], [2, 0, -1]])
    t = T(a, device)
    check(oar.nonzero(t), np.argwhere(a))
    for got, exp in zip(oar.nonzero(t, as_tuple=True), np.nonzero(a)):
        check(got, exp[:, None])  # Paddle's [count, 1] columns
    for got, exp in zip(oar.where(t > 0), np.nonzero(a > 0)):
        check(got, exp[:, None])
    check(oar.nonzero(T(np.zeros((2, 2)), device)), np.zeros((0, 2), np.int64))
    check(oar.nonzero(t.transpose([1, 0])), np.argwhere(a.T))
    check(oar.masked_select(t, t > 0), a[a > 0])
    check(oar.masked_select(t, T(np.array([True, False, True]), device)), a[:, [0, 2]].reshape(-1))
    check(oar.masked_fill(t, t > 0, 7.0), np.where(a > 0, 7.0, a))
    with pytest.raises(TypeError, match="masked_select"):
        oar.masked_select(t, t)
    with raises_on(device, ValueError, match="nonzero"):
        oar._C.Op("nonzero", "count")(t, 5)


def test_unique_searchsorted(device):
    a = np.array([[3, 1, 2], [1, 3, 3]])
    t = T(a, device)
    check(oar.unique(t), np.unique(a))
    u, idx, inv, cnt = oar.unique(t, return_index=True, return_inverse=True, return_counts=True)
    eu, eidx, einv, ecnt = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    check(u, eu)
    check(idx, eidx)
    check(inv, einv.reshape(-1))
    check(cnt, ecnt)
    check(oar.unique(t, axis=0), np.unique(a, axis=0))
    s = np.array([1.0, 2.0, 2.0, 5.0])
    v = np.array([[0.0, 2.0], [3.0, 9.0]])
    check(oar.searchsorted(T(s, device), T(v, device)), np.searchsorted(s, v))
    check(oar.searchsorted(T(s, device), T(v, device), right=True), np.searchsorted(s, v, side="right"))


def test_sort_errors(device):
    with pytest.raises(IndexError, match="sort"):
        oar.sort(T(rand(2, 2), device), 2)
    with pytest.raises(TypeError, match="sort"):
        oar._C.Op("sort")(T(np.array([1j]), device))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int64", "float16", "bool"])
def test_sort_long_lines(dtype, device):
    # Lines of >= 512 elements take the radix path; values repeat, so stability is exercised.
    a = (RNG.standard_normal((2, 1500)) * 50).astype(dtype)
    if dtype in ("float32", "float64"):
        a = a.round()  # ties, and -0.0 next to 0.0 (equal, so they keep their order)
    if dtype in ("float32", "float64"):
        a[0, ::97] = np.nan
        a[1, ::89] = -np.inf
    t = T(a, device)
    check(oar.argsort(t), np.argsort(a, 1, kind="stable"))
    check(oar.sort(t), np.sort(a, 1))
    if dtype != "bool":
        neg = -a.astype(np.float64)
        exp = np.argsort(np.where(np.isnan(neg), -np.inf, neg), 1, kind="stable")  # NaN first descending
        check(oar.argsort(t, descending=True), exp)
    check(oar.argsort(T(a.T.copy(), device), axis=0), np.argsort(a.T, 0, kind="stable"))


def test_diag_embed_crop_index_put_unique_consecutive(device):
    a = rand(2, 3)
    t = T(a, device)
    exp = np.zeros((2, 4, 4))
    for b in range(2):
        exp[b] = np.diag(a[b], 1)
    check(oar.diag_embed(t, 1), exp)
    check(oar.diag_embed(t, -1, 0, 2), np.stack([np.diag(a[b], -1) for b in range(2)], 1))
    check_grad(lambda x: oar.diag_embed(x, 0, 0, 1), [rand(2, 3)], device)
    check(oar.crop(t, [1, -1], [1, 1]), a[1:2, 1:])
    with pytest.raises(ValueError, match="crop"):
        oar.crop(t, [3, 1])
    x = rand(3, 4)
    i0, i1 = np.array([0, 2]), np.array([1, 3])
    exp = x.copy()
    exp[i0, i1] = [5.0, 6.0]
    check(oar.index_put(T(x, device), (T(i0, device), T(i1, device)), T(np.array([5.0, 6.0]), device)), exp)
    exp = x.copy()
    np.add.at(exp, (np.array([1, 1]),), 2.0)
    check(oar.index_put(T(x, device), (T(np.array([1, 1]), device),), T(np.array(2.0), device), accumulate=True), exp)
    exp = x.copy()
    exp[x > 0] = 0
    check(oar.index_put(T(x, device), (T(x > 0, device),), T(np.array(0.0), device)), exp)
    check_grad(lambda x, v: oar.index_put(x, (oar.to_tensor(i0, place=device),), v), [rand(3, 4), rand(4)], device)
    c = np.array([1, 1, 2, 2, 2, 1, 3])
    u, inv, cnt = oar.unique_consecutive(T(c, device), return_inverse=True, return_counts=True)
    check(u, [1, 2, 1, 3])
    check(inv, [0, 0, 1, 1, 1, 2, 3])
    check(cnt, [2, 3, 1, 1])
    m = np.array([[1, 1, 2], [1, 1, 2], [3, 3, 3]])
    check(oar.unique_consecutive(T(m, device), axis=0), m[[0, 2]])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool"])
def test_kernels_dtypes(dtype, device):
    a = (rand(3, 4) * 4).astype(dtype)
    t = T(a, device)
    idx = np.array([[0, 3, 3], [1, 0, 2], [2, 2, 1]])
    check(oar.take_along_axis(t, T(idx, device), 1), np.take_along_axis(a, idx, 1))
    v = (rand(3, 3) * 4).astype(dtype)
    exp = a.copy()
    np.put_along_axis(exp, idx[:, :1], v[:, :1], 1)
    check(oar.put_along_axis(t, T(idx[:, :1], device), T(v[:, :1], device), 1), exp)
    check(oar.nonzero(t), np.argwhere(a))
    if dtype != "bool":
        nd = np.array([[0, 1], [2, 3], [0, 1]])
        u = (rand(3) * 4).astype(dtype)
        exp = a.copy()
        np.add.at(exp, (nd[:, 0], nd[:, 1]), u)
        check(oar.scatter_nd_add(t, T(nd, device), T(u, device)), exp.astype(dtype), rtol=1e-2, atol=1e-2)
    b = T(a.copy(), device)
    b[[0, 2], 1:3] = v[:2, :2]
    exp = a.copy()
    exp[[0, 2], 1:3] = v[:2, :2]
    check(b, exp)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16", "uint8"])
def test_topk_kernel(dtype, device):
    a = (RNG.standard_normal((3, 700)) * 20).astype(dtype)  # repeated values: ties by position
    t = T(a, device)
    for k in (1, 5, 700):
        v, i = oar.topk(t, k)
        order = np.argsort(-a.astype(np.float64), 1, kind="stable")[:, :k]
        check(i, order)
        check(v, np.take_along_axis(a, order, 1))
        v, i = oar.topk(t.transpose([1, 0]), k, axis=0, largest=False)
        order = np.argsort(a.T, 0, kind="stable")[:k]
        check(i, order)
        check(v, np.take_along_axis(a.T, order, 0))
    check_grad(lambda x: oar.topk(x, 2, axis=0, largest=False)[0], [rand(3, 4)], device)


def test_sort_one_long_line(device):
    # A single line of 2^16+ elements is sorted in parallel chunks and merged.
    a = (RNG.standard_normal(70001) * 100).astype(np.float32).round()
    a[::1000] = np.nan
    t = T(a, device)
    check(oar.argsort(t), np.argsort(a, kind="stable"))
    nans = int(np.isnan(a).sum())  # first when descending
    check(oar.sort(t, descending=True)[nans:], -np.sort(-a[~np.isnan(a)]))
