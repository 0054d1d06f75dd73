"""Autograd from Python (Paddle 2.x semantics), on every available device: gradients against finite
differences, accumulation, retain_graph, oar.grad with create_graph, no_grad, hooks, detach, errors and
a Paddle-style training loop."""
import numpy as np
import pytest

import oar as paddle
import oar.nn.functional as F
from _util import check

RNG = np.random.default_rng(7)


def leaf(a, device):
    return paddle.to_tensor(np.asarray(a, np.float64), place=device, stop_gradient=False)


# ---- gradients against central finite differences (float64) ----------------------------------------
def mlp_loss(x, w1, b1, w2, b2):
    h = F.relu(paddle.matmul(x, w1) + b1)            # matmul, add with broadcasting, relu
    z = paddle.matmul(h, w2) + b2
    p = F.softmax(z, axis=-1)
    lp = F.log_softmax(z, axis=-1)
    return paddle.mean(paddle.exp(z * 0.1)) + paddle.sum(p * lp) + paddle.sum(h) * 0.01


def numeric_grads(f, arrays, eps=1e-6):
    out = []
    with paddle.no_grad():
        for i, a in enumerate(arrays):
            g = np.zeros_like(a)
            for k in np.ndindex(a.shape):
                plus = [b.copy() for b in arrays]
                minus = [b.copy() for b in arrays]
                plus[i][k] += eps
                minus[i][k] -= eps
                fp = f(*[paddle.to_tensor(b) for b in plus]).item()
                fm = f(*[paddle.to_tensor(b) for b in minus]).item()
                g[k] = (fp - fm) / (2 * eps)
            out.append(g)
    return out


def test_mlp_gradients_match_finite_differences(device):
    arrays = [RNG.uniform(-1, 1, s) for s in [(4, 3), (3, 5), (5,), (5, 2), (2,)]]
    arrays[1][np.abs(arrays[1]) < 0.05] = 0.3  # keep relu inputs away from the kink
    inputs = [leaf(a, device) for a in arrays]
    loss = mlp_loss(*inputs)
    assert loss.stop_gradient is False and not loss.is_leaf and loss.shape == []
    loss.backward()
    paddle.set_device(device)
    expected = numeric_grads(mlp_loss, arrays)
    for t, e in zip(inputs, expected):
        assert t.grad is not None and t.grad.place == t.place
        check(t.grad, e, rtol=1e-5, atol=1e-7, dtype=paddle.float64)


@pytest.mark.parametrize("name,fn,low,high", [
    ("exp", paddle.exp, -1, 1),
    ("relu", F.relu, 0.1, 1),
    ("softmax", lambda x: F.softmax(x, axis=1), -1, 1),
    ("log_softmax", lambda x: F.log_softmax(x, axis=0), -1, 1),
    ("mean", lambda x: paddle.mean(x, axis=1), -1, 1),
    ("pow", lambda x: paddle.pow(x, 3.0), 0.5, 2),
])
def test_single_op_gradients(device, name, fn, low, high):
    a = RNG.uniform(low, high, (3, 4))
    w = RNG.uniform(0.5, 1.5, np.shape(fn(paddle.to_tensor(a)).numpy()))
    f = lambda x: paddle.sum(fn(x) * paddle.to_tensor(w, place=x.place))  # noqa: E731
    x = leaf(a, device)
    f(x).backward()
    paddle.set_device(device)
    check(x.grad, numeric_grads(f, [a])[0], rtol=1e-5, atol=1e-7)


# ---- engine semantics ---------------------------------------------------------------------------------
def test_leaf_and_stop_gradient_defaults(device):
    c = paddle.to_tensor([1.0, 2.0], place=device)
    assert c.stop_gradient is True and c.is_leaf and c.grad is None
    x = leaf([1.0, 2.0], device)
    assert x.stop_gradient is False and x.is_leaf
    y = x * c
    assert y.stop_gradient is False and not y.is_leaf
    assert (c * c).stop_gradient is True
    assert (x > c).stop_gradient is True  # comparisons are not differentiable
    assert paddle.to_tensor(y).stop_gradient is True and paddle.to_tensor(y).is_leaf  # to_tensor copies as a leaf


