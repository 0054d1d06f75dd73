"""The gpu plugin's batch_norm / batch_norm_grad kernels (plugins/cuda/batch_norm.cu, decision 139) on
ResNet-sized shapes that the op suite's small samples do not reach: per-channel reductions split over many
blocks, 16- and 8-byte vectors and single elements (7x7 planes), channel-last rows, 16-bit x with float32
statistics, float64, use_global_stats, a misaligned view, x far from zero (variance cancellation), against
the CPU kernels (which sum in double); and determinism (the same bits twice). Skipped where no GPU is usable,
with the runtime's reason. tests/python/test_cuda_batch_norm_host.py checks the same kernels without a GPU."""
import numpy as np
import pytest

import oar
from oar import _C

_WHY = None if oar.device.cuda.device_count() > 0 else (oar.device.cuda.unavailable_reason() or
                                                         "no gpu plugin (liboar_plugin_cuda.so) is loaded")
pytestmark = pytest.mark.skipif(_WHY is not None, reason="no usable GPU: {}".format(_WHY))
G = "gpu:0"
STAT = dict(float16="float32", bfloat16="float32", float32="float32", float64="float64")
# |gpu - cpu| <= TOL * scale (the same expression over absolute values): the GPU sums in float (float64:
# double) over up to 800,000 elements a channel, the CPU in double; 16-bit outputs may differ by an ulp.
TOL = dict(float64=1e-12, float32=5e-5, float16=2e-3, bfloat16=1e-2)


def tensor(a, dtype, place):
    t = oar.to_tensor(np.asarray(a, np.float64 if dtype == "float64" else np.float32), place=place)
    return t if t.dtype == getattr(oar, dtype) else t.astype(dtype)


def host(t):
    return (t if t.dtype == oar.float64 else t.astype("float32")).numpy().astype(np.float64)


def close(got, want, scale, tol, what):
    err = np.abs(got - want)
    bad = np.flatnonzero(~(err <= tol * scale + 1e-30))
    assert bad.size == 0, "{}: {} of {} differ; first at {}: gpu {!r}, cpu {!r}".format(
        what, bad.size, got.size, np.unravel_index(bad[0], got.shape), got.flat[bad[0]], want.flat[bad[0]])


def both(op, arrays, dtypes, attrs, misaligned=False):
    """op on the GPU and on the CPU from the same dtype-rounded inputs: (gpu outputs, cpu outputs) as float64."""
    out = []
    for place in (G, "cpu"):
        ins = [tensor(a, d, place) for a, d in zip(arrays, dtypes)]
        if misaligned and place == G:  # x one element into its storage: no vector access is aligned
            flat = tensor(np.concatenate([[0.0], arrays[0].reshape(-1)]), dtypes[0], place)
            ins[0] = flat[1:].reshape(list(arrays[0].shape))
        out.append([host(t) for t in _C.Op(op)(*ins, **attrs)])
    return out


def rounded(a, dtype):
    return host(tensor(a, dtype, "cpu"))


