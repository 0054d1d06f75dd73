"""Recurrent layers: cells and networks against numpy references of the formulas (with the layers'
weights copied out), Paddle's state_dict names, masking, initial states, time_major, gradients, errors."""
import numpy as np
import pytest

import oar
import oar.nn as nn

from _util import check


# ---- numpy references, written from the formulas ----
def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _weights(cell):
    return {k: v.numpy().astype(np.float64) for k, v in cell.state_dict().items()}


def np_simple_step(w, x, h, act="tanh"):
    a = x @ w["weight_ih"].T + w["bias_ih"] + h @ w["weight_hh"].T + w["bias_hh"]
    h = np.tanh(a) if act == "tanh" else np.maximum(a, 0)
    return h, h


def np_lstm_step(w, x, state):
    h, c = state
    gates = x @ w["weight_ih"].T + w["bias_ih"] + h @ w["weight_hh"].T + w["bias_hh"]
    n = gates.shape[-1] // 4
    i, f, g, o = (gates[:, k * n:(k + 1) * n] for k in range(4))
    c = _sig(f) * c + _sig(i) * np.tanh(g)
    h = _sig(o) * np.tanh(c)
    if "weight_ho" in w:
        h = h @ w["weight_ho"]
    return h, (h, c)


def np_gru_step(w, x, h):
    xg = x @ w["weight_ih"].T + w["bias_ih"]
    hg = h @ w["weight_hh"].T + w["bias_hh"]
    n = xg.shape[-1] // 3
    r = _sig(xg[:, :n] + hg[:, :n])
    z = _sig(xg[:, n:2 * n] + hg[:, n:2 * n])
    c = np.tanh(xg[:, 2 * n:] + r * hg[:, 2 * n:])
    h = z * h + (1 - z) * c
    return h, h


STEPS = {"SimpleRNNCell": np_simple_step, "LSTMCell": np_lstm_step, "GRUCell": np_gru_step}


def np_run(step, w, x, state, lengths=None, reverse=False, zero_pad=False):
    """x: [batch, time, in]; returns outputs [batch, time, out] and the final state."""
    b, t = x.shape[:2]
    outs = [None] * t
    order = range(t - 1, -1, -1) if reverse else range(t)
    for k in order:
        out, new = step(w, x[:, k], state)
        if lengths is not None:
            keep = (k < np.asarray(lengths))[:, None]
            if isinstance(new, tuple):
                new = tuple(np.where(keep, a, b_) for a, b_ in zip(new, state))
            else:
                new = np.where(keep, new, state)
            if zero_pad:
                out = out * keep
        state = new
        outs[k] = out
    return np.stack(outs, 1), state


def _zeros_state(name, b, h, proj=0):
    if name == "LSTMCell":
        return (np.zeros((b, proj or h)), np.zeros((b, h)))
    return np.zeros((b, h))


# ---- cells ----
@pytest.mark.parametrize("name", ["SimpleRNNCell", "LSTMCell", "GRUCell"])
def test_cell_matches_numpy(name, device):
    oar.set_device(device)
    oar.seed(1)
    cell = getattr(nn, name)(3, 5)
    w = _weights(cell)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    if name == "LSTMCell":
        st = (rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32))
        y, (h, c) = cell(oar.to_tensor(x), tuple(oar.to_tensor(s) for s in st))
        ey, (eh, ec) = np_lstm_step(w, x, st)
        check(c, ec, rtol=1e-5, atol=1e-5)
    else:
        st = rng.standard_normal((4, 5)).astype(np.float32)
        y, h = cell(oar.to_tensor(x), oar.to_tensor(st))
        ey, eh = STEPS[name](w, x, st)
    check(y, ey, rtol=1e-5, atol=1e-5)
    check(h, eh, rtol=1e-5, atol=1e-5)


