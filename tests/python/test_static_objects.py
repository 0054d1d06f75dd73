"""Program / Block / Operator / Variable objects as Paddle has them (issue 14). The expected values are
PaddlePaddle 2.6.2's, recorded by running the same programs on it (noted where oar's differ by design:
decision 52)."""
import numpy as np
import pytest

import oar
from oar import _C, static


@pytest.fixture
def static_mode():
    oar.enable_static()
    yield
    oar.disable_static()


def _mlp_program():
    """x -> Linear(4, 3) -> relu -> mean, with fresh names (Paddle: linear_0.w_0, linear_0.b_0)."""
    with oar.utils.unique_name.guard():
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [None, 4], "float32")
            lin = oar.nn.Linear(4, 3)
            h = lin(x)
            y = oar.nn.functional.relu(h)
            loss = oar.mean(y)
    return main, startup, lin, (x, h, y, loss)


def test_ops_are_operators_with_paddles_types_and_slots(static_mode):
    main, _, lin, (x, h, y, loss) = _mlp_program()
    ops = main.global_block().ops
    # Paddle 2.6.2: ['matmul_v2', 'elementwise_add', 'relu', 'reduce_mean']
    assert [op.type for op in ops] == ["matmul_v2", "elementwise_add", "relu", "reduce_mean"]
    assert [op._recorded_type for op in ops] == ["oar.matmul", "oar.add", "oar.relu", "oar.mean"]
    mm, add, relu, mean = ops
    # Paddle's capitalised slot names find oar's recorded ones (x, y, out)
    assert mm.input("X") == ["x"] and mm.input("Y") == [lin.weight.name] == ["linear_0.w_0"]
    assert add.input("X") == mm.output("Out") and add.input("Y") == [lin.bias.name]
    assert relu.input_arg_names == [h.name] and relu.output_arg_names == [y.name]
    assert mm.input_names == ["x", "y"] and mm.output_names == ["out"]
    assert [op.idx for op in ops] == [0, 1, 2, 3]
    assert all(op.block is main.global_block() for op in ops)
    # Paddle: y.op.type == 'relu', h.op.type == 'elementwise_add', a feed variable has no op
    assert y.op.type == "relu" and h.op.type == "elementwise_add" and loss.op.type == "reduce_mean"
    assert y.op == relu and x.op is None
    assert ops.index(main.global_block().ops[2]) == 2


def test_operator_attributes_and_errors(static_mode):
    main, *_ = _mlp_program()
    mm = main.global_block().ops[0]
    assert mm.has_attr("transpose_x") and not mm.has_attr("nope")
    assert mm.attr("transpose_x") == 0 and mm.attr("op_role") == 0  # Paddle: op_role 0 (forward)
    assert set(mm.attr_names) == set(mm.all_attrs()) >= {"transpose_x", "transpose_y", "op_role"}
    assert mm.attr_type("op_role") == "INT"
    with pytest.raises(ValueError, match="Attribute nope is not found in operator matmul_v2"):
        mm.attr("nope")
    with pytest.raises(ValueError, match="Input Nope cannot be found in operator matmul_v2"):
        mm.input("Nope")
    with pytest.raises(ValueError, match="Output X cannot be found in operator matmul_v2"):
        mm.output("X")
    text = str(mm)  # the recorded op, Paddle's layout: {Out=[...]} = type(inputs={...}, attr = value)
    assert text.startswith("{out=['matmul.tmp_0']} = oar.matmul(inputs={x=['x'], y=['linear_0.w_0']}")
    assert "transpose_x = 0" in text and repr(mm) == text


def test_a_native_op_without_a_paddle_type_keeps_its_recorded_type(static_mode):
    main = static.Program()
    with static.program_guard(main):
        x = static.data("x", [3, 3], "float32")
        oar.copysign(x, x)
    (op,) = main.global_block().ops
    assert "copysign" not in _C._paddle_op_types()
    assert op.type == op._recorded_type == "oar.copysign"
    # the names come from the Paddle op map, not a second table
    assert _C._paddle_op_types()["matmul"] == "matmul_v2" and _C._paddle_op_types()["add"] == "elementwise_add"


def test_block_vars_and_parameters(static_mode):
    main, _, lin, (x, h, y, loss) = _mlp_program()
    b = main.global_block()
    assert main.global_block() is b and main.block(0) is b and main.current_block() is b
    assert b.idx == 0 and b.parent_idx == -1 and b.program is main
    names = list(b.vars)
    assert names[:3] == ["x", "linear_0.w_0", "linear_0.b_0"] and y.name in names and len(names) == 7
    assert b.vars["linear_0.w_0"] is lin.weight and b.var("linear_0.w_0") is lin.weight  # Parameters
    v = b.var("x")
    assert isinstance(v, static.Variable) and v.name == "x" and v.shape == [-1, 4]  # Paddle: (-1, 4)
    assert v.dtype == oar.float32 and not v.persistable and v.stop_gradient and v.block is b
    assert b.has_var("x") and not b.has_var("nope")
    with pytest.raises(ValueError, match="var nope not in this block"):  # Paddle's message
        b.var("nope")
    with pytest.raises(TypeError, match="name must be a str"):
        b.var(3)
    # Paddle: ['linear_0.w_0', 'linear_0.b_0'] for the block, its iterator and the program
    assert [p.name for p in b.all_parameters()] == ["linear_0.w_0", "linear_0.b_0"]
    assert [p.name for p in b.iter_parameters()] == ["linear_0.w_0", "linear_0.b_0"]
    assert [p.name for p in main.all_parameters()] == ["linear_0.w_0", "linear_0.b_0"]
    assert [v.name for v in main.list_vars()] == names


