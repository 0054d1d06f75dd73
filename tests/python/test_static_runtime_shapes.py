"""Run-time shapes in static programs (decision 96): extents that depend on a variable's value (a shape
variable, arange bounds, nonzero's count) are read when the program runs. Each program is run twice with
values giving different output shapes, against numpy."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import static

from _util import BatchFills


@pytest.fixture
def static_mode():
    oar.enable_static()
    yield
    oar.disable_static()


def _build(fn):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        outs = fn()
    return main, outs


def _run(main, feed, fetch):
    return static.Executor().run(main, feed=feed, fetch_list=list(fetch))


def test_fill_with_shape_variable(static_mode):
    def build():
        s = static.data("s", [2], "int32")
        n = static.data("n", [1], "int64")
        return s, (oar.ones(s), oar.zeros([n, 3], "int32"), oar.full(s, 2.5, "float64"))

    main, (s, outs) = _build(build)
    assert outs[0].shape == [-1, -1] and outs[1].shape == [-1, 3] and outs[2].shape == [-1, -1]
    for shape, n in (([2, 5], 4), ([3, 1], 0)):
        a, b, c = _run(main, {"s": np.array(shape, "int32"), "n": np.array([n], "int64")}, outs)
        np.testing.assert_array_equal(a, np.ones(shape, "float32"))
        np.testing.assert_array_equal(b, np.zeros([n, 3], "int32"))
        np.testing.assert_array_equal(c, np.full(shape, 2.5))
        assert a.dtype == np.float32 and b.dtype == np.int32 and c.dtype == np.float64


def test_full_with_variable_shape_and_value(static_mode):
    def build():
        s = static.data("s", [3], "int64")
        v = static.data("v", [1], "float32")
        return oar.full(s, v)

    main, out = _build(build)
    for shape, v in (([1, 2, 3], 7.0), ([4, 1, 2], -1.5)):
        r, = _run(main, {"s": np.array(shape), "v": np.array([v], "float32")}, [out])
        np.testing.assert_array_equal(r, np.full(shape, v, "float32"))


def test_expand_and_reshape_with_shape_variable(static_mode):
    def build():
        x = static.data("x", [1, 3], "float32")
        y = static.data("y", [2, 6], "float32")
        s = static.data("s", [2], "int64")
        r = static.data("r", [3], "int32")
        x.stop_gradient = False
        e = oar.expand(x, s)
        loss = (e * e).sum()
        gx, = static.gradients([loss], [x])
        return e, oar.reshape(y, r), oar.reshape(y, [r[0], -1]), gx

    main, outs = _build(build)
    assert outs[0].shape == [-1, 3] and outs[1].shape == [-1, -1, -1]
    x = np.array([[1.0, 2.0, 3.0]], "float32")
    y = np.arange(12, dtype="float32").reshape(2, 6)
    for rows, rs in ((4, [3, 2, 2]), (2, [0, 3, -1])):
        e, r1, r2, gx = _run(main, {"x": x, "y": y, "s": np.array([rows, 3]), "r": np.array(rs, "int32")}, outs)
        np.testing.assert_array_equal(e, np.broadcast_to(x, (rows, 3)))
        want = [2 if d == 0 else d for d in rs]  # 0 keeps y's extent there
        np.testing.assert_array_equal(r1, y.reshape(want))
        np.testing.assert_array_equal(r2, y.reshape(want[0] if want[0] > 0 else 2, -1))
        np.testing.assert_allclose(gx, 2 * rows * x)  # d/dx sum((broadcast x)^2)


def test_mean_gradient_over_two_runtime_extents(static_mode):
    """mean's gradient holds 1 / (r * c), a product of two value-dependent extents."""
    def build():
        x = static.data("x", [1, 1], "float32")
        s = static.data("s", [2], "int64")
        x.stop_gradient = False
        e = oar.expand(x, s)
        gx, = static.gradients([oar.mean(e * e)], [x])
        return e, gx

    main, outs = _build(build)
    x = np.array([[1.5]], "float32")
    for shape in ([3, 4], [5, 1]):
        e, gx = _run(main, {"x": x, "s": np.array(shape)}, outs)
        assert e.shape == tuple(shape)
        np.testing.assert_allclose(gx, 2 * x, rtol=1e-6)  # d/dx mean(x^2 everywhere)


