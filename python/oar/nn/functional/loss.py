"""Loss functions (paddle.nn.functional names, arguments and defaults).

cross_entropy with hard labels runs the fused softmax_cross_entropy kernel (one pass: softmax saved,
loss = logsumexp - x[label]; backward softmax - onehot). The other losses are composites.
"""
from ... import _C
from ...static import program as _static_program

__all__ = [
    "cross_entropy", "softmax_with_cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss",
    "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss", "sigmoid_focal_loss",
    "square_error_cost", "log_loss", "soft_margin_loss", "poisson_nll_loss", "multi_label_soft_margin_loss",
    "multi_margin_loss", "gaussian_nll_loss", "dice_loss", "triplet_margin_with_distance_loss", "npair_loss",
    "ctc_loss", "hsigmoid_loss", "margin_cross_entropy",
]

_softmax_ce = _C.Op("softmax_cross_entropy", "ignore_index")
_softmax_ce_loss = _C.Op("softmax_cross_entropy", "ignore_index", "loss_only")
_log_softmax = _C.Op("log_softmax", "axis")
_ctc = _C.Op("ctc_loss")
_hsigmoid = _C.Op("hsigmoid_loss")
_softplus = _C.Op("softplus", "beta", "threshold")
_cast = _C.Op("cast", "dtype")
_fill = _C.Op("fill", "shape", "value", "dtype")
_arange = _C.Op("arange", "start", "end", "step", "dtype")
_equal = _C.Op("equal")
_where = _C.Op("where")
_index_select = _C.Op("index_select", "axis")
_sum = _C.Op("sum", "axis", "keepdim")
_mean = _C.Op("mean", "axis", "keepdim")
_max = _C.Op("max", "axis", "keepdim")
_min = _C.Op("min", "axis", "keepdim")
_log = _C.Op("log")
_exp = _C.Op("exp")
_abs = _C.Op("abs")
_relu = _C.Op("relu")
_sqrt = _C.Op("sqrt")
_pow = _C.Op("pow")
_maximum = _C.Op("maximum")
_sigmoid = _C.Op("sigmoid")
_INF = float("inf")  # softplus threshold: never switch to the linear branch


def _const(shape, value, like):
    return _fill(list(shape), float(value), like.dtype, place=like.place)


def _check_reduction(op, reduction, extra=()):
    allowed = ("none", "mean", "sum") + tuple(extra)
    if reduction not in allowed:
        raise ValueError("{}: reduction must be one of {}, got {!r}".format(op, ", ".join(allowed), reduction))


def _reduce(loss, reduction):
    if reduction == "mean":
        return _mean(loss, [], False)
    if reduction == "sum":
        return _sum(loss, [], False)
    return loss


def _check_same_shape(op, a, b, an="input", bn="label"):
    if list(a.shape) != list(b.shape):
        raise ValueError("{}: {}.shape {} != {}.shape {}".format(op, an, a.shape, bn, b.shape))


def _is_int(t):
    return t.dtype in (_C.to_dtype("int32"), _C.to_dtype("int64"))


def _move_axis_last(x, axis):
    if axis == x.ndim - 1:
        return x
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    return x.transpose(perm)


def _hard_label(op, input, label, axis):
    """The hard label as [M] int matching input moved to [M, C]; also the shape of the per-sample loss
    (label's own shape)."""
    if not _is_int(label):
        raise TypeError("{}: hard labels must be int32 or int64, got {}".format(op, label.dtype))
    want = [d for i, d in enumerate(input.shape) if i != axis]
    lshape = list(label.shape)
    if lshape == want:
        lab = label
    else:
        with_one = list(input.shape)
        with_one[axis] = 1
        if lshape != with_one:
            raise ValueError("{}: label.shape {} must be {} or {} for input.shape {} and axis {}".format(
                op, lshape, want, with_one, list(input.shape), axis))
        lab = label.squeeze([axis])
        if axis != input.ndim - 1:
            lab = _move_axis_last(label, axis).reshape(want if want else [1])
    return lab.reshape([-1]), lshape


