"""Process groups and the collectives on them (Paddle 2.x's paddle.distributed API).

Every group is its own communicator of the current device's plugin (Gloo on cpu, NCCL on gpu) among its
members, bootstrapped through the core's TCPStore hosted by rank 0 (docs/distributed.md). Collectives run
in place on oar tensors, on the device's current stream; ranks given to them (src, dst) are global ranks,
as in Paddle. With world size 1 (no launcher environment) they are identities.
"""
import operator
import os
import pickle
import time
import warnings

from .. import _C

__all__ = ["ReduceOp", "ParallelEnv", "Group", "init_parallel_env", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "new_group", "get_group", "all_reduce", "broadcast", "reduce",
           "all_gather", "all_gather_object", "broadcast_object_list", "scatter", "scatter_object_list", "gather",
           "reduce_scatter", "alltoall", "alltoall_single", "send", "recv", "isend", "irecv", "P2POp",
           "batch_isend_irecv", "barrier", "wait", "destroy_process_group"]

_DEFAULT_PORT = 6170


class ReduceOp:
    """Reduction of all_reduce / reduce_scatter (Paddle's values)."""
    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


# Paddle's ReduceOp value -> the device ABI's OarReduceOp (device_api.h: SUM 0, PROD 1, MAX 2, MIN 3, AVG 4).
_ABI_OP = {ReduceOp.SUM: 0, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.PROD: 1, ReduceOp.AVG: 4}


def _env_int(names, default):
    for name in names:
        v = os.environ.get(name)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise ValueError(f"oar.distributed: environment variable {name}={v!r} is not an integer") from None
    return default


def _split_endpoint(ep, name):
    host, sep, port = ep.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"oar.distributed: environment variable {name}={ep!r} is not host:port")
    return host.strip("[]"), int(port)


def _master():
    """(host, port) of the store master from the launcher's environment (docs/distributed.md)."""
    addr = os.environ.get("MASTER_ADDR")
    if addr:
        return addr, _env_int(["MASTER_PORT"], _DEFAULT_PORT)
    if os.environ.get("PADDLE_MASTER"):
        return _split_endpoint(os.environ["PADDLE_MASTER"], "PADDLE_MASTER")
    eps = os.environ.get("PADDLE_TRAINER_ENDPOINTS")
    if eps:
        return _split_endpoint(eps.split(",")[0], "PADDLE_TRAINER_ENDPOINTS")
    return "127.0.0.1", _DEFAULT_PORT


# ---- Slurm (srun) without a launcher: owned by the launcher's work (docs/distributed.md, "Under Slurm") ----

def _slurm_first_host(nodelist):
    """The first host of a Slurm node list: 'gpu[07-09,12],login1' -> 'gpu07', 'n[1-2]-ib' -> 'n1-ib'."""
    depth, end = 0, len(nodelist)
    for i, ch in enumerate(nodelist):  # the first entry ends at the first comma outside brackets
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            end = i
            break
    entry, host = nodelist[:end], ""
    while "[" in entry:  # each bracket group contributes its first value
        pre, _, rest = entry.partition("[")
        group, _, entry = rest.partition("]")
        host += pre + group.split(",")[0].split("-")[0]
    return host + entry


def _env_from_slurm():
    """Under srun without a launcher, fills the common variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
    MASTER_PORT) from Slurm's, only where they are unset, so every reader (this module, the C++ store, the
    script) sees one setting. The step's task count is the world (the batch script itself is a one-task
    step); the master is MASTER_ADDR, else the step's first node; the port MASTER_PORT, else one derived from
    the job id so two jobs sharing a node do not collide."""
    e = os.environ
    if "SLURM_PROCID" not in e or "PADDLE_TRAINER_ID" in e or "RANK" in e:
        return
    e["RANK"] = e["SLURM_PROCID"]
    world = e.get("SLURM_STEP_NUM_TASKS") or e.get("SLURM_NTASKS")
    if world:
        e.setdefault("WORLD_SIZE", world)
    if "SLURM_LOCALID" in e:
        e.setdefault("LOCAL_RANK", e["SLURM_LOCALID"])
    nodes = e.get("SLURM_STEP_NODELIST") or e.get("SLURM_JOB_NODELIST") or e.get("SLURM_NODELIST")
    if "MASTER_ADDR" not in e and "PADDLE_MASTER" not in e and nodes:
        e["MASTER_ADDR"] = _slurm_first_host(nodes)
    if "MASTER_ADDR" in e and "MASTER_PORT" not in e:
        job = e.get("SLURM_JOB_ID", "")
        e["MASTER_PORT"] = str(15000 + int(job) % 20000) if job.isdigit() else str(_DEFAULT_PORT)


