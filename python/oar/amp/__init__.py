"""oar.amp: automatic mixed precision (Paddle 2.x's paddle.amp; docs/amp.md).

auto_cast casts op inputs in the core's dispatcher by white/black/promote lists (amp_lists.py);
decorate prepares models and optimizers for level O2; GradScaler scales the loss and skips steps with
inf/NaN gradients through the fused check_finite_and_unscale / update_loss_scaling ops."""
from . import amp_lists, debugging  # noqa: F401
from .auto_cast import (amp_decorate, amp_guard, amp_state, auto_cast, decorate, is_auto_cast_enabled,  # noqa: F401
                        is_bfloat16_supported, is_float16_supported)
from .grad_scaler import AmpScaler, GradScaler, OptimizerState  # noqa: F401

__all__ = ["auto_cast", "GradScaler", "decorate", "is_float16_supported", "is_bfloat16_supported"]
