"""oar.linalg: linear algebra (Paddle's paddle.linalg). The functions live in oar.tensor.linalg; the
names Paddle has only under paddle.linalg (inv, det, svd, ...) are exported from here only."""
from .tensor.linalg import (  # noqa: F401
    cholesky, cholesky_solve, cond, corrcoef, cov, det, eigh, eigvalsh, einsum, inv, inverse, lstsq,
    matrix_norm, matrix_power, matrix_rank, multi_dot, norm, pinv, qr, slogdet, solve, svd, triangular_solve,
    vector_norm)
from .tensor.math import matmul  # noqa: F401

__all__ = [
    "cholesky", "cholesky_solve", "cond", "corrcoef", "cov", "det", "eigh", "eigvalsh", "einsum", "inv", "lstsq",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "svd", "triangular_solve", "vector_norm",
]
