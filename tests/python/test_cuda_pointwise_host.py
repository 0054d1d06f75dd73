"""The gpu plugin's pointwise kernels checked without a GPU: tests/cuda_host/pw_*.cu compile each kernel
file's functors for the host (nvcc), and their results are compared with the CPU plugin's (the op
suite's oracle) over special values (NaN, +-inf, +-0, ties, integer extremes) for every dtype the gpu
plugin registers. What this cannot see (the launch, strides, device libm) the op suite checks on a GPU.
Skipped where nvcc is missing."""
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import oar
from oar import _C

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
pytestmark = pytest.mark.skipif(NVCC is None, reason="no nvcc: the gpu plugin's kernels are not built here")

DT = dict(bool=0, int8=1, uint8=2, int16=3, int32=4, int64=5, float16=6, bfloat16=7, float32=8, float64=9)
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "uint8", "int16", "int32", "int64"]
REAL = INTS + FLOATS
ALL = ["bool"] + REAL
NP = dict(bool=np.bool_, int8=np.int8, uint8=np.uint8, int16=np.int16, int32=np.int32, int64=np.int64,
          float16=np.float16, float32=np.float32, float64=np.float64)
# Host libm against the CPU plugin's (vectorised exp/tanh/atan2 within ~2 ulp): relative tolerances.
RTOL = dict(float16=2e-3, bfloat16=1.6e-2, float32=4e-6, float64=1e-13)
HARNESSES = ["elementwise", "unary", "activation", "creation"]


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_host")
    inc = [os.path.join(ROOT, p) for p in ("sdk/include", "device_api/include", "plugins/cuda", "tests/cuda_host")]
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def build(name):
        exe = str(out / name)
        # PTX only (no ptxas): the device code is not what runs here.
        cmd = [NVCC, "-std=c++17", "-O1", "--expt-relaxed-constexpr", "-diag-suppress", "20011",
               "--generate-code=arch=compute_90,code=compute_90", "-x", "cu",
               os.path.join(ROOT, "tests", "cuda_host", "pw_" + name + ".cu"), "-o", exe] + ["-I" + i for i in inc]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        return name, exe

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(build, HARNESSES))


def tensor(vals, dtype):
    vals = np.asarray(vals, np.float64)
    if dtype == "bfloat16":
        return oar.to_tensor(vals.astype(np.float32)).astype("bfloat16")
    if dtype in INTS:
        return oar.to_tensor(vals.astype(np.int64)).astype(dtype)
    with np.errstate(over="ignore"):
        return oar.to_tensor(vals.astype(NP[dtype]))


def host(t):
    if t.dtype == oar.bfloat16:
        t = t.astype("float32")
    return np.asarray(t.numpy()).astype(np.float64).reshape(-1)


def values(dtype, rng, n_random=20):
    """Values exactly representable in dtype (rounded through it), specials first."""
    if dtype in FLOATS:
        v = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1, -1, 0.5, -0.5, 1.5, 2.5, -2.5, 3, -3, 4, 1e-3, 100, -100, 7.25]
        v += list(rng.uniform(-5, 5, n_random))
    elif dtype == "bool":
        v = [0, 1]
    else:
        info = np.iinfo(NP[dtype])
        lo, hi = max(info.min, -2**53), min(info.max, 2**53)  # exact through float64
        v = [0, 1, -1, 2, -2, 3, 7, -7, 12, -12, info.min, lo, hi, hi - 1, lo + 1] + list(rng.integers(-100, 100, n_random))
        v = [x for x in v if info.min <= x <= info.max] + ([-2**63] if dtype == "int64" else [])
    return host(tensor(v, dtype))


