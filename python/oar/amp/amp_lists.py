"""The op lists of auto_cast (Paddle's paddle.amp.amp_lists), as data, in oar's op names, in one place per
device type. An op in the white list runs in the low dtype, one in the black list in float32, one in the
kept list is never touched; every other op is "promote": mixed float inputs run in the widest of them
(float32 when any input is float32; see docs/amp.md). Custom lists may name Paddle's op types
(`elementwise_add`, `reduce_sum`, `matmul_v2`, ...) or oar's op names."""

# Paddle 2.x's WHITE_LIST (conv2d, einsum, matmul, matmul_v2, mul, max_pool2d_with_index) in oar's ops:
# matmul carries matmul/mul/bmm/linear/einsum, conv every convolution.
WHITE_LIST = {"matmul", "conv", "max_pool"}

# Paddle's FP16_BLACK_LIST: precision-sensitive math, reductions, norms, softmax and losses.
BLACK_LIST = {
    "tan", "acos", "asin", "sinh", "cosh", "atanh", "erfinv", "exp", "expm1", "log", "log10", "log2",
    "reciprocal", "rsqrt", "pow", "square", "sum", "mean", "prod", "cumprod", "cumsum", "logcumsumexp",
    "layer_norm", "softmax", "log_softmax", "softplus", "softmax_cross_entropy",
}
# Paddle's EXTRA_BLACK_LIST (kept in float32 at O2 too): resampling.
EXTRA_BLACK_LIST = {"interpolate"}

# Never cast: conversions, in-place writes, optimizer updates and loss scaling read their inputs as given.
# batch_norm too, as Paddle runs it at O1 and O2: x as it comes (a 16-bit conv output stays 16-bit), its
# [C] parameters and statistics in float32 (the op's contract; F.batch_norm casts them).
KEEP_LIST = {
    "cast", "copy", "assign", "check_finite_and_unscale", "update_loss_scaling", "merged_sum_squares",
    "batch_norm",
    "sgd", "momentum", "adam", "merged_sgd", "merged_momentum", "merged_adam", "merged_adamax",
    "merged_adagrad", "merged_adadelta", "merged_rmsprop", "merged_lamb",
}

# Per device type: the low dtypes it runs and its lists; a device type not named uses "default".
# The cpu runs bfloat16 (oneDNN's bf16 primitives; AVX512-BF16/AMX where the CPU has them) but not
# float16: the oneDNN the cpu plugin builds against (Debian's 2.6) has no fp16 CPU primitives (they need
# AVX512-FP16 and a newer oneDNN), so float16 auto_cast on cpu keeps float32, as Paddle does.
DEVICE_LISTS = {
    "default": {"dtypes": {"float16", "bfloat16"}, "white": WHITE_LIST, "black": BLACK_LIST},
    "cpu": {"dtypes": {"bfloat16"}, "white": WHITE_LIST, "black": BLACK_LIST},
}

# Paddle op types -> oar ops, for custom lists.
PADDLE_NAMES = {
    "matmul_v2": ["matmul"], "mul": ["matmul"], "bmm": ["matmul"], "linear": ["matmul"], "einsum": ["matmul"],
    "fused_gemm_epilogue": ["matmul"],
    "conv2d": ["conv"], "conv1d": ["conv"], "conv3d": ["conv"], "depthwise_conv2d": ["conv"],
    "conv2d_transpose": ["conv"], "conv3d_transpose": ["conv"],
    "pool2d": ["max_pool", "avg_pool"], "max_pool2d_with_index": ["max_pool"],
    "elementwise_add": ["add"], "elementwise_sub": ["subtract"], "elementwise_mul": ["multiply"],
    "elementwise_div": ["divide"], "elementwise_pow": ["pow"], "elementwise_max": ["maximum"],
    "elementwise_min": ["minimum"],
    "reduce_sum": ["sum"], "reduce_mean": ["mean"], "reduce_prod": ["prod"], "reduce_max": ["max"],
    "reduce_min": ["min"],
    "softmax_with_cross_entropy": ["softmax_cross_entropy"], "cross_entropy": ["softmax_cross_entropy"],
    "cross_entropy2": ["softmax_cross_entropy"], "lookup_table": ["index_select"],
    "lookup_table_v2": ["index_select"], "embedding": ["index_select"],
    "linear_interp_v2": ["interpolate"], "nearest_interp_v2": ["interpolate"],
    "bilinear_interp_v2": ["interpolate"], "bicubic_interp_v2": ["interpolate"],
    "trilinear_interp_v2": ["interpolate"], "gelu": ["gelu"], "relu": ["relu"],
}


def to_oar_ops(names):
    """Paddle op types or oar op names -> a set of oar op names."""
    out = set()
    for n in names or ():
        if not isinstance(n, str):
            raise TypeError(f"auto_cast: custom lists hold op names (str), got {type(n).__name__}")
        out.update(PADDLE_NAMES.get(n, [n]))
    return out


def lists_for(device_type, level, dtype, custom_white=(), custom_black=()):
    """(white, black, keep) for one device type, or None when it does not run `dtype`."""
    spec = DEVICE_LISTS.get(device_type, DEVICE_LISTS["default"])
    if dtype not in spec["dtypes"]:
        return None
    white = set(spec["white"])
    black = set(EXTRA_BLACK_LIST) if level == "O2" else set(spec["black"]) | EXTRA_BLACK_LIST
    if level == "OD":
        black = set()
    white = (white - custom_black) | custom_white
    black = (black - custom_white) | custom_black
    return sorted(white), sorted(black), sorted(KEEP_LIST)


def white_list():
    """Paddle's paddle.amp.amp_lists.white_list(): {dtype: {level: ops}} (oar op names)."""
    return {d: {lv: set(WHITE_LIST) for lv in ("OD", "O1", "O2")} for d in ("float16", "bfloat16")}


def black_list():
    """Paddle's paddle.amp.amp_lists.black_list(): {dtype: {level: ops}} (oar op names)."""
    return {d: {"OD": set(), "O1": BLACK_LIST | EXTRA_BLACK_LIST, "O2": set(EXTRA_BLACK_LIST)}
            for d in ("float16", "bfloat16")}
