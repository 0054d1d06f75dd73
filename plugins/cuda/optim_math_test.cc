// Runs the optimizer updates' per-element code (optim_math.h) on the host against the CPU kernel's
// loops (plugins/cpu/optim.cc, transcribed below with its operations in its order): the results must be
// bit-identical, in float32 and float64, for every optimizer and option.
#include "optim_math.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

using namespace oar_cuda::optim;

constexpr int kN = 2000;

template <typename C>
struct State {
  std::vector<C> t[7];
  C pow[2];
};

template <typename C>
State<C> make_state(std::mt19937& gen) {
  std::uniform_real_distribution<double> sym(-1, 1), pos(0.05, 1), tiny(-0.1, 0.1);
  State<C> s;
  for (int b = 0; b < 7; ++b) {
    s.t[b].resize(kN);
    for (C& v : s.t[b]) v = C(b < 2 ? sym(gen) : b == 3 || b == 6 ? pos(gen) : tiny(gen));
  }
  s.pow[0] = C(std::uniform_real_distribution<double>(0.5, 0.95)(gen));
  s.pow[1] = C(std::uniform_real_distribution<double>(0.5, 0.999)(gen));
  return s;
}

template <typename C>
Param param_of(State<C>& s, double lr, double l2, double gs, double extra) {
  Param q{};
  for (int b = 0; b < 7; ++b) q.t[b] = s.t[b].data();
  q.pow[0] = &s.pow[0], q.pow[1] = &s.pow[1];
  q.pow_f64 = sizeof(C) == 8;
  q.n = kN, q.lr = lr, q.l2 = l2, q.gs = gs, q.extra = extra;
  return q;
}

