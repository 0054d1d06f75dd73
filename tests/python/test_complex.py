"""Complex numbers: real/imag/conj/angle/complex/as_complex/as_real and the arithmetic ops on complex64 and
complex128, against numpy; gradients against finite differences that perturb the real and the imaginary
parts (Paddle's convention: z.grad = dL/dx + i dL/dy for a real loss L), and against the values Paddle
2.6.2 gives; printing as Paddle prints; static programs and jit.save of complex ops."""
import numpy as np
import pytest

import oar

RS = np.random.RandomState(7)


def _z(shape, dtype="complex128", lo=-2, hi=2, rs=RS):
    a = rs.uniform(lo, hi, shape) + 1j * rs.uniform(lo, hi, shape)
    return a.astype(dtype)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == "complex64" else dict(rtol=1e-12, atol=1e-12)


# ---- values against numpy ---------------------------------------------------------------------------

UNARY = [
    ("real", oar.real, np.real),
    ("imag", oar.imag, np.imag),
    ("conj", oar.conj, np.conj),
    ("angle", oar.angle, np.angle),
    ("abs", oar.abs, np.abs),
    ("neg", oar.neg, np.negative),
    ("exp", oar.exp, np.exp),
    ("log", oar.log, np.log),
    ("sqrt", oar.sqrt, np.sqrt),
    ("sign", oar.sign, lambda z: np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))),
    ("sgn", oar.sgn, lambda z: np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))),
]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name,fn,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_numpy(name, fn, ref, dtype):
    z = _z((3, 4), dtype)
    z[0, 0] = 0  # sign/sgn/angle at 0
    if name == "log":
        z[0, 0] = 1
    got = fn(oar.to_tensor(z))
    want = ref(z)
    real_out = name in ("real", "imag", "angle", "abs")
    assert got.dtype == (oar.float32 if dtype == "complex64" else oar.float64) if real_out else got.dtype == oar.to_tensor(z).dtype
    np.testing.assert_allclose(got.numpy(), want, **_tol(dtype))


def test_methods_and_is_complex():
    z = oar.to_tensor(np.array([1 + 2j, -3 - 0.5j]))
    np.testing.assert_array_equal(z.real().numpy(), [1, -3])
    np.testing.assert_array_equal(z.imag().numpy(), [2, -0.5])
    np.testing.assert_array_equal(z.conj().numpy(), [1 - 2j, -3 + 0.5j])
    np.testing.assert_allclose(z.angle().numpy(), np.angle([1 + 2j, -3 - 0.5j]))
    np.testing.assert_array_equal(z.as_real().numpy(), [[1, 2], [-3, -0.5]])
    assert oar.is_complex(z) and z.is_complex() and not oar.is_complex(z.real())
    assert z.dtype.is_complex and not z.real().dtype.is_complex


