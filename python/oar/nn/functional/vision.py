"""Resampling: interpolate, pixel_shuffle, grid_sample, affine_grid."""
from ... import _C  # noqa: F401

__all__ = []
