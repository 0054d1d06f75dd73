"""oar.jit: to_static, save and load (Paddle's paddle.jit); see docs/static.md and docs/dy2static.md."""
from .api import (StaticFunction, TranslatedLayer, enable_to_static, ignore_module, load, save,  # noqa: F401
                  to_static)
from .dy2static import convert_to_static, not_to_static, set_code_level, set_verbosity  # noqa: F401
from ..static.input import InputSpec  # noqa: F401
