"""The cpu plugin's vectorised transcendental kernels (vec_loop.h, decision 140): exp, tanh, sigmoid, erf,
gelu (erf and tanh forms), silu and their gradients, softmax/log_softmax and log_softmax_grad (long rows, and
the AVX-512 short-row loops of rows up to 16), in float32,
bfloat16 and float16, and the fused epilogues that share them (fused_elemwise_add_activation,
fused_gemm_epilogue's gelu).

- Their bits do not depend on the thread count: tensors big enough to be split between threads give the
  same bytes with OMP_NUM_THREADS=1 and 2 (each in a fresh process: libgomp reads it once).
- Nor on the instruction set: the AVX-512, AVX2 and baseline builds (OAR_CPU_VEC_ISA caps the choice)
  give the same bytes.
- The vector loop (contiguous input) and the scalar loop (strided input) give the same bytes (a NaN's sign
  aside), and the results stay within a few float32 ulps of float64 references, special values included.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import oar
import oar.nn.functional as F

# Above the cpu plugin's elementwise grain (32768) twice over, and a tail of every length below 16 lanes.
N = 3 * 32768 + 13
ROWS, COLS = 203, 1000  # softmax rows: ~4 per thread piece, a row length that is no multiple of 16


def _inputs():
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(N) * 3).astype(np.float32)
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 88.0, 89.0, -103.0, -104.0, 1.2499,
                         1.25, 3.9499, 3.95, 0.6249, 0.625, 10.0, 20.0, -20.0], np.float32)
    x[:len(specials)] = specials
    g = rng.standard_normal(N).astype(np.float32)
    m = (rng.standard_normal((ROWS, COLS)) * 4).astype(np.float32)
    m[5, 7] = np.nan
    m[9, 3] = np.inf
    gm = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    return x, g, m, gm


UNARY = {
    "exp": oar.exp,
    "tanh": oar.tanh,
    "sigmoid": F.sigmoid,
    "erf": oar.erf,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate=True),
    "silu": F.silu,
}
ROWWISE = {"softmax": lambda t: F.softmax(t, axis=-1), "log_softmax": lambda t: F.log_softmax(t, axis=-1)}


def _short_rows(n, rows=37, mixed_nan=False):
    """[rows, n] float32 scores for the AVX-512 short-row loops (n <= 16): random rows, then rows with NaN
    (either sign), +inf, all -inf, masked (-inf) entries, large spreads (exp underflows) and signed zeros.
    mixed_nan: row 9 holds NaNs of both signs, whose sign in the result follows the order GCC gives the
    scalar adds' operands (the baseline build's gradient already differed there): not for bitwise checks."""
    rng = np.random.default_rng(100 + n)
    m = (rng.standard_normal((rows, n)) * 3).astype(np.float32)
    m[1, n // 2] = np.nan
    m[2, n - 1] = -np.nan
    m[3, 0] = np.inf
    m[4] = -np.inf
    m[5, n // 2:] = -np.inf
    m[6, ::2] = -np.inf
    m[7, :] = np.linspace(-120, 90, n)
    m[8, :] = 0.0
    m[8, ::2] = -0.0
    if mixed_nan:
        m[9, 0] = np.nan
        m[9, n - 1] = -np.nan
    return m


SHORT_LENGTHS = range(1, 18)  # 17: one past the short-row loops


def _grad(fn, x, g):
    x = x.detach() if hasattr(x, "detach") else x
    x.stop_gradient = False
    (dx,) = oar.grad([fn(x)], [x], [g])
    return dx


def run_all():
    """{name: raw bytes} of every checked op and dtype."""
    x, g, m, gm = _inputs()
    out = {}
    for dt in ("float32", "bfloat16", "float16"):
        tx, tg = oar.to_tensor(x).astype(dt), oar.to_tensor(g).astype(dt)
        tm, tgm = oar.to_tensor(m).astype(dt), oar.to_tensor(gm).astype(dt)
        for name, fn in UNARY.items():
            out[name + "|" + dt] = fn(tx).astype("float32").numpy().tobytes()
            if name in ("gelu", "gelu_tanh", "silu"):
                out[name + "_grad|" + dt] = _grad(fn, tx, tg).astype("float32").numpy().tobytes()
        for name, fn in ROWWISE.items():
            out[name + "|" + dt] = fn(tm).astype("float32").numpy().tobytes()
            out[name + "_grad|" + dt] = _grad(fn, tm, tgm).astype("float32").numpy().tobytes()
    # Short rows (the AVX-512 short-row loops of softmax, log_softmax and their gradients), every length
    # 1..17, and rows enough to be split between threads at two of them.
    shapes = [(37, n) for n in SHORT_LENGTHS] + [(2100, 16), (2100, 5)]
    for dt in ("float32", "bfloat16"):
        for rows, n in shapes:
            tm = oar.to_tensor(_short_rows(n, rows)).astype(dt)
            tg = oar.to_tensor(np.random.default_rng(n).standard_normal((rows, n)).astype(np.float32)).astype(dt)
            for name, fn in ROWWISE.items():
                key = "{} short {}x{}|{}".format(name, rows, n, dt)
                out[key] = fn(tm).astype("float32").numpy().tobytes()
                out[key + " grad"] = _grad(fn, tm, tg).astype("float32").numpy().tobytes()
    # fused_linear_param_grad's bias sums (double accumulators, also built for AVX-512).
    rs = np.random.RandomState(7)
    lx = oar.to_tensor(rs.randn(300, 24).astype("float32"))
    lg = oar.to_tensor((rs.randn(300, 37) * 1e3).astype("float32"))
    dw, db = oar._C.Op("fused_linear_param_grad")(lx, lg)
    out["fused_linear_param_grad|float32"] = dw.numpy().tobytes() + db.numpy().tobytes()
    return out


def _child_results(env):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.npz")
        e = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OAR_CPU_VEC_ISA")}
        e.update(env)
        r = subprocess.run([sys.executable, __file__, "--child", path], env=e, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        with np.load(path) as z:
            return {k: z[k].tobytes() for k in z.files}


def _assert_same(a, b, what):
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k] != b[k]]
    assert not differ, "{}: different bits for {}".format(what, differ)


def test_bits_do_not_depend_on_thread_count():
    one = _child_results({"OMP_NUM_THREADS": "1"})
    two = _child_results({"OMP_NUM_THREADS": "2"})
    _assert_same(one, two, "OMP_NUM_THREADS=1 vs 2")


def test_bits_do_not_depend_on_instruction_set():
    best = _child_results({"OMP_NUM_THREADS": "2"})
    for isa in ("avx2", "baseline"):
        _assert_same(best, _child_results({"OMP_NUM_THREADS": "2", "OAR_CPU_VEC_ISA": isa}), "best vs " + isa)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_vector_loop_equals_scalar_loop(name, dtype):
    if name.startswith("gelu") or name == "silu":
        pytest.skip("activation kernels take contiguous inputs only")
    x = _inputs()[0][:4099]
    base = oar.to_tensor(np.stack([x, x[::-1]], axis=1)).astype(dtype)  # column 0 is x, with stride 2
    strided = base[:, 0]
    assert not strided.is_contiguous()
    contiguous = oar.to_tensor(x).astype(dtype)
    got_s = UNARY[name](strided).astype("float32").numpy()
    got_c = UNARY[name](contiguous).astype("float32").numpy()
    # GCC turns a + -b into a - b in scalar code only, which can flip a NaN's sign: NaNs compare as NaNs.
    assert np.array_equal(np.isnan(got_s), np.isnan(got_c))
    ok = ~np.isnan(got_c)
    assert got_s[ok].tobytes() == got_c[ok].tobytes()


def _ref(name, v):
    import math
    erf = np.vectorize(math.erf, otypes=[np.float64])
    with np.errstate(over="ignore", invalid="ignore"):
        return {
            "exp": lambda: np.exp(v),
            "tanh": lambda: np.tanh(v),
            "sigmoid": lambda: 1 / (1 + np.exp(-v)),
            "erf": lambda: erf(v),
            "gelu": lambda: 0.5 * v * (1 + erf(v / np.sqrt(2))),
            "gelu_tanh": lambda: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))),
            "silu": lambda: v / (1 + np.exp(-v)),
        }[name]()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_float32_accuracy_with_specials(name):
    x = _inputs()[0]
    got = UNARY[name](oar.to_tensor(x)).numpy().astype(np.float64)
    want = _ref(name, x.astype(np.float64))
    with np.errstate(over="ignore"):
        want = want.astype(np.float32).astype(np.float64)  # exp(89) is inf in float32
    finite = np.isfinite(want)
    # exact where the reference is not finite (inf, NaN)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    # a few ulps of float32 relative, or absolute near 0 (gelu/silu of large negative inputs)
    np.testing.assert_allclose(got[finite], want[finite], rtol=4e-6, atol=1e-6)


@np.errstate(invalid="ignore")  # the rows holding NaN or inf
def test_rowwise_float32_accuracy():
    m = _inputs()[2]
    m64 = m.astype(np.float64)
    ok = np.isfinite(m).all(axis=1)
    e = np.exp(m64 - m64.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    got = F.softmax(oar.to_tensor(m), axis=-1).numpy()
    np.testing.assert_allclose(got[ok], sm[ok], rtol=1e-5, atol=1e-9)
    assert np.isnan(got[~ok]).all()
    lsm = m64 - m64.max(axis=1, keepdims=True) - np.log(e.sum(axis=1, keepdims=True))
    got = F.log_softmax(oar.to_tensor(m), axis=-1).numpy()
    np.testing.assert_allclose(got[ok], lsm[ok], rtol=1e-5, atol=2e-5)
    assert np.isnan(got[~ok]).all()


@np.errstate(invalid="ignore", over="ignore")
@pytest.mark.parametrize("n", SHORT_LENGTHS)
def test_short_rows_float32_accuracy(n):
    # Against float64: finite rows within float32 tolerance, masked (-inf) entries exactly 0 (softmax) or
    # -inf (log_softmax), rows with NaN, +inf or only -inf entirely NaN; the gradients of finite rows too.
    m = _short_rows(n, mixed_nan=True)
    m64 = m.astype(np.float64)
    mx = np.where(np.isnan(m64), -np.inf, m64).max(axis=1, keepdims=True)
    bad = np.isnan(m).any(axis=1) | np.isposinf(m).any(axis=1) | np.isneginf(m).all(axis=1)
    e = np.exp(m64 - mx)
    sm = e / e.sum(axis=1, keepdims=True)
    lsm = m64 - mx - np.log(e.sum(axis=1, keepdims=True))
    got = F.softmax(oar.to_tensor(m), axis=-1).numpy()
    assert np.isnan(got[bad]).all()
    np.testing.assert_allclose(got[~bad], sm[~bad], rtol=1e-5, atol=1e-9)
    got = F.log_softmax(oar.to_tensor(m), axis=-1).numpy()
    assert np.isnan(got[bad]).all()
    np.testing.assert_array_equal(got[~bad] == -np.inf, lsm[~bad] == -np.inf)
    fin = np.isfinite(lsm) & ~bad[:, None]
    np.testing.assert_allclose(got[fin], lsm[fin], rtol=1e-5, atol=2e-5)
    g = np.random.default_rng(n).standard_normal(m.shape).astype(np.float32)
    g64 = g.astype(np.float64)
    dx = _grad(lambda t: F.softmax(t, axis=-1), oar.to_tensor(m), oar.to_tensor(g)).numpy()
    want = sm * (g64 - (g64 * sm).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(dx[~bad], want[~bad], rtol=1e-4, atol=1e-5)
    ok = np.isfinite(m).all(axis=1)  # log_softmax's gradient of a masked row: g - exp(-inf) s, finite
    dx = _grad(lambda t: F.log_softmax(t, axis=-1), oar.to_tensor(m), oar.to_tensor(g)).numpy()
    want = g64 - sm * g64.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dx[ok], want[ok], rtol=1e-4, atol=1e-4)


def test_log_softmax_grad_float32():
    _, _, m, gm = _inputs()
    ok = np.isfinite(m).all(axis=1)
    m, gm = m[ok], gm[ok]
    m64, g64 = m.astype(np.float64), gm.astype(np.float64)
    sm = np.exp(m64 - m64.max(axis=1, keepdims=True))
    sm /= sm.sum(axis=1, keepdims=True)
    want = g64 - sm * g64.sum(axis=1, keepdims=True)
    got = _grad(lambda t: F.log_softmax(t, axis=-1), oar.to_tensor(m), oar.to_tensor(gm)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_small_tensors_stay_exact():
    # Below a vector's width the tail loop alone runs: every length 1..17 against the long tensor's values.
    x = _inputs()[0][:17]
    for name, fn in UNARY.items():
        full = fn(oar.to_tensor(x)).numpy()
        for n in range(1, 18):
            assert fn(oar.to_tensor(x[:n])).numpy().tobytes() == full[:n].tobytes(), (name, n)


@pytest.mark.parametrize("act", ["gelu", "sigmoid", "tanh"])
def test_fused_add_activation_float32_equals_the_unfused_ops(act):
    # The fused epilogue runs the same vector code as the eager activation: the same bits.
    from oar import _C
    x, g = _inputs()[:2]
    tx, ty = oar.to_tensor(x[:64 * 1000].reshape(64, 1000)), oar.to_tensor(g[:1000])
    fused = _C.Op("fused_elemwise_add_activation")(tx, ty, activation=act).numpy()
    unfused = {"gelu": F.gelu, "sigmoid": F.sigmoid, "tanh": oar.tanh}[act](tx + ty).numpy()
    assert fused.tobytes() == unfused.tobytes()


def test_fused_gemm_epilogue_gelu_float32_equals_gelu_after_it():
    # Above the small-product cutoff oneDNN computes x @ y + b and the gelu kernel's code runs after it.
    from oar import _C
    rng = np.random.default_rng(3)
    x, y, b = (rng.standard_normal(s).astype(np.float32) for s in ((256, 128), (128, 192), (192,)))
    op = _C.Op("fused_gemm_epilogue")
    t = [oar.to_tensor(a) for a in (x, y, b)]
    fused = op(*t, activation="gelu").numpy()
    after = F.gelu(op(*t, activation="none")).numpy()
    assert fused.tobytes() == after.tobytes()


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--child":
    res = run_all()
    np.savez(sys.argv[2], **{k: np.frombuffer(v, np.uint8) for k, v in res.items()})
