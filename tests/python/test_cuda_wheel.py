"""The oar-cuda wheel (plugins/cuda/pyproject.toml, docs/packaging.md): its entry point preloads cuBLAS(Lt),
cuDNN and NCCL from the nvidia-* wheels' folders, and, built and installed beside the core wheel in a fresh
virtual environment, `import oar` finds the plugin through the entry point. Without a GPU the plugin is then
refused with the CUDA runtime's reason, quietly, and the doctor and every gpu call give that reason."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from _venv import ROOT, Venv, core_wheel, need_tools

OAR_CUDA_PYTHON = os.path.join(ROOT, "plugins", "cuda", "python")
# Any real shared library will do as a stand-in for a vendor library: what is tested is where the
# preloader looks and that it loads what it finds.
STAND_IN = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "tests", "plugins",
                        "liboar_plugin_not_a_plugin.so")


def test_preload_loads_the_nvidia_wheels_libraries(tmp_path):
    """CUDA 13's wheels: cuBLAS(Lt) in nvidia/cu13/lib, cuDNN in nvidia/cudnn/lib, NCCL in nvidia/nccl/lib.
    Each library found is loaded (it shows in /proc/self/maps); a missing one is left to the system; a file
    that is no library warns and is skipped."""
    if not os.path.exists(STAND_IN):
        pytest.skip("test plugins not built (cmake --build build --target oar_test_plugins)")
    site = tmp_path / "site"
    layout = {"cu13/lib/libcublasLt.so.13": STAND_IN, "cu13/lib/libcublas.so.13": STAND_IN,
              "nccl/lib/libnccl.so.2": STAND_IN, "cudnn/lib/libcudnn.so.9": None}
    for rel, src in layout.items():
        dst = site / "nvidia" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src:
            shutil.copy(src, str(dst))
        else:
            dst.write_text("not a shared library")
    code = textwrap.dedent("""
        import sys, warnings
        sys.path[:0] = [{pkg!r}, {site!r}]
        import oar_cuda
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = oar_cuda.preload_vendor_libraries()
        print("GOT", sorted(got.items()))
        maps = open("/proc/self/maps").read()
        print("MAPPED", all(p in maps for p in got.values()))
        print("WARN", [str(x.message) for x in w])
        print("DIR", oar_cuda.plugin_dir())
        print("AGAIN", oar_cuda.preload_vendor_libraries() == got)
    """).format(pkg=OAR_CUDA_PYTHON, site=str(site))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    lib = str(site / "nvidia")
    want = [("libcublas.so.13", lib + "/cu13/lib/libcublas.so.13"),
            ("libcublasLt.so.13", lib + "/cu13/lib/libcublasLt.so.13"),
            ("libnccl.so.2", lib + "/nccl/lib/libnccl.so.2")]
    assert "GOT {}".format(want) in r.stdout
    assert "MAPPED True" in r.stdout and "AGAIN True" in r.stdout
    assert "oar-cuda: cannot load {}/cudnn/lib/libcudnn.so.9".format(lib) in r.stdout
    assert "DIR {}".format(os.path.join(OAR_CUDA_PYTHON, "oar_cuda")) in r.stdout


@pytest.mark.slow
def test_oar_cuda_wheel_in_a_fresh_venv(tmp_path, tmp_path_factory):
    """The user's path: `pip install oar oar-cuda` (the nvidia-* dependencies are the system's here). Builds
    the wheel for sm_90 only with the venv's oar, against its SDK, as scripts/build_cuda_wheel.sh does."""
    need_tools("cmake", "c++")
    if shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"):
        pytest.skip("nvcc not found: the CUDA toolkit is needed to build oar-cuda")
    core = core_wheel(tmp_path_factory)
    venv = Venv(tmp_path / "venv")
    venv.pip_install(core)
    wheels = str(tmp_path / "wheels")
    venv.pip_wheel(os.path.join(ROOT, "plugins", "cuda"), wheels, "-C", "cmake.define.OAR_CUDA_ARCHS=90")
    whl = glob.glob(os.path.join(wheels, "oar_cuda-*.whl"))[0]
    names = zipfile.ZipFile(whl).namelist()
    assert "oar_cuda/liboar_plugin_cuda.so" in names and "oar_cuda/__init__.py" in names
    ep = [n for n in names if n.endswith("entry_points.txt")][0]
    assert "cuda = oar_cuda:plugin_dir" in zipfile.ZipFile(whl).read(ep).decode()
    venv.pip_install(whl)
    so = os.path.join(venv.site_packages(), "oar_cuda", "liboar_plugin_cuda.so")
    needed = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    assert "liboar_core" not in needed and "libcudart" not in needed  # SDK only; the runtime is static
    r = venv.run("""
        import oar
        rec = [r for r in oar._C.plugin_records() if r.path.endswith("oar_cuda/liboar_plugin_cuda.so")]
        print("RECORD", len(rec), rec[0].loaded if rec else None)
        print("GPU", oar.is_compiled_with_cuda(), oar.device.cuda.device_count())
        print("REASON", oar.device.cuda.unavailable_reason())
        print("SUM", float(oar.ones([3]).sum()))
    """)
    assert r.returncode == 0, r.stderr
    assert "RECORD 1 " in r.stdout and "SUM 3.0" in r.stdout
    if "RECORD 1 True" in r.stdout:  # a GPU machine: the plugin works
        assert "GPU True" in r.stdout
        return
    # No GPU here: refused with the runtime's reason, and no warning at import (the normal case).
    assert "GPU False 0" in r.stdout
    assert "REASON the plugin {} was not loaded: ".format(so) in r.stdout
    assert "cudaGetDeviceCount" in r.stdout or "cannot be loaded" in r.stdout, r.stdout
    assert "Warning" not in r.stderr, r.stderr
    doctor = venv.run("import oar.utils.doctor as d; print(d.report())")
    assert "  gpu: not available: the plugin {} was not loaded: ".format(so) in doctor.stdout, doctor.stdout
