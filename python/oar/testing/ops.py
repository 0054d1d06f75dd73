"""The op suite: every registered op, on every dtype a device has kernels for, on the sample inputs
declared next to the op's definition, with the CPU as the oracle (in the spirit of ggml's
test-backend-ops).

    python -m oar.testing.ops [--device sim:0] [--op NAME ...] [-v] [--no-grad] [--meta]

or from Python:

    from oar.testing import ops
    report = ops.run("sim:0")        # a Report; report.ok, print(report.format())
    problems = ops.meta_check()      # ops and kernels that no sample exercises

Samples are declared in C++ next to each op (the register_<family>_samples functions of
framework/src/op_defs.cc and ops_<family>.cc, see oar/core/op_sample.h) and reach Python through
`oar._C._op_samples(name)`. For each op, each dtype and each sample the suite builds the inputs (views
are made on the device under test) and compares:

- on the CPU: float16/bfloat16/float32 (and complex64) results against the same op run in float64
  (complex128) on the upcast inputs, with the dtype's tolerance; int8/int16/int32/uint8 results exactly
  against the op run in int64 (wrapped back to the dtype); float64, int64 and bool results against a
  numpy reference where the suite has one (NUMPY_REFS), otherwise the view samples against the same
  op on contiguous inputs;
- on another device: against the CPU running the same op on the same (contiguous) inputs, and that
  a kernel the device registers really ran there (no CPU fallback); ops without a kernel on the device
  run once, in float32, through the CPU fallback;
- gradients: for ops with a gradient rule, the gradient of sum(out * w) (w random) in float64 on the
  CPU against central finite differences, and on another device the gradient against the CPU's;
- random ops: shape and dtype against the CPU, every value inside the declared range and the mean near
  the declared mean (their numbers need not match the CPU's).

An op with no samples and no entry in EXCEPTIONS is a failure; `meta_check` also lists every kernel a
loaded plugin registers that no sample exercises. Exit status: 0 when nothing failed, 1 otherwise.
"""
import argparse
import fnmatch
import math
import sys
import time
import traceback

import numpy as np

import oar
from oar import _C

from ._report import ReportBase

__all__ = ["OpResult", "Report", "run", "check_op", "meta_check", "main", "EXCEPTIONS", "NUMPY_REFS"]

# Ops the suite does not run, with the reason. Empty: every op of the core declares samples.
EXCEPTIONS = {}

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("uint8", "int8", "int16", "int32", "int64")
# The dtype the CPU oracle runs a dtype's samples in (exactly representable upcasts).
_UPCAST = {"float16": "float64", "bfloat16": "float64", "float32": "float64", "complex64": "complex128",
           "uint8": "int64", "int8": "int64", "int16": "int64", "int32": "int64"}
# (rtol, atol relative to the largest magnitude of the reference) per result dtype.
_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11),
        "complex64": (1e-4, 1e-5), "complex128": (1e-9, 1e-11)}

# Attributes that depend on the data (filled in from the sample's inputs before the op runs).
_DATA_ATTRS = {
    "nonzero": {"count": lambda xs: int(np.count_nonzero(xs[0]))},
}


def _recompose_svd(outs):
    u, s, vh = outs
    k = s.shape[-1]
    return [s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]]


def _recompose_eigh(outs):
    w, v = outs
    return [w, (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)]


def _recompose_qr(outs):
    q, r = outs
    k = min(q.shape[-1], r.shape[-2])
    return [q[..., :, :k] @ r[..., :k, :], np.abs(r)]


# Ops whose outputs are defined only up to signs (or order within repeated values): the suite compares
# what is unique instead (the values and the product the factors recompose).
# rnn's fourth output is the kernel's opaque reserve for the backward (framework/src/ops_rnn.cc).
_CANONICAL = {"svd": _recompose_svd, "eigh": _recompose_eigh, "qr": _recompose_qr, "rnn": lambda a: a[:3]}

