"""Linear algebra with Paddle 2.x names: the matmul family and einsum (composites over matmul, so they
are differentiable), norms, and wrappers of the LAPACK-backed ops (inverse, det, slogdet, solve,
triangular_solve, cholesky, qr, svd, eigh). Names Paddle has at the top level are in __all__; the
linalg-only ones (inv, det, svd, ...) are exported by oar.linalg (python/oar/linalg.py)."""
import builtins
import math as _pymath
import numbers

import numpy as np

from .. import _C
from .._C import Tensor
from ..framework.errors import invalid_argument
from . import manipulation as _mp
from . import math as _m

__all__ = [
    "einsum", "bmm", "mm", "mv", "dot", "outer", "inner", "addmm", "t", "trace", "kron", "cross", "norm", "dist",
    "cholesky", "inverse",
]

_matmul = _C.Op("matmul", "transpose_x", "transpose_y")
_inverse = _C.Op("inverse")
_det = _C.Op("det")
_slogdet = _C.Op("slogdet")
_solve = _C.Op("solve")
_triangular_solve = _C.Op("triangular_solve", "upper", "transpose", "unitriangular")
_cholesky = _C.Op("cholesky", "upper")
_qr = _C.Op("qr", "complete")
_svd = _C.Op("svd", "full_matrices")
_eigh = _C.Op("eigh", "lower")
_arange = _C.Op("arange", "start", "end", "step", "dtype")
_fill = _C.Op("fill", "shape", "value", "dtype")
_index_select = _C.Op("index_select", "axis")
_concat = _C.Op("concat", "axis")
_cast = _C.Op("cast", "dtype")
_where = _C.Op("where")


# ---- helpers ----------------------------------------------------------------------------------------
def _shape(x):
    return list(x.shape)


def _perm_to_end(ndim, axes):
    """A permutation moving `axes` (in order) to the end."""
    rest = [i for i in range(ndim) if i not in axes]
    return rest + list(axes)


def _norm_axis(op, axis, ndim):
    a = builtins.int(axis)
    if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
        raise IndexError("{}: axis {} is out of range for a rank-{} tensor".format(op, axis, ndim))
    return a + ndim if a < 0 else a


def _mT(x):
    n = x.ndim
    return _mp.transpose(x, list(range(n - 2)) + [n - 1, n - 2])


def _to_index(values, like):
    from .creation import to_tensor
    return to_tensor(np.asarray(values, dtype=np.int64), place=like.place)


def _eye(n, like):
    """An n x n identity in like's dtype and place."""
    i = _arange(0.0, builtins.float(n), 1.0, "int64", place=like.place)
    return _cast(_C.Op("equal")(_mp.unsqueeze(i, 1), i), like.dtype)


def _scalar(v, like):
    return _fill([], builtins.float(v), like.dtype, place=like.place)


