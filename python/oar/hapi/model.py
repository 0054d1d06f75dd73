"""oar.Model: Paddle's high-level training API (paddle.Model), eager (dygraph) only.

    model = oar.Model(net)
    model.prepare(optimizer, loss, metrics)
    model.fit(train_dataset, eval_dataset, batch_size=64, epochs=2)
    model.evaluate(eval_dataset)        # {'loss': [..], 'acc': ..}
    model.predict(test_dataset)         # a list per output of per-batch numpy arrays
    model.save('ckpt/final')            # ckpt/final.pdparams (+ .pdopt)
"""
import inspect
import os
import warnings

import numpy as np

from .._C import Tensor
from .._C import bfloat16 as _bfloat16
from ..autograd import no_grad
from .callbacks import EarlyStopping, config_callbacks
from .model_summary import summary as _summary

__all__ = ["Model"]


def to_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def to_numpy(value):
    if isinstance(value, Tensor):
        if value.dtype == _bfloat16:  # an AMP output: numpy has no bfloat16 (Paddle would give its bits)
            value = value.astype("float32")
        return value._numpy_view()  # a fresh output, only read: no copy
    return np.asarray(value)


def _flatten(data):
    """Nested lists/tuples of batch fields -> one flat list (Paddle's paddle.utils.flatten)."""
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, (list, tuple)):
        out = []
        for d in data:
            out.extend(_flatten(d))
        return out
    return [data]


def _as_tensor(x):
    if isinstance(x, Tensor):
        return x
    from ..tensor.creation import to_tensor
    return to_tensor(x)


def _add_n(losses):
    total = losses[0]
    for l in losses[1:]:
        total = total + l
    return total


class _Input:
    """A placeholder input spec (shape, dtype, name) used when Model infers inputs from forward()."""

    def __init__(self, shape=None, dtype="float32", name=None):
        self.shape = shape
        self.dtype = dtype
        self.name = name

    def __repr__(self):
        return "InputSpec(shape={}, dtype={}, name={})".format(self.shape, self.dtype, self.name)


def _forward_arg_names(forward):
    """Names of forward's required positional parameters (those without defaults)."""
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        return ["input"]
    names = []
    var_positional = False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            var_positional = True
    if not names and var_positional:
        names = ["input"]  # forward(*inputs): one input, the rest of each batch are labels
    return names


