"""ABI 1.2 from Python: a kernel that declines a call falls back to the CPU with a count, under the fallback
policy, and oar._C.kernel_supports answers placement questions without running anything. Uses the test
plugin tests/plugins/declining.cc (device type test_declining), loaded in a subprocess so it never stays
loaded in this one."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLUGIN = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "tests", "plugins",
                      "liboar_plugin_declining.so")

_PRELUDE = """
import sys, numpy as np, oar
from oar import _C
rec = _C.load_plugin(sys.argv[1])
assert rec.loaded, rec.reason
P = "test_declining:0"
def calls():  # the plugin's own kernel call counts, reported by its "subtract" kernel: [add, multiply]
    z = oar.to_tensor(np.zeros(2, "float32"), place=P)
    return (z - z).numpy().tolist()
def count(dtype="float32"):
    return _C.fallback_counts().get(("add", "test_declining", dtype), 0)
"""


def _run(body, **env):
    if not os.path.exists(PLUGIN):
        pytest.skip("{} is not built".format(PLUGIN))
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", _PRELUDE + body, PLUGIN], capture_output=True, text=True,
                       timeout=120, env=e, cwd="/")
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_declined_call_falls_back_with_a_count():
    out = _run("""
a = np.arange(100, dtype="float32").reshape(10, 10)
small = np.arange(12, dtype="float32").reshape(3, 4)
x, s = oar.to_tensor(a, place=P), oar.to_tensor(small, place=P)
before = calls()[0]
np.testing.assert_array_equal((s + s).numpy(), small * 2)            # runs on the device
assert count() == 0 and calls()[0] == before + 1
np.testing.assert_array_equal((x + x).numpy(), a * 2)                # supports query: no
assert (x + x).place == oar.CustomPlace("test_declining", 0)
assert count() == 2, _C.fallback_counts()
assert calls()[0] == before + 1, "the kernel ran for a call its query declined"
np.testing.assert_array_equal((s.T + s.T).numpy(), small.T * 2)      # the kernel declines at call time
assert count() == 3
d = oar.to_tensor(np.ones(3), place=P)                              # float64: declined by the query
np.testing.assert_array_equal((d + d).numpy(), np.full(3, 2.0))
assert count("float64") == 1
print("OK", _C.fallback_counts()[("add", "test_declining", "float32")])
""")
    assert "OK 3" in out


def test_policy_error_names_the_op_dtype_and_reason():
    out = _run("""
x = oar.to_tensor(np.ones(100, "float32"), place=P)
try:
    x + x
    print("NO ERROR")
except NotImplementedError as e:
    print("ERROR", e)
""", OAR_FALLBACK_POLICY="error")
    assert "ERROR" in out and "add" in out and "float32" in out, out
    assert "add takes at most 64 elements, got 100" in out and "policy is 'error'" in out, out


def test_kernel_supports_for_placement():
    out = _run("""
t = oar.to_tensor(np.ones((3, 4), "float32"), place=P)
print("A", _C.kernel_supports("add", P, [t, t]))
print("B", _C.kernel_supports("add", P, [([10, 10], "float32"), ([10], "float32")]))
print("C", _C.kernel_supports("add", P, [([2], "float64"), ([2], "float64")]))
print("D", _C.kernel_supports("exp", P, [([2], "float32")]))
print("E", _C.kernel_supports("matmul", "cpu", [([2, 3], "float32"), ([3, 2], "float32")], {"transpose_x": 0}))
print("CALLS", calls(), dict(_C.fallback_counts()))
""")
    assert "A (True, '')" in out, out
    assert "B (False, 'declining: add takes at most 64 elements, got 100')" in out, out
    assert "C (False, 'declining: add has no float64 units')" in out, out
    assert "D (False, 'test_declining has no kernel for exp with dtype float32')" in out, out
    assert "E (True, '')" in out, out
    assert "CALLS [0.0, 0.0] {}" in out, out  # queries ran no kernel and are not fallbacks


def test_a_1_2_plugin_under_a_1_1_core_degrades_to_a_clear_error():
    """Under an emulated ABI 1.1 core (no register_kernel_ex, no OAR_ERR_DECLINED) the plugin still loads and
    works; a call it would decline is an error naming its reason, never a wrong answer or a crash."""
    out = _run("""
s = oar.to_tensor(np.arange(12, dtype="float32"), place=P)
np.testing.assert_array_equal((s + s).numpy(), np.arange(12) * 2)
x = oar.to_tensor(np.ones(100, "float32"), place=P)
try:
    x + x
    print("NO ERROR")
except NotImplementedError as e:
    print("ERROR", e)
print("COUNTS", dict(_C.fallback_counts()))
""", OAR_ABI_EMULATE_CORE_MINOR="1")
    assert "ERROR" in out and "add takes at most 64 elements" in out, out
    assert "a core of ABI 1.1 cannot fall back" in out, out
    assert "COUNTS {}" in out, out
