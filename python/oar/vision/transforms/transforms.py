"""Image transform classes (Paddle's paddle.vision.transforms).

Random transforms draw from Python's global `random` module (and numpy's global state where Paddle
does), so `random.seed(n)` / `np.random.seed(n)` make them repeatable.
"""
import math
import numbers
import random
from collections.abc import Iterable, Sequence

import numpy as np

from . import functional as F

__all__ = ["BaseTransform", "Compose", "ToTensor", "Normalize", "Resize", "CenterCrop", "RandomCrop",
           "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomAffine",
           "RandomPerspective", "Transpose",
           "Pad", "Grayscale", "BrightnessTransform", "ContrastTransform", "SaturationTransform",
           "HueTransform", "ColorJitter", "RandomErasing"]


def _image_size(img):
    """(width, height) of a PIL image, HWC array or CHW Tensor."""
    if F._is_pil_image(img):
        return img.size
    if F._is_numpy_image(img):
        return img.shape[1], img.shape[0]
    if F._is_tensor_image(img):
        if len(img.shape) not in (3, 4):
            raise ValueError("The dim for input Tensor should be 3-D or 4-D, but received {}".format(len(img.shape)))
        return img.shape[-1], img.shape[-2]
    raise TypeError("Unexpected type {}".format(type(img).__name__))


class Compose:
    """Applies transforms in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, data):
        for f in self.transforms:
            data = f(data)
        return data

    def __repr__(self):
        return "{}({})".format(type(self).__name__, "".join("\n    {}".format(t) for t in self.transforms)
                               + ("\n" if self.transforms else ""))


class BaseTransform:
    """Base of the transforms: `keys` names what each element of a tuple input is ('image', 'coords',
    'boxes', 'mask'); element i goes through `_apply_<keys[i]>`, extra elements pass through
    unchanged. A single (non-tuple) input is an image. `_get_params(inputs)` runs once per call and
    its result is in self.params, so all elements share one random draw."""

    def __init__(self, keys=None):
        if keys is None:
            keys = ("image",)
        elif not isinstance(keys, Sequence) or isinstance(keys, str):
            raise ValueError("keys should be a sequence, but got keys={!r}".format(keys))
        for k in keys:
            if self._get_apply(k) is None:
                raise NotImplementedError("{} is unsupported data structure".format(k))
        self.keys = keys
        self.params = None

    def _get_params(self, inputs):
        pass

    def __call__(self, inputs):
        single = not isinstance(inputs, tuple)
        if single:
            inputs = (inputs,)
        self.params = self._get_params(inputs)
        outputs = []
        for i, x in enumerate(inputs):
            outputs.append(self._get_apply(self.keys[i])(x) if i < len(self.keys) else x)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _get_apply(self, key):
        return getattr(self, "_apply_{}".format(key), None)

    def _apply_image(self, image):
        raise NotImplementedError

    def _apply_boxes(self, boxes):
        raise NotImplementedError

    def _apply_mask(self, mask):
        raise NotImplementedError

    def _apply_coords(self, coords):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"


class ToTensor(BaseTransform):
    """PIL image / HWC array -> float32 Tensor in [0, 1] (uint8 input), CHW by default."""

    def __init__(self, data_format="CHW", keys=None):
        super().__init__(keys)
        if data_format not in ("CHW", "HWC"):
            raise ValueError("data_format should be CHW or HWC. Got {!r}".format(data_format))
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Normalize(BaseTransform):
    """(img - mean) / std per channel; a number for mean/std means that value for 3 channels."""

    def __init__(self, mean=0.0, std=1.0, data_format="CHW", to_rgb=False, keys=None):
        super().__init__(keys)
        if isinstance(mean, numbers.Number):
            mean = [mean, mean, mean]
        if isinstance(std, numbers.Number):
            std = [std, std, std]
        self.mean = mean
        self.std = std
        self.data_format = data_format
        self.to_rgb = to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Resize(BaseTransform):
    """Resizes to size (an int: the smaller edge, keeping the aspect ratio; or (h, w))."""

    def __init__(self, size, interpolation="bilinear", keys=None):
        super().__init__(keys)
        if not (isinstance(size, int) or (isinstance(size, Iterable) and len(size) == 2)):
            raise TypeError("Resize: size should be an int or a (h, w) pair, got {!r}".format(size))
        self.size = size
        self.interpolation = interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)


class RandomResizedCrop(BaseTransform):
    """Crops a random region (area fraction in scale, aspect ratio in ratio) and resizes it to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4, 4.0 / 3), interpolation="bilinear", keys=None):
        super().__init__(keys)
        self.size = (size, size) if isinstance(size, int) else size
        if scale[0] > scale[1]:
            raise ValueError("scale should be of kind (min, max), got {}".format(scale))
        if ratio[0] > ratio[1]:
            raise ValueError("ratio should be of kind (min, max), got {}".format(ratio))
        self.scale = scale
        self.ratio = ratio
        self.interpolation = interpolation

    def _get_param(self, image, attempts=10):
        width, height = _image_size(image)
        area = height * width
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(attempts):
            target_area = np.random.uniform(*self.scale) * area
            aspect_ratio = math.exp(np.random.uniform(*log_ratio))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return random.randint(0, height - h), random.randint(0, width - w), h, w
        # Fallback: the largest centred crop whose ratio is within range.
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def _apply_image(self, img):
        i, j, h, w = self._get_param(img)
        return F.resize(F.crop(img, i, j, h, w), self.size, self.interpolation)


