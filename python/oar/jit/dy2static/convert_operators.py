"""Run-time helpers called by converted code (the converted source refers to this module as `_jst`).

Every helper keeps plain Python semantics when its inputs are Python values or concrete (eager) tensors,
so a converted function run eagerly gives the same results as the original. Only a *symbolic* tensor (a
program variable of static recording, see `is_symbolic`) routes control flow to `oar.static.nn.cond` /
`oar.static.nn.while_loop` and logical operators to the `oar.logical_*` ops.

Helpers look up `is_symbolic` and `oar.static.nn` at call time (module globals), so tests can monkeypatch
them.
"""
import builtins
import inspect
import warnings

__all__ = [
    "UndefinedVar", "Dy2StaticError", "is_symbolic", "convert_ifelse", "convert_while_loop", "convert_for_loop",
    "convert_logical_and", "convert_logical_or", "convert_logical_not", "convert_print", "convert_assert",
    "convert_len", "convert_shape", "convert_isinstance", "convert_range", "convert_enumerate",
    "convert_return", "return_value", "create_bool_as_type", "unify_branch_outputs", "convert_call"
]


class Dy2StaticError(RuntimeError):
    """A construct the conversion cannot express in a static program (raised only on symbolic paths)."""


def is_symbolic(x):
    """True when x is a symbolic tensor (a variable being recorded into a Program).

    NOTE: uses the core's `oar._C._is_symbolic(t)` when the build has it (static recording); otherwise an
    object answering `_is_symbolic()` counts (the interim protocol). Tests monkeypatch this function."""
    if isinstance(x, UndefinedVar):
        return False
    c = _C_is_symbolic()
    if c is not None:
        from oar import _C
        if isinstance(x, _C.Tensor):
            return bool(c(x))
    probe = getattr(x, "_is_symbolic", None)
    return bool(probe()) if callable(probe) else False


def _C_is_symbolic():
    global _c_probe
    if _c_probe is False:
        from oar import _C
        _c_probe = getattr(_C, "_is_symbolic", None)
    return _c_probe


_c_probe = False


def _oar():
    import oar
    return oar


def _static_nn():
    """oar.static.nn, looked up at each use (it is built by other work; tests put a fake one in place)."""
    import oar.static as static
    nn = getattr(static, "nn", None)
    if nn is None:
        try:
            import importlib
            nn = importlib.import_module("oar.static.nn")
        except ImportError as e:
            raise Dy2StaticError("a tensor-dependent if/while needs oar.static.nn.cond/while_loop, which this "
                                 "build does not have") from e
    return nn


# ---------------------------------------------------------------- undefined variables
class UndefinedVar:
    """Placeholder bound to a variable that converted control flow may assign but that has no value yet
    (e.g. assigned in only one branch of an if). Using it raises UnboundLocalError naming the variable."""
    __slots__ = ("name", )

    def __init__(self, name):
        object.__setattr__(self, "name", name)

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(
            "local variable '{}' is used before it was assigned (in code converted by oar.jit.to_static it is "
            "assigned only in some branches of an if or inside a loop that did not run)".format(self.name))

    def __repr__(self):
        return "UndefinedVar({!r})".format(self.name)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        self._fail()

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __setitem__ = __index__ = __int__ = _fail
    __float__ = __neg__ = __pos__ = __abs__ = __invert__ = __contains__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail


def _check_defined(value):
    if isinstance(value, UndefinedVar):
        value._fail()
    return value


def convert_return(value):
    """Return values leave converted code through here: an UndefinedVar must not escape."""
    if isinstance(value, UndefinedVar):
        value._fail()
    if isinstance(value, tuple):
        for v in value:
            if isinstance(v, UndefinedVar):
                v._fail()
    return value


def return_value(value):
    """The final return of a function whose returns were moved: an undefined value means that no return
    statement ran (the function fell off its end), which returns None."""
    return None if isinstance(value, UndefinedVar) else value


def _to_static_variable(value):
    """A Python scalar as a 0-d tensor (loop variables of a static while must be tensors)."""
    oar = _oar()
    if isinstance(value, bool):
        return oar.full([], value, "bool")
    if isinstance(value, int):
        return oar.full([], value, "int64")
    if isinstance(value, float):
        return oar.full([], value, oar.get_default_dtype())
    return value


