"""convert_to_static (source -> AST passes -> code object, cached per code object), convert_call (which
callees converted code converts), not_to_static, and the mapping of errors to the user's lines."""
import ast
import builtins
import functools
import inspect
import linecache
import os
import sysconfig
import textwrap
import types
import warnings

from . import convert_operators as _jst_module
from . import logging_utils
from .transformers import PASSES, Counter, Preprocess, UnsupportedSyntax, check_converted, drop_redundant_placeholders

__all__ = ["convert_to_static", "convert_call", "not_to_static", "get_converted_code", "converted_source"]

_NOT_TO_STATIC = "_oar_not_to_static"
_CONVERTED = "_oar_dy2st_converted"

# Top-level packages whose functions are never converted (besides the standard library, site-packages
# and oar itself, found by file location).
_SKIP_MODULES = {"oar", "numpy", "scipy", "pytest", "_pytest", "pluggy", "paddle", "torch", "jax", "pandas"}


class _Entry:
    """The converted form of one code object."""

    def __init__(self, code, name, source):
        self.code = code  # the converted function's code object
        self.name = name
        self.source = source  # the converted source (ast.unparse), for display


_CACHE = {}  # code object -> _Entry, or the reason (str) it is not converted
_CODE_NAMES = {}  # code objects of converted code -> the user function name (for error locations)


def not_to_static(func=None):
    """Decorator: oar.jit leaves this function as plain Python (it is neither converted nor are calls made
    in it converted); it runs as it is inside converted code."""
    if func is None:
        return not_to_static
    target = getattr(func, "__func__", func)
    try:
        setattr(target, _NOT_TO_STATIC, True)
    except (AttributeError, TypeError) as e:
        raise TypeError("not_to_static: cannot mark {!r}".format(func)) from e
    return func


# ---------------------------------------------------------------- which functions are user code
@functools.lru_cache(maxsize=None)
def _skip_dirs():
    import oar
    dirs = {os.path.dirname(os.path.abspath(oar.__file__))}
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.abspath(p))
    dirs |= {os.path.realpath(d) for d in dirs}
    return tuple(sorted(dirs))


_USER_CODE = {}  # code object -> whether it is user code (the check runs for every call)


def _is_user_function(func):
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    known = _USER_CODE.get(code)
    if known is None:
        known = _USER_CODE[code] = _is_user_code(func, code)
    return known


def _is_user_code(func, code):
    module = getattr(func, "__module__", None) or ""
    if module.split(".")[0] in _SKIP_MODULES:
        return False
    fname = code.co_filename
    if fname.startswith("<"):
        return not fname.startswith(("<string>", "<frozen"))
    path = os.path.abspath(fname)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for d in _skip_dirs():
        if path.startswith(d + os.sep):
            return False
    return True


# ---------------------------------------------------------------- conversion
def _warn_once(code, reason):
    logging_utils.log(1, "not converting {}: {}".format(code.co_name, reason))
    warnings.warn("oar.jit: cannot convert function '{}' ({}, line {}): {}; it runs as plain Python".format(
        code.co_name, code.co_filename, code.co_firstlineno, reason), stacklevel=3)


def _parse(fn):
    """The function's FunctionDef, with the user's line numbers and columns."""
    try:
        lines, lnum = inspect.getsourcelines(fn.__code__)  # the code's own source: no __wrapped__ unwrapping
    except (OSError, TypeError) as e:
        raise UnsupportedSyntax("its source is not available ({})".format(e))
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(dedented.splitlines(True)[0])
    try:
        tree = ast.parse(dedented)
    except SyntaxError as e:
        raise UnsupportedSyntax("its source does not parse on its own ({})".format(e.msg))
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise UnsupportedSyntax("it is not defined by a def statement (a lambda?)")
    fdef = tree.body[0]
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise UnsupportedSyntax("async functions are not converted")
    if fdef.name != fn.__code__.co_name:
        raise UnsupportedSyntax("its source could not be located")
    ast.increment_lineno(tree, lnum - 1)
    if indent:
        for n in ast.walk(tree):
            if getattr(n, "col_offset", None) is not None:
                n.col_offset += indent
            if getattr(n, "end_col_offset", None) is not None:
                n.end_col_offset += indent
    return fdef