def test_real_inputs_to_conj_and_angle():
    x = oar.to_tensor(np.array([1.5, -2.0, 0.0], np.float32))
    assert oar.conj(x).dtype == oar.float32
    np.testing.assert_array_equal(oar.conj(x).numpy(), [1.5, -2.0, 0.0])
    np.testing.assert_allclose(oar.angle(x).numpy(), [0, np.pi, 0], rtol=1e-7)  # Paddle: 0 / pi
    np.testing.assert_allclose(oar.angle(oar.to_tensor([1, -2])).numpy(), [0, np.pi], rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_as_complex_as_real(dtype):
    re, im = RS.randn(3, 1).astype(dtype), RS.randn(4).astype(dtype)
    c = oar.complex(oar.to_tensor(re), oar.to_tensor(im))
    assert c.dtype == (oar.complex64 if dtype == "float32" else oar.complex128)
    np.testing.assert_array_equal(c.numpy(), re + 1j * im)  # broadcast
    pairs = RS.randn(2, 3, 2).astype(dtype)
    z = oar.as_complex(oar.to_tensor(pairs))
    assert z.shape == [2, 3]
    np.testing.assert_array_equal(z.numpy(), pairs[..., 0] + 1j * pairs[..., 1])
    np.testing.assert_array_equal(oar.as_real(z).numpy(), pairs)
    # a view (not contiguous) is read by its logical values
    t = oar.to_tensor(RS.randn(2, 5).astype(dtype))
    np.testing.assert_array_equal(oar.as_complex(t.t()).numpy(), t.numpy().T[:, 0] + 1j * t.numpy().T[:, 1])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_binary_and_promotion(dtype):
    a, b = _z((3, 4), dtype), _z((4,), dtype)
    ta, tb = oar.to_tensor(a), oar.to_tensor(b)
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b),
                      (oar.add(ta, 2.5), a + 2.5), (ta * 2, a * 2), (1 / tb, 1 / b)]:
        assert got.dtype == ta.dtype
        np.testing.assert_allclose(got.numpy(), want, **_tol(dtype))
    # with a real tensor: complex64 * float64 gives complex128, as Paddle
    r = RS.randn(4)
    got = ta * oar.to_tensor(r)
    assert got.dtype == oar.complex128
    np.testing.assert_allclose(got.numpy(), a * r, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_pow_with_ints(dtype):
    z = _z((5,), dtype)
    t = oar.to_tensor(z)
    np.testing.assert_allclose((t ** 2).numpy(), z * z, **_tol(dtype))
    np.testing.assert_allclose(oar.pow(t, 3).numpy(), z * z * z, **_tol(dtype))
    np.testing.assert_allclose((t ** -1).numpy(), 1 / z, **_tol(dtype))
    np.testing.assert_allclose((t ** 0).numpy(), np.ones(5), **_tol(dtype))
    np.testing.assert_allclose((t ** 0.5).numpy(), np.sqrt(z), rtol=1e-5)
    w = _z((5,), dtype)
    np.testing.assert_allclose(oar.pow(t, oar.to_tensor(w)).numpy(), z ** w, rtol=1e-5 if dtype == "complex64" else 1e-12)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_reductions_matmul_and_manipulation(dtype):
    z = _z((2, 3, 4), dtype)
    t = oar.to_tensor(z)
    np.testing.assert_allclose(t.sum().numpy(), z.sum(), **_tol(dtype))
    np.testing.assert_allclose(t.sum(axis=1).numpy(), z.sum(1), **_tol(dtype))
    np.testing.assert_allclose(t.mean().numpy(), z.mean(), **_tol(dtype))
    np.testing.assert_allclose(oar.mean(t, axis=[0, 2], keepdim=True).numpy(), z.mean((0, 2), keepdims=True),
                               **_tol(dtype))
    np.testing.assert_allclose(t.prod(axis=2).numpy(), z.prod(2), rtol=1e-5)
    w = _z((4, 5), dtype)
    np.testing.assert_allclose(oar.matmul(t, oar.to_tensor(w)).numpy(), z @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(oar.bmm(t, oar.to_tensor(np.stack([w, w]))).numpy(), z @ np.stack([w, w]),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(t.reshape([6, 4]).numpy(), z.reshape(6, 4))
    np.testing.assert_array_equal(t.transpose([2, 0, 1]).numpy(), z.transpose(2, 0, 1))
    np.testing.assert_array_equal(t[:, 1:, ::2].numpy(), z[:, 1:, ::2])
    np.testing.assert_array_equal(oar.concat([t, t[:1]], axis=0).numpy(), np.concatenate([z, z[:1]]))


def test_cast_rules():
    z = np.array([1.5 - 2j, -0.25 + 0j, 0 + 3j, 0j])
    t = oar.to_tensor(z)
    np.testing.assert_array_equal(t.astype("float32").numpy(), np.float32([1.5, -0.25, 0, 0]))  # real part
    np.testing.assert_array_equal(t.astype("int32").numpy(), [1, 0, 0, 0])
    np.testing.assert_array_equal(t.astype("bool").numpy(), [True, True, True, False])  # != 0
    np.testing.assert_array_equal(t.astype("complex64").numpy(), z.astype(np.complex64))
    r = oar.to_tensor([1, 2]).astype("complex128")
    assert r.dtype == oar.complex128
    np.testing.assert_array_equal(r.numpy(), [1 + 0j, 2 + 0j])


# ---- gradients ---------------------------------------------------------------------------------------

def _numeric_grad(loss, arrays, k, eps=1e-6):
    """dL/dx + i dL/dy of input k (complex) or dL/dx (real) by central differences in float64."""
    a = arrays[k]
    g = np.zeros(a.shape, a.dtype)
    steps = (1, 1j) if np.iscomplexobj(a) else (1,)
    for idx in np.ndindex(*a.shape):
        for s in steps:
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[k][idx] += s * eps
            minus[k][idx] -= s * eps
            g[idx] += s * (loss(*plus) - loss(*minus)) / (2 * eps)
    return g


def _check_grad(fn, *arrays, tol=1e-6):
    """fn maps oar tensors to a complex or real tensor; the loss is Re(sum(fn(...) * w))."""
    out0 = fn(*[oar.to_tensor(a) for a in arrays])
    w = RS.uniform(0.5, 1.5, out0.shape) + (1j * RS.uniform(-1, 1, out0.shape) if out0.dtype.is_complex else 0)

    def loss_np(*xs):
        with oar.no_grad():
            return float(np.sum(fn(*[oar.to_tensor(x) for x in xs]).numpy() * w).real)

    ts = [oar.to_tensor(a) for a in arrays]
    for t in ts:
        t.stop_gradient = False
    out = fn(*ts)
    loss = (out * oar.to_tensor(w).astype(out.dtype)).sum()
    if loss.dtype.is_complex:
        loss = oar.real(loss)
    loss.backward()
    for k, t in enumerate(ts):
        want = _numeric_grad(loss_np, [a.copy() for a in arrays], k)
        assert t.grad is not None and t.grad.dtype == t.dtype
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=tol, atol=tol)


GRADS = [
    ("abs", lambda z: oar.abs(z), 1),
    ("real", lambda z: oar.real(z), 1),
    ("imag", lambda z: oar.imag(z), 1),
    ("conj", lambda z: oar.conj(z), 1),
    ("angle", lambda z: oar.angle(z), 1),
    ("exp", lambda z: oar.exp(z), 1),
    ("log", lambda z: oar.log(z), 1),
    ("sqrt", lambda z: oar.sqrt(z), 1),
    ("neg", lambda z: -z, 1),
    ("square via pow", lambda z: z ** 2, 1),
    ("pow -2", lambda z: oar.pow(z, -2), 1),
    ("pow complex", lambda z, w: oar.pow(z, w), 2),
    ("multiply", lambda z, w: z * w, 2),
    ("divide", lambda z, w: z / w, 2),
    ("add sub", lambda z, w: (z + w) * (z - w), 2),
    ("matmul", lambda z, w: oar.matmul(z.reshape([2, 3]), w.reshape([3, 2])), 2),
    ("sum mean", lambda z: z.sum() * z.mean(), 1),
    ("prod", lambda z: z.prod(), 1),
    ("as_real", lambda z: oar.as_real(z), 1),
    ("as_real as_complex", lambda z: oar.as_complex(oar.as_real(z) * 2.0), 1),
    ("cast to real", lambda z: z.astype("float64") * z.imag(), 1),
    ("manipulation", lambda z: oar.concat([z.reshape([3, 2]).t(), z[1:4].reshape([1, 3])], axis=0)[:, ::2], 1),
    ("abs of exp", lambda z: oar.abs(oar.exp(z * z)), 1),
]


@pytest.mark.parametrize("name,fn,n", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_against_finite_differences(name, fn, n):
    rs = np.random.RandomState(len(name))
    arrays = [_z((6,), rs=rs, lo=0.3, hi=1.5) for _ in range(n)]  # away from 0 and the log branch cut
    _check_grad(fn, *arrays)


def test_gradients_of_real_inputs():
    rs = np.random.RandomState(3)
    a, b = rs.randn(2, 3), rs.randn(3)
    _check_grad(lambda x, y: oar.complex(x, y) ** 2, a, b)  # broadcast: y's gradient summed
    _check_grad(lambda x: oar.as_complex(x) * oar.as_complex(x), rs.randn(3, 2))
    _check_grad(lambda x: x.astype("complex128") * (1 + 2j), rs.randn(4))
    _check_grad(lambda r, t: oar.polar(r, t) ** 2, rs.uniform(0.5, 2, 5), rs.randn(5))


def test_polar():
    r, t = RS.uniform(0, 2, (2, 3)), RS.uniform(-3, 3, (2, 3))
    got = oar.polar(oar.to_tensor(r), oar.to_tensor(t))
    assert got.dtype == oar.complex128
    np.testing.assert_allclose(got.numpy(), r * np.exp(1j * t), rtol=1e-12, atol=1e-15)
    with pytest.raises(TypeError, match="polar: abs and angle must both be float32"):
        oar.polar(oar.to_tensor(r), oar.to_tensor(t.astype("float32")))


def test_paddle_262_values():
    """The gradients Paddle 2.6.2 gives (recorded from paddle==2.6.2 on the CPU)."""
    z0 = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j])

    def grad(f):
        z = oar.to_tensor(z0)
        z.stop_gradient = False
        f(z).backward()
        return z.grad.numpy()

    np.testing.assert_allclose(grad(lambda z: oar.abs(z).sum()), z0 / np.abs(z0))
    np.testing.assert_allclose(grad(lambda z: (z * z).real().sum()), [2 - 4j, -1 - 0.6j, 4 + 2j])
    np.testing.assert_allclose(grad(lambda z: (z * z).imag().sum()), [4 + 2j, 0.6 - 1j, -2 + 4j])
    np.testing.assert_allclose(grad(lambda z: oar.exp(z).real().sum()), np.conj(np.exp(z0)))
    np.testing.assert_allclose(grad(lambda z: oar.conj(z).imag().sum()), [-1j, -1j, -1j])
    np.testing.assert_allclose(grad(lambda z: oar.angle(z).sum()),
                               [-0.4 + 0.2j, -0.88235294 - 1.47058824j, 0.2 + 0.4j], rtol=1e-7)
    np.testing.assert_allclose(grad(lambda z: oar.as_real(z).sum()), [1 + 1j] * 3)
    w = np.array([0.3 - 1j, 2 + 0.5j, 1j])
    np.testing.assert_allclose(grad(lambda z: (z / oar.to_tensor(w)).real().sum()), np.conj(1 / w))
    x = oar.to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x.stop_gradient = False
    c = oar.as_complex(x)
    (c * c).real().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2, -4], [6, -8]])
    a, b = oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, -1.0])
    a.stop_gradient = b.stop_gradient = False
    (oar.complex(a, b) ** 2).imag().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [6, -2])
    np.testing.assert_allclose(b.grad.numpy(), [2, 4])


