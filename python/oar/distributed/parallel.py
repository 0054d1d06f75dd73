"""oar.DataParallel: data-parallel training with bucketed gradient all-reduce overlapped with backward.

Paddle 2.x's paddle.DataParallel (docs/distributed.md, "DataParallel"). Each process holds a replica of the
layer; at wrap time rank 0's parameters and buffers are broadcast. During backward the gradients are
grouped into buckets (comm_buffer_size MB, the bucket that is reduced last last_comm_buffer_size MB); as
soon as every gradient of a bucket has been accumulated, the bucket is flattened into one buffer and its
all-reduce (average) is queued on a communication stream, so it runs while backward computes the rest.
When the backward's graph is done the reducer waits for the buckets and replaces each parameter's .grad
by its slice of the reduced buffer: after loss.backward() returns the gradients are the averages.
"""
import contextlib
import time
import weakref

from .. import _C
from ..autograd import no_grad
from ..nn import Layer
from . import collective

__all__ = ["DataParallel"]

_MB = 1024 * 1024


def _itemsize(dtype):
    import numpy as np
    name = str(dtype).replace("paddle.", "").replace("oar.", "")
    return {"bfloat16": 2, "float16": 2}.get(name) or np.dtype(name).itemsize


def _check_size(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"DataParallel: {name} must be a positive number of MB, got {value!r}")
    return int(value * _MB)


def _comm_stream(group):
    """The communication stream of `group`, shared by every DataParallel and SyncBatchNorm on it: one
    communicator's collectives must be issued in the same order on every rank, and one stream runs them
    in the order they were queued (two streams would race on the communicator)."""
    s = getattr(group, "_comm_stream", None)
    if s is None:
        from .. import device
        s = group._comm_stream = device.Stream(group.place)
    return s


def _all_reduce_on_comm_stream(tensor, group, op, wait):
    """Queues all_reduce of `tensor` on the group's communication stream after the current stream's work;
    with `wait`, returns when it (and everything queued before it there) is done."""
    from .. import device
    stream = _comm_stream(group)
    stream.wait_stream(device.current_stream(group.place))
    with device.stream_guard(stream):
        collective.all_reduce(tensor, op=op, group=group, sync_op=wait)


class _Bucket:
    """Parameters whose gradients are reduced together in one flat buffer (one dtype)."""

    def __init__(self, index, params):
        self.index = index
        self.params = params  # indices into the reducer's parameter list
        self.pending = len(params)
        self.buffer = None  # the flat, reduced-in-flight buffer of this step
        self.launched = False

    def reset(self):
        self.pending = len(self.params)
        self.buffer = None
        self.launched = False