class ParallelEnv:
    """This process's place in the job, read from the launcher's environment (Paddle's ParallelEnv)."""

    def __init__(self):
        _env_from_slurm()
        self._rank = _env_int(["PADDLE_TRAINER_ID", "RANK"], 0)
        self._world_size = _env_int(["PADDLE_TRAINERS_NUM", "WORLD_SIZE"], 1)
        self._local_rank = _env_int(["PADDLE_LOCAL_RANK", "LOCAL_RANK"], self._rank)
        dev = _C.get_device()
        self._device_type = dev.split(":")[0]
        self._device_id = int(dev.split(":")[1]) if ":" in dev else 0
        # The launcher's device for this rank (Paddle's FLAGS_selected_gpus, FLAGS_selected_<type>s); the first
        # id wins, as in Paddle. init_parallel_env moves the process onto it.
        name = f"FLAGS_selected_{self._device_type}s"
        sel = os.environ.get(name, "").split(",")[0].strip()
        if sel and self._device_type != "cpu":
            if not sel.isdigit():
                raise ValueError(f"oar.distributed: environment variable {name}={os.environ[name]!r} is not a "
                                 "list of device ids")
            self._device_id = int(sel)
        eps = os.environ.get("PADDLE_TRAINER_ENDPOINTS", "")
        self._trainer_endpoints = [e for e in eps.split(",") if e]
        self._current_endpoint = os.environ.get("PADDLE_CURRENT_ENDPOINT", "")

    @property
    def rank(self):
        return self._rank

    @property
    def world_size(self):
        return self._world_size

    @property
    def local_rank(self):
        return self._local_rank

    @property
    def device_id(self):
        return self._device_id

    @property
    def device_type(self):
        return self._device_type

    @property
    def current_endpoint(self):
        return self._current_endpoint

    @property
    def trainer_endpoints(self):
        return list(self._trainer_endpoints)

    @property
    def nrings(self):
        return 1

    # Paddle's older names.
    nranks = world_size
    dev_id = device_id

    def __repr__(self):
        return f"ParallelEnv(rank={self._rank}, world_size={self._world_size}, device={self._device_type}:{self._device_id})"


class Group:
    """A process group: the world (id 0, made by init_parallel_env) or a sub-group (new_group).

    `rank` is this process's rank in the group (-1 when it is not a member), `ranks` the members' global
    ranks (sorted), `nranks` their number; `world_size` is `nranks` for a member and -1 otherwise (Paddle's).
    """

    def __init__(self, rank, gid, ranks, backend, place, pg=None, store=None, name=None, device=None, keys=""):
        self._rank = rank
        self._id = gid
        self._ranks = list(ranks)
        self.backend = backend
        self.place = place
        self._pg = pg  # None: a single member (collectives are identities) or not a member
        self._store = store
        self._prefix = keys  # init_parallel_env's store key prefix, shared by its groups
        self._keys = f"{keys}/{gid}"  # this group's keys
        self._name = name if name is not None else f"_default_pg{gid}"
        self._device = device  # (device type, local device id), for the sub-groups' communicators
        self._check = _check_mode()
        self._calls = 0  # collectives issued, counted alike on every member (the agreement check's clock)
        self._last_check_key = None

    @property
    def rank(self):
        return self._rank

    @property
    def ranks(self):
        return list(self._ranks)

    @property
    def nranks(self):
        return len(self._ranks)

    @property
    def world_size(self):
        return len(self._ranks) if self._rank >= 0 else -1

    @property
    def id(self):
        return self._id

    @property
    def name(self):
        return self._name

    @property
    def process_group(self):
        return self._pg

    def is_member(self):
        return self._rank >= 0

    def get_group_rank(self, rank):
        """The group rank of global rank `rank`; -1 when it is not in the group or this process is not."""
        if not self.is_member() or rank not in self._ranks:
            return -1
        return self._ranks.index(rank)

    def __repr__(self):
        return (f"Group(id={self._id}, rank={self._rank}, nranks={self.nranks}, ranks={self._ranks}, "
                f"backend={self.backend!r}, name={self._name!r})")


_group = None  # the world group (id 0)
_groups = {}  # id -> Group, the world included
_next_id = 1
# The store outlives destroy_process_group, so that init_parallel_env can run again in the same processes
# (a new store would race the old one for the port); each init_parallel_env keys its groups under its own
# prefix, counted alike on every rank.
_store = None  # ((host, port, rank, world size), TCPStore)
_inits = 0


def _backend_of(device_type):
    # Paddle's names (its process groups' name()): Gloo on cpu, NCCL on gpu, XCCL for a custom device's
    # plugin (the plugin itself: group.process_group.plugin).
    return {"cpu": "GLOO", "gpu": "NCCL"}.get(device_type, "XCCL")


def _check_mode():
    """OAR_DISTRIBUTED_CHECK: 0 never compares the ranks' calls, 1 every call, unset or 'auto' the calls
    numbered 1, 2, 4, 8, ... of each group (decision 63)."""
    v = os.environ.get("OAR_DISTRIBUTED_CHECK", "auto").strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v in ("0", "1"):
        return int(v)
    raise ValueError(f"oar.distributed: environment variable OAR_DISTRIBUTED_CHECK={v!r} must be 0, 1 or auto")


def _collective_timeout():
    v = os.environ.get("OAR_COLLECTIVE_TIMEOUT")
    if v in (None, ""):
        return 1800.0
    try:
        t = float(v)
    except ValueError:
        t = -1.0
    if not t > 0:
        raise ValueError(f"oar.distributed: environment variable OAR_COLLECTIVE_TIMEOUT={v!r} is not a positive "
                         "number of seconds")
    return t


