"""oar.vision.ops against float64 numpy references (tests/python/_vision_refs.py, which were checked
against Paddle 2.6.2 on the same inputs), with numerical gradients for the differentiable ops."""
import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.vision import ops

import _vision_refs as R
from _util import check, check_grad


def _boxes(rng, n, lo=0.0, hi=8.0):
    b = rng.uniform(lo, hi, (n, 4))
    b[:, 2:] = b[:, :2] + rng.uniform(0.5, 5, (n, 2))
    return b


def _t(a, dtype="float64"):
    return oar.to_tensor(np.asarray(a).astype(dtype))


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ---- roi_align / roi_pool / psroi_pool ----------------------------------------------------------------

@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("ratio", [-1, 2])
def test_roi_align_matches_reference(rng, aligned, ratio):
    x = rng.uniform(-1, 1, (2, 3, 9, 10))
    b = _boxes(rng, 5)
    b[4] = [-2, -1, 12, 11]  # reaches outside the map
    num = np.array([3, 2], np.int32)
    out = ops.roi_align(_t(x), _t(b), oar.to_tensor(num), (3, 2), 0.7, ratio, aligned)
    check(out, R.roi_align(x, b, num, 3, 2, 0.7, ratio, aligned), rtol=1e-9, atol=1e-9, dtype=oar.float64)
    out32 = ops.roi_align(_t(x, "float32"), _t(b, "float32"), oar.to_tensor(num), (3, 2), 0.7, ratio, aligned)
    check(out32, R.roi_align(x, b.astype("float32"), num, 3, 2, 0.7, ratio, aligned), rtol=1e-5, atol=1e-5)


def test_roi_align_gradient(rng):
    b = _boxes(rng, 3, 0, 4)
    num = np.array([2, 1], np.int32)
    check_grad(lambda x: ops.roi_align(x, _t(b), oar.to_tensor(num), 2, 1.0, -1, True),
               [rng.uniform(-1, 1, (2, 2, 6, 6))])
    check_grad(lambda x: ops.roi_align(x, _t(b), oar.to_tensor(num), (2, 3), 0.9, 2, False),
               [rng.uniform(-1, 1, (2, 2, 6, 6))])


def test_roi_align_layer_and_errors(rng):
    x = _t(rng.uniform(size=(1, 2, 6, 6)))
    b = _t(_boxes(rng, 2, 0, 3))
    num = oar.to_tensor(np.array([2], np.int32))
    layer = ops.RoIAlign(output_size=3, spatial_scale=1.0)
    check(layer(x, b, num), ops.roi_align(x, b, num, 3).numpy())
    assert layer(x, b, num).shape == [2, 2, 3, 3]
    with pytest.raises(ValueError, match=r"boxes_num\[0\] = 3 .* 2 boxes"):
        ops.roi_align(x, b, oar.to_tensor(np.array([3], np.int32)), 3)
    with pytest.raises(TypeError, match="output_size"):
        ops.roi_align(x, b, num, [3, 3])
    with pytest.raises(ValueError, match=r"boxes must have shape \[num_boxes, 4\]"):
        ops.roi_align(x, _t(np.zeros((2, 3))), num, 3)
    with pytest.raises(ValueError, match="boxes_num adds up to 1 but boxes has 2 rows"):
        ops.roi_align(x, b, oar.to_tensor(np.array([1], np.int32)), 3)
    with pytest.raises(TypeError, match="boxes_num must be an int32 or int64"):
        ops.roi_align(x, b, _t([2.0]), 3)
    with pytest.raises(ValueError, match="boxes_num is required"):
        ops.roi_align(x, b, None, 3)


def test_roi_pool_matches_reference_and_gradient(rng):
    x = rng.uniform(-1, 1, (2, 3, 8, 9))
    b = _boxes(rng, 4)
    b[3] = [-3, -3, 20, 20]
    num = np.array([1, 3], np.int64)
    out = ops.roi_pool(_t(x), _t(b), oar.to_tensor(num), (3, 2), 0.6)
    check(out, R.roi_pool(x, b, num, 3, 2, 0.6), rtol=0, atol=0)
    check_grad(lambda t: ops.roi_pool(t, _t(b), oar.to_tensor(num), 2, 0.6), [x])
    layer = ops.RoIPool(2, 0.6)
    check(layer(_t(x), _t(b), oar.to_tensor(num)), R.roi_pool(x, b, num, 2, 2, 0.6))


