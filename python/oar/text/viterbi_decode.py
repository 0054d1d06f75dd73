"""Viterbi decoding of a linear-chain CRF (Paddle's paddle.text.viterbi_decode), with oar ops: a max-plus
recursion over time, then a backtrace through the stored argmaxes."""
from .. import _C
from ..nn.layer.layers import Layer

__all__ = ["viterbi_decode", "ViterbiDecoder"]


def viterbi_decode(potentials, transition_params, lengths, include_bos_eos_tag=True, name=None):
    """The best tag path of each sequence. potentials [B, T, N] (emission scores), transition_params
    [N, N] (score of tag i followed by tag j), lengths [B]. With include_bos_eos_tag, tag N-1 is the
    start tag (transition_params[N-1, first tag] is added) and tag N-2 the stop tag
    (transition_params[N-2, last tag] is added), as Paddle computes it. Returns (scores [B], paths
    [B, T] int64, zero past each length)."""
    from ..tensor.creation import full
    from ..tensor.manipulation import stack, take_along_axis
    from ..tensor.search import where
    if potentials.ndim != 3:
        raise ValueError("viterbi_decode: potentials must be 3-D [batch, seq_len, num_tags], got shape {}".format(
            potentials.shape))
    b, t_max, n = potentials.shape
    if list(transition_params.shape) != [n, n]:
        raise ValueError("viterbi_decode: transition_params must have shape [{0}, {0}], got {1}".format(
            n, transition_params.shape))
    if list(lengths.shape) != [b] or lengths.dtype not in (_C.int32, _C.int64):
        raise ValueError("viterbi_decode: lengths must be an int Tensor of shape [{}], got {} {}".format(
            b, lengths.shape, lengths.dtype))
    if potentials.dtype != transition_params.dtype:
        raise TypeError("viterbi_decode: potentials ({}) and transition_params ({}) must have one dtype".format(
            potentials.dtype, transition_params.dtype))
    if t_max == 0:
        return full([b], 0.0, dtype=potentials.dtype), full([b, 0], 0, dtype="int64")
    lens = lengths.astype("int64").reshape([b, 1])
    trans = transition_params.unsqueeze(0)  # [1, N(from), N(to)]
    alpha = potentials[:, 0]
    if include_bos_eos_tag:
        alpha = alpha + transition_params[n - 1].unsqueeze(0)
    back = []
    for t in range(1, t_max):
        s = alpha.unsqueeze(2) + trans  # [B, from, to]
        best = s.max(axis=1)
        arg = s.argmax(axis=1)  # first maximum, like the reference kernel
        new = best + potentials[:, t]
        live = lens > t
        alpha = where(live, new, alpha)
        back.append(arg)
    final = alpha
    if include_bos_eos_tag:
        final = final + transition_params[n - 2].unsqueeze(0)
    scores = final.max(axis=1)
    cur = final.argmax(axis=1, keepdim=True)  # [B, 1]
    zero = full([b, 1], 0, dtype="int64")
    path = [None] * t_max
    for t in range(t_max - 1, -1, -1):
        path[t] = where(lens > t, cur, zero)
        if t >= 1:
            prev = take_along_axis(back[t - 1], cur, 1)
            cur = where(lens > t, prev, cur)
    return scores, stack(path, axis=1).reshape([b, t_max])


class ViterbiDecoder(Layer):
    """viterbi_decode with the transitions held by the layer."""

    def __init__(self, transitions, include_bos_eos_tag=True, name=None):
        super().__init__()
        self.transitions = transitions
        self.include_bos_eos_tag = include_bos_eos_tag
        self.name = name

    def forward(self, potentials, lengths):
        return viterbi_decode(potentials, self.transitions, lengths, self.include_bos_eos_tag, self.name)
