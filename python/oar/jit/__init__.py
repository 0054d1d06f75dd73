"""oar.jit: to_static, save and load (Paddle's paddle.jit). Empty until later work fills it."""
from .dy2static import convert_to_static, not_to_static, set_code_level, set_verbosity  # noqa: F401