def test_psroi_pool_matches_reference_and_gradient(rng):
    x = rng.uniform(-1, 1, (2, 8, 7, 7))
    b = _boxes(rng, 3, 0, 5)
    num = np.array([2, 1], np.int32)
    out = ops.psroi_pool(_t(x), _t(b), oar.to_tensor(num), 2, 0.8)
    check(out, R.psroi_pool(x, b, num, 2, 2, 0.8), rtol=1e-12, atol=1e-12)
    assert out.shape == [3, 2, 2, 2]
    check_grad(lambda t: ops.psroi_pool(t, _t(b), oar.to_tensor(num), 2, 0.8), [x])
    check(ops.PSRoIPool(2, 0.8)(_t(x), _t(b), oar.to_tensor(num)), out.numpy())
    with pytest.raises(ValueError, match="divisible by output_size"):
        ops.psroi_pool(_t(x), _t(b), oar.to_tensor(num), 3)


# ---- deform_conv2d --------------------------------------------------------------------------------

def test_deform_conv2d_v2_matches_reference(rng):
    x = rng.uniform(-1, 1, (2, 4, 6, 7))
    w = rng.uniform(-1, 1, (6, 2, 3, 3))
    bias = rng.uniform(-1, 1, 6)
    off = rng.uniform(-2, 2, (2, 36, 3, 4))
    m = rng.uniform(0, 1, (2, 18, 3, 4))
    out = ops.deform_conv2d(_t(x), _t(off), _t(w), _t(bias), stride=2, padding=1, deformable_groups=2, groups=2,
                            mask=_t(m))
    check(out, R.deform_conv2d(x, off, w, bias, 2, 1, 1, 2, 2, m), rtol=1e-10, atol=1e-10)


def test_deform_conv2d_v1_zero_offset_is_conv(rng):
    x = rng.uniform(-1, 1, (1, 3, 6, 6))
    w = rng.uniform(-1, 1, (4, 3, 3, 3))
    off = np.zeros((1, 18, 6, 6))
    out = ops.deform_conv2d(_t(x), _t(off), _t(w), padding=1)
    check(out, F.conv2d(_t(x), _t(w), padding=1).numpy(), rtol=1e-10, atol=1e-10)
    off = rng.uniform(-1.5, 1.5, (1, 18, 4, 4))
    check(ops.deform_conv2d(_t(x), _t(off), _t(w)), R.deform_conv2d(x, off, w), rtol=1e-10, atol=1e-10)


def test_deform_conv2d_gradient(rng):
    x = rng.uniform(-1, 1, (1, 2, 5, 5))
    w = rng.uniform(-1, 1, (3, 2, 2, 2))
    # offsets away from integer sample positions, where bilinear sampling has kinks
    off = rng.uniform(0.1, 0.4, (1, 8, 4, 4)) * rng.choice([-1, 1], (1, 8, 4, 4))
    m = rng.uniform(0.2, 1, (1, 4, 4, 4))
    b = rng.uniform(-1, 1, 3)
    check_grad(lambda x, o, w, b, m: ops.deform_conv2d(x, o, w, b, mask=m), [x, off, w, b, m], rtol=1e-4,
               atol=1e-5)


def test_deform_conv2d_layer(rng):
    oar.seed(3)
    layer = ops.DeformConv2D(4, 6, 3, padding=1, deformable_groups=2, groups=2)
    assert layer.weight.shape == [6, 2, 3, 3] and layer.bias.shape == [6]
    x = rng.uniform(-1, 1, (1, 4, 5, 5))
    off = rng.uniform(-1, 1, (1, 36, 5, 5))
    m = rng.uniform(0, 1, (1, 18, 5, 5))
    out = layer(_t(x, "float32"), _t(off, "float32"), _t(m, "float32"))
    want = R.deform_conv2d(x, off, layer.weight.numpy().astype(np.float64), layer.bias.numpy(), 1, 1, 1, 2, 2, m)
    check(out, want, rtol=1e-4, atol=1e-4)
    out.sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.shape == [6, 2, 3, 3]
    with pytest.raises(ValueError, match="offset must have shape"):
        layer(_t(x, "float32"), _t(off[:, :30], "float32"), _t(m, "float32"))