def _diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal of the (axis1, axis2) planes as the last dim (a differentiable gather)."""
    n = x.ndim
    a1, a2 = _norm_axis("diagonal", axis1, n), _norm_axis("diagonal", axis2, n)
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 must differ, got {} and {}".format(axis1, axis2))
    x = _mp.transpose(x, _perm_to_end(n, [a1, a2]))
    shp = _shape(x)
    rows, cols = shp[-2], shp[-1]
    if offset >= 0:
        length = builtins.max(0, builtins.min(rows, cols - offset))
        idx = [i * cols + i + offset for i in range(length)]
    else:
        length = builtins.max(0, builtins.min(rows + offset, cols))
        idx = [(i - offset) * cols + i for i in range(length)]
    flat = _mp.reshape(x, shp[:-2] + [rows * cols])
    return _index_select(flat, _to_index(idx, x), flat.ndim - 1)


# ---- matmul family --------------------------------------------------------------------------------
def mm(input, mat2, name=None):
    """Matrix product (numpy matmul semantics, as Paddle's mm)."""
    return _matmul(input, mat2, False, False)


def mv(x, vec, name=None):
    if x.ndim != 2 or vec.ndim != 1:
        raise invalid_argument("mv: x must be 2-D and vec 1-D, got shapes {} and {}".format(x.shape, vec.shape))
    return _matmul(x, vec, False, False)


def bmm(x, y, name=None):
    """Batched matrix product of [B, M, K] and [B, K, N]."""
    if x.ndim != 3 or y.ndim != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes {} and {}".format(x.shape, y.shape))
    if x.shape[0] != y.shape[0]:
        raise ValueError("bmm: batch sizes differ: x.shape[0] ({}) != y.shape[0] ({})".format(x.shape[0], y.shape[0]))
    if x.shape[2] != y.shape[1]:
        raise ValueError("bmm: x.shape[2] ({}) != y.shape[1] ({})".format(x.shape[2], y.shape[1]))
    return _matmul(x, y, False, False)


def dot(x, y, name=None):
    """Inner product of 1-D tensors, or row-wise of 2-D tensors ([N, D] -> [N])."""
    if x.ndim not in (1, 2) or x.shape != y.shape:
        raise ValueError("dot: x and y must be 1-D or 2-D of the same shape, got {} and {}".format(x.shape, y.shape))
    return _m.sum(_m.multiply(x, y), axis=-1)


def outer(x, y, name=None):
    x = _mp.reshape(x, [-1, 1])
    y = _mp.reshape(y, [1, -1])
    return _m.multiply(x, y)


def inner(x, y, name=None):
    """Sum over the last dims: shape x.shape[:-1] + y.shape[:-1]."""
    if x.ndim == 0 or y.ndim == 0:
        return _m.multiply(x, y)
    xs, ys = _shape(x), _shape(y)
    if xs[-1] != ys[-1]:
        raise ValueError("inner: x.shape[-1] ({}) != y.shape[-1] ({})".format(xs[-1], ys[-1]))
    out = _matmul(_mp.reshape(x, [-1, xs[-1]]), _mp.reshape(y, [-1, ys[-1]]), False, True)
    return _mp.reshape(out, xs[:-1] + ys[:-1])


def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):
    """beta * input + alpha * (x @ y)."""
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError("addmm: x and y must be 2-D, got shapes {} and {}".format(x.shape, y.shape))
    prod = _matmul(x, y, False, False)
    return _m.add(_m.multiply(input, _scalar(beta, prod)), _m.multiply(prod, _scalar(alpha, prod)))


def t(input, name=None):
    """Transpose of a tensor with at most 2 dims (0-D and 1-D are returned as they are)."""
    if input.ndim > 2:
        raise ValueError("t: input must have at most 2 dims, got shape {}".format(input.shape))
    return _mp.transpose(input, [1, 0]) if input.ndim == 2 else input


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    if x.ndim < 2:
        raise ValueError("trace: x must have at least 2 dims, got shape {}".format(x.shape))
    # Paddle's trace takes the two axes in increasing order (the offset then counts from the lower one),
    # unlike its own diagonal and numpy's trace.
    a1, a2 = (a % x.ndim if isinstance(a, int) and -x.ndim <= a < x.ndim else a for a in (axis1, axis2))
    if isinstance(a1, int) and isinstance(a2, int) and a1 > a2:
        axis1, axis2 = a2, a1
    return _m.sum(_diagonal(x, offset, axis1, axis2), axis=-1)


def kron(x, y, name=None):
    """Kronecker product: x's dims interleaved with y's as (d0, 1, d1, 1, ...) * (1, e0, 1, e1, ...), then
    each pair merged. Built from unsqueeze and flatten, never a reshape to computed sizes, so that it also
    records into a program where a dim is unknown (-1)."""
    n = builtins.max(x.ndim, y.ndim)
    if x.ndim < n:
        x = _mp.unsqueeze(x, list(range(n - x.ndim)))
    if y.ndim < n:
        y = _mp.unsqueeze(y, list(range(n - y.ndim)))
    if n == 0:
        return _m.multiply(x, y)
    out = _m.multiply(_mp.unsqueeze(x, [2 * i + 1 for i in range(n)]), _mp.unsqueeze(y, [2 * i for i in range(n)]))
    for i in reversed(range(n)):
        out = _mp.flatten(out, 2 * i, 2 * i + 1)
    return out


