"""An ordinary Paddle 2.x dygraph snippet runs unchanged with `import oar as paddle`."""
import numpy as np


def test_paddle_style_snippet():
    import oar as paddle
    import oar.nn.functional as F

    paddle.seed(2023)
    paddle.set_device("cpu")
    x = paddle.to_tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="float32")
    w = paddle.randn([3, 4], dtype="float32")
    b = paddle.zeros([4])
    h = F.relu(paddle.matmul(x, w) + b)
    probs = F.softmax(h, axis=-1)
    assert probs.shape == [2, 4]
    np.testing.assert_allclose(probs.sum(axis=-1).numpy(), np.ones(2), rtol=1e-5)
    label = paddle.to_tensor([1, 3])
    pred = paddle.argmax(probs, axis=1)
    acc = paddle.mean(paddle.cast(pred == label, "float32"))
    assert 0.0 <= float(acc) <= 1.0
    y = paddle.arange(0, 6).reshape([2, 3]).astype("float32")
    z = paddle.concat([x, y], axis=0)
    assert z.shape == [4, 3] and z.dtype == paddle.float32
    assert paddle.to_tensor(3).dtype == paddle.int64
    t = x.transpose([1, 0]).flatten()
    assert t.numpy().tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    m = paddle.where(x > 2.5, x, paddle.zeros_like(x))
    assert m.numpy().tolist() == [[0.0, 0.0, 3.0], [4.0, 5.0, 6.0]]
    s = paddle.sum(x * x, axis=1, keepdim=True).sqrt()
    np.testing.assert_allclose(s.numpy(), np.sqrt([[14.0], [77.0]]), rtol=1e-6)
    assert x[:, 1].tolist() == [2.0, 5.0] and x[-1, ::-1].tolist() == [6.0, 5.0, 4.0]
    assert isinstance(x.place, paddle.Place) and str(x.place) == "Place(cpu)"
    assert paddle.get_default_dtype() == "float32"
    assert paddle.is_tensor(x) and paddle.in_dynamic_mode()
    for mod in ["nn", "nn.functional", "optimizer", "optimizer.lr", "io", "metric", "vision", "static", "jit",
                "amp", "distributed", "device", "utils", "utils.cpp_extension", "inference"]:
        obj = paddle
        for part in mod.split("."):
            obj = getattr(obj, part)
        assert obj.__doc__


def test_paddle_style_functional_cnn_training():
    """A small CNN written the Paddle 2.x way with the functional API, trained with a hand-written SGD
    step on a learnable toy problem; the loss must fall."""
    import oar as paddle
    import oar.nn.functional as F

    paddle.seed(7)
    rng = np.random.default_rng(0)
    # Two classes: a bright square in the top-left or in the bottom-right corner of an 8x8 image.
    n = 32
    images = rng.normal(0, 0.1, (n, 1, 8, 8)).astype("float32")
    labels = rng.integers(0, 2, n)
    for i, c in enumerate(labels):
        r = 0 if c == 0 else 4
        images[i, 0, r:r + 4, r:r + 4] += 1.0
    x = paddle.to_tensor(images)
    y = paddle.to_tensor(labels, dtype="int64")

    def param(*shape, scale=0.3):
        p = paddle.randn(shape) * scale
        p.stop_gradient = False
        return p

    conv_w, conv_b = param(4, 1, 3, 3), paddle.zeros([4])
    conv_b.stop_gradient = False
    fc_w, fc_b = param(4 * 4 * 4, 2, scale=0.1), paddle.zeros([2])
    fc_b.stop_gradient = False
    params = [conv_w, conv_b, fc_w, fc_b]

    def forward(inp):
        h = F.relu(F.conv2d(inp, conv_w, conv_b, stride=1, padding=1))
        h = F.max_pool2d(h, kernel_size=2, stride=2)
        h = paddle.flatten(h, start_axis=1)
        return F.linear(h, fc_w, fc_b)

    losses = []
    for step in range(30):
        logits = forward(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        with paddle.no_grad():
            for p in params:
                p -= 0.5 * p.grad
                p.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0], losses
    with paddle.no_grad():
        pred = paddle.argmax(forward(x), axis=-1)
    acc = float((pred == y).astype("float32").mean())
    assert acc > 0.9, acc
    values, idx = paddle.topk(F.softmax(forward(x)), k=1, axis=-1)
    assert values.shape == [n, 1] and idx.dtype == paddle.int64
    masked = x.clone()
    masked[:, :, :4, :4] = 0.0
    assert float(masked[:, :, :4, :4].abs().sum()) == 0.0
    parts = paddle.split(x, 4, axis=0)
    assert len(parts) == 4 and paddle.stack(parts).shape == [4, 8, 1, 8, 8]
