"""The tensor op library (oar.tensor.*, re-exported at the top level as in Paddle) and the Tensor
methods built from it."""
from . import array, attribute, complex_ops, creation, linalg, logic, manipulation, math, random, search
from . import extra
from .array import array_length, array_read, array_write, create_array  # noqa: F401  (not top-level names)
from .attribute import *  # noqa: F401,F403
from .complex_ops import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .logic import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .extra import *  # noqa: F401,F403  (issue 19: names Paddle 2.6 has at the top level)
from . import tensor_methods  # noqa: F401  (adds the Python-level methods to Tensor)

__all__ = attribute.__all__ + complex_ops.__all__ + creation.__all__ + linalg.__all__ + logic.__all__ + manipulation.__all__ + math.__all__ + random.__all__ + search.__all__ + extra.__all__