def cross(x, y, axis=9, name=None):
    """Cross product along `axis` (default: the first axis of size 3)."""
    if x.shape != y.shape:
        raise ValueError("cross: x and y must have the same shape, got {} and {}".format(x.shape, y.shape))
    if axis == 9 or axis is None:
        cands = [i for i, d in enumerate(x.shape) if d == 3]
        if not cands:
            raise ValueError("cross: no axis of size 3 in shape {}".format(x.shape))
        axis = cands[0]
    axis = _norm_axis("cross", axis, x.ndim)
    if x.shape[axis] != 3:
        raise ValueError("cross: x.shape[{}] must be 3, got {}".format(axis, x.shape[axis]))

    def comp(v, i):
        return _index_select(v, _to_index([i], v), axis)

    x0, x1, x2 = comp(x, 0), comp(x, 1), comp(x, 2)
    y0, y1, y2 = comp(y, 0), comp(y, 1), comp(y, 2)
    sub, mul = _m.subtract, _m.multiply
    return _concat([sub(mul(x1, y2), mul(x2, y1)), sub(mul(x2, y0), mul(x0, y2)), sub(mul(x0, y1), mul(x1, y0))],
                   axis)


def multi_dot(x, name=None):
    """Chained matrix product; the first operand may be 1-D (a row), the last 1-D (a column)."""
    if len(x) < 2:
        raise ValueError("multi_dot: needs at least 2 tensors, got {}".format(len(x)))
    for i, a in enumerate(x):
        if a.ndim not in (1, 2) or (a.ndim == 1 and 0 < i < len(x) - 1):
            raise ValueError("multi_dot: tensor {} has shape {}; only the first and last may be 1-D, "
                             "the others must be 2-D".format(i, a.shape))
    out = x[0]
    for a in x[1:]:
        out = _matmul(out, a, False, False)
    return out


# ---- einsum -----------------------------------------------------------------------------------------
def _einsum_parse(equation, operands):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum: equation '{}' has {} operands, got {} tensors".format(equation, len(terms),
                                                                                   len(operands)))
    ell_len = 0
    parsed = []
    for term, op in zip(terms, operands):
        if "..." in term:
            head, _, tail = term.partition("...")
            if "..." in tail:
                raise ValueError("einsum: more than one '...' in term '{}'".format(term))
            n_ell = op.ndim - len(head) - len(tail)
            if n_ell < 0:
                raise ValueError("einsum: term '{}' has more labels than operand dims {}".format(term, op.shape))
            ell_len = builtins.max(ell_len, n_ell)
            parsed.append((list(head), n_ell, list(tail)))
        else:
            if len(term) != op.ndim:
                raise ValueError("einsum: term '{}' has {} labels but the operand has shape {}".format(
                    term, len(term), op.shape))
            parsed.append((list(term), None, []))
    for term in terms + ([rhs] if rhs is not None else []):
        for ch in term.replace("...", ""):
            if not ch.isalpha():
                raise ValueError("einsum: invalid label '{}' in equation '{}'".format(ch, equation))
    # Ellipsis dims are right-aligned across operands and get private labels.
    ell = [chr(0x100 + i) for i in range(ell_len)]
    labels = []
    for head, n_ell, tail in parsed:
        labels.append(head + (ell[ell_len - n_ell:] if n_ell is not None else []) + tail)
    if rhs is None:
        counts = {}
        for ls in labels:
            for ch in ls:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell)
    else:
        if "..." in rhs:
            head, _, tail = rhs.partition("...")
            out = list(head) + ell + list(tail)
        else:
            out = list(rhs)
        seen_all = set(ch for ls in labels for ch in ls)
        for ch in out:
            if ch not in seen_all:
                raise ValueError("einsum: output label '{}' does not appear in the inputs".format(ch))
        if len(set(out)) != len(out):
            raise ValueError("einsum: output '{}' repeats a label".format(rhs))
    return labels, out


