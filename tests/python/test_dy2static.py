"""oar.jit.dy2static: converted functions give exactly the results of the originals in eager mode, and
symbolic predicates route to oar.static.nn.cond / while_loop (faked here)."""
import functools
import inspect
import warnings

import numpy as np
import pytest

import oar
from oar.jit import dy2static
from oar.jit.dy2static import convert_operators as co
from oar.jit.dy2static import convert_to_static

G_SCALE = 2.0
G_COUNTER = 0


def _same(a, b):
    if isinstance(a, oar.Tensor) or isinstance(b, oar.Tensor):
        assert isinstance(a, oar.Tensor) and isinstance(b, oar.Tensor), (a, b)
        assert a.dtype == b.dtype and list(a.shape) == list(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    else:
        assert type(a) is type(b) and a == b, (a, b)


def _converted(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to the original warns: fail on it
        conv = convert_to_static(fn)
    assert conv is not fn and getattr(conv, "_oar_dy2st_converted", False)
    return conv


def check(fn, *arg_sets, **kwargs_sets):
    conv = _converted(fn)
    for args in arg_sets:
        _same(fn(*args), conv(*args))
    return conv


def t(v, dtype="float32"):
    return oar.to_tensor(np.asarray(v, dtype=dtype))


# ---------------------------------------------------------------- if / else
def f_if_tensor(x):
    if x.mean() > 0:
        y = x * 2
        z = 1
    else:
        y = x - 1
        z = 2
    return y, z


def f_if_python(x, mode, n=3):
    if mode == "double":
        x = x * 2
    elif mode == "neg":
        x = -x
    else:
        if n > 2:
            x = x + n
        else:
            x = x - n
    return x


def f_nested_if(x, y):
    out = x
    if x.sum() > 0:
        if y.sum() > 0:
            out = x + y
        else:
            tmp = x - y  # only defined in this branch, used only here
            out = tmp * 2
    elif y.sum() > 10:
        out = y
    return out


def test_if_else_on_tensors_and_python_values():
    check(f_if_tensor, (t([1.0, 2.0]), ), (t([-1.0, -2.0]), ))
    check(f_if_python, (t([1.0]), "double"), (t([1.0]), "neg"), (t([1.0]), "x"), (t([1.0]), "x", 1))
    check(f_nested_if, (t([1.0]), t([2.0])), (t([1.0]), t([-2.0])), (t([-1.0]), t([20.0])), (t([-1.0]), t([2.0])))


def f_one_branch(x):
    if x.sum() > 0:
        y = x + 1
    return y


def test_variable_defined_in_one_branch():
    conv = _converted(f_one_branch)
    _same(f_one_branch(t([1.0])), conv(t([1.0])))
    with pytest.raises(UnboundLocalError):
        f_one_branch(t([-1.0]))
    with pytest.raises(UnboundLocalError, match="'y'"):
        conv(t([-1.0]))


# ---------------------------------------------------------------- loops
def f_while_break_continue(x, n):
    i = 0
    s = x * 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        if i > 7:
            break
        s = s + x * i
    else:
        s = s - 100
    return s, i


def f_while_tensor_cond(x):
    s = x
    steps = 0
    while s.sum() < 100:
        s = s * 2
        steps += 1
    return s, steps


def f_for_range(x, n):
    acc = x
    for i in range(n):
        if i == 5:
            break
        if i % 3 == 1:
            continue
        acc = acc + i
    return acc, i


def f_for_range_start_step(n):
    out = []
    for k in range(n, 0, -2):
        out.append(k)
    return out


def f_for_tensor(x):
    total = x[0] * 0
    count = 0
    for row in x:
        total = total + row
        count += 1
    return total, count


def f_for_enumerate_zip(x, names):
    res = {}
    for i, (row, name) in enumerate(zip(x, names)):
        res[name] = row * i
    return res


def f_for_else_nested(n):
    found = []
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                found.append((i, j))
                break
        else:
            found.append(-i)
    return found


def f_for_tensor_bound(x, n):
    acc = x
    for i in range(n):
        acc = acc + 1
    return acc


def test_while_loops():
    check(f_while_break_continue, (t([1.0]), 3), (t([1.0]), 20), (t([2.0]), 0))
    check(f_while_tensor_cond, (t([1.0, 2.0]), ), (t([200.0]), ))


def test_for_loops():
    check(f_for_range, (t([1.0]), 3), (t([1.0]), 10), (t([1.0]), 1))
    check(f_for_range_start_step, (7, ), (0, ), (6, ))
    check(f_for_tensor, (t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), ))
    check(f_for_enumerate_zip, (t([[1.0], [2.0]]), ["a", "b"]), )
    check(f_for_else_nested, (4, ), (2, ), (0, ))
    check(f_for_tensor_bound, (t([1.0]), 4))


def test_for_range_empty_keeps_loop_variable_unbound():
    conv = _converted(f_for_range)
    with pytest.raises(UnboundLocalError):
        f_for_range(t([1.0]), 0)
    with pytest.raises(UnboundLocalError):
        conv(t([1.0]), 0)


# ---------------------------------------------------------------- early returns
def f_early_return(x):
    if x.sum() > 10:
        return x * 10
    y = x + 1
    if y.sum() > 5:
        return y
    return -y


def f_return_in_loops(n, target):
    for i in range(n):
        j = 0
        while j < n:
            if i * j == target:
                return i, j
            j += 1
    return None


def f_return_no_value(x, log):
    if x > 3:
        log.append("big")
        return
    log.append("small")


def f_return_in_with_try(x):
    try:
        if x < 0:
            return "neg"
        v = 10 // x
    except ZeroDivisionError:
        return "zero"
    finally:
        x = 100
    return v


def f_return_value_raises(s):
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        pass
    return "nan"


def test_early_returns():
    check(f_return_value_raises, ("3", ), ("2.5", ), ("x", ))
    check(f_early_return, (t([20.0]), ), (t([4.0, 2.0]), ), (t([1.0]), ))
    check(f_return_in_loops, (4, 6), (4, 100), (0, 0))
    check(f_return_in_with_try, (-1, ), (0, ), (3, ))
    conv = _converted(f_return_no_value)
    for v in (1, 5):
        a, b = [], []
        assert f_return_no_value(v, a) is None and conv(v, b) is None
        assert a == b


# ---------------------------------------------------------------- logical operators and builtins
def f_logical(x, y, a, b):
    r1 = a and b
    r2 = a or b
    r3 = not a
    if x.sum() > 0 and y.sum() > 0:
        out = x + y
    elif x.sum() > 0 or not y.sum() < 0:
        out = x - y
    else:
        out = x * y
    return r1, r2, r3, out


def f_short_circuit(x, calls):

    def mark(v):
        calls.append(v)
        return v

    return mark(x) and mark(2) or mark(3)


def f_builtins(x, msg):
    n = len(x)
    shape = x.shape
    is_t = isinstance(x, oar.Tensor)
    print("value", n, msg)
    assert n > 0, "empty " + msg
    return n, shape, is_t


def test_logical_ops_and_builtins(capsys):
    check(f_logical, (t([1.0]), t([1.0]), 0, 5), (t([1.0]), t([-1.0]), [], "s"), (t([-1.0]), t([-1.0]), 3, 0),
          (t([-1.0]), t([1.0]), 1, 2))
    conv = _converted(f_short_circuit)
    for v in (0, 1):
        a, b = [], []
        assert f_short_circuit(v, a) == conv(v, b)
        assert a == b
    conv = _converted(f_builtins)
    _same(f_builtins(t([1.0, 2.0]), "m"), conv(t([1.0, 2.0]), "m"))
    out = capsys.readouterr().out
    assert out == "value 2 m\nvalue 2 m\n"
    with pytest.raises(AssertionError, match="empty q"):
        conv(t(np.zeros([0], "float32")), "q")


# ---------------------------------------------------------------- closures, globals, signatures
def make_closure(offset):
    calls = 0

    def inner(x):
        nonlocal calls
        calls += 1
        if x.sum() > 0:
            y = x + offset
        else:
            y = x - offset
        return y, calls

    def get_calls():
        return calls

    return inner, get_calls


def f_globals(x):
    global G_COUNTER
    if x.sum() > 0:
        G_COUNTER += 1
        y = x * G_SCALE
    else:
        y = x
    return y


def f_signature(x, scale=2, *args, bias=1, **kwargs):
    if args:
        x = x + args[0]
    if "extra" in kwargs:
        x = x * kwargs["extra"]
    return x * scale + bias


def test_closures_globals_and_signatures():
    global G_SCALE
    inner, get_calls = make_closure(3.0)
    conv = _converted(inner)
    _same(inner(t([1.0]))[0], conv(t([1.0]))[0])
    assert get_calls() == 2  # the converted function writes the original closure cell
    _same(inner(t([-1.0])), (conv(t([-1.0]))[0], 3))
    gc = G_COUNTER
    conv = _converted(f_globals)
    _same(f_globals(t([1.0])), conv(t([1.0])))
    assert G_COUNTER == gc + 2
    G_SCALE = 5.0  # globals are live, not copied
    try:
        _same(conv(t([1.0])), t([5.0]))
    finally:
        G_SCALE = 2.0
    conv = check(f_signature, (t([1.0]), ), (t([1.0]), 3), (t([1.0]), 3, 10))
    _same(f_signature(t([1.0]), bias=5, extra=2), conv(t([1.0]), bias=5, extra=2))
    assert inspect.signature(conv) == inspect.signature(f_signature)


# ---------------------------------------------------------------- layers and calls into user helpers
def helper_clip(x, lo):
    if x.max() > lo:
        x = x - lo
    return x


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


class Net(oar.nn.Layer):

    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(2, 2)
        self.__steps = 2

    def _scale(self, y):
        for _ in range(self.__steps):
            y = y * 0.5
        return y

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            y = helper_clip(y, 0.1)
        else:
            y = self._scale(y)
        return y + fact(3)


class SubNet(Net):

    def forward(self, x):
        base = super().forward(x)
        if base.mean() > 0:
            return base * 2
        return base


def test_layer_methods_and_helpers(monkeypatch):
    oar.seed(1)
    net = SubNet()
    x = t([[1.0, -2.0], [0.5, 3.0]])
    conv = _converted(net.forward)
    _same(net.forward(x), conv(x))
    _same(net(-x), conv(-x))
    # helpers are converted through convert_call, oar/numpy functions and classes are not
    converted_calls = []
    real = dy2static.convert_call_func.convert_to_static

    def spy(fn):
        out = real(fn)
        if out is not fn:
            converted_calls.append(getattr(fn, "__qualname__", fn))
        return out

    monkeypatch.setattr(dy2static.convert_call_func, "convert_to_static", spy)
    conv(x)
    assert "helper_clip" in converted_calls or "Net._scale" in converted_calls
    assert "fact" in converted_calls
    cc = dy2static.convert_call
    assert cc(np.sum) is np.sum and cc(oar.nn.functional.relu) is oar.nn.functional.relu
    assert cc(oar.nn.Linear) is oar.nn.Linear
    assert cc(len) is co.convert_len and cc(print) is co.convert_print


def test_layer_call_runs_hooks_with_converted_forward():
    oar.seed(2)
    net = Net()
    seen = []
    net.register_forward_post_hook(lambda layer, inputs, out: seen.append(1) or out * 10)
    x = t([[1.0, 2.0]])
    expected = net(x)
    call = dy2static.convert_call(net)
    assert call is not net
    _same(expected, call(x))
    assert seen == [1, 1] and "forward" not in net.__dict__


@oar.jit.not_to_static
def plain_helper(x):
    if x.sum() > 0:
        return x
    return -x


def test_not_to_static():
    assert dy2static.convert_call(plain_helper) is plain_helper
    assert convert_to_static(plain_helper) is plain_helper


# ---------------------------------------------------------------- fallbacks
def gen_fn(n):
    for i in range(n):
        yield i


def test_generators_and_lambdas_fall_back_with_a_warning():
    with pytest.warns(UserWarning, match="generators"):
        assert convert_to_static(gen_fn) is gen_fn
    lam = lambda x: x + 1  # noqa: E731
    with pytest.warns(UserWarning, match="lambda"):
        assert convert_to_static(lam) is lam
    ns = {}
    exec("def made(x):\n    return x\n", ns)
    with pytest.warns(UserWarning, match="source"):
        assert convert_to_static(ns["made"]) is ns["made"]


def f_with_nested_generator(n):
    def g():
        for i in range(n):
            if i % 2:
                yield i
    total = 0
    for v in g():
        total += v
    return total


def test_nested_generator_is_left_as_python():
    check(f_with_nested_generator, (5, ), (0, ))


# ---------------------------------------------------------------- errors and debugging
def f_raises(x, d):
    if x > 0:
        y = x + 1
        z = y // d  # the error line
    else:
        z = 0
    return z


def test_errors_point_at_the_user_line():
    conv = _converted(f_raises)
    lines, start = inspect.getsourcelines(f_raises)
    line = start + next(i for i, s in enumerate(lines) if "the error line" in s)
    with pytest.raises(ZeroDivisionError) as info:
        conv(1, 0)
    note = "\n".join(getattr(info.value, "__notes__", [])) or str(info.value)
    assert 'File "{}", line {}, in f_raises'.format(__file__, line) in note
    assert "z = y // d" in note
    # the traceback itself also names the user line
    assert any(tb.lineno + 1 == line and str(tb.path) == __file__ for tb in info.traceback)  # 0-based


def test_set_code_level_and_verbosity(capsys):

    def local_fn(x):
        if x > 0:
            x = x - 1
        return x

    dy2static.set_code_level(100)
    dy2static.set_verbosity(1)
    try:
        conv = _converted(local_fn)
    finally:
        dy2static.set_code_level(0)
        dy2static.set_verbosity(0)
    err = capsys.readouterr().err
    assert "_jst.convert_ifelse(" in err and "IfElseTransformer" in err
    assert "converted" in err and "local_fn" in err
    assert conv(3) == 2

    def helper_v(x):
        return x + 1

    def outer_v(x):
        return helper_v(x) + helper_v(x)

    dy2static.set_code_level(1)  # after the first pass only: calls converted, no if/loop functions yet
    dy2static.set_verbosity(2)
    try:
        assert _converted(outer_v)(1) == 4
    finally:
        dy2static.set_code_level(0)
        dy2static.set_verbosity(0)
    err = capsys.readouterr().err
    assert "level 1 AST transformer 'ExpressionTransformer'" in err and "_jst.convert_call(helper_v)(x)" in err
    assert err.count("convert_call: converting") == 1  # logged once, not per call

    def to_stdout(x):
        while x > 0:
            x -= 1
        return x

    dy2static.set_code_level(100, also_to_stdout=True)
    try:
        assert _converted(to_stdout)(3) == 0
    finally:
        dy2static.set_code_level(0)
    assert "_jst.convert_while_loop(" in capsys.readouterr().out
    with pytest.raises(TypeError):
        dy2static.set_code_level("high")


# ---------------------------------------------------------------- routing to oar.static.nn (faked)
class FakeStaticNN:
    """cond builds both branches (as a program would) and picks one; while_loop loops in Python."""

    def __init__(self):
        self.cond_calls, self.while_calls = [], []

    def cond(self, pred, true_fn, false_fn, return_names=None):
        assert isinstance(pred, oar.Tensor) and callable(true_fn) and callable(false_fn)
        self.cond_calls.append(return_names)
        t_out, f_out = true_fn(), false_fn()
        for out in (t_out, f_out):  # one value per variable the if assigns, in return_names order
            if return_names:
                assert isinstance(out, tuple) and len(out) == len(return_names)
            else:
                assert out is None
        self.last_cond = (t_out, f_out)
        t_out, f_out = co.unify_branch_outputs(t_out, f_out, return_names)  # as a real cond would
        return t_out if bool(pred) else f_out

    def while_loop(self, cond, body, loop_vars):
        assert all(isinstance(v, oar.Tensor) for v in loop_vars), loop_vars
        self.while_calls.append(len(loop_vars))
        loop_vars = list(loop_vars)
        while bool(cond(*loop_vars)):
            loop_vars = list(body(*loop_vars))
            assert all(isinstance(v, oar.Tensor) for v in loop_vars)
        return loop_vars


@pytest.fixture
def symbolic(monkeypatch):
    """Every tensor counts as symbolic; oar.static.nn is the fake."""
    fake = FakeStaticNN()
    monkeypatch.setattr(oar.static, "nn", fake, raising=False)
    monkeypatch.setattr(co, "is_symbolic", lambda v: isinstance(v, oar.Tensor))
    return fake


def _close(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    a = a.numpy() if isinstance(a, oar.Tensor) else np.asarray(a)
    b = b.numpy() if isinstance(b, oar.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b)


def test_symbolic_if_routes_to_cond(symbolic):
    conv = _converted(f_if_tensor)
    for v in ([1.0, 2.0], [-3.0]):
        _close(f_if_tensor(t(v)), conv(t(v)))
    assert symbolic.cond_calls == [("y", "z"), ("y", "z")]
    (ty, tz), (fy, fz) = symbolic.last_cond  # both branches were built from the same inputs
    _close(ty, t([-6.0]))
    _close(fy, t([-4.0]))
    assert (tz, fz) == (1, 2)
    conv = _converted(f_early_return)
    for v in ([20.0], [4.0, 2.0], [1.0]):
        _close(f_early_return(t(v)), conv(t(v)))
    assert len(symbolic.cond_calls) > 2
    # a Python predicate does not go to cond
    n = len(symbolic.cond_calls)
    conv = _converted(f_if_python)
    _close(f_if_python(t([1.0]), "neg"), conv(t([1.0]), "neg"))
    assert len(symbolic.cond_calls) == n


def test_symbolic_cond_branches_start_from_the_same_values(symbolic):

    def f(x):
        y = x
        if x.sum() > 0:
            y = y + 1
        else:
            y = y + 100  # must see the original y, not the true branch's
        return y

    conv = _converted(f)
    _close(conv(t([1.0])), t([2.0]))
    _close(conv(t([-1.0])), t([99.0]))


def test_symbolic_while_routes_to_while_loop(symbolic):
    conv = _converted(f_while_tensor_cond)
    _close(f_while_tensor_cond(t([1.0, 2.0])), conv(t([1.0, 2.0])))
    assert symbolic.while_calls == [2]  # s and steps (a Python int made a tensor)
    conv = _converted(f_for_tensor)
    x = t([[1.0, 2.0], [3.0, 4.0]])
    _close(f_for_tensor(x), conv(x))
    assert symbolic.while_calls[-1] == 3  # hidden index, total, count
    conv = _converted(f_for_tensor_bound)
    _close(f_for_tensor_bound(t([1.0]), 4), conv(t([1.0]), oar.to_tensor(4)))
    # Python loops stay Python loops
    n = len(symbolic.while_calls)
    conv = _converted(f_while_break_continue)
    _close(f_while_break_continue(t([1.0]), 20), conv(t([1.0]), 20))
    assert len(symbolic.while_calls) == n


def test_symbolic_break_in_tensor_loop(symbolic):

    def f(x):
        i = oar.to_tensor(0)
        while i < 10:
            i = i + 1
            if x.sum() * i > 6:
                break
        return i

    conv = _converted(f)
    _close(conv(t([1.0])), f(t([1.0])))
    _close(conv(t([5.0])), f(t([5.0])))

    def g(x):
        i = 0
        while i < 10:  # a Python condition until the break flag becomes a tensor
            i += 1
            if x.sum() * i > 6:
                break
        return i

    n = len(symbolic.while_calls)
    conv = _converted(g)
    _close(conv(t([1.0])), g(t([1.0])))
    assert len(symbolic.while_calls) == n + 1  # the remaining iterations ran as a static loop


def test_symbolic_loop_with_return_is_a_clear_error(symbolic):

    def f(x):
        while x.sum() < 10:
            x = x + 1
            if x.sum() > 5:
                return x * 100
        return x

    with pytest.raises(dy2static.Dy2StaticError, match="'return' inside a loop"):
        _converted(f)(t([1.0]))


def test_unify_branch_outputs():
    u = co.unify_branch_outputs
    a, b = u((t([1.0, 2.0]), 3, True, "s", co.UndefinedVar("q")), (t([0.0, 0.0]), 3, False, "s", co.UndefinedVar("q")),
             ("x", "n", "flag", "s", "q"))
    _same(a[0], t([1.0, 2.0]))
    assert a[1] == b[1] == 3 and a[3] == "s" and isinstance(a[4], co.UndefinedVar)
    _same(a[2], oar.to_tensor(True))
    _same(b[2], oar.to_tensor(False))
    a, b = u((t([1.0, 2.0]), 1), (co.UndefinedVar("y"), t([5], "int64")), ("y", "k"))
    _same(b[0], t([0.0, 0.0]))  # zeros like the other branch's tensor
    _same(a[1], t(1, "int64"))  # a scalar takes the tensor's dtype
    assert u(None, None) == (None, None)
    with pytest.raises(dy2static.Dy2StaticError, match="'z' is str in one branch"):
        u(("a", ), (1, ), ("z", ))
    with pytest.raises(dy2static.Dy2StaticError, match="'w' is a tensor in one branch"):
        u((t([1.0]), ), ([1], ), ("w", ))


def test_symbolic_logical_ops_use_tensor_ops(symbolic, monkeypatch):
    used = []
    real_and = oar.logical_and
    monkeypatch.setattr(oar, "logical_and", lambda a, b: used.append("and") or real_and(a, b))

    def f(x):
        return x > 0 and x < 5

    conv = _converted(f)
    _close(conv(t([1.0, 7.0])), np.array([True, False]))
    assert used == ["and"]


# ---------------------------------------------------------------- more Python constructs
def f_constructs(items, n):
    out = {}
    for k, v in sorted(items.items()):
        if v and k:
            out[k] = [w for w in range(v) if w % 2 == 0 and w > 0]
        elif not v:
            continue
    data = list(range(n))
    first = ""
    while (m := len(data)) > 2:
        data = data[1:]
        with open(__file__) as fh:
            first = fh.readline()
        if m == 4:
            tag = "four"
    try:
        if n < 0:
            raise ValueError("neg")
        res = 10 // (n - 3)
    except (ValueError, ZeroDivisionError) as e:
        res = type(e).__name__
    key = lambda p: p[0] and -p[1]  # noqa: E731
    ordered = sorted([(1, 2), (0, 5), (1, 7)], key=key) + [key((1, 3))]
    return out, data, m, first[:3], res, ordered, tag if n > 3 else None


def f_match(v):
    match v:
        case [a, b]:
            if a > b:
                return a
            r = b
        case {"k": k}:
            r = k * 2
        case _:
            r = None
    return r


def f_recursive_closure(n):

    def rec(k):
        if k <= 0:
            return 0
        return k + rec(k - 1)

    acc = []

    def push(x):
        nonlocal acc
        if x % 2:
            acc = acc + [x]

    for i in range(n):
        push(i)
    return rec(n), acc


def f_annotated(n: int) -> list:
    out: list = []
    flag: bool
    for i in range(n):
        if i % 2:
            last: int = i
            out.append(last)
    return out


def decorate(fn):

    @functools.wraps(fn)
    def wrapper(*args):
        if args and args[0] is None:
            return "none"
        return fn(*args)

    return wrapper


@decorate
def f_decorated(x):
    if x > 0:
        return x * 2
    return -x


def f_recursive_default(items, depth=0):
    # the recursive call must reach the global (converted wrapper), with its defaults
    if items and isinstance(items[0], list):
        return max(f_recursive_default(i) for i in items) + 1 + depth
    return depth


def f_shadows_locals(n):
    locals = n * 2  # noqa: A001 - a local named like the builtin
    if n > 1:
        extra = locals + 1
    else:
        extra = 0
    return extra


def f_del_and_loop_only(n):
    for i in range(n):
        last = i * 2
    if n > 1:
        tmp = n
        del tmp
    return last


def test_more_python_constructs():
    check(f_constructs, ({"a": 3, "b": 0, "": 2, "c": 6}, 5), ({}, 2), ({"x": 1}, -1), ({"x": 5}, 3))
    check(f_match, ([3, 1], ), ([1, 3], ), ({"k": 4}, ), (7, ))
    check(f_recursive_closure, (5, ), (0, ))
    check(f_annotated, (5, ), (0, ))
    check(f_recursive_default, ([[[1]], [2]], ), ([1], 3))
    check(f_shadows_locals, (3, ), (0, ))
    conv = check(f_decorated, (3, ), (-2, ), (None, ))  # the wrapper is converted (its own source)
    assert dy2static.convert_call(f_decorated.__wrapped__)(3) == 6
    check(f_del_and_loop_only, (3, ), (1, ))
    conv = _converted(f_del_and_loop_only)
    with pytest.raises(UnboundLocalError):
        f_del_and_loop_only(0)
    with pytest.raises(UnboundLocalError, match="'last'"):
        conv(0)


class Private:

    def __init__(self):
        self.__k = 3

    def __helper(self, x):
        return x + self.__k

    def run(self, x):
        if x > 0:
            return self.__helper(x)
        return self.__k


def test_private_names_are_mangled():
    p = Private()
    conv = _converted(p.run)
    assert conv(2) == p.run(2) == 5 and conv(-1) == p.run(-1) == 3


def test_printing_an_undefined_variable_raises(capsys):

    def f(x):
        if x > 0:
            y = x
        print(y)

    conv = _converted(f)
    with pytest.raises(UnboundLocalError, match="'y'"):
        conv(-1)
    conv(2)
    assert capsys.readouterr().out == "2\n"


def test_defaults_are_not_evaluated_again():
    calls = []

    def make():
        calls.append(1)
        return 10

    def f(x, y=make()):
        if x > 0:
            return x + y
        return y

    conv = _converted(f)
    assert conv(1) == 11 and conv(-1) == 10 and dy2static.convert_call(f)(2) == 12
    assert calls == [1]


def test_converted_code_and_cache():
    src = dy2static.get_converted_code(f_if_tensor)
    assert "_jst.convert_ifelse(" in src and "def _jst_fn_true_" in src
    # a branch temporary stays local to its branch function: not an output of the if
    src = dy2static.get_converted_code(f_nested_if)
    assert "'tmp'" not in src and "nonlocal out" in src and "tmp = x - y" in src
    a, b = convert_to_static(f_if_tensor), convert_to_static(f_if_tensor)
    assert a.__wrapped__ is f_if_tensor and a.__code__ is b.__code__  # wrapper code; conversion cached
    from oar.jit.dy2static import convert_call_func as ccf
    assert isinstance(ccf._CACHE[f_if_tensor.__code__], ccf._Entry)


# ---------------------------------------------------------------- more routing
def test_is_symbolic_default_rule():

    class Sym:

        def _is_symbolic(self):
            return True

    assert not dy2static.is_symbolic(t([1.0])) and not dy2static.is_symbolic(3)
    assert dy2static.is_symbolic(Sym())


def f_sym_loops(x, n):
    acc = x[0] * 0
    for i, row in enumerate(x):
        acc = acc + row * i
    for k in range(1, n, 2):
        acc = acc + k
    return acc


def test_symbolic_for_enumerate_and_range(symbolic):
    conv = _converted(f_sym_loops)
    x = t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    _close(conv(x, oar.to_tensor(6)), f_sym_loops(x, 6))
    # loop variables: hidden index and acc; i/row/k have no value before the loops: not carried
    assert symbolic.while_calls == [2, 2]

    def g(x):
        for row in x:
            pass
        return row

    with pytest.raises(UnboundLocalError, match="'row'"):  # undefined after a static loop
        _converted(g)(x)
    with pytest.raises(dy2static.Dy2StaticError, match="range"):
        list(co.convert_range(oar.to_tensor(3)))


def test_symbolic_print_and_assert_route_to_static_ops(symbolic, monkeypatch, capsys):
    printed, asserted = [], []
    monkeypatch.setattr(oar.static, "Print", lambda v: printed.append(v), raising=False)
    symbolic.Assert = lambda c: asserted.append(c)

    def f(x):
        print(x)
        assert x.sum() > 0, "never evaluated"
        return x

    conv = _converted(f)
    conv(t([-1.0]))  # a symbolic assert is a program op, not a Python check
    assert len(printed) == 1 and len(asserted) == 1 and capsys.readouterr().out == ""


def test_to_static_functions_called_from_converted_code_are_inlined():

    class FakeStaticFunction:  # duck-types oar.jit.StaticFunction (_dygraph_function, _instance)

        def __init__(self, fn, instance=None):
            self._dygraph_function, self._instance = fn, instance

        def __call__(self, *args):
            raise AssertionError("convert_call must call the converted Python function")

    conv = dy2static.convert_call(FakeStaticFunction(helper_clip))
    assert getattr(conv, "_oar_dy2st_original", None) is helper_clip
    _same(conv(t([1.0]), 0.5), helper_clip(t([1.0]), 0.5))
    p = Private()
    bound = dy2static.convert_call(FakeStaticFunction(Private.run, p))
    assert bound(2) == 5 and bound.__self__ is p


# ---------------------------------------------------------------- with the real oar.jit.to_static
needs_to_static = pytest.mark.skipif(not hasattr(oar.jit, "to_static"), reason="oar.jit.to_static not in this build")


def scale_by(y, k):
    if k > 1:  # a Python condition: no cond in the program
        y = y * k
    return y


def f_traced(x, n):
    acc = x * 0
    for i in range(n):
        if i % 2 == 0 and i > 0:
            continue
        acc = acc + scale_by(x, i)
    s = x.shape
    if len(s) == 2 and not n == 0:
        acc = acc.reshape([s[0] * s[1]])
    return acc


def f_traced_logic(x):
    return (x > 1) and (x < 4)


@needs_to_static
def test_to_static_traces_converted_python_control_flow():
    x = t(np.arange(6, dtype="float32").reshape(2, 3))
    sf = oar.jit.to_static(f_traced)
    for n in (0, 4):
        _same(sf(x, n), f_traced(x, n))
    assert "_jst.convert_for_loop(" in sf.code
    # `and` of symbolic tensors records logical_and (eagerly, a 6-element truth value is ambiguous)
    with pytest.raises(ValueError):
        f_traced_logic(x)
    out = oar.jit.to_static(f_traced_logic)(x)
    np.testing.assert_array_equal(out.numpy(), (x.numpy() > 1) & (x.numpy() < 4))


class PyFlowNet(oar.nn.Layer):

    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(3, 3)
        self.depth = 2

    def forward(self, x):
        for _ in range(self.depth):
            x = self.fc(x)
            if self.training and x.shape[0] > 1:
                x = oar.nn.functional.relu(x)
        return scale_by(x, 3)


@needs_to_static
def test_to_static_layer_with_python_control_flow():
    oar.seed(3)
    net = PyFlowNet()
    x = t(np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3))
    expected = net(x)
    static_net = oar.jit.to_static(net)
    np.testing.assert_allclose(static_net(x).numpy(), expected.numpy(), rtol=1e-6)
    assert "_jst.convert_for_loop(" in static_net.forward.code


@needs_to_static
def test_to_static_tensor_control_flow():
    pytest.importorskip("oar.static.control_flow")
    x = t([[1.0, -2.0], [0.5, 3.0]])
    for fn in (f_if_tensor, f_early_return, f_nested_if):
        args = (x, x * -1) if fn is f_nested_if else (x, )
        _close(oar.jit.to_static(fn)(*args), fn(*args))
    _close(oar.jit.to_static(f_while_tensor_cond)(x), f_while_tensor_cond(x))
