"""to_static, save and load (Paddle's paddle.jit).

to_static records a function (or a Layer's forward) into a Program once per input signature (shapes,
dtypes, stop_gradient, Python arguments, the layer's training mode) and from then on runs the program
with the C++ executor: one call instead of a Python call per op. Gradients work as in eager mode: the
executor runs the same oar ops, so autograd records them as they run, and loss.backward() reaches the
layer's parameters (they are captured by reference; see oar.static.program). Source-level control flow
on tensors is converted first (oar.jit.dy2static) when that converter is available.

jit.save traces with the InputSpecs (None = unknown extent) and writes an inference model
(path.pdmodel / .pdiparams / .pdiparams.info); jit.load returns a TranslatedLayer running it.
"""
import collections
import functools
import inspect
import os
import warnings

import numpy as np

from .. import _C
from ..static import program as _prog
from ..static.input import InputSpec
from .dy2static.convert_operators import Dy2StaticError

__all__ = ["to_static", "not_to_static", "save", "load", "enable_to_static", "ignore_module", "StaticFunction"]

_config = {"enabled": True}


def enable_to_static(enable_to_static_bool):
    """False: to_static functions run eagerly (for debugging), as Paddle's jit.enable_to_static."""
    _config["enabled"] = bool(enable_to_static_bool)


def ignore_module(modules):
    """Accepted for compatibility: functions of these modules are never converted."""


def not_to_static(func=None):
    """Marks a function to run as plain Python inside converted code (see oar.jit.dy2static)."""
    from .dy2static import not_to_static as mark
    return mark(func)


def _convert(fn):
    """The function with tensor control flow converted to cond/while_loop (dy2static), when available."""
    try:
        from .dy2static import convert_to_static
    except ImportError:
        return fn
    try:
        return convert_to_static(fn)
    except Exception as e:  # an unconvertible source still traces as it is
        warnings.warn("to_static: could not convert {} ({}); tracing it unconverted".format(
            getattr(fn, "__qualname__", fn), e))
        return fn


# ---- flattening nested inputs and outputs ------------------------------------------------------------------
def _flatten(obj, out):
    """Replaces each Tensor in nested lists/tuples/dicts by its index in `out` (appending it)."""
    if isinstance(obj, _C.Tensor):
        out.append(obj)
        return _Slot(len(out) - 1)
    if getattr(type(obj), "_oar_tensor_array", False):  # (on the type: UndefinedVar raises on any attribute)
        # a list grown in a tensor loop (a returned one): its buffer, made a list again after the run
        out.append(obj._stacked("to_static output"))
        return _ArraySlot(len(out) - 1)
    if isinstance(obj, (list, tuple)):
        items = [_flatten(o, out) for o in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        # values in sorted key order, as Paddle's nest.flatten (the saved program's inputs follow it)
        done = {k: _flatten(obj[k], out) for k in _sorted_keys(obj)}
        return {k: done[k] for k in obj}
    return obj


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:  # keys of mixed types: insertion order
        return list(d)


def _unflatten(obj, values):
    if isinstance(obj, _Slot):
        if isinstance(obj, _ArraySlot):
            from ..tensor.manipulation import unbind
            return unbind(values[obj.i], 0)
        return values[obj.i]
    if isinstance(obj, (list, tuple)):
        items = [_unflatten(o, values) for o in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        return {k: _unflatten(v, values) for k, v in obj.items()}
    return obj


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return "_Slot({})".format(self.i)


class _ArraySlot(_Slot):
    """A tensor array's buffer, given back as a list of its rows."""
    __slots__ = ()


def _hashable(obj):
    if isinstance(obj, _Slot):
        return ("T", obj.i)
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__,) + tuple(_hashable(o) for o in obj)
    if isinstance(obj, dict):
        return ("dict",) + tuple((k, _hashable(v)) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0])))
    try:
        hash(obj)
        return obj
    except TypeError:
        return ("id", id(obj))


# ---- one traced program ------------------------------------------------------------------------------------
# The training form of a program: forward and backward executors on one scope, the output-gradient feed
# names, the parameters and input positions gradients flow to, the gradient variable names (None where
# unused) and the positions of the differentiable outputs.
_Training = collections.namedtuple("_Training", "fexe bexe seed_names wrt_params input_idx grad_names diff_out run")


