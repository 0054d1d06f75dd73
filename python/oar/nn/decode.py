"""Sequence decoding (Paddle's paddle.nn.decode): Decoder, BeamSearchDecoder and dynamic_decode, plus
F.gather_tree. Written with oar ops in eager mode (the loop stops when every beam has finished, a host
decision once per step, as Paddle's dygraph decode)."""
import collections

from .. import _C

__all__ = ["Decoder", "BeamSearchDecoder", "dynamic_decode", "gather_tree"]

_KINF = 1e9


def _map(fn, *structs):
    """fn over the leaves (tensors) of equally nested lists/tuples/namedtuples/dicts."""
    s = structs[0]
    if isinstance(s, dict):
        return {k: _map(fn, *[t[k] for t in structs]) for k in s}
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*[_map(fn, *parts) for parts in zip(*structs)])
    if isinstance(s, (list, tuple)):
        return type(s)(_map(fn, *parts) for parts in zip(*structs))
    return fn(*structs)


def _leaves(s):
    if isinstance(s, dict):
        return [x for k in s for x in _leaves(s[k])]
    if isinstance(s, (list, tuple)):
        return [x for v in s for x in _leaves(v)]
    return [s]


def gather_tree(ids, parents):
    """Backtraces beam search: ids and parents are [T, batch, beam]; out[t] follows the parent chain
    from the last step (Paddle's gather_tree)."""
    from ..tensor.manipulation import stack, take_along_axis
    if list(ids.shape) != list(parents.shape) or ids.ndim != 3:
        raise ValueError("gather_tree: ids and parents must have the same 3-D shape [T, batch, beam], got {} and "
                         "{}".format(ids.shape, parents.shape))
    if ids.dtype not in (_C.int32, _C.int64) or parents.dtype != ids.dtype:
        raise TypeError("gather_tree: ids and parents must both be int32 or int64, got {} and {}".format(
            ids.dtype, parents.dtype))
    t_max, batch, beam = ids.shape
    if t_max == 0:
        return ids
    from ..tensor.creation import arange
    idx = arange(0, beam, dtype=ids.dtype).reshape([1, beam]).expand([batch, beam])
    out = []
    for t in range(t_max - 1, -1, -1):
        out.append(take_along_axis(ids[t], idx, 1))
        idx = take_along_axis(parents[t], idx, 1)
    return stack(out[::-1], axis=0)


