"""Callbacks for Model.fit/evaluate/predict (Paddle's paddle.callbacks).

A callback receives hook calls in this order during fit():
  on_train_begin, then per epoch: on_epoch_begin, (on_train_batch_begin, on_train_batch_end)*,
  on_epoch_end, and when evaluating: on_eval_begin, (on_eval_batch_begin, on_eval_batch_end)*,
  on_eval_end; finally on_train_end.
`logs` carry 'loss' (a list, one value per loss), the metric names, 'batch_size' and 'step'.
"""
import csv
import json
import numbers
import os
import time
import warnings

import numpy as np

from .progressbar import ProgressBar

__all__ = ["Callback", "ProgBarLogger", "ModelCheckpoint", "LRScheduler", "EarlyStopping", "ReduceLROnPlateau",
           "MetricsLogger"]


def _rank():
    from ..distributed import get_rank
    return get_rank()


def config_callbacks(callbacks=None, model=None, batch_size=None, epochs=None, steps=None, log_freq=2, verbose=2,
                     save_freq=1, save_dir=None, metrics=None, mode="train"):
    """The CallbackList Model uses: the user's callbacks plus a ProgBarLogger (when verbose), a
    ModelCheckpoint and an LRScheduler unless the user gave their own."""
    cbks = callbacks or []
    cbks = list(cbks) if isinstance(cbks, (list, tuple)) else [cbks]
    for c in cbks:
        if not isinstance(c, Callback):
            raise TypeError("callbacks must be oar.callbacks.Callback objects, got {}".format(type(c).__name__))
    if verbose and not any(isinstance(c, ProgBarLogger) for c in cbks):
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(c, ModelCheckpoint) for c in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    for c in cbks:
        if isinstance(c, EarlyStopping):
            c.save_dir = save_dir
    if not any(isinstance(c, LRScheduler) for c in cbks):
        cbks = cbks + [LRScheduler()]
    lst = CallbackList(cbks)
    lst.set_model(model)
    lst.set_params({"batch_size": batch_size, "epochs": epochs, "steps": steps, "verbose": verbose,
                    "metrics": (metrics or []) if mode != "test" else []})
    return lst


class CallbackList:
    """Dispatches each hook to every callback in order."""

    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])
        self.params = {}
        self.model = None

    def append(self, callback):
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def set_params(self, params):
        self.params = params
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model):
        self.model = model
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name, *args):
        for c in self.callbacks:
            getattr(c, name)(*args)

    @staticmethod
    def _check_mode(mode):
        if mode not in ("train", "eval", "predict"):
            raise ValueError("callback mode must be 'train', 'eval' or 'predict', got {!r}".format(mode))

    def on_begin(self, mode, logs=None):
        self._check_mode(mode)
        self._call("on_{}_begin".format(mode), logs)

    def on_end(self, mode, logs=None):
        self._check_mode(mode)
        self._call("on_{}_end".format(mode), logs)

    def on_epoch_begin(self, epoch=None, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch=None, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, mode, step=None, logs=None):
        self._check_mode(mode)
        self._call("on_{}_batch_begin".format(mode), step, logs)

    def on_batch_end(self, mode, step=None, logs=None):
        self._check_mode(mode)
        self._call("on_{}_batch_end".format(mode), step, logs)


class Callback:
    """Base class: override the hooks you need. `self.model` is the oar.Model, `self.params` a dict with
    'batch_size', 'epochs', 'steps', 'verbose' and 'metrics' (the names logged: 'loss' and metric names)."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_train_begin(self, logs=None):
        """Start of fit()."""

    def on_train_end(self, logs=None):
        """End of fit(); logs are the last epoch's."""

    def on_eval_begin(self, logs=None):
        """Start of evaluation; logs has 'steps' and 'metrics'."""

    def on_eval_end(self, logs=None):
        """End of evaluation; logs has the evaluation's loss and metrics."""

    def on_predict_begin(self, logs=None):
        """Start of predict(); logs has 'steps'."""

    def on_predict_end(self, logs=None):
        """End of predict()."""

    def on_epoch_begin(self, epoch, logs=None):
        """Start of training epoch `epoch` (0-based)."""

    def on_epoch_end(self, epoch, logs=None):
        """End of training epoch `epoch`; logs has the epoch's loss (last batch) and metrics (accumulated)."""

    def on_train_batch_begin(self, step, logs=None):
        """Before training batch `step`."""

    def on_train_batch_end(self, step, logs=None):
        """After training batch `step`; logs has 'loss', metrics, 'step' and 'batch_size'."""

    def on_eval_batch_begin(self, step, logs=None):
        """Before evaluation batch `step`."""

    def on_eval_batch_end(self, step, logs=None):
        """After evaluation batch `step`."""

    def on_predict_batch_begin(self, step, logs=None):
        """Before prediction batch `step`."""

    def on_predict_batch_end(self, step, logs=None):
        """After prediction batch `step`."""


