"""oar.io: datasets, samplers and the DataLoader (Paddle's paddle.io)."""
from .batch_sampler import BatchSampler, DistributedBatchSampler  # noqa: F401
from .collate import default_collate_fn, default_convert_fn  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from .dataset import (ChainDataset, ComposeDataset, ConcatDataset, Dataset, IterableDataset, Subset,  # noqa: F401
                      TensorDataset, random_split)
from .sampler import (RandomSampler, Sampler, SequenceSampler, SubsetRandomSampler,  # noqa: F401
                      WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info  # noqa: F401

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ComposeDataset", "ChainDataset", "ConcatDataset",
           "Subset", "random_split", "Sampler", "SequenceSampler", "RandomSampler", "WeightedRandomSampler",
           "SubsetRandomSampler", "BatchSampler", "DistributedBatchSampler", "DataLoader", "get_worker_info",
           "WorkerInfo", "default_collate_fn", "default_convert_fn"]
