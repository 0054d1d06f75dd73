"""AST passes of the dygraph-to-static conversion (see docs/dy2static.md).

The passes run in this order on the `FunctionDef` of the function being converted:

1. Preprocess  - drops decorators, rewrites zero-argument super(), mangles private names of methods.
2. Expressions - calls -> `_jst.convert_call(f)(...)`, and/or/not -> `_jst.convert_logical_*`,
                 assert -> `_jst.convert_assert`, `x.shape` -> `_jst.convert_shape(x)`, returned values
                 checked by `_jst.convert_return`.
3. Return      - `return` inside if/loop/with/try becomes a return flag + value; the code after such a
                 statement is guarded by `if not flag`, a loop is left with `break`; one final return.
4. Loop        - break/continue become flags; `while` -> `_jst.convert_while_loop(cond_fn, body_fn, ...)`,
                 `for` -> `_jst.convert_for_loop(iterable, body_fn, ...)`.
5. IfElse      - `if` -> `_jst.convert_ifelse(pred, true_fn, false_fn, get_args, set_args, names)`.

Branch and loop bodies become nested functions that write the enclosing function's variables through
`nonlocal` (or `global` where the user declared it). A variable such a body assigns is bound first to
`_jst.UndefinedVar(name)` when it has no value yet, so `nonlocal` is legal and a use of a variable that
was never assigned raises a clear UnboundLocalError.

All generated nodes get the source location of the statement they replace: the code is compiled with the
user's file name and line numbers, so tracebacks point at the user's lines.
"""
import ast

JST = "_jst"
GEN_FN = "_jst_fn_"  # prefix of generated functions (never a variable of converted control flow)

_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
                ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


class UnsupportedSyntax(Exception):
    """The function uses syntax the conversion does not handle: it runs unconverted."""


class Counter:
    """Unique suffixes for generated names within one conversion (and what all passes must know)."""

    def __init__(self, locals_shadowed=False, root=None, dynamic_scope=False):
        self.n = 0
        self.root = root  # the FunctionDef being converted
        # the function calls locals()/vars()/eval()/exec(): no variable may be made branch-local
        self.dynamic_scope = dynamic_scope
        # the function binds a name `locals`: placeholders cannot call locals()
        self.locals_shadowed = locals_shadowed

    def next(self):
        self.n += 1
        return self.n


# ---------------------------------------------------------------- AST building helpers
def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _store(name):
    return ast.Name(id=name, ctx=ast.Store())


def _jst(attr):
    return ast.Attribute(value=_load(JST), attr=attr, ctx=ast.Load())


def _call(func, args, keywords=None):
    return ast.Call(func=func, args=list(args), keywords=list(keywords or []))


def _empty_args(names=()):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n, annotation=None) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _lambda(body):
    return ast.Lambda(args=_empty_args(), body=body)


def _assign(name, value):
    return ast.Assign(targets=[_store(name)], value=value, lineno=None)


def _const(v):
    return ast.Constant(value=v)


def _funcdef(name, params, body):
    node = ast.FunctionDef(name=name, args=_empty_args(params), body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        node.type_params = []
    return node


def _not(expr):
    return _call(_jst("convert_logical_not"), [expr])


def _and(a, b):
    return _call(_jst("convert_logical_and"), [_lambda(a), _lambda(b)])


def _located(nodes, origin):
    """Give nodes (and their generated children) without a location the location of origin."""
    for top in nodes:
        for n in ast.walk(top):
            if "lineno" in n._attributes:
                if getattr(n, "lineno", None) is None:
                    n.lineno = origin.lineno
                    n.col_offset = origin.col_offset
                if getattr(n, "end_lineno", None) is None:
                    # the statement's first line only (CPython places a call on the end line of its callee
                    # attribute)
                    n.end_lineno = origin.lineno
                    n.end_col_offset = origin.col_offset
    return nodes


# ---------------------------------------------------------------- scope analysis
def walk_scope(nodes):
    """Nodes of a statement list in its own scope (nested functions/classes/comprehensions are yielded but
    not entered)."""
    stack = list(reversed(nodes))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPE_NODES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(n))))