class Model:
    """Wraps a Layer with training, evaluation, prediction, saving and loading.

    inputs/labels: InputSpec-like objects (with .shape, .dtype, .name), lists of them, or None. They say
    how many fields of each batch are inputs (the rest are labels); None infers the inputs from the
    network's forward() signature (its required positional parameters). Eager mode only.
    """

    def __init__(self, network, inputs=None, labels=None):
        from ..nn import Layer
        if not isinstance(network, Layer):
            raise TypeError("Model: network must be an oar.nn.Layer, got {}".format(type(network).__name__))
        self.mode = "train"
        self.network = network
        self._loss = None
        self._loss_weights = None
        self._optimizer = None
        self._metrics = []
        self._input_info = None
        self._is_shape_inferred = False
        self._test_dataloader = None
        self._accumulate = 1
        self._place = None
        self._ddp = None  # the DataParallel wrapper under a job (prepare)
        self._eval_total = None  # the evaluated dataset's size while a job's evaluation loop runs
        self.stop_training = False
        self._inputs = self._verify_spec(inputs, is_input=True)
        self._labels = self._verify_spec(labels)

    def _verify_spec(self, specs, is_input=False):
        if specs is None:
            if is_input:
                return [_Input(shape=[None], name=n) for n in _forward_arg_names(self.network.forward)]
            return []
        if isinstance(specs, dict):
            if not is_input:
                raise TypeError("Model: labels must be an InputSpec or a list of them, not a dict")
            names = _forward_arg_names(self.network.forward)
            missing = [n for n in names if n not in specs]
            if missing:
                raise ValueError("Model: inputs dict lacks forward() arguments {}".format(missing))
            return [specs[n] for n in names]
        out = to_list(specs)
        for i, spec in enumerate(out):
            if not hasattr(spec, "shape"):
                raise TypeError("Model: {}[{}] must be an InputSpec-like object with .shape, got {}".format(
                    "inputs" if is_input else "labels", i, type(spec).__name__))
        return out

    # ---- configuration ----
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None):
        """Sets the optimizer (needed for training), the loss (a Layer or callable taking the network's
        outputs then the labels) and metrics (oar.metric.Metric objects)."""
        from ..nn import Layer
        from .. import _C
        self._place = _C.get_device() if hasattr(_C, "get_device") else None
        if optimizer is not None and not hasattr(optimizer, "step"):
            raise TypeError("prepare: optimizer must be an oar.optimizer.Optimizer, got {}".format(
                type(optimizer).__name__))
        self._optimizer = optimizer
        if loss is not None and not isinstance(loss, Layer) and not callable(loss):
            raise TypeError("'loss' must be sub classes of `oar.nn.Layer` or any callable function.")
        self._loss = loss
        metrics = to_list(metrics)
        from .. import metric as metric_mod
        base = getattr(metric_mod, "Metric", None)
        for m in metrics:
            ok = isinstance(m, base) if base is not None else all(
                hasattr(m, a) for a in ("compute", "update", "accumulate", "reset", "name"))
            if not ok:
                raise TypeError("prepare: {} is not a subclass of oar.metric.Metric".format(type(m).__name__))
        self._metrics = metrics
        self._prepare_amp(amp_configs)
        self._prepare_distributed()

    def _prepare_distributed(self):
        """Under a job (world size > 1, e.g. started by oar.distributed.launch or spawn) training runs
        data-parallel, as Paddle's Model: the default group is made if needed and the network wrapped
        in DataParallel (rank 0's parameters are broadcast now)."""
        from .. import distributed as dist
        if dist.get_world_size() <= 1 or self._ddp is not None:
            return
        if not dist.is_initialized():
            dist.init_parallel_env()
        self._ddp = dist.DataParallel(self.network)

    _AMP_SCALER_KEYS = ("init_loss_scaling", "incr_ratio", "decr_ratio", "incr_every_n_steps",
                        "decr_every_n_nan_or_inf", "use_dynamic_loss_scaling")

    def _prepare_amp(self, amp_configs):
        """amp_configs as Paddle's: None, a level ('O0', 'O1', 'O2') or a dict with 'level' plus GradScaler's
        arguments, custom_white_list / custom_black_list and 'dtype' (default bfloat16 on cpu, where
        float16 has no fast kernels, float16 elsewhere). O2 decorates the network and the optimizer
        (low-precision parameters, float32 master weights); training steps run under auto_cast with a
        GradScaler (docs/amp.md)."""
        level, cfg = "O0", {}
        if isinstance(amp_configs, str):
            level = amp_configs
        elif isinstance(amp_configs, dict):
            cfg = dict(amp_configs)
            level = cfg.pop("level", "O1")
        elif amp_configs is not None:
            raise TypeError("prepare: amp_configs must be None, a level string or a dict, got {}".format(
                type(amp_configs).__name__))
        if level not in ("O0", "O1", "O2"):
            raise ValueError("prepare: amp level must be 'O0', 'O1' or 'O2', got {!r}".format(level))
        cfg.pop("use_pure_fp16", None)  # Paddle 2.x's older spellings of O2 and of the fp16 guard
        cfg.pop("use_fp16_guard", None)
        from .. import _C, amp
        dtype = cfg.pop("dtype", "bfloat16" if _C.get_device().startswith("cpu") else "float16")
        guard = {"level": level, "dtype": dtype, "custom_white_list": cfg.pop("custom_white_list", None),
                 "custom_black_list": cfg.pop("custom_black_list", None)}
        scaler_args = {k: cfg.pop(k) for k in self._AMP_SCALER_KEYS if k in cfg}
        if cfg:
            raise ValueError("prepare: unknown amp_configs keys {}; expected level, dtype, custom_white_list, "
                             "custom_black_list, {}".format(sorted(cfg), ", ".join(self._AMP_SCALER_KEYS)))
        self._amp_level = level
        self._amp_guard_args = None
        self._scaler = None
        if level == "O0":
            return
        if level == "O2":
            amp.decorate(self.network, self._optimizer, level="O2", dtype=dtype)
        self._amp_guard_args = guard
        self._scaler = amp.GradScaler(**scaler_args)

    def _amp_guard(self):
        import contextlib
        if getattr(self, "_amp_guard_args", None) is None:
            return contextlib.nullcontext()
        from .. import amp
        return amp.auto_cast(**self._amp_guard_args)

    def parameters(self, *args, **kwargs):
        """The network's parameters."""
        return self.network.parameters(*args, **kwargs)

    # ---- one batch ----
    @staticmethod
    def _split_inputs_labels(inputs, labels):
        inputs = [_as_tensor(x) for x in to_list(inputs)]
        labels = [_as_tensor(y) for y in to_list(labels)]
        return inputs, labels

    def _update_metrics(self, outputs, labels):
        results = []
        if self._metrics and getattr(self, "_amp_guard_args", None) is not None:  # metrics see float32 outputs
            outputs = [o.astype("float32") if isinstance(o, Tensor) and o.dtype == _bfloat16 else o
                       for o in to_list(outputs)]
        for metric in self._metrics:
            outs = metric.compute(*(to_list(outputs) + labels))
            results.append(metric.update(*[to_numpy(o) for o in to_list(outs)]))
        return results

    def train_batch(self, inputs, labels=None, update=True):
        """One training step on one batch: forward, loss, backward, and (when update) an optimizer step
        and cleared gradients. Returns the losses as numpy arrays (a list), plus the metrics' update
        results when metrics are set: (losses, metrics)."""
        if self._optimizer is None:
            raise RuntimeError("model not ready, please call `model.prepare()` first (with an optimizer)")
        if self._loss is None:
            raise RuntimeError("train_batch needs a loss: call `model.prepare(optimizer, loss)`")
        self.network.train()
        self.mode = "train"
        inputs, labels = self._split_inputs_labels(inputs, labels)
        self._input_info = ([list(x.shape) for x in inputs], [str(x.dtype) for x in inputs])
        import contextlib
        net = self._ddp if self._ddp is not None else self.network
        # Accumulating batches (update False) only add up locally; the update's backward reduces the sum.
        sync = contextlib.nullcontext() if update or self._ddp is None else self._ddp.no_sync()
        scaler = getattr(self, "_scaler", None)  # amp_configs: forward under auto_cast, a scaled backward
        with sync:
            with self._amp_guard():
                outputs = net(*inputs)
                losses = to_list(self._loss(*(to_list(outputs) + labels)))
            final_loss = _add_n(losses)
            scaled = scaler.scale(final_loss) if scaler is not None else final_loss
            scaled.backward()
        if update:
            if scaler is not None:
                scaler.minimize(self._optimizer, scaled)
            else:
                self._optimizer.step()
            self.network.clear_gradients()
        with no_grad():
            metrics = self._update_metrics(outputs, labels)
        loss_values = [to_numpy(l) for l in losses]
        return (loss_values, metrics) if metrics else loss_values

    def _gather_eval(self, outputs, labels):
        """Every rank's outputs and labels of this batch, in rank order, which is the dataset's order under
        DistributedBatchSampler; the samples the sampler repeated to even out the ranks (the end of the
        last batch) are dropped, so metrics count each sample of the dataset once."""
        from .. import concat
        from .. import distributed as dist

        def gather(t):
            parts = []
            dist.all_gather(parts, t if t.is_contiguous() else t.contiguous())
            return concat(parts, axis=0)
        outputs = [gather(o) for o in outputs]
        labels = [gather(y) for y in labels]
        total = self._eval_total
        if outputs:
            n = outputs[0].shape[0]
            keep = max(0, min(n, total - self._eval_seen))
            self._eval_seen += n
            if keep < n:
                outputs = [o[:keep] for o in outputs]
                labels = [y[:keep] for y in labels]
        return outputs, labels

    @no_grad()
    def eval_batch(self, inputs, labels=None):
        """Forward and loss on one batch without gradients. Returns losses (list of numpy arrays), the
        metrics' update results, or (losses, metrics) when both are set."""
        self.network.eval()
        self.mode = "eval"
        inputs, labels = self._split_inputs_labels(inputs, labels)
        self._input_info = ([list(x.shape) for x in inputs], [str(x.dtype) for x in inputs])
        with self._amp_guard():
            outputs = self.network(*inputs)
            losses = to_list(self._loss(*(to_list(outputs) + labels))) if self._loss else []
        if self._ddp is not None and self._eval_total is not None:
            # Metrics over the whole job's batch (as Paddle); the losses stay this rank's.
            outputs, labels = self._gather_eval(to_list(outputs), labels)
        metrics = self._update_metrics(outputs, labels)
        loss_values = [to_numpy(l) for l in losses]
        if self._loss and metrics:
            return loss_values, metrics
        if self._loss:
            return loss_values
        return metrics

    @no_grad()
    def predict_batch(self, inputs):
        """The network's outputs on one batch, as a list of numpy arrays."""
        self.network.eval()
        self.mode = "test"
        inputs = [_as_tensor(x) for x in to_list(inputs)]
        self._input_info = ([list(x.shape) for x in inputs], [str(x.dtype) for x in inputs])
        with self._amp_guard():
            outputs = self.network(*inputs)
        return [to_numpy(o) for o in to_list(outputs)]

    # ---- save / load ----
    def save(self, path, training=True):
        """training=True: the network's state dict to path.pdparams and the optimizer's state to
        path.pdopt (when it has any). training=False: an inference model written by oar.jit.save
        (path.pdmodel, path.pdiparams, path.pdiparams.info) from the Model's `inputs` InputSpecs, with the
        network in eval mode."""
        from ..framework import io as fio
        from ..distributed import get_rank
        if not isinstance(path, str) or os.path.basename(path) == "":
            raise ValueError("Model.save: path must be 'dirname/file_prefix' or 'file_prefix', got {!r}".format(path))
        if get_rank() != 0:
            return  # under a job rank 0 saves (the replicas are identical), as Paddle
        dirname = os.path.dirname(path)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        if not training:
            self._save_inference(path)
            return
        fio.save(self.network.state_dict(), path + ".pdparams")
        if self._optimizer is not None and hasattr(self._optimizer, "state_dict"):
            opt_state = self._optimizer.state_dict()
            if opt_state:
                fio.save(opt_state, path + ".pdopt")

    def _save_inference(self, path):
        from .. import jit
        from ..static.input import InputSpec
        specs = []
        for i, s in enumerate(self._inputs):
            if isinstance(s, InputSpec):
                specs.append(s)
            elif isinstance(s, _Input) and (s.shape is None or s.shape == [None]):
                raise ValueError("Model.save(training=False) needs the input shapes: create the Model with "
                                 "inputs=[InputSpec(shape, dtype, name), ...]")
            else:
                specs.append(InputSpec(s.shape, getattr(s, "dtype", "float32"), getattr(s, "name", None)))
        was_training = self.network.training
        self.network.eval()
        try:
            jit.save(self.network, path, input_spec=specs)
        finally:
            if was_training:
                self.network.train()

    def load(self, path, skip_mismatch=False, reset_optimizer=False):
        """Loads path.pdparams into the network (by structured name) and, unless reset_optimizer or the
        file is missing, path.pdopt into the optimizer. A missing or mis-shaped parameter raises
        ValueError, or is skipped with a warning when skip_mismatch (which also resets the optimizer)."""
        from ..framework import io as fio
        base, ext = os.path.splitext(path)
        if ext in (".pdparams", ".pdopt", ".pdmodel"):
            path = base  # other suffixes (a prefix such as 'ckpt/v1.2') are kept whole
        params_file = path + ".pdparams"
        if not os.path.exists(params_file):
            raise ValueError("Model.load: {} does not exist".format(params_file))
        param_state = fio.load(params_file)
        if not isinstance(param_state, dict) or not param_state:
            raise ValueError("Model.load: {} holds no parameters".format(params_file))

        matched = []
        for key, param in self.network.state_dict().items():
            state = param_state.get(key)
            err = None
            if state is None:
                err = "{} is not found in the providing file.".format(key)
            elif list(np.shape(state) if not isinstance(state, Tensor) else state.shape) != list(param.shape):
                err = "{} receives a shape {}, but the expected shape is {}.".format(
                    key, list(np.shape(state) if not isinstance(state, Tensor) else state.shape), list(param.shape))
            if err is not None:
                if not skip_mismatch:
                    raise ValueError(err)
                warnings.warn("Skip loading for {}. {}".format(key, err))
                reset_optimizer = True
                continue
            matched.append((param, state))
        with no_grad():
            for param, state in matched:
                value = state if isinstance(state, Tensor) else _as_tensor(np.asarray(state))
                if value.dtype != param.dtype:
                    value = value.astype(param.dtype)
                param.set_value(value)

        opt_file = path + ".pdopt"
        if self._optimizer is not None and not reset_optimizer and os.path.exists(opt_file):
            self._optimizer.set_state_dict(fio.load(opt_file))

    # ---- loops ----
    def _make_loader(self, data, batch_size, shuffle, drop_last, num_workers):
        from ..io import Dataset, DataLoader
        if isinstance(data, Dataset):
            from ..io import IterableDataset
            if isinstance(data, IterableDataset):
                return DataLoader(data, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers,
                                  return_list=True)
            if self._ddp is not None:  # each rank its share of the batches (as Paddle's Model)
                from ..io import DistributedBatchSampler
                sampler = DistributedBatchSampler(data, batch_size, shuffle=shuffle, drop_last=drop_last)
                return DataLoader(data, batch_sampler=sampler, num_workers=num_workers, return_list=True)
            return DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                              num_workers=num_workers, return_list=True)
        return data

    @staticmethod
    def _len_data_loader(loader):
        try:
            return len(loader)
        except Exception:
            return None

    def _metrics_name(self):
        names = ["loss"] if self._loss else []
        for m in self._metrics:
            names.extend(to_list(m.name()))
        return names

    def _reset_metrics(self):
        for m in self._metrics:
            m.reset()

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs=1, eval_freq=1, log_freq=10, save_dir=None,
            save_freq=1, verbose=2, drop_last=False, shuffle=True, num_workers=0, callbacks=None,
            accumulate_grad_batches=1, num_iters=None):
        """Trains for `epochs` epochs over train_data (a Dataset, batched by an oar.io.DataLoader, or any
        iterable of batches such as a DataLoader), evaluating on eval_data every eval_freq epochs.
        batch_size may be [train, eval]. num_iters, when set, stops after that many training steps.
        save_dir: checkpoints every save_freq epochs (ModelCheckpoint). accumulate_grad_batches: apply
        the optimizer every that many batches (gradients add up in between)."""
        if train_data is None:
            raise ValueError("fit: train_data must be given")
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 2 or not all(isinstance(b, int) for b in batch_size):
                raise ValueError("fit: batch_size must be an int or [train_batch_size, eval_batch_size]")
            train_bs, eval_bs = batch_size
        elif isinstance(batch_size, int):
            train_bs = eval_bs = batch_size
        else:
            raise TypeError("fit: batch_size must be an int or a pair of ints, got {}".format(
                type(batch_size).__name__))
        if not isinstance(accumulate_grad_batches, int) or accumulate_grad_batches < 1:
            raise ValueError("fit: accumulate_grad_batches must be an int >= 1")
        if not isinstance(eval_freq, int) or eval_freq < 1:
            raise ValueError("fit: eval_freq must be an int >= 1")

        train_loader = self._make_loader(train_data, train_bs, shuffle, drop_last, num_workers)
        eval_loader = None
        if eval_data is not None:
            eval_loader = self._make_loader(eval_data, eval_bs, False, False, num_workers)
        do_eval = eval_loader is not None
        self._test_dataloader = eval_loader
        self._accumulate = accumulate_grad_batches

        steps = self._len_data_loader(train_loader)
        self.num_iters = num_iters
        if num_iters is not None:
            if not isinstance(num_iters, int) or num_iters <= 0:
                raise ValueError("fit: num_iters must be an int > 0, got {!r}".format(num_iters))
            if steps is not None:
                epochs = num_iters // steps + 1
                steps = min(num_iters, steps)

        cbks = config_callbacks(callbacks, model=self, epochs=epochs, steps=steps, log_freq=log_freq,
                                save_freq=save_freq, save_dir=save_dir, verbose=verbose,
                                metrics=self._metrics_name())
        if any(isinstance(c, EarlyStopping) for c in cbks) and not do_eval:
            warnings.warn("EarlyStopping needs validation data.")

        self.stop_training = False
        logs = {}
        cbks.on_begin("train")
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            logs = self._run_one_epoch(train_loader, cbks, "train")
            cbks.on_epoch_end(epoch, logs)
            if do_eval and epoch % eval_freq == 0:
                eval_steps = self._len_data_loader(eval_loader)
                cbks.on_begin("eval", {"steps": eval_steps, "metrics": self._metrics_name()})
                eval_logs = self._run_one_epoch(eval_loader, cbks, "eval")
                cbks.on_end("eval", eval_logs)
            if self.stop_training:
                break
        cbks.on_end("train", logs)
        self._test_dataloader = None
        self.num_iters = None

    def evaluate(self, eval_data, batch_size=1, log_freq=10, verbose=2, num_workers=0, callbacks=None,
                 num_iters=None):
        """Evaluates on eval_data (a Dataset or an iterable of batches); returns {'loss': [..], <metric
        name>: value, ...} (the loss of the last batch, metrics accumulated over all batches)."""
        if eval_data is None:
            raise ValueError("evaluate: eval_data must be given")
        eval_loader = self._make_loader(eval_data, batch_size, False, False, num_workers)
        self._test_dataloader = eval_loader
        cbks = config_callbacks(callbacks, model=self, log_freq=log_freq, verbose=verbose,
                                metrics=self._metrics_name())
        eval_steps = self._len_data_loader(eval_loader)
        self.num_iters = num_iters
        if num_iters is not None:
            if not isinstance(num_iters, int) or num_iters <= 0:
                raise ValueError("evaluate: num_iters must be an int > 0, got {!r}".format(num_iters))
            if eval_steps is not None:
                eval_steps = min(num_iters, eval_steps)
                self.num_iters = eval_steps
        cbks.on_begin("eval", {"steps": eval_steps, "metrics": self._metrics_name()})
        logs = self._run_one_epoch(eval_loader, cbks, "eval")
        cbks.on_end("eval", logs)
        self._test_dataloader = None
        self.num_iters = None
        return {k: logs[k] for k in self._metrics_name() if k in logs}

    def predict(self, test_data, batch_size=1, num_workers=0, stack_outputs=False, verbose=1, callbacks=None):
        """Runs the network on test_data; returns one entry per network output: a list of per-batch numpy
        arrays, or (stack_outputs=True) one array stacked along the batch axis."""
        if test_data is None:
            raise ValueError("predict: test_data must be given")
        test_loader = self._make_loader(test_data, batch_size, False, False, num_workers)
        self._test_dataloader = test_loader
        cbks = config_callbacks(callbacks, model=self, verbose=verbose)
        test_steps = self._len_data_loader(test_loader)
        cbks.on_begin("predict", {"steps": test_steps})
        logs, outputs = self._run_one_epoch(test_loader, cbks, "predict")
        outputs = [list(o) for o in zip(*outputs)]
        if stack_outputs:
            outputs = [np.vstack(o) for o in outputs]
        self._test_dataloader = None
        cbks.on_end("predict", logs)
        return outputs

    def _run_one_epoch(self, data_loader, callbacks, mode):
        logs = {}
        # Under a job, an evaluation whose batches DistributedBatchSampler split gathers every rank's outputs
        # for the metrics (_gather_eval); a loader that gives each rank everything needs no gathering.
        from ..io import DistributedBatchSampler
        self._eval_total = None
        sampler = getattr(data_loader, "batch_sampler", None)
        if mode == "eval" and self._ddp is not None and isinstance(sampler, DistributedBatchSampler):
            self._eval_total, self._eval_seen = len(sampler.dataset), 0
        outputs = []
        n_steps = self._len_data_loader(data_loader)
        n_inputs = len(self._inputs)
        for step, data in enumerate(data_loader):
            data = _flatten(data)
            if not data:
                raise ValueError("{}: a batch from the data has no fields".format(mode))
            batch_size = data[0].shape[0] if len(data[0].shape) > 0 else 1
            callbacks.on_batch_begin(mode, step, logs)
            if mode != "predict":
                ins, labs = data[:n_inputs], data[n_inputs:]
                if mode == "train":
                    update = (step + 1) % self._accumulate == 0 or (n_steps is not None and step + 1 == n_steps)
                    outs = self.train_batch(ins, labs, update)
                else:
                    outs = self.eval_batch(ins, labs)
                if self._metrics and self._loss:
                    values = [[float(np.asarray(l).reshape(-1)[0]) for l in outs[0]]]
                elif self._loss:
                    values = [[float(np.asarray(l).reshape(-1)[0]) for l in outs]]
                else:
                    values = []
                for metric in self._metrics:
                    values.extend(to_list(metric.accumulate()))
                for k, v in zip(self._metrics_name(), values):
                    logs[k] = v
            else:
                outputs.append(self.predict_batch(data[:n_inputs] if n_inputs else data))
            logs["step"] = step
            logs["batch_size"] = batch_size
            callbacks.on_batch_end(mode, step, logs)
            if getattr(self, "num_iters", None) is not None:
                self.num_iters -= 1
                if self.num_iters <= 0:
                    self.stop_training = True
                    self.num_iters = None
                    break
        self._reset_metrics()
        self._eval_total = None
        if mode == "predict":
            return logs, outputs
        return logs

    # ---- inspection ----
    def summary(self, input_size=None, dtype=None):
        """Prints the network's layer table (oar.summary) for input_size (or the inputs' shapes given to
        Model); returns {'total_params': n, 'trainable_params': m}."""
        if input_size is None:
            shapes = [getattr(s, "shape", None) for s in self._inputs]
            if not shapes or any(s is None or list(s) == [None] for s in shapes):
                raise ValueError("Model.summary: give input_size, or inputs with shapes to Model(...)")
            input_size = [tuple(s) for s in shapes] if len(shapes) > 1 else tuple(shapes[0])
        return _summary(self.network, input_size, dtypes=dtype)
