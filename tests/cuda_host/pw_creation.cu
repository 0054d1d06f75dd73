// The functors of plugins/cuda/cast.cu and creation.cu run on the host (harness.h).
#include "harness.h"

// After harness.h, which makes the functors host-callable.
#include "cast.cu"
#include "creation.cu"

using namespace oar_cuda;
int main(int argc, char** argv) {
  int dtype, arity;
  h::read(argc, argv, dtype, arity);
  std::string op = argv[1];
  const uint64_t seed = uint64_t(int64_t(h::attr("seed", 0))),
                 offset = uint64_t(int64_t(h::attr("offset", 0)));
  if (op == "cast") {
    dispatch_all(dtype, "cast", [&](auto ft) {
      using From = typename decltype(ft)::type;
      dispatch_all(int(h::attr("to", 0)), "cast", [&](auto tt) {
        using To = typename decltype(tt)::type;
        h::out1<From>(CastOp<To, From>{});
      });
    });
  } else if (op == "uniform") {
    const double lo = h::attr("min", -1), hi = h::attr("max", 1), range = hi - lo;
    dispatch_float(dtype, "u", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool clamp = range > 0;
      const T top = clamp ? largest_below<T>(hi) : from_acc<T>(acc_t<T>(0));
      h::outi(UniformGen<T>{seed, offset, lo, hi, range, clamp, top});
    });
  } else if (op == "normal") {
    dispatch_float(dtype, "n", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::outi(NormalGen<T>{seed, offset, h::attr("mean", 0), h::attr("std", 1)});
    });
  } else if (op == "bernoulli") {
    dispatch_float(dtype, "b", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T> x(h::n);
      for (int64_t i = 0; i < h::n; ++i) x[i] = h::from_d<T>(h::in[0][i]);
      h::outi(BernoulliGen<T>{x.data(), seed, offset});
    });
  } else if (op == "arange") {
    const double start = h::attr("start", 0), step = h::attr("step", 1);
    const bool exact = is_integral_value(start) && is_integral_value(step);
    const uint64_t s0 = exact ? uint64_t(int64_t(start)) : 0, d = exact ? uint64_t(int64_t(step)) : 0;
    dispatch_real(dtype, "a", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::outi(ArangeGen<T>{start, step, exact, s0, d});
    });
  } else if (op == "linspace") {
    const double start = h::attr("start", 0), stop = h::attr("stop", 1);
    const int64_t num = h::n;
    const double step = num > 1 ? (stop - start) / double(num - 1) : 0.0;
    dispatch_real(dtype, "l", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::outi(LinspaceGen<T>{start, stop, step, num, num / 2});
    });
  } else if (op == "fill") {
    dispatch_all(dtype, "f", [&](auto tag) {
      using T = typename decltype(tag)::type;
      h::outi(ConstantGen<T>{value_from_double<T>(h::attr("value", 0))});
    });
  } else {
    fprintf(stderr, "unknown op\n");
    return 1;
  }
  return 0;
}
