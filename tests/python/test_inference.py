"""oar.inference (Paddle's paddle.inference API over the C++ oar_infer) on the PaddlePaddle-made fixtures
in tests/fixtures/paddle: Paddle's outputs on every device, handles, run(list), clone, PredictorPool,
threads, errors."""
import os
import shutil
import threading

import numpy as np
import pytest

import oar
from oar import inference

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "paddle")


def fixture(rel):
    return os.path.join(FIXTURES, rel)


def config(model, device="cpu"):
    c = inference.Config(fixture(model + "/model.pdmodel"), fixture(model + "/model.pdiparams"))
    c.set_device(device)
    return c


def io(model):
    return np.load(fixture(model + "/input.npy")), np.load(fixture(model + "/output.npy"))


@pytest.mark.parametrize("model", ["mlp", "lenet", "static_mlp"])
def test_handles_match_paddle(model, device):
    x, want = io(model)
    p = inference.create_predictor(config(model, device))
    assert p.device() == device
    (name,) = p.get_input_names()
    h = p.get_input_handle(name)
    h.reshape(list(x.shape))
    h.copy_from_cpu(x)
    p.run()
    out = p.get_output_handle(p.get_output_names()[0])
    assert out.shape() == list(want.shape)
    assert out.type() == inference.DataType.FLOAT32
    y = out.copy_to_cpu()
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    # copy_from_cpu alone sets the shape (Paddle's Python behaviour): batch 1.
    h.copy_from_cpu(x[:1])
    p.run()
    np.testing.assert_allclose(out.copy_to_cpu(), want[:1], rtol=1e-5, atol=1e-6)


def test_run_with_lists(device):
    x, want = io("lenet")
    p = inference.create_predictor(config("lenet", device))
    (y,) = p.run([x])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    # oar Tensors in, oar Tensors out (on the predictor's device, no host copy).
    (t,) = p.run([oar.to_tensor(x)])
    assert isinstance(t, oar.Tensor)
    assert str(t.place).lower().find(device.split(":")[0]) >= 0
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-5, atol=1e-6)
    assert p.get_output_handle(p.get_output_names()[0]).to_tensor() is not None
    h = p.get_input_handle("image")
    xt = oar.to_tensor(x[:1])
    h.share_external_data(xt)
    assert h.shape() == [1, 1, 12, 12] and h.lod() == []
    p.run()
    np.testing.assert_allclose(p.get_output_handle("linear_0.tmp_1").copy_to_cpu(), want[:1], rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="expected an oar.Tensor"):
        h.share_external_data(x)
    with pytest.raises(ValueError, match="the model has 1 inputs, got 2"):
        p.run([x, x])


def test_names_types_config():
    p = inference.create_predictor(config("lenet"))
    assert p.get_input_names() == ["image"]
    assert p.get_output_names() == ["linear_0.tmp_1"]
    assert p.get_input_tensor_shape() == {"image": [-1, 1, 12, 12]}
    assert p.get_output_tensor_shape() == {"linear_0.tmp_1": [-1, 5]}
    assert p.get_input_types() == {"image": inference.DataType.FLOAT32}
    assert p.get_output_types() == {"linear_0.tmp_1": inference.DataType.FLOAT32}
    h = p.get_input_handle("image")
    assert h.name() == "image"
    assert h.shape() == [-1, 1, 12, 12]
    assert h.type() == inference.DataType.FLOAT32
    assert h.place() == inference.PlaceType.CPU
    assert inference.get_num_bytes_of_data_type(inference.DataType.INT64) == 8
    assert "oar" in inference.get_version()
    c = config("lenet")
    assert c.prog_file().endswith("model.pdmodel") and c.params_file().endswith("model.pdiparams")
    assert c.ir_optim() and not c.memory_optim_enabled()
    c.switch_ir_optim(False)
    c.enable_memory_optim()
    c.set_cpu_math_library_num_threads(2)
    c.disable_glog_info()
    c.switch_use_feed_fetch_ops(False)
    assert not c.ir_optim() and c.memory_optim_enabled() and c.cpu_math_library_num_threads() == 2
    c.enable_custom_device("sim", 0)
    assert c.use_custom_device() and c.custom_device_type() == "sim" and c.device() == "sim:0"
    c.disable_gpu()
    assert c.device() == "cpu" and not c.use_gpu()
    s = c.summary()
    assert "cpu_math_threads" in s and "memory_optim" in s and "model.pdmodel" in s
    x, want = io("lenet")
    (y,) = inference.create_predictor(c).run([x])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    assert inference.Config.__module__ == "oar.inference" and inference.Config.__name__ == "Config"


def test_clone_shares_weights():
    x, want = io("lenet")
    cfg = config("lenet")
    cfg.switch_ir_optim(False)  # keep the file's parameters (conv+bn folding replaces some)
    p = inference.create_predictor(cfg)
    c = p.clone()
    for name in ["conv2d_0.w_0", "batch_norm2d_0.w_1", "linear_0.w_0"]:
        a, b = p.get_variable(name), c.get_variable(name)
        assert a is not None and b is not None
        assert a.data_ptr() == b.data_ptr()
        np.testing.assert_array_equal(a.numpy(), np.load(fixture("lenet/params/" + name + ".npy")))
    np.testing.assert_allclose(c.run([x])[0], want, rtol=1e-5, atol=1e-6)
    # Its own inputs: the original has none yet.
    with pytest.raises(RuntimeError, match="input 'image' has no data"):
        p.run()
    del p
    np.testing.assert_allclose(c.run([x])[0], want, rtol=1e-5, atol=1e-6)


