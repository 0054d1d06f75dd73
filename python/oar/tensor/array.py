"""Tensor arrays (Paddle's LoDTensorArray): create_array, array_write, array_read, array_length.

Eager mode works on Python lists, as Paddle's dygraph does. While a program is being built (static mode,
to_static) an array is a TensorArray: its elements live in one program variable, the buffer, of shape
[length, *element shape], so that a loop recorded once (a `while` op) can append to it on every
iteration. A write inside a loop's sub-block assigns the grown buffer back to the buffer variable of the
block the array was made in, the way loop variables are carried (docs/dy2static.md, "Tensor arrays").
"""
from .. import _C

__all__ = []  # oar.tensor.create_array etc., not top-level names (as in Paddle)


def _building():
    return _C._current_builder() is not None and _C._is_symbolic_building()


class TensorArray(list):
    """A tensor array of a program being built. A list subclass so that code written for lists
    (`arr.append(x)`, `paddle.stack(arr)`) keeps working; its Python list storage stays empty and the
    elements are rows of the buffer variable."""

    _oar_tensor_array = True  # (oar.jit.api returns one as a list of tensors)

    def __init__(self, dtype=None, items=()):
        super().__init__()
        self._dtype = dtype
        self._elem = None      # element shape, known from the first write
        self._buf = None       # the buffer variable (None while empty)
        self._block = _C._current_builder().current_block
        self._static_len = 0   # None once a write inside a loop made the length a run-time value
        self._loop_grad = []   # differentiable values written inside loops (see _read_buffer)
        for x in items:
            self.append(x)

    # ---- writes
    def append(self, x):
        _write(self, x)

    def extend(self, xs):
        for x in xs:
            _write(self, x)

    def __iadd__(self, xs):
        self.extend(xs)
        return self

    def _type_for(self, x, what):
        if not isinstance(x, _C.Tensor):
            raise TypeError("{}: tensor array elements must be Tensors, got {}".format(what, type(x).__name__))
        if self._elem is None:
            if any(d < 0 for d in x.shape):
                raise ValueError(
                    "{}: a tensor array written inside a program needs elements of a known shape, got {} "
                    "(-1 = unknown extent; give the InputSpec fixed extents or build the list in Python "
                    "outside the tensor loop)".format(what, list(x.shape)))
            self._elem = list(x.shape)
            self._dtype = x.dtype  # (create_array's dtype is only a hint, as in Paddle's dygraph)
        elif list(x.shape) != self._elem:
            raise ValueError("{}: the array holds elements of shape {}, got {}".format(what, self._elem,
                                                                                     list(x.shape)))
        elif x.dtype != self._dtype:
            raise TypeError("{}: the array holds {} elements, got {}".format(what, self._dtype.name, x.dtype.name))
        return x

    # ---- reads
    def __len__(self):
        n = _static_len_here(self)
        if n is None:
            raise TypeError("len() of a tensor array inside or after a tensor loop writing it is a run-time "
                            "value: use paddle.tensor.array_length(array)")
        return n

    def __bool__(self):
        return self._buf is not None

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise TypeError("a tensor array cannot be sliced; use paddle.stack(array)[...]")
        return array_read(self, i)

    def __iter__(self):
        n = len(self)
        return iter([array_read(self, i) for i in range(n)])

    def __repr__(self):
        return "TensorArray(dtype={}, element shape={}, length={})".format(
            getattr(self._dtype, "name", self._dtype), self._elem,
            "run-time" if self._static_len is None else self._static_len)

    def _stacked(self, what):
        """The buffer [length, *element shape] as a tensor carrying the elements' gradients."""
        if self._buf is None:
            raise ValueError("{}: the tensor array is empty".format(what))
        _static_len_here(self)  # carried into a loop reading it
        return _read_buffer(self)

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


def _write(arr, x, what="array_write"):
    from .manipulation import concat
    x = arr._type_for(x, what)
    b = _C._current_builder()
    row = x.unsqueeze(0)
    if arr._buf is None:
        if b.current_block == arr._block:
            arr._buf = row
            arr._static_len = 1
            return
        # First write inside a loop: the empty buffer is made in the array's own block (whose ops
        # before the loop's `while` op are still being recorded), typed from this element.
        here = b.current_block
        b.current_block = arr._block
        try:
            from .creation import zeros
            arr._buf = _named_var(b, zeros([0] + arr._elem, dtype=x.dtype))
        finally:
            b.current_block = here
    if b.current_block == arr._block:
        arr._buf = concat([arr._buf, row], axis=0)
        if arr._static_len is not None:
            arr._static_len += 1
        return
    # Inside a loop (or branch) block: write the buffer variable of the array's block in place, so the
    # `while` op carries it from iteration to iteration.
    _carried(arr, b)
    grown = concat([arr._buf, row], axis=0)
    b.append_op("assign", {"X": [_C._symbolic_name(grown)]}, {"Out": [_C._symbolic_name(arr._buf)]})
    arr._static_len = None
    if not x.stop_gradient:
        arr._loop_grad.append(x)


def _carried(arr, b):
    """Called from a block other than the array's: the buffer becomes a variable of the array's block
    with a run-time first extent (made once), which a loop may grow in place; reads in such a block use
    it and count its rows at run time."""
    if arr._buf is not None and (not _C._is_symbolic(arr._buf) or arr._buf.shape[0] >= 0):
        here = b.current_block
        b.current_block = arr._block
        try:
            arr._buf = _named_var(b, arr._buf)
        finally:
            b.current_block = here


def _static_len_here(arr):
    """The length when known while recording the current block: not inside a loop or branch (which may
    write the array on each run)."""
    b = _C._current_builder()
    if b is not None and b.current_block != arr._block:
        _carried(arr, b)
        return None
    return arr._static_len


