// The per-element arithmetic of the fused optimizer updates (optim.cu), as host+device code so that
// optim_math_test.cc runs it on the host against the CPU kernel's loops (plugins/cpu/optim.cc).
//
// Each update does the CPU kernel's operations in the CPU kernel's order, in the compute type of the
// parameter dtype (float for float16/bfloat16), and every multiply/add on the device is a rounded
// intrinsic (__fmul_rn, ...): nvcc would otherwise contract a*b+c into one FMA, which rounds once
// where the CPU rounds twice (the CPU plugin is built without FMA). So the results are the CPU's bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda_common.h"

namespace oar_cuda {
namespace optim {

// ---- arithmetic rounded as the CPU's (no contraction) ----------------------------------------------
#if defined(OAR_GPU_DEVICE_PASS)
OAR_HD float mul(float a, float b) { return __fmul_rn(a, b); }
OAR_HD double mul(double a, double b) { return __dmul_rn(a, b); }
OAR_HD float add(float a, float b) { return __fadd_rn(a, b); }
OAR_HD double add(double a, double b) { return __dadd_rn(a, b); }
OAR_HD float sub(float a, float b) { return __fsub_rn(a, b); }
OAR_HD double sub(double a, double b) { return __dsub_rn(a, b); }
OAR_HD float dv(float a, float b) { return __fdiv_rn(a, b); }
OAR_HD double dv(double a, double b) { return __ddiv_rn(a, b); }
OAR_HD float sq(float a) { return __fsqrt_rn(a); }
OAR_HD double sq(double a) { return __dsqrt_rn(a); }
#else  // the host (tests): plain IEEE operations, as the CPU plugin compiles them
OAR_HD float mul(float a, float b) { return a * b; }
OAR_HD double mul(double a, double b) { return a * b; }
OAR_HD float add(float a, float b) { return a + b; }
OAR_HD double add(double a, double b) { return a + b; }
OAR_HD float sub(float a, float b) { return a - b; }
OAR_HD double sub(double a, double b) { return a - b; }
OAR_HD float dv(float a, float b) { return a / b; }
OAR_HD double dv(double a, double b) { return a / b; }
OAR_HD float sq(float a) { return std::sqrt(a); }
OAR_HD double sq(double a) { return std::sqrt(a); }
#endif
template <typename C>
OAR_HD C maxv(C a, C b) {  // std::max's rule: a unless a < b
  return a < b ? b : a;
}
OAR_HD float absv(float a) { return fabsf(a); }
OAR_HD double absv(double a) { return fabs(a); }

template <typename T>
OAR_HD acc_t<T> ld(const void* p, int64_t i) {
  return to_acc(static_cast<const T*>(p)[i]);
}
template <typename T>
OAR_HD void st(void* p, int64_t i, acc_t<T> v) {
  static_cast<T*>(p)[i] = from_acc<T>(v);
}
// A value stored as T and read back (the CPU's static_cast<C>(T(v))).
template <typename T>
OAR_HD acc_t<T> round_trip(acc_t<T> v) {
  return to_acc(from_acc<T>(v));
}

// ---- one parameter of one call ------------------------------------------------------------------------
// t[0] param, t[1] grad, t[2..] accumulators, pow[0..1] the beta powers (one float32/float64 element,
// read where the update runs); per-parameter scalars in float64, cast to the compute type as the CPU
// casts them.
struct Param {
  void* t[7];
  const void* pow[2];
  int32_t pow_f64;
  int64_t n;
  double lr, l2, gs, extra;  // extra: adam's decay factor (1 - lr * coeff), lamb's weight decay
};

// Hyper-parameters shared by all parameters of a call, per op:
// momentum (mu, rescale_grad, -, use_nesterov); adam (beta1, beta2, epsilon, amsgrad); adamax (beta1,
// beta2, epsilon); adagrad (epsilon); adadelta (rho, epsilon); rmsprop (rho, epsilon, momentum, centered);
// lamb (beta1, beta2, epsilon, always_adapt).
struct Hyper {
  double a, b, c;
  int32_t flag;
};

OAR_HD double read_pow(const void* p, int32_t f64) {
  return f64 ? *static_cast<const double*>(p) : static_cast<double>(*static_cast<const float*>(p));
}

// g' = grad_scale * g + l2 * p, every update's first step.
template <typename C>
OAR_HD C grad_of(C sc, C g, C w, C pv) {
  return add(mul(sc, g), mul(w, pv));
}

// sgd: p -= lr * g'
template <typename T>
struct Sgd {
  using C = acc_t<T>;
  C a, w, sc;
  OAR_HD Sgd(const Param& q, const Hyper&) : a(C(q.lr)), w(C(q.l2)), sc(C(q.gs)) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C pv = ld<T>(q.t[0], i);
    st<T>(q.t[0], i, sub(pv, mul(a, grad_of(sc, ld<T>(q.t[1], i), w, pv))));
  }
};

// momentum: g' = rescale * grad_scale * g + l2 * p; v = mu v + g'; p -= lr v, or with Nesterov
// p -= (g' + mu v) lr
template <typename T>
struct Momentum {
  using C = acc_t<T>;
  C a, w, sc, m, rs;
  bool nesterov;
  OAR_HD Momentum(const Param& q, const Hyper& h)
      : a(C(q.lr)), w(C(q.l2)), sc(C(q.gs)), m(C(h.a)), rs(C(h.b)), nesterov(h.flag != 0) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C pv = ld<T>(q.t[0], i);
    const C gv = add(mul(mul(rs, sc), ld<T>(q.t[1], i)), mul(w, pv));
    const C vv = add(mul(m, ld<T>(q.t[2], i)), gv);
    st<T>(q.t[2], i, vv);
    st<T>(q.t[0], i, nesterov ? sub(pv, mul(add(gv, mul(m, vv)), a)) : sub(pv, mul(a, vv)));
  }
};

