"""The layer classes of oar.nn, one module per family."""
from .layers import Layer  # noqa: F401
from .container import LayerDict, LayerList, ParameterList, Sequential  # noqa: F401
# Concrete layers (one module per family).
from .activation import *  # noqa: F401,F403
from .common import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
