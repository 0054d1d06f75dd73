"""paddle.incubate.nn layers over the compositions in incubate.nn.functional, with Paddle's parameter
names and shapes (so state dicts carry over)."""
from ...nn import functional as _F
from ...nn.initializer import Constant
from ...nn.layer.layers import Layer
from . import functional as FF

__all__ = ["FusedLinear", "FusedDropout", "FusedDropoutAdd", "FusedBiasDropoutResidualLayerNorm", "FusedFeedForward",
           "FusedMultiHeadAttention", "FusedTransformerEncoderLayer"]


def _ln_params(layer, size, scale_attr, bias_attr):
    scale = layer.create_parameter([size], attr=scale_attr, default_initializer=Constant(1.0))
    bias = layer.create_parameter([size], attr=bias_attr, is_bias=True)
    return scale, bias


class FusedLinear(Layer):
    """y = x @ weight + bias; weight [in, out] ([out, in] with transpose_weight)."""

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, transpose_weight=False, name=None):
        super().__init__()
        shape = [out_features, in_features] if transpose_weight else [in_features, out_features]
        self.weight = self.create_parameter(shape, attr=weight_attr, dtype=self._dtype)
        self.bias = self.create_parameter([out_features], attr=bias_attr, dtype=self._dtype, is_bias=True)
        self.transpose_weight = transpose_weight

    def forward(self, input):
        return FF.fused_linear(input, self.weight, self.bias, self.transpose_weight)


class FusedDropout(Layer):
    """Dropout (Paddle's fused dropout kernel; here oar's dropout)."""

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__()
        self.p, self.axis, self.mode = p, axis, mode

    def forward(self, input):
        return _F.dropout(input, self.p, axis=self.axis, training=self.training, mode=self.mode)

    def extra_repr(self):
        return "p={}, axis={}, mode={}".format(self.p, self.axis, self.mode)


class FusedDropoutAdd(Layer):
    """dropout(x) + y."""

    def __init__(self, p=0.5, mode="upscale_in_train", name=None):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, x, y):
        return FF.fused_dropout_add(x, y, self.p, self.training, self.mode)

    def extra_repr(self):
        return "p={}, mode={}".format(self.p, self.mode)


class FusedBiasDropoutResidualLayerNorm(Layer):
    """layer_norm(residual + dropout(x + linear_bias))."""

    def __init__(self, embed_dim, dropout_rate=0.5, weight_attr=None, bias_attr=None, epsilon=1e-5, name=None):
        super().__init__()
        if embed_dim <= 0:
            raise ValueError("FusedBiasDropoutResidualLayerNorm: embed_dim must be positive, got {}".format(embed_dim))
        self.embed_dim, self.dropout_rate, self._epsilon = embed_dim, dropout_rate, epsilon
        self.linear_bias = self.create_parameter([embed_dim], attr=bias_attr, is_bias=True)
        self.ln_scale, self.ln_bias = _ln_params(self, embed_dim, weight_attr, bias_attr)

    def forward(self, x, residual):
        return FF.fused_bias_dropout_residual_layer_norm(
            x, residual, self.linear_bias, self.ln_scale, self.ln_bias, self.dropout_rate, self._epsilon,
            self.training)

    def extra_repr(self):
        return "embed_dim={}, dropout_rate={}, epsilon={}".format(self.embed_dim, self.dropout_rate, self._epsilon)


