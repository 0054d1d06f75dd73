// Detection kernels (framework/src/ops_vision.cc): roi_align, roi_pool, psroi_pool and their
// gradients, deform_im2col (+ grad) and greedy nms. Arithmetic is in double; float16/bfloat16 values
// are converted on load and store. Backward passes parallelise over what no two threads write
// together (channels, or images).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_common.h"
#include "elementwise.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;

template <class T>
double ld(T v) {
  return static_cast<double>(oar::sdk::compute_t<T>(v));
}

int64_t int_at(const TensorView& t, int64_t i) {
  return t.dtype() == OAR_DTYPE_INT64 ? t.data<int64_t>()[i] : static_cast<int64_t>(t.data<int32_t>()[i]);
}
double box_at(const TensorView& b, int64_t i) {
  return b.dtype() == OAR_DTYPE_FLOAT64 ? b.data<double>()[i] : static_cast<double>(b.data<float>()[i]);
}

// The image of each box from boxes_num (counts that must add up to the number of boxes).
std::vector<int64_t> box_images(const char* op, const TensorView& num, int64_t boxes) {
  std::vector<int64_t> img;
  img.reserve(static_cast<size_t>(boxes));
  int64_t total = 0;
  for (int64_t n = 0; n < num.dim(0); ++n) {
    int64_t k = int_at(num, n);
    OAR_SDK_CHECK(k >= 0 && total + k <= boxes, OAR_ERR_INVALID_ARGUMENT,
                  op << ": boxes_num[" << n << "] = " << k << " is negative or makes more than the " << boxes
                     << " boxes given");
    total += k;
    img.insert(img.end(), static_cast<size_t>(k), n);
  }
  OAR_SDK_CHECK(total == boxes, OAR_ERR_INVALID_ARGUMENT,
                op << ": boxes_num adds up to " << total << " but boxes has " << boxes << " rows");
  return img;
}

struct RoiAttrs {
  int64_t ph, pw;
  double scale;
  int64_t ratio;
  bool aligned;
  int64_t out_c;
};
RoiAttrs roi_attrs(const KernelContext& ctx) {
  return {ctx.attr_int("pooled_height"),      ctx.attr_int("pooled_width"),
          ctx.attr_float("spatial_scale"),    ctx.attr_int_or("sampling_ratio", -1),
          ctx.attr_int_or("aligned", 1) != 0, ctx.attr_int_or("output_channels", 0)};
}

// ---- roi_align -------------------------------------------------------------------------------------
// Each output bin is the mean of bilinear samples on a regular grid inside it (Mask R-CNN; Paddle's and
// Detectron2's rules for the box offset, the adaptive grid and samples near the border). A bin's taps
// (plane index, weight / count) are the same for every channel, so they are computed once per box.
struct Tap {
  int64_t at;
  double w;
};
struct BoxTaps {
  std::vector<Tap> taps;
  std::vector<size_t> start;  // bin b's taps are [start[b], start[b + 1])
};

void add_bilinear(double y, double x, int64_t H, int64_t W, double scale, std::vector<Tap>& out) {
  if (y < -1.0 || y > H || x < -1.0 || x > W) return;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= H - 1) {
    y1 = y0 = H - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= W - 1) {
    x1 = x0 = W - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  out.push_back({y0 * W + x0, hy * hx * scale});
  out.push_back({y0 * W + x1, hy * lx * scale});
  out.push_back({y1 * W + x0, ly * hx * scale});
  out.push_back({y1 * W + x1, ly * lx * scale});
}

