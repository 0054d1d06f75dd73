"""The Profiler, its scheduler, RecordEvent, the trace export and the summary tables."""
import contextlib
import datetime
import enum
import json
import os
import socket
import time

from .. import _C

__all__ = []


class ProfilerState(enum.Enum):
    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3  # the last step of a recording period: its result is returned after it


class ProfilerTarget(enum.Enum):
    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


class SortedKeys(enum.Enum):
    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


class SummaryView(enum.Enum):
    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8


def make_scheduler(*, closed, ready, record, repeat=0, skip_first=0):
    """The state of each step: `skip_first` steps closed, then periods of `closed` closed, `ready` ready
    and `record` recorded steps (the last one RECORD_AND_RETURN), `repeat` times (0: for ever)."""
    for name, v in (("closed", closed), ("ready", ready), ("record", record), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"make_scheduler: {name} must be a non-negative int, got {v!r}")
    if record < 1:
        raise ValueError(f"make_scheduler: record must be at least 1, got {record}")
    period = closed + ready + record

    def scheduler(step):
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        at = step % period
        if at < closed:
            return ProfilerState.CLOSED
        if at < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if at < period - 1 else ProfilerState.RECORD_AND_RETURN

    return scheduler


def _record_always(step):
    return ProfilerState.RECORD


def export_chrome_tracing(dir_name, worker_name=None):
    """An on_trace_ready callback writing `<dir_name>/<worker>_time_<now>.paddle_trace.json`."""
    try:
        os.makedirs(dir_name, exist_ok=True)
    except OSError as e:
        raise RuntimeError(f"export_chrome_tracing: cannot create directory '{dir_name}': {e}") from e

    def handle(prof):
        worker = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S_%f")
        prof.export(os.path.join(dir_name, f"{worker}_time_{stamp}.paddle_trace.json"), "json")

    return handle


def export_protobuf(dir_name, worker_name=None):
    raise NotImplementedError("oar.profiler: protobuf export is not supported (Paddle's profiler result .pb "
                              "format is not written by oar); use export_chrome_tracing, which writes JSON "
                              "that load_profiler_result reads back")


class _Event:
    __slots__ = ("name", "category", "start_ns", "end_ns", "thread", "device", "device_type", "stream_id",
                 "shapes", "bytes")

    def __init__(self, *fields):
        for k, v in zip(self.__slots__, fields):
            setattr(self, k, v)

    @property
    def duration_ns(self):
        return self.end_ns - self.start_ns

    @property
    def on_device(self):
        return self.device >= 0


class ProfilerResult:
    """What one recording period collected: host events (operators, user ranges, steps) and device
    events, with the step boundaries."""

    def __init__(self, events, steps):
        self.events = events
        self.steps = steps  # [(step number, start_ns, end_ns)]

    def host_events(self, category):
        return [e for e in self.events if not e.on_device and e.category == category]

    def device_events(self):
        return [e for e in self.events if e.on_device]

    def to_chrome_trace(self):
        base = min((e.start_ns for e in self.events), default=0)
        pid = os.getpid()
        out = []
        for e in self.events:
            if e.on_device:
                where = dict(pid=f"{e.device_type or 'device'}:{e.device}", tid=f"stream {e.stream_id:#x}")
            else:
                where = dict(pid=pid, tid=e.thread)
            args = {}
            if e.shapes:
                args["input shapes"] = e.shapes
            if e.bytes:
                args["allocated bytes"] = e.bytes
            out.append(dict(name=e.name, cat=e.category, ph="X", ts=(e.start_ns - base) / 1e3,
                            dur=e.duration_ns / 1e3, args=args, **where))
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "oar": {"steps": self.steps, "start_ns": base,
                        "events": [[getattr(e, k) for k in _Event.__slots__] for e in self.events]}}

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_chrome_trace(), f)


def load_profiler_result(filename):
    """Reads a trace written by `Profiler.export(path, 'json')` / export_chrome_tracing back."""
    try:
        with open(filename) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"load_profiler_result: cannot read '{filename}': {e}") from e
    if not isinstance(data, dict) or "oar" not in data:
        raise ValueError(f"load_profiler_result: '{filename}' is not a trace exported by oar.profiler")
    meta = data["oar"]
    return ProfilerResult([_Event(*f) for f in meta["events"]], [tuple(s) for s in meta["steps"]])


class RecordEvent(contextlib.ContextDecorator):
    """A named range in the trace and in the summary's user-defined table: `with RecordEvent("x"):`,
    `@RecordEvent("x")`, or begin()/end(). Recorded only while a profiler records on this thread."""

    def __init__(self, name, event_type=None):
        if not isinstance(name, str) or not name:
            raise ValueError(f"RecordEvent: name must be a non-empty str, got {name!r}")
        self.name = name
        self.event_type = event_type
        self._open = False

    def begin(self):
        _C._profiler_push_range(self.name)
        self._open = True

    def end(self):
        if self._open:
            _C._profiler_pop_range()
            self._open = False

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()
        return False


_UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}