def create_bool_as_type(x, value=True):
    """`value` as a bool tensor when x is symbolic, else as a Python bool (flags set under a tensor if)."""
    if is_symbolic(x):
        return _oar().full([], bool(value), "bool")
    return bool(value)


# ---------------------------------------------------------------- if / else
def convert_ifelse(pred, true_fn, false_fn, get_args, set_args, return_name_ids):
    """`if pred:` whose branches were moved into true_fn/false_fn (both take no argument and write the
    enclosing function's variables named in return_name_ids through `nonlocal`)."""
    if is_symbolic(pred):
        return _run_static_cond(pred, true_fn, false_fn, get_args, set_args, return_name_ids)
    if pred:  # a concrete tensor answers bool() as in eager code
        true_fn()
    else:
        false_fn()
    return None


def _run_static_cond(pred, true_fn, false_fn, get_args, set_args, names):
    init = tuple(get_args())

    def branch(fn):
        def run():
            set_args(init)  # each branch starts from the values before the if
            fn()
            return tuple(get_args()) if names else None
        return run

    cond = _static_nn().cond
    kwargs = {}
    try:
        if "return_names" in inspect.signature(cond).parameters:
            kwargs["return_names"] = tuple(names)
    except (TypeError, ValueError):
        pass
    outs = cond(pred, branch(true_fn), branch(false_fn), **kwargs)
    if not names:
        set_args(())
        return None
    if not isinstance(outs, (list, tuple)):
        outs = (outs, )
    if len(outs) != len(names):
        raise Dy2StaticError("oar.static.nn.cond returned {} values for the {} variables {} of the if".format(
            len(outs), len(names), list(names)))
    set_args(tuple(outs))
    return None


def unify_branch_outputs(true_out, false_out, names=None):
    """For oar.static.nn.cond (optional helper): make the outputs of the two branch functions built by
    convert_ifelse match position by position, as Paddle's select_input_with_buildin_type does. Call it
    after both branches ran, in the parent block (the tensors it creates are constants there).

    Per position: two tensors stay; equal Python values stay; differing Python scalars become 0-d tensors;
    a Python scalar paired with a tensor becomes a 0-d tensor of that tensor's dtype; an UndefinedVar or
    None paired with a tensor becomes zeros of the tensor's shape and dtype (a variable assigned in one
    branch only; its value is unspecified where the other branch ran). Anything else raises
    Dy2StaticError naming the variable. Returns (true_out, false_out)."""
    if true_out is None and false_out is None:
        return None, None
    t_out, f_out = list(true_out or ()), list(false_out or ())
    if len(t_out) != len(f_out):
        raise Dy2StaticError("the branches of a tensor if give {} and {} values".format(len(t_out), len(f_out)))
    for k in range(len(t_out)):
        name = names[k] if names is not None and k < len(names) else "#{}".format(k)
        t_out[k], f_out[k] = _unify_pair(t_out[k], f_out[k], name)
    return tuple(t_out), tuple(f_out)


def _unify_pair(a, b, name):
    oar = _oar()
    scalar = (bool, int, float)
    ta = is_symbolic(a) or isinstance(a, oar.Tensor)
    tb = is_symbolic(b) or isinstance(b, oar.Tensor)
    if ta and tb:
        return a, b
    if not ta and not tb:
        if a is b or (isinstance(a, scalar) and type(a) is type(b) and a == b):
            return a, b
        if isinstance(a, scalar) and isinstance(b, scalar):
            return _to_static_variable(a), _to_static_variable(b)
        if isinstance(a, UndefinedVar) and isinstance(b, UndefinedVar):
            return a, b
        raise Dy2StaticError("variable '{}' is {} in one branch of a tensor if and {} in the other".format(
            name, type(a).__name__, type(b).__name__))
    t, other = (a, b) if ta else (b, a)
    if isinstance(other, scalar):
        other = oar.full([], other, t.dtype)
    elif isinstance(other, UndefinedVar) or other is None:
        shape = list(t.shape)
        if any(d is None or d < 0 for d in shape):
            raise Dy2StaticError("variable '{}' is assigned in only one branch of a tensor if and its shape {} is "
                                 "not fully known; assign it before the if".format(name, shape))
        other = oar.zeros(shape, t.dtype)
    else:
        raise Dy2StaticError("variable '{}' is a tensor in one branch of a tensor if and {} in the other".format(
            name, type(other).__name__))
    return (t, other) if ta else (other, t)


