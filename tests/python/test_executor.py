"""The private block-0 executor binding (oar._C._Executor) on the PaddlePaddle-made fixtures in
tests/fixtures/paddle; the C++ test (test_executor) covers the op translations in detail."""
import os

import numpy as np
import pytest

import oar

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "paddle")


def read(rel):
    with open(os.path.join(FIXTURES, rel), "rb") as f:
        return f.read()


def load(model, device, gc=True):
    p = oar._C._ProgramDesc.from_bytes(read(model + "/model.pdmodel"))
    ex = oar._C._Executor(p, device, garbage_collect=gc, collect_stats=True)
    ex.load_params(read(model + "/model.pdiparams"))
    return ex


@pytest.mark.parametrize("model", ["mlp", "lenet", "static_mlp"])
def test_matches_paddle(model, device):
    ex = load(model, device)
    x = np.load(os.path.join(FIXTURES, model, "input.npy"))
    want = np.load(os.path.join(FIXTURES, model, "output.npy"))
    assert len(ex.feed_names) == 1 and len(ex.fetch_names) == 1
    (out,) = ex.run({ex.feed_names[0]: oar.to_tensor(x, place=device)})
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert ex.stats()["runs"] == 1


def test_gc_and_errors():
    x = oar.to_tensor(np.load(os.path.join(FIXTURES, "lenet", "input.npy")))
    a, b = load("lenet", "cpu", gc=False), load("lenet", "cpu")
    np.testing.assert_allclose(a.run({"image": x})[0].numpy(), b.run({"image": x})[0].numpy())
    assert b.stats()["peak_live_tensors"] < a.stats()["peak_live_tensors"]
    assert b.stats()["released"] > 0 and a.stats()["released"] == 0
    with pytest.raises(ValueError, match="'img' is not a feed target"):
        b.run({"img": x})
    with pytest.raises(ValueError, match="feed 'image' has shape"):
        b.run({"image": oar.ones([2, 1, 10, 10])})
    with pytest.raises(TypeError, match="must be a Tensor"):
        b.run({"image": np.zeros([2, 1, 12, 12], "float32")})
    # Paddle's while_loop program (a while op over a sub-block) runs and gives Paddle's output.
    w = oar._C._Executor(oar._C._ProgramDesc.from_bytes(read("while_loop/model.pdmodel")))
    wx = np.load(os.path.join(FIXTURES, "while_loop", "input.npy"))
    got = w.run({w.feed_names[0]: oar.to_tensor(wx)})[0]
    np.testing.assert_allclose(got.numpy(), np.load(os.path.join(FIXTURES, "while_loop", "output.npy")),
                               rtol=1e-5, atol=1e-6)