def _onehot(label_flat, c, like):
    rng = _arange(0.0, float(c), 1.0, label_flat.dtype, place=like.place)
    return _cast(_equal(label_flat.unsqueeze(-1), rng), like.dtype)


def _select(x2, lab, c):
    """x2[i, lab[i]] for x2 [M, C] (0 where lab is outside [0, C)); a where, so -inf elsewhere is harmless."""
    rng = _arange(0.0, float(c), 1.0, lab.dtype, place=x2.place)
    hit = _equal(lab.unsqueeze(-1), rng)
    return _sum(_where(hit, x2, _fill([], 0.0, x2.dtype, place=x2.place)), [-1], False)


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  use_softmax=True, label_smoothing=0.0, name=None):
    """Softmax cross entropy (use_softmax=False: input already holds probabilities).

    Hard labels (int, input's shape without `axis` or with it of size 1): loss = -log softmax(x)[label];
    labels equal to ignore_index give 0 and are left out of the mean. `weight` ([C]) scales each sample by
    its class's weight and 'mean' divides by the sum of those weights (Paddle's weighted mean). Soft labels
    (same shape as input): loss = -sum(label * log softmax(x)). label_smoothing > 0 turns hard labels into
    (1 - eps) * onehot + eps / C."""
    _check_reduction("cross_entropy", reduction)
    nd = input.ndim
    if nd < 1:
        raise ValueError("cross_entropy: input must have at least 1 dimension")
    if not -nd <= axis < nd:
        raise IndexError("cross_entropy: axis {} is out of range for input of rank {}".format(axis, nd))
    axis = axis % nd
    c = input.shape[axis]
    if weight is not None and list(weight.shape) != [c]:
        raise ValueError("cross_entropy: weight.shape {} must be [{}] (the class count)".format(weight.shape, c))
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError("cross_entropy: label_smoothing must be in [0, 1], got {}".format(label_smoothing))

    if not soft_label and label_smoothing == 0.0:
        lab, lshape = _hard_label("cross_entropy", input, label, axis)
        x2 = _move_axis_last(input, axis).reshape([-1, c])
        # 1 where the label is not ignored (not needed on the common path: softmax, no weight, mean)
        need_valid = not use_softmax or weight is not None or (reduction == "mean" and ignore_index >= 0)
        valid = _cast(lab != int(ignore_index), input.dtype) if need_valid else None
        if use_softmax and not _C._is_symbolic(x2) and (x2.stop_gradient or not _C.is_grad_enabled()):
            loss = _softmax_ce_loss(x2, lab, int(ignore_index), True)[0]  # no softmax written (decision 137)
        elif use_softmax:
            loss = _softmax_ce(x2, lab, int(ignore_index))[0]
        else:  # -log p[label]; ignored rows take log 1 = 0 (their label may be a valid class: ignore_index >= 0)
            loss = -_log(_select(x2, lab, c) * valid + (1.0 - valid))
        if weight is not None:
            safe = _where(lab != int(ignore_index), lab, _fill([], 0.0, lab.dtype, place=lab.place))
            w = _index_select(weight, safe, 0) * valid
            loss = loss * w
            denom = _sum(w, [], False)
        elif ignore_index >= 0 and reduction == "mean":
            denom = _sum(valid, [], False)
        else:  # Paddle: a negative ignore_index is not counted out of the mean
            denom = None
        if reduction == "none":
            return loss.reshape(lshape)
        if reduction == "sum":
            return _sum(loss, [], False)
        if denom is None:
            return _mean(loss, [], False)
        # an all-ignored batch gives 0, not NaN (as Paddle)
        return _sum(loss, [], False) / (denom + _cast(denom == 0.0, denom.dtype))

    # Soft labels (or smoothed hard labels).
    if soft_label:
        if list(label.shape) != list(input.shape):
            raise ValueError("cross_entropy: soft label.shape {} must equal input.shape {}".format(
                label.shape, input.shape))
        soft = label
        if label_smoothing > 0:
            soft = soft * (1.0 - label_smoothing) + label_smoothing / c
    else:
        lab, lshape = _hard_label("cross_entropy", input, label, axis)
        oh = _onehot(lab, c, input)
        valid = _cast(lab != int(ignore_index), input.dtype).unsqueeze(-1)
        soft2 = (oh * (1.0 - label_smoothing) + label_smoothing / c) * valid
        shp = [d for i, d in enumerate(input.shape) if i != axis] + [c]
        soft = soft2.reshape(shp)
        if axis != nd - 1:
            perm = list(range(axis)) + [nd - 1] + list(range(axis, nd - 1))
            soft = soft.transpose(perm)
    logp = _log_softmax(input, axis) if use_softmax else _log(input)
    loss = -_sum(soft * logp, [axis], True)
    if weight is not None:
        wshape = [1] * nd
        wshape[axis] = c
        w = _sum(soft * weight.reshape(wshape), [axis], True)
        loss = loss * w
    if reduction == "none":  # Paddle keeps the class axis (size 1) here, smoothed hard labels included
        return loss
    if reduction == "sum":
        return _sum(loss, [], False)
    if weight is not None:
        return _sum(loss, [], False) / _sum(w, [], False)
    if not soft_label:
        return _sum(loss, [], False) / _sum(valid, [], False)
    return _mean(loss, [], False)