def run_harness(exe, op, dtype, ins, attrs):
    args = [exe, op, str(DT[dtype]), str(len(ins))] + ["{}={!r}".format(k, float(v)) for k, v in attrs.items()]
    text = "{}\n".format(len(ins[0])) + "\n".join(" ".join(repr(float(x)) for x in a) for a in ins) + "\n"
    r = subprocess.run(args, input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return np.array([float(s) for s in r.stdout.split()], np.float64)


def same(got, want, what, rtol=None):
    assert got.shape == want.shape, "{}: {} values, the CPU gave {}".format(what, got.shape, want.shape)
    ok = (got == want) | (np.isnan(got) & np.isnan(want))
    if rtol is not None:
        ok |= np.isclose(got, want, rtol=rtol, atol=rtol * 1e-3)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, "{}: {} of {} differ; first at {}: gpu {!r}, cpu {!r}".format(
        what, bad.size, ok.size, bad[:1], got[bad[0]], want[bad[0]])


def check(exe, op, dtype, ins, attrs=None, exact=True):
    attrs = attrs or {}
    want = host(_C.Op(op)(*[tensor(a, dtype) for a in ins], **attrs))
    got = run_harness(exe, op, dtype, ins, attrs)
    same(got, want, "{} {} {}".format(op, dtype, attrs), None if exact else RTOL[dtype])


def unary_cases(exe, op, dtypes, exact=True, attrs=None, lo=None, hi=None):
    rng = np.random.default_rng(0)
    for d in dtypes:
        v = values(d, rng)
        if lo is not None:  # more points inside the function's domain
            v = np.concatenate([v, host(tensor(rng.uniform(lo, hi, 30), d))])
        check(exe, op, d, [v], attrs, exact)


def binary_cases(exe, op, dtypes, exact=True, skip=None):
    rng = np.random.default_rng(1)
    for d in dtypes:
        v = values(d, rng, 6)
        x, y = (a.reshape(-1) for a in np.meshgrid(v, v))
        if skip is not None:
            keep = ~skip(x, y)
            x, y = x[keep], y[keep]
        check(exe, op, d, [x, y], None, exact)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "copysign"])
def test_arithmetic(bins, op):
    binary_cases(bins["elementwise"], op, REAL)


@pytest.mark.parametrize("op", ["divide", "heaviside", "floor_divide", "remainder", "pow", "atan2"])
def test_float_binary(bins, op):
    binary_cases(bins["elementwise"], op, FLOATS, exact=op not in ("pow", "atan2"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_atan2_with_nan_is_nan(bins, dtype):
    x = [np.inf, -np.inf, np.nan, np.nan, np.nan, np.nan, 1.0, np.nan]
    y = [np.nan, np.nan, 0.0, -0.0, np.inf, -np.inf, np.nan, np.nan]
    assert np.isnan(run_harness(bins["elementwise"], "atan2", dtype, [x, y], {})).all()


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm"])
def test_integer_binary(bins, op):
    binary_cases(bins["elementwise"], op, INTS if op in ("gcd", "lcm") else ["bool"] + INTS)


@pytest.mark.parametrize("op", ["equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal",
                                "logical_and", "logical_or", "logical_xor"])
def test_comparisons(bins, op):
    binary_cases(bins["elementwise"], op, ALL)


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "reciprocal", "sqrt", "rsqrt", "isnan", "isinf", "isfinite"])
def test_exact_float_unary(bins, op):
    unary_cases(bins["unary"], op, FLOATS)


@pytest.mark.parametrize("op,lo,hi", [
    ("exp", -3, 3), ("log", 0.05, 10), ("log2", 0.05, 10), ("log10", 0.05, 10), ("log1p", -0.9, 5), ("expm1", -2, 2),
    ("sin", -4, 4), ("cos", -4, 4), ("tan", -1.2, 1.2), ("asin", -0.9, 0.9), ("acos", -0.9, 0.9), ("atan", -3, 3),
    ("sinh", -3, 3), ("cosh", -3, 3), ("tanh", -3, 3), ("asinh", -3, 3), ("acosh", 1.1, 5), ("atanh", -0.9, 0.9),
    ("sigmoid", -8, 8), ("erf", -3, 3), ("erfinv", -0.9, 0.9), ("lgamma", 0.1, 5), ("digamma", -3, 5)])
def test_math(bins, op, lo, hi):
    unary_cases(bins["unary"], op, FLOATS, exact=False, lo=lo, hi=hi)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(bins, n):
    unary_cases(bins["unary"], "polygamma", FLOATS, exact=False, attrs={"n": n}, lo=-3, hi=5)


@pytest.mark.parametrize("op", ["neg", "abs", "square", "sign", "relu", "trunc"])
def test_integer_aware_unary(bins, op):
    unary_cases(bins["unary"], op, REAL)


def test_logical_and_bitwise_not(bins):
    unary_cases(bins["unary"], "logical_not", ALL)
    unary_cases(bins["unary"], "bitwise_not", ["bool"] + INTS)