def written_names(nodes):
    """Names a statement list binds or deletes in its scope (generated function names excluded)."""
    out = set()
    for n in walk_scope(nodes):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            if n.name.startswith(GEN_FN):  # a generated function writes exactly what it declares nonlocal
                for d in n.body:
                    if isinstance(d, (ast.Nonlocal, ast.Global)):
                        out.update(d.names)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                if a.name != "*":
                    out.add(a.asname or a.name.split(".")[0])
        elif type(n).__name__ in ("MatchAs", "MatchStar") and getattr(n, "name", None):
            out.add(n.name)
        elif type(n).__name__ == "MatchMapping" and getattr(n, "rest", None):
            out.add(n.rest)
    return {x for x in out if not x.startswith(GEN_FN)}


def _own(nodes, kinds):
    """True when one of `kinds` occurs in the statements, outside nested scopes and nested loops."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        if isinstance(n, _SCOPE_NODES) or isinstance(n, _LOOPS):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return False


def _has_yield(fdef):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_scope(fdef.body))


def _child_lists(stmt):
    """(owner, field) pairs of the statement lists a compound statement holds."""
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.AsyncFor)):
        return [(stmt, "body"), (stmt, "orelse")]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [(stmt, "body")]
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return [(stmt, "body")] + [(h, "body") for h in stmt.handlers] + [(stmt, "orelse"), (stmt, "finalbody")]
    if type(stmt).__name__ == "Match":
        return [(c, "body") for c in stmt.cases]
    return []


class _Scope:
    """What generated code needs to know about the function it is inserted in."""

    def __init__(self, fdef):
        self.globals, self.nonlocals = set(), set()
        for n in walk_scope(fdef.body):
            if isinstance(n, ast.Global):
                self.globals.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                self.nonlocals.update(n.names)
        a = fdef.args
        self.params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        self.params.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)


class _ScopedTransformer(ast.NodeTransformer):
    """Tracks the enclosing function; leaves classes, lambdas, generator and async functions alone."""

    def __init__(self, counter):
        self.counter = counter
        self.scopes = []

    def visit_FunctionDef(self, node):
        if _has_yield(node):
            return node
        self.scopes.append(_Scope(node))
        try:
            self.generic_visit(node)
            return self.finish_function(node)
        finally:
            self.scopes.pop()

    def finish_function(self, node):
        return node

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    # helpers for generated functions
    def decls(self, names):
        scope = self.scopes[-1]
        glb = [n for n in names if n in scope.globals]
        loc = [n for n in names if n not in scope.globals]
        out = []
        if glb:
            out.append(ast.Global(names=glb))
        if loc:
            out.append(ast.Nonlocal(names=loc))
        return out

    def placeholders(self, names):
        """`x = _jst.UndefinedVar('x') if 'x' not in locals() else x` for names that may have no value yet
        (this also makes them locals of the enclosing function, which `nonlocal` needs)."""
        scope = self.scopes[-1]
        out = []
        for n in names:
            if n in scope.globals or n in scope.nonlocals or n in scope.params or n.startswith("_jst_ret"):
                continue  # _jst_ret* flags are set at the top of their function
            undefined = _call(_jst("UndefinedVar"), [_const(n)])
            if self.counter.locals_shadowed:  # try: x / except NameError: x = UndefinedVar('x')
                handler = ast.ExceptHandler(type=_load("NameError"), name=None, body=[_assign(n, undefined)])
                out.append(ast.Try(body=[ast.Expr(value=_load(n))], handlers=[handler], orelse=[], finalbody=[]))
                continue
            test = ast.Compare(left=_const(n), ops=[ast.NotIn()], comparators=[_call(_load("locals"), [])])
            out.append(_assign(n, ast.IfExp(test=test, body=undefined, orelse=_load(n))))
        return out

    def get_set(self, names, uid):
        get_name, set_name = "{}get_{}".format(GEN_FN, uid), "{}set_{}".format(GEN_FN, uid)
        tup = ast.Tuple(elts=[_load(n) for n in names], ctx=ast.Load())
        getter = _funcdef(get_name, [], self.decls(names) + [ast.Return(value=tup)])
        if names:
            target = ast.Tuple(elts=[_store(n) for n in names], ctx=ast.Store())
            setter_body = self.decls(names) + [ast.Assign(targets=[target], value=_load("_jst_args"), lineno=None)]
        else:
            setter_body = [ast.Pass()]
        setter = _funcdef(set_name, ["_jst_args"], setter_body)
        return getter, setter, get_name, set_name


# ---------------------------------------------------------------- 1. preprocess
class Preprocess(ast.NodeTransformer):
    """Top function only: drop decorators; `super()` -> `super(__class__, <first arg>)` (the converted code
    is not compiled inside the class, so the implicit form has no `__class__` cell); private names mangled
    as the class body would have done."""

    def __init__(self, top, class_name=None, has_class_cell=False):
        self.top = top
        self.mangle_prefix = None
        if class_name and class_name.lstrip("_"):
            self.mangle_prefix = "_" + class_name.lstrip("_")
        self.first_arg = None
        if has_class_cell:
            a = top.args.posonlyargs + top.args.args
            self.first_arg = a[0].arg if a else None

    def run(self):
        # Defaults, annotations and decorators were evaluated when the original was defined; the converted
        # function takes them from the original (the factory must not evaluate them again).
        top = self.top
        top.decorator_list = []
        top.returns = None
        top.args.defaults = []
        top.args.kw_defaults = [None] * len(top.args.kwonlyargs)
        for a in top.args.posonlyargs + top.args.args + top.args.kwonlyargs + [top.args.vararg, top.args.kwarg]:
            if a is not None:
                a.annotation = None
        if self.first_arg is not None:
            for n in walk_scope(self.top.body):
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super"
                        and not n.args and not n.keywords):
                    n.args = _located([_load("__class__"), _load(self.first_arg)], n)
        if self.mangle_prefix:
            self.visit(self.top)
        return self.top

    def _m(self, name):
        if name and name.startswith("__") and not name.endswith("__") and "." not in name:
            return self.mangle_prefix + name
        return name

    def visit_Name(self, node):
        node.id = self._m(node.id)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self._m(node.attr)
        return node

    def visit_arg(self, node):
        node.arg = self._m(node.arg)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        node.arg = self._m(node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self._m(node.name) if node is not self.top else node.name
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node):
        return node  # a nested class mangles with its own name

    def visit_Global(self, node):
        node.names = [self._m(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global


# ---------------------------------------------------------------- 2. expressions
class ExpressionTransformer(_ScopedTransformer):
    """Calls, logical operators, assert, `.shape` and returned values."""

    def visit_Lambda(self, node):  # expressions inside lambdas are converted too
        self.generic_visit(node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and (f.id == "super" or f.id.startswith("_jst")):
            return node
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == JST:
            return node
        node.func = _located([_call(_jst("convert_call"), [f])], f)[0]
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(node)):
            return node  # a lambda would change where := binds; keep Python's and/or
        helper = "convert_logical_and" if isinstance(node.op, ast.And) else "convert_logical_or"
        expr = node.values[-1]
        for left in reversed(node.values[:-1]):
            expr = _call(_jst(helper), [_lambda(left), _lambda(expr)])
        return _located([expr], node)[0]

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _located([_not(node.operand)], node)[0]
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        args = [node.test] + ([_lambda(node.msg)] if node.msg is not None else [])
        return _located([ast.Expr(value=_call(_jst("convert_assert"), args))], node)[0]

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "shape" and isinstance(node.ctx, ast.Load) and not (isinstance(node.value, ast.Name)
                                                                             and node.value.id == JST):
            return _located([_call(_jst("convert_shape"), [node.value])], node)[0]
        return node

    def visit_AnnAssign(self, node):
        """`x: T = v` -> `x = v` (a local variable's annotation is never evaluated, and an annotated name
        cannot be declared nonlocal in the generated functions); `x: T` alone is dropped."""
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None:
            node.value = _located([_call(_jst("convert_return"), [node.value])], node.value)[0]
        return node


# ---------------------------------------------------------------- 3. early return
class ReturnTransformer(_ScopedTransformer):
    """A function with `return` inside a compound statement gets one return at its end."""

    def finish_function(self, node):
        nested = any(isinstance(n, ast.Return) for s in node.body for owner, field in _child_lists(s)
                     for n in walk_scope(getattr(owner, field)))
        if not nested:
            return node
        uid = self.counter.next()
        self.flag, self.value = "_jst_retflag_{}".format(uid), "_jst_retval_{}".format(uid)
        body, _ = self._rewrite(node.body, False)
        # The value starts undefined (not None) so that a static cond pairs a returned tensor with an
        # UndefinedVar, as Paddle; the final return gives None for it (the function fell off its end).
        head = [_assign(self.flag, _const(False)),
                _assign(self.value, _call(_jst("UndefinedVar"), [_const(self.value)]))]
        final = ast.Return(value=_call(_jst("return_value"), [_load(self.value)]))
        node.body = _located(head, node.body[0]) + body + _located([final], node.body[-1])
        return node

    def _guard_rest(self, rest, in_loop, origin):
        if not rest:
            return []
        body, _ = self._rewrite(rest, in_loop)
        return _located([ast.If(test=_not(_load(self.flag)), body=body, orelse=[])], origin)

    def _rewrite(self, stmts, in_loop):
        """(new statements, whether they may return)."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                # value first: if evaluating it raises (inside a try), the flag must stay unset
                new = [_assign(self.value, s.value or _const(None)), _assign(self.flag, _const(True))]
                if in_loop:
                    new.append(ast.Break())
                out.extend(_located(new, s))
                return out, True  # statements after a return are dead
            lists = _child_lists(s)
            if not lists or not any(isinstance(n, ast.Return) for o, f in lists for n in walk_scope(getattr(o, f))):
                out.append(s)
                continue
            is_loop = isinstance(s, _LOOPS)
            if isinstance(s, ast.AsyncFor):
                raise UnsupportedSyntax("return inside 'async for'")
            for owner, field in lists:
                inner_loop = in_loop or (is_loop and field == "body")
                new_list, _ = self._rewrite(getattr(owner, field), inner_loop)
                setattr(owner, field, new_list)
            out.append(s)
            if is_loop and in_loop:  # leave the enclosing loop too
                out.extend(_located([ast.If(test=_load(self.flag), body=[ast.Break()], orelse=[])], s))
            out.extend(self._guard_rest(stmts[i + 1:], in_loop, s))
            return out, True
        return out, False

    def visit_FunctionDef(self, node):
        saved = getattr(self, "flag", None), getattr(self, "value", None)
        try:
            return super().visit_FunctionDef(node)
        finally:
            self.flag, self.value = saved