def init_parallel_env():
    """Makes the default process group from the launcher's environment (`PADDLE_TRAINER_ID`,
    `PADDLE_TRAINERS_NUM`, `PADDLE_MASTER` / `PADDLE_TRAINER_ENDPOINTS`, or `RANK`, `WORLD_SIZE`,
    `MASTER_ADDR`, `MASTER_PORT`) on the current device. Rank 0 hosts the store on the master address.
    Returns the group. Calling it twice is an error (destroy_process_group first)."""
    global _group, _groups, _next_id, _store, _inits
    if _group is not None:
        raise RuntimeError("init_parallel_env: the parallel environment is already initialized "
                           "(call oar.distributed.destroy_process_group() first)")
    env = ParallelEnv()
    rank, world = env.rank, env.world_size
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"init_parallel_env: rank {rank} is out of range for world size {world} "
                         "(PADDLE_TRAINER_ID/RANK, PADDLE_TRAINERS_NUM/WORLD_SIZE)")
    _check_mode()  # a malformed setting fails here, not at the first collective
    dtype, dev = env.device_type, env.device_id
    if dtype != "cpu" and _C.get_device() != f"{dtype}:{dev}":
        _C.set_device(f"{dtype}:{dev}")  # the launcher's FLAGS_selected_<type>s
    place = _C.get_device()
    if world == 1:
        g = Group(0, 0, [0], _backend_of(dtype), place, device=(dtype, dev))
    else:
        _collective_timeout()
        host, port = _master()
        timeout = _env_int(["OAR_STORE_TIMEOUT"], 900)
        where = (host, port, rank, world)
        if _store is None or _store[0] != where:
            _store = None  # a different job: its master is another
            _store = (where, _C.TCPStore(host, port, rank == 0, world, timeout))
        store = _store[1]
        _inits += 1
        keys = f"oar/pg/{_inits}"
        pg = _C._ProcessGroup(dtype, dev, world, rank, store, f"{keys}/0/unique_id")
        g = Group(rank, 0, range(world), _backend_of(dtype), place, pg, store, device=(dtype, dev), keys=keys)
    _group, _groups, _next_id = g, {0: g}, 1
    return g


def is_initialized():
    """Whether init_parallel_env has made the default group (and it was not destroyed)."""
    return _group is not None


def _get_group(group, what):
    """The group a call names (None: the world, or None before init_parallel_env)."""
    if group is None:
        return _group
    if not isinstance(group, Group):
        raise TypeError(f"{what}: group must be a Group (from oar.distributed.new_group), got {type(group).__name__}")
    if _groups.get(group.id) is not group:
        raise ValueError(f"{what}: group {group.id} ({group.name}) was destroyed or belongs to an earlier "
                         "init_parallel_env")
    return group


def get_rank(group=None):
    """This process's rank in `group` (the world by default; -1 when not a member). 0 before
    init_parallel_env without a launcher environment."""
    g = _get_group(group, "get_rank")
    return g.rank if g is not None else ParallelEnv().rank


def get_world_size(group=None):
    """The number of processes of `group` (the world by default; -1 when not a member)."""
    g = _get_group(group, "get_world_size")
    return g.world_size if g is not None else ParallelEnv().world_size


def get_backend(group=None):
    """The group's backend, as Paddle names it: 'GLOO' (cpu), 'NCCL' (gpu), 'XCCL' (a custom device)."""
    g = _get_group(group, "get_backend")
    if g is None:
        raise RuntimeError("get_backend: call oar.distributed.init_parallel_env() first")
    if not g.is_member():
        raise RuntimeError(f"get_backend: this process (global rank {_group.rank}) is not in group {g.id}")
    return g.backend


def get_group(id=0):
    """The live group with this id (0: the world), or None (with a warning) when there is none."""
    g = _groups.get(id)
    if g is None:
        warnings.warn(f"get_group: group {id} is not initialized")
    return g


def new_group(ranks=None, backend=None, timeout=None):
    """Makes a group of the given global ranks (default: every rank). Every process of the job must call
    new_group, in the same order, with the same ranks (as Paddle requires); the members build their own
    communicator, the others get a Group whose collectives do nothing."""
    global _next_id
    world = _group
    if world is None:
        raise RuntimeError("new_group: call oar.distributed.init_parallel_env() first")
    n = world.nranks
    if ranks is None:
        ranks = world.ranks
    if not isinstance(ranks, (list, tuple, range)) or len(ranks) == 0:
        raise ValueError(f"new_group: ranks must be a non-empty list of global ranks, got {ranks!r}")
    ranks = [_as_rank(r, "new_group", "ranks[i]") for r in ranks]
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(f"new_group: rank {r!r} is out of range for world size {n}")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} has duplicates")
    if backend is not None and str(backend).lower() != world.backend.lower():
        raise ValueError(f"new_group: backend {backend!r} is not available: this job's backend is "
                         f"{world.backend!r} (the current device's plugin)")
    if timeout is not None:
        secs = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
        if not isinstance(secs, (int, float)) or not secs > 0:
            raise ValueError(f"new_group: timeout must be positive, got {timeout!r}")
    ranks = sorted(ranks)
    gid = _next_id
    _next_id += 1
    me = ranks.index(world.rank) if world.rank in ranks else -1
    pg = None
    if me >= 0 and len(ranks) > 1:
        dtype, dev = world._device
        try:
            pg = _C._ProcessGroup(dtype, dev, len(ranks), me, world._store, f"{world._prefix}/{gid}/unique_id")
        except Exception as e:
            raise type(e)(f"new_group: group {gid} of global ranks {ranks}: {e}") from None
    g = Group(me, gid, ranks, world.backend, world.place, pg, world._store, device=world._device,
              keys=world._prefix)
    _groups[gid] = g
    return g


# ---- what every call does first ----------------------------------------------------------------------------
def _require(what, group):
    """The group to run on; None before init_parallel_env in a single process (calls are identities)."""
    g = _get_group(group, what)
    if g is None:
        # Paddle lets a single process run collectives without init: they are identities.
        if ParallelEnv().world_size > 1:
            raise RuntimeError(f"{what}: call oar.distributed.init_parallel_env() first")
    return g


def _skip(g, what):
    """True when this process is not in `g`: the call does nothing and returns None, as in Paddle."""
    if g is not None and not g.is_member():
        warnings.warn(f"{what}: this process (global rank {_group.rank}) is not in group {g.id} "
                      f"(global ranks {g.ranks}); nothing to do")
        return True
    return False


