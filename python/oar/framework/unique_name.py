"""Unique names for layers and parameters (Paddle's paddle.utils.unique_name): generate("linear") gives
"linear_0", then "linear_1"; each key counts on its own."""
import contextlib

__all__ = ["generate", "guard", "switch"]


class _NameGenerator:
    def __init__(self, prefix=""):
        self.prefix = prefix
        self.ids = {}

    def __call__(self, key):
        n = self.ids.get(key, 0)
        self.ids[key] = n + 1
        return "{}{}_{}".format(self.prefix, key, n)


_generator = _NameGenerator()


def generate(key):
    """The next unique name for `key`: "<key>_<n>"."""
    return _generator(key)


def switch(new_generator=None):
    """Installs `new_generator` (a fresh one when None) and returns the previous one."""
    global _generator
    old = _generator
    _generator = new_generator if new_generator is not None else _NameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Names generated inside start from fresh counters (a str argument becomes their prefix)."""
    if isinstance(new_generator, str):
        new_generator = _NameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
