"""Packaging for extenders (docs/packaging.md): the SDK inside the installed package (oar.sysconfig,
find_package(oar) from it), the plugin search path (OAR_PLUGIN_PATH, CUSTOM_DEVICE_ROOT), and the oar-sim
plugin wheel installed next to the core wheel in a fresh virtual environment."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import oar
import oar.sysconfig as sc

from _venv import CLEAN_ENV as _CLEAN_ENV, ROOT, Venv, core_wheel, need_tools as _need_tools
from _venv import run_python as _run_python


# ---- oar.sysconfig ------------------------------------------------------------------------------------

def test_sysconfig_paths_hold_the_sdk():
    inc = sc.get_include()
    for h in ("oar/device_api.h", "oar/sdk.h", "oar/sdk/kernel.h", "oar/sdk/tables.h", "oar/sdk/streams.h"):
        assert os.path.isfile(os.path.join(inc, h)), h
    core = sc.get_core_include()
    for h in ("oar/core/tensor.h", "oar/core/runtime.h"):
        assert os.path.isfile(os.path.join(core, h)), h
    # A plugin's include folder holds no core header (ABI 1.2 / issue 13: separate folders), and neither
    # folder is inside the other.
    assert not os.path.exists(os.path.join(inc, "oar", "core")) and not os.path.exists(os.path.join(core, "oar", "sdk"))
    assert os.path.commonpath([inc, core]) not in (inc, core)
    assert os.path.isfile(os.path.join(sc.get_lib(), "liboar_core.so.0"))
    cmake_dir = sc.get_cmake_dir()
    assert os.path.isfile(os.path.join(cmake_dir, "oarConfig.cmake"))
    assert os.path.isfile(os.path.join(cmake_dir, "oarConfigVersion.cmake"))
    plugin_dir = sc.get_plugin_dir()
    cpu = os.path.join(plugin_dir, "liboar_plugin_cpu.so")
    assert os.path.isfile(cpu)
    # ... and it is the folder the loader really took the cpu plugin from.
    loaded = [r.path for r in oar._C.plugin_records() if r.loaded and r.device_type == "cpu"]
    assert [os.path.realpath(p) for p in loaded] == [os.path.realpath(cpu)]
    # Everything lives inside the package.
    pkg = os.path.dirname(os.path.abspath(oar.__file__))
    for p in (inc, sc.get_lib(), cmake_dir, plugin_dir):
        assert os.path.commonpath([pkg, p]) == pkg


def test_sysconfig_flags():
    cflags = sc.get_compile_flags()
    assert "-I" + sc.get_include() in cflags and "-I" + sc.get_core_include() in cflags and "-std=c++17" in cflags
    lflags = sc.get_link_flags()
    assert lflags == ["-L" + sc.get_lib(), "-l:liboar_core.so.0", "-Wl,-rpath," + sc.get_lib()]


def test_sysconfig_names_a_missing_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(sc, "_PKG", str(tmp_path))
    for fn, what in ((sc.get_include, "include"), (sc.get_core_include, "core include"), (sc.get_lib, "library"), (sc.get_cmake_dir, "CMake package"),
                     (sc.get_plugin_dir, "plugin")):
        with pytest.raises(FileNotFoundError, match="the {} folder {}".format(what, tmp_path)):
            fn()


def test_link_flags_build_a_program_against_the_core(tmp_path):
    """get_compile_flags()/get_link_flags() alone are enough to compile and run a program using the core."""
    _need_tools("c++")
    src = tmp_path / "main.cc"
    src.write_text(textwrap.dedent("""
        #include <oar/core/ops.h>
        #include <oar/core/tensor.h>
        #include <cstdio>
        int main() {
          auto x = oar::Tensor::from_vector<float>({1, 2, 3}, {3}, oar::DType::kFloat32);
          auto y = oar::ops::multiply(x, oar::ops::add(x, x)).to_vector<float>();
          std::printf("%g %g %g\\n", y[0], y[1], y[2]);
        }
    """))
    exe = tmp_path / "main"
    subprocess.run(["c++", *sc.get_compile_flags(), str(src), "-o", str(exe), *sc.get_link_flags()], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, env=_CLEAN_ENV).stdout
    assert out.split() == ["2", "8", "18"]


# ---- find_package(oar) against the installed package ----------------------------------------------------

def _cmake_build(src, build, *defs):
    cfg = ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release", "-Doar_DIR=" + sc.get_cmake_dir()]
    r = subprocess.run(cfg + list(defs), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["cmake", "--build", str(build), "-j", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_find_package_builds_the_oot_plugin_sample(tmp_path):
    """samples/oot_plugin built as its README says, with oar_DIR from oar.sysconfig, then loaded by oar."""
    _need_tools("cmake", "c++")
    build = tmp_path / "build"
    _cmake_build(os.path.join(ROOT, "samples", "oot_plugin"), build)
    plugin = build / "liboar_plugin_oot.so"
    assert plugin.is_file()
    # The plugin must not link liboar_core (the SDK rule): check its DT_NEEDED entries.
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", str(plugin)], check=True, capture_output=True, text=True).stdout
        assert "liboar_core" not in dyn
    # Found through OAR_PLUGIN_PATH in a fresh interpreter; its kernel gives numpy's numbers.
    env = dict(_CLEAN_ENV, OAR_PLUGIN_PATH=str(build))
    r = _run_python("""
        import numpy as np, oar
        rec = [r for r in oar._C.plugin_records() if r.path.endswith("liboar_plugin_oot.so")]
        print("LOADED", [r.loaded for r in rec])
        x = oar.to_tensor(np.arange(6, dtype="float32").reshape(2, 3), place="oot:0")
        y = oar.to_tensor(np.array([10, 20, 30], dtype="float32"), place="oot:0")
        print("OUT", (x * y).numpy().ravel().tolist())
    """, env=env)
    assert r.returncode == 0, r.stderr
    assert "LOADED [True]" in r.stdout
    expected = (np.arange(6, dtype="float32").reshape(2, 3) * np.array([10, 20, 30], dtype="float32")).ravel()
    assert "OUT " + str(expected.tolist()) in r.stdout


def test_find_package_gives_oar_core_target(tmp_path):
    """A program linking the imported target oar::core runs and finds the plugins bundled in the package."""
    _need_tools("cmake", "c++")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.18)
        project(embed LANGUAGES CXX)
        find_package(oar 0.1 REQUIRED)
        add_executable(embed main.cc)
        target_link_libraries(embed PRIVATE oar::core)
        file(WRITE ${CMAKE_BINARY_DIR}/vars.txt "${oar_VERSION}|${oar_PLUGIN_DIR}|${oar_CORE_LIBRARY}")
    """))
    (src / "main.cc").write_text(textwrap.dedent("""
        #include <oar/core/ops.h>
        #include <oar/core/runtime.h>
        #include <cstdio>
        int main() {
          for (const auto& r : oar::Runtime::get().plugin_records())
            if (r.loaded) std::printf("plugin %s\\n", r.path.c_str());
          auto x = oar::Tensor::from_vector<float>({1.5f, -2.f}, {2}, oar::DType::kFloat32);
          auto y = oar::ops::add(x, x).to_vector<float>();
          std::printf("sum %g %g\\n", y[0], y[1]);
        }
    """))
    build = tmp_path / "build"
    _cmake_build(src, build)
    version, plugin_dir, core = (build / "vars.txt").read_text().split("|")
    assert version == oar.__version__
    assert os.path.realpath(plugin_dir) == os.path.realpath(sc.get_plugin_dir())
    assert os.path.realpath(core) == os.path.realpath(os.path.join(sc.get_lib(), "liboar_core.so.0"))
    out = subprocess.run([str(build / "embed")], check=True, capture_output=True, text=True, env=_CLEAN_ENV).stdout
    assert "sum 3 -4" in out
    assert "plugin " + os.path.join(sc.get_plugin_dir(), "liboar_plugin_cpu.so") in out


