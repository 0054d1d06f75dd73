"""float64 numpy references for oar.vision.ops and the CTC loss (numpy only, so they can also be run
against Paddle to check that they describe Paddle's behaviour)."""
import itertools
import math

import numpy as np


def _bilinear_align(plane, y, x):
    H, W = plane.shape
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0 = y1 = H - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= W - 1:
        x0 = x1 = W - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return hy * hx * plane[y0, x0] + hy * lx * plane[y0, x1] + ly * hx * plane[y1, x0] + ly * lx * plane[y1, x1]


def _images(boxes_num):
    return np.repeat(np.arange(len(boxes_num)), boxes_num)


def roi_align(x, boxes, boxes_num, ph, pw, scale=1.0, ratio=-1, aligned=True):
    x = np.asarray(x, np.float64)
    R, C = boxes.shape[0], x.shape[1]
    out = np.zeros((R, C, ph, pw))
    off = 0.5 if aligned else 0.0
    for r, n in enumerate(_images(boxes_num)):
        x1, y1, x2, y2 = [float(v) * scale - off for v in boxes[r]]
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(math.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(math.ceil(rw / pw))
        cnt = max(gh * gw, 1)
        for c in range(C):
            for i in range(ph):
                for j in range(pw):
                    s = 0.0
                    for iy in range(gh):
                        for ix in range(gw):
                            s += _bilinear_align(x[n, c], y1 + i * bh + (iy + 0.5) * bh / gh,
                                                 x1 + j * bw + (ix + 0.5) * bw / gw)
                    out[r, c, i, j] = s / cnt
    return out


def roi_pool(x, boxes, boxes_num, ph, pw, scale=1.0):
    x = np.asarray(x, np.float64)
    R, C, H, W = boxes.shape[0], x.shape[1], x.shape[2], x.shape[3]
    out = np.zeros((R, C, ph, pw))
    for r, n in enumerate(_images(boxes_num)):
        x1, y1, x2, y2 = [int(np.round(float(v) * scale)) for v in boxes[r]]
        bh = max(y2 - y1 + 1, 1) / ph
        bw = max(x2 - x1 + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                h0 = min(max(int(math.floor(i * bh)) + y1, 0), H)
                h1 = min(max(int(math.ceil((i + 1) * bh)) + y1, 0), H)
                w0 = min(max(int(math.floor(j * bw)) + x1, 0), W)
                w1 = min(max(int(math.ceil((j + 1) * bw)) + x1, 0), W)
                if h1 > h0 and w1 > w0:
                    out[r, :, i, j] = x[n, :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def psroi_pool(x, boxes, boxes_num, ph, pw, scale=1.0):
    x = np.asarray(x, np.float64)
    R, C, H, W = boxes.shape[0], x.shape[1], x.shape[2], x.shape[3]
    oc = C // (ph * pw)
    out = np.zeros((R, oc, ph, pw))
    for r, n in enumerate(_images(boxes_num)):
        x1 = np.round(boxes[r, 0]) * scale
        y1 = np.round(boxes[r, 1]) * scale
        x2 = (np.round(boxes[r, 2]) + 1.0) * scale
        y2 = (np.round(boxes[r, 3]) + 1.0) * scale
        bh, bw = max(y2 - y1, 0.1) / ph, max(x2 - x1, 0.1) / pw
        for c in range(oc):
            for i in range(ph):
                for j in range(pw):
                    h0 = min(max(int(math.floor(bh * i + y1)), 0), H)
                    h1 = min(max(int(math.ceil(bh * (i + 1) + y1)), 0), H)
                    w0 = min(max(int(math.floor(bw * j + x1)), 0), W)
                    w1 = min(max(int(math.ceil(bw * (j + 1) + x1)), 0), W)
                    if h1 > h0 and w1 > w0:
                        out[r, c, i, j] = x[n, (c * ph + i) * pw + j, h0:h1, w0:w1].mean()
    return out


def _bilinear_zero(plane, y, x):
    H, W = plane.shape
    if not (y > -1 and x > -1 and y < H and x < W):
        return 0.0
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    s = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < H and 0 <= xx < W:
                s += wy * wx * plane[yy, xx]
    return s


def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, dg=1, groups=1, mask=None):
    x = np.asarray(x, np.float64)
    N, C, H, W = x.shape
    Co, Cg, kh, kw = weight.shape
    s, p, d = [(v, v) if isinstance(v, int) else tuple(v) for v in (stride, padding, dilation)]
    Ho = (H + 2 * p[0] - (d[0] * (kh - 1) + 1)) // s[0] + 1
    Wo = (W + 2 * p[1] - (d[1] * (kw - 1) + 1)) // s[1] + 1
    cols = np.zeros((N, C, kh * kw, Ho, Wo))
    for n in range(N):
        for c in range(C):
            g = c // (C // dg)
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for ho in range(Ho):
                        for wo in range(Wo):
                            oy = offset[n, 2 * (g * kh * kw + k), ho, wo]
                            ox = offset[n, 2 * (g * kh * kw + k) + 1, ho, wo]
                            m = 1.0 if mask is None else mask[n, g * kh * kw + k, ho, wo]
                            y = ho * s[0] - p[0] + i * d[0] + oy
                            xx = wo * s[1] - p[1] + j * d[1] + ox
                            cols[n, c, k, ho, wo] = _bilinear_zero(x[n, c], y, xx) * m
    out = np.zeros((N, Co, Ho, Wo))
    cog = Co // groups
    for gi in range(groups):
        wg = weight[gi * cog:(gi + 1) * cog].reshape(cog, -1)
        cg = cols[:, gi * Cg:(gi + 1) * Cg].reshape(N, Cg * kh * kw, Ho * Wo)
        out[:, gi * cog:(gi + 1) * cog] = np.einsum("ok,nkl->nol", wg, cg).reshape(N, cog, Ho, Wo)
    if bias is not None:
        out += np.asarray(bias).reshape(1, -1, 1, 1)
    return out


def nms(boxes, thr):
    keep = []
    for i, b in enumerate(boxes):
        ok = True
        for j in keep:
            u = boxes[j]
            iw = max(min(b[2], u[2]) - max(b[0], u[0]), 0)
            ih = max(min(b[3], u[3]) - max(b[1], u[1]), 0)
            inter = iw * ih
            union = (b[2] - b[0]) * (b[3] - b[1]) + (u[2] - u[0]) * (u[3] - u[1]) - inter
            if union > 0 and inter / union > thr:
                ok = False
                break
        if ok:
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


def ctc_brute(logits, labels, in_lens, lab_lens, blank=0):
    """-log p(label) by enumerating every path (tiny T and C only), from softmax(logits) [T, N, C]."""
    logits = np.asarray(logits, np.float64)
    T, N, C = logits.shape
    lp = logits - logits.max(axis=2, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=2, keepdims=True))
    out = np.zeros(N)
    for n in range(N):
        t_n, target = int(in_lens[n]), [int(v) for v in labels[n][:int(lab_lens[n])]]
        total = 0.0
        for path in itertools.product(range(C), repeat=t_n):
            col = []
            prev = None
            for c in path:
                if c != prev and c != blank:
                    col.append(c)
                prev = c
            if col == target:
                total += math.exp(sum(lp[t, n, c] for t, c in enumerate(path)))
        out[n] = -math.log(total) if total > 0 else math.inf
    return out


def box_coder(prior, var, target, code_type, normalized=True, axis=0):
    prior = np.asarray(prior, np.float64)
    target = np.asarray(target, np.float64)
    norm = 0.0 if normalized else 1.0
    pw = prior[:, 2] - prior[:, 0] + norm
    ph = prior[:, 3] - prior[:, 1] + norm
    pcx, pcy = prior[:, 0] + pw / 2, prior[:, 1] + ph / 2
    v = np.ones((prior.shape[0], 4)) if var is None else np.broadcast_to(np.asarray(var, np.float64),
                                                                          (prior.shape[0], 4))
    if code_type == "encode_center_size":
        out = np.zeros((target.shape[0], prior.shape[0], 4))
        for n in range(target.shape[0]):
            tw = target[n, 2] - target[n, 0] + norm
            th = target[n, 3] - target[n, 1] + norm
            # the target's centre has no +1 (Paddle's encode), the prior's has
            tcx, tcy = (target[n, 0] + target[n, 2]) / 2, (target[n, 1] + target[n, 3]) / 2
            for m in range(prior.shape[0]):
                out[n, m] = [(tcx - pcx[m]) / pw[m] / v[m, 0], (tcy - pcy[m]) / ph[m] / v[m, 1],
                             np.log(abs(tw / pw[m])) / v[m, 2], np.log(abs(th / ph[m])) / v[m, 3]]
        return out
    out = np.zeros(target.shape)
    for n in range(target.shape[0]):
        for m in range(target.shape[1]):
            k = m if axis == 0 else n
            t = target[n, m]
            cx = v[k, 0] * t[0] * pw[k] + pcx[k]
            cy = v[k, 1] * t[1] * ph[k] + pcy[k]
            w = math.exp(v[k, 2] * t[2]) * pw[k]
            h = math.exp(v[k, 3] * t[3]) * ph[k]
            out[n, m] = [cx - w / 2, cy - h / 2, cx + w / 2 - norm, cy + h / 2 - norm]
    return out


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample, clip=True, scale_x_y=1.0):
    x = np.asarray(x, np.float64)
    N, _, H, W = x.shape
    an = len(anchors) // 2
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    boxes = np.zeros((N, an * H * W, 4))
    scores = np.zeros((N, an * H * W, class_num))
    p = x.reshape(N, an, 5 + class_num, H, W)
    bias = -0.5 * (scale_x_y - 1)
    for n in range(N):
        ih, iw = img_size[n]
        for a in range(an):
            for i in range(H):
                for j in range(W):
                    k = (a * H + i) * W + j
                    conf = sig(p[n, a, 4, i, j])
                    if conf < conf_thresh:
                        continue
                    cx = (j + sig(p[n, a, 0, i, j]) * scale_x_y + bias) * iw / W
                    cy = (i + sig(p[n, a, 1, i, j]) * scale_x_y + bias) * ih / H
                    w = math.exp(p[n, a, 2, i, j]) * anchors[2 * a] * iw / (downsample * W)
                    h = math.exp(p[n, a, 3, i, j]) * anchors[2 * a + 1] * ih / (downsample * H)
                    b = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
                    if clip:
                        b = [max(b[0], 0), max(b[1], 0), min(b[2], iw - 1), min(b[3], ih - 1)]
                    boxes[n, k] = b
                    scores[n, k] = conf * sig(p[n, a, 5:, i, j])
    return boxes, scores