# ---------------------------------------------------------------- loops
def convert_while_loop(cond_fn, body_fn, get_args, set_args, return_name_ids):
    """`while cond:` whose condition and body were moved into cond_fn/body_fn."""
    pred = cond_fn()
    while True:
        if is_symbolic(pred):
            # A condition that is (or became) symbolic runs the remaining iterations as a static loop.
            _lists_to_arrays(body_fn)
            _run_static_while(cond_fn, body_fn, get_args, set_args, return_name_ids)
            return None
        if not pred:
            return None
        body_fn()
        pred = cond_fn()


def _carried(value):
    oar = _oar()
    return is_symbolic(value) or isinstance(value, (oar.Tensor, bool, int, float))


_LIST_WRITES = ("append", "extend")
_STATIC_LOOP_DEPTH = [0]         # tensor loops being recorded (convert_call notes container writes in them)
_LOOP_CONTAINER_WRITES = {}      # program variable name -> "file:line (list.append)" of such a write


def _appended_names(code, found):
    """Names of closure variables whose .append/.extend the code (or code nested in it) calls."""
    import dis
    prev = None
    for ins in dis.get_instructions(code):
        if prev is not None and prev.opname == "LOAD_DEREF" and ins.opname in ("LOAD_ATTR", "LOAD_METHOD") \
                and ins.argval in _LIST_WRITES:
            found.add(prev.argval)
        # `out += [...]` (BINARY_OP += on 3.11+, INPLACE_ADD before) stored back into the variable
        if prev is not None and ins.opname == "STORE_DEREF" and (
                prev.opname == "INPLACE_ADD" or (prev.opname == "BINARY_OP" and prev.argrepr == "+=")):
            found.add(ins.argval)
        prev = ins
    for c in code.co_consts:
        if inspect.iscode(c):
            _appended_names(c, found)
    return found


def _lists_to_arrays(body_fn):
    """Python lists of tensors that a static loop's body appends to become tensor arrays (in the
    enclosing function's own variable cell), as Paddle does: a list appended to once per recorded
    iteration would otherwise hold only the sub-block variables of the single recording."""
    code = getattr(body_fn, "__code__", None)
    cells = getattr(body_fn, "__closure__", None)
    if code is None or not cells:
        return
    names = _appended_names(code, set())
    if not names:
        return
    from ...tensor.array import TensorArray
    oar = _oar()
    for name, cell in zip(code.co_freevars, cells):
        if name not in names:
            continue
        try:
            value = cell.cell_contents
        except ValueError:  # not yet bound
            continue
        if type(value) is list and all(isinstance(v, oar.Tensor) for v in value):
            cell.cell_contents = TensorArray(None, value)


