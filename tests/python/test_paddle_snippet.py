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