class ProgBarLogger(Callback):
    """Shows a progress bar: step i/N, loss, metrics, ETA and time per step.

    log_freq: update every log_freq steps. verbose: 0 silent, 1 one line redrawn in place on a terminal,
    2 one line per update, 3 like 2 plus reader/batch cost and samples/s.
    """

    def __init__(self, log_freq=1, verbose=2):
        super().__init__()
        self.epochs = None
        self.steps = None
        self.verbose = verbose
        self.log_freq = max(1, int(log_freq))
        self.train_metrics = []

    def _is_print(self):
        # Under a job only rank 0 draws the progress bar (as Paddle).
        return bool(self.verbose) and _rank() == 0

    @staticmethod
    def _new_timer():
        return {"data_time": 0.0, "batch_time": 0.0, "count": 0, "samples": 0, "batch_start_time": time.time()}

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        self.train_metrics = self.params.get("metrics") or []
        self._train_timer = self._new_timer()
        if self._is_print():
            print("The loss value printed in the log is the current step, and the metric is the average value "
                  "of previous steps.")

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params.get("steps")
        self.epoch = epoch
        self.train_step = 0
        if self.epochs and self._is_print():
            print("Epoch {}/{}".format(epoch + 1, self.epochs))
        self.train_progbar = ProgressBar(num=self.steps, verbose=self.verbose)
        if not hasattr(self, "_train_timer"):
            self._train_timer = self._new_timer()
        self._train_timer["batch_start_time"] = time.time()

    def _updates(self, logs, mode):
        logs = logs or {}
        metrics = getattr(self, mode + "_metrics")
        progbar = getattr(self, mode + "_progbar")
        step = getattr(self, mode + "_step")
        values = [(k, logs[k]) for k in metrics if k in logs]
        timer = getattr(self, "_{}_timer".format(mode), None)
        if self.verbose == 3 and timer is not None:
            cnt = timer["count"] or 1
            total = timer["data_time"] + timer["batch_time"]
            values.append(("avg_reader_cost", "%.5f sec" % (timer["data_time"] / cnt)))
            values.append(("avg_batch_cost", "%.5f sec" % (timer["batch_time"] / cnt)))
            values.append(("ips", "%.5f samples/sec" % (timer["samples"] / total if total > 0 else 0.0)))
            timer.update(count=0, samples=0, data_time=0.0, batch_time=0.0)
        progbar.update(step, values)

    def _batch_begin(self, timer):
        timer["batch_data_end_time"] = time.time()
        timer["data_time"] += timer["batch_data_end_time"] - timer["batch_start_time"]

    def _batch_end(self, timer, logs):
        timer["batch_time"] += time.time() - timer["batch_data_end_time"]
        timer["count"] += 1
        timer["samples"] += (logs or {}).get("batch_size", 1)

    def on_train_batch_begin(self, step, logs=None):
        self._batch_begin(self._train_timer)

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        self._batch_end(self._train_timer, logs)
        # The last step of the epoch is shown by on_epoch_end.
        if self._is_print() and self.train_step % self.log_freq == 0:
            if self.steps is None or self.train_step < self.steps:
                self._updates(logs, "train")
        self._train_timer["batch_start_time"] = time.time()

    def on_epoch_end(self, epoch, logs=None):
        # Also with an unknown number of steps (Paddle prints nothing then), unless just shown.
        if self._is_print() and (self.steps is not None or self.train_step % self.log_freq != 0):
            self._updates(logs, "train")

    def on_eval_begin(self, logs=None):
        logs = logs or {}
        self.eval_steps = logs.get("steps")
        self.eval_metrics = logs.get("metrics", [])
        self.eval_step = 0
        self.evaled_samples = 0
        self._eval_timer = self._new_timer()
        self.eval_progbar = ProgressBar(num=self.eval_steps, verbose=self.verbose)
        if self._is_print():
            print("Eval begin...")

    def on_eval_batch_begin(self, step, logs=None):
        self._batch_begin(self._eval_timer)

    def on_eval_batch_end(self, step, logs=None):
        self.eval_step += 1
        self.evaled_samples += (logs or {}).get("batch_size", 1)
        self._batch_end(self._eval_timer, logs)
        if self._is_print() and self.eval_step % self.log_freq == 0:
            if self.eval_steps is None or self.eval_step < self.eval_steps:
                self._updates(logs, "eval")
        self._eval_timer["batch_start_time"] = time.time()

    def on_eval_end(self, logs=None):
        if self._is_print():
            if self.eval_steps is not None or self.eval_step % self.log_freq != 0:
                self._updates(logs, "eval")
            print("Eval samples: {}".format(self.evaled_samples))

    def on_predict_begin(self, logs=None):
        logs = logs or {}
        self.test_steps = logs.get("steps")
        self.test_metrics = logs.get("metrics", [])
        self.test_step = 0
        self.tested_samples = 0
        self._test_timer = self._new_timer()
        self.test_progbar = ProgressBar(num=self.test_steps, verbose=self.verbose)
        if self._is_print():
            print("Predict begin...")

    def on_predict_batch_begin(self, step, logs=None):
        self._batch_begin(self._test_timer)

    def on_predict_batch_end(self, step, logs=None):
        self.test_step += 1
        self.tested_samples += (logs or {}).get("batch_size", 1)
        self._batch_end(self._test_timer, logs)
        if self._is_print() and self.test_step % self.log_freq == 0:
            if self.test_steps is None or self.test_step < self.test_steps:
                self._updates(logs, "test")
        self._test_timer["batch_start_time"] = time.time()

    def on_predict_end(self, logs=None):
        if self._is_print():
            self._updates(logs, "test")
            print("Predict samples: {}".format(self.tested_samples))


