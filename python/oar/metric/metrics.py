"""Metrics (Paddle's paddle.metric): Metric, Accuracy, Precision, Recall, Auc and accuracy().

Metrics keep their state in numpy and accept oar Tensors or numpy arrays. As in Paddle, `compute`
runs on the framework's outputs (it may stay a Tensor), `update` takes its result (or the raw
predictions and labels) and accumulates, `accumulate` reports, `reset` clears.
"""
import abc

import numpy as np

__all__ = ["Metric", "Accuracy", "Precision", "Recall", "Auc", "accuracy"]


def _is_tensor(x):
    from .. import Tensor
    return isinstance(x, Tensor)


def _to_numpy(x, what):
    if _is_tensor(x):
        return x._numpy_view()  # read only: no copy
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    raise ValueError("The '{}' must be a numpy ndarray or Tensor, got {}".format(what, type(x).__name__))


class Metric(metaclass=abc.ABCMeta):
    """Base class: subclasses implement reset, update, accumulate and name; compute is optional
    (by default it returns its arguments unchanged)."""

    def __init__(self):
        pass

    @abc.abstractmethod
    def reset(self):
        """Clears the accumulated state."""
        raise NotImplementedError("function 'reset' not implemented in {}.".format(type(self).__name__))

    @abc.abstractmethod
    def update(self, *args):
        """Accumulates one batch (the outputs of compute)."""
        raise NotImplementedError("function 'update' not implemented in {}.".format(type(self).__name__))

    @abc.abstractmethod
    def accumulate(self):
        """The metric over everything seen since the last reset."""
        raise NotImplementedError("function 'accumulate' not implemented in {}.".format(type(self).__name__))

    @abc.abstractmethod
    def name(self):
        """The metric's name (or list of names)."""
        raise NotImplementedError("function 'name' not implemented in {}.".format(type(self).__name__))

    def compute(self, *args):
        """Preprocesses (pred, label) on the framework side; by default a pass-through."""
        return args


