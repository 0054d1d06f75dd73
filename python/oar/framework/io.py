"""oar.save / oar.load: PaddlePaddle 2.x's pickle format (.pdparams, .pdopt, any picklable object).

File layout (what Paddle writes, so files move both ways):
  * a state dict (a dict whose values are all tensors, or dicts holding no tensors) is pickled as a dict
    of numpy arrays plus the key "StructuredToParameterName@@" -> {structured key: tensor.name};
    with protocol 2 or 3, arrays over 2**30 - 1 bytes are cut into "key@@.0", "key@@.1", ... slices
    listed under "UnpackBigParamInfor@@";
  * any other object is pickled as is, each tensor in it as the tuple (tensor.name, numpy array).

Loading never runs code from the file: a restricted unpickler admits only numpy arrays, dtypes and
scalars, Python's builtin containers and scalars, collections.OrderedDict and oar dtypes. Anything else
(a function, an arbitrary class) is refused with pickle.UnpicklingError before it is looked up.
"""
import collections
import importlib
import os
import pickle
import warnings

import numpy as np

__all__ = ["save", "load"]

_NAME_TABLE = "StructuredToParameterName@@"
_UNPACK_INFO = "UnpackBigParamInfor@@"  # Paddle's spelling


def _tensor_type():
    from .._C import Tensor
    return Tensor


def _is_layer(obj):
    try:
        from ..nn import Layer
    except ImportError:
        return False
    return isinstance(obj, Layer)


def _tensor_to_numpy(t):
    return np.array(t._numpy_view())


# --- save -----------------------------------------------------------------------------------------------

def _contains(obj, cond):
    if cond(obj):
        return True
    if type(obj) in (dict, collections.OrderedDict):
        return any(_contains(v, cond) for v in obj.values())
    if type(obj) in (list, tuple):
        return any(_contains(v, cond) for v in obj)
    return False


def _is_state_dict(obj):
    """Paddle's rule: a dict whose values are tensors, or dicts that hold no tensor or layer."""
    if not isinstance(obj, dict):
        return False
    Tensor = _tensor_type()
    for value in obj.values():
        if isinstance(value, dict):
            if any(_contains(v, lambda x: isinstance(x, Tensor) or _is_layer(x)) for v in value.values()):
                return False
        elif not isinstance(value, Tensor):
            return False
    return True


def _build_saved_state_dict(state_dict):
    Tensor = _tensor_type()
    saved, names = {}, {}
    for key, value in state_dict.items():
        if isinstance(value, Tensor):
            saved[key] = _tensor_to_numpy(value)
            names[key] = value.name
        else:
            saved[key] = value
    saved[_NAME_TABLE] = names
    return saved


