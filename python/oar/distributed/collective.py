"""The default process group and the collectives on it (Paddle 2.x's paddle.distributed API).

One communicator per process, from the current device's plugin (Gloo on cpu, NCCL on gpu), bootstrapped
through the core's TCPStore hosted by rank 0 (docs/distributed.md). Collectives run in place on oar tensors,
on the device's current stream; with world size 1 (no launcher environment) they are identities.
"""
import os

from .. import _C

__all__ = ["ReduceOp", "ParallelEnv", "init_parallel_env", "is_initialized", "get_rank", "get_world_size",
           "get_backend", "all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier",
           "destroy_process_group", "new_group"]

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
    """A process group: the world (the only group so far)."""

    def __init__(self, rank, world_size, backend, place, pg=None, store=None):
        self.rank = rank
        self.nranks = world_size
        self.world_size = world_size
        self.backend = backend
        self.place = place
        self.id = 0
        self.ranks = list(range(world_size))
        self._pg = pg  # None with world size 1: collectives are identities
        self._store = store

    def get_group_rank(self, rank):
        return rank if 0 <= rank < self.nranks else -1

    def __repr__(self):
        return f"Group(rank={self.rank}, nranks={self.nranks}, backend={self.backend!r}, place={self.place})"


_group = None


def _backend_of(device_type, plugin):
    if device_type == "cpu":
        return "gloo"
    if device_type == "gpu":
        return "nccl"
    return plugin


def init_parallel_env():
    """Makes the default process group from the launcher's environment (`PADDLE_TRAINER_ID`,
    `PADDLE_TRAINERS_NUM`, `PADDLE_MASTER` / `PADDLE_TRAINER_ENDPOINTS`, or `RANK`, `WORLD_SIZE`,
    `MASTER_ADDR`, `MASTER_PORT`) on the current device. Rank 0 hosts the store on the master address.
    Returns the group. Calling it twice is an error (destroy_process_group first)."""
    global _group
    if _group is not None:
        raise RuntimeError("init_parallel_env: the parallel environment is already initialized "
                           "(call oar.distributed.destroy_process_group() first)")
    env = ParallelEnv()
    rank, world = env.rank, env.world_size
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"init_parallel_env: rank {rank} is out of range for world size {world} "
                         "(PADDLE_TRAINER_ID/RANK, PADDLE_TRAINERS_NUM/WORLD_SIZE)")
    dtype, dev = env.device_type, env.device_id
    place = _C.get_device()
    if world == 1:
        _group = Group(0, 1, _backend_of(dtype, dtype), place)
        return _group
    host, port = _master()
    timeout = _env_int(["OAR_STORE_TIMEOUT"], 900)
    store = _C.TCPStore(host, port, rank == 0, world, timeout)
    pg = _C._ProcessGroup(dtype, dev, world, rank, store, "oar/pg/world/unique_id")
    _group = Group(rank, world, _backend_of(dtype, pg.plugin), place, pg, store)
    return _group


def is_initialized():
    """Whether init_parallel_env has made the default group (and it was not destroyed)."""
    return _group is not None


def _get_group(group, what):
    if group is not None and group is not _group:
        raise ValueError(f"{what}: only the default group exists so far (group=None)")
    return _group


def get_rank(group=None):
    """This process's rank (0 before init_parallel_env without a launcher environment)."""
    g = _get_group(group, "get_rank")
    return g.rank if g is not None else ParallelEnv().rank


def get_world_size(group=None):
    """The number of processes of the job (1 without a launcher environment)."""
    g = _get_group(group, "get_world_size")
    return g.nranks if g is not None else ParallelEnv().world_size


def get_backend(group=None):
    g = _get_group(group, "get_backend")
    if g is None:
        raise RuntimeError("get_backend: call oar.distributed.init_parallel_env() first")
    return g.backend


def new_group(ranks=None, backend=None, timeout=None):
    """Only the world group exists so far: `ranks` must be None or every rank."""
    g = _require("new_group", None)
    if ranks is not None and sorted(ranks) != g.ranks:
        raise NotImplementedError("new_group: sub-groups are not implemented yet; only the world group")
    return g


def _require(what, group):
    g = _get_group(group, what)
    if g is None:
        # Paddle lets a single process run collectives without init: they are identities.
        if ParallelEnv().world_size > 1:
            raise RuntimeError(f"{what}: call oar.distributed.init_parallel_env() first")
        return None
    return g


