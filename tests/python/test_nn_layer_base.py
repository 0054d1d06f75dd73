"""oar.nn.Layer base behaviour, Parameter, ParamAttr, containers (Paddle 2.x semantics)."""
import copy
import warnings

import numpy as np
import pytest

import oar
from oar import nn
from oar.framework import Parameter, unique_name


class Affine(nn.Layer):
    def __init__(self, n_in, n_out, weight_attr=None, bias_attr=None):
        super().__init__()
        self.weight = self.create_parameter([n_in, n_out], attr=weight_attr)
        self.bias = self.create_parameter([n_out], attr=bias_attr, is_bias=True)

    def forward(self, x):
        y = oar.matmul(x, self.weight)
        return y if self.bias is None else y + self.bias


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = Affine(3, 4)
        self.fc2 = Affine(4, 2)
        self.register_buffer("steps", oar.zeros([1]))
        self.register_buffer("scratch", oar.zeros([2]), persistable=False)

    def forward(self, x):
        return self.fc2(oar.nn.functional.relu(self.fc1(x)))


def test_unique_names_follow_paddle():
    with unique_name.guard():
        a, b = Affine(2, 3), Affine(2, 3)
        assert a.full_name() == "affine_0" and b.full_name() == "affine_1"
        assert [p.name for p in a.parameters()] == ["affine_0.w_0", "affine_0.b_0"]
        assert [p.name for p in b.parameters()] == ["affine_1.w_0", "affine_1.b_0"]


def test_camel_to_snake_matches_paddle():
    from oar.nn.layer.layers import _camel_to_snake
    assert _camel_to_snake("Conv2D") == "conv2d"
    assert _camel_to_snake("BatchNorm2D") == "batch_norm2d"
    assert _camel_to_snake("MultiHeadAttention") == "multi_head_attention"
    assert _camel_to_snake("LSTM") == "lstm"


def test_parameter_attributes():
    p = Affine(2, 3).weight
    assert isinstance(p, Parameter) and isinstance(p, oar.Tensor)
    assert p.trainable and not p.stop_gradient and p.persistable and p.need_clip
    assert p.optimize_attr == {"learning_rate": 1.0} and p.regularizer is None
    p.trainable = False
    assert p.stop_gradient
    with pytest.raises(TypeError, match="trainable"):
        p.trainable = 1
    assert repr(p).startswith("Parameter containing:\nTensor(shape=[2, 3]")


def test_param_attr_controls_creation():
    init = nn.initializer.Constant(0.5)
    attr = oar.ParamAttr(name="my_w", initializer=init, learning_rate=0.1, trainable=False, need_clip=False)
    layer = Affine(2, 3, weight_attr=attr, bias_attr=False)
    assert layer.bias is None and len(layer.parameters()) == 1
    w = layer.weight
    assert w.name == "my_w" and not w.trainable and not w.need_clip
    assert w.optimize_attr["learning_rate"] == pytest.approx(0.1)
    np.testing.assert_array_equal(w.numpy(), np.full([2, 3], 0.5, np.float32))
    # A str names the parameter, an Initializer initialises it.
    layer2 = Affine(2, 2, weight_attr="named", bias_attr=nn.initializer.Constant(2.0))
    assert layer2.weight.name == "named"
    np.testing.assert_array_equal(layer2.bias.numpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="ParamAttr"):
        Affine(2, 2, weight_attr=3.5)


def test_default_initializers_are_paddles():
    layer = Affine(300, 200)
    w = layer.weight.numpy()
    limit = np.sqrt(6.0 / (300 + 200))  # XavierUniform
    assert np.abs(w).max() <= limit + 1e-6 and np.abs(w).max() > 0.9 * limit
    assert abs(w.std() - limit / np.sqrt(3)) < 0.05 * limit
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(200, np.float32))


def test_global_initializer():
    nn.initializer.set_global_initializer(nn.initializer.Constant(1.0), nn.initializer.Constant(3.0))
    try:
        layer = Affine(2, 2)
        np.testing.assert_array_equal(layer.weight.numpy(), np.ones([2, 2], np.float32))
        np.testing.assert_array_equal(layer.bias.numpy(), [3.0, 3.0])
    finally:
        nn.initializer.set_global_initializer(None, None)
    assert abs(Affine(2, 2).bias.numpy()).sum() == 0