class Accuracy(Metric):
    """Top-k classification accuracy for each k in topk.

    compute(pred, label) -> correct: a float32 [..., max(topk)] matrix whose column j is 1 where the
    (j+1)-th highest scored class is the label (label: class indices [N] / [N, 1], or one-hot /
    soft labels [N, C], reduced by argmax). update(correct) returns this batch's accuracy and
    accumulates; accumulate() gives a float for a single k, a list for several."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(topk, int):
            topk = (topk,)
        if not topk or any((not isinstance(k, (int, np.integer))) or k < 1 for k in topk):
            raise ValueError("topk should be a sequence of positive ints, got {!r}".format(topk))
        self.topk = tuple(topk)
        self.maxk = max(self.topk)
        self._init_name(name)
        self.reset()

    def compute(self, pred, label, *args):
        as_tensor = _is_tensor(pred)
        p = _to_numpy(pred, "pred")
        lab = _to_numpy(label, "label")
        if p.shape[-1] < self.maxk:
            raise ValueError("Accuracy: pred has {} classes but topk asks for {}".format(p.shape[-1], self.maxk))
        # Stable sort of the negated scores: among equal scores the lower class index ranks first.
        order = np.argsort(-p, axis=-1, kind="stable")[..., :self.maxk]
        if lab.shape == p.shape[:-1] or lab.ndim == 1 or (lab.ndim == p.ndim and lab.shape[-1] == 1):
            lab = lab.reshape(p.shape[:-1] + (1,))  # class indices
        elif lab.shape[-1] != 1:
            lab = np.argmax(lab, axis=-1)[..., None]
        correct = (order == lab.astype(order.dtype)).astype(np.float32)
        if as_tensor:
            from .. import to_tensor
            return to_tensor(correct)
        return correct

    def update(self, correct, *args):
        correct = _to_numpy(correct, "correct")
        num_samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            num_corrects = float(correct[..., :k].sum())
            accs.append(num_corrects / num_samples if num_samples else 0.0)
            self.total[i] += num_corrects
            self.count[i] += num_samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [float(t) / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def _init_name(self, name):
        name = name or "acc"
        self._name = ["{}_top{}".format(name, k) for k in self.topk] if self.maxk != 1 else [name]

    def name(self):
        return self._name


def _binary_inputs(preds, labels, cls):
    p = _to_numpy(preds, "preds").astype(np.float64)
    lab = _to_numpy(labels, "labels")
    p = p.reshape(p.shape[0], -1) if p.ndim > 1 else p.reshape(-1, 1)
    if p.shape[1] != 1:
        raise ValueError("{}: preds must hold one probability per sample ([N] or [N, 1]), got shape {}".format(
            cls, list(_to_numpy(preds, "preds").shape)))
    p = p[:, 0]
    lab = lab.reshape(-1)
    if lab.shape[0] != p.shape[0]:
        raise ValueError("{}: {} predictions but {} labels".format(cls, p.shape[0], lab.shape[0]))
    return (p >= 0.5).astype(np.int64), lab.astype(np.int64)


class Precision(Metric):
    """Binary precision tp / (tp + fp); a prediction is positive when its probability is >= 0.5."""

    def __init__(self, name="precision", *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tp = 0
        self.fp = 0
        self._name = name

    def update(self, preds, labels):
        pred, lab = _binary_inputs(preds, labels, "Precision")
        pos = pred == 1
        self.tp += int(np.sum(pos & (lab == 1)))
        self.fp += int(np.sum(pos & (lab != 1)))

    def reset(self):
        self.tp = 0
        self.fp = 0

    def accumulate(self):
        ap = self.tp + self.fp
        return float(self.tp) / ap if ap != 0 else 0.0

    def name(self):
        return self._name


class Recall(Metric):
    """Binary recall tp / (tp + fn); a prediction is positive when its probability is >= 0.5."""

    def __init__(self, name="recall", *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tp = 0
        self.fn = 0
        self._name = name

    def update(self, preds, labels):
        pred, lab = _binary_inputs(preds, labels, "Recall")
        actual = lab == 1
        self.tp += int(np.sum(actual & (pred == 1)))
        self.fn += int(np.sum(actual & (pred != 1)))

    def accumulate(self):
        recall = self.tp + self.fn
        return float(self.tp) / recall if recall != 0 else 0.0

    def reset(self):
        self.tp = 0
        self.fn = 0

    def name(self):
        return self._name


class Auc(Metric):
    """Area under the ROC curve, from predictions bucketed into num_thresholds + 1 bins (Paddle's
    algorithm: bucket int(p * num_thresholds), trapezoids from the highest bucket down).

    update(preds, labels): preds [N, 2] (column 1 is the positive-class probability, as Paddle) or
    [N] / [N, 1] probabilities; labels [N] or [N, 1], nonzero = positive."""

    def __init__(self, curve="ROC", num_thresholds=4095, name="auc", *args, **kwargs):
        super().__init__(*args, **kwargs)
        if curve == "PR":
            raise NotImplementedError("Auc: curve='PR' is not implemented (Paddle computes the ROC area for it)")
        if curve != "ROC":
            raise ValueError("Auc: curve should be 'ROC', got {!r}".format(curve))
        if not isinstance(num_thresholds, (int, np.integer)) or num_thresholds < 1:
            raise ValueError("Auc: num_thresholds should be a positive int, got {!r}".format(num_thresholds))
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._name = name
        self.reset()

    def update(self, preds, labels):
        lab = _to_numpy(labels, "labels").reshape(-1)
        p = _to_numpy(preds, "preds").astype(np.float64)
        if p.ndim == 2 and p.shape[1] == 2:
            p = p[:, 1]
        elif p.ndim == 1 or (p.ndim == 2 and p.shape[1] == 1):
            p = p.reshape(-1)
        else:
            raise ValueError("Auc: preds should be [N, 2] (class probabilities) or [N], got shape {}".format(
                list(p.shape)))
        if p.shape[0] != lab.shape[0]:
            raise ValueError("Auc: {} predictions but {} labels".format(p.shape[0], lab.shape[0]))
        if p.size and (np.min(p) < 0 or np.max(p) > 1 or np.isnan(p).any()):
            raise ValueError("Auc: predicted probabilities must lie in [0, 1]")
        bins = (p * self._num_thresholds).astype(np.int64)
        pos = lab != 0
        np.add.at(self._stat_pos, bins[pos], 1.0)
        np.add.at(self._stat_neg, bins[~pos], 1.0)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def accumulate(self):
        # Walking the buckets from the highest score down, each adds a point (fp count, tp count)
        # of the ROC curve; trapezoids between consecutive points, normalised by pos * neg.
        tp = np.cumsum(self._stat_pos[::-1])
        fp = np.cumsum(self._stat_neg[::-1])
        tp_prev = np.concatenate([[0.0], tp[:-1]])
        fp_prev = np.concatenate([[0.0], fp[:-1]])
        auc = float(np.sum(np.abs(fp - fp_prev) * (tp + tp_prev) / 2.0))
        tot_pos, tot_neg = tp[-1], fp[-1]
        return auc / tot_pos / tot_neg if tot_pos > 0.0 and tot_neg > 0.0 else 0.0

    def reset(self):
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def name(self):
        return self._name


def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """Top-k accuracy of one batch as a float32 0-d Tensor: the fraction of rows whose label
    (int [N, 1] or [N]) is among the k highest scores of input [N, C]. correct / total, when given
    (Tensors), receive the counts (in place)."""
    from .. import to_tensor, topk
    if not _is_tensor(input):
        input = to_tensor(np.asarray(input))
    if len(input.shape) != 2:
        raise ValueError("accuracy: input should be [N, C], got shape {}".format(list(input.shape)))
    lab = _to_numpy(label, "label")
    if lab.size != input.shape[0]:
        raise ValueError("accuracy: label should be [N, 1] or [N] with N = {}, got shape {}".format(
            input.shape[0], list(lab.shape)))
    if not np.issubdtype(lab.dtype, np.integer):
        raise TypeError("accuracy: label must hold integer class indices, got {}".format(lab.dtype))
    if not 1 <= k <= input.shape[1]:
        raise ValueError("accuracy: k should be in [1, {}], got {}".format(input.shape[1], k))
    _, indices = topk(input, k=k)
    hit = (indices._numpy_view() == lab.reshape(-1, 1)).any(axis=1)
    n_correct, n_total = int(hit.sum()), int(hit.shape[0])
    if correct is not None:
        correct.set_value(np.full(correct.shape, n_correct, dtype=np.int32))
    if total is not None:
        total.set_value(np.full(total.shape, n_total, dtype=np.int32))
    return to_tensor(np.array(n_correct / n_total if n_total else 0.0, dtype=np.float32))
