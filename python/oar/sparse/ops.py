"""oar.sparse's functions (Paddle 2.6's paddle.sparse): every one is a few dense ops on the values of
its sparse arguments, so gradients reach the values and the dense operands (see tensor.py)."""
import numbers

import numpy as np

from .. import _C
from .._C import Tensor
from .. import tensor as _T
from ..tensor.manipulation import _index_select, _scatter_nd_add
from .tensor import SparseCooTensor, SparseCsrTensor, _Sparse, _full_coo, _index_tensor, _zeros

__all__ = ["abs", "add", "addmm", "asin", "asinh", "atan", "atanh", "cast", "coalesce", "deg2rad", "divide",
           "expm1", "is_same_shape", "isnan", "log1p", "masked_matmul", "matmul", "multiply", "mv", "neg", "pow",
           "rad2deg", "reshape", "sin", "sinh", "slice", "sqrt", "square", "subtract", "sum", "tan", "tanh", "transpose"]


def _check_sparse(x, op, name="x"):
    if not isinstance(x, _Sparse):
        raise TypeError("sparse.{}: {} must be a sparse COO or CSR tensor, got {}".format(op, name,
                                                                                          type(x).__name__))


def _check_dense(y, op, name):
    if not isinstance(y, Tensor):
        raise TypeError("sparse.{}: {} must be a dense Tensor, got {}".format(op, name, type(y).__name__))


def _like(coo, x):
    """coo in x's layout."""
    return coo.to_sparse_csr() if x.is_sparse_csr() else coo


# ---- unary: a zero-preserving function of each stored value ----------------------------------------------
def _unary(op, fn):
    def f(x, name=None):
        _check_sparse(x, op)
        x = x.coalesce()  # duplicated COO entries are a sum: add them before a nonlinear function
        return x._with_values(fn(x.values()))
    f.__name__ = op
    f.__doc__ = "{} of the stored values (the zeros stay zero).".format(op)
    return f


abs = _unary("abs", _T.abs)
asin = _unary("asin", _T.asin)
asinh = _unary("asinh", _T.asinh)
atan = _unary("atan", _T.atan)
atanh = _unary("atanh", _T.atanh)
deg2rad = _unary("deg2rad", _T.deg2rad)
expm1 = _unary("expm1", _T.expm1)
isnan = _unary("isnan", _T.isnan)
log1p = _unary("log1p", _T.log1p)
neg = _unary("neg", _T.neg)
rad2deg = _unary("rad2deg", _T.rad2deg)
sin = _unary("sin", _T.sin)
sinh = _unary("sinh", _T.sinh)
sqrt = _unary("sqrt", _T.sqrt)
square = _unary("square", _T.square)
tan = _unary("tan", _T.tan)
tanh = _unary("tanh", _T.tanh)


def pow(x, factor, name=None):
    """x ** factor on the stored values (factor a number)."""
    _check_sparse(x, "pow")
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real):
        raise TypeError("sparse.pow: factor must be a number, got {}".format(type(factor).__name__))
    x = x.coalesce()
    return x._with_values(_T.pow(x.values(), float(factor)))


def cast(x, index_dtype=None, value_dtype=None, name=None):
    """x with its indices (crows/cols) cast to index_dtype and values to value_dtype (None: unchanged)."""
    _check_sparse(x, "cast")
    if index_dtype is not None and _C.to_dtype(index_dtype) not in (_C.int32, _C.int64, _C.int16, _C.int8,
                                                                       _C.uint8):
        raise TypeError("sparse.cast: index_dtype must be an integer dtype, got {}".format(index_dtype))
    values = x.values() if value_dtype is None else x.values().astype(value_dtype)
    ic = (lambda t: t) if index_dtype is None else (lambda t: t.astype(index_dtype))
    if x.is_sparse_coo():
        return SparseCooTensor(ic(x.indices()), values, x.shape, x._coalesced)
    return SparseCsrTensor(ic(x.crows()), ic(x.cols()), values, x.shape)


def coalesce(x, name=None):
    """x with sorted, unique indices (duplicates summed)."""
    _check_sparse(x, "coalesce")
    return x.coalesce()


def is_same_shape(x, y):
    """Whether x and y (sparse or dense) have the same shape."""
    return list(x.shape) == list(y.shape)


