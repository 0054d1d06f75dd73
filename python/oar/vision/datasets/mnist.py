"""MNIST and FashionMNIST read from the standard idx .gz files (Paddle's paddle.vision.datasets.MNIST)."""
import gzip
import os
import struct
import zlib

import numpy as np

from ...io import Dataset
from .. import image as _image
from ._util import cache_dir, find_file, missing_file_error

__all__ = ["MNIST", "FashionMNIST"]

_IMAGE_MAGIC = 2051  # 0x00000803: unsigned byte, 3 dimensions
_LABEL_MAGIC = 2049  # 0x00000801: unsigned byte, 1 dimension


def _read_gz(path, what):
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError("{}: {!r} is not a readable gzip file (corrupt or truncated?): {}".format(
            what, path, e)) from e


def _read_raw(path, what):
    if str(path).endswith(".gz"):
        return _read_gz(path, what)
    with open(path, "rb") as f:
        return f.read()


def _check_header(buf, header_len, magic_expected, kind, path, what):
    if len(buf) >= 4:
        magic = struct.unpack_from(">I", buf, 0)[0]
        if magic != magic_expected:
            raise ValueError("{}: {!r} has magic number {} but an idx {} file has {}".format(
                what, path, magic, kind, magic_expected))
    if len(buf) < header_len:
        raise ValueError("{}: {!r} is too short ({} bytes) to hold an idx {} header".format(
            what, path, len(buf), kind))


def read_idx_images(path, what="idx"):
    """Reads an idx3-ubyte(.gz) image file into a uint8 array [N, rows, cols], checking magic and sizes."""
    buf = _read_raw(path, what)
    _check_header(buf, 16, _IMAGE_MAGIC, "image", path, what)
    _, n, rows, cols = struct.unpack_from(">IIII", buf, 0)
    expected = 16 + n * rows * cols
    if len(buf) != expected:
        raise ValueError("{}: {!r} holds {} bytes but its header ({} images of {}x{}) needs {} (truncated?)".format(
            what, path, len(buf), n, rows, cols, expected))
    return np.frombuffer(buf, dtype=np.uint8, offset=16).reshape(n, rows, cols)


def read_idx_labels(path, what="idx"):
    """Reads an idx1-ubyte(.gz) label file into a uint8 array [N], checking magic and sizes."""
    buf = _read_raw(path, what)
    _check_header(buf, 8, _LABEL_MAGIC, "label", path, what)
    _, n = struct.unpack_from(">II", buf, 0)
    if len(buf) != 8 + n:
        raise ValueError("{}: {!r} holds {} bytes but its header ({} labels) needs {} (truncated?)".format(
            what, path, len(buf), n, 8 + n))
    return np.frombuffer(buf, dtype=np.uint8, offset=8)


class MNIST(Dataset):
    """The MNIST handwritten digits: 60000 train / 10000 test 28x28 grey images, labels 0..9.

    image_path/label_path: the idx .gz files; when None they are looked for in the default folders
    (`_default_folders()`). oar never downloads: with the files missing a FileNotFoundError says
    where it looked and how to provide them.
    A sample is (image, label): label is an int64 array of shape [1]; with backend 'pil' (the default)
    the image is a 28x28 PIL image of mode 'L', with backend 'cv2' a float32 (default dtype) numpy
    array [28, 28]; `transform` is applied to the image first.
    """
    NAME = "mnist"
    TRAIN_IMAGE = "train-images-idx3-ubyte.gz"
    TRAIN_LABEL = "train-labels-idx1-ubyte.gz"
    TEST_IMAGE = "t10k-images-idx3-ubyte.gz"
    TEST_LABEL = "t10k-labels-idx1-ubyte.gz"
    HOW_TO_PROVIDE = ("Copy the four standard MNIST files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                      "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) into {}, or pass image_path= and "
                      "label_path=.")

    def __init__(self, image_path=None, label_path=None, mode="train", transform=None, download=True, backend=None):
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError("mode should be 'train' or 'test', but got {!r}".format(mode))
        if backend is None:
            backend = _image.get_image_backend()
        if backend not in ("pil", "cv2"):
            raise ValueError("Expected backend are one of ['pil', 'cv2'], but got {!r}".format(backend))
        self.backend = backend
        self.mode = mode.lower()
        train = self.mode == "train"
        self.image_path = image_path or self._locate(self.TRAIN_IMAGE if train else self.TEST_IMAGE, download)
        self.label_path = label_path or self._locate(self.TRAIN_LABEL if train else self.TEST_LABEL, download)
        self.transform = transform
        what = type(self).__name__
        for p in (self.image_path, self.label_path):
            if not os.path.isfile(p):
                raise FileNotFoundError("{}: file {!r} does not exist".format(what, p))
        self.images = read_idx_images(self.image_path, what)
        self.labels = read_idx_labels(self.label_path, what).astype(np.int64)
        if len(self.images) != len(self.labels):
            raise ValueError("{}: {!r} holds {} images but {!r} holds {} labels".format(
                what, self.image_path, len(self.images), self.label_path, len(self.labels)))
        from ... import get_default_dtype
        self.dtype = str(get_default_dtype()).replace("oar.", "")

    @classmethod
    def _default_folders(cls):
        return [cache_dir(cls.NAME)]

    def _locate(self, filename, download):
        folders = self._default_folders()
        path = find_file(filename, folders)
        if path is None:
            raise missing_file_error(type(self).__name__, filename, folders,
                                     self.HOW_TO_PROVIDE.format(folders[-1]), download)
        return path

    def __getitem__(self, idx):
        image = np.array(self.images[idx])  # a private, writable copy (the split is a read-only buffer)
        label = np.array([self.labels[idx]], dtype=np.int64)
        if self.backend == "pil":
            from PIL import Image
            image = Image.fromarray(image)  # uint8 2-D: mode "L"
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == "pil":
            return image, label
        return image.astype(self.dtype), label

    def __len__(self):
        return len(self.labels)


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): the same layout as MNIST, 10 clothing classes.

    Looked for first in Debian's /usr/share/datasets/fashion-mnist (package dataset-fashion-mnist),
    then in ~/.cache/oar/dataset/fashion-mnist."""
    NAME = "fashion-mnist"
    DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
    HOW_TO_PROVIDE = ("Install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), "
                      "copy the four Fashion-MNIST idx .gz files into {}, or pass image_path= and label_path=.")

    @classmethod
    def _default_folders(cls):
        return [cls.DEBIAN_DIR, cache_dir(cls.NAME)]
