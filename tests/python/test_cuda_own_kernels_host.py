"""The gpu plugin's own matmul and convolution kernels (plugins/cuda/own_blas_kernels.cuh, what the ROCm
build runs for every matmul and conv, and the CUDA build with OAR_GPU_OWN_KERNELS=1) checked without a GPU:
tests/cuda_host/own_blas_host.cc runs own_blas.cu's planning and launch code over host buffers and its
kernels under the block emulator (tests/cuda_host/block_emu.h: fibers per GPU thread, a real barrier,
shared arrays per block). Results are compared with the CPU plugin's, computed in float64 from the same
dtype-rounded inputs. What this cannot see (warp scheduling, wavefront width, device memory, launch limits)
is listed in docs/rocm.md. Skipped where the CUDA headers are missing."""
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import oar
from oar import _C

from _cuda_host import AVAILABLE, DT, MISSING, SANITIZE
import _cuda_host

pytestmark = pytest.mark.skipif(not AVAILABLE, reason=MISSING)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# |gpu - cpu| <= TOL * (the same op over |inputs|): accumulation in float (float64: double) over at most
# ~100 terms, plus the output's rounding for the 16-bit types.
TOL = dict(float64=1e-13, float32=1e-5, float16=1.5e-3, bfloat16=8e-3)


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_host")

    def build(name, source, flags):
        return _cuda_host.build(out, name, source, flags)

    with ThreadPoolExecutor(2) as pool:
        plain, checked, selftest = pool.map(lambda a: build(*a), [
            ("own_blas_host", "own_blas_host.cc", []), ("own_blas_host_asan", "own_blas_host.cc", SANITIZE),
            ("block_emu_selftest", "block_emu_selftest.cc", [])])
    for exe, r in (plain, selftest):
        assert r.returncode == 0, r.stdout + r.stderr
    return plain[0], (checked[0] if checked[1].returncode == 0 else None), selftest[0]


@pytest.fixture(scope="module")
def exe(harnesses):
    return harnesses[0]


@pytest.fixture(scope="module")
def asan_exe(harnesses):
    if harnesses[1] is None:
        pytest.skip("the C++ compiler cannot build with -fsanitize=address")
    return harnesses[1]


# ---- the emulator itself ---------------------------------------------------------------------------------
def test_emulator_barrier_is_needed_and_works(harnesses):
    """A block reversing values through shared memory is right with its barrier and wrong without it."""
    selftest = harnesses[2]
    wrong = [int(subprocess.run([selftest, "reverse", s], capture_output=True, text=True, timeout=60,
                                check=True).stdout) for s in ("1", "0")]
    assert wrong[0] == 0
    assert wrong[1] > 0


