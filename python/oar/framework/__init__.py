"""oar.framework: parameters, parameter attributes and unique names (Paddle's paddle.framework)."""
from . import unique_name  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .parameter import Parameter, create_parameter  # noqa: F401