def test_cell_default_states_and_shapes():
    oar.seed(2)
    cell = nn.LSTMCell(3, 5)
    w = _weights(cell)
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    y, (h, c) = cell(oar.to_tensor(x))  # zero initial states
    ey, (eh, ec) = np_lstm_step(w, x, (np.zeros((2, 5)), np.zeros((2, 5))))
    check(y, ey, rtol=1e-5, atol=1e-5)
    check(c, ec, rtol=1e-5, atol=1e-5)
    assert cell.weight_ih.shape == [20, 3] and cell.weight_hh.shape == [20, 5]
    assert cell.bias_ih.shape == [20] and cell.bias_hh.shape == [20]
    assert nn.GRUCell(3, 5).weight_hh.shape == [15, 5]
    assert [k for k, _ in cell.named_parameters()] == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    # Paddle's default init: Uniform(-1/sqrt(hidden), 1/sqrt(hidden)) for weights and biases
    big = nn.SimpleRNNCell(50, 16)
    for p in big.parameters():
        v = p.numpy()
        assert np.abs(v).max() <= 0.25 + 1e-6 and np.abs(v).max() > 0.2
    s = cell.get_initial_states(oar.zeros([7, 3]), init_value=1.5)
    assert s[0].shape == [7, 5] and s[1].shape == [7, 5] and float(s[0].numpy()[0, 0]) == 1.5
    assert nn.GRUCell(3, 4).get_initial_states(oar.zeros([2, 6, 3]), batch_dim_idx=1).shape == [6, 4]


def test_get_initial_states_nested_shapes_and_dtype():
    cell = nn.GRUCell(3, 4)
    ref = oar.zeros([5, 3], dtype="float64")
    a, (b, c) = cell.get_initial_states(ref, shape=[[-1, 2], [[3], [2, 2]]], init_value=2.0)
    assert a.shape == [5, 2] and b.shape == [5, 3] and c.shape == [5, 2, 2]
    assert a.dtype == oar.float64 and float(c.numpy()[0, 1, 1]) == 2.0
    s = cell.get_initial_states(ref, dtype="float32")
    assert s.shape == [5, 4] and s.dtype == oar.float32


def test_simple_rnn_cell_relu_and_repr():
    oar.seed(3)
    cell = nn.SimpleRNNCell(2, 3, activation="relu")
    w = _weights(cell)
    x = np.random.default_rng(2).standard_normal((4, 2)).astype(np.float32)
    h0 = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    y, _ = cell(oar.to_tensor(x), oar.to_tensor(h0))
    check(y, np_simple_step(w, x, h0, "relu")[0], rtol=1e-5, atol=1e-5)
    assert repr(cell) == "SimpleRNNCell(2, 3, activation=relu)"
    assert repr(nn.GRUCell(2, 3)) == "GRUCell(2, 3)"


def test_lstm_cell_projection():
    oar.seed(4)
    cell = nn.LSTMCell(3, 6, proj_size=2)
    assert cell.weight_hh.shape == [24, 2] and cell.weight_ho.shape == [6, 2]
    w = _weights(cell)
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    y, (h, c) = cell(oar.to_tensor(x))
    ey, (eh, ec) = np_lstm_step(w, x, (np.zeros((2, 2)), np.zeros((2, 6))))
    check(y, ey, rtol=1e-5, atol=1e-5)
    assert h.shape == [2, 2] and c.shape == [2, 6]


def test_attr_false_freezes_constant_parameters():
    cell = nn.GRUCell(2, 3, bias_ih_attr=False, weight_hh_attr=False)
    assert cell.bias_ih.stop_gradient and np.all(cell.bias_ih.numpy() == 0)
    assert cell.weight_hh.stop_gradient and np.all(cell.weight_hh.numpy() == 1)
    assert not cell.weight_ih.stop_gradient


# ---- RNN / BiRNN wrappers ----
@pytest.mark.parametrize("name", ["SimpleRNNCell", "LSTMCell", "GRUCell"])
def test_rnn_wrapper_sequence_matches_numpy(name):
    oar.seed(5)
    cell = getattr(nn, name)(3, 4)
    w = _weights(cell)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6, 3)).astype(np.float32)
    lengths = [6, 2, 4]
    for reverse in (False, True):
        y, st = nn.RNN(cell, is_reverse=reverse)(oar.to_tensor(x), sequence_length=oar.to_tensor(lengths))
        ey, est = np_run(STEPS[name], w, x, _zeros_state(name, 3, 4), lengths, reverse=reverse)
        # The wrapper keeps states past a sequence's end but leaves those outputs as computed (Paddle).
        check(y, ey, rtol=1e-5, atol=1e-5)
        for a, b in zip(st if isinstance(st, tuple) else (st,), est if isinstance(est, tuple) else (est,)):
            check(a, b, rtol=1e-5, atol=1e-5)


