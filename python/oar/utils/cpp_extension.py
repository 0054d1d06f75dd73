"""oar.utils.cpp_extension: building and loading custom C++ ops (Paddle's paddle.utils.cpp_extension).
Empty until later work fills it."""
from ._custom_op import load_op_library  # noqa: F401,E402