class CenterCrop(BaseTransform):
    """Crops the centre region of size (int or (h, w))."""

    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = (int(size), int(size)) if isinstance(size, numbers.Number) else size

    def _apply_image(self, img):
        return F.center_crop(img, self.size)


class RandomHorizontalFlip(BaseTransform):
    """Mirrors left <-> right with probability prob."""

    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError("probability must be between 0 and 1, got {}".format(prob))
        self.prob = prob

    def _apply_image(self, img):
        return F.hflip(img) if random.random() < self.prob else img


class RandomVerticalFlip(BaseTransform):
    """Mirrors top <-> bottom with probability prob."""

    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError("probability must be between 0 and 1, got {}".format(prob))
        self.prob = prob

    def _apply_image(self, img):
        return F.vflip(img) if random.random() < self.prob else img


class Transpose(BaseTransform):
    """Permutes the axes of an array (HWC -> CHW by default); a PIL image becomes an array first and a
    HW array gains a channel axis."""

    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = order

    def _apply_image(self, img):
        if F._is_tensor_image(img):
            return img.transpose(list(self.order))
        if F._is_pil_image(img):
            img = np.asarray(img)
        if img.ndim == 2:
            img = img[..., np.newaxis]
        return img.transpose(self.order)


def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
    """[lo, hi] range for a jitter value: a number v gives [center - v, center + v]; None when the
    range is the identity."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError("If {} is a single number, it must be non negative.".format(name))
        value = [center - value, center + value]
        if clip_first_on_zero:
            value[0] = max(value[0], 0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError("{} values should be between {}".format(name, bound))
    else:
        raise TypeError("{} should be a single number or a list/tuple with length 2.".format(name))
    if value[0] == value[1] == center:
        return None
    return value


class BrightnessTransform(BaseTransform):
    """Brightness scaled by a factor drawn uniformly from [max(0, 1 - value), 1 + value]."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _check_input(value, "brightness")

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_brightness(img, random.uniform(self.value[0], self.value[1]))


class ContrastTransform(BaseTransform):
    """Contrast scaled by a factor drawn uniformly from [max(0, 1 - value), 1 + value]."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        if isinstance(value, numbers.Number) and value < 0:
            raise ValueError("contrast value should be non-negative")
        self.value = _check_input(value, "contrast")

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_contrast(img, random.uniform(self.value[0], self.value[1]))


class SaturationTransform(BaseTransform):
    """Saturation scaled by a factor drawn uniformly from [max(0, 1 - value), 1 + value]."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _check_input(value, "saturation")

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_saturation(img, random.uniform(self.value[0], self.value[1]))


class HueTransform(BaseTransform):
    """Hue shifted by a fraction of a turn drawn uniformly from [-value, value] (value <= 0.5)."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        if isinstance(value, numbers.Number) and not 0 <= value <= 0.5:
            raise ValueError("hue value should be in [0, 0.5], got {}".format(value))
        self.value = _check_input(value, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_hue(img, random.uniform(self.value[0], self.value[1]))


class ColorJitter(BaseTransform):
    """Random brightness, contrast, saturation and hue changes, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys=None):
        super().__init__(keys)
        self.brightness = brightness
        self.contrast = contrast
        self.saturation = saturation
        self.hue = hue

    def _get_param(self, brightness, contrast, saturation, hue):
        transforms = []
        if brightness is not None:
            transforms.append(BrightnessTransform(brightness, self.keys))
        if contrast is not None:
            transforms.append(ContrastTransform(contrast, self.keys))
        if saturation is not None:
            transforms.append(SaturationTransform(saturation, self.keys))
        if hue is not None:
            transforms.append(HueTransform(hue, self.keys))
        random.shuffle(transforms)
        return Compose(transforms)

    def _apply_image(self, img):
        return self._get_param(self.brightness, self.contrast, self.saturation, self.hue)(img)


