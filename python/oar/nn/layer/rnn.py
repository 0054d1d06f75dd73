"""Recurrent layers (Paddle's paddle.nn rnn family): the cells SimpleRNNCell, LSTMCell, GRUCell, the
wrappers RNN and BiRNN that run a cell over a sequence, and the multi-layer networks SimpleRNN, LSTM, GRU.

SimpleRNN, LSTM and GRU run the fused op `rnn` (oneDNN's RNN primitives on the CPU, Paddle's op name and
weight layout) when their configuration allows: built-in cells without hooks, no proj_size, float32
input on the CPU. Otherwise, and for the RNN/BiRNN wrappers, everything is composed from tensor
ops: the time loop is Python; for the built-in cells the input projection x @ W_ih^T (+ biases) is
computed for the whole sequence in one matmul before the loop, which then only does the hidden
projection and the gate arithmetic.
"""
import math

from ... import _C
from ..._C import Tensor
from ... import tensor as T
from ...autograd import PyLayer
from .. import functional as F
from .. import initializer as I
from .container import LayerList
from .layers import Layer

__all__ = ["RNNCellBase", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "BiRNN", "SimpleRNN", "LSTM", "GRU"]


# ---- nested structures of tensors (a state is a tensor or a tuple/list of them) ----
def _flatten(x):
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flatten(item)]
    return [x]


def _map(fn, *xs):
    """fn applied leaf-wise to structures of the same shape (tuples/lists nest; anything else is a leaf)."""
    first = xs[0]
    if isinstance(first, (list, tuple)):
        mapped = [_map(fn, *items) for items in zip(*xs)]
        if hasattr(first, "_fields"):  # namedtuple
            return type(first)(*mapped)
        return type(first)(mapped)
    return fn(*xs)


def _is_shape(s):
    return isinstance(s, (list, tuple)) and all(isinstance(d, int) for d in s)


def _map_shapes(fn, shapes):
    if _is_shape(shapes):
        return fn(shapes)
    return type(shapes)(_map_shapes(fn, s) for s in shapes)


def _cell_parameter(layer, shape, attr, is_bias, std):
    # Paddle: attr False still creates the tensor (1 for weights, 0 for biases) but freezes it, so the
    # cell's formula and parameter list never change.
    if attr is not False:
        return layer.create_parameter(shape, attr, is_bias=is_bias, default_initializer=I.Uniform(-std, std))
    p = layer.create_parameter(shape, None, is_bias=is_bias, default_initializer=I.Constant(0.0 if is_bias else 1.0))
    p.stop_gradient = True
    return p


# Slicing a tensor several ways under autograd gives every slice a full-size zero-padded gradient to
# scatter and accumulate; these split ops instead join their gradients back in one concat/stack. For a
# sequence that is the difference between O(T) and O(T^2) memory traffic, and for the gate split of a
# step it made the backward 4x cheaper.
class _UnbindSteps(PyLayer):
    """The time steps x[0], ..., x[T-1] of a [time, ...] tensor; backward stacks the step gradients."""

    @staticmethod
    def forward(ctx, x):
        return tuple(T.unbind(x, 0))

    @staticmethod
    def backward(ctx, *grads):
        return T.stack(list(grads), axis=0)


class _SplitLast(PyLayer):
    """x split into n equal parts along the last axis; backward concatenates the part gradients."""

    @staticmethod
    def forward(ctx, x, n):
        return tuple(T.split(x, n, axis=-1))

    @staticmethod
    def backward(ctx, *grads):
        return T.concat(list(grads), axis=-1)


class RNNCellBase(Layer):
    """Base class of recurrent cells: forward(inputs, states) -> (outputs, new_states) for one time step.

    Subclasses define `state_shape` (a shape without the batch dimension, or a nested structure of
    them) so get_initial_states can build zero states."""

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0.0, batch_dim_idx=0):
        """States filled with `init_value`, of `shape` (default: self.state_shape) with the batch size of
        batch_ref.shape[batch_dim_idx] in front (a leading -1 in a shape stands for it)."""
        ref = _flatten(batch_ref)[0]
        batch = ref.shape[batch_dim_idx]
        shapes = self.state_shape if shape is None else shape
        if dtype is None:
            try:
                dtype = self.state_dtype
            except NotImplementedError:
                # Paddle falls back to the global default dtype; the reference's floating dtype is what
                # the cell computes in, so use it when there is one.
                dtype = ref.dtype if ref.dtype.is_floating_point else None
        dtypes = _flatten(dtype)
        leaves = []

        def make(s):
            s = list(s)
            if s and s[0] == -1:
                s = s[1:]
            dt = dtypes[len(leaves)] if len(dtypes) > 1 else dtypes[0]
            t = T.full([batch] + s, init_value, dtype=dt)
            leaves.append(t)
            return t

        return _map_shapes(make, shapes)

    @property
    def state_shape(self):
        raise NotImplementedError("'{}' does not define state_shape".format(type(self).__name__))

    @property
    def state_dtype(self):
        raise NotImplementedError("'{}' does not define state_dtype".format(type(self).__name__))


