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
import weakref

from .. import _C

__all__ = ["Program", "program_guard", "default_main_program", "default_startup_program", "data", "global_scope",
           "scope_guard", "Scope", "Variable", "name_scope", "device_guard", "cpu_places", "create_global_var",
           "create_parameter", "Block", "Operator"]

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
        if is_symbolic(obj):
            return True
        # In static mode Paddle's parameters are Variables (its Parameter subclasses Variable)
        from ..framework.parameter import Parameter
        return _in_static_mode() and isinstance(obj, Parameter)


class Variable(metaclass=_VariableMeta):
    """Paddle's static Variable type, for isinstance checks: program variables are oar Tensors (and, in
    static mode, Parameters). Their Variable attributes (block, op, persistable) are set on Tensor below."""


_paddle_types = {}  # native op name -> Paddle type (filled on first use from the Paddle op map)


def _paddle_op_type(recorded):
    """The op type Operator.type reports: Paddle's name for a native op ("oar.matmul") whose export
    the Paddle op map defines ("matmul_v2"), the recorded type otherwise (decision 52)."""
    if not recorded.startswith("oar."):
        return recorded
    if not _paddle_types:
        _paddle_types.update(_C._paddle_op_types())
    return _paddle_types.get(recorded[4:], recorded)


class Operator:
    """One op of a Block (Paddle's Operator): `type`, slots (`input(name)` / `output(name)` give variable
    names), attributes, `idx` and `block`. A snapshot of the op when the Block's `ops` was read."""

    def __init__(self, block, idx, desc):
        self.block = block
        self.idx = idx
        self._desc = desc  # the recorded op as a dict: type, inputs, outputs, attrs, attr_types (private)

    @property
    def type(self):
        return _paddle_op_type(self._desc["type"])

    @property
    def _recorded_type(self):
        return self._desc["type"]

    @staticmethod
    def _slot(slots, name, what, op_type):
        if name in slots:
            return list(slots[name])
        # Paddle's slot names are capitalised (X, Y, Out); native ops record x, y, out
        matches = [k for k in slots if k.lower() == str(name).lower()]
        if len(matches) == 1:
            return list(slots[matches[0]])
        raise ValueError("{} {} cannot be found in operator {} (it has {})".format(
            what, name, op_type, sorted(slots)))

    def input(self, name):
        """The names of the variables in input slot `name` (ValueError when the op has no such slot)."""
        return self._slot(self._desc["inputs"], name, "Input", self.type)

    def output(self, name):
        return self._slot(self._desc["outputs"], name, "Output", self.type)

    @property
    def input_names(self):
        return list(self._desc["inputs"])

    @property
    def output_names(self):
        return list(self._desc["outputs"])

    @property
    def input_arg_names(self):
        return [n for names in self._desc["inputs"].values() for n in names]

    @property
    def output_arg_names(self):
        return [n for names in self._desc["outputs"].values() for n in names]

    @property
    def attr_names(self):
        return list(self._desc["attrs"])

    def has_attr(self, name):
        return name in self._desc["attrs"]

    def attr(self, name):
        """The value of attribute `name` (ValueError when the op has none)."""
        if name not in self._desc["attrs"]:
            raise ValueError("Attribute {} is not found in operator {} (it has {})".format(
                name, self.type, sorted(self._desc["attrs"])))
        value = self._desc["attrs"][name]
        if self._desc["attr_types"].get(name) == "BLOCK":  # Paddle gives the block, not its index
            return self.block.program.block(value)
        return value

    def _block_attr_id(self, name):
        """The index of the block a BLOCK attribute (sub_block) names."""
        return self.attr(name).idx

    def attr_type(self, name):
        self.attr(name)
        return self._desc["attr_types"][name]

    def all_attrs(self):
        return {k: self.attr(k) for k in self._desc["attrs"]}

    def to_string(self, throw_on_error=False):
        return _format_op(self._desc)

    def __eq__(self, other):  # ops read at different times are one op when block, place and record agree
        return (isinstance(other, Operator) and other.block is self.block and other.idx == self.idx
                and other._desc == self._desc)

    def __hash__(self):
        return hash((id(self.block), self.idx))

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


