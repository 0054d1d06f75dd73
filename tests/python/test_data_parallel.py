"""oar.DataParallel, SyncBatchNorm and Model.fit across real processes (spawn, cpu, Gloo).

Each test runs 2 ranks on different halves of a batch and compares against one process that trains on the
whole batch (float64, so the only differences are the order of floating-point sums). Workers are
module-level functions (spawn pickles them by name); they write what they end with to a temporary folder
and the test compares it with the single-process reference.
"""
import os

import numpy as np
import pytest

import oar
import oar.distributed as dist
from _util import JOB_ENV, clean_job
import oar.nn as nn


@pytest.fixture(autouse=True)
def _cpu_and_clean_env(monkeypatch):
    prev_dtype = oar.get_default_dtype()
    with clean_job(monkeypatch):
        monkeypatch.setenv("OAR_COLLECTIVE_TIMEOUT", "60")
        yield
    oar.set_default_dtype(prev_dtype)


# ---- models and data ------------------------------------------------------------------------------
class _MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc3(nn.functional.relu(self.fc2(nn.functional.tanh(self.fc1(x)))))


class _ConvNet(nn.Layer):
    def __init__(self, bn=False):
        super().__init__()
        self.conv1 = nn.Conv2D(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2D(4) if bn else None
        self.conv2 = nn.Conv2D(4, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        y = self.conv1(x)
        if self.bn is not None:
            y = self.bn(y)
        y = nn.functional.relu(y)
        y = nn.functional.relu(self.conv2(y))
        return self.fc(y.flatten(1))


class _Branchy(nn.Layer):
    """fc_b is used only when use_b: an unused parameter in the other steps."""

    def __init__(self):
        super().__init__()
        self.fc_a = nn.Linear(6, 3)
        self.fc_b = nn.Linear(6, 3)

    def forward(self, x, use_b=False):
        y = self.fc_a(x)
        return y + self.fc_b(x) if use_b else y


_MODELS = {"mlp": (_MLP, (6,)), "conv": (_ConvNet, (2, 7, 7)), "conv_bn": (lambda: _ConvNet(bn=True), (2, 7, 7)),
           "branchy": (_Branchy, (6,))}


def _batch(kind, step, n=8):
    rng = np.random.RandomState(100 + step)
    x = rng.standard_normal((n,) + _MODELS[kind][1])
    y = rng.randint(0, 3, size=(n,)).astype("int64")
    return x, y


def _make(kind, seed, dtype="float64"):
    oar.set_default_dtype(dtype)
    oar.seed(seed)
    return _MODELS[kind][0]()


def _state(model):
    return {k: v.numpy().copy() for k, v in model.state_dict().items()}


def _step(model, opt, x, y, **kw):
    loss = nn.functional.cross_entropy(model(oar.to_tensor(x), **kw), oar.to_tensor(y))
    loss.backward()
    opt.step()
    opt.clear_grad()
    return float(loss)


def _reference(kind, steps, accumulate=1, use_b_every=None, dtype="float64"):
    """One process on the whole batch (each step's batch, accumulate batches summed per update)."""
    model = _make(kind, 0, dtype)
    opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, weight_decay=0.01, parameters=model.parameters())
    for s in range(steps):
        kw = {"use_b": s % use_b_every == 1} if use_b_every else {}
        for a in range(accumulate):
            x, y = _batch(kind, s * accumulate + a)
            loss = nn.functional.cross_entropy(model(oar.to_tensor(x, dtype=dtype), **kw), oar.to_tensor(y))
            loss.backward()
        opt.step()
        opt.clear_grad()
    return _state(model)


# ---- workers --------------------------------------------------------------------------------------
def _train_worker(out, kind, steps, comm_mb, last_mb, accumulate, find_unused, use_b_every, sync_bn, dtype):
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    model = _make(kind, seed=rank, dtype=dtype)  # different on each rank: the wrap must broadcast rank 0's
    if sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    dp = oar.DataParallel(model, comm_buffer_size=comm_mb, last_comm_buffer_size=last_mb,
                          find_unused_parameters=find_unused)
    opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, weight_decay=0.01, parameters=dp.parameters())
    nb = None
    if dp._reducer is not None:
        nb = len(dp._reducer.buckets)
    for s in range(steps):
        kw = {"use_b": s % use_b_every == 1} if use_b_every else {}
        for a in range(accumulate):
            x, y = _batch(kind, s * accumulate + a)
            half = len(x) // world
            xs, ys = x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half]
            ctx = dp.no_sync() if a < accumulate - 1 else _nullcontext()
            with ctx:
                loss = nn.functional.cross_entropy(dp(oar.to_tensor(xs, dtype=dtype), **kw), oar.to_tensor(ys))
                loss.backward()
        opt.step()
        opt.clear_grad()
    np.savez(os.path.join(out, f"rank{rank}.npz"), nbuckets=np.array(nb if nb is not None else -1),
             device=np.array(str(dp.parameters()[0].place)), **_state(dp))


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _run(tmp_path, kind, steps=3, comm_mb=25, last_mb=1, accumulate=1, find_unused=False, use_b_every=None,
         sync_bn=False, dtype="float64"):
    dist.spawn(_train_worker, args=(str(tmp_path), kind, steps, comm_mb, last_mb, accumulate, find_unused,
                                    use_b_every, sync_bn, dtype), nprocs=2)
    r0 = dict(np.load(tmp_path / "rank0.npz"))
    r1 = dict(np.load(tmp_path / "rank1.npz"))
    return r0, r1