def test_variables_know_their_block_op_and_flags(static_mode):
    main, _, lin, (x, h, y, loss) = _mlp_program()
    b = main.global_block()
    assert x.block is b and y.block is b
    assert lin.weight.block is b and lin.weight.persistable and not lin.weight.stop_gradient
    assert isinstance(lin.weight, static.Variable)  # Paddle's static Parameter is a Variable
    assert not y.persistable
    with static.program_guard(main):
        pv = b.create_var(name="pv", shape=[2, None], dtype="float32", persistable=True)
    assert pv.name == "pv" and pv.shape == [2, -1] and pv.persistable and b.has_var("pv")
    with static.program_guard(main):
        w2 = b.create_parameter(name="w2", shape=[3], dtype="float32",
                                initializer=oar.nn.initializer.Constant(1.5))
    assert b.var("w2") is w2 and w2.block is b and "w2" in [p.name for p in main.all_parameters()]
    np.testing.assert_array_equal(w2.numpy(), np.full([3], 1.5, "float32"))
    # outside static mode a concrete tensor is no Variable and has no block
    oar.disable_static()
    try:
        t = oar.ones([2])
        assert not isinstance(t, static.Variable) and t.block is None and t.op is None
        assert not isinstance(lin.weight, static.Variable)
    finally:
        oar.enable_static()


def test_program_blocks_and_sub_blocks(static_mode):
    main, startup = static.Program(), static.Program()
    seen = {}
    with static.program_guard(main, startup):
        x = static.data("x", [1], "float32")

        def true_fn():
            cur = main.current_block()
            seen["inside"] = (cur.idx, cur.parent_idx, main.num_blocks)
            return x + 1.0

        static.nn.cond(oar.mean(x) > 0, true_fn, lambda: x - 1.0)
    # Paddle 2.6.2: 3 blocks with parents [-1, 0, 0]; inside the true branch (1, 0, 2)
    assert main.num_blocks == 3 and [b.idx for b in main.blocks] == [0, 1, 2]
    assert [b.parent_idx for b in main.blocks] == [-1, 0, 0]
    assert seen["inside"] == (1, 0, 2)
    conds = [op for op in main.global_block().ops if op.type == "conditional_block"]
    assert len(conds) == 2
    assert [op.attr("sub_block").idx for op in conds] == [1, 2]  # Paddle gives the block, not its index
    assert conds[0]._block_attr_id("sub_block") == 1 and conds[0].all_attrs()["sub_block"] is main.block(1)
    assert [op.type for op in main.block(1).ops][-1] == "assign"  # Paddle: ['scale', 'assign']
    assert main.block(1).program is main and main.block(-1) is main.block(2)  # a list's indexing
    inner = main.block(1).ops[0].output_arg_names[0]
    assert main.block(1).has_var(inner) and main.block(1).var(inner).name == inner
    with pytest.raises(IndexError, match="no block 5"):
        main.block(5)
    with pytest.raises(TypeError, match="index must be an int"):
        main.block("0")


def test_random_seed_clone_and_text(static_mode):
    main, *_ = _mlp_program()
    assert main.random_seed == 0
    main.random_seed = 5
    assert main.clone().random_seed == 5 and main.clone(for_test=True).random_seed == 5
    with pytest.raises(ValueError, match="random_seed must be an int"):
        main.random_seed = "a"
    assert [op.type for op in main.clone(for_test=True).global_block().ops] == [
        "matmul_v2", "elementwise_add", "relu", "reduce_mean"]
    text = str(main)
    # Paddle 2.6.2's lines for these variables, character for character
    assert text.splitlines()[:4] == [
        "{ // block_idx:0  parent_idx:-1  forward_idx:-1  backward_idx:-1",
        "    var x : LOD_TENSOR.shape(-1, 4).dtype(float32).stop_gradient(True)",
        "    persist trainable param linear_0.w_0 : LOD_TENSOR.shape(4, 3).dtype(float32).stop_gradient(False)",
        "    persist trainable param linear_0.b_0 : LOD_TENSOR.shape(3,).dtype(float32).stop_gradient(False)"]
    assert main.to_string(True) == text == str(main.global_block())
    with pytest.raises(TypeError, match="throw_on_error must be a bool"):
        main.to_string("yes")


def test_default_programs_as_paddles(static_mode):
    main_default = static.default_main_program()
    assert static.default_main_program() is main_default
    before = len(main_default.global_block().ops)
    x = static.data("x_default_objects", [2, 3], "float32")
    oar.tanh(x)
    # Paddle: ops built in static mode outside any guard go to the default main program
    assert [op.type for op in main_default.global_block().ops][before:] == ["tanh"]
    main, startup = static.Program(), static.Program()
    with static.program_guard(main, startup):
        assert static.default_main_program() is main and static.default_startup_program() is startup
    assert static.default_main_program() is main_default


def test_operators_read_by_the_executor_still_run(static_mode):
    main, startup, lin, (x, h, y, loss) = _mlp_program()
    exe = static.Executor(oar.CPUPlace())
    exe.run(startup)
    xs = np.random.RandomState(0).randn(5, 4).astype("float32")
    out, = exe.run(main, feed={"x": xs}, fetch_list=[loss])
    w, bias = lin.weight.numpy(), lin.bias.numpy()
    np.testing.assert_allclose(out, np.maximum(xs @ w + bias, 0).mean(), rtol=1e-5)
