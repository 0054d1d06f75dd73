"""`import oar` leaves the lazy submodules unloaded (decision 111), and each of them, the names taken from
them and the Tensor methods they install still work on first use. Every check runs in a fresh interpreter,
since this test process has long loaded them all."""
import json
import math
import subprocess
import sys
import textwrap

import pytest

from oar import _lazy


def _run(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_oar_loads_none_of_the_lazy_modules():
    loaded = _run("""
        import json, sys
        import oar
        lazy = ["oar." + m for m in oar._lazy.MODULES] + ["oar.distributed.launch", "multiprocessing"]
        print(json.dumps([m for m in lazy if m in sys.modules]))
    """)
    assert loaded == []


@pytest.mark.parametrize("name", _lazy.MODULES)
def test_each_lazy_module_loads_on_attribute_access(name):
    got = _run("""
        import json, sys, types
        import oar as paddle
        before = "oar.{0}" in sys.modules
        mod = paddle.{0}
        from oar import {0} as again
        print(json.dumps([before, isinstance(mod, types.ModuleType), mod.__name__, again is mod,
                          "{0}" in dir(paddle)]))
    """.format(name))
    assert got == [False, True, "oar." + name, True, True]


def test_names_from_lazy_modules_and_what_they_compute():
    got = _run("""
        import json
        import numpy as np
        import oar as paddle
        x = paddle.to_tensor(np.array([1.0, 2.0, 0.0, 4.0], dtype="float32"))
        spec = paddle.fft.fft(x).numpy()
        net = paddle.nn.Linear(4, 2)
        print(json.dumps([
            np.allclose(spec, np.fft.fft(x.numpy())),
            paddle.Model.__module__, paddle.summary.__module__, paddle.flops.__module__,
            paddle.vision.models.resnet18.__name__,
            paddle.callbacks.EarlyStopping.__name__,
            float(paddle.distribution.Normal(0.0, 1.0).log_prob(paddle.to_tensor(0.0))),
            paddle.flops(net, [1, 4], print_detail=False),
        ]))
    """)
    assert got[0] is True
    assert got[1:4] == ["oar.hapi.model", "oar.hapi.model_summary", "oar.hapi.dynamic_flops"]
    assert got[4:6] == ["resnet18", "EarlyStopping"]
    assert got[6] == pytest.approx(-0.5 * math.log(2 * math.pi), rel=1e-6)
    assert got[7] == 4 * 2  # a Linear(4, 2) on one row: in_features * outputs, as Paddle counts


def test_tensor_methods_of_lazy_modules_load_them_on_first_call():
    got = _run("""
        import json, sys
        import numpy as np
        import oar
        x = oar.to_tensor(np.array([[0.0, 3.0], [5.0, 0.0]], dtype="float32"))
        stubs = [getattr(oar.Tensor, n)._oar_lazy_stub for n in ("is_sparse", "to_sparse_coo", "stft")]
        before = ["oar.sparse" in sys.modules, "oar.signal" in sys.modules]
        dense = x.is_sparse()
        coo = x.to_sparse_coo(2)
        real = not hasattr(oar.Tensor.is_sparse, "_oar_lazy_stub")
        try:
            x.values()
            values_error = ""
        except TypeError as e:
            values_error = str(e)
        sig = oar.to_tensor(np.sin(np.arange(256, dtype="float32") / 5))
        spec = sig.stft(64)
        ref = oar.signal.stft(sig, 64)
        print(json.dumps([stubs, before, dense, coo.is_sparse_coo(), coo.nnz(), coo.to_dense().numpy().tolist(),
                          real, values_error, spec.shape, bool(np.array_equal(spec.numpy(), ref.numpy()))]))
    """)
    stubs, before, dense, is_coo, nnz, back, real, values_error, shape, same = got
    assert stubs == [True, True, True] and before == [False, False]
    assert dense is False and is_coo is True and nnz == 2 and back == [[0.0, 3.0], [5.0, 0.0]]
    assert real  # the stub replaced itself with sparse's method
    assert "Tensor.values" in values_error and "dense" in values_error
    assert shape == [33, 17] and same


def test_loaded_modules_keep_their_real_tensor_methods():
    # A lazy module imported before any stub call (`import oar.sparse`) is not shadowed by the stubs.
    got = _run("""
        import json
        import oar.sparse, oar.signal, oar
        print(json.dumps([hasattr(getattr(oar.Tensor, n), "_oar_lazy_stub") for n in ("is_sparse", "stft")]))
    """)
    assert got == [False, False]


def test_distributed_launch_and_spawn_and_unknown_names():
    got = _run("""
        import json, sys
        import oar
        spawn = oar.distributed.spawn
        launch = oar.distributed.launch
        errors = []
        for obj, name in ((oar, "no_such_module"), (oar.distributed, "no_such_thing")):
            try:
                getattr(obj, name)
            except AttributeError as e:
                errors.append(str(e))
        print(json.dumps([callable(spawn) and spawn.__module__, launch.__name__, callable(launch.launch),
                          errors]))
    """)
    assert got[0] == "oar.distributed.spawn" and got[1] == "oar.distributed.launch" and got[2] is True
    assert "no_such_module" in got[3][0] and "no_such_thing" in got[3][1]
