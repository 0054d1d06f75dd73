"""Loss layers of oar.nn against numpy references written here (every reduction), their gradients
against finite differences, Paddle's argument names/defaults, and errors."""
import math

import numpy as np
import pytest

import oar
import oar.nn as nn
from _util import check, check_grad

rng = np.random.default_rng(0)


def T(a, device=None, dtype=None):
    return oar.to_tensor(np.asarray(a), dtype=dtype, place=device)


def red(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


REDUCTIONS = ["mean", "sum", "none"]


# ---- cross entropy / nll -----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_hard(reduction, device):
    x = rng.standard_normal((6, 5))
    y = np.array([0, 4, 2, 2, 1, 3])
    L = log_softmax(x)
    loss = nn.CrossEntropyLoss(reduction=reduction)
    check(loss(T(x, device, "float32"), T(y, device)), red(-L[np.arange(6), y], reduction).astype(np.float32),
          rtol=1e-5, atol=1e-5)
    # label of shape [N, 1] is accepted as Paddle
    out = nn.CrossEntropyLoss(reduction=reduction)(T(x, device, "float32"), T(y.reshape(6, 1), device))
    np.testing.assert_allclose(out.numpy().reshape(-1), red(-L[np.arange(6), y], reduction).reshape(-1),
                               rtol=1e-5, atol=1e-5)


def test_cross_entropy_weight_ignore_smoothing_soft(device):
    x = rng.standard_normal((6, 4))
    y = np.array([0, 3, -100, 1, 2, 3])
    w = np.array([1.0, 2.0, 0.5, 3.0])
    L = log_softmax(x)
    keep = y != -100
    ys = np.where(keep, y, 0)
    wi = w[ys] * keep
    ref = (wi * -L[np.arange(6), ys]).sum() / wi.sum()
    loss = nn.CrossEntropyLoss(weight=T(w, device, "float32"))
    check(loss(T(x, device, "float32"), T(y, device)), np.float32(ref), rtol=1e-5, atol=1e-5)
    # ignore_index other than -100
    y2 = np.array([0, 3, 1, 1, 2, 3])
    ref2 = -L[np.arange(6), y2][y2 != 3].mean()
    check(nn.CrossEntropyLoss(ignore_index=3)(T(x, device, "float32"), T(y2, device)), np.float32(ref2),
          rtol=1e-5, atol=1e-5)
    # label smoothing (with class weights: weighted mean over the smoothed labels' weights, as Paddle)
    soft = np.eye(4)[y2] * 0.9 + 0.1 / 4
    li = -(soft * L).sum(-1)
    check(nn.CrossEntropyLoss(label_smoothing=0.1)(T(x, device, "float32"), T(y2, device)), np.float32(li.mean()),
          rtol=1e-5, atol=1e-5)
    # reduction 'none' with smoothing keeps the class axis, [N, 1] (Paddle's soft-label path)
    check(nn.CrossEntropyLoss(label_smoothing=0.1, reduction="none")(T(x, device, "float32"), T(y2, device)),
          li[:, None].astype(np.float32), rtol=1e-5, atol=1e-5)
    wi = (soft * w).sum(-1)
    check(nn.CrossEntropyLoss(label_smoothing=0.1, weight=T(w, device, "float32"))(T(x, device, "float32"),
                                                                                 T(y2, device)),
          np.float32((wi * li).sum() / wi.sum()), rtol=1e-5, atol=1e-5)
    # soft labels
    p = np.exp(log_softmax(rng.standard_normal((6, 4))))
    check(nn.CrossEntropyLoss(soft_label=True)(T(x, device, "float32"), T(p, device, "float32")),
          np.float32((-(p * L).sum(-1)).mean()), rtol=1e-5, atol=1e-5)
    # use_softmax=False takes probabilities; axis=1 on [N, C, L]
    probs = np.exp(L)
    check(nn.CrossEntropyLoss(use_softmax=False)(T(probs, device, "float32"), T(y2, device)),
          np.float32(-np.log(probs[np.arange(6), y2]).mean()), rtol=1e-5, atol=1e-5)
    x3 = rng.standard_normal((2, 4, 3))
    y3 = rng.integers(0, 4, (2, 3))
    L3 = log_softmax(x3, 1)
    ref3 = -np.take_along_axis(L3, y3[:, None, :], 1)[:, 0].mean()
    check(nn.CrossEntropyLoss(axis=1)(T(x3, device, "float32"), T(y3, device)), np.float32(ref3), rtol=1e-5,
          atol=1e-5)


def test_cross_entropy_grad_and_errors():
    y = np.array([0, 2, 1])
    check_grad(lambda x: nn.CrossEntropyLoss(reduction="none")(x, T(y)), [rng.standard_normal((3, 4))])
    check_grad(lambda x: nn.CrossEntropyLoss(label_smoothing=0.2)(x, T(y)), [rng.standard_normal((3, 4))])
    with pytest.raises(ValueError, match="reduction"):
        nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=2.0)


