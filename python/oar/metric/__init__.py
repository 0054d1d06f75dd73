"""oar.metric: metrics such as Accuracy (Paddle's paddle.metric). Empty until later work fills it."""
