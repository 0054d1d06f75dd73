"""The Tensor's operators run through raw number slots (nb_add, ...), and operator results are Python
objects built without pybind11's instance registry (decisions 126-127). These tests pin what that must
keep: the same results and errors as the methods (Tensor.__add__ etc.), CPython's rules for reflected
operands, NotImplemented and subclasses, in-place semantics, autograd, the dispatcher's hooks, and the
lifetime of the objects (weak references, __dict__, garbage collection, device memory)."""
import gc
import operator
import weakref

import numpy as np
import pytest

import oar
from oar import profiler
from _util import check, check_grad

Tensor = oar.Tensor

# (operator, the method the slot must agree with, the reflected method or None)
BINARY = [
    (operator.add, "__add__", "__radd__"),
    (operator.sub, "__sub__", "__rsub__"),
    (operator.mul, "__mul__", "__rmul__"),
    (operator.truediv, "__truediv__", "__rtruediv__"),
    (operator.floordiv, "__floordiv__", "__rfloordiv__"),
    (operator.mod, "__mod__", "__rmod__"),
    (operator.pow, "__pow__", "__rpow__"),
    (operator.and_, "__and__", "__rand__"),
    (operator.or_, "__or__", "__ror__"),
    (operator.xor, "__xor__", "__rxor__"),
]
ARITH = BINARY[:7]
BITWISE = BINARY[7:]


def _same(got, want):
    assert type(got) is Tensor and type(want) is Tensor
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---- the slots agree with the methods ---------------------------------------------------------------
TENSORS = {
    "float32": np.array([[1.5, -2.0, 3.25], [4.0, 5.5, -6.0]], np.float32),
    "float64": np.array([2.0, 0.5, 1.5]),
    "int64": np.array([3, -4, 7], np.int64),
    "int32": np.array([[5], [2]], np.int32),
    "bool": np.array([True, False, True]),
    "complex64": np.array([1 + 2j, -1j, 3], np.complex64),
}
SCALARS = [True, 2, -3, 1.5, 0.25 + 1j, np.float32(2.5), np.int64(3)]


def _pairs(ops):
    for op, meth, rmeth in ops:
        for da in TENSORS:
            for db in TENSORS:
                yield op, meth, rmeth, da, db


def _expect_same_or_same_error(fn_slot, fn_method):
    try:
        want = fn_method()
    except Exception as e:  # noqa: BLE001  the slot must raise the same exception
        with pytest.raises(type(e)) as got:
            fn_slot()
        assert str(got.value) == str(e)
        return
    _same(fn_slot(), want)


@pytest.mark.parametrize("op,meth,rmeth,da,db", list(_pairs(BINARY)),
                         ids=lambda v: getattr(v, "__name__", v) if not isinstance(v, str) else v)
def test_tensor_pairs_match_the_methods(op, meth, rmeth, da, db):
    x, y = oar.to_tensor(TENSORS[da]), oar.to_tensor(TENSORS[db])
    _expect_same_or_same_error(lambda: op(x, y), lambda: getattr(Tensor, meth)(x, y))


