"""oar.static: static-graph Program, Executor and friends (Paddle's paddle.static). Empty until the
program IR is bound in later work."""
