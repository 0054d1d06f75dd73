"""The oar-rocm wheel (plugins/rocm/pyproject.toml, docs/packaging.md): built for one offload target with a
fresh virtual environment's oar (against its SDK) and installed beside the core wheel, `import oar` finds the
plugin through its entry point. No AMD GPU is reachable here, so the plugin is then refused with HIP's
reason, quietly, and the doctor shows it. Skips without hipcc."""
import glob
import os
import shutil
import subprocess
import zipfile

import pytest

from _venv import ROOT, Venv, core_wheel, need_tools


@pytest.mark.slow
def test_oar_rocm_wheel_in_a_fresh_venv(tmp_path, tmp_path_factory):
    need_tools("cmake", "c++")
    if shutil.which("hipcc") is None:
        pytest.skip("hipcc not found: the HIP toolchain is needed to build oar-rocm")
    core = core_wheel(tmp_path_factory)
    venv = Venv(tmp_path / "venv")
    venv.pip_install(core)
    wheels = str(tmp_path / "wheels")
    venv.pip_wheel(os.path.join(ROOT, "plugins", "rocm"), wheels, "-C", "cmake.define.OAR_ROCM_ARCHS=gfx90a")
    whl = glob.glob(os.path.join(wheels, "oar_rocm-*.whl"))[0]
    names = zipfile.ZipFile(whl).namelist()
    assert "oar_rocm/liboar_plugin_rocm.so" in names and "oar_rocm/__init__.py" in names
    ep = [n for n in names if n.endswith("entry_points.txt")][0]
    assert "rocm = oar_rocm:plugin_dir" in zipfile.ZipFile(whl).read(ep).decode()
    venv.pip_install(whl)
    so = os.path.join(venv.site_packages(), "oar_rocm", "liboar_plugin_rocm.so")
    needed = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    assert "liboar_core" not in needed and "libamdhip64" in needed
    r = venv.run("""
        import oar
        rec = [r for r in oar._C.plugin_records() if r.path.endswith("oar_rocm/liboar_plugin_rocm.so")]
        print("RECORD", len(rec), rec[0].loaded if rec else None, rec[0].name if rec else None)
        print("ROCM", oar.device.is_compiled_with_rocm(), oar.device.cuda.device_count())
        print("REASON", oar.device.cuda.unavailable_reason())
        print("SUM", float(oar.ones([3]).sum()))
    """)
    assert r.returncode == 0, r.stderr
    assert "RECORD 1 " in r.stdout and "SUM 3.0" in r.stdout
    if "RECORD 1 True" in r.stdout:  # an AMD GPU machine: the plugin works
        assert "ROCM True" in r.stdout
        return
    assert "RECORD 1 False rocm" in r.stdout and "ROCM False 0" in r.stdout
    assert "REASON the plugin {} was not loaded: ".format(so) in r.stdout
    assert "hipGetDeviceCount" in r.stdout or "cannot be loaded" in r.stdout, r.stdout
    assert "Warning" not in r.stderr, r.stderr
    doctor = venv.run("import oar.utils.doctor as d; print(d.report())")
    assert so in doctor.stdout and "hipGetDeviceCount" in doctor.stdout, doctor.stdout
