"""oar.vision.datasets: MNIST, FashionMNIST, Cifar10, Cifar100, DatasetFolder, ImageFolder (Paddle's
paddle.vision.datasets). oar never downloads: files are read from local paths (see docs/vision.md)."""
from .cifar import Cifar10, Cifar100
from .folder import DatasetFolder, ImageFolder
from .mnist import MNIST, FashionMNIST

__all__ = ["DatasetFolder", "ImageFolder", "MNIST", "FashionMNIST", "Cifar10", "Cifar100"]
