"""Attention and Transformer layers (Paddle's paddle.nn transformer family): MultiHeadAttention,
TransformerEncoderLayer/Encoder, TransformerDecoderLayer/Decoder and Transformer.

The sublayer structure and parameter names are Paddle's ("self_attn.q_proj.weight", "linear1.bias",
"norm1.weight", ...), so Paddle state dicts load. Masks follow Paddle: a bool (or int) mask marks the
positions that may be attended (True/1 = keep; False/0 becomes -1e9 added to the scores); a float mask is
added to the scores as is.
"""
import collections
import copy

import numpy as np

from ..._C import Tensor
from ... import tensor as T
from ...framework.param_attr import ParamAttr
from .. import functional as F
from .. import initializer as I
from .container import LayerList
from .layers import Layer

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]


# ---- Linear / Dropout / LayerNorm ----
# The public oar.nn.Linear, Dropout and LayerNorm are written in parallel with this file. These minimal
# stand-ins have the same parameter names, shapes and defaults as Paddle's, and are used only while the
# public classes are missing from oar.nn, so state dict keys are the same either way.
class _Linear(Layer):
    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__(name_scope="linear")
        self.weight = self.create_parameter([in_features, out_features], weight_attr)
        self.bias = self.create_parameter([out_features], bias_attr, is_bias=True)
        self.in_features, self.out_features = in_features, out_features

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features={}, out_features={}, dtype={}".format(self.in_features, self.out_features,
                                                                 self._dtype)


class _Dropout(Layer):
    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__(name_scope="dropout")
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, x):
        return F.dropout(x, self.p, axis=self.axis, training=self.training, mode=self.mode)

    def extra_repr(self):
        return "p={}, axis={}, mode={}".format(self.p, self.axis, self.mode)


