"""Message passing with edge features (Paddle's send_ue_recv, send_uv): gather the endpoint rows with
index_select, combine them elementwise (broadcasting the feature dims), and reduce by destination with the
segment_pool op, as send_u_recv does. All differentiable through those ops."""
import numbers

from .. import _C
from .._C import Tensor

__all__ = ["send_ue_recv", "send_uv"]

_index_select = _C.Op("index_select", "axis")
_segment_pool = _C.Op("segment_pool", "num_segments", "pooltype")
_POOL = {"sum": 0, "mean": 1, "max": 2, "min": 3}
_MESSAGE = ("add", "sub", "mul", "div")


def _index(fn, name, ids, length=None):
    if not isinstance(ids, Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, name, type(ids).__name__))
    if ids.dtype not in (_C.int32, _C.int64) or ids.ndim != 1:
        raise ValueError("{}: {} must be a 1-D int32 or int64 tensor, got {} of shape {}".format(
            fn, name, ids.dtype.name, ids.shape))
    if length is not None and ids.shape[0] != length:
        raise ValueError("{}: {} has {} elements, expected {} (as src_index)".format(fn, name, ids.shape[0], length))
    return ids.numpy()


def _check_rows(fn, name, host, rows, what):
    if host.size and (host.min() < 0 or host.max() >= rows):
        bad = int(host.min()) if host.min() < 0 else int(host.max())
        raise ValueError("{}: {} holds {}, out of range for {} with {} rows".format(fn, name, bad, what, rows))


def _message(fn, a, b, message_op):
    from ..tensor.math import add, divide, multiply, subtract
    op = {"add": add, "sub": subtract, "mul": multiply, "div": divide}.get(message_op)
    if op is None:
        raise ValueError("{}: message_op must be one of add, sub, mul, div, got {!r}".format(fn, message_op))
    return op(a, b)


def _tensor(fn, name, t):
    if not isinstance(t, Tensor) or t.ndim < 1:
        raise ValueError("{}: {} must be a tensor with at least 1 dimension, got {!r}".format(
            fn, name, getattr(t, "shape", t)))


def send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, name=None):
    """Message passing with edge features: edge k carries x[src_index[k]] (message_op) y[k], reduced at
    row dst_index[k] of the result (reduce_op sum, mean, max or min; rows receiving nothing are 0).
    y has one row per edge; its other dims broadcast against x's. out_size None or <= 0: x's rows."""
    fn = "send_ue_recv"
    _tensor(fn, "x", x)
    _tensor(fn, "y", y)
    if message_op not in _MESSAGE:
        raise ValueError("{}: message_op must be one of add, sub, mul, div, got {!r}".format(fn, message_op))
    if reduce_op not in _POOL:
        raise ValueError("{}: reduce_op must be one of sum, mean, max, min, got {!r}".format(fn, reduce_op))
    src = _index(fn, "src_index", src_index)
    dst = _index(fn, "dst_index", dst_index, src.shape[0])
    if y.ndim == 1 and x.ndim > 1:  # one scalar per edge (Paddle reads a 1-D y as [E, 1])
        y = y.unsqueeze(-1)
    if y.shape[0] != src.shape[0]:
        raise ValueError("{}: y must have one row per edge ({}), got shape {}".format(fn, src.shape[0], y.shape))
    _check_rows(fn, "src_index", src, x.shape[0], "x")
    if isinstance(out_size, Tensor):
        out_size = out_size.item()
    if out_size is not None and (isinstance(out_size, bool) or not isinstance(out_size, numbers.Integral)):
        raise TypeError("{}: out_size must be an int or None, got {!r}".format(fn, out_size))
    n = x.shape[0] if out_size is None or out_size <= 0 else int(out_size)
    _check_rows(fn, "dst_index", dst, n, "an output")
    msg = _message(fn, _index_select(x, src_index, 0), y, message_op)
    return _segment_pool(msg, dst_index, n, _POOL[reduce_op])


def send_uv(x, y, src_index, dst_index, message_op="add", name=None):
    """One message per edge: x[src_index[k]] (message_op) y[dst_index[k]] (feature dims broadcast)."""
    fn = "send_uv"
    _tensor(fn, "x", x)
    _tensor(fn, "y", y)
    if message_op not in _MESSAGE:
        raise ValueError("{}: message_op must be one of add, sub, mul, div, got {!r}".format(fn, message_op))
    src = _index(fn, "src_index", src_index)
    dst = _index(fn, "dst_index", dst_index, src.shape[0])
    _check_rows(fn, "src_index", src, x.shape[0], "x")
    _check_rows(fn, "dst_index", dst, y.shape[0], "y")
    return _message(fn, _index_select(x, src_index, 0), _index_select(y, dst_index, 0), message_op)
