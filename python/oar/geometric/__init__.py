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


def send_u_recv(x, src_index, dst_index, reduce_op="sum", out_size=None, name=None):
    """Message passing: row x[src_index[k]] is sent to row dst_index[k] of the result and reduced there
    (reduce_op sum, mean, max or min; rows receiving nothing are 0). The result has out_size rows
    (None or <= 0: as many as x)."""
    if reduce_op not in _POOL:
        raise ValueError("send_u_recv: reduce_op must be one of sum, mean, max, min, got {!r}".format(reduce_op))
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise ValueError("send_u_recv: x must be a tensor with at least 1 dimension")
    src = _ids("send_u_recv", "src_index", src_index)
    dst = _ids("send_u_recv", "dst_index", dst_index, src_index.shape[0])
    if src.size and src.max() >= x.shape[0]:
        raise ValueError("send_u_recv: src_index holds {}, out of range for x with {} rows".format(
            int(src.max()), x.shape[0]))
    if isinstance(out_size, Tensor):
        out_size = out_size.item()
    if out_size is not None and not isinstance(out_size, numbers.Integral):
        raise TypeError("send_u_recv: out_size must be an int or None, got {!r}".format(out_size))
    n = x.shape[0] if out_size is None or out_size <= 0 else int(out_size)
    if dst.size and dst.max() >= n:
        raise ValueError("send_u_recv: dst_index holds {}, out of range for an output of {} rows".format(
            int(dst.max()), n))
    gathered = _C.Op("index_select", "axis")(x, src_index, 0)
    return _segment_pool(gathered, dst_index, n, _POOL[reduce_op])


from .message_passing import send_ue_recv, send_uv  # noqa: E402
from .sampling import reindex_graph, reindex_heter_graph, sample_neighbors, weighted_sample_neighbors  # noqa: E402