def _iou(a, b, normalized):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    off = 0.0 if normalized else 1.0
    iw = max(min(a[2], b[2]) - max(a[0], b[0]) + off, 0.0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]) + off, 0.0)
    inter = iw * ih
    ua = (a[2] - a[0] + off) * (a[3] - a[1] + off) + (b[2] - b[0] + off) * (b[3] - b[1] + off) - inter
    return inter / ua if ua > 0 else 0.0


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               sigma=2.0, background_label=0, normalized=True):
    """Returns (out [K, 6] = label, score, box; rois_num [N]; index [K]) as Paddle's matrix_nms."""
    N, C, M = scores.shape
    outs, nums, index = [], [], []
    for n in range(N):
        dets = []
        for c in range(C):
            if c == background_label:
                continue
            s = scores[n, c]
            idx = [i for i in np.argsort(-s, kind="stable") if s[i] > score_threshold]
            if nms_top_k > -1:
                idx = idx[:nms_top_k]
            k = len(idx)
            iou = np.zeros((k, k))
            iou_max = np.zeros(k)
            for i in range(k):
                for j in range(i):
                    iou[i, j] = _iou(bboxes[n, idx[i]], bboxes[n, idx[j]], normalized)
                iou_max[i] = iou[i, :i].max() if i else 0.0
            for i in range(k):
                decay = 1.0
                for j in range(i):
                    if use_gaussian:
                        d = math.exp((iou_max[j] ** 2 - iou[i, j] ** 2) * sigma)
                    else:
                        d = (1 - iou[i, j]) / (1 - iou_max[j])
                    decay = min(decay, d)
                ds = decay * s[idx[i]]
                if ds > post_threshold:
                    dets.append((ds, c, idx[i]))
        dets.sort(key=lambda d: -d[0])
        if keep_top_k > -1:
            dets = dets[:keep_top_k]
        for ds, c, i in dets:
            outs.append([c, ds] + list(bboxes[n, i]))
            index.append(n * M + i)
        nums.append(len(dets))
    return np.asarray(outs, np.float64).reshape(-1, 6), np.asarray(nums, np.int32), np.asarray(index, np.int32)


