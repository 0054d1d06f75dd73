"""oar.geometric (Paddle's paddle.geometric): segment reductions and message passing, on the core op
segment_pool (docs/ops_math.md)."""
import numbers

from .. import _C
from .._C import Tensor

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "send_u_recv", "send_ue_recv", "send_uv",
           "sample_neighbors", "weighted_sample_neighbors", "reindex_graph", "reindex_heter_graph"]

_segment_pool = _C.Op("segment_pool", "num_segments", "pooltype")
_POOL = {"sum": 0, "mean": 1, "max": 2, "min": 3}


def _ids(fn, name, ids, length=None):
    if not isinstance(ids, Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, name, type(ids).__name__))
    if ids.dtype not in (_C.int32, _C.int64) or ids.ndim != 1:
        raise ValueError("{}: {} must be a 1-D int32 or int64 tensor, got {} of shape {}".format(
            fn, name, ids.dtype.name, ids.shape))
    if length is not None and ids.shape[0] != length:
        raise ValueError("{}: {} has {} elements, expected {}".format(fn, name, ids.shape[0], length))
    host = ids.numpy()
    if host.size and host.min() < 0:
        raise ValueError("{}: {} must be non-negative, got {}".format(fn, name, int(host.min())))
    return host


def _segment(fn, data, segment_ids, pooltype):
    if not isinstance(data, Tensor) or data.ndim < 1:
        raise ValueError("{}: data must be a tensor with at least 1 dimension".format(fn))
    host = _ids(fn, "segment_ids", segment_ids, data.shape[0])
    if host.size > 1 and (host[1:] < host[:-1]).any():
        i = int((host[1:] < host[:-1]).argmax())
        raise ValueError("{}: segment_ids must be sorted, got segment_ids[{}] = {} > segment_ids[{}] = {}".format(
            fn, i, int(host[i]), i + 1, int(host[i + 1])))
    n = int(host[-1]) + 1 if host.size else 0
    return _segment_pool(data, segment_ids, n, pooltype)


def segment_sum(data, segment_ids, name=None):
    """out[s] = the sum of the rows data[i] with segment_ids[i] == s (ids sorted, 1-D); s runs to max id."""
    return _segment("segment_sum", data, segment_ids, 0)


def segment_mean(data, segment_ids, name=None):
    """The mean of each segment's rows (0 for an empty segment)."""
    return _segment("segment_mean", data, segment_ids, 1)


def segment_max(data, segment_ids, name=None):
    """The elementwise maximum of each segment's rows (0 for an empty segment); ties all get the gradient."""
    return _segment("segment_max", data, segment_ids, 2)


def segment_min(data, segment_ids, name=None):
    """The elementwise minimum of each segment's rows (0 for an empty segment)."""
    return _segment("segment_min", data, segment_ids, 3)


_MESSAGE = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}


def _message(fn, a, b, message_op):
    if message_op not in _MESSAGE:
        raise ValueError("{}: message_op must be one of add, sub, mul, div, got {!r}".format(fn, message_op))
    return _C.Op(_MESSAGE[message_op])(a, b)


def send_uv(x, y, src_index, dst_index, message_op="add", name=None):
    """Edge messages x[src_index[k]] op y[dst_index[k]] (op add, sub, mul or div; broadcast)."""
    src = _ids("send_uv", "src_index", src_index)
    dst = _ids("send_uv", "dst_index", dst_index, src_index.shape[0])
    for t, ids, nm in ((x, src, "x"), (y, dst, "y")):
        if ids.size and ids.max() >= t.shape[0]:
            raise ValueError("send_uv: an index ({}) is out of range for {} with {} rows".format(
                int(ids.max()), nm, t.shape[0]))
    sel = _C.Op("index_select", "axis")
    return _message("send_uv", sel(x, src_index, 0), sel(y, dst_index, 0), message_op)


def send_ue_recv(x, y, src_index, dst_index, message_op="add", reduce_op="sum", out_size=None, name=None):
    """send_u_recv with edge features: the message of edge k is x[src_index[k]] op y[k] (op add, sub, mul or
    div; broadcast), reduced into row dst_index[k] (sum, mean, max or min)."""
    if reduce_op not in _POOL:
        raise ValueError("send_ue_recv: reduce_op must be one of sum, mean, max, min, got {!r}".format(reduce_op))
    src = _ids("send_ue_recv", "src_index", src_index)
    _ids("send_ue_recv", "dst_index", dst_index, src_index.shape[0])
    if src.size and src.max() >= x.shape[0]:
        raise ValueError("send_ue_recv: src_index holds {}, out of range for x with {} rows".format(
            int(src.max()), x.shape[0]))
    if isinstance(y, Tensor) and y.ndim == 1 and x.ndim > 1:  # one scalar per edge: Paddle reads it as [E, 1]
        y = y.unsqueeze(-1)
    if not isinstance(y, Tensor) or y.ndim < 1 or y.shape[0] != src.size:
        raise ValueError("send_ue_recv: y must have one row per edge ({}), got shape {}".format(
            src.size, getattr(y, "shape", y)))
    msg = _message("send_ue_recv", _C.Op("index_select", "axis")(x, src_index, 0), y, message_op)
    return _recv("send_ue_recv", x, msg, dst_index, reduce_op, out_size)


def _recv(fn, x, msg, dst_index, reduce_op, out_size):
    dst = dst_index.numpy()
    if isinstance(out_size, Tensor):
        out_size = out_size.item()
    if out_size is not None and not isinstance(out_size, numbers.Integral):
        raise TypeError("{}: out_size must be an int or None, got {!r}".format(fn, out_size))
    n = x.shape[0] if out_size is None or out_size <= 0 else int(out_size)
    if dst.size and dst.max() >= n:
        raise ValueError("{}: dst_index holds {}, out of range for an output of {} rows".format(fn, int(dst.max()), n))
    return _segment_pool(msg, dst_index, n, _POOL[reduce_op])


def send_u_recv(x, src_index, dst_index, reduce_op="sum", out_size=None, name=None):
    """Message passing: row x[src_index[k]] is sent to row dst_index[k] of the result and reduced there
    (reduce_op sum, mean, max or min; rows receiving nothing are 0). The result has out_size rows
    (None or <= 0: as many as x)."""
    if reduce_op not in _POOL:
        raise ValueError("send_u_recv: reduce_op must be one of sum, mean, max, min, got {!r}".format(reduce_op))
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise ValueError("send_u_recv: x must be a tensor with at least 1 dimension")
    src = _ids("send_u_recv", "src_index", src_index)
    _ids("send_u_recv", "dst_index", dst_index, src_index.shape[0])
    if src.size and src.max() >= x.shape[0]:
        raise ValueError("send_u_recv: src_index holds {}, out of range for x with {} rows".format(
            int(src.max()), x.shape[0]))
    gathered = _C.Op("index_select", "axis")(x, src_index, 0)
    return _recv("send_u_recv", x, gathered, dst_index, reduce_op, out_size)


from .sampling import reindex_graph, reindex_heter_graph, sample_neighbors, weighted_sample_neighbors  # noqa: E402
