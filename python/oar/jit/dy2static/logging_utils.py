"""set_code_level / set_verbosity (Paddle's paddle.jit.set_code_level / set_verbosity).

Messages go to sys.stderr (and sys.stdout too with also_to_stdout=True), looked up at each write so that
redirection and test capture see them. The environment variables OAR_DY2ST_CODE_LEVEL and
OAR_DY2ST_VERBOSITY give the initial levels.
"""
import os
import sys

__all__ = ["set_code_level", "set_verbosity", "get_code_level", "get_verbosity"]


def _env_int(name, default):
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


_state = {
    "code_level": _env_int("OAR_DY2ST_CODE_LEVEL", 0),
    "code_stdout": False,
    "verbosity": _env_int("OAR_DY2ST_VERBOSITY", 0),
    "verbosity_stdout": False,
}


def set_code_level(level=100, also_to_stdout=False):
    """Print the converted code of each function converted from now on: after the AST pass number
    `level` (1: expressions, 2: return, 3: loops, 4: if/else); any level above the last pass (the default
    100) prints the final code; 0 turns printing off."""
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError("set_code_level: level must be an int, got {}".format(type(level).__name__))
    _state["code_level"] = level
    _state["code_stdout"] = bool(also_to_stdout)


def set_verbosity(level=0, also_to_stdout=False):
    """Log conversion steps: 1 = each function converted or left unconverted (with the reason), 2 = also
    each call routed by convert_call, 3 = also each AST pass. 0 turns logging off."""
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError("set_verbosity: level must be an int, got {}".format(type(level).__name__))
    _state["verbosity"] = level
    _state["verbosity_stdout"] = bool(also_to_stdout)


def get_code_level():
    return _state["code_level"]


def get_verbosity():
    return _state["verbosity"]


def _write(msg, to_stdout):
    sys.stderr.write(msg + "\n")
    if to_stdout:
        sys.stdout.write(msg + "\n")


def log(level, msg):
    """Write msg when the verbosity is at least level."""
    if _state["verbosity"] >= level:
        _write("[oar.jit dy2static] " + msg, _state["verbosity_stdout"])


def wants_code(pass_index, num_passes):
    """Whether the code after pass number pass_index (1-based) is to be printed."""
    level = _state["code_level"]
    if level <= 0:
        return False
    return pass_index == level or (level > num_passes and pass_index == num_passes)


def log_code(pass_index, pass_name, source):
    _write("[oar.jit dy2static] after the level {} AST transformer '{}', the converted code:\n{}".format(
        pass_index, pass_name, source), _state["code_stdout"])
