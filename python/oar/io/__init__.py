"""oar.io: datasets, samplers and the DataLoader (Paddle's paddle.io)."""
from .dataset import Dataset, IterableDataset  # noqa: F401

__all__ = ["Dataset", "IterableDataset"]