def test_nll_loss():
    x = log_softmax(rng.standard_normal((5, 3)))
    y = np.array([0, 2, 1, 1, -100])
    w = np.array([1.0, 0.5, 2.0])
    keep = y != -100
    ys = np.where(keep, y, 0)
    wi = w[ys] * keep
    check(nn.NLLLoss(weight=T(w, dtype="float32"))(T(x, dtype="float32"), T(y)),
          np.float32((wi * -x[np.arange(5), ys]).sum() / wi.sum()), rtol=1e-5, atol=1e-6)
    check(nn.NLLLoss(reduction="sum")(T(x, dtype="float32"), T(y)), np.float32(-x[np.arange(4), y[:4]].sum()),
          rtol=1e-5, atol=1e-6)
    none = nn.NLLLoss(reduction="none")(T(x, dtype="float32"), T(y)).numpy()
    np.testing.assert_allclose(none, np.where(keep, -x[np.arange(5), ys], 0), rtol=1e-5, atol=1e-6)
    check_grad(lambda a: nn.NLLLoss()(a, T(y[:4])), [x[:4]])


# ---- regression losses -------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(reduction, device):
    a = rng.standard_normal((4, 3))
    b = rng.standard_normal((4, 3)) * 2
    d = a - b
    A, B = T(a, device, "float32"), T(b, device, "float32")
    check(nn.MSELoss(reduction)(A, B), red(d ** 2, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    check(nn.L1Loss(reduction)(A, B), red(np.abs(d), reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    for delta in (1.0, 0.5):
        hub = np.where(np.abs(d) < delta, 0.5 * d ** 2, delta * (np.abs(d) - 0.5 * delta))
        check(nn.SmoothL1Loss(reduction, delta=delta)(A, B), red(hub, reduction).astype(np.float32), rtol=1e-5,
              atol=1e-5)
        check(nn.HuberLoss(reduction, delta=delta)(A, B), red(hub, reduction).astype(np.float32), rtol=1e-5,
              atol=1e-5)
        check(nn.SmoothL1Loss(reduction, delta=delta, is_huber=False)(A, B),
              red(hub / delta, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_regression_grads():
    b = T(rng.standard_normal((3, 2)))
    for layer in (nn.MSELoss(), nn.L1Loss("sum"), nn.SmoothL1Loss(delta=0.7)):
        check_grad(lambda x: layer(x, b.astype("float64")), [rng.standard_normal((3, 2)) + 0.05])


# ---- binary / margin losses --------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_losses(reduction, device):
    p = rng.uniform(0.05, 0.95, (4, 3))
    y = rng.integers(0, 2, (4, 3)).astype(np.float64)
    w = rng.uniform(0.5, 2.0, (4, 3))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    check(nn.BCELoss(reduction=reduction)(T(p, device, "float32"), T(y, device, "float32")),
          red(bce, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    check(nn.BCELoss(weight=T(w, device, "float32"), reduction=reduction)(T(p, device, "float32"),
                                                                         T(y, device, "float32")),
          red(bce * w, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    z = rng.standard_normal((4, 3)) * 3
    pw = np.array([1.0, 2.0, 0.5])
    ref = -(pw * y * np.log(1 / (1 + np.exp(-z))) + (1 - y) * np.log(1 - 1 / (1 + np.exp(-z))))
    check(nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=T(pw, device, "float32"))(
        T(z, device, "float32"), T(y, device, "float32")), red(ref, reduction).astype(np.float32), rtol=1e-5,
        atol=1e-5)
    check(nn.BCEWithLogitsLoss(weight=T(w, device, "float32"), reduction=reduction)(
        T(z, device, "float32"), T(y, device, "float32")),
        red(w * (softplus(-z) + (1 - y) * z), reduction).astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(reduction):
    a = rng.standard_normal(6)
    b = rng.standard_normal(6)
    lab = np.array([1, -1, 1, 1, -1, -1], np.float64)
    check(nn.MarginRankingLoss(0.3, reduction)(T(a, dtype="float32"), T(b, dtype="float32"), T(lab, dtype="float32")),
          red(np.maximum(0, -lab * (a - b) + 0.3), reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    check(nn.HingeEmbeddingLoss(0.5, reduction)(T(a, dtype="float32"), T(lab, dtype="float32")),
          red(np.where(lab == 1, a, np.maximum(0, 0.5 - a)), reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    check(nn.SoftMarginLoss(reduction)(T(a, dtype="float32"), T(lab, dtype="float32")),
          red(np.log1p(np.exp(-lab * a)), reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    x1 = rng.standard_normal((6, 4))
    x2 = rng.standard_normal((6, 4))
    cos = (x1 * x2).sum(1) / np.sqrt((x1 ** 2).sum(1) * (x2 ** 2).sum(1))
    check(nn.CosineEmbeddingLoss(0.1, reduction)(T(x1, dtype="float32"), T(x2, dtype="float32"),
                                                 T(lab.astype(np.int64))),
          red(np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1)), reduction).astype(np.float32), rtol=1e-5,
          atol=1e-5)
    # multi-label soft margin, multi margin
    lab2 = rng.integers(0, 2, (6, 4)).astype(np.float64)
    ml = -(lab2 * np.log(1 / (1 + np.exp(-x1))) + (1 - lab2) * np.log(1 - 1 / (1 + np.exp(-x1)))).mean(-1)
    check(nn.MultiLabelSoftMarginLoss(reduction=reduction)(T(x1, dtype="float32"), T(lab2, dtype="float32")),
          red(ml, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    yc = rng.integers(0, 4, 6)
    wc = np.array([1.0, 2.0, 0.5, 1.5])
    for p in (1, 2):
        m = np.maximum(0, 1.0 - x1[np.arange(6), yc][:, None] + x1)
        m[np.arange(6), yc] = 0
        ref = (m ** p).sum(1) / 4 * wc[yc]
        check(nn.MultiMarginLoss(p=p, weight=T(wc, dtype="float32"), reduction=reduction)(T(x1, dtype="float32"),
                                                                                          T(yc)),
              red(ref, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_distribution_losses(reduction):
    logp = log_softmax(rng.standard_normal((3, 4)))
    q = np.exp(log_softmax(rng.standard_normal((3, 4))))
    kl = q * (np.log(q) - logp)
    check(nn.KLDivLoss(reduction)(T(logp, dtype="float32"), T(q, dtype="float32")),
          red(kl, reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    check(nn.KLDivLoss(reduction, log_target=True)(T(logp, dtype="float32"), T(np.log(q), dtype="float32")),
          red(kl, reduction).astype(np.float32), rtol=1e-5, atol=1e-6)
    x = rng.standard_normal((3, 4))
    lab = rng.poisson(2.0, (3, 4)).astype(np.float64)
    check(nn.PoissonNLLLoss(reduction=reduction)(T(x, dtype="float32"), T(lab, dtype="float32")),
          red(np.exp(x) - lab * x, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    rate = np.exp(x)
    ref = rate - lab * np.log(rate + 1e-8)
    safe = np.where(lab > 1, lab, 1)
    stirling = np.where(lab > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0)
    check(nn.PoissonNLLLoss(log_input=False, full=True, reduction=reduction)(T(rate, dtype="float32"),
                                                                             T(lab, dtype="float32")),
          red(ref + stirling, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    mu, y, var = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.uniform(0.1, 2, (3, 4))
    g = 0.5 * (np.log(var) + (mu - y) ** 2 / var)
    check(nn.GaussianNLLLoss(reduction=reduction)(T(mu, dtype="float32"), T(y, dtype="float32"),
                                                  T(var, dtype="float32")),
          red(g, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    check(nn.GaussianNLLLoss(full=True, reduction=reduction)(T(mu, dtype="float32"), T(y, dtype="float32"),
                                                             T(var, dtype="float32")),
          red(g + 0.5 * math.log(2 * math.pi), reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    if reduction == "mean":
        check(nn.KLDivLoss("batchmean")(T(logp, dtype="float32"), T(q, dtype="float32")),
              np.float32(kl.sum() / 3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_losses(reduction):
    a, p, n = (rng.standard_normal((5, 3)) for _ in range(3))

    def dist(u, v, q=2, eps=1e-6):
        return (np.abs(u - v + eps) ** q).sum(-1) ** (1.0 / q)

    ref = np.maximum(dist(a, p) - dist(a, n) + 1.0, 0)
    A, P, N = (T(v, dtype="float32") for v in (a, p, n))
    check(nn.TripletMarginLoss(reduction=reduction)(A, P, N), red(ref, reduction).astype(np.float32), rtol=1e-5,
          atol=1e-5)
    ref1 = np.maximum(dist(a, p, 1) - np.minimum(dist(a, n, 1), dist(p, n, 1)) + 0.5, 0)
    check(nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True, reduction=reduction)(A, P, N),
          red(ref1, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)
    check(nn.TripletMarginWithDistanceLoss(reduction=reduction)(A, P, N), red(ref, reduction).astype(np.float32),
          rtol=1e-5, atol=1e-5)
    l1 = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: (u - v).abs().sum(-1), margin=0.2,
                                          reduction=reduction)
    ref2 = np.maximum(np.abs(a - p).sum(-1) - np.abs(a - n).sum(-1) + 0.2, 0)
    check(l1(A, P, N), red(ref2, reduction).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_loss_grads_and_errors():
    lab = T(np.array([1.0, -1.0, 1.0]))
    check_grad(lambda x: nn.BCEWithLogitsLoss(pos_weight=T(np.array([2.0, 1.0, 0.5])))(x, T(np.array([1.0, 0, 1]))),
               [rng.standard_normal(3)])
    check_grad(lambda x, y: nn.MarginRankingLoss(0.1)(x, y, lab), [rng.standard_normal(3), rng.standard_normal(3)])
    check_grad(lambda a, p, n: nn.TripletMarginLoss(margin=3.0)(a, p, n),
               [rng.standard_normal((2, 3)) for _ in range(3)])
    check_grad(lambda x: nn.KLDivLoss("batchmean")(x, T(np.array([[0.2, 0.8], [0.5, 0.5]]))),
               [log_softmax(rng.standard_normal((2, 2)))])
    check_grad(lambda m, v: nn.GaussianNLLLoss()(m, T(np.zeros(3)), v),
               [rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)])
    for cls in (nn.MSELoss, nn.L1Loss, nn.BCELoss, nn.BCEWithLogitsLoss, nn.NLLLoss, nn.SmoothL1Loss,
                nn.MarginRankingLoss, nn.HingeEmbeddingLoss, nn.SoftMarginLoss, nn.MultiLabelSoftMarginLoss,
                nn.MultiMarginLoss, nn.TripletMarginLoss, nn.TripletMarginWithDistanceLoss, nn.PoissonNLLLoss,
                nn.GaussianNLLLoss):
        with pytest.raises(ValueError, match="reduction"):
            cls(reduction="avg")
    with pytest.raises(ValueError, match="reduction"):
        nn.KLDivLoss("avg")
    with pytest.raises(ValueError, match="margin"):
        nn.CosineEmbeddingLoss(margin=2)
    with pytest.raises(ValueError, match="epsilon"):
        nn.PoissonNLLLoss(epsilon=0)
    with pytest.raises(ValueError, match="delta"):
        nn.SmoothL1Loss(delta=0)


def test_loss_layers_have_no_parameters():
    w = T(np.ones(3), dtype="float32")
    for layer in (nn.CrossEntropyLoss(weight=w), nn.BCELoss(weight=w), nn.BCEWithLogitsLoss(pos_weight=w),
                  nn.NLLLoss(weight=w), nn.MultiMarginLoss(weight=w)):
        assert layer.parameters() == [] and len(layer.state_dict()) == 0