class ConcreteProgram:
    """A program traced for one input signature, with its executors.

    Without gradients (eval, no_grad) the whole program runs in one executor call. With gradients, the
    forward part runs with autograd off and one autograd node stands for the whole program: its
    backward runs the backward program, recorded once from the eager gradient rules (as append_backward
    does), on the same scope, where the forward left the values the backward reads (Paddle's run_program
    design). A second call before the first one's backward (the program used twice in one graph) falls
    back to replaying the forward under autograd, which needs no saved scope."""

    def __init__(self, program, feed_names, fetch_names, out_structure, place, sym_inputs, sym_outputs, params):
        self.main_program = program
        self.feed_names = feed_names
        self.fetch_names = fetch_names
        self.out_structure = out_structure
        self.place = place
        self._sym_inputs, self._sym_outputs, self._params = sym_inputs, sym_outputs, params
        self._exe = None
        self._train = None  # a _Training once built; False when nothing is differentiable
        self._build_strategy = None  # the to_static build_strategy: which training passes run
        self.pass_report = None  # the training passes' report once the training form is built
        self._graph_mode = None  # wrap_cuda_graph's capture mode: runs are captured into device graphs
        self._graphed = None  # the forward-only run's graph (_C._GraphedRun)

    @property
    def _pending(self):
        """Training runs whose backward has not run yet (their nodes are alive)."""
        return self._train.run.pending if self._train else 0

    def _bind(self, exe):
        scope = exe.scope
        for name, t in self.main_program._all_captures().items():
            scope.set(name, t)
        return exe

    def _executor(self):
        if self._exe is None:
            # Without a recorded backward, nor the ops saving values for it (while_loop's stacks, which
            # are marked as the training variant; to_static records no other variants).
            forward = _C._select_mode(_C._filter_ops_by_role(self.main_program.desc, [0]), True)
            self._exe = self._bind(_C._Executor(forward, self.place,
                                                feed_names=list(self.feed_names), fetch_names=list(self.fetch_names)))
        return self._exe

    def _build_training(self):
        """Records the backward program (op_role 1) and makes the two executors sharing one scope."""
        builder = self.main_program._builder
        outs = [t for t in self._sym_outputs if _C._is_symbolic(t) and not t.stop_gradient]
        wrt_params = [p for p in self._params if not p.stop_gradient]
        input_idx = [i for i, x in enumerate(self._sym_inputs) if not x.stop_gradient]
        wrt = wrt_params + [self._sym_inputs[i] for i in input_idx]
        if not outs or not wrt:
            self._train = False
            return
        if any(d < 0 for o in outs for d in o.shape):
            # An output of run-time extent (a tensor array grown in a loop): its gradient feed cannot be
            # typed from the visible shape (the core tracks products of unknown extents); replay instead.
            self._train = False
            return
        seeds = [builder.create_var(_C._symbolic_name(o) + "@GRAD", o.shape, o.dtype, place=o.place) for o in outs]
        builder.op_role = 1
        prev = _C._set_builder(builder)
        try:
            grads = _C._grad(outs, wrt, seeds, False, False, True)
        finally:
            _C._set_builder(prev)
            builder.op_role = 0
        desc = self.main_program.desc
        fwd = _C._filter_ops_by_role(desc, [0])
        bwd = _C._filter_ops_by_role(desc, [1])
        persistable = {v["name"] for v in desc.block(0)["vars"] if v["persistable"]}
        seed_names = [_C._symbolic_name(g) for g in seeds]
        grad_names = [_C._symbolic_name(g) if g is not None and _C._is_symbolic(g) else None for g in grads]
        fetch = [n for n in grad_names if n is not None]
        flags = training_pass_flags(self._build_strategy)
        if flags is not None:
            # Fusions on both programs (docs/static.md, "Training passes"): the forward keeps what the
            # backward reads, its fetches, feeds and persistables; the backward its gradient fetches and feeds.
            pin_f = _read_by(bwd) | set(self.fetch_names) | set(self.feed_names) | persistable
            pin_b = set(fetch) | set(seed_names) | persistable
            fwd, bwd, self.pass_report = _C._run_training_passes(fwd, bwd, pin_f, pin_b, place=self.place, **flags)
        keep = sorted(_read_by(bwd) - persistable - set(seed_names))
        fexe = self._bind(_C._Executor(fwd, self.place, feed_names=list(self.feed_names),
                                       fetch_names=list(self.fetch_names), keep=keep))
        bexe = _C._Executor(bwd, self.place, scope=fexe.scope, feed_names=seed_names,
                            fetch_names=fetch if fetch else [seed_names[0]])
        diff_out = [self.fetch_names.index(_C._symbolic_name(o)) for o in outs]
        # The step itself runs in C++ (python/src/jit_run.cc): gradient j of the node's inputs is the
        # backward's fetch grad_pos[j] (-1: none).
        grad_pos, k = [], 0
        for n in grad_names:
            grad_pos.append(k if n is not None else -1)
            k += n is not None
        run = _C._TrainingRun(fexe, bexe, list(self.feed_names), seed_names, diff_out, grad_pos)
        if self._graph_mode is not None:
            run.enable_graphs()  # forward and backward captured on the first step, replayed after
        self._train = _Training(fexe, bexe, seed_names, wrt_params, input_idx, grad_names, diff_out, run)

    def run(self, tensors):
        # StaticFunction calls this only while no program is being built: no builder to pause
        if _C.is_grad_enabled() and (any(not p.stop_gradient for p in self._params) or
                                     any(not t.stop_gradient for t in tensors)):
            if self._train is None:
                prev = _C._set_builder(None)
                try:
                    self._build_training()
                except NotImplementedError:
                    # A differentiable op without a gradient rule (docs/decisions.md, 34) on the way: no
                    # backward program; runs replay under autograd, whose backward raises naming the op
                    # if it is ever reached, so a forward-only use keeps working.
                    self._train = False
                finally:
                    _C._set_builder(prev)
            if self._train and self._train.run.pending == 0:
                t = self._train
                node_inputs = t.wrt_params + [tensors[i] for i in t.input_idx] if t.input_idx else t.wrt_params
                return _unflatten(self.out_structure, t.run.run(tensors, node_inputs))
        if self._graph_mode is not None and not _C.is_grad_enabled():
            if self._graphed is None:
                self._graphed = _C._GraphedRun()
            return _unflatten(self.out_structure, self._graphed.run(self._executor(), tensors))
        outs = self._executor().run(dict(zip(self.feed_names, tensors)))  # autograd replays if on
        return _unflatten(self.out_structure, outs)


