"""Programs, static mode and the guards (Paddle's paddle.static Program / program_guard / data / scopes).

In static mode every oar op call is recorded into the current Program instead of running (C++:
oar/ir/static_graph.h). Tensors standing for program variables are *symbolic*: they have a name, a
shape (-1 for unknown extents) and a dtype, but no value until an Executor runs the program.

Parameters are created eagerly (with their initial values) even in static mode; a program that uses one
captures it as a persistable variable with the parameter's name, and executors bind it into their scope
by reference, so the Layer's parameter and the program's variable are one tensor (docs/static.md).
The startup program therefore holds no initialisation ops; running it binds the main program's
parameters into the scope, which is what Paddle users rely on it for.
"""
import contextlib

from .. import _C

__all__ = ["Program", "program_guard", "default_main_program", "default_startup_program", "data", "global_scope",
           "scope_guard", "Scope", "Variable", "name_scope", "device_guard", "cpu_places", "create_global_var",
           "create_parameter", "Block"]

_state = {"static": False}


def _in_static_mode():
    return _state["static"]


def is_symbolic(t):
    """True for a tensor that stands for a variable of a program being built."""
    return isinstance(t, _C.Tensor) and _C._is_symbolic(t)


@contextlib.contextmanager
def _eager_guard():
    """Runs ops eagerly inside (parameter and optimizer-state creation while a program is built)."""
    prev = _C._set_builder(None)
    try:
        yield
    finally:
        _C._set_builder(prev)


@contextlib.contextmanager
def _builder_guard(builder):
    prev = _C._set_builder(builder)
    try:
        yield
    finally:
        _C._set_builder(prev)


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return is_symbolic(obj)


class Variable(metaclass=_VariableMeta):
    """Paddle's static Variable type, for isinstance checks: program variables are oar Tensors."""


class Block:
    """A view of one block of a Program: its variables and ops (as plain dicts)."""

    def __init__(self, program, idx):
        self.program = program
        self.idx = idx

    @property
    def ops(self):
        return self.program.desc.block(self.idx)["ops"]

    @property
    def vars(self):
        return {v["name"]: v for v in self.program.desc.block(self.idx)["vars"]}

    @property
    def parent_idx(self):
        return self.program.desc.block(self.idx)["parent_idx"]

    def var(self, name):
        """The variable `name` as a symbolic tensor (ValueError when the block has none)."""
        if name not in self.vars:
            raise ValueError("block {} has no variable named '{}'".format(self.idx, name))
        return self.program._builder.var(name)

    def has_var(self, name):
        return name in self.vars

    def all_parameters(self):
        return self.program.all_parameters()

    def __repr__(self):
        return "Block(idx={}, {} vars, {} ops)".format(self.idx, len(self.vars), len(self.ops))


