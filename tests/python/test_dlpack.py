"""DLPack in and out: zero-copy exchange with numpy (and with oar itself), dtypes, strides, lifetime and
errors."""
import gc

import numpy as np
import pytest

import oar
from oar.utils.dlpack import from_dlpack, to_dlpack
from _util import check


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_numpy_round_trip_shares_memory(dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    t = oar.from_dlpack(a)
    assert t.dtype == oar._C.to_dtype(dtype) and t.shape == [3, 4]
    check(t, a)
    b = np.from_dlpack(t)
    np.testing.assert_array_equal(b, a)
    if dtype != "bool":
        a[0, 0] = 2
        assert np.asarray(t)[0, 0] == 2  # the same memory in all three
        assert b[0, 0] == 2


def test_strided_views_in_and_out():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = from_dlpack(a[::2, 1::2])  # numpy exports strides
    check(t, a[::2, 1::2])
    x = oar.to_tensor(np.arange(12, dtype=np.float64).reshape(3, 4))
    v = x.transpose([1, 0])[1:]
    np.testing.assert_array_equal(np.from_dlpack(v), np.arange(12).reshape(3, 4).T[1:])
    e = from_dlpack(np.zeros((0, 3), np.float32))
    assert e.shape == [0, 3]


def test_memory_outlives_the_producer():
    t = oar.from_dlpack(np.arange(5, dtype=np.int64) * 7)  # the numpy array has no other reference
    gc.collect()
    check(t, np.arange(5) * 7)
    cap = to_dlpack(oar.to_tensor([1.0, 2.0, 3.0]))
    gc.collect()
    check(from_dlpack(cap), [1, 2, 3])


def test_capsule_is_consumed_once_and_errors():
    cap = to_dlpack(oar.ones([2]))
    from_dlpack(cap)
    with pytest.raises(ValueError, match="consumed only once"):
        from_dlpack(cap)
    with pytest.raises(TypeError, match="to_dlpack"):
        to_dlpack(np.ones(2))
    for d in oar.device.get_available_device():
        if not d.startswith("cpu"):
            with pytest.raises(BufferError, match="only CPU"):
                to_dlpack(oar.ones([2]).to(d))


def test_oar_to_oar_and_copy_flag():
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    y = oar.from_dlpack(x)
    y[0, 0] if False else None
    assert y._is_shared_buffer_with(x) or y.data_ptr() == x.data_ptr()
    c = x.__dlpack__(copy=True)
    z = from_dlpack(c)
    assert z.data_ptr() != x.data_ptr()
    check(z, [[1, 2], [3, 4]])
