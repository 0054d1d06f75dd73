"""to_static as Paddle 2.6.2 has it (issue 14, item 1): nested and non-tensor arguments, nested InputSpecs in
jit.save / jit.load / the Predictor, tensor arrays (eager lists, and lists grown in tensor loops) with
gradients, and errors naming the user's line. Expected values are numpy / eager results; where noted, the
behaviour was recorded from real PaddlePaddle 2.6.2 (feed names and order, eager array errors)."""

import numpy as np
import pytest

import oar as paddle
from oar import inference
from oar.static import InputSpec


def _np(t):
    return np.asarray(t.numpy())


# ---- arguments ----------------------------------------------------------------------------------------------
def test_dict_args_and_a_string_constant():
    # Paddle 2.6.2: to_static(f)(dict_of_tensors, dict_of_params, "paddle.nn.functional.relu") works
    def f(inputs, params, act):
        fn = eval(act)
        return fn(paddle.matmul(inputs["x"], inputs["w"]) * params["scale"])

    x = np.arange(6, dtype="float32").reshape(2, 3) - 2
    w = np.ones((3, 2), "float32")
    sf = paddle.jit.to_static(f)
    out = sf({"x": paddle.to_tensor(x), "w": paddle.to_tensor(w)}, {"scale": 2.0}, "paddle.nn.functional.relu")
    np.testing.assert_allclose(_np(out), np.maximum(x @ w * 2.0, 0))
    out = sf({"x": paddle.to_tensor(x), "w": paddle.to_tensor(w)}, {"scale": 2.0}, "paddle.tanh")
    np.testing.assert_allclose(_np(out), np.tanh(x @ w * 2.0), rtol=1e-6)


