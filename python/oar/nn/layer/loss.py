"""Loss layers (Paddle's paddle.nn.layer.loss): each stores its options and calls the oar.nn.functional
loss. Tensor options (weight, pos_weight) are kept as plain attributes, not parameters, as Paddle."""
from .. import functional as F
from .layers import Layer

__all__ = ["CrossEntropyLoss", "MSELoss", "L1Loss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss",
           "HuberLoss", "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
           "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss", "HSigmoidLoss"]


def _check_reduction(cls, reduction):
    if reduction not in ("sum", "mean", "none"):
        raise ValueError("{}: reduction must be 'sum', 'mean' or 'none', got {!r}".format(cls, reduction))


class CrossEntropyLoss(Layer):
    """Softmax (unless use_softmax=False) + cross entropy against hard class ids or soft labels, with
    class weights, ignore_index and label smoothing (F.cross_entropy)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                 use_softmax=True, label_smoothing=0.0, name=None):
        super().__init__()
        _check_reduction("CrossEntropyLoss", reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError("CrossEntropyLoss: label_smoothing must be in [0, 1], got {}".format(label_smoothing))
        self.weight = weight
        self.reduction = reduction
        self.ignore_index = ignore_index
        self.soft_label = soft_label
        self.axis = axis
        self.use_softmax = use_softmax
        self.label_smoothing = label_smoothing
        self.name = name

    def forward(self, input, label):
        return F.cross_entropy(input, label, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, soft_label=self.soft_label, axis=self.axis,
                               use_softmax=self.use_softmax, label_smoothing=self.label_smoothing)


class MSELoss(Layer):
    """(input - label)^2."""

    def __init__(self, reduction="mean"):
        super().__init__()
        _check_reduction("MSELoss", reduction)
        self.reduction = reduction

    def forward(self, input, label):
        return F.mse_loss(input, label, reduction=self.reduction)


class L1Loss(Layer):
    """|input - label|."""

    def __init__(self, reduction="mean", name=None):
        super().__init__()
        _check_reduction("L1Loss", reduction)
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.l1_loss(input, label, reduction=self.reduction)


class NLLLoss(Layer):
    """-input[label] for log-probabilities input [N, C, ...], with class weights and ignore_index."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", name=None):
        super().__init__()
        _check_reduction("NLLLoss", reduction)
        self._weight = weight
        self._ignore_index = ignore_index
        self._reduction = reduction
        self._name = name

    def forward(self, input, label):
        return F.nll_loss(input, label, weight=self._weight, ignore_index=self._ignore_index,
                          reduction=self._reduction)


