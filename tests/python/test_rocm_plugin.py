"""The ROCm plugin seen from Python (issue 16): liboar_plugin_rocm.so is built from the CUDA plugin's sources
with hipcc. No machine of this project has an AMD GPU, so what can be checked is that loading it is refused
with HIP's own message (hipErrorNoDevice, or no driver), that the loader's record and
`python -m oar.utils.doctor` carry it, and that the plugin names itself `rocm` with device type `gpu`; where
HIP finds a GPU, the plugin loads with that many devices. The oracle is the HIP runtime itself, asked through
ctypes. Skips, saying why, when the plugin was not built (no hipcc at configure time)."""
import ctypes
import json
import os
import subprocess
import sys

import pytest

from oar import _C

FILE = "liboar_plugin_rocm.so"
_REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _plugin_path():
    """OAR_TEST_ROCM_PLUGIN; else a copy the runtime already found (an installed oar-rocm); else the source
    tree's build."""
    if os.environ.get("OAR_TEST_ROCM_PLUGIN"):
        return os.environ["OAR_TEST_ROCM_PLUGIN"]
    for r in _C.plugin_records():
        if os.path.basename(r.path) == FILE:
            return r.path
    built = os.path.join(os.environ.get("OAR_BUILD_DIR", os.path.join(_REPO, "build")), "lib", "oar", "plugins", FILE)
    return built if os.path.exists(built) else None


# Loaded in a child process, so this process's plugin records (which other tests compare) do not change.
_CHILD = """
import json, sys
from oar import _C
from oar.utils import doctor
path = sys.argv[1]
rec = next((r for r in _C.plugin_records() if r.path == path), None) or _C.load_plugin(path)
print(json.dumps({"loaded": rec.loaded, "reason": rec.reason, "name": rec.name, "device_type": rec.device_type,
                  "num_devices": rec.num_devices, "vendor_versions": rec.vendor_versions,
                  "doctor": doctor.report()}))
"""


class _Record:
    def __init__(self, d):
        self.__dict__.update(d)


@pytest.fixture(scope="module")
def rocm_plugin():
    path = _plugin_path()
    if path is None:
        pytest.skip("the ROCm plugin was not built (no hipcc at configure time) and no oar-rocm is installed")
    out = subprocess.run([sys.executable, "-c", _CHILD, path], check=True, capture_output=True, text=True,
                         cwd="/").stdout
    return path, _Record(json.loads(out.strip().splitlines()[-1]))


def _hip_answer():
    """(error code, device count, message) of hipGetDeviceCount from libamdhip64, or None without it."""
    for name in ("libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"):
        try:
            hip = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return None
    count = ctypes.c_int(0)
    err = hip.hipGetDeviceCount(ctypes.byref(count))
    hip.hipGetErrorString.restype = ctypes.c_char_p
    return err, count.value, hip.hipGetErrorString(err).decode()


def test_names_itself_rocm_for_the_gpu_device_type(rocm_plugin):
    _, rec = rocm_plugin
    assert rec.name == "rocm"
    assert rec.device_type == "gpu"
    # Debian's ROCm has no rocBLAS/MIOpen/RCCL: the doctor's line says what runs instead.
    assert rec.vendor_versions.startswith("HIP "), rec.vendor_versions
    assert "own kernels" in rec.vendor_versions, rec.vendor_versions


def test_loaded_with_hips_devices_or_refused_with_its_message(rocm_plugin):
    _, rec = rocm_plugin
    answer = _hip_answer()
    if rec.loaded:
        assert rec.num_devices >= 1
        if answer is not None:
            assert answer[0] == 0 and rec.num_devices == answer[1]
        return
    assert rec.reason, "refused without a reason"
    if answer is None:  # no HIP runtime to ask: the plugin's wording names the failing call
        assert "hipGetDeviceCount" in rec.reason, rec.reason
    else:
        err, _, message = answer
        assert err != 0, "HIP sees a GPU, yet the plugin was refused: " + rec.reason
        assert message in rec.reason, "expected HIP's message {!r} in {!r}".format(message, rec.reason)
        assert "hipGetDeviceCount" in rec.reason, rec.reason


def test_the_doctor_shows_the_record(rocm_plugin):
    path, rec = rocm_plugin
    assert path in rec.doctor
    if rec.loaded:
        assert "loaded: rocm " in rec.doctor
    else:
        assert "skipped: " + rec.reason in rec.doctor
