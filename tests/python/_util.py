"""Helpers shared by the Python tests."""
import numpy as np

import oar


def check(t, expected, rtol=1e-6, atol=1e-6, dtype=None):
    """Compares a tensor with a numpy array: shape, dtype (when given) and values."""
    assert isinstance(t, oar.Tensor), type(t)
    expected = np.asarray(expected)
    got = t.numpy()
    assert t.shape == list(expected.shape), (t.shape, expected.shape)
    assert list(got.shape) == t.shape
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)