class Profiler:
    """Paddle 2.x's profiler. `targets` picks host only (CPU) or host and devices; a scheduler (a
    callable or a (start, end) step range) decides which steps are recorded; `on_trace_ready` gets the
    profiler when a recording period ends (default: export_chrome_tracing('./profiler_log/'))."""

    def __init__(self, *, targets=None, scheduler=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, timer_only=False, emit_nvtx=False, custom_device_types=(),
                 with_flops=False):
        targets = list(targets) if targets is not None else list(ProfilerTarget)
        for t in targets:
            if not isinstance(t, ProfilerTarget):
                raise ValueError(f"Profiler: targets must be ProfilerTarget values, got {t!r}")
        self.targets = targets
        self._devices = any(t != ProfilerTarget.CPU for t in targets)
        if callable(scheduler):
            self.scheduler = scheduler
        elif isinstance(scheduler, (tuple, list)):
            if len(scheduler) != 2 or not scheduler[1] > scheduler[0]:
                raise ValueError(f"Profiler: scheduler as a range must be (start, end) with end > start, "
                                 f"got {scheduler!r}")
            start, end = max(scheduler[0], 0), scheduler[1]
            self.scheduler = (make_scheduler(closed=max(start - 1, 0), ready=1, record=end - start, repeat=1)
                              if start >= 1 else make_scheduler(closed=0, ready=0, record=end - start, repeat=1))
        elif scheduler is None:
            self.scheduler = _record_always
        else:
            raise ValueError(f"Profiler: scheduler must be a callable or a (start, end) tuple, got {scheduler!r}")
        self.on_trace_ready = on_trace_ready if on_trace_ready is not None else \
            export_chrome_tracing("./profiler_log/")
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.timer_only = bool(timer_only)
        self.emit_nvtx = emit_nvtx  # the gpu plugin always emits NVTX ranges while recording
        self.with_flops = with_flops
        self.step_num = 0
        self.previous_state = ProfilerState.CLOSED
        self.current_state = self.scheduler(0)
        self.profiler_result = None
        self._recording = False
        self._step_range = None
        self._steps = []
        self._step_start = None
        self._step_times = []  # (seconds, samples) per finished step, for step_info
        self._info_from = 0

    # -- recording --------------------------------------------------------------------------------
    def _start_recording(self):
        _C._profiler_start(self.record_shapes, self.profile_memory, self._devices)
        self._recording = True
        self._steps = []
        self._open_step()

    def _open_step(self):
        self._step_range = RecordEvent(f"ProfileStep#{self.step_num}")
        self._step_range.begin()
        self._steps.append([self.step_num, time.monotonic_ns(), None])

    def _close_step(self):
        if self._step_range is not None:
            self._step_range.end()
            self._step_range = None
            self._steps[-1][2] = time.monotonic_ns()

    def _stop_recording(self):
        self._close_step()
        events = [_Event(*e) for e in _C._profiler_stop()]
        self._recording = False
        self.profiler_result = ProfilerResult(events, [tuple(s) for s in self._steps])
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _recording_state(self, state):
        return not self.timer_only and state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN)

    def start(self):
        self._step_start = time.perf_counter()
        if self._recording_state(self.current_state):
            self._start_recording()

    def stop(self):
        if self._recording:
            self._stop_recording()
        self._step_start = None

    def step(self, num_samples=None):
        now = time.perf_counter()
        if self._step_start is not None:
            self._step_times.append((now - self._step_start, num_samples))
        self._step_start = now
        self.previous_state = self.current_state
        self.step_num += 1
        self.current_state = self.scheduler(self.step_num)
        if self._recording:
            if self.previous_state == ProfilerState.RECORD_AND_RETURN or \
                    not self._recording_state(self.current_state):
                self._stop_recording()
            else:
                self._close_step()
                self._open_step()
        if not self._recording and self._recording_state(self.current_state):
            self._start_recording()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- results ----------------------------------------------------------------------------------
    def step_info(self, unit=None):
        """Mean step time and throughput since the previous call (Paddle's timer)."""
        unit = unit or "samples"
        times = self._step_times[self._info_from:]
        self._info_from = len(self._step_times)
        if not times:
            return "batch_cost: n/a"
        cost = sum(t for t, _ in times) / len(times)
        samples = [n for _, n in times]
        if all(n is not None for n in samples):
            ips, ips_unit = sum(samples) / max(sum(t for t, _ in times), 1e-12), f"{unit}/s"
        else:
            ips, ips_unit = 1.0 / max(cost, 1e-12), "steps/s"
        return f"batch_cost: {cost:.5f} s ips: {ips:.3f} {ips_unit}"

    def export(self, path="", format="json"):
        if format != "json":
            raise ValueError(f"Profiler.export: format must be 'json' (chrome tracing), got {format!r}; "
                             "protobuf export is not supported")
        if self.profiler_result is None:
            raise RuntimeError("Profiler.export: nothing recorded yet (no recording period has ended)")
        self.profiler_result.save(path)

    def summary(self, sorted_by=SortedKeys.CPUTotal, op_detail=True, thread_sep=False, time_unit="ms",
                views=None):
        """Prints the tables of the last recording period and returns them as a string."""
        if time_unit not in _UNITS:
            raise ValueError(f"Profiler.summary: time_unit must be one of {sorted(_UNITS)}, got {time_unit!r}")
        if self.profiler_result is None:
            raise RuntimeError("Profiler.summary: nothing recorded yet (no recording period has ended)")
        text = _summary(self.profiler_result, sorted_by, time_unit, views)
        print(text)
        return text