def test_arange_and_linspace_with_variable_bounds(static_mode):
    def build():
        a = static.data("a", [1], "int64")
        b = static.data("b", [1], "int64")
        n = static.data("n", [1], "int32")
        f = static.data("f", [1], "float32")
        return (oar.arange(a, b, 2), oar.arange(b), oar.arange(0.5, f, 0.25), oar.linspace(0, f, n),
                oar.linspace(a, 1, 3, dtype="float64"))

    main, outs = _build(build)
    assert outs[0].shape == [-1] and outs[0].dtype == oar.int64 and outs[2].dtype == oar.float32
    assert outs[3].shape == [-1]
    for a, b, n, f in ((1, 8, 5, 2.0), (-3, 2, 2, 1.0)):
        got = _run(main, {"a": np.array([a]), "b": np.array([b]), "n": np.array([n], "int32"),
                          "f": np.array([f], "float32")}, outs)
        np.testing.assert_array_equal(got[0], np.arange(a, b, 2))
        np.testing.assert_array_equal(got[1], np.arange(b))
        np.testing.assert_allclose(got[2], np.arange(0.5, f, 0.25), rtol=1e-6)
        np.testing.assert_allclose(got[3], np.linspace(0, f, n), rtol=1e-6)
        np.testing.assert_allclose(got[4], np.linspace(a, 1, 3))


def test_nonzero_masked_select_and_bincount(static_mode):
    def build():
        x = static.data("x", [3, 4], "float32")
        k = static.data("k", [5], "int64")
        return (oar.nonzero(x), oar.nonzero(x, as_tuple=True)[1], oar.masked_select(x, x > 0),
                oar.bincount(k), oar.bincount(k, minlength=9))

    main, outs = _build(build)
    assert outs[0].shape == [-1, 2] and outs[2].shape == [-1] and outs[3].shape == [-1]
    rng = np.random.RandomState(0)
    for density in (0.3, 0.8):
        x = (rng.rand(3, 4) < density) * rng.randn(3, 4).astype("float32")
        k = rng.randint(0, 6 if density < 0.5 else 3, size=5)
        nz, col, ms, bc, bc9 = _run(main, {"x": x.astype("float32"), "k": k}, outs)
        np.testing.assert_array_equal(nz, np.argwhere(x))
        np.testing.assert_array_equal(col, np.argwhere(x)[:, 1:2])
        np.testing.assert_array_equal(ms, x[x > 0])
        np.testing.assert_array_equal(bc, np.bincount(k))
        np.testing.assert_array_equal(bc9, np.bincount(k, minlength=9))


def test_unique(static_mode):
    def build():
        x = static.data("x", [2, 4], "int64")
        return oar.unique(x, return_index=True, return_inverse=True, return_counts=True)

    main, outs = _build(build)
    assert [o.shape for o in outs] == [[-1], [-1], [8], [-1]]
    for x in (np.array([[3, 1, 3, 7], [1, 1, 0, 9]]), np.array([[5, 5, 5, 5], [5, 2, 5, 2]])):
        got = _run(main, {"x": x}, outs)
        want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w.reshape(-1))


def test_repeat_interleave_with_variable_repeats(static_mode):
    def build():
        x = static.data("x", [3, 2], "float32")
        r = static.data("r", [3], "int32")
        k = static.data("k", [1], "int64")
        return oar.repeat_interleave(x, r, axis=0), oar.repeat_interleave(x, k)

    main, outs = _build(build)
    assert outs[0].shape == [-1, 2] and outs[1].shape == [-1]
    x = np.arange(6, dtype="float32").reshape(3, 2)
    for r, k in (([1, 0, 3], 2), ([2, 2, 1], 0)):
        a, b = _run(main, {"x": x, "r": np.array(r, "int32"), "k": np.array([k])}, outs)
        np.testing.assert_array_equal(a, np.repeat(x, r, axis=0))
        np.testing.assert_array_equal(b, np.repeat(x.reshape(-1), k))