BoxTaps align_taps(const RoiAttrs& a, const TensorView& boxes, int64_t r, int64_t H, int64_t W) {
  const double off = a.aligned ? 0.5 : 0.0;
  const double x1 = box_at(boxes, r * 4) * a.scale - off, y1 = box_at(boxes, r * 4 + 1) * a.scale - off;
  double rw = box_at(boxes, r * 4 + 2) * a.scale - off - x1,
         rh = box_at(boxes, r * 4 + 3) * a.scale - off - y1;
  if (!a.aligned) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  const double bh = rh / a.ph, bw = rw / a.pw;
  const int64_t gh = a.ratio > 0 ? a.ratio : static_cast<int64_t>(std::ceil(rh / a.ph));
  const int64_t gw = a.ratio > 0 ? a.ratio : static_cast<int64_t>(std::ceil(rw / a.pw));
  const double inv = 1.0 / static_cast<double>(std::max<int64_t>(gh * gw, 1));
  BoxTaps t;
  t.start.push_back(0);
  for (int64_t ph = 0; ph < a.ph; ++ph)
    for (int64_t pw = 0; pw < a.pw; ++pw) {
      for (int64_t iy = 0; iy < gh; ++iy) {
        const double y = y1 + ph * bh + (iy + 0.5) * bh / gh;
        for (int64_t ix = 0; ix < gw; ++ix)
          add_bilinear(y, x1 + pw * bw + (ix + 0.5) * bw / gw, H, W, inv, t.taps);
      }
      t.start.push_back(t.taps.size());
    }
  return t;
}

void roi_align_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), boxes = ctx.input(1), out = ctx.output(0);
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t R = boxes.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), bins = a.ph * a.pw;
  const std::vector<int64_t> img = box_images("roi_align", ctx.input(2), R);
  dispatch<FloatType>("roi_align", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, R, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const BoxTaps t = align_taps(a, boxes, r, H, W);
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = px + (img[r] * C + c) * H * W;
          T* o = po + (r * C + c) * bins;
          for (int64_t b = 0; b < bins; ++b) {
            double s = 0;
            for (size_t k = t.start[b]; k < t.start[b + 1]; ++k) s += t.taps[k].w * ld(plane[t.taps[k].at]);
            o[b] = convert<T>(s);
          }
        }
      }
    });
  });
}

// dx[image, c] += taps * grad_out[r, c]: parallel over channels, boxes in order.
void roi_align_grad_kernel(KernelContext& ctx) {
  TensorView boxes = ctx.input(0), gy = ctx.input(2), dx = ctx.output(0);
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t R = boxes.dim(0), C = dx.dim(1), H = dx.dim(2), W = dx.dim(3), bins = a.ph * a.pw;
  const std::vector<int64_t> img = box_images("roi_align_grad", ctx.input(1), R);
  std::vector<BoxTaps> taps;
  for (int64_t r = 0; r < R; ++r) taps.push_back(align_taps(a, boxes, r, H, W));
  dispatch<FloatType>("roi_align_grad", gy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gy.data<T>();
    T* pd = dx.data<T>();
    const int64_t N = dx.dim(0);
    parallel_for(0, C, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc(static_cast<size_t>(H * W));
      for (int64_t c = lo; c < hi; ++c)
        for (int64_t n = 0; n < N; ++n) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t r = 0; r < R; ++r) {
            if (img[r] != n) continue;
            const T* g = pg + (r * C + c) * bins;
            const BoxTaps& t = taps[r];
            for (int64_t b = 0; b < bins; ++b) {
              const double gv = ld(g[b]);
              for (size_t k = t.start[b]; k < t.start[b + 1]; ++k) acc[t.taps[k].at] += t.taps[k].w * gv;
            }
          }
          T* plane = pd + (n * C + c) * H * W;
          for (int64_t i = 0; i < H * W; ++i) plane[i] = convert<T>(acc[i]);
        }
    });
  });
}

// ---- roi_pool ---------------------------------------------------------------------------------------
// Max over integer bins of the box rounded to the feature grid (Fast R-CNN, as Paddle): an empty bin
// gives 0 with argmax -1.
struct PoolBin {
  int64_t h0, h1, w0, w1;
};
PoolBin roi_pool_bin(const RoiAttrs& a, const TensorView& boxes, int64_t r, int64_t ph, int64_t pw, int64_t H,
                     int64_t W) {
  const int64_t x1 = static_cast<int64_t>(std::round(box_at(boxes, r * 4) * a.scale));
  const int64_t y1 = static_cast<int64_t>(std::round(box_at(boxes, r * 4 + 1) * a.scale));
  const int64_t x2 = static_cast<int64_t>(std::round(box_at(boxes, r * 4 + 2) * a.scale));
  const int64_t y2 = static_cast<int64_t>(std::round(box_at(boxes, r * 4 + 3) * a.scale));
  const double bh = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / a.ph;
  const double bw = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / a.pw;
  auto clampi = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
  return {clampi(static_cast<int64_t>(std::floor(ph * bh)) + y1, H),
          clampi(static_cast<int64_t>(std::ceil((ph + 1) * bh)) + y1, H),
          clampi(static_cast<int64_t>(std::floor(pw * bw)) + x1, W),
          clampi(static_cast<int64_t>(std::ceil((pw + 1) * bw)) + x1, W)};
}

