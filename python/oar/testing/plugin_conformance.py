"""The device-plugin conformance suite: checks that a backend plugin behaves as the oar core expects.

    python -m oar.testing.plugin_conformance --device <type> [-k PATTERN] [-v] [--list]

or from Python:

    from oar.testing import plugin_conformance as pc
    report = pc.run("custom_cpu")          # a Report; report.ok, print(report.format())

A plugin author runs it against their device type after installing their plugin (docs/plugin_guide.md).
It is a plain library with a small runner, not a pytest plugin: every check is a function taking a
`Context`; it passes by returning (optionally a note, shown with -v), is skipped by raising
`Skip(reason)` and fails by raising anything else (the message is the report). The exit status is 0
when nothing failed, 1 otherwise (2: the device type is not available at all).

What it checks (names are `group.check[.detail]`; `-k` selects by substring):
- `abi.*`: the plugin's record (loaded, its ABI version inside the window this core accepts);
- `device.*`: enumeration and properties of every device of the type;
- `memory.*`: copies host->device->host for many dtypes, zero-size and large tensors, non-contiguous
  tensors both ways, device->device (the plugin's memcpy with both ends on one device), across devices;
- `streams.*`: ordering on the default stream, across extra streams through events (record / wait /
  query / synchronize / elapsed time), and several Python threads driving devices at once;
- `kernels.<op>.<dtype>`: every kernel the plugin registers, through the op suite (`oar.testing.ops`):
  the op's declared samples (broadcasting, 0-d, empty and non-contiguous / negative-stride / expanded
  views) against the CPU plugin's kernel, and its gradient where the op is differentiable;
- `errors.*`: an out-of-memory request raises MemoryError carrying the plugin's message, a bad device
  index and a failing op raise exceptions naming the device type / op, and the device keeps working;
- `collectives.*`: each collective the plugin implements, and send/recv (a ring), with in-process ranks
  (one thread each), and `collectives.two_processes`: every collective with two ranks in two
  processes that meet through the core's TCP store (oar.distributed.TCPStore; rank 0 hosts it and
  publishes the plugin's unique id);
- `profiler.*`: trace events, when the plugin has a profiler table;
- `lifecycle.process_exit`: a fresh interpreter that used the devices exits cleanly (status 0).

Only the device table's `count` and the memory table's `allocate/free/memcpy` are required
(docs/device_abi.md): a check that needs something a plugin leaves out (stream or event table, memset,
properties, collectives, profiler) is skipped with that reason, after running whatever required part it has.

Private helpers of `oar._C` (`_kit_*`, python/src/plugin_kit.cc) reach what the public API does not
expose yet: op schemas, extra streams and events, raw memset/copy, collectives and profiling.
"""
import argparse
import fnmatch
import os
import sys
import threading
import time
import traceback

import numpy as np

import oar
from oar import _C

from ._report import ReportBase

__all__ = ["Skip", "Context", "Result", "Report", "run", "checks", "main", "KERNEL_RECIPES", "KERNEL_EXCEPTIONS"]


class Skip(Exception):
    """Raised by a check that does not apply; the message says why."""


# What an optional table's absence is called in a skip reason.
_OPTIONAL_TABLES = {"stream": "streams", "event": "events", "profiler": "profilers", "collective": "collectives"}


# ---- the context every check gets ------------------------------------------------------------------

class Context:
    """What the checks know about the device type under test."""

    def __init__(self, device_type, seed=0, large_mib=64):
        self.device_type = device_type
        self.rng = np.random.default_rng(seed)
        self.large_mib = large_mib
        types = {name: (available, count) for _, name, available, count in _C.device_types()}
        if device_type not in types or not types[device_type][0] or types[device_type][1] < 1:
            skipped = ["{}: {}".format(r.path, r.reason) for r in _C.plugin_records()
                       if r.device_type == device_type and not r.loaded]
            raise ValueError("device type '{}' is not available (available: {}); {}".format(
                device_type, sorted(n for n, (a, _) in types.items() if a),
                "its plugin was skipped: " + "; ".join(skipped) if skipped else
                "is its plugin installed? `python -m oar.utils.doctor` lists every candidate plugin"))
        self.count = types[device_type][1]
        # The runtime's own names ("cpu" for the host, "sim:0", ...): results are compared against them.
        self.places = [_C.device_properties("{}:{}".format(device_type, i))["place"] for i in range(self.count)]
        self.place = self.places[0]
        self.record = next(r for r in _C.plugin_records() if r.loaded and r.device_type == device_type)
        self.plugin = self.record.name
        self.kernels = {op: list(dtypes) for op, dtypes in _C.kernels_of(device_type)}
        # {table: {function, ...}}: what the plugin implements (non-NULL entries of its tables).
        self.functions = {table: set(fns) for table, fns in _C._kit_functions_of(device_type).items()}

    def lacks(self, *needs):
        """Why a check cannot run on this plugin, or None. `needs` are optional tables ("stream") or
        functions ("memory.memset", "stream.wait_event"); the ABI requires only device.count and
        memory.allocate/free/memcpy (docs/device_abi.md), so a plugin may leave the rest out."""
        for need in needs:
            table, _, fn = need.partition(".")
            have = self.functions.get(table, set())
            if not have:
                return "the plugin has no {} table; {} are optional (docs/device_abi.md)".format(
                    table, _OPTIONAL_TABLES.get(table, table + " functions"))
            if fn and fn not in have:
                return "the plugin's {} table has no {}; it is optional (docs/device_abi.md)".format(table, fn)
        return None

    def need(self, *needs):
        """Raises Skip with the reason when the plugin lacks one of `needs` (see `lacks`)."""
        why = self.lacks(*needs)
        if why:
            raise Skip(why)

    def random(self, shape, dtype, low=-2.0, high=2.0):
        """A numpy array of `dtype` with values in [low, high) (integers: rounded; bool: random)."""
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            return self.rng.integers(0, 2, size=shape).astype(bool)
        if dtype.kind in "iu":
            lo = max(int(np.floor(low)), np.iinfo(dtype).min)
            return self.rng.integers(lo, int(np.ceil(high)) + 1, size=shape).astype(dtype)
        if dtype.kind == "c":
            return (self.rng.uniform(low, high, size=shape) + 1j * self.rng.uniform(low, high, size=shape)).astype(dtype)
        return self.rng.uniform(low, high, size=shape).astype(dtype)


