"""oar.vision: data sets, transforms, models and image backends (Paddle's paddle.vision)."""
from . import datasets, ops, transforms  # noqa: F401
from .datasets import MNIST, Cifar10, Cifar100, DatasetFolder, FashionMNIST, ImageFolder  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401
# Paddle also re-exports the transform classes here.
from .transforms import (BaseTransform, BrightnessTransform, CenterCrop, ColorJitter, Compose,  # noqa: F401
                         ContrastTransform, Grayscale, HueTransform, Normalize, Pad, RandomCrop, RandomHorizontalFlip,
                         RandomResizedCrop, RandomRotation, RandomVerticalFlip, Resize, SaturationTransform, ToTensor,
                         Transpose)
from . import models  # noqa: F401
from .models import *  # noqa: F401,F403  (Paddle re-exports the model classes and constructors here)

__all__ = ["set_image_backend", "get_image_backend", "image_load"]
