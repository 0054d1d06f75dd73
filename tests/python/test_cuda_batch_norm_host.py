"""The gpu plugin's batch_norm / batch_norm_grad kernels (plugins/cuda/batch_norm.cu and
batch_norm_kernels.cuh) checked without a GPU: tests/cuda_host/batch_norm_host.cc runs batch_norm.cu's
planning and launch code over host buffers and its kernels under the block emulator (block_emu.h), and the
results are compared with a float64 numpy reference computed from the same dtype-rounded inputs.

The shapes reach every path: NCHW-like planes (inner > 1) with 16- and 8-byte vectors and single elements
(sizes that are no multiple of the vector width, a misaligned view), channel-last rows (inner = 1, vectors
across channels, or single elements for odd C), one split per channel and several (the grid cap decides:
grid_for's "full GPU" is the cap here), use_global_stats, empty tensors. Skipped where the CUDA headers are
missing."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from _cuda_host import AVAILABLE, DT, MISSING, SANITIZE
import _cuda_host

pytestmark = pytest.mark.skipif(not AVAILABLE, reason=MISSING)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
STAT = dict(float16="float32", bfloat16="float32", float32="float32", float64="float64")
# |gpu - reference| <= TOL * scale, scale being the same expression over absolute values: sums in float
# (float64: double), plus the output's rounding for the 16-bit types.
TOL = dict(float64=1e-12, float32=2e-5, float16=2e-3, bfloat16=1e-2)
STAT_TOL = dict(float64=1e-12, float32=2e-5)


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_host_bn")
    with ThreadPoolExecutor(2) as pool:
        plain, checked = pool.map(lambda a: _cuda_host.build(out, *a), [
            ("batch_norm_host", "batch_norm_host.cc", []),
            ("batch_norm_host_asan", "batch_norm_host.cc", SANITIZE)])
    assert plain[1].returncode == 0, plain[1].stdout + plain[1].stderr
    return plain[0], (checked[0] if checked[1].returncode == 0 else None)


@pytest.fixture(scope="module")
def exe(harnesses):
    return harnesses[0]


@pytest.fixture(scope="module")
def asan_exe(harnesses):
    if harnesses[1] is None:
        pytest.skip("the C++ compiler cannot build with -fsanitize=address")
    return harnesses[1]


def rounded(a, dtype):
    """float64 values exactly representable in dtype (bfloat16: round to nearest even from float32)."""
    a = np.asarray(a, np.float64)
    if dtype == "bfloat16":
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).astype(np.float64)
    return a.astype(dtype).astype(np.float64)


def run(exe, op, attrs, inputs, outputs, grid_cap):
    """Runs op under the emulator. inputs: (array, dtype, offset); outputs: (shape, dtype). Returns arrays."""
    lines = ["{} {}".format(op, grid_cap), str(len(attrs))]
    for k, v in attrs.items():
        lines.append("{} {} {!r}".format(k, "f" if isinstance(v, float) else "i", v))
    lines.append(str(len(inputs)))
    for a, dt, off in inputs:
        lines.append("{} {} {} {}".format(DT[dt], off, a.ndim, " ".join(map(str, a.shape))))
        lines.append(" ".join(repr(float(v)) for v in a.reshape(-1)))
    lines.append(str(len(outputs)))
    for shape, dt in outputs:
        lines.append("{} 0 {} {}".format(DT[dt], len(shape), " ".join(map(str, shape))))
    rc, stdout, stderr = _cuda_host.run(exe, "\n".join(lines) + "\n")
    if rc == 2:
        raise ValueError(stderr.strip())
    assert rc == 0, stderr
    vals = np.array([float(s) for s in stdout.split()], np.float64)
    res, at = [], 0
    for shape, _ in outputs:
        n = int(np.prod(shape))
        res.append(vals[at:at + n].reshape(shape))
        at += n
    assert at == vals.size
    return res


def close(got, want, scale, tol, what):
    assert got.shape == want.shape, "{}: shape {} vs {}".format(what, got.shape, want.shape)
    err = np.abs(got - want)
    bad = np.flatnonzero(~(err <= tol * scale + 1e-300))
    assert bad.size == 0, "{}: {} of {} differ; first at {}: gpu {!r}, reference {!r}".format(
        what, bad.size, got.size, np.unravel_index(bad[0], got.shape), got.flat[bad[0]], want.flat[bad[0]])


def per_channel(v, shape, axis):
    """[C] broadcast against x of `shape` along `axis`."""
    s = [1] * len(shape)
    s[axis] = shape[axis]
    return v.reshape(s)


# ---- forward ------------------------------------------------------------------------------------------------
def check_forward(exe, shape, dtype, axis=1, glob=0, grid_cap=4, offset=0, loc=0.0, seed=0, eps=1e-5,
                  momentum=0.9):
    rng = np.random.default_rng(seed)
    sd = STAT[dtype]
    ax = axis % len(shape)
    C = shape[ax]
    x = rounded(rng.normal(loc, 1.5, shape), dtype)
    w = rounded(rng.uniform(0.5, 1.5, C), sd)
    b = rounded(rng.uniform(-1, 1, C), sd)
    rm = rounded(rng.uniform(-0.5, 0.5, C), sd)
    rv = rounded(rng.uniform(0.5, 2, C), sd)
    axes = tuple(i for i in range(len(shape)) if i != ax)
    if glob:
        mean, var = rm, rv
    else:
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    rstd = 1 / np.sqrt(var + eps)
    pc = lambda v: per_channel(v, shape, ax)  # noqa: E731
    out = (x - pc(mean)) * pc(rstd * w) + pc(b)
    out_scale = (np.abs(x) + pc(np.abs(mean))) * pc(rstd * np.abs(w)) + pc(np.abs(b))
    got = run(exe, "batch_norm", dict(channel_axis=axis, epsilon=eps, momentum=momentum, use_global_stats=glob),
              [(x, dtype, offset), (w, sd, 0), (b, sd, 0), (rm, sd, 0), (rv, sd, 0)],
              [(shape, dtype)] + [((C,), sd)] * 4, grid_cap)
    what = "batch_norm {} {} axis={} global={} cap={} offset={}".format(dtype, shape, axis, glob, grid_cap, offset)
    close(got[0], out, out_scale, TOL[dtype], what + " out")
    st = STAT_TOL[sd]
    if glob:
        np.testing.assert_array_equal(got[1], rm, what + " mean_out")
        np.testing.assert_array_equal(got[2], rv, what + " var_out")
        np.testing.assert_array_equal(got[3], rm, what + " saved_mean")
    else:
        mscale = np.abs(x).mean(axis=axes)
        close(got[3], mean, mscale, st, what + " saved_mean")
        # The variance relative to itself: no cancellation against the mean's square (loc shifts x far
        # from 0 in one test).
        close(got[1], rm * momentum + mean * (1 - momentum), np.abs(rm) + mscale, st, what + " mean_out")
        close(got[2], rv * momentum + var * (1 - momentum), rv + var, st, what + " var_out")
    close(got[4], rstd, rstd, st, what + " saved_rstd")
    return got


CASES = [  # shape, channel axis
    ((4, 1, 300), 1),  # C = 1
    ((4, 3, 8192), 1),  # C = 3, large planes: several splits with a large grid cap
    ((2, 5, 7, 7), 1),  # 7x7: 49 is no multiple of any vector width (single elements)
    ((3, 4, 6), 1),  # inner 6: 8-byte vectors for float32
    ((50, 64), 1),  # channel-last 2-D (BatchNorm1D): vectors across channels
    ((3000, 8), 1),  # channel-last, several splits along the rows
    ((20, 200), 1),  # channel-last, two tiles of 32 channel groups, the second part idle
    ((7, 2, 2500), 1),  # two splits, the boundary inside a segment
    ((2, 5, 7, 12), 3),  # NHWC: channel axis last
    ((6, 2, 5), -1),  # channel-last with C = 5: single elements, a negative axis
    ((2, 3, 4, 5), 0),  # channel axis 0: outer = 1
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("grid_cap", [1, 16])
def test_forward(exe, dtype, grid_cap):
    for shape, axis in CASES:
        check_forward(exe, shape, dtype, axis, grid_cap=grid_cap)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_forward_16bit(exe, dtype):
    # 16-byte vectors (8 elements), 8-byte ones (196 = 4 * 49), single elements, channel-last vectors.
    for shape, axis in [((2, 3, 64), 1), ((2, 4, 196), 1), ((2, 3, 7, 7), 1), ((40, 16), 1), ((4, 3, 8192), 1),
                        ((3000, 8), 1)]:
        check_forward(exe, shape, dtype, axis, grid_cap=16)


@pytest.mark.parametrize("dtype", FLOATS)
def test_forward_use_global_stats(exe, dtype):
    for shape, axis in [((2, 3, 64), 1), ((2, 5, 7, 7), 1), ((50, 64), 1), ((6, 2, 5), -1)]:
        check_forward(exe, shape, dtype, axis, glob=1, grid_cap=16)


def test_forward_misaligned_view_takes_single_elements(exe):
    """x one element past an aligned address: the vector widths are refused, the result is the same."""
    for shape in [(2, 3, 64), (50, 64)]:
        check_forward(exe, shape, "float32", offset=1, grid_cap=16)
        check_forward(exe, shape, "float16", offset=1, grid_cap=16)


def test_variance_without_cancellation(exe):
    """x ~ 1000 + N(0, 1.5): E[x^2] - E[x]^2 in float32 would lose about 3 digits of the variance; the
    shifted sums and Chan merges keep it to float32 precision."""
    for shape in [(4, 3, 8192), (3000, 8)]:
        check_forward(exe, shape, "float32", loc=1000.0, grid_cap=16)
        check_forward(exe, shape, "float32", loc=1000.0, grid_cap=1)


def test_splits_are_deterministic_and_agree(exe):
    """The same x with 1 split and with several: both right, and each the same bits on a second run."""
    a = check_forward(exe, (4, 3, 8192), "float32", grid_cap=16)
    b = check_forward(exe, (4, 3, 8192), "float32", grid_cap=16)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_more_splits_than_finish_threads(exe):
    """65 splits of one channel (single elements: 133121 is odd): the finishing block's 64 threads take two
    splits each in turn before their tree."""
    check_forward(exe, (1, 1, 133121), "float32", grid_cap=100)
    check_backward(exe, (1, 1, 133121), "float32", grid_cap=100)


def test_forward_empty_x_with_global_stats(exe):
    """No elements: only the [C] outputs, from the running statistics."""
    got = check_forward(exe, (0, 3, 4), "float32", glob=1)
    assert got[0].shape == (0, 3, 4)
    check_forward(exe, (2, 0, 4), "float32", glob=1)  # C = 0: nothing at all


def test_forward_training_on_empty_x_is_an_error(exe):
    with pytest.raises(ValueError, match="batch_norm: training statistics need a non-empty x"):
        check_forward(exe, (0, 3, 4), "float32")


# ---- backward -----------------------------------------------------------------------------------------------
def check_backward(exe, shape, dtype, axis=1, glob=0, grid_cap=4, offset=0, seed=1):
    rng = np.random.default_rng(seed)
    sd = STAT[dtype]
    ax = axis % len(shape)
    C = shape[ax]
    x = rounded(rng.normal(0.3, 1.5, shape), dtype)
    dy = rounded(rng.normal(0, 1, shape), dtype)
    w = rounded(rng.uniform(0.5, 1.5, C), sd)
    axes = tuple(i for i in range(len(shape)) if i != ax)
    M = max(1, int(np.prod([shape[i] for i in axes])))
    sm = rounded(x.mean(axis=axes) if x.size else np.zeros(C), sd)
    sr = rounded(1 / np.sqrt((x.var(axis=axes) if x.size else np.ones(C)) + 1e-5), sd)
    pc = lambda v: per_channel(v, shape, ax)  # noqa: E731
    xhat = (x - pc(sm)) * pc(sr)
    db, dw = dy.sum(axis=axes), (dy * xhat).sum(axis=axes)
    db_scale, dw_scale = np.abs(dy).sum(axis=axes), np.abs(dy * xhat).sum(axis=axes)
    if glob:
        dx = dy * pc(w * sr)
        dx_scale = np.abs(dx)
    else:
        dx = pc(w * sr) * (dy - pc(db / M) - xhat * pc(dw / M))
        dx_scale = pc(w * sr) * (np.abs(dy) + pc(db_scale / M) + np.abs(xhat) * pc(dw_scale / M))
    got = run(exe, "batch_norm_grad", dict(channel_axis=axis, use_global_stats=glob),
              [(x, dtype, offset), (w, sd, 0), (sm, sd, 0), (sr, sd, 0), (dy, dtype, offset)],
              [(shape, dtype), ((C,), sd), ((C,), sd)], grid_cap)
    what = "batch_norm_grad {} {} axis={} global={} cap={} offset={}".format(dtype, shape, axis, glob, grid_cap,
                                                                            offset)
    close(got[0], dx, dx_scale, TOL[dtype], what + " dx")
    st = STAT_TOL[sd]
    close(got[1], dw, dw_scale, st, what + " dweight")
    close(got[2], db, db_scale, st, what + " dbias")
    return got


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("grid_cap", [1, 16])
def test_backward(exe, dtype, grid_cap):
    for shape, axis in CASES:
        check_backward(exe, shape, dtype, axis, grid_cap=grid_cap)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_backward_16bit(exe, dtype):
    for shape, axis in [((2, 3, 64), 1), ((2, 4, 196), 1), ((2, 3, 7, 7), 1), ((40, 16), 1), ((4, 3, 8192), 1),
                        ((3000, 8), 1)]:
        check_backward(exe, shape, dtype, axis, grid_cap=16)


@pytest.mark.parametrize("dtype", FLOATS)
def test_backward_use_global_stats(exe, dtype):
    for shape, axis in [((2, 3, 64), 1), ((2, 5, 7, 7), 1), ((50, 64), 1), ((6, 2, 5), -1)]:
        check_backward(exe, shape, dtype, axis, glob=1, grid_cap=16)


def test_backward_misaligned_view(exe):
    for shape in [(2, 3, 64), (50, 64)]:
        check_backward(exe, shape, "float32", offset=1, grid_cap=16)


def test_backward_empty_x_gives_zero_sums(exe):
    for glob in (0, 1):
        got = check_backward(exe, (0, 3, 4), "float32", glob=glob)
        np.testing.assert_array_equal(got[1], np.zeros(3))
        np.testing.assert_array_equal(got[2], np.zeros(3))


def test_no_access_outside_the_tensors(asan_exe):
    """Edge-heavy cases under AddressSanitizer: every read and write stays inside its tensor."""
    for shape, axis in [((2, 5, 7, 7), 1), ((3, 4, 6), 1), ((6, 2, 5), -1), ((300, 8), 1), ((2, 3, 2048), 1)]:
        for cap in (1, 16):
            check_forward(asan_exe, shape, "float32", axis, grid_cap=cap)
            check_backward(asan_exe, shape, "float32", axis, grid_cap=cap)
    check_forward(asan_exe, (40, 16), "bfloat16", grid_cap=16)
    check_backward(asan_exe, (2, 4, 196), "float16", grid_cap=16)
    check_forward(asan_exe, (2, 3, 64), "float32", offset=1)
    check_forward(asan_exe, (0, 3, 4), "float64", glob=1)
