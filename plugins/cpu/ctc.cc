// CTC loss (framework/src/ops_vision.cc): the alpha (forward) and beta (backward) recursions over the
// extended label (blank, l1, blank, l2, ..., blank) in log space, in double, one batch item per task.
// loss_b = -log Z_b; d loss_b / d log_probs[t, b, c] = -sum over positions s with label c of
// exp(alpha_t(s) + beta_t(s) - log_probs[t, b, c] - log Z_b) (beta includes step t's emission).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu_common.h"

namespace oar_cpu {
namespace {

using oar::sdk::parallel_for;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t int_at(const TensorView& t, int64_t i) {
  return t.dtype() == OAR_DTYPE_INT64 ? t.data<int64_t>()[i] : static_cast<int64_t>(t.data<int32_t>()[i]);
}

double lse(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

struct CtcItem {
  int64_t T = 0;
  std::vector<int64_t> ext;   // extended label
  std::vector<double> alpha;  // [T, S]
  double logz = 0;
};

// Reads and checks batch item b's lengths and labels; fills its extended label.
void ctc_item(const char* op, const TensorView& lp, const TensorView& labels, const TensorView& in_len,
              const TensorView& lab_len, int64_t blank, int64_t b, CtcItem& it) {
  const int64_t Tmax = lp.dim(0), C = lp.dim(2), Lmax = labels.dim(1);
  it.T = int_at(in_len, b);
  const int64_t L = int_at(lab_len, b);
  OAR_SDK_CHECK(it.T >= 0 && it.T <= Tmax, OAR_ERR_INVALID_ARGUMENT,
                op << ": input_lengths[" << b << "] = " << it.T << " is outside [0, " << Tmax << "]");
  OAR_SDK_CHECK(L >= 0 && L <= Lmax, OAR_ERR_INVALID_ARGUMENT,
                op << ": label_lengths[" << b << "] = " << L << " is outside [0, " << Lmax << "]");
  it.ext.assign(static_cast<size_t>(2 * L + 1), blank);
  for (int64_t i = 0; i < L; ++i) {
    const int64_t l = int_at(labels, b * Lmax + i);
    OAR_SDK_CHECK(l >= 0 && l < C, OAR_ERR_OUT_OF_RANGE,
                  op << ": labels[" << b << ", " << i << "] = " << l << " is outside [0, " << C << ")");
    it.ext[static_cast<size_t>(2 * i + 1)] = l;
  }
}

// Whether position s may be reached from s - 2 (skipping a blank between two different labels).
bool can_skip(const std::vector<int64_t>& ext, int64_t s, int64_t blank) {
  return s >= 2 && ext[s] != blank && ext[s] != ext[s - 2];
}

template <class T>
void ctc_alpha(const T* lp, int64_t B, int64_t C, int64_t b, int64_t blank, CtcItem& it) {
  const int64_t S = static_cast<int64_t>(it.ext.size());
  auto at = [&](int64_t t, int64_t c) {
    return static_cast<double>(oar::sdk::compute_t<T>(lp[(t * B + b) * C + c]));
  };
  if (it.T == 0) {
    it.logz = S == 1 ? 0.0 : kNegInf;
    return;
  }
  it.alpha.assign(static_cast<size_t>(it.T * S), kNegInf);
  it.alpha[0] = at(0, it.ext[0]);
  if (S > 1) it.alpha[1] = at(0, it.ext[1]);
  for (int64_t t = 1; t < it.T; ++t) {
    const double* prev = it.alpha.data() + (t - 1) * S;
    double* cur = it.alpha.data() + t * S;
    for (int64_t s = 0; s < S; ++s) {
      double a = prev[s];
      if (s >= 1) a = lse(a, prev[s - 1]);
      if (can_skip(it.ext, s, blank)) a = lse(a, prev[s - 2]);
      cur[s] = a == kNegInf ? kNegInf : a + at(t, it.ext[s]);
    }
  }
  const double* last = it.alpha.data() + (it.T - 1) * S;
  it.logz = S > 1 ? lse(last[S - 1], last[S - 2]) : last[0];
}

void ctc_loss_kernel(KernelContext& ctx) {
  TensorView lp = ctx.input(0), labels = ctx.input(1), in_len = ctx.input(2), lab_len = ctx.input(3);
  const int64_t blank = ctx.attr_int("blank"), B = lp.dim(1), C = lp.dim(2);
  dispatch<FloatType>("ctc_loss", lp.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = lp.data<T>();
    T* loss = ctx.output(0).data<T>();
    for (int64_t b = 0; b < B; ++b) {  // checks first, on this thread, so errors are not lost in a task
      CtcItem it;
      ctc_item("ctc_loss", lp, labels, in_len, lab_len, blank, b, it);
    }
    parallel_for(0, B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        CtcItem it;
        ctc_item("ctc_loss", lp, labels, in_len, lab_len, blank, b, it);
        ctc_alpha(p, B, C, b, blank, it);
        loss[b] = convert<T>(-it.logz);
      }
    });
  });
}

