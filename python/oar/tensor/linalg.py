"""Linear algebra: einsum, norms and the LAPACK-backed decompositions and solvers (also under oar.linalg)."""
from .. import _C  # noqa: F401

__all__ = []
