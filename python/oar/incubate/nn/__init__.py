"""paddle.incubate.nn: the fused transformer layers (compositions of oar's ops; see functional)."""
from . import functional  # noqa: F401
from .layer import (FusedBiasDropoutResidualLayerNorm, FusedDropout, FusedDropoutAdd, FusedFeedForward,  # noqa: F401
                    FusedLinear, FusedMultiHeadAttention, FusedTransformerEncoderLayer)

__all__ = ["FusedLinear", "FusedDropout", "FusedDropoutAdd", "FusedBiasDropoutResidualLayerNorm", "FusedFeedForward",
           "FusedMultiHeadAttention", "FusedTransformerEncoderLayer"]