# ---- nms ------------------------------------------------------------------------------------------

def test_nms_plain_and_scored(rng):
    b = _boxes(rng, 30, 0, 10)
    keep = ops.nms(_t(b), 0.3)
    check(keep, R.nms(b, 0.3), dtype=oar.int64)
    scores = rng.uniform(size=30)
    order = np.argsort(-scores, kind="stable")
    want = order[R.nms(b[order], 0.5)]
    check(ops.nms(_t(b, "float32"), 0.5, _t(scores, "float32")), want)


def test_nms_iou_has_no_plus_one():
    # IoU of the second box with the first is 0.65, of the third 0.55 (Paddle's example values).
    b = _t([[0, 0, 10, 10], [0, 0, 10, 6.5], [0, 0, 10, 5.5]], "float32")
    check(ops.nms(b, 0.6), np.array([0, 2]))
    check(ops.nms(b, 0.66), np.array([0, 1]))


def test_nms_categories_and_top_k():
    boxes = _t([[0.866, 0.520, 1.125, 1.425], [0.424, 0.406, 1.394, 1.151], [0.518, 0.733, 1.496, 0.776],
                [0.426, 0.720, 0.635, 0.917]], "float32")
    scores = _t([0.6, 0.7, 0.4, 0.233], "float32")
    cats = oar.to_tensor(np.array([2, 0, 0, 3], np.int64))
    check(ops.nms(boxes, 0.1, scores, cats, [0, 1, 2, 3], 4), np.array([1, 0, 2, 3]))  # Paddle's docstring
    check(ops.nms(boxes, 0.1, scores, cats, [0, 1, 2, 3], 2), np.array([1, 0]))
    with pytest.raises(ValueError, match="categories"):
        ops.nms(boxes, 0.1, scores, cats)


# ---- box_coder / prior_box / yolo_box --------------------------------------------------------------

@pytest.mark.parametrize("normalized", [True, False])
def test_box_coder(rng, normalized):
    pb = rng.uniform(0, 1, (3, 4))
    pb[:, 2:] = pb[:, :2] + rng.uniform(0.1, 0.5, (3, 2))
    pv = rng.uniform(0.1, 0.3, (3, 4))
    tb = pb[[0, 2]] + 0.05
    check(ops.box_coder(_t(pb), _t(pv), _t(tb), "encode_center_size", normalized),
          R.box_coder(pb, pv, tb, "encode_center_size", normalized), rtol=1e-10, atol=1e-10)
    check(ops.box_coder(_t(pb), [0.1, 0.1, 0.2, 0.2], _t(tb), "encode_center_size", normalized),
          R.box_coder(pb, [0.1, 0.1, 0.2, 0.2], tb, "encode_center_size", normalized), rtol=1e-10, atol=1e-10)
    td = rng.uniform(-1, 1, (2, 3, 4))
    check(ops.box_coder(_t(pb), _t(pv), _t(td), "decode_center_size", normalized, 0),
          R.box_coder(pb, pv, td, "decode_center_size", normalized, 0), rtol=1e-10, atol=1e-10)
    td1 = rng.uniform(-1, 1, (3, 2, 4))
    check(ops.box_coder(_t(pb), None, _t(td1), "decode_center_size", normalized, 1),
          R.box_coder(pb, None, td1, "decode_center_size", normalized, 1), rtol=1e-10, atol=1e-10)
    check_grad(lambda t: ops.box_coder(_t(pb), _t(pv), t, "decode_center_size", normalized, 0), [td])
    with pytest.raises(ValueError, match="code_type"):
        ops.box_coder(_t(pb), _t(pv), _t(tb), "encode")