class RandomCrop(BaseTransform):
    """Crops a random region of size (int or (h, w)), after optional padding. pad_if_needed pads an
    image smaller than size (on the right / bottom, as Paddle) so the crop fits."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant", keys=None):
        super().__init__(keys)
        self.size = (int(size), int(size)) if isinstance(size, numbers.Number) else size
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def _get_param(self, img, output_size):
        w, h = _image_size(img)
        th, tw = output_size
        if w == tw and h == th:
            return 0, 0, h, w
        if h < th or w < tw:
            raise ValueError("RandomCrop: crop size {} is larger than the image ({}x{}); use padding or "
                             "pad_if_needed=True".format(tuple(output_size), h, w))
        return random.randint(0, h - th), random.randint(0, w - tw), th, tw

    def _apply_image(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        w, h = _image_size(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, (self.size[1] - w, 0), self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, (0, self.size[0] - h), self.fill, self.padding_mode)
        i, j, h, w = self._get_param(img, self.size)
        return F.crop(img, i, j, h, w)


class Pad(BaseTransform):
    """Pads the borders (see functional.pad)."""

    def __init__(self, padding, fill=0, padding_mode="constant", keys=None):
        if not isinstance(padding, (numbers.Number, list, tuple)):
            raise TypeError("Pad: padding should be an int or a tuple, got {!r}".format(padding))
        if not isinstance(fill, (numbers.Number, str, list, tuple)):
            raise TypeError("Pad: fill should be a number, str or tuple, got {!r}".format(fill))
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Pad: padding_mode should be constant, edge, reflect or symmetric, got {!r}".format(
                padding_mode))
        if isinstance(padding, list):
            padding = tuple(padding)
        if isinstance(fill, list):
            fill = tuple(fill)
        if isinstance(padding, tuple) and len(padding) not in (2, 4):
            raise ValueError("Padding must be an int or a 2, or 4 element tuple, not a {} element tuple".format(
                len(padding)))
        super().__init__(keys)
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomRotation(BaseTransform):
    """Rotates by an angle drawn uniformly from degrees ((min, max), or a number d for (-d, d))."""

    def __init__(self, degrees, interpolation="nearest", expand=False, center=None, fill=0, keys=None):
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError("If degrees is a single number, it must be positive.")
            self.degrees = (-degrees, degrees)
        else:
            if len(degrees) != 2:
                raise ValueError("If degrees is a sequence, it must be of len 2.")
            self.degrees = degrees
        super().__init__(keys)
        self.interpolation = interpolation
        self.expand = expand
        self.center = center
        self.fill = fill

    def _apply_image(self, img):
        angle = random.uniform(self.degrees[0], self.degrees[1])
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError("If {} is a single number, it must be positive.".format(name))
        x = [-x, x]
    elif not isinstance(x, Sequence) or len(x) not in req_sizes:
        raise ValueError("{} should be a number or a sequence of length {}.".format(
            name, " or ".join(str(s) for s in req_sizes)))
    return [float(d) for d in x]


class RandomAffine(BaseTransform):
    """Random affine transform: angle uniform in degrees, translation up to translate (fractions of
    width, height), scale uniform in scale, shear uniform in shear ((min, max) for x, or 4 values for
    x and y)."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation="nearest", fill=0,
                 center=None, keys=None):
        self.degrees = _setup_angle(degrees, "degrees", (2,))
        super().__init__(keys)
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("interpolation should be nearest, bilinear or bicubic, got {!r}".format(interpolation))
        self.interpolation = interpolation
        if translate is not None:
            if not isinstance(translate, Sequence) or len(translate) != 2:
                raise ValueError("translate should be a sequence of length 2, got {!r}".format(translate))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1, got {!r}".format(translate))
        self.translate = translate
        if scale is not None:
            if not isinstance(scale, Sequence) or len(scale) != 2:
                raise ValueError("scale should be a sequence of length 2, got {!r}".format(scale))
            if not all(s > 0 for s in scale):
                raise ValueError("scale values should be positive, got {!r}".format(scale))
        self.scale = scale
        self.shear = _setup_angle(shear, "shear", (2, 4)) if shear is not None else None
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill
        if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
            raise ValueError("center should be a sequence of length 2, got {!r}".format(center))
        self.center = center

    def _get_param(self, img_size, degrees, translate=None, scale_ranges=None, shears=None):
        angle = random.uniform(degrees[0], degrees[1])
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(random.uniform(-max_dx, max_dx)), int(random.uniform(-max_dy, max_dy)))
        else:
            translations = (0, 0)
        scale = random.uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = random.uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = random.uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def _apply_image(self, img):
        w, h = _image_size(img)
        ret = self._get_param([w, h], self.degrees, self.translate, self.scale, self.shear)
        return F.affine(img, *ret, interpolation=self.interpolation, fill=self.fill, center=self.center)