def _run_static_while(cond_fn, body_fn, get_args, set_args, names, counter=None):
    """oar.static.nn.while_loop over the variables the body writes. Tensors and Python scalars (made
    0-d tensors) are loop-carried; other values (UndefinedVar, None, objects) stay fixed and a variable
    first defined inside the body is undefined again after the loop.

    counter: optional (init, step_fn) for a hidden leading loop variable (for-loops over tensors)."""
    init = list(get_args())
    idx = [k for k, v in enumerate(init) if _carried(v)]
    loop_vars = [_to_static_variable(init[k]) for k in idx]
    extra = 0
    if counter is not None:
        loop_vars = [counter[0]] + loop_vars
        extra = 1
    if not loop_vars:
        raise Dy2StaticError("a while loop with a tensor condition must change a tensor or number variable in its "
                             "body (variables {} have no tensor or number value)".format(list(names)))

    def put(vals):
        cur = list(init)
        for k, v in zip(idx, vals[extra:]):
            cur[k] = v
        set_args(tuple(cur))

    def cond(*vals):
        put(vals)
        return cond_fn(*vals[:extra])

    def body(*vals):
        put(vals)
        body_fn(*vals[:extra])
        out = list(get_args())
        for k, name in enumerate(names):
            if k not in idx and name.startswith("_jst_retval") and not isinstance(out[k], UndefinedVar):
                raise Dy2StaticError(
                    "'return' inside a loop whose condition is a tensor is not supported: the returned value "
                    "has no value before the loop to carry; assign it to a variable defined before the loop "
                    "and 'break' instead")
        res = [_to_static_variable(out[k]) for k in idx]
        if counter is not None:
            res = [counter[1](vals[0])] + res
        return res

    _STATIC_LOOP_DEPTH[0] += 1
    try:
        outs = _static_nn().while_loop(cond, body, loop_vars)
    finally:
        _STATIC_LOOP_DEPTH[0] -= 1
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(outs) != len(loop_vars):
        raise Dy2StaticError("oar.static.nn.while_loop returned {} values for {} loop variables".format(
            len(outs), len(loop_vars)))
    put(outs)
    return outs[:extra]


class _SymbolicRange:
    """range(start, stop, step) with a symbolic bound: only a for-loop can iterate it (as a static while)."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __iter__(self):
        raise Dy2StaticError("range() with a tensor bound can only be used as the iterable of a for loop in "
                             "code converted by oar.jit.to_static")


class _SymbolicEnumerate:
    def __init__(self, tensor, start):
        self.tensor, self.start = tensor, start

    def __iter__(self):
        raise Dy2StaticError("enumerate() of a symbolic tensor can only be used as the iterable of a for loop")


def convert_range(*args):
    """range(); a symbolic bound gives a _SymbolicRange for convert_for_loop."""
    if any(is_symbolic(a) for a in args):
        if len(args) == 1:
            return _SymbolicRange(0, args[0], 1)
        if len(args) == 2:
            return _SymbolicRange(args[0], args[1], 1)
        if len(args) == 3:
            return _SymbolicRange(*args)
        raise TypeError("range expected at most 3 arguments, got {}".format(len(args)))
    return range(*args)


def convert_enumerate(iterable, start=0):
    if is_symbolic(iterable):
        return _SymbolicEnumerate(iterable, start)
    return enumerate(iterable, start)


def convert_for_loop(iterable, body_fn, get_args, set_args, return_name_ids, break_fn=None):
    """`for target in iterable:`; body_fn(item) assigns the target and runs the body. break_fn reads the
    loop's break flag (None when the loop has no break)."""
    if isinstance(iterable, (_SymbolicRange, _SymbolicEnumerate)) or is_symbolic(iterable):
        return _run_static_for(iterable, body_fn, get_args, set_args, return_name_ids, break_fn)
    for item in iterable:
        body_fn(item)
        if break_fn is not None:
            flag = break_fn()
            if is_symbolic(flag):
                raise Dy2StaticError(
                    "a 'break' under a tensor condition inside a for loop over a Python iterable ({}) cannot be "
                    "converted; iterate over a tensor or range() with a tensor bound instead".format(
                        type(iterable).__name__))
            if flag:
                break
    return None


def _run_static_for(iterable, body_fn, get_args, set_args, names, break_fn):
    oar = _oar()
    _lists_to_arrays(body_fn)
    start_off = 0
    if isinstance(iterable, _SymbolicRange):
        start, stop, step = iterable.start, iterable.stop, iterable.step
        item_of = None
    else:
        tensor = iterable
        if isinstance(iterable, _SymbolicEnumerate):
            tensor, start_off = iterable.tensor, iterable.start
        n = tensor.shape[0] if tensor.shape and tensor.shape[0] >= 0 else None
        if n is None:
            shape_fn = getattr(oar, "shape", None)
            if shape_fn is None:
                raise Dy2StaticError("iterating a tensor whose first dimension is unknown needs oar.shape")
            n = shape_fn(tensor)[0]
        start, stop, step = 0, n, 1

        def item_of(i):
            item = tensor[i]
            return (i + start_off, item) if isinstance(iterable, _SymbolicEnumerate) else item

    counter = start if is_symbolic(start) or isinstance(start, oar.Tensor) else oar.full([], int(start), "int64")

    def cond_fn(i):
        if is_symbolic(step) or isinstance(step, oar.Tensor):
            up = oar.logical_and(step > 0, i < stop)
            down = oar.logical_and(step < 0, i > stop)
            more = oar.logical_or(up, down)
        else:
            if step == 0:
                raise ValueError("range() arg 3 must not be zero")
            more = (i < stop) if step > 0 else (i > stop)
        if break_fn is not None:
            more = convert_logical_and(lambda: convert_logical_not(break_fn()), lambda: more)
        return more

    def body(i):
        body_fn(item_of(i) if item_of is not None else i)

    _run_static_while(cond_fn, body, get_args, set_args, names, counter=(counter, lambda i: i + step))
    return None


