"""oar.Model / oar.hapi: fit/evaluate/predict end to end, the *_batch APIs, save/load, callbacks,
summary and flops (against hand-counted numbers)."""
import csv
import io
import json
import os
import re

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar import nn
from oar.callbacks import (Callback, EarlyStopping, LRScheduler, MetricsLogger, ModelCheckpoint,
                           ReduceLROnPlateau)
from oar.hapi.progressbar import ProgressBar

needs_optim = pytest.mark.skipif(not hasattr(oar.optimizer, "SGD"), reason="oar.optimizer.SGD not available")


class ToyData(oar.io.Dataset):
    """Linearly separable points: label = [x . w > 0]. Samples are (float32 [4], int64 [1])."""

    def __init__(self, n=192, seed=0):
        rng = np.random.RandomState(seed)
        self.x = rng.randn(n, 4).astype("float32")
        w = np.array([1.5, -2.0, 1.0, 0.5], "float32")
        self.y = (self.x @ w > 0).astype("int64").reshape(-1, 1)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def ce_loss(logits, label):
    return F.cross_entropy(logits, label)


def make_model(lr=0.5, optimizer="SGD", metrics=True, seed=1):
    oar.seed(seed)
    net = nn.Linear(4, 2)
    opt = getattr(oar.optimizer, optimizer)(learning_rate=lr, parameters=net.parameters())
    model = oar.Model(net)
    model.prepare(opt, ce_loss, oar.metric.Accuracy() if metrics else None)
    return model


class Recorder(Callback):
    def __init__(self):
        super().__init__()
        self.calls = []
        self.logs = []

    def _rec(self, name, logs):
        self.calls.append(name)
        self.logs.append((name, dict(logs) if logs else logs))

    def on_train_begin(self, logs=None): self._rec("train_begin", logs)
    def on_train_end(self, logs=None): self._rec("train_end", logs)
    def on_eval_begin(self, logs=None): self._rec("eval_begin", logs)
    def on_eval_end(self, logs=None): self._rec("eval_end", logs)
    def on_predict_begin(self, logs=None): self._rec("predict_begin", logs)
    def on_predict_end(self, logs=None): self._rec("predict_end", logs)
    def on_epoch_begin(self, epoch, logs=None): self._rec("epoch_begin%d" % epoch, logs)
    def on_epoch_end(self, epoch, logs=None): self._rec("epoch_end%d" % epoch, logs)
    def on_train_batch_begin(self, step, logs=None): self._rec("tb%d" % step, logs)
    def on_train_batch_end(self, step, logs=None): self._rec("te%d" % step, logs)
    def on_eval_batch_begin(self, step, logs=None): self._rec("eb%d" % step, logs)
    def on_eval_batch_end(self, step, logs=None): self._rec("ee%d" % step, logs)
    def on_predict_batch_begin(self, step, logs=None): self._rec("pb%d" % step, logs)
    def on_predict_batch_end(self, step, logs=None): self._rec("pe%d" % step, logs)


# ---- end to end ----
@needs_optim
def test_fit_evaluate_predict_toy():
    train, test = ToyData(192, 0), ToyData(96, 1)
    model = make_model()
    before = model.evaluate(test, batch_size=32, verbose=0)
    rec = Recorder()
    model.fit(train, test, batch_size=16, epochs=4, verbose=0, callbacks=[rec])
    after = model.evaluate(test, batch_size=32, verbose=0)
    assert set(after) == {"loss", "acc"}
    assert isinstance(after["loss"], list) and len(after["loss"]) == 1
    # Training on separable data: loss drops, and accuracy on held-out points reaches 0.9.
    assert after["loss"][0] < 0.5 * before["loss"][0]
    assert after["acc"] >= 0.9
    epoch_losses = [l["loss"][0] for n, l in rec.logs if n.startswith("epoch_end")]
    assert len(epoch_losses) == 4

    out = model.predict(test, batch_size=32, verbose=0)
    assert len(out) == 1 and len(out[0]) == 3 and out[0][0].shape == (32, 2)
    stacked = model.predict(test, batch_size=40, stack_outputs=True, verbose=0)
    assert stacked[0].shape == (96, 2)
    pred_acc = np.mean(stacked[0].argmax(1) == test.y[:, 0])
    assert abs(pred_acc - after["acc"]) < 1e-6


