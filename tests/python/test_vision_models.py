"""oar.vision.models (every family of paddle.vision.models): structure identical to Paddle's
(state_dict keys, shapes, parameter counts), forward outputs equal to Paddle's for fixed weights,
LeNet training step, numpy reference and devices, the pretrained=True error."""
import hashlib
import math
import os

import numpy as np
import pytest

import oar
import oar.nn.functional as F
import oar.vision.models as models
from oar.nn import initializer as I

# Reference data generated from the installed PaddlePaddle 3.3.1 (paddle.vision.models, default
# constructors plus the kwargs shown) by a one-off script, pasted here as literals:
#   name: (constructor, kwargs, number of state_dict entries, total parameter elements (parameters(),
#          which in Paddle includes BatchNorm's _mean/_variance), trainable parameter elements,
#          sha1(''.join('{key}:{list(shape)}\n' for key, value in state_dict().items()))[:16])
PADDLE_STRUCTURE = {
    "LeNet": ("LeNet", {}, 10, 61610, 61610, "f416ae55e9e42f56"),
    "LeNet_nc0": ("LeNet", {"num_classes": 0}, 4, 2476, 2476, "85c02faf09eced33"),
    "resnet18": ("resnet18", {}, 102, 11699112, 11689512, "7107087df230ab33"),
    "resnet34": ("resnet34", {}, 182, 21814696, 21797672, "40ea6ba032b82b93"),
    "resnet50": ("resnet50", {}, 267, 25610152, 25557032, "a3550427347a66d9"),
    "resnet101": ("resnet101", {}, 522, 44654504, 44549160, "207e0b6a0389f12f"),
    "resnet152": ("resnet152", {}, 777, 60344232, 60192808, "d6e72812c77f0046"),
    "wide_resnet50_2": ("wide_resnet50_2", {}, 267, 68951464, 68883240, "d016399131053607"),
    "wide_resnet101_2": ("wide_resnet101_2", {}, 522, 127024552, 126886696, "4bc356dd61acbac8"),
    "resnext50_32x4d": ("resnext50_32x4d", {}, 267, 25097128, 25028904, "f1aeaa3503b4cf3f"),
    "resnext50_64x4d": ("resnext50_64x4d", {}, 267, 45290920, 45192488, "90a9ce87e05f99d3"),
    "resnext101_32x4d": ("resnext101_32x4d", {}, 522, 44315560, 44177704, "0b6ce5d6bc84a0f1"),
    "resnext101_64x4d": ("resnext101_64x4d", {}, 522, 83658152, 83455272, "6dba6221b0e0587b"),
    "resnext152_32x4d": ("resnext152_32x4d", {}, 777, 60150696, 59951400, "4aa0d576d8863fe4"),
    "resnext152_64x4d": ("resnext152_64x4d", {}, 777, 115266984, 114971944, "04b03cc15a8b7fd4"),
    "resnet18_nc10_nopool": ("resnet18", {"num_classes": 10, "with_pool": False}, 102, 11191242, 11181642,
                             "6d08f17f0a24b02e"),
    "resnet18_nc0": ("resnet18", {"num_classes": 0}, 100, 11186112, 11176512, "17bdf458b3eedc54"),
    "vgg11": ("vgg11", {}, 22, 132863336, 132863336, "14ff7fa198f579b7"),
    "vgg13": ("vgg13", {}, 26, 133047848, 133047848, "51f65dd449c83250"),
    "vgg16": ("vgg16", {}, 32, 138357544, 138357544, "3827685de307aad3"),
    "vgg19": ("vgg19", {}, 38, 143667240, 143667240, "2c32e75fe73c4395"),
    "vgg11_bn": ("vgg11", {"batch_norm": True}, 54, 132874344, 132868840, "270cd7a11247140a"),
    "vgg13_bn": ("vgg13", {"batch_norm": True}, 66, 133059624, 133053736, "7a1d39bf974da23e"),
    "vgg16_bn": ("vgg16", {"batch_norm": True}, 84, 138374440, 138365992, "a38353915763f978"),
    "vgg19_bn": ("vgg19", {"batch_norm": True}, 102, 143689256, 143678248, "471d8c3180a33aef"),
    "mobilenet_v1": ("mobilenet_v1", {}, 137, 4253864, 4231976, "52ef401b9a8fd0aa"),
    "mobilenet_v1_x0.25": ("mobilenet_v1", {"scale": 0.25}, 137, 475544, 470072, "98d0bee5d7c29ee0"),
    "mobilenet_v1_x0.5": ("mobilenet_v1", {"scale": 0.5}, 137, 1342536, 1331592, "a3a6d2f39915ccca"),
    "mobilenet_v2": ("mobilenet_v2", {}, 262, 3538984, 3504872, "265346996506949a"),
    "mobilenet_v2_x0.5": ("mobilenet_v2", {"scale": 0.5}, 262, 1987224, 1968680, "8116c351e72d9a5f"),
    "mobilenet_v2_x1.4": ("mobilenet_v2", {"scale": 1.4}, 262, 6156712, 6108776, "cc09076a9566dbfb"),
    "mobilenet_v3_small": ("mobilenet_v3_small", {}, 210, 2554968, 2542856, "174c6514bb1a45d7"),
    "mobilenet_v3_large": ("mobilenet_v3_large", {}, 266, 5507432, 5483032, "2ab9edca5a9dd2d7"),
    "mobilenet_v3_small_x0.5": ("mobilenet_v3_small", {"scale": 0.5}, 210, 923408, 917264, "bb50d30ae14ca705"),
    "mobilenet_v3_large_x0.75": ("mobilenet_v3_large", {"scale": 0.75}, 266, 3395992, 3377576, "92336ec1d2c816b6"),
    "alexnet": ("alexnet", {}, 16, 61100840, 61100840, "0daa5b50045d205c"),
    "alexnet_nc10": ("alexnet", {"num_classes": 10}, 16, 57044810, 57044810, "fc8206d5ce9fcdeb"),
    "squeezenet1_0": ("squeezenet1_0", {}, 52, 1248424, 1248424, "2495369e06fdac6a"),
    "squeezenet1_1": ("squeezenet1_1", {}, 52, 1235496, 1235496, "80b353c6b40f55b4"),
    "squeezenet1_1_nc10": ("squeezenet1_1", {"num_classes": 10}, 52, 727626, 727626, "f13647c6793798c7"),
    "densenet121": ("densenet121", {}, 606, 8062504, 7978856, "efb822bce29d738f"),
    "densenet161": ("densenet161", {}, 806, 28900936, 28681000, "662377bc4d5e44f5"),
    "densenet169": ("densenet169", {}, 846, 14307880, 14149480, "465fda48bc2c55ed"),
    "densenet201": ("densenet201", {}, 1006, 20242984, 20013928, "255bec708afe3a48"),
    "densenet264": ("densenet264", {}, 1326, 33736232, 33337704, "9270be70b8d6ff94"),
    "densenet121_drop_nc10": ("densenet121", {"dropout": 0.2, "num_classes": 10, "bn_size": 2}, 606, 3946570, 3870346,
                              "e2717f9f6e9976cf"),
    "googlenet": ("googlenet", {}, 69, 11535736, 11535736, "fbd81914b26a4ca3"),
    "googlenet_nc0": ("googlenet", {"num_classes": 0}, 57, 5966272, 5966272, "d9117bf1fbae322b"),
    "inception_v3": ("inception_v3", {}, 472, 23869000, 23834568, "cb11f9b72627a201"),
    "inception_v3_nc10": ("inception_v3", {"num_classes": 10}, 472, 21840490, 21806058, "bd0dca3afdf2f2f4"),
    "shufflenet_v2_x0_25": ("shufflenet_v2_x0_25", {}, 282, 607712, 603688, "e6921ba4510eab78"),
    "shufflenet_v2_x0_33": ("shufflenet_v2_x0_33", {}, 282, 652264, 647272, "75f03c9b5e46c62f"),
    "shufflenet_v2_x0_5": ("shufflenet_v2_x0_5", {}, 282, 1374744, 1366792, "2889a4602756830d"),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", {}, 282, 2294784, 2278604, "d6aaee9c568d285e"),
    "shufflenet_v2_x1_5": ("shufflenet_v2_x1_5", {}, 282, 3527064, 3503624, "0408da4907efb8b6"),
    "shufflenet_v2_x2_0": ("shufflenet_v2_x2_0", {}, 282, 7399952, 7366536, "d2d75274dac05e87"),
    "shufflenet_v2_swish": ("shufflenet_v2_swish", {}, 282, 2294784, 2278604, "d6aaee9c568d285e"),
}