class Decoder:
    """Base class of the decoders dynamic_decode drives: initialize, step, finalize."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell (an RNN cell or any callable (inputs, states) -> (outputs, states)):
    keeps the beam_size best partial sequences of each batch item by summed log probability; a beam
    that emitted end_token keeps emitting it at no cost."""

    class OutputWrapper(collections.namedtuple("OutputWrapper", ("scores", "predicted_ids", "parent_ids"))):
        pass

    class StateWrapper(collections.namedtuple("StateWrapper", ("cell_states", "log_probs", "finished", "lengths"))):
        pass

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        if not isinstance(beam_size, int) or beam_size < 1:
            raise ValueError("BeamSearchDecoder: beam_size must be a positive int, got {!r}".format(beam_size))
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """[batch, ...] -> [batch * beam_size, ...], each item repeated beam_size times in a row."""
        x = x.unsqueeze(1)
        return x.expand([x.shape[0], beam_size] + list(x.shape[2:])).reshape([-1] + list(x.shape[2:]))

    def _split_batch_beams(self, x):
        return x.reshape([-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return x.reshape([-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        x = x.unsqueeze(1)
        return x.expand([x.shape[0], self.beam_size] + list(x.shape[2:]))

    def _gather(self, x, indices):
        """x [batch, beam, ...] picked along the beam axis by indices [batch, beam]."""
        from ..tensor.manipulation import take_along_axis
        idx = indices.reshape(list(indices.shape) + [1] * (x.ndim - 2))
        idx = idx.expand(list(indices.shape) + list(x.shape[2:]))
        return take_along_axis(x, idx, 1)

    def initialize(self, initial_cell_states):
        from ..tensor.creation import full, to_tensor
        state = _leaves(initial_cell_states)[0]
        self.batch_size = state.shape[0]
        cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        inputs = full([self.batch_size, self.beam_size], self.start_token, dtype="int64")
        dt = state.dtype if state.dtype in (_C.float32, _C.float64) else _C.float32
        log_probs = to_tensor([[0.0] + [-_KINF] * (self.beam_size - 1)], dtype=dt).expand(
            [self.batch_size, self.beam_size])
        finished = full([self.batch_size, self.beam_size], False, dtype="bool")
        lengths = full([self.batch_size, self.beam_size], 0, dtype="int64")
        if self.embedding_fn:
            inputs = self.embedding_fn(inputs)
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        from ..tensor.creation import to_tensor
        from ..tensor.search import topk
        from . import functional as F
        vocab = logits.shape[-1]
        if not 0 <= self.end_token < vocab:
            raise ValueError("BeamSearchDecoder: end_token {} is outside the vocabulary [0, {})".format(
                self.end_token, vocab))
        step = F.log_softmax(logits, axis=-1)
        noend = [-_KINF] * vocab
        noend[self.end_token] = 0.0
        noend = to_tensor(noend, dtype=step.dtype)
        fin = beam_state.finished.astype(step.dtype).unsqueeze(2)
        # finished beams may only continue with end_token, at no cost
        step = fin * noend - step * (fin - 1)
        log_probs = step + beam_state.log_probs.astype(step.dtype).unsqueeze(2)
        scores = log_probs.reshape([-1, self.beam_size * vocab])
        top_scores, top_idx = topk(scores, self.beam_size)
        beam_idx = top_idx // vocab
        token_idx = top_idx % vocab
        next_cell_states = _map(lambda x: self._gather(x, beam_idx), next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_idx)
        next_lengths = self._gather(beam_state.lengths, beam_idx)
        next_lengths = next_lengths + next_finished.logical_not().astype(next_lengths.dtype)
        next_finished = next_finished.logical_or(token_idx == self.end_token)
        return (self.OutputWrapper(top_scores, token_idx, beam_idx),
                self.StateWrapper(next_cell_states, top_scores, next_finished, next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split_batch_beams, cell_outputs)
        next_cell_states = _map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        out, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        ids = out.predicted_ids
        ids.stop_gradient = True
        next_inputs = self.embedding_fn(ids) if self.embedding_fn else ids
        return out, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        return gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self):
        return True


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Runs decoder step by step until every sequence has finished (or after max_step_num + 1 steps);
    returns (outputs, final_states[, sequence_lengths]), outputs batch-major unless output_time_major."""
    from ..tensor.manipulation import stack
    if max_step_num is not None and (not isinstance(max_step_num, int) or max_step_num < 0):
        raise ValueError("dynamic_decode: max_step_num must be a non-negative int, got {!r}".format(max_step_num))
    inputs, states, finished = decoder.initialize(inits)
    lengths = finished.astype("int64") * 0
    steps = []
    t = 0
    while not bool(finished.all()):
        out, next_states, next_inputs, next_finished = decoder.step(t, inputs, states, **kwargs)
        if not decoder.tracks_own_finished:
            next_finished = next_finished.logical_or(finished)
            next_lengths = lengths + finished.logical_not().astype("int64")
            if impute_finished:  # finished items keep their states
                keep = finished

                def copy(old, new):
                    m = keep.reshape(list(keep.shape) + [1] * (old.ndim - keep.ndim)).astype(new.dtype) \
                        if old.dtype != _C.bool else keep.reshape(list(keep.shape) + [1] * (old.ndim - keep.ndim))
                    if old.dtype == _C.bool:
                        return old.logical_and(m).logical_or(new.logical_and(m.logical_not()))
                    return old * m + new * (1 - m)
                next_states = _map(copy, states, next_states)
        else:
            next_lengths = getattr(next_states, "lengths", lengths)
        steps.append(out)
        inputs, states, finished, lengths = next_inputs, next_states, next_finished, next_lengths
        t += 1
        if max_step_num is not None and t > max_step_num:
            break
    if not steps:
        raise ValueError("dynamic_decode: every sequence was finished before the first step")
    outputs = _map(lambda *xs: stack(list(xs), axis=0), *steps)
    try:
        outputs, states = decoder.finalize(outputs, states, lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        outputs = _map(lambda x: x.transpose([1, 0] + list(range(2, x.ndim))), outputs)
    return (outputs, states, lengths) if return_length else (outputs, states)