def test_rnn_wrapper_time_major_and_initial_states():
    oar.seed(6)
    cell = nn.GRUCell(3, 4)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    h0 = rng.standard_normal((2, 4)).astype(np.float32)
    y1, h1 = nn.RNN(cell)(oar.to_tensor(x), oar.to_tensor(h0))
    y2, h2 = nn.RNN(cell, time_major=True)(oar.to_tensor(x.transpose(1, 0, 2)), oar.to_tensor(h0))
    assert y2.shape == [5, 2, 4]
    check(y2, y1.numpy().transpose(1, 0, 2), rtol=1e-6, atol=1e-6)
    check(h2, h1.numpy(), rtol=1e-6, atol=1e-6)
    ey, eh = np_run(np_gru_step, _weights(cell), x, h0)
    check(y1, ey, rtol=1e-5, atol=1e-5)


def test_birnn_concatenates_directions():
    oar.seed(7)
    fw, bw = nn.LSTMCell(3, 4), nn.LSTMCell(3, 4)
    x = np.random.default_rng(7).standard_normal((2, 5, 3)).astype(np.float32)
    y, (sf, sb) = nn.BiRNN(fw, bw)(oar.to_tensor(x))
    assert y.shape == [2, 5, 8]
    z = (np.zeros((2, 4)), np.zeros((2, 4)))
    efw, esf = np_run(np_lstm_step, _weights(fw), x, z)
    ebw, esb = np_run(np_lstm_step, _weights(bw), x, z, reverse=True)
    check(y, np.concatenate([efw, ebw], -1), rtol=1e-5, atol=1e-5)
    check(sb[1], esb[1], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="BiRNN"):
        nn.BiRNN(nn.LSTMCell(3, 4), nn.LSTMCell(2, 4))


class _SumCell(nn.RNNCellBase):
    """A user cell (no parameters): running sum of the inputs; output = 2 * state."""

    def __init__(self, size):
        super().__init__()
        self.input_size = size

    def forward(self, x, state=None):
        new = x + state
        return new * 2.0, new

    @property
    def state_shape(self):
        return (self.input_size,)


class _GridCell(nn.RNNCellBase):
    """A user cell with a rank-3 state [batch, 2, 3] (masking must broadcast along the batch axis)."""

    def forward(self, x, state=None):
        new = state + x.reshape([x.shape[0], 1, 1])
        return new.sum(axis=[1, 2]), new

    @property
    def state_shape(self):
        return (2, 3)


def test_custom_cell_rank3_state_with_sequence_length():
    x = np.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]], np.float32)[..., None]  # [batch 2, time 3, 1]
    y, s = nn.RNN(_GridCell())(oar.to_tensor(x), sequence_length=oar.to_tensor([3, 2]))
    assert s.shape == [2, 2, 3]
    check(s, np.stack([np.full((2, 3), 7.0), np.full((2, 3), 3.0)]).astype(np.float32))


def test_custom_cell_runs_through_the_generic_loop():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    y, s = nn.RNN(_SumCell(2))(oar.to_tensor(x), sequence_length=oar.to_tensor([3, 1]))
    cs = np.cumsum(x, axis=1)
    check(s, np.stack([cs[0, 2], cs[1, 0]]))
    check(y[0], 2 * cs[0])


# ---- SimpleRNN / LSTM / GRU networks ----
def _np_network(net, name, x, lengths=None, init=None):
    """Reference for a multi-layer (bi)directional network with zeroed padded outputs."""
    step = STEPS[name]
    layers, dirs, hid = net.num_layers, net.num_directions, net.hidden_size
    b = x.shape[0]
    finals = []
    inp = x
    k = 0
    for i in range(layers):
        cells = [net[i].cell] if dirs == 1 else [net[i].cell_fw, net[i].cell_bw]
        outs = []
        for d, cell in enumerate(cells):
            if init is None:
                st = _zeros_state(name, b, hid)
            elif name == "LSTMCell":
                st = (init[0][k], init[1][k])
            else:
                st = init[k]
            k += 1
            o, s = np_run(step, _weights(cell), inp, st, lengths, reverse=(d == 1), zero_pad=True)
            outs.append(o)
            finals.append(s)
        inp = np.concatenate(outs, -1)
    if name == "LSTMCell":
        return inp, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))
    return inp, np.stack(finals)


