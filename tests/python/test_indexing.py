"""Basic indexing (ints, slices with steps and negative bounds, None, ...) against numpy; results are views."""
import numpy as np
import pytest

import oar
from _util import check

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
    row.numpy()[:] = 5.0  # row is a contiguous view: numpy() shares it
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
    with pytest.raises(TypeError, match="not supported yet"):
        t[[0, 1]]
    with pytest.raises(TypeError, match="not supported yet"):
        t["a"]