@pytest.mark.parametrize("op,meth,rmeth", ARITH + BITWISE, ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("dtype", list(TENSORS))
def test_scalars_on_either_side_match_the_methods(op, meth, rmeth, dtype):
    x = oar.to_tensor(TENSORS[dtype])
    for s in SCALARS:
        _expect_same_or_same_error(lambda: op(x, s), lambda: getattr(Tensor, meth)(x, s))
        _expect_same_or_same_error(lambda: op(s, x), lambda: getattr(Tensor, rmeth)(x, s))


def test_values_against_numpy():
    a = np.array([[1.5, -2.0, 3.25], [4.0, 5.5, -6.0]], np.float32)
    b = np.array([2.0, 0.5, 1.5], np.float32)
    x, y = oar.to_tensor(a), oar.to_tensor(b)
    for op, _, _ in ARITH:
        with np.errstate(invalid="ignore"):  # negative ** fraction is NaN in both
            check(op(x, y), op(a, b), rtol=1e-5)  # broadcasting
        check(op(2.5, x), op(np.float32(2.5), a), rtol=1e-5)  # reflected, scalar on the left
    check(x @ oar.to_tensor(a.T), a @ a.T, rtol=1e-5)
    check(-x, -a)
    check(abs(x), np.abs(a))
    check(~oar.to_tensor([True, False]), [False, True])
    check(~oar.to_tensor(np.array([5, -1], np.int64)), np.array([-6, 0], np.int64))
    # Paddle's promotion with Python scalars: an int keeps the dtype, a float turns ints into float32
    assert (oar.to_tensor([1, 2]) + 1).dtype == oar.int64
    assert (1.5 + oar.to_tensor([1, 2])).dtype == oar.float32
    assert (oar.to_tensor([1], dtype="int32") + True).dtype == oar.int32
    assert (oar.to_tensor([1.0]) * 1j).dtype == oar.complex64
    assert (oar.to_tensor([1, 2]) / 2).dtype == oar.float32  # true division of ints


# ---- NotImplemented and foreign operands ------------------------------------------------------------
def test_numpy_arrays_and_unknown_types_raise_type_error_on_either_side():
    x = oar.to_tensor([1.0, 2.0])
    for other in (np.array([1.0, 2.0]), "a", [1, 2], None, object()):
        for op, _, _ in BINARY:  # numpy, str and list word it their own way
            with pytest.raises(TypeError):
                op(x, other)
            if isinstance(other, str) and op is operator.mod:
                continue  # 'a' % x is string formatting (a Tensor has __getitem__, so it is a mapping)
            with pytest.raises(TypeError):
                op(other, x)
    for op, _, _ in BINARY:  # both sides said NotImplemented: Python's own message
        with pytest.raises(TypeError, match="unsupported operand"):
            op(x, object())
        with pytest.raises(TypeError, match="unsupported operand"):
            op(None, x)
    with pytest.raises(TypeError):
        x @ np.ones(2)
    with pytest.raises(TypeError):
        pow(x, 2, 5)  # no modulus form


class _Other:
    """A foreign type that knows tensors: the Tensor's slot returns NotImplemented, so Python asks it."""

    def __add__(self, t):
        return ("add", t)

    def __radd__(self, t):
        return ("radd", t)

    def __rsub__(self, t):
        return ("rsub", t)

    def __rpow__(self, t):
        return ("rpow", t)


def test_foreign_reflected_methods_are_reached():
    x, o = oar.to_tensor([1.0]), _Other()
    assert (x + o) == ("radd", x)
    assert (o + x) == ("add", x)
    assert (x - o) == ("rsub", x)
    assert (x ** o) == ("rpow", x)
    with pytest.raises(TypeError):
        x * o  # _Other has no __rmul__
    y = x
    y += o  # no in-place form for it: Python falls back to x + o
    assert y == ("radd", x)


# ---- subclasses -------------------------------------------------------------------------------------
class Plain(Tensor):
    pass


class Custom(Tensor):
    def __add__(self, other):
        return "Custom.__add__"

    def __radd__(self, other):
        return "Custom.__radd__"

    def __iadd__(self, other):
        return "Custom.__iadd__"

    def __neg__(self):
        return "Custom.__neg__"


def test_subclasses():
    x = oar.to_tensor([1.0, 2.0])
    p = Plain(oar.to_tensor([3.0, 4.0]))
    for r in (x + p, p + x, p + 1, 1 + p, p + p):
        assert type(r) is Tensor
    check(x + p, [4.0, 6.0])
    check(p - x, [2.0, 2.0])
    check(2 - p, [-1.0, -2.0])
    check(-p, [-3.0, -4.0])
    q = p
    q += x  # in place, through the subclass's generic slot and Tensor.__iadd__
    assert q is p
    check(p, [4.0, 6.0])

    c = Custom(oar.to_tensor([1.0]))
    assert c + x == "Custom.__add__"
    assert x + c == "Custom.__radd__"  # a subclass's reflected method goes first (Python's rule)
    assert 1 + c == "Custom.__radd__"
    assert -c == "Custom.__neg__"
    d = c
    d += x
    assert d == "Custom.__iadd__"
    check(c - x, [0.0, -1.0])  # the methods it did not override are Tensor's

    # a Parameter is a Tensor subclass too
    w = oar.create_parameter([2], "float32", default_initializer=oar.nn.initializer.Constant(2.0))
    check(w * x, [2.0, 4.0])
    check(x * w, [2.0, 4.0])


# ---- in place ---------------------------------------------------------------------------------------
def test_in_place_operators_write_into_the_tensor():
    base = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = base[0]  # a view: writes go to base
    ident = id(x)
    x += oar.to_tensor([1.0, 1.0, 1.0])
    x -= 0.5
    x *= 2
    x /= 4
    x **= 2
    x //= 1
    x %= 3
    assert id(x) == ident
    want = np.arange(3, dtype=np.float32)
    want = (((((want + 1) - 0.5) * 2 / 4) ** 2) // 1) % 3
    check(x, want)
    check(base[0], want)

    m = oar.to_tensor(np.eye(2, dtype=np.float32))
    before = id(m)
    m @= oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])  # no in-place matmul in Paddle: rebinds
    assert id(m) != before
    check(m, [[1.0, 2.0], [3.0, 4.0]])
    b = oar.to_tensor([True, False])
    b_id = id(b)
    b &= oar.to_tensor([True, True])
    assert id(b) != b_id
    check(b, [True, False])