@needs_optim
def test_fit_with_dataloader_and_num_iters():
    train = ToyData(64)
    loader = oar.io.DataLoader(train, batch_size=8, shuffle=False)
    model = make_model()
    rec = Recorder()
    model.fit(loader, epochs=5, verbose=0, callbacks=[rec], num_iters=11)
    # 8 steps per epoch: 11 iterations = one full epoch plus 3 steps of the second.
    assert sum(c.startswith("te") for c in rec.calls) == 11
    assert rec.calls[-1] == "train_end"


@needs_optim
def test_fit_and_evaluate_with_worker_processes():
    model = make_model()
    model.fit(ToyData(64), batch_size=16, epochs=3, verbose=0, num_workers=1)
    assert model.evaluate(ToyData(32, 1), batch_size=8, verbose=0, num_workers=1)["acc"] >= 0.8


class Spec:
    """An InputSpec-like object (oar.static.InputSpec does not exist yet)."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape, self.dtype, self.name = shape, dtype, name


class TwoInputs(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(2, 2)

    def forward(self, x1, x2, scale=1.0):  # `scale` has a default: not an input
        return (self.a(x1) + self.b(x2)) * scale


class SplitData(oar.io.Dataset):
    """ToyData's 4 features as two inputs of 2: samples (x1, x2, label)."""

    def __init__(self, n, seed=0):
        self.toy = ToyData(n, seed)

    def __getitem__(self, i):
        x, y = self.toy[i]
        return x[:2], x[2:], y

    def __len__(self):
        return len(self.toy)


@needs_optim
@pytest.mark.parametrize("explicit", [False, True])
def test_several_inputs_split_from_labels(explicit, capsys):
    oar.seed(0)
    net = TwoInputs()
    inputs = [Spec([None, 2], name="x1"), Spec([None, 2], name="x2")] if explicit else None
    model = oar.Model(net, inputs=inputs, labels=[Spec([None, 1], "int64", "label")] if explicit else None)
    assert len(model._inputs) == 2
    model.prepare(oar.optimizer.SGD(learning_rate=0.5, parameters=net.parameters()), nn.CrossEntropyLoss(),
                  oar.metric.Accuracy())
    model.fit(SplitData(192), batch_size=16, epochs=4, verbose=0)
    assert model.evaluate(SplitData(96, 1), batch_size=32, verbose=0)["acc"] >= 0.9
    out = model.predict(SplitData(10, 1), batch_size=4, stack_outputs=True, verbose=0)
    assert out[0].shape == (10, 2)
    if explicit:  # Model.summary reads the shapes of the inputs given to Model
        assert model.summary()["total_params"] == 12
        assert "Linear" in capsys.readouterr().out
    with pytest.raises(TypeError, match="InputSpec"):
        oar.Model(net, inputs=[3])


# ---- one batch ----
@needs_optim
def test_batch_apis_shapes():
    data = ToyData(8)
    x, y = data.x, data.y
    model = make_model()
    losses, metrics = model.train_batch([x], [y])
    assert isinstance(losses, list) and len(losses) == 1 and np.asarray(losses[0]).size == 1
    assert len(metrics) == 1
    losses, metrics = model.eval_batch([x], [y])
    assert np.asarray(losses[0]).size == 1 and 0.0 <= float(np.asarray(metrics[0]).reshape(-1)[0]) <= 1.0
    out = model.predict_batch([x])
    assert isinstance(out, list) and out[0].shape == (8, 2)
    # Without metrics: a plain list of losses.
    model2 = make_model(metrics=False)
    losses = model2.train_batch(x, y)
    assert isinstance(losses, list) and np.asarray(losses[0]).size == 1


@needs_optim
def test_train_batch_matches_hand_computed_sgd_step():
    oar.seed(3)
    net = nn.Linear(3, 1)
    w0, b0 = net.weight.numpy().copy(), net.bias.numpy().copy()
    model = oar.Model(net)
    lr = 0.1
    model.prepare(oar.optimizer.SGD(learning_rate=lr, parameters=net.parameters()),
                  lambda out, label: ((out - label) ** 2).mean())
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], "float32")
    t = np.array([[1.0], [-2.0]], "float32")
    loss = model.train_batch([x], [t])[0]
    pred = x @ w0 + b0
    np.testing.assert_allclose(loss, np.mean((pred - t) ** 2), rtol=1e-5)
    g = 2 * (pred - t) / len(x)
    np.testing.assert_allclose(net.weight.numpy(), w0 - lr * x.T @ g, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.bias.numpy(), b0 - lr * g.sum(0), rtol=1e-5, atol=1e-6)
    # update=False: gradients are computed but parameters do not move.
    w1 = net.weight.numpy().copy()
    model.train_batch([x], [t], update=False)
    np.testing.assert_array_equal(net.weight.numpy(), w1)


