"""Functional image transforms (Paddle's paddle.vision.transforms.functional).

Each function takes a numpy array (HWC, or HW for one channel), a PIL image, or, where noted, an
oar Tensor (CHW). PIL images are handled with PIL itself. numpy arrays are handled in numpy (Paddle
uses OpenCV there; oar does not depend on it): resizing follows OpenCV's conventions (half-pixel
centres, no antialiasing), colour adjustments follow PIL's definitions (ImageEnhance), so a uint8
array and the same picture as a PIL image give the same result.
"""
import math
import numbers
from collections.abc import Sequence

import numpy as np

__all__ = ["to_tensor", "normalize", "resize", "pad", "crop", "center_crop", "hflip", "vflip", "rotate", "affine",
           "perspective", "to_grayscale", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "erase"]


def _pil():
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - PIL is a dependency (scripts/install_deps.sh)
        return None
    return Image


def _is_pil_image(img):
    Image = _pil()
    return Image is not None and isinstance(img, Image.Image)


def _is_tensor_image(img):
    from ... import Tensor
    return isinstance(img, Tensor)


def _is_numpy_image(img):
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


def _kind(img, fn, tensor_ok=False):
    """'pil', 'numpy' or 'tensor'; a TypeError naming fn for anything else."""
    if _is_pil_image(img):
        return "pil"
    if _is_numpy_image(img):
        return "numpy"
    if _is_tensor_image(img):
        if not tensor_ok:
            raise TypeError("{}: oar supports only PIL images and numpy arrays here, not Tensor".format(fn))
        if len(img.shape) not in (2, 3, 4):
            raise TypeError("{}: a Tensor image must be CHW (or NCHW), got shape {}".format(fn, list(img.shape)))
        return "tensor"
    if isinstance(img, np.ndarray):
        raise TypeError("{}: a numpy image must have 2 or 3 dimensions (HW or HWC), got shape {}".format(
            fn, img.shape))
    raise TypeError("{}: img should be PIL Image, numpy ndarray with dim=[2 or 3] or Tensor, got {}".format(
        fn, type(img).__name__))


def _as_uint8_like(out, dtype):
    """Float result back to the input dtype: integer images are clipped to [0, 255] and truncated (as PIL)."""
    if np.issubdtype(dtype, np.integer):
        return np.clip(out, 0, 255).astype(dtype)
    return out.astype(dtype)


# ---------------------------------------------------------------------------------------------- to_tensor


def to_tensor(pic, data_format="CHW"):
    """PIL image or numpy HWC/HW array -> oar Tensor (CHW by default); uint8 data is scaled to float32
    [0, 1], other dtypes are kept. A Tensor is returned as is (CHW) or transposed to HWC."""
    from ... import to_tensor as _to_tensor
    if data_format not in ("CHW", "HWC"):
        raise ValueError("data_format should be CHW or HWC. Got {!r}".format(data_format))
    kind = _kind(pic, "to_tensor", tensor_ok=True)
    if kind == "tensor":
        return pic if data_format == "CHW" else pic.transpose((1, 2, 0))
    if kind == "pil":
        mode = pic.mode
        if mode in ("I", "I;16"):
            arr = np.asarray(pic, np.int32)
        elif mode == "F":
            arr = np.asarray(pic, np.float32)
        elif mode == "1":
            arr = 255 * np.asarray(pic, np.uint8)
        else:
            arr = np.asarray(pic)
        nchannel = 3 if mode == "YCbCr" else (1 if mode == "I;16" else len(mode))
        arr = arr.reshape(pic.size[1], pic.size[0], nchannel)
    else:
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    if arr.dtype == np.uint8:
        arr = arr.astype(np.float32) / np.float32(255.0)
    if data_format == "CHW":
        arr = arr.transpose(2, 0, 1)
    return _to_tensor(np.ascontiguousarray(arr))


# ---------------------------------------------------------------------------------------------- normalize


