"""Image backend selection and loading (Paddle's paddle.vision.image)."""

__all__ = ["set_image_backend", "get_image_backend", "image_load"]

_BACKENDS = ("pil", "cv2", "tensor")
_image_backend = "pil"


def set_image_backend(backend):
    """Sets the backend datasets and loaders use by default: 'pil', 'cv2' (numpy HWC arrays) or 'tensor'."""
    global _image_backend
    if backend not in _BACKENDS:
        raise ValueError("Expected backend are one of {}, but got {!r}".format(list(_BACKENDS), backend))
    _image_backend = backend


def get_image_backend():
    return _image_backend


def image_load(path, backend=None):
    """Loads an image file: a PIL image for 'pil'; a numpy HWC uint8 RGB array for 'cv2'/'tensor'.

    OpenCV is not a dependency of oar, so the 'cv2' backend decodes with PIL and returns the array
    in RGB order (OpenCV itself would return BGR)."""
    if backend is None:
        backend = _image_backend
    if backend not in _BACKENDS:
        raise ValueError("Expected backend are one of {}, but got {!r}".format(list(_BACKENDS), backend))
    from PIL import Image
    if backend == "pil":
        return Image.open(path)
    import numpy as np
    with open(path, "rb") as f:
        return np.asarray(Image.open(f).convert("RGB"))