// adam/adamw: lr_t = lr sqrt(1 - b2p) / (1 - b1p), eps_t = eps sqrt(1 - b2p) (float64, from the beta
// powers before this step); m1, m2 moving averages; amsgrad keeps max(m2_max, m2);
// p = p * decay - lr_t m1 / (sqrt(m2) + eps_t)
template <typename T>
struct Adam {
  using C = acc_t<T>;
  C a, e, w, sc, decay, cb1, cb2;
  bool amsgrad;
  OAR_HD Adam(const Param& q, const Hyper& h)
      : w(C(q.l2)), sc(C(q.gs)), decay(C(q.extra)), cb1(C(h.a)), cb2(C(h.b)), amsgrad(h.flag != 0) {
    const double b1p = read_pow(q.pow[0], q.pow_f64), b2p = read_pow(q.pow[1], q.pow_f64);
    const double root = sq(sub(1.0, b2p));
    a = C(dv(mul(q.lr, root), sub(1.0, b1p)));
    e = C(mul(h.c, root));
  }
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C one = C(1);
    const C pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C m1v = add(mul(cb1, ld<T>(q.t[2], i)), mul(sub(one, cb1), gv));
    C m2v = add(mul(cb2, ld<T>(q.t[3], i)), mul(mul(sub(one, cb2), gv), gv));
    st<T>(q.t[2], i, m1v);
    st<T>(q.t[3], i, m2v);
    if (amsgrad) {
      m2v = maxv(m2v, ld<T>(q.t[6], i));
      st<T>(q.t[6], i, m2v);
    }
    st<T>(q.t[0], i, sub(mul(pv, decay), mul(a, dv(m1v, add(sq(m2v), e)))));
  }
};

// adamax: m = b1 m + (1 - b1) g'; u = max(b2 u + eps, |g'|); p -= lr / (1 - b1p) * m / u
template <typename T>
struct Adamax {
  using C = acc_t<T>;
  C a, w, sc, cb1, cb2, ce;
  OAR_HD Adamax(const Param& q, const Hyper& h)
      : a(C(dv(q.lr, sub(1.0, read_pow(q.pow[0], q.pow_f64))))),
        w(C(q.l2)),
        sc(C(q.gs)),
        cb1(C(h.a)),
        cb2(C(h.b)),
        ce(C(h.c)) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C one = C(1);
    const C pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C mv = add(mul(cb1, ld<T>(q.t[2], i)), mul(sub(one, cb1), gv));
    const C uv = maxv(add(mul(cb2, ld<T>(q.t[3], i)), ce), absv(gv));
    st<T>(q.t[2], i, mv);
    st<T>(q.t[3], i, uv);
    st<T>(q.t[0], i, sub(pv, mul(a, dv(mv, uv))));
  }
};

// adagrad: m += g'^2; p -= lr g' / (sqrt(m) + eps)
template <typename T>
struct Adagrad {
  using C = acc_t<T>;
  C a, w, sc, ce;
  OAR_HD Adagrad(const Param& q, const Hyper& h) : a(C(q.lr)), w(C(q.l2)), sc(C(q.gs)), ce(C(h.a)) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C mv = add(ld<T>(q.t[2], i), mul(gv, gv));
    st<T>(q.t[2], i, mv);
    st<T>(q.t[0], i, sub(pv, dv(mul(a, gv), add(sq(mv), ce))));
  }
};

// adadelta: E[g^2] = rho E[g^2] + (1 - rho) g'^2; d = -sqrt((E[dx^2] + eps) / (E[g^2] + eps)) g';
// E[dx^2] = rho E[dx^2] + (1 - rho) d^2; p += lr d
template <typename T>
struct Adadelta {
  using C = acc_t<T>;
  C a, w, sc, r, ce;
  OAR_HD Adadelta(const Param& q, const Hyper& h)
      : a(C(q.lr)), w(C(q.l2)), sc(C(q.gs)), r(C(h.a)), ce(C(h.b)) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C one = C(1);
    const C pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C su = ld<T>(q.t[3], i);
    const C sgv = add(mul(r, ld<T>(q.t[2], i)), mul(mul(sub(one, r), gv), gv));
    const C d = mul(-sq(dv(add(su, ce), add(sgv, ce))), gv);
    st<T>(q.t[2], i, sgv);
    st<T>(q.t[3], i, add(mul(r, su), mul(mul(sub(one, r), d), d)));
    st<T>(q.t[0], i, add(pv, mul(a, d)));
  }
};

