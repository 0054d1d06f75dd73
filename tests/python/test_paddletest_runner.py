"""tools/paddletest: the paddle shim and the per-file runner (on a small synthetic folder, not PaddleTest)."""
import json
import os
import subprocess
import sys
import textwrap

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(REPO, "tools", "paddletest", "run.py")
SHIM = os.path.join(REPO, "tools", "paddletest", "shim")


def test_shim_aliases_oar_modules():
    code = textwrap.dedent("""
        import oar.nn  # imported before the shim: still aliased
        import paddle, oar
        import paddle.nn.functional as F
        from paddle.static import program_guard
        import paddle.optimizer.lr
        assert paddle is oar
        assert F is oar.nn.functional and paddle.nn.functional is oar.nn.functional
        assert program_guard is oar.static.program_guard
        assert paddle.optimizer.lr is oar.optimizer.lr
        assert oar.nn.functional.__spec__.name == "oar.nn.functional"
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SHIM, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_run_and_compare(tmp_path):
    folder = tmp_path / "api"
    folder.mkdir()
    (folder / "helper.py").write_text("VALUE = 3\n")
    (folder / "test_good.py").write_text(textwrap.dedent("""
        import numpy as np
        import paddle
        from helper import VALUE

        def test_relu():
            x = paddle.to_tensor(np.array([-1.0, 2.0]))
            assert paddle.nn.functional.relu(x).numpy().tolist() == [0.0, 2.0]

        def test_fails():
            raise ValueError("wrong value %d" % VALUE)
    """))
    (folder / "test_broken.py").write_text("import paddle\nimport no_such_module_here\n\ndef test_x():\n    pass\n")
    oar_json = tmp_path / "oar.json"
    out = subprocess.run([sys.executable, RUN, "run", str(folder), "--python", sys.executable, "--impl", "oar",
                          "--out", str(oar_json), "--timeout", "120"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    cases = json.loads(oar_json.read_text())["cases"]
    assert cases["test_good.py::test_relu"]["status"] == "passed"
    assert cases["test_good.py::test_fails"]["status"] == "failed"
    assert "wrong value 3" in cases["test_good.py::test_fails"]["error"]
    broken = cases["test_broken.py::<file>"]
    assert broken["status"] == "error" and "no_such_module_here" in broken["error"]
    # a reference run in which everything passed: the yardstick is 3 cases, 1 of them passes on oar
    ref = json.loads(oar_json.read_text())
    ref["impl"] = "paddle"
    ref["cases"] = {"test_good.py::test_relu": {"status": "passed", "error": ""},
                    "test_good.py::test_fails": {"status": "passed", "error": ""},
                    "test_broken.py::test_x": {"status": "passed", "error": ""}}
    ref_json = tmp_path / "paddle.json"
    ref_json.write_text(json.dumps(ref))
    out = subprocess.run([sys.executable, RUN, "compare", str(ref_json), str(oar_json)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "3 cases pass on Paddle" in out.stdout and "1 pass on oar (33%)" in out.stdout
    assert "- `good` (1): ValueError: wrong value 3" in out.stdout
    assert "- `broken` (1): the file did not load" in out.stdout