void ctc_loss_grad_kernel(KernelContext& ctx) {
  TensorView lp = ctx.input(0), labels = ctx.input(1), in_len = ctx.input(2), lab_len = ctx.input(3);
  const int64_t blank = ctx.attr_int("blank"), Tmax = lp.dim(0), B = lp.dim(1), C = lp.dim(2);
  const bool norm = ctx.attr_int("norm_by_times") != 0;
  dispatch<FloatType>("ctc_loss_grad", lp.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = lp.data<T>();
    const T* gl = ctx.input(4).data<T>();
    T* d = ctx.output(0).data<T>();
    for (int64_t b = 0; b < B; ++b) {
      CtcItem it;
      ctc_item("ctc_loss_grad", lp, labels, in_len, lab_len, blank, b, it);
    }
    parallel_for(0, B, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        CtcItem it;
        ctc_item("ctc_loss_grad", lp, labels, in_len, lab_len, blank, b, it);
        ctc_alpha(p, B, C, b, blank, it);
        const int64_t S = static_cast<int64_t>(it.ext.size());
        std::vector<double> occ(static_cast<size_t>(std::max<int64_t>(it.T, 1) * C), 0.0);
        // An impossible label (Z = 0, loss inf) gets no gradient.
        if (it.T > 0 && it.logz != kNegInf) {
          auto at = [&](int64_t t, int64_t c) {
            return static_cast<double>(oar::sdk::compute_t<T>(p[(t * B + b) * C + c]));
          };
          std::vector<double> beta(static_cast<size_t>(S), kNegInf), next(static_cast<size_t>(S));
          for (int64_t t = it.T - 1; t >= 0; --t) {
            for (int64_t s = 0; s < S; ++s) {
              double v;
              if (t == it.T - 1) {
                v = s >= S - 2 ? 0.0 : kNegInf;
              } else {
                v = beta[s];
                if (s + 1 < S) v = lse(v, beta[s + 1]);
                if (s + 2 < S && can_skip(it.ext, s + 2, blank)) v = lse(v, beta[s + 2]);
              }
              next[s] = v == kNegInf ? kNegInf : v + at(t, it.ext[s]);
            }
            beta.swap(next);
            for (int64_t s = 0; s < S; ++s) {
              const double a = it.alpha[t * S + s];
              if (a == kNegInf || beta[s] == kNegInf) continue;
              occ[t * C + it.ext[s]] += std::exp(a + beta[s] - at(t, it.ext[s]) - it.logz);
            }
          }
        }
        double g = static_cast<double>(oar::sdk::compute_t<T>(gl[b]));
        if (norm && it.T > 0) g /= static_cast<double>(it.T);
        for (int64_t t = 0; t < Tmax; ++t)
          for (int64_t c = 0; c < C; ++c)
            d[(t * B + b) * C + c] = convert<T>(t < it.T ? -g * occ[t * C + c] : 0.0);
      }
    });
  });
}

}  // namespace

void register_ctc_kernels(Registry& r) {
  const auto& f = oar::sdk::float_dtypes();
  r.add("ctc_loss", f, &ctc_loss_kernel);
  r.add("ctc_loss_grad", f, &ctc_loss_grad_kernel);
}

}  // namespace oar_cpu
