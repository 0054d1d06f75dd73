"""oar.optimizer.lr: learning-rate schedulers (Paddle's paddle.optimizer.lr). Empty until later work
fills it."""
