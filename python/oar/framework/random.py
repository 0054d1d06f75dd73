"""oar.framework.random (Paddle's paddle.framework.random): the global seed."""
from .._C import seed  # noqa: F401


def _manual_program_seed(seed_value):
    """Paddle's helper for tests: seeds the global generator and the default main and startup programs."""
    from ..static import program as _program
    seed(seed_value)
    _program.default_main_program().random_seed = seed_value
    _program.default_startup_program().random_seed = seed_value