# LeNet's state_dict, literally (from paddle.vision.models.LeNet().state_dict()).
LENET_KEYS = [("features.0.weight", [6, 1, 3, 3]), ("features.0.bias", [6]), ("features.3.weight", [16, 6, 5, 5]),
              ("features.3.bias", [16]), ("fc.0.weight", [400, 120]), ("fc.0.bias", [120]),
              ("fc.1.weight", [120, 84]), ("fc.1.bias", [84]), ("fc.2.weight", [84, 10]), ("fc.2.bias", [10])]

# The first entries of paddle.vision.models.resnet18().state_dict(), literally.
RESNET18_FIRST_KEYS = ["conv1.weight", "bn1.weight", "bn1.bias", "bn1._mean", "bn1._variance",
                       "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias", "layer1.0.bn1._mean",
                       "layer1.0.bn1._variance", "layer1.0.conv2.weight"]

# Eval-mode outputs of the Paddle models with the weights from _fixed_weights(..., seed=1) and input
# np.random.default_rng(2).normal(size=shape) (generated with PaddlePaddle 3.3.1, 6 significant digits).
PADDLE_OUTPUTS = [
    ("LeNet", {}, [2, 1, 28, 28],
     [[-0.664852, -0.705439, -1.98026, 0.555903, 1.31662, -1.04253, -0.0683431, 0.419926, -0.776121, -0.617158],
      [-0.954738, -0.194862, -1.80495, 0.544384, 1.98475, -0.111506, 0.206972, 0.25776, -0.724906, -1.31789]]),
    ("resnet18", {"num_classes": 5}, [1, 3, 32, 32], [[0.720626, 1.15614, -0.205432, -0.631686, -0.205083]]),
    ("mobilenet_v1", {"scale": 0.25, "num_classes": 5}, [1, 3, 32, 32],
     [[-0.0406117, 0.000230938, -0.139993, 0.0167954, 0.187095]]),
    ("mobilenet_v2", {"scale": 0.5, "num_classes": 5}, [1, 3, 32, 32],
     [[-0.134684, 0.044296, -0.345227, -0.0845401, -0.0499167]]),
    ("mobilenet_v3_small", {"num_classes": 5}, [1, 3, 32, 32],
     [[0.0622006, -0.197598, -0.0405371, -0.00165689, 0.00640642]]),
    ("mobilenet_v3_large", {"scale": 0.5, "num_classes": 5}, [1, 3, 32, 32],
     [[-0.0420873, 0.192661, -0.108312, -0.0215378, 0.0228326]]),
    ("squeezenet1_0", {"num_classes": 5}, [1, 3, 64, 64], [[0.103526, 0.0962664, 0.0236702, 0.0, 0.097976]]),
    ("squeezenet1_1", {"num_classes": 5}, [1, 3, 64, 64], [[0.0, 0.0, 0.19226, 0.0607634, 0.0229673]]),
    ("densenet121", {"num_classes": 5}, [1, 3, 32, 32], [[-0.0252795, 0.045414, 0.0891146, 0.209796, 0.00227414]]),
    ("shufflenet_v2_x0_25", {"num_classes": 5}, [1, 3, 32, 32],
     [[0.00354347, -0.0751759, -0.223795, -0.0377083, -0.0897073]]),
    ("shufflenet_v2_swish", {"num_classes": 5}, [1, 3, 32, 32],
     [[-0.00871562, 0.135319, 0.114864, 0.123898, 0.0721867]]),
    ("inception_v3", {"num_classes": 5}, [1, 3, 75, 75], [[0.0914651, -0.0842297, 0.0898677, 0.0513205, -0.330076]]),
]