def test_prior_box():
    inp = oar.zeros([1, 3, 2, 2])
    img = oar.zeros([1, 3, 20, 20])
    boxes, var = ops.prior_box(inp, img, min_sizes=[4.0], max_sizes=[16.0], aspect_ratios=[2.0], flip=True,
                               clip=True)
    assert boxes.shape == [2, 2, 4, 4] and var.shape == [2, 2, 4, 4]
    # cell (0, 0): centre (5, 5); priors: 4x4 (ratio 1), 4*sqrt2 x 4/sqrt2, 4/sqrt2 x 4*sqrt2, then 8x8
    s2 = np.sqrt(2.0)
    sizes = [(4, 4), (4 * s2, 4 / s2), (4 / s2, 4 * s2), (8, 8)]
    want = np.array([[(5 - w / 2) / 20, (5 - h / 2) / 20, (5 + w / 2) / 20, (5 + h / 2) / 20] for w, h in sizes])
    np.testing.assert_allclose(boxes.numpy()[0, 0], want, rtol=1e-6)
    np.testing.assert_allclose(boxes.numpy()[1, 1], want + 0.5, rtol=1e-6)
    np.testing.assert_allclose(var.numpy()[1, 0, 2], [0.1, 0.1, 0.2, 0.2], rtol=1e-6)
    ordered, _ = ops.prior_box(inp, img, min_sizes=[4.0], max_sizes=[16.0], aspect_ratios=[2.0], flip=True,
                               min_max_aspect_ratios_order=True)
    np.testing.assert_allclose(ordered.numpy()[0, 0], want[[0, 3, 1, 2]], rtol=1e-6)


@pytest.mark.parametrize("clip", [True, False])
def test_yolo_box(rng, clip):
    an = [10, 13, 16, 30]
    x = rng.normal(size=(2, 2 * 8, 3, 4))
    isz = np.array([[60, 80], [40, 50]], np.int32)
    boxes, scores = ops.yolo_box(_t(x), oar.to_tensor(isz), an, 3, 0.4, 16, clip, scale_x_y=1.2)
    rb, rs = R.yolo_box(x, isz, an, 3, 0.4, 16, clip, 1.2)
    check(boxes, rb, rtol=1e-9, atol=1e-9)
    check(scores, rs, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="channels"):
        ops.yolo_box(_t(x[:, :15]), oar.to_tensor(isz), an, 3, 0.4, 16)


def test_distribute_fpn_proposals(rng):
    rois = _boxes(rng, 12, 0, 200)
    rois[:, 2:] = rois[:, :2] + rng.uniform(4, 300, (12, 2))
    multi, restore, nums = ops.distribute_fpn_proposals(_t(rois, "float32"), 2, 5, 4, 224,
                                                        rois_num=oar.to_tensor(np.array([5, 7], np.int32)))
    area = (rois[:, 2] - rois[:, 0]) * (rois[:, 3] - rois[:, 1])
    lvl = np.clip(np.floor(4 + np.log2(np.sqrt(area) / 224 + 1e-8)), 2, 5).astype(int)
    got = np.concatenate([m.numpy() for m in multi])
    order = np.concatenate([np.nonzero(lvl == level)[0] for level in range(2, 6)])
    np.testing.assert_allclose(got, rois[order].astype(np.float32))
    np.testing.assert_array_equal(got[restore.numpy()[:, 0]], rois.astype(np.float32))
    for level, n in zip(range(2, 6), nums):
        idx = np.nonzero(lvl == level)[0]
        np.testing.assert_array_equal(n.numpy(), [(idx < 5).sum(), (idx >= 5).sum()])


# ---- ctc_loss ---------------------------------------------------------------------------------------

def test_ctc_loss_matches_path_enumeration(rng):
    lg = rng.normal(size=(4, 3, 3))
    lab = np.array([[1, 2], [1, 1], [2, 0]])
    il = np.array([4, 4, 3])
    ll = np.array([2, 2, 1])
    want = R.ctc_brute(lg, lab, il, ll)
    loss = F.ctc_loss(_t(lg), oar.to_tensor(lab.astype(np.int32)), oar.to_tensor(il), oar.to_tensor(ll),
                      reduction="none")
    check(loss, want, rtol=1e-10, atol=1e-10)
    check(F.ctc_loss(_t(lg, "float32"), oar.to_tensor(lab), oar.to_tensor(il), oar.to_tensor(ll)),
          np.mean(want / ll), rtol=1e-5, atol=1e-5)
    check(oar.nn.CTCLoss(reduction="sum")(_t(lg), oar.to_tensor(lab), oar.to_tensor(il), oar.to_tensor(ll)),
          want.sum(), rtol=1e-10)
    # blank in the last class
    lab2 = np.array([[0, 1], [1, 1], [0, 0]])
    check(F.ctc_loss(_t(lg), oar.to_tensor(lab2), oar.to_tensor(il), oar.to_tensor(ll), blank=2, reduction="none"),
          R.ctc_brute(lg, lab2, il, ll, blank=2), rtol=1e-10, atol=1e-10)


