"""auto_cast and decorate (Paddle 2.x's paddle.amp). The casting itself happens in the core's
dispatcher (framework/src/amp.cc): this module turns the lists (amp_lists.py) and the level into the
thread's configuration and sets it for the `with` block. docs/amp.md says what runs in which dtype."""
import contextlib
import threading
import warnings

from .. import _C
from . import amp_lists

_LEVELS = {"O0": 0, "OD": 1, "O1": 2, "O2": 3}
_DTYPES = ("float16", "bfloat16")
_configs = {}  # (level, dtype, use_promote, white, black) -> _C._AmpConfig
_lock = threading.Lock()
_warned_fp16_cpu = [False]
_state = threading.local()  # .stack: the (level, dtype) of the enclosing auto_cast blocks


def _check_level_dtype(fn, level, dtype):
    if not isinstance(level, str) or level.upper() not in _LEVELS:
        raise ValueError(f"{fn}: level must be 'O0', 'OD', 'O1' or 'O2', got {level!r}")
    dt = dtype if isinstance(dtype, str) else getattr(dtype, "name", str(dtype))
    if dt not in _DTYPES:
        raise ValueError(f"{fn}: dtype must be 'float16' or 'bfloat16', got {dtype!r}")
    return level.upper(), dt


def _config(level, dtype, use_promote, white, black):
    key = (level, dtype, bool(use_promote), frozenset(white), frozenset(black))
    with _lock:
        cfg = _configs.get(key)
        if cfg is None:
            lists = {}
            for _id, name, _available, _count in _C.device_types():
                t = amp_lists.lists_for(name, level, dtype, white, black)
                if t is not None:
                    lists[name] = t
            cfg = _configs[key] = _C._amp_make_config(_LEVELS[level], dtype, bool(use_promote), lists)
    return cfg


def _warn_unsupported(dtype):
    """float16 on a cpu (the current device): ops stay float32, as Paddle; said once."""
    if dtype != "float16" or _warned_fp16_cpu[0]:
        return
    if not _C.get_device().startswith("cpu"):
        return
    _warned_fp16_cpu[0] = True
    warnings.warn("auto_cast: float16 has no fast CPU kernels (no fp16 CPU primitives in the oneDNN oar uses), so "
                  "ops on cpu stay in float32, as PaddlePaddle does; use dtype='bfloat16' for mixed precision "
                  "on the CPU", UserWarning, stacklevel=4)


@contextlib.contextmanager
def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
              use_promote=True):
    """Runs the block with automatic mixed precision (Paddle's paddle.amp.auto_cast).

    level 'O1': ops of the white list (matmul, conv) run in `dtype`, those of the black list (reductions,
    norms, exp/log, softmax, losses) in float32, others in the widest dtype of their inputs. 'O2': every
    op runs in `dtype` except the black list (and, with use_promote, ops given a float32 input run in
    float32). 'OD': only the white list runs in `dtype`. 'O0' or enable=False: off. custom_white_list /
    custom_black_list (Paddle op types or oar op names) move ops between the lists. Casts of parameters
    are made once per block and reused while the parameter is unchanged."""
    level, dt = _check_level_dtype("auto_cast", level, dtype)
    white = amp_lists.to_oar_ops(custom_white_list)
    black = amp_lists.to_oar_ops(custom_black_list)
    both = white & black
    if both:
        raise ValueError(f"auto_cast: custom_white_list and custom_black_list both name {sorted(both)}")
    on = bool(enable) and level != "O0"
    cfg = _config(level, dt, use_promote, white, black) if on else None
    if on:
        _warn_unsupported(dt)
    prev = _C._amp_config()
    stack = _state.__dict__.setdefault("stack", [])
    args = dict(level=level, dtype=dt, use_promote=bool(use_promote), custom_white_list=sorted(white),
                custom_black_list=sorted(black)) if on else None
    stack.append((level if on else "O0", dt, args))
    _C._amp_set_config(cfg)
    try:
        yield
    finally:
        _C._amp_set_config(prev)
        stack.pop()


amp_guard = auto_cast


def amp_state():
    """(level, dtype) of the innermost auto_cast block of this thread, or None outside one."""
    stack = getattr(_state, "stack", None)
    return stack[-1][:2] if stack else None


def _current_args():
    """The auto_cast arguments in force on this thread (a dict), or None: to_static keys its traces by
    them and jit.save retraces under them, so a saved program keeps the casts it was traced with."""
    stack = getattr(_state, "stack", None)
    return stack[-1][2] if stack else None


