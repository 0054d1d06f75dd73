"""The gpu plugin's reduction, scan/sort, softmax/norm and indexing kernels (plugins/cuda/README.md,
"Reductions, scans, sort, fused nn, indexing") on large shapes that the op suite's small samples do not
reach: chunked two-pass reductions, column reductions, block scans, multi-line radix sorts, warp- and
block-per-row softmax/layer_norm, atomic scatters of 1- and 2-byte types, against the CPU kernels; and
the behaviours decided for the GPU (docs/decisions.md 46): reductions are deterministic, out-of-range
indices are skipped, an out-of-range label gives a NaN loss. Skipped where no GPU is usable, with the
runtime's reason."""
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


def f32(*s):
    return RNG.standard_normal(s).astype(np.float32)


def f64(*s):
    return RNG.standard_normal(s)


def f16(*s):
    return RNG.standard_normal(s).astype(np.float16)


def ints(lo, hi, *s, dtype=np.int64):
    return RNG.integers(lo, hi, s).astype(dtype)


def run(op, arrays, place, variadic=False, **attrs):
    ins = [oar.to_tensor(a, place=place) for a in arrays]
    f = _C.Op(op)
    r = f(ins, **attrs) if variadic else f(*ins, **attrs)
    return [t.numpy() for t in (list(r) if isinstance(r, (list, tuple)) else [r])]


# (name, op, inputs, tolerance, attrs)
CASES = [
    ("sum rows chunked", "sum", lambda: [f32(3, 200000)], 1e-5, dict(axis=[1], keepdim=False)),
    ("sum columns chunked", "sum", lambda: [f32(200000, 3)], 1e-5, dict(axis=[0], keepdim=False)),
    ("sum all", "sum", lambda: [f32(1000, 1000)], 1e-5, dict(axis=[], keepdim=False)),
    ("sum axes 0,2 keepdim", "sum", lambda: [f64(64, 50, 70)], 1e-12, dict(axis=[0, 2], keepdim=True)),
    ("sum int32 -> int64", "sum", lambda: [ints(-100, 100, 500, 700, dtype=np.int32)], 0, dict(axis=[1], keepdim=False)),
    ("mean float16", "mean", lambda: [f16(4, 100000)], 2e-3, dict(axis=[1], keepdim=False)),
    ("mean columns", "mean", lambda: [f32(8, 9, 10000)], 1e-5, dict(axis=[0, 1], keepdim=True)),
    ("max all", "max", lambda: [f32(300000)], 0, dict(axis=[], keepdim=False)),
    ("min columns", "min", lambda: [f32(512, 2000)], 0, dict(axis=[0], keepdim=False)),
    ("max float16 columns", "max", lambda: [f16(3000, 333)], 0, dict(axis=[0], keepdim=False)),
    ("prod int64 columns", "prod", lambda: [ints(-2, 3, 20, 70000)], 0, dict(axis=[0], keepdim=False)),
    ("all rows", "all", lambda: [RNG.random((1000, 3000)) > 0.0001], 0, dict(axis=[1], keepdim=False)),
    ("any columns", "any", lambda: [RNG.random((3000, 1000)) < 0.0005], 0, dict(axis=[0], keepdim=False)),
    ("argmax all", "argmax", lambda: [f32(300000)], 0, dict(axis=0, keepdim=False, flatten=False)),
    ("argmax ties", "argmax", lambda: [ints(0, 5, 256, 4000, dtype=np.int32)], 0,
     dict(axis=1, keepdim=False, flatten=False)),
    ("argmin int8 columns chunked", "argmin", lambda: [ints(-100, 100, 5000, 3, dtype=np.int8)], 0,
     dict(axis=0, keepdim=False, flatten=False)),
    ("cumsum block scan", "cumsum", lambda: [f32(4, 5000)], 1e-4, dict(axis=1, flatten=False, reverse=False)),
    ("cumsum reverse", "cumsum", lambda: [f32(4, 5000)], 1e-4, dict(axis=1, flatten=False, reverse=True)),
    ("cumsum axis 0", "cumsum", lambda: [f32(5000, 4)], 1e-4, dict(axis=0, flatten=False, reverse=False)),
    ("cumsum int64", "cumsum", lambda: [ints(-1000, 1000, 3, 100000)], 0, dict(axis=1, flatten=False, reverse=False)),
    ("logcumsumexp", "logcumsumexp", lambda: [f32(3, 1000)], 1e-4, dict(axis=1, flatten=False, reverse=False)),
    ("cumprod", "cumprod", lambda: [1 + 0.01 * f64(3, 300)], 1e-10, dict(axis=1, flatten=False)),
    ("sort columns", "sort", lambda: [f32(3000, 5)], 0, dict(axis=0, descending=False, stable=True)),
    ("sort int64 ties", "sort", lambda: [ints(-5, 5, 8, 20000)], 0, dict(axis=-1, descending=False, stable=True)),
    ("sort float16 descending", "sort", lambda: [f16(16, 2000)], 0, dict(axis=-1, descending=True, stable=True)),
    ("sort one long line", "sort", lambda: [f32(1000000)], 0, dict(axis=-1, descending=False, stable=True)),
    ("topk", "topk", lambda: [f32(100, 1000)], 0, dict(k=10, axis=-1, largest=True)),
    ("topk smallest axis 0", "topk", lambda: [ints(0, 20, 1000, 50, dtype=np.int32)], 0,
     dict(k=5, axis=0, largest=False)),
    ("softmax block rows", "softmax", lambda: [f32(64, 3000)], 1e-5, dict(axis=-1)),
    ("softmax warp rows", "softmax", lambda: [f32(37, 1000)], 1e-5, dict(axis=-1)),
    ("log_softmax short rows", "log_softmax", lambda: [f64(1001, 5)], 1e-10, dict(axis=-1)),
    ("softmax axis 0", "softmax", lambda: [f32(1000, 7)], 1e-5, dict(axis=0)),
    ("layer_norm block rows", "layer_norm", lambda: [f32(256, 2048), f32(2048), f32(2048)], 1e-4,
     dict(begin_norm_axis=1, epsilon=1e-5)),
    ("layer_norm warp rows", "layer_norm", lambda: [f32(37, 768), f32(768), f32(768)], 1e-4,
     dict(begin_norm_axis=1, epsilon=1e-5)),
    ("softmax_cross_entropy vocab rows", "softmax_cross_entropy",
     lambda: [f32(64, 32000), np.where(np.arange(64) % 9 == 0, -100, ints(0, 32000, 64))], 1e-4,
     dict(ignore_index=-100)),
    ("index_select rows", "index_select", lambda: [f32(5000, 256), ints(0, 5000, 1000)], 0, dict(axis=0)),
    ("index_select axis 1", "index_select", lambda: [f32(16, 3000), ints(0, 3000, 500, dtype=np.int32)], 0,
     dict(axis=1)),
    ("index_add repeated", "index_add", lambda: [f32(100, 64), ints(0, 100, 5000), f32(5000, 64)], 1e-4,
     dict(axis=0)),
    ("index_add int8 repeated", "index_add",
     lambda: [ints(-5, 5, 50, 8, dtype=np.int8), ints(0, 50, 300), ints(-3, 3, 300, 8, dtype=np.int8)], 0,
     dict(axis=0)),
    ("gather_nd", "gather_nd", lambda: [f32(30, 40, 50), ints(0, 30, 1000, 2)], 0, {}),
    ("scatter_nd_add float16", "scatter_nd_add", lambda: [f16(30, 40), ints(0, 30, 500, 1), f16(500, 40)], 2e-2, {}),
    ("take_along_axis negative", "take_along_axis", lambda: [f32(100, 200), ints(-200, 200, 100, 50)], 0,
     dict(axis=1)),
    ("put_along_axis int16 add", "put_along_axis",
     lambda: [ints(-9, 9, 40, 30, dtype=np.int16), ints(0, 30, 40, 100), ints(-9, 9, 40, 100, dtype=np.int16)], 0,
     dict(axis=1, reduce=1)),
    ("pad reflect", "pad", lambda: [f32(2, 3, 50, 60)], 0, dict(pads=[0, 0, 0, 0, 3, 4, 5, 6], mode=1, value=0.0)),
    ("pad constant int64", "pad", lambda: [ints(0, 9, 20, 30)], 0, dict(pads=[1, 2, 3, 4], mode=0, value=7.0)),
]


