"""oar.device: choosing the device and asking about devices (Paddle's paddle.device), streams and events
on any device type (Paddle 2.5+'s paddle.device.Stream / Event / stream_guard), and which backends this
process has (is_compiled_with_*). oar.device.cuda is the gpu flavour of the same. See docs/python.md,
"Devices, streams and events"."""
import contextlib as _contextlib
import re as _re

from .. import _C
from .._C import (get_all_custom_device_type, get_all_device_type, get_available_device, get_device,
                  max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved,
                  reset_max_memory_allocated, reset_max_memory_reserved, set_device, synchronize, empty_cache)

__all__ = ["set_device", "get_device", "get_all_device_type", "get_all_custom_device_type", "get_available_device",
           "synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_max_memory_allocated", "reset_max_memory_reserved", "empty_cache", "Stream", "Event",
           "current_stream", "default_stream", "set_stream", "stream_guard", "is_compiled_with_cuda",
           "is_compiled_with_rocm", "is_compiled_with_xpu", "is_compiled_with_ipu", "is_compiled_with_cinn",
           "is_compiled_with_custom_device", "is_compiled_with_distribute", "get_cudnn_version", "cuda"]


# ---- which backends this process has -------------------------------------------------------------
# oar is one build for every backend: "compiled with X" means "X's plugin is loaded and has a device"
# (docs/decisions.md), so code that tests it and then uses CUDAPlace(0) never fails on a machine
# where the gpu plugin is installed but refused (no driver, no GPU).

def is_compiled_with_cuda():
    """True when a gpu plugin is loaded and found at least one GPU, so CUDAPlace(0) works."""
    return _C.device_count("gpu") > 0


def _gpu_plugin_name():
    for r in _C.plugin_records():
        if r.loaded and r.device_type == "gpu":
            return r.name
    return None


def is_compiled_with_rocm():
    """True when the loaded gpu plugin is an AMD one (ROCm/HIP); such a plugin provides device type gpu."""
    return is_compiled_with_cuda() and _gpu_plugin_name() in ("rocm", "hip")


def is_compiled_with_xpu():
    return _C.device_count("xpu") > 0


def is_compiled_with_ipu():
    return _C.device_count("ipu") > 0


def is_compiled_with_cinn():
    """oar has no CINN compiler."""
    return False


def is_compiled_with_custom_device(device_type):
    """True when a plugin provides the custom device type `device_type` (e.g. 'sim')."""
    return device_type in get_all_custom_device_type()


def is_compiled_with_distribute():
    """oar.distributed is part of every oar (collectives come from the plugins, the store from the core)."""
    return True


def get_cudnn_version():
    """cuDNN's version as Paddle gives it (9.1.0 -> 90100), from the gpu plugin's vendor versions; None
    without a usable gpu plugin."""
    for r in _C.plugin_records():
        if r.loaded and r.device_type == "gpu":
            m = _re.search(r"cudnn[ /:]*(\d+)\.(\d+)(?:\.(\d+))?", r.vendor_versions, _re.IGNORECASE)
            if m:
                major, minor, patch = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
                return major * (10000 if major >= 9 else 1000) + minor * 100 + patch
    return None


# ---- streams and events --------------------------------------------------------------------------
# Paddle's priorities: 1 high, 2 normal. The ABI's: 0 normal, larger is more urgent (plugins clamp).
_PRIORITIES = {1: 1, 2: 0}


def _place(device):
    """A device argument (None: the current device) as a Place."""
    return _C._to_place(device)


def _priority(priority):
    if priority is None:
        return 0
    if isinstance(priority, bool) or priority not in _PRIORITIES:
        raise ValueError("Stream: priority must be 1 (high) or 2 (normal), got {!r}".format(priority))
    return _PRIORITIES[priority]


