"""Helpers shared by the Python tests."""
import contextlib

import numpy as np

import oar


def check(t, expected, rtol=1e-6, atol=1e-6, dtype=None):
    """Compares a tensor with a numpy array: shape, dtype (when given) and values."""
    assert isinstance(t, oar.Tensor), type(t)
    expected = np.asarray(expected)
    got = t.numpy()
    assert t.shape == list(expected.shape), (t.shape, expected.shape)
    assert list(got.shape) == t.shape
    if dtype is not None:
        assert t.dtype == dtype, (t.dtype, dtype)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def check_grad(fn, arrays, device=None, rtol=1e-5, atol=1e-6, eps=1e-6, wrt=None):
    """The shared gradient check: compares the autograd gradients of fn(*tensors) with central finite
    differences, in float64.

    `arrays` are numpy arrays (made float64 unless integral, so index arguments can be passed too);
    `wrt` lists the positions to differentiate (default: every floating array). fn may return a
    tensor of any shape: the check differentiates sum(fn(...) * w) for a fixed random w, so every
    output element's gradient is exercised."""
    arrays = [np.asarray(a) for a in arrays]
    arrays = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    if wrt is None:
        wrt = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"]
    place = device

    def tensors(arrs, grad):
        return [oar.to_tensor(a, place=place, stop_gradient=not (grad and i in wrt)) for i, a in enumerate(arrs)]

    inputs = tensors(arrays, True)
    out = fn(*inputs)
    weight = np.random.default_rng(1234).uniform(0.5, 1.5, out.shape)
    loss = (out * oar.to_tensor(weight, dtype=out.dtype, place=place)).sum()
    loss.backward()

    def value(arrs):
        with oar.no_grad():
            o = fn(*tensors(arrs, False)).numpy().astype(np.float64)
        return float((o * weight).sum())

    for i in wrt:
        expected = np.zeros_like(arrays[i])
        for k in np.ndindex(arrays[i].shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[i][k] += eps
            minus[i][k] -= eps
            expected[k] = (value(plus) - value(minus)) / (2 * eps)
        got = inputs[i].grad
        assert got is not None, "input {} got no gradient".format(i)
        np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol,
                                   err_msg="gradient of input {}".format(i))


def raises_on(device, exc, match=None):
    """pytest.raises for an error found in the data (an index out of range, a label out of bounds).

    The CPU raises it at the call; an accelerator's kernel finds it while running and the error is raised
    at the next synchronization (decision 47): the block ends with one, so both raise inside it."""
    import contextlib

    import pytest

    @contextlib.contextmanager
    def block():
        with pytest.raises(exc, match=match) as info:
            yield info
            oar.device.synchronize(device)

    return block()


# What a launcher or scheduler sets: a distributed test starts from none of it.
JOB_ENV = ["PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_MASTER", "PADDLE_TRAINER_ENDPOINTS", "RANK",
           "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OAR_DISTRIBUTED_CHECK", "OAR_COLLECTIVE_TIMEOUT"]


@contextlib.contextmanager
def clean_job(monkeypatch):
    """A test of oar.distributed: no job environment, the cpu device; the group it made is destroyed after."""
    import oar.distributed as dist
    for k in JOB_ENV:
        monkeypatch.delenv(k, raising=False)
    prev = oar.get_device()
    oar.set_device("cpu")
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
        oar.set_device(prev)


def train_side_by_side(eager, static, args, labels, steps=4, tol=1e-5):
    """Trains `eager` and `static` (the same model with the same parameters, static a to_static copy)
    with Adam and cross entropy on one batch for `steps` steps, and asserts that the losses, the
    gradients and the updated parameters agree within `tol` at every step."""
    oe = oar.optimizer.Adam(1e-2, parameters=eager.parameters())
    os_ = oar.optimizer.Adam(1e-2, parameters=static.parameters())
    loss_fn = oar.nn.CrossEntropyLoss()
    for step in range(steps):
        le, ls = loss_fn(eager(*args), labels), loss_fn(static(*args), labels)
        np.testing.assert_allclose(ls.numpy(), le.numpy(), rtol=tol, atol=tol, err_msg=str(step))
        le.backward()
        ls.backward()
        for (k, pe), ps in zip(eager.named_parameters(), static.parameters()):
            assert (pe.grad is None) == (ps.grad is None), k
            if pe.grad is not None:
                np.testing.assert_allclose(ps.grad.numpy(), pe.grad.numpy(), rtol=tol, atol=tol,
                                           err_msg="{} {}".format(step, k))
        oe.step()
        os_.step()
        oe.clear_grad()
        os_.clear_grad()
        for (k, pe), ps in zip(eager.named_parameters(), static.parameters()):
            np.testing.assert_allclose(ps.numpy(), pe.numpy(), rtol=tol, atol=tol, err_msg="{} {}".format(step, k))


def small_training_model(kind, mlp_layers=3):
    """(model, x, labels) for the to_static training tests: an MLP of `mlp_layers` Linear(16, 16)+ReLU and
    a classifier, a 2-layer Transformer encoder (d 16, 4 heads) on [4, 6, 16], or LeNet on [4, 1, 28, 28];
    fixed inputs, 10 classes."""
    nn = oar.nn
    rs = np.random.RandomState(0)
    if kind == "mlp":
        layers = []
        for _ in range(mlp_layers):
            layers += [nn.Linear(16, 16), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(16, 10))
        x = rs.randn(8, 16).astype("float32")
    elif kind == "transformer":
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)
        model = nn.Sequential(nn.TransformerEncoder(layer, 2), nn.Flatten(), nn.Linear(6 * 16, 10))
        # The key projection's bias has a zero gradient by construction (softmax ignores a shift of a
        # row), so its computed gradient is rounding noise (~1e-8), which Adam turns into full-size
        # steps: frozen, so that the comparison is about the parameters that learn (decision 123).
        for l in model[0].layers:
            l.self_attn.k_proj.bias.stop_gradient = True
        x = rs.randn(4, 6, 16).astype("float32")
    elif kind == "lenet":
        model = oar.vision.models.LeNet()
        x = rs.randn(4, 1, 28, 28).astype("float32")
    else:
        raise ValueError("small_training_model: unknown kind {!r}".format(kind))
    y = np.random.RandomState(1).randint(0, 10, (x.shape[0],)).astype("int64")
    return model, oar.to_tensor(x), oar.to_tensor(y)


class BatchFills(oar.nn.Layer):
    """Fills whose shape holds the batch: from x.shape[0] (a run-time shape variable under to_static) and
    from ones_like (the recording's unknown extent). Used by the jit.save tests of oar and of Paddle."""

    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(3, 4)

    def forward(self, x):
        h = oar.zeros([x.shape[0], 4]) + 1.5
        o = oar.full([2 * x.shape[0], 4], 2.0)
        return self.fc(x) + h + o.sum() + oar.ones_like(x).sum()