// rmsprop: ms = rho ms + (1 - rho) g'^2; centered: mg = rho mg + (1 - rho) g', denominator
// ms - mg^2 + eps, else ms + eps; mom = momentum mom + lr g' / sqrt(denominator); p -= mom
template <typename T>
struct Rmsprop {
  using C = acc_t<T>;
  C a, w, sc, r, ce, cm;
  bool centered;
  OAR_HD Rmsprop(const Param& q, const Hyper& h)
      : a(C(q.lr)), w(C(q.l2)), sc(C(q.gs)), r(C(h.a)), ce(C(h.b)), cm(C(h.c)), centered(h.flag != 0) {}
  OAR_HD void operator()(const Param& q, int64_t i) const {
    const C one = C(1);
    const C pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C msv = add(mul(r, ld<T>(q.t[2], i)), mul(mul(sub(one, r), gv), gv));
    st<T>(q.t[2], i, msv);
    C denom = add(msv, ce);
    if (centered) {
      const C mgv = add(mul(r, ld<T>(q.t[3], i)), mul(sub(one, r), gv));
      st<T>(q.t[3], i, mgv);
      denom = add(sub(msv, mul(mgv, mgv)), ce);
    }
    const C mov = add(mul(cm, ld<T>(q.t[4], i)), dv(mul(a, gv), sq(denom)));
    st<T>(q.t[4], i, mov);
    st<T>(q.t[0], i, sub(pv, mov));
  }
};

// lamb, in two element passes around the trust ratio: moments() updates m1, m2 and returns p and
// r = (m1 / (1 - b1p)) / (sqrt(m2 / (1 - b2p)) + eps) + wd p (from the stored m1, m2); apply(step)
// does p -= step * r.
template <typename T>
struct Lamb {
  using C = acc_t<T>;
  C k1, k2, d, w, sc, cb1, cb2, ce;
  OAR_HD Lamb(const Param& q, const Hyper& h)
      : k1(C(dv(1.0, sub(1.0, read_pow(q.pow[0], q.pow_f64))))),
        k2(C(dv(1.0, sub(1.0, read_pow(q.pow[1], q.pow_f64))))),
        d(C(q.extra)),
        w(C(q.l2)),
        sc(C(q.gs)),
        cb1(C(h.a)),
        cb2(C(h.b)),
        ce(C(h.c)) {}
  OAR_HD C r_of(C pv, C m1v, C m2v) const {
    return add(dv(mul(m1v, k1), add(sq(mul(m2v, k2)), ce)), mul(d, pv));
  }
  OAR_HD void moments(const Param& q, int64_t i, C& pv, C& rv) const {
    const C one = C(1);
    pv = ld<T>(q.t[0], i);
    const C gv = grad_of(sc, ld<T>(q.t[1], i), w, pv);
    const C m1v = add(mul(cb1, ld<T>(q.t[2], i)), mul(sub(one, cb1), gv));
    const C m2v = add(mul(cb2, ld<T>(q.t[3], i)), mul(mul(sub(one, cb2), gv), gv));
    st<T>(q.t[2], i, m1v);
    st<T>(q.t[3], i, m2v);
    rv = r_of(pv, round_trip<T>(m1v), round_trip<T>(m2v));
  }
  OAR_HD void apply(const Param& q, int64_t i, C step) const {
    const C pv = ld<T>(q.t[0], i);
    st<T>(q.t[0], i, sub(pv, mul(step, r_of(pv, ld<T>(q.t[2], i), ld<T>(q.t[3], i)))));
  }
};

// lamb's step from the squared norms: lr * (||p|| / ||r||, or 1 when either is 0, or without weight
// decay unless always_adapt).
OAR_HD double lamb_step(double lr, double wd, bool always_adapt, double p_sq, double r_sq) {
  const double a = sq(p_sq), r = sq(r_sq);
  const bool adapt = wd > 0 || always_adapt;
  return mul(lr, (adapt && a > 0 && r > 0) ? dv(a, r) : 1.0);
}

// pow *= beta (float32 through float64, as the CPU's scale_scalar).
OAR_HD void scale_pow(void* p, double f, int32_t f64) {
  if (f64)
    *static_cast<double*>(p) = mul(*static_cast<double*>(p), f);
  else
    *static_cast<float*>(p) = static_cast<float>(mul(static_cast<double>(*static_cast<float*>(p)), f));
}

}  // namespace optim
}  // namespace oar_cuda