# ---- binary: two sparse tensors of one layout and shape ---------------------------------------------------
def _pair(x, y, op):
    _check_sparse(x, op)
    _check_sparse(y, op, "y")
    if x.is_sparse_coo() != y.is_sparse_coo():
        raise TypeError("sparse.{}: x and y must have the same layout, got {} and {}".format(
            op, "COO" if x.is_sparse_coo() else "CSR", "COO" if y.is_sparse_coo() else "CSR"))
    if x.shape != y.shape:
        raise ValueError("sparse.{}: x and y must have the same shape, got {} and {}".format(op, x.shape, y.shape))
    if x.dtype != y.dtype:
        raise TypeError("sparse.{}: x and y must have the same dtype, got {} and {}".format(
            op, x.dtype.name, y.dtype.name))
    cx, cy = (_full_coo(x), _full_coo(y)) if x.is_sparse_csr() else (x, y)
    if cx.sparse_dim != cy.sparse_dim:
        cx, cy = _full_coo(cx), _full_coo(cy)
    return cx, cy


def _aligned(cx, cy):
    """The values of cx and cy on the union of their index sets (sorted): (indices, vx, vy)."""
    sshape = cx.shape[:cx.sparse_dim]
    lx = np.ravel_multi_index(tuple(cx._host_indices()), sshape)
    ly = np.ravel_multi_index(tuple(cy._host_indices()), sshape)
    u = np.union1d(lx, ly)
    place, dense = cx.place, cx.shape[cx.sparse_dim:]

    def on_union(c, lin):
        target = _zeros([len(u)] + dense, c.dtype, place)
        if len(lin) == 0:
            return target
        return _scatter_nd_add(target, _index_tensor(np.searchsorted(u, lin).reshape(-1, 1), place), c.values())

    idx = _index_tensor(np.stack(np.unravel_index(u, sshape)).reshape(len(sshape), -1), place)
    return idx, on_union(cx, lx), on_union(cy, ly)


def _elementwise(x, y, op, fn):
    cx, cy = _pair(x, y, op)
    idx, vx, vy = _aligned(cx, cy)
    return _like(SparseCooTensor(idx, fn(vx, vy), x.shape, True), x)


def add(x, y, name=None):
    """x + y for sparse x, y of one layout and shape; the result holds the union of their entries."""
    return _elementwise(x, y, "add", lambda a, b: a + b)


def subtract(x, y, name=None):
    """x - y (union of the entries)."""
    return _elementwise(x, y, "subtract", lambda a, b: a - b)


def _is_scalar(y):
    return isinstance(y, numbers.Real) and not isinstance(y, bool)


def multiply(x, y, name=None):
    """x * y elementwise (y sparse of x's layout and shape, or a number)."""
    if _is_scalar(y):
        _check_sparse(x, "multiply")
        return x._with_values(x.values() * float(y))
    return _elementwise(x, y, "multiply", lambda a, b: a * b)


def divide(x, y, name=None):
    """x / y elementwise. By a number: the stored values divided. By a sparse y: as Paddle, every
    position is computed (0 / 0 gives nan), so the result stores all of them."""
    if _is_scalar(y):
        _check_sparse(x, "divide")
        return x._with_values(x.values() / float(y))
    _pair(x, y, "divide")
    full = x.to_dense() / y.to_dense()
    idx = np.indices(x.shape).reshape(len(x.shape), -1)
    return _like(SparseCooTensor(_index_tensor(idx, x.place), full.reshape([-1]), x.shape, True), x)


# ---- products ----------------------------------------------------------------------------------------------
_sparse_coo_matmul = _C.Op("sparse_coo_matmul", "nrows")
_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _spmm(x, y, op):
    """Dense x @ y for sparse x [M, K] or [B, M, K] and dense y: each stored x[i, k] adds x[i, k] * y[k, :]
    to row i. A batch is one block-diagonal matrix: entry (b, i, k) is row b*M + i, column b*K + k."""
    _check_dense(y, op, "y")
    if x.ndim not in (2, 3) or y.ndim != x.ndim:
        raise ValueError("sparse.{}: x and y must both be 2-D or both 3-D, got shapes {} and {}".format(
            op, x.shape, y.shape))
    if x.shape[-1] != y.shape[-2] or (x.ndim == 3 and x.shape[0] != y.shape[0]):
        raise ValueError("sparse.{}: shapes {} and {} do not multiply".format(op, x.shape, y.shape))
    if x.dtype != y.dtype:
        raise TypeError("sparse.{}: x and y must have the same dtype, got {} and {}".format(
            op, x.dtype.name, y.dtype.name))
    c = _full_coo(x)
    idx = c._host_indices()
    m, n = x.shape[-2], y.shape[-1]
    if x.ndim == 2:
        rows, cols, y2, nrows = idx[0], idx[1], y, m
    else:
        b, k = x.shape[0], x.shape[2]
        rows, cols, y2, nrows = idx[0] * m + idx[1], idx[0] * k + idx[2], y.reshape([b * k, n]), b * m
    if y.dtype in _FLOATS:  # the core op (one kernel per device; gradients to values and y)
        out = _sparse_coo_matmul(c.values(), _index_tensor(rows, y.place), _index_tensor(cols, y.place), y2, nrows)
    else:  # integers: gather the rows of y, scale, scatter-add
        out = _zeros([nrows, n], y.dtype, y.place)
        if len(rows):
            picked = _index_select(y2, _index_tensor(cols, y.place), 0)
            out = _scatter_nd_add(out, _index_tensor(rows.reshape(-1, 1), y.place),
                                  picked * c.values().reshape([-1, 1]))
    return out if x.ndim == 2 else out.reshape([x.shape[0], m, n])


