"""fleet (collective mode), recompute, gradient merge and group sharding stages 1 and 2.

Single-process checks run in this process; the 2-rank checks run real processes through spawn on the
cpu device (Gloo), each worker training both the distributed model and a single-process reference on
the whole batch (float64) and raising on a mismatch, which spawn reports naming the rank.
"""
import importlib.util
import os

import numpy as np
import pytest

import oar
import oar.distributed as dist
from _util import clean_job
from oar.distributed import fleet
from oar.distributed.fleet.optimizer import GradientMergeOptimizer
from oar.distributed.fleet.utils import recompute, recompute_sequential
from oar.distributed.sharding import group_sharded_parallel, save_group_sharded_model


@pytest.fixture(autouse=True)
def _cpu_and_clean_env(monkeypatch):
    with clean_job(monkeypatch):
        yield
    fleet._fleet._strategy = None


def _mlp(seed=0, dropout=0.0):
    """A float64 MLP with the same parameters for the same seed."""
    oar.seed(seed)
    prev = oar.get_default_dtype()
    oar.set_default_dtype("float64")
    try:
        layers = [oar.nn.Linear(6, 10), oar.nn.Tanh()]
        if dropout:
            layers.append(oar.nn.Dropout(dropout))
        layers.append(oar.nn.Linear(10, 3))
        return oar.nn.Sequential(*layers)
    finally:
        oar.set_default_dtype(prev)


def _batch(step, n=8):
    rs = np.random.RandomState(100 + step)
    return rs.randn(n, 6), rs.randn(n, 3)


def _loss(net, x, y):
    out = net(oar.to_tensor(x))
    return ((out - oar.to_tensor(y)) ** 2).mean()


def _params(net):
    return [p.numpy().copy() for p in net.parameters()]


def _assert_close(got, want, what):
    # float64 rounding only: the reductions sum in another order, and Adam's m / sqrt(v) magnifies a last-bit
    # difference where the moments nearly cancel (seen: 3e-11 absolute); a wrong update is off by ~lr = 1e-2.
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=f"{what}: parameter {i}")


# ---- DistributedStrategy -----------------------------------------------------------------------------------

def test_strategy_fields_defaults_and_errors():
    s = fleet.DistributedStrategy()
    assert s.amp is False and s.gradient_merge is False and s.sharding is False and s.a_sync is True
    assert s.fuse_grad_size_in_MB == 32 and s.last_comm_group_size_MB == 1.0
    assert s.gradient_merge_configs == {"k_steps": 1, "avg": True}
    assert s.sharding_configs["stage"] == 1 and s.hybrid_configs["dp_degree"] == -1
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": 4}
    assert s.gradient_merge_configs == {"k_steps": 4, "avg": True}  # only the given keys change
    assert repr(s) == "DistributedStrategy(gradient_merge=True, gradient_merge_configs={'k_steps': 4})"
    conf = s.amp_configs
    conf["init_loss_scaling"] = 1.0  # a copy: the strategy keeps its value
    assert s.amp_configs["init_loss_scaling"] == 32768.0
    s.recompute_configs = {"checkpoints": ("a", "b")}
    assert s.recompute_configs["checkpoints"] == ["a", "b"]
    s.hybrid_configs = {"dp_degree": 2, "sharding_degree": 1}
    assert s.hybrid_configs["dp_degree"] == 2
    with pytest.raises(TypeError, match="not_a_field is not a attribute of DistributedStrategy"):
        s.not_a_field = 1
    with pytest.raises(ValueError, match="'k_step' is not in gradient_merge_configs"):
        s.gradient_merge_configs = {"k_step": 2}
    with pytest.raises(TypeError, match="k_steps must be of type int, got '2'"):
        s.gradient_merge_configs = {"k_steps": "2"}
    with pytest.raises(TypeError, match="gradient_merge must be of type bool, got 1"):
        s.gradient_merge = 1
    with pytest.raises(TypeError, match="sharding_configs must be a dict"):
        s.sharding_configs = [("stage", 2)]
    with pytest.raises(AttributeError):
        s.no_such_thing  # noqa: B018


