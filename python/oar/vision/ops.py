"""oar.vision.ops: detection operators, as Paddle's paddle.vision.ops.

Core ops with cpu kernels (framework/src/ops_vision.cc, plugins/cpu/detection.cc): roi_align, roi_pool,
psroi_pool (with gradients for x), deform_im2col (the bilinear sampling of deform_conv2d, with gradients
for x, offset and mask; the product with the weight is a matmul) and nms's greedy pass. box_coder and
yolo_box are compositions of oar ops, so they run on any device and are differentiable; prior_box
depends only on shapes, so its constant boxes are built on the host.
"""
import math
import numbers

import numpy as np

from .. import _C
from ..nn import functional as F
from ..nn.initializer import Normal
from ..nn.layer.layers import Layer

__all__ = ["nms", "box_coder", "prior_box", "yolo_box", "yolo_loss", "roi_align", "RoIAlign", "roi_pool", "RoIPool",
           "psroi_pool", "PSRoIPool", "deform_conv2d", "DeformConv2D", "distribute_fpn_proposals", "matrix_nms",
           "generate_proposals",
           "read_file", "decode_jpeg"]

_roi_align = _C.Op("roi_align")
_roi_pool = _C.Op("roi_pool")
_psroi_pool = _C.Op("psroi_pool")
_deform_im2col = _C.Op("deform_im2col")
_nms_keep = _C.Op("nms", "iou_threshold")
_fill = _C.Op("fill", "shape", "value", "dtype")

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _dtype_name(t):
    return str(t.dtype).replace("paddle.", "").replace("oar.", "")


def _check_float(op, name, t, allowed=_FLOATS):
    if not isinstance(t, _C.Tensor):
        raise TypeError("{}: {} must be a Tensor, got {}".format(op, name, type(t).__name__))
    if _dtype_name(t) not in allowed:
        raise TypeError("{}: {} must be {}, got {}".format(op, name, " or ".join(allowed), _dtype_name(t)))


def _check_rois(op, x, boxes, boxes_num):
    _check_float(op, "x", x)
    _check_float(op, "boxes", boxes, ("float32", "float64"))
    if boxes_num is None:
        raise ValueError("{}: boxes_num is required (the number of boxes of each image)".format(op))
    if not isinstance(boxes_num, _C.Tensor) or _dtype_name(boxes_num) not in ("int32", "int64"):
        raise TypeError("{}: boxes_num must be an int32 or int64 Tensor, got {!r}".format(op, boxes_num))


def _output_size(op, output_size):
    if isinstance(output_size, bool) or not isinstance(output_size, (int, tuple)):
        raise TypeError("{}: output_size must be an int or a tuple of two ints, got {!r}".format(op, output_size))
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    if len(output_size) != 2 or not all(isinstance(v, int) and v > 0 for v in output_size):
        raise ValueError("{}: output_size must be positive (h, w), got {!r}".format(op, output_size))
    return output_size


# ---- RoI pooling ------------------------------------------------------------------------------------

def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, name=None):
    """RoI Align (Mask R-CNN): each box is cut into output_size bins, each the mean of bilinear samples
    (sampling_ratio per side, or ceil(bin size) when <= 0). boxes [R, 4] (x1, y1, x2, y2), boxes_num [N];
    returns [R, C, h, w]. aligned shifts the box by -0.5 pixel (Detectron2)."""
    ph, pw = _output_size("roi_align", output_size)
    _check_rois("roi_align", x, boxes, boxes_num)
    return _roi_align(x, boxes, boxes_num, pooled_height=ph, pooled_width=pw, spatial_scale=float(spatial_scale),
                      sampling_ratio=int(sampling_ratio), aligned=int(bool(aligned)))


