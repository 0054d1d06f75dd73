"""oar.incubate (Paddle's paddle.incubate): the segment reductions and graph_send_recv, which Paddle 2.6
keeps here as well as in paddle.geometric; the graph samplers under their older names; the optimizer
wrappers LookAhead and ModelAverage; softmax_mask_fuse; and incubate.nn's fused layers (docs/incubate.md)."""
from ..geometric import segment_max, segment_mean, segment_min, segment_sum, send_u_recv
from ..geometric import sampling as _sampling
from . import nn, optimizer  # noqa: F401
from .operators import softmax_mask_fuse, softmax_mask_fuse_upper_triangle  # noqa: F401
from .optimizer import LookAhead, ModelAverage  # noqa: F401

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "graph_send_recv", "graph_khop_sampler",
           "graph_sample_neighbors", "graph_reindex", "LookAhead", "ModelAverage", "softmax_mask_fuse",
           "softmax_mask_fuse_upper_triangle", "identity_loss"]


def graph_send_recv(x, src_index, dst_index, pool_type="sum", out_size=None, name=None):
    """geometric.send_u_recv under its older name (pool_type for reduce_op)."""
    return send_u_recv(x, src_index, dst_index, pool_type, out_size)


def graph_khop_sampler(row, colptr, input_nodes, sample_sizes, sorted_eids=None, return_eids=False, name=None):
    """Multi-hop neighbor sampling with renumbering; see oar.geometric.sampling.khop_sampler."""
    return _sampling.khop_sampler(row, colptr, input_nodes, sample_sizes, sorted_eids, return_eids)


def graph_sample_neighbors(row, colptr, input_nodes, eids=None, perm_buffer=None, sample_size=-1, return_eids=False,
                           flag_perm_buffer=False, name=None):
    """geometric.sample_neighbors under its older name and argument order."""
    return _sampling.sample_neighbors(row, colptr, input_nodes, sample_size, eids, return_eids, perm_buffer)


def graph_reindex(x, neighbors, count, value_buffer=None, index_buffer=None, flag_buffer_hashtable=False, name=None):
    """geometric.reindex_graph under its older name."""
    return _sampling.reindex_graph(x, neighbors, count, value_buffer, index_buffer)


def identity_loss(x, reduction="none"):
    """Marks x as the loss (Paddle's IPU helper); on oar it is the reduction itself: reduction "sum"
    (or 0), "mean" (1) or "none" (2)."""
    codes = {"sum": 0, "mean": 1, "none": 2}
    code = codes.get(reduction.lower()) if isinstance(reduction, str) else reduction
    if isinstance(code, bool) or code not in (0, 1, 2):
        raise ValueError("identity_loss: reduction must be 'sum', 'mean', 'none' or 0, 1, 2, got {!r}".format(
            reduction))
    return x.sum() if code == 0 else x.mean() if code == 1 else x
