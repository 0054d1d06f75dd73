"""Program control flow: cond and while_loop whose condition is a program variable.

cond records each branch into a sub-block ending with `assign` ops into output variables of the
enclosing block, and appends one `conditional_block` op per branch (the false one conditioned on
logical_not(pred)); while_loop records the body into a sub-block that writes the loop variables and the
condition back, under a `while` op. The executor runs the sub-blocks (framework/src/ir/executor.cc).

Gradients: a program's gradient ops are recorded by the autograd engine run on its symbolic variables
(append_backward, gradients, minimize, and to_static's backward program). cond's outputs get a gradient
node (_CondGrad) whose backward records, for each branch, a sub-block with the branch's backward ops
under a conditional_block on the same condition, writing the gradients of the outer variables the
branches read. while_loop's results get one (_WhileGrad) whose backward records a reverse `while` that
re-runs the body on each iteration's saved loop variables and records its backward (see the class).
When a program runs with autograd recording instead (to_static's replay, TranslatedLayer), the ops of the
branch taken and of each iteration are recorded as they run.
"""
from .. import _C

_copy = _C.Op("copy")
_logical_not = _C.Op("logical_not")


def _builder():
    b = _C._current_builder()
    if b is None:
        raise RuntimeError("control flow on a program variable needs a program being built (static mode, "
                           "program_guard or to_static)")
    return b


def _name(b, t):
    return _C._symbolic_name(t) if _C._is_symbolic(t) else b.capture(t)


def _as_tensor(v, what):
    from ..tensor.creation import full as _full
    if isinstance(v, _C.Tensor):
        return v
    if isinstance(v, bool):
        return _full([], bool(v), dtype=_C.bool)
    if isinstance(v, int):
        return _full([], v, dtype=_C.int64)
    if isinstance(v, float):
        return _full([], v, dtype=_C.get_default_dtype())
    raise TypeError("{}: expected tensors or Python numbers, got {}".format(what, type(v).__name__))


def _branch(b, fn):
    from ..jit.api import _flatten
    parent = b.current_block
    idx = b.push_block()
    try:
        out = fn() if fn is not None else None
        flat = []
        structure = _flatten(out, flat)
    finally:
        b.current_block = parent
    return idx, structure, flat


def cond(pred, true_fn, false_fn):
    from ..jit.api import _hashable, _unflatten
    b = _builder()
    if pred.size != 1 or pred.dtype != _C.bool:
        raise ValueError("cond: pred must be a one-element bool tensor, got shape {} {}".format(pred.shape,
                                                                                          pred.dtype.name))
    parent = b.current_block
    ti, ts, tf = _branch(b, true_fn)
    fi, fs, ff = _branch(b, false_fn)
    if _hashable(ts) != _hashable(fs):
        # Python numbers that differ between the branches become tensors (as Paddle's cond does).
        ts, tf, ff = _merge_outputs(b, ts, fs, tf, ff, ti, fi, parent)
    outs = []
    for i, (t, f) in enumerate(zip(tf, ff)):
        t = t if t is not None else f  # None: that branch leaves the output unset (see _merge_outputs)
        f = f if f is not None else t
        if t.dtype != f.dtype:
            raise TypeError("cond: output {} is {} in true_fn but {} in false_fn".format(i, t.dtype.name,
                                                                                       f.dtype.name))
        if len(t.shape) != len(f.shape):
            raise ValueError("cond: output {} has shape {} in true_fn but {} in false_fn".format(i, t.shape, f.shape))
        shape = [a if a == c else -1 for a, c in zip(t.shape, f.shape)]
        outs.append(b.create_var(b.unique_name("cond.out"), shape, t.dtype, place=t.place))
    for idx, flat in ((ti, tf), (fi, ff)):
        b.current_block = idx
        for src, dst in zip(flat, outs):
            if src is not None:
                b.append_op("assign", {"X": [_name(b, src)]}, {"Out": [_C._symbolic_name(dst)]})
        b.current_block = parent
    not_pred = _logical_not(pred)
    for idx, p in ((ti, pred), (fi, not_pred)):
        b.append_op("conditional_block", {"Cond": [_C._symbolic_name(p)], "Input": b.outer_reads(idx)},
                    {"Out": b.outer_writes(idx)}, {"is_scalar_condition": True}, {"sub_block": idx})
    outs = _CondGrad.attach(b, outs, ((ti, tf, pred), (fi, ff, not_pred)))
    return _unflatten(ts, outs)