def _einsum_sum(x, labels, drop):
    axes = [i for i, ch in enumerate(labels) if ch in drop]
    if not axes:
        return x, labels
    return _m.sum(x, axis=axes), [ch for ch in labels if ch not in drop]


def einsum(equation, *operands):
    """Einstein summation: explicit ('ij,jk->ik') or implicit output, '...' broadcasting, repeated labels
    in one operand (diagonals). Built from transpose/reshape/sum/matmul, so it is differentiable."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    if not isinstance(equation, str):
        raise TypeError("einsum: equation must be a str, got {}".format(type(equation).__name__))
    labels, out = _einsum_parse(equation, operands)
    # Sizes per label (1 broadcasts).
    size = {}
    for op, ls in zip(operands, labels):
        for ch, d in zip(ls, op.shape):
            if ch in size and size[ch] != d and 1 not in (size[ch], d):
                raise ValueError("einsum: label '{}' has sizes {} and {}".format(
                    ch if ord(ch) < 0x100 else "...", size[ch], d))
            size[ch] = builtins.max(size.get(ch, d), d) if d != 1 else size.get(ch, d)
    ops = []
    for op, ls in zip(operands, labels):
        ls = list(ls)
        # Repeated labels: take the diagonal (it lands last).
        while len(set(ls)) != len(ls):
            ch = next(c for c in ls if ls.count(c) > 1)
            i = ls.index(ch)
            j = ls.index(ch, i + 1)
            op = _diagonal(op, 0, i, j)
            ls = [c for k, c in enumerate(ls) if k not in (i, j)] + [ch]
        # Size-1 dims of a broadcast label are expanded so every operand agrees.
        target = [size[ch] for ch in ls]
        if target != _shape(op):
            op = _mp.expand(op, target)
        ops.append((op, ls))

    def needed(after):
        s = set(out)
        for _, ls in ops[after:]:
            s.update(ls)
        return s

    # Sum out labels used by one operand only, then contract left to right.
    x, lx = ops[0]
    x, lx = _einsum_sum(x, lx, set(lx) - needed(1))
    for k in range(1, len(ops)):
        y, ly = ops[k]
        keep = needed(k + 1)
        y, ly = _einsum_sum(y, ly, set(ly) - keep - set(lx))
        x, lx = _einsum_sum(x, lx, set(lx) - keep - set(ly))
        batch = [ch for ch in lx if ch in ly and ch in keep]
        contr = [ch for ch in lx if ch in ly and ch not in keep]
        xo = [ch for ch in lx if ch not in ly]
        yo = [ch for ch in ly if ch not in lx]
        xt = _mp.transpose(x, [lx.index(ch) for ch in batch + xo + contr])
        yt = _mp.transpose(y, [ly.index(ch) for ch in batch + contr + yo])
        bs = [size[ch] for ch in batch]
        m = int(np.prod([size[ch] for ch in xo], dtype=np.int64))
        c = int(np.prod([size[ch] for ch in contr], dtype=np.int64))
        n = int(np.prod([size[ch] for ch in yo], dtype=np.int64))
        z = _matmul(_mp.reshape(xt, bs + [m, c]), _mp.reshape(yt, bs + [c, n]), False, False)
        x = _mp.reshape(z, bs + [size[ch] for ch in xo + yo])
        lx = batch + xo + yo
    x, lx = _einsum_sum(x, lx, set(lx) - set(out))
    perm = [lx.index(ch) for ch in out]
    if perm != list(range(len(perm))):
        x = _mp.transpose(x, perm)
    return x


# ---- decompositions and solvers (LAPACK kernels) ----------------------------------------------------
def inverse(x, name=None):
    """Inverse of each square matrix of x [..., N, N]; a singular matrix raises ValueError."""
    return _inverse(x)


inv = inverse


def det(x, name=None):
    return _det(x)


def slogdet(x, name=None):
    """Paddle's layout: one tensor [2, ...] holding the sign and log|det|."""
    sign, logabs = _slogdet(x)
    return _concat([_mp.unsqueeze(sign, 0), _mp.unsqueeze(logabs, 0)], 0)