# ---- results and the report -------------------------------------------------------------------------

class Result:
    def __init__(self, name, status, message="", seconds=0.0):
        self.name, self.status, self.message, self.seconds = name, status, message, seconds

    def __repr__(self):
        return "<Result {} {}>".format(self.name, self.status)


class Report(ReportBase):
    def __init__(self, device_type, plugin="", header=""):
        super().__init__()
        self.device_type = device_type
        self.plugin = plugin
        self.header = header

    def format(self, verbose=False):
        lines = [self.header] if self.header else []
        for r in self.results:
            if r.status == "PASS" and not verbose:
                continue
            lines.append("{:<4} {} ({:.2f}s)".format(r.status, r.name, r.seconds))
            if r.message:
                lines += ["       " + line for line in r.message.rstrip().splitlines()]
        c = self.counts()
        lines.append("{} passed, {} failed, {} skipped in {:.1f}s: device type '{}' (plugin {}) {}".format(
            c["PASS"], c["FAIL"], c["SKIP"], self.seconds, self.device_type, self.plugin,
            "CONFORMS" if self.ok else "DOES NOT CONFORM"))
        return "\n".join(lines) + "\n"


# ---- check registry ---------------------------------------------------------------------------------

_CHECKS = []  # (name, fn); kernel checks are generated per device type (see _kernel_checks)


def check(name):
    def deco(fn):
        _CHECKS.append((name, fn))
        return fn
    return deco


def checks(ctx):
    """Every (name, fn) the suite runs for this context, in order."""
    out = []
    for name, fn in _CHECKS:
        out.append((name, fn))
        if name == "memory.statistics":  # kernels after memory, before streams
            out += _kernel_checks(ctx)
    return out


def _selected(name, patterns):
    if not patterns:
        return True
    for p in patterns:
        if any(ch in p for ch in "*?["):
            if fnmatch.fnmatch(name, p):
                return True
        elif p in name:
            return True
    return False


def run(device_type, patterns=None, verbose=False, out=None, seed=0, large_mib=64):
    """Runs the suite on `device_type`; returns a Report. `patterns`: substrings or globs of check names
    (a check runs when any matches). With `out`, each result is printed as it finishes."""
    if isinstance(patterns, str):
        patterns = [patterns]
    ctx = Context(device_type, seed=seed, large_mib=large_mib)
    major, minor, window = _C.abi_version()
    header = ("oar plugin conformance: device type '{}', plugin {} {} ({}), ABI {}.{}; core ABI {}.{} "
              "(accepts minors within +/-{}); {} device(s), {} registered ops".format(
                  device_type, ctx.record.name, ctx.record.version, ctx.record.path, ctx.record.abi_major,
                  ctx.record.abi_minor, major, minor, window, ctx.count, len(ctx.kernels)))
    report = Report(device_type, ctx.plugin, header)
    if out is not None:
        out.write(header + "\n")
    t_all = time.perf_counter()
    for name, fn in checks(ctx):
        if not _selected(name, patterns):
            continue
        t0 = time.perf_counter()
        try:
            note = fn(ctx)
            res = Result(name, "PASS", note if isinstance(note, str) else "")
        except Skip as e:
            res = Result(name, "SKIP", str(e))
        except Exception as e:  # noqa: BLE001 -- every failure is reported, none stops the run
            msg = "{}: {}".format(type(e).__name__, e)
            if verbose:
                msg += "\n" + "".join(traceback.format_tb(e.__traceback__)[-3:])
            res = Result(name, "FAIL", msg)
        res.seconds = time.perf_counter() - t0
        report.results.append(res)
        if out is not None and (verbose or res.status != "PASS"):
            out.write("{:<4} {}{}\n".format(res.status, name, (": " + res.message.splitlines()[0]) if res.message else ""))
            out.flush()
    report.seconds = time.perf_counter() - t_all
    return report


# ---- helpers ----------------------------------------------------------------------------------------

def _to(arr, place):
    return oar.to_tensor(arr, place=place)


def _expect_equal(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError("{}: shape {} != expected {}".format(what, got.shape, want.shape))
    if got.dtype != want.dtype:
        raise AssertionError("{}: dtype {} != expected {}".format(what, got.dtype, want.dtype))
    if not np.array_equal(got, want, equal_nan=got.dtype.kind in "fc"):
        bad = np.argwhere(~((got == want) | ((got != got) & (want != want))) if got.dtype.kind in "fc" else got != want)
        first = tuple(int(i) for i in bad[0]) if len(bad) else ()
        raise AssertionError("{}: {} of {} elements differ; first at {}: got {!r}, expected {!r}".format(
            what, len(bad), want.size, first, got[first].item() if len(bad) else None, want[first].item() if len(bad) else None))


_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12),
        "complex64": (1e-4, 1e-5), "complex128": (1e-10, 1e-12)}


def _expect_close(got, want, dtype, what):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError("{}: shape {} != CPU reference {}".format(what, got.shape, want.shape))
    if dtype not in _TOL or got.dtype.kind not in "fc":
        return _expect_equal(got, want, what)
    rtol, atol = _TOL[dtype]
    g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), want.astype(
        np.complex128 if want.dtype.kind == "c" else np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(w))) if w.size and np.isfinite(w).any() else 1.0)
    ok = np.isclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True)
    if not ok.all():
        bad = np.argwhere(~ok)
        first = tuple(int(i) for i in bad[0])
        raise AssertionError("{}: {} of {} elements differ from the CPU reference (rtol {}, atol {}); first at {}: "
                             "got {!r}, expected {!r}".format(what, len(bad), w.size, rtol, atol * scale, first,
                                                              got[first].item(), want[first].item()))


# ---- abi and devices --------------------------------------------------------------------------------

