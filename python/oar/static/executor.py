"""Executor, CompiledProgram and the strategies (Paddle's paddle.static.Executor and friends).

Executor.run(program, feed, fetch_list) lowers the program once per (program state, feed names, fetch
names) to the C++ executor (oar::ir::Executor) and caches it. Variables are freed after their last use;
parameters and other persistables live in the scope (global_scope() by default).
"""
import warnings

import numpy as np

from .. import _C
from . import program as _prog

__all__ = ["Executor", "CompiledProgram", "BuildStrategy", "ExecutionStrategy"]


class BuildStrategy:
    """Program build options (Paddle's BuildStrategy). A CompiledProgram of an inference program (a
    clone(for_test=True), a loaded inference model) runs the inference passes (docs/program_ir.md) these
    flags select: fuse_elewise_add_act_ops (add + activation), fuse_gemm_epilogue (matmul + bias (+ act)
    -> fc), memory_optimize / enable_inplace (memory reuse); dead-code and common-subexpression
    elimination always run. A CompiledProgram of a training program, and jit.to_static(build_strategy=...),
    run the training fusion passes the flags select: fuse_gemm_epilogue, fuse_elewise_add_act_ops, and
    oar's own fuse_residual_layer_norm, fuse_attention, fuse_softmax_grad (docs/static.md, "Training
    passes"; all False here, so a BuildStrategy() asks for none)."""

    def __init__(self):
        self.fuse_elewise_add_act_ops = False
        self.fuse_gemm_epilogue = False
        self.fuse_bn_act_ops = False
        self.fuse_relu_depthwise_conv = False
        self.enable_inplace = True
        self.memory_optimize = True
        self.enable_addto = False
        self.build_cinn_pass = False
        self.fuse_residual_layer_norm = False  # oar: add + layer_norm (training programs)
        self.fuse_attention = False  # oar: the attention block (training programs)
        self.fuse_softmax_grad = False  # oar: the softmax gradient chain (training programs)
        self.debug_graphviz_path = ""


class ExecutionStrategy:
    def __init__(self):
        self.num_threads = 1
        self.num_iteration_per_drop_scope = 100


class CompiledProgram:
    """A program with a BuildStrategy (Paddle's CompiledProgram); runs like the program itself."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, _prog.Program):
            raise TypeError("CompiledProgram: expected a Program, got {}".format(type(program_or_graph).__name__))
        self._program = program_or_graph
        self._build_strategy = build_strategy or BuildStrategy()
        # The passes' report after the first run: the inference passes' for an inference program, the
        # training passes' for a training program (docs/static.md, "Training passes").
        self.pass_report = None

    def with_data_parallel(self, *args, **kwargs):
        return self


def _flat_fetch_list(fetch_list):
    """Paddle's fetch_list: items, or lists/tuples of items (flattened one level)."""
    if fetch_list is None:
        return []
    if not isinstance(fetch_list, (list, tuple)):
        fetch_list = [fetch_list]
    out = []
    for f in fetch_list:
        out.extend(f if isinstance(f, (list, tuple)) else [f])
    return out


def _fetch_name(f, program):
    if isinstance(f, str):
        return f
    if isinstance(f, _C.Tensor) and _C._is_symbolic(f):
        return _C._symbolic_name(f)
    if isinstance(f, _C.Tensor):
        # A concrete tensor: a Parameter (fetched under its own name, as in Paddle) or any other tensor
        # the program reads or can read (a capture: a persistable variable bound by reference).
        from ..framework.parameter import Parameter
        if isinstance(f, Parameter) and f.name not in program._params and f.name not in program._captures():
            program._bind_parameter(f)
        return program._builder.capture(f)
    raise TypeError("Executor.run: fetch_list items must be program variables, tensors or names, got {}".format(
        type(f).__name__))


def _as_feed_tensor(name, value, var):
    from ..tensor.creation import to_tensor
    if isinstance(value, _C.Tensor):
        if _C._is_symbolic(value):
            raise TypeError("Executor.run: feed '{}' is a program variable, not a value".format(name))
        return value
    if var is not None and "dtype" in var:
        a = np.asarray(value)
        want = var["dtype"]
        if a.dtype == np.float64 and want in (_C.float32, _C.float16, _C.bfloat16):
            a = a.astype(np.float32)  # Python floats: as Paddle, fed values take the variable's float type
        t = to_tensor(a)
        if t.dtype != want:
            raise TypeError("Executor.run: feed '{}' has dtype {} but the variable is {}".format(
                name, t.dtype.name, want.name))
        return t
    return to_tensor(np.asarray(value))