def test_accumulation_and_clear_gradient(device):
    x = leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    (x * x).sum().backward()
    check(x.grad, [4.0, 8.0, 12.0])
    x.clear_gradient()  # Paddle's default: set_to_zero=True
    check(x.grad, [0.0, 0.0, 0.0])
    x.sum().backward()
    check(x.grad, [1.0, 1.0, 1.0])
    x.clear_gradient(set_to_zero=False)
    assert x.grad is None
    (x * 2.0).sum().backward()
    x.clear_grad()
    check(x.grad, [0.0, 0.0, 0.0])


def test_backward_with_grad_tensor_and_non_scalar_root(device):
    x = leaf([1.0, 2.0], device)
    (x * 3.0).backward()  # a non-scalar root: ones, as in Paddle
    check(x.grad, [3.0, 3.0])
    x.clear_gradient(False)
    (x * x).backward(paddle.to_tensor([1.0, 10.0], dtype="float64", place=device))
    check(x.grad, [2.0, 40.0])
    x.clear_gradient(False)
    paddle.autograd.backward([x.sum(), (x * x).sum()], [None, paddle.to_tensor(2.0, dtype="float64", place=device)])
    check(x.grad, [5.0, 9.0])


def test_retain_graph(device):
    x = leaf([1.0, 2.0], device)
    y = paddle.exp(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    check(x.grad, 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_grad_create_graph_second_derivative(device):
    x = leaf([0.5, -2.0, 1.5], device)
    y = (x * x * x).sum()
    (dx,) = paddle.grad(y, x, create_graph=True)
    check(dx, 3 * np.array([0.5, -2.0, 1.5]) ** 2)
    assert dx.stop_gradient is False
    ddx = paddle.grad(dx.sum(), [x])
    assert isinstance(ddx, list) and len(ddx) == 1
    check(ddx[0], 6 * np.array([0.5, -2.0, 1.5]))
    assert x.grad is None  # grad() does not accumulate
    # pow: d2/dx2 x^3 again, through backward on the first derivative
    z = paddle.pow(x, 3.0).sum()
    (gz,) = paddle.grad([z], [x], create_graph=True)
    gz.sum().backward()
    check(x.grad, 6 * np.array([0.5, -2.0, 1.5]))


# ---- ops without a gradient rule (docs/decisions.md: no silently wrong gradients) ---------------------
def test_double_backward_through_a_grad_kernel_without_rule_raises(device):
    """layer_norm's gradient is the layer_norm_grad kernel, which has no rule of its own: the first-order
    gradient is right and keeps its history, and differentiating it again raises naming the kernel
    (it used to be treated as a constant: a silently wrong second derivative)."""
    a, c = RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))

    def ln(v):  # float64 reference, weight 1, bias 0
        m = v.mean(-1, keepdims=True)
        return (v - m) / np.sqrt(((v - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    x = leaf(a, device)
    w, b = leaf(np.ones(4), device), leaf(np.zeros(4), device)
    ct = paddle.to_tensor(c, place=device)
    (g,) = paddle.grad([(F.layer_norm(x, [4], w, b) * ct).sum()], [x], create_graph=True)
    eps, num = 1e-6, np.zeros_like(a)
    for i in np.ndindex(*a.shape):
        p, m = a.copy(), a.copy()
        p[i] += eps
        m[i] -= eps
        num[i] = ((ln(p) - ln(m)) * c).sum() / (2 * eps)
    check(g, num, rtol=1e-5, atol=1e-7)
    assert not g.stop_gradient
    match = r"layer_norm_grad: has no gradient rule, so layer_norm cannot be differentiated twice"
    with pytest.raises(NotImplementedError, match=match):
        (g * g).sum().backward()
    (g,) = paddle.grad([(F.layer_norm(x, [4], w, b) * ct).sum()], [x], create_graph=True)
    with pytest.raises(NotImplementedError, match=match):
        paddle.grad([(g * g).sum()], [x])


def test_double_backward_through_max_pool_raises(device):
    """max_pool's gradient is the max_pool_grad kernel (no rule): with an incoming gradient that depends
    on x (here 2 * max_pool(x)), differentiating the gradient again raises naming it."""
    a = RNG.standard_normal((1, 1, 4, 4))
    x = leaf(a, device)
    (g,) = paddle.grad([(F.max_pool2d(x, 2) ** 2).sum()], [x], create_graph=True)
    win = a.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(4, 4).max(-1)  # the four window maxima
    np.testing.assert_allclose(np.sort(g.numpy()[g.numpy() != 0]), np.sort(2 * win))  # first order unchanged
    with pytest.raises(NotImplementedError, match="max_pool_grad: has no gradient rule, so max_pool cannot"):
        (g * x).sum().backward()


def _numeric_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in range(a.size):
        d = np.zeros_like(a)
        d.flat[i] = eps
        g.flat[i] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("values", [[2.0, 3.0, -1.5, 0.5], [2.0, 0.0, -1.5, 0.5], [0.0, 3.0, 0.0, 0.5]])
def test_prod_gradient_with_and_without_zeros(device, values):
    """prod's gradient is the product of the other elements: out / x away from zeros; at a slice's only
    zero the product of the rest; 0 where the slice has two zeros (no division by zero anywhere)."""
    a = np.array(values, dtype="float64").reshape(2, 2)
    for axis in (None, 1):
        x = leaf(a, device)
        y = paddle.prod(x) if axis is None else paddle.prod(x, axis=axis)
        (y * paddle.to_tensor(np.arange(1.0, y.size + 1).reshape(y.shape), dtype="float64", place=device)).sum().backward()
        w = np.arange(1.0, (a.size if axis is None else 2) + 1)
        f = (lambda v: np.prod(v)) if axis is None else (lambda v: float((np.prod(v, axis=1) * w).sum()))
        np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(f, a), rtol=1e-6, atol=1e-8)


def test_remainder_gradient(device):
    """remainder: dx = g, dy = -g * floor(x / y), as Paddle's elementwise_mod_grad."""
    a, b = np.array([5.5, -3.2, 7.1]), np.array([2.0, 1.5, -3.0])
    x, y = leaf(a, device), leaf(b, device)
    paddle.remainder(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(3))
    np.testing.assert_allclose(y.grad.numpy(), -np.floor(a / b))


def _prod_plus_sum(t):
    return paddle.prod(t) + t.sum()


def test_to_static_through_prod_matches_eager():
    x = leaf([2.0, 3.0], "cpu")
    f = paddle.jit.to_static(_prod_plus_sum)
    y = f(x)
    check(y, 11.0)
    y.backward()
    check(x.grad, [4.0, 3.0])


def test_non_differentiable_ops_stay_constants(device):
    """Comparisons, floor_divide, argmax and random draws have no gradient by nature: their results are
    constants (stop_gradient), and a loss using them differentiates through the rest as before."""
    a = np.array([0.4, -1.6, 2.5])
    x = leaf(a, device)
    for out in [paddle.floor_divide(x, x), x > 0, paddle.argmax(x), paddle.isnan(x),
                paddle.bernoulli(paddle.nn.functional.sigmoid(x))]:
        assert out.stop_gradient, out
    (paddle.floor_divide(x, x) * x + x).sum().backward()
    check(x.grad, np.floor(a / a) + 1)


def test_rounding_and_sign_have_zero_gradients(device):
    """As Paddle 2.6.2: floor/ceil/round/trunc/sign results are differentiable (stop_gradient False) with
    zero gradients (decision 97), so `paddle.floor(x).sum().backward()` works and leaves x.grad zeros."""
    a = np.array([0.4, -1.6, 2.5])
    for op in [paddle.floor, paddle.ceil, paddle.round, paddle.trunc, paddle.sign]:
        x = leaf(a, device)
        out = op(x)
        assert not out.stop_gradient, op
        out.sum().backward()
        check(x.grad, np.zeros(3))
    x = leaf(a, device)
    (paddle.floor(x) * x + paddle.sign(x) + paddle.round(x) * 2 + x).sum().backward()
    check(x.grad, np.floor(a) + 1)


def test_grad_options(device):
    x = leaf([1.0, 2.0], device)
    u = leaf([3.0], device)
    y = (x * x).sum()
    with pytest.raises(ValueError, match="allow_unused"):
        paddle.grad(y, [x, u], retain_graph=True)
    gx, gu = paddle.grad(y, [x, u], retain_graph=True, allow_unused=True)
    check(gx, [2.0, 4.0])
    assert gu is None
    (g,) = paddle.grad([y], [x], grad_outputs=[paddle.to_tensor(3.0, dtype="float64", place=device)])
    check(g, [6.0, 12.0])
    with pytest.raises(RuntimeError):  # retain_graph defaults to create_graph (False): the graph is freed
        paddle.grad(y, x)
    with pytest.raises(ValueError):
        paddle.grad(paddle.exp(x).sum(), x.detach())  # input without gradients


def test_no_grad_context_and_decorator(device):
    x = leaf([1.0, 2.0], device)
    assert paddle.is_grad_enabled()
    with paddle.no_grad():
        assert not paddle.is_grad_enabled()
        y = x * x
    assert paddle.is_grad_enabled()
    assert y.stop_gradient is True and y.is_leaf

    @paddle.no_grad()
    def f(a):
        return a * 2.0

    @paddle.no_grad
    def g(a):
        return a * 3.0

    assert f(x).stop_gradient is True and g(x).stop_gradient is True
    assert f.__name__ == "f" and paddle.is_grad_enabled()
    assert (x * 2.0).stop_gradient is False
    with paddle.autograd.no_grad():
        with paddle.set_grad_enabled(True):
            assert (x * 2.0).stop_gradient is False
        assert (x * 2.0).stop_gradient is True
    with paddle.set_grad_enabled(False):
        assert (x * 2.0).stop_gradient is True
    with pytest.raises(ZeroDivisionError):
        with paddle.no_grad():
            1 / 0
    assert paddle.is_grad_enabled()  # restored after an exception


def test_hooks(device):
    x = leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10.0)  # a leaf hook runs before accumulation
    h = x * x
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))  # None: keep the gradient
    h.retain_grads()
    h.sum().backward()
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    check(h.grad, [1.0, 1.0])
    check(x.grad, [20.0, 40.0])
    # a hook on an intermediate tensor changes what flows further back; remove() disables it
    z = leaf([1.0, 2.0], device)
    m = z * 3.0
    helper = m.register_hook(lambda g: g * 0.0 + 1.0)
    m.sum().backward(retain_graph=True)
    check(z.grad, [3.0, 3.0])
    assert helper.remove() is True
    z.clear_gradient(False)
    m.sum().backward()
    check(z.grad, [3.0, 3.0])
    # errors raised in a hook propagate; a hook on a tensor without gradients is refused
    w = leaf([1.0], device)
    w.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        (w * 2.0).sum().backward()
    with pytest.raises(RuntimeError):
        paddle.to_tensor([1.0]).register_hook(lambda g: g)