def _class_name(fn):
    parts = fn.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


def _transform(fn):
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE):
        raise UnsupportedSyntax("generators and coroutines are not converted")
    fdef = _parse(fn)
    freevars = list(code.co_freevars)
    Preprocess(fdef, _class_name(fn), "__class__" in freevars).run()
    shadowed = "locals" in freevars or any(
        (isinstance(n, ast.Name) and n.id == "locals") or (isinstance(n, ast.arg) and n.arg == "locals")
        for n in ast.walk(fdef))
    dynamic = any(isinstance(n, ast.Name) and n.id in ("locals", "vars", "eval", "exec") for n in ast.walk(fdef))
    counter = Counter(locals_shadowed=shadowed, root=fdef, dynamic_scope=dynamic)
    for i, (name, cls) in enumerate(PASSES, 1):
        fdef = cls(counter).visit(fdef)
        if i == len(PASSES):
            drop_redundant_placeholders(fdef)
        logging_utils.log(3, "{}: pass {} '{}' done".format(code.co_name, i, name))
        if logging_utils.wants_code(i, len(PASSES)):
            logging_utils.log_code(i, name, ast.unparse(fdef))
    check_converted(fdef)
    # def _jst_factory(_jst, <free variables>): def _jst_converted(...): ...  -- compiled with the user's file
    # name, so the function's free variables are `_jst` and the original's. The def is renamed inside the
    # factory: under its own name it would capture a recursive call that must reach the global.
    params = ["_jst"] + [v for v in freevars if v != "_jst"]
    fdef.name = "_jst_converted"
    factory = ast.FunctionDef(name="_jst_factory", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=p, annotation=None) for p in params], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=[]), body=[fdef], decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        factory.type_params = []
    ast.copy_location(factory, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    top = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    names = {"co_name": code.co_name}
    if hasattr(code, "co_qualname"):  # Python 3.11+
        names["co_qualname"] = code.co_qualname
    top = top.replace(**names)
    _CODE_NAMES[top] = code.co_name
    _register_codes(top, code.co_name)
    fdef.name = code.co_name
    return _Entry(top, code.co_name, ast.unparse(fdef))


def _register_codes(code, user_name):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            generated = c.co_name.startswith("_jst_fn_") or c.co_name.startswith("<")
            name = user_name if generated else c.co_name
            _CODE_NAMES[c] = name
            _register_codes(c, name)


def _entry_for(fn):
    code = fn.__code__
    entry = _CACHE.get(code)
    if entry is None:
        try:
            entry = _transform(fn)
            logging_utils.log(1, "converted {} ({}, line {})".format(fn.__qualname__, code.co_filename,
                                                                      code.co_firstlineno))
        except UnsupportedSyntax as e:
            entry = str(e)
            _warn_once(code, entry)
        except Exception as e:  # a conversion bug must not break the user's program: run it unconverted
            entry = "conversion failed with {}: {}".format(type(e).__name__, e)
            _warn_once(code, entry)
        _CACHE[code] = entry
    return entry if isinstance(entry, _Entry) else None


def _build(fn, entry):
    # The original closure cells (live values, nonlocal writes seen both ways) and a cell for `_jst`.
    orig = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells = []
    for name in entry.code.co_freevars:
        if name in orig:
            cells.append(orig[name])
        elif name == "_jst":
            cells.append(types.CellType(_jst_module))
        else:  # pragma: no cover - the factory has no other local
            raise RuntimeError("dy2static: unexpected free variable '{}'".format(name))
    conv = types.FunctionType(entry.code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells) or None)
    conv.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    conv.__qualname__ = fn.__qualname__
    conv.__module__ = fn.__module__
    conv.__doc__ = fn.__doc__
    conv.__annotations__ = getattr(fn, "__annotations__", {})

    @functools.wraps(fn)
    def converted(*args, **kwargs):
        try:
            return conv(*args, **kwargs)
        except Exception as e:
            _locate_error(e)
            raise

    setattr(converted, _CONVERTED, True)
    converted._oar_dy2st_original = fn
    converted._oar_dy2st_source = entry.source
    return converted