@pytest.mark.parametrize("cls,cell", [("SimpleRNN", "SimpleRNNCell"), ("LSTM", "LSTMCell"), ("GRU", "GRUCell")])
def test_network_bidirectional_two_layers_matches_numpy(cls, cell):
    oar.seed(8)
    net = getattr(nn, cls)(3, 4, num_layers=2, direction="bidirect")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 3)).astype(np.float32)
    lengths = [5, 2, 3]
    if cell == "LSTMCell":
        init = (rng.standard_normal((4, 3, 4)), rng.standard_normal((4, 3, 4)))
        init_t = tuple(oar.to_tensor(a.astype(np.float32)) for a in init)
    else:
        init = rng.standard_normal((4, 3, 4))
        init_t = oar.to_tensor(init.astype(np.float32))
    y, st = net(oar.to_tensor(x), init_t, oar.to_tensor(lengths))
    ey, est = _np_network(net, cell, x, lengths, init)
    assert y.shape == [3, 5, 8]
    check(y, ey, rtol=1e-5, atol=1e-5)
    assert np.all(y.numpy()[1, 2:] == 0)  # padded steps of a shorter sequence are zero
    if cell == "LSTMCell":
        assert st[0].shape == [4, 3, 4] and st[1].shape == [4, 3, 4]
        check(st[0], est[0], rtol=1e-5, atol=1e-5)
        check(st[1], est[1], rtol=1e-5, atol=1e-5)
    else:
        assert st.shape == [4, 3, 4]
        check(st, est, rtol=1e-5, atol=1e-5)


def test_network_forward_time_major_and_shapes():
    oar.seed(9)
    net = nn.GRU(3, 4, num_layers=3)
    x = np.random.default_rng(9).standard_normal((2, 6, 3)).astype(np.float32)
    y, h = net(oar.to_tensor(x))
    assert y.shape == [2, 6, 4] and h.shape == [3, 2, 4]
    check(h[2], y.numpy()[:, -1], rtol=1e-6, atol=1e-6)  # the top layer's final state is its last output
    ey, eh = _np_network(net, "GRUCell", x)
    check(y, ey, rtol=1e-5, atol=1e-5)
    tm = nn.GRU(3, 4, num_layers=3, time_major=True)
    tm.set_state_dict(net.state_dict())
    y2, h2 = tm(oar.to_tensor(x.transpose(1, 0, 2)))
    check(y2, y.numpy().transpose(1, 0, 2), rtol=1e-6, atol=1e-6)
    check(h2, h.numpy(), rtol=1e-6, atol=1e-6)


def test_lstm_projection_network_shapes():
    net = nn.LSTM(3, 6, num_layers=2, direction="bidirectional", proj_size=2)
    y, (h, c) = net(oar.randn([2, 4, 3]))
    assert y.shape == [2, 4, 4] and h.shape == [4, 2, 2] and c.shape == [4, 2, 6]
    assert net[1].cell_fw.input_size == 4


def test_paddle_state_dict_names_and_round_trip():
    net = nn.LSTM(4, 8, 2)
    assert list(net.state_dict().keys()) == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
        "0.cell.weight_ih", "0.cell.weight_hh", "0.cell.bias_ih", "0.cell.bias_hh",
        "1.cell.weight_ih", "1.cell.weight_hh", "1.cell.bias_ih", "1.cell.bias_hh"]
    assert net.weight_hh_l1 is net[1].cell.weight_hh
    assert len(net.parameters()) == 8  # each parameter once
    bi = nn.GRU(4, 8, direction="bidirect")
    assert list(bi.state_dict().keys())[4:8] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse",
                                                 "bias_ih_l0_reverse", "bias_hh_l0_reverse"]
    assert "0.cell_bw.weight_ih" in bi.state_dict()
    other = nn.LSTM(4, 8, 2)
    other.set_state_dict({k: v.numpy() for k, v in net.state_dict().items()})
    x = oar.randn([2, 3, 4])
    check(other(x)[0], net(x)[0].numpy())