def _read_by(program):
    """The variable names block 0 of `program` reads."""
    names = set()
    for op in program.block(0)["ops"]:
        for ns in op["inputs"].values():
            names.update(ns)
    return names


def training_pass_flags(build_strategy):
    """The training passes a BuildStrategy selects, as _C._run_training_passes keywords; None: none run.
    build_strategy None runs them all (they are exact: only which kernels run changes); an explicit
    BuildStrategy is obeyed flag by flag: fuse_gemm_epilogue, fuse_elewise_add_act_ops and oar's
    fuse_residual_layer_norm, fuse_attention, fuse_softmax_grad (decision 113). OAR_TRAINING_PASSES=0
    turns them all off."""
    if os.environ.get("OAR_TRAINING_PASSES", "1") == "0":
        return None
    if build_strategy is None:
        return {}
    bs = build_strategy
    flags = dict(fuse_gemm_epilogue=bool(getattr(bs, "fuse_gemm_epilogue", False)),
                 fuse_elewise_add_act=bool(getattr(bs, "fuse_elewise_add_act_ops", False)),
                 fuse_residual_layer_norm=bool(getattr(bs, "fuse_residual_layer_norm", False)),
                 fuse_attention=bool(getattr(bs, "fuse_attention", False)),
                 fuse_softmax_grad=bool(getattr(bs, "fuse_softmax_grad", False)))
    return flags if any(flags.values()) else None


