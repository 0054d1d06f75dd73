"""oar.sparse.nn.functional: activations on sparse tensors (Paddle's paddle.sparse.nn.functional)."""
import numpy as np

from ...nn import functional as _F
from ...tensor.manipulation import _index_select, _scatter_nd_add
from ..ops import _check_sparse, _unary
from ..tensor import SparseCooTensor, _full_coo, _index_tensor, _zeros

__all__ = ["relu", "relu6", "leaky_relu", "softmax"]

relu = _unary("relu", _F.relu)
relu6 = _unary("relu6", _F.relu6)


def leaky_relu(x, negative_slope=0.01, name=None):
    """x if x >= 0 else negative_slope * x, on the stored values."""
    _check_sparse(x, "leaky_relu")
    x = x.coalesce()
    return x._with_values(_F.leaky_relu(x.values(), negative_slope))


def softmax(x, axis=-1, name=None):
    """Softmax along the last axis over each row's stored entries (the absent ones are -inf, not 0,
    as in Paddle); the result keeps x's layout and pattern."""
    _check_sparse(x, "softmax")
    if axis not in (-1, x.ndim - 1):
        raise ValueError("sparse.nn.functional.softmax: only axis=-1 is supported, got {}".format(axis))
    c = _full_coo(x).coalesce()
    idx = c._host_indices()
    v = c.values()
    if v.shape[0] == 0:
        return x
    row = np.ravel_multi_index(tuple(idx[:-1]), x.shape[:-1]) if x.ndim > 1 else np.zeros(idx.shape[1], np.int64)
    _, row = np.unique(row, return_inverse=True)
    nrows = int(row.max()) + 1
    # The row maximum is a constant shift (softmax does not change under it), taken on the host.
    vals = v.detach().numpy()
    mx = np.full(nrows, -np.inf, dtype=vals.dtype)
    np.maximum.at(mx, row, vals)
    rt = _index_tensor(row, x.place)
    e = (v - _index_select(_to(mx, v), rt, 0)).exp()
    s = _scatter_nd_add(_zeros([nrows], v.dtype, x.place), rt.reshape([-1, 1]), e)
    out = SparseCooTensor(c.indices(), e / _index_select(s, rt, 0), x.shape, True)
    return out.to_sparse_csr() if x.is_sparse_csr() else out


def _to(arr, like):
    from ...tensor.creation import to_tensor
    return to_tensor(arr, dtype=like.dtype, place=like.place)
