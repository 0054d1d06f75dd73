"""The fused `rnn` op behind SimpleRNN / LSTM / GRU: the same network run fused and through the Python loop
(use_fused_rnn = False) must agree, forward and backward, in every configuration (modes, layers,
directions, sequence lengths, initial states, dropout); the op's gradient against finite differences;
bad input named."""
import numpy as np
import pytest

import oar
import oar.nn as nn

MODES = [("LSTM", nn.LSTM, {}), ("GRU", nn.GRU, {}), ("RNN_TANH", nn.SimpleRNN, {}),
         ("RNN_RELU", nn.SimpleRNN, {"activation": "relu"})]


def _run(net, x, states, lengths, fused):
    net.use_fused_rnn = "always" if fused else False  # "always": float64 through the op too
    xs = oar.to_tensor(x, stop_gradient=False)
    st = None
    if states is not None:
        st = [oar.to_tensor(s, stop_gradient=False) for s in states]
        st = st[0] if len(st) == 1 else tuple(st)
    seq = None if lengths is None else oar.to_tensor(np.asarray(lengths, np.int64))
    y, fin = net(xs, st, seq)
    fins = list(fin) if isinstance(fin, tuple) else [fin]
    rng = np.random.default_rng(7)
    loss = (y * oar.to_tensor(rng.standard_normal(y.shape).astype(x.dtype))).sum()
    for f in fins:
        loss = loss + (f * oar.to_tensor(rng.standard_normal(f.shape).astype(x.dtype))).sum()
    net.clear_gradients()
    loss.backward()
    grads = [xs.grad.numpy()] + ([s.grad.numpy() for s in (st if isinstance(st, tuple) else [st])]
                                 if st is not None else [])
    grads += [p.grad.numpy() for p in net.parameters()]
    return [y.numpy()] + [f.numpy() for f in fins], grads


def _compare(net, x, states=None, lengths=None, tol=None):
    tol = tol or (1e-5 if x.dtype == np.float32 else 1e-10)
    want_out, want_g = _run(net, x, states, lengths, False)
    got_out, got_g = _run(net, x, states, lengths, True)
    for a, b in zip(got_out + got_g, want_out + want_g):
        scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("mode,cls,kw", MODES, ids=[m[0] for m in MODES])
@pytest.mark.parametrize("layers,direction", [(1, "forward"), (2, "bidirect"), (3, "forward")])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_matches_loop(mode, cls, kw, layers, direction, dtype):
    oar.seed(1)
    net = cls(5, 4, num_layers=layers, direction=direction, **kw)
    if dtype == "float64":
        net.to(dtype="float64")
    x = np.random.default_rng(0).standard_normal((3, 6, 5)).astype(dtype)
    _compare(net, x)


@pytest.mark.parametrize("mode,cls,kw", MODES, ids=[m[0] for m in MODES])
@pytest.mark.parametrize("direction", ["forward", "bidirect"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_sequence_length_and_initial_states(mode, cls, kw, direction, dtype):
    oar.seed(2)
    net = cls(3, 5, num_layers=2, direction=direction, **kw)
    if dtype == "float64":
        net.to(dtype="float64")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 7, 3)).astype(dtype)
    ld = 2 * (2 if direction == "bidirect" else 1)
    states = [rng.standard_normal((ld, 4, 5)).astype(dtype) for _ in range(2 if mode == "LSTM" else 1)]
    _compare(net, x, states, lengths=[7, 3, 0, 5])
    _compare(net, x, states, lengths=[7, 7, 7, 7])  # all full: the oneDNN path in float32
    _compare(net, x, states)


def test_fused_outputs_zero_past_length_and_time_major():
    oar.seed(3)
    net = nn.LSTM(3, 4, direction="bidirect", time_major=True)
    x = np.random.default_rng(2).standard_normal((6, 2, 3)).astype("float32")
    y, (h, c) = net(oar.to_tensor(x), sequence_length=oar.to_tensor(np.array([6, 2], np.int32)))
    assert y.shape == [6, 2, 8] and h.shape == [2, 2, 4]
    assert np.all(y.numpy()[2:, 1] == 0) and np.any(y.numpy()[:2, 1] != 0)
    _compare(net, x, lengths=[6, 2])


