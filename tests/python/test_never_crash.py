"""Bad sizes never crash the process (docs/python.md, "Sizes and bad input").

Each case runs in a fresh interpreter, so a segfault or an out-of-memory kill fails its test instead of
killing pytest. The child reports the exception it got; the test checks its exact type and that the
message names the op. Every case here crashed, hung or silently gave a wrong tensor before the core
checked its size arithmetic (issue 13).
"""
import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

# The child's address space is capped below any machine's memory, as a safety net: a case that slipped
# past the core's checks then fails to allocate (the allocator's message names no op, so the test still
# fails) instead of swapping the machine to death.
_AS_LIMIT = 16 << 30

_PRELUDE = """\
import json, sys
import numpy as np
import oar
import oar.nn.functional as F

def report(fn):
    try:
        out = fn()
    except BaseException as e:  # noqa: B902 - the type is what the test checks
        print(json.dumps({"type": type(e).__name__, "msg": str(e)}))
        return
    if isinstance(out, oar.Tensor):
        out = {"shape": out.shape, "size": int(out.size)}
    print(json.dumps({"type": None, "value": repr(out)}))
"""


def run_case(expr, setup="", as_limit=_AS_LIMIT):
    """Evaluates `expr` (after `setup`) in a fresh interpreter; returns (exception type name, message)."""
    code = _PRELUDE + textwrap.dedent(setup) + "\nreport(lambda: " + expr + ")\n"
    env = dict(os.environ)
    env.pop("OAR_CALL_STACK_LEVEL", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit)))
    assert p.returncode == 0, "{} ended with exit status {} (negative: killed by that signal)\n{}".format(
        expr, p.returncode, p.stderr[-3000:])
    result = json.loads(p.stdout.strip().splitlines()[-1])
    return result["type"], result.get("msg", result.get("value"))


def expect(expr, error, *words, setup="", as_limit=_AS_LIMIT):
    kind, msg = run_case(expr, setup, as_limit)
    assert kind == error.__name__, "{}: expected {}, got {}: {}".format(expr, error.__name__, kind, msg)
    for w in words:
        assert w in msg, "{}: {!r} is not in the message {!r}".format(expr, w, msg)
    return msg


# ---- the cases of issue 13 ----------------------------------------------------------------------------
def test_arange_too_long():
    # 2^62 int64 values are 2^65 bytes: SIGSEGV before (the byte size wrapped to 0).
    expect("oar.arange(0, 2**62, 1)", ValueError, "arange:", "[4611686018427387904]", "bytes")


def test_linspace_too_long():
    expect("oar.linspace(0, 1, 2**62)", ValueError, "linspace:", "[4611686018427387904]", "bytes")


def test_eye_too_big():
    expect("oar.eye(2**31, 2**31)", ValueError, "eye:", "[2147483648, 2147483648]")


def test_interpolate_too_big():
    # Was killed by the kernel's OOM killer.
    expect("F.interpolate(x, size=[2**31, 2**31])", ValueError, "interpolate:", "[1, 1, 2147483648, 2147483648]",
           setup="x = oar.ones([1, 1, 4, 4])")


def test_interpolate_beyond_memory():
    # 2^20 x 2^20 float32 is 4 TiB: no overflow, but more than the machine has.
    expect("F.interpolate(x, size=[2**20, 2**20])", MemoryError, "interpolate:", "4398046511104 bytes",
           setup="x = oar.ones([1, 1, 4, 4])")


def test_zeros_element_count_overflows():
    # Used to succeed with size 0; indexing it read wild memory.
    msg = expect("oar.zeros([2**40, 2**30])", ValueError, "[1099511627776, 1073741824]", "2^63-1 elements")
    # zeros, ones, full and empty are the fill op; the core's message follows Paddle's class word (decision 98)
    assert msg.startswith("(InvalidArgument) fill:"), msg


def test_zeros_indexing_never_reads_wild_memory():
    expect("oar.zeros([2**40, 2**30])[5, 7].numpy()", ValueError, "fill:", "2^63-1 elements")


def test_empty_element_count_overflows():
    expect("oar.empty([2**40, 2**30])[7].numpy()", ValueError, "fill:", "[1099511627776, 1073741824]")