def _check(r0, r1, ref, rtol=1e-10, atol=1e-12):
    nb = int(r0.pop("nbuckets"))
    for k in ("nbuckets", "device"):
        r0.pop(k, None)
        r1.pop(k, None)
    assert sorted(r0) == sorted(ref)
    for k in ref:
        np.testing.assert_array_equal(r0[k], r1[k], err_msg=f"replicas differ at {k}")
        np.testing.assert_allclose(r0[k], ref[k], rtol=rtol, atol=atol, err_msg=k)
    return nb


# ---- tests ----------------------------------------------------------------------------------------
def test_mlp_two_ranks_equal_one_process_on_the_whole_batch(tmp_path):
    r0, r1 = _run(tmp_path, "mlp", steps=3)
    assert _check(r0, r1, _reference("mlp", 3)) == 1  # 25 MB: one bucket


def test_float32_sync_batch_norm_conv_net(tmp_path):
    # float32: the same to float32 rounding (SyncBatchNorm's one-pass variance included).
    r0, r1 = _run(tmp_path, "conv_bn", steps=3, sync_bn=True, dtype="float32")
    _check(r0, r1, _reference("conv_bn", 3, dtype="float32"), rtol=2e-5, atol=2e-6)


def test_conv_net_several_buckets(tmp_path):
    # Buckets of 1 KB (the one reduced last 256 B) hold the float64 conv net (576, 32, 1152, 32, 864 and
    # 24 bytes) in three: [conv1.w], [conv1.b, conv2.w], [conv2.b, fc.w, fc.b].
    r0, r1 = _run(tmp_path, "conv", steps=3, comm_mb=1 / 1024, last_mb=1 / 4096)
    assert _check(r0, r1, _reference("conv", 3)) == 3


def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch(tmp_path):
    # Forward statistics, their gradient through the all-reduce and the running statistics: after 3
    # steps every parameter and _mean/_variance equal one BatchNorm process on the 8 samples.
    r0, r1 = _run(tmp_path, "conv_bn", steps=3, sync_bn=True)
    _check(r0, r1, _reference("conv_bn", 3))


def test_plain_batch_norm_is_not_synchronized(tmp_path):
    # The control for the test above: per-rank statistics give different parameters (so that test can fail).
    r0, r1 = _run(tmp_path, "conv_bn", steps=2)
    ref = _reference("conv_bn", 2)
    assert not np.allclose(r0["conv1.weight"], ref["conv1.weight"], rtol=1e-6, atol=1e-9)
    assert not np.allclose(r0["bn._mean"], r1["bn._mean"])  # running stats stay per rank, as in Paddle


def test_find_unused_parameters(tmp_path):
    # fc_b is used in step 1 only: in step 0 its slot is reduced as zeros, but no rank used it, so it keeps
    # no gradient and the optimizer skips it (no weight decay applied), as in one process; in step 2 its
    # cleared gradient reads as zeros (decay applies), as in one process too.
    r0, r1 = _run(tmp_path, "branchy", steps=3, find_unused=True, use_b_every=2)
    _check(r0, r1, _reference("branchy", 3, use_b_every=2))


def test_unused_parameter_without_find_unused_parameters_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"received no gradient.*fc_b\.weight.*find_unused_parameters=True"):
        _run(tmp_path, "branchy", steps=2, use_b_every=2)


def test_no_sync_accumulation_equals_summed_batches(tmp_path):
    # Two batches per update, the first backward inside no_sync(): the update uses the sum of both
    # batches' gradients over the whole job, as one process accumulating both whole batches.
    r0, r1 = _run(tmp_path, "mlp", steps=2, accumulate=2)
    _check(r0, r1, _reference("mlp", 2, accumulate=2))