def _trace(fn, args, kwargs, layer, specs=None, place=None):
    """Records fn(*args, **kwargs) into a new Program. `specs` (InputSpecs, one per tensor argument)
    replace the arguments' shapes (None extents become -1)."""
    prog = _prog.Program()
    prog._for_to_static = True
    builder = prog._builder
    if layer is not None:
        for p in layer.parameters():
            prog._bind_parameter(p)
        for name, b in layer.named_buffers():
            if b is not None and not _C._is_symbolic(b):
                builder.bind_capture(b, builder.unique_name(name.replace(".", "_")), False)
    tensors = []
    structure = _flatten((list(args), kwargs), tensors)
    names = _feed_names(fn, structure, len(tensors), specs)
    syms = []
    for i, t in enumerate(tensors):
        if specs is not None and i < len(specs) and specs[i] is not None:
            shape, dtype = specs[i]._dims(), specs[i].dtype
        else:
            shape, dtype = list(t.shape), t.dtype
        s = builder.create_var(names[i], shape, dtype, place=place)
        s.stop_gradient = t.stop_gradient
        syms.append(s)
    sym_args, sym_kwargs = _unflatten(structure, syms)
    converted = _convert(fn)
    from .dy2static import convert_operators as jst
    jst._LOOP_CONTAINER_WRITES.clear()
    prev = _C._set_builder(builder)
    grad = _C.is_grad_enabled()
    _C._set_grad_enabled(True)  # autograd nodes on the variables: the backward program is recorded from them
    try:
        out = converted(*sym_args, **sym_kwargs) if layer is None else converted(layer, *sym_args, **sym_kwargs)
    except ValueError as e:
        if _NO_VALUE not in str(e):
            raise
        raise _value_needed_error(e) from None
    finally:
        _C._set_grad_enabled(grad)
        _C._set_builder(prev)
    flat_out = []
    out_structure = _flatten(out, flat_out)
    fetch_names = []
    for t in flat_out:
        fetch_names.append(_C._symbolic_name(t) if _C._is_symbolic(t) else builder.capture(t))
    _check_loop_values(prog, fn, fetch_names)
    params = list(layer.parameters()) if layer is not None else []
    params += [t for n, t in builder.captures().items() if n not in prog._params and not t.stop_gradient]
    return prog, names, fetch_names, out_structure, syms, flat_out, params


class ValueNeededError(Dy2StaticError, ValueError):
    """Python needed a traced tensor's value; still a ValueError, the type this failure had before."""


_NO_VALUE = "is a variable of a static program: it has no value while the program is being built"
_OAR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _value_needed_error(e):
    """The error for Python needing a tensor's value while to_static records (float(), int(), bool(),
    .numpy(), .item(), .tolist() of a tensor computed from the inputs): it names the user's line and the
    call, not the program variable (whose name the user never chose)."""
    import linecache
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    user, call = None, None
    for k, fr in enumerate(frames):
        if not os.path.abspath(fr.filename).startswith(_OAR_DIR) and not fr.filename.startswith("<"):
            user = fr
            call = frames[k + 1].name if k + 1 < len(frames) else None
    where = ""
    if user is not None:
        where = " at {}:{}{}".format(user.filename, user.lineno,
                                     ": " + linecache.getline(user.filename, user.lineno).strip())
    return ValueNeededError(
        "to_static: Python needs the value of a tensor computed from the inputs{} ({}), but inside to_static "
        "tensors have values only when the program runs. Use tensor ops instead (paddle.where, "
        "paddle.static.nn.cond, shapes from x.shape), pass the number as a Python argument (a constant of the "
        "program), or mark the function with paddle.jit.not_to_static.".format(
            where, "Tensor.{}".format(call) if call else "a tensor converted to a Python value"))