def _differentiable(t):
    return t.dtype in (_C.float16, _C.bfloat16, _C.float32, _C.float64)


class _CondGrad:
    """The gradient node of a static-mode cond's outputs. Its backward (run by append_backward's autograd
    engine while the backward ops are recorded) builds, per branch, a sub-block holding the backward of
    the branch's ops (the engine run again, from the branch's results to the outer variables they read)
    that assigns the gradients into variables zeroed beforehand, under a conditional_block on the
    branch's condition."""

    def __init__(self, b, branches, inputs):
        self.b, self.branches, self.inputs = b, branches, inputs

    @staticmethod
    def attach(b, outs, branches):
        if not any(t is not None and _C._is_symbolic(t) and not t.stop_gradient
                   for _, flat, _ in branches for t in flat):
            return outs
        names = sorted(set(b.outer_reads(branches[0][0])) | set(b.outer_reads(branches[1][0])))
        inputs = []
        for n in names:
            t = b.live_tensor(n)
            if t is not None and not t.stop_gradient and _differentiable(t):
                inputs.append(t)
        if not inputs:
            return outs
        node = _CondGrad(b, branches, inputs)
        recorded = [o if _differentiable(o) else None for o in outs]
        new = _C._pylayer_record(_CondGrad._backward, node, inputs, recorded, False, "cond")
        merged = [n if n is not None else o for n, o in zip(new, outs)]
        for t in merged:
            b.note_live(t)
        return merged

    @staticmethod
    def _backward(node, *grad_outs):
        from ..tensor.creation import zeros_like
        b = node.b
        if _C._current_builder() is not b:
            raise RuntimeError("cond: its gradient must be recorded into the program holding the cond")
        parent = b.current_block
        acc = [zeros_like(x) for x in node.inputs]
        for idx, flat, p in node.branches:
            pairs = [(f, g) for f, g in zip(flat, grad_outs)
                     if f is not None and g is not None and not f.stop_gradient and _differentiable(f)]
            if not pairs:
                continue
            gi = b.push_block()
            try:
                grads = _C._partial_grad([f for f, _ in pairs], list(node.inputs), [g for _, g in pairs])
                for a, g in zip(acc, grads):
                    if g is not None:
                        b.append_op("assign", {"X": [_name(b, g)]}, {"Out": [_C._symbolic_name(a)]})
            finally:
                b.current_block = parent
            b.keep_alive_for(gi)  # the branch's intermediates it reads must outlive the forward sub-block
            b.append_op("conditional_block", {"Cond": [_C._symbolic_name(p)], "Input": b.outer_reads(gi)},
                        {"Out": b.outer_writes(gi)}, {"is_scalar_condition": True}, {"sub_block": gi})
        return tuple(acc)


