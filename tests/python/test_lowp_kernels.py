"""The CPU plugin's bfloat16/float16 kernels (plugins/cpu/lowp.h): casts bit for bit against an
independent numpy rounding (round to nearest even, NaN stays NaN, inf stays inf, denormals kept), in
every conversion version the plugin has (AVX-512, AVX2, scalar; OAR_CPU_LOWP_ISA picks a lower one);
elementwise, activation, reduction, softmax, layer_norm, matmul, linear and conv results against float64
on the same rounded inputs, with sizes that leave tails of 1..15 elements, non-contiguous and broadcast
operands."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
import oar.nn.functional as F

LOWP = ["bfloat16", "float16"]


# ---- independent references ------------------------------------------------------------------------
def bf16_round(a):
    """float32 values rounded to bfloat16 (as float32): round to nearest even on the bits."""
    a = np.ascontiguousarray(a, np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where(np.isnan(a), (u >> 16) | 0x40, r)
    return (r.astype(np.uint32) << 16).view(np.float32)


def lowp_round(a, dtype):
    a = np.asarray(a, np.float32)
    return bf16_round(a) if dtype == "bfloat16" else a.astype(np.float16).astype(np.float32)


def to_lowp(a, dtype):
    return oar.to_tensor(np.asarray(a, np.float32)).astype(dtype)


def host(t):
    return np.asarray(t.astype("float32").numpy(), np.float32)


def same_bits(got, want):
    """float32 arrays equal bit for bit, NaN matching any NaN."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), "NaN positions differ"
    g, w = got[~nan].view(np.uint32), want[~nan].view(np.uint32)
    bad = np.nonzero(g != w)[0]
    assert bad.size == 0, "first mismatch: input #{} got {:#010x} want {:#010x}".format(bad[0], g[bad[0]], w[bad[0]])


def cast_patterns():
    """float32 bit patterns that exercise the rounding: halfway cases (both parities), just below and
    just above halfway, denormals, zeros, infinities, NaNs, the largest finite values and values that
    round up to inf, then random values."""
    rng = np.random.default_rng(1)
    hi = rng.integers(0, 0x10000, size=512, dtype=np.uint32) << 16
    hi = hi[((hi >> 23) & 0xFF) != 0xFF]  # finite upper halves
    pats = [hi | 0x8000, hi | 0x7FFF, hi | 0x8001, hi]
    special = np.array([0, 0x80000000, 1, 0x8000, 0x18000, 0x7FFF, 0x807FFFFF, 0x7F800000, 0xFF800000,
                        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000,
                        0x7F7E8000, 0x3F808000, 0x3F818000, 0x477FF000, 0x477FE000, 0x33800000, 0x33000000,
                        0x387FC000, 0x38800000], np.uint32)
    bits = np.concatenate(pats + [special])
    return np.concatenate([bits.view(np.float32), rng.standard_normal(1000).astype(np.float32) * 100])


def run_cast_checks():
    """The cast checks, run in this process and in subprocesses with lower conversion versions."""
    x = cast_patterns()
    for n in list(range(1, 34)) + [x.size]:  # every tail length of 16- and 8-lane vectors
        v = x[:n]
        same_bits(host(to_lowp(v, "bfloat16")), bf16_round(v))
        same_bits(host(to_lowp(v, "float16")), v.astype(np.float16).astype(np.float32))
    # Every 16-bit pattern back to float32 exactly (bfloat16 through float32 bits, float16 against numpy).
    allbits = np.arange(0x10000, dtype=np.uint32)
    b = (allbits << 16).view(np.float32)
    same_bits(host(to_lowp(b, "bfloat16")), b)
    h = allbits.astype(np.uint16).view(np.float16)
    same_bits(host(oar.to_tensor(h)), h.astype(np.float32))
    # 16-bit to 16-bit through float32.
    same_bits(host(to_lowp(x, "float16").astype("bfloat16")), bf16_round(x.astype(np.float16).astype(np.float32)))
    same_bits(host(to_lowp(x, "bfloat16").astype("float16")), bf16_round(x).astype(np.float16).astype(np.float32))
    # A non-contiguous source (a transposed view) takes the strided path: same results.
    m = x[:1000].reshape(40, 25)
    t = oar.to_tensor(m).transpose([1, 0])
    same_bits(host(t.astype("bfloat16")), bf16_round(m.T))