# float64 references from numpy for ops where one is a line; they guard the CPU kernels in the dtypes
# the upcast comparison cannot (float64, int64, bool). Arguments: the input arrays and the attributes.
NUMPY_REFS = {
    "add": lambda x, y, **a: x + y,
    "subtract": lambda x, y, **a: x - y,
    "multiply": lambda x, y, **a: x * y,
    "maximum": lambda x, y, **a: np.maximum(x, y),
    "minimum": lambda x, y, **a: np.minimum(x, y),
    "fmax": lambda x, y, **a: np.fmax(x, y),
    "fmin": lambda x, y, **a: np.fmin(x, y),
    "copysign": lambda x, y, **a: np.copysign(x, y).astype(x.dtype),
    "atan2": lambda x, y, **a: np.arctan2(x, y),
    "equal": lambda x, y, **a: x == y,
    "not_equal": lambda x, y, **a: x != y,
    "less_than": lambda x, y, **a: x < y,
    "less_equal": lambda x, y, **a: x <= y,
    "greater_than": lambda x, y, **a: x > y,
    "greater_equal": lambda x, y, **a: x >= y,
    "logical_and": lambda x, y, **a: np.logical_and(x, y),
    "logical_or": lambda x, y, **a: np.logical_or(x, y),
    "logical_xor": lambda x, y, **a: np.logical_xor(x, y),
    "logical_not": lambda x, **a: np.logical_not(x),
    "neg": lambda x, **a: -x,
    "abs": lambda x, **a: np.abs(x),
    "square": lambda x, **a: x * x,
    "sign": lambda x, **a: np.sign(x),
    "exp": lambda x, **a: np.exp(x),
    "log": lambda x, **a: np.log(x),
    "log1p": lambda x, **a: np.log1p(x),
    "expm1": lambda x, **a: np.expm1(x),
    "sqrt": lambda x, **a: np.sqrt(x),
    "sin": lambda x, **a: np.sin(x),
    "cos": lambda x, **a: np.cos(x),
    "tan": lambda x, **a: np.tan(x),
    "tanh": lambda x, **a: np.tanh(x),
    "sinh": lambda x, **a: np.sinh(x),
    "cosh": lambda x, **a: np.cosh(x),
    "floor": lambda x, **a: np.floor(x),
    "ceil": lambda x, **a: np.ceil(x),
    "trunc": lambda x, **a: np.trunc(x),
    "isnan": lambda x, **a: np.isnan(x),
    "isinf": lambda x, **a: np.isinf(x),
    "isfinite": lambda x, **a: np.isfinite(x),
    "bitwise_and": lambda x, y, **a: x & y,
    "bitwise_or": lambda x, y, **a: x | y,
    "bitwise_xor": lambda x, y, **a: x ^ y,
    "bitwise_not": lambda x, **a: ~x,
    "gcd": lambda x, y, **a: np.gcd(x, y),
    "lcm": lambda x, y, **a: np.lcm(x, y),
    "matmul": lambda x, y, transpose_x=0, transpose_y=0, **a: np.matmul(
        np.swapaxes(x, -1, -2) if transpose_x and x.ndim > 1 else x,
        np.swapaxes(y, -1, -2) if transpose_y and y.ndim > 1 else y),
    "tril": lambda x, diagonal=0, **a: np.tril(x, diagonal),
    "triu": lambda x, diagonal=0, **a: np.triu(x, diagonal),
    "fft_r2c": lambda x, axes, normalization, forward, onesided=1, **a: _fft_r2c_ref(
        x, list(axes), normalization, forward, onesided),
    "softmax_grad": lambda y, g, axis=-1, **a: y * (g - np.sum(g * y, axis=axis, keepdims=True)),
    "log_softmax_grad": lambda y, g, axis=-1, **a: g - np.exp(y) * np.sum(g, axis=axis, keepdims=True),
    "fused_softmax_mask": lambda x, mask, **a: _softmax_ref(x + mask),
    "fused_attention": lambda q, k, v, *mask, scale=1.0, transpose_out=0, **a: _heads_last(
        _attention_ref(q, k, v, mask, scale)[0], transpose_out),
    "fused_attention_grad": lambda q, k, v, p, g, scale=1.0, transpose_dq=0, **a: _heads_last(
        _attention_grad_ref(q, k, v, p, g, scale)[0], transpose_dq),
    "batch_norm": lambda x, w, b, rm, rv, channel_axis=1, epsilon=1e-5, use_global_stats=0, **a: _bn_ref(
        x, w, b, rm, rv, channel_axis, epsilon, use_global_stats),
    "batch_norm_grad": lambda x, w, m, rs, g, channel_axis=1, use_global_stats=0, **a: _bn_grad_ref(
        x, w, m, rs, g, channel_axis, use_global_stats),
}


def _per_channel(v, x, axis):
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return np.asarray(v, np.float64).reshape(shape)


def _bn_ref(x, w, b, rm, rv, axis, eps, use_global_stats):
    axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    x = x.astype(np.float64)
    m, v = (rm, rv) if use_global_stats else (x.mean(axis=axes), x.var(axis=axes))
    c = lambda t: _per_channel(t, x, axis)  # noqa: E731
    return (x - c(m)) / np.sqrt(c(v) + eps) * c(w) + c(b)