class FusedFeedForward(Layer):
    """The transformer feed-forward block (fused_feedforward) with Paddle's parameters: _linear1_weight
    [d_model, dim_feedforward], _linear2_weight [dim_feedforward, d_model], their biases, and _ln1_*
    (normalize_before) or _ln2_* layer-norm parameters."""

    def __init__(self, d_model, dim_feedforward, dropout_rate=0.1, epsilon=1e-05, activation="relu",
                 act_dropout_rate=None, normalize_before=False, linear1_weight_attr=None, linear1_bias_attr=None,
                 linear2_weight_attr=None, linear2_bias_attr=None, ln1_scale_attr=None, ln1_bias_attr=None,
                 ln2_scale_attr=None, ln2_bias_attr=None, nranks=1, ring_id=-1, name=None):
        super().__init__()
        if d_model <= 0 or dim_feedforward <= 0:
            raise ValueError("FusedFeedForward: d_model and dim_feedforward must be positive, got {} and {}".format(
                d_model, dim_feedforward))
        if nranks != 1 or ring_id != -1:
            raise NotImplementedError("FusedFeedForward: tensor parallelism (nranks {}, ring_id {}) is not "
                                      "supported".format(nranks, ring_id))
        self._dropout_rate = dropout_rate
        self._act_dropout_rate = dropout_rate if act_dropout_rate is None else act_dropout_rate
        self._act_method, self._epsilon, self._normalize_before = activation, epsilon, normalize_before
        self._linear1_weight = self.create_parameter([d_model, dim_feedforward], attr=linear1_weight_attr)
        self._linear1_bias = self.create_parameter([dim_feedforward], attr=linear1_bias_attr, is_bias=True)
        self._linear2_weight = self.create_parameter([dim_feedforward, d_model], attr=linear2_weight_attr)
        self._linear2_bias = self.create_parameter([d_model], attr=linear2_bias_attr, is_bias=True)
        if normalize_before:
            self._ln1_scale, self._ln1_bias = _ln_params(self, d_model, ln1_scale_attr, ln1_bias_attr)
            self._ln2_scale = self._ln2_bias = None
        else:
            self._ln1_scale = self._ln1_bias = None
            self._ln2_scale, self._ln2_bias = _ln_params(self, d_model, ln2_scale_attr, ln2_bias_attr)

    def forward(self, src, cache=None):
        return FF.fused_feedforward(
            src, self._linear1_weight, self._linear2_weight, self._linear1_bias, self._linear2_bias,
            self._ln1_scale, self._ln1_bias, self._ln2_scale, self._ln2_bias, self._act_dropout_rate,
            self._dropout_rate, self._act_method, self._epsilon, self._epsilon, self._normalize_before,
            self.training)