def test_emulator_rejects_a_barrier_some_threads_skip(harnesses):
    r = subprocess.run([harnesses[2], "diverge"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "128 of 256 threads wait at __syncthreads, the others exited" in r.stderr


def rounded(a, dtype):
    """float64 values exactly representable in dtype."""
    a = np.asarray(a, np.float64)
    if dtype == "bfloat16":
        return oar.to_tensor(a.astype(np.float32)).astype("bfloat16").astype("float32").numpy().astype(np.float64)
    return a.astype(dtype).astype(np.float64)


def run(exe, op, dtype, a, b, out_shape, attrs, grid_cap=4):
    """Runs the gpu kernel `op` over a, b (float64 arrays, rounded to dtype) under the emulator."""
    lines = ["{} {} {}".format(op, DT[dtype], grid_cap), str(len(attrs))]
    for k, v in attrs.items():
        lines.append("{} I {} {}".format(k, len(v), " ".join(map(str, v))) if isinstance(v, (list, tuple))
                     else "{} i {}".format(k, int(v)))
    for t in (a, b):
        lines.append("{} {}".format(t.ndim, " ".join(map(str, t.shape))))
        lines.append(" ".join(repr(float(x)) for x in t.reshape(-1)))
    lines.append("{} {}".format(len(out_shape), " ".join(map(str, out_shape))))
    rc, stdout, stderr = _cuda_host.run(exe, "\n".join(lines) + "\n")
    if rc == 2:
        raise ValueError(stderr.strip())
    assert rc == 0, stderr
    return np.array([float(s) for s in stdout.split()], np.float64).reshape(out_shape)


def close(got, want, scale, dtype, what):
    assert got.shape == want.shape, "{}: shape {} vs {}".format(what, got.shape, want.shape)
    err = np.abs(got - want)
    bound = TOL[dtype] * scale + 1e-300
    bad = np.flatnonzero(err > bound)
    assert bad.size == 0, "{}: {} of {} differ; first at {}: gpu {!r}, cpu {!r}".format(
        what, bad.size, got.size, np.unravel_index(bad[0], got.shape), got.flat[bad[0]], want.flat[bad[0]])


# ---- matmul ------------------------------------------------------------------------------------------------
def np_matmul(x, y, tx, ty):
    if tx and x.ndim > 1:
        x = np.swapaxes(x, -1, -2)
    if ty and y.ndim > 1:
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y)


MATMUL = [  # x shape, y shape, transpose_x, transpose_y
    ((3, 5), (5, 4), 0, 0),
    ((17, 33), (33, 18), 0, 0),  # not multiples of the 16-tile, in any dim
    ((16, 16), (16, 16), 0, 0),
    ((1, 40), (40, 1), 0, 0),
    ((7,), (7,), 0, 0),  # 1-D operands
    ((7,), (2, 7, 3), 0, 0),
    ((2, 3, 7), (7,), 0, 0),
    ((5, 3), (5, 4), 1, 0),  # transposes
    ((3, 5), (4, 5), 0, 1),
    ((2, 19, 3), (2, 17, 19), 1, 1),
    ((3, 4, 5), (5, 6), 0, 0),  # a batch of X times one Y: one tall GEMM
    ((3, 5, 4), (5, 6), 1, 0),
    ((4, 5), (3, 5, 6), 0, 0),  # one X times a batch of Y
    ((2, 3, 4, 5), (2, 3, 5, 6), 0, 0),
    ((2, 1, 4, 5), (3, 5, 6), 0, 0),  # mixed broadcast: one launch per leading index
    ((3, 1, 4, 5), (1, 2, 6, 5), 0, 1),
    ((2, 1, 3, 5, 4), (1, 2, 1, 6, 5), 1, 1),
    ((3, 0), (0, 4), 0, 0),  # K = 0: zeros
    ((0, 5), (5, 3), 0, 0),  # an empty output
]


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul(exe, dtype):
    rng = np.random.default_rng(0)
    cases = MATMUL if dtype in ("float32", "float64") else MATMUL[:2] + MATMUL[4:6] + MATMUL[9:10] + MATMUL[14:18]
    for xs, ys, tx, ty in cases:
        x = rounded(rng.uniform(-2, 2, xs), dtype)
        y = rounded(rng.uniform(-2, 2, ys), dtype)
        want = np_matmul(x, y, tx, ty)
        scale = np_matmul(np.abs(x), np.abs(y), tx, ty)
        got = run(exe, "matmul", dtype, x, y, want.shape, dict(transpose_x=tx, transpose_y=ty))
        close(got, want, scale, dtype, "matmul {} {} {} tx={} ty={}".format(dtype, xs, ys, tx, ty))


def test_matmul_nan_and_inf_propagate(exe):
    x = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0], [np.inf, 1.0, 0.0]])
    y = np.arange(6.0).reshape(3, 2) + 1
    got = run(exe, "matmul", "float32", x, y, (3, 2), {})
    assert np.isnan(got[0]).all() and np.isinf(got[2]).all()
    np.testing.assert_array_equal(got[1], x[1] @ y)


