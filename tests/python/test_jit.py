"""oar.jit: to_static (results and gradients equal to eager, the program cache), jit.save / jit.load
(round trip, fine-tuning the loaded layer, oar.load of a jit model)."""
import os

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.static import InputSpec


class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = oar.nn.Linear(6, 16)
        self.bn = oar.nn.BatchNorm1D(16)
        self.fc2 = oar.nn.Linear(16, 4)

    def forward(self, x):
        h = F.relu(self.bn(self.fc1(x)))
        return self.fc2(h).reshape([-1, 2, 2])


def _twins():
    oar.seed(5)
    a = Net()
    b = Net()
    b.set_state_dict({k: oar.to_tensor(v.numpy()) for k, v in a.state_dict().items()})
    return a, b


def test_to_static_function_matches_eager():
    def f(x, y, scale=2.0):
        z = oar.matmul(x, y) * scale
        return z.sum(axis=1), F.softmax(z)

    sf = oar.jit.to_static(f)
    rs = np.random.RandomState(0)
    x, y = oar.to_tensor(rs.randn(3, 4).astype("float32")), oar.to_tensor(rs.randn(4, 5).astype("float32"))
    got = sf(x, y)
    ref = f(x, y)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-6, atol=1e-6)
    assert len(sf._cache) == 1
    sf(x, y)
    assert len(sf._cache) == 1  # same signature: cached
    sf(x, y, scale=3.0)
    assert len(sf._cache) == 2  # a Python argument is part of the signature
    x2 = oar.to_tensor(rs.randn(7, 4).astype("float32"))
    np.testing.assert_allclose(sf(x2, y)[0].numpy(), f(x2, y)[0].numpy(), rtol=1e-6, atol=1e-6)


def test_to_static_layer_training_matches_eager(device):
    oar.set_device(device)
    a, b = _twins()
    a = oar.jit.to_static(a)
    oa = oar.optimizer.Adam(0.01, parameters=a.parameters())
    ob = oar.optimizer.Adam(0.01, parameters=b.parameters())
    rs = np.random.RandomState(1)
    for step in range(3):
        x = oar.to_tensor(rs.randn(8, 6).astype("float32"))
        t = oar.to_tensor(rs.randn(8, 2, 2).astype("float32"))
        la = F.mse_loss(a(x), t)
        lb = F.mse_loss(b(x), t)
        np.testing.assert_allclose(la.numpy(), lb.numpy(), rtol=1e-5, atol=1e-6, err_msg=str(step))
        la.backward()
        lb.backward()
        for (k, pa), pb in zip(a.named_parameters(), b.parameters()):
            assert (pa.grad is None) == (pb.grad is None), k  # BatchNorm's statistics get none
            if pb.grad is not None:
                np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
        oa.step()
        ob.step()
        oa.clear_grad()
        ob.clear_grad()
    # BatchNorm running statistics were updated through the program, in place.
    np.testing.assert_allclose(a.bn._mean.numpy(), b.bn._mean.numpy(), rtol=1e-5, atol=1e-6)
    a.eval()
    b.eval()
    x = oar.to_tensor(rs.randn(2, 6).astype("float32"))
    np.testing.assert_allclose(a(x).numpy(), b(x).numpy(), rtol=1e-5, atol=1e-6)


