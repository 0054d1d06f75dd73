"""oar.io: Dataset, DataLoader and samplers (Paddle's paddle.io). Empty until later work fills it."""