# ---- the plugin search path ------------------------------------------------------------------------------

def _a_sim_plugin():
    """A sim plugin file from this installation: bundled in oar/plugins, or from an installed oar-sim."""
    for r in oar._C.plugin_records():
        if r.loaded and r.device_type == "sim":
            return r.path
    pytest.skip("no sim plugin installed")


_RECORDS = """
    import oar
    for r in oar._C.plugin_records():
        print("REC", r.path, "|", r.loaded, "|", r.reason)
    print("DEVICES", oar.device.get_available_device())
"""


def _records(out):
    recs = {}
    for line in out.splitlines():
        if line.startswith("REC "):
            path, loaded, reason = [s.strip() for s in line[4:].split("|")]
            recs[path] = (loaded == "True", reason)
    return recs


def test_custom_device_root_adds_a_plugin_folder(tmp_path):
    """PaddlePaddle's CUSTOM_DEVICE_ROOT: a copy of the sim plugin there is loaded and shadows the installed one."""
    installed = _a_sim_plugin()
    folder = tmp_path / "custom_devices"
    folder.mkdir()
    copy = str(folder / "liboar_plugin_sim.so")
    shutil.copy(installed, copy)
    r = _run_python(_RECORDS, env=dict(_CLEAN_ENV, CUSTOM_DEVICE_ROOT=str(folder)))
    assert r.returncode == 0, r.stderr
    recs = _records(r.stdout)
    assert recs[copy] == (True, "")
    if installed in recs:  # bundled in oar/plugins: the search path's own shadowing rule
        assert recs[installed] == (False, "shadowed by {} (earlier in the search path)".format(copy))
    assert "'sim:0'" in r.stdout
    # Without the variable the copy is not looked at.
    r = _run_python(_RECORDS)
    assert r.returncode == 0, r.stderr
    assert copy not in _records(r.stdout)


