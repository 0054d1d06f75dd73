"""CIFAR-10 / CIFAR-100 read from the python-version tar.gz archives (Paddle's Cifar10 / Cifar100)."""
import io
import pickle
import tarfile
import zlib

import numpy as np

from ...io import Dataset
from .. import image as _image
from ._util import cache_dir, find_file, missing_file_error

__all__ = ["Cifar10", "Cifar100"]

# Batch files of each archive: the members whose name contains the flag.
_MODE_FLAG = {"train10": "data_batch", "test10": "test_batch", "train100": "train", "test100": "test"}


class _SafeUnpickler(pickle.Unpickler):
    """Unpickles only what a CIFAR batch holds: dicts, lists, bytes, numbers and numpy arrays.

    Any other global (a class or function named by the pickle) is refused, so a crafted archive
    cannot run code when it is loaded."""
    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("_codecs", "encode"),  # how protocol-2 pickles written by Python 3 spell bytes
    }

    def find_class(self, module, name):
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError("refusing to unpickle {}.{}: a CIFAR batch holds only numpy arrays, "
                                     "lists, dicts and bytes".format(module, name))


def _load_batch(data, member):
    try:
        return _SafeUnpickler(io.BytesIO(data), encoding="bytes").load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:
        raise ValueError("cannot unpickle batch {!r}: {}".format(member, e)) from e


class Cifar10(Dataset):
    """CIFAR-10: 50000 train / 10000 test 32x32 RGB images in 10 classes.

    data_file: the python-version archive (cifar-10-python.tar.gz); when None it is looked for in
    ~/.cache/oar/dataset/cifar (oar never downloads). A sample is (image, label): label an int64
    0-d array; with backend 'pil' the image is a 32x32 RGB PIL image, with 'cv2' a float32 HWC
    numpy array [32, 32, 3]; `transform` is applied to the image first."""
    FILE_NAME = "cifar-10-python.tar.gz"
    SUFFIX = "10"

    def __init__(self, data_file=None, mode="train", transform=None, download=True, backend=None):
        if not isinstance(mode, str) or mode.lower() not in ("train", "test"):
            raise ValueError("mode should be 'train' or 'test', but got {!r}".format(mode))
        self.mode = mode.lower()
        if backend is None:
            backend = _image.get_image_backend()
        if backend not in ("pil", "cv2"):
            raise ValueError("Expected backend are one of ['pil', 'cv2'], but got {!r}".format(backend))
        self.backend = backend
        self.flag = _MODE_FLAG[self.mode + self.SUFFIX]
        if data_file is None:
            folders = [cache_dir("cifar")]
            data_file = find_file(self.FILE_NAME, folders)
            if data_file is None:
                raise missing_file_error(type(self).__name__, self.FILE_NAME, folders,
                                         "Copy the python-version archive there or pass data_file=.", download)
        self.data_file = data_file
        self.transform = transform
        self._load_data()
        from ... import get_default_dtype
        self.dtype = str(get_default_dtype()).replace("oar.", "")

    def _load_data(self):
        what = type(self).__name__
        images, labels = [], []
        try:
            tar = tarfile.open(self.data_file, mode="r")
        except (tarfile.TarError, OSError, EOFError) as e:
            raise ValueError("{}: {!r} is not a readable tar archive: {}".format(what, self.data_file, e)) from e
        with tar:
            try:
                members = sorted((m for m in tar.getmembers() if m.isfile() and self.flag in m.name),
                                 key=lambda m: m.name)
                for m in members:
                    batch = _load_batch(tar.extractfile(m).read(), m.name)
                    if not isinstance(batch, dict) or b"data" not in batch:
                        raise ValueError("{}: member {!r} of {!r} is not a CIFAR batch (no b'data')".format(
                            what, m.name, self.data_file))
                    data = np.asarray(batch[b"data"], dtype=np.uint8)
                    lab = batch.get(b"labels", batch.get(b"fine_labels"))
                    if lab is None:
                        raise ValueError("{}: member {!r} of {!r} has no labels".format(what, m.name, self.data_file))
                    if data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] != len(lab):
                        raise ValueError("{}: member {!r} of {!r} has data of shape {} for {} labels; expected "
                                         "[N, 3072]".format(what, m.name, self.data_file, data.shape, len(lab)))
                    images.append(data)
                    labels.extend(int(v) for v in lab)
            except (tarfile.TarError, EOFError, zlib.error) as e:
                raise ValueError("{}: {!r} is corrupt or truncated: {}".format(what, self.data_file, e)) from e
        if not images:
            raise ValueError("{}: {!r} holds no member whose name contains {!r}".format(
                what, self.data_file, self.flag))
        # [N, 3, 32, 32] rows -> HWC images, as Paddle hands them to transforms.
        self.images = np.concatenate(images).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self.labels = np.asarray(labels, dtype=np.int64)

    def __getitem__(self, idx):
        image = self.images[idx]
        label = np.array(self.labels[idx], dtype=np.int64)
        if self.backend == "pil":
            from PIL import Image
            image = Image.fromarray(np.ascontiguousarray(image))
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == "pil":
            return image, label
        return image.astype(self.dtype), label

    def __len__(self):
        return len(self.labels)


class Cifar100(Cifar10):
    """CIFAR-100 (fine labels, 0..99) from cifar-100-python.tar.gz; otherwise as Cifar10."""
    FILE_NAME = "cifar-100-python.tar.gz"
    SUFFIX = "100"