# ---- convolutions ----------------------------------------------------------------------------------------
CONV = [  # x shape, w shape, strides, paddings (before, after per dim), dilations, groups
    ((2, 3, 9), (4, 3, 3), [2], [1, 2], [1], 1),
    ((1, 2, 11), (2, 1, 3), [1], [2, 0], [2], 2),
    ((2, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 0, 0, 1], [1, 2], 2),
    ((1, 3, 6, 5), (6, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 3),  # depthwise, channel multiplier 2
    ((2, 5, 4, 4), (3, 5, 1, 1), [2, 2], [0, 0, 0, 0], [1, 1], 1),  # 1x1, stride 2
    ((1, 2, 3, 4), (2, 2, 5, 3), [1, 2], [2, 2, 1, 0], [1, 1], 1),  # window larger than the input
    ((1, 2, 4, 5, 3), (2, 2, 2, 3, 2), [1, 2, 1], [0, 1, 1, 0, 1, 1], [2, 1, 1], 1),
    ((2, 4, 3, 4, 5), (4, 1, 3, 1, 2), [2, 1, 3], [1, 1, 0, 0, 2, 1], [1, 1, 2], 4),  # 3-D depthwise
    ((3, 2, 150), (2, 2, 3), [1], [1, 0], [1], 1),  # 447 products per weight: conv_grad_filter's threads loop
]
OPS = ["conv", "conv_grad_input", "conv_grad_filter"]


def conv_attrs(strides, pads, dil, groups):
    return dict(strides=strides, paddings=pads, dilations=dil, groups=groups)


def cpu_conv(op, a, b, attrs, x_shape, w_shape):
    extra = {}
    if op == "conv_grad_input":
        extra["input_size"] = list(x_shape[2:])
    elif op == "conv_grad_filter":
        extra["filter_size"] = list(w_shape[2:])
    return _C.Op(op)(oar.to_tensor(a), oar.to_tensor(b), **attrs, **extra).numpy()


def conv_case(exe, op, dtype, case, rng, grid_cap=4):
    xs, ws, s, p, d, g = case
    attrs = conv_attrs(s, p, d, g)
    x = rounded(rng.uniform(-2, 2, xs), dtype)
    w = rounded(rng.uniform(-2, 2, ws), dtype)
    y_shape = cpu_conv("conv", x, w, attrs, xs, ws).shape
    dy = rounded(rng.uniform(-2, 2, y_shape), dtype)
    a, b, out_shape = dict(conv=(x, w, y_shape), conv_grad_input=(dy, w, xs), conv_grad_filter=(x, dy, ws))[op]
    want = cpu_conv(op, a, b, attrs, xs, ws)
    scale = cpu_conv(op, np.abs(a), np.abs(b), attrs, xs, ws)
    got = run(exe, op, dtype, a, b, out_shape, attrs, grid_cap)
    close(got, want, scale, dtype, "{} {} x={} w={} {}".format(op, dtype, xs, ws, attrs))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv(exe, op, dtype):
    rng = np.random.default_rng(1)
    for case in CONV:
        conv_case(exe, op, dtype, case, rng)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_conv_16bit(exe, op, dtype):
    rng = np.random.default_rng(2)
    for case in (CONV[0], CONV[2], CONV[6]):
        conv_case(exe, op, dtype, case, rng)


@pytest.mark.parametrize("op", OPS)
def test_conv_one_pass_grid(exe, op):
    """A grid large enough that no thread loops (the other tests cap it at 4 blocks so that they do)."""
    conv_case(exe, op, "float32", CONV[2], np.random.default_rng(3), grid_cap=1 << 20)


def test_no_access_outside_the_tensors(asan_exe):
    """Edge-heavy cases under AddressSanitizer: every read and write stays inside its tensor."""
    rng = np.random.default_rng(4)
    for xs, ys, tx, ty in (MATMUL[1], MATMUL[5], MATMUL[9], MATMUL[16]):
        x, y = rng.uniform(-2, 2, xs), rng.uniform(-2, 2, ys)
        want = np_matmul(x, y, tx, ty)
        got = run(asan_exe, "matmul", "float64", x, y, want.shape, dict(transpose_x=tx, transpose_y=ty))
        close(got, want, np_matmul(np.abs(x), np.abs(y), tx, ty), "float64", "matmul {} {}".format(xs, ys))
    for op in OPS:
        for case in (CONV[2], CONV[5], CONV[7]):
            conv_case(asan_exe, op, "float64", case, rng)


def test_conv_grad_filter_of_an_empty_batch_is_zero(exe):
    x = np.zeros((0, 2, 5))
    dy = np.zeros((0, 3, 3))
    got = run(exe, "conv_grad_filter", "float32", x, dy, (3, 2, 3), conv_attrs([1], [0, 0], [1], 1))
    np.testing.assert_array_equal(got, np.zeros((3, 2, 3)))


def test_conv_bad_groups_is_a_clear_error(exe):
    x = np.ones((1, 4, 5))
    w = np.ones((3, 2, 3))
    with pytest.raises(ValueError, match="conv: shapes do not fit groups=2"):
        run(exe, "conv", "float32", x, w, (1, 3, 3), conv_attrs([1], [0, 0], [1], 2))
