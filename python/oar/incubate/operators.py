"""paddle.incubate's softmax_mask_fuse pair: Paddle fuses the mask add (or the causal mask) into its
softmax kernel. softmax_mask_fuse runs the fused_softmax_mask op (Paddle's op of that name; float32 and
float64, other dtypes the add and softmax); the causal one is a where and oar's softmax op."""
from .. import _C
from ..nn import functional as F

__all__ = ["softmax_mask_fuse", "softmax_mask_fuse_upper_triangle"]

_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)
_fused_softmax_mask = _C.Op("fused_softmax_mask")


def _check(fn, name, t):
    if not isinstance(t, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(fn, name, type(t).__name__))
    if t.ndim != 4:
        raise ValueError("{}: {} must be 4-D [batch, heads, query_len, key_len], got shape {}".format(
            fn, name, t.shape))
    if t.dtype not in _FLOATS:
        raise TypeError("{}: {} must be a float tensor, got {}".format(fn, name, t.dtype.name))


def softmax_mask_fuse(x, mask, name=None):
    """softmax(x + mask) over the last axis; x [batch, heads, q, k], mask broadcastable to it (Paddle's
    [batch, 1, q, k]), additive (large negative values mask out)."""
    fn = "softmax_mask_fuse"
    _check(fn, "x", x)
    _check(fn, "mask", mask)
    mask = mask.astype(x.dtype)
    if x.dtype in (_C.float32, _C.float64):
        return _fused_softmax_mask(x, mask)
    return F.softmax(x + mask, axis=-1)


def softmax_mask_fuse_upper_triangle(x):
    """Causal softmax: softmax over the last axis with the entries above the diagonal (key j > query i)
    masked out (they come out 0)."""
    from ..tensor.creation import full, ones
    from ..tensor.manipulation import triu
    from ..tensor.search import where
    fn = "softmax_mask_fuse_upper_triangle"
    _check(fn, "x", x)
    q, k = x.shape[2], x.shape[3]
    upper = triu(ones([q, k], dtype="bool"), diagonal=1)
    masked = where(upper, full([1], float("-inf"), dtype=x.dtype), x)
    return F.softmax(masked, axis=-1)
