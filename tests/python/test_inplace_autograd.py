"""In-place writes under autograd (x += y, x.add_(y), set_value), stop_gradient on op outputs, and
PyLayer (custom forward/backward in Python), on every device."""
import numpy as np
import pytest

import oar as paddle
from oar.autograd import PyLayer
from _util import check, check_grad

RNG = np.random.default_rng(11)


def leaf(a, device):
    return paddle.to_tensor(np.asarray(a, np.float64), place=device, stop_gradient=False)


# ---- in-place operators ------------------------------------------------------------------------------
def test_iadd_is_in_place_and_views_see_it(device):
    x = paddle.to_tensor([[1.0, 2.0], [3.0, 4.0]], place=device)
    v = x[0]
    ident = id(x)
    x += 10
    assert id(x) == ident
    check(x, [[11, 12], [13, 14]])
    check(v, [11, 12])
    x *= paddle.to_tensor([2.0, 1.0], place=device)  # broadcast that keeps x's shape
    check(x, [[22, 12], [26, 14]])
    x -= 2
    x /= 2
    check(x, [[10, 5], [12, 6]])


def test_in_place_operator_errors(device):
    x = paddle.to_tensor([1, 2, 3], place=device)  # int64
    with pytest.raises(TypeError, match="cannot be written in place"):
        x += 1.5
    y = paddle.to_tensor([1.0, 2.0], place=device)
    with pytest.raises(ValueError, match="differs from the in-place target"):
        y += paddle.ones([3, 2]).to(device)


def test_in_place_gradients_match_out_of_place(device):
    a, b = RNG.uniform(-1, 1, (3, 4)), RNG.uniform(-1, 1, (4,))

    def f(x, y):
        h = x * 2.0  # a non-leaf, so it may be modified in place
        h += y
        h *= 3.0
        h.exp_()
        return h

    check_grad(f, [a, b], device)