@pytest.mark.parametrize("name,op,make,tol,attrs", CASES, ids=[c[0] for c in CASES])
def test_large_against_cpu(name, op, make, tol, attrs):
    arrays = make()
    before = _C.fallback_counts().get((op, "gpu", str(arrays[0].dtype)), 0)
    got = run(op, arrays, G, **attrs)
    assert _C.fallback_counts().get((op, "gpu", str(arrays[0].dtype)), 0) == before, "ran through the CPU fallback"
    want = run(op, arrays, "cpu", **attrs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if g.dtype.kind == "f":
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            scale = max(1.0, float(np.max(np.abs(w64[np.isfinite(w64)]), initial=0)))
            np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * scale, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def test_nonzero_large():
    z = ints(-1, 2, 1000, 1000, dtype=np.int32)
    got = run("nonzero", [z], G, count=int(np.count_nonzero(z)))[0]
    np.testing.assert_array_equal(got, np.argwhere(z))


def test_concat_axis_1():
    parts = [f32(100, 3, 50), f32(100, 7, 50), f32(100, 1, 50)]
    got = run("concat", parts, G, variadic=True, axis=1)[0]
    np.testing.assert_array_equal(got, np.concatenate(parts, 1))


def test_reductions_are_deterministic():
    x = oar.to_tensor(f32(4, 3000000), place=G)
    a = _C.Op("sum")(x, axis=[1], keepdim=False).numpy()
    for _ in range(3):
        np.testing.assert_array_equal(_C.Op("sum")(x, axis=[1], keepdim=False).numpy(), a)


def test_out_of_range_index_is_skipped_on_gpu():
    # Decided (docs/decisions.md 46): a GPU kernel cannot raise at the call; a gather writes 0 for the
    # element, a scatter skips it. The CPU raises.
    x = f32(5, 3)
    got = run("index_select", [x, np.array([0, 7, 4])], G, axis=0)[0]
    np.testing.assert_array_equal(got, np.stack([x[0], np.zeros(3, np.float32), x[4]]))
    got = run("index_add", [x, np.array([1, -1]), np.ones((2, 3), np.float32)], G, axis=0)[0]
    want = x.copy()
    want[1] += 1
    np.testing.assert_array_equal(got, want)
    with pytest.raises(IndexError):
        run("index_select", [x, np.array([0, 7, 4])], "cpu", axis=0)


def test_out_of_range_label_gives_nan_loss_on_gpu():
    loss, _ = run("softmax_cross_entropy", [f32(3, 4), np.array([1, 9, -100])], G, ignore_index=-100)
    assert np.isfinite(loss[0]) and np.isnan(loss[1]) and loss[2] == 0
