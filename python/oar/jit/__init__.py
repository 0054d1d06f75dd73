"""oar.jit: to_static, save and load (Paddle's paddle.jit); see docs/static.md and docs/dy2static.md."""
from .api import StaticFunction, enable_to_static, ignore_module, load, save, to_static  # noqa: F401
from .dy2static import convert_to_static, not_to_static, set_code_level, set_verbosity  # noqa: F401
from ..static.input import InputSpec  # noqa: F401


def __getattr__(name):  # TranslatedLayer subclasses oar.nn.Layer, which is imported after oar.jit
    if name == "TranslatedLayer":
        from .api import _get_translated_layer_class
        return _get_translated_layer_class()
    raise AttributeError("module 'oar.jit' has no attribute '{}'".format(name))