def _args_key(args):
    if args is None:
        return None
    return (args["level"], args["dtype"], args["use_promote"], tuple(args["custom_white_list"]),
            tuple(args["custom_black_list"]))


def is_auto_cast_enabled():
    s = amp_state()
    return s is not None and s[0] != "O0"


def _is_norm(layer):
    from ..nn.layer import norm
    kinds = tuple(getattr(norm, n) for n in ("BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "LayerNorm",
                                              "GroupNorm", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D",
                                              "SyncBatchNorm", "LocalResponseNorm", "SpectralNorm", "RMSNorm")
                  if hasattr(norm, n))
    return isinstance(layer, kinds)


def _as_list(x, what):
    if x is None:
        return [], False
    if isinstance(x, (list, tuple)):
        return list(x), True
    return [x], False


def decorate(models, optimizers=None, level="O1", dtype="float16", master_weight=None, save_dtype=None,
             master_grad=False, excluded_layers=None):
    """Prepares models (and optimizers) for auto_cast (Paddle's paddle.amp.decorate).

    O1: nothing to do (the casts happen per op). O2: the floating parameters of every layer except the
    normalisation layers and `excluded_layers` (layer instances or types) become `dtype`, and the
    optimizers keep float32 master weights (multi_precision) unless master_weight is False.
    save_dtype ('float16', 'bfloat16', 'float32', 'float64'): state_dict() returns the floating
    parameters and buffers cast to that dtype. master_grad is accepted: the master-weight update already takes the
    gradients in float32. Returns models, or (models, optimizers) when optimizers are given."""
    level, dt = _check_level_dtype("decorate", level, dtype)
    from ..nn.layer.layers import _cast_in_place
    from ..nn import Layer
    from ..optimizer.optimizer import Optimizer
    model_list, models_is_list = _as_list(models, "models")
    for m in model_list:
        if not isinstance(m, Layer):
            raise TypeError(f"decorate: models must be Layers, got {type(m).__name__}")
    opt_list, opts_is_list = _as_list(optimizers, "optimizers")
    for o in opt_list:
        if not isinstance(o, Optimizer):
            raise TypeError(f"decorate: optimizers must be Optimizers, got {type(o).__name__}")
    if save_dtype is not None and save_dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"decorate: save_dtype must be float16, bfloat16, float32 or float64, got {save_dtype!r}")
    excluded, _ = _as_list(excluded_layers, "excluded_layers")
    if level == "O2":
        low = _C.to_dtype(dt)
        for m in model_list:
            for layer in m.sublayers(include_self=True):
                if _is_norm(layer) or any(isinstance(layer, e) if isinstance(e, type) else layer is e
                                          for e in excluded):
                    continue
                for t in layer._parameters.values():
                    if t is not None and t.dtype.is_floating_point and t.dtype != low:
                        _cast_in_place(t, low)
        if master_weight is not False:
            for o in opt_list:
                o._multi_precision = True
    if save_dtype is not None:
        for m in model_list:
            m._amp_save_dtype = save_dtype
    out_models = model_list if models_is_list else (model_list[0] if model_list else models)
    if optimizers is None:
        return out_models
    return out_models, (opt_list if opts_is_list else opt_list[0])


amp_decorate = decorate


def is_float16_supported(device=None):
    """Whether auto_cast with float16 runs ops in float16 on `device` (default: the current one)."""
    return _supported(device, "float16")


def is_bfloat16_supported(device=None):
    """Whether auto_cast with bfloat16 runs ops in bfloat16 on `device` (default: the current one)."""
    return _supported(device, "bfloat16")


def _supported(device, dtype):
    name = _C.get_device() if device is None else str(device)
    kind, _, index = name.partition(":")
    kind = "cuda" if kind == "gpu" else kind
    if kind not in {n for _i, n, available, _c in _C.device_types() if available}:
        return False
    spec = amp_lists.DEVICE_LISTS.get(kind, amp_lists.DEVICE_LISTS["default"])
    if dtype not in spec["dtypes"]:
        return False
    place = kind + ":" + (index or "0")
    try:
        return _C.has_kernel("matmul", place, dtype) or _C.has_kernel("matmul", "cpu", dtype)
    except Exception:  # noqa: BLE001 - a place that does not exist is "not supported"
        return False