void roi_pool_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), boxes = ctx.input(1), out = ctx.output(0), arg = ctx.output(1);
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t R = boxes.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::vector<int64_t> img = box_images("roi_pool", ctx.input(2), R);
  dispatch<FloatType>("roi_pool", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    int64_t* pa = arg.data<int64_t>();
    parallel_for(0, R, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t ph = 0; ph < a.ph; ++ph)
          for (int64_t pw = 0; pw < a.pw; ++pw) {
            const PoolBin b = roi_pool_bin(a, boxes, r, ph, pw, H, W);
            for (int64_t c = 0; c < C; ++c) {
              const T* plane = px + (img[r] * C + c) * H * W;
              const int64_t o = ((r * C + c) * a.ph + ph) * a.pw + pw;
              int64_t best = -1;
              double m = 0;
              for (int64_t h = b.h0; h < b.h1; ++h)
                for (int64_t w = b.w0; w < b.w1; ++w) {
                  const double v = ld(plane[h * W + w]);
                  if (best < 0 || v > m || std::isnan(v)) m = v, best = h * W + w;
                }
              po[o] = convert<T>(best < 0 ? 0.0 : m);
              pa[o] = best;
            }
          }
    });
  });
}

void roi_pool_grad_kernel(KernelContext& ctx) {
  TensorView arg = ctx.input(1), gy = ctx.input(2), dx = ctx.output(0);
  const int64_t R = gy.dim(0), C = dx.dim(1), HW = dx.dim(2) * dx.dim(3), bins = gy.dim(2) * gy.dim(3);
  const std::vector<int64_t> img = box_images("roi_pool_grad", ctx.input(0), R);
  dispatch<FloatType>("roi_pool_grad", gy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gy.data<T>();
    const int64_t* pa = arg.data<int64_t>();
    T* pd = dx.data<T>();
    ErrorFlag bad;
    parallel_for(0, C, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc(static_cast<size_t>(HW));
      for (int64_t c = lo; c < hi; ++c)
        for (int64_t n = 0; n < dx.dim(0); ++n) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t r = 0; r < R; ++r) {
            if (img[r] != n) continue;
            for (int64_t b = 0; b < bins; ++b) {
              const int64_t o = (r * C + c) * bins + b, at = pa[o];
              if (at < 0) continue;
              if (at >= HW) {
                bad.set();
                continue;
              }
              acc[at] += ld(pg[o]);
            }
          }
          T* plane = pd + (n * C + c) * HW;
          for (int64_t i = 0; i < HW; ++i) plane[i] = convert<T>(acc[i]);
        }
    });
    OAR_SDK_CHECK(!bad.get(), OAR_ERR_OUT_OF_RANGE,
                  "roi_pool_grad: an argmax index is outside the input plane");
  });
}

// ---- psroi_pool ---------------------------------------------------------------------------------------
// Position-sensitive average pooling (R-FCN, as Paddle): output channel c, bin (ph, pw) averages input
// channel (c * PH + ph) * PW + pw over the bin; an empty bin gives 0.
PoolBin psroi_bin(const RoiAttrs& a, const TensorView& boxes, int64_t r, int64_t ph, int64_t pw, int64_t H,
                  int64_t W) {
  const double x1 = std::round(box_at(boxes, r * 4)) * a.scale;
  const double y1 = std::round(box_at(boxes, r * 4 + 1)) * a.scale;
  const double x2 = (std::round(box_at(boxes, r * 4 + 2)) + 1.0) * a.scale;
  const double y2 = (std::round(box_at(boxes, r * 4 + 3)) + 1.0) * a.scale;
  const double bh = std::max(y2 - y1, 0.1) / a.ph, bw = std::max(x2 - x1, 0.1) / a.pw;
  auto clampi = [](double v, int64_t hi) {
    return std::min(std::max<int64_t>(static_cast<int64_t>(v), 0), hi);
  };
  return {clampi(std::floor(bh * ph + y1), H), clampi(std::ceil(bh * (ph + 1) + y1), H),
          clampi(std::floor(bw * pw + x1), W), clampi(std::ceil(bw * (pw + 1) + x1), W)};
}