class BCELoss(Layer):
    """Binary cross entropy of probabilities."""

    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__()
        _check_reduction("BCELoss", reduction)
        self.weight = weight
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.binary_cross_entropy(input, label, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(Layer):
    """Binary cross entropy of sigmoid(logit), computed stably; pos_weight weights the positive term."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None, name=None):
        super().__init__()
        _check_reduction("BCEWithLogitsLoss", reduction)
        self.weight = weight
        self.reduction = reduction
        self.pos_weight = pos_weight
        self.name = name

    def forward(self, logit, label):
        return F.binary_cross_entropy_with_logits(logit, label, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class SmoothL1Loss(Layer):
    """Huber loss: 0.5 d^2 where |d| < delta, delta * (|d| - 0.5 delta) elsewhere. is_huber=False
    divides by delta (the smooth-L1 form)."""

    def __init__(self, reduction="mean", delta=1.0, name=None, is_huber=True):
        super().__init__()
        _check_reduction(type(self).__name__, reduction)
        if delta <= 0:
            raise ValueError("{}: delta must be positive, got {}".format(type(self).__name__, delta))
        self.reduction = reduction
        self.delta = delta
        self.is_huber = is_huber
        self.name = name

    def forward(self, input, label):
        if self.is_huber:
            return F.smooth_l1_loss(input, label, reduction=self.reduction, delta=self.delta)
        return F.smooth_l1_loss(input, label, reduction=self.reduction, delta=self.delta) / float(self.delta)


class HuberLoss(SmoothL1Loss):
    """The same loss as SmoothL1Loss (Paddle 3 name)."""

    def __init__(self, reduction="mean", delta=1.0, is_huber=True, name=None):
        super().__init__(reduction, delta, name, is_huber)


class KLDivLoss(Layer):
    """label * (log(label) - input) for log-probabilities input (log_target: label is log-probs too)."""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__()
        if reduction not in ("sum", "mean", "none", "batchmean"):
            raise ValueError("KLDivLoss: reduction must be 'sum', 'mean', 'batchmean' or 'none', got {!r}".format(
                reduction))
        self.reduction = reduction
        self.log_target = log_target

    def forward(self, input, label):
        return F.kl_div(input, label, self.reduction, self.log_target)


class MarginRankingLoss(Layer):
    """max(0, -label * (input - other) + margin)."""

    def __init__(self, margin=0.0, reduction="mean", name=None):
        super().__init__()
        _check_reduction("MarginRankingLoss", reduction)
        self.margin = margin
        self.reduction = reduction
        self.name = name

    def forward(self, input, other, label):
        return F.margin_ranking_loss(input, other, label, self.margin, self.reduction)


class HingeEmbeddingLoss(Layer):
    """input where label == 1, max(0, margin - input) where label == -1."""

    def __init__(self, margin=1.0, reduction="mean", name=None):
        super().__init__()
        _check_reduction("HingeEmbeddingLoss", reduction)
        self.margin = margin
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.hinge_embedding_loss(input, label, reduction=self.reduction, margin=self.margin)


class CosineEmbeddingLoss(Layer):
    """1 - cos(x1, x2) where label == 1, max(0, cos(x1, x2) - margin) where label == -1."""

    def __init__(self, margin=0, reduction="mean", name=None):
        super().__init__()
        if margin > 1 or margin < -1:
            raise ValueError("CosineEmbeddingLoss: margin must be in [-1, 1], got {}".format(margin))
        _check_reduction("CosineEmbeddingLoss", reduction)
        self.margin = margin
        self.reduction = reduction
        self.name = name

    def forward(self, input1, input2, label):
        return F.cosine_embedding_loss(input1, input2, label, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(Layer):
    """log(1 + exp(-label * input))."""

    def __init__(self, reduction="mean", name=None):
        super().__init__()
        _check_reduction("SoftMarginLoss", reduction)
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.soft_margin_loss(input, label, self.reduction)


class MultiLabelSoftMarginLoss(Layer):
    """Mean over classes of the binary cross entropy of sigmoid(input) (optional class weights)."""

    def __init__(self, weight=None, reduction="mean", name=None):
        super().__init__()
        _check_reduction("MultiLabelSoftMarginLoss", reduction)
        self.weight = weight
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.multi_label_soft_margin_loss(input, label, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(Layer):
    """Multi-class hinge: mean over j != y of max(0, margin - x[y] + x[j])^p (weighted by weight[y])."""

    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean", name=None):
        super().__init__()
        _check_reduction("MultiMarginLoss", reduction)
        self.p = p
        self.margin = margin
        self.weight = weight
        self.reduction = reduction
        self.name = name

    def forward(self, input, label):
        return F.multi_margin_loss(input, label, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(Layer):
    """max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance (swap: use min(d(a, n), d(p, n)))."""

    def __init__(self, margin=1.0, p=2.0, epsilon=1e-06, swap=False, reduction="mean", name=None):
        super().__init__()
        _check_reduction("TripletMarginLoss", reduction)
        self.margin = margin
        self.p = p
        self.epsilon = epsilon
        self.swap = swap
        self.reduction = reduction
        self.name = name

    def forward(self, input, positive, negative):
        return F.triplet_margin_loss(input, positive, negative, margin=self.margin, p=self.p, epsilon=self.epsilon,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(Layer):
    """Triplet margin loss with a custom distance_function (default: pairwise L2 distance)."""

    def __init__(self, distance_function=None, margin=1.0, swap=False, reduction="mean", name=None):
        super().__init__()
        _check_reduction("TripletMarginWithDistanceLoss", reduction)
        self.margin = margin
        self.swap = swap
        self.reduction = reduction
        self.distance_function = distance_function
        self.name = name

    def forward(self, input, positive, negative):
        return F.triplet_margin_with_distance_loss(input, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(Layer):
    """exp(input) - label * input (log_input) or input - label * log(input + epsilon); full adds the
    Stirling term."""

    def __init__(self, log_input=True, full=False, epsilon=1e-8, reduction="mean", name=None):
        super().__init__()
        if epsilon <= 0:
            raise ValueError("PoissonNLLLoss: epsilon must be positive, got {}".format(epsilon))
        _check_reduction("PoissonNLLLoss", reduction)
        self._log_input = log_input
        self._full = full
        self._epsilon = epsilon
        self._reduction = reduction
        self._name = name

    def forward(self, input, label):
        return F.poisson_nll_loss(input, label, log_input=self._log_input, full=self._full, epsilon=self._epsilon,
                                  reduction=self._reduction)


class GaussianNLLLoss(Layer):
    """0.5 * (log(max(variance, epsilon)) + (input - label)^2 / max(variance, epsilon)) (+ const if full)."""

    def __init__(self, full=False, epsilon=1e-6, reduction="mean", name=None):
        super().__init__()
        _check_reduction("GaussianNLLLoss", reduction)
        self.full = full
        self.epsilon = epsilon
        self.reduction = reduction
        self.name = name

    def forward(self, input, label, variance):
        return F.gaussian_nll_loss(input, label, variance, self.full, self.epsilon, self.reduction)


class CTCLoss(Layer):
    """Connectionist temporal classification loss (see F.ctc_loss)."""

    def __init__(self, blank=0, reduction="mean"):
        super().__init__()
        self.blank, self.reduction = blank, reduction

    def forward(self, log_probs, labels, input_lengths, label_lengths, norm_by_times=False):
        return F.ctc_loss(log_probs, labels, input_lengths, label_lengths, self.blank, self.reduction, norm_by_times)


class HSigmoidLoss(Layer):
    """Hierarchical sigmoid loss with its own weight [num_classes - 1, feature_size] and bias (see
    F.hsigmoid_loss); is_custom: the tree comes from path_table / path_code at call time."""

    def __init__(self, feature_size, num_classes, weight_attr=None, bias_attr=None, is_custom=False, is_sparse=False,
                 name=None):
        super().__init__()
        if not is_custom and num_classes < 2:
            raise ValueError("HSigmoidLoss: num_classes must be >= 2, got {}".format(num_classes))
        self._num_classes = num_classes
        self._is_custom = is_custom
        rows = num_classes if is_custom else num_classes - 1
        self.weight = self.create_parameter([rows, feature_size], attr=weight_attr)
        self.bias = self.create_parameter([rows, 1], attr=bias_attr, is_bias=True)

    def forward(self, input, label, path_table=None, path_code=None):
        return F.hsigmoid_loss(input, label, self._num_classes, self.weight, self.bias, path_table, path_code)
