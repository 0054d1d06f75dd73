"""oar.incubate (Paddle's paddle.incubate): so far the segment reductions and graph_send_recv, which
Paddle 2.6 keeps here as well as in paddle.geometric."""
from ..geometric import segment_max, segment_mean, segment_min, segment_sum, send_u_recv

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "graph_send_recv"]


def graph_send_recv(x, src_index, dst_index, pool_type="sum", out_size=None, name=None):
    """geometric.send_u_recv under its older name (pool_type for reduce_op)."""
    return send_u_recv(x, src_index, dst_index, pool_type, out_size)
