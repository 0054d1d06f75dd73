"""oar.linalg: linear algebra (Paddle's paddle.linalg). The functions live in oar.tensor.linalg."""
from .tensor.linalg import *  # noqa: F401,F403
from .tensor.linalg import __all__  # noqa: F401