def normalize(img, mean, std, data_format="CHW", to_rgb=False):
    """(img - mean) / std per channel. A Tensor stays a Tensor; PIL images and arrays give float32
    numpy arrays. data_format says where the channel axis is ('CHW' or 'HWC'); to_rgb flips the last
    axis of an array first (BGR -> RGB), as Paddle's OpenCV path does."""
    if data_format not in ("CHW", "HWC"):
        raise ValueError("data_format should be CHW or HWC. Got {!r}".format(data_format))
    if isinstance(mean, numbers.Number):
        mean = [mean]
    if isinstance(std, numbers.Number):
        std = [std]
    shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
    kind = _kind(img, "normalize", tensor_ok=True)
    if kind == "tensor":
        from ... import to_tensor as _to_tensor
        m = _to_tensor(np.asarray(mean, dtype=np.float32).reshape(shape)).astype(img.dtype)
        s = _to_tensor(np.asarray(std, dtype=np.float32).reshape(shape)).astype(img.dtype)
        return (img - m) / s
    if kind == "pil":
        img = np.asarray(img).astype(np.float32)
    m = np.float32(np.asarray(mean).reshape(shape))
    s = np.float32(np.asarray(std).reshape(shape))
    if to_rgb:
        img = img[..., ::-1]
    return (img - m) / s


# ---------------------------------------------------------------------------------------------- resize

_PIL_INTERP = {"nearest": 0, "lanczos": 1, "bilinear": 2, "bicubic": 3, "box": 4, "hamming": 5}


def _target_size(h, w, size):
    """(oh, ow): an int matches the smaller edge keeping the aspect ratio; a pair is (h, w)."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        if (w <= h and w == size) or (h <= w and h == size):
            return h, w
        if w < h:
            return int(size * h / w), int(size)
        return int(size), int(size * w / h)
    if isinstance(size, Sequence) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise TypeError("resize: size should be an int or a (h, w) pair, got {!r}".format(size))


def _resize_axis_nearest(n_in, n_out):
    # OpenCV INTER_NEAREST: src = floor(dst * in / out)
    return np.minimum(np.floor(np.arange(n_out) * (n_in / n_out)).astype(np.int64), n_in - 1)


def _resize_axis_linear(n_in, n_out):
    """Indices i0, i1 and weight of i1 for half-pixel-centre linear interpolation (OpenCV INTER_LINEAR)."""
    src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    src = np.clip(src, 0, n_in - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def _resize_numpy(img, oh, ow, interpolation):
    h, w = img.shape[:2]
    if interpolation == "nearest":
        return img[_resize_axis_nearest(h, oh)][:, _resize_axis_nearest(w, ow)]
    if interpolation != "bilinear":
        raise ValueError("resize: numpy images support interpolation 'nearest' or 'bilinear' in oar, got {!r} "
                         "(use a PIL image for the others)".format(interpolation))
    y0, y1, wy = _resize_axis_linear(h, oh)
    x0, x1, wx = _resize_axis_linear(w, ow)
    f = img.astype(np.float64)
    extra = (None,) * (img.ndim - 2)
    wy = wy[(slice(None), None) + extra]
    wx = wx[(None, slice(None)) + extra]
    top = f[y0][:, x0] * (1 - wx) + f[y0][:, x1] * wx
    bot = f[y1][:, x0] * (1 - wx) + f[y1][:, x1] * wx
    out = top * (1 - wy) + bot * wy
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)


def resize(img, size, interpolation="bilinear"):
    """Resizes to size: an int scales the smaller edge to it keeping the aspect ratio, a pair is (h, w).

    interpolation: 'nearest' or 'bilinear' for numpy arrays and Tensors; for PIL images also
    'bicubic', 'box', 'lanczos', 'hamming'."""
    kind = _kind(img, "resize", tensor_ok=True)
    if kind == "pil":
        if interpolation not in _PIL_INTERP:
            raise ValueError("resize: unknown interpolation {!r}; one of {}".format(interpolation, list(_PIL_INTERP)))
        w, h = img.size
        oh, ow = _target_size(h, w, size)
        if (oh, ow) == (h, w) and isinstance(size, numbers.Integral):
            return img
        return img.resize((ow, oh), _PIL_INTERP[interpolation])
    if kind == "numpy":
        h, w = img.shape[:2]
        oh, ow = _target_size(h, w, size)
        if (oh, ow) == (h, w) and isinstance(size, numbers.Integral):
            return img
        return _resize_numpy(img, oh, ow, interpolation)
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("resize: Tensor images support 'nearest' or 'bilinear', got {!r}".format(interpolation))
    from ...nn import functional as F
    h, w = img.shape[-2:]
    oh, ow = _target_size(h, w, size)
    x = img if len(img.shape) == 4 else img.unsqueeze(0)
    out = F.interpolate(x, size=[oh, ow], mode=interpolation, align_corners=False)
    return out if len(img.shape) == 4 else out.squeeze(0)


# ---------------------------------------------------------------------------------------------- pad / crop / flip


def _pil_fill(img, fill):
    """A number fills every band (PIL alone would read 7 as the colour (7, 0, 0) of an RGB image)."""
    if isinstance(fill, list):
        fill = tuple(fill)
    if isinstance(fill, numbers.Number) and len(img.getbands()) > 1:
        return (fill,) * len(img.getbands())
    return fill


def _parse_padding(padding):
    """(left, top, right, bottom) from an int, (lr, tb) or (l, t, r, b)."""
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return (int(padding),) * 4
    if isinstance(padding, (list, tuple)):
        if len(padding) == 2:
            return int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])
        if len(padding) == 4:
            return tuple(int(p) for p in padding)
        raise ValueError("Padding must be an int or a 2, or 4 element tuple, not a {} element tuple".format(
            len(padding)))
    raise TypeError("pad: padding should be an int or a tuple, got {!r}".format(padding))


_NP_PAD_MODE = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def _pad_numpy(img, left, top, right, bottom, fill, padding_mode):
    h, w = img.shape[:2]
    if padding_mode == "constant":
        out_shape = (h + top + bottom, w + left + right) + img.shape[2:]
        out = np.empty(out_shape, dtype=img.dtype)
        fill_arr = np.asarray(fill)
        if img.ndim == 2 and fill_arr.ndim > 0:
            fill_arr = fill_arr.flat[0]  # one channel: the first fill value
        out[...] = fill_arr
        out[top:top + h, left:left + w] = img
        return out
    widths = ((top, bottom), (left, right)) + ((0, 0),) * (img.ndim - 2)
    return np.pad(img, widths, mode=_NP_PAD_MODE[padding_mode])


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pads the borders. padding: int (all sides), (left/right, top/bottom) or (left, top, right,
    bottom). fill: the constant (a number or one value per channel). padding_mode: 'constant',
    'edge' (repeat the border pixel), 'reflect' (mirror without repeating the border pixel) or
    'symmetric' (mirror repeating it)."""
    kind = _kind(img, "pad")
    if not isinstance(fill, (numbers.Number, str, list, tuple)):
        raise TypeError("pad: fill should be a number or a tuple, got {!r}".format(fill))
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("pad: padding_mode should be constant, edge, reflect or symmetric, got {!r}".format(
            padding_mode))
    left, top, right, bottom = _parse_padding(padding)
    if kind == "pil":
        if padding_mode == "constant":
            from PIL import ImageOps
            return ImageOps.expand(img, border=(left, top, right, bottom), fill=_pil_fill(img, fill))
        Image = _pil()
        out = _pad_numpy(np.asarray(img), left, top, right, bottom, fill, padding_mode)
        res = Image.fromarray(out)
        if img.mode == "P":
            res.putpalette(img.getpalette())
        return res
    return _pad_numpy(img, left, top, right, bottom, fill, padding_mode)