class Program:
    """A static program: blocks of variables and ops (Paddle's Program). `desc` is the C++ program
    (.pdmodel format). Build into it with program_guard (or static mode's default program)."""

    def __init__(self, _desc=None):
        self._builder = _C._ProgramBuilder(_desc)
        self.random_seed = 0
        self._params = {}  # name -> Parameter used by the program (bound in advance as captures)
        self._is_test = False
        self._for_to_static = False
        self._lr_slots = []  # (optimizer, [(op index in block 0, lr multipliers)]) from minimize
        self._lr_version = 0  # bumped when _sync_lr rewrites learning rates (executors re-lower)

    @property
    def desc(self):
        return self._builder.desc

    def global_block(self):
        return Block(self, 0)

    def block(self, index):
        if not 0 <= index < self.num_blocks:
            raise ValueError("Program has {} blocks; no block {}".format(self.num_blocks, index))
        return Block(self, index)

    def current_block(self):
        return Block(self, self._builder.current_block)

    @property
    def num_blocks(self):
        return self.desc.num_blocks

    def list_vars(self):
        for i in range(self.num_blocks):
            for name in self.block(i).vars:
                yield self._builder.var(name) if self._is_tensor_var(i, name) else name

    def _is_tensor_var(self, block, name):
        return "dtype" in self.block(block).vars[name]

    def all_parameters(self):
        """The parameters the program uses (Parameter objects)."""
        return list(self._params.values())

    def _bind_parameter(self, p):
        """Makes parameter `p` a variable of this program under its own name (before first use)."""
        if p.name in self._params:
            if self._params[p.name] is not p:
                raise ValueError("Program: two different parameters are named '{}'".format(p.name))
            return
        self._builder.bind_capture(p, p.name, is_parameter=True)
        self._params[p.name] = p

    def _captures(self):
        return self._builder.captures()

    def clone(self, for_test=False):
        """A copy; for_test=True keeps only the forward ops (no backward or optimizer ops), with dropout and
        batch_norm in inference mode (see _train_and_test)."""
        desc = self.desc.clone()
        if for_test:
            desc = _C._select_mode(_C._filter_ops_by_role(desc, [0]), True)
        p = Program(desc)
        p.random_seed = self.random_seed
        p._is_test = for_test
        if not for_test:  # the optimizer ops keep their indices
            p._lr_slots = [[opt, ops, applied] for opt, ops, applied in self._lr_slots]
        p._inherit_captures(self)
        return p

    def _track_lr(self, optimizer, first_op):
        """Remembers the optimizer ops minimize recorded from op `first_op` on, with the learning-rate
        multipliers they were recorded with, and sets their rates from the optimizer's current one."""
        slots = []
        for i, op in enumerate(self.desc.block(0)["ops"][first_op:], first_op):
            lr = op["attrs"].get("learning_rate")
            if isinstance(lr, list):
                slots.append((i, [float(v) for v in lr]))
        if slots:
            self._lr_slots.append([optimizer, slots, None])
            self._sync_lr()

    def _sync_lr(self):
        """Rewrites the optimizer ops' learning rates where the optimizer's get_lr() changed (an
        LRScheduler stepped, set_lr) since the last run, as Paddle feeds its learning-rate variable."""
        for slot in self._lr_slots:
            optimizer, ops, applied = slot
            lr = optimizer.get_lr()
            if lr == applied:
                continue
            for i, mults in ops:
                _C._set_op_float64s(self.desc, 0, i, "learning_rate", [m * lr for m in mults])
            slot[2] = lr
            self._lr_version += 1

    def _inherit_captures(self, other):
        self._params = dict(other._params)
        self._inherited = other._captures()

    def _all_captures(self):
        out = dict(getattr(self, "_inherited", {}))
        out.update(self._captures())
        return out

    def to_string(self, throw_on_error=False, with_details=False):
        return str(self)

    def __str__(self):
        return _format_program(self.desc)

    __repr__ = __str__

    def __enter__(self):  # pragma: no cover - convenience, as program_guard(self)
        self._guard = program_guard(self)
        return self._guard.__enter__()

    def __exit__(self, *exc):  # pragma: no cover
        return self._guard.__exit__(*exc)


def _format_var(v):
    if "dtype" not in v:
        return "var {} : {}".format(v["name"], v["type"])
    flags = []
    if v["persistable"]:
        flags.append("persist")
    if v["is_parameter"]:
        flags.append("param")
    return "{}var {} : {}.shape({}).dtype({}){}".format(
        "persist trainable param " if v["is_parameter"] else ("persist " if v["persistable"] else ""),
        v["name"], v["type"], tuple(v["shape"]), v["dtype"].name, "")


def _format_op(op):
    outs = ", ".join("{}={}".format(k, v) for k, v in op["outputs"].items())
    ins = ", ".join("{}={}".format(k, v) for k, v in op["inputs"].items())
    attrs = ", ".join("{}={!r}".format(k, v) for k, v in sorted(op["attrs"].items()) if k != "op_role")
    return "{{{}}} = {}(inputs={{{}}}{})".format(outs, op["type"], ins, ", " + attrs if attrs else "")


def _format_program(desc):
    lines = []
    for i in range(desc.num_blocks):
        b = desc.block(i)
        lines.append("{{ // block_idx:{}  parent_idx:{}  forward_idx:{}  backward_idx:-1".format(
            i, b["parent_idx"], b["forward_block_idx"]))
        for v in b["vars"]:
            lines.append("    " + _format_var(v))
        lines.append("")
        for op in b["ops"]:
            lines.append("    " + _format_op(op))
        lines.append("}")
    return "\n".join(lines)


# ---- the default programs and the guards ---------------------------------------------------------------
_defaults = {"main": Program(), "startup": Program()}


def default_main_program():
    return _defaults["main"]


def default_startup_program():
    return _defaults["startup"]


