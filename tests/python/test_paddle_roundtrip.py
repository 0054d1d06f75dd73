"""Round trips with the real PaddlePaddle wheel (issue 5 item 8).

Forward: models Paddle builds and paddle.jit.save's (tests/fixtures/paddle/roundtrip_models.py `make`,
run under the wheel) load in oar.jit.load and oar.inference and give Paddle's outputs. Reverse: the same
architectures built with oar.nn and oar.jit.save'd load in Paddle (`run`) and give oar's eager outputs,
and the saved programs hold only Paddle op types.

Paddle runs in a subprocess with PYTHONPATH=$OAR_PADDLE_PATH (scripts/install_deps.sh installs the wheel
there; scripts/test.sh sets the variable); without a folder where `import paddle` works the module is
skipped with the reason.
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from oar import inference

from _util import BatchFills

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "fixtures", "paddle", "roundtrip_models.py")
PADDLE_PATH = os.environ.get("OAR_PADDLE_PATH", "")


def _paddle_env():
    env = dict(os.environ, FLAGS_enable_pir_api="0", PYTHONPATH=PADDLE_PATH)
    env.pop("OAR_BUILD_DIR", None)
    return env


def _paddle_problem():
    """Why Paddle cannot be used here, or None."""
    if not PADDLE_PATH:
        return "OAR_PADDLE_PATH is not set (scripts/install_deps.sh installs paddlepaddle for these tests)"
    if not os.path.isdir(PADDLE_PATH):
        return "OAR_PADDLE_PATH=%s is not a folder" % PADDLE_PATH
    r = subprocess.run([sys.executable, "-c", "import paddle; print(paddle.__version__)"], env=_paddle_env(),
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return "`import paddle` fails with PYTHONPATH=%s: %s" % (PADDLE_PATH, (r.stderr.strip().splitlines()
                                                                             or ["?"])[-1])
    return None


_PROBLEM = _paddle_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))

_spec = importlib.util.spec_from_file_location("roundtrip_models", SCRIPT)
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


def paddle(*args):
    r = subprocess.run([sys.executable, SCRIPT] + [str(a) for a in args], env=_paddle_env(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, "PaddlePaddle failed (%s):\n%s" % (" ".join(map(str, args)), r.stderr[-3000:])
    return r.stdout


@pytest.fixture(scope="module")
def paddle_made(tmp_path_factory):
    d = tmp_path_factory.mktemp("paddle_made")
    paddle("make", d)
    return d


@pytest.mark.parametrize("name", models.NAMES)
def test_oar_runs_paddle_saved_model(paddle_made, name):
    prefix = str(paddle_made / name)
    x = np.load(prefix + ".input.npy")
    want = np.load(prefix + ".output.npy")
    layer = oar.jit.load(prefix)
    np.testing.assert_allclose(layer(oar.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    # Another batch size than Paddle ran: the programs keep the batch dimension unknown.
    np.testing.assert_allclose(layer(oar.to_tensor(x[:1])).numpy(), want[:1], rtol=1e-5, atol=1e-6)

    c = inference.Config(prefix + ".pdmodel", prefix + ".pdiparams")
    p = inference.create_predictor(c)
    (inp,) = p.get_input_names()
    p.get_input_handle(inp).copy_from_cpu(x)
    p.run()
    got = p.get_output_handle(p.get_output_names()[0]).copy_to_cpu()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _oar_models():
    oar.seed(5)
    return models.build(oar)


@pytest.mark.parametrize("name", models.NAMES)
def test_paddle_runs_oar_saved_model(tmp_path, name):
    layer, spec, x = _oar_models()[name]
    layer.eval()
    want = layer(oar.to_tensor(x)).numpy()
    prefix = str(tmp_path / name)
    oar.jit.save(layer, prefix, input_spec=spec)
    # Only Paddle's op types: nothing oar-specific ("oar.*") is left for Paddle to trip over.
    types = [op._recorded_type for op in oar.jit.load(prefix).program().global_block().ops]
    assert not [t for t in types if t.startswith("oar.")], types
    # Paddle runs it at another batch size than oar traced with (the saved shapes keep -1).
    x = np.concatenate([x, x[:1] * 0.5])
    want = layer(oar.to_tensor(x)).numpy()
    np.save(str(tmp_path / "in.npy"), x)
    out = paddle("run", prefix, tmp_path / "in.npy", tmp_path / "out.npy")
    np.testing.assert_allclose(np.load(str(tmp_path / "out.npy")), want, rtol=1e-5, atol=1e-6, err_msg=out)


def test_paddle_jit_load_feeds_oar_inputs_in_order(tmp_path):
    # Paddle's jit.load takes a model's inputs in reversed feed-op order (its save prepends them).
    class Three(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = oar.nn.Linear(3, 2)

        def forward(self, a, b, c):
            return self.fc(a) - 10 * b + 3 * c

    oar.seed(5)
    layer = Three()
    spec = [oar.static.InputSpec([None, n], "float32", name) for n, name in ((3, "a"), (2, "b"), (2, "c"))]
    prefix = str(tmp_path / "three")
    oar.jit.save(layer, prefix, input_spec=spec)
    rs = np.random.RandomState(1)
    arrays = [rs.randn(4, n).astype("float32") for n in (3, 2, 2)]
    np.savez(str(tmp_path / "in.npz"), *arrays)
    paddle("jitrun", prefix, tmp_path / "in.npz", tmp_path / "out.npy")
    want = layer(*[oar.to_tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(np.load(str(tmp_path / "out.npy")), want, rtol=1e-5, atol=1e-6)


def test_paddle_runs_oar_batch_sized_fills(tmp_path):
    # zeros([x.shape[0], 4]) and ones_like(x) are exported as fill_constant with ShapeTensor /
    # ShapeTensorList from the feed's shape, so Paddle runs them at any batch size.
    oar.seed(5)
    layer = BatchFills()
    prefix = str(tmp_path / "fills")
    oar.jit.save(layer, prefix, input_spec=[oar.static.InputSpec([None, 3], "float32", "x")])
    for batch in (2, 7):
        x = np.random.RandomState(batch).randn(batch, 3).astype("float32")
        np.savez(str(tmp_path / "in.npz"), x)
        paddle("jitrun", prefix, tmp_path / "in.npz", tmp_path / "out.npy")
        np.testing.assert_allclose(np.load(str(tmp_path / "out.npy")), layer(oar.to_tensor(x)).numpy(), rtol=1e-5)


def _test_binary(name):
    root = os.path.normpath(os.path.join(HERE, "..", ".."))
    exe = os.path.join(root, os.environ.get("OAR_BUILD_DIR", "build"), "bin", name)
    if not os.path.exists(exe):
        pytest.skip("%s not built (scripts/build.sh; OAR_BUILD_DIR names the build folder)" % exe)
    return exe


@pytest.mark.parametrize("script, binary", [("check_oar_exported.py", "test_paddle_export"),
                                            ("check_oar_written.py", "test_program_paddle")])
def test_paddle_runs_cpp_written_programs(script, binary):
    # The checks that were hand-run before: programs the C++ tests write (oar's native ops exported to
    # Paddle's dialect: two models and every single-op mapping; a program built op by op) run in Paddle
    # and agree with oar.
    r = subprocess.run([sys.executable, os.path.join(HERE, "..", "fixtures", "paddle", script),
                        _test_binary(binary)], env=_paddle_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
