"""CUDA graphs through the gpu plugin (ABI 1.3: cudaStreamBeginCapture in relaxed mode, cudaGraphInstantiate,
cudaGraphLaunch; docs/device_graph.md): an eager op chain captured and replayed against numpy, with new input
contents; refusals that must not invalidate the CUDA capture; and to_static small-batch training through
wrap_cuda_graph equal to plain to_static within 1e-5 for a few steps. Skipped where no GPU is usable, with the
runtime's reason. The same stack runs on the sim in tests/python/test_device_graph.py."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import _C
from oar.device.cuda import graphs

_WHY = None if oar.device.cuda.device_count() > 0 else (oar.device.cuda.unavailable_reason() or
                                                         "no gpu plugin (liboar_plugin_cuda.so) is loaded")
pytestmark = pytest.mark.skipif(_WHY is not None, reason="no usable GPU: {}".format(_WHY))
G = "gpu:0"
rng = np.random.default_rng(3)


def _t(a):
    return oar.to_tensor(np.asarray(a, np.float32), place=G)


def test_cuda_graph_is_supported():
    assert graphs.is_cuda_graph_supported()


def test_cuda_graph_eager_chain_replays_with_new_inputs():
    x, w, b = rng.standard_normal((16, 32)), rng.standard_normal((32, 8)), rng.standard_normal(8)
    tx, tw, tb = _t(x), _t(w), _t(b)
    oar.device.synchronize(G)
    g = graphs.CUDAGraph(place=G)
    g.capture_begin()
    y = F.softmax(F.relu(oar.matmul(tx, tw) + tb) * 0.5 + oar.tanh(tx).sum(), axis=-1)
    g.capture_end()

    def ref(x):
        z = np.maximum(x @ w + b, 0) * 0.5 + np.tanh(x).sum()
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    g.replay()
    np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-4, atol=1e-5)
    for _ in range(3):
        x = rng.standard_normal((16, 32))
        tx.set_value(x.astype(np.float32))
        g.replay()
        np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-4, atol=1e-5)
    g.reset()


def test_cuda_graph_refusals_keep_the_capture_valid():
    tx = _t([1.0, 2.0])
    oar.device.synchronize(G)
    g = graphs.CUDAGraph(place=G)
    g.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="while it captures a graph"):
            tx.numpy()
        oar.set_device(G)
        with pytest.raises(RuntimeError, match="a random op cannot be captured"):
            oar.rand([3])
        oar.set_device("cpu")
        y = tx * tx
    finally:
        g.capture_end()
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])


def _losses(graphed, steps):
    oar.seed(0)
    oar.set_device(G)
    try:
        model = oar.nn.Sequential(oar.nn.Linear(16, 32), oar.nn.ReLU(), oar.nn.Linear(32, 32), oar.nn.Tanh(),
                                  oar.nn.Linear(32, 4))
        model = graphs.wrap_cuda_graph(model) if graphed else oar.jit.to_static(model)
        opt = oar.optimizer.Adam(1e-2, parameters=model.parameters())
        data = np.random.default_rng(5)
        out = []
        for _ in range(steps):
            x = oar.to_tensor(data.standard_normal((8, 16)).astype(np.float32))
            y = oar.to_tensor(data.integers(0, 4, (8,)).astype(np.int64))
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            out.append(float(loss))
        return np.array(out)
    finally:
        oar.set_device("cpu")


def test_cuda_graph_to_static_training_equals_plain_to_static():
    plain = _losses(False, 6)
    graphed = _losses(True, 6)
    np.testing.assert_allclose(graphed, plain, rtol=1e-5, atol=1e-5)
    assert plain[-1] < plain[0]  # it trains