def crop(img, top, left, height, width):
    """The region rows [top, top+height), columns [left, left+width)."""
    kind = _kind(img, "crop", tensor_ok=True)
    if kind == "pil":
        return img.crop((left, top, left + width, top + height))
    if kind == "numpy":
        return img[top:top + height, left:left + width]
    return img[..., top:top + height, left:left + width]


def _image_hw(img):
    if _is_pil_image(img):
        return img.size[1], img.size[0]
    if _is_numpy_image(img):
        return img.shape[0], img.shape[1]
    return img.shape[-2], img.shape[-1]


def center_crop(img, output_size):
    """The centred region of output_size (an int or (h, w))."""
    _kind(img, "center_crop", tensor_ok=True)
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    h, w = _image_hw(img)
    th, tw = output_size
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def hflip(img):
    """Mirror left <-> right."""
    kind = _kind(img, "hflip", tensor_ok=True)
    if kind == "pil":
        return img.transpose(_pil().FLIP_LEFT_RIGHT)
    if kind == "numpy":
        return np.ascontiguousarray(img[:, ::-1])
    from ... import flip
    return flip(img, axis=[-1])


def vflip(img):
    """Mirror top <-> bottom."""
    kind = _kind(img, "vflip", tensor_ok=True)
    if kind == "pil":
        return img.transpose(_pil().FLIP_TOP_BOTTOM)
    if kind == "numpy":
        return np.ascontiguousarray(img[::-1])
    from ... import flip
    return flip(img, axis=[-2])