def test_cast_bit_exact():
    with np.errstate(over="ignore"):  # numpy's float16 reference warns on values that round to inf
        run_cast_checks()


@pytest.mark.parametrize("isa", ["avx2", "scalar"])
def test_cast_bit_exact_lower_isa(isa):
    # The table of conversion versions is chosen once per process: a subprocess per version.
    env = dict(os.environ, OAR_CPU_LOWP_ISA=isa)
    r = subprocess.run([sys.executable, __file__, "--cast-checks"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "cast checks passed" in r.stdout, r.stdout + r.stderr


# ---- elementwise ------------------------------------------------------------------------------------
SIZES = list(range(1, 18)) + [31, 33, 515, 4099]  # tails 1..15 of 16 lanes, and of a 512-element block
TOL = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}  # one unit in the last place


def check_close(got, want64, dtype, atol=0.0):
    """got (float32 values of a dtype result) within one ulp of the float64 reference rounded to dtype."""
    want = lowp_round(want64, dtype)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=atol, equal_nan=True)


UNARY = {
    "exp": (oar.exp, np.exp, (-4, 4)),
    "log": (oar.log, np.log, (0.01, 50)),
    "sqrt": (oar.sqrt, np.sqrt, (0, 50)),
    "tanh": (oar.tanh, np.tanh, (-5, 5)),
    "sigmoid": (F.sigmoid, lambda v: 1 / (1 + np.exp(-v)), (-8, 8)),
    "relu": (F.relu, lambda v: np.maximum(v, 0), (-3, 3)),
    "abs": (oar.abs, np.abs, (-3, 3)),
    "neg": (oar.neg, np.negative, (-3, 3)),
    "square": (oar.square, np.square, (-3, 3)),
    "silu": (F.silu, lambda v: v / (1 + np.exp(-v)), (-6, 6)),
    "gelu": (F.gelu, lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2))), (-4, 4)),
}


@pytest.mark.parametrize("dtype", LOWP)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    fn, ref, (lo, hi) = UNARY[name]
    rng = np.random.default_rng(len(name))
    for n in SIZES:
        x = lowp_round(rng.uniform(lo, hi, n), dtype)
        check_close(host(fn(to_lowp(x, dtype))), ref(x.astype(np.float64)), dtype, atol=1e-6)
    # Non-contiguous: a transposed view.
    x = lowp_round(rng.uniform(lo, hi, (33, 17)), dtype)
    t = to_lowp(x, dtype).transpose([1, 0])
    check_close(host(fn(t)), ref(x.T.astype(np.float64)), dtype, atol=1e-6)


BINARY = {
    "add": (oar.add, np.add),
    "subtract": (oar.subtract, np.subtract),
    "multiply": (oar.multiply, np.multiply),
    "divide": (oar.divide, np.divide),
    "maximum": (oar.maximum, np.maximum),
    "minimum": (oar.minimum, np.minimum),
}


@pytest.mark.parametrize("dtype", LOWP)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, dtype):
    fn, ref = BINARY[name]
    rng = np.random.default_rng(len(name) + 7)

    def draw(shape):
        v = rng.uniform(-4, 4, shape)
        return lowp_round(np.where(np.abs(v) < 0.1, 0.5, v), dtype)  # no tiny divisors

    for n in SIZES:
        x, y = draw(n), draw(n)
        check_close(host(fn(to_lowp(x, dtype), to_lowp(y, dtype))), ref(x.astype(np.float64), y), dtype)
    x, y = draw((9, 35)), draw((35,))
    check_close(host(fn(to_lowp(x, dtype), to_lowp(y, dtype))), ref(x.astype(np.float64), y), dtype)  # row bcast
    s = draw((1,))
    check_close(host(fn(to_lowp(s, dtype), to_lowp(y, dtype))), ref(s.astype(np.float64), y), dtype)  # scalar
    xt = to_lowp(draw((35, 9)), dtype)
    check_close(host(fn(xt.transpose([1, 0]), to_lowp(x, dtype))),
                ref(host(xt).T.astype(np.float64), x), dtype)  # strided operand
    # NaN and inf propagate.
    sp = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan], np.float32)
    one = np.ones(5, np.float32)
    check_close(host(fn(to_lowp(sp, dtype), to_lowp(one, dtype))), ref(sp.astype(np.float64), one), dtype)