class Block:
    """One block of a Program (Paddle's Block): its ops (Operator objects) and variables by name."""

    def __init__(self, program, idx):
        self.program = program
        self.idx = idx

    def _desc(self):
        return self.program.desc.block(self.idx)

    @property
    def ops(self):
        """The block's ops in order, as Operator objects (read afresh at each access)."""
        return [Operator(self, i, d) for i, d in enumerate(self._desc()["ops"])]

    @property
    def vars(self):
        """{name: Variable} in declaration order: Parameters as the Parameter objects, the others as
        symbolic tensors (entries that are not tensors, such as feed/fetch lists, as their names)."""
        return {v["name"]: self._variable(v) for v in self._desc()["vars"]}

    def _variable(self, v):
        name = v["name"]
        p = self.program._params.get(name)
        if p is not None:
            return p
        if "dtype" not in v:
            return name
        b = self.program._builder
        t = b.live_tensor(name)  # the tensor the program was built with, if alive
        if t is not None and is_symbolic(t):
            return t
        prev = b.current_block
        b.current_block = self.idx  # the builder looks variables up from its current block outwards
        try:
            return b.var(name)
        finally:
            b.current_block = prev

    @property
    def parent_idx(self):
        return self._desc()["parent_idx"]

    @property
    def forward_block_idx(self):
        return self._desc()["forward_block_idx"]

    def _var_descs(self):
        """{name: the variable's record as a dict} (name, type, dtype, shape, persistable, ...); private,
        for readers that need the records rather than Variables (the executor's feed checks)."""
        return {v["name"]: v for v in self._desc()["vars"]}

    def _var_desc(self, name):
        for v in self._desc()["vars"]:
            if v["name"] == name:
                return v
        return None

    def var(self, name):
        """The variable `name` of this block (ValueError when the block has none)."""
        if not isinstance(name, str):
            raise TypeError("Block.var: name must be a str, got {}".format(type(name).__name__))
        v = self._var_desc(name)
        if v is None:
            raise ValueError("var {} not in this block".format(name))
        return self._variable(v)

    def has_var(self, name):
        return self._var_desc(name) is not None

    def _find_var_recursive(self, name):
        b = self
        while True:
            v = b._var_desc(name)
            if v is not None:
                return b._variable(v)
            if b.parent_idx < 0:
                return None
            b = self.program.block(b.parent_idx)

    def all_parameters(self):
        names = {v["name"] for v in self._desc()["vars"]}
        return [p for n, p in self.program._params.items() if n in names]

    def iter_parameters(self):
        return iter(self.all_parameters())

    def create_var(self, name=None, shape=None, dtype=None, persistable=False, stop_gradient=True, **kwargs):
        """A new variable of this block (Paddle's Block.create_var): a symbolic tensor."""
        if self.idx != self.program._builder.current_block:
            raise ValueError("Block.create_var: block {} is not the program's current block ({})".format(
                self.idx, self.program._builder.current_block))
        name = name or self.program._builder.unique_name("_generated_var")
        shape = [-1 if d is None else int(d) for d in (shape or [])]
        dtype = _C.to_dtype(dtype if dtype is not None else _C.get_default_dtype())
        return self.program._builder.create_var(name, shape, dtype, persistable=bool(persistable),
                                                stop_gradient=bool(stop_gradient))

    def create_parameter(self, shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None,
                         initializer=None):
        """A parameter used by this block's program (created with its initial value, as oar's static
        parameters are; docs/static.md). `initializer` is Paddle's Block keyword for default_initializer."""
        from ..framework.parameter import create_parameter as _cp
        if initializer is not None and default_initializer is not None:
            raise ValueError("Block.create_parameter: give initializer or default_initializer, not both")
        p = _cp(shape, dtype, name=name, attr=attr, is_bias=is_bias,
                default_initializer=initializer if initializer is not None else default_initializer)
        self.program._bind_parameter(p)
        return p

    def to_string(self, throw_on_error=False, with_details=False):
        return _format_block(self._desc())

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


class Program:
    """A static program: blocks of variables and ops (Paddle's Program). `desc` is the C++ program
    (.pdmodel format). Build into it with program_guard (or static mode's default program)."""

    def __init__(self, _desc=None):
        self._builder = _C._ProgramBuilder(_desc)
        self._blocks = {}  # idx -> Block, so that global_block() is global_block()
        _programs[self._builder._address] = self
        self._random_seed = 0
        self._params = {}  # name -> Parameter used by the program (bound in advance as captures)
        self._is_test = False
        self._for_to_static = False
        self._lr_slots = []  # (optimizer, [(op index in block 0, lr multipliers)]) from minimize
        self._lr_version = 0  # bumped when _sync_lr rewrites learning rates (executors re-lower)

    @property
    def desc(self):
        return self._builder.desc

    @property
    def random_seed(self):
        """The program's seed (0: none); clone() keeps it."""
        return self._random_seed

    @random_seed.setter
    def random_seed(self, seed):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError("Program.random_seed must be an int, got {!r}".format(seed))
        self._random_seed = seed

    def global_block(self):
        return self.block(0)

    def block(self, index):
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError("Program.block: index must be an int, got {}".format(type(index).__name__))
        if -self.num_blocks <= index < 0:  # as a list of blocks (Paddle's)
            index += self.num_blocks
        if not 0 <= index < self.num_blocks:
            raise IndexError("Program.block: the program has {} block(s); no block {}".format(
                self.num_blocks, index))
        b = self._blocks.get(index)
        if b is None:
            b = self._blocks[index] = Block(self, index)
        return b

    def current_block(self):
        return self.block(self._builder.current_block)

    @property
    def num_blocks(self):
        return self.desc.num_blocks

    @property
    def blocks(self):
        return [self.block(i) for i in range(self.num_blocks)]

    def list_vars(self):
        """Every variable of every block, in order (as Block.vars gives them)."""
        for b in self.blocks:
            yield from b.vars.values()

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
        """The program as text (str(program)); Paddle's form is its protobuf dump, oar's the readable one."""
        if not isinstance(throw_on_error, bool):
            raise TypeError("Program.to_string: throw_on_error must be a bool, got {}".format(
                type(throw_on_error).__name__))
        return str(self)

    def __str__(self):
        return "\n".join(_format_block(self.desc.block(i)) for i in range(self.num_blocks))

    __repr__ = __str__

    def __enter__(self):  # pragma: no cover - convenience, as program_guard(self)
        self._guard = program_guard(self)
        return self._guard.__enter__()

    def __exit__(self, *exc):  # pragma: no cover
        return self._guard.__exit__(*exc)


