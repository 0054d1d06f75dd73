"""The batch_norm op (one kernel forward, batch_norm_grad backward) through F.batch_norm and the BatchNorm
layers: float64 numpy references, numerical gradients, running statistics, 16-bit x, errors, programs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import _C

from _util import check, check_grad

rng = np.random.default_rng(7)


def T(a, device, dtype=None):
    t = oar.to_tensor(a, place=device)
    return t if dtype is None else t.astype(dtype)


def ref_bn(x, c_axis, w, b, mean=None, var=None, eps=1e-5):
    """float64 reference: (x - mean) / sqrt(var + eps) * w + b over every axis but c_axis."""
    axes = tuple(i for i in range(x.ndim) if i != c_axis)
    if mean is None:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    shp = [1] * x.ndim
    shp[c_axis] = x.shape[c_axis]
    y = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * w.reshape(shp) + b.reshape(shp)
    return y, mean, var


SHAPES = [((6, 4), "NC"), ((3, 4, 5), "NCL"), ((2, 3, 4, 5), "NCHW"), ((2, 3, 2, 3, 2), "NCDHW"),
          ((3, 5, 4), "NLC"), ((2, 4, 5, 3), "NHWC"), ((2, 2, 3, 2, 3), "NDHWC")]


@pytest.mark.parametrize("shape,fmt", SHAPES)
def test_training_two_steps_then_eval(shape, fmt, device):
    c_axis = 1 if fmt.startswith("NC") else len(shape) - 1
    c = shape[c_axis]
    w, b = rng.uniform(0.5, 1.5, c), rng.uniform(-1, 1, c)
    rm, rv = T(np.zeros(c), device), T(np.ones(c), device)
    erm, erv = np.zeros(c), np.ones(c)
    for step in range(2):
        x = rng.normal(step, 2.0, shape)
        y = F.batch_norm(T(x, device), rm, rv, T(w, device), T(b, device), training=True, momentum=0.8,
                         data_format=fmt)
        ref, m, v = ref_bn(x, c_axis, w, b)
        check(y, ref, rtol=1e-10, atol=1e-10)
        erm, erv = erm * 0.8 + m * 0.2, erv * 0.8 + v * 0.2  # Paddle's rule, the biased variance
        check(rm, erm, rtol=1e-12, atol=1e-14)
        check(rv, erv, rtol=1e-12)
    x = rng.normal(0, 1, shape)
    before = rm.numpy().copy()
    y = F.batch_norm(T(x, device), rm, rv, T(w, device), T(b, device), training=False, data_format=fmt)
    check(y, ref_bn(x, c_axis, w, b, erm, erv)[0], rtol=1e-10, atol=1e-10)
    check(rm, before, rtol=0, atol=0)  # eval leaves them alone


def test_layer_train_eval_and_defaults(device):
    oar.set_device(device)
    bn = oar.nn.BatchNorm2D(3, momentum=0.5, epsilon=1e-3)
    x = rng.normal(1, 3, (4, 3, 5, 2)).astype("float32")
    y = bn(T(x, device))
    ref, m, v = ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3), eps=1e-3)
    check(y, ref, rtol=1e-5, atol=1e-5)
    check(bn._mean, 0.5 * m, rtol=1e-5, atol=1e-6)
    check(bn._variance, 0.5 + 0.5 * v, rtol=1e-5)
    bn.eval()
    y2 = bn(T(x, device))
    check(y2, ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3), 0.5 * m, 0.5 + 0.5 * v, 1e-3)[0],
          rtol=1e-5, atol=1e-5)


def test_weight_and_bias_none(device):
    x = rng.normal(0, 1, (5, 3))
    y = F.batch_norm(T(x, device), T(np.zeros(3), device), T(np.ones(3), device), training=True)
    check(y, ref_bn(x, 1, np.ones(3), np.zeros(3))[0], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fmt,shape", [("NCHW", (3, 2, 2, 3)), ("NHWC", (2, 3, 2, 2)), ("NC", (5, 3)),
                                       ("NCDHW", (2, 2, 2, 1, 3))])
def test_gradients_training(fmt, shape, device):
    c_axis = 1 if fmt.startswith("NC") else len(shape) - 1
    c = shape[c_axis]

    def fn(a, ww, bb):
        rm = oar.to_tensor(np.zeros(c), place=device)
        rv = oar.to_tensor(np.ones(c), place=device)
        return F.batch_norm(a, rm, rv, ww, bb, training=True, data_format=fmt)

    check_grad(fn, [rng.normal(0, 1, shape), rng.uniform(0.5, 1.5, c), rng.normal(0, 1, c)], device,
               rtol=1e-5, atol=1e-6)


def test_gradients_global_stats(device):
    rm, rv = rng.normal(0, 0.5, 3), rng.uniform(0.5, 2, 3)

    def fn(a, ww, bb):
        return F.batch_norm(a, T(rm, device), T(rv, device), ww, bb, training=True, use_global_stats=True)

    check_grad(fn, [rng.normal(0, 1, (2, 3, 4)), rng.uniform(0.5, 1.5, 3), rng.normal(0, 1, 3)], device)


def test_float32_accuracy_and_pieces(device):
    # Channels whose mean is far from 0 and rows longer than the kernel's pieces: float32 results within
    # float32 rounding of the float64 reference (statistics summed in double).
    x = rng.normal(1000.0, 0.5, (2, 3, 4500)).astype("float32")
    rm, rv = T(np.zeros(3, "float32"), device), T(np.ones(3, "float32"), device)
    y = F.batch_norm(T(x, device), rm, rv, training=True)
    ref, m, v = ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3))
    check(y, ref, rtol=0, atol=2e-3)  # |x - mean| ~ 1: 1000 has a float32 ulp of 6e-5, over std 0.5
    check(rv, 0.9 + 0.1 * v, rtol=1e-6)
    # channel last, more rows than one block of the kernel
    x2 = rng.normal(-5, 2, (3000, 7)).astype("float32")
    rm2, rv2 = T(np.zeros(7, "float32"), device), T(np.ones(7, "float32"), device)
    y2 = F.batch_norm(T(x2, device), rm2, rv2, training=True)
    check(y2, ref_bn(x2.astype(np.float64), 1, np.ones(7), np.zeros(7))[0], rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_x_float32_statistics(dtype, device):
    x = rng.normal(0.5, 1.5, (4, 3, 3, 2)).astype("float32")
    bn = oar.nn.BatchNorm2D(3)
    bn.to(device)
    xt = T(x, device, dtype)
    xt.stop_gradient = False
    y = bn(xt)
    assert y.dtype == getattr(oar, dtype) and bn._mean.dtype == oar.float32
    xq = xt.astype("float32").numpy().astype(np.float64)  # the rounded input
    ref, m, v = ref_bn(xq, 1, np.ones(3), np.zeros(3))
    tol = 1e-2 if dtype == "float16" else 5e-2
    check(y.astype("float32"), ref, rtol=tol, atol=tol)
    check(bn._mean, 0.1 * m, rtol=1e-5, atol=1e-6)
    y.astype("float32").sum().backward()
    assert xt.grad.dtype == getattr(oar, dtype)
    assert bn.weight.grad.dtype == oar.float32
    # d sum(y) / dx is 0 for a normalised channel (weight 1): the sum does not change with x
    np.testing.assert_allclose(xt.grad.astype("float32").numpy(), 0, atol=1e-2)


def test_bad_input_raises_naming_the_argument(device):
    x = T(rng.normal(0, 1, (3, 2, 2)), device)
    z, o = T(np.zeros(2), device), T(np.ones(2), device)
    with pytest.raises(ValueError, match="batch_norm: weight.shape"):
        F.batch_norm(x, z, o, weight=T(np.ones(3), device))
    with pytest.raises(ValueError, match="batch_norm: running_mean"):
        F.batch_norm(x, T(np.zeros(3), device), o)
    with pytest.raises(ValueError, match="batch_norm: x must have at least 2"):
        F.batch_norm(T(np.ones(3), device), z, o)
    with pytest.raises(ValueError, match="data_format"):
        F.batch_norm(x, z, o, data_format="NCWH")
    with pytest.raises(TypeError, match="batch_norm"):
        F.batch_norm(T(np.ones((3, 2), "int64"), device), z, o, training=True)
    # the op itself: a [C] input of the wrong dtype or shape is named
    op = _C.Op("batch_norm", "channel_axis")
    with pytest.raises(TypeError, match="running_var.dtype float32 must be float64"):
        op(x, o, z, z, o.astype("float32"), 1)
    with pytest.raises(ValueError, match=r"bias.shape \[3\] must be \[2\]"):
        op(x, o, T(np.zeros(3), device), z, o, 1)
    with pytest.raises(ValueError, match="non-empty"):
        op(T(np.zeros((0, 2)), device), o, z, z, o, 1)


def test_double_backward_raises(device):
    xt = T(rng.normal(0, 1, (4, 3)), device)
    xt.stop_gradient = False
    y = F.batch_norm(xt, T(np.zeros(3), device), T(np.ones(3), device), training=True)
    (dx,) = oar.grad([(y * y).sum()], [xt], create_graph=True)
    with pytest.raises(Exception, match="batch_norm_grad"):
        oar.grad([dx.sum()], [xt])


def test_one_op_each_way():
    # forward: one batch_norm op (plus the two assigns of the running statistics) and its inference
    # variant (use_global_stats, for clone(for_test=True)); backward: one batch_norm_grad, not a
    # composition of elementwise ops
    import oar.static as static
    oar.enable_static()
    try:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            x = static.data("x", [4, 3, 2, 2], "float32")
            x.stop_gradient = False
            bn = oar.nn.BatchNorm2D(3)
            loss = bn(x).mean()
            oar.static.append_backward(loss)
        ops = main.global_block().ops
        types = [op.type for op in ops]
        stats = sorted(op.attr("use_global_stats") for op in ops if op.type == "batch_norm")
    finally:
        oar.disable_static()
    assert stats == [0, 1] and sum(t.endswith("batch_norm_grad") for t in types) == 1, types
    assert types.count("assign") == 2, types
    for composite in ("rsqrt", "subtract"):
        assert composite not in types, types


def test_static_program_train_and_test_clone():
    import oar.static as static
    x = rng.normal(2, 1, (4, 3, 2, 2)).astype("float32")
    oar.enable_static()
    try:
        main, startup = static.Program(), static.Program()
        with static.program_guard(main, startup):
            xv = static.data("x", [4, 3, 2, 2], "float32")
            bn = oar.nn.BatchNorm2D(3)
            y = bn(xv)
        test = main.clone(for_test=True)
        exe = static.Executor()
        exe.run(startup)
        (yt,) = exe.run(main, feed={"x": x}, fetch_list=[y])
        (ye,) = exe.run(test, feed={"x": x}, fetch_list=[y])
        mean = np.asarray(static.global_scope().find_var(bn._mean.name).get_tensor())
    finally:
        oar.disable_static()
    ref, m, v = ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3))
    np.testing.assert_allclose(yt, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, 0.1 * m, rtol=1e-5, atol=1e-6)
    # the test program normalises with the running statistics (updated once by the training run)
    ref_e = ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3), 0.1 * m, 0.9 + 0.1 * v)[0]
    np.testing.assert_allclose(ye, ref_e, rtol=1e-5, atol=1e-5)


def test_to_static_matches_eager():
    net = oar.nn.Sequential(oar.nn.Conv2D(2, 3, 3, padding=1), oar.nn.BatchNorm2D(3), oar.nn.ReLU())
    x = oar.to_tensor(rng.normal(0, 1, (2, 2, 4, 4)).astype("float32"))
    net.eval()
    want = net(x).numpy()
    st = oar.jit.to_static(net)
    np.testing.assert_allclose(st(x).numpy(), want, rtol=1e-6, atol=1e-6)
    net.train()
    before = net[1]._mean.numpy().copy()
    y = st(x)
    y.sum().backward()
    assert not np.allclose(net[1]._mean.numpy(), before)  # the running statistics moved
    assert net[1].weight.grad is not None


_DETERMINISM = """
import numpy as np, oar, oar.nn.functional as F
r = np.random.default_rng(3)
out = []
# 7x7 planes: the AVX-512 loops' 4-row groups and masked tails; 4100: a ragged last segment. float64 shows
# the double sums' last bits, which float32 results mostly round away.
for shape, fmt, dt in (((8, 16, 33, 35), "NCHW", "float32"), ((8, 33, 35, 16), "NHWC", "float32"),
                       ((1, 3, 70000), "NCL", "float32"), ((9, 37, 7, 7), "NCHW", "float32"),
                       ((3, 5, 4100), "NCL", "float32"), ((9, 37, 7, 7), "NCHW", "float64"),
                       ((3, 5, 4100), "NCL", "float64")):
    c = shape[1] if fmt.startswith("NC") else shape[-1]
    for training in (True, False):
        x = oar.to_tensor(r.normal(1, 2, shape).astype(dt)); x.stop_gradient = False
        rm, rv = oar.to_tensor(r.normal(0, 1, c).astype(dt)), oar.ones([c], dtype=dt)
        w = oar.to_tensor(r.normal(1, 1, c).astype(dt)); w.stop_gradient = False
        y = F.batch_norm(x, rm, rv, w, training=training, data_format=fmt)
        (y * oar.to_tensor(r.normal(0, 1, shape).astype(dt))).sum().backward()
        out += [y.numpy(), rm.numpy(), rv.numpy(), x.grad.numpy(), w.grad.numpy()]
