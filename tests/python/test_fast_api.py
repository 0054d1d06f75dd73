"""The C fast paths of everyday API calls (python/src/fast_api.cc, decision 134): each fast function
against the Python function it wraps (oar._fast.fallback): the same values, dtype, shape and gradients
on the common calls, and the same exception type and message on bad ones, which the fast path hands to
the Python function; in-place forms keep autograd's rules (a leaf that requires grad is refused, the
storage version is bumped); static-graph recording still works."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import _fast

RNG = np.random.default_rng(5)


def t(shape, dtype="float32", grad=False):
    a = RNG.standard_normal(shape).astype(dtype) if shape else np.array(RNG.standard_normal(), dtype)
    x = oar.to_tensor(a)
    x.stop_gradient = not grad
    return x


def same(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
        return
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def both(f, *args, **kwargs):
    """f's fast result and its fallback's; or the same error from both."""
    slow = _fast.fallback(f)
    assert slow is not f, "{} is not a fast function".format(f)
    try:
        want = slow(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)) as got:
            f(*args, **kwargs)
        assert str(got.value) == str(e)
        return None
    got = f(*args, **kwargs)
    same(got, want)
    return got


X = t([2, 3, 4])
X0 = t([])
Z = t([0, 3])

CALLS = [
    # reshape: -1 inferred, 0 (keep), tuples, an int, bad sizes, bools and floats refused by Python
    (oar.reshape, (X, [4, -1])), (oar.reshape, (X, (2, 12))), (oar.reshape, (X, [0, -1])),
    (oar.reshape, (X0, [1, 1])), (oar.reshape, (t([6]), 6)), (oar.reshape, (Z, [-1, 3])),
    (oar.reshape, (X, [5, -1])), (oar.reshape, (X, [-1, -1])), (oar.reshape, (X, [2.0, 12])),
    (oar.reshape, (X, [True, 24])), (oar.reshape, (X, "ab")), (oar.reshape, ([1, 2], [2])),
    # flatten: default, negative and middle axes, 0-d, out of range, start after stop, bad types
    (oar.flatten, (X,)), (oar.flatten, (X, 1)), (oar.flatten, (X, 0, 1)), (oar.flatten, (X, -2, -1)),
    (oar.flatten, (X0,)), (oar.flatten, (Z,)), (oar.flatten, (X, 3)), (oar.flatten, (X, 2, 1)),
    (oar.flatten, (X, 0, -4)), (oar.flatten, (X, 1.0)), (oar.flatten, (X, True)), (oar.flatten, ([1.0],)),
    # expand / broadcast_to: -1 keeps, new leading dims, 0-size, bad target
    (oar.expand, (t([2, 1]), [3, 2, 4])), (oar.expand, (t([2, 1]), [-1, 5])), (oar.expand, (t([1]), [0])),
    (oar.expand, (t([2, 3]), [2, 4])), (oar.expand, (t([2]), [-1, 2])), (oar.expand, (t([2]), [1])),
    (oar.broadcast_to, (t([3]), (2, 3))),
    # transpose / unsqueeze / squeeze
    (oar.transpose, (X, [2, 0, 1])), (oar.transpose, (X, [-1, 0, 1])), (oar.transpose, (X, [0, 0, 1])),
    (oar.transpose, (X, [0, 1])), (oar.transpose, (X, (1, 0, 2))),
    (oar.unsqueeze, (X, 0)), (oar.unsqueeze, (X, -1)), (oar.unsqueeze, (X, [0, 2])), (oar.unsqueeze, (X, [])),
    (oar.unsqueeze, (X, 5)), (oar.unsqueeze, (X0, 0)),
    (oar.squeeze, (t([1, 3, 1]),)), (oar.squeeze, (t([1, 3, 1]), -1)), (oar.squeeze, (t([1, 3, 1]), [0, 2])),
    (oar.squeeze, (t([1, 3, 1]), 1)), (oar.squeeze, (t([1, 3, 1]), 7)),
    # concat / stack: tuples, negative axes, mixed dtypes, mismatched shapes, empty, non-tensors
    (oar.concat, ([X, X], 1)), (oar.concat, ((X, X), -1)), (oar.concat, ([X, t([2, 3, 4], "float64")],)),
    (oar.concat, ([X, t([2, 2, 4])], 0)), (oar.concat, ([X],)), (oar.concat, ([],)), (oar.concat, ([X, 1.0],)),
    (oar.concat, ([Z, Z],)), (oar.concat, ([X, X], 3)),
    (oar.stack, ([X, X],)), (oar.stack, ((X, X), -1)), (oar.stack, ([X, X], 3)), (oar.stack, ([X, X], -4)),
    (oar.stack, ([X, X], 4)), (oar.stack, ([X, t([2, 3])],)), (oar.stack, ([],)), (oar.stack, ([X0, X0],)),
    (oar.stack, ([X, "x"],)), (oar.stack, ([X, X], 1.5)),
    # creation: dtypes by object, name and numpy, int and bool values, 0-size, bad shapes and dtypes
    (oar.full, ([2, 3], 1.5)), (oar.full, ([2, 3], 7, "int64")), (oar.full, ((2,), True, oar.bool)),
    (oar.full, ([0, 3], 1.0)), (oar.full, ([], 2.0)), (oar.full, ([2], 1.0, np.float64)),
    (oar.full, ([2, -1], 1.0)), (oar.full, ([2], 1.0, "float99")), (oar.full, ([2.0], 1.0)),
    (oar.full, ([2], "a")), (oar.full, (3, 2.5)), (oar.full, ([2], 1 << 60, "int64")),
    (oar.zeros, ([4],)), (oar.zeros, ([2, 2], "int32")), (oar.ones, ([2, 2],)), (oar.ones, ((3,), "float64")),
    (oar.ones, ([-2],)), (oar.zeros, ([2], "nope")),
    (oar.arange, (4,)), (oar.arange, (1, 7, 2)), (oar.arange, (0.5, 3)), (oar.arange, (5, 0, -1)),
    (oar.arange, (0, 1, 0.25, "float64")), (oar.arange, (4, None, 1, "int32")), (oar.arange, (0, 4, 0)),
    (oar.arange, (True,)), (oar.arange, ("a",)),
    # unary ops and reductions: the exp family casts integer inputs to float32
    (oar.exp, (X,)), (oar.exp, (oar.to_tensor([1, 2]),)), (oar.sqrt, (X0,)), (oar.exp, ([1.0],)),
    (oar.tanh, (Z,)), (oar.max, (X,)), (oar.max, (X, 1)), (oar.max, (X, [0, 2], True)), (oar.mean, (X, -1)),
    (oar.min, (X, 5)), (oar.mean, (oar.to_tensor([1, 2]),)), (oar.max, (X, oar.to_tensor([1]))),
    # cast: names, objects, numpy dtypes, the same dtype, bad names
    (oar.cast, (X, "float64")), (oar.cast, (X, oar.int32)), (oar.cast, (X, np.float16)), (oar.cast, (X, "float32")),
    (oar.cast, (X, "float99")), (oar.cast, (X, None)), (oar.cast, ([1.0], "float64")),
]


@pytest.mark.parametrize("i", range(len(CALLS)))
def test_fast_function_matches_python(i):
    f, args = CALLS[i]
    both(f, *args)


def test_keywords_bind_as_in_python():
    both(oar.flatten, X, stop_axis=1)
    both(oar.flatten, x=X, start_axis=1, stop_axis=2)
    both(oar.full, shape=[2], fill_value=3.0, dtype="float64")
    both(oar.arange, start=1, end=3)
    both(oar.max, X, keepdim=True, axis=0)
    both(oar.reshape, X, shape=[24], name="r")
    # unknown and repeated keywords: Python's TypeError, from the Python function
    both(oar.reshape, X, [24], bogus=1)
    both(oar.reshape, X, [24], shape=[24])
    both(oar.flatten, X, 0, -1, None, 5)


def test_methods_bind_self():
    x = t([2, 3])
    same(x.reshape([3, 2]), oar.reshape(x, [3, 2]))
    same(x.flatten(), oar.reshape(x, [6]))
    same(x.expand([4, 2, 3]), oar.expand(x, [4, 2, 3]))
    same(x.transpose([1, 0]), oar.transpose(x, [1, 0]))
    same(x.unsqueeze(0), oar.unsqueeze(x, 0))
    same(x.exp(), oar.exp(x))
    same(x.astype("float64"), oar.cast(x, "float64"))
    same(x.cast(oar.int64), oar.cast(x, "int64"))
    same(x.max(axis=1, keepdim=True), oar.max(x, 1, True))
    with pytest.raises(ValueError, match="flatten: start_axis 5 is out of range"):
        x.flatten(5)
    assert "new shape" in oar.Tensor.reshape.__doc__ or oar.Tensor.reshape.__doc__
    assert oar.reshape.__name__ == "reshape" and oar.Tensor.flatten.__name__ == "flatten"


def test_views_share_memory_and_gradients_flow():
    x = t([2, 3, 4], grad=True)
    ys = [x.reshape([4, 6]), x.flatten(1), x.transpose([2, 1, 0]), x.unsqueeze(1), x.expand([2, 2, 3, 4]),
          oar.stack([x, x], 1), oar.concat([x, x], -1), x.exp(), x.max(1)]
    total = ys[0].sum()
    for y in ys[1:]:
        total = total + y.sum()
    total.backward()
    g = x.grad.numpy()
    xs = x.numpy()
    am = np.argmax(xs, axis=1)
    want = 1 + 1 + 1 + 1 + 2 + 2 + 2 + np.exp(xs)
    want = want + (np.arange(3)[None, :, None] == am[:, None, :])
    np.testing.assert_allclose(g, want, rtol=1e-5)
    r = x.detach().reshape([24])
    r[0] = 100.0
    assert x.numpy().reshape(-1)[0] == 100.0  # a view


def test_creation_defaults_follow_default_dtype():
    oar.set_default_dtype("float64")
    try:
        assert oar.full([2], 1.0).dtype == oar.float64
        assert oar.zeros([2]).dtype == oar.float64 and oar.ones([2]).dtype == oar.float64
        assert oar.arange(0.0, 2.0).dtype == oar.float64 and oar.arange(3).dtype == oar.int64
        assert oar.randn([2]).dtype == oar.float64
    finally:
        oar.set_default_dtype("float32")
    assert oar.full([2], 1.0).dtype == oar.float32
    assert oar.randn([2, 3]).shape == [2, 3] and oar.rand([4], "float64").dtype == oar.float64
    oar.seed(3)
    a = oar.randn([5]).numpy()
    oar.seed(3)
    b = _fast.fallback(oar.randn)([5]).numpy()
    np.testing.assert_array_equal(a, b)  # the same global generator


@pytest.mark.parametrize("name", ["add_", "subtract_", "multiply_", "divide_", "pow_"])
def test_inplace_binary(name):
    a = t([2, 3])
    b = t([2, 3])
    ref = getattr(oar, name[:-1])(a, b).numpy()
    v = a._storage_version()
    view = a.reshape([6])
    out = getattr(a, name)(b)
    assert out is a
    np.testing.assert_allclose(a.numpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), ref.reshape(-1), rtol=1e-6)
    assert a._storage_version() > v
    getattr(a, name)(2)  # a Python scalar keeps a's dtype
    assert a.dtype == oar.float32


def test_inplace_errors_and_autograd_rules():
    a = t([2, 3])
    i = oar.to_tensor([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(TypeError, match="add_: the result dtype float32 cannot be written in place into a int64"):
        i.add_(a)
    with pytest.raises(TypeError, match="divide_: the result dtype"):
        i.divide_(i)
    with pytest.raises(ValueError, match="add_: the result shape \\[2, 2, 3\\] differs"):
        a.add_(t([2, 2, 3]))
    with pytest.raises(TypeError):
        a.add_("x")
    with pytest.raises(TypeError, match="exp_: the result dtype float32 cannot be written"):
        i.exp_()
    leaf = t([2], grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor"):
        leaf.add_(t([2]))
    with pytest.raises(RuntimeError, match="leaf tensor"):
        leaf.exp_()
    # on a non-leaf the write takes the history: d/dx of exp(2x) via h = 2x; h.exp_()
    x = t([3], grad=True)
    h = x * 2.0
    h.exp_()
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * x.numpy()), rtol=1e-5)
    y = t([3], grad=True)
    k = y * 3.0
    k.add_(y)
    k.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 4.0), rtol=1e-6)
    m = y * 1.0
    m.multiply_(y)  # m was saved for nothing; y was saved by the multiply: its backward is fine
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        q = y * 2.0
        r = q * q  # saves q
        q.add_(y)
        r.sum().backward()


def test_inplace_unary_matches_python():
    for name in ["exp_", "sqrt_", "abs_", "neg_", "tanh_", "sigmoid_", "floor_", "round_", "reciprocal_"]:
        a = t([2, 3]).abs() + 0.5
        ref = getattr(oar, name[:-1])(a).numpy()
        v = a._storage_version()
        assert getattr(a, name)() is a
        np.testing.assert_allclose(a.numpy(), ref, rtol=1e-6)
        assert a._storage_version() > v


@pytest.mark.parametrize("shape, ns", [([2, 3], [3]), ([2, 3, 4], [3, 4]), ([4], 4), ([2, 0, 3], [3])])
def test_layer_norm_matches_python(shape, ns):
    x = t(shape)
    both(F.layer_norm, x, ns)
    k = 1 if isinstance(ns, int) else len(ns)
    w, b = t(shape[-k:]), t(shape[-k:])
    both(F.layer_norm, x, ns, w, b, 1e-3)
    both(F.layer_norm, x, ns, weight=w, epsilon=0.1)
    both(F.layer_norm, x, [5])  # not the trailing dims: the Python error
    both(F.layer_norm, x, [])


def test_layer_norm_gradients():
    x, w, b = t([3, 4], grad=True), t([4], grad=True), t([4], grad=True)
    F.layer_norm(x, [4], w, b).sum().backward()
    grads = [p.grad.numpy() for p in (x, w, b)]
    for p in (x, w, b):
        p.clear_gradient()
    _fast.fallback(F.layer_norm)(x, [4], w, b).sum().backward()
    for g, p in zip(grads, (x, w, b)):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)


CE_CASES = [
    ([4, 5], [4], {}), ([4, 5], [4, 1], {}), ([2, 3, 5], [2, 3], {}), ([5], [], {}),
    ([4, 5], [4], {"reduction": "sum"}), ([4, 5], [4], {"reduction": "none"}), ([4, 5], [4, 1], {"reduction": "none"}),
    ([4, 5], [4], {"ignore_index": 1, "reduction": "sum"}), ([4, 5], [4], {"ignore_index": 1}),
    ([4, 5], [4], {"axis": 1}), ([5, 4], [4], {"axis": 0}), ([4, 5], [4], {"label_smoothing": 0.1}),
    ([4, 5], [4], {"use_softmax": False}), ([4, 5], [4], {"reduction": "avg"}), ([4, 5], [3], {}),
    ([4, 5], [4], {"axis": 2}), ([0, 5], [0], {"reduction": "sum"}),
]


@pytest.mark.parametrize("i", range(len(CE_CASES)))
def test_cross_entropy_matches_python(i):
    xs, ls, kw = CE_CASES[i]
    x = t(xs, grad=True)
    ax = kw.get("axis", -1)
    c = xs[ax] if -len(xs) <= ax < len(xs) else 2
    lab = oar.to_tensor(RNG.integers(0, c, size=ls).astype("int64"))
    got = both(F.cross_entropy, x, lab, **kw)
    if got is not None and got.size:
        got.sum().backward()
        g = x.grad.numpy()
        x.clear_gradient()
        _fast.fallback(F.cross_entropy)(x, lab, **kw).sum().backward()
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-6)
    both(F.cross_entropy, x, lab.astype("float32"), **kw)  # float labels: the Python TypeError


def test_cross_entropy_value():
    x = t([3, 4])
    lab = oar.to_tensor([0, 3, 1])
    a = x.numpy().astype(np.float64)
    lse = np.log(np.exp(a).sum(1))
    want = (lse - a[np.arange(3), [0, 3, 1]]).mean()
    np.testing.assert_allclose(F.cross_entropy(x, lab).numpy(), want, rtol=1e-5)


def test_static_program_records_the_fast_calls():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [None, 2, 3], "float32")
            lab = oar.static.data("lab", [None], "int64")
            h = oar.flatten(x, 1).reshape([-1, 6]) + oar.flatten(x).reshape([-1, 6])  # flatten over the unknown dim
            h = oar.concat([h, oar.full([1, 6], 1.0).expand([1, 6])], 0)[:-1]
            h = F.layer_norm(h, [6]) + oar.zeros([6]) + oar.arange(6).astype("float32")
            loss = F.cross_entropy(h, lab) + oar.stack([h.max(), h.exp().mean()]).sum()
        exe = oar.static.Executor()
        exe.run(startup)
        xv = RNG.standard_normal((3, 2, 3)).astype("float32")
        lv = np.array([0, 5, 2], "int64")
        (got,) = exe.run(main, feed={"x": xv, "lab": lv}, fetch_list=[loss])
    finally:
        oar.disable_static()
    xt, lt = oar.to_tensor(xv), oar.to_tensor(lv)
    h = F.layer_norm(2 * xt.reshape([-1, 6]), [6]) + oar.arange(6).astype("float32")
    want = F.cross_entropy(h, lt) + oar.stack([h.max(), h.exp().mean()]).sum()
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5)


def test_off_switch_runs_python(tmp_path):
    import subprocess
    import sys
    code = ("import oar; from oar import _fast; assert _fast.fallback(oar.reshape) is oar.reshape; "
            "print(type(oar.reshape).__name__)")
    out = subprocess.run([sys.executable, "-c", code], env=dict(__import__("os").environ, OAR_FAST_API="0"),
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "function"


def test_saved_program_with_unknown_batch(tmp_path):
    """jit.save traces with an unknown batch extent: the fast paths must record what the Python functions
    record (flatten keeps -1 for the unknown extent, not its recording sentinel)."""
    class Net(oar.nn.Layer):
        def forward(self, x):
            h = x.flatten(1) + oar.flatten(x, 0, 1).reshape([-1, 2, 3]).flatten(1)
            h = oar.concat([h, oar.stack([h, h], 1).reshape([-1, 12])[:, :6]], 0)
            return F.layer_norm(h.unsqueeze(0).squeeze(0), [6]).exp().max(1)

    net = Net()
    path = str(tmp_path / "net")
    oar.jit.save(net, path, input_spec=[oar.static.InputSpec([None, 2, 3], "float32", "x")])
    loaded = oar.jit.load(path)
    for batch in (1, 5):
        x = oar.to_tensor(RNG.standard_normal((batch, 2, 3)).astype("float32"))
        np.testing.assert_allclose(loaded(x).numpy(), net(x).numpy(), rtol=1e-5)


def test_linear_matches_python():
    w, b = t([3, 4]), t([4])
    for x in (t([2, 3]), t([3]), t([2, 5, 3]), t([0, 3])):
        both(F.linear, x, w, b)
        both(F.linear, x, w)
        both(F.linear, x, w, bias=None)
    both(F.linear, t([2, 4]), w, b)        # x's last dim is not weight's rows
    both(F.linear, t([2, 3]), t([3]), b)   # 1-D weight
    both(F.linear, t([2, 3]), w, t([5]))   # a bias that does not broadcast
    both(F.linear, t([2, 3], "float64"), w, b)  # promotion as the matmul op's
    both(F.linear, [1.0, 2.0, 3.0], w, b)
    x = t([2, 3], grad=True)
    wg, bg = t([3, 4], grad=True), t([4], grad=True)
    F.linear(x, wg, bg).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(wg.numpy().sum(1), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(bg.grad.numpy(), np.full(4, 2.0))
