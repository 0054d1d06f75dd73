"""Graph sampling and reindexing (Paddle's geometric.sample_neighbors, reindex_graph,
reindex_heter_graph, and incubate's graph_khop_sampler). These are integer bookkeeping on a CSC graph
done on the host (numpy), as data preparation; results come back as tensors on the input's place. The
random choices draw from oar's generator (oar.rand), so oar.seed makes them reproducible."""
import numbers

import numpy as np

from .. import _C
from .._C import Tensor

__all__ = ["sample_neighbors", "weighted_sample_neighbors", "reindex_graph", "reindex_heter_graph", "khop_sampler"]


def _ids(fn, name, t, dtypes=(_C.int32, _C.int64)):
    if not isinstance(t, Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, name, type(t).__name__))
    if t.dtype not in dtypes or t.ndim != 1:
        raise ValueError("{}: {} must be a 1-D {} tensor, got {} of shape {}".format(
            fn, name, " or ".join(d.name for d in dtypes), t.dtype.name, t.shape))
    return t.numpy()


def _like(host, ref, dtype=None):
    from ..tensor.creation import to_tensor
    return to_tensor(np.ascontiguousarray(host, dtype=dtype or ref.dtype.name), place=ref.place)


def _check_csc(fn, row, colptr):
    if colptr.size < 1 or colptr[0] != 0 or (np.diff(colptr) < 0).any() or colptr[-1] != row.size:
        raise ValueError("{}: colptr must start at 0, never decrease and end at len(row) = {}".format(fn, row.size))


def _sample(fn, row, colptr, nodes, sample_size, draw, weight=None):
    """(neighbors, counts, edge positions) of `nodes`: all neighbors when sample_size < 0 or the degree is
    at most sample_size, else sample_size of them without replacement, kept in their CSC order: the
    largest keys u (uniform) or u ** (1 / weight) (weighted reservoir sampling; weight 0 comes last)."""
    n = colptr.size - 1
    if nodes.size and (nodes.min() < 0 or nodes.max() >= n):
        bad = int(nodes.min()) if nodes.min() < 0 else int(nodes.max())
        raise ValueError("{}: input_nodes holds {}, out of range for a graph of {} nodes".format(fn, bad, n))
    starts, ends = colptr[nodes], colptr[nodes + 1]
    deg = ends - starts
    keys = draw(int(deg.sum())) if sample_size >= 0 and (deg > sample_size).any() else None
    pos, counts, off = [], [], 0
    for s, d in zip(starts.tolist(), deg.tolist()):
        p = np.arange(s, s + d)
        if keys is not None and d > sample_size:
            k = keys[off:off + d]
            if weight is not None:
                with np.errstate(divide="ignore"):
                    k = np.power(k, 1.0 / weight[p])
            p = np.sort(p[np.argsort(-k, kind="stable")[:sample_size]])
        off += d
        pos.append(p)
        counts.append(p.size)
    pos = np.concatenate(pos) if pos else np.zeros([0], np.int64)
    return row[pos], np.asarray(counts, np.int32), pos


def _draw(n):
    from ..tensor.random import rand
    return rand([max(n, 1)], dtype="float32").numpy()[:n]


def _size(fn, sample_size):
    if isinstance(sample_size, bool) or not isinstance(sample_size, numbers.Integral):
        raise TypeError("{}: sample_size must be an int, got {!r}".format(fn, sample_size))
    if sample_size == 0 or sample_size < -1:
        raise ValueError("{}: sample_size must be -1 (all) or positive, got {}".format(fn, sample_size))
    return int(sample_size)


def sample_neighbors(row, colptr, input_nodes, sample_size=-1, eids=None, return_eids=False, perm_buffer=None,
                     name=None):
    """Samples up to sample_size neighbors of each input node of a CSC graph (row, colptr), uniformly
    without replacement (-1: all of them). Returns (out_neighbors, out_count[, out_eids]); out_count is
    int32. perm_buffer (Paddle's GPU scratch buffer) is accepted and not needed."""
    fn = "sample_neighbors"
    r = _ids(fn, "row", row)
    c = _ids(fn, "colptr", colptr)
    nodes = _ids(fn, "input_nodes", input_nodes)
    size = _size(fn, sample_size)
    _check_csc(fn, r, c)
    if return_eids and eids is None:
        raise ValueError("{}: eids must be given when return_eids is True".format(fn))
    e = _ids(fn, "eids", eids) if eids is not None else None
    if e is not None and e.size != r.size:
        raise ValueError("{}: eids must have one entry per edge ({}), got {}".format(fn, r.size, e.size))
    nb, counts, pos = _sample(fn, r, c, nodes, size, _draw)
    out = (_like(nb, row), _like(counts, row, "int32"))
    return out + (_like(e[pos], eids),) if return_eids else out


def weighted_sample_neighbors(row, colptr, edge_weight, input_nodes, sample_size=-1, eids=None, return_eids=False,
                              name=None):
    """sample_neighbors with edge_weight (one non-negative float per edge): an edge is picked with
    probability proportional to its weight (without replacement; weight-0 edges only once the others
    are taken)."""
    fn = "weighted_sample_neighbors"
    r = _ids(fn, "row", row)
    c = _ids(fn, "colptr", colptr)
    nodes = _ids(fn, "input_nodes", input_nodes)
    w = _ids(fn, "edge_weight", edge_weight, (_C.float32, _C.float64)).astype(np.float64)
    size = _size(fn, sample_size)
    _check_csc(fn, r, c)
    if w.size != r.size:
        raise ValueError("{}: edge_weight must have one entry per edge ({}), got {}".format(fn, r.size, w.size))
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("{}: edge_weight must be finite and non-negative".format(fn))
    if return_eids and eids is None:
        raise ValueError("{}: eids must be given when return_eids is True".format(fn))
    e = _ids(fn, "eids", eids) if eids is not None else None
    nb, counts, pos = _sample(fn, r, c, nodes, size, _draw, w)
    out = (_like(nb, row), _like(counts, row, "int32"))
    return out + (_like(e[pos], eids),) if return_eids else out


