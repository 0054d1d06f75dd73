"""oar.profiler: Paddle 2.x's profiler API over the core's recording (docs/profiler.md).

The core times every op call on the thread that started the profiler (the dispatcher's profiler hook),
keeps `RecordEvent` ranges, and gathers the device plugins' events (cpu: kernels and collectives; gpu:
kernels timed by CUDA events) through their profiler tables. `Profiler.summary()` prints tables by
operator, kernel, user range and memory; `export_chrome_tracing` writes a trace that Perfetto and
chrome://tracing open.
"""
from .profiler import (Profiler, ProfilerResult, ProfilerState, ProfilerTarget, RecordEvent, SortedKeys,
                       SummaryView, export_chrome_tracing, export_protobuf, load_profiler_result, make_scheduler)

__all__ = ["ProfilerState", "ProfilerTarget", "make_scheduler", "export_chrome_tracing", "export_protobuf",
           "Profiler", "RecordEvent", "load_profiler_result", "SortedKeys", "SummaryView"]
