"""The from-scratch plugin skeleton of docs/plugin_guide.md (samples/plugin_skeleton/skeleton.cc): the guide
shows exactly the file that is built, and the plugin, with only a device table, a memory table and two
kernels, passes the conformance suite; the suite skips, with a reason, what it legitimately leaves out."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "samples", "plugin_skeleton", "skeleton.cc")
BUILT = os.path.join(ROOT, os.environ.get("OAR_BUILD_DIR", "build"), "tests", "plugins", "liboar_plugin_skeleton.so")


def test_the_guide_shows_the_built_skeleton():
    guide = open(os.path.join(ROOT, "docs", "plugin_guide.md")).read()
    m = re.search(r"<!-- begin skeleton: samples/plugin_skeleton/skeleton.cc -->\n```cpp\n(.*?)```\n"
                  r"<!-- end skeleton -->", guide, re.S)
    assert m, "docs/plugin_guide.md lost its skeleton block"
    assert m.group(1) == open(SOURCE).read(), "the guide's skeleton differs from samples/plugin_skeleton/skeleton.cc"


def test_the_skeleton_passes_the_conformance_suite_with_skips(tmp_path):
    if not os.path.exists(BUILT):
        pytest.skip("{} is not built".format(BUILT))
    shutil.copy(BUILT, str(tmp_path / "liboar_plugin_skeleton.so"))
    env = dict(os.environ, OAR_PLUGIN_PATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "oar.testing.plugin_conformance", "--device", "skeleton", "-v"],
                       capture_output=True, text=True, timeout=600, env=env, cwd="/")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "device type 'skeleton' (plugin skeleton) CONFORMS" in out, out
    m = re.search(r"(\d+) passed, 0 failed, (\d+) skipped", out)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, out
    # What it leaves out is skipped with the reason, not failed: streams/events and collectives.
    skips = re.findall(r"^SKIP (\S+) .*\n\s+(.*)$", out, re.M)
    names = [n for n, _ in skips]
    assert any(n.startswith("collectives.") for n in names), out
    assert any(n.startswith("streams.") for n in names), out
    assert all(reason.strip() for _, reason in skips), out
    # Its kernels ran and were checked against the CPU plugin's.
    for k in ("add.float32", "add.float64", "multiply.float32", "multiply.float64"):
        assert "PASS kernels." + k in out, out