def _live(g):
    return g is not None and g._pg is not None


def _as_rank(rank, what, arg):
    """An int (numpy integers too), or a TypeError naming the argument."""
    if isinstance(rank, bool):
        raise TypeError(f"{what}: {arg} must be an int (a global rank), got bool")
    try:
        return operator.index(rank)
    except TypeError:
        raise TypeError(f"{what}: {arg} must be an int (a global rank), got {type(rank).__name__}") from None


def _group_rank(g, rank, what, arg):
    """Global rank `rank` (src/dst) as a rank of `g`, or a ValueError naming it."""
    rank = _as_rank(rank, what, arg)
    if g is None:
        if rank != 0:
            raise ValueError(f"{what}: {arg}={rank} is out of range for world size 1")
        return 0
    if g.id == 0:
        if not 0 <= rank < g.nranks:
            raise ValueError(f"{what}: {arg}={rank} is out of range for world size {g.nranks}")
        return rank
    r = g.get_group_rank(rank)
    if r < 0:
        raise ValueError(f"{what}: {arg}={rank} is not a rank of group {g.id} (global ranks {g.ranks}); "
                         f"{arg} is a global rank")
    return r


def _check_tensor(t, what, arg="tensor"):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{what}: {arg} must be an oar Tensor, got {type(t).__name__}")


def _check_local(g, t, what, arg="tensor"):
    """Type, device and contiguity, checked before the ranks compare their calls."""
    _check_tensor(t, what, arg)
    if _live(g):
        g._pg.check(t, what, arg)


def _op_value(op, what):
    if op not in _ABI_OP:
        raise ValueError(f"{what}: op must be an oar.distributed.ReduceOp value, got {op!r}")
    return _ABI_OP[op]


_OP_NAME = {ReduceOp.SUM: "sum", ReduceOp.MAX: "max", ReduceOp.MIN: "min", ReduceOp.PROD: "prod",
            ReduceOp.AVG: "avg"}


def _sig(what, t, extra=""):
    return f"{what} of {t.dtype.name} {list(t.shape)}{extra}"


def _agree(g, what, sig):
    """Compares this call with the other members' through the store (decision 63): on disagreement every
    member raises the same ValueError naming the call, the ranks and what each passed, before any data
    moves. Runs on the calls OAR_DISTRIBUTED_CHECK selects; every member counts calls alike."""
    if g._check == 0:
        return
    g._calls += 1
    n = g._calls
    if g._check == "auto" and n & (n - 1):
        return
    store = g._store
    base = f"{g._keys}/check/{n}/"
    store.set(base + str(g.rank), sig)
    timeout = _collective_timeout()
    end = time.monotonic() + timeout
    sigs = []
    for r in range(g.nranks):
        if r == g.rank:
            sigs.append(sig)
            continue
        try:
            store.wait([base + str(r)], max(end - time.monotonic(), 0.001))
        except RuntimeError:
            raise RuntimeError(f"{what}: global rank {g.ranks[r]} did not reach {what} within {timeout:g} s "
                               "(OAR_COLLECTIVE_TIMEOUT): did that process exit, or call another "
                               "collective?") from None
        sigs.append(store.get(base + str(r)).decode())
    # Every member has read this call's keys, so each has finished reading the previous call's: ours can go.
    if g._last_check_key is not None:
        store.delete_key(g._last_check_key)
    g._last_check_key = base + str(g.rank)
    if any(s != sig for s in sigs):
        by = {}
        for r, s in enumerate(sigs):
            by.setdefault(s, []).append(g.ranks[r])
        parts = [f"global rank{'s' if len(rs) > 1 else ''} {rs if len(rs) > 1 else rs[0]} called {s}"
                 for s, rs in by.items()]
        where = "" if g.id == 0 else f" in group {g.id}"
        raise ValueError(f"{what}: the ranks' calls disagree (collective {n}{where}): " + "; ".join(parts))


def _run(g, fn, *args):
    """Runs a communicator call; errors from a sub-group say that the ranks they name are group ranks."""
    try:
        return fn(*args)
    except (RuntimeError, ValueError) as e:
        if g is None or g.id == 0:
            raise
        raise type(e)(f"{e} [group {g.id}: its ranks 0..{g.nranks - 1} are global ranks {g.ranks}]") from None


def _finish(g, sync_op, keep=()):
    # sync_op=True waits for the stream: host reads of a cpu tensor (numpy()) do not wait for the cpu
    # plugin's communication worker (decision 60), so returning before it finishes would expose stale data.
    if sync_op is False:
        return _Task(g, keep)
    if _live(g):
        _run(g, g._pg.synchronize)
    return None


class _Task:
    """What sync_op=False returns: the call is queued on the current stream; wait() waits for it (and raises
    its failure), is_completed() asks whether the stream has passed it. `keep` holds temporaries the queued
    call reads until then."""

    def __init__(self, g, keep=()):
        self._g = g
        self._keep = keep
        self._event = None
        if _live(g):
            self._event = _C._Event(g.place, False)
            self._event.record()

    def wait(self):
        if _live(self._g):
            _run(self._g, self._g._pg.synchronize)
        self._keep = ()
        return True

    def is_completed(self):
        return self._event is None or self._event.query()


# ---- collectives ---------------------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """Reduces `tensor` over every rank of the group, in place (every rank gets the result)."""
    _check_tensor(tensor, "all_reduce")
    abi = _op_value(op, "all_reduce")
    g = _require("all_reduce", group)
    if _skip(g, "all_reduce"):
        return None
    if _live(g):
        _check_local(g, tensor, "all_reduce")
        _agree(g, "all_reduce", _sig("all_reduce", tensor, f" (op {_OP_NAME[op]})"))
        _run(g, g._pg.all_reduce, tensor, abi)
    return _finish(g, sync_op)