def test_detach(device):
    x = leaf([1.0, 2.0], device)
    y = x * 2.0
    d = y.detach()
    assert d.stop_gradient is True and d.is_leaf and d.grad is None
    check(d, [2.0, 4.0])
    assert d._is_shared_buffer_with(y)
    out = (x * d).sum()
    out.backward()
    check(x.grad, [2.0, 4.0])  # d is a constant
    d.stop_gradient = False  # a detached tensor is a leaf again
    assert d.stop_gradient is False


def test_errors(device):
    c = paddle.to_tensor([1.0, 2.0], place=device)
    with pytest.raises(RuntimeError, match="stop_gradient"):
        c.sum().backward()
    i = paddle.to_tensor([1, 2], place=device)
    i.stop_gradient = False  # Paddle accepts it on integers; no gradient ever flows (test_paddle_fidelity.py)
    assert i.stop_gradient is False and (i * 2).stop_gradient is True
    assert paddle.to_tensor([1, 2], place=device, stop_gradient=False).stop_gradient is False
    i.stop_gradient = True
    x = leaf([1.0], device)
    y = x * 2.0
    y.stop_gradient = True  # Paddle: cuts y from its history (test_inplace_autograd.py)
    assert y.is_leaf and y.stop_gradient
    with pytest.raises(ValueError):
        x.backward(paddle.to_tensor([1.0, 2.0], dtype="float64", place=device))  # wrong shape