def test_ones_sum_errors_at_creation():
    # 2^31 * 2^31 * 4 = 2^64 wrapped to 0: sum() returned an empty result.
    expect("oar.ones([2**31, 2**31, 4]).sum()", ValueError, "fill:", "[2147483648, 2147483648, 4]")


def test_creation_beyond_memory_is_memory_error():
    msg = expect("oar.zeros([2**20, 2**20])", MemoryError, "fill:", "4398046511104 bytes", "cpu")
    assert "has" in msg and "bytes of memory" in msg, msg


def test_failed_allocation_is_memory_error():
    # 8 GiB fits the machine's memory (so the size check lets it through) but not the child's 4 GiB
    # address space: the cpu plugin's malloc returns NULL, which must be a MemoryError, not a crash.
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if ram <= 9 << 30:
        pytest.skip("needs more than 9 GiB of RAM, this machine has {} bytes".format(ram))
    expect("oar.zeros([2**31, 4], 'uint8')", MemoryError, "out of memory on cpu", "8589934592 bytes",
           as_limit=4 << 30)


def test_randn_and_uniform_overflow():
    expect("oar.randn([2**40, 2**30])", ValueError, "normal:", "2^63-1 elements")
    expect("oar.uniform([2**40, 2**30])", ValueError, "uniform:", "2^63-1 elements")


def test_arange_huge_float_range():
    # The length 1e300 does not fit in int64 (the cast was undefined behaviour).
    expect("oar.arange(0, 1e300, 1.0)", ValueError, "arange:")


def test_randperm_too_long():
    expect("oar.randperm(2**62)", ValueError, "randperm:", "bytes")


# ---- shape-changing ops -----------------------------------------------------------------------------
def test_reshape_whose_element_count_wraps():
    # (2^62 + 1) * 4 wraps to 4 in int64, which matched the input's 4 elements: a bogus view.
    expect("x.reshape([2**62 + 1, 4])", ValueError, "reshape:", "[4611686018427387905, 4]",
           setup="x = oar.ones([4])")


def test_reshape_negative_dim():
    expect("x.reshape([-2, 2])", ValueError, "reshape:", "-2", setup="x = oar.ones([4])")


def test_expand_overflow():
    expect("x.expand([2**40, 2**30])", ValueError, "expand:", "2^63-1 elements", setup="x = oar.ones([1])")


def test_expand_negative_dim():
    expect("x.expand([-2])", ValueError, "expand:", "-2", setup="x = oar.ones([1])")
    expect("x.expand([-3, 1])", ValueError, "expand:", "-3", setup="x = oar.ones([1])")


def test_broadcast_to_beyond_memory_then_copy():
    # The view itself is fine (stride 0); materialising it is not.
    expect("x.expand([2**20, 2**20]).contiguous()", MemoryError, "bytes", setup="x = oar.ones([1])")


def test_tile_overflow():
    expect("oar.tile(x, [2**62, 2**62])", ValueError, "2^63-1", setup="x = oar.ones([2, 2])")


def test_repeat_interleave_too_long():
    expect("oar.repeat_interleave(x, 2**62)", ValueError, "repeat_interleave:", setup="x = oar.ones([4])")
    expect("oar.repeat_interleave(x, [2**62, 2**62, 2**62, 2**62])", ValueError, "repeat_interleave:",
           setup="x = oar.ones([4])")


def test_repeat_interleave_negative():
    expect("oar.repeat_interleave(x, -1)", ValueError, "repeat_interleave:", setup="x = oar.ones([4])")


def test_pad_overflow():
    expect("F.pad(x, [0, 2**63 - 1])", ValueError, "pad:", setup="x = oar.ones([2])")
    expect("F.pad(x, [2**62, 2**62, 0, 0, 0, 0])", ValueError, "pad:", setup="x = oar.ones([2, 2, 2])")


def test_concat_overflow():
    # concat's output length is a sum of input lengths; views with huge lengths make it overflow.
    expect("oar.concat([a, a])", ValueError, "concat:", setup="a = oar.ones([1]).expand([2**62 + 1])")