# ---------------------------------------------------------------------------------------------- rotate


def _rotate_numpy(img, angle, interpolation, expand, center, fill):
    h, w = img.shape[:2]
    cx, cy = (w * 0.5, h * 0.5) if center is None else (float(center[0]), float(center[1]))
    a = math.radians(angle)
    cos_a, sin_a = round(math.cos(a), 15), round(math.sin(a), 15)
    oh, ow = h, w
    ocx, ocy = cx, cy
    if expand:
        # Bounding box of the rotated corners (forward map of a point relative to the centre:
        # (dx, dy) -> (dx cos + dy sin, -dx sin + dy cos), counter-clockwise on screen).
        xs, ys = [], []
        for x, y in ((0, 0), (w, 0), (w, h), (0, h)):
            dx, dy = x - cx, y - cy
            xs.append(dx * cos_a + dy * sin_a + cx)
            ys.append(-dx * sin_a + dy * cos_a + cy)
        ow = int(math.ceil(max(xs)) - math.floor(min(xs)))
        oh = int(math.ceil(max(ys)) - math.floor(min(ys)))
        ocx, ocy = cx + (ow - w) * 0.5, cy + (oh - h) * 0.5
    # Inverse map: the input point each output pixel centre comes from.
    yy, xx = np.meshgrid(np.arange(oh) + 0.5 - ocy, np.arange(ow) + 0.5 - ocx, indexing="ij")
    sx = xx * cos_a - yy * sin_a + cx
    sy = xx * sin_a + yy * cos_a + cy
    return _sample_numpy(img, sx, sy, interpolation, fill, "rotate")


def _sample_numpy(img, sx, sy, interpolation, fill, fn):
    """Reads img at the continuous points (sx, sy) (pixel i spans [i, i+1)), as PIL's geometric
    transforms do: a point outside the image takes fill; inside, 'nearest' takes the pixel holding
    it, 'bilinear' the 2x2 neighbourhood of pixel centres with edge pixels repeated."""
    h, w = img.shape[:2]
    fill_px = np.zeros(img.shape[2:], dtype=np.float64)
    fill_px[...] = fill if not isinstance(fill, (list, tuple)) else np.asarray(fill, dtype=np.float64)
    inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
    if interpolation == "nearest":
        ix = np.clip(np.floor(np.where(inside, sx, 0)).astype(np.int64), 0, w - 1)
        iy = np.clip(np.floor(np.where(inside, sy, 0)).astype(np.int64), 0, h - 1)
        out = img[iy, ix].astype(np.float64)
    elif interpolation == "bilinear":
        px, py = np.where(inside, sx, 0.5) - 0.5, np.where(inside, sy, 0.5) - 0.5
        x0, y0 = np.floor(px).astype(np.int64), np.floor(py).astype(np.int64)
        extra = (None,) * (img.ndim - 2)
        fx, fy = (px - x0)[(Ellipsis,) + extra], (py - y0)[(Ellipsis,) + extra]
        xa, xb = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
        ya, yb = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
        f = img.astype(np.float64)
        top = f[ya, xa] * (1 - fx) + f[ya, xb] * fx
        bot = f[yb, xa] * (1 - fx) + f[yb, xb] * fx
        out = top * (1 - fy) + bot * fy
    else:
        raise ValueError("{}: numpy images support 'nearest' or 'bilinear', got {!r}".format(fn, interpolation))
    out[~inside] = fill_px
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)


def _pixel_centres(h, w):
    yy, xx = np.meshgrid(np.arange(h) + 0.5, np.arange(w) + 0.5, indexing="ij")
    return xx, yy