def test_to_static_decorator_on_method():
    class M(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.w = self.create_parameter([3, 3])

        @oar.jit.to_static
        def forward(self, x):
            return oar.matmul(x, self.w).tanh()

    oar.seed(0)
    m = M()
    x = oar.to_tensor(np.ones((2, 3), "float32"))
    ref = oar.matmul(x, m.w).tanh().numpy()
    np.testing.assert_allclose(m(x).numpy(), ref, rtol=1e-6)
    assert "oar.tanh" in str(m.forward.main_program)


def test_enable_to_static_false_runs_eagerly():
    calls = []

    @oar.jit.to_static
    def f(x):
        calls.append(1)
        return x + 1

    x = oar.ones([2])
    oar.jit.enable_to_static(False)
    try:
        f(x)
        f(x)
        assert len(calls) == 2
    finally:
        oar.jit.enable_to_static(True)
    f(x)
    f(x)
    assert len(calls) == 3  # traced once, then the program runs


def test_jit_save_load_roundtrip(tmp_path):
    a, _ = _twins()
    a.eval()
    path = str(tmp_path / "net" / "model")
    oar.jit.save(a, path, input_spec=[InputSpec([None, 6], "float32", "x")])
    for ext in (".pdmodel", ".pdiparams", ".pdiparams.info"):
        assert os.path.exists(path + ext)
    loaded = oar.jit.load(path)
    assert isinstance(loaded, oar.jit.TranslatedLayer) and isinstance(loaded, oar.nn.Layer)
    rs = np.random.RandomState(2)
    for n in (1, 5):
        x = oar.to_tensor(rs.randn(n, 6).astype("float32"))
        np.testing.assert_allclose(loaded(x).numpy(), a(x).numpy(), rtol=1e-5, atol=1e-6)
    # The saved program is an inference program: feed, forward ops, fetch.
    types = [op.type for op in loaded.program().global_block().ops]
    assert types[0] == "feed" and types[-1] == "fetch"
    # oar.load of a jit model gives its parameters by structured name.
    state = oar.load(path)
    np.testing.assert_allclose(state["fc1.weight"].numpy(), a.fc1.weight.numpy())


def test_jit_save_multi_input_feed_order(tmp_path):
    # Paddle writes one feed op per input, prepended, so the ops run in descending `col` order; its
    # jit.load reverses the op order to get the inputs (and ignores col), so oar must write the same.
    class Three(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = oar.nn.Linear(3, 2)

        def forward(self, a, b, c):
            return self.fc(a) - 10 * b + c

    m = Three()
    path = str(tmp_path / "three")
    oar.jit.save(m, path, input_spec=[InputSpec([None, 3], "float32", "a"), InputSpec([None, 2], "float32", "b"),
                                      InputSpec([None, 2], "float32", "c")])
    loaded = oar.jit.load(path)
    feeds = [(op.output("Out")[0], op.attr("col")) for op in loaded.program().global_block().ops if op.type == "feed"]
    assert feeds == [("c", 2), ("b", 1), ("a", 0)]
    rs = np.random.RandomState(0)
    a, b, c = (oar.to_tensor(rs.randn(4, n).astype("float32")) for n in (3, 2, 2))
    np.testing.assert_allclose(loaded(a, b, c).numpy(), m(a, b, c).numpy(), rtol=1e-6, atol=1e-6)


def test_translated_layer_fine_tunes(tmp_path):
    oar.seed(3)
    m = oar.nn.Sequential(oar.nn.Linear(4, 4), oar.nn.ReLU(), oar.nn.Linear(4, 1))
    path = str(tmp_path / "m")
    oar.jit.save(m, path, input_spec=[InputSpec([None, 4])])
    t = oar.jit.load(path)
    t.train()
    params = t.parameters()
    assert len(params) == 4 and all(not p.stop_gradient for p in params)
    opt = oar.optimizer.SGD(0.1, parameters=params)
    x = oar.to_tensor(np.random.RandomState(0).randn(16, 4).astype("float32"))
    y = oar.zeros([16, 1])
    first = None
    for _ in range(20):
        loss = F.mse_loss(t(x), y)
        if first is None:
            first = float(loss)
        loss.backward()
        opt.step()
        opt.clear_grad()
    assert float(loss) < first * 0.5


def test_jit_errors(tmp_path):
    with pytest.raises(ValueError, match="no model file"):
        oar.jit.load(str(tmp_path / "missing"))
    m = oar.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="input_spec"):
        oar.jit.save(m, str(tmp_path / "x"))
    with pytest.raises(ValueError, match="bad extent"):
        InputSpec([2, "a"])


def test_jit_saved_model_runs_in_the_predictor(tmp_path):
    """A model saved by jit.save runs in the inference API (C++ predictor) with the eager results."""
    import oar.inference as inference
    oar.seed(4)
    m = oar.vision.models.LeNet()
    m.eval()
    path = str(tmp_path / "lenet")
    oar.jit.save(m, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])
    config = inference.Config(path + ".pdmodel", path + ".pdiparams")
    predictor = inference.create_predictor(config)
    assert predictor.get_input_names() == ["image"]
    x = np.random.RandomState(0).randn(3, 1, 28, 28).astype("float32")
    h = predictor.get_input_handle("image")
    h.reshape(x.shape)
    h.copy_from_cpu(x)
    predictor.run()
    out = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    np.testing.assert_allclose(out, m(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_to_static_called_twice_in_one_graph():
    oar.seed(6)
    a = oar.nn.Sequential(oar.nn.Linear(3, 3), oar.nn.Tanh())
    b = oar.nn.Sequential(oar.nn.Linear(3, 3), oar.nn.Tanh())
    b.set_state_dict({k: oar.to_tensor(v.numpy()) for k, v in a.state_dict().items()})
    sa = oar.jit.to_static(a)
    x = oar.to_tensor(np.random.RandomState(0).randn(4, 3).astype("float32"))
    (sa(sa(x)) * 2).sum().backward()  # the second run happens before the first one's backward
    (b(b(x)) * 2).sum().backward()
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-5, atol=1e-6)
    # A forward with gradients on but no backward does not block the fast path afterwards.
    sa(x)
    cp = next(iter(sa.forward._cache.values()))
    import gc
    gc.collect()
    assert cp._pending == 0


def test_to_static_input_gradient():
    @oar.jit.to_static
    def f(x):
        return (x * x).sum()

    x = oar.to_tensor(np.array([1.0, -2.0, 3.0], "float32"), stop_gradient=False)
    f(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])