def test_in_place_errors_name_the_operator():
    i = oar.to_tensor([1, 2])
    with pytest.raises(TypeError, match=r"\+=: the result dtype float32 cannot be written in place into a int64"):
        i += 1.5
    check(i, np.array([1, 2], np.int64))
    s = oar.to_tensor([1.0])
    with pytest.raises(ValueError, match=r"\*=: the result shape \[3\] differs"):
        s *= oar.to_tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="unsupported operand"):
        s += "a"


# ---- errors -----------------------------------------------------------------------------------------
def test_core_errors_keep_their_python_exception_and_message():
    x, y = oar.to_tensor([1.0, 2.0]), oar.to_tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError) as slot:
        x + y
    with pytest.raises(ValueError) as method:
        Tensor.__add__(x, y)
    assert str(slot.value) == str(method.value)
    assert "add" in str(slot.value) and "broadcast" in str(slot.value)
    with pytest.raises(TypeError, match="bitwise_not"):
        ~oar.to_tensor([1.5])
    with pytest.raises(ValueError, match="does not fit in int64"):
        oar.to_tensor([1]) + 2 ** 70


@pytest.mark.skipif("sim" not in {d.split(":")[0] for d in oar.device.get_available_device()},
                    reason="needs the sim device")
def test_operands_on_two_devices():
    with pytest.raises(ValueError, match="one device"):
        oar.to_tensor([1.0]) + oar.to_tensor([1.0], place="sim:0")


# ---- autograd and the dispatcher's hooks ------------------------------------------------------------
def test_autograd_through_the_slots():
    a = np.array([0.5, -1.25, 2.0])
    b = np.array([1.5, 0.75, -0.5])
    check_grad(lambda x, y: (x + y) * x - y / (x * x + 1) + 2 - x, [a, b])
    check_grad(lambda x, y: -(3 ** x) + abs(y) ** 2 + 1 / (y + 4), [a, b])

    x = oar.to_tensor(a, stop_gradient=False)
    y = x * 1.0  # a non-leaf, so it may be written in place
    y += x
    y *= 3
    y.sum().backward()
    check(x.grad, np.full(3, 6.0))


def test_operators_are_recorded_by_the_profiler():
    a, b = oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, 4.0])

    def work():
        for _ in range(5):
            a + b
            2 * a
            -a
        c = a * 1.0
        c += b

    p = profiler.Profiler(on_trace_ready=lambda prof: None, targets=[profiler.ProfilerTarget.CPU])
    p.start()
    work()
    p.stop()
    names = [e.name for e in p.profiler_result.host_events("operator")]
    assert names.count("add") == 6 and names.count("multiply") == 6 and names.count("neg") == 5


def test_operators_under_auto_cast():
    x = oar.to_tensor(np.ones((2, 2), np.float32))
    xb = x.astype(oar.bfloat16)
    with oar.amp.auto_cast(dtype="bfloat16"):
        assert (xb + x).dtype == oar.float32  # promote list: mixed -> widest
        assert (xb * xb).dtype == oar.bfloat16
        assert (x @ x).dtype == oar.bfloat16  # white list
    assert (x @ x).dtype == oar.float32


# ---- the Python objects -----------------------------------------------------------------------------
def test_result_objects_support_weakrefs_attributes_and_gc():
    a, b = oar.to_tensor([1.0]), oar.to_tensor([2.0])
    c = a + b
    dead = []
    r = weakref.ref(c, lambda _: dead.append(True))
    c.name = "c"  # the object's __dict__
    c.extra = [c]  # a reference cycle through __dict__: only the garbage collector frees it
    assert c.name == "c" and r() is c
    del c
    gc.collect()
    assert r() is None and dead == [True]
    # Tensor(t) makes its object through pybind11 (registered); both kinds free the same way
    d = Tensor(a + b)
    rd = weakref.ref(d)
    del d
    assert rd() is None


def test_results_release_their_memory(device):
    a = oar.to_tensor(np.ones(1000, np.float32), place=device)
    oar.device.synchronize(device)
    before = oar.device.memory_allocated(device)
    kept = [a + i for i in range(50)] + [-a for _ in range(10)] + [a * a for _ in range(10)]
    assert oar.device.memory_allocated(device) >= before + 70 * 4000
    del kept
    oar.device.synchronize(device)
    assert oar.device.memory_allocated(device) == before