// The CPU kernels' element loops (plugins/cpu/optim.cc), C the compute type, T = C.
template <typename C>
void cpu_reference(const char* op, State<C>& s, double lr_, double l2_, double gs_, double extra,
                   const Hyper& h) {
  C* p = s.t[0].data();
  const C* g = s.t[1].data();
  const C w = static_cast<C>(l2_), sc = static_cast<C>(gs_);
  const double b1p = s.pow[0], b2p = s.pow[1];
  if (!std::strcmp(op, "sgd")) {
    const C a = static_cast<C>(lr_);
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      p[i] = C(pv - a * (sc * g[i] + w * pv));
    }
  } else if (!std::strcmp(op, "momentum")) {
    const C a = static_cast<C>(lr_), m = static_cast<C>(h.a), rs = static_cast<C>(h.b);
    C* v = s.t[2].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = rs * sc * g[i] + w * pv;
      const C vv = m * v[i] + gv;
      v[i] = C(vv);
      p[i] = C(h.flag ? pv - (gv + m * vv) * a : pv - a * vv);
    }
  } else if (!std::strcmp(op, "adam")) {
    const double lr_t = lr_ * std::sqrt(1 - b2p) / (1 - b1p), eps_t = h.c * std::sqrt(1 - b2p);
    const C cb1 = static_cast<C>(h.a), cb2 = static_cast<C>(h.b), a = static_cast<C>(lr_t),
            e = static_cast<C>(eps_t);
    const C decay = static_cast<C>(extra);
    C *m1 = s.t[2].data(), *m2 = s.t[3].data(), *mx = s.t[6].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C m1v = cb1 * m1[i] + (1 - cb1) * gv;
      C m2v = cb2 * m2[i] + (1 - cb2) * gv * gv;
      m1[i] = C(m1v);
      m2[i] = C(m2v);
      if (h.flag) {
        m2v = std::max(m2v, mx[i]);
        mx[i] = C(m2v);
      }
      p[i] = C(pv * decay - a * (m1v / (std::sqrt(m2v) + e)));
    }
  } else if (!std::strcmp(op, "adamax")) {
    const C a = static_cast<C>(lr_ / (1 - b1p)), cb1 = static_cast<C>(h.a), cb2 = static_cast<C>(h.b),
            ce = static_cast<C>(h.c);
    C *m = s.t[2].data(), *u = s.t[3].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C mv = cb1 * m[i] + (1 - cb1) * gv;
      const C uv = std::max(cb2 * u[i] + ce, std::abs(gv));
      m[i] = C(mv);
      u[i] = C(uv);
      p[i] = C(pv - a * (mv / uv));
    }
  } else if (!std::strcmp(op, "adagrad")) {
    const C a = static_cast<C>(lr_), ce = static_cast<C>(h.a);
    C* m = s.t[2].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C mv = m[i] + gv * gv;
      m[i] = C(mv);
      p[i] = C(pv - a * gv / (std::sqrt(mv) + ce));
    }
  } else if (!std::strcmp(op, "adadelta")) {
    const C a = static_cast<C>(lr_), r = static_cast<C>(h.a), ce = static_cast<C>(h.b);
    C *sg = s.t[2].data(), *su = s.t[3].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C sgv = r * sg[i] + (1 - r) * gv * gv;
      const C d = -std::sqrt((su[i] + ce) / (sgv + ce)) * gv;
      sg[i] = C(sgv);
      su[i] = C(r * su[i] + (1 - r) * d * d);
      p[i] = C(pv + a * d);
    }
  } else if (!std::strcmp(op, "rmsprop")) {
    const C a = static_cast<C>(lr_), r = static_cast<C>(h.a), ce = static_cast<C>(h.b),
            cm = static_cast<C>(h.c);
    C *ms = s.t[2].data(), *mg = s.t[3].data(), *mo = s.t[4].data();
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C msv = r * ms[i] + (1 - r) * gv * gv;
      ms[i] = C(msv);
      C denom = msv + ce;
      if (h.flag) {
        const C mgv = r * mg[i] + (1 - r) * gv;
        mg[i] = C(mgv);
        denom = msv - mgv * mgv + ce;
      }
      const C mov = cm * mo[i] + a * gv / std::sqrt(denom);
      mo[i] = C(mov);
      p[i] = C(pv - mov);
    }
  } else if (!std::strcmp(op, "lamb")) {
    const double c1 = 1 / (1 - b1p), c2 = 1 / (1 - b2p);
    const C k1 = static_cast<C>(c1), k2 = static_cast<C>(c2), d = static_cast<C>(extra),
            ce = static_cast<C>(h.c);
    const C cb1 = static_cast<C>(h.a), cb2 = static_cast<C>(h.b);
    auto r_of = [&](C pv, C m1v, C m2v) { return (m1v * k1) / (std::sqrt(m2v * k2) + ce) + d * pv; };
    C *m1 = s.t[2].data(), *m2 = s.t[3].data();
    double ps = 0, rs = 0;
    for (int i = 0; i < kN; ++i) {
      const C pv = p[i];
      const C gv = sc * g[i] + w * pv;
      const C m1v = cb1 * m1[i] + (1 - cb1) * gv;
      const C m2v = cb2 * m2[i] + (1 - cb2) * gv * gv;
      m1[i] = C(m1v);
      m2[i] = C(m2v);
      const C rv = r_of(pv, C(m1v), C(m2v));
      ps += static_cast<double>(pv) * pv;
      rs += static_cast<double>(rv) * rv;
    }
    const double a = std::sqrt(ps), r = std::sqrt(rs);
    const double step = lr_ * (((extra > 0 || h.flag) && a > 0 && r > 0) ? a / r : 1.0);
    const C st = static_cast<C>(step);
    for (int i = 0; i < kN; ++i) p[i] = C(p[i] - st * r_of(p[i], m1[i], m2[i]));
  }
}

