"""Behaviours where oar follows Paddle 2.6.2 (issue 14), each checked against numpy or against values
recorded from the real paddlepaddle==2.6.2 wheel (noted where used)."""
import itertools

import numpy as np
import pytest

import oar
import oar.nn.functional as F


# ---- errors Paddle raises with `assert`: catchable as AssertionError and as ValueError -----------------

def test_linear_warmup_zero_steps_is_an_assertion():
    with pytest.raises(AssertionError, match="'warmup_steps' must be a positive integer"):
        oar.optimizer.lr.LinearWarmup(learning_rate=0.5, warmup_steps=0, start_lr=0.0, end_lr=0.5)
    with pytest.raises(ValueError, match="LinearWarmup"):
        oar.optimizer.lr.LinearWarmup(learning_rate=0.5, warmup_steps=-3, start_lr=0.0, end_lr=0.5)


def test_clip_grad_by_value_errors():
    with pytest.raises(AssertionError, match="max must be > 0"):
        oar.nn.ClipGradByValue(-1.0)
    with pytest.raises(TypeError, match="max"):
        oar.nn.ClipGradByValue("1")


# ---- ClipGradByGlobalNorm with a negative clip_norm: Paddle's formula, clip_norm / max(norm, clip_norm) ----

def test_clip_grad_by_global_norm_negative():
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal((5,))]
    pairs = [(oar.to_tensor(np.zeros_like(g)), oar.to_tensor(g)) for g in gs]
    out = oar.nn.ClipGradByGlobalNorm(-1.0)(pairs)
    norm = np.sqrt(sum((g ** 2).sum() for g in gs))
    for (_, g), want in zip(out, gs):
        np.testing.assert_allclose(g.numpy(), want * (-1.0 / norm), rtol=1e-12)
    # recorded from Paddle 2.6.2: grads [3, 4] and [12] (global norm 13), clip_norm -1 -> 12 * -1/13
    out = oar.nn.ClipGradByGlobalNorm(-1.0)([(oar.ones([2]), oar.to_tensor([3.0, 4.0])),
                                            (oar.ones([1]), oar.to_tensor([12.0]))])
    np.testing.assert_allclose(out[1][1].numpy(), [-0.9230769872665405], rtol=1e-6)


def test_clip_grad_by_norm_still_refuses_non_positive():
    # Paddle 2.6.2 raises ValueError too ("max_norm should be greater than 0"), when clipping
    with pytest.raises(ValueError, match="clip_norm"):
        oar.nn.ClipGradByNorm(-1.0)


def test_normal_initializer_negative_std():
    # Paddle accepts std < 0 (mean + std * z): the same law as |std|
    p = oar.create_parameter([200, 200], "float64", default_initializer=oar.nn.initializer.Normal(1.0, -5.0))
    v = p.numpy()
    assert abs(v.mean() - 1.0) < 0.15 and abs(v.std() - 5.0) < 0.1


# ---- Dropout with p given as a Tensor ----

@pytest.mark.parametrize("layer", [oar.nn.Dropout, oar.nn.Dropout2D, oar.nn.Dropout3D])
def test_dropout_layers_take_tensor_p(layer):
    shape = {oar.nn.Dropout: [40], oar.nn.Dropout2D: [2, 4, 3, 3], oar.nn.Dropout3D: [2, 4, 2, 2, 2]}[layer]
    x_np = np.arange(1, 1 + np.prod(shape), dtype="float64").reshape(shape)
    x = oar.to_tensor(x_np, stop_gradient=False)
    d = layer(p=oar.to_tensor(0.5))
    out = d(x)
    out.sum().backward()
    o, g = out.numpy(), x.grad.numpy()
    kept = o != 0
    np.testing.assert_allclose(o[kept], 2 * x_np[kept])
    np.testing.assert_allclose(g, np.where(kept, 2.0, 0.0))
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x_np)