def test_registration_and_traversal():
    net = Net()
    assert list(net._sub_layers) == ["fc1", "fc2"]
    assert [n for n, _ in net.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in net.named_sublayers()] == ["fc1", "fc2"]
    assert net.sublayers(include_self=True)[0] is net
    assert [l for l in net.children()] == [net.fc1, net.fc2]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    # state_dict: parameters and persistable buffers only, own entries before sublayers'.
    assert list(net.state_dict()) == ["steps", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert net.state_dict()["fc1.weight"] is net.fc1.weight
    # A parameter shared by two sublayers is listed once.
    net.fc3 = net.fc1
    assert len(net.parameters()) == 4
    del net.fc3
    assert "fc3" not in net._sub_layers


def test_setattr_rules():
    net = Net()
    net.plain = oar.ones([1])  # not a registered buffer: a plain attribute
    assert "plain" not in net._buffers
    net.steps = oar.ones([1])  # replaces the buffer
    assert net._buffers["steps"] is net.steps
    with pytest.raises(TypeError, match="parameter 'weight'"):
        net.fc1.weight = oar.ones([3, 4])
    with pytest.raises(TypeError, match="sublayer 'fc1'"):
        net.fc1 = 3
    net.fc2 = None
    assert net.fc2 is None and len(net.parameters()) == 2
    with pytest.raises(AttributeError, match="nothing"):
        net.nothing

    class Early(nn.Layer):
        def __init__(self):
            self.w = Affine(1, 1).weight

    with pytest.raises(ValueError, match="__init__"):
        Early()


def test_register_buffer_errors():
    net = Net()
    with pytest.raises(TypeError, match="Tensor"):
        net.register_buffer("x", np.zeros(2))
    with pytest.raises(KeyError, match="'.'"):
        net.register_buffer("a.b", oar.zeros([1]))
    with pytest.raises(KeyError, match="already exists"):
        net.register_buffer("training", oar.zeros([1]))
    with pytest.raises(TypeError, match="Parameter"):
        net.add_parameter("q", oar.zeros([1]))
    with pytest.raises(TypeError, match="Layer"):
        net.add_sublayer("s", 3)


def test_forward_and_backward_reach_parameters():
    net = Net()
    x = oar.to_tensor(np.random.RandomState(0).randn(5, 3).astype(np.float32))
    y = net(x)
    assert y.shape == [5, 2]
    y.sum().backward()
    for p in net.parameters():
        assert p.grad is not None and p.grad.shape == p.shape
    # Reference gradient for the last bias: d(sum)/d(b2) = batch size.
    np.testing.assert_allclose(net.fc2.bias.grad.numpy(), [5.0, 5.0])
    net.clear_gradients()
    assert all(float(abs(p.grad).sum()) == 0 for p in net.parameters())
    net.clear_gradients(set_to_zero=False)
    assert all(p.grad is None for p in net.parameters())


def test_hooks():
    net = Net()
    calls = []
    h1 = net.register_forward_pre_hook(lambda layer, inp: (inp[0] * 0,))
    h2 = net.register_forward_post_hook(lambda layer, inp, out: calls.append(out.shape) or out + 1)
    out = net(oar.ones([2, 3]))
    np.testing.assert_allclose(out.numpy(), (net.fc2.bias + 1).numpy()[None].repeat(2, 0), rtol=1e-6)
    assert calls == [[2, 2]]
    h1.remove()
    h2.remove()
    out2 = net(oar.ones([2, 3]))
    assert calls == [[2, 2]] and not np.allclose(out2.numpy(), out.numpy())


def test_train_eval_apply():
    net = Net()
    net.eval()
    assert not net.training and not net.fc1.training
    net.train()
    assert net.fc2.training
    seen = []
    net.apply(lambda l: seen.append(type(l).__name__))
    assert seen == ["Affine", "Affine", "Net"]


def test_state_dict_round_trip_and_checks():
    src, dst = Net(), Net()
    src.steps.set_value(oar.to_tensor([7.0]))
    missing, unexpected = dst.set_state_dict({k: v.numpy() for k, v in src.state_dict().items()})
    assert missing == [] and unexpected == []
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    # By parameter name instead of structured name.
    third = Net()
    # Keys are parameter names (as in a file saved from this very model).
    by_name = {third.state_dict()[k].name: v for k, v in src.state_dict().items()}
    third.set_state_dict(by_name, use_structured_name=False)
    np.testing.assert_array_equal(third.fc2.weight.numpy(), src.fc2.weight.numpy())
    with pytest.raises(ValueError, match=r"fc1.weight.*\[3, 4\]"):
        dst.set_state_dict({"fc1.weight": np.zeros([4, 3], np.float32)})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        missing, unexpected = dst.set_state_dict({"bogus": np.zeros(1)})
    assert "bogus" in unexpected and "fc1.weight" in missing and len(w) == 2
    # Aliases.
    assert Net.set_dict is Net.set_state_dict and Net.load_dict is Net.set_state_dict


def test_to_dtype_keeps_parameter_objects(device):
    net = Net()
    w = net.fc1.weight
    net.to(device=device, dtype="float64")
    assert net.fc1.weight is w and w.dtype == oar.float64 and str(w.place) == str(oar.to_tensor(1.0, place=device).place)
    assert w.trainable and w.name.endswith(".w_0")
    y = net(oar.ones([1, 3], dtype="float64").to(device))
    y.sum().backward()
    assert w.grad.dtype == oar.float64
    net.float()
    assert w.dtype == oar.float32 and net.steps.dtype == oar.float32


def test_repr_matches_paddle_layout():
    class Leaf(nn.Layer):
        def extra_repr(self):
            return "in=2"

    seq = nn.Sequential(Leaf(), ("named", Leaf())) if False else nn.Sequential(Leaf(), Leaf())
    assert repr(seq) == "Sequential(\n  (0): Leaf(in=2)\n  (1): Leaf(in=2)\n)"
    assert repr(Leaf()) == "Leaf(in=2)"


def test_deepcopy_gives_independent_parameters_with_new_names():
    net = Net()
    twin = copy.deepcopy(net)
    assert twin.fc1.weight is not net.fc1.weight
    assert twin.fc1.weight.name != net.fc1.weight.name and twin.fc1.weight.name.startswith(net.fc1.weight.name)
    np.testing.assert_array_equal(twin.fc1.weight.numpy(), net.fc1.weight.numpy())
    twin.fc1.weight.set_value(oar.zeros([3, 4]))
    assert float(abs(net.fc1.weight).sum()) > 0
    assert not twin.fc1.weight.stop_gradient


def test_sequential():
    a, b = Affine(2, 3), Affine(3, 1)
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b and list(seq) == [a, b]
    assert isinstance(seq[0:1], nn.Sequential) and len(seq[0:1]) == 1
    named = nn.Sequential(("first", a), ("second", b))
    assert named["first"] is a and list(named.state_dict())[0] == "first.weight"
    x = oar.ones([4, 2])
    np.testing.assert_allclose(seq(x).numpy(), b(a(x)).numpy())
    with pytest.raises(IndexError, match="out of range"):
        seq[5]


def test_layer_list_and_dict_and_parameter_list():
    ll = nn.LayerList([Affine(1, 1) for _ in range(3)])
    assert len(ll) == 3 and len(ll.parameters()) == 6
    ll.append(Affine(1, 1))
    ll.insert(0, Affine(1, 2))
    assert ll[0].weight.shape == [1, 2] and len(ll) == 5
    del ll[0]
    assert len(ll) == 4 and list(ll._sub_layers) == ["0", "1", "2", "3"]
    ll.extend([Affine(1, 1)])
    assert len(ll[1:3]) == 2

    ld = nn.LayerDict({"a": Affine(1, 1), "b": Affine(1, 2)})
    assert list(ld.keys()) == ["a", "b"] and "a" in ld and len(ld) == 2
    ld["c"] = Affine(2, 2)
    assert len(ld.parameters()) == 6
    ld.pop("a")
    assert list(ld) == ["b", "c"]

    pl = nn.ParameterList([Affine(1, 1).weight for _ in range(2)])
    assert len(pl) == 2 and len(pl.parameters()) == 2
    with pytest.raises(TypeError, match="Parameter"):
        pl.append(oar.ones([1]))


def test_create_parameter_function():
    p = oar.create_parameter([2, 3], "float64", default_initializer=nn.initializer.Constant(4.0))
    assert p.dtype == oar.float64 and p.trainable and p.name.startswith("create_parameter")
    np.testing.assert_array_equal(p.numpy(), np.full([2, 3], 4.0))
    with pytest.raises(ValueError, match="shape"):
        oar.create_parameter([2, -1], "float32")