@pytest.fixture
def cheap_init():
    """Constant initialisers while building: the structure tests do not need random weights, and
    filling ~100M-parameter models randomly costs seconds of CPU."""
    I.set_global_initializer(I.Constant(0.0), I.Constant(0.0))
    yield
    I.set_global_initializer(None)


def _key_lines(model):
    return "".join("{}:{}\n".format(k, list(v.shape)) for k, v in model.state_dict().items())


def _fixed_weights(model, seed):
    """Deterministic weights for every state_dict entry, in state_dict order (the same recipe made
    PADDLE_OUTPUTS)."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, v in model.state_dict().items():
        shape = list(v.shape)
        if k.endswith("_variance"):
            a = rng.uniform(0.5, 2.0, shape)
        elif k.endswith("_mean") or k.endswith("bias"):
            a = rng.normal(0.0, 0.1, shape)
        elif len(shape) == 1:  # norm scale
            a = rng.uniform(0.5, 1.5, shape)
        else:
            fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
            a = rng.uniform(-1.0, 1.0, shape) * np.sqrt(3.0 / fan_in)
        out[k] = a.astype("float32")
    return out


# Over 60M parameters and structurally the same code paths as smaller cases above (VGG configs,
# ResNeXt group counts, wider bottlenecks): only built when OAR_TEST_SLOW=1, to keep the suite fast.
HEAVY = {"wide_resnet50_2", "wide_resnet101_2", "resnext101_64x4d", "resnext152_64x4d", "vgg13", "vgg16", "vgg19",
         "vgg13_bn", "vgg16_bn", "vgg19_bn", "alexnet"}


@pytest.mark.parametrize("case", sorted(PADDLE_STRUCTURE))
def test_structure_matches_paddle(case, cheap_init):
    if case in HEAVY and not os.environ.get("OAR_TEST_SLOW"):
        pytest.skip("large model; set OAR_TEST_SLOW=1 to build it")
    ctor, kwargs, n_keys, n_params, n_trainable, digest = PADDLE_STRUCTURE[case]
    model = getattr(models, ctor)(**kwargs)
    lines = _key_lines(model)
    assert len(model.state_dict()) == n_keys
    assert hashlib.sha1(lines.encode()).hexdigest()[:16] == digest, lines
    assert sum(math.prod(p.shape) for p in model.parameters()) == n_params
    assert sum(math.prod(p.shape) for p in model.parameters() if not p.stop_gradient) == n_trainable
    assert isinstance(model, oar.nn.Layer)


def test_literal_keys(cheap_init):
    lenet = models.LeNet()
    assert [(k, list(v.shape)) for k, v in lenet.state_dict().items()] == LENET_KEYS
    assert list(models.resnet18().state_dict())[:len(RESNET18_FIRST_KEYS)] == RESNET18_FIRST_KEYS


def test_public_names():
    # Paddle 3.3.1's paddle.vision.models.__all__.
    expected = {"ResNet", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
                "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d", "resnext152_32x4d", "resnext152_64x4d",
                "wide_resnet50_2", "wide_resnet101_2", "VGG", "vgg11", "vgg13", "vgg16", "vgg19", "MobileNetV1",
                "mobilenet_v1", "MobileNetV2", "mobilenet_v2", "MobileNetV3Small", "MobileNetV3Large",
                "mobilenet_v3_small", "mobilenet_v3_large", "LeNet", "AlexNet", "alexnet", "SqueezeNet",
                "squeezenet1_0", "squeezenet1_1", "DenseNet", "densenet121", "densenet161", "densenet169",
                "densenet201", "densenet264", "InceptionV3", "inception_v3", "GoogLeNet", "googlenet",
                "ShuffleNetV2", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5",
                "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish"}
    assert set(models.__all__) == expected
    for name in expected:
        assert getattr(models, name) is not None
    assert models.BasicBlock.expansion == 1 and models.BottleneckBlock.expansion == 4


@pytest.mark.parametrize("name,kwargs,shape,expected", PADDLE_OUTPUTS, ids=[c[0] for c in PADDLE_OUTPUTS])
def test_forward_matches_paddle(name, kwargs, shape, expected):
    model = getattr(models, name)(**kwargs)
    missing, unexpected = model.set_state_dict(_fixed_weights(model, 1))
    assert missing == [] and unexpected == []
    model.eval()
    x = np.random.default_rng(2).normal(size=shape).astype("float32")
    with oar.no_grad():
        y = model(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(y, np.array(expected, dtype="float32"), rtol=2e-4, atol=2e-5)


def test_forward_shapes():
    x64 = oar.randn([1, 3, 64, 64])
    with oar.no_grad():
        m = models.resnet18().eval()
        assert m(x64).shape == [1, 1000]
        m = models.resnet18(num_classes=0, with_pool=False).eval()
        assert m(x64).shape == [1, 512, 2, 2]
        m = models.mobilenet_v2().eval()
        assert m(x64).shape == [1, 1000]
        m = models.mobilenet_v2(scale=0.5, num_classes=0, with_pool=False).eval()
        assert m(x64).shape == [1, 1280, 2, 2]
        m = models.mobilenet_v3_small(num_classes=3).eval()
        assert m(x64).shape == [1, 3]
        m = models.mobilenet_v1(scale=0.25, num_classes=0).eval()
        assert m(x64).shape == [1, 256, 1, 1]
        m = models.squeezenet1_1(num_classes=7, with_pool=False).eval()
        assert m(x64).shape == [1, 7, 3, 3]
        m = models.LeNet(num_classes=0).eval()
        assert m(oar.randn([2, 1, 28, 28])).shape == [2, 16, 5, 5]
        m = models.densenet121(num_classes=0, with_pool=False).eval()
        assert m(x64).shape == [1, 1024, 2, 2]
        # GoogLeNet returns (main, auxiliary 1, auxiliary 2): here the three feature maps.
        m = models.googlenet(num_classes=0, with_pool=False).eval()
        assert [o.shape for o in m(x64)] == [[1, 1024, 1, 1], [1, 512, 3, 3], [1, 528, 3, 3]]
        m = models.shufflenet_v2_x0_5(num_classes=0).eval()
        assert m(x64).shape == [1, 1024, 1, 1]


def test_train_mode_updates_batchnorm_stats():
    m = models.mobilenet_v3_small(scale=0.5, num_classes=4)
    bn = m.conv[1]
    before = bn._mean.numpy().copy()
    m.train()
    m(oar.randn([2, 3, 32, 32]) + 1.0)
    assert not np.allclose(bn._mean.numpy(), before)
    after = bn._mean.numpy().copy()
    m.eval()
    m(oar.randn([2, 3, 32, 32]))
    np.testing.assert_array_equal(bn._mean.numpy(), after)


def test_state_dict_round_trip():
    a = models.mobilenet_v3_small(scale=0.5, num_classes=4)
    a.set_state_dict(_fixed_weights(a, 3))
    b = models.mobilenet_v3_small(scale=0.5, num_classes=4)
    b.set_state_dict({k: v.numpy() for k, v in a.state_dict().items()})
    x = oar.randn([1, 3, 32, 32])
    with oar.no_grad():
        np.testing.assert_array_equal(a.eval()(x).numpy(), b.eval()(x).numpy())


def _lenet_numpy(sd, x):
    """LeNet forward in plain numpy (im2col convolutions, Paddle's [in, out] Linear weights)."""
    def conv(x, w, b, pad):
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        oh, ow = h - kh + 1, wd - kw + 1
        cols = np.stack([x[:, :, i:i + oh, j:j + ow] for i in range(kh) for j in range(kw)], axis=2)
        # cols: [n, c, kh*kw, oh, ow]; w: [o, c, kh, kw]
        return np.einsum("nckhw,ock->nohw", cols, w.reshape(o, c, kh * kw)) + b[None, :, None, None]

    def pool(x):
        n, c, h, w = x.shape
        return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))

    x = pool(np.maximum(conv(x, sd["features.0.weight"], sd["features.0.bias"], 1), 0))
    x = pool(np.maximum(conv(x, sd["features.3.weight"], sd["features.3.bias"], 0), 0))
    x = x.reshape(x.shape[0], -1)
    for i in range(3):  # no activation between Paddle LeNet's Linear layers
        x = x @ sd["fc.{}.weight".format(i)] + sd["fc.{}.bias".format(i)]
    return x