# the common call in C (python/src/fast_api.cc, decision 134); the function above runs the rest
from ..._fast import fast as _fast  # noqa: E402

cross_entropy = _fast("cross_entropy", cross_entropy, "softmax_cross_entropy", ["ignore_index", "loss_only"])


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Per-sample cross entropy with `axis` kept (size 1); optionally also the softmax."""
    nd = logits.ndim
    if not -nd <= axis < nd:
        raise IndexError("softmax_with_cross_entropy: axis {} is out of range for logits of rank {}".format(axis, nd))
    axis = axis % nd
    c = logits.shape[axis]
    if soft_label:
        if list(label.shape) != list(logits.shape):
            raise ValueError("softmax_with_cross_entropy: soft label.shape {} must equal logits.shape {}".format(
                label.shape, logits.shape))
        logp = _log_softmax(logits, axis)
        loss = -_sum(label * logp, [axis], True)
        return (loss, _exp(logp)) if return_softmax else loss
    lab, _ = _hard_label("softmax_with_cross_entropy", logits, label, axis)
    x2 = _move_axis_last(logits, axis).reshape([-1, c])
    loss, sm = _softmax_ce(x2, lab, int(ignore_index))
    moved = [d for i, d in enumerate(logits.shape) if i != axis]
    loss = loss.reshape(moved + [1])
    sm = sm.reshape(moved + [c])
    if axis != nd - 1:
        perm = list(range(axis)) + [nd - 1] + list(range(axis, nd - 1))
        loss = loss.transpose(perm)
        sm = sm.transpose(perm)
    return (loss, sm) if return_softmax else loss


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """-input[n, label[n]] (input holds log-probabilities, classes on axis 1), weighted as cross_entropy."""
    _check_reduction("nll_loss", reduction)
    if input.ndim < 2:
        raise ValueError("nll_loss: input must be at least 2-D [N, C, ...], got shape {}".format(input.shape))
    c = input.shape[1]
    want = [input.shape[0]] + list(input.shape[2:])
    if input.ndim == 2 and list(label.shape) == want + [1]:
        label = label.reshape(want)  # Paddle takes [N, 1] labels for a [N, C] input
    if list(label.shape) != want:
        # Paddle 2.6 also runs with other shapes (it reads the first N label values); oar refuses them
        # rather than guess.
        raise ValueError("nll_loss: label.shape {} must be {} (or [N, 1] for a 2-D input) for input.shape {}".format(
            label.shape, want, input.shape))
    if not _is_int(label):
        raise TypeError("nll_loss: label.dtype must be int32 or int64, got {}".format(label.dtype))
    if weight is not None and list(weight.shape) != [c]:
        raise ValueError("nll_loss: weight.shape {} must be [{}]".format(weight.shape, c))
    x2 = _move_axis_last(input, 1).reshape([-1, c])
    lab = label.reshape([-1])
    valid_b = lab != int(ignore_index)
    if lab.shape[0] > 0 and not _static_program.is_symbolic(lab):  # a program variable has no values yet
        safe = _where(valid_b, lab, _fill([], 0.0, lab.dtype, place=lab.place))
        lo, hi = int(_min(safe, [], False).item()), int(_max(safe, [], False).item())
        if lo < 0 or hi >= c:
            raise IndexError("nll_loss: label values must be in [0, {}), got values in [{}, {}]".format(c, lo, hi))
    valid = _cast(valid_b, input.dtype)
    loss = -_select(x2, lab, c)
    if weight is not None:
        w = _sum(_onehot(lab, c, x2) * weight.reshape([1, c]), [-1], False) * valid
        loss = loss * w
        denom = _sum(w, [], False)
    else:
        denom = _sum(valid, [], False)
    if reduction == "none":
        return loss.reshape(want)
    if reduction == "sum":
        return _sum(loss, [], False)
    return _sum(loss, [], False) / denom


def mse_loss(input, label, reduction="mean", name=None):
    _check_reduction("mse_loss", reduction)
    d = input - label
    return _reduce(d * d, reduction)


def square_error_cost(input, label):
    """(input - label)^2, elementwise."""
    d = input - label
    return d * d


def l1_loss(input, label, reduction="mean", name=None):
    _check_reduction("l1_loss", reduction)
    return _reduce(_abs(input - label), reduction)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):
    """0.5 d^2 where |d| < delta, delta * (|d| - 0.5 delta) elsewhere (d = input - label)."""
    _check_reduction("smooth_l1_loss", reduction)
    if delta <= 0:
        raise ValueError("smooth_l1_loss: delta must be positive, got {}".format(delta))
    d = input - label
    a = _abs(d)
    small = _cast(a < float(delta), d.dtype)
    loss = small * (d * d * 0.5) + (1.0 - small) * ((a - 0.5 * delta) * float(delta))
    return _reduce(loss, reduction)


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """-(label log(input) + (1 - label) log(1 - input)), logs clamped at -100."""
    _check_reduction("binary_cross_entropy", reduction)
    _check_same_shape("binary_cross_entropy", input, label)
    lo = _const([], -100.0, input)
    loss = -(label * _maximum(_log(input), lo) + (1.0 - label) * _maximum(_log(1.0 - input), lo))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, name=None):
    """Sigmoid + binary cross entropy, computed stably:
    (1 - y) x + (1 + (pos_weight - 1) y) (log(1 + exp(-|x|)) + max(-x, 0))."""
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    _check_same_shape("binary_cross_entropy_with_logits", logit, label, "logit")
    sp = _softplus(-logit, 1.0, _INF)  # log(1 + exp(-x)), stable, exact gradient at 0
    if pos_weight is not None:
        coef = (pos_weight - 1.0) * label + 1.0
        loss = (1.0 - label) * logit + coef * sp
    else:
        loss = (1.0 - label) * logit + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None):
    """label * (log(label) - input) (0 where label <= 0); log_target: exp(label) * (label - input).
    'batchmean' divides the sum by the batch size."""
    _check_reduction("kl_div", reduction, ("batchmean",))
    if log_target:
        loss = _exp(label) * (label - input)
    else:
        pos = label > 0.0
        safe = _where(pos, label, _const([], 1.0, label))
        loss = _cast(pos, input.dtype) * (label * (_log(safe) - input))
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim > 0 else 1
        return _sum(loss, [], False) / float(n)
    return _reduce(loss, reduction)


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):
    """max(0, -label * (input - other) + margin)."""
    _check_reduction("margin_ranking_loss", reduction)
    return _reduce(_relu(-label * (input - other) + float(margin)), reduction)


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):
    """input where label == 1, max(0, margin - input) where label == -1."""
    _check_reduction("hinge_embedding_loss", reduction)
    pos = _cast(label == 1.0, input.dtype)
    neg = _cast(label == -1.0, input.dtype)
    loss = input * pos + _relu(float(margin) - input) * neg
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None):
    """1 - cos(x1, x2) where label == 1, max(0, cos(x1, x2) - margin) where label == -1."""
    _check_reduction("cosine_embedding_loss", reduction)
    if input1.ndim not in (1, 2) or list(input1.shape) != list(input2.shape):
        raise ValueError("cosine_embedding_loss: input1.shape {} and input2.shape {} must be equal, 1-D or 2-D"
                         .format(input1.shape, input2.shape))
    ax = input1.ndim - 1
    w12 = _sum(input1 * input2, [ax], False)
    w1 = _sum(input1 * input1, [ax], False)
    w2 = _sum(input2 * input2, [ax], False)
    cos = w12 / _sqrt((w1 + 10e-12) * (w2 + 10e-12))  # Paddle's constant
    pos = _cast(label == 1, cos.dtype)
    neg = _cast(label == -1, cos.dtype)
    loss = (1.0 - cos) * pos + _relu(cos - float(margin)) * neg
    return _reduce(loss, reduction)


def _pdist(x, y, p, eps):
    d = _abs(x - y + float(eps))
    if p == 2:
        return _sqrt(_sum(d * d, [-1], False))
    if p == 1:
        return _sum(d, [-1], False)
    return _pow(_sum(_pow(d, _const([], p, d)), [-1], False), _const([], 1.0 / p, d))


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False, reduction="mean",
                        name=None):
    """max(d(a, p) - d(a, n) + margin, 0) with p-norm distances."""
    _check_reduction("triplet_margin_loss", reduction)
    dp = _pdist(input, positive, p, epsilon)
    dn = _pdist(input, negative, p, epsilon)
    if swap:
        d_pn = _pdist(positive, negative, p, epsilon).unsqueeze(0)
        dn = _min(_C.Op("concat", "axis")([dn.unsqueeze(0), d_pn], 0), [0], False)
    return _reduce(_relu(dp - dn + float(margin)), reduction)


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None):
    """alpha_t (1 - p_t)^gamma * bce_with_logits, divided by normalizer when given."""
    _check_reduction("sigmoid_focal_loss", reduction)
    _check_same_shape("sigmoid_focal_loss", logit, label, "logit")
    p = _sigmoid(logit)
    ce = binary_cross_entropy_with_logits(logit, label, reduction="none")
    p_t = p * label + (1.0 - p) * (1.0 - label)
    loss = ce * _pow(1.0 - p_t, _const([], gamma, p_t)) if gamma != 0 else ce
    if alpha >= 0:
        loss = (label * alpha + (1.0 - label) * (1.0 - alpha)) * loss
    if normalizer is not None:
        loss = loss / normalizer
    return _reduce(loss, reduction)


def log_loss(input, label, epsilon=1e-4, name=None):
    """-label log(input + eps) - (1 - label) log(1 - input + eps)."""
    return -(label * _log(input + float(epsilon))) - (1.0 - label) * _log(1.0 - input + float(epsilon))


def soft_margin_loss(input, label, reduction="mean", name=None):
    """log(1 + exp(-label * input))."""
    _check_reduction("soft_margin_loss", reduction)
    z = -label * input
    loss = _softplus(z, 1.0, _INF)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-8, reduction="mean", name=None):
    """exp(input) - label * input (log_input) or input - label * log(input + eps); full adds Stirling's term
    label log(label) - label + 0.5 log(2 pi label) where label > 1."""
    _check_reduction("poisson_nll_loss", reduction)
    if epsilon <= 0:
        raise ValueError("poisson_nll_loss: epsilon must be positive, got {}".format(epsilon))
    if log_input:
        loss = _exp(input) - label * input
    else:
        loss = input - label * _log(input + float(epsilon))
    if full:
        big = label > 1.0
        safe = _where(big, label, _const([], 1.0, label))
        st = safe * _log(safe) - safe + 0.5 * _log(safe * 6.283185307179586)
        loss = loss + st * _cast(big, label.dtype)
    return _reduce(loss, reduction)


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):
    """-mean over classes of (label log sigmoid(x) + (1 - label) log sigmoid(-x)), per sample."""
    _check_reduction("multi_label_soft_margin_loss", reduction)
    _check_same_shape("multi_label_soft_margin_loss", input, label)
    loss = label * _softplus(-input, 1.0, _INF) + (1.0 - label) * _softplus(input, 1.0, _INF)
    if weight is not None:
        loss = loss * weight
    loss = _mean(loss, [-1], False)
    return _reduce(loss, reduction)


def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C (times weight[y])."""
    _check_reduction("multi_margin_loss", reduction)
    if input.ndim != 2 or list(label.shape) != [input.shape[0]]:
        raise ValueError("multi_margin_loss: expected input [N, C] and label [N], got {} and {}".format(
            input.shape, label.shape))
    if p not in (1, 2):
        raise ValueError("multi_margin_loss: p must be 1 or 2, got {}".format(p))
    c = input.shape[1]
    oh = _onehot(label.reshape([-1]), c, input)
    xy = _sum(input * oh, [1], True)
    m = _relu(input - xy + float(margin)) * (1.0 - oh)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * _sum(oh * weight.reshape([1, c]), [1], True)
    loss = _sum(m, [1], False) / float(c)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean", name=None):
    """0.5 (log(var) + (input - label)^2 / var) with var clamped to >= epsilon; full adds 0.5 log(2 pi)."""
    _check_reduction("gaussian_nll_loss", reduction)
    if epsilon <= 0:
        raise ValueError("gaussian_nll_loss: epsilon must be positive, got {}".format(epsilon))
    var = _maximum(variance, _const([], float(epsilon), variance))
    d = input - label
    loss = (_log(var) + d * d / var) * 0.5
    if full:
        loss = loss + 0.9189385332046727
    return _reduce(loss, reduction)