def _check_tensor(t, what, arg="tensor"):
    if not isinstance(t, _C.Tensor):
        raise TypeError(f"{what}: {arg} must be an oar Tensor, got {type(t).__name__}")


def _op_value(op, what):
    if op not in _ABI_OP:
        raise ValueError(f"{what}: op must be an oar.distributed.ReduceOp value, got {op!r}")
    return _ABI_OP[op]


def _finish(g, sync_op):
    # sync_op=True waits for the stream: host reads of a cpu tensor (numpy()) do not wait for the cpu
    # plugin's communication worker (decision 60), so returning before it finishes would expose stale data.
    if sync_op is False:
        return _Task(g)
    if g is not None and g._pg is not None:
        g._pg.synchronize()
    return None


class _Task:
    """What sync_op=False returns: wait() waits for the collective (it is queued on the current stream)."""

    def __init__(self, g):
        self._g = g

    def wait(self):
        if self._g is not None and self._g._pg is not None:
            self._g._pg.synchronize()
        return True

    def is_completed(self):
        return True


def all_reduce(tensor, op=ReduceOp.SUM, group=None, sync_op=True):
    """Reduces `tensor` over every rank, in place (every rank gets the result)."""
    _check_tensor(tensor, "all_reduce")
    abi = _op_value(op, "all_reduce")
    g = _require("all_reduce", group)
    if g is not None and g._pg is not None:
        g._pg.all_reduce(tensor, abi)
    return _finish(g, sync_op)


def broadcast(tensor, src=0, group=None, sync_op=True):
    """Copies rank `src`'s `tensor` into every rank's `tensor`, in place."""
    _check_tensor(tensor, "broadcast")
    g = _require("broadcast", group)
    world = g.nranks if g is not None else 1
    if not isinstance(src, int) or not 0 <= src < world:
        raise ValueError(f"broadcast: src={src!r} is out of range for world size {world}")
    if g is not None and g._pg is not None:
        g._pg.broadcast(tensor, src)
    return _finish(g, sync_op)


def all_gather(tensor_list, tensor, group=None, sync_op=True):
    """Appends every rank's `tensor` (rank order) to the list `tensor_list`."""
    _check_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, list):
        raise TypeError(f"all_gather: tensor_list must be a list, got {type(tensor_list).__name__}")
    g = _require("all_gather", group)
    if g is None or g._pg is None:
        tensor_list.append(tensor.clone())
        return _finish(g, sync_op)
    from .. import empty
    src = tensor if tensor.is_contiguous() else tensor.contiguous()
    out = empty([g.nranks] + list(tensor.shape), dtype=tensor.dtype)
    g._pg.all_gather(out, src)
    tensor_list.extend(out[i] for i in range(g.nranks))
    return _finish(g, sync_op)


def reduce_scatter(tensor, tensor_list, op=ReduceOp.SUM, group=None, sync_op=True):
    """`tensor` gets this rank's part of the reduction of every rank's `tensor_list` (one tensor per rank)."""
    _check_tensor(tensor, "reduce_scatter")
    abi = _op_value(op, "reduce_scatter")
    g = _require("reduce_scatter", group)
    world = g.nranks if g is not None else 1
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != world:
        raise ValueError(f"reduce_scatter: tensor_list must hold {world} tensors (one per rank)")
    for t in tensor_list:
        _check_tensor(t, "reduce_scatter", "tensor_list[i]")
        if list(t.shape) != list(tensor.shape) or t.dtype != tensor.dtype:
            raise ValueError("reduce_scatter: every tensor of tensor_list must have tensor's shape and dtype")
    if g is None or g._pg is None:
        tensor.copy_(tensor_list[0], False)
        return _finish(g, sync_op)
    from .. import stack
    src = stack(list(tensor_list))
    g._pg.reduce_scatter(tensor, src, abi)
    return _finish(g, sync_op)


def barrier(group=None):
    """Returns when every rank has called barrier (and this rank's queued collectives are done)."""
    g = _require("barrier", group)
    if g is None or g._pg is None:
        return
    from .. import zeros
    t = zeros([1], dtype="float32")
    g._pg.all_reduce(t, _ABI_OP[ReduceOp.SUM])
    _finish(g, True)


def destroy_process_group(group=None):
    """Destroys the default group's communicator and its store connection; init_parallel_env may run again."""
    global _group
    g = _get_group(group, "destroy_process_group")
    if g is None:
        return
    _group = None
    if g._pg is not None:
        try:
            g._pg.synchronize()
        finally:
            g._pg.destroy()
            _C._store_set_global(None)