@pytest.mark.parametrize("op,attrs", [
    ("gelu", {}), ("gelu", {"approximate": 1}), ("silu", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("hardswish", {}), ("hardsigmoid", {}), ("hardsigmoid", {"slope": 0.2, "offset": 0.4})])
def test_activations(bins, op, attrs):
    exe = bins["activation"]
    unary_cases(exe, op, FLOATS, exact=False, attrs=attrs, lo=-4, hi=4)
    rng = np.random.default_rng(2)
    for d in FLOATS:
        x = values(d, rng)
        g = host(tensor(rng.uniform(-2, 2, len(x)), d))
        check(exe, op + "_grad", d, [x, g], attrs, exact=False)


@pytest.mark.parametrize("attrs", [{"min": -1.0, "max": 1.0}, {"min": -0.5}, {"max": 0.5}, {"min": -1e10, "max": 1e10},
                                   {"min": -2.7, "max": 3.7}])
def test_clip(bins, attrs):
    unary_cases(bins["activation"], "clip", REAL, attrs=attrs)


def test_cast(bins):
    """Every pair of real dtypes and bool, with the values where conversions differ between devices: out of
    range float -> int (the CPU's x86-64 rules), double rounding through float, tiny doubles to bool."""
    rng = np.random.default_rng(3)
    extra = [300.5, -300.5, 1e10, -1e10, 3e9, -3e9, 70000, 255.9, -1.5, 2**31, -2**31, 2**63, 1e20, 65519, 65520, 1e-50]
    for fd in ALL:
        v = values(fd, rng)
        if fd in FLOATS:
            v = np.concatenate([v, host(tensor(extra, fd))])
        for td in ALL:
            want = host(_C.Op("cast")(tensor(v, fd), dtype=td))
            same(run_harness(bins["creation"], "cast", fd, [v], {"to": DT[td]}), want, "cast {} -> {}".format(fd, td))


def generated(exe, op, dtype, attrs, cpu_attrs):
    want = host(_C.Op(op)(place="cpu", dtype=dtype, **cpu_attrs))
    got = run_harness(exe, op, dtype, [np.zeros(len(want))], attrs)
    same(got, want, "{} {} {}".format(op, dtype, cpu_attrs))


@pytest.mark.parametrize("dtype", FLOATS)
def test_random_ops_match_the_cpu_bit_for_bit(bins, dtype):
    exe = bins["creation"]
    for lo, hi, seed, off in [(-2, 3, 1234, 0), (0, 1, 1234, 77), (-1, 1, 5, 12345678901), (0.999, 1.0, 7, 3)]:
        a = dict(min=lo, max=hi, seed=seed, offset=off)
        generated(exe, "uniform", dtype, a, dict(a, shape=[1000]))
    for mean, std, seed, off in [(1, 2, 1234, 5), (-3, 0.5, 2**40, 2**33)]:
        a = dict(mean=mean, std=std, seed=seed, offset=off)
        generated(exe, "normal", dtype, a, dict(a, shape=[1000]))
    p = host(tensor(np.concatenate([np.random.default_rng(4).uniform(0, 1, 500), [0, 1, 0.5]]), dtype))
    want = host(_C.Op("bernoulli")(tensor(p, dtype), seed=42, offset=3))
    same(run_harness(exe, "bernoulli", dtype, [p], dict(seed=42, offset=3)), want, "bernoulli " + dtype)


def test_bernoulli_outside_0_1_is_nan(bins):
    got = run_harness(bins["creation"], "bernoulli", "float32", [[-0.5, 1.5, np.nan, 0.25]], dict(seed=1))
    assert np.isnan(got[:3]).all() and got[3] in (0.0, 1.0)


@pytest.mark.parametrize("dtype", REAL)
def test_arange_linspace_fill(bins, dtype):
    exe = bins["creation"]
    for start, end, step in [(1, 11, 2), (10, 0, -3), (0.5, 3, 0.25), (-3.7, 5.1, 0.3), (5, 5, 1), (-100, 100, 7)]:
        if dtype == "uint8" and start < 0:
            continue
        generated(exe, "arange", dtype, dict(start=start, step=step), dict(start=start, end=end, step=step))
    for start, stop, num in [(-1, 1, 7), (10, 2, 5), (2, 2, 1), (0, 1, 0), (0, 20, 11), (-3.3, 7.7, 101)]:
        if dtype == "uint8" and start < 0:
            continue
        generated(exe, "linspace", dtype, dict(start=start, stop=stop), dict(start=start, stop=stop, num=num))
    for value in [2.5, -7, -2.75, 0, 1e10, float("nan")]:
        generated(exe, "fill", dtype, dict(value=value), dict(shape=[2, 3], value=value))