def test_world_size_one_is_a_transparent_wrapper():
    model = _make("mlp", 0)
    dp = oar.DataParallel(model)
    assert dp._reducer is None
    assert list(dp.state_dict()) == list(model.state_dict())  # no "_layers." prefix, as Paddle
    assert [id(p) for p in dp.parameters()] == [id(p) for p in model.parameters()]
    x, y = _batch("mlp", 0)
    ref = _make("mlp", 0)
    for m in (dp, ref):
        nn.functional.cross_entropy(m(oar.to_tensor(x)), oar.to_tensor(y)).backward()
    for p, q in zip(dp.parameters(), ref.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    with dp.no_sync():
        pass
    state = {k: v.numpy() * 2 for k, v in model.state_dict().items()}
    dp.set_state_dict(state)
    np.testing.assert_array_equal(model.fc1.weight.numpy(), state["fc1.weight"])


def test_bad_arguments():
    model = _make("mlp", 0)
    with pytest.raises(TypeError, match="layers must be an oar.nn.Layer"):
        oar.DataParallel(object())
    with pytest.raises(ValueError, match="comm_buffer_size must be a positive number of MB, got 0"):
        oar.DataParallel(model, comm_buffer_size=0)
    with pytest.raises(ValueError, match="last_comm_buffer_size"):
        oar.DataParallel(model, last_comm_buffer_size=-1)
    with pytest.raises(TypeError, match="find_unused_parameters must be a bool"):
        oar.DataParallel(model, find_unused_parameters="yes")
    assert oar.distributed.DataParallel is oar.DataParallel


class _Samples(oar.io.Dataset):
    def __init__(self):
        self.x, self.y = _batch("mlp", 0, n=16)

    def __getitem__(self, i):
        return self.x[i], self.y[i:i + 1]

    def __len__(self):
        return len(self.x)


def _fit_worker(out):
    import contextlib
    import io
    rank = int(os.environ["PADDLE_TRAINER_ID"])
    model = oar.Model(_make("mlp", seed=rank))
    opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())
    model.prepare(opt, nn.CrossEntropyLoss())  # under the job: init_parallel_env + DataParallel
    assert dist.is_initialized() and model._ddp is not None
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        model.fit(_Samples(), batch_size=2, epochs=1, shuffle=False, verbose=2, log_freq=1,
                  save_dir=os.path.join(out, "ckpt"))
    with open(os.path.join(out, f"log{rank}.txt"), "w") as f:
        f.write(buf.getvalue())
    np.savez(os.path.join(out, f"rank{rank}.npz"), nbuckets=np.array(0), **_state(model.network))


def test_model_fit_under_a_job(tmp_path):
    dist.spawn(_fit_worker, args=(str(tmp_path),), nprocs=2)
    r0, r1 = dict(np.load(tmp_path / "rank0.npz")), dict(np.load(tmp_path / "rank1.npz"))
    # DistributedBatchSampler gives rank 0 samples [0,1], [4,5], ... and rank 1 [2,3], [6,7], ...: each
    # step is one process's batch of 4 consecutive samples.
    model = _make("mlp", 0)
    opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())
    x, y = _batch("mlp", 0, n=16)
    for s in range(4):
        _step(model, opt, x[4 * s:4 * s + 4], y[4 * s:4 * s + 4])
    _check(r0, r1, _state(model))
    log0, log1 = (tmp_path / "log0.txt").read_text(), (tmp_path / "log1.txt").read_text()
    assert "step 4/4" in log0 and "loss" in log0 and "save checkpoint" in log0
    assert log1 == ""  # only rank 0 logs
    saved = oar.load(str(tmp_path / "ckpt" / "final.pdparams"))
    np.testing.assert_array_equal(saved["fc1.weight"].numpy(), r0["fc1.weight"])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["0.pdopt", "0.pdparams", "final.pdopt", "final.pdparams"]


class _Reordered(nn.Layer):
    """Layers made in the reverse of the order they are called: parameters() order is not backward's."""

    def __init__(self):
        super().__init__()
        self.last = nn.Linear(32, 3)
        self.middle = nn.Linear(32, 32)
        self.first = nn.Linear(6, 32)

    def forward(self, x):
        return self.last(nn.functional.relu(self.middle(nn.functional.relu(self.first(x)))))