class _Reducer:
    """Hooks on each trainable parameter; launches the buckets in order as they fill."""

    def __init__(self, params, names, group, bucket_bytes, last_bucket_bytes, find_unused):
        self.params = params
        self.names = names
        self.group = group
        self.find_unused = find_unused
        self.bucket_bytes, self.last_bucket_bytes = bucket_bytes, last_bucket_bytes
        self._set_buckets(range(len(params)))
        self.arrival = []  # the order gradients became ready in the first reduced backward
        self.rebuilt = False
        self.sync = True  # False inside no_sync()
        # A list to record (event, bucket, time.perf_counter()) into (the benchmark's overlap trace):
        # "launch" per bucket, "graph_done" when backward's graph ends, "reduced" when all buckets are.
        self.trace = None
        self.ready = [False] * len(params)
        self.in_backward = False
        self.next_bucket = 0
        from .. import device
        self._device = device
        self.stream = _comm_stream(group)
        me = weakref.ref(self)
        self.hook_ids = []
        for i, p in enumerate(params):
            def hook(i=i):
                r = me()
                if r is not None:
                    r._grad_ready(i)
            self.hook_ids.append(p._register_backward_hook(hook))

    def _set_buckets(self, order):
        """Buckets from `order` (parameter indices, forward order first; after the first step the reverse
        of the order gradients arrived in), as Paddle: one open bucket per dtype, the first closed one at
        last_bucket_bytes (its gradients arrive last in backward), the others at bucket_bytes; then
        reversed: the order in which backward fills them and in which every rank launches them."""
        groups, open_ = [], {}
        size = {}
        for i in order:
            p = self.params[i]
            key = str(p.dtype)
            open_.setdefault(key, []).append(i)
            size[key] = size.get(key, 0) + p.size * _itemsize(p.dtype)
            limit = self.last_bucket_bytes if not groups else self.bucket_bytes
            if size[key] >= limit:
                groups.append(open_.pop(key))
                size[key] = 0
        groups.extend(g for g in open_.values() if g)
        self.buckets = [_Bucket(k, g) for k, g in enumerate(reversed(groups))]
        self.bucket_of = {i: b for b in self.buckets for i in b.params}

    def _rebuild_buckets(self):
        """After the first reduced step: buckets follow the order gradients really arrived in (a layer's
        bias before its weight, layers used in another order than they were made), so each bucket fills
        early and its all-reduce overlaps more of backward (PyTorch's DDP does the same). Rank 0's order
        is broadcast so that every rank builds the same buckets."""
        from .. import to_tensor
        seen = set(self.arrival)
        order = self.arrival + [i for i in range(len(self.params)) if i not in seen]
        t = to_tensor(order, dtype="int64")
        stream = _comm_stream(self.group)
        with self._device.stream_guard(stream):
            collective.broadcast(t, src=self.group.ranks[0], group=self.group)
        order = [int(i) for i in t.numpy()]
        self._set_buckets(list(reversed(order)))
        self.rebuilt = True

    def remove_hooks(self):
        for p, h in zip(self.params, self.hook_ids):
            p._remove_backward_hook(h)
        self.hook_ids = []

    def reset(self):
        """Back to 'no gradient seen' (also after a backward that failed half-way)."""
        if self.in_backward and any(b.launched for b in self.buckets):
            self._wait()
        self.ready = [False] * len(self.params)
        for b in self.buckets:
            b.reset()
        self.next_bucket = 0
        self.in_backward = False

    # ---- during backward ----
    def _grad_ready(self, i):
        if not self.sync:
            return  # no_sync(): gradients only accumulate
        if not self.in_backward:
            self.in_backward = True
            _C._queue_backward_callback(self._finalize)
        if self.ready[i]:
            return  # a second accumulation in the same backward (shared leaf reached twice)
        self.ready[i] = True
        if not self.rebuilt:
            self.arrival.append(i)
        b = self.bucket_of[i]
        b.pending -= 1
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def _launch(self, b):
        from .. import concat, zeros
        with no_grad():
            parts = []
            for i in b.params:
                p = self.params[i]
                g = p.grad
                if g is None:  # unused this step (find_unused_parameters): zeros keep every rank in step
                    g = zeros(p.shape, dtype=p.dtype)
                parts.append(g.reshape([-1]))
            b.buffer = concat(parts) if len(parts) > 1 else parts[0].clone()
            # The communication stream first waits for the compute that made the buffer (a no-op on the
            # cpu, whose kernels are synchronous; an event on a gpu).
            _all_reduce_on_comm_stream(b.buffer, self.group, collective.ReduceOp.AVG, wait=False)
        b.launched = True
        if self.trace is not None:
            self.trace.append(("launch", b.index, time.perf_counter()))

    def _wait(self):
        with self._device.stream_guard(self.stream):
            self.group._pg.synchronize()

    def _finalize(self):
        if self.trace is not None:
            self.trace.append(("graph_done", -1, time.perf_counter()))
        missing = [i for i, r in enumerate(self.ready) if not r]
        if missing and not self.find_unused:
            names = ", ".join(self.names[i] for i in missing[:8]) + (" ..." if len(missing) > 8 else "")
            self.reset()
            raise RuntimeError(
                f"DataParallel: {len(missing)} parameter(s) received no gradient in this backward ({names}); "
                "every rank must reduce the same gradients. Pass find_unused_parameters=True to "
                "DataParallel when some parameters are not used in every step, or set stop_gradient=True "
                "on parameters that are never trained")
        for i in missing:
            self.bucket_of[i].pending -= 1
        while self.next_bucket < len(self.buckets):
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1
        used = None
        if self.find_unused:
            # Which parameters some rank used: one that none used keeps no gradient, as in one process
            # (an optimizer then skips it instead of applying zeros with momentum or weight decay).
            from .. import to_tensor
            used = to_tensor([1 if r else 0 for r in self.ready], dtype="int32")
            _all_reduce_on_comm_stream(used, self.group, collective.ReduceOp.MAX, wait=False)
        self._wait()
        if self.trace is not None:
            self.trace.append(("reduced", -1, time.perf_counter()))
        used = used.numpy() if used is not None else None
        with no_grad():
            for b in self.buckets:
                off = 0
                for i in b.params:
                    p = self.params[i]
                    n = p.size
                    if used is None or used[i] or p.grad is not None:
                        p._set_grad(b.buffer[off:off + n].reshape(p.shape))
                    off += n
        self.reset()
        if not self.rebuilt:
            self._rebuild_buckets()


