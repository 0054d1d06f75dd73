"""Devices from Python: places, the current device, memory statistics, and the doctor."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar


def test_places():
    assert repr(oar.CPUPlace()) == "Place(cpu)" and str(oar.CPUPlace()) == "Place(cpu)"
    assert oar.CPUPlace() == oar.Place("cpu")
    assert oar.CPUPlace().is_cpu_place() and not oar.CPUPlace().is_custom_place()
    if "sim" in oar.device.get_all_custom_device_type():
        p = oar.CustomPlace("sim", 0)
        assert repr(p) == "Place(sim:0)"
        assert p.is_custom_place() and p.get_device_type() == "sim" and p.get_device_id() == 0
        assert p == oar.Place("sim:0") and p != oar.CPUPlace()
        assert repr(oar.CustomPlace("sim", 1)) == "Place(sim:1)"
        assert hash(p) == hash(oar.Place("sim:0"))


def test_device_lists():
    types = oar.device.get_all_device_type()
    assert types[0] == "cpu" and "sim" in types
    assert oar.device.get_all_custom_device_type() == [t for t in types if t not in ("cpu", "gpu")]
    avail = oar.device.get_available_device()
    assert avail[0] == "cpu" and "sim:0" in avail and "sim:1" in avail


def test_set_get_device():
    assert oar.get_device() == "cpu"
    assert oar.device.get_device() == "cpu"
    p = oar.set_device("sim")
    assert p == oar.CustomPlace("sim", 0)
    assert oar.get_device() == "sim:0"
    t = oar.to_tensor([1.0, 2.0])
    assert t.place == oar.CustomPlace("sim", 0)
    assert oar.zeros([2]).place == oar.CustomPlace("sim", 0)
    oar.device.set_device("sim:1")
    assert oar.get_device() == "sim:1" and oar.ones([1]).place == oar.CustomPlace("sim", 1)
    oar.set_device(oar.CPUPlace())
    assert oar.get_device() == "cpu"


def test_synchronize_and_memory_stats(device):
    oar.device.synchronize(device)
    oar.device.synchronize()
    before = oar.device.memory_allocated(device)
    t = oar.zeros([1 << 20], dtype="float32").to(device)  # 4 MiB
    oar.device.synchronize(device)
    during = oar.device.memory_allocated(device)
    assert during - before >= 4 << 20
    assert oar.device.max_memory_allocated(device) >= during
    assert oar.device.memory_reserved(device) >= during
    assert oar.device.memory_allocated(oar.Place(device)) == during
    del t
    assert oar.device.memory_allocated(device) == before
    assert oar.device.max_memory_allocated(device) >= during


def _doctor_cmd():
    return [sys.executable, "-m", "oar.utils.doctor"]


def test_doctor_output():
    out = subprocess.run(_doctor_cmd(), check=True, capture_output=True, text=True, cwd="/").stdout
    assert out.startswith("oar device ABI ")
    assert "plugin search path:" in out
    pkg = os.path.dirname(oar.__file__)
    assert os.path.join(pkg, "plugins", "liboar_plugin_cpu.so") in out
    assert "loaded: cpu " in out and "loaded: sim " in out
    assert "device type 'sim'" in out
    assert "\ndevices:\n  cpu: " in out and "  sim:0: " in out and "  sim:1: " in out
    assert "    kernels: " in out
    verbose = subprocess.run(_doctor_cmd() + ["-v"], check=True, capture_output=True, text=True).stdout
    assert "      add: " in verbose and "float32" in verbose
    assert oar.utils.doctor.report() == out


def test_doctor_reports_skipped_plugins(tmp_path):
    bad = tmp_path / "liboar_plugin_broken.so"
    bad.write_bytes(b"not an ELF file")
    env = dict(os.environ, OAR_PLUGIN_PATH=str(tmp_path))
    out = subprocess.run(_doctor_cmd(), check=True, capture_output=True, text=True, env=env).stdout
    assert str(bad) in out
    after = out.split(str(bad), 1)[1].splitlines()[1]
    assert after.strip().startswith("skipped: ")
    assert "loaded: cpu " in out  # a bad plugin never takes the others down


def test_doctor_matches_cpp_oar_doctor():
    """Same facts as the C++ tool: compare the device section with build/bin/oar-doctor when it is there."""
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    exe = os.path.join(root, os.environ.get("OAR_BUILD_DIR", "build"), "bin", "oar-doctor")
    if not os.path.exists(exe):
        pytest.skip("no C++ oar-doctor built")
    cpp = subprocess.run([exe, "-v"], check=True, capture_output=True, text=True).stdout
    py = oar.utils.doctor.report(verbose=True)
    assert cpp.splitlines()[0] == py.splitlines()[0]
    # Refused device types are not compared: plugins from entry points (an installed oar-cuda without a GPU)
    # are only in Python's records, and plugins the wheel does not bundle (the build tree's gpu plugin) only
    # in the C++ tool's. The devices that are available must be the same.
    def split(report):
        lines = report.split("\ndevices:\n", 1)[1].splitlines()
        refused = [ln.split(":", 1)[0] for ln in lines if ": not available: " in ln]
        return [ln for ln in lines if ": not available: " not in ln], refused
    (cpp_devices, _), (py_devices, _) = split(cpp), split(py)
    assert cpp_devices == py_devices
    strip = [line.split(":", 1)[1] for line in cpp.splitlines() if line.strip().startswith("loaded:")]
    assert strip == [line.split(":", 1)[1] for line in py.splitlines() if line.strip().startswith("loaded:")]


def test_plugin_records_api():
    recs = oar._C.plugin_records()
    assert any(r.loaded and r.device_type == "cpu" and r.num_kernels > 0 for r in recs)
    kernels = dict(oar._C.kernels_of("cpu"))
    assert "float32" in kernels["matmul"]
    assert oar._C.has_kernel("add", "cpu", "float32")


def test_fallback_counts_on_sim():
    if "sim:0" not in oar.device.get_available_device():
        pytest.skip("no sim device")
    oar._C.reset_fallback_counts()
    x = oar.to_tensor([1.0, 4.0], place="sim:0")
    np.testing.assert_allclose(oar.sqrt(x).numpy(), [1.0, 2.0])  # sim has no sqrt kernel: CPU fallback
    assert oar._C.fallback_counts()[("sqrt", "sim", "float32")] == 1