@needs_optim
def test_accumulate_grad_batches_steps_every_k_and_at_the_end():
    model = make_model()
    calls = []
    orig = model._optimizer.step

    def counting_step():
        calls.append(1)
        orig()
    model._optimizer.step = counting_step
    loader = oar.io.DataLoader(ToyData(40), batch_size=8)  # 5 batches
    model.fit(loader, epochs=1, verbose=0, accumulate_grad_batches=2)
    assert len(calls) == 3  # after batches 2, 4 and the last one


# ---- save / load ----
@needs_optim
def test_save_load_round_trip(tmp_path):
    data = ToyData(64)
    model = make_model(lr=0.05, optimizer="Adam")
    model.fit(data, batch_size=16, epochs=1, verbose=0)
    prefix = str(tmp_path / "ckpt" / "m")
    model.save(prefix)
    assert os.path.exists(prefix + ".pdparams") and os.path.exists(prefix + ".pdopt")
    expected = model.predict_batch([data.x])[0]

    fresh = make_model(lr=0.05, optimizer="Adam", seed=7)
    assert not np.allclose(fresh.predict_batch([data.x])[0], expected)
    fresh.load(prefix)
    np.testing.assert_array_equal(fresh.predict_batch([data.x])[0], expected)
    fresh.load(prefix + ".pdparams", reset_optimizer=True)  # the suffix is accepted too

    # A network whose shapes differ: an error naming the parameter, or a warning with skip_mismatch.
    other = oar.Model(nn.Linear(4, 3))
    with pytest.raises(ValueError, match="shape"):
        other.load(prefix)
    with pytest.warns(UserWarning, match="Skip loading"):
        other.load(prefix, skip_mismatch=True)
    with pytest.raises(ValueError, match="does not exist"):
        fresh.load(str(tmp_path / "nothing"))


def test_save_inference_model(tmp_path):
    oar.seed(1)
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2))
    model = oar.Model(net, inputs=[oar.static.InputSpec([None, 2], "float32", "x")])
    prefix = str(tmp_path / "infer")
    model.save(prefix, training=False)
    for ext in (".pdmodel", ".pdiparams", ".pdiparams.info"):
        assert os.path.exists(prefix + ext)
    assert net.training  # the mode is restored
    loaded = oar.jit.load(prefix)
    x = oar.to_tensor(np.random.RandomState(0).randn(5, 2).astype("float32"))
    np.testing.assert_allclose(loaded(x).numpy(), net(x).numpy(), rtol=1e-6)
    # Without input shapes there is nothing to trace.
    with pytest.raises(ValueError, match="InputSpec"):
        oar.Model(nn.Linear(2, 2)).save(str(tmp_path / "nospec"), training=False)


# ---- callbacks ----
@needs_optim
def test_callbacks_order():
    train = oar.io.DataLoader(ToyData(24), batch_size=8)   # 3 steps
    evald = oar.io.DataLoader(ToyData(16, 1), batch_size=8)  # 2 steps
    model = make_model()
    rec = Recorder()
    model.fit(train, evald, epochs=2, verbose=0, callbacks=rec)
    epoch = lambda e: (["epoch_begin%d" % e, "tb0", "te0", "tb1", "te1", "tb2", "te2", "epoch_end%d" % e,
                        "eval_begin", "eb0", "ee0", "eb1", "ee1", "eval_end"])
    assert rec.calls == ["train_begin"] + epoch(0) + epoch(1) + ["train_end"]
    logs = dict(rec.logs)
    assert set(logs["te2"]) >= {"loss", "acc", "step", "batch_size"} and logs["te2"]["batch_size"] == 8
    assert logs["eval_begin"] == {"steps": 2, "metrics": ["loss", "acc"]}
    assert rec.params["epochs"] == 2 and rec.params["steps"] == 3 and rec.params["metrics"] == ["loss", "acc"]

    rec2 = Recorder()
    model.evaluate(evald, verbose=0, callbacks=[rec2])
    assert rec2.calls == ["eval_begin", "eb0", "ee0", "eb1", "ee1", "eval_end"]
    rec3 = Recorder()
    model.predict(evald, verbose=0, callbacks=[rec3])
    assert rec3.calls == ["predict_begin", "pb0", "pe0", "pb1", "pe1", "predict_end"]


