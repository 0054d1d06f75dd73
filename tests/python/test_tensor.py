"""Tensor creation from Python and numpy, numpy out (zero-copy), properties and conversions."""
import gc

import numpy as np
import pytest

import oar
from _util import check


# ---- to_tensor dtype rules (Paddle 2.x) ----------------------------------------------------------
@pytest.mark.parametrize("data, dtype, shape", [
    (1.5, oar.float32, []),
    (2, oar.int64, []),
    (True, oar.bool, []),
    ([1.0, 2.0], oar.float32, [2]),
    ([1, 2, 3], oar.int64, [3]),
    ([True, False], oar.bool, [2]),
    ([1, 2.5], oar.float32, [2]),  # mixed int/float -> the default float dtype
    ([[1, 2], [3, 4]], oar.int64, [2, 2]),
    ((1, 2), oar.int64, [2]),
    ([], oar.float32, [0]),
    (1 + 2j, oar.complex64, []),
    (np.float64(1.5), oar.float32, []),  # numpy scalars follow the Python rules, as in Paddle
])
def test_to_tensor_default_dtypes(data, dtype, shape, device):
    t = oar.to_tensor(data, place=device)
    assert t.dtype == dtype
    assert t.shape == shape
    assert t.place == oar.Place(device)
    check(t, np.array(data).astype(oar._C.numpy_dtype(dtype)))


@pytest.mark.parametrize("np_dtype", [np.float64, np.float32, np.float16, np.int32, np.int64, np.int16, np.int8,
                                      np.uint8, np.bool_, np.complex64, np.complex128])
def test_to_tensor_numpy_keeps_dtype(np_dtype, device):
    a = (np.arange(6).reshape(2, 3) % 3).astype(np_dtype)
    t = oar.to_tensor(a, place=device)
    assert t.dtype == np.dtype(np_dtype)
    assert t.numpy().dtype == np_dtype
    check(t, a)


def test_to_tensor_default_dtype_float64():
    oar.set_default_dtype("float64")
    assert oar.get_default_dtype() == "float64"
    assert oar.to_tensor(1.5).dtype == oar.float64
    assert oar.to_tensor([1, 2]).dtype == oar.int64
    assert oar.to_tensor(1j).dtype == oar.complex128
    assert oar.zeros([2]).dtype == oar.float64


def test_to_tensor_explicit_dtype_and_strings(device):
    for spec in ["float64", oar.float64, np.float64, np.dtype("float64")]:
        t = oar.to_tensor([1, 2], dtype=spec, place=device)
        assert t.dtype == oar.float64
        check(t, np.array([1.0, 2.0]))
    t = oar.to_tensor([1.5, 2.5], dtype="bfloat16", place=device)
    assert t.dtype == oar.bfloat16
    assert t.tolist() == [1.5, 2.5]
    assert t.numpy().dtype == np.uint16  # bfloat16 bits, as Paddle


def test_to_tensor_non_contiguous_and_copy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = oar.to_tensor(a[:, ::2])
    check(t, a[:, ::2])
    a[0, 0] = 99  # to_tensor copies
    assert t.numpy()[0, 0] == 0
    t2 = oar.to_tensor(t)
    assert not t2._is_shared_buffer_with(t)
    check(t2, t.numpy())


def test_to_tensor_from_tensor_changes_place_and_dtype():
    t = oar.to_tensor([1, 2, 3])
    s = oar.to_tensor(t, dtype="float32", place="sim:0" if "sim:0" in oar.device.get_available_device() else "cpu")
    assert s.dtype == oar.float32
    check(s, np.array([1.0, 2.0, 3.0], np.float32))


def test_to_tensor_stop_gradient():
    assert oar.to_tensor([1.0]).stop_gradient is True
    t = oar.to_tensor([1.0], stop_gradient=False)
    assert t.stop_gradient is False
    t.stop_gradient = True
    assert t.stop_gradient is True


# ---- numpy out ------------------------------------------------------------------------------------
def test_asarray_zero_copy_shares_storage():
    t = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.numpy().ctypes.data != t.data_ptr()  # numpy() copies, as Paddle's
    a = np.asarray(t)
    assert a.ctypes.data == t.data_ptr()
    a[0, 1] = 42.0  # write through numpy, see it in the tensor
    assert t.tolist() == [[1.0, 42.0], [3.0, 4.0]]
    assert t[0, 1].item() == 42.0


def test_asarray_keeps_storage_alive():
    t = oar.ones([1000], dtype="float64")
    a = np.asarray(t)
    del t
    gc.collect()
    junk = [oar.full([1000], 7.0, dtype="float64") for _ in range(4)]  # would reuse freed memory
    assert np.all(a == 1.0)
    del junk


def test_numpy_of_views_and_devices(device):
    t = oar.to_tensor(np.arange(12).reshape(3, 4), place=device)
    v = t[:, 1::2]
    assert not v.is_contiguous()
    a = v.numpy()  # a copy
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4)[:, 1::2])
    if device == "cpu":
        assert np.asarray(t[1]).ctypes.data == t[1].data_ptr()  # np.asarray shares a contiguous view too
    else:
        a = t.numpy()
        a[0, 0] = 100
        assert t[0, 0].item() == 0  # device memory: numpy() is a copy


