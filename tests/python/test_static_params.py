"""Static mode as Paddle 2.6.2 has it: static.create_parameter inside program_guard, and Executor.run
fetching Parameters, other concrete tensors and nested fetch lists."""
import numpy as np
import pytest

import oar
from oar.nn.initializer import Constant


@pytest.fixture
def static_mode():
    oar.enable_static()
    try:
        yield
    finally:
        oar.disable_static()


def test_create_parameter_in_program_guard(static_mode):
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        w = oar.static.create_parameter([3], "float32", name="w", default_initializer=Constant(1.5))
        x = oar.static.data("x", [2, 3], "float32")
        y = x * w
    assert w.name == "w" and w.shape == [3] and not w.stop_gradient
    assert "w" in main.global_block().vars
    assert [p.name for p in main.all_parameters()] == ["w"]
    exe = oar.static.Executor(oar.CPUPlace())
    exe.run(startup)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    wv, yv = exe.run(main, feed={"x": xv}, fetch_list=[w, y])
    np.testing.assert_array_equal(wv, np.full(3, 1.5, np.float32))
    np.testing.assert_array_equal(yv, xv * 1.5)
    # A fetched parameter is a copy: writing to it leaves the parameter alone.
    wv[0] = 0
    (again,) = exe.run(main, feed={"x": xv}, fetch_list=[w])
    np.testing.assert_array_equal(again, np.full(3, 1.5, np.float32))


def test_top_level_create_parameter_and_fetch_before_use(static_mode):
    main = oar.static.Program()
    with oar.static.program_guard(main, oar.static.Program()):
        b = oar.create_parameter([2, 2], "float64", default_initializer=Constant(-2.0))
    exe = oar.static.Executor(oar.CPUPlace())
    (bv,) = exe.run(main, fetch_list=[b])  # no op reads it: still a variable of the program
    np.testing.assert_array_equal(bv, np.full((2, 2), -2.0))
    assert bv.dtype == np.float64


def test_fetch_layer_parameters_and_nested_lists(static_mode):
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        x = oar.static.data("x", [4, 3], "float32")
        fc = oar.nn.Linear(3, 2)
        y = fc(x)
        loss = y.mean()
    exe = oar.static.Executor(oar.CPUPlace())
    exe.run(startup)
    xv = np.random.RandomState(0).rand(4, 3).astype(np.float32)
    # Paddle flattens one level of lists in fetch_list.
    out = exe.run(main, feed={"x": xv}, fetch_list=[[fc.weight, fc.bias], loss])
    assert len(out) == 3
    wv, bv, lv = out
    np.testing.assert_allclose(wv, fc.weight.numpy())
    np.testing.assert_allclose(lv, (xv @ wv + bv).mean(), rtol=1e-6)
    # By name, too.
    (w2,) = exe.run(main, feed={"x": xv}, fetch_list=[fc.weight.name])
    np.testing.assert_array_equal(w2, wv)


def test_fetch_after_an_optimizer_step_sees_the_update(static_mode):
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        x = oar.static.data("x", [2, 3], "float32")
        w = oar.static.create_parameter([3], "float32", name="w_sgd", default_initializer=Constant(1.0))
        loss = (x * w).sum()
        oar.optimizer.SGD(learning_rate=0.5, parameters=[w]).minimize(loss)
    exe = oar.static.Executor(oar.CPUPlace())
    exe.run(startup)
    xv = np.ones((2, 3), np.float32)
    exe.run(main, feed={"x": xv}, fetch_list=[loss])
    (wv,) = exe.run(main, feed={"x": xv}, fetch_list=[w])  # a second step ran before this fetch
    np.testing.assert_allclose(wv, 1.0 - 2 * 0.5 * 2.0)


def test_fetch_a_bad_item_names_it(static_mode):
    main = oar.static.Program()
    with oar.static.program_guard(main, oar.static.Program()):
        oar.static.data("x", [1], "float32")
    with pytest.raises(TypeError, match="fetch_list items must be"):
        oar.static.Executor(oar.CPUPlace()).run(main, feed={"x": np.zeros(1, np.float32)}, fetch_list=[3.5])


def test_weight_norm_in_program_guard(static_mode):
    # weight_norm's set-up runs eagerly (its new parameters get values now); its forward is recorded.
    main, startup = oar.static.Program(), oar.static.Program()
    with oar.static.program_guard(main, startup):
        x = oar.static.data("x", [2, 3], "float32")
        lin = oar.nn.utils.weight_norm(oar.nn.Linear(3, 4))
        y = lin(x)
    exe = oar.static.Executor(oar.CPUPlace())
    exe.run(startup)
    xv = np.random.RandomState(1).rand(2, 3).astype(np.float32)
    yv, g = exe.run(main, feed={"x": xv}, fetch_list=[y, lin.weight_g])
    v = lin.weight_v.numpy().astype(np.float64)
    w = v / np.linalg.norm(v, axis=1, keepdims=True) * g[:, None]
    np.testing.assert_allclose(yv, xv @ w + lin.bias.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("eps", [1e-12, 1e-14, 1e-6])
def test_small_constants_are_not_taken_for_unknown_extents(static_mode, eps):
    # A fed batch extent is unknown while the program is built; constants near 1 / (k * sentinel) were
    # taken for values derived from it (1e-12, normalize's default epsilon, failed at run time).
    main = oar.static.Program()
    with oar.static.program_guard(main, oar.static.Program()):
        x = oar.static.data("x", [None, 3], "float32")
        y = oar.nn.functional.normalize(x, axis=1, epsilon=eps)
        z = x + eps
    xv = np.array([[3, 4, 0], [0, 0, 0]], np.float32)
    yv, zv = oar.static.Executor(oar.CPUPlace()).run(main, feed={"x": xv}, fetch_list=[y, z])
    want = xv / np.maximum(np.linalg.norm(xv, axis=1, keepdims=True), eps)
    np.testing.assert_allclose(yv, want, rtol=1e-6)
    np.testing.assert_allclose(zv, xv + np.float32(eps), rtol=1e-6)
