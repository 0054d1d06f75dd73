"""oar.amp: auto_cast's casts in the dispatcher (white / black / promote lists, O1 / O2, custom lists, the
weight-cast cache, gradients through the casts), decorate and master weights, GradScaler on the fused
check_finite_and_unscale / update_loss_scaling ops, to_static and jit.save with AMP, Model.prepare's
amp_configs, and a Paddle 2.x AMP loop on every device."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import oar
from oar import _C, amp

BF16 = oar.bfloat16
F32 = oar.float32


def _t(shape, seed=0, dtype="float32", stop_gradient=True):
    a = np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")
    t = oar.to_tensor(a, dtype=dtype)
    t.stop_gradient = stop_gradient
    return t


def _param(shape, seed=1):
    return oar.create_parameter(shape, "float32", default_initializer=oar.nn.initializer.Assign(
        np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")))


def _f32(t):
    return t.astype("float32").numpy().astype(np.float64)


# ---- dtypes inside and outside auto_cast --------------------------------------------------------------
def test_o1_white_black_promote_dtypes():
    x, w = _t([4, 8]), _param([8, 3])
    xb = x.astype(BF16)
    with amp.auto_cast(dtype="bfloat16"):
        assert oar.matmul(x, w).dtype == BF16                 # white
        assert oar.nn.functional.linear(x, w).dtype == BF16    # linear is matmul (+ add)
        assert oar.exp(xb).dtype == F32                        # black: up to float32
        assert oar.sum(xb).dtype == F32
        assert oar.nn.functional.softmax(xb).dtype == F32
        assert (xb + x).dtype == F32                           # promote: mixed -> widest
        assert (xb * xb).dtype == BF16                         # promote: all bfloat16 stays
        assert oar.nn.functional.relu(xb).dtype == BF16
        assert oar.nn.functional.relu(x).dtype == F32
        assert oar.concat([xb, x]).dtype == F32
        assert amp.amp_state() == ("O1", "bfloat16") and amp.is_auto_cast_enabled()
        # integer and float64 inputs are never cast
        assert oar.matmul(x.astype("float64"), w.astype("float64")).dtype == oar.float64
    assert oar.matmul(x, w).dtype == F32 and amp.amp_state() is None
    # values: the white op ran on bfloat16 inputs with float32 accumulation
    with amp.auto_cast(dtype="bfloat16"):
        y = oar.matmul(x, w)
    ref = _f32(x.astype(BF16)) @ _f32(w.astype(BF16))
    np.testing.assert_allclose(_f32(y), ref, rtol=1e-2, atol=1e-2)


def test_custom_lists_and_errors():
    x, w = _t([4, 8]), _param([8, 3])
    with amp.auto_cast(dtype="bfloat16", custom_black_list=["matmul_v2"]):
        assert oar.matmul(x, w).dtype == F32
    with amp.auto_cast(dtype="bfloat16", custom_white_list=["exp", "elementwise_add"]):
        assert oar.exp(x).dtype == BF16
        assert (x + x).dtype == BF16
    with amp.auto_cast(dtype="bfloat16", custom_black_list=["relu"]):
        assert oar.nn.functional.relu(x.astype(BF16)).dtype == F32
    with pytest.raises(ValueError, match="both name"):
        with amp.auto_cast(custom_white_list=["exp"], custom_black_list=["exp"]):
            pass
    with pytest.raises(ValueError, match="level"):
        with amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="dtype"):
        with amp.auto_cast(dtype="float64"):
            pass
    with pytest.raises(TypeError, match="custom lists"):
        with amp.auto_cast(custom_white_list=[1]):
            pass
    for off in (amp.auto_cast(enable=False, dtype="bfloat16"), amp.auto_cast(level="O0", dtype="bfloat16")):
        with off:
            assert oar.matmul(x, w).dtype == F32


def test_o2_and_od_levels():
    x, w = _t([4, 8]), _param([8, 3])
    xb = x.astype(BF16)
    with amp.auto_cast(level="O2", dtype="bfloat16"):
        assert oar.matmul(x, w).dtype == BF16
        assert oar.exp(xb).dtype == BF16           # O2's black list is only Paddle's extra list
        assert oar.nn.functional.relu(x).dtype == F32  # use_promote: a float32 input keeps float32
        assert (xb + x).dtype == F32
    with amp.auto_cast(level="O2", dtype="bfloat16", use_promote=False):
        assert oar.nn.functional.relu(x).dtype == BF16  # everything in the low dtype
        assert (x + x).dtype == BF16
        assert oar.nn.functional.interpolate(x.reshape([1, 1, 4, 8]), scale_factor=2).dtype == F32  # extra black
    with amp.auto_cast(level="OD", dtype="bfloat16"):
        assert oar.matmul(x, w).dtype == BF16
        assert (xb * xb).dtype == F32  # OD: everything but the white list in float32


def test_float16_on_cpu_warns_and_keeps_float32():
    sys.modules["oar.amp.auto_cast"]._warned_fp16_cpu[0] = False  # (oar.amp.auto_cast is the function)
    x, w = _t([4, 8]), _param([8, 3])
    with pytest.warns(UserWarning, match="float16"):
        with amp.auto_cast():  # Paddle's default dtype, float16
            assert oar.matmul(x, w).dtype == F32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with amp.auto_cast():  # said once
            pass
    assert not amp.is_float16_supported("cpu")
    assert amp.is_bfloat16_supported("cpu")
    assert not amp.is_bfloat16_supported("nosuchdevice")


# ---- the weight-cast cache and gradients ---------------------------------------------------------------
def test_weight_cast_cache_counts():
    w = _param([8, 3])
    xb = _t([4, 8]).astype(BF16)  # already low precision: only the weight needs a cast
    with amp.auto_cast(dtype="bfloat16"):
        n0 = _C._amp_cast_count()
        oar.matmul(xb, w)
        oar.matmul(xb, w)
        oar.matmul(xb * 2, w)
        assert _C._amp_cast_count() - n0 == 1  # one cast of w for three uses
        with oar.no_grad():
            w.set_value(w * 0.5)  # an in-place update makes the cached cast stale
        y = oar.matmul(xb, w)
        assert _C._amp_cast_count() - n0 == 2
        np.testing.assert_allclose(_f32(y), _f32(xb) @ _f32(w.astype(BF16)), rtol=1e-2, atol=1e-2)
    with amp.auto_cast(dtype="bfloat16"):  # a new region casts again
        n1 = _C._amp_cast_count()
        oar.matmul(xb, w)
        assert _C._amp_cast_count() - n1 == 1
    # activations (non-leaf tensors) are not cached: each use casts
    x = _t([4, 8])
    with amp.auto_cast(dtype="bfloat16"):
        n2 = _C._amp_cast_count()
        oar.matmul(x, w)
        oar.matmul(x, w)
        assert _C._amp_cast_count() - n2 == 3  # x twice, w once


def test_gradients_flow_in_float32_through_casts():
    x, w = _t([5, 8]), _param([8, 3])
    with amp.auto_cast(dtype="bfloat16"):
        y = oar.matmul(x, w)
        loss = (y.astype("float32") ** 2).mean()
    loss.backward()
    assert w.grad.dtype == F32
    xb, wb = _f32(x.astype(BF16)), _f32(w.astype(BF16))
    ref = xb.T @ (2 * (xb @ wb) / y.size)
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=3e-2, atol=3e-3)
    # two forward/backward passes in one region share the cached cast: the gradients accumulate
    w.clear_gradient()
    with amp.auto_cast(dtype="bfloat16"):
        for _ in range(2):
            oar.matmul(x, w).astype("float32").sum().backward()
    g1 = xb.sum(0, keepdims=True).T.repeat(3, 1)
    np.testing.assert_allclose(w.grad.numpy(), 2 * g1, rtol=3e-2, atol=3e-2)


def test_backward_is_not_autocast():
    # the gradient of a black op fed by a bfloat16 tensor reaches that tensor in bfloat16
    x = _t([4, 4], stop_gradient=False)
    with amp.auto_cast(dtype="bfloat16"):
        xb = x.astype(BF16)
        y = oar.exp(xb)  # runs in float32
        assert y.dtype == F32
    y.sum().backward()
    assert x.grad.dtype == F32
    np.testing.assert_allclose(x.grad.numpy(), np.exp(_f32(xb)), rtol=2e-2)


def test_operator_stats():
    x, w = _t([4, 8]), _param([8, 3])
    amp.debugging.enable_operator_stats_collection()
    try:
        with amp.auto_cast(dtype="bfloat16"):
            oar.matmul(x, w)
            oar.exp(x)
        stats = {k: list(v) for k, v in _C._amp_op_stats().items()}
    finally:
        amp.debugging.disable_operator_stats_collection()
    assert stats["matmul"][1] == 1 and stats["exp"][2] == 1
    assert stats["cast"][2] == 2  # x and w cast from float32
    stats_t, values = amp.debugging.check_numerics(oar.to_tensor([1.0, 0.0, 3.0]), "op", "v")
    assert stats_t.numpy().tolist() == [0, 0, 1]
    np.testing.assert_allclose(values.numpy(), [3.0, 0.0, 4.0 / 3], rtol=1e-6)
    with pytest.raises(RuntimeError, match="NaN"):
        amp.debugging.check_numerics(oar.to_tensor([np.nan, 1.0]), "op", "v")
    st, _ = amp.debugging.check_numerics(oar.to_tensor([np.inf, 1.0]), "op", "v", amp.debugging.DebugMode.CHECK_NAN_INF)
    assert st.numpy().tolist() == [0, 1, 0]


# ---- the fused loss-scaling ops -------------------------------------------------------------------------
def test_check_finite_and_unscale_op():
    a = _t([3, 5]).astype(BF16)
    b = _t([7], seed=3)
    a0, b0 = _f32(a), _f32(b)
    scale = oar.to_tensor([4.0])
    found = _C.Op("check_finite_and_unscale")([a, b, scale])
    assert found.dtype == oar.bool and found.shape == [1] and not bool(found.numpy()[0])
    np.testing.assert_allclose(_f32(a), a0 / 4, rtol=1e-2)
    np.testing.assert_allclose(_f32(b), b0 / 4, rtol=1e-7)
    big = np.zeros(100000, np.float32)
    big[77777] = np.inf
    c = oar.to_tensor(big)
    assert bool(_C.Op("check_finite_and_unscale")([a, c, scale]).numpy()[0])
    nan = oar.to_tensor(np.array([1.0, np.nan], np.float32)).astype("float16")
    assert bool(_C.Op("check_finite_and_unscale")([nan, scale]).numpy()[0])
    with pytest.raises(ValueError, match="scale must be one float32"):
        _C.Op("check_finite_and_unscale")([b, oar.to_tensor([1.0, 2.0])])
    with pytest.raises(Exception, match="int64 is not supported"):
        _C.Op("check_finite_and_unscale")([oar.to_tensor([1, 2]), scale])


def test_update_loss_scaling_op():
    op = _C.Op("update_loss_scaling")
    found = oar.to_tensor([True])
    scale, good, bad = oar.to_tensor([4.0]), oar.to_tensor(np.array([0], np.int32)), oar.to_tensor(np.array([0], np.int32))
    attrs = dict(incr_every_n_steps=2, decr_every_n_nan_or_inf=2, incr_ratio=2.0, decr_ratio=0.5)
    op(found, scale, good, bad, **attrs)
    assert (scale.numpy()[0], good.numpy()[0], bad.numpy()[0]) == (4.0, 0, 1)
    op(found, scale, good, bad, **attrs)
    assert (scale.numpy()[0], bad.numpy()[0]) == (2.0, 0)
    for _ in range(4):
        op(found, scale, good, bad, **attrs)
    assert scale.numpy()[0] == 1.0  # never below 1
    ok = oar.to_tensor([False])
    op(ok, scale, good, bad, **attrs)
    op(ok, scale, good, bad, **attrs)
    assert (scale.numpy()[0], good.numpy()[0]) == (2.0, 0)
    with pytest.raises(ValueError, match="decr_ratio"):
        op(ok, scale, good, bad, **dict(attrs, decr_ratio=1.5))
    with pytest.raises(ValueError, match="good_steps"):
        op(ok, scale, scale, bad, **attrs)


# ---- GradScaler -----------------------------------------------------------------------------------------
def _net(seed=0):
    oar.seed(seed)
    return oar.nn.Sequential(oar.nn.Linear(6, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))


def test_grad_scaler_skips_inf_and_rescales():
    net = _net()
    opt = oar.optimizer.SGD(0.1, parameters=net.parameters())
    scaler = amp.GradScaler(init_loss_scaling=1024.0, incr_every_n_steps=2, decr_every_n_nan_or_inf=1)
    x = _t([4, 6])
    before = [p.numpy().copy() for p in net.parameters()]
    with amp.auto_cast(dtype="bfloat16"):
        loss = net(x).astype("float32").mean()
    scaled = scaler.scale(loss)
    np.testing.assert_allclose(scaled.numpy(), loss.numpy() * 1024, rtol=1e-6)
    scaled.backward()
    net[0].weight.grad[0, 0] = float("inf")  # an overflowed gradient
    scaler.step(opt)
    scaler.update()
    for p, b in zip(net.parameters(), before):
        np.testing.assert_array_equal(p.numpy(), b)  # the step was skipped
    assert scaler.get_loss_scaling().numpy()[0] == 512.0
    assert scaler._cache_founf_inf is True
    opt.clear_grad()
    # two good steps: the parameters move by the unscaled gradient and the scale doubles
    for step in range(2):
        with amp.auto_cast(dtype="bfloat16"):
            loss = net(x).astype("float32").mean()
        scaler.scale(loss).backward()
        ref_grads = [p.grad.numpy().copy() / scaler.get_loss_scaling().numpy()[0] for p in net.parameters()]
        ref = [p.numpy() - 0.1 * g for p, g in zip(net.parameters(), ref_grads)]
        scaler.step(opt)
        scaler.update()
        for p, r in zip(net.parameters(), ref):
            np.testing.assert_allclose(p.numpy(), r, rtol=1e-5, atol=1e-6)
        opt.clear_grad()
    assert scaler.get_loss_scaling().numpy()[0] == 1024.0
    with pytest.raises(RuntimeError, match="already been called"):
        loss = net(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.step(opt)


def test_grad_scaler_minimize_unscale_and_state_dict():
    net = _net(1)
    opt = oar.optimizer.Adam(0.01, parameters=net.parameters())
    scaler = amp.AmpScaler(init_loss_scaling=64.0, incr_every_n_steps=1)
    x = _t([4, 6])
    scaled = scaler.scale(net(x).mean())
    scaled.backward()
    g = net[0].weight.grad.numpy().copy()
    scaler.unscale_(opt)
    np.testing.assert_allclose(net[0].weight.grad.numpy(), g / 64, rtol=1e-6)
    with pytest.raises(RuntimeError, match="unscale_"):
        scaler.unscale_(opt)
    scaler.minimize(opt, scaled)
    assert scaler.get_loss_scaling().numpy()[0] == 128.0
    sd = scaler.state_dict()
    assert sd["incr_count"] == 0 and sd["scale"][0] == 128.0 and sd["use_dynamic_loss_scaling"]
    other = amp.GradScaler()
    other.load_state_dict(sd)
    assert other.state_dict()["scale"][0] == 128.0 and other.get_incr_every_n_steps() == 1
    assert amp.GradScaler(enable=False).state_dict() == {}
    off = amp.GradScaler(enable=False)
    loss = net(x).mean()
    assert off.scale(loss) is loss and not off.is_enable()
    with pytest.raises(ValueError, match="decr_ratio"):
        amp.GradScaler(decr_ratio=2.0)
    with pytest.raises(TypeError, match="incr_every_n_steps"):
        amp.GradScaler(incr_every_n_steps=1.5)
    static = amp.GradScaler(use_dynamic_loss_scaling=False, init_loss_scaling=8.0)
    assert not static.is_use_dynamic_loss_scaling()


# ---- O2: decorate and master weights --------------------------------------------------------------------
class _Block(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = oar.nn.Linear(6, 16)
        self.norm = oar.nn.LayerNorm(16)
        self.fc2 = oar.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(oar.nn.functional.relu(self.norm(self.fc1(x))))


def test_decorate_o2_master_weights_match_fp32_reference():
    oar.seed(5)
    ref = _Block()
    model = _Block()
    model.set_state_dict(ref.state_dict())
    opt_ref = oar.optimizer.SGD(0.05, parameters=ref.parameters())
    opt = oar.optimizer.SGD(0.05, parameters=model.parameters())
    model, opt = amp.decorate(model, opt, level="O2", dtype="bfloat16")
    assert model.fc1.weight.dtype == BF16 and model.fc2.bias.dtype == BF16
    assert model.norm.weight.dtype == F32  # norm layers stay float32
    assert opt._multi_precision
    x, y = _t([16, 6], seed=9), oar.to_tensor(np.random.default_rng(2).integers(0, 3, [16, 1]))
    loss_fn = oar.nn.CrossEntropyLoss()
    for _ in range(5):
        loss_fn(ref(x), y).backward()
        opt_ref.step()
        opt_ref.clear_grad()
        with amp.auto_cast(level="O2", dtype="bfloat16"):
            out = model(x)
            assert out.dtype == BF16
            loss = loss_fn(out.astype("float32"), y)
        loss.backward()
        assert model.fc1.weight.grad.dtype == BF16
        opt.step()
        opt.clear_grad()
    masters = opt.state_dict()["master_weights"]
    m = masters[model.fc1.weight.name]
    assert m.dtype == F32
    # the master weight follows the fp32 reference within bf16 rounding of the forward/backward
    np.testing.assert_allclose(m.numpy(), ref.fc1.weight.numpy(), atol=2e-2)
    np.testing.assert_allclose(_f32(model.fc1.weight), m.numpy(), rtol=1e-2, atol=1e-3)  # the rounded copy
    # state round trip of the master weights
    opt2 = oar.optimizer.SGD(0.05, parameters=model.parameters(), multi_precision=True)
    opt2.set_state_dict(opt.state_dict())
    assert opt2._master_holder[model.fc1.weight.name] is m


def test_decorate_arguments():
    model = _Block()
    assert amp.decorate(model, level="O1") is model
    models = amp.decorate([model, _Block()], level="O2", dtype="bfloat16", excluded_layers=[oar.nn.Linear])
    assert models[0].fc1.weight.dtype == F32  # excluded by type
    saved = amp.decorate(_Block(), level="O2", dtype="bfloat16", save_dtype="float32")
    assert saved.fc1.weight.dtype == BF16
    sd = saved.state_dict()
    assert sd["fc1.weight"].dtype == F32 and sd["norm.weight"].dtype == F32
    np.testing.assert_array_equal(sd["fc1.weight"].numpy(), _f32(saved.fc1.weight).astype(np.float32))
    assert saved.state_dict(use_hook=False)["fc1.weight"].dtype == BF16
    with pytest.raises(TypeError, match="Layers"):
        amp.decorate("model")
    with pytest.raises(ValueError, match="save_dtype"):
        amp.decorate(model, save_dtype="int8")


# ---- to_static and jit.save ----------------------------------------------------------------------------
def test_to_static_records_casts_and_jit_save_keeps_them(tmp_path):
    oar.seed(3)
    net = oar.nn.Sequential(oar.nn.Linear(6, 8), oar.nn.ReLU(), oar.nn.Linear(8, 2))
    net.eval()
    x = _t([4, 6])
    with amp.auto_cast(dtype="bfloat16"):
        eager = net(x)
    static = oar.jit.to_static(net)
    plain = static(x)  # outside auto_cast: a trace without casts
    assert plain.dtype == F32
    np.testing.assert_allclose(plain.numpy(), _f32(net(x)), rtol=1e-6)
    with amp.auto_cast(dtype="bfloat16"):
        out = static(x)  # another trace (keyed by the auto_cast arguments), with the casts
    assert out.dtype == eager.dtype
    np.testing.assert_allclose(_f32(out), _f32(eager), rtol=1e-6)
    cp = next(reversed(net.forward._cache.values()))
    types = [op.type for op in cp.main_program.global_block().ops]
    assert "cast" in types, types
    # jit.save outside auto_cast retraces the last trace under its auto_cast: the casts are saved
    path = str(tmp_path / "amp_net")
    oar.jit.save(net, path)
    loaded = oar.jit.load(path)
    got = loaded(x)
    np.testing.assert_allclose(_f32(got), _f32(eager), rtol=1e-6)
    assert not np.allclose(_f32(got), plain.numpy(), rtol=1e-6, atol=1e-7)  # it really ran in bfloat16


# ---- Model.prepare(amp_configs) -------------------------------------------------------------------------
@pytest.mark.parametrize("configs", ["O1", "O2", {"level": "O2", "dtype": "bfloat16", "init_loss_scaling": 128.0,
                                                  "custom_black_list": ["relu"]}])
def test_model_prepare_amp_configs(configs):
    oar.seed(0)
    net = _Block()
    model = oar.Model(net)
    opt = oar.optimizer.Adam(0.01, parameters=model.parameters())
    model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs=configs)
    x = np.random.default_rng(0).uniform(-1, 1, [8, 6]).astype("float32")
    y = np.random.default_rng(1).integers(0, 3, [8, 1])
    losses = [float(model.train_batch([x], [y])[0]) for _ in range(5)]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    level = configs if isinstance(configs, str) else configs["level"]
    assert (net.fc1.weight.dtype == BF16) == (level == "O2")
    assert model._scaler is not None
    if isinstance(configs, dict):
        assert model._scaler.get_init_loss_scaling() == 128.0
    out = model.predict_batch([x])[0]
    assert out.dtype == np.float32 and out.shape == (8, 3)


def test_model_prepare_amp_errors():
    model = oar.Model(_Block())
    opt = oar.optimizer.SGD(0.1, parameters=model.parameters())
    with pytest.raises(ValueError, match="unknown amp_configs"):
        model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs={"level": "O1", "nope": 1})
    with pytest.raises(ValueError, match="level"):
        model.prepare(opt, oar.nn.CrossEntropyLoss(), amp_configs="O3")


# ---- a Paddle 2.x AMP loop, unchanged, on every device --------------------------------------------------
PADDLE_LOOP = """
import numpy as np
import oar as paddle