def test_lenet_matches_numpy():
    model = models.LeNet()
    sd = {k: v.numpy().astype("float64") for k, v in model.state_dict().items()}
    x = np.random.default_rng(5).normal(size=[2, 1, 28, 28]).astype("float32")
    y = model(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(y, _lenet_numpy(sd, x.astype("float64")), rtol=1e-4, atol=1e-5)


def test_lenet_backward_and_sgd_step_reduces_loss():
    oar.seed(7)
    model = models.LeNet()
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.normal(size=[2, 1, 28, 28]).astype("float32"))
    label = oar.to_tensor(np.array([[3], [7]], dtype="int64"))

    loss = F.cross_entropy(model(x), label)
    loss.backward()
    params = model.parameters()
    assert len(params) == 10
    for p in params:
        assert p.grad is not None and list(p.grad.shape) == list(p.shape)
        assert np.isfinite(p.grad.numpy()).all()
    assert any(np.abs(p.grad.numpy()).max() > 0 for p in params)

    # A small step along -grad must lower the loss (first order: by about lr * |grad|^2).
    lr = 1e-5
    grad_sq = sum(float((p.grad * p.grad).sum()) for p in params)
    with oar.no_grad():
        for p in params:
            p.set_value(p - lr * p.grad)
    model.clear_gradients()
    new_loss = F.cross_entropy(model(x), label)
    assert float(new_loss) < float(loss)
    assert float(loss) - float(new_loss) == pytest.approx(lr * grad_sq, rel=0.1)