def _check_loop_values(prog, fn, fetch_names):
    """A variable computed inside a loop's or branch's block has a value only there. Reaching the main
    block through a Python container (a list or dict filled in a tensor loop that conversion does not
    carry, an attribute) it would fail at run time naming an internal variable: fail now, naming the
    user's line and the construct."""
    from .dy2static import convert_operators as jst
    desc = prog.desc
    inner = {}
    for k in range(1, desc.num_blocks):
        for op in desc.block(k)["ops"]:
            for names in op["outputs"].values():
                for n in names:
                    inner.setdefault(n, k)
    if not inner:
        return
    defined = set()
    uses = []
    for op in desc.block(0)["ops"]:
        uses += [(n, op["type"]) for names in op["inputs"].values() for n in names]
        for names in op["outputs"].values():
            defined.update(names)
    uses += [(n, "the function's return") for n in fetch_names]
    for n, user in uses:
        if n in inner and n not in defined:
            where = jst._LOOP_CONTAINER_WRITES.get(n)
            code = getattr(fn, "__code__", None)
            site = "{}:{}".format(code.co_filename, code.co_firstlineno) if code else getattr(fn, "__qualname__", fn)
            raise jst.Dy2StaticError(
                "to_static: a tensor computed inside a loop over a tensor (or a branch on one) in {} is used "
                "after it{} ({}); only the variables the loop or branch assigns, and lists of tensors the "
                "function appends to, are carried out of it. Assign the value to a variable, or collect the "
                "values with paddle.tensor.create_array / array_write.".format(
                    site, ": it was put in a container at " + where if where else "", "by " + user))


def _feed_names(fn, structure, n, specs):
    """The feed variable of each flattened tensor argument, named as Paddle names them: the InputSpec's
    name, else the parameter's name, `<name>_<i>` for item i of a list/tuple and the key for a dict value."""
    params, star = [], None
    try:
        for p in inspect.signature(fn).parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                star = p.name
                break
            if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                params.append(p.name)
    except (TypeError, ValueError):
        pass
    args, kwargs = structure
    auto = [None] * n

    def walk(obj, base):
        if isinstance(obj, _Slot):
            auto[obj.i] = base
        elif isinstance(obj, (list, tuple)):
            for j, o in enumerate(obj):
                walk(o, "{}_{}".format(base, j))
        elif isinstance(obj, dict):
            for k in _sorted_keys(obj):
                walk(obj[k], str(k))

    for i, a in enumerate(args):
        if i < len(params):
            walk(a, params[i])
        else:  # *args items: <name>_<j>
            walk(a, "{}_{}".format(star, i - len(params)) if star else "input_{}".format(i))
    for k, v in kwargs.items():
        walk(v, k)
    names = []
    for i in range(n):
        spec_name = specs[i].name if specs is not None and i < len(specs) and specs[i] is not None else None
        base = spec_name or auto[i] or "input_{}".format(i)
        while base in names:
            base = base + "_"
        names.append(base)
    return names


