"""oar.inference: the inference API (Config, Predictor; Paddle's paddle.inference). Empty until later
work fills it."""
