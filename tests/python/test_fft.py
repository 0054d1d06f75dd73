"""oar.fft against numpy.fft (float64/complex128 references) and its gradients against central
differences (Paddle's convention: for a complex input the gradient is dL/dRe + i dL/dIm)."""
import warnings

import numpy as np
import pytest

import oar

NORMS = ["backward", "ortho", "forward"]
RNG = np.random.default_rng(7)


def _real(shape, dtype=np.float64):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def _cplx(shape, dtype=np.complex128):
    return (RNG.uniform(-1, 1, size=shape) + 1j * RNG.uniform(-1, 1, size=shape)).astype(dtype)


def _check(got, want, tol):
    got = got.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want)))))


# ---- values against numpy ----------------------------------------------------------------------------
ONE_D = [
    ("fft", _cplx, {}), ("fft", _real, {}), ("ifft", _cplx, {}), ("ifft", _real, {}), ("rfft", _real, {}),
    ("irfft", _cplx, {}), ("hfft", _cplx, {}), ("ihfft", _real, {}),
]


@pytest.mark.parametrize("name,make,_", ONE_D)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,axis", [(None, -1), (6, 0), (11, 1), (3, -1)])
def test_1d_against_numpy(name, make, _, norm, n, axis):
    x = make((5, 8))
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    got = getattr(oar.fft, name)(oar.to_tensor(x), n=n, axis=axis, norm=norm)
    assert got.dtype == (oar.float64 if name in ("irfft", "hfft") else oar.complex128)
    _check(got, want, 1e-10)


ND = [("fftn", _cplx), ("fftn", _real), ("ifftn", _cplx), ("rfftn", _real), ("irfftn", _cplx)]


@pytest.mark.parametrize("name,make", ND)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,axes", [(None, None), (None, (0, 2)), ((4, 6), (2, 0)), ((3, 5, 7), None),
                                    ((5,), (1,))])
def test_nd_against_numpy(name, make, norm, s, axes):
    x = make((3, 4, 5))
    np_axes = axes if axes is not None or s is None else tuple(range(3 - len(s), 3))  # Paddle's default
    want = getattr(np.fft, name)(x, s=s, axes=np_axes, norm=norm)
    got = getattr(oar.fft, name)(oar.to_tensor(x), s=s, axes=axes, norm=norm)
    _check(got, want, 1e-10)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
@pytest.mark.parametrize("norm", NORMS)
def test_2d_against_numpy(name, norm):
    x = (_real if name == "rfft2" else _cplx)((2, 6, 5))
    for s, axes in [(None, (-2, -1)), ((4, 8), (0, 2))]:
        want = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
        _check(getattr(oar.fft, name)(oar.to_tensor(x), s=s, axes=axes, norm=norm), want, 1e-10)


# numpy has no hfftn/ihfftn: hfftn(x) = irfftn(conj(x)) scaled by n in 'backward' (the norms swap), and
# ihfftn(x) = conj(rfftn(x)) / n.
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


@pytest.mark.parametrize("norm", NORMS)
def test_hfftn_ihfftn(norm):
    x = _cplx((4, 5))
    for s in (None, (3, 8)):
        want = np.fft.irfftn(np.conj(x), s=s, axes=(0, 1), norm=_SWAP[norm])
        _check(oar.fft.hfftn(oar.to_tensor(x), s=s, norm=norm), want, 1e-10)
        _check(oar.fft.hfft2(oar.to_tensor(x), s=s, norm=norm), want, 1e-10)
    r = _real((4, 6))
    want = np.conj(np.fft.rfftn(r, norm=_SWAP[norm]))
    _check(oar.fft.ihfftn(oar.to_tensor(r), norm=norm), want, 1e-10)
    _check(oar.fft.ihfft2(oar.to_tensor(r), norm=norm), want, 1e-10)


def test_single_precision_and_integer_inputs():
    x = _cplx((4, 16), np.complex64)
    got = oar.fft.fft(oar.to_tensor(x))
    assert got.dtype == oar.complex64
    _check(got, np.fft.fft(x.astype(np.complex128)), 1e-5)
    r = _real((3, 10), np.float32)
    got = oar.fft.rfft(oar.to_tensor(r))
    assert got.dtype == oar.complex64
    _check(got, np.fft.rfft(r.astype(np.float64)), 1e-5)
    back = oar.fft.irfft(got, n=10)
    assert back.dtype == oar.float32
    _check(back, r.astype(np.float64), 1e-5)
    i = np.arange(12).reshape(3, 4)
    got = oar.fft.fft(oar.to_tensor(i))
    assert got.dtype == oar.complex64  # integers take the default float dtype, as Paddle
    _check(got, np.fft.fft(i), 1e-5)