paddle.set_device({device!r})
paddle.seed(0)
model = paddle.nn.Sequential(paddle.nn.Conv2D(1, 4, 3), paddle.nn.ReLU(), paddle.nn.Flatten(),
                             paddle.nn.Linear(4 * 6 * 6, 10))
optimizer = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
level = {level!r}
if level == 'O2':
    model, optimizer = paddle.amp.decorate(models=model, optimizers=optimizer, level='O2', dtype='bfloat16')
scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
rng = np.random.default_rng(0)
data = paddle.to_tensor(rng.uniform(-1, 1, [16, 1, 8, 8]).astype('float32'))
label = paddle.to_tensor(rng.integers(0, 10, [16, 1]))
losses = []
for step in range(6):
    with paddle.amp.auto_cast(level=level, dtype='bfloat16'):
        out = model(data)
        loss = paddle.nn.functional.cross_entropy(out.astype('float32'), label)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.minimize(optimizer, scaled)
    optimizer.clear_grad()
    losses.append(float(loss))
assert losses[-1] < losses[0], losses
print('ok', losses[0], losses[-1])
"""


@pytest.mark.parametrize("level", ["O1", "O2"])
def test_paddle_amp_loop(device, level):
    code = PADDLE_LOOP.format(device=device, level=level)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OAR_FALLBACK_POLICY="allow"))
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]


# ---- LeNet on Fashion-MNIST with O2 bfloat16 ------------------------------------------------------------
ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
FASHION = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(FASHION), reason="Debian's dataset-fashion-mnist is not installed")
def test_lenet_fashion_mnist_o2_bfloat16(tmp_path):
    cmd = [sys.executable, os.path.join(ROOT, "samples", "train_lenet.py"), "--amp", "O2", "--epochs", "3",
           "--save-dir", str(tmp_path / "lenet"), "--verbose", "2", "--log-freq", "200"]
    proc = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=3000)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    acc = float(out.split("final test accuracy: ")[1].split()[0])
    assert acc >= 0.88, out[-3000:]