class Executor:
    """Runs programs on `place` (default: the current device)."""

    def __init__(self, place=None):
        self.place = place
        self._cache = {}

    def close(self):
        self._cache.clear()

    def _with_passes(self, compiled, program, feed_names, fetch_names, scope):
        """An _Executor for an inference program after the passes compiled's BuildStrategy selects (Paddle
        op dialect, feed and fetch ops). Passes that bake parameter values into new constants (constant
        folding, conv+bn and matmul+bias folding) run only on loaded models, whose parameters are fixed;
        a test clone shares parameters that training keeps changing."""
        bs = compiled._build_strategy
        loaded = bool(getattr(program, "_feed_fetch", None))
        desc = program.desc
        if not loaded:
            desc = _C._prepare_inference_program(desc, list(feed_names), list(fetch_names))
        desc, _ = _C._export_paddle_dialect(desc)
        prev = _C._set_builder(None)  # folding runs ops: eagerly, also while a program is being built
        try:
            desc, params, report = _C._run_inference_passes(
                desc, program._all_captures(), place=self.place, dce=True, cse=True, constant_folding=loaded,
                fuse_elementwise_act=bool(bs.fuse_elewise_add_act_ops),
                fuse_matmul_bias=loaded and bool(bs.fuse_gemm_epilogue), fold_conv_bn=loaded,
                memory_reuse=bool(bs.memory_optimize or bs.enable_inplace))
        finally:
            _C._set_builder(prev)
        compiled.pass_report = report
        exe = _C._Executor(desc, self.place, scope=scope._scope)
        for name, t in params.items():
            scope._scope.set(name, t)
        return exe

    def _with_training_passes(self, compiled, program, desc, feed_names, fetch_names):
        """A training program (forward, backward and optimizer ops in one program) after the fusion
        passes compiled's BuildStrategy selects (docs/static.md, "Training passes"): everything fed,
        fetched or persistable keeps its value."""
        from ..jit.api import training_pass_flags
        flags = training_pass_flags(compiled._build_strategy)
        if flags is None:
            return desc
        pinned = set(feed_names) | set(fetch_names) | set(program._all_captures())
        pinned |= {v["name"] for v in desc.block(0)["vars"] if v["persistable"]}
        desc, _, compiled.pass_report = _C._run_training_passes(desc, None, pinned, set(), place=self.place, **flags)
        return desc

    def _lowered(self, program, feed_names, fetch_names, scope, compiled=None):
        desc = program.desc
        state = (desc.num_blocks, tuple(desc.num_ops(i) for i in range(desc.num_blocks)), desc.num_vars(0))
        key = (id(program), state, tuple(feed_names), tuple(fetch_names), id(scope))
        hit = self._cache.get(key + (id(compiled),))
        # A new learning rate (program._lr_version) replaces the entry rather than adding one.
        if hit is not None and hit[0] is program and hit[1] == program._lr_version:
            return hit[2]
        for name in feed_names:
            if not program.global_block().has_var(name):
                raise ValueError("Executor.run: the program has no variable '{}' to feed".format(name))
        if compiled is not None and (program._is_test or getattr(program, "_feed_fetch", None)):
            exe = self._with_passes(compiled, program, feed_names, fetch_names, scope)
        elif getattr(program, "_feed_fetch", None):  # a loaded inference model: its own feed/fetch ops
            exe = _C._Executor(desc, self.place, scope=scope._scope)
        else:
            # One variant of the train/test ops (dropout, batch_norm): the program's own mode.
            desc = _C._select_mode(desc, program._is_test)
            if compiled is not None:
                desc = self._with_training_passes(compiled, program, desc, feed_names, fetch_names)
            exe = _C._Executor(desc, self.place, scope=scope._scope,
                               feed_names=list(feed_names), fetch_names=list(fetch_names))
        # The program's captured tensors (parameters, optimizer state, constants) are bound by reference.
        for name, t in program._all_captures().items():
            scope._scope.set(name, t)
        self._cache[key + (id(compiled),)] = (program, program._lr_version, exe)
        return exe

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed", fetch_var_name="fetch",
            scope=None, return_numpy=True, use_program_cache=True, use_prune=False):
        compiled = None
        if isinstance(program, CompiledProgram):
            compiled, program = program, program._program
        if program is None:
            program = _prog.default_main_program()
        if not isinstance(program, _prog.Program):
            raise TypeError("Executor.run: program must be a Program, got {}".format(type(program).__name__))
        scope = scope or _prog.global_scope()
        feed = feed or {}
        if not isinstance(feed, dict):
            raise TypeError("Executor.run: feed must be a dict {name: value}, got {}".format(type(feed).__name__))
        fetch_names = [_fetch_name(f, program) for f in _flat_fetch_list(fetch_list)]
        main = getattr(program, "_main", None)
        if program.desc.num_ops(0) == 0 and main is not None:
            # A startup program: parameters already hold their initial values; bind them.
            for name, t in main._all_captures().items():
                scope._scope.set(name, t)
            return []
        vars_ = program.global_block()._var_descs()
        unknown = [k for k in feed if k not in vars_ and k not in program._all_captures()]
        for k in unknown:  # as Paddle: a feed entry the program does not have is skipped, with a warning
            warnings.warn("The variable {} is not found in program. It is not declared or is pruned.".format(k))
        feeds = {k: _as_feed_tensor(k, v, vars_.get(k)) for k, v in feed.items() if k not in unknown}
        program._sync_lr()
        exe = self._lowered(program, list(feeds), fetch_names, scope, compiled)
        prev = _C._set_builder(None)  # running is eager even while a program is being built
        grad = _C.is_grad_enabled()
        _C._set_grad_enabled(False)  # a program's gradients are its own backward ops
        try:
            outs = exe.run(feeds)
        finally:
            _C._set_grad_enabled(grad)
            _C._set_builder(prev)
        ff = getattr(program, "_feed_fetch", None)
        if ff is None and compiled is not None and program._is_test:
            ff = (list(feeds), fetch_names)  # the passes' program has feed and fetch ops in this order
        if ff:
            by_name = dict(zip(ff[1], outs))
            missing = [n for n in fetch_names if n not in by_name]
            if missing:
                raise ValueError("Executor.run: the model fetches {}; {} is not among them".format(ff[1], missing))
            outs = [by_name[n] for n in fetch_names] if fetch_names else outs
        if return_numpy:
            # numpy() of a fetched view (a slice's output) makes it contiguous with an op: run it eagerly,
            # not into the program being built (static mode keeps a builder active between runs).
            with _prog._eager_guard():
                return [o.numpy() for o in outs]
        return outs
