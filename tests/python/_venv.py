"""Wheels and fresh virtual environments for the tests that follow a user's install path (packaging,
custom C++ ops, the vendor plugin kit). The core wheel is built once per test session; each test makes
its own virtual environment and installs wheels into it."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Child processes must see only what the test sets: no plugin folders from the caller's shell.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("OAR_PLUGIN_PATH", "CUSTOM_DEVICE_ROOT")}

_core_wheel_cache = {}


def need_tools(*tools):
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip("{} not found".format(t))


def run_python(code, env=None, python=sys.executable, cwd="/"):
    return subprocess.run([python, "-W", "always", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env if env is not None else CLEAN_ENV, cwd=cwd)


def pip_wheel(src, outdir, *extra, python=sys.executable, env=None):
    """`pip wheel` of the project at src into outdir (no build isolation: build tools come from the caller's
    environment, as scripts/install_deps.sh installs them)."""
    env = dict(env or CLEAN_ENV)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    r = subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", outdir,
                        src, *extra], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def core_wheel(tmp_path_factory):
    """The core wheel without the bundled sim plugin: OAR_CORE_WHEEL if given, else `pip wheel .` reusing
    the persistent build folder of an earlier `pip install .` of this tree (incremental: seconds). Built
    once per session."""
    given = os.environ.get("OAR_CORE_WHEEL")
    if given:
        return given
    if "core" not in _core_wheel_cache:
        pytest.importorskip("scikit_build_core")
        if not glob.glob(os.path.join(ROOT, "build", "python", "*", "CMakeCache.txt")):
            pytest.skip("no core wheel: set OAR_CORE_WHEEL, or `pip install .` this tree first so that its "
                        "build folder (build/python) can be reused")
        outdir = str(tmp_path_factory.mktemp("core_wheel"))
        pip_wheel(ROOT, outdir, "-C", "cmake.define.OAR_WHEEL_SIM=OFF")
        _core_wheel_cache["core"] = glob.glob(os.path.join(outdir, "oar-*.whl"))[0]
    return _core_wheel_cache["core"]


class Venv:
    """A fresh virtual environment. System site-packages give numpy, pip, cmake and scikit-build-core;
    the oar installed into the venv comes first on its sys.path."""

    def __init__(self, path):
        pytest.importorskip("venv")
        r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(path)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip("cannot create a virtual environment: " + r.stderr.strip())
        self.path = str(path)
        self.python = os.path.join(self.path, "bin", "python")
        self.env = {k: v for k, v in CLEAN_ENV.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def pip_install(self, *wheels):
        r = subprocess.run([self.python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                            "--ignore-installed", *wheels], capture_output=True, text=True, env=self.env)
        assert r.returncode == 0, r.stdout + r.stderr

    def pip_wheel(self, src, outdir, *extra):
        """Builds the project at src with this environment's Python (so with its oar and SDK)."""
        pip_wheel(src, outdir, *extra, python=self.python, env=self.env)

    def run(self, code, cwd="/", env=None):
        e = dict(self.env)
        e.update(env or {})
        return run_python(code, env=e, python=self.python, cwd=cwd)

    def site_packages(self):
        """The folder the venv's oar package lives in."""
        r = self.run("import oar, os; print(os.path.dirname(os.path.dirname(oar.__file__)))")
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
