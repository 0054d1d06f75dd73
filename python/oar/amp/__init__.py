"""oar.amp: automatic mixed precision (Paddle's paddle.amp). Empty until later work fills it."""