def _format_var(v):
    if "dtype" not in v:
        return "var {} : {}".format(v["name"], v["type"])
    prefix = "persist trainable param " if v["is_parameter"] else ("persist var " if v["persistable"] else "var ")
    return "{}{} : {}.shape{}.dtype({}).stop_gradient({})".format(
        prefix, v["name"], v["type"], tuple(v["shape"]), v["dtype"].name, v["stop_gradient"])


def _format_op(op):
    outs = ", ".join("{}={}".format(k, v) for k, v in op["outputs"].items())
    ins = ", ".join("{}={}".format(k, v) for k, v in op["inputs"].items())
    attrs = ", ".join("{} = {!r}".format(k, v) for k, v in sorted(op["attrs"].items()))
    return "{{{}}} = {}(inputs={{{}}}{})".format(outs, op["type"], ins,
                                                 ", " + attrs if attrs else "")


def _format_block(b):
    lines = ["{{ // block_idx:{}  parent_idx:{}  forward_idx:{}  backward_idx:-1".format(
        b["idx"], b["parent_idx"], b["forward_block_idx"])]
    lines += ["    " + _format_var(v) for v in b["vars"]]
    lines.append("")
    lines += ["    " + _format_op(op) for op in b["ops"]]
    lines.append("}")
    return "\n".join(lines)


# ---- Variable attributes Paddle's static Variable has (program variables are oar Tensors) -----------------
_programs = weakref.WeakValueDictionary()  # builder _address -> Program (Variable.block)


def _variable_block(t):
    """The block declaring symbolic tensor `t` (its program's current block outwards); for a Parameter
    of the default main program, its global block; None otherwise (a concrete tensor, a program gone)."""
    if not is_symbolic(t):
        from ..framework.parameter import Parameter
        if not isinstance(t, Parameter):
            return None
        name = t.name
        for prog in [_defaults["main"]] + list(_programs.values()):  # the default main program first
            if prog._params.get(name) is t:
                return prog.global_block()
        return None
    prog = _programs.get(_C._symbolic_builder(t))
    if prog is None:
        return None
    name = _C._symbolic_name(t)
    b = prog.current_block()
    while True:
        if b.has_var(name):
            return b
        if b.parent_idx < 0:
            return None
        b = prog.block(b.parent_idx)


def _variable_op(t):
    """The last op of its block writing symbolic tensor `t` (Paddle's Variable.op); None if none does."""
    b = _variable_block(t)
    if b is None:
        return None
    name = _C._symbolic_name(t)
    for op in reversed(b.ops):
        if name in op.output_arg_names:
            return op
    return None


def _variable_desc(t):
    b = _variable_block(t)
    return b._var_desc(_C._symbolic_name(t)) if b is not None else None


_tensor_persistable = _C.Tensor.persistable


def _get_persistable(t):
    if is_symbolic(t):  # a program variable's flag is its record's
        v = _variable_desc(t)
        if v is not None:
            return v["persistable"]
    return _tensor_persistable.fget(t)


_C.Tensor.persistable = property(_get_persistable, _tensor_persistable.fset, doc=_tensor_persistable.__doc__)
_C.Tensor.block = property(_variable_block, doc="A program variable's Block (None for a concrete tensor).")
_C.Tensor.op = property(_variable_op, doc="The op that writes a program variable (None when none does).")


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
    prog = default_main_program()
    if prog.current_block().has_var(name):
        # Paddle: declaring a variable again with the same shape and dtype is that variable
        old = prog._builder.var(name)
        if list(old.shape) != dims or old.dtype != dtype:
            raise ValueError("static.data: variable '{}' was declared before with shape {} and dtype {}; now "
                             "shape {} and dtype {}".format(name, list(old.shape), old.dtype.name, dims, dtype.name))
        return old
    return prog._builder.create_var(name, dims, dtype)


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