def convert_to_static(fn):
    """The converted form of a Python function or bound method (see docs/dy2static.md); fn itself when it
    is marked not_to_static, is not a Python function, or cannot be converted (with a warning)."""
    if isinstance(fn, types.MethodType):
        conv = convert_to_static(fn.__func__)
        return fn if conv is fn.__func__ else types.MethodType(conv, fn.__self__)
    if not isinstance(fn, types.FunctionType):
        return fn
    if getattr(fn, _NOT_TO_STATIC, False) or getattr(fn, _CONVERTED, False):
        return fn
    if (getattr(fn, "__module__", None) or "").split(".")[0] == "oar":
        # oar's own layers and functions handle symbolic tensors themselves (x.shape keeps -1 for an
        # unknown extent there); they are never converted when called from user code either.
        return fn
    entry = _entry_for(fn)
    if entry is None:
        return fn
    return _build(fn, entry)


def get_converted_code(fn):
    """The converted source of fn (as ast.unparse prints it), or None when fn is not converted."""
    fn = getattr(fn, "__func__", fn)
    if getattr(fn, _CONVERTED, False):
        return fn._oar_dy2st_source
    if not isinstance(fn, types.FunctionType):
        return None
    entry = _entry_for(fn)
    return entry.source if entry is not None else None


def converted_source(fn):
    """The converted source of fn (StaticFunction.code); the original source when fn is not converted."""
    src = get_converted_code(fn)
    return src if src is not None else inspect.getsource(getattr(fn, "__func__", fn))


# ---------------------------------------------------------------- convert_call
def _builtin_map():
    j = _jst_module
    return {
        builtins.print: j.convert_print,
        builtins.len: j.convert_len,
        builtins.isinstance: j.convert_isinstance,
        builtins.range: j.convert_range,
        builtins.enumerate: j.convert_enumerate,
    }


_BUILTINS = None


def _layer_class():
    try:
        from oar.nn import Layer
        return Layer
    except ImportError:  # pragma: no cover
        return None


_CONTAINER_WRITES = ("append", "extend", "insert", "__setitem__", "update", "setdefault")


def _noting_container_write(method):
    """A list/dict method called while a tensor loop is recorded: notes where each program variable put
    in the container came from, so that using it after the loop (where it has no value) gets an error
    naming that line (StaticFunction checks the program, oar.jit.api._check_loop_values)."""
    import sys

    def write(*args, **kwargs):
        frame = sys._getframe(1)
        where = "{}:{} ({}.{})".format(frame.f_code.co_filename, frame.f_lineno, type(method.__self__).__name__,
                                       method.__name__)
        oar_c = _oar_c()
        stack = list(args) + list(kwargs.values())
        while stack:
            a = stack.pop()
            if isinstance(a, (list, tuple)):
                stack.extend(a)
            elif isinstance(a, dict):
                stack.extend(a.values())
            elif oar_c is not None and isinstance(a, oar_c.Tensor) and oar_c._is_symbolic(a):
                _jst_module._LOOP_CONTAINER_WRITES[oar_c._symbolic_name(a)] = where
        return method(*args, **kwargs)

    return write


def _oar_c():
    try:
        from ... import _C
        return _C
    except ImportError:
        return None