def check(shape, dtype, axis=1, glob=0, loc=0.5, misaligned=False, seed=0):
    rng = np.random.default_rng(seed)
    sd = STAT[dtype]
    ax = axis % len(shape)
    C = shape[ax]
    axes = tuple(i for i in range(len(shape)) if i != ax)
    pc = [1] * len(shape)
    pc[ax] = C
    x = rounded(rng.normal(loc, 1.5, shape).astype(np.float32), dtype)
    w, b = rounded(rng.uniform(0.5, 1.5, C), sd), rounded(rng.uniform(-1, 1, C), sd)
    rm, rv = rounded(rng.uniform(-0.5, 0.5, C), sd), rounded(rng.uniform(0.5, 2, C), sd)
    what = "batch_norm {} {} axis={} global={}".format(dtype, shape, axis, glob)
    attrs = dict(channel_axis=axis, epsilon=1e-5, momentum=0.9, use_global_stats=glob)
    gpu, cpu = both("batch_norm", [x, w, b, rm, rv], [dtype, sd, sd, sd, sd], attrs, misaligned)
    mean, rstd = cpu[3], cpu[4]
    scale = (np.abs(x) + np.abs(mean).reshape(pc)) * (rstd * np.abs(w)).reshape(pc) + np.abs(b).reshape(pc)
    close(gpu[0], cpu[0], scale, TOL[dtype], what + " out")
    st = TOL[sd]
    mscale = np.abs(x).mean(axis=axes)
    close(gpu[1], cpu[1], np.abs(rm) + mscale, st, what + " mean_out")
    close(gpu[2], cpu[2], rv + cpu[2], st, what + " var_out")  # relative to the variance itself
    close(gpu[3], cpu[3], mscale + 1e-3, st, what + " saved_mean")
    close(gpu[4], cpu[4], cpu[4], st, what + " saved_rstd")
    # The backward from the GPU's saved statistics, on both devices.
    dy = rounded(rng.normal(0, 1, shape).astype(np.float32), dtype)
    ggrad, cgrad = both("batch_norm_grad", [x, w, gpu[3], gpu[4], dy], [dtype, sd, sd, sd, dtype],
                        dict(channel_axis=axis, use_global_stats=glob), misaligned)
    xhat = np.abs((x - gpu[3].reshape(pc)) * gpu[4].reshape(pc))
    db_scale, dw_scale = np.abs(dy).sum(axis=axes), (np.abs(dy) * xhat).sum(axis=axes)
    M = x.size // C
    a = (np.abs(w) * gpu[4]).reshape(pc)
    dx_scale = a * (np.abs(dy) + (0 if glob else (db_scale / M).reshape(pc) + xhat * (dw_scale / M).reshape(pc)))
    close(ggrad[0], cgrad[0], dx_scale, TOL[dtype], what + " dx")
    close(ggrad[1], cgrad[1], dw_scale, st, what + " dweight")
    close(ggrad[2], cgrad[2], db_scale, st, what + " dbias")


@pytest.mark.parametrize("shape,axis", [
    ((16, 64, 112, 112), 1),  # the stem's shape: ~66 splits a channel, 16-byte vectors
    ((32, 256, 28, 28), 1),
    ((64, 2048, 7, 7), 1),  # 49 elements a plane: single elements
    ((16, 56, 56, 256), 3),  # channel-last: vectors across channels
    ((4096, 100), 1),  # [N, C] (BatchNorm1D): 25 groups of 4 channels, a warp only partly busy
])
def test_float32(shape, axis):
    check(shape, "float32", axis)


@pytest.mark.parametrize("dtype,shape", [
    ("bfloat16", (16, 64, 56, 56)),
    ("float16", (16, 128, 28, 28)),
    ("bfloat16", (16, 256, 14, 14)),  # 196 elements a plane: 8-byte vectors
    ("float16", (16, 28, 28, 128)),
    ("float64", (8, 32, 56, 56)),
])
def test_other_dtypes(dtype, shape):
    check(shape, dtype, 3 if shape[-1] == 128 else 1)


def test_use_global_stats():
    check((16, 64, 56, 56), "float32", glob=1)
    check((16, 56, 56, 64), "bfloat16", axis=3, glob=1)


def test_misaligned_view():
    check((8, 64, 56, 56), "float32", misaligned=True)


def test_variance_far_from_zero():
    """x ~ 1000 + N(0, 1.5): the GPU's variance in float32 matches the CPU's double one to float32 precision."""
    check((16, 64, 56, 56), "float32", loc=1000.0)
    check((64, 56, 56, 64), "float32", axis=3, loc=1000.0)


def test_deterministic():
    rng = np.random.default_rng(3)
    x = tensor(rng.standard_normal((16, 64, 112, 112)), "float32", G)
    dy = tensor(rng.standard_normal((16, 64, 112, 112)), "float32", G)
    w, b, rm, rv = (tensor(v, "float32", G) for v in (np.ones(64), np.zeros(64), np.zeros(64), np.ones(64)))
    runs = []
    for _ in range(2):
        r = _C.Op("batch_norm")(x, w, b, rm, rv, channel_axis=1)
        g = _C.Op("batch_norm_grad")(x, w, r[3], r[4], dy, channel_axis=1)
        runs.append([t.numpy() for t in list(r) + list(g)])
    for u, v in zip(*runs):
        np.testing.assert_array_equal(u, v)
