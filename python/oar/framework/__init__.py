"""oar.framework: parameters, parameter attributes, unique names, save/load (oar.framework.io) (Paddle's paddle.framework)."""
from . import random, unique_name  # noqa: F401
from .errors import AssertionValueError  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .parameter import Parameter, create_parameter  # noqa: F401


def use_pir_api():
    """False, as Paddle 2.6.2 answers by default: oar's static programs follow Paddle's legacy program API,
    not its PIR (the new IR), and scripts branch on this."""
    return False
