"""Plugins found through Python entry points (group "oar.plugins"): a fake installed distribution on
sys.path declares them; `import oar` in a fresh interpreter must try each one with the real loader and
report bad ones as warnings, never fail to import."""
import os
import subprocess
import sys
import textwrap


def make_distribution(root, entry_points):
    dist = os.path.join(root, "oar_fake_backend-1.0.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: oar-fake-backend\nVersion: 1.0\n")
    with open(os.path.join(dist, "entry_points.txt"), "w") as f:
        f.write("[oar.plugins]\n" + "".join("{} = {}\n".format(k, v) for k, v in entry_points.items()))


def run(root, code):
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-W", "always", "-c", code], env=env, capture_output=True, text=True,
                          cwd=root)


def test_entry_points_are_loaded_with_reasons(tmp_path):
    root = str(tmp_path)
    bogus = os.path.join(root, "liboar_plugin_bogus.so")
    with open(bogus, "w") as f:
        f.write("not an ELF file")
    with open(os.path.join(root, "fake_backend.py"), "w") as f:
        f.write(textwrap.dedent("""
            PLUGIN = {!r}
            def plugin_path():
                return PLUGIN
            def plugin_dir():
                import os
                return [os.path.dirname(PLUGIN)]
            def broken():
                raise OSError("driver not installed")
        """.format(bogus)))
    make_distribution(root, {"bogus": "fake_backend:plugin_path", "bogusdir": "fake_backend:plugin_dir",
                             "broken": "fake_backend:broken", "missing": "no_such_module:x"})
    r = run(root, textwrap.dedent("""
        import oar
        recs = [r for r in oar._C.plugin_records() if r.path.endswith("liboar_plugin_bogus.so")]
        print("RECORDS", len(recs), all(not r.loaded and r.reason for r in recs))
        print("SUM", float(oar.ones([3]).sum()))
    """))
    assert r.returncode == 0, r.stderr
    assert "RECORDS 2 True" in r.stdout  # the file itself and the directory both led to the real loader
    assert "SUM 3.0" in r.stdout
    assert "entry point 'bogus'" in r.stderr and "was not loaded" in r.stderr
    assert "entry point 'broken'" in r.stderr and "driver not installed" in r.stderr
    assert "entry point 'missing'" in r.stderr and "ModuleNotFoundError" in r.stderr


def test_plugin_that_finds_no_device_is_skipped_without_a_warning(tmp_path):
    """A GPU wheel installed where there is no GPU: the plugin is refused because its device count fails
    (tests/plugins/zero_devices.cc, as CUDA without a driver); that is no broken install, so import oar
    does not warn, and the reason is in the records and in every call that asks for the device type."""
    plugin = os.path.join(os.path.dirname(__file__), "..", "..", os.environ.get("OAR_BUILD_DIR", "build"), "tests",
                          "plugins", "liboar_plugin_zero_devices.so")
    if not os.path.exists(plugin):
        import pytest
        pytest.skip("test plugins not built (cmake --build build --target oar_test_plugins)")
    root = str(tmp_path)
    with open(os.path.join(root, "nodevice_backend.py"), "w") as f:
        f.write("PLUGIN = {!r}\n".format(os.path.abspath(plugin)))
    make_distribution(root, {"nodevice": "nodevice_backend:PLUGIN"})
    r = run(root, textwrap.dedent("""
        import oar
        rec = [r for r in oar._C.plugin_records() if r.path.endswith("liboar_plugin_zero_devices.so")]
        print("REASON", rec[0].reason if rec else None)
        print("SUM", float(oar.ones([3]).sum()))
    """))
    assert r.returncode == 0, r.stderr
    assert "REASON found no usable device: " in r.stdout and "SUM 3.0" in r.stdout
    assert "was not loaded" not in r.stderr, r.stderr