# ---------------------------------------------------------------- 4. loops, break and continue
class LoopTransformer(_ScopedTransformer):

    def _rewrite_bc(self, stmts, brk, cnt):
        """break/continue of this loop -> flags; statements after one that may set a flag are guarded."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Break):
                out.extend(_located([_assign(brk, _const(True))], s))
                return out
            if isinstance(s, ast.Continue):
                out.extend(_located([_assign(cnt, _const(True))], s))
                return out
            if isinstance(s, _LOOPS) or not _own([s], (ast.Break, ast.Continue)):
                out.append(s)
                continue
            for owner, field in _child_lists(s):
                setattr(owner, field, self._rewrite_bc(getattr(owner, field), brk, cnt))
            out.append(s)
            rest = stmts[i + 1:]
            if rest:
                test = None
                for flag in (brk, cnt):
                    if flag is not None:
                        test = _not(_load(flag)) if test is None else _and(test, _not(_load(flag)))
                out.extend(_located([ast.If(test=test, body=self._rewrite_bc(rest, brk, cnt), orelse=[])], s))
            return out
        return out

    def _prepare(self, node):
        uid = self.counter.next()
        brk = "_jst_brk_{}".format(uid) if _own(node.body, ast.Break) else None
        cnt = "_jst_cnt_{}".format(uid) if _own(node.body, ast.Continue) else None
        body = self._rewrite_bc(node.body, brk, cnt) if (brk or cnt) else node.body
        if cnt:
            body = _located([_assign(cnt, _const(False))], node) + body
        return uid, brk, cnt, body

    def _orelse(self, node, brk):
        if not node.orelse:
            return []
        if brk is None:
            return node.orelse
        return _located([ast.If(test=_not(_load(brk)), body=node.orelse, orelse=[])], node)

    def visit_While(self, node):
        self.generic_visit(node)
        uid, brk, cnt, body = self._prepare(node)
        names = sorted((written_names(body) | written_names([ast.Expr(value=node.test)])) - {cnt})
        test = node.test
        if brk:
            test = _and(_not(_load(brk)), test)
        cond_name, body_name = "{}cond_{}".format(GEN_FN, uid), "{}body_{}".format(GEN_FN, uid)
        test_writes = sorted(written_names([ast.Expr(value=node.test)]))
        cond_fn = _funcdef(cond_name, [], self.decls(test_writes) + [ast.Return(value=test)])
        body_fn = _funcdef(body_name, [], self.decls(names) + body)
        getter, setter, get_name, set_name = self.get_set(names, uid)
        call = ast.Expr(value=_call(_jst("convert_while_loop"), [
            _load(cond_name), _load(body_name), _load(get_name), _load(set_name),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())
        ]))
        init = [_assign(brk, _const(False))] if brk else []
        out = self.placeholders([n for n in names if n != brk]) + init + [cond_fn, body_fn, getter, setter, call]
        return _located(out, node) + self._orelse(node, brk)

    def visit_For(self, node):
        self.generic_visit(node)
        uid, brk, cnt, body = self._prepare(node)
        item = "_jst_item_{}".format(uid)
        body = _located([ast.Assign(targets=[node.target], value=_load(item), lineno=None)], node) + body
        names = sorted(written_names(body) - {cnt})
        body_name = "{}body_{}".format(GEN_FN, uid)
        body_fn = _funcdef(body_name, [item], self.decls(names) + body)
        getter, setter, get_name, set_name = self.get_set(names, uid)
        brk_fn = _lambda(_load(brk)) if brk else _const(None)
        call = ast.Expr(value=_call(_jst("convert_for_loop"), [
            node.iter, _load(body_name), _load(get_name), _load(set_name),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()), brk_fn
        ]))
        init = [_assign(brk, _const(False))] if brk else []
        out = self.placeholders([n for n in names if n != brk]) + init + [body_fn, getter, setter, call]
        return _located(out, node) + self._orelse(node, brk)


# ---------------------------------------------------------------- 5. if / else
class IfElseTransformer(_ScopedTransformer):

    def visit_If(self, node):
        self.generic_visit(node)
        uid = self.counter.next()
        names = written_names(node.body) | written_names(node.orelse)
        names = sorted(names - self._branch_locals(node, names))
        true_name, false_name = "{}true_{}".format(GEN_FN, uid), "{}false_{}".format(GEN_FN, uid)
        true_fn = _funcdef(true_name, [], self.decls(names) + node.body)
        false_fn = _funcdef(false_name, [], self.decls(names) + (node.orelse or [ast.Pass()]))
        getter, setter, get_name, set_name = self.get_set(names, uid)
        call = ast.Expr(value=_call(_jst("convert_ifelse"), [
            node.test, _load(true_name), _load(false_name), _load(get_name), _load(set_name),
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())
        ]))
        out = self.placeholders(names) + [true_fn, false_fn, getter, setter, call]
        return _located(out, node)


    def _branch_locals(self, node, names):
        """Temporaries of the branches: names that occur nowhere in the converted function outside this if
        and that each branch assigns (plainly, at its top level) before any other use. They stay locals of
        the branch functions: no nonlocal, no placeholder, no cond output (Paddle also leaves out variables
        not used after an if)."""
        root = getattr(self.counter, "root", None)
        scope = self.scopes[-1]
        if root is None or self.counter.dynamic_scope:
            return set()
        out = set()
        for name in names:
            if name in scope.globals or name in scope.nonlocals or name.startswith("_jst"):
                continue
            inside = _occurrences(node.body, name) + _occurrences(node.orelse, name)
            if inside != _occurrences([root], name):
                continue
            if _assigned_first(node.body, name) and _assigned_first(node.orelse, name):
                out.add(name)
        return out


def _occurrences(nodes, name):
    """How many times a name is mentioned (loaded, stored, declared, bound) in the nodes."""
    count = 0
    for top in nodes:
        for n in ast.walk(top):
            if isinstance(n, ast.Name):
                count += n.id == name
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                count += name in n.names
            elif isinstance(n, ast.arg):
                count += n.arg == name
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                count += n.name == name
            elif isinstance(n, ast.alias):
                count += (n.asname or n.name.split(".")[0]) == name
            elif isinstance(n, ast.ExceptHandler) or type(n).__name__ in ("MatchAs", "MatchStar"):
                count += getattr(n, "name", None) == name
            elif type(n).__name__ == "MatchMapping":
                count += getattr(n, "rest", None) == name
    return count


def _assigned_first(stmts, name):
    """The first top-level statement mentioning name is `name = <value not mentioning it>` (or a tuple
    assignment of plain names), or no statement mentions it."""
    for s in stmts:
        if not _occurrences([s], name):
            continue
        if not isinstance(s, ast.Assign) or _occurrences([s.value], name):
            return False
        for t in s.targets:
            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
            if not all(isinstance(e, ast.Name) for e in elts):
                return False
        return True
    return True


PASSES = [
    ("ExpressionTransformer", ExpressionTransformer),
    ("ReturnTransformer", ReturnTransformer),
    ("LoopTransformer", LoopTransformer),
    ("IfElseTransformer", IfElseTransformer),
]


def _placeholder_name(stmt):
    """The variable of a placeholder statement (either form), else None."""
    if isinstance(stmt, ast.Try) and len(stmt.handlers) == 1 and len(stmt.body) == 1:
        inner = stmt.handlers[0].body
        if len(inner) == 1 and _placeholder_name(inner[0]) and isinstance(stmt.body[0], ast.Expr):
            return inner[0].targets[0].id
        return None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    call = stmt.value.body if isinstance(stmt.value, ast.IfExp) else stmt.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "UndefinedVar" and (
            isinstance(call.func.value, ast.Name) and call.func.value.id == JST):
        return stmt.targets[0].id
    return None


def _simple_targets(stmt):
    """Names a plain assignment statement surely binds."""
    out = []
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, (ast.AugAssign, ast.AnnAssign)) and getattr(stmt, "value", None) is not None else []
    for t in targets:
        elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
        out.extend(e.id for e in elts if isinstance(e, ast.Name))
    return out


def drop_redundant_placeholders(fdef):
    """Drop placeholders that do nothing (readable code): those for a name the enclosing generated function
    declares nonlocal (placeholders are inserted for the function being transformed at that time, then
    moved), and those for a name a plain assignment earlier in the same statement list already bound."""
    for n in ast.walk(fdef):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            if not isinstance(n, ast.FunctionDef) or _has_yield(n):
                continue
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(n, field, None)
            if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], ast.stmt):
                continue
            bound = set()
            if isinstance(n, ast.FunctionDef) and field == "body" and n.name.startswith(GEN_FN):
                for d in n.body:
                    if isinstance(d, (ast.Nonlocal, ast.Global)):
                        bound.update(d.names)
            kept = []
            for s in stmts:
                ph = _placeholder_name(s)
                if ph is not None and ph in bound:
                    continue
                if isinstance(s, ast.Delete):
                    bound -= {t.id for t in s.targets if isinstance(t, ast.Name)}
                bound.update(_simple_targets(s))
                if ph is not None:
                    bound.add(ph)
                kept.append(s)
            setattr(n, field, kept or [ast.Pass()])


def check_converted(fdef):
    """Structural transforms must have removed every return/break/continue that generated functions would
    capture; anything left means unsupported syntax (e.g. in a construct the passes do not enter)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.FunctionDef) and n.name.startswith(GEN_FN):
            for m in walk_scope(n.body):
                if isinstance(m, ast.Return) and not n.name.startswith((GEN_FN + "get_", GEN_FN + "cond_")):
                    raise UnsupportedSyntax("a return statement the conversion could not move (line {})".format(
                        m.lineno))
                if isinstance(m, (ast.Break, ast.Continue)) and not _inside_loop(n, m):
                    raise UnsupportedSyntax("a break/continue the conversion could not move (line {})".format(
                        m.lineno))


def _inside_loop(root, target):
    def search(node, in_loop):
        for child in ast.iter_child_nodes(node):
            if child is target:
                return in_loop
            if isinstance(child, _SCOPE_NODES):
                continue
            r = search(child, in_loop or isinstance(child, _LOOPS))
            if r is not None:
                return r
        return None

    return bool(search(root, False))