def test_round_trips_and_views():
    x = _cplx((6, 7))
    t = oar.to_tensor(x)
    _check(oar.fft.ifft(oar.fft.fft(t)), x, 1e-12)
    _check(oar.fft.ifftn(oar.fft.fftn(t, norm="ortho"), norm="ortho"), x, 1e-12)
    r = _real((5, 9))
    _check(oar.fft.irfft(oar.fft.rfft(oar.to_tensor(r)), n=9), r, 1e-12)
    # a transposed (non-contiguous) input
    tt = oar.to_tensor(x).transpose([1, 0])
    _check(oar.fft.fft(tt, axis=0), np.fft.fft(x.T, axis=0), 1e-10)


def test_freq_and_shift():
    for n, d in [(5, 1.0), (8, 0.1), (1, 2.0)]:
        _check(oar.fft.fftfreq(n, d, dtype="float64"), np.fft.fftfreq(n, d), 1e-12)
        _check(oar.fft.rfftfreq(n, d, dtype="float64"), np.fft.rfftfreq(n, d), 1e-12)
    assert oar.fft.fftfreq(4).dtype == oar.float32
    x = _real((4, 5, 3))
    for axes in (None, 1, (0, 2)):
        _check(oar.fft.fftshift(oar.to_tensor(x), axes), np.fft.fftshift(x, axes), 0)
        _check(oar.fft.ifftshift(oar.to_tensor(x), axes), np.fft.ifftshift(x, axes), 0)


def test_empty_batch():
    got = oar.fft.fft(oar.to_tensor(np.zeros((0, 4), np.complex128)))
    assert got.shape == [0, 4]
    got = oar.fft.rfft(oar.to_tensor(np.zeros((0, 4))))
    assert got.shape == [0, 3]


# ---- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,match", [
    (lambda t: oar.fft.fft(t, norm="bogus"), "norm"),
    (lambda t: oar.fft.fft(t, n=0), "n"),
    (lambda t: oar.fft.fft(t, n=2.5), "n"),
    (lambda t: oar.fft.fft(t, axis=2), "axis"),
    (lambda t: oar.fft.fftn(t, axes=(0, 0)), "repeat"),
    (lambda t: oar.fft.fftn(t, s=(2, 2), axes=(0,)), "length"),
    (lambda t: oar.fft.fftn(t, s=(2, -1)), "invalid value"),
    (lambda t: oar.fft.fft2(t[0]), "rank"),
    (lambda t: oar.fft.irfft(t[:, :1]), "pass n"),
    (lambda t: oar.fft.fftfreq(0), "n"),
])
def test_bad_arguments(call, match):
    t = oar.to_tensor(_cplx((3, 4)))
    with pytest.raises(ValueError, match=match):
        call(t)


def test_op_level_errors():
    from oar import _C
    c2r = _C.Op("fft_c2r", "axes", "normalization", "forward", "last_dim_size")
    with pytest.raises(Exception, match="needs 4 input values"):
        c2r(oar.to_tensor(_cplx((3, 5))), [1], "backward", 0, 6)
    r2c = _C.Op("fft_r2c", "axes", "normalization", "forward", "onesided")
    with pytest.raises(Exception, match="float32 or float64"):
        r2c(oar.to_tensor(_cplx((3, 5))), [1], "backward", 1, 1)
    c2c = _C.Op("fft_c2c", "axes", "normalization", "forward")
    with pytest.raises(Exception, match="normalization"):
        c2c(oar.to_tensor(_cplx((3, 5))), [1], "none", 1)
    with pytest.raises(Exception, match="axes"):
        c2c(oar.to_tensor(_cplx((3, 5))), [], "backward", 1)


# ---- gradients against central differences ----------------------------------------------------------
def _loss_np(fn, x, g):
    """L = Re(sum(conj(g) * fn(x))): the loss whose output gradient is g (Paddle's convention)."""
    with oar.no_grad():
        out = fn(oar.to_tensor(x)).numpy()
    return float(np.real(np.sum(np.conj(g) * out)))


def _numeric_grad(fn, x, g, eps=1e-6):
    flat = x.reshape(-1).copy()
    grad = np.zeros(flat.shape, dtype=x.dtype)
    for i in range(flat.size):
        for unit in ((1.0, 1j) if np.iscomplexobj(x) else (1.0,)):
            p, m = flat.copy(), flat.copy()
            p[i] += eps * unit
            m[i] -= eps * unit
            d = (_loss_np(fn, p.reshape(x.shape), g) - _loss_np(fn, m.reshape(x.shape), g)) / (2 * eps)
            grad[i] += d * unit
    return grad.reshape(x.shape)


def _analytic_grad(fn, x, g):
    t = oar.to_tensor(x)
    t.stop_gradient = False
    out = fn(t)
    (gx,) = oar.grad([out], [t], grad_outputs=[oar.to_tensor(g)])
    return gx.numpy()