@check("abi.version")
def check_abi_version(ctx):
    major, minor, window = _C.abi_version()
    r = ctx.record
    assert r.abi_major == major, "plugin {} was built for ABI major {}, the core has {}".format(r.name, r.abi_major, major)
    assert abs(int(r.abi_minor) - minor) <= window, (
        "plugin {} reports ABI {}.{}, outside the core's window {}.{} +/- {}".format(r.name, r.abi_major, r.abi_minor,
                                                                                   major, minor, window))
    assert r.name and r.path.endswith("liboar_plugin_{}.so".format(r.name)), (
        "plugin name '{}' does not match its file {} (must be liboar_plugin_<name>.so)".format(r.name, r.path))
    assert r.num_devices == ctx.count, "record says {} devices, the runtime has {}".format(r.num_devices, ctx.count)
    assert not r.warnings, "the loader warned: " + "; ".join(r.warnings)


_OLDER_CORE_SCRIPT = """
import sys, numpy as np, oar
from oar import _C
t, path = sys.argv[1], sys.argv[2]
if _C.device_count(t) == 0:
    _C.load_plugin(path)
rec = next((r for r in _C.plugin_records() if r.device_type == t and r.path == path), None)
if rec is None or not rec.loaded:
    print("REFUSED", rec.reason if rec is not None else "not found")
    sys.exit(0)
rng = np.random.default_rng(0)
a = rng.uniform(-2, 2, (5, 6)).astype("float32")
b = rng.uniform(-2, 2, (5, 6)).astype("float32")
kernels = dict(_C.kernels_of(t))
# Profiling first: the trace events are what ABI 1.0 lacks.
if _C._kit_has_profiler(t):
    _C._kit_start_profiling()
    x = oar.to_tensor(a, place=t + ":0")
    (x + x).numpy()
    (x * 2.0).numpy()
    _C._kit_stop_profiling()
refs = {"add": lambda: a + b, "multiply": lambda: a * b, "relu": lambda: np.maximum(a, 0),
        "matmul": lambda: a @ b.T}
for p in ["{}:{}".format(t, i) for i in range(_C.device_count(t))]:
    x, y = oar.to_tensor(a, place=p), oar.to_tensor(b, place=p)
    assert np.array_equal(x.numpy(), a), "host->device->host changed the data on " + p
    got = {"add": lambda: x + y, "multiply": lambda: x * y, "relu": lambda: oar.nn.functional.relu(x),
           "matmul": lambda: oar.matmul(x, y, transpose_y=True)}
    for op, ref in refs.items():
        if "float32" in kernels.get(op, ()):
            assert np.allclose(got[op]().numpy(), ref(), rtol=1e-5, atol=1e-5), "{} on {} is wrong".format(op, p)
    try:
        s, e = _C._KitStream(p), _C._KitEvent(p)
    except Exception:  # no stream table: a synchronous device
        s = None
    if s is not None:
        e.record(s)
        e.synchronize()
        s.synchronize()
print("WORKED")
"""


@check("abi.older_core")
def check_older_core(ctx):
    """The minor window runs both ways: a core of an older minor (same major) loads this plugin too. Each such
    minor is emulated in a fresh process (OAR_ABI_EMULATE_CORE_MINOR: the core's tables cut where that minor
    ended, the newer fields NULL); the plugin must load and work there, or refuse in its init with a reason
    (reported as a skip). A crash or a wrong answer fails."""
    import subprocess
    major, minor, window = _C.abi_version()
    older = [m for m in range(max(0, minor - window), minor)]
    if not older:
        raise Skip("the core is ABI {}.{}: there is no older minor of this major".format(major, minor))
    refused = []
    for m in older:
        env = dict(os.environ, OAR_ABI_EMULATE_CORE_MINOR=str(m))
        r = subprocess.run([sys.executable, "-c", _OLDER_CORE_SCRIPT, ctx.device_type, ctx.record.path],
                           capture_output=True, text=True, timeout=120, env=env)
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
        assert r.returncode == 0, "under an ABI {}.{} core the process exited with status {}:\n{}".format(
            major, m, r.returncode, tail)
        if "REFUSED" in r.stdout:
            refused.append("{}.{}: {}".format(major, m, r.stdout.split("REFUSED", 1)[1].strip()))
            continue
        assert "WORKED" in r.stdout, "under an ABI {}.{} core the plugin did not work:\n{}".format(major, m, tail)
    if refused:
        raise Skip("the plugin refuses older cores: " + "; ".join(refused))
    return "works under ABI " + ", ".join("{}.{}".format(major, m) for m in older) + " cores"


@check("device.enumeration")
def check_device_enumeration(ctx):
    assert ctx.count >= 1, "no devices"
    avail = oar.device.get_available_device()
    missing = [p for p in ctx.places if p not in avail]
    assert not missing, "get_available_device() lacks {} (has {})".format(missing, avail)
    assert ctx.device_type in oar.device.get_all_custom_device_type() or ctx.device_type in ("cpu", "gpu")
    assert _C.device_count(ctx.device_type) == ctx.count


@check("device.properties")
def check_device_properties(ctx):
    why = ctx.lacks("device.properties")
    for p in ctx.places:
        props = _C.device_properties(p)
        assert props["place"] == p, props
        assert props["plugin"] == ctx.plugin, "{}: served by plugin {}, expected {}".format(p, props["plugin"], ctx.plugin)
        if not why:
            assert props["name"], "{}: empty device name".format(p)
            assert props["total_memory"] > 0, "{}: total_memory is 0".format(p)
    if why:
        raise Skip("place and serving plugin checked; the device's name and total_memory not: " + why)


# ---- memory and copies ------------------------------------------------------------------------------

_COPY_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
                "complex128"]


@check("memory.host_device_roundtrip")
def check_roundtrip(ctx):
    for dt in _COPY_DTYPES:
        for shape in [(1,), (7,), (3, 5), (2, 3, 4), (1000,), ()]:
            a = ctx.random(shape, dt, -100, 100)
            for p in ctx.places:
                t = _to(a, p)
                assert p in str(t.place), "tensor landed on {}, not {}".format(t.place, p)
                # The reference is the same round trip through the CPU: the suite judges the plugin, not
                # the core's conversions.
                _expect_equal(t.numpy(), _to(a, "cpu").numpy(), "{} {} {} host->device->host".format(p, dt, shape))


