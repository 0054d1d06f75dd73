"""Indexing against numpy: basic indexing (ints, slices with steps and negative bounds, None, ...) gives
views; advanced indexing (bool masks, integer lists / arrays / tensors) gathers and is differentiable;
__setitem__ with scalars, arrays and tensors (broadcast, cast to the target dtype)."""
import numpy as np
import pytest

import oar
from _util import check, raises_on

A = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)

INDICES = [
    0, -1, 1, (1, 2), (0, -1, 3, -5), slice(None), slice(1, None), slice(None, None, -1), slice(-2, None),
    (slice(None), 1), (Ellipsis, 2), (Ellipsis, slice(None, None, 2)), (None,), (None, 0, None),
    (0, Ellipsis, None), (slice(None, None, 2), slice(3, 0, -1)), (slice(-100, 100),), (slice(5, 1),),
    (1, slice(None), slice(1, 4, 2), slice(None, None, -2)), (Ellipsis,), (slice(None), None, Ellipsis, 0),
    (np.int64(1), slice(-1, -4, -1)), (slice(None, None, 3), slice(None), slice(None), -2),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_numpy(index, device):
    t = oar.to_tensor(A, place=device)
    out = t[index]
    check(out, A[index])
    assert out._is_shared_buffer_with(t)  # a view


def test_getitem_tensor_index_and_chain():
    t = oar.to_tensor(A)
    check(t[oar.to_tensor(1)], A[1])
    check(t[1][2][3], A[1][2][3])
    check(t[:, 1:][0, ::-1], A[:, 1:][0, ::-1])


def test_view_write_through_numpy():
    t = oar.to_tensor(np.zeros((3, 4), np.float32))
    row = t[1]
    np.asarray(row)[:] = 5.0  # row is a contiguous view: np.asarray shares it (numpy() copies)
    check(t, np.array([[0] * 4, [5] * 4, [0] * 4], np.float32))


def test_iteration():
    t = oar.to_tensor([[1, 2], [3, 4]])
    assert [r.tolist() for r in t] == [[1, 2], [3, 4]]


def test_index_errors(device):
    t = oar.to_tensor(A, place=device)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 2"):
        t[2]
    with pytest.raises(IndexError, match="out of bounds"):
        t[0, -4]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., 0, ...]
    with pytest.raises(ValueError):
        t[::0]
    with pytest.raises(IndexError, match="not supported"):
        t["a"]
    with pytest.raises(IndexError, match="integer or boolean"):
        t[[0.5, 1.0]]
    with pytest.raises(IndexError, match="boolean index did not match"):
        t[np.ones(3, bool)]
    with pytest.raises(IndexError, match="could not be broadcast"):
        t[[0, 1], [0, 1, 2]]
    with raises_on(device, IndexError, match="out of range"):
        t[[0, 2]]


M = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.float64)
ADVANCED = [
    [1, 0], [[1], [0]], ([0, 1], [2, 0]), (slice(None), [2, 0, 2]), (Ellipsis, [4, -1]),
    (0, slice(None), [1, 3]), ([0, 1], slice(None), [1, 3]), (slice(None), [0, 2], [1, 3]),
    (slice(None), [[0], [2]], [1, 3]), (None, [1], slice(1, 3), None, [0, 3]), ([-1, 0], Ellipsis, 0),
    M[:, :, 0, 0] > 7, M[..., 0] > 30, M > 50, (slice(None), M[0, :, 0, 0] % 2 == 0), (M[:, 0, 0, 0] > 0, 1),
    (np.array([True, False]), slice(None), [0, 3]), ([], slice(None)), (np.array([], np.int64),),
    ([1, 0], slice(None, None, -1), slice(None), [[2], [3]]),
]


def _ids(i):
    return repr(i)[:60]


@pytest.mark.parametrize("index", ADVANCED, ids=[_ids(i) for i in ADVANCED])
def test_advanced_getitem_matches_numpy(index, device):
    t = oar.to_tensor(M, place=device)
    check(t[index], M[index])