def _greedy_nms(boxes, thr, eta, normalized):
    keep = []
    adaptive = thr
    for i in range(len(boxes)):
        ok = True
        for j in keep:
            if _iou(boxes[i], boxes[j], normalized) > adaptive:
                ok = False
                break
        if ok:
            keep.append(i)
            if eta < 1 and adaptive > 0.5:
                adaptive *= eta
    return keep


def generate_proposals(scores, deltas, img_size, anchors, variances, pre_nms_top_n, post_nms_top_n, nms_thresh,
                       min_size, eta=1.0, pixel_offset=False):
    """RPN proposals as Paddle's generate_proposals (v2): (rois [R, 4], probs [R, 1], rois_num [N])."""
    N, A, H, W = scores.shape
    off = 1.0 if pixel_offset else 0.0
    anc = anchors.reshape(-1, 4)
    var = variances.reshape(-1, 4)
    rois, probs, nums = [], [], []
    for n in range(N):
        s = scores[n].transpose(1, 2, 0).reshape(-1)
        d = deltas[n].transpose(1, 2, 0).reshape(-1, 4)
        order = np.argsort(-s, kind="stable")
        if 0 < pre_nms_top_n < len(order):
            order = order[:pre_nms_top_n]
        boxes = []
        for i in order:
            a, v, t = anc[i], var[i], d[i]
            aw, ah = a[2] - a[0] + off, a[3] - a[1] + off
            acx, acy = a[0] + 0.5 * aw, a[1] + 0.5 * ah
            cx, cy = v[0] * t[0] * aw + acx, v[1] * t[1] * ah + acy
            w = math.exp(min(v[2] * t[2], math.log(1000.0 / 16.0))) * aw
            h = math.exp(min(v[3] * t[3], math.log(1000.0 / 16.0))) * ah
            b = [cx - w / 2, cy - h / 2, cx + w / 2 - off, cy + h / 2 - off]
            ih, iw = img_size[n]
            b = [min(max(b[0], 0), iw - off), min(max(b[1], 0), ih - off), min(max(b[2], 0), iw - off),
                 min(max(b[3], 0), ih - off)]
            boxes.append(b)
        boxes = np.asarray(boxes).reshape(-1, 4)
        ms = max(min_size, 1.0)
        ws, hs = boxes[:, 2] - boxes[:, 0] + off, boxes[:, 3] - boxes[:, 1] + off
        if pixel_offset:
            ih, iw = img_size[n]
            keep = (ws >= ms) & (hs >= ms) & (boxes[:, 0] + ws / 2 <= iw) & (boxes[:, 1] + hs / 2 <= ih)
        else:
            keep = (ws >= ms) & (hs >= ms)
        boxes, sc = boxes[keep], s[order][keep]
        k = _greedy_nms(boxes, nms_thresh, eta, not pixel_offset)
        if post_nms_top_n > 0:
            k = k[:post_nms_top_n]
        rois.append(boxes[k])
        probs.append(sc[k])
        nums.append(len(k))
    return np.concatenate(rois).reshape(-1, 4), np.concatenate(probs).reshape(-1, 1), np.asarray(nums, np.int32)