def test_views_and_indexing_are_differentiable(device):
    x = leaf(np.arange(6.0).reshape(2, 3), device)
    y = (x[1, ::2] * 2.0).sum() + x.reshape([3, 2]).transpose([1, 0])[0].sum()
    y.backward()
    check(x.grad, [[1.0, 0.0, 1.0], [2.0, 1.0, 2.0]])


def test_training_loop_least_squares(device):
    paddle.set_device(device)
    rng = np.random.default_rng(3)
    xs = rng.normal(size=(32, 3)).astype(np.float32)
    true_w = np.array([[1.5], [-2.0], [0.5]], np.float32)
    ys = xs @ true_w + 0.25
    X, Y = paddle.to_tensor(xs), paddle.to_tensor(ys)
    w = paddle.to_tensor(np.zeros((3, 1), np.float32), stop_gradient=False)
    b = paddle.to_tensor(np.zeros((1,), np.float32), stop_gradient=False)
    lr = 0.1
    for _ in range(200):
        loss = paddle.mean((paddle.matmul(X, w) + b - Y) ** 2)
        loss.backward()
        with paddle.no_grad():
            w = (w - lr * w.grad).detach()
            b = (b - lr * b.grad).detach()
        w.stop_gradient = False
        b.stop_gradient = False
    assert loss.item() < 1e-4
    check(w, true_w, rtol=1e-2, atol=1e-2)
    check(b, [0.25], rtol=1e-2, atol=1e-2)


