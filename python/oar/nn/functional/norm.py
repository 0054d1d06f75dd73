"""Normalisation: batch_norm, layer_norm, group_norm, instance_norm, normalize."""
from ... import _C  # noqa: F401

__all__ = []