def test_to_static_setitem_matches_eager(device):
    """x[index] = v inside to_static: values and gradients as eager (the write is recorded out of place)."""
    def f(x, w):
        y = x * w
        y[:, 0] = 0.0
        y[1] = y[1] * 3.0
        y[y < -1.0] = -1.0
        return (y * y).sum()

    rs = np.random.RandomState(5)
    xs, ws = rs.randn(3, 4).astype("float32"), rs.randn(3, 4).astype("float32")
    outs = []
    for fn in (f, oar.jit.to_static(f)):
        x = oar.to_tensor(xs, place=device)
        w = oar.to_tensor(ws, place=device, stop_gradient=False)
        loss = fn(x, w)
        loss.backward()
        outs.append((loss.numpy(), w.grad.numpy()))
    for got, want in zip(outs[1], outs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _branchy(x):
    if x.sum() > 0:  # a tensor condition: program control flow, decided per call
        y = x * 2
    else:
        y = -x
    i = oar.zeros([], "int64")
    while i < x.shape[0]:  # a tensor loop condition
        y = y + 1
        i = i + 1
    return y


def _early(x):
    if x.mean() > 1:
        return x * 10
    y = x + 1
    if y.sum() > 5:
        return y
    return -y


@pytest.mark.parametrize("fn", [_branchy, _early])
def test_to_static_tensor_control_flow_matches_eager(fn):
    sf = oar.jit.to_static(fn)
    for v in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], [0.5, 0.5, 0.5], [3.0, 3.0, 3.0]):
        x = oar.to_tensor(np.array(v, "float32"))
        np.testing.assert_allclose(sf(x).numpy(), fn(x).numpy(), rtol=1e-6, err_msg=str(v))
    assert len(sf._cache) == 1  # one program: the branches are taken at run time
    types = [op.type for op in next(iter(sf._cache.values())).main_program.global_block().ops]
    assert "conditional_block" in types


def test_cpp_sample_runs_a_model_saved_from_python(tmp_path):
    """samples/infer_cpp (C++ only, no Python) runs a model that jit.save wrote, with eager's result."""
    import subprocess
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    exe = os.path.join(root, os.environ.get("OAR_BUILD_DIR", "build"), "bin", "oar_infer_cpp")
    if not os.path.exists(exe):
        pytest.skip("the C++ sample is not built ({})".format(exe))
    oar.seed(7)
    m = oar.vision.models.LeNet()
    m.eval()
    path = str(tmp_path / "lenet")
    oar.jit.save(m, path, input_spec=[InputSpec([None, 1, 28, 28], "float32", "x")])
    x = np.random.RandomState(1).randn(2, 1, 28, 28).astype("float32")
    np.save(str(tmp_path / "x.npy"), x)
    np.save(str(tmp_path / "y.npy"), m(oar.to_tensor(x)).numpy())
    r = subprocess.run([exe, path, "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "y.npy")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check: max abs difference" in r.stdout and "MISMATCH" not in r.stdout, r.stdout
