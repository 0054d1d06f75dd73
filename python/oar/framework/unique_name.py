"""Unique names (Paddle's paddle.utils.unique_name, also oar.framework.unique_name).

generate("fc") gives "fc_0", then "fc_1"; each key counts on its own. This is the one source of names in
the process: layers ("linear_0"), parameters ("linear_0.w_0") and the variables static programs and
to_static record ("relu.tmp_0") all come from the current generator, so guard() restarts all of them.
"""
import collections
import contextlib

from .. import _C

__all__ = ["generate", "generate_with_ignorable_key", "guard", "switch", "UniqueNameGenerator"]


class UniqueNameGenerator:
    """Numbers names per key from 0, each prefixed with `prefix` (Paddle's UniqueNameGenerator)."""

    def __init__(self, prefix=None):
        self.ids = collections.defaultdict(int)
        self.prefix = prefix if prefix is not None else ""

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] = n + 1
        return "{}{}_{}".format(self.prefix, key, n)


class _ParamNameChecker:
    """Stands for Paddle's DygraphParameterNameChecker, which switch() also swaps: the names of the
    parameters made under it. oar does not use it; it exists so switch()'s result unpacks as Paddle's."""

    def __init__(self):
        self._names = set()

    def __call__(self, name, check=False):
        if check:
            return name in self._names
        self._names.add(name)
        return None


_generator = UniqueNameGenerator()
_checker = _ParamNameChecker()


def generate(key):
    """The next unique name for `key`: "<prefix><key>_<n>"."""
    if not isinstance(key, str):
        raise TypeError("unique_name.generate: key must be a str, got {}".format(type(key).__name__))
    return _generator(key)


def generate_with_ignorable_key(key):
    """Paddle's name for temporary variables; the same as generate(key) in oar."""
    return generate(key)


def switch(new_generator=None, new_para_name_checker=None):
    """Installs `new_generator` (a fresh one when None) and returns the previous (generator, checker)
    pair, which switch(*pair) restores."""
    global _generator, _checker
    if new_generator is not None and not isinstance(new_generator, UniqueNameGenerator):
        raise TypeError("unique_name.switch: new_generator must be a UniqueNameGenerator or None, got {}".format(
            type(new_generator).__name__))
    old = (_generator, _checker)
    _generator = new_generator if new_generator is not None else UniqueNameGenerator()
    _checker = new_para_name_checker if new_para_name_checker is not None else _ParamNameChecker()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Names generated inside start from fresh counters; a str (or bytes) argument becomes their prefix
    (guard("A"): "Afc_0")."""
    if isinstance(new_generator, bytes):
        new_generator = new_generator.decode()
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(*old)


# Static programs and to_static name their variables through this module (ProgramBuilder::unique_name).
_C._set_name_source(generate)
