"""oar.static: static-graph programs (Paddle's paddle.static): build with oar ops in static mode or under
program_guard, run with Executor, differentiate with append_backward / optimizer.minimize, save with
save_inference_model. See docs/static.md."""
from . import nn  # noqa: F401
from .backward import append_backward, gradients  # noqa: F401
from .executor import BuildStrategy, CompiledProgram, ExecutionStrategy, Executor  # noqa: F401
from .input import InputSpec  # noqa: F401
from .io import (deserialize_persistables, deserialize_program, load, load_from_file,  # noqa: F401
                 load_inference_model, load_program_state, normalize_program, save, save_inference_model,
                 save_to_file, serialize_persistables, serialize_program, set_program_state)
from .program import (Block, Program, Scope, Variable, cpu_places, create_global_var, create_parameter,  # noqa: F401
                      data, default_main_program, default_startup_program, device_guard, global_scope, name_scope,
                      program_guard, scope_guard)


def cuda_places(device_ids=None):
    from .. import _C
    ids = device_ids if device_ids is not None else [0]
    return [_C.CUDAPlace(i) for i in ids]


def py_func(*args, **kwargs):
    raise NotImplementedError("static.py_func is not supported by oar")
