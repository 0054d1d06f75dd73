"""The private program-IR binding (oar._C._ProgramDesc and the parameter-file helpers) on the
PaddlePaddle-made fixtures in tests/fixtures/paddle; the C++ tests (test_program*) cover the formats."""
import os

import numpy as np
import pytest

import oar

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "paddle")


def read(rel):
    with open(os.path.join(FIXTURES, rel), "rb") as f:
        return f.read()


def test_parse_inspect_and_round_trip():
    data = read("lenet/model.pdmodel")
    p = oar._C._ProgramDesc.from_bytes(data)
    assert p.num_blocks == 1
    assert p.to_bytes() == data
    assert p.op_version_map["conv2d"] == 1
    b = p.block(0)
    types = [op["type"] for op in b["ops"]]
    assert types[:3] == ["feed", "conv2d", "reshape2"] and types[-1] == "fetch"
    conv = b["ops"][1]
    assert conv["inputs"]["Input"] == ["image"]
    assert conv["attrs"]["strides"] == [1, 1] and conv["attr_types"]["strides"] == "INTS"
    assert conv["attrs"]["data_format"] == "NCHW"
    var = {v["name"]: v for v in b["vars"]}
    assert var["image"]["shape"] == [-1, 1, 12, 12]
    assert var["image"]["dtype"] == oar.float32
    assert var["conv2d_0.w_0"]["persistable"]
    assert var["feed"]["type"] == "FEED_MINIBATCH"
    assert "conv2d(inputs={Filter=['conv2d_0.w_0'], Input=['image']}" in str(p)
    assert p.clone() == p


def test_parameters_match_paddle():
    p = oar._C._ProgramDesc.from_bytes(read("mlp/model.pdmodel"))
    raw = read("mlp/model.pdiparams")
    params = oar._C._load_combined_params(p, raw)
    assert sorted(params) == p.param_names() == ["linear_0.b_0", "linear_0.w_0", "linear_1.b_0", "linear_1.w_0"]
    for name, value in params.items():
        np.testing.assert_array_equal(value, np.load(os.path.join(FIXTURES, "mlp", "params", name + ".npy")))
    assert oar._C._save_combined_params(params) == raw
    info = oar._C._parse_params_info(read("mlp/model.pdiparams.info"))
    assert info["linear_0.w_0"] == {"structured_name": "fc1.weight", "stop_gradient": False, "trainable": True}
    assert oar._C._serialize_params_info(info) == read("mlp/model.pdiparams.info")


def test_sub_block():
    p = oar._C._ProgramDesc.from_bytes(read("while_loop/model.pdmodel"))
    assert p.num_blocks == 2
    w = [op for op in p.block(0)["ops"] if op["type"] == "while"][0]
    assert w["attrs"]["sub_block"] == 1 and w["attr_types"]["sub_block"] == "BLOCK"
    assert p.block(1)["parent_idx"] == 0


def test_bad_files_raise_value_error():
    data = read("mlp/model.pdmodel")
    with pytest.raises(ValueError, match="program"):
        oar._C._ProgramDesc.from_bytes(data[:100])
    p = oar._C._ProgramDesc.from_bytes(data)
    with pytest.raises(ValueError, match="truncated"):
        oar._C._load_combined_params(p, read("mlp/model.pdiparams")[:-3])
    with pytest.raises(ValueError, match="pdiparams.info"):
        oar._C._parse_params_info(b"\x80\x02]q\x00.")
