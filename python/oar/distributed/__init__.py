"""oar.distributed: process groups and collectives (Paddle's paddle.distributed). Empty until later work
fills it."""