@needs_optim
def test_early_stopping_stops_and_saves_best(tmp_path):
    train, evald = ToyData(32), ToyData(16, 1)
    model = make_model()
    rec = Recorder()
    # mode='max' on a falling loss: the first evaluation is the best, the second does not improve.
    stop = EarlyStopping(monitor="loss", mode="max", patience=1, verbose=0)
    model.fit(train, evald, batch_size=16, epochs=10, verbose=0, callbacks=[stop, rec], save_dir=str(tmp_path))
    assert sum(c.startswith("epoch_end") for c in rec.calls) == 2
    assert model.stop_training
    assert os.path.exists(str(tmp_path / "best_model.pdparams"))

    # 'auto' picks max for accuracy names, min otherwise; baseline must be beaten.
    assert EarlyStopping(monitor="acc").monitor_op is np.greater
    assert EarlyStopping(monitor="loss").monitor_op is np.less
    stop2 = EarlyStopping(monitor="acc", patience=0, baseline=1.01, verbose=0, save_best_model=False)
    rec2 = Recorder()
    make_model().fit(train, evald, batch_size=16, epochs=5, verbose=0, callbacks=[stop2, rec2])
    assert sum(c.startswith("epoch_end") for c in rec2.calls) == 1


@needs_optim
def test_model_checkpoint_files(tmp_path):
    model = make_model(optimizer="Adam", lr=0.01)
    model.fit(ToyData(32), batch_size=16, epochs=3, verbose=0, save_dir=str(tmp_path), save_freq=2)
    names = sorted(os.listdir(str(tmp_path)))
    assert names == ["0.pdopt", "0.pdparams", "2.pdopt", "2.pdparams", "final.pdopt", "final.pdparams"]
    with pytest.raises(ValueError):
        ModelCheckpoint(save_freq=0)


@pytest.mark.skipif(not hasattr(oar.optimizer, "SGD") or not hasattr(oar.optimizer.lr, "StepDecay"),
                    reason="oar.optimizer.lr.StepDecay not available")
@pytest.mark.parametrize("by_epoch", [False, True])
def test_lr_scheduler_callback_steps(by_epoch):
    oar.seed(0)
    net = nn.Linear(4, 2)
    sched = oar.optimizer.lr.StepDecay(learning_rate=1.0, step_size=1, gamma=0.5)
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(learning_rate=sched, parameters=net.parameters()), ce_loss)
    cb = LRScheduler(by_step=not by_epoch, by_epoch=by_epoch)
    model.fit(ToyData(32), batch_size=8, epochs=2, verbose=0, callbacks=[cb])  # 4 steps per epoch
    n = 2 if by_epoch else 8
    assert sched.last_epoch == n
    assert abs(sched.get_lr() - 0.5 ** n) < 1e-12
    with pytest.raises(ValueError):
        LRScheduler(by_step=True, by_epoch=True)


@needs_optim
def test_reduce_lr_on_plateau():
    model = make_model(lr=0.5)
    cb = ReduceLROnPlateau(monitor="loss", mode="max", patience=1, factor=0.5, verbose=0)
    model.fit(ToyData(32), ToyData(16, 1), batch_size=16, epochs=3, verbose=0, callbacks=[cb])
    # Evaluations 2 and 3 do not beat the first (mode max on a falling loss): two reductions.
    assert abs(model._optimizer.get_lr() - 0.125) < 1e-9
    with pytest.raises(ValueError):
        ReduceLROnPlateau(factor=1.5)