def _bn_grad_ref(x, w, m, rs, g, axis, use_global_stats):
    axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    c = lambda t: _per_channel(t, x, axis)  # noqa: E731
    x, g = x.astype(np.float64), g.astype(np.float64)
    if use_global_stats:
        return g * c(w) * c(rs)
    xhat = (x - c(m)) * c(rs)
    n = x.size // x.shape[axis % x.ndim]
    db, dw = g.sum(axis=axes), (g * xhat).sum(axis=axes)
    return c(w) * c(rs) * (g - c(db) / n - xhat * c(dw) / n)


def _softmax_ref(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _heads_last(x, flag):
    return np.swapaxes(x, -3, -2) if flag else x


def _attention_ref(q, k, v, mask, scale):
    s = scale * (q @ np.swapaxes(k, -1, -2))
    if mask:
        s = s + mask[0]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p @ v, p


def _attention_grad_ref(q, k, v, p, g, scale):
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True)) * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ g


def _fft_r2c_ref(x, axes, norm, forward, onesided):
    full = (np.fft.fftn if forward else np.fft.ifftn)(x, axes=axes, norm=norm)
    if onesided:
        full = np.take(full, np.arange(x.shape[axes[-1]] // 2 + 1), axis=axes[-1])
    return full


# ---- results ----------------------------------------------------------------------------------------

class OpResult:
    """One op on one device: status PASS / FAIL / SKIP, what ran, what failed, what was skipped."""

    def __init__(self, op, device):
        self.op, self.device = op, device
        self.checks = 0        # comparisons made (values, gradients, statistics)
        self.samples = 0       # (dtype, sample) pairs run
        self.dtypes = []
        self.failures = []
        self.skipped = []      # reasons
        self.notes = []
        self.seconds = 0.0

    @property
    def status(self):
        if self.failures:
            return "FAIL"
        return "PASS" if self.checks else "SKIP"

    def format(self, verbose=False):
        head = "{:<4} {} on {}: {} checks, {} samples, dtypes {} ({:.2f}s)".format(
            self.status, self.op, self.device, self.checks, self.samples, ",".join(self.dtypes) or "-",
            self.seconds)
        lines = [head]
        lines += ["       " + f for f in self.failures]
        if verbose or self.status == "SKIP":
            lines += ["       skipped: " + s for s in self.skipped]
            lines += ["       note: " + n for n in self.notes]
        return "\n".join(lines)


class Report(ReportBase):
    def __init__(self, device):
        super().__init__()
        self.device = device

    def format(self, verbose=False):
        lines = [r.format(verbose) for r in self.results if verbose or r.status != "PASS"]
        c = self.counts()
        lines.append("{}: {} ops passed, {} failed, {} skipped; {} samples, {} checks in {:.1f}s".format(
            self.device, c["PASS"], c["FAIL"], c["SKIP"], sum(r.samples for r in self.results),
            sum(r.checks for r in self.results), self.seconds))
        return "\n".join(lines) + "\n"


# ---- inputs -----------------------------------------------------------------------------------------

def _np_dtype(dtype):
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


def _draw_real(rng, spec, dtype, n):
    """n float64 values for one input (integers where the dtype or the kind asks for them)."""
    kind, lo, hi = spec["kind"], spec["lo"], spec["hi"]
    integral = dtype in _INTS or kind in ("integer", "unique")
    if dtype in _INTS:
        info = np.iinfo(dtype)
        lo = min(max(lo, float(info.min)), float(info.max))  # a range beyond the dtype clips to its bounds
        hi = max(min(hi, float(info.max)), float(info.min))
    if kind == "unique":
        pool = np.arange(math.ceil(lo), math.floor(hi) + 1)
        if n > len(pool):
            raise ValueError("sample asks for {} distinct values from [{}, {}]".format(n, lo, hi))
        return rng.permutation(pool)[:n].astype(np.float64)
    if integral:
        v = rng.integers(math.ceil(lo), math.floor(hi) + 1, size=n).astype(np.float64)
    elif kind == "halves":
        v = rng.integers(math.ceil(2 * lo), math.floor(2 * hi) + 1, size=n) / 2.0
    else:
        v = rng.uniform(lo, hi, size=n)
    if kind == "nonzero":
        for _ in range(100):
            bad = (v == 0) if integral else (np.abs(v) < 0.25)
            if not bad.any():
                break
            v[bad] = (rng.integers(math.ceil(lo), math.floor(hi) + 1, size=int(bad.sum())) if integral
                      else rng.uniform(lo, hi, size=int(bad.sum())))
    return v


def _draw(rng, spec, dtype, shape):
    """The logical values of one input, as a numpy array of dtype's host type (bfloat16: float32)."""
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        v = rng.integers(0, 2, size=n).astype(bool)
        if spec["zeros"]:
            v[rng.random(n) < 0.25] = False
        return v.reshape(shape)
    v = _draw_real(rng, spec, dtype, n)
    if dtype.startswith("complex"):
        v = v + 1j * _draw_real(rng, spec, "float64", n)
    if spec["zeros"]:
        v[rng.random(n) < 0.25] = 0
    if spec["specials"] and (dtype in _FLOATS or dtype.startswith("complex")):
        hit = rng.random(n) < 0.2
        v[hit] = rng.choice([np.nan, np.inf, -np.inf], size=int(hit.sum()))
    v = v.reshape(shape)
    if spec["kind"] in ("spd", "triangular") and len(shape) >= 2 and shape[-1]:
        k = shape[-1]
        if spec["kind"] == "spd":
            v = v @ np.swapaxes(v, -1, -2) + k * np.eye(k)
        else:
            v = np.triu(v) + k * np.eye(k)
    return _quantize(v, dtype)


def _quantize(v, dtype):
    if dtype == "bfloat16":  # the core's rounding: through a CPU cast and back
        t = oar.to_tensor(np.asarray(v, np.float32), place="cpu").astype("bfloat16")
        return _host(t)
    return np.asarray(v).astype(_np_dtype(dtype))


def _host(t):
    """A tensor's values as numpy (bfloat16 as float32)."""
    shape = tuple(t.shape)
    if t.dtype == oar.bfloat16:
        t = t.cpu().astype("float32")
    return np.asarray(t.numpy()).reshape(shape)


def _tensor(a, dtype, place):
    """A contiguous tensor of `dtype` on `place` holding a (host values of that dtype)."""
    if dtype == "bfloat16":
        t = oar.to_tensor(np.array(a, np.float32, order="C"), place="cpu").astype("bfloat16")
        return t if place == "cpu" else t._to_place(place)
    return oar.to_tensor(np.array(a, _np_dtype(dtype), order="C"), place=place)


def _view(spec, a, base, dtype, place):
    """The input tensor on `place` made as the sample's view; a holds its logical values and base
    (kExpand) the values of the expanded base."""
    view = spec["view"]
    if view == "transpose":
        perm = list(range(a.ndim))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        return _C._transpose(_tensor(np.swapaxes(a, -1, -2), dtype, place), perm)
    if view == "flip":
        return _tensor(a[::-1], dtype, place)[::-1]
    if view == "expand":
        return _C._expand(_tensor(base, dtype, place), list(a.shape))
    return _tensor(a, dtype, place)


def _what(op, sample, dtype):
    return "{}[{}] {} inputs {}".format(op, sample["name"], dtype, [tuple(i["shape"]) for i in sample["inputs"]])


class _Case:
    """One sample built for one dtype: the logical input arrays, their dtypes and the attributes."""

    def __init__(self, op, schema, sample, dtype, rng):
        self.op, self.schema, self.sample, self.dtype = op, schema, sample, dtype
        self.arrays, self.bases, self.dtypes = [], [], []
        for spec in sample["inputs"]:
            d = spec["dtype"] or dtype
            if spec["view"] == "expand":
                base = _draw(rng, spec, d, tuple(spec["expand_from"]))
                a = np.broadcast_to(base, tuple(spec["shape"])).copy()
            else:
                base, a = None, _draw(rng, spec, d, tuple(spec["shape"]))
            self.arrays.append(a)
            self.bases.append(base)
            self.dtypes.append(d)
        self.attrs = dict(sample["attrs"])
        for k, f in _DATA_ATTRS.get(op, {}).items():
            self.attrs[k] = f(self.arrays)
        if schema["dispatch_input"] < 0:
            self.attrs["dtype"] = dtype
        self.what = _what(op, sample, dtype)

    def follows(self, k):
        return self.sample["inputs"][k]["dtype"] is None

    def inputs(self, place, views=True, dtype=None):
        """Tensors on place: the sample's views when `views`, else contiguous; dtype replaces the
        dtype under test (the upcast oracle)."""
        out = []
        for k, (spec, a, base, d) in enumerate(zip(self.sample["inputs"], self.arrays, self.bases, self.dtypes)):
            # The oracle runs every floating input wider: those following the dtype under test, and fixed
            # float32 ones (statistics, optimizer scalars) that go with it.
            if dtype is not None and (self.follows(k) or (d in _FLOATS and dtype == "float64")):
                d = dtype
                a = a.astype(_np_dtype(d))
                base = None if base is None else base.astype(_np_dtype(d))
            out.append(_view(spec, a, base, d, place) if views else _tensor(a, d, place))
        return out

    def run(self, inputs, place, dtype=None):
        """Runs the op; returns its outputs and the inputs it writes into, as tensors."""
        attrs = dict(self.attrs)
        if dtype is not None and "dtype" in attrs and self.schema["dispatch_input"] < 0:
            attrs["dtype"] = dtype
        op = _C.Op(self.op)
        if self.schema["variadic"]:
            res = op(inputs, **attrs)
        elif not inputs:
            res = op(place=place, **attrs)
        else:
            res = op(*inputs, **attrs)
        outs = list(res) if isinstance(res, (tuple, list)) else ([] if res is None else [res])
        return outs + [inputs[k] for k in self.sample["written"]]


# ---- comparisons ------------------------------------------------------------------------------------

def _compare(got, want, dtype, what, tol=1.0):
    """got (the result under test) against want (the reference, maybe in a wider dtype)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError("{}: shape {} != reference {}".format(what, got.shape, want.shape))
    if got.dtype.kind in "fc" and dtype in _TOL:
        rtol, atol = _TOL[dtype]
        rtol, atol = rtol * tol, atol * tol
        if "c" in (got.dtype.kind, want.dtype.kind):  # real and imaginary parts, each on its own (inf)
            g = np.stack([got.real, got.imag]).astype(np.float64)
            w = np.stack([np.real(want), np.imag(want)]).astype(np.float64)
            got, want = g, w
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        scale = max(1.0, float(np.max(np.abs(w[finite])))) if finite.any() else 1.0
        ok = np.isclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)
            first = tuple(int(i) for i in bad[0])
            raise AssertionError("{}: {} of {} elements differ (rtol {:g}, atol {:g}); first at {}: got {!r}, "
                                 "expected {!r}".format(what, len(bad), w.size, rtol, atol * scale, first,
                                                        got[first].item(), want[first].item()))
        return
    if got.dtype.kind in "iub" and want.dtype.kind in "iub" and want.dtype != got.dtype:
        want = want.astype(got.dtype)  # a wider oracle wraps back as the dtype does
    same = (got == want) | ((got != got) & (want != want)) if got.dtype.kind in "fc" else (got == want)
    if not np.all(same):
        bad = np.argwhere(~np.asarray(same))
        first = tuple(int(i) for i in bad[0]) if bad.size else ()
        raise AssertionError("{}: {} of {} elements differ; first at {}: got {!r}, expected {!r}".format(
            what, len(bad), want.size, first, got[first].item(), want[first].item()))


def _result_arrays(op, tensors):
    arrays = [_host(t) for t in tensors]
    canon = _CANONICAL.get(op)
    if canon is not None:
        n = len(_C._kit_op_schema(op)["outputs"])
        arrays = [np.asarray(a, np.float64) for a in canon(arrays[:n])] + arrays[n:]
    return arrays


def _compare_all(case, got, want, dtype, what):
    if len(got) != len(want):
        raise AssertionError("{}: {} results, reference has {}".format(what, len(got), len(want)))
    for j, (g, w) in enumerate(zip(got, want)):
        if g.dtype.kind in "fc" and w.dtype.kind in "iub":
            w = w.astype(g.dtype)
        _compare(g, w, dtype if g.dtype.kind in "fc" else str(g.dtype), "{} result {}".format(what, j),
                 case.sample["tol"])


def _check_random(case, got, want_meta, what):
    """Random numbers: shape/dtype as the CPU's, values in range, mean near the declared one."""
    s = case.sample
    for j, (g, (shape, dt)) in enumerate(zip(got, want_meta)):
        if g.shape != shape or str(g.dtype) != dt:
            raise AssertionError("{} result {}: {} {}, CPU gives {} {}".format(what, j, g.dtype, g.shape, dt, shape))
    a = np.asarray(got[0], np.float64)
    if a.size == 0:
        return
    if not np.all((a >= s["out_lo"]) & (a <= s["out_hi"])):
        bad = a[~((a >= s["out_lo"]) & (a <= s["out_hi"]))]
        raise AssertionError("{}: {} values outside [{}, {}], e.g. {!r}".format(what, bad.size, s["out_lo"],
                                                                              s["out_hi"], bad[0]))
    if math.isfinite(s["out_mean"]):
        tol = 6 * s["out_std"] / math.sqrt(a.size) + _TOL.get(case.dtype, (0, 1e-9))[1] * max(1, abs(s["out_mean"]))
        if abs(a.mean() - s["out_mean"]) > tol + 1e-9:
            raise AssertionError("{}: mean {:.4g}, expected {:.4g} +- {:.2g} ({})".format(
                what, a.mean(), s["out_mean"], tol, s["reason"]))


# ---- gradients --------------------------------------------------------------------------------------

def _grad_inputs(case):
    """Indices of the inputs a gradient check differentiates: those following the float dtype."""
    return [k for k in range(len(case.arrays)) if case.follows(k) and case.arrays[k].size]


def _weights(case, outs, rng):
    """Random weights w for sum(out * w) over the float results, complex ones for complex results (the
    loss is then the real part, Re(sum(out * w))); None for the others."""
    ws = []
    for o in outs:
        if not o.size or o.dtype not in (oar.float32, oar.float64, oar.complex64, oar.complex128):
            ws.append(None)
            continue
        w = rng.uniform(0.5, 1.5, size=tuple(o.shape))
        if o.dtype in (oar.complex64, oar.complex128):
            w = w + 1j * rng.uniform(-1, 1, size=tuple(o.shape))
        ws.append(w)
    return ws


def _wide(dtype):
    """The dtype finite differences run in: complex128 for complex dtypes, float64 otherwise."""
    return "complex128" if dtype.startswith("complex") else "float64"


def _analytic(case, place, dtype, ws):
    xs = case.inputs(place, views=False, dtype=dtype)
    diff = _grad_inputs(case)
    for k in diff:
        xs[k].stop_gradient = False
    outs = case.run(xs, place, dtype)
    parts = [(o, w) for o, w in zip(outs, ws) if w is not None and not o.stop_gradient]
    if not parts:
        return None
    loss = None
    for o, w in parts:
        term = (o * oar.to_tensor(w, place=place).astype(o.dtype)).sum()
        if term.dtype in (oar.complex64, oar.complex128):
            term = oar.real(term)  # a real loss: Paddle's convention gives dL/dx + i dL/dy for complex inputs
        loss = term if loss is None else loss + term
    try:
        grads = oar.grad([loss], [xs[k] for k in diff], allow_unused=True)
    except NotImplementedError:  # the rule says, with a clear error, that it does not cover this case
        return None
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    return [np.zeros(case.arrays[k].shape) if g is None else _host(g).astype(wide) for k, g in zip(diff, grads)]


def _finite_difference(case, ws, rng, max_points=12, eps=1e-6):
    """Central differences of Re(sum(out * w)) in float64 (complex128) on the CPU, at up to max_points
    elements per input; returns [(input index, flat positions, values)]. A complex input is perturbed
    along its real and its imaginary part, giving dL/dx + i dL/dy (Paddle's convention)."""
    wide = _wide(case.dtype)

    def f(arrays):
        xs = [_tensor(a, wide if case.follows(k) else "float64" if case.dtypes[k] in _FLOATS else case.dtypes[k],
                      "cpu") for k, a in enumerate(arrays)]
        with oar.no_grad():
            outs = case.run(xs, "cpu", wide)
        return sum(float(np.sum(_host(o) * w).real) for o, w in zip(outs, ws) if w is not None)

    base = [a.astype(wide) if case.follows(k) else a for k, a in enumerate(case.arrays)]
    out = []
    for k in _grad_inputs(case):
        n = base[k].size
        pos = rng.choice(n, size=min(n, max_points), replace=False)
        vals = []
        for p in pos:
            h = eps * max(1.0, abs(base[k].flat[p]))
            d = 0
            for step in ((1, 1j) if wide == "complex128" else (1,)):
                plus = [a.copy() for a in base]
                minus = [a.copy() for a in base]
                plus[k].flat[p] += step * h
                minus[k].flat[p] -= step * h
                d = d + step * (f(plus) - f(minus)) / (2 * h)
            vals.append(d)
        out.append((k, pos, np.array(vals)))
    return out


# ---- one op -----------------------------------------------------------------------------------------

def _kernels(device_type):
    return {op: list(dts) for op, dts in _C.kernels_of(device_type)}


def check_op(op, device="cpu", dtypes=None, grad=True, seed=0, kernels=None, cpu_kernels=None, extra_samples=()):
    """Runs one op's samples (and `extra_samples`, dicts as _C._op_samples gives) on `device` for
    `dtypes` (default: every dtype the device registers a kernel for) and returns an OpResult.
    kernels / cpu_kernels: {op: [dtype]} of the device type and of the CPU, when the caller has them."""
    t0 = time.perf_counter()
    res = OpResult(op, device)
    device_type = device.split(":")[0]
    on_cpu = device_type == "cpu"
    try:
        samples = list(_C._op_samples(op)) + list(extra_samples)
        schema = _C._kit_op_schema(op)
    except Exception as e:  # noqa: BLE001
        res.failures.append("{}: not an op of this core: {}".format(op, e))
        return res
    if op in EXCEPTIONS:
        res.skipped.append(EXCEPTIONS[op])
        return res
    if not samples:
        res.failures.append("{}: declares no samples (add them in its family's register_*_samples, "
                            "docs/ops.md)".format(op))
        return res
    kernels = _kernels(device_type) if kernels is None else kernels
    cpu_kernels = (kernels if on_cpu else _kernels("cpu")) if cpu_kernels is None else cpu_kernels
    fallback = False
    if dtypes is None:
        dtypes = kernels.get(op)
        if not dtypes:
            cpu_dts = cpu_kernels.get(op, [])
            if not cpu_dts:
                res.skipped.append("no kernel on {} or the CPU".format(device_type))
                return res
            dtypes = ["float32" if "float32" in cpu_dts else cpu_dts[0]]
            fallback = not on_cpu
            res.notes.append("no kernel on {}: run in {} through the CPU fallback".format(device_type, dtypes[0]))
    res.dtypes = list(dtypes)
    for dtype in dtypes:
        for i, sample in enumerate(samples):
            if sample["dtypes"] is not None and dtype not in sample["dtypes"]:
                continue
            rng = np.random.default_rng([seed, i, sum(map(ord, op)), sum(map(ord, dtype))])
            try:
                case = _Case(op, schema, sample, dtype, rng)
                res.samples += 1
                res.checks += _check_case(case, device, on_cpu, fallback, rng)
                if grad and sample["smooth"] and sample["check"] == "values" and not sample["written"]:
                    res.checks += _check_grad(case, device, on_cpu, dtype, rng)
            except Exception as e:  # noqa: BLE001 -- the report names the sample
                lines = str(e).strip().splitlines() or [repr(e)]
                what = _what(op, sample, dtype)
                msg = lines[0] if lines[0].startswith(what) else "{}: {}".format(what, lines[0])
                res.failures.append("{}: {}{}".format(type(e).__name__, msg, " ..." if len(lines) > 1 else ""))
    if not res.samples:
        res.skipped.append("no sample applies to dtypes {}".format(", ".join(dtypes)))
    res.seconds = time.perf_counter() - t0
    return res


def _check_case(case, device, on_cpu, fallback, rng):
    """Values (or statistics) of one case; returns the number of comparisons."""
    device_type = device.split(":")[0]
    if case.sample["check"] == "random":
        ref = case.run(case.inputs("cpu", views=False), "cpu")
        meta = [(tuple(_host(t).shape), str(_host(t).dtype)) for t in ref]
        got = case.run(case.inputs(device), device)
        for t in got:
            if device_type not in str(t.place):
                raise AssertionError("{}: result on {}, expected {}".format(case.what, t.place, device))
        _check_random(case, [_host(t) for t in got], meta, case.what)
        return 1
    key = (case.op, device_type, case.dtype)
    before = _C.fallback_counts().get(key, 0)
    got_t = case.run(case.inputs(device), device)
    for t in got_t:
        if device_type not in str(t.place):
            raise AssertionError("{}: result on {}, expected {}".format(case.what, t.place, device))
    if not on_cpu and not fallback and _C.fallback_counts().get(key, 0) != before:
        raise AssertionError("{}: ran through the CPU fallback although {} registers this kernel".format(
            case.what, device_type))
    got = _result_arrays(case.op, got_t)
    checks = 0
    if not on_cpu:
        want = _result_arrays(case.op, case.run(case.inputs("cpu", views=False), "cpu"))
        _compare_all(case, got, want, case.dtype, case.what + " vs CPU")
        return 1
    up = _UPCAST.get(case.dtype)
    if up is not None:
        want = _result_arrays(case.op, case.run(case.inputs("cpu", views=False, dtype=up), "cpu", up))
        _compare_all(case, got, want, case.dtype, case.what + " vs " + up)
        checks += 1
    elif any(s["view"] for s in case.sample["inputs"]):
        want = _result_arrays(case.op, case.run(case.inputs("cpu", views=False), "cpu"))
        _compare_all(case, got, want, case.dtype, case.what + " vs contiguous inputs")
        checks += 1
    ref = NUMPY_REFS.get(case.op)
    if ref is not None and case.dtype in ("float64", "int64", "bool", "float32", "int32"):
        with np.errstate(all="ignore"):
            want = np.asarray(ref(*case.arrays, **case.attrs))
        if want.dtype.kind == "f" and got[0].dtype.kind == "f":
            want = want.astype(np.float64)
        _compare(got[0], want, case.dtype, case.what + " vs numpy", case.sample["tol"])
        checks += 1
    if not checks:  # nothing to compare with: the op ran and gave results of the inferred shapes
        checks = 1
    return checks


def _check_grad(case, device, on_cpu, dtype, rng):
    if dtype not in ("float32", "float64", "complex64", "complex128") or not _grad_inputs(case):
        return 0
    if any(s["view"] for s in case.sample["inputs"]):
        return 0
    if on_cpu:
        if dtype not in ("float64", "complex128"):
            return 0
        probe = case.run(case.inputs("cpu", views=False), "cpu")
        ws = _weights(case, probe, rng)
        got = _analytic(case, "cpu", dtype, ws)
        if got is None:
            return 0  # no gradient rule
        for (k, pos, fd), g in zip(_finite_difference(case, ws, rng), got):
            scale = max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
            gv = g.reshape(-1)[pos]
            ok = np.isclose(gv, fd, rtol=1e-4 * case.sample["tol"], atol=1e-5 * scale * case.sample["tol"])
            if not ok.all():
                j = int(np.argmin(ok))
                raise AssertionError("{}: gradient of input {} at flat index {}: {!r}, finite differences give "
                                     "{!r}".format(case.what, k, int(pos[j]), gv[j], fd[j]))
        return 1
    probe = case.run(case.inputs("cpu", views=False), "cpu")
    ws = _weights(case, probe, rng)
    want = _analytic(case, "cpu", dtype, ws)
    if want is None:
        return 0
    got = _analytic(case, device, dtype, ws)
    if got is None:
        raise AssertionError("{}: no gradient on {}, the CPU has one".format(case.what, device))
    for k, (g, w) in zip(_grad_inputs(case), zip(got, want)):
        _compare(g, w, dtype, "{} gradient of input {} vs CPU".format(case.what, k), case.sample["tol"])
    return 1


# ---- the whole suite --------------------------------------------------------------------------------

def _select(names, patterns):
    if not patterns:
        return list(names)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def run(device="cpu", ops=None, verbose=False, out=None, grad=True, seed=0):
    """Runs the suite on one device ("cpu", "sim:0", ...) for the ops matching `ops` (names or
    fnmatch patterns; default all). Prints one line per op that did not pass (every op with verbose)
    to `out` when given; returns a Report."""
    device = str(device)
    if ":" not in device and device != "cpu":
        device += ":0"
    device_type = device.split(":")[0]
    kernels = _kernels(device_type)
    cpu_kernels = kernels if device_type == "cpu" else _kernels("cpu")
    report = Report(device)
    t0 = time.perf_counter()
    for op in _select(_C.op_names(), ops):
        try:
            r = check_op(op, device, grad=grad, seed=seed, kernels=kernels, cpu_kernels=cpu_kernels)
        except Exception:  # noqa: BLE001 -- a bug in the suite itself is reported, not raised
            r = OpResult(op, device)
            r.failures.append(traceback.format_exc())
        report.results.append(r)
        if out is not None and (verbose or r.status != "PASS"):
            out.write(r.format(verbose) + "\n")
            out.flush()
    report.seconds = time.perf_counter() - t0
    return report


def meta_check(device_types=None):
    """Ops with no sample and no EXCEPTIONS entry, and kernels that loaded plugins register for which
    no sample applies. device_types: default every available one. Returns a list of problems."""
    problems = []
    names = set(_C.op_names())
    samples = {op: _C._op_samples(op) for op in names}
    for op in sorted(names):
        if not samples[op] and op not in EXCEPTIONS:
            problems.append("op '{}' has no samples and no EXCEPTIONS entry".format(op))
    if device_types is None:
        device_types = [name for _, name, available, count in _C.device_types() if available and count > 0]
    for dt in device_types:
        for op, dtypes in _C.kernels_of(dt):
            if op in EXCEPTIONS or op not in names:  # not names: a custom op library's op, its author's to test
                continue
            for d in dtypes:
                if not any(s["dtypes"] is None or d in s["dtypes"] for s in samples.get(op, [])):
                    problems.append("kernel {} {} of device type '{}' is exercised by no sample".format(op, d, dt))
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m oar.testing.ops", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", action="append", help="cpu (default), sim:0, gpu:0, ...; repeatable")
    p.add_argument("--op", action="append", help="an op name or fnmatch pattern; repeatable (default: all)")
    p.add_argument("-v", "--verbose", action="store_true", help="a line for every op, with notes")
    p.add_argument("--no-grad", action="store_true", help="skip the gradient checks")
    p.add_argument("--meta", action="store_true", help="only the meta-check (ops and kernels without samples)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ok = True
    problems = meta_check()
    for line in problems:
        print("META " + line)
    ok = not problems
    if args.meta:
        return 0 if ok else 1
    for device in args.device or ["cpu"]:
        report = run(device, args.op, args.verbose, sys.stdout, grad=not args.no_grad, seed=args.seed)
        sys.stdout.write(report.format(verbose=False).splitlines()[-1] + "\n")
        ok = ok and report.ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
