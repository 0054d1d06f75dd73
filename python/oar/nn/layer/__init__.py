"""The layer classes of oar.nn, one module per family."""
from .layers import Layer  # noqa: F401
from .container import LayerDict, LayerList, ParameterList, Sequential  # noqa: F401
from .rnn import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