class Stream:
    """A stream of a device: work queued on it runs in order; different streams may overlap.

    Stream(device=None, priority=2): a new stream on `device` (None: the current device); priority 1 is
    high, 2 normal. Work goes to a stream when it is current (set_stream, stream_guard); events order
    streams against each other (wait_event, wait_stream).
    """

    def __init__(self, device=None, priority=2, stream_base=None):
        if stream_base is not None:
            if not isinstance(stream_base, _C._Stream):
                raise TypeError("Stream: stream_base must be an oar._C._Stream, got {}".format(
                    type(stream_base).__name__))
            self.stream_base = stream_base
        else:
            self.stream_base = _C._Stream(_place(device), _priority(priority))
        self.device = self.stream_base.place

    @property
    def place(self):
        return self.device

    @property
    def stream_handle(self):
        """The plugin's stream handle as an int (a cudaStream_t on the gpu plugin); 0 for a synchronous device."""
        return self.stream_base.handle

    def query(self):
        """True when all work queued on this stream is done."""
        return self.stream_base.query()

    def synchronize(self):
        """Waits until all work queued on this stream is done."""
        self.stream_base.synchronize()

    def wait_event(self, event):
        """Work queued on this stream from now on waits for `event` (its latest record)."""
        if not isinstance(event, Event):
            raise TypeError("Stream.wait_event: expected an oar.device.Event, got {}".format(type(event).__name__))
        self.stream_base.wait(event.event_base)

    def wait_stream(self, stream):
        """Work queued on this stream from now on waits for all work queued on `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError("Stream.wait_stream: expected an oar.device.Stream, got {}".format(type(stream).__name__))
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records `event` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event(self.device)
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self.device == other.device and self.stream_handle == other.stream_handle

    def __hash__(self):
        return hash((str(self.device), self.stream_handle))

    def __repr__(self):
        return "<oar.device.Stream device={} handle={:#x}>".format(str(self.device)[6:-1], self.stream_handle)


class Event:
    """A marker in a stream's work: query or wait for it, order another stream after it, time between two.

    Event(device=None, enable_timing=False, blocking=False, interprocess=False). `blocking` is accepted
    and has no effect (synchronize always blocks the calling thread); interprocess events are not
    supported.
    """

    def __init__(self, device=None, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("Event: interprocess events are not supported by oar")
        self.event_base = _C._Event(_place(device), bool(enable_timing))
        self.device = self.event_base.place
        self.enable_timing = bool(enable_timing)

    @property
    def place(self):
        return self.device

    def record(self, stream=None):
        """Records the event on `stream` (None: the device's current stream)."""
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError("Event.record: expected an oar.device.Stream or None, got {}".format(type(stream).__name__))
        self.event_base.record(None if stream is None else stream.stream_base)

    def query(self):
        """True when the work before the latest record is done (an event never recorded counts as done)."""
        return self.event_base.query()

    def synchronize(self):
        """Waits until the work before the latest record is done."""
        self.event_base.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to `end_event`; both recorded, complete and made with enable_timing."""
        if not isinstance(end_event, Event):
            raise TypeError("Event.elapsed_time: expected an oar.device.Event, got {}".format(type(end_event).__name__))
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Event.elapsed_time: both events must be created with enable_timing=True")
        return self.event_base.elapsed_ms(end_event.event_base)

    def __repr__(self):
        return "<oar.device.Event device={}>".format(str(self.device)[6:-1])


# The Stream objects made current by set_stream, by device: they keep the plugin's stream alive while
# the device queues work on it, and current_stream returns the very object that was set.
_current = {}


def current_stream(device=None):
    """The stream work on `device` (None: the current device) is queued on now."""
    place = _place(device)
    base = _C._Stream.current(place)
    s = _current.get(str(place))
    if s is not None and s.stream_handle == base.handle:
        return s
    return Stream(stream_base=base)


def default_stream(device=None):
    """The device's own stream, current unless set_stream chose another."""
    return Stream(stream_base=_C._Stream.default(_place(device)))


def set_stream(stream):
    """Makes `stream` current on its device (for every thread, as Paddle) and returns the previous one.

    Tensors made while it is current are allocated for it and kernels run on it; order it against other
    streams with events (wait_stream) before it reads their results, as in Paddle and CUDA."""
    if not isinstance(stream, Stream):
        raise TypeError("set_stream: expected an oar.device.Stream, got {}".format(type(stream).__name__))
    prev = current_stream(stream.device)
    _C._set_current_stream(stream.stream_base)
    key = str(stream.device)
    if stream.stream_handle == _C._Stream.default(stream.device).handle:
        _current.pop(key, None)
    else:
        _current[key] = stream
    return prev


@_contextlib.contextmanager
def stream_guard(stream=None):
    """Within the block, `stream` is current on its device and that device is the current device; both
    are restored on exit. None: nothing changes."""
    if stream is None:
        yield
        return
    if not isinstance(stream, Stream):
        raise TypeError("stream_guard: expected an oar.device.Stream or None, got {}".format(type(stream).__name__))
    prev_place = _C._current_place()
    switch = prev_place != stream.device
    if switch:
        set_device(stream.device)
    prev = set_stream(stream)
    try:
        yield
    finally:
        set_stream(prev)
        if switch:
            set_device(prev_place)


from . import cuda  # noqa: E402,F401  (after Stream and Event: cuda's classes derive from them)