class _BuiltinCell(RNNCellBase):
    """Shared parts of the three built-in cells: input checks and the split of one step into the input
    projection (done for a whole sequence at once by RNN) and the recurrent step."""

    _gates = 1

    def _make_parameters(self, input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                         bias_hh_attr, hh_cols=None):
        name = type(self).__name__
        for arg, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError("{}: {} must be an int, got {!r}".format(name, arg, v))
        if hidden_size <= 0:
            raise ValueError("{}: hidden_size must be greater than 0, got {}".format(name, hidden_size))
        if input_size <= 0:
            raise ValueError("{}: input_size must be greater than 0, got {}".format(name, input_size))
        g = self._gates * hidden_size
        std = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = _cell_parameter(self, [g, input_size], weight_ih_attr, False, std)
        self.weight_hh = _cell_parameter(self, [g, hh_cols or hidden_size], weight_hh_attr, False, std)
        self.bias_ih = _cell_parameter(self, [g], bias_ih_attr, True, std)
        self.bias_hh = _cell_parameter(self, [g], bias_hh_attr, True, std)
        self.input_size = input_size
        self.hidden_size = hidden_size

    def _check_inputs(self, inputs, what="inputs"):
        if not isinstance(inputs, Tensor):
            raise TypeError("{}: {} must be a Tensor, got {}".format(type(self).__name__, what,
                                                                     type(inputs).__name__))
        if inputs.ndim < 1 or inputs.shape[-1] != self.input_size:
            raise ValueError("{}: expected {} whose last dimension is input_size={}, got shape {}".format(
                type(self).__name__, what, self.input_size, inputs.shape))

    # Biases folded into the input projection: b_ih always; b_hh too where the formula allows it.
    _fold_bias_hh = True

    def _project_inputs(self, x):
        """x @ W_ih^T + b_ih (+ b_hh), for any number of leading dimensions."""
        y = T.matmul(x, self.weight_ih, transpose_y=True)
        if self.bias_ih is not None:
            y = y + self.bias_ih
        if self._fold_bias_hh and self.bias_hh is not None:
            y = y + self.bias_hh
        return y

    def _hidden_projection(self, h):
        y = T.matmul(h, self.weight_hh, transpose_y=True)
        if not self._fold_bias_hh and self.bias_hh is not None:
            y = y + self.bias_hh
        return y

    def forward(self, inputs, states=None):
        self._check_inputs(inputs)
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        return self._step(self._project_inputs(inputs), states)

    def extra_repr(self):
        return "{}, {}".format(self.input_size, self.hidden_size)