def _broadcast_batch(op, x, y):
    xb, yb = _shape(x)[:-2], _shape(y)[:-2]
    n = builtins.max(len(xb), len(yb))
    xb, yb = [1] * (n - len(xb)) + xb, [1] * (n - len(yb)) + yb
    b = []
    for i, (p, q) in enumerate(zip(xb, yb)):
        if p != q and 1 not in (p, q):
            raise ValueError("{}: batch dims of x {} and y {} do not broadcast".format(op, x.shape, y.shape))
        b.append(q if p == 1 else p)
    if xb != b or x.ndim - 2 != n:
        x = _mp.expand(x, b + _shape(x)[-2:])
    if yb != b or y.ndim - 2 != n:
        y = _mp.expand(y, b + _shape(y)[-2:])
    return x, y


def solve(x, y, name=None):
    """X with x @ X = y; x [..., N, N], y [..., N, K] or [N] (batch dims broadcast)."""
    vec = y.ndim == 1
    if vec:
        y = _mp.unsqueeze(y, -1)
    if x.ndim >= 2 and y.ndim >= 2:
        x, y = _broadcast_batch("solve", x, y)
    out = _solve(x, y)
    return _mp.squeeze(out, -1) if vec else out


def triangular_solve(x, y, upper=True, transpose=False, unitriangular=False, name=None):
    """X with op(x) @ X = y for triangular x (op = transpose when `transpose`)."""
    if x.ndim >= 2 and y.ndim >= 2:
        x, y = _broadcast_batch("triangular_solve", x, y)
    return _triangular_solve(x, y, builtins.int(bool(upper)), builtins.int(bool(transpose)),
                             builtins.int(bool(unitriangular)))


def cholesky(x, upper=False, name=None):
    """Cholesky factor: lower L with x = L L^T, or upper U with x = U^T U."""
    return _cholesky(x, builtins.int(bool(upper)))


def cholesky_solve(x, y, upper=False, name=None):
    """Solves A X = x given A's Cholesky factor y (lower unless `upper`)."""
    if upper:  # A = U^T U
        return triangular_solve(y, triangular_solve(y, x, upper=True, transpose=True), upper=True)
    return triangular_solve(y, triangular_solve(y, x, upper=False), upper=False, transpose=True)


def qr(x, mode="reduced", name=None):
    """(Q, R); mode 'reduced', 'complete', or 'r' (R only)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError("qr: mode must be 'reduced', 'complete' or 'r', got {!r}".format(mode))
    q, r = _qr(x, 1 if mode == "complete" else 0)
    return r if mode == "r" else (q, r)


def svd(x, full_matrices=False, name=None):
    """(U, S, VH) with x = U diag(S) VH, S descending."""
    return _svd(x, builtins.int(bool(full_matrices)))


def _uplo(op, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("{}: UPLO must be 'L' or 'U', got {!r}".format(op, UPLO))
    return 1 if UPLO == "L" else 0


def eigh(x, UPLO="L", name=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices, read from one triangle."""
    return _eigh(x, _uplo("eigh", UPLO))


def eigvalsh(x, UPLO="L", name=None):
    return _eigh(x, _uplo("eigvalsh", UPLO))[0]