class FusedMultiHeadAttention(Layer):
    """Self-attention block (fused_multi_head_attention) with Paddle's parameters: qkv_weight
    [3, num_heads, head_dim, embed_dim] ([embed_dim, 3 * embed_dim] with transpose_qkv_wb), qkv_bias,
    linear_weight [embed_dim, embed_dim], linear_bias, and pre_ln_* (normalize_before) or ln_*."""

    def __init__(self, embed_dim, num_heads, dropout_rate=0.5, attn_dropout_rate=0.5, kdim=None, vdim=None,
                 normalize_before=False, need_weights=False, qkv_weight_attr=None, qkv_bias_attr=None,
                 linear_weight_attr=None, linear_bias_attr=None, pre_ln_scale_attr=None, pre_ln_bias_attr=None,
                 ln_scale_attr=None, ln_bias_attr=None, epsilon=1e-5, nranks=1, ring_id=-1, transpose_qkv_wb=False,
                 name=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError("FusedMultiHeadAttention: num_heads ({}) must be a positive divisor of embed_dim "
                             "({})".format(num_heads, embed_dim))
        if need_weights:
            raise NotImplementedError("FusedMultiHeadAttention: need_weights=True is not supported (as in Paddle)")
        if nranks != 1 or ring_id != -1:
            raise NotImplementedError("FusedMultiHeadAttention: tensor parallelism (nranks {}, ring_id {}) is not "
                                      "supported".format(nranks, ring_id))
        for n, d in (("kdim", kdim), ("vdim", vdim)):
            if d is not None and d != embed_dim:
                raise ValueError("FusedMultiHeadAttention: {} must equal embed_dim ({}), got {}".format(
                    n, embed_dim, d))
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.dropout_rate, self.attn_dropout_rate = dropout_rate, attn_dropout_rate
        self.normalize_before, self._epsilon, self._transpose_qkv_wb = normalize_before, epsilon, transpose_qkv_wb
        if transpose_qkv_wb:
            qkv_shape, qkv_bias_shape = [embed_dim, 3 * embed_dim], [3 * embed_dim]
        else:
            qkv_shape = [3, num_heads, self.head_dim, embed_dim]
            qkv_bias_shape = [3, num_heads, self.head_dim]
        self.qkv_weight = self.create_parameter(qkv_shape, attr=qkv_weight_attr)
        self.qkv_bias = self.create_parameter(qkv_bias_shape, attr=qkv_bias_attr, is_bias=True)
        self.linear_weight = self.create_parameter([embed_dim, embed_dim], attr=linear_weight_attr)
        self.linear_bias = self.create_parameter([embed_dim], attr=linear_bias_attr, is_bias=True)
        if normalize_before:
            self.pre_ln_scale, self.pre_ln_bias = _ln_params(self, embed_dim, pre_ln_scale_attr, pre_ln_bias_attr)
            self.ln_scale = self.ln_bias = None
        else:
            self.pre_ln_scale = self.pre_ln_bias = None
            self.ln_scale, self.ln_bias = _ln_params(self, embed_dim, ln_scale_attr, ln_bias_attr)

    def forward(self, query, key=None, value=None, attn_mask=None, cache=None):
        if (key is not None and key is not query) or (value is not None and value is not query):
            raise NotImplementedError("FusedMultiHeadAttention: only self-attention (key and value None or query)")
        return FF.fused_multi_head_attention(
            query, self.qkv_weight, self.linear_weight, self.normalize_before, self.pre_ln_scale, self.pre_ln_bias,
            self.ln_scale, self.ln_bias, self._epsilon, self.qkv_bias, self.linear_bias, cache, attn_mask,
            self.dropout_rate, self.attn_dropout_rate, self._epsilon, self.training, num_heads=self.num_heads,
            transpose_qkv_wb=self._transpose_qkv_wb)

    def extra_repr(self):
        return "embed_dim={}, num_heads={}, dropout_rate={}, attn_dropout_rate={}, normalize_before={}".format(
            self.embed_dim, self.num_heads, self.dropout_rate, self.attn_dropout_rate, self.normalize_before)


class FusedTransformerEncoderLayer(Layer):
    """FusedMultiHeadAttention (fused_attn) then FusedFeedForward (ffn)."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout_rate=0.1, activation="relu", attn_dropout_rate=None,
                 act_dropout_rate=None, normalize_before=False, weight_attr=None, bias_attr=None):
        super().__init__()
        attn_dropout_rate = dropout_rate if attn_dropout_rate is None else attn_dropout_rate
        act_dropout_rate = dropout_rate if act_dropout_rate is None else act_dropout_rate
        self.normalize_before = normalize_before
        self.fused_attn = FusedMultiHeadAttention(
            d_model, nhead, dropout_rate=dropout_rate, attn_dropout_rate=attn_dropout_rate,
            normalize_before=normalize_before, qkv_weight_attr=weight_attr, qkv_bias_attr=bias_attr,
            linear_weight_attr=weight_attr, linear_bias_attr=bias_attr)
        self.ffn = FusedFeedForward(
            d_model, dim_feedforward, dropout_rate=dropout_rate, activation=activation,
            act_dropout_rate=act_dropout_rate, normalize_before=normalize_before,
            linear1_weight_attr=weight_attr, linear1_bias_attr=bias_attr, linear2_weight_attr=weight_attr,
            linear2_bias_attr=bias_attr)

    def forward(self, src, src_mask=None, cache=None):
        if cache is None:
            return self.ffn(self.fused_attn(src, attn_mask=src_mask))
        out, new_cache = self.fused_attn(src, attn_mask=src_mask, cache=cache)
        return self.ffn(out), new_cache
