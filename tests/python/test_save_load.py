"""oar.save / oar.load: Paddle's pickle layout both ways, and the restricted (safe) unpickler."""
import collections
import io
import os
import pickle

import numpy as np
import pytest

import oar
from oar.framework import io as fio


def _state_dict():
    w = oar.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    w.name = "linear_0.w_0"
    b = oar.to_tensor(np.array([1.5, -2.0], dtype=np.float64))
    b.name = "linear_0.b_0"
    step = oar.to_tensor(np.array([7], dtype=np.int64))
    step.name = "step_0"
    return collections.OrderedDict([("weight", w), ("bias", b), ("step", step)])


def test_state_dict_layout_and_round_trip(tmp_path):
    sd = _state_dict()
    path = tmp_path / "sub" / "dir" / "model.pdparams"  # parent directories are created
    oar.save(sd, str(path))
    with open(path, "rb") as f:
        raw = pickle.load(f)
    # Paddle's layout: numpy values plus the structured-name -> parameter-name table
    assert set(raw) == {"weight", "bias", "step", "StructuredToParameterName@@"}
    assert raw["StructuredToParameterName@@"] == {"weight": "linear_0.w_0", "bias": "linear_0.b_0", "step": "step_0"}
    assert isinstance(raw["weight"], np.ndarray) and raw["weight"].dtype == np.float32
    loaded = oar.load(str(path))
    assert list(loaded) == ["weight", "bias", "step"]
    for k, t in sd.items():
        assert isinstance(loaded[k], oar.Tensor)
        assert loaded[k].dtype == t.dtype and loaded[k].name == t.name
        np.testing.assert_array_equal(loaded[k].numpy(), t.numpy())
    as_np = oar.load(str(path), return_numpy=True)
    assert isinstance(as_np["bias"], np.ndarray) and as_np["bias"].tolist() == [1.5, -2.0]
    kept = oar.load(path, keep_name_table=True)  # os.PathLike works too
    assert kept["StructuredToParameterName@@"]["weight"] == "linear_0.w_0"
    assert not [p for p in os.listdir(path.parent) if p != "model.pdparams"]  # no temporary file left


def _paddle_layout_pickle(protocol):
    # Written by hand exactly as paddle.save writes a Linear(3, 2) state dict.
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([0.5, -0.5], dtype=np.float32)
    obj = {"weight": w, "bias": b,
           "StructuredToParameterName@@": {"weight": "linear_3.w_0", "bias": "linear_3.b_0"}}
    return pickle.dumps(obj, protocol=protocol), w, b


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_load_handwritten_paddle_file(tmp_path, protocol):
    data, w, b = _paddle_layout_pickle(protocol)
    p = tmp_path / "paddle.pdparams"
    p.write_bytes(data)
    sd = oar.load(str(p))
    assert set(sd) == {"weight", "bias"}
    np.testing.assert_array_equal(sd["weight"].numpy(), w)
    np.testing.assert_array_equal(sd["bias"].numpy(), b)
    assert sd["weight"].name == "linear_3.w_0"
    assert oar.load(io.BytesIO(data), return_numpy=True)["bias"].tolist() == [0.5, -0.5]


def test_numpy1_module_names_load():
    # Files written under numpy 1.x name numpy.core.multiarray instead of numpy._core.multiarray.
    data = pickle.dumps({"a": np.arange(3, dtype=np.int32)}, protocol=2)
    data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray" in data
    out = oar.load(io.BytesIO(data), return_numpy=True)
    assert out["a"].tolist() == [0, 1, 2] and out["a"].dtype == np.int32


def test_big_array_slices_protocol_2_and_3():
    # Paddle cuts arrays over 2**30 - 1 bytes into slices for protocols 2/3; use a tiny limit here.
    arr = np.arange(30, dtype=np.float32).reshape(5, 6)
    saved = fio._split_big_arrays({"w": arr.copy(), "StructuredToParameterName@@": {"w": "w_0"}}, 2, max_bytes=32)
    assert "w" not in saved and saved["UnpackBigParamInfor@@"]["w"]["slices"][0] == "w@@.0"
    assert len(saved["UnpackBigParamInfor@@"]["w"]["slices"]) == 4  # 8 floats per slice
    for protocol in (2, 3):
        buf = io.BytesIO(pickle.dumps(saved, protocol=protocol))
        out = oar.load(buf)
        assert set(out) == {"w"} and out["w"].shape == [5, 6] and out["w"].name == "w_0"
        np.testing.assert_array_equal(out["w"].numpy(), arr)
    # protocol 4 keeps arrays whole
    assert "UnpackBigParamInfor@@" not in fio._split_big_arrays({"w": arr}, 4, max_bytes=32)


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_protocols_round_trip(protocol):
    buf = io.BytesIO()
    oar.save(_state_dict(), buf, protocol=protocol)
    buf.seek(0)
    out = oar.load(buf)
    np.testing.assert_array_equal(out["weight"].numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))


