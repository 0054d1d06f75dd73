"""oar.geometric message passing (send_ue_recv, send_uv), sampling and reindexing against numpy references
(and values printed by Paddle 2.6.2 for the same inputs), gradients by finite differences, bad input."""
import numpy as np
import pytest

import oar
import oar.geometric as G

from _util import check, check_grad

_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def _reduce_ref(msg, dst, n, reduce_op):
    out = np.zeros((n,) + msg.shape[1:], msg.dtype)
    for r in range(n):
        rows = msg[dst == r]
        if rows.shape[0]:
            out[r] = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[reduce_op](rows, axis=0)
    return out


def _graph():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    src = np.array([0, 1, 2, 0, 4, 4, 3], np.int64)
    dst = np.array([1, 2, 1, 0, 0, 3, 3], np.int64)
    return rng, x, src, dst


@pytest.mark.parametrize("message_op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("reduce_op", ["sum", "mean", "max", "min"])
def test_send_ue_recv_matches_numpy(message_op, reduce_op):
    rng, x, src, dst = _graph()
    y = rng.uniform(0.5, 2.0, (7, 3))
    out = G.send_ue_recv(oar.to_tensor(x), oar.to_tensor(y), oar.to_tensor(src), oar.to_tensor(dst),
                         message_op, reduce_op)
    check(out, _reduce_ref(_OPS[message_op](x[src], y), dst, 5, reduce_op), rtol=1e-12, atol=1e-12)


def test_send_ue_recv_paddle_values_and_broadcast():
    # the example run through Paddle 2.6.2: a 1-D y is one scalar per edge
    x = oar.to_tensor([[0, 2, 3], [1, 4, 5], [2, 6, 7]], dtype="float32")
    s, d = oar.to_tensor([0, 1, 2, 0]), oar.to_tensor([1, 2, 1, 0])
    check(G.send_ue_recv(x, oar.ones([4]), s, d, "add", "sum"), [[1, 3, 4], [4, 10, 12], [2, 5, 6]])
    check(G.send_ue_recv(x, oar.ones([4, 3]), s, d, "mul", "mean", out_size=4),
          [[0, 2, 3], [1, 4, 5], [1, 4, 5], [0, 0, 0]])
    check(G.send_ue_recv(x, oar.ones([4, 1]), s, d, "sub", "max"), [[-1, 1, 2], [1, 5, 6], [0, 3, 4]])


def test_send_uv_matches_numpy():
    rng, x, src, dst = _graph()
    y = rng.uniform(0.5, 2.0, (5, 3))
    for op, f in _OPS.items():
        out = G.send_uv(oar.to_tensor(x), oar.to_tensor(y), oar.to_tensor(src), oar.to_tensor(dst), op)
        check(out, f(x[src], y[dst]), rtol=1e-12, atol=1e-12)


def test_message_passing_gradients():
    rng, x, src, dst = _graph()
    y = rng.uniform(0.5, 2.0, (7, 3))
    s, d = oar.to_tensor(src), oar.to_tensor(dst)
    check_grad(lambda a, b: G.send_ue_recv(a, b, s, d, "mul", "sum"), [x, y])
    check_grad(lambda a, b: G.send_ue_recv(a, b, s, d, "add", "mean", out_size=6), [x, y])
    check_grad(lambda a, b: G.send_uv(a, b, s, d, "div"), [x, rng.uniform(0.5, 2.0, (5, 3))])


def test_message_passing_bad_input():
    x = oar.ones([3, 2])
    s, d = oar.to_tensor([0, 1]), oar.to_tensor([1, 2])
    with pytest.raises(ValueError, match="send_ue_recv: message_op"):
        G.send_ue_recv(x, oar.ones([2, 2]), s, d, "pow")
    with pytest.raises(ValueError, match="send_ue_recv: reduce_op"):
        G.send_ue_recv(x, oar.ones([2, 2]), s, d, "add", "prod")
    with pytest.raises(ValueError, match="send_ue_recv: y must have one row per edge"):
        G.send_ue_recv(x, oar.ones([3, 2]), s, d)
    with pytest.raises(ValueError, match="send_ue_recv: src_index holds 3"):
        G.send_ue_recv(x, oar.ones([2, 2]), oar.to_tensor([0, 3]), d)
    with pytest.raises(ValueError, match="send_ue_recv: dst_index holds 2"):
        G.send_ue_recv(x, oar.ones([2, 2]), s, d, out_size=2)
    with pytest.raises(ValueError, match="send_uv: an index .2. is out of range for y"):
        G.send_uv(x, oar.ones([2, 2]), s, d)
    with pytest.raises(ValueError, match="send_uv: dst_index has 1 elements"):
        G.send_uv(x, x, s, oar.to_tensor([1]))
    with pytest.raises(ValueError, match="send_uv: src_index must be a 1-D int32 or int64"):
        G.send_uv(x, x, oar.to_tensor([0.0, 1.0]), d)


# the CSC graph of Paddle's sample_neighbors example
_ROW = [3, 7, 0, 9, 1, 4, 2, 9, 3, 9, 1, 9, 7]
_COLPTR = [0, 2, 4, 5, 6, 7, 9, 11, 11, 13, 13]


def _csc():
    return oar.to_tensor(_ROW, dtype="int64"), oar.to_tensor(_COLPTR, dtype="int64")


def test_sample_neighbors_all_and_paddle_values():
    row, colptr = _csc()
    nodes = oar.to_tensor([0, 8, 1, 2], dtype="int64")
    nb, cnt = G.sample_neighbors(row, colptr, nodes)  # -1: every neighbor, in CSC order
    check(nb, [3, 7, 9, 7, 0, 9, 1])
    check(cnt, np.array([2, 2, 2, 1], np.int32), dtype=oar.int32)
    # sample_size 2 keeps every neighbor here (no degree above 2): Paddle's values, eids included
    nb, cnt, eids = G.sample_neighbors(row, colptr, nodes, sample_size=2, eids=oar.arange(13), return_eids=True)
    check(nb, [3, 7, 9, 7, 0, 9, 1])
    check(eids, [0, 1, 11, 12, 2, 3, 4])


def test_sample_neighbors_samples_without_replacement():
    rng = np.random.default_rng(3)
    n = 6
    adj = [rng.choice(20, size=rng.integers(0, 9), replace=False) for _ in range(n)]
    colptr = np.concatenate([[0], np.cumsum([len(a) for a in adj])])
    row = np.concatenate(adj).astype(np.int64)
    eids = np.arange(row.size, dtype=np.int64) + 100
    oar.seed(5)
    seen = set()
    for _ in range(20):
        nb, cnt, e = G.sample_neighbors(oar.to_tensor(row), oar.to_tensor(colptr), oar.to_tensor(np.arange(n)),
                                        sample_size=3, eids=oar.to_tensor(eids), return_eids=True)
        nb, cnt, e = nb.numpy(), cnt.numpy(), e.numpy()
        np.testing.assert_array_equal(cnt, [min(len(a), 3) for a in adj])
        off = 0
        for i, c in enumerate(cnt):
            part = nb[off:off + c]
            assert len(set(part.tolist())) == c and set(part.tolist()) <= set(adj[i].tolist())
            np.testing.assert_array_equal(row[e[off:off + c] - 100], part)  # eids point at the sampled edges
            off += c
        seen.add(tuple(nb.tolist()))
    assert len(seen) > 1  # the draws vary
    oar.seed(11)
    a = G.sample_neighbors(oar.to_tensor(row), oar.to_tensor(colptr), oar.to_tensor(np.arange(n)), 2)[0].numpy()
    oar.seed(11)
    b = G.sample_neighbors(oar.to_tensor(row), oar.to_tensor(colptr), oar.to_tensor(np.arange(n)), 2)[0].numpy()
    np.testing.assert_array_equal(a, b)  # oar.seed makes them reproducible


def test_reindex_graph_paddle_values():
    x = oar.to_tensor([0, 1, 2], dtype="int64")
    nb = oar.to_tensor([8, 9, 0, 4, 7, 6, 7], dtype="int64")
    cnt = oar.to_tensor([2, 3, 2], dtype="int32")
    src, dst, nodes = G.reindex_graph(x, nb, cnt)
    check(src, [3, 4, 0, 5, 6, 7, 6])
    check(dst, [0, 0, 1, 1, 1, 2, 2])
    check(nodes, [0, 1, 2, 8, 9, 4, 7, 6])
    nb2 = oar.to_tensor([0, 2, 3, 5, 1], dtype="int64")
    cnt2 = oar.to_tensor([1, 3, 1], dtype="int32")
    src, dst, nodes = G.reindex_heter_graph(x, [nb, nb2], [cnt, cnt2])
    check(src, [3, 4, 0, 5, 6, 7, 6, 0, 2, 8, 9, 1])
    check(dst, [0, 0, 1, 1, 1, 2, 2, 0, 1, 1, 1, 2])
    check(nodes, [0, 1, 2, 8, 9, 4, 7, 6, 3, 5])
    # the renumbering is consistent: out_nodes[src] are the neighbors, out_nodes[dst] their centers
    n = nodes.numpy()
    np.testing.assert_array_equal(n[src.numpy()], np.concatenate([nb.numpy(), nb2.numpy()]))


def test_sampling_bad_input():
    row, colptr = _csc()
    with pytest.raises(ValueError, match="sample_neighbors: input_nodes holds 10"):
        G.sample_neighbors(row, colptr, oar.to_tensor([10]))
    with pytest.raises(ValueError, match="sample_neighbors: sample_size must be -1"):
        G.sample_neighbors(row, colptr, oar.to_tensor([0]), sample_size=0)
    with pytest.raises(ValueError, match="sample_neighbors: eids must be given"):
        G.sample_neighbors(row, colptr, oar.to_tensor([0]), return_eids=True)
    with pytest.raises(ValueError, match="sample_neighbors: colptr"):
        G.sample_neighbors(row, oar.to_tensor([0, 2, 1]), oar.to_tensor([0]))
    with pytest.raises(ValueError, match="reindex_graph: count 0 must be non-negative and sum"):
        G.reindex_graph(oar.to_tensor([0, 1]), oar.to_tensor([3, 4]), oar.to_tensor([1, 2], dtype="int32"))
    with pytest.raises(ValueError, match="reindex_graph: x must hold distinct"):
        G.reindex_graph(oar.to_tensor([0, 0]), oar.to_tensor([3]), oar.to_tensor([1, 0], dtype="int32"))


def test_weighted_sample_neighbors():
    row, colptr = _csc()
    nodes = oar.to_tensor([0, 8, 1, 2], dtype="int64")
    w = np.ones(13, np.float32)
    w[1] = 0.0  # node 0's edge to 7 is never picked while another is left (Paddle gives [3, 9, 0, 1] too)
    for s in range(5):
        oar.seed(s)
        nb, cnt = G.weighted_sample_neighbors(row, colptr, oar.to_tensor(w), nodes, sample_size=1)
        assert nb.numpy()[0] == 3
        check(cnt, np.array([1, 1, 1, 1], np.int32))
    # the picks follow the weights: node with edges weighted 1 and 9 takes the heavy one ~90% of the time
    r, c = oar.to_tensor([5, 6], dtype="int64"), oar.to_tensor([0, 2], dtype="int64")
    ew = oar.to_tensor([1.0, 9.0])
    oar.seed(1)
    picks = [G.weighted_sample_neighbors(r, c, ew, oar.to_tensor([0]), 1)[0].item() for _ in range(400)]
    assert 0.84 < np.mean(np.array(picks) == 6) < 0.96
    with pytest.raises(ValueError, match="weighted_sample_neighbors: edge_weight must be finite and non-negative"):
        G.weighted_sample_neighbors(r, c, oar.to_tensor([1.0, -1.0]), oar.to_tensor([0]), 1)
    with pytest.raises(ValueError, match="weighted_sample_neighbors: edge_weight must have one entry per edge"):
        G.weighted_sample_neighbors(r, c, oar.to_tensor([1.0]), oar.to_tensor([0]), 1)
