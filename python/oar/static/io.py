"""Saving and loading static programs: inference models (.pdmodel + .pdiparams), persistables, and
the serialize/deserialize helpers (Paddle's paddle.static.save_inference_model and friends)."""
import os
import pickle

import numpy as np

from .. import _C
from . import program as _prog

__all__ = ["save_inference_model", "load_inference_model", "serialize_program", "deserialize_program",
           "serialize_persistables", "deserialize_persistables", "save_to_file", "load_from_file", "save", "load",
           "normalize_program", "load_program_state", "set_program_state"]


def _var_names(vars_, what):
    if not isinstance(vars_, (list, tuple)):
        vars_ = [vars_]
    out = []
    for v in vars_:
        if isinstance(v, str):
            out.append(v)
        elif _prog.is_symbolic(v):
            out.append(_C._symbolic_name(v))
        else:
            raise TypeError("{}: expected program variables, got {}".format(what, type(v).__name__))
    return out


def _export(desc):
    """Paddle's own op types where oar has the mapping (framework/src/ir/paddle_export.cc). Ops without
    one stay native: oar loads the file, PaddlePaddle would not (a warning says which)."""
    out, kept = _C._export_paddle_dialect(desc)
    if kept:
        import warnings
        warnings.warn("the saved model keeps oar-only ops that PaddlePaddle cannot load: " + kept)
    return out


def normalize_program(program, feed_vars, fetch_vars):
    """The inference form of `program`: the forward ops the fetches need, with feed and fetch ops."""
    desc = _C._prepare_inference_program(program.desc, _var_names(feed_vars, "normalize_program"),
                                         _var_names(fetch_vars, "normalize_program"))
    p = _prog.Program(desc)
    p._inherit_captures(program)
    return p


def _param_values(program, names, scope=None):
    caps = program._all_captures()
    out = {}
    for n in names:
        t = caps.get(n)
        if t is None and scope is not None:
            t = scope._get(n)
        if t is None:
            raise ValueError("save: persistable variable '{}' has no value (run the startup program first?)".format(n))
        out[n] = np.array(t._numpy_view(), order="C")
    return out


def serialize_program(feed_vars, fetch_vars, program=None, **kwargs):
    program = program or _prog.default_main_program()
    return _export(normalize_program(program, feed_vars, fetch_vars).desc).to_bytes()


def serialize_persistables(feed_vars, fetch_vars, executor=None, program=None, **kwargs):
    program = program or _prog.default_main_program()
    norm = normalize_program(program, feed_vars, fetch_vars)
    names = _C._persistable_inputs(norm.desc)
    return _C._save_combined_params(_param_values(norm, names, _prog.global_scope()))


def save_to_file(path, content):
    if not isinstance(content, bytes):
        raise TypeError("save_to_file: content must be bytes")
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def load_from_file(path):
    with open(path, "rb") as f:
        return f.read()


def save_inference_model(path_prefix, feed_vars, fetch_vars, executor=None, program=None, **kwargs):
    """Writes path_prefix.pdmodel (the pruned program, Paddle's op types where mapped) and
    path_prefix.pdiparams (its parameters)."""
    if not isinstance(path_prefix, str) or not path_prefix or path_prefix.endswith(os.sep):
        raise ValueError("save_inference_model: path_prefix must be a file prefix, got {!r}".format(path_prefix))
    program = program or _prog.default_main_program()
    if isinstance(program, _prog.Program) is False and hasattr(program, "_program"):
        program = program._program
    norm = normalize_program(program, feed_vars, fetch_vars)
    desc = _export(norm.desc)
    names = _C._persistable_inputs(desc)
    save_to_file(path_prefix + ".pdmodel", desc.to_bytes())
    save_to_file(path_prefix + ".pdiparams", _C._save_combined_params(_param_values(norm, names,
                                                                                     _prog.global_scope())))