def test_adaptive_pool_with_variable_output_size(static_mode):
    def build():
        x = static.data("x", [2, 3, 6, 6], "float32")
        s = static.data("s", [2], "int64")
        x.stop_gradient = False
        avg = F.adaptive_avg_pool2d(x, s)
        mx = F.adaptive_max_pool2d(x, s)
        gx, = static.gradients([(avg * avg).sum()], [x])
        return avg, mx, gx

    main, outs = _build(build)
    assert outs[0].shape == [2, 3, -1, -1]
    x = np.random.RandomState(3).randn(2, 3, 6, 6).astype("float32")
    for size in ([2, 3], [3, 1]):
        avg, mx, gx = _run(main, {"x": x, "s": np.array(size)}, outs)
        oar.disable_static()
        xt = oar.to_tensor(x, stop_gradient=False)
        want = F.adaptive_avg_pool2d(xt, size)
        (want * want).sum().backward()
        np.testing.assert_allclose(avg, want.numpy(), rtol=1e-5)
        np.testing.assert_allclose(mx, F.adaptive_max_pool2d(xt, size).numpy(), rtol=1e-6)
        np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
        oar.enable_static()


def test_slice_with_variable_bounds(static_mode):
    def build():
        x = static.data("x", [4, 6], "float32")
        e = static.data("e", [1], "int64")
        se = static.data("se", [2], "int32")
        return oar.slice(x, [1], [1], [e]), oar.slice(x, [0, 1], se, [4, -1])

    main, outs = _build(build)
    assert outs[0].shape == [4, -1] and outs[1].shape == [-1, -1]
    x = np.arange(24, dtype="float32").reshape(4, 6)
    for e, se in ((5, [1, 2]), (-2, [-1, 0]), (100, [3, 7])):
        a, b = _run(main, {"x": x, "e": np.array([e]), "se": np.array(se, "int32")}, outs)
        np.testing.assert_array_equal(a, x[:, 1:e])
        np.testing.assert_array_equal(b, x[se[0]:4, se[1]:-1])


@pytest.mark.parametrize("align_corners", [True, False])
def test_affine_grid_with_shape_variable(static_mode, align_corners):
    def build():
        theta = static.data("theta", [2, 2, 3], "float32")
        s = static.data("s", [4], "int32")
        return F.affine_grid(theta, s, align_corners=align_corners)

    main, out = _build(build)
    theta = np.random.RandomState(1).randn(2, 2, 3).astype("float32")
    for h, w in ((3, 5), (4, 2)):
        got, = _run(main, {"theta": theta, "s": np.array([2, 1, h, w], "int32")}, [out])
        oar.disable_static()
        want = F.affine_grid(oar.to_tensor(theta), [2, 1, h, w], align_corners=align_corners).numpy()
        oar.enable_static()
        assert got.shape == (2, h, w, 2)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_several_unknown_extents_in_one_program(static_mode):
    """A batch extent and two data-dependent ones: later ops take their shapes from the values."""
    def build():
        x = static.data("x", [None, 3], "float32")
        n = static.data("n", [1], "int64")
        picked = oar.masked_select(x, x > 0)  # a third extent
        grid = oar.ones([n, 2]) * oar.reshape(oar.arange(n).astype("float32"), [-1, 1])
        return x.sum(axis=1), picked * 2.0 + picked.sum(), grid.mean(axis=1)

    main, outs = _build(build)
    rng = np.random.RandomState(2)
    for batch, n in ((2, 5), (6, 1)):
        x = rng.randn(batch, 3).astype("float32")
        s, p, g = _run(main, {"x": x, "n": np.array([n])}, outs)
        np.testing.assert_allclose(s, x.sum(1), rtol=1e-6)
        sel = x[x > 0]
        np.testing.assert_allclose(p, sel * 2 + sel.sum(), rtol=1e-5)
        np.testing.assert_allclose(g, np.arange(n, dtype="float32"))