def test_nested_objects_and_plain_tensor(tmp_path):
    t = oar.to_tensor([1.0, 2.0])
    t.name = "my_t"
    obj = {"model": {"lr": 0.1, "tags": ["a", "b"]}, "tensors": [t, (oar.ones([2, 2]), 3)], "epoch": 4,
           "blob": b"\x00\x01", "c": 1 + 2j, "none": None, "od": collections.OrderedDict(x=1)}
    buf = io.BytesIO()
    oar.save(obj, buf)
    raw = pickle.loads(buf.getvalue())
    # Paddle writes tensors inside other objects as (name, ndarray) tuples
    assert raw["tensors"][0][0] == "my_t" and isinstance(raw["tensors"][0][1], np.ndarray)
    buf.seek(0)
    out = oar.load(buf)
    assert isinstance(out["tensors"][0], oar.Tensor) and out["tensors"][0].name == "my_t"
    assert out["tensors"][0].numpy().tolist() == [1.0, 2.0]
    assert isinstance(out["tensors"][1], tuple) and out["tensors"][1][1] == 3
    np.testing.assert_array_equal(out["tensors"][1][0].numpy(), np.ones((2, 2), np.float32))
    assert out["model"] == {"lr": 0.1, "tags": ["a", "b"]} and out["epoch"] == 4
    assert out["blob"] == b"\x00\x01" and out["c"] == 1 + 2j and out["none"] is None
    assert isinstance(out["od"], collections.OrderedDict)
    # a single tensor
    p = str(tmp_path / "t.pdtensor")
    oar.save(t, p)
    back = oar.load(p)
    assert isinstance(back, oar.Tensor) and back.name == "my_t" and back.numpy().tolist() == [1.0, 2.0]
    assert oar.load(p, return_numpy=True).tolist() == [1.0, 2.0]
    # plain numbers / strings / arrays without tensors
    oar.save({"a": [1, 2.5, "x"]}, p)
    assert oar.load(p) == {"a": [1, 2.5, "x"]}
    oar.save([np.arange(3)], p)
    arr = oar.load(p)[0]
    assert isinstance(arr, oar.Tensor) and arr.numpy().tolist() == [0, 1, 2]


class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, ("touch " + self.marker,)


class Trusted:
    def __init__(self, v=0):
        self.v = v


def test_malicious_pickle_refused(tmp_path):
    marker = tmp_path / "pwned"
    for payload in (Evil(str(marker)), {"weight": np.zeros(2), "x": [Evil(str(marker))]}):
        for protocol in (2, 4):
            data = pickle.dumps(payload, protocol=protocol)
            with pytest.raises(pickle.UnpicklingError, match="refusing to unpickle '(posix|os).system'"):
                oar.load(io.BytesIO(data))
            p = tmp_path / "evil.pdparams"
            p.write_bytes(data)
            with pytest.raises(pickle.UnpicklingError, match="refusing"):
                oar.load(str(p))
    assert not marker.exists()  # nothing ran
    # other dangerous globals
    evil_eval = b"cbuiltins\neval\n(S'1+1'\ntR."
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        oar.load(io.BytesIO(evil_eval))
    with pytest.raises(pickle.UnpicklingError, match="Trusted"):
        oar.load(io.BytesIO(pickle.dumps(Trusted(3))))


def test_allowed_globals_opt_in():
    data = pickle.dumps({"obj": Trusted(5)})
    assert oar.load(io.BytesIO(data), allowed_globals=[Trusted])["obj"].v == 5
    name = Trusted.__module__ + ".Trusted"
    assert oar.load(io.BytesIO(data), allowed_globals=[name])["obj"].v == 5


def test_save_errors(tmp_path):
    with pytest.raises(ValueError, match="directory"):
        oar.save({"a": oar.ones([1])}, str(tmp_path))
    with pytest.raises(ValueError, match="protocol"):
        oar.save({"a": oar.ones([1])}, str(tmp_path / "x"), protocol=5)
    with pytest.raises(ValueError, match="protocol"):
        oar.save({"a": oar.ones([1])}, str(tmp_path / "x"), protocol="4")
    with pytest.raises(TypeError, match="cannot pickle"):
        oar.save({"f": lambda x: x}, str(tmp_path / "bad.pkl"))
    assert not os.listdir(tmp_path)  # no partial or temporary file
    with pytest.raises(ValueError, match="config"):
        oar.save({}, str(tmp_path / "x"), bogus=1)


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        oar.load(str(tmp_path / "missing.pdparams"))
    with pytest.raises(ValueError, match="directory"):
        oar.load(str(tmp_path))
    p = tmp_path / "garbage"
    p.write_bytes(b"this is not a pickle")
    with pytest.raises((ValueError, pickle.UnpicklingError)):
        oar.load(str(p))


def test_set_state_dict_from_load(tmp_path):
    nn = pytest.importorskip("oar.nn")
    if not hasattr(nn, "Linear"):
        pytest.skip("oar.nn.Linear not available in this build")
    lin = nn.Linear(3, 2)
    p = str(tmp_path / "lin.pdparams")
    oar.save(lin.state_dict(), p)
    other = nn.Linear(3, 2)
    other.set_state_dict(oar.load(p))
    for k, v in lin.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k].numpy(), v.numpy())
    with pytest.raises(ValueError, match="Layer"):
        oar.save(lin, p)