@check("memory.zero_size")
def check_zero_size(ctx):
    for shape in [(0,), (3, 0), (0, 4, 2)]:
        a = np.zeros(shape, dtype="float32")
        t = _to(a, ctx.place)
        _expect_equal(t.numpy(), a, "zero-size {}".format(shape))
        if ctx.count > 1:
            _expect_equal(t.to(ctx.places[1]).numpy(), a, "zero-size {} across devices".format(shape))


@check("memory.large")
def check_large(ctx):
    n = ctx.large_mib * (1 << 20) // 4
    a = np.arange(n, dtype=np.int32)
    t = _to(a, ctx.place)
    b = t.numpy()
    if not np.array_equal(b, a):
        bad = np.flatnonzero(b != a)
        raise AssertionError("{} MiB round trip: {} elements differ, first at {}".format(ctx.large_mib, len(bad), bad[0]))


@check("memory.non_contiguous")
def check_non_contiguous(ctx):
    base = ctx.random((6, 8), "float32")
    # host -> device from non-contiguous numpy views
    for what, view in [("transposed", base.T), ("strided", base[::2, 1::3]), ("fortran", np.asfortranarray(base))]:
        _expect_equal(_to(view, ctx.place).numpy(), np.ascontiguousarray(view), "host {} view -> device".format(what))
    # device views -> host
    t = _to(base, ctx.place)
    for what, view, want in [("transpose", t.T, base.T), ("column slice", t[:, 2:5], base[:, 2:5]),
                             ("step slice", t[1::2, ::3], base[1::2, ::3]), ("row", t[3], base[3])]:
        _expect_equal(view.numpy(), np.ascontiguousarray(want), "device {} -> host".format(what))
        if ctx.count > 1:
            _expect_equal(view.to(ctx.places[1]).numpy(), np.ascontiguousarray(want),
                          "device {} -> other device".format(what))


@check("memory.device_to_device")
def check_device_to_device(ctx):
    no_memset = ctx.lacks("memory.memset")
    for p in ctx.places:
        for n in (1, 13, 4096, 1 << 20):
            a = ctx.random((n,), "float32")
            src = _to(a, p)
            dst = _to(np.zeros(n, dtype="float32"), p)
            _C._kit_copy(dst, src)
            _expect_equal(dst.numpy(), a, "{} device->device memcpy of {} floats".format(p, n))
            if not no_memset:
                _C._kit_memset(dst, 0)
                _expect_equal(dst.numpy(), np.zeros(n, dtype="float32"), "{} memset of {} floats".format(p, n))
    if no_memset:
        raise Skip("device->device memcpy checked; memset not: " + no_memset)


@check("memory.across_devices")
def check_across_devices(ctx):
    if ctx.count < 2:
        raise Skip("one device only")
    for dt in ("float32", "int64", "float16"):
        a = ctx.random((33, 17), dt)
        for src in ctx.places:
            for dst in ctx.places:
                if src != dst:
                    _expect_equal(_to(a, src).to(dst).numpy(), a, "{} {} -> {}".format(dt, src, dst))


@check("memory.statistics")
def check_memory_statistics(ctx):
    before = oar.device.memory_allocated(ctx.place)
    t = _to(np.zeros(1 << 18, dtype="float32"), ctx.place)
    during = oar.device.memory_allocated(ctx.place)
    assert during >= before + (1 << 18) * 4, "memory_allocated did not grow by the tensor's bytes ({} -> {})".format(
        before, during)
    del t


# ---- streams and events -----------------------------------------------------------------------------

@check("streams.default_stream_order")
def check_default_stream_order(ctx):
    """A long chain of dependent ops on the default stream, read once at the end: every op must see its
    predecessor's result, and the read must wait for all of them."""
    for p in ctx.places:
        a = ctx.random((257,), "float32", -3, 3).round()
        x = _to(a, p)
        one = _to(np.ones(257, dtype="float32"), p)
        want = a.copy()
        for _ in range(100):
            x = x + one
            want = want + 1
        _expect_equal(x.numpy(), want, "{}: 100 chained adds".format(p))


# What the checks on extra streams use (the core's Stream/Event objects and raw memset on a stream).
_EXTRA_STREAMS = ("stream.create", "stream.synchronize", "memory.memset")
_STREAMS_AND_EVENTS = _EXTRA_STREAMS + ("stream.wait_event", "stream.query", "event.create", "event.record",
                                        "event.synchronize", "event.query")


@check("streams.events_across_streams")
def check_events_across_streams(ctx):
    """Producer stream writes, records an event; consumer stream waits for it and copies. Repeated with
    large buffers so that a wait that does not wait shows up as stale values."""
    ctx.need(*_STREAMS_AND_EVENTS)
    n = 1 << 22
    for p in ctx.places:
        s1, s2 = _C._KitStream(p), _C._KitStream(p)
        a = _to(np.zeros(n, dtype="int32"), p)
        outs = []
        for k in range(1, 6):
            b = _to(np.zeros(n, dtype="int32"), p)
            ev = _C._KitEvent(p)
            _C._kit_memset(a, k, s1)  # every byte k
            ev.record(s1)
            s2.wait(ev)
            _C._kit_copy(b, a, s2)
            done = _C._KitEvent(p)
            done.record(s2)
            s1.wait(done)  # the next memset must not overwrite a before s2 copied it
            outs.append((k, b))
        s2.synchronize()
        s1.synchronize()
        for k, b in outs:
            want = np.full(n, int.from_bytes(bytes([k]) * 4, "little"), dtype="int32")
            _expect_equal(b.numpy(), want, "{}: copy {} ordered after its producer through an event".format(p, k))


