"""The gpu plugin's vendor-library and optimizer kernels (plugins/cuda/README.md): cuBLASLt matmul (every
batch/broadcast/transpose mapping, the TF32 policy), cuDNN convolutions, the pooling kernels and the fused
optimizer updates, against float64 numpy or the CPU kernels, and which calls the plugin declines (each a
counted CPU fallback). The registry-driven op suite covers the ops' samples; this file covers what it
cannot see: the mapping onto cuBLAS strides, exactness against the CPU, the policy and the declines.
Skipped where no GPU is usable, with the runtime's reason."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import _C


# Why no GPU is usable (the loader's record of the gpu plugin), or None.
_WHY = None if oar.device.cuda.device_count() > 0 else (oar.device.cuda.unavailable_reason() or
                                                         "no gpu plugin (liboar_plugin_cuda.so) is loaded")
pytestmark = pytest.mark.skipif(_WHY is not None, reason="no usable GPU: {}".format(_WHY))
G = "gpu:0"
RNG = np.random.default_rng(0)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
TOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-12}


def T(a, place, dtype="float32"):
    return oar.to_tensor(np.asarray(a, dtype=np.float64), place=place).astype(dtype)


def host(t):
    """float64 numpy of a tensor (float16/bfloat16 read exactly through float32)."""
    return t.astype("float32").numpy().astype(np.float64) if t.dtype in (oar.float16, oar.bfloat16) else \
        t.numpy().astype(np.float64)


def fallbacks(op, dtype):
    return _C.fallback_counts().get((op, "gpu", dtype), 0)


# ---- matmul ------------------------------------------------------------------------------------------
# (x shape, y shape, transpose_x, transpose_y) and the cuBLAS mapping each one takes.
MATMUL = [
    ((3, 4), (4, 5), 0, 0),  # 2-D
    ((2, 3, 4), (4, 5), 0, 0),  # a batch times one matrix: folded into M
    ((2, 4, 3), (4, 5), 1, 0),  # the same, X transposed: a batch with Y's stride 0
    ((5, 4), (3, 4, 6), 0, 0),  # one X for a batch of Y: X's stride 0
    ((3, 5, 4), (3, 6, 4), 0, 1),  # full batch, Y transposed
    ((2, 4, 3), (5, 4), 1, 1),  # both transposed
    ((2, 1, 3, 4), (1, 1, 4, 5), 0, 0),  # broadcast batch dims that reduce to "single"
    ((2, 1, 3, 4), (3, 4, 5), 0, 0),  # a mixed broadcast: a strided batch per index of the outer dims
    ((2, 1, 3, 3, 4), (1, 4, 1, 5, 4), 0, 1),  # mixed in two dims, the last batch dim broadcast too
    ((4,), (2, 4, 5), 0, 0),  # vector x
    ((3, 4), (4,), 0, 0),  # vector y
    ((7,), (7,), 0, 0),  # dot
    ((67, 129), (131, 129), 0, 1),  # odd sizes (unaligned leading dimensions)
]


def np_matmul(a, b, tx, ty):
    if tx and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if ty and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", MATMUL, ids=lambda c: "{}x{}t{}{}".format(*c))
def test_matmul_mappings(case, dtype):
    xs, ys, tx, ty = case
    x, y = T(RNG.uniform(-1, 1, xs), G, dtype), T(RNG.uniform(-1, 1, ys), G, dtype)
    before = fallbacks("matmul", dtype)
    out = oar.matmul(x, y, transpose_x=bool(tx), transpose_y=bool(ty))
    want = np_matmul(host(x), host(y), tx, ty)
    assert out.shape == list(want.shape) and out.dtype == x.dtype
    np.testing.assert_allclose(host(out), want, rtol=TOL[dtype], atol=TOL[dtype] * 4)
    assert fallbacks("matmul", dtype) == before, "matmul fell back to the CPU"


def test_matmul_empty_contraction_is_zeros():
    out = oar.matmul(T(np.zeros((3, 0)), G), T(np.zeros((0, 5)), G))
    np.testing.assert_array_equal(out.numpy(), np.zeros((3, 5)))


# float32 is exact float32 unless OAR_ALLOW_TF32=1: with K = 4096 the float32 error stays near 1e-4,
# TF32's (10-bit mantissa inputs) near 1e-2.
_TF32_SCRIPT = """
import numpy as np, oar
rng = np.random.default_rng(1)
a, b = rng.uniform(-1, 1, (128, 4096)), rng.uniform(-1, 1, (4096, 128))
x, y = [oar.to_tensor(v, place="gpu:0").astype("float32") for v in (a, b)]
a32, b32 = [v.astype(np.float32).astype(np.float64) for v in (a, b)]
print("ERR", np.abs(oar.matmul(x, y).numpy() - a32 @ b32).max())
"""


def _tf32_error(allow):
    env = {k: v for k, v in os.environ.items() if k != "OAR_ALLOW_TF32"}
    if allow:
        env["OAR_ALLOW_TF32"] = "1"
    r = subprocess.run([sys.executable, "-c", _TF32_SCRIPT], capture_output=True, text=True, timeout=300, env=env,
                       cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    return float(r.stdout.split("ERR")[1])


def test_tf32_policy():
    exact, fast = _tf32_error(False), _tf32_error(True)
    assert exact < 2e-3, "float32 matmul lost precision without OAR_ALLOW_TF32 (max error {})".format(exact)
    assert 2e-3 < fast < 0.5, "OAR_ALLOW_TF32=1 did not switch float32 matmul to TF32 (max error {})".format(fast)


# ---- convolutions ------------------------------------------------------------------------------------
def conv_attrs(nd, strides=None, paddings=None, dilations=None, groups=1):
    return dict(strides=strides or [1] * nd, paddings=paddings or [0] * (2 * nd), dilations=dilations or [1] * nd,
                groups=groups)


CONV = [
    ((2, 3, 8, 8), (4, 3, 3, 3), conv_attrs(2)),
    ((2, 3, 9, 9), (4, 3, 3, 3), conv_attrs(2, [2, 2], [1, 1, 1, 1])),
    ((1, 4, 7, 7), (6, 2, 3, 3), conv_attrs(2, dilations=[2, 2], groups=2)),
    ((2, 3, 10), (4, 3, 3), conv_attrs(1, [2], [1, 1])),
    ((1, 2, 5, 4, 4), (2, 2, 2, 2, 2), conv_attrs(3, paddings=[1] * 6)),
    ((1, 8, 6, 6), (8, 1, 3, 3), conv_attrs(2, paddings=[1] * 4, groups=8)),  # depthwise
]


def _conv_family(xs, ws, attrs, dtype, place):
    """conv, conv_grad_input and conv_grad_filter of one problem on `place`."""
    rng = np.random.default_rng(7)
    x, w = T(rng.uniform(-1, 1, xs), place, dtype), T(rng.uniform(-1, 1, ws), place, dtype)
    y = _C.Op("conv")(x, w, **attrs)
    gy = T(rng.uniform(-1, 1, y.shape), place, dtype)
    dx = _C.Op("conv_grad_input")(gy, w, input_size=list(xs[2:]), **attrs)
    dw = _C.Op("conv_grad_filter")(x, gy, filter_size=list(ws[2:]), **attrs)
    return [host(t) for t in (y, dx, dw)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV, ids=lambda c: "x{}w{}".format(c[0], c[1]))
def test_conv_family_matches_the_cpu(case, dtype):
    xs, ws, attrs = case
    ops = ("conv", "conv_grad_input", "conv_grad_filter")
    before = [fallbacks(op, dtype) for op in ops]
    got, want = _conv_family(xs, ws, attrs, dtype, G), _conv_family(xs, ws, attrs, dtype, "cpu")
    tol = {"float16": 1e-2, "bfloat16": 6e-2, "float32": 1e-4, "float64": 1e-12}[dtype]
    for g, w, op in zip(got, want, ops):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 10, err_msg=op)
    assert [fallbacks(op, dtype) for op in ops] == before, "a convolution fell back to the CPU"


def test_conv_asymmetric_padding_is_declined_and_still_right():
    attrs = conv_attrs(2, paddings=[0, 1, 1, 0])
    before = fallbacks("conv", "float32")
    got, want = _conv_family((1, 2, 5, 5), (3, 2, 2, 2), attrs, "float32", G), \
        _conv_family((1, 2, 5, 5), (3, 2, 2, 2), attrs, "float32", "cpu")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    assert fallbacks("conv", "float32") == before + 1


# ---- pooling: forward results and avg_pool_grad are the CPU's bits --------------------------------------
POOL = [
    ((2, 3, 8, 8), dict(kernel_size=[2, 2], strides=[2, 2], paddings=[0, 0, 0, 0])),
    ((2, 3, 7, 7), dict(kernel_size=[3, 3], strides=[2, 2], paddings=[1, 1, 1, 1])),  # overlapping windows
    ((1, 2, 7, 7), dict(kernel_size=[2, 2], strides=[2, 2], paddings=[0, 0, 0, 0], ceil_mode=1)),
    ((1, 2, 7, 6), dict(kernel_size=[3, 2], adaptive=1)),
    ((2, 3, 9), dict(kernel_size=[3], strides=[2], paddings=[1, 1])),
    ((1, 2, 5, 6, 7), dict(kernel_size=[2, 3, 2], strides=[1, 2, 2], paddings=[1, 1, 0, 1, 1, 0])),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", POOL, ids=lambda c: "x{}".format(c[0]))
def test_pooling_matches_the_cpu(case, dtype):
    xs, attrs = case
    a = RNG.uniform(-1, 1, xs)
    a.flat[3] = np.nan  # a NaN wins its windows, as on the CPU
    res = {}
    for place in (G, "cpu"):
        x = T(a, place, dtype)
        out, mask = _C.Op("max_pool")(x, **attrs)
        avg = _C.Op("avg_pool")(x, **attrs)
        inc = _C.Op("avg_pool")(x, exclusive=0, **attrs)
        div = _C.Op("avg_pool")(x, divisor=3, **attrs)
        gy = T(np.linspace(-1, 1, int(np.prod(out.shape))).reshape(out.shape), place, dtype)
        size = dict(input_size=list(xs[2:]))
        dmax = _C.Op("max_pool_grad")(gy, mask, **size, **attrs)
        davg = _C.Op("avg_pool_grad")(gy, **size, **attrs)
        res[place] = [host(out), mask.numpy(), host(avg), host(inc), host(div), host(davg), host(dmax)]
    names = ["max_pool", "mask", "avg_pool", "avg_pool inclusive", "avg_pool divisor", "avg_pool_grad"]
    for g, w, name in zip(res[G], res["cpu"], names):
        np.testing.assert_array_equal(g, w, err_msg=name)
    # max_pool_grad sums through atomics where windows overlap: equal up to the summation order
    np.testing.assert_allclose(res[G][-1], res["cpu"][-1], rtol=TOL[dtype], atol=TOL[dtype], err_msg="max_pool_grad")


# ---- optimizers: the CPU kernel's bits -------------------------------------------------------------------
# Per op: the role of each input block and attributes beyond the common ones. Roles: p param, g grad,
# s non-negative state, m signed state, b a beta power (one float32 element).
OPTIM = {
    "merged_sgd": ("pg", {}),
    "merged_momentum": ("pgm", dict(mu=0.9, use_nesterov=1, rescale_grad=0.5)),
    "merged_adam": ("pgmsbbs", dict(coeff=[0.01, 0.0], amsgrad=1)),
    "merged_adamax": ("pgms" + "b", {}),
    "merged_adagrad": ("pgs", {}),
    "merged_adadelta": ("pgss", {}),
    "merged_rmsprop": ("pgsmm", dict(centered=1, momentum=0.9)),
    "merged_lamb": ("pgmsbb", dict(weight_decay=[0.01, 0.0])),
}
SHAPES = [(37, 5), (1000,)]


def _optim_inputs(roles, dtype, place):
    rng = np.random.default_rng(11)
    out = []
    for role in roles:
        for s in SHAPES:
            if role == "b":
                out.append(T(rng.uniform(0.5, 0.9, (1,)), place, "float64" if dtype == "float64" else "float32"))
            elif role == "s":
                out.append(T(rng.uniform(0.5, 1, s), place, dtype))
            elif role == "m":
                out.append(T(rng.uniform(-0.1, 0.1, s), place, dtype))
            else:
                out.append(T(rng.uniform(-1, 1, s), place, dtype))
    return out


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(OPTIM))
def test_optimizer_updates_match_the_cpu(op, dtype):
    roles, extra = OPTIM[op]
    attrs = dict(learning_rate=[0.1, 0.01], l2_coeff=[0.01], grad_scale=[0.5], **extra)
    res = {}
    for place in (G, "cpu"):
        ts = _optim_inputs(roles, dtype, place)
        _C.Op(op)(ts, **attrs)
        res[place] = [host(t) for t in ts]
    for i, (g, w) in enumerate(zip(res[G], res["cpu"])):
        role = roles[i // len(SHAPES)]
        if op == "merged_lamb" and role == "p":
            # the trust ratio's norms sum in another order than the CPU's
            np.testing.assert_allclose(g, w, rtol=TOL[dtype] if dtype != "float32" else 1e-6, err_msg=str(i))
        else:
            np.testing.assert_array_equal(g, w, err_msg="{} input {} (role {})".format(op, i, role))
    assert fallbacks(op, dtype) == 0


@pytest.mark.parametrize("op", ["merged_adam", "merged_momentum"])
def test_optimizer_updates_many_parameters(op):
    # more parameters than one launch takes (24), of different sizes, one of them empty
    roles, extra = OPTIM[op]
    shapes = [(i % 7 + 1, 3 * i) for i in range(30)]
    rng = np.random.default_rng(5)
    arrays = []
    for role in roles:
        for s in shapes:
            if role == "b":
                arrays.append((rng.uniform(0.5, 0.9, (1,)), "float32"))
            else:
                arrays.append((rng.uniform(0.5, 1, s) if role == "s" else rng.uniform(-1, 1, s), "float32"))
    attrs = dict(learning_rate=[0.01 * (i + 1) for i in range(len(shapes))], **extra)
    attrs.pop("coeff", None)
    res = {}
    for place in (G, "cpu"):
        ts = [T(a, place, dt) for a, dt in arrays]
        _C.Op(op)(ts, **attrs)
        res[place] = [t.numpy() for t in ts]
    for i, (g, w) in enumerate(zip(res[G], res["cpu"])):
        np.testing.assert_array_equal(g, w, err_msg="{} input {}".format(op, i))


@pytest.mark.parametrize("dtype", FLOATS)
def test_merged_sum_squares(dtype):
    xs = [RNG.standard_normal(s) for s in ((3, 4), (100_000,), (0,), ())]
    out = _C.Op("merged_sum_squares")([T(x, G, dtype) for x in xs])
    assert out.dtype == (oar.float64 if dtype == "float64" else oar.float32)
    want = sum(float((host(T(x, "cpu", dtype)) ** 2).sum()) for x in xs)
    np.testing.assert_allclose(float(out), want, rtol=1e-12 if dtype == "float64" else 1e-6)