def test_array_protocol():
    t = oar.to_tensor([1, 2, 3])
    np.testing.assert_array_equal(np.asarray(t), [1, 2, 3])
    np.testing.assert_array_equal(np.array(t, dtype=np.float32), np.array([1, 2, 3], np.float32))
    assert oar.to_tensor([t[0], t[1]]).tolist() == [1, 2]


# ---- properties and conversions -------------------------------------------------------------------
def test_properties(device):
    t = oar.to_tensor(np.zeros((2, 3, 4), np.float32), place=device)
    assert t.shape == [2, 3, 4] and isinstance(t.shape, list)
    assert t.ndim == 3 and t.dim() == 3
    assert t.size == 24
    assert t.dtype == oar.float32 and t.dtype is oar.float32
    assert t.place == oar.Place(device)
    assert t.T.shape == [4, 3, 2]
    assert len(t) == 2


def test_item_tolist(device):
    t = oar.to_tensor([[1.5, 2.5]], place=device)
    assert t[0, 1].item() == 2.5 and isinstance(t[0, 1].item(), float)
    assert t.item(1) == 2.5
    assert t.tolist() == [[1.5, 2.5]]
    assert oar.to_tensor(7, place=device).item() == 7 and isinstance(oar.to_tensor(7).item(), int)
    assert oar.to_tensor(True, place=device).item() is True
    assert oar.to_tensor([3], dtype="float16", place=device).item() == 3.0
    assert oar.to_tensor(1 + 2j).item() == 1 + 2j


def test_scalar_conversions(device):
    t = oar.to_tensor([2.75], place=device)
    assert float(t) == 2.75
    assert int(t) == 2
    assert bool(t) is True
    assert bool(oar.to_tensor([0], place=device)) is False
    assert [10, 20, 30][oar.to_tensor(1)] == 20  # __index__
    for f in (bool, float, int):
        with pytest.raises(ValueError):
            f(oar.to_tensor([1.0, 2.0], place=device))
    with pytest.raises(TypeError):
        len(oar.to_tensor(1.0))


def test_astype_cast_clone_cpu_to(device):
    t = oar.to_tensor([1.7, -2.2], place=device)
    check(t.astype("int32"), np.array([1, -2], np.int32), dtype=oar.int32)
    check(t.cast(oar.float64), np.array([1.7, -2.2], np.float32).astype(np.float64), dtype=oar.float64)
    check(oar.cast(t, "bool"), np.array([True, True]))
    c = t.clone()
    assert not c._is_shared_buffer_with(t) and c.place == t.place
    check(c, t.numpy())
    cpu = t.cpu()
    assert cpu.place == oar.CPUPlace()
    check(cpu, np.array([1.7, -2.2], np.float32))
    moved = cpu.to(device)
    assert moved.place == oar.Place(device)
    check(moved.to("float64"), np.array([1.7, -2.2], np.float32).astype(np.float64))
    both = cpu.to(device, "int64")
    assert both.place == oar.Place(device) and both.dtype == oar.int64
    assert cpu.to(dtype="float16").dtype == oar.float16
    assert cpu._copy_to(oar.CPUPlace(), False).place == oar.CPUPlace()


def test_repr_like_paddle():
    t = oar.to_tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert repr(t) == ("Tensor(shape=[2, 3], dtype=float32, place=Place(cpu), stop_gradient=True,\n"
                       "       [[1., 2., 3.],\n"
                       "        [4., 5., 6.]])")
    assert str(oar.to_tensor(3)) == ("Tensor(shape=[], dtype=int64, place=Place(cpu), stop_gradient=True,\n"
                                     "       3)")
    s = oar.to_tensor([True, False])
    assert repr(s).startswith("Tensor(shape=[2], dtype=bool, place=Place(cpu), stop_gradient=True,\n")
    assert "[ True, False]" in repr(s)
    f = oar.to_tensor([1.0], stop_gradient=False)
    assert repr(f).startswith("Tensor(shape=[1], dtype=float32, place=Place(cpu), stop_gradient=False,\n")
    b = oar.to_tensor([1.5], dtype="bfloat16")
    assert "dtype=bfloat16" in repr(b) and "1.5" in repr(b)
    assert format(oar.to_tensor(3.14159), ".2f") == "3.14"


def test_repr_on_device():
    if "sim:0" not in oar.device.get_available_device():
        pytest.skip("no sim device")
    t = oar.to_tensor([1, 2], place="sim:0")
    assert repr(t) == ("Tensor(shape=[2], dtype=int64, place=Place(sim:0), stop_gradient=True,\n"
                       "       [1, 2])")


def test_dtype_objects():
    assert repr(oar.float32) == "oar.float32" and oar.float32.name == "float32"
    assert oar.float32 == "float32" and oar.float32 != "float64" and oar.float32 == np.dtype("float32")
    assert hash(oar.int64) == hash("int64")
    assert {oar.float32: 1}["float32"] == 1
    for name in ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                 "complex64", "complex128"]:
        d = getattr(oar, name)
        assert isinstance(d, oar.dtype) and d.name == name
        assert oar._C.to_dtype(name) is d
    import pickle
    assert pickle.loads(pickle.dumps(oar.float16)) is oar.float16


def test_tensor_hashable():
    t = oar.to_tensor([1.0])
    assert {t: 1}[t] == 1
