"""The to_static training speed work (docs/static.md, "Performance"): the gradient rules it changed
(matmul's weight gradient for N-D inputs, sum_to without a trailing reshape) against numpy, the
recorded backward program's shape, and to_static training equal to eager for several steps on the
benchmark's models (tests/benchmarks/bench_jit.py)."""
import numpy as np
import pytest

import oar
from oar import _C
from _util import small_training_model, train_side_by_side


def _grads(fn, *arrays):
    ts = [oar.to_tensor(a, stop_gradient=False) for a in arrays]
    out = fn(*ts)
    out.backward(oar.to_tensor(np.ones(out.shape, "float32")))
    return [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("ty", [False, True])
def test_matmul_weight_gradient_of_nd_input(ty):
    rs = np.random.RandomState(0)
    x = rs.randn(2, 3, 4).astype("float32")
    w = rs.randn(5, 4).astype("float32") if ty else rs.randn(4, 5).astype("float32")
    g = rs.randn(2, 3, 5).astype("float32")
    ts = [oar.to_tensor(a, stop_gradient=False) for a in (x, w)]
    out = oar.matmul(ts[0], ts[1], transpose_y=ty)
    out.backward(oar.to_tensor(g))
    wm = w.T if ty else w
    gw = np.einsum("bmk,bmn->kn", x, g)
    np.testing.assert_allclose(ts[1].grad.numpy(), gw.T if ty else gw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ts[0].grad.numpy(), g @ wm.T, rtol=1e-5, atol=1e-5)


def test_matmul_weight_gradient_of_strided_and_1d_operands():
    rs = np.random.RandomState(1)
    xt = rs.randn(3, 4, 2).astype("float32")  # x = xt transposed: a non-contiguous [3, 2, 4] input
    w = rs.randn(4, 5).astype("float32")
    v = rs.randn(4).astype("float32")
    gx, gw = _grads(lambda a, b: oar.matmul(a.transpose([0, 2, 1]), b), xt, w)
    np.testing.assert_allclose(gw, np.einsum("bkm,bmn->kn", xt, np.ones((3, 2, 5), "float32")), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gx, np.broadcast_to(w.sum(1), (3, 2, 4)).transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    gx, gv = _grads(lambda a, b: oar.matmul(a, b), xt.transpose(0, 2, 1).copy(), v)  # y 1-D
    np.testing.assert_allclose(gv, xt.transpose(0, 2, 1).sum((0, 1)), rtol=1e-5, atol=1e-5)
    assert gv.shape == (4,) and gx.shape == (3, 2, 4)


@pytest.mark.parametrize("bshape", [(4,), (3, 1), (1, 4), (2, 1, 4), (1, 1, 1), ()])
def test_broadcast_add_gradient_shapes(bshape):
    rs = np.random.RandomState(2)
    a = rs.randn(2, 3, 4).astype("float32")
    b = np.asarray(rs.randn(*bshape), "float32")
    g = rs.randn(2, 3, 4).astype("float32")
    ta, tb = oar.to_tensor(a, stop_gradient=False), oar.to_tensor(b, stop_gradient=False)
    (ta * 1.0 + tb).backward(oar.to_tensor(g))
    lead = g.ndim - b.ndim
    ref = g.sum(tuple(range(lead))) if lead else g
    ref = ref.sum(tuple(i for i, d in enumerate(bshape) if d == 1), keepdims=True) if bshape else ref
    assert tb.grad.shape == list(bshape)
    np.testing.assert_allclose(tb.grad.numpy(), ref.reshape(bshape), rtol=1e-5, atol=1e-5)


def _backward_ops(model, x, y):
    loss = oar.nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    cp = next(iter(model.forward._cache.values()))
    return [op["type"] for op in _C._filter_ops_by_role(cp.main_program.desc, [1]).block(0)["ops"]]


def test_linear_backward_program_has_no_batch_sum():
    oar.seed(0)
    model = oar.jit.to_static(oar.nn.Sequential(oar.nn.Linear(8, 6), oar.nn.Flatten(), oar.nn.Linear(4 * 6, 3)))
    x = oar.to_tensor(np.random.RandomState(0).randn(5, 4, 8).astype("float32"))
    y = oar.to_tensor(np.array([0, 1, 2, 0, 1], "int64"))
    ops = _backward_ops(model, x, y)
    # Per Linear: a bias gradient (one sum, no reshape after it), a 2-D weight gradient (no batched
    # product summed over the batch), and the input gradient of the second Linear.
    assert ops.count("oar.sum") == 2, ops
    assert ops.count("oar.matmul") == 3, ops


def _build(kind):
    return small_training_model(kind, mlp_layers=4)


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_to_static_training_equals_eager(kind):
    oar.seed(0)
    a, x, y = _build(kind)
    oar.seed(0)
    b, _, _ = _build(kind)
    b.set_state_dict({k: oar.to_tensor(v.numpy()) for k, v in a.state_dict().items()})
    b = oar.jit.to_static(b)
    train_side_by_side(a, b, (x,), y)


@pytest.mark.parametrize("n", [1, 7, 16, 33, 1000])
def test_softmax_float32_rows_match_numpy(n):
    # the vectorised float32 row path (plugins/cpu/nn.cc softmax_rows_f32) against float64 numpy
    rs = np.random.RandomState(n)
    x = (rs.randn(6, n) * 30).astype("float32")
    x[1, :] -= 200.0                     # all very negative: the max shift keeps it exact
    x[2, ::2] = -1e9                     # masked entries: exp underflows to 0
    x[3, 0] = 80.0                       # one dominant entry
    got = oar.nn.functional.softmax(oar.to_tensor(x), axis=-1).numpy()
    e = np.exp(x.astype("float64") - x.max(-1, keepdims=True))
    ref = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-30)
    assert got.dtype == np.float32
    if n > 1:
        assert (got[2, ::2] == 0).all()


def test_softmax_float32_special_values():
    x = np.array([[0.0, np.nan, 1.0], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 0.0], [-np.inf] * 3], "float32")
    got = oar.nn.functional.softmax(oar.to_tensor(x), axis=-1).numpy()
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all() and np.isnan(got[3]).all()
    np.testing.assert_allclose(got[2], [0.0, 0.5, 0.5], rtol=1e-6)
