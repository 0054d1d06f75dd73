"""oar.nn: neural-network layers (Paddle's paddle.nn): the Layer base class, containers, layers,
initializers and the functional ops (oar.nn.functional)."""
from . import functional, initializer, utils  # noqa: F401
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue  # noqa: F401
from .layer import *  # noqa: F401,F403
from .layer import Layer, LayerDict, LayerList, ParameterList, Sequential  # noqa: F401
from .decode import BeamSearchDecoder, dynamic_decode  # noqa: F401
from ..framework.parameter import Parameter  # noqa: F401
