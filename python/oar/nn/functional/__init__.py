"""oar.nn.functional: the functional forms of layers (Paddle's paddle.nn.functional).

Each module lists its functions in __all__; this package re-exports them all.
"""
from . import activation, common, conv, loss, norm, pooling, vision
from .activation import *  # noqa: F401,F403
from .common import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from ...tensor.manipulation import pad  # noqa: F401  (Paddle has it in both places)
from ..decode import gather_tree  # noqa: F401

__all__ = (activation.__all__ + common.__all__ + conv.__all__ + loss.__all__ + norm.__all__ + pooling.__all__ +
           vision.__all__ + ["pad", "gather_tree"])
