"""The CUDA plugin seen from Python (issue 15): where the CUDA runtime finds no usable GPU, loading
liboar_plugin_cuda.so is refused with the runtime's own message, and the loader's record and
`python -m oar.utils.doctor` carry it; where it finds one, the plugin loads with that many devices.
The oracle is the CUDA runtime itself, asked through ctypes. Skips, saying why, when the plugin was not built
(no nvcc) or is not installed beside this oar."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

import oar
from oar import _C

FILE = "liboar_plugin_cuda.so"
_REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _plugin_path():
    """OAR_TEST_CUDA_PLUGIN; else a copy the runtime already found (an installed oar-cuda); else the source
    tree's build."""
    if os.environ.get("OAR_TEST_CUDA_PLUGIN"):
        return os.environ["OAR_TEST_CUDA_PLUGIN"]
    for r in _C.plugin_records():
        if os.path.basename(r.path) == FILE:
            return r.path
    built = os.path.join(os.environ.get("OAR_BUILD_DIR", os.path.join(_REPO, "build")), "lib", "oar", "plugins", FILE)
    return built if os.path.exists(built) else None


# The plugin is loaded in a child process: a load here would add its record to this process, and the
# doctor's report that other tests compare (test_device.py) would change with the test order.
_CHILD = """
import json, sys
from oar import _C
from oar.utils import doctor
path = sys.argv[1]
rec = next((r for r in _C.plugin_records() if r.path == path), None) or _C.load_plugin(path)
available = [name for _, name, ok, _ in _C.device_types() if ok]
print(json.dumps({"loaded": rec.loaded, "reason": rec.reason, "name": rec.name, "device_type": rec.device_type,
                  "num_devices": rec.num_devices, "available": available, "doctor": doctor.report()}))
"""


class _Record:
    def __init__(self, d):
        self.__dict__.update(d)


def _record(path):
    out = subprocess.run([sys.executable, "-c", _CHILD, path], check=True, capture_output=True, text=True,
                         cwd="/").stdout
    return _Record(json.loads(out.strip().splitlines()[-1]))


def _cuda_runtime_answer():
    """(error code, its message) of cudaGetDeviceCount from the shared CUDA runtime, or None without one."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return None
    count = ctypes.c_int(0)
    err = rt.cudaGetDeviceCount(ctypes.byref(count))
    rt.cudaGetErrorString.restype = ctypes.c_char_p
    return err, count.value, rt.cudaGetErrorString(err).decode()


@pytest.fixture(scope="module")
def cuda_plugin():
    path = _plugin_path()
    if path is None:
        pytest.skip("the CUDA plugin was not built (no nvcc at configure time) and no oar-cuda is installed")
    return path, _record(path)


def test_loaded_with_the_runtimes_devices_or_refused_with_its_message(cuda_plugin):
    path, rec = cuda_plugin
    answer = _cuda_runtime_answer()
    if rec.loaded:
        assert rec.device_type == "gpu"
        assert rec.num_devices >= 1
        if answer is not None:
            assert answer[0] == 0 and rec.num_devices == answer[1]
        assert "gpu" in rec.available
        return
    assert rec.reason, "refused without a reason"
    assert "gpu" not in rec.available
    if answer is None:  # no shared runtime to ask: the plugin's own wording names the failing call
        assert "cudaGetDeviceCount" in rec.reason, rec.reason
    else:
        err, _, message = answer
        assert err != 0, "the runtime sees a GPU, yet the plugin was refused: " + rec.reason
        assert message in rec.reason, "expected the runtime's message {!r} in {!r}".format(message, rec.reason)


def test_the_doctor_shows_the_record(cuda_plugin):
    path, rec = cuda_plugin
    text = rec.doctor
    assert path in text
    if rec.loaded:
        assert "loaded: {} ".format(rec.name) in text and "(device type 'gpu'" in text
    else:
        assert "skipped: " + rec.reason in text