def _overlap_worker(out):
    dist.init_parallel_env()
    rank = dist.get_rank()
    oar.set_default_dtype("float64")
    oar.seed(0)
    # float64 sizes: last.w 768 B, last.b 24, middle.w 8192, middle.b 256, first.w 1536, first.b 256. Buckets of
    # 2 KB, the one reduced last 1 KB.
    dp = oar.DataParallel(_Reordered(), comm_buffer_size=2 / 1024, last_comm_buffer_size=1 / 1024)
    r = dp._reducer
    names = r.names
    before = [[names[i] for i in b.params] for b in r.buckets]
    ready_at_launch = []
    launch = r._launch

    def traced(b):
        ready_at_launch.append(sum(r.ready))
        launch(b)
    r._launch = traced
    r.trace = []
    x, y = _batch("mlp", rank)
    for _ in range(2):
        nn.functional.cross_entropy(dp(oar.to_tensor(x)), oar.to_tensor(y)).backward()
    after = [[names[i] for i in b.params] for b in r.buckets]
    events = [e for e, _, _ in r.trace]
    import json
    with open(os.path.join(out, f"overlap{rank}.json"), "w") as f:
        json.dump({"before": before, "after": after, "ready_at_launch": ready_at_launch, "events": events,
                   "nparams": len(names)}, f)


def test_buckets_launch_during_backward_and_follow_the_arrival_order(tmp_path):
    import json
    dist.spawn(_overlap_worker, args=(str(tmp_path),), nprocs=2)
    res = [json.loads((tmp_path / f"overlap{r}.json").read_text()) for r in range(2)]
    assert res[0]["after"] == res[1]["after"]
    r = res[0]
    # In parameters() order (last, middle, first) the bucket reduced first is [middle.b, first.w, first.b]:
    # it holds the first layer, which backward reaches last, so in step 1 it waits for the whole backward.
    assert r["before"] == [["middle.bias", "first.weight", "first.bias"], ["last.weight", "last.bias", "middle.weight"]]
    assert r["ready_at_launch"][:2] == [6, 6]
    # Rebuilt from the arrival order (last.b, last.w, middle.b, middle.w, first.b, first.w), grouped from its
    # end: [first.w] (>= 1 KB), [first.b, middle.w] (>= 2 KB), then the rest, reduced first.
    assert r["after"] == [["middle.bias", "last.weight", "last.bias"], ["first.bias", "middle.weight"],
                          ["first.weight"]]
    # Step 2: bucket 0 goes when 3 gradients are ready, bucket 1 at 5, while backward still computes the
    # first layer's; every launch precedes the end of the graph, then the wait.
    assert r["ready_at_launch"][2:] == [3, 5, 6]
    step2 = r["events"][r["events"].index("reduced") + 1:]
    assert step2 == ["launch", "launch", "launch", "graph_done", "reduced"]


def test_reducer_hooks_of_autograd():
    # What DataParallel is built on: the post-accumulate hook sees .grad summed over both paths, once;
    # the callback it queues runs after the whole graph (w's gradient is there too).
    x = oar.to_tensor([1.0, 2.0], dtype="float64", stop_gradient=False)
    w = oar.to_tensor([3.0, 4.0], dtype="float64", stop_gradient=False)
    seen = []

    def hook():
        seen.append(("x", x.grad.numpy().tolist()))
        oar._C._queue_backward_callback(lambda: seen.append(("final", w.grad is not None)))
    hid = x._register_backward_hook(hook)
    (x * w + x * x).sum().backward()
    assert seen == [("x", [5.0, 8.0]), ("final", True)]
    assert x._remove_backward_hook(hid) and not x._remove_backward_hook(hid)
    x._set_grad(oar.to_tensor([7.0, 7.0], dtype="float64"))
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])
    with pytest.raises(ValueError, match="set_grad"):
        x._set_grad(oar.to_tensor([1.0], dtype="float64"))
    x._set_grad(None)
    assert x.grad is None
    with pytest.raises(RuntimeError, match="no backward is running"):
        oar._C._queue_backward_callback(lambda: None)


def _unused_on_one_rank_worker():
    dist.init_parallel_env()
    rank = dist.get_rank()
    dp = oar.DataParallel(_make("branchy", 0))
    x, y = _batch("branchy", 0)
    loss = nn.functional.cross_entropy(dp(oar.to_tensor(x), use_b=rank == 0), oar.to_tensor(y))
    loss.backward()  # rank 1 raises; rank 0 waits for fc_b's bucket until rank 1 is gone


def test_parameter_unused_on_one_rank_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match=r"(?s)rank 1 raised.*received no gradient.*fc_b"):
        dist.spawn(_unused_on_one_rank_worker, nprocs=2)


