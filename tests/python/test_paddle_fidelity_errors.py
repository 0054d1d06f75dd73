"""Paddle 2.6.2 behaviours found by PaddleTest's paddlebase/nn folders (issue 14, decisions 210-211): Paddle's
error class word in messages, the 'uint16' dtype name, trace's axis order. Checked against numpy or against
values recorded from the real paddlepaddle==2.6.2 wheel (noted where used)."""
import numpy as np
import pytest

import oar


# ---- Paddle's error class word: "(InvalidArgument) ..." before oar's own message (decision 98) ------------

def test_core_errors_carry_paddles_class_word():
    x = oar.to_tensor(np.arange(4.0).reshape(2, 2))
    # From the core (C++), through the one exception translator.
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) reshape: only one dimension can be -1"):
        oar.reshape(x, [-1, -1])
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) reshape: cannot reshape a tensor of shape \[2, 2\]"):
        oar.reshape(x, [3, 4])
    with pytest.raises(TypeError, match=r"^\(InvalidType\) "):
        oar.to_tensor([1.0], dtype="no_such_dtype")


def test_python_checks_carry_the_class_word_where_paddle_checks_in_cpp():
    x = oar.to_tensor(np.ones([2, 3], "float32"))
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) split: sections \[1, 1, 1, 1\] do not add up"):
        oar.split(x, [1, 1, 1, 1], axis=1)
    # Paddle 2.6.2: a float axis is ValueError (InvalidArgument); a list axis stays TypeError.
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) split: axis must be an int, got 1.2"):
        oar.split(x, 3, axis=1.2)
    with pytest.raises(TypeError):
        oar.split(x, 3, axis=[1])
    # Paddle 2.6.2: flip with an axis past the rank is ValueError (InvalidArgument), not IndexError.
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) flip: axis 4 is out of range for a tensor of rank 3"):
        oar.flip(oar.ones([3, 3, 3]), axis=[0, 1, 4])
    np.testing.assert_array_equal(oar.flip(x, axis=[-1, 0]).numpy(), np.ones([2, 3]))
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) histogram: max must be >= min"):
        oar.histogram(x, bins=4, min=1)
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) histogram: bins must be an int >= 1"):
        oar.histogram(x, bins=-4, max=-1)


# ---- 'uint16' is Paddle's Python name for bfloat16 (decision 98) ----------------------------------------

def test_uint16_names_bfloat16():
    a = oar.to_tensor([1.0, 2.5], dtype="uint16")
    assert a.dtype == oar.bfloat16
    assert a.element_size() == 2
    np.testing.assert_array_equal(a.astype("float32").numpy(), [1.0, 2.5])
    assert oar.zeros([2], "uint16").dtype == oar.bfloat16
    assert oar.cast(oar.to_tensor([1.5]), "paddle.uint16").dtype == oar.bfloat16


# ---- trace takes its two axes in increasing order (Paddle 2.6.2; numpy does not) -----------------------------

def test_trace_with_reversed_axes():
    a = np.arange(12).reshape(2, 3, 2).astype(np.float32)
    x = oar.to_tensor(a, stop_gradient=False)
    # Recorded from Paddle 2.6.2: trace(x, -1, 2, 1) == trace(x, -1, 1, 2) == np.trace(a, -1, 1, 2) = [7, 19].
    out = oar.trace(x, offset=-1, axis1=2, axis2=-2)
    np.testing.assert_array_equal(out.numpy(), np.trace(a, offset=-1, axis1=1, axis2=2))
    np.testing.assert_array_equal(out.numpy(), [7.0, 19.0])
    np.testing.assert_array_equal(oar.trace(x, 1, 2, 1).numpy(), np.trace(a, 1, 1, 2))
    out.sum().backward()
    expect = np.zeros([2, 3, 2], np.float32)
    expect[:, 1, 0] = expect[:, 2, 1] = 1  # the elements x[:, i + 1, i]
    np.testing.assert_array_equal(x.grad.numpy(), expect)


# ---- small API names PaddleTest's paddlebase files use -----------------------------------------------------

def test_rank_and_use_pir_api():
    r = oar.rank(oar.ones([2, 3, 4]))
    assert r.dtype == oar.int32 and r.shape == [] and int(r) == 3
    assert int(oar.rank(oar.to_tensor(1.5))) == 0
    with pytest.raises(TypeError, match="rank: input must be a Tensor"):
        oar.rank(np.ones([2]))
    assert oar.framework.use_pir_api() is False  # Paddle 2.6.2's answer


def test_mv_rank_errors_are_invalid_argument():
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) mv: x must be 2-D and vec 1-D, got shapes \[3, 2, 3\]"):
        oar.mv(oar.ones([3, 2, 3]), oar.zeros([3]))
    np.testing.assert_allclose(oar.mv(oar.to_tensor([[2.0, 1, 3], [3, 0, 1]]), oar.to_tensor([3.0, 5, 1])).numpy(),
                               [14.0, 10.0])


def test_tolist_and_trunc_input_keyword():
    x = oar.to_tensor([[0.0, 1.5], [-2.5, 3.0]])
    assert oar.tolist(x) == [[0.0, 1.5], [-2.5, 3.0]] == x.tolist()
    with pytest.raises(TypeError, match="tolist: x must be a Tensor"):
        oar.tolist([1, 2])
    # Paddle 2.6.2: trunc(input, name=None)
    np.testing.assert_array_equal(oar.trunc(input=x).numpy(), np.trunc(x.numpy()))
    np.testing.assert_array_equal(x.trunc().numpy(), np.trunc(x.numpy()))