def _stats(events):
    """name -> [calls, total, max, min] in ns."""
    table = {}
    for e in events:
        d = e.duration_ns
        row = table.get(e.name)
        if row is None:
            table[e.name] = [1, d, d, d]
        else:
            row[0] += 1
            row[1] += d
            row[2] = max(row[2], d)
            row[3] = min(row[3], d)
    return table


_SORT = {SortedKeys.CPUTotal: 1, SortedKeys.GPUTotal: 1, SortedKeys.CPUMax: 2, SortedKeys.GPUMax: 2,
         SortedKeys.CPUMin: 3, SortedKeys.GPUMin: 3}


def _table(title, events, sorted_by, unit, total_ns):
    stats = _stats(events)
    if sorted_by in (SortedKeys.CPUAvg, SortedKeys.GPUAvg):
        order = sorted(stats.items(), key=lambda kv: -kv[1][1] / kv[1][0])
    elif sorted_by in (SortedKeys.CPUMin, SortedKeys.GPUMin):
        order = sorted(stats.items(), key=lambda kv: kv[1][3])
    else:
        order = sorted(stats.items(), key=lambda kv: -kv[1][_SORT[sorted_by]])
    scale = _UNITS[unit]
    width = max([len(title)] + [len(n) for n in stats]) + 2
    head = (f"{'Name':<{width}}{'Calls':>8}{'Total(' + unit + ')':>14}{'Avg(' + unit + ')':>12}"
            f"{'Max(' + unit + ')':>12}{'Min(' + unit + ')':>12}{'Ratio(%)':>10}")
    lines = [f"{'-' * len(head)}", f"{title:^{len(head)}}", "-" * len(head), head, "-" * len(head)]
    for name, (calls, total, mx, mn) in order:
        ratio = 100.0 * total / total_ns if total_ns else 0.0
        lines.append(f"{name:<{width}}{calls:>8}{total / scale:>14.3f}{total / calls / scale:>12.3f}"
                     f"{mx / scale:>12.3f}{mn / scale:>12.3f}{ratio:>10.2f}")
    return "\n".join(lines)


def _summary(result, sorted_by, unit, views):
    views = set(views if isinstance(views, (list, tuple, set)) else [views]) if views is not None else None

    def wanted(v):
        return views is None or v in views

    steps = result.host_events("user")
    step_events = [e for e in steps if e.name.startswith("ProfileStep#")]
    user = [e for e in steps if not e.name.startswith("ProfileStep#")]
    ops = result.host_events("operator")
    device = result.device_events()
    span = (max(e.end_ns for e in result.events) - min(e.start_ns for e in result.events)) if result.events else 0
    scale = _UNITS[unit]
    parts = []
    if wanted(SummaryView.OverView):
        lines = ["Overview", f"  steps recorded: {len(step_events)}", f"  wall time: {span / scale:.3f} {unit}",
                 f"  operator calls: {len(ops)} ({sum(e.duration_ns for e in ops) / scale:.3f} {unit})",
                 f"  device events: {len(device)} ({sum(e.duration_ns for e in device) / scale:.3f} {unit})"]
        if step_events:
            durs = [e.duration_ns for e in step_events]
            lines.append(f"  step time: avg {sum(durs) / len(durs) / scale:.3f}, max {max(durs) / scale:.3f}, "
                         f"min {min(durs) / scale:.3f} {unit}")
        parts.append("\n".join(lines))
    if wanted(SummaryView.OperatorView) and ops:
        parts.append(_table("Operator Summary", ops, sorted_by, unit, span))
    if wanted(SummaryView.KernelView) and device:
        parts.append(_table("Kernel Summary", [e for e in device if e.category == "kernel"] or device,
                            sorted_by, unit, span))
    if wanted(SummaryView.UDFView) and user:
        parts.append(_table("UserDefined Summary", user, sorted_by, unit, span))
    if wanted(SummaryView.MemoryView) and any(e.bytes for e in ops):
        per_op = {}
        for e in ops:
            row = per_op.setdefault(e.name, [0, 0, 0])
            row[0] += 1
            row[1] += max(e.bytes, 0)
            row[2] += min(e.bytes, 0)
        lines = ["Memory Summary (allocated bytes after minus before each call)",
                 f"{'Name':<32}{'Calls':>8}{'Allocated':>16}{'Freed':>16}"]
        for name, (calls, up, down) in sorted(per_op.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"{name:<32}{calls:>8}{up:>16}{-down:>16}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
