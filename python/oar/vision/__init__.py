"""oar.vision: datasets, transforms and models (Paddle's paddle.vision). Empty until later work fills it."""