class ModelCheckpoint(Callback):
    """Saves the model (Model.save: <save_dir>/<epoch>.pdparams/.pdopt) every save_freq epochs and
    <save_dir>/final at the end of training. Does nothing when save_dir is None."""

    def __init__(self, save_freq=1, save_dir=None):
        super().__init__()
        if not isinstance(save_freq, int) or save_freq < 1:
            raise ValueError("ModelCheckpoint: save_freq must be an int >= 1, got {!r}".format(save_freq))
        self.save_freq = save_freq
        self.save_dir = save_dir
        self.epoch = 0

    def _is_save(self):
        # Under a job only rank 0 writes checkpoints: the replicas are identical.
        return self.model is not None and bool(self.save_dir) and _rank() == 0

    def on_epoch_begin(self, epoch=None, logs=None):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self._is_save() and self.epoch % self.save_freq == 0:
            path = os.path.join(self.save_dir, str(epoch))
            print("save checkpoint at {}".format(os.path.abspath(path)))
            self.model.save(path)

    def on_train_end(self, logs=None):
        if self._is_save():
            path = os.path.join(self.save_dir, "final")
            print("save checkpoint at {}".format(os.path.abspath(path)))
            self.model.save(path)


def _scheduler_of(model):
    """The optimizer's learning-rate scheduler, or None when it uses a constant rate."""
    opt = getattr(model, "_optimizer", None) if model is not None else None
    lr = getattr(opt, "_learning_rate", None)
    from ..optimizer import lr as lr_mod
    base = getattr(lr_mod, "LRScheduler", None)
    if base is not None and isinstance(lr, base):
        return lr
    return None


class LRScheduler(Callback):
    """Steps the optimizer's learning-rate scheduler after every training batch (by_step=True, the
    default) or after every epoch (by_epoch=True); the two are mutually exclusive."""

    def __init__(self, by_step=True, by_epoch=False):
        super().__init__()
        if by_step and by_epoch:
            raise ValueError("LRScheduler: by_step and by_epoch are mutually exclusive")
        self.by_step = by_step
        self.by_epoch = by_epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            sched = _scheduler_of(self.model)
            if sched is not None:
                sched.step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            sched = _scheduler_of(self.model)
            if sched is not None:
                sched.step()