def test_abs_gradient_at_zero_is_zero():
    z = oar.to_tensor(np.array([0j, 3 + 4j]))
    z.stop_gradient = False
    oar.abs(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [0, 0.6 + 0.8j])


# ---- printing -----------------------------------------------------------------------------------------

def test_printing_as_paddle():
    """The strings Paddle 2.6.2 prints for these tensors."""
    z = oar.to_tensor(np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j]).astype(np.complex64))
    assert str(z) == ("Tensor(shape=[3], dtype=complex64, place=Place(cpu), stop_gradient=True,\n"
                      "       [ (1+2j)                    , (-0.5+0.30000001192092896j),\n"
                      "         (2-1j)                    ])")
    z = oar.to_tensor(np.array([[1 + 2j, 3 - 4j], [0.5j, 2]]))
    assert str(z) == ("Tensor(shape=[2, 2], dtype=complex128, place=Place(cpu), stop_gradient=True,\n"
                      "       [[(1+2j), (3-4j)],\n"
                      "        [0.5j  , (2+0j)]])")
    assert str(oar.to_tensor(np.complex64(2 + 0.5j))).endswith("\n       (2+0.5j))")
    big = oar.to_tensor(np.arange(2000).astype(np.complex128))
    assert str(big) == ("Tensor(shape=[2000], dtype=complex128, place=Place(cpu), stop_gradient=True,\n"
                        "       [0j       , (1+0j)   , (2+0j)   , ..., (1997+0j), (1998+0j),\n"
                        "        (1999+0j)])")
    m = str(oar.to_tensor((np.arange(2400).reshape(40, 60) * (1 - 0.5j)).astype(np.complex64))).split("\n")
    assert m[1:4] == ["       [[0j            , (1-0.5j)      , (2-1j)        , ...,",
                      "         (57-28.5j)    , (58-29j)      , (59-29.5j)    ],",
                      "        [(60-30j)      , (61-30.5j)    , (62-31j)      , ...,"]
    assert m[7:9] == ["        ...,", "        [(2220-1110j)  , (2221-1110.5j), (2222-1111j)  , ...,"]
    assert str(oar.to_tensor(np.zeros((0, 3), np.complex64))).endswith("\n       [])")


