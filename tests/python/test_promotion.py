"""Python operators and Paddle 2.x type promotion, with Python scalars and between tensors."""
import operator

import numpy as np
import pytest

import oar
from _util import check

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
def test_operators_with_tensors_and_scalars(op, device):
    a = np.array([[1.5, 2.0, 3.25], [4.0, 5.5, 6.0]], np.float32)
    b = np.array([2.0, 0.5, 1.5], np.float32)
    x, y = oar.to_tensor(a, place=device), oar.to_tensor(b, place=device)
    check(op(x, y), op(a, b), rtol=1e-5)
    check(op(x, 2), op(a, np.float32(2)), rtol=1e-5)  # scalar on the right
    check(op(3, y), op(np.float32(3), b), rtol=1e-5)  # reflected
    check(op(x, 1.5), op(a, np.float32(1.5)), rtol=1e-5)
    assert op(x, 2).dtype == oar.float32 and op(2.5, x).dtype == oar.float32


def test_unary_operators(device):
    a = np.array([-1.5, 0.0, 2.0], np.float32)
    x = oar.to_tensor(a, place=device)
    check(-x, -a)
    check(abs(x), np.abs(a))
    check(~oar.to_tensor([True, False], place=device), [False, True])
    with pytest.raises(TypeError):
        ~x


def test_comparisons(device):
    a = np.array([1, 2, 3])
    x = oar.to_tensor(a, place=device)
    for op in [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]:
        check(op(x, 2), op(a, 2))
        check(op(x, 2.5), op(a, 2.5))  # the int tensor is compared as float
        check(op(2, x), op(2, a))
        check(op(x, oar.to_tensor([3, 2, 1], place=device)), op(a, np.array([3, 2, 1])))
        assert op(x, 2).dtype == oar.bool
    assert (x == None) is False  # noqa: E711  (not a tensor: Python's identity fallback)
    assert x != "abc"


def test_logical_operators(device):
    p = oar.to_tensor([True, True, False], place=device)
    q = oar.to_tensor([True, False, False], place=device)
    check(p & q, [True, False, False])
    check(p | q, [True, True, False])
    check(p ^ q, [False, True, False])


# (tensor dtype, scalar) -> result dtype: Paddle 2.x rules
SCALAR_CASES = [
    ("int64", 2, "int64"),
    ("int32", 2, "int32"),
    ("int32", 2.5, "float32"),  # float scalar with an int tensor: the default float dtype
    ("int64", 2.5, "float32"),
    ("float32", 2, "float32"),
    ("float64", 2.5, "float64"),
    ("float16", 2.5, "float16"),
    ("bool", 2, "int64"),
    ("bool", 2.5, "float32"),
    ("float32", 1j, "complex64"),
    ("float64", 1j, "complex128"),
]


@pytest.mark.parametrize("tdtype, scalar, expect", SCALAR_CASES)
def test_scalar_promotion(tdtype, scalar, expect):
    x = oar.to_tensor([1, 0, 1], dtype=tdtype)
    out = x + scalar
    assert out.dtype == expect
    assert (scalar + x).dtype == expect
    check(out, np.array([1, 0, 1]).astype(oar._C.numpy_dtype(expect)) + scalar, rtol=1e-3)


def test_scalar_promotion_follows_default_dtype():
    oar.set_default_dtype("float64")
    assert (oar.to_tensor([1, 2]) * 0.5).dtype == oar.float64
    assert (oar.to_tensor([1, 2]) / 2).dtype == oar.float64


def test_true_division_of_ints(device):
    x = oar.to_tensor([7, -7], place=device)
    check(x / 2, np.array([3.5, -3.5], np.float32), dtype=oar.float32)
    check(7 / oar.to_tensor([2, 4], place=device), np.array([3.5, 1.75], np.float32), dtype=oar.float32)
    check(x // 2, [3, -4], dtype=oar.int64)
    check(x % 3, [1, 2], dtype=oar.int64)
    check(x ** 2, [49, 49], dtype=oar.int64)
    check(2 ** oar.to_tensor([1, 3], place=device), [2, 8], dtype=oar.int64)


# (dtype a, dtype b) -> result dtype between tensors
TENSOR_CASES = [
    ("float32", "float64", "float64"),
    ("float16", "float32", "float32"),
    ("float16", "bfloat16", "float32"),
    ("bfloat16", "float64", "float64"),
    ("int64", "float32", "float32"),
    ("int32", "float16", "float16"),
    ("int32", "int64", "int64"),
    ("int8", "uint8", "int16"),
    ("int16", "int8", "int16"),
    ("bool", "int32", "int32"),
    ("bool", "float32", "float32"),
    ("float64", "complex64", "complex128"),
    ("float32", "complex64", "complex64"),
]


@pytest.mark.parametrize("da, db, expect", TENSOR_CASES)
def test_tensor_promotion(da, db, expect):
    a = oar.to_tensor([1, 2], dtype=da)
    b = oar.to_tensor([1, 0], dtype=db)
    assert oar._C.promote_types(da, db) == expect
    assert (a + b).dtype == expect and (b + a).dtype == expect
    assert oar.add(a, b).dtype == expect
    assert (a == b).dtype == oar.bool
    check((a * b).astype("float64"), np.array([1.0, 0.0]))


def test_api_functions_take_scalars(device):
    x = oar.to_tensor([1.0, 4.0], place=device)
    check(oar.add(x, 1), [2.0, 5.0])
    check(oar.subtract(10, x), [9.0, 6.0])
    check(oar.maximum(x, 2.0), [2.0, 4.0])
    check(oar.multiply(oar.to_tensor([1, 2], place=device), 1.5), np.array([1.5, 3.0], np.float32))


def test_numpy_scalars_and_unsupported_operands():
    x = oar.to_tensor([1.0, 2.0])
    check(x * np.float64(2), [2.0, 4.0])
    check(np.float32(2) * x, [2.0, 4.0])  # numpy defers to the tensor (__array_ufunc__ = None)
    check(x + np.int64(1), [2.0, 3.0])
    assert (x + np.int64(1)).dtype == oar.float32
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        x + [1, 2]