def _merge_outputs(b, ts, fs, tf, ff, ti, fi, parent):
    """Pairs up the two branches' outputs when their structures differ: Python numbers that differ become
    tensors (created at the end of each branch's block), and a value one branch leaves undefined
    (dy2static's UndefinedVar) is zeros in that branch (unset when its shape has an unknown extent). Returns (structure, true list, false list)
    where the lists hold one tensor or None (unset) per output slot."""
    from ..jit.api import _Slot
    from ..tensor.creation import full
    new_t, new_f = [], []

    def undefined(v):
        return type(v).__name__ == "UndefinedVar"

    def number(v):
        return isinstance(v, (bool, int, float))

    def const_in(idx, v, like):
        shape = like.shape if -1 not in like.shape else []
        b.current_block = idx
        try:
            return full(shape, v, dtype=like.dtype)
        finally:
            b.current_block = parent

    def zeros_in(idx, like):
        return None if -1 in like.shape else const_in(idx, 0, like)

    def slot(a, c):
        new_t.append(a)
        new_f.append(c)
        return _Slot(len(new_t) - 1)

    def walk(t, f):
        if isinstance(t, _Slot) and isinstance(f, _Slot):
            return slot(tf[t.i], ff[f.i])
        # A value one branch leaves undefined gets zeros there (never read, but every later read of the
        # output variable then finds a value); with an unknown extent it stays unset.
        if isinstance(t, _Slot) and undefined(f):
            return slot(tf[t.i], zeros_in(fi, tf[t.i]))
        if undefined(t) and isinstance(f, _Slot):
            return slot(zeros_in(ti, ff[f.i]), ff[f.i])
        if undefined(t) and undefined(f):
            return t
        if number(t) and isinstance(f, _Slot):  # a number against a tensor: the number as that tensor
            return slot(const_in(ti, t, ff[f.i]), ff[f.i])
        if isinstance(t, _Slot) and number(f):
            return slot(tf[t.i], const_in(fi, f, tf[t.i]))
        if isinstance(t, (list, tuple)) and isinstance(f, (list, tuple)) and type(t) is type(f) and len(t) == len(f):
            items = [walk(x, y) for x, y in zip(t, f)]
            return type(t)(items) if not hasattr(t, "_fields") else type(t)(*items)
        if isinstance(t, dict) and isinstance(f, dict) and t.keys() == f.keys():
            return {k: walk(t[k], f[k]) for k in t}
        if number(t) and number(f):
            if t == f and type(t) is type(f):
                return t
            if isinstance(t, float) or isinstance(f, float):
                dtype = _C.get_default_dtype()
            elif isinstance(t, bool) and isinstance(f, bool):
                dtype = _C.bool
            else:
                dtype = _C.int64
            made = []
            for idx, v in ((ti, t), (fi, f)):
                b.current_block = idx
                made.append(full([], v, dtype=dtype))
                b.current_block = parent
            return slot(*made)
        raise ValueError("cond: true_fn and false_fn must return the same structure; got {!r} and {!r}".format(t, f))

    structure = walk(ts, fs)
    return structure, new_t, new_f


def while_loop(cond_fn, body, loop_vars, name=None):
    b = _builder()
    parent = b.current_block
    ins = [_as_tensor(v, "while_loop") for v in loop_vars]
    lvs = [_copy(t) for t in ins]
    c = cond_fn(*lvs)
    if not isinstance(c, _C.Tensor) or c.size != 1 or c.dtype != _C.bool:
        raise ValueError("while_loop: cond must return a one-element bool tensor")
    c_var = _copy(c)
    idx = b.push_block()
    try:
        out = _body_outputs(body, lvs)
        body_reads = b.outer_reads(idx)  # before the condition's ops: the body's differentiable inputs
        new_c = cond_fn(*out)
        tmps = [_copy(o) for o in out] + [_copy(new_c)]  # copies first: the body may swap loop variables
        for t, dst in zip(tmps, lvs + [c_var]):
            b.append_op("assign", {"X": [_C._symbolic_name(t)]}, {"Out": [_C._symbolic_name(dst)]})
    finally:
        b.current_block = parent
    b.append_op("while", {"X": b.outer_reads(idx), "Condition": [_C._symbolic_name(c_var)]},
                {"Out": b.outer_writes(idx)}, {"is_test": False}, {"sub_block": idx})
    return _WhileGrad.attach(b, name, parent, idx, body, ins, lvs, out, c_var, body_reads)


