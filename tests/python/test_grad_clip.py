"""Gradient clipping: ClipGradByValue / ByNorm / ByGlobalNorm on (param, grad) lists, and
oar.nn.utils.clip_grad_norm_ / clip_grad_value_ in place, against numpy."""
import numpy as np
import pytest

import oar
from oar.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue
from oar.nn.utils import clip_grad_norm_, clip_grad_value_


RNG = np.random.default_rng(3)
GS = [RNG.standard_normal((3, 4)) * 2, RNG.standard_normal((5,)), RNG.standard_normal((2, 2)) * 0.1]


def pairs(device="cpu", dtype="float32"):
    out = []
    for i, g in enumerate(GS):
        p = oar.zeros(list(g.shape), dtype=dtype).to(device)
        p.name = f"p{i}"
        out.append((p, oar.to_tensor(g.astype(dtype), place=device)))
    return out


def test_clip_by_value(device):
    pg = pairs(device)
    pg[1][0].need_clip = False
    out = ClipGradByValue(0.5)(pg)
    assert [p.name for p, _ in out] == ["p0", "p1", "p2"]
    np.testing.assert_allclose(out[0][1].numpy(), np.clip(GS[0], -0.5, 0.5), rtol=1e-6)
    np.testing.assert_allclose(out[1][1].numpy(), GS[1], rtol=1e-6)  # need_clip False
    out = ClipGradByValue(1.0, min=-0.2)(pairs(device))
    np.testing.assert_allclose(out[0][1].numpy(), np.clip(GS[0], -0.2, 1.0), rtol=1e-6)


def test_clip_by_norm(device):
    out = ClipGradByNorm(1.0)(pairs(device))
    for (_, g), ref in zip(out, GS):
        n = np.linalg.norm(ref)
        want = ref * (1.0 / n) if n > 1.0 else ref
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_by_global_norm(device, dtype):
    pg = pairs(device, dtype)
    pg[2][0].need_clip = False
    pg.append((oar.zeros([2]), None))  # no gradient: passed through
    clip = ClipGradByGlobalNorm(2.0)
    out = clip(pg)
    gnorm = np.sqrt(sum((g ** 2).sum() for g in GS[:2]))
    np.testing.assert_allclose(float(clip.global_norm(pg)), gnorm, rtol=1e-5)
    scale = 2.0 / max(gnorm, 2.0)
    for (_, g), ref in zip(out[:2], GS[:2]):
        assert g.dtype == pg[0][1].dtype
        np.testing.assert_allclose(g.numpy(), ref * scale, rtol=1e-5)
    np.testing.assert_allclose(out[2][1].numpy(), GS[2], rtol=1e-6)
    assert out[3][1] is None
    # the inputs are not modified
    np.testing.assert_allclose(pg[0][1].numpy(), GS[0], rtol=1e-6)
    # a large clip_norm leaves gradients as they are
    out = ClipGradByGlobalNorm(1e6)(pairs(device, dtype))
    np.testing.assert_allclose(out[0][1].numpy(), GS[0], rtol=1e-6)


def test_global_norm_auto_skip_and_empty():
    pg = pairs()
    out = ClipGradByGlobalNorm(1e6, auto_skip_clip=True)(pg)
    assert out[0][1] is pg[0][1]
    out = ClipGradByGlobalNorm(1.0)([(pg[0][0], None)])
    assert len(out) == 1 and out[0][0] is pg[0][0] and out[0][1] is None


def params_with_grads():
    ps = []
    for g in GS:
        p = oar.zeros(list(g.shape))
        p.stop_gradient = False
        (p * oar.to_tensor(g.astype("float32"))).sum().backward()
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_(norm_type):
    ps = params_with_grads()
    flat = np.concatenate([g.ravel() for g in GS])
    want = np.abs(flat).max() if np.isinf(norm_type) else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(ps, 1.5, norm_type=norm_type)
    np.testing.assert_allclose(float(total), want, rtol=1e-5)
    coef = min(1.0, 1.5 / (want + 1e-6))
    for p, g in zip(ps, GS):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5)


def test_clip_grad_norm_no_op_and_nonfinite():
    ps = params_with_grads()
    total = clip_grad_norm_(ps[0], 1e6)  # one tensor accepted
    np.testing.assert_allclose(ps[0].grad.numpy(), GS[0], rtol=1e-6)
    assert float(total) > 0
    assert float(clip_grad_norm_([oar.zeros([2])], 1.0)) == 0.0  # no gradients
    p = oar.zeros([2])
    p.stop_gradient = False
    (p * oar.to_tensor([np.inf, 1.0])).sum().backward()
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_value_():
    ps = params_with_grads()
    clip_grad_value_(ps, 0.3)
    for p, g in zip(ps, GS):
        np.testing.assert_allclose(p.grad.numpy(), np.clip(g, -0.3, 0.3), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="ClipGradByValue"):
        ClipGradByValue(-1.0)
    with pytest.raises(ValueError, match="min"):
        ClipGradByValue(0.1, min=0.5)
    with pytest.raises(TypeError, match="clip_norm"):
        ClipGradByNorm("1")
    with pytest.raises(TypeError, match="group_name"):
        ClipGradByGlobalNorm(1.0, group_name=3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_merged_sum_squares(device, dtype):
    xs = [oar.to_tensor(g, dtype=dtype).to(device) for g in GS]
    xs.append(oar.to_tensor(RNG.standard_normal((4, 6)), dtype=dtype).to(device)[:, ::2])  # strided input
    out = oar._C.Op("merged_sum_squares")(xs)
    assert out.shape == [] and out.dtype == (oar.float64 if dtype == "float64" else oar.float32)
    want = sum(float((x.astype("float64").numpy() ** 2).sum()) for x in xs)
    np.testing.assert_allclose(float(out), want, rtol=1e-12 if dtype == "float64" else 1e-6)
    # many chunks (more than 16K elements each) sum the same as numpy
    big = RNG.standard_normal(100_000)
    got = float(oar._C.Op("merged_sum_squares")([oar.to_tensor(big).to(device)]))
    np.testing.assert_allclose(got, (big ** 2).sum(), rtol=1e-12)


def test_merged_sum_squares_errors():
    with pytest.raises(TypeError, match="merged_sum_squares"):
        oar._C.Op("merged_sum_squares")([oar.ones([2], dtype="int32")])
    with pytest.raises(TypeError, match="merged_sum_squares"):
        oar._C.Op("merged_sum_squares")([oar.ones([2]), oar.ones([2], dtype="float64")])