def matmul(x, y, name=None):
    """x @ y with x sparse (COO or CSR, 2-D or batched 3-D). y dense gives a dense result; y sparse
    gives a sparse result in x's layout."""
    _check_sparse(x, "matmul")
    if isinstance(y, _Sparse):
        out = _spmm(x, y.to_dense(), "matmul")
        return out.to_sparse_csr() if x.is_sparse_csr() else out.to_sparse_coo(out.ndim)
    return _spmm(x, y, "matmul")


def mv(x, vec, name=None):
    """x @ vec for a 2-D sparse x [M, N] and a dense vector [N]: a dense [M]."""
    _check_sparse(x, "mv")
    _check_dense(vec, "mv", "vec")
    if x.ndim != 2 or vec.ndim != 1:
        raise ValueError("sparse.mv: x must be 2-D and vec 1-D, got shapes {} and {}".format(x.shape, vec.shape))
    return _spmm(x, vec.reshape([-1, 1]), "mv").reshape([x.shape[0]])


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):
    """beta * input + alpha * (x @ y), x sparse. A dense input gives a dense result; a sparse input
    (with y sparse too) a sparse one in input's layout."""
    _check_sparse(x, "addmm")
    prod = _spmm(x, y.to_dense() if isinstance(y, _Sparse) else y, "addmm")
    if isinstance(input, _Sparse):
        out = input.to_dense() * float(beta) + prod * float(alpha)
        return out.to_sparse_csr() if input.is_sparse_csr() else out.to_sparse_coo(out.ndim)
    _check_dense(input, "addmm", "input")
    if list(input.shape) != list(prod.shape):
        raise ValueError("sparse.addmm: input shape {} must equal the product's shape {}".format(
            input.shape, prod.shape))
    return input * float(beta) + prod * float(alpha)


def masked_matmul(x, y, mask, name=None):
    """(x @ y) only at mask's entries, as a sparse tensor with mask's layout and pattern (x, y dense)."""
    _check_dense(x, "masked_matmul", "x")
    _check_dense(y, "masked_matmul", "y")
    _check_sparse(mask, "masked_matmul", "mask")
    if x.ndim not in (2, 3) or y.ndim != x.ndim or mask.ndim != x.ndim:
        raise ValueError("sparse.masked_matmul: x, y and mask must all be 2-D or all 3-D, got {}, {}, {}".format(
            x.shape, y.shape, mask.shape))
    if x.shape[-1] != y.shape[-2] or mask.shape != list(x.shape[:-1]) + [y.shape[-1]]:
        raise ValueError("sparse.masked_matmul: shapes {} @ {} do not give mask's shape {}".format(
            x.shape, y.shape, mask.shape))
    c = _full_coo(mask)
    idx = c._host_indices()
    k = x.shape[-1]
    yt = y.transpose([1, 0]) if y.ndim == 2 else y.transpose([0, 2, 1])
    if x.ndim == 2:
        rows, cols, x2, y2 = idx[0], idx[1], x, yt
    else:
        b, m, n = mask.shape
        rows, cols = idx[0] * m + idx[1], idx[0] * n + idx[2]
        x2, y2 = x.reshape([b * m, k]), yt.reshape([b * n, k])
    xr = _index_select(x2, _index_tensor(rows, x.place), 0)
    yc = _index_select(y2, _index_tensor(cols, x.place), 0)
    values = (xr * yc).sum(axis=-1)
    if mask.is_sparse_csr():
        return SparseCsrTensor(mask.crows(), mask.cols(), values, mask.shape)
    return SparseCooTensor(c.indices(), values, mask.shape, c._coalesced)