def _load_model_files(path_prefix, model_filename=None, params_filename=None):
    if os.path.isdir(path_prefix):
        model = os.path.join(path_prefix, model_filename or "__model__")
        params = os.path.join(path_prefix, params_filename) if params_filename else None
    else:
        model = path_prefix + ".pdmodel"
        params = path_prefix + ".pdiparams"
    if not os.path.exists(model):
        raise ValueError("load_inference_model: no model file '{}'".format(model))
    desc = _C._ProgramDesc.from_bytes(load_from_file(model))
    arrays = {}
    if params and os.path.exists(params):
        arrays = _C._load_combined_params(desc, load_from_file(params))
    elif _C._persistable_inputs(desc):
        raise ValueError("load_inference_model: no parameter file '{}'".format(params))
    return desc, arrays


def _feed_fetch_names(desc):
    ops = desc.block(0)["ops"]
    feeds = sorted((op["attrs"]["col"], op["outputs"]["Out"][0]) for op in ops if op["type"] == "feed")
    fetches = sorted((op["attrs"]["col"], op["inputs"]["X"][0]) for op in ops if op["type"] == "fetch")
    return [n for _, n in feeds], [n for _, n in fetches]


def load_inference_model(path_prefix, executor=None, model_filename=None, params_filename=None, **kwargs):
    """Returns [program, feed_target_names, fetch_targets]; the parameters go into the global scope.
    Run it with executor.run(program, feed={name: array}, fetch_list=fetch_targets)."""
    from ..tensor.creation import to_tensor
    desc, arrays = _load_model_files(path_prefix, model_filename, params_filename)
    program = _prog.Program(desc)
    with _prog._eager_guard():
        program._loaded = {name: to_tensor(a) for name, a in arrays.items()}
    program._inherited = dict(program._loaded)
    feeds, fetches = _feed_fetch_names(desc)
    program._feed_fetch = (feeds, fetches)
    return [program, feeds, fetches]


def save(program, model_path, protocol=4, **configs):
    """Writes model_path.pdparams (parameters), .pdopt (other persistables) and .pdmodel (program)."""
    if not isinstance(program, _prog.Program):
        raise TypeError("static.save: program must be a Program")
    caps = program._all_captures()
    params = {n: t._numpy_view() for n, t in caps.items() if n in program._params}
    others = {n: t._numpy_view() for n, t in caps.items() if n not in program._params}
    base = model_path
    d = os.path.dirname(base)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(base + ".pdparams", "wb") as f:
        pickle.dump(params, f, protocol=protocol)
    with open(base + ".pdopt", "wb") as f:
        pickle.dump(others, f, protocol=protocol)
    save_to_file(base + ".pdmodel", program.desc.to_bytes())


def load_program_state(model_path, var_list=None):
    from ..framework.io import load as _load
    state = {}
    for ext in (".pdparams", ".pdopt"):
        if os.path.exists(model_path + ext):
            for k, v in _load(model_path + ext).items():
                state[k] = v.numpy() if isinstance(v, _C.Tensor) else np.asarray(v)
    if var_list is not None:
        wanted = {v if isinstance(v, str) else v.name for v in var_list}
        state = {k: v for k, v in state.items() if k in wanted}
    return state


def set_program_state(program, state_dict):
    with _prog._eager_guard():  # values are set now, not recorded into a program
        _set_program_state(program, state_dict)


def _set_program_state(program, state_dict):
    from ..tensor.creation import to_tensor
    caps = program._all_captures()
    for name, value in state_dict.items():
        t = caps.get(name)
        if t is None:
            continue
        v = np.asarray(value)
        if list(v.shape) != list(t.shape):
            raise ValueError("set_program_state: '{}' has shape {} in the state but {} in the program".format(
                name, list(v.shape), list(t.shape)))
        t.set_value(to_tensor(v, dtype=t.dtype))


def load(program, model_path, executor=None, var_list=None):
    set_program_state(program, load_program_state(model_path, var_list))


def deserialize_program(data):
    return _prog.Program(_C._ProgramDesc.from_bytes(data))


def deserialize_persistables(program, data, executor=None):
    from ..tensor.creation import to_tensor
    arrays = _C._load_combined_params(program.desc, data)
    program._inherited = dict(getattr(program, "_inherited", {}))
    with _prog._eager_guard():
        program._inherited.update({n: to_tensor(a) for n, a in arrays.items()})