# ---- errors -------------------------------------------------------------------------------------------

def test_errors_name_the_op_and_the_value():
    x = oar.to_tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="real: x.dtype float32 is not supported"):
        oar.real(x)
    with pytest.raises(TypeError, match="as_real"):
        oar.as_real(x)
    with pytest.raises(ValueError, match=r"as_complex: the last dimension of x must be 2.*\[3\]"):
        oar.as_complex(oar.to_tensor([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="complex"):
        oar.complex(x, oar.to_tensor([1, 2]))
    with pytest.raises(TypeError, match="complex: x.dtype int64 is not supported"):
        oar.complex(oar.to_tensor([1, 2]), oar.to_tensor([1, 2]))
    with pytest.raises(TypeError, match="real: x must be a Tensor"):
        oar.real([1, 2])
    z = oar.to_tensor(np.array([1 + 1j]))
    with pytest.raises(TypeError, match="complex"):
        oar.maximum(z, z)


# ---- devices, static programs, jit.save ---------------------------------------------------------------

def test_on_every_device(device):
    """sim has no complex kernels: the ops run through the CPU fallback there, with the same values and
    gradients."""
    oar.set_device(device)
    z = _z((4,), rs=np.random.RandomState(1), lo=0.3, hi=1.5)
    t = oar.to_tensor(z)
    t.stop_gradient = False
    out = oar.abs(oar.exp(t) * oar.conj(t)) + oar.angle(t) + oar.real(oar.sqrt(t)) * oar.imag(oar.log(t))
    assert device.split(":")[0] in str(out.place)
    want = np.abs(np.exp(z) * np.conj(z)) + np.angle(z) + np.sqrt(z).real * np.log(z).imag
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    out.sum().backward()
    oar.set_device("cpu")
    t2 = oar.to_tensor(z)
    t2.stop_gradient = False
    (oar.abs(oar.exp(t2) * oar.conj(t2)) + oar.angle(t2) + oar.real(oar.sqrt(t2)) * oar.imag(oar.log(t2))).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), t2.grad.numpy(), rtol=1e-12)


