"""oar.metric against hand-computed values: Accuracy (top-k, compute/update/accumulate), Precision,
Recall, Auc (against a numpy trapezoid ROC) and the accuracy() function."""
import numpy as np
import pytest

import oar
from oar.metric import Accuracy, Auc, Metric, Precision, Recall, accuracy

PRED = np.array([[0.1, 0.7, 0.2],    # ranks: 1, 2, 0
                 [0.5, 0.3, 0.2],    # ranks: 0, 1, 2
                 [0.2, 0.3, 0.5],    # ranks: 2, 1, 0
                 [0.6, 0.1, 0.3]],   # ranks: 0, 2, 1
                dtype=np.float32)
LABEL = np.array([[1], [1], [0], [1]], dtype=np.int64)
# top1 hits: row0 only -> 1/4; top2 hits: row0, row1 -> 2/4; top3: all -> 4/4
CORRECT = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], dtype=np.float32)


def test_metric_is_abstract():
    with pytest.raises(TypeError):
        Metric()

    class Count(Metric):
        def reset(self):
            self.n = 0

        def update(self, x):
            self.n += len(x)

        def accumulate(self):
            return self.n

        def name(self):
            return "count"

    m = Count()
    m.reset()
    assert m.compute([1, 2], 3) == ([1, 2], 3)
    m.update([1, 2, 3])
    assert m.accumulate() == 3


@pytest.mark.parametrize("as_tensor", [False, True])
def test_accuracy_compute_matrix(as_tensor):
    m = Accuracy(topk=(1, 2, 3))
    pred, label = (oar.to_tensor(PRED), oar.to_tensor(LABEL)) if as_tensor else (PRED, LABEL)
    correct = m.compute(pred, label)
    assert isinstance(correct, oar.Tensor) == as_tensor
    c = correct.numpy() if as_tensor else correct
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c, CORRECT)
    # labels given as [N] or one-hot give the same matrix
    np.testing.assert_array_equal(m.compute(PRED, LABEL[:, 0]), CORRECT)
    np.testing.assert_array_equal(m.compute(PRED, np.eye(3)[LABEL[:, 0]]), CORRECT)
    # sequence outputs [B, T, C] with labels [B, T]
    seq = m.compute(np.stack([PRED, PRED]), np.stack([LABEL[:, 0], LABEL[:, 0]]))
    np.testing.assert_array_equal(seq, np.stack([CORRECT, CORRECT]))


def test_accuracy_update_accumulate():
    m = Accuracy(topk=(1, 2))
    assert m.name() == ["acc_top1", "acc_top2"]
    assert m.update(m.compute(PRED, LABEL)) == [0.25, 0.5]
    # second batch: 2 rows, both right at top1
    pred2 = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.8]], np.float32)
    assert m.update(m.compute(pred2, np.array([[0], [2]]))) == [1.0, 1.0]
    assert m.accumulate() == pytest.approx([3 / 6, 4 / 6])
    m.reset()
    assert m.accumulate() == [0.0, 0.0]

    single = Accuracy()
    assert single.name() == ["acc"]
    assert single.update(oar.to_tensor(CORRECT[:, :1])) == 0.25
    assert isinstance(single.accumulate(), float) and single.accumulate() == 0.25
    assert Accuracy(topk=(2,), name="a").name() == ["a_top2"]
    with pytest.raises(ValueError, match="topk"):
        Accuracy(topk=(0,))
    with pytest.raises(ValueError, match="classes"):
        Accuracy(topk=(5,)).compute(PRED, LABEL)


def test_accuracy_function():
    for k, expect in ((1, 0.25), (2, 0.5), (3, 1.0)):
        correct, total = oar.zeros([1], "int32"), oar.zeros([1], "int32")
        acc = accuracy(oar.to_tensor(PRED), oar.to_tensor(LABEL), k=k, correct=correct, total=total)
        assert isinstance(acc, oar.Tensor) and acc.dtype == oar.float32 and acc.shape == []
        assert float(acc.numpy()) == pytest.approx(expect)
        assert int(correct.numpy()[0]) == int(expect * 4) and int(total.numpy()[0]) == 4
    assert float(oar.metric.accuracy(oar.to_tensor(PRED), oar.to_tensor(LABEL.astype(np.int32))).numpy()) == 0.25
    with pytest.raises(ValueError, match="k should be"):
        accuracy(oar.to_tensor(PRED), oar.to_tensor(LABEL), k=4)
    with pytest.raises(TypeError, match="integer"):
        accuracy(oar.to_tensor(PRED), oar.to_tensor(LABEL.astype(np.float32)))