def test_pool_and_threads():
    x, want = io("lenet")
    pool = inference.PredictorPool(config("lenet"), 3)
    assert len(pool) == 3
    preds = [pool.retrive(i) for i in range(3)]
    assert pool.retrieve(1) is not None
    with pytest.raises(IndexError, match="index 3 out of range"):
        pool.retrieve(3)
    errors = []

    def work(p):
        try:
            for _ in range(20):
                (y,) = p.run([x])
                np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(p,)) for p in preds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    del pool
    # A predictor taken from a pool stays usable after the pool is gone.
    np.testing.assert_allclose(preds[2].run([x])[0], want, rtol=1e-5, atol=1e-6)


def test_memory():
    x, want = io("lenet")
    p = inference.create_predictor(config("lenet"))
    p.run([x])
    assert p.get_variable("conv2d_0.tmp_0") is not None  # memory optim off: intermediates stay
    p.clear_intermediate_tensor()
    assert p.get_variable("conv2d_0.tmp_0") is None
    p.run([np.ones((2048, 1, 12, 12), np.float32)])
    p.get_input_handle("image").copy_from_cpu(x)
    assert p.try_shrink_memory() > 0
    p.run()
    np.testing.assert_allclose(p.get_output_handle("linear_0.tmp_1").copy_to_cpu(), want, rtol=1e-5, atol=1e-6)
    c = config("lenet")
    c.enable_memory_optim()
    q = inference.create_predictor(c)
    q.run([x])
    assert q.get_variable("conv2d_0.tmp_0") is None


def test_model_dir_and_buffer(tmp_path):
    x, want = io("mlp")
    shutil.copy(fixture("mlp/model.pdmodel"), tmp_path / "inference.pdmodel")
    shutil.copy(fixture("mlp/model.pdiparams"), tmp_path / "inference.pdiparams")
    c = inference.Config(str(tmp_path))
    assert c.model_dir() == str(tmp_path)
    assert c.prog_file().endswith("inference.pdmodel")
    np.testing.assert_allclose(inference.create_predictor(c).run([x])[0], want, rtol=1e-5, atol=1e-6)
    prog = open(fixture("mlp/model.pdmodel"), "rb").read()
    params = open(fixture("mlp/model.pdiparams"), "rb").read()
    a, b = inference.Config(), inference.Config()
    a.set_model_buffer(prog, len(prog), params, len(params))  # Paddle's signature
    b.set_model_buffer(prog, params)
    for c in (a, b):
        assert c.model_from_memory()
        np.testing.assert_allclose(inference.create_predictor(c).run([x])[0], want, rtol=1e-5, atol=1e-6)


def test_errors():
    with pytest.raises(RuntimeError, match="model folder '/no/such/dir' does not exist"):
        inference.Config("/no/such/dir")
    with pytest.raises(RuntimeError, match="program file '/no/such.pdmodel' does not exist"):
        inference.create_predictor(inference.Config("/no/such.pdmodel", "/no/such.pdiparams"))
    with pytest.raises(RuntimeError, match="parameter file '/no/such.pdiparams' does not exist"):
        inference.create_predictor(inference.Config(fixture("mlp/model.pdmodel"), "/no/such.pdiparams"))
    with pytest.raises(RuntimeError, match="device 'nosuch:0' is not available"):
        inference.create_predictor(config("mlp", "nosuch:0"))
    with pytest.raises(TypeError, match="expected an oar.inference.Config"):
        inference.create_predictor("model.pdmodel")
    with pytest.raises(NotImplementedError, match="precision Half is not supported|precision kHalf"):
        inference.Config().enable_use_gpu(100, 0, inference.PrecisionType.Half)
    p = inference.create_predictor(config("mlp"))
    with pytest.raises(RuntimeError, match="'y' is not an input of the model"):
        p.get_input_handle("y")
    with pytest.raises(RuntimeError, match="is not an output of the model"):
        p.get_output_handle("x")
    with pytest.raises(RuntimeError, match="input 'x' has no data"):
        p.run()
    out = p.get_output_handle(p.get_output_names()[0])
    with pytest.raises(RuntimeError, match="call Run first"):
        out.copy_to_cpu()
    h = p.get_input_handle("x")
    with pytest.raises(TypeError, match="FLOAT64 data into input 'x' which is FLOAT32"):
        h.copy_from_cpu(np.ones((2, 4)))
    with pytest.raises(TypeError, match="expected a numpy.ndarray"):
        h.copy_from_cpu([[1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(ValueError, match=r"the model declares \[-1, 4\]"):
        h.copy_from_cpu(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"the model declares \[-1, 4\]"):
        h.reshape([2, 3])
    # Non-contiguous arrays are accepted (copied to C order first).
    x = np.asfortranarray(np.arange(8, dtype=np.float32).reshape(2, 4))
    h.copy_from_cpu(x)
    np.testing.assert_array_equal(h.copy_to_cpu(), np.ascontiguousarray(x))
    p.run()
    assert out.shape() == [2, 3]