def _body_outputs(body, lvs):
    out = body(*lvs)
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(out) != len(lvs):
        raise ValueError("while_loop: body returned {} values for {} loop variables".format(len(out), len(lvs)))
    out = [_as_tensor(o, "while_loop body") for o in out]
    for i, (o, v) in enumerate(zip(out, lvs)):
        if o.dtype != v.dtype or len(o.shape) != len(v.shape):
            raise ValueError("while_loop: loop variable {} is {} {} before the loop but {} {} after the body"
                             .format(i, v.dtype.name, v.shape, o.dtype.name, o.shape))
    return out


def _ops_with_seed(desc, idx):
    """Types of the random ops (a `seed` attribute) of block idx and its sub-blocks, training variants."""
    found = []
    for op in desc.block(idx)["ops"]:
        attrs = op["attrs"]
        if "seed" in attrs and attrs.get("oar_mode") != "test":
            found.append(op["type"])
        for k, t in op["attr_types"].items():
            if t == "BLOCK":
                found += _ops_with_seed(desc, attrs[k])
    return found


class _WhileGrad:
    """The gradient node of a static-mode while_loop's results.

    Design (docs/static.md, "Gradients through while_loop"): the loop's backward needs each iteration's
    inputs, which the loop overwrites. When a gradient first flows through the loop, _save() adds
    training-only ops (oar_mode "train", dropped by clone(for_test=True) and inference programs) that
    push the loop variables' values at the start of each iteration onto a stack variable (concat along a
    new axis 0) and count the iterations. The backward is a second `while` running the iterations in
    reverse: it reads iteration k's loop variables from the stacks, re-records the body on them (the
    forward of that iteration, recomputed), and records the body's backward with the autograd engine,
    carrying the loop variables' gradients from iteration to iteration and summing the gradients of the
    outer variables the body reads (closure parameters and inputs)."""

    def __init__(self, b, name, parent, idx, body, lvs, loop_inputs, closure, reason):
        self.b, self.name, self.parent, self.idx, self.body = b, name, parent, idx, body
        self.lvs, self.loop_inputs, self.closure, self.reason = lvs, loop_inputs, closure, reason
        self.saved = None

    @staticmethod
    def attach(b, name, parent, idx, body, ins, lvs, out, c_var, body_reads):
        lv_names = [_C._symbolic_name(v) for v in lvs]
        name = name or "while_loop (block {})".format(idx)
        # Differentiable inputs: the loop variables' initial values and the outer variables the body reads.
        loop_inputs = [i for i, t in enumerate(ins) if not t.stop_gradient and _differentiable(t)]
        closure, seen = [], set()
        for n in body_reads:
            if n in lv_names or n in seen:
                continue
            seen.add(n)
            t = b.live_tensor(n)
            if t is not None and not t.stop_gradient and _differentiable(t):
                closure.append(t)
        if not loop_inputs and not closure:
            return lvs
        reason = None
        writes = [n for n in b.outer_writes(idx) if n not in lv_names and n != _C._symbolic_name(c_var)]
        random_ops = _ops_with_seed(b.desc, idx)
        if writes:
            reason = "its body writes the outer variable(s) {} in place (its backward re-runs the body)".format(writes)
        elif random_ops:
            reason = "its body has random ops {} (its backward re-runs the body, which would draw new " \
                     "values)".format(sorted(set(random_ops)))
        else:
            for i, (o, v) in enumerate(zip(out, lvs)):
                if any(a != c and a >= 0 and c >= 0 for a, c in zip(o.shape, v.shape)):
                    reason = "loop variable {} changes shape from {} to {} in the body".format(i, v.shape, o.shape)
                    break
        node = _WhileGrad(b, name, parent, idx, body, lvs, loop_inputs, closure, reason)
        inputs = [ins[i] for i in loop_inputs] + closure
        recorded = [v if _differentiable(v) else None for v in lvs]
        new = _C._pylayer_record(_WhileGrad._backward, node, inputs, recorded, False, "while_loop")
        merged = [n if n is not None else v for n, v in zip(new, lvs)]
        for t in merged:
            b.note_live(t)
        return merged

    def _save(self):
        """The stacks of the loop variables' per-iteration values and the trip count (made once)."""
        if self.saved is not None:
            return self.saved
        from ..tensor.creation import full
        from ..tensor.manipulation import concat
        b = self.b
        here, role, mode = b.current_block, b.op_role, b.mode
        b.op_role, b.mode = 0, "train"
        try:
            b.current_block = self.parent  # before the while op: empty stacks, count 0
            first = b.desc.num_ops(self.parent)
            count = full([], 0, dtype=_C.int64)
            stacks = [v.unsqueeze(0)[0:0] for v in self.lvs]
            _C._move_ops(b, self.parent, first, self.idx)
            b.current_block = self.idx  # at the start of the body: push the iteration's inputs
            first = b.desc.num_ops(self.idx)
            ops = [(count + 1, count)] + [(concat([s, v.unsqueeze(0)], axis=0), s) for s, v in zip(stacks, self.lvs)]
            for new, dst in ops:
                b.append_op("assign", {"X": [_C._symbolic_name(new)]}, {"Out": [_C._symbolic_name(dst)]})
            _C._move_ops(b, self.idx, first, -1)
        finally:
            b.current_block, b.op_role, b.mode = here, role, mode
        self.saved = (stacks, count)
        return self.saved

    @staticmethod
    def _backward(node, *grad_outs):
        from ..tensor.creation import zeros_like
        from ..tensor.search import index_select
        if node.reason is not None:
            raise NotImplementedError("gradients: cannot differentiate through {}: {}".format(
                node.name, node.reason))
        b = node.b
        if _C._current_builder() is not b:
            raise RuntimeError("while_loop: its gradient must be recorded into the program holding the loop")
        stacks, count = node._save()
        here = b.current_block
        carried = [i for i, v in enumerate(node.lvs) if _differentiable(v)]
        # Outer variables the reverse loop updates: the loop variables' gradients (those of the final
        # values first), the closure's summed gradients, the iteration index and the condition.
        gv = {i: _copy(grad_outs[i]) if grad_outs[i] is not None else zeros_like(node.lvs[i]) for i in carried}
        acc = [zeros_like(x) for x in node.closure]
        k = _copy(count)
        c = _copy(k > 0)
        gi = b.push_block()
        grad_mode = _C.is_grad_enabled()
        try:
            k1 = k - 1
            vs = []
            for s in stacks:
                v = index_select(s, k1.reshape([1]), axis=0).squeeze(0)
                if _differentiable(v):
                    v.stop_gradient = False
                vs.append(v)
            _C._set_grad_enabled(True)  # record the iteration's forward with its autograd history
            try:
                outs = _body_outputs(node.body, vs)
            finally:
                _C._set_grad_enabled(grad_mode)
            pairs = [(outs[i], gv[i]) for i in carried if not outs[i].stop_gradient and _differentiable(outs[i])]
            wrt = [vs[i] for i in carried] + list(node.closure)
            grads = [None] * len(wrt)
            if pairs:
                grads = _C._partial_grad([o for o, _ in pairs], wrt, [g for _, g in pairs])
            new = [_copy(g) if g is not None else zeros_like(vs[i]) for i, g in zip(carried, grads)]
            sums = [(a + g, a) for a, g in zip(acc, grads[len(carried):]) if g is not None]
            writes = [(n, gv[i]) for n, i in zip(new, carried)] + sums + [(k1, k), (k1 > 0, c)]
            for src, dst in writes:
                b.append_op("assign", {"X": [_name(b, src)]}, {"Out": [_C._symbolic_name(dst)]})
        finally:
            b.current_block = here
        b.keep_alive_for(gi)  # the stacks outlive the forward loop's block when that is a sub-block
        b.append_op("while", {"X": b.outer_reads(gi), "Condition": [_C._symbolic_name(c)]},
                    {"Out": b.outer_writes(gi)}, {"is_test": False}, {"sub_block": gi})
        return tuple([gv[i] for i in node.loop_inputs] + acc)