PRETRAINED_CTORS = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
                    "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d", "resnext152_32x4d",
                    "resnext152_64x4d", "wide_resnet50_2", "wide_resnet101_2", "vgg11", "vgg13", "vgg16", "vgg19",
                    "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "alexnet",
                    "squeezenet1_0", "squeezenet1_1", "densenet121", "densenet161", "densenet169", "densenet201",
                    "densenet264", "googlenet", "inception_v3", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33",
                    "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0",
                    "shufflenet_v2_swish"]


@pytest.mark.parametrize("name", PRETRAINED_CTORS)
def test_pretrained_raises_with_instructions(name):
    with pytest.raises(RuntimeError) as info:
        getattr(models, name)(pretrained=True)
    msg = str(info.value)
    assert name in msg and "no network access" in msg
    assert "set_state_dict" in msg and "oar.load" in msg and "pretrained=False" in msg


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth"):
        models.ResNet(models.BasicBlock, depth=20)
    with pytest.raises(ValueError, match="version"):
        models.SqueezeNet("2.0")
    with pytest.raises(ValueError, match="layers"):
        models.DenseNet(layers=100)
    with pytest.raises(ValueError, match="scale"):
        models.ShuffleNetV2(scale=0.75)
    with pytest.raises(ValueError, match="activation"):
        models.ShuffleNetV2(act="gelu")
    with pytest.raises(NotImplementedError, match="Dilation"):
        models.BasicBlock(64, 64, dilation=2)


