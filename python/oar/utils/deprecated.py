"""oar.utils.deprecated (Paddle's paddle.utils.deprecated): marks a function or class as deprecated."""
import functools
import inspect
import warnings

__all__ = ["deprecated"]


def deprecated(update_to="", since="", reason="", level=0):
    """A decorator: the docstring gains a deprecation notice, and a call warns (level 1, a
    DeprecationWarning), stays silent (level 0) or raises RuntimeError (level 2)."""
    if level not in (0, 1, 2):
        raise ValueError("deprecated: level must be 0, 1 or 2, got {!r}".format(level))
    for key, value in (("update_to", update_to), ("since", since), ("reason", reason)):
        if not isinstance(value, str):
            raise TypeError("deprecated: {} must be a str, got {}".format(key, type(value).__name__))

    def decorator(func):
        name = getattr(func, "__module__", "") + "." + getattr(func, "__qualname__", func.__name__)
        msg = "API \"{}\" is deprecated".format(name.lstrip("."))
        if since:
            msg += " since {}".format(since)
        if update_to:
            msg += ", and will be removed in future versions. Please use \"{}\" instead".format(update_to)
        msg += "."
        if reason:
            msg += " Reason: {}".format(reason)
        notice = "\n\nWarning:\n    " + msg + "\n"

        target = func.__init__ if inspect.isclass(func) else func

        @functools.wraps(target)
        def wrapper(*args, **kwargs):
            if level == 2:
                raise RuntimeError(msg)
            if level == 1:
                warnings.warn(msg, category=DeprecationWarning, stacklevel=2)
            return target(*args, **kwargs)

        if inspect.isclass(func):
            func.__init__ = wrapper
            try:
                func.__doc__ = (func.__doc__ or "") + notice
            except AttributeError:  # a class whose __doc__ cannot be set
                pass
            return func
        wrapper.__doc__ = (func.__doc__ or "") + notice
        return wrapper

    return decorator