@needs_optim
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_metrics_logger_file(tmp_path, fmt):
    path = str(tmp_path / ("log." + fmt))
    model = make_model()
    model.fit(ToyData(32), ToyData(16, 1), batch_size=16, epochs=2, verbose=0, callbacks=[MetricsLogger(path)])
    if fmt == "csv":
        with open(path) as f:
            rows = list(csv.DictReader(f))
        assert list(rows[0]) == ["mode", "epoch", "step", "loss", "acc"]
        assert [(r["mode"], r["epoch"]) for r in rows] == [("train", "0"), ("eval", "0"), ("train", "1"),
                                                          ("eval", "1")]
        values = [(float(r["loss"]), float(r["acc"])) for r in rows]
    else:
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        assert [(r["mode"], r["epoch"]) for r in rows] == [("train", 0), ("eval", 0), ("train", 1), ("eval", 1)]
        values = [(r["loss"], r["acc"]) for r in rows]
    assert all(l > 0 and 0 <= a <= 1 for l, a in values)
    # The logged evaluation equals what evaluate() reports for the final weights.
    final = model.evaluate(ToyData(16, 1), batch_size=16, verbose=0)
    assert abs(values[-1][1] - final["acc"]) < 1e-6
    with pytest.raises(ValueError):
        MetricsLogger(path, format="xml")


def test_metrics_logger_by_step(tmp_path):
    path = str(tmp_path / "steps.jsonl")
    logger = MetricsLogger(path, by_step=True)
    logger.set_params({"metrics": ["loss"]})
    logger.on_epoch_begin(0)
    logger.on_train_batch_end(0, {"loss": [np.float32(2.5)], "step": 0, "batch_size": 4})
    logger.on_epoch_end(0, {"loss": [1.5], "step": 1})
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    assert rows == [{"mode": "train_step", "epoch": 0, "step": 0, "loss": 2.5},
                    {"mode": "train", "epoch": 0, "step": 1, "loss": 1.5}]


@needs_optim
def test_progbar_logger_output(capsys):
    model = make_model()
    model.fit(ToyData(48), batch_size=8, epochs=1, verbose=2, log_freq=2)
    out = capsys.readouterr().out
    assert "Epoch 1/1" in out
    lines = [l for l in out.splitlines() if l.startswith("step")]
    # Steps 2 and 4 (log_freq) carry an ETA; the epoch end shows step 6/6.
    assert lines[0].startswith("step 2/6") and "ETA" in lines[0]
    assert lines[-1].startswith("step 6/6") and "loss:" in lines[-1] and "acc:" in lines[-1]
    assert "s/step" in lines[-1]
    model.evaluate(ToyData(16), batch_size=8, verbose=2)
    out = capsys.readouterr().out
    assert "Eval begin..." in out and "Eval samples: 16" in out


@needs_optim
def test_iterable_dataset_without_len(capsys):
    class Stream(oar.io.IterableDataset):
        def __iter__(self):
            data = ToyData(20)
            for i in range(len(data)):
                yield data[i]
    model = make_model()
    model.fit(Stream(), batch_size=8, epochs=2, verbose=2, log_freq=2)
    result = model.evaluate(Stream(), batch_size=8, verbose=2, log_freq=2)
    out = capsys.readouterr().out
    # Unknown step counts: "step   n" lines, and the last (3rd, partial) batch is still shown.
    assert "step   2 - loss" in out and "step   3 - loss" in out and "Eval samples: 20" in out
    assert set(result) == {"loss", "acc"}


def test_progress_bar_tty_redraws_one_line():
    class FakeTTY(io.StringIO):
        def isatty(self):
            return True
    f = FakeTTY()
    bar = ProgressBar(num=3, verbose=1, file=f)
    for i in range(1, 4):
        bar.update(i, [("loss", [0.5]), ("acc", 0.25)])
    text = f.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n") and text.count("\r") == 3
    assert "step 3/3 [" in text and "loss: 0.5000" in text and "ETA" in text
    plain = io.StringIO()
    bar = ProgressBar(num=3, verbose=1, file=plain)
    bar.update(1, [("loss", 1.0)])
    assert plain.getvalue().startswith("step 1/3 - loss: 1.0000 - ETA") and "\r" not in plain.getvalue()
    with pytest.raises(TypeError):
        ProgressBar(num=0)


# ---- summary and flops ----
def _lenet():
    from oar.vision.models import LeNet
    return LeNet()


def test_summary_lenet_totals(capsys):
    info = oar.summary(_lenet(), (1, 1, 28, 28))
    # conv 6*1*3*3+6 = 60, conv 16*6*5*5+16 = 2416, fc 400*120+120, 120*84+84, 84*10+10.
    assert info == {"total_params": 61610, "trainable_params": 61610}
    out = capsys.readouterr().out
    # rows are named after the layers' unique names (Conv2D-<n>, n counts every Conv2D made so far)
    assert "Layer (type)" in out and re.search(r"Conv2D-\d+", out) and "[1, 16, 5, 5]" in out
    assert "Total params: 61,610" in out and "Non-trainable params: 0" in out