class _LayerNorm(Layer):
    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__(name_scope="layer_norm")
        if isinstance(normalized_shape, int):
            normalized_shape = [normalized_shape]
        self._normalized_shape = list(normalized_shape)
        self._epsilon = epsilon
        self.weight = self.create_parameter(self._normalized_shape, weight_attr,
                                            default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter(self._normalized_shape, bias_attr, is_bias=True)

    def forward(self, x):
        return F.layer_norm(x, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self):
        return "normalized_shape={}, epsilon={}".format(self._normalized_shape, self._epsilon)


def _public(name, fallback):
    from .. import layer as pkg  # resolved at construction time: the package is fully imported by then
    return getattr(pkg, name, None) or fallback


def _make_linear(*args, **kwargs):
    return _public("Linear", _Linear)(*args, **kwargs)


def _make_dropout(*args, **kwargs):
    return _public("Dropout", _Dropout)(*args, **kwargs)


def _make_layer_norm(*args, **kwargs):
    return _public("LayerNorm", _LayerNorm)(*args, **kwargs)


def _convert_param_attr_to_list(param_attr, n):
    """Paddle's rule: a list/tuple gives one attr per sublayer group; a single attr is copied n times
    (a named one gets "_<i>" suffixes so names stay unique); False means no parameter."""
    if isinstance(param_attr, (list, tuple)):
        if len(param_attr) != n:
            raise ValueError("length of param_attr should be {} when it is a list/tuple, got {}".format(
                n, len(param_attr)))
        out = []
        for attr in param_attr:
            if isinstance(attr, bool):
                out.append(ParamAttr._to_attr(None) if attr else False)
            else:
                out.append(ParamAttr._to_attr(attr))
        return out
    if isinstance(param_attr, bool):
        return [ParamAttr._to_attr(None) for _ in range(n)] if param_attr else [False] * n
    attr = ParamAttr._to_attr(param_attr)
    out = []
    for i in range(n):
        attr_i = copy.deepcopy(attr)
        if attr.name:
            attr_i.name = attr_i.name + "_" + str(i)
        out.append(attr_i)
    return out


def _convert_attention_mask(attn_mask, dtype):
    """A bool/int mask (True = attend) as an additive float mask of `dtype` (0 or -1e9); float masks are
    cast to `dtype`."""
    if attn_mask is None:
        return None
    if not isinstance(attn_mask, Tensor):
        attn_mask = T.to_tensor(attn_mask)
    if attn_mask.dtype == dtype:
        return attn_mask
    if attn_mask.dtype.name == "bool" or attn_mask.dtype.is_integer:
        return (attn_mask.astype(dtype) - 1.0) * 1e9
    return attn_mask.astype(dtype)


def _check_positive(owner, **values):
    for k, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError("{}: {} must be a positive int, got {!r}".format(owner, k, v))


def _activation_fn(owner, activation):
    fn = getattr(F, activation, None) if isinstance(activation, str) else None
    if fn is None or not callable(fn):
        raise ValueError("{}: unknown activation {!r} (a name in oar.nn.functional, e.g. 'relu', 'gelu')".format(
            owner, activation))
    return fn


class MultiHeadAttention(Layer):
    """Scaled dot-product attention over num_heads heads:
        out = out_proj(concat_h(softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h))
    forward(query, key=None, value=None, attn_mask=None, cache=None): query [batch, Lq, embed_dim], key
    [batch, Lk, kdim], value [batch, Lk, vdim] (key and value default to query). Returns out, or a tuple
    (out, [weights if need_weights], [cache if cache was given]).

    Caches (incremental decoding): MultiHeadAttention.Cache(k, v) holds the projected keys/values of the
    steps so far (new ones are appended, the returned cache grows); StaticCache(k, v) holds fixed
    projected keys/values (encoder memory in cross-attention). gen_cache builds either."""

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim, num_heads, dropout=0.0, kdim=None, vdim=None, need_weights=False,
                 weight_attr=None, bias_attr=None):
        super().__init__()
        _check_positive("MultiHeadAttention", embed_dim=embed_dim, num_heads=num_heads)
        if embed_dim % num_heads != 0:
            raise ValueError("MultiHeadAttention: embed_dim ({}) must be divisible by num_heads ({})".format(
                embed_dim, num_heads))
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.need_weights = need_weights
        self.head_dim = embed_dim // num_heads
        self.q_proj = _make_linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = _make_linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = _make_linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = _make_linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _check(self, x, size, what):
        if not isinstance(x, Tensor):
            raise TypeError("MultiHeadAttention: {} must be a Tensor, got {}".format(what, type(x).__name__))
        if x.ndim != 3 or x.shape[-1] != size:
            raise ValueError("MultiHeadAttention: expected {} of shape [batch, length, {}], got {}".format(
                what, size, x.shape))

    def _split_heads(self, x):
        # [batch, L, embed] -> [batch, heads, L, head_dim]
        b, n = x.shape[0], x.shape[1]
        return T.transpose(T.reshape(x, [b, n, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def compute_kv(self, key, value):
        """The projected keys and values, split into heads: two tensors [batch, heads, Lk, head_dim]."""
        self._check(key, self.kdim, "key")
        self._check(value, self.vdim, "value")
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def gen_cache(self, key, value=None, type=Cache):
        """type=StaticCache: StaticCache(compute_kv(key, value)). type=Cache with value None: an empty
        Cache (length 0) for the batch of `key`; with value given: Cache(key, value) as they are."""
        if type is MultiHeadAttention.StaticCache:
            k, v = self.compute_kv(key, value)
            return self.StaticCache(k, v)
        if value is None:
            shape = [key.shape[0], self.num_heads, 0, self.head_dim]
            return self.Cache(T.zeros(shape, dtype=key.dtype), T.zeros(shape, dtype=key.dtype))
        return self.Cache(key, value)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        key = query if key is None else key
        value = query if value is None else value
        self._check(query, self.embed_dim, "query")
        q = self._split_heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k = T.concat([cache.k, k], axis=2)
            v = T.concat([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        scores = T.matmul(q * (self.head_dim ** -0.5), k, transpose_y=True)  # [batch, heads, Lq, Lk]
        if attn_mask is not None:
            scores = scores + _convert_attention_mask(attn_mask, scores.dtype)
        weights = F.softmax(scores, axis=-1)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training, mode="upscale_in_train")
        out = T.matmul(weights, v)
        b, lq = out.shape[0], out.shape[2]
        out = T.reshape(T.transpose(out, [0, 2, 1, 3]), [b, lq, self.embed_dim])
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)

    def extra_repr(self):
        return "embed_dim={}, num_heads={}, dropout={}, kdim={}, vdim={}, need_weights={}".format(
            self.embed_dim, self.num_heads, self.dropout, self.kdim, self.vdim, self.need_weights)


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block (linear1 -> activation -> dropout -> linear2), each with a
    residual connection and LayerNorm: post-norm by default, pre-norm with normalize_before=True.
    forward(src, src_mask=None, cache=None)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        # Kept so TransformerEncoder can build more layers like this one.
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                            activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                            normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        super().__init__()
        _check_positive("TransformerEncoderLayer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 2)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0])
        self.linear1 = _make_linear(d_model, dim_feedforward, weight_attrs[1], bias_attr=bias_attrs[1])
        self.dropout = _make_dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = _make_linear(dim_feedforward, d_model, weight_attrs[1], bias_attr=bias_attrs[1])
        self.norm1 = _make_layer_norm(d_model, layer_norm_eps)
        self.norm2 = _make_layer_norm(d_model, layer_norm_eps)
        self.dropout1 = _make_dropout(dropout, mode="upscale_in_train")
        self.dropout2 = _make_dropout(dropout, mode="upscale_in_train")
        self.activation = _activation_fn("TransformerEncoderLayer", activation)

    def forward(self, src, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, incremental_cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)
        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, incremental_cache)

    def gen_cache(self, src):
        """An empty incremental Cache for the self-attention."""
        return self.self_attn.gen_cache(src, type=self.self_attn.Cache)


def _clones(layer, num_layers, owner):
    # Paddle builds layers 1.. anew from the first layer's constructor arguments (fresh parameters);
    # layers without recorded arguments are deep-copied instead.
    if not isinstance(num_layers, int) or num_layers < 1:
        raise ValueError("{}: num_layers must be a positive int, got {!r}".format(owner, num_layers))
    config = getattr(layer, "_config", None)
    out = [layer]
    for _ in range(1, num_layers):
        out.append(type(layer)(**config) if config is not None else copy.deepcopy(layer))
    return LayerList(out)


class TransformerEncoder(Layer):
    """num_layers encoder layers (the given one and num_layers - 1 new ones configured alike), then the
    optional norm. forward(src, src_mask=None, cache=None)."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        output = src
        new_caches = []
        for i, mod in enumerate(self.layers):
            if cache is None:
                output = mod(output, src_mask=src_mask)
            else:
                output, new_cache = mod(output, src_mask=src_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, src):
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(Layer):
    """Self-attention, cross-attention over the encoder memory, and the feed-forward block, each with a
    residual connection and LayerNorm. forward(tgt, memory, tgt_mask=None, memory_mask=None, cache=None);
    cache is (Cache, StaticCache) from gen_cache(memory)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1, activation="relu", attn_dropout=None,
                 act_dropout=None, normalize_before=False, weight_attr=None, bias_attr=None, layer_norm_eps=1e-5):
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                            activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                            normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        super().__init__()
        _check_positive("TransformerDecoderLayer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 3)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 3)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[1],
                                             bias_attr=bias_attrs[1])
        self.linear1 = _make_linear(d_model, dim_feedforward, weight_attrs[2], bias_attr=bias_attrs[2])
        self.dropout = _make_dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = _make_linear(dim_feedforward, d_model, weight_attrs[2], bias_attr=bias_attrs[2])
        self.norm1 = _make_layer_norm(d_model, layer_norm_eps)
        self.norm2 = _make_layer_norm(d_model, layer_norm_eps)
        self.norm3 = _make_layer_norm(d_model, layer_norm_eps)
        self.dropout1 = _make_dropout(dropout, mode="upscale_in_train")
        self.dropout2 = _make_dropout(dropout, mode="upscale_in_train")
        self.dropout3 = _make_dropout(dropout, mode="upscale_in_train")
        self.activation = _activation_fn("TransformerDecoderLayer", activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm1(tgt)
        if cache is None:
            tgt = self.self_attn(tgt, tgt, tgt, tgt_mask, None)
        else:
            tgt, incremental_cache = self.self_attn(tgt, tgt, tgt, tgt_mask, cache[0])
        tgt = residual + self.dropout1(tgt)
        if not self.normalize_before:
            tgt = self.norm1(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm2(tgt)
        if cache is None:
            tgt = self.cross_attn(tgt, memory, memory, memory_mask, None)
        else:
            tgt, static_cache = self.cross_attn(tgt, memory, memory, memory_mask, cache[1])
        tgt = residual + self.dropout2(tgt)
        if not self.normalize_before:
            tgt = self.norm2(tgt)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        tgt = residual + self.dropout3(tgt)
        if not self.normalize_before:
            tgt = self.norm3(tgt)
        return tgt if cache is None else (tgt, (incremental_cache, static_cache))

    def gen_cache(self, memory):
        """(empty incremental Cache for self-attention, StaticCache of memory for cross-attention)."""
        incremental_cache = self.self_attn.gen_cache(memory, type=self.self_attn.Cache)
        static_cache = self.cross_attn.gen_cache(memory, memory, type=self.cross_attn.StaticCache)
        return incremental_cache, static_cache


class TransformerDecoder(Layer):
    """num_layers decoder layers (configured like the given one), then the optional norm.
    forward(tgt, memory, tgt_mask=None, memory_mask=None, cache=None)."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        output = tgt
        new_caches = []
        for i, mod in enumerate(self.layers):
            if cache is None:
                output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=None)
            else:
                output, new_cache = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, memory, do_zip=False):
        cache = [layer.gen_cache(memory) for layer in self.layers]
        if do_zip:
            cache = list(zip(*cache))
        return cache


def _split_attr(attr, what):
    # Paddle: a list of 1, 2 or 3 attrs is spread over (encoder: 2 groups, decoder: 3 groups).
    if not isinstance(attr, (list, tuple)):
        return attr, attr
    if len(attr) == 1:
        return [attr[0]] * 2, [attr[0]] * 3
    if len(attr) == 2:
        return list(attr), [attr[0], attr[0], attr[-1]]
    if len(attr) == 3:
        return [attr[0], attr[-1]], list(attr)
    raise ValueError("Transformer: length of {} should be 1, 2 or 3 when it is a list/tuple, got {}".format(
        what, len(attr)))


class Transformer(Layer):
    """Encoder-decoder Transformer ("Attention Is All You Need"): a TransformerEncoder and a
    TransformerDecoder, each ending with a LayerNorm (or the custom_encoder / custom_decoder given).
    forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None) -> [batch, tgt_len, d_model]."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", attn_dropout=None, act_dropout=None, normalize_before=False,
                 weight_attr=None, bias_attr=None, custom_encoder=None, custom_decoder=None):
        super().__init__()
        _check_positive("Transformer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        enc_w, dec_w = _split_attr(weight_attr, "weight_attr")
        enc_b, dec_b = _split_attr(bias_attr, "bias_attr")
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                            act_dropout, normalize_before, enc_w, enc_b)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, _make_layer_norm(d_model))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                            act_dropout, normalize_before, dec_w, dec_b)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, _make_layer_norm(d_model))
        self.d_model = d_model
        self.nhead = nhead

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        memory = self.encoder(src, src_mask=src_mask)
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    def generate_square_subsequent_mask(self, length):
        """A [length, length] float mask: 0 on and below the diagonal, -inf above (each position attends
        only to itself and earlier ones)."""
        if isinstance(length, Tensor):
            length = int(length.item())
        return T.triu(T.full([length, length], -np.inf), 1)