def test_layer_forward_gets_the_list():
    class L(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(3, 2)

        def forward(self, inputs):
            assert isinstance(inputs, list) and len(inputs) == 2
            return self.fc(inputs[0]) + inputs[1]

    paddle.seed(0)
    layer = L()
    x, y = paddle.rand([4, 3]), paddle.rand([4, 2])
    ref = _np(layer([x, y]))
    static = paddle.jit.to_static(layer)
    np.testing.assert_allclose(_np(static([x, y])), ref, rtol=1e-6)


def test_constants_one_program_per_signature():
    traces = []

    def g(x, k, mode, opts=None):
        traces.append((k, mode))
        if mode == "double":
            return x * k * 2
        return x * k + opts["c"]

    sf = paddle.jit.to_static(g)
    x = paddle.to_tensor([1.0, 2.0])
    np.testing.assert_allclose(_np(sf(x, 3, "double")), [6, 12])
    np.testing.assert_allclose(_np(sf(x, 3, "double")), [6, 12])  # cached: no retrace
    assert len(traces) == 1
    np.testing.assert_allclose(_np(sf(x, 4, "double")), [8, 16])
    np.testing.assert_allclose(_np(sf(x, 1, "plus", {"c": 5})), [6, 7])
    np.testing.assert_allclose(_np(sf(x, 1, "plus", {"c": 6})), [7, 8])
    np.testing.assert_allclose(_np(sf(x, 1, "plus", opts={"c": 6})), [7, 8])
    assert traces == [(3, "double"), (4, "double"), (1, "plus"), (1, "plus"), (1, "plus")]

    def h(x, y=None):
        return x if y is None else x + y

    sh = paddle.jit.to_static(h)
    np.testing.assert_allclose(_np(sh(x)), [1, 2])
    np.testing.assert_allclose(_np(sh(x, x)), [2, 4])


def test_nested_args_gradients():
    def f(pair, d):
        a, b = pair
        return (a * d["w"]).sum() + (b * b).sum()

    a = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
    b = paddle.to_tensor([3.0], stop_gradient=False)
    w = paddle.to_tensor([5.0, 7.0], stop_gradient=False)
    out = paddle.jit.to_static(f)((a, b), {"w": w})
    out.backward()
    np.testing.assert_allclose(_np(out), 1 * 5 + 2 * 7 + 9)
    np.testing.assert_allclose(_np(a.grad), [5, 7])
    np.testing.assert_allclose(_np(w.grad), [1, 2])
    np.testing.assert_allclose(_np(b.grad), [6])


# ---- jit.save / load / Predictor ------------------------------------------------------------------------------
class _Nested(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(3, 2)

    def forward(self, x, inputs, d):
        return self.fc(x) + inputs[0] - d["z"] * 2 + d["a"] * 3


def test_save_nested_specs_feed_order_as_paddle(tmp_path):
    paddle.seed(1)
    layer = _Nested()
    path = str(tmp_path / "m")
    specs = [InputSpec([None, 3], "float32"), [InputSpec([None, 2], "float32")],
             {"z": InputSpec([None, 2], "float32"), "a": InputSpec([None, 2], "float32")}]
    paddle.jit.save(layer, path, input_spec=specs)
    # recorded from Paddle 2.6.2: parameter name, <name>_<i> for list items, dict keys in sorted order
    pred = inference.create_predictor(inference.Config(path + ".pdmodel", path + ".pdiparams"))
    assert pred.get_input_names() == ["x", "inputs_0", "a", "z"]
    x = np.ones((2, 3), "float32")
    one = np.ones((2, 2), "float32")
    ref = _np(layer(paddle.to_tensor(x), [paddle.to_tensor(one)],
                    {"z": paddle.to_tensor(one * 10), "a": paddle.to_tensor(one * 100)}))
    loaded = paddle.jit.load(path)
    got = loaded(paddle.to_tensor(x), paddle.to_tensor(one), paddle.to_tensor(one * 100), paddle.to_tensor(one * 10))
    np.testing.assert_allclose(_np(got), ref, rtol=1e-5)
    for name, v in zip(pred.get_input_names(), [x, one, one * 100, one * 10]):
        pred.get_input_handle(name).copy_from_cpu(v)
    pred.run()
    np.testing.assert_allclose(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu(), ref, rtol=1e-5)


def test_save_named_nested_specs_and_constants(tmp_path):
    class L(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(3, 2)

        def forward(self, inputs, cfg):
            return self.fc(inputs[0]) * cfg["scale"] + inputs[1]

    paddle.seed(2)
    layer = L()
    path = str(tmp_path / "m")
    paddle.jit.save(layer, path, input_spec=[[InputSpec([None, 3], "float32", "a"),
                                              InputSpec([None, 2], "float32", "b")], {"scale": 3.0}])
    pred = inference.create_predictor(inference.Config(path + ".pdmodel", path + ".pdiparams"))
    assert pred.get_input_names() == ["a", "b"]
    x, y = paddle.rand([4, 3]), paddle.rand([4, 2])
    ref = _np(layer([x, y], {"scale": 3.0}))
    np.testing.assert_allclose(_np(paddle.jit.load(path)(x, y)), ref, rtol=1e-5)


def test_function_of_dicts_and_a_string_saved_loaded_and_predicted(tmp_path):
    # the to_static + jit.save + jit.load + Predictor case; feed names/order recorded from Paddle 2.6.2
    def f(inputs, params, act):
        fn = eval(act)
        return fn(paddle.matmul(inputs["x"], params["w"]) + params["b"])

    rs = np.random.RandomState(0)
    vals = {"x": rs.randn(4, 3).astype("float32"), "w": rs.randn(3, 2).astype("float32"),
            "b": rs.randn(2).astype("float32")}
    ref = np.maximum(vals["x"] @ vals["w"] + vals["b"], 0)
    sf = paddle.jit.to_static(f, input_spec=[
        {"x": InputSpec([None, 3], "float32", "x")},
        {"w": InputSpec([3, 2], "float32", "w"), "b": InputSpec([2], "float32", "b")},
        "paddle.nn.functional.relu"])
    t = {k: paddle.to_tensor(v) for k, v in vals.items()}
    np.testing.assert_allclose(_np(sf({"x": t["x"]}, {"w": t["w"], "b": t["b"]}, "paddle.nn.functional.relu")), ref,
                               rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "f")
    paddle.jit.save(sf, path)
    pred = inference.create_predictor(inference.Config(path + ".pdmodel", path + ".pdiparams"))
    names = pred.get_input_names()
    assert names == ["x", "b", "w"]
    for n in names:
        pred.get_input_handle(n).copy_from_cpu(vals[n])
    pred.run()
    np.testing.assert_allclose(pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu(), ref,
                               rtol=1e-5, atol=1e-6)
    loaded = paddle.jit.load(path)
    np.testing.assert_allclose(_np(loaded(*[t[n] for n in names])), ref, rtol=1e-5, atol=1e-6)


def test_save_var_positional_feed_names(tmp_path):
    # Paddle 2.6.2 refuses InputSpecs for *inputs; oar names them as list items
    class L(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(2, 2)

        def forward(self, x, *inputs):
            return self.fc(x) + inputs[0] * inputs[1]

    path = str(tmp_path / "m")
    paddle.jit.save(L(), path, input_spec=[InputSpec([None, 2], "float32")] * 3)
    pred = inference.create_predictor(inference.Config(path + ".pdmodel", path + ".pdiparams"))
    assert pred.get_input_names() == ["x", "inputs_0", "inputs_1"]


def test_save_after_call_keeps_nesting_and_constants(tmp_path):
    class L(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = paddle.nn.Linear(3, 2)

        def forward(self, inputs, k):
            return self.fc(inputs["x"]) * k

    paddle.seed(3)
    layer = paddle.jit.to_static(L())
    x = paddle.rand([2, 3])
    ref = _np(layer({"x": x}, 4))
    path = str(tmp_path / "m")
    paddle.jit.save(layer, path)  # the last traced signature: a dict and the constant 4
    np.testing.assert_allclose(_np(paddle.jit.load(path)(x)), ref, rtol=1e-5)


# ---- tensor arrays ------------------------------------------------------------------------------------------
def test_eager_arrays_are_lists():
    # recorded from Paddle 2.6.2's dygraph
    a = paddle.tensor.create_array("float32")
    assert type(a) is list and a == []
    x = paddle.to_tensor([1.0, 2.0])
    assert paddle.tensor.array_write(x, paddle.zeros([1], "int64"), array=a) is a
    paddle.tensor.array_write(x * 2, paddle.to_tensor([1], "int64"), array=a)
    assert paddle.tensor.array_length(a) == 2 and type(paddle.tensor.array_length(a)) is int
    np.testing.assert_allclose(_np(paddle.tensor.array_read(a, paddle.to_tensor([1]))), [2, 4])
    np.testing.assert_allclose(_np(paddle.stack(a)), [[1, 2], [2, 4]])
    np.testing.assert_allclose(_np(paddle.concat(a)), [1, 2, 2, 4])
    paddle.tensor.array_write(x * 3, paddle.to_tensor([0]), array=a)  # overwrite
    np.testing.assert_allclose(_np(a[0]), [3, 6])
    b = paddle.tensor.array_write(x, paddle.to_tensor([0]))
    assert type(b) is list and len(b) == 1
    assert len(paddle.tensor.create_array("float32", [x, x * 3])) == 2
    with pytest.raises(AssertionError, match="out of range"):
        paddle.tensor.array_write(x, paddle.to_tensor([3]), array=a)
    with pytest.raises(AssertionError, match="must be a Tensor"):
        paddle.tensor.array_write(x, 1, array=a)
    with pytest.raises(IndexError):
        paddle.tensor.array_read(a, paddle.to_tensor([5]))
    with pytest.raises(TypeError, match="initialized_list"):
        paddle.tensor.create_array("float32", [1])
    assert not hasattr(paddle, "create_array")  # as Paddle: only under paddle.tensor


def test_list_appended_in_tensor_range_loop_then_stacked():
    # the case: failed with "input variable 'multiply.tmp_0' has no value"
    def g(x, n):
        out = []
        for i in range(n):
            out.append(x * i)
        return paddle.stack(out)

    x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
    r = paddle.jit.to_static(g)(x, paddle.to_tensor(3))
    np.testing.assert_allclose(_np(r), [[0, 0], [1, 2], [2, 4]])
    r.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3, 3])  # d/dx sum(x*0 + x*1 + x*2)
    r5 = paddle.jit.to_static(g)(x, paddle.to_tensor(5))  # same program, another trip count
    np.testing.assert_allclose(_np(r5)[:, 1], [0, 2, 4, 6, 8])


def _while_list(x, n):
    out = []
    i = paddle.zeros([], "int64")
    while i < n:
        out.append(x + i.astype("float32"))
        i = i + 1
    return paddle.concat(out)


def _list_read_in_loop(x, n):  # an element before the loop; the last one read inside it
    out = [x]
    for i in range(n):
        out.append(out[-1] * 2)
    return paddle.stack(out)


def _conditional_append(x, n):
    out = [x]
    for i in range(n):
        if i % 2 == 0:
            out.append(x * i)
    return paddle.stack(out)


def _iadd_list(x, n):
    out = []
    for i in range(n):
        out += [x * i]
    return paddle.stack(out)


@pytest.mark.parametrize("fn, value, grad", [
    (_iadd_list, [[0, 0], [1, 2], [2, 4], [3, 6]], [6, 6]),
    # values and gradients recorded from Paddle 2.6.2 (n = 4, x = [1, 2])
    (_while_list, [1, 2, 2, 3, 3, 4, 4, 5], [4, 4]),
    (_list_read_in_loop, [[1, 2], [2, 4], [4, 8], [8, 16], [16, 32]], [31, 31]),
    (_conditional_append, [[1, 2], [0, 0], [2, 4]], [3, 3]),
])
def test_lists_in_tensor_loops_as_paddle(fn, value, grad):
    x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
    r = paddle.jit.to_static(fn)(x, paddle.to_tensor(4))
    np.testing.assert_allclose(_np(r), value)
    r.sum().backward()
    np.testing.assert_allclose(_np(x.grad), grad)
    x2 = paddle.to_tensor([1.0, 2.0])  # the eager function agrees
    np.testing.assert_allclose(_np(fn(x2, 4)), value)


def test_list_grown_in_a_tensor_loop_is_returned_as_a_list():
    def g(x, n):
        out = []
        for i in range(n):
            out.append(x * i)
        return out

    x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
    r = paddle.jit.to_static(g)(x, paddle.to_tensor(3))
    assert type(r) is list and len(r) == 3  # as Paddle 2.6.2
    np.testing.assert_allclose([_np(t) for t in r], [[0, 0], [1, 2], [2, 4]])
    (r[1] * 3 + r[2]).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [5, 5])


def test_array_api_in_a_while_loop_with_gradients():
    def f(x, n):
        arr = paddle.tensor.create_array("float32")
        i = paddle.zeros([1], "int64")
        while i < n:
            paddle.tensor.array_write(x * i.astype("float32"), i, arr)
            i += 1
        last = paddle.tensor.array_read(arr, i - 1)
        return paddle.stack(arr, axis=1), paddle.concat(arr), paddle.tensor.array_length(arr), last

    x = paddle.to_tensor([1.0, 2.0], stop_gradient=False)
    sf = paddle.jit.to_static(f)
    a, c, n, last = sf(x, paddle.to_tensor([3], "int64"))
    # values recorded from Paddle 2.6.2 (its array_length comes back as a Python int there)
    np.testing.assert_allclose(_np(a), [[0, 1, 2], [0, 2, 4]])
    np.testing.assert_allclose(_np(c), [0, 0, 1, 2, 2, 4])
    assert _np(n).tolist() == [3]
    np.testing.assert_allclose(_np(last), [2, 4])
    a, c, n, last = sf(x, paddle.to_tensor([4], "int64"))
    (a.sum() * 2 + last.sum()).backward()
    np.testing.assert_allclose(_np(x.grad), [15, 15])  # 2*(0+1+2+3) + 3, as Paddle 2.6.2


class _Unroll(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(2, 2)

    def forward(self, x, n):
        outs = []
        h = x
        for i in range(n):
            h = paddle.tanh(self.fc(h))
            outs.append(h)
        return paddle.stack(outs, axis=1).sum(axis=1)


def test_layer_list_in_loop_matches_eager_with_parameter_gradients(tmp_path):
    paddle.seed(3)
    net = _Unroll()
    ref_net = _Unroll()
    ref_net.set_state_dict(net.state_dict())
    x = paddle.rand([3, 2])
    eager = ref_net(x, 4)
    eager.sum().backward()
    static = paddle.jit.to_static(net)
    out = static(x, paddle.to_tensor(4))
    np.testing.assert_allclose(_np(out), _np(eager), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(_np(net.fc.weight.grad), _np(ref_net.fc.weight.grad), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(_np(net.fc.bias.grad), _np(ref_net.fc.bias.grad), rtol=1e-4, atol=1e-6)
    # saved and loaded: the trip count is an input of the inference program
    path = str(tmp_path / "m")
    paddle.jit.save(net, path, input_spec=[InputSpec([3, 2], "float32", "x"), InputSpec([1], "int64", "n")])
    loaded = paddle.jit.load(path)
    np.testing.assert_allclose(_np(loaded(x, paddle.to_tensor([4]))), _np(eager), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(loaded(x, paddle.to_tensor([2]))), _np(ref_net(x, 2)), rtol=1e-5, atol=1e-6)
    pred = inference.create_predictor(inference.Config(path + ".pdmodel", path + ".pdiparams"))
    assert pred.get_input_names() == ["x", "n"]
    pred.get_input_handle("x").copy_from_cpu(_np(x))
    pred.get_input_handle("n").copy_from_cpu(np.array([3], "int64"))
    pred.run()
    got = pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()
    np.testing.assert_allclose(got, _np(ref_net(x, 3)), rtol=1e-5, atol=1e-6)


def test_array_in_static_mode_program():
    paddle.enable_static()
    try:
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            x = paddle.static.data("x", [2], "float32")
            arr = paddle.tensor.create_array("float32")
            paddle.tensor.array_write(x, 0, arr)
            paddle.tensor.array_write(x * 2, 1, arr)
            n = paddle.tensor.array_length(arr)
            y = paddle.tensor.array_read(arr, 1)
            s = paddle.stack(arr)
            with pytest.raises(ValueError, match="only grows"):
                paddle.tensor.array_write(x, 5, arr)
        exe = paddle.static.Executor()
        nv, yv, sv = exe.run(main, feed={"x": np.array([1.0, 3.0], "float32")}, fetch_list=[n, y, s])
        assert np.asarray(nv).tolist() == [2]
        np.testing.assert_allclose(yv, [2, 6])
        np.testing.assert_allclose(sv, [[1, 3], [2, 6]])
    finally:
        paddle.disable_static()


def test_static_mode_gradient_through_a_loop_array_is_refused():
    paddle.enable_static()
    try:
        main = paddle.static.Program()
        with paddle.static.program_guard(main, paddle.static.Program()):
            x = paddle.static.data("x", [2], "float32")
            x.stop_gradient = False
            arr = paddle.tensor.create_array("float32")
            n = paddle.full([1], 3, "int64")

            def body(i):
                paddle.tensor.array_write(x * i.astype("float32"), i, arr)
                return [i + 1]

            paddle.static.nn.while_loop(lambda i: i < n, body, [paddle.zeros([1], "int64")])
            s = paddle.stack(arr)
            out, = paddle.static.Executor().run(main, feed={"x": np.array([1, 2], "float32")}, fetch_list=[s])
            np.testing.assert_allclose(out, [[0, 0], [1, 2], [2, 4]])
            with pytest.raises(NotImplementedError, match="tensor array written inside a loop"):
                paddle.static.gradients([s.sum()], [x])
    finally:
        paddle.disable_static()


# ---- errors ---------------------------------------------------------------------------------------------------
def test_value_leaving_a_tensor_loop_names_the_users_line():
    class Acc:
        def __init__(self):
            self.items = []

    def g(x, n):
        acc = Acc()
        for i in range(n):
            acc.items.append(x * i)
        return paddle.stack(acc.items)

    line = g.__code__.co_firstlineno + 3
    with pytest.raises(paddle.jit.dy2static.Dy2StaticError) as e:
        paddle.jit.to_static(g)(paddle.ones([2]), paddle.to_tensor(3))
    msg = str(e.value)
    assert "{}:{} (list.append)".format(__file__, line) in msg
    assert "tmp_" not in msg


def test_array_of_unknown_element_shape_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="known shape"):
        paddle.jit.save(_Unroll(), str(tmp_path / "m"),
                        input_spec=[InputSpec([None, 2], "float32", "x"), InputSpec([1], "int64", "n")])


def _float_of_tensor(x):
    return x * float(x.sum())


def _numpy_of_tensor(x):
    v = x.numpy()
    return x + v[0]


@pytest.mark.parametrize("fn, snippet", [(_float_of_tensor, "float(x.sum())"), (_numpy_of_tensor, "x.numpy()")])
def test_python_value_of_a_traced_tensor_names_the_line(fn, snippet):
    with pytest.raises(paddle.jit.dy2static.Dy2StaticError) as e:
        paddle.jit.to_static(fn)(paddle.to_tensor([1.0, 2.0]))
    msg = str(e.value)
    line = fn.__code__.co_firstlineno + 1
    assert "{}:{}".format(__file__, line) in msg and snippet in msg
    assert "tmp_" not in msg and "'x'" not in msg
    assert isinstance(e.value, ValueError)  # the type it had before