def test_dropout_between_layers_only_in_training():
    oar.seed(10)
    net = nn.SimpleRNN(3, 4, num_layers=2, dropout=0.5)
    x = oar.randn([2, 5, 3])
    net.eval()
    a, b = net(x)[0].numpy(), net(x)[0].numpy()
    np.testing.assert_array_equal(a, b)
    ref = nn.SimpleRNN(3, 4, num_layers=2)
    ref.set_state_dict(net.state_dict())
    check(ref(x)[0], a, rtol=1e-6, atol=1e-6)
    net.train()
    assert not np.allclose(net(x)[0].numpy(), a)


# ---- gradients ----
def _numeric_grads(net, params, inputs, weight, eps=1e-6):
    def loss():
        with oar.no_grad():
            return float((net(*inputs)[0].numpy() * weight).sum())
    grads = []
    for p in params:
        base = p.numpy().copy()
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[idx] += sign * eps
                p.set_value(oar.to_tensor(v))
                g[idx] += sign * loss() / (2 * eps)
        p.set_value(oar.to_tensor(base))
        grads.append(g)
    return grads


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "SimpleRNN"])
def test_network_gradients_match_finite_differences(cls):
    oar.seed(11)
    net = getattr(nn, cls)(2, 2, direction="bidirect").to(dtype="float64")
    rng = np.random.default_rng(11)
    x = oar.to_tensor(rng.standard_normal((2, 3, 2)), stop_gradient=False)
    lengths = oar.to_tensor([3, 2])
    weight = rng.uniform(0.5, 1.5, (2, 3, 4))
    (net(x, None, lengths)[0] * oar.to_tensor(weight)).sum().backward()
    params = [net[0].cell_fw.weight_hh, net[0].cell_bw.bias_hh, net[0].cell_fw.weight_ih]
    num = _numeric_grads(net, params + [x], (x, None, lengths), weight)
    for p, g in zip(params + [x], num):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-7)


# ---- errors ----
def test_errors_name_the_layer():
    with pytest.raises(ValueError, match="LSTMCell.*input_size=3"):
        nn.LSTMCell(3, 4)(oar.zeros([2, 5]))
    with pytest.raises(ValueError, match="GRU.*input_size=3"):
        nn.GRU(3, 4)(oar.zeros([2, 5, 2]))
    with pytest.raises(ValueError, match="LSTM: initial state 0 must have shape"):
        nn.LSTM(3, 4)(oar.zeros([2, 5, 3]), (oar.zeros([2, 2, 4]), oar.zeros([1, 2, 4])))
    with pytest.raises(ValueError, match="direction"):
        nn.GRU(3, 4, direction="backward")
    with pytest.raises(ValueError, match="SimpleRNNCell: activation"):
        nn.SimpleRNNCell(3, 4, activation="sigmoid")
    with pytest.raises(ValueError, match="hidden_size"):
        nn.GRUCell(3, 0)
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTMCell(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="GRUCell.*input_size=3"):
        nn.RNN(nn.GRUCell(3, 4))(oar.zeros([2, 5, 2]))


@pytest.mark.parametrize("cls, time_major", [(nn.LSTM, False), (nn.GRU, True), (nn.SimpleRNN, False)])
def test_jit_save_with_unknown_batch(tmp_path, cls, time_major):
    # jit.save traces with the InputSpec's batch None: the zero initial states are built from the
    # input (T.zeros cannot take an unknown extent); the saved model runs at any batch size and an inf
    # in the input gives the eager result (the state construction must not turn it into NaN).
    oar.seed(4)
    net = cls(3, 4, num_layers=2, direction="bidirect", time_major=time_major)
    net.eval()
    shape = [5, None, 3] if time_major else [None, 5, 3]

    class Head(nn.Layer):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)[0]

    head = Head()
    path = str(tmp_path / "rnn")
    oar.jit.save(head, path, input_spec=[oar.static.InputSpec(shape, "float32", "x")])
    loaded = oar.jit.load(path)
    rs = np.random.RandomState(0)
    for b in (1, 3):
        x = rs.randn(*([5, b, 3] if time_major else [b, 5, 3])).astype("float32")
        x.flat[0] = np.inf  # in the column the traced zero states are built from
        want = head(oar.to_tensor(x)).numpy()
        np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