def dice_loss(input, label, epsilon=0.00001, name=None):
    """1 - 2 |X n Y| / (|X| + |Y|) per sample, averaged; input [N, ..., C] probabilities, label [N, ..., 1]."""
    if input.ndim < 2 or list(label.shape) != list(input.shape[:-1]) + [1]:
        raise ValueError("dice_loss: label.shape {} must be input.shape[:-1] + [1] for input.shape {}".format(
            label.shape, input.shape))
    if not _is_int(label):
        raise TypeError("dice_loss: label.dtype must be int32 or int64, got {}".format(label.dtype))
    c = input.shape[-1]
    oh = _onehot(label.reshape([-1]), c, input).reshape(list(input.shape))
    axes = list(range(1, input.ndim))
    inse = _sum(input * oh, axes, False)
    denom = _sum(input, axes, False) + _sum(oh, axes, False)
    return _mean(1.0 - inse * 2.0 / (denom + float(epsilon)), [], False)


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean", name=None):
    """max(d(a, p) - d(a, n) + margin, 0) with a custom distance (default: pairwise_distance)."""
    _check_reduction("triplet_margin_with_distance_loss", reduction)
    dist = distance_function if distance_function is not None else (lambda a, b: _pdist(a, b, 2, 1e-6))
    dp = dist(input, positive)
    dn = dist(input, negative)
    if swap:
        dn = _min(_C.Op("concat", "axis")([dn.unsqueeze(0), dist(positive, negative).unsqueeze(0)], 0), [0], False)
    return _reduce(_relu(dp - dn + float(margin)), reduction)


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss (Sohn 2016), as Paddle computes it: softmax cross-entropy of the similarity rows
    anchor @ positive^T against the soft targets "same label" (each row normalized to sum 1), averaged
    over the batch, plus l2_reg / 4 * (mean ||anchor_i||^2 + mean ||positive_i||^2)."""
    for what, t in (("anchor", anchor), ("positive", positive)):
        if t.ndim != 2:
            raise ValueError("npair_loss: {} must be 2-D [batch, dim], got shape {}".format(what, t.shape))
    if list(anchor.shape) != list(positive.shape):
        raise ValueError("npair_loss: anchor.shape {} must equal positive.shape {}".format(anchor.shape, positive.shape))
    n = anchor.shape[0]
    if labels.size != n:
        raise ValueError("npair_loss: labels must hold one value per row ({}), got shape {}".format(n, labels.shape))
    lab = labels.reshape([n, 1])
    same = _cast(lab == lab.reshape([1, n]), anchor.dtype)
    targets = same / _sum(same, [1], True)
    l2 = (_sum(anchor * anchor, [], False) + _sum(positive * positive, [], False)) / float(n)
    sim = anchor.matmul(positive, transpose_y=True)
    ce = -_sum(targets * _log_softmax(sim, -1), [1], False)
    return l2 * (0.25 * float(l2_reg)) + _sum(ce, [], False) / float(n)


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False):
    """Connectionist temporal classification loss, -log p(labels | inputs) summed over all alignments.

    log_probs [T, N, C] are unscaled logits (log_softmax is applied here, as Paddle's warpctc applies
    softmax), labels [N, S] padded label ids, input_lengths / label_lengths [N]. The core op "ctc_loss"
    runs the alpha-beta recursion in log space (cpu plugin ctc.cc); norm_by_times divides each item's
    gradient by its input length (the loss is unchanged), as Paddle. reduction 'mean' divides each loss
    by its label length before averaging, as Paddle does."""
    _check_reduction("ctc_loss", reduction)
    if log_probs.ndim != 3:
        raise ValueError("ctc_loss: log_probs must be 3-D [T, N, C], got shape {}".format(log_probs.shape))
    t_max, n, c = log_probs.shape
    if labels.ndim != 2 or labels.shape[0] != n:
        raise ValueError("ctc_loss: labels must be [N={}, S], got shape {}".format(n, labels.shape))
    for what, v in (("input_lengths", input_lengths), ("label_lengths", label_lengths)):
        if list(v.shape) != [n]:
            raise ValueError("ctc_loss: {} must have shape [{}], got {}".format(what, n, v.shape))
        if not _is_int(v):
            raise TypeError("ctc_loss: {} must be int32 or int64, got {}".format(what, v.dtype))
    if not 0 <= blank < c:
        raise ValueError("ctc_loss: blank must be in [0, {}), got {}".format(c, blank))
    if not _is_int(labels):
        raise TypeError("ctc_loss: labels must be int32 or int64, got {}".format(labels.dtype))
    dt = log_probs.dtype
    loss = _ctc(_log_softmax(log_probs, 2), labels, input_lengths, label_lengths, blank=int(blank),
                norm_by_times=int(bool(norm_by_times)))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return (loss / label_lengths.astype(dt)).mean()


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None, path_code=None, is_sparse=False,
                  name=None):
    """Hierarchical sigmoid: each class is a leaf of a binary tree; the loss sums the binary cross
    entropies of the decisions on its path, pre = weight[node] . x + bias[node] clipped to [-40, 40].
    Default tree: class c has code c + num_classes, nodes (code >> (j + 1)) - 1 and bits (code >> j) & 1;
    a custom path_table ends a path at its first negative entry. As Paddle, each position past a shorter
    path adds log 2. Returns [N, 1]. The core op "hsigmoid_loss" (cpu plugin hsigmoid.cc) computes it and
    its gradients for input, weight and bias; the default tree's paths are built with oar ops."""
    import math as _m
    import oar as _o
    if input.ndim != 2:
        raise ValueError("hsigmoid_loss: input must be 2-D [N, D], got shape {}".format(input.shape))
    n, d = input.shape
    if (path_table is None) != (path_code is None):
        raise ValueError("hsigmoid_loss: path_table and path_code must be given together")
    if path_table is None and (not isinstance(num_classes, int) or num_classes < 2):
        raise ValueError("hsigmoid_loss: num_classes must be an int >= 2, got {!r}".format(num_classes))
    if not _is_int(label):
        raise TypeError("hsigmoid_loss: label must be int32 or int64, got {}".format(label.dtype))
    if weight.ndim != 2 or weight.shape[1] != d:
        raise ValueError("hsigmoid_loss: weight must be [num_nodes, {}], got shape {}".format(d, weight.shape))
    if path_table is None:
        lab = label.reshape([n]).astype("int64")
        depth = int(_m.floor(_m.log2(num_classes - 1))) + 1 if num_classes > 2 else 1
        code = lab + num_classes
        nodes, bits = [], []
        for j in range(depth):
            inside = code >= 2 ** (j + 1)
            nodes.append(_o.where(inside, code // (2 ** (j + 1)) - 1, _o.full_like(code, -1)))
            bits.append((code // (2 ** j)) % 2)
        path_table, path_code = _o.stack(nodes, 1), _o.stack(bits, 1)
    if bias is None:
        bias = _o.zeros([weight.shape[0], 1], dtype=weight.dtype)
    out, _ = _hsigmoid(input, weight, bias.reshape([weight.shape[0], 1]), path_table, path_code)
    return out


def margin_cross_entropy(logits, label, margin1=1.0, margin2=0.5, margin3=0.0, scale=64.0, group=None,
                         return_softmax=False, reduction="mean"):
    """ArcFace-style margin softmax loss (single process): the target class's cosine cos(t) becomes
    cos(margin1 * t + margin2) - margin3, every logit is multiplied by scale, then softmax cross entropy.
    Returns loss ([N, 1] for reduction 'none') and, with return_softmax, the softmax [N, C]. The class
    dimension is not split across ranks here (group must be None or a single-rank group)."""
    import oar as _o
    _check_reduction("margin_cross_entropy", reduction)
    if group is not None and getattr(group, "nranks", 1) != 1:
        raise NotImplementedError("margin_cross_entropy: a model-parallel group (classes split across ranks) is "
                                  "not supported; pass group=None")
    if logits.ndim != 2:
        raise ValueError("margin_cross_entropy: logits must be 2-D [N, C], got shape {}".format(logits.shape))
    n, c = logits.shape
    if not _is_int(label):
        raise TypeError("margin_cross_entropy: label must be int32 or int64, got {}".format(label.dtype))
    lab = label.reshape([n]).astype("int64")
    onehot = _cast(_o.arange(0, c, dtype="int64").reshape([1, c]) == lab.reshape([n, 1]), logits.dtype)
    target = _sum(logits * onehot, [1], True)
    theta = target.clip(-1.0, 1.0).acos()
    changed = (theta * margin1 + margin2).cos() - margin3
    z = (logits + onehot * (changed - target)) * scale
    logp = _log_softmax(z, 1)
    loss = -_sum(logp * onehot, [1], True)
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return (loss, logp.exp()) if return_softmax else loss