@pytest.mark.parametrize("dtype", LOWP)
def test_activation_grads(dtype):
    # The fused "<act>_grad" kernels: d/dx of sum(act(x) * w) against the float64 run of the same op.
    rng = np.random.default_rng(3)
    for act in (F.gelu, F.silu):
        x = lowp_round(rng.uniform(-4, 4, (7, 37)), dtype)
        w = lowp_round(rng.uniform(-1, 1, (7, 37)), dtype)
        got = []
        for dt in (dtype, "float64"):
            t = oar.to_tensor(x.astype(np.float64)).astype(dt)
            t.stop_gradient = False
            (act(t) * oar.to_tensor(w.astype(np.float64)).astype(dt)).sum().backward()
            got.append(host(t.grad).astype(np.float64))
        check_close(got[0], got[1], dtype, atol=2e-3)


# ---- reductions, softmax, layer_norm -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", LOWP)
def test_reductions(dtype):
    rng = np.random.default_rng(5)
    cases = [((7,), None), ((3, 17), -1), ((5, 1031), 1), ((4099,), None), ((6, 7, 33), 1), ((33, 7), 0)]
    for shape, axis in cases:
        x = lowp_round(rng.uniform(-2, 2, shape), dtype)
        t = to_lowp(x, dtype)
        x64 = x.astype(np.float64)
        scale = np.sum(np.abs(x64), axis=axis) * 2.0 ** -20  # float32 accumulation error bound, generous
        check_close(host(oar.sum(t, axis=axis)), np.sum(x64, axis=axis), dtype, atol=np.max(scale) + 1e-6)
        check_close(host(oar.mean(t, axis=axis)), np.mean(x64, axis=axis), dtype, atol=1e-6)
        same_bits(host(oar.max(t, axis=axis)), np.max(x, axis=axis).astype(np.float32))
        same_bits(host(oar.min(t, axis=axis)), np.min(x, axis=axis).astype(np.float32))
    # NaN wins max; a strided input takes the general loop.
    x = lowp_round(rng.uniform(-2, 2, (19, 21)), dtype)
    x[3, 4] = np.nan
    t = to_lowp(x, dtype)
    assert np.isnan(host(oar.max(t))).all()
    tt = t.transpose([1, 0])
    check_close(host(oar.sum(tt, axis=1)), np.sum(x.T.astype(np.float64), axis=1), dtype, atol=1e-4)


@pytest.mark.parametrize("dtype", LOWP)
def test_softmax_and_log_softmax(dtype):
    rng = np.random.default_rng(6)
    # (70, 1000): five chunks of 16 rows (lowp_rows), the last one short.
    for shape, axis in [((5, 17), -1), ((3, 1000), -1), ((70, 1000), -1), ((6, 9, 4), 1), ((33,), 0)]:
        x = lowp_round(rng.uniform(-6, 6, shape), dtype)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
        sm = e / e.sum(axis=axis, keepdims=True)
        check_close(host(F.softmax(to_lowp(x, dtype), axis=axis)), sm, dtype, atol=1e-6)
        check_close(host(F.log_softmax(to_lowp(x, dtype), axis=axis)), np.log(sm), dtype, atol=1e-6)


@pytest.mark.parametrize("dtype", LOWP)
def test_layer_norm(dtype):
    rng = np.random.default_rng(7)
    for shape in [(4, 17), (3, 5, 129), (300, 129)]:  # the last: three chunks of 127 rows, the last short
        n = shape[-1]
        x = lowp_round(rng.uniform(-3, 3, shape), dtype)
        w = lowp_round(rng.uniform(0.5, 1.5, n), dtype)
        b = lowp_round(rng.uniform(-0.5, 0.5, n), dtype)
        got, grads = {}, {}
        for dt in (dtype, "float64"):
            ts = [oar.to_tensor(a.astype(np.float64)).astype(dt) for a in (x, w, b)]
            for t in ts:
                t.stop_gradient = False
            y = F.layer_norm(ts[0], [n], weight=ts[1], bias=ts[2], epsilon=1e-5)
            got[dt] = host(y).astype(np.float64)
            (y * oar.to_tensor(np.linspace(-1, 1, y.size).reshape(shape)).astype(dt)).sum().backward()
            grads[dt] = [host(t.grad).astype(np.float64) for t in ts]
        check_close(got[dtype], got["float64"], dtype, atol=2e-2 if dtype == "bfloat16" else 4e-3)
        for g, g64 in zip(grads[dtype], grads["float64"]):
            np.testing.assert_allclose(g, g64, rtol=0.02, atol=0.02 * np.abs(g64).max())