class _ComplexNet(oar.nn.Layer):
    def forward(self, x):
        z = oar.as_complex(x)
        return oar.abs(oar.exp(z) * oar.conj(z)) + oar.real(z * z) + oar.angle(z)


def _ref_net(x):
    z = x[..., 0] + 1j * x[..., 1]
    return np.abs(np.exp(z) * np.conj(z)) + (z * z).real + np.angle(z)


def test_static_program_with_complex_ops():
    oar.enable_static()
    try:
        main, startup = oar.static.Program(), oar.static.Program()
        with oar.static.program_guard(main, startup):
            x = oar.static.data("x", [None, 3, 2], "float64")
            out = _ComplexNet()(x)
        exe = oar.static.Executor()
        exe.run(startup)
        xv = RS.randn(2, 3, 2)
        (got,) = exe.run(main, feed={"x": xv}, fetch_list=[out])
    finally:
        oar.disable_static()
    np.testing.assert_allclose(got, _ref_net(xv), rtol=1e-12)


def test_jit_save_load_complex(tmp_path):
    from oar.static import InputSpec

    net = _ComplexNet()
    path = str(tmp_path / "cnet" / "model")
    oar.jit.save(net, path, input_spec=[InputSpec([None, 3, 2], "float64", "x")])
    loaded = oar.jit.load(path)
    xv = RS.randn(4, 3, 2)
    np.testing.assert_allclose(loaded(oar.to_tensor(xv)).numpy(), _ref_net(xv), rtol=1e-12)
    # Paddle's own op types (framework/src/ir/paddle_map.def): PaddlePaddle can load the file.
    types = [op._recorded_type for op in loaded.program().global_block().ops]
    assert "as_complex" in types and "angle" in types and "conj" in types and "real" in types, types
    assert not [t for t in types if t.startswith("oar.")], types


def test_jit_save_load_complex_input(tmp_path):
    """A complex input variable: the program records Paddle's COMPLEX128 dtype code."""
    from oar.static import InputSpec

    class Net(oar.nn.Layer):
        def forward(self, z):
            return oar.real(z * oar.conj(z)) + oar.abs(z)

    path = str(tmp_path / "znet" / "model")
    oar.jit.save(Net(), path, input_spec=[InputSpec([None, 3], "complex128", "z")])
    loaded = oar.jit.load(path)
    z = _z((2, 3))
    np.testing.assert_allclose(loaded(oar.to_tensor(z)).numpy(), (z * np.conj(z)).real + np.abs(z), rtol=1e-12)
    assert not [op._recorded_type for op in loaded.program().global_block().ops
                if op._recorded_type.startswith("oar.")]
