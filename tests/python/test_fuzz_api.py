"""A bounded fuzzing run over the public Python API (docs/python.md, "Sizes and bad input").

Hypothesis generates hostile arguments: shapes with huge, negative and zero dims, wrong dtypes,
out-of-range axes, NaN/inf, huge and negative numbers, and wrong Python types. The property: a call
either returns or raises ValueError, TypeError, IndexError, MemoryError, NotImplementedError or
RuntimeError with a non-empty message; it never crashes, hangs or raises anything else. One gap is
tolerated for now: a Python wrapper that reads .shape/.ndim/.dtype/.place/.size of a non-tensor argument
it never type-checked raises AttributeError naming that type (no crash; TypeError would be right). A
ZeroDivisionError that names the op (Paddle raises one for celu's alpha == 0) is accepted too.
OAR_FUZZ_SURVEY=1 lists every other disallowed exception instead of stopping at the first.

Each property runs in a child process (this file run as a script), so a crash fails its test with the
input that caused it: the child writes every input to a log before trying it. The run is short and the
same every time by default; OAR_FUZZ_EXAMPLES sets the number of inputs per property (default 120) and
OAR_FUZZ_RANDOM=1 draws new ones (for the long runs).

Sizes stay either tiny (at most 4096 elements) or far beyond any machine (at least 2^40 elements), so
a run never allocates gigabytes: a huge request must be refused before anything is allocated.
"""
import operator
import os
import re
import resource
import subprocess
import sys

import pytest

if __name__ != "__main__":
    pytest.importorskip("hypothesis", reason="hypothesis is not installed (scripts/install_deps.sh installs it)")

# The child's address space is capped as a safety net for the shared machine: a request that slipped
# past the core's size checks fails to allocate instead of swapping.
_AS_LIMIT = 8 << 30
_UNCHECKED_TYPE = re.compile(r"'(?!oar\._C\.Tensor|Tensor)[\w.]+' object has no attribute '(shape|ndim|dtype|place|size)'")
# Paddle's own choice for a few arguments (celu's alpha == 0): ZeroDivisionError, with the op named.
_NAMED_ZERO_DIVISION = re.compile(r"\w+: ")
ALLOWED = (ValueError, TypeError, IndexError, MemoryError, NotImplementedError, RuntimeError)
PROPERTIES = ["creation", "functions", "methods", "indexing"]


# ---- the parent: one child per property ---------------------------------------------------------------
@pytest.mark.parametrize("prop", PROPERTIES)
def test_fuzz(prop, tmp_path):
    log = tmp_path / "inputs.log"
    env = dict(os.environ, OAR_FUZZ_LOG=str(log))
    env.pop("OAR_CALL_STACK_LEVEL", None)
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), prop], capture_output=True, text=True, env=env,
                           timeout=float(os.environ.get("OAR_FUZZ_TIMEOUT", "600")),
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT, _AS_LIMIT)))
    except subprocess.TimeoutExpired:
        pytest.fail("fuzz {}: hung; the last input tried was:\n{}".format(prop, _last_input(log)))
    if p.returncode < 0 or p.returncode > 1:
        pytest.fail("fuzz {}: the child died (exit status {}) on the input:\n{}\nstderr:\n{}".format(
            prop, p.returncode, _last_input(log), p.stderr[-4000:]))
    assert p.returncode == 0, "fuzz {} found a failure:\n{}".format(prop, p.stdout[-6000:] + p.stderr[-6000:])
    assert "inputs tried:" in p.stdout, p.stdout
    print(p.stdout.strip().splitlines()[-1])


def _last_input(log):
    try:
        lines = log.read_text().splitlines()
    except OSError:
        return "(no input was logged)"
    return lines[-1] if lines else "(no input was logged)"