void psroi_pool_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), boxes = ctx.input(1), out = ctx.output(0);
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t R = boxes.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), OC = a.out_c;
  const std::vector<int64_t> img = box_images("psroi_pool", ctx.input(2), R);
  dispatch<FloatType>("psroi_pool", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    parallel_for(0, R, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t ph = 0; ph < a.ph; ++ph)
          for (int64_t pw = 0; pw < a.pw; ++pw) {
            const PoolBin b = psroi_bin(a, boxes, r, ph, pw, H, W);
            const double area = static_cast<double>((b.h1 - b.h0) * (b.w1 - b.w0));
            for (int64_t c = 0; c < OC; ++c) {
              const T* plane = px + (img[r] * C + (c * a.ph + ph) * a.pw + pw) * H * W;
              double s = 0;
              for (int64_t h = b.h0; h < b.h1; ++h)
                for (int64_t w = b.w0; w < b.w1; ++w) s += ld(plane[h * W + w]);
              po[((r * OC + c) * a.ph + ph) * a.pw + pw] = convert<T>(area > 0 ? s / area : 0.0);
            }
          }
    });
  });
}

// Every input channel belongs to one (c, ph, pw): parallel over input channels.
void psroi_pool_grad_kernel(KernelContext& ctx) {
  TensorView boxes = ctx.input(0), gy = ctx.input(2), dx = ctx.output(0);
  const RoiAttrs a = roi_attrs(ctx);
  const int64_t R = boxes.dim(0), N = dx.dim(0), C = dx.dim(1), H = dx.dim(2), W = dx.dim(3), OC = a.out_c;
  const std::vector<int64_t> img = box_images("psroi_pool_grad", ctx.input(1), R);
  dispatch<FloatType>("psroi_pool_grad", gy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gy.data<T>();
    T* pd = dx.data<T>();
    parallel_for(0, C, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc(static_cast<size_t>(H * W));
      for (int64_t ic = lo; ic < hi; ++ic) {
        const int64_t c = ic / (a.ph * a.pw), ph = (ic / a.pw) % a.ph, pw = ic % a.pw;
        for (int64_t n = 0; n < N; ++n) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t r = 0; r < R; ++r) {
            if (img[r] != n) continue;
            const PoolBin b = psroi_bin(a, boxes, r, ph, pw, H, W);
            const double area = static_cast<double>((b.h1 - b.h0) * (b.w1 - b.w0));
            if (area <= 0) continue;
            const double g = ld(pg[((r * OC + c) * a.ph + ph) * a.pw + pw]) / area;
            for (int64_t h = b.h0; h < b.h1; ++h)
              for (int64_t w = b.w0; w < b.w1; ++w) acc[h * W + w] += g;
          }
          T* plane = pd + (n * C + ic) * H * W;
          for (int64_t i = 0; i < H * W; ++i) plane[i] = convert<T>(acc[i]);
        }
      }
    });
  });
}

// ---- deform_im2col ---------------------------------------------------------------------------------
struct Deform {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw, dh, dw, dg, Ho, Wo;
};
Deform deform_of(const KernelContext& ctx, const TensorView& x, const TensorView& offset) {
  auto k = ctx.attr_ints("kernel_sizes"), s = ctx.attr_ints("strides"), p = ctx.attr_ints("paddings"),
       d = ctx.attr_ints("dilations");
  return {x.dim(0),
          x.dim(1),
          x.dim(2),
          x.dim(3),
          k[0],
          k[1],
          s[0],
          s[1],
          p[0],
          p[1],
          d[0],
          d[1],
          ctx.attr_int("deformable_groups"),
          offset.dim(2),
          offset.dim(3)};
}