def test_in_place_on_leaf_that_requires_grad_is_refused(device):
    x = leaf([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="leaf tensor"):
        x += 1
    with paddle.no_grad():  # allowed: the optimizer's way
        x += 1
    check(x, [2, 3])


def test_modifying_a_tensor_saved_for_backward_raises_at_backward(device):
    x = leaf([0.5, 1.5], device)
    h = x * 1.0
    y = h * h  # saves h
    h2 = h  # another reference, same tensor
    with paddle.no_grad():
        h2 += 1  # bumps h's version
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()


def test_in_place_into_shared_memory_with_grad_is_refused(device):
    x = leaf([1.0, 2.0, 3.0], device)
    h = x * 1.0
    v = h[1:]
    with pytest.raises(NotImplementedError, match="shares its memory"):
        v += x[1:]


def test_set_value_is_a_data_write(device):
    w = leaf([1.0, 2.0], device)
    w.set_value(np.array([5.0, 6.0]))
    check(w, [5, 6])
    assert not w.stop_gradient
    with pytest.raises(ValueError, match="set_value"):
        w.set_value([1.0, 2.0, 3.0])
    x = paddle.zeros([2, 2])
    x.set_value(paddle.ones([2, 2]) * 3)
    check(x, np.full((2, 2), 3.0))
    x.zero_()
    check(x, np.zeros((2, 2)))
    x.fill_(7)
    check(x, np.full((2, 2), 7.0))


# ---- stop_gradient on an op's output -------------------------------------------------------------------
def test_stop_gradient_on_an_output_cuts_the_graph(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2
    assert not y.stop_gradient
    y.stop_gradient = True
    assert y.is_leaf
    z = (y * 3 + x).sum()
    z.backward()
    check(x.grad, [1, 1])  # only the direct path


# ---- PyLayer ----------------------------------------------------------------------------------------------
class Cube(PyLayer):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensor()
        return grad * 3 * x ** 2


class ScaleAdd(PyLayer):  # two tensor inputs, a non-tensor argument, two outputs
    @staticmethod
    def forward(ctx, x, y, alpha=2.0):
        ctx.alpha = alpha
        return x * alpha + y, x - y

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * ctx.alpha + g2, g1 - g2


def test_pylayer_gradients(device):
    check_grad(lambda x: Cube.apply(x), [RNG.uniform(-1, 1, (3, 2))], device)
    check_grad(lambda x, y: ScaleAdd.apply(x, y, alpha=0.5)[0] * ScaleAdd.apply(x, y)[1],
               [RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (2, 3))], device)


def test_pylayer_output_and_stop_gradient(device):
    x = leaf([1.0, 2.0], device)
    y = Cube.apply(x)
    assert not y.stop_gradient and not y.is_leaf
    check(y, [1, 8])
    with paddle.no_grad():
        z = Cube.apply(x)
    assert z.stop_gradient
    c = paddle.to_tensor([1.0, 2.0], place=device)  # no input needs a gradient
    assert Cube.apply(c).stop_gradient


def test_pylayer_second_order_through_create_graph(device):
    x = leaf([0.5, -1.0], device)
    y = Cube.apply(x).sum()
    (gx,) = paddle.grad(y, x, create_graph=True)
    check(gx, 3 * np.array([0.5, -1.0]) ** 2)
    gx.sum().backward()
    check(x.grad, 6 * np.array([0.5, -1.0]))


def test_pylayer_unused_gradient_is_materialized_as_zeros(device):
    seen = {}

    class Two(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen["g2"] = g2
            return g1 * 2 + g2 * 3

    x = leaf([1.0, 1.0], device)
    a, _ = Two.apply(x)
    a.sum().backward()
    check(seen["g2"], [0, 0])
    check(x.grad, [2, 2])


def test_pylayer_errors(device):
    class WrongCount(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class WrongShape(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g  # a 0-d gradient for a [2] input

    class Raises(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise KeyError("boom")

    x, y = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    with pytest.raises(ValueError, match="WrongCount.*returned 1 gradient"):
        WrongCount.apply(x, y).sum().backward()
    with pytest.raises(ValueError, match="WrongShape.*shape"):
        WrongShape.apply(x).backward()
    with pytest.raises(KeyError, match="boom"):
        Raises.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        out = Cube.apply(x).sum()
        out.backward()
        out.backward()


# ---- x[index] = value ----------------------------------------------------------------------------------
def test_setitem_gradients(device):
    a, v = RNG.uniform(-1, 1, (4, 5)), RNG.uniform(-1, 1, (2, 5))

    def basic(x, val):
        h = x * 1.5
        h[1:3] = val * 2.0          # a slice, value broadcast-free
        h[:, 0] = 7.0               # a scalar
        h[0, ::2] = val[0, :3]      # a strided region
        return h * h

    check_grad(basic, [a, v], device)

    def broadcast(x, row):
        h = x + 0.0
        h[::2] = row               # [5] broadcast over 2 rows
        return h.exp()

    check_grad(broadcast, [a, RNG.uniform(-1, 1, (5,))], device)


def test_setitem_into_constant_makes_it_depend_on_the_value(device):
    v = leaf([1.0, 2.0], device)
    buf = paddle.zeros([3, 2]).to(device)
    buf[1] = v * 3
    assert not buf.stop_gradient
    buf.sum().backward()
    check(v.grad, [3, 3])


def test_setitem_advanced_index_gradient(device):
    def f(x, val):
        h = x * 1.0
        h[paddle.to_tensor([0, 2], place=device)] = val
        return h * 2

    check_grad(f, [RNG.uniform(-1, 1, (4, 3)), RNG.uniform(-1, 1, (2, 3))], device)


def test_setitem_on_leaf_requiring_grad_is_refused(device):
    x = leaf([1.0, 2.0, 3.0], device)
    with pytest.raises(RuntimeError, match="leaf tensor"):
        x[0] = 5.0
    with paddle.no_grad():
        x[0] = 5.0
    check(x, [5, 2, 3])