# ---------------------------------------------------------------- logical operators
def convert_logical_and(x_fn, y_fn):
    """`x and y` (operands as thunks to keep short-circuiting for Python values)."""
    x = x_fn()
    if is_symbolic(x):
        y = _to_static_variable(y_fn())
        return _oar().logical_and(x, y)
    if not x:
        return x
    return y_fn()


def convert_logical_or(x_fn, y_fn):
    x = x_fn()
    if is_symbolic(x):
        y = _to_static_variable(y_fn())
        return _oar().logical_or(x, y)
    if x:
        return x
    return y_fn()


def convert_logical_not(x):
    if is_symbolic(x):
        return _oar().logical_not(x)
    return not x


# ---------------------------------------------------------------- builtins
def convert_print(*args, **kwargs):
    """print(); symbolic tensors go to oar.static.Print when it exists (printed when the program runs)."""
    for a in args:
        _check_defined(a)
    if any(is_symbolic(a) for a in args):
        import oar.static as static
        printer = getattr(static, "Print", None)
        if printer is not None:
            for a in args:
                if is_symbolic(a):
                    printer(a)
            return None
    builtins.print(*args, **kwargs)
    return None


def convert_assert(cond, message_fn=None):
    """assert cond, message (message evaluated only on failure, as Python does)."""
    if not __debug__:
        return None
    if is_symbolic(cond):
        nn = _static_nn()
        op = getattr(nn, "Assert", None)
        if op is None:
            warnings.warn("oar.jit: an assert on a symbolic tensor is not checked (oar.static.nn.Assert is "
                          "missing)")
            return None
        return op(cond)
    if not cond:
        if message_fn is None:
            raise AssertionError
        raise AssertionError(message_fn())
    return None


def convert_len(x):
    """len(); the first dimension of a symbolic tensor (a tensor when that dimension is unknown)."""
    from ...tensor.array import TensorArray, _static_len_here, array_length
    if isinstance(x, TensorArray):
        n = _static_len_here(x)
        return n if n is not None else array_length(x)
    if is_symbolic(x):
        shape = x.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        if shape[0] >= 0:
            return shape[0]
        shape_fn = getattr(_oar(), "shape", None)
        if shape_fn is None:
            raise Dy2StaticError("len() of a tensor with an unknown first dimension needs oar.shape")
        return shape_fn(x)[0]
    return len(x)


def convert_shape(x):
    """`x.shape`; for a symbolic tensor with unknown (-1) dimensions, as Paddle 2.6: a list whose unknown
    entries are 0-d int32 tensors measured when the program runs (oar.shape(x)[i]); known ones stay ints."""
    shape = x.shape
    if is_symbolic(x) and any(d is not None and d < 0 for d in shape):
        measured = _oar().shape(x)
        return [measured[i] if d is not None and d < 0 else d for i, d in enumerate(shape)]
    return shape


def convert_isinstance(obj, cls):
    """isinstance(); a symbolic tensor also counts as an oar.Tensor."""
    if isinstance(obj, cls):
        return True
    if is_symbolic(obj):
        tensor_cls = _oar().Tensor
        classes = cls if isinstance(cls, tuple) else (cls, )
        return any(c is tensor_cls for c in classes)
    return False


# convert_call and convert_to_static live in convert_call_func (it imports this module first).
from .convert_call_func import convert_call  # noqa: E402,F401