def test_precision_recall():
    preds = np.array([0.9, 0.2, 0.6, 0.4, 0.5, 0.1, 0.8])
    labels = np.array([1, 0, 0, 1, 1, 0, 1])
    # predicted positive (>= 0.5): idx 0, 2, 4, 6 -> tp = 0, 4, 6 (3), fp = 2 (1); fn = idx 3 (1)
    p, r = Precision(), Recall()
    p.update(preds, labels)
    r.update(oar.to_tensor(preds.reshape(-1, 1)), oar.to_tensor(labels.reshape(-1, 1)))
    assert (p.tp, p.fp) == (3, 1) and p.accumulate() == pytest.approx(0.75)
    assert (r.tp, r.fn) == (3, 1) and r.accumulate() == pytest.approx(0.75)
    p.update(np.array([0.7]), np.array([0]))
    assert p.accumulate() == pytest.approx(3 / 5)
    assert p.name() == "precision" and r.name() == "recall"
    p.reset()
    r.reset()
    assert p.accumulate() == 0.0 and r.accumulate() == 0.0
    with pytest.raises(ValueError, match="numpy ndarray or Tensor"):
        p.update([0.1], [1])
    with pytest.raises(ValueError, match="2 predictions but 3 labels"):
        r.update(np.array([0.1, 0.9]), np.array([1, 0, 1]))


def _roc_auc_reference(scores, labels):
    """Trapezoid area under the ROC curve through the thresholds at each distinct score."""
    pos, neg = labels.sum(), (1 - labels).sum()
    tpr, fpr = [0.0], [0.0]
    for t in np.unique(scores)[::-1]:
        sel = scores >= t
        tpr.append((sel & (labels == 1)).sum() / pos)
        fpr.append((sel & (labels == 0)).sum() / neg)
    return float(np.sum(np.diff(fpr) * (np.array(tpr[1:]) + np.array(tpr[:-1])) / 2))


def test_auc_against_trapezoid_roc():
    # Scores on bucket boundaries (multiples of 1/num_thresholds) so bucketing loses nothing.
    nt = 10
    rng = np.random.RandomState(0)
    scores = rng.randint(0, nt, 40) / nt
    labels = rng.randint(0, 2, 40)
    m = Auc(num_thresholds=nt)
    probs = np.stack([1 - scores, scores], axis=1)
    m.update(probs[:25], labels[:25])
    m.update(oar.to_tensor(probs[25:]), oar.to_tensor(labels[25:].reshape(-1, 1)))
    assert m.accumulate() == pytest.approx(_roc_auc_reference(scores, labels))
    assert m.name() == "auc"

    perfect = Auc()
    perfect.update(np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.1, 0.9]]), np.array([0, 1, 0, 1]))
    assert perfect.accumulate() == 1.0
    # hand-computed: pos scores {0.8, 0.4}, neg {0.6, 0.2}: 3 of 4 pairs ordered -> 0.75
    hand = Auc()
    hand.update(np.array([0.8, 0.4, 0.6, 0.2]), np.array([1, 1, 0, 0]))
    assert hand.accumulate() == pytest.approx(0.75)
    # a tie (same bucket) counts half
    tie = Auc()
    tie.update(np.array([0.5, 0.5]), np.array([1, 0]))
    assert tie.accumulate() == pytest.approx(0.5)
    tie.reset()
    assert tie.accumulate() == 0.0  # no positives and negatives yet


def test_auc_errors():
    with pytest.raises(ValueError, match="curve"):
        Auc(curve="XYZ")
    with pytest.raises(NotImplementedError, match="PR"):
        Auc(curve="PR")
    m = Auc()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        m.update(np.array([1.5]), np.array([1]))
    with pytest.raises(ValueError, match="shape"):
        m.update(np.zeros((2, 3)), np.array([0, 1]))