// The same update through optim_math.h (lamb's norms summed here in the CPU's order, so that its
// element code is compared exactly).
template <typename C>
void gpu_code(const char* op, State<C>& s, double lr, double l2, double gs, double extra, const Hyper& h) {
  const Param q = param_of(s, lr, l2, gs, extra);
  auto run = [&](auto u) {
    for (int64_t i = 0; i < kN; ++i) u(q, i);
  };
  if (!std::strcmp(op, "sgd")) run(Sgd<C>(q, h));
  if (!std::strcmp(op, "momentum")) run(Momentum<C>(q, h));
  if (!std::strcmp(op, "adam")) run(Adam<C>(q, h));
  if (!std::strcmp(op, "adamax")) run(Adamax<C>(q, h));
  if (!std::strcmp(op, "adagrad")) run(Adagrad<C>(q, h));
  if (!std::strcmp(op, "adadelta")) run(Adadelta<C>(q, h));
  if (!std::strcmp(op, "rmsprop")) run(Rmsprop<C>(q, h));
  if (!std::strcmp(op, "lamb")) {
    const Lamb<C> u(q, h);
    double ps = 0, rs = 0;
    for (int64_t i = 0; i < kN; ++i) {
      C pv, rv;
      u.moments(q, i, pv, rv);
      ps += static_cast<double>(pv) * pv;
      rs += static_cast<double>(rv) * rv;
    }
    const C step = static_cast<C>(lamb_step(lr, extra, h.flag != 0, ps, rs));
    for (int64_t i = 0; i < kN; ++i) u.apply(q, i, step);
  }
}

template <typename C>
int check(const char* op, const Hyper& h, double extra, std::mt19937& gen) {
  const State<C> start = make_state<C>(gen);
  State<C> want = start, got = start;
  cpu_reference<C>(op, want, 0.05, 0.01, 0.5, extra, h);
  gpu_code<C>(op, got, 0.05, 0.01, 0.5, extra, h);
  int bad = 0;
  for (int b = 0; b < 7; ++b) bad += std::memcmp(want.t[b].data(), got.t[b].data(), kN * sizeof(C)) != 0;
  // scale_pow: the CPU's scale_scalar
  C p = start.pow[0], q = start.pow[0];
  scale_pow(&p, 0.9, sizeof(C) == 8);
  q = sizeof(C) == 8 ? C(double(q) * 0.9) : C(static_cast<double>(q) * 0.9);
  bad += p != q;
  std::printf("%s %-8s %s flag=%d extra=%g\n", bad ? "FAIL" : "ok  ", op,
              sizeof(C) == 8 ? "float64" : "float32", h.flag, extra);
  return bad != 0;
}

}  // namespace

int main() {
  std::mt19937 gen(3);
  int failures = 0;
  struct Case {
    const char* op;
    Hyper h;
    double extra;
  };
  const Case cases[] = {
      {"sgd", {0, 0, 0, 0}, 0},
      {"momentum", {0.9, 0.7, 0, 0}, 0},
      {"momentum", {0.9, 1.0, 0, 1}, 0},
      {"adam", {0.9, 0.999, 1e-8, 0}, 1.0},
      {"adam", {0.9, 0.999, 1e-8, 1}, 1 - 0.05 * 0.01},  // amsgrad, AdamW decay
      {"adamax", {0.9, 0.999, 1e-8, 0}, 0},
      {"adagrad", {1e-6, 0, 0, 0}, 0},
      {"adadelta", {0.95, 1e-6, 0, 0}, 0},
      {"rmsprop", {0.95, 1e-6, 0.0, 0}, 0},
      {"rmsprop", {0.95, 1e-6, 0.9, 1}, 0},
      {"lamb", {0.9, 0.999, 1e-6, 0}, 0.01},
      {"lamb", {0.9, 0.999, 1e-6, 0}, 0.0},
      {"lamb", {0.9, 0.999, 1e-6, 1}, 0.0},
  };
  for (const Case& c : cases) {
    failures += check<float>(c.op, c.h, c.extra, gen);
    failures += check<double>(c.op, c.h, c.extra, gen);
  }
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
