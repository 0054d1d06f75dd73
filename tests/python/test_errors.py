"""Errors are ordinary Python exceptions carrying the core's message (which names the op and values)."""
import numpy as np
import pytest

import oar


def test_wrong_dtype_string():
    with pytest.raises(TypeError, match="unknown dtype 'flaot32'"):
        oar.to_tensor([1.0], dtype="flaot32")
    with pytest.raises(TypeError):
        oar.zeros([2], dtype="int3")
    with pytest.raises(TypeError):
        oar.to_tensor([1.0]).astype("nope")
    with pytest.raises(TypeError):
        oar.set_default_dtype("int32")
    with pytest.raises(TypeError, match="no oar equivalent"):
        oar._C.to_dtype(np.uint32)


def test_ragged_list():
    with pytest.raises(ValueError, match=r"data\[1\] has shape \[1\] but data\[0\] has shape \[2\]"):
        oar.to_tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="ragged"):
        oar.to_tensor([[[1], [2]], [[3], [4, 5]]])
    with pytest.raises(TypeError):
        oar.to_tensor(["a", "b"])
    with pytest.raises(TypeError):
        oar.to_tensor([1, None])
    with pytest.raises(TypeError):
        oar.to_tensor({"a": 1})
    with pytest.raises(TypeError, match="not supported"):
        oar.to_tensor(np.array([1, 2], np.uint32))


def test_out_of_range_index():
    t = oar.to_tensor([1, 2, 3])
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        t[3]
    with pytest.raises(IndexError, match="index_select"):
        oar.index_select(oar.to_tensor([[1.0, 2.0]]), oar.to_tensor([0, 5]), axis=1)


def test_axis_out_of_range():
    t = oar.ones([2, 3])
    with pytest.raises(IndexError, match="sum: axis 2 is out of range for a tensor of rank 2"):
        oar.sum(t, axis=2)
    with pytest.raises(IndexError, match="softmax: axis -3"):
        oar.nn.functional.softmax(t, axis=-3)
    with pytest.raises(IndexError):
        oar.unsqueeze(t, 5)
    with pytest.raises(ValueError):
        oar.flatten(t, 1, 0)


def test_shape_errors_name_the_op_and_values():
    with pytest.raises(ValueError, match=r"matmul: x.shape\[-1\] \(3\) != y.shape\[-2\] \(4\)"):
        oar.matmul(oar.ones([2, 3]), oar.ones([4, 5]))
    with pytest.raises(ValueError, match="add: shapes x\\[2, 3\\] and y\\[4\\] are not broadcastable"):
        oar.ones([2, 3]) + oar.ones([4])
    with pytest.raises(ValueError, match="reshape"):
        oar.reshape(oar.ones([2, 3]), [4, 2])
    with pytest.raises(ValueError, match="concat"):
        oar.concat([oar.ones([2, 3]), oar.ones([2, 4])])


def test_unsupported_dtype_for_op():
    with pytest.raises(TypeError, match="sqrt: x.dtype int64 is not supported"):
        oar.sqrt(oar.to_tensor([1, 2]))  # (exp/log of int32/int64 are float32, as in Paddle)
    with pytest.raises(TypeError, match="mean"):
        oar.mean(oar.to_tensor([1, 2]))
    with pytest.raises(TypeError, match="where: condition.dtype must be bool"):
        oar.where(oar.to_tensor([1, 0]), oar.ones([2]), oar.zeros([2]))


def test_integer_division_by_zero():
    with pytest.raises(ValueError):
        oar.to_tensor([1, 2]) // 0


def test_mixed_devices_and_bad_devices():
    if "sim:0" in oar.device.get_available_device():
        with pytest.raises(ValueError, match="move them to one device first"):
            oar.ones([2]) + oar.ones([2]).to("sim:0")
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        oar.set_device("tpu")
    with pytest.raises(ValueError, match="does not exist"):
        oar.set_device("sim:99")
    with pytest.raises(ValueError, match="malformed"):
        oar.CustomPlace("sim", -1)
    assert oar.get_device() == "cpu"


def test_bad_argument_types():
    with pytest.raises(TypeError, match="argument 'keepdim' expects an int"):
        oar.sum(oar.ones([2]), keepdim="yes")
    with pytest.raises(TypeError):
        oar.zeros("abc")
    with pytest.raises(TypeError):
        oar.add([1], [2])


def test_no_cpp_stack_in_messages():
    try:
        oar.matmul(oar.ones([2, 3]), oar.ones([4, 5]))
    except ValueError as e:
        assert "oar::" not in str(e) and ".cc" not in str(e)


def test_cpp_call_stack_only_when_asked():
    import os
    import subprocess
    import sys
    code = ("import oar\n"
            "try:\n"
            "    oar.matmul(oar.ones([2, 3]), oar.ones([4, 2]))\n"
            "except ValueError as e:\n"
            "    print(str(e))\n")
    env = dict(os.environ)
    env.pop("OAR_CALL_STACK_LEVEL", None)
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "matmul: x.shape[-1] (3) != y.shape[-2] (4)" in plain
    assert "C++ call stack" not in plain
    env["OAR_CALL_STACK_LEVEL"] = "2"
    deep = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "matmul: x.shape[-1] (3) != y.shape[-2] (4)" in deep
    assert "C++ call stack (OAR_CALL_STACK_LEVEL=2)" in deep and "#0 " in deep


def test_variadic_op_dtype_error_names_the_input_by_position():
    """merged_sum_squares takes a list whose tensors share one input name: a bad dtype is named by its
    position (the message used to read past the op's input names: a heap overflow ASan found)."""
    op = oar._C.Op("merged_sum_squares")
    a = oar.to_tensor(np.ones(2, "float32"))
    with pytest.raises(TypeError, match=r"merged_sum_squares: x\[0\]\.dtype \(float32\) != x\[1\]\.dtype \(float64\)"):
        op([a, oar.to_tensor(np.ones(2, "float64"))])
    with pytest.raises(TypeError, match=r"merged_sum_squares: x\[1\]\.dtype int64 is not supported"):
        op([a, oar.to_tensor(np.ones(2, "int64"))])