# ---- norms and derived functions --------------------------------------------------------------------
def _abs(x):
    return _C.Op("abs")(x)


_p_norm = _C.Op("p_norm", "axis", "keepdim", "porder")


def _vector_norm(x, p, axes, keepdim):
    """p-norm over `axes` (a list; None = all)."""
    ax = axes if axes is not None else list(range(x.ndim))
    if p in ("fro",):
        p = 2.0
    p = builtins.float(p)
    if p in (_pymath.inf, -_pymath.inf):
        return _extreme_norm(x, ax, keepdim, p > 0)
    if p == 0:
        nz = _cast(_C.Op("not_equal")(x, _scalar(0, x)), x.dtype)
        # Paddle's p=0 norm has a zero gradient (not none): add a term that is 0 with a 0 gradient
        # (x > x is False everywhere, nan included).
        zero = _where(_C.Op("greater_than")(x, x), x, _scalar(0, x))
        return _m.sum(_m.add(nz, zero), axis=ax, keepdim=keepdim)
    if p > 0 and p != _pymath.inf and x.dtype in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        # one op, scaled by the running max |x|: no overflow or underflow, a 0 gradient at 0 (as Paddle)
        return _p_norm(x, ax, keepdim, p)
    if p == 1:
        return _m.sum(_abs(x), axis=ax, keepdim=keepdim)
    if p == 2:
        return _m.sqrt(_m.sum(_m.multiply(x, x), axis=ax, keepdim=keepdim))
    s = _m.sum(_m.pow(_abs(x), _scalar(p, x)), axis=ax, keepdim=keepdim)
    return _m.pow(s, _scalar(1.0 / p, s))


def _extreme_norm(x, ax, keepdim, largest):
    """max (largest) or min of |x| over ax. Paddle's gradient gives every element tied at the extreme
    sign(x) * dy, where the max/min reductions split dy among the ties (decision 17); so the reduction's
    gradient is scaled by the number of ties (a constant: comparisons carry no gradient)."""
    a = _abs(x)
    reduce = _m.max if largest else _m.min
    m = reduce(a, axis=ax, keepdim=keepdim)
    md = m.detach()
    ties = _m.sum(_cast(_C.Op("equal")(a, reduce(a, axis=ax, keepdim=True).detach()), x.dtype), axis=ax,
                  keepdim=keepdim)
    scaled = _m.add(md, _m.multiply(ties, _m.subtract(m, md)))  # value m, gradient ties * dm
    return _where(_C.Op("isfinite")(md), scaled, m)  # m - md is nan at inf


def _matrix_norm(x, p, axes, keepdim):
    op = "matrix_norm"
    if len(axes) != 2:
        raise ValueError("{}: axis must name 2 dims, got {}".format(op, axes))
    a0, a1 = _norm_axis(op, axes[0], x.ndim), _norm_axis(op, axes[1], x.ndim)
    if a0 == a1:
        raise ValueError("{}: the two axes must differ, got {}".format(op, axes))
    if p == "fro":
        return _m.sqrt(_m.sum(_m.multiply(x, x), axis=[a0, a1], keepdim=keepdim))
    if p in ("nuc", 2, -2, 2.0, -2.0):
        y = _mp.transpose(x, _perm_to_end(x.ndim, [a0, a1]))
        s = _svd(y, 0)[1]
        r = _m.sum(s, axis=-1) if p == "nuc" else (_m.max(s, axis=-1) if p > 0 else _m.min(s, axis=-1))
        if keepdim:
            for a in sorted([a0, a1]):
                r = _mp.unsqueeze(r, a)
        return r
    if p in (1, -1, _pymath.inf, -_pymath.inf):
        # 1: max over columns of the column sums; inf: max over rows of the row sums.
        inner_ax, outer_ax = (a0, a1) if p in (1, -1) else (a1, a0)
        sums = _m.sum(_abs(x), axis=[inner_ax], keepdim=True)
        red = _m.max if p > 0 else _m.min
        r = red(sums, axis=[outer_ax], keepdim=True)
        return r if keepdim else _mp.squeeze(r, [a0, a1])
    raise ValueError("{}: p must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {!r}".format(op, p))