@check("streams.event_query_sync_timing")
def check_event_query_sync_timing(ctx):
    ctx.need(*_STREAMS_AND_EVENTS + ("event.elapsed_ms",))
    p = ctx.place
    s = _C._KitStream(p)
    buf = _to(np.zeros(1 << 22, dtype="float32"), p)
    start, end = _C._KitEvent(p), _C._KitEvent(p)
    start.record(s)
    for v in range(8):
        _C._kit_memset(buf, v, s)
    end.record(s)
    end.synchronize()
    assert end.query(), "event.query() is False after event.synchronize()"
    assert start.query(), "an earlier event is not complete after a later one synchronized"
    ms = start.elapsed_ms(end)
    assert ms >= 0, "elapsed_ms {} < 0".format(ms)
    s.synchronize()
    assert s.query(), "stream.query() is False after stream.synchronize()"
    never = _C._KitEvent(p)
    assert never.query(), "an event never recorded must count as complete"


@check("streams.host_threads")
def check_host_threads(ctx):
    """Several Python threads drive the devices at once (default streams and extra streams); each checks
    its own results. Without a stream table only the default streams are driven (and the check says so)."""
    errors = []
    no_streams = ctx.lacks(*_EXTRA_STREAMS)

    def worker(i):
        try:
            p = ctx.places[i % ctx.count]
            rng = np.random.default_rng(100 + i)
            a = rng.integers(-4, 5, size=(64, 33)).astype("float32")
            x = _to(a, p)
            want = a.copy()
            for _ in range(30):
                x = x + x
                want = want + want
            _expect_equal(x.numpy(), want, "thread {} on {}".format(i, p))
            if no_streams:
                return
            s = _C._KitStream(p)
            buf = _to(np.zeros(4096, dtype="uint8"), p)
            for v in range(20):
                _C._kit_memset(buf, (i * 20 + v) % 251, s)
            s.synchronize()
            _expect_equal(buf.numpy(), np.full(4096, (i * 20 + 19) % 251, dtype="uint8"),
                          "thread {}: last memset on its own stream".format(i))
        except Exception as e:  # noqa: BLE001
            errors.append("thread {}: {}: {}".format(i, type(e).__name__, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, "\n".join(errors)
    if no_streams:
        raise Skip("four threads on the default streams checked; on streams of their own not: " + no_streams)


@check("streams.graph_capture")
def check_graph_capture(ctx):
    """ABI 1.3 (optional): work on a capturing stream is recorded, not run; each replay reruns it on the
    inputs' current contents; a host read during the capture is refused and leaves the capture usable."""
    ctx.need("stream.begin_capture", "stream.end_capture", "stream.graph_launch", "stream.graph_destroy")
    p = ctx.places[0]
    if not _C.has_kernel("add", p, "float32"):
        raise Skip("the plugin has no float32 add kernel to capture (a CPU fallback cannot be captured)")
    a = ctx.random((129,), "float32", -3, 3).round()
    b = ctx.random((129,), "float32", -3, 3).round()
    x, y = _to(a, p), _to(b, p)
    g = _C._DeviceGraph(p)
    g.capture_begin()
    try:
        z = x + y
        try:
            z.numpy()
            raise AssertionError("a host read of a capturing device's tensor was not refused")
        except RuntimeError as e:
            assert "captures a graph" in str(e), str(e)
        z = z + y  # the capture is still usable
    finally:
        g.capture_end()
    for k in range(3):
        g.replay()
        _expect_equal(z.numpy(), a + 2 * b, "{}: replay {} of (x + y) + y".format(p, k))
        a = a + 1
        x.set_value(a)  # new contents, outside the capture
    g.reset()


# ---- kernels ----------------------------------------------------------------------------------------
# Every kernel the plugin registers runs through the op suite (oar.testing.ops): the samples declared
# next to each op's definition (framework/src/op_defs.cc, ops_<family>.cc), against the CPU, with views
# made on the device and the gradient where the op has one. A check is `kernels.<op>.<dtype>`.

# Deprecated: the core's recipes moved into the C++ sample declarations (oar/core/op_sample.h). Entries
# a plugin author adds still run, as extra samples of their op: op -> [([input spec], {attrs})], an
# input spec being (shape, low, high) or (shape, low, high, "options") with comma-separated options "T"
# (a transposed device view), "spd", "tri" (well-conditioned matrices) or a dtype name (index inputs).
KERNEL_RECIPES = {}

# Ops whose kernels the suite skips, with the reason (a plugin author's own list; the suite checks
# random ops statistically and factorizations through what they recompose, so the core needs none).
KERNEL_EXCEPTIONS = {}


def _recipe_samples(op_name):
    """KERNEL_RECIPES entries as op-suite samples."""
    out = []
    for i, (specs, attrs) in enumerate(KERNEL_RECIPES.get(op_name, [])):
        inputs = []
        for spec in specs:
            opts = spec[3].split(",") if len(spec) > 3 and spec[3] else []
            kind = "spd" if "spd" in opts else "triangular" if "tri" in opts else "real"
            dtype = next((o for o in opts if o not in ("T", "spd", "tri")), None)
            inputs.append({"shape": list(spec[0]), "kind": kind, "lo": float(spec[1]), "hi": float(spec[2]),
                           "dtype": dtype, "view": "transpose" if "T" in opts else "", "expand_from": [],
                           "specials": False, "zeros": False})
        out.append({"name": "KERNEL_RECIPES[{}]".format(i), "inputs": inputs, "attrs": dict(attrs), "dtypes": None,
                    "smooth": True, "tol": 1.0, "check": "values", "reason": "", "out_lo": -np.inf, "out_hi": np.inf,
                    "out_mean": np.nan, "out_std": np.nan, "written": []})
    return out


def _kernel_checks(ctx):
    out = []
    for op_name in sorted(ctx.kernels):
        for dt in ctx.kernels[op_name]:
            out.append(("kernels.{}.{}".format(op_name, dt), (lambda o, d: lambda c: _check_kernel(c, o, d))(op_name, dt)))
    return out


def _check_kernel(ctx, op_name, dtype):
    from oar.testing import ops as op_suite  # noqa: PLC0415 -- the suite imports this module's siblings

    if op_name in KERNEL_EXCEPTIONS:
        raise Skip(KERNEL_EXCEPTIONS[op_name])
    if op_name not in _C.op_names():
        raise Skip("the core does not know this op")
    r = op_suite.check_op(op_name, ctx.place, dtypes=[dtype], kernels=ctx.kernels,
                          extra_samples=_recipe_samples(op_name))
    if r.status == "FAIL":
        raise AssertionError("\n".join(r.failures))
    if r.status == "SKIP":
        raise Skip("; ".join(r.skipped) or "no sample applies")
    return "{} sample(s), {} check(s) (python -m oar.testing.ops --device {} --op {} -v)".format(
        r.samples, r.checks, ctx.place, op_name)


# ---- errors -----------------------------------------------------------------------------------------

@check("errors.out_of_memory")
def check_out_of_memory(ctx):
    why = ctx.lacks("device.properties")
    if why:
        raise Skip("the device reports no total_memory, so no request is sure to be too large: " + why)
    total = _C.device_properties(ctx.place)["total_memory"]
    n = 2 * total + (1 << 20)
    try:
        _C._kit_allocate(ctx.place, n)
    except MemoryError as e:
        msg = str(e)
        assert "plugin " + ctx.plugin in msg, "the MemoryError does not carry the plugin's message: " + msg
    except Exception as e:  # noqa: BLE001
        raise AssertionError("asking for {} bytes (twice the device's memory) raised {} instead of MemoryError: {}".format(
            n, type(e).__name__, e))
    else:
        raise AssertionError("allocating {} bytes (twice the device's total_memory {}) succeeded".format(n, total))
    # the device still works
    _expect_equal(_to(np.arange(5, dtype="float32"), ctx.place).numpy(), np.arange(5, dtype="float32"),
                  "a copy after the failed allocation")


@check("errors.bad_device_index")
def check_bad_device_index(ctx):
    bad = "{}:{}".format(ctx.device_type, ctx.count)
    try:
        _to(np.ones(3, dtype="float32"), bad)
    except (ValueError, IndexError, RuntimeError) as e:
        assert ctx.device_type in str(e), "the error for {} does not name the device type: {}".format(bad, e)
    else:
        raise AssertionError("placing a tensor on {} (there are {} devices) did not raise".format(bad, ctx.count))


@check("errors.failing_op")
def check_failing_op(ctx):
    """An op that must fail (shapes that do not broadcast) raises a ValueError naming the op; the device's
    stream keeps working afterwards."""
    candidates = [o for o in ("add", "multiply", "matmul") if o in ctx.kernels] or ["add"]
    op = candidates[0]
    dt = ctx.kernels.get(op, ["float32"])[0]
    x = _to(ctx.random((3, 4), dt), ctx.place)
    y = _to(ctx.random((5, 7), dt), ctx.place)
    try:
        _C.Op(op)(x, y)
    except ValueError as e:
        assert op in str(e), "the error does not name the op {}: {}".format(op, e)
    else:
        raise AssertionError("{} of shapes [3, 4] and [5, 7] did not raise".format(op))
    a = ctx.random((3, 4), "float32")
    _expect_equal((_to(a, ctx.place) * 1.0).numpy(), a, "an op after the failed one")


# ---- collectives ------------------------------------------------------------------------------------

def _collective_setup(ctx, kind, min_ranks=1):
    have = _C._kit_collectives_of(ctx.device_type)
    if not have:
        raise Skip("plugin {} registers no collectives (no collective table); collectives are optional "
                   "(docs/device_abi.md)".format(ctx.plugin))
    if kind not in have:
        raise Skip("plugin {} does not implement {}".format(ctx.plugin, kind))
    # In-process ranks, one thread each (collectives.two_processes drives two processes). Ranks share a
    # device only where the plugin says they may (OAR_CAP_SHARED_DEVICE_RANKS): NCCL refuses a second rank
    # on a GPU, and a rank whose comm_init is refused leaves the others waiting in theirs. Otherwise one
    # rank per device; a single device gives a one-rank communicator.
    nr = max(2, min(ctx.count, 4)) if _shared_device_ranks(ctx) else min(ctx.count, 4)
    if nr < min_ranks:
        raise Skip("{} needs {} ranks, one per device ({} does not let ranks share one); {} has {} device(s)".format(
            kind, min_ranks, ctx.plugin, ctx.device_type, ctx.count))
    return nr


def _shared_device_ranks(ctx):
    return bool(_C.device_properties(ctx.place).get("shared_device_ranks"))


def _rank_inputs(ctx, nranks, n):
    return [ctx.rng.integers(-8, 9, size=n).astype("float32") for _ in range(nranks)]


@check("collectives.all_reduce")
def check_all_reduce(ctx):
    nr = _collective_setup(ctx, "all_reduce")
    for n in (1, 1000):
        xs = _rank_inputs(ctx, nr, n)
        for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "all_reduce", xs)):
            _expect_equal(got, np.sum(xs, axis=0), "all_reduce(sum) rank {} of {}, {} elements".format(r, nr, n))


