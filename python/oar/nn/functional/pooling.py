"""Max/average pooling and adaptive pooling."""
from ... import _C  # noqa: F401

__all__ = []