def _split_big_arrays(saved, protocol, max_bytes=2 ** 30 - 1):
    """Protocols 2 and 3 cannot hold objects over 4 GiB: cut big arrays into slices, as Paddle does."""
    if protocol >= 4:
        return saved
    info = {}
    for key in list(saved.keys()):
        value = saved[key]
        if not isinstance(value, np.ndarray) or value.size == 0:
            continue
        per_slice = max(1, max_bytes // value.dtype.itemsize)
        if value.size <= per_slice:
            continue
        flat = value.reshape(-1)
        parts = []
        for i in range((value.size + per_slice - 1) // per_slice):
            part = "{}@@.{}".format(key, i)
            saved[part] = flat[i * per_slice:(i + 1) * per_slice]
            parts.append(part)
        info[key] = {"OriginShape": value.shape, "slices": parts}
        del saved[key]
    if info:
        saved[_UNPACK_INFO] = info
    return saved


class _Pickler(pickle.Pickler):
    """Writes each tensor as (name, numpy array), Paddle's layout; refuses layers."""

    def reducer_override(self, obj):
        if isinstance(obj, _tensor_type()):
            return tuple, ((obj.name, _tensor_to_numpy(obj)),)
        if _is_layer(obj):
            raise ValueError("oar.save does not support saving an oar.nn.Layer object ({}); save "
                             "layer.state_dict() instead".format(type(obj).__name__))
        return NotImplemented


def _check_protocol(protocol):
    if not isinstance(protocol, int) or isinstance(protocol, bool):
        raise ValueError("oar.save: 'protocol' must be an int, got {}".format(type(protocol).__name__))
    if protocol < 2 or protocol > 4:
        raise ValueError("oar.save: expected 1 < protocol < 5, got protocol={}".format(protocol))


def _is_buffer(path):
    return not isinstance(path, (str, bytes, os.PathLike)) and (hasattr(path, "write") or hasattr(path, "read"))


def _file_path(path, what):
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError("oar.{}: path should be a str, os.PathLike or a file-like object, got {}".format(
            what, type(path).__name__))
    if path == "" or os.path.basename(path) == "":
        raise ValueError("oar.{}: path must be of the form dirname/filename, got {!r} (empty file name)".format(
            what, path))
    if os.path.isdir(path):
        raise ValueError("oar.{}: {!r} is a directory; give a file path".format(what, path))
    return path


def save(obj, path, protocol=4, **configs):
    """Save `obj` (a state dict, a tensor, or nested dict/list/tuple of tensors, numbers, strings...) to
    `path` (a file path, whose parent directories are created, or a writable binary file object) in
    Paddle's pickle format. configs: pickle_protocol (deprecated alias of protocol); use_binary_format
    and safetensors are not supported (False only)."""
    for key in configs:
        if key not in ("pickle_protocol", "use_binary_format", "safetensors"):
            raise ValueError("oar.save: unsupported config {!r}; supported: pickle_protocol, use_binary_format, "
                             "safetensors".format(key))
    if configs.get("use_binary_format") or configs.get("safetensors"):
        raise NotImplementedError("oar.save: use_binary_format and safetensors are not supported; use the default "
                                  "pickle format")
    if configs.get("pickle_protocol") is not None:
        warnings.warn("oar.save: 'pickle_protocol' is deprecated; use 'protocol'")
        protocol = configs["pickle_protocol"]
    _check_protocol(protocol)
    if _is_layer(obj):
        raise ValueError("oar.save does not support saving an oar.nn.Layer object ({}); save layer.state_dict() "
                         "instead".format(type(obj).__name__))

    if _is_state_dict(obj):
        if len(obj) == 0:
            warnings.warn("oar.save: the state dict is empty")
        obj = _split_big_arrays(_build_saved_state_dict(obj), protocol)

    def dump(f):
        try:
            _Pickler(f, protocol).dump(obj)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError("oar.save: cannot pickle the object: {}".format(e)) from e

    if _is_buffer(path):
        dump(path)
        return
    path = _file_path(path, "save")
    dirname = os.path.dirname(path)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    # Write a temporary file and rename it, so a failed save never leaves a truncated file behind.
    tmp = path + ".tmp{}".format(os.getpid())
    try:
        with open(tmp, "wb") as f:
            dump(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# --- load -----------------------------------------------------------------------------------------------

_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "str", "bytes", "bytearray",
             "bool", "slice", "range"}
_ALLOWED = {("builtins", n) for n in _BUILTINS} | {
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),  # how protocol 2 stores bytes
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"),
    ("oar", "_dtype_from_name"),
}
_RENAMED_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


def _global_name(spec):
    if isinstance(spec, str):
        module, _, name = spec.rpartition(".")
        if not module:
            raise ValueError("oar.load: allowed_globals entries must be 'module.name', got {!r}".format(spec))
        return module, name
    return spec.__module__, spec.__qualname__


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, f, allowed=()):
        super().__init__(f, encoding="latin1")
        self._extra = set(allowed)

    def find_class(self, module, name):
        module = _RENAMED_MODULES.get(module, module)
        if module.startswith("numpy.core.") or module == "numpy.core":  # numpy 1.x files under numpy 2
            module = "numpy._core" + module[len("numpy.core"):]
        # numpy scalar types and numpy.dtypes.* DTypes are harmless classes too
        allowed = (module, name) in _ALLOWED or (module, name) in self._extra or (
            module == "numpy.dtypes" and name.endswith("DType"))
        if not allowed and module == "numpy" and isinstance(getattr(np, name, None), type) and issubclass(
                getattr(np, name), np.generic):
            allowed = True
        if not allowed:
            raise pickle.UnpicklingError(
                "oar.load: refusing to unpickle '{}.{}': only numpy arrays, dtypes and scalars, Python builtin "
                "containers and scalars and oar dtypes may appear in a file loaded by oar.load (pass "
                "allowed_globals=['{}.{}'] to allow it for a file you trust)".format(module, name, module, name))
        try:
            obj = importlib.import_module(module)
        except ImportError:
            if not module.startswith("numpy._core"):
                raise
            obj = importlib.import_module("numpy.core" + module[len("numpy._core"):])  # numpy 1.x
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj


def _merge_big_arrays(obj):
    if isinstance(obj, dict) and _UNPACK_INFO in obj:
        for key, info in obj[_UNPACK_INFO].items():
            obj[key] = np.concatenate([obj[p] for p in info["slices"]]).reshape(info["OriginShape"])
            for p in info["slices"]:
                del obj[p]
        del obj[_UNPACK_INFO]
    return obj


def _is_named_array(obj):
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray)


def _convert(obj, cond, fn):
    """Paddle's _parse_every_object: apply fn where cond holds, walking dict/list/tuple/set."""
    if cond(obj):
        return fn(obj)
    if type(obj) in (dict, collections.OrderedDict):
        for key in list(obj.keys()):
            obj[key] = _convert(obj[key], cond, fn)
        return obj
    if type(obj) is list:
        return [_convert(v, cond, fn) for v in obj]
    if type(obj) is tuple:
        return tuple(_convert(v, cond, fn) for v in obj)
    if type(obj) is set:
        return {_convert(v, cond, fn) for v in obj}
    return obj


def _to_tensor(arr, name=None):
    from .. import to_tensor
    t = to_tensor(arr)
    if name:
        t.name = name
    return t


def load(path, **configs):
    """Load what oar.save (or paddle.save) wrote to `path` (a file path or a readable binary file object).

    Arrays come back as oar Tensors (tensors saved with a name get it back) unless return_numpy=True.
    The "StructuredToParameterName@@" table of a state dict is dropped unless keep_name_table=True.
    Loading is restricted to numpy/builtin data (see the module docstring); allowed_globals=[...] adds
    'module.name' strings or classes for a file you trust."""
    for key in configs:
        if key not in ("return_numpy", "keep_name_table", "allowed_globals", "model_filename", "params_filename"):
            raise ValueError("oar.load: unsupported config {!r}; supported: return_numpy, keep_name_table, "
                             "allowed_globals".format(key))
    if isinstance(path, str) and not os.path.exists(path) and os.path.exists(path + ".pdmodel") and \
            os.path.exists(path + ".pdiparams"):
        from ..jit.api import _jit_state_dict  # a model written by jit.save: its parameters by structured name
        state = _jit_state_dict(path)
        return {k: v.numpy() for k, v in state.items()} if configs.get("return_numpy") else state
    return_numpy = bool(configs.get("return_numpy", False))
    keep_name_table = bool(configs.get("keep_name_table", False))
    allowed = [_global_name(g) for g in configs.get("allowed_globals", ()) or ()]

    def read(f):
        try:
            return _SafeUnpickler(f, allowed).load()
        except pickle.UnpicklingError:
            raise
        except (EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError, KeyError) as e:
            raise ValueError("oar.load: cannot parse {}: {}: {}".format(
                "the buffer" if _is_buffer(path) else repr(path), type(e).__name__, e)) from e

    if _is_buffer(path):
        result = read(path)
    else:
        path = _file_path(path, "load")
        if not os.path.exists(path):
            raise FileNotFoundError("oar.load: no such file: {!r}".format(path))
        with open(path, "rb") as f:
            result = read(f)

    if isinstance(result, dict) and _NAME_TABLE in result:
        result = _merge_big_arrays(result)
        for key, name in result[_NAME_TABLE].items():
            if isinstance(result.get(key), np.ndarray) and not return_numpy:
                result[key] = _to_tensor(result[key], name)
        if not keep_name_table:
            del result[_NAME_TABLE]
        return result
    result = _merge_big_arrays(result)
    if _contains(result, _is_named_array):
        # tensors saved inside other objects: (name, array) tuples
        fn = (lambda t: t[1]) if return_numpy else (lambda t: _to_tensor(t[1], t[0]))
        return _convert(result, _is_named_array, fn)
    return _convert(result, lambda x: isinstance(x, np.ndarray), (lambda a: a) if return_numpy else _to_tensor)