@check("collectives.broadcast")
def check_broadcast(ctx):
    nr = _collective_setup(ctx, "broadcast")
    xs = _rank_inputs(ctx, nr, 100)
    for root in range(nr):
        for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "broadcast", xs, root)):
            _expect_equal(got, xs[root], "broadcast from root {} rank {}".format(root, r))


@check("collectives.reduce")
def check_reduce(ctx):
    nr = _collective_setup(ctx, "reduce")
    xs = _rank_inputs(ctx, nr, 100)
    got = _C._kit_run_collective(ctx.device_type, "reduce", xs, nr - 1)
    _expect_equal(got[nr - 1], np.sum(xs, axis=0), "reduce(sum) at root {}".format(nr - 1))


@check("collectives.all_gather")
def check_all_gather(ctx):
    nr = _collective_setup(ctx, "all_gather")
    xs = _rank_inputs(ctx, nr, 50)
    for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "all_gather", xs)):
        _expect_equal(got, np.concatenate(xs), "all_gather rank {}".format(r))


@check("collectives.reduce_scatter")
def check_reduce_scatter(ctx):
    nr = _collective_setup(ctx, "reduce_scatter")
    xs = _rank_inputs(ctx, nr, 12 * nr)
    total = np.sum(xs, axis=0)
    for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "reduce_scatter", xs)):
        _expect_equal(got, total[r * 12:(r + 1) * 12], "reduce_scatter(sum) rank {}".format(r))


