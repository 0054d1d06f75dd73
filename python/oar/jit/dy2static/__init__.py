"""Dygraph-to-static source conversion used by oar.jit.to_static (Paddle's dygraph_to_static).

`convert_to_static(fn)` rewrites a Python function so that control flow on symbolic tensors becomes
program control flow (oar.static.nn.cond / while_loop) while Python values keep Python semantics.
See docs/dy2static.md.
"""
from . import convert_operators  # first: convert_call_func imports it
from .convert_operators import UndefinedVar, Dy2StaticError, is_symbolic  # noqa: F401
from .convert_call_func import (convert_to_static, convert_call, not_to_static, get_converted_code,  # noqa: F401
                                converted_source)
from .logging_utils import set_code_level, set_verbosity  # noqa: F401
from .transformers import UnsupportedSyntax  # noqa: F401

__all__ = [
    "convert_to_static", "convert_call", "not_to_static", "get_converted_code", "converted_source",
    "set_code_level", "set_verbosity", "is_symbolic", "UndefinedVar", "Dy2StaticError", "UnsupportedSyntax"
]
