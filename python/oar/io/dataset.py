"""Dataset base classes (Paddle's paddle.io.Dataset / IterableDataset)."""


class Dataset:
    """A map-style dataset: subclasses implement __getitem__(idx) and __len__()."""

    def __getitem__(self, idx):
        raise NotImplementedError("'{}' does not implement __getitem__".format(type(self).__name__))

    def __len__(self):
        raise NotImplementedError("'{}' does not implement __len__".format(type(self).__name__))


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement __iter__()."""

    def __iter__(self):
        raise NotImplementedError("'{}' does not implement __iter__".format(type(self).__name__))

    def __getitem__(self, idx):
        raise RuntimeError("'{}' is an IterableDataset: it cannot be indexed".format(type(self).__name__))

    def __len__(self):
        raise RuntimeError("'{}' is an IterableDataset: it has no len()".format(type(self).__name__))