def test_conv_huge_attributes():
    expect("F.conv2d(x, w, padding=2**62)", ValueError, "conv:",
           setup="x = oar.ones([1, 1, 4, 4]); w = oar.ones([1, 1, 3, 3])")
    expect("F.conv2d(x, w, dilation=2**62)", ValueError, "conv:",
           setup="x = oar.ones([1, 1, 4, 4]); w = oar.ones([1, 1, 3, 3])")


# ---- found by the fuzzer (tests/python/test_fuzz_api.py) --------------------------------------------
def test_tril_triu_without_columns():
    # A [rows, 0] input divided by its zero column count: SIGFPE.
    kind, value = run_case("(x.tril().shape, x.triu().shape, y.tril().shape)",
                           setup="x = oar.ones([3, 0]); y = oar.ones([2, 3, 0])")
    assert kind is None and value == "([3, 0], [3, 0], [2, 3, 0])", (kind, value)


def test_tril_triu_extreme_diagonals():
    # i + diagonal + 1 overflowed for diagonal near 2^63; the result is all kept or all zero.
    kind, value = run_case("(oar.tril(x, 2**63 - 1).numpy().tolist(), oar.triu(x, -(2**63)).numpy().tolist(), "
                           "oar.tril(x, -(2**63)).numpy().tolist())", setup="x = oar.ones([2, 2])")
    assert kind is None and value == "([[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]])", \
        (kind, value)
    expect("oar.tril(x, float('inf'))", TypeError, "tril:", "diagonal", setup="x = oar.ones([2, 2])")


def test_shapes_must_be_ints():
    # int(inf) raised OverflowError; int(2.5) silently made a [2] tensor.
    expect("oar.zeros([2.5])", TypeError, "shape")
    expect("x.reshape(s)", TypeError, "shape", setup="x = oar.ones([1]); s = oar.to_tensor([float('inf')])")


def test_gather_index_beyond_int64():
    expect("x.gather([2**64])", TypeError, "gather:", setup="x = oar.ones([3])")


def test_diag_huge_offset():
    # diag builds a dense [n + |offset|]^2 host buffer: checked before numpy sizes it.
    expect("oar.diag(x, 2**40)", ValueError, "diag:", "2^63-1 elements", setup="x = oar.ones([1])")
    expect("oar.diag(x, 2**63)", ValueError, "diag:", setup="x = oar.ones([1])")
    expect("oar.diag(x, 2**20)", MemoryError, "diag:", "bytes of memory", setup="x = oar.ones([1])")


def test_maxout_and_axes():
    expect("F.maxout(x, 2)", ValueError, "maxout:", setup="x = oar.ones([])")
    expect("oar.var(x, float('inf'))", TypeError, "axis", setup="x = oar.ones([2])")


def test_label_smooth_without_classes():
    expect("F.label_smooth(x)", ValueError, "label_smooth:", setup="x = oar.ones([0])")


# ---- indexing and slicing ---------------------------------------------------------------------------
def test_index_out_of_range():
    expect("x[2**62]", IndexError, setup="x = oar.ones([4])")
    expect("x[-2**63]", IndexError, setup="x = oar.ones([4])")


def test_slice_huge_steps():
    # (end - start + step - 1) overflowed for steps near 2^63.
    kind, value = run_case("x[::2**63 - 1].numpy().tolist()", setup="x = oar.arange(4)")
    assert kind is None and value == "[0]", (kind, value)
    kind, value = run_case("x[::-2**63].numpy().tolist()", setup="x = oar.arange(4)")
    assert kind is None and value == "[3]", (kind, value)
    kind, value = run_case("x[2::-(2**62)].numpy().tolist()", setup="x = oar.arange(4)")
    assert kind is None and value == "[2]", (kind, value)


@pytest.mark.parametrize("expr", ["oar.zeros([-1, 2])", "oar.ones([3, -4])", "oar.full([-5], 1.0)"])
def test_negative_shape(expr):
    expect(expr, ValueError, "fill:", "negative")


def test_numpy_matches_on_small_results():
    # The checks must not reject ordinary sizes: a few real results against numpy.
    kind, value = run_case("(oar.arange(0, 10, 3).numpy().tolist(), oar.eye(2, 3).numpy().tolist(), "
                           "oar.zeros([0, 2**62]).shape)")
    assert kind is None, value
    assert value == "([0, 3, 6, 9], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [0, 4611686018427387904])", value
