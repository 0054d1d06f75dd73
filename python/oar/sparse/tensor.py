"""Sparse tensors (Paddle's COO and CSR tensors): a layout object holding ordinary dense tensors.

A SparseCooTensor holds `indices` (int64 [sparse_dim, nnz]) and `values` ([nnz, *dense_dims]); a
SparseCsrTensor holds `crows` (int64, (M+1) per batch), `cols` (int64 [nnz]) and `values` ([nnz]). Every
computation is done by dense ops on these tensors (gather, multiply, scatter_nd_add, ...), so autograd
and every device work unchanged: a gradient reaches the values (and through them whatever produced
them), and the index structure, which has no gradient, is rearranged on the host with numpy (sorting,
merging duplicates, CSR <-> COO). See docs/decisions.md (94) and docs/sparse.md.
"""
import numpy as np

from .. import _C
from .._C import Tensor
from ..tensor.creation import to_tensor
from ..tensor.manipulation import _gather_nd, _scatter_nd_add

__all__ = ["SparseCooTensor", "SparseCsrTensor", "sparse_coo_tensor", "sparse_csr_tensor"]

_fill = _C.Op("fill", "shape", "value", "dtype")


def _zeros(shape, dtype, place):
    return _fill(list(shape), 0.0, dtype, place=place)


def _index_tensor(arr, place):
    """An int64 index tensor (no gradient) from a numpy array."""
    return to_tensor(np.ascontiguousarray(arr, dtype=np.int64), place=place)


def _host(t):
    return np.asarray(t.numpy())


