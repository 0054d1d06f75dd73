"""oar.vision: data sets, transforms and image backends (Paddle's paddle.vision)."""
from . import datasets, transforms  # noqa: F401
from .datasets import MNIST, Cifar10, Cifar100, DatasetFolder, FashionMNIST, ImageFolder  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401
# Paddle also re-exports the transform classes here.
from .transforms import (BaseTransform, BrightnessTransform, CenterCrop, ColorJitter, Compose,  # noqa: F401
                         ContrastTransform, Grayscale, HueTransform, Normalize, Pad, RandomCrop, RandomHorizontalFlip,
                         RandomResizedCrop, RandomRotation, RandomVerticalFlip, Resize, SaturationTransform, ToTensor,
                         Transpose)
# models: added by later work (from . import models, and its classes/functions as Paddle re-exports them).

__all__ = ["set_image_backend", "get_image_backend", "image_load"]