def test_secondary_outputs_carry_their_gradients(device):
    """layer_norm's mean/rstd and the softmax returned next to softmax_cross_entropy's loss are
    differentiable outputs: a loss built on them gets their part of the gradient (it used to be dropped)."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, size=(3, 4))
    w, b = np.ones(4), np.zeros(4)
    ln = paddle._C.Op("layer_norm")

    def stats_loss(v):
        mean, var = v.mean(axis=1), v.var(axis=1)
        return float((mean * 2.0).sum() + (1.0 / np.sqrt(var + 1e-5) * 3.0).sum())

    x = leaf(a, device)
    _, mean, rstd = ln(x, paddle.to_tensor(w, place=device), paddle.to_tensor(b, place=device), begin_norm_axis=1)
    (mean * 2.0 + rstd * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(stats_loss, a), rtol=1e-5, atol=1e-7)

    labels = np.array([1, 0, 3])
    x = leaf(a, device)
    _, sm = F.softmax_with_cross_entropy(x, paddle.to_tensor(labels.reshape(3, 1), place=device),
                                         return_softmax=True)
    (sm * paddle.to_tensor(np.arange(12.0).reshape(3, 4), place=device)).sum().backward()

    def sm_loss(v):
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return float((e / e.sum(axis=1, keepdims=True) * np.arange(12.0).reshape(3, 4)).sum())

    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(sm_loss, a), rtol=1e-5, atol=1e-7)