// Bilinear read of one plane at (y, x) with zeros outside, and its derivatives in y and x. Returns
// false (nothing read) outside (-1, H) x (-1, W), as Paddle's deformable conv.
template <class T>
bool deform_sample(const T* plane, int64_t H, int64_t W, double y, double x, double* v, double* dy,
                   double* dx, int64_t at[4], double wt[4]) {
  if (!(y > -1 && x > -1 && y < H && x < W)) return false;
  const int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  const double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  const int64_t ys[2] = {y0, y0 + 1}, xs[2] = {x0, x0 + 1};
  const double wy[2] = {hy, ly}, wx[2] = {hx, lx};
  double val = 0, gy = 0, gx = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const bool in = ys[i] >= 0 && ys[i] < H && xs[j] >= 0 && xs[j] < W;
      const double c = in ? ld(plane[ys[i] * W + xs[j]]) : 0.0;
      at[i * 2 + j] = in ? ys[i] * W + xs[j] : -1;
      wt[i * 2 + j] = wy[i] * wx[j];
      val += wy[i] * wx[j] * c;
      gy += (i ? 1 : -1) * wx[j] * c;
      gx += (j ? 1 : -1) * wy[i] * c;
    }
  *v = val;
  *dy = gy;
  *dx = gx;
  return true;
}

// Calls f(n, c, k, p, y, x, mask value, offset index of the h offset, mask index) for every column entry
// of images [n0, n1) (column row c*kk + k, column p).
template <class T, class F>
void deform_walk(const Deform& g, const T* off, const T* msk, int64_t n, int64_t c, F&& f) {
  const int64_t kk = g.kh * g.kw, L = g.Ho * g.Wo, grp = c / (g.C / g.dg);
  for (int64_t k = 0; k < kk; ++k) {
    const int64_t i = k / g.kw, j = k % g.kw;
    const int64_t oh = ((n * g.dg + grp) * kk + k) * 2 * L, mi = ((n * g.dg + grp) * kk + k) * L;
    for (int64_t p = 0; p < L; ++p) {
      const int64_t ho = p / g.Wo, wo = p % g.Wo;
      const double y = static_cast<double>(ho * g.sh - g.ph + i * g.dh) + ld(off[oh + p]);
      const double x = static_cast<double>(wo * g.sw - g.pw + j * g.dw) + ld(off[oh + L + p]);
      f(k, p, y, x, ld(msk[mi + p]), oh + p, mi + p);
    }
  }
}

void deform_im2col_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), offset = ctx.input(1), mask = ctx.input(2), out = ctx.output(0);
  const Deform g = deform_of(ctx, x, offset);
  dispatch<FloatType>("deform_im2col", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *po = offset.data<T>(), *pm = mask.data<T>();
    T* col = out.data<T>();
    const int64_t kk = g.kh * g.kw, L = g.Ho * g.Wo;
    parallel_for(0, g.N * g.C, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t nc = lo; nc < hi; ++nc) {
        const int64_t n = nc / g.C, c = nc % g.C;
        const T* plane = px + nc * g.H * g.W;
        T* row = col + (n * g.C * kk + c * kk) * L;
        deform_walk(g, po, pm, n, c,
                    [&](int64_t k, int64_t p, double y, double xx, double m, int64_t, int64_t) {
                      double v = 0, dy, dx;
                      int64_t at[4];
                      double wt[4];
                      if (!deform_sample(plane, g.H, g.W, y, xx, &v, &dy, &dx, at, wt)) v = 0;
                      row[k * L + p] = convert<T>(v * m);
                    });
      }
    });
  });
}

