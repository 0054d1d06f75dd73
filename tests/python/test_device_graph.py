"""Graph capture (oar.device.cuda.graphs, ABI 1.3) for real on sim:0, a custom device whose streams are worker
threads: captured work is recorded, not run; replay reruns it on the current contents of its inputs; reset gives
the pool back; what cannot be replayed is refused; wrap_cuda_graph's to_static runs equal plain runs.
docs/device_graph.md."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import _C
from oar.device.cuda import graphs

SIM = "sim:0"
pytestmark = pytest.mark.skipif(SIM not in oar.device.get_available_device(), reason="no sim device")

rng = np.random.default_rng(7)


def _t(a):
    return oar.to_tensor(np.asarray(a, np.float32), place=SIM)


def _used():
    free, total = _C._device_memory_info(SIM)
    return total - free


def test_sim_supports_capture_and_no_gpu_means_unsupported():
    assert _C._graph_supported(SIM)
    assert graphs.is_cuda_graph_supported() == (oar.device.cuda.device_count() > 0)


def test_capture_replay_of_an_op_chain_follows_the_inputs_contents():
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal(5)
    tx, tw, tb = _t(x), _t(w), _t(b)
    g = graphs.CUDAGraph(place=SIM)
    g.capture_begin()
    y = F.relu(oar.matmul(tx, tw) + tb) * tx.sum()
    g.capture_end()

    def ref(x):
        return np.maximum(x @ w + b, 0) * x.sum()

    g.replay()
    np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-5, atol=1e-6)
    x2 = rng.standard_normal((4, 3))
    tx.set_value(x2.astype(np.float32))  # new contents, in place, outside the capture
    g.replay()
    np.testing.assert_allclose(y.numpy(), ref(x2), rtol=1e-5, atol=1e-6)
    g.replay()  # replays are repeatable
    np.testing.assert_allclose(y.numpy(), ref(x2), rtol=1e-5, atol=1e-6)
    g.reset()
    np.testing.assert_allclose(y.numpy(), ref(x2), rtol=1e-5, atol=1e-6)  # y outlives the reset


def test_capture_runs_nothing_until_replay():
    tx = _t([1.0, 2.0])
    g = graphs.CUDAGraph(place=SIM)
    g.capture_begin()
    y = tx + tx
    g.capture_end()
    oar.device.synchronize(SIM)
    # Nothing ran: y is the pool's uninitialised memory, not 2 * x... unless replayed. The replayed value:
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    tx.set_value(np.array([5.0, 7.0], np.float32))
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])  # no replay, no recompute
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [10.0, 14.0])


def test_reset_gives_the_pool_back_to_the_device():
    tx = _t(rng.standard_normal(4096))
    oar.device.synchronize(SIM)
    before = _used()
    g = graphs.CUDAGraph(place=SIM)
    g.capture_begin()
    y = tx * tx + tx
    g.capture_end()
    assert g.pool_stats()["reserved"] > 0
    assert _used() > before
    g.replay()
    expect = y.numpy()
    g.reset()
    assert _used() > before, "y still lives in the pool"
    np.testing.assert_array_equal(y.numpy(), expect)
    del y
    assert _used() == before, "after reset and the last tensor, the pool's memory is back"
    assert g.pool_stats()["reserved"] == 0


def test_what_cannot_be_replayed_is_refused_and_the_capture_stays_usable():
    tx = _t([1.0, 2.0])
    g = graphs.CUDAGraph(place=SIM)
    g.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="a copy to the host .* while it captures a graph"):
            tx.numpy()
        with pytest.raises(RuntimeError, match="a copy from the host to sim:0 while it captures"):
            _t([3.0])
        with pytest.raises(RuntimeError, match="exp: .*the CPU fallback cannot be captured into a graph on sim:0"):
            oar.exp(tx)
        oar.set_device(SIM)
        with pytest.raises(RuntimeError, match="a random op cannot be captured"):
            oar.rand([3])
        oar.set_device("cpu")
        y = tx * tx  # still capturing
    finally:
        g.capture_end()
    g.replay()
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])


def test_api_errors():
    with pytest.raises(NotImplementedError, match="cpu has no graph capture"):
        graphs.CUDAGraph(place="cpu")
    with pytest.raises(ValueError, match="mode must be one of"):
        graphs.CUDAGraph(place=SIM, mode="eager")
    g = graphs.CUDAGraph(place=SIM)
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()
    with pytest.raises(NotImplementedError, match="opaque graph"):
        g.print_to_dot_files("/tmp/x")
    g.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="another graph is capturing this device"):
            graphs.CUDAGraph(place=SIM).capture_begin()
    finally:
        g.capture_end()
    with pytest.raises(RuntimeError, match="already holds a capture; reset"):
        g.capture_begin()
    oar.set_device(SIM)
    try:
        assert graphs.CUDAGraph().place == _C.Place(SIM)  # place=None: the current device
    finally:
        oar.set_device("cpu")


class _Step(oar.optimizer.SGD):
    """An SGD whose "update" uses only ops the sim has kernels for (p + g into a new tensor; the sim has no
    in-place assign kernel), so it can be captured; what it computes does not matter here, only that a step
    was taken during the capture."""

    def _step_params(self, params, group, slot):
        self.updated = [p + p.grad for p in params if p.grad is not None]


def test_replay_refuses_an_optimizer_step_captured_with_another_learning_rate():
    sched = oar.optimizer.lr.StepDecay(learning_rate=0.5, step_size=1)
    w = _t([1.0, 1.0])
    w.stop_gradient = False
    (w * w).sum().backward()  # w.grad = 2 w, on sim
    opt = _Step(learning_rate=sched, parameters=[w])
    g = graphs.CUDAGraph(place=SIM)
    g.capture_begin()
    try:
        opt.step()
    finally:
        g.capture_end()
    g.replay()
    np.testing.assert_array_equal(opt.updated[0].numpy(), [3.0, 3.0])
    sched.step()  # the rate changes: the captured step would not see it
    with pytest.raises(RuntimeError, match="learning rate.*0.5.*0.05"):
        g.replay()
    g.reset()
    g.capture_begin()  # a new capture with the new rate replays
    try:
        opt.step()
    finally:
        g.capture_end()
    g.replay()
    np.testing.assert_array_equal(opt.updated[0].numpy(), [3.0, 3.0])


# ---- to_static through wrap_cuda_graph ------------------------------------------------------------------------
def _mlp_fn(x, w1, w2):
    h = F.relu(oar.matmul(x, w1))
    return oar.matmul(h, w2) + h.sum()


def test_wrap_cuda_graph_function_without_gradients():
    w1, w2 = rng.standard_normal((6, 8)), rng.standard_normal((8, 3))
    tw1, tw2 = _t(w1), _t(w2)
    f = graphs.wrap_cuda_graph(_mlp_fn)
    plain = oar.jit.to_static(_mlp_fn)

    def ref(x):
        h = np.maximum(x @ w1, 0)
        return h @ w2 + h.sum()

    outs = []
    with oar.no_grad():
        for _ in range(3):
            x = rng.standard_normal((4, 6))
            y = f(_t(x), tw1, tw2)
            np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(y.numpy(), plain(_t(x), tw1, tw2).numpy(), rtol=1e-6, atol=1e-6)
            outs.append((y, ref(x)))
    for y, r in outs:  # results are copies: later replays did not overwrite them
        np.testing.assert_allclose(y.numpy(), r, rtol=1e-5, atol=1e-5)


def test_wrap_cuda_graph_arguments():
    with pytest.raises(ValueError, match="mode must be one of"):
        graphs.wrap_cuda_graph(_mlp_fn, mode="sometimes")
    with pytest.raises(ValueError, match="memory_pool must be"):
        graphs.wrap_cuda_graph(_mlp_fn, memory_pool=3)
    f = graphs.wrap_cuda_graph(_mlp_fn, memory_pool="new")
    assert f._cuda_graph_capture_mode == "thread_local"


class _Net(oar.nn.Layer):
    """Only ops the sim has kernels for, forward and backward (matmul, multiply, sum and their gradients)."""

    def __init__(self):
        super().__init__()
        self.w1 = self.create_parameter([6, 8])
        self.w2 = self.create_parameter([8, 3])

    def forward(self, x):
        h = oar.matmul(x, self.w1)
        y = oar.matmul(h * h, self.w2)
        return (y * y).sum()


def _train(graphed, steps=4):
    oar.seed(1)
    oar.set_device(SIM)
    try:
        net = _Net()
        net = graphs.wrap_cuda_graph(net) if graphed else oar.jit.to_static(net)
        opt = oar.optimizer.SGD(1e-3, parameters=net.parameters())  # outside the graph (the CPU fallback here)
        data = np.random.default_rng(0)
        losses, grads = [], []
        for _ in range(steps):
            x = oar.to_tensor(data.standard_normal((4, 6)).astype(np.float32))
            loss = net(x)
            loss.backward()
            grads.append(net.w1.grad.numpy().copy())
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        return np.array(losses), grads, net
    finally:
        oar.set_device("cpu")


def test_wrap_cuda_graph_training_equals_plain_to_static():
    plain, pgrads, _ = _train(False)
    graphed, ggrads, net = _train(True)
    np.testing.assert_allclose(graphed, plain, rtol=1e-5, atol=1e-5)
    for a, b in zip(ggrads, pgrads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    cp = next(iter(net.forward._cache.values()))
    assert cp._train.run.graphs_captured, "the forward and backward runs were not captured"


def test_wrap_cuda_graph_refuses_a_random_op_with_its_name():
    def noisy(x):
        return x + oar.rand([3])

    f = graphs.wrap_cuda_graph(noisy)
    oar.set_device(SIM)
    try:
        with oar.no_grad():
            with pytest.raises(RuntimeError, match="uniform: a random op cannot be captured"):
                f(_t([1.0, 2.0, 3.0]))
            # the failed capture was aborted: the device works and captures again
            g = graphs.CUDAGraph()
            x = _t([1.0])
            g.capture_begin()
            y = x + x
            g.capture_end()
            g.replay()
            np.testing.assert_array_equal(y.numpy(), [2.0])
    finally:
        oar.set_device("cpu")


def test_wrap_cuda_graph_refuses_parameters_given_new_memory_since_the_capture():
    _, _, net = _train(True, steps=2)
    net.to("sim:1")
    net.to(SIM)  # the same Parameter objects, in new memory: the graphs would read the old memory
    oar.set_device(SIM)
    try:
        x = oar.to_tensor(np.ones((4, 6), np.float32))
        with pytest.raises(RuntimeError, match="given new memory since the capture"):
            net(x)
    finally:
        oar.set_device("cpu")


def _sim_chain(x, w):
    # Same-sized temporaries on sim kernels only (multiply, add, relu): a plain run releases each into the
    # executor's buffer pool and later runs write into them (decision 145).
    a = x * w
    b = a + x
    c = F.relu(b)
    return c * b + a


def test_capture_of_an_executor_that_recycled_buffers_takes_none_of_them():
    # A plain run fills the scope's buffer pool with memory of the device's allocator. The capture run must
    # not write into it (a replay would write there after the pool handed it on), only into the graph's pool.
    f = oar.jit.to_static(_sim_chain)
    w = rng.standard_normal((16, 32))
    tw = _t(w)

    def ref(x):
        b = x * w + x
        return np.maximum(b, 0) * b + x * w

    with oar.no_grad():
        for _ in range(3):
            x = rng.standard_normal((16, 32))
            np.testing.assert_allclose(f(_t(x), tw).numpy(), ref(x), rtol=1e-5, atol=1e-5)
        (cp,) = f._cache.values()
        exe = cp._exe
        assert exe.stats()["reused"] > 0  # the plain runs did recycle
        run = _C._GraphedRun()
        x = rng.standard_normal((16, 32))
        (y,) = run.run(exe, [_t(x), tw])  # captures, then replays once
        assert run.captured and exe.stats()["reused"] == 0  # the capture run took no pooled buffer
        np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-5, atol=1e-5)
        for _ in range(2):  # plain runs and replays interleaved keep each other's values
            x1, x2 = rng.standard_normal((16, 32)), rng.standard_normal((16, 32))
            p = f(_t(x1), tw)
            (r,) = run.run(exe, [_t(x2), tw])
            np.testing.assert_allclose(p.numpy(), ref(x1), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(r.numpy(), ref(x2), rtol=1e-5, atol=1e-5)