def _switch_main(program):
    prev = _defaults["main"]
    _defaults["main"] = program
    return prev


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Ops built inside go into `main_program` (parameters' programs: startup_program)."""
    if not isinstance(main_program, Program):
        raise TypeError("program_guard: main_program must be a Program, got {}".format(type(main_program).__name__))
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("program_guard: startup_program must be a Program, got {}".format(
            type(startup_program).__name__))
    prev_main, prev_startup = _defaults["main"], _defaults["startup"]
    _defaults["main"] = main_program
    if startup_program is not None:
        _defaults["startup"] = startup_program
        startup_program._main = main_program
    prev_builder = _C._set_builder(main_program._builder)
    try:
        yield
    finally:
        _C._set_builder(prev_builder)
        _defaults["main"], _defaults["startup"] = prev_main, prev_startup


_copy = _C.Op("copy")


def _train_and_test(train_fn, test_fn):
    """The result of train_fn(). While a static-mode program is built (not a to_static one), the ops of
    test_fn() are recorded too, as the inference variant (builder mode "test", result redirected onto
    train_fn's variable), so that clone(for_test=True), save_inference_model and jit.save give dropout
    and batch_norm their inference behaviour, as Paddle's is_test attribute does."""
    if not _C._is_symbolic_building():
        return train_fn()
    prog = _defaults["main"]
    b = prog._builder
    if prog._for_to_static or b.mode or _C._current_builder() is not b:
        return train_fn()
    try:
        b.mode = "train"
        y = train_fn()
        b.mode = "test"
        first = prog.desc.num_ops(b.current_block)
        y_test = test_fn()
        if prog.desc.num_ops(b.current_block) == first:  # the inference variant is the input itself
            y_test = _copy(y_test)
        b.redirect_output(y_test, y, first)
    finally:
        b.mode = ""
    return y


def _enable_static():
    _state["static"] = True
    default_startup_program()._main = default_main_program()
    _C._set_builder(default_main_program()._builder)


def _disable_static():
    _state["static"] = False
    _C._set_builder(None)


def data(name, shape, dtype=None, lod_level=0):
    """A feed variable of the current main program: `shape` may use None or -1 for extents known only
    when the program runs (one size per run for all of them)."""
    if not isinstance(name, str) or not name:
        raise ValueError("static.data: name must be a non-empty str, got {!r}".format(name))
    if isinstance(shape, int):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError("static.data: shape must be a list or tuple, got {}".format(type(shape).__name__))
    dims = []
    for d in shape:
        if d is None:
            dims.append(-1)
        elif isinstance(d, int) and d >= -1:
            dims.append(d)
        else:
            raise ValueError("static.data: bad extent {!r} in shape {!r} (use None or -1 for unknown)".format(d, shape))
    dtype = _C.to_dtype(dtype if dtype is not None else _C.get_default_dtype())
    t = default_main_program()._builder.create_var(name, dims, dtype)
    return t


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A persistable variable holding `value` (created now, captured by the main program)."""
    from ..tensor.creation import full
    with _eager_guard():
        t = full(list(shape), value, dtype=dtype)
    t.persistable = True
    prog = default_main_program()
    name = name or prog._builder.unique_name("global_var")
    prog._builder.bind_capture(t, name, is_parameter=False)
    t.name = name
    return t


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    from ..framework.parameter import create_parameter as _cp
    return _cp(shape, dtype, name=name, attr=attr, is_bias=is_bias, default_initializer=default_initializer)


# ---- scopes -----------------------------------------------------------------------------------------------
class Scope:
    """Variables by name (Paddle's Scope): executors read parameters and write results here."""

    def __init__(self):
        self._scope = _C._Scope()

    def var(self, name):
        return _ScopeVar(self, name)

    def find_var(self, name):
        return _ScopeVar(self, name) if name in self._scope else None

    def local_var_names(self):
        return self._scope.names()

    def _get(self, name):
        return self._scope.find(name)


class _ScopeVar:
    """scope.find_var(name).get_tensor(): the variable's current value."""

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def get_tensor(self):
        t = self._scope._get(self._name)
        if t is None:
            raise ValueError("scope variable '{}' holds no tensor".format(self._name))
        return _ScopeTensor(self._scope, self._name, t)


class _ScopeTensor:
    """The LoDTensor-like handle Paddle returns: np.array(handle), handle.set(array, place), shape()."""

    def __init__(self, scope, name, t):
        self._scope, self._name, self._t = scope, name, t

    def __array__(self, dtype=None):
        a = self._t._numpy_view()
        return a.astype(dtype) if dtype is not None else a

    def shape(self):
        return list(self._t.shape)

    def _dtype(self):
        return self._t.dtype

    def set(self, array, place=None):
        import numpy as np
        from ..tensor.creation import to_tensor
        with _eager_guard():
            value = to_tensor(np.asarray(array), dtype=self._t.dtype)
            if list(value.shape) == list(self._t.shape):
                self._t.set_value(value)  # in place: programs holding this tensor see the new value
            else:
                self._scope._scope.set(self._name, value)


_scopes = [Scope()]


def global_scope():
    return _scopes[-1]


@contextlib.contextmanager
def scope_guard(scope):
    if not isinstance(scope, Scope):
        raise TypeError("scope_guard: expected a Scope, got {}".format(type(scope).__name__))
    _scopes.append(scope)
    try:
        yield
    finally:
        _scopes.pop()


@contextlib.contextmanager
def name_scope(prefix=None):
    """Accepted for compatibility (variable names do not carry the prefix)."""
    yield


@contextlib.contextmanager
def device_guard(device=None):
    """Accepted for compatibility: a program runs on the executor's place."""
    yield


def cpu_places(device_count=None):
    return [_C.CPUPlace()] * (device_count or 1)