def test_fused_dropout_between_layers_in_training():
    # Training with dropout runs one op per layer with dropout between them: with the same seed the
    # loop and the fused path draw the same masks.
    net = nn.GRU(3, 4, num_layers=3, dropout=0.5)
    x = np.random.default_rng(3).standard_normal((2, 5, 3)).astype("float32")
    outs = []
    for fused in (False, True):
        net.use_fused_rnn = fused
        oar.seed(11)
        outs.append(net(oar.to_tensor(x))[0].numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    net.eval()
    a = net(oar.to_tensor(x))[0].numpy()
    net.use_fused_rnn = False
    np.testing.assert_allclose(a, net(oar.to_tensor(x))[0].numpy(), rtol=1e-5, atol=1e-6)


def test_hooks_projection_and_float64_use_the_loop():
    net = nn.LSTM(3, 4, proj_size=2)
    assert not net._can_fuse(oar.zeros([2, 3, 3]))
    net = nn.LSTM(3, 4)
    assert net._can_fuse(oar.zeros([2, 3, 3]))
    assert not net._can_fuse(oar.zeros([2, 3, 3], dtype="float64"))
    net.use_fused_rnn = "always"
    assert net._can_fuse(oar.zeros([2, 3, 3], dtype="float64"))
    net[0].cell.register_forward_pre_hook(lambda layer, inputs: None)
    assert not net._can_fuse(oar.zeros([2, 3, 3]))


def _op_inputs(mode, gates, layers, dirs, rng, T=4, B=3, I=3, H=2, lengths=None):
    cells = layers * dirs
    ins = [rng.uniform(-1, 1, (T, B, I)), rng.uniform(-1, 1, (cells, B, H)), rng.uniform(-1, 1, (cells, B, H))]
    for k in range(cells):
        ins.append(rng.uniform(-0.8, 0.8, (gates * H, I if k < dirs else dirs * H)))
        ins.append(rng.uniform(-0.8, 0.8, (gates * H, H)))
    ins += [rng.uniform(-0.5, 0.5, (gates * H,)) for _ in range(2 * cells)]
    return ins


@pytest.mark.parametrize("mode,gates", [("LSTM", 4), ("GRU", 3), ("RNN_TANH", 1)])
def test_op_float32_onednn_matches_float64_loop(mode, gates):
    # float32 goes through oneDNN, float64 through the loop: forward and every gradient agree.
    rng = np.random.default_rng(5)
    ins = _op_inputs(mode, gates, 2, 2, rng)
    res = {}
    for dt in ("float32", "float64"):
        ts = [oar.to_tensor(a.astype(dt), stop_gradient=False) for a in ins]
        out, h, c, _ = oar.nn.layer.rnn._rnn_op(ts, mode, 2, 2, 1, 0.0, 0)
        w = [np.random.default_rng(9).standard_normal(t.shape).astype(dt) for t in (out, h, c)]
        loss = sum(((t * oar.to_tensor(wi)).sum() for t, wi in zip((out, h, c)[:3 if mode == "LSTM" else 2], w)))
        loss.backward()
        res[dt] = [out.numpy(), h.numpy()] + [t.grad.numpy() for t in ts]
    for a, b in zip(res["float32"], res["float64"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_op_errors_name_the_argument():
    rng = np.random.default_rng(0)
    ins = [oar.to_tensor(a.astype("float32")) for a in _op_inputs("LSTM", 4, 1, 1, rng)]
    with pytest.raises(ValueError, match="rnn: mode 'LSTX'"):
        oar.nn.layer.rnn._rnn_op(ins, "LSTX", 2, 1, 0, 0.0, 0)
    with pytest.raises(ValueError, match=r"rnn: weight_ih of layer 0 direction 0 must be \[6, 3\], got \[8, 3\]"):
        oar.nn.layer.rnn._rnn_op(ins, "GRU", 2, 1, 0, 0.0, 0)
    bad = ins + [oar.to_tensor(np.array([4, 9, 1], np.int64))]
    with pytest.raises(IndexError, match=r"sequence_length\[1\] = 9"):
        oar.nn.layer.rnn._rnn_op(bad, "LSTM", 2, 1, 0, 0.0, 0)
    with pytest.raises(ValueError, match="rnn: h0 must be"):
        oar.nn.layer.rnn._rnn_op([ins[0], ins[1][:, :2]] + ins[2:], "LSTM", 2, 1, 0, 0.0, 0)



@pytest.mark.parametrize("mode,cls,kw", MODES, ids=[m[0] for m in MODES])
def test_fused_gradients_in_eval_mode_recompute_the_forward(mode, cls, kw):
    # eval(): is_test 1, so the forward keeps no reserve and rnn_grad runs the forward again.
    oar.seed(6)
    net = cls(4, 3, num_layers=2, direction="bidirect", **kw)
    net.eval()
    x = np.random.default_rng(4).standard_normal((2, 5, 4)).astype("float32")
    _compare(net, x)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.SimpleRNN])
def test_jit_save_writes_paddles_rnn_op(tmp_path, cls):
    # The saved program holds Paddle's `rnn` (SequenceLength cast to int32), and loading it runs the
    # native op: the loaded model equals eager at another batch size.
    oar.seed(8)
    net = cls(6, 8, num_layers=2, direction="bidirect")
    net.eval()

    class Head(nn.Layer):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, lengths):
            return self.net(x, sequence_length=lengths)[0]

    head = Head()
    path = str(tmp_path / "m")
    oar.jit.save(head, path, input_spec=[oar.static.InputSpec([None, 5, 6], "float32", "x"),
                                          oar.static.InputSpec([None], "int64", "lengths")])
    loaded = oar.jit.load(path)
    types = [op._recorded_type for op in loaded.program().global_block().ops]
    assert types.count("rnn") == 1 and not [t for t in types if t.startswith("oar.")], types
    x = np.random.default_rng(5).standard_normal((3, 5, 6)).astype("float32")
    lengths = np.array([5, 2, 4], np.int64)
    want = head(oar.to_tensor(x), oar.to_tensor(lengths)).numpy()
    got = loaded(oar.to_tensor(x), oar.to_tensor(lengths)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode,gates", [("LSTM", 4), ("GRU", 3), ("RNN_TANH", 1)])
@pytest.mark.parametrize("layers,dirs,lengths", [(1, 1, None), (2, 2, None), (3, 1, None), (2, 2, [4, 1, 3])],
                         ids=["1x1", "2x2", "3x1", "2x2-lengths"])
@pytest.mark.parametrize("is_test", [0, 1])
def test_op_takes_strided_inputs(mode, gates, layers, dirs, lengths, is_test):
    # The op reads x and the output gradient as views (a batch-major layer passes [B, T, W] transposed; oneDNN
    # takes their strides) and copies any other strided input itself: results and gradients equal those of
    # contiguous inputs. Layouts: transposed, time-strided and column-sliced x; transposed, broadcast and
    # flipped output gradients; a transposed h0 and a transposed weight (copied).
    rng = np.random.default_rng(13)
    T_, B, I, H = 4, 3, 3, 2
    base = _op_inputs(mode, gates, layers, dirs, rng, T=T_, B=B, I=I, H=H)
    lens = [] if lengths is None else [oar.to_tensor(np.array(lengths, np.int64))]
    xb = rng.uniform(-1, 1, (B, 2 * T_, I + 2)).astype("float32")  # batch-major, wider and longer
    x_views = [
        lambda t: t[:, :T_, :I].transpose([1, 0, 2]),  # transposed and sliced: strides (I + 2, 2T(I + 2), 1)
        lambda t: t[:, ::2, 1:I + 1].transpose([1, 0, 2]),  # every other step
    ]
    x_ref = [np.ascontiguousarray(xb[:, :T_, :I].transpose(1, 0, 2)),
             np.ascontiguousarray(xb[:, ::2, 1:I + 1].transpose(1, 0, 2))]
    gb = rng.standard_normal((B, T_, dirs * H)).astype("float32")
    g_views = [  # (the output gradient as the op sees it, its contiguous value)
        (lambda: oar.to_tensor(gb).transpose([1, 0, 2]), gb.transpose(1, 0, 2)),
        (lambda: oar.to_tensor(gb[:1, :1, :1]).expand([B, T_, dirs * H]).transpose([1, 0, 2]),
         np.broadcast_to(gb[:1, :1, :1], (B, T_, dirs * H)).transpose(1, 0, 2)),
        (lambda: oar.flip(oar.to_tensor(gb), [1]).transpose([1, 0, 2]), gb[:, ::-1].transpose(1, 0, 2)),
    ]
    for xv, xr in zip(x_views, x_ref):
        for gv, gr in g_views:
            res = []
            for strided in (True, False):
                xs = oar.to_tensor(xb, stop_gradient=False)
                x = xv(xs) if strided else oar.to_tensor(xr, stop_gradient=False)
                h0 = oar.to_tensor(np.ascontiguousarray(base[1].astype("float32").transpose(1, 0, 2)),
                                   stop_gradient=False)
                h0v = h0.transpose([1, 0, 2]) if strided else oar.to_tensor(base[1].astype("float32"))
                c0 = oar.to_tensor(base[2].astype("float32"))
                w0 = oar.to_tensor(np.ascontiguousarray(base[3].astype("float32").T), stop_gradient=False)
                ws = [w0.T if strided else oar.to_tensor(base[3].astype("float32"), stop_gradient=False)]
                ws += [oar.to_tensor(a.astype("float32"), stop_gradient=False) for a in base[4:]]
                out, h, c, _ = oar.nn.layer.rnn._rnn_op([x, h0v, c0] + ws + lens, mode, H, layers, int(dirs == 2),
                                                        0.0, is_test)
                g = gv() if strided else oar.to_tensor(np.ascontiguousarray(gr))
                grads = oar.grad([out, h], [xs if strided else x, ws[1], ws[-1]] +
                                 ([w0] if strided else [ws[0]]),
                                 [g, oar.ones_like(h)])
                gx = grads[0].numpy()
                if strided:  # back to the contiguous x's layout
                    gx = (gx[:, :T_, :I] if xv is x_views[0] else gx[:, ::2, 1:I + 1]).transpose(1, 0, 2)
                gw0 = grads[3].numpy().T if strided else grads[3].numpy()
                res.append([out.numpy(), h.numpy(), c.numpy(), gx, grads[1].numpy(), grads[2].numpy(), gw0])
            for a, b in zip(*res):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