def test_fleet_init_single_process_and_errors():
    with pytest.raises(RuntimeError, match="call fleet.init"):
        fleet.distributed_model(oar.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="parameter-server mode"):
        fleet.init()
    s = fleet.DistributedStrategy()
    s.hybrid_configs = {"mp_degree": 2}
    with pytest.raises(NotImplementedError, match="mp_degree"):
        fleet.init(is_collective=True, strategy=s)
    with pytest.raises(TypeError, match="must be a DistributedStrategy"):
        fleet.init(is_collective=True, strategy={"amp": True})
    s = fleet.DistributedStrategy()
    s.dgc = True
    with pytest.warns(UserWarning, match="dgc=True is accepted but not honoured"):
        fleet.init(is_collective=True, strategy=s)
    assert dist.is_initialized()
    assert fleet.worker_index() == 0 and fleet.worker_num() == 1 and fleet.is_first_worker()
    fleet.barrier_worker()
    assert fleet.all_reduce(3) == 3 and fleet.all_reduce(np.array([1.0, 2.0]), mode="mean").tolist() == [1.0, 2.0]
    net = oar.nn.Linear(2, 2)
    assert fleet.distributed_model(net) is net  # one worker: the model itself
    opt = oar.optimizer.SGD(parameters=net.parameters())
    assert fleet.distributed_optimizer(opt) is opt  # nothing in the strategy asks for a wrapper
    with pytest.raises(TypeError, match="must be an oar.optimizer.Optimizer"):
        fleet.distributed_optimizer(net)
    s3 = fleet.DistributedStrategy()
    s3.sharding = True
    s3.sharding_configs = {"stage": 3}
    with pytest.raises(NotImplementedError, match="sharding stage 3"):
        fleet.distributed_optimizer(opt, strategy=s3)
    s4 = fleet.DistributedStrategy()
    s4.hybrid_configs = {"sharding_degree": 2}  # one worker: sharding degree 2 would mix with data parallel
    with pytest.raises(NotImplementedError, match=r"sharding_degree'\]=2 must be 1 or the world size \(1\)"):
        fleet.distributed_optimizer(opt, strategy=s4)


# ---- recompute -----------------------------------------------------------------------------------------------

def _grads_of(net, x, use_recompute, seed=7, **kw):
    oar.seed(seed)
    net.clear_gradients()
    xt = oar.to_tensor(x)
    xt.stop_gradient = kw.pop("x_stop_gradient", False)
    h = recompute(net, xt, **kw) if use_recompute else net(xt)
    loss = (h * h).sum()
    loss.backward()
    after = oar.rand([3]).numpy()  # where the generator is left
    return ([p.grad.numpy().copy() for p in net.parameters()], None if xt.grad is None else xt.grad.numpy().copy(),
            float(loss), after)