@check("collectives.all_to_all")
def check_all_to_all(ctx):
    nr = _collective_setup(ctx, "all_to_all")
    c = 5
    xs = _rank_inputs(ctx, nr, c * nr)
    for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "all_to_all", xs)):
        _expect_equal(got, np.concatenate([x[r * c:(r + 1) * c] for x in xs]), "all_to_all rank {}".format(r))


@check("collectives.send_recv")
def check_send_recv(ctx):
    nr = _collective_setup(ctx, "send_recv", min_ranks=2)
    for n in (1, 300):
        xs = _rank_inputs(ctx, nr, n)
        for r, got in enumerate(_C._kit_run_collective(ctx.device_type, "send_recv", xs)):
            _expect_equal(got, xs[(r - 1) % nr], "send/recv ring: rank {} receiving {} elements from rank {}".format(
                r, n, (r - 1) % nr))


# Two ranks in two processes. Rank 0 hosts the TCP store on a free port (printed for the parent, which
# then starts rank 1), makes it the store the plugin services use, gets the plugin's unique id and
# publishes it; rank 1 reads it. Both init a communicator and run every collective on deterministic
# inputs, checking the results against numpy themselves; each prints "OK <check>" or "FAIL <check>: why".
_TWO_PROCESS_SCRIPT = """
import json, sys, traceback
import numpy as np
import oar
from oar import _C
t, path, rank, port, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
kinds = json.loads(sys.argv[6])
if _C.device_count(t) == 0:  # the parent loaded it explicitly (load_plugin): do the same
    _C.load_plugin(path)
store = oar.distributed.TCPStore("127.0.0.1", port, rank == 0, 2, timeout=timeout, wait_for_workers=False)
if rank == 0:
    print("PORT", store.port, flush=True)
_C._store_set_global(store)  # the plugin's store_set / store_get now reach the other process

def say(*a):
    print(*a, flush=True)

def inputs(n):  # both ranks' inputs, the same in both processes
    return [np.random.default_rng(1000 * r + n).integers(-8, 9, size=n).astype("float32") for r in range(2)]

failed = False
try:
    if rank == 0:
        uid = _C._kit_get_unique_id(t)
        store.set("oar/conformance/unique_id", uid)
    else:
        uid = store.get("oar/conformance/unique_id")
    comm = _C._KitComm(t, rank % _C.device_count(t), 2, rank, uid)
    say("OK comm_init")
except Exception as e:
    say("FAIL comm_init: {}: {}".format(type(e).__name__, e))
    sys.exit(1)

def check(name, kind, n, want, root=0):
    global failed
    if failed:
        return
    try:
        got = comm.run(kind, inputs(n)[rank], root)
        if want is None:
            assert got is None, "a non-root rank got a result"
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
        say("OK", name)
    except Exception as e:
        failed = True  # the peer may be stuck in this collective: stop here
        say("FAIL {}: {}: {}".format(name, type(e).__name__, str(e).strip().replace("\\n", " | ")))

for kind in kinds:
    if kind == "all_reduce":
        for n in (1, 1000):
            check("all_reduce(sum) {} elements".format(n), kind, n, np.sum(inputs(n), axis=0))
    elif kind == "broadcast":
        for root in (0, 1):
            check("broadcast from root {}".format(root), kind, 100, inputs(100)[root], root)
    elif kind == "reduce":
        check("reduce(sum) to root 1", kind, 100, np.sum(inputs(100), axis=0) if rank == 1 else None, 1)
    elif kind == "all_gather":
        check("all_gather", kind, 50, np.concatenate(inputs(50)))
    elif kind == "reduce_scatter":
        check("reduce_scatter(sum)", kind, 24, np.sum(inputs(24), axis=0)[rank * 12:(rank + 1) * 12])
    elif kind == "all_to_all":
        check("all_to_all", kind, 10, np.concatenate([x[rank * 5:(rank + 1) * 5] for x in inputs(10)]))
    elif kind == "send_recv":  # a ring of two: each rank receives the other's input
        check("send/recv", kind, 64, inputs(64)[1 - rank])
if not failed:
    try:
        comm.destroy()
    except Exception as e:
        failed = True
        say("FAIL comm_destroy: {}: {}".format(type(e).__name__, e))
# Rank 0 hosts the store: it leaves last.
store.set("oar/conformance/done/{}".format(rank), b"1")
if rank == 0 and not failed:
    store.wait(["oar/conformance/done/1"])
say("DONE")
sys.exit(1 if failed else 0)
"""