def broadcast(tensor, src=0, group=None, sync_op=True):
    """Copies global rank `src`'s `tensor` into every member's `tensor`, in place."""
    _check_tensor(tensor, "broadcast")
    g = _require("broadcast", group)
    if _skip(g, "broadcast"):
        return None
    root = _group_rank(g, src, "broadcast", "src")
    if _live(g):
        _check_local(g, tensor, "broadcast")
        _agree(g, "broadcast", _sig("broadcast", tensor, f" (src {src})"))
        _run(g, g._pg.broadcast, tensor, root)
    return _finish(g, sync_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, sync_op=True):
    """Reduces every member's `tensor` into global rank `dst`'s `tensor`; the others' stay as they were."""
    _check_tensor(tensor, "reduce")
    abi = _op_value(op, "reduce")
    g = _require("reduce", group)
    if _skip(g, "reduce"):
        return None
    root = _group_rank(g, dst, "reduce", "dst")
    if _live(g):
        _check_local(g, tensor, "reduce")
        _agree(g, "reduce", _sig("reduce", tensor, f" (op {_OP_NAME[op]}, dst {dst})"))
        _run(g, g._pg.reduce, tensor, abi, root)
    return _finish(g, sync_op)


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """Every member's `tensor`, in rank order: appended to an empty `tensor_list`, or copied into its
    `nranks` tensors (Paddle's)."""
    _check_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather: tensor_list must be a list, got {type(tensor_list).__name__}")
    g = _require("all_gather", group)
    if _skip(g, "all_gather"):
        return None
    n = g.nranks if g is not None else 1
    if tensor_list:
        if len(tensor_list) != n:
            raise ValueError(f"all_gather: tensor_list must be empty or hold {n} tensors (one per rank), "
                             f"got {len(tensor_list)}")
        for i, t in enumerate(tensor_list):
            _check_tensor(t, "all_gather", f"tensor_list[{i}]")
            if list(t.shape) != list(tensor.shape) or t.dtype != tensor.dtype:
                raise ValueError(f"all_gather: tensor_list[{i}] is {t.dtype.name} {list(t.shape)}, "
                                 f"tensor is {tensor.dtype.name} {list(tensor.shape)}")
    if not _live(g):
        if tensor_list:
            tensor_list[0].set_value(tensor)
        else:
            tensor_list.append(tensor.clone())
        return _finish(g, sync_op)
    from .. import empty
    _check_tensor(tensor, "all_gather")
    src = tensor if tensor.is_contiguous() else tensor.contiguous()
    g._pg.check(src, "all_gather", "tensor")
    _agree(g, "all_gather", _sig("all_gather", tensor))
    out = empty([n] + list(tensor.shape), dtype=tensor.dtype)
    _run(g, g._pg.all_gather, out, src)
    if tensor_list:
        for i in range(n):
            tensor_list[i].set_value(out[i])
    else:
        tensor_list.extend(out[i] for i in range(n))
    return _finish(g, sync_op, (src, out))


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group=None, sync_op=True):
    """`tensor` gets this rank's part of the reduction of every member's `tensor_list` (one tensor per rank)."""
    _check_tensor(tensor, "reduce_scatter")
    abi = _op_value(op, "reduce_scatter")
    g = _require("reduce_scatter", group)
    if _skip(g, "reduce_scatter"):
        return None
    n = g.nranks if g is not None else 1
    _check_list(tensor_list, n, tensor, "reduce_scatter", "tensor_list")
    if not _live(g):
        tensor.set_value(tensor_list[0])
        return _finish(g, sync_op)
    from .. import stack
    _check_local(g, tensor, "reduce_scatter")
    _agree(g, "reduce_scatter", _sig("reduce_scatter", tensor, f" (op {_OP_NAME[op]})"))
    src = stack(list(tensor_list))
    _run(g, g._pg.reduce_scatter, tensor, src, abi)
    return _finish(g, sync_op, (src,))


def _check_list(tensors, n, like, what, arg):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        got = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{what}: {arg} must hold {n} tensors (one per rank), got {got}")
    for i, t in enumerate(tensors):
        _check_tensor(t, what, f"{arg}[{i}]")
        if list(t.shape) != list(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"{what}: {arg}[{i}] is {t.dtype.name} {list(t.shape)}, expected "
                             f"{like.dtype.name} {list(like.shape)} (every tensor alike)")


def scatter(tensor, tensor_list=None, src=0, group=None, sync_op=True):
    """Global rank `src` sends `tensor_list[r]` to the member of group rank r, which gets it in `tensor`.
    The other ranks' `tensor_list` is ignored. Built from send/recv (the ABI has no scatter; decision 65)."""
    _check_tensor(tensor, "scatter")
    g = _require("scatter", group)
    if _skip(g, "scatter"):
        return None
    root = _group_rank(g, src, "scatter", "src")
    n = g.nranks if g is not None else 1
    at_root = (g.rank if g is not None else 0) == root
    if at_root:
        _check_list(tensor_list, n, tensor, "scatter", "tensor_list")
    if not _live(g):
        tensor.set_value(tensor_list[0])
        return _finish(g, sync_op)
    _check_local(g, tensor, "scatter")
    _agree(g, "scatter", _sig("scatter", tensor, f" (src {src})"))
    keep = ()
    if at_root:
        blocks = [t if t.is_contiguous() else t.contiguous() for t in tensor_list]
        keep = tuple(blocks)
        tensor.set_value(blocks[root])
    if g._pg.has("send"):
        if at_root:
            ops = [(True, blocks[r], r) for r in range(n) if r != root]
        else:
            ops = [(False, tensor, root)]
        _run(g, g._pg.p2p, ops, "scatter")
    else:  # the plugin has no send/recv: every rank gets the whole list and keeps its block
        from .. import empty, stack
        buf = stack(blocks) if at_root else empty([n] + list(tensor.shape), dtype=tensor.dtype)
        _run(g, g._pg.broadcast, buf, root)
        if not at_root:
            tensor.set_value(buf[g.rank])
        keep = keep + (buf,)
    return _finish(g, sync_op, keep)


