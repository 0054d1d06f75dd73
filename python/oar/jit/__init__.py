"""oar.jit: to_static, save and load (Paddle's paddle.jit). Empty until later work fills it."""