def _scalar_of(value):
    """A monitored log value as a number (first element of a list), or None."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if isinstance(value, numbers.Number):
        return float(value)
    return None


class EarlyStopping(Callback):
    """Stops fit() when the monitored evaluation value stops improving.

    monitor: 'loss' or a metric name (evaluated on eval_data after each evaluation). mode: 'min', 'max' or
    'auto' (max when the name contains 'acc'). patience: evaluations without improvement before stopping.
    min_delta: smallest change that counts as improvement. baseline: the value to beat first.
    save_best_model: save the best model to <save_dir>/best_model (save_dir comes from fit()).
    """

    def __init__(self, monitor="loss", mode="auto", patience=0, verbose=1, min_delta=0, baseline=None,
                 save_best_model=True):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.wait_epoch = 0
        self.best_weights = None
        self.stopped_epoch = 0
        self.save_best_model = save_best_model
        self.save_dir = None  # set by config_callbacks from fit(save_dir=...)
        if mode not in ("auto", "min", "max"):
            warnings.warn("EarlyStopping mode {} is unknown, fallback to auto mode.".format(mode))
            mode = "auto"
        if mode == "max" or (mode == "auto" and "acc" in self.monitor):
            self.monitor_op = np.greater
        else:
            self.monitor_op = np.less
            self.min_delta *= -1
        self.best_value = np.inf if self.monitor_op is np.less else -np.inf

    def on_train_begin(self, logs=None):
        self.wait_epoch = 0
        self.stopped_epoch = 0
        if self.baseline is not None:
            self.best_value = self.baseline
        else:
            self.best_value = np.inf if self.monitor_op is np.less else -np.inf
            self.best_weights = None

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn("Monitor of EarlyStopping should be loss or metric name.")
            return
        current = _scalar_of(logs[self.monitor])
        if current is None:
            return
        if self.monitor_op(current - self.min_delta, self.best_value):
            self.best_value = current
            self.wait_epoch = 0
            if self.save_best_model and self.save_dir is not None:
                self.model.save(os.path.join(self.save_dir, "best_model"))
        else:
            self.wait_epoch += 1
        if self.wait_epoch >= self.patience:
            self.model.stop_training = True
            if self.verbose > 0:
                print("Epoch {}: Early stopping.".format(self.stopped_epoch + 1))
                if self.save_best_model and self.save_dir is not None:
                    print("Best checkpoint has been saved at {}".format(
                        os.path.abspath(os.path.join(self.save_dir, "best_model"))))
        self.stopped_epoch += 1


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` when the monitored evaluation value has not improved for
    `patience` evaluations (after `cooldown` evaluations of rest), never below min_lr. Works when the
    optimizer's learning rate is a float (not a scheduler)."""

    def __init__(self, monitor="loss", factor=0.1, patience=10, verbose=1, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0.")
        self.monitor = monitor
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.mode = mode
        self.epoch = 0
        self._reset()

    def _reset(self):
        if self.mode not in ("auto", "min", "max"):
            warnings.warn("Learning rate reduction mode {} is unknown, fallback to auto mode.".format(self.mode))
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn("Monitor of ReduceLROnPlateau should be loss or metric name.")
            return
        opt = getattr(self.model, "_optimizer", None)
        lr = getattr(opt, "_learning_rate", None)
        if not isinstance(lr, (float, int)) or isinstance(lr, bool):
            warnings.warn("ReduceLROnPlateau: expected the optimizer's learning rate to be a float, got {}.".format(
                type(lr).__name__))
            return
        current = _scalar_of(logs[self.monitor])
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(opt.get_lr()) if hasattr(opt, "get_lr") else float(lr)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    if hasattr(opt, "set_lr"):
                        opt.set_lr(new_lr)
                    else:
                        opt._learning_rate = new_lr
                    if self.verbose > 0:
                        print("\nEpoch {}: ReduceLROnPlateau reducing learning rate to {}.".format(
                            self.epoch + 1, new_lr))
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
        self.epoch += 1


class MetricsLogger(Callback):
    """Writes the loss and metrics to a file: one row per training epoch ('train') and per evaluation
    ('eval'), and with by_step=True also one per training step ('train_step').

    format: 'csv' (a header row: mode,epoch,step,<loss and metric names>) or 'json' (JSON lines, one
    object per row); None infers it from the file extension (.json/.jsonl -> json, else csv).
    The file is truncated at the first write of this logger and appended to afterwards.
    """

    def __init__(self, path, format=None, by_step=False):
        super().__init__()
        if format is None:
            format = "json" if str(path).lower().endswith((".json", ".jsonl")) else "csv"
        if format not in ("csv", "json"):
            raise ValueError("MetricsLogger: format must be 'csv' or 'json', got {!r}".format(format))
        self.path = str(path)
        self.format = format
        self.by_step = by_step
        self._columns = None
        self._started = False
        self._epoch = None

    def _names(self, logs):
        names = list(self.params.get("metrics") or [])
        return names or [k for k in (logs or {}) if k not in ("step", "batch_size", "steps", "metrics")]

    @staticmethod
    def _plain(v):
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, (list, tuple)):
            v = [MetricsLogger._plain(x) for x in v]
            return v[0] if len(v) == 1 else v
        if isinstance(v, np.generic):
            return v.item()
        return v

    def _write(self, mode, logs, step=None):
        logs = logs or {}
        names = self._names(logs)
        row = {"mode": mode, "epoch": self._epoch, "step": step}
        for k in names:
            row[k] = self._plain(logs.get(k))
        d = os.path.dirname(self.path)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(self.path, "a" if self._started else "w", newline="") as f:
            if self.format == "json":
                f.write(json.dumps(row) + "\n")
            else:
                if self._columns is None:
                    self._columns = list(row)
                    csv.writer(f).writerow(self._columns)
                values = []
                for k in self._columns:
                    v = row.get(k)
                    if isinstance(v, list):
                        v = ";".join(str(x) for x in v)
                    values.append("" if v is None else v)
                csv.writer(f).writerow(values)
        self._started = True

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            self._write("train_step", logs, step)

    def on_epoch_end(self, epoch, logs=None):
        self._write("train", logs, (logs or {}).get("step"))

    def on_eval_end(self, logs=None):
        self._write("eval", logs, (logs or {}).get("step"))