def gather(tensor, gather_list=None, dst=0, group=None, sync_op=True):
    """Global rank `dst` gets every member's `tensor`, in rank order, in `gather_list` (an empty list is
    filled; the other ranks' `gather_list` is ignored). Built from send/recv (the ABI has no gather)."""
    _check_tensor(tensor, "gather")
    g = _require("gather", group)
    if _skip(g, "gather"):
        return None
    root = _group_rank(g, dst, "gather", "dst")
    n = g.nranks if g is not None else 1
    at_root = (g.rank if g is not None else 0) == root
    if at_root:
        if not isinstance(gather_list, list):
            raise TypeError(f"gather: gather_list must be a list on dst, got {type(gather_list).__name__}")
        if not gather_list:
            from .. import empty
            gather_list += [empty(list(tensor.shape), dtype=tensor.dtype) for _ in range(n)]
        _check_list(gather_list, n, tensor, "gather", "gather_list")
    if not _live(g):
        gather_list[0].set_value(tensor)
        return _finish(g, sync_op)
    src = tensor if tensor.is_contiguous() else tensor.contiguous()
    g._pg.check(src, "gather", "tensor")
    _agree(g, "gather", _sig("gather", tensor, f" (dst {dst})"))
    if at_root:
        gather_list[root].set_value(src)
    if g._pg.has("send"):
        if at_root:
            ops = [(False, gather_list[r], r) for r in range(n) if r != root]
        else:
            ops = [(True, src, root)]
        _run(g, g._pg.p2p, ops, "gather")
        return _finish(g, sync_op, (src,))
    # the plugin has no send/recv: an all_gather, of which dst keeps everything
    from .. import empty
    out = empty([n] + list(tensor.shape), dtype=tensor.dtype)
    _run(g, g._pg.all_gather, out, src)
    if at_root:
        for r in range(n):
            if r != root:
                gather_list[r].set_value(out[r])
    return _finish(g, sync_op, (src, out))


def alltoall(in_tensor_list, out_tensor_list, group=None, sync_op=True):
    """Member r sends `in_tensor_list[j]` to member j, which gets it in `out_tensor_list[r]`. Every tensor of
    the lists has one shape and dtype; an empty `out_tensor_list` is filled (Paddle's)."""
    g = _require("alltoall", group)
    if _skip(g, "alltoall"):
        return None
    n = g.nranks if g is not None else 1
    if not isinstance(in_tensor_list, (list, tuple)) or not in_tensor_list:
        raise ValueError("alltoall: in_tensor_list must be a non-empty list of tensors")
    _check_tensor(in_tensor_list[0], "alltoall", "in_tensor_list[0]")
    like = in_tensor_list[0]
    _check_list(in_tensor_list, n, like, "alltoall", "in_tensor_list")
    if not isinstance(out_tensor_list, list):
        raise TypeError(f"alltoall: out_tensor_list must be a list, got {type(out_tensor_list).__name__}")
    if out_tensor_list:
        _check_list(out_tensor_list, n, like, "alltoall", "out_tensor_list")
    if not _live(g):
        if out_tensor_list:
            out_tensor_list[0].set_value(like)
        else:
            out_tensor_list.append(like.clone())
        return _finish(g, sync_op)
    from .. import empty, stack
    _agree(g, "alltoall", _sig("alltoall", like, f" x {n}"))
    src = stack(list(in_tensor_list))
    out = empty(list(src.shape), dtype=src.dtype)
    _run(g, g._pg.all_to_all, out, src)
    if out_tensor_list:
        for i in range(n):
            out_tensor_list[i].set_value(out[i])
    else:
        out_tensor_list.extend(out[i] for i in range(n))
    return _finish(g, sync_op, (src, out))