def _get_affine_matrix(center, angle, translate, scale, shear):
    """Inverse affine map (output point -> input point) as 6 numbers (a, b, c, d, e, f):
    rotation by angle degrees clockwise and shear (degrees, x and y) about center, scaling by
    scale, then translation (the same matrix Paddle and torchvision hand to PIL)."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    # forward matrix without scale: [[a, b], [c, d]]
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    # its inverse (determinant 1), divided by scale
    m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    m[2] = m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] = m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def affine(img, angle, translate, scale, shear, interpolation="nearest", fill=0, center=None):
    """Affine transform keeping the image size: rotation by angle (degrees, clockwise, as Paddle;
    rotate() turns counter-clockwise),
    translate (dx, dy) pixels, scale, shear (a number: x shear; or (x, y), degrees), about center
    ((x, y), default the image centre)."""
    kind = _kind(img, "affine")
    if not isinstance(angle, (int, float)):
        raise TypeError("affine: angle should be int or float, got {!r}".format(angle))
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise ValueError("affine: translate should be a sequence of length 2, got {!r}".format(translate))
    if scale <= 0.0:
        raise ValueError("affine: scale should be positive, got {}".format(scale))
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError("affine: shear should be a number or a sequence of two values, got {!r}".format(shear))
    h, w = _image_hw(img)
    if center is None:
        center = (w * 0.5, h * 0.5)
    m = _get_affine_matrix(center, float(angle), [float(t) for t in translate], scale, shear)
    if kind == "pil":
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("affine: interpolation should be nearest, bilinear or bicubic, got {!r}".format(
                interpolation))
        Image = _pil()
        return img.transform(img.size, Image.AFFINE, m, _PIL_INTERP[interpolation], fillcolor=_pil_fill(img, fill))
    xx, yy = _pixel_centres(h, w)
    sx = m[0] * xx + m[1] * yy + m[2]
    sy = m[3] * xx + m[4] * yy + m[5]
    return _sample_numpy(img, sx, sy, interpolation, fill, "affine")


def _get_perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients of the perspective map sending each endpoint to its startpoint (the
    inverse map PIL samples with)."""
    a = np.zeros((8, 8))
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    return list(np.linalg.lstsq(a, np.asarray(startpoints, dtype=np.float64).reshape(8), rcond=None)[0])


def perspective(img, startpoints, endpoints, interpolation="nearest", fill=0):
    """Perspective transform moving the four startpoints ([x, y]: top-left, top-right,
    bottom-right, bottom-left) to endpoints; the image size is kept."""
    kind = _kind(img, "perspective")
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError("perspective: startpoints and endpoints should hold 4 points each")
    c = _get_perspective_coeffs(startpoints, endpoints)
    if kind == "pil":
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("perspective: interpolation should be nearest, bilinear or bicubic, got {!r}".format(
                interpolation))
        Image = _pil()
        return img.transform(img.size, Image.PERSPECTIVE, c, _PIL_INTERP[interpolation],
                             fillcolor=_pil_fill(img, fill))
    h, w = _image_hw(img)
    xx, yy = _pixel_centres(h, w)
    den = c[6] * xx + c[7] * yy + 1.0
    sx = (c[0] * xx + c[1] * yy + c[2]) / den
    sy = (c[3] * xx + c[4] * yy + c[5]) / den
    return _sample_numpy(img, sx, sy, interpolation, fill, "perspective")


def rotate(img, angle, interpolation="nearest", expand=False, center=None, fill=0):
    """Rotates counter-clockwise by angle degrees about center ((x, y), default the image centre).
    expand: grow the output to hold the whole rotated image. fill: value of pixels from outside."""
    kind = _kind(img, "rotate")
    if isinstance(center, list):
        center = tuple(center)
    if isinstance(fill, list):
        fill = tuple(fill)
    if kind == "pil":
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("rotate: interpolation should be nearest, bilinear or bicubic, got {!r}".format(
                interpolation))
        return img.rotate(angle, _PIL_INTERP[interpolation], expand, center, fillcolor=_pil_fill(img, fill))
    return _rotate_numpy(img, angle, interpolation, expand, center, fill)


# ---------------------------------------------------------------------------------------------- colour


def _gray_u8(rgb):
    """ITU-R 601-2 luma, rounded, as PIL's convert('L'): [H, W] uint8 from a HWC RGB array."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((r * 299 + g * 587 + b * 114 + 500) // 1000).astype(np.uint8)


def _gray_float(rgb):
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


def _blend(degenerate, img, factor):
    # PIL's Image.blend: degenerate + factor * (img - degenerate) in float32, truncated for uint8.
    degenerate = degenerate.astype(np.float32)
    out = degenerate + np.float32(factor) * (img.astype(np.float32) - degenerate)
    return _as_uint8_like(out, img.dtype)


def _is_rgb(img):
    return img.ndim == 3 and img.shape[2] == 3


def _gray_of(img):
    """Grey version of a numpy image with the input's number of channels (float64)."""
    if _is_rgb(img):
        g = _gray_u8(img) if img.dtype == np.uint8 else _gray_float(img.astype(np.float64))
        return np.repeat(g[..., None].astype(np.float64), 3, axis=2)
    return img.astype(np.float64)