# ---- the child --------------------------------------------------------------------------------------
def _child(prop):
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import oar
    import oar.nn.functional as F

    examples = int(os.environ.get("OAR_FUZZ_EXAMPLES", "120"))
    fd = os.open(os.environ["OAR_FUZZ_LOG"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    count = [0]
    survey = os.environ.get("OAR_FUZZ_SURVEY") == "1"  # list every disallowed exception instead of failing
    survey_seen = set()

    def attempt(what, fn, *args, **kwargs):
        """Calls fn; returns its result, or None after an allowed exception. Anything else propagates."""
        line = "{}(*{!r}, **{!r})".format(what, args, kwargs)
        os.write(fd, (line.replace("\n", " ")[:4000] + "\n").encode())  # before the call: a crash leaves it
        count[0] += 1
        try:
            out = fn(*args, **kwargs)
            touch(out)
            return out
        except ALLOWED as e:
            assert str(e).strip(), "{} raised {} with an empty message".format(line, type(e).__name__)
            return None
        except ZeroDivisionError as e:
            if _NAMED_ZERO_DIVISION.match(str(e)):
                return None
            if not survey:
                raise
            record(what, e, line)
            return None
        except AttributeError as e:
            # Tolerated, as a known gap: a Python wrapper reading .shape/.ndim/.dtype of a non-tensor
            # argument it never type-checked ("'int' object has no attribute 'ndim'"); no crash, and the
            # message names the wrong type. Any other AttributeError is a finding.
            if _UNCHECKED_TYPE.match(str(e)):
                return None
            if not survey:
                raise
            record(what, e, line)
            return None
        except Exception as e:
            if not survey:
                raise
            record(what, e, line)
            return None

    def record(what, e, line):  # survey mode: each distinct disallowed exception once
        key = (what, type(e).__name__, str(e)[:80])
        if key not in survey_seen:
            survey_seen.add(key)
            print("SURVEY", what, type(e).__name__, str(e)[:120], "|", line[:300], flush=True)

    def call_method(x, name, *args):
        out = getattr(x, name)(*args)
        return list(out) if name == "__iter__" else out

    def touch(out, depth=0):
        """Reads every element of a result: a bogus shape or stride would read wild memory here."""
        if isinstance(out, oar.Tensor):
            out.numpy()
        elif isinstance(out, (list, tuple)) and depth < 2:
            for o in out[:8]:
                touch(o, depth + 1)

    common = dict(max_examples=examples, deadline=None, database=None, print_blob=True,
                  derandomize=os.environ.get("OAR_FUZZ_RANDOM") != "1",
                  suppress_health_check=list(HealthCheck))

    # -- building blocks --
    tiny_dim = st.integers(0, 6)
    huge_dim = st.one_of(st.sampled_from([2**40, 2**42 + 1, 2**62, 2**62 + 1, 2**63 - 1]),
                         st.integers(2**40, 2**63 - 1))
    bad_dim = st.one_of(st.integers(-(2**63), -1), st.sampled_from([2**63, 2**64, -(2**64)]))
    tiny_shape = st.lists(tiny_dim, max_size=4)
    huge_shape = st.builds(lambda a, b, i: a[:i] + [b] + a[i:], st.lists(st.integers(1, 6), max_size=3), huge_dim,
                           st.integers(0, 3))
    hostile_shape = st.one_of(
        tiny_shape, huge_shape,
        st.lists(st.one_of(tiny_dim, huge_dim, bad_dim), min_size=1, max_size=5),
        st.lists(st.integers(1, 4), min_size=17, max_size=20),  # beyond 16 dims
        st.sampled_from([None, "3", 3.5, [2.5], [None], [[2]], (), -1, 2**40, [float("nan")], [True]]))
    number = st.one_of(st.integers(-8, 8), st.floats(-10, 10, allow_nan=False),
                       st.sampled_from([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 1e-300,
                                        2**40, -(2**40), 2**62, 2**63 - 1, -(2**63), 2**63, 2**64, -(2**64),
                                        True, False]))
    dtypes = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "int16", "uint8", "bool",
              "complex64", "complex128"]
    dtype = st.one_of(st.sampled_from(dtypes), st.sampled_from([None, "float", "int", "foo", "", 7, -1, 3.5, [],
                                                                 np.float32, np.int64, oar.float32, oar.int64]))
    axis = st.one_of(st.integers(-6, 6), st.sampled_from([None, 2**31, -(2**31), 2**63 - 1, -(2**63), 2**64, 1.5,
                                                          "0", [0, 0], [0, -1], [], [7], (1, 0)]))

    @st.composite
    def tensors(draw, shape=None):
        shape = draw(st.lists(st.integers(0, 5), max_size=4)) if shape is None else shape
        dt = draw(st.sampled_from(dtypes))
        n = int(np.prod(shape)) if shape else 1
        vals = draw(st.lists(st.one_of(st.floats(-4, 4, allow_nan=False),
                                       st.sampled_from([0.0, 1.0, -1.0, float("nan"), float("inf"), -float("inf"),
                                                        1e30, -1e30, 3.0, 255.0])),
                             min_size=n, max_size=n))
        a = np.array(vals, dtype=np.float64).reshape(shape)
        if dt == "bool":
            a = a != 0
        elif dt.startswith("int") or dt == "uint8":
            a = np.nan_to_num(a, nan=0.0, posinf=7.0, neginf=-7.0).clip(0 if dt == "uint8" else -100, 100)
        t = oar.to_tensor(a.astype(np.float32) if dt == "bfloat16" else a, dtype=dt)
        if draw(st.booleans()) and t.ndim >= 2:  # a non-contiguous view
            t = t.transpose(list(range(t.ndim))[::-1])
        return t

    anything = st.one_of(tensors(), number, hostile_shape, dtype, axis, st.none(),
                         st.sampled_from(["mean", "sum", "none", "NCHW", "NHWC", "constant", "reflect", "nearest",
                                          "bilinear", "abc", b"x", {}, object()]),
                         st.lists(tensors(), min_size=1, max_size=3))

    def run(body):
        settings(**common)(body)()
        print("fuzz {}: inputs tried: {}".format(prop, count[0]))

    # -- the properties --
    if prop == "creation":
        creators = {
            "zeros": lambda s, d, n: oar.zeros(s, d), "ones": lambda s, d, n: oar.ones(s, d),
            "full": lambda s, d, n: oar.full(s, n, d), "empty": lambda s, d, n: oar.empty(s, d),
            "rand": lambda s, d, n: oar.rand(s, d), "randn": lambda s, d, n: oar.randn(s, d),
            "uniform": lambda s, d, n: oar.uniform(s, d, min=-1.0, max=n),
            "normal": lambda s, d, n: oar.normal(0.0, 1.0, s),
            "standard_normal": lambda s, d, n: oar.standard_normal(s, d),
            "randint": lambda s, d, n: oar.randint(0, n, s, d),
            "reshape": lambda s, d, n: oar.ones([4]).reshape(s), "expand": lambda s, d, n: oar.ones([1]).expand(s),
            "broadcast_to": lambda s, d, n: oar.broadcast_to(oar.ones([1, 1]), s),
            "tile": lambda s, d, n: oar.tile(oar.ones([2, 1]), s),
            "zeros_view": lambda s, d, n: oar.zeros(s, d)[0],
        }
        counted = {
            "arange": lambda a, b, c, d: oar.arange(a, b, c, d),
            "linspace": lambda a, b, c, d: oar.linspace(a, b, c, d),
            "logspace": lambda a, b, c, d: oar.logspace(a, b, c, dtype=d),
            "eye": lambda a, b, c, d: oar.eye(c, b, d),
            "randperm": lambda a, b, c, d: oar.randperm(c, d),
            "tril_indices": lambda a, b, c, d: oar.tril_indices(c, b, a),
            "repeat_interleave": lambda a, b, c, d: oar.repeat_interleave(oar.ones([2]), c),
        }
        count_arg = st.one_of(st.integers(-3, 64), huge_dim, bad_dim,
                              st.sampled_from([None, "4", [3], 2.5, float("nan"), float("inf"), True]))
        bound = st.one_of(st.integers(-10, 10), st.sampled_from([0.5, -2.5, float("nan"), float("inf"), 1e300,
                                                                  2**40, -(2**40), 2**62, 2**63, None, "1"]))
        step = st.one_of(st.sampled_from([1, 2, -1, -3, 0.5, -0.25, 0, 0.0, 1e-300, float("nan"), float("inf"),
                                          2**40, 2**63, None, "1"]))

        @given(st.data())
        def body(data):
            if data.draw(st.booleans()):
                name = data.draw(st.sampled_from(sorted(creators)))
                attempt(name, creators[name], data.draw(hostile_shape), data.draw(dtype), data.draw(number))
            else:
                name = data.draw(st.sampled_from(sorted(counted)))
                attempt(name, counted[name], data.draw(bound), data.draw(bound if name != "arange" else step),
                        data.draw(count_arg if name != "arange" else bound), data.draw(dtype))
        run(body)

    elif prop == "functions":
        skip = {"to_tensor", "seed", "is_tensor"}
        names = sorted(n for n in oar.tensor.__all__ if n not in skip)
        fns = [("oar." + n, getattr(oar, n)) for n in names]
        fns += [("F." + n, getattr(F, n)) for n in sorted(F.__all__)]
        fns += [("oar.linalg." + n, getattr(oar.linalg, n)) for n in sorted(getattr(oar.linalg, "__all__", []))]
        keywords = ["axis", "shape", "dtype", "keepdim", "k", "num_or_sections", "repeat_times", "pad", "size",
                    "scale_factor", "kernel_size", "stride", "padding", "dilation", "groups", "weight", "num_classes",
                    "p", "index", "perm", "repeats", "reduction", "mode", "data_format", "diagonal", "offset"]

        @given(st.sampled_from(fns), st.lists(tensors(), min_size=1, max_size=3), st.lists(anything, max_size=3),
               st.dictionaries(st.sampled_from(keywords), anything, max_size=2))
        def body(fn, xs, extra, kwargs):
            name, f = fn
            attempt(name, f, *(xs + extra), **kwargs)
        run(body)

    elif prop == "methods":
        methods = ["reshape", "transpose", "sum", "mean", "max", "min", "prod", "argmax", "argmin", "cumsum",
                   "squeeze", "unsqueeze", "flatten", "expand", "tile", "split", "chunk", "gather", "index_select",
                   "matmul", "astype", "cast", "numpy", "tolist", "item", "slice", "flip", "roll", "topk", "sort",
                   "std", "var", "norm", "clip", "pow", "masked_fill", "broadcast_to", "repeat_interleave", "t",
                   "diagonal", "tril", "triu", "unbind", "any", "all", "scale", "__add__", "__mul__", "__truediv__",
                   "__floordiv__", "__mod__", "__pow__", "__matmul__", "__lshift__", "__and__", "__lt__", "__eq__",
                   "__neg__", "__abs__", "__invert__", "__len__", "__bool__", "__int__", "__float__", "__index__",
                   "__iter__", "__contains__", "__array__", "__dlpack__", "__repr__", "set_value", "fill_",
                   "zero_", "clone", "detach", "to", "cpu", "element_size", "dim", "size", "backward"]

        @given(tensors(), st.sampled_from(methods), st.lists(anything, max_size=3))
        def body(x, name, args):
            if hasattr(x, name):
                attempt("Tensor." + name, call_method, x, name, *args)
        run(body)

    elif prop == "indexing":
        index_part = st.one_of(
            st.integers(-8, 8), st.sampled_from([2**31, -(2**31), 2**62, 2**63 - 1, -(2**63), 2**63, -(2**64)]),
            st.builds(slice, st.one_of(st.none(), st.integers(-8, 8), st.sampled_from([2**63 - 1, -(2**63), 2**64])),
                      st.one_of(st.none(), st.integers(-8, 8), st.sampled_from([2**63 - 1, -(2**63), 2**64])),
                      st.one_of(st.none(), st.integers(-4, 4), st.sampled_from([2**62, 2**63 - 1, -(2**63), 2**64]))),
            st.sampled_from([None, Ellipsis, True, False, 1.5, "a", [0, 1], [[0]], [-1, 2**40], [True, False],
                             [], (), [1.5]]),
            tensors(shape=[2]), tensors(shape=[]), tensors(shape=[0]))
        key = st.one_of(index_part, st.lists(index_part, max_size=4).map(tuple))

        @given(tensors(), key, st.one_of(number, tensors(), st.none(), st.just("x")))
        def body(x, k, value):
            attempt("getitem", operator.getitem, x, k)
            attempt("setitem", operator.setitem, x, k, value)
        run(body)
    else:
        raise SystemExit("unknown property " + prop)


if __name__ == "__main__":
    _child(sys.argv[1])
