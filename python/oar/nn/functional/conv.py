"""Convolutions and transposed convolutions (oneDNN on the CPU)."""
from ... import _C  # noqa: F401

__all__ = []