def test_mlp_on_the_sim_device(tmp_path):
    # The same reducer on another plugin's collectives and streams (the sim device, Paddle's "xccl" path):
    # several buckets, each queued on the sim communication stream after an event of the compute stream.
    oar.set_device("sim")
    r0, r1 = _run(tmp_path, "mlp", steps=3, comm_mb=1 / 1024, last_mb=1 / 4096)
    oar.set_device("cpu")
    assert "sim" in str(r0["device"]) and "sim" in str(r1["device"])
    assert _check(r0, r1, _reference("mlp", 3), rtol=1e-9) >= 3


_FIT_SCRIPT = """
import numpy as np
import oar as paddle
import oar.nn as nn

class DS(paddle.io.Dataset):
    def __init__(self):
        rng = np.random.RandomState(0)
        self.x = rng.standard_normal((32, 8)).astype("float32")
        self.y = rng.randint(0, 3, size=(32, 1)).astype("int64")
    def __getitem__(self, i):
        return self.x[i], self.y[i]
    def __len__(self):
        return 32

paddle.seed(paddle.distributed.get_rank())  # different replicas until DataParallel broadcasts rank 0's
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
model = paddle.Model(net)
model.prepare(paddle.optimizer.Adam(0.01, parameters=model.parameters()), nn.CrossEntropyLoss())
model.fit(DS(), batch_size=4, epochs=2, verbose=2, log_freq=2, save_dir="ckpt")
np.save("w%d.npy" % paddle.distributed.get_rank(), net[0].weight.numpy())
"""


def test_model_fit_script_under_the_launcher(tmp_path):
    # A Paddle-style script, unchanged, under python -m oar.distributed.launch: only rank 0's log has the
    # progress bar and the checkpoint lines, the replicas end bit-identical.
    import subprocess
    import sys
    (tmp_path / "fit.py").write_text(_FIT_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in JOB_ENV}
    r = subprocess.run([sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", "2", "--log_dir",
                        "log", "fit.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    log0 = (tmp_path / "log" / "workerlog.0").read_text()
    log1 = (tmp_path / "log" / "workerlog.1").read_text()
    assert "Epoch 2/2" in log0 and "step 4/4" in log0 and "save checkpoint" in log0
    assert log1 == ""
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["0.pdopt", "0.pdparams", "1.pdopt", "1.pdparams",
                                                     "final.pdopt", "final.pdparams"]
    np.testing.assert_array_equal(np.load(tmp_path / "w0.npy"), np.load(tmp_path / "w1.npy"))


class _Recorder(oar.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.evals = []

    def on_eval_end(self, logs=None):
        self.evals.append(dict(logs or {}))


def _fit_eval_worker(out):
    rank = int(os.environ["PADDLE_TRAINER_ID"])
    model = oar.Model(_make("mlp", seed=0))
    opt = oar.optimizer.Momentum(learning_rate=0.1, momentum=0.9, parameters=model.parameters())
    model.prepare(opt, nn.CrossEntropyLoss(), oar.metric.Accuracy())
    rec = _Recorder()
    evald = _Samples()
    evald.x, evald.y = evald.x[:11], evald.y[:11]  # 11 samples: the sampler repeats one for rank 1
    model.fit(_Samples(), eval_data=evald, batch_size=2, epochs=1, shuffle=False, verbose=0, callbacks=[rec])
    direct = model.evaluate(evald, batch_size=2, verbose=0)
    np.savez(os.path.join(out, f"eval{rank}.npz"), fit_acc=np.array(rec.evals[-1]["acc"]),
             eval_acc=np.array(direct["acc"]), **_state(model.network))


def test_model_evaluation_metrics_cover_the_whole_dataset_once(tmp_path):
    # Accuracy over the 11 evaluation samples, gathered from both ranks without the repeated one: equal on
    # both ranks and to one process's accuracy of the trained model on the 11 samples.
    dist.spawn(_fit_eval_worker, args=(str(tmp_path),), nprocs=2)
    r0, r1 = dict(np.load(tmp_path / "eval0.npz")), dict(np.load(tmp_path / "eval1.npz"))
    model = _make("mlp", 0)
    model.set_state_dict({k: oar.to_tensor(v) for k, v in r0.items() if "." in k})
    x, y = _batch("mlp", 0, n=16)
    pred = model(oar.to_tensor(x[:11])).numpy().argmax(1)
    expected = float((pred == y[:11]).mean())
    for r in (r0, r1):
        assert float(r["fit_acc"]) == pytest.approx(expected, abs=1e-12)
        assert float(r["eval_acc"]) == pytest.approx(expected, abs=1e-12)
    # The control: counting the repeated sample (sample 0 again, for rank 1) would give another value.
    with_repeat = float((np.append(pred, pred[0]) == np.append(y[:11], y[0])).mean())
    assert with_repeat != pytest.approx(expected, abs=1e-6)
