"""Tensor.numpy() copies (Paddle's semantics); np.asarray(t) and DLPack share a contiguous CPU tensor's
memory (docs/python.md, "numpy out")."""
import numpy as np
import pytest

import oar


def test_numpy_is_a_copy():
    t = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = t.numpy()
    assert not np.shares_memory(a, np.asarray(t))
    a[0, 0] = 100.0
    assert t.numpy()[0, 0] == 0.0
    t[1, 1] = -7.0  # and writes to the tensor do not reach the array
    assert a[1, 1] == 4.0
    assert a.flags.writeable and a.flags.c_contiguous


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float16", "float32", "float64", "complex64"])
def test_numpy_copies_every_dtype(dtype):
    src = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    t = oar.to_tensor(src)
    a = t.numpy()
    assert a.dtype == src.dtype
    np.testing.assert_array_equal(a, src)
    assert not np.shares_memory(a, np.asarray(t))


def test_views_and_strided_tensors_copy():
    base = oar.to_tensor(np.arange(12, dtype=np.float64).reshape(3, 4))
    row = base[1]  # a contiguous view
    a = row.numpy()
    a[:] = 0
    np.testing.assert_array_equal(base.numpy()[1], [4, 5, 6, 7])
    tr = base.transpose([1, 0])  # not contiguous
    np.testing.assert_array_equal(tr.numpy(), np.arange(12).reshape(3, 4).T)


def test_central_difference_through_set_value():
    # The program: with a shared numpy() the "base" moved with the parameter and the
    # derivative came out at half its value.
    w = oar.create_parameter([3], "float64", default_initializer=oar.nn.initializer.Constant(0.5))
    x = oar.to_tensor(np.array([1.0, 2.0, 3.0]))

    def loss():
        return float(((w * w) * x).sum())

    d = 1e-4
    base = w.numpy()
    grads = []
    for i in range(3):
        e = np.zeros(3)
        e[i] = d
        w.set_value(base + e)
        hi = loss()
        w.set_value(base - e)
        lo = loss()
        grads.append((hi - lo) / (2 * d))
    w.set_value(base)
    np.testing.assert_allclose(grads, 2 * 0.5 * np.array([1.0, 2.0, 3.0]), rtol=1e-6)
    np.testing.assert_array_equal(w.numpy(), [0.5, 0.5, 0.5])


def test_asarray_shares_a_contiguous_cpu_tensor():
    t = oar.to_tensor(np.zeros((2, 3), np.float32))
    v = np.asarray(t)
    v[0, 1] = 3.0  # zero-copy: the tensor sees it
    assert t.numpy()[0, 1] == 3.0
    assert np.shares_memory(np.asarray(t), np.asarray(t))
    assert np.asarray(t, copy=False)[0, 1] == 3.0
    c = np.array(t)  # np.array copies
    c[0, 0] = 9.0
    assert t.numpy()[0, 0] == 0.0
    c = np.asarray(t, copy=True)
    c[0, 0] = 9.0
    assert t.numpy()[0, 0] == 0.0
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), [[0, 3, 0], [0, 0, 0]])


def test_asarray_copy_false_of_a_strided_tensor_is_refused():
    t = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).transpose([1, 0])
    np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3).T)
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, copy=False)


def test_dlpack_shares():
    t = oar.to_tensor(np.zeros(4, np.float32))
    a = np.from_dlpack(t)  # numpy marks it read-only; a write to the tensor shows through
    t[2] = 1.5
    assert a[2] == 1.5


def test_internal_readers_still_work():
    # Paths switched to the shared read: repr/tolist/item, unique, a DataLoader over a TensorDataset.
    t = oar.to_tensor(np.array([3, 1, 3, 2], np.int64))
    assert t.tolist() == [3, 1, 3, 2] and "3, 1, 3, 2" in repr(t)
    np.testing.assert_array_equal(oar.unique(t).numpy(), [1, 2, 3])
    ds = oar.io.TensorDataset([oar.to_tensor(np.arange(8, dtype=np.float32).reshape(4, 2))])
    batches = [b[0].numpy() for b in oar.io.DataLoader(ds, batch_size=2, shuffle=False)]
    np.testing.assert_array_equal(np.concatenate(batches), np.arange(8).reshape(4, 2))