def test_summary_non_trainable_and_several_inputs(capsys):
    class Two(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 4)   # 16
            self.b = nn.Linear(5, 4)   # 24
            self.bn = nn.BatchNorm1D(4)  # weight, bias (trainable) + _mean, _variance (stop_gradient params)
            self.b.weight.stop_gradient = True  # 20 non-trainable

        def forward(self, x, y):
            return self.bn(self.a(x) + self.b(y))
    net = Two()
    net.train()
    info = oar.summary(net, [(None, 3), (-1, 5)])
    assert info == {"total_params": 16 + 24 + 16, "trainable_params": 16 + 4 + 8}
    assert net.training  # restored
    assert "Non-trainable params: 28" in capsys.readouterr().out
    # Model.summary uses the same table; input= gives the tensors directly.
    assert oar.Model(_lenet()).summary((1, 1, 28, 28))["total_params"] == 61610
    assert oar.summary(nn.Linear(2, 3), input=oar.ones([4, 2]))["total_params"] == 9
    with pytest.raises(ValueError):
        oar.summary(net)
    with pytest.raises(ValueError):
        oar.summary(nn.Linear(2, 3), (None, None))
    with pytest.raises(ValueError):
        oar.Model(nn.Linear(2, 3)).summary()


def test_flops_hand_counted(capsys):
    net = nn.Sequential(nn.Conv2D(1, 2, 3, padding=1), nn.BatchNorm2D(2), nn.ReLU(), nn.AvgPool2D(2),
                        nn.Flatten(), nn.Linear(32, 5))
    total = oar.flops(net, [1, 1, 8, 8], print_detail=True)
    conv = 2 * 8 * 8 * (1 * 3 * 3 + 1)   # output elements x (in_ch/groups x kernel + bias)
    bn = 2 * (2 * 8 * 8)                 # 2 per input element
    pool = 2 * 4 * 4                     # one per output element
    linear = 32 * 5                      # in_features per output element
    assert total == conv + bn + pool + linear
    out = capsys.readouterr().out
    assert "Total Flops: {}".format(total) in out and "Layer Name" in out
    assert "Cannot find suitable count function" in out  # Flatten counts 0
    # Paddle's documented LeNet count.
    assert oar.flops(_lenet(), [1, 1, 28, 28]) == 347560


def test_flops_custom_ops_and_errors():
    class Scale(nn.Layer):
        def forward(self, x):
            return x * 2.0

    def count_scale(m, x, y):
        m.total_ops += int(np.prod(y.shape))
    net = nn.Sequential(nn.Linear(4, 6), Scale())
    assert oar.flops(net, [2, 4], custom_ops={Scale: count_scale}) == 2 * 6 * 4 + 2 * 6
    assert oar.flops(nn.Linear(4, 6), [3, 4]) == 3 * 6 * 4  # a model without sublayers counts itself
    assert "total_ops" not in net[1].__dict__
    with pytest.raises(ValueError):
        oar.flops(net, [2, -4])
    with pytest.raises(TypeError):
        oar.flops("net", [1])


# ---- errors ----
def test_errors():
    with pytest.raises(TypeError, match="Layer"):
        oar.Model(lambda x: x)
    model = oar.Model(nn.Linear(4, 2))
    with pytest.raises(TypeError, match="loss"):
        model.prepare(loss=3)
    with pytest.raises(TypeError, match="Metric"):
        model.prepare(metrics=[object()])
    with pytest.raises(ValueError, match="amp level"):
        model.prepare(amp_configs="O5")
    with pytest.raises(RuntimeError, match="prepare"):
        model.train_batch([np.zeros((1, 4), "float32")], [np.zeros((1, 1), "int64")])
    with pytest.raises(ValueError, match="train_data"):
        model.fit(None)
    with pytest.raises(ValueError):
        oar.hapi.callbacks.CallbackList([]).on_begin("bogus")
    # Without a loss, eval_batch gives the metrics only and evaluate reports them.
    model.prepare(metrics=oar.metric.Accuracy())
    data = ToyData(16)
    res = model.eval_batch([data.x], [data.y])
    assert len(res) == 1
    assert set(model.evaluate(data, batch_size=8, verbose=0)) == {"acc"}