def test_lenet_on_device_matches_cpu(device):
    model = models.LeNet()
    x = np.random.default_rng(9).normal(size=[2, 1, 28, 28]).astype("float32")
    label = np.array([[1], [4]], dtype="int64")
    loss = F.cross_entropy(model(oar.to_tensor(x)), oar.to_tensor(label))
    loss.backward()
    grads = [p.grad.numpy() for p in model.parameters()]
    model.clear_gradients()

    model.to(device)
    assert all(str(p.place) == str(oar.to_tensor(x, place=device).place) for p in model.parameters())
    loss_d = F.cross_entropy(model(oar.to_tensor(x, place=device)), oar.to_tensor(label, place=device))
    loss_d.backward()
    np.testing.assert_allclose(float(loss_d), float(loss), rtol=1e-5)
    for g, p in zip(grads, model.parameters()):
        # float32 sums in another order (cuDNN's algorithms): errors relative to the tensor's scale
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-5 * float(np.abs(g).max()))


def test_deepcopy_and_float64():
    import copy
    # MobileNetV1 keeps its blocks in a plain list as well as registered sublayers (as Paddle):
    # a deep copy must keep both pointing at the same copied blocks.
    a = models.mobilenet_v1(scale=0.25, num_classes=3).eval()
    b = copy.deepcopy(a)
    assert b.dwsl[0] is b.conv2_1 and b.dwsl[0] is not a.conv2_1
    x = oar.randn([1, 3, 32, 32])
    with oar.no_grad():
        np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
        y32 = a(x).numpy()
        a.to(dtype="float64")
        y64 = a(x.astype("float64"))
    assert y64.dtype == oar.float64
    np.testing.assert_allclose(y64.numpy(), y32, rtol=1e-4, atol=1e-5)