def test_functional_dropout_tensor_p():
    x = oar.to_tensor(np.arange(1, 7, dtype="float32"))
    np.testing.assert_array_equal(F.dropout(x, p=oar.to_tensor([1.0])).numpy(), np.zeros(6, "float32"))
    np.testing.assert_array_equal(F.dropout(x, p=oar.to_tensor(0.5), training=False).numpy(), x.numpy())
    with pytest.raises(ValueError, match="one-element"):
        F.dropout(x, p=oar.to_tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        oar.nn.Dropout(p=oar.to_tensor(1.5))


# ---- Pad layers: data_format, not the class, decides the input rank ----

def test_pad3d_on_3d_and_4d_inputs():
    x = np.arange(1, 7, dtype="float32").reshape(1, 2, 3)
    out = oar.nn.Pad3D(padding=[1, 2], mode="constant", data_format="NCL")(oar.to_tensor(x)).numpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (0, 0), (1, 2)]))
    out = oar.nn.Pad3D(padding=[1, 1], mode="reflect", data_format="NLC")(oar.to_tensor(x)).numpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (1, 1), (0, 0)], mode="reflect"))
    x4 = np.arange(1, 7, dtype="float64").reshape(1, 1, 2, 3)
    out = oar.nn.Pad3D(padding=[1, 0, 1, 2], data_format="NCHW")(oar.to_tensor(x4)).numpy()
    np.testing.assert_array_equal(out, np.pad(x4, [(0, 0), (0, 0), (1, 2), (1, 0)]))
    out = oar.nn.Pad2D(padding=[2, 1], mode="replicate", data_format="NCL")(oar.to_tensor(x)).numpy()
    np.testing.assert_array_equal(out, np.pad(x, [(0, 0), (0, 0), (2, 1)], mode="edge"))


def test_pad_layer_rank_must_match_data_format():
    with pytest.raises(ValueError, match="Pad3D: data_format NCDHW needs a 5-D input"):
        oar.nn.Pad3D(padding=[1, 2])(oar.ones([1, 2, 3]))
    with pytest.raises(ValueError, match="Pad1D: data_format NCL needs a 3-D input"):
        oar.nn.Pad1D(padding=[1, 2])(oar.ones([1, 1, 2, 3]))


# ---- nll_loss with [N, 1] labels, and in a static program ----

def test_nll_loss_n1_labels():
    rng = np.random.default_rng(1)
    logp = np.log(rng.dirichlet(np.ones(4), size=5))
    lab = np.array([0, 3, 1, 1, 2])
    want = -logp[np.arange(5), lab]
    for red, ref in (("none", want), ("sum", want.sum()), ("mean", want.mean())):
        got = F.nll_loss(oar.to_tensor(logp), oar.to_tensor(lab.reshape(5, 1)), reduction=red)
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
        assert got.shape == list(np.shape(ref))
    with pytest.raises(ValueError, match=r"nll_loss: label.shape \[5, 5\]"):
        F.nll_loss(oar.to_tensor(logp), oar.zeros([5, 5], "int64"))


def test_nll_loss_static():
    logp = np.log(np.full((3, 4), 0.25)) + np.arange(12).reshape(3, 4) * 0.01
    lab = np.array([1, 2, 3], dtype="int64")
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [3, 4], "float64")
            y = oar.static.data("y", [3], "int64")
            loss = F.nll_loss(x, y)
        exe = oar.static.Executor(oar.CPUPlace())
        exe.run(startup)
        (got,) = exe.run(main, feed={"x": logp, "y": lab}, fetch_list=[loss])
    finally:
        oar.disable_static()
    np.testing.assert_allclose(got, -logp[np.arange(3), lab].mean(), rtol=1e-12)


# ---- sequence_mask ----

def test_sequence_mask():
    lens = np.array([[1, 0], [2, 3]])
    got = F.sequence_mask(oar.to_tensor(lens), maxlen=3)
    assert got.dtype == oar.int64
    np.testing.assert_array_equal(got.numpy(), (np.arange(3) < lens[..., None]).astype("int64"))
    got = F.sequence_mask(oar.to_tensor(np.array([1, 0, 2], "int32")), dtype="float32")
    assert got.dtype == oar.float32 and got.shape == [3, 2]  # maxlen defaults to max(x)
    np.testing.assert_array_equal(got.numpy(), [[1, 0], [0, 0], [1, 1]])
    assert F.sequence_mask(oar.to_tensor([1, 2]), maxlen=oar.to_tensor(4), dtype="bool").shape == [2, 4]
    # float lengths are accepted, as in Paddle
    np.testing.assert_array_equal(F.sequence_mask(oar.to_tensor([1.5, 2.0]), maxlen=3).numpy(), [[1, 1, 0], [1, 1, 0]])
    with pytest.raises(TypeError, match="sequence_mask: x"):
        F.sequence_mask(oar.to_tensor([True, False]))


# ---- max_unpool ----

