"""SelectedRows: a row-sparse gradient (Paddle's SelectedRows), what Embedding(sparse=True) gives its weight.

`rows` (int64 [n]) names rows of a [height, width] table and `values` ([n, width]) holds them; a row
that appears twice means the sum. It is kept on the parameter (`param.grad` returns it) instead of a
dense gradient; the optimizers update from it (decision 95, docs/sparse.md).
"""
import weakref

import numpy as np

from .. import _C
from .._C import Tensor
from ..tensor.creation import to_tensor
from ..tensor.manipulation import _scatter_nd_add

__all__ = ["SelectedRows"]

_fill = _C.Op("fill", "shape", "value", "dtype")

# The tensors that hold a sparse gradient now (id -> tensor, weakly: a dropped model leaves no entry):
# optimizers look here first, so a step without any sparse gradient costs one emptiness test.
_holders = weakref.WeakValueDictionary()
# > 0 while oar.grad runs: it accumulates nothing, so a row-sparse lookup returns its weight's gradient
# as an ordinary dense one then.
_functional_grad = [0]


class SelectedRows:
    """A row-sparse [height, width] tensor: rows (int64 Tensor [n]) and values (Tensor [n, width])."""

    def __init__(self, rows, values, height, merged=False):
        self._rows = rows
        self._values = values
        self._height = int(height)
        self._merged = merged

    # Paddle's Tensor methods for a SelectedRows gradient
    def is_selected_rows(self):
        return True

    def is_sparse(self):
        return False

    def is_sparse_coo(self):
        return False

    def is_sparse_csr(self):
        return False

    def rows(self):
        """The row numbers, as a list (Paddle's SelectedRows.rows())."""
        return [int(r) for r in self._rows.numpy()]

    @property
    def height(self):
        return self._height

    @property
    def shape(self):
        """The shape of the values ([n, width]), as Paddle reports it."""
        return list(self._values.shape)

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def place(self):
        return self._values.place

    @property
    def stop_gradient(self):
        return True

    def values(self):
        return self._values

    def numpy(self):
        """The values ([n, width]), as Paddle gives them (to_dense() for the whole table)."""
        return self._values.numpy()

    def to_dense(self):
        """The dense [height, width] gradient."""
        out = _fill([self._height] + list(self._values.shape[1:]), 0.0, self.dtype, place=self.place)
        if self._values.shape[0] == 0:
            return out
        return _scatter_nd_add(out, self._rows.reshape([-1, 1]), self._values)

    def merged(self):
        """The same gradient with sorted, unique rows (duplicates summed)."""
        if self._merged:
            return self
        rows = np.asarray(self._rows.numpy()).astype(np.int64)
        uniq, inverse = np.unique(rows, return_inverse=True)
        place = self.place
        target = _fill([len(uniq)] + list(self._values.shape[1:]), 0.0, self.dtype, place=place)
        vals = _scatter_nd_add(target, to_tensor(inverse.reshape(-1, 1).astype(np.int64), place=place),
                               self._values) if len(rows) else target
        return SelectedRows(to_tensor(uniq.astype(np.int64), place=place), vals, self._height, True)

    def _with_values(self, values):
        return SelectedRows(self._rows, values, self._height, self._merged)

    def astype(self, dtype):
        return self._with_values(self._values.astype(dtype))

    # What gradient clipping applies to a gradient (on the merged rows, where it equals the dense result)
    def clip(self, min=None, max=None):
        m = self.merged()
        return m._with_values(m._values.clip(min, max))

    def __mul__(self, other):
        m = self.merged()
        return m._with_values(m._values * other)

    __rmul__ = __mul__

    def sum(self):
        return self.merged()._values.sum()

    def scale_(self, scale):
        """Multiplies the gradient by scale, in place."""
        self._values.scale_(scale)
        return self

    def __repr__(self):
        return "SelectedRows(height={}, rows={}, values=\n{})".format(self._height, self.rows(), self._values)


def add_sparse_grad(t, rows, values):
    """Accumulates the row gradient (rows, values) into tensor t's sparse gradient (as backward
    accumulates dense ones: a second backward adds to the first)."""
    old = t.__dict__.get("_sparse_grad")
    new = SelectedRows(rows, values, t.shape[0])
    if old is not None:
        from ..tensor.manipulation import concat
        new = SelectedRows(concat([old._rows, rows]), concat([old._values, values]), t.shape[0]).merged()
    t.__dict__["_sparse_grad"] = new
    _holders[id(t)] = t


def sparse_grad(t):
    """t's SelectedRows gradient, or None."""
    return t.__dict__.get("_sparse_grad") if _holders else None


def grad_tensors(p):
    """The tensors that hold p's gradient, for in-place edits (unscaling, in-place clipping): [] without
    a gradient, [dense], or the merged rows' values (merged first, so that an elementwise edit of them is
    the edit of the dense gradient)."""
    dense = Tensor.grad.fget(p)
    sr = sparse_grad(p)
    if sr is None:
        return [] if dense is None else [dense]
    if dense is not None:
        raise NotImplementedError("{}: the parameter has both a dense and a row-sparse (Embedding(sparse=True)) "
                                  "gradient; editing them in place together is not supported".format(
                                      getattr(p, "name", "a tensor")))
    m = sr.merged()
    p.__dict__["_sparse_grad"] = m
    return [m.values()]


def clear_sparse_grad(t):
    if _holders and t.__dict__.pop("_sparse_grad", None) is not None:
        _holders.pop(id(t), None)