def _axis_list(axis):
    if axis is None:
        return None
    if isinstance(axis, numbers.Integral):
        return [builtins.int(axis)]
    return [builtins.int(a) for a in axis]


def norm(x, p="fro", axis=None, keepdim=False, name=None):
    """Paddle 2.x norm: 'fro' / 'nuc' over two axes (default: all elements for 'fro', the last two for
    'nuc'); a numeric p (inf, -inf, 0, 1, 2, any other) is a vector norm over the given axes (all when
    None)."""
    axes = _axis_list(axis)
    if p is None:
        p = "fro"
    if axes is not None:
        axes = [_norm_axis("norm", a, x.ndim) for a in axes]
    if isinstance(p, str):
        if p not in ("fro", "nuc"):
            raise ValueError("norm: p must be 'fro', 'nuc' or a number, got {!r}".format(p))
        if p == "nuc":
            return _matrix_norm(x, p, axes if axes is not None else [-2, -1], keepdim)
        if axes is not None and len(axes) == 2:
            return _matrix_norm(x, p, axes, keepdim)
        return _vector_norm(x, 2.0, axes, keepdim)
    # Paddle 2.x: a numeric p over two axes is the vector p-norm of the flattened matrix (see
    # matrix_norm for true matrix norms).
    if axes is not None and len(axes) > 2:
        raise ValueError("norm: axis must have 1 or 2 entries for a numeric p, got {}".format(axis))
    return _vector_norm(x, p, axes, keepdim)


def vector_norm(x, p=2.0, axis=None, keepdim=False, name=None):
    axes = _axis_list(axis)
    if axes is not None:
        axes = [_norm_axis("vector_norm", a, x.ndim) for a in axes]
    return _vector_norm(x, p, axes, keepdim)


def matrix_norm(x, p="fro", axis=[-2, -1], keepdim=False, name=None):
    return _matrix_norm(x, p, _axis_list(axis), keepdim)


def dist(x, y, p=2, name=None):
    """The p-norm of x - y (broadcast) over all elements."""
    return _vector_norm(_m.subtract(x, y), p, None, False)


def pinv(x, rcond=1e-15, hermitian=False, name=None):
    """Moore-Penrose pseudo-inverse via the SVD (singular values <= rcond * max are dropped)."""
    u, s, vh = _svd(x, 0)
    cutoff = _m.multiply(_m.max(s, axis=[-1], keepdim=True), _scalar(rcond, s))
    keep = _C.Op("greater_than")(s, cutoff)
    safe = _where(keep, s, _scalar(1.0, s))
    s_inv = _m.multiply(_m.divide(_scalar(1.0, s), safe), _cast(keep, s.dtype))
    return _matmul(_m.multiply(_mT(vh), _mp.unsqueeze(s_inv, -2)), u, False, True)