def test_recompute_gives_the_plain_gradients_with_dropout():
    net = _mlp(dropout=0.5)
    x = np.random.RandomState(0).randn(5, 6)
    plain = _grads_of(net, x, False)
    again = _grads_of(net, x, True)
    assert plain[2] == again[2]
    for a, b in zip(plain[0], again[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(plain[1], again[1])
    np.testing.assert_array_equal(plain[3], again[3])  # backward's re-run does not move the generator
    # dropout really draws: another seed changes the gradients
    other = _grads_of(net, x, False, seed=8)
    assert not np.array_equal(plain[0][0], other[0][0])
    # an input without gradient: the parameters still get theirs
    p2 = _grads_of(net, x, False, x_stop_gradient=True)
    r2 = _grads_of(net, x, True, x_stop_gradient=True)
    assert r2[1] is None
    for a, b in zip(p2[0], r2[0]):
        np.testing.assert_array_equal(a, b)


def test_recompute_without_rng_preservation_draws_a_new_mask():
    net = _mlp(dropout=0.5)
    x = np.random.RandomState(1).randn(64, 6)
    plain = _grads_of(net, x, False)
    loose = _grads_of(net, x, True, preserve_rng_state=False)
    assert plain[2] == loose[2]  # same forward
    assert not np.array_equal(plain[0][0], loose[0][0])  # backward re-ran with another mask


def test_recompute_tuple_outputs_kwargs_and_sequential():
    oar.seed(3)
    lin = oar.nn.Linear(4, 4)

    def f(a, b, scale=1.0, c=None):
        return lin(a) * scale + c, (a * b).sum(axis=1)

    a_np, b_np = np.random.RandomState(2).randn(3, 4), np.random.RandomState(3).randn(3, 4)

    def run(use):
        lin.clear_gradients()
        a, b, c0 = oar.to_tensor(a_np), oar.to_tensor(b_np), oar.to_tensor(b_np[0])
        for t in (a, b, c0):
            t.stop_gradient = False
        c = c0 * 3.0  # a non-leaf keyword argument: its gradient goes on through the outer graph
        o1, o2 = recompute(f, a, b, scale=2.0, c=c) if use else f(a, b, scale=2.0, c=c)
        ((o1 ** 2).sum() + (o2 ** 2).sum()).backward()
        return [lin.weight.grad.numpy(), lin.bias.grad.numpy(), a.grad.numpy(), b.grad.numpy(), c0.grad.numpy()]

    for u, v in zip(run(False), run(True)):
        np.testing.assert_allclose(u, v, rtol=1e-6)

    seq = _mlp()
    x = np.random.RandomState(4).randn(4, 6)

    def run_seq(use):
        seq.clear_gradients()
        xt = oar.to_tensor(x)
        out = recompute_sequential({"segments": 2}, seq, xt) if use else seq(xt)
        out.sum().backward()
        return [p.grad.numpy().copy() for p in seq.parameters()]

    for u, v in zip(run_seq(False), run_seq(True)):
        np.testing.assert_array_equal(u, v)
    with oar.no_grad():  # nothing recorded: a plain call
        assert recompute(seq, oar.to_tensor(x)).stop_gradient
    with pytest.raises(TypeError, match="recompute: function must be callable"):
        recompute(3, oar.to_tensor(x))
    with pytest.raises(ValueError, match="segments must be an int"):
        recompute_sequential({"segments": 9}, seq, oar.to_tensor(x))


# ---- gradient merge ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("avg", [True, False])
def test_gradient_merge_equals_one_step_on_the_concatenated_batch(avg):
    k, steps = 4, 2
    merged, big = _mlp(), _mlp()
    opt = GradientMergeOptimizer(oar.optimizer.Adam(0.01, parameters=merged.parameters()), k, avg)
    ref = oar.optimizer.Adam(0.01, parameters=big.parameters())
    for step in range(steps):
        x, y = _batch(step, n=4 * k)
        for i in range(k):
            sl = slice(4 * i, 4 * (i + 1))
            _loss(merged, x[sl], y[sl]).backward()
            opt.step()
            opt.clear_grad()
            if i < k - 1:  # nothing moves before the k-th call
                assert merged.parameters()[0].grad is not None
        loss = _loss(big, x, y)
        (loss if avg else loss * k).backward()
        ref.step()
        ref.clear_grad()
        _assert_close(_params(merged), _params(big), f"step {step}")
    assert opt.get_lr() == 0.01  # other attributes are the optimizer's
    with pytest.raises(ValueError, match="k_steps"):
        GradientMergeOptimizer(ref, 0)


def test_gradient_merge_through_fleet_single_process():
    s = fleet.DistributedStrategy()
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": 2, "avg": True}
    fleet.init(is_collective=True, strategy=s)
    net, big = _mlp(), _mlp()
    model = fleet.distributed_model(net)
    opt = fleet.distributed_optimizer(oar.optimizer.SGD(0.1, parameters=model.parameters()))
    assert isinstance(opt, GradientMergeOptimizer)
    x, y = _batch(0)
    for sl in (slice(0, 4), slice(4, 8)):
        _loss(model, x[sl], y[sl]).backward()
        opt.step()
        opt.clear_grad()
    _loss(big, x, y).backward()
    oar.optimizer.SGD(0.1, parameters=big.parameters()).step()
    _assert_close(_params(net), _params(big), "fleet gradient merge")


def test_strategy_recompute_wraps_named_sublayers():
    s = fleet.DistributedStrategy()
    s.recompute = True
    s.recompute_configs = {"checkpoints": ["0"]}
    fleet.init(is_collective=True, strategy=s)
    net = _mlp(dropout=0.5)
    x = np.random.RandomState(0).randn(5, 6)
    plain = _grads_of(net, x, False)
    model = fleet.distributed_model(net)
    assert net[0]._fleet_recompute
    oar.seed(7)
    model.clear_gradients()
    xt = oar.to_tensor(x)
    xt.stop_gradient = False
    (model(xt) ** 2).sum().backward()
    for a, p in zip(plain[0], net.parameters()):
        np.testing.assert_array_equal(a, p.grad.numpy())
    s.recompute_configs = {"checkpoints": ["nope"]}
    with pytest.raises(ValueError, match="'nope', which is not a sublayer"):
        fleet.distributed_model(_mlp())


# ---- sharding, single process --------------------------------------------------------------------------------

def test_group_sharded_refuses_bad_arguments():
    net = _mlp()
    opt = oar.optimizer.Adam(parameters=net.parameters())
    with pytest.raises(NotImplementedError, match="'p_g_os'"):
        group_sharded_parallel(net, opt, "p_g_os")
    with pytest.raises(ValueError, match="level must be 'os', 'os_g' or 'p_g_os', got 'p_g'"):
        group_sharded_parallel(net, opt, "p_g")
    with pytest.raises(TypeError, match="model must be an oar.nn.Layer"):
        group_sharded_parallel(opt, opt, "os")
    with pytest.raises(TypeError, match="optimizer must be an oar.optimizer.Optimizer"):
        group_sharded_parallel(net, net, "os")
    with pytest.raises(NotImplementedError, match="GradScaler with group sharding"):
        group_sharded_parallel(net, opt, "os", scaler=object())
    with pytest.raises(NotImplementedError, match="offload"):
        group_sharded_parallel(net, opt, "os", offload=True)
    with pytest.raises(ValueError, match="model must be the model group_sharded_parallel returned"):
        save_group_sharded_model(net, "/tmp/x")


def test_group_sharded_one_process_is_plain_training(tmp_path):
    net, ref = _mlp(), _mlp()
    model, opt, scaler = group_sharded_parallel(net, oar.optimizer.Adam(0.01, parameters=net.parameters()), "os_g")
    assert scaler is None
    ref_opt = oar.optimizer.Adam(0.01, parameters=ref.parameters())
    for step in range(2):
        x, y = _batch(step)
        for m, o in ((model, opt), (ref, ref_opt)):
            _loss(m, x, y).backward()
            o.step()
            o.clear_grad()
    _assert_close(_params(net), _params(ref), "one-process sharding")
    save_group_sharded_model(model, str(tmp_path / "out"), opt)
    state = oar.load(str(tmp_path / "out" / "model.pdmodel"))
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(state[k].numpy(), v.numpy())
    assert len(oar.load(str(tmp_path / "out" / "model.pdopt"))) == 4 * len(net.parameters())


# ---- 2 ranks -------------------------------------------------------------------------------------------------

def _sharded_worker(out_dir):
    """Stage 1 and stage 2 (with a global-norm clip) against the unsharded run on the whole batch, then
    save_group_sharded_model; and stage 2 + gradient merge through fleet."""
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    half = slice(4 * rank, 4 * (rank + 1))
    for level, clip in (("os", None), ("os_g", 0.05)):
        net, ref = _mlp(), _mlp()
        if rank == 1:  # the wrapper takes rank 0's parameters
            with oar.no_grad():
                net.parameters()[0].set_value(np.zeros([6, 10]))
        make = lambda params: oar.optimizer.Adam(  # noqa: E731
            0.01, parameters=params, grad_clip=None if clip is None else oar.nn.ClipGradByGlobalNorm(clip))
        model, opt, _ = group_sharded_parallel(net, make(net.parameters()), level)
        ref_opt = make(ref.parameters())
        for step in range(3):
            x, y = _batch(step)
            _loss(model, x[half], y[half]).backward()
            opt.step()
            if level == "os_g":  # only the own partition's gradients stay
                kept = [p.grad is not None for p in net.parameters()]
                owned = [opt._owner[id(p)] == rank for p in net.parameters()]
                assert kept == owned, (kept, owned)
            opt.clear_grad()
            _loss(ref, x, y).backward()
            ref_opt.step()
            ref_opt.clear_grad()
            _assert_close(_params(net), _params(ref), f"{level} step {step}")
        # this rank's optimizer state: its partition only, and every parameter is someone's
        local = {p.name for p in opt._local}
        accs = ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc")
        assert local and set(opt.state_dict()) == {f"{n}_{a}_0" for n in local for a in accs}
        names = [p.name for p in net.parameters()]
        owners = [opt._owner[id(p)] for p in net.parameters()]
        assert sorted(set(owners)) == list(range(world))
        for p, r in zip(net.parameters(), owners):
            assert (opt._optim._accumulators["moment1"].get(p.name) is not None) == (r == rank)
        # save: the full state, from rank 0
        path = os.path.join(out_dir, level)
        save_group_sharded_model(model, path, opt)
        if rank == 0:
            saved = oar.load(os.path.join(path, "model.pdmodel"))
            for k, v in net.state_dict().items():
                np.testing.assert_array_equal(saved[k].numpy(), v.numpy())
            full = oar.load(os.path.join(path, "model.pdopt"))
            ref_state = ref_opt.state_dict()
            rename = {r.name: n for r, n in zip(ref.parameters(), names)}
            assert len(full) == len(ref_state) == 4 * len(names)
            for key, t in ref_state.items():
                pname = next(r for r in rename if key.startswith(r + "_"))
                np.testing.assert_allclose(full[rename[pname] + key[len(pname):]].numpy(), t.numpy(),
                                           rtol=1e-9, atol=1e-9, err_msg=key)
            # round trip: the files restore an unsharded model and optimizer that go on like the reference
            fresh = _mlp(seed=9)
            fresh.set_state_dict(saved)
            for fp, p in zip(fresh.parameters(), net.parameters()):
                fp.name = p.name  # the optimizer state is keyed by the saved model's parameter names
            resumed = make(fresh.parameters())
            resumed.set_state_dict(full)
            x, y = _batch(7)
            for m, o in ((fresh, resumed), (ref, ref_opt)):
                _loss(m, x, y).backward()
                o.step()
                o.clear_grad()
            _assert_close(_params(fresh), _params(ref), f"{level} resumed from save_group_sharded_model")
    # a rank owning nothing (one parameter), an LR scheduler, parameter groups
    for level in ("os", "os_g"):
        oar.seed(5)
        prev = oar.get_default_dtype()
        oar.set_default_dtype("float64")
        lone, lone_ref = oar.nn.Linear(6, 3, bias_attr=False), oar.nn.Linear(6, 3, bias_attr=False)
        oar.set_default_dtype(prev)
        lone_ref.weight.set_value(lone.weight.numpy())
        sched = lambda: oar.optimizer.lr.StepDecay(0.1, step_size=1, gamma=0.5)  # noqa: E731
        model, opt, _ = group_sharded_parallel(lone, oar.optimizer.Momentum(sched(), parameters=lone.parameters()),
                                               level)
        assert (len(opt._local) == 1) == (rank == 0)
        net, ref = _mlp(), _mlp()
        groups = lambda m: [{"params": m[0].parameters(), "learning_rate": 0.5},  # noqa: E731
                            {"params": m[2].parameters()}]
        clip = oar.nn.ClipGradByGlobalNorm(0.05)  # per group, as the unsharded step clips
        gmodel, gopt, _ = group_sharded_parallel(net, oar.optimizer.Adam(0.01, parameters=groups(net),
                                                                         grad_clip=clip), level)
        refs = [(lone_ref, oar.optimizer.Momentum(sched(), parameters=lone_ref.parameters())),
                (ref, oar.optimizer.Adam(0.01, parameters=groups(ref), grad_clip=clip))]
        for step in range(2):
            x, y = _batch(step)
            for m, o in ((model, opt), (gmodel, gopt)):
                _loss(m, x[half], y[half]).backward()
                o.step()
                o.clear_grad()
            opt._learning_rate.step()
            for m, o in refs:
                _loss(m, x, y).backward()
                o.step()
                o.clear_grad()
            refs[0][1]._learning_rate.step()
            _assert_close(_params(lone), _params(lone_ref), f"{level} lone step {step}")
            _assert_close(_params(net), _params(ref), f"{level} groups step {step}")
    # a group of its own (new_group: another communicator), stage 2
    g = dist.new_group([0, 1])
    net, ref = _mlp(), _mlp()
    model, opt, _ = group_sharded_parallel(net, oar.optimizer.Adam(0.01, parameters=net.parameters()), "os_g",
                                           group=g)
    ref_opt = oar.optimizer.Adam(0.01, parameters=ref.parameters())
    for step in range(2):
        x, y = _batch(step)
        _loss(model, x[half], y[half]).backward()
        opt.step()
        opt.clear_grad()
        _loss(ref, x, y).backward()
        ref_opt.step()
        ref_opt.clear_grad()
        _assert_close(_params(net), _params(ref), f"sub-group os_g step {step}")

    # fleet: strategy.sharding stage 2 + gradient merge (k=2) == Adam on the 2 ranks x 2 micro-batches
    # (fleet.init keeps the group init_parallel_env made)
    s = fleet.DistributedStrategy()
    s.sharding = True
    s.sharding_configs = {"stage": 2}
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": 2, "avg": True}
    net, model, opt = _dp_against_reference(s, rank, 2, 2, "fleet sharding+merge")
    assert fleet.worker_index() == rank and fleet.worker_num() == world
    save_group_sharded_model(model, os.path.join(out_dir, "fleet"), opt)  # through the merge wrapper
    if rank == 0:
        full = oar.load(os.path.join(out_dir, "fleet", "model.pdopt"))
        assert len(full) == 4 * len(net.parameters())
    fleet.barrier_worker()
    assert fleet.all_reduce(rank + 1) == 3


def test_group_sharded_two_ranks_equal_the_unsharded_run(tmp_path):
    dist.spawn(_sharded_worker, args=(str(tmp_path),), nprocs=2)


def _dp_against_reference(strategy, rank, steps, micro, what):
    """fleet data parallel under `strategy` (each rank `micro` micro-batches of 4 a step) against Adam on the
    whole batch in one process; parameters equal after every step."""
    fleet.init(is_collective=True, strategy=strategy)  # the group is kept; the new strategy applies
    net, ref = _mlp(), _mlp()
    model = fleet.distributed_model(net)
    opt = fleet.distributed_optimizer(oar.optimizer.Adam(0.01, parameters=net.parameters()))
    ref_opt = oar.optimizer.Adam(0.01, parameters=ref.parameters())
    for step in range(steps):
        x, y = _batch(step, n=8 * micro)
        for i in range(micro):
            sl = slice(8 * i + 4 * rank, 8 * i + 4 * rank + 4)
            _loss(model, x[sl], y[sl]).backward()
            opt.step()
            opt.clear_grad()
        _loss(ref, x, y).backward()
        ref_opt.step()
        ref_opt.clear_grad()
        _assert_close(_params(net), _params(ref), f"{what} step {step}")
    return net, model, opt


def _dp_worker():
    s = fleet.DistributedStrategy()
    fleet.init(is_collective=True, strategy=s)
    rank = fleet.worker_index()
    _dp_against_reference(s, rank, 3, 1, "fleet data parallel")
    # data parallel + gradient merge (k=2): 2 ranks x 2 micro-batches == Adam on the whole batch
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": 2}
    _dp_against_reference(s, rank, 2, 2, "fleet data parallel + merge")
    # data parallel + recompute of the first block: its parameters' gradients arrive inside the re-entrant
    # backward of the recompute node, and must still be all-reduced with the others
    s.gradient_merge = False
    s.recompute = True
    s.recompute_configs = {"checkpoints": ["0"]}
    _dp_against_reference(s, rank, 2, 1, "fleet data parallel + recompute")


@pytest.mark.skipif(importlib.util.find_spec("oar.distributed.parallel") is None,
                    reason="oar.distributed.parallel (DataParallel) is not in this tree yet")
def test_fleet_data_parallel_two_ranks_equals_one_process():
    dist.spawn(_dp_worker, nprocs=2)
