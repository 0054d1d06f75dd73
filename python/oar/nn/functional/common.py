"""linear, dropout family, embedding, one_hot, pad, unfold and friends."""
from ... import _C  # noqa: F401

__all__ = []