@pytest.mark.parametrize("index", ADVANCED, ids=[_ids(i) for i in ADVANCED])
def test_advanced_getitem_tensor_indices(index, device):
    def conv(i):
        if isinstance(i, (list, np.ndarray)):
            return oar.to_tensor(np.asarray(i, dtype=np.int64 if np.asarray(i).dtype.kind != "b" else bool),
                                 place=device)
        return i
    idx = tuple(conv(i) for i in index) if isinstance(index, tuple) else conv(index)
    t = oar.to_tensor(M, place=device)
    check(t[idx], M[index])


def test_advanced_getitem_noncontiguous_and_dtypes(device):
    for dt in ("float32", "int32", "bool", "float16"):
        a = (M % 3).astype(dt)
        t = oar.to_tensor(a, place=device).transpose([3, 1, 2, 0])
        check(t[[1, 4], :, [0, 3]], a.transpose(3, 1, 2, 0)[[1, 4], :, [0, 3]])
    t = oar.to_tensor(M, place=device)[:, ::2]
    check(t[t > 40], M[:, ::2][M[:, ::2] > 40])


def test_advanced_getitem_grad(device):
    from _util import check_grad
    a = np.random.default_rng(0).standard_normal((3, 4))
    check_grad(lambda x: x[[0, 2, 0]], [a], device)
    check_grad(lambda x: x[:, [3, 1]], [a], device)
    check_grad(lambda x: x[[0, 1], [1, 1]], [a], device)
    check_grad(lambda x: x[x > 0], [a], device)


SETS = [
    (0, 1.5), ((slice(None), 1), -2), ((Ellipsis, slice(None, None, -2)), 7), ((None, 1, slice(1, 3)), 3),
    ((-1, -2), np.arange(4 * 5).reshape(4, 5)), ((slice(None), slice(None), 0), np.arange(5)),
    ([1, 0], 9), (([0, 1], [2, 0]), np.arange(2 * 4 * 5).reshape(2, 4, 5)), ((slice(None), [0, 2]), 4.0),
    ((slice(None), [0, 2], slice(None), [1, 3]), np.arange(4)), (M > 100, -1), (M[..., 0] > 50, np.arange(5)),
    ((0, slice(None), [1, 3]), np.arange(3)[:, None]), ((Ellipsis, [4, -1]), np.float32(2.5)),
    ((slice(None), M[0, :, 0, 0] > 10), np.ones((1, 1, 5))), (([], slice(None, None, -1)), 1.0),
    ((np.zeros(2, bool), [[1], [0]], 2), np.float64(3)),
]


@pytest.mark.parametrize("index,value", SETS, ids=[_ids(i) for i, v in SETS])
def test_setitem_matches_numpy(index, value, device):
    for dtype in ("float64", "int32"):
        a = M.astype(dtype)
        t = oar.to_tensor(a, place=device)
        exp = a.copy()
        exp[index] = value
        t[index] = value
        check(t, exp)
        t2 = oar.to_tensor(a, place=device)
        t2[index] = oar.to_tensor(np.asarray(value), place=device)  # a tensor value, cast to the target
        check(t2, exp)


def test_setitem_through_view_and_bool(device):
    a = np.zeros((3, 4), np.float32)
    t = oar.to_tensor(a, place=device)
    v = t[:, ::2]
    v[[0, 2]] = 5
    a[:, ::2][[0, 2]] = 5
    check(t, a)
    b = np.array([True, False, True])
    t = oar.to_tensor(b, place=device)
    t[1] = True
    check(t, np.array([True, True, True]))
    t = oar.to_tensor(np.arange(6).reshape(2, 3), place=device)
    t[t % 2 == 0] = oar.to_tensor(np.array([10, 20, 30]), place=device)
    check(t, np.array([[10, 1, 20], [3, 30, 5]]))
    with pytest.raises(ValueError, match="broadcast"):
        t[0] = np.arange(4)
