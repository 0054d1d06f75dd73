"""A short run of the main job (samples/train_lenet.py): LeNet on the real Fashion-MNIST through
oar.Model, one epoch on the first 6,000 training images, evaluated on all 10,000 test images, with ten
steps profiled."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "samples", "train_lenet.py")
DATA = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


@pytest.mark.skipif(not os.path.exists(DATA), reason="Debian's dataset-fashion-mnist is not installed")
def test_main_job_short_run(tmp_path):
    cmd = [sys.executable, SCRIPT, "--epochs", "1", "--train-subset", "6000", "--batch-size", "64",
           "--save-dir", str(tmp_path / "lenet"), "--verbose", "2", "--log-freq", "20",
           "--profile", str(tmp_path / "prof")]
    proc = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # The progress bar, the per-epoch evaluation, the saved files and the final accuracy.
    assert "Total params: 61,610" in out
    assert re.search(r"step 80/94 - loss: [0-9.]+ - acc: [0-9.]+ - ETA: \S+ - [0-9.]+m?s/step", out), out[-3000:]
    assert "Eval samples: 10000" in out
    assert os.path.exists(str(tmp_path / "lenet" / "final.pdparams"))
    assert os.path.exists(str(tmp_path / "lenet" / "final.pdopt"))
    m = re.search(r"final test accuracy: ([0-9.]+)", out)
    assert m, out[-3000:]
    # The profiler's tables for steps 10-19 and its chrome trace (oar.profiler).
    assert "Operator Summary" in out and "Kernel Summary" in out, out[-3000:]
    # LeNet's two convolutions in each of the 10 steps; the first one's input needs no gradient
    assert re.search(r"^conv\s+20\s", out, re.M) and re.search(r"^conv_grad_input\s+10\s", out, re.M), out[-3000:]
    traces = os.listdir(str(tmp_path / "prof"))
    assert len(traces) == 1 and traces[0].startswith("lenet_time_"), traces
    # One epoch on a tenth of the data already separates most classes (0.76 when measured).
    assert float(m.group(1)) >= 0.72, out[-3000:]