# ---- reductions and shape ---------------------------------------------------------------------------------
def sum(x, axis=None, dtype=None, keepdim=False, name=None):
    """The sum over axis (None: all), as a sparse tensor of x's layout. CSR sums over all or the last
    axis only, keeping the dims (Paddle's rule)."""
    _check_sparse(x, "sum")
    csr = x.is_sparse_csr()
    if csr and axis not in (None, -1, x.ndim - 1):
        raise ValueError("sparse.sum: a CSR tensor sums over all axes or the last one, got axis={}".format(axis))
    c = _full_coo(x) if csr else x
    v = c.values() if dtype is None else c.values().astype(dtype)
    place = x.place
    if axis is None:
        shape = [1] * x.ndim if keepdim or csr else [1]
        idx = _index_tensor(np.zeros((len(shape), 1)), place)
        return _like(SparseCooTensor(idx, v.sum().reshape([1]), shape, True), x)
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -x.ndim <= axis < x.ndim:
        raise ValueError("sparse.sum: axis must be an int in [-{0}, {0}) or None, got {1}".format(x.ndim, axis))
    a = int(axis) % x.ndim
    keep = keepdim or csr
    if x.ndim == 1 and not keep:
        return sum(x, None, dtype)
    if a < c.sparse_dim and c.sparse_dim == 1 and not keep:  # no sparse dim would be left: all dims sparse
        c = _full_coo(c)
        v = c.values() if dtype is None else c.values().astype(dtype)
    if a >= c.sparse_dim:  # a dense dim: a sum inside the values
        va = a - c.sparse_dim + 1
        nv = v.sum(axis=va, keepdim=keep)
        shape = list(x.shape)
        if keep:
            shape[a] = 1
        else:
            del shape[a]
        return SparseCooTensor(c.indices(), nv, shape, c._coalesced)
    idx = c._host_indices().copy()
    shape = list(x.shape)
    if keep:
        idx[a] = 0
        shape[a] = 1
    else:
        idx = np.delete(idx, a, axis=0)
        del shape[a]
    out = SparseCooTensor(_index_tensor(idx, place), v, shape).coalesce()
    return _like(out, x)


def transpose(x, perm, name=None):
    """x with its dims permuted (perm a permutation of range(ndim)); CSR results are re-sorted by row."""
    _check_sparse(x, "transpose")
    perm = [int(p) for p in perm]
    if sorted(p % x.ndim for p in perm) != list(range(x.ndim)) or len(perm) != x.ndim:
        raise ValueError("sparse.transpose: perm must be a permutation of range({}), got {}".format(x.ndim, perm))
    perm = [p % x.ndim for p in perm]
    c = _full_coo(x)
    idx = c._host_indices()[perm]
    out = SparseCooTensor(_index_tensor(idx, x.place), c.values(), [x.shape[p] for p in perm])
    return _like(out, x)


def reshape(x, shape, name=None):
    """x with a new shape of the same size (one dim may be -1); entries keep their row-major position."""
    _check_sparse(x, "reshape")
    shape = [int(s) for s in shape]
    size = int(np.prod(x.shape))
    if shape.count(-1) > 1:
        raise ValueError("sparse.reshape: at most one dim may be -1, got {}".format(shape))
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1]))
        if rest == 0 or size % rest:
            raise ValueError("sparse.reshape: cannot reshape {} into {}".format(x.shape, shape))
        shape[shape.index(-1)] = size // rest
    if int(np.prod(shape)) != size or any(s < 0 for s in shape):
        raise ValueError("sparse.reshape: cannot reshape {} into {}".format(x.shape, shape))
    c = _full_coo(x)
    lin = np.ravel_multi_index(tuple(c._host_indices()), x.shape)
    idx = np.stack(np.unravel_index(lin, shape)).reshape(len(shape), -1)
    out = SparseCooTensor(_index_tensor(idx, x.place), c.values(), shape, c._coalesced)
    return _like(out, x)


def slice(x, axes, starts, ends, name=None):
    """x[starts:ends] along each of axes (negative values count from the end, and are clamped as in a
    dense slice); the result keeps x's layout."""
    _check_sparse(x, "slice")
    axes, starts, ends = list(axes), list(starts), list(ends)
    if not len(axes) == len(starts) == len(ends):
        raise ValueError("sparse.slice: axes, starts and ends must have one entry each, got {}, {}, {}".format(
            axes, starts, ends))
    nd = x.ndim
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral) or not -nd <= a < nd:
            raise ValueError("sparse.slice: axes must be ints in [-{0}, {0}), got {1}".format(nd, axes))
    axes = [int(a) % nd for a in axes]
    c = x if x.is_sparse_coo() and all(a < x.sparse_dim for a in axes) else _full_coo(x)
    idx = c._host_indices().copy()
    keep = np.ones(idx.shape[1], bool)
    shape = list(x.shape)
    for a, st, en in zip(axes, starts, ends):
        n = shape[a]
        st, en = int(st), int(en)
        st = min(max(st + n if st < 0 else st, 0), n)
        en = min(max(en + n if en < 0 else en, st), n)
        keep &= (idx[a] >= st) & (idx[a] < en)
        idx[a] -= st
        shape[a] = en - st
    pos = np.nonzero(keep)[0]
    values = _index_select(c.values(), _index_tensor(pos, x.place), 0)
    out = SparseCooTensor(_index_tensor(idx[:, pos], x.place), values, shape, c._coalesced)
    return _like(out, x)