def _named_var(b, t):
    """A variable of the current block with a run-time first extent (-1) holding t."""
    v = b.create_var(b.unique_name("array"), [-1] + list(t.shape[1:]), t.dtype, place=t.place)
    b.append_op("assign", {"X": [_C._symbolic_name(t) if _C._is_symbolic(t) else b.capture(t)]},
                {"Out": [_C._symbolic_name(v)]})
    return v


def _no_grad_through_loop(ctx, *grads):
    raise NotImplementedError(
        "gradients: a backward program cannot be recorded through a tensor array written inside a loop (the "
        "loop grows it in place); to_static differentiates such programs under autograd instead, static-mode "
        "gradients/append_backward cannot")


def _read_buffer(arr):
    buf = arr._buf
    if arr._loop_grad and _C.is_grad_enabled():
        # The loop's in-place writes are invisible to the recorded autograd graph: the buffer's gradient
        # node refuses to record a backward program (to_static then differentiates by replaying the
        # program under autograd, which sees every iteration's ops as they run).
        out = _C._pylayer_record(_no_grad_through_loop, None, list(arr._loop_grad), [buf], False,
                                 "tensor array written in a loop")
        if out[0] is not None:
            return out[0]
    return buf


def _index(i, what):
    if isinstance(i, _C.Tensor):
        if i.size != 1:
            raise ValueError("{}: the index must have one element, got shape {}".format(what, list(i.shape)))
        return i
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError("{}: the index must be an int or a one-element integer Tensor, got {}".format(
            what, type(i).__name__))
    return i


# ---- Paddle's API -------------------------------------------------------------------------------------------
def create_array(dtype="float32", initialized_list=None):
    """A new tensor array: a Python list in eager mode (as Paddle's dygraph), a TensorArray while a
    program is being built."""
    items = list(initialized_list) if initialized_list is not None else []
    for x in items:
        if not isinstance(x, _C.Tensor):
            raise TypeError("create_array: all values in initialized_list must be Tensors, got {}".format(
                type(x).__name__))
    if _building():
        return TensorArray(dtype, items)
    return items


def array_write(x, i, array=None):
    """Writes x at position i of the array (a new one when None) and returns the array. Eager: i may be
    at most the length (i == length appends), as Paddle's dygraph. In a program, i must be the array's
    length (an append): arrays there only grow."""
    if not isinstance(x, _C.Tensor):
        raise TypeError("array_write: x must be a Tensor, got {}".format(type(x).__name__))
    if isinstance(array, TensorArray) or (array is None and _building()):
        if array is None:
            array = TensorArray()
        _index(i, "array_write")
        n = _static_len_here(array)
        if not (isinstance(i, _C.Tensor) and _C._is_symbolic(i)) and n is not None and _to_int(i) != n:
            raise ValueError("array_write: inside a program a tensor array only grows: index {} must be its "
                             "length {}".format(_to_int(i), n))
        _write(array, x)
        return array
    if not isinstance(i, _C.Tensor):
        raise AssertionError("array_write: in eager mode the index i must be a Tensor (as in Paddle), got "
                             "{}".format(type(i).__name__))
    if array is None:
        array = []
    if not isinstance(array, list):
        raise TypeError("array_write: array must be a list (from create_array), got {}".format(
            type(array).__name__))
    k = _to_int(i)
    if k < 0 or k > len(array):
        # AssertionError as Paddle's dygraph array_write
        raise AssertionError("array_write: index {} is out of range for an array of length {} (at most the "
                             "length, which appends)".format(k, len(array)))
    if k == len(array):
        array.append(x)
    else:
        array[k] = x
    return array


def array_read(array, i):
    """Element i of the array."""
    if isinstance(array, TensorArray):
        from .search import index_select
        _index(i, "array_read")
        n = _static_len_here(array)
        buf = array._stacked("array_read")
        if isinstance(i, int):
            if n is not None and not -n <= i < n:
                raise IndexError("array_read: index {} is out of range for an array of length {}".format(i, n))
            from .creation import full
            if i < 0:
                if n is None:  # from the end of a run-time length
                    i = array_length(array) + i
                else:
                    i = full([1], i + n, dtype=_C.int64)
            else:
                i = full([1], i, dtype=_C.int64)
        return index_select(buf, i.reshape([1]).astype("int64"), axis=0).squeeze(0)
    if not isinstance(array, list):
        raise TypeError("array_read: array must be a list (from create_array), got {}".format(
            type(array).__name__))
    k = _to_int(_index(i, "array_read"))
    if not -len(array) <= k < len(array):
        raise IndexError("array_read: index {} is out of range for an array of length {}".format(k, len(array)))
    return array[k]


def array_length(array):
    """The number of elements: a Python int in eager mode (as Paddle's dygraph), an int64 tensor of shape
    [1] in a program."""
    if isinstance(array, TensorArray):
        from .creation import full
        if array._buf is None:
            return full([1], 0, dtype=_C.int64)
        n = _static_len_here(array)
        if n is not None:
            return full([1], n, dtype=_C.int64)
        # No shape op, and ops whose attributes hold the run-time extent (ones_like, reshape) cannot run
        # without a fed variable of that extent: count the rows with elementwise ops (element shape static).
        if _numel(array._elem) == 0:
            raise ValueError("array_length: elements of shape {} (no values) cannot be counted inside a "
                             "program".format(array._elem))
        ones = (array._buf * 0 + 1).astype("int64")
        total = ones.sum()
        return (total // _numel(array._elem)).reshape([1])
    if not isinstance(array, list):
        raise TypeError("array_length: array must be a list (from create_array), got {}".format(
            type(array).__name__))
    return len(array)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _to_int(i):
    return int(i.item()) if isinstance(i, _C.Tensor) else int(i)