def test_max_unpool2d_matches_paddle():
    x = oar.to_tensor(np.arange(16, dtype="float32").reshape(1, 1, 4, 4)[:, :, ::-1].copy(), stop_gradient=False)
    o, m = F.max_pool2d(x, 2, 2, return_mask=True)
    u = oar.nn.MaxUnPool2D(2, 2)(o, m)
    # recorded from Paddle 2.6.2
    np.testing.assert_array_equal(u.numpy(), [[[[0, 13, 0, 15], [0, 0, 0, 0], [0, 5, 0, 7], [0, 0, 0, 0]]]])
    (u * oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])).sum().backward()
    g = np.zeros((4, 4), "float32")
    g[[0, 0, 2, 2], [1, 3, 1, 3]] = [1, 3, 9, 11]  # the upstream gradient at the positions written
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], g)
    assert F.max_unpool2d(o, m, 2, 2, output_size=[5, 5]).shape == [1, 1, 5, 5]
    with pytest.raises(ValueError, match="indices.shape"):
        F.max_unpool2d(o, m.reshape([1, 1, 4]), 2)


def test_max_unpool1d_3d():
    x = np.array([[[1.0, 5, 2, 3, 9, 4]]], "float32")
    o, m = F.max_pool1d(oar.to_tensor(x), 2, return_mask=True)
    np.testing.assert_array_equal(F.max_unpool1d(o, m, 2).numpy(), [[[0, 5, 0, 3, 9, 0]]])
    x3 = np.random.default_rng(2).standard_normal((2, 3, 4, 4, 4)).astype("float64")
    o, m = F.max_pool3d(oar.to_tensor(x3), 2, return_mask=True)
    u = oar.nn.MaxUnPool3D(2)(o, m).numpy()
    blocks = x3.reshape(2, 3, 2, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 6, 3, 5, 7).reshape(2, 3, 2, 2, 2, 8)
    want = np.zeros_like(blocks)
    np.put_along_axis(want, blocks.argmax(-1)[..., None], blocks.max(-1)[..., None], -1)
    want = want.reshape(2, 3, 2, 2, 2, 2, 2, 2).transpose(0, 1, 2, 5, 3, 6, 4, 7).reshape(x3.shape)
    np.testing.assert_array_equal(u, want)


# ---- npair_loss ----

def _npair_ref(a, p, labels, l2_reg):
    same = (labels[:, None] == labels[None, :]).astype(np.float64)
    t = same / same.sum(1, keepdims=True)
    s = a @ p.T
    logsm = s - s.max(1, keepdims=True)
    logsm = logsm - np.log(np.exp(logsm).sum(1, keepdims=True))
    ce = -(t * logsm).sum(1).mean()
    return ce + 0.25 * l2_reg * ((a ** 2).sum(1).mean() + (p ** 2).sum(1).mean())


def test_npair_loss():
    a = np.cos(np.arange(12, dtype="float32") * 0.5).reshape(4, 3)
    p = np.sin(np.arange(12, dtype="float32") * 0.3).reshape(4, 3)
    lab = np.array([1, 2, 1, 3], "float32")
    got = F.npair_loss(oar.to_tensor(a), oar.to_tensor(p), oar.to_tensor(lab))
    np.testing.assert_allclose(float(got), 1.8621450662612915, rtol=1e-6)  # recorded from Paddle 2.6.2
    rng = np.random.default_rng(3)
    a64, p64 = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    lab64 = np.array([0, 1, 0, 2, 1, 1])
    at = oar.to_tensor(a64, stop_gradient=False)
    got = F.npair_loss(at, oar.to_tensor(p64), oar.to_tensor(lab64), l2_reg=0.1)
    np.testing.assert_allclose(float(got), _npair_ref(a64, p64, lab64, 0.1), rtol=1e-12)
    got.backward()
    eps, num = 1e-6, np.zeros_like(a64)
    for i, j in itertools.product(range(6), range(5)):
        d = np.zeros_like(a64)
        d[i, j] = eps
        num[i, j] = (_npair_ref(a64 + d, p64, lab64, 0.1) - _npair_ref(a64 - d, p64, lab64, 0.1)) / (2 * eps)
    np.testing.assert_allclose(at.grad.numpy(), num, rtol=1e-6, atol=1e-9)


# ---- ctc_loss ----

def _ctc_brute(logits, label, t_len, blank=0):
    """-log of the summed probability of every length-t_len path that collapses to label."""
    lp = logits[:t_len] - np.log(np.exp(logits[:t_len]).sum(-1, keepdims=True))
    total = 0.0
    for path in itertools.product(range(logits.shape[-1]), repeat=t_len):
        collapsed = [c for k, c in enumerate(path) if c != blank and (k == 0 or c != path[k - 1])]
        if collapsed == list(label):
            total += np.exp(sum(lp[k, c] for k, c in enumerate(path)))
    return -np.log(total)


