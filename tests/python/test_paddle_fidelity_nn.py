"""nn/tensor behaviours where oar follows Paddle 2.6.2, found by PaddleTest's nn folder (issue 14). Each
is checked against numpy, or against values recorded from the real paddlepaddle==2.6.2 wheel (noted)."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F


# ---- p = +-inf and 0 norms: Paddle's p_norm gradient ----------------------------------------------------

def _grad(fn, x):
    t = oar.to_tensor(x, stop_gradient=False)
    out = fn(t)
    out.sum().backward()
    return out.numpy(), t.grad.numpy()


@pytest.mark.parametrize("p", [np.inf, -np.inf])
def test_extreme_norm_gradient_goes_to_every_tie(p):
    x = np.array([[1.0, -5.0, 5.0, -1.0], [3.0, -3.0, 3.0, -1.0]])  # ties at both extremes
    out, g = _grad(lambda t: oar.linalg.norm(t, p=p, axis=-1), x)
    a = np.abs(x)
    ext = a.max(-1, keepdims=True) if p > 0 else a.min(-1, keepdims=True)
    np.testing.assert_allclose(out, ext[:, 0])
    # each element at the extreme gets sign(x) (max/min reductions split the gradient among ties instead)
    np.testing.assert_allclose(g, np.sign(x) * (a == ext))


def test_zero_norm_has_a_zero_gradient():
    x = np.array([[0.0, 2.0, -1.0], [0.0, 0.0, 4.0]])
    out, g = _grad(lambda t: oar.linalg.norm(t, p=0, axis=-1), x)
    np.testing.assert_allclose(out, [2.0, 1.0])
    np.testing.assert_array_equal(g, np.zeros_like(x))


def test_inf_norm_of_an_infinite_value_is_inf():
    out = oar.linalg.norm(oar.to_tensor([1.0, -np.inf]), p=np.inf)
    assert out.item() == np.inf


@pytest.mark.parametrize("p", [0, 1, 2, 3, np.inf, -np.inf])
def test_pairwise_distance_matches_numpy(p):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    d = x - y + 1e-6
    if p == 0:
        want = (d != 0).sum(-1)
    elif p in (np.inf, -np.inf):
        want = np.abs(d).max(-1) if p > 0 else np.abs(d).min(-1)
    else:
        want = (np.abs(d) ** p).sum(-1) ** (1.0 / p)
    out, g = _grad(lambda t: F.pairwise_distance(t, oar.to_tensor(y), p=p), x)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    if p in (np.inf, -np.inf):
        a = np.abs(d)
        ext = (a.max(-1) if p > 0 else a.min(-1))[:, None]
        np.testing.assert_allclose(g, np.sign(d) * (a == ext))


def test_pairwise_distance_inf_gradient_in_a_program():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [2, 3], "float64")
            x.stop_gradient = False
            out = oar.nn.PairwiseDistance(p=np.inf)(x, oar.zeros([2, 3], "float64"))
            g = oar.static.gradients(out, x)
            exe = oar.static.Executor()
            xv = np.array([[2.0, 2.0, -2.0], [0.5, 3.0, 3.0]])  # ties after adding epsilon
            o, gv = exe.run(main, feed={"x": xv}, fetch_list=[out, g])
    finally:
        oar.disable_static()
    d = xv + 1e-6
    np.testing.assert_allclose(o, np.abs(d).max(-1))
    np.testing.assert_allclose(gv, np.sign(d) * (np.abs(d) == np.abs(d).max(-1, keepdims=True)))


# ---- Parameter.set_value inside program_guard: a data write, never an op --------------------------------

def test_parameter_set_value_in_a_program_is_a_data_write():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [1, 2], "float32")
            lin = oar.nn.Linear(2, 3)
            y = lin(x)
            n_ops = len(main.global_block().ops)
            exe = oar.static.Executor()
            exe.run(startup)
            lin.weight.set_value(np.full([2, 3], 2.0, "float32"))
            lin.bias.set_value(np.arange(3, dtype="float32"))
            assert len(main.global_block().ops) == n_ops
            (out,) = exe.run(main, feed={"x": np.ones([1, 2], "float32")}, fetch_list=[y])
    finally:
        oar.disable_static()
    np.testing.assert_allclose(out, [[4.0, 5.0, 6.0]])


def test_set_value_of_a_program_variable_writes_the_scope():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [2], "float32")
            with pytest.raises(ValueError, match="has no value in the scope"):
                x.set_value(np.ones([2], "float32"), scope=oar.static.Scope())
            scope = oar.static.Scope()
            scope._scope.set("x", oar.to_tensor(np.zeros([2], "float32")))
            with pytest.raises(ValueError, match="does not match"):
                x.set_value(np.ones([3], "float32"), scope=scope)
            x.set_value(np.array([1.5, 2.5], "float32"), scope=scope)
            np.testing.assert_allclose(np.asarray(scope.find_var("x").get_tensor()), [1.5, 2.5])
    finally:
        oar.disable_static()


# ---- argument parsing ---------------------------------------------------------------------------------

def test_tuple_argument_is_its_first_tensor_in_eager_mode():
    # Paddle's parser reads paddle.mean((out, mask)) as paddle.mean(out) (recorded from Paddle 2.6.2: 2.0)
    a, b = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False), oar.to_tensor([10.0, 20.0])
    m = oar.mean((a, b))
    assert m.item() == 2.0
    m.backward()
    np.testing.assert_allclose(a.grad.numpy(), [1 / 3] * 3)
    with pytest.raises(TypeError, match="mean: input 'x' must be a Tensor, got list"):
        oar.mean([a, b])
    with pytest.raises(TypeError, match="got tuple"):
        oar.mean((1.0, 2.0))


def test_tuple_argument_is_refused_while_a_program_is_built():
    oar.enable_static()
    try:
        with oar.static.program_guard(oar.static.Program(), oar.static.Program()):
            x = oar.static.data("x", [3], "float32")
            with pytest.raises(TypeError, match="got tuple"):
                oar.mean((x, x))
    finally:
        oar.disable_static()


def test_arange_takes_one_element_arrays_and_tensors():
    got = oar.arange(np.array([1]), 20, np.array([[3]]), dtype="float32")
    np.testing.assert_array_equal(got.numpy(), np.arange(1, 20, 3, dtype=np.float32))
    got = oar.arange(oar.to_tensor([2]), oar.to_tensor(np.array([9])))
    assert got.dtype == oar.int64
    np.testing.assert_array_equal(got.numpy(), np.arange(2, 9))
    with pytest.raises(TypeError, match="arange: start must be a number or a one-element"):
        oar.arange(np.array([1, 2]), 5)


def test_eye_negative_size_is_a_type_error():
    with pytest.raises(TypeError, match="eye: num_rows must be a non-negative int, got -3"):
        oar.eye(-3)
    with pytest.raises(TypeError, match="num_columns"):
        oar.eye(3, -1)
    assert oar.eye(0).shape == [0, 0]


@pytest.mark.parametrize("fn", [oar.argmax, oar.argmin])
def test_argmax_argmin_dtype_none_raises(fn):
    with pytest.raises(ValueError, match="dtype must be 'int32' or 'int64', got None"):
        fn(oar.to_tensor([[1, 3], [2, 0]]), dtype=None)


def test_maxout_groups_one_raises():
    x = oar.rand([2, 4, 3, 3])
    with pytest.raises(ValueError, match="groups must be larger than 1, got 1"):
        F.maxout(x, groups=1)
    assert F.maxout(x, groups=2).shape == [2, 2, 3, 3]


# ---- values -------------------------------------------------------------------------------------------

def test_hardtanh_min_above_max_is_max_with_zero_gradient():
    x = np.array([-5.0, 0.0, 1.0, 5.0])
    out, g = _grad(lambda t: F.hardtanh(t, min=3.3, max=-3.3), x)
    np.testing.assert_allclose(out, np.minimum(np.maximum(x, 3.3), -3.3))
    np.testing.assert_array_equal(g, np.zeros(4))
    out = oar.nn.Hardtanh(min=2.0, max=-1.0)(oar.to_tensor(x))
    np.testing.assert_allclose(out.numpy(), np.full(4, -1.0))
    with pytest.raises(ValueError, match="clip"):  # clip itself refuses min > max, as Paddle's does
        oar.clip(oar.to_tensor(x), min=3.3, max=-3.3)


def _adaptive_avg_ref(x, oh, ow):
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = i * h // oh, -(-(i + 1) * h // oh)
            w0, w1 = j * w // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean((2, 3))
    return out


@pytest.mark.parametrize("size", [[2, 3], np.array([2, 3]), "tensor"])
def test_adaptive_avg_pool2d_output_size_as_tensor_or_array(size):
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 7))
    if isinstance(size, str):
        size = oar.to_tensor(np.array([2, 3], "int32"))
    out = F.adaptive_avg_pool2d(oar.to_tensor(x), output_size=size)
    np.testing.assert_allclose(out.numpy(), _adaptive_avg_ref(x, 2, 3), rtol=1e-12)
    out = oar.nn.AdaptiveAvgPool2D(output_size=size)(oar.to_tensor(x))
    np.testing.assert_allclose(out.numpy(), _adaptive_avg_ref(x, 2, 3), rtol=1e-12)


def _avg_pool_include_pad_ref(x, k, s, p, ceil):
    """Paddle's non-exclusive average: the window's sum over its size clipped to the padded input."""
    n, c, h, w = x.shape
    def out_len(L):
        num = L + 2 * p - k
        return (num + s - 1) // s + 1 if ceil else num // s + 1
    oh, ow = out_len(h), out_len(w)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, ws = i * s - p, j * s - p
            he, we = min(hs + k, h + p), min(ws + k, w + p)
            div = (he - hs) * (we - ws)
            out[:, :, i, j] = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)].sum((2, 3)) / div
    return out


@pytest.mark.parametrize("k,s,p", [(3, 3, 0), (3, 3, 1), (3, 2, 1), (2, 3, 0)])
def test_avg_pool2d_ceil_mode_not_exclusive(k, s, p):
    x = np.random.default_rng(3).standard_normal((1, 2, 4, 5))
    t = oar.to_tensor(x, stop_gradient=False)
    out = F.avg_pool2d(t, k, s, p, ceil_mode=True, exclusive=False)
    np.testing.assert_allclose(out.numpy(), _avg_pool_include_pad_ref(x, k, s, p, True), rtol=1e-12)
    # the gradient: each window spreads dy / divisor over its input elements
    out.sum().backward()
    eps, num = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = (_avg_pool_include_pad_ref(xp, k, s, p, True).sum()
                    - _avg_pool_include_pad_ref(xm, k, s, p, True).sum()) / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-6, atol=1e-8)
    # recorded from Paddle 2.6.2: arange(16) as [1, 1, 4, 4], kernel 3, stride 3, no padding
    got = F.avg_pool2d(oar.to_tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 3, 3, 0, ceil_mode=True, exclusive=False)
    np.testing.assert_allclose(got.numpy().ravel(), [5.0, 7.0, 13.0, 15.0])


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("kw", [dict(size=[6, 7]), dict(scale_factor=1.7), dict(size=[2, 3]),
                                dict(size=[5, 4], align_mode=1)])
def test_nearest_interpolate_on_integers_matches_float(dtype, kw):
    x = np.random.default_rng(4).integers(0, 100, (2, 2, 3, 5))
    got = F.interpolate(oar.to_tensor(x.astype(dtype)), **kw)
    ref = F.interpolate(oar.to_tensor(x.astype("float64")), **kw)
    assert got.dtype == oar.to_tensor(x.astype(dtype)).dtype
    np.testing.assert_array_equal(got.numpy(), ref.numpy().astype(dtype))


def test_nearest_interpolate_int64_keeps_large_values_exact():
    big = np.array([2 ** 62 + 1, 2 ** 62 + 3], dtype=np.int64).reshape(1, 1, 1, 2)
    got = F.interpolate(oar.to_tensor(big), size=[1, 4]).numpy().ravel()
    np.testing.assert_array_equal(got, big.ravel()[[0, 0, 1, 1]])


def test_static_data_declared_again_is_the_same_variable():
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            a = oar.static.data("x", [2, 3], "float32")
            b = oar.static.data("x", [2, 3], "float32")
            y, z = a + 1, b * 2
            (yv, zv) = oar.static.Executor().run(main, feed={"x": np.ones([2, 3], "float32")}, fetch_list=[y, z])
            np.testing.assert_allclose(yv, np.full([2, 3], 2.0))
            np.testing.assert_allclose(zv, np.full([2, 3], 2.0))
            with pytest.raises(ValueError, match="declared before with shape \\[2, 3\\]"):
                oar.static.data("x", [2, 4], "float32")
            with pytest.raises(ValueError, match="declared before"):
                oar.static.data("x", [2, 3], "float64")
    finally:
        oar.disable_static()


def test_spectral_norm_reads_its_vectors_by_name_in_a_program():
    # Paddle programs feed weight_u/weight_v under the parameters' names; the result must be the eager one
    rng = np.random.default_rng(5)
    x = rng.random((3, 4)).astype("float32")
    u, v = np.ones(3, "float32"), np.ones(4, "float32")
    eager = oar.nn.SpectralNorm([3, 4])
    eager.weight_u.set_value(u)
    eager.weight_v.set_value(v)
    want = eager(oar.to_tensor(x)).numpy()
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            data = oar.static.data("data", [3, 4], "float32")
            sn = oar.nn.SpectralNorm([3, 4])
            out = sn(data)
            exe = oar.static.Executor()
            exe.run(startup)
            (got,) = exe.run(main, feed={"data": x, sn.weight_u.name: u, sn.weight_v.name: v}, fetch_list=[out])
    finally:
        oar.disable_static()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # numpy: one power iteration from u, v
    v1 = x.T @ u / np.linalg.norm(x.T @ u)
    u1 = x @ v1 / np.linalg.norm(x @ v1)
    np.testing.assert_allclose(want, x / (u1 @ x @ v1), rtol=1e-5)


def test_nonzero_as_tuple_gives_columns():
    a = np.array([[1.0, 0.0, 4.0], [0.0, 2.0, 0.0]])
    got = oar.nonzero(oar.to_tensor(a), as_tuple=True)
    assert len(got) == 2
    for g, want in zip(got, np.nonzero(a)):
        assert g.shape == [3, 1]  # Paddle's [count, 1], not numpy's [count]
        np.testing.assert_array_equal(g.numpy()[:, 0], want)
    rows, cols = oar.where(oar.to_tensor(a) > 1)
    np.testing.assert_array_equal(np.concatenate([rows.numpy(), cols.numpy()], 1), np.argwhere(a > 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_linspace_of_one_value_is_start(dtype):
    np.testing.assert_array_equal(oar.linspace(3, 9, 1, dtype=dtype).numpy(), np.linspace(3, 9, 1).astype(dtype))
    np.testing.assert_array_equal(oar.linspace(9, 3, 1, dtype=dtype).numpy(), [9])
    np.testing.assert_allclose(oar.linspace(3, 9, 4, dtype=dtype).numpy(), np.linspace(3, 9, 4).astype(dtype))


def test_full_with_a_fill_value_variable():
    np.testing.assert_array_equal(oar.full([2, 3], np.array([1.5], "float32")).numpy(), np.full([2, 3], 1.5))
    with pytest.raises(ValueError, match="full: fill_value must be a number or a one-element"):
        oar.full([2], np.array([1.0, 2.0]))
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            v = oar.static.data("v", [1], "float32")
            x = oar.static.data("x", [-1, 2], "float32")
            a = oar.full([3, 2], v, dtype="float32")
            b = oar.full((2,), v, dtype="int64")
            c = oar.full_like(x, v)
            with pytest.raises(ValueError, match="one element"):
                oar.full([2], x)
            got = oar.static.Executor().run(main, feed={"v": np.array([2.7], "float32"),
                                                        "x": np.zeros([4, 2], "float32")}, fetch_list=[a, b, c])
    finally:
        oar.disable_static()
    np.testing.assert_allclose(got[0], np.full([3, 2], 2.7, "float32"))
    assert got[1].dtype == np.int64
    np.testing.assert_array_equal(got[1], [2, 2])  # cast as Paddle: 2.7 -> 2
    np.testing.assert_allclose(got[2], np.full([4, 2], 2.7, "float32"))


@pytest.mark.parametrize("lo,hi", [(True, True), (True, False), (False, True)])
def test_clip_with_bound_variables(lo, hi):
    # Paddle's clip kernel: x < min ? min : x > max ? max : x, gradient dy where min < x < max
    xv = np.array([[-2.0, 1.0, 3.0, 5.0], [np.nan, 7.0, 1.5, 0.0]], "float32")
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            x = oar.static.data("x", [2, 4], "float32")
            x.stop_gradient = False
            mn = oar.static.data("mn", [1], "float32") if lo else None
            mx = oar.static.data("mx", [1], "float64") if hi else None  # cast to x's dtype
            y = oar.clip(x, mn, mx)
            g = oar.static.gradients(y, x)
            feed = {"x": xv}
            if lo:
                feed["mn"] = np.array([1.0], "float32")
            if hi:
                feed["mx"] = np.array([5.0])
            out, grad = oar.static.Executor().run(main, feed=feed, fetch_list=[y, g])
    finally:
        oar.disable_static()
    a, b = (1.0 if lo else -np.inf), (5.0 if hi else np.inf)
    np.testing.assert_array_equal(out, np.where(xv < a, a, np.where(xv > b, b, xv)))
    np.testing.assert_array_equal(grad, ((xv > a) & (xv < b)).astype("float32"))
    np.testing.assert_array_equal(oar.clip(oar.to_tensor(xv), np.array([a]), np.array([b])).numpy(),
                                  np.where(xv < a, a, np.where(xv > b, b, xv)))


def test_numel_and_shape():
    x = oar.ones([4, 5])
    for n in (oar.numel(x), x.numel()):
        assert n.shape == [] and n.dtype == oar.int64 and n.item() == 20
    s = oar.shape(x)
    assert s.dtype == oar.int32
    np.testing.assert_array_equal(s.numpy(), [4, 5])
    with pytest.raises(TypeError, match="shape: input must be a Tensor"):
        oar.shape([1, 2])
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            d = oar.static.data("d", [-1, 5, -1], "float32")  # measured when the program runs
            e = oar.static.data("e", [2, 5], "float32")
            fetch = [oar.numel(d), oar.numel(e), oar.shape(d), oar.shape(e)]
            got = oar.static.Executor().run(main, feed={"d": np.zeros([3, 5, 3], "float32"),
                                                        "e": np.zeros([2, 5], "float32")}, fetch_list=fetch)
    finally:
        oar.disable_static()
    assert [int(g) for g in got[:2]] == [45, 10]
    np.testing.assert_array_equal(got[2], [3, 5, 3])
    np.testing.assert_array_equal(got[3], [2, 5])


def test_broadcast_shape_is_complex_element_size():
    assert oar.broadcast_shape([2, 1, 3], [1, 3, 1]) == [2, 3, 3]
    assert oar.broadcast_shape([4], [2, 1]) == [2, 4]
    with pytest.raises(ValueError, match="not broadcastable"):
        oar.broadcast_shape([2, 3], [4, 3])
    x = oar.ones([2])
    assert not oar.is_complex(x) and not x.is_complex()
    assert oar.is_complex(oar.ones([2], dtype="complex64"))
    with pytest.raises(TypeError, match="is_complex"):
        oar.is_complex(np.ones(2))
    for dtype in ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                  "float64", "complex64", "complex128"]:
        want = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        assert oar.ones([2], dtype=dtype).element_size() == want


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_bitwise_operators(dtype):
    # Paddle's &, |, ^, ~ are the bitwise ops (they were the logical ones: [3] & [10] gave True)
    rng = np.random.default_rng(6)
    if dtype == "bool":
        x, y = rng.random(12) > 0.5, rng.random(12) > 0.5
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, 12, dtype=dtype, endpoint=True)
        y = rng.integers(info.min, info.max, 12, dtype=dtype, endpoint=True)
    a, b = oar.to_tensor(x), oar.to_tensor(y)
    for got, want in [(a & b, x & y), (a | b, x | y), (a ^ b, x ^ y), (~a, ~x)]:
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_bitwise_operators_refuse_floats():
    f = oar.to_tensor([1.5])
    with pytest.raises(TypeError, match="bitwise_and: x.dtype float32 is not supported"):
        f & f
    with pytest.raises(TypeError, match="bitwise_not"):
        ~f


def test_reduction_axis_as_tensor():
    x = np.arange(12.0).reshape(3, 4)
    t = oar.to_tensor(x)
    np.testing.assert_array_equal(oar.max(t, axis=oar.to_tensor(1)).numpy(), x.max(1))
    np.testing.assert_array_equal(oar.min(t, axis=oar.to_tensor([1])).numpy(), x.min(1))
    np.testing.assert_array_equal(oar.mean(t, axis=oar.to_tensor(-2)).numpy(), x.mean(0))
    np.testing.assert_array_equal(oar.all(t, axis=oar.to_tensor(0)).numpy(), x.all(0))


def test_split_axis_must_be_an_int():
    with pytest.raises(TypeError, match="split: axis must be an int, got \\[1\\]"):
        oar.split(oar.ones([3, 6]), 3, axis=[1])
    with pytest.raises(IndexError, match="out of range"):
        oar.split(oar.ones([3, 6]), 3, axis=2)


def test_increment():
    x = oar.to_tensor([1.5])
    y = oar.increment(x, 2.0)
    assert y is x and x.numpy().tolist() == [3.5]
    i = oar.to_tensor([3], dtype="int32")
    assert oar.increment(i).numpy().tolist() == [4] and i.dtype == oar.int32
    with pytest.raises(ValueError, match="increment: x must have one element"):
        oar.increment(oar.ones([2]))
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            v = oar.static.data("v", [1], "float32")
            out = oar.increment(v, 2.0)
            (got,) = oar.static.Executor().run(main, feed={"v": np.array([4.5], "float32")}, fetch_list=[out])
    finally:
        oar.disable_static()
    assert got.tolist() == [6.5]


def _histogram_ref(x, bins, lo, hi):
    """Paddle's binning: int((x - lo) * bins / (hi - lo)) in x's dtype, the last bin closed."""
    x = x.ravel()
    if lo == hi == 0:
        lo, hi = np.nanmin(x), np.nanmax(x)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    out = np.zeros(bins, np.int64)
    for v in x[(x >= lo) & (x <= hi)]:
        if np.issubdtype(x.dtype, np.integer):
            b = int((np.int64(v) - lo) * bins // (hi - lo))
        else:
            t = x.dtype.type
            b = int(t(t(t(v) - t(lo)) * t(bins)) / t(t(hi) - t(lo)))
        out[min(b, bins - 1)] += 1
    return out



@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("bins,lo,hi", [(100, 0, 0), (4, 0, 0), (4, -4, 0), (4, -2, 5), (7, 4, 5), (3, -41, -5)])
def test_histogram_matches_paddles_binning(dtype, bins, lo, hi):
    x = np.random.default_rng(7).uniform(-4, 6, (5, 6)).astype(dtype)
    got = oar.histogram(oar.to_tensor(x), bins=bins, min=lo, max=hi)
    assert got.dtype == oar.int64 and got.shape == [bins]
    np.testing.assert_array_equal(got.numpy(), _histogram_ref(x, bins, lo, hi))


def test_histogram_edges():
    # recorded from Paddle 2.6.2
    assert oar.histogram(oar.to_tensor([1, 1, 1]), bins=3).numpy().tolist() == [0, 3, 0]
    assert oar.histogram(oar.to_tensor([1.0, np.nan, 2.0]), bins=2).numpy().tolist() == [1, 1]
    got = oar.histogram(oar.to_tensor(np.array([0, 3, 7, 10, 10], "int32")), bins=3, min=0, max=10)
    assert got.numpy().tolist() == [2, 0, 3]
    got = oar.histogram(oar.to_tensor(np.array([0.1, 0.3, 0.7, 1.0], "float32")), bins=10, min=0, max=1)
    assert got.numpy().tolist() == [0, 1, 0, 1, 0, 0, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="bins must be an int >= 1"):
        oar.histogram(oar.ones([2]), bins=0)
    with pytest.raises(ValueError, match="max must be >= min"):
        oar.histogram(oar.ones([2]), bins=4, min=1)
    oar.enable_static()
    try:
        main = oar.static.Program()
        with oar.static.program_guard(main, oar.static.Program()):
            d = oar.static.data("d", [2, 3], "float32")
            h = oar.histogram(d, bins=3)
            (got,) = oar.static.Executor().run(main, feed={"d": np.array([[0.5, 1, 2], [2, -1, 3]], "float32")},
                                               fetch_list=[h])
    finally:
        oar.disable_static()
    assert got.tolist() == [1, 2, 3]


def test_nearest_source_index_is_computed_in_float():
    # recorded from Paddle 2.6.2: 10 -> 12 columns; ratio 10/12 as float, 0.8333333f * 6 rounds to 5.0f
    x = oar.to_tensor(np.arange(10, dtype="float64").reshape(1, 1, 1, 10))
    got = F.interpolate(x, size=[1, 12], mode="nearest").numpy().ravel()
    np.testing.assert_array_equal(got, [0, 0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9])
    got = oar.nn.UpsamplingNearest2D(size=[1, 7])(x).numpy().ravel()
    np.testing.assert_array_equal(got, [0, 1, 2, 4, 5, 7, 8])


def test_flatten_argument_errors_are_value_errors():
    with pytest.raises(ValueError, match="flatten: x must be a Tensor, got list"):
        oar.flatten([2, 2, 3])
    with pytest.raises(ValueError, match="flatten: start_axis must be an int, got 0.0"):
        oar.flatten(oar.ones([2, 2, 3]), start_axis=0.0, stop_axis=2)
    assert oar.flatten(oar.ones([2, 2, 3]), 1, 2).shape == [2, 6]


@pytest.mark.parametrize("fn", ["exp", "expm1", "log", "log1p", "log2", "log10"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_exp_log_family_of_integers_is_float32(fn, dtype):
    x = np.array([[1, 2], [3, 4]], dtype)
    got = getattr(oar, fn)(oar.to_tensor(x))
    assert got.dtype == oar.float32
    np.testing.assert_allclose(got.numpy(), getattr(np, fn)(x.astype(np.float64)), rtol=1e-6)
    with pytest.raises(TypeError, match=fn):
        getattr(oar, fn)(oar.to_tensor(x.astype("int8")))  # Paddle has no kernel either


@pytest.mark.parametrize("q", [0.5, 0.0, 1.0, 0.37, [0.25, 0.5, 0.75]])
@pytest.mark.parametrize("axis,keepdim", [(None, False), (1, False), (2, True), ([0, 2], False), ([0, 2], True)])
def test_quantile_matches_numpy(q, axis, keepdim):
    x = np.random.default_rng(8).standard_normal((3, 4, 5))
    got = oar.to_tensor(x).quantile(q=q, axis=axis, keepdim=keepdim)
    want = np.quantile(x, q, axis=None if axis is None else tuple(axis) if isinstance(axis, list) else axis,
                       keepdims=keepdim)
    assert got.shape == list(want.shape)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_quantile_nan_and_gradient():
    x = np.array([[1.0, 5.0, 2.0, 8.0], [3.0, np.nan, 1.0, 0.0]])
    np.testing.assert_array_equal(oar.quantile(oar.to_tensor(x), 0.5, axis=1).numpy(), [3.5, np.nan])
    y = oar.to_tensor(np.array([4.0, 1.0, 3.0, 2.0]), stop_gradient=False)
    oar.quantile(y, 0.5).backward()  # the mean of the two middle values (2 and 3)
    np.testing.assert_allclose(y.grad.numpy(), [0, 0, 0.5, 0.5])
    with pytest.raises(ValueError, match="quantile: q must be"):
        oar.quantile(y, 1.5)


def test_median_of_a_row_with_nan_is_nan():
    x = np.array([[1.0, np.nan, 3.0, 0.0], [4.0, 5.0, 6.0, 7.0]])
    np.testing.assert_array_equal(oar.median(oar.to_tensor(x), axis=1).numpy(), np.median(x, axis=1))
    assert np.isnan(oar.median(oar.to_tensor(x)).item())
    np.testing.assert_array_equal(oar.median(oar.to_tensor(x), axis=0, keepdim=True).numpy(),
                                  np.median(x, axis=0, keepdims=True))