# ---- matmul, linear, conv ------------------------------------------------------------------------------
def close_to_f64(got, want, dtype):
    # float32 accumulation, one rounding of each result to dtype, inputs already in dtype.
    np.testing.assert_allclose(got, want, rtol=2 * TOL[dtype], atol=4 * TOL[dtype] * np.abs(want).max())


@pytest.mark.parametrize("dtype", LOWP)
def test_matmul_bmm_linear(dtype):
    rng = np.random.default_rng(8)
    for (m, k, n) in [(1, 1, 1), (3, 17, 5), (64, 300, 33), (130, 64, 257)]:
        a = lowp_round(rng.standard_normal((m, k)), dtype)
        b = lowp_round(rng.standard_normal((k, n)), dtype)
        close_to_f64(host(oar.matmul(to_lowp(a, dtype), to_lowp(b, dtype))), a.astype(np.float64) @ b, dtype)
        # transposed operands
        got = oar.matmul(to_lowp(a.T.copy(), dtype), to_lowp(b.T.copy(), dtype), transpose_x=True, transpose_y=True)
        close_to_f64(host(got), a.astype(np.float64) @ b, dtype)
    a = lowp_round(rng.standard_normal((4, 9, 40)), dtype)
    b = lowp_round(rng.standard_normal((4, 40, 11)), dtype)
    close_to_f64(host(oar.bmm(to_lowp(a, dtype), to_lowp(b, dtype))), a.astype(np.float64) @ b, dtype)
    x = lowp_round(rng.standard_normal((2, 7, 48)), dtype)
    w = lowp_round(rng.standard_normal((48, 24)), dtype)
    bias = lowp_round(rng.standard_normal(24), dtype)
    y = host(F.linear(to_lowp(x, dtype), to_lowp(w, dtype), to_lowp(bias, dtype)))
    # linear is matmul (rounded to dtype) then the bias add (rounded again).
    want = lowp_round(x.astype(np.float64) @ w, dtype).astype(np.float64) + bias
    close_to_f64(y, want, dtype)


@pytest.mark.parametrize("dtype", LOWP)
def test_conv2d_forward_and_backward(dtype):
    rng = np.random.default_rng(9)
    for (n, c, h, w, co, k, s, p, g) in [(2, 16, 9, 11, 32, 3, 1, 1, 1), (1, 3, 7, 7, 5, 3, 2, 0, 1),
                                         (2, 8, 6, 6, 8, 3, 1, 1, 4)]:
        x = lowp_round(rng.standard_normal((n, c, h, w)), dtype)
        wt = lowp_round(rng.standard_normal((co, c // g, k, k)) * 0.2, dtype)
        res = {}
        for dt in (dtype, "float64"):
            tx = oar.to_tensor(x.astype(np.float64)).astype(dt)
            tw = oar.to_tensor(wt.astype(np.float64)).astype(dt)
            tx.stop_gradient = tw.stop_gradient = False
            y = F.conv2d(tx, tw, stride=s, padding=p, groups=g)
            gy = oar.to_tensor(lowp_round(np.cos(np.arange(y.size)).reshape(y.shape), dtype).astype(np.float64))
            (y * gy.astype(dt)).sum().backward()
            res[dt] = [host(v).astype(np.float64) for v in (y, tx.grad, tw.grad)]
        for got, want in zip(res[dtype], res["float64"]):
            close_to_f64(got, want, dtype)


def test_native_onednn_lowp_kernels():
    # OAR_CPU_LOWP_NATIVE=1 makes matmul and conv run oneDNN's own bfloat16 kernels even where the
    # float32 path is faster (the default off AMX): both paths give float32-accumulated results.
    env = dict(os.environ, OAR_CPU_LOWP_NATIVE="1")
    r = subprocess.run([sys.executable, __file__, "--native-checks"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "native checks passed" in r.stdout, r.stdout + r.stderr


if __name__ == "__main__" and "--native-checks" in sys.argv:
    for dt in LOWP:
        test_matmul_bmm_linear(dt)
        test_conv2d_forward_and_backward(dt)
    print("native checks passed")

if __name__ == "__main__" and "--cast-checks" in sys.argv:
    np.seterr(over="ignore")
    run_cast_checks()
    print("cast checks passed")