def roi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """RoI max pooling (Fast R-CNN): boxes rounded to the feature grid, max over each bin (0 if empty)."""
    ph, pw = _output_size("roi_pool", output_size)
    _check_rois("roi_pool", x, boxes, boxes_num)
    out, _ = _roi_pool(x, boxes, boxes_num, pooled_height=ph, pooled_width=pw, spatial_scale=float(spatial_scale))
    return out


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Position-sensitive RoI average pooling (R-FCN): x has C = out_c * h * w channels; output
    channel c of bin (i, j) averages input channel (c * h + i) * w + j."""
    ph, pw = _output_size("psroi_pool", output_size)
    _check_rois("psroi_pool", x, boxes, boxes_num)
    if x.ndim != 4:
        raise ValueError("psroi_pool: x must be 4-D [N, C, H, W], got shape {}".format(x.shape))
    if x.shape[1] % (ph * pw) != 0:
        raise ValueError("psroi_pool: the channels of x ({}) must be divisible by output_size h * w ({})".format(
            x.shape[1], ph * pw))
    return _psroi_pool(x, boxes, boxes_num, output_channels=x.shape[1] // (ph * pw), pooled_height=ph,
                       pooled_width=pw, spatial_scale=float(spatial_scale))


class RoIAlign(Layer):
    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num, aligned=True):
        return roi_align(x, boxes, boxes_num, self._output_size, self._spatial_scale, aligned=aligned)


class RoIPool(Layer):
    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return roi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)

    def extra_repr(self):
        return "output_size={}, spatial_scale={}".format(self._output_size, self._spatial_scale)


class PSRoIPool(Layer):
    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, x, boxes, boxes_num):
        return psroi_pool(x, boxes, boxes_num, self.output_size, self.spatial_scale)


# ---- deformable convolution -----------------------------------------------------------------------

def _pair(v, what):
    if isinstance(v, numbers.Integral):
        return [int(v), int(v)]
    v = list(v)
    if len(v) != 2 or not all(isinstance(i, numbers.Integral) for i in v):
        raise ValueError("deform_conv2d: {} must be an int or two ints, got {!r}".format(what, v))
    return [int(i) for i in v]


def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, deformable_groups=1, groups=1,
                  mask=None, name=None):
    """Deformable convolution v1 (mask None) / v2: each kernel tap samples x bilinearly at its place
    plus offset [N, 2*dg*kh*kw, Ho, Wo] (h then w per tap), times mask [N, dg*kh*kw, Ho, Wo]."""
    _check_float("deform_conv2d", "x", x)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError("deform_conv2d: x and weight must be 4-D, got shapes {} and {}".format(x.shape, weight.shape))
    if not isinstance(groups, int) or groups < 1 or x.shape[1] % groups or weight.shape[0] % groups:
        raise ValueError("deform_conv2d: groups ({!r}) must be a positive int dividing the in and out channels "
                         "({}, {})".format(groups, x.shape[1], weight.shape[0]))
    if weight.shape[1] * groups != x.shape[1]:
        raise ValueError("deform_conv2d: x has {} channels but weight.shape[1] ({}) * groups ({}) = {}".format(
            x.shape[1], weight.shape[1], groups, weight.shape[1] * groups))
    kh, kw = weight.shape[2], weight.shape[3]
    n = x.shape[0]
    if mask is None:
        if offset.ndim != 4:
            raise ValueError("deform_conv2d: offset must be 4-D, got shape {}".format(offset.shape))
        mask = _fill([n, offset.shape[1] // 2, offset.shape[2], offset.shape[3]], 1.0, x.dtype, place=x.place)
    cols = _deform_im2col(x, offset, mask, kernel_sizes=[kh, kw], strides=_pair(stride, "stride"),
                          paddings=_pair(padding, "padding"), dilations=_pair(dilation, "dilation"),
                          deformable_groups=int(deformable_groups))
    ho, wo = offset.shape[2], offset.shape[3]
    cout = weight.shape[0]
    w = weight.reshape([groups, cout // groups, weight.shape[1] * kh * kw])
    out = _C.Op("matmul")(w, cols.reshape([n, groups, weight.shape[1] * kh * kw, ho * wo]))
    out = out.reshape([n, cout, ho, wo])
    if bias is not None:
        out = out + bias.reshape([1, cout, 1, 1])
    return out


class DeformConv2D(Layer):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, deformable_groups=1,
                 groups=1, weight_attr=None, bias_attr=None):
        super().__init__()
        if weight_attr is False:
            raise ValueError("DeformConv2D: weight_attr must not be False (a convolution needs its weight)")
        if in_channels % groups != 0:
            raise ValueError("DeformConv2D: in_channels ({}) must be divisible by groups ({})".format(
                in_channels, groups))
        self._stride, self._padding, self._dilation = stride, padding, dilation
        self._deformable_groups, self._groups = deformable_groups, groups
        k = _pair(kernel_size, "kernel_size")
        std = (2.0 / (k[0] * k[1] * in_channels)) ** 0.5
        self.weight = self.create_parameter(shape=[out_channels, in_channels // groups] + k, attr=weight_attr,
                                            default_initializer=Normal(0.0, std))
        self.bias = self.create_parameter(shape=[out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x, offset, mask=None):
        return deform_conv2d(x, offset, self.weight, self.bias, self._stride, self._padding, self._dilation,
                             self._deformable_groups, self._groups, mask)


# ---- nms ------------------------------------------------------------------------------------------

def _nms_sorted(boxes, iou_threshold):
    from ..tensor.search import nonzero
    keep = _nms_keep(boxes, iou_threshold=float(iou_threshold))
    return nonzero(keep).reshape([-1])


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None, top_k=None):
    """Greedy non-maximum suppression: a box is dropped when its IoU with a kept box of higher score
    (of the same category when category_idxs is given) exceeds iou_threshold. Returns the kept indices
    (int64), by descending score when scores are given, else in input order; the first top_k."""
    from ..tensor.search import argsort, nonzero
    _check_float("nms", "boxes", boxes)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError("nms: boxes must have shape [num_boxes, 4], got {}".format(boxes.shape))
    if scores is None:
        return _nms_sorted(boxes, iou_threshold)
    if list(scores.shape) != [boxes.shape[0]]:
        raise ValueError("nms: scores must have shape [{}], got {}".format(boxes.shape[0], scores.shape))
    if category_idxs is None:
        order = argsort(scores, descending=True)
        return order[_nms_sorted(boxes[order], iou_threshold)]
    if top_k is not None and top_k > scores.shape[0]:
        raise ValueError("nms: top_k ({}) must be at most the number of boxes ({})".format(top_k, scores.shape[0]))
    if categories is None:
        raise ValueError("nms: categories (the list of category ids) is required with category_idxs")
    kept = []
    for cat in categories:
        idx = nonzero(category_idxs == int(cat)).reshape([-1])
        if idx.shape[0] == 0:
            continue
        order = idx[argsort(scores[idx], descending=True)]
        kept.append(order[_nms_sorted(boxes[order], iou_threshold)])
    if not kept:
        return _fill([0], 0.0, _C.int64, place=boxes.place)
    from ..tensor.manipulation import concat
    keep = concat(kept)
    keep = keep[argsort(scores[keep], descending=True)]
    return keep if top_k is None else keep[:top_k]


# ---- box coding -----------------------------------------------------------------------------------

def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True, axis=0,
              name=None):
    """Encodes target boxes against prior boxes as (dx, dy, log dw, log dh) / variance, or decodes them
    (Paddle's box_coder). encode: target [N, 4], prior [M, 4] -> [N, M, 4]. decode: target [N, M, 4];
    the prior [M, 4] pairs with target[:, m] (axis 0) or prior [N, 4] with target[n] (axis 1)."""
    from ..tensor.manipulation import stack
    _check_float("box_coder", "prior_box", prior_box, ("float32", "float64"))
    _check_float("box_coder", "target_box", target_box, ("float32", "float64"))
    if code_type not in ("encode_center_size", "decode_center_size"):
        raise ValueError("box_coder: code_type must be 'encode_center_size' or 'decode_center_size', got {!r}".format(
            code_type))
    if prior_box.ndim != 2 or prior_box.shape[1] != 4:
        raise ValueError("box_coder: prior_box must have shape [M, 4], got {}".format(prior_box.shape))
    if axis not in (0, 1):
        raise ValueError("box_coder: axis must be 0 or 1, got {!r}".format(axis))
    if isinstance(prior_box_var, _C.Tensor):
        var = prior_box_var
        if list(var.shape) != list(prior_box.shape):
            raise ValueError("box_coder: prior_box_var must have prior_box's shape {}, got {}".format(
                prior_box.shape, var.shape))
    elif isinstance(prior_box_var, (list, tuple)):
        if len(prior_box_var) != 4:
            raise ValueError("box_coder: prior_box_var must list 4 values, got {!r}".format(prior_box_var))
        var = None
        var_list = [float(v) for v in prior_box_var]
    elif prior_box_var is None:
        var = None
    else:
        raise TypeError("box_coder: prior_box_var must be a Tensor, a list/tuple of 4 floats or None, got {}".format(
            type(prior_box_var).__name__))
    norm = 0.0 if box_normalized else 1.0
    pw = prior_box[:, 2] - prior_box[:, 0] + norm
    ph = prior_box[:, 3] - prior_box[:, 1] + norm
    pcx = prior_box[:, 0] + pw * 0.5
    pcy = prior_box[:, 1] + ph * 0.5

    def variance(i):
        if var is not None:
            return var[:, i]
        if isinstance(prior_box_var, (list, tuple)):
            return var_list[i]
        return None

    if code_type == "encode_center_size":
        if target_box.ndim != 2 or target_box.shape[1] != 4:
            raise ValueError("box_coder: to encode, target_box must have shape [N, 4], got {}".format(
                target_box.shape))
        tw = (target_box[:, 2] - target_box[:, 0] + norm).reshape([-1, 1])
        th = (target_box[:, 3] - target_box[:, 1] + norm).reshape([-1, 1])
        # Paddle: the target's centre is (x1 + x2) / 2 even unnormalised (the prior's has the + 1)
        tcx = ((target_box[:, 0] + target_box[:, 2]) * 0.5).reshape([-1, 1])
        tcy = ((target_box[:, 1] + target_box[:, 3]) * 0.5).reshape([-1, 1])
        parts = [(tcx - pcx) / pw, (tcy - pcy) / ph, ((tw / pw).abs()).log(), ((th / ph).abs()).log()]
        out = []
        for i, p in enumerate(parts):
            v = variance(i)
            out.append(p if v is None else p / v)
        return stack(out, axis=2)
    if target_box.ndim != 3 or target_box.shape[2] != 4:
        raise ValueError("box_coder: to decode, target_box must have shape [N, M, 4], got {}".format(target_box.shape))
    want = target_box.shape[1] if axis == 0 else target_box.shape[0]
    if prior_box.shape[0] != want:
        raise ValueError("box_coder: prior_box has {} boxes, target_box.shape[{}] is {}".format(
            prior_box.shape[0], 1 - axis, want))

    def lay(t):  # a per-prior [M] value laid along the prior axis of [N, M]
        if not isinstance(t, _C.Tensor):
            return t
        return t.reshape([1, -1]) if axis == 0 else t.reshape([-1, 1])

    def v(i):
        x = variance(i)
        return 1.0 if x is None else lay(x)

    pw_, ph_, pcx_, pcy_ = lay(pw), lay(ph), lay(pcx), lay(pcy)
    cx = v(0) * target_box[:, :, 0] * pw_ + pcx_
    cy = v(1) * target_box[:, :, 1] * ph_ + pcy_
    w = (v(2) * target_box[:, :, 2]).exp() * pw_
    h = (v(3) * target_box[:, :, 3]).exp() * ph_
    return stack([cx - w * 0.5, cy - h * 0.5, cx + w * 0.5 - norm, cy + h * 0.5 - norm], axis=2)


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.0], variance=[0.1, 0.1, 0.2, 0.2],
              flip=False, clip=False, steps=[0.0, 0.0], offset=0.5, min_max_aspect_ratios_order=False, name=None):
    """SSD prior boxes for each cell of input's [H, W] grid, normalised by image's size. Returns
    (boxes, variances), both [H, W, num_priors, 4]. The boxes depend only on shapes: built on the host."""
    if input.ndim != 4 or image.ndim != 4:
        raise ValueError("prior_box: input and image must be 4-D [N, C, H, W], got {} and {}".format(
            input.shape, image.shape))
    if isinstance(min_sizes, numbers.Number):
        min_sizes = [min_sizes]
    if isinstance(max_sizes, numbers.Number):
        max_sizes = [max_sizes]
    if isinstance(aspect_ratios, numbers.Number):
        aspect_ratios = [aspect_ratios]
    min_sizes = [float(v) for v in min_sizes]
    max_sizes = [float(v) for v in (max_sizes or [])]
    if max_sizes and len(max_sizes) != len(min_sizes):
        raise ValueError("prior_box: max_sizes must have as many values as min_sizes ({}), got {}".format(
            len(min_sizes), len(max_sizes)))
    if len(variance) != 4:
        raise ValueError("prior_box: variance must list 4 values, got {!r}".format(variance))
    if len(steps) != 2:
        raise ValueError("prior_box: steps must list 2 values, got {!r}".format(steps))
    ars = [1.0]
    for ar in aspect_ratios:
        for a in ([ar, 1.0 / ar] if flip else [ar]):
            if all(abs(a - b) > 1e-6 for b in ars):
                ars.append(float(a))
    fh, fw = input.shape[2], input.shape[3]
    ih, iw = image.shape[2], image.shape[3]
    sw = steps[0] if steps[0] != 0 else iw / fw
    sh = steps[1] if steps[1] != 0 else ih / fh
    cells = []
    for i, ms in enumerate(min_sizes):
        sizes = []
        if min_max_aspect_ratios_order:
            sizes.append((ms, ms))
            if max_sizes:
                s = math.sqrt(ms * max_sizes[i])
                sizes.append((s, s))
            for a in ars:
                if abs(a - 1.0) < 1e-6:
                    continue
                sizes.append((ms * math.sqrt(a), ms / math.sqrt(a)))
        else:
            for a in ars:
                sizes.append((ms * math.sqrt(a), ms / math.sqrt(a)))
            if max_sizes:
                s = math.sqrt(ms * max_sizes[i])
                sizes.append((s, s))
        cells.extend(sizes)
    wh = np.asarray(cells, dtype=np.float64)  # [P, 2] box widths and heights
    cx = (np.arange(fw) + offset) * sw
    cy = (np.arange(fh) + offset) * sh
    cxg = cx[None, :, None]
    cyg = cy[:, None, None]
    bw = wh[None, None, :, 0] / 2
    bh = wh[None, None, :, 1] / 2
    boxes = np.stack(np.broadcast_arrays((cxg - bw) / iw, (cyg - bh) / ih, (cxg + bw) / iw, (cyg + bh) / ih), axis=-1)
    if clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    var = np.broadcast_to(np.asarray(variance, dtype=np.float64), boxes.shape)
    dt = _dtype_name(input)
    from ..tensor.creation import to_tensor
    return (to_tensor(boxes.astype(dt), place=input.place), to_tensor(np.ascontiguousarray(var).astype(dt),
                                                                     place=input.place))


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None,
             scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """Decodes a YOLOv3 head x [N, A*(5+class_num), H, W] into boxes [N, A*H*W, 4] in image pixels and
    scores [N, A*H*W, class_num]; predictions with objectness below conf_thresh give zeros."""
    from ..tensor.manipulation import concat, stack
    _check_float("yolo_box", "x", x, ("float32", "float64"))
    an = len(anchors) // 2
    if len(anchors) % 2 or an == 0:
        raise ValueError("yolo_box: anchors must list (w, h) pairs, got {!r}".format(anchors))
    if x.ndim != 4:
        raise ValueError("yolo_box: x must be 4-D [N, C, H, W], got shape {}".format(x.shape))
    n, c, h, w = x.shape
    per = 5 + class_num
    want = an * (per + (1 if iou_aware else 0))
    if c != want:
        raise ValueError("yolo_box: x has {} channels; anchors ({}) * (5 + class_num ({})){} needs {}".format(
            c, an, class_num, " + iou" if iou_aware else "", want))
    if list(img_size.shape) != [n, 2]:
        raise ValueError("yolo_box: img_size must have shape [{}, 2], got {}".format(n, img_size.shape))
    dt = _dtype_name(x)
    iou = None
    if iou_aware:
        iou = F.sigmoid(x[:, :an].reshape([n, an, 1, h, w]))
        x = x[:, an:]
    p = x.reshape([n, an, per, h, w])
    img = img_size.astype(dt)
    img_h = img[:, 0].reshape([n, 1, 1, 1])
    img_w = img[:, 1].reshape([n, 1, 1, 1])
    from ..tensor.creation import to_tensor
    gx = to_tensor(np.arange(w, dtype=dt).reshape(1, 1, 1, w), place=x.place)
    gy = to_tensor(np.arange(h, dtype=dt).reshape(1, 1, h, 1), place=x.place)
    aw = to_tensor(np.asarray(anchors[0::2], dtype=dt).reshape(1, an, 1, 1), place=x.place)
    ah = to_tensor(np.asarray(anchors[1::2], dtype=dt).reshape(1, an, 1, 1), place=x.place)
    bias = -0.5 * (scale_x_y - 1.0)
    cx = (gx + F.sigmoid(p[:, :, 0]) * scale_x_y + bias) * img_w / w
    cy = (gy + F.sigmoid(p[:, :, 1]) * scale_x_y + bias) * img_h / h
    bw = p[:, :, 2].exp() * aw * img_w / (downsample_ratio * w)
    bh = p[:, :, 3].exp() * ah * img_h / (downsample_ratio * h)
    conf = F.sigmoid(p[:, :, 4])
    if iou_aware:
        conf = conf.pow(1.0 - iou_aware_factor) * iou[:, :, 0].pow(iou_aware_factor)
    keep = (conf >= conf_thresh).astype(dt)
    x1, y1, x2, y2 = cx - bw * 0.5, cy - bh * 0.5, cx + bw * 0.5, cy + bh * 0.5
    if clip_bbox:
        zero = _fill([], 0.0, x.dtype, place=x.place)
        x1 = F.relu(x1 - zero)
        y1 = F.relu(y1 - zero)
        x2 = _minimum(x2, img_w - 1)
        y2 = _minimum(y2, img_h - 1)
    boxes = stack([x1, y1, x2, y2], axis=-1) * keep.unsqueeze(-1)  # [n, an, h, w, 4]
    scores = F.sigmoid(p[:, :, 5:]) * (conf * keep).unsqueeze(2)  # [n, an, cls, h, w]
    boxes = boxes.reshape([n, an * h * w, 4])
    scores = scores.transpose([0, 1, 3, 4, 2]).reshape([n, an * h * w, class_num])
    return boxes, scores


def _minimum(a, b):
    from ..tensor.math import minimum
    return minimum(a, b)


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, pixel_offset=False,
                             rois_num=None, name=None):
    """Assigns each RoI to an FPN level floor(refer_level + log2(sqrt(area) / refer_scale)), clipped to
    [min_level, max_level]. Returns (multi_rois per level, restore_ind [R, 1], rois_num per level or None)."""
    from ..tensor.manipulation import concat
    from ..tensor.search import argsort, nonzero
    _check_float("distribute_fpn_proposals", "fpn_rois", fpn_rois, ("float32", "float64"))
    if fpn_rois.ndim != 2 or fpn_rois.shape[1] != 4:
        raise ValueError("distribute_fpn_proposals: fpn_rois must have shape [R, 4], got {}".format(fpn_rois.shape))
    if not min_level <= refer_level <= max_level:
        raise ValueError("distribute_fpn_proposals: need min_level <= refer_level <= max_level, got {} {} {}".format(
            min_level, refer_level, max_level))
    off = 1.0 if pixel_offset else 0.0
    w = fpn_rois[:, 2] - fpn_rois[:, 0] + off
    h = fpn_rois[:, 3] - fpn_rois[:, 1] + off
    area = F.relu(w) * F.relu(h)
    scale = area.sqrt()
    lvl = (scale / refer_scale + 1e-8).log() / math.log(2.0) + refer_level
    lvl = lvl.floor().clip(min_level, max_level).astype("int64")
    r = fpn_rois.shape[0]
    if rois_num is not None:
        from ..tensor.manipulation import repeat_interleave
        img = repeat_interleave(_C.Op("arange", "start", "end", "step", "dtype")(0, rois_num.shape[0], 1, _C.int64,
                                                                                  place=fpn_rois.place),
                                rois_num.astype("int64"), 0)
    multi, order, nums = [], [], []
    for level in range(min_level, max_level + 1):
        idx = nonzero(lvl == level).reshape([-1])
        multi.append(fpn_rois[idx])
        order.append(idx)
        if rois_num is not None:
            counts = [int((img[idx] == i).astype("int32").sum()) if idx.shape[0] else 0
                      for i in range(rois_num.shape[0])]
            from ..tensor.creation import to_tensor
            nums.append(to_tensor(np.asarray(counts, dtype="int32"), place=fpn_rois.place))
    restore = argsort(concat(order)).reshape([r, 1]).astype("int32")
    return multi, restore, (nums if rois_num is not None else None)


def _pairwise_iou(b, normalized):
    """IoU matrix of boxes b [k, 4] with Paddle's rules: +1 pixel sizes unless normalized, 0 for
    boxes that do not touch."""
    off = 0.0 if normalized else 1.0
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    area = np.where((x2 < x1) | (y2 < y1), 0.0, (x2 - x1 + off) * (y2 - y1 + off))
    iw = np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]) + off
    ih = np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]) + off
    inter = iw * ih
    apart = (x1[None] > x2[:, None]) | (x2[None] < x1[:, None]) | (y1[None] > y2[:, None]) | (y2[None] < y1[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area[None] - inter)
    return np.where(apart, 0.0, iou)


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               gaussian_sigma=2.0, background_label=0, normalized=True, return_index=False, return_rois_num=True,
               name=None):
    """Matrix NMS (SOLOv2): per class, each box's score is decayed by its overlaps with higher-scored
    boxes (linear (1 - iou) / (1 - iou_max) or gaussian exp((iou_max^2 - iou^2) * sigma)), boxes whose
    decayed score exceeds post_threshold are kept, then the best keep_top_k per image. bboxes [N, M, 4],
    scores [N, C, M]. Returns (out [K, 6] = label, score, x1, y1, x2, y2; rois_num [N] int32 or None;
    index [K, 1] int32 or None). Post-processing without gradient: computed on the host."""
    from ..tensor.creation import to_tensor
    _check_float("matrix_nms", "bboxes", bboxes, ("float32", "float64"))
    _check_float("matrix_nms", "scores", scores, ("float32", "float64"))
    if bboxes.ndim != 3 or bboxes.shape[2] != 4 or scores.ndim != 3 or scores.shape[0] != bboxes.shape[0] \
            or scores.shape[2] != bboxes.shape[1]:
        raise ValueError("matrix_nms: bboxes must be [N, M, 4] and scores [N, C, M], got {} and {}".format(
            bboxes.shape, scores.shape))
    b_all = bboxes.numpy().astype(np.float64)
    s_all = scores.numpy().astype(np.float64)
    n_img, n_cls, m = s_all.shape
    rows, nums, index = [], [], []
    for n in range(n_img):
        dets = []  # (score, label, box index)
        for c in range(n_cls):
            if c == background_label:
                continue
            s = s_all[n, c]
            order = np.argsort(-s, kind="stable")
            order = order[s[order] > score_threshold]
            if nms_top_k > -1:
                order = order[:nms_top_k]
            k = len(order)
            if k == 0:
                continue
            iou = np.tril(_pairwise_iou(b_all[n, order], normalized), -1)  # iou[i, j], j < i
            iou_max = iou.max(axis=1)  # each box's largest overlap with a better one
            if use_gaussian:
                decay = np.exp((iou_max[None, :] ** 2 - iou ** 2) * gaussian_sigma)
            else:
                decay = (1 - iou) / (1 - iou_max[None, :])
            lower = np.tril(np.ones((k, k), bool), -1)
            decay = np.where(lower, decay, 1.0).min(axis=1)
            ds = decay * s[order]
            for i in np.nonzero(ds > post_threshold)[0]:
                dets.append((ds[i], c, order[i]))
        dets.sort(key=lambda d: -d[0])
        if keep_top_k > -1:
            dets = dets[:keep_top_k]
        for sc, c, i in dets:
            rows.append([c, sc] + list(b_all[n, i]))
            index.append(n * m + i)
        nums.append(len(dets))
    dt = _dtype_name(bboxes)
    out = to_tensor(np.asarray(rows, np.float64).reshape(-1, 6).astype(dt), place=bboxes.place)
    rois_num = to_tensor(np.asarray(nums, np.int32), place=bboxes.place) if return_rois_num else None
    idx = to_tensor(np.asarray(index, np.int32).reshape(-1, 1), place=bboxes.place) if return_index else None
    return out, rois_num, idx


def generate_proposals(scores, bbox_deltas, img_size, anchors, variances, pre_nms_top_n=6000, post_nms_top_n=1000,
                       nms_thresh=0.5, min_size=0.1, eta=1.0, pixel_offset=False, return_rois_num=False, name=None):
    """RPN proposals (Faster R-CNN; Paddle's generate_proposals v2): per image, the pre_nms_top_n best
    anchors are decoded with their deltas and variances (log-size deltas capped at log(1000/16)),
    clipped to the image, boxes smaller than max(min_size, 1) dropped, greedy NMS (adaptive with
    eta < 1) and the first post_nms_top_n kept. scores [N, A, H, W], bbox_deltas [N, 4A, H, W],
    img_size [N, 2] (h, w), anchors and variances [H, W, A, 4]. Returns (rois [R, 4], probs [R, 1],
    rois_num [N] int32 or None). Post-processing without gradient: computed on the host."""
    from ..tensor.creation import to_tensor
    for what, t in (("scores", scores), ("bbox_deltas", bbox_deltas), ("anchors", anchors), ("variances", variances)):
        _check_float("generate_proposals", what, t, ("float32", "float64"))
    if scores.ndim != 4:
        raise ValueError("generate_proposals: scores must be [N, A, H, W], got shape {}".format(scores.shape))
    n_img, a, h, w = scores.shape
    if list(bbox_deltas.shape) != [n_img, 4 * a, h, w]:
        raise ValueError("generate_proposals: bbox_deltas must be [{}, {}, {}, {}], got {}".format(
            n_img, 4 * a, h, w, bbox_deltas.shape))
    for what, t in (("anchors", anchors), ("variances", variances)):
        if int(np.prod(t.shape)) != h * w * a * 4:
            raise ValueError("generate_proposals: {} must hold [H, W, A, 4] = [{}, {}, {}, 4] values, got shape {}".format(
                what, h, w, a, t.shape))
    if list(img_size.shape) != [n_img, 2]:
        raise ValueError("generate_proposals: img_size must be [{}, 2], got {}".format(n_img, img_size.shape))
    off = 1.0 if pixel_offset else 0.0
    sc_all = scores.numpy().astype(np.float64)
    dl_all = bbox_deltas.numpy().astype(np.float64)
    anc = anchors.numpy().astype(np.float64).reshape(-1, 4)
    var = variances.numpy().astype(np.float64).reshape(-1, 4)
    sizes = img_size.numpy().astype(np.float64)
    cap = math.log(1000.0 / 16.0)
    rois, probs, nums = [], [], []
    for n in range(n_img):
        s = sc_all[n].transpose(1, 2, 0).reshape(-1)
        d = dl_all[n].reshape(a, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4)
        order = np.argsort(-s, kind="stable")
        if 0 < pre_nms_top_n < order.size:
            order = order[:pre_nms_top_n]
        an, v, t = anc[order], var[order], d[order]
        aw = an[:, 2] - an[:, 0] + off
        ah = an[:, 3] - an[:, 1] + off
        cx = v[:, 0] * t[:, 0] * aw + an[:, 0] + 0.5 * aw
        cy = v[:, 1] * t[:, 1] * ah + an[:, 1] + 0.5 * ah
        bw = np.exp(np.minimum(v[:, 2] * t[:, 2], cap)) * aw
        bh = np.exp(np.minimum(v[:, 3] * t[:, 3], cap)) * ah
        ih, iw = sizes[n]
        boxes = np.stack([np.clip(cx - bw / 2, 0, iw - off), np.clip(cy - bh / 2, 0, ih - off),
                          np.clip(cx + bw / 2 - off, 0, iw - off), np.clip(cy + bh / 2 - off, 0, ih - off)], axis=1)
        ws = boxes[:, 2] - boxes[:, 0] + off
        hs = boxes[:, 3] - boxes[:, 1] + off
        ms = max(float(min_size), 1.0)
        keep = (ws >= ms) & (hs >= ms)
        if pixel_offset:
            keep &= (boxes[:, 0] + ws / 2 <= iw) & (boxes[:, 1] + hs / 2 <= ih)
        boxes, sc = boxes[keep], s[order][keep]
        iou = _pairwise_iou(boxes, not pixel_offset)
        kept, thr = [], float(nms_thresh)
        for i in range(len(boxes)):
            if all(iou[i, j] <= thr for j in kept):
                kept.append(i)
                if eta < 1 and thr > 0.5:
                    thr *= eta
        if post_nms_top_n > 0:
            kept = kept[:post_nms_top_n]
        rois.append(boxes[kept])
        probs.append(sc[kept])
        nums.append(len(kept))
    dt = _dtype_name(scores)
    out_rois = to_tensor(np.concatenate(rois).reshape(-1, 4).astype(dt), place=scores.place)
    out_probs = to_tensor(np.concatenate(probs).reshape(-1, 1).astype(dt), place=scores.place)
    out_num = to_tensor(np.asarray(nums, np.int32), place=scores.place) if return_rois_num else None
    return out_rois, out_probs, out_num


def read_file(filename, name=None):
    """The bytes of a file as a uint8 Tensor (Paddle's read_file)."""
    import os
    if not os.path.isfile(filename):
        raise FileNotFoundError("read_file: no such file: {!r}".format(filename))
    with open(filename, "rb") as f:
        data = np.frombuffer(f.read(), dtype=np.uint8)
    from ..tensor.creation import to_tensor
    return to_tensor(data.copy())


def decode_jpeg(x, mode="unchanged", name=None):
    """Decodes JPEG bytes (a uint8 Tensor from read_file) to a uint8 [C, H, W] Tensor through Pillow."""
    import io
    try:
        from PIL import Image
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("decode_jpeg: needs Pillow, which is not installed") from e
    if mode not in ("unchanged", "gray", "rgb"):
        raise ValueError("decode_jpeg: mode must be 'unchanged', 'gray' or 'rgb', got {!r}".format(mode))
    img = Image.open(io.BytesIO(np.asarray(x.numpy(), dtype=np.uint8).tobytes()))
    if mode == "gray":
        img = img.convert("L")
    elif mode == "rgb":
        img = img.convert("RGB")
    a = np.asarray(img)
    a = a[None] if a.ndim == 2 else a.transpose(2, 0, 1)
    from ..tensor.creation import to_tensor
    return to_tensor(np.ascontiguousarray(a))


def _sce(x, target):
    """Sigmoid cross entropy with logits, elementwise: max(x, 0) - x * t + log(1 + exp(-|x|))."""
    return F.relu(x) - x * target + (1 + (-x.abs()).exp()).log()


def yolo_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh, downsample_ratio, gt_score=None,
              use_label_smooth=True, name=None, scale_x_y=1.0):
    """YOLOv3 loss per image [N] (Paddle's yolo_loss): each ground truth (gt_box [N, B, 4] as centre x, y,
    w, h relative to the image; w or h <= 0 marks padding) goes to the cell holding its centre and to
    the anchor of best shape IoU; if that anchor is in anchor_mask it adds sigmoid cross entropy on x, y,
    L1 on log w, h (both weighted by (2 - w*h) * score), objectness 1 and per-class sigmoid cross
    entropy (labels smoothed to 1 - e and e, e = min(1/class_num, 1/40)). Other predictions add objectness 0
    unless their box overlaps some ground truth by more than ignore_thresh. The targets depend only on
    the ground truth and are built on the host; the loss is oar ops, differentiable in x."""
    from ..tensor.creation import to_tensor
    _check_float("yolo_loss", "x", x, ("float32", "float64"))
    an_all = len(anchors) // 2
    mask = [int(m) for m in anchor_mask]
    am = len(mask)
    if x.ndim != 4:
        raise ValueError("yolo_loss: x must be 4-D [N, C, H, W], got shape {}".format(x.shape))
    n, c, h, w = x.shape
    if c != am * (5 + class_num):
        raise ValueError("yolo_loss: x has {} channels; len(anchor_mask) ({}) * (5 + class_num ({})) = {}".format(
            c, am, class_num, am * (5 + class_num)))
    if gt_box.ndim != 3 or gt_box.shape[0] != n or gt_box.shape[2] != 4:
        raise ValueError("yolo_loss: gt_box must be [{}, B, 4], got {}".format(n, gt_box.shape))
    nb = gt_box.shape[1]
    dt = _dtype_name(x)
    gt = gt_box.numpy().astype(np.float64)
    lab = gt_label.numpy().astype(np.int64).reshape(n, nb)
    score = np.ones((n, nb)) if gt_score is None else gt_score.numpy().astype(np.float64).reshape(n, nb)
    input_size = downsample_ratio * h
    aw = np.asarray(anchors[0::2], np.float64)
    ah = np.asarray(anchors[1::2], np.float64)
    # host targets: per (image, masked anchor, cell)
    obj_t = np.zeros((n, am, h, w))  # objectness weight of a positive (its score)
    pos = np.zeros((n, am, h, w), bool)
    tx, ty, tw, th = (np.zeros((n, am, h, w)) for _ in range(4))
    loc_w = np.zeros((n, am, h, w))
    cls_t = np.zeros((n, am, class_num, h, w))
    cls_w = np.zeros((n, am, h, w))
    smooth = min(1.0 / class_num, 1.0 / 40) if use_label_smooth else 0.0  # Paddle's smoothing weight
    lpos, lneg = 1.0 - smooth, smooth
    valid = (gt[:, :, 2] > 0) & (gt[:, :, 3] > 0)
    for i in range(n):
        for t in range(nb):
            if not valid[i, t]:
                continue
            gx, gy, gw, gh = gt[i, t]
            gi, gj = int(gx * w), int(gy * h)
            inter = np.minimum(gw, aw / input_size) * np.minimum(gh, ah / input_size)
            iou = inter / (gw * gh + aw * ah / input_size ** 2 - inter)
            best = int(np.argmax(iou))
            if best not in mask or not (0 <= gi < w and 0 <= gj < h):
                continue
            k = mask.index(best)
            s = score[i, t]
            pos[i, k, gj, gi] = True
            obj_t[i, k, gj, gi] = s
            tx[i, k, gj, gi] = gx * w - gi
            ty[i, k, gj, gi] = gy * h - gj
            tw[i, k, gj, gi] = math.log(gw * input_size / aw[best])
            th[i, k, gj, gi] = math.log(gh * input_size / ah[best])
            loc_w[i, k, gj, gi] = (2.0 - gw * gh) * s
            cls_t[i, k, :, gj, gi] = lneg
            cls_t[i, k, int(lab[i, t]), gj, gi] = lpos
            cls_w[i, k, gj, gi] = s
    T = lambda a: to_tensor(a.astype(dt), place=x.place)  # noqa: E731
    p = x.reshape([n, am, 5 + class_num, h, w])
    # ignore mask: the predicted boxes (no gradient) against every ground truth
    with _no_grad():
        bias = -0.5 * (scale_x_y - 1.0)
        gxs = T(np.arange(w, dtype=np.float64).reshape(1, 1, 1, w))
        gys = T(np.arange(h, dtype=np.float64).reshape(1, 1, h, 1))
        maw = T(aw[mask].reshape(1, am, 1, 1) / input_size)
        mah = T(ah[mask].reshape(1, am, 1, 1) / input_size)
        px = (gxs + F.sigmoid(p[:, :, 0]) * scale_x_y + bias) / w
        py = (gys + F.sigmoid(p[:, :, 1]) * scale_x_y + bias) / h
        pw = p[:, :, 2].exp() * maw
        ph = p[:, :, 3].exp() * mah
        g = T(np.where(valid[..., None], gt, 0.0)).reshape([n, 1, 1, 1, nb, 4])
        ix = (_minimum((px + pw / 2).unsqueeze(-1), g[..., 0] + g[..., 2] / 2)
              - _maximum((px - pw / 2).unsqueeze(-1), g[..., 0] - g[..., 2] / 2))
        iy = (_minimum((py + ph / 2).unsqueeze(-1), g[..., 1] + g[..., 3] / 2)
              - _maximum((py - ph / 2).unsqueeze(-1), g[..., 1] - g[..., 3] / 2))
        inter = F.relu(ix) * F.relu(iy)
        union = (pw * ph).unsqueeze(-1) + g[..., 2] * g[..., 3] - inter
        best = (inter / union).max(axis=-1).numpy() if nb else np.zeros((n, am, h, w))
    neg = (~pos) & (best <= ignore_thresh)
    loss = (_sce(p[:, :, 0], T(tx)) + _sce(p[:, :, 1], T(ty)) + (p[:, :, 2] - T(tw)).abs()
            + (p[:, :, 3] - T(th)).abs()) * T(loc_w)
    loss = loss + _sce(p[:, :, 4], T(np.ones_like(obj_t))) * T(obj_t) + _sce(p[:, :, 4], T(np.zeros_like(obj_t))) \
        * T(neg.astype(np.float64))
    cls = (_sce(p[:, :, 5:], T(cls_t)) * T(cls_w).unsqueeze(2)).sum(axis=2)
    return (loss + cls).sum(axis=[1, 2, 3])


def _maximum(a, b):
    from ..tensor.math import maximum
    return maximum(a, b)


def _no_grad():
    from ..autograd import no_grad
    return no_grad()
