"""oar.device.cuda: Paddle's paddle.device.cuda, the gpu flavour of oar.device: device count, streams,
events, synchronize, memory statistics and device properties of the devices of type "gpu" (the oar-cuda
plugin).

A `device` argument is None (the current device if it is a gpu, else gpu:0), an int (gpu:<int>; a negative
one means None), a string ('gpu', 'gpu:1') or a CUDAPlace. Without a usable GPU device_count() is 0,
empty_cache() does nothing, and every call that needs a GPU raises RuntimeError with the loader's reason
(the gpu plugin's refusal, e.g. "CUDA driver version is insufficient for CUDA runtime version").
"""
import collections as _collections

from ... import _C
from .. import Event as _Event
from .. import Stream as _Stream
from .. import current_stream as _current_stream
from .. import stream_guard as _stream_guard

__all__ = ["device_count", "current_stream", "synchronize", "Stream", "Event", "stream_guard", "empty_cache",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_max_memory_allocated", "reset_max_memory_reserved", "get_device_properties", "get_device_name",
           "get_device_capability"]


def device_count():
    """The number of usable GPUs (0 when no gpu plugin is loaded)."""
    return _C.device_count("gpu")


def unavailable_reason():
    """Why there is no usable GPU (the loader's record of the gpu plugin), or None when there is one."""
    return None if device_count() > 0 else _C._device_type_refusal("gpu")


def _gpu(device, api):
    """The gpu Place `device` names; RuntimeError with the plugin's refusal when there is no GPU."""
    if device_count() == 0:
        raise RuntimeError("oar.device.cuda.{}: no usable GPU: {}".format(api, _C._device_type_refusal("gpu")))
    if device is None or (isinstance(device, int) and not isinstance(device, bool) and device < 0):
        cur = _C._current_place()
        return _C.Place("gpu:{}".format(cur.get_device_id() if cur.is_gpu_place() else 0))
    if isinstance(device, int) and not isinstance(device, bool):
        return _C.Place("gpu:{}".format(device))
    place = _C._to_place(device)
    if not place.is_gpu_place():
        raise ValueError("oar.device.cuda.{}: expected a gpu device (an int, 'gpu:N' or CUDAPlace), got {!r}".format(
            api, device))
    return place


class Stream(_Stream):
    """A CUDA stream: Stream(device=None, priority=None); priority 1 is high, 2 (None) normal."""

    def __init__(self, device=None, priority=None, stream_base=None):
        if stream_base is not None:
            super().__init__(stream_base=stream_base)
        else:
            super().__init__(_gpu(device, "Stream"), 2 if priority is None else priority)

    @property
    def cuda_stream(self):
        """The cudaStream_t as an int."""
        return self.stream_handle


class Event(_Event):
    """A CUDA event on the current gpu device: Event(enable_timing=False, blocking=False, interprocess=False)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(_gpu(None, "Event"), enable_timing, blocking, interprocess)


def current_stream(device=None):
    """The current stream of a gpu device."""
    return Stream(stream_base=_current_stream(_gpu(device, "current_stream")).stream_base)


def stream_guard(stream):
    """Makes `stream` (a gpu stream, or None: nothing changes) current within the block."""
    return _stream_guard(stream)


def synchronize(device=None):
    """Waits for all work on a gpu device."""
    _C.synchronize(_gpu(device, "synchronize"))


def empty_cache():
    """Returns the unused memory the pool holds on every opened GPU to the driver; nothing without a GPU."""
    for i in range(device_count()):
        _C.empty_cache("gpu:{}".format(i))


def memory_allocated(device=None):
    """Bytes of tensor memory in use on a gpu device."""
    return _C.memory_allocated(_gpu(device, "memory_allocated"))


def max_memory_allocated(device=None):
    return _C.max_memory_allocated(_gpu(device, "max_memory_allocated"))


def memory_reserved(device=None):
    """Bytes the pool holds on a gpu device (in use or cached)."""
    return _C.memory_reserved(_gpu(device, "memory_reserved"))


def max_memory_reserved(device=None):
    return _C.max_memory_reserved(_gpu(device, "max_memory_reserved"))


def reset_max_memory_allocated(device=None):
    _C.reset_max_memory_allocated(_gpu(device, "reset_max_memory_allocated"))


def reset_max_memory_reserved(device=None):
    _C.reset_max_memory_reserved(_gpu(device, "reset_max_memory_reserved"))


_gpuDeviceProperties = _collections.namedtuple(
    "_gpuDeviceProperties", ["name", "major", "minor", "total_memory", "multi_processor_count"])


def get_device_properties(device=None):
    """(name, major, minor, total_memory, multi_processor_count) of a gpu device. major/minor (the compute
    capability) are None when the plugin does not report them."""
    p = _C.device_properties(_gpu(device, "get_device_properties"))
    major, minor = p.get("compute_capability", (None, None))
    return _gpuDeviceProperties(p["name"], major, minor, p["total_memory"], p["compute_units"])


def get_device_name(device=None):
    return _C.device_properties(_gpu(device, "get_device_name"))["name"]


def get_device_capability(device=None):
    """(major, minor) compute capability of a gpu device."""
    p = _C.device_properties(_gpu(device, "get_device_capability"))
    if "compute_capability" not in p:
        raise NotImplementedError("oar.device.cuda.get_device_capability: the gpu plugin '{}' does not report "
                                  "the compute capability".format(p["plugin"]))
    return tuple(p["compute_capability"])


def __getattr__(name):  # oar.device.cuda.graphs, imported on first use (it imports oar.optimizer)
    if name == "graphs":
        import importlib
        return importlib.import_module(__name__ + ".graphs")
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))