np.savez(__import__("sys").argv[1], *out)
"""


def test_same_bits_for_any_thread_count(tmp_path):
    res = []
    for n in ("1", "2", "3"):
        path = str(tmp_path / "r{}.npz".format(n))
        env = dict(os.environ, OMP_NUM_THREADS=n)
        subprocess.run([sys.executable, "-c", _DETERMINISM, path], check=True, env=env, cwd=str(tmp_path))
        res.append(np.load(path))
    for other in res[1:]:
        for k in res[0].files:
            assert np.array_equal(res[0][k], other[k]), k


def test_same_bits_for_any_instruction_set(tmp_path):
    # The AVX-512 loops (several rows' sums at once, 16-lane passes) against the AVX2 and baseline builds.
    res = []
    for isa in ("", "avx2", "baseline"):
        path = str(tmp_path / "isa{}.npz".format(isa))
        env = dict(os.environ, OMP_NUM_THREADS="2", OAR_CPU_VEC_ISA=isa)
        subprocess.run([sys.executable, "-c", _DETERMINISM, path], check=True, env=env, cwd=str(tmp_path))
        res.append(np.load(path))
    for other in res[1:]:
        for k in res[0].files:
            assert res[0][k].tobytes() == other[k].tobytes(), k


def _saved_ops(path):
    p = _C._ProgramDesc.from_bytes(open(path + ".pdmodel", "rb").read())
    return p, p.block(0)["ops"]


def _predict(path, x, ir_optim=True):
    import oar.inference as inference
    config = inference.Config(path + ".pdmodel", path + ".pdiparams")
    config.switch_ir_optim(ir_optim)
    predictor = inference.create_predictor(config)
    return predictor.run([x])[0]


def test_jit_save_writes_paddles_batch_norm_and_the_predictor_folds_it(tmp_path):
    from oar.static import InputSpec
    oar.seed(3)
    m = oar.nn.Sequential(oar.nn.Conv2D(2, 4, 3), oar.nn.BatchNorm2D(4), oar.nn.ReLU())
    for _ in range(2):  # running statistics away from 0 / 1
        m(oar.to_tensor(rng.normal(1, 2, (4, 2, 6, 6)).astype("float32")))
    m.eval()
    path = str(tmp_path / "convbn")
    oar.jit.save(m, path, input_spec=[InputSpec([None, 2, 6, 6], "float32", "x")])
    p, ops = _saved_ops(path)
    bn = [op for op in ops if op["type"] == "batch_norm"]
    assert len(bn) == 1, [op["type"] for op in ops]
    a = bn[0]["attrs"]
    assert a["is_test"] and not a["use_global_stats"] and a["data_layout"] == "NCHW"
    assert bn[0]["outputs"]["MeanOut"] == bn[0]["inputs"]["Mean"]  # Paddle's in-place convention
    for composite in ("rsqrt", "elementwise_sub", "sqrt"):
        assert composite not in [op["type"] for op in ops]
    params = _C._load_param_tensors(p, open(path + ".pdiparams", "rb").read())
    _, _, report = _C._run_inference_passes(p, params)
    assert report["fold_conv_bn"]["ops_fused"] == 1
    x = rng.normal(0, 1, (3, 2, 6, 6)).astype("float32")
    want = m(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(_predict(path, x), want, rtol=1e-5, atol=1e-5)  # folded
    np.testing.assert_allclose(_predict(path, x, ir_optim=False), want, rtol=1e-6, atol=1e-6)  # imported op
    # jit.load runs the saved program through the importer: the same numbers
    loaded = oar.jit.load(path)
    np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fmt,shape", [("NHWC", (None, 3, 3, 5)), ("NC", (None, 5))])
def test_jit_save_channel_last_and_2d(fmt, shape, tmp_path):
    from oar.static import InputSpec
    layer = oar.nn.BatchNorm2D(5, data_format=fmt) if fmt == "NHWC" else oar.nn.BatchNorm1D(5)
    layer(oar.to_tensor(rng.normal(2, 3, (4,) + shape[1:]).astype("float32")))
    layer.eval()
    path = str(tmp_path / "bn")
    oar.jit.save(layer, path, input_spec=[InputSpec(list(shape), "float32", "x")])
    _, ops = _saved_ops(path)
    bn = [op for op in ops if op["type"] == "batch_norm"]
    assert len(bn) == 1 and bn[0]["attrs"]["data_layout"] == ("NHWC" if fmt == "NHWC" else "NCHW")
    x = rng.normal(0, 1, (2,) + shape[1:]).astype("float32")
    np.testing.assert_allclose(_predict(path, x), layer(oar.to_tensor(x)).numpy(), rtol=1e-6, atol=1e-6)


def test_auto_cast_keeps_16bit_x_and_float32_statistics():
    # bfloat16 auto_cast on the CPU: the conv runs in bfloat16 and its output goes into batch_norm as it is
    # (no cast to float32 for BN), the parameters and running statistics stay float32.
    oar.seed(5)
    # no conv bias: its add would promote the bfloat16 conv output to float32 (the promote rule)
    m = oar.nn.Sequential(oar.nn.Conv2D(2, 3, 3, bias_attr=False), oar.nn.BatchNorm2D(3))
    x = oar.to_tensor(rng.normal(0, 1, (2, 2, 5, 5)).astype("float32"))
    _C._amp_collect_stats(True)
    try:
        with oar.amp.auto_cast(dtype="bfloat16", level="O1"):
            y = m(x)
        stats = {op: list(c) for op, c in _C._amp_op_stats().items()}
    finally:
        _C._amp_collect_stats(False)
    assert y.dtype == oar.bfloat16
    assert m[1]._mean.dtype == oar.float32 and m[1].weight.dtype == oar.float32
    ref = m(x).numpy()  # float32 throughout
    np.testing.assert_allclose(y.astype("float32").numpy(), ref, rtol=0.05, atol=0.05)
    assert stats["batch_norm"] == [0, 1, 0, 0], stats  # called once, with bfloat16 x (no float32 call)


def test_jit_save_in_training_mode_writes_batch_statistics(tmp_path):
    # As Paddle's jit.save of a model in training mode: batch_norm with is_test false (batch statistics).
    from oar.static import InputSpec
    layer = oar.nn.BatchNorm2D(3)
    path = str(tmp_path / "bn_train")
    oar.jit.save(layer, path, input_spec=[InputSpec([None, 3, 2, 2], "float32", "x")])
    _, ops = _saved_ops(path)
    bn = [op for op in ops if op["type"] == "batch_norm"]
    assert len(bn) == 1 and not bn[0]["attrs"]["is_test"], [op["type"] for op in ops]
    x = rng.normal(3, 2, (4, 3, 2, 2)).astype("float32")
    want = ref_bn(x.astype(np.float64), 1, np.ones(3), np.zeros(3))[0]
    np.testing.assert_allclose(_predict(path, x), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 3), (2, 3, 0), (0, 3, 2, 2)])
def test_empty_x_with_global_stats(shape, device):
    # no elements to normalise: an empty result and zero gradients for weight and bias
    xt = T(np.zeros(shape), device)
    xt.stop_gradient = False
    w = T(np.ones(3), device)
    w.stop_gradient = False
    y = F.batch_norm(xt, T(np.zeros(3), device), T(np.ones(3), device), weight=w, training=False)
    assert y.shape == list(shape)
    y.sum().backward()
    assert xt.grad.shape == list(shape)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))
