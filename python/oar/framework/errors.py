"""Exception types shared across oar's Python API."""


class AssertionValueError(ValueError, AssertionError):
    """A bad argument value that Paddle 2.x reports with a bare `assert` (AssertionError). oar raises this
    so code written against Paddle (`except AssertionError`) and code written against oar's own convention
    (`except ValueError`) both catch it."""


def invalid_argument(message):
    """A ValueError whose message starts with Paddle's class word, as the core's errors do ("(InvalidArgument)
    ...", decision 98), for the checks Paddle makes in C++ and oar in Python."""
    return ValueError("(InvalidArgument) " + message)