GRAD_CASES = [
    ("fft", _cplx, (3, 5), lambda nrm: (lambda t: oar.fft.fft(t, norm=nrm))),
    ("ifft n", _cplx, (4, 4), lambda nrm: (lambda t: oar.fft.ifft(t, n=6, axis=0, norm=nrm))),
    ("fft2", _cplx, (3, 4), lambda nrm: (lambda t: oar.fft.fft2(t, norm=nrm))),
    ("fft real", _real, (2, 5), lambda nrm: (lambda t: oar.fft.fft(t, norm=nrm))),
    ("rfft even", _real, (2, 6), lambda nrm: (lambda t: oar.fft.rfft(t, norm=nrm))),
    ("rfft2 odd", _real, (3, 5), lambda nrm: (lambda t: oar.fft.rfft2(t, norm=nrm))),
    ("ihfft", _real, (7,), lambda nrm: (lambda t: oar.fft.ihfft(t, norm=nrm))),
    ("irfft even", _cplx, (2, 4), lambda nrm: (lambda t: oar.fft.irfft(t, norm=nrm))),
    ("irfft odd", _cplx, (2, 4), lambda nrm: (lambda t: oar.fft.irfft(t, n=7, norm=nrm))),
    ("irfft2", _cplx, (3, 4), lambda nrm: (lambda t: oar.fft.irfft2(t, s=(3, 6), norm=nrm))),
    ("hfft", _cplx, (5,), lambda nrm: (lambda t: oar.fft.hfft(t, n=8, norm=nrm))),
    ("hfftn axes", _cplx, (4, 3), lambda nrm: (lambda t: oar.fft.hfftn(t, s=(5, 4), axes=(1, 0), norm=nrm))),
]


@pytest.mark.parametrize("what,make,shape,build", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
@pytest.mark.parametrize("norm", NORMS)
def test_gradients(what, make, shape, build, norm):
    fn = build(norm)
    x = make(shape)
    with oar.no_grad():
        out = fn(oar.to_tensor(x)).numpy()
    g = _cplx(out.shape) if np.iscomplexobj(out) else _real(out.shape)
    np.testing.assert_allclose(_analytic_grad(fn, x, g), _numeric_grad(fn, x, g), rtol=1e-6, atol=1e-7)


def test_double_backward_is_linear():
    # the rules are the transforms themselves, so a second derivative exists (and is zero for a linear map)
    x = oar.to_tensor(_real((6,)))
    x.stop_gradient = False
    y = oar.fft.rfft(x)
    g = oar.to_tensor(_cplx(y.shape))
    g.stop_gradient = False
    (gx,) = oar.grad([y], [x], grad_outputs=[g], create_graph=True)
    # d(gx)/d(g) is the forward transform again: check one vector-Jacobian product against numpy
    v = _real((6,))
    (gg,) = oar.grad([gx], [g], grad_outputs=[oar.to_tensor(v)])
    np.testing.assert_allclose(gg.numpy(), np.fft.rfft(v), rtol=1e-10, atol=1e-12)


# ---- programs ------------------------------------------------------------------------------------------
def test_jit_save_writes_paddles_fft_ops(tmp_path):
    """A saved model holds Paddle's fft_r2c/fft_c2r/fft_c2c ops (not oar-only ones) and loads back.
    (Checked by hand with PaddlePaddle 2.6.2 both ways; Paddle 3.3.1's fft functions fail under
    to_static, so the round-trip fixtures do not include them.)"""

    class Spectral(oar.nn.Layer):
        def forward(self, x):
            y = oar.fft.irfft(oar.fft.rfft(x, norm="ortho") * 0.5, n=8, norm="ortho")
            c = oar.fft.ifft(oar.fft.fft(x, axis=0), axis=0)  # fft_r2c (two-sided), then fft_c2c
            return y + oar.fft.hfft(oar.fft.ihfft(x), n=8) + oar.cast(c, "float32")

    x = oar.to_tensor(_real((3, 8), np.float32))
    m = Spectral()
    want = m(x).numpy()
    prefix = str(tmp_path / "spectral")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        oar.jit.save(oar.jit.to_static(m, input_spec=[oar.static.InputSpec([None, 8], "float32")]), prefix)
    assert not [w for w in caught if "oar-only" in str(w.message)], [str(w.message) for w in caught]
    np.testing.assert_allclose(oar.jit.load(prefix)(x).numpy(), want, rtol=1e-5, atol=1e-6)
    oar.enable_static()
    try:
        prog, _, _ = oar.static.load_inference_model(prefix, oar.static.Executor(oar.CPUPlace()))
        types = [op.type for op in prog.global_block().ops]
    finally:
        oar.disable_static()
    assert {"fft_r2c", "fft_c2r", "fft_c2c"} <= set(types), types
    assert not [t for t in types if t.startswith("oar.")], types


def test_real_transforms_refuse_complex_input():
    with pytest.raises(TypeError, match="rfft: x must be real"):
        oar.fft.rfft(oar.to_tensor(_cplx((4,))))
    with pytest.raises(TypeError, match="ihfftn: x must be real"):
        oar.fft.ihfftn(oar.to_tensor(_cplx((4, 4))))
    with pytest.raises(TypeError, match="x must be a Tensor"):
        oar.fft.fft(np.zeros(4))
