"""Paddle's paddle.amp.debugging, the cheap parts: operator statistics (how many calls of each op ran in
float16, bfloat16, float32 or another dtype, counted by the core's dispatcher after auto_cast's casts)
and check_numerics (NaN/inf/zero counts and max/min/mean of one tensor)."""
import contextlib
from enum import Enum

import numpy as np

from .. import _C

__all__ = ["DebugMode", "check_numerics", "enable_operator_stats_collection", "disable_operator_stats_collection",
           "collect_operator_stats"]


class DebugMode(Enum):
    CHECK_NAN_INF_AND_ABORT = 0
    CHECK_NAN_INF = 1
    CHECK_ALL_FOR_OVERFLOW = 2
    CHECK_ALL = 3
    CHECK_ALL_AND_ABORT = 4
    DUMP_ALL = 5


def check_numerics(tensor, op_type, var_name, debug_mode=DebugMode.CHECK_NAN_INF_AND_ABORT):
    """(stats, values): stats = [NaN count, inf count, zero count] (int64), values = [max, min, mean] of the
    finite elements (float32). CHECK_NAN_INF_AND_ABORT raises RuntimeError naming op_type and var_name when
    the tensor holds NaN or inf."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"check_numerics: tensor must be a Tensor, got {type(tensor).__name__}")
    if not isinstance(debug_mode, DebugMode):
        raise TypeError(f"check_numerics: debug_mode must be a DebugMode, got {debug_mode!r}")
    a = tensor.astype("float32").numpy() if tensor.dtype in (_C.bfloat16, _C.float16) else tensor.numpy()
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    n_nan, n_inf, n_zero = int(np.isnan(a).sum()), int(np.isinf(a).sum()), int((a == 0).sum())
    finite = a[np.isfinite(a)]
    values = [finite.max(), finite.min(), finite.mean()] if finite.size else [0.0, 0.0, 0.0]
    if debug_mode is DebugMode.CHECK_NAN_INF_AND_ABORT and (n_nan or n_inf):
        raise RuntimeError(f"check_numerics: {op_type} output '{var_name}' holds {n_nan} NaN and {n_inf} inf "
                           f"of {a.size} elements")
    from .. import to_tensor
    return to_tensor(np.array([n_nan, n_inf, n_zero], dtype=np.int64)), to_tensor(np.array(values, np.float32))


def enable_operator_stats_collection():
    """Starts counting op calls by dtype on this thread (a fresh count)."""
    _C._amp_collect_stats(True)


def disable_operator_stats_collection():
    """Stops counting and prints the table (as Paddle)."""
    stats = _stats()
    _C._amp_collect_stats(False)
    _print_operator_stats(stats)


def _stats():
    return {op: list(c) for op, c in _C._amp_op_stats().items()}


@contextlib.contextmanager
def collect_operator_stats():
    """with collect_operator_stats(): ... counts the block's op calls by dtype and prints the table."""
    enable_operator_stats_collection()
    try:
        yield
    finally:
        disable_operator_stats_collection()


def _print_operator_stats(op_count_dict):
    print("<{:-^120}>".format(" op list "))
    print("<{:-^40}".format(" Op Name "), "|", "{:-^17}".format(" FP16 Calls "), "|",
          "{:-^17}".format(" BF16 Calls "), "|", "{:-^17}".format(" FP32 Calls"), "|",
          "{:-^17}>".format(" Other Calls "))
    for op in sorted(op_count_dict):
        c = op_count_dict[op]
        print("  %-40s|  %-17s|  %-17s|  %-17s|  %-17s" % (op, c[0], c[1], c[2], c[3]))
    print("<{:-^120}>\n".format(" op count: " + str(len(op_count_dict)) + " "))
