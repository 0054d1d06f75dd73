"""oar.jit: to_static, save and load (Paddle's paddle.jit); see docs/jit.md."""
from .api import (StaticFunction, TranslatedLayer, enable_to_static, ignore_module, load, not_to_static,  # noqa: F401
                  save, to_static)
from ..static.input import InputSpec  # noqa: F401