class SimpleRNNCell(_BuiltinCell):
    """Elman cell: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), output y_t = h_t.
    activation is "tanh" or "relu"."""

    _gates = 1

    def __init__(self, input_size, hidden_size, activation="tanh", weight_ih_attr=None, weight_hh_attr=None,
                 bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__()
        if activation not in ("tanh", "relu"):
            raise ValueError("SimpleRNNCell: activation must be 'tanh' or 'relu', got {!r}".format(activation))
        self._make_parameters(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                              bias_hh_attr)
        self.activation = activation
        self._activation_fn = T.tanh if activation == "tanh" else F.relu

    def _step(self, xp, h):
        h = self._activation_fn(xp + self._hidden_projection(h))
        return h, h

    @property
    def state_shape(self):
        return (self.hidden_size,)

    def extra_repr(self):
        s = "{}, {}".format(self.input_size, self.hidden_size)
        if self.activation != "tanh":
            s += ", activation={}".format(self.activation)
        return s


class LSTMCell(_BuiltinCell):
    """LSTM cell, gates in Paddle's order i, f, g (cell candidate), o:
        [i, f, g, o] = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh
        c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g),  h_t = sigmoid(o) * tanh(c_t)
    With proj_size > 0, h_t = (sigmoid(o) * tanh(c_t)) @ weight_ho ([hidden_size, proj_size]).
    States are (h, c); the output is h."""

    _gates = 4

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, proj_size=0, name=None):
        super().__init__()
        if not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("LSTMCell: proj_size must be a non-negative int, got {!r}".format(proj_size))
        if proj_size and isinstance(hidden_size, int) and proj_size >= hidden_size:
            raise ValueError("LSTMCell: proj_size ({}) must be smaller than hidden_size ({})".format(
                proj_size, hidden_size))
        self._make_parameters(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                              bias_hh_attr, hh_cols=proj_size or None)
        self.proj_size = proj_size
        if proj_size > 0:
            std = 1.0 / math.sqrt(hidden_size)
            self.weight_ho = _cell_parameter(self, [hidden_size, proj_size], weight_hh_attr, False, std)

    def _step(self, xp, states):
        h, c = states
        gates = xp + self._hidden_projection(h)
        i, f, g, o = _SplitLast.apply(gates, 4)
        c = F.sigmoid(f) * c + F.sigmoid(i) * T.tanh(g)
        h = F.sigmoid(o) * T.tanh(c)
        if self.proj_size > 0:
            h = T.matmul(h, self.weight_ho)
        return h, (h, c)

    @property
    def state_shape(self):
        # (h, c): h has proj_size columns when projecting. (Paddle 3.3 lists them the other way round,
        # which only works without projection.)
        return ((self.proj_size or self.hidden_size,), (self.hidden_size,))


class GRUCell(_BuiltinCell):
    """GRU cell, Paddle's formula (gates r, z, c; the reset gate applies after the hidden matmul):
        [x_r, x_z, x_c] = x_t W_ih^T + b_ih,  [h_r, h_z, h_c] = h_{t-1} W_hh^T + b_hh
        r = sigmoid(x_r + h_r),  z = sigmoid(x_z + h_z),  c = tanh(x_c + r * h_c)
        h_t = z * h_{t-1} + (1 - z) * c;  output y_t = h_t."""

    _gates = 3
    _fold_bias_hh = False  # b_hc sits inside r * (...), so it cannot join the input projection

    def __init__(self, input_size, hidden_size, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None,
                 bias_hh_attr=None, name=None):
        super().__init__()
        self._make_parameters(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr,
                              bias_hh_attr)

    def _step(self, xp, h):
        x_r, x_z, x_c = _SplitLast.apply(xp, 3)
        h_r, h_z, h_c = _SplitLast.apply(self._hidden_projection(h), 3)
        r = F.sigmoid(x_r + h_r)
        z = F.sigmoid(x_z + h_z)
        c = T.tanh(x_c + r * h_c)
        h = (h - c) * z + c
        return h, h

    @property
    def state_shape(self):
        return (self.hidden_size,)


_rnn_op = _C.Op("rnn", "mode", "hidden_size", "num_layers", "is_bidirec", "dropout_prob", "is_test")
_MAX_CELLS_PER_OP = 7  # the op's limit on (layer, direction) pairs (framework/src/ops_rnn.cc)


def _uses_builtin_step(cell, kwargs):
    # The split input projection is only valid when the cell's forward is the built-in one and nothing
    # (hooks, extra arguments) would observe the per-step call.
    return (isinstance(cell, _BuiltinCell) and type(cell).forward is _BuiltinCell.forward and not kwargs
            and not cell._forward_pre_hooks and not cell._forward_post_hooks)


def _step_masks(sequence_length, steps, dtype):
    """Per-step masks [batch] (bool, and `dtype` for multiplying), True where t < length."""
    if not isinstance(sequence_length, Tensor):
        sequence_length = T.to_tensor(sequence_length)
    if sequence_length.ndim != 1:
        raise ValueError("sequence_length must be a 1-D tensor of lengths [batch], got shape {}".format(
            sequence_length.shape))
    t = T.arange(steps, dtype=sequence_length.dtype)
    keep = T.unsqueeze(t, 1) < T.unsqueeze(sequence_length, 0)  # [time, batch]
    return T.unbind(keep, 0), T.unbind(keep.astype(dtype), 0)