def _splits(sizes, rows, n, what, arg):
    if sizes is None:
        if rows % n:
            raise ValueError(f"{what}: {arg} is None, so dimension 0 ({rows}) must divide by the group size {n}")
        return [rows // n] * n
    sizes = list(sizes)
    if len(sizes) != n or any(not isinstance(s, int) or s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"{what}: {arg}={sizes} must be {n} non-negative ints summing to dimension 0 ({rows})")
    return sizes


def alltoall_single(in_tensor, out_tensor, in_split_sizes=None, out_split_sizes=None, group=None, sync_op=True):
    """alltoall on one tensor split along dimension 0: block j of `in_tensor` goes to member j, block r of
    `out_tensor` comes from member r. Equal blocks by default; with split sizes, blocks of those rows."""
    _check_tensor(in_tensor, "alltoall_single", "in_tensor")
    _check_tensor(out_tensor, "alltoall_single", "out_tensor")
    g = _require("alltoall_single", group)
    if _skip(g, "alltoall_single"):
        return None
    n = g.nranks if g is not None else 1
    if in_tensor.dtype != out_tensor.dtype:
        raise ValueError(f"alltoall_single: in_tensor is {in_tensor.dtype.name}, out_tensor {out_tensor.dtype.name}")
    if not in_tensor.shape or not out_tensor.shape or list(in_tensor.shape[1:]) != list(out_tensor.shape[1:]):
        raise ValueError(f"alltoall_single: in_tensor {list(in_tensor.shape)} and out_tensor "
                         f"{list(out_tensor.shape)} must have a dimension 0 and the same other dimensions")
    ins = _splits(in_split_sizes, in_tensor.shape[0], n, "alltoall_single", "in_split_sizes")
    outs = _splits(out_split_sizes, out_tensor.shape[0], n, "alltoall_single", "out_split_sizes")
    if not _live(g):
        out_tensor.set_value(in_tensor)
        return _finish(g, sync_op)
    _check_local(g, in_tensor, "alltoall_single", "in_tensor")
    _check_local(g, out_tensor, "alltoall_single", "out_tensor")
    even = in_split_sizes is None and out_split_sizes is None
    _agree(g, "alltoall_single", f"alltoall_single of {in_tensor.dtype.name} rows of {list(in_tensor.shape[1:])}"
           + ("" if even else " (split sizes)"))
    if even:
        _run(g, g._pg.all_to_all, out_tensor, in_tensor)
        return _finish(g, sync_op)
    # Uneven blocks: one send and one receive per peer, posted together (rows of a contiguous tensor are
    # contiguous).
    io = [sum(ins[:r]) for r in range(n + 1)]
    oo = [sum(outs[:r]) for r in range(n + 1)]
    me = g.rank
    if outs[me] != ins[me]:
        raise ValueError(f"alltoall_single: this rank keeps {ins[me]} rows of in_tensor but out_split_sizes "
                         f"gives its own block {outs[me]}")
    if ins[me]:
        out_tensor[oo[me]:oo[me + 1]].set_value(in_tensor[io[me]:io[me + 1]])
    ops = []
    for r in range(n):
        if r != me:
            ops.append((True, in_tensor[io[r]:io[r + 1]], r))
            ops.append((False, out_tensor[oo[r]:oo[r + 1]], r))
    _run(g, g._pg.p2p, ops, "alltoall_single")
    return _finish(g, sync_op)


# ---- point to point ----------------------------------------------------------------------------------------
def _p2p_peer(g, peer, what, arg):
    r = _group_rank(g, peer, what, arg)
    if r == (g.rank if g is not None else 0):
        raise ValueError(f"{what}: {arg}={peer} is this process's own rank")
    return r


def send(tensor, dst=0, group=None, sync_op=True):
    """Sends `tensor` to global rank `dst` (which calls recv). With sync_op=True it returns when the peer
    has received it. Calls on one rank run in the order issued on its stream: two ranks that both send
    first wait for each other (use batch_isend_irecv, or alternate, as with NCCL)."""
    _check_tensor(tensor, "send")
    g = _require("send", group)
    if _skip(g, "send"):
        return None
    peer = _p2p_peer(g, dst, "send", "dst")
    _run(g, g._pg.p2p, [(True, tensor, peer)], "send")
    return _finish(g, sync_op)


def recv(tensor, src=0, group=None, sync_op=True):
    """Receives into `tensor` (in place) what global rank `src` sends."""
    _check_tensor(tensor, "recv")
    g = _require("recv", group)
    if _skip(g, "recv"):
        return None
    peer = _p2p_peer(g, src, "recv", "src")
    _run(g, g._pg.p2p, [(False, tensor, peer)], "recv")
    return _finish(g, sync_op)


def isend(tensor, dst, group=None):
    """send with sync_op=False: returns a task (wait(), is_completed())."""
    return send(tensor, dst, group, sync_op=False)


def irecv(tensor, src=None, group=None):
    """recv with sync_op=False: returns a task (wait(), is_completed())."""
    if src is None:
        raise ValueError("irecv: src must be given (a global rank)")
    return recv(tensor, src, group, sync_op=False)


class P2POp:
    """One message of batch_isend_irecv: op is oar.distributed.isend or irecv, peer a global rank."""

    def __init__(self, op, tensor, peer, group=None):
        if op not in (isend, irecv):
            raise ValueError("P2POp: op must be oar.distributed.isend or oar.distributed.irecv")
        _check_tensor(tensor, "P2POp")
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group


def batch_isend_irecv(p2p_op_list):
    """Posts every message of the list together (they cannot deadlock whatever their order on either side);
    returns one task per message."""
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list:
        raise ValueError("batch_isend_irecv: p2p_op_list must be a non-empty list of P2POp")
    for p in p2p_op_list:
        if not isinstance(p, P2POp):
            raise TypeError(f"batch_isend_irecv: every element must be a P2POp, got {type(p).__name__}")
    group = p2p_op_list[0].group
    if any(p.group is not group for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: every P2POp must use the same group")
    g = _require("batch_isend_irecv", group)
    if _skip(g, "batch_isend_irecv"):
        return []
    ops = [(p.op is isend, p.tensor, _p2p_peer(g, p.peer, "batch_isend_irecv", "peer")) for p in p2p_op_list]
    _run(g, g._pg.p2p, ops, "batch_isend_irecv")
    task = _Task(g)
    return [task] * len(ops)


# ---- objects (pickled into uint8 tensors) --------------------------------------------------------------------
def _to_bytes_tensor(data):
    import numpy as np
    from .. import to_tensor
    return to_tensor(np.frombuffer(data, dtype=np.uint8).copy())


def all_gather_object(object_list, obj, group=None):
    """Appends every member's picklable `obj`, in rank order, to `object_list`."""
    import numpy as np
    from .. import to_tensor
    if not isinstance(object_list, list):
        raise TypeError(f"all_gather_object: object_list must be a list, got {type(object_list).__name__}")
    g = _require("all_gather_object", group)
    if _skip(g, "all_gather_object"):
        return
    data = pickle.dumps(obj)
    sizes = []
    all_gather(sizes, to_tensor(np.array([len(data)], dtype=np.int64)), group)
    sizes = [int(s.numpy()[0]) for s in sizes]
    padded = data + bytes(max(sizes) - len(data))
    parts = []
    all_gather(parts, _to_bytes_tensor(padded), group)
    object_list.extend(pickle.loads(p.numpy().tobytes()[:k]) for p, k in zip(parts, sizes))


def broadcast_object_list(object_list, src, group=None):
    """Replaces every member's `object_list` items with global rank `src`'s (the lists have one length)."""
    import numpy as np
    from .. import to_tensor, zeros
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    g = _require("broadcast_object_list", group)
    if _skip(g, "broadcast_object_list"):
        return
    _group_rank(g, src, "broadcast_object_list", "src")
    at_src = get_rank() == src
    if not object_list:
        return
    if at_src:
        payloads = [pickle.dumps(o) for o in object_list]
        sizes = to_tensor(np.array([len(p) for p in payloads], dtype=np.int64))
    else:
        sizes = zeros([len(object_list)], dtype="int64")
    broadcast(sizes, src, group)  # a list length that differs across ranks fails here, naming both
    sizes = [int(k) for k in sizes.numpy()]
    data = _to_bytes_tensor(b"".join(payloads)) if at_src else zeros([sum(sizes)], dtype="uint8")
    broadcast(data, src, group)
    raw = data.numpy().tobytes()
    offset = 0
    for i, k in enumerate(sizes):
        object_list[i] = pickle.loads(raw[offset:offset + k])
        offset += k


def scatter_object_list(out_object_list, in_object_list=None, src=0, group=None):
    """Member r gets `in_object_list[r]` of global rank `src` as the only item of `out_object_list`."""
    import numpy as np
    from .. import to_tensor, zeros
    if not isinstance(out_object_list, list):
        raise TypeError(f"scatter_object_list: out_object_list must be a list, got {type(out_object_list).__name__}")
    g = _require("scatter_object_list", group)
    if _skip(g, "scatter_object_list"):
        return
    n = g.nranks if g is not None else 1
    at_src = get_rank() == src
    if at_src and (not isinstance(in_object_list, (list, tuple)) or len(in_object_list) != n):
        raise ValueError(f"scatter_object_list: in_object_list must hold {n} objects (one per rank)")
    payloads = [pickle.dumps(o) for o in in_object_list] if at_src else []
    size = to_tensor(np.array([max(map(len, payloads))], dtype=np.int64)) if at_src else zeros([1], dtype="int64")
    broadcast(size, src, group)
    width = int(size.numpy()[0])
    blocks = [_to_bytes_tensor(p + bytes(width - len(p))) for p in payloads]
    lens = [to_tensor(np.array([len(p)], dtype=np.int64)) for p in payloads]
    out = zeros([width], dtype="uint8")
    scatter(out, blocks if at_src else None, src, group)
    k = zeros([1], dtype="int64")
    scatter(k, lens if at_src else None, src, group)
    out_object_list.clear()
    out_object_list.append(pickle.loads(out.numpy().tobytes()[:int(k.numpy()[0])]))


# ---- synchronisation and teardown ------------------------------------------------------------------------------
def barrier(group=None):
    """Returns when every member has called barrier (and this rank's queued collectives are done)."""
    g = _require("barrier", group)
    if g is None or not g.is_member() or g._pg is None:
        return
    from .. import zeros
    t = zeros([1], dtype="float32")
    _run(g, g._pg.all_reduce, t, _ABI_OP[ReduceOp.SUM])
    _finish(g, True)


def wait(tensor, group=None, use_calc_stream=True):
    """Waits for the collectives queued on the current stream (Paddle's dist.wait)."""
    _check_tensor(tensor, "wait")
    g = _require("wait", group)
    if g is None or not g.is_member():
        return
    _finish(g, True)


def destroy_process_group(group=None):
    """Destroys `group`'s communicator; None (or the world group) destroys every group, after which
    init_parallel_env may run again (on the same store, which lives as long as the process)."""
    global _group, _groups
    g = _get_group(group, "destroy_process_group")
    if g is None:
        return
    if g.id != 0:
        del _groups[g.id]
        _close(g)
        return
    groups, _group, _groups = list(_groups.values()), None, {}
    had_store = g._pg is not None
    try:
        for sub in groups:
            if sub.id != 0:
                _close(sub)
        _close(g)
        if had_store:
            _leave(g)
    finally:
        if had_store:
            _C._store_set_global(None)


def _leave(g):
    """Rank 0 hosts the store, which a plugin may still read for a peer's last call (the sim plugin's data
    goes through it): rank 0 closes last, once every rank has come here, waiting at most
    min(OAR_COLLECTIVE_TIMEOUT, 60) s for a rank that exits without destroy_process_group."""
    key = f"{g._keys}/left"
    try:
        g._store.add(key, 1)
        if g.rank != 0:
            return
        end = time.monotonic() + min(_collective_timeout(), 60.0)
        while g._store.add(key, 0) < g.nranks and time.monotonic() < end:
            time.sleep(0.01)
    except RuntimeError:
        pass  # the store is gone already: nothing left to protect


def _close(g):
    if g._pg is not None:
        try:
            g._pg.synchronize()
        finally:
            g._pg.destroy()
            g._pg = None
