"""x.shape inside to_static (as Paddle 2.6: a list, unknown extents as 0-d tensors measured at run time), and
oar's own layers saved with an unknown batch (they are not converted, so their shape checks see -1), and
fills of an unknown batch through jit.save/jit.load."""
import numpy as np

import oar


class ShapeUser(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.seen = []  # what x.shape was while tracing

    def forward(self, x):
        s = x.shape
        self.seen.append(s)
        return oar.full([s[0], s[2]], 2.0) + x.sum(axis=1)


def test_shape_in_to_static_is_a_list_with_tensors_for_unknown_extents(tmp_path):
    m = ShapeUser()
    oar.jit.save(m, str(tmp_path / "m"), input_spec=[oar.static.InputSpec([None, 5, 4], "float32")])
    (s,) = m.seen  # traced once, with the spec's unknown batch
    assert isinstance(s, list) and s[1:] == [5, 4]  # known extents stay ints
    assert isinstance(s[0], oar.Tensor) and s[0].shape == []  # the batch: measured when the program runs
    loaded = oar.jit.load(str(tmp_path / "m"))
    for batch in (2, 3):
        x = np.random.RandomState(batch).rand(batch, 5, 4).astype("float32")
        np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), 2.0 + x.sum(axis=1), rtol=1e-6)
    f = oar.jit.to_static(ShapeUser(), input_spec=[oar.static.InputSpec([None, 5, 4], "float32")])
    for batch in (2, 3):
        x = np.random.RandomState(batch).rand(batch, 5, 4).astype("float32")
        np.testing.assert_allclose(f(oar.to_tensor(x)).numpy(), 2.0 + x.sum(axis=1), rtol=1e-6)


def test_builtin_lstm_saved_with_unknown_batch(tmp_path):
    oar.seed(3)
    m = oar.nn.LSTM(4, 8, num_layers=2)
    oar.jit.save(m, str(tmp_path / "lstm"), input_spec=[oar.static.InputSpec([None, 5, 4], "float32")])
    loaded = oar.jit.load(str(tmp_path / "lstm"))
    for batch in (1, 3):
        x = oar.rand([batch, 5, 4])
        np.testing.assert_allclose(loaded(x)[0].numpy(), m(x)[0].numpy(), rtol=1e-5, atol=1e-6)


class LikeUser(oar.nn.Layer):
    def forward(self, x):
        return x + oar.zeros_like(x) + oar.ones_like(x)


def test_zeros_like_of_an_unknown_batch_survives_save_and_load(tmp_path):
    # Paddle's fill_constant would read the recording sentinel as a size: such fills stay oar's own op.
    oar.jit.save(LikeUser(), str(tmp_path / "m"), input_spec=[oar.static.InputSpec([None, 3], "float32")])
    loaded = oar.jit.load(str(tmp_path / "m"))
    for batch in (1, 4):
        x = np.random.RandomState(batch).rand(batch, 3).astype("float32")
        np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), x + 1.0, rtol=1e-6)