class RandomPerspective(BaseTransform):
    """With probability prob, a random perspective transform moving each corner inwards by up to
    distortion_scale of half the width / height."""

    def __init__(self, prob=0.5, distortion_scale=0.5, interpolation="nearest", fill=0, keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError("probability must be between 0 and 1, got {}".format(prob))
        if not 0 <= distortion_scale <= 1:
            raise ValueError("distortion_scale must be between 0 and 1, got {}".format(distortion_scale))
        if interpolation not in ("nearest", "bilinear", "bicubic"):
            raise ValueError("interpolation should be nearest, bilinear or bicubic, got {!r}".format(interpolation))
        self.prob = prob
        self.distortion_scale = distortion_scale
        self.interpolation = interpolation
        self.fill = fill

    def get_params(self, width, height, distortion_scale):
        hh, hw = height // 2, width // 2
        dx, dy = int(distortion_scale * hw), int(distortion_scale * hh)
        topleft = [int(random.uniform(0, dx + 1)), int(random.uniform(0, dy + 1))]
        topright = [int(random.uniform(width - dx - 1, width)), int(random.uniform(0, dy + 1))]
        botright = [int(random.uniform(width - dx - 1, width)), int(random.uniform(height - dy - 1, height))]
        botleft = [int(random.uniform(0, dx + 1)), int(random.uniform(height - dy - 1, height))]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def _apply_image(self, img):
        width, height = _image_size(img)
        if random.random() < self.prob:
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, self.fill)
        return img


class Grayscale(BaseTransform):
    """RGB -> grey with num_output_channels (1 or 3) channels."""

    def __init__(self, num_output_channels=1, keys=None):
        super().__init__(keys)
        if num_output_channels not in (1, 3):
            raise ValueError("num_output_channels should be either 1 or 3, got {!r}".format(num_output_channels))
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return F.to_grayscale(img, self.num_output_channels)


class RandomErasing(BaseTransform):
    """With probability prob, sets a random rectangle (area fraction in scale, aspect ratio in ratio)
    to value (a number, one per channel, or 'random' for normal noise)."""

    def __init__(self, prob=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False, keys=None):
        super().__init__(keys)
        if not (isinstance(scale, (tuple, list)) and 0 <= scale[0] <= scale[1] <= 1):
            raise ValueError("scale should be of kind (min, max) and in range [0, 1], got {!r}".format(scale))
        if not (isinstance(ratio, (tuple, list)) and 0 <= ratio[0] <= ratio[1]):
            raise ValueError("ratio should be of kind (min, max), got {!r}".format(ratio))
        if not 0 <= prob <= 1:
            raise ValueError("The probability should be in range [0, 1], got {}".format(prob))
        if isinstance(value, str) and value != "random":
            raise ValueError("value must be 'random' when type is str")
        self.prob = prob
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace

    def _get_param(self, img, value):
        if F._is_pil_image(img):
            arr = np.asarray(img)
            h, w = arr.shape[:2]
            c = arr.shape[2] if arr.ndim == 3 else 1
        elif F._is_numpy_image(img):
            h, w = img.shape[:2]
            c = img.shape[2] if img.ndim == 3 else 1
        else:
            c, h, w = img.shape[-3], img.shape[-2], img.shape[-1]
        log_ratio = np.log(self.ratio)
        for _ in range(10):
            erase_area = np.random.uniform(*self.scale) * h * w
            aspect = np.exp(np.random.uniform(*log_ratio))
            eh = int(round(np.sqrt(erase_area * aspect)))
            ew = int(round(np.sqrt(erase_area / aspect)))
            if eh >= h or ew >= w:
                continue
            if F._is_tensor_image(img):
                if value is None:
                    from ... import to_tensor
                    v = to_tensor(np.random.normal(size=[c, eh, ew]).astype(np.float32)).astype(img.dtype)
                else:
                    from ... import to_tensor
                    v = to_tensor(np.asarray(value, dtype=np.float32)[:, None, None]).astype(img.dtype)
            elif value is None:
                v = np.random.normal(size=[eh, ew, c]) * 255
            else:
                v = np.asarray(value)[None, None, :]
            top = np.random.randint(0, h - eh + 1)
            left = np.random.randint(0, w - ew + 1)
            return top, left, eh, ew, v
        return None

    def _apply_image(self, img):
        if random.random() >= self.prob:
            return img
        if isinstance(self.value, numbers.Number):
            value = [self.value]
        elif isinstance(self.value, str):
            value = None
        else:
            value = self.value
        if value is not None and len(value) not in (1, 3):
            raise ValueError("Value should be a single number or a sequence with length equals to image's channel.")
        p = self._get_param(img, value)
        if p is None:
            return img
        return F.erase(img, *p, inplace=self.inplace)
