"""Loss functions."""
from ... import _C  # noqa: F401

__all__ = []