def test_ctc_loss_against_enumeration_and_paddle():
    t, n, c = 5, 3, 4
    logits = np.sin(np.arange(t * n * c, dtype="float64") * 0.37).reshape(t, n, c) * 2
    labels = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]], dtype="int32")
    il, ll = np.array([5, 4, 3], dtype="int64"), np.array([3, 2, 1], dtype="int64")
    x = oar.to_tensor(logits, stop_gradient=False)
    args = (oar.to_tensor(labels), oar.to_tensor(il), oar.to_tensor(ll))
    none = F.ctc_loss(x, *args, reduction="none").numpy()
    want = [_ctc_brute(logits[:, i], labels[i, :ll[i]], il[i]) for i in range(n)]
    np.testing.assert_allclose(none, want, rtol=1e-10)
    np.testing.assert_allclose(none, [5.644014825582176, 2.3931566645410998, 2.341338250576359], rtol=1e-12)  # Paddle
    mean = F.ctc_loss(x, *args, reduction="mean")
    np.testing.assert_allclose(float(mean), 1.806418286013656, rtol=1e-12)  # Paddle 2.6.2
    np.testing.assert_allclose(float(F.ctc_loss(x, *args, reduction="sum")), sum(want), rtol=1e-10)
    mean.backward()
    # Paddle 2.6.2's gradient for sample 0
    np.testing.assert_allclose(x.grad.numpy()[0, 0], [0.006113714894473893, -0.0908810686786415,
                                                      0.033149872118796414, 0.05161748166537117], rtol=1e-9)
    layer = oar.nn.CTCLoss(blank=0, reduction="none")
    np.testing.assert_allclose(layer(x, *args).numpy(), none, rtol=1e-12)


def test_ctc_loss_bad_input():
    x = oar.zeros([4, 2, 3])
    lab = oar.to_tensor(np.array([[1, 2], [1, 1]], "int32"))
    lens = oar.to_tensor(np.array([4, 4], "int64"))
    with pytest.raises(ValueError, match="ctc_loss: blank"):
        F.ctc_loss(x, lab, lens, lens, blank=3)
    with pytest.raises(ValueError, match="ctc_loss: input_lengths"):
        F.ctc_loss(x, lab, oar.to_tensor(np.array([4], "int64")), lens)
    with pytest.raises(TypeError, match="ctc_loss: labels"):
        F.ctc_loss(x, oar.zeros([2, 2]), lens, lens)


# ---- cross_entropy with a non-negative ignore_index ----

@pytest.mark.parametrize("use_softmax", [True, False])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cross_entropy_ignore_index(use_softmax, reduction):
    rng = np.random.default_rng(4)
    x = rng.uniform(0.05, 1.0, (4, 8))
    lab = np.array([0, 1, 2, 1])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True)) if use_softmax else np.log(x)
    per = np.where(lab != 1, -logp[np.arange(4), lab], 0.0)
    want = {"none": per, "sum": per.sum(), "mean": per.sum() / (lab != 1).sum()}[reduction]
    got = F.cross_entropy(oar.to_tensor(x), oar.to_tensor(lab), ignore_index=1, reduction=reduction,
                          use_softmax=use_softmax)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


# ---- stop_gradient=False on integer tensors (Paddle accepts it; no gradient flows) ----

def test_stop_gradient_false_on_int_tensor():
    ids = oar.to_tensor(np.array([[1, 2], [0, 1]], "int64"), stop_gradient=False)
    assert ids.stop_gradient is False and ids.grad is None
    ids.stop_gradient = True
    assert ids.stop_gradient is True
    ids.stop_gradient = False
    emb = oar.nn.Embedding(3, 2)
    out = emb(ids)
    out.sum().backward()
    assert ids.grad is None
    np.testing.assert_array_equal(emb.weight.grad.numpy(), [[1, 1], [2, 2], [1, 1]])
    b = oar.to_tensor([True, False])
    b.stop_gradient = False
    assert b.stop_gradient is False
    # the integer result of an op on it stays a constant
    assert (ids + 1).stop_gradient is True


# ---- temporal_shift, framework.random ----

