"""The private binding of the inference passes (oar._C._run_inference_passes) on the PaddlePaddle-made
fixtures; the C++ test (test_passes) covers each pass in detail."""
import os

import numpy as np
import pytest

import oar

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "paddle")


def read(rel):
    with open(os.path.join(FIXTURES, rel), "rb") as f:
        return f.read()


def run(program, params, x):
    ex = oar._C._Executor(program, "cpu", collect_stats=True)
    oar._C._executor_set_params(ex, params)
    (out,) = ex.run({ex.feed_names[0]: oar.to_tensor(x)})
    return out.numpy(), ex.stats()


@pytest.mark.parametrize("model", ["mlp", "lenet", "static_mlp"])
def test_passes_keep_results(model):
    p = oar._C._ProgramDesc.from_bytes(read(model + "/model.pdmodel"))
    params = oar._C._load_param_tensors(p, read(model + "/model.pdiparams"))
    x = np.load(os.path.join(FIXTURES, model, "input.npy"))
    want = np.load(os.path.join(FIXTURES, model, "output.npy"))
    base, _ = run(p, params, x)
    q, qparams, report = oar._C._run_inference_passes(p, params)
    assert report["ops_after"] < report["ops_before"]
    got, _ = run(q, qparams, x)
    np.testing.assert_allclose(got, base, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The input program and parameters are untouched.
    assert oar._C._ProgramDesc.from_bytes(read(model + "/model.pdmodel")).to_bytes() == p.to_bytes()
    assert sorted(params) == sorted(oar._C._load_param_tensors(p, read(model + "/model.pdiparams")))


def test_flags_and_report():
    p = oar._C._ProgramDesc.from_bytes(read("lenet/model.pdmodel"))
    params = oar._C._load_param_tensors(p, read("lenet/model.pdiparams"))
    _, _, none = oar._C._run_inference_passes(
        p, params, dce=False, constant_folding=False, cse=False, fuse_elementwise_act=False,
        fuse_matmul_bias=False, fold_conv_bn=False, memory_reuse=False)
    assert none["ops_before"] == none["ops_after"]
    _, _, r = oar._C._run_inference_passes(p, params, memory_reuse=False)
    assert "memory_reuse" not in r
    assert r["fold_conv_bn"]["ops_fused"] == 1
    assert r["fuse_matmul_bias"]["ops_fused"] == 1
    with pytest.raises(TypeError, match="must be a Tensor"):
        oar._C._run_inference_passes(p, {"conv2d_0.w_0": np.zeros(3)})
