"""Every bound op against numpy, on every available device, across dtypes."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from _util import check

RNG = np.random.default_rng(0)

FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]


def rand(shape, dtype, low=-3, high=3):
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(low, high, shape).astype(dtype)
    return RNG.uniform(low, high, shape).astype(dtype)


def T(a, device):
    return oar.to_tensor(a, place=device)


# ---- elementwise binary ------------------------------------------------------------------------------
BINARY = [
    ("add", np.add, FLOATS + INTS),
    ("subtract", np.subtract, FLOATS + INTS),
    ("multiply", np.multiply, FLOATS + INTS),
    ("maximum", np.maximum, FLOATS + INTS),
    ("minimum", np.minimum, FLOATS + INTS),
    ("floor_divide", np.floor_divide, FLOATS),
    ("remainder", np.mod, FLOATS),
    ("equal", np.equal, FLOATS + INTS + ["bool"]),
    ("not_equal", np.not_equal, FLOATS + INTS + ["bool"]),
    ("less_than", np.less, FLOATS + INTS),
    ("less_equal", np.less_equal, FLOATS + INTS),
    ("greater_than", np.greater, FLOATS + INTS),
    ("greater_equal", np.greater_equal, FLOATS + INTS),
    ("logical_and", np.logical_and, ["bool", "int64", "float32"]),
    ("logical_or", np.logical_or, ["bool", "int64", "float32"]),
    ("logical_xor", np.logical_xor, ["bool", "int64", "float32"]),
]


@pytest.mark.parametrize("name, ref, dtypes", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, ref, dtypes, device):
    fn = getattr(oar, name)
    for dtype in dtypes:
        a, b = rand([3, 4], dtype), rand([4], dtype)  # broadcasting
        if name in ("floor_divide", "remainder"):
            b = np.where(np.abs(b) < 0.5, 1.5, b).astype(dtype)
        check(fn(T(a, device), T(b, device)), ref(a, b), rtol=1e-5)
        check(getattr(T(a, device), name)(T(b, device)), ref(a, b), rtol=1e-5)  # method form


def test_divide_and_pow(device):
    a, b = rand([5], "float32"), rand([5], "float32", 1, 3)
    check(oar.divide(T(a, device), T(b, device)), a / b, rtol=1e-6)
    ai, bi = np.array([7, -7, 9]), np.array([2, 2, 4])
    out = oar.divide(T(ai, device), T(bi, device))  # true division: ints give the default float dtype
    check(out, (ai / bi).astype(np.float32), dtype=oar.float32)
    check(oar.floor_divide(T(ai, device), T(bi, device)), ai // bi)
    check(oar.remainder(T(ai, device), T(bi, device)), ai % bi)
    check(oar.mod(T(ai, device), T(bi, device)), ai % bi)
    p = np.array([0.5, 1.0, 2.0], np.float32)
    check(oar.pow(T(p, device), 2), p ** 2)
    check(oar.pow(T(p, device), T(np.array([2.0, 3.0, 0.5], np.float32), device)), p ** np.array([2.0, 3.0, 0.5]))
    check(oar.pow(T(ai, device), 2), ai ** 2, dtype=oar.int64)


# ---- unary ----------------------------------------------------------------------------------------------
UNARY = [
    ("exp", np.exp, 2), ("log", np.log, None), ("sqrt", np.sqrt, None), ("tanh", np.tanh, 3),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), 3), ("abs", np.abs, 3), ("neg", np.negative, 3),
    ("square", np.square, 3), ("sin", np.sin, 3), ("cos", np.cos, 3), ("floor", np.floor, 3), ("ceil", np.ceil, 3),
    ("log1p", np.log1p, None), ("expm1", np.expm1, 2), ("reciprocal", np.reciprocal, None),
    ("rsqrt", lambda x: 1 / np.sqrt(x), None), ("sign", np.sign, 3),
]


@pytest.mark.parametrize("name, ref, span", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary(name, ref, span, dtype, device):
    a = rand([2, 5], dtype, -span, span) if span else rand([2, 5], dtype, 0.1, 4)
    check(getattr(oar, name)(T(a, device)), ref(a), rtol=1e-5, atol=1e-6)
    check(getattr(T(a, device), name)(), ref(a), rtol=1e-5, atol=1e-6)


def test_unary_ints_and_logical_not(device):
    a = np.array([-3, 0, 5])
    check(oar.abs(T(a, device)), np.abs(a))
    check(oar.neg(T(a, device)), -a)
    check(oar.logical_not(T(a, device)), np.logical_not(a))
    check(oar.logical_not(T(np.array([True, False]), device)), [False, True])
    f = np.array([np.nan, np.inf, 1.0], np.float32)
    check(oar.isnan(T(f, device)), np.isnan(f))
    check(oar.isinf(T(f, device)), np.isinf(f))
    check(oar.isfinite(T(f, device)), np.isfinite(f))


def test_round_half_away_from_zero(device):
    a = np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float32)
    check(oar.round(T(a, device)), [1.0, 2.0, 3.0, -1.0, -3.0])


# ---- reductions ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], (1,)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(axis, keepdim, device):
    a = rand([2, 3, 4], "float64")
    t = T(a, device)
    np_axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    for name, ref in [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min), ("prod", np.prod)]:
        expect = ref(a, axis=np_axis, keepdims=keepdim)
        check(getattr(oar, name)(t, axis=axis, keepdim=keepdim), expect, rtol=1e-10)
        check(getattr(t, name)(axis=axis, keepdim=keepdim), expect, rtol=1e-10)


def test_sum_dtypes(device):
    i32 = np.array([[1, 2], [3, 4]], np.int32)
    check(oar.sum(T(i32, device)), 10, dtype=oar.int64)  # narrow ints sum to int64
    check(oar.sum(T(i32, device), dtype="int32"), 10, dtype=oar.int32)
    check(oar.sum(T(np.array([True, True, False]), device)), 2, dtype=oar.int64)
    check(oar.sum(T(i32, device), axis=0, dtype="float64"), [4.0, 6.0], dtype=oar.float64)
    check(oar.prod(T(i32, device), dtype="float32"), 24.0, dtype=oar.float32)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_argmax_argmin(dtype, device):
    a = rand([3, 5], dtype, -100, 100)
    t = T(a, device)
    check(oar.argmax(t), np.argmax(a), dtype=oar.int64)
    check(oar.argmin(t), np.argmin(a))
    check(oar.argmax(t, axis=1), np.argmax(a, axis=1))
    check(oar.argmin(t, axis=0, keepdim=True), np.argmin(a, axis=0)[None, :])
    check(t.argmax(axis=-1, dtype="int32"), np.argmax(a, axis=-1), dtype=oar.int32)
    check(oar.argmax(t, keepdim=True), np.argmax(a).reshape(1, 1))


# ---- matmul -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("xs, ys, tx, ty", [
    ([3, 4], [4, 5], False, False),
    ([4, 3], [4, 5], True, False),
    ([3, 4], [5, 4], False, True),
    ([2, 3, 4], [4, 2], False, False),
    ([2, 1, 3, 4], [5, 4, 2], False, False),
    ([4], [4, 3], False, False),
    ([3, 4], [4], False, False),
    ([4], [4], False, False),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_matmul(xs, ys, tx, ty, dtype, device):
    x, y = rand(xs, dtype), rand(ys, dtype)
    ref = np.matmul(np.swapaxes(x, -1, -2) if tx else x, np.swapaxes(y, -1, -2) if ty else y)
    check(oar.matmul(T(x, device), T(y, device), transpose_x=tx, transpose_y=ty), ref, rtol=1e-5, atol=1e-5)
    if not tx and not ty:
        check(T(x, device) @ T(y, device), ref, rtol=1e-5, atol=1e-5)


# ---- creation -------------------------------------------------------------------------------------------------
def test_creation(device):
    oar.set_device(device)
    z = oar.zeros([2, 3])
    assert z.place == oar.Place(device)
    check(z, np.zeros((2, 3), np.float32), dtype=oar.float32)
    check(oar.ones([2], dtype="int32"), np.ones(2, np.int32), dtype=oar.int32)
    check(oar.full([2, 2], 7), np.full((2, 2), 7.0, np.float32), dtype=oar.float32)
    check(oar.full([2], 3, dtype="int64"), [3, 3], dtype=oar.int64)
    check(oar.full([2], True, dtype="bool"), [True, True])
    check(oar.zeros((3,), oar.float64), np.zeros(3))
    check(oar.ones(oar.to_tensor([2, 1])), np.ones((2, 1), np.float32))
    check(oar.zeros_like(z), np.zeros((2, 3), np.float32))
    check(oar.ones_like(z, dtype="int64"), np.ones((2, 3), np.int64))
    check(oar.full_like(z, 2.5), np.full((2, 3), 2.5, np.float32))


def test_arange(device):
    oar.set_device(device)
    check(oar.arange(5), np.arange(5), dtype=oar.int64)
    check(oar.arange(2, 10, 3), np.arange(2, 10, 3), dtype=oar.int64)
    check(oar.arange(0, 1, 0.25), np.arange(0, 1, 0.25, dtype=np.float32), dtype=oar.float32)
    check(oar.arange(5, 0, -1), np.arange(5, 0, -1))
    check(oar.arange(3, dtype="float64"), np.arange(3.0), dtype=oar.float64)
    check(oar.arange(start=1, end=4), [1, 2, 3])
    check(oar.arange(0), np.arange(0))


def test_random(device):
    oar.set_device(device)
    oar.seed(123)
    a = oar.rand([1000])
    oar.seed(123)
    b = oar.rand([1000])
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # seeded: reproducible
    assert a.dtype == oar.float32 and a.place == oar.Place(device)
    assert 0 <= a.numpy().min() and a.numpy().max() < 1
    n = oar.randn([20000], dtype="float64").numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    u = oar.uniform([5000], min=2.0, max=3.0).numpy()
    assert 2.0 <= u.min() and u.max() < 3.0
    s1, s2 = oar.uniform([8], seed=7), oar.uniform([8], seed=7)
    np.testing.assert_array_equal(s1.numpy(), s2.numpy())
    g = oar.normal(mean=5.0, std=0.1, shape=[4000]).numpy()
    assert abs(g.mean() - 5.0) < 0.02
    m = oar.normal(mean=oar.to_tensor([0.0, 100.0, -100.0]), std=0.01)
    np.testing.assert_allclose(m.numpy(), [0.0, 100.0, -100.0], atol=0.1)


def test_random_same_on_every_device():
    devices = oar.device.get_available_device()
    outs = []
    for d in [devices[0], devices[-1]]:
        oar.set_device(d)
        outs.append(oar.uniform([16], seed=42).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])


# ---- data movement and manipulation ----------------------------------------------------------------------------
def test_concat_index_select_where(device):
    a, b = rand([2, 3], "float32"), rand([1, 3], "float32")
    check(oar.concat([T(a, device), T(b, device)]), np.concatenate([a, b]))
    check(oar.concat([T(a, device), T(a, device)], axis=-1), np.concatenate([a, a], axis=1))
    check(oar.concat((T(a, device),), axis=oar.to_tensor(1)), a)
    idx = np.array([2, 0, 2])
    check(oar.index_select(T(a, device), T(idx, device), axis=1), a[:, idx])
    check(T(a, device).index_select(T(np.array([1, 1], np.int32), device)), a[[1, 1]])
    c = a > 0
    check(oar.where(T(c, device), T(a, device), T(-a, device)), np.where(c, a, -a))
    check(oar.where(T(c, device), T(a, device), 0.0), np.where(c, a, 0.0))
    check(oar.where(T(c, device), 1, T(np.zeros(3, np.int32), device)), np.where(c, 1, 0).astype(np.int32))


def test_views(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = T(a, device)
    r = oar.reshape(t, [4, -1])
    check(r, a.reshape(4, -1))
    assert r._is_shared_buffer_with(t)
    check(t.reshape([0, 12]), a.reshape(2, 12))  # 0 keeps the input's dimension (Paddle)
    check(oar.transpose(t, [2, 0, 1]), a.transpose(2, 0, 1))
    check(oar.transpose(t, perm=(1, 0, 2)).reshape([3, 8]), a.transpose(1, 0, 2).reshape(3, 8))  # copies
    check(oar.unsqueeze(t, 0), a[None])
    check(oar.unsqueeze(t, [0, 2]), np.expand_dims(a, (0, 2)))
    check(oar.unsqueeze(t, -1), a[..., None])
    s = T(np.zeros((1, 3, 1)), device)
    assert oar.squeeze(s).shape == [3]
    assert oar.squeeze(s, axis=0).shape == [3, 1]
    assert oar.squeeze(s, axis=[0, 2]).shape == [3]
    assert oar.squeeze(s, axis=1).shape == [1, 3, 1]  # non-1 dims are left alone, as in Paddle
    check(oar.flatten(t), a.reshape(-1))
    check(oar.flatten(t, start_axis=1), a.reshape(2, 12))
    check(t.flatten(0, 1), a.reshape(6, 4))
    assert oar.flatten(oar.to_tensor(1.0)).shape == [1]
    check(oar.expand(T(np.array([1.0, 2.0]), device), [3, 2]), np.broadcast_to([1.0, 2.0], (3, 2)))
    check(oar.broadcast_to(T(np.array([[1], [2]]), device), [2, 3]), np.broadcast_to([[1], [2]], (2, 3)))


def test_activations(device):
    a = rand([3, 5], "float32")
    t = T(a, device)
    check(F.relu(t), np.maximum(a, 0))
    check(oar.nn.functional.relu(T(np.array([-1, 2]), device)), [0, 2])
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    sm = e / e.sum(axis=-1, keepdims=True)
    check(F.softmax(t), sm, rtol=1e-5)
    check(F.log_softmax(t), np.log(sm), rtol=1e-5, atol=1e-5)
    e0 = np.exp(a - a.max(axis=0, keepdims=True))
    check(F.softmax(t, axis=0), e0 / e0.sum(axis=0, keepdims=True), rtol=1e-5)
    check(F.softmax(t, dtype="float64"), sm.astype(np.float64), rtol=1e-5)
    check(F.sigmoid(t), 1 / (1 + np.exp(-a)), rtol=1e-5)
    check(F.tanh(t), np.tanh(a), rtol=1e-5)


def test_ops_on_views(device):
    a = rand([4, 6], "float32")
    t = T(a, device)
    v = t[::2, 1::2]  # non-contiguous inputs
    check(v + 1, a[::2, 1::2] + 1)
    check(oar.exp(v), np.exp(a[::2, 1::2]), rtol=1e-6)
    check(oar.sum(t.T, axis=0), a.T.sum(axis=0), rtol=1e-5)
    check(oar.matmul(t.T, t), a.T @ a, rtol=1e-4, atol=1e-4)


def test_generic_op_handle():
    op = oar._C.Op("sum", "axis", "keepdim")
    assert op.name == "sum" and op.inputs == ["x"] and op.attrs == ["axis", "keepdim"]
    assert op.positional == ["axis", "keepdim"]
    x = oar.to_tensor([[1, 2], [3, 4]])
    check(op(x), 10)
    check(op(x, [0]), [4, 6])
    check(op(x, axis=1, keepdim=True), [[3], [7]])
    check(oar._C.Op("fill", "shape", "value", "dtype")([2], 1.0, "int32", place="cpu"), [1, 1])
    check(oar._C.Op("fill")(shape=[2], value=3.0, dtype="int32", place="cpu"), [3, 3])
    assert "add" in oar._C.op_names()
    with pytest.raises(TypeError, match="unexpected keyword argument 'axes'"):
        op(x, axes=[0])
    with pytest.raises(TypeError, match="multiple values"):
        op(x, [0], axis=[0])
    with pytest.raises(TypeError, match="must be a Tensor"):
        op([1, 2])


def test_op_handle_declares_its_positional_attributes_by_name():
    """Positional attributes go to the names the handle declared, checked against the schema when the
    handle is made (at import for the wrappers), never by schema position."""
    x = oar.to_tensor(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    # a misnamed attribute fails when the handle is made, naming op and attribute
    with pytest.raises(ValueError, match=r"Op\('cumsum'\): the op has no attribute 'axes' \(its attributes: axis, "):
        oar._C.Op("cumsum", "axes")
    with pytest.raises(ValueError, match=r"Op\('sum'\): attribute 'axis' is declared twice"):
        oar._C.Op("sum", "axis", "axis")
    with pytest.raises(TypeError, match=r"Op\('sum'\): attribute names must be str"):
        oar._C.Op("sum", 0)
    # a required attribute left out of a declared list can never be passed positionally: refused too
    with pytest.raises(ValueError, match=r"Op\('fill'\): the required attribute 'shape' is not among the declared"):
        oar._C.Op("fill", "value", "dtype")
    # a handle without names takes attributes by keyword only
    plain = oar._C.Op("cumsum")
    assert plain.positional == []
    with pytest.raises(TypeError, match=r"^cumsum: takes attributes by keyword only .*got 1 positional"):
        plain(x, 0)
    check(plain(x, axis=0), np.cumsum(x.numpy(), axis=0))
    # too many positional attributes for the declared names
    with pytest.raises(TypeError, match=r"cumsum: takes at most 1 positional attribute\(s\) after its inputs "
                                        r"\(axis\), got 2"):
        oar._C.Op("cumsum", "axis")(x, 0, 1)
    # a reordered name list routes each argument to its name
    a = oar._C.Op("cumsum", "axis", "reverse")
    b = oar._C.Op("cumsum", "reverse", "axis")
    assert b.positional == ["reverse", "axis"]
    want = np.flip(np.cumsum(np.flip(x.numpy(), 1), axis=1), 1)
    check(a(x, 1, 1), want)
    check(b(x, 1, 1), want)
    check(b(x, 0, 1), np.cumsum(x.numpy(), axis=1))  # reverse=0, axis=1
    check(a(x, 0, 0), np.cumsum(x.numpy(), axis=0))
    # keywords still reach any attribute, also on a handle with names; a name given twice is refused
    check(b(x, 1, axis=0), np.flip(np.cumsum(np.flip(x.numpy(), 0), axis=0), 0))
    with pytest.raises(TypeError, match="multiple values for argument 'axis'"):
        b(x, 0, 1, axis=1)