def _reindex(fn, x, neighbor_list, count_list):
    xs = _ids(fn, "x", x)
    if np.unique(xs).size != xs.size:
        raise ValueError("{}: x must hold distinct node ids".format(fn))
    mapping = {int(v): i for i, v in enumerate(xs.tolist())}
    order = list(xs.tolist())
    srcs, dsts = [], []
    for k, (nb_t, cnt_t) in enumerate(zip(neighbor_list, count_list)):
        nb = _ids(fn, "neighbors", nb_t)
        cnt = _ids(fn, "count", cnt_t)
        if cnt.size != xs.size:
            raise ValueError("{}: count {} has {} entries, expected one per node of x ({})".format(
                fn, k, cnt.size, xs.size))
        if (cnt < 0).any() or int(cnt.sum()) != nb.size:
            raise ValueError("{}: count {} must be non-negative and sum to len(neighbors) = {}, got sum {}".format(
                fn, k, nb.size, int(cnt.sum())))
        for v in nb.tolist():
            if v not in mapping:
                mapping[v] = len(order)
                order.append(v)
        srcs.append(np.asarray([mapping[v] for v in nb.tolist()], np.int64))
        dsts.append(np.repeat(np.arange(xs.size), cnt))
    src = np.concatenate(srcs) if srcs else np.zeros([0], np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros([0], np.int64)
    return _like(src, x), _like(dst, x), _like(np.asarray(order), x)


def reindex_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """Renumbers a sampled subgraph: x (the center nodes) become 0..len(x)-1 and the other nodes in
    neighbors follow in order of first appearance. Returns (reindex_src, reindex_dst, out_nodes): the
    renumbered neighbors, each one's renumbered center (x[i] repeated count[i] times) and the original ids
    in their new order. The buffers (Paddle's GPU hash table) are accepted and not needed."""
    return _reindex("reindex_graph", x, [neighbors], [count])


def reindex_heter_graph(x, neighbors, count, value_buffer=None, index_buffer=None, name=None):
    """reindex_graph over several edge types: neighbors and count are lists (one entry per type); the
    numbering is shared and the outputs are the types' results concatenated."""
    if not isinstance(neighbors, (list, tuple)) or not isinstance(count, (list, tuple)) or len(neighbors) != len(count):
        raise TypeError("reindex_heter_graph: neighbors and count must be lists of the same length")
    return _reindex("reindex_heter_graph", x, list(neighbors), list(count))


def khop_sampler(row, colptr, input_nodes, sample_sizes, sorted_eids=None, return_eids=False, name=None):
    """Multi-hop sampling (Paddle's incubate.graph_khop_sampler): hop h samples sample_sizes[h] neighbors
    of the nodes first reached in hop h-1 (hop 0: input_nodes). Returns (edge_src, edge_dst, sample_index,
    reindex_nodes[, edge_eids]): edges as [E, 1] renumbered ids (neighbor, center), the original ids of the
    renumbered nodes (input nodes first) and the input nodes' new ids."""
    fn = "graph_khop_sampler"
    r = _ids(fn, "row", row)
    c = _ids(fn, "colptr", colptr)
    nodes = _ids(fn, "input_nodes", input_nodes)
    if not isinstance(sample_sizes, (list, tuple)) or not sample_sizes:
        raise TypeError("{}: sample_sizes must be a non-empty list of ints, got {!r}".format(fn, sample_sizes))
    sizes = [_size(fn, s) for s in sample_sizes]
    _check_csc(fn, r, c)
    if return_eids and sorted_eids is None:
        raise ValueError("{}: sorted_eids must be given when return_eids is True".format(fn))
    e = _ids(fn, "sorted_eids", sorted_eids) if sorted_eids is not None else None
    order, mapping = [], {}
    for v in nodes.tolist():
        if v not in mapping:
            mapping[v] = len(order)
            order.append(v)
    frontier = np.asarray(order, np.int64)
    srcs, dsts, poss = [], [], []
    for size in sizes:
        nb, counts, pos = _sample(fn, r, c, frontier, size, _draw)
        new = []
        for v in nb.tolist():
            if v not in mapping:
                mapping[v] = len(order)
                order.append(v)
                new.append(v)
        srcs.append([mapping[v] for v in nb.tolist()])
        dsts.append(np.repeat([mapping[v] for v in frontier.tolist()], counts))
        poss.append(pos)
        frontier = np.asarray(new, np.int64)
    src = np.concatenate([np.asarray(s, np.int64) for s in srcs]).reshape(-1, 1)
    dst = np.concatenate([np.asarray(d, np.int64) for d in dsts]).reshape(-1, 1)
    out = (_like(src, row), _like(dst, row), _like(np.asarray(order), row),
           _like(np.asarray([mapping[v] for v in nodes.tolist()]), row))
    if return_eids:
        out += (_like(e[np.concatenate(poss)].reshape(-1, 1), sorted_eids),)
    return out