def matrix_power(x, n, name=None):
    """x @ x @ ... (n times); n = 0 gives the identity, n < 0 powers of the inverse."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError("matrix_power: x must be square [..., N, N], got shape {}".format(x.shape))
    n = builtins.int(n)
    if n == 0:
        return _mp.expand(_eye(x.shape[-1], x), _shape(x))
    if n < 0:
        x, n = _inverse(x), -n
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else _matmul(result, base, False, False)
        n >>= 1
        if n:
            base = _matmul(base, base, False, False)
    return result


def matrix_rank(x, tol=None, hermitian=False, name=None):
    """Number of singular values above tol (default: max(s) * max(M, N) * eps)."""
    if hermitian:
        s = _abs(_eigh(x, 1)[0])
    else:
        s = _svd(x, 0)[1]
    smax = _m.max(s, axis=[-1], keepdim=True)
    if tol is None:
        eps = np.finfo(np.float32 if "32" in str(x.dtype) else np.float64).eps
        thr = _m.multiply(smax, _scalar(builtins.max(x.shape[-2:]) * eps, s))
    elif isinstance(tol, Tensor):
        thr = _mp.unsqueeze(_cast(tol, s.dtype), -1)
    else:
        thr = _scalar(tol, s)
    return _m.sum(_cast(_C.Op("greater_than")(s, thr), "int64"), axis=[-1])


def cond(x, p=None, name=None):
    """Condition number: ratio of extreme singular values (p None/2/-2) or norm(x) * norm(inv(x))."""
    if p is None or p in (2, -2):
        s = _svd(x, 0)[1]
        hi, lo = _m.max(s, axis=[-1]), _m.min(s, axis=[-1])
        return _m.divide(lo, hi) if p == -2 else _m.divide(hi, lo)
    if p in ("fro", "nuc", 1, -1, _pymath.inf, -_pymath.inf):
        return _m.multiply(_matrix_norm(x, p, [-2, -1], False), _matrix_norm(_inverse(x), p, [-2, -1], False))
    raise ValueError("cond: p must be None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {!r}".format(p))


def cov(x, rowvar=True, ddof=True, fweights=None, aweights=None, name=None):
    """Covariance of the variables (rows when rowvar, else columns) of a 1-D or 2-D x, as numpy.cov."""
    if x.ndim > 2:
        raise ValueError("cov: x must be 1-D or 2-D, got shape {}".format(x.shape))
    if x.ndim < 2:
        x = _mp.reshape(x, [1, -1])
    if not rowvar:
        x = _mp.transpose(x, [1, 0])
    nobs = x.shape[1]
    w = None
    if fweights is not None:
        w = _cast(fweights, x.dtype)
    if aweights is not None:
        aw = _cast(aweights, x.dtype)
        w = aw if w is None else _m.multiply(w, aw)
    if w is None:
        avg = _m.mean(x, axis=[1], keepdim=True)
        fact = _scalar(nobs - (1 if ddof else 0), x)
        xc = _m.subtract(x, avg)
        return _m.divide(_matmul(xc, xc, False, True), fact)
    wsum = _m.sum(w)
    avg = _m.divide(_m.sum(_m.multiply(x, w), axis=[1], keepdim=True), wsum)
    if not ddof:
        fact = wsum
    elif aweights is None:
        fact = _m.subtract(wsum, _scalar(1, wsum))
    else:
        fact = _m.subtract(wsum, _m.divide(_m.sum(_m.multiply(w, aw)), wsum))
    xc = _m.subtract(x, avg)
    return _m.divide(_matmul(_m.multiply(xc, w), xc, False, True), fact)


def corrcoef(x, rowvar=True, name=None):
    c = cov(x, rowvar)
    d = _m.sqrt(_diagonal(c, 0, 0, 1))
    return _m.divide(_m.divide(c, _mp.unsqueeze(d, 1)), _mp.unsqueeze(d, 0))


def lstsq(x, y, rcond=None, driver=None, name=None):
    """Least squares via the pseudo-inverse: (solution, residuals, rank, singular_values)."""
    s = _svd(x, 0)[1]
    if rcond is None:
        rcond = np.finfo(np.float32 if "32" in str(x.dtype) else np.float64).eps * builtins.max(x.shape[-2:])
    sol = _matmul(pinv(x, rcond), y, False, False)
    rank = matrix_rank(x, tol=None)
    m, n = x.shape[-2], x.shape[-1]
    if m > n:
        r = _m.subtract(_matmul(x, sol, False, False), y)
        residuals = _m.sum(_m.multiply(r, r), axis=[-2])
    else:
        residuals = _fill([0], 0.0, x.dtype, place=x.place)
    return sol, residuals, rank, s