class DataParallel(Layer):
    """Runs `layers` data-parallel over the processes of `group` (default: the world from
    init_parallel_env). Parameters and buffers are broadcast from rank 0 now; each backward averages the
    gradients across ranks, bucket by bucket, overlapped with the backward computation.

    comm_buffer_size / last_comm_buffer_size: bucket sizes in MB (Paddle's defaults 25 and 1; the last
    bucket reduced holds the first parameters). find_unused_parameters: parameters that get no gradient
    in a step are reduced as zeros (else such a parameter raises at the end of backward). strategy is
    accepted for compatibility (Paddle's ParallelStrategy) and ignored. With world size 1 it is a
    transparent wrapper.
    """

    def __init__(self, layers, strategy=None, comm_buffer_size=25, last_comm_buffer_size=1,
                 find_unused_parameters=False, group=None):
        super().__init__()
        if not isinstance(layers, Layer):
            raise TypeError(f"DataParallel: layers must be an oar.nn.Layer, got {type(layers).__name__}")
        if isinstance(layers, DataParallel):
            raise TypeError("DataParallel: layers is already a DataParallel")
        bucket = _check_size("comm_buffer_size", comm_buffer_size)
        last = _check_size("last_comm_buffer_size", last_comm_buffer_size)
        if not isinstance(find_unused_parameters, bool):
            raise TypeError(f"DataParallel: find_unused_parameters must be a bool, got {find_unused_parameters!r}")
        self._layers = layers
        self.find_unused_parameters = find_unused_parameters
        self.comm_buffer_size = comm_buffer_size
        self.last_comm_buffer_size = last_comm_buffer_size
        self._strategy = strategy
        g = collective._get_group(group, "DataParallel") if group is None else group
        if g is None and collective.ParallelEnv().world_size > 1:
            raise RuntimeError("DataParallel: the world size is > 1 but the parallel environment is not "
                               "initialized: call oar.distributed.init_parallel_env() first")
        self._group = g
        self._reducer = None
        if g is None or g._pg is None or g.nranks == 1:
            return  # one process: nothing to synchronize
        for name, sub in layers.named_sublayers(include_self=True):
            if getattr(sub, "_sparse", False) is True and hasattr(sub, "_num_embeddings"):
                # its weight gets a SelectedRows gradient, which the bucketed all-reduce cannot carry
                raise NotImplementedError(
                    "DataParallel: the Embedding '{}' has sparse=True, whose row-sparse gradients are not "
                    "all-reduced across processes; build it with sparse=False".format(name or type(sub).__name__))
        self._sync_params_buffers()
        named = [(n, p) for n, p in layers.named_parameters() if not p.stop_gradient]
        if named:
            self._reducer = _Reducer([p for _, p in named], [n for n, _ in named], g, bucket, last,
                                     find_unused_parameters)

    @no_grad()
    def _sync_params_buffers(self):
        """The group's first rank's parameters and buffers, one broadcast per dtype."""
        from .. import concat
        tensors = [p for p in self._layers.parameters()] + [b for b in self._layers.buffers() if b is not None]
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(str(t.dtype), []).append(t)
        for ts in by_dtype.values():
            flat = concat([t.reshape([-1]) for t in ts]) if len(ts) > 1 else ts[0].reshape([-1]).clone()
            collective.broadcast(flat, src=self._group.ranks[0], group=self._group)  # src is a global rank
            off = 0
            for t in ts:
                n = t.size
                _C._assign(t, flat[off:off + n].reshape(t.shape))
                off += n

    def forward(self, *inputs, **kwargs):
        if self._reducer is not None and self._reducer.in_backward:
            self._reducer.reset()  # the previous backward failed half-way
        return self._layers(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Within the block, backward only accumulates gradients locally; the next backward outside it
        averages the accumulated sums across ranks (gradient accumulation without extra communication)."""
        r = self._reducer
        prev = r.sync if r is not None else None
        if r is not None:
            r.sync = False
        try:
            yield
        finally:
            if r is not None:
                r.sync = prev

    def scale_loss(self, loss):
        """Paddle 2.x compatibility: the loss is returned unchanged (gradients are averaged)."""
        return loss

    def apply_collective_grads(self):
        """Paddle 2.x compatibility: the gradients are already averaged by backward."""

    # Paddle keeps the wrapped layer's keys (no "_layers." prefix).
    def state_dict(self, *args, **kwargs):
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, state_dict, use_structured_name=True):
        return self._layers.set_state_dict(state_dict, use_structured_name=use_structured_name)

    set_dict = set_state_dict
    load_dict = set_state_dict

    def __del__(self):
        r = self.__dict__.get("_reducer")
        if r is not None:
            try:
                r.remove_hooks()
            except Exception:
                pass
