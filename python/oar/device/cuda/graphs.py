"""oar.device.cuda.graphs: Paddle's paddle.device.cuda.graphs. CUDAGraph records the work a device's current
stream is given between capture_begin() and capture_end() and replays it (the same kernels on the same
device memory); wrap_cuda_graph captures a to_static function's programs. It works on any device whose
plugin implements graph capture (ABI 1.3): a GPU, or a custom device such as the sim ("sim:0").
docs/device_graph.md has the semantics and what is refused while capturing.
"""
from ... import _C
from ...optimizer import optimizer as _optimizer

__all__ = ["CUDAGraph", "wrap_cuda_graph", "is_cuda_graph_supported"]

ALL_MODES = ["global", "thread_local", "relaxed"]


def is_cuda_graph_supported():
    """True when a GPU is usable and its plugin implements graph capture."""
    return _C.device_count("gpu") > 0 and _C._graph_supported("gpu:0")


def _default_place():
    cur = _C._current_place()
    if not cur.is_cpu_place():
        return cur  # the current device (a gpu, or a custom device such as sim)
    if _C.device_count("gpu") == 0:
        raise RuntimeError("CUDAGraph: no place given and no usable GPU ({}); pass place= or set a device whose "
                           "plugin captures graphs (e.g. oar.set_device('sim:0'))".format(
                               _C._device_type_refusal("gpu")))
    return _C.Place("gpu:0")


def _check_mode(api, mode):
    if mode not in ALL_MODES:
        raise ValueError("{}: mode must be one of {}, got {!r}".format(api, ALL_MODES, mode))


class CUDAGraph:
    """CUDAGraph(place=None, mode="thread_local"): capture_begin(), capture_end(), replay(), reset().

    Tensors created on the device while it captures come from the graph's own memory pool, so their
    addresses stay valid for every replay; each replay overwrites them (read results after replay()).
    Inputs are the tensors the captured ops read: write new values into them in place (x.copy_(new)) before
    replay(). `mode` is accepted for Paddle's API; the capture always covers the device's current stream."""

    def __init__(self, place=None, mode="thread_local"):
        _check_mode("CUDAGraph", mode)
        self._place = _C._to_place(place) if place is not None else _default_place()
        self._mode = mode
        self._graph = _C._DeviceGraph(self._place)
        self._steps = []  # (optimizer, learning rates) of optimizer steps captured (replay checks them)

    def capture_begin(self):
        self._graph.capture_begin()
        _optimizer._CAPTURE_WATCH.append(self)

    def capture_end(self):
        try:
            self._graph.capture_end()
        finally:
            if self in _optimizer._CAPTURE_WATCH:
                _optimizer._CAPTURE_WATCH.remove(self)

    def replay(self):
        for opt, lrs in self._steps:
            now = _optimizer._step_rates(opt)
            if now != lrs:
                raise RuntimeError(
                    "CUDAGraph.replay: an optimizer step captured in this graph used learning rate(s) {} but the "
                    "optimizer's are now {} (an LRScheduler stepped or set_lr was called); the graph would keep "
                    "applying the captured rate. Keep the optimizer step outside the graph (as to_static "
                    "capture does), or reset() and capture again".format(lrs, now))
        self._graph.replay()

    def reset(self):
        self._graph.reset()
        self._steps = []

    def print_to_dot_files(self, dirname, flags=None):
        raise NotImplementedError(
            "CUDAGraph.print_to_dot_files: the device ABI hands the core an opaque graph (OarGraph), so oar has "
            "no node list to draw; on a GPU, cudaGraphDebugDotPrint of the CUDA plugin's graph would be needed")

    # oar's own
    @property
    def place(self):
        return self._place

    def pool_stats(self):
        """The graph's memory pool: allocated / reserved bytes (and peaks)."""
        return self._graph.pool_stats()

    def _note_optimizer(self, opt):  # Optimizer.step while this graph captures
        self._steps.append((opt, _optimizer._step_rates(opt)))


def wrap_cuda_graph(function, mode="thread_local", memory_pool="default"):
    """to_static(function) whose programs are captured into a graph on their first run and replayed after
    (Paddle's dynamic-mode wrap_cuda_graph). Each call copies its inputs into the graph's input buffers and
    returns copies of the outputs; in training the backward program is captured and replayed too, while the
    optimizer step stays outside. memory_pool ("default", "new", or another wrapped function) is accepted for
    Paddle's API; every graph gets a private pool."""
    _check_mode("wrap_cuda_graph", mode)
    if not (memory_pool in ("default", "new") or hasattr(memory_pool, "forward") or
            hasattr(memory_pool, "_cuda_graph_capture_mode")):
        raise ValueError("wrap_cuda_graph: memory_pool must be 'default', 'new' or a function wrapped before, "
                         "got {!r}".format(memory_pool))
    from ...jit import to_static
    from ...nn import Layer
    new_function = to_static(function)
    mock = new_function.forward if isinstance(function, Layer) else new_function
    mock._cuda_graph_capture_mode = mode
    mock._cuda_graph_pool_id = 0
    return new_function