def test_ctc_loss_gradient(rng):
    lab = oar.to_tensor(np.array([[1, 2, 1], [3, 3, 0]]))
    il = oar.to_tensor(np.array([7, 5]))
    ll = oar.to_tensor(np.array([3, 2]))
    check_grad(lambda t: F.ctc_loss(t, lab, il, ll, reduction="none"), [rng.normal(size=(7, 2, 4))])
    check_grad(lambda t: F.ctc_loss(t, lab, il, ll, reduction="mean"), [rng.normal(size=(7, 2, 4))])


def test_ctc_loss_norm_by_times_scales_the_gradient(rng):
    lg = rng.normal(size=(6, 2, 4))
    lab = oar.to_tensor(np.array([[1, 2], [3, 0]]))
    il = oar.to_tensor(np.array([6, 3]))
    ll = oar.to_tensor(np.array([2, 1]))
    grads = []
    for norm in (False, True):
        t = _t(lg)
        t.stop_gradient = False
        loss = F.ctc_loss(t, lab, il, ll, reduction="sum", norm_by_times=norm)
        loss.backward()
        grads.append((loss.numpy(), t.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[1][1][:, 0], grads[0][1][:, 0] / 6, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[1][1][:, 1], grads[0][1][:, 1] / 3, rtol=1e-10, atol=1e-12)


def test_ctc_loss_errors(rng):
    lg = _t(rng.normal(size=(4, 2, 3)))
    lab = oar.to_tensor(np.array([[1, 2], [1, 0]]))
    il = oar.to_tensor(np.array([4, 4]))
    with pytest.raises(ValueError, match=r"input_lengths\[1\] = 9 is outside \[0, 4\]"):
        F.ctc_loss(lg, lab, oar.to_tensor(np.array([4, 9])), oar.to_tensor(np.array([2, 1])))
    with pytest.raises(IndexError, match=r"labels\[0, 1\] = 5 is outside \[0, 3\)"):
        F.ctc_loss(lg, oar.to_tensor(np.array([[1, 5], [1, 0]])), il, oar.to_tensor(np.array([2, 1])))
    with pytest.raises(ValueError, match="blank must be in"):
        F.ctc_loss(lg, lab, il, oar.to_tensor(np.array([2, 1])), blank=3)


@pytest.mark.parametrize("kw", [dict(use_gaussian=False), dict(use_gaussian=True, gaussian_sigma=2.0),
                                dict(normalized=False), dict(background_label=-1)])
def test_matrix_nms(kw):
    rng = np.random.default_rng(3)
    b = rng.uniform(0, 1, (2, 12, 4))
    b[..., 2:] = b[..., :2] + rng.uniform(0.05, 0.5, (2, 12, 2))
    s = rng.uniform(0, 1, (2, 4, 12))
    out, num, idx = ops.matrix_nms(_t(b), _t(s), 0.2, 0.3, 8, 10, return_index=True, **kw)
    ro, rn, ri = R.matrix_nms(b, s, 0.2, 0.3, 8, 10, kw.get("use_gaussian", False), kw.get("gaussian_sigma", 2.0),
                              kw.get("background_label", 0), kw.get("normalized", True))
    check(out, ro, rtol=1e-12, atol=1e-12)
    check(num, rn, dtype=oar.int32)
    check(idx, ri.reshape(-1, 1))
    out2, num2, idx2 = ops.matrix_nms(_t(b), _t(s), 0.2, 0.3, 8, 10, **kw)
    assert idx2 is None and num2 is not None


@pytest.mark.parametrize("kw", [dict(pixel_offset=False), dict(pixel_offset=True),
                                dict(min_size=3.0, eta=0.9, nms_thresh=0.7)])
def test_generate_proposals(kw):
    rng = np.random.default_rng(5)
    N, A, H, W = 2, 3, 4, 5
    sc = rng.uniform(0, 1, (N, A, H, W))
    dl = rng.normal(0, 0.5, (N, 4 * A, H, W))
    isz = np.array([[40, 50], [35, 30]], np.float64)
    anc = np.zeros((H, W, A, 4))
    for i in range(H):
        for j in range(W):
            for a in range(A):
                s = 4 * (a + 1)
                anc[i, j, a] = [j * 8 - s, i * 8 - s, j * 8 + s, i * 8 + s]
    var = rng.uniform(0.5, 1.5, (H, W, A, 4))
    args = dict(pre_nms_top_n=40, post_nms_top_n=15, nms_thresh=0.5, min_size=0.1, eta=1.0, pixel_offset=False)
    args.update(kw)
    rois, probs, num = ops.generate_proposals(_t(sc), _t(dl), _t(isz), _t(anc), _t(var), return_rois_num=True, **args)
    rr, rp, rn = R.generate_proposals(sc, dl, isz, anc, var, args["pre_nms_top_n"], args["post_nms_top_n"],
                                      args["nms_thresh"], args["min_size"], args["eta"], args["pixel_offset"])
    check(rois, rr, rtol=1e-10, atol=1e-10)
    check(probs, rp, rtol=1e-12)
    check(num, rn, dtype=oar.int32)


def _yolo_inputs():
    rng = np.random.default_rng(11)
    N, H, W, cls, B = 2, 5, 5, 3, 4
    x = rng.normal(0, 1, (N, 3 * (5 + cls), H, W))
    gt = np.zeros((N, B, 4))
    gt[..., :2] = rng.uniform(0.05, 0.95, (N, B, 2))
    gt[..., 2:] = rng.uniform(0.05, 0.5, (N, B, 2))
    gt[1, 3] = 0  # padding
    lab = rng.integers(0, cls, (N, B)).astype(np.int32)
    sc = rng.uniform(0.5, 1, (N, B))
    return x, gt, lab, sc


# Paddle 2.6.2's yolo_loss on _yolo_inputs() (its gradients agreed with oar's to 2e-16 as well)
_YOLO_PADDLE = {(True, False): [73.24699041, 66.19577175], (True, True): [71.32065867, 62.43125679],
                (False, False): [73.29226819, 66.16684164], (False, True): [71.35647532, 62.4149515]}


@pytest.mark.parametrize("smooth,use_score", list(_YOLO_PADDLE))
def test_yolo_loss_matches_paddle(smooth, use_score):
    x, gt, lab, sc = _yolo_inputs()
    anchors = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119]
    loss = ops.yolo_loss(_t(x), _t(gt), oar.to_tensor(lab), anchors, [1, 2, 3], 3, 0.5, 32,
                         gt_score=_t(sc) if use_score else None, use_label_smooth=smooth)
    check(loss, _YOLO_PADDLE[(smooth, use_score)], rtol=1e-8)