def _along_batch(mask, like):
    # [batch] -> [batch, 1, ...] so it broadcasts over a state or output of any rank (batch first).
    return T.reshape(mask, [mask.shape[0]] + [1] * (like.ndim - 1))


def _run_cell(cell, inputs, initial_states=None, sequence_length=None, time_major=False, is_reverse=False,
              zero_padded_outputs=False, **kwargs):
    """Runs `cell` over the time axis of `inputs`; returns (outputs, final_states) as Paddle's rnn().

    With sequence_length, steps at or beyond a sequence's length keep its state unchanged; their outputs
    are zeroed only when zero_padded_outputs (as Paddle's fused SimpleRNN/LSTM/GRU do; the RNN wrapper
    leaves them as computed)."""
    name = type(cell).__name__
    if not isinstance(inputs, Tensor):
        raise TypeError("RNN: inputs must be a Tensor, got {}".format(type(inputs).__name__))
    if inputs.ndim < 2:
        raise ValueError("RNN({}): inputs must have time and batch dimensions, got shape {}".format(
            name, inputs.shape))
    batch_idx = 1 if time_major else 0
    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=batch_idx)
    fast = _uses_builtin_step(cell, kwargs)
    if fast:
        cell._check_inputs(inputs)
    x = inputs if time_major else T.transpose(inputs, [1, 0] + list(range(2, inputs.ndim)))
    steps = x.shape[0]
    if fast:
        x = cell._project_inputs(x)  # one matmul for every time step
    xs = _UnbindSteps.apply(x)
    masks = None
    if sequence_length is not None:
        masks, fmasks = _step_masks(sequence_length, steps, inputs.dtype)
    states = initial_states
    outputs = [None] * steps
    order = range(steps - 1, -1, -1) if is_reverse else range(steps)
    for t in order:
        if fast:
            out, new_states = cell._step(xs[t], states)
        else:
            out, new_states = cell(xs[t], states, **kwargs)
        if masks is not None:
            m, fm = masks[t], fmasks[t]
            new_states = _map(lambda new, old: T.where(_along_batch(m, new), new, old), new_states, states)
            if zero_padded_outputs:
                out = _map(lambda o: o * _along_batch(fm, o), out)
        states = new_states
        outputs[t] = out
    time_axis = 0 if time_major else 1
    final_outputs = _map(lambda *os: T.stack(list(os), axis=time_axis), *outputs)
    return final_outputs, states


class RNN(Layer):
    """Runs a cell over a sequence: forward(inputs, initial_states=None, sequence_length=None) ->
    (outputs [batch, time, ...] or [time, batch, ...] when time_major, final_states)."""

    def __init__(self, cell, is_reverse=False, time_major=False):
        super().__init__()
        if not isinstance(cell, Layer):
            raise TypeError("RNN: cell must be a Layer (an RNNCellBase), got {}".format(type(cell).__name__))
        self.cell = cell
        self.is_reverse = is_reverse
        self.time_major = time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        return _run_cell(self.cell, inputs, initial_states, sequence_length, self.time_major, self.is_reverse,
                         **kwargs)


class BiRNN(Layer):
    """Runs cell_fw forwards and cell_bw backwards over a sequence and concatenates their outputs on the
    last axis; final_states is (states_fw, states_bw)."""

    def __init__(self, cell_fw, cell_bw, time_major=False):
        super().__init__()
        self.cell_fw = cell_fw
        self.cell_bw = cell_bw
        if getattr(cell_fw, "input_size", None) != getattr(cell_bw, "input_size", None):
            raise ValueError("BiRNN: input size of the forward cell ({}) differs from that of the backward "
                             "cell ({})".format(getattr(cell_fw, "input_size", None),
                                                getattr(cell_bw, "input_size", None)))
        self.time_major = time_major

    def forward(self, inputs, initial_states=None, sequence_length=None, **kwargs):
        return self._forward(inputs, initial_states, sequence_length, False, **kwargs)

    def _forward(self, inputs, initial_states, sequence_length, zero_padded_outputs, **kwargs):
        if initial_states is None:
            states_fw = states_bw = None
        else:
            if not (isinstance(initial_states, (list, tuple)) and len(initial_states) == 2):
                raise ValueError("BiRNN: initial_states must be a pair (states_fw, states_bw)")
            states_fw, states_bw = initial_states
        out_fw, states_fw = _run_cell(self.cell_fw, inputs, states_fw, sequence_length, self.time_major, False,
                                      zero_padded_outputs, **kwargs)
        out_bw, states_bw = _run_cell(self.cell_bw, inputs, states_bw, sequence_length, self.time_major, True,
                                      zero_padded_outputs, **kwargs)
        outputs = _map(lambda a, b: T.concat([a, b], axis=-1), out_fw, out_bw)
        return outputs, (states_fw, states_bw)