def convert_call(func):
    """The callable converted code calls in place of func: the converted form of user functions, methods,
    layers' forward and callable objects; oar's converting builtins for print/len/isinstance/range/
    enumerate; func itself otherwise."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = _builtin_map()
    try:
        mapped = _BUILTINS.get(func)
    except TypeError:  # unhashable callable
        mapped = None
    if mapped is not None:
        return mapped
    if isinstance(func, types.BuiltinMethodType) and type(getattr(func, "__self__", None)) in (list, dict) \
            and func.__name__ in _CONTAINER_WRITES and _jst_module._STATIC_LOOP_DEPTH[0]:
        return _noting_container_write(func)
    if getattr(func, _NOT_TO_STATIC, False) or getattr(func, _CONVERTED, False):
        return func
    if isinstance(func, types.FunctionType):
        return _convert_user(func)
    if isinstance(func, types.MethodType):
        f = func.__func__
        if isinstance(f, types.FunctionType):
            conv = _convert_user(f)
            return func if conv is f else types.MethodType(conv, func.__self__)
        return func
    if isinstance(func, functools.partial):
        inner = convert_call(func.func)
        return func if inner is func.func else functools.partial(inner, *func.args, **func.keywords)
    if isinstance(func, type):
        return func  # constructing an object: __init__ runs as Python
    unwrapped = _static_function_parts(func)
    if unwrapped is not None:  # a to_static function called from converted code is converted inline
        fn, inst = unwrapped
        conv = _convert_user(fn) if not getattr(fn, _NOT_TO_STATIC, False) else fn
        return types.MethodType(conv, inst) if inst is not None else conv
    layer_cls = _layer_class()
    if layer_cls is not None and isinstance(func, layer_cls):
        forward = getattr(func, "forward", None)
        parts = _static_function_parts(forward)
        target = parts[0] if parts is not None else getattr(forward, "__func__", forward)
        if isinstance(target, types.FunctionType) and _is_user_function(target) and not getattr(
                target, _NOT_TO_STATIC, False):
            logging_utils.log(2, "convert_call: layer {} runs its converted forward".format(type(func).__name__))
            return _LayerCall(func)
        return func
    call = getattr(type(func), "__call__", None)
    if isinstance(call, types.FunctionType) and _is_user_function(call) and not getattr(call, _NOT_TO_STATIC, False):
        conv = convert_to_static(call)
        if conv is not call:
            return types.MethodType(conv, func)
    return func


def _static_function_parts(obj):
    """(python function, bound instance or None) of a to_static StaticFunction (duck-typed on its
    `_dygraph_function`), else None."""
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return None
    fn = getattr(obj, "_dygraph_function", None)
    if not isinstance(fn, types.FunctionType):
        return None
    return fn, getattr(obj, "_instance", None)


def _convert_user(f):
    if not _is_user_function(f):
        return f
    if f.__code__.co_name == "<lambda>":
        return f  # an expression: nothing to convert (and/or inside it were converted with its definer)
    if f.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE):
        logging_utils.log(2, "convert_call: {} is a generator or coroutine: runs as Python".format(f.__qualname__))
        return f  # a generator helper is fine as Python: no warning
    if f.__code__ not in _CACHE:
        logging_utils.log(2, "convert_call: converting {}".format(f.__qualname__))
    return convert_to_static(f)


class _LayerCall:
    """Calls a layer (its hooks included) with its forward replaced by the converted one for the call."""

    def __init__(self, layer):
        self.layer = layer

    def __call__(self, *args, **kwargs):
        layer = self.layer
        current = layer.forward
        parts = _static_function_parts(current)
        if parts is not None:  # a to_static forward: its Python function, converted and bound
            conv = convert_to_static(parts[0])
            forward = current if conv is parts[0] else types.MethodType(conv, layer)
        else:
            forward = convert_to_static(current)
        if forward is current:
            return layer(*args, **kwargs)
        d = layer.__dict__
        missing = object()
        old = d.get("forward", missing)
        d["forward"] = forward
        try:
            return layer(*args, **kwargs)
        finally:
            if old is missing:
                d.pop("forward", None)
            else:
                d["forward"] = old


# ---------------------------------------------------------------- error locations
def _locate_error(e):
    """Add to e a note naming the innermost line of converted user code the error passed through (the
    converted code is compiled with the user's file and line numbers)."""
    if getattr(e, "_oar_dy2st_located", False):
        return
    where = None
    tb = e.__traceback__
    while tb is not None:
        name = _CODE_NAMES.get(tb.tb_frame.f_code)
        if name is not None:
            where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno, name)
        tb = tb.tb_next
    if where is None:
        return
    fname, line, name = where
    text = linecache.getline(fname, line).strip()
    note = ("In code converted by oar.jit (dygraph to static), the error happened at:\n"
            "  File \"{}\", line {}, in {}\n    {}".format(fname, line, name, text))
    try:
        e._oar_dy2st_located = True
        e._oar_dy2st_location = (fname, line, name)
    except (AttributeError, TypeError):
        pass
    if hasattr(e, "add_note"):
        e.add_note(note)
    elif e.args and isinstance(e.args[0], str):
        e.args = (e.args[0] + "\n" + note, ) + tuple(e.args[1:])