def test_custom_device_root_plugin_under_another_name(tmp_path):
    """The sim plugin renamed: two candidates for the device type sim; the one from CUSTOM_DEVICE_ROOT comes
    first on the search path (same score) and provides sim, the installed one is refused with the reason."""
    installed = _a_sim_plugin()
    copy = str(tmp_path / "liboar_plugin_mysim.so")
    shutil.copy(installed, copy)
    r = _run_python(_RECORDS, env=dict(_CLEAN_ENV, CUSTOM_DEVICE_ROOT=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    recs = _records(r.stdout)
    assert recs[copy] == (True, "")
    assert recs[installed][0] is False and "already provided by " + copy in recs[installed][1]
    assert "'sim:0'" in r.stdout


def test_oar_plugin_path_comes_before_custom_device_root(tmp_path):
    installed = _a_sim_plugin()
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for d in (first, second):
        shutil.copy(installed, str(d / "liboar_plugin_sim.so"))
    env = dict(_CLEAN_ENV, OAR_PLUGIN_PATH=str(first), CUSTOM_DEVICE_ROOT=":" + str(second) + ":")
    r = _run_python(_RECORDS, env=env)
    assert r.returncode == 0, r.stderr
    recs = _records(r.stdout)
    a, b = str(first / "liboar_plugin_sim.so"), str(second / "liboar_plugin_sim.so")
    assert recs[a] == (True, "")
    assert recs[b] == (False, "shadowed by {} (earlier in the search path)".format(a))


def test_doctor_lists_the_search_path_in_order(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    env = dict(_CLEAN_ENV, CUSTOM_DEVICE_ROOT=b, OAR_PLUGIN_PATH=a)
    r = subprocess.run([sys.executable, "-m", "oar.utils.doctor"], capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    search = [s.strip() for s in r.stdout.split("plugin search path:\n", 1)[1].splitlines()]
    assert search[:2] == [a, b]
    assert os.path.realpath(search[2]) == os.path.realpath(os.path.join(sc.get_lib(), "oar", "plugins"))
    assert os.path.realpath(search[3]) == os.path.realpath(sc.get_plugin_dir())


def test_entry_point_plugin_shadowed_by_an_earlier_file_is_skipped_quietly(tmp_path):
    """An entry point naming a plugin file already loaded (bundled sim + the oar-sim wheel) gives no second
    load and no warning."""
    installed = _a_sim_plugin()
    root = str(tmp_path)
    dist = os.path.join(root, "oar_dup-1.0.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: oar-dup\nVersion: 1.0\n")
    with open(os.path.join(dist, "entry_points.txt"), "w") as f:
        f.write("[oar.plugins]\ndup = dup_backend:PATH\n")
    copy = os.path.join(root, "liboar_plugin_sim.so")
    shutil.copy(installed, copy)
    with open(os.path.join(root, "dup_backend.py"), "w") as f:
        f.write("PATH = {!r}\n".format(copy))
    env = dict(_CLEAN_ENV, PYTHONPATH=root + os.pathsep + _CLEAN_ENV.get("PYTHONPATH", ""))
    r = _run_python(_RECORDS, env=env)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    recs = _records(r.stdout)
    assert copy not in recs  # never handed to the loader
    assert recs[installed] == (True, "")


# ---- wheels: the core wheel and the oar-sim plugin wheel in a fresh virtual environment ---------------

@pytest.mark.slow
def test_oar_sim_wheel_in_a_fresh_venv(tmp_path, tmp_path_factory):
    """The user's path: install the core wheel and the oar-sim wheel into a new virtual environment;
    `import oar` there finds sim through the entry point, with no environment variable. The oar-sim wheel
    is built with that environment's oar, against its SDK (find_package(oar)), as a vendor would."""
    _need_tools("cmake", "c++")
    wheels = str(tmp_path / "wheels")
    core = core_wheel(tmp_path_factory)
    names = zipfile.ZipFile(core).namelist()
    for f in ("oar/include/oar_sdk/oar/sdk.h", "oar/include/oar_core/oar/core/tensor.h", "oar/lib/cmake/oar/oarConfig.cmake",
              "oar/lib/liboar_core.so.0", "oar/plugins/liboar_plugin_cpu.so"):
        assert f in names, f
    assert "oar/plugins/liboar_plugin_sim.so" not in names  # sim comes from its own wheel

    venv = Venv(tmp_path / "venv")
    venv.pip_install(core)
    site_dir = venv.site_packages()
    site = os.path.join(site_dir, "oar")
    assert site.startswith(venv.path)
    # Without oar-sim there is no sim device.
    r = venv.run("import oar; print('DEVICES', oar.device.get_available_device())")
    assert r.returncode == 0, r.stderr
    assert "DEVICES ['cpu']" in r.stdout

    venv.pip_wheel(os.path.join(ROOT, "plugins", "sim"), wheels)
    sim_whl = glob.glob(os.path.join(wheels, "oar_sim-*.whl"))[0]
    names = zipfile.ZipFile(sim_whl).namelist()
    assert "oar_sim/liboar_plugin_sim.so" in names
    ep = [n for n in names if n.endswith("entry_points.txt")]
    assert ep and "[oar.plugins]" in zipfile.ZipFile(sim_whl).read(ep[0]).decode()
    venv.pip_install(sim_whl)

    r = venv.run("""
        import numpy as np, oar
        print("DEVICES", oar.device.get_available_device())
        print("SIM", [r.path for r in oar._C.plugin_records() if r.loaded and r.device_type == "sim"])
        x = oar.to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]], dtype="float32"), place="sim:0")
        print("MATMUL", oar.matmul(x, x).numpy().ravel().tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr, r.stderr
    assert "DEVICES ['cpu', 'sim:0', 'sim:1']" in r.stdout
    assert "SIM ['{}/oar_sim/liboar_plugin_sim.so']".format(site_dir) in r.stdout
    assert "MATMUL [7.0, 10.0, 15.0, 22.0]" in r.stdout

    # A broken plugin distribution in the same environment (entry point to a missing .so, and to a file
    # that is no shared library) warns and changes nothing else.
    dist = os.path.join(os.path.dirname(site), "oar_broken-1.0.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: oar-broken\nVersion: 1.0\n")
    junk = tmp_path / "liboar_plugin_junk.so"
    junk.write_text("not an ELF file")
    with open(os.path.join(os.path.dirname(site), "oar_broken.py"), "w") as f:
        f.write("MISSING = {!r}\nJUNK = {!r}\n".format(str(tmp_path / "liboar_plugin_gone.so"), str(junk)))
    with open(os.path.join(dist, "entry_points.txt"), "w") as f:
        f.write("[oar.plugins]\ngone = oar_broken:MISSING\njunk = oar_broken:JUNK\n")
    r = venv.run("""
        import oar
        print("DEVICES", oar.device.get_available_device())
        print("SUM", float(oar.ones([4]).sum()))
    """)
    assert r.returncode == 0, r.stderr
    assert "DEVICES ['cpu', 'sim:0', 'sim:1']" in r.stdout and "SUM 4.0" in r.stdout
    assert "liboar_plugin_gone.so' from entry point 'gone' was not loaded" in r.stderr
    assert "liboar_plugin_junk.so' from entry point 'junk' was not loaded" in r.stderr