class RNNBase(LayerList):
    """Shared multi-layer network of SimpleRNN, LSTM and GRU: a LayerList of RNN (or BiRNN) layers, with
    dropout between layers. States are stacked as [num_layers * num_directions, batch, hidden] (LSTM: a
    pair (h, c))."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, direction="forward", time_major=False,
                 dropout=0.0, weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 proj_size=0):
        super().__init__()
        name = type(self).__name__
        bidirectional = ("bidirectional", "bidirect")
        if direction not in ("forward",) + bidirectional:
            raise ValueError("{}: direction must be 'forward', 'bidirect' or 'bidirectional', got {!r}".format(
                name, direction))
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError("{}: num_layers must be a positive int, got {!r}".format(name, num_layers))
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError("{}: dropout must be in [0, 1], got {}".format(name, dropout))
        if proj_size and mode != "LSTM":
            raise ValueError("{}: proj_size is only supported by LSTM".format(name))
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.num_directions = 2 if direction in bidirectional else 1
        self.time_major = time_major
        self.num_layers = num_layers
        self.state_components = 2 if mode == "LSTM" else 1
        self.proj_size = proj_size
        kwargs = {"weight_ih_attr": weight_ih_attr, "weight_hh_attr": weight_hh_attr,
                  "bias_ih_attr": bias_ih_attr, "bias_hh_attr": bias_hh_attr}
        if mode == "LSTM":
            cell_cls = LSTMCell
            kwargs["proj_size"] = proj_size
        elif mode == "GRU":
            cell_cls = GRUCell
        else:
            cell_cls = SimpleRNNCell
            kwargs["activation"] = "relu" if mode == "RNN_RELU" else "tanh"
        in_size = proj_size or hidden_size
        for i in range(num_layers):
            if self.num_directions == 1:
                size = input_size if i == 0 else in_size
                self.append(RNN(cell_cls(size, hidden_size, **kwargs), False, time_major))
            else:
                size = input_size if i == 0 else 2 * in_size
                self.append(BiRNN(cell_cls(size, hidden_size, **kwargs), cell_cls(size, hidden_size, **kwargs),
                                  time_major))
        # Paddle also exposes the parameters as attributes of the network itself ("weight_ih_l0",
        # "bias_hh_l1_reverse", ...), so its state_dict holds each under both names. The names are
        # zipped with the parameter list exactly as Paddle does, so Paddle checkpoints load.
        names = []
        for layer in range(num_layers):
            for d in range(self.num_directions):
                suffix = "_reverse" if d == 1 else ""
                names += ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias_ih_attr is not False:
                    names.append("bias_ih_l{}{}")
                if bias_hh_attr is not False:
                    names.append("bias_hh_l{}{}")
                names = [n.format(layer, suffix) for n in names]
        for n, p in zip(names, self.parameters()):
            setattr(self, n, p)

    def flatten_parameters(self):
        """Paddle packs the weights for cuDNN here; oar has nothing to pack (kept for compatibility)."""

    def _split_states(self, initial_states, batch, dtype):
        """The per-layer initial states from the stacked [L*D, batch, H] tensor(s)."""
        name = type(self).__name__
        ld = self.num_layers * self.num_directions
        dims = [self.proj_size or self.hidden_size, self.hidden_size]
        if initial_states is None:
            comps = [T.zeros([ld, batch, dims[i]], dtype=dtype) for i in range(self.state_components)]
        else:
            comps = [initial_states] if isinstance(initial_states, Tensor) else list(initial_states)
            if len(comps) != self.state_components:
                raise ValueError("{}: initial_states must be {} tensor(s), got {}".format(
                    name, self.state_components, len(comps)))
            for i, c in enumerate(comps):
                if not isinstance(c, Tensor) or c.shape != [ld, batch, dims[i]]:
                    raise ValueError("{}: initial state {} must have shape {} ([num_layers * num_directions, "
                                     "batch, hidden]), got {}".format(name, i, [ld, batch, dims[i]],
                                                                      getattr(c, "shape", type(c).__name__)))
        per = [T.unbind(c, 0) for c in comps]  # each: L*D tensors [batch, H]
        cell_states = [per[0][k] if self.state_components == 1 else tuple(p[k] for p in per) for k in range(ld)]
        if self.num_directions == 1:
            return cell_states
        return [(cell_states[2 * i], cell_states[2 * i + 1]) for i in range(self.num_layers)]

    def _traced_zero_states(self, inputs):
        """Zero initial states while jit.save traces with an unknown batch size (InputSpec batch None),
        where T.zeros cannot take the batch: [L*D, 1, H] zeros broadcast against a [1, batch, 1]
        column of the input. The input values are clipped to [-1, 1] before the multiply by 0, so an
        inf in the input still gives 0 (only a NaN stays NaN, which Paddle's output has too)."""
        col = inputs[:1, :, :1] if self.time_major else T.transpose(inputs[:, :1, :1], [1, 0, 2])
        col = T.clip(col, -1.0, 1.0) * 0.0
        ld = self.num_layers * self.num_directions
        dims = [self.proj_size or self.hidden_size, self.hidden_size]
        comps = [col + T.zeros([ld, 1, dims[i]], dtype=inputs.dtype) for i in range(self.state_components)]
        return comps[0] if self.state_components == 1 else tuple(comps)

    def forward(self, inputs, initial_states=None, sequence_length=None):
        name = type(self).__name__
        if not isinstance(inputs, Tensor):
            raise TypeError("{}: inputs must be a Tensor, got {}".format(name, type(inputs).__name__))
        if inputs.ndim != 3 or inputs.shape[-1] != self.input_size:
            raise ValueError("{}: expected inputs of shape {} with input_size={}, got {}".format(
                name, "[time, batch, input_size]" if self.time_major else "[batch, time, input_size]",
                self.input_size, inputs.shape))
        batch = inputs.shape[1 if self.time_major else 0]
        if initial_states is None and batch < 0:
            initial_states = self._traced_zero_states(inputs)
        if self._can_fuse(inputs):
            return self._fused_forward(inputs, initial_states, sequence_length, batch)
        states = self._split_states(initial_states, batch, inputs.dtype)
        finals = []
        x = inputs
        for i, layer in enumerate(self):
            if i > 0 and self.dropout:
                x = F.dropout(x, self.dropout, training=self.training, mode="upscale_in_train")
            if isinstance(layer, BiRNN):
                x, final = layer._forward(x, states[i], sequence_length, True)
                finals.extend(final)
            else:
                x, final = _run_cell(layer.cell, x, states[i], sequence_length, layer.time_major,
                                     layer.is_reverse, zero_padded_outputs=True)
                finals.append(final)
        if self.state_components == 1:
            final_states = T.stack(finals, axis=0)
        else:
            final_states = tuple(T.stack([f[k] for f in finals], axis=0) for k in range(self.state_components))
        return x, final_states

    # Whether forward may run the fused op: nothing observes the per-step cell calls, and the op covers
    # the configuration. True: float32 (oneDNN); "always": float64 too (the plugin's plain loop, slower
    # than the Python loop's matmuls today, so only the tests ask for it); False: the Python loop.
    use_fused_rnn = True

    def _cells(self):
        cells = []
        for layer in self:
            cells += [layer.cell_fw, layer.cell_bw] if isinstance(layer, BiRNN) else [layer.cell]
        return cells

    def _can_fuse(self, inputs):
        dtypes = (_C.float32, _C.float64) if self.use_fused_rnn == "always" else (_C.float32,)
        if not self.use_fused_rnn or self.proj_size or inputs.dtype not in dtypes:
            return False
        if not inputs.place.is_cpu_place():
            return False
        for cell in self._cells():
            if not _uses_builtin_step(cell, {}):
                return False
            if any(p is None for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)):
                return False
        return True

    def _fused_forward(self, inputs, initial_states, sequence_length, batch):
        """The network through the fused op: one op for the whole stack, or one per layer when dropout
        applies between layers in training or the stack exceeds the op's limit."""
        ld = self.num_layers * self.num_directions
        x = inputs if self.time_major else T.transpose(inputs, [1, 0, 2])
        if initial_states is None:
            h0 = T.zeros([ld, batch, self.hidden_size], dtype=inputs.dtype)
            c0 = h0
        else:
            comps = [initial_states] if isinstance(initial_states, Tensor) else list(initial_states)
            self._split_states(initial_states, batch, inputs.dtype)  # validates them
            h0 = comps[0]
            c0 = comps[1] if self.state_components == 2 else h0
        lengths = []
        if sequence_length is not None:
            if not isinstance(sequence_length, Tensor):
                sequence_length = T.to_tensor(sequence_length)
            if sequence_length.ndim != 1:
                raise ValueError("{}: sequence_length must be a 1-D tensor of lengths [batch], got shape {}"
                                 .format(type(self).__name__, sequence_length.shape))
            if sequence_length.dtype not in (_C.int32, _C.int64):
                sequence_length = sequence_length.astype("int64")
            lengths = [sequence_length]
        cells = self._cells()
        dirs = self.num_directions
        dropout = float(self.dropout) if self.training else 0.0
        per_layer = (dropout > 0 and self.num_layers > 1) or ld > _MAX_CELLS_PER_OP
        groups = [(i, i + 1) for i in range(self.num_layers)] if per_layer else [(0, self.num_layers)]
        # is_test 0: the kernel keeps what the backward needs (the reserve output) instead of recomputing it.
        is_test = int(not (self.training and _C.is_grad_enabled()))
        hs, cs = [], []
        for l0, l1 in groups:
            if l0 > 0 and dropout > 0:  # drawn in the caller's layout, so the masks equal the loop's
                if self.time_major:
                    x = F.dropout(x, dropout, training=True, mode="upscale_in_train")
                else:
                    x = T.transpose(F.dropout(T.transpose(x, [1, 0, 2]), dropout, training=True,
                                              mode="upscale_in_train"), [1, 0, 2])
            cs_ = cells[l0 * dirs:l1 * dirs]
            weights = ([w for c in cs_ for w in (c.weight_ih, c.weight_hh)] +
                       [b for c in cs_ for b in (c.bias_ih, c.bias_hh)])
            k0, k1 = l0 * dirs, l1 * dirs
            hi = h0 if (k0, k1) == (0, ld) else h0[k0:k1]
            ci = c0 if (k0, k1) == (0, ld) else c0[k0:k1]
            x, h, c, _ = _rnn_op([x, hi, ci] + weights + lengths, self.mode, self.hidden_size, l1 - l0,
                                 int(dirs == 2), float(self.dropout), is_test)
            hs.append(h)
            cs.append(c)
        h = hs[0] if len(hs) == 1 else T.concat(hs, 0)
        c = cs[0] if len(cs) == 1 else T.concat(cs, 0)
        out = x if self.time_major else T.transpose(x, [1, 0, 2])
        return out, ((h, c) if self.state_components == 2 else h)

    def extra_repr(self):
        s = "{}, {}".format(self.input_size, self.hidden_size)
        if self.num_layers != 1:
            s += ", num_layers={}".format(self.num_layers)
        if self.time_major is not False:
            s += ", time_major={}".format(self.time_major)
        if self.dropout != 0:
            s += ", dropout={}".format(self.dropout)
        return s