// Parallel over images: each image's dx, doffset and dmask slices are its own.
void deform_im2col_grad_kernel(KernelContext& ctx) {
  TensorView x = ctx.input(0), offset = ctx.input(1), mask = ctx.input(2), gcol = ctx.input(3);
  const Deform g = deform_of(ctx, x, offset);
  dispatch<FloatType>("deform_im2col_grad", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T *px = x.data<T>(), *po = offset.data<T>(), *pm = mask.data<T>(), *pg = gcol.data<T>();
    T *gx = ctx.output(0).data<T>(), *go = ctx.output(1).data<T>(), *gm = ctx.output(2).data<T>();
    const int64_t kk = g.kh * g.kw, L = g.Ho * g.Wo;
    parallel_for(0, g.N, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n) {
        std::vector<double> ax(static_cast<size_t>(g.C * g.H * g.W)),
            ao(static_cast<size_t>(g.dg * kk * 2 * L)), am(static_cast<size_t>(g.dg * kk * L));
        const int64_t obase = n * g.dg * kk * 2 * L, mbase = n * g.dg * kk * L;
        for (int64_t c = 0; c < g.C; ++c) {
          const T* plane = px + (n * g.C + c) * g.H * g.W;
          const T* grow = pg + (n * g.C * kk + c * kk) * L;
          double* dplane = ax.data() + c * g.H * g.W;
          deform_walk(g, po, pm, n, c,
                      [&](int64_t k, int64_t p, double y, double xx, double m, int64_t oi, int64_t mi) {
                        double v, dy, dx;
                        int64_t at[4];
                        double wt[4];
                        if (!deform_sample(plane, g.H, g.W, y, xx, &v, &dy, &dx, at, wt)) return;
                        const double gv = ld(grow[k * L + p]);
                        for (int q = 0; q < 4; ++q)
                          if (at[q] >= 0) dplane[at[q]] += gv * m * wt[q];
                        ao[oi - obase] += gv * m * dy;
                        ao[oi - obase + L] += gv * m * dx;
                        am[mi - mbase] += gv * v;
                      });
        }
        for (size_t i = 0; i < ax.size(); ++i) gx[n * g.C * g.H * g.W + i] = convert<T>(ax[i]);
        for (size_t i = 0; i < ao.size(); ++i) go[obase + i] = convert<T>(ao[i]);
        for (size_t i = 0; i < am.size(); ++i) gm[mbase + i] = convert<T>(am[i]);
      }
    });
  });
}

// ---- nms -----------------------------------------------------------------------------------------
void nms_kernel(KernelContext& ctx) {
  TensorView boxes = ctx.input(0), keep = ctx.output(0);
  const double thr = ctx.attr_float("iou_threshold");
  const int64_t n = boxes.dim(0);
  dispatch<FloatType>("nms", boxes.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* b = boxes.data<T>();
    bool* k = keep.data<bool>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < n; ++i) {
      const double x1 = ld(b[i * 4]), y1 = ld(b[i * 4 + 1]), x2 = ld(b[i * 4 + 2]), y2 = ld(b[i * 4 + 3]);
      const double area = (x2 - x1) * (y2 - y1);
      bool ok = true;
      for (int64_t j : kept) {
        const double u1 = ld(b[j * 4]), v1 = ld(b[j * 4 + 1]), u2 = ld(b[j * 4 + 2]), v2 = ld(b[j * 4 + 3]);
        const double iw = std::max(std::min(x2, u2) - std::max(x1, u1), 0.0);
        const double ih = std::max(std::min(y2, v2) - std::max(y1, v1), 0.0);
        const double inter = iw * ih, uni = area + (u2 - u1) * (v2 - v1) - inter;
        if (uni > 0 && inter / uni > thr) {
          ok = false;
          break;
        }
      }
      k[i] = ok;
      if (ok) kept.push_back(i);
    }
  });
}

}  // namespace

void register_detection_kernels(Registry& r) {
  const auto& f = oar::sdk::float_dtypes();
  r.add("roi_align", f, &roi_align_kernel);
  r.add("roi_align_grad", f, &roi_align_grad_kernel);
  r.add("roi_pool", f, &roi_pool_kernel);
  r.add("roi_pool_grad", f, &roi_pool_grad_kernel);
  r.add("psroi_pool", f, &psroi_pool_kernel);
  r.add("psroi_pool_grad", f, &psroi_pool_grad_kernel);
  r.add("deform_im2col", f, &deform_im2col_kernel);
  r.add("deform_im2col_grad", f, &deform_im2col_grad_kernel);
  r.add("nms", f, &nms_kernel);
}

}  // namespace oar_cpu