def test_bad_shape_variable_errors(static_mode):
    with static.program_guard(static.Program(), static.Program()):
        f = static.data("f", [2], "float32")
        with pytest.raises(TypeError, match="int32/int64"):
            oar.ones(f)
        u = static.data("u", [None], "int64")
        with pytest.raises(ValueError, match="unknown length"):
            oar.zeros(u)
    main, out = _build(lambda: oar.ones(static.data("s", [2], "int64")))
    with pytest.raises(ValueError):  # a negative extent is refused by the op when the program runs
        _run(main, {"s": np.array([2, -3])}, [out])


def test_save_and_load_program_with_runtime_shapes(static_mode, tmp_path):
    main = static.Program()
    with static.program_guard(main, static.Program()):
        x = static.data("x", [None, 4], "float32")
        s = static.data("s", [2], "int64")
        y = oar.nonzero(x > 0.5)
        z = oar.expand(oar.reshape(x.sum(), [1, 1]), s)
    exe = static.Executor()
    prefix = str(tmp_path / "rt")
    with pytest.warns(UserWarning, match="an attribute comes from a variable at run time"):  # kept native
        static.save_inference_model(prefix, [x, s], [y, z], exe, program=main)
    prog, feeds, fetches = static.load_inference_model(prefix, exe)
    rng = np.random.RandomState(4)
    for batch, shape in ((3, [2, 5]), (5, [4, 1])):
        xs = rng.rand(batch, 4).astype("float32")
        got_y, got_z = exe.run(prog, feed={"x": xs, "s": np.array(shape)}, fetch_list=fetches)
        np.testing.assert_array_equal(got_y, np.argwhere(xs > 0.5))
        np.testing.assert_allclose(got_z, np.full(shape, xs.sum()), rtol=1e-5)


def test_jit_save_load_with_runtime_shapes(tmp_path):
    class Net(oar.nn.Layer):
        def forward(self, x):
            return oar.masked_select(x, x > 0) * 3.0

    net = Net()
    prefix = str(tmp_path / "net")
    with pytest.warns(UserWarning, match="an attribute comes from a variable at run time"):
        oar.jit.save(net, prefix, input_spec=[static.InputSpec([None, 3], "float32", "x")])
    loaded = oar.jit.load(prefix)
    rng = np.random.RandomState(5)
    for batch in (2, 7):
        x = rng.randn(batch, 3).astype("float32")
        got = loaded(oar.to_tensor(x)).numpy()
        np.testing.assert_allclose(got, x[x > 0] * 3.0, rtol=1e-6)
    from oar import inference
    config = inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    pred = inference.create_predictor(config)
    x = rng.randn(4, 3).astype("float32")
    out, = pred.run([x])
    np.testing.assert_allclose(out, x[x > 0] * 3.0, rtol=1e-6)


def test_jit_save_exports_batch_sized_fills_as_paddle_ops(tmp_path):
    import warnings
    net = BatchFills()
    prefix = str(tmp_path / "fills")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing kept native
        oar.jit.save(net, prefix, input_spec=[static.InputSpec([None, 3], "float32", "x")])
    loaded = oar.jit.load(prefix)
    types = [op._recorded_type for op in loaded.program().global_block().ops]
    assert not [t for t in types if t.startswith("oar.")], types
    fills = [op for op in loaded.program().global_block().ops if op.type == "fill_constant"]
    assert any("ShapeTensor" in op.input_names for op in fills)
    assert any("ShapeTensorList" in op.input_names for op in fills)
    rng = np.random.RandomState(6)
    for batch in (2, 7):
        x = rng.randn(batch, 3).astype("float32")
        np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), net(oar.to_tensor(x)).numpy(), rtol=1e-6)