class SimpleRNN(RNNBase):
    """Multi-layer Elman network. forward(inputs, initial_states=None, sequence_length=None) ->
    (outputs [batch, time, num_directions * hidden], final h [num_layers * num_directions, batch, hidden])."""

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 activation="tanh", weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None,
                 name=None):
        if activation == "tanh":
            mode = "RNN_TANH"
        elif activation == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError("SimpleRNN: activation must be 'tanh' or 'relu', got {!r}".format(activation))
        self.activation = activation
        super().__init__(mode, input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, 0)


class LSTM(RNNBase):
    """Multi-layer LSTM. forward(inputs, initial_states=None, sequence_length=None) -> (outputs,
    (h, c)), h and c of shape [num_layers * num_directions, batch, hidden] (h: proj_size columns when
    proj_size > 0)."""

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, proj_size=0,
                 name=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, proj_size)


class GRU(RNNBase):
    """Multi-layer GRU. forward(inputs, initial_states=None, sequence_length=None) -> (outputs, final h
    [num_layers * num_directions, batch, hidden])."""

    def __init__(self, input_size, hidden_size, num_layers=1, direction="forward", time_major=False, dropout=0.0,
                 weight_ih_attr=None, weight_hh_attr=None, bias_ih_attr=None, bias_hh_attr=None, name=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, direction, time_major, dropout,
                         weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr, 0)