@check("collectives.two_processes")
def check_two_processes(ctx, timeout=60.0):
    """Every collective with two ranks in two processes, bootstrapped through the core's TCP store. A plugin
    whose ranks only meet in process memory fails here (within `timeout` seconds), not hangs."""
    import json
    import os
    import subprocess
    import tempfile
    have = _C._kit_collectives_of(ctx.device_type)
    if not have:
        raise Skip("plugin {} registers no collectives (no collective table); collectives are optional "
                   "(docs/device_abi.md)".format(ctx.plugin))
    if ctx.count < 2 and not _shared_device_ranks(ctx):  # process r uses device r % count
        raise Skip("two processes need two devices, one rank on each ({} does not let ranks share one); {} has {}"
                   .format(ctx.plugin, ctx.device_type, ctx.count))
    env = dict(os.environ)
    for k in ("PADDLE_MASTER", "MASTER_ADDR", "MASTER_PORT"):  # the children set their store explicitly
        env.pop(k, None)
    store_timeout = str(max(5.0, timeout / 2))
    deadline = time.monotonic() + timeout
    procs, logs = [], []

    def start(rank, port):
        log = tempfile.TemporaryFile(mode="w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _TWO_PROCESS_SCRIPT, ctx.device_type, ctx.record.path, str(rank), str(port),
             store_timeout, json.dumps(have)], stdout=log, stderr=subprocess.STDOUT, text=True, env=env))

    def output(rank):
        logs[rank].seek(0)
        return logs[rank].read()

    def tail(rank, lines=6):
        text = output(rank).strip().splitlines() if rank < len(logs) else []
        return "\n".join("  rank {}: {}".format(rank, line) for line in text[-lines:]) or "  rank {}: (no output)".format(rank)

    try:
        start(0, 0)
        port = None
        while port is None and time.monotonic() < deadline and procs[0].poll() is None:
            for line in output(0).split("\n")[:-1]:  # whole lines only: the child may be mid-write
                if line.startswith("PORT ") and line[5:].strip().isdigit():
                    port = int(line[5:])
            time.sleep(0.05)
        if port is None:
            procs[0].kill()
            procs[0].wait()
            raise AssertionError("rank 0 did not start the store:\n" + tail(0))
        start(1, port)
        # Wait for both; once one rank has exited with a failure the other gets a short grace period (it
        # may be stuck in a collective its peer left).
        grace = None
        while any(p.poll() is None for p in procs):
            now = time.monotonic()
            if grace is None and any(p.poll() not in (None, 0) for p in procs):
                grace = now + 5.0
            if now > deadline or (grace is not None and now > grace):
                break
            time.sleep(0.05)
        stuck = [r for r, p in enumerate(procs) if p.poll() is None]
        for r in stuck:
            procs[r].kill()
            procs[r].wait()
        lines = [(r, line) for r in range(2) for line in output(r).splitlines()]
        fails = ["rank {}: {}".format(r, line[5:]) for r, line in lines if line.startswith("FAIL ")]
        passed = sorted({line[3:] for r, line in lines if line.startswith("OK ")})
        if fails or stuck or any(p.returncode != 0 for p in procs):
            msg = []
            if fails:
                msg.append("collectives across two processes failed (a plugin whose ranks only meet inside one "
                           "process cannot pass this check):")
                msg += ["  " + f for f in fails]
            if stuck and not fails:
                msg.append("rank(s) {} did not finish within {:.0f} s: do the plugin's collectives only connect "
                           "ranks inside one process?".format(", ".join(map(str, stuck)), timeout))
            elif stuck:
                msg.append("rank(s) {} were stopped after the failure".format(", ".join(map(str, stuck))))
            if not fails:
                msg += ["output:", tail(0), tail(1)]
            raise AssertionError("\n".join(msg))
        return "two processes: {} passed".format(", ".join(passed))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


# ---- profiler ---------------------------------------------------------------------------------------

@check("profiler.trace_events")
def check_trace_events(ctx):
    if not _C._kit_has_profiler(ctx.device_type):
        raise Skip("plugin {} has no profiler table; profilers are optional (docs/device_abi.md)".format(ctx.plugin))
    _C.device_properties(ctx.place)  # opens the device before profiling starts
    _C._kit_start_profiling()
    try:
        x = _to(np.ones((64, 64), dtype="float32"), ctx.place)
        (x + x).numpy()
    finally:
        events = _C._kit_stop_profiling()
    assert events, "the profiler was started, work ran, and no trace event came back"
    for name, cat, t0, t1, _device, _stream in events:
        assert name and cat, "a trace event without name or category: {!r}".format((name, cat))
        assert t1 >= t0, "trace event {} ends before it starts ({} < {})".format(name, t1, t0)


# ---- lifecycle --------------------------------------------------------------------------------------

_EXIT_SCRIPT = """
import sys, numpy as np, oar
from oar import _C
t, path, streams = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if _C.device_count(t) == 0:  # the parent loaded it explicitly (load_plugin): do the same
    _C.load_plugin(path)
assert _C.device_count(t) > 0, "device type {} not available in a fresh process".format(t)
keep = []
for p in ["{}:{}".format(t, i) for i in range(_C.device_count(t))]:
    x = oar.to_tensor(np.arange(12, dtype="float32").reshape(3, 4), place=p)
    y = (x + x) * x
    if streams:  # an extra stream and event left alive until exit
        s = _C._KitStream(p)
        e = _C._KitEvent(p)
        e.record(s)
        keep += [s, e]
    assert y.numpy()[2, 3] == 242.0
print("USED")
"""


@check("lifecycle.process_exit")
def check_process_exit(ctx):
    """A fresh interpreter that uses every device (tensors, kernels, an extra stream and event left alive)
    must exit with status 0: plugin state torn down in the wrong order at exit (a static destroyed while
    the core still calls in) aborts the process only then. A plugin without stream and event tables is
    checked with tensors and kernels only."""
    import subprocess
    no_streams = ctx.lacks("stream.create", "event.create", "event.record")
    r = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, ctx.device_type, ctx.record.path,
                        "0" if no_streams else "1"], capture_output=True, text=True, timeout=120)
    tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-5:])
    assert "USED" in r.stdout, "the child process could not use {}:\n{}".format(ctx.device_type, tail)
    assert r.returncode == 0, "the process exited with status {} after using {}:\n{}".format(
        r.returncode, ctx.device_type, tail)
    if no_streams:
        return "no extra stream or event was left alive: " + no_streams


# ---- command line -----------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m oar.testing.plugin_conformance",
                                 description="Run oar's device-plugin conformance suite against one device type.")
    ap.add_argument("--device", required=True, help="the device type under test, e.g. custom_cpu")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="run only checks whose name contains this (or matches this glob); repeatable")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing checks too, with tracebacks")
    ap.add_argument("--list", action="store_true", help="list the checks and exit")
    ap.add_argument("--large-mib", type=int, default=64, help="size of the large-copy check (MiB, default 64)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        if args.list:
            ctx = Context(args.device)
            for name, _ in checks(ctx):
                if _selected(name, args.patterns):
                    print(name)
            return 0
        report = run(args.device, args.patterns, verbose=args.verbose, seed=args.seed, large_mib=args.large_mib)
    except ValueError as e:
        sys.stderr.write("plugin_conformance: {}\n".format(e))
        return 2
    sys.stdout.write(report.format(verbose=args.verbose))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
