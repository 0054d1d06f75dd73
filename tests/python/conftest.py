"""Shared fixtures: every test that takes `device` runs on the CPU and on device 0 of every other
device type the runtime found (cpu, sim:0, ...)."""
import os

import pytest

import oar

# The package under test must be the installed one, never the source tree's python/oar (a developer
# who has linked the compiled parts into the source tree opts in with OAR_TEST_SOURCE_TREE=1).
_SRC = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))
assert os.environ.get("OAR_TEST_SOURCE_TREE") == "1" or not os.path.normpath(oar.__file__).startswith(
    _SRC + os.sep), "tests/python must run against the installed package; got " + oar.__file__


def _devices():
    out = []
    seen = set()
    for d in oar.device.get_available_device():
        kind = d.split(":")[0]
        if kind not in seen:
            seen.add(kind)
            out.append(d)
    return out


DEVICES = _devices()


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(autouse=True)
def _restore_global_state():
    yield
    oar.set_device("cpu")
    oar.set_default_dtype("float32")
    # An error a device kernel found is raised at the next synchronization (decision 47): here, so that it
    # is reported against the test that caused it, not a later one in the same process.
    for d in DEVICES:
        if d != "cpu":
            oar.device.synchronize(d)


def pytest_configure(config):
    # Deselect with -m "not slow": tests that build wheels or virtual environments (a minute or more).
    config.addinivalue_line("markers", "slow: builds wheels, virtual environments or out-of-tree projects")
