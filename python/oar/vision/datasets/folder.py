"""DatasetFolder / ImageFolder: samples read from a folder tree (Paddle's paddle.vision.datasets)."""
import os

from ...io import Dataset
from .. import image as _image

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader", "cv2_loader",
           "has_valid_extension"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_valid_extension(filename, extensions):
    """True when filename ends (case-insensitively) with one of extensions."""
    if not isinstance(extensions, (list, tuple)):
        raise TypeError("`extensions` must be list or tuple, got {}".format(type(extensions).__name__))
    return filename.lower().endswith(tuple(x.lower() for x in extensions))


def pil_loader(path):
    from PIL import Image
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def cv2_loader(path):
    """A numpy HWC uint8 RGB array (decoded with PIL: OpenCV is not an oar dependency)."""
    return _image.image_load(path, backend="cv2")


def default_loader(path):
    if _image.get_image_backend() == "cv2":
        return cv2_loader(path)
    return pil_loader(path)


def _validity_check(extensions, is_valid_file):
    # One of the two selects the files. Paddle silently ignores is_valid_file (it always falls back to
    # IMG_EXTENSIONS); oar honours it, and refuses both at once as ambiguous.
    if extensions is not None and is_valid_file is not None:
        raise ValueError("pass either extensions or is_valid_file, not both")
    if is_valid_file is not None:
        if not callable(is_valid_file):
            raise TypeError("is_valid_file must be callable, got {}".format(type(is_valid_file).__name__))
        return None, is_valid_file
    if extensions is None:
        extensions = IMG_EXTENSIONS
    if isinstance(extensions, str):
        extensions = (extensions,)
    extensions = tuple(extensions)
    return extensions, (lambda p: has_valid_extension(p, extensions))


def _walk_files(folder, is_valid):
    out = []
    for root, dirs, fnames in os.walk(folder, followlinks=True):
        dirs.sort()  # visit sub folders in sorted order too
        for fname in sorted(fnames):
            path = os.path.join(root, fname)
            if is_valid(path):
                out.append(path)
    return out


def _check_root(root, what):
    if not os.path.isdir(os.path.expanduser(root)):
        raise FileNotFoundError("{}: root {!r} is not a directory".format(what, root))


class DatasetFolder(Dataset):
    """Samples arranged as root/<class>/**/<file>: classes are the sub folder names, sorted, numbered
    from 0 (class_to_idx); samples is the list of (path, class index), in sorted order; targets the
    class indices. A sample is (loader(path) after transform, class index)."""

    def __init__(self, root, loader=None, extensions=None, transform=None, is_valid_file=None):
        what = type(self).__name__
        _check_root(root, what)
        self.root = root
        self.transform = transform
        extensions, is_valid = _validity_check(extensions, is_valid_file)
        classes, class_to_idx = self._find_classes(os.path.expanduser(root))
        samples = []
        for c in classes:
            for path in _walk_files(os.path.join(os.path.expanduser(root), c), is_valid):
                samples.append((path, class_to_idx[c]))
        if not samples:
            raise RuntimeError("{}: found 0 files in subfolders of: {}\nSupported extensions are: {}".format(
                what, root, ",".join(extensions) if extensions else "(chosen by is_valid_file)"))
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]
        from ... import get_default_dtype
        self.dtype = str(get_default_dtype()).replace("oar.", "")

    def _find_classes(self, dir):
        classes = sorted(d.name for d in os.scandir(dir) if d.is_dir())
        return classes, {c: i for i, c in enumerate(classes)}

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, target

    def __len__(self):
        return len(self.samples)


class ImageFolder(Dataset):
    """Every matching file under root (any depth), sorted, without labels: a sample is [loader(path)]
    after transform, a one-element list as in Paddle."""

    def __init__(self, root, loader=None, extensions=None, transform=None, is_valid_file=None):
        what = type(self).__name__
        _check_root(root, what)
        self.root = root
        extensions, is_valid = _validity_check(extensions, is_valid_file)
        samples = _walk_files(os.path.expanduser(root), is_valid)
        if not samples:
            raise RuntimeError("{}: found 0 files in subfolders of: {}\nSupported extensions are: {}".format(
                what, root, ",".join(extensions) if extensions else "(chosen by is_valid_file)"))
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.samples = samples
        self.transform = transform

    def __getitem__(self, index):
        sample = self.loader(self.samples[index])
        if self.transform is not None:
            sample = self.transform(sample)
        return [sample]

    def __len__(self):
        return len(self.samples)