def _temporal_shift_ref(x, seg, ratio):
    nt, c, h, w = x.shape
    v = x.reshape(nt // seg, seg, c, h, w)
    out = np.zeros_like(v)
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out[:, 1:, :c1] = v[:, :-1, :c1]
    out[:, :-1, c1:c2] = v[:, 1:, c1:c2]
    out[:, :, c2:] = v[:, :, c2:]
    return out.reshape(x.shape)


def test_temporal_shift():
    x = np.arange(8, dtype="float32").reshape(2, 4, 1, 1)
    got = F.temporal_shift(oar.to_tensor(x), seg_num=2, shift_ratio=0.25)
    np.testing.assert_array_equal(got.numpy().ravel(), [0, 5, 2, 3, 0, 0, 6, 7])  # Paddle 2.6.2
    x = np.random.default_rng(5).standard_normal((6, 8, 2, 3))
    t = oar.to_tensor(x, stop_gradient=False)
    got = F.temporal_shift(t, seg_num=3, shift_ratio=0.25)
    np.testing.assert_array_equal(got.numpy(), _temporal_shift_ref(x, 3, 0.25))
    (got * oar.to_tensor(x)).sum().backward()  # d/dx of sum(shift(x) * c) is the inverse shift of c
    want = _temporal_shift_ref(x, 3, 0.25)
    assert np.isclose(float((t.grad.numpy() * x).sum()), float((want * x).sum()))
    nhwc = F.temporal_shift(oar.to_tensor(x.transpose(0, 2, 3, 1)), seg_num=3, data_format="NHWC")
    np.testing.assert_array_equal(nhwc.numpy(), want.transpose(0, 2, 3, 1))
    with pytest.raises(ValueError, match="seg_num"):
        F.temporal_shift(oar.to_tensor(x), seg_num=4)


def test_framework_random_manual_program_seed():
    oar.framework.random._manual_program_seed(7)
    a = oar.rand([3]).numpy()
    assert oar.static.default_main_program().random_seed == 7
    oar.framework.random.seed(7)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), a)


# ---- static Executor: fetched views, feed entries the program lacks ----

def test_executor_fetches_views_and_skips_unknown_feeds():
    x_np = np.arange(6, dtype="float64").reshape(1, 2, 3)
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("data", [1, 2, 3], "float64")
            x.stop_gradient = False
            out = oar.nn.Pad2D(padding=[1, 2], data_format="NCL")(x)
            sl = x[:, :, 1:]  # a view
            g = oar.static.gradients(oar.mean(out), x)  # pad's gradient is a slice (a view) too
            exe = oar.static.Executor(oar.CPUPlace())
            exe.run(startup)
            with pytest.warns(UserWarning, match="The variable mode is not found in program"):
                o, s, gx = exe.run(main, feed={"data": x_np, "mode": "constant"}, fetch_list=[out, sl, g])
    finally:
        oar.disable_static()
    np.testing.assert_array_equal(o, np.pad(x_np, [(0, 0), (0, 0), (1, 2)]))
    np.testing.assert_array_equal(s, x_np[:, :, 1:])
    np.testing.assert_allclose(gx, np.full((1, 2, 3), 1 / 12), rtol=1e-12)


# ---- class_center_sample ----

def test_class_center_sample():
    lab = np.array([3, 7, 3, 1], "int32")
    oar.seed(3)
    r, s = F.class_center_sample(oar.to_tensor(lab), 10, 6)
    assert r.dtype == oar.int32 and s.dtype == oar.int32
    np.testing.assert_array_equal(r.numpy(), [1, 2, 1, 0])  # positions in the sorted positives (as Paddle)
    s = s.numpy()
    np.testing.assert_array_equal(s[:3], [1, 3, 7])
    assert len(s) == 6 and len(set(s)) == 6 and not set(s[3:]) & {1, 3, 7} and all(0 <= v < 10 for v in s)
    oar.seed(3)
    np.testing.assert_array_equal(F.class_center_sample(oar.to_tensor(lab), 10, 6)[1].numpy(), s)  # seeded
    # fewer samples than positives: all positives (recorded from Paddle 2.6.2)
    r, s = F.class_center_sample(oar.to_tensor(np.array([3, 7, 3, 1, 9, 0])), 10, 2)
    np.testing.assert_array_equal(r.numpy(), [2, 3, 2, 1, 4, 0])
    np.testing.assert_array_equal(s.numpy(), [0, 1, 3, 7, 9])
    with pytest.raises(ValueError, match="num_samples"):
        F.class_center_sample(oar.to_tensor(np.array([0, 1])), 5, 8)
    with pytest.raises(ValueError, match="non-empty"):
        F.class_center_sample(oar.to_tensor(np.zeros([0], "int64")), 10, 8)
    with pytest.raises(ValueError, match="label values"):
        F.class_center_sample(oar.to_tensor(np.array([0, 12])), 10, 3)