def test_yolo_loss_gradient():
    rng = np.random.default_rng(2)
    x = rng.normal(0, 1, (1, 7, 2, 2))
    gt = np.array([[[0.3, 0.6, 0.4, 0.3], [0.8, 0.2, 0.2, 0.5]]])
    lab = np.array([[1, 0]], np.int32)
    check_grad(lambda t: ops.yolo_loss(t, _t(gt), oar.to_tensor(lab), [10, 13, 16, 30], [1], 2, 0.7, 16), [x],
               rtol=1e-4, atol=1e-6)


def test_read_file_and_decode_jpeg(tmp_path):
    from PIL import Image
    rng = np.random.default_rng(4)
    img = Image.fromarray(rng.integers(0, 255, (6, 5, 3), dtype=np.uint8))
    path = str(tmp_path / "a.jpg")
    img.save(path, quality=95)
    data = ops.read_file(path)
    assert data.dtype == oar.uint8 and data.shape == [len(open(path, "rb").read())]
    want = np.asarray(Image.open(path)).transpose(2, 0, 1)
    check(ops.decode_jpeg(data), want)
    check(ops.decode_jpeg(data, mode="gray"), np.asarray(Image.open(path).convert("L"))[None])
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        ops.read_file(str(tmp_path / "nope.jpg"))