def to_grayscale(img, num_output_channels=1):
    """RGB -> grey (L = 0.299 R + 0.587 G + 0.114 B) with 1 or 3 output channels. numpy results are
    HW1 or HW3; a Tensor (CHW) gives 1xHxW or 3xHxW."""
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3, got {!r}".format(num_output_channels))
    kind = _kind(img, "to_grayscale", tensor_ok=True)
    if kind == "pil":
        g = img.convert("L")
        if num_output_channels == 3:
            g = _pil().merge("RGB", [g, g, g])
        return g
    if kind == "tensor":
        if img.shape[-3] != 3:
            raise ValueError("to_grayscale: a Tensor image must have 3 channels, got shape {}".format(
                list(img.shape)))
        g = (img[..., 0:1, :, :] * 0.299 + img[..., 1:2, :, :] * 0.587 + img[..., 2:3, :, :] * 0.114)
        if num_output_channels == 3:
            from ... import concat
            g = concat([g, g, g], axis=-3)
        return g.astype(img.dtype)
    if not _is_rgb(img):
        raise ValueError("to_grayscale: a numpy image must be HxWx3 RGB, got shape {}".format(img.shape))
    g = _gray_u8(img) if img.dtype == np.uint8 else _gray_float(img.astype(np.float64)).astype(img.dtype)
    g = g[..., None]
    return np.repeat(g, 3, axis=2) if num_output_channels == 3 else g


def _check_factor(value, name):
    if not isinstance(value, numbers.Number) or value < 0:
        raise ValueError("{} should be a non-negative number, got {!r}".format(name, value))


def adjust_brightness(img, brightness_factor):
    """img * brightness_factor (0 gives black, 1 the original), clipped to [0, 255] for uint8."""
    _check_factor(brightness_factor, "brightness_factor")
    kind = _kind(img, "adjust_brightness")
    if kind == "pil":
        from PIL import ImageEnhance
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    return _blend(np.zeros_like(img, dtype=np.float32), img, brightness_factor)


def adjust_contrast(img, contrast_factor):
    """Blends with a grey image of the mean luma (0 gives that flat grey, 1 the original)."""
    _check_factor(contrast_factor, "contrast_factor")
    kind = _kind(img, "adjust_contrast")
    if kind == "pil":
        from PIL import ImageEnhance
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    if _is_rgb(img):
        gray = _gray_u8(img) if img.dtype == np.uint8 else _gray_float(img.astype(np.float64))
    else:
        gray = img
    mean = float(np.mean(gray))
    if np.issubdtype(img.dtype, np.integer):
        mean = float(int(mean + 0.5))  # PIL rounds the mean to an integer grey level
    return _blend(np.full(img.shape, mean, dtype=np.float32), img, contrast_factor)


def adjust_saturation(img, saturation_factor):
    """Blends with the grey version (0 gives grey, 1 the original, 2 doubles the saturation)."""
    _check_factor(saturation_factor, "saturation_factor")
    kind = _kind(img, "adjust_saturation")
    if kind == "pil":
        from PIL import ImageEnhance
        return ImageEnhance.Color(img).enhance(saturation_factor)
    if not _is_rgb(img):
        return img
    return _blend(_gray_of(img), img, saturation_factor)