class _Sparse:
    """What COO and CSR tensors share: the values tensor carries dtype, place and gradient state."""

    def is_sparse(self):
        return True

    def is_selected_rows(self):
        return False

    def is_dense(self):
        return False

    @property
    def shape(self):
        return list(self._shape)

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def place(self):
        return self._values.place

    def nnz(self):
        return int(self._values.shape[0])

    def values(self):
        return self._values

    @property
    def stop_gradient(self):
        return self._values.stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value):
        self._values.stop_gradient = bool(value)

    @property
    def grad(self):
        """The gradient of the values, laid out like this tensor (same indices), or None."""
        g = self._values.grad
        return None if g is None else self._with_values(g)

    def clear_gradient(self, set_to_zero=True):
        self._values.clear_gradient(set_to_zero)

    def backward(self, grad_tensor=None, retain_graph=False):
        """Backward from this sparse result: grad_tensor (sparse, same layout and pattern) defaults to ones."""
        g = None if grad_tensor is None else grad_tensor.values()
        self._values.backward(g, retain_graph)

    def detach(self):
        return self._with_values(self._values.detach())

    def numpy(self):
        """The dense numpy array."""
        return self.to_dense().numpy()

    def astype(self, dtype):
        return self._with_values(self._values.astype(dtype))

    def __repr__(self):
        head = "Tensor(shape={}, dtype=paddle.{}, place={}, stop_gradient={}, \n".format(
            self.shape, self.dtype.name, self.place, self.stop_gradient)
        parts = ["       {}={}".format(k, np.array2string(_host(v), separator=", ", prefix="       " + k + "="))
                 for k, v in self._parts()]
        return head + ", \n".join(parts) + ")"

    # Python operators (Paddle has the functions only; these are the same functions).
    def __add__(self, other):
        from .ops import add
        return add(self, other)

    def __sub__(self, other):
        from .ops import subtract
        return subtract(self, other)

    def __mul__(self, other):
        from .ops import multiply
        return multiply(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        from .ops import divide
        return divide(self, other)

    def __neg__(self):
        from .ops import neg
        return neg(self)

    def __matmul__(self, other):
        from .ops import matmul
        return matmul(self, other)


class SparseCooTensor(_Sparse):
    """COO: the entry k sits at indices[:, k] (the first sparse_dim dims) and holds values[k] (the
    remaining dims). Duplicated indices mean the sum; coalesce() merges and sorts them."""

    def __init__(self, indices, values, shape, coalesced=False):
        self._indices = indices
        self._values = values
        self._shape = [int(s) for s in shape]
        self._coalesced = coalesced

    def is_sparse_coo(self):
        return True

    def is_sparse_csr(self):
        return False

    def indices(self):
        return self._indices

    @property
    def sparse_dim(self):
        return int(self._indices.shape[0])

    @property
    def dense_dim(self):
        return self.ndim - self.sparse_dim

    def _parts(self):
        return [("indices", self._indices), ("values", self._values)]

    def _with_values(self, values):
        return SparseCooTensor(self._indices, values, self._shape, self._coalesced)

    def _host_indices(self):
        return _host(self._indices).astype(np.int64, copy=False).reshape(self.sparse_dim, -1)

    def coalesce(self):
        """Sorted (row-major) indices without duplicates; duplicated entries are summed."""
        if self._coalesced:
            return self
        idx = self._host_indices()
        sshape = self._shape[:self.sparse_dim]
        if idx.shape[1] == 0:
            return SparseCooTensor(self._indices, self._values, self._shape, True)
        lin = np.ravel_multi_index(tuple(idx), sshape)
        if (np.diff(lin) > 0).all():  # already sorted and unique: the same tensors
            return SparseCooTensor(self._indices, self._values, self._shape, True)
        uniq, inverse = np.unique(lin, return_inverse=True)
        place = self.place
        target = _zeros([len(uniq)] + list(self._values.shape[1:]), self.dtype, place)
        values = _scatter_nd_add(target, _index_tensor(inverse.reshape(-1, 1), place), self._values)
        new_idx = np.stack(np.unravel_index(uniq, sshape)) if len(sshape) else np.zeros((0, len(uniq)))
        return SparseCooTensor(_index_tensor(new_idx, place), values, self._shape, True)

    def to_dense(self):
        idx = self._indices
        target = _zeros(self._shape, self.dtype, self.place)
        if self.nnz() == 0:
            return target
        return _scatter_nd_add(target, idx.transpose([1, 0]), self._values)

    def to_sparse_coo(self, sparse_dim=None):
        if sparse_dim is None or sparse_dim == self.sparse_dim:
            return self
        return self.to_dense().to_sparse_coo(sparse_dim)

    def to_sparse_csr(self):
        if self.ndim not in (2, 3):
            raise ValueError("to_sparse_csr: only 2-D and 3-D tensors have a CSR form, got shape {}".format(
                self._shape))
        c = _full_coo(self).coalesce()
        idx = c._host_indices()
        m = self._shape[-2]
        batches = 1 if self.ndim == 2 else self._shape[0]
        row_ids = idx[-2] if self.ndim == 2 else idx[0] * m + idx[1]
        counts = np.bincount(row_ids, minlength=batches * m).reshape(batches, m)
        crows = np.concatenate([np.concatenate([[0], np.cumsum(cnt)]) for cnt in counts])
        return SparseCsrTensor(_index_tensor(crows, self.place), _index_tensor(idx[-1], self.place), c._values,
                               self._shape)


class SparseCsrTensor(_Sparse):
    """CSR of a 2-D [M, N] or batched 3-D [B, M, N] tensor: row i of batch b holds the entries
    crows[b*(M+1) + i] .. crows[b*(M+1) + i + 1] (offsets within the batch), at columns cols[k] with
    values[k]."""

    def __init__(self, crows, cols, values, shape):
        self._crows = crows
        self._cols = cols
        self._values = values
        self._shape = [int(s) for s in shape]

    def is_sparse_coo(self):
        return False

    def is_sparse_csr(self):
        return True

    def crows(self):
        return self._crows

    def cols(self):
        return self._cols

    def _parts(self):
        return [("crows", self._crows), ("cols", self._cols), ("values", self._values)]

    def _with_values(self, values):
        return SparseCsrTensor(self._crows, self._cols, values, self._shape)

    def _host_indices(self):
        """The COO indices ([ndim, nnz], numpy) of the stored entries, in storage order."""
        crows = _host(self._crows).astype(np.int64)
        cols = _host(self._cols).astype(np.int64)
        m = self._shape[-2]
        batches = 1 if self.ndim == 2 else self._shape[0]
        crows = crows.reshape(batches, m + 1)
        rows, bat = [], []
        for b in range(batches):
            counts = np.diff(crows[b])
            rows.append(np.repeat(np.arange(m), counts))
            bat.append(np.full(int(counts.sum()), b))
        rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        if self.ndim == 2:
            return np.stack([rows, cols])
        return np.stack([np.concatenate(bat), rows, cols])

    def to_sparse_coo(self, sparse_dim=None):
        coo = SparseCooTensor(_index_tensor(self._host_indices(), self.place), self._values, self._shape, True)
        if sparse_dim is None or sparse_dim == self.ndim:
            return coo
        return coo.to_sparse_coo(sparse_dim)

    def to_sparse_csr(self):
        return self

    def to_dense(self):
        return self.to_sparse_coo().to_dense()

    def coalesce(self):
        return self


def _full_coo(x):
    """x as COO with every dim sparse (values 1-D): dense dims of the values become index rows."""
    if x.is_sparse_csr():
        return x.to_sparse_coo()
    if x.dense_dim == 0:
        return x
    idx = x._host_indices()
    dshape = x.shape[x.sparse_dim:]
    d = int(np.prod(dshape))
    inner = np.stack(np.unravel_index(np.arange(d), dshape))
    new_idx = np.concatenate([np.repeat(idx, d, axis=1), np.tile(inner, (1, idx.shape[1]))])
    return SparseCooTensor(_index_tensor(new_idx, x.place), x._values.reshape([-1]), x.shape, x._coalesced)


def _as_values(values, dtype, place, stop_gradient, op):
    """The values tensor of a new sparse tensor. A tensor that needs a gradient is used as it is (the
    gradient flows back to it); otherwise a copy becomes a new leaf with the requested stop_gradient."""
    if isinstance(values, Tensor):
        v = values
        if dtype is not None and v.dtype != _C.to_dtype(dtype):
            v = v.astype(dtype)
        if not v.stop_gradient and not stop_gradient:
            return v
        v = v.detach().clone() if v is values else v.detach()
    else:
        v = to_tensor(values, dtype=dtype, place=place)
    v.stop_gradient = bool(stop_gradient)
    return v


def _check_index(indices, op, name):
    arr = _host(indices) if isinstance(indices, Tensor) else np.asarray(indices)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError("{}: {} must be integers, got {}".format(op, name, arr.dtype))
    return arr.astype(np.int64)


def sparse_coo_tensor(indices, values, shape=None, dtype=None, place=None, stop_gradient=True):
    """A COO tensor from indices ([sparse_dim, nnz]) and values ([nnz, *dense_dims]). shape defaults to
    max(indices) + 1 along each sparse dim, followed by the dense dims of values."""
    op = "sparse_coo_tensor"
    idx = _check_index(indices, op, "indices")
    if idx.ndim != 2:
        raise ValueError("{}: indices must be 2-D [sparse_dim, nnz], got shape {}".format(op, list(idx.shape)))
    v = _as_values(values, dtype, place, stop_gradient, op)
    if v.ndim < 1 or v.shape[0] != idx.shape[1]:
        raise ValueError("{}: values must have nnz = {} rows (indices.shape[1]), got shape {}".format(
            op, idx.shape[1], v.shape))
    if (idx < 0).any():
        raise ValueError("{}: indices must be >= 0, got a minimum of {}".format(op, int(idx.min())))
    dense = list(v.shape[1:])
    if shape is None:
        shape = [int(m) + 1 for m in idx.max(axis=1)] + dense if idx.shape[1] else None
        if shape is None:
            raise ValueError("{}: shape is required when there are no entries".format(op))
    shape = [int(s) for s in shape]
    if any(s < 0 for s in shape):
        raise ValueError("{}: shape must not have negative dims, got {}".format(op, shape))
    if len(shape) != idx.shape[0] + len(dense):
        raise ValueError("{}: shape {} must have sparse_dim ({}) + dense dims of values ({}) = {} dims".format(
            op, shape, idx.shape[0], len(dense), idx.shape[0] + len(dense)))
    if shape[idx.shape[0]:] != dense:
        raise ValueError("{}: the dense dims of shape {} must equal values.shape[1:] = {}".format(op, shape, dense))
    if idx.shape[1] and (idx.max(axis=1) >= np.array(shape[:idx.shape[0]])).any():
        raise ValueError("{}: indices out of range for shape {}: maxima {}".format(op, shape,
                                                                               idx.max(axis=1).tolist()))
    return SparseCooTensor(_index_tensor(idx, v.place), v, shape)


def sparse_csr_tensor(crows, cols, values, shape, dtype=None, place=None, stop_gradient=True):
    """A CSR tensor of a 2-D [M, N] or 3-D [B, M, N] shape: crows has (M+1) offsets per batch."""
    op = "sparse_csr_tensor"
    shape = [int(s) for s in shape]
    if len(shape) not in (2, 3) or any(s < 0 for s in shape):
        raise ValueError("{}: shape must be 2-D or 3-D without negative dims, got {}".format(op, shape))
    cr = _check_index(crows, op, "crows").reshape(-1)
    co = _check_index(cols, op, "cols").reshape(-1)
    v = _as_values(values, dtype, place, stop_gradient, op)
    batches, m, n = (1, shape[0], shape[1]) if len(shape) == 2 else tuple(shape)
    if cr.size != batches * (m + 1):
        raise ValueError("{}: crows must have {} entries ((M+1) per batch) for shape {}, got {}".format(
            op, batches * (m + 1), shape, cr.size))
    per = cr.reshape(batches, m + 1)
    if (per[:, 0] != 0).any() or (np.diff(per, axis=1) < 0).any():
        raise ValueError("{}: crows must start each batch at 0 and never decrease, got {}".format(op, cr.tolist()))
    if int(per[:, -1].sum()) != co.size or v.ndim != 1 or v.shape[0] != co.size:
        raise ValueError("{}: cols ({}) and values ({}) must both have the nnz = {} entries crows gives".format(
            op, co.size, v.shape, int(per[:, -1].sum())))
    if co.size and (co.min() < 0 or co.max() >= n):
        raise ValueError("{}: cols must be in [0, {}), got [{}, {}]".format(op, n, int(co.min()), int(co.max())))
    return SparseCsrTensor(_index_tensor(cr, v.place), _index_tensor(co, v.place), v, shape)


# ---- the dense Tensor's methods that go to and from the sparse layouts ------------------------------------
def _dense_to_sparse_coo(self, sparse_dim):
    """The entries of the first sparse_dim dims whose slice (over the remaining dims) is not all zero."""
    sparse_dim = int(sparse_dim)
    if not 0 < sparse_dim <= self.ndim:
        raise ValueError("to_sparse_coo: sparse_dim must be in [1, {}], got {}".format(self.ndim, sparse_dim))
    arr = _host(self)
    mask = arr != 0
    if sparse_dim < self.ndim:
        mask = mask.reshape(list(arr.shape[:sparse_dim]) + [-1]).any(axis=-1)
    idx = np.stack(np.nonzero(mask)).astype(np.int64).reshape(sparse_dim, -1)
    it = _index_tensor(idx.T, self.place)
    values = _gather_nd(self, it)
    return SparseCooTensor(_index_tensor(idx, self.place), values, self.shape, True)


def _dense_to_sparse_csr(self):
    if self.ndim not in (2, 3):
        raise ValueError("to_sparse_csr: only 2-D and 3-D tensors have a CSR form, got shape {}".format(self.shape))
    return _dense_to_sparse_coo(self, self.ndim).to_sparse_csr()


def _false(self):
    return False


def _true(self):
    return True


def _self(self):
    return self


def _sparse_only(name):
    def method(self, *args, **kwargs):
        raise TypeError("Tensor.{}: the tensor is dense; {} applies to a sparse tensor (see "
                        "Tensor.to_sparse_coo / to_sparse_csr)".format(name, name))
    method.__name__ = name
    return method


def _install_tensor_methods():
    Tensor.is_sparse = _false
    Tensor.is_sparse_coo = _false
    Tensor.is_sparse_csr = _false
    Tensor.is_selected_rows = _false
    Tensor.to_sparse_coo = _dense_to_sparse_coo
    Tensor.to_sparse_csr = _dense_to_sparse_csr
    Tensor.is_dense = _true
    Tensor.to_dense = _self
    for name in ("indices", "values", "crows", "cols", "nnz", "coalesce"):
        setattr(Tensor, name, _sparse_only(name))