# ---- StaticFunction -----------------------------------------------------------------------------------------
class StaticFunction:
    """What to_static returns: calls run the traced program of their input signature."""

    def __init__(self, function, input_spec=None, build_strategy=None, full_graph=True, instance=None):
        if isinstance(function, StaticFunction):
            function = function._dygraph_function
        self._dygraph_function = function
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._build_strategy = build_strategy
        self._full_graph = full_graph
        self._instance = instance
        self._cache = {}
        functools.update_wrapper(self, function)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        key = "_oar_static_" + self._dygraph_function.__name__
        bound = instance.__dict__.get(key)
        if bound is None or bound._dygraph_function is not self._dygraph_function:
            bound = StaticFunction(self._dygraph_function, self._input_spec, self._build_strategy, self._full_graph,
                                   instance)
            instance.__dict__[key] = bound
        return bound

    @property
    def dygraph_function(self):
        return self._dygraph_function

    def _call_dygraph(self, args, kwargs):
        if self._instance is not None:
            return self._dygraph_function(self._instance, *args, **kwargs)
        return self._dygraph_function(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if not _config["enabled"] or _C._is_symbolic_building():
            # disabled, or called while another program is built (nested to_static): inline the Python
            return self._call_dygraph(args, kwargs)
        if not kwargs and all(type(a) is _C.Tensor for a in args):
            # The usual call (tensor arguments only): the same signature without flattening. Its key
            # starts with an int, never equal to a flattened structure's key.
            tensors = list(args)
            head = len(args)
        else:
            tensors = []
            head = _hashable(_flatten((list(args), kwargs), tensors))
        key = (head, tuple((tuple(t.shape), t.dtype.name, t.stop_gradient, str(t.place)) for t in tensors),
               getattr(self._instance, "training", None), _amp_key())
        cp = self._cache.get(key)
        if cp is None:
            cp = self._build(args, kwargs, tensors)
            self._cache[key] = cp
        return cp.run(tensors)

    def _build(self, args, kwargs, tensors, specs=None):
        place = tensors[0].place if tensors else None
        prog, names, fetch_names, out_structure, syms, outs, params = _trace(
            self._dygraph_function, args, kwargs, self._instance, specs, place)
        cp = ConcreteProgram(prog, names, fetch_names, out_structure, place, syms, outs, params)
        cp._build_strategy = self._build_strategy
        cp._graph_mode = getattr(self, "_cuda_graph_capture_mode", None)  # set by wrap_cuda_graph
        cp._in_structure = _flatten((list(args), kwargs), [])  # jit.save retraces with the same constants
        cp._amp_args = _amp_args()  # ... and under the same auto_cast (the casts are in the program)
        return cp

    # Paddle's introspection
    def get_concrete_program(self, *args, **kwargs):
        tensors = []
        _flatten((list(args), kwargs), tensors)
        cp = self._build(args, kwargs, tensors)
        return cp, cp.main_program

    @property
    def concrete_program(self):
        if self._cache:
            return next(reversed(self._cache.values()))
        if self._input_spec is None:
            raise ValueError("concrete_program: call the function once or give input_spec to to_static")
        return self.concrete_program_specify_input_spec(self._input_spec)

    def concrete_program_specify_input_spec(self, input_spec=None):
        args, specs, dummies = _args_of_specs(input_spec or self._input_spec or [])
        return self._build(args, {}, dummies, specs)

    @property
    def main_program(self):
        return self.concrete_program.main_program

    @property
    def code(self):
        try:
            from .dy2static import converted_source
            return converted_source(self._dygraph_function)
        except ImportError:
            return inspect.getsource(self._dygraph_function)

    def rollback(self):
        if self._instance is not None:
            self._instance.__dict__.pop("_oar_static_" + self._dygraph_function.__name__, None)
            return functools.partial(self._dygraph_function, self._instance)
        return self._dygraph_function


def _args_of_specs(input_spec):
    """Arguments for tracing from a (nested) input_spec: each InputSpec (or example Tensor) becomes a
    zero tensor of its shape; other values are constants of the program, as in Paddle. Returns the
    arguments, the flattened specs and the flattened dummy tensors."""
    if not isinstance(input_spec, (list, tuple)):
        raise TypeError("input_spec must be a list or tuple, got {}".format(type(input_spec).__name__))
    specs = []

    def leaf(obj):
        if isinstance(obj, _C.Tensor):
            obj = InputSpec.from_tensor(obj)
        if isinstance(obj, InputSpec):
            specs.append(obj)
            return _dummy(obj)
        if isinstance(obj, (list, tuple)):
            items = [leaf(o) for o in obj]
            return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
        if isinstance(obj, dict):
            done = {k: leaf(obj[k]) for k in _sorted_keys(obj)}  # the order the tensors are flattened in
            return {k: done[k] for k in obj}
        return obj

    args = [leaf(s) for s in input_spec]
    dummies = []
    _flatten((args, {}), dummies)
    return args, specs, dummies


def _dummy(spec):
    """A concrete zero tensor for an InputSpec (None extents as 1); only its shape and dtype matter."""
    from ..tensor.creation import zeros
    if not isinstance(spec, InputSpec):
        raise TypeError("input_spec entries must be InputSpec, got {}".format(type(spec).__name__))
    return zeros([1 if d is None else d for d in spec.shape], dtype=spec.dtype)


def to_static(function=None, input_spec=None, build_strategy=None, backend=None, full_graph=True, **kwargs):
    """Converts a function or a Layer (its forward) to run as a static program; usable as a decorator."""
    from ..nn import Layer

    def decorate(fn):
        if isinstance(fn, Layer):
            fn.forward = StaticFunction(type(fn).forward, input_spec, build_strategy, full_graph, fn)
            fn._oar_static_forward = fn.forward
            return fn
        if isinstance(fn, StaticFunction):
            return fn
        if not callable(fn):
            raise TypeError("to_static: expected a function or a Layer, got {}".format(type(fn).__name__))
        return StaticFunction(fn, input_spec, build_strategy, full_graph)

    if function is None:
        return decorate
    return decorate(function)


# ---- save / load --------------------------------------------------------------------------------------------
def _forward_of(layer):
    fwd = layer.__dict__.get("forward")
    if isinstance(fwd, StaticFunction):
        return fwd
    cls_fwd = type(layer).forward
    if isinstance(cls_fwd, StaticFunction):
        return cls_fwd.__get__(layer, type(layer))
    return StaticFunction(cls_fwd, None, None, True, layer)


def _amp_args():
    from ..amp.auto_cast import _current_args
    return _current_args()


def _amp_key():
    from ..amp.auto_cast import _args_key, _current_args
    return _args_key(_current_args())


def save(layer, path, input_spec=None, **configs):
    """Writes path.pdmodel (the forward as an inference program, Paddle's op types where mapped),
    path.pdiparams and path.pdiparams.info. input_spec: InputSpecs (or example Tensors) for forward's
    tensor arguments; by default the to_static input_spec or the last traced signature."""
    from ..nn import Layer
    from ..static.io import _export, save_to_file
    if not isinstance(path, str) or not path or os.path.basename(path) == "":
        raise ValueError("jit.save: path must be a file prefix such as 'out/model', got {!r}".format(path))
    if isinstance(layer, Layer):
        sf = _forward_of(layer)
    elif isinstance(layer, StaticFunction):
        sf = layer
    elif callable(layer):
        sf = StaticFunction(layer)
    else:
        raise TypeError("jit.save: expected a Layer or a function, got {}".format(type(layer).__name__))
    kwargs = {}
    amp_args = None
    if sf._cache:  # the last trace's auto_cast, when jit.save is called outside one
        amp_args = getattr(next(reversed(sf._cache.values())), "_amp_args", None)
    if input_spec is not None or sf._input_spec is not None:
        args, specs, dummies = _args_of_specs(input_spec if input_spec is not None else sf._input_spec)
    elif sf._cache:
        # the last traced signature: its constants and nesting, tensors by their feed variables
        cp = next(reversed(sf._cache.values()))
        specs = [InputSpec(v["shape"], v["dtype"], n) for n, v in
                 ((n, cp.main_program.global_block()._var_descs()[n]) for n in cp.feed_names)]
        dummies = [_dummy(s) for s in specs]
        args, kwargs = _unflatten(cp._in_structure, dummies)
    else:
        raise ValueError("jit.save: give input_spec (or call the layer once, or decorate forward with "
                         "to_static(input_spec=...))")
    if amp_args is not None and _amp_args() is None:
        from ..amp import auto_cast
        with auto_cast(**amp_args):
            cp = sf._build(args, kwargs, dummies, specs)
    else:
        cp = sf._build(args, kwargs, dummies, specs)
    fetch = list(dict.fromkeys(cp.fetch_names))
    desc = _C._prepare_inference_program(cp.main_program.desc, cp.feed_names, fetch)
    desc = _export(desc)
    names = _C._persistable_inputs(desc)
    caps = cp.main_program._all_captures()
    arrays = {}
    for n in names:
        if n not in caps:
            raise ValueError("jit.save: persistable variable '{}' has no value".format(n))
        arrays[n] = np.array(caps[n]._numpy_view(), order="C")  # (ascontiguousarray would make 0-d 1-d)
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    save_to_file(path + ".pdmodel", desc.to_bytes())
    save_to_file(path + ".pdiparams", _C._save_combined_params(arrays))
    info = {}
    if isinstance(layer, Layer):
        structured = {}
        for k, v in layer.state_dict().items():
            structured.setdefault(v.name, k)
        for n in names:
            p = cp.main_program._params.get(n)
            info[n] = {"structured_name": structured.get(n, n),
                       "stop_gradient": bool(p.stop_gradient) if p is not None else True,
                       "trainable": bool(p.trainable) if p is not None else False}
    else:
        info = {n: {"structured_name": n, "stop_gradient": True, "trainable": False} for n in names}
    save_to_file(path + ".pdiparams.info", _C._serialize_params_info(info))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


_translated_layer_class = []  # made on first use: it subclasses oar.nn.Layer, imported after oar.jit


def __getattr__(name):  # oar.jit.api.TranslatedLayer
    if name == "TranslatedLayer":
        return _get_translated_layer_class()
    raise AttributeError(name)


def _get_translated_layer_class():
    if not _translated_layer_class:
        _translated_layer_class.append(_make_translated_layer_class())
    return _translated_layer_class[0]


def _make_translated_layer_class():
    from ..framework.parameter import Parameter
    from ..nn import Layer
    from ..tensor.creation import to_tensor

    class TranslatedLayer(Layer):
        """A model loaded by jit.load: runs its program with the executor. Its parameters are
        Parameters (trainable as saved), so it can be fine-tuned: gradients flow as in eager mode."""

        def __init__(self, desc, arrays, info):
            super().__init__()
            self._desc = desc
            self._program = _prog.Program(desc)
            from ..static.io import _feed_fetch_names
            self._feed_names, self._fetch_names = _feed_fetch_names(desc)
            self._tensors = {}
            for name, a in arrays.items():
                meta = info.get(name, {})
                trainable = bool(meta.get("trainable", True))
                p = Parameter(to_tensor(a), name=name, trainable=trainable)
                self._tensors[name] = p
                attr = meta.get("structured_name", name).replace(".", "_")
                while attr in self._parameters:
                    attr += "_"
                self.add_parameter(attr, p)
            self._program._inherited = dict(self._tensors)
            self._exe = None

        def _executor(self):
            if self._exe is None:
                self._exe = _C._Executor(self._desc, None)
                for name, t in self._tensors.items():
                    self._exe.scope.set(name, t)
            return self._exe

        def forward(self, *inputs):
            if len(inputs) != len(self._feed_names):
                raise ValueError("TranslatedLayer: the model takes {} inputs ({}), got {}".format(
                    len(self._feed_names), ", ".join(self._feed_names), len(inputs)))
            feeds = {}
            for name, x in zip(self._feed_names, inputs):
                feeds[name] = x if isinstance(x, _C.Tensor) else to_tensor(np.asarray(x))
            outs = self._executor().run(feeds)
            return outs[0] if len(outs) == 1 else outs

        def program(self, method_name="forward"):
            return self._program

    return TranslatedLayer


def load(path, **configs):
    """Loads a model written by jit.save (or Paddle's jit.save / save_inference_model) as a
    TranslatedLayer."""
    model = path + ".pdmodel"
    if not os.path.exists(model):
        raise ValueError("jit.load: no model file '{}'".format(model))
    desc = _C._ProgramDesc.from_bytes(_read(model))
    arrays = {}
    if os.path.exists(path + ".pdiparams"):
        arrays = _C._load_combined_params(desc, _read(path + ".pdiparams"))
    elif _C._persistable_inputs(desc):
        raise ValueError("jit.load: no parameter file '{}'".format(path + ".pdiparams"))
    info = _C._parse_params_info(_read(path + ".pdiparams.info")) if os.path.exists(path + ".pdiparams.info") else {}
    prev = _C._set_builder(None)  # the layer's parameters are made now, also in static mode
    try:
        return _translated_layer(desc, arrays, info)
    finally:
        _C._set_builder(prev)


def _translated_layer(desc, arrays, info):
    return _get_translated_layer_class()(desc, arrays, info)


def _jit_state_dict(path):
    """oar.load(path) of a jit model: {structured name: Tensor}."""
    from ..tensor.creation import to_tensor
    desc = _C._ProgramDesc.from_bytes(_read(path + ".pdmodel"))
    arrays = _C._load_combined_params(desc, _read(path + ".pdiparams"))
    info = _C._parse_params_info(_read(path + ".pdiparams.info")) if os.path.exists(path + ".pdiparams.info") else {}
    out = {}
    for name, a in arrays.items():
        t = to_tensor(a)
        t.name = name
        out[info.get(name, {}).get("structured_name", name)] = t
    return out