def _rgb_to_hsv(rgb):
    """float RGB in [0, 1] -> h, s, v in [0, 1] (h as a fraction of a turn)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc = rgb.max(axis=-1)
    minc = rgb.min(axis=-1)
    delta = maxc - minc
    s = np.where(maxc > 0, delta / np.where(maxc > 0, maxc, 1), 0.0)
    d = np.where(delta > 0, delta, 1)
    rc, gc, bc = (maxc - r) / d, (maxc - g) / d, (maxc - b) / d
    h = np.where(maxc == r, bc - gc, np.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices_r = [v, q, p, p, t, v]
    choices_g = [t, v, v, q, p, p]
    choices_b = [p, p, t, v, v, q]
    r = np.choose(i, choices_r)
    g = np.choose(i, choices_g)
    b = np.choose(i, choices_b)
    return np.stack([r, g, b], axis=-1)


def _rgb_to_hsv_u8(rgb):
    """PIL's RGB -> HSV for uint8 images: h, s, v each quantised to 0..255 (h: 255 = one turn)."""
    f = rgb.astype(np.float32)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    maxc, minc = f.max(axis=-1), f.min(axis=-1)
    cr = np.where(maxc > minc, maxc - minc, np.float32(1))
    rc, gc, bc = (maxc - r) / cr, (maxc - g) / cr, (maxc - b) / cr
    h = np.where(r == maxc, bc - gc, np.where(g == maxc, np.float32(2) + rc - bc, np.float32(4) + gc - rc))
    # float32 storage with double intermediates, as PIL's C code (a handful of pixels still land on
    # the neighbouring hue level).
    h = np.fmod(h.astype(np.float32).astype(np.float64) / 6.0 + 1.0, 1.0).astype(np.float32).astype(np.float64)
    s = cr / np.where(maxc > 0, maxc, np.float32(1))
    grey = maxc == minc
    uh = np.where(grey, 0, np.clip((h * 255.0).astype(np.int64), 0, 255))
    us = np.where(grey, 0, np.clip((s * np.float32(255)).astype(np.int64), 0, 255))
    return uh, us, maxc.astype(np.int64)


def _hsv_u8_to_rgb(h, s, v):
    """PIL's HSV -> RGB for the quantised h, s, v of _rgb_to_hsv_u8."""
    fh = h.astype(np.float32) * np.float32(6) / np.float32(255)
    i = np.floor(fh)
    f = fh - i
    fs = s.astype(np.float32) / np.float32(255)
    vf = v.astype(np.float32)
    p = np.clip(np.round(vf * (1 - fs)), 0, 255).astype(np.int64)
    q = np.clip(np.round(vf * (1 - fs * f)), 0, 255).astype(np.int64)
    t = np.clip(np.round(vf * (1 - fs * (1 - f))), 0, 255).astype(np.int64)
    i = i.astype(np.int64) % 6
    r = np.choose(i, [v, q, p, p, t, v])
    g = np.choose(i, [t, v, v, q, p, p])
    b = np.choose(i, [p, p, t, v, v, q])
    out = np.stack([r, g, b], axis=-1)
    grey = (s == 0)[..., None]
    return np.where(grey, v[..., None], out).astype(np.uint8)


def adjust_hue(img, hue_factor):
    """Shifts the hue by hue_factor of a turn (in [-0.5, 0.5]); grey images are returned unchanged."""
    if not isinstance(hue_factor, numbers.Number) or not -0.5 <= hue_factor <= 0.5:
        raise ValueError("hue_factor:{} is not in [-0.5, 0.5].".format(hue_factor))
    kind = _kind(img, "adjust_hue")
    if kind == "pil":
        if img.mode in ("L", "1", "I", "F"):
            return img
        Image = _pil()
        h, s, v = img.convert("HSV").split()
        nh = ((np.asarray(h, dtype=np.int16) + int(hue_factor * 255)) % 256).astype(np.uint8)
        return Image.merge("HSV", (Image.fromarray(nh), s, v)).convert(img.mode)
    if not _is_rgb(img):
        return img
    if img.dtype == np.uint8:
        # The same integer HSV round trip as PIL, so arrays and PIL images agree.
        h, s, v = _rgb_to_hsv_u8(img)
        return _hsv_u8_to_rgb((h + int(hue_factor * 255)) % 256, s, v)
    scale = 255.0 if np.issubdtype(img.dtype, np.integer) else 1.0
    h, s, v = _rgb_to_hsv(img.astype(np.float64) / scale)
    out = _hsv_to_rgb((h + hue_factor) % 1.0, s, v) * scale
    if np.issubdtype(img.dtype, np.integer):
        return np.clip(np.rint(out), 0, 255).astype(img.dtype)
    return out.astype(img.dtype)


def erase(img, i, j, h, w, v, inplace=False):
    """Sets rows [i, i+h), columns [j, j+w) to v (numpy HWC / PIL: v broadcasts against [h, w, C];
    Tensor CHW: against [C, h, w])."""
    kind = _kind(img, "erase", tensor_ok=True)
    if kind == "pil":
        arr = np.array(img)
        arr[i:i + h, j:j + w, ...] = v
        return _pil().fromarray(arr)
    if kind == "numpy":
        if not inplace:
            img = img.copy()
        img[i:i + h, j:j + w, ...] = v
        return img
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img
